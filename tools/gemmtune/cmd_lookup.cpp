// gemmtune lookup: the config to run for a problem from an exported table, and whether it
// was an exact match, a nearest tuned shape or the default; without a problem, what the table
// holds. Needs no GPU.
#include "cli.hpp"
#include "table/online.hpp"
#include "session.hpp"
#include "table/table.hpp"

#include <cmath>
#include <set>

namespace gt::cli {


// A config as a person reads it: "k=v k=v" where its parameters are known, else its name.
static std::string shown_config(const std::string& params, const std::string& name) {
  return params.empty() ? name : readable_assignments(params);
}

// Without a problem: what the table holds (one device's entries when given), one line per entry
// (JSON: the header and entries, each entry as exported; not itself a table file).
static int list_table(LookupTable t, const std::string& device, bool json) {
  if (!device.empty()) {
    std::vector<TableEntry> mine;
    for (auto& e : t.entries)
      if (e.key.device_name == device) mine.push_back(e);
    if (mine.empty() && !t.entries.empty()) {
      std::string have;
      for (auto& d : t.devices()) have += (have.empty() ? "'" : ", '") + d + "'";
      throw InputError(fmt::format("--device: {} has no entries for '{}' (it has {})", t.origin, device, have));
    }
    t.entries = std::move(mine);
  }
  if (json) {
    nlohmann::json j;
    j["table"] = t.origin;
    j["generated_at"] = t.info.generated_at;
    j["source"] = t.info.source;
    j["entries"] = t.entries;
    nlohmann::json ev = nlohmann::json::array();
    for (auto& e : t.evidence)
      ev.push_back({{"from", e.from.text()}, {"config", e.config}, {"rule", to_string(e.rule)}, {"radius", e.radius},
                    {"neighbours", e.neighbours}, {"worst", e.worst}});
    j["evidence"] = ev;
    print_json(j);
    return 0;
  }
  fmt::print("{}: {} entr{}{}{}\n", t.origin, t.entries.size(), t.entries.size() == 1 ? "y" : "ies",
             t.info.generated_at.empty() ? "" : ", generated " + t.info.generated_at,
             t.info.source.empty() ? "" : " from " + t.info.source);
  if (t.entries.empty()) return 0;
  size_t w = 3;
  for (const TableEntry& e : t.entries) w = std::max(w, e.key.text().size());
  fmt::print("  {:<{}} {:<14} {:>11} {:>9}  {}\n", "key", w, "family", "time us", "TFLOP/s", "config");
  for (const TableEntry& e : t.entries)
    fmt::print("  {:<{}} {:<14} {:>11.3f} {:>9.2f}  {}\n", e.key.text(), w, e.family, e.time_us, e.tflops,
               shown_config(e.params, e.config) + (e.transform == Transform::none ? "" : "  +" + std::string(to_string(e.transform))));
  if (t.evidence.empty())
    fmt::print("no evidence: shapes it does not hold get the default (gemmtune validate measures evidence)\n");
  for (auto& e : t.evidence)
    fmt::print("  evidence: {} {} answers up to distance {:.3f} ({} neighbour{}, the slowest {:.3f}x the default)\n",
               e.from.text(), to_string(e.rule), e.radius, e.neighbours, e.neighbours == 1 ? "" : "s", e.worst);
  fmt::print("(give --shape and --dtype to ask it for a problem)\n");
  return 0;
}

// The flags, filled by CLI11 and read by run_lookup.
struct LookupArgs {
  std::string table, device, arch, default_family;
  int align = 0;
  bool exact_device = false;
  std::string transfers = "backed";  // backed: only with evidence or an online decision; any: as before
  bool online = false;
  std::string online_file;
  double max_distance = kDefaultMaxDistance;
  int64_t decode_max_m = kDefaultDecodeMaxM;
  ProblemArgs pa;
  std::set<std::string> given;  // the flags given on the command line ("--shape"), recorded at parse time
};

// The problem asked about (its alignment from --align when given), with every flag about the
// lookup checked before the table is read.
static Problem checked_problem(Globals& g, const LookupArgs& a) {
  Problem p = a.pa.resolve();
  // A name given on the command line that is unknown fails now, not only when the default
  // is needed; the built-in one (naive) only when it is needed and not loaded.
  if (a.given.count("--default-family"))
    require_known_family(a.default_family, g.plugins().names(), "--default-family", "");
  if (a.align != 0) {
    if (a.align < 1 || a.align > 16 || (a.align & (a.align - 1)))
      throw InputError(fmt::format("--align: {} is not 1, 2, 4, 8 or 16", a.align));
    if (a.align > p.align)
      throw InputError(fmt::format("--align: {} bytes is more than the leading dimensions of {} allow ({})",
                                   a.align, p.shape(), p.align));
    p.align = a.align;
  }
  if (!(a.max_distance >= 0))
    throw InputError(fmt::format("--max-distance: {} is not a distance (0 or more; inf: no limit)", a.max_distance));
  if (a.decode_max_m < 0) throw InputError(fmt::format("--decode-max-m: {} is negative", a.decode_max_m));
  return p;
}

// The rule the flags ask for on this machine: which device's entries, which architecture's.
static LookupPolicy policy_of(const LookupArgs& a, const LookupMachine& machine) {
  LookupPolicy policy;
  policy.device = machine.device;
  if (a.exact_device && !policy.device)
    throw InputError("--exact-device: there is no GPU here, so name the device with --device");
  policy.arch = machine.arch;
  policy.exact_device = a.exact_device;
  policy.max_distance = a.max_distance;
  policy.decode_max_m = a.decode_max_m;
  policy.default_family = a.default_family;
  policy.unbacked_transfers = a.transfers == "any";
  policy.online = a.online;
  return policy;
}

// What the answer's printing adds to the answer, as JSON and as text.
struct AnswerDetails {
  std::vector<std::string> notes;
  std::string transform_plan;  // what the answer's transform does for this problem ("": none)
  std::string params;          // the config's parameters ("": they cannot be named here)
};

// The notes (entries of another tier, another plugin version, a family not loaded here), the
// transform's plan, and the parameters from the family's space where the table has none.
static AnswerDetails details_of(const LookupResult& r, const Problem& p, const PluginRegistry& reg,
                                const gt_device& lim) {
  AnswerDetails d;
  if (!r.device_note.empty()) d.notes.push_back(r.device_note);
  // What the answer's transform does for this problem (the runtime does the same).
  if (r.transform != Transform::none)
    if (auto plan = plan_transform(p, r.transform)) d.transform_plan = plan->describe();
  d.params = r.params;
  if (const Family* fam = reg.find(r.family)) {
    if (r.entry && !r.entry->family_version.empty() && r.entry->family_version != fam->version())
      d.notes.push_back(fmt::format("tuned with {} version {}, the loaded plugin is version {}: its time may "
                                    "have changed",
                                    r.family, r.entry->family_version, fam->version()));
    if (d.params.empty()) {
      try {
        d.params = resolve_choice(reg, lim, r, p).params;
      } catch (const std::exception&) {
        // The space needs a GPU (cuBLASLt): the config name alone says it all.
      }
    }
  } else {
    d.notes.push_back(fmt::format("family '{}' is not loaded here: the config was not checked against it", r.family));
  }
  return d;
}

// --json: the answer with all that the text shows, and the policy and table it came from.
static void print_answer_json(const LookupResult& r, const AnswerDetails& d, const Problem& p,
                              const LookupPolicy& policy, const std::string& table) {
  nlohmann::json j;
  j["problem"] = problem_to_json(p);
  j["device"] = policy.device ? nlohmann::json(*policy.device) : nlohmann::json();
  j["arch"] = policy.arch;
  j["match"] = to_string(r.kind);
  j["rule"] = to_string(r.rule);
  j["backing"] = to_string(r.backing);
  j["backing_note"] = r.backing_note.empty() ? nlohmann::json() : nlohmann::json(r.backing_note);
  j["pending"] = r.pending ? nlohmann::json{{"config", transformed_name(r.pending->config, r.pending->transform)},
                                            {"family", r.pending->family},
                                            {"rule", to_string(r.pending->rule)},
                                            {"how", r.pending->how},
                                            {"distance", r.pending->distance}}
                           : nlohmann::json();
  j["tier"] = to_string(r.tier);
  j["how"] = r.how;
  j["reason"] = r.reason.empty() ? nlohmann::json() : nlohmann::json(r.reason);
  j["family"] = r.family;
  j["config"] = transformed_name(r.config, r.transform);  // the name, as the runtime's choice says it
  j["family_config"] = r.config;                          // the family's own (a table's `config`)
  j["transform"] = to_string(r.transform);
  j["transform_plan"] = d.transform_plan.empty() ? nlohmann::json() : nlohmann::json(d.transform_plan);
  j["params"] = d.params;
  j["distance"] = r.distance;
  j["transferred"] = r.transferred.empty() ? nlohmann::json() : nlohmann::json(r.transferred);
  j["adapted"] = r.adapted.empty() ? nlohmann::json() : nlohmann::json(r.adapted);
  j["policy"] = {{"exact_device", policy.exact_device},
                 {"transfers", policy.unbacked_transfers ? "any" : "backed"},
                 {"online", policy.online},
                 {"max_distance", std::isfinite(policy.max_distance) ? nlohmann::json(policy.max_distance)
                                                                     : nlohmann::json("inf")},
                 {"decode_max_m", policy.decode_max_m},
                 {"default_family", policy.default_family.empty() ? nlohmann::json()
                                                                  : nlohmann::json(policy.default_family)}};
  j["unchecked"] = r.unchecked.empty() ? nlohmann::json() : nlohmann::json(r.unchecked);
  j["entry"] = r.entry ? nlohmann::json(*r.entry) : nlohmann::json();
  nlohmann::json passed = nlohmann::json::array();
  for (auto& [e, why] : r.passed_over) passed.push_back({{"entry", e}, {"reason", why}});
  j["passed_over"] = passed;
  j["notes"] = d.notes;
  j["table"] = table;
  print_json(j);
}

// Where an entry was measured and with what, as far as the table says ("": it says nothing).
static std::string provenance(const TableEntry& e) {
  std::string prov;
  auto add = [&prov](const char* what, const std::string& v) {
    if (!v.empty()) prov += fmt::format("{}{} {}", prov.empty() ? "" : ", ", what, v);
  };
  add("measured", e.measured_at);
  add("driver", e.driver);
  add("CUDA runtime", e.cuda_runtime);
  add("NVRTC", e.nvrtc);
  add("library", e.library);
  add("gemmtune", e.gemmtune_version);
  return prov;
}

// The answer as a person reads it: the config, how it was matched, the entry it came from, notes.
static void print_answer(const LookupResult& r, const AnswerDetails& d, const Problem& p, const LookupPolicy& policy) {
  if (r.config.empty())
    fmt::print("{}  ({}'s own choice, named only where {} can be asked)\n", r.family, r.family, r.family);
  else
    fmt::print("{}  {}{}\n", r.family, shown_config(d.params, r.config),
               r.transform == Transform::none ? "" : "  +" + std::string(to_string(r.transform)));
  if (r.transform != Transform::none)
    fmt::print("  transform: {}: {} (docs/transforms.md)\n", to_string(r.transform), d.transform_plan);
  fmt::print("  match:  {}", r.how);
  if (r.kind == MatchKind::nearest)
    fmt::print(", log-space distance {:.3f} (limit {:.3f}), {}", r.distance, policy.max_distance,
               regime_text(p.m, policy));
  fmt::print("  for {}{}\n", p.key(), policy.device ? " on " + *policy.device : "");
  if (!r.reason.empty()) fmt::print("  why:    {}\n", r.reason);
  if (r.backing != Backing::none && r.backing != Backing::exact)
    fmt::print("  backed: {}: {}\n", to_string(r.backing), r.backing_note);
  if (r.pending)
    fmt::print("  online: {} {} ({}) is timed against this default on the problem's first calls\n", r.pending->family,
               shown_config(r.pending->params, r.pending->config), r.pending->how);
  if (!r.adapted.empty()) fmt::print("  adapted: {}\n", r.adapted);
  if (r.entry) {
    const TableEntry& e = *r.entry;
    fmt::print("  tuned:  {:.3f} us, {:.2f} TFLOP/s at {}\n", e.time_us, e.tflops, e.key.text());
    if (!r.transferred.empty())
      fmt::print("          with {} ({} at that shape, not the config above)\n",
                 shown_config(e.params, e.config), r.transferred);
    std::string prov = provenance(e);
    if (!prov.empty()) fmt::print("          ({})\n", prov);
  }
  if (!r.unchecked.empty())
    fmt::print("  note: {} {} was not checked: {} (on a machine with a GPU the lookup checks it{})\n",
               r.kind == MatchKind::fallback ? "which config is cuBLASLt's pick for"
                                             : "whether this config can run",
               p.key(), r.unchecked,
               r.kind == MatchKind::fallback ? " and names it"
               : r.family == "cublaslt"      ? ", and may answer with cuBLASLt's pick for this shape instead"
                                             : "");
  for (auto& n : d.notes) fmt::print("  note: {}\n", n);
  if (!r.passed_over.empty()) {
    fmt::print("  passed over ({} entr{}, nearest first):\n", r.passed_over.size(),
               r.passed_over.size() == 1 ? "y" : "ies");
    for (size_t i = 0; i < r.passed_over.size() && i < 5; ++i)
      fmt::print("    {}: {}\n", r.passed_over[i].first, r.passed_over[i].second);
    if (r.passed_over.size() > 5) fmt::print("    ... and {} more (--json lists them all)\n", r.passed_over.size() - 5);
  }
}

// With a problem, the answer for it (what the runtime library answers); without, what the table holds.
static int lookup(Globals& g, const LookupArgs& a) {
  if (!a.pa.given() && !a.given.count("--shape")) {
    for (const char* flag : {"--dtype", "--out-dtype", "--layout", "--align", "--arch", "--default-family",
                             "--exact-device", "--max-distance", "--decode-max-m", "--transfers", "--online",
                             "--online-file"})
      if (a.given.count(flag))
        throw InputError(
            fmt::format("{} is about a problem: give --shape too (without it lookup lists the table)", flag));
    return list_table(LookupTable::load(a.table), a.device, g.json);
  }
  Problem p = checked_problem(g, a);
  if (a.online && !a.online_file.empty()) check_file_roles({{FileUse::read, "--online-file", a.online_file}});
  LookupTable t = LookupTable::load(a.table);
  LookupMachine machine = lookup_machine(a.device, a.arch);
  LookupPolicy policy = policy_of(a, machine);
  const PluginRegistry& reg = g.plugins();
  // Online mode: the decisions a runtime in online mode wrote (beside the table unless named).
  std::optional<OnlineDecisions> decisions;
  CheckedFn checked;
  if (a.online) {
    decisions.emplace(a.online_file.empty() ? default_online_file(a.table) : std::filesystem::path(a.online_file));
    if (std::string w = decisions->take_warning(); !w.empty()) fmt::print(stderr, "note: {}\n", w);
    checked = [&](const Problem& q, const LookupResult& tr) {
      return decisions->find(policy.device.value_or(""), q.key(), transformed_name(tr.config, tr.transform));
    };
  }
  LookupResult r = answer(t, p, reg, machine.limits, policy, checked);  // what the runtime library answers, too
  AnswerDetails d = details_of(r, p, reg, machine.limits);
  if (g.json)
    print_answer_json(r, d, p, policy, a.table);
  else
    print_answer(r, d, p, policy);
  return 0;
}

static void add_lookup_options(CLI::App* sub, LookupArgs& a) {
  sub->add_option("--table", a.table, "the table (TOML or JSON, as `gemmtune export` writes it)")->required();
  sub->add_option("--device", a.device,
                  "use this device's entries; where the table has none, those measured on its architecture, else "
                  "every entry (default: the first GPU's name when there is one, else none: the architecture's "
                  "entries, else every entry; without --shape, every entry)");
  sub->add_option("--align", a.align,
                  "alignment of the operands in bytes (1, 2, 4, 8, 16): the largest power of two dividing every "
                  "base pointer and leading dimension times the element size (default: from the tight leading "
                  "dimensions, pointers from cudaMalloc)")
      ->check(whole_in(search::WholeRange{0, 16}));
  sub->add_option("--arch", a.arch,
                  "architecture whose limits decide what a config can run (default: the GPU's, else sm_90)");
  sub->add_flag("--exact-device", a.exact_device,
                "only the device's own entries (default: else those measured on its architecture, else any "
                "device's, and the answer says so)");
  sub->add_option("--max-distance", a.max_distance,
                  "a nearest entry serves only within this log-space distance, sqrt(ln²(M/M') + ln²(N/N') + "
                  "ln²(K/K')); 0: exact keys only; inf: no limit")
      ->default_str(fmt::format("{:.3f} (ln 4)", kDefaultMaxDistance))
      ->check(number_in(search::RealRange{0, std::numeric_limits<double>::infinity(), false, "distance"}));
  sub->add_option("--decode-max-m", a.decode_max_m,
                  "M at most this is the decode regime, above it prefill; a nearest entry serves only its own "
                  "regime, and at decode only its own N (0: one regime)")
      ->capture_default_str()
      ->check(whole_in(search::WholeRange{0, uint64_t(kMaxDim)}));
  sub->add_option("--default-family", a.default_family,
                  "family whose default config runs what no entry serves where cuBLASLt's heuristic cannot answer "
                  "(default: none; never a hand-written family unless named)");
  sub->add_option("--transfers", a.transfers,
                  "backed (default): an answer from a nearest entry only where the table's evidence (gemmtune "
                  "validate) backs it on this GPU model, or an online decision does, else the default; any: every "
                  "transfer, unbacked (the rule before evidence; to measure the rules)")
      ->check(CLI::IsMember({"backed", "any"}));
  sub->add_flag("--online", a.online,
                "answer as the runtime in online mode: with the decisions its online checks wrote, and naming the "
                "transfer a first call would time against the default");
  sub->add_option("--online-file", a.online_file,
                  "the online decisions (default: beside the table, TABLE.online.jsonl); implies --online");
  add_problem_options(sub, a.pa);
  sub->final_callback([sub, &a] {  // after parsing and its checks, before the command runs
    for (const CLI::Option* o : sub->get_options())
      if (o->count() > 0) a.given.insert(o->get_name());
  });
}

static int run_lookup(Globals& g, const LookupArgs& given) {
  LookupArgs a = given;
  if (!a.online_file.empty()) a.online = true;  // --online-file implies --online
  return lookup(g, a);
}

static Registrar reg_lookup(76, [](CLI::App& app, Globals& g) {
  return make_command<LookupArgs>(app, g, "lookup",
      "the config to run for a problem from an exported table (TOML or JSON), and whether it was an exact match, a "
      "nearest shape or the default; without --shape, the table's entries (no GPU)",
      add_lookup_options, run_lookup);
});

}  // namespace gt::cli
