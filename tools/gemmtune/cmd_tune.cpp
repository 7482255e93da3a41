// gemmtune tune: search the families' spaces for one problem or every problem of a job,
// store every measurement, print the winners. Parse (the flags) -> resolve (a resolved job,
// search/job/resolve.hpp, checked before any GPU work) -> run (search/job/run.hpp, over one or more
// GPUs, or a recording) -> print.
#include "measure/bench.hpp"
#include "cli.hpp"
#include "job/resolve.hpp"
#include "job/run.hpp"
#include "session.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <random>

namespace gt::cli {

namespace {
// A worker is never given more than 600 s for one request (WorkerLimits::absolute_cap_s).
constexpr search::RealRange kHangFloorRange{0, 600, true, "number of seconds"};
constexpr search::RealRange kCompileTimeoutRange{0, 86400, true, "number of seconds"};

std::atomic<bool> g_stop{false};
void on_sigint(int) {
  if (g_stop.load()) std::_Exit(130);  // second Ctrl-C: stop now
  g_stop.store(true);
}

struct TuneArgs {
  ProblemArgs pa;
  std::vector<std::string> families;
  std::string config, replay, record;
  bool default_job = false;
  std::string strategy;
  std::optional<uint64_t> budget, patience, seed;
  uint64_t max_problems = search::kDefaultMaxProblems;
  std::optional<double> seconds, fraction;
  std::string devices;
  int device = 0;
  std::string shard;
  int consistency = -1;
  double hang_floor = 10;
  double compile_timeout = 120;
  bool no_isolation = false, full = false, no_reuse = false, fast_accum = false;
  std::optional<int> finalists;
  int rounds = Interleave{}.rounds;
  double min_gain = -1;  // percent; < 0: the job's, else TuneOptions's
  double turn_warmup = Interleave{}.capped_warmup_s;
  std::string dist;
  double settle = kSettleCapS;
  std::string transforms = "auto";
};

std::string fmt_us(double us) { return std::isfinite(us) ? fmt::format("{:.2f}", us) : "-"; }

void add_tune_options(CLI::App* sub, TuneArgs& a) {
  add_problem_options(sub, a.pa);
  sub->add_option("--family", a.families, "families to tune (repeatable; default: the job's, else all)");
  sub->add_option("--config", a.config, "a TOML job file (see configs/)");
  sub->add_flag("--default-job", a.default_job,
                "run the job built into gemmtune (configs/default_job.toml); on a machine without a GPU, as a "
                "replay of the measurements recorded on an H200 (configs/default_job.replay.json)");
  sub->add_option("--strategy", a.strategy,
                  "search strategy: auto (default: exhaustive for a small space the budget covers, else bayes), exhaustive, random, "
                  "anneal, genetic, bayes");
  const char* replaces = "; replaces the job's, its [tune.budget.FAMILY] too";
  sub->add_option("--budget", a.budget,
                  std::string("at most this many evaluations per (problem, family) (default: see above)") + replaces)
      ->check(whole_in(search::kEvaluationsRange));
  sub->add_option("--time", a.seconds,
                  std::string("at most this many seconds per (problem, family) (in a replay: of the recorded GPU's "
                              "simulated time)") + replaces)
      ->check(number_in(search::kSecondsRange));
  sub->add_option("--fraction", a.fraction, std::string("at most this fraction of the valid space per (problem, family)") + replaces)
      ->check(number_in(search::kFractionRange));
  sub->add_option("--patience", a.patience, std::string("stop a family after this many evaluations without improvement") + replaces)
      ->check(whole_in(search::kPatienceRange));
  sub->add_option("--seed", a.seed, fmt::format("strategy seed (default {}): the same seed proposes the same configs", search::TuneOptions{}.seed))
      ->check(whole_in(search::kSeedRange));
  sub->add_option("--max-problems", a.max_problems,
                  fmt::format("the most problems a job may expand to (default {}): a job naming more is refused before "
                              "it is expanded", search::kDefaultMaxProblems))
      ->check(whole_in(search::WholeRange{1, UINT64_MAX}));
  sub->add_option("--device", a.device, "GPU index")->capture_default_str()->check(whole_in(kDeviceRange));
  sub->add_option("--devices", a.devices,
                  "tune on several GPUs: all, or 0,1,... (one worker per GPU; each problem explored, re-timed and "
                  "decided on one GPU, problems handed out as GPUs free up)");
  sub->add_option("--consistency", a.consistency,
                  "with several GPUs: time this many problems' winners on every GPU afterwards and report the spread "
                  "(default: one per GPU, the first it decided; 0: none)")
      ->check(whole_in(search::WholeRange{0, 1000000}));
  sub->add_option("--shard", a.shard,
                  "I/N: tune only the problems whose index in the job is I modulo N (else from SLURM_ARRAY_TASK_ID, "
                  "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID); combine the shards' stores with `gemmtune merge`");
  sub->add_option("--hang-floor", a.hang_floor,
                  "seconds a silent worker is given before a candidate counts as hung (also 50x its slowest call)")
      ->capture_default_str()
      ->check(number_in(kHangFloorRange));
  sub->add_option("--compile-timeout", a.compile_timeout,
                  "seconds a candidate's NVRTC compile may take before it counts as a timeout")
      ->capture_default_str()
      ->check(number_in(kCompileTimeoutRange));
  sub->add_flag("--no-isolation", a.no_isolation,
                "measure in this process rather than a worker process (a faulting kernel then ends the tune)");
  sub->add_flag("--full", a.full, "full timing for every candidate (default: quick exploration, full finalists)");
  sub->add_flag("--no-reuse", a.no_reuse, "measure everything again even if the store holds valid results");
  sub->add_option("--finalists", a.finalists, fmt::format("configs per family re-timed interleaved at the end (default {})", search::TuneOptions{}.finalists))
      ->check(whole_in(search::kFinalistsRange));
  add_interleave_options(sub, a.rounds, a.turn_warmup);
  add_min_gain_option(sub, a.min_gain, "; and another family to replace cuBLASLt's winner");
  sub->add_option("--dist", a.dist, "input distribution: normal (default), uniform, zeros");
  sub->add_flag("--fast-accum", a.fast_accum,
                "FP8: also explore fast accumulation (cuBLASLt's FAST_ACCUM: no periodic promotion to fp32; faster, "
                "less exact; its error is stored beside its time). Default: the job's [tune] fast_accum, else off");
  sub->add_option("--settle", a.settle, fmt::format("seconds at most to settle the clock per problem (at least {:g} s of it, "
                                                   "{:g} s at the power cap, or all when less)", kSettleMinS, kCappedSettleMinS))
      ->capture_default_str()
      ->check(number_in(kSettleRange));
  sub->add_option("--replay", a.replay,
                  "recorded measurements (gemmtune-replay JSON) stand in for the GPU, as a simulation of the recorded "
                  "run: no GPU needed; without a problem named, the recording's problems");
  sub->add_option("--record", a.record,
                  "write what this run measured as a replay recording (JSON) to this file");
  sub->add_option("--transforms", a.transforms,
                  "problem transforms explored beside the plain problem (docs/transforms.md): auto (default: pad "
                  "where the problem is misaligned, swap where it changes what a family can run), none, or a list "
                  "of pad, swap, pad+swap (exactly those, wherever they apply); not in a replay")
      ->capture_default_str();
}

// The flags as a job request: the job-independent settings go into its base options.
search::JobRequest request_of(const TuneArgs& a) {
  search::JobRequest r;
  r.config = a.config;
  r.max_problems = a.max_problems;
  r.default_job = a.default_job;
  if (a.pa.given()) r.problem = a.pa.resolve();
  r.families = a.families;
  r.strategy = a.strategy;
  r.evaluations = a.budget;
  r.seconds = a.seconds;
  r.fraction = a.fraction;
  r.patience = a.patience;
  r.seed = a.seed;
  r.full = a.full;
  r.finalists = a.finalists;
  if (a.min_gain >= 0) r.min_gain_pct = a.min_gain;
  r.fast_accum = a.fast_accum;
  r.dist = a.dist;
  r.shard = a.shard;
  r.environment = search::environment();
  r.devices = a.devices;
  r.device = a.device;
  r.consistency = a.consistency;
  r.default_budget = search::default_tune_budget();
  search::TuneOptions& o = r.base;
  o.compile_timeout_s = a.compile_timeout;
  o.retime.rounds = a.rounds;
  o.retime.capped_warmup_s = a.turn_warmup;
  o.reuse = !a.no_reuse;
  o.settle_s = a.settle;
  o.transforms = search::TransformPolicy::parse(a.transforms, "--transforms");
  o.stop = &g_stop;
  std::random_device rd;
  o.input_seed = (uint64_t(rd()) << 32) | rd();
  o.tune_id = new_uuid().substr(0, 12);
  return r;
}

// Prints one problem's families and winner (text output).
void print_problem(const search::ProblemOutcome& po, const std::string& gpu, const std::string& label) {
  fmt::print("\n{}{}{}\n", po.problem.key(), gpu, label);
  fmt::print("  {:<14} {:>10} {:>9} {:>13} {:>7}  {:<11} {}\n", "family", "time us", "TFLOP/s", "evaluated", "failed",
             "strategy", "best config");
  for (size_t i = 0; i < po.families.size(); ++i) {
    const auto& f = po.families[i];
    if (!f.skipped.empty()) {
      fmt::print("  {:<14} skipped: {}\n", f.family, f.skipped);
      continue;
    }
    uint64_t failed = 0;
    std::string fails;
    for (auto& [st, n] : f.by_status)
      if (st != Status::ok) {
        failed += n;
        fails += fmt::format("{}{} {}", fails.empty() ? "" : ", ", n, to_string(st));
      }
    fmt::print("  {:<14} {:>10} {:>9} {:>13} {:>7}  {:<11} {}{}{}\n", f.family, fmt_us(f.best_m.time_us()),
               f.best ? fmt::format("{:.1f}", f.best_m.tflops(po.problem.flops())) : "-",
               fmt::format("{}{}", f.evaluated, f.reused ? fmt::format(" ({} stored)", f.reused) : ""), failed,
               f.strategy, f.best ? f.best_params : "(none passed)", int(i) == po.winner ? "  <- winner" : "",
               f.decision.tie ? " (tie)" : "");
    if (!f.best_description.empty()) fmt::print("  {:<14} {}\n", "", f.best_description);
    if (f.forms.size() > 1)
      for (const auto& form : f.forms) {
        const std::string what = form.transform == Transform::none ? "plain" : to_string(form.transform);
        if (!form.skipped.empty())
          fmt::print("  {:<14} form {}: not explored: {}\n", "", what, form.skipped);
        else
          fmt::print("  {:<14} form {}: {} evaluated, fastest {} us {}; stopped: {}{}\n", "", what, form.evaluated,
                     fmt_us(form.best_us), form.best_name.empty() ? "(none passed)" : form.best_name, form.stop_reason,
                     form.compile_wait_s > 0 ? fmt::format(" (waited {} on compiles, not counted)",
                                                           human_seconds(form.compile_wait_s))
                                             : "");
      }
    if (!f.figure_note.empty()) fmt::print("  {:<14} figure: {}\n", "", f.figure_note);
    if (!f.note.empty()) fmt::print("  {:<14} note: {}\n", "", f.note);
    fmt::print("  {:<14} stopped: {}; compile {}, measure {}{}{}{}\n", "", f.stop_reason,
               f.compile_s > 0 ? human_seconds(f.compile_s) : "-", f.measure_s > 0 ? human_seconds(f.measure_s) : "-",
               f.stale ? fmt::format(", {} stale rows re-measured", f.stale) : "",
               f.stale_builds ? fmt::format(", {} configs built differently since stored, re-measured", f.stale_builds) : "",
               fails.empty() ? "" : "; failures: " + fails);
  }
  if (!po.note.empty()) fmt::print("  note: {}\n", po.note);
}

nlohmann::json decision_json(const Decision& d) {
  return {{"tie", d.tie},
          {"tie_with", d.tie_with},
          {"runner_up", d.runner_up},
          {"margin", std::isfinite(d.margin) ? nlohmann::json(d.margin) : nlohmann::json()}};
}

nlohmann::json problem_json(const search::ProblemOutcome& po, bool replay) {
  nlohmann::json fams = nlohmann::json::array();
  for (auto& f : po.families) {
    nlohmann::json fj = {{"family", f.family}, {"skipped", f.skipped}, {"strategy", f.strategy},
                         {"evaluated", f.evaluated}, {"reused", f.reused}, {"stale", f.stale}, {"stale_builds", f.stale_builds},
                         {"valid_space", f.valid_space}, {"stop_reason", f.stop_reason},
                         {"seconds", f.seconds}, {"compile_s", f.compile_s}, {"measure_s", f.measure_s}};
    nlohmann::json st = nlohmann::json::object();
    for (auto& [s, n] : f.by_status) st[to_string(s)] = n;
    fj["by_status"] = st;
    nlohmann::json forms = nlohmann::json::array();
    for (const auto& form : f.forms)
      forms.push_back({{"transform", to_string(form.transform)}, {"plan", form.plan}, {"skipped", form.skipped},
                       {"valid_space", form.valid_space}, {"evaluated", form.evaluated}, {"best", form.best_name},
                       {"stop_reason", form.stop_reason}, {"compile_wait_s", form.compile_wait_s},
                       {"best_us", std::isfinite(form.best_us) ? nlohmann::json(form.best_us) : nlohmann::json()}});
    fj["forms"] = forms;
    if (f.best) {
      fj["best"] = f.best_name;
      fj["best_params"] = f.best_params;
      fj["transform"] = to_string(f.best_transform);
      fj["best_measurement"] = f.best_m;
      fj["tflops"] = f.best_m.tflops(po.problem.flops());
      fj["tie"] = f.decision.tie;
      fj["decision"] = decision_json(f.decision);
      fj["note"] = f.note;
      fj["figure"] = f.figure_note;
    }
    fams.push_back(fj);
  }
  return {{"problem", po.problem}, {"key", po.problem.key()}, {"families", fams},
          {"winner", po.winner >= 0 ? po.families[size_t(po.winner)].family : ""},
          {"decision", decision_json(po.decision)}, {"note", po.note}, {"replay", replay}, {"seconds", po.seconds}};
}

// The cross-GPU check of a multi-GPU run, as lines and as JSON.
nlohmann::json print_consistency(const std::vector<search::ConsistencySample>& cs, Session& session, bool json) {
  nlohmann::json out = nlohmann::json::array();
  if (!json && !cs.empty()) fmt::print("\ncross-GPU check: each sampled winner timed on every GPU\n");
  for (auto& s : cs) {
    nlohmann::json per = nlohmann::json::array();
    std::string line;
    for (size_t g = 0; g < s.per_gpu.size(); ++g) {
      const Measurement& m = s.per_gpu[g];
      const int index = session.measurer(g).device().index;
      per.push_back({{"gpu", index}, {"status", to_string(m.status)}, {"time_us", m.time}, {"message", m.message}});
      line += fmt::format("{}GPU {} {}", line.empty() ? "" : ", ", index,
                          m.status == Status::ok ? fmt_us(m.time_us()) + " us" : std::string(to_string(m.status)));
    }
    out.push_back({{"problem", s.problem.key()}, {"family", s.family}, {"config", s.config_name},
                   {"params", s.config_params},
                   {"decided_on", session.measurer(s.decided_on).device().index},
                   {"spread", std::isfinite(s.spread) ? nlohmann::json(s.spread) : nlohmann::json()}, {"per_gpu", per}});
    if (!json)
      fmt::print("  {} {} {}: {}; {}\n", s.problem.key(), s.family, s.config_params, line,
                 std::isfinite(s.spread) ? fmt::format("{:.1f} % apart", 100 * s.spread) : "not comparable");
  }
  return out;
}

// The replay's own lines: how long the recorded GPU would have taken, and what its figures are.
nlohmann::json print_simulation(Session& session, bool json) {
  const search::ReplayMeasurer* rm = session.simulation();
  if (!rm) return nullptr;
  const double sim = rm->simulated_seconds().value_or(0);
  const search::ReplayFigures& f = rm->figures();
  if (!json) {
    fmt::print("On the recorded GPU ({}) this run would have taken about {}{}.\n", rm->device().name,
               human_seconds(sim),
               rm->clock_estimated() ? " (estimated from the timing method: the recording holds no measurement "
                                       "times; settles counted at their cap)"
                                     : " (the recorded compile and measure seconds; settles counted at their cap)");
    fmt::print("Re-timed figures: {} replayed as recorded, {} from exploration timings{}.\n", f.recorded.size(),
               f.explored.size(),
               f.bounded.empty() ? ""
                                 : fmt::format(" ({} of them faster than the recording's measured roofline, "
                                               "shown at it)", f.bounded.size()));
  }
  return {{"simulated_seconds", sim}, {"estimated", rm->clock_estimated()},
          {"figures", {{"recorded", f.recorded.size()}, {"explored", f.explored.size()}, {"bounded", f.bounded.size()}}}};
}

// What the run is about to do, before the progress display.
void print_header(const search::ResolvedJob& resolved, Session& session) {
  const search::Shard& sh = resolved.shard;
  fmt::print("gemmtune tune: {} ({} of {} problems{}) on {}{}{}\n", resolved.job.name, resolved.mine.size(),
             resolved.problems.size(), sh.count > 1 ? fmt::format(", shard {}/{} from {}", sh.index, sh.count, sh.source) : "",
             session.measurer(0).describe(),
             session.measurers() > 1 ? fmt::format(" and {} more GPUs", session.measurers() - 1) : "", session.label());
  fmt::print("  {}; store {}{}\n", describe(resolved.options), session.db().string(),
             session.temporary_db() ? " (temporary: replay results are not kept; --db FILE keeps them)" : "");
  std::fflush(stdout);  // before the progress display on stderr, where both go to one place
}

// --record: what this run measured, as a replay recording. False (and nothing written) when
// every result was reused from the store: a recording of nothing could not be replayed.
bool write_recording(Session& session, const std::string& tune_id, const std::string& file, bool json) {
  search::Recording out = search::recording_from_store(session.store(), tune_id, session.spaces(),
                                                       session.pool() ? session.pool()->threads() : 0);
  if (const search::Recording* src = session.recording()) {  // a replay's: the roofs it was given
    out.roofs() = src->roofs();
    out.compile_threads = src->compile_threads;
  }
  if (out.spaces().empty()) {
    fmt::print(stderr, "gemmtune: --record: this run measured nothing (every result was reused from the store); "
                       "{} not written (--no-reuse measures again)\n", file);
    return false;
  }
  out.save(file);
  if (!json) fmt::print("recorded {} spaces to {}\n", out.spaces().size(), file);
  return true;
}

int run_tune(Globals& g, const TuneArgs& a) {
  // 1. Resolve: everything the user gave is checked before any GPU work.
  search::JobRequest req = request_of(a);
  std::string replay = a.replay;
  std::string why_none;
  if (a.default_job && replay.empty() && device_count(&why_none) == 0) {
    // The README's main command on a machine without a GPU: the same job, replayed.
    replay = (config_dir() / "default_job.replay.json").string();
    fmt::print(stderr, "gemmtune: {}\ngemmtune: running the default job as a REPLAY of measurements recorded "
                       "on a GPU ({})\n", why_none, replay);
  }
  // Every file the run reads and writes, checked against each other before any work: a
  // --record naming the store (or its -wal file, or a link to it) would replace it.
  std::vector<FileRole> files;
  if (!a.config.empty()) files.push_back({FileUse::read, "--config", a.config});
  if (!replay.empty()) files.push_back({FileUse::read, a.replay.empty() ? "--default-job" : "--replay", replay});
  if (replay.empty() || g.db_named()) files.push_back({FileUse::store, g.db_flag(), g.db_path()});
  if (!a.record.empty()) files.push_back({FileUse::write, "--record", a.record});
  check_file_roles(files);
  std::optional<search::Recording> rec;
  if (!replay.empty()) rec = load_recording(g, replay);
  const search::ResolvedJob resolved = search::resolve_job(req, catalog_of(g, rec ? &*rec : nullptr, replay));
  const search::TuneOptions& o = resolved.options;
  if (o.dist == Distribution::zeros)
    fmt::print(stderr, "warning: zero inputs run faster than real data and hide unwritten outputs\n");

  // 2. Run: the store, the measurers (exit 3 without a GPU), then the job's problems.
  Session session(g, session_options(g, resolved, replay, !a.no_isolation, a.hang_floor));
  const std::string label = session.label();
  if (!g.json) print_header(resolved, session);
  std::signal(SIGINT, on_sigint);
  auto t0 = std::chrono::steady_clock::now();
  std::mutex print_mu;
  search::RunContext ctx{session.plugins(), &session.store(), session.pool(), nullptr, nullptr};
  std::vector<std::vector<std::unique_ptr<Progress>>> bars(session.measurers());
  const bool bars_on = !g.quiet && !g.json && session.measurers() == 1;
  ctx.on_tuner = [&](search::Tuner& t, size_t gpu) {
    if (bars_on)
      t.on_progress = [&bars, &label, gpu](const search::TuneEvent& e) {
        auto& b = bars[gpu];
        std::string what = e.family + " " + e.problem->key();
        if (b.empty() || b.back()->what() != what) {
          if (!b.empty()) b.back()->finish();
          b.push_back(std::make_unique<Progress>(what, e.total, true));
        }
        b.back()->update(e.done, fmt::format("best {} us {}{}", fmt_us(e.best_us), e.best_name,
                                             label.empty() ? "" : " [replay; exploration timings]"));
      };
    t.on_note = [&print_mu](const std::string& s) {
      std::lock_guard lock(print_mu);
      fmt::print(stderr, "note: {}\n", s);
    };
  };
  ctx.on_problem = [&](const search::ProblemOutcome& po, size_t gpu) {
    if (!bars[gpu].empty()) bars[gpu].back()->finish();
    bars[gpu].clear();
    std::lock_guard lock(print_mu);
    if (!g.json) {
      print_problem(po, session.measurers() > 1 ? fmt::format(" [GPU {}]", session.measurer(gpu).device().index) : "",
                    label);
      std::fflush(stdout);
    }
  };
  search::RunResult res = search::run_job(resolved, run_gpus(session, o.dist, o.input_seed), ctx);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 3. Print.
  const bool record_failed = !a.record.empty() && !write_recording(session, o.tune_id, a.record, g.json);
  nlohmann::json problems = nlohmann::json::array();
  for (size_t i = 0; i < res.outcomes.size(); ++i)
    if (res.outcomes[i]) {
      problems.push_back(problem_json(*res.outcomes[i], session.replay()));
      const int gpu = session.measurer(size_t(res.gpu_of[i])).device().index;  // the GPU that decided it
      problems.back()["gpu"] = session.replay() ? nlohmann::json() : nlohmann::json(gpu);
    }
  if (!g.json)
    fmt::print("\n{} of {} problem(s) in {}{}{}\n", problems.size(), resolved.mine.size(), human_seconds(total),
               g_stop ? " (interrupted: stopped after the measurement in flight)" : "", label);
  nlohmann::json consistency = print_consistency(res.consistency, session, g.json);
  nlohmann::json simulation = print_simulation(session, g.json);
  if (g.json)
    print_json({{"job", resolved.job.name}, {"device", session.measurer(0).device().name}, {"tune_id", o.tune_id},
                {"replay", session.replay()}, {"shard", fmt::format("{}/{}", resolved.shard.index, resolved.shard.count)},
                {"gpus", session.measurers()}, {"seconds", total}, {"problems", problems},
                {"consistency", consistency}, {"simulation", simulation}});
  return g_stop ? 130 : record_failed ? 1 : 0;
}

Registrar reg_tune(50, [](CLI::App& app, Globals& g) {
  const search::Budget d = search::default_tune_budget();
  return make_command<TuneArgs>(app, g, "tune",
      fmt::format("tunes one problem (--shape ...) or every problem of a job (--config, --default-job) over the "
          "given families (default: every family loaded); stores every measurement; prints each family's "
          "best and the problem's winner. The default budget: with no --budget, --time, --fraction or "
          "--patience and none in the job's [tune], each (problem, family) stops at {} (a few minutes per "
          "problem on an H200 with every family); naming any budget replaces that default whole. Needs a GPU "
          "unless --replay FILE (a simulation of a recorded run); --default-job without a GPU runs as a "
          "replay of the default job's H200 recording, and says so.",
          d.describe()),
      add_tune_options, run_tune);
});

}  // namespace

}  // namespace gt::cli
