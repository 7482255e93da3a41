// gemmtune tune: search the families' spaces for one problem or every problem of a job,
// store every measurement, print the winners.
#include "cli.hpp"
#include "job.hpp"
#include "measure_service.hpp"
#include "replay_measurer.hpp"
#include "store.hpp"
#include "tuner.hpp"
#include "worker_client.hpp"

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
  int device = 0;
  bool no_isolation = false, full = false, no_reuse = false;
  int finalists = -1, rounds = 8;
  std::string dist;
  double settle = 1.0;
};
}  // namespace

static std::string fmt_us(double us) { return std::isfinite(us) ? fmt::format("{:.2f}", us) : "-"; }

static Command add_tune(CLI::App& app, Globals& g);
static Registrar reg_tune(50, add_tune);

static Command add_tune(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand(
      "tune",
      "tunes one problem (flags) or every problem of a job (--config) over the given families (default: all); "
      "stores every measurement; prints the winners. Needs a GPU unless --replay.");
  static TuneArgs a;
  add_problem_options(sub, a.pa);
  sub->add_option("--family", a.families, "families to tune (repeatable; default: the job's, else all)");
  sub->add_option("--config", a.config, "a TOML job file (see configs/)");
  sub->add_flag("--default-job", a.default_job, "run the job built into gemmtune (configs/default_job.toml)");
  sub->add_option("--strategy", a.strategy,
                  "search strategy: auto (default: exhaustive for small spaces, else bayes), exhaustive, random, "
                  "anneal, genetic, bayes");
  sub->add_option("--budget", a.budget, "at most this many evaluations per (problem, family)");
  sub->add_option("--time", a.seconds, "at most this many seconds per (problem, family)");
  sub->add_option("--fraction", a.fraction, "at most this fraction (0..1] of the valid space per (problem, family)");
  sub->add_option("--patience", a.patience, "stop a family after this many evaluations without improvement");
  sub->add_option("--seed", a.seed, "strategy seed (default 1): the same seed proposes the same configs")
      ->each([](const std::string&) { a.seed_given = true; });
  sub->add_option("--device", a.device, "GPU index")->default_val(0);
  sub->add_flag("--no-isolation", a.no_isolation,
                "measure in this process rather than a worker process (a faulting kernel then ends the tune)");
  sub->add_flag("--full", a.full, "full timing for every candidate (default: quick exploration, full finalists)");
  sub->add_flag("--no-reuse", a.no_reuse, "measure everything again even if the store holds valid results");
  sub->add_option("--finalists", a.finalists, "configs per family re-timed interleaved at the end (default 4)");
  sub->add_option("--rounds", a.rounds, "rounds of interleaved re-timing")->default_val(8);
  sub->add_option("--dist", a.dist, "input distribution: normal (default), uniform, zeros");
  sub->add_option("--settle", a.settle, "seconds at most to settle the clock per problem")->default_val(1.0);
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
              job = parse_job(default_job_text(), "<default job>");
            } else {
              job.name = "command line";
              job.source = "<command line>";
              job.problems.push_back({a.pa.resolve(), {}});
            }
            TuneOptions o;
            const JobSettings& js = job.settings;
            o.strategy = !a.strategy.empty() ? a.strategy : js.strategy.value_or("auto");
            if (o.strategy != "auto") {
              auto names = strategy_names();
              if (std::find(names.begin(), names.end(), o.strategy) == names.end()) {
                std::string known;
                for (auto& n : names) known += ", " + n;
                throw InputError(fmt::format("--strategy: unknown strategy '{}' (known: auto{})", o.strategy, known));
              }
            }
            if (a.budget) o.budget.max_evaluations = a.budget;
            else if (js.evaluations) o.budget.max_evaluations = *js.evaluations;
            if (a.seconds > 0) o.budget.max_seconds = a.seconds;
            else if (js.seconds) o.budget.max_seconds = *js.seconds;
            if (a.fraction != 0) {
              if (!(a.fraction > 0 && a.fraction <= 1)) throw InputError("--fraction: must be in (0, 1]");
              o.budget.max_fraction = a.fraction;
            } else if (js.fraction) {
              o.budget.max_fraction = *js.fraction;
            }
            if (a.patience) o.budget.patience = a.patience;
            else if (js.patience) o.budget.patience = *js.patience;
            o.seed = a.seed_given ? a.seed : js.seed.value_or(1);
            o.quick_explore = a.full ? false : js.quick.value_or(true);
            o.finalists = a.finalists >= 0 ? a.finalists : js.finalists.value_or(4);
            o.retime_rounds = std::max(1, a.rounds);
            o.dist = parse_distribution((!a.dist.empty() ? a.dist : js.dist.value_or("normal")).c_str());
            o.reuse = !a.no_reuse;
            o.settle_s = a.settle;
            o.stop = &g_stop;
            std::random_device rd;
            o.input_seed = (uint64_t(rd()) << 32) | rd();
            o.tune_id = new_uuid().substr(0, 12);
            if (o.dist == Distribution::zeros)
              fmt::print(stderr, "warning: zero inputs run faster than real data and hide unwritten outputs\n");

            // Families: command line, else the problem set's, else the job's, else every one.
            std::optional<Recording> rec;
            if (!a.replay.empty()) rec = Recording::load(a.replay);
            std::vector<std::string> all;
            if (rec) {
              for (auto& s : rec->spaces())
                if (std::find(all.begin(), all.end(), s.family()) == all.end()) all.push_back(s.family());
            } else {
              all = g.plugins().names();
            }
            auto families_for = [&](const JobProblem& jp) {
              std::vector<std::string> f = !a.families.empty() ? a.families : !jp.families.empty() ? jp.families
                                                                           : !js.families.empty() ? js.families : all;
              return f;
            };
            for (auto& jp : job.problems)
              for (auto& f : families_for(jp))
                if (std::find(all.begin(), all.end(), f) == all.end()) {
                  std::string known;
                  for (auto& x : all) known += (known.empty() ? "" : ", ") + x;
                  throw InputError(fmt::format("{}: unknown family '{}' ({}: {})", a.families.empty() ? job.source : "--family", f,
                                               rec ? "recorded in " + a.replay : "loaded", known));
                }

            // 2. The store, then the measurer: a recording, or the GPU (exit 3 without one).
            std::filesystem::path db = g.db_path();
            bool temp_db = false;
            if (rec && g.db.empty() && !std::getenv("GEMMTUNE_DB")) {
              // A replay is not a measurement: keep it out of the user's store unless asked.
              db = std::filesystem::temp_directory_path() / fmt::format("gemmtune-replay-{}.db", o.tune_id);
              temp_db = true;
            }
            Store store = Store::open(db);
            std::unique_ptr<Measurer> measurer;
            if (rec) {
              measurer = std::make_unique<ReplayMeasurer>(*rec);
            } else {
              std::string why;
              if (device_count(&why) == 0) throw NoGpuError(why);
              if (a.no_isolation) {
                measurer = std::make_unique<MeasureService>(g.plugins(), g.cache(), a.device);
              } else {
                std::vector<std::string> argv = {(executable_dir() / "gemmtune").string(), "__worker", "--device",
                                                 std::to_string(a.device), "--cache-dir", g.cache_path().string()};
                for (auto& d : plugin_dirs(g.plugin_dirs)) {
                  argv.push_back("--plugin-dir");
                  argv.push_back(d.string());
                }
                measurer = std::make_unique<WorkerClient>(argv, g.plugins());
              }
            }
            const DeviceInfo& dev = measurer->device();
            CubinCache cache = g.cache();
            Compiler compiler(&cache);
            std::optional<CompilePool> pool;
            if (!rec) pool.emplace(compiler);

            SpaceSource spaces = [&](const std::string& family, const Problem& p) -> Space {
              if (rec) {
                const RecordedSpace* rs = rec->find(p.key(), family);
                if (!rs) throw RuntimeFailure(fmt::format("nothing recorded for {} on {}", family, p.key()));
                return rs->space();
              }
              return g.plugins().get(family).space(p, dev.limits);
            };
            ProvenanceSource prov = [&](const std::string& family, bool quick) -> Provenance {
              if (rec) return replay_provenance(*rec, family, to_string(o.dist), quick);
              return Provenance::collect(dev, g.plugins().get(family), to_string(o.dist), o.input_seed, quick);
            };
            Tuner tuner(rec ? nullptr : &g.plugins(), *measurer, &store, pool ? &*pool : nullptr, spaces, prov, o);
            Progress* current = nullptr;
            tuner.on_progress = [&](const TuneEvent& e) {
              if (current)
                current->update(e.done, fmt::format("best {} us {}", fmt_us(e.best_us), e.best_name));
            };
            tuner.on_note = [&](const std::string& s) { fmt::print(stderr, "note: {}\n", s); };

            std::string label = rec ? fmt::format(" [REPLAY of {} recorded on {}]", a.replay, dev.name) : "";
            if (!g.json) {
              fmt::print("gemmtune tune: {} ({} problems) on {}{}\n", job.name, job.problems.size(), measurer->describe(), label);
              fmt::print("  {}; store {}{}\n", describe(o), db.string(), temp_db ? " (temporary: replay results are not kept)" : "");
            }
            std::signal(SIGINT, on_sigint);
            auto t0 = std::chrono::steady_clock::now();
            std::vector<ProblemOutcome> outcomes;
            for (auto& jp : job.problems) {
              if (g_stop) break;
              auto fams = families_for(jp);
              std::vector<std::string> tuned;
              for (auto& f : fams) {
                // Each family gets its own progress line.
                tuned.push_back(f);
              }
              ProblemOutcome po;
              po.problem = jp.problem;
              std::vector<std::unique_ptr<Progress>> bars;
              tuner.on_progress = [&](const TuneEvent& e) {
                if (bars.empty() || bars.back()->what() != e.family + " " + e.problem->key()) {
                  if (!bars.empty()) bars.back()->finish();
                  bars.push_back(std::make_unique<Progress>(e.family + " " + e.problem->key(), e.total, !g.quiet && !g.json));
                }
                bars.back()->update(e.done, fmt::format("best {} us{}", fmt_us(e.best_us), label.empty() ? "" : " [replay]"));
              };
              po = tuner.tune(jp.problem, tuned);
              if (!bars.empty()) bars.back()->finish();
              outcomes.push_back(po);
              if (!g.json) {
                fmt::print("\n{}{}\n", jp.problem.key(), label);
                fmt::print("  {:<14} {:>10} {:>9} {:>11} {:>9}  {:<11} {}\n", "family", "time us", "TFLOP/s", "evaluated", "failed",
                           "strategy", "best config");
                for (size_t i = 0; i < po.families.size(); ++i) {
                  const auto& f = po.families[i];
                  if (!f.skipped.empty()) {
                    fmt::print("  {:<14} skipped: {}\n", f.family, f.skipped);
                    continue;
                  }
                  uint64_t failed = 0;
                  for (auto& [st, n] : f.by_status)
                    if (st != Status::ok) failed += n;
                  fmt::print("  {:<14} {:>10} {:>9} {:>11} {:>9}  {:<11} {}{}{}\n", f.family, fmt_us(f.best_m.time.median),
                             f.best ? fmt::format("{:.1f}", f.best_m.tflops(jp.problem.flops())) : "-",
                             fmt::format("{}{}", f.evaluated, f.reused ? fmt::format(" ({} stored)", f.reused) : ""), failed,
                             f.strategy, f.best ? f.best_name : "(none passed)", int(i) == po.winner ? "  <- winner" : "",
                             f.tie ? " (tie)" : "");
                  if (!f.best_description.empty()) fmt::print("  {:<14} {}\n", "", f.best_description);
                  fmt::print("  {:<14} stopped: {}; {} compiling, {} measuring{}\n", "", f.stop_reason,
                             human_seconds(f.compile_s), human_seconds(f.measure_s),
                             f.stale ? fmt::format(", {} stale rows re-measured", f.stale) : "");
                }
                if (!po.note.empty()) fmt::print("  note: {}\n", po.note);
              }
            }
            double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (!a.record.empty()) {
              Recording out = recording_from_store(store, o.tune_id, spaces);
              out.save(a.record);
              if (!g.json) fmt::print("recorded {} spaces to {}\n", out.spaces().size(), a.record);
            }
            if (g.json) {
              nlohmann::json j = nlohmann::json::array();
              for (auto& po : outcomes) {
                nlohmann::json fams = nlohmann::json::array();
                for (auto& f : po.families) {
                  nlohmann::json fj = {{"family", f.family}, {"skipped", f.skipped}, {"strategy", f.strategy},
                                       {"evaluated", f.evaluated}, {"reused", f.reused}, {"stale", f.stale},
                                       {"valid_space", f.valid_space}, {"stop_reason", f.stop_reason},
                                       {"seconds", f.seconds}};
                  if (f.best) {
                    fj["best"] = f.best_name;
                    fj["best_measurement"] = f.best_m;
                    fj["tflops"] = f.best_m.tflops(po.problem.flops());
                  }
                  fams.push_back(fj);
                }
                j.push_back({{"problem", po.problem}, {"key", po.problem.key()}, {"families", fams},
                             {"winner", po.winner >= 0 ? po.families[size_t(po.winner)].family : ""},
                             {"replay", bool(rec)}, {"seconds", po.seconds}});
              }
              print_json({{"job", job.name}, {"device", dev.name}, {"tune_id", o.tune_id}, {"replay", bool(rec)},
                          {"seconds", total}, {"problems", j}});
            } else {
              fmt::print("\n{} problem(s) in {}{}{}\n", outcomes.size(), human_seconds(total),
                         g_stop ? " (interrupted: stopped after the measurement in flight)" : "", label);
            }
            if (temp_db) {
              std::error_code ec;
              for (auto ext : {"", "-wal", "-shm"}) std::filesystem::remove(db.string() + ext, ec);
            }
            return g_stop ? 130 : 0;
          }};
}

}  // namespace gt::cli
