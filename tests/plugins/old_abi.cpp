// A plugin built against an older plugin ABI (OLD_ABI: 2 or 3), which the host must still
// load: its table is the prefix of today's (v2: up to run_op_scaled; v3 is v4's table whole),
// and it reads only the prefix of gt_problem that its version declared (OldProblem below), so
// it never sees v4's per-operand alignment. It refuses by what it reads: a misaligned problem
// (align_bytes) and, in v3, mixed types (b_dtype) — read at the wrong offset, they would not
// refuse as the tests expect.
#include <gemmtune/plugin_abi.h>

#include <cstdio>
#include <cstring>

#ifndef OLD_ABI
#define OLD_ABI 3
#endif

namespace {

// gt_problem as version OLD_ABI declared it.
struct OldProblem {
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int32_t in_dtype, out_dtype, layout, align_bytes;
#if OLD_ABI >= 3
  int32_t b_dtype, scale_mode;
#endif
};
// Today's header only appends: each old field is where the old plugin reads it.
static_assert(offsetof(OldProblem, align_bytes) == offsetof(gt_problem, align_bytes), "v2's prefix moved");
#if OLD_ABI >= 3
static_assert(offsetof(OldProblem, scale_mode) == offsetof(gt_problem, scale_mode), "v3's prefix moved");
static_assert(sizeof(OldProblem) == offsetof(gt_problem, align_a), "v4 appends after v3's fields");
#endif

gt_status refuse(gt_reply* r, gt_refusal code, const char* msg) {
  if (r && r->msg && r->msg_cap) std::snprintf(r->msg, r->msg_cap, "%s", msg);
  if (r) r->refusal = code;
  return GT_REFUSED;
}

const int64_t kBx[] = {32, 64};
const gt_param kParams[] = {{"bx", "threads per block", kBx, nullptr, 2, 0}};

gt_status describe_space(const gt_problem*, const gt_device*, gt_space* out, gt_reply*) {
  out->params = kParams;
  out->count = 1;
  return GT_OK;
}

gt_status can_implement(const gt_problem* gp, const int64_t*, int32_t n, const gt_device*, gt_reply* r) {
  const auto* p = reinterpret_cast<const OldProblem*>(gp);
  if (n != 1) return refuse(r, GT_REFUSAL_CONFIG, "one parameter");
  if (p->in_dtype != GT_F32 && p->in_dtype != GT_E4M3) return refuse(r, GT_REFUSAL_DTYPE, "f32 (or e4m3) inputs only");
#if OLD_ABI >= 3
  if (p->b_dtype != p->in_dtype) return refuse(r, GT_REFUSAL_DTYPE, "A and B of one type only");
#endif
  if (p->align_bytes < 16) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "aligned to %d bytes; this family needs 16", int(p->align_bytes));
    return refuse(r, GT_REFUSAL_SHAPE, msg);
  }
  return GT_OK;
}

const char* const kNoOptions[] = {nullptr};

gt_status build_kernel(const gt_problem* gp, const int64_t* c, int32_t n, const gt_device* d, gt_kernel* out,
                       gt_reply* r) {
  if (gt_status s = can_implement(gp, c, n, d, r); s != GT_OK) return s;
  std::memset(out, 0, sizeof *out);
  out->source = "extern \"C\" __global__ void old_abi_kernel() {}\n";
  out->source_name = "old_abi.cu";
  out->kernel_name = "old_abi_kernel";
  out->options = kNoOptions;
  out->grid[0] = out->grid[1] = out->grid[2] = 1;
  out->block[0] = uint32_t(c[0]);
  out->block[1] = out->block[2] = 1;
  return GT_OK;
}

const gt_plugin kTable = [] {
  gt_plugin p{};
  p.abi_version = OLD_ABI;
  p.struct_size = OLD_ABI >= 3 ? uint32_t(sizeof(gt_plugin)) : uint32_t(GT_PLUGIN_V2_SIZE);
  p.name = OLD_ABI >= 3 ? "abi_v3_family" : "abi_v2_family";
  p.version = "1.0";
  p.summary = "built against an older plugin ABI (tests only)";
  p.kind = GT_KIND_SOURCE;
  p.describe_space = describe_space;
  p.can_implement = can_implement;
  p.build_kernel = build_kernel;
  return p;
}();

}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &kTable; }
