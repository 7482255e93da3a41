// A problem too large for the device is refused before any candidate runs, with the memory it
// needs, and the rest of the job goes on.
#include "store/store.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace gt;

TEST_CASE("a problem too large for the device is refused with the memory it needs", "[gpu][reliability]") {
  GT_REQUIRE_GPU();
  test::TempDir tmp;
  auto db = tmp.path / "mem.db";
  auto job = tmp.path / "job.toml";
  {
    std::ofstream f(job);
    // 300000^2 floats per operand (360 GB each) cannot fit any GPU of today; 256^3 can.
    f << "name = \"memory\"\n[tune]\nevaluations = 2\n"
         "[[problems]]\nshapes = [\"300000x300000x300000\", \"256x256x256\"]\ndtypes = [\"f32\"]\n"
         "families = [\"naive\"]\n";
  }
  std::string cmd = fmt::format("{} --quiet --json --db {} --cache-dir {} tune --config {} --settle 0.1",
                                test::gemmtune_binary().string(), db.string(), (tmp.path / "cache").string(),
                                job.string());
  auto r = test::run_command(cmd);
  INFO(r.out);
  REQUIRE(r.out.find('{') != std::string::npos);
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  std::map<std::string, nlohmann::json> by_key;
  for (auto& p : j["problems"]) by_key[p["key"].get<std::string>()] = p;
  REQUIRE(by_key.count("300000x300000x300000 f32>f32 nn a16"));
  auto big = by_key["300000x300000x300000 f32>f32 nn a16"]["families"][0];
  CHECK(big["evaluated"] == 0);
  CHECK_THAT(big["skipped"].get<std::string>(), Catch::Contains("GiB of device memory"));
  // The job went on: the small problem was tuned.
  REQUIRE(by_key.count("256x256x256 f32>f32 nn a16"));
  CHECK(by_key["256x256x256 f32>f32 nn a16"]["families"][0]["evaluated"] == 2);
  Store s = Store::open_readonly(db);
  RowFilter f;
  f.m = 300000;
  CHECK(s.rows(f).empty());
}
