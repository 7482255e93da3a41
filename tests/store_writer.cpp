// Test helper for the results store: inserts rows into a store, one transaction each, and
// after each insert returns writes the row as one line of JSON to stdout. The crash and
// concurrency tests kill it (SIGKILL) or run several at once, then check that every row
// it reported is in the store, intact.
//
//   store_writer DB COUNT TAG     COUNT rows (0: until killed); TAG goes into every row
#include "store/store.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace gt;

// Row i of writer `tag`: every status in turn, unknown numbers (NaN) on failures, a
// message with characters that need escaping.
static StoredRow make_row(const std::string& tag, int64_t i) {
  static const Status statuses[] = {Status::ok,           Status::cannot_implement, Status::resources,
                                    Status::compile_failed, Status::verify_failed,  Status::runtime_fault,
                                    Status::timeout};
  StoredRow r;
  r.tune_id = "writer-" + tag;
  int64_t n = 64 + (i % 5) * 64;
  r.problem = Problem::make(128, n, 256 + i % 3, i % 2 ? DType::f16 : DType::f32, i % 2 ? DType::f16 : DType::f32,
                            Layout(i % 4));
  r.family = "writer_family";
  r.config = {i, i % 7, -3};
  r.config_name = "writer_family_i" + std::to_string(i) + "_" + tag;
  r.config_hash = hex64(stable_hash(r.config_name));
  r.m.status = statuses[i % 7];
  r.m.message = r.m.status == Status::ok ? "" : "failed \"" + tag + "\"\nline 2 \u00b5s #" + std::to_string(i);
  if (r.m.status == Status::ok) {
    r.m.time = summarize({10.0 + double(i), 11.5, 9.25, 10.125 + 1.0 / double(i + 3)});
    r.m.err_rel_fro = 1e-7 * double(i + 1);
    r.m.err_max_norm = 3e-6;
    r.m.sensors.sm_clock_mhz = 1980;
    r.m.sensors.power_w = 512.5;
  }
  r.m.res.registers = int(i % 255);
  r.m.compile_s = 0.01 * double(i % 10);
  r.m.quick = i % 3 == 0;
  r.prov.device_name = "Test GPU";
  r.prov.device_uuid = "GPU-" + tag;
  r.prov.arch = "sm_90";
  r.prov.sm_count = 132;
  r.prov.driver = "580.95.05";
  r.prov.cuda_runtime = "13.0";
  r.prov.nvrtc = "13.0";
  r.prov.family = r.family;
  r.prov.family_version = "1.0";
  r.prov.source_hash = 0xfedcba9876543210ull + uint64_t(i);
  r.prov.input_seed = uint64_t(i) * 0x9E3779B97F4A7C15ull;
  r.prov.host = "writer-host";
  return r;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: store_writer DB COUNT TAG\n");
    return 2;
  }
  try {
    Store store = Store::open(argv[1]);
    int64_t count = std::atoll(argv[2]);
    std::string tag = argv[3];
    for (int64_t i = 0; count == 0 || i < count; ++i) {
      StoredRow r = make_row(tag, i);
      store.insert(r);
      // Only after insert returned: what is reported is committed.
      std::string line = nlohmann::json(r).dump() + "\n";
      for (size_t done = 0; done < line.size();) {
        ssize_t w = write(1, line.data() + done, line.size() - done);
        if (w <= 0) return 1;
        done += size_t(w);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
