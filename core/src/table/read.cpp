// Reading a table (TOML or JSON): each field checked, every error naming the file, the entry and the line.
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

}  // namespace gt
