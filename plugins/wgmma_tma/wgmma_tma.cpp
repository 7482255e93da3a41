// The wgmma_tma family: Hopper's own GEMM path (sm_90a) — wgmma.mma_async fed by TMA tile
// copies, warp-specialised (one producer warpgroup, one or two consumer warpgroups),
// thread-block clusters sharing an operand by TMA multicast, a persistent grid over tiles in
// grouped order, split-K with the partials added in a workspace. FP8 problems (e4m3 / e5m2
// inputs, layout nt, tensor, row or block scales) run the same kernel with FP8=1: a stage
// holds 128 k of one byte where it held 64 of two, so the ring, the boxes' bytes and the
// shared memory are the 16-bit kernel's. This file holds the space, the constraints with their
// reasons, every derived quantity (tiles, shared memory, tensor map boxes, workspace, launch
// geometry) and the defaults; wgmma_tma.cu is the kernel.
#include <gemmtune/plugin_kit.hpp>

#include "wgmma_tma_kernels.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

namespace {
using namespace gt_kit;

enum Cluster : int64_t { k1x1 = 0, k2x1 = 1, k1x2 = 2, k4x1 = 3, k1x4 = 4, k2x2 = 5 };
enum Raster : int64_t { kAlongM = 0, kAlongN = 1 };
enum Stacking : int64_t { kAlongMRows = 0, kAlongNCols = 1 };
enum P { pBm, pBn, pConsumers, pWg, pStages, pInflight, pCluster, pRaster, pGroup, pPersistent, pSplit, kParams };

constexpr int kBk = 64;                // K per stage: one 128-byte swizzle span of 16-bit elements
constexpr int kBkFp8 = 128;            // the same span of FP8 elements
constexpr int kEntryRegs = 168;        // the cap at entry (65536 / 384)
// setmaxnreg of the producer warpgroup and of each consumer warpgroup. setmaxnreg.inc takes
// its registers only from what this CTA's setmaxnreg.dec gave back (the file's last 1,024
// beyond 384 x 168 are not in that pool): asking more, the consumers wait forever (1.2's 2x2
// clusters gave the producer 48 beside consumers of 232, and hung).
struct RegisterSplit {
  int producer, consumer;
  constexpr bool fits() const { return producer + 2 * consumer <= 3 * kEntryRegs; }
};
constexpr RegisterSplit kRegs{40, 232};
// A 2x2 cluster's producer works out two multicast masks and slices per stage: at 40 ptxas
// spills 16 bytes there, so it gets 56 and its consumers 8 fewer.
constexpr RegisterSplit kRegs2x2{56, 224};
static_assert(kRegs.fits() && kRegs2x2.fits(), "consumers ask more registers than the producer frees");
constexpr int kMaxAccumulators = 128;  // fp32 accumulators per consumer thread within 224 registers
// Block scales keep a second set beside them (one stage's products before its scales): two sets
// of 96 (m64n192) fit two consumers, highest register R210-R219 of 232 (224 in 2x2) over every
// cluster shape; two of 128 cannot. A single consumer's m64n192 build spills 16 to 48 bytes in
// three of five cluster shapes (ptxas of CUDA 13.0; the register count a 256-thread kernel gets
// is not the 384-thread one's), so one consumer holds at most two sets of 64 (m64n128).
constexpr int kMaxBlockAccumulators = 96;
constexpr int kMaxBlockAccumulatorsOneConsumer = 64;
constexpr int kSwizzle128B = 3;        // CU_TENSOR_MAP_SWIZZLE_128B
constexpr int kL2Promote256B = 3;      // CU_TENSOR_MAP_L2_PROMOTION_L2_256B

// The config we expect to be fastest on a large square problem: 128x256 tiles in 2x1
// clusters sharing B, four stages, a persistent grid in groups of 8 tile rows.
constexpr int64_t kPreferred[kParams] = {128, 256, 2, kAlongMRows, 4, 1, k2x1, kAlongM, 8, 1, 1};

std::vector<ParamDef> param_defs(const int64_t* def) {
  return {
      {"bm", "block tile rows (each consumer's rows are one to four m64 wgmma tiles)", {64, 128, 256}, {}, def[pBm]},
      {"bn", "block tile columns (each consumer's columns are the wgmma N of m64nNk16)", {64, 128, 192, 256}, {},
       def[pBn]},
      {"consumers", "consumer warpgroups issuing wgmma (beside the one producer warpgroup)", {1, 2}, {},
       def[pConsumers]},
      {"wg", "how two consumers share the tile: stacked along M (bm/2 rows each) or side by side along N (bn/2 columns)",
       {kAlongMRows, kAlongNCols}, {"m", "n"}, def[pWg]},
      {"stages", "shared-memory stages of (bm + bn) x 64 elements in the TMA ring", {2, 3, 4, 5, 6, 8}, {}, def[pStages]},
      {"inflight", "wgmma groups a consumer keeps in flight while issuing the next stage's (0: it waits, and "
                   "releases each stage at once)",
       {0, 1}, {}, def[pInflight]},
      {"cluster", "thread-block cluster: 2x1 and 4x1 group M tiles that share B, 1x2 and 1x4 N tiles that share A, "
       "2x2 a square whose rows share A and columns B (TMA multicast)",
       {k1x1, k2x1, k1x2, k4x1, k1x4, k2x2}, {"1x1", "2x1", "1x2", "4x1", "1x4", "2x2"}, def[pCluster]},
      {"raster", "tile order: along M (group tile rows walked column by column) or along N", {kAlongM, kAlongN},
       {"m", "n"}, def[pRaster]},
      {"group", "tiles walked along the raster direction before the next column (L2 reuse)", {1, 4, 8, 16}, {},
       def[pGroup]},
      {"persistent", "grid: one cluster per tile, or a persistent grid of one CTA per SM striding over the tiles",
       {0, 1}, {"no", "yes"}, def[pPersistent]},
      {"split", "split-K: units per tile over K, the fp32 partials added in the workspace by the last", {1, 2, 3, 4},
       {}, def[pSplit]},
  };
}

const ParamTable& base_table() {
  static const ParamTable t(param_defs(kPreferred));
  return t;
}

std::string str(int64_t v) { return std::to_string(v); }

struct Plan {
  int64_t c[kParams];
  bool fp8 = false;       // A and B are FP8 (FP8=1: k32 wgmma, scales)
  int bk = kBk;           // K per stage, in elements
  int wm = 0, wn = 0, m_sub = 0, threads = 0;
  int cluster_m = 1, cluster_n = 1;
  bool a_kmajor = true, b_kmajor = false;
  int64_t tiles_m = 0, tiles_n = 0, cluster_tiles = 0, units = 0;
  int64_t smem = 0, workspace = 0;
  int64_t k_tiles = 0;
  bool epilogue_tma = false;  // C leaves through shared memory and TMA stores
  // How C may be written (plugin ABI v4's align_c): 16-byte aligned, by TMA or pairs of
  // elements; else from registers, in pairs where C allows two elements at once, else element
  // by element (the masked epilogue: ldc odd, A and B still read by TMA).
  bool c_tma_ok = true;
  bool c_pairs = true;
};

constexpr int64_t kEpilogueChunkBytes = 64 * 128;  // the kernel's chunk: 64 rows of 128 bytes
constexpr int64_t kEpilogueBuffers = 2;            // per consumer warpgroup

// The steps of plan(), in order (the first refusal wins, so the order is part of the
// behaviour). Each checks one concern and fills its part of the plan.

// The architecture, and the input, output and scale types (16-bit or FP8).
void check_types(const gt_problem& p, const gt_device& d, Plan& pl) {
  if (d.cc_major != 9 || d.cc_minor != 0)
    throw Refusal(GT_REFUSAL_ARCH, "wgmma and setmaxnreg are sm_90a instructions (Hopper); this is sm_" +
                                       str(d.cc_major) + str(d.cc_minor));
  pl.fp8 = is_fp8(p.in_dtype) || is_fp8(p.b_dtype);
  pl.bk = pl.fp8 ? kBkFp8 : kBk;
  if (pl.fp8) {
    if (!is_fp8(p.in_dtype) || !is_fp8(p.b_dtype))
      throw Refusal(GT_REFUSAL_DTYPE, std::string("A is ") + dtype_name(p.in_dtype) + " and B " +
                                          dtype_name(p.b_dtype) + ": wgmma multiplies two FP8 operands or two 16-bit ones");
    if (p.in_dtype == GT_E5M2 && p.b_dtype == GT_E5M2)
      throw Refusal(GT_REFUSAL_DTYPE, "e5m2 x e5m2 is not a wgmma type pair (one operand must be e4m3)");
    if (is_fp8(p.out_dtype))
      throw Refusal(GT_REFUSAL_DTYPE, std::string("FP8 output ") + dtype_name(p.out_dtype) +
                                          ": wgmma_tma writes FP8 products in f32, f16 or bf16 (no FP8 C, no amax yet)");
    if (p.out_dtype != GT_F16 && p.out_dtype != GT_BF16 && p.out_dtype != GT_F32)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("output ") + dtype_name(p.out_dtype) + " (f16, bf16 or f32)");
    if (p.scale_mode != GT_SCALE_TENSOR && p.scale_mode != GT_SCALE_ROW && p.scale_mode != GT_SCALE_BLOCK)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("FP8 inputs with scale mode ") + scale_mode_name(p.scale_mode) +
                                          ": wgmma_tma scales per tensor, row or block");
    if (p.layout != GT_NT)
      throw Refusal(GT_REFUSAL_LAYOUT, "FP8 wgmma reads K-major operands only: layout nt (A stored MxK, B stored NxK), "
                                       "not " + std::string(a_transposed(p) ? "t" : "n") + (b_transposed(p) ? "t" : "n"));
  } else {
    if (p.in_dtype != GT_F16 && p.in_dtype != GT_BF16)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("wgmma_tma multiplies f16 or bf16 inputs, not ") + dtype_name(p.in_dtype));
    if (p.out_dtype != GT_F16 && p.out_dtype != GT_BF16 && p.out_dtype != GT_F32)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("output ") + dtype_name(p.out_dtype) + " (f16, bf16 or f32)");
    if (p.scale_mode != GT_SCALE_NONE)
      throw Refusal(GT_REFUSAL_DTYPE, std::string("scale mode ") + scale_mode_name(p.scale_mode) +
                                          " with " + dtype_name(p.in_dtype) + " inputs (scales are for FP8)");
  }
}

// What TMA needs of the problem: A and B 16-byte aligned (it reads them); C is written by TMA
// only where it is aligned too, else from registers (the masked epilogue).
void check_tma(const gt_problem& p, Plan& pl) {
  if (p.align_a < 16 || p.align_b < 16)
    throw Refusal(GT_REFUSAL_SHAPE, "TMA copies need 16-byte aligned operands and leading dimensions; A is aligned to " +
                                        str(p.align_a) + " bytes and B to " + str(p.align_b) +
                                        " (a padded copy would serve it)");
  const int64_t row_elems = pl.fp8 ? 16 : 8;  // elements in 16 bytes
  if (p.lda % row_elems != 0 || p.ldb % row_elems != 0)
    throw Refusal(GT_REFUSAL_SHAPE, "TMA needs rows 16 bytes apart: lda = " + str(p.lda) + ", ldb = " + str(p.ldb) +
                                        " are not multiples of " + str(row_elems) + " elements");
  const int32_t out_bytes = int32_t(dtype_size(p.out_dtype));
  if (p.align_c < out_bytes)
    throw Refusal(GT_REFUSAL_SHAPE, "C is aligned to " + str(p.align_c) + " bytes, less than its " + str(out_bytes) +
                                        "-byte elements");
  pl.c_tma_ok = p.align_c >= 16;
  pl.c_pairs = p.align_c >= 2 * out_bytes;
}

// The consumers' tiles and their accumulators, and the block's threads.
void plan_warpgroups(const gt_problem& p, const gt_device& d, Plan& pl) {
  const int64_t* cfg = pl.c;
  const int64_t bm = cfg[pBm], bn = cfg[pBn], consumers = cfg[pConsumers];
  const bool along_n = cfg[pWg] == kAlongNCols;
  if (along_n && consumers == 1)
    throw Refusal(GT_REFUSAL_CONFIG, "wg=n places two consumers side by side; with one it is the same kernel as wg=m");
  pl.wm = int(along_n ? bm : bm / consumers);
  pl.wn = int(along_n ? bn / consumers : bn);
  if (pl.wm * (along_n ? 1 : consumers) != bm || pl.wm % 64 != 0)
    throw Refusal(GT_REFUSAL_CONFIG, "bm " + str(bm) + " does not split into " + str(consumers) +
                                         " warpgroups of whole m64 tiles");
  if (pl.wn != 64 && pl.wn != 128 && pl.wn != 192 && pl.wn != 256)
    throw Refusal(GT_REFUSAL_CONFIG, "each consumer's " + str(pl.wn) + " columns are not a wgmma N (64, 128, 192, 256)");
  pl.m_sub = pl.wm / 64;
  const int64_t acc = int64_t(pl.m_sub) * pl.wn / 2;
  if (acc > kMaxAccumulators)
    throw Refusal(GT_REFUSAL_RESOURCES, str(pl.wm) + "x" + str(pl.wn) + " per consumer needs " + str(acc) +
                                            " fp32 accumulators per thread; " + str(kRegs2x2.consumer) +
                                            " registers leave room for " + str(kMaxAccumulators));
  if (pl.fp8 && p.scale_mode == GT_SCALE_BLOCK) {
    // Each stage's products are scaled and added once its wgmma are done (promotion): there is
    // no group left in flight, and the products take a second set of accumulators.
    if (cfg[pInflight] != 0)
      throw Refusal(GT_REFUSAL_CONFIG, "block scales promote each stage's wgmma group before the next is issued: "
                                       "inflight=1 is the same kernel as inflight=0");
    const int64_t room = consumers == 2 ? kMaxBlockAccumulators : kMaxBlockAccumulatorsOneConsumer;
    if (acc > room)
      throw Refusal(GT_REFUSAL_RESOURCES, str(pl.wm) + "x" + str(pl.wn) + " per consumer with block scales needs 2 x " +
                                              str(acc) + " fp32 accumulators per thread (the sums and one stage's "
                                              "products); " + str(kRegs2x2.consumer) + " registers leave room for 2 x " +
                                              str(room) + (consumers == 2 ? "" : " in a single consumer (more spills)"));
  }
  pl.threads = int(128 * (consumers + 1));
  if (pl.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + str(pl.threads) + " threads exceeds the device's " +
                                            str(d.max_threads_per_block));
}

// Shared memory: the ring, its barriers, and the TMA epilogue's buffers where they fit.
void plan_shared_memory(const gt_device& d, Plan& pl) {
  const int64_t* cfg = pl.c;
  const int64_t bm = cfg[pBm], bn = cfg[pBn], consumers = cfg[pConsumers], stages = cfg[pStages];
  pl.smem = stages * (bm + bn) * kBk * 2 + 1024 + 16 * stages + 16;
  // The epilogue goes through shared memory and TMA stores where C is 16-byte aligned (its
  // rows 16 bytes apart, as TMA needs) and two chunk buffers per consumer fit beside the ring,
  // else from registers.
  const int64_t epilogue_smem = consumers * kEpilogueBuffers * kEpilogueChunkBytes;
  pl.epilogue_tma = pl.c_tma_ok && pl.smem + epilogue_smem <= d.smem_per_block_optin;
  if (pl.epilogue_tma) pl.smem += epilogue_smem;
  if (pl.smem > d.smem_per_block_optin)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs " + str(pl.smem) + " bytes of shared memory (" + str(stages) +
                                            " stages of " + str((bm + bn) * kBk * 2) + "); the device allows " +
                                            str(d.smem_per_block_optin) + " per block");
}

// The cluster, the tile schedule and split-K's workspace.
void plan_schedule(const gt_problem& p, const gt_device& d, Plan& pl) {
  const int64_t* cfg = pl.c;
  const int64_t bm = cfg[pBm], bn = cfg[pBn];
  pl.cluster_m = cfg[pCluster] == k2x1 || cfg[pCluster] == k2x2 ? 2 : cfg[pCluster] == k4x1 ? 4 : 1;
  pl.cluster_n = cfg[pCluster] == k1x2 || cfg[pCluster] == k2x2 ? 2 : cfg[pCluster] == k1x4 ? 4 : 1;
  pl.a_kmajor = !a_transposed(p);
  pl.b_kmajor = b_transposed(p);
  pl.tiles_m = (p.m + bm - 1) / bm;
  pl.tiles_n = (p.n + bn - 1) / bn;
  if (pl.cluster_m > pl.tiles_m)
    throw Refusal(GT_REFUSAL_SHAPE, "a " + str(pl.cluster_m) + "x" + str(pl.cluster_n) + " cluster groups " +
                                        str(pl.cluster_m) + " tiles along M; M = " + str(p.m) +
                                        " is " + str(pl.tiles_m) + " tile(s) of " + str(bm));
  if (pl.cluster_n > pl.tiles_n)
    throw Refusal(GT_REFUSAL_SHAPE, "a " + str(pl.cluster_m) + "x" + str(pl.cluster_n) + " cluster groups " +
                                        str(pl.cluster_n) + " tiles along N; N = " + str(p.n) +
                                        " is " + str(pl.tiles_n) + " tile(s) of " + str(bn));
  pl.cluster_tiles = ((pl.tiles_m + pl.cluster_m - 1) / pl.cluster_m) * ((pl.tiles_n + pl.cluster_n - 1) / pl.cluster_n);
  pl.k_tiles = (p.k + pl.bk - 1) / pl.bk;
  const int64_t split = cfg[pSplit];
  if (split > pl.k_tiles)
    throw Refusal(GT_REFUSAL_SHAPE, "K = " + str(p.k) + " is " + str(pl.k_tiles) + " k tiles of " + str(pl.bk) +
                                        ", too few for " + str(split) + " splits");
  pl.units = pl.cluster_tiles * split;
  const int64_t ctas = pl.units * pl.cluster_m * pl.cluster_n;
  if (cfg[pPersistent] == 0 && ctas > 2147483647ll)
    throw Refusal(GT_REFUSAL_RESOURCES, "grid of " + str(ctas) + " blocks exceeds the device's 2^31-1");
  if (split > 1) {
    const int64_t tiles = pl.tiles_m * pl.tiles_n;
    pl.workspace = ((tiles + 63) / 64) * 64 * 4 + tiles * split * bm * bn * 4;
    const int64_t cap = d.global_mem_bytes > 0 ? d.global_mem_bytes / 8 : (int64_t(1) << 30);
    if (pl.workspace > cap)
      throw Refusal(GT_REFUSAL_RESOURCES, "split-K " + str(split) + " needs " + str(pl.workspace >> 20) +
                                              " MiB of fp32 partials; the family keeps within " + str(cap >> 20));
  }
}

// Checks the (problem, config, device) and derives everything; throws Refusal with its code.
Plan plan(const gt_problem& p, const int64_t* cfg, int32_t n, const gt_device& d) {
  base_table().check_values(cfg, n);
  Plan pl;
  std::copy(cfg, cfg + kParams, pl.c);
  check_types(p, d, pl);
  check_tma(p, pl);
  plan_warpgroups(p, d, pl);
  plan_shared_memory(d, pl);
  plan_schedule(p, d, pl);
  return pl;
}

Launch launch(const gt_problem& p, const Plan& pl) {
  const int64_t bm = pl.c[pBm], bn = pl.c[pBn];
  const int cluster = pl.cluster_m * pl.cluster_n;
  const RegisterSplit regs = pl.cluster_m > 1 && pl.cluster_n > 1 ? kRegs2x2 : kRegs;
  // The input types: IN_T and IS_BF16 for 16-bit problems (their builds are what they were
  // before FP8 existed), FP8's own four defines otherwise.
  std::vector<std::string> types;
  if (pl.fp8)
    types = {define("FP8", 1), define("A_E5M2", p.in_dtype == GT_E5M2 ? 1 : 0),
             define("B_E5M2", p.b_dtype == GT_E5M2 ? 1 : 0), define("SCALE_MODE", p.scale_mode)};
  else
    types = {define("IN_T", dtype_cuda_type(p.in_dtype)), define("IS_BF16", p.in_dtype == GT_BF16 ? 1 : 0)};
  Launch l = kernel_launch(k_wgmma_tma, k_wgmma_tma_name, "gemm_wgmma_tma", {
      types[0],
      types[1],
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("A_KMAJOR", pl.a_kmajor ? 1 : 0),
      define("B_KMAJOR", pl.b_kmajor ? 1 : 0),
      define("BM", bm),
      define("BN", bn),
      define("CONSUMERS", pl.c[pConsumers]),
      define("WG_ALONG_N", pl.c[pWg] == kAlongNCols ? 1 : 0),
      define("STAGES", pl.c[pStages]),
      define("INFLIGHT", pl.c[pInflight]),
      define("CLUSTER_M", pl.cluster_m),
      define("CLUSTER_N", pl.cluster_n),
      define("PRODUCER_REGS", regs.producer),
      define("CONSUMER_REGS", regs.consumer),
      define("EPILOGUE_TMA", pl.epilogue_tma ? 1 : 0),
      "--maxrregcount=" + std::to_string(kEntryRegs),
  });
  // Only a C that cannot take pairs names the define: an aligned build's options (and so its
  // build hash and stored measurements) stay as they were.
  if (!pl.c_pairs) l.options.insert(l.options.end() - 1, define("C_PAIRS", 0));
  if (pl.fp8) l.options.insert(l.options.begin() + 2, types.begin() + 2, types.end());
  // The operand the cluster shares is copied in slices, one per CTA (the kernel's load_stage).
  const uint32_t a_slices = uint32_t(pl.cluster_n), b_slices = uint32_t(pl.cluster_m);
  // Boxes of 128 bytes along K-major rows (64 16-bit elements, 128 FP8); MN-major (16-bit only)
  // boxes of 64 elements by 64 k rows.
  const uint32_t bk = uint32_t(pl.bk);
  l.tensor_maps = {
      tensor_map(GT_OPERAND_A, bk, pl.a_kmajor ? uint32_t(bm) / a_slices : bk / a_slices, kSwizzle128B, kL2Promote256B),
      tensor_map(GT_OPERAND_B, bk, pl.b_kmajor ? uint32_t(bn) / b_slices : bk / b_slices, kSwizzle128B, kL2Promote256B),
  };
  if (pl.epilogue_tma)  // C in chunks of 64 rows x 128 bytes
    l.tensor_maps.push_back(tensor_map(GT_OPERAND_C, uint32_t(128 / dtype_size(p.out_dtype)), 64, kSwizzle128B, 0));
  l.grid = {uint32_t(pl.units * cluster), 1, 1};
  l.cluster = {uint32_t(cluster), 1, 1};
  l.grid_per_sm = pl.c[pPersistent] ? 1 : 0;
  l.block = {uint32_t(pl.threads), 1, 1};
  l.dynamic_smem = uint32_t(pl.smem);
  l.arch_specific = true;
  l.workspace_bytes = uint64_t(pl.workspace);
  l.workspace_zero = pl.workspace ? GT_WORKSPACE_ZERO_ONCE : GT_WORKSPACE_ZERO_NEVER;  // the tile counters
  l.scalars = {pl.c[pRaster], pl.c[pGroup], pl.c[pSplit], 0, 0, 0, 0, 0};
  l.takes_scales = pl.fp8;  // (A, B, C, M, N, K, lda, ldb, ldc, workspace, scalars, scales, maps)
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

// The preferred config with some parameters changed.
std::vector<int64_t> with(std::initializer_list<std::pair<P, int64_t>> changes) {
  std::vector<int64_t> v(kPreferred, kPreferred + kParams);
  for (auto& [k, x] : changes) v[k] = x;
  return v;
}

// Strong configs, best first for a large problem; smaller tiles and split-K follow for
// problems whose tiles would leave SMs idle (M = 256 against 132 SMs). The list follows
// cuBLASLt's picks (docs/kernel-notes.md, "Readings behind the code": wgmma_tma candidates).
const std::vector<std::vector<int64_t>>& candidates() {
  static const std::vector<std::vector<int64_t>> c = {
      with({}),
      with({{pCluster, k1x2}}),
      with({{pCluster, k2x2}}),
      with({{pCluster, k1x1}}),
      with({{pBm, 256}, {pBn, 128}}),
      with({{pBm, 256}, {pBn, 128}, {pCluster, k1x2}}),
      with({{pStages, 3}}),
      with({{pBn, 192}, {pStages, 4}}),
      with({{pBn, 128}, {pStages, 6}}),
      with({{pBn, 128}, {pStages, 6}, {pCluster, k1x2}}),
      with({{pBn, 128}, {pStages, 6}, {pSplit, 2}}),
      with({{pBn, 128}, {pStages, 6}, {pCluster, k1x2}, {pSplit, 2}}),
      with({{pBn, 64}, {pStages, 6}, {pCluster, k1x2}}),
      with({{pBn, 128}, {pStages, 6}, {pSplit, 4}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 6}, {pCluster, k4x1}, {pPersistent, 0}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 8}, {pCluster, k2x1}, {pPersistent, 0}}),
      with({{pBm, 64}, {pBn, 256}, {pConsumers, 1}, {pStages, 4}, {pCluster, k4x1}, {pPersistent, 0}}),
      with({{pBm, 64}, {pBn, 256}, {pConsumers, 2}, {pWg, kAlongNCols}, {pStages, 6}, {pCluster, k2x1}}),
      with({{pBm, 128}, {pBn, 128}, {pConsumers, 2}, {pWg, kAlongNCols}, {pStages, 6}, {pCluster, k2x1}}),
      with({{pBm, 64}, {pBn, 256}, {pConsumers, 1}, {pStages, 6}, {pCluster, k1x2}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 8}, {pCluster, k1x1}}),
      with({{pBm, 64}, {pBn, 64}, {pConsumers, 1}, {pStages, 6}, {pCluster, k1x1}}),
  };
  return c;
}

// FP8 with block scales: the consumers promote each stage (no group in flight) and hold two
// accumulator sets, so at most m64n192 each. Two consumers keep the tensor cores busy while one
// of them scales and adds (DeepGEMM's argument for its two math warpgroups); one consumer
// serves the small M rows, as in the 16-bit list. FP8 with tensor or row scales runs the
// 16-bit list: the same shared memory, registers and ring (the scales cost a few registers in
// the epilogue; the SASS checks hold every candidate within the setmaxnreg split).
const std::vector<std::vector<int64_t>>& block_scale_candidates() {
  static const std::vector<std::vector<int64_t>> c = {
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}}),
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}, {pCluster, k1x2}}),
      with({{pBn, 192}, {pStages, 4}, {pInflight, 0}}),
      with({{pBn, 192}, {pStages, 4}, {pInflight, 0}, {pCluster, k1x2}}),
      with({{pBm, 64}, {pBn, 256}, {pConsumers, 2}, {pWg, kAlongNCols}, {pStages, 4}, {pInflight, 0}}),
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}, {pCluster, k1x1}}),
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}, {pSplit, 2}}),
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}, {pCluster, k1x2}, {pSplit, 2}}),
      with({{pBn, 128}, {pStages, 6}, {pInflight, 0}, {pSplit, 4}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 8}, {pInflight, 0}, {pCluster, k2x1}, {pPersistent, 0}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 6}, {pInflight, 0}, {pCluster, k4x1}, {pPersistent, 0}}),
      with({{pBm, 64}, {pBn, 128}, {pConsumers, 1}, {pStages, 8}, {pInflight, 0}, {pCluster, k1x1}}),
      with({{pBm, 64}, {pBn, 64}, {pConsumers, 1}, {pStages, 6}, {pInflight, 0}, {pCluster, k1x1}}),
  };
  return c;
}

// The candidates a problem's default and suggestions come from.
const std::vector<std::vector<int64_t>>& candidates_for(const gt_problem& p) {
  return p.scale_mode == GT_SCALE_BLOCK ? block_scale_candidates() : candidates();
}

// A relative time for a config, to choose the default by: the rounds of work each SM does
// (units over the CTAs that run at once: one per SM, in whole clusters) times one unit's MACs,
// over the tile's efficiency, with split-K's partials as a cost per extra split. The
// efficiency grows with the tile (shared-memory bytes per MAC fall with its width, and larger
// tiles amortise the pipeline's fill): (area / 128x256)^0.3, so 128x192 0.92, 128x128 0.81,
// 64x128 0.66. The exponent is fitted so that the measured fastest ranks first
// (docs/kernel-notes.md, "Readings behind the code": wgmma_tma's cost model).
double predicted_cost(const Plan& pl, const gt_device& d) {
  const int64_t cluster = pl.cluster_m * pl.cluster_n, split = pl.c[pSplit];
  const int64_t slots = std::max(cluster, int64_t(std::max(1, d.sm_count)) / cluster * cluster);
  const int64_t rounds = (pl.units * cluster + slots - 1) / slots;
  const double area = double(pl.c[pBm] * pl.c[pBn]);
  const double efficiency = std::min(1.0, std::pow(area / (128.0 * 256.0), 0.3));
  const double k_tiles_per_unit = double((pl.k_tiles + split - 1) / split);
  return double(rounds) * area * k_tiles_per_unit / efficiency * (1.0 + 0.1 * double(split - 1));
}

// The candidate of least predicted cost (the earlier one at a tie).
std::vector<int64_t> choose_default(const gt_problem& p, const gt_device& d) {
  const std::vector<int64_t>* best = nullptr;
  double best_cost = 0;
  for (auto& c : candidates_for(p)) {
    try {
      const double cost = predicted_cost(plan(p, c.data(), kParams, d), d);
      if (!best || cost < best_cost) best = &c, best_cost = cost;
    } catch (const Refusal&) {
    }
  }
  return best ? *best : candidates_for(p).front();  // nothing runs: every config is refused with its reason
}

gt_status suggest(const gt_problem* p, const gt_device* d, int32_t max, int64_t* configs, int32_t* count,
                  gt_reply* reply) {
  return guarded(reply, [&] {
    std::vector<std::vector<int64_t>> order = {choose_default(*p, *d)};
    for (auto& c : candidates_for(*p)) order.push_back(c);
    int32_t k = 0;
    std::vector<std::vector<int64_t>> seen;
    for (auto& c : order) {
      if (k >= max) break;
      if (std::find(seen.begin(), seen.end(), c) != seen.end() || !buildable(*p, c, *d)) continue;
      seen.push_back(c);
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
    static const char* clusters[] = {"no cluster", "2x1 clusters sharing B", "1x2 clusters sharing A",
                                     "4x1 clusters sharing B", "1x4 clusters sharing A",
                                     "2x2 clusters sharing A along rows and B along columns"};
    const bool along_n = c[pWg] == kAlongNCols;
    const int64_t wm = along_n ? c[pBm] : c[pBm] / c[pConsumers], wn = along_n ? c[pBn] / c[pConsumers] : c[pBn];
    const bool fp8 = p && (is_fp8(p->in_dtype) || is_fp8(p->b_dtype));
    std::string s = "wgmma m64n" + str(wn) + (fp8 ? "k32" : "k16") + ", block " + str(c[pBm]) + "x" + str(c[pBn]) + " (" +
                    str(c[pConsumers]) + " consumer warpgroup" + (c[pConsumers] > 1 ? "s" : "") + " of " + str(wm) +
                    "x" + str(wn) + ", 1 TMA producer), " + str(c[pStages]) + " stages, " +
                    (c[pInflight] ? "a wgmma group in flight, " : "each group waited for, ") + clusters[c[pCluster]] +
                    ", " +
                    (c[pPersistent] ? "persistent grid" : "one cluster per tile") + ", tiles along " +
                    (c[pRaster] == kAlongM ? "M" : "N") + " in groups of " + str(c[pGroup]) +
                    (c[pSplit] > 1 ? ", split-K " + str(c[pSplit]) : "");
    if (fp8)
      s += std::string(", ") + dtype_name(p->in_dtype) + " x " + dtype_name(p->b_dtype) + " with " +
           scale_mode_name(p->scale_mode) + " scales" +
           (p->scale_mode == GT_SCALE_BLOCK ? " (each k block of 128 promoted into the sums)" : "");
    write_msg(out, cap, s);
    return GT_OK;
  });
}

const gt_plugin kPlugin = [] {
  gt_plugin p = source_family<plan, launch>(
      // 1.10: C written in place where only C is misaligned (ABI v4's align_c: the masked
      // epilogue). 1.9: FP8 (1.6 to 1.8 name reverted experiments whose rows may still be stored).
      "wgmma_tma", "1.10",
      "Hopper (sm_90a): wgmma.mma_async fed by TMA, warp-specialised producer/consumers, clusters with TMA multicast, "
      "persistent grid, split-K; f16/bf16, and FP8 (e4m3, e5m2) with tensor, row or block scales",
      k_wgmma_tma, space_with_default<param_defs, choose_default>, describe_config);
  p.suggest = suggest;
  return p;
}();
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
