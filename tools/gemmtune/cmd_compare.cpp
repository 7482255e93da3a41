// gemmtune compare: in one run, the best config of each hand-written family beside
// cuBLASLt's heuristic pick (rank 0) and the best cuBLASLt algorithm found: same buffers,
// same timing (verified, then re-timed interleaved), with % of the measured roofline at the
// problem (the dtype's compute roof, or the streaming-read roof times the problem's
// intensity where that is lower; JSON: pct_roof = 100 x FLOP/s / roofline_value).
#include "bench.hpp"
#include "cli.hpp"
#include "job.hpp"
#include "roofs.hpp"
#include "session.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace gt::cli {

static Command add_compare(CLI::App& app, Globals& g);
static Registrar reg_compare(60, add_compare);

namespace {
struct Entry {
  std::string label;  // family, or "cublaslt (pick)" / "cublaslt (best)"
  std::string family;
  Config config;
  std::string name, description, note;
  Measurement m;
  int64_t row = 0;
  int same_as = -1;  // an earlier entry with the same family and config: measured once, shown twice
};
}  // namespace

static Command add_compare(CLI::App& app, Globals& g) {
  auto* sub = app.add_subcommand(
      "compare", "each hand-written family's best beside cuBLASLt's pick (heuristic rank 0) and the best cuBLASLt "
                 "algorithm found, measured in one run on the same buffers (needs a GPU unless --replay)");
  static ProblemArgs pa;
  static std::string config, replay;
  static std::vector<std::string> families;
  static uint64_t budget = 60;
  static bool no_tune = false;
  static int device = 0, rounds = 10;
  static double turn_warmup = Interleave{}.capped_warmup_s;
  static double min_gain = -1;
  add_problem_options(sub, pa);
  sub->add_option("--config", config, "a TOML job: compare every problem of it");
  sub->add_option("--family", families,
                  "hand-written families to include (default: the job's for each problem, else every source family "
                  "but naive); cuBLASLt's pick (not in a replay) and its best found are shown beside them");
  sub->add_option("--budget", budget, "evaluations per family when a family has no stored winner yet")->default_val(60);
  sub->add_flag("--no-tune", no_tune, "do not tune families without a stored winner (they are left out)");
  sub->add_option("--device", device, "GPU index")->default_val(0);
  add_interleave_options(sub, rounds, turn_warmup, 10);
  add_min_gain_option(sub, min_gain, " when compare tunes a family that has no stored winner (no effect with --no-tune)");
  sub->add_option("--replay", replay, "a recording instead of the GPU");
  return {sub, [&g] {
            using namespace search;
            // Everything given is checked before any GPU work: the problems, the families (the
            // command line's, else each problem's in the job), a replay's coverage.
            std::optional<Recording> rec;
            if (!replay.empty()) rec = Recording::load(replay);
            const std::vector<std::string> known = known_families(g, rec ? &*rec : nullptr);
            for (auto& f : families) require_known_family(f, known, "--family", replay);
            auto is_library = [&](const std::string& f) {
              const Family* fam = rec ? nullptr : g.plugins().find(f);
              return fam ? fam->is_library() : f == "cublaslt";
            };
            // The hand-written families shown by default: every source family but naive.
            std::vector<std::string> every;
            for (auto& f : known)
              if (!is_library(f) && f != "naive") every.push_back(f);
            struct Work {
              Problem p;
              std::vector<std::string> hand;
            };
            std::vector<Work> work;
            auto hand_of = [&](const std::vector<std::string>& named) {
              std::vector<std::string> h;
              for (auto& f : named)
                if (!is_library(f)) h.push_back(f);
              return named.empty() ? every : h;
            };
            if (!config.empty()) {
              if (pa.given()) throw InputError("--config and --shape: give one of them");
              Job job = load_job(config);
              for (auto& jp : job.problems) {
                const auto& named = !families.empty()        ? families
                                    : !jp.families.empty()   ? jp.families
                                                             : job.settings.families;
                if (families.empty())
                  for (auto& f : named) require_known_family(f, known, job.at("families:" + f), replay);
                work.push_back({jp.problem, hand_of(named)});
              }
              if (min_gain < 0 && job.settings.min_gain) min_gain = *job.settings.min_gain;
            } else {
              work.push_back({pa.resolve(), hand_of(families)});
            }
            if (rec) {
              // A problem the recording lacks is skipped with a note, as tune skips it; none recorded
              // at all is bad input.
              std::vector<Work> recorded;
              std::string missing;
              for (auto& w : work) {
                bool has = false;
                for (auto& sp : rec->spaces()) has = has || sp.problem().key() == w.p.key();
                if (has)
                  recorded.push_back(w);
                else
                  missing += (missing.empty() ? "" : ", ") + w.p.key();
              }
              if (recorded.empty())
                throw InputError(fmt::format("--replay: {} has no measurements of {}", replay, missing));
              if (!missing.empty())
                fmt::print(stderr, "note: {} has no measurements of {}: left out\n", replay, missing);
              work = std::move(recorded);
            }
            for (auto& w : work)
              if (w.hand.empty())
                fmt::print(stderr, "note: {}: the families named for it are all libraries, so no hand-written family "
                                   "is shown\n",
                           w.p.key());
            SessionOptions so;
            so.devices = {device};
            so.replay = replay;
            Session session(g, so);
            Measurer& meas = session.measurer(0);
            const DeviceInfo& dev = meas.device();
            std::random_device rd;
            TuneOptions to;
            to.budget.max_evaluations = budget;
            if (min_gain >= 0) to.min_gain = min_gain / 100;
            to.input_seed = (uint64_t(rd()) << 32) | rd();
            to.tune_id = "compare-" + new_uuid().substr(0, 8);
            auto spaces = session.spaces();
            auto prov = session.provenance(to.dist, to.input_seed);
            std::map<std::string, RoofRow> roofs;
            for (auto& r : session.store().roofs(dev.name)) roofs[r.name] = r;
            nlohmann::json all = nlohmann::json::array();
            // Per problem: the fastest row against cuBLASLt's pick, for the summary line.
            struct Best {
              std::string key, label;
              double speed;
            };
            std::vector<Best> bests;
            for (const Work& w : work) {
              const Problem& p = w.p;
              ResultKey key = ResultKey::of(dev.name, p);
              std::vector<Entry> entries;
              auto add_winner = [&](const std::string& family, const std::string& label) {
                auto w = session.store().winner(key, family);
                if (!w && !no_tune) {
                  Tuner t(session.plugins(), meas, &session.store(), session.pool(), spaces, prov, to);
                  t.tune(p, {family});
                  w = session.store().winner(key, family);
                }
                if (!w) return;
                Space s = spaces(family, p);
                std::string err;
                auto c = s.parse(w->config_name, &err);
                if (!c) {
                  fmt::print(stderr, "note: the stored winner of {} ({}) is not in its space any more: {}\n", family,
                             w->config_name, err);
                  return;
                }
                entries.push_back({label, family, *c, s.name(*c), "", "", {}, 0});
              };
              for (auto& f : w.hand) add_winner(f, f);
              const Family* lt = session.plugins() ? session.plugins()->find("cublaslt") : nullptr;
              if (lt) {
                Space s = lt->space(p, dev.limits);
                auto picks = lt->suggest(p, dev.limits, 1, s.dims());
                if (!picks.empty()) entries.push_back({"cublaslt (pick)", "cublaslt", picks[0], s.name(picks[0]), "", "", {}, 0});
                add_winner("cublaslt", "cublaslt (best)");
              } else if (session.replay()) {
                add_winner("cublaslt", "cublaslt (best)");
              }
              if (entries.empty()) {
                fmt::print(stderr, "note: nothing to compare for {}\n", p.key());
                continue;
              }
              // Same buffers, same method: verify each, then time all of them interleaved.
              meas.set_problem(p, to.dist, to.input_seed);
              std::vector<Candidate> cands;
              std::vector<size_t> ok_idx;
              for (size_t i = 0; i < entries.size(); ++i) {
                auto& e = entries[i];
                for (size_t j = 0; j < i && e.same_as < 0; ++j)
                  if (entries[j].family == e.family && entries[j].name == e.name) e.same_as = int(j);
                if (e.same_as >= 0) continue;  // cuBLASLt's best is its pick: one kernel, timed once
                const Family* fam = session.plugins() ? session.plugins()->find(e.family) : nullptr;
                e.description = fam ? fam->describe(p, e.config) : "";
                e.m = meas.measure(Candidate{e.family, fam, e.config}, true);
                if (e.m.status == Status::ok) {
                  cands.push_back(Candidate{e.family, fam, e.config});
                  ok_idx.push_back(i);
                }
              }
              if (!cands.empty() && !session.replay()) {
                meas.settle(cands.front(), kSettleCapS);
                const Interleave how{rounds, Interleave{}.warmup_s, turn_warmup};
                Retimed rt = meas.retime(cands, how, 7);
                for (size_t j = 0; j < ok_idx.size(); ++j) {
                  auto& e = entries[ok_idx[j]];
                  e.m.time = rt.stats[j];
                  e.m.quick = false;
                  // The config's description stays first (the report reads cuBLASLt's pick and its
                  // algorithm from it), the note on how it was timed after it.
                  e.m.message = fmt::format("{}{}compare: timed interleaved with {} others {}", e.description,
                                            e.description.empty() ? "" : "; ", cands.size() - 1, describe(how, rt.capped));
                  StoredRow r;
                  r.tune_id = to.tune_id;
                  r.problem = p;
                  r.family = e.family;
                  r.config = e.config;
                  r.config_name = e.name;
                  r.config_hash = hex64(spaces(e.family, p).hash(e.config));
                  r.m = e.m;
                  r.prov = prov(e.family, false);
                  e.row = session.store().insert(r);
                }
              }
              for (auto& e : entries)
                if (e.same_as >= 0) {
                  auto& o = entries[size_t(e.same_as)];
                  e.description = o.description;
                  e.m = o.m;
                  e.row = o.row;
                }
              std::string roof_name = p.in == DType::f32 ? "fp32_fma" : fmt::format("tensor_{}", to_string(p.in));
              double roof = roofs.count(roof_name) ? roofs[roof_name].value : kNaN;
              double mem_roof = roofs.count("mem_read") ? roofs["mem_read"].value : kNaN;
              Roofline line = roofline_at(p, roof, mem_roof);
              double pick_us = kNaN;
              for (auto& e : entries)
                if (e.label == "cublaslt (pick)" && e.m.status == Status::ok) pick_us = e.m.time_us();
              nlohmann::json rows = nlohmann::json::array();
              if (!g.json) {
                fmt::print("\n{} on {}{}\n", p.key(), dev.name, session.label());
                if (line.bound != Roofline::Bound::unknown)
                  fmt::print("  roofline here: {:.1f} TFLOP/s, {}-bound ({} {:.1f} TFLOP/s; mem_read {:.2f} TB/s x "
                             "{:.1f} FLOP per byte of A, B and C)\n",
                             line.flops_per_s / 1e12, to_string(line.bound), roof_name, roof / 1e12, mem_roof / 1e12,
                             line.intensity);
                else if (std::isfinite(line.flops_per_s))
                  fmt::print("  roofline here: {} {:.1f} TFLOP/s alone (no mem_read roof: the bound is unknown)\n",
                             roof_name, roof / 1e12);
                fmt::print("  {:<16} {:>10} {:>9} {:>7} {:>8} {:>9}  {}\n", "family", "time us", "TFLOP/s", "% roof",
                           "x pick", "error", "config");
              }
              for (auto& e : entries) {
                bool ok = e.m.status == Status::ok;
                double tf = e.m.tflops(p.flops());
                double pct = ok ? 100.0 * p.flops() / (e.m.time_us() * 1e-6) / line.flops_per_s : kNaN;
                double speed = ok ? pick_us / e.m.time_us() : kNaN;
                rows.push_back({{"label", e.label}, {"family", e.family}, {"config", e.name}, {"description", e.description},
                                {"status", to_string(e.m.status)}, {"message", e.m.message}, {"time_us", e.m.time},
                                {"tflops", ok ? nlohmann::json(tf) : nlohmann::json()},
                                {"pct_roof", std::isfinite(pct) ? nlohmann::json(pct) : nlohmann::json()},
                                {"speedup_vs_pick", std::isfinite(speed) ? nlohmann::json(speed) : nlohmann::json()},
                                {"err_rel_fro", std::isfinite(e.m.err_rel_fro) ? nlohmann::json(e.m.err_rel_fro) : nlohmann::json()}});
                if (g.json) continue;
                if (!ok) {
                  fmt::print("  {:<16} {}: {}   {}\n", e.label, to_string(e.m.status), e.m.message.substr(0, 120), e.name);
                  continue;
                }
                fmt::print("  {:<16} {:>10.2f} {:>9.1f} {:>7} {:>8} {:>9}  {}\n", e.label, e.m.time_us(), tf,
                           std::isfinite(pct) ? fmt::format("{:.1f}", pct) : "-",
                           std::isfinite(speed) ? fmt::format("{:.3f}", speed) : "-",
                           std::isfinite(e.m.err_rel_fro) ? fmt::format("{:.1e}", e.m.err_rel_fro) : "-", e.name);
                if (!e.description.empty()) fmt::print("  {:<16} {}\n", "", e.description);
              }
              double best_speed = kNaN;
              std::string best_label;
              for (auto& e : entries)
                if (e.m.status == Status::ok && !(pick_us / e.m.time_us() <= best_speed)) {
                  best_speed = pick_us / e.m.time_us();
                  best_label = e.label;
                }
              if (std::isfinite(best_speed)) bests.push_back({p.key(), best_label, best_speed});
              if (!g.json && (!std::isfinite(roof) || !std::isfinite(mem_roof))) {
                std::string missing = !std::isfinite(roof) && !std::isfinite(mem_roof) ? roof_name + " and mem_read roofs"
                                      : !std::isfinite(roof)                            ? roof_name + " roof"
                                                                                        : std::string("mem_read roof");
                fmt::print("  (no measured {} for this device: run `gemmtune roofs`)\n", missing);
              }
              auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
              all.push_back({{"problem", p.key()}, {"device", dev.name}, {"roof", roof_name},
                             {"roof_value", num(roof)}, {"mem_roof_value", num(mem_roof)},
                             {"intensity", line.intensity}, {"roofline_value", num(line.flops_per_s)},
                             {"bound", to_string(line.bound)},
                             {"replay", session.replay()}, {"rows", rows}});
            }
            if (!g.json && bests.size() > 1) {
              double log_sum = 0;
              auto [lo, hi] = std::minmax_element(bests.begin(), bests.end(),
                                                  [](const Best& a, const Best& b) { return a.speed < b.speed; });
              for (auto& b : bests) log_sum += std::log(b.speed);
              fmt::print("\nThe fastest of each problem against cuBLASLt's pick, over {} problems: geomean {:.3f}x, "
                         "worst {:.3f}x ({}, {}), best {:.3f}x ({}, {})\n",
                         bests.size(), std::exp(log_sum / double(bests.size())), lo->speed, lo->key, lo->label,
                         hi->speed, hi->key, hi->label);
            }
            if (g.json) print_json(all);
            return 0;
          }};
}

}  // namespace gt::cli
