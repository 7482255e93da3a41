// The skinny_mma family: parameter space, constraints and launch geometry for skinny_mma.cu,
// the tensor-core streaming kernel for few rows of C (LLM decode, M = 1..64): B read once,
// straight into mma fragments (no shared memory on the way in), K split over a block's warps.
#include <gemmtune/plugin_kit.hpp>

#include "skinny_mma_kernels.h"

namespace {
using namespace gt_kit;

const ParamTable& table() {
  static const ParamTable t({
      {"mt", "m16 tiles per block (16, 32 or 64 rows of C; M is covered in passes, B read once per pass)",
       {1, 2, 4}, {}, 1},
      {"nw", "32-column groups per block (each row of B is read 64 or 128 bytes at a time)", {1, 2}, {}, 1},
      {"wk", "warps per block, splitting K in steps of 32 (partial tiles added in shared memory)",
       {2, 4, 8, 16, 32}, {}, 16},
      {"unroll", "k32 steps of B each warp has in flight", {1, 2, 4, 8}, {}, 2},
  });
  return t;
}

constexpr int64_t kMaxPasses = 4;  // M up to 4 * 16·mt: beyond that B is read too often

struct Plan {
  int64_t mt, nw, wk, unroll, threads, smem, regs;
  uint32_t grid[3], block[3];
};

// Checks the (problem, config) and returns the launch plan; throws Refusal.
Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  auto& t = table();
  t.check_values(c, n);
  Plan pl{};
  pl.mt = t.get(c, n, "mt");
  pl.nw = t.get(c, n, "nw");
  pl.wk = t.get(c, n, "wk");
  pl.unroll = t.get(c, n, "unroll");
  if (p.in_dtype != GT_F16 && p.in_dtype != GT_BF16)
    throw Refusal(GT_REFUSAL_DTYPE, std::string("skinny_mma multiplies f16 or bf16 on the tensor cores (mma.m16n8k16), not ") +
                  dtype_name(p.in_dtype));
  if (p.out_dtype == GT_TF32 || dtype_size(p.out_dtype) == 0) throw Refusal(GT_REFUSAL_DTYPE, "unsupported output dtype");
  if (d.cc_major < 8) throw Refusal(GT_REFUSAL_ARCH, "movmatrix and bf16 mma need sm_80 or newer; this GPU is sm_" +
                                    std::to_string(d.cc_major) + std::to_string(d.cc_minor));
  if (b_transposed(p))
    throw Refusal(GT_REFUSAL_LAYOUT, "skinny_mma streams rows of B (K×N row-major, layouts nn and tn); B stored transposed is not built");
  if (p.align_bytes < 16)
    throw Refusal(GT_REFUSAL_SHAPE, "skinny_mma loads 16 bytes of B at a time, but the problem is aligned to only " +
                  std::to_string(p.align_bytes));
  const int64_t rows = 16 * pl.mt;
  const int64_t passes = (p.m + rows - 1) / rows;
  if (passes > kMaxPasses)
    throw Refusal(GT_REFUSAL_SHAPE, "M = " + std::to_string(p.m) + " takes " + std::to_string(passes) + " passes of " +
                  std::to_string(rows) + " rows over B; the family builds at most " + std::to_string(kMaxPasses));
  if (pl.mt > 1 && 16 * (pl.mt / 2) >= p.m)
    throw Refusal(GT_REFUSAL_CONFIG, "mt = " + std::to_string(pl.mt) + " for M = " + std::to_string(p.m) +
                  ": half the m16 tiles or more would be empty (a smaller mt is the same kernel with less waste)");
  pl.threads = 32 * pl.wk;
  if (pl.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + std::to_string(pl.threads) + " threads exceeds the device's " +
                  std::to_string(d.max_threads_per_block));
  pl.smem = pl.wk * rows * 32 * pl.nw * 4;
  if (pl.smem > d.smem_per_block_optin)
    throw Refusal(GT_REFUSAL_RESOURCES, "the partial tiles need " + std::to_string(pl.smem) + " bytes of shared memory; the device gives " +
                  std::to_string(d.smem_per_block_optin) + " per block");
  // Accumulators (16 per m16 tile and 32-column group), B in flight (16 per group and k32
  // step), A's fragments of a step (8 per m16 tile), B's fragments, ~24 for addresses and loops.
  pl.regs = 16 * pl.mt * pl.nw + 16 * pl.nw * pl.unroll + 8 * pl.mt + 8 * pl.nw + 24;
  if (pl.regs > 255 || pl.regs * pl.threads > d.regs_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + std::to_string(pl.regs) + " registers per thread; the device gives " +
                  std::to_string(pl.threads) + " threads at most " +
                  std::to_string(std::min<int64_t>(255, d.regs_per_block / pl.threads)));
  const int64_t gx = (p.n + 32 * pl.nw - 1) / (32 * pl.nw);
  if (gx > 2147483647ll) throw Refusal(GT_REFUSAL_RESOURCES, "grid.x exceeds the device's 2^31-1");
  pl.grid[0] = uint32_t(gx);
  pl.grid[1] = uint32_t(passes);
  pl.grid[2] = 1;
  pl.block[0] = uint32_t(pl.threads);
  pl.block[1] = pl.block[2] = 1;
  return pl;
}

Launch launch(const gt_problem& p, const Plan& pl) {
  Launch l = kernel_launch(k_skinny_mma, k_skinny_mma_name, "gemm_skinny_mma", {
      define("IN_T", dtype_cuda_type(p.in_dtype)),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("IS_BF16", p.in_dtype == GT_BF16 ? 1 : 0),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("MT", pl.mt),
      define("NW", pl.nw),
      define("WK", pl.wk),
      define("UNROLL", pl.unroll),
  });
  l.grid = {pl.grid[0], pl.grid[1], pl.grid[2]};
  l.block = {pl.block[0], pl.block[1], pl.block[2]};
  l.dynamic_smem = uint32_t(pl.smem);
  return l;
}

gt_status describe_config(const gt_problem*, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    auto& t = table();
    write_msg(out, cap,
              std::to_string(16 * t.get(c, n, "mt")) + " rows x " + std::to_string(32 * t.get(c, n, "nw")) +
                  " columns per block, " + std::to_string(t.get(c, n, "wk")) + " warps along K, " +
                  std::to_string(t.get(c, n, "unroll")) + " k32 steps of B in flight per warp");
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "skinny_mma", "1.0",
    "streams B once for few rows of C (M up to 64, LLM decode) into tensor-core fragments: mma.m16n8k16 with "
    "movmatrix, K split over the block's warps",
    k_skinny_mma, table_space<table>, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
