// The `requests` test family: a correct fp32 nn GEMM whose build asks for everything plugin
// ABI v2 offers — a TMA tensor map of A, a 2x1 thread-block cluster, a workspace zeroed once,
// launch scalars, the architecture-specific target — so that the CPU tests exercise every
// request through core, and the GPU tests see each one provided (the kernel traps otherwise).
// GEMMTUNE_TEST_HOST_TAG, when set, changes a define the way an edit of host code would,
// without a version bump (the fingerprint test). Built only for the tests.
#include <gemmtune/plugin_kit.hpp>

#include "requests_kernels.h"

#include <cstdlib>

namespace {
using namespace gt_kit;

const ParamTable& table() {
  static const ParamTable t({
      {"bx", "threads per block along N", {16, 32}, {}, 16},
      {"by", "threads per block along M", {8, 16}, {}, 16},
  });
  return t;
}

constexpr int64_t kMagic = 12345;

struct Plan {
  int64_t bx, by;
  uint32_t grid_x, grid_y;
};

Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device& d) {
  table().check_values(c, n);
  if (p.in_dtype != GT_F32 || p.out_dtype != GT_F32) throw Refusal(GT_REFUSAL_DTYPE, "f32 -> f32 only");
  if (p.layout != GT_NN) throw Refusal(GT_REFUSAL_LAYOUT, "layout nn only");
  if (d.cc_major != 9) throw Refusal(GT_REFUSAL_ARCH, "clusters and TMA as built here need sm_90a");
  if (p.align_bytes < 16 || p.lda % 4 != 0)
    throw Refusal(GT_REFUSAL_SHAPE, "the tensor map of A needs 16-byte aligned rows");
  Plan pl{table().get(c, n, "bx"), table().get(c, n, "by"), 0, 0};
  pl.grid_x = (ceil_div(p.n, pl.bx) + 1) / 2 * 2;  // a whole number of 2x1 clusters
  pl.grid_y = ceil_div(p.m, pl.by);
  if (pl.grid_y > 65535) throw Refusal(GT_REFUSAL_RESOURCES, "grid.y exceeds the device's 65535");
  return pl;
}

Launch launch(const gt_problem&, const Plan& pl) {
  Launch l = kernel_launch(k_requests, k_requests_name, "gemm_requests",
                           {define("BX", pl.bx), define("BY", pl.by), define("CLUSTER_X", 2), define("MAGIC", kMagic)});
  if (const char* tag = std::getenv("GEMMTUNE_TEST_HOST_TAG"); tag && *tag) l.options.push_back(define("HOST_TAG", tag));
  l.grid = {pl.grid_x, pl.grid_y, 1};
  l.block = {uint32_t(pl.bx), uint32_t(pl.by), 1};
  l.cluster = {2, 1, 1};
  l.arch_specific = true;
  l.workspace_bytes = 256;
  l.workspace_zero = GT_WORKSPACE_ZERO_ONCE;
  l.tensor_maps = {tensor_map(GT_OPERAND_A, 8, 8, /*no swizzle*/ 0)};
  l.scalars = {kMagic, 0, 0, 0, 0, 0, 0, 0};
  return l;
}

gt_status describe_config(const gt_problem*, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    write_msg(out, cap, "block " + std::to_string(table().get(c, n, "bx")) + "x" + std::to_string(table().get(c, n, "by")) +
                            " in 2x1 clusters, A checked through a tensor map");
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "requests", "1.0", "every plugin ABI v2 request at once: tensor map, 2x1 cluster, workspace, scalars (tests only)",
    k_requests, table_space<table>, describe_config);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
