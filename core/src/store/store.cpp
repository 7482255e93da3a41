#include "store/store.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <variant>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace gt {
namespace fs = std::filesystem;

// 'GMTN': marks the file as ours in the SQLite header (PRAGMA application_id).
static constexpr int32_t kApplicationId = 0x474D544E;

// ---------------------------------------------------------------------------------------
// Keys, ids, time

ResultKey ResultKey::of(const std::string& device_name, const Problem& p) {
  return ResultKey{device_name, p.m, p.n, p.k, p.in, p.out, p.layout, p.align, p.in_b, p.scale, p.constant};
}

std::string ResultKey::text() const {
  std::string t = fmt::format("{} {}x{}x{} {}>{} {} a{}", device_name, m, n, k, in_types_text(in, in_b),
                              to_string(out), to_string(layout), align);
  if (scale != ScaleMode::none) t += fmt::format(" {}", to_string(scale));
  if (constant) t += " const=" + constant_text(constant);
  return t;
}

RowFilter RowFilter::of(const ResultKey& k) {
  RowFilter f;
  f.device_name = k.device_name;
  f.m = k.m;
  f.n = k.n;
  f.k = k.k;
  f.in = k.in;
  f.out = k.out;
  f.layout = k.layout;
  f.align = k.align;
  f.in_b = k.in_b;
  f.scale = k.scale;
  f.constant = k.constant;
  return f;
}

std::string new_uuid() {
  // random_device reads the OS entropy source on every call; a generator seeded once
  // would hand forked children the same sequence.
  std::random_device rd;
  uint64_t hi = (uint64_t(rd()) << 32) | rd(), lo = (uint64_t(rd()) << 32) | rd();
  return hex64(hi) + hex64(lo);
}

std::pair<std::string, double> utc_now() {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  std::time_t secs = std::time_t(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string text = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
  return {text, double(us) / 1e6};
}

// ---------------------------------------------------------------------------------------
// SQLite in small pieces

namespace {

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &s_, nullptr) != SQLITE_OK)
      throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  // True while there is a row; throws on errors.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    last_rc_ = rc;
    throw RuntimeFailure(fmt::format("SQLite: {} ({})", sqlite3_errmsg(db_), sqlite3_errstr(rc)));
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int last_rc() const { return last_rc_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int last_rc_ = SQLITE_OK;
};

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", msg, sql.substr(0, 200)));
  }
}

using Arg = std::variant<int64_t, double, std::string>;

void bind_arg(sqlite3_stmt* s, int i, const Arg& a) {
  if (auto* v = std::get_if<int64_t>(&a)) sqlite3_bind_int64(s, i, *v);
  else if (auto* d = std::get_if<double>(&a)) sqlite3_bind_double(s, i, *d);
  else {
    const auto& t = std::get<std::string>(a);
    sqlite3_bind_text(s, i, t.data(), int(t.size()), SQLITE_TRANSIENT);
  }
}

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

const std::vector<std::pair<std::string, std::string>>& result_columns() {
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

const std::vector<std::pair<std::string, std::string>>& decision_columns() {
  static const auto cols = columns_of<Decision>([](Namer& n, Decision& d) { decision_fields(n, d); });
  return cols;
}

// The decision columns to SELECT from a store of schema `version`: before v3 a winner's decision
// reads as no tie, no runner-up, an unknown margin.
std::string decision_list(int version = kStoreSchemaVersion, const char* prefix = "w.") {
  if (version < 3) return "0 AS tie, '' AS tie_with, '' AS runner_up, NULL AS margin";
  std::string s;
  for (auto& [name, type] : decision_columns()) s += (s.empty() ? "" : ", ") + std::string(prefix) + name;
  return s;
}

// The columns to SELECT from a store of schema `version`: a v1 store (read-only: a writable
// one is upgraded on opening) has no time_center, and every v1 figure was the median.
std::string column_list(int version = kStoreSchemaVersion) {
  std::string s = "id";
  for (auto& [name, type] : result_columns())
    s += version < 2 && name == "time_center" ? ", 'median' AS time_center"
         : version < 4 && name == "build_hash" ? ", '' AS build_hash"
         : version < 5 && name == "transform"  ? ", 'none' AS transform"
         : version < 6 && name == "b_dtype"    ? ", in_dtype AS b_dtype"
         : version < 6 && name == "scale_mode" ? ", 'none' AS scale_mode"
         : version < 7 && name == "constant"   ? ", '' AS constant"
                                               : ", " + name;
  return s;
}

std::string results_ddl() {
  std::string s = "CREATE TABLE results (\n  id INTEGER PRIMARY KEY";
  for (auto& [name, type] : result_columns()) s += fmt::format(",\n  {} {}", name, type);
  s += ",\n  UNIQUE (row_uuid)\n)";
  return s;
}

std::string insert_sql(bool or_ignore) {
  std::string names, marks;
  for (auto& [name, type] : result_columns()) {
    names += (names.empty() ? "" : ", ") + name;
    marks += marks.empty() ? "?" : ", ?";
  }
  return fmt::format("INSERT {}INTO results ({}) VALUES ({})", or_ignore ? "OR IGNORE " : "", names, marks);
}

StoredRow read_row(sqlite3_stmt* s) {
  StoredRow r;
  r.id = sqlite3_column_int64(s, 0);
  Reader rd{s, 1};
  row_fields(rd, r);
  r.prov.family = r.family;
  return r;
}

// The key's columns, in read_key's order (schema v7; before v6 b_dtype and scale_mode did not
// exist: key_select reads them as A's type and 'none'; before v7 constant: '').
const char* kKeyCols = "device_name, m, n, k, in_dtype, out_dtype, layout, align, b_dtype, scale_mode, constant";
const char* kKeyColsV6 = "device_name, m, n, k, in_dtype, out_dtype, layout, align, b_dtype, scale_mode";
const char* kKeyColsV5 = "device_name, m, n, k, in_dtype, out_dtype, layout, align";
std::string key_partition(int version) { return version >= 7 ? kKeyCols : version >= 6 ? kKeyColsV6 : kKeyColsV5; }
std::string key_select(int version, const char* prefix = "") {
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
Where where_of(const RowFilter& f, int version) {
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

std::string limit_sql(int64_t limit) { return limit > 0 ? fmt::format(" LIMIT {}", limit) : ""; }

ResultKey read_key(sqlite3_stmt* s, int first) {
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

void bind_key(sqlite3_stmt* s, int first, const ResultKey& k) {
  Where w;
  w.args = {k.device_name, k.m, k.n, k.k, std::string(to_string(k.in)), std::string(to_string(k.out)),
            std::string(to_string(k.layout)), int64_t(k.align), std::string(to_string(k.in_b)),
            std::string(to_string(k.scale)), constant_text(k.constant)};
  w.bind(s, first);
}

// The winners of `key` (and of `family`, when given) as a condition on `winners w`.
Where winner_where(const ResultKey& key, const std::string* family, int version) {
  RowFilter f = RowFilter::of(key);
  Where w = where_of(f, version);
  for (auto& c : w.conds)
    if (c != "0") c = "w." + c;
  if (family) w.eq("w.family", *family);
  return w;
}

// A transaction that rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

bool is_final(Status s) { return s != Status::runtime_fault && s != Status::timeout; }
// A transient failure counts as final once it has happened this many times.
constexpr int kTransientAttempts = 2;

}  // namespace

// ---------------------------------------------------------------------------------------
// Opening

struct Store::Impl {
  fs::path path;
  bool readonly = false;
  int version = kStoreSchemaVersion;  // the file's schema (a read-only v1 store stays v1)
  sqlite3* db = nullptr;
  mutable std::mutex mu;
  ~Impl() {
    if (db) sqlite3_close_v2(db);
  }
  bool has_table(const char* name) const {
    Stmt st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    sqlite3_bind_text(st.get(), 1, name, -1, SQLITE_STATIC);
    return st.step();
  }

  std::vector<StoredRow> query_rows(const std::string& tail, const Where& w) const {
    Stmt st(db, "SELECT " + column_list(version) + " FROM results" + w.sql() + tail);
    w.bind(st.get());
    std::vector<StoredRow> out;
    while (st.step()) out.push_back(read_row(st.get()));
    return out;
  }
  std::optional<StoredRow> row_by(const char* col, Arg a) const {
    Where w;
    w.eq(col, std::move(a));
    auto rows = query_rows("", w);
    if (rows.empty()) return std::nullopt;
    return rows.front();
  }
  std::vector<Winner> query_winners(const std::string& cond, const Where& w) const {
    Stmt st(db, "SELECT " + key_select(version, "w.") +
                    ", w.family, w.config_name, w.row_uuid, w.note, w.time_utc, w.time_unix, r.id, " +
                    decision_list(version) + ", " + (version < 5 ? "'none'" : "r.transform") +
                    " FROM winners w JOIN results r ON r.row_uuid = w.row_uuid" + cond);
    w.bind(st.get());
    std::vector<Winner> out;
    while (st.step()) {
      sqlite3_stmt* s = st.get();
      Winner x;
      x.key = read_key(s, 0);
      Reader rd{s, kKeyColCount};
      rd.text("family", x.family);
      rd.text("config_name", x.config_name);
      rd.text("row_uuid", x.row_uuid);
      rd.text("note", x.note);
      rd.text("time_utc", x.time_utc);
      rd.real("time_unix", x.time_unix);
      rd.integer("id", x.row_id);
      decision_fields(rd, x.decision);
      rd.transform("transform", x.transform);
      out.push_back(std::move(x));
    }
    std::sort(out.begin(), out.end(), [](const Winner& a, const Winner& b) {
      return std::tie(a.key, a.family) < std::tie(b.key, b.family);
    });
    return out;
  }
  std::vector<Winner> winners_of(const ResultKey& key) const {
    Where w = winner_where(key, nullptr, version);
    return query_winners(w.sql() + " ORDER BY w.family", w);
  }
  std::optional<Winner> winner(const ResultKey& key, const std::string& family) const {
    Where w = winner_where(key, &family, version);
    auto ws = query_winners(w.sql(), w);
    if (ws.empty()) return std::nullopt;
    return ws.front();
  }
  void put_winner(const Winner& x) {
    Stmt st(db, fmt::format("INSERT OR REPLACE INTO winners ({}, family, config_name, row_uuid, note, time_utc, "
                            "time_unix, {}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            kKeyCols, decision_list(kStoreSchemaVersion, "")));
    bind_key(st.get(), 1, x.key);
    Binder b{st.get(), kKeyColCount + 1};
    b.text("family", x.family);
    b.text("config_name", x.config_name);
    b.text("row_uuid", x.row_uuid);
    b.text("note", x.note);
    b.text("time_utc", x.time_utc);
    b.real("time_unix", x.time_unix);
    decision_fields(b, x.decision);
    st.step();
  }
};

namespace {

const char* kMagic = "SQLite format 3";  // and a NUL: the first 16 bytes of every database

// What a file is, judged without letting SQLite touch it.
void check_header(const fs::path& file) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read the store: {}", file.string(), ec.message()));
  if (size == 0) return;  // an empty file: SQLite treats it as an empty database
  char head[16] = {0};
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the store for reading", file.string()));
  in.read(head, sizeof head);
  if (in.gcount() < 16 || std::string_view(head, 16) != std::string_view(kMagic, 16))
    throw InputError(fmt::format("{} is not a gemmtune store (not an SQLite database)", file.string()));
}

enum class Kind { empty, ours };

// Reads the schema (only reads) and says whether the database is empty or one of our
// stores; InputError for everything else.
Kind classify(sqlite3* db, const fs::path& file, int* version_out = nullptr) {
  std::vector<std::string> tables;
  {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &s,
                                nullptr);
    if (rc == SQLITE_OK) {
      while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    std::string msg = sqlite3_errmsg(db);
    sqlite3_finalize(s);
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      throw InputError(fmt::format("{} is not a gemmtune store (not an SQLite database: {})", file.string(), msg));
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw RuntimeFailure(fmt::format("{}: the store stayed locked by another process for {} s", file.string(),
                                       kBusyTimeoutMs / 1000));
    if (rc != SQLITE_OK) throw RuntimeFailure(fmt::format("{}: cannot read the store: {}", file.string(), msg));
  }
  if (tables.empty()) return Kind::empty;
  auto listed = [&] {
    std::string s;
    for (size_t i = 0; i < tables.size() && i < 8; ++i) s += (i ? ", " : "") + tables[i];
    if (tables.size() > 8) s += ", ...";
    return s;
  };
  if (std::find(tables.begin(), tables.end(), "meta") == tables.end())
    throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its tables: {})", file.string(),
                                 listed()));
  std::map<std::string, std::string> meta;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &s, nullptr) != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_finalize(s);
      throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its meta table: {})",
                                   file.string(), msg));
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      auto k = sqlite3_column_text(s, 0), v = sqlite3_column_text(s, 1);
      if (k && v) meta[reinterpret_cast<const char*>(k)] = reinterpret_cast<const char*>(v);
    }
    sqlite3_finalize(s);
  }
  if (meta["application"] != "gemmtune" || meta["schema_version"].empty())
    throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its tables: {})", file.string(),
                                 listed()));
  int version = 0;
  try {
    version = std::stoi(meta["schema_version"]);
  } catch (const std::exception&) {
    throw InputError(fmt::format("{}: the store's schema_version '{}' is not a number", file.string(),
                                 meta["schema_version"]));
  }
  if (version > kStoreSchemaVersion)
    throw InputError(fmt::format("{} has schema v{}; this gemmtune reads up to v{} — upgrade gemmtune",
                                 file.string(), version, kStoreSchemaVersion));
  if (version < 1)
    throw InputError(fmt::format("{}: the store's schema_version {} is not one gemmtune ever wrote", file.string(),
                                 version));
  if (version_out) *version_out = version;
  return Kind::ours;
}

const char* kRoofsDdl =
    "CREATE TABLE IF NOT EXISTS roofs (\n"
    "  device_name TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL,\n"
    "  how TEXT NOT NULL, sm_clock_mhz REAL, power_w REAL, temp_c REAL,\n"
    "  time_utc TEXT NOT NULL, time_unix REAL NOT NULL,\n"
    "  PRIMARY KEY (device_name, name)\n)";

const char* kValidationsDdl =
    "CREATE TABLE IF NOT EXISTS validations (\n"
    "  device_name TEXT NOT NULL, at_key TEXT NOT NULL, from_key TEXT NOT NULL, from_config TEXT NOT NULL,\n"
    "  time_unix REAL NOT NULL, record TEXT NOT NULL,\n"
    "  PRIMARY KEY (device_name, at_key, from_key, from_config)\n)";
const char* kValidationUpsert =
    "INSERT INTO validations (device_name, at_key, from_key, from_config, time_unix, record) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (device_name, at_key, from_key, from_config) DO UPDATE SET time_unix = excluded.time_unix, "
    "record = excluded.record WHERE excluded.time_unix > validations.time_unix OR (excluded.time_unix = "
    "validations.time_unix AND excluded.record > validations.record)";

// The decision columns of `winners` as DDL lines ("  tie INTEGER NOT NULL ...,\n" ...).
std::string decisions_ddl() {
  std::string s;
  for (auto& [name, type] : decision_columns()) s += fmt::format("  {} {},\n", name, type);
  return s;
}

std::string winners_ddl(const char* table) {
  return fmt::format("CREATE TABLE {} (\n"
                     "  device_name TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,\n"
                     "  in_dtype TEXT NOT NULL, out_dtype TEXT NOT NULL, layout TEXT NOT NULL,\n"
                     "  align INTEGER NOT NULL,\n"
                     "  b_dtype TEXT NOT NULL, scale_mode TEXT NOT NULL DEFAULT 'none',\n"
                     "  constant TEXT NOT NULL DEFAULT '',\n"
                     "  family TEXT NOT NULL,  -- '*': over every family\n"
                     "  config_name TEXT NOT NULL,\n"
                     "  row_uuid TEXT NOT NULL REFERENCES results (row_uuid),\n"
                     "  note TEXT NOT NULL, time_utc TEXT NOT NULL, time_unix REAL NOT NULL,\n"
                     "{}"
                     "  PRIMARY KEY ({}, family)\n)",
                     table, decisions_ddl(), kKeyCols);
}

void create_schema(sqlite3* db) {
  exec(db, fmt::format("PRAGMA application_id = {}", kApplicationId));
  exec(db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  exec(db, results_ddl());
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyCols));
  exec(db, "CREATE INDEX results_by_tune ON results (tune_id)");
  exec(db, winners_ddl("winners"));
  exec(db, kRoofsDdl);
  exec(db, kValidationsDdl);
  auto [now, unix_now] = utc_now();
  (void)unix_now;
  Stmt st(db, "INSERT INTO meta (key, value) VALUES ('application', 'gemmtune'), ('schema_version', ?), "
              "('created', ?), ('created_by', ?)");
  Binder b{st.get()};
  b.text("schema_version", std::to_string(kStoreSchemaVersion));
  b.text("created", now);
  b.text("created_by", std::string("gemmtune ") + kGemmtuneVersion);
  st.step();
}

// Sets a pragma that needs the database to itself for a moment (journal_mode): retried
// while another process holds it, up to the busy timeout.
void exec_retrying(sqlite3* db, const std::string& sql) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > until)
      throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", msg, sql));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The schema's upgrades, in order: step `to` turns a store of schema to - 1 into one of schema
// `to`, in place, keeping every row and winner. A new schema version is one more step here.
struct Migration {
  int to;
  void (*apply)(sqlite3* db);
};

// v1 -> v2: the figure's statistic (time_center); every v1 figure was the median.
void add_time_center(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "time_center") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v2 -> v3: the winners' decisions as columns. A v2 store said a decision's tie only in its
// note, which v2 wrote in two fixed forms ("tie with CONFIG (...", "tie between F1 and F2..."):
// read once, here, into the columns. Its runner-up (beyond a tie) and margin were not kept:
// '' and NULL (unknown).
void add_decision_columns(sqlite3* db) {
  for (auto& [name, type] : decision_columns()) {
    const bool not_null = type.find("NOT NULL") != std::string::npos;
    const char* fill = !not_null ? "" : type.rfind("TEXT", 0) == 0 ? " DEFAULT ''" : " DEFAULT 0";
    exec(db, fmt::format("ALTER TABLE winners ADD COLUMN {} {}{}", name, type, fill));
  }
  exec(db, "UPDATE winners SET tie = 1, tie_with = substr(note, 10, instr(note, ' (') - 10) "
           "WHERE note LIKE 'tie with % (%'");
  exec(db, "UPDATE winners SET tie = 1, tie_with = rtrim(substr(note, instr(note, ' and ') + 5, "
           "CASE WHEN instr(note, ':') > 0 THEN instr(note, ':') - instr(note, ' and ') - 5 ELSE length(note) END)) "
           "WHERE note LIKE 'tie between % and %'");
  exec(db, "UPDATE winners SET runner_up = tie_with WHERE tie = 1");
}

// v3 -> v4: each measurement's exact build (Provenance::build_hash). Older rows get '':
// their build is unknown, so a reuse that names a build measures them again.
void add_build_hash(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "build_hash") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v4 -> v5: the problem transform each measurement ran through. Every older row ran the
// problem as it is: 'none'.
void add_transform(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "transform") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v5 -> v6: FP8 in the key: B's type (every older row's is A's) and the scale mode (every older
// row's is 'none'). The winners' primary key grows by both, and SQLite cannot change a key in
// place: the table is copied into one of the new shape.
void add_fp8_key(sqlite3* db) {
  exec(db, "ALTER TABLE results ADD COLUMN b_dtype TEXT NOT NULL DEFAULT ''");
  exec(db, "UPDATE results SET b_dtype = in_dtype");
  for (auto& [name, type] : result_columns())
    if (name == "scale_mode") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
  exec(db, "DROP INDEX IF EXISTS results_by_key");
  // v6's key (a later step adds to it): results has no column of a later version yet.
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyColsV6));
  std::string decisions;
  for (auto& [name, type] : decision_columns()) decisions += ", " + name;
  exec(db, winners_ddl("winners_v6"));  // today's shape: a later column takes its default
  exec(db, fmt::format("INSERT INTO winners_v6 ({0}, family, config_name, row_uuid, note, time_utc, time_unix{1}) "
                       "SELECT {2}, in_dtype, 'none', family, config_name, row_uuid, note, time_utc, time_unix{1} "
                       "FROM winners",
                       kKeyColsV6, decisions, kKeyColsV5));
  exec(db, "DROP TABLE winners");
  exec(db, "ALTER TABLE winners_v6 RENAME TO winners");
}

// v6 -> v7: the operands declared constant join the key (every older row: none, ''), and
// results.transform takes 'round'. A CHECK cannot change in place, so results is copied into a
// table of the new shape; winners, which refers to it, is set aside first (with foreign keys on,
// the old results could not be dropped under it) and copied back with the new key.
void add_constant_key(sqlite3* db) {
  std::string names;
  for (auto& [name, type] : result_columns())
    if (name != "constant") names += ", " + name;
  std::string decisions;
  for (auto& [name, type] : decision_columns()) decisions += ", " + name;
  exec(db, "CREATE TABLE winners_before_v7 AS SELECT * FROM winners");
  exec(db, "DROP TABLE winners");
  exec(db, "DROP INDEX IF EXISTS results_by_key");
  exec(db, "DROP INDEX IF EXISTS results_by_tune");
  exec(db, "ALTER TABLE results RENAME TO results_before_v7");
  exec(db, results_ddl());
  exec(db, fmt::format("INSERT INTO results (id{0}, constant) SELECT id{0}, '' FROM results_before_v7", names));
  exec(db, "DROP TABLE results_before_v7");
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyCols));
  exec(db, "CREATE INDEX results_by_tune ON results (tune_id)");
  exec(db, winners_ddl("winners"));
  exec(db, fmt::format("INSERT INTO winners ({0}, family, config_name, row_uuid, note, time_utc, time_unix{1}) "
                       "SELECT {2}, '', family, config_name, row_uuid, note, time_utc, time_unix{1} "
                       "FROM winners_before_v7",
                       kKeyCols, decisions, kKeyColsV6));
  exec(db, "DROP TABLE winners_before_v7");
}

// v7 -> v8: validate's timings, in a table of their own; an older store has none.
void add_validations(sqlite3* db) { exec(db, kValidationsDdl); }

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {{2, add_time_center}, {3, add_decision_columns}, {4, add_build_hash},
                                               {5, add_transform},   {6, add_fp8_key},
                                               {7, add_constant_key}, {8, add_validations}};
  return steps;
}

// Brings a writable store to kStoreSchemaVersion, one step per transaction; several processes
// may open the store at once: each step is taken by the first to hold the write lock, the
// others find it done.
void migrate(sqlite3* db, const fs::path& file, int& version) {
  for (const Migration& m : migrations()) {
    if (version >= m.to) continue;
    Transaction t(db);
    classify(db, file, &version);
    if (version < m.to) {
      m.apply(db);
      exec(db, fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'", m.to));
      version = m.to;
    }
    t.commit();
  }
}

bool folder_writable(const fs::path& file) {
  const fs::path dir = fs::absolute(file).parent_path();
  return ::access(dir.c_str(), W_OK) == 0;
}

// file:PATH?immutable=1, with the characters a URI gives meaning to escaped.
std::string immutable_uri(const fs::path& file) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(file).string()) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c > 0x7e)
      uri += fmt::format("%{:02X}", c);
    else
      uri += char(c);
  }
  return uri + "?immutable=1";
}

}  // namespace

std::unique_ptr<Store::Impl> Store::open_impl(const fs::path& file, bool readonly) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw InputError(fmt::format("{} is a directory, not a gemmtune store", file.string()));
  // A FIFO or a device would block or take SQLite's writes to somewhere else.
  if (std::string kind = special_file_kind(file); !kind.empty())
    throw InputError(fmt::format("{} is {}, not a gemmtune store", file.string(), kind));
  bool existed = fs::exists(file, ec);
  if (readonly && !existed) throw InputError(fmt::format("{}: no such store", file.string()));
  if (existed && ::access(file.c_str(), R_OK) != 0)
    throw RuntimeFailure(fmt::format("{}: cannot read the store ({})", file.string(), std::strerror(errno)));
  if (existed && !readonly && ::access(file.c_str(), W_OK) != 0)
    throw RuntimeFailure(fmt::format("{}: the store cannot be written ({}); commands that only read it still can",
                                     file.string(), std::strerror(errno)));
  if (existed) check_header(file);
  if (!readonly && !file.parent_path().empty()) {
    fs::create_directories(file.parent_path(), ec);
    if (ec)
      throw InputError(fmt::format("{}: cannot create the directory {}: {}", file.string(),
                                   file.parent_path().string(), ec.message()));
  }

  auto impl = std::make_unique<Store::Impl>();
  impl->path = file;
  impl->readonly = readonly;
  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A reader of a WAL store makes its -shm file beside it, so in a folder it cannot write SQLite
  // refuses even to read. Nobody can be writing such a store (a writer needs the folder too):
  // it is read as it is on disk (immutable).
  const bool immutable = readonly && !folder_writable(file) && !fs::exists(file.string() + "-shm", ec);
  const std::string name = immutable ? immutable_uri(file) : file.string();
  if (immutable) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(name.c_str(), &impl->db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = impl->db ? sqlite3_errmsg(impl->db) : sqlite3_errstr(rc);
    throw InputError(fmt::format("{}: cannot open the store: {}", file.string(), msg));
  }
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);

  // Judge the file before changing anything in it: a refused file stays as it was.
  Kind kind = classify(impl->db, file, &impl->version);
  if (readonly) {
    if (kind == Kind::empty) throw InputError(fmt::format("{} is empty, not a gemmtune store", file.string()));
    return impl;
  }
  try {
    exec_retrying(impl->db, "PRAGMA journal_mode = WAL");
    exec(impl->db, "PRAGMA synchronous = FULL");
    exec(impl->db, "PRAGMA foreign_keys = ON");
    if (kind == Kind::empty) {
      // Several processes may create one store at once: the first to take the write lock
      // creates the schema, the others find it done.
      Transaction t(impl->db);
      if (classify(impl->db, file) == Kind::empty) create_schema(impl->db);
      t.commit();
      classify(impl->db, file, &impl->version);
    }
    migrate(impl->db, file, impl->version);
    exec(impl->db, kRoofsDdl);
  } catch (const RuntimeFailure& e) {
    // SQLite's words ("database or disk is full") do not say which file: the message does.
    const std::string what = e.what();
    if (what.find(file.string()) != std::string::npos) throw;
    throw RuntimeFailure(fmt::format("{}: cannot {} the store: {}", file.string(),
                                     kind == Kind::empty ? "create" : "open", what));
  }
  return impl;
}

Store Store::open(const fs::path& file) { return Store(open_impl(file, false)); }
Store Store::open_readonly(const fs::path& file) { return Store(open_impl(file, true)); }

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const fs::path& Store::path() const { return impl_->path; }
bool Store::readonly() const { return impl_->readonly; }

// ---------------------------------------------------------------------------------------
// Rows

int64_t Store::insert(StoredRow& row) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  if (row.family.empty()) row.family = row.prov.family;
  if (row.prov.family.empty()) row.prov.family = row.family;
  if (row.family != row.prov.family)
    throw RuntimeFailure(fmt::format("a row of family '{}' carries the provenance of family '{}'", row.family,
                                     row.prov.family));
  if (row.transform != Transform::none) {
    const std::string suffix = std::string("+") + to_string(row.transform);
    if (row.config_name.size() <= suffix.size() ||
        row.config_name.compare(row.config_name.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw RuntimeFailure(fmt::format("a row of transform '{}' names its config '{}' without it (a transformed "
                                       "config's name ends with '{}')",
                                       to_string(row.transform), row.config_name, suffix));
  }
  if (row.row_uuid.empty()) row.row_uuid = new_uuid();
  if (row.time_unix <= 0 || row.time_utc.empty()) std::tie(row.time_utc, row.time_unix) = utc_now();
  row.fingerprint = row.prov.fingerprint();

  std::lock_guard lock(impl_->mu);
  bool duplicate = false;
  try {
    Transaction t(impl_->db);
    Stmt st(impl_->db, insert_sql(false));
    Binder b{st.get()};
    row_fields(b, std::as_const(row));
    try {
      st.step();
    } catch (const RuntimeFailure&) {
      duplicate = st.last_rc() == SQLITE_CONSTRAINT_UNIQUE;
      throw;
    }
    row.id = sqlite3_last_insert_rowid(impl_->db);
    t.commit();
  } catch (const RuntimeFailure& e) {
    if (duplicate)
      throw RuntimeFailure(fmt::format("{}: row {} is already stored (rows are immutable)", impl_->path.string(),
                                       row.row_uuid));
    throw StoreWriteError(fmt::format("{}: a measurement could not be stored: {}", impl_->path.string(), e.what()));
  }
  return row.id;
}

std::optional<StoredRow> Store::get(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  return impl_->row_by("id", id);
}

std::optional<StoredRow> Store::get_by_uuid(const std::string& row_uuid) const {
  std::lock_guard lock(impl_->mu);
  return impl_->row_by("row_uuid", row_uuid);
}

int64_t Store::count(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  Where w = where_of(f, impl_->version);
  Stmt st(impl_->db, "SELECT COUNT(*) FROM results" + w.sql());
  w.bind(st.get());
  st.step();
  int64_t n = sqlite3_column_int64(st.get(), 0);
  return f.limit > 0 ? std::min(n, f.limit) : n;
}

std::vector<StoredRow> Store::rows(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  return impl_->query_rows(" ORDER BY time_unix, id" + limit_sql(f.limit), where_of(f, impl_->version));
}

std::vector<ResultKey> Store::keys(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  Where w = where_of(f, impl_->version);
  Stmt st(impl_->db, fmt::format("SELECT DISTINCT {} FROM results{}", key_select(impl_->version), w.sql()));
  w.bind(st.get());
  std::vector<ResultKey> out;
  while (st.step()) out.push_back(read_key(st.get(), 0));
  std::sort(out.begin(), out.end());
  if (f.limit > 0 && int64_t(out.size()) > f.limit) out.resize(size_t(f.limit));
  return out;
}

std::vector<StoredRow> Store::best(const RowFilter& f, bool per_family) const {
  std::lock_guard lock(impl_->mu);
  RowFilter g = f;
  g.status = Status::ok;
  if (!g.replay) g.replay = false;
  Where w = where_of(g, impl_->version);
  w.raw("time_median_us IS NOT NULL");
  // By the figure: the median, or the mean where it is the figure (time_center, schema v2).
  std::string sql = fmt::format(
      "SELECT {} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY {}{} ORDER BY {} ASC, "
      "time_unix DESC, row_uuid ASC) AS place FROM results{}) WHERE place = 1",
      column_list(impl_->version), key_partition(impl_->version), per_family ? ", family" : "",
      impl_->version < 2 ? "time_median_us"
                         : "CASE time_center WHEN 'mean' THEN time_mean_us ELSE time_median_us END",
      w.sql());
  Stmt st(impl_->db, sql);
  w.bind(st.get());
  std::vector<StoredRow> out;
  while (st.step()) out.push_back(read_row(st.get()));
  std::sort(out.begin(), out.end(), [](const StoredRow& a, const StoredRow& b) {
    auto ka = a.key(), kb = b.key();
    return std::tie(ka, a.family) < std::tie(kb, b.family);
  });
  if (f.limit > 0 && int64_t(out.size()) > f.limit) out.resize(size_t(f.limit));
  return out;
}

std::optional<StoredRow> Store::find_reusable(const Problem& p, const std::string& device_name,
                                              const std::string& family, const std::string& config_hash,
                                              const std::string& fingerprint, bool need_full, bool replay,
                                              uint64_t build_hash) const {
  RowFilter f = RowFilter::of(ResultKey::of(device_name, p));
  f.family = family;
  f.config_hash = config_hash;
  f.fingerprint = fingerprint;
  f.replay = replay;
  if (build_hash) f.build_hash = build_hash;
  Where w = where_of(f, impl_->version);
  if (need_full) w.raw("NOT (quick = 1 AND status = 'ok')");
  std::vector<StoredRow> rows;
  {
    std::lock_guard lock(impl_->mu);
    rows = impl_->query_rows(" ORDER BY time_unix DESC, id DESC", w);
  }
  if (rows.empty()) return std::nullopt;
  // The oldest final row: what the first tune of the config measured and its strategy
  // learned. The re-timings after it (finalists, confirmations, family winners) are other
  // figures; handing one of those to a repeated tune's strategy would send it another way.
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    if (is_final(it->m.status)) return *it;
  if (int64_t(rows.size()) >= kTransientAttempts) return rows.front();  // failed every time: final
  return std::nullopt;
}

std::vector<StoredRow> Store::stale_rows(const Problem& p, const std::string& device_name, const std::string& family,
                                         const std::string& fingerprint,
                                         const std::optional<std::string>& config_hash) const {
  RowFilter f = RowFilter::of(ResultKey::of(device_name, p));
  f.family = family;
  f.config_hash = config_hash;
  f.replay = false;
  Where w = where_of(f, impl_->version);
  w.raw("fingerprint <> ?");
  w.args.push_back(fingerprint);
  std::lock_guard lock(impl_->mu);
  return impl_->query_rows(" ORDER BY time_unix, id", w);
}

int64_t Store::count_stale(const Problem& p, const std::string& device_name, const std::string& family,
                           const std::string& fingerprint, const std::optional<std::string>& config_hash) const {
  RowFilter f = RowFilter::of(ResultKey::of(device_name, p));
  f.family = family;
  f.config_hash = config_hash;
  f.replay = false;
  Where w = where_of(f, impl_->version);
  w.raw("fingerprint <> ?");
  w.args.push_back(fingerprint);
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, "SELECT COUNT(*) FROM results" + w.sql());
  w.bind(st.get());
  st.step();
  return sqlite3_column_int64(st.get(), 0);
}

// ---------------------------------------------------------------------------------------
// Winners

void Store::set_winner(const ResultKey& key, const std::string& family, const std::string& config_name,
                       int64_t row_id, const std::string& note, const Decision& decision) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::lock_guard lock(impl_->mu);
  Transaction t(impl_->db);
  auto row = impl_->row_by("id", row_id);
  if (!row) throw RuntimeFailure(fmt::format("set_winner: no row {} in {}", row_id, impl_->path.string()));
  if (row->m.status != Status::ok)
    throw RuntimeFailure(fmt::format("set_winner: row {} has status {}; only a verified, timed (ok) measurement can "
                                     "win", row_id, to_string(row->m.status)));
  if (row->key() != key)
    throw RuntimeFailure(fmt::format("set_winner: row {} is for '{}', not '{}'", row_id, row->key().text(), key.text()));
  if (family != kAllFamilies && row->family != family)
    throw RuntimeFailure(fmt::format("set_winner: row {} is of family '{}', not '{}'", row_id, row->family, family));
  if (row->config_name != config_name)
    throw RuntimeFailure(fmt::format("set_winner: row {} measured '{}', not '{}'", row_id, row->config_name,
                                     config_name));
  Winner w;
  w.key = key;
  w.family = family;
  w.config_name = config_name;
  w.row_id = row_id;
  w.row_uuid = row->row_uuid;
  w.decision = decision;
  w.note = note;
  std::tie(w.time_utc, w.time_unix) = utc_now();
  try {
    impl_->put_winner(w);
    t.commit();
  } catch (const RuntimeFailure& e) {
    throw StoreWriteError(fmt::format("{}: the winner of {} could not be stored: {}", impl_->path.string(), key.text(),
                                      e.what()));
  }
}

std::optional<Winner> Store::winner(const ResultKey& key, const std::string& family) const {
  std::lock_guard lock(impl_->mu);
  return impl_->winner(key, family);
}

std::vector<Winner> Store::winners_of(const ResultKey& key) const {
  std::lock_guard lock(impl_->mu);
  return impl_->winners_of(key);
}

std::vector<Winner> Store::winners(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  Where w;
  if (device_name) w.eq("w.device_name", *device_name);
  return impl_->query_winners(w.sql(), w);
}

int compare_versions(const std::string& a, const std::string& b) {
  // The runs of digits, without leading zeros: a longer run is a larger number.
  auto numbers = [](const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      size_t z = i;
      while (z + 1 < j && s[z] == '0') ++z;
      out.push_back(s.substr(z, j - z));
      i = j;
    }
    return out;
  };
  auto na = numbers(a), nb = numbers(b);
  for (size_t i = 0; i < na.size() && i < nb.size(); ++i) {
    if (na[i].size() != nb[i].size()) return na[i].size() < nb[i].size() ? -1 : 1;
    if (int c = na[i].compare(nb[i]); c != 0) return c < 0 ? -1 : 1;
  }
  if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool winner_outranks(const Winner& a, const StoredRow& ra, const Winner& b, const StoredRow& rb) {
  const Provenance &pa = ra.prov, &pb = rb.prov;
  for (auto [x, y] : {std::pair{&pa.driver, &pb.driver}, {&pa.cuda_runtime, &pb.cuda_runtime},
                      {&pa.nvrtc, &pb.nvrtc}, {&pa.library, &pb.library},
                      {&pa.family_version, &pb.family_version}, {&pa.gemmtune_version, &pb.gemmtune_version}})
    if (int c = compare_versions(*x, *y); c != 0) return c > 0;
  if (pa.method_version != pb.method_version) return pa.method_version > pb.method_version;
  if (ra.time_unix != rb.time_unix) return ra.time_unix > rb.time_unix;
  if (a.time_unix != b.time_unix) return a.time_unix > b.time_unix;
  return std::tie(a.row_uuid, a.config_name, a.note, a.time_utc) > std::tie(b.row_uuid, b.config_name, b.note, b.time_utc);
}

// ---------------------------------------------------------------------------------------
// Merging

int64_t Store::merge_from(const Store& other) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::error_code ec;
  if (impl_.get() == other.impl_.get() || fs::equivalent(impl_->path, other.impl_->path, ec))
    return 0;  // a store merged with itself is itself
  std::scoped_lock lock(impl_->mu, other.impl_->mu);
  sqlite3* db = impl_->db;
  Transaction t(db);
  int64_t before = sqlite3_total_changes64(db);
  {
    // Streamed row by row: a store can be larger than memory would like.
    Stmt src(other.impl_->db, "SELECT " + column_list(other.impl_->version) + " FROM results ORDER BY id");
    Stmt dst(db, insert_sql(true));
    while (src.step()) {
      StoredRow r = read_row(src.get());
      dst.reset();
      Binder b{dst.get()};
      row_fields(b, std::as_const(r));
      dst.step();
    }
  }
  int64_t added = sqlite3_total_changes64(db) - before;
  for (const Winner& theirs : other.impl_->query_winners("", Where{})) {
    auto mine = impl_->winner(theirs.key, theirs.family);
    if (mine) {
      auto ra = impl_->row_by("row_uuid", theirs.row_uuid);
      auto rb = impl_->row_by("row_uuid", mine->row_uuid);
      if (!ra || !rb)
        throw RuntimeFailure(fmt::format("merge: a winner of '{}' names a measurement that is not stored",
                                         theirs.key.text()));
      if (!winner_outranks(theirs, *ra, *mine, *rb)) continue;
    }
    impl_->put_winner(theirs);
  }
  {
    // Roofs: per (device, name) the newer measurement wins (the upsert keeps the newer).
    Stmt src(other.impl_->db, "SELECT device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                              "time_unix FROM roofs");
    Stmt dst(db, "INSERT INTO roofs (device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                 "time_unix) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_name, name) DO UPDATE SET "
                 "value = excluded.value, unit = excluded.unit, how = excluded.how, sm_clock_mhz = "
                 "excluded.sm_clock_mhz, power_w = excluded.power_w, temp_c = excluded.temp_c, time_utc = "
                 "excluded.time_utc, time_unix = excluded.time_unix WHERE excluded.time_unix > roofs.time_unix OR "
                 "(excluded.time_unix = roofs.time_unix AND excluded.value > roofs.value)");
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 10; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  if (other.impl_->has_table("validations")) {
    // Validations: per identity the newer timing wins (the upsert keeps the newer).
    Stmt src(other.impl_->db, "SELECT device_name, at_key, from_key, from_config, time_unix, record FROM validations");
    Stmt dst(db, kValidationUpsert);
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 6; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  {
    // The families' parameter names (note_param_names): names for a version are the same
    // wherever they were noted, so either store's will do.
    Stmt src(other.impl_->db, "SELECT key, value FROM meta WHERE substr(key, 1, 12) = 'param_names/'");
    Stmt dst(db, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING");
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 2; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  t.commit();
  return added;
}

int64_t merge_stores(const std::vector<fs::path>& inputs, const fs::path& output) {
  std::error_code ec;
  for (const auto& in : inputs)
    if (fs::exists(output, ec) && fs::equivalent(in, output, ec))
      throw InputError(fmt::format("merge: the input {} is also the output", in.string()));
  // Inputs are judged before the output is created, so bad input leaves nothing behind.
  std::vector<Store> sources;
  for (const auto& in : inputs) sources.push_back(Store::open_readonly(in));
  Store out = Store::open(output);
  int64_t added = 0;
  for (const auto& s : sources) added += out.merge_from(s);
  return added;
}

static void bind_nullable(sqlite3_stmt* s, int i, double v) {
  if (std::isfinite(v))
    sqlite3_bind_double(s, i, v);
  else
    sqlite3_bind_null(s, i);
}

void Store::put_roof(const RoofRow& r0) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  RoofRow r = r0;
  if (r.time_utc.empty()) std::tie(r.time_utc, r.time_unix) = utc_now();
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db,
          "INSERT INTO roofs (device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, time_unix) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_name, name) DO UPDATE SET value = excluded.value, "
          "unit = excluded.unit, how = excluded.how, sm_clock_mhz = excluded.sm_clock_mhz, power_w = excluded.power_w, "
          "temp_c = excluded.temp_c, time_utc = excluded.time_utc, time_unix = excluded.time_unix "
          "WHERE excluded.time_unix >= roofs.time_unix");
  sqlite3_stmt* s = st.get();
  sqlite3_bind_text(s, 1, r.device_name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, r.name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 3, r.value);
  sqlite3_bind_text(s, 4, r.unit.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 5, r.how.c_str(), -1, SQLITE_TRANSIENT);
  bind_nullable(s, 6, r.sm_clock_mhz);
  bind_nullable(s, 7, r.power_w);
  bind_nullable(s, 8, r.temp_c);
  sqlite3_bind_text(s, 9, r.time_utc.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 10, r.time_unix);
  st.step();
}

static std::string param_names_key(const std::string& family, const std::string& version) {
  return "param_names/" + family + "/" + version;
}

static std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i <= s.size() && !s.empty();) {
    size_t j = std::min(s.find(',', i), s.size());
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void Store::note_param_names(const std::string& family, const std::string& version,
                             const std::vector<std::string>& names) {
  if (impl_->readonly || names.empty()) return;
  std::string joined;
  for (auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  if (split_names(joined) == param_names(family, version)) return;  // one write per new set of names
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  sqlite3_bind_text(st.get(), 1, param_names_key(family, version).c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), 2, joined.c_str(), -1, SQLITE_TRANSIENT);
  st.step();
}

std::vector<std::string> Store::param_names(const std::string& family, const std::string& version) const {
  std::lock_guard lock(impl_->mu);
  // The version's own names first, else another version's (the most recently added key).
  const std::string prefix = "param_names/" + family + "/";
  Stmt st(impl_->db, "SELECT value FROM meta WHERE key = ?1 UNION ALL SELECT value FROM (SELECT value FROM meta "
                     "WHERE substr(key, 1, length(?2)) = ?2 ORDER BY rowid DESC LIMIT 1)");
  sqlite3_bind_text(st.get(), 1, param_names_key(family, version).c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), 2, prefix.c_str(), -1, SQLITE_TRANSIENT);
  if (!st.step()) return {};
  const unsigned char* v = sqlite3_column_text(st.get(), 0);
  return v ? split_names(reinterpret_cast<const char*>(v)) : std::vector<std::string>{};
}

void Store::put_validation(const ValidationRow& v) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, kValidationUpsert);
  sqlite3_stmt* s = st.get();
  int i = 0;
  for (const std::string* t : {&v.device_name, &v.at, &v.from, &v.from_config})
    sqlite3_bind_text(s, ++i, t->c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 5, v.time_unix);
  sqlite3_bind_text(s, 6, v.record.c_str(), -1, SQLITE_TRANSIENT);
  st.step();
}

std::vector<ValidationRow> Store::validations(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  std::vector<ValidationRow> out;
  if (!impl_->has_table("validations")) return out;  // a read-only store from before them
  Stmt st(impl_->db, std::string("SELECT device_name, at_key, from_key, from_config, time_unix, record FROM "
                                 "validations") +
                         (device_name ? " WHERE device_name = ?" : "") + " ORDER BY device_name, at_key, from_key, from_config");
  if (device_name) sqlite3_bind_text(st.get(), 1, device_name->c_str(), -1, SQLITE_TRANSIENT);
  auto text = [](sqlite3_stmt* s, int i) {
    auto* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (st.step()) {
    sqlite3_stmt* s = st.get();
    out.push_back({text(s, 0), text(s, 1), text(s, 2), text(s, 3), sqlite3_column_double(s, 4), text(s, 5)});
  }
  return out;
}

std::vector<RoofRow> Store::roofs(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  std::vector<RoofRow> out;
  Stmt st(impl_->db, std::string("SELECT device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                                 "time_unix FROM roofs") +
                         (device_name ? " WHERE device_name = ?" : "") + " ORDER BY device_name, name");
  if (device_name) sqlite3_bind_text(st.get(), 1, device_name->c_str(), -1, SQLITE_TRANSIENT);
  auto real = [](sqlite3_stmt* s, int i) {
    return sqlite3_column_type(s, i) == SQLITE_NULL ? kNaN : sqlite3_column_double(s, i);
  };
  auto text = [](sqlite3_stmt* s, int i) {
    auto* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (st.step()) {
    sqlite3_stmt* s = st.get();
    out.push_back(RoofRow{text(s, 0), text(s, 1), real(s, 2), text(s, 3), text(s, 4), real(s, 5), real(s, 6),
                          real(s, 7), text(s, 8), real(s, 9)});
  }
  return out;
}

bool Store::check_integrity(std::string* why) const {
  std::lock_guard lock(impl_->mu);
  std::string report;
  {
    Stmt st(impl_->db, "PRAGMA integrity_check");
    while (st.step()) {
      std::string line = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
      if (line != "ok") report += line + "\n";
    }
  }
  {
    Stmt st(impl_->db, "PRAGMA foreign_key_check");
    while (st.step())
      report += fmt::format("{}: row {} refers to a missing {}\n",
                            reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)),
                            sqlite3_column_int64(st.get(), 1),
                            reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2)));
  }
  if (why) *why = report;
  return report.empty();
}

// ---------------------------------------------------------------------------------------
// JSON

static nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json problem_to_json(const Problem& p) {
  nlohmann::json j = p;  // problem.cpp's fields (in_b and scale where they say something)
  j["key"] = p.key();
  return j;
}

Problem problem_from_json(const nlohmann::json& j) {
  Problem p;
  p.m = j.at("m").get<int64_t>();
  p.n = j.at("n").get<int64_t>();
  p.k = j.at("k").get<int64_t>();
  p.in = parse_dtype(j.at("in").get<std::string>(), "problem.in");
  p.out = parse_dtype(j.at("out").get<std::string>(), "problem.out");
  p.layout = parse_layout(j.at("layout").get<std::string>(), "problem.layout");
  p.lda = j.at("lda").get<int64_t>();
  p.ldb = j.at("ldb").get<int64_t>();
  p.ldc = j.at("ldc").get<int64_t>();
  p.align = j.at("align").get<int32_t>();
  p.in_b = j.contains("in_b") ? parse_dtype(j.at("in_b").get<std::string>(), "problem.in_b") : p.in;
  p.scale = j.contains("scale") ? parse_scale_mode(j.at("scale").get<std::string>(), "problem.scale") : ScaleMode::none;
  p.constant = j.contains("constant") ? parse_constant(j.at("constant").get<std::string>(), "problem.constant") : 0;
  p.validate();
  return p;
}

void to_json(nlohmann::json& j, const ResultKey& k) {
  j = {{"device_name", k.device_name}, {"m", k.m}, {"n", k.n}, {"k", k.k}, {"in", to_string(k.in)},
       {"out", to_string(k.out)}, {"layout", to_string(k.layout)}, {"align", k.align}, {"text", k.text()}};
  if (k.in_b != k.in) j["in_b"] = to_string(k.in_b);
  if (k.scale != ScaleMode::none) j["scale"] = to_string(k.scale);
  if (k.constant) j["constant"] = constant_text(k.constant);
}

void from_json(const nlohmann::json& j, ResultKey& k) {
  k.device_name = j.at("device_name").get<std::string>();
  k.m = j.at("m").get<int64_t>();
  k.n = j.at("n").get<int64_t>();
  k.k = j.at("k").get<int64_t>();
  k.in = parse_dtype(j.at("in").get<std::string>(), "key.in");
  k.out = parse_dtype(j.at("out").get<std::string>(), "key.out");
  k.layout = parse_layout(j.at("layout").get<std::string>(), "key.layout");
  k.align = j.at("align").get<int32_t>();
  k.in_b = j.contains("in_b") ? parse_dtype(j.at("in_b").get<std::string>(), "key.in_b") : k.in;
  k.scale = j.contains("scale") ? parse_scale_mode(j.at("scale").get<std::string>(), "key.scale") : ScaleMode::none;
  k.constant = j.contains("constant") ? parse_constant(j.at("constant").get<std::string>(), "key.constant") : 0;
}

void to_json(nlohmann::json& j, const StoredRow& r) {
  j = {{"id", r.id},
       {"row_uuid", r.row_uuid},
       {"time_utc", r.time_utc},
       {"time_unix", r.time_unix},
       {"tune_id", r.tune_id},
       {"replay", r.replay},
       {"key", r.key().text()},
       {"device_name", r.prov.device_name},
       {"problem", problem_to_json(r.problem)},
       {"family", r.family},
       {"config", r.config},
       {"config_name", r.config_name},
       {"config_hash", r.config_hash},
       {"transform", to_string(r.transform)},
       {"measurement", r.m},
       {"tflops", num(r.tflops())},
       {"provenance", r.prov},
       {"fingerprint", r.fingerprint}};
}

void from_json(const nlohmann::json& j, StoredRow& r) {
  r.id = j.value("id", int64_t(0));
  r.row_uuid = j.value("row_uuid", "");
  r.time_utc = j.value("time_utc", "");
  r.time_unix = j.value("time_unix", 0.0);
  r.tune_id = j.value("tune_id", "");
  r.replay = j.value("replay", false);
  r.problem = problem_from_json(j.at("problem"));
  r.family = j.at("family").get<std::string>();
  r.config = j.at("config").get<Config>();
  r.config_name = j.value("config_name", "");
  r.config_hash = j.value("config_hash", "");
  r.transform = parse_transform(j.value("transform", std::string("none")), "row transform");
  r.m = j.at("measurement").get<Measurement>();
  r.prov = j.at("provenance").get<Provenance>();
  if (r.prov.device_name.empty()) r.prov.device_name = j.value("device_name", "");
  r.fingerprint = j.value("fingerprint", r.prov.fingerprint());
}

void to_json(nlohmann::json& j, const Winner& w) {
  const Decision& d = w.decision;
  j = {{"key", w.key},           {"family", w.family},     {"config_name", w.config_name},
       {"transform", to_string(w.transform)},
       {"row_id", w.row_id},     {"row_uuid", w.row_uuid}, {"note", w.note},
       {"time_utc", w.time_utc}, {"time_unix", w.time_unix},
       {"tie", d.tie},           {"tie_with", d.tie_with}, {"runner_up", d.runner_up},
       {"margin", std::isfinite(d.margin) ? nlohmann::json(d.margin) : nlohmann::json()}};
}

void from_json(const nlohmann::json& j, Winner& w) {
  w.key = j.at("key").get<ResultKey>();
  w.family = j.at("family").get<std::string>();
  w.config_name = j.at("config_name").get<std::string>();
  w.transform = parse_transform(j.value("transform", std::string("none")), "winner transform");
  w.row_id = j.value("row_id", int64_t(0));
  w.row_uuid = j.at("row_uuid").get<std::string>();
  w.note = j.value("note", "");
  w.time_utc = j.value("time_utc", "");
  w.time_unix = j.value("time_unix", 0.0);
  w.decision.tie = j.value("tie", false);
  w.decision.tie_with = j.value("tie_with", "");
  w.decision.runner_up = j.value("runner_up", "");
  auto m = j.find("margin");
  w.decision.margin = m != j.end() && m->is_number() ? m->get<double>() : kNaN;
}

}  // namespace gt
