// bench_placement: does where a problem's buffers land in memory change a kernel's time?
//
// In one process, allocates `--sets` independent sets of the problem's buffers (each a full
// ProblemBench: its rotating inputs, output and reference; all kept alive, so each lies in
// memory of its own), all filled from one seed, and times one config on each in turn, for
// `--passes` passes: settle, then sample at least 0.5 s once the power cap engages (as
// `gemmtune run`). If placement matters, a set's time repeats from pass to pass while the sets
// differ from each other; if it does not, all agree within the noise of one pass.
// Usage: bench_placement [--family cublaslt] [--params K=V,...] [--shape 4096x4096x4096]
//                        [--dtype f16] [--sets 4] [--passes 2] [--device 0]
#include "measure/bench.hpp"
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace gt;

namespace {
double spread(const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return v.empty() ? 0.0 : 100.0 * (*hi - *lo) / *lo;
}
}  // namespace

int main(int argc, char** argv) {
  std::string family = "cublaslt", params, shape = "4096x4096x4096", dtype = "f16";
  int sets = 4, passes = 2, device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "bench_placement: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--family") family = next();
    else if (a == "--params") params = next();
    else if (a == "--shape") shape = next();
    else if (a == "--dtype") dtype = next();
    else if (a == "--sets") sets = std::stoi(next());
    else if (a == "--passes") passes = std::stoi(next());
    else if (a == "--device") device = std::stoi(next());
    else {
      fmt::print(stderr,
                 "usage: bench_placement [--family F] [--params K=V,...] [--shape MxNxK] [--dtype D] [--sets N] "
                 "[--passes N] [--device I]\n");
      return 2;
    }
  }
  if (sets < 1 || passes < 1) {
    fmt::print(stderr, "bench_placement: --sets and --passes must be at least 1\n");
    return 2;
  }
  std::string why;
  if (device_count(&why) == 0) {
    fmt::print("bench_placement: {}\n", why);
    return 3;
  }
  try {
    auto reg = PluginRegistry::load({executable_dir() / ".." / "plugins"});
    const Family* fam = reg.find(family);
    if (!fam) throw InputError("--family: no family " + family);
    DType in = parse_dtype(dtype);
    auto dims = parse_shape(shape);
    Problem p = Problem::make(dims[0], dims[1], dims[2], in, in, Layout::nn);
    DeviceInfo dev = require_device(device);
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    Space s = fam->space(p, dev.limits);
    Config c = s.default_config();
    if (!params.empty()) {
      auto parsed = s.parse(params, &why);
      if (!parsed) throw InputError("--params: " + why);
      c = *parsed;
    }
    std::vector<std::unique_ptr<ProblemBench>> benches;
    for (int i = 0; i < sets; ++i) benches.push_back(std::make_unique<ProblemBench>(p, dev, Distribution::normal, 1));
    CubinCache cache(default_cache_dir());
    Compiler compiler(&cache);
    fmt::print("bench_placement: {} on {} ({}), {} sets of buffers ({} rotating inputs each), seed 1\n", s.name(c),
               dev.name, p.key(), sets, benches[0]->rotation());
    fmt::print("  {:>4} {:>4} {:>10} {:>6} {:>6} {:>5}\n", "pass", "set", "median us", "MHz", "W", "C");
    std::vector<std::vector<double>> t(size_t(passes), std::vector<double>(size_t(sets), 0.0));
    for (int pass = 0; pass < passes; ++pass)
      for (int i = 0; i < sets; ++i) {
        EvaluateOptions o;
        o.settle_s = kSettleCapS;
        o.timing.capped_min_time_s = kCappedMinTimeS;
        Evaluation ev = evaluate(*fam, p, c, dev, *benches[size_t(i)], compiler, nullptr, o);
        if (ev.m.status != Status::ok) throw RuntimeFailure(std::string(to_string(ev.m.status)) + ": " + ev.m.message);
        t[size_t(pass)][size_t(i)] = ev.m.time_us();
        fmt::print("  {:>4} {:>4} {:>10.2f} {:>6.0f} {:>6.0f} {:>5.0f}\n", pass, i, ev.m.time_us(),
                   ev.m.sensors.sm_clock_mhz, ev.m.sensors.power_w, ev.m.sensors.temp_c);
        std::fflush(stdout);
      }
    fmt::print("spread across sets, per pass:");
    for (auto& row : t) fmt::print(" {:.2f}%", spread(row));
    fmt::print("\nspread across passes, per set:");
    for (int i = 0; i < sets; ++i) {
      std::vector<double> col;
      for (auto& row : t) col.push_back(row[size_t(i)]);
      fmt::print(" {:.2f}%", spread(col));
    }
    fmt::print("\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_placement: {}\n", e.what());
    return 1;
  }
  return 0;
}
