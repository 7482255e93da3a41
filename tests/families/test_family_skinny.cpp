// The skinny family (few rows of C, B streamed once): its space and refusals (CPU); a sample of
// its candidates compiled with NVRTC (CPU); and on a GPU, every dtype, both A layouts, M from 1
// to 64 and ragged N verified against float64 for a spread of configs.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("skinny"); }

}  // namespace

TEST_CASE("skinny: the space, the launch plan and the refusals", "[skinny]") {
  const Family& fam = family();
  CHECK_FALSE(fam.is_library());
  const gt_device h = arch_limits("sm_90");
  Problem decode = Problem::make(1, 12288, 4096, DType::bf16, DType::bf16, Layout::nn);
  Space s = fam.space(decode, h);
  CHECK(s.dims() == 5);
  CHECK(s.raw_size() == 2800);
  CHECK(s.valid(s.default_config()));
  for (auto& prm : s.params()) CHECK_FALSE(prm.help.empty());
  // The default: 1 row, 8 threads along N x 64 along K, 16-byte loads (8 bf16 each).
  Refused why;
  auto spec = fam.build(decode, s.default_config(), h, &why);
  REQUIRE(spec);
  CHECK(spec->block[0] == 512);
  CHECK(spec->grid[0] == 12288 / 64);
  CHECK(spec->grid[1] == 1);
  CHECK(spec->dynamic_smem == 64 * 1 * 64 * 4);
  CHECK_THAT(fam.describe(decode, s.default_config()),
             Catch::Contains("1 rows x 64 columns") && Catch::Contains("512 threads") && Catch::Contains("16-byte"));

  // Layouts: A either way; B must be K x N row-major.
  CHECK_FALSE(fam.can_implement(Problem::make(16, 4096, 4096, DType::f16, DType::f16, Layout::tn),
                                test::parse_config(s, "mr=4,ky=32"), h));
  CHECK(test::says(fam.can_implement(Problem::make(1, 4096, 4096, DType::f16, DType::f16, Layout::nt), s.default_config(), h),
             "B stored transposed"));
  // M: at most 4 passes of mr rows, and no mr with half its rows empty.
  Problem m64 = Problem::make(64, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  CHECK(test::says(fam.can_implement(m64, test::parse_config(s, "mr=8"), h), "8 passes"));
  CHECK_FALSE(fam.can_implement(m64, test::parse_config(s, "mr=16,ky=8"), h));
  CHECK(test::says(fam.can_implement(decode, test::parse_config(s, "mr=2"), h), "empty"));
  CHECK(fam.space(Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn), h).count_valid() == 0);
  // Types: tf32 is refused (cannot_implement), f32 loads 4 elements per 16 bytes.
  auto tf = fam.refusal(Problem::make(1, 4096, 4096, DType::tf32, DType::f32, Layout::nn), s.default_config(), h);
  REQUIRE(tf);
  CHECK(refusal_status(tf->code) == Status::cannot_implement);
  Problem f32 = Problem::make(3, 1000, 77, DType::f32, DType::f32, Layout::nn);
  CHECK(test::says(fam.can_implement(f32, test::parse_config(s, "mr=4,vec=2"), h), "under one element"));
  // Alignment: a 2-byte aligned f16 problem takes 2-byte loads only.
  Problem odd = Problem::make(1, 4097, 4096, DType::f16, DType::f16, Layout::nn);
  CHECK(test::says(fam.can_implement(odd, s.default_config(), h), "aligned to only 2"));
  CHECK_FALSE(fam.can_implement(odd, test::parse_config(s, "vec=2"), h));
  // Device limits are "resources": 64 x 32 threads, and shared memory past 48 KiB.
  auto big = fam.refusal(decode, test::parse_config(s, "tx=32,ky=64"), h);
  REQUIRE(big);
  CHECK(refusal_status(big->code) == Status::resources);
  Problem m16 = Problem::make(16, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  auto smem = fam.refusal(m16, test::parse_config(s, "mr=16,tx=32,ky=16,vec=16"), h);
  CHECK(test::says(smem, "shared memory"));
  REQUIRE(smem);
  CHECK(refusal_status(smem->code) == Status::resources);
}

TEST_CASE("skinny is correct at every dtype, A layout, M up to 64 and ragged N", "[gpu][skinny]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> shapes = {{1, 4096, 4096}, {1, 1, 1},     {3, 1000, 77},   {16, 4097, 4099},
                                     {64, 768, 4096}, {5, 12288, 33}, {2, 65, 11008}};
  struct Job {
    Problem p;
    Config c;
  };
  std::vector<Job> jobs;
  for (auto lay : {Layout::nn, Layout::tn})
    for (auto dt : {DType::f32, DType::f16, DType::bf16})
      for (auto sh : shapes) {
        Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
        Space s = fam.space(p, d);
        auto cs = test::every_kth_valid(s, std::max<uint64_t>(1, s.count_valid() / 4), sh[0] % 3);
        REQUIRE_FALSE(cs.empty());
        for (auto& c : cs) jobs.push_back({p, c});
      }
  Problem mixed = Problem::make(16, 4096, 4096, DType::f16, DType::f32, Layout::nn);
  jobs.push_back({mixed, test::parse_config(fam.space(mixed, d), "mr=4,ky=32")});
  test::check_correct_jobs(fam, jobs);
}
