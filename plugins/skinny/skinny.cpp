// The skinny family: parameter space, constraints and launch geometry for skinny.cu, the
// streaming kernel for few rows of C (LLM decode: M = 1..64), where time is reading B once.
#include <gemmtune/plugin_kit.hpp>

#include "skinny_kernels.h"

#include <map>
#include <memory>
#include <mutex>

namespace {
using namespace gt_kit;

enum P { pMr, pTx, pKy, pVec, pUnroll, kParams };
// The default on a wide decode problem (M = 1, 16-byte aligned).
constexpr int64_t kPreferred[kParams] = {1, 8, 64, 16, 8};

std::vector<ParamDef> param_defs(const int64_t* def) {
  return {
      {"mr", "rows of C per block (M is covered in passes of mr rows; B is read once per pass)", {1, 2, 4, 8, 16}, {},
       def[pMr]},
      {"tx", "threads along N per block", {4, 8, 16, 32}, {}, def[pTx]},
      {"ky", "thread groups along K per block (partial sums added in shared memory)", {4, 8, 16, 32, 64, 128, 256}, {},
       def[pKy]},
      {"vec", "bytes of B per load (2, 4, 8 or 16; at most the problem's alignment)", {2, 4, 8, 16}, {}, def[pVec]},
      {"unroll", "rows of B each thread has in flight", {1, 2, 4, 8, 16}, {}, def[pUnroll]},
  };
}

const ParamTable& table() {
  static const ParamTable t(param_defs(kPreferred));
  return t;
}

constexpr int64_t kMaxPasses = 4;      // M up to 4 * mr: beyond that B is read too often
constexpr int64_t kMaxSmem = 48 * 1024;  // static launch limit, no opt-in needed

struct Plan {
  int64_t mr, tx, ky, vec_bytes, vec, unroll, threads, cols, smem, regs;
  uint32_t grid[3], block[3];
};

// Checks the (problem, config) and returns the launch plan; throws Refusal.
Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  auto& t = table();
  t.check_values(c, n);
  Plan pl{};
  pl.mr = t.get(c, n, "mr");
  pl.tx = t.get(c, n, "tx");
  pl.ky = t.get(c, n, "ky");
  pl.vec_bytes = t.get(c, n, "vec");
  pl.unroll = t.get(c, n, "unroll");
  if (p.in_dtype == GT_TF32) throw Refusal(GT_REFUSAL_DTYPE, "tf32 is a tensor-core format; skinny multiplies in fp32 on the SIMT units");
  refuse_fp8(p, "skinny");
  if (p.out_dtype == GT_TF32 || dtype_size(p.in_dtype) == 0 || dtype_size(p.out_dtype) == 0)
    throw Refusal(GT_REFUSAL_DTYPE, "unsupported dtype");
  if (b_transposed(p))
    throw Refusal(GT_REFUSAL_LAYOUT, "skinny streams rows of B (K×N row-major, layouts nn and tn); B stored transposed is not built");
  const int64_t passes = (p.m + pl.mr - 1) / pl.mr;
  if (passes > kMaxPasses)
    throw Refusal(GT_REFUSAL_SHAPE, "M = " + std::to_string(p.m) + " takes " + std::to_string(passes) + " passes of mr = " +
                  std::to_string(pl.mr) + " rows over B; the family builds at most " + std::to_string(kMaxPasses));
  if (pl.mr > 1 && pl.mr / 2 >= p.m)
    throw Refusal(GT_REFUSAL_CONFIG, "mr = " + std::to_string(pl.mr) + " for M = " + std::to_string(p.m) +
                  ": half the rows or more would be empty (a smaller mr is the same kernel with less waste)");
  const int64_t es = int64_t(dtype_size(p.in_dtype));
  if (pl.vec_bytes < es) throw Refusal(GT_REFUSAL_CONFIG, "vec of " + std::to_string(pl.vec_bytes) + " bytes is under one element");
  if (p.align_bytes < pl.vec_bytes)
    throw Refusal(GT_REFUSAL_SHAPE, "vec=" + std::to_string(pl.vec_bytes) + " loads " + std::to_string(pl.vec_bytes) +
                  " bytes at a time, but the problem is aligned to only " + std::to_string(p.align_bytes));
  pl.vec = pl.vec_bytes / es;
  pl.threads = pl.tx * pl.ky;
  if (pl.threads < 32) throw Refusal(GT_REFUSAL_CONFIG, "block of " + std::to_string(pl.threads) + " threads is under one warp");
  if (pl.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + std::to_string(pl.threads) + " threads exceeds the device's " +
                  std::to_string(d.max_threads_per_block));
  pl.cols = pl.tx * pl.vec;
  pl.smem = pl.ky * pl.mr * pl.cols * 4;
  if (pl.smem > kMaxSmem || pl.smem > d.smem_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "the partial sums need " + std::to_string(pl.smem) +
                  " bytes of shared memory; the family stays within 48 KiB and the device's " +
                  std::to_string(d.smem_per_block) + " per block");
  // Accumulators, the rows in flight, ~24 for addresses and loop state.
  pl.regs = pl.mr * pl.vec + pl.unroll * ((pl.vec_bytes + 3) / 4) + 24;
  if (pl.regs > 255 || pl.regs * pl.threads > d.regs_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "needs about " + std::to_string(pl.regs) + " registers per thread; the device gives " +
                  std::to_string(pl.threads) + " threads at most " +
                  std::to_string(std::min<int64_t>(255, d.regs_per_block / pl.threads)));
  const int64_t gx = (p.n + pl.cols - 1) / pl.cols;
  if (gx > 2147483647ll) throw Refusal(GT_REFUSAL_RESOURCES, "grid.x exceeds the device's 2^31-1");
  if (passes > 65535) throw Refusal(GT_REFUSAL_RESOURCES, "grid.y exceeds the device's 65535");
  pl.grid[0] = uint32_t(gx);
  pl.grid[1] = uint32_t(passes);
  pl.grid[2] = 1;
  pl.block[0] = uint32_t(pl.threads);
  pl.block[1] = pl.block[2] = 1;
  return pl;
}

Launch launch(const gt_problem& p, const Plan& pl) {
  Launch l = kernel_launch(k_skinny, k_skinny_name, "gemm_skinny", {
      define("IN_T", dtype_cuda_type(p.in_dtype)),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("MR", pl.mr),
      define("TX", pl.tx),
      define("KY", pl.ky),
      define("VEC", pl.vec),
      define("UNROLL", pl.unroll),
  });
  l.grid = {pl.grid[0], pl.grid[1], pl.grid[2]};
  l.block = {pl.block[0], pl.block[1], pl.block[2]};
  l.dynamic_smem = uint32_t(pl.smem);
  return l;
}

gt_status describe_config(const gt_problem* p, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    auto& t = table();
    const int64_t es = int64_t(dtype_size(p->in_dtype));
    const int64_t vec_bytes = t.get(c, n, "vec");
    const int64_t cols = t.get(c, n, "tx") * (es > 0 ? vec_bytes / es : 0);
    write_msg(out, cap,
              std::to_string(t.get(c, n, "mr")) + " rows x " + std::to_string(cols) + " columns per block, " +
                  std::to_string(t.get(c, n, "tx") * t.get(c, n, "ky")) + " threads (" +
                  std::to_string(t.get(c, n, "ky")) + " groups along K), " + std::to_string(vec_bytes) +
                  "-byte loads of B, " + std::to_string(t.get(c, n, "unroll")) + " rows in flight");
    return GT_OK;
  });
}

// The default for a problem: the preferred config with the fewest rows per block that cover M
// in at most kMaxPasses passes, the widest loads the alignment allows, and the block made
// smaller where the partial sums would not fit.
std::vector<int64_t> choose_default(const gt_problem& p, const gt_device& d) {
  for (int64_t mr : {1, 2, 4, 8, 16})
    for (int64_t vec : {16, 8, 4, 2})
      for (int64_t ky : {64, 32, 16, 8, 4}) {
        const std::vector<int64_t> c = {mr, kPreferred[pTx], ky, vec, kPreferred[pUnroll]};
        try {
          plan(p, c.data(), kParams, d);
          return c;
        } catch (const Refusal&) {
        }
      }
  return {kPreferred, kPreferred + kParams};  // nothing runs: every config is refused with its reason
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "skinny", "1.0",
    "streams B once for few rows of C (M up to 64, LLM decode): K split over the block, fp32 SIMT FMAs, partial sums "
    "added in shared memory",
    k_skinny, space_with_default<param_defs, choose_default>, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
