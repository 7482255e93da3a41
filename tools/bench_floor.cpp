// bench_floor: how much faster than cuBLASLt's pick could any kernel be, by the device's own
// measured roofs? For each problem of a job, on the same rotating buffers and by the same
// timing method as `gemmtune run` (settled, back to back, the mean at the power cap):
//   - cuBLASLt's heuristic pick;
//   - optionally the config a lookup table holds for the problem (--table);
//   - a streaming read of B alone (K x N elements, the weights at decode), the best of a few
//     ways (plain loads in one wave; on sm_90 bulk copies into a shared-memory ring, as the
//     decode family streams B), each way's time printed under the row: a GEMM reads at least
//     B, so no GEMM kernel here is faster than this by much;
//   - once, the launch floor: an empty read (no bytes, one wave), what any call costs here;
//   - the FLOP at a tensor roof, measured in this run as cuBLASLt's pick at a large shape
//     (`gemmtune roofs` stores the best of its top 8 there instead; the pick can beat this
//     roof at other shapes by a few %).
// The bound is the larger of the last two; pick / bound estimates the most a kernel could gain
// over the pick on that problem, and their geomean the most a table could gain over a job. B's read is
// a floor only as good as this simple kernel: a row where a GEMM beats it says so.
// Usage: bench_floor [--config JOB.toml] [--table FILE] [--roof-shape MxNxK] [--device I] [--family F]
#include "measure/bench.hpp"
#include "measure/evaluate.hpp"
#include "gpu/gpu_kernels.hpp"
#include "job/job.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace gt;

namespace {

struct Timing {
  double us = kNaN, mhz = kNaN, watts = kNaN;
};

// Settled and sampled as `gemmtune run` does.
Timing time_config(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                   const Compiler& compiler) {
  EvaluateOptions o;
  o.settle_s = kSettleCapS;
  o.timing.capped_min_time_s = kCappedMinTimeS;
  Evaluation ev = evaluate(fam, p, c, dev, bench, compiler, nullptr, o);
  if (ev.m.status != Status::ok)
    throw RuntimeFailure(fmt::format("{} on {}: {}: {}", fam.name(), p.key(), to_string(ev.m.status), ev.m.message));
  return {ev.m.time_us(), ev.m.sensors.sm_clock_mhz, ev.m.sensors.power_w};
}

// One way of streaming B (gpu_kernels.hpp), with its name for the table.
struct ReadWay {
  StreamRead how;
  std::string name;
};

// The ways tried, each one wave: plain 16-byte loads by as many 256-thread blocks as the SMs
// hold (and half as many); on sm_90, bulk copies into a shared-memory ring of `stages` x
// `chunk` per CTA at 1, 2 or 4 CTAs per SM, the rings the decode family's TMA engine spans.
std::vector<ReadWay> read_ways(const DeviceInfo& dev) {
  const gt_device& d = dev.limits;
  bool bulk = d.cc_major >= 9;
  if (bulk) {
    try {  // a build whose core kernels lack sm_90 code has no bulk copies (gpu_kernels.hpp)
      DeviceBuffer sink(256);
      StreamRead probe;
      probe.engine = StreamRead::Engine::bulk;
      launch_stream_read(sink.get(), 0, static_cast<float*>(sink.get()), probe, nullptr);
      cuda_check(cudaDeviceSynchronize(), "stream_read probe");
    } catch (const RuntimeFailure& e) {
      fmt::print("note: the bulk-copy reads are left out: {}\n", e.what());
      bulk = false;
    }
  }
  const int per_sm = std::max(1, d.max_threads_per_sm / 256);
  std::vector<ReadWay> ways;
  for (int b : {per_sm, std::max(1, per_sm / 2)}) {
    StreamRead r;
    r.blocks = d.sm_count * b;
    ways.push_back({r, fmt::format("loads {}/SM", b)});
  }
  if (bulk)
    for (auto [ctas, stages, kib] : {std::array{1, 6, 32}, std::array{1, 12, 16}, std::array{1, 3, 64},
                                     std::array{2, 3, 32}, std::array{2, 6, 16}, std::array{4, 3, 16}}) {
      const int smem = stages * kib * 1024 + 8 * stages;
      if (smem > d.smem_per_block_optin || ctas * (smem + 1024) > d.smem_per_sm) continue;
      StreamRead r;
      r.engine = StreamRead::Engine::bulk;
      r.blocks = d.sm_count * ctas;
      r.stages = stages;
      r.chunk_bytes = kib * 1024;
      ways.push_back({r, fmt::format("bulk {}x{}x{}K", ctas, stages, kib)});
    }
  return ways;
}

LaunchFn read_launch(const StreamRead& how, size_t bytes, float* sink) {
  return [how, bytes, sink](const Operands& ops, cudaStream_t s) {
    launch_stream_read(ops.b, bytes, sink, how, s);
    return cudaGetLastError();
  };
}

struct ReadTimes {
  double best_us = kNaN;
  std::string best;                                  // the way that gave it
  std::vector<std::pair<std::string, double>> each;  // every way's time
};

// Each way's streaming read of each rotating set's B; the fastest is the floor.
ReadTimes time_read_b(const Problem& p, ProblemBench& bench, const std::vector<ReadWay>& ways) {
  DeviceBuffer sink(256);
  const size_t bytes = p.bytes_b() & ~size_t(15);
  ReadTimes r;
  bool first = true;
  for (auto& w : ways) {
    LaunchFn fn = read_launch(w.how, bytes, static_cast<float*>(sink.get()));
    if (first) bench.settle(fn, 1.0);  // from the GEMM's clock state to the read's
    first = false;
    TimingOptions o;
    o.min_time_s = 0.3;
    Timed t = bench.time(fn, o);
    const double us = t.time.value();  // the figure: the mean at the power cap (ProblemBench::time)
    r.each.push_back({w.name, us});
    if (std::isfinite(us) && !(us >= r.best_us)) {
      r.best_us = us;
      r.best = w.name;
    }
  }
  return r;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

// The command line's values.
struct Settings {
  std::string config = "configs/llm_shapes.toml", table_file, roof_shape = "8192x8192x8192", family = "cublaslt";
  int device = 0;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--config", s.config, "the job whose problems are measured (the default is relative to the checkout)")
      ->capture_default_str();
  app.add_option("--table", s.table_file, "a lookup table (TOML or JSON): its config for each problem is timed too");
  app.add_option("--roof-shape", s.roof_shape, "MxNxK where the tensor roof is measured (the pick's rate there)")
      ->capture_default_str();
  app.add_option("--family", s.family, "the library family whose heuristic pick is the reference")->capture_default_str();
  app.add_option("--device", s.device, "GPU index")->capture_default_str();
}

// What every measurement needs: the device, the plugins, the reference family and the compiler.
struct Bench {
  const DeviceInfo& dev;
  const PluginRegistry& reg;
  const Family& lt;
  const std::string& family;
  const Compiler& compiler;
};

struct Pick {
  Config config;
  std::string name;
};

// The reference family's heuristic pick for p.
Pick pick_of(const Bench& b, const Problem& p) {
  Space s = b.lt.space(p, b.dev.limits);
  auto picks = b.lt.suggest(p, b.dev.limits, 1, s.dims());
  if (picks.empty()) throw RuntimeFailure(fmt::format("{} has no pick for {}", b.family, p.key()));
  return Pick{picks[0], s.name(picks[0])};
}

// The tensor roof per input type of the job, measured here as the pick's rate at a large shape.
std::map<DType, double> measure_roofs(const Bench& b, const search::Job& job, const std::array<int64_t, 3>& roof_dims) {
  std::map<DType, double> roof;  // FLOP/s
  for (auto& jp : job.problems) {
    DType in = jp.problem.in;
    if (roof.count(in)) continue;
    Problem rp = Problem::make(roof_dims[0], roof_dims[1], roof_dims[2], in, jp.problem.out, Layout::nn);
    ProblemBench pb(rp, b.dev, Distribution::normal, 1);
    Timing t = time_config(b.lt, rp, pick_of(b, rp).config, b.dev, pb, b.compiler);
    roof[in] = rp.flops() / (t.us * 1e-6);
    fmt::print("tensor roof {}: {:.1f} TFLOP/s ({} pick at {}, {:.2f} us, {:.0f} MHz, {:.0f} W)\n", to_string(in),
               roof[in] / 1e12, b.family, rp.key(), t.us, t.mhz, t.watts);
    std::fflush(stdout);
  }
  return roof;
}

// The table's config for p on this device, timed (the pick's timing if it is the pick);
// NaN if the table has none. `family` gets the entry's family ("": no entry).
Timing time_table_config(const Bench& b, const LookupTable& table, const std::string& table_file, const Problem& p,
                         ProblemBench& bench, const Pick& pk, const Timing& pick, std::string& family) {
  const ResultKey want = ResultKey::of(b.dev.name, p);
  for (auto& e : table.entries) {
    if (!(e.key == want)) continue;  // this device's entry for exactly this problem
    family = e.family;
    if (e.family == b.family && e.config == pk.name) return pick;  // the pick itself: timed already
    const Family* f = b.reg.find(e.family);
    if (!f) throw InputError(fmt::format("{}: {}: family {} is not loaded", table_file, e.text(), e.family));
    Space s = f->space(p, b.dev.limits);
    std::string err;
    auto c = s.parse(e.config, &err);
    if (!c) throw InputError(fmt::format("{}: {}: {}", table_file, e.text(), err));
    return time_config(*f, p, *c, b.dev, bench, b.compiler);
  }
  return {};
}

// The launch floor, once: an empty read (every block starts and ends at once); then the table's header.
void print_launch_floor(ProblemBench& bench, const ReadWay& way, float* sink) {
  Timed t = bench.time(read_launch(way.how, 0, sink), [] {
    TimingOptions o;
    o.min_time_s = 0.3;
    return o;
  }());
  fmt::print("launch floor: an empty read ({}) takes {:.2f} us\n", way.name, t.time.value());
  fmt::print("\n{:<26} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>8} {:>8}\n", "problem", "pick us", "table us", "read B us",
             "TB/s", "roof us", "bound us", "pick/bd", "table/bd");
}

// Gains over the bound, for the geomeans at the end.
struct Gains {
  std::vector<double> pick, table;
  std::map<std::string, std::vector<double>> by_band;
};

// One problem's row of the table (and the line of each read way's time under it).
void print_problem(const Bench& b, const Problem& p, const Timing& pick, const Timing& tab, const std::string& tab_what,
                   const ReadTimes& reads, double roof, Gains& gains) {
  const double read_us = reads.best_us;
  double roof_us = p.flops() / roof * 1e6;
  double bound = std::max(read_us, roof_us);
  double g = pick.us / bound;
  gains.pick.push_back(g);
  gains.by_band[p.m <= 64 ? "M <= 64" : p.m <= 256 ? "M = 65..256" : "M > 256"].push_back(g);
  if (std::isfinite(tab.us)) gains.table.push_back(tab.us / bound);
  fmt::print("{:<26} {:>9.2f} {:>9} {:>9.2f} {:>7.2f} {:>9.2f} {:>9.2f} {:>8.3f} {:>8}{}{}\n", fmt::format("{}x{}x{} {}", p.m, p.n, p.k, to_string(p.in)),
             pick.us, std::isfinite(tab.us) ? fmt::format("{:.2f}", tab.us) : "-", read_us,
             double(p.bytes_b()) / (read_us * 1e-6) / 1e12, roof_us, bound, g,
             std::isfinite(tab.us) ? fmt::format("{:.3f}", tab.us / bound) : "-",
             tab_what.empty() || tab_what == b.family ? "" : fmt::format("  (table: {})", tab_what),
             pick.us < read_us ? "  (the pick beats the read kernel: its bound is loose)" : "");
  std::string each;
  for (auto& [name, us] : reads.each) each += fmt::format("{}{} {:.2f}", each.empty() ? "" : ", ", name, us);
  fmt::print("    read B ({} best): {}\n", reads.best, each);
  std::fflush(stdout);
}

void print_geomeans(const Gains& gains) {
  fmt::print("\ngeomean pick / bound over {} problems: {:.3f} (by these roofs, about the most a table could gain over the pick)\n",
             gains.pick.size(), geomean(gains.pick));
  for (auto& [band, v] : gains.by_band) fmt::print("  {:<12} {:>3} problems: {:.3f}\n", band, v.size(), geomean(v));
  if (!gains.table.empty())
    fmt::print("geomean table / bound over {} problems: {:.3f}\n", gains.table.size(), geomean(gains.table));
}

// Every problem of the job: the pick, the table's config, the read of B, against the roofs.
void measure_job(const Bench& b, const search::Job& job, const std::optional<LookupTable>& table,
                 const std::string& table_file, const std::map<DType, double>& roof) {
  const std::vector<ReadWay> ways = read_ways(b.dev);
  DeviceBuffer floor_sink(256);
  bool floor_printed = false;
  Gains gains;
  for (auto& jp : job.problems) {
    const Problem& p = jp.problem;
    ProblemBench bench(p, b.dev, Distribution::normal, 1);
    const Pick pk = pick_of(b, p);
    Timing pick = time_config(b.lt, p, pk.config, b.dev, bench, b.compiler);
    Timing tab;
    std::string tab_what;
    if (table) tab = time_table_config(b, *table, table_file, p, bench, pk, pick, tab_what);
    if (!floor_printed) {
      floor_printed = true;
      print_launch_floor(bench, ways.front(), static_cast<float*>(floor_sink.get()));
    }
    const ReadTimes reads = time_read_b(p, bench, ways);
    print_problem(b, p, pick, tab, tab_what, reads, roof.at(p.in), gains);
  }
  print_geomeans(gains);
}

// The whole benchmark; its exit code (failures are thrown).
int run(const Settings& s) {
  // Inputs first: a bad job or table fails before any GPU work.
  search::Job job = search::load_job(s.config);
  std::optional<LookupTable> table;
  if (!s.table_file.empty()) table = LookupTable::load(s.table_file);
  auto roof_dims = parse_shape(s.roof_shape, "--roof-shape");
  std::string why;
  if (device_count(&why) == 0) {
    fmt::print("bench_floor: {}\n", why);
    return 3;
  }
  auto reg = PluginRegistry::load({executable_dir() / ".." / "plugins"});
  const Family* lt = reg.find(s.family);
  if (!lt) throw InputError("--family: no family " + s.family);
  DeviceInfo dev = require_device(s.device);
  cuda_check(cudaSetDevice(s.device), "cudaSetDevice");
  CubinCache cache(default_cache_dir());
  Compiler compiler(&cache);
  const Bench b{dev, reg, *lt, s.family, compiler};

  fmt::print("bench_floor: {} on {} ({} SMs, L2 {:.0f} MiB); job {}; {} = {}'s heuristic pick\n", s.family, dev.name,
             dev.limits.sm_count, double(dev.limits.l2_bytes) / (1 << 20), job.source, "pick", s.family);
  const std::map<DType, double> roof = measure_roofs(b, job, roof_dims);
  measure_job(b, job, table, s.table_file, roof);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"cuBLASLt's pick (and a table's config) beside the device's roofs, per problem of a job: a streaming read "
               "of B and the FLOP at the tensor roof measured in the run; pick / bound is the most any kernel could gain"};
  add_options(app, s);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(s);
  } catch (const InputError& e) {
    fmt::print(stderr, "bench_floor: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_floor: {}\n", e.what());
    return 1;
  }
}
