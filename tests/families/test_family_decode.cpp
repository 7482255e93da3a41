// The decode family (M ≤ 16: B streamed through a ring of TMA or cp.async copies, split-K by an
// even share of B per CTA, split tiles added by the last CTA): what the conformance suite does
// not reach. Its GPU shapes give decode only 1x1504x1000 in nn and nt (the others are unaligned
// or have M > 16), so on a GPU: every M from 1 to 16 that matters to the fragments (1, 8, 9, 16),
// A stored transposed (tn, tt), tails in N and K, both engines, 1 and 2 CTAs per SM, tiles split
// over many CTAs; and the split tiles' counters, which verification cannot see after one launch.
// FP8 (e4m3 / e5m2 weights and activations, layout nt, tensor and row scales), which the
// conformance suite's 16-bit problems leave out: refusals, the launch, the SASS of what NVRTC
// builds, and on a GPU the scaled float64 check.
#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("decode"); }

Config cfg(const Space& s, const std::string& text) {
  return text.empty() ? s.default_config() : test::parse_config(s, text);
}

const gt_device kHopper = arch_limits("sm_90");

}  // namespace

TEST_CASE("decode is correct at every M that changes its fragments, every layout, both engines and tails",
          "[gpu][decode]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  const gt_device d = device_info(0).limits;
  // N and K off the tiles (1000 = 7.8 tiles of 128; 4104 = 64.1 blocks of 64), a vocabulary's N
  // with a short K, and fewer blocks than CTAs (4x256x4096: 64 blocks of 128x128, one per CTA,
  // each tile added up from 32 CTAs' partial sums).
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> shapes = {{1, 1000, 4104}, {8, 1000, 4104}, {9, 1504, 1000}, {16, 32000, 136},
                                     {4, 256, 4096}, {16, 4096, 4096}};
  const std::vector<std::string> variants = {
      "",  // the default
      "engine=cpasync,bn=128,bk=128,stages=4",
      "engine=tma,bn=256,bk=64,stages=6,warps=4",
      "engine=tma,bn=64,bk=256,stages=3,ctas=2,warps=2",
      "engine=cpasync,bn=64,bk=64,stages=8,ctas=2,warps=4",
  };
  std::vector<std::pair<Problem, Config>> jobs;
  size_t turn = 0;
  for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt})
    for (auto& sh : shapes)
      for (auto& v : variants) {
        const DType in = turn % 2 ? DType::f16 : DType::bf16;
        const DType out = turn % 3 == 0 ? DType::f32 : turn % 3 == 1 ? in : DType::f16;
        ++turn;
        Problem p = Problem::make(sh[0], sh[1], sh[2], in, out, lay);
        Space s = fam.space(p, d);
        Config c = cfg(s, v);
        if (!fam.refusal(p, c, d)) jobs.emplace_back(p, c);
      }
  INFO(jobs.size() << " checks");
  CHECK(jobs.size() >= 60);  // tn and tt are aligned only where M is a multiple of 8
  test::check_correct(fam, jobs);
}

TEST_CASE("decode: the split tiles' counters reset themselves, launch after launch", "[gpu][decode]") {
  GT_REQUIRE_GPU();
  // The workspace is zeroed once, when the kernel is loaded, and verification reads the first
  // launch: every launch must leave its counters at zero for the next, or the timed launches
  // after it never write the split tiles. Each verification launches four times back to back,
  // as the timing does, and reads the last.
  const DeviceInfo dev = device_info(0);
  Compiler compiler(nullptr);
  for (auto [shape, layout] : {std::pair{std::array<int64_t, 3>{16, 1000, 4104}, Layout::nt},
                               std::pair{std::array<int64_t, 3>{3, 4096, 4096}, Layout::nn}}) {
    Problem p = Problem::make(shape[0], shape[1], shape[2], DType::bf16, DType::bf16, layout);
    ProblemBench bench(p, dev, Distribution::normal, 7);
    for (const char* c : {"", "engine=cpasync,bn=64,bk=64,stages=8,ctas=2,warps=4"}) {
      INFO(p.key() << " " << (*c ? c : "default"));
      Built b = build_runnable(family(), p, cfg(family().space(p, dev.limits), c), Transform::none, dev.limits,
                               dev.arch(), compiler);
      INFO(b.message);
      REQUIRE(b.run);
      const LaunchFn once = b.run->launch_fn();
      const LaunchFn four = [&once](const Operands& ops, cudaStream_t s) {
        for (int i = 0; i < 4; ++i)
          if (cudaError_t e = once(ops, s); e != cudaSuccess) return e;
        return cudaSuccess;
      };
      for (int round = 0; round < 3; ++round) {
        VerifyResult v = bench.verify(four);
        INFO("round " << round << ": " << v.message);
        CHECK(v.ok);
      }
    }
  }
}

TEST_CASE("decode FP8: what it serves and what it refuses, with codes", "[decode][fp8]") {
  const Family& fam = family();
  auto code = [&](const Problem& p, const std::string& c, const gt_device& d = kHopper) {
    auto r = fam.refusal(p, cfg(fam.space(p, d), c), d);
    return r ? r->code : GT_REFUSAL_NONE;
  };
  for (auto mode : {ScaleMode::tensor, ScaleMode::row}) {
    INFO(to_string(mode));
    CHECK(code(test::fp8_problem(16, 4096, 4096, mode), "") == GT_REFUSAL_NONE);
    CHECK(code(test::fp8_problem(1, 4096, 4096, mode, DType::f32, DType::e4m3, DType::e5m2), "") == GT_REFUSAL_NONE);
    CHECK(code(test::fp8_problem(3, 11008, 4096, mode, DType::f16, DType::e5m2, DType::e4m3), "engine=cpasync") == GT_REFUSAL_NONE);
    // m16n8k32 on 8-bit types: sm_89 and newer (cp.async there, TMA only from sm_90).
    CHECK(code(test::fp8_problem(16, 4096, 4096, mode), "engine=cpasync", arch_limits("sm_80")) == GT_REFUSAL_ARCH);
    CHECK(code(test::fp8_problem(16, 4096, 4096, mode), "engine=cpasync,bn=64,bk=128,stages=4", arch_limits("sm_89")) ==
          GT_REFUSAL_NONE);
    // A stage is whole 128-byte rows: 128 FP8 k at least.
    CHECK(code(test::fp8_problem(16, 4096, 4096, mode), "bk=64") == GT_REFUSAL_CONFIG);
    CHECK(code(test::fp8_problem(17, 4096, 4096, mode), "") == GT_REFUSAL_SHAPE);
  }
  CHECK(code(test::fp8_problem(16, 4096, 4096, ScaleMode::block), "") == GT_REFUSAL_DTYPE);
  Problem nn = test::fp8_problem(16, 4096, 4096, ScaleMode::tensor);  // what Problem::make refuses, asked anyway
  nn.layout = Layout::nn;
  nn.ldb = nn.n;
  auto r = fam.refusal(nn, fam.space(nn, kHopper).default_config(), kHopper);
  REQUIRE(r);
  CHECK(r->code == GT_REFUSAL_LAYOUT);
  CHECK_THAT(r->why, Catch::Contains("nt"));
}

TEST_CASE("decode FP8: the launch takes the scales and copies B in 128-byte rows of bytes", "[decode][fp8]") {
  const Family& fam = family();
  for (auto mode : {ScaleMode::tensor, ScaleMode::row}) {
    Problem p = test::fp8_problem(16, 4096, 4096, mode, DType::f32, DType::e4m3, DType::e5m2);
    auto ks = fam.build(p, fam.space(p, kHopper).default_config(), kHopper, nullptr);
    REQUIRE(ks);
    CHECK(ks->takes_scales);
    CHECK(test::define_of(*ks, "FP8") == "1");
    CHECK(test::define_of(*ks, "A_E5M2") == "0");
    CHECK(test::define_of(*ks, "B_E5M2") == "1");
    CHECK(test::define_of(*ks, "SCALE_MODE") == std::to_string(int(mode)));
    REQUIRE(ks->tensor_maps.size() == 1);
    CHECK(ks->tensor_maps[0].box[0] == 128);  // 128 one-byte k: the swizzle's 128-byte span
  }
  Problem bf = Problem::make(16, 4096, 4096, DType::bf16, DType::bf16, Layout::nt);
  auto ks = fam.build(bf, fam.space(bf, kHopper).default_config(), kHopper, nullptr);
  REQUIRE(ks);
  CHECK_FALSE(ks->takes_scales);
  CHECK(test::define_of(*ks, "FP8") == "0");
  CHECK(ks->tensor_maps.at(0).box[0] == 64);
}

TEST_CASE("decode FP8: the default and suggestions compile for sm_90a with bulk copies, mma and no spills",
          "[compile][decode][fp8][sass]") {
  const std::string tool = test::require_cuobjdump();
  const Family& fam = family();
  test::CompileSample sample(fam);
  std::vector<bool> tma;  // per queued build
  for (auto p : {test::fp8_problem(1, 4096, 4096, ScaleMode::tensor), test::fp8_problem(16, 11008, 4096, ScaleMode::row, DType::f32,
                                                            DType::e4m3, DType::e5m2)}) {
    Space s = fam.space(p, kHopper);
    std::vector<Config> cs = {s.default_config()};
    for (auto& c : fam.suggest(p, kHopper, 4, s.dims())) cs.push_back(c);
    for (auto& c : cs) {
      auto ks = fam.build(p, c, kHopper, nullptr);
      REQUIRE(ks);
      REQUIRE(sample.add(p, c, "sm_90a").empty());
      tma.push_back(test::define_of(*ks, "ENGINE_TMA") == "1");
    }
  }
  CHECK(std::count(tma.begin(), tma.end(), true) >= 4);
  size_t n = 0;
  for (auto& j : sample.results()) {
    const bool by_tma = tma.at(n++);
    INFO(j.what << "\n" << j.result.log);
    test::CompileSample::check_no_local_memory(j);
    const std::string sass = test::sass_of(j.result.cubin, tool);
    // sm_90 runs the 8-bit mma.sync as 16-bit HMMA after a conversion (sm_89's is QMMA).
    CHECK_THAT(sass, Catch::Contains("HMMA.16816.F32") || Catch::Contains("QMMA"));
    CHECK_THAT(sass, Catch::Contains(by_tma ? "UTMALDG.2D" : "LDGSTS"));
    CHECK_THAT(sass, !Catch::Contains("LDL") && !Catch::Contains("STL"));
  }
}

TEST_CASE("decode FP8 is correct with tensor and row scales, at every M that changes its fragments and at tails",
          "[gpu][decode][fp8]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  const gt_device d = device_info(0).limits;
  // K a multiple of 16 (FP8 rows 16 bytes apart) and not of 128 (TMA's zero fill in the last
  // block); N off the tiles; M 1, 8 (one 8-row tile), 9 and 16 (two); a vocabulary's N with a
  // short K; fewer blocks than CTAs.
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> shapes = {{1, 1000, 4112}, {8, 1000, 4112}, {9, 1504, 1008},
                                     {16, 32000, 144}, {4, 256, 4096},  {16, 4096, 4096}};
  const std::vector<std::string> variants = {
      "",  // the default
      "engine=cpasync,bn=128,bk=128,stages=4",
      "engine=tma,bn=256,bk=128,stages=3,warps=4",
      "engine=tma,bn=64,bk=256,stages=3,ctas=2,warps=2",
  };
  auto jobs = test::fp8_jobs(fam, d, {ScaleMode::tensor, ScaleMode::row}, shapes, [&](ScaleMode) { return variants; });
  INFO(jobs.size() << " checks");
  CHECK(jobs.size() >= 40);  // of 48: a device with less shared memory refuses the deepest rings
  test::check_correct(fam, jobs);
}
