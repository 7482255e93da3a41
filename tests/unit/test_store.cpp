// The results store: round trips, reuse and staleness, bad files, crashes, concurrent
// writers, merging. CPU only.
#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <limits>
#include <poll.h>
#include <random>
#include <set>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// SQL that turns this build's store back into schema v8's (no config facts: params, params_from,
// heuristic_rank and pick, v9).
#define GT_TO_V8                                                                                                  \
  "ALTER TABLE results DROP COLUMN params; ALTER TABLE results DROP COLUMN params_from; "                          \
  "ALTER TABLE results DROP COLUMN heuristic_rank; ALTER TABLE results DROP COLUMN pick; "
const char* kToV8 = GT_TO_V8;
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
const char* kToV5 = GT_TO_V5;
// ... back into schema v4's (no transforms, v5).
const char* kDropTransforms = GT_TO_V5 "ALTER TABLE results DROP COLUMN transform; ";
// ... and back into schema v2's (no decision columns, v3; no build hashes, v4).
const char* kDropDecisions =
    GT_TO_V5
    "ALTER TABLE winners DROP COLUMN tie; ALTER TABLE winners DROP COLUMN tie_with; "
    "ALTER TABLE winners DROP COLUMN runner_up; ALTER TABLE winners DROP COLUMN margin; "
    "ALTER TABLE results DROP COLUMN build_hash; ALTER TABLE results DROP COLUMN transform; ";

Provenance sample_prov(const std::string& family = "fam_a") {
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

Problem sample_problem() {
  Problem p = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nt);
  return p;
}

StoredRow sample_row(Status st = Status::ok, const std::string& family = "fam_a", int64_t cfg = 1) {
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

bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every field of two rows, the doubles NaN-aware (JSON would turn NaN and inf into null).
void require_same_row(const StoredRow& a, const StoredRow& b) {
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

void raw_sql(const fs::path& db, const std::string& sql) {
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
std::string schema_version(const fs::path& db) {
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

// The contents of a store, independent of its local row ids: rows by uuid, winners.
json snapshot(const Store& s) {
  json rows = json::object();
  for (const StoredRow& r : s.rows()) {
    json j = r;
    j.erase("id");
    rows[r.row_uuid] = j;
  }
  json winners = json::array();
  for (const Winner& w : s.winners()) {
    json j = w;
    j.erase("row_id");
    winners.push_back(j);
  }
  return {{"rows", rows}, {"winners", winners}};
}

// --- The writer helper, run as a child process with its stdout on a pipe.

fs::path writer_binary() { return executable_dir() / "store_writer"; }

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end of its stdout
  std::string out;
};

Child spawn_writer(const fs::path& db, int count, const std::string& tag) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  posix_spawn_file_actions_addclose(&fa, p[1]);
  std::string bin = writer_binary().string(), dbs = db.string(), cnt = std::to_string(count);
  char* argv[] = {bin.data(), dbs.data(), cnt.data(), const_cast<char*>(tag.c_str()), nullptr};
  Child c;
  int rc = posix_spawn(&c.pid, bin.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  INFO("spawning " << bin);
  REQUIRE(rc == 0);
  c.fd = p[0];
  return c;
}

// Reads what is there (up to `ms` milliseconds); false at end of file.
bool read_some(Child& c, int ms) {
  pollfd pf{c.fd, POLLIN, 0};
  if (poll(&pf, 1, ms) <= 0) return true;
  char buf[65536];
  ssize_t n = read(c.fd, buf, sizeof buf);
  if (n > 0) c.out.append(buf, size_t(n));
  return n > 0 || (n < 0 && errno == EINTR);
}

// The complete lines the writer reported (a line cut by the kill is dropped).
std::vector<json> reported_rows(const std::string& out) {
  std::vector<json> rows;
  size_t pos = 0;
  for (size_t nl; (nl = out.find('\n', pos)) != std::string::npos; pos = nl + 1)
    rows.push_back(json::parse(out.substr(pos, nl - pos)));
  return rows;
}

int wait_child(Child& c) {
  while (read_some(c, 1000)) {
  }
  close(c.fd);
  int st = 0;
  waitpid(c.pid, &st, 0);
  return st;
}

// Every reported row is stored, intact (the same JSON, id included).
void require_reported_rows_present(const Store& s, const std::vector<json>& reported) {
  for (const json& j : reported) {
    auto r = s.get_by_uuid(j.at("row_uuid").get<std::string>());
    REQUIRE(r);
    REQUIRE(json(*r) == j);
  }
}

}  // namespace

TEST_CASE("store: every field round-trips, NaN stays NaN", "[store]") {
  test::TempDir tmp;
  Store s = Store::open(tmp.path / "sub" / "dir" / "results.db");  // parent directories are created
  REQUIRE(fs::exists(tmp.path / "sub" / "dir" / "results.db"));

  StoredRow ok = sample_row(Status::ok);
  ok.m.time.p90 = kNaN;  // a single unknown among known numbers
  ok.m.err_max_norm = std::numeric_limits<double>::infinity();
  ok.m.sensors.temp_c = kNaN;
  ok.m.compiled_from_cache = true;
  ok.m.quick = true;
  ok.replay = true;
  ok.prov.library = "cublasLt 130000";
  ok.prov.mode = "quick";
  ok.problem.lda = 4100;  // not the tight leading dimension
  ok.problem.align = alignment_of(ok.problem);
  ok.m.message = std::string("quote \" newline\n tab\t NUL") + '\0' + " after, \u00b5s";
  int64_t id = s.insert(ok);
  CHECK(id > 0);
  CHECK(ok.id == id);
  CHECK(ok.row_uuid.size() == 32);
  CHECK(ok.time_utc.size() == 27);  // 2026-11-29T12:34:56.123456Z
  CHECK(ok.time_utc.back() == 'Z');
  CHECK(ok.fingerprint == ok.prov.fingerprint());

  auto back = s.get(id);
  REQUIRE(back);
  require_same_row(ok, *back);
  CHECK(std::isnan(back->m.time.p90));
  CHECK(std::isinf(back->m.err_max_norm));
  CHECK(back->prov.source_hash == std::numeric_limits<uint64_t>::max());
  CHECK(back->problem.lda == 4100);
  CHECK(back->problem.align == 8);
  CHECK(back->tflops() == Approx(2.0 * 4096.0 * 4096.0 * 4096.0 / (back->m.time.median * 1e-6) / 1e12));

  SECTION("every status, failures with their messages and NaN numbers") {
    for (Status st : {Status::ok, Status::cannot_implement, Status::resources, Status::compile_failed,
                      Status::verify_failed, Status::runtime_fault, Status::timeout}) {
      StoredRow r = sample_row(st);
      s.insert(r);
      auto b = s.get_by_uuid(r.row_uuid);
      REQUIRE(b);
      CHECK(b->m.status == st);
      require_same_row(r, *b);
      if (st != Status::ok) {
        CHECK(std::isnan(b->m.time.median));
        CHECK(std::isnan(b->tflops()));
        CHECK(b->m.message == std::string("failed: ") + to_string(st));
      }
    }
    RowFilter f;
    f.status = Status::verify_failed;
    CHECK(s.count(f) == 1);
    CHECK(s.count() == 8);
  }

  SECTION("rows round-trip through JSON") {
    StoredRow r = json(*back).get<StoredRow>();
    CHECK(json(r) == json(*back));
    CHECK(std::isnan(r.m.time.p90));
    CHECK(r.prov == back->prov);
    Provenance p = json(ok.prov).get<Provenance>();
    CHECK(p == ok.prov);
  }

  SECTION("a row is immutable: its uuid cannot be stored twice") {
    StoredRow again = *back;
    CHECK_THROWS_AS(s.insert(again), RuntimeFailure);
    CHECK(s.count() == 1);
  }

  SECTION("a row whose family and provenance disagree is refused") {
    StoredRow r = sample_row();
    r.prov.family = "other";
    CHECK_THROWS_AS(s.insert(r), RuntimeFailure);
  }

  std::string why;
  CHECK(s.check_integrity(&why));
  CHECK(why.empty());
}

TEST_CASE("store: the fingerprint covers what decides reuse, and only that", "[store]") {
  Provenance base = sample_prov();
  std::string fp = base.fingerprint();
  CHECK(fp.size() == 16);
  auto differs = [&](auto change) {
    Provenance p = base;
    change(p);
    return p.fingerprint() != fp;
  };
  CHECK(differs([](Provenance& p) { p.device_name = "NVIDIA H100"; }));
  CHECK(differs([](Provenance& p) { p.arch = "sm_80"; }));
  CHECK(differs([](Provenance& p) { p.driver = "580.95.06"; }));
  CHECK(differs([](Provenance& p) { p.cuda_runtime = "13.1"; }));
  CHECK(differs([](Provenance& p) { p.nvrtc = "12.8"; }));
  CHECK(differs([](Provenance& p) { p.library = "cublasLt 130100"; }));
  CHECK(differs([](Provenance& p) { p.family = "fam_b"; }));
  CHECK(differs([](Provenance& p) { p.family_version = "1.3"; }));
  CHECK(differs([](Provenance& p) { p.source_hash ^= 1; }));
  CHECK(differs([](Provenance& p) { p.input_dist = "uniform"; }));
  CHECK(differs([](Provenance& p) { p.method_version += 1; }));
  // Fields are delimited: moving text from one field to the next changes the hash.
  CHECK(differs([](Provenance& p) { p.driver = "580.95.0"; p.cuda_runtime = "513.0"; }));
  CHECK_FALSE(differs([](Provenance& p) { p.device_uuid = "GPU-other"; }));
  CHECK_FALSE(differs([](Provenance& p) { p.host = "host-2"; }));
  CHECK_FALSE(differs([](Provenance& p) { p.input_seed = 7; }));
  CHECK_FALSE(differs([](Provenance& p) { p.mode = "quick"; }));
  CHECK_FALSE(differs([](Provenance& p) { p.sm_count = 114; }));
  CHECK_FALSE(differs([](Provenance& p) { p.gemmtune_version = "9.9.9"; }));
}

TEST_CASE("store: reuse needs the same fingerprint; stale rows are counted, never reused", "[store]") {
  test::TempDir tmp;
  Store s = Store::open(tmp.path / "r.db");
  Problem p = sample_problem();
  const std::string dev = "NVIDIA Test GPU";

  StoredRow old = sample_row();
  old.prov.nvrtc = "12.8";
  s.insert(old);
  StoredRow cur_template = sample_row();
  std::string fp = cur_template.prov.fingerprint();
  REQUIRE(old.fingerprint != fp);

  // Only a row with another toolchain exists: nothing to reuse, one stale row.
  CHECK_FALSE(s.find_reusable(p, dev, "fam_a", old.config_hash, fp, true));
  CHECK(s.count_stale(p, dev, "fam_a", fp) == 1);
  CHECK(s.count_stale(p, dev, "fam_a", fp, old.config_hash) == 1);
  CHECK(s.count_stale(p, dev, "fam_a", fp, std::string("0000000000000000")) == 0);
  CHECK(s.count_stale(p, dev, "fam_b", fp) == 0);
  CHECK(s.stale_rows(p, dev, "fam_a", fp).at(0).row_uuid == old.row_uuid);
  // Under its own fingerprint the old row is reusable.
  CHECK(s.find_reusable(p, dev, "fam_a", old.config_hash, old.fingerprint, true));

  SECTION("another driver or another plugin source is stale as well") {
    StoredRow d = sample_row();
    d.prov.driver = "570.1";
    s.insert(d);
    StoredRow h = sample_row();
    h.prov.source_hash = 42;
    s.insert(h);
    CHECK_FALSE(s.find_reusable(p, dev, "fam_a", d.config_hash, fp, false));
    CHECK(s.count_stale(p, dev, "fam_a", fp) == 3);
  }

  SECTION("a matching row is reused; the oldest, which a first tune measured and learned from") {
    StoredRow a = sample_row();
    a.time_unix = 1000;
    a.time_utc = "1970-01-01T00:16:40.000000Z";
    s.insert(a);
    StoredRow b = sample_row();
    b.time_unix = 2000;
    b.time_utc = "1970-01-01T00:33:20.000000Z";
    s.insert(b);
    auto r = s.find_reusable(p, dev, "fam_a", a.config_hash, fp, true);
    REQUIRE(r);
    CHECK(r->row_uuid == a.row_uuid);  // b is a later figure (a re-timing): a repeated tune sees a
    // Another problem key, device or config does not match.
    Problem q = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
    CHECK_FALSE(s.find_reusable(q, dev, "fam_a", a.config_hash, fp, true));
    CHECK_FALSE(s.find_reusable(p, "NVIDIA Other", "fam_a", a.config_hash, fp, true));
    CHECK_FALSE(s.find_reusable(p, dev, "fam_a", "ffffffffffffffff", fp, true));
    CHECK(s.count_stale(p, dev, "fam_a", fp) == 1);  // the current rows are not stale
  }

  SECTION("quick timings do not satisfy a full run; quick failures do") {
    StoredRow q = sample_row();
    q.m.quick = true;
    q.prov.mode = "quick";
    s.insert(q);
    CHECK_FALSE(s.find_reusable(p, dev, "fam_a", q.config_hash, fp, true));
    CHECK(s.find_reusable(p, dev, "fam_a", q.config_hash, fp, false));
    StoredRow cf = sample_row(Status::compile_failed, "fam_a", 2);
    cf.m.quick = true;
    s.insert(cf);
    auto r = s.find_reusable(p, dev, "fam_a", cf.config_hash, fp, true);
    REQUIRE(r);
    CHECK(r->m.status == Status::compile_failed);
  }

  SECTION("final failures are reused; a fault or timeout is retried once") {
    for (Status st : {Status::cannot_implement, Status::resources, Status::compile_failed, Status::verify_failed}) {
      StoredRow r = sample_row(st, "fam_a", 10 + int64_t(st));
      s.insert(r);
      auto got = s.find_reusable(p, dev, "fam_a", r.config_hash, fp, true);
      REQUIRE(got);
      CHECK(got->m.status == st);
    }
    for (Status st : {Status::runtime_fault, Status::timeout}) {
      StoredRow r1 = sample_row(st, "fam_a", 20 + int64_t(st));
      s.insert(r1);
      CHECK_FALSE(s.find_reusable(p, dev, "fam_a", r1.config_hash, fp, true));  // worth one more try
      StoredRow r2 = sample_row(st, "fam_a", 20 + int64_t(st));
      s.insert(r2);
      auto got = s.find_reusable(p, dev, "fam_a", r1.config_hash, fp, true);  // failed twice: final
      REQUIRE(got);
      CHECK(got->row_uuid == r2.row_uuid);
      StoredRow r3 = sample_row(Status::ok, "fam_a", 20 + int64_t(st));
      s.insert(r3);
      got = s.find_reusable(p, dev, "fam_a", r1.config_hash, fp, true);
      REQUIRE(got);
      CHECK(got->m.status == Status::ok);
    }
  }

  SECTION("replayed rows are never reused") {
    StoredRow r = sample_row();
    r.replay = true;
    s.insert(r);
    CHECK_FALSE(s.find_reusable(p, dev, "fam_a", r.config_hash, fp, false));
  }
}

TEST_CASE("store: an exploration another process stored meanwhile is not stored again", "[store]") {
  // Three tunes of one job on one store each explore the same configs: each asks the store
  // first, but between asking and storing another may have stored the config. Stored with
  // unless_reusable (under the write lock), the later ones take the first row instead.
  test::TempDir tmp;
  Store s = Store::open(tmp.path / "r.db");
  StoredRow first = sample_row();
  const int64_t id = s.insert(first, true);
  StoredRow again = sample_row();  // the same config, measured by another tune
  again.tune_id = "tune-2";
  again.m.time = summarize({90.0, 91.0, 92.0});
  CHECK(s.insert(again, true) == id);
  CHECK(again.row_uuid == first.row_uuid);  // it is the first row now
  CHECK(s.count() == 1);
  StoredRow other = sample_row(Status::ok, "fam_a", 2);  // another config: stored
  other.tune_id = "tune-2";
  CHECK(s.insert(other, true) != id);
  CHECK(s.count() == 2);
  StoredRow full = sample_row();  // a full figure where only a quick one is stored: stored
  first.m.quick = true;
  test::TempDir tmp2;
  Store q = Store::open(tmp2.path / "q.db");
  q.insert(first, true);
  full.tune_id = "tune-3";
  full.m.quick = false;
  CHECK(q.insert(full, true) != first.id);
  CHECK(q.count() == 2);
  StoredRow retimed = sample_row();  // a re-timing (not an exploration) is always stored
  retimed.tune_id = "tune-2";
  s.insert(retimed);
  CHECK(s.count() == 3);
}

TEST_CASE("store: queries by key, family, status and tune; best per key", "[store]") {
  test::TempDir tmp;
  Store s = Store::open(tmp.path / "q.db");
  auto timed = [](StoredRow r, double us) {
    r.m.time = summarize({us, us, us});
    return r;
  };
  StoredRow a1 = timed(sample_row(Status::ok, "fam_a", 1), 200);
  StoredRow a2 = timed(sample_row(Status::ok, "fam_a", 2), 150);
  StoredRow b1 = timed(sample_row(Status::ok, "fam_b", 1), 180);
  StoredRow bf = sample_row(Status::verify_failed, "fam_b", 9);  // no time: never best
  StoredRow other = timed(sample_row(Status::ok, "fam_a", 1), 50);
  other.problem = Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  other.tune_id = "tune-2";
  StoredRow replayed = timed(sample_row(Status::ok, "fam_a", 3), 1);
  replayed.replay = true;
  for (StoredRow* r : {&a1, &a2, &b1, &bf, &other, &replayed}) s.insert(*r);

  ResultKey k = a1.key();
  CHECK(k.text() == "NVIDIA Test GPU 4096x4096x4096 f16>f16 nt a16");
  CHECK(s.count(RowFilter::of(k)) == 5);
  RowFilter f = RowFilter::of(k);
  f.family = "fam_b";
  CHECK(s.rows(f).size() == 2);
  f.status = Status::ok;
  REQUIRE(s.rows(f).size() == 1);
  CHECK(s.rows(f)[0].row_uuid == b1.row_uuid);
  RowFilter t;
  t.tune_id = "tune-2";
  CHECK(s.rows(t).size() == 1);
  RowFilter lim;
  lim.limit = 2;
  CHECK(s.rows(lim).size() == 2);
  CHECK(s.rows(lim)[0].row_uuid == a1.row_uuid);  // oldest first

  auto keys = s.keys();
  REQUIRE(keys.size() == 2);
  CHECK(keys[0] < keys[1]);
  CHECK(std::count(keys.begin(), keys.end(), k) == 1);

  auto best = s.best(RowFilter::of(k));
  REQUIRE(best.size() == 1);
  CHECK(best[0].row_uuid == a2.row_uuid);  // the replayed 1 µs row does not count
  auto per_family = s.best(RowFilter::of(k), true);
  REQUIRE(per_family.size() == 2);
  CHECK(per_family[0].row_uuid == a2.row_uuid);
  CHECK(per_family[1].row_uuid == b1.row_uuid);
  CHECK(s.best().size() == 2);  // both keys
  RowFilter rf = RowFilter::of(k);
  rf.replay = true;
  REQUIRE(s.best(rf).size() == 1);
  CHECK(s.best(rf)[0].row_uuid == replayed.row_uuid);

  SECTION("best by the figure: the mean of a row timed at the power cap") {
    // Median 140 but mean 120 (two clock levels): at the cap the mean is its time, and it
    // beats fam_a's 150 us; as a median row it would not.
    StoredRow capped = sample_row(Status::ok, "fam_c", 1);
    std::vector<double> x(40, 140.0);
    for (int i = 0; i < 19; ++i) x[size_t(2 * i)] = 97.0;
    capped.m.time = summarize(x, Center::mean);
    capped.m.throttle = "sw_power_cap";
    REQUIRE(capped.m.time.median == 140.0);
    REQUIRE(capped.m.time.mean < 125.0);
    s.insert(capped);
    auto b = s.best(RowFilter::of(k));
    REQUIRE(b.size() == 1);
    CHECK(b[0].row_uuid == capped.row_uuid);
    CHECK(b[0].m.time.center == Center::mean);
    CHECK(b[0].m.time_us() == capped.m.time.mean);
  }

  SECTION("winners: set, replace, refuse what cannot win") {
    s.set_winner(k, "fam_a", a2.config_name, a2.id, "fastest of fam_a");
    s.set_winner(k, kAllFamilies, a2.config_name, a2.id);
    auto w = s.winner(k, "fam_a");
    REQUIRE(w);
    CHECK(w->row_id == a2.id);
    CHECK(w->row_uuid == a2.row_uuid);
    CHECK(w->note == "fastest of fam_a");
    s.set_winner(k, kAllFamilies, b1.config_name, b1.id, "re-timed finalists");
    REQUIRE(s.winner(k, kAllFamilies));
    CHECK(s.winner(k, kAllFamilies)->config_name == b1.config_name);
    CHECK(s.winners().size() == 2);
    CHECK(s.winners(std::string("nobody")).empty());
    CHECK_THROWS_AS(s.set_winner(k, "fam_b", bf.config_name, bf.id), RuntimeFailure);      // not ok
    CHECK_THROWS_AS(s.set_winner(k, "fam_b", a1.config_name, a1.id), RuntimeFailure);      // other family
    CHECK_THROWS_AS(s.set_winner(k, "fam_a", other.config_name, other.id), RuntimeFailure);  // other key
    CHECK_THROWS_AS(s.set_winner(k, "fam_a", "wrong_name", a1.id), RuntimeFailure);
    CHECK_THROWS_AS(s.set_winner(k, "fam_a", a1.config_name, 99999), RuntimeFailure);
    json j = *w;
    CHECK(j.get<Winner>().row_uuid == w->row_uuid);
    CHECK(s.check_integrity());
  }
}

// Schema v3 keeps the winners' decisions as columns (tie, tie_with, runner_up, margin). A v2
// store is upgraded in place when opened for writing: every row and winner stays, the ties
// its notes stated become columns; opened read-only it is read as it is.
TEST_CASE("store: decisions are columns, and a v2 store is migrated to them in place", "[store]") {
  test::TempDir tmp;
  const fs::path p = tmp.path / "v2.db";
  StoredRow a = sample_row(Status::ok, "fam_a", 1), a2 = sample_row(Status::ok, "fam_a", 2),
            b = sample_row(Status::ok, "fam_b", 1);
  const ResultKey k = ResultKey::of("NVIDIA Test GPU", sample_problem());
  {
    Store s = Store::open(p);
    for (StoredRow* r : {&a, &a2, &b}) s.insert(*r);
    // Notes as v2 wrote them.
    s.set_winner(k, "fam_a", a.config_name, a.id, "tie with " + a2.config_name + " (overlapping intervals); the baseline kept");
    s.set_winner(k, "fam_b", b.config_name, b.id, "");
    s.set_winner(k, kAllFamilies, a.config_name, a.id, "tie between fam_a and fam_b: fam_a kept");
  }
  raw_sql(p, std::string(kDropDecisions) + "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  const std::string v2_bytes = test::read_file(p);
  {
    Store ro = Store::open_readonly(p);
    auto w = ro.winner(k, "fam_a");
    REQUIRE(w);
    CHECK_FALSE(w->decision.tie);  // v2 has no decision columns: read as none
    CHECK(std::isnan(w->decision.margin));
    CHECK_THAT(w->note, Catch::StartsWith("tie with"));
  }
  CHECK(test::read_file(p) == v2_bytes);  // reading changes nothing
  {
    Store rw = Store::open(p);
    CHECK(rw.rows().size() == 3);
    CHECK(rw.winners().size() == 3);
    auto fa = rw.winner(k, "fam_a"), fb = rw.winner(k, "fam_b"), all = rw.winner(k, kAllFamilies);
    REQUIRE((fa && fb && all));
    CHECK(fa->decision.tie);
    CHECK(fa->decision.tie_with == a2.config_name);
    CHECK(fa->decision.runner_up == a2.config_name);
    CHECK(std::isnan(fa->decision.margin));  // v2 did not keep it
    CHECK_FALSE(fb->decision.tie);
    CHECK(fb->decision.tie_with.empty());
    CHECK(all->decision.tie);
    CHECK(all->decision.tie_with == "fam_b");
    CHECK(fa->note == "tie with " + a2.config_name + " (overlapping intervals); the baseline kept");
    CHECK(rw.check_integrity());
    // A decision set now is kept as it was given, and travels through a merge and JSON.
    Decision d;
    d.tie = false;
    d.runner_up = a2.config_name;
    d.margin = 0.031;
    rw.set_winner(k, "fam_a", a.config_name, a.id, "", d);
    auto again = rw.winner(k, "fam_a");
    REQUIRE(again);
    CHECK_FALSE(again->decision.tie);
    CHECK(again->decision.runner_up == a2.config_name);
    CHECK(again->decision.margin == Approx(0.031));
    Winner back = json(*again).get<Winner>();
    CHECK(back.decision.margin == Approx(0.031));
    CHECK(back.decision.runner_up == a2.config_name);
  }
  const fs::path merged = tmp.path / "merged.db";
  merge_stores({p}, merged);
  auto w = Store::open_readonly(merged).winner(k, "fam_a");
  REQUIRE(w);
  CHECK(w->decision.margin == Approx(0.031));
  auto all = Store::open_readonly(merged).winner(k, kAllFamilies);
  REQUIRE(all);
  CHECK(all->decision.tie_with == "fam_b");
  CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));
}

// An integer column of one row, read with SQLite alone; "NULL" for NULL.
std::string column_of(const fs::path& db, const std::string& col, int64_t id) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  const std::string sql = fmt::format("SELECT {} FROM results WHERE id = {}", col, id);
  REQUIRE(sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const unsigned char* t = sqlite3_column_text(st, 0);
  std::string v = t ? reinterpret_cast<const char*>(t) : "NULL";
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

TEST_CASE("store: a config's parameters and a library's rank are columns; a v8 store's come from its descriptions",
          "[store]") {
  test::TempDir tmp;
  fs::path p = tmp.path / "facts.db";
  // As gemmtune up to v8 wrote cuBLASLt's rows: the facts only in the description.
  StoredRow pick = sample_row(Status::ok, "cublaslt", 1), ranked = sample_row(Status::ok, "cublaslt", 2),
            outside = sample_row(Status::ok, "cublaslt", 3), plain = sample_row(Status::ok, "fam_a", 4);
  pick.m.message = "finalist: re-timed; cuBLASLt 13.1.0 algo 66: tile 256x128, stages 64xauto, split-K 2 (reduction "
                   "inplace), CTA swizzle off; heuristic rank 0 (cuBLASLt's pick), 3.88 waves";
  ranked.m.message = "cuBLASLt 13.1.0 algo 55: tile 128x256, stages 8x3, split-K 1; heuristic rank 3, 1.29 waves";
  outside.m.message = "cuBLASLt 13.1.0 algo 21; not among the heuristic's 8 picks";
  plain.m.message = "finalist: re-timed";
  {
    Store s = Store::open(p);
    for (StoredRow* r : {&pick, &ranked, &outside, &plain}) s.insert(*r);
  }
  raw_sql(p, std::string(kToV8) + "UPDATE meta SET value = '8' WHERE key = 'schema_version'");
  const std::string v8_bytes = test::read_file(p);
  const std::string pick_params = "algo=66,tile=256x128,stages=64xauto,split-K=2,reduction=inplace,CTA swizzle=off";
  auto check_facts = [&](const std::vector<StoredRow>& rows) {
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].params == pick_params);
    CHECK(rows[0].params_from == "description");
    CHECK(rows[0].heuristic_rank == 0);
    CHECK(rows[0].pick());
    CHECK(rows[1].params == "algo=55,tile=128x256,stages=8x3,split-K=1");
    CHECK(rows[1].heuristic_rank == 3);
    CHECK_FALSE(rows[1].pick());
    CHECK(rows[2].params.empty());  // an algorithm without its attributes spells no config
    CHECK(rows[2].params_from.empty());
    CHECK(rows[2].heuristic_rank == -1);
    CHECK(rows[3].params.empty());
    CHECK_FALSE(rows[3].heuristic_rank);
  };
  SECTION("read-only, a v8 store reads its facts out of the descriptions, and is left as it was") {
    check_facts(Store::open_readonly(p).rows());
    CHECK(test::read_file(p) == v8_bytes);
  }
  SECTION("opened for writing, the step to v9 writes them into the columns once") {
    {
      Store rw = Store::open(p);
      CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));  // through v9 (and any later step)
      check_facts(rw.rows());
    }
    // The columns themselves, as SQL reads them: no description involved.
    CHECK(column_of(p, "params", pick.id) == pick_params);
    CHECK(column_of(p, "heuristic_rank", pick.id) == "0");
    CHECK(column_of(p, "pick", pick.id) == "1");
    CHECK(column_of(p, "heuristic_rank", ranked.id) == "3");
    CHECK(column_of(p, "pick", ranked.id) == "0");
    CHECK(column_of(p, "heuristic_rank", plain.id) == "NULL");
    CHECK(column_of(p, "params_from", plain.id) == "");
    // A v9 row's columns are the data: its words do not override them.
    raw_sql(p, fmt::format("UPDATE results SET message = 'heuristic rank 0 (cuBLASLt''s pick)' WHERE id = {}", ranked.id));
    auto again = Store::open_readonly(p).get(ranked.id);
    REQUIRE(again);
    CHECK(again->heuristic_rank == 3);
  }
  SECTION("a merge from a v8 store carries the facts its descriptions state") {
    fs::path q = tmp.path / "merged.db";
    Store out = Store::open(q);
    out.merge_from(Store::open_readonly(p));
    check_facts(out.rows());
    CHECK(test::read_file(p) == v8_bytes);
  }
}

TEST_CASE("store: new rows write their params and rank, and read them back as written", "[store]") {
  test::TempDir tmp;
  fs::path p = tmp.path / "new.db";
  Store s = Store::open(p);
  StoredRow lt = sample_row(Status::ok, "cublaslt", 1), src = sample_row(Status::ok, "fam_a", 2);
  lt.params = "algo=66,tile=256x128,split_k=1";
  lt.params_from = "space";
  lt.heuristic_rank = 0;
  lt.m.message = "no words about ranks here";
  src.params = "bm=128,x=2,z=-1";
  src.params_from = "space";
  s.insert(lt);
  s.insert(src);
  auto a = s.get(lt.id), b = s.get(src.id);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->params == lt.params);
  CHECK(a->params_from == "space");
  CHECK(a->heuristic_rank == 0);
  CHECK(a->pick());
  CHECK(b->params == src.params);
  CHECK_FALSE(b->heuristic_rank);
  CHECK_FALSE(b->pick());
  CHECK(column_of(p, "pick", lt.id) == "1");
  CHECK(column_of(p, "heuristic_rank", src.id) == "NULL");
  StoredRow j = json(*a).get<StoredRow>();  // and through JSON (--json, export)
  CHECK(j.params == lt.params);
  CHECK(j.heuristic_rank == 0);
  CHECK(json(*a)["pick"] == true);
  CHECK_FALSE(json(*b).get<StoredRow>().heuristic_rank);
}

TEST_CASE("store: files that are not stores are refused and left unchanged", "[store]") {
  test::TempDir tmp;
  auto refused = [](const fs::path& p, const std::string& phrase, bool readonly = false) {
    std::string before = test::read_file(p);
    std::string msg;
    try {
      if (readonly) Store::open_readonly(p);
      else Store::open(p);
    } catch (const InputError& e) {
      msg = e.what();
    }
    INFO("message: " << msg);
    CHECK_THAT(msg, Catch::Contains(p.string()));
    CHECK_THAT(msg, Catch::Contains(phrase));
    CHECK(test::read_file(p) == before);
  };

  SECTION("not a database") {
    fs::path p = tmp.path / "notes.txt";
    test::write_file(p, "this is a text file, not a database\n" + std::string(5000, 'x'));
    refused(p, "is not a gemmtune store (not an SQLite database)");
    refused(p, "is not a gemmtune store (not an SQLite database)", true);
    fs::path tiny = tmp.path / "tiny";
    test::write_file(tiny, "abc");
    refused(tiny, "not an SQLite database");
    // A valid header on garbage.
    fs::path fake = tmp.path / "fake.db";
    test::write_file(fake, std::string("SQLite format 3", 16) + std::string(8192, '\x7f'));
    refused(fake, "not an SQLite database");
  }
  SECTION("an SQLite database of something else") {
    fs::path p = tmp.path / "foreign.db";
    raw_sql(p, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'x');");
    refused(p, "is an SQLite database but not a gemmtune store");
    refused(p, "customers");
    fs::path m = tmp.path / "foreign_meta.db";
    raw_sql(m, "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('application', 'other');");
    refused(m, "is an SQLite database but not a gemmtune store");
  }
  SECTION("a store of schema v1 reads as medians and is upgraded when opened for writing") {
    fs::path p = tmp.path / "v1.db";
    StoredRow r = sample_row();
    {
      Store s = Store::open(p);
      s.insert(r);
    }
    // What gemmtune wrote before the figure's statistic was stored (and before decisions were columns).
    raw_sql(p, std::string(kDropDecisions) +
                   "ALTER TABLE results DROP COLUMN time_center; UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    {
      Store ro = Store::open_readonly(p);
      auto rows = ro.rows();
      REQUIRE(rows.size() == 1);
      CHECK(rows[0].m.time.center == Center::median);
      CHECK(ro.best().size() == 1);
    }
    {
      Store rw = Store::open(p);
      StoredRow capped = sample_row(Status::ok, "fam_a", 2);
      capped.m.time = summarize({90.0, 110.0, 120.0}, Center::mean);
      rw.insert(capped);
      auto rows = rw.rows();
      REQUIRE(rows.size() == 2);
      require_same_row(rows[0], r);
      CHECK(rows[1].m.time.center == Center::mean);
    }
    CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));
  }
  SECTION("a store of schema v3 has no build hashes; it is migrated in place and its rows stay, unknown builds") {
    fs::path p = tmp.path / "v3.db";
    StoredRow r = sample_row();
    r.prov.build_hash = 0x1234;
    {
      Store s = Store::open(p);
      s.insert(r);
    }
    raw_sql(p, std::string(kDropTransforms) +
                   "ALTER TABLE results DROP COLUMN build_hash; UPDATE meta SET value = '3' WHERE key = 'schema_version'");
    {
      Store ro = Store::open_readonly(p);  // read as it is: no column, every build unknown
      auto rows = ro.rows();
      REQUIRE(rows.size() == 1);
      CHECK(rows[0].prov.build_hash == 0);
    }
    Store rw = Store::open(p);
    StoredRow next = sample_row(Status::ok, "fam_a", 2);
    next.prov.build_hash = 0xabcdef;
    rw.insert(next);
    auto rows = rw.rows();
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].prov.build_hash == 0);
    CHECK(rows[0].config_name == r.config_name);
    CHECK(rows[1].prov.build_hash == 0xabcdef);
    // A reuse that names a build passes over the row whose build is unknown.
    const Problem& q = rows[0].problem;
    CHECK(rw.find_reusable(q, rows[0].prov.device_name, rows[0].family, rows[0].config_hash, rows[0].fingerprint, false));
    CHECK_FALSE(rw.find_reusable(q, rows[0].prov.device_name, rows[0].family, rows[0].config_hash, rows[0].fingerprint,
                                 false, false, 0x1234));
  }
  SECTION("a store of schema v4 has no transforms; it is migrated in place and every old row ran the plain problem") {
    fs::path p = tmp.path / "v4.db";
    StoredRow r = sample_row();
    {
      Store s = Store::open(p);
      s.insert(r);
      s.set_winner(r.key(), r.family, r.config_name, r.id, "kept");
    }
    raw_sql(p, std::string(kDropTransforms) + "UPDATE meta SET value = '4' WHERE key = 'schema_version'");
    const std::string v4_bytes = test::read_file(p);
    {
      Store ro = Store::open_readonly(p);  // read as it is: every row plain
      auto rows = ro.rows();
      REQUIRE(rows.size() == 1);
      CHECK(rows[0].transform == Transform::none);
      RowFilter plain, padded;
      plain.transform = Transform::none;
      padded.transform = Transform::pad;
      CHECK(ro.count(plain) == 1);
      CHECK(ro.count(padded) == 0);
      REQUIRE(ro.winners().size() == 1);
      CHECK(ro.winners()[0].transform == Transform::none);
    }
    CHECK(test::read_file(p) == v4_bytes);  // reading changes nothing
    Store rw = Store::open(p);
    CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));
    StoredRow padded = sample_row(Status::ok, "fam_a", 2);
    padded.transform = Transform::pad;
    padded.config_name = transformed_name(padded.config_name, Transform::pad);
    rw.insert(padded);
    auto rows = rw.rows();
    REQUIRE(rows.size() == 2);
    require_same_row(rows[0], r);
    CHECK(rows[1].transform == Transform::pad);
    CHECK(rows[1].config_name == padded.config_name);
    RowFilter only_pad;
    only_pad.transform = Transform::pad;
    CHECK(rw.count(only_pad) == 1);
    rw.set_winner(padded.key(), padded.family, padded.config_name, rows[1].id, "padded");
    auto w = rw.winner(padded.key(), padded.family);
    REQUIRE(w);
    CHECK(w->transform == Transform::pad);
    CHECK(json(*w).get<Winner>().transform == Transform::pad);
    CHECK(json(rows[1]).get<StoredRow>().transform == Transform::pad);
    CHECK(rw.check_integrity());
    // A transformed row must carry its transform in its name: the name is what tells them apart.
    StoredRow unnamed = sample_row(Status::ok, "fam_a", 3);
    unnamed.transform = Transform::swap;
    CHECK_THROWS_WITH(rw.insert(unnamed), Catch::Contains("without it"));
  }
  SECTION("a store of schema v5 has no FP8 key; it reads as unscaled and, migrated, keeps FP8 keys apart") {
    fs::path p = tmp.path / "v5.db";
    StoredRow r = sample_row();
    {
      Store s = Store::open(p);
      s.insert(r);
      s.set_winner(r.key(), r.family, r.config_name, r.id, "kept");
    }
    raw_sql(p, std::string(kToV5) + "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
    const std::string v5_bytes = test::read_file(p);
    {
      Store ro = Store::open_readonly(p);  // read as it is: B's type is A's, no scales
      auto rows = ro.rows();
      REQUIRE(rows.size() == 1);
      CHECK(rows[0].problem.in_b == rows[0].problem.in);
      CHECK(rows[0].problem.scale == ScaleMode::none);
      RowFilter scaled;
      scaled.scale = ScaleMode::row;
      CHECK(ro.count(scaled) == 0);
      REQUIRE(ro.winners().size() == 1);
      CHECK(ro.winners()[0].key == r.key());
      CHECK(ro.keys().size() == 1);
    }
    CHECK(test::read_file(p) == v5_bytes);  // reading changes nothing
    Store rw = Store::open(p);
    CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));  // upgraded through v6 to the current
    require_same_row(rw.rows()[0], r);
    REQUIRE(rw.winner(r.key(), r.family));
    // Two FP8 problems that differ only in the scale mode, or in B's type, are three keys.
    auto fp8_row = [&](ScaleMode mode, DType b, int64_t cfg) {
      StoredRow x = sample_row(Status::ok, "fam_a", cfg);
      x.problem = Problem::make(256, 512, 1024, DType::e4m3, DType::bf16, Layout::nt, b, mode);
      return x;
    };
    StoredRow tensor = fp8_row(ScaleMode::tensor, DType::e4m3, 4), row = fp8_row(ScaleMode::row, DType::e4m3, 5),
              mixed = fp8_row(ScaleMode::row, DType::e5m2, 6);
    for (StoredRow* x : {&tensor, &row, &mixed}) {
      rw.insert(*x);
      rw.set_winner(x->key(), x->family, x->config_name, x->id, "fp8");
    }
    CHECK(row.key().text() == "NVIDIA Test GPU 256x512x1024 e4m3>bf16 nt a16 row");
    CHECK(mixed.key().text() == "NVIDIA Test GPU 256x512x1024 e4m3:e5m2>bf16 nt a16 row");
    CHECK(rw.keys().size() == 4);
    CHECK(rw.winners().size() == 4);
    for (StoredRow* x : {&tensor, &row, &mixed}) {
      auto w = rw.winner(x->key(), x->family);
      REQUIRE(w);
      CHECK(w->config_name == x->config_name);
      CHECK(json(*w).get<Winner>().key == x->key());
      auto back = rw.get(x->id);
      REQUIRE(back);
      CHECK(back->problem.key() == x->problem.key());
      CHECK(json(*back).get<StoredRow>().problem.key() == x->problem.key());
    }
    RowFilter rows_only;
    rows_only.scale = ScaleMode::row;
    CHECK(rw.count(rows_only) == 2);
    CHECK(rw.best(RowFilter::of(mixed.key())).size() == 1);
    CHECK(rw.check_integrity());
  }
  SECTION("a store of schema v7 has no validations; it reads as none and, migrated, keeps them and merges the newer") {
    fs::path p = tmp.path / "v7.db";
    {
      Store s = Store::open(p);
      s.insert(sample_row());
    }
    raw_sql(p, std::string(kToV8) + "DROP TABLE validations; UPDATE meta SET value = '7' WHERE key = 'schema_version'");
    const std::string v7_bytes = test::read_file(p);
    CHECK(Store::open_readonly(p).validations().empty());
    CHECK(test::read_file(p) == v7_bytes);  // reading changes nothing
    Store rw = Store::open(p);
    CHECK(schema_version(p) == std::to_string(kStoreSchemaVersion));
    ValidationRow v{"NVIDIA Test GPU", "at-key", "from-key", "cfg_a", 100, R"({"held":true})"};
    rw.put_validation(v);
    ValidationRow older = v;
    older.time_unix = 50;
    older.record = R"({"held":false})";
    rw.put_validation(older);  // an older timing of the same identity does not replace the newer
    REQUIRE(rw.validations().size() == 1);
    CHECK(rw.validations()[0].record == v.record);
    CHECK(rw.validations("another GPU").empty());
    fs::path q = tmp.path / "other.db";
    Store other = Store::open(q);
    ValidationRow newer = v;
    newer.time_unix = 200;
    newer.record = R"({"held":false})";
    other.put_validation(newer);
    other.put_validation(ValidationRow{"NVIDIA Test GPU", "at-key", "from-key", "cfg_b", 10, "{}"});
    rw.merge_from(other);
    auto all = rw.validations();
    REQUIRE(all.size() == 2);  // per (device, at, from, from_config): the newer
    CHECK(all[0].from_config == "cfg_a");
    CHECK(all[0].record == newer.record);
    CHECK(all[1].from_config == "cfg_b");
  }
  SECTION("a store of a newer schema") {
    fs::path p = tmp.path / "newer.db";
    {
      Store s = Store::open(p);
      s.insert(sample_row());
    }
    const int newer = kStoreSchemaVersion + 1;
    raw_sql(p, fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'", newer));
    refused(p, fmt::format("has schema v{}; this gemmtune reads up to v{} — upgrade gemmtune", newer, kStoreSchemaVersion));
    refused(p, fmt::format("has schema v{}", newer), true);
  }
  SECTION("a directory, a missing file for reading") {
    refused(tmp.path, "is a directory");
    std::string msg;
    try {
      Store::open_readonly(tmp.path / "missing.db");
    } catch (const InputError& e) {
      msg = e.what();
    }
    CHECK_THAT(msg, Catch::Contains("missing.db: no such store"));
    CHECK_FALSE(fs::exists(tmp.path / "missing.db"));
  }
  SECTION("an empty file becomes a store; a store opens read-only") {
    fs::path p = tmp.path / "empty.db";
    test::write_file(p, "");
    {
      Store s = Store::open(p);
      s.insert(sample_row());
    }
    Store r = Store::open_readonly(p);
    CHECK(r.readonly());
    CHECK(r.count() == 1);
    CHECK_THROWS_AS(r.insert(sample_row()), RuntimeFailure);
  }
}

TEST_CASE("store: a writer killed at random moments loses at most the row in flight", "[store]") {
  REQUIRE(fs::exists(writer_binary()));
  test::TempDir tmp;
  fs::path db = tmp.path / "crash.db";
  std::mt19937 rng(12345);
  std::vector<json> all_reported;
  const int kills = 20;
  for (int round = 0; round < kills; ++round) {
    Child c = spawn_writer(db, 0, "crash" + std::to_string(round));
    // Every other round at a random time from the start (opening, schema creation in
    // round 0, WAL recovery of the last kill); the others a random fraction of an insert
    // after a random number of commits, so kills land inside transactions.
    using clock = std::chrono::steady_clock;
    if (round % 2 == 0) {
      auto deadline = clock::now() + std::chrono::microseconds(rng() % 100000);
      while (clock::now() < deadline) read_some(c, 1);
    } else {
      size_t target = rng() % 8;
      auto give_up = clock::now() + std::chrono::seconds(10);
      while (reported_rows(c.out).size() < target && clock::now() < give_up) read_some(c, 1);
      auto deadline = clock::now() + std::chrono::microseconds(rng() % 8000);
      while (clock::now() < deadline) read_some(c, 1);
    }
    REQUIRE(kill(c.pid, SIGKILL) == 0);
    int st = wait_child(c);
    INFO("round " << round << ": writer output " << c.out.substr(0, 300));
    REQUIRE(WIFSIGNALED(st));  // it was still writing when killed, not failed before
    auto reported = reported_rows(c.out);
    all_reported.insert(all_reported.end(), reported.begin(), reported.end());

    Store s = Store::open(db);  // resumes: recovers the WAL
    std::string why;
    REQUIRE(s.check_integrity(&why));
    require_reported_rows_present(s, all_reported);
    // At most one committed row per kill went unreported (killed between commit and print).
    int64_t n = s.count();
    CHECK(n >= int64_t(all_reported.size()));
    CHECK(n <= int64_t(all_reported.size()) + round + 1);
  }
  INFO("rows reported over all rounds: " << all_reported.size());
  CHECK(all_reported.size() > 20);  // the kills did land mid-stream
  Store s = Store::open(db);
  StoredRow r = sample_row();
  int64_t before = s.count();
  s.insert(r);
  CHECK(s.count() == before + 1);
}

TEST_CASE("store: concurrent writers, one fresh file", "[store]") {
  REQUIRE(fs::exists(writer_binary()));
  test::TempDir tmp;
  fs::path db = tmp.path / "fresh" / "concurrent.db";  // created by the racing writers
  const int writers = 4, each = 200;
  std::vector<Child> cs;
  for (int i = 0; i < writers; ++i) cs.push_back(spawn_writer(db, each, "w" + std::to_string(i)));
  // Read all pipes as they fill, so no writer blocks on a full pipe.
  for (bool open = true; open;) {
    open = false;
    for (auto& c : cs)
      if (c.fd >= 0) {
        if (read_some(c, 5)) open = true;
        else {
          close(c.fd);
          c.fd = -1;
        }
      }
  }
  std::vector<json> reported;
  for (auto& c : cs) {
    int st = 0;
    waitpid(c.pid, &st, 0);
    INFO("writer output: " << c.out.substr(0, 300));
    REQUIRE(WIFEXITED(st));
    REQUIRE(WEXITSTATUS(st) == 0);
    auto r = reported_rows(c.out);
    CHECK(r.size() == size_t(each));
    reported.insert(reported.end(), r.begin(), r.end());
  }
  Store s = Store::open(db);
  REQUIRE(s.check_integrity());
  CHECK(s.count() == writers * each);
  require_reported_rows_present(s, reported);
  std::set<int64_t> ids;
  for (auto& j : reported) ids.insert(j.at("id").get<int64_t>());
  CHECK(ids.size() == size_t(writers * each));
}

TEST_CASE("store: versions compare as numbers", "[store]") {
  CHECK(compare_versions("580.95.05", "580.105.8") < 0);
  CHECK(compare_versions("13.0", "12.8") > 0);
  CHECK(compare_versions("cublasLt 130000", "cublasLt 120804") > 0);
  CHECK(compare_versions("1.10", "1.9") > 0);
  CHECK(compare_versions("1.2", "1.2.1") < 0);
  CHECK(compare_versions("1.02", "1.2") != 0);  // equal numbers, different text: still ordered
  CHECK(compare_versions("1.02", "1.2") == -compare_versions("1.2", "1.02"));
  CHECK(compare_versions("99999999999999999999999", "100000000000000000000000") < 0);  // beyond 64 bits
  CHECK(compare_versions("", "") == 0);
}

TEST_CASE("store: merging is associative, commutative and idempotent", "[store]") {
  test::TempDir tmp;
  auto at = [](StoredRow r, double t, const std::string& nvrtc) {
    r.row_uuid = new_uuid();  // known before insert: the same row can go into several stores
    r.time_unix = t;
    r.time_utc = "t" + std::to_string(int64_t(t));
    r.prov.nvrtc = nvrtc;
    return r;
  };
  ResultKey k = sample_row().key();
  StoredRow old_toolchain_new_time = at(sample_row(Status::ok, "fam_a", 1), 2000, "12.8");
  StoredRow new_toolchain_old_time = at(sample_row(Status::ok, "fam_a", 2), 1000, "13.0");
  StoredRow fam_b = at(sample_row(Status::ok, "fam_b", 1), 1500, "12.8");
  StoredRow shared = at(sample_row(Status::compile_failed, "fam_a", 7), 500, "13.0");
  StoredRow k2_old = at(sample_row(Status::ok, "fam_a", 3), 100, "13.0");
  k2_old.problem = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, Layout::nn);
  StoredRow k2_new = at(k2_old, 200, "13.0");
  k2_new.config = {128, 4, -1};
  k2_new.config_name = "fam_a_bm128_x4";
  ResultKey key2 = k2_old.key();

  Store a = Store::open(tmp.path / "a.db");
  Store b = Store::open(tmp.path / "b.db");
  Store c = Store::open(tmp.path / "c.db");
  auto put = [](Store& s, StoredRow r) { return s.insert(r); };
  int64_t a1 = put(a, old_toolchain_new_time);
  put(a, shared);
  int64_t a2 = put(a, k2_old);
  a.set_winner(k, kAllFamilies, old_toolchain_new_time.config_name, a1, "A");
  a.set_winner(k, "fam_a", old_toolchain_new_time.config_name, a1);
  a.set_winner(key2, kAllFamilies, k2_old.config_name, a2);
  int64_t b1 = put(b, new_toolchain_old_time);
  put(b, shared);
  int64_t b2 = put(b, k2_new);
  b.set_winner(k, kAllFamilies, new_toolchain_old_time.config_name, b1, "B");
  b.set_winner(k, "fam_a", new_toolchain_old_time.config_name, b1);
  b.set_winner(key2, kAllFamilies, k2_new.config_name, b2);
  int64_t c1 = put(c, fam_b);
  put(c, shared);
  put(c, old_toolchain_new_time);  // the same row as in A (same uuid)
  c.set_winner(k, kAllFamilies, fam_b.config_name, c1, "C");
  c.set_winner(k, "fam_b", fam_b.config_name, c1);

  int n = 0;
  auto merge2 = [&](const Store& x, const Store& y) {
    Store out = Store::open(tmp.path / ("m" + std::to_string(n++) + ".db"));
    out.merge_from(x);
    out.merge_from(y);
    return out;
  };
  Store bc = merge2(b, c), ab = merge2(a, b);
  Store left = merge2(a, bc), right = merge2(ab, c);
  json l = snapshot(left), r = snapshot(right);
  CHECK(l == r);
  CHECK(l["rows"].size() == 6);  // 3 + 3 + 3 rows, the shared one once, A's row in C once
  CHECK(snapshot(merge2(a, b)) == snapshot(merge2(b, a)));
  CHECK(snapshot(merge2(a, a)) == snapshot(a));
  CHECK(left.check_integrity());

  // The rule: the newer toolchain wins over the newer measurement; at equal toolchains the
  // newer measurement wins; winners of other families stand beside.
  REQUIRE(left.winner(k, kAllFamilies));
  CHECK(left.winner(k, kAllFamilies)->row_uuid == new_toolchain_old_time.row_uuid);
  CHECK(left.winner(k, kAllFamilies)->note == "B");
  CHECK(left.winner(k, "fam_a")->row_uuid == new_toolchain_old_time.row_uuid);
  CHECK(left.winner(k, "fam_b")->row_uuid == fam_b.row_uuid);
  CHECK(left.winner(key2, kAllFamilies)->config_name == "fam_a_bm128_x4");
  CHECK(left.winners().size() == 4);
  // Local ids are the merged store's own.
  auto w = left.winner(k, kAllFamilies);
  CHECK(left.get(w->row_id)->row_uuid == w->row_uuid);

  // Merging again changes nothing; a store merged into itself neither.
  json before = snapshot(left);
  CHECK(left.merge_from(b) == 0);
  CHECK(left.merge_from(left) == 0);
  CHECK(snapshot(left) == before);

  SECTION("merge_stores combines files; bad input leaves no output") {
    fs::path out = tmp.path / "merged" / "out.db";
    CHECK(merge_stores({a.path(), b.path(), c.path()}, out) == 6);
    CHECK(snapshot(Store::open_readonly(out)) == l);
    CHECK_THROWS_AS(merge_stores({a.path(), out}, out), InputError);
    fs::path junk = tmp.path / "junk.db";
    test::write_file(junk, "junk junk junk junk");
    fs::path out2 = tmp.path / "out2.db";
    CHECK_THROWS_AS(merge_stores({a.path(), junk}, out2), InputError);
    CHECK_FALSE(fs::exists(out2));
  }
}

TEST_CASE("store: provenance collected from a device and a plugin", "[store]") {
  const Family* fam = test::plugins().find("naive");
  REQUIRE(fam);
  DeviceInfo dev;
  dev.name = "NVIDIA Test GPU";
  dev.uuid = "GPU-0000";
  dev.limits = arch_limits("sm_90");
  dev.limits.sm_count = 132;
  dev.driver_version = "13.0";
  dev.runtime_version = "13.0";
  Provenance p = Provenance::collect(dev, *fam, "normal", 99, true);
  CHECK(p.device_name == dev.name);
  CHECK(p.arch == "sm_90");
  CHECK(p.sm_count == 132);
  CHECK(p.family == "naive");
  CHECK(p.family_version == fam->version());
  CHECK(p.source_hash == fam->source_hash());
  CHECK(p.source_hash != 0);
  CHECK(p.library.empty());  // a source family
  CHECK(p.nvrtc == nvrtc_version());
  CHECK_FALSE(p.driver.empty());  // NVML's string, or the driver's CUDA version without NVML
  CHECK(p.mode == "quick");
  CHECK(p.input_seed == 99);
  CHECK(p.host == host_name());
  CHECK_FALSE(p.host.empty());
  CHECK(p.gemmtune_version == std::string(kGemmtuneVersion));
}

TEST_CASE("store: a family's parameter names, per version, read back, merged, and unread as absent", "[store]") {
  test::TempDir d;
  const fs::path a = d.path / "a.db", b = d.path / "b.db";
  {
    Store s = Store::open(a);
    CHECK(s.param_names("cublaslt", "1.0").empty());
    s.note_param_names("cublaslt", "1.0", {"algo", "tile", "split_k"});
    s.note_param_names("cublaslt", "1.0", {"algo", "tile", "split_k"});  // again: no change
    s.note_param_names("toy", "2.0", {"x"});
    CHECK(s.param_names("cublaslt", "1.0") == std::vector<std::string>{"algo", "tile", "split_k"});
    // Another version: its own names where noted, else another version's.
    CHECK(s.param_names("cublaslt", "1.1") == std::vector<std::string>{"algo", "tile", "split_k"});
    s.note_param_names("cublaslt", "1.1", {"algo", "stages"});
    CHECK(s.param_names("cublaslt", "1.1") == std::vector<std::string>{"algo", "stages"});
    CHECK(s.param_names("cublaslt", "1.0") == std::vector<std::string>{"algo", "tile", "split_k"});
    CHECK(s.param_names("cublas", "1.0").empty());  // a family whose name is a prefix of another's
    CHECK(s.param_names("toy", "2.0") == std::vector<std::string>{"x"});
  }
  Store ro = Store::open_readonly(a);
  CHECK(ro.param_names("toy", "2.0") == std::vector<std::string>{"x"});
  ro.note_param_names("toy", "2.0", {"y"});  // read-only: nothing written, nothing thrown
  CHECK(ro.param_names("toy", "2.0") == std::vector<std::string>{"x"});
  Store out = Store::open(b);
  out.note_param_names("toy", "2.0", {"x"});
  out.merge_from(ro);
  CHECK(out.param_names("cublaslt", "1.0") == std::vector<std::string>{"algo", "tile", "split_k"});
  CHECK(out.param_names("cublaslt", "1.1") == std::vector<std::string>{"algo", "stages"});
  CHECK(out.param_names("toy", "2.0") == std::vector<std::string>{"x"});
  std::string why;
  CHECK(out.check_integrity(&why));
}
