// The store's schema: one list of the results table's columns read three ways (named, bound,
// read), the winners' decision columns, the key columns of each schema version, the filters
// of the queries, and the validations table. Internal to core/src/store.
#pragma once

#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "store/legacy_description.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gt::store_sql {

// --- One list of the results table's columns, read three ways: to name them (schema,
// INSERT, SELECT), to bind a row, to read a row. The order can therefore never drift.

// Names and SQL types.
struct Namer {
  std::vector<std::pair<std::string, std::string>> cols;
  void text(const char* n, const std::string&) { cols.emplace_back(n, "TEXT NOT NULL"); }
  void integer(const char* n, const int64_t&) { cols.emplace_back(n, "INTEGER NOT NULL"); }
  void integer(const char* n, const int&) { cols.emplace_back(n, "INTEGER NOT NULL"); }
  void boolean(const char* n, const bool&) { cols.emplace_back(n, fmt::format("INTEGER NOT NULL CHECK ({} IN (0, 1))", n)); }
  void real(const char* n, const double&) { cols.emplace_back(n, "REAL"); }  // NULL: unknown (NaN)
  void required_real(const char* n, const double&) { cols.emplace_back(n, "REAL NOT NULL"); }
  void computed_real(const char* n, double) { cols.emplace_back(n, "REAL"); }
  void dtype(const char* n, const DType&) { cols.emplace_back(n, "TEXT NOT NULL"); }
  void layout(const char* n, const Layout&) { cols.emplace_back(n, "TEXT NOT NULL"); }
  void scale(const char* n, const ScaleMode&) {
    cols.emplace_back(n, fmt::format("TEXT NOT NULL DEFAULT 'none' CHECK ({} IN ('none', 'tensor', 'row', 'block'))", n));
  }
  void status(const char* n, const Status&) {
    cols.emplace_back(n, fmt::format("TEXT NOT NULL CHECK ({} IN ('ok', 'cannot_implement', 'resources', "
                                     "'compile_failed', 'verify_failed', 'runtime_fault', 'timeout'))", n));
  }
  void config(const char* n, const Config&) { cols.emplace_back(n, "TEXT NOT NULL"); }  // JSON array
  void hex(const char* n, const uint64_t&) { cols.emplace_back(n, "TEXT NOT NULL"); }
  void u64(const char* n, const uint64_t&) { cols.emplace_back(n, "TEXT NOT NULL"); }  // decimal
  void build(const char* n, const uint64_t&) { cols.emplace_back(n, "TEXT NOT NULL DEFAULT ''"); }  // hex, '': unknown
  void center(const char* n, const Center&) {
    cols.emplace_back(n, fmt::format("TEXT NOT NULL DEFAULT 'median' CHECK ({} IN ('median', 'mean'))", n));
  }
  void transform(const char* n, const Transform&) {
    cols.emplace_back(n, fmt::format("TEXT NOT NULL DEFAULT 'none' CHECK ({} IN ('none', 'pad', 'round', 'swap', "
                                     "'pad+swap'))",
                                     n));
  }
  void constant(const char* n, const int32_t&) {
    cols.emplace_back(n, fmt::format("TEXT NOT NULL DEFAULT '' CHECK ({} IN ('', 'a', 'b', 'a,b'))", n));
  }
  // Columns added after the table's first version need a default for the rows before them.
  void text_or_empty(const char* n, const std::string&) { cols.emplace_back(n, "TEXT NOT NULL DEFAULT ''"); }
  void rank(const char* n, const std::optional<int32_t>&) { cols.emplace_back(n, "INTEGER"); }  // NULL: unknown
  void computed_flag(const char* n, bool) {
    cols.emplace_back(n, fmt::format("INTEGER NOT NULL DEFAULT 0 CHECK ({} IN (0, 1))", n));
  }
};

struct Binder {
  sqlite3_stmt* s;
  int i = 1;
  void text(const char*, const std::string& v) { sqlite3_bind_text(s, i++, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void integer(const char*, const int64_t& v) { sqlite3_bind_int64(s, i++, v); }
  void integer(const char*, const int& v) { sqlite3_bind_int64(s, i++, v); }
  void boolean(const char*, const bool& v) { sqlite3_bind_int(s, i++, v ? 1 : 0); }
  void real(const char*, const double& v) {
    if (std::isnan(v)) sqlite3_bind_null(s, i++);
    else sqlite3_bind_double(s, i++, v);
  }
  void required_real(const char*, const double& v) { sqlite3_bind_double(s, i++, v); }
  void computed_real(const char* n, double v) { real(n, v); }
  void dtype(const char* n, const DType& v) { text(n, to_string(v)); }
  void layout(const char* n, const Layout& v) { text(n, to_string(v)); }
  void scale(const char* n, const ScaleMode& v) { text(n, to_string(v)); }
  void status(const char* n, const Status& v) { text(n, to_string(v)); }
  void config(const char* n, const Config& v) { text(n, nlohmann::json(v).dump()); }
  void hex(const char* n, const uint64_t& v) { text(n, hex64(v)); }
  void u64(const char* n, const uint64_t& v) { text(n, std::to_string(v)); }
  void build(const char* n, const uint64_t& v) { text(n, v ? hex64(v) : std::string()); }
  void center(const char* n, const Center& v) { text(n, to_string(v)); }
  void transform(const char* n, const Transform& v) { text(n, to_string(v)); }
  void constant(const char* n, const int32_t& v) { text(n, constant_text(v)); }
  void text_or_empty(const char* n, const std::string& v) { text(n, v); }
  void rank(const char*, const std::optional<int32_t>& v) {
    if (v) sqlite3_bind_int64(s, i++, *v);
    else sqlite3_bind_null(s, i++);
  }
  void computed_flag(const char*, bool v) { sqlite3_bind_int(s, i++, v ? 1 : 0); }
};

struct Reader {
  sqlite3_stmt* s;
  int i = 0;
  std::string str() {
    const unsigned char* t = sqlite3_column_text(s, i);
    int len = sqlite3_column_bytes(s, i);
    ++i;
    return t ? std::string(reinterpret_cast<const char*>(t), size_t(len)) : std::string();
  }
  void text(const char*, std::string& v) { v = str(); }
  void integer(const char*, int64_t& v) { v = sqlite3_column_int64(s, i++); }
  void integer(const char*, int& v) { v = int(sqlite3_column_int64(s, i++)); }
  void boolean(const char*, bool& v) { v = sqlite3_column_int64(s, i++) != 0; }
  void real(const char*, double& v) {
    v = sqlite3_column_type(s, i) == SQLITE_NULL ? kNaN : sqlite3_column_double(s, i);
    ++i;
  }
  void required_real(const char*, double& v) { v = sqlite3_column_double(s, i++); }
  void computed_real(const char*, double) { ++i; }
  void dtype(const char*, DType& v) { v = parse_dtype(str(), "stored in_dtype/out_dtype"); }
  void layout(const char*, Layout& v) { v = parse_layout(str(), "stored layout"); }
  void scale(const char*, ScaleMode& v) {
    const std::string t = str();
    v = t == "none" ? ScaleMode::none : parse_scale_mode(t, "stored scale_mode");
  }
  void status(const char*, Status& v) { v = parse_status(str()); }
  void config(const char*, Config& v) { v = nlohmann::json::parse(str()).get<Config>(); }
  void hex(const char*, uint64_t& v) { v = std::stoull(str(), nullptr, 16); }
  void u64(const char*, uint64_t& v) { v = std::stoull(str(), nullptr, 10); }
  void build(const char*, uint64_t& v) {
    const std::string t = str();
    v = t.empty() ? 0 : std::stoull(t, nullptr, 16);
  }
  void center(const char*, Center& v) { v = str() == "mean" ? Center::mean : Center::median; }
  void transform(const char*, Transform& v) { v = parse_transform(str(), "stored transform"); }
  void constant(const char*, int32_t& v) { v = parse_constant(str(), "stored constant"); }
  void text_or_empty(const char* n, std::string& v) { text(n, v); }
  void rank(const char*, std::optional<int32_t>& v) {
    if (sqlite3_column_type(s, i) == SQLITE_NULL) v.reset();
    else v = int32_t(sqlite3_column_int64(s, i));
    ++i;
  }
  void computed_flag(const char*, bool) { ++i; }
};

// Every column of `results` but the id, in order. R is StoredRow or const StoredRow.
template <class IO, class R>
void row_fields(IO& io, R& r) {
  io.text("row_uuid", r.row_uuid);
  io.text("time_utc", r.time_utc);
  io.required_real("time_unix", r.time_unix);
  io.text("tune_id", r.tune_id);
  io.boolean("replay", r.replay);
  // The key, then the rest of the problem.
  io.text("device_name", r.prov.device_name);
  io.integer("m", r.problem.m);
  io.integer("n", r.problem.n);
  io.integer("k", r.problem.k);
  io.dtype("in_dtype", r.problem.in);
  io.dtype("out_dtype", r.problem.out);
  io.layout("layout", r.problem.layout);
  io.integer("align", r.problem.align);
  io.dtype("b_dtype", r.problem.in_b);      // schema v6
  io.scale("scale_mode", r.problem.scale);  // schema v6
  io.constant("constant", r.problem.constant);  // schema v7
  io.integer("lda", r.problem.lda);
  io.integer("ldb", r.problem.ldb);
  io.integer("ldc", r.problem.ldc);
  // The config.
  io.text("family", r.family);
  io.config("config", r.config);
  io.text("config_name", r.config_name);
  io.text("config_hash", r.config_hash);
  io.transform("transform", r.transform);  // schema v5
  io.text_or_empty("params", r.params);            // schema v9
  io.text_or_empty("params_from", r.params_from);  // schema v9
  io.rank("heuristic_rank", r.heuristic_rank);     // schema v9
  io.computed_flag("pick", r.pick());              // schema v9: for SQL readers; recomputed from the rank on read
  // The measurement.
  io.status("status", r.m.status);
  io.text("message", r.m.message);
  io.boolean("quick", r.m.quick);
  io.integer("time_count", r.m.time.count);
  io.real("time_median_us", r.m.time.median);
  io.real("time_mean_us", r.m.time.mean);
  io.real("time_min_us", r.m.time.min);
  io.real("time_max_us", r.m.time.max);
  io.real("time_p10_us", r.m.time.p10);
  io.real("time_p90_us", r.m.time.p90);
  io.real("time_ci_low_us", r.m.time.ci_low);
  io.real("time_ci_high_us", r.m.time.ci_high);
  io.center("time_center", r.m.time.center);  // which of median / mean is the figure (schema v2)
  io.computed_real("tflops", r.tflops());  // for SQL readers; recomputed from the row on read
  io.real("err_rel_fro", r.m.err_rel_fro);
  io.real("err_max_norm", r.m.err_max_norm);
  io.real("sm_clock_mhz", r.m.sensors.sm_clock_mhz);
  io.real("mem_clock_mhz", r.m.sensors.mem_clock_mhz);
  io.real("power_w", r.m.sensors.power_w);
  io.real("temp_c", r.m.sensors.temp_c);
  io.real("power_limit_w", r.m.sensors.power_limit_w);
  io.text("throttle", r.m.throttle);
  io.integer("registers", r.m.res.registers);
  io.integer("spill_stores", r.m.res.spill_stores);
  io.integer("spill_loads", r.m.res.spill_loads);
  io.integer("stack_bytes", r.m.res.stack_bytes);
  io.integer("static_smem", r.m.res.static_smem);
  io.real("compile_s", r.m.compile_s);
  io.boolean("from_cache", r.m.compiled_from_cache);
  io.real("measure_s", r.m.measure_s);
  // Provenance (device_name and family are above).
  io.text("fingerprint", r.fingerprint);
  io.text("device_uuid", r.prov.device_uuid);
  io.text("arch", r.prov.arch);
  io.integer("sm_count", r.prov.sm_count);
  io.text("driver", r.prov.driver);
  io.text("cuda_runtime", r.prov.cuda_runtime);
  io.text("nvrtc", r.prov.nvrtc);
  io.text("library", r.prov.library);
  io.text("gemmtune_version", r.prov.gemmtune_version);
  io.integer("method_version", r.prov.method_version);
  io.text("family_version", r.prov.family_version);
  io.hex("source_hash", r.prov.source_hash);
  io.build("build_hash", r.prov.build_hash);  // schema v4
  io.text("input_dist", r.prov.input_dist);
  io.u64("input_seed", r.prov.input_seed);
  io.text("mode", r.prov.mode);
  io.text("host", r.prov.host);
}

// The (name, SQL type) of each column a list of fields names, in order.
template <class T, class Fields>
std::vector<std::pair<std::string, std::string>> columns_of(Fields fields) {
  Namer n;
  T t;
  fields(n, t);
  return n.cols;
}

inline const std::vector<std::pair<std::string, std::string>>& result_columns() {
  static const auto cols = columns_of<StoredRow>([](Namer& n, StoredRow& r) { row_fields(n, r); });
  return cols;
}

// The decision columns of `winners` (schema v3), in order. D is Decision or const Decision.
template <class IO, class D>
void decision_fields(IO& io, D& d) {
  io.boolean("tie", d.tie);
  io.text("tie_with", d.tie_with);
  io.text("runner_up", d.runner_up);
  io.real("margin", d.margin);
}

inline const std::vector<std::pair<std::string, std::string>>& decision_columns() {
  static const auto cols = columns_of<Decision>([](Namer& n, Decision& d) { decision_fields(n, d); });
  return cols;
}

// The decision columns to SELECT from a store of schema `version`: before v3 a winner's decision
// reads as no tie, no runner-up, an unknown margin.
inline std::string decision_list(int version = kStoreSchemaVersion, const char* prefix = "w.") {
  if (version < 3) return "0 AS tie, '' AS tie_with, '' AS runner_up, NULL AS margin";
  std::string s;
  for (auto& [name, type] : decision_columns()) s += (s.empty() ? "" : ", ") + std::string(prefix) + name;
  return s;
}

// The columns to SELECT from a store of schema `version`: a v1 store (read-only: a writable
// one is upgraded on opening) has no time_center, and every v1 figure was the median.
inline std::string column_list(int version = kStoreSchemaVersion) {
  std::string s = "id";
  for (auto& [name, type] : result_columns())
    s += version < 2 && name == "time_center" ? ", 'median' AS time_center"
         : version < 4 && name == "build_hash" ? ", '' AS build_hash"
         : version < 5 && name == "transform"  ? ", 'none' AS transform"
         : version < 6 && name == "b_dtype"    ? ", in_dtype AS b_dtype"
         : version < 6 && name == "scale_mode" ? ", 'none' AS scale_mode"
         : version < 7 && name == "constant"   ? ", '' AS constant"
         : version < 9 && name == "params"     ? ", '' AS params"
         : version < 9 && name == "params_from" ? ", '' AS params_from"
         : version < 9 && name == "heuristic_rank" ? ", NULL AS heuristic_rank"
         : version < 9 && name == "pick"       ? ", 0 AS pick"
                                               : ", " + name;
  return s;
}

// The schema version that added a column of `results` (1: it was there from the start).
inline int column_since(const std::string& name) {
  if (name == "time_center") return 2;
  if (name == "build_hash") return 4;
  if (name == "transform") return 5;
  if (name == "b_dtype" || name == "scale_mode") return 6;
  if (name == "constant") return 7;
  if (name == "params" || name == "params_from" || name == "heuristic_rank" || name == "pick") return 9;
  return 1;
}

inline std::string results_ddl() {
  std::string s = "CREATE TABLE results (\n  id INTEGER PRIMARY KEY";
  for (auto& [name, type] : result_columns()) s += fmt::format(",\n  {} {}", name, type);
  s += ",\n  UNIQUE (row_uuid)\n)";
  return s;
}

inline std::string insert_sql(bool or_ignore) {
  std::string names, marks;
  for (auto& [name, type] : result_columns()) {
    names += (names.empty() ? "" : ", ") + name;
    marks += marks.empty() ? "?" : ", ?";
  }
  return fmt::format("INSERT {}INTO results ({}) VALUES ({})", or_ignore ? "OR IGNORE " : "", names, marks);
}

// A row SELECTed with column_list(version). A row of a store before v9 (read-only, or a merge's
// input) gets its parameters and rank from its description, as the step to v9 would give them.
inline StoredRow read_row(sqlite3_stmt* s, int version) {
  StoredRow r;
  r.id = sqlite3_column_int64(s, 0);
  Reader rd{s, 1};
  row_fields(rd, r);
  r.prov.family = r.family;
  if (version < 9) fill_from_description(r);
  return r;
}

// The key's columns, in read_key's order (schema v7; before v6 b_dtype and scale_mode did not
// exist: key_select reads them as A's type and 'none'; before v7 constant: '').
inline const char* const kKeyCols = "device_name, m, n, k, in_dtype, out_dtype, layout, align, b_dtype, scale_mode, constant";
inline const char* const kKeyColsV6 = "device_name, m, n, k, in_dtype, out_dtype, layout, align, b_dtype, scale_mode";
inline const char* const kKeyColsV5 = "device_name, m, n, k, in_dtype, out_dtype, layout, align";
inline std::string key_partition(int version) { return version >= 7 ? kKeyCols : version >= 6 ? kKeyColsV6 : kKeyColsV5; }
inline std::string key_select(int version, const char* prefix = "") {
  std::string s = fmt::format("{0}device_name, {0}m, {0}n, {0}k, {0}in_dtype, {0}out_dtype, {0}layout, {0}align, ", prefix);
  s += version >= 6 ? fmt::format("{0}b_dtype, {0}scale_mode", prefix) : fmt::format("{0}in_dtype, 'none'", prefix);
  return s + (version >= 7 ? fmt::format(", {0}constant", prefix) : std::string(", ''"));
}

struct Where {
  std::vector<std::string> conds;
  std::vector<Arg> args;
  void eq(const char* col, Arg a) {
    conds.push_back(fmt::format("{} = ?", col));
    args.push_back(std::move(a));
  }
  void raw(std::string cond) { conds.push_back(std::move(cond)); }
  std::string sql() const {
    if (conds.empty()) return "";
    std::string s = " WHERE ";
    for (size_t i = 0; i < conds.size(); ++i) s += (i ? " AND " : "") + conds[i];
    return s;
  }
  void bind(sqlite3_stmt* s, int first = 1) const {
    for (size_t i = 0; i < args.size(); ++i) bind_arg(s, first + int(i), args[i]);
  }
};

// `version`: the file's schema (a read-only store may be older: before v5 every row is 'none').
inline Where where_of(const RowFilter& f, int version) {
  Where w;
  if (f.device_name) w.eq("device_name", *f.device_name);
  if (f.m) w.eq("m", *f.m);
  if (f.n) w.eq("n", *f.n);
  if (f.k) w.eq("k", *f.k);
  if (f.in) w.eq("in_dtype", std::string(to_string(*f.in)));
  if (f.out) w.eq("out_dtype", std::string(to_string(*f.out)));
  if (f.layout) w.eq("layout", std::string(to_string(*f.layout)));
  if (f.align) w.eq("align", int64_t(*f.align));
  if (version >= 6) {
    if (f.in_b) w.eq("b_dtype", std::string(to_string(*f.in_b)));
    if (f.scale) w.eq("scale_mode", std::string(to_string(*f.scale)));
  } else if ((f.scale && *f.scale != ScaleMode::none) || (f.in_b && (!f.in || *f.in_b != *f.in))) {
    w.raw("0");  // before v6 every row is unscaled, B's type A's
  }
  if (f.constant && version >= 7) w.eq("constant", constant_text(*f.constant));
  else if (f.constant && *f.constant) w.raw("0");  // before v7 no operand was constant
  if (f.family) w.eq("family", *f.family);
  if (f.config_hash) w.eq("config_hash", *f.config_hash);
  if (f.tune_id) w.eq("tune_id", *f.tune_id);
  if (f.fingerprint) w.eq("fingerprint", *f.fingerprint);
  if (f.build_hash) w.eq("build_hash", hex64(*f.build_hash));
  if (f.transform && version >= 5) w.eq("transform", std::string(to_string(*f.transform)));
  else if (f.transform && *f.transform != Transform::none) w.raw("0");
  if (f.status) w.eq("status", std::string(to_string(*f.status)));
  if (f.replay) w.eq("replay", int64_t(*f.replay));
  if (f.quick) w.eq("quick", int64_t(*f.quick));
  return w;
}

inline std::string limit_sql(int64_t limit) { return limit > 0 ? fmt::format(" LIMIT {}", limit) : ""; }

inline ResultKey read_key(sqlite3_stmt* s, int first) {
  ResultKey k;
  auto text = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, i))); };
  k.device_name = text(first);
  k.m = sqlite3_column_int64(s, first + 1);
  k.n = sqlite3_column_int64(s, first + 2);
  k.k = sqlite3_column_int64(s, first + 3);
  k.in = parse_dtype(text(first + 4), "stored in_dtype");
  k.out = parse_dtype(text(first + 5), "stored out_dtype");
  k.layout = parse_layout(text(first + 6), "stored layout");
  k.align = int32_t(sqlite3_column_int64(s, first + 7));
  k.in_b = parse_dtype(text(first + 8), "stored b_dtype");
  const std::string scale = text(first + 9);
  k.scale = scale == "none" ? ScaleMode::none : parse_scale_mode(scale, "stored scale_mode");
  k.constant = parse_constant(text(first + 10), "stored constant");
  return k;
}
constexpr int kKeyColCount = 11;

inline void bind_key(sqlite3_stmt* s, int first, const ResultKey& k) {
  Where w;
  w.args = {k.device_name, k.m, k.n, k.k, std::string(to_string(k.in)), std::string(to_string(k.out)),
            std::string(to_string(k.layout)), int64_t(k.align), std::string(to_string(k.in_b)),
            std::string(to_string(k.scale)), constant_text(k.constant)};
  w.bind(s, first);
}

// The winners of `key` (and of `family`, when given) as a condition on `winners w`.
inline Where winner_where(const ResultKey& key, const std::string* family, int version) {
  RowFilter f = RowFilter::of(key);
  Where w = where_of(f, version);
  for (auto& c : w.conds)
    if (c != "0") c = "w." + c;
  if (family) w.eq("w.family", *family);
  return w;
}

inline bool is_final(Status s) { return s != Status::runtime_fault && s != Status::timeout; }
// A transient failure counts as final once it has happened this many times.
constexpr int kTransientAttempts = 2;


// The table of validate's timings (schema v8), and its insert, which keeps the newer timing.
inline const char* const kValidationsDdl =
    "CREATE TABLE IF NOT EXISTS validations (\n"
    "  device_name TEXT NOT NULL, at_key TEXT NOT NULL, from_key TEXT NOT NULL, from_config TEXT NOT NULL,\n"
    "  time_unix REAL NOT NULL, record TEXT NOT NULL,\n"
    "  PRIMARY KEY (device_name, at_key, from_key, from_config)\n)";
inline const char* const kValidationUpsert =
    "INSERT INTO validations (device_name, at_key, from_key, from_config, time_unix, record) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (device_name, at_key, from_key, from_config) DO UPDATE SET time_unix = excluded.time_unix, "
    "record = excluded.record WHERE excluded.time_unix > validations.time_unix OR (excluded.time_unix = "
    "validations.time_unix AND excluded.record > validations.record)";

}  // namespace gt::store_sql
