// gemmtune compare: in one run, the best config of each hand-written family beside
// cuBLASLt's heuristic pick (rank 0) and the best cuBLASLt algorithm found: same buffers,
// same timing (verified, then re-timed interleaved), with % of the measured roofline at the
// problem (the dtype's compute roof, or the streaming-read roof times the problem's
// intensity where that is lower; JSON: pct_roof = 100 x FLOP/s / roofline_value). Transformed
// candidates (pad, swap: docs/transforms.md) stand beside plain ones: a family's winner in the
// form it won in, its best stored measurement in each other form it was tuned in, and, for a
// misaligned problem, cuBLASLt's pick for the padded problem.
// Parse -> resolve (the resolved job tune uses too: its families, strategy, seed, budgets
// per family and margin, for the families compare tunes first) -> run -> print.
#include "measure/bench.hpp"
#include "cli.hpp"
#include "job/resolve.hpp"
#include "measure/roofs.hpp"
#include "session.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace gt::cli {

namespace {

struct CompareArgs {
  ProblemArgs pa;
  std::string config, replay;
  std::vector<std::string> families;
  std::optional<uint64_t> budget;
  uint64_t max_problems = search::kDefaultMaxProblems;
  bool no_tune = false;
  int device = 0, rounds = 10;
  double turn_warmup = Interleave{}.capped_warmup_s;
  double min_gain = -1;
};

struct Entry {
  std::string label;  // family, or "cublaslt (pick)" / "cublaslt (best)"; a transformed form's ends "+pad" etc.
  std::string family;
  Config config;  // of the family's space for the transform's problem
  std::string name, params, description;  // name with its transform; params: the readable form (Space::readable)
  Measurement m;
  int64_t row = 0;
  int same_as = -1;  // an earlier entry with the same family and config: measured once, shown twice
  Transform transform = Transform::none;
};

// The fastest row of a problem against cuBLASLt's pick, for the summary line.
struct Best {
  std::string key, label;
  double speed;      // over cuBLASLt's pick
  Problem problem{};
  double time_us = kNaN;  // the fastest row's
};

// What compare runs with: the resolved job, the session, and the problems' hand-written families.
struct CompareRun {
  const search::ResolvedJob& resolved;
  Session& session;
  const CompareArgs& a;
  search::SpaceSource spaces;
  search::ProvenanceSource prov;
  std::map<std::string, RoofRow> roofs;
};

void add_compare_options(CLI::App* sub, CompareArgs& a) {
  add_problem_options(sub, a.pa);
  sub->add_option("--config", a.config, "a TOML job: compare every problem of it");
  sub->add_option("--family", a.families,
                  "hand-written families to include (default: the job's for each problem, else every source family "
                  "but naive); cuBLASLt's pick (in a replay: the recorded one) and its best found are shown beside "
                  "them");
  sub->add_option("--budget", a.budget,
                  "evaluations per family when a family has no stored winner yet (default: the job's budget, its "
                  "[tune.budget.FAMILY] included, else 60)")
      ->check(whole_in(search::kEvaluationsRange));
  sub->add_option("--max-problems", a.max_problems,
                  fmt::format("the most problems a job may expand to (default {}): a job naming more is refused before "
                              "it is expanded", search::kDefaultMaxProblems))
      ->check(whole_in(search::WholeRange{1, UINT64_MAX}));
  sub->add_flag("--no-tune", a.no_tune, "do not tune families without a stored winner (they are left out)");
  sub->add_option("--device", a.device, "GPU index")->capture_default_str()->check(whole_in(kDeviceRange));
  add_interleave_options(sub, a.rounds, a.turn_warmup);
  add_min_gain_option(sub, a.min_gain, " when compare tunes a family that has no stored winner (no effect with --no-tune)");
  sub->add_option("--replay", a.replay,
                  "a recording instead of the GPU (no GPU needed); without a problem or --config, the recording's "
                  "problems");
}

search::JobRequest request_of(const CompareArgs& a, const search::Catalog& cat) {
  search::JobRequest r;
  r.config = a.config;
  r.max_problems = a.max_problems;
  // A replay with neither a problem nor a job compares the recording's problems (as tune does).
  if (a.pa.given() || (a.config.empty() && cat.recorded.empty())) r.problem = a.pa.resolve();
  r.families = a.families;
  // The hand-written families shown by default: every source family but naive.
  for (auto& f : cat.families)
    if (!cat.is_library(f) && f != "naive") r.default_families.push_back(f);
  r.evaluations = a.budget;
  if (a.min_gain >= 0) r.min_gain_pct = a.min_gain;
  r.device = a.device;
  r.shard = "0/1";  // compare runs the whole job
  search::TuneOptions& o = r.base;
  o.budget.max_evaluations = 60;
  o.retime = Interleave{a.rounds, Interleave{}.warmup_s, a.turn_warmup};
  std::random_device rd;
  o.input_seed = (uint64_t(rd()) << 32) | rd();
  o.tune_id = "compare-" + new_uuid().substr(0, 8);
  return r;
}

// The problems to compare: a replay leaves out (with a note) those its recording lacks, as
// tune does; none recorded at all is bad input.
std::vector<const search::ResolvedProblem*> problems_to_compare(const search::ResolvedJob& resolved, const search::Recording* rec,
                                                               const std::string& replay) {
  std::vector<const search::ResolvedProblem*> out;
  std::string missing;
  for (auto& pp : resolved.problems) {
    bool has = !rec;
    if (rec)
      for (auto& sp : rec->spaces()) has = has || sp.problem().key() == pp.problem.key();
    if (has) out.push_back(&pp);
    else missing += (missing.empty() ? "" : ", ") + pp.problem.key();
  }
  if (out.empty()) throw InputError(fmt::format("--replay: {} has no measurements of {}", replay, missing));
  if (!missing.empty()) fmt::print(stderr, "note: {} has no measurements of {}: left out\n", replay, missing);
  return out;
}

// Beside a family's winner, its fastest stored measurement in each other form it was tuned in
// (plain beside a transformed winner, transformed beside a plain one): compare re-times them all.
void add_other_forms(CompareRun& run, const Problem& p, const std::string& family, const std::string& label,
                     Transform won, std::vector<Entry>& entries) {
  if (run.session.replay()) return;  // a replay explores no transforms
  Store& store = run.session.store();
  for (Transform t : kTransforms) {
    if (t == won || !plan_transform(p, t)) continue;
    RowFilter f = RowFilter::of(ResultKey::of(run.session.measurer(0).device().name, p));
    f.family = family;
    f.transform = t;
    auto rows = store.best(f, true);
    if (rows.empty()) continue;
    Space s = run.spaces(family, transformed_problem(p, t));
    if (rows.front().config.size() != s.dims()) continue;
    const std::string suffix = t == Transform::none ? " (plain)" : std::string("+") + to_string(t);
    entries.push_back({label + suffix, family, rows.front().config, transformed_name(s.name(rows.front().config), t),
                       s.readable(rows.front().config), "", {}, 0, -1, t});
  }
}

// A family's stored winner (tuned first as the resolved job says when there is none and tuning is on).
void add_winner(CompareRun& run, const Problem& p, const std::string& family, const std::string& label,
                std::vector<Entry>& entries) {
  Store& store = run.session.store();
  const ResultKey key = ResultKey::of(run.session.measurer(0).device().name, p);
  auto w = store.winner(key, family);
  if (!w && !run.a.no_tune) {
    search::Tuner t(run.session.plugins(), run.session.measurer(0), &store, run.session.pool(), run.spaces, run.prov,
                    run.resolved.options);
    t.tune(p, {family});
    w = store.winner(key, family);
  }
  if (!w) return;
  std::string err;
  std::optional<Config> c;
  Space s;
  try {
    s = run.spaces(family, transformed_problem(p, w->transform));
    c = s.parse(family_config_name(w->config_name, w->transform), &err);
  } catch (const InputError& e) {
    err = e.what();
  }
  if (!c) {
    fmt::print(stderr, "note: the stored winner of {} ({}) is not in its space any more: {}\n", family, w->config_name,
               err);
    return;
  }
  const std::string suffix = w->transform == Transform::none ? "" : std::string("+") + to_string(w->transform);
  entries.push_back({label + suffix, family, *c, transformed_name(s.name(*c), w->transform), s.readable(*c), "", {}, 0, -1,
                     w->transform});
  add_other_forms(run, p, family, label, w->transform, entries);
}

std::vector<Entry> entries_of(CompareRun& run, const Problem& p, const std::vector<std::string>& hand) {
  std::vector<Entry> entries;
  for (auto& f : hand) add_winner(run, p, f, f, entries);
  const DeviceInfo& dev = run.session.measurer(0).device();
  if (const Family* lt = run.session.plugins() ? run.session.plugins()->find("cublaslt") : nullptr) {
    Space s = lt->space(p, dev.limits);
    auto picks = lt->suggest(p, dev.limits, 1, s.dims());
    if (!picks.empty())
      entries.push_back({"cublaslt (pick)", "cublaslt", picks[0], s.name(picks[0]), s.readable(picks[0]), "", {}, 0, -1});
    // A misaligned problem: cuBLASLt's pick for the padded problem too (its fast kernels need 16 bytes).
    if (p.align < 16)
      if (auto plan = plan_transform(p, Transform::pad)) {
        Space ps = lt->space(plan->inner, dev.limits);
        auto pp = lt->suggest(plan->inner, dev.limits, 1, ps.dims());
        if (!pp.empty())
          entries.push_back({"cublaslt (pick)+pad", "cublaslt", pp[0], transformed_name(ps.name(pp[0]), Transform::pad),
                             ps.readable(pp[0]), "", {}, 0, -1, Transform::pad});
      }
    add_winner(run, p, "cublaslt", "cublaslt (best)", entries);
  } else if (const search::Recording* rec = run.session.recording()) {
    // The recording's pick: the recorded space's default is the plugin's, cuBLASLt's rank 0.
    if (const search::RecordedSpace* rs = rec->find(p.key(), "cublaslt")) {
      const Space s = rs->space();
      const Config pick = s.default_config();
      if (rs->recorded(pick))
        entries.push_back({"cublaslt (pick)", "cublaslt", pick, s.name(pick), s.readable(pick), "", {}, 0, -1});
      else
        fmt::print(stderr, "note: {} holds no measurement of cuBLASLt's pick for {}: no pick row\n", run.a.replay,
                   p.key());
    }
    add_winner(run, p, "cublaslt", "cublaslt (best)", entries);
  }
  return entries;
}

// Same buffers, same method: verify each, then time all of them interleaved, each stored.
void measure_entries(CompareRun& run, const Problem& p, std::vector<Entry>& entries) {
  Measurer& meas = run.session.measurer(0);
  const search::TuneOptions& o = run.resolved.options;
  meas.set_problem(p, o.dist, o.input_seed);
  std::vector<Candidate> cands;
  std::vector<size_t> ok_idx;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto& e = entries[i];
    for (size_t j = 0; j < i && e.same_as < 0; ++j)
      if (entries[j].family == e.family && entries[j].name == e.name) e.same_as = int(j);
    if (e.same_as >= 0) continue;  // cuBLASLt's best is its pick: one kernel, timed once
    const Family* fam = run.session.plugins() ? run.session.plugins()->find(e.family) : nullptr;
    auto plan = plan_transform(p, e.transform);
    const Candidate cand{e.family, fam, e.config, e.transform};
    e.m = meas.measure(cand, true);
    // A replay has no plugin to ask: the recorded row's message is the config's description.
    e.description = fam && plan ? fam->describe(plan->inner, e.config) : e.m.status == Status::ok ? e.m.message : "";
    if (plan && e.transform != Transform::none)
      e.description += (e.description.empty() ? "" : "; ") + fmt::format("{}: {}", to_string(e.transform), plan->describe());
    if (e.m.status == Status::ok) {
      cands.push_back(cand);
      ok_idx.push_back(i);
    }
  }
  if (!cands.empty()) {
    meas.settle(cands.front(), kSettleCapS);
    Retimed rt = meas.retime(cands, o.retime, 7);
    for (size_t j = 0; j < ok_idx.size(); ++j) {
      auto& e = entries[ok_idx[j]];
      e.m.time = rt.stats[j];
      e.m.quick = false;
      // The config's description stays first (the report reads cuBLASLt's pick and its
      // algorithm from it), the note on how it was timed after it.
      const std::string how = j < rt.notes.size() && !rt.notes[j].empty() ? " (" + rt.notes[j] + ")" : "";
      e.m.message = fmt::format("{}{}compare: timed interleaved with {} others {}{}", e.description,
                                e.description.empty() ? "" : "; ", cands.size() - 1, describe(o.retime, rt.capped), how);
      const Problem fp = transformed_problem(p, e.transform);
      StoredRow row = search::measured_row(p, run.spaces(e.family, fp), e.config, e.m, run.prov(e.family, false),
                                           o.tune_id, meas.is_replay(), e.transform);
      search::note_rank(row, run.session.plugins() ? run.session.plugins()->find(e.family) : nullptr, fp,
                        meas.device().limits);
      e.row = run.session.store().insert(row);
    }
  }
  for (auto& e : entries)
    if (e.same_as >= 0) {
      auto& o2 = entries[size_t(e.same_as)];
      e.description = o2.description;
      e.m = o2.m;
      e.row = o2.row;
    }
}

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

// Prints (text) and returns (JSON) one problem's rows; adds its fastest row to `bests`.
nlohmann::json print_problem(CompareRun& run, const Problem& p, const std::vector<Entry>& entries, bool json,
                             std::vector<Best>& bests) {
  const std::string roof_name = compute_roof_name(p);
  double roof = run.roofs.count(roof_name) ? run.roofs[roof_name].value : kNaN;
  double mem_roof = run.roofs.count("mem_read") ? run.roofs["mem_read"].value : kNaN;
  Roofline line = roofline_at(p, roof, mem_roof);
  double pick_us = kNaN;
  for (auto& e : entries)
    if (e.label == "cublaslt (pick)" && e.m.status == Status::ok) pick_us = e.m.time_us();
  const std::string& dev = run.session.measurer(0).device().name;
  if (!json) {
    fmt::print("\n{} on {}{}\n", p.key(), dev, run.session.label());
    if (line.bound != Roofline::Bound::unknown)
      fmt::print("  roofline here: {:.1f} TFLOP/s, {}-bound ({} {:.1f} TFLOP/s; mem_read {:.2f} TB/s x "
                 "{:.1f} FLOP per byte of A, B and C)\n",
                 line.flops_per_s / 1e12, to_string(line.bound), roof_name, roof / 1e12, mem_roof / 1e12, line.intensity);
    else if (std::isfinite(line.flops_per_s))
      fmt::print("  roofline here: {} {:.1f} TFLOP/s alone (no mem_read roof: the bound is unknown)\n", roof_name,
                 roof / 1e12);
    fmt::print("  {:<16} {:>10} {:>9} {:>7} {:>8} {:>9}  {}\n", "family", "time us", "TFLOP/s", "% roof", "x pick",
               "error", "config");
  }
  nlohmann::json rows = nlohmann::json::array();
  Best best{p.key(), "", kNaN, p};
  for (auto& e : entries) {
    bool ok = e.m.status == Status::ok;
    double tf = e.m.tflops(p.flops());
    double pct = ok ? 100.0 * p.flops() / (e.m.time_us() * 1e-6) / line.flops_per_s : kNaN;
    double speed = ok ? pick_us / e.m.time_us() : kNaN;
    if (ok && !(speed <= best.speed)) best = {p.key(), e.label, speed, p, e.m.time_us()};
    rows.push_back({{"label", e.label}, {"family", e.family}, {"config", e.name}, {"params", e.params},
                    {"transform", to_string(e.transform)},
                    {"description", e.description},
                    {"status", to_string(e.m.status)}, {"message", e.m.message}, {"time_us", e.m.time},
                    {"tflops", ok ? nlohmann::json(tf) : nlohmann::json()}, {"pct_roof", num(pct)},
                    {"speedup_vs_pick", num(speed)}, {"err_rel_fro", num(e.m.err_rel_fro)}});
    if (json) continue;
    // The config as a person reads it, and its transform ("  +pad").
    const std::string shown =
        e.params + (e.transform == Transform::none ? "" : "  +" + std::string(to_string(e.transform)));
    if (!ok) {
      fmt::print("  {:<16} {}: {}   {}\n", e.label, to_string(e.m.status), e.m.message.substr(0, 120), shown);
      continue;
    }
    fmt::print("  {:<16} {:>10.2f} {:>9.1f} {:>7} {:>8} {:>9}  {}\n", e.label, e.m.time_us(), tf,
               std::isfinite(pct) ? fmt::format("{:.1f}", pct) : "-", std::isfinite(speed) ? fmt::format("{:.3f}", speed) : "-",
               std::isfinite(e.m.err_rel_fro) ? fmt::format("{:.1e}", e.m.err_rel_fro) : "-", shown);
    if (!e.description.empty()) fmt::print("  {:<16} {}\n", "", e.description);
  }
  if (std::isfinite(best.speed)) bests.push_back(best);
  if (!json && (!std::isfinite(roof) || !std::isfinite(mem_roof))) {
    std::string missing = !std::isfinite(roof) && !std::isfinite(mem_roof) ? roof_name + " and mem_read roofs"
                          : !std::isfinite(roof)                            ? roof_name + " roof"
                                                                            : std::string("mem_read roof");
    fmt::print("  (no measured {} for this device: run `gemmtune roofs`)\n", missing);
  }
  return {{"problem", p.key()}, {"device", dev}, {"roof", roof_name}, {"roof_value", num(roof)},
          {"mem_roof_value", num(mem_roof)}, {"intensity", line.intensity}, {"roofline_value", num(line.flops_per_s)},
          {"bound", to_string(line.bound)}, {"replay", run.session.replay()}, {"rows", rows}};
}

// Each FP8 problem's fastest row against the fastest of the 16-bit problems of its shape (bf16
// before f16) compared in the same run: the FP8 gain, one figure per problem. Returned per FP8
// problem key for the JSON output; printed unless `json`.
std::map<std::string, nlohmann::json> fp8_gains(const std::vector<Best>& bests, bool json) {
  std::map<std::string, nlohmann::json> out;
  bool header = false;
  for (const Best& f : bests) {
    if (!f.problem.fp8()) continue;
    const Best* wide = nullptr;
    for (DType t : {DType::bf16, DType::f16})
      for (const Best& b : bests)
        if (!wide && b.problem.in == t && b.problem.m == f.problem.m && b.problem.n == f.problem.n &&
            b.problem.k == f.problem.k)
          wide = &b;
    if (!wide) continue;
    const double gain = wide->time_us / f.time_us;
    out[f.key] = {{"against", wide->key}, {"against_label", wide->label}, {"against_time_us", wide->time_us},
                  {"time_us", f.time_us}, {"gain", gain}};
    if (json) continue;
    if (!header) fmt::print("\nFP8 against the fastest 16-bit config of the same shape, in this run:\n");
    header = true;
    fmt::print("  {:<40} {:>10.2f} us ({})  vs {:>10.2f} us {} ({}): {:.2f}x\n", f.key, f.time_us, f.label,
               wide->time_us, to_string(wide->problem.in), wide->label, gain);
  }
  return out;
}

void print_summary(const std::vector<Best>& bests) {
  if (bests.size() < 2) return;
  double log_sum = 0;
  auto [lo, hi] = std::minmax_element(bests.begin(), bests.end(), [](const Best& a, const Best& b) { return a.speed < b.speed; });
  for (auto& b : bests) log_sum += std::log(b.speed);
  fmt::print("\nThe fastest of each problem against cuBLASLt's pick, over {} problems: geomean {:.3f}x, "
             "worst {:.3f}x ({}, {}), best {:.3f}x ({}, {})\n",
             bests.size(), std::exp(log_sum / double(bests.size())), lo->speed, lo->key, lo->label, hi->speed, hi->key,
             hi->label);
}

int run_compare(Globals& g, const CompareArgs& a) {
  // 1. Resolve: the problems, the families (the command line's, else each problem's in the
  // job), the budgets, a replay's coverage, all before any GPU work.
  std::vector<FileRole> files;
  if (!a.config.empty()) files.push_back({FileUse::read, "--config", a.config});
  if (!a.replay.empty()) files.push_back({FileUse::read, "--replay", a.replay});
  if (a.replay.empty() || g.db_named()) files.push_back({FileUse::store, g.db_flag(), g.db_path()});
  check_file_roles(files);
  std::optional<search::Recording> rec;
  if (!a.replay.empty()) rec = load_recording(g, a.replay);
  search::Catalog cat = catalog_of(g, rec ? &*rec : nullptr, a.replay);
  const search::ResolvedJob resolved = search::resolve_job(request_of(a, cat), cat);
  std::vector<std::pair<const search::ResolvedProblem*, std::vector<std::string>>> work;
  for (const search::ResolvedProblem* pp : problems_to_compare(resolved, rec ? &*rec : nullptr, a.replay)) {
    std::vector<std::string> hand;
    for (auto& f : pp->families)
      if (!cat.is_library(f)) hand.push_back(f);
    if (hand.empty())
      fmt::print(stderr, "note: {}: the families named for it are all libraries, so no hand-written family is shown\n",
                 pp->problem.key());
    work.emplace_back(pp, hand);
  }

  // 2. Run and print, problem by problem.
  SessionOptions so;
  so.devices = {a.device};
  so.replay = a.replay;
  Session session(g, so);
  const search::TuneOptions& o = resolved.options;
  CompareRun run{resolved, session, a, session.spaces(), session.provenance(o.dist, o.input_seed), {}};
  const DeviceInfo& dev = session.measurer(0).device();
  for (auto& r : session.replay() ? session.recording()->roofs() : session.store().roofs(dev.name))
    if (r.device_name == dev.name) run.roofs[r.name] = r;
  nlohmann::json all = nlohmann::json::array();
  std::vector<Best> bests;
  for (auto& [pp, hand] : work) {
    std::vector<Entry> entries = entries_of(run, pp->problem, hand);
    if (entries.empty()) {
      fmt::print(stderr, "note: nothing to compare for {}\n", pp->problem.key());
      continue;
    }
    measure_entries(run, pp->problem, entries);
    all.push_back(print_problem(run, pp->problem, entries, g.json, bests));
  }
  auto gains = fp8_gains(bests, g.json);
  if (g.json) {
    for (auto& problem : all)
      if (auto it = gains.find(problem["problem"].get<std::string>()); it != gains.end()) problem["fp8_gain"] = it->second;
    print_json(all);
  } else {
    print_summary(bests);
  }
  return 0;
}

Registrar reg_compare(60, [](CLI::App& app, Globals& g) {
  return make_command<CompareArgs>(app, g, "compare",
      "each hand-written family's best beside cuBLASLt's pick (heuristic rank 0) and the best cuBLASLt "
      "algorithm found, measured in one run on the same buffers (needs a GPU unless --replay)",
      add_compare_options, run_compare);
});

}  // namespace

}  // namespace gt::cli
