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

struct Geometry {
  uint32_t grid[3], block[3];
};

// Checks the (problem, config) and returns the launch geometry; throws Refusal.
Geometry plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  auto& t = table();
  int64_t map = t.get(c, n, "map"), bx = t.get(c, n, "bx"), by = t.get(c, n, "by");
  for (int i = 0; i < t.size(); ++i)
    if (!t.contains(i, c[i])) throw Refusal("value not in the space");
  if (p.out_dtype == GT_TF32 || dtype_size(p.in_dtype) == 0 || dtype_size(p.out_dtype) == 0)
    throw Refusal("unsupported dtype");
  int64_t threads = bx * by;
  if (threads < 32) throw Refusal("block of " + std::to_string(threads) + " threads is under one warp");
  if (threads > d.max_threads_per_block)
    throw Refusal("block of " + std::to_string(threads) + " threads exceeds the device's " +
                  std::to_string(d.max_threads_per_block));
  int64_t rows = map == 0 ? p.m : p.n;  // extent along grid.y
  int64_t cols = map == 0 ? p.n : p.m;  // extent along grid.x
  Geometry g{{ceil_div(cols, bx), ceil_div(rows, by), 1}, {uint32_t(bx), uint32_t(by), 1}};
  if ((rows + by - 1) / by > 65535)
    throw Refusal("grid.y of " + std::to_string((rows + by - 1) / by) + " blocks exceeds 65535");
  if ((cols + bx - 1) / bx > 2147483647ll) throw Refusal("grid.x exceeds 2^31-1");
  return g;
}

gt_status build_kernel(const gt_problem* p, const int64_t* c, int32_t n, const gt_device* d, gt_kernel* out,
                       char* msg, size_t cap) {
  return guarded(msg, cap, [&] {
    Geometry g = plan(*p, c, n, *d);
    auto& t = table();
    std::vector<std::string> opts = {
        define("IN_T", dtype_cuda_type(p->in_dtype)),
        define("OUT_T", dtype_cuda_type(p->out_dtype)),
        define("TF32", p->in_dtype == GT_TF32 ? 1 : 0),
        define("A_TRANS", a_transposed(*p) ? 1 : 0),
        define("B_TRANS", b_transposed(*p) ? 1 : 0),
        define("MAPPING", t.get(c, n, "map")),
        define("BX", t.get(c, n, "bx")),
        define("BY", t.get(c, n, "by")),
    };
    KernelOut::local().fill(out, k_naive, k_naive_name, "gemm_naive", std::move(opts), g.grid, g.block, 0);
    return GT_OK;
  });
}

gt_status describe_config(const gt_problem*, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded(out, cap, [&] {
    auto& t = table();
    write_msg(out, cap,
              std::string(t.get(c, n, "map") == 0 ? "coalesced" : "uncoalesced") + " mapping, block " +
                  std::to_string(t.get(c, n, "bx")) + "x" + std::to_string(t.get(c, n, "by")));
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_plugin("naive", "1.0",
                              "one thread per output element, operands from global memory (the lab's first rung)",
                              k_naive,
                              table_space<table>, can_implement_by_plan<plan>, build_kernel, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
