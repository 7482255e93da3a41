// The store's test fixtures: sample rows, SQL that takes a store back to older schemas, and
// SQLite read directly. Shared by the store's unit tests and its reliability tests.
#pragma once
#include "store/store.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

namespace gt::store_test {
namespace fs = std::filesystem;
using nlohmann::json;

// SQL that turns this build's store back into schema v8's (no config facts: params, params_from,
// heuristic_rank and pick, v9).
#define GT_TO_V8                                                                                                  \
  "ALTER TABLE results DROP COLUMN params; ALTER TABLE results DROP COLUMN params_from; "                          \
  "ALTER TABLE results DROP COLUMN heuristic_rank; ALTER TABLE results DROP COLUMN pick; "
inline constexpr const char* kToV8 = GT_TO_V8;
// ... back into schema v5's (no b_dtype and scale_mode, v6: the winners' key loses them, which
// SQLite drops only by copying the table).
#define GT_TO_V5                                                                                                  \
  GT_TO_V8 "DROP INDEX results_by_key; ALTER TABLE results DROP COLUMN b_dtype; ALTER TABLE results DROP COLUMN scale_mode; " \
  "CREATE INDEX results_by_key ON results (device_name, m, n, k, in_dtype, out_dtype, layout, align, family, "      \
  "config_hash, time_unix); "                                                                                      \
  "CREATE TABLE w5 (device_name TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, "       \
  "in_dtype TEXT NOT NULL, out_dtype TEXT NOT NULL, layout TEXT NOT NULL, align INTEGER NOT NULL, "                \
  "family TEXT NOT NULL, config_name TEXT NOT NULL, row_uuid TEXT NOT NULL REFERENCES results (row_uuid), "         \
  "note TEXT NOT NULL, time_utc TEXT NOT NULL, time_unix REAL NOT NULL, tie INTEGER NOT NULL, tie_with TEXT NOT "   \
  "NULL, runner_up TEXT NOT NULL, margin REAL, "                                                                   \
  "PRIMARY KEY (device_name, m, n, k, in_dtype, out_dtype, layout, align, family)); "                               \
  "INSERT INTO w5 SELECT device_name, m, n, k, in_dtype, out_dtype, layout, align, family, config_name, row_uuid, " \
  "note, time_utc, time_unix, tie, tie_with, runner_up, margin FROM winners; "                                     \
  "DROP TABLE winners; ALTER TABLE w5 RENAME TO winners; "
inline constexpr const char* kToV5 = GT_TO_V5;
// ... back into schema v4's (no transforms, v5).
inline constexpr const char* kDropTransforms = GT_TO_V5 "ALTER TABLE results DROP COLUMN transform; ";
// ... and back into schema v2's (no decision columns, v3; no build hashes, v4).
inline constexpr const char* kDropDecisions =
    GT_TO_V5
    "ALTER TABLE winners DROP COLUMN tie; ALTER TABLE winners DROP COLUMN tie_with; "
    "ALTER TABLE winners DROP COLUMN runner_up; ALTER TABLE winners DROP COLUMN margin; "
    "ALTER TABLE results DROP COLUMN build_hash; ALTER TABLE results DROP COLUMN transform; ";

inline Provenance sample_prov(const std::string& family = "fam_a") {
  Provenance p;
  p.device_name = "NVIDIA Test GPU";
  p.device_uuid = "GPU-12345678-abcd-ef01-2345-6789abcdef01";
  p.arch = "sm_90";
  p.sm_count = 132;
  p.driver = "580.95.05";
  p.cuda_runtime = "13.0";
  p.nvrtc = "13.0";
  p.library = "";
  p.family = family;
  p.family_version = "1.2";
  p.source_hash = std::numeric_limits<uint64_t>::max();  // the full 64 bits survive
  p.input_dist = "normal";
  p.input_seed = 0xfedcba9876543210ull;
  p.mode = "full";
  p.host = "host-1";
  return p;
}

inline Problem sample_problem() {
  Problem p = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nt);
  return p;
}

inline StoredRow sample_row(Status st = Status::ok, const std::string& family = "fam_a", int64_t cfg = 1) {
  StoredRow r;
  r.tune_id = "tune-1";
  r.problem = sample_problem();
  r.family = family;
  r.config = {128, cfg, -1};
  r.config_name = family + "_bm128_x" + std::to_string(cfg);
  r.config_hash = hex64(stable_hash(r.config_name));
  r.m.status = st;
  r.prov = sample_prov(family);
  if (st == Status::ok) {
    r.m.time = summarize({100.0, 101.0, 99.5, 100.25, 100.5});
    r.m.err_rel_fro = 1.25e-4;
    r.m.err_max_norm = 3.5e-3;
    r.m.sensors = {1980, 3201, 650.5, 61, 700};
    r.m.throttle = "none";
    r.m.res = {128, 0, 0, 0, 32768};
    r.m.compile_s = 0.25;
    r.m.measure_s = 1.5;
  } else {
    r.m.message = std::string("failed: ") + to_string(st);
  }
  return r;
}

inline bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every field of two rows, the doubles NaN-aware (JSON would turn NaN and inf into null).
inline void require_same_row(const StoredRow& a, const StoredRow& b) {
  CHECK(json(a).dump() == json(b).dump());
  const Measurement &x = a.m, &y = b.m;
  for (auto [u, v] : {std::pair{x.time.median, y.time.median}, {x.time.mean, y.time.mean}, {x.time.min, y.time.min},
                      {x.time.max, y.time.max}, {x.time.p10, y.time.p10}, {x.time.p90, y.time.p90},
                      {x.time.ci_low, y.time.ci_low}, {x.time.ci_high, y.time.ci_high}, {x.err_rel_fro, y.err_rel_fro},
                      {x.err_max_norm, y.err_max_norm}, {x.sensors.sm_clock_mhz, y.sensors.sm_clock_mhz},
                      {x.sensors.mem_clock_mhz, y.sensors.mem_clock_mhz}, {x.sensors.power_w, y.sensors.power_w},
                      {x.sensors.temp_c, y.sensors.temp_c}, {x.sensors.power_limit_w, y.sensors.power_limit_w},
                      {x.compile_s, y.compile_s}, {x.measure_s, y.measure_s}, {a.time_unix, b.time_unix}})
    CHECK(same_double(u, v));
  CHECK(x.time.count == y.time.count);
  CHECK(x.time.center == y.time.center);
  CHECK(x.message == y.message);  // embedded NULs and all
  CHECK(a.prov == b.prov);
  CHECK(a.problem.lda == b.problem.lda);
  CHECK(a.config == b.config);
}

inline void raw_sql(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  INFO(msg);
  REQUIRE(rc == SQLITE_OK);
}

// The schema version a store's meta table states, read with SQLite alone.
inline std::string schema_version(const fs::path& db) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

}  // namespace gt::store_test
