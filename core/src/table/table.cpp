#include "table/table.hpp"

#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "base/files.hpp"
#include "base/json_text.hpp"
#include "measure/provenance.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "base/toml.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>
#include <variant>

namespace gt {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Names

const char* to_string(TableFormat f) {
  switch (f) {
    case TableFormat::toml: return "toml";
    case TableFormat::json: return "json";
    case TableFormat::csv: return "csv";
    case TableFormat::cpp: return "cpp";
  }
  return "?";
}

TableFormat parse_table_format(std::string_view s, std::string_view where) {
  if (s == "toml") return TableFormat::toml;
  if (s == "json") return TableFormat::json;
  if (s == "csv") return TableFormat::csv;
  if (s == "cpp" || s == "hpp" || s == "h") return TableFormat::cpp;
  throw InputError(fmt::format("{}: unknown table format '{}' (expected toml, json, csv or cpp)", where, s));
}

std::optional<TableFormat> format_of_extension(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (e == ".toml") return TableFormat::toml;
  if (e == ".json") return TableFormat::json;
  if (e == ".csv") return TableFormat::csv;
  if (e == ".hpp" || e == ".h" || e == ".hh" || e == ".hxx") return TableFormat::cpp;
  return std::nullopt;
}

const char* to_string(MatchKind k) {
  switch (k) {
    case MatchKind::exact: return "exact";
    case MatchKind::nearest: return "nearest";
    case MatchKind::fallback: return "default";
  }
  return "?";
}

const char* to_string(Rule r) {
  switch (r) {
    case Rule::exact: return "exact";
    case Rule::nearest: return "nearest";
    case Rule::transferred: return "transferred";
    case Rule::adapted: return "adapted";
    case Rule::library_default: return "library default";
    case Rule::family_default: return "family default";
  }
  return "?";
}

Rule parse_rule(std::string_view s, std::string_view where) {
  for (Rule r : {Rule::exact, Rule::nearest, Rule::transferred, Rule::adapted, Rule::library_default,
                 Rule::family_default})
    if (s == to_string(r)) return r;
  throw InputError(fmt::format("{}: unknown rule '{}' (expected nearest, transferred or adapted)", where, s));
}

const char* to_string(Backing b) {
  switch (b) {
    case Backing::none: return "none";
    case Backing::exact: return "exact";
    case Backing::evidence: return "evidence";
    case Backing::online: return "online";
    case Backing::default_config: return "default";
    case Backing::unbacked: return "unbacked";
  }
  return "?";
}

const char* to_string(Tier t) {
  switch (t) {
    case Tier::device: return "device";
    case Tier::arch: return "arch";
    case Tier::any: return "any";
  }
  return "?";
}

bool is_decode(int64_t m, const LookupPolicy& policy) { return m <= policy.decode_max_m; }

std::string regime_text(int64_t m, const LookupPolicy& policy) {
  return is_decode(m, policy) ? fmt::format("decode (M <= {})", policy.decode_max_m)
                              : fmt::format("prefill (M > {})", policy.decode_max_m);
}

std::string TableEntry::shape() const { return fmt::format("{}x{}x{}", key.m, key.n, key.k); }
std::string TableEntry::text() const { return fmt::format("{} -> {}", key.text(), transformed_name(config, transform)); }

static bool entry_less(const TableEntry& a, const TableEntry& b) {
  return std::tie(a.key, a.family, a.config) < std::tie(b.key, b.family, b.config);
}
static bool evidence_less(const TransferEvidence& a, const TransferEvidence& b) {
  return std::tie(a.from, a.family, a.config, a.rule) < std::tie(b.from, b.family, b.config, b.rule);
}
void LookupTable::sort() {
  std::stable_sort(entries.begin(), entries.end(), entry_less);
  std::stable_sort(evidence.begin(), evidence.end(), evidence_less);
}

const TransferEvidence* LookupTable::evidence_for(const TableEntry& e, Rule rule, double d,
                                                  const std::optional<std::string>& device) const {
  // Measured on this GPU model only: another model of the architecture gets the default.
  if (!device || e.key.device_name != *device) return nullptr;
  for (const TransferEvidence& ev : evidence)
    if (ev.from == e.key && ev.family == e.family && ev.config == e.config && ev.transform == e.transform &&
        ev.rule == rule && d <= ev.radius)
      return &ev;
  return nullptr;
}

std::vector<std::string> LookupTable::devices() const {
  std::set<std::string> s;
  for (auto& e : entries) s.insert(e.key.device_name);
  return {s.begin(), s.end()};
}

void LookupTable::check_unique() const {
  std::map<ResultKey, size_t> seen;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto [it, fresh] = seen.emplace(entries[i].key, i);
    if (!fresh)
      throw InputError(fmt::format("{}: entries[{}] and entries[{}] are both for {}: a table holds one entry per key",
                                   origin.empty() ? "table" : origin, it->second, i, entries[i].key.text()));
  }
}

double shape_distance(int64_t m, int64_t n, int64_t k, int64_t m2, int64_t n2, int64_t k2) {
  auto l = [](int64_t a, int64_t b) { return std::log(double(a) / double(b)); };
  double dm = l(m, m2), dn = l(n, n2), dk = l(k, k2);
  return std::sqrt(dm * dm + dn * dn + dk * dk);
}

Problem family_problem(const TableEntry& e, const Problem& p) { return transformed_problem(p, e.transform); }

Problem problem_of(const TableEntry& e) {
  Problem p = Problem::make(e.key.m, e.key.n, e.key.k, e.key.in, e.key.out, e.key.layout, e.key.in_b, e.key.scale);
  auto round_up = [](int64_t v, int64_t step) { return (v + step - 1) / step * step; };
  auto step_of = [&](DType t) { return std::max<int64_t>(1, e.key.align / int64_t(size_of(t))); };
  p.lda = round_up(p.lda, step_of(e.key.in));
  p.ldb = round_up(p.ldb, step_of(e.key.in_b));
  const int64_t step_out = step_of(e.key.out);
  p.ldc = round_up(p.ldc, step_out);
  p.align = std::min(alignment_of(p), e.key.align);
  p.constant = e.key.constant;
  return p;
}

// ---------------------------------------------------------------------------------------
// Plugins

// Whether a family cannot be asked about any problem on this machine: there is no GPU, and it
// cannot describe even a plain f32 problem (cuBLASLt asks the GPU's library). Then its refusal
// of one problem says nothing about that problem. (With a GPU, a refusal is the family's
// answer, another --arch included; the stand-in cuBLASLt answers without one.)
static bool cannot_be_asked_here(const Family& f, const gt_device& limits) {
  if (device_count() > 0) return false;
  try {
    f.space(Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn), limits);
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

static std::string loaded_list(const PluginRegistry& reg) {
  std::string s;
  for (auto& n : reg.names()) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

CanImplementFn plugin_can_implement(const PluginRegistry& reg, const gt_device& limits) {
  return [&reg, limits](const TableEntry& e, const Problem& p) -> Verdict {
    const Family* fam = reg.find(e.family);
    if (!fam) return Verdict::cannot(fmt::format("family '{}' is not loaded (loaded: {})", e.family, loaded_list(reg)));
    bool exact = e.key.m == p.m && e.key.n == p.n && e.key.k == p.k && e.key.in == p.in && e.key.in_b == p.in_b &&
                 e.key.out == p.out && e.key.layout == p.layout && e.key.align == p.align && e.key.scale == p.scale;
    // A transformed entry's config is of its family's space for the transformed problems: the
    // entry's own, and the asked one's (which the transform may not serve).
    std::string why;
    auto own_plan = plan_transform(problem_of(e), e.transform, &why);
    if (!own_plan) return Verdict::cannot(fmt::format("its transform {} cannot serve its own key: {}", to_string(e.transform), why));
    auto plan = plan_transform(p, e.transform, &why);
    if (!plan) return Verdict::cannot(fmt::format("{}: {}", to_string(e.transform), why));
    Space own;
    try {
      own = fam->space(own_plan->inner, limits);
    } catch (const RuntimeFailure& ex) {
      // Verified at exactly this key when it was tuned. Elsewhere: without a GPU this machine
      // cannot tell (cuBLASLt describes its spaces by asking the GPU's library); with one, the
      // family refuses the entry's own problem here (another --arch, say), so it cannot run.
      if (exact) return Verdict{};
      if (cannot_be_asked_here(*fam, limits)) return Verdict::unchecked(ex.what());
      return Verdict::cannot(fmt::format("its family cannot describe the entry's own problem here: {}", ex.what()));
    }
    std::string err;
    if (!own.parse(e.config, &err)) {
      std::string versions =
          e.family_version.empty()
              ? fmt::format("the loaded plugin is version {}", fam->version())
              : e.family_version == fam->version()
                    ? fmt::format("the table and the loaded plugin are both version {}", fam->version())
                    : fmt::format("the table was written with version {}, the loaded plugin is version {}",
                                  e.family_version, fam->version());
      throw InputError(fmt::format("config '{}' no longer exists in family {}'s space ({}): {}", e.config, e.family,
                                   versions, err));
    }
    const Problem& q = plan->inner;
    const std::string under = e.transform == Transform::none ? "" : fmt::format("under {} ({}): ", to_string(e.transform), q.key());
    Space target;
    try {
      target = fam->space(q, limits);
    } catch (const RuntimeFailure& ex) {
      // The entry's own space was described here, so this is the family refusing this problem.
      return Verdict::cannot(under + ex.what());
    }
    auto cfg = target.parse(e.config, &err);
    if (!cfg) return Verdict::cannot(fmt::format("{}not in {}'s space for {}: {}", under, e.family, q.key(), err));
    auto refusal = fam->can_implement(q, *cfg, limits);
    if (refusal) return Verdict::cannot(under + *refusal);
    return Verdict{};
  };
}

namespace {
// How a family's default config is named in a lookup's answer.
std::string default_note(const std::string& family) {
  return family == "cublaslt" ? std::string("cuBLASLt's heuristic pick") : family + "'s default config";
}
}  // namespace

TransferFn plugin_transfer(const PluginRegistry& reg, const gt_device& limits) {
  return [&reg, limits](const TableEntry& e, const Problem& p) -> std::optional<DefaultChoice> {
    const Family* fam = reg.find(e.family);
    // Library families only: their default is the library's own choice for each shape.
    if (!fam || !fam->is_library()) return std::nullopt;
    // Whether the winner was the default is asked of the loaded version; another version may
    // have picked otherwise when the table was made.
    if (!e.family_version.empty() && e.family_version != fam->version()) return std::nullopt;
    try {
      // Through the entry's transform: the family's default for the transformed problem.
      Space own = fam->space(family_problem(e, problem_of(e)), limits);
      std::string err;
      auto c = own.parse(e.config, &err);
      if (!c || *c != own.default_config()) return std::nullopt;
      Space here = fam->space(family_problem(e, p), limits);
      Config d = here.default_config();
      if (here.check(d)) return std::nullopt;  // the space's check is the family's can_implement
      std::string note = default_note(fam->name());
      if (e.transform != Transform::none) note += fmt::format(" under {}", to_string(e.transform));
      return DefaultChoice{fam->name(), here.name(d), here.assignments(d), note, false, "", e.transform};
    } catch (const std::exception&) {
      // Cannot be asked here (cuBLASLt without a GPU), or the entry is broken: the entry's
      // config as it is, which the lookup's own check then judges and reports.
      return std::nullopt;
    }
  };
}

DefaultFn plugin_default(const PluginRegistry& reg, const gt_device& limits, std::string fallback_family) {
  return [&reg, limits, fallback_family](const Problem& p, std::string* why) -> std::optional<DefaultChoice> {
    std::vector<std::string> reasons;
    if (const Family* lt = reg.find("cublaslt")) {
      try {
        Space s = lt->space(p, limits);
        auto picks = lt->suggest(p, limits, 1, s.dims());
        if (!picks.empty() && s.valid(picks[0]))
          return DefaultChoice{lt->name(), s.name(picks[0]), s.assignments(picks[0]), default_note(lt->name()), true,
                               ""};
        reasons.push_back("cublaslt: its heuristic has no usable pick for this problem");
      } catch (const RuntimeFailure& ex) {
        // Without a GPU cuBLASLt cannot be asked: its pick is the default all the same, unnamed
        // here, as the runtime on a GPU would answer it (or, refused there, fall to the next).
        if (cannot_be_asked_here(*lt, limits))
          return DefaultChoice{lt->name(), "", "", default_note(lt->name()), true, ex.what()};
        reasons.push_back(fmt::format("cublaslt: {}", ex.what()));
      } catch (const std::exception& ex) {
        reasons.push_back(fmt::format("cublaslt: {}", ex.what()));
      }
    } else {
      reasons.push_back("the cublaslt family is not loaded");
    }
    if (fallback_family.empty()) {
      reasons.push_back("no default family was named (--default-family)");
    } else {
      if (const Family* f = reg.find(fallback_family)) {
        try {
          Space s = f->space(p, limits);
          Config c = s.default_config();
          if (auto w = s.check(c))
            reasons.push_back(fmt::format("{}'s default config cannot run it: {}", fallback_family, *w));
          else
            return DefaultChoice{f->name(), s.name(c), s.assignments(c), default_note(f->name()), false, ""};
        } catch (const std::exception& ex) {
          reasons.push_back(fmt::format("{}: {}", fallback_family, ex.what()));
        }
      } else {
        reasons.push_back(fmt::format("the fallback family '{}' is not loaded (loaded: {})", fallback_family,
                                      loaded_list(reg)));
      }
    }
    if (why) {
      why->clear();
      for (auto& s : reasons) *why += (why->empty() ? "" : "; ") + s;
    }
    return std::nullopt;
  };
}

AdaptFn plugin_adapt(const PluginRegistry& reg, const gt_device& limits) {
  return [&reg, limits](const TableEntry& e, const Problem& p) -> std::optional<DefaultChoice> {
    const Family* fam = reg.find(e.family);
    if (!fam) return std::nullopt;
    try {
      Space here = fam->space(family_problem(e, p), limits);  // InputError: the transform cannot serve p
      auto c = here.parse(e.config, nullptr);
      if (!c) return std::nullopt;  // a value this problem's space does not list: more than one parameter away
      const Config d = here.default_config();
      for (size_t i = 0; i < here.dims(); ++i) {
        if ((*c)[i] == d[i]) continue;
        Config tried = *c;
        tried[i] = d[i];
        if (here.check(tried)) continue;
        const Param& par = here.params()[i];
        std::string note = fmt::format("{}={} for {}={}", par.name, par.text(*par.index_of(d[i])), par.name,
                                       par.text(*par.index_of((*c)[i])));
        return DefaultChoice{fam->name(), here.name(tried), here.assignments(tried), note, false, "", e.transform};
      }
    } catch (const std::exception&) {
      // The family cannot describe this problem here: nothing to adapt to.
    }
    return std::nullopt;
  };
}

LookupMachine lookup_machine(const std::string& device_name, const std::string& arch, int gpu) {
  LookupMachine m;
  if (!device_name.empty()) m.device = device_name;
  if (device_count() > gpu && gpu >= 0) {
    DeviceInfo d = device_info(gpu);
    if (!m.device) m.device = d.name;
    m.arch = arch.empty() ? d.arch() : arch;
    m.limits = m.arch == d.arch() ? d.limits : arch_limits(m.arch);
    return m;
  }
  m.arch = arch.empty() ? "sm_90" : arch;
  m.limits = arch_limits(m.arch);
  return m;
}

LookupResult answer(const LookupTable& table, const Problem& problem, const PluginRegistry& reg,
                    const gt_device& limits, const LookupPolicy& policy, const CheckedFn& checked) {
  LookupHooks hooks{plugin_can_implement(reg, limits), plugin_default(reg, limits, policy.default_family),
                    plugin_transfer(reg, limits), plugin_adapt(reg, limits), checked};
  return table.lookup(problem, policy, hooks);
}

ResolvedChoice resolve_choice(const PluginRegistry& reg, const gt_device& limits, const LookupResult& r,
                              const Problem& problem) {
  const Family* fam = reg.find(r.family);
  if (!fam)
    throw InputError(fmt::format("family '{}' (chosen: {}) is not loaded (loaded: {})", r.family, r.how,
                                 loaded_list(reg)));
  std::string why;
  auto plan = plan_transform(problem, r.transform, &why);
  if (!plan) throw InputError(fmt::format("{} (chosen: {}): {}", to_string(r.transform), r.how, why));
  Space s = fam->space(plan->inner, limits);
  std::string err;
  auto cfg = s.parse(r.config, &err);
  if (!cfg) throw InputError(fmt::format("config '{}' is not in {}'s space for {}: {}", r.config, r.family,
                                         plan->inner.key(), err));
  ResolvedChoice c;
  c.family = fam;
  c.config = *cfg;
  c.name = s.name(*cfg);
  c.params = s.assignments(*cfg);
  c.transform = r.transform;
  c.problem = plan->inner;
  return c;
}

}  // namespace gt
