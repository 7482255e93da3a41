// gemmtune tune: search the families' spaces for one problem or every problem of a job,
// store every measurement, print the winners.
#include "bench.hpp"
#include "cli.hpp"
#include "job.hpp"
#include "session.hpp"
#include "shard.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <random>

namespace gt::cli {

namespace {
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
  uint64_t budget = 0;
  double seconds = 0, fraction = 0;
  uint64_t patience = 0;
  uint64_t seed = 1;
  bool seed_given = false;
  std::string devices;
  int device = 0;
  std::string shard;
  double hang_floor = 10;
  double compile_timeout = 120;
  bool no_isolation = false, full = false, no_reuse = false;
  int finalists = -1, rounds = 8;
  double min_gain = -1;  // percent; < 0: the job's, else TuneOptions's
  double turn_warmup = Interleave{}.capped_warmup_s;
  std::string dist;
  double settle = kSettleCapS;
};
}  // namespace

static std::string fmt_us(double us) { return std::isfinite(us) ? fmt::format("{:.2f}", us) : "-"; }

static Command add_tune(CLI::App& app, Globals& g);
static Registrar reg_tune(50, add_tune);

static Command add_tune(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand(
      "tune",
      "tunes one problem (flags) or every problem of a job (--config) over the given families (default: all); "
      "stores every measurement; prints the winners. Needs a GPU unless --replay (--default-job without a GPU "
      "runs as a replay of recorded H200 measurements, and says so).");
  static TuneArgs a;
  add_problem_options(sub, a.pa);
  sub->add_option("--family", a.families, "families to tune (repeatable; default: the job's, else all)");
  sub->add_option("--config", a.config, "a TOML job file (see configs/)");
  sub->add_flag("--default-job", a.default_job,
                "run the job built into gemmtune (configs/default_job.toml); on a machine without a GPU, as a "
                "replay of the measurements recorded on an H200 (configs/default_job.replay.json)");
  sub->add_option("--strategy", a.strategy,
                  "search strategy: auto (default: exhaustive for a small space the budget covers, else bayes), exhaustive, random, "
                  "anneal, genetic, bayes");
  sub->add_option("--budget", a.budget, "at most this many evaluations per (problem, family); replaces the job's, its [tune.budget.FAMILY] too");
  sub->add_option("--time", a.seconds, "at most this many seconds per (problem, family); replaces the job's, its [tune.budget.FAMILY] too");
  sub->add_option("--fraction", a.fraction, "at most this fraction (0..1] of the valid space per (problem, family); replaces the job's, its [tune.budget.FAMILY] too");
  sub->add_option("--patience", a.patience, "stop a family after this many evaluations without improvement; replaces the job's, its [tune.budget.FAMILY] too");
  sub->add_option("--seed", a.seed, "strategy seed (default 1): the same seed proposes the same configs")
      ->each([](const std::string&) { a.seed_given = true; });
  sub->add_option("--device", a.device, "GPU index")->default_val(0);
  sub->add_option("--devices", a.devices,
                  "tune on several GPUs: all, or 0,1,... (one worker per GPU, problems shared out as GPUs free up; "
                  "finalists re-timed on the first GPU named)");
  sub->add_option("--shard", a.shard,
                  "I/N: tune only the problems whose index in the job is I modulo N (else from SLURM_ARRAY_TASK_ID, "
                  "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID); combine the shards' stores with `gemmtune merge`");
  sub->add_option("--hang-floor", a.hang_floor,
                  "seconds a silent worker is given before a candidate counts as hung (also 50x its slowest call)")
      ->default_val(10);
  sub->add_option("--compile-timeout", a.compile_timeout,
                  "seconds a candidate's NVRTC compile may take before it counts as a timeout")
      ->default_val(120)
      ->check(CLI::PositiveNumber);
  sub->add_flag("--no-isolation", a.no_isolation,
                "measure in this process rather than a worker process (a faulting kernel then ends the tune)");
  sub->add_flag("--full", a.full, "full timing for every candidate (default: quick exploration, full finalists)");
  sub->add_flag("--no-reuse", a.no_reuse, "measure everything again even if the store holds valid results");
  sub->add_option("--finalists", a.finalists, "configs per family re-timed interleaved at the end (default 4)");
  add_interleave_options(sub, a.rounds, a.turn_warmup, Interleave{}.rounds);
  add_min_gain_option(sub, a.min_gain, "; and another family to replace cuBLASLt's winner");
  sub->add_option("--dist", a.dist, "input distribution: normal (default), uniform, zeros");
  sub->add_option("--settle", a.settle, fmt::format("seconds at most to settle the clock per problem (at least {:g} s of it, "
                                                   "{:g} s at the power cap, or all when less)", kSettleMinS, kCappedSettleMinS))
      ->default_val(kSettleCapS);
  sub->add_option("--replay", a.replay,
                  "recorded measurements (gemmtune-replay JSON) stand in for the GPU: no GPU needed");
  sub->add_option("--record", a.record,
                  "write what this run measured as a replay recording (JSON) to this file");
  return {sub, [&g] {
            using namespace search;
            // 1. Everything the user gave us is checked before any GPU work.
            Job job;
            if (!a.config.empty() && a.default_job) throw InputError("--config and --default-job: give one of them");
            if (!a.config.empty()) {
              job = load_job(a.config);
              if (a.pa.given()) throw InputError("--config and --shape: the job file names the problems; give one of them");
            } else if (a.default_job) {
              if (a.pa.given()) throw InputError("--default-job and --shape: the default job names the problems; give one of them");
              job = parse_job(default_job_text(), "<default job>");
            } else {
              job.name = "command line";
              job.source = "<command line>";
              job.problems.push_back({a.pa.resolve(), {}, {}});
            }
            TuneOptions o;
            const JobSettings& js = job.settings;
            o.strategy = !a.strategy.empty() ? a.strategy : js.strategy.value_or("auto");
            if (o.strategy != "auto") {
              auto names = strategy_names();
              if (std::find(names.begin(), names.end(), o.strategy) == names.end()) {
                std::string known;
                for (auto& n : names) known += ", " + n;
                throw InputError(fmt::format("{}: unknown strategy '{}' (known: auto{})",
                                             a.strategy.empty() ? job.at("strategy") : "--strategy", o.strategy, known));
              }
            }
            o.compile_timeout_s = a.compile_timeout;
            if (a.fraction != 0 && !(a.fraction > 0 && a.fraction <= 1)) throw InputError("--fraction: must be in (0, 1]");
            // The job's budget over `b`, then the command line's flags over that.
            auto budget_of = [](Budget b, const JobBudget& jb) {
              if (jb.evaluations) b.max_evaluations = *jb.evaluations;
              if (jb.seconds) b.max_seconds = *jb.seconds;
              if (jb.fraction) b.max_fraction = *jb.fraction;
              if (jb.patience) b.patience = *jb.patience;
              if (a.budget) b.max_evaluations = a.budget;
              if (a.seconds > 0) b.max_seconds = a.seconds;
              if (a.fraction != 0) b.max_fraction = a.fraction;
              if (a.patience) b.patience = a.patience;
              return b;
            };
            o.budget = budget_of(Budget{}, js);
            for (auto& [family, jb] : js.family_budgets) o.family_budgets[family] = budget_of(o.budget, jb);
            o.seed = a.seed_given ? a.seed : js.seed.value_or(1);
            o.quick_explore = a.full ? false : js.quick.value_or(true);
            o.finalists = a.finalists >= 0 ? a.finalists : js.finalists.value_or(4);
            o.retime.rounds = std::max(1, a.rounds);
            if (a.min_gain >= 0) o.min_gain = a.min_gain / 100;
            else if (js.min_gain) o.min_gain = *js.min_gain / 100;
            o.retime.capped_warmup_s = a.turn_warmup;
            o.dist = parse_distribution((!a.dist.empty() ? a.dist : js.dist.value_or("normal")).c_str());
            o.reuse = !a.no_reuse;
            o.settle_s = a.settle;
            o.stop = &g_stop;
            std::random_device rd;
            o.input_seed = (uint64_t(rd()) << 32) | rd();
            o.tune_id = new_uuid().substr(0, 12);
            if (o.dist == Distribution::zeros)
              fmt::print(stderr, "warning: zero inputs run faster than real data and hide unwritten outputs\n");
            Shard shard = resolve_shard(a.shard, environment());
            std::vector<size_t> mine = shard_indices(job.problems.size(), shard);
            SessionOptions so;
            so.replay = a.replay;
            so.isolate = !a.no_isolation;
            so.hang_floor_s = a.hang_floor;
            so.devices = !a.devices.empty() ? std::vector<int>{} : std::vector<int>{a.device};
            if (!a.devices.empty() && a.devices != "all") so.devices = parse_devices(a.devices, g.cache_path());
            so.devices_flag = !a.devices.empty();
            // The README's main command on a machine without a GPU: the same job, replayed.
            std::string why_none;
            if (a.default_job && so.replay.empty() && device_count(&why_none) == 0) {
              std::filesystem::path rp = config_dir() / "default_job.replay.json";
              fmt::print(stderr, "gemmtune: {}\ngemmtune: running the default job as a REPLAY of measurements recorded "
                                 "on a GPU ({})\n", why_none, rp.string());
              so.replay = rp.string();
            }
            // Families: command line, else the problem set's, else the job's, else every one.
            std::optional<Recording> rec_for_names;
            if (!so.replay.empty()) rec_for_names = Recording::load(so.replay);
            const std::vector<std::string> all = known_families(g, rec_for_names ? &*rec_for_names : nullptr);
            auto families_for = [&](const JobProblem& jp) {
              return !a.families.empty() ? a.families : !jp.families.empty() ? jp.families : !js.families.empty() ? js.families : all;
            };
            for (auto& jp : job.problems)
              for (auto& f : families_for(jp))
                require_known_family(f, all, a.families.empty() ? job.at("families:" + f) : "--family", so.replay);
            // A family's own budget may name a family this run does not tune (a replay records
            // only some; --family picks some): it must exist, not be tuned.
            for (auto& [f, jb] : js.family_budgets) {
              bool known = std::find(all.begin(), all.end(), f) != all.end();
              if (!known && rec_for_names) {
                try {
                  known = g.plugins().find(f) != nullptr;
                } catch (const std::exception&) {
                }
              }
              if (!known) require_known_family(f, all, fmt::format("{}: [tune.budget.{}]", job.at("budget:" + f), f), so.replay);
            }
            // Fixed config lists are checked against the families' spaces now (with sm_90's
            // limits when there is no GPU yet); "@pick" (a library's own choice) is resolved later.
            if (!rec_for_names)
              for (auto& jp : job.problems)
                for (auto& [fam, texts] : jp.configs) {
                  const Family& f = g.plugins().get(fam);
                  if (f.is_library()) continue;
                  Space s = f.space(jp.problem, arch_limits("sm_90"));
                  for (auto& t : texts) {
                    std::string err;
                    if (t != "@pick" && !s.parse(t, &err))
                      throw InputError(fmt::format("{}: configs.{} for {}: {}", job.at(fam + ":" + t), fam, jp.problem.key(), err));
                  }
                }
            // "all" counts the GPUs; a replay has none to count (its recording is the one measurer).
            if (!a.devices.empty() && a.devices == "all" && so.replay.empty()) so.devices = parse_devices("all", g.cache_path());

            // 2. The store, the measurers (exit 3 without a GPU), then the search.
            Session session(g, so);
            const DeviceInfo& dev = session.measurer(0).device();
            std::string label = session.label();
            if (!g.json) {
              fmt::print("gemmtune tune: {} ({} of {} problems{}) on {}{}{}\n", job.name, mine.size(), job.problems.size(),
                         shard.count > 1 ? fmt::format(", shard {}/{} from {}", shard.index, shard.count, shard.source) : "",
                         session.measurer(0).describe(),
                         session.measurers() > 1 ? fmt::format(" and {} more GPUs", session.measurers() - 1) : "", label);
              fmt::print("  {}; store {}{}\n", describe(o), session.db().string(),
                         session.temporary_db() ? " (temporary: replay results are not kept)" : "");
            }
            std::signal(SIGINT, on_sigint);
            auto t0 = std::chrono::steady_clock::now();
            std::vector<std::optional<ProblemOutcome>> outcomes(job.problems.size());
            std::mutex print_mu;
            const bool bars_on = !g.quiet && !g.json && session.measurers() == 1;
            auto report = [&](const ProblemOutcome& po, const std::string& gpu) {
              std::lock_guard lock(print_mu);
              if (g.json) return;
              fmt::print("\n{}{}{}\n", po.problem.key(), gpu, label);
              fmt::print("  {:<14} {:>10} {:>9} {:>13} {:>7}  {:<11} {}\n", "family", "time us", "TFLOP/s", "evaluated",
                         "failed", "strategy", "best config");
              for (size_t i = 0; i < po.families.size(); ++i) {
                const auto& f = po.families[i];
                if (!f.skipped.empty()) {
                  fmt::print("  {:<14} skipped: {}\n", f.family, f.skipped);
                  continue;
                }
                uint64_t failed = 0;
                for (auto& [st, n] : f.by_status)
                  if (st != Status::ok) failed += n;
                fmt::print("  {:<14} {:>10} {:>9} {:>13} {:>7}  {:<11} {}{}{}\n", f.family, fmt_us(f.best_m.time_us()),
                           f.best ? fmt::format("{:.1f}", f.best_m.tflops(po.problem.flops())) : "-",
                           fmt::format("{}{}", f.evaluated, f.reused ? fmt::format(" ({} stored)", f.reused) : ""), failed,
                           f.strategy, f.best ? f.best_name : "(none passed)", int(i) == po.winner ? "  <- winner" : "",
                           f.tie ? " (tie)" : "");
                if (!f.best_description.empty()) fmt::print("  {:<14} {}\n", "", f.best_description);
                if (!f.note.empty()) fmt::print("  {:<14} note: {}\n", "", f.note);
                std::string fails;
                for (auto& [st, n] : f.by_status)
                  if (st != Status::ok) fails += fmt::format("{}{} {}", fails.empty() ? "" : ", ", n, to_string(st));
                fmt::print("  {:<14} stopped: {}; compile {}, measure {}{}{}{}\n", "", f.stop_reason,
                           f.compile_s > 0 ? human_seconds(f.compile_s) : "-", f.measure_s > 0 ? human_seconds(f.measure_s) : "-",
                           f.stale ? fmt::format(", {} stale rows re-measured", f.stale) : "",
                           f.stale_builds ? fmt::format(", {} configs rebuilt differently since stored, re-measured",
                                                        f.stale_builds)
                                          : "",
                           fails.empty() ? "" : "; failures: " + fails);
              }
              if (!po.note.empty()) fmt::print("  note: {}\n", po.note);
            };
            ReferenceGpu reference;
            reference.measurer = &session.measurer(0);
            std::atomic<size_t> next{0};
            auto work = [&](size_t gpu) {
              Tuner tuner(session.plugins(), session.measurer(gpu), &session.store(), session.pool(), session.spaces(),
                          session.provenance(o.dist, o.input_seed, gpu), o);
              if (session.measurers() > 1) tuner.set_reference(&reference);
              std::vector<std::unique_ptr<Progress>> bars;
              if (bars_on)
                tuner.on_progress = [&](const TuneEvent& e) {
                  std::string what = e.family + " " + e.problem->key();
                  if (bars.empty() || bars.back()->what() != what) {
                    if (!bars.empty()) bars.back()->finish();
                    bars.push_back(std::make_unique<Progress>(what, e.total, true));
                  }
                  bars.back()->update(e.done, fmt::format("best {} us {}{}", fmt_us(e.best_us), e.best_name,
                                                          label.empty() ? "" : " [replay]"));
                };
              tuner.on_note = [&](const std::string& s) {
                std::lock_guard lock(print_mu);
                fmt::print(stderr, "note: {}\n", s);
              };
              for (size_t j; (j = next++) < mine.size() && !g_stop;) {
                const JobProblem& jp = job.problems[mine[j]];
                std::map<std::string, std::vector<Config>> fixed;
                for (auto& [fam, texts] : jp.configs) {
                  Space s = session.spaces()(fam, jp.problem);
                  for (auto& t : texts) {
                    std::string err;
                    if (t == "@pick") {
                      const Family* f = session.plugins() ? session.plugins()->find(fam) : nullptr;
                      auto picks = f ? f->suggest(jp.problem, session.measurer(gpu).device().limits, 1, s.dims())
                                     : std::vector<Config>{};
                      if (!picks.empty()) fixed[fam].push_back(picks[0]);
                    } else if (auto c = s.parse(t, &err)) {
                      fixed[fam].push_back(*c);
                    } else {
                      throw InputError(fmt::format("{}: configs.{} for {}: {}", job.source, fam, jp.problem.key(), err));
                    }
                  }
                }
                ProblemOutcome po = tuner.tune(jp.problem, families_for(jp), fixed);
                if (!bars.empty()) bars.back()->finish();
                bars.clear();
                report(po, session.measurers() > 1 ? fmt::format(" [GPU {}]", session.measurer(gpu).device().index) : "");
                outcomes[mine[j]] = std::move(po);
              }
            };
            if (session.measurers() == 1) {
              work(0);
            } else {
              std::vector<std::thread> threads;
              for (size_t i = 0; i < session.measurers(); ++i) threads.emplace_back(work, i);
              for (auto& t : threads) t.join();
            }
            double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (!a.record.empty()) {
              Recording out = recording_from_store(session.store(), o.tune_id, session.spaces());
              out.save(a.record);
              if (!g.json) fmt::print("recorded {} spaces to {}\n", out.spaces().size(), a.record);
            }
            size_t done = 0;
            for (auto& po : outcomes) done += po.has_value();
            if (g.json) {
              nlohmann::json j = nlohmann::json::array();
              for (auto& opt : outcomes) {
                if (!opt) continue;
                const ProblemOutcome& po = *opt;
                nlohmann::json fams = nlohmann::json::array();
                for (auto& f : po.families) {
                  nlohmann::json fj = {{"family", f.family}, {"skipped", f.skipped}, {"strategy", f.strategy},
                                       {"evaluated", f.evaluated}, {"reused", f.reused}, {"stale", f.stale},
                                       {"stale_builds", f.stale_builds},
                                       {"valid_space", f.valid_space}, {"stop_reason", f.stop_reason},
                                       {"seconds", f.seconds}, {"compile_s", f.compile_s}, {"measure_s", f.measure_s}};
                  nlohmann::json st = nlohmann::json::object();
                  for (auto& [s, n] : f.by_status) st[to_string(s)] = n;
                  fj["by_status"] = st;
                  if (f.best) {
                    fj["best"] = f.best_name;
                    fj["best_measurement"] = f.best_m;
                    fj["tflops"] = f.best_m.tflops(po.problem.flops());
                    fj["tie"] = f.tie;
                    fj["note"] = f.note;
                  }
                  fams.push_back(fj);
                }
                j.push_back({{"problem", po.problem}, {"key", po.problem.key()}, {"families", fams},
                             {"winner", po.winner >= 0 ? po.families[size_t(po.winner)].family : ""},
                             {"replay", session.replay()}, {"seconds", po.seconds}});
              }
              print_json({{"job", job.name}, {"device", dev.name}, {"tune_id", o.tune_id}, {"replay", session.replay()},
                          {"shard", fmt::format("{}/{}", shard.index, shard.count)}, {"gpus", session.measurers()},
                          {"seconds", total}, {"problems", j}});
            } else {
              fmt::print("\n{} of {} problem(s) in {}{}{}\n", done, mine.size(), human_seconds(total),
                         g_stop ? " (interrupted: stopped after the measurement in flight)" : "", label);
            }
            return g_stop ? 130 : 0;
          }};
}

}  // namespace gt::cli
