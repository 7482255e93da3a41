// gemmtune run: verify one config against float64, then time it in settled steady state.
#include "measure/bench.hpp"
#include "cli.hpp"
#include "measure/evaluate.hpp"
#include "base/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

namespace gt::cli {

// One row per timed call; a row that an NVML reading followed carries it too.
static std::string trace_csv(const Timed& t) {
  std::string out = "t_s,time_us,sm_clock_mhz,power_w,temp_c\n";
  auto to = std::back_inserter(out);
  size_t r = 0;
  for (size_t i = 0; i < t.samples.size(); ++i) {
    fmt::format_to(to, "{:.6f},{:.3f}", t.sample_t[i], t.samples[i]);
    if (r < t.readings.size() && t.readings[r].t >= t.sample_t[i] &&
        (i + 1 == t.samples.size() || t.readings[r].t < t.sample_t[i + 1])) {
      const auto& x = t.readings[r++];
      fmt::format_to(to, ",{:.0f},{:.1f},{:.0f}\n", x.sm_clock_mhz, x.power_w, x.temp_c);
    } else {
      fmt::format_to(to, ",,,\n");
    }
  }
  return out;
}

// A bad trace path fails before the GPU work (files.hpp: not a directory, a FIFO or a device,
// in a folder that can be written, and not the results store, which run does not use but
// must not lose); the file is replaced only by a whole trace, never emptied by a run that
// timed nothing.
static void check_trace_path(const Globals& g, const std::string& trace) {
  if (trace.empty()) return;
  const std::filesystem::path dir = std::filesystem::absolute(trace).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw InputError(fmt::format("--trace: cannot write {}: the folder {} does not exist", trace, dir.string()));
  try {
    check_file_roles({{FileUse::write, "--trace", trace}, {FileUse::store_readonly, g.db_flag(), g.db_path()}});
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (cannot write it)");
  }
}

// The text output: the config (`name`: the family and its readable form, and its transform),
// its resources, its verification and its timing.
static void print_run(const Family& fam, const TransformPlan& plan, const Config& c, const std::string& name,
                      const DeviceInfo& dev, const Measurement& m, Distribution d, uint64_t seed, bool verify_only,
                      int rotation) {
  const Problem& p = plan.outer;
  fmt::print("{} on {} ({})\n", name, dev.name, p.key());
  std::string desc = fam.describe(plan.inner, c);
  if (!desc.empty()) fmt::print("  {}\n", desc);
  if (plan.transform != Transform::none) fmt::print("  {}: {}\n", to_string(plan.transform), plan.describe());
  if (m.res.registers >= 0)
    fmt::print("  {} registers, {} B static shared memory, {} B spilled; compile {}\n", m.res.registers,
               m.res.static_smem, m.res.spill_stores, m.compiled_from_cache ? "from cache" : human_seconds(m.compile_s));
  if (m.status != Status::ok) {
    fmt::print("  {}: {}\n", to_string(m.status), m.message);
    return;
  }
  fmt::print("  verified: relative Frobenius error {:.2e}, normalised max error {:.2e} (inputs {}, seed {})\n",
             m.err_rel_fro, m.err_max_norm, to_string(d), seed);
  if (verify_only) return;
  // At the power cap the samples mix the governor's clock levels: the mean is the figure.
  const bool mean = m.time.center == Center::mean;
  fmt::print("  time: {} {:.3f} us{}  ({}min {:.3f}, p10 {:.3f}, p90 {:.3f}, max {:.3f}; {} samples, CI +/-{:.2f} %)\n",
             to_string(m.time.center), m.time_us(), mean ? " at the power cap" : "",
             mean ? fmt::format("median {:.3f}, ", m.time.median) : "", m.time.min, m.time.p10, m.time.p90, m.time.max,
             m.time.count, 100 * m.time.ci_rel());
  fmt::print("  {:.2f} TFLOP/s; {} rotating input sets\n", m.tflops(p.flops()), rotation);
  auto f = [](double v, const char* unit) { return std::isfinite(v) ? fmt::format("{:.0f} {}", v, unit) : std::string("unknown"); };
  fmt::print("  while timing: SM clock {}, power {}, temperature {}, throttle: {}\n", f(m.sensors.sm_clock_mhz, "MHz"),
             f(m.sensors.power_w, "W"), f(m.sensors.temp_c, "C"), m.throttle.empty() ? "unknown" : m.throttle);
}

struct RunArgs {
  std::string family, params, dist = "normal", trace, transform = "none";
  ProblemArgs problem;
  int device = 0;
  uint64_t seed = 0;  // random, printed
  bool quick = false, verify_only = false;
  double settle = kSettleCapS, min_time = -1;  // min_time < 0: the default for the clock's state
};

void add_run_options(CLI::App* sub, RunArgs& a) {
  sub->add_option("--family", a.family, "kernel family")->required();
  sub->add_option("--params", a.params, "K=V,K=V or \"K=V K=V\" (others keep their defaults) or a canonical config name");
  sub->add_option("--device", a.device, "GPU index")->capture_default_str()->check(whole_in(kDeviceRange));
  sub->add_option("--dist", a.dist, "input distribution: normal (default), uniform, zeros (misleading: zeros run "
                                  "faster and hide unwritten outputs)");
  sub->add_option("--seed", a.seed, "input seed (default: random, printed)")
      ->check(whole_in(search::WholeRange{0, UINT64_MAX}));
  sub->add_option("--settle", a.settle, fmt::format("seconds at most to settle the clock before timing (at least {:g} s of it, "
                                                 "{:g} s at the power cap, or all when less)", kSettleMinS, kCappedSettleMinS))
      ->capture_default_str()
      ->check(number_in(kSettleRange));
  sub->add_option("--min-time", a.min_time, fmt::format("seconds to sample at least, even once the interval is narrow (default: {:g} "
                                                    "once NVML reports the power cap, whose governor moves the clock between "
                                                    "levels about every half second, and the mean is the figure; else 0)",
                                                    kCappedMinTimeS))
      ->check(number_in(search::RealRange{0, 60, false, "number of seconds"}));
  sub->add_option("--trace", a.trace, "write every timed call and NVML reading to this CSV (t_s, time_us, "
                                  "sm_clock_mhz, power_w, temp_c; t from the first sample)");
  sub->add_option("--transform", a.transform,
                  "run the config through a problem transform: none (default), pad, round, swap, pad+swap "
                  "(docs/transforms.md); --params is then of the family's space for the transformed problem");
  sub->add_flag("--quick", a.quick, "fewer samples (exploration)");
  sub->add_flag("--verify-only", a.verify_only, "verify, do not time");
  add_problem_options(sub, a.problem, true);
}

int run_run(Globals& g, const RunArgs& a) {
  Problem p = a.problem.resolve();
  if (a.quick && a.min_time >= 0) throw InputError("--min-time: not with --quick (quick timing stops at its own short cap)");
  check_trace_path(g, a.trace);
  Distribution d = parse_distribution(a.dist.c_str());
  const Family& fam = g.plugins().get(a.family);
  const Transform t = parse_transform(a.transform, "--transform");
  std::string why_not;
  const auto plan = plan_transform(p, t, &why_not);
  if (!plan) throw InputError(fmt::format("--transform {}: {}", a.transform, why_not));
  // Validate the config against the architecture's limits before asking for a GPU.
  std::string why_none;
  bool have_gpu = device_count(&why_none) > 0;
  DeviceInfo dev;
  gt_device lim = arch_limits("sm_90");
  if (have_gpu) {
    dev = gpu_or_exit(a.device);
    lim = dev.limits;
  }
  // A library family may need the GPU to describe its space at all.
  std::optional<Space> described;
  try {
    described = fam.space(plan->inner, lim);
  } catch (const RuntimeFailure&) {
    if (!have_gpu) throw NoGpuError(why_none);
    throw;
  }
  Space& space = *described;
  Config c = space.default_config();
  if (!a.params.empty()) {
    std::string err;
    auto parsed = space.parse(a.params, &err);
    if (!parsed) throw InputError("--params: " + err);
    c = *parsed;
  }
  if (!have_gpu) throw NoGpuError(why_none);
  const uint64_t seed = a.seed != 0 ? a.seed : (std::random_device{}() | 1);
  if (d == Distribution::zeros)
    fmt::print(stderr, "warning: zero inputs run faster than real data and hide unwritten outputs\n");
  ProblemBench bench(p, dev, d, seed);
  CubinCache cache = g.cache();
  Compiler compiler(&cache);
  EvaluateOptions o;
  o.quick = a.quick;
  o.time_it = !a.verify_only;
  o.settle_s = a.settle;
  o.timing.min_time_s = std::max(a.min_time, 0.0);
  o.timing.capped_min_time_s = a.min_time >= 0 ? a.min_time : kCappedMinTimeS;
  o.keep_trace = !a.trace.empty();
  o.transform = t;
  Evaluation ev = evaluate(fam, p, c, dev, bench, compiler, nullptr, o);
  const Measurement& m = ev.m;
  if (!a.trace.empty()) {
    if (ev.trace) {
      write_file_replacing(a.trace, trace_csv(*ev.trace));
    } else {
      fmt::print(stderr, "--trace: nothing was timed; {} not written\n", a.trace);
    }
  }
  std::string name = transformed_name(space.name(c), t);
  if (g.json) {
    nlohmann::json j = m;
    j["config"] = name;
    j["params"] = space.readable(c);
    j["transform"] = to_string(t);
    j["problem"] = p.key();
    j["device"] = dev.name;
    j["tflops"] = m.status == Status::ok && !a.verify_only ? nlohmann::json(m.tflops(p.flops())) : nlohmann::json();
    j["input_dist"] = to_string(d);
    j["input_seed"] = seed;
    j["rotating_sets"] = bench.rotation();
    print_json(j);
  } else {
    print_run(fam, *plan, c,
              fam.name() + "  " + space.readable(c) +
                  (t == Transform::none ? "" : "  +" + std::string(to_string(t))),
              dev, m, d, seed, a.verify_only, bench.rotation());
  }
  return m.status == Status::ok ? 0 : 1;
}

Registrar reg_run(40, [](CLI::App& app, Globals& g) {
  return make_command<RunArgs>(app, g, "run",
      "verifies one config (default: the family's default) against float64, then times it; prints time,"
      " TFLOP/s, error (needs a GPU)",
      add_run_options, run_run);
});

}  // namespace gt::cli
