// gemmtune validate: the evidence that lets a table answer shapes it does not hold
// (docs/lookup.md, "Backed answers"). For each entry of this GPU model, leave-one-out: each of
// its nearest neighbours alone is asked for the entry's problem (the rule as it transfers:
// nearest, transferred or adapted), and that answer is timed at the entry's shape interleaved
// with the library's default (cuBLASLt's pick). Every timing goes to the store; `export` keeps,
// per entry and rule, the neighbourhood in which they held within the tolerance. Needs a GPU,
// unless --replay. Resolve (the table, the entries, the neighbours) -> run -> print.
#include "measure/bench.hpp"
#include "cli.hpp"
#include "table/evidence.hpp"
#include "session.hpp"
#include "table/table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace gt::cli {

namespace {

struct ValidateArgs {
  std::string table, output, replay;
  int device = 0, rounds = 8;
  double turn_warmup = Interleave{}.capped_warmup_s;
  size_t neighbours = 4;
  double tolerance_pct = kDefaultTolerance * 100;
  double max_distance = kDefaultMaxDistance;
  int64_t decode_max_m = kDefaultDecodeMaxM;
  bool include_replay = false;
};

// One timing to make: the answer of entry `from` at entry `at`'s problem.
struct Planned {
  const TableEntry* at;
  const TableEntry* from;
  LookupResult answer;
};

// The rule as it transfers, for `from` alone asked for `p` (leave-one-out: every other entry is
// left out); nullopt where `from` cannot serve p (out of reach, or its config cannot run it).
std::optional<LookupResult> answer_from(const TableEntry& from, const Problem& p, const PluginRegistry& reg,
                                        const gt_device& lim, const LookupPolicy& policy) {
  LookupTable one;
  one.entries = {from};
  try {
    LookupResult r = answer(one, p, reg, lim, policy);
    if (r.kind == MatchKind::nearest) return r;
  } catch (const InputError&) {
    // nothing serves and there is no default: not a transfer to time
  }
  return std::nullopt;
}

// For each entry of the device, its nearest neighbours (same types, layout, alignment and
// scales) that can serve its problem, up to `n`, nearest first.
std::vector<Planned> plan_timings(const std::vector<const TableEntry*>& mine, const PluginRegistry& reg,
                                  const gt_device& lim, const LookupPolicy& policy, size_t n) {
  std::vector<Planned> out;
  for (const TableEntry* at : mine) {
    const Problem p = problem_of(*at);
    std::vector<std::pair<double, const TableEntry*>> near;
    for (const TableEntry* e : mine)
      if (e != at && e->key.in == at->key.in && e->key.in_b == at->key.in_b && e->key.out == at->key.out &&
          e->key.layout == at->key.layout && e->key.align == at->key.align && e->key.scale == at->key.scale)
        near.emplace_back(shape_distance(p.m, p.n, p.k, e->key.m, e->key.n, e->key.k), e);
    std::stable_sort(near.begin(), near.end(), [](auto& a, auto& b) { return a.first < b.first; });
    size_t taken = 0;
    for (auto& [d, e] : near) {
      if (taken == n) break;
      if (auto r = answer_from(*e, p, reg, lim, policy)) {
        out.push_back({at, e, std::move(*r)});
        ++taken;
      }
    }
  }
  return out;
}

// A candidate of the measurer: `config` (the family's name) of `family` through `t` at `p`.
Candidate candidate_of(Session& s, const std::string& family, const std::string& config, Transform t,
                       const Problem& p) {
  Space space = s.spaces()(family, transformed_problem(p, t));
  std::string err;
  auto c = space.parse(config, &err);
  if (!c) throw InputError(fmt::format("{} is not in {}'s space for {}: {}", config, family, p.key(), err));
  return {family, s.plugins() ? s.plugins()->find(family) : nullptr, *c, t};
}

// Times the answer and cuBLASLt's pick at `p`, interleaved, each stored; the validation of it.
Validation time_one(Session& s, const Planned& pl, const ValidateArgs& a, const std::string& tune_id, uint64_t seed) {
  const Problem p = problem_of(*pl.at);
  const LookupResult& r = pl.answer;
  Validation v;
  v.at = pl.at->key;
  v.from = pl.from->key;
  v.from_family = pl.from->family;
  v.from_config = pl.from->config;
  v.from_transform = pl.from->transform;
  v.rule = r.rule;
  v.family = r.family;
  v.config = r.config;
  v.transform = r.transform;
  v.distance = r.distance;
  v.tolerance = a.tolerance_pct / 100;
  v.replay = s.replay();
  v.tune_id = tune_id;
  std::tie(v.measured_at, v.time_unix) = utc_now();
  Space lt = s.spaces()("cublaslt", p);
  const Candidate pick{"cublaslt", s.plugins() ? s.plugins()->find("cublaslt") : nullptr, lt.default_config()};
  v.default_config = lt.name(pick.config);
  const Candidate ans = candidate_of(s, r.family, r.config, r.transform, p);
  Measurer& meas = s.measurer(0);
  meas.set_problem(p, Distribution::normal, seed);
  std::vector<Candidate> cands = {ans, pick};
  std::vector<Measurement> ms = {meas.measure(ans, true), meas.measure(pick, true)};
  if (ms[1].status != Status::ok)
    throw RuntimeFailure(fmt::format("cuBLASLt's pick for {} did not run: {}", p.key(), ms[1].message));
  v.answer_status = to_string(ms[0].status);
  if (ms[0].status == Status::ok) {
    meas.settle(ans, kSettleCapS);
    Retimed rt = meas.retime(cands, Interleave{a.rounds, Interleave{}.warmup_s, a.turn_warmup}, seed);
    for (size_t i = 0; i < 2; ++i) {
      ms[i].time = rt.stats[i];
      ms[i].quick = false;
    }
  }
  auto prov = s.provenance(Distribution::normal, seed);
  for (size_t i = 0; i < 2; ++i) {
    ms[i].message += (ms[i].message.empty() ? "" : "; ") + std::string("validate: timed interleaved with the ") +
                     (i == 0 ? "default" : "answer of " + pl.from->key.text());
    s.store().insert(search::measured_row(p, s.spaces()(cands[i].family, transformed_problem(p, cands[i].transform)),
                                          cands[i].config, ms[i], prov(cands[i].family, false), tune_id, s.replay(),
                                          cands[i].transform));
  }
  v.answer_us = ms[0].status == Status::ok ? ms[0].time_us() : std::numeric_limits<double>::quiet_NaN();
  v.default_us = ms[1].time_us();
  v.held = ms[0].status == Status::ok && transfer_held(v.answer_us, v.default_us, v.tolerance);
  return v;
}

// The table whose entries are validated: the file, else what export writes for this device.
LookupTable table_to_validate(Session& s, const ValidateArgs& a, const std::string& device) {
  if (!a.table.empty()) return LookupTable::load(a.table);
  ExportOptions o;
  o.device = device;
  o.include_replay = a.include_replay || s.replay();
  return table_from_store(s.store(), o);
}

void print_row(const Validation& v) {
  fmt::print("  {:<34} {:<16} {:<12} {:>8.3f} {:>10} {:>10.2f} {:>7} {}\n", v.at.text().substr(v.at.device_name.size() + 1),
             fmt::format("{}x{}x{}", v.from.m, v.from.n, v.from.k), to_string(v.rule), v.distance,
             std::isfinite(v.answer_us) ? fmt::format("{:.2f}", v.answer_us) : v.answer_status, v.default_us,
             std::isfinite(v.answer_us) ? fmt::format("{:.3f}", v.ratio()) : "-", v.held ? "held" : "LOST");
}

int run_validate(Globals& g, const ValidateArgs& a) {
  std::vector<FileRole> files;
  if (!a.table.empty()) files.push_back({FileUse::read, "--table", a.table});
  if (!a.output.empty()) files.push_back({FileUse::write, "-o", a.output});
  if (!a.replay.empty()) files.push_back({FileUse::read, "--replay", a.replay});
  if (a.replay.empty() || g.db_named()) files.push_back({FileUse::store, g.db_flag(), g.db_path()});
  check_file_roles(files);
  if (!a.output.empty()) {
    const auto f = format_of_extension(a.output);
    if (f != TableFormat::toml && f != TableFormat::json)
      throw InputError(fmt::format("-o {}: name the table .toml or .json (a table that carries its evidence)", a.output));
  }
  if (!a.table.empty()) LookupTable::load(a.table);  // bad input before any GPU work
  SessionOptions so;
  so.devices = {a.device};
  so.replay = a.replay;
  Session s(g, so);
  const DeviceInfo& dev = s.measurer(0).device();
  LookupTable t = table_to_validate(s, a, dev.name);
  std::vector<const TableEntry*> mine;
  for (auto& e : t.entries)
    if (e.key.device_name == dev.name) mine.push_back(&e);
  if (mine.empty()) {
    std::string have;
    for (auto& d : t.devices()) have += (have.empty() ? "'" : ", '") + d + "'";
    throw InputError(fmt::format("{} has no entries measured on {}: validate times a table on the GPU model its "
                                 "entries were measured on (it has {})",
                                 a.table.empty() ? "the store's table" : a.table, dev.name,
                                 have.empty() ? std::string("none") : have));
  }
  LookupPolicy policy;
  policy.device = dev.name;
  policy.arch = dev.arch();
  policy.max_distance = a.max_distance;
  policy.decode_max_m = a.decode_max_m;
  policy.unbacked_transfers = true;  // every transfer, to time it
  const std::vector<Planned> todo = plan_timings(mine, g.plugins(), dev.limits, policy, a.neighbours);
  std::random_device rd;
  const uint64_t seed = (uint64_t(rd()) << 32) | rd();
  const std::string tune_id = "validate-" + new_uuid().substr(0, 8);
  if (!g.json)
    fmt::print("{} entries of {}{}: {} answers of their neighbours to time\n  {:<34} {:<16} {:<12} {:>8} {:>10} {:>10} "
               "{:>7}\n",
               mine.size(), dev.name, s.label(), todo.size(), "at", "from", "rule", "distance", "answer us",
               "default us", "ratio");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> notes;
  for (const Planned& pl : todo) {
    Validation v;
    try {
      v = time_one(s, pl, a, tune_id, seed);
    } catch (const InputError& e) {  // not timed (a replay without the config): no evidence from it
      notes.push_back(fmt::format("{} from {} was not timed: {}", pl.at->key.text(), pl.from->shape(), e.what()));
      continue;
    }
    s.store().put_validation(v.row());
    if (g.json)
      rows.push_back(nlohmann::json::parse(v.row().record));
    else
      print_row(v);
  }
  // Replayed timings count as export counts them: with --include-replay, or when this run is a replay.
  t.evidence = evidence_of(t, stored_validations(s.store(), dev.name), a.include_replay || s.replay(), &notes);
  if (!a.output.empty()) {
    t.info.format_version = kTableFormatVersion;
    t.save(a.output, *format_of_extension(a.output));
  }
  if (g.json) {
    nlohmann::json ev = nlohmann::json::array();
    for (auto& e : t.evidence)
      ev.push_back({{"from", e.from.text()}, {"rule", to_string(e.rule)}, {"radius", e.radius},
                    {"neighbours", e.neighbours}, {"worst", e.worst}});
    print_json({{"device", dev.name}, {"tune_id", tune_id}, {"validations", rows}, {"evidence", ev}, {"notes", notes},
                {"store", s.db().string()}});
    return 0;
  }
  fmt::print("\nevidence (what export keeps; the store's validations of {}):\n", dev.name);
  for (auto& e : t.evidence)
    fmt::print("  {} {}: up to distance {:.3f}, {} neighbour{}, the slowest {:.3f}x the default\n", e.from.text(),
               to_string(e.rule), e.radius, e.neighbours, e.neighbours == 1 ? "" : "s", e.worst);
  if (t.evidence.empty()) fmt::print("  none: no transfer held\n");
  for (auto& n : notes) fmt::print("note: {}\n", n);
  if (!a.output.empty()) fmt::print("wrote the table with its evidence to {}\n", a.output);
  return 0;
}

void add_validate_options(CLI::App* sub, ValidateArgs& a) {
  sub->add_option("--table", a.table,
                  "the table whose entries are validated (TOML or JSON; default: the store's, as export writes it, "
                  "this GPU's entries)");
  sub->add_option("-o,--output", a.output, "also write the table with its evidence to this file (.toml or .json)");
  sub->add_option("--device", a.device, "GPU index")->capture_default_str()->check(whole_in(kDeviceRange));
  sub->add_option("--replay", a.replay, "a recording instead of the GPU (no GPU needed)");
  sub->add_option("--neighbours", a.neighbours, "the nearest entries per entry whose answers are timed at its shape")
      ->capture_default_str()
      ->check(whole_in(search::WholeRange{1, 1000}));
  sub->add_option("--tolerance", a.tolerance_pct,
                  "percent an answer may run slower than the default and still hold (the noise of a timing)")
      ->capture_default_str()
      ->check(number_in(search::RealRange{0, 100, false, "percentage"}));
  sub->add_option("--max-distance", a.max_distance, "as lookup's: neighbours within this log-space distance")
      ->default_str(fmt::format("{:.3f} (ln 4)", kDefaultMaxDistance))
      ->check(number_in(search::RealRange{0, std::numeric_limits<double>::infinity(), false, "distance"}));
  sub->add_option("--decode-max-m", a.decode_max_m, "as lookup's: the M regime's bound")
      ->capture_default_str()
      ->check(whole_in(search::WholeRange{0, uint64_t(kMaxDim)}));
  sub->add_flag("--include-replay", a.include_replay,
                "without --table: the store's replayed results count as entries (as export --include-replay)");
  add_interleave_options(sub, a.rounds, a.turn_warmup);
}

Registrar reg_validate(77, [](CLI::App& app, Globals& g) {
  return make_command<ValidateArgs>(app, g, "validate",
      "times each table entry's neighbours' answers at its shape against cuBLASLt's pick (leave-one-out) and stores "
      "them: the evidence that lets export's table answer shapes it does not hold (needs a GPU unless --replay)",
      add_validate_options, run_validate);
});

}  // namespace

}  // namespace gt::cli
