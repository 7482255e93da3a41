// The shared_tile family: parameter space, constraints and launch geometry for shared_tile.cu
// (the lab's shared-memory tiling rung, with rectangular tiles, a k-depth of its own and
// padding against bank conflicts as parameters).
#include <gemmtune/plugin_kit.hpp>

#include "shared_tile_kernels.h"


namespace {
using namespace gt_kit;

const ParamTable& table() {
  static const ParamTable t({
      {"tile_m", "output tile rows = thread rows of the block (one thread per element of C)", {8, 16, 32}, {}, 32},
      {"tile_n", "output tile columns = thread columns of the block (along N, the coalesced axis)", {8, 16, 32}, {}, 32},
      {"tile_k", "k-depth of the tiles of A and B staged in shared memory", {8, 16, 32}, {}, 32},
      {"pad", "floats of padding per shared-memory row: 1 avoids bank conflicts on transposed stores and A reads",
       {0, 1}, {}, 1},
  });
  return t;
}

struct Plan {
  int64_t tile_m, tile_n, tile_k, pad, threads, smem_bytes, blocks;
};

std::string s(int64_t v) { return std::to_string(v); }

// Checks the (problem, config) and derives the launch; throws Refusal.
Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  auto& t = table();
  t.check_values(c, n);
  Plan P{};
  P.tile_m = c[0], P.tile_n = c[1], P.tile_k = c[2], P.pad = c[3];
  // Scalar loads and stores only: any alignment the element types themselves have will do.
  refuse_fp8(p, "shared_tile");
  if (dtype_size(p.in_dtype) == 0 || dtype_size(p.out_dtype) == 0 || p.out_dtype == GT_TF32)
    throw Refusal(GT_REFUSAL_DTYPE, "unsupported dtype");
  P.threads = P.tile_m * P.tile_n;
  if (P.threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + s(P.threads) + " threads exceeds the device's " +
                                            s(d.max_threads_per_block) + " threads");
  P.smem_bytes = (P.tile_m * (P.tile_k + P.pad) + P.tile_k * (P.tile_n + P.pad)) * 4;
  if (P.smem_bytes > d.smem_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES,
                  "needs " + s(P.smem_bytes) + " bytes of shared memory; the device allows " + s(d.smem_per_block));
  // The kernel compiles to far fewer than 64 registers per thread; the block must still fit.
  if (P.threads * 32 > d.regs_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + s(P.threads) +
                                            " threads needs more registers than the device's " + s(d.regs_per_block));
  P.blocks = ((p.m + P.tile_m - 1) / P.tile_m) * ((p.n + P.tile_n - 1) / P.tile_n);
  if (P.blocks > 2147483647ll)
    throw Refusal(GT_REFUSAL_RESOURCES, "grid of " + s(P.blocks) + " blocks exceeds the device's 2^31-1");
  return P;
}

Launch launch(const gt_problem& p, const Plan& P) {
  Launch l = kernel_launch(k_shared_tile, k_shared_tile_name, "gemm_shared_tile", {
      define("IN_T", dtype_cuda_type(p.in_dtype)),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("TF32", p.in_dtype == GT_TF32 ? 1 : 0),
      define("HALF_TYPES", dtype_size(p.in_dtype) == 2 || dtype_size(p.out_dtype) == 2 ? 1 : 0),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("B_TRANS", b_transposed(p) ? 1 : 0),
      define("TILE_M", P.tile_m),
      define("TILE_N", P.tile_n),
      define("TILE_K", P.tile_k),
      define("PAD", P.pad),
  });
  l.grid = {uint32_t(P.blocks), 1, 1};
  l.block = {uint32_t(P.tile_n), uint32_t(P.tile_m), 1};
  return l;
}

gt_status describe_config(const gt_problem*, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    auto& t = table();
    const int64_t tm = t.get(c, n, "tile_m"), tn = t.get(c, n, "tile_n"), tk = t.get(c, n, "tile_k");
    write_msg(out, cap,
              s(tm) + "x" + s(tn) + " output tile (" + s(tm * tn) + " threads, one element each), k-step " + s(tk) +
                  (t.get(c, n, "pad") ? ", shared rows padded by 1" : ", shared rows unpadded"));
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "shared_tile", "1.0",
    "tiles of A and B staged in shared memory with coalesced loads, one thread per output element (the lab's third rung)",
    k_shared_tile, table_space<table>, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
