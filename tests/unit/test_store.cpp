// The results store: round trips, reuse and staleness, queries, schema migrations, merging,
// provenance. CPU only. Bad files, crashes and concurrent writers: tests/reliability/test_store_files.cpp.
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
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace gt::store_test;

namespace {

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
