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
#include <gemmtune/plugin_kit.hpp>

#include "cublaslt_enum_names.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {
using namespace gt_kit;

// ---------------------------------------------------------------------------------------
// Parameters: a fixed order; the value lists depend on the problem and the GPU.

// kParams: every problem's parameters; an FP8 problem's space adds kFastAccum after them.
enum Param { kAlgo, kTile, kStages, kSplitK, kReduction, kSwizzle, kCustom, kCluster, kInner, kWorkspace, kParams,
             kFastAccum = kParams, kAllParams };

const char* const kParamNames[kAllParams] = {"algo",   "tile",   "stages",  "split_k", "reduction", "swizzle",
                                             "custom", "cluster", "inner",  "workspace", "fast_accum"};
const char* const kParamHelp[kAllParams] = {
    "cuBLASLt algorithm id (cublasLtMatmulAlgoGetIds for these types); tiles and stages below are per algorithm",
    "CTA tile of C^T as cuBLASLt sees it (its rows are our N); undef: the algorithm's own",
    "K-slice size x pipeline stages read into shared memory (auto: chosen by the kernel); undef: the algorithm's own",
    "number of parts K is split into and computed in parallel",
    "how split-K parts are summed: none (split_k 1), inplace (in C, counters in the workspace), out_of_place "
    "(fp32 partials in the workspace, then a reduction kernel), out_of_place_output (partials in C's type)",
    "CTA swizzling: 1 remaps the grid so that neighbouring CTAs share operand tiles in L2",
    "algorithm-specific custom option (0..CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX)",
    "thread-block cluster shape (sm_90+); auto: cuBLASLt chooses",
    "inner (MMA instruction) shape; undef: the algorithm's own",
    "workspace the algorithm may use, in bytes; a config takes the smallest that its algorithm needs",
    "FP8: 1 adds products in the tensor cores' own precision without promoting them to fp32 every so often "
    "(CUBLASLT_MATMUL_DESC_FAST_ACCUM): faster, less exact; explored only when asked (--fast-accum)",
};

bool fp8_problem(const gt_problem& p) { return is_fp8(p.in_dtype); }
// The number of parameters of a problem's space.
int params_of(const gt_problem& p) { return fp8_problem(p) ? kAllParams : kParams; }

// Split-K values tried beyond the heuristic's own, and workspace budgets: a small product.
const int64_t kSplitKValues[] = {1, 2, 4, 8, 16};
const int64_t kWorkspaceValues[] = {0, int64_t(32) << 20};
const int64_t kReductionValues[] = {CUBLASLT_REDUCTION_SCHEME_NONE, CUBLASLT_REDUCTION_SCHEME_INPLACE,
                                    CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
// Cluster shapes tried for algorithms the heuristic uses with clusters: the enum's shapes of
// at most 4 CTAs with power-of-two sides (larger clusters rarely fit; AlgoCheck decides).
constexpr int kMaxClusterCtas = 4;
// The raw product is kept under this many points (a list that would exceed it shrinks to
// the heuristic's values), so enumerating or counting the space stays a matter of seconds.
constexpr double kMaxRawPoints = double(1 << 22);
constexpr int kHeuristicCount = 32;  // how many picks the heuristic is asked for
constexpr int kMaxAlgoIds = 4096;

// ---------------------------------------------------------------------------------------
// Readable names of attribute values (labels in config names, and describe_config).

template <size_t N>
const char* lookup(const EnumName (&table)[N], int64_t v) {
  for (auto& e : table)
    if (e.value == v) return e.name;
  return nullptr;
}
std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
// Values cuBLASLt added after this build's header keep their number as their label.
std::string tile_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_TILE_UNDEFINED) return "undef";
  const char* s = lookup(k_tile_names, v);
  return s ? s : std::to_string(v);
}
std::string stages_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_STAGES_UNDEFINED) return "undef";
  const char* s = lookup(k_stages_names, v);
  return s ? lower(s) : std::to_string(v);
}
std::string cluster_label(int64_t v) {
  if (v == CUBLASLT_CLUSTER_SHAPE_AUTO) return "auto";
  const char* s = lookup(k_cluster_names, v);
  return s ? s : std::to_string(v);
}
std::string inner_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED) return "undef";
  const char* s = lookup(k_inner_names, v);
  return s ? lower(s) : std::to_string(v);
}
std::string reduction_label(int64_t v) {
  switch (v) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "out_of_place";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "out_of_place_output";
    default: return std::to_string(v);
  }
}
std::string bytes_label(int64_t v) {
  if (v != 0 && v % (int64_t(1) << 20) == 0) return std::to_string(v >> 20) + "MiB";
  if (v != 0 && v % (int64_t(1) << 10) == 0) return std::to_string(v >> 10) + "KiB";
  return std::to_string(v);
}
// Byte counts in messages.
std::string human_bytes(uint64_t v) {
  if (v != 0 && v % (uint64_t(1) << 20) == 0) return std::to_string(v >> 20) + " MiB";
  if (v != 0 && v % (uint64_t(1) << 10) == 0) return std::to_string(v >> 10) + " KiB";
  return std::to_string(v) + " B";
}
std::string label_of(int param, int64_t v) {
  switch (param) {
    case kTile: return tile_label(v);
    case kStages: return stages_label(v);
    case kReduction: return reduction_label(v);
    case kCluster: return cluster_label(v);
    case kInner: return inner_label(v);
    case kWorkspace: return bytes_label(v);
    default: return std::to_string(v);
  }
}
bool has_labels(int param) {
  return param == kTile || param == kStages || param == kReduction || param == kCluster || param == kInner ||
         param == kWorkspace;
}

// ---------------------------------------------------------------------------------------
// The library's identity.

std::string version_text(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}
const size_t kLtVersion = cublasLtGetVersion();

std::string status_text(cublasStatus_t s) {
  const char* name = cublasLtGetStatusName(s);
  const char* text = cublasLtGetStatusString(s);
  return std::string(name ? name : "CUBLAS_STATUS_?") + " (" + (text ? text : "no description") + ")";
}
// A cuBLASLt call that must succeed: a failure is an error inside the plugin.
void lt_must(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + status_text(s));
}
// A cuBLASLt call whose failure means "cuBLASLt cannot do this (problem, config)".
void lt_refuse(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Refusal(GT_REFUSAL_SHAPE, what + ": " + status_text(s));
}

std::string no_gpu_reason(const std::string& cuda_says) {
  return "needs a GPU to query cuBLASLt's algorithms (cuBLASLt " + version_text(kLtVersion) +
         " is loaded; CUDA: " + cuda_says + ")";
}

// ---------------------------------------------------------------------------------------
// The GPU: one cuBLASLt handle per device, created on first use.

struct Gpu {
  int device = -1;
  int cc_major = 0, cc_minor = 0;
  cublasLtHandle_t handle = nullptr;
  // 256 bytes of zeros on the device: the FP8 scale pointers while the heuristic and AlgoCheck
  // are asked (no call's scales exist then); null vector scales make the heuristic fail at
  // some shapes (docs/kernel-notes.md, "Readings behind the code": cublaslt).
  void* scale_stub = nullptr;
};

// The current device's handle; refuses without a GPU, or when `d` names another
// architecture (cuBLASLt only knows the algorithms of the GPU it runs on).
const Gpu& current_gpu(const gt_device* d) {
  static std::mutex mu;
  static std::map<int, Gpu> gpus;  // never erased: handles live as long as the process
  static std::atomic<bool> seen_gpu{false};  // devices do not disappear: count them until one is seen
  if (!seen_gpu) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) throw Refusal(GT_REFUSAL_ARCH, no_gpu_reason(cudaGetErrorString(e)));
    if (count == 0) throw Refusal(GT_REFUSAL_ARCH, no_gpu_reason("no CUDA device"));
    seen_gpu = true;
  }
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) throw Refusal(GT_REFUSAL_ARCH, no_gpu_reason(cudaGetErrorString(e)));
  std::lock_guard lk(mu);
  auto it = gpus.find(dev);
  if (it == gpus.end()) {
    Gpu g;
    g.device = dev;
    if (cudaDeviceGetAttribute(&g.cc_major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&g.cc_minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
      throw std::runtime_error("cannot read the compute capability of device " + std::to_string(dev));
    cublasStatus_t s = cublasLtCreate(&g.handle);
    if (s != CUBLAS_STATUS_SUCCESS) throw Refusal(GT_REFUSAL_ARCH, no_gpu_reason("cublasLtCreate: " + status_text(s)));
    if (cudaMalloc(&g.scale_stub, 256) != cudaSuccess || cudaMemset(g.scale_stub, 0, 256) != cudaSuccess)
      throw std::runtime_error("cannot allocate 256 bytes on device " + std::to_string(dev));
    it = gpus.emplace(dev, g).first;
  }
  const Gpu& g = it->second;
  if (d && (d->cc_major != g.cc_major || d->cc_minor != g.cc_minor))
    throw Refusal(GT_REFUSAL_ARCH, "cuBLASLt knows the algorithms of the GPU it runs on (sm_" + std::to_string(g.cc_major) +
                  std::to_string(g.cc_minor) + "), not those of sm_" + std::to_string(d->cc_major) +
                  std::to_string(d->cc_minor));
  return g;
}

// ---------------------------------------------------------------------------------------
// The problem as cuBLASLt sees it (see the mapping at the top of this file).

struct Mapping {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  cudaDataType_t in_x = CUDA_R_32F, in_y = CUDA_R_32F;  // cuBLASLt's A (our B) and B (our A)
  cudaDataType_t c = CUDA_R_32F, out = CUDA_R_32F;      // C (never read: beta is 0) and D (our C)
  int32_t mode_x = 0, mode_y = 0;                       // FP8: cublasLtMatmulMatrixScale_t of X and Y
  bool fp8 = false;
  cublasOperation_t op_x = CUBLAS_OP_N, op_y = CUBLAS_OP_N;  // X = our B, Y = our A
  uint64_t x_rows = 0, x_cols = 0, y_rows = 0, y_cols = 0, c_rows = 0, c_cols = 0;
  int64_t ldx = 0, ldy = 0, ldc = 0;
};

// FP8 problems: the types, the layout cuBLASLt's FP8 kernels take and the scale modes.
void map_fp8(const gt_problem& p, Mapping& m) {
  auto fp8_type = [](int32_t t) { return t == GT_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; };
  m.fp8 = true;
  m.in_y = fp8_type(p.in_dtype);
  m.in_x = fp8_type(p.b_dtype);
  if (p.in_dtype == GT_E5M2 && p.b_dtype == GT_E5M2)
    throw Refusal(GT_REFUSAL_DTYPE, "cuBLASLt has no e5m2 x e5m2 kernels");
  if (p.layout != GT_NT)
    throw Refusal(GT_REFUSAL_LAYOUT, std::string("cuBLASLt's FP8 kernels take layout nt (both operands K-major), not ") +
                                         (p.layout == GT_NN ? "nn" : p.layout == GT_TN ? "tn" : "tt"));
  if (is_fp8(p.out_dtype)) {
    if (p.scale_mode != GT_SCALE_TENSOR)
      throw Refusal(GT_REFUSAL_DTYPE, "cuBLASLt writes an FP8 output with tensor scales only");
    m.out = fp8_type(p.out_dtype);
    m.c = CUDA_R_16BF;  // C's type for an FP8 D (cuBLASLt's table); beta is 0, so it is never read
  }
  switch (p.scale_mode) {
    case GT_SCALE_TENSOR: m.mode_x = m.mode_y = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F; break;
    case GT_SCALE_ROW: m.mode_x = m.mode_y = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F; break;
    case GT_SCALE_BLOCK:
      m.mode_x = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // our B: 128x128 weight blocks
      m.mode_y = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;      // our A: 1x128 activation blocks
      break;
    default: throw Refusal(GT_REFUSAL_DTYPE, "an FP8 problem needs a scale mode (tensor, row or block)");
  }
}

Mapping map_problem(const gt_problem& p) {
  Mapping m;
  cudaDataType_t in = CUDA_R_32F;
  switch (p.in_dtype) {
    case GT_F32: m.compute = CUBLAS_COMPUTE_32F; in = CUDA_R_32F; break;  // pure fp32, no TF32
    case GT_TF32: m.compute = CUBLAS_COMPUTE_32F_FAST_TF32; in = CUDA_R_32F; break;
    case GT_F16: m.compute = CUBLAS_COMPUTE_32F; in = CUDA_R_16F; break;
    case GT_BF16: m.compute = CUBLAS_COMPUTE_32F; in = CUDA_R_16BF; break;
    case GT_E4M3: case GT_E5M2: m.compute = CUBLAS_COMPUTE_32F; break;
    default: throw Refusal(GT_REFUSAL_DTYPE, "unsupported input dtype " + std::to_string(p.in_dtype));
  }
  m.in_x = m.in_y = in;
  switch (p.out_dtype) {
    case GT_F32: m.out = CUDA_R_32F; break;
    case GT_F16: m.out = CUDA_R_16F; break;
    case GT_BF16: m.out = CUDA_R_16BF; break;
    case GT_E4M3: case GT_E5M2: if (fp8_problem(p)) break; [[fallthrough]];
    default: throw Refusal(GT_REFUSAL_DTYPE, "unsupported output dtype " + std::string(dtype_name(p.out_dtype)));
  }
  m.c = m.out;
  if (fp8_problem(p)) map_fp8(p, m);
  // cuBLASLt's table of supported types has TF32 compute with fp32 C and D only; asked for a
  // 16-bit output, its heuristic still offers algorithms that fault (docs/kernel-notes.md,
  // "Readings behind the code": cublaslt).
  if (p.in_dtype == GT_TF32 && p.out_dtype != GT_F32)
    throw Refusal(GT_REFUSAL_DTYPE, std::string("cuBLASLt computes tf32 inputs into f32 output only, not ") +
                                        dtype_name(p.out_dtype));
  if (p.m < 1 || p.n < 1 || p.k < 1) throw Refusal(GT_REFUSAL_SHAPE, "empty problem");
  const bool at = a_transposed(p), bt = b_transposed(p);
  m.op_x = bt ? CUBLAS_OP_T : CUBLAS_OP_N;
  m.x_rows = uint64_t(bt ? p.k : p.n);
  m.x_cols = uint64_t(bt ? p.n : p.k);
  m.ldx = p.ldb;
  m.op_y = at ? CUBLAS_OP_T : CUBLAS_OP_N;
  m.y_rows = uint64_t(at ? p.m : p.k);
  m.y_cols = uint64_t(at ? p.k : p.m);
  m.ldy = p.lda;
  m.c_rows = uint64_t(p.n);
  m.c_cols = uint64_t(p.m);
  m.ldc = p.ldc;
  if (m.ldx < int64_t(m.x_rows) || m.ldy < int64_t(m.y_rows) || m.ldc < int64_t(m.c_rows))
    throw Refusal(GT_REFUSAL_SHAPE, "a leading dimension is smaller than the rows it holds");
  return m;
}

// The operation and layout descriptors, initialised in place (no allocation); they must
// not move once initialised, so this type does not copy or move.
struct Descs {
  cublasLtMatmulDescOpaque_t op;
  cublasLtMatrixLayoutOpaque_t x, y, c, d;

  // `fast_accum`: FP8's FAST_ACCUM (a config's fast_accum parameter).
  explicit Descs(const Mapping& m, bool fast_accum = false) {
    lt_must(cublasLtMatmulDescInit(&op, m.compute, m.scale), "cublasLtMatmulDescInit");
    int32_t tx = m.op_x, ty = m.op_y;
    lt_must(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_TRANSA, &tx, sizeof(tx)), "set TRANSA");
    lt_must(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_TRANSB, &ty, sizeof(ty)), "set TRANSB");
    if (m.fp8) {
      lt_must(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &m.mode_x, sizeof(m.mode_x)),
              "set A_SCALE_MODE");
      lt_must(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &m.mode_y, sizeof(m.mode_y)),
              "set B_SCALE_MODE");
      const int8_t fast = fast_accum ? 1 : 0;
      lt_must(cublasLtMatmulDescSetAttribute(&op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)),
              "set FAST_ACCUM");
    }
    init_layout(&x, m.in_x, m.x_rows, m.x_cols, m.ldx);
    init_layout(&y, m.in_y, m.y_rows, m.y_cols, m.ldy);
    init_layout(&c, m.c, m.c_rows, m.c_cols, m.ldc);
    init_layout(&d, m.out, m.c_rows, m.c_cols, m.ldc);
  }
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;
  cublasLtMatmulDesc_t od() { return &op; }
  cublasLtMatrixLayout_t xl() { return &x; }
  cublasLtMatrixLayout_t yl() { return &y; }
  cublasLtMatrixLayout_t cl() { return &c; }
  cublasLtMatrixLayout_t dl() { return &d; }
  // The scales while there is no call (the heuristic, AlgoCheck): every pointer at `stub`.
  void stub_scales(const void* stub, bool fp8_out) {
    set_scales(gt_scales{static_cast<const float*>(stub), static_cast<const float*>(stub), static_cast<const float*>(stub),
                         nullptr},
               fp8_out);
  }
  // A call's scales: our A's are cuBLASLt's B scales, our B's its A scales (see the top).
  void set_scales(const gt_scales& s, bool fp8_out) {
    auto ptr = [&](cublasLtMatmulDescAttributes_t attr, const void* v, const char* what) {
      lt_must(cublasLtMatmulDescSetAttribute(&op, attr, &v, sizeof(v)), what);
    };
    ptr(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, s.b, "set A_SCALE_POINTER");
    ptr(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, s.a, "set B_SCALE_POINTER");
    if (fp8_out) {
      ptr(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, s.d, "set D_SCALE_POINTER");
      ptr(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, s.amax_d, "set AMAX_D_POINTER");
    }
  }

 private:
  static void init_layout(cublasLtMatrixLayoutOpaque_t* l, cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld) {
    lt_must(cublasLtMatrixLayoutInit(l, t, rows, cols, ld), "cublasLtMatrixLayoutInit");
    int32_t order = CUBLASLT_ORDER_COL;
    lt_must(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)), "set ORDER");
  }
};

// ---------------------------------------------------------------------------------------
// Algorithms: attributes <-> cublasLtMatmulAlgo_t.

struct Attrs {
  int32_t algo = 0;
  uint32_t tile = 0, stages = 0;
  int32_t split_k = 1;
  uint32_t reduction = 0, swizzle = 0, custom = 0;
  uint16_t cluster = 0, inner = 0;
  uint64_t workspace = 0;
  bool fast_accum = false;  // FP8 only
  bool fp8 = false;         // the config is of an FP8 problem's space (it has fast_accum)
};

template <class T>
T narrow_value(int64_t v, int param) {
  if (v < int64_t(std::numeric_limits<T>::min()) || v > int64_t(std::numeric_limits<T>::max()))
    throw Refusal(GT_REFUSAL_CONFIG, std::string(kParamNames[param]) + "=" + std::to_string(v) + " is out of range");
  return T(v);
}

Attrs attrs_of(const int64_t* c, int32_t n, const gt_problem& p) {
  if (n != params_of(p))
    throw Refusal(GT_REFUSAL_CONFIG, "config has " + std::to_string(n) + " values, the cublaslt space of this problem has " +
                                         std::to_string(params_of(p)));
  Attrs a;
  a.fp8 = fp8_problem(p);
  if (a.fp8) {
    if (c[kFastAccum] != 0 && c[kFastAccum] != 1) throw Refusal(GT_REFUSAL_CONFIG, "fast_accum is 0 or 1");
    a.fast_accum = c[kFastAccum] != 0;
  }
  a.algo = narrow_value<int32_t>(c[kAlgo], kAlgo);
  a.tile = narrow_value<uint32_t>(c[kTile], kTile);
  a.stages = narrow_value<uint32_t>(c[kStages], kStages);
  a.split_k = narrow_value<int32_t>(c[kSplitK], kSplitK);
  if (a.split_k < 1) throw Refusal(GT_REFUSAL_CONFIG, "split_k must be at least 1");
  a.reduction = narrow_value<uint32_t>(c[kReduction], kReduction);
  a.swizzle = narrow_value<uint32_t>(c[kSwizzle], kSwizzle);
  a.custom = narrow_value<uint32_t>(c[kCustom], kCustom);
  a.cluster = narrow_value<uint16_t>(c[kCluster], kCluster);
  a.inner = narrow_value<uint16_t>(c[kInner], kInner);
  if (c[kWorkspace] < 0) throw Refusal(GT_REFUSAL_CONFIG, "workspace must not be negative");
  a.workspace = uint64_t(c[kWorkspace]);
  return a;
}

std::vector<int64_t> config_of(const Attrs& a) {
  std::vector<int64_t> c(a.fp8 ? kAllParams : kParams);
  if (a.fp8) c[kFastAccum] = a.fast_accum ? 1 : 0;
  c[kAlgo] = a.algo;
  c[kTile] = a.tile;
  c[kStages] = a.stages;
  c[kSplitK] = a.split_k;
  c[kReduction] = a.reduction;
  c[kSwizzle] = a.swizzle;
  c[kCustom] = a.custom;
  c[kCluster] = a.cluster;
  c[kInner] = a.inner;
  c[kWorkspace] = int64_t(a.workspace);
  return c;
}

template <class T>
void set_config(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, T v, const char* name) {
  lt_refuse(cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &v, sizeof(v)),
            std::string("cublasLtMatmulAlgoConfigSetAttribute(") + name + ")");
}
template <class T>
T get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, const char* name) {
  T v{};
  size_t written = 0;
  lt_must(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written),
          (std::string("cublasLtMatmulAlgoConfigGetAttribute(") + name + ")").c_str());
  return v;
}

// Re-creates an algorithm from its attributes alone (no heuristic involved).
cublasLtMatmulAlgo_t make_algo(cublasLtHandle_t h, const Mapping& m, const Attrs& a) {
  cublasLtMatmulAlgo_t algo;
  lt_refuse(cublasLtMatmulAlgoInit(h, m.compute, m.scale, m.in_x, m.in_y, m.c, m.out, a.algo, &algo),
            "cublasLtMatmulAlgoInit(algo " + std::to_string(a.algo) + ")");
  set_config<uint32_t>(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, a.tile, "TILE_ID");
  set_config<uint32_t>(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, a.stages, "STAGES_ID");
  set_config<int32_t>(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, a.split_k, "SPLITK_NUM");
  set_config<uint32_t>(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, a.reduction, "REDUCTION_SCHEME");
  set_config<uint32_t>(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, a.swizzle, "CTA_SWIZZLING");
  set_config<uint32_t>(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, a.custom, "CUSTOM_OPTION");
  set_config<uint16_t>(&algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, a.inner, "INNER_SHAPE_ID");
  set_config<uint16_t>(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, a.cluster, "CLUSTER_SHAPE_ID");
  return algo;
}

// The attributes of an algorithm the heuristic returned (workspace is filled in later).
Attrs read_algo(const cublasLtMatmulAlgo_t& algo) {
  Attrs a;
  a.algo = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID, "ID");
  a.tile = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, "TILE_ID");
  a.stages = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, "STAGES_ID");
  a.split_k = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "SPLITK_NUM");
  a.reduction = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "REDUCTION_SCHEME");
  a.swizzle = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "CTA_SWIZZLING");
  a.custom = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "CUSTOM_OPTION");
  a.inner = get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, "INNER_SHAPE_ID");
  a.cluster = get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "CLUSTER_SHAPE_ID");
  // The reduction scheme only acts when K is split; one spelling per algorithm.
  if (a.split_k <= 1) {
    a.split_k = 1;
    a.reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  }
  return a;
}

template <class T>
T get_cap(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr, const char* name) {
  T v{};
  size_t written = 0;
  lt_must(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written),
          (std::string("cublasLtMatmulAlgoCapGetAttribute(") + name + ")").c_str());
  return v;
}
std::vector<uint32_t> get_cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr,
                                   const char* name) {
  size_t bytes = 0;
  std::string what = std::string("cublasLtMatmulAlgoCapGetAttribute(") + name + ")";
  lt_must(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes), what.c_str());
  std::vector<uint32_t> v(bytes / sizeof(uint32_t));
  if (v.empty()) return v;
  lt_must(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), v.size() * sizeof(uint32_t), &bytes),
          what.c_str());
  v.resize(bytes / sizeof(uint32_t));
  return v;
}

// What one algorithm id can take, from its capability attributes, widened by what the
// heuristic was seen to use with it (evidence beats a capability list that omits it).
struct AlgoCaps {
  int32_t id = 0;
  std::set<int64_t> tiles, stages, clusters, inners;
  bool split_k = false;
  uint32_t reduction_mask = 0;
  bool swizzle = false;
  int64_t custom_max = 0;
  uint32_t align_x = 0, align_y = 0, align_c = 0;  // bytes the algorithm needs of X (our B), Y (our A), C/D
  bool in_heuristic = false;
};

AlgoCaps read_caps(cublasLtHandle_t h, const Mapping& m, int32_t id) {
  cublasLtMatmulAlgo_t algo;
  lt_must(cublasLtMatmulAlgoInit(h, m.compute, m.scale, m.in_x, m.in_y, m.c, m.out, id, &algo),
          "cublasLtMatmulAlgoInit");
  AlgoCaps c;
  c.id = id;
  for (uint32_t t : get_cap_list(algo, CUBLASLT_ALGO_CAP_TILE_IDS, "TILE_IDS")) c.tiles.insert(t);
  for (uint32_t s : get_cap_list(algo, CUBLASLT_ALGO_CAP_STAGES_IDS, "STAGES_IDS")) c.stages.insert(s);
  // "If no tile (stages) ids are supported use ..._UNDEFINED".
  if (c.tiles.empty()) c.tiles.insert(CUBLASLT_MATMUL_TILE_UNDEFINED);
  if (c.stages.empty()) c.stages.insert(CUBLASLT_MATMUL_STAGES_UNDEFINED);
  c.split_k = get_cap<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, "SPLITK_SUPPORT") != 0;
  c.reduction_mask = get_cap<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, "REDUCTION_SCHEME_MASK");
  c.swizzle = get_cap<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, "CTA_SWIZZLING_SUPPORT") != 0;
  // Custom options are a short list of variants; a larger range would be a malformed capability.
  c.custom_max = std::clamp(get_cap<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, "CUSTOM_OPTION_MAX"), 0, 1023);
  // Alignment needs are read where cuBLASLt states them; where it does not, AlgoCheck and
  // the heuristic's alignment preference remain the judges.
  auto align_cap = [&](cublasLtMatmulAlgoCapAttributes_t attr) {
    uint32_t v = 1;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) v = 1;
    return std::max(1u, v);
  };
  c.align_x = align_cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES);
  c.align_y = align_cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES);
  c.align_c = std::max(align_cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES), align_cap(CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES));
  c.clusters.insert(CUBLASLT_CLUSTER_SHAPE_AUTO);
  c.inners.insert(CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED);
  return c;
}

// Cluster shapes of at most kMaxClusterCtas CTAs with power-of-two sides, from the enum.
std::vector<int64_t> small_cluster_shapes() {
  std::vector<int64_t> out;
  for (auto& e : k_cluster_names) {
    int x = 0, y = 0, z = 0;
    if (std::sscanf(e.name, "%dx%dx%d", &x, &y, &z) != 3) continue;
    auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
    if (z == 1 && pow2(x) && pow2(y) && x * y <= kMaxClusterCtas) out.push_back(e.value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Everything about one problem on one GPU: built once, kept for the life of the process
// (describe_space hands out pointers into its parameter table).

struct Pick {  // one heuristic result, as a config
  Attrs attrs;
  std::vector<int64_t> config;
  uint64_t workspace_needed = 0;
  float waves = 0;
  int rank = 0;  // position in the heuristic's own list
};

struct ProblemInfo {
  gt_problem problem{};
  Gpu gpu;
  Mapping map;
  std::map<int32_t, AlgoCaps> caps;
  std::vector<Pick> picks;  // the heuristic's, best first, each re-created and checked
  int heuristic_returned = 0;
  std::vector<std::string> trimmed;
  std::unique_ptr<ParamTable> table;
  std::vector<std::set<int64_t>> values;  // per parameter, for membership tests
  int params = kParams;                   // params_of(problem)

  const Pick* pick_of(const int64_t* c) const {
    for (auto& p : picks)
      if (std::equal(p.config.begin(), p.config.end(), c)) return &p;
    return nullptr;
  }
};

struct Checked {
  Attrs attrs;
  cublasLtMatmulAlgo_t algo;
  cublasLtMatmulHeuristicResult_t result;
};

// cuBLASLt's own verdict on an algorithm for the problem: "" when it accepts it, else why.
std::string algo_check(const ProblemInfo& info, const Attrs& a, Checked* ch) {
  Descs d(info.map, a.fast_accum);
  if (info.map.fp8) d.stub_scales(info.gpu.scale_stub, is_fp8(info.problem.out_dtype));
  ch->attrs = a;
  ch->algo = make_algo(info.gpu.handle, info.map, a);
  cublasStatus_t s =
      cublasLtMatmulAlgoCheck(info.gpu.handle, d.od(), d.xl(), d.yl(), d.cl(), d.dl(), &ch->algo, &ch->result);
  return s == CUBLAS_STATUS_SUCCESS ? std::string() : "cublasLtMatmulAlgoCheck rejects it: " + status_text(s);
}

std::string some_labels(int param, const std::set<int64_t>& vals) {
  std::string s;
  int shown = 0;
  for (int64_t v : vals) {
    if (shown == 12) return s + ", ...";
    s += (shown++ ? ", " : "") + label_of(param, v);
  }
  return s;
}

// The rules cuBLASLt's capability attributes state, checked before asking AlgoCheck, and
// the rules that keep one spelling per algorithm (reduction without split-K). Returns why
// the config breaks one, or "". Refusals are the common answer while a space is counted,
// so they are returned, not thrown.
std::string caps_reason(const ProblemInfo& info, const AlgoCaps& caps, const Attrs& a) {
  auto alg = [&] { return "algorithm " + std::to_string(a.algo); };
  if (!caps.tiles.count(a.tile))
    return alg() + " has no tile " + tile_label(a.tile) + " (its tiles: " + some_labels(kTile, caps.tiles) + ")";
  if (!caps.stages.count(a.stages))
    return alg() + " has no stages " + stages_label(a.stages) + " (its stages: " + some_labels(kStages, caps.stages) +
           ")";
  if (a.split_k == 1 && a.reduction != CUBLASLT_REDUCTION_SCHEME_NONE)
    return "reduction=" + reduction_label(a.reduction) +
           " acts only with split_k > 1 (the same algorithm is reduction=none)";
  if (a.split_k > 1) {
    if (!caps.split_k) return alg() + " does not support split-K";
    if (a.reduction == CUBLASLT_REDUCTION_SCHEME_NONE)
      return "split_k=" + std::to_string(a.split_k) + " needs a reduction scheme";
    if (!(caps.reduction_mask & a.reduction)) return alg() + " does not support reduction " + reduction_label(a.reduction);
  }
  if (a.swizzle && !caps.swizzle) return alg() + " does not support CTA swizzling";
  if (int64_t(a.custom) > caps.custom_max) return alg() + " takes custom options 0.." + std::to_string(caps.custom_max);
  if (!caps.clusters.count(a.cluster))
    return alg() + " is not known to take cluster " + cluster_label(a.cluster) + " (its clusters: " +
           some_labels(kCluster, caps.clusters) + ")";
  if (!caps.inners.count(a.inner)) return alg() + " is not known to take inner shape " + inner_label(a.inner);
  uint32_t need = std::max({caps.align_x, caps.align_y, caps.align_c});
  if (need > uint32_t(info.problem.align_bytes))
    return alg() + " needs " + std::to_string(need) + "-byte aligned operands; the problem guarantees " +
           std::to_string(info.problem.align_bytes);
  return {};
}

// The full check: the value lists, the capability rules, AlgoCheck, and the workspace.
// Returns why the config is refused, or "" with the checked algorithm in *ch.
std::string config_reason(const ProblemInfo& info, const int64_t* c, int32_t n, Checked* ch) {
  Attrs a = attrs_of(c, n, info.problem);
  for (int i = 0; i < info.params; ++i)
    if (!info.values[size_t(i)].count(c[i]))
      return std::string(kParamNames[i]) + "=" + label_of(i, c[i]) + " is not in this problem's space";
  // The heuristic's own picks are evidence enough; everything else meets the capabilities.
  if (!info.pick_of(c))
    if (std::string why = caps_reason(info, info.caps.at(a.algo), a); !why.empty()) return why;
  if (std::string why = algo_check(info, a, ch); !why.empty()) return why;
  uint64_t need = ch->result.workspaceSize;
  if (need > a.workspace)
    return "needs " + human_bytes(need) + " of workspace; workspace=" + bytes_label(int64_t(a.workspace)) +
           " allows less";
  for (int64_t w : kWorkspaceValues)
    if (uint64_t(w) >= need && uint64_t(w) < a.workspace)
      return "needs only " + human_bytes(need) + " of workspace (the same algorithm is workspace=" + bytes_label(w) +
             ")";
  return {};
}

bool same_problem(const gt_problem& a, const gt_problem& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
         a.in_dtype == b.in_dtype && a.out_dtype == b.out_dtype && a.layout == b.layout &&
         a.align_bytes == b.align_bytes && a.b_dtype == b.b_dtype && a.scale_mode == b.scale_mode;
}

std::string problem_key(const gt_problem& p, int device) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d|%lld|%lld|%lld|%lld|%lld|%lld|%d|%d|%d|%d|%d|%d", device, (long long)p.m,
                (long long)p.n, (long long)p.k, (long long)p.lda, (long long)p.ldb, (long long)p.ldc, p.in_dtype,
                p.out_dtype, p.layout, p.align_bytes, p.b_dtype, p.scale_mode);
  return buf;
}

std::unique_ptr<ProblemInfo> build_info(const gt_problem& p, const Gpu& gpu) {
  auto info = std::make_unique<ProblemInfo>();
  info->problem = p;
  info->gpu = gpu;
  info->map = map_problem(p);
  info->params = params_of(p);
  const Mapping& m = info->map;
  const std::string what = std::string(dtype_name(p.in_dtype)) +
                           (p.b_dtype != p.in_dtype ? std::string(":") + dtype_name(p.b_dtype) : std::string()) +
                           " inputs with " + dtype_name(p.out_dtype) + " output" +
                           (m.fp8 ? std::string(", ") + scale_mode_name(p.scale_mode) + " scales" : std::string());

  // The algorithm ids for these types.
  std::vector<int> ids(kMaxAlgoIds);
  int nids = 0;
  lt_refuse(cublasLtMatmulAlgoGetIds(gpu.handle, m.compute, m.scale, m.in_x, m.in_y, m.c, m.out, kMaxAlgoIds,
                                     ids.data(), &nids),
            "cublasLtMatmulAlgoGetIds for " + what);
  if (nids <= 0) throw Refusal(GT_REFUSAL_DTYPE, "cuBLASLt has no algorithm for " + what);
  ids.resize(size_t(nids));

  // The heuristic, asked as a user would ask it: the largest workspace budget, and the
  // problem's alignment (cuBLASLt otherwise assumes 256-byte aligned operands).
  Descs d(m);
  if (m.fp8) d.stub_scales(gpu.scale_stub, is_fp8(p.out_dtype));
  cublasLtMatmulPreferenceOpaque_t pref;
  lt_must(cublasLtMatmulPreferenceInit(&pref), "cublasLtMatmulPreferenceInit");
  uint64_t max_ws = uint64_t(kWorkspaceValues[std::size(kWorkspaceValues) - 1]);
  lt_must(cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)),
          "set MAX_WORKSPACE_BYTES");
  uint32_t align = uint32_t(p.align_bytes);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    lt_must(cublasLtMatmulPreferenceSetAttribute(&pref, attr, &align, sizeof(align)), "set MIN_ALIGNMENT");
  std::vector<cublasLtMatmulHeuristicResult_t> results(kHeuristicCount);
  int returned = 0;
  lt_refuse(cublasLtMatmulAlgoGetHeuristic(gpu.handle, d.od(), d.xl(), d.yl(), d.cl(), d.dl(), &pref, kHeuristicCount,
                                           results.data(), &returned),
            "cuBLASLt's heuristic has no algorithm for this problem");
  if (returned <= 0) throw Refusal(GT_REFUSAL_SHAPE, "cuBLASLt's heuristic returned no algorithm for this problem");
  info->heuristic_returned = returned;

  // Capabilities of every id (those the problem's alignment rules out are left out).
  for (int id : ids) {
    try {
      info->caps.emplace(id, read_caps(gpu.handle, m, id));
    } catch (const std::runtime_error&) {
      // An id whose capabilities cannot be read cannot be checked either: leave it out.
    }
  }

  // The heuristic's picks as configs: its attributes and the smallest workspace budget that
  // covers what it needs. Each is re-created from those attributes and checked, so that a
  // pick this family offers is a pick it can build.
  std::string first_failure;
  for (int r = 0; r < returned; ++r) {
    const auto& res = results[size_t(r)];
    if (res.state != CUBLAS_STATUS_SUCCESS) continue;
    Pick pk;
    pk.attrs = read_algo(res.algo);
    pk.attrs.fp8 = m.fp8;  // the heuristic was asked without fast accumulation
    pk.rank = r;
    pk.waves = res.wavesCount;
    if (!info->caps.count(pk.attrs.algo)) {
      AlgoCaps c;  // an id GetIds did not list, or whose capabilities would not read: the pick is the evidence
      try {
        c = read_caps(gpu.handle, m, pk.attrs.algo);
      } catch (const std::runtime_error&) {
        c.id = pk.attrs.algo;
        c.clusters.insert(CUBLASLT_CLUSTER_SHAPE_AUTO);
        c.inners.insert(CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED);
      }
      info->caps.emplace(pk.attrs.algo, std::move(c));
    }
    Checked ch{};
    if (std::string why = algo_check(*info, pk.attrs, &ch); !why.empty()) {
      if (first_failure.empty()) first_failure = "rank " + std::to_string(r) + ": " + why;
      continue;
    }
    pk.workspace_needed = ch.result.workspaceSize;  // what create_op will allocate
    const int64_t* ws = std::find_if(std::begin(kWorkspaceValues), std::end(kWorkspaceValues),
                                     [&](int64_t w) { return uint64_t(w) >= pk.workspace_needed; });
    if (ws == std::end(kWorkspaceValues)) {
      if (first_failure.empty())
        first_failure = "rank " + std::to_string(r) + ": re-created, it needs " + human_bytes(pk.workspace_needed) +
                        " of workspace, more than the heuristic was allowed";
      continue;
    }
    pk.attrs.workspace = uint64_t(*ws);
    pk.config = config_of(pk.attrs);
    bool dup = false;
    for (auto& q : info->picks) dup |= q.config == pk.config;
    if (!dup) info->picks.push_back(std::move(pk));
  }
  if (info->picks.empty())
    throw Refusal(GT_REFUSAL_SHAPE, "none of the heuristic's " + std::to_string(returned) +
                  " picks can be re-created from its attributes (" + first_failure + ")");

  // Widen each algorithm's lists by what the heuristic used with it; algorithms the
  // heuristic uses with thread-block clusters may also try the small cluster shapes.
  const std::vector<int64_t> clusters = gpu.cc_major >= 9 ? small_cluster_shapes() : std::vector<int64_t>{};
  for (auto& pk : info->picks) {
    AlgoCaps& c = info->caps.at(pk.attrs.algo);
    c.in_heuristic = true;
    c.tiles.insert(pk.attrs.tile);
    c.stages.insert(pk.attrs.stages);
    c.custom_max = std::max<int64_t>(c.custom_max, pk.attrs.custom);
    c.inners.insert(pk.attrs.inner);
    c.clusters.insert(pk.attrs.cluster);
    if (pk.attrs.cluster != CUBLASLT_CLUSTER_SHAPE_AUTO) c.clusters.insert(clusters.begin(), clusters.end());
  }
  // An algorithm that needs more alignment than the problem has can never run here.
  for (auto it = info->caps.begin(); it != info->caps.end();) {
    const AlgoCaps& c = it->second;
    bool aligned = std::max({c.align_x, c.align_y, c.align_c}) <= uint32_t(p.align_bytes);
    it = (aligned || c.in_heuristic) ? std::next(it) : info->caps.erase(it);
  }

  // Value lists: the union over the algorithms' capabilities, plus the heuristic's values.
  std::vector<std::set<int64_t>> full(size_t(info->params)), from_picks(size_t(info->params));
  bool any_split = false, any_swizzle = false;
  uint32_t red_mask = 0;
  for (auto& [id, c] : info->caps) {
    full[kAlgo].insert(id);
    full[kTile].insert(c.tiles.begin(), c.tiles.end());
    full[kStages].insert(c.stages.begin(), c.stages.end());
    full[kCluster].insert(c.clusters.begin(), c.clusters.end());
    full[kInner].insert(c.inners.begin(), c.inners.end());
    for (int64_t o = 0; o <= c.custom_max; ++o) full[kCustom].insert(o);
    any_split |= c.split_k;
    any_swizzle |= c.swizzle;
    red_mask |= c.split_k ? c.reduction_mask : 0;
  }
  full[kSplitK].insert(1);
  for (int64_t s : kSplitKValues)
    if (any_split && s <= p.k) full[kSplitK].insert(s);  // more parts than K has no work for some
  full[kReduction].insert(CUBLASLT_REDUCTION_SCHEME_NONE);
  for (int64_t r : kReductionValues)
    if (full[kSplitK].size() > 1 && (red_mask & uint32_t(r))) full[kReduction].insert(r);
  full[kSwizzle].insert(0);
  if (any_swizzle) full[kSwizzle].insert(1);
  full[kWorkspace].insert(std::begin(kWorkspaceValues), std::end(kWorkspaceValues));
  if (m.fp8) full[kFastAccum] = {0, 1};
  for (auto& pk : info->picks)
    for (int i = 0; i < info->params; ++i) {
      full[size_t(i)].insert(pk.config[size_t(i)]);
      from_picks[size_t(i)].insert(pk.config[size_t(i)]);
    }

  // Keep the raw product manageable: shrink the least telling lists to the heuristic's
  // values (plus cuBLASLt's default for the attribute) until it fits.
  auto product = [&] {
    double n = 1;
    for (auto& s : full) n *= double(s.size());
    return n;
  };
  const std::pair<int, int64_t> shrink_order[] = {
      {kCustom, 0}, {kCluster, CUBLASLT_CLUSTER_SHAPE_AUTO}, {kInner, CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED},
      {kSplitK, 1}, {kStages, -1}, {kTile, -1}, {kAlgo, -1}};
  for (auto [param, keep] : shrink_order) {
    if (product() <= kMaxRawPoints) break;
    std::set<int64_t> s = from_picks[size_t(param)];
    if (keep >= 0) s.insert(keep);
    if (s.size() >= full[size_t(param)].size()) continue;
    full[size_t(param)] = std::move(s);
    info->trimmed.push_back(kParamNames[param]);
  }
  if (full[kSplitK].size() == 1 && *full[kSplitK].begin() == 1)  // no split-K left: no reduction either
    full[kReduction] = {CUBLASLT_REDUCTION_SCHEME_NONE};

  // The parameter table; the default is rank 0, cuBLASLt's choice.
  std::vector<ParamDef> defs;
  const Pick& best = info->picks.front();
  for (int i = 0; i < info->params; ++i) {
    ParamDef def;
    def.name = kParamNames[i];
    def.help = kParamHelp[i];
    if (std::find(info->trimmed.begin(), info->trimmed.end(), def.name) != info->trimmed.end())
      def.help += " [trimmed to the heuristic's values: the full list would take the space past " +
                  std::to_string(int64_t(kMaxRawPoints)) + " points]";
    def.values.assign(full[size_t(i)].begin(), full[size_t(i)].end());
    if (has_labels(i))
      for (int64_t v : def.values) def.labels.push_back(label_of(i, v));
    def.default_value = best.config[size_t(i)];
    defs.push_back(std::move(def));
  }
  info->values = std::move(full);
  info->table = std::make_unique<ParamTable>(std::move(defs));
  return info;
}

// The problem's info on the current GPU (built on first use); refuses without a GPU.
const ProblemInfo& problem_info(const gt_problem* p, const gt_device* d) {
  if (!p) throw Refusal(GT_REFUSAL_CONFIG, "no problem given");
  const Gpu& gpu = current_gpu(d);
  // Never erased (see ProblemInfo). A problem cuBLASLt refuses is remembered with its
  // reason, so that a search asking again does not ask cuBLASLt again.
  struct Entry {
    std::unique_ptr<ProblemInfo> info;
    std::string refusal;
    gt_refusal code = GT_REFUSAL_NONE;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> infos;
  // A search asks about one problem many times in a row: remember the last one per thread.
  thread_local const ProblemInfo* last = nullptr;
  thread_local gt_problem last_problem{};
  thread_local int last_device = -1;
  if (last && last_device == gpu.device && same_problem(last_problem, *p)) return *last;
  std::string key = problem_key(*p, gpu.device);
  std::lock_guard lk(mu);
  auto it = infos.find(key);
  if (it == infos.end()) {
    Entry e;
    try {
      e.info = build_info(*p, gpu);
    } catch (const Refusal& r) {
      e.refusal = r.what();
      e.code = r.code;
    }
    it = infos.emplace(key, std::move(e)).first;
  }
  if (!it->second.info) throw Refusal(it->second.code, it->second.refusal);
  last = it->second.info.get();
  last_problem = *p;
  last_device = gpu.device;
  return *last;
}

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
}  // namespace

extern "C" GT_PLUGIN_EXPORT const gt_plugin* gemmtune_plugin_entry(uint32_t) { return &plugin(); }
