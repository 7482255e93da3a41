// The cublaslt family without a GPU: it loads, carries the cuBLASLt version in its version and
// provenance, lists itself, refuses what it cannot check, and describes configs from their
// attributes; a second build of it against a host-only stand-in of cuBLASLt shows its mapping
// of every layout and dtype, its space, picks, refusals and round trips. On a GPU:
// test_family_cublaslt_gpu.cpp.
#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "measure/measure_service.hpp"
#include "table/table.hpp"
#include "tune/tuner.hpp"
#include "test_util.hpp"
#include "families/cublaslt_fixtures.hpp"

#include <catch2/catch.hpp>
#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <regex>
#include <set>

using namespace gt;

using namespace gt::cublaslt_test;

namespace {

std::string lt_digits(const Family& f) {
  std::smatch m;
  std::string v = f.version();
  REQUIRE(std::regex_match(v, m, std::regex(R"(1\.0\+cublasLt(\d+))")));
  return m[1];
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Without a GPU.

TEST_CASE("cublaslt loads and names its cuBLASLt version", "[plugins][cublaslt]") {
  auto reg = PluginRegistry::load({test::plugin_dir()});
  const Family* f = reg.find("cublaslt");
  REQUIRE(f);
  CHECK(f->is_library());
  std::string digits = lt_digits(*f);
  CHECK(std::stoi(digits) / 10000 == CUBLAS_VER_MAJOR);  // the library it loaded is the one it was built for
  CHECK_THAT(f->provenance(), Catch::Contains("cuBLASLt " + digits) && Catch::Contains("libcublasLt"));
  CHECK_THAT(f->summary(), Catch::Contains("cuBLASLt " + std::to_string(std::stoi(digits) / 10000) + "."));
  CHECK(f->source_hash() != 0);
  const gt_plugin* abi = f->abi();
  CHECK(abi->build_kernel == nullptr);
  CHECK(abi->suggest != nullptr);
  CHECK(abi->describe_config != nullptr);
}

TEST_CASE("gemmtune list shows the cublaslt family with or without a GPU", "[plugins][cublaslt]") {
  std::string cmd = test::gemmtune_binary().string() + " --plugin-dir " + test::plugin_dir().string();
  auto r = test::run_command(cmd + " list --family cublaslt --dtype f16 --shape 256x128x64");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("cublaslt 1.0+cublasLt") && Catch::Contains("cuBLASLt " + std::to_string(CUBLAS_VER_MAJOR) + "."));
  if (test::have_gpu()) {
    CHECK_THAT(r.out, Catch::Contains("raw space:") && Catch::Contains("tile") && Catch::Contains("valid for"));
  } else {
    CHECK_THAT(r.out, Catch::Contains("needs a GPU to query cuBLASLt's algorithms"));
  }
  auto j = test::run_command(cmd + " --json list --family cublaslt");
  INFO(j.out);
  CHECK(j.exit_code == 0);
  CHECK_THAT(j.out, Catch::Contains("\"provenance\": \"cuBLASLt "));
}

TEST_CASE("cublaslt answers can_implement and describes configs without a GPU", "[plugins][cublaslt]") {
  const Family& f = cublaslt();
  Problem p = Problem::make(512, 256, 128, DType::f16, DType::f16, Layout::tn);
  gt_device d = arch_limits("sm_90");
  auto arity = f.can_implement(p, {1, 2, 3}, d);
  REQUIRE(arity);
  CHECK_THAT(*arity, Catch::Contains("3 values"));
  if (!test::have_gpu()) {
    Config c = {21, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    auto why = f.can_implement(p, c, d);
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("needs a GPU to query cuBLASLt's algorithms"));
    CHECK_THROWS_AS(f.space(p, d), RuntimeFailure);
  }
  // Attribute values from cuBLASLt's own enums, named by the plugin's generated tables.
  Config c = {21,
              CUBLASLT_MATMUL_TILE_128x256,
              CUBLASLT_MATMUL_STAGES_64x4,
              4,
              CUBLASLT_REDUCTION_SCHEME_INPLACE,
              1,
              2,
              CUBLASLT_CLUSTER_SHAPE_2x1x1,
              CUBLASLT_MATMUL_INNER_SHAPE_MMA16816,
              int64_t(32) << 20};
  std::string s = f.describe(p, c);
  INFO(s);
  CHECK_THAT(s, Catch::Contains("algo 21: tile 128x256, stages 64x4, split-K 4 (reduction inplace), CTA swizzle on, "
                                "custom option 2, cluster 2x1x1, inner shape mma16816, workspace up to 32 MiB"));
  c[kTile] = CUBLASLT_MATMUL_TILE_64x96;
  c[kStages] = CUBLASLT_MATMUL_STAGES_128xAUTO;
  c[kSplitK] = 1;
  c[kReduction] = CUBLASLT_REDUCTION_SCHEME_NONE;
  c[kCluster] = CUBLASLT_CLUSTER_SHAPE_AUTO;
  c[kInner] = CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED;
  c[kWorkspace] = 0;
  s = f.describe(p, c);
  CHECK_THAT(s, Catch::Contains("tile 64x96, stages 128xauto, split-K 1, CTA swizzle on") &&
                    Catch::Contains("cluster auto, inner shape undef, workspace up to 0 B"));
  c[kTile] = 99999;  // a tile newer than this build's header keeps its number
  CHECK_THAT(f.describe(p, c), Catch::Contains("tile 99999,"));
}

// ---------------------------------------------------------------------------------------
// The plugin's own logic, without a GPU: a second build of it is linked against a host-only
// stand-in for cuBLASLt (plugins/cublaslt/testing/cublaslt_standin.cpp) whose GEMM follows
// cuBLASLt's column-major semantics. What it shows is the plugin's side: the mapping of
// every layout, dtype and leading dimension, the space, the picks, refusals, round trips.

namespace {
const PluginRegistry& standin_registry() {
  static PluginRegistry reg = PluginRegistry::load({test::plugin_dir() / "cublaslt" / "standin"});
  return reg;
}
const Family& standin() { return standin_registry().get("cublaslt"); }

// Small integers, exact in every input type (and in tf32), as raw element bits.
std::vector<uint8_t> small_ints(DType t, size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> out(n * size_of(t));
  for (size_t i = 0; i < n; ++i) {
    float v = float(int(rng() % 9) - 4);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (t == DType::f16) {
      uint16_t h = v == 0 ? 0 : uint16_t((bits >> 16 & 0x8000) | (((bits >> 23 & 0xff) - 112) << 10) | (bits >> 13 & 0x3ff));
      std::memcpy(&out[i * 2], &h, 2);
    } else if (t == DType::bf16) {
      uint16_t h = uint16_t(bits >> 16);
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      std::memcpy(&out[i * 4], &bits, 4);
    }
  }
  return out;
}
double element(DType t, const std::vector<uint8_t>& buf, size_t i) {
  uint32_t bits = 0;
  if (t == DType::f16) {
    uint16_t h;
    std::memcpy(&h, &buf[i * 2], 2);
    uint32_t exp = h >> 10 & 0x1f;
    if (exp == 0x1f) return std::nan("");
    bits = exp == 0 ? uint32_t(h & 0x8000) << 16 : uint32_t(h & 0x8000) << 16 | (exp + 112) << 23 | uint32_t(h & 0x3ff) << 13;
  } else if (t == DType::bf16) {
    uint16_t h;
    std::memcpy(&h, &buf[i * 2], 2);
    bits = uint32_t(h) << 16;
  } else {
    std::memcpy(&bits, &buf[i * 4], 4);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

TEST_CASE("the plugin maps every layout, dtype and leading dimension onto cuBLASLt (stand-in)", "[plugins][cublaslt]") {
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  std::mt19937_64 rng(5);
  std::vector<std::pair<DType, DType>> types = {{DType::f32, DType::f32}, {DType::tf32, DType::f32},
                                                {DType::f16, DType::f16}, {DType::bf16, DType::bf16},
                                                {DType::f16, DType::f32}, {DType::bf16, DType::f32}};
  int runs = 0, split_runs = 0, workspace_runs = 0;
  for (std::array<int64_t, 3> sh : {std::array<int64_t, 3>{1, 1, 1}, {7, 13, 17}, {33, 20, 9}, {16, 48, 64}})
    for (auto [in, out] : types)
      for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt})
        for (int64_t pad : {0, 3}) {
          Problem p = Problem::make(sh[0], sh[1], sh[2], in, out, lay);
          p.lda += pad;
          p.ldb += pad;
          p.ldc += pad;
          p.align = alignment_of(p);
          INFO(p.key() << " lda " << p.lda << " ldb " << p.ldb << " ldc " << p.ldc);
          Space s = f.space(p, d);
          auto picks = f.suggest(p, d, 32, s.dims());
          REQUIRE_FALSE(picks.empty());
          CHECK(picks.front() == s.default_config());
          auto a = small_ints(in, size_t(p.a_rows()) * size_t(p.lda), rng);
          auto b = small_ints(in, size_t(p.b_rows()) * size_t(p.ldb), rng);
          for (const Config& c : picks) {
            INFO(s.name(c));
            auto why = f.can_implement(p, c, d);
            CHECK_FALSE(why);
            Refused refused;
            auto op = f.create_op(p, c, &refused);
            INFO(refused.why);
            REQUIRE(op);
            std::vector<uint8_t> cbuf(p.bytes_c(), 0xff);  // NaN in every type: each element must be written
            std::vector<uint8_t> ws(size_t(op->workspace_bytes()) + 16);
            op->run(a.data(), b.data(), cbuf.data(), nullptr, ws.data(), op->workspace_bytes(), nullptr);
            ++runs;
            split_runs += c[kSplitK] > 1;
            workspace_runs += op->workspace_bytes() > 0;
            // Each output rounds once; the sums of small integers are exact before that.
            double rel = out == DType::f16 ? 1.0 / 2048 : out == DType::bf16 ? 1.0 / 256 : 0.0;
            int wrong = 0;
            for (int64_t i = 0; i < p.m; ++i)
              for (int64_t j = 0; j < p.n; ++j) {
                double ref = 0;
                for (int64_t l = 0; l < p.k; ++l) {
                  double x = element(in, a, size_t(p.a_trans() ? l * p.lda + i : i * p.lda + l));
                  double y = element(in, b, size_t(p.b_trans() ? j * p.ldb + l : l * p.ldb + j));
                  ref += x * y;
                }
                double got = element(out, cbuf, size_t(i * p.ldc + j));
                if (!(std::fabs(got - ref) <= rel * std::fabs(ref))) ++wrong;
              }
            CHECK(wrong == 0);
          }
        }
  CHECK(runs >= 2 * 4 * 6 * 4 * 2);  // two picks or more per problem on average
  CHECK(split_runs > 0);
  CHECK(workspace_runs > 0);
}

TEST_CASE("a stored row's heuristic rank is its config's place among the library's suggestions (stand-in)",
          "[plugins][cublaslt][store]") {
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  Problem p = Problem::make(64, 48, 40, DType::f32, DType::f32, Layout::nn);
  Space s = f.space(p, d);
  auto picks = f.suggest(p, d, 32, s.dims());
  REQUIRE(picks.size() >= 2);
  // The stand-in's heuristic ranks first a pick that cannot be re-created; the first it can
  // build is the pick the family offers (its default, compare's "cublaslt (pick)"): rank 0 here,
  // though its description names the heuristic's own position, 1.
  CHECK(search::library_rank(&f, p, picks[0], d) == 0);
  CHECK(picks[0] == s.default_config());
  CHECK_THAT(f.describe(p, picks[0]), Catch::Contains("heuristic rank 1"));
  CHECK(search::library_rank(&f, p, picks[1], d) == 1);
  std::optional<Config> outside;
  for (uint64_t i = 0; i < s.raw_size() && !outside; ++i)
    if (Config c = s.at(i); s.valid(c) && !in(picks, c)) outside = c;
  REQUIRE(outside);
  CHECK(search::library_rank(&f, p, *outside, d) == -1);
  // A source family ranks nothing, whatever it suggests.
  const Family& naive = test::plugins().get("naive");
  Space ns = naive.space(p, d);
  CHECK_FALSE(search::library_rank(&naive, p, ns.default_config(), d));
  // A row the tuner stores: the rank as data; a replayed row (no plugin to ask) takes its
  // recording's words, a measured one never does.
  StoredRow r;
  r.config = picks[1];
  r.m.message = "cuBLASLt 13.1.0 algo 21; heuristic rank 0 (cuBLASLt's pick)";
  search::note_rank(r, &f, p, d);
  CHECK(r.heuristic_rank == 1);
  search::note_rank(r, nullptr, p, d);
  CHECK_FALSE(r.heuristic_rank);
  r.replay = true;
  search::note_rank(r, nullptr, p, d);
  CHECK(r.heuristic_rank == 0);
}

TEST_CASE("tf32 inputs are refused with a 16-bit output, as cuBLASLt's type table has it (stand-in)",
          "[plugins][cublaslt]") {
  // Seen on the H200: one of the heuristic's algorithms for tf32 -> f16 at 1000x1504x776 (algo
  // 21, tile 64x64) ran into an illegal address. TF32 compute writes f32 C and D only.
  const Family& f = standin();
  const gt_device d = arch_limits("sm_90");
  for (DType out : {DType::f16, DType::bf16}) {
    Problem p = Problem::make(1000, 1504, 776, DType::tf32, out, Layout::nn);
    CHECK_THROWS_WITH(f.space(p, d), Catch::Contains("tf32 inputs into f32 output only"));
  }
  Problem ok = Problem::make(1000, 1504, 776, DType::tf32, DType::f32, Layout::nn);
  Space s = f.space(ok, d);
  CHECK_FALSE(f.refusal(ok, s.default_config(), d));
}

TEST_CASE("the plugin's space, picks and refusals (stand-in)", "[plugins][cublaslt]") {
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  Problem aligned = Problem::make(64, 48, 40, DType::f32, DType::f32, Layout::nn);
  Space s = f.space(aligned, d);
  auto picks = f.suggest(aligned, d, 32, s.dims());
  // The heuristic's first pick cannot be re-created from its attributes: it is left out,
  // and the next one is the default.
  REQUIRE(picks.size() == 5);
  CHECK(s.name(picks[0]) ==
        "cublaslt_algo66_tile128x256_stages128xauto_split_k1_reductionnone_swizzle0_custom0_cluster2x1x1_innerundef_"
        "workspace32MiB");
  CHECK_THAT(f.describe(aligned, picks[0]), Catch::Contains("heuristic rank 1, needs 1 KiB of workspace"));
  // A reduction scheme without split-K is spelled reduction=none.
  CHECK(s.assignments(picks[1]) ==
        "algo=21,tile=128x256,stages=32x3,split_k=1,reduction=none,swizzle=1,custom=0,cluster=auto,inner=undef,"
        "workspace=0");
  // The heuristic's split-K 3 is in the space though the space's own values are powers of two.
  CHECK(s.params()[kSplitK].index_of(3));
  CHECK(s.params()[kSplitK].index_of(16));

  auto refusal = [&](const std::string& assignments) {
    std::string err;
    auto c = s.parse(assignments, &err);
    INFO(assignments << ": " << err);
    REQUIRE(c);
    auto why = f.can_implement(aligned, *c, d);
    Refused op_why;
    auto op = f.create_op(aligned, *c, &op_why);
    CHECK((why ? *why : std::string()) == op_why.why);
    CHECK(bool(why) == !op);
    return why.value_or("accepted");
  };
  CHECK(refusal("algo=21,tile=256x128,stages=32x3,cluster=auto,workspace=0") == "accepted");
  CHECK(refusal("algo=21,tile=256x128,stages=64x4,cluster=auto,workspace=0") ==
        "cublasLtMatmulAlgoCheck rejects it: CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not "
        "supported (stand-in))");
  CHECK_THAT(refusal("algo=6,tile=256x128,stages=32x3,cluster=auto"),
             Catch::Contains("algorithm 6 has no tile 256x128 (its tiles: 64x64, 64x128, 128x64, 128x128)"));
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,reduction=inplace"),
             Catch::Contains("reduction=inplace acts only with split_k > 1"));
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,split_k=4"),
             Catch::Contains("split_k=4 needs a reduction scheme"));
  CHECK_THAT(refusal("algo=6,tile=128x128,stages=32x3,cluster=auto,split_k=4,reduction=out_of_place_output"),
             Catch::Contains("algorithm 6 does not support reduction out_of_place_output"));
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,split_k=4,reduction=inplace,workspace=0"),
             Catch::Contains("needs 4 KiB of workspace; workspace=0 allows less"));
  CHECK(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,split_k=4,reduction=inplace,workspace=32MiB") ==
        "accepted");
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,workspace=32MiB"),
             Catch::Contains("needs only 0 B of workspace (the same algorithm is workspace=0)"));
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=2x1x1,workspace=0"),
             Catch::Contains("algorithm 21 is not known to take cluster 2x1x1"));
  CHECK_THAT(refusal("algo=66,tile=128x128,stages=64xauto,cluster=1x2x1"), Catch::Contains("accepted"));
  CHECK_THAT(refusal("algo=6,tile=128x128,stages=32x3,cluster=auto,swizzle=1"),
             Catch::Contains("algorithm 6 does not support CTA swizzling"));
  CHECK_THAT(refusal("algo=21,tile=128x128,stages=32x3,cluster=auto,custom=3"),
             Catch::Contains("algorithm 21 takes custom options 0..0"));
  Config bad = picks[0];
  bad[kAlgo] = 5;
  CHECK_THAT(*f.can_implement(aligned, bad, d), Catch::Contains("algo=5 is not in this problem's space"));

  // The space's size and its valid part.
  // algo 4 x tile 7 x stages 7 x split_k 6 x reduction 4 x swizzle 2 x custom 4 x cluster 7 x inner 2 x workspace 2
  CHECK(s.raw_size() == 4ull * 7 * 7 * 6 * 4 * 2 * 4 * 7 * 2 * 2);
  uint64_t valid = s.count_valid();
  CHECK(valid > picks.size());
  CHECK(valid < s.raw_size() / 100);

  // A problem whose alignment rules out the 16-byte algorithm: the heuristic's first pick is the default.
  Problem odd = Problem::make(7, 13, 17, DType::f16, DType::f16, Layout::tn);
  Space so = f.space(odd, d);
  CHECK_FALSE(so.params()[kAlgo].index_of(66));
  CHECK_THAT(f.describe(odd, so.default_config()), Catch::Contains("heuristic rank 0 (cuBLASLt's pick)"));

  // What cuBLASLt cannot do is refused with its reason.
  Problem mixed = Problem::make(64, 64, 64, DType::f32, DType::f16, Layout::nn);
  CHECK_THROWS_WITH(f.space(mixed, d), Catch::Contains("cuBLASLt has no algorithm for f32 inputs with f16 output"));
  CHECK_THAT(*f.can_implement(mixed, picks[0], d), Catch::Contains("cuBLASLt has no algorithm for f32 inputs"));
  CHECK_THROWS_WITH(f.space(aligned, arch_limits("sm_80")), Catch::Contains("not those of sm_80"));
}

// FP8 codes as floats (cuda_fp8.h's conversion, host side), and random finite codes of small
// magnitude, so that every product and sum is exact in float64.
double fp8_value(DType t, uint8_t code) {
  if (t == DType::e4m3) {
    __nv_fp8_e4m3 v;
    v.__x = code;
    return double(float(v));
  }
  __nv_fp8_e5m2 v;
  v.__x = code;
  return double(float(v));
}
std::vector<uint8_t> small_fp8(DType t, size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> out(n);
  for (auto& c : out) {
    const float v = float(int(rng() % 9) - 4) * 0.5f;
    c = t == DType::e4m3 ? __nv_fp8_e4m3(v).__x : __nv_fp8_e5m2(v).__x;
  }
  return out;
}

TEST_CASE("the plugin runs FP8 in every scale mode with gemmtune's scale layouts (stand-in)", "[plugins][cublaslt][fp8]") {
  const Family& f = standin();
  const gt_device d = arch_limits("sm_90");
  std::mt19937_64 rng(8);
  int runs = 0;
  struct Case {
    DType a, b, out;
    ScaleMode mode;
  };
  for (Case c : {Case{DType::e4m3, DType::e4m3, DType::bf16, ScaleMode::tensor},
                 Case{DType::e4m3, DType::e5m2, DType::f32, ScaleMode::tensor},
                 Case{DType::e4m3, DType::e4m3, DType::e4m3, ScaleMode::tensor},
                 Case{DType::e4m3, DType::e4m3, DType::f32, ScaleMode::row},
                 Case{DType::e5m2, DType::e4m3, DType::bf16, ScaleMode::row},
                 Case{DType::e4m3, DType::e4m3, DType::f32, ScaleMode::block}})
    for (std::array<int64_t, 3> sh : {std::array<int64_t, 3>{16, 32, 48}, {48, 160, 272}}) {
      Problem p = Problem::make(sh[0], sh[1], sh[2], c.a, c.out, Layout::nt, c.b, c.mode);
      INFO(p.key());
      Space s = f.space(p, d);
      // One more parameter than any other problem's space: fast accumulation, off in every pick.
      REQUIRE(s.dims() == kDims + 1);
      CHECK(s.params()[kDims].name == "fast_accum");
      auto picks = f.suggest(p, d, 32, s.dims());
      REQUIRE_FALSE(picks.empty());
      CHECK(picks.size() == (c.mode == ScaleMode::tensor ? 3u : 1u));  // as the H100's cuBLASLt answered
      for (const Config& pk : picks) CHECK(pk[kDims] == 0);
      auto a = small_fp8(c.a, size_t(p.m) * size_t(p.lda), rng);
      auto b = small_fp8(c.b, size_t(p.n) * size_t(p.ldb), rng);
      std::vector<float> sa(p.scale_count_a()), sb(p.scale_count_b());
      for (auto& v : sa) v = float(1 + rng() % 4) * 0.25f;
      for (auto& v : sb) v = float(1 + rng() % 4) * 0.5f;
      const int64_t kb4 = block_scale_stride(p.k);
      // The layouts plugin_abi.h gives (gt_scale_mode), applied here independently of the plugin.
      auto scale_a = [&](int64_t m, int64_t k) {
        return c.mode == ScaleMode::tensor ? sa[0] : c.mode == ScaleMode::row ? sa[size_t(m)] : sa[size_t((k / 128) * p.m + m)];
      };
      auto scale_b = [&](int64_t n, int64_t k) {
        return c.mode == ScaleMode::tensor ? sb[0] : c.mode == ScaleMode::row ? sb[size_t(n)] : sb[size_t((n / 128) * kb4 + k / 128)];
      };
      const float d_scale = 0.125f;
      for (Config cfg : picks)
        for (int64_t fast : {0, 1}) {
          cfg[kDims] = fast;
          INFO(s.name(cfg));
          Refused why;
          auto op = f.create_op(p, cfg, &why);
          INFO(why.why);
          REQUIRE(op);
          std::vector<uint8_t> cbuf(p.bytes_c(), 0xff);
          std::vector<uint8_t> ws(size_t(op->workspace_bytes()) + 16);
          float amax = -1;
          gt_scales sc{sa.data(), sb.data(), &d_scale, &amax};
          op->run(a.data(), b.data(), cbuf.data(), &sc, ws.data(), op->workspace_bytes(), nullptr);
          CHECK_THROWS_WITH(op->run(a.data(), b.data(), cbuf.data(), nullptr, ws.data(), op->workspace_bytes(), nullptr),
                            Catch::Contains("runs with its scales"));
          ++runs;
          int wrong = 0;
          double ref_amax = 0;
          for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = 0; j < p.n; ++j) {
              double ref = 0;
              for (int64_t l = 0; l < p.k; ++l)
                ref += fp8_value(c.a, a[size_t(i * p.lda + l)]) * scale_a(i, l) * fp8_value(c.b, b[size_t(j * p.ldb + l)]) *
                       scale_b(j, l);
              ref_amax = std::max(ref_amax, std::fabs(ref));
              double got = is_fp8(c.out) ? fp8_value(c.out, cbuf[size_t(i * p.ldc + j)]) / d_scale
                                         : element(c.out, cbuf, size_t(i * p.ldc + j));
              const double rel = c.out == DType::e4m3 ? 1.0 / 16 : c.out == DType::bf16 ? 1.0 / 256 : 1e-6;
              if (!(std::fabs(got - ref) <= rel * std::fabs(ref) + 1e-9)) ++wrong;
            }
          CHECK(wrong == 0);
          if (is_fp8(c.out)) CHECK(amax == Approx(ref_amax));
        }
    }
  CHECK(runs >= 24);
}

TEST_CASE("cuBLASLt's FP8 refusals, with their reasons (stand-in)", "[plugins][cublaslt][fp8]") {
  const Family& f = standin();
  const gt_device d = arch_limits("sm_90");
  Problem p = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::nt, std::nullopt, ScaleMode::row);
  Space s = f.space(p, d);
  // A config of another problem's arity is refused, not misread.
  Config ten = s.default_config();
  ten.pop_back();
  CHECK_THAT(*f.can_implement(p, ten, d), Catch::Contains("the cublaslt space of this problem has 11"));
  // Problems that slip past gemmtune's own checks (built field by field) meet the plugin's.
  Problem nn = p;
  nn.layout = Layout::nn;
  nn.lda = p.k, nn.ldb = p.n;
  CHECK_THROWS_WITH(f.space(nn, d), Catch::Contains("FP8 kernels take layout nt"));
  Problem fp8_out_rows = p;
  fp8_out_rows.out = DType::e4m3;
  CHECK_THROWS_WITH(f.space(fp8_out_rows, d), Catch::Contains("FP8 output with tensor scales only"));
  Problem both_e5m2 = p;
  both_e5m2.in = both_e5m2.in_b = DType::e5m2;
  CHECK_THROWS_WITH(f.space(both_e5m2, d), Catch::Contains("e5m2 x e5m2"));
  // The plain problem's space is what it was: ten parameters, no fast_accum.
  CHECK(f.space(Problem::make(64, 64, 128, DType::bf16, DType::bf16, Layout::nt), d).dims() == kDims);
}

TEST_CASE("cublaslt configs survive name and assignment round trips (stand-in)", "[plugins][cublaslt]") {
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  std::mt19937_64 rng(3);
  for (const Problem& p : {Problem::make(64, 48, 40, DType::f32, DType::f32, Layout::nn),
                           Problem::make(33, 20, 9, DType::bf16, DType::f32, Layout::tt)}) {
    Space s = f.space(p, d);
    std::vector<Config> configs = f.suggest(p, d, 32, s.dims());
    for (int i = 0; i < 500; ++i) configs.push_back(s.at(rng() % s.raw_size()));
    check_round_trips(s, configs);
  }
}

TEST_CASE("lookup: a nearest entry that was the heuristic's pick answers with the pick for the asked shape (stand-in)",
          "[plugins][cublaslt][table]") {
  const PluginRegistry& reg = standin_registry();
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  auto at = [](int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::f32, DType::f32, Layout::nn); };
  Problem tuned = at(64, 48, 4096), asked = at(64, 48, 1024);
  Space st = f.space(tuned, d), sa = f.space(asked, d);
  const std::string pick_tuned = st.name(st.default_config()), pick_asked = sa.name(sa.default_config());
  REQUIRE(pick_tuned != pick_asked);  // the stand-in's pick depends on K, as cuBLASLt's does
  auto table_of = [&](const Config& c) {
    TableEntry e;
    e.key = ResultKey::of("Test GPU", tuned);
    e.family = "cublaslt";
    e.family_version = f.version();
    e.config = st.name(c);
    e.params = st.assignments(c);
    e.time_us = 100;
    e.tflops = tuned.flops() / 100e-6 / 1e12;
    LookupTable t;
    t.entries = {e};
    return t;
  };
  auto can = plugin_can_implement(reg, d);
  auto def = plugin_default(reg, d, "");
  auto tr = plugin_transfer(reg, d);

  LookupTable t = table_of(st.default_config());
  LookupResult r = t.lookup(asked, std::string("Test GPU"), can, def, tr);
  CHECK(r.kind == MatchKind::nearest);
  CHECK(r.config == pick_asked);
  CHECK(r.transferred == "cuBLASLt's heuristic pick");
  CHECK(r.how == "nearest (from 64x48x4096, whose winner was cuBLASLt's heuristic pick, so cuBLASLt's heuristic pick "
                 "for this shape)");
  REQUIRE(r.entry);
  CHECK(r.entry->config == pick_tuned);
  // Without the transfer, the other shape's algorithm, as before.
  CHECK(t.lookup(asked, std::string("Test GPU"), can, def).config == pick_tuned);
  // At the tuned key itself, the entry.
  CHECK(t.lookup(tuned, std::string("Test GPU"), can, def, tr).config == pick_tuned);

  // Written by another version of the plugin: whether it was the pick then is not known here.
  LookupTable older = t;
  older.entries[0].family_version = "0.9+cublasLt120000";
  r = older.lookup(asked, std::string("Test GPU"), can, def, tr);
  CHECK(r.transferred.empty());
  CHECK(r.config == pick_tuned);

  // A winner that is not the pick carries its own algorithm over.
  auto picks = f.suggest(tuned, d, 32, st.dims());
  REQUIRE(picks.size() >= 2);
  const Config& other = picks[1];
  REQUIRE_FALSE(f.can_implement(asked, *sa.parse(st.name(other), nullptr), d));
  r = table_of(other).lookup(asked, std::string("Test GPU"), can, def, tr);
  CHECK(r.config == st.name(other));
  CHECK(r.transferred.empty());
  CHECK(r.how == "nearest (from 64x48x4096)");
}

TEST_CASE("lookup: without a GPU the real cuBLASLt cannot be asked, and a pick is not transferred", "[plugins][cublaslt][table]") {
  if (device_count() > 0) {
    WARN("SKIPPED: a GPU is present, so cuBLASLt can be asked (the [gpu] runtime test covers that)");
    return;
  }
  const PluginRegistry& reg = test::plugins();
  const Family& f = reg.get("cublaslt");
  Problem tuned = Problem::make(64, 48, 4096, DType::f32, DType::f32, Layout::nn);
  TableEntry e;
  e.key = ResultKey::of("Test GPU", tuned);
  e.family = "cublaslt";
  e.family_version = f.version();
  e.config = "cublaslt_algo66_tile128x8_stages64xauto_split_k1_reductionnone_swizzle0_custom1_cluster4x1x1_innerundef_"
             "workspace0";
  auto tr = plugin_transfer(reg, arch_limits("sm_90"));
  Problem asked = Problem::make(64, 48, 1024, DType::f32, DType::f32, Layout::nn);
  CHECK_FALSE(tr(e, asked));
  // Whether its config runs elsewhere cannot be told here either; at its own key it was verified.
  auto can = plugin_can_implement(reg, arch_limits("sm_90"));
  Verdict v = can(e, asked);
  CHECK(v.kind == Verdict::Kind::unchecked);
  CHECK_THAT(v.why, Catch::Contains("needs a GPU"));
  CHECK(can(e, tuned).kind == Verdict::Kind::runs);

  // So a lookup answers with the nearest entry, marked unchecked, not with a farther entry of a
  // family that can be checked here (the naive one below, 16x distance in M).
  e.time_us = 10;
  e.tflops = 1;
  TableEntry far = e;
  far.key = ResultKey::of("Test GPU", Problem::make(4096, 48, 1024, DType::f32, DType::f32, Layout::nn));
  far.family = "naive";
  far.family_version = reg.get("naive").version();
  Problem fp = Problem::make(4096, 48, 1024, DType::f32, DType::f32, Layout::nn);
  Space ns = reg.get("naive").space(fp, arch_limits("sm_90"));
  far.config = ns.name(ns.default_config());
  LookupTable t;
  t.entries = {e, far};
  t.sort();
  LookupResult r = t.lookup(asked, std::string("Test GPU"), can, {}, tr);
  CHECK(r.kind == MatchKind::nearest);
  CHECK(r.family == "cublaslt");
  CHECK(r.config == e.config);
  CHECK(r.how == "nearest (from 64x48x4096; not checked on this machine)");
  CHECK_THAT(r.unchecked, Catch::Contains("needs a GPU"));
  CHECK(r.passed_over.empty());
}

// ---------------------------------------------------------------------------------------
// With a GPU.

