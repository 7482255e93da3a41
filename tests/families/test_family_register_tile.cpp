// The register_tile family: its space, defaults and refusals (CPU); a deterministic sample of
// its candidates compiled with NVRTC for sm_90 and sm_80 (CPU); and on a GPU, every layout
// verified against float64 at aligned and odd shapes for the default and a spread of configs.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <filesystem>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("register_tile"); }

constexpr std::array<Layout, 4> kLayouts = {Layout::nn, Layout::nt, Layout::tn, Layout::tt};

// The lab's register-tile kernels: 16×16 threads, each owning a TT×TT patch, block tile 16·TT,
// k-step 16, scalar loads, one shared-memory buffer.
std::string lab_config(int tt) {
  return "bm=" + std::to_string(16 * tt) + ",bn=" + std::to_string(16 * tt) + ",bk=16,tm=" + std::to_string(tt) +
         ",tn=" + std::to_string(tt) + ",warp=2x16,vec=1,pipe=single,swz=1,occ=1";
}

size_t param_index(const Space& s, const std::string& name) {
  for (size_t i = 0; i < s.dims(); ++i)
    if (s.params()[i].name == name) return i;
  FAIL("no parameter " << name);
  return 0;
}

// A config written for an aligned problem, narrowed to what `s`'s problem takes: the
// problem's default vector width, then no rasterisation groups.
Config fit(const Space& s, const std::string& text) {
  Config c = test::parse_config(s, text);
  if (!s.valid(c)) {
    const size_t vec = param_index(s, "vec");
    c[vec] = std::min(c[vec], s.default_config()[vec]);
  }
  if (!s.valid(c)) c[param_index(s, "swz")] = 1;
  INFO(s.name(c) << ": " << s.check(c).value_or(""));
  REQUIRE(s.valid(c));
  return c;
}


}  // namespace

TEST_CASE("register_tile: the space, its defaults, and the lab's kernels", "[register_tile]") {
  const Family& fam = family();
  CHECK_FALSE(fam.is_library());
  CHECK(fam.source_hash() != 0);
  const gt_device h = arch_limits("sm_90");
  Problem big = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  Space s = fam.space(big, h);
  CHECK(s.dims() == 10);
  CHECK(s.name(s.default_config()) == "register_tile_bm128_bn128_bk8_tm8_tn8_warp4x8_vec4_pipecp3_swz8_occ2");
  for (auto& p : s.params()) {
    INFO(p.name);
    CHECK_FALSE(p.help.empty());
  }
  // Small enough to search exhaustively, large enough to be worth searching.
  const uint64_t valid = s.count_valid();
  CHECK(valid >= 300);
  CHECK(valid <= 5000);

  // The default is valid for every problem and architecture: it adapts its vector width to
  // the alignment, its pipeline to the architecture and its rasterisation to the grid.
  for (auto arch : {"sm_75", "sm_80", "sm_90"})
    for (auto sh : std::vector<std::array<int64_t, 3>>{{4096, 4096, 4096}, {4097, 4095, 33}, {514, 770, 258}, {1, 1, 1}, {1, 4096, 4096}, {4096, 4096, 1}})
      for (auto lay : kLayouts) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], DType::f32, DType::f32, lay);
        Space sp = fam.space(p, arch_limits(arch));
        INFO(arch << " " << p.key() << " " << sp.name(sp.default_config()));
        CHECK_FALSE(sp.check(sp.default_config()));
      }

  // The lab's 16×16-thread kernels with TT×TT patches are in the space, as 8 warps stacked
  // along M, each warp 2 rows of 16 threads.
  for (int tt : {1, 2, 4, 8}) {
    Config c = test::parse_config(s, lab_config(tt));
    INFO("TT=" << tt << ": " << s.check(c).value_or("valid"));
    CHECK(s.valid(c));
    Refused why;
    auto spec = fam.build(big, c, h, &why);
    REQUIRE(spec);
    CHECK(spec->block[0] * spec->block[1] * spec->block[2] == 256);
    CHECK(spec->grid[0] == uint32_t((4096 / (16 * tt)) * (4096 / (16 * tt))));
    CHECK_THAT(fam.describe(big, c), Catch::Contains("one contiguous patch") && Catch::Contains("8 warps of " + std::to_string(2 * tt) + "x" + std::to_string(16 * tt)));
  }

  // Suggestions are valid configs of the space, the default first.
  auto sug = fam.suggest(big, h, 8, s.dims());
  REQUIRE(sug.size() >= 4);
  CHECK(sug.front() == s.default_config());
  for (auto& c : sug) CHECK(s.valid(c));
}

TEST_CASE("register_tile refuses what the problem or the device cannot take, and says why", "[register_tile]") {
  const Family& fam = family();
  const gt_device h = arch_limits("sm_90");
  Problem big = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  Space s = fam.space(big, h);
  const Config def = s.default_config();

  // Types other than f32 go to the other families.
  Problem half = Problem::make(256, 256, 256, DType::f16, DType::f16, Layout::nn);
  CHECK(test::says(fam.can_implement(half, def, h), "f32"));

  // Vector loads wider than the alignment are refused, and the narrower ones offered.
  Problem odd = Problem::make(4097, 4095, 33, DType::f32, DType::f32, Layout::nn);
  REQUIRE(odd.align == 4);
  auto why = fam.can_implement(odd, def, h);
  CHECK(test::says(why, "aligned to only 4 bytes"));
  CHECK(test::says(why, "vec=1"));
  CHECK_FALSE(fam.can_implement(odd, test::parse_config(s, "vec=1"), h));
  Problem eight = Problem::make(514, 770, 258, DType::f32, DType::f32, Layout::nn);
  REQUIRE(eight.align == 8);
  CHECK_FALSE(fam.can_implement(eight, test::parse_config(s, "vec=2"), h));
  CHECK(test::says(fam.can_implement(eight, test::parse_config(s, "vec=4"), h), "aligned to only 8 bytes"));

  // cp.async needs sm_80.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "pipe=cp3"), arch_limits("sm_75")), "compute capability"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, "pipe=regdb"), arch_limits("sm_75")));

  // Shared memory: 128x256x16 in 4 stages needs 99 KiB; a device with 48 KiB per block
  // (sm_80's limits, cut down) cannot run it.
  Config big_tile = test::parse_config(s, "bm=128,bn=256,bk=16,tm=8,tn=16,pipe=cp4,occ=1");
  CHECK_FALSE(fam.can_implement(big, big_tile, arch_limits("sm_80")));
  gt_device small_smem = arch_limits("sm_80");
  small_smem.smem_per_block_optin = 48 * 1024;
  CHECK(test::says(fam.can_implement(big, big_tile, small_smem), "shared memory"));
  // Two resident blocks of the default need twice its 24 KiB (+1 KiB each for the runtime):
  // refused on an SM with 40 KiB.
  gt_device small_sm = arch_limits("sm_80");
  small_sm.smem_per_sm = 40 * 1024;
  CHECK(test::says(fam.can_implement(big, def, small_sm), "shared memory"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, "occ=1"), small_sm));

  // Threads: 256-thread blocks on a device that allows 128.
  gt_device few_threads = h;
  few_threads.max_threads_per_block = 128;
  why = fam.can_implement(big, def, few_threads);
  CHECK(test::says(why, "threads"));
  CHECK(test::says(why, "exceeds the device"));

  // Registers: an 8x8 tile staged through registers at k-step 16 does not fit in the 128
  // registers that 2 blocks of 256 threads leave; with one block per SM it does.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bk=16,pipe=regdb,occ=2"), h), "registers"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, "bk=16,pipe=regdb,occ=1"), h));

  // Design rules refuse with a reason too.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "tm=2,tn=8"), h), "thread tile"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "warp=2x16,tm=8,tn=16,bn=256,occ=1"), h), "square"));
  Problem one_row = Problem::make(1, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  CHECK(test::says(fam.can_implement(one_row, test::parse_config(s, "swz=8"), h), "same as swz=1"));
}

TEST_CASE("register_tile: the lab's four kernels compile without spilling", "[compile][register_tile]") {
  // The conformance suite compiles a sample of every family; these are the lab's own rungs.
  const Family& fam = family();
  test::CompileSample sample(fam);
  Problem p = Problem::make(4096, 4096, 4096, DType::f32, DType::f32, Layout::nn);
  Space s = fam.space(p, arch_limits("sm_90"));
  for (int tt : {1, 2, 4, 8}) REQUIRE(sample.add(p, test::parse_config(s, lab_config(tt)), "sm_90").empty());
  for (auto& j : sample.results()) {
    INFO(j.what << "\n" << j.result.log);
    REQUIRE(j.result.ok);
    CHECK(j.result.res.registers <= 255);
    CHECK(j.result.res.spill_stores == 0);
  }
}

namespace {

struct GpuJob {
  Problem p;
  Config c;
};

// What the GPU test verifies on a device with limits `d`: the default at every shape and
// layout; at a handful of shapes, each pipeline, each vector width, the smallest and largest
// tiles, each block size and lane arrangement, one block per SM and two.
std::vector<GpuJob> gpu_jobs(const gt_device& d) {
  using Shape = std::array<int64_t, 3>;
  // 514x770x258 has 8-byte alignment (vec=2); the odd ones have 4 (vec=1).
  const std::vector<Shape> all_shapes = {{1024, 1024, 1024}, {512, 768, 256}, {514, 770, 258}, {1, 1, 1},
                                         {7, 13, 17},        {1000, 3000, 7},  {4097, 4095, 33}, {33, 65, 4099}};
  const std::vector<Shape> some_shapes = {{512, 768, 256}, {514, 770, 258}, {7, 13, 17}, {4097, 4095, 33}, {33, 65, 4099}};
  const std::vector<std::string> variants = {
      "pipe=single",
      "pipe=regdb",
      "pipe=cp2",
      "pipe=cp4,bk=16",
      "pipe=regdb,vec=2",
      "pipe=regdb,vec=1",
      "pipe=cp3,vec=2",
      lab_config(1),
      lab_config(8),
      "bm=256,bn=128,tm=16,tn=8,warp=8x4,occ=1",
      "bm=128,bn=256,bk=16,tm=8,tn=16,pipe=cp4,occ=1",
      "bm=64,bn=64,tm=8,tn=8,occ=1",
      "bm=64,bn=128,tm=8,tn=8,warp=8x4,pipe=cp2,occ=1",
      "bm=128,bn=64,tm=8,tn=4,warp=8x4,pipe=regdb,vec=2",
      "bm=64,bn=64,bk=16,tm=4,tn=4,warp=4x8,occ=1",
      "warp=8x4,occ=1",
  };
  const Family& fam = family();
  std::vector<GpuJob> jobs;
  for (auto lay : kLayouts) {
    for (auto sh : all_shapes) {
      Problem p = Problem::make(sh[0], sh[1], sh[2], DType::f32, DType::f32, lay);
      jobs.push_back({p, fam.space(p, d).default_config()});
    }
    for (auto sh : some_shapes) {
      Problem p = Problem::make(sh[0], sh[1], sh[2], DType::f32, DType::f32, lay);
      Space s = fam.space(p, d);
      for (auto& v : variants) jobs.push_back({p, fit(s, v)});
    }
  }
  return jobs;
}

}  // namespace

TEST_CASE("register_tile: the configs of the GPU test are valid for its problems", "[register_tile]") {
  const gt_device h = arch_limits("sm_90");
  auto jobs = gpu_jobs(h);
  CHECK(jobs.size() == 4 * (8 + 5 * 16));
  for (auto& j : jobs) {
    Space s = family().space(j.p, h);
    INFO(j.p.key() << " " << s.name(j.c));
    CHECK_FALSE(s.check(j.c));
  }
}

TEST_CASE("register_tile is correct in every layout at aligned and odd shapes", "[gpu][register_tile]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  const std::vector<GpuJob> jobs = gpu_jobs(d);
  test::check_correct_jobs(fam, jobs);
}
