// The cuBLASLt family: cuBLASLt's heuristic picks (rank 0 is "cuBLASLt's choice") and,
// beyond them, its algorithm-config space, so that the tuner can put its own kernels
// beside cuBLASLt's pick and search cuBLASLt's algorithms like any other family.
//
// A config is the algorithm's attributes (id, tile, stages, split-K, reduction, CTA
// swizzle, custom option, cluster and inner shape) plus a workspace budget; never a
// heuristic rank, which is not portable. With the cuBLASLt version in the family version,
// create_op re-creates the algorithm from those attributes alone (AlgoInit + ConfigSet).
//
// Problem mapping. gemmtune's C is row-major M×N; cuBLASLt is column-major. A row-major
// M×N matrix is the column-major N×M matrix C^T, and C^T = B^T · A^T, so cuBLASLt's first
// operand ("X" below) is our B and its second ("Y") our A, each read in place:
//   B 'n' (K×N row-major)  = column-major N×K = B^T  -> op N;   B 't' (N×K) = K×N = B -> op T
//   A 'n' (M×K row-major)  = column-major K×M = A^T  -> op N;   A 't' (K×M) = M×K = A -> op T
//   D = C = column-major N×M with ldc.
//
// FP8 (plugin ABI v3): A and B in e4m3/e5m2, layout nt, which is cuBLASLt's "TN" (its A = our
// B transposed, its B = our A): the one layout its FP8 kernels take. The scales map the same
// way (our B's are cuBLASLt's A scales, ours of A its B scales): tensor -> SCALAR_32F, row ->
// OUTER_VEC_32F, block -> BLK128x128_32F for our B (weights) and VEC128_32F for our A. An FP8
// problem's space has one more parameter, fast_accum (cuBLASLt's FAST_ACCUM); every other
// problem's space is what it was.
//
// Without a GPU cuBLASLt cannot create a handle, so it cannot list its algorithms or their
// capabilities: describe_space and can_implement refuse with that reason; describe_config,
// the version and the provenance work everywhere.
#include "cublaslt_internal.hpp"

namespace gt_cublaslt {

// ---------------------------------------------------------------------------------------
// The operation: descriptors and the re-created algorithm, ready to run on any stream.

struct Op {
  explicit Op(const ProblemInfo& info, const Checked& ch)
      : handle(info.gpu.handle),
        descs(info.map, ch.attrs.fast_accum),
        algo(ch.algo),
        workspace(ch.result.workspaceSize),
        fp8(info.map.fp8),
        fp8_out(info.map.fp8 && is_fp8(info.problem.out_dtype)) {
    const AlgoCaps& c = info.caps.at(ch.attrs.algo);
    align_a = std::max(1u, c.align_y);
    align_b = std::max(1u, c.align_x);
    align_c = std::max(1u, c.align_c);
  }
  cublasLtHandle_t handle;
  Descs descs;
  cublasLtMatmulAlgo_t algo;
  uint64_t workspace;
  uint32_t align_a = 1, align_b = 1, align_c = 1;  // bytes our A, B and C pointers must be aligned to
  bool fp8, fp8_out;
};

// ---------------------------------------------------------------------------------------
// Entry points.

gt_status describe_space(const gt_problem* p, const gt_device* d, gt_space* out, gt_reply* reply) {
  return guarded(reply, [&] {
    *out = problem_info(p, d).table->space();
    return GT_OK;
  });
}

gt_status can_implement(const gt_problem* p, const int64_t* c, int32_t n, const gt_device* d, gt_reply* reply) {
  return guarded(reply, [&] {
    attrs_of(c, n, *p);  // the arity and ranges need no GPU
    Checked ch{};
    std::string why = config_reason(problem_info(p, d), c, n, &ch);
    if (why.empty()) return GT_OK;
    throw Refusal(GT_REFUSAL_SHAPE, why);
  });
}

gt_status suggest(const gt_problem* p, const gt_device* d, int32_t max, int64_t* configs, int32_t* count,
                  gt_reply* reply) {
  return guarded(reply, [&] {
    *count = 0;
    const ProblemInfo& info = problem_info(p, d);
    int32_t n = std::min<int32_t>(max, int32_t(info.picks.size()));
    for (int32_t i = 0; i < n; ++i)
      std::copy(info.picks[size_t(i)].config.begin(), info.picks[size_t(i)].config.end(),
                configs + size_t(i) * size_t(info.params));
    *count = n;
    return GT_OK;
  });
}

gt_status create_op(const gt_problem* p, const int64_t* c, int32_t n, void** op, uint64_t* workspace_bytes,
                    gt_reply* reply) {
  return guarded(reply, [&] {
    const ProblemInfo& info = problem_info(p, nullptr);
    Checked ch{};
    if (std::string why = config_reason(info, c, n, &ch); !why.empty()) throw Refusal(GT_REFUSAL_SHAPE, why);
    auto o = std::make_unique<Op>(info, ch);
    *workspace_bytes = o->workspace;
    *op = o.release();
    return GT_OK;
  });
}

// run_op and run_op_scaled: `scales` is an FP8 problem's (null for every other problem).
gt_status run(void* op, const void* a, const void* b, void* c, const gt_scales* scales, void* workspace,
              uint64_t workspace_bytes, void* stream, gt_reply* reply) {
  return guarded(reply, [&] {
    if (!op) throw std::invalid_argument("no operation");
    Op& o = *static_cast<Op*>(op);
    if (o.fp8 != (scales != nullptr))
      throw std::invalid_argument(o.fp8 ? "an FP8 problem runs with its scales (run_op_scaled)"
                                        : "scales were given for a problem that has none");
    if (scales) o.descs.set_scales(*scales, o.fp8_out);
    if (workspace_bytes < o.workspace || (o.workspace && !workspace))
      throw std::invalid_argument("the algorithm needs " + human_bytes(o.workspace) + " of workspace, got " +
                                  human_bytes(workspace_bytes));
    auto misaligned = [](const void* ptr, uint32_t al) { return reinterpret_cast<uintptr_t>(ptr) % al != 0; };
    if (misaligned(a, o.align_a) || misaligned(b, o.align_b) || misaligned(c, o.align_c))
      throw std::invalid_argument("an operand pointer is less aligned than the algorithm needs (A " +
                                  std::to_string(o.align_a) + ", B " + std::to_string(o.align_b) + ", C " +
                                  std::to_string(o.align_c) + " bytes)");
    // C is output only (beta 0): passed as both C and D, except under an FP8 D, whose C has
    // another type: none is passed, as nothing reads it.
    const float alpha = 1.0f, beta = 0.0f;
    const void* c_in = o.fp8_out ? nullptr : c;
    cublasStatus_t s = cublasLtMatmul(o.handle, o.descs.od(), &alpha, b, o.descs.xl(), a, o.descs.yl(), &beta, c_in,
                                      o.descs.cl(), c, o.descs.dl(), &o.algo, workspace, workspace_bytes,
                                      static_cast<cudaStream_t>(stream));
    if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtMatmul: " + status_text(s));
    return GT_OK;
  });
}

gt_status run_op(void* op, const void* a, const void* b, void* c, void* workspace, uint64_t workspace_bytes,
                 void* stream, gt_reply* reply) {
  return run(op, a, b, c, nullptr, workspace, workspace_bytes, stream, reply);
}
gt_status run_op_scaled(void* op, const void* a, const void* b, void* c, const gt_scales* scales, void* workspace,
                        uint64_t workspace_bytes, void* stream, gt_reply* reply) {
  if (!scales) {
    write_msg(reply, "run_op_scaled needs the scales");
    return GT_FAILED;
  }
  return run(op, a, b, c, scales, workspace, workspace_bytes, stream, reply);
}

void destroy_op(void* op) { delete static_cast<Op*>(op); }

// What create_op builds, without a GPU: the attributes it sets into the algorithm, for the
// problem's types and layout, with the library's version.
gt_status op_hash(const gt_problem* p, const int64_t* c, int32_t n, uint64_t* hash, gt_reply* reply) {
  return guarded(reply, [&] {
    const Attrs a = attrs_of(c, n, *p);
    std::string s = "cublaslt-algo " + std::to_string(kLtVersion);
    for (int64_t v : {int64_t(p->in_dtype), int64_t(p->out_dtype), int64_t(p->layout), int64_t(a.algo), int64_t(a.tile),
                      int64_t(a.stages), int64_t(a.split_k), int64_t(a.reduction), int64_t(a.swizzle),
                      int64_t(a.custom), int64_t(a.cluster), int64_t(a.inner), int64_t(a.workspace)})
      s += " " + std::to_string(v);
    // FP8 only, so that every other problem's hash stays what it was.
    if (a.fp8)
      s += " fp8 " + std::to_string(p->b_dtype) + " " + std::to_string(p->scale_mode) + " " + std::to_string(a.fast_accum);
    *hash = fnv1a64(s);
    return GT_OK;
  });
}

gt_status describe_config(const gt_problem* p, const int64_t* c, int32_t n, char* out, size_t cap) {
  return guarded_text(out, cap, [&] {
    Attrs a = attrs_of(c, n, *p);
    std::string s = "cuBLASLt " + version_text(kLtVersion) + " algo " + std::to_string(a.algo) + ": tile " +
                    tile_label(a.tile) + ", stages " + stages_label(a.stages) + ", split-K " +
                    std::to_string(a.split_k) +
                    (a.split_k > 1 ? " (reduction " + reduction_label(a.reduction) + ")" : std::string()) +
                    ", CTA swizzle " + (a.swizzle ? "on" : "off") + ", custom option " + std::to_string(a.custom) +
                    ", cluster " + cluster_label(a.cluster) + ", inner shape " + inner_label(a.inner) +
                    ", workspace up to " + human_bytes(a.workspace) +
                    (a.fp8 ? std::string(", fast accumulation ") + (a.fast_accum ? "on" : "off") : std::string());
    // Where the GPU is at hand, say whether this is one of the heuristic's picks.
    try {
      const ProblemInfo& info = problem_info(p, nullptr);
      if (const Pick* pk = info.pick_of(c)) {
        char waves[32];
        std::snprintf(waves, sizeof waves, "%.2f", double(pk->waves));
        s += "; heuristic rank " + std::to_string(pk->rank) + (pk->rank == 0 ? " (cuBLASLt's pick)" : "") +
             ", needs " + human_bytes(pk->workspace_needed) + " of workspace, " + waves + " waves";
      } else
        s += "; not among the heuristic's " + std::to_string(info.heuristic_returned) + " picks";
    } catch (...) {
    }
    write_msg(out, cap, s);
    return GT_OK;
  });
}

// ---------------------------------------------------------------------------------------
// Identity: the family version carries the cuBLASLt version, so that a stored config is
// stale when the library changes (its algorithms and their ids may change with it).

struct Identity {
  std::string version, summary, provenance;
  Identity() {
    version = "1.0+cublasLt" + std::to_string(kLtVersion);
    summary = "cuBLASLt " + version_text(kLtVersion) +
              ": its heuristic's picks (rank 0 is cuBLASLt's choice) and its algorithm configs (algo x tile x "
              "stages x split-K x reduction x swizzle x custom x cluster x inner shape x workspace), checked "
              "with cublasLtMatmulAlgoCheck";
    Dl_info dl{};
    const char* where = dladdr(reinterpret_cast<void*>(&cublasLtGetVersion), &dl) && dl.dli_fname ? dl.dli_fname
                                                                                                   : "unknown path";
    provenance = "cuBLASLt " + std::to_string(kLtVersion) + " (" + version_text(kLtVersion) + ") from " + where +
                 ", its CUDA runtime " + std::to_string(cublasLtGetCudartVersion()) + "; built against cublasLt.h " +
                 version_text(CUBLAS_VERSION);
  }
};
const Identity& identity() {
  static const Identity id;
  return id;
}
const char* provenance() { return identity().provenance.c_str(); }

const gt_plugin& plugin() {
  static const gt_plugin kPlugin = [] {
    gt_plugin p{};
    p.abi_version = GT_ABI_VERSION;
    p.struct_size = sizeof(gt_plugin);
    p.name = "cublaslt";
    p.version = identity().version.c_str();
    p.summary = identity().summary.c_str();
    p.kind = GT_KIND_LIBRARY;
    // The schema of every problem's space (an FP8 problem's fast_accum is not in it, so that the
    // hash, and with it every stored measurement's provenance, stays what it was before FP8).
    std::string schema;
    for (int i = 0; i < kParams; ++i) schema += std::string(kParamNames[i]) + ",";
    p.source_hash = fnv1a64(identity().version + "|" + schema);
    p.describe_space = describe_space;
    p.can_implement = can_implement;
    p.build_kernel = nullptr;
    p.suggest = suggest;
    p.create_op = create_op;
    p.run_op = run_op;
    p.run_op_scaled = run_op_scaled;
    p.destroy_op = destroy_op;
    p.op_hash = op_hash;
    p.describe_config = describe_config;
    p.provenance = provenance;
    return p;
  }();
  return kPlugin;
}
}  // namespace gt_cublaslt

using namespace gt_cublaslt;

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &plugin(); }
