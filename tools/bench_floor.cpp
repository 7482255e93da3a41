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
#include "bench.hpp"
#include "evaluate.hpp"
#include "gpu_kernels.hpp"
#include "job.hpp"
#include "plugin.hpp"
#include "table.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  std::string config = "configs/llm_shapes.toml", table_file, roof_shape = "8192x8192x8192", family = "cublaslt";
  int device = 0;
  CLI::App app{"cuBLASLt's pick (and a table's config) beside the device's roofs, per problem of a job: a streaming read "
               "of B and the FLOP at the tensor roof measured in the run; pick / bound is the most any kernel could gain"};
  app.add_option("--config", config, "the job whose problems are measured (the default is relative to the checkout)")
      ->capture_default_str();
  app.add_option("--table", table_file, "a lookup table (TOML or JSON): its config for each problem is timed too");
  app.add_option("--roof-shape", roof_shape, "MxNxK where the tensor roof is measured (the pick's rate there)")
      ->capture_default_str();
  app.add_option("--family", family, "the library family whose heuristic pick is the reference")->capture_default_str();
  app.add_option("--device", device, "GPU index")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    // Inputs first: a bad job or table fails before any GPU work.
    search::Job job = search::load_job(config);
    std::optional<LookupTable> table;
    if (!table_file.empty()) table = LookupTable::load(table_file);
    auto roof_dims = parse_shape(roof_shape, "--roof-shape");
    std::string why;
    if (device_count(&why) == 0) {
      fmt::print("bench_floor: {}\n", why);
      return 3;
    }
    auto reg = PluginRegistry::load({executable_dir() / ".." / "plugins"});
    const Family* lt = reg.find(family);
    if (!lt) throw InputError("--family: no family " + family);
    DeviceInfo dev = require_device(device);
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    CubinCache cache(default_cache_dir());
    Compiler compiler(&cache);
    struct Pick {
      Config config;
      std::string name;
    };
    auto pick_of = [&](const Problem& p) {
      Space s = lt->space(p, dev.limits);
      auto picks = lt->suggest(p, dev.limits, 1, s.dims());
      if (picks.empty()) throw RuntimeFailure(fmt::format("{} has no pick for {}", family, p.key()));
      return Pick{picks[0], s.name(picks[0])};
    };

    // The tensor roof per input type, measured here as the pick's rate at a large shape.
    std::map<DType, double> roof;  // FLOP/s
    fmt::print("bench_floor: {} on {} ({} SMs, L2 {:.0f} MiB); job {}; {} = {}'s heuristic pick\n", family, dev.name,
               dev.limits.sm_count, double(dev.limits.l2_bytes) / (1 << 20), job.source, "pick", family);
    for (auto& jp : job.problems) {
      DType in = jp.problem.in;
      if (roof.count(in)) continue;
      Problem rp = Problem::make(roof_dims[0], roof_dims[1], roof_dims[2], in, jp.problem.out, Layout::nn);
      ProblemBench b(rp, dev, Distribution::normal, 1);
      Timing t = time_config(*lt, rp, pick_of(rp).config, dev, b, compiler);
      roof[in] = rp.flops() / (t.us * 1e-6);
      fmt::print("tensor roof {}: {:.1f} TFLOP/s ({} pick at {}, {:.2f} us, {:.0f} MHz, {:.0f} W)\n", to_string(in),
                 roof[in] / 1e12, family, rp.key(), t.us, t.mhz, t.watts);
      std::fflush(stdout);
    }

    const std::vector<ReadWay> ways = read_ways(dev);
    DeviceBuffer floor_sink(256);
    bool floor_printed = false;
    std::vector<double> pick_gain, table_gain;
    std::map<std::string, std::vector<double>> by_band;
    for (auto& jp : job.problems) {
      const Problem& p = jp.problem;
      ProblemBench bench(p, dev, Distribution::normal, 1);
      const Pick pk = pick_of(p);
      Timing pick = time_config(*lt, p, pk.config, dev, bench, compiler);
      Timing tab;
      std::string tab_what;
      if (table) {
        const ResultKey want = ResultKey::of(dev.name, p);
        for (auto& e : table->entries) {
          if (!(e.key == want)) continue;  // this device's entry for exactly this problem
          tab_what = e.family;
          if (e.family == family && e.config == pk.name) {  // the pick itself: timed above
            tab = pick;
            break;
          }
          const Family* f = reg.find(e.family);
          if (!f) throw InputError(fmt::format("{}: {}: family {} is not loaded", table_file, e.text(), e.family));
          Space s = f->space(p, dev.limits);
          std::string err;
          auto c = s.parse(e.config, &err);
          if (!c) throw InputError(fmt::format("{}: {}: {}", table_file, e.text(), err));
          tab = time_config(*f, p, *c, dev, bench, compiler);
          break;
        }
      }
      if (!floor_printed) {  // the launch floor, once: an empty read (every block starts and ends at once)
        floor_printed = true;
        Timed t = bench.time(read_launch(ways.front().how, 0, static_cast<float*>(floor_sink.get())), [] {
          TimingOptions o;
          o.min_time_s = 0.3;
          return o;
        }());
        fmt::print("launch floor: an empty read ({}) takes {:.2f} us\n", ways.front().name, t.time.value());
        fmt::print("\n{:<26} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>8} {:>8}\n", "problem", "pick us", "table us", "read B us",
                   "TB/s", "roof us", "bound us", "pick/bd", "table/bd");
      }
      const ReadTimes reads = time_read_b(p, bench, ways);
      const double read_us = reads.best_us;
      double roof_us = p.flops() / roof.at(p.in) * 1e6;
      double bound = std::max(read_us, roof_us);
      double g = pick.us / bound;
      pick_gain.push_back(g);
      by_band[p.m <= 64 ? "M <= 64" : p.m <= 256 ? "M = 65..256" : "M > 256"].push_back(g);
      if (std::isfinite(tab.us)) table_gain.push_back(tab.us / bound);
      fmt::print("{:<26} {:>9.2f} {:>9} {:>9.2f} {:>7.2f} {:>9.2f} {:>9.2f} {:>8.3f} {:>8}{}{}\n", fmt::format("{}x{}x{} {}", p.m, p.n, p.k, to_string(p.in)),
                 pick.us, std::isfinite(tab.us) ? fmt::format("{:.2f}", tab.us) : "-", read_us,
                 double(p.bytes_b()) / (read_us * 1e-6) / 1e12, roof_us, bound, g,
                 std::isfinite(tab.us) ? fmt::format("{:.3f}", tab.us / bound) : "-",
                 tab_what.empty() || tab_what == family ? "" : fmt::format("  (table: {})", tab_what),
                 pick.us < read_us ? "  (the pick beats the read kernel: its bound is loose)" : "");
      std::string each;
      for (auto& [name, us] : reads.each) each += fmt::format("{}{} {:.2f}", each.empty() ? "" : ", ", name, us);
      fmt::print("    read B ({} best): {}\n", reads.best, each);
      std::fflush(stdout);
    }
    fmt::print("\ngeomean pick / bound over {} problems: {:.3f} (by these roofs, about the most a table could gain over the pick)\n",
               pick_gain.size(), geomean(pick_gain));
    for (auto& [band, v] : by_band) fmt::print("  {:<12} {:>3} problems: {:.3f}\n", band, v.size(), geomean(v));
    if (!table_gain.empty())
      fmt::print("geomean table / bound over {} problems: {:.3f}\n", table_gain.size(), geomean(table_gain));
  } catch (const InputError& e) {
    fmt::print(stderr, "bench_floor: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_floor: {}\n", e.what());
    return 1;
  }
  return 0;
}
