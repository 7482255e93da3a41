// The `faulty` test family: one parameter, what its kernel does wrong (see faulty.cu).
// Built only for the tests, into build/tests/test_plugins/faulty/.
#include <gemmtune/plugin_kit.hpp>

#include "faulty_kernels.h"

namespace {
using namespace gt_kit;

const ParamTable& table() {
  static const ParamTable t({{"mode", "what the kernel does", {0, 1, 2, 3, 4, 5},
                              {"correct", "illegal_address", "trap", "hang", "unwritten", "misaligned"}, 0}});
  return t;
}

gt_status can_implement(const gt_problem* p, const int64_t* c, int32_t n, const gt_device*, char* msg, size_t cap) {
  return guarded(msg, cap, [&] {
    table().get(c, n, "mode");
    if (p->in_dtype != GT_F32 || p->out_dtype != GT_F32 || p->layout != GT_NN) throw Refusal("f32 nn only");
    return GT_OK;
  });
}

gt_status build_kernel(const gt_problem* p, const int64_t* c, int32_t n, const gt_device*, gt_kernel* out, char* msg,
                       size_t cap) {
  return guarded(msg, cap, [&] {
    uint32_t grid[3] = {ceil_div(p->n, 16), ceil_div(p->m, 16), 1}, block[3] = {16, 16, 1};
    KernelOut::local().fill(out, k_faulty, k_faulty_name, "gemm_faulty", {define("MODE", table().get(c, n, "mode"))},
                            grid, block, 0);
    return GT_OK;
  });
}

const gt_plugin kPlugin = source_plugin("faulty", "1.0",
                                        "kernels that fault, hang or leave output unwritten on purpose (tests only)",
                                        k_faulty, table_space<table>, can_implement, build_kernel, nullptr);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
