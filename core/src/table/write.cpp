// Writing a table: TOML, JSON, CSV and the self-contained C++ header, from one list of fields per entry.
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

}  // namespace gt
