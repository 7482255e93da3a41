// The wmma family: its space, defaults and refusals (CPU); a deterministic sample of its
// candidates compiled with NVRTC for sm_90 and sm_80 (CPU); and on a GPU, every input dtype ×
// output dtype × layout verified against float64 at aligned and odd shapes for the default,
// and a spread of configs (each loader, fragment shape, pipeline depth, padding and swizzle,
// both epilogues) in every layout.
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <map>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("wmma"); }

constexpr std::array<Layout, 4> kLayouts = {Layout::nn, Layout::nt, Layout::tn, Layout::tt};
constexpr std::array<DType, 3> kInputs = {DType::f16, DType::bf16, DType::tf32};
constexpr std::array<DType, 3> kOutputs = {DType::f16, DType::bf16, DType::f32};


const std::string kExpectedDefault =
    "wmma_loadermma_bm128_bn256_bk32_wm64_wn64_frag16x16_stages4_smemswizzle_epiloguestaged";

// A spread of configs for the GPU and compile tests: each loader, each WMMA fragment shape,
// each pipeline depth, padding and swizzle, both epilogues, 1 to 8 warps. Where one does not
// apply to a problem (a fragment shape that WMMA cannot align in that layout, a tf32 limit)
// it is refused and skipped; each still runs in several layouts.
const std::vector<std::string> kVariants = {
    "loader=wmma,bm=128,bn=128,bk=32,wm=64,wn=32,frag=16x16,stages=3,smem=pad",
    "loader=wmma,bm=64,bn=128,bk=32,wm=32,wn=64,frag=32x8,stages=2,smem=pad",
    "loader=wmma,bm=128,bn=64,bk=64,wm=32,wn=32,frag=8x32,stages=4,smem=pad",
    "loader=mma,bm=64,bn=64,bk=64,wm=32,wn=32,stages=2,smem=pad,epilogue=direct",
    "loader=mma,bm=256,bn=128,bk=32,wm=64,wn=64,stages=3,smem=swizzle,epilogue=direct",
    "loader=mma,bm=32,bn=64,bk=32,wm=32,wn=32,stages=4,smem=swizzle,epilogue=staged",
    "loader=mma,bm=128,bn=128,bk=64,wm=64,wn=32,stages=3,smem=pad,epilogue=staged",
    "loader=mma,bm=64,bn=32,bk=16,wm=32,wn=32,stages=4,smem=swizzle,epilogue=direct",  // tf32 only (k8 steps)
};

}  // namespace

TEST_CASE("wmma: the space, its defaults and its kernels", "[wmma]") {
  const Family& fam = family();
  CHECK_FALSE(fam.is_library());
  CHECK(fam.source_hash() != 0);
  const gt_device h = arch_limits("sm_90");
  Problem big = Problem::make(8192, 8192, 8192, DType::f16, DType::f16, Layout::nn);
  Space s = fam.space(big, h);
  CHECK(s.dims() == 10);
  for (auto& p : s.params()) {
    INFO(p.name);
    CHECK_FALSE(p.help.empty());
  }
  CHECK(s.name(s.default_config()) == kExpectedDefault);

  // Small enough to search exhaustively, large enough to be worth searching.
  for (int64_t n : {4096, 8192})
    for (auto dt : {DType::f16, DType::bf16}) {
      Problem p = Problem::make(n, n, n, dt, dt, Layout::nn);
      const uint64_t valid = fam.space(p, h).count_valid();
      INFO(p.key() << ": " << valid << " valid configs");
      CHECK(valid >= 300);
      CHECK(valid <= 3000);
    }

  // The default is valid for every dtype, layout, shape and architecture the family can run:
  // it steps down in tile, stages and loader until it fits and fills the GPU.
  for (auto arch : {"sm_75", "sm_80", "sm_86", "sm_90"}) {
    const gt_device d = arch_limits(arch);
    for (auto dt : kInputs)
      for (auto sh : std::vector<std::array<int64_t, 3>>{
               {8192, 8192, 8192}, {4097, 4095, 33}, {1024, 1024, 1024}, {1, 1, 1}, {64, 4096, 4096}})
        for (auto lay : kLayouts) {
          Problem p = Problem::make(sh[0], sh[1], sh[2], dt, Problem::default_out(dt), lay);
          Space sp = fam.space(p, d);
          INFO(arch << " " << p.key() << " " << sp.name(sp.default_config()));
          if (d.cc_major < 8 && dt != DType::f16)
            CHECK(test::says(sp.check(sp.default_config()), "compute capability 8.0"));
          else
            CHECK_FALSE(sp.check(sp.default_config()));
        }
  }

  // The default kernel at 8192³: 8 warps, one block per 128×256 tile, 4 stages of 24 KiB in
  // dynamic shared memory (over the 48 KiB that needs no opt-in), 16-byte copies, and the
  // swizzle defines of a 64-byte-row A tile and a 512-byte-row B tile.
  Refused why;
  auto spec = fam.build(big, s.default_config(), h, &why);
  REQUIRE(spec);
  CHECK(spec->kernel_name == "gemm_wmma");
  CHECK(spec->block[0] == 256);
  CHECK(spec->grid[0] == 64u * 32u);
  CHECK(spec->dynamic_smem == 4u * 24576u);
  CHECK(spec->dynamic_smem > 48u * 1024u);
  CHECK(spec->dynamic_smem <= uint32_t(h.smem_per_block_optin));
  CHECK(test::define_of(*spec, "VEC") == "8");
  CHECK(test::define_of(*spec, "A_W") == "4");
  CHECK(test::define_of(*spec, "A_DIV") == "2");
  CHECK(test::define_of(*spec, "B_W") == "8");
  CHECK(test::define_of(*spec, "A_LD") == "32");
  CHECK_THAT(fam.describe(big, s.default_config()),
             Catch::Contains("ldmatrix+mma.sync") && Catch::Contains("8 warps") && Catch::Contains("swizzled"));

  // The vector width follows the alignment: 16 bytes, 8 bytes (4100 halves), 4 bytes (fp32
  // rows of odd length) and single elements (odd f16 rows).
  auto vec_of = [&](int64_t m, int64_t n, int64_t k, DType dt) {
    Problem p = Problem::make(m, n, k, dt, Problem::default_out(dt), Layout::nn);
    Space sp = fam.space(p, h);
    auto ks = fam.build(p, sp.default_config(), h, &why);
    REQUIRE(ks);
    return test::define_of(*ks, "VEC");
  };
  CHECK(vec_of(1024, 1024, 1024, DType::f16) == "8");
  CHECK(vec_of(1024, 1024, 4100, DType::f16) == "4");
  CHECK(vec_of(1024, 1024, 1024, DType::tf32) == "4");
  CHECK(vec_of(1024, 1024, 1023, DType::tf32) == "1");
  CHECK(vec_of(4097, 4095, 33, DType::bf16) == "1");

  // Padding: 16 bytes on rows read by ldmatrix (B stored N×K); 32 on tf32 tiles read word by
  // word (A stored K×M).
  Problem tf = Problem::make(1024, 1024, 1024, DType::tf32, DType::f32, Layout::tt);
  Space ts = fam.space(tf, h);
  auto padded = fam.build(tf, test::parse_config(ts, "bm=64,bn=64,bk=32,wm=32,wn=32,smem=pad"), h, &why);
  REQUIRE(padded);
  CHECK(test::define_of(*padded, "A_ROWS") == "32");  // A transposed: BK rows of BM
  CHECK(test::define_of(*padded, "A_LD") == "72");
  CHECK(test::define_of(*padded, "B_LD") == "36");

  // Suggestions are valid configs of the space, the default first.
  auto sug = fam.suggest(big, h, 8, s.dims());
  REQUIRE(sug.size() >= 4);
  CHECK(sug.front() == s.default_config());
  for (auto& c : sug) CHECK(s.valid(c));
}

TEST_CASE("wmma refuses what it cannot do, and says why", "[wmma]") {
  const Family& fam = family();
  const gt_device h = arch_limits("sm_90");
  Problem big = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  Space s = fam.space(big, h);
  const Config def = s.default_config();

  // Types: f32 runs on tensor cores only as tf32; no tf32 output.
  CHECK(test::says(fam.can_implement(Problem::make(256, 256, 256, DType::f32, DType::f32, Layout::nn), def, h), "tf32"));
  Problem tf32_out = big;
  tf32_out.out = DType::tf32;
  CHECK(test::says(fam.can_implement(tf32_out, def, h), "output dtype"));
  // Every output type is fine for every input type.
  for (auto in : kInputs)
    for (auto out : kOutputs) {
      Problem p = Problem::make(512, 512, 512, in, out, Layout::tt);
      INFO(p.key());
      CHECK_FALSE(fam.can_implement(p, test::parse_config(s, "bm=64,bn=64,wm=32,wn=32"), h));
    }

  // Fragment shapes: tf32 WMMA has 16x16x8 only; the mma loader has a fixed one.
  Problem tf = Problem::make(1024, 1024, 1024, DType::tf32, DType::f32, Layout::nt);
  const std::string wmma32x8 = "loader=wmma,bm=64,bn=128,bk=32,wm=32,wn=64,frag=32x8,stages=2,smem=pad";
  CHECK(test::says(fam.can_implement(tf, test::parse_config(s, wmma32x8), h), "16x16x8"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "frag=8x32"), h), "wmma loader"));
  // WMMA needs 32-byte aligned fragment pointers: an 8-wide side along the contiguous
  // dimension of a shared tile is refused; the other layouts take the same fragment.
  const std::string wmma8x32 = "loader=wmma,bm=128,bn=64,bk=64,wm=32,wn=32,frag=8x32,stages=4,smem=pad";
  for (auto lay : kLayouts) {
    Problem p = Problem::make(1024, 1024, 1024, DType::f16, DType::f16, lay);
    INFO(to_string(lay));
    const bool at = p.a_trans(), bt = p.b_trans();
    CHECK(test::says(fam.can_implement(p, test::parse_config(s, wmma8x32), h), "32-byte") == at);
    CHECK(test::says(fam.can_implement(p, test::parse_config(s, wmma32x8), h), "32-byte") == !bt);
  }
  // The WMMA API cannot address a swizzle and hides the accumulator layout.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "loader=wmma,smem=swizzle,bm=64,bn=64,wm=32,wn=32"), h), "swizzle"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "loader=wmma,smem=pad,epilogue=direct,bm=64,bn=64,wm=32,wn=32"), h),
                 "staged"));
  // The mma loader double-buffers fragments over an even number of k-steps.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bk=16"), h), "even number of k-steps"));
  CHECK_FALSE(fam.can_implement(tf, test::parse_config(s, "bk=16,bm=64,bn=64,wm=32,wn=32"), h));

  // Architectures: bf16 and tf32 need sm_80; ldmatrix needs sm_75; tensor cores sm_70.
  const gt_device t4 = arch_limits("sm_75");
  const std::string small = "bm=64,bn=64,wm=32,wn=32,stages=2";
  Problem bf = Problem::make(1024, 1024, 1024, DType::bf16, DType::bf16, Layout::nn);
  CHECK(test::says(fam.can_implement(bf, test::parse_config(s, small), t4), "compute capability 8.0"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, small), t4));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, small), arch_limits("sm_70")), "ldmatrix"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, small + ",loader=wmma,smem=pad"), arch_limits("sm_70")));

  // Shared memory, against the limits of smaller GPUs: the default's 96 KiB fits sm_86's
  // 99 KiB but not sm_75's 64 KiB; bk=64 doubles it past sm_86 too. tf32 doubles it again.
  const gt_device a10 = arch_limits("sm_86");
  CHECK_FALSE(fam.can_implement(big, def, a10));
  CHECK(test::says(fam.can_implement(big, def, t4), "shared memory"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bk=64"), a10), "shared memory"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, "bk=64"), h));
  Problem tf_nn = Problem::make(4096, 4096, 4096, DType::tf32, DType::f32, Layout::nn);
  CHECK(test::says(fam.can_implement(tf_nn, def, a10), "shared memory"));

  // Threads: 8-warp blocks on a device that allows 128 threads.
  gt_device few_threads = h;
  few_threads.max_threads_per_block = 128;
  auto why = fam.can_implement(big, def, few_threads);
  CHECK(test::says(why, "threads"));
  CHECK(test::says(why, "exceeds the device"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bm=256,bn=256,wm=32,wn=64"), h), "warps per block"));

  // Registers: a 128×64 warp tile needs 256 accumulators; a 64×64 warp tile alone in a block
  // with a 64-deep stage adds 32 copies per thread; a device with half the register file
  // cannot hold 8 warps of ~250 registers.
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bm=128,bn=128,wm=128,wn=64"), h), "registers"));
  CHECK(test::says(fam.can_implement(big, test::parse_config(s, "bm=64,bn=64,bk=64,wm=64,wn=64,stages=2"), h), "registers"));
  CHECK_FALSE(fam.can_implement(big, test::parse_config(s, "bm=64,bn=64,bk=32,wm=32,wn=32,stages=2"), h));
  gt_device half_regs = h;
  half_regs.regs_per_block = 32768;
  CHECK(test::says(fam.can_implement(big, def, half_regs), "registers per block"));
  // Element-wise copies (f16 rows of odd length) cost a register each: the 8-warp default
  // takes 48 per thread per stage and is refused there; the unaligned default is smaller.
  Problem odd = Problem::make(4097, 4095, 33, DType::f16, DType::f16, Layout::nn);
  REQUIRE(odd.align == 2);
  CHECK(test::says(fam.can_implement(odd, def, h), "registers"));
  Space os = fam.space(odd, h);
  CHECK_FALSE(os.check(os.default_config()));

  // Alignment below the element size, and values outside the space.
  Problem bytes = big;
  bytes.align = 1;
  CHECK(test::says(fam.can_implement(bytes, def, h), "alignment"));
  Config off = def;
  off[1] = 48;
  CHECK(test::says(fam.can_implement(big, off, h), "not in the space"));
}

TEST_CASE("wmma: the GPU test's variants and the sm_75 paths compile without spilling", "[compile][wmma]") {
  // The conformance suite compiles a sample of every family for each architecture it claims;
  // this compiles what is particular to wmma: the GPU test's variants (each loader, fragment
  // shape, pipeline depth, padding and swizzle, both epilogues) at 4096³ nn and tt for sm_90,
  // and two f16 configs for sm_75 (copies through registers, m16n8k8). Each must compile, use
  // at most 255 registers and not spill.
  const Family& fam = family();
  test::CompileSample sample(fam);
  auto add = [&](const Problem& p, const std::string& arch, const Space& s, const std::vector<Config>& configs) {
    for (auto& c : configs) {
      std::string why = sample.add(p, c, arch);
      INFO(s.name(c) << ": " << why);
      REQUIRE(why.empty());
    }
  };
  // sm_75 (f16 only): no cp.async (copies through registers) and m16n8k8 MMAs.
  for (auto lay : {Layout::nn, Layout::tt}) {
    Problem p = Problem::make(4096, 4096, 4096, DType::f16, DType::f32, lay);
    Space s = fam.space(p, arch_limits("sm_75"));
    add(p, "sm_75", s, {s.default_config(), test::parse_config(s, "loader=wmma,bm=64,bn=64,wm=32,wn=32,smem=pad,stages=2")});
  }

  for (auto lay : {Layout::nn, Layout::tt}) {
    const DType dt = lay == Layout::nn ? DType::bf16 : DType::tf32;
    Problem p = Problem::make(4096, 4096, 4096, dt, Problem::default_out(dt), lay);
    Space s = fam.space(p, arch_limits("sm_90"));
    std::vector<Config> cs;
    for (auto& v : kVariants)
      if (Config c = test::parse_config(s, v); s.valid(c)) cs.push_back(c);
    CHECK(cs.size() >= 3);
    add(p, "sm_90", s, cs);
  }
  for (auto& j : sample.results()) {
    const CompileResult& r = j.result;
    INFO(j.what << "\n" << r.log);
    REQUIRE(r.ok);
    CHECK(r.res.registers > 0);
    CHECK(r.res.registers <= 255);
    CHECK(r.res.spill_stores == 0);
    CHECK(r.res.spill_loads == 0);
  }
}

TEST_CASE("wmma is correct for every dtype, output type and layout at aligned and odd shapes", "[gpu][wmma]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  DeviceInfo dev = device_info(0);
  const gt_device& d = dev.limits;
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> all_shapes = {{1024, 1024, 1024}, {256, 512, 128}, {1, 1, 1},     {7, 13, 17},
                                         {1000, 3000, 7},    {4097, 4095, 33}, {33, 65, 4099}};
  // For the variants: tile multiples; edges in every dimension with 16-byte (200x328x72) and
  // 8-byte (100x164x36, f16/bf16) alignment; the odd shapes (element-wise copies).
  const std::vector<Shape> some_shapes = {{256, 512, 128}, {200, 328, 72}, {100, 164, 36},
                                          {4097, 4095, 33}, {33, 65, 4099}, {7, 13, 17}};
  struct Job {
    Problem p;
    Config c;
    int variant;  // -1: the default
  };
  std::vector<Job> jobs;
  // The default: every input × output × layout × shape.
  for (auto in : kInputs)
    for (auto out : kOutputs)
      for (auto lay : kLayouts)
        for (auto sh : all_shapes) {
          Problem p = Problem::make(sh[0], sh[1], sh[2], in, out, lay);
          jobs.push_back({p, fam.space(p, d).default_config(), -1});
        }
  // The variants: every layout and a few shapes, the input and output types rotating (to the
  // next input type where a variant does not apply to this one).
  size_t turn = 0;
  for (auto lay : kLayouts)
    for (auto sh : some_shapes)
      for (size_t v = 0; v < kVariants.size(); ++v, ++turn)
        for (size_t k = 0; k < kInputs.size(); ++k) {
          Problem p = Problem::make(sh[0], sh[1], sh[2], kInputs[(turn + k) % kInputs.size()],
                                    kOutputs[(turn / kInputs.size() + k) % kOutputs.size()], lay);
          Space s = fam.space(p, d);
          Config c = test::parse_config(s, kVariants[v]);
          if (s.valid(c)) {
            jobs.push_back({p, c, int(v)});
            break;
          }
        }
  test::compile_ahead_jobs(fam, jobs);  // the checks below then only load cubins
  std::map<int, int> runs;
  for (auto& j : jobs) {
    Space s = fam.space(j.p, d);
    Measurement m = test::gpu_check(fam, j.p, j.c);
    INFO(j.p.key() << " " << s.name(j.c) << ": " << to_string(m.status) << " " << m.message);
    if (size_t(j.p.align) < size_of(j.p.in)) {
      // tf32 inputs with a 16-bit C of odd width: the problem's alignment class (2 bytes) is
      // below the input element, and the family says so rather than guess.
      CHECK(m.status == Status::cannot_implement);
      CHECK_THAT(m.message, Catch::Contains("alignment"));
      continue;
    }
    CHECK(m.status == Status::ok);
    CHECK(m.err_rel_fro <= tolerance_for(j.p).rel_fro);
    ++runs[j.variant];
  }
  // Every variant ran somewhere (the tf32-only one in tf32, the WMMA fragments in the layouts
  // that align them).
  for (size_t v = 0; v < kVariants.size(); ++v) {
    INFO(kVariants[v]);
    CHECK(runs[int(v)] >= 4);
  }
}
