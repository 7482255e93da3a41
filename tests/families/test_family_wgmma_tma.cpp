// The wgmma_tma family (Hopper: wgmma fed by TMA, warp-specialised, clusters with multicast,
// persistent grid, split-K): what is particular to it. On the CPU: its refusals and their
// codes; the launch its default asks of core (tensor map boxes per layout, cluster,
// persistent grid, shared memory, workspace, launch scalars); a sample of distinct builds
// compiled for sm_90a; and for the default and every suggested config of a few problems, the
// SASS: HGMMA present, nothing in local memory, no spills, registers within the setmaxnreg
// split, and no warning that setmaxnreg was ignored. On a GPU: the configs that exercise
// clusters at the grid's edges, split-K's uneven splits, consumers side by side, both
// in-flight modes and the 4-CTA clusters, in every layout, verified against float64.
// FP8 (e4m3 / e5m2, layout nt, tensor, row and block scales): the same on the CPU (refusals,
// the launch, defaults, QGMMA in the SASS within the registers, block scales' second
// accumulator set included) and on a GPU (edge tiles, K not a multiple of 128, mixed types).
#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "measure/evaluate.hpp"
#include "build/plugin.hpp"
#include "gpu/tensor_map.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

using namespace gt;

namespace {

const Family& family() { return test::plugins().get("wgmma_tma"); }
const gt_device kHopper = arch_limits("sm_90");

// A config of the space: K=V assignments over the default ("" is the default itself).
Config cfg(const Space& s, const std::string& text) {
  return text.empty() ? s.default_config() : test::parse_config(s, text);
}

int highest_register(const std::string& sass) {
  int hi = -1;
  static const std::regex reg(R"(\bR(\d+)\b)");
  for (auto it = std::sregex_iterator(sass.begin(), sass.end(), reg); it != std::sregex_iterator(); ++it)
    hi = std::max(hi, std::stoi((*it)[1]));
  return hi;
}

// The main loop's cost beside its wgmma: vector integer instructions per HGMMA from the first
// HGMMA to the first wait for every group (the end of a tile's k loop). Descriptor arithmetic
// done per lane (1.3: about 13 per HGMMA) burned as much ALU as 22 % of the pipe at 8192^3 and
// cost clock at the power cap; on the uniform datapath it is about 2 (docs/kernel-notes.md, 1.5).
// FP8's wgmma is QGMMA in the SASS.
double vector_int_ops_per_hgmma(const std::string& sass, const std::string& mma = "HGMMA") {
  static const std::regex instruction(R"(/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_.]+)([^;]*);)");
  static const std::regex vector_int(R"(^(LOP3|SHF|IMAD|IADD3|VIADD|LEA|SEL|PRMT|ISETP|MOV)\b)");
  int hgmma = 0, vector = 0;
  bool in_loop = false;
  for (auto it = std::sregex_iterator(sass.begin(), sass.end(), instruction); it != std::sregex_iterator(); ++it) {
    const std::string op = (*it)[1], rest = (*it)[2];
    if (op.rfind(mma, 0) == 0) in_loop = true, ++hgmma;
    else if (in_loop && op == "WARPGROUP.DEPBAR.LE" && rest.find("0x0") != std::string::npos) break;
    else if (in_loop && std::regex_search(op, vector_int)) ++vector;
  }
  return hgmma ? double(vector) / hgmma : 1e9;
}

// One config of the family built and loaded on the GPU, as a tune runs it.
Built runnable(const Problem& p, const DeviceInfo& dev, const std::string& config, Compiler& compiler) {
  Built b = build_runnable(family(), p, cfg(family().space(p, dev.limits), config), Transform::none, dev.limits,
                           dev.arch(), compiler);
  INFO(config << ": " << b.message);
  REQUIRE(b.run);
  return b;
}

}  // namespace

TEST_CASE("wgmma_tma: refusals say why, with their codes", "[wgmma_tma]") {
  const Family& fam = family();
  Problem big = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, Layout::nn);
  Space s = fam.space(big, kHopper);
  auto code = [&](const Problem& p, const std::string& c, const gt_device& d = kHopper) {
    auto r = fam.refusal(p, cfg(fam.space(p, d), c), d);
    return r ? r->code : GT_REFUSAL_NONE;
  };
  CHECK(code(big, "") == GT_REFUSAL_NONE);
  CHECK(code(big, "", arch_limits("sm_80")) == GT_REFUSAL_ARCH);
  CHECK(code(big, "", arch_limits("sm_100")) == GT_REFUSAL_ARCH);
  CHECK(code(Problem::make(512, 512, 512, DType::f32, DType::f32, Layout::nn), "") == GT_REFUSAL_DTYPE);
  CHECK(code(Problem::make(512, 512, 512, DType::tf32, DType::f32, Layout::nn), "") == GT_REFUSAL_DTYPE);
  // Leading dimensions that are not a multiple of 16 bytes: TMA cannot copy them.
  auto odd = fam.refusal(Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn), s.default_config(), kHopper);
  REQUIRE(odd);
  CHECK(odd->code == GT_REFUSAL_SHAPE);
  CHECK_THAT(odd->why, Catch::Contains("16-byte aligned"));
  // The device's limits: shared memory (6 stages of 128x256), registers (two m64n256 per consumer).
  CHECK(code(big, "stages=6") == GT_REFUSAL_RESOURCES);
  CHECK(code(big, "bm=256,consumers=1") == GT_REFUSAL_RESOURCES);
  // The config itself.
  CHECK(code(big, "consumers=1,wg=n") == GT_REFUSAL_CONFIG);
  CHECK(code(big, "bn=192,consumers=2,wg=n") == GT_REFUSAL_CONFIG);  // 96 columns are not a wgmma N
  CHECK(code(big, "bm=64,consumers=2") == GT_REFUSAL_CONFIG);         // 32 rows per consumer
  // The problem's shape: a 4x1 cluster needs four tiles along M, split-K needs k tiles.
  CHECK(code(Problem::make(256, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), "bm=128,cluster=4x1") ==
        GT_REFUSAL_SHAPE);
  CHECK(code(Problem::make(256, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), "bm=64,bn=128,consumers=1,cluster=4x1") ==
        GT_REFUSAL_NONE);
  CHECK(code(Problem::make(512, 512, 128, DType::bf16, DType::bf16, Layout::nn), "split=3") == GT_REFUSAL_SHAPE);
}

TEST_CASE("wgmma_tma: the default's launch asks core for maps, a cluster, a persistent grid and sm_90a",
          "[wgmma_tma]") {
  const Family& fam = family();
  for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
    Problem p = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, lay);
    Space s = fam.space(p, kHopper);
    INFO(p.key() << " " << s.name(s.default_config()));
    Refused why;
    auto ks = fam.build(p, s.default_config(), kHopper, &why);
    REQUIRE(ks);
    CHECK(ks->arch_specific);
    CHECK(ks->compile_arch("sm_90") == "sm_90a");
    CHECK(ks->cluster[0] == 2);  // the default's 2x1 cluster shares B
    CHECK(ks->grid_per_sm == 1);
    CHECK(ks->launch_grid(132)[0] == 132);
    CHECK(ks->block[0] == 384);
    CHECK(ks->dynamic_smem > 48u * 1024u);
    CHECK(ks->dynamic_smem <= uint32_t(kHopper.smem_per_block_optin));
    CHECK(ks->workspace_bytes == 0);  // no split-K
    CHECK(ks->scalars[2] == 1);       // splits
    REQUIRE(ks->tensor_maps.size() == 3);  // A, B and C (the epilogue's TMA stores)
    const auto& a = ks->tensor_maps[0];
    const auto& b = ks->tensor_maps[1];
    const auto& c = ks->tensor_maps[2];
    CHECK(a.operand == GT_OPERAND_A);
    CHECK(b.operand == GT_OPERAND_B);
    CHECK(c.operand == GT_OPERAND_C);
    CHECK(c.swizzle == 3);
    CHECK(c.box[0] == 64);  // chunks of 64 rows x 128 bytes
    CHECK(c.box[1] == 64);
    CHECK(test::define_of(*ks, "EPILOGUE_TMA") == "1");
    CHECK(a.swizzle == 3);  // 128-byte swizzle: rows of 64 16-bit elements
    CHECK(a.box[0] == 64);
    // A stored M x K (nn, nt) comes in boxes of 128 rows; stored K x M, blocks of 64 k rows.
    CHECK(a.box[1] == (p.a_trans() ? 64u : 128u));
    // B is shared by the cluster's two CTAs: each copies half of it (32 k rows, or 128 n rows).
    CHECK(b.box[1] == (p.b_trans() ? 128u : 32u));
    CHECK(test::define_of(*ks, "A_KMAJOR") == (p.a_trans() ? "0" : "1"));
    CHECK(test::define_of(*ks, "B_KMAJOR") == (p.b_trans() ? "1" : "0"));
  }
  // The epilogue's chunk buffers take 2 x 8 KB per consumer: where the ring leaves no room for
  // them, C leaves from the registers and core encodes no map of C.
  {
    Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::f32, Layout::nn);
    Space s = fam.space(p, kHopper);
    auto roomy = fam.build(p, cfg(s, "bm=128,bn=128,stages=6"), kHopper, nullptr);
    auto full = fam.build(p, cfg(s, "bm=64,bn=256,consumers=2,wg=n,stages=5"), kHopper, nullptr);
    REQUIRE(roomy);
    REQUIRE(full);
    CHECK(test::define_of(*roomy, "EPILOGUE_TMA") == "1");
    REQUIRE(roomy->tensor_maps.size() == 3);
    CHECK(roomy->tensor_maps[2].box[0] == 32);  // 128 bytes of f32
    CHECK(test::define_of(*full, "EPILOGUE_TMA") == "0");
    CHECK(full->tensor_maps.size() == 2);
    CHECK(full->dynamic_smem <= uint32_t(kHopper.smem_per_block_optin));
    // Eight stages of the narrow 64x128 tile (192 KB, the ring the M = 256 rows run fastest
    // with) still leave room for the epilogue's buffers; eight of 128x128 do not fit at all.
    auto deep = fam.build(p, cfg(s, "bm=64,bn=128,consumers=1,stages=8"), kHopper, nullptr);
    REQUIRE(deep);
    CHECK(test::define_of(*deep, "STAGES") == "8");
    CHECK(test::define_of(*deep, "EPILOGUE_TMA") == "1");
    CHECK(deep->dynamic_smem <= uint32_t(kHopper.smem_per_block_optin));
    auto refused = fam.refusal(p, cfg(s, "bm=128,bn=128,stages=8"), kHopper);
    REQUIRE(refused);
    CHECK(refused->code == GT_REFUSAL_RESOURCES);
    CHECK_THAT(refused->why, Catch::Contains("8 stages"));
  }
  // A 2x2 cluster: each row of two CTAs shares A, each column B, so both come in halves; its
  // producer gets more registers and its consumers fewer. setmaxnreg.inc draws only on what
  // .dec gave back, so the consumers may take no more than the producer frees below the entry
  // cap (1.2 gave the producer 48 beside consumers at 232 and hung on the H200).
  {
    Problem p = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, Layout::nn);
    Space s = fam.space(p, kHopper);
    auto sq = fam.build(p, cfg(s, "cluster=2x2"), kHopper, nullptr);
    REQUIRE(sq);
    CHECK(sq->cluster[0] == 4);
    CHECK(sq->launch_grid(132)[0] == 132);  // 33 whole clusters
    REQUIRE(sq->tensor_maps.size() == 3);
    CHECK(sq->tensor_maps[0].box[1] == 64u);  // A: 128 rows in two slices
    CHECK(sq->tensor_maps[1].box[1] == 32u);  // B (K x N): 64 k rows in two slices
    CHECK(test::define_of(*sq, "CLUSTER_M") == "2");
    CHECK(test::define_of(*sq, "CLUSTER_N") == "2");
    auto regs_fit = [](const KernelSpec& ks) {
      int entry = 0;
      for (auto& o : ks.options)
        if (o.rfind("--maxrregcount=", 0) == 0) entry = std::stoi(o.substr(15));
      const int consumers = std::stoi(test::define_of(ks, "CONSUMERS"));
      return std::stoi(test::define_of(ks, "PRODUCER_REGS")) + consumers * std::stoi(test::define_of(ks, "CONSUMER_REGS")) <=
             (1 + consumers) * entry;
    };
    CHECK(regs_fit(*sq));
    CHECK(std::stoi(test::define_of(*sq, "PRODUCER_REGS")) > 40);  // 40 spills 16 bytes in the 2x2 producer
    CHECK(regs_fit(*fam.build(p, s.default_config(), kHopper, nullptr)));
    // One tile along N is too few for a cluster two tiles wide.
    Problem narrow = Problem::make(1024, 256, 1024, DType::bf16, DType::bf16, Layout::nn);
    Refused why;
    CHECK_FALSE(fam.build(narrow, cfg(fam.space(narrow, kHopper), "bm=128,bn=256,stages=4,cluster=2x2"), kHopper, &why));
    CHECK_THAT(why.why, Catch::Contains("a 2x2 cluster groups 2 tiles along N; N = 256 is 1 tile(s) of 256"));
  }
  // Split-K asks for a workspace of tile counters and fp32 partials, zeroed once.
  Problem m256 = Problem::make(256, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  Space s = fam.space(m256, kHopper);
  auto ks = fam.build(m256, cfg(s, "bm=128,bn=128,stages=6,cluster=2x1,split=4"), kHopper, nullptr);
  REQUIRE(ks);
  CHECK(ks->workspace_zero == GT_WORKSPACE_ZERO_ONCE);
  CHECK(ks->workspace_bytes == uint64_t(64 * 4 + 2 * 32 * 4 * 128 * 128 * 4));
  CHECK(ks->scalars[2] == 4);
  CHECK(ks->grid[0] == 2u * 32u * 4u);
}

TEST_CASE("wgmma_tma: the default is the candidate whose tiles cover the SMs in the fewest rounds of work",
          "[wgmma_tma]") {
  const Family& fam = family();
  REQUIRE(kHopper.sm_count == 132);
  auto default_of = [&](int64_t m, int64_t n, int64_t k) {
    Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16, Layout::nn);
    Space s = fam.space(p, kHopper);
    return s.name(s.default_config());
  };
  // Large squares: 128x256 tiles in 2x1 clusters (4096^3: 512 tiles, 3.9 rounds of 132).
  CHECK(default_of(8192, 8192, 8192) == default_of(4096, 4096, 4096));
  CHECK_THAT(default_of(4096, 4096, 4096), Catch::Contains("_bm128_bn256_") && Catch::Contains("_cluster2x1_"));
  // M = 256, N = 12288: 128x192 tiles are 2 x 64 = 128 for 132 SMs (one round); 128x128 would be
  // 192 (two rounds of 128x128 cost more than one of 128x192), 128x256 96 (one round of a larger tile).
  CHECK_THAT(default_of(256, 12288, 4096), Catch::Contains("_bm128_bn192_"));
  // M = 256, N = 4096: 64 tiles of 128x128 leave half the SMs idle; split-K 2 fills them.
  CHECK_THAT(default_of(256, 4096, 4096), Catch::Contains("_bm128_bn128_") && Catch::Contains("_split2"));
  // A device with half the SMs needs no split at M = 256, N = 4096: the rule reads the SM count.
  gt_device half = kHopper;
  half.sm_count = 66;
  Problem p = Problem::make(256, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  Space s = fam.space(p, half);
  CHECK_THAT(s.name(s.default_config()), Catch::Contains("_split1"));
}

TEST_CASE("wgmma_tma: distinct builds compile for sm_90a", "[compile][wgmma_tma]") {
  // `gemmtune compile --family wgmma_tma` compiles every valid candidate (docs/kernel-notes.md
  // has the count); here one build of each tile, consumer layout, pipeline and cluster kind.
  const Family& fam = family();
  test::CompileSample sample(fam);
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  Problem t = Problem::make(4096, 4096, 4096, DType::f16, DType::f32, Layout::tt);
  Space s = fam.space(p, kHopper), st = fam.space(t, kHopper);
  for (const char* c : {"bm=64,bn=64,consumers=1,stages=2,cluster=1x1", "bm=256,bn=128,stages=4,cluster=1x2",
                        "bm=128,bn=192,stages=4,inflight=0,cluster=1x1", "bm=64,bn=256,consumers=2,wg=n,stages=5,cluster=4x1",
                        "bm=128,bn=128,consumers=2,wg=n,stages=6,cluster=1x4"}) {
    REQUIRE(sample.add(p, cfg(s, c), "sm_90").empty());
    REQUIRE(sample.add(t, cfg(st, c), "sm_90").empty());
  }
  for (auto& j : sample.results()) {
    INFO(j.what << "\n" << j.result.log);
    REQUIRE(j.result.ok);
    CHECK(j.result.res.spill_stores == 0);
    CHECK(j.result.res.spill_loads == 0);
    // What is read when NVRTC's log lacks ptxas's lines: the cubin's own ELF agrees.
    const Resources elf = cubin_resources(j.result.cubin);
    CHECK(elf.registers == parse_resources(j.result.log).registers);
    CHECK(elf.stack_bytes == 0);
    CHECK(elf.spill_stores == 0);
  }
}

TEST_CASE("wgmma_tma: the default's and every suggestion's SASS issues HGMMA, spills nothing and fits setmaxnreg",
          "[compile][wgmma_tma][sass]") {
  const std::string tool = test::require_cuobjdump();
  const Family& fam = family();
  test::CompileSample sample(fam);
  std::set<std::string> queued;
  std::vector<bool> tma_epilogue;  // per queued build, in order
  std::vector<int> consumer_regs;
  for (auto p : {Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, Layout::nn),
                 Problem::make(256, 4096, 4096, DType::bf16, DType::bf16, Layout::nn),
                 Problem::make(4096, 4096, 4096, DType::f16, DType::f32, Layout::tn)}) {
    Space s = fam.space(p, kHopper);
    std::vector<Config> cs = {s.default_config()};
    for (auto& c : fam.suggest(p, kHopper, 64, s.dims())) cs.push_back(c);
    cs.push_back(cfg(s, "bm=128,bn=256,stages=4,cluster=2x2"));  // the producer's busiest build
    for (auto& c : cs) {
      auto ks = fam.build(p, c, kHopper, nullptr);
      REQUIRE(ks);
      std::string key = p.key() + " " + [&] {
        std::string o;
        for (auto& x : ks->options) o += x + " ";
        return o;
      }();
      if (queued.insert(key).second) {
        REQUIRE(sample.add(p, c, "sm_90").empty());
        tma_epilogue.push_back(test::define_of(*ks, "EPILOGUE_TMA") == "1");
        consumer_regs.push_back(std::stoi(test::define_of(*ks, "CONSUMER_REGS")));
      }
    }
  }
  CHECK(queued.size() >= 10);
  CHECK(std::count(tma_epilogue.begin(), tma_epilogue.end(), true) >= 5);
  size_t n = 0;
  for (auto& j : sample.results()) {
    const bool tma_store = tma_epilogue.at(n++);
    INFO(j.what << "\n" << j.result.log);
    test::CompileSample::check_no_local_memory(j);
    CHECK_THAT(j.result.log, !Catch::Contains("C7508"));  // setmaxnreg ignored
    const std::string sass = test::sass_of(j.result.cubin, tool);
    CHECK_THAT(sass, Catch::Contains("HGMMA"));
    CHECK_THAT(sass, Catch::Contains("USETMAXREG"));
    CHECK_THAT(sass, Catch::Contains("UTMALDG"));  // TMA tile copies
    if (tma_store) CHECK_THAT(sass, Catch::Contains("UTMASTG"));  // the epilogue's TMA stores
    CHECK_THAT(sass, !Catch::Contains("LDL") && !Catch::Contains("STL"));
    CHECK(highest_register(sass) < consumer_regs.at(n - 1));  // the consumers' setmaxnreg
    CHECK(vector_int_ops_per_hgmma(sass) <= 4.0);
  }
}

TEST_CASE("wgmma_tma is correct at cluster edges, uneven splits, both consumer layouts and in-flight modes",
          "[gpu][wgmma_tma]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  const gt_device d = device_info(0).limits;
  // Tile counts odd along M and N (a cluster sticking out of C), K not a multiple of 64 and
  // split unevenly, M = 256 at the LLM shapes' width, one row of tiles, and several rounds of
  // a persistent grid (2000 x 2056: 16 x 17 tiles of 128x128).
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> shapes = {{1100, 1544, 776}, {300, 1000, 1000}, {256, 2048, 4096}, {64, 520, 4104},
                                     {2000, 2056, 328}};
  const std::vector<std::string> variants = {
      "bm=128,bn=256,stages=4,cluster=2x1,persistent=yes",
      "bm=128,bn=256,stages=4,cluster=1x2,persistent=no,raster=n,group=4",
      "bm=256,bn=128,stages=4,cluster=2x1,persistent=yes,split=3",
      "bm=64,bn=128,consumers=1,stages=6,cluster=4x1,persistent=no",
      "bm=64,bn=256,consumers=2,wg=n,stages=5,cluster=1x4,persistent=yes,split=2",
      "bm=128,bn=128,consumers=2,wg=n,stages=6,inflight=0,cluster=2x1,split=4",
      "bm=128,bn=192,stages=4,inflight=0,cluster=1x1,persistent=yes,group=16",
      "bm=128,bn=256,stages=4,cluster=2x2,persistent=yes",
      "bm=128,bn=128,stages=6,cluster=2x2,persistent=no,raster=n,split=2",
  };
  std::vector<std::pair<Problem, Config>> jobs;
  size_t turn = 0;
  for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt})
    for (auto& sh : shapes)
      for (auto& v : variants) {
        const DType in = turn % 2 ? DType::f16 : DType::bf16;
        const DType out = turn % 3 == 0 ? DType::f32 : in;
        ++turn;
        Problem p = Problem::make(sh[0], sh[1], sh[2], in, out, lay);
        Space s = fam.space(p, d);
        Config c = cfg(s, v);
        if (!fam.refusal(p, c, d)) jobs.emplace_back(p, c);
      }
  INFO(jobs.size() << " checks");
  CHECK(jobs.size() >= 80);
  test::check_correct(fam, jobs);
}

TEST_CASE("wgmma_tma: a persistent grid of clusters holds only the clusters that run at once", "[gpu][wgmma_tma]") {
  GT_REQUIRE_GPU();
  const DeviceInfo dev = device_info(0);
  Problem p = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16, Layout::nn);
  Compiler compiler(nullptr);
  for (const char* c : {"cluster=2x1,persistent=yes", "cluster=2x2,persistent=yes", "bm=256,bn=128,cluster=4x1,persistent=yes"}) {
    INFO(c);
    Built b = runnable(p, dev, c, compiler);
    const LaunchGeometry& g = b.run->geometry();
    const uint32_t size = g.cluster[0];
    int fit = 0;
    {
      LoadedKernel k(b.compile.cubin, "gemm_wgmma_tma", g.smem);
      fit = k.max_active_clusters(g);
    }
    INFO("clusters of " << size << " that fit at once: " << fit << "; grid " << g.grid[0]);
    REQUIRE(fit > 0);
    CHECK(g.grid[0] % size == 0);
    CHECK(g.grid[0] <= uint32_t(fit) * size);
    CHECK(g.grid[0] <= uint32_t(dev.limits.sm_count));
    CHECK(g.grid[0] == std::min(uint32_t(fit) * size, uint32_t(dev.limits.sm_count) / size * size));
    WARN(c << ": " << fit << " clusters of " << size << " fit at once on " << dev.limits.sm_count << " SMs");
  }
}

TEST_CASE("wgmma_tma: split-K's tile counters reset themselves, launch after launch", "[gpu][wgmma_tma]") {
  GT_REQUIRE_GPU();
  // The workspace is zeroed once, when the kernel is loaded, and verification reads the first
  // launch: every launch must leave the counters at zero for the next, or the timed launches
  // after it reduce their tiles wrongly, unseen. Each verification below launches four times
  // back to back, as the timing does, and reads the last.
  const DeviceInfo dev = device_info(0);
  Problem p = Problem::make(1100, 1544, 776, DType::bf16, DType::bf16, Layout::nn);
  Compiler compiler(nullptr);
  ProblemBench bench(p, dev, Distribution::normal, 7);
  for (const char* c : {"bm=128,bn=128,stages=6,cluster=2x1,persistent=yes,split=3",
                        "bm=64,bn=64,consumers=1,stages=6,cluster=1x1,persistent=no,split=4"}) {
    INFO(c);
    Built b = runnable(p, dev, c, compiler);
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

// ---- FP8 ----

namespace {

// The same problem with fields core's Problem::make refuses (another layout, e5m2 x e5m2): what
// the family says when asked anyway.
Problem unchecked(Problem p, Layout lay) {
  p.layout = lay;
  p.lda = p.a_trans() ? p.m : p.k;
  p.ldb = p.b_trans() ? p.k : p.n;
  return p;
}

int reg_option(const KernelSpec& k, const std::string& name) {
  const std::string v = test::define_of(k, name);
  return v.empty() ? -1 : std::stoi(v);
}

}  // namespace

TEST_CASE("wgmma_tma: FP8 refusals say why, with their codes", "[wgmma_tma][fp8]") {
  const Family& fam = family();
  auto code = [&](const Problem& p, const std::string& c, const gt_device& d = kHopper) {
    auto r = fam.refusal(p, cfg(fam.space(p, d), c), d);
    return r ? r->code : GT_REFUSAL_NONE;
  };
  for (auto mode : {ScaleMode::tensor, ScaleMode::row, ScaleMode::block}) {
    INFO(to_string(mode));
    CHECK(code(test::fp8_problem(4096, 4096, 4096, mode), "") == GT_REFUSAL_NONE);
    CHECK(code(test::fp8_problem(4096, 4096, 4096, mode, DType::f32, DType::e4m3, DType::e5m2), "") == GT_REFUSAL_NONE);
    CHECK(code(test::fp8_problem(4096, 4096, 4096, mode, DType::f16, DType::e5m2, DType::e4m3), "") == GT_REFUSAL_NONE);
    CHECK(code(test::fp8_problem(4096, 4096, 4096, mode), "", arch_limits("sm_80")) == GT_REFUSAL_ARCH);
    // wgmma has no transpose for 8-bit types: every layout but nt is refused as a layout.
    for (auto lay : {Layout::nn, Layout::tn, Layout::tt})
      CHECK(code(unchecked(test::fp8_problem(4096, 4096, 4096, mode), lay), "") == GT_REFUSAL_LAYOUT);
    // K not a multiple of 16 bytes: rows of A and B that TMA cannot copy.
    CHECK(code(test::fp8_problem(4096, 4096, 4104, mode), "") == GT_REFUSAL_SHAPE);
    // Two k tiles of 128 are too few for three splits.
    CHECK(code(test::fp8_problem(512, 512, 256, mode), mode == ScaleMode::block ? "inflight=0,bn=128,split=3" : "split=3") ==
          GT_REFUSAL_SHAPE);
  }
  // FP8 output (with its d scale and amax) is not built yet.
  CHECK(code(test::fp8_problem(4096, 4096, 4096, ScaleMode::tensor, DType::e4m3), "") == GT_REFUSAL_DTYPE);
  {
    Problem both = test::fp8_problem(4096, 4096, 4096, ScaleMode::tensor, DType::bf16, DType::e5m2);
    both.in_b = DType::e5m2;
    auto r = fam.refusal(both, fam.space(both, kHopper).default_config(), kHopper);
    REQUIRE(r);
    CHECK(r->code == GT_REFUSAL_DTYPE);
    CHECK_THAT(r->why, Catch::Contains("e5m2 x e5m2"));
  }
  // Block scales: no wgmma group in flight (each stage is promoted before the next), and two
  // accumulator sets, so at most 96 accumulators a set: 128x256 with two m64n256 consumers
  // does not fit, 128x192 does.
  Problem block = test::fp8_problem(4096, 4096, 4096, ScaleMode::block);
  CHECK(code(block, "bm=128,bn=128,consumers=2,inflight=1") == GT_REFUSAL_CONFIG);
  CHECK(code(block, "bm=128,bn=256,consumers=2,inflight=0,stages=4") == GT_REFUSAL_RESOURCES);
  CHECK(code(block, "bm=128,bn=192,consumers=2,inflight=0,stages=4") == GT_REFUSAL_NONE);
  CHECK(code(block, "bm=64,bn=256,consumers=2,wg=n,inflight=0,stages=4") == GT_REFUSAL_NONE);
  CHECK(code(block, "bm=128,bn=128,consumers=2,wg=n,inflight=0,stages=6") == GT_REFUSAL_NONE);  // 2 x m64n64
  CHECK(code(block, "bm=128,bn=128,consumers=1,inflight=0,stages=6") == GT_REFUSAL_RESOURCES);   // 2 x m64n128
  // One consumer of m64n192 (2 x 96) spills where two do not: one consumer holds 2 x 64 at most.
  CHECK(code(block, "bm=64,bn=192,consumers=1,inflight=0,stages=6,cluster=1x1") == GT_REFUSAL_RESOURCES);
  CHECK(code(block, "bm=64,bn=128,consumers=1,inflight=0,stages=8,cluster=1x1") == GT_REFUSAL_NONE);
  auto why = fam.refusal(block, cfg(fam.space(block, kHopper), "bm=128,bn=256,inflight=0,stages=4"), kHopper);
  REQUIRE(why);
  CHECK_THAT(why->why, Catch::Contains("2 x 128 fp32 accumulators"));
  // Tensor and row scales keep the 16-bit kernel's register split: 128x256, one group in flight.
  CHECK(code(test::fp8_problem(4096, 4096, 4096, ScaleMode::row), "bm=128,bn=256,inflight=1,stages=4") == GT_REFUSAL_NONE);
  CHECK(code(test::fp8_problem(4096, 4096, 4096, ScaleMode::row), "bm=128,bn=256,stages=5") == GT_REFUSAL_RESOURCES);
}

TEST_CASE("wgmma_tma: an FP8 launch takes the scales, k tiles of 128 and 16-bit builds stay as they were",
          "[wgmma_tma][fp8]") {
  const Family& fam = family();
  for (auto mode : {ScaleMode::tensor, ScaleMode::row, ScaleMode::block}) {
    Problem p = test::fp8_problem(4096, 4096, 4096, mode, DType::bf16, DType::e4m3, DType::e5m2);
    Space s = fam.space(p, kHopper);
    INFO(p.key() << " " << s.name(s.default_config()));
    auto ks = fam.build(p, s.default_config(), kHopper, nullptr);
    REQUIRE(ks);
    CHECK(ks->takes_scales);
    CHECK(ks->arch_specific);
    CHECK(test::define_of(*ks, "FP8") == "1");
    CHECK(test::define_of(*ks, "A_E5M2") == "0");
    CHECK(test::define_of(*ks, "B_E5M2") == "1");
    CHECK(test::define_of(*ks, "SCALE_MODE") == std::to_string(int(mode)));
    CHECK(test::define_of(*ks, "IN_T").empty());
    CHECK(test::define_of(*ks, "A_KMAJOR") == "1");
    CHECK(test::define_of(*ks, "B_KMAJOR") == "1");
    REQUIRE(ks->tensor_maps.size() >= 2);
    // Boxes of 128 FP8 elements along K: 128 bytes, the 128-byte swizzle's span, as the 16-bit
    // kernel's 64.
    CHECK(ks->tensor_maps[0].box[0] == 128);
    CHECK(ks->tensor_maps[1].box[0] == 128);
    CHECK(ks->tensor_maps[0].swizzle == 3);
    if (mode == ScaleMode::block) CHECK(test::define_of(*ks, "INFLIGHT") == "0");
  }
  // The default at 4096^3 with tensor or row scales is the 16-bit one: 128x256 tiles in 2x1
  // clusters, four stages, persistent; with the same shared memory as bf16 nt.
  Problem t = test::fp8_problem(4096, 4096, 4096, ScaleMode::tensor);
  Problem bf = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16, Layout::nt);
  Space st = fam.space(t, kHopper), sb = fam.space(bf, kHopper);
  CHECK(st.name(st.default_config()) == sb.name(sb.default_config()));
  auto kt = fam.build(t, st.default_config(), kHopper, nullptr);
  auto kb = fam.build(bf, sb.default_config(), kHopper, nullptr);
  REQUIRE(kt);
  REQUIRE(kb);
  CHECK(kt->dynamic_smem == kb->dynamic_smem);
  CHECK(kt->grid[0] == kb->grid[0]);
  CHECK(kt->cluster[0] == kb->cluster[0]);
  CHECK(kt->tensor_maps[0].box[1] == kb->tensor_maps[0].box[1]);
  CHECK(kt->tensor_maps[1].box[1] == kb->tensor_maps[1].box[1]);
  // A 16-bit build names none of FP8's defines and takes no scales.
  CHECK_FALSE(kb->takes_scales);
  CHECK(test::define_of(*kb, "FP8").empty());
  CHECK(test::define_of(*kb, "SCALE_MODE").empty());
  CHECK(test::define_of(*kb, "IN_T") == "__nv_bfloat16");
  // Split-K counts k tiles of 128: K = 4096 is 32 of them.
  Problem m256 = test::fp8_problem(256, 4096, 4096, ScaleMode::row);
  auto split = fam.build(m256, cfg(fam.space(m256, kHopper), "bm=128,bn=128,stages=6,cluster=2x1,split=4"), kHopper, nullptr);
  REQUIRE(split);
  CHECK(split->workspace_zero == GT_WORKSPACE_ZERO_ONCE);
  CHECK(split->scalars[2] == 4);
}

TEST_CASE("wgmma_tma: FP8 defaults and suggestions are valid, block scales' among the configs that fit",
          "[wgmma_tma][fp8]") {
  const Family& fam = family();
  using Shape = std::array<int64_t, 3>;
  for (auto mode : {ScaleMode::tensor, ScaleMode::row, ScaleMode::block})
    for (Shape sh : {Shape{4096, 4096, 4096}, Shape{8192, 8192, 8192}, Shape{256, 4096, 4096}, Shape{256, 12288, 4096},
                     Shape{1, 4096, 4096}, Shape{64, 4096, 4096}, Shape{33, 64, 4096}, Shape{4096, 4096, 16},
                     Shape{1100, 1544, 784}}) {
      Problem p = test::fp8_problem(sh[0], sh[1], sh[2], mode);
      Space s = fam.space(p, kHopper);
      INFO(p.key() << " " << s.name(s.default_config()));
      auto why = fam.refusal(p, s.default_config(), kHopper);
      CHECK_FALSE(why);
      if (why) WARN(why->why);
      const auto sug = fam.suggest(p, kHopper, 64, s.dims());
      CHECK(sug.size() >= 2);
      for (auto& c : sug) CHECK_FALSE(fam.refusal(p, c, kHopper));
      if (mode == ScaleMode::block) CHECK(test::define_of(*fam.build(p, s.default_config(), kHopper, nullptr), "INFLIGHT") == "0");
    }
  auto default_of = [&](const Problem& p) {
    Space s = fam.space(p, kHopper);
    return s.name(s.default_config());
  };
  CHECK_THAT(default_of(test::fp8_problem(4096, 4096, 4096, ScaleMode::row)),
             Catch::Contains("_bm128_bn256_") && Catch::Contains("_cluster2x1_"));
  // Block scales at 4096^3: 128x192 (704 tiles, 5.3 rounds of 132) over 128x128 (1024, 7.8).
  CHECK_THAT(default_of(test::fp8_problem(4096, 4096, 4096, ScaleMode::block)),
             Catch::Contains("_bm128_bn192_") && Catch::Contains("_consumers2_") && Catch::Contains("_inflight0_"));
}

TEST_CASE("wgmma_tma: FP8 builds compile for sm_90a, every scale mode and type pair", "[compile][wgmma_tma][fp8]") {
  const Family& fam = family();
  test::CompileSample sample(fam);
  struct Job {
    ScaleMode mode;
    DType a, b, out;
    const char* config;
  };
  const std::vector<Job> jobs = {
      {ScaleMode::tensor, DType::e4m3, DType::e4m3, DType::bf16, "bm=64,bn=64,consumers=1,stages=2,cluster=1x1"},
      {ScaleMode::tensor, DType::e5m2, DType::e4m3, DType::f32, "bm=256,bn=128,stages=4,cluster=1x2"},
      {ScaleMode::row, DType::e4m3, DType::e5m2, DType::f16, "bm=128,bn=192,stages=4,inflight=0,cluster=1x1"},
      {ScaleMode::row, DType::e4m3, DType::e4m3, DType::bf16, "bm=64,bn=256,consumers=2,wg=n,stages=5,cluster=4x1"},
      {ScaleMode::row, DType::e4m3, DType::e4m3, DType::f32, "bm=128,bn=128,consumers=2,wg=n,stages=6,cluster=1x4,split=2"},
      {ScaleMode::block, DType::e4m3, DType::e4m3, DType::bf16, "bm=128,bn=128,consumers=2,wg=n,stages=6,inflight=0"},
      {ScaleMode::block, DType::e5m2, DType::e4m3, DType::f32, "bm=128,bn=192,stages=3,inflight=0,cluster=1x4"},
      {ScaleMode::block, DType::e4m3, DType::e5m2, DType::f16, "bm=64,bn=64,consumers=1,stages=8,inflight=0,cluster=4x1,split=3"},
  };
  for (auto& j : jobs) {
    Problem p = test::fp8_problem(4096, 4096, 4096, j.mode, j.out, j.a, j.b);
    REQUIRE(sample.add(p, cfg(fam.space(p, kHopper), j.config), "sm_90").empty());
  }
  for (auto& j : sample.results()) {
    INFO(j.what << "\n" << j.result.log);
    REQUIRE(j.result.ok);
    CHECK(j.result.res.spill_stores == 0);
    CHECK(j.result.res.spill_loads == 0);
    const Resources elf = cubin_resources(j.result.cubin);
    CHECK(elf.stack_bytes == 0);
    CHECK(elf.spill_stores == 0);
  }
}

TEST_CASE("wgmma_tma: FP8's default and every suggestion's SASS issues QGMMA of its types, spills nothing and fits "
          "setmaxnreg",
          "[compile][wgmma_tma][sass][fp8]") {
  const std::string tool = test::require_cuobjdump();
  const Family& fam = family();
  test::CompileSample sample(fam);
  struct Queued {
    std::string qgmma;  // the instruction's type suffix, e.g. ".F32.E4M3.E5M2"
    bool block, tma_store;
    int consumer_regs;
  };
  std::vector<Queued> queued;
  std::set<std::string> seen;
  const std::vector<Problem> problems = {
      test::fp8_problem(4096, 4096, 4096, ScaleMode::tensor),
      test::fp8_problem(4096, 4096, 4096, ScaleMode::row, DType::f16, DType::e4m3, DType::e5m2),
      test::fp8_problem(4096, 4096, 4096, ScaleMode::block),
      test::fp8_problem(256, 4096, 4096, ScaleMode::block, DType::f32, DType::e5m2, DType::e4m3),
      test::fp8_problem(256, 12288, 4096, ScaleMode::row),
  };
  for (auto& p : problems) {
    Space s = fam.space(p, kHopper);
    std::vector<Config> cs = {s.default_config()};
    for (auto& c : fam.suggest(p, kHopper, 64, s.dims())) cs.push_back(c);
    // The busiest builds: 2x2 clusters (producer 56, consumers 224) with the widest tiles.
    cs.push_back(cfg(s, p.scale == ScaleMode::block ? "bm=128,bn=192,stages=4,inflight=0,cluster=2x2"
                                                    : "bm=128,bn=256,stages=4,cluster=2x2"));
    for (auto& c : cs) {
      auto ks = fam.build(p, c, kHopper, nullptr);
      REQUIRE(ks);
      std::string key = p.key();
      for (auto& o : ks->options) key += " " + o;
      if (!seen.insert(key).second) continue;
      REQUIRE(sample.add(p, c, "sm_90").empty());
      const std::string ta = p.in == DType::e5m2 ? "E5M2" : "E4M3", tb = p.in_b == DType::e5m2 ? "E5M2" : "E4M3";
      queued.push_back({".F32." + ta + "." + tb, p.scale == ScaleMode::block, test::define_of(*ks, "EPILOGUE_TMA") == "1",
                        reg_option(*ks, "CONSUMER_REGS")});
    }
  }
  CHECK(queued.size() >= 20);
  size_t n = 0;
  int highest_seen = 0;
  std::string summary;  // per build: its highest register, QGMMA shape and integer work per QGMMA
  for (auto& j : sample.results()) {
    const Queued& q = queued.at(n++);
    INFO(j.what << "\n" << j.result.log);
    test::CompileSample::check_no_local_memory(j);
    CHECK_THAT(j.result.log, !Catch::Contains("C7508"));  // setmaxnreg ignored
    const std::string sass = test::sass_of(j.result.cubin, tool);
    // FP8 wgmma is QGMMA (HGMMA is the 16-bit one): QGMMA.64x<N>x32.F32.<A>.<B>.
    static const std::regex qgmma(R"(QGMMA\.64x(\d+)x32(\.F32\.E[45]M[23]\.E[45]M[23]))");
    std::smatch m;
    REQUIRE(std::regex_search(sass, m, qgmma));
    CHECK(m[2].str() == q.qgmma);
    CHECK_THAT(sass, !Catch::Contains("HGMMA"));
    CHECK_THAT(sass, Catch::Contains("USETMAXREG"));
    CHECK_THAT(sass, Catch::Contains("UTMALDG"));
    if (q.tma_store) CHECK_THAT(sass, Catch::Contains("UTMASTG"));
    CHECK_THAT(sass, !Catch::Contains("LDL") && !Catch::Contains("STL"));
    const int highest = highest_register(sass);
    highest_seen = std::max(highest_seen, highest);
    CHECK(highest < q.consumer_regs);
    char line[96];
    std::snprintf(line, sizeof line, "R%d of %d, QGMMA.64x%sx32, %.2f int/QGMMA: ", highest, q.consumer_regs,
                  m[1].str().c_str(), vector_int_ops_per_hgmma(sass, "QGMMA"));
    summary += line + j.what + "\n";
    // Block scales' loop also steps its scale pointers, checks them and moves the next block's
    // scales into place: about 10 to 18 integer instructions a stage, shared by only four QGMMA
    // where a consumer has one m64 tile (4.5 each in 128x192), still a third of 1.3's 13.
    CHECK(vector_int_ops_per_hgmma(sass, "QGMMA") <= (q.block ? 6.0 : 4.0));
    if (q.block) CHECK_THAT(sass, Catch::Contains("FFMA"));  // the promotion
  }
  WARN("FP8 builds checked: " << n << ", highest register " << highest_seen << "\n" << summary);
}

TEST_CASE("wgmma_tma: core encodes FP8 operands' tensor maps as bytes", "[wgmma_tma][fp8]") {
  // The kernel's boxes are 128 FP8 elements (128 bytes) along K. Core must encode A and B as
  // one-byte elements (CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0), or cuTensorMapEncodeTiled sees 4-byte
  // elements and 512-byte box rows under a 128-byte swizzle and fails on the GPU (it did before
  // b8eaa41: core's data_type_of had no FP8 case).
  Problem p = test::fp8_problem(4096, 4096, 4096, ScaleMode::tensor, DType::bf16, DType::e4m3, DType::e5m2);
  Space s = family().space(p, kHopper);
  auto ks = family().build(p, s.default_config(), kHopper, nullptr);
  REQUIRE(ks);
  for (size_t i = 0; i < 2; ++i) {
    Refused why;
    auto shape = tensor_map_shape(p, ks->tensor_maps[i], &why);
    INFO("operand " << i << ": " << why.why);
    REQUIRE(shape);
    CHECK(shape->element_bytes == 1);
    CHECK(shape->data_type == 0);  // CU_TENSOR_MAP_DATA_TYPE_UINT8
  }
}

TEST_CASE("wgmma_tma FP8 is correct with tensor, row and block scales at edge tiles and mixed types",
          "[gpu][wgmma_tma][fp8]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  const gt_device d = device_info(0).limits;
  // K a multiple of 16 (FP8 rows 16 bytes apart) and not of 128 (a partial last k block: TMA's
  // zero fill, and a block scale for it); M and N not multiples of the tiles; N not a multiple
  // of 128 (a partial column block of B's block scales); tiles whose columns start mid-block
  // (bn = 192, consumers side by side); one row of tiles; several rounds of a persistent grid.
  using Shape = std::array<int64_t, 3>;
  const std::vector<Shape> shapes = {{1100, 1544, 784}, {300, 1000, 1008}, {256, 2048, 4096}, {64, 520, 4112},
                                     {2000, 2056, 336}, {1, 1032, 528}};
  const std::vector<std::string> tensor_row = {
      "",  // the default
      "bm=128,bn=256,stages=4,cluster=2x1,persistent=yes",
      "bm=128,bn=256,stages=4,cluster=1x2,persistent=no,raster=n,group=4",
      "bm=256,bn=128,stages=4,cluster=2x1,persistent=yes,split=3",
      "bm=64,bn=128,consumers=1,stages=8,cluster=4x1,persistent=no",
      "bm=64,bn=256,consumers=2,wg=n,stages=5,cluster=1x4,persistent=yes,split=2",
      "bm=128,bn=192,stages=4,inflight=0,cluster=1x1,persistent=yes,group=16",
      "bm=128,bn=256,stages=4,cluster=2x2,persistent=yes",
  };
  const std::vector<std::string> block = {
      "",
      "bm=128,bn=128,stages=6,inflight=0,cluster=2x1,persistent=yes",
      "bm=128,bn=192,stages=4,inflight=0,cluster=1x2,persistent=no,raster=n",
      "bm=64,bn=256,consumers=2,wg=n,stages=4,inflight=0,cluster=2x1,split=2",
      "bm=128,bn=192,stages=3,inflight=0,cluster=1x1,persistent=yes,group=4",
      "bm=128,bn=128,consumers=2,wg=n,stages=6,inflight=0,cluster=1x1,split=3",
      "bm=64,bn=128,consumers=1,stages=8,inflight=0,cluster=4x1,persistent=no",
      "bm=128,bn=192,stages=4,inflight=0,cluster=2x2,persistent=yes",
  };
  auto jobs = test::fp8_jobs(fam, d, {ScaleMode::tensor, ScaleMode::row, ScaleMode::block}, shapes,
                             [&](ScaleMode mode) { return mode == ScaleMode::block ? block : tensor_row; });
  // Of the 144 (problem, config) pairs the device refuses some (on an H100: 104 run, session 22),
  // so the floor only guards against a space that refuses most of them.
  INFO(jobs.size() << " checks");
  CHECK(jobs.size() >= 100);
  test::check_correct(fam, jobs);
}

TEST_CASE("wgmma_tma FP8: split-K's counters reset launch after launch with block scales", "[gpu][wgmma_tma][fp8]") {
  GT_REQUIRE_GPU();
  const DeviceInfo dev = device_info(0);
  Problem p = test::fp8_problem(1100, 1544, 784, ScaleMode::block);
  Compiler compiler(nullptr);
  ProblemBench bench(p, dev, Distribution::normal, 7);
  for (const char* c : {"bm=128,bn=128,stages=6,inflight=0,cluster=2x1,persistent=yes,split=3",
                        "bm=64,bn=64,consumers=1,stages=6,inflight=0,cluster=1x1,persistent=no,split=4"}) {
    INFO(c);
    Built b = runnable(p, dev, c, compiler);
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

TEST_CASE("wgmma_tma: every FP8 build of a row-scaled and a block-scaled problem compiles (slow)",
          "[.][compile][wgmma_tma][fp8][fp8-all]") {
  // Hidden (run it by tag, "[fp8-all]", one mode with -c block or -c row): `gemmtune compile`
  // builds a problem's whole space but takes no scale mode yet, so this does the same for row
  // and block scales (about 10 and 4 minutes on two cores).
  const Family& fam = family();
  auto compile_all = [&](ScaleMode mode) {
    test::CompileSample sample(fam);
    Problem p = test::fp8_problem(4096, 4096, 4096, mode, DType::bf16, DType::e4m3, DType::e5m2);
    Space s = fam.space(p, kHopper);
    std::set<std::vector<std::string>> builds;  // configs that differ only in launch values share one
    for (uint64_t i = 0; i < s.raw_size(); ++i) {
      Config c = s.at(i);
      if (!s.valid(c)) continue;
      auto ks = fam.build(p, c, kHopper, nullptr);
      if (ks && builds.insert(ks->options).second) REQUIRE(sample.add(p, c, "sm_90").empty());
    }
    size_t n = 0;
    for (auto& j : sample.results()) {
      ++n;
      INFO(j.what << "\n" << j.result.log);
      CHECK(j.result.ok);
      CHECK(j.result.res.spill_stores == 0);
      CHECK(j.result.res.stack_bytes == 0);
    }
    WARN(to_string(mode) << ": " << n << " builds compiled");
  };
  SECTION("block") { compile_all(ScaleMode::block); }
  SECTION("row") { compile_all(ScaleMode::row); }
}

// ---------------------------------------------------------------------------------------
// 1.10: the masked epilogue (issue 55). Where only C is misaligned (plugin ABI v4's align_c:
// an odd ldc, as at the LM heads, or C's pointer), TMA still reads A and B, and C is written in
// place from registers: pairs of elements where C allows them, else one by one (C_PAIRS=0).

namespace {
// A problem whose pointers are as given (each operand's own, as the runtime takes a call's).
Problem with_pointers(Problem p, uintptr_t a, uintptr_t b, uintptr_t c) {
  p.align = alignment_of(p, a, b, c);
  p.pointer_align = alignment_of_pointers(a, b, c);
  p.operand_pointer_align = {alignment_of_pointers(a, 0, 0), alignment_of_pointers(b, 0, 0),
                             alignment_of_pointers(c, 0, 0)};
  return p;
}
}  // namespace

TEST_CASE("wgmma_tma 1.10: where only C is misaligned it writes C in place; misaligned A or B is refused",
          "[wgmma_tma][mask]") {
  const Family& fam = family();
  CHECK(fam.version() == "1.10");
  const Problem head = Problem::make(1024, 50257, 768, DType::bf16, DType::bf16, Layout::nt);
  const Problem decode = Problem::make(1, 32001, 4096, DType::bf16, DType::bf16, Layout::nt);
  const Problem small = Problem::make(256, 1001, 512, DType::f16, DType::f16, Layout::nt);
  for (const Problem& p : {head, decode, small}) {
    INFO(p.key());
    REQUIRE(p.align == 2);
    Space s = fam.space(p, kHopper);
    auto why = fam.refusal(p, s.default_config(), kHopper);
    CHECK_FALSE(why);
    const std::vector<Config> suggested = fam.suggest(p, kHopper, 64, s.dims());
    CHECK(suggested.size() >= 3);
    for (const Config& c : suggested) {
      auto ks = fam.build(p, c, kHopper, nullptr);
      REQUIRE(ks);
      CHECK(test::define_of(*ks, "C_PAIRS") == "0");       // 2-byte C: one element a store
      CHECK(test::define_of(*ks, "EPILOGUE_TMA") == "0");  // no TMA store into a misaligned C ...
      REQUIRE(ks->tensor_maps.size() == 2);       // ... and no tensor map of it: A and B only
      CHECK(ks->tensor_maps[0].operand == GT_OPERAND_A);
      CHECK(ks->tensor_maps[1].operand == GT_OPERAND_B);
    }
  }
  // C aligned to two elements (ldc 1002, 4 bytes): pairs, still no TMA store.
  auto pairs = fam.build(Problem::make(256, 1002, 512, DType::bf16, DType::bf16, Layout::nt),
                         fam.space(Problem::make(256, 1002, 512, DType::bf16, DType::bf16, Layout::nt), kHopper).default_config(),
                         kHopper, nullptr);
  REQUIRE(pairs);
  CHECK(test::define_of(*pairs, "C_PAIRS") == "");
  CHECK(test::define_of(*pairs, "EPILOGUE_TMA") == "0");
  // An f32 C of odd ldc (4 bytes: no 8-byte pairs) and an FP8 problem's bf16 C.
  for (const Problem& p : {Problem::make(256, 1001, 512, DType::bf16, DType::f32, Layout::nt),
                           Problem::make(256, 1001, 512, DType::e4m3, DType::bf16, Layout::nt)}) {
    INFO(p.key());
    Space s = fam.space(p, kHopper);
    auto ks = fam.build(p, s.default_config(), kHopper, nullptr);
    REQUIRE(ks);
    CHECK(test::define_of(*ks, "C_PAIRS") == "0");
  }
  // C's pointer 2 bytes off, A and B aligned: served the same way.
  const Problem aligned = Problem::make(256, 1024, 512, DType::bf16, DType::bf16, Layout::nt);
  const Config d = fam.space(aligned, kHopper).default_config();
  const Problem c_off = with_pointers(aligned, 0x100000, 0x200000, 0x300002);
  REQUIRE(c_off.align == 2);
  CHECK_FALSE(fam.refusal(c_off, d, kHopper));
  // The aligned problem's build is as before 1.10: no C_PAIRS define (its build hash unchanged).
  auto plain = fam.build(aligned, d, kHopper, nullptr);
  REQUIRE(plain);
  CHECK(test::define_of(*plain, "C_PAIRS") == "");
  // A or B misaligned (TMA reads them): SHAPE, whichever it is, whatever C is.
  for (auto [p, what] : {std::pair{with_pointers(aligned, 0x100002, 0x200000, 0x300000), "A is aligned to 2 bytes"},
                         std::pair{with_pointers(aligned, 0x100000, 0x200008, 0x300000), "and B to 8"},
                         std::pair{with_pointers(head, 0x100004, 0x200000, 0x300000), "A is aligned to 4 bytes"},
                         std::pair{Problem::make(256, 1001, 4097, DType::bf16, DType::bf16, Layout::nt),
                                   "A is aligned to 2 bytes and B to 2"}}) {
    INFO(p.key());
    auto why = fam.refusal(p, d, kHopper);
    REQUIRE(why);
    CHECK(why->code == GT_REFUSAL_SHAPE);
    CHECK_THAT(why->why, Catch::Contains(what) && Catch::Contains("a padded copy would serve it"));
  }
  // Core's own check of a tensor map is per operand too: C's map is refused at 2 bytes, A's not.
  gt_tensor_map_request req{};
  req.rank = 2;
  req.box[0] = 64;
  req.box[1] = 64;
  req.swizzle = 3;
  Refused why;
  req.operand = GT_OPERAND_A;
  CHECK(tensor_map_shape(head, req, &why));
  req.operand = GT_OPERAND_C;
  CHECK_FALSE(tensor_map_shape(c_off, req, &why));
  CHECK(why.code == GT_REFUSAL_SHAPE);
  CHECK_THAT(why.why, Catch::Contains("C is aligned to 2 bytes"));
}

TEST_CASE("wgmma_tma 1.10: the masked epilogue's builds compile for sm_90a, store C by elements and spill nothing",
          "[compile][wgmma_tma][sass][mask]") {
  const std::string tool = test::require_cuobjdump();
  const Family& fam = family();
  test::CompileSample sample(fam);
  std::vector<int> consumer_regs;
  // The LM head's default, the decode row's, a split-K build, an f32 C and FP8 with block scales.
  const Problem head = Problem::make(1024, 50257, 768, DType::bf16, DType::bf16, Layout::nt);
  const Problem decode = Problem::make(1, 32001, 4096, DType::bf16, DType::bf16, Layout::nt);
  const Problem f32c = Problem::make(256, 1001, 512, DType::f16, DType::f32, Layout::nt);
  const Problem fp8 = Problem::make(256, 1001, 512, DType::e4m3, DType::bf16, Layout::nt, std::nullopt, ScaleMode::block);
  std::vector<std::pair<Problem, Config>> builds = {
      {head, fam.space(head, kHopper).default_config()},
      {decode, fam.space(decode, kHopper).default_config()},
      {head, cfg(fam.space(head, kHopper), "bm=128,bn=128,stages=6,cluster=1x2,split=2")},
      {f32c, fam.space(f32c, kHopper).default_config()},
      {fp8, fam.space(fp8, kHopper).default_config()},
  };
  for (auto& [p, c] : builds) {
    auto ks = fam.build(p, c, kHopper, nullptr);
    REQUIRE(ks);
    REQUIRE(test::define_of(*ks, "C_PAIRS") == "0");
    consumer_regs.push_back(std::stoi(test::define_of(*ks, "CONSUMER_REGS")));
    REQUIRE(sample.add(p, c, "sm_90").empty());
  }
  size_t n = 0;
  for (auto& j : sample.results()) {
    INFO(j.what << "\n" << j.result.log);
    test::CompileSample::check_no_local_memory(j);
    CHECK_THAT(j.result.log, !Catch::Contains("C7508"));  // setmaxnreg ignored
    const std::string sass = test::sass_of(j.result.cubin, tool);
    CHECK_THAT(sass, Catch::Contains("GMMA"));     // HGMMA, or QGMMA for FP8
    CHECK_THAT(sass, Catch::Contains("UTMALDG"));  // A and B by TMA
    CHECK_THAT(sass, !Catch::Contains("UTMASTG"));
    CHECK_THAT(sass, !Catch::Contains("LDL") && !Catch::Contains("STL"));
    CHECK(highest_register(sass) < consumer_regs.at(n++));
    // C element by element: 16-bit stores for a 16-bit C, and no 64-bit ones for an f32 C.
    if (j.what.find("f32 nt") != std::string::npos) CHECK_THAT(sass, !Catch::Contains("STG.E.64"));
    else CHECK_THAT(sass, Catch::Contains("STG.E.U16"));
  }
}

TEST_CASE("wgmma_tma 1.10 writes a misaligned C in place, correct against float64", "[gpu][wgmma_tma][mask]") {
  GT_REQUIRE_GPU();
  const Family& fam = family();
  const gt_device d = device_info(0).limits;
  // ldc odd (C 2 bytes, f32 C 4), A and B aligned: the LM heads' shape class and small edges.
  std::vector<std::pair<Problem, Config>> jobs;
  for (const Problem& p : {Problem::make(256, 1001, 512, DType::bf16, DType::bf16, Layout::nt),
                           Problem::make(1, 32001, 4096, DType::bf16, DType::bf16, Layout::nt),
                           Problem::make(1, 32001, 4096, DType::f16, DType::f16, Layout::nt),
                           Problem::make(300, 1001, 520, DType::f16, DType::f32, Layout::nt),
                           Problem::make(256, 1002, 512, DType::bf16, DType::bf16, Layout::nt),
                           Problem::make(256, 1001, 512, DType::e4m3, DType::bf16, Layout::nt),
                           Problem::make(130, 1001, 4096, DType::e4m3, DType::f16, Layout::nt, std::nullopt,
                                         ScaleMode::block)}) {
    Space s = fam.space(p, d);
    jobs.emplace_back(p, s.default_config());
    for (const char* v : {"bm=128,bn=128,stages=6,cluster=1x2,split=2", "bm=64,bn=128,consumers=1,stages=6,cluster=1x1"}) {
      Config c = cfg(s, v);
      if (!fam.refusal(p, c, d)) jobs.emplace_back(p, c);
    }
  }
  CHECK(jobs.size() >= 14);
  test::check_correct(fam, jobs);
}
