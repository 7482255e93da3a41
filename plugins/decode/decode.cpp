// The decode family: parameter space, constraints and launch geometry for decode.cu, the
// weight-streaming kernel for M ≤ 16 (LLM decode): B through a ring of bulk copies (TMA on
// sm_90, cp.async from sm_80), split-K by an even share of B's bytes over a grid of a few CTAs
// per SM, the partial sums of the tiles that CTAs share added by the last to arrive, every row
// of A served from the one read of B by mma.m16n8k16 (FP8: m16n8k32, tensor or row scales).
// This file derives everything the kernel is launched with: the grid from the device's SM
// count, the ring's shared memory, the workspace, the tensor map of B, and the default config
// for a problem.
#include <gemmtune/plugin_kit.hpp>

#include "decode_kernels.h"

#include <algorithm>
#include <vector>

namespace {
using namespace gt_kit;

enum Engine : int64_t { kTma = 0, kCpAsync = 1 };
enum P { pEngine, pBn, pBk, pStages, pCtas, pWarps, kParams };

constexpr int64_t kMaxM = 16;                // two 8-row tiles of A per mma
constexpr int64_t kCpAsyncProducerWarps = 4;  // one warp cannot issue cp.async fast enough for an SM (ring_mma, docs/kernel-notes.md)
constexpr int64_t kMaxWarpFeatures = 64;     // features per consumer warp: 4 m16 tiles (160 registers at bk 256, M > 8)
constexpr int64_t kRowBytes = 128;           // one swizzled row of the ring: TMA's box span (decode.cu's ROW_BYTES)
constexpr int64_t kReservedSmemPerCta = 1024;  // what the GPU keeps of an SM's shared memory per resident CTA
constexpr int kSwizzle128B = 3;              // CU_TENSOR_MAP_SWIZZLE_128B
constexpr int kL2Promote256B = 3;            // CU_TENSOR_MAP_L2_PROMOTION_L2_256B

std::string str(int64_t v) { return std::to_string(v); }

std::vector<ParamDef> param_defs(const int64_t* def) {
  return {
      {"engine", "how B reaches the ring: TMA tensor copies issued by one thread (sm_90), or 16-byte cp.async from " +
                     str(kCpAsyncProducerWarps) + " producer warps (sm_80 and newer)",
       {kTma, kCpAsync}, {"tma", "cpasync"}, def[pEngine]},
      {"bn", "output features (columns of C) per tile", {64, 128, 256}, {}, def[pBn]},
      {"bk", "k per stage: a stage is bn x bk elements of B", {64, 128, 256}, {}, def[pBk]},
      {"stages", "stages of the shared-memory ring (bytes in flight per CTA: stages x bn x bk x the element size)", {2, 3, 4, 6, 8}, {},
       def[pStages]},
      {"ctas", "CTAs per SM: the grid is ctas x the device's SMs, each CTA taking an equal share of B", {1, 2}, {},
       def[pCtas]},
      {"warps", "consumer warps per CTA, each running the mma for bn / warps features", {2, 4}, {}, def[pWarps]},
  };
}

// Candidates in order of preference; the default is chosen from them (choose_default).
// The first fills an SM's shared memory with 192 KiB of ring (H100/H200: 227 KiB per block),
// deep enough that a CTA's share of a 32 MiB weight (254 KiB over 132 SMs) is mostly in flight
// at its first microsecond; the cp.async ones fit an A100's 163 KiB and smaller parts.
const std::vector<std::vector<int64_t>>& candidates() {
  static const std::vector<std::vector<int64_t>> c = {
      {kTma, 128, 128, 6, 1, 4},     {kTma, 128, 64, 8, 1, 4},      {kTma, 128, 128, 3, 2, 4},
      {kTma, 128, 64, 6, 2, 4},      {kTma, 256, 64, 6, 1, 4},      {kTma, 256, 128, 3, 1, 4},
      {kTma, 64, 128, 8, 1, 2},      {kTma, 128, 256, 3, 1, 4},     {kTma, 64, 64, 8, 1, 4},
      {kTma, 64, 64, 4, 2, 4},       {kCpAsync, 128, 128, 4, 1, 4},
      {kCpAsync, 128, 64, 8, 1, 4},  {kCpAsync, 128, 64, 4, 2, 4},  {kCpAsync, 64, 64, 8, 1, 2},
      {kCpAsync, 64, 64, 4, 1, 2},   {kCpAsync, 64, 64, 2, 1, 2},
  };
  return c;
}

const ParamTable& base_table() {
  static const ParamTable t(param_defs(candidates().front().data()));
  return t;
}

struct Plan {
  int64_t c[kParams];
  bool fp8 = false;            // A and B FP8 (m16n8k32, tensor or row scales)
  int64_t row_elems = 64;      // elements of B in one 128-byte row
  int64_t mt = 1;              // 8-row tiles of A per mma
  int64_t producer_warps = 1;  // TMA: one thread of one warp
  int64_t threads = 0, smem = 0;
  int64_t tiles = 0, kblocks = 0, blocks = 0;  // blocks: the (tile, k block) pairs the grid shares out
  int64_t grid = 0, workspace = 0;
};

// The input, output and scale types, and what they need of the architecture: f16/bf16 on
// m16n8k16 (sm_80), or FP8 on m16n8k32 (sm_89) with A stored M x K and B N x K, as
// torch._scaled_mm takes them, scaled per tensor or per row.
void check_types(const gt_problem& p, const gt_device& d, Plan& pl) {
  pl.fp8 = is_fp8(p.in_dtype) || is_fp8(p.b_dtype);
  if (pl.fp8) {
    if (!is_fp8(p.in_dtype) || !is_fp8(p.b_dtype))
      throw Refusal(GT_REFUSAL_DTYPE, std::string("A is ") + dtype_name(p.in_dtype) + " and B " + dtype_name(p.b_dtype) +
                                          ": decode multiplies two FP8 operands or two 16-bit ones");
    if (p.scale_mode != GT_SCALE_TENSOR && p.scale_mode != GT_SCALE_ROW)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("FP8 with ") + scale_mode_name(p.scale_mode) +
                                          " scales: decode scales per tensor or per row");
    if (p.layout != GT_NT)
      throw Refusal(GT_REFUSAL_LAYOUT, std::string("FP8 decode reads A stored MxK and B stored NxK (layout nt), not ") +
                                           (a_transposed(p) ? "t" : "n") + (b_transposed(p) ? "t" : "n"));
    if (d.cc_major * 10 + d.cc_minor < 89)
      throw Refusal(GT_REFUSAL_ARCH, "FP8 mma (m16n8k32) needs sm_89 or newer; this is sm_" + str(d.cc_major) +
                                         str(d.cc_minor));
  } else {
    if (p.in_dtype != GT_F16 && p.in_dtype != GT_BF16)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("decode multiplies f16 or bf16 (mma.m16n8k16) or FP8 (m16n8k32), not ") +
                                          dtype_name(p.in_dtype));
    if (p.scale_mode != GT_SCALE_NONE)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("scale mode ") + scale_mode_name(p.scale_mode) + " with " +
                                          dtype_name(p.in_dtype) + " inputs (scales are for FP8)");
  }
  if (p.out_dtype != GT_F32 && p.out_dtype != GT_F16 && p.out_dtype != GT_BF16)
    throw Refusal(GT_REFUSAL_DTYPE, std::string("output ") + dtype_name(p.out_dtype) + " (f32, f16 or bf16)");
  if (d.cc_major < 8)
    throw Refusal(GT_REFUSAL_ARCH, "bf16 mma, ldmatrix, cp.async and mbarriers need sm_80 or newer; this is sm_" +
                                       str(d.cc_major) + str(d.cc_minor));
  pl.row_elems = kRowBytes / int64_t(dtype_size(p.b_dtype));
}

// Checks the (problem, config, device) and derives everything; throws Refusal with its code.
Plan plan(const gt_problem& p, const int64_t* cfg, int32_t n, const gt_device& d) {
  base_table().check_values(cfg, n);
  Plan pl;
  std::copy(cfg, cfg + kParams, pl.c);
  const int64_t engine = cfg[pEngine], bn = cfg[pBn], bk = cfg[pBk], stages = cfg[pStages], ctas = cfg[pCtas],
                warps = cfg[pWarps];

  // ---- types, architecture, shape ----
  check_types(p, d, pl);
  if (engine == kTma && d.cc_major < 9)
    throw Refusal(GT_REFUSAL_ARCH, "TMA tensor copies need sm_90 or newer; this is sm_" + str(d.cc_major) +
                                       str(d.cc_minor) + " (engine=cpasync runs here)");
  if (p.m > kMaxM)
    throw Refusal(GT_REFUSAL_SHAPE, "decode serves M up to " + str(kMaxM) + " rows (one read of B, two 8-row mma tiles); M = " +
                                        str(p.m));
  if (p.align_bytes < 16)
    throw Refusal(GT_REFUSAL_SHAPE, "decode copies B in 16-byte pieces (TMA or cp.async) and needs 16-byte aligned "
                                    "operands and leading dimensions; this problem is aligned to " +
                                        str(p.align_bytes) + " bytes (a padded copy would serve it)");
  pl.mt = p.m <= 8 ? 1 : 2;

  // ---- the CTA: threads, shared memory ----
  pl.producer_warps = engine == kTma ? 1 : kCpAsyncProducerWarps;
  if (bn / warps > kMaxWarpFeatures)
    throw Refusal(GT_REFUSAL_RESOURCES, str(warps) + " consumer warps for " + str(bn) + " features give each " +
                                            str(bn / warps) + "; more than " + str(kMaxWarpFeatures) +
                                            " takes more registers than a thread has (ptxas: 250 at bk 256, m > 8)");
  pl.threads = 32 * (pl.producer_warps + warps);
  if (pl.threads * ctas > d.max_threads_per_sm)
    throw Refusal(GT_REFUSAL_RESOURCES, str(ctas) + " CTAs of " + str(pl.threads) + " threads exceed the device's " +
                                            str(d.max_threads_per_sm) + " per SM");
  if ((b_transposed(p) ? bk : bn) % pl.row_elems)
    throw Refusal(GT_REFUSAL_CONFIG, std::string(b_transposed(p) ? "bk" : "bn") + " = " +
                                         str(b_transposed(p) ? bk : bn) + ": a stage is whole 128-byte rows of " +
                                         str(pl.row_elems) + " " + dtype_name(p.b_dtype) + " elements");
  const int64_t stage_bytes = bn * bk * int64_t(dtype_size(p.b_dtype));
  pl.smem = stages * stage_bytes + 1024 + 16 * stages;  // the ring (1024-aligned), its mbarriers
  if (pl.smem > d.smem_per_block_optin)
    throw Refusal(GT_REFUSAL_RESOURCES, "a ring of " + str(stages) + " stages of " + str(stage_bytes) + " bytes needs " +
                                            str(pl.smem) + " bytes of shared memory; the device allows " +
                                            str(d.smem_per_block_optin) + " per block");
  if (ctas * (pl.smem + kReservedSmemPerCta) > d.smem_per_sm)
    throw Refusal(GT_REFUSAL_RESOURCES, str(ctas) + " CTAs of " + str(pl.smem) + " bytes of shared memory do not fit the " +
                                            str(d.smem_per_sm) + " of an SM");

  // ---- the grid: an even share of B per CTA ----
  pl.tiles = (p.n + bn - 1) / bn;
  pl.kblocks = (p.k + bk - 1) / bk;
  pl.blocks = pl.tiles * pl.kblocks;
  pl.grid = std::min(pl.blocks, ctas * std::max<int64_t>(1, d.sm_count));
  // Counters per (tile, consumer warp), then two slots per CTA of bn x (8 mt) fp32 sums.
  pl.workspace = 4 * (((pl.tiles * warps + 63) / 64) * 64 + 2 * pl.grid * bn * 8 * pl.mt);
  const int64_t cap = d.global_mem_bytes > 0 ? d.global_mem_bytes / 8 : (int64_t(1) << 30);
  if (pl.workspace > cap)
    throw Refusal(GT_REFUSAL_RESOURCES, "the split tiles' partial sums need " + str(pl.workspace >> 20) +
                                            " MiB of workspace; the family keeps within " + str(cap >> 20));
  return pl;
}

Launch launch(const gt_problem& p, const Plan& pl) {
  const bool tma = pl.c[pEngine] == kTma, b_kmajor = b_transposed(p);
  // FP8 operands are bytes to the kernel (the mma names their types); 16-bit ones their CUDA types.
  const char* in_t = pl.fp8 ? "unsigned char" : dtype_cuda_type(p.in_dtype);
  Launch l = kernel_launch(k_decode, k_decode_name, "gemm_decode", {
      define("FP8", pl.fp8 ? 1 : 0),
      define("A_E5M2", p.in_dtype == GT_E5M2 ? 1 : 0),
      define("B_E5M2", p.b_dtype == GT_E5M2 ? 1 : 0),
      define("SCALE_MODE", p.scale_mode),
      define("IN_T", in_t),
      define("B_T", in_t),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("IS_BF16", p.in_dtype == GT_BF16 ? 1 : 0),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("B_KMAJOR", b_kmajor ? 1 : 0),
      define("ENGINE_TMA", tma ? 1 : 0),
      define("BN", pl.c[pBn]),
      define("BK", pl.c[pBk]),
      define("STAGES", pl.c[pStages]),
      define("CTAS_PER_SM", pl.c[pCtas]),
      define("CONSUMER_WARPS", pl.c[pWarps]),
      define("PRODUCER_WARPS", pl.producer_warps),
      define("MT", pl.mt),
  });
  if (tma)  // B as stored, in boxes of 128 bytes (the swizzle's span) by bn features or bk k
    l.tensor_maps = {tensor_map(GT_OPERAND_B, uint32_t(pl.row_elems), uint32_t(b_kmajor ? pl.c[pBn] : pl.c[pBk]),
                                kSwizzle128B, kL2Promote256B)};
  l.takes_scales = pl.fp8;  // (A, B, C, M, N, K, lda, ldb, ldc, workspace, scalars, scales, map)
  l.grid = {uint32_t(pl.grid), 1, 1};
  l.block = {uint32_t(pl.threads), 1, 1};
  l.dynamic_smem = uint32_t(pl.smem);
  l.workspace_bytes = uint64_t(pl.workspace);
  l.workspace_zero = GT_WORKSPACE_ZERO_ONCE;  // the counters; the last CTA of a tile resets its own
  return l;
}

bool buildable(const gt_problem& p, const std::vector<int64_t>& c, const gt_device& d) {
  try {
    plan(p, c.data(), int32_t(c.size()), d);
    return true;
  } catch (const Refusal&) {
    return false;
  }
}

// The first candidate whose blocks fill its grid (a CTA on every SM, `ctas` per SM); where none
// does (a weight of a few MiB), the one with the most blocks, so that the most SMs read.
std::vector<int64_t> choose_default(const gt_problem& p, const gt_device& d) {
  const std::vector<int64_t>* most = nullptr;
  int64_t most_blocks = 0;
  for (auto& c : candidates()) {
    Plan pl;
    try {
      pl = plan(p, c.data(), kParams, d);
    } catch (const Refusal&) {
      continue;
    }
    if (pl.blocks >= c[pCtas] * std::max<int64_t>(1, d.sm_count)) return c;
    if (!most || pl.blocks > most_blocks) most = &c, most_blocks = pl.blocks;
  }
  return most ? *most : candidates().front();  // nothing runs: every config is refused with its reason
}

gt_status suggest(const gt_problem* p, const gt_device* d, int32_t max, int64_t* configs, int32_t* count,
                  gt_reply* reply) {
  return guarded(reply, [&] {
    int32_t k = 0;
    for (auto& c : candidates()) {
      if (k >= max) break;
      if (!buildable(*p, c, *d)) continue;
      std::copy(c.begin(), c.end(), configs + int64_t(k) * kParams);
      ++k;
    }
    *count = k;
    return GT_OK;
  });
}

gt_status describe_config(const gt_problem* p, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    base_table().check_values(c, n);
    const int64_t stage_kib = c[pBn] * c[pBk] * std::max<int64_t>(1, int64_t(dtype_size(p->b_dtype))) / 1024;
    write_msg(out, cap,
              std::string(c[pEngine] == kTma ? "TMA copies" : "cp.async") + " into a ring of " + str(c[pStages]) +
                  " stages of " + str(c[pBn]) + " features x " + str(c[pBk]) + " k (" + str(stage_kib) + " KiB, " +
                  str(c[pStages] * stage_kib) + " KiB in flight per CTA), " + str(c[pCtas]) + " CTA" +
                  (c[pCtas] > 1 ? "s" : "") + " per SM, " + str(c[pWarps]) + " consumer warps");
    return GT_OK;
  });
}

const gt_plugin kPlugin = [] {
  gt_plugin p = source_family<plan, launch>(
      "decode", "1.2",
      "streams B once at the memory's bandwidth for M up to 16 (LLM decode): TMA or cp.async into a shared-memory ring, "
      "split-K by an even share of B per CTA, partial tiles added by the last CTA, mma.m16n8k16; FP8 (e4m3, e5m2; "
      "tensor or row scales, layout nt) by m16n8k32",
      k_decode, space_with_default<param_defs, choose_default>, describe_config);
  p.suggest = suggest;
  return p;
}();
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
