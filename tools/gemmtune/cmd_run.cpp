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

static Command add_run(CLI::App& app, Globals& g);
static Registrar reg_run(40, add_run);

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

static Command add_run(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand("run", "verifies one config (default: the family's default) against float64, then "
                                        "times it; prints time, TFLOP/s, error (needs a GPU)");
  static std::string family, params, dist = "normal", trace, transform = "none";
  static ProblemArgs pa;
  static int device = 0;
  static uint64_t seed = 0;
  static bool quick = false, verify_only = false;
  static double settle = kSettleCapS, min_time = -1;
  sub->add_option("--family", family, "kernel family")->required();
  sub->add_option("--params", params, "K=V,K=V or \"K=V K=V\" (others keep their defaults) or a canonical config name");
  sub->add_option("--device", device, "GPU index")->default_val(0)->check(whole_in(kDeviceRange));
  sub->add_option("--dist", dist, "input distribution: normal (default), uniform, zeros (misleading: zeros run "
                                  "faster and hide unwritten outputs)");
  sub->add_option("--seed", seed, "input seed (default: random, printed)")
      ->check(whole_in(search::WholeRange{0, UINT64_MAX}));
  sub->add_option("--settle", settle, fmt::format("seconds at most to settle the clock before timing (at least {:g} s of it, "
                                                 "{:g} s at the power cap, or all when less)", kSettleMinS, kCappedSettleMinS))
      ->default_val(kSettleCapS)
      ->check(number_in(kSettleRange));
  sub->add_option("--min-time", min_time, fmt::format("seconds to sample at least, even once the interval is narrow (default: {:g} "
                                                    "once NVML reports the power cap, whose governor moves the clock between "
                                                    "levels about every half second, and the mean is the figure; else 0)",
                                                    kCappedMinTimeS))
      ->check(number_in(search::RealRange{0, 60, false, "number of seconds"}));
  sub->add_option("--trace", trace, "write every timed call and NVML reading to this CSV (t_s, time_us, "
                                  "sm_clock_mhz, power_w, temp_c; t from the first sample)");
  sub->add_option("--transform", transform,
                  "run the config through a problem transform: none (default), pad, swap, pad+swap "
                  "(docs/transforms.md); --params is then of the family's space for the transformed problem");
  sub->add_flag("--quick", quick, "fewer samples (exploration)");
  sub->add_flag("--verify-only", verify_only, "verify, do not time");
  add_problem_options(sub, pa, true);
  return {sub, [&g] {
            Problem p = pa.resolve();
            if (quick && min_time >= 0) throw InputError("--min-time: not with --quick (quick timing stops at its own short cap)");
            check_trace_path(g, trace);
            Distribution d = parse_distribution(dist.c_str());
            const Family& fam = g.plugins().get(family);
            const Transform t = parse_transform(transform, "--transform");
            std::string why_not;
            const auto plan = plan_transform(p, t, &why_not);
            if (!plan) throw InputError(fmt::format("--transform {}: {}", transform, why_not));
            // Validate the config against the architecture's limits before asking for a GPU.
            std::string why_none;
            bool have_gpu = device_count(&why_none) > 0;
            DeviceInfo dev;
            gt_device lim = arch_limits("sm_90");
            if (have_gpu) {
              dev = gpu_or_exit(device);
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
            if (!params.empty()) {
              std::string err;
              auto parsed = space.parse(params, &err);
              if (!parsed) throw InputError("--params: " + err);
              c = *parsed;
            }
            if (!have_gpu) throw NoGpuError(why_none);
            if (seed == 0) seed = std::random_device{}() | 1;
            if (d == Distribution::zeros)
              fmt::print(stderr, "warning: zero inputs run faster than real data and hide unwritten outputs\n");
            ProblemBench bench(p, dev, d, seed);
            CubinCache cache = g.cache();
            Compiler compiler(&cache);
            EvaluateOptions o;
            o.quick = quick;
            o.time_it = !verify_only;
            o.settle_s = settle;
            o.timing.min_time_s = std::max(min_time, 0.0);
            o.timing.capped_min_time_s = min_time >= 0 ? min_time : kCappedMinTimeS;
            o.keep_trace = !trace.empty();
            o.transform = t;
            Evaluation ev = evaluate(fam, p, c, dev, bench, compiler, nullptr, o);
            const Measurement& m = ev.m;
            if (!trace.empty()) {
              if (ev.trace) {
                write_file_replacing(trace, trace_csv(*ev.trace));
              } else {
                fmt::print(stderr, "--trace: nothing was timed; {} not written\n", trace);
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
              j["tflops"] = m.status == Status::ok && !verify_only ? nlohmann::json(m.tflops(p.flops())) : nlohmann::json();
              j["input_dist"] = to_string(d);
              j["input_seed"] = seed;
              j["rotating_sets"] = bench.rotation();
              print_json(j);
            } else {
              print_run(fam, *plan, c,
                        fam.name() + "  " + space.readable(c) +
                            (t == Transform::none ? "" : "  +" + std::string(to_string(t))),
                        dev, m, d, seed, verify_only, bench.rotation());
            }
            return m.status == Status::ok ? 0 : 1;
          }};
}

}  // namespace gt::cli
