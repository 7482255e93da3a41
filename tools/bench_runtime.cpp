// bench_runtime: what the gemmtune runtime adds to a launch. For each shape it makes the
// first call (lookup + build + load), then measures, in alternating batches, the host time
// of Runtime::gemm() and of launching the same prepared kernel directly; the per-call
// overhead is the median of the paired differences (target: under 1 µs).
//
// Without a GPU (or with --dry-run) the runtime runs in its dry-run mode, which does
// everything but the launch: what is measured then is the dispatch path alone (argument
// checks, the key, the hash-map lookup), and the output says so.
//
// Exit codes: 0 the target was met for every shape, 1 it was missed for one or more (the
// output says MISSED and for which shapes; tools/check_gpu.sh counts the step as failed) or a
// run-time failure, 2 bad input, 3 no GPU where one was needed.
#include "gemmtune_runtime.hpp"
#include "runtime_internal.hpp"

#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw gt::RuntimeFailure(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

std::string us_text(double us) {
  if (!std::isfinite(us)) return "-";
  if (std::abs(us) < 1) return fmt::format("{:.0f} ns", us * 1e3);
  if (us < 1e3) return fmt::format("{:.2f} us", us);
  return fmt::format("{:.1f} ms", us / 1e3);
}

struct Row {
  gt::Problem p;
  gemmtune::Choice choice;
  double first_us = 0;
  double gemm_us = 0, direct_us = 0, overhead_us = 0, overhead_p90_us = 0;
  int samples = 0;
};

// The command line's values.
struct Settings {
  std::string table, shapes = "64x64x64,256x256x256,512x512x512", dtype = "f32", layout = "nn", plugin_dir, cache_dir,
      default_family;
  int batch = 32, samples = 300, device = 0;
  double max_seconds = 2.0, target_us = 1.0;
  bool dry = false, json = false;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--table", s.table, "lookup table (JSON or TOML; default: an empty table, so every shape takes the "
                                     "default: cuBLASLt's pick, else the --default-family's default config)");
  app.add_option("--default-family", s.default_family,
                 "the runtime's default family, where cuBLASLt's heuristic cannot answer (default: none)");
  app.add_option("--shapes", s.shapes, "comma-separated MxNxK")->default_str("64x64x64,256x256x256,512x512x512");
  app.add_option("--dtype", s.dtype, "input type (output: the default for it)")->default_str("f32");
  app.add_option("--layout", s.layout, "nn|nt|tn|tt")->default_str("nn");
  app.add_option("--batch", s.batch, "calls per timed batch (synchronised between batches, untimed)")
      ->default_val(32)->check(CLI::Range(1, 512));
  app.add_option("--samples", s.samples, "batches per side and shape, at most")->default_val(300)->check(CLI::Range(5, 1000000));
  app.add_option("--max-seconds", s.max_seconds, "time per shape, at most")->default_val(2.0);
  app.add_option("--target-us", s.target_us, "the per-call overhead target in microseconds: missed for any shape, "
                                              "the exit code is 1")
      ->default_val(1.0);
  app.add_option("--plugin-dir", s.plugin_dir, "plugins (default: GEMMTUNE_PLUGIN_PATH, else the build's ../plugins)");
  app.add_option("--cache-dir", s.cache_dir, "compiled-kernel cache");
  app.add_option("--device", s.device, "GPU index")->default_val(0);
  app.add_flag("--dry-run", s.dry, "measure the dispatch path alone, without launching (the default without a GPU)");
  app.add_flag("--json", s.json, "machine-readable output");
}

// The problems of --shapes; throws InputError for bad input, --target-us included.
std::vector<gt::Problem> problems_to_measure(const Settings& s) {
  std::vector<gt::Problem> problems;
  gt::DType in = gt::parse_dtype(s.dtype, "--dtype");
  gt::Layout l = gt::parse_layout(s.layout, "--layout");
  size_t pos = 0;
  while (pos <= s.shapes.size()) {
    size_t end = s.shapes.find(',', pos);
    if (end == std::string::npos) end = s.shapes.size();
    if (end > pos) {
      auto d = gt::parse_shape(s.shapes.substr(pos, end - pos), "--shapes");
      problems.push_back(gt::Problem::make(d[0], d[1], d[2], in, gt::Problem::default_out(in), l));
    }
    pos = end + 1;
  }
  if (problems.empty()) throw gt::InputError("--shapes: no shape given");
  if (!(std::isfinite(s.target_us) && s.target_us > 0))
    throw gt::InputError(fmt::format("--target-us: got {}; it must be a positive number of microseconds", s.target_us));
  return problems;
}

// What the output says about a dry run ("" for a real one), and why it is one.
std::string mode_note_for(bool dry, bool have_gpu, const std::string& why_no_gpu) {
  return !dry ? "" : have_gpu ? "dry run (--dry-run): the dispatch path alone, nothing is launched"
                              : fmt::format("{}\ndry run: measuring the dispatch path alone (argument checks, key, "
                                            "prepared-kernel lookup); nothing is launched",
                                            why_no_gpu);
}

// Fills in the default plugin folder and, without --table, writes an empty table to a
// temporary file; returns that file ("" if none), for the caller to remove.
std::filesystem::path default_paths(Settings& s) {
  if (s.plugin_dir.empty() && !std::getenv("GEMMTUNE_PLUGIN_PATH"))
    s.plugin_dir = (gt::executable_dir() / ".." / "plugins").lexically_normal().string();
  std::filesystem::path tmp_table;
  if (s.table.empty()) {
    // An empty table is a valid one: every lookup falls through to the default.
    tmp_table = std::filesystem::temp_directory_path() / fmt::format("bench_runtime_{}.json", std::random_device{}());
    gt::LookupTable().save(tmp_table, gt::TableFormat::json);
    s.table = tmp_table.string();
  }
  return tmp_table;
}

// The GEMM's arguments: on zeroed buffers of its own (held in bufs), or in a dry run on
// addresses that are never dereferenced.
gemmtune::GemmArgs gemm_args(const gt::Problem& p, bool dry, cudaStream_t stream, std::vector<gt::DeviceBuffer>& bufs) {
  gemmtune::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.in = gemmtune_dtype(p.in);
  g.out = gemmtune_dtype(p.out);
  g.layout = gemmtune_layout(p.layout);
  g.lda = p.lda;
  g.ldb = p.ldb;
  g.ldc = p.ldc;
  if (!dry) {
    bufs.emplace_back(p.bytes_a());
    bufs.emplace_back(p.bytes_b());
    bufs.emplace_back(p.bytes_c());
    // Contents do not change the host-side cost; zeros keep the kernels' work defined.
    for (auto& b : bufs) check(cudaMemsetAsync(b.get(), 0, b.size(), stream), "cudaMemset");
    g.a = bufs[0].get();
    g.b = bufs[1].get();
    g.c = bufs[2].get();
  } else {
    // Never dereferenced: 256-byte aligned like cudaMalloc's, so the key is the same.
    g.a = reinterpret_cast<const void*>(uintptr_t(1) << 20);
    g.b = reinterpret_cast<const void*>(uintptr_t(2) << 20);
    g.c = reinterpret_cast<void*>(uintptr_t(3) << 20);
  }
  return g;
}

// Host time per call of one batch, through Runtime::gemm() or by launching the prepared
// kernel directly.
struct BatchTimer {
  gemmtune::Runtime& rt;
  const gemmtune::GemmArgs& g;
  const gt::Runnable* direct;
  cudaStream_t stream;
  int batch;
  bool dry;

  double operator()(bool through_runtime) const {
    auto s = Clock::now();
    if (through_runtime) {
      for (int i = 0; i < batch; ++i) rt.gemm(g, stream);
    } else {
      for (int i = 0; i < batch; ++i) check(direct->launch(gt::Operands{g.a, g.b, g.c, {}}, stream), "direct launch");
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - s).count() / batch;
    // Untimed: keeps the launch queue short, so no launch waits for room in it.
    if (!dry) check(cudaStreamSynchronize(stream), "a batch");
    return us;
  }
};

// Batches of both sides, paired, until --samples or --max-seconds; the medians go into row.
void sample_overhead(const BatchTimer& time_batch, const Settings& s, Row& row) {
  std::vector<double> via_rt, via_direct, diff;
  auto start = Clock::now();
  for (int i = 0; i < s.samples; ++i) {
    if (i >= 20 && std::chrono::duration<double>(Clock::now() - start).count() > s.max_seconds) break;
    if (s.dry) {
      via_rt.push_back(time_batch(true));
      continue;
    }
    // Alternate which side goes first, so neither always follows a synchronisation.
    double r, d;
    if (i % 2 == 0) {
      r = time_batch(true);
      d = time_batch(false);
    } else {
      d = time_batch(false);
      r = time_batch(true);
    }
    via_rt.push_back(r);
    via_direct.push_back(d);
    diff.push_back(r - d);
  }
  row.samples = int(via_rt.size());
  row.gemm_us = quantile(via_rt, 0.5);
  if (s.dry) {
    row.direct_us = std::nan("");
    row.overhead_us = row.gemm_us;
    row.overhead_p90_us = quantile(via_rt, 0.9);
  } else {
    row.direct_us = quantile(via_direct, 0.5);
    row.overhead_us = quantile(diff, 0.5);
    row.overhead_p90_us = quantile(diff, 0.9);
  }
}

// One shape: its first call, then the per-call overhead after it.
Row measure_shape(gemmtune::Runtime& rt, const gt::Problem& p, cudaStream_t stream, const Settings& s) {
  Row row;
  row.p = p;
  std::vector<gt::DeviceBuffer> bufs;
  const gemmtune::GemmArgs g = gemm_args(p, s.dry, stream, bufs);

  auto t0 = Clock::now();
  rt.gemm(g, stream);
  if (!s.dry) check(cudaStreamSynchronize(stream), "the first call");
  row.first_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  row.choice = rt.prepare(g);
  const gt::Runnable* direct = gemmtune::Internals::runnable(rt, g);
  if (!s.dry && !direct) throw gt::RuntimeFailure("the runtime prepared no kernel for " + p.key());

  const BatchTimer time_batch{rt, g, direct, stream, s.batch, s.dry};
  // Warm-up: first-touch costs of both paths (page faults, caches) stay out of the samples.
  time_batch(true);
  if (!s.dry) time_batch(false);
  sample_overhead(time_batch, s, row);
  return row;
}

// What the run found, for either form of output.
struct Results {
  std::string device_text, mode_note;
  std::vector<Row> rows;
};

// Every shape through one runtime; the exit code of a failure, else 0.
int measure_all(const Settings& s, const std::vector<gt::Problem>& problems, bool have_gpu, Results& res) {
  try {
    gemmtune::Options o;
    if (!s.plugin_dir.empty()) o.plugin_dirs = {s.plugin_dir};
    o.cache_dir = s.cache_dir;
    o.device = s.device;
    o.dry_run = s.dry;
    o.default_family = s.default_family;
    if (have_gpu) check(cudaSetDevice(s.device), "cudaSetDevice");
    gemmtune::Runtime rt(s.table, o);
    res.device_text = have_gpu ? fmt::format("GPU {}: {}", s.device, gt::device_info(s.device).name)
                               : fmt::format("no GPU; kernels compiled for {}", rt.arch());
    cudaStream_t stream = nullptr;
    if (!s.dry) check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (const gt::Problem& p : problems) res.rows.push_back(measure_shape(rt, p, stream, s));
    if (stream) cudaStreamDestroy(stream);
  } catch (const gemmtune::Error& e) {
    fmt::print(stderr, "bench_runtime: {}: {}\n", gemmtune_status_string(e.status()), e.what());
    return e.status() == GEMMTUNE_ERROR_NO_GPU ? 3 : e.status() == GEMMTUNE_ERROR_BAD_TABLE ? 2 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_runtime: failed: {}\n", e.what());
    return 1;
  }
  return 0;
}

// The shapes whose overhead is not under the target, NaN included ("": the target was met).
std::string missed_shapes(const std::vector<Row>& rows, double target_us) {
  std::string missed;
  for (auto& r : rows)
    if (!(r.overhead_us < target_us))
      missed += fmt::format("{}{} ({})", missed.empty() ? "" : ", ", r.p.key(), us_text(r.overhead_us));
  return missed;
}

void print_json(const Settings& s, const Results& res, bool met) {
  nlohmann::json j;
  j["device"] = res.device_text;
  j["dry_run"] = s.dry;
  j["mode"] = s.dry ? res.mode_note : "launches on the GPU";
  j["batch"] = s.batch;
  j["target_us"] = s.target_us;
  j["target_met"] = met;
  for (auto& r : res.rows) {
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    j["rows"].push_back({{"problem", r.p.key()}, {"config", r.choice.config}, {"match", r.choice.how},
                         {"first_call_us", r.first_us}, {"gemm_us", num(r.gemm_us)}, {"direct_us", num(r.direct_us)},
                         {"overhead_us", num(r.overhead_us)}, {"overhead_p90_us", num(r.overhead_p90_us)},
                         {"samples", r.samples}});
  }
  std::cout << j.dump(2) << "\n";
}

void print_table(const Settings& s, const Results& res, const std::string& missed) {
  fmt::print("gemmtune runtime: per-call overhead after the first call ({})\n", res.device_text);
  if (s.dry) fmt::print("{}\n", res.mode_note);
  fmt::print("host times per call, medians over batches of {} calls; overhead = median of (gemm() - direct launch) "
             "per batch pair\n\n",
             s.batch);
  fmt::print("{:<30} {:<10} {:>11} {:>13} {:>11} {:>12} {:>12}  {}\n", "problem", "match", "first call",
             s.dry ? "direct" : "direct launch", s.dry ? "dispatch" : "gemm()", "overhead", "p90", "config");
  for (auto& r : res.rows) {
    std::string match = r.choice.how.substr(0, r.choice.how.find(' '));
    fmt::print("{:<30} {:<10} {:>11} {:>13} {:>11} {:>12} {:>12}  {}\n", r.p.key(), match, us_text(r.first_us),
               us_text(r.direct_us), us_text(r.gemm_us), us_text(r.overhead_us), us_text(r.overhead_p90_us),
               r.choice.config);
  }
  fmt::print("\ntarget: under {} per call — {}\n", us_text(s.target_us),
             missed.empty() ? "met" : "MISSED for " + missed);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per-call overhead of the gemmtune runtime after the first call: host time of Runtime::gemm() minus "
               "the host time of launching the same prepared kernel directly (median over many calls; target < 1 us). Exit "
               "codes: 0 target met, 1 target missed (or a failure), 2 bad input, 3 no GPU."};
  Settings s;
  add_options(app, s);
  CLI11_PARSE(app, argc, argv);

  std::vector<gt::Problem> problems;
  try {
    problems = problems_to_measure(s);
  } catch (const gt::InputError& e) {
    fmt::print(stderr, "bench_runtime: error: {}\n", e.what());
    return 2;
  }

  std::string why_no_gpu;
  const bool have_gpu = gt::device_count(&why_no_gpu) > s.device;
  if (!have_gpu) s.dry = true;
  Results res;
  res.mode_note = mode_note_for(s.dry, have_gpu, why_no_gpu);

  const std::filesystem::path tmp_table = default_paths(s);
  const int rc = measure_all(s, problems, have_gpu, res);
  if (!tmp_table.empty()) {
    std::error_code ec;
    std::filesystem::remove(tmp_table, ec);
  }
  if (rc != 0) return rc;

  const std::string missed = missed_shapes(res.rows, s.target_us);
  if (s.json)
    print_json(s, res, missed.empty());
  else
    print_table(s, res, missed);
  return missed.empty() ? 0 : 1;
}
