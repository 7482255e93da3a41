// Scale-out: a job sharded across processes (--shard, or rank and size from Slurm / MPI)
// covers every problem exactly once; shard stores merged with `gemmtune merge` hold what the
// unsharded run holds; merging is idempotent and associative, and settles conflicting
// winners by provenance. On the CPU with replayed tunes. On a GPU: `--devices 0` is the
// single-device path.
#include "base/errors.hpp"
#include "job/job.hpp"
#include "replay/replay.hpp"
#include "job/run.hpp"
#include "job/shard.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "measure/worker_client.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

using namespace gt;
using namespace gt::search;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Four problem sets of shapes x dtypes (x layouts) x families; 256^3 f32 is named in two
// sets, so the job holds it once (with both sets' families).
const char* kJob = R"(
name = "scale-out test"
[tune]
strategy = "exhaustive"
[[problems]]
shapes = ["256x256x256", "512x512x512", "1024x512x256"]
dtypes = ["f32", "f16"]
families = ["fam_a", "fam_b"]
[[problems]]
shapes = ["128x4096x4096", "4096x128x64"]
dtypes = ["bf16"]
layouts = ["nn", "tn"]
families = ["fam_a"]
[[problems]]
m = [1, 16, 64]
n = [4096]
k = [4096]
dtypes = ["f16"]
out_dtype = "f32"
families = ["fam_b"]
[[problems]]
shapes = ["256x256x256", "2048x2048x2048"]
dtypes = ["f32"]
families = ["fam_b"]
)";
constexpr size_t kJobProblems = 14;  // 6 + 4 + 3 + 1 (256^3 f32 is already in the first set)

// Every environment variable the shard may come from: cleared for every CLI run, so a test
// run inside a Slurm allocation or under mpirun is not sharded behind its back.
const char* kShardVars[] = {"SLURM_ARRAY_TASK_ID",  "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP",
                            "SLURM_PROCID",         "SLURM_NTASKS",           "OMPI_COMM_WORLD_RANK",
                            "OMPI_COMM_WORLD_SIZE", "PMI_RANK",               "PMI_SIZE"};

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A made-up landscape of 6 configs per (problem, family): distinct times, one config that
// fails verification and one refused for shared memory, depending on the salt.
void record_landscape(Recording& rec, const Problem& p, const std::string& family, const std::string& version,
                      const std::string& salt) {
  std::vector<Param> params = {Param{"tile", "tile edge", {32, 64, 128}, {}, 1},
                               Param{"split", "split-K", {1, 2}, {}, 0}};
  RecordedSpace& rs = rec.space_for({"NVIDIA H200", "GPU-scale-out-test", "sm_90"}, p, family, version, params);
  for (int64_t t : {32, 64, 128})
    for (int64_t s : {1, 2}) {
      uint64_t h = fnv(salt + p.key() + family + std::to_string(t) + "/" + std::to_string(s));
      if (h % 11 == 0)
        rs.add({t, s}, {Status::resources, kNaN, "needs 300000 bytes of shared memory"});
      else if (h % 7 == 0)
        rs.add({t, s}, {Status::verify_failed, 50.0, "relative Frobenius error 1e-1 exceeds 1e-5"});
      else
        rs.add({t, s}, {Status::ok, 100.0 + double(h % 100000) / 100.0, ""});
    }
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

std::string cli(const std::string& env_assignments = "") {
  std::string c = "env";
  for (const char* v : kShardVars) c += fmt::format(" -u {}", v);
  return c + " " + env_assignments + " " + q(test::gemmtune_binary()) + " --quiet --json";
}

// Runs a gemmtune command with --json; its standard output goes to `out` (so notes on
// standard error cannot mix with the document), standard error is kept for the report.
json run_json(const std::string& cmd, const fs::path& out) {
  auto r = test::run_command("{ " + cmd + " > " + q(out) + "; }");
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  INFO(cmd << "\nstderr: " << r.out << "\nstdout: " << text);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(text, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

// What a store holds, independent of its local row ids: rows and winners as sorted tuples.
struct Content {
  using Row = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, bool,
                         std::string, std::string>;  // uuid, key, family, config, status, median, quick, fp, tune
  using Win = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>;
  std::vector<Row> rows;
  std::vector<Win> winners;  // key, family, config, row uuid, note, decided
  bool operator==(const Content& o) const { return rows == o.rows && winners == o.winners; }
};

Content content(const fs::path& db) {
  Store s = Store::open_readonly(db);
  Content c;
  for (const StoredRow& r : s.rows())
    c.rows.emplace_back(r.row_uuid, r.key().text(), r.family, r.config_name, to_string(r.m.status),
                        fmt::format("{:.17g}", r.m.time.median), r.m.quick, r.fingerprint, r.tune_id);
  for (const Winner& w : s.winners())
    c.winners.emplace_back(w.key.text(), w.family, w.config_name, w.row_uuid, w.note, w.time_utc);
  std::sort(c.rows.begin(), c.rows.end());
  std::sort(c.winners.begin(), c.winners.end());
  return c;
}

std::set<std::string> problem_keys(const fs::path& db) {
  Store s = Store::open_readonly(db);
  std::set<std::string> keys;
  for (const StoredRow& r : s.rows()) keys.insert(r.problem.key());
  return keys;
}

// What was measured, without the identity of the run: (key, family, config, status, time).
std::multiset<std::string> measured(const fs::path& db) {
  Store s = Store::open_readonly(db);
  std::multiset<std::string> out;
  for (const StoredRow& r : s.rows())
    out.insert(fmt::format("{} | {} | {} | {} | {:.17g}", r.key().text(), r.family, r.config_name,
                           to_string(r.m.status), r.m.time.median));
  return out;
}

std::map<std::pair<std::string, std::string>, Winner> winners_of(const fs::path& db) {
  std::map<std::pair<std::string, std::string>, Winner> out;
  for (const Winner& w : Store::open_readonly(db).winners()) out[{w.key.text(), w.family}] = w;
  return out;
}

// Stores made once per process (replayed tunes through the CLI) and shared by the tests:
//   C: fam_a only, from a recording of fam_a version 2.0 (the family's version is part of the
//      toolchain the merge compares first), shard 0/2, tuned first (the oldest measurements);
//   A: the whole job, exhaustive, version 1.0;
//   B: the whole job again, 2 random configs per family, tuned after A (newer measurements);
//   S0, S1, S2: the job's three shards, the shard from --shard, from a Slurm job array's
//      environment and from Open MPI's.
struct Fixture {
  test::TempDir tmp;
  Job job;
  fs::path job_file, rec1, rec2, a, b, c, s[3];
  json shard_out[3];

  Fixture() {
    job = parse_job(kJob, "scale.toml");
    job_file = tmp.path / "scale.toml";
    std::ofstream(job_file) << kJob;
    Recording r1, r2;
    for (const JobProblem& jp : job.problems) {
      record_landscape(r1, jp.problem, "fam_a", "1.0", "one");
      record_landscape(r1, jp.problem, "fam_b", "1.0", "one");
      record_landscape(r2, jp.problem, "fam_a", "2.0", "two");
    }
    rec1 = tmp.path / "rec1.json";
    rec2 = tmp.path / "rec2.json";
    r1.save(rec1);
    r2.save(rec2);
    for (auto [name, p] : {std::pair{"a", &a}, {"b", &b}, {"c", &c}, {"s0", &s[0]}, {"s1", &s[1]}, {"s2", &s[2]}})
      *p = tmp.path / (std::string(name) + ".db");
    auto tune = [&](const std::string& env, const fs::path& db, const fs::path& rec, const std::string& extra) {
      return run_json(fmt::format("{} --db {} tune --config {} --replay {} {}", cli(env), q(db), q(job_file), q(rec),
                                  extra),
                      fs::path(db.string() + ".json"));
    };
    tune("", c, rec2, "--family fam_a --shard 0/2");
    tune("", a, rec1, "");
    tune("", b, rec1, "--strategy random --budget 2 --seed 7");
    shard_out[0] = tune("", s[0], rec1, "--shard 0/3");
    // Slurm numbers the tasks of `--array=3-5` 3, 4, 5: task 4 is shard 1 of 3.
    shard_out[1] = tune("SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_MIN=3 SLURM_ARRAY_TASK_COUNT=3", s[1], rec1, "");
    shard_out[2] = tune("OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3", s[2], rec1, "");
  }

  fs::path merge(const std::string& name, const std::vector<fs::path>& inputs) {
    fs::path out = tmp.path / (name + ".db");
    std::string in;
    for (auto& p : inputs) in += " " + q(p);
    run_json(fmt::format("{} merge{} -o {}", cli(), in, q(out)), tmp.path / (name + ".json"));
    return out;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

}  // namespace

TEST_CASE("shards cover every problem of a job exactly once, from the flag or the environment", "[scale]") {
  Job job = parse_job(kJob, "scale.toml");
  REQUIRE(job.problems.size() == kJobProblems);
  for (size_t n = 1; n <= 8; ++n) {
    std::map<std::string, int> seen;
    for (size_t i = 0; i < n; ++i) {
      Shard s = resolve_shard(fmt::format("{}/{}", i, n), {});
      CHECK(s.index == i);
      CHECK(s.count == n);
      CHECK(s.source == "--shard");
      auto mine = shard_indices(job.problems.size(), s);
      // Balanced: shard sizes differ by at most one.
      CHECK(mine.size() >= job.problems.size() / n);
      CHECK(mine.size() <= (job.problems.size() + n - 1) / n);
      for (size_t j : mine) ++seen[job.problems.at(j).problem.key()];
      // Deterministic: the same job and shard give the same problems, every time.
      Shard again = resolve_shard(fmt::format("{}/{}", i, n), {});
      CHECK(shard_indices(parse_job(kJob, "again.toml").problems.size(), again) == mine);
      // Every launcher's variables name the same shard.
      using Env = std::map<std::string, std::string>;
      std::string I = std::to_string(i), N = std::to_string(n);
      for (auto [env, source] :
           {std::pair{Env{{"SLURM_ARRAY_TASK_ID", I}, {"SLURM_ARRAY_TASK_COUNT", N}}, "SLURM_ARRAY_TASK_ID"},
            {Env{{"SLURM_ARRAY_TASK_ID", std::to_string(i + 1)}, {"SLURM_ARRAY_TASK_MIN", "1"},
                 {"SLURM_ARRAY_TASK_COUNT", N}},
             "SLURM_ARRAY_TASK_ID"},
            {Env{{"SLURM_PROCID", I}, {"SLURM_NTASKS", N}}, "SLURM_PROCID"},
            {Env{{"OMPI_COMM_WORLD_RANK", I}, {"OMPI_COMM_WORLD_SIZE", N}}, "OMPI_COMM_WORLD_RANK"},
            {Env{{"PMI_RANK", I}, {"PMI_SIZE", N}}, "PMI_RANK"}}) {
        Shard e = resolve_shard("", env);
        INFO(source << " " << i << "/" << n);
        CHECK(e.index == i);
        CHECK(e.count == n);
        CHECK(e.source == source);
        CHECK(shard_indices(job.problems.size(), e) == mine);
      }
    }
    INFO(n << " shards");
    CHECK(seen.size() == job.problems.size());
    for (auto& [key, times] : seen) {
      INFO(key);
      CHECK(times == 1);
    }
  }
  // More shards than problems: the extra shards are empty, the rest still cover the job once.
  size_t covered = 0;
  for (size_t i = 0; i < kJobProblems + 3; ++i)
    covered += shard_indices(kJobProblems, {i, kJobProblems + 3, ""}).size();
  CHECK(covered == kJobProblems);
  CHECK(shard_indices(0, {0, 4, ""}).empty());
}

TEST_CASE("shard precedence: the flag, a job array, Open MPI, PMI, then a Slurm step; none is 0/1", "[scale]") {
  using Env = std::map<std::string, std::string>;
  Env all = {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "5"}, {"SLURM_PROCID", "2"},
             {"SLURM_NTASKS", "6"},        {"OMPI_COMM_WORLD_RANK", "3"},  {"OMPI_COMM_WORLD_SIZE", "7"},
             {"PMI_RANK", "4"},            {"PMI_SIZE", "8"}};
  Shard s = resolve_shard("0/9", all);
  CHECK((s.index == 0 && s.count == 9 && s.source == "--shard"));
  s = resolve_shard("", all);
  CHECK((s.index == 1 && s.count == 5 && s.source == "SLURM_ARRAY_TASK_ID"));
  all.erase("SLURM_ARRAY_TASK_ID");  // an array id without its count is not an array
  // mpirun's ranks inside a Slurm allocation inherit the allocation's SLURM_PROCID: the
  // launcher's own rank comes first.
  s = resolve_shard("", all);
  CHECK((s.index == 3 && s.count == 7 && s.source == "OMPI_COMM_WORLD_RANK"));
  all.erase("OMPI_COMM_WORLD_RANK");
  s = resolve_shard("", all);
  CHECK((s.index == 4 && s.count == 8 && s.source == "PMI_RANK"));
  all.erase("PMI_SIZE");
  s = resolve_shard("", all);
  CHECK((s.index == 2 && s.count == 6 && s.source == "SLURM_PROCID"));
  all.erase("SLURM_NTASKS");
  s = resolve_shard("", all);
  CHECK((s.index == 0 && s.count == 1 && s.source.empty()));
  CHECK(shard_indices(kJobProblems, s).size() == kJobProblems);

  // Malformed or out-of-range shards are input errors, never a silently different split.
  for (const char* bad : {"3", "1/", "/4", "a/4", "1/b", "4/4", "5/4", "0/0", "-1/4", "1/4/2", " 1/4", "1/4 "})
    CHECK_THROWS_AS(resolve_shard(bad, {}), InputError);
  CHECK_THROWS_WITH(resolve_shard("4/4", {}), Catch::Contains("--shard"));
  CHECK_THROWS_AS(resolve_shard("", {{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}), InputError);
  CHECK_THROWS_AS(resolve_shard("", {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_MIN", "1"},
                                     {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                  InputError);
  CHECK_THROWS_WITH(resolve_shard("", {{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                    Catch::Contains("OMPI_COMM_WORLD_RANK"));
  CHECK_THROWS_AS(resolve_shard("", {{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}), InputError);
  // Arrays with a step (--array=3-11:4 has tasks 3, 7, 11): shard (ID - MIN) / STEP.
  s = resolve_shard("", {{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_MIN", "3"}, {"SLURM_ARRAY_TASK_STEP", "4"},
                         {"SLURM_ARRAY_TASK_COUNT", "3"}});
  CHECK((s.index == 1 && s.count == 3));
  CHECK_THROWS_WITH(resolve_shard("", {{"SLURM_ARRAY_TASK_ID", "8"}, {"SLURM_ARRAY_TASK_MIN", "3"},
                                       {"SLURM_ARRAY_TASK_STEP", "4"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                    Catch::Contains("STEP"));
  CHECK_THROWS_WITH(resolve_shard("", {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "x"},
                                       {"SLURM_ARRAY_TASK_COUNT", "3"}}),
                    Catch::Contains("SLURM_ARRAY_TASK_MIN"));
}

TEST_CASE("sharded replayed tunes, merged, hold exactly what the unsharded tune holds", "[scale][replay]") {
  Fixture& f = fixture();
  REQUIRE(f.job.problems.size() == kJobProblems);
  CHECK(f.shard_out[0]["shard"] == "0/3");
  CHECK(f.shard_out[1]["shard"] == "1/3");
  CHECK(f.shard_out[2]["shard"] == "2/3");

  // Each shard tuned exactly the problems the shard functions give it, and nothing else.
  std::set<std::string> all = problem_keys(f.a), union_of_shards;
  REQUIRE(all.size() == kJobProblems);
  size_t total = 0;
  for (size_t i = 0; i < 3; ++i) {
    std::set<std::string> expected;
    for (size_t j : shard_indices(f.job.problems.size(), {i, 3, ""})) expected.insert(f.job.problems[j].problem.key());
    std::set<std::string> got = problem_keys(f.s[i]);
    INFO("shard " << i);
    CHECK(got == expected);
    CHECK(f.shard_out[i]["problems"].size() == expected.size());
    total += got.size();
    union_of_shards.insert(got.begin(), got.end());
  }
  CHECK(total == kJobProblems);  // disjoint
  CHECK(union_of_shards == all);

  // Merged, the shards hold the unsharded run's measurements and winners.
  fs::path u = f.merge("shards", {f.s[0], f.s[1], f.s[2]});
  CHECK(measured(u) == measured(f.a));
  auto wa = winners_of(f.a), wu = winners_of(u);
  REQUIRE(wu.size() == wa.size());
  for (auto& [k, w] : wa) {
    INFO(k.first << " " << k.second);
    REQUIRE(wu.count(k));
    CHECK(wu[k].config_name == w.config_name);
  }
  Store us = Store::open_readonly(u);
  CHECK(us.check_integrity());
}

TEST_CASE("merging replayed stores is idempotent and associative; conflicts go to provenance", "[scale][replay]") {
  Fixture& f = fixture();
  Content a = content(f.a), b = content(f.b), c = content(f.c);
  REQUIRE_FALSE(a.rows.empty());
  REQUIRE_FALSE(b.rows.empty());
  REQUIRE_FALSE(c.rows.empty());

  // Idempotent: A with itself is A; B merged into a store twice is B merged once.
  CHECK(content(f.merge("aa", {f.a, f.a})) == a);
  CHECK(content(f.merge("a_alone", {f.a})) == a);
  fs::path ab = f.merge("ab_once", {f.a});
  json once = run_json(fmt::format("{} merge {} -o {}", cli(), q(f.b), q(ab)), f.tmp.path / "once.json");
  Content ab_once = content(ab);
  json twice = run_json(fmt::format("{} merge {} -o {}", cli(), q(f.b), q(ab)), f.tmp.path / "twice.json");
  CHECK(content(ab) == ab_once);
  CHECK(once["rows_added"].get<size_t>() == b.rows.size());
  CHECK(twice["rows_added"] == 0);
  // A store is never merged into itself: refused as bad input, the store left as it was.
  auto self = test::run_command(fmt::format("{} merge {} {} -o {}", cli(), q(f.b), q(f.a), q(f.a)));
  CHECK(self.exit_code == 2);
  CHECK(content(f.a) == a);

  // Associative (and the order of inputs does not matter).
  fs::path left = f.merge("left", {f.merge("l_ab", {f.a, f.b}), f.c});
  fs::path right = f.merge("right", {f.a, f.merge("r_bc", {f.b, f.c})});
  Content l = content(left);
  CHECK(l == content(right));
  CHECK(l == content(f.merge("cba", {f.c, f.b, f.a})));
  CHECK(l.rows.size() == a.rows.size() + b.rows.size() + c.rows.size());  // every row is its own measurement

  // The rule (store.cpp winner_outranks): the winning measurement with the newer toolchain
  // wins (here C's fam_a 2.0 over 1.0, though C was measured first); at equal toolchains the
  // newer measurement (B, tuned after A). So per (key, family): C's, else B's, else A's.
  auto wa = winners_of(f.a), wb = winners_of(f.b), wc = winners_of(f.c), wl = winners_of(left);
  std::set<std::pair<std::string, std::string>> keys;
  for (auto* m : {&wa, &wb, &wc})
    for (auto& [k, w] : *m) keys.insert(k);
  CHECK(wl.size() == keys.size());
  int from_c = 0, b_over_a = 0, c_over_other = 0;
  for (auto& k : keys) {
    INFO(k.first << " " << k.second);
    REQUIRE(wl.count(k));
    const Winner& got = wl[k];
    const Winner& want = wc.count(k) ? wc[k] : wb.count(k) ? wb[k] : wa[k];
    CHECK(got.row_uuid == want.row_uuid);
    CHECK(got.config_name == want.config_name);
    from_c += wc.count(k) > 0;
    b_over_a += !wc.count(k) && wb.count(k) && wa.count(k) && wb[k].config_name != wa[k].config_name;
    c_over_other += wc.count(k) && ((wa.count(k) && wa[k].config_name != wc[k].config_name) ||
                                    (wb.count(k) && wb[k].config_name != wc[k].config_name));
  }
  // The rule was exercised, not vacuously satisfied: conflicts of both kinds were settled.
  CHECK(from_c > 0);
  CHECK(b_over_a > 0);
  CHECK(c_over_other > 0);
  // C's rows are older than every row of A and B, and still win: the toolchain comes first.
  Store cs = Store::open_readonly(f.c), as = Store::open_readonly(f.a);
  double newest_c = 0, oldest_a = 1e300;
  for (auto& r : cs.rows()) newest_c = std::max(newest_c, r.time_unix);
  for (auto& r : as.rows()) oldest_a = std::min(oldest_a, r.time_unix);
  CHECK(newest_c < oldest_a);
  CHECK(Store::open_readonly(left).check_integrity());
}

TEST_CASE("tune --devices 0 gives the single-device path's winners and statuses", "[gpu][scale]") {
  GT_REQUIRE_GPU();
  test::TempDir tmp;
  // naive at 256^3 f32, a fixed list: coalesced and uncoalesced mappings (far apart in
  // speed, so the winner is not a coin toss), a block under one warp (cannot_implement) and
  // one over the device's thread limit (resources).
  fs::path job = tmp.path / "naive.toml";
  std::ofstream(job) << R"(
name = "devices-0"
[[problems]]
shapes = ["256x256x256"]
dtypes = ["f32"]
families = ["naive"]
configs = { naive = ["map=coalesced,bx=32,by=8", "map=uncoalesced,bx=32,by=8", "map=coalesced,bx=8,by=2",
                     "map=coalesced,bx=256,by=32"] }
)";
  std::string base =
      fmt::format("{} --plugin-dir {} --cache-dir {}", cli(), q(test::plugin_dir()), q(tmp.path / "cache"));
  auto tune = [&](const fs::path& db, const std::string& extra) {
    return run_json(fmt::format("{} --db {} tune --config {} --settle 0.25 {}", base, q(db), q(job), extra),
                    fs::path(db.string() + ".json"));
  };
  fs::path single = tmp.path / "single.db", dev0 = tmp.path / "devices0.db";
  json js = tune(single, "");
  json jd = tune(dev0, "--devices 0");
  INFO("single: " << js.dump() << "\n--devices 0: " << jd.dump());
  CHECK(js["gpus"] == 1);
  CHECK(jd["gpus"] == 1);
  REQUIRE(js["problems"].size() == 1);
  REQUIRE(jd["problems"].size() == 1);
  const json &ps = js["problems"][0], &pd = jd["problems"][0];
  CHECK(ps["winner"] == "naive");
  CHECK(pd["winner"] == ps["winner"]);
  REQUIRE(ps["families"].size() == 1);
  REQUIRE(pd["families"].size() == 1);
  CHECK(ps["families"][0]["by_status"] == json({{"ok", 2}, {"cannot_implement", 1}, {"resources", 1}}));
  CHECK(pd["families"][0]["by_status"] == ps["families"][0]["by_status"]);
  CHECK(pd["families"][0]["best"] == ps["families"][0]["best"]);

  // The stores: the same winners (per family and over all) and the same status per config,
  // measured on the same GPU.
  auto ws = winners_of(single), wd = winners_of(dev0);
  REQUIRE(ws.size() == 2);
  REQUIRE(wd.size() == ws.size());
  for (auto& [k, w] : ws) {
    INFO(k.first << " " << k.second);
    REQUIRE(wd.count(k));
    CHECK(wd[k].config_name == w.config_name);
  }
  auto statuses = [](const fs::path& db) {
    std::set<std::pair<std::string, std::string>> out;
    std::set<std::string> uuids;
    for (auto& r : Store::open_readonly(db).rows()) {
      out.insert({r.config_name, to_string(r.m.status)});
      uuids.insert(r.prov.device_uuid);
    }
    return std::pair{out, uuids};
  };
  auto [ss, us] = statuses(single);
  auto [sd, ud] = statuses(dev0);
  CHECK(ss.size() == 4);
  CHECK(sd == ss);
  CHECK(us.size() == 1);
  CHECK(ud == us);
}

TEST_CASE("--devices all with --replay needs no GPU: the recording is the one measurer", "[scale][replay]") {
  test::TempDir tmp;
  const auto rec = test::source_dir() / "tests" / "data" / "replay" / "wmma_f16_4096x4096x4096.json";
  auto r = test::run_command(fmt::format(
      "{} --quiet --json --db {} tune --replay {} --shape 4096x4096x4096 --dtype f16 --family wmma --budget 5 "
      "--devices all",
      test::gemmtune_binary().string(), (tmp.path / "r.db").string(), rec.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  CHECK(j["replay"] == true);
  CHECK(j["gpus"] == 1);
  CHECK(j["problems"][0]["families"][0]["evaluated"] == 5);
}

// The GPUs of one host share a job's problems without a bottleneck: each problem is explored,
// re-timed and decided on the GPU that took it, and no GPU waits for another. On the CPU with
// stand-in workers (fake_worker) whose every request takes the same time, as a GPU's would.
TEST_CASE("N stand-in GPUs finish N equal problems in about the time one takes for one, each problem on one GPU",
          "[scale][worker]") {
  const std::vector<Problem> problems = {Problem::make(512, 512, 512, DType::f16, DType::f16, Layout::nn),
                                         Problem::make(1024, 512, 512, DType::f16, DType::f16, Layout::nn),
                                         Problem::make(512, 1024, 512, DType::f16, DType::f16, Layout::nn)};
  // One family: mode 0 (the stand-in answers ok) and a knob t that adds t us; the default t = 7
  // is slowest, so every problem's winner must pass the confirmation against it.
  const Space space("toy", "1", {Param{"mode", "", {0}, {}, 0}, Param{"t", "", {0, 1, 2, 3, 4, 5, 6, 7}, {}, 7}});
  auto run = [&](size_t n, Store* store) {
    static const PluginRegistry none = PluginRegistry::load({});
    std::vector<std::unique_ptr<WorkerClient>> workers;
    std::vector<RunGpu> gpus;
    for (size_t i = 0; i < n; ++i) {
      workers.push_back(std::make_unique<WorkerClient>(
          std::vector<std::string>{(executable_dir() / "fake_worker").string(), "--uuid", fmt::format("GPU-fake-{}", i),
                                   "--delay-ms", "40"},
          none));
      Measurer* m = workers.back().get();
      gpus.push_back({m, [&](const std::string&, const Problem&) { return space; },
                      [m](const std::string& fam, bool quick) {
                        Provenance p;
                        p.device_name = m->device().name;
                        p.device_uuid = m->device().uuid;
                        p.family = fam;
                        p.mode = quick ? "quick" : "full";
                        return p;
                      }});
    }
    ResolvedJob resolved;
    for (size_t i = 0; i < n; ++i) resolved.problems.push_back({problems[i], {"toy"}, {}});
    for (size_t i = 0; i < n; ++i) resolved.mine.push_back(i);
    resolved.options.strategy = "exhaustive";
    resolved.options.settle_s = 0.01;
    resolved.options.tune_id = fmt::format("gpus{}", n);
    resolved.consistency_sample = 0;  // timed alone: the cross-GPU check has its own test (test_finalists.cpp)
    RunContext ctx;
    ctx.store = store;
    auto t0 = std::chrono::steady_clock::now();
    RunResult res = run_job(resolved, gpus, ctx);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(res, wall);
  };
  // Timed without a store (its writers queue on one lock, each insert an fsync: the disk's
  // speed, not the GPUs' sharing); then once more with one, to see where each row was measured.
  auto [one, one_wall] = run(1, nullptr);
  auto [three_timed, three_wall] = run(3, nullptr);
  INFO("one GPU, one problem: " << one_wall << " s; three GPUs, three problems: " << three_wall << " s");
  // The same work per GPU: the time of one, not of three (serialised: about 3x).
  CHECK(three_wall < 1.6 * one_wall);
  test::TempDir tmp;
  Store three_store = Store::open(tmp.path / "three.db");
  auto [three, three_stored_wall] = run(3, &three_store);
  // Each problem on one GPU, each GPU one problem: every row of a problem (exploration,
  // finalists, confirmation) carries the UUID of the GPU that decided it.
  std::set<int> used;
  for (size_t i = 0; i < problems.size(); ++i) {
    REQUIRE(three.outcomes[i]);
    REQUIRE(three.outcomes[i]->winner == 0);
    CHECK(three.outcomes[i]->families[0].best_name == "toy_mode0_t0");
    used.insert(three.gpu_of[i]);
    std::set<std::string> uuids;
    RowFilter f = RowFilter::of(ResultKey::of("Fake GPU", problems[i]));
    for (auto& r : three_store.rows(f)) uuids.insert(r.prov.device_uuid);
    CHECK(uuids == std::set<std::string>{fmt::format("GPU-fake-{}", three.gpu_of[i])});
  }
  CHECK(used.size() == 3);
  CHECK(std::set<int>(three_timed.gpu_of.begin(), three_timed.gpu_of.end()).size() == 3);
}
