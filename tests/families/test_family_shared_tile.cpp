// The shared_tile family: its space and refusals (CPU); its candidates compiled with NVRTC
// for sm_90 and sm_80 (CPU); and on a GPU, every dtype and layout verified against float64 at
// aligned and odd shapes for the default and a spread of tile shapes.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <filesystem>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("shared_tile"); }

constexpr std::array<Layout, 4> kLayouts = {Layout::nn, Layout::nt, Layout::tn, Layout::tt};

}  // namespace

TEST_CASE("shared_tile: the space and the lab's kernels", "[shared_tile]") {
  const Family& fam = family();
  CHECK_FALSE(fam.is_library());
  CHECK(fam.source_hash() != 0);
  const gt_device h = arch_limits("sm_90");
  Problem p = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  Space s = fam.space(p, h);
  CHECK(s.dims() == 4);
  CHECK(s.raw_size() == 54);
  CHECK(s.count_valid() == 54);
  CHECK(s.name(s.default_config()) == "shared_tile_tile_m32_tile_n32_tile_k32_pad1");
  for (auto& prm : s.params()) CHECK_FALSE(prm.help.empty());
  // Every dtype, including f16 in with f32 out, and every layout.
  for (auto dt : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    for (auto lay : kLayouts) {
      Problem q = Problem::make(4097, 4095, 33, dt, Problem::default_out(dt), lay);
      CHECK(fam.space(q, h).count_valid() == 54);
    }
  Problem mixed = Problem::make(100, 100, 100, DType::f16, DType::f32, Layout::tn);
  CHECK(fam.space(mixed, h).count_valid() == 54);

  // The lab's kernels: T×T tiles of A and B, T×T threads, no padding.
  for (int t : {8, 16, 32}) {
    const std::string ts = std::to_string(t);
    Config c = test::parse_config(s, "tile_m=" + ts + ",tile_n=" + ts + ",tile_k=" + ts + ",pad=0");
    CHECK(s.valid(c));
    Refused why;
    auto spec = fam.build(p, c, h, &why);
    REQUIRE(spec);
    CHECK(spec->block[0] == uint32_t(t));
    CHECK(spec->block[1] == uint32_t(t));
    CHECK(spec->grid[0] == uint32_t((4096 / t) * (4096 / t)));
    CHECK(spec->dynamic_smem == 0);
  }
  // Rectangular tiles: x is along N.
  auto spec = fam.build(p, test::parse_config(s, "tile_m=8,tile_n=32,tile_k=16"), h, nullptr);
  REQUIRE(spec);
  CHECK(spec->block[0] == 32);
  CHECK(spec->block[1] == 8);
  CHECK(spec->grid[0] == uint32_t(512 * 128));
  CHECK_THAT(fam.describe(p, test::parse_config(s, "tile_m=8,tile_n=32,tile_k=16,pad=0")),
             Catch::Contains("8x32") && Catch::Contains("256 threads") && Catch::Contains("unpadded"));
}

TEST_CASE("shared_tile refuses what the device cannot take, and says why", "[shared_tile]") {
  const Family& fam = family();
  Problem p = Problem::make(1024, 1024, 1024, DType::f32, DType::f32, Layout::nn);
  const gt_device t4 = arch_limits("sm_75");
  Space s = fam.space(p, t4);
  // Every tile fits sm_75's 48 KiB of static shared memory (32x32x32 padded: 8.4 KB) ...
  CHECK(s.count_valid() == 54);
  const Config largest = test::parse_config(s, "tile_m=32,tile_n=32,tile_k=32,pad=1");
  CHECK_FALSE(fam.can_implement(p, largest, t4));
  // ... so shrink the device: with 8 KiB per block the padded 32x32x32 tiles do not fit
  // (8448 bytes), the unpadded ones (8192) do.
  gt_device small = t4;
  small.smem_per_block = 8 * 1024;
  CHECK(test::says(fam.can_implement(p, largest, small), "shared memory"));
  CHECK_FALSE(fam.can_implement(p, test::parse_config(s, "tile_m=32,tile_n=32,tile_k=32,pad=0"), small));
  // 1024 threads on a device that allows 512.
  gt_device few = t4;
  few.max_threads_per_block = 512;
  auto why = fam.can_implement(p, largest, few);
  CHECK(test::says(why, "threads"));
  CHECK(test::says(why, "exceeds the device"));
  CHECK_FALSE(fam.can_implement(p, test::parse_config(s, "tile_m=16,tile_n=32"), few));
}

TEST_CASE("shared_tile is correct at every dtype, layout and odd shape", "[gpu][shared_tile]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> all_shapes = {{1024, 1024, 1024}, {512, 768, 256}, {1, 1, 1},       {7, 13, 17},
                                         {1000, 3000, 7},    {4097, 4095, 33}, {33, 65, 4099}};
  const std::vector<Shape> some_shapes = {{512, 768, 256}, {7, 13, 17}, {4097, 4095, 33}, {33, 65, 4099}};
  // The smallest and the largest tiles, rectangular ones both ways, with and without padding.
  const std::vector<std::string> variants = {
      "tile_m=8,tile_n=8,tile_k=8,pad=0",    "tile_m=32,tile_n=32,tile_k=32,pad=0", "tile_m=32,tile_n=8,tile_k=16,pad=1",
      "tile_m=8,tile_n=32,tile_k=32,pad=0",  "tile_m=16,tile_n=16,tile_k=8,pad=1",
  };
  struct Job {
    Problem p;
    Config c;
  };
  std::vector<Job> jobs;
  for (auto lay : kLayouts) {
    for (auto dt : {DType::f32, DType::tf32, DType::f16, DType::bf16})
      for (auto sh : all_shapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
        jobs.push_back({p, fam.space(p, d).default_config()});
      }
    // f16 in, f32 out.
    Problem mixed = Problem::make(4097, 4095, 33, DType::f16, DType::f32, lay);
    jobs.push_back({mixed, fam.space(mixed, d).default_config()});
    for (auto dt : {DType::f32, DType::bf16})
      for (auto sh : some_shapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
        Space s = fam.space(p, d);
        for (auto& v : variants) jobs.push_back({p, test::parse_config(s, v)});
      }
  }
  test::check_correct_jobs(fam, jobs);
}
