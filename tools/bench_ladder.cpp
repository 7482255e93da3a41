// bench_ladder: the lab's ladder of GEMM kernels, measured side by side in one process on
// one set of buffers per shape, with TFLOP/s and the error against float64:
//   naive, uncoalesced, shared tiles 8/16/32, the lab's register tiles (TT = 1, 2, 4, 8),
//   the best register_tile and wmma configs (from the store, else the family default),
//   cuBLASLt fp32, cuBLASLt fp16 -> fp32, cuBLASLt fp16.
// Usage: bench_ladder [--sizes 1024,4096] [--db FILE]   (plugins: ../plugins beside it)
#include "measure/bench.hpp"
#include "measure/evaluate.hpp"
#include "measure/measure_service.hpp"
#include "measure/roofs.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace gt;

namespace {
struct Rung {
  std::string label, family;
  DType in, out;
  std::string params;  // K=V list; "" = family default; "@best" = the store's winner
};

std::vector<int64_t> parse_sizes(const std::string& s) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    v.push_back(std::stoll(s.substr(pos, end - pos)));
    pos = end + 1;
  }
  return v;
}

std::string lab_register(int tt) {
  return fmt::format("bm={},bn={},bk=16,tm={},tn={},warp=2x16,vec=1,pipe=single,swz=1,occ=1", 16 * tt, 16 * tt, tt, tt);
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {1024, 4096};
  std::string db;
  if (const char* e = std::getenv("GEMMTUNE_DB")) db = e;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) sizes = parse_sizes(argv[++i]);
    else if (a == "--db" && i + 1 < argc) db = argv[++i];
    else {
      fmt::print(stderr, "usage: bench_ladder [--sizes 1024,4096] [--db FILE]\n");
      return 2;
    }
  }
  std::string why;
  if (device_count(&why) == 0) {
    fmt::print("bench_ladder: {}\n", why);
    return 3;
  }
  auto reg = PluginRegistry::load({executable_dir() / ".." / "plugins"});
  CubinCache cache(default_cache_dir());
  MeasureService svc(reg, cache, 0);
  const DeviceInfo& dev = svc.device();
  std::optional<Store> store;
  if (!db.empty() && std::filesystem::exists(db)) store.emplace(Store::open_readonly(db));
  std::vector<Rung> rungs = {
      {"naive (coalesced)", "naive", DType::f32, DType::f32, "map=coalesced,bx=32,by=8"},
      {"naive (uncoalesced)", "naive", DType::f32, DType::f32, "map=uncoalesced,bx=32,by=8"},
      {"shared tile 8", "shared_tile", DType::f32, DType::f32, "tile_m=8,tile_n=8,tile_k=8,pad=0"},
      {"shared tile 16", "shared_tile", DType::f32, DType::f32, "tile_m=16,tile_n=16,tile_k=16,pad=0"},
      {"shared tile 32", "shared_tile", DType::f32, DType::f32, "tile_m=32,tile_n=32,tile_k=32,pad=0"},
      {"register tile 1x1", "register_tile", DType::f32, DType::f32, lab_register(1)},
      {"register tile 2x2", "register_tile", DType::f32, DType::f32, lab_register(2)},
      {"register tile 4x4", "register_tile", DType::f32, DType::f32, lab_register(4)},
      {"register tile 8x8", "register_tile", DType::f32, DType::f32, lab_register(8)},
      {"register_tile best", "register_tile", DType::f32, DType::f32, "@best"},
      {"wmma best (f16>f32)", "wmma", DType::f16, DType::f32, "@best"},
      // The top hand-written rung: Hopper's wgmma fed by TMA (sm_90a; refused elsewhere).
      {"wgmma_tma default (f16>f32)", "wgmma_tma", DType::f16, DType::f32, ""},
      {"wgmma_tma best (f16>f32)", "wgmma_tma", DType::f16, DType::f32, "@best"},
      {"cuBLASLt fp32", "cublaslt", DType::f32, DType::f32, ""},
      {"cuBLASLt fp16>fp32", "cublaslt", DType::f16, DType::f32, ""},
      {"cuBLASLt fp16", "cublaslt", DType::f16, DType::f16, ""},
  };
  std::random_device rd;
  fmt::print("bench_ladder on {} ({}), settled clock, iid normal inputs, CUDA-event medians, one run\n", dev.name, dev.uuid);
  for (int64_t n : sizes) {
    fmt::print("\n{}x{}x{}\n  {:<22} {:<9} {:>11} {:>9} {:>10}  {}\n", n, n, n, "kernel", "dtype", "time us", "TFLOP/s",
               "rel error", "config");
    std::string prepared;
    for (auto& r : rungs) {
      const Family* fam = reg.find(r.family);
      if (!fam) {
        fmt::print("  {:<22} (family {} not loaded)\n", r.label, r.family);
        continue;
      }
      Problem p = Problem::make(n, n, n, r.in, r.out, Layout::nn);
      if (prepared != p.key()) {
        svc.set_problem(p, Distribution::normal, (uint64_t(rd()) << 32) | rd());
        prepared = p.key();
      }
      Space s = fam->space(p, dev.limits);
      Config c = s.default_config();
      std::string err, source = "default";
      if (r.params == "@best") {
        if (store) {
          if (auto w = store->winner(ResultKey::of(dev.name, p), r.family))
            if (auto parsed = s.parse(w->config_name, &err)) {
              c = *parsed;
              source = "tuned";
            }
        }
      } else if (!r.params.empty()) {
        auto parsed = s.parse(r.params, &err);
        if (!parsed) {
          fmt::print("  {:<22} config not in the space: {}\n", r.label, err);
          continue;
        }
        c = *parsed;
      }
      if (auto bad = s.check(c)) {
        fmt::print("  {:<22} {}: {}\n", r.label, "cannot run", *bad);
        continue;
      }
      Candidate cand{r.family, fam, c};
      try {
        svc.settle(cand, 0.3);
      } catch (const std::exception&) {
      }
      Measurement m = svc.measure(cand, false);
      std::string dt = fmt::format("{}>{}", to_string(r.in), to_string(r.out));
      if (m.status != Status::ok) {
        fmt::print("  {:<22} {:<9} {}: {}\n", r.label, dt, to_string(m.status), m.message.substr(0, 100));
        continue;
      }
      fmt::print("  {:<22} {:<9} {:>11.2f} {:>9.2f} {:>10.2e}  {} ({})\n", r.label, dt, m.time_us(),
                 m.tflops(p.flops()), m.err_rel_fro, s.name(c), source);
    }
  }
  return 0;
}
