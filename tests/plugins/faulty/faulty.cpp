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

struct Plan {
  int64_t mode;
};

Plan plan(const gt_problem& p, const int64_t* c, int32_t n, const gt_device&) {
  table().check_values(c, n);
  if (p.in_dtype != GT_F32 || p.out_dtype != GT_F32) throw Refusal(GT_REFUSAL_DTYPE, "f32 only");
  if (p.layout != GT_NN) throw Refusal(GT_REFUSAL_LAYOUT, "layout nn only");
  return Plan{table().get(c, n, "mode")};
}

Launch launch(const gt_problem& p, const Plan& pl) {
  Launch l = kernel_launch(k_faulty, k_faulty_name, "gemm_faulty", {define("MODE", pl.mode)});
  l.grid = {ceil_div(p.n, 16), ceil_div(p.m, 16), 1};
  l.block = {16, 16, 1};
  return l;
}

const gt_plugin kPlugin = source_family<plan, launch>(
    "faulty", "1.0", "kernels that fault, hang or leave output unwritten on purpose (tests only)", k_faulty,
    table_space<table>, nullptr);
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kPlugin; }
