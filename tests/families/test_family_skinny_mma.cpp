// The skinny_mma family (few rows of C on the tensor cores, B streamed once into mma
// fragments): its space and refusals (CPU); a sample of its candidates compiled with NVRTC
// (CPU); and on a GPU, both 16-bit dtypes, every output type, both A layouts, M from 1 to 64,
// ragged N and ragged K verified against float64.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("skinny_mma"); }

}  // namespace

TEST_CASE("skinny_mma: the space, the launch plan and the refusals", "[skinny_mma]") {
  const Family& fam = family();
  CHECK_FALSE(fam.is_library());
  const gt_device h = arch_limits("sm_90");
  Problem decode = Problem::make(16, 12288, 4096, DType::bf16, DType::bf16, Layout::nn);
  Space s = fam.space(decode, h);
  CHECK(s.dims() == 4);
  CHECK(s.raw_size() == 3 * 2 * 5 * 4);
  CHECK(s.valid(s.default_config()));
  for (auto& prm : s.params()) CHECK_FALSE(prm.help.empty());
  // The default: one m16 tile, 32 columns, 16 warps along K; partial tiles 16 x 16 x 32 floats.
  Refused why;
  auto spec = fam.build(decode, s.default_config(), h, &why);
  REQUIRE(spec);
  CHECK(spec->block[0] == 16 * 32);
  CHECK(spec->grid[0] == 12288 / 32);
  CHECK(spec->grid[1] == 1);
  CHECK(spec->dynamic_smem == 16 * 16 * 32 * 4);
  CHECK_THAT(fam.describe(decode, s.default_config()),
             Catch::Contains("16 rows x 32 columns") && Catch::Contains("16 warps along K"));
  // M = 64 in one pass: 4 m16 tiles; 64 columns: grid.x halves.
  Problem m64 = Problem::make(64, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  auto spec64 = fam.build(m64, test::parse_config(s, "mt=4,nw=2,wk=8,unroll=1"), h, &why);
  REQUIRE(spec64);
  CHECK(spec64->grid[0] == 4096 / 64);
  CHECK(spec64->grid[1] == 1);
  CHECK(spec64->dynamic_smem == 8 * 64 * 64 * 4);

  // Layouts: A either way; B must be K x N row-major.
  CHECK_FALSE(fam.can_implement(Problem::make(16, 4096, 4096, DType::f16, DType::f16, Layout::tn), s.default_config(), h));
  CHECK(test::says(fam.can_implement(Problem::make(1, 4096, 4096, DType::f16, DType::f16, Layout::nt), s.default_config(), h),
                   "B stored transposed"));
  // M: at most 4 passes, no mt with half its tiles empty.
  CHECK(test::says(fam.can_implement(Problem::make(65, 4096, 4096, DType::f16, DType::f16, Layout::nn),
                                     s.default_config(), h),
                   "5 passes"));
  CHECK(test::says(fam.can_implement(decode, test::parse_config(s, "mt=2"), h), "empty"));
  CHECK(test::says(fam.can_implement(Problem::make(32, 4096, 4096, DType::f16, DType::f16, Layout::nn),
                                     test::parse_config(s, "mt=4"), h),
                   "empty"));
  CHECK(fam.space(Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn), h).count_valid() == 0);
  // Types: only 16-bit inputs (tensor cores, m16n8k16); f32 output is fine.
  for (DType in : {DType::f32, DType::tf32}) {
    auto r = fam.refusal(Problem::make(1, 4096, 4096, in, DType::f32, Layout::nn), s.default_config(), h);
    REQUIRE(r);
    CHECK(refusal_status(r->code) == Status::cannot_implement);
  }
  CHECK_FALSE(fam.can_implement(Problem::make(16, 4096, 4096, DType::f16, DType::f32, Layout::nn), s.default_config(), h));
  // Alignment: 16-byte loads of B only.
  CHECK(test::says(fam.can_implement(Problem::make(1, 4097, 4096, DType::f16, DType::f16, Layout::nn), s.default_config(), h),
                   "aligned to only 2"));
  // sm_75 has no movmatrix / bf16 mma.
  CHECK(test::says(fam.can_implement(decode, s.default_config(), arch_limits("sm_75")), "sm_80 or newer"));
  // Device limits are "resources": 4 m16 tiles x 64 columns with 8 steps in flight need too many
  // registers, and 16 warps of 64 x 64 partial tiles too much shared memory.
  auto regs = fam.refusal(m64, test::parse_config(s, "mt=4,nw=2,wk=8,unroll=8"), h);
  CHECK(test::says(regs, "registers"));
  REQUIRE(regs);
  CHECK(refusal_status(regs->code) == Status::resources);
  auto smem = fam.refusal(m64, test::parse_config(s, "mt=4,nw=2,wk=16,unroll=1"), h);
  CHECK(test::says(smem, "shared memory"));
  REQUIRE(smem);
  CHECK(refusal_status(smem->code) == Status::resources);
}

TEST_CASE("skinny_mma is correct at both dtypes, every output, A layouts, M up to 64, ragged N and K",
          "[gpu][skinny_mma]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  using Shape = std::array<int64_t, 3>;
  // 16-byte aligned shapes (the family's requirement): N and K multiples of 8; ragged against
  // the block's 32/64 columns and the k16 steps.
  const std::vector<Shape> shapes = {{1, 4096, 4096}, {16, 12288, 4096}, {3, 1000, 72},  {17, 4104, 4104},
                                     {64, 768, 4096}, {40, 8, 11008},    {33, 136, 24}};
  struct Job {
    Problem p;
    Config c;
  };
  std::vector<Job> jobs;
  for (auto lay : {Layout::nn, Layout::tn})
    for (auto dt : {DType::f16, DType::bf16})
      for (auto sh : shapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
        if (p.align < 16) continue;  // tn with M not a multiple of 8: A's rows are not 16-byte aligned
        Space s = fam.space(p, d);
        auto cs = test::every_kth_valid(s, std::max<uint64_t>(1, s.count_valid() / 4), sh[0] % 3);
        REQUIRE_FALSE(cs.empty());
        for (auto& c : cs) jobs.push_back({p, c});
      }
  for (DType out : {DType::f32, DType::f16}) {
    Problem mixed = Problem::make(48, 4096, 4096, DType::bf16, out, Layout::nn);
    jobs.push_back({mixed, test::parse_config(fam.space(mixed, d), "mt=4,nw=1,wk=4,unroll=2")});
  }
  test::check_correct_jobs(fam, jobs);
}
