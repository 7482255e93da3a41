// The cuBLASLt family's internals, shared by its files (cublaslt.cpp: the entry points;
// problem_info.cpp: one problem on one GPU, built once): the parameters and their labels,
// cuBLASLt's status, the GPU, the problem mapping and its descriptors, algorithm attributes
// and capabilities, and the problem info. Internal to plugins/cublaslt.
#pragma once

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

namespace gt_cublaslt {
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

inline bool fp8_problem(const gt_problem& p) { return is_fp8(p.in_dtype); }
// The number of parameters of a problem's space.
inline int params_of(const gt_problem& p) { return fp8_problem(p) ? kAllParams : kParams; }

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
inline std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
// Values cuBLASLt added after this build's header keep their number as their label.
inline std::string tile_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_TILE_UNDEFINED) return "undef";
  const char* s = lookup(k_tile_names, v);
  return s ? s : std::to_string(v);
}
inline std::string stages_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_STAGES_UNDEFINED) return "undef";
  const char* s = lookup(k_stages_names, v);
  return s ? lower(s) : std::to_string(v);
}
inline std::string cluster_label(int64_t v) {
  if (v == CUBLASLT_CLUSTER_SHAPE_AUTO) return "auto";
  const char* s = lookup(k_cluster_names, v);
  return s ? s : std::to_string(v);
}
inline std::string inner_label(int64_t v) {
  if (v == CUBLASLT_MATMUL_INNER_SHAPE_UNDEFINED) return "undef";
  const char* s = lookup(k_inner_names, v);
  return s ? lower(s) : std::to_string(v);
}
inline std::string reduction_label(int64_t v) {
  switch (v) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "out_of_place";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "out_of_place_output";
    default: return std::to_string(v);
  }
}
inline std::string bytes_label(int64_t v) {
  if (v != 0 && v % (int64_t(1) << 20) == 0) return std::to_string(v >> 20) + "MiB";
  if (v != 0 && v % (int64_t(1) << 10) == 0) return std::to_string(v >> 10) + "KiB";
  return std::to_string(v);
}
// Byte counts in messages.
inline std::string human_bytes(uint64_t v) {
  if (v != 0 && v % (uint64_t(1) << 20) == 0) return std::to_string(v >> 20) + " MiB";
  if (v != 0 && v % (uint64_t(1) << 10) == 0) return std::to_string(v >> 10) + " KiB";
  return std::to_string(v) + " B";
}
inline std::string label_of(int param, int64_t v) {
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
inline bool has_labels(int param) {
  return param == kTile || param == kStages || param == kReduction || param == kCluster || param == kInner ||
         param == kWorkspace;
}

// ---------------------------------------------------------------------------------------
// The library's identity.

inline std::string version_text(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}
inline const size_t kLtVersion = cublasLtGetVersion();

inline std::string status_text(cublasStatus_t s) {
  const char* name = cublasLtGetStatusName(s);
  const char* text = cublasLtGetStatusString(s);
  return std::string(name ? name : "CUBLAS_STATUS_?") + " (" + (text ? text : "no description") + ")";
}
// A cuBLASLt call that must succeed: a failure is an error inside the plugin.
inline void lt_must(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + status_text(s));
}
// A cuBLASLt call whose failure means "cuBLASLt cannot do this (problem, config)".
inline void lt_refuse(cublasStatus_t s, const std::string& what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Refusal(GT_REFUSAL_SHAPE, what + ": " + status_text(s));
}

inline std::string no_gpu_reason(const std::string& cuda_says) {
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
inline const Gpu& current_gpu(const gt_device* d) {
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
inline void map_fp8(const gt_problem& p, Mapping& m) {
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

inline Mapping map_problem(const gt_problem& p) {
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

inline Attrs attrs_of(const int64_t* c, int32_t n, const gt_problem& p) {
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

inline std::vector<int64_t> config_of(const Attrs& a) {
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
inline cublasLtMatmulAlgo_t make_algo(cublasLtHandle_t h, const Mapping& m, const Attrs& a) {
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
inline Attrs read_algo(const cublasLtMatmulAlgo_t& algo) {
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
inline std::vector<uint32_t> get_cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr,
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

inline AlgoCaps read_caps(cublasLtHandle_t h, const Mapping& m, int32_t id) {
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
inline std::vector<int64_t> small_cluster_shapes() {
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


// Returns why the config is refused, or "" with the checked algorithm in *ch.
std::string config_reason(const ProblemInfo& info, const int64_t* c, int32_t n, Checked* ch);
// The problem's info on the current GPU (built on first use); refuses without a GPU.
const ProblemInfo& problem_info(const gt_problem* p, const gt_device* d);

}  // namespace gt_cublaslt
