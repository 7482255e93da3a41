// Replay recordings: round trip, the recorded space's validity and objective, merging,
// bad files, and that a replayed search is the search it stands in for.
#include "tune/driver.hpp"
#include "base/errors.hpp"
#include "replay/replay.hpp"
#include "replay/replay_measurer.hpp"
#include "measure/roofs.hpp"
#include "store/store.hpp"
#include "strategies/strategy.hpp"
#include "replay/synthetic.hpp"
#include "test_util.hpp"
#include "tune/tuner.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

using namespace gt;
using namespace gt::search;
using nlohmann::json;

namespace {

// Search options that keep `n` proposals outstanding.
SearchOptions ahead(size_t n) {
  SearchOptions o;
  o.lookahead = n;
  return o;
}

const RecordedDevice kDevice{"NVIDIA H200", "GPU-0c1d2e3f-test", "sm_90"};

std::vector<Param> params() {
  return {Param{"bm", "rows of C per block", {64, 128}, {}, 1},
          Param{"pipe", "pipeline", {0, 1, 2}, {"single", "regdb", "cp2"}, 2}};
}

RecordedSpace small_space() {
  RecordedSpace s("2026-11-29T10:00:00Z", kDevice, Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn),
                  "register_tile", "1.0", params());
  s.add({64, 0}, {Status::ok, 812.5, ""});
  s.add({64, 1}, {Status::ok, 640.25, ""});
  s.add({64, 2}, {Status::resources, kNaN, "needs 300000 bytes of shared memory"});
  s.add({128, 0}, {Status::verify_failed, 12.0, "max error 1.0 exceeds tolerance"});
  s.add({128, 1}, {Status::cannot_implement, kNaN, "regdb needs bm=64"});
  return s;  // {128, 2} not recorded
}

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  auto path = dir.path / name;
  std::ofstream(path) << text;
  return path.string();
}

json valid_doc() {
  Recording r;
  r.spaces().push_back(small_space());
  return r.to_json();
}

RoofRow roof_row(const std::string& device, const std::string& name, double value) {
  RoofRow r;
  r.device_name = device;
  r.name = name;
  r.value = value;
  r.unit = "FLOP/s";
  r.how = "a test";
  return r;
}

// Loading `doc` fails with an InputError that names the file and contains every piece.
void expect_error(const json& doc, std::vector<std::string> pieces) {
  test::TempDir dir;
  std::string path = write(dir, "bad.json", doc.dump());
  try {
    Recording::load(path);
    FAIL("loaded a bad file: " << doc.dump());
  } catch (const InputError& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(what.find(path) != std::string::npos);
    for (auto& p : pieces) CHECK(what.find(p) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a recording round-trips through its file", "[replay]") {
  test::TempDir dir;
  Recording r;
  r.spaces().push_back(small_space());
  RecordedSpace wm("2026-11-29T11:00:00Z", kDevice, Problem::make(1000, 24, 7, DType::f16, DType::f32, Layout::tn),
                   "wmma", "1.0", {Param{"stages", "", {2, 3}, {}, 0}});
  wm.add({3}, {Status::timeout, kNaN, "compile exceeded its time limit"});
  r.spaces().push_back(wm);
  auto path = dir.path / "rec.json";
  r.save(path);
  Recording back = Recording::load(path);
  CHECK(back.to_json() == r.to_json());
  REQUIRE(back.spaces().size() == 2);
  const RecordedSpace& s = back.spaces()[0];
  CHECK(s.recorded() == "2026-11-29T10:00:00Z");
  CHECK(s.device().uuid == kDevice.uuid);
  CHECK(s.device().arch == "sm_90");
  CHECK(s.problem().key() == "4096x4096x4096 f32>f32 nn a16");
  CHECK(s.family() == "register_tile");
  CHECK(s.family_version() == "1.0");
  REQUIRE(s.params().size() == 2);
  CHECK(s.params()[1].labels == std::vector<std::string>{"single", "regdb", "cp2"});
  CHECK(s.params()[1].default_index == 2);
  CHECK(s.params()[0].help == "rows of C per block");
  CHECK(s.size() == 5);
  CHECK(s.lookup({64, 1})->median_us == 640.25);
  CHECK(s.lookup({128, 0})->status == Status::verify_failed);
  CHECK(s.lookup({128, 0})->message == "max error 1.0 exceeds tolerance");
  CHECK(std::isnan(s.lookup({64, 2})->median_us));
  CHECK_FALSE(s.lookup({128, 2}));
  CHECK(back.spaces()[1].problem().key() == wm.problem().key());
  CHECK(back.spaces()[1].problem().layout == Layout::tn);
  CHECK(back.spaces()[1].lookup({3})->status == Status::timeout);
}

TEST_CASE("a recorded space is valid where the config could run on the recording device", "[replay]") {
  RecordedSpace rs = small_space();
  Space s = rs.space();
  CHECK(s.family() == "register_tile");
  CHECK(s.raw_size() == 6);
  CHECK(s.valid({64, 0}));
  CHECK(s.valid({128, 0}));  // it failed verification, but it ran: a search may propose it
  CHECK_THAT(*s.check({64, 2}), Catch::Contains("recorded as resources on NVIDIA H200") &&
                                    Catch::Contains("shared memory"));
  CHECK_THAT(*s.check({128, 1}), Catch::Contains("recorded as cannot_implement") && Catch::Contains("regdb needs bm=64"));
  CHECK_THAT(*s.check({128, 2}), Catch::Contains("not recorded on NVIDIA H200"));
  CHECK_THAT(*s.check({96, 0}), Catch::Contains("bm=96 is not one of its values"));
  CHECK(s.count_valid() == 3);
  CHECK(rs.valid_count() == 3);
  // The space reads the results live.
  rs.add({128, 2}, {Status::ok, 500.0, ""});
  CHECK(s.valid({128, 2}));

  Objective f = rs.objective();
  CHECK(f({64, 1}).median_us == 640.25);
  CHECK(f({128, 0}).status == Status::verify_failed);
  CHECK_FALSE(to_observation({128, 0}, f({128, 0})).ok);
  CHECK(f({96, 0}).status == Status::cannot_implement);
  CHECK_THROWS_AS(rs.add({96, 0}, {}), InputError);
}

TEST_CASE("recordings are found by problem key and family, and merge", "[replay]") {
  Recording a;
  a.spaces().push_back(small_space());
  CHECK(a.find("4096x4096x4096 f32>f32 nn a16", "register_tile") != nullptr);
  CHECK(a.find("4096x4096x4096 f32>f32 nn a16", "register_tile", kDevice.uuid) != nullptr);
  CHECK(a.find("4096x4096x4096 f32>f32 nn a16", "register_tile", "GPU-other") == nullptr);
  CHECK(a.find("4096x4096x4096 f32>f32 nn a16", "wmma") == nullptr);
  CHECK(a.find("4096x4096x4095 f32>f32 nn a4", "register_tile") == nullptr);

  Recording b;
  RecordedSpace& s = b.space_for(kDevice, a.spaces()[0].problem(), "register_tile", "1.0", params());
  s.add({64, 1}, {Status::ok, 600.0, "re-measured"});
  s.add({128, 2}, {Status::ok, 450.0, ""});
  RecordedSpace& other = b.space_for({"NVIDIA H100", "GPU-h100", "sm_90"}, a.spaces()[0].problem(), "register_tile",
                                     "1.0", params());
  other.add({64, 0}, {Status::ok, 900.0, ""});
  REQUIRE(b.spaces().size() == 2);
  a.merge(b);
  REQUIRE(a.spaces().size() == 2);
  const RecordedSpace* merged = a.find("4096x4096x4096 f32>f32 nn a16", "register_tile", kDevice.uuid);
  REQUIRE(merged);
  CHECK(merged->size() == 6);
  CHECK(merged->lookup({64, 1})->median_us == 600.0);
  CHECK(merged->lookup({64, 1})->message == "re-measured");
  CHECK(merged->lookup({64, 0})->median_us == 812.5);
  CHECK(a.spaces()[1].device().name == "NVIDIA H100");

  Recording c;
  c.space_for(kDevice, a.spaces()[0].problem(), "register_tile", "1.0", {Param{"bm", "", {64, 128, 256}, {}, 0}});
  CHECK_THROWS_AS(a.merge(c), InputError);
  CHECK_THROWS_AS(a.space_for(kDevice, a.spaces()[0].problem(), "register_tile", "1.0", {Param{"bm", "", {64}, {}, 0}}),
                  InputError);
}

TEST_CASE("a bad replay file is an InputError naming the file and what is wrong", "[replay]") {
  test::TempDir dir;
  CHECK_THROWS_WITH(Recording::load(dir.path / "missing.json"), Catch::Contains("cannot open"));
  std::string junk = write(dir, "junk.json", "{\"format\": ");
  CHECK_THROWS_AS(Recording::load(junk), InputError);
  CHECK_THROWS_WITH(Recording::load(junk), Catch::Contains("junk.json") && Catch::Contains("not valid JSON"));

  json d = valid_doc();
  d["format"] = "gemmtune-replay/3";
  expect_error(d, {"gemmtune-replay/3", "gemmtune-replay/2", "gemmtune-replay/1"});

  d = valid_doc();
  d.erase("format");
  expect_error(d, {"missing key 'format'"});

  d = valid_doc();
  d["spaces"][0].erase("problem");
  expect_error(d, {"spaces[0]", "missing key 'problem'"});

  d = valid_doc();
  d["spaces"][0]["problem"]["m"] = "4096";
  expect_error(d, {"spaces[0].problem.m", "expected an integer, got string"});

  d = valid_doc();
  d["spaces"][0]["problem"]["in"] = "f64";
  expect_error(d, {"unknown dtype 'f64'"});

  d = valid_doc();
  d["spaces"][0]["problem"]["align"] = 3;
  expect_error(d, {"spaces[0].problem.align", "3 is not 1, 2, 4, 8 or 16"});

  d = valid_doc();
  d["spaces"][0]["problem"]["n"] = 4095;  // f32 rows of 4095 floats are 4-byte aligned at best
  expect_error(d, {"spaces[0].problem.align", "16 bytes is more than the leading dimensions allow (4)"});

  d = valid_doc();
  d["spaces"][0]["device"].erase("uuid");
  expect_error(d, {"spaces[0].device", "missing key 'uuid'"});

  d = valid_doc();
  d["spaces"][0]["params"][0]["values"] = json::array({64, 64.5});
  expect_error(d, {"spaces[0].params[0].values[1]", "expected an integer, got a number"});

  d = valid_doc();
  d["spaces"][0]["params"][1]["default"] = 3;
  expect_error(d, {"spaces[0].params[1].default", "index 3 is not in [0, 2]"});

  d = valid_doc();
  d["spaces"][0]["params"][1]["labels"] = json::array({"single"});
  expect_error(d, {"spaces[0].params[1].labels", "1 labels for 3 values"});

  d = valid_doc();
  d["spaces"][0]["results"][2]["config"] = json::array({96, 0});
  expect_error(d, {"spaces[0].results[2].config[0]", "bm=96 is not one of its values"});

  d = valid_doc();
  d["spaces"][0]["results"][0]["config"] = json::array({64});
  expect_error(d, {"spaces[0].results[0].config", "1 values for 2 parameters"});

  d = valid_doc();
  d["spaces"][0]["results"][1]["status"] = "fast";
  expect_error(d, {"spaces[0].results[1].status", "unknown status 'fast'"});

  d = valid_doc();
  d["spaces"][0]["results"][1]["median_us"] = nullptr;
  expect_error(d, {"spaces[0].results[1].median_us", "an ok result needs a positive time"});

  d = valid_doc();
  d["spaces"][0]["results"] = json::object();
  expect_error(d, {"spaces[0].results", "expected an array, got object"});

  // Found by tests/fuzz (fuzz_recording): a re-timing's sample count given as a float beyond
  // an integer's range was converted to one (undefined behaviour).
  d = valid_doc();
  d["spaces"][0]["results"][0]["retimed"] = {{"median", 500.0}, {"count", 1e308}};
  expect_error(d, {"spaces[0].results[0].retimed", "not a timing's statistics", "'count' is not a whole number"});
  d["spaces"][0]["results"][0]["retimed"] = {{"median", 500.0}, {"count", -4}};
  expect_error(d, {"spaces[0].results[0].retimed", "a count of -4 samples"});
}

TEST_CASE("a replayed search is the search it stands in for", "[replay]") {
  // Record every config of a synthetic space that could run, then search the recording:
  // same valid set, same outcomes (doubles survive the JSON), so the same proposals.
  test::TempDir dir;
  SyntheticGemm g = SyntheticGemm::suite(3)[5];
  Recording rec;
  RecordedSpace& rs = rec.space_for(kDevice, g.problem(), g.space().family(), g.space().version(), g.space().params());
  for (uint64_t i = 0; i < g.space().raw_size(); ++i) {
    Config c = g.space().at(i);
    Outcome o = g.evaluate(c);
    if (o.status != Status::cannot_implement && o.status != Status::resources) rs.add(c, o);
  }
  rec.save(dir.path / "synthetic.json");
  Recording back = Recording::load(dir.path / "synthetic.json");
  const RecordedSpace* replay = back.find(g.problem().key(), "wmma");
  REQUIRE(replay);
  Space space = replay->space();
  CHECK(space.count_valid() == g.space().count_valid());

  for (std::string name : {"random", "bayes"}) {
    Budget b;
    b.max_evaluations = 60;
    auto live = make_strategy(name, g.space(), 8);
    auto replayed = make_strategy(name, space, 8);
    SearchResult x = run_search(*live, g.objective(), b, ahead(2));
    SearchResult y = run_search(*replayed, replay->objective(), b, ahead(2));
    REQUIRE(x.history.size() == y.history.size());
    for (size_t i = 0; i < x.history.size(); ++i) {
      CHECK(x.history[i].config == y.history[i].config);
      CHECK(x.history[i].ok == y.history[i].ok);
      if (x.history[i].ok) CHECK(x.history[i].value == y.history[i].value);
    }
  }
}

// The spaces recorded on the H200 (tests/data/replay): every strategy, through the command
// line, keeps its budget, never lets a failed or unrecorded config win, and repeats itself
// for a seed.
TEST_CASE("tunes replayed from the H200 recordings keep budgets and repeat for a seed", "[replay][cli]") {
  test::TempDir tmp;
  const auto rec = test::source_dir() / "tests" / "data" / "replay" / "wmma_f16_4096x4096x4096.json";
  REQUIRE(std::filesystem::exists(rec));
  Recording r = Recording::load(rec);
  REQUIRE(r.spaces().size() == 1);
  double optimum = std::numeric_limits<double>::infinity();
  for (auto& [c, o] : r.spaces()[0].results())
    if (o.status == Status::ok) optimum = std::min(optimum, o.median_us);
  for (std::string strategy : {"random", "anneal", "genetic", "bayes"}) {
    std::vector<std::string> bests;
    for (int run = 0; run < 2; ++run) {
      auto db = tmp.path / fmt::format("{}{}.db", strategy, run);
      auto res = test::run_command(fmt::format(
          "{} --quiet --json --db {} tune --replay {} --shape 4096x4096x4096 --dtype f16 --family wmma "
          "--strategy {} --budget 40 --seed 5",
          test::gemmtune_binary().string(), db.string(), rec.string(), strategy));
      INFO(strategy << " run " << run << "\n" << res.out);
      REQUIRE(res.exit_code == 0);
      auto j = nlohmann::json::parse(res.out.substr(res.out.find('{')));
      auto f = j["problems"][0]["families"][0];
      CHECK(f["evaluated"] == 40);
      CHECK(f["strategy"] == strategy);
      CHECK(j["replay"] == true);
      // The winner is a recorded, successful config, no faster than the space's optimum.
      REQUIRE(f["best"].is_string());
      CHECK(f["best_measurement"]["status"] == "ok");
      const double best_us = f["best_measurement"]["time_us"]["value"];
      CHECK(best_us >= optimum);
      bests.push_back(f["best"]);
    }
    CHECK(bests[0] == bests[1]);
  }
}

// A job's [tune.budget.FAMILY] gives one family a budget of its own; a flag on the command line
// replaces both the job's budget and the family's.
TEST_CASE("a family's own budget in a job applies to it alone, and a flag replaces it", "[replay][cli][jobs]") {
  test::TempDir tmp;
  const auto rec = test::source_dir() / "tests" / "data" / "replay" / "wmma_f16_4096x4096x4096.json";
  REQUIRE(std::filesystem::exists(rec));
  auto job = [&](const std::string& budget_table) {
    auto path = tmp.path / "job.toml";
    std::ofstream(path) << "[tune]\nevaluations = 40\nstrategy = \"random\"\n" << budget_table
                        << "[[problems]]\nshapes = [\"4096x4096x4096\"]\ndtypes = [\"f16\"]\nfamilies = [\"wmma\"]\n";
    return path;
  };
  auto evaluated = [&](const std::filesystem::path& j, const std::string& flags) {
    auto res = test::run_command(fmt::format("{} --quiet --json --db {} tune --replay {} --config {} {}",
                                             test::gemmtune_binary().string(), (tmp.path / "t.db").string(), rec.string(),
                                             j.string(), flags));
    INFO(res.out);
    REQUIRE(res.exit_code == 0);
    auto js = nlohmann::json::parse(res.out.substr(res.out.find('{')));
    return js["problems"][0]["families"][0]["evaluated"].get<int>();
  };
  CHECK(evaluated(job(""), "--no-reuse") == 40);
  CHECK(evaluated(job("[tune.budget.wmma]\nevaluations = 25\n"), "--no-reuse") == 25);
  CHECK(evaluated(job("[tune.budget.wmma]\nevaluations = 25\n"), "--no-reuse --budget 30") == 30);
  // What the family's table does not set comes from [tune]; a flag replaces only its own key.
  CHECK(evaluated(job("[tune.budget.wmma]\nseconds = 1000\n"), "--no-reuse") == 40);
  CHECK(evaluated(job("[tune.budget.wmma]\nevaluations = 25\n"), "--no-reuse --time 1000") == 25);
  // A budget for a family that exists but this run does not tune (not in the recording) is fine.
  CHECK(evaluated(job("[tune.budget.cublaslt]\nevaluations = 7\n"), "--no-reuse") == 40);
  // A family the run does not know is an error naming the job's line.
  auto res = test::run_command(fmt::format("{} --quiet --db {} tune --replay {} --config {}", test::gemmtune_binary().string(),
                                           (tmp.path / "t.db").string(), rec.string(),
                                           job("[tune.budget.wmmma]\nevaluations = 25\n").string()));
  CHECK(res.exit_code != 0);
  CHECK_THAT(res.out, Catch::Contains("job.toml:4:") && Catch::Contains("[tune.budget.wmmma]: unknown family 'wmmma'"));
}

// compare over a recording shows, per problem, the hand-written families the job names for it
// (else every recorded one but cuBLASLt), cuBLASLt's best found beside them, and leaves out
// (with a note) a problem the recording lacks.
TEST_CASE("compare shows the families a job names for each problem", "[replay][cli][jobs]") {
  test::TempDir tmp;
  const auto rec = test::source_dir() / "configs" / "default_job.replay.json";
  REQUIRE(std::filesystem::exists(rec));
  auto path = tmp.path / "job.toml";
  std::ofstream(path) << "[[problems]]\nshapes = [\"4096x4096x4096\"]\nfamilies = [\"shared_tile\", \"cublaslt\"]\n"
                      << "[[problems]]\nshapes = [\"4096x4096x4096\"]\ndtypes = [\"f16\"]\n"
                      << "[[problems]]\nshapes = [\"4096x4096x4096\"]\ndtypes = [\"bf16\"]\nfamilies = [\"cublaslt\"]\n"
                      << "[[problems]]\nshapes = [\"1000x1000x1000\"]\n";
  auto res = test::run_command(fmt::format("{} --quiet --json --db {} compare --replay {} --config {} --budget 20",
                                           test::gemmtune_binary().string(), (tmp.path / "t.db").string(), rec.string(),
                                           path.string()));
  INFO(res.out);
  REQUIRE(res.exit_code == 0);
  CHECK_THAT(res.out, Catch::Contains("has no measurements of 1000x1000x1000 f32>f32 nn a16: left out"));
  CHECK_THAT(res.out, Catch::Contains("4096x4096x4096 bf16>bf16 nn a16: the families named for it are all libraries"));
  auto j = nlohmann::json::parse(res.out.substr(res.out.find('[')));
  REQUIRE(j.size() == 3);
  auto labels = [&](size_t i) {
    std::vector<std::string> l;
    for (auto& r : j[i]["rows"]) l.push_back(r["label"]);
    return l;
  };
  CHECK(j[0]["problem"] == "4096x4096x4096 f32>f32 nn a16");
  // The recording's pick (its rank-0 row) beside cuBLASLt's best, as on a GPU.
  CHECK(labels(0) == std::vector<std::string>{"shared_tile", "cublaslt (pick)", "cublaslt (best)"});
  // No families named: every recorded hand-written family that has a winner here (the f32
  // families have none at f16 and are left out).
  CHECK(labels(1) == std::vector<std::string>{"wgmma_tma", "wmma", "cublaslt (pick)", "cublaslt (best)"});
  CHECK(labels(2) == std::vector<std::string>{"cublaslt (pick)", "cublaslt (best)"});
  for (size_t i = 0; i < 3; ++i) CHECK(j[i]["replay"] == true);
}

// Families of one knob with 64 values, each recorded with distinct times: a toy to tune in replay.
struct ToyReplay {
  const Problem p = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Recording rec;
  SpaceSource spaces = [this](const std::string& fam, const Problem& q) { return rec.find(q.key(), fam)->space(); };
  ProvenanceSource prov = [this](const std::string& fam, bool quick) {
    return replay_provenance(rec, fam, "normal", quick);
  };
  explicit ToyReplay(std::initializer_list<const char*> families) {
    std::vector<int64_t> xs(64);
    for (int64_t i = 0; i < 64; ++i) xs[size_t(i)] = i;
    std::vector<Param> params = {{"x", "a knob", xs, {}, 0}};
    for (const char* fam : families) {
      RecordedSpace& rs = rec.space_for(kDevice, p, fam, "1.0", params);
      for (int64_t i = 0; i < 64; ++i) rs.add({i}, Outcome{Status::ok, 100.0 + double((i * 37) % 64), ""});
    }
  }
  ToyReplay(const ToyReplay&) = delete;  // the sources point at this object's recording
  ToyReplay& operator=(const ToyReplay&) = delete;
};

TEST_CASE("the tuner searches each family under its own budget where it has one", "[replay][search]") {
  ToyReplay toy{"toy", "toy2"};
  const Problem& p = toy.p;
  ReplayMeasurer meas(toy.rec);
  TuneOptions o;
  o.strategy = "random";
  o.budget.max_evaluations = 20;
  o.family_budgets["toy2"].max_evaluations = 9;
  o.family_budgets["elsewhere"].max_evaluations = 3;
  o.settle_s = 0;
  o.tune_id = "test";
  CHECK_THAT(describe(o), Catch::Contains("budget 20 evaluations per family (elsewhere: 3 evaluations; toy2: 9 evaluations), seed"));
  Tuner t(nullptr, meas, nullptr, nullptr, toy.spaces, toy.prov, o);
  ProblemOutcome po = t.tune(p, {"toy", "toy2"});
  REQUIRE(po.families.size() == 2);
  CHECK(po.families[0].evaluated == 20);
  CHECK(po.families[0].stop_reason == "20 evaluations");
  CHECK(po.families[1].evaluated == 9);
  CHECK(po.families[1].stop_reason == "9 evaluations");
}

// "auto" searches a small space exhaustively only when the budget covers all of it: cut short,
// exhaustive would search a prefix of the enumeration order.
TEST_CASE("auto is exhaustive only where the budget covers the space, else model-based", "[replay][search]") {
  ToyReplay toy{"toy"};
  const Problem& p = toy.p;
  struct Case {
    uint64_t evaluations;
    double fraction;
    const char* strategy;
    uint64_t evaluated;
  };
  for (Case c : {Case{64, 1.0, "exhaustive", 64}, Case{1000, 1.0, "exhaustive", 64}, Case{20, 1.0, "bayes", 20},
                 Case{1000, 0.25, "bayes", 16}}) {
    ReplayMeasurer meas(toy.rec);
    TuneOptions o;
    o.budget.max_evaluations = c.evaluations;
    o.budget.max_fraction = c.fraction;
    o.settle_s = 0;
    o.tune_id = "test";
    Tuner t(nullptr, meas, nullptr, nullptr, toy.spaces, toy.prov, o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    INFO("budget " << c.evaluations << " evaluations, fraction " << c.fraction);
    CHECK(po.families[0].strategy == c.strategy);
    CHECK(po.families[0].evaluated == c.evaluated);
  }
}

TEST_CASE("a recording keeps re-timings, times and roofs; a version 1 recording loads as exploration timings",
          "[replay]") {
  test::TempDir dir;
  Recording r;
  RecordedSpace s = small_space();
  RecordedResult x;
  x.explored = {Status::ok, 640.25, ""};
  x.quick = true;
  x.compile_s = 2.5;
  x.measure_s = 0.125;
  x.retimed = summarize({700.0, 702.0, 698.0, 701.0}, Center::mean, {2, 2});
  s.record({64, 1}, x);
  r.spaces().push_back(s);
  r.roofs().push_back(roof_row("NVIDIA H200", "fp32_fma", 63.4e12));
  r.compile_threads = 16;
  r.save(dir.path / "v2.json");
  Recording back = Recording::load(dir.path / "v2.json");
  CHECK(back.format == kReplayFormat);
  CHECK(back.to_json() == r.to_json());
  CHECK(back.compile_threads == 16);
  REQUIRE(back.roofs().size() == 1);
  CHECK(back.roofs()[0].value == 63.4e12);
  auto got = back.spaces()[0].recorded({64, 1});
  REQUIRE(got);
  REQUIRE(got->retimed);
  CHECK(got->retimed->center == Center::mean);
  CHECK(got->retimed->value() == Approx(700.25));
  CHECK(got->compile_s == 2.5);
  CHECK(got->measure_s == 0.125);
  CHECK(back.spaces()[0].retime_ratio().value() == Approx(700.25 / 640.25));

  // The committed recordings of format 1: every figure an exploration timing, no times.
  Recording v1 = Recording::load(test::source_dir() / "tests" / "data" / "replay" / "wmma_f16_4096x4096x4096.json");
  CHECK(v1.format == kReplayFormatV1);
  CHECK(v1.roofs().empty());
  for (auto& [c, rr] : v1.spaces()[0].recorded_results()) {
    CHECK_FALSE(rr.retimed);
    CHECK(std::isnan(rr.measure_s));
  }
  CHECK_FALSE(v1.spaces()[0].retime_ratio());
}

namespace {
// A toy recording of one knob x = 0..15 (default x = 8) explored at 100 + x us, with times per
// config and a measured roof under which the fastest exploration timings cannot run; with
// `retimed`, x = 0 was also re-timed, at 130 us.
struct Simulated {
  const Problem p = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Recording rec;
  explicit Simulated(double measure_s, bool retimed = false) {
    std::vector<int64_t> xs(16);
    for (int64_t i = 0; i < 16; ++i) xs[size_t(i)] = i;
    RecordedSpace& rs = rec.space_for(kDevice, p, "toy", "1.0", {{"x", "a knob", xs, {}, 8}});
    for (int64_t i = 0; i < 16; ++i) {
      RecordedResult r;
      r.explored = {Status::ok, 100.0 + double(i), ""};
      r.measure_s = measure_s;
      r.compile_s = 0;
      if (i == 0 && retimed) r.retimed = summarize({130.0, 130.0, 130.0}, Center::median);
      rs.record({i}, r);
    }
    // 2 x 512^3 FLOP at 2.6 TFLOP/s: 103.2 us, between the exploration timings of x = 3 and 4.
    rec.roofs().push_back(roof_row(kDevice.name, "fp32_fma", 2.0 * 512 * 512 * 512 / 103.2e-6));
  }
  SpaceSource spaces() const {
    return [this](const std::string& fam, const Problem& q) { return rec.find(q.key(), fam)->space(); };
  }
  ProvenanceSource prov() const {
    return [this](const std::string& fam, bool quick) { return replay_provenance(rec, fam, "normal", quick); };
  }
  FamilyOutcome tune(ReplayMeasurer& meas, TuneOptions o) const {
    o.strategy = "exhaustive";
    o.settle_s = 0;
    o.tune_id = "sim";
    Tuner t(nullptr, meas, nullptr, nullptr, spaces(), prov(), o);
    ProblemOutcome po = t.tune(p, {"toy"});
    REQUIRE(po.families.size() == 1);
    REQUIRE(po.families[0].best);
    CHECK(t.now() == *meas.simulated_seconds());
    return po.families[0];
  }
};
}  // namespace

TEST_CASE("a replay simulates the run: re-timings as recorded or bounded by the roofs, a clock the budget reads",
          "[replay][tune]") {
  Simulated sim(0.5);
  ReplayMeasurer meas(sim.rec);
  TuneOptions o;
  o.budget.max_seconds = 5;  // of the recorded GPU's time: 10 measurements of 0.5 s
  o.min_gain = 0;
  FamilyOutcome f = sim.tune(meas, o);
  CHECK(f.evaluated == 9);  // the first is measured twice, before and after the settle, as on a GPU
  CHECK(f.stop_reason == "5 s");
  // Finalists x = 0..3 and the baseline x = 8: x = 0..3 were explored faster than the roofline
  // allows and are re-timed at it (103.2 us), so they tie; the tie is broken by name.
  CHECK(f.best_name == "toy_x0");
  CHECK(f.best_m.time_us() == Approx(103.2));
  CHECK_THAT(f.figure_note, Catch::Contains("exploration timing") && Catch::Contains("bounded by the measured roofline"));
  CHECK(meas.figures().bounded.size() == 4);
  CHECK(meas.figures().recorded.empty());
  CHECK(f.decision.tie);
  CHECK_FALSE(meas.clock_estimated());
  // The clock: nine configs in ten measurements, then the finalists' re-timing (8 rounds of five short turns).
  CHECK(*meas.simulated_seconds() > 5.0);
  CHECK(*meas.simulated_seconds() < 5.0 + 8 * 5 * 0.05);

  // x = 0 re-timed at 130 us in the recording: replayed as recorded, and the others' exploration
  // timings scaled by the recording's re-timed / explored ratio (1.3).
  Simulated with(0.5, true);
  ReplayMeasurer meas2(with.rec);
  o.budget = Budget{};
  FamilyOutcome g = with.tune(meas2, o);
  CHECK(g.best_name == "toy_x0");
  CHECK(g.best_m.time_us() == Approx(130.0));
  CHECK(g.figure_note == "replay: the recorded re-timing");
  CHECK(g.decision.runner_up == "toy_x1");
  CHECK(g.decision.margin == Approx(101.0 * 1.3 / 130.0 - 1));
  CHECK(meas2.figures().recorded.size() == 1);
}

TEST_CASE("a replay applies the margin as a real run does", "[replay][tune]") {
  Simulated sim(0.01);
  auto winner = [&](double min_gain) {
    ReplayMeasurer meas(sim.rec);
    TuneOptions o;
    o.min_gain = min_gain;
    return sim.tune(meas, o);
  };
  // The baseline x = 8 explored at 108 us; the leaders at the roofline, 103.2 us: +4.7 %.
  CHECK(winner(0.02).best_name == "toy_x0");
  FamilyOutcome kept = winner(0.05);
  CHECK(kept.best_name == "toy_x8");
  CHECK(kept.decision.margin == Approx(103.2 / 108.0 - 1));
  CHECK_THAT(kept.note, Catch::Contains("against the baseline") && Catch::Contains("switching needs 5 %"));
}

namespace {
const std::filesystem::path& default_recording() {
  static const auto p = test::source_dir() / "configs" / "default_job.replay.json";
  return p;
}
// Runs gemmtune with --json into a fresh store; the document it prints.
json run_json(const test::TempDir& tmp, const std::string& args) {
  static int n = 0;
  auto db = tmp.path / fmt::format("run{}.db", n++);
  auto res = test::run_command(fmt::format("{} --quiet --json --db {} {}", test::gemmtune_binary().string(), db.string(), args));
  INFO(args << "\n" << res.out);
  REQUIRE(res.exit_code == 0);
  const auto start = res.out.find_first_of("{[");
  REQUIRE(start != std::string::npos);
  return json::parse(res.out.substr(start));
}
}  // namespace

// The README's main command on a machine without a GPU replays configs/default_job.replay.json
// (recorded on an H200 on 2026-12-04 in format 2: the finalists' re-timings and every
// config's compile and measure seconds kept) as a simulation of the recorded run.
TEST_CASE("the default job replayed: no figure above the recording's roofs, the margin applies, and the run's time",
          "[replay][cli]") {
  test::TempDir tmp;
  Recording rec = Recording::load(default_recording());
  std::map<std::string, double> roofs;
  for (auto& r : rec.roofs()) roofs[r.name] = r.value;
  REQUIRE(roofs.count("tensor_f16"));
  const std::string tune = fmt::format("tune --default-job --replay {}", default_recording().string());
  json j = run_json(tmp, tune);
  CHECK(j["replay"] == true);
  REQUIRE(j["problems"].size() == 3);
  for (auto& pj : j["problems"]) {
    const Problem p = problem_from_json(pj["problem"]);
    const double roof = roofs.at(compute_roof_name(p));
    for (auto& f : pj["families"]) {
      if (!f.contains("tflops")) continue;
      INFO(pj["key"] << " " << f["family"] << " " << f["tflops"]);
      CHECK(f["tflops"].get<double>() * 1e12 <= roof * (1 + 1e-9));
      CHECK_THAT(f["figure"].get<std::string>(), Catch::StartsWith("replay: the recorded re-timing"));
    }
  }
  const double sim = j["simulation"]["simulated_seconds"];
  CHECK(sim > 20);  // the recorded run took 62.8 s (docs/results-h200.md)
  CHECK(sim < 120);
  CHECK(j["simulation"]["estimated"] == false);  // the recording has the run's times
  CHECK(j["simulation"]["figures"]["bounded"].get<int>() == 0);  // every figure a recorded re-timing

  // A margin of 50 %: no challenger leads any family's baseline (its recorded default: the
  // hand-written families' default config, cuBLASLt's heuristic pick) by that much.
  json k = run_json(tmp, tune + " --min-gain 50");
  for (auto& pj : k["problems"])
    for (auto& f : pj["families"]) {
      const RecordedSpace* rs = rec.find(pj["key"], f["family"]);
      REQUIRE(rs);
      Space s = rs->space();
      INFO(pj["key"] << " " << f["family"] << ": " << f["note"]);
      CHECK(f["best"] == s.name(s.default_config()));
    }

  // The summary says how long the run would have taken on the recorded GPU.
  auto text = test::run_command(fmt::format("{} --quiet --db {} {}", test::gemmtune_binary().string(),
                                            (tmp.path / "text.db").string(), tune));
  INFO(text.out);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("On the recorded GPU (NVIDIA H200) this run would have taken about"));
  CHECK_THAT(text.out, Catch::Contains("figure: replay: the recorded re-timing"));
  if (!test::have_gpu()) {
    // Without --replay: the same, as the README's command runs it here.
    auto plain = test::run_command(fmt::format("{} --quiet --db {} tune --default-job", test::gemmtune_binary().string(),
                                               (tmp.path / "plain.db").string()));
    INFO(plain.out);
    CHECK(plain.exit_code == 0);
    CHECK_THAT(plain.out, Catch::Contains("running the default job as a REPLAY"));
    CHECK_THAT(plain.out, Catch::Contains("this run would have taken about"));
  }
}

TEST_CASE("tune --replay with no problem named tunes the recording's problems over their recorded families",
          "[replay][cli]") {
  test::TempDir tmp;
  json j = run_json(tmp, fmt::format("tune --replay {} --budget 5", default_recording().string()));
  Recording rec = Recording::load(default_recording());
  REQUIRE(j["problems"].size() == rec.problems().size());
  size_t families = 0;
  for (auto& pj : j["problems"])
    for (auto& f : pj["families"]) {
      CHECK(rec.find(pj["key"], f["family"]) != nullptr);
      CHECK(f["skipped"] == "");
      ++families;
    }
  CHECK(families == rec.spaces().size());
}

// compare resolves a job as tune does: a family it tunes first (no stored winner) gets the
// job's [tune.budget.FAMILY].
TEST_CASE("compare --config honours the job's per-family budgets", "[replay][cli][jobs]") {
  test::TempDir tmp;
  auto explored = [&](const std::string& budget_table) {
    auto job = tmp.path / "job.toml";
    std::ofstream(job) << "[tune]\nevaluations = 20\nstrategy = \"random\"\n" << budget_table
                       << "[[problems]]\nshapes = [\"4096x4096x4096\"]\ndtypes = [\"f16\"]\nfamilies = [\"wmma\"]\n";
    auto db = tmp.path / fmt::format("compare{}.db", budget_table.size());
    auto res = test::run_command(fmt::format("{} --quiet --json --db {} compare --replay {} --config {}",
                                             test::gemmtune_binary().string(), db.string(),
                                             default_recording().string(), job.string()));
    INFO(res.out);
    REQUIRE(res.exit_code == 0);
    Store s = Store::open_readonly(db);
    RowFilter f;
    f.family = "wmma";
    f.quick = true;  // exploration rows (the re-timings are full)
    std::set<std::string> configs;
    for (auto& r : s.rows(f)) configs.insert(r.config_hash);
    return configs.size();
  };
  CHECK(explored("") == 20);
  CHECK(explored("[tune.budget.wmma]\nevaluations = 7\n") == 7);
}

// `tune --record` (recording_from_store): per config its first row of the run as the
// exploration, with its compile and measure seconds, its second as the finalists' re-timing;
// the store's roofs of the device. Replayed rows give their exploration figure only.
TEST_CASE("a run's rows become a recording with re-timings, times and roofs", "[replay][store]") {
  test::TempDir tmp;
  Store store = Store::open(tmp.path / "r.db");
  RecordedSpace rs = small_space();
  Space space = rs.space();
  const Problem p = rs.problem();
  Provenance prov;
  prov.device_name = kDevice.name;
  prov.device_uuid = kDevice.uuid;
  prov.arch = kDevice.arch;
  prov.family = "register_tile";
  prov.family_version = "1.0";
  auto row = [&](const Config& c, Status st, double us, bool quick, bool replay) {
    Measurement m;
    m.status = st;
    m.quick = quick;
    if (st == Status::ok) m.time = summarize({us, us, us});
    m.compile_s = 1.5;
    m.measure_s = 0.25;
    store.insert(measured_row(p, space, c, m, prov, replay ? "replayed" : "run", replay));
  };
  row({64, 0}, Status::ok, 800, true, false);
  row({64, 1}, Status::ok, 640, true, false);
  row({64, 0}, Status::ok, 830, false, false);  // its finalists' re-timing
  row({128, 0}, Status::verify_failed, 12, true, false);
  row({64, 1}, Status::ok, 650, true, true);
  RoofRow roof;
  roof.device_name = kDevice.name;
  roof.name = "fp32_fma";
  roof.value = 6e13;
  roof.unit = "FLOP/s";
  roof.how = "test";
  store.put_roof(roof);
  auto space_of = [&](const std::string&, const Problem&) { return space; };
  Recording rec = recording_from_store(store, "run", space_of, 12);
  CHECK(rec.compile_threads == 12);
  REQUIRE(rec.roofs().size() == 1);
  CHECK(rec.roofs()[0].value == 6e13);
  REQUIRE(rec.spaces().size() == 1);
  const RecordedSpace& s = rec.spaces()[0];
  CHECK(s.size() == 3);
  auto a = s.recorded({64, 0});
  REQUIRE(a);
  CHECK(a->explored.median_us == 800);
  CHECK(a->quick);
  CHECK(a->compile_s == 1.5);
  CHECK(a->measure_s == 0.25);
  REQUIRE(a->retimed);
  CHECK(a->retimed->value() == 830);
  CHECK_FALSE(s.recorded({64, 1})->retimed);
  CHECK(s.recorded({128, 0})->explored.status == Status::verify_failed);
  // A replay's own rows: the figure it was given, no times.
  Recording again = recording_from_store(store, "replayed", space_of);
  auto b = again.spaces().at(0).recorded({64, 1});
  REQUIRE(b);
  CHECK(b->explored.median_us == 650);
  CHECK(std::isnan(b->measure_s));
}
