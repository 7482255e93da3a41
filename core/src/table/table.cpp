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
// Reading: TOML and JSON become the same raw form, then one validator checks it.

namespace {

struct RawValue {
  std::variant<std::monostate, int64_t, double, std::string, bool> v;
  std::string type;  // as the format calls it, for messages
  int line = 0;      // 0: unknown
};
struct RawTable {
  std::map<std::string, RawValue> fields;
  int line = 0;
};

const std::set<std::string> kEntryFields = {
    "device",    "m",       "n",       "k",          "dtype",   "b_dtype", "out_dtype",      "layout",
    "align",     "scale",   "constant", "family",    "family_version", "source_hash", "config", "params",
    "transform", "time_us", "tflops",  "measured_at", "arch",   "driver",  "cuda_runtime",   "nvrtc",
    "library",   "gemmtune_version", "row_uuid", "origin", "replay"};
const std::set<std::string> kEvidenceFields = {
    "device", "m", "n", "k", "dtype", "b_dtype", "out_dtype", "layout", "align", "scale", "constant", "family",
    "config", "transform", "rule", "radius", "neighbours", "worst", "tolerance", "measured_at"};
const std::set<std::string> kHeaderFields = {"gemmtune_table", "generated_at", "generator", "source", "entries",
                                             "evidence"};

class EntryReader {
 public:
  EntryReader(const RawTable& t, std::string where) : t_(t), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& msg, int line = 0) const {
    if (line == 0) line = t_.line;
    std::string at = line > 0 ? fmt::format("{} (line {})", where_, line) : where_;
    if (field.empty()) throw InputError(fmt::format("{}: {}", at, msg));
    throw InputError(fmt::format("{}: field '{}': {}", at, field, msg));
  }
  const RawValue* find(const std::string& f) const {
    auto it = t_.fields.find(f);
    return it == t_.fields.end() ? nullptr : &it->second;
  }
  const RawValue& need(const std::string& f) const {
    if (auto* v = find(f)) return *v;
    fail(f, "missing (required)");
  }
  std::string str(const std::string& f, bool required) const {
    const RawValue* v = required ? &need(f) : find(f);
    if (!v) return "";
    if (auto* s = std::get_if<std::string>(&v->v)) return *s;
    fail(f, fmt::format("expected a string, got {}", v->type), v->line);
  }
  int64_t integer(const std::string& f, int64_t lo, int64_t hi) const {
    const RawValue& v = need(f);
    auto* i = std::get_if<int64_t>(&v.v);
    if (!i) fail(f, fmt::format("expected an integer, got {}", v.type), v.line);
    if (*i < lo || *i > hi) fail(f, fmt::format("{} is out of range [{}, {}]", *i, lo, hi), v.line);
    return *i;
  }
  std::optional<double> number(const std::string& f, bool required) const {
    const RawValue* v = required ? &need(f) : find(f);
    if (!v) return std::nullopt;
    double d;
    if (auto* i = std::get_if<int64_t>(&v->v))
      d = double(*i);
    else if (auto* x = std::get_if<double>(&v->v))
      d = *x;
    else
      fail(f, fmt::format("expected a number, got {}", v->type), v->line);
    if (!std::isfinite(d)) fail(f, fmt::format("{} is not a finite number", d), v->line);
    return d;
  }
  bool boolean(const std::string& f) const {
    const RawValue* v = find(f);
    if (!v) return false;
    if (auto* b = std::get_if<bool>(&v->v)) return *b;
    fail(f, fmt::format("expected true or false, got {}", v->type), v->line);
  }
  int line_of(const std::string& f) const {
    auto* v = find(f);
    return v ? v->line : t_.line;
  }
  void only_known(const std::set<std::string>& known) const {
    for (auto& [k, v] : t_.fields)
      if (!known.count(k)) {
        std::string list;
        for (auto& n : known) list += (list.empty() ? "" : ", ") + n;
        fail(k, fmt::format("unknown field (known: {})", list), v.line);
      }
  }

 private:
  const RawTable& t_;
  std::string where_;
};

bool valid_family_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// The key fields of an entry (and of evidence, which names its entry by them).
ResultKey read_key(const EntryReader& r) {
  ResultKey key;
  key.device_name = r.str("device", true);
  if (key.device_name.empty()) r.fail("device", "is empty", r.line_of("device"));
  key.m = r.integer("m", 1, kMaxDim);
  key.n = r.integer("n", 1, kMaxDim);
  key.k = r.integer("k", 1, kMaxDim);
  auto dtype = [&](const char* f) {
    std::string s = r.str(f, true);
    try {
      return parse_dtype(s, f);
    } catch (const InputError&) {
      r.fail(f, fmt::format("unknown dtype '{}' (expected f32, tf32, f16, bf16, e4m3 or e5m2)", s), r.line_of(f));
    }
  };
  key.in = dtype("dtype");
  key.out = dtype("out_dtype");
  if (key.out == DType::tf32)
    r.fail("out_dtype", "tf32 is an input mode, not a storage type (use f32)", r.line_of("out_dtype"));
  // Format 3: B's type and the scale mode (older tables: B's type is A's, no scales).
  key.in_b = r.find("b_dtype") ? dtype("b_dtype") : key.in;
  if (r.find("scale")) {
    std::string s = r.str("scale", true);
    try {
      key.scale = s == "none" ? ScaleMode::none : parse_scale_mode(s, "scale");
    } catch (const InputError&) {
      r.fail("scale", fmt::format("unknown scale mode '{}' (expected none, tensor, row or block)", s), r.line_of("scale"));
    }
  }
  // Format 4: the operands the entry's timing took as constant (older tables: none).
  if (r.find("constant")) {
    std::string s = r.str("constant", false);
    try {
      key.constant = parse_constant(s, "constant");
    } catch (const InputError&) {
      r.fail("constant", fmt::format("unknown operands '{}' (expected \"\", \"a\", \"b\" or \"a,b\")", s),
             r.line_of("constant"));
    }
  }
  {
    std::string s = r.str("layout", true);
    try {
      key.layout = parse_layout(s, "layout");
    } catch (const InputError&) {
      r.fail("layout", fmt::format("unknown layout '{}' (expected nn, nt, tn or tt)", s), r.line_of("layout"));
    }
  }
  key.align = int32_t(r.integer("align", 1, 16));
  if (key.align & (key.align - 1))
    r.fail("align", fmt::format("{} is not a power of two (1, 2, 4, 8 or 16 bytes)", key.align), r.line_of("align"));
  try {  // an FP8 key no GPU could run (a layout other than nt, e5m2 x e5m2, scales without FP8, ...)
    TableEntry e;
    e.key = key;
    problem_of(e);
  } catch (const InputError& bad) {
    r.fail("", fmt::format("the key {} is not a problem gemmtune runs: {}", key.text(), bad.what()));
  }
  return key;
}

// A family name and a config name of it (a transform is its own field).
void read_config(const EntryReader& r, std::string& family, std::string& config, Transform& transform) {
  family = r.str("family", true);
  if (!valid_family_name(family))
    r.fail("family", fmt::format("'{}' is not a family name (lower case letters, digits, '_')", family),
           r.line_of("family"));
  config = r.str("config", true);
  if (config.rfind(family, 0) != 0)
    r.fail("config", fmt::format("'{}' is not a config name of family '{}' (it must start with the family name)",
                                 config, family),
           r.line_of("config"));
  if (config.find('+') != std::string::npos)
    r.fail("config", fmt::format("'{}' is not a family's config name: a transform is its own field ('transform')",
                                 config),
           r.line_of("config"));
  if (r.find("transform")) {
    std::string t = r.str("transform", true);
    try {
      transform = parse_transform(t, "transform");
    } catch (const InputError&) {
      r.fail("transform", fmt::format("unknown transform '{}' (expected none, pad, round, swap or pad+swap)", t),
             r.line_of("transform"));
    }
  }
}

TableEntry read_entry(const RawTable& t, const std::string& where) {
  EntryReader r(t, where);
  r.only_known(kEntryFields);
  TableEntry e;
  e.key = read_key(r);
  read_config(r, e.family, e.config, e.transform);
  e.params = r.str("params", false);
  e.time_us = *r.number("time_us", true);
  if (e.time_us <= 0) r.fail("time_us", fmt::format("{} is not a positive time", e.time_us), r.line_of("time_us"));
  auto tf = r.number("tflops", false);
  if (tf && *tf < 0) r.fail("tflops", fmt::format("{} is negative", *tf), r.line_of("tflops"));
  e.tflops = tf ? *tf : 2.0 * double(e.key.m) * double(e.key.n) * double(e.key.k) / (e.time_us * 1e-6) / 1e12;
  if (!std::isfinite(e.tflops))  // a time so small (1e-300) that the rate overflows: the table could not be written
    r.fail("time_us", fmt::format("{} is too small to be a time (the rate it implies is not a finite number)", e.time_us),
           r.line_of("time_us"));
  e.family_version = r.str("family_version", false);
  e.source_hash = r.str("source_hash", false);
  e.measured_at = r.str("measured_at", false);
  e.arch = r.str("arch", false);
  e.driver = r.str("driver", false);
  e.cuda_runtime = r.str("cuda_runtime", false);
  e.nvrtc = r.str("nvrtc", false);
  e.library = r.str("library", false);
  e.gemmtune_version = r.str("gemmtune_version", false);
  e.row_uuid = r.str("row_uuid", false);
  e.origin = r.str("origin", false);
  e.replay = r.boolean("replay");
  return e;
}

TransferEvidence read_evidence(const RawTable& t, const std::string& where) {
  EntryReader r(t, where);
  r.only_known(kEvidenceFields);
  TransferEvidence ev;
  ev.from = read_key(r);
  read_config(r, ev.family, ev.config, ev.transform);
  std::string rule = r.str("rule", true);
  try {
    ev.rule = parse_rule(rule, "rule");
  } catch (const InputError&) {
    ev.rule = Rule::exact;
  }
  if (ev.rule != Rule::nearest && ev.rule != Rule::transferred && ev.rule != Rule::adapted)
    r.fail("rule", fmt::format("'{}' is not a transfer (expected nearest, transferred or adapted)", rule),
           r.line_of("rule"));
  ev.radius = *r.number("radius", true);
  if (ev.radius < 0) r.fail("radius", fmt::format("{} is not a distance (0 or more)", ev.radius), r.line_of("radius"));
  ev.neighbours = r.integer("neighbours", 1, std::numeric_limits<int32_t>::max());
  ev.worst = *r.number("worst", true);
  if (ev.worst <= 0) r.fail("worst", fmt::format("{} is not a time ratio (above 0)", ev.worst), r.line_of("worst"));
  ev.tolerance = *r.number("tolerance", true);
  if (ev.tolerance < 0 || ev.tolerance > 1)
    r.fail("tolerance", fmt::format("{} is not a fraction from 0 to 1", ev.tolerance), r.line_of("tolerance"));
  ev.measured_at = r.str("measured_at", false);
  return ev;
}

void read_header(const RawTable& t, const std::string& where, TableInfo& info) {
  EntryReader r(t, where);
  r.only_known(kHeaderFields);
  info.format_version = int(r.integer("gemmtune_table", 1, std::numeric_limits<int32_t>::max()));
  if (info.format_version > kTableFormatVersion)
    r.fail("gemmtune_table",
           fmt::format("format version {} was written by a newer gemmtune; this one ({}) reads up to version {}",
                       info.format_version, kGemmtuneVersion, kTableFormatVersion),
           r.line_of("gemmtune_table"));
  info.generated_at = r.str("generated_at", false);
  info.generator = r.str("generator", false);
  info.source = r.str("source", false);
}

// --- TOML

RawValue raw_of(const toml::node& n) {
  RawValue v;
  v.line = int(n.source().begin.line);
  if (auto* i = n.as_integer()) {
    v.v = int64_t(i->get());
    v.type = "an integer";
  } else if (auto* d = n.as_floating_point()) {
    v.v = d->get();
    v.type = "a float";
  } else if (auto* s = n.as_string()) {
    v.v = s->get();
    v.type = "a string";
  } else if (auto* b = n.as_boolean()) {
    v.v = b->get();
    v.type = "a boolean";
  } else if (n.is_table()) {
    v.type = "a table";
  } else if (n.is_array()) {
    v.type = "an array";
  } else {
    v.type = "a date or time";
  }
  return v;
}

RawTable raw_of_table(const toml::table& t) {
  RawTable r;
  r.line = int(t.source().begin.line);
  for (auto&& [k, n] : t) r.fields.emplace(std::string(k.str()), raw_of(n));
  return r;
}

LookupTable parse_toml(std::string_view text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}:{}: not valid TOML: {}", origin, e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }
  LookupTable t;
  t.origin = origin;
  RawTable head = raw_of_table(root);
  if (!head.fields.count("gemmtune_table"))
    throw InputError(fmt::format("{}: not a gemmtune table: the field 'gemmtune_table' (the format version) is missing",
                                 origin));
  read_header(head, origin, t.info);
  // Each array of tables ([[entries]], [[evidence]]) through its reader.
  auto each = [&](const char* field, auto&& read) {
    const toml::node* en = root.get(field);
    if (!en) return;
    const toml::array* arr = en->as_array();
    if (!arr)
      throw InputError(fmt::format("{}:{}: field '{}': expected an array of tables ([[{}]])", origin,
                                   en->source().begin.line, field, field));
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::node& n = *arr->get(i);
      std::string where = fmt::format("{}: {}[{}]", origin, field, i);
      const toml::table* et = n.as_table();
      if (!et) throw InputError(fmt::format("{} (line {}): expected a table", where, n.source().begin.line));
      read(raw_of_table(*et), where);
    }
  };
  each("entries", [&](const RawTable& rt, const std::string& w) { t.entries.push_back(read_entry(rt, w)); });
  each("evidence", [&](const RawTable& rt, const std::string& w) { t.evidence.push_back(read_evidence(rt, w)); });
  return t;
}

// --- JSON

RawValue raw_of(const nlohmann::json& j) {
  RawValue v;
  switch (j.type()) {
    case nlohmann::json::value_t::number_integer:
      v.v = j.get<int64_t>();
      v.type = "an integer";
      break;
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u <= uint64_t(std::numeric_limits<int64_t>::max())) {
        v.v = int64_t(u);
        v.type = "an integer";
      } else {
        v.type = "an integer beyond 2^63";  // no field holds one
      }
      break;
    }
    case nlohmann::json::value_t::number_float:
      v.v = j.get<double>();
      v.type = "a float";
      break;
    case nlohmann::json::value_t::string:
      v.v = j.get<std::string>();
      v.type = "a string";
      break;
    case nlohmann::json::value_t::boolean:
      v.v = j.get<bool>();
      v.type = "a boolean";
      break;
    case nlohmann::json::value_t::object: v.type = "an object"; break;
    case nlohmann::json::value_t::array: v.type = "an array"; break;
    case nlohmann::json::value_t::null: v.type = "null"; break;
    default: v.type = "an unsupported value"; break;
  }
  return v;
}

RawTable raw_of_object(const nlohmann::json& j) {
  RawTable r;
  for (auto it = j.begin(); it != j.end(); ++it) r.fields.emplace(it.key(), raw_of(it.value()));
  return r;
}

LookupTable parse_json(std::string_view text, const std::string& origin) {
  // Strict: a key given twice in one object is refused, as TOML refuses it (json_text.hpp).
  const nlohmann::json root = parse_json_text(text, origin);
  if (!root.is_object()) throw InputError(fmt::format("{}: not a gemmtune table: expected a JSON object", origin));
  LookupTable t;
  t.origin = origin;
  if (!root.contains("gemmtune_table"))
    throw InputError(fmt::format("{}: not a gemmtune table: the field 'gemmtune_table' (the format version) is missing",
                                 origin));
  read_header(raw_of_object(root), origin, t.info);
  auto each = [&](const char* field, auto&& read) {
    if (!root.contains(field)) return;
    const auto& arr = root[field];
    if (!arr.is_array()) throw InputError(fmt::format("{}: field '{}': expected an array of objects", origin, field));
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string where = fmt::format("{}: {}[{}]", origin, field, i);
      if (!arr[i].is_object()) throw InputError(fmt::format("{}: expected an object", where));
      read(raw_of_object(arr[i]), where);
    }
  };
  each("entries", [&](const RawTable& rt, const std::string& w) { t.entries.push_back(read_entry(rt, w)); });
  each("evidence", [&](const RawTable& rt, const std::string& w) { t.evidence.push_back(read_evidence(rt, w)); });
  return t;
}

}  // namespace

LookupTable LookupTable::parse(std::string_view text, TableFormat format, const std::string& origin) {
  LookupTable t;
  switch (format) {
    case TableFormat::toml: t = parse_toml(text, origin); break;
    case TableFormat::json: t = parse_json(text, origin); break;
    case TableFormat::csv:
    case TableFormat::cpp:
      throw InputError(fmt::format("{}: a {} table cannot be read back; export it as toml or json", origin,
                                   to_string(format)));
  }
  t.check_unique();
  t.sort();
  return t;
}

LookupTable LookupTable::load(const fs::path& file) {
  if (std::string kind = special_file_kind(file); !kind.empty())  // a FIFO would block, /dev/zero fill the memory
    throw InputError(fmt::format("{}: is {}, not a table", file.string(), kind));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read (missing or not readable)", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t first = text.find_first_not_of(" \t\r\n");
  auto by_ext = format_of_extension(file);
  TableFormat f;
  if (first != std::string::npos && text[first] == '{')
    f = TableFormat::json;
  else if (by_ext == TableFormat::csv || by_ext == TableFormat::cpp)
    f = *by_ext;  // refused with the reason by parse()
  else if (by_ext == TableFormat::json)
    f = TableFormat::json;
  else
    f = TableFormat::toml;
  if (first == std::string::npos)
    throw InputError(fmt::format("{}: is empty, not a table (expected TOML or JSON with 'gemmtune_table')",
                                 file.string()));
  return parse(text, f, file.string());
}

// ---------------------------------------------------------------------------------------
// Writing

namespace {

// A TOML basic string: always one line, every control character escaped.
std::string toml_string(std::string_view s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f)
          o += fmt::format("\\u{:04X}", unsigned(c));
        else
          o += char(c);
    }
  }
  return o + "\"";
}

// Shortest text that reads back as the same double; TOML wants a '.' or an exponent.
std::string float_text(double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// The entry's fields in file order: (name, kind, value text); kinds: s string, i int, f float, b bool.
struct Field {
  const char* name;
  char kind;
  std::string s;
  int64_t i = 0;
  double f = 0;
  bool b = false;
};
Field S(const char* n, const std::string& v) { return Field{n, 's', v}; }
Field I(const char* n, int64_t v) { return Field{n, 'i', {}, v}; }
Field F(const char* n, double v) { return Field{n, 'f', {}, 0, v}; }

// The key's fields, as an entry and its evidence spell them.
std::vector<Field> key_fields(const ResultKey& k) {
  return {S("device", k.device_name), I("m", k.m), I("n", k.n), I("k", k.k), S("dtype", to_string(k.in)),
          S("b_dtype", to_string(k.in_b)), S("out_dtype", to_string(k.out)), S("layout", to_string(k.layout)),
          I("align", k.align), S("scale", to_string(k.scale)), S("constant", constant_text(k.constant))};
}

std::vector<Field> fields_of(const TransferEvidence& ev) {
  std::vector<Field> f = key_fields(ev.from);
  for (Field x : {S("family", ev.family), S("config", ev.config), S("transform", to_string(ev.transform)),
                  S("rule", to_string(ev.rule)), F("radius", ev.radius), I("neighbours", ev.neighbours),
                  F("worst", ev.worst), F("tolerance", ev.tolerance), S("measured_at", ev.measured_at)})
    f.push_back(std::move(x));
  return f;
}

std::vector<Field> fields_of(const TableEntry& e) {
  std::vector<Field> f = key_fields(e.key);
  for (Field x : {S("family", e.family),
          S("config", e.config),
          S("params", e.params),
          S("transform", to_string(e.transform)),
          F("time_us", e.time_us),
          F("tflops", e.tflops),
          S("family_version", e.family_version),
          S("source_hash", e.source_hash),
          S("measured_at", e.measured_at),
          S("arch", e.arch),
          S("driver", e.driver),
          S("cuda_runtime", e.cuda_runtime),
          S("nvrtc", e.nvrtc),
          S("library", e.library),
          S("gemmtune_version", e.gemmtune_version),
          S("row_uuid", e.row_uuid),
          S("origin", e.origin),
          Field{"replay", 'b', {}, 0, 0, e.replay}})
    f.push_back(std::move(x));
  return f;
}

template <class T>
nlohmann::ordered_json entry_json(const T& e) {
  nlohmann::ordered_json j;
  for (auto& f : fields_of(e)) {
    switch (f.kind) {
      case 's': j[f.name] = f.s; break;
      case 'i': j[f.name] = f.i; break;
      case 'f': j[f.name] = f.f; break;
      case 'b': j[f.name] = f.b; break;
    }
  }
  return j;
}

std::string to_toml(const LookupTable& t) {
  std::string o = fmt::format("# gemmtune lookup table: {} entr{}. Read by `gemmtune lookup --table` and the "
                              "gemmtune_runtime library.\n",
                              t.entries.size(), t.entries.size() == 1 ? "y" : "ies");
  o += fmt::format("gemmtune_table = {}\n", t.info.format_version);
  if (!t.info.generated_at.empty()) o += "generated_at = " + toml_string(t.info.generated_at) + "\n";
  if (!t.info.generator.empty()) o += "generator = " + toml_string(t.info.generator) + "\n";
  if (!t.info.source.empty()) o += "source = " + toml_string(t.info.source) + "\n";
  auto table_of = [&o](const char* array, const std::vector<Field>& fields) {
    o += fmt::format("\n[[{}]]\n", array);
    for (auto& f : fields) {
      o += f.name;
      o += " = ";
      switch (f.kind) {
        case 's': o += toml_string(f.s); break;
        case 'i': o += std::to_string(f.i); break;
        case 'f': o += float_text(f.f); break;
        case 'b': o += f.b ? "true" : "false"; break;
      }
      o += "\n";
    }
  };
  for (auto& e : t.entries) table_of("entries", fields_of(e));
  if (!t.evidence.empty())
    o += "\n# Evidence: transfers from an entry to shapes near it, timed on its GPU (gemmtune validate) against the\n"
         "# library's default, that held within the tolerance up to `radius` (log-space distance). Elsewhere a shape\n"
         "# the table does not hold gets the default (docs/lookup.md).\n";
  for (auto& ev : t.evidence) table_of("evidence", fields_of(ev));
  return o;
}

std::string to_json_text(const LookupTable& t) {
  nlohmann::ordered_json root;
  root["gemmtune_table"] = t.info.format_version;
  if (!t.info.generated_at.empty()) root["generated_at"] = t.info.generated_at;
  if (!t.info.generator.empty()) root["generator"] = t.info.generator;
  if (!t.info.source.empty()) root["source"] = t.info.source;
  root["entries"] = nlohmann::ordered_json::array();
  for (auto& e : t.entries) root["entries"].push_back(entry_json(e));
  if (!t.evidence.empty()) {
    root["evidence"] = nlohmann::ordered_json::array();
    for (auto& ev : t.evidence) root["evidence"].push_back(entry_json(ev));
  }
  // JSON text is UTF-8: a byte sequence that is not (a mangled name) becomes U+FFFD.
  return root.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// RFC 4180: quoted when it holds a comma, quote or line break; quotes doubled.
std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string to_csv(const LookupTable& t) {
  std::string o;
  TableEntry dummy;
  auto header = fields_of(dummy);
  for (size_t i = 0; i < header.size(); ++i) o += (i ? "," : "") + std::string(header[i].name);
  o += "\r\n";
  for (auto& e : t.entries) {
    auto fs = fields_of(e);
    for (size_t i = 0; i < fs.size(); ++i) {
      if (i) o += ",";
      switch (fs[i].kind) {
        case 's': o += csv_field(fs[i].s); break;
        case 'i': o += std::to_string(fs[i].i); break;
        case 'f': o += fmt::format("{}", fs[i].f); break;
        case 'b': o += fs[i].b ? "true" : "false"; break;
      }
    }
    o += "\r\n";
  }
  return o;
}

bool valid_cpp_namespace(const std::string& ns) {
  static const std::set<std::string> keywords = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "while", "std"};
  size_t pos = 0;
  while (true) {
    size_t end = ns.find("::", pos);
    std::string part = ns.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (part.empty() || keywords.count(part) || std::isdigit(static_cast<unsigned char>(part[0]))) return false;
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    if (part.find("__") != std::string::npos || (part[0] == '_' && part.size() > 1 && std::isupper(part[1])))
      return false;  // reserved identifiers
    if (end == std::string::npos) return true;
    pos = end + 2;
  }
}

// A struct of `fields`' names and types, and a constexpr array of it holding `rows`.
std::string cpp_array(const char* type, const char* name, const std::vector<Field>& fields,
                      const std::vector<std::vector<Field>>& rows, const std::vector<std::string>& comments) {
  std::string o = fmt::format("struct {} {{\n", type);
  for (auto& f : fields) {
    const char* t = f.kind == 's' ? "std::string_view" : f.kind == 'i' ? "std::int64_t" : f.kind == 'f' ? "double" : "bool";
    o += fmt::format("  {} {};\n", t, f.name);
  }
  o += "};\n\n";
  o += fmt::format("inline constexpr std::array<{}, {}> {} = {{{{\n", type, rows.size(), name);
  for (size_t r = 0; r < rows.size(); ++r) {
    o += "    // " + cpp_comment_text(comments[r]) + "\n    {";
    const auto& fs = rows[r];
    for (size_t i = 0; i < fs.size(); ++i) {
      if (i) o += ", ";
      switch (fs[i].kind) {
        case 's': o += "\"" + cpp_string_body(fs[i].s) + "\"sv"; break;
        case 'i': o += std::to_string(fs[i].i); break;
        case 'f': o += float_text(fs[i].f); break;
        case 'b': o += fs[i].b ? "true" : "false"; break;
      }
    }
    o += "},\n";
  }
  return o + "}};\n\n";
}

std::string to_cpp(const LookupTable& t, const std::string& ns) {
  if (!valid_cpp_namespace(ns))
    throw InputError(fmt::format("--namespace: '{}' is not a C++ namespace name", cpp_comment_text(ns)));
  std::string o;
  o += "// gemmtune lookup table: the tuned config per problem key. Generated by `gemmtune export --format cpp`;\n";
  o += "// do not edit. Self-contained C++17: constexpr data and search functions, no library needed.\n";
  o += fmt::format("// {} entr{}; generated {} by {}; from {}.\n", t.entries.size(), t.entries.size() == 1 ? "y" : "ies",
                   cpp_comment_text(t.info.generated_at.empty() ? "(unknown time)" : t.info.generated_at),
                   cpp_comment_text(t.info.generator.empty() ? "gemmtune" : t.info.generator),
                   cpp_comment_text(t.info.source.empty() ? "(unknown source)" : t.info.source));
  o += "// Strings are escaped byte for byte (octal escapes): device, family and config names cannot end a\n";
  o += "// string or a comment early.\n";
  o += "#pragma once\n\n#include <array>\n#include <cmath>\n#include <cstddef>\n#include <cstdint>\n"
       "#include <string_view>\n\n";
  o += fmt::format("namespace {} {{\n\n", ns);
  o += "using namespace std::string_view_literals;\n\n";
  o += "inline constexpr int kFormatVersion = " + std::to_string(t.info.format_version) + ";\n\n";
  o += "// One tuned result. The key: device, m, n, k, dtype (A), b_dtype (B), out_dtype (C), layout (first\n"
       "// letter A, second B; n = as written, t = stored transposed), align (bytes dividing every leading\n"
       "// dimension times the element size and every base pointer), scale (FP8: tensor, row or block;\n"
       "// none otherwise), constant (the operands the time assumes the program prepared once: \"b\" for\n"
       "// weights; such an entry serves only a program that keeps them constant). What to run: family + config (its canonical name); params spells the same config\n"
       "// as name=value pairs; transform says how to run it (below). The rest is where it was measured.\n";
  o += R"(//
// transform: "none" runs the config on the problem as it is. Otherwise the config is of its family
// for a transformed problem, and a program must do what gemmtune's runtime does (docs/transforms.md):
//   "pad"      copy each operand whose leading dimension (times the element size) or base pointer is not
//              a multiple of 16 bytes into a buffer whose leading dimension is padded_ld(), zeros in the
//              padding; when both A and B are copied, K becomes padded_ld(K), the extra K zeros too. Run
//              the config on those buffers, with C in a padded buffer (copied back, cropped) unless C's
//              ldc and pointer are 16-byte aligned. An operand of one stored row is never copied: its
//              leading dimension is free, so the config is given padded_ld() of its columns instead.
//   "swap"     run the config on C^T = B^T A^T: B as its A, A as its B (the stored matrices as they are),
//              M and N exchanged, each layout letter flipped (nn <-> tt; nt and tn stay). Served only where
//              C is a single row (M = 1) or a single column with ldc = 1, which are C^T's own buffer.
//   "round"    as pad, but M, N and K all become padded_ld() of themselves, so every operand spanning a
//              size that grows is copied too (zeros in the extra rows and columns).
//   "pad+swap" swap, then pad's copies; the config writes C^T into a buffer copied back transposed.
// A constant operand (constant = "b") is copied once, when the program prepares its weights, not per call.
// A program that cannot do this runs cuBLASLt's own choice for such an entry instead.
)";
  o += "constexpr std::int64_t padded_ld(std::int64_t elements, std::int64_t element_bytes) {\n"
       "  return (elements * element_bytes + 15) / 16 * 16 / element_bytes;\n}\n\n";
  std::vector<std::vector<Field>> rows;
  std::vector<std::string> comments;
  for (auto& e : t.entries) {
    rows.push_back(fields_of(e));
    comments.push_back(e.text());
  }
  o += cpp_array("Entry", "kEntries", fields_of(TableEntry{}), rows, comments);
  o += "// Evidence (gemmtune validate): the entry of this key, family and config answers shapes up to `radius`\n"
       "// away by `rule` no slower than the library's default, as timed on `device`; elsewhere the default.\n";
  rows.clear();
  comments.clear();
  for (auto& ev : t.evidence) {
    rows.push_back(fields_of(ev));
    comments.push_back(fmt::format("{} {} up to {:.3f}", ev.from.text(), to_string(ev.rule), ev.radius));
  }
  o += cpp_array("Evidence", "kEvidence", fields_of(TransferEvidence{}), rows, comments);
  o += R"(// Whether an entry is for these types, layout, alignment and scales (an empty b_dtype: dtype's). An
// entry timed with constant operands serves only a program that keeps exactly those constant.
constexpr bool same_kind(const Entry& e, std::string_view dtype, std::string_view out_dtype, std::string_view layout,
                         std::int64_t align, std::string_view b_dtype, std::string_view scale,
                         std::string_view constant = {}) {
  return e.dtype == dtype && e.b_dtype == (b_dtype.empty() ? dtype : b_dtype) && e.out_dtype == out_dtype &&
         e.layout == layout && e.align == align && e.scale == scale && (e.constant.empty() || e.constant == constant);
}

// The entry tuned for exactly this key, or nullptr. An empty device matches every device.
constexpr const Entry* find_exact(std::string_view device, std::int64_t m, std::int64_t n, std::int64_t k,
                                  std::string_view dtype, std::string_view out_dtype, std::string_view layout,
                                  std::int64_t align, std::string_view b_dtype = {},
                                  std::string_view scale = "none", std::string_view constant = {}) {
  for (const Entry& e : kEntries)
    if ((device.empty() || e.device == device) && e.m == m && e.n == n && e.k == k &&
        same_kind(e, dtype, out_dtype, layout, align, b_dtype, scale, constant))
      return &e;
  return nullptr;
}

// Distance between two shapes in log space: sqrt(ln^2(m/m') + ln^2(n/n') + ln^2(k/k')).
inline double shape_distance(std::int64_t m, std::int64_t n, std::int64_t k, const Entry& e) {
  double dm = std::log(double(m) / double(e.m)), dn = std::log(double(n) / double(e.n)),
         dk = std::log(double(k) / double(e.k));
  return std::sqrt(dm * dm + dn * dn + dk * dk);
}

// Whether kEvidence backs entry e's own config at distance d on `device` (the rule "nearest": the
// header can neither transfer a pick nor adapt a parameter).
inline bool backed(const Entry& e, double d, std::string_view device) {
  for (const Evidence& v : kEvidence)
    if (!device.empty() && v.device == device && e.device == device && v.m == e.m && v.n == e.n && v.k == e.k &&
        v.dtype == e.dtype && v.b_dtype == e.b_dtype && v.out_dtype == e.out_dtype && v.layout == e.layout &&
        v.align == e.align && v.scale == e.scale && v.constant == e.constant && v.family == e.family && v.config == e.config &&
        v.transform == e.transform && v.rule == "nearest" && d <= v.radius)
      return true;
  return false;
}

// The exact key's entry, else the closest tuned shape of the same dtypes, out_dtype, layout, align and scale
// whose evidence on `device` reaches this shape, within max_distance and of the same M regime (M <= decode_max_m
// is decode, else prefill; 0: one regime; a decode entry serves only its own N), or nullptr: then run the
// library's own choice (cuBLASLt's heuristic pick). Ties: the faster entry. The defaults are gemmtune's
// (docs/lookup.md). Whether the config can run the problem is not checked here, nor whether a cuBLASLt entry
// was the heuristic's pick at its shape, nor can a refused parameter be adapted (gemmtune's runtime does all
// three with the plugins). unbacked = true answers a nearest entry without evidence, as the rule was before.
inline const Entry* find_nearest(std::string_view device, std::int64_t m, std::int64_t n, std::int64_t k,
                                 std::string_view dtype, std::string_view out_dtype, std::string_view layout,
                                 std::int64_t align, double max_distance = 1.3862943611198906,
                                 std::int64_t decode_max_m = 16, std::string_view b_dtype = {},
                                 std::string_view scale = "none", std::string_view constant = {},
                                 bool unbacked = false) {
  const Entry* best = nullptr;
  double best_d = 0;
  for (const Entry& e : kEntries) {
    if ((!device.empty() && e.device != device) ||
        !same_kind(e, dtype, out_dtype, layout, align, b_dtype, scale, constant))
      continue;
    double d = shape_distance(m, n, k, e);
    bool exact = e.m == m && e.n == n && e.k == k;
    if (!exact && (d > max_distance || (e.m <= decode_max_m) != (m <= decode_max_m) ||
                   (m <= decode_max_m && e.n != n) ||  // decode entries serve their own N
                   !(unbacked || backed(e, d, device))))
      continue;
    if (!best || d < best_d || (d == best_d && e.time_us < best->time_us)) {
      best = &e;
      best_d = d;
    }
  }
  return best;
}

)";
  o += fmt::format("}}  // namespace {}\n", ns);
  return o;
}

}  // namespace

void to_json(nlohmann::json& j, const TableEntry& e) { j = nlohmann::json::parse(entry_json(e).dump()); }

std::string cpp_string_body(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    // Printable ASCII other than the quote, backslash and '?' (trigraphs, in pre-C++17 modes)
    // stays; every other byte becomes a three-digit octal escape, which never runs on into
    // the next character the way \x does.
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?')
      o += char(c);
    else
      o += fmt::format("\\{:03o}", unsigned(c));
  }
  return o;
}

std::string cpp_comment_text(std::string_view s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    // A backslash could splice the next line into a // comment (doubling it would not help:
    // splicing comes first), a line break would end it, and "*/" would end a block comment
    // around it: none of them survive as they are.
    if (c == '\\')
      o += "\\x5c";
    else if (c == '*' && i + 1 < s.size() && s[i + 1] == '/')
      o += "*\\/";
    else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*')
      o += "/\\*";
    else if (c == '?' && i + 1 < s.size() && s[i + 1] == '?')
      o += "?\\";
    else if (c < 0x20 || c == 0x7f)
      o += fmt::format("\\x{:02x}", unsigned(c));
    else
      o += char(c);
  }
  return o;
}

std::string LookupTable::serialize(TableFormat format, const std::string& cpp_namespace) const {
  for (auto& e : entries)
    if (!std::isfinite(e.time_us) || !std::isfinite(e.tflops))
      throw RuntimeFailure(fmt::format("table entry {} has a time that is not a finite number", e.text()));
  switch (format) {
    case TableFormat::toml: return to_toml(*this);
    case TableFormat::json: return to_json_text(*this);
    case TableFormat::csv: return to_csv(*this);
    case TableFormat::cpp: return to_cpp(*this, cpp_namespace);
  }
  return {};
}

void LookupTable::save(const fs::path& file, TableFormat format, const std::string& cpp_namespace) const {
  write_file_atomically(file, serialize(format, cpp_namespace));
}

void write_file_atomically(const fs::path& file, std::string_view text) { write_file_replacing(file, text); }

// ---------------------------------------------------------------------------------------
// Lookup

namespace {

std::string quoted_list(const std::vector<std::string>& xs) {
  std::string s;
  for (auto& x : xs) s += (s.empty() ? "'" : ", '") + x + "'";
  return s;
}

// Step 0's first half: whose entries are candidates (see LookupTable::lookup).
std::vector<const TableEntry*> candidate_pool(const LookupTable& t, const LookupPolicy& policy, LookupResult& r) {
  std::vector<const TableEntry*> pool;
  auto take = [&](auto&& keep) {
    for (auto& e : t.entries)
      if (keep(e)) pool.push_back(&e);
    return !pool.empty();
  };
  if (policy.device) {
    r.tier = Tier::device;
    if (take([&](const TableEntry& e) { return e.key.device_name == *policy.device; }) || t.entries.empty())
      return pool;
    if (policy.exact_device) {
      r.device_note = fmt::format("the table has no entries for '{}' (it has {}), and an exact device match was asked "
                                  "for",
                                  *policy.device, quoted_list(t.devices()));
      return pool;
    }
  }
  if (!policy.arch.empty() && take([&](const TableEntry& e) { return e.arch == policy.arch; })) {
    r.tier = Tier::arch;
    if (policy.device) {
      std::set<std::string> from;
      for (auto* e : pool) from.insert(e->key.device_name);
      r.device_note = fmt::format("the table has no entries for '{}'; entries measured on the same architecture ({}: "
                                  "{}) were used",
                                  *policy.device, policy.arch, quoted_list({from.begin(), from.end()}));
    }
    return pool;
  }
  r.tier = Tier::any;
  take([](const TableEntry&) { return true; });
  if (policy.device)
    r.device_note = fmt::format("the table has no entries for '{}' (it has {}){}; entries of every device were "
                                "considered",
                                *policy.device, quoted_list(t.devices()),
                                policy.arch.empty() ? "" : fmt::format(", none measured on {}", policy.arch));
  else if (!policy.arch.empty() && !t.entries.empty())
    r.device_note = fmt::format("no entry was measured on {}; entries of every architecture were considered",
                                policy.arch);
  return pool;
}

struct Candidate {
  const TableEntry* e;
  double d;
};

// Step 0's second half: the pool's entries of the problem's class, nearest first; at equal
// distance (mirror-image shapes, or one key on several devices) the faster entry, then the key
// order: deterministic. An entry timed with constant operands the call did not declare constant
// is passed over (its time left out the copies such a call pays each time).
std::vector<Candidate> candidates_for(const std::vector<const TableEntry*>& pool, const Problem& p, LookupResult& r) {
  std::vector<Candidate> cands;
  for (const TableEntry* e : pool)
    if (e->key.in == p.in && e->key.in_b == p.in_b && e->key.out == p.out && e->key.layout == p.layout &&
        e->key.align == p.align && e->key.scale == p.scale) {
      if (const int32_t undeclared = e->key.constant & ~p.constant) {
        r.passed_over.emplace_back(e->text(), fmt::format("timed with {} constant (copied once, not per call); the "
                                                          "call did not declare {} constant",
                                                          constant_text(undeclared), constant_text(undeclared)));
        continue;
      }
      cands.push_back({e, shape_distance(p.m, p.n, p.k, e->key.m, e->key.n, e->key.k)});
    }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.d != b.d) return a.d < b.d;
    if (a.e->time_us != b.e->time_us) return a.e->time_us < b.e->time_us;
    return std::tie(a.e->key, a.e->family, a.e->config) < std::tie(b.e->key, b.e->family, b.e->config);
  });
  return cands;
}

void answer_with(LookupResult& r, const Candidate& c, MatchKind kind, Rule rule) {
  r.kind = kind;
  r.rule = rule;
  r.family = c.e->family;
  r.config = c.e->config;
  r.params = c.e->params;
  r.transform = c.e->transform;
  r.entry = *c.e;
  r.distance = c.d;
}

void answer_with(LookupResult& r, const Candidate& c, Rule rule, const DefaultChoice& d) {
  answer_with(r, c, MatchKind::nearest, rule);
  r.family = d.family;
  r.config = d.config;
  r.params = d.params;
  r.transform = d.transform;
  if (!d.unchecked.empty()) r.unchecked = d.unchecked;
}

// Why a candidate of another regime or beyond the limit cannot serve a nearest answer ("" when it may).
std::string out_of_reach(const Candidate& c, const Problem& p, const LookupPolicy& policy) {
  if (is_decode(c.e->key.m, policy) != is_decode(p.m, policy))
    return fmt::format("an entry of the {} regime, the problem is of the {} regime (decode_max_m)",
                       regime_text(c.e->key.m, policy), regime_text(p.m, policy));
  // A decode kernel's grid is laid over N (C's one row of tiles, split over K): a config tuned at
  // another N covers the SMs differently, and measured so (docs/lookup.md). K only sets the loop.
  if (is_decode(p.m, policy) && c.e->key.n != p.n)
    return fmt::format("a decode entry of N = {}, the problem's N is {}: decode entries serve their own N",
                       c.e->key.n, p.n);
  if (!(c.d <= policy.max_distance))
    return fmt::format("log-space distance {:.3f} is beyond the limit {:.3f} (max_distance)", c.d, policy.max_distance);
  return {};
}

// Step 1, and step 2's three ways for a candidate in reach: its answer (from `base`, which holds
// what the lookup found so far), or nullopt with why it cannot serve in *why. Throws
// BrokenEntryError as lookup() says.
std::optional<LookupResult> served_by(const LookupTable& t, const Candidate& c, const Problem& p, bool exact,
                                      const LookupPolicy& policy, const LookupHooks& hooks, const LookupResult& base,
                                      std::string* why) {
  LookupResult r = base;
  if (!exact && hooks.transfer)
    if (auto tr = hooks.transfer(*c.e, p)) {
      answer_with(r, c, Rule::transferred, *tr);
      r.transferred = tr->note;
      r.how = fmt::format("nearest (from {}, whose winner was {}, so {} for this shape)", c.e->shape(), tr->note,
                          tr->note);
      return r;
    }
  Verdict v;
  if (hooks.can_implement) {
    try {
      v = hooks.can_implement(*c.e, p);
    } catch (const InputError& ex) {
      // An entry measured on another device (the architecture's or any device's tier): a family's
      // space may depend on the device (cuBLASLt's is its library's answer there), so a config
      // this device's space lacks is an entry that cannot run here, not a broken table.
      if (!policy.device || c.e->key.device_name == *policy.device)
        throw BrokenEntryError(fmt::format("{}: entries[{}] ({}): {}", t.origin.empty() ? "table" : t.origin,
                                           size_t(c.e - t.entries.data()), c.e->text(), ex.what()));
      v = Verdict::cannot(fmt::format("measured on {}, its config is not in the space of {} here: {}",
                                      c.e->key.device_name, *policy.device, ex.what()));
    }
  }
  if (v.kind == Verdict::Kind::cannot) {
    if (!exact && hooks.adapt)
      if (auto a = hooks.adapt(*c.e, p)) {
        answer_with(r, c, Rule::adapted, *a);
        r.adapted = fmt::format("{}: {}", a->note, v.why);
        r.how = fmt::format("nearest (from {}, with {})", c.e->shape(), a->note);
        return r;
      }
    *why = v.why;
    return std::nullopt;
  }
  answer_with(r, c, exact ? MatchKind::exact : MatchKind::nearest, exact ? Rule::exact : Rule::nearest);
  r.how = exact ? std::string("exact")
          : v.kind == Verdict::Kind::unchecked
              ? fmt::format("nearest (from {}; not checked on this machine)", c.e->shape())
              : fmt::format("nearest (from {})", c.e->shape());
  if (v.kind == Verdict::Kind::unchecked) r.unchecked = v.why;
  if (exact) r.backing = Backing::exact;
  return r;
}

// Why no evidence backs entry c's `rule` answer on the asked device at its distance.
std::string no_evidence(const LookupTable& t, const Candidate& c, Rule rule, const LookupPolicy& policy) {
  if (!policy.device)
    return "no device is named, and a transfer is backed only by evidence measured on the asked GPU model";
  if (c.e->key.device_name != *policy.device)
    return fmt::format("measured on {}, not on {}: another GPU model gets the default, never a transfer",
                       c.e->key.device_name, *policy.device);
  for (const TransferEvidence& ev : t.evidence)
    if (ev.from == c.e->key && ev.family == c.e->family && ev.config == c.e->config && ev.rule == rule)
      return fmt::format("its {} answers were validated up to distance {:.3f}, and this problem lies {:.3f} away",
                         to_string(rule), ev.radius, c.d);
  return fmt::format("the table has no evidence that its {} answers hold on {} (gemmtune validate measures it)",
                     to_string(rule), *policy.device);
}

// Whether a transfer may answer instead of the default (docs/lookup.md, "Backed answers"): sets
// its backing, or says why not in *why. *verdict: the online check's, where one was made.
bool back(LookupResult& a, const Candidate& c, const Problem& p, const LookupTable& t, const LookupPolicy& policy,
          const LookupHooks& hooks, std::optional<OnlineVerdict>* verdict, std::string* why) {
  if (a.rule == Rule::transferred && a.transform == Transform::none) {
    a.backing = Backing::default_config;
    a.backing_note = fmt::format("it is {} itself", a.transferred);
    return true;
  }
  if (policy.unbacked_transfers) {
    a.backing = Backing::unbacked;
    a.backing_note = "transfers without evidence were asked for";
    return true;
  }
  if (const TransferEvidence* ev = t.evidence_for(*c.e, a.rule, c.d, policy.device)) {
    a.backing = Backing::evidence;
    a.backing_note = fmt::format("validated on {}: {} neighbour{} up to distance {:.3f} (this problem: {:.3f}), the "
                                 "slowest at {:.3f} of the default's time{}",
                                 ev->from.device_name, ev->neighbours, ev->neighbours == 1 ? "" : "s", ev->radius, c.d,
                                 ev->worst, ev->measured_at.empty() ? "" : ", " + ev->measured_at);
    return true;
  }
  if (hooks.checked) *verdict = hooks.checked(p, a);
  if (*verdict) {
    const OnlineVerdict& v = **verdict;
    const std::string timed = fmt::format("timed online{}: {:.2f} us against the default's {:.2f} us", 
                                          v.where.empty() ? "" : " (" + v.where + ")", v.candidate_us, v.default_us);
    if (v.candidate_kept) {
      a.backing = Backing::online;
      a.backing_note = timed;
      return true;
    }
    *why = timed + ": the default was kept";
    return false;
  }
  *why = no_evidence(t, c, a.rule, policy);
  return false;
}

// Why no entry served, for the default's `reason`.
std::string no_entry_reason(const Problem& p, const std::vector<Candidate>& cands, const LookupResult& r,
                            size_t unreachable, size_t refused, size_t unbacked, const std::string& first_unbacked) {
  std::string cls =
      fmt::format("{}>{} {} alignment {}", to_string(p.in), to_string(p.out), to_string(p.layout), p.align);
  std::string reason;
  if (cands.empty())
    reason = fmt::format("the table has no entry for {}", cls);
  else if (unbacked > 0)
    reason = fmt::format("no answer of its {} entries for {} is backed here ({} out of reach, {} cannot run it, {} not "
                         "backed): the nearest that could serve, {}",
                         cands.size(), cls, unreachable, refused, unbacked, first_unbacked);
  else if (refused == 0)
    reason = fmt::format("none of its {} entries for {} is within reach: the nearest, {}, {}", cands.size(), cls,
                         cands[0].e->shape(), r.passed_over[0].second);
  else
    reason = fmt::format("none of its {} entries for {} can serve it ({} out of reach, {} cannot run it)",
                         cands.size(), cls, unreachable, refused);
  if (!r.device_note.empty()) reason += "; " + r.device_note;
  return reason;
}

// Step 3: r answered with the fallback's default for p; false, with why not in *why, where it has none.
bool answer_default(LookupResult& r, const Problem& p, const DefaultFn& fallback, std::string* why) {
  std::string no;
  auto d = fallback(p, &no);
  if (!d) {
    *why = no.empty() ? "the default cannot run it" : no;
    return false;
  }
  r.kind = MatchKind::fallback;
  r.rule = d->library_pick ? Rule::library_default : Rule::family_default;
  r.how = d->unchecked.empty() ? fmt::format("default ({})", d->note)
                               : fmt::format("default ({}; not named on this machine)", d->note);
  r.family = d->family;
  r.config = d->config;
  r.params = d->params;
  r.transform = d->transform;
  r.unchecked = d->unchecked;
  return true;
}

}  // namespace

LookupResult LookupTable::lookup(const Problem& p, const LookupPolicy& policy, const LookupHooks& hooks) const {
  LookupResult r;
  const std::string table_name = origin.empty() ? "table" : origin;
  if (policy.exact_device && !policy.device)
    throw InputError("an exact device match needs a device: name one (--device, or the runtime's device_name)");
  std::vector<Candidate> cands = candidates_for(candidate_pool(*this, policy, r), p, r);

  size_t unreachable = 0, refused = 0, unbacked = 0;
  std::optional<LookupResult> first;  // the nearest transfer that could serve but is not backed
  bool first_decided = false;         // ... and an online check kept the default over it
  std::string first_text;
  for (const Candidate& c : cands) {
    bool exact = c.e->key.m == p.m && c.e->key.n == p.n && c.e->key.k == p.k;
    if (!exact)
      if (std::string why = out_of_reach(c, p, policy); !why.empty()) {
        r.passed_over.emplace_back(c.e->text(), why);
        ++unreachable;
        continue;
      }
    std::string why;
    std::optional<LookupResult> a = served_by(*this, c, p, exact, policy, hooks, r, &why);
    if (!a) {
      r.passed_over.emplace_back(c.e->text(), why);
      ++refused;
      continue;
    }
    std::optional<OnlineVerdict> verdict;
    if (exact || back(*a, c, p, *this, policy, hooks, &verdict, &why)) return *a;
    r.passed_over.emplace_back(c.e->text(), "not backed: " + why);
    if (unbacked++ == 0) {
      first_text = fmt::format("{} ({}, distance {:.3f}), is not: {}", c.e->shape(), to_string(a->rule), c.d, why);
      first_decided = verdict.has_value();
      first = std::move(a);
    }
  }

  r.reason = no_entry_reason(p, cands, r, unreachable, refused, unbacked, first_text);
  std::string why_no_default = "no default was given";
  if (hooks.fallback && answer_default(r, p, hooks.fallback, &why_no_default)) {
    if (policy.online && first && !first_decided) {
      r.pending = std::make_shared<const LookupResult>(*first);
      r.reason += "; online: that answer is timed against this default on the problem's first calls";
    }
    return r;
  }
  if (first) {  // no default to lose against: the transfer, unbacked, rather than nothing
    first->backing = Backing::unbacked;
    first->backing_note = fmt::format("no default can run this problem here ({}), so nothing to be slower than",
                                      why_no_default);
    return *first;
  }
  std::string passed;
  for (size_t i = 0; i < r.passed_over.size() && i < 5; ++i)
    passed += fmt::format("\n  {}: {}", r.passed_over[i].first, r.passed_over[i].second);
  if (r.passed_over.size() > 5) passed += fmt::format("\n  ... and {} more", r.passed_over.size() - 5);
  throw InputError(fmt::format("{}: nothing to run for {}: {}{}; and no default: {}", table_name, p.key(), r.reason,
                               passed, why_no_default));
}

LookupResult LookupTable::lookup(const Problem& p, const std::optional<std::string>& device,
                                 const CanImplementFn& can_implement, const DefaultFn& fallback,
                                 const TransferFn& transfer) const {
  LookupPolicy policy;
  policy.device = device;
  policy.max_distance = std::numeric_limits<double>::infinity();
  policy.decode_max_m = 0;
  policy.unbacked_transfers = true;
  return lookup(p, policy, LookupHooks{can_implement, fallback, transfer, {}});
}

// ---------------------------------------------------------------------------------------
// From the store

LookupTable table_from_store(const Store& store, const ExportOptions& o, std::vector<std::string>* notes,
                             ExportSummary* summary) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  auto usable = [&](const StoredRow& r) {
    return r.m.status == Status::ok && std::isfinite(r.m.time_us()) && r.m.time_us() > 0 &&
           (o.include_replay || !r.replay);
  };

  // Best measured per key (replay rows only when asked for, and then the faster of both).
  std::map<ResultKey, StoredRow> best;
  RowFilter f;
  f.device_name = o.device;
  std::vector<bool> replay_modes = {false};
  if (o.include_replay) replay_modes.push_back(true);
  for (bool rp : replay_modes) {
    f.replay = rp;
    for (auto& r : store.best(f, false)) {
      auto k = r.key();
      auto it = best.find(k);
      if (it == best.end() || r.m.time_us() < it->second.m.time_us()) best[k] = std::move(r);
    }
  }

  std::map<ResultKey, std::vector<Winner>> winners;
  for (auto& w : store.winners(o.device)) winners[w.key].push_back(w);

  std::set<ResultKey> keys;
  for (auto& [k, r] : best) keys.insert(k);
  for (auto& [k, w] : winners) keys.insert(k);

  LookupTable t;
  auto [now, unix_now] = utc_now();
  (void)unix_now;
  t.info.generated_at = now;
  t.info.generator = std::string("gemmtune ") + kGemmtuneVersion;
  t.info.source = store.path().string();
  size_t unknown_params = 0;
  std::set<std::string> unknown_params_families;
  // Keys with replayed results, when replays are left out: each is either left out (nothing
  // measured on a GPU) or served by measured rows only. Counted per key, one note for both.
  std::set<ResultKey> replayed;
  if (!o.include_replay) {
    RowFilter rf;
    rf.device_name = o.device;
    rf.replay = true;
    rf.status = Status::ok;
    for (auto& k : store.keys(rf)) replayed.insert(k);
  }
  for (const ResultKey& k : keys) {
    std::optional<StoredRow> chosen;
    std::string origin;
    auto wit = winners.find(k);
    if (wit != winners.end()) {
      std::optional<StoredRow> overall, fastest_family;
      for (const Winner& w : wit->second) {
        auto row = store.get_by_uuid(w.row_uuid);
        if (!row) continue;
        if (!usable(*row)) continue;
        if (w.family == kAllFamilies)
          overall = row;
        else if (!fastest_family || row->m.time_us() < fastest_family->m.time_us())
          fastest_family = row;
      }
      if (overall) {
        chosen = overall;
        origin = "winner";
      } else if (fastest_family) {
        chosen = fastest_family;
        origin = "family winner";
      }
    }
    if (!chosen) {
      auto bit = best.find(k);
      if (bit == best.end()) continue;  // only replay winners, and replay is excluded
      chosen = bit->second;
      origin = "best measured";
    }
    const StoredRow& r = *chosen;
    TableEntry e;
    e.key = k;
    e.family = r.family;
    e.family_version = r.prov.family_version;
    e.source_hash = hex64(r.prov.source_hash);
    e.config = family_config_name(r.config_name, r.transform);
    e.transform = r.transform;
    if (o.params_of) {
      if (auto ps = o.params_of(r)) {
        e.params = *ps;
      } else {
        ++unknown_params;
        unknown_params_families.insert(r.family);
      }
    }
    e.time_us = r.m.time_us();
    e.tflops = r.tflops();
    e.measured_at = r.time_utc;
    e.arch = r.prov.arch;
    e.driver = r.prov.driver;
    e.cuda_runtime = r.prov.cuda_runtime;
    e.nvrtc = r.prov.nvrtc;
    e.library = r.prov.library;
    e.gemmtune_version = r.prov.gemmtune_version;
    e.row_uuid = r.row_uuid;
    e.origin = origin;
    e.replay = r.replay;
    t.entries.push_back(std::move(e));
  }
  t.sort();
  ExportSummary sum;
  for (const ResultKey& k : replayed) {
    const bool served = std::any_of(t.entries.begin(), t.entries.end(), [&](const TableEntry& e) { return e.key == k; });
    ++(served ? sum.replay_passed_over : sum.replay_left_out);
  }
  if (summary) *summary = sum;
  if (sum.replay_left_out || sum.replay_passed_over) {
    auto problems = [](size_t n) { return fmt::format("{} problem{}", n, n == 1 ? "" : "s"); };
    std::string what;
    if (sum.replay_left_out && t.entries.empty())
      what = fmt::format("the table is empty: every result in the store {}{} ({}) was replayed from a recording",
                         store.path().string(), o.device ? fmt::format(" for device '{}'", *o.device) : "",
                         problems(sum.replay_left_out));
    else if (sum.replay_left_out)
      what = fmt::format("{} left out: their results were replayed from a recording", problems(sum.replay_left_out));
    if (sum.replay_passed_over)
      what += fmt::format("{}{} served by GPU measurements only, their replayed results passed over",
                          what.empty() ? "" : "; ", problems(sum.replay_passed_over));
    note(what + " (a replay is not a measurement on a GPU; --include-replay exports replayed results too)");
  }
  if (unknown_params) {
    std::string fams;
    for (auto& s : unknown_params_families) fams += (fams.empty() ? "" : ", ") + s;
    note(fmt::format("{} entr{} without parameter assignments: family {} could not describe its space here (not "
                     "loaded, or it needs a GPU); the config names are complete",
                     unknown_params, unknown_params == 1 ? "y" : "ies", fams));
  }
  return t;
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
