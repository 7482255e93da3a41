// Nothing wrong across runs (issue 28, items 2, 3 and 6), through the real command line on the
// CPU with replay: the problem's winner is decided over every family the store holds a current
// result of, not over the families of the last run; a write to the store that fails stops the
// tune with exit 1 and leaves a consistent store; and a repeated tune with the same seed
// proposes the same configs (it measures nothing new).
#include "replay/replay.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace gt;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {


// One problem, two families no plugin has: "fast_tile" (3007 us at best) and "slow_tile"
// (16491 us at best), each with a handful of configs.
const char* kTwoFamilies = R"({"format": "gemmtune-replay/2", "spaces": [
 {"recorded": "2026-11-29T12:00:00Z",
  "device": {"name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000", "arch": "sm_90"},
  "problem": {"m": 4096, "n": 4096, "k": 4096, "in": "f32", "out": "f32", "layout": "nn", "align": 16},
  "family": "fast_tile", "family_version": "1.0",
  "params": [{"name": "bm", "help": "", "values": [64, 128, 256], "labels": [], "default": 0}],
  "results": [{"config": [64], "status": "ok", "median_us": 4100.0, "message": ""},
              {"config": [128], "status": "ok", "median_us": 3007.0, "message": ""},
              {"config": [256], "status": "ok", "median_us": 3500.0, "message": ""}]},
 {"recorded": "2026-11-29T12:00:00Z",
  "device": {"name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000", "arch": "sm_90"},
  "problem": {"m": 4096, "n": 4096, "k": 4096, "in": "f32", "out": "f32", "layout": "nn", "align": 16},
  "family": "slow_tile", "family_version": "1.0",
  "params": [{"name": "bm", "help": "", "values": [16, 32], "labels": [], "default": 0}],
  "results": [{"config": [16], "status": "ok", "median_us": 18000.0, "message": ""},
              {"config": [32], "status": "ok", "median_us": 16491.0, "message": ""}]}]})";

struct Cli {
  test::TempDir tmp;
  fs::path db = tmp.path / "results.db";
  std::string bin = fmt::format("{} --plugin-dir {} --db {} --quiet", test::shell_quote(test::gemmtune_binary()),
                                test::shell_quote(test::naive_only_dir()), test::shell_quote(db));
  json tune(const std::string& args) {
    auto r = test::run_command("{ " + bin + " --json tune " + args + " 2>/dev/null; }");
    INFO("tune " << args << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  }
};

ResultKey key_4096(const std::string& device = "NVIDIA H200") {
  return ResultKey::of(device, Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn));
}

}  // namespace

TEST_CASE("the problem's winner is decided over every family in the store, not the last run's",
          "[reliability][replay][tune]") {
  Cli c;
  const fs::path rec = c.tmp.path / "two.json";
  test::write_file(rec, kTwoFamilies);
  const std::string replay = "--replay " + test::shell_quote(rec) + " --shape 4096x4096x4096 ";
  c.tune(replay + "--family fast_tile");
  REQUIRE(Store::open_readonly(c.db).winner(key_4096(), kAllFamilies)->config_name == "fast_tile_bm128");
  // A tune of the other family alone: it is decided against the stored fast_tile, re-timed
  // beside it (this left slow_tile, 5.5x slower, as the problem's winner).
  json second = c.tune(replay + "--family slow_tile");
  const json& p = second["problems"][0];
  CHECK(p["winner"] == "fast_tile");
  REQUIRE(p["families"].size() == 2);
  CHECK(p["families"][1]["family"] == "fast_tile");
  CHECK(p["families"][1]["strategy"] == "stored");
  CHECK(p["families"][1]["evaluated"] == 0);
  Store s = Store::open_readonly(c.db);
  auto w = s.winner(key_4096(), kAllFamilies);
  REQUIRE(w);
  CHECK(w->config_name == "fast_tile_bm128");
  CHECK(s.get(w->row_id)->family == "fast_tile");
  CHECK(s.winner(key_4096(), "slow_tile")->config_name == "slow_tile_bm32");
  // The table hands programs the fast family.
  const fs::path out = c.tmp.path / "table.json";
  auto r = test::run_command(c.bin + " export --include-replay -o " + test::shell_quote(out));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  json table = json::parse(test::read_file(out));
  REQUIRE(table["entries"].size() == 1);
  CHECK(table["entries"][0]["family"] == "fast_tile");
  // A stored winner of another build or toolchain is not current: a run of another
  // fingerprint (here: other inputs) decides among its own families only.
  json zeros = c.tune(replay + "--family slow_tile --dist zeros");
  CHECK(zeros["problems"][0]["families"].size() == 1);
}

TEST_CASE("a write to the store that fails stops the tune with exit 1 and leaves the store consistent",
          "[reliability][replay][store]") {
  Cli c;
  const fs::path rec = test::source_dir() / "tests" / "data" / "replay" / "register_tile_f32_2048x2048x2048.json";
  const std::string tune = " tune --replay " + test::shell_quote(rec) + " --strategy random --seed 2 ";
  c.tune("--replay " + test::shell_quote(rec) + " --strategy random --seed 2 --budget 3");
  const int64_t rows = Store::open_readonly(c.db).count();
  const uintmax_t size = fs::file_size(c.db);
  // A disk that fills up: no file of this process may grow past a few pages more than the
  // store has now (RLIMIT_FSIZE, with SIGXFSZ ignored, so that a write fails with EFBIG as
  // on a full disk instead of killing the process). The store's log grows by a page or more
  // per measurement.
  const uintmax_t limit_kb = (size + 64 * 1024) / 1024;
  auto r = test::run_command(fmt::format("bash -c \"trap '' XFSZ; ulimit -f {}; exec {} {} --no-reuse --budget 400\"",
                                         limit_kb, c.bin, tune));
  INFO(r.out);
  CHECK(r.exit_code == 1);  // this skipped the family and exited 0
  CHECK_THAT(r.out, Catch::Contains(c.db.string()) && Catch::Contains("could not be stored"));
  Store s = Store::open_readonly(c.db);
  std::string why;
  CHECK(s.check_integrity(&why));
  INFO(why);
  CHECK(s.count() > rows);  // what was stored before the failure stays
  for (auto& w : s.winners()) CHECK(s.get(w.row_id));
}

TEST_CASE("a store that cannot be created on a full disk: exit 1 naming it, nothing left behind",
          "[reliability][replay][store]") {
  Cli c;
  const fs::path rec = test::source_dir() / "tests" / "data" / "replay" / "register_tile_f32_2048x2048x2048.json";
  // No file of the process may grow at all (RLIMIT_FSIZE 0, SIGXFSZ ignored): SQLite's first
  // write into the new store fails as on a full disk.
  const std::string full = "bash -c \"trap '' XFSZ; ulimit -f 0; exec " + c.bin + " tune --replay " +
                           test::shell_quote(rec) + " --budget 3";
  auto r = test::run_command(full + "\"");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains(c.db.string() + ": cannot create the store"));
  CHECK_FALSE(fs::exists(c.db));  // the empty file SQLite made is gone
  // The same with stderr itself on the full disk: the message cannot be written, and the exit
  // code still says what happened (it was an abort: the failed write threw).
  const fs::path err = c.tmp.path / "stderr.txt";
  r = test::run_command(full + " 2>" + test::shell_quote(err) + "\"");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK_FALSE(fs::exists(c.db));
}

TEST_CASE("a repeated tune with the same seed proposes the same configs and measures nothing new",
          "[reliability][replay][search]") {
  Cli c;
  const fs::path rec = test::source_dir() / "tests" / "data" / "replay" / "register_tile_f32_2048x2048x2048.json";
  for (const char* strategy : {"bayes", "anneal", "genetic"}) {
    INFO(strategy);
    const std::string args =
        fmt::format("--replay {} --strategy {} --budget 60 --seed 7 --finalists 3", test::shell_quote(rec), strategy);
    json first = c.tune(args);
    const int64_t rows = Store::open_readonly(c.db).count();
    json again = c.tune(args);
    const json& f = again["problems"][0]["families"][0];
    CHECK(f["evaluated"] == first["problems"][0]["families"][0]["evaluated"]);
    CHECK(f["reused"] == f["evaluated"]);  // every config proposed again is one the first run measured
    CHECK(Store::open_readonly(c.db).count() == rows);  // (400 -> 620 -> 768 rows, run after run)
    CHECK(f["best"] == first["problems"][0]["families"][0]["best"]);
  }
}
