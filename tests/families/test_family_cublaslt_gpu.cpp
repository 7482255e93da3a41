// The cublaslt family on a GPU ([gpu]): cuBLASLt's pick is verified at every dtype, layout and
// odd shape; further heuristic picks and configs from the algorithm-config space are re-created
// from their attributes and verified; AlgoCheck's refusals reach the caller with their reason;
// an op re-created from stored attributes is the heuristic's own algorithm (same bits out as
// cuBLASLt's heuristic result run directly); interleaved with a far cooler kernel, the pick is
// re-timed at its own clock, as when it runs alone.
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

TEST_CASE("cuBLASLt's pick is correct at every dtype, layout and odd shape", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  gt_device d = device_info(0).limits;
  std::vector<std::array<int64_t, 3>> shapes = {
      {1024, 1024, 1024}, {1, 1, 1}, {7, 13, 17}, {1000, 3000, 7}, {4097, 4095, 33}};
  std::vector<std::pair<DType, DType>> types = {{DType::f32, DType::f32}, {DType::tf32, DType::f32},
                                                {DType::f16, DType::f16}, {DType::bf16, DType::bf16},
                                                {DType::f16, DType::f32}, {DType::bf16, DType::f32}};
  for (auto sh : shapes)
    for (auto [in, out] : types)
      for (auto lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
        // Outputs wider than the inputs at two shapes only: they share the kernels' paths.
        if (out != Problem::default_out(in) && sh[0] != 1024 && sh[0] != 7) continue;
        Problem p = Problem::make(sh[0], sh[1], sh[2], in, out, lay);
        INFO(p.key());
        Space s = f.space(p, d);
        REQUIRE(s.dims() == kDims);
        auto picks = f.suggest(p, d, 32, s.dims());
        REQUIRE_FALSE(picks.empty());
        CHECK(picks.front() == s.default_config());  // the default is cuBLASLt's choice
        INFO(s.name(picks.front()) << ": " << f.describe(p, picks.front()));
        CHECK_THAT(f.describe(p, picks.front()), Catch::Contains("heuristic rank 0 (cuBLASLt's pick)"));
        Measurement m = test::gpu_check(f, p, picks.front());
        INFO(to_string(m.status) << " " << m.message);
        CHECK(m.status == Status::ok);
        CHECK(m.err_rel_fro <= tolerance_for(p).rel_fro);
      }
}

TEST_CASE("cuBLASLt's FP8 picks verify against the scaled float64 reference in every mode", "[gpu][cublaslt][fp8]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  const DeviceInfo dev = device_info(0);
  if (dev.limits.cc_major * 10 + dev.limits.cc_minor < 89) {
    WARN("SKIPPED: FP8 needs sm_89 or newer; this GPU is " << dev.arch());
    return;
  }
  struct Case {
    DType a, b, out;
    ScaleMode mode;
  };
  const std::vector<Case> cases = {{DType::e4m3, DType::e4m3, DType::bf16, ScaleMode::tensor},
                                   {DType::e4m3, DType::e5m2, DType::bf16, ScaleMode::tensor},
                                   {DType::e5m2, DType::e4m3, DType::f16, ScaleMode::tensor},
                                   {DType::e4m3, DType::e4m3, DType::f32, ScaleMode::tensor},
                                   {DType::e4m3, DType::e4m3, DType::e4m3, ScaleMode::tensor},
                                   {DType::e4m3, DType::e4m3, DType::bf16, ScaleMode::row},
                                   {DType::e4m3, DType::e5m2, DType::f32, ScaleMode::row},
                                   {DType::e4m3, DType::e4m3, DType::bf16, ScaleMode::block}};
  int verified = 0;
  for (std::array<int64_t, 3> sh : {std::array<int64_t, 3>{1024, 1024, 1024}, {256, 384, 640}, {64, 4096, 1024},
                                    {16, 4096, 4096}, {1000, 2000, 304}})
    for (const Case& c : cases) {
      Problem p = Problem::make(sh[0], sh[1], sh[2], c.a, c.out, Layout::nt, c.b, c.mode);
      INFO(p.key());
      Space s;
      try {
        s = f.space(p, dev.limits);
      } catch (const RuntimeFailure& e) {
        WARN(p.key() << ": cuBLASLt has no algorithm here: " << e.what());
        continue;
      }
      auto picks = f.suggest(p, dev.limits, 32, s.dims());
      REQUIRE_FALSE(picks.empty());
      for (int64_t fast : {0, 1}) {
        Config cfg = picks.front();
        cfg.back() = fast;  // fast_accum: the last parameter of an FP8 space
        if (f.can_implement(p, cfg, dev.limits)) continue;
        Measurement m = test::gpu_check(f, p, cfg, false);
        INFO(s.name(cfg) << ": " << to_string(m.status) << " " << m.message << " err " << m.err_rel_fro);
        CHECK(m.status == Status::ok);
        verified += m.status == Status::ok;
      }
    }
  CHECK(verified >= 40);
}

TEST_CASE("further heuristic picks and configs of the algorithm space run from their attributes",
          "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  gt_device d = device_info(0).limits;
  std::vector<Problem> problems = {Problem::make(1024, 1024, 1024, DType::f16, DType::f16, Layout::nn),
                                   Problem::make(4097, 4095, 33, DType::bf16, DType::bf16, Layout::tn),
                                   Problem::make(1000, 3000, 7, DType::f32, DType::f32, Layout::nt),
                                   Problem::make(1024, 512, 2048, DType::tf32, DType::f32, Layout::tt)};
  std::mt19937_64 rng(20261129);
  int split_k_verified = 0;
  for (const Problem& p : problems) {
    INFO(p.key());
    Space s = f.space(p, d);
    auto picks = f.suggest(p, d, 32, s.dims());
    REQUIRE_FALSE(picks.empty());
    std::vector<Config> chosen;
    for (size_t i = 1; i < picks.size() && i <= 3; ++i) chosen.push_back(picks[i]);
    // Beyond the heuristic: valid neighbours of its pick, and valid configs drawn at random.
    int neighbours = 0, drawn = 0;
    for (const Config& n : s.neighbours(picks.front()))
      if (neighbours < 3 && !in(picks, n) && s.valid(n)) {
        chosen.push_back(n);
        ++neighbours;
      }
    for (int tries = 0; tries < 20000 && drawn < 3; ++tries) {
      Config c = s.at(rng() % s.raw_size());
      if (!in(picks, c) && !in(chosen, c) && s.valid(c)) {
        chosen.push_back(c);
        ++drawn;
      }
    }
    // A split-K config where the space has one (the draw above rarely lands on one).
    bool split_found = false;
    for (int tries = 0; tries < 200000 && !split_found; ++tries) {
      Config c = s.at(rng() % s.raw_size());
      if (c[kSplitK] > 1 && !in(chosen, c) && s.valid(c)) {
        chosen.push_back(c);
        split_found = true;
      }
    }
    // An unaligned problem may have only the heuristic's own algorithms (seen on an H200:
    // 4097x4095x33 bf16 tn, 2-byte alignment); an aligned one has more.
    if (p.align >= 16)
      CHECK(neighbours + drawn >= 2);
    else if (neighbours + drawn == 0)
      WARN("no valid config beyond the heuristic's picks for " << p.key());
    for (const Config& c : chosen) {
      INFO(s.name(c) << ": " << f.describe(p, c));
      Measurement m = test::gpu_check(f, p, c);
      INFO(to_string(m.status) << " " << m.message);
      CHECK(m.status == Status::ok);
      CHECK(m.err_rel_fro <= tolerance_for(p).rel_fro);
      if (c[kSplitK] > 1 && m.status == Status::ok) ++split_k_verified;
    }
  }
  CHECK(split_k_verified >= 1);  // cuBLASLt splits K for f16 on every GPU it supports
}

TEST_CASE("configs cuBLASLt rejects are refused with its reason", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  gt_device d = device_info(0).limits;
  Problem p = Problem::make(1024, 1024, 1024, DType::f16, DType::f16, Layout::nn);
  Space s = f.space(p, d);
  std::mt19937_64 rng(7);
  std::optional<Config> rejected;
  std::string reason;
  for (int tries = 0; tries < 500000 && !rejected; ++tries) {
    Config c = s.at(rng() % s.raw_size());
    if (auto why = f.can_implement(p, c, d); why && why->find("cublasLtMatmulAlgoCheck") != std::string::npos) {
      rejected = c;
      reason = *why;
    }
  }
  REQUIRE(rejected);
  INFO(s.name(*rejected) << ": " << reason);
  CHECK_THAT(reason, Catch::Contains("CUBLAS_STATUS_"));
  Refused why_op;
  CHECK(f.create_op(p, *rejected, &why_op) == nullptr);
  CHECK_THAT(why_op.why, Catch::Contains("cublasLtMatmulAlgoCheck"));
  Measurement m = test::gpu_check(f, p, *rejected);
  CHECK(m.status == Status::cannot_implement);
  CHECK_THAT(m.message, Catch::Contains("CUBLAS_STATUS_"));

  // One spelling per algorithm: a reduction scheme without split-K is the same algorithm.
  Config pick = s.default_config();
  for (int64_t red : s.params()[kReduction].values)
    if (red != CUBLASLT_REDUCTION_SCHEME_NONE && pick[kSplitK] == 1) {
      Config c = pick;
      c[kReduction] = red;
      auto why = f.can_implement(p, c, d);
      REQUIRE(why);
      CHECK_THAT(*why, Catch::Contains("acts only with split_k > 1"));
    }
  // A value outside the problem's lists is refused by name.
  Config bad = pick;
  bad[kAlgo] = -5;
  auto why = f.can_implement(p, bad, d);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("algo=-5 is not in this problem's space"));
}

TEST_CASE("cublaslt configs survive name and assignment round trips", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  gt_device d = device_info(0).limits;
  Problem p = Problem::make(777, 333, 555, DType::bf16, DType::f32, Layout::nt);
  Space s = f.space(p, d);
  std::vector<Config> configs = f.suggest(p, d, 32, s.dims());
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) configs.push_back(s.at(rng() % s.raw_size()));
  check_round_trips(s, configs);
  for (const Config& c : configs) CHECK_THAT(f.describe(p, c), Catch::Contains("algo " + std::to_string(c[kAlgo]) + ":"));
}

// The heuristic's result run directly through cuBLASLt (looked up in the library the plugin
// loaded, so this test links nothing new) against the plugin's op re-created from the
// stored attributes. The mapping below is written out again on purpose.
namespace {
struct Lt {
  void* lib = nullptr;
#define GT_LT_FN(name) decltype(&::name) name = nullptr;
  GT_LT_FN(cublasLtCreate)
  GT_LT_FN(cublasLtDestroy)
  GT_LT_FN(cublasLtMatmulDescCreate)
  GT_LT_FN(cublasLtMatmulDescDestroy)
  GT_LT_FN(cublasLtMatmulDescSetAttribute)
  GT_LT_FN(cublasLtMatrixLayoutCreate)
  GT_LT_FN(cublasLtMatrixLayoutDestroy)
  GT_LT_FN(cublasLtMatmulPreferenceCreate)
  GT_LT_FN(cublasLtMatmulPreferenceDestroy)
  GT_LT_FN(cublasLtMatmulPreferenceSetAttribute)
  GT_LT_FN(cublasLtMatmulAlgoGetHeuristic)
  GT_LT_FN(cublasLtMatmulAlgoConfigGetAttribute)
  GT_LT_FN(cublasLtMatmul)
#undef GT_LT_FN
  Lt() {
    lib = dlopen(("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR)).c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return;
#define GT_LT_SYM(name) name = reinterpret_cast<decltype(name)>(dlsym(lib, #name));
    GT_LT_SYM(cublasLtCreate)
    GT_LT_SYM(cublasLtDestroy)
    GT_LT_SYM(cublasLtMatmulDescCreate)
    GT_LT_SYM(cublasLtMatmulDescDestroy)
    GT_LT_SYM(cublasLtMatmulDescSetAttribute)
    GT_LT_SYM(cublasLtMatrixLayoutCreate)
    GT_LT_SYM(cublasLtMatrixLayoutDestroy)
    GT_LT_SYM(cublasLtMatmulPreferenceCreate)
    GT_LT_SYM(cublasLtMatmulPreferenceDestroy)
    GT_LT_SYM(cublasLtMatmulPreferenceSetAttribute)
    GT_LT_SYM(cublasLtMatmulAlgoGetHeuristic)
    GT_LT_SYM(cublasLtMatmulAlgoConfigGetAttribute)
    GT_LT_SYM(cublasLtMatmul)
#undef GT_LT_SYM
  }
  bool ok() const { return lib && cublasLtCreate && cublasLtMatmul && cublasLtMatmulAlgoConfigGetAttribute; }
};

#define LT_OK(call) REQUIRE((call) == CUBLAS_STATUS_SUCCESS)

// Random inputs with small exponents, as raw element bits, so no value over- or underflows.
std::vector<uint8_t> random_bits(DType t, size_t elems, std::mt19937_64& rng) {
  std::vector<uint8_t> out(elems * size_of(t));
  for (size_t i = 0; i < elems; ++i) {
    uint64_t r = rng();
    uint32_t sign = r & 1, mant = uint32_t(r >> 8), exp = uint32_t(r >> 40) % 4;
    if (t == DType::f16) {
      uint16_t h = uint16_t(sign << 15 | (13 + exp) << 10 | (mant & 0x3ff));
      std::memcpy(&out[i * 2], &h, 2);
    } else if (t == DType::bf16) {
      uint16_t h = uint16_t(sign << 15 | (125 + exp) << 7 | (mant & 0x7f));
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      uint32_t w = sign << 31 | (125 + exp) << 23 | (mant & 0x7fffff);
      std::memcpy(&out[i * 4], &w, 4);
    }
  }
  return out;
}

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}
}  // namespace

TEST_CASE("an op re-created from stored attributes is the heuristic's own algorithm", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  gt_device d = device_info(0).limits;
  Lt lt;
  REQUIRE(lt.ok());
  cublasLtHandle_t h = nullptr;
  LT_OK(lt.cublasLtCreate(&h));
  std::mt19937_64 rng(11);
  for (const Problem& p : {Problem::make(1024, 1024, 1024, DType::f16, DType::f16, Layout::nn),
                           Problem::make(4097, 4095, 33, DType::bf16, DType::bf16, Layout::tn),
                           Problem::make(1000, 3000, 7, DType::f32, DType::f32, Layout::nt),
                           Problem::make(513, 257, 1023, DType::tf32, DType::f32, Layout::tt),
                           Problem::make(64, 4096, 4096, DType::f16, DType::f32, Layout::nt)}) {
    INFO(p.key());
    // cuBLASLt's heuristic, asked directly: C^T (N x M, column-major) = op(B) * op(A).
    cublasLtMatmulDesc_t op = nullptr;
    LT_OK(lt.cublasLtMatmulDescCreate(&op, p.in == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                      CUDA_R_32F));
    int32_t tb = p.b_trans() ? CUBLAS_OP_T : CUBLAS_OP_N, ta = p.a_trans() ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_OK(lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tb, sizeof(tb)));
    LT_OK(lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof(ta)));
    cublasLtMatrixLayout_t lb = nullptr, la = nullptr, lc = nullptr;
    LT_OK(lt.cublasLtMatrixLayoutCreate(&lb, lt_type(p.in), uint64_t(p.b_trans() ? p.k : p.n),
                                        uint64_t(p.b_trans() ? p.n : p.k), p.ldb));
    LT_OK(lt.cublasLtMatrixLayoutCreate(&la, lt_type(p.in), uint64_t(p.a_trans() ? p.m : p.k),
                                        uint64_t(p.a_trans() ? p.k : p.m), p.lda));
    LT_OK(lt.cublasLtMatrixLayoutCreate(&lc, lt_type(p.out), uint64_t(p.n), uint64_t(p.m), p.ldc));
    cublasLtMatmulPreference_t pref = nullptr;
    LT_OK(lt.cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws_max = uint64_t(32) << 20;
    LT_OK(lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_max, sizeof(ws_max)));
    uint32_t al = uint32_t(p.align);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      LT_OK(lt.cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al)));
    std::vector<cublasLtMatmulHeuristicResult_t> results(32);
    int returned = 0;
    LT_OK(lt.cublasLtMatmulAlgoGetHeuristic(h, op, lb, la, lc, lc, pref, 32, results.data(), &returned));
    REQUIRE(returned >= 1);
    REQUIRE(results[0].state == CUBLAS_STATUS_SUCCESS);
    const cublasLtMatmulHeuristicResult_t& best = results[0];
    auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto zero) -> int64_t {
      decltype(zero) v = zero;
      size_t written = 0;
      LT_OK(lt.cublasLtMatmulAlgoConfigGetAttribute(&best.algo, attr, &v, sizeof(v), &written));
      return int64_t(v);
    };
    Config direct(kDims);
    direct[kAlgo] = get(CUBLASLT_ALGO_CONFIG_ID, int32_t(0));
    direct[kTile] = get(CUBLASLT_ALGO_CONFIG_TILE_ID, uint32_t(0));
    direct[kStages] = get(CUBLASLT_ALGO_CONFIG_STAGES_ID, uint32_t(0));
    direct[kSplitK] = get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t(0));
    direct[kReduction] = get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, uint32_t(0));
    direct[kSwizzle] = get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, uint32_t(0));
    direct[kCustom] = get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, uint32_t(0));
    direct[kCluster] = get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, uint16_t(0));
    direct[kInner] = get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, uint16_t(0));
    if (direct[kSplitK] <= 1) direct[kReduction] = CUBLASLT_REDUCTION_SCHEME_NONE;  // ignored without split-K

    // The plugin's rank 0, stored as its name and read back: attributes only.
    Space s = f.space(p, d);
    auto picks = f.suggest(p, d, 1, s.dims());
    REQUIRE(picks.size() == 1);
    std::string err;
    auto stored = s.parse(s.name(picks[0]), &err);
    REQUIRE(stored);
    INFO("plugin: " << s.name(*stored) << "; direct heuristic workspace " << best.workspaceSize);
    for (int i = 0; i < kWorkspace; ++i) {
      INFO("attribute " << s.params()[size_t(i)].name);
      CHECK((*stored)[size_t(i)] == direct[size_t(i)]);
    }
    Refused why;
    auto libop = f.create_op(p, *stored, &why);
    INFO(why.why);
    REQUIRE(libop);
    // AlgoCheck's need for the re-created algorithm; the heuristic may quote more, never less.
    CHECK(libop->workspace_bytes() <= best.workspaceSize);

    // Same inputs through both; the same kernel gives the same bits.
    size_t a_elems = size_t(p.a_rows()) * size_t(p.lda), b_elems = size_t(p.b_rows()) * size_t(p.ldb);
    auto ha = random_bits(p.in, a_elems, rng), hb = random_bits(p.in, b_elems, rng);
    DeviceBuffer da{ha.size()}, db{hb.size()}, dc1{p.bytes_c()}, dc2{p.bytes_c()}, ws{size_t(ws_max)};
    cuda_check(cudaMemcpy(da.get(), ha.data(), ha.size(), cudaMemcpyHostToDevice), "copy A");
    cuda_check(cudaMemcpy(db.get(), hb.data(), hb.size(), cudaMemcpyHostToDevice), "copy B");
    auto run_direct = [&](void* c) {
      const float one = 1.f, zero = 0.f;
      LT_OK(lt.cublasLtMatmul(h, op, &one, db.get(), lb, da.get(), la, &zero, c, lc, c, lc, &best.algo, ws.get(),
                              best.workspaceSize, nullptr));
      cuda_check(cudaDeviceSynchronize(), "direct cuBLASLt run");
    };
    auto fetch = [&](const DeviceBuffer& c) {
      std::vector<uint8_t> host(c.size());
      cuda_check(cudaMemcpy(host.data(), c.get(), host.size(), cudaMemcpyDeviceToHost), "copy C");
      return host;
    };
    libop->run(da.get(), db.get(), dc1.get(), nullptr, ws.get(), ws.size(), nullptr);
    cuda_check(cudaDeviceSynchronize(), "plugin op run");
    run_direct(dc2.get());
    auto c1 = fetch(dc1), c2 = fetch(dc2);
    CHECK(std::any_of(c1.begin(), c1.end(), [](uint8_t x) { return x != 0; }));
    if (c1 != c2) {
      // Only a kernel that is not bitwise reproducible (atomics) may differ: show it is one.
      run_direct(dc1.get());
      auto again = fetch(dc1);
      INFO("the plugin's op and the heuristic's algorithm gave different bits");
      CHECK(again != c2);
      WARN("cuBLASLt's pick for " << p.key() << " is not bitwise reproducible run to run");
    }
    lt.cublasLtMatmulPreferenceDestroy(pref);
    lt.cublasLtMatrixLayoutDestroy(lc);
    lt.cublasLtMatrixLayoutDestroy(la);
    lt.cublasLtMatrixLayoutDestroy(lb);
    lt.cublasLtMatmulDescDestroy(op);
  }
  lt.cublasLtDestroy(h);
}

TEST_CASE("cuBLASLt's pick is timed on the caller's stream", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  const Family& f = cublaslt();
  Problem p = Problem::make(2048, 2048, 2048, DType::bf16, DType::bf16, Layout::nn);
  Space s = f.space(p, device_info(0).limits);
  Measurement m = test::gpu_check(f, p, s.default_config(), true);
  INFO(to_string(m.status) << " " << m.message);
  REQUIRE(m.status == Status::ok);
  CHECK(m.time.count >= 5);
  // 17 GFLOP: well over a microsecond, and no GPU of today does it in under 10 us.
  CHECK(m.time.median > 10.0);
}

// At a power cap the clock follows the power of the last tens of ms: interleaved with turns
// of a kernel that draws far less (naive), 5 ms of warm-up time cuBLASLt's pick at a clock
// above the one it sustains alone. Each turn at the cap runs its candidate alone first
// (Interleave::capped_warmup_s): the re-timed pick agrees with the pick timed alone. Below
// the cap (a smaller board) the clock does not depend on it and they agree anyway.
TEST_CASE("interleaved with a cooler kernel, the pick is re-timed at its own clock", "[gpu][cublaslt]") {
  GT_REQUIRE_GPU();
  Problem p = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  CubinCache cache(std::filesystem::temp_directory_path() / "gemmtune-test-cubins");
  MeasureService svc(test::plugins(), cache, 0);
  svc.set_problem(p, Distribution::normal, 5);
  const gt_device d = device_info(0).limits;
  Candidate pick{"cublaslt", &cublaslt(), cublaslt().space(p, d).default_config()};
  const Family& naive = test::plugins().get("naive");
  Candidate cool{"naive", &naive, naive.space(p, d).default_config()};
  svc.settle(pick, 3.0);
  svc.timing.min_time_s = 2.0;  // two of the governor's periods at the cap (kCappedMinTimeS)
  Measurement alone = svc.measure(pick, false);
  REQUIRE(alone.status == Status::ok);
  Retimed rt = svc.retime({pick, cool}, Interleave{}, 3);
  REQUIRE(rt.stats.size() == 2);
  const std::vector<Stats>& st = rt.stats;
  // The same with 5 ms of warm-up at the cap too (method 3), for the log.
  Retimed short_turns = svc.retime({pick, cool}, Interleave{4, 0.005, 0.005, 4}, 3);
  CHECK_FALSE(short_turns.capped);
  WARN("cuBLASLt's pick, 4096^3 f16: alone " << alone.time_us() << " us (" << to_string(alone.time.center) << ", "
                                             << alone.sensors.sm_clock_mhz << " MHz, " << alone.throttle
                                             << "); interleaved with naive: " << st[0].value() << " us ("
                                             << to_string(st[0].center) << "), with 5 ms turns "
                                             << short_turns.stats[0].value() << " us");
  CHECK(st[0].value() == Approx(alone.time_us()).epsilon(0.03));
  CHECK(st[1].value() > 20 * st[0].value());  // naive: a far slower, cooler neighbour
  // The figure at the cap is the mean, below it the median, alone and interleaved alike.
  CHECK((alone.time.center == Center::mean) == at_power_cap(alone.throttle));
  CHECK((st[0].center == Center::mean) == rt.capped);
  if (alone.throttle.find("power_cap") != std::string::npos) CHECK(rt.capped);
}

