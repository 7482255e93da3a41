// The naive family: parameter space, constraints and launch geometry for naive.cu.
#include <gemmtune/plugin_kit.hpp>

#include "naive_kernels.h"

namespace {
using namespace gt_kit;

const ParamTable& table() {
  static const ParamTable t({
      {"map", "thread mapping: consecutive threads along columns (coalesced) or rows of C",
       {0, 1}, {"coalesced", "uncoalesced"}, 0},
      {"bx", "threads per block in x", {8, 16, 32, 64, 128, 256}, {}, 32},
      {"by", "threads per block in y", {1, 2, 4, 8, 16, 32}, {}, 8},
  });
  return t;
}

struct Plan {
  int64_t map, bx, by;
  uint32_t grid[3];
};

// Checks the (problem, config) and derives the launch geometry; throws Refusal.
Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  auto& t = table();
  t.check_values(c, n);
  Plan pl{t.get(c, n, "map"), t.get(c, n, "bx"), t.get(c, n, "by"), {}};
  refuse_fp8(p, "naive");
  if (p.out_dtype == GT_TF32 || dtype_size(p.in_dtype) == 0 || dtype_size(p.out_dtype) == 0)
    throw Refusal(GT_REFUSAL_DTYPE, "unsupported dtype");
  const int64_t threads = pl.bx * pl.by;
  if (threads < 32)
    throw Refusal(GT_REFUSAL_CONFIG, "block of " + std::to_string(threads) + " threads is under one warp");
  if (threads > d.max_threads_per_block)
    throw Refusal(GT_REFUSAL_RESOURCES, "block of " + std::to_string(threads) + " threads exceeds the device's " +
                                            std::to_string(d.max_threads_per_block));
  const int64_t rows = pl.map == 0 ? p.m : p.n;  // extent along grid.y
  const int64_t cols = pl.map == 0 ? p.n : p.m;  // extent along grid.x
  if ((rows + pl.by - 1) / pl.by > 65535)
    throw Refusal(GT_REFUSAL_RESOURCES,
                  "grid.y of " + std::to_string((rows + pl.by - 1) / pl.by) + " blocks exceeds the device's 65535");
  if ((cols + pl.bx - 1) / pl.bx > 2147483647ll) throw Refusal(GT_REFUSAL_RESOURCES, "grid.x exceeds the device's 2^31-1");
  pl.grid[0] = ceil_div(cols, pl.bx);
  pl.grid[1] = ceil_div(rows, pl.by);
  pl.grid[2] = 1;
  return pl;
}

Launch launch(const gt_problem& p, const Plan& pl) {
  Launch l = kernel_launch(k_naive, k_naive_name, "gemm_naive", {
      define("IN_T", dtype_cuda_type(p.in_dtype)),
      define("OUT_T", dtype_cuda_type(p.out_dtype)),
      define("TF32", p.in_dtype == GT_TF32 ? 1 : 0),
      define("A_TRANS", a_transposed(p) ? 1 : 0),
      define("B_TRANS", b_transposed(p) ? 1 : 0),
      define("MAPPING", pl.map),
      define("BX", pl.bx),
      define("BY", pl.by),
  });
  l.grid = {pl.grid[0], pl.grid[1], pl.grid[2]};
  l.block = {uint32_t(pl.bx), uint32_t(pl.by), 1};
  return l;
}

gt_status describe_config(const gt_problem*, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    auto& t = table();
    write_msg(out, cap,
              std::string(t.get(c, n, "map") == 0 ? "coalesced" : "uncoalesced") + " mapping, block " +
                  std::to_string(t.get(c, n, "bx")) + "x" + std::to_string(t.get(c, n, "by")));
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "naive", "1.0", "one thread per output element, operands from global memory (the lab's first rung)", k_naive,
    table_space<table>, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
