// Isolation on the GPU: a tune over the `faulty` family, whose kernels fault, trap, hang or
// leave their output unwritten on purpose, completes; every bad config is recorded with
// what happened, the worker is restarted after each fatal one, and the correct config wins.
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace gt;

TEST_CASE("a tune survives kernels that fault, trap, hang or write nothing", "[gpu][reliability]") {
  GT_REQUIRE_GPU();
  test::TempDir tmp;
  auto db = tmp.path / "faulty.db";
  std::string cmd = fmt::format(
      "{} --quiet --json --db {} --cache-dir {} --plugin-dir {} tune --family faulty --shape 256x256x256 "
      "--strategy exhaustive --hang-floor 3 --settle 0.1",
      test::gemmtune_binary().string(), db.string(), (tmp.path / "cache").string(),
      (test::test_plugin_dir() / "faulty").string());
  auto r = test::run_command(cmd);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  auto fam = j["problems"][0]["families"][0];
  CHECK(fam["best"] == "faulty_modecorrect");
  CHECK(fam["evaluated"] == 6);
  Store s = Store::open_readonly(db);
  std::map<std::string, std::pair<Status, std::string>> got;
  for (auto& row : s.rows())
    if (row.m.message.rfind("finalist", 0) != 0) got[row.config_name] = {row.m.status, row.m.message};
  CHECK(got["faulty_modecorrect"].first == Status::ok);
  CHECK(got["faulty_modeillegal_address"].first == Status::runtime_fault);
  CHECK(got["faulty_modetrap"].first == Status::runtime_fault);
  CHECK(got["faulty_modemisaligned"].first == Status::runtime_fault);
  CHECK(got["faulty_modehang"].first == Status::timeout);
  CHECK(got["faulty_modeunwritten"].first == Status::verify_failed);
  CHECK_THAT(got["faulty_modeunwritten"].second, Catch::Contains("NaN"));
  CHECK_THAT(got["faulty_modehang"].second, Catch::Contains("hung"));
  for (auto& [name, st] : got) INFO(name << ": " << to_string(st.first) << " " << st.second);
}
