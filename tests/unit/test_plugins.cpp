#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

using namespace gt;

TEST_CASE("the build's plugins load and describe themselves without a GPU", "[plugins]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  INFO("skipped: " << reg.skipped().size());
  for (auto& s : reg.skipped()) INFO(s.path.string() << ": " << s.reason);
  CHECK(reg.skipped().empty());
  REQUIRE(reg.find("naive"));
  const Family& naive = reg.get("naive");
  CHECK_FALSE(naive.is_library());
  CHECK(naive.version() == "1.0");
  CHECK(naive.source_hash() != 0);
  Problem p = Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn);
  Space s = naive.space(p, arch_limits("sm_90"));
  CHECK(s.dims() == 3);
  CHECK(s.name(s.default_config()) == "naive_mapcoalesced_bx32_by8");
  CHECK_THROWS_AS(reg.get("nonexistent"), InputError);
}

TEST_CASE("broken plugins are reported by name and skipped while the others load", "[plugins]") {
  auto reg = PluginRegistry::load({test::test_plugin_dir() / "broken", test::plugin_dir(), "/nonexistent/dir"});
  CHECK(reg.find("naive"));
  auto reason = [&](const std::string& file) -> std::string {
    for (auto& s : reg.skipped())
      if (s.path.filename() == file || s.path == file) return s.reason;
    return "not skipped";
  };
  CHECK_THAT(reason("libwrong_abi.so"), Catch::Contains("built for plugin ABI v99"));
  // A v1 plugin is refused by its family's name, with what to do about it.
  CHECK_THAT(reason("libabi_v1.so"), Catch::Contains("family 'old_family' is built for plugin ABI v1; this gemmtune speaks v2") &&
                                         Catch::Contains("rebuild it against this gemmtune's plugin_abi.h"));
  CHECK_FALSE(reg.find("old_family"));
  CHECK_THAT(reason("libthrowing_entry.so"), Catch::Contains("entry point threw: entry point exploded on purpose"));
  CHECK_THAT(reason("libnot_a_plugin.so"), Catch::Contains("not a gemmtune plugin"));
  CHECK_THAT(reason("libnull_entry.so"), Catch::Contains("returned no plugin table"));
  CHECK_THAT(reason("libgarbage.so"), Catch::Contains("cannot be loaded"));
  CHECK_THAT(reason("/nonexistent/dir"), Catch::Contains("does not exist"));
}

// Plugin ABI v4 added gt_problem's per-operand alignment after v3's fields; a plugin built
// against v3 (or v2) still loads, reads its own prefix of the problem, and answers by it.
TEST_CASE("plugins of ABI v3 and v2 still load and read their prefix of the problem", "[plugins][abi]") {
  CHECK(GT_ABI_VERSION == 4u);
  auto reg = PluginRegistry::load({test::test_plugin_dir() / "old_abi"});
  for (auto& s : reg.skipped()) INFO(s.path.string() << ": " << s.reason);
  CHECK(reg.skipped().empty());
  const gt_device d = arch_limits("sm_90");
  const Problem aligned = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  const Problem odd_c = Problem::make(64, 63, 64, DType::f32, DType::f32, Layout::nn);  // ldc 63: 4 bytes
  REQUIRE(odd_c.abi().align_bytes == 4);
  REQUIRE(odd_c.abi().align_a == 16);  // what a v4 family would see, and an older one cannot
  for (uint32_t version : {3u, 2u}) {
    INFO("ABI v" << version);
    const Family* f = reg.find(version == 3 ? "abi_v3_family" : "abi_v2_family");
    REQUIRE(f);
    CHECK(f->abi_version() == version);
    CHECK(f->knows_fp8() == (version >= 3));
    CHECK_FALSE(f->can_implement(aligned, {32}, d));
    auto why = f->can_implement(odd_c, {32}, d);
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("aligned to 4 bytes"));
    Refused r;
    auto k = f->build(aligned, {64}, d, &r);
    INFO(r.why);
    REQUIRE(k);
    CHECK(k->block[0] == 64);
  }
  // v3 reads b_dtype where v3 put it; v2 is never asked about FP8 (the host refuses for it).
  Problem fp8 = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::nt);
  CHECK_FALSE(reg.get("abi_v3_family").can_implement(fp8, {32}, d));
  Problem mixed = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::nt, DType::e5m2);
  CHECK_THAT(reg.get("abi_v3_family").can_implement(mixed, {32}, d).value_or(""), Catch::Contains("one type"));
  CHECK_THAT(reg.get("abi_v2_family").can_implement(fp8, {32}, d).value_or(""), Catch::Contains("no FP8 problems"));
}

TEST_CASE("a family loaded twice is skipped the second time", "[plugins]") {
  auto reg = PluginRegistry::load({test::plugin_dir(), test::plugin_dir()});
  size_t naive = 0;
  for (auto& f : reg.families()) naive += f.name() == "naive";
  CHECK(naive == 1);
  bool reported = false;
  for (auto& s : reg.skipped()) reported |= s.reason.find("already loaded") != std::string::npos;
  CHECK(reported);
}

TEST_CASE("naive refuses what the device cannot launch, with the reason", "[plugins]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  const Family& naive = reg.get("naive");
  Problem p = Problem::make(512, 512, 512, DType::f16, DType::f16, Layout::tt);
  gt_device d = arch_limits("sm_90");
  auto why = naive.can_implement(p, {0, 256, 32}, d);  // 8192 threads
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("exceeds the device's 1024"));
  Problem tall = Problem::make(100000000, 4, 4, DType::f32, DType::f32, Layout::nn);
  auto why2 = naive.can_implement(tall, {0, 32, 1}, d);
  REQUIRE(why2);
  CHECK_THAT(*why2, Catch::Contains("grid.y"));
}
