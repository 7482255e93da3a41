// The results store under hostile conditions: files that are not stores (refused, left
// unchanged), stores of older schemas (read as they are, migrated in place when written), a
// writer killed at random moments, concurrent writers on one fresh file. CPU only.
#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "unit/store_fixtures.hpp"

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
using namespace gt::store_test;

namespace {

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

// Opening `p` (for writing, or read-only) is refused with an error naming it and `phrase`, and
// the file is left as it was.
void refused(const fs::path& p, const std::string& phrase, bool readonly = false) {
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
}
}  // namespace

TEST_CASE("store: files that are not stores are refused and left unchanged", "[store]") {
  test::TempDir tmp;

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

TEST_CASE("store: a store of schema v1 reads as medians and is upgraded when opened for writing", "[store]") {
  test::TempDir tmp;
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

TEST_CASE("store: a store of schema v3 has no build hashes; it is migrated in place and its rows stay, unknown builds",
          "[store]") {
  test::TempDir tmp;
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

TEST_CASE("store: a store of schema v4 has no transforms; it is migrated in place and every old row ran the plain problem",
          "[store]") {
  test::TempDir tmp;
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

TEST_CASE("store: a store of schema v5 has no FP8 key; it reads as unscaled and, migrated, keeps FP8 keys apart",
          "[store]") {
  test::TempDir tmp;
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

TEST_CASE("store: a store of schema v7 has no validations; it reads as none and, migrated, keeps them and merges the newer",
          "[store]") {
  test::TempDir tmp;
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

