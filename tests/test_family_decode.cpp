// The decode family (M ≤ 16: B streamed through a ring of TMA or cp.async copies, split-K by an
// even share of B per CTA, split tiles added by the last CTA): what the conformance suite does
// not reach. Its GPU shapes give decode only 1x1504x1000 in nn and nt (the others are unaligned
// or have M > 16), so on a GPU: every M from 1 to 16 that matters to the fragments (1, 8, 9, 16),
// A stored transposed (tn, tt), tails in N and K, both engines, 1 and 2 CTAs per SM, tiles split
// over many CTAs; and the split tiles' counters, which verification cannot see after one launch.
#include "bench.hpp"
#include "compiler.hpp"
#include "device.hpp"
#include "evaluate.hpp"
#include "plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("decode"); }

Config cfg(const Space& s, const std::string& text) {
  return text.empty() ? s.default_config() : test::parse_config(s, text);
}

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
