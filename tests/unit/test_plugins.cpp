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
