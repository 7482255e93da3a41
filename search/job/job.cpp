#include "job/job.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include "base/toml.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "default_job.h"

namespace gt::search {

std::string_view default_job_text() { return k_default_job; }

std::string WholeRange::text() const { return fmt::format("a whole number from {} to {}", lo, hi); }

namespace {
// "NAME " before a message about a value, or nothing for a flag (CLI11 names the flag itself).
std::string subject(const std::string& name) { return name.empty() ? "" : name + " "; }
std::string value_of(const std::string& name, const std::string& v) { return name.empty() ? v : name + " = " + v; }
}  // namespace

std::optional<std::string> WholeRange::check(const std::string& name, int64_t v) const {
  if (v < 0) return fmt::format("{} must not be negative ({})", value_of(name, std::to_string(v)), text());
  return check(name, uint64_t(v));
}

std::optional<std::string> WholeRange::check(const std::string& name, uint64_t v) const {
  if (v < lo) return fmt::format("{}must be at least {}, not {} ({})", subject(name), lo, v, text());
  if (v > hi) return fmt::format("{} is too large (at most {})", value_of(name, std::to_string(v)), hi);
  return std::nullopt;
}

std::string RealRange::text() const {
  if (hi == std::numeric_limits<double>::max())
    return lo_open && lo == 0 ? fmt::format("a positive {}", what)
                              : fmt::format("a {} {} {:g}", what, lo_open ? "above" : "of at least", lo);
  return lo_open ? fmt::format("a {} in ({:g}, {:g}]", what, lo, hi) : fmt::format("a {} from {:g} to {:g}", what, lo, hi);
}

std::optional<std::string> RealRange::check(const std::string& name, double v) const {
  // Written so that NaN fails every comparison; infinity is above every hi.
  const bool above_lo = lo_open ? v > lo : v >= lo;
  if (above_lo && v <= hi) return std::nullopt;
  return fmt::format("{}must be {}, not {}", subject(name), text(), v);
}

namespace {

// [[problems]]'s lda, ldb, ldc and align (unset: tight, and what they allow).
struct Strides {
  std::optional<int64_t> lda, ldb, ldc, align;
};

struct Ctx {
  std::string file;
  std::map<std::string, std::string>* where = nullptr;  // Job::where
  std::string at(const toml::node& n) const {
    auto& b = n.source().begin;
    return fmt::format("{}:{}:{}", file, b.line, b.column);
  }
  // Position of a key's value, or of its table when the key is absent.
  std::string at_key(const toml::table& t, const char* key) const {
    const toml::node* n = t.get(key);
    return (n ? at(*n) : at(t)) + ": " + key;
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& msg) const {
    throw InputError(fmt::format("{}: {}", at(n), msg));
  }
  void only_keys(const toml::table& t, const std::set<std::string>& known, const std::string& where) const {
    for (auto& [k, v] : t) {
      (void)v;
      if (!known.count(std::string(k.str()))) {
        std::string list;
        for (auto& x : known) list += (list.empty() ? "" : ", ") + x;
        auto& b = k.source().begin;
        throw InputError(fmt::format("{}:{}:{}: unknown key '{}' in {} (known: {})", file, b.line, b.column, k.str(),
                                     where, list));
      }
    }
  }
  // A key checked against its range (job.hpp: the flag that replaces it is held to the same).
  std::optional<uint64_t> whole(const toml::table& t, const char* key, const WholeRange& r) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(*n, fmt::format("'{}' must be a whole number ({})", key, r.text()));
    const int64_t v = *n->value<int64_t>();
    if (auto why = r.check(fmt::format("'{}'", key), v)) fail(*n, *why);
    return uint64_t(v);
  }
  std::optional<double> real(const toml::table& t, const char* key, const RealRange& r) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    auto v = n->value<double>();  // integers convert too
    if (!v) fail(*n, fmt::format("'{}' must be {}", key, r.text()));
    if (auto why = r.check(fmt::format("'{}'", key), *v)) fail(*n, *why);
    return *v;
  }
  template <class T>
  std::optional<T> get(const toml::table& t, const char* key, const char* type_name) const {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if constexpr (std::is_same_v<T, double>) {
      if (auto v = n->value<double>()) return *v;  // integers convert too
    } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int>) {
      if (n->is_integer()) {
        int64_t v = *n->value<int64_t>();
        if (v < 0) fail(*n, fmt::format("'{}' must not be negative", key));
        if (uint64_t(v) > uint64_t(std::numeric_limits<T>::max())) fail(*n, fmt::format("'{}' = {} is too large", key, v));
        return T(v);
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      if (n->is_boolean()) return *n->value<bool>();  // not an integer: TOML's value<bool> would take 1
    } else {
      if (auto v = n->value<T>()) return *v;
    }
    fail(*n, fmt::format("'{}' must be {}", key, type_name));
  }
  std::vector<std::string> strings(const toml::table& t, const char* key) const {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) fail(*n, fmt::format("'{}' must be an array of strings", key));
    for (auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s) fail(e, fmt::format("'{}' must hold strings only", key));
      if (where) where->emplace(std::string(key) + ":" + *s, at(e));
      // A repeated entry is a slip (a copied line): said where it is, not quietly merged.
      if (std::find(out.begin(), out.end(), *s) != out.end()) fail(e, fmt::format("'{}' names '{}' twice", key, *s));
      out.push_back(*s);
    }
    return out;
  }
  // The budget keys of a table ([tune] or [tune.budget.FAMILY]).
  JobBudget budget(const toml::table& t) const {
    JobBudget b;
    b.evaluations = whole(t, "evaluations", kEvaluationsRange);
    b.seconds = real(t, "seconds", kSecondsRange);
    b.fraction = real(t, "fraction", kFractionRange);
    b.patience = whole(t, "patience", kPatienceRange);
    return b;
  }
  // A problem set's leading dimensions and alignment (a runtime problem's, as the runtime's
  // record of untuned problems writes them): each optional.
  Strides strides(const toml::table& t) const {
    Strides st;
    for (auto [key, slot] : {std::pair{"lda", &st.lda}, {"ldb", &st.ldb}, {"ldc", &st.ldc}, {"align", &st.align}}) {
      const toml::node* n = t.get(key);
      if (!n) continue;
      if (!n->is_integer()) fail(*n, fmt::format("'{}' must be a whole number", key));
      const int64_t v = *n->value<int64_t>();
      if (v < 1 || v > kMaxDim) fail(*n, fmt::format("'{}' = {} is out of range (1 to {})", key, v, kMaxDim));
      if (std::string_view(key) == "align" && (v > 16 || (v & (v - 1))))
        fail(*n, fmt::format("'align' = {} is not 1, 2, 4, 8 or 16 (bytes)", v));
      *slot = v;
    }
    return st;
  }
  // The set's leading dimensions and alignment on one of its problems: each at least what the
  // problem needs, the alignment at most what the leading dimensions allow.
  void apply(const toml::table& t, const Strides& st, Problem& p) const {
    auto set = [&](const char* key, std::optional<int64_t> v, int64_t& ld, int64_t need) {
      if (!v) return;
      if (*v < need)
        fail(*t.get(key), fmt::format("'{}' = {} is less than {} {} needs ({})", key, *v, p.shape(),
                                      to_string(p.layout), need));
      ld = *v;
    };
    set("lda", st.lda, p.lda, p.a_cols());
    set("ldb", st.ldb, p.ldb, p.b_cols());
    set("ldc", st.ldc, p.ldc, p.n);
    p.align = alignment_of(p);
    if (st.align) {
      if (*st.align > p.align)
        fail(*t.get("align"), fmt::format("'align' = {} is more than the leading dimensions of {} allow ({})",
                                          *st.align, p.shape(), p.align));
      p.align = int32_t(*st.align);
    }
  }
  std::vector<int64_t> ints(const toml::table& t, const char* key) const {
    std::vector<int64_t> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) fail(*n, fmt::format("'{}' must be an array of whole numbers", key));
    for (auto& e : *a) {
      // The type first: toml++ would convert a float such as 4e96 to an integer, out of range.
      if (!e.is_integer()) fail(e, fmt::format("'{}' must hold whole numbers only", key));
      auto v = e.value<int64_t>();
      if (!v) fail(e, fmt::format("'{}' must hold whole numbers only", key));
      if (*v < 1) fail(e, fmt::format("'{}' = {}: every dimension must be at least 1", key, *v));
      if (*v > kMaxDim) fail(e, fmt::format("'{}' = {} is too large (at most {})", key, *v, kMaxDim));
      if (std::find(out.begin(), out.end(), *v) != out.end()) fail(e, fmt::format("'{}' names {} twice", key, *v));
      out.push_back(*v);
    }
    return out;
  }
};

// The product of counts, saturating at the largest count instead of wrapping.
uint64_t times(std::initializer_list<uint64_t> xs) {
  uint64_t p = 1;
  for (uint64_t x : xs) {
    if (x != 0 && p > std::numeric_limits<uint64_t>::max() / x) return std::numeric_limits<uint64_t>::max();
    p *= x;
  }
  return p;
}

// [tune]: how the job's problems are searched.
void parse_tune(const Ctx& ctx, const toml::node& tn, Job& job) {
  const toml::table* t = tn.as_table();
  if (!t) ctx.fail(tn, "[tune] must be a table");
  ctx.only_keys(*t, {"strategy", "evaluations", "seconds", "fraction", "patience", "seed", "quick", "finalists", "min_gain", "dist",
                         "families", "budget", "fast_accum"},
                "[tune]");
  JobSettings& s = job.settings;
  s.strategy = ctx.get<std::string>(*t, "strategy", "a string");
  if (s.strategy) job.where.emplace("strategy", ctx.at(*t->get("strategy")));
  static_cast<JobBudget&>(s) = ctx.budget(*t);
  if (const toml::node* bn = t->get("budget")) {
    const toml::table* bt = bn->as_table();
    if (!bt) ctx.fail(*bn, "[tune.budget] must be a table of family tables ([tune.budget.FAMILY])");
    for (auto& [fam, node] : *bt) {
      const toml::table* ft = node.as_table();
      if (!ft) ctx.fail(node, fmt::format("tune.budget.{} must be a table ([tune.budget.{}])", fam.str(), fam.str()));
      std::string where = fmt::format("[tune.budget.{}]", fam.str());
      ctx.only_keys(*ft, {"evaluations", "seconds", "fraction", "patience"}, where);
      JobBudget b = ctx.budget(*ft);
      if (!b.evaluations && !b.seconds && !b.fraction && !b.patience)
        ctx.fail(node, fmt::format("{} sets nothing (give evaluations, seconds, fraction or patience)", where));
      s.family_budgets[std::string(fam.str())] = b;
      job.where.emplace("budget:" + std::string(fam.str()), ctx.at(node));
    }
  }
  s.seed = ctx.whole(*t, "seed", kSeedRange);
  s.quick = ctx.get<bool>(*t, "quick", "true or false");
  if (auto f = ctx.whole(*t, "finalists", kFinalistsRange)) s.finalists = int(*f);
  s.min_gain = ctx.real(*t, "min_gain", kMinGainRange);
  s.dist = ctx.get<std::string>(*t, "dist", "a string");
  if (s.dist) {
    try {
      parse_distribution(s.dist->c_str());
    } catch (const InputError& e) {
      ctx.fail(*t->get("dist"), e.what());
    }
  }
  s.families = ctx.strings(*t, "families");
  s.fast_accum = ctx.get<bool>(*t, "fast_accum", "true or false");
}

// Adds p to the job, or, where another set named it already, merges this set's families and
// fixed configs into it (one problem, the union of the sets' families).
void add_problem(Job& job, std::map<std::string, size_t>& seen, const Problem& p, const std::vector<std::string>& fams,
                 const std::map<std::string, std::vector<std::string>>& fixed) {
  auto [at, fresh] = seen.emplace(p.key(), job.problems.size());
  if (fresh) {
    job.problems.push_back({p, fams, fixed});
    return;
  }
  JobProblem& jp = job.problems[at->second];
  if (jp.families.empty() || fams.empty()) {
    jp.families.clear();  // one of the sets means "every family"
  } else {
    for (auto& f : fams)
      if (std::find(jp.families.begin(), jp.families.end(), f) == jp.families.end()) jp.families.push_back(f);
  }
  for (auto& [f, list] : fixed) jp.configs[f].insert(jp.configs[f].end(), list.begin(), list.end());
}

// A problem set's [problems.configs]: family -> the configs it times instead of searching.
std::map<std::string, std::vector<std::string>> fixed_configs(const Ctx& ctx, const toml::table& t) {
  std::map<std::string, std::vector<std::string>> fixed;
  const toml::node* cn = t.get("configs");
  if (!cn) return fixed;
  const toml::table* ct = cn->as_table();
  if (!ct) ctx.fail(*cn, "'configs' must be a table of family = [config, ...]");
  for (auto& [fam, _] : *ct) {
    (void)_;
    std::vector<std::string>& list = fixed[std::string(fam.str())];
    list = ctx.strings(*ct, std::string(fam.str()).c_str());
    if (list.empty()) ctx.fail(*cn, fmt::format("configs.{} is empty", fam.str()));
  }
  return fixed;
}

// One [[problems]] set, expanded (shapes x dtypes x layouts x scales) into job.problems;
// `seen` maps a problem's key to its index there, so that a repeated problem merges.
void parse_problem_set(const Ctx& ctx, const toml::node& node, Job& job, std::map<std::string, size_t>& seen,
                       uint64_t max_problems) {
  const toml::table& t = *node.as_table();
  ctx.only_keys(t, {"shapes", "m", "n", "k", "dtypes", "out_dtype", "layouts", "scales", "constant", "families",
                    "configs", "lda", "ldb", "ldc", "align"},
                "[[problems]]");
  const Strides strides = ctx.strides(t);
  const std::map<std::string, std::vector<std::string>> fixed = fixed_configs(ctx, t);
  std::vector<std::array<int64_t, 3>> shapes;
  for (auto& s : ctx.strings(t, "shapes")) shapes.push_back(parse_shape(s, ctx.at_key(t, "shapes")));
  std::vector<int64_t> ms, ns, ks;
  if (t.get("m") || t.get("n") || t.get("k")) {
    ms = ctx.ints(t, "m"), ns = ctx.ints(t, "n"), ks = ctx.ints(t, "k");
    if (ms.empty() || ns.empty() || ks.empty()) ctx.fail(node, "m, n and k must all be given (each a list of sizes)");
  }
  if (shapes.empty() && ms.empty()) ctx.fail(node, "a problem set needs 'shapes' or 'm', 'n' and 'k'");
  auto dtypes = ctx.strings(t, "dtypes");
  if (dtypes.empty()) dtypes = {"f32"};
  // Without a list: nn, and for FP8 inputs nt (the one layout FP8 has).
  const auto layout_list = ctx.strings(t, "layouts");
  // FP8 inputs' scale modes (default: tensor); refused for a set without FP8 inputs.
  auto scales = ctx.strings(t, "scales");
  // The operands the program keeps constant (its weights, ["b"]): copied once, not per call.
  int32_t constant = 0;
  for (auto& c : ctx.strings(t, "constant")) {
    const int32_t bit = parse_constant(c, ctx.at_key(t, "constant"));
    if (constant & bit) ctx.fail(*t.get("constant"), fmt::format("operand '{}' is named twice", c));
    constant |= bit;
  }
  // Counted before anything is expanded: the product of a few lists can be astronomical.
  const uint64_t mnk = times({ms.size(), ns.size(), ks.size()});
  const uint64_t sizes = mnk > std::numeric_limits<uint64_t>::max() - shapes.size() ? mnk : mnk + shapes.size();
  const uint64_t count =
      times({sizes, dtypes.size(), std::max<size_t>(1, layout_list.size()), std::max<size_t>(1, scales.size())});
  if (count > max_problems - job.problems.size())  // never below 0: the sets before were within the limit
    ctx.fail(node, fmt::format("this problem set names {} problems ({} shapes{}, {} dtypes, {} layouts){}; a job may "
                               "have at most {} (--max-problems N raises the limit)",
                               count, shapes.size(),
                               ms.empty() ? "" : fmt::format(" + {} m x {} n x {} k", ms.size(), ns.size(), ks.size()),
                               dtypes.size(), std::max<size_t>(1, layout_list.size()),
                               job.problems.empty() ? "" : fmt::format(", after {} before it", job.problems.size()),
                               max_problems));
  for (auto m : ms)
    for (auto n : ns)
      for (auto k : ks) shapes.push_back({m, n, k});
  auto out = ctx.get<std::string>(t, "out_dtype", "a string");
  auto fams = ctx.strings(t, "families");
  bool any_fp8 = false;
  for (auto& d : dtypes) {
    auto [in, in_b] = parse_in_types(d, ctx.at_key(t, "dtypes"));
    any_fp8 |= is_fp8(in);
    DType od = out ? parse_dtype(*out, ctx.at_key(t, "out_dtype")) : Problem::default_out(in);
    if (od == DType::tf32) ctx.fail(*t.get("out_dtype"), "out_dtype tf32 is not a storage type; use f32");
    std::vector<std::string> layouts = layout_list;
    if (layouts.empty()) layouts = {is_fp8(in) ? "nt" : "nn"};
    std::vector<std::optional<ScaleMode>> modes = {std::nullopt};  // the problem's default
    if (is_fp8(in) && !scales.empty()) {
      modes.clear();
      for (auto& sc : scales) modes.push_back(parse_scale_mode(sc, ctx.at_key(t, "scales")));
    }
    for (auto& l : layouts) {
      Layout lay = parse_layout(l, ctx.at_key(t, "layouts"));
      for (auto mode : modes)
        for (auto& s : shapes) {
          Problem p;
          try {
            p = Problem::make(s[0], s[1], s[2], in, od, lay, in_b, mode);
            p.constant = constant;
          } catch (const InputError& e) {
            ctx.fail(node, fmt::format("{}x{}x{} {} {}: {}", s[0], s[1], s[2], d, l, e.what()));
          }
          ctx.apply(t, strides, p);
          add_problem(job, seen, p, fams, fixed);
        }
    }
  }
  if (!scales.empty() && !any_fp8)
    ctx.fail(*t.get("scales"), "'scales' are for FP8 inputs (dtypes e4m3, e5m2); this set has none");
}

}  // namespace

Job parse_job(std::string_view text, const std::string& source_name, uint64_t max_problems) {
  Ctx ctx{source_name};
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: malformed TOML: {}", source_name, b.line, b.column, e.description()));
  }
  Job job;
  job.source = source_name;
  ctx.where = &job.where;
  ctx.only_keys(root, {"name", "description", "tune", "problems"}, "the job");
  job.name = ctx.get<std::string>(root, "name", "a string").value_or(std::filesystem::path(source_name).stem().string());
  job.description = ctx.get<std::string>(root, "description", "a string").value_or("");
  if (const toml::node* tn = root.get("tune")) parse_tune(ctx, *tn, job);
  const toml::node* pn = root.get("problems");
  if (!pn) throw InputError(fmt::format("{}: no [[problems]]: a job needs at least one problem set", source_name));
  const toml::array* arr = pn->as_array();
  if (!arr || !arr->is_array_of_tables()) ctx.fail(*pn, "'problems' must be an array of tables ([[problems]])");
  std::map<std::string, size_t> seen;  // problem key -> its index in job.problems
  for (auto& node : *arr) parse_problem_set(ctx, node, job, seen, max_problems);
  return job;
}

Job load_job(const std::filesystem::path& file, uint64_t max_problems, const std::string& flag) {
  check_input_file(file, flag + ": " + file.string());
  std::ifstream f(file);
  if (!f) throw InputError(fmt::format("{}: cannot read '{}'", flag, file.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_job(ss.str(), file.string(), max_problems);
}

std::string Job::at(const std::string& what) const {
  auto it = where.find(what);
  return it != where.end() ? it->second : source;
}

}  // namespace gt::search
