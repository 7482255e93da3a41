// A host-only stand-in for the cuBLASLt and CUDA runtime calls the cublaslt plugin makes.
// A second copy of the plugin is linked against it (plugins/cublaslt/standin/, never on the
// plugin path) so that the CPU tests drive the plugin end to end: its space, suggestions,
// refusals, round trips, and, through a host GEMM that follows cuBLASLt's documented
// column-major semantics, its row-major -> column-major mapping of every layout and dtype.
//
// The model: one sm_90 device; four algorithms with capability lists; AlgoCheck rules of
// the kinds cuBLASLt applies (tile x stages too big, split-K beyond K, reduction schemes,
// alignment, a cluster shape the kernel lacks); a heuristic whose order changes with the
// shape (split-K first from K = 4096 on) and whose first pick below that (for 16-byte
// aligned problems) cannot be re-created from its attributes, as a pick with hidden state
// would be. It stands in for behaviour, not for performance or for cuBLASLt's real lists,
// with one exception: for 16-bit inputs, algorithm 66 takes the tiles, custom options and
// split-K of the H200 table in docs/results/ (as the real one does), so that the lookup tests
// can ask the committed table with this stand-in where a GPU would be needed, and that it
// serves only sizes that are multiples of 8 (what the rounding pad, transform.hpp, is for).
//
// FP8 as cuBLASLt 13 has it on Hopper: A and B e4m3 or e5m2 (not both e5m2), TN only (its A
// transposed), 16-byte alignment, the four scale modes of the header applied as documented
// (SCALAR_32F, OUTER_VEC_32F, VEC128_32F, BLK128x128_32F with rows of ceil(K/128) rounded up to
// 4), FAST_ACCUM, an FP8 D with tensor scales only (its D scale and amax), and one algorithm
// (66) whose heuristic offers several picks for tensor scales and one for the others, as the
// H100's cuBLASLt 13.1 was seen to do.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

namespace {

struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transa, transb;
  int32_t mode_a, mode_b;  // cublasLtMatmulMatrixScale_t of A and B
  int8_t fast_accum;
  const float *scale_a, *scale_b, *scale_d;
  float* amax_d;
};
struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t order;
};
struct Pref {
  uint64_t max_workspace;
  uint32_t align[4];  // A, B, C, D
};
struct Algo {
  int32_t id;
  uint32_t tile, stages;
  int32_t split_k;
  uint32_t reduction, swizzle, custom;
  uint16_t inner, cluster;
};
// An algorithm as AlgoInit makes it: its capabilities depend on the types it was made for.
enum Kind : uint16_t { kSingle = 0, kHalf = 1, kFp8 = 2 };  // the inputs' width
struct InitAlgo {
  Algo algo;
  uint16_t kind;  // Kind
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(Pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t));
static_assert(sizeof(InitAlgo) <= sizeof(cublasLtMatmulAlgo_t));

template <class T, class O>
T* as(O* o) {
  return reinterpret_cast<T*>(o);
}

struct AlgoModel {
  int32_t id;
  std::vector<uint32_t> tiles, stages;  // empty: the algorithm takes no tile (stages) ids
  bool split_k;
  uint32_t reduction_mask;
  bool swizzle;
  int32_t custom_max;
  uint32_t align;        // bytes every operand needs
  uint64_t workspace;    // what the kernel needs without split-K
};
const AlgoModel kAlgos[] = {
    {0, {}, {}, true, CUBLASLT_REDUCTION_SCHEME_MASK, false, 0, 2, 0},
    {6,
     {CUBLASLT_MATMUL_TILE_64x64, CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_TILE_128x64, CUBLASLT_MATMUL_TILE_128x128},
     {CUBLASLT_MATMUL_STAGES_32x2, CUBLASLT_MATMUL_STAGES_32x3, CUBLASLT_MATMUL_STAGES_64x3, CUBLASLT_MATMUL_STAGES_64x4},
     true, CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, false, 3, 2, 0},
    {21,
     {CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_TILE_256x128},
     {CUBLASLT_MATMUL_STAGES_32x2, CUBLASLT_MATMUL_STAGES_32x3, CUBLASLT_MATMUL_STAGES_64x3, CUBLASLT_MATMUL_STAGES_64x4},
     true, CUBLASLT_REDUCTION_SCHEME_MASK, true, 0, 4, 0},
    {66,
     {CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_TILE_128x256},
     {CUBLASLT_MATMUL_STAGES_64xAUTO, CUBLASLT_MATMUL_STAGES_128xAUTO},
     false, 0, false, 0, 16, 1024},
};
// Algorithm 66 for f16 and bf16 inputs: the tiles, stages, custom options and split-K the H200
// table's winners use (docs/results/h200-llm-table.toml), so that each of them is in this
// stand-in's space at its key. Its workspace follows the same table: without split-K it needs
// one where C has more than two waves of 132 tiles (its winners with up to 230 tiles took
// workspace 0, those with 384 or more 32 MiB). For these types algorithms 6 and 21 take fewer
// stages and algorithm 6 no 64x128 tile, which keeps the space's raw product under the
// plugin's cap (a larger one would trim the custom options).
struct HalfTile {
  uint32_t id, rows, cols;  // cuBLASLt's tile of C^T: rows along our N, columns along our M
};
const HalfTile kHalfTiles[] = {
    {CUBLASLT_MATMUL_TILE_128x8, 128, 8},     {CUBLASLT_MATMUL_TILE_256x8, 256, 8},
    {CUBLASLT_MATMUL_TILE_64x16, 64, 16},     {CUBLASLT_MATMUL_TILE_256x16, 256, 16},
    {CUBLASLT_MATMUL_TILE_384x16, 384, 16},   {CUBLASLT_MATMUL_TILE_64x24, 64, 24},
    {CUBLASLT_MATMUL_TILE_320x24, 320, 24},   {CUBLASLT_MATMUL_TILE_64x32, 64, 32},
    {CUBLASLT_MATMUL_TILE_64x64, 64, 64},     {CUBLASLT_MATMUL_TILE_128x64, 128, 64},
    {CUBLASLT_MATMUL_TILE_192x64, 192, 64},   {CUBLASLT_MATMUL_TILE_128x128, 128, 128},
    {CUBLASLT_MATMUL_TILE_192x128, 192, 128}, {CUBLASLT_MATMUL_TILE_256x128, 256, 128},
    {CUBLASLT_MATMUL_TILE_320x128, 320, 128}, {CUBLASLT_MATMUL_TILE_128x168, 128, 168},
    {CUBLASLT_MATMUL_TILE_192x192, 192, 192}, {CUBLASLT_MATMUL_TILE_128x256, 128, 256},
};
constexpr uint64_t kHalfWorkspaceTiles = 2 * 132;
const AlgoModel kAlgo66Half = [] {
  AlgoModel m{66, {}, {CUBLASLT_MATMUL_STAGES_64xAUTO, CUBLASLT_MATMUL_STAGES_128xAUTO}, true,
              CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, false, 7, 16, 0};
  for (auto& t : kHalfTiles) m.tiles.push_back(t.id);
  return m;
}();
// The workspace algorithm 66 needs for 16-bit inputs without split-K, for C of rows x cols.
uint64_t half66_workspace(uint32_t tile, uint64_t rows, uint64_t cols) {
  for (auto& t : kHalfTiles) {
    if (t.id != tile) continue;
    uint64_t tiles = (rows + t.rows - 1) / t.rows * ((cols + t.cols - 1) / t.cols);
    return tiles > kHalfWorkspaceTiles ? 1024 : 0;
  }
  return 0;
}
const std::vector<uint32_t> kHalfStages = {CUBLASLT_MATMUL_STAGES_32x3, CUBLASLT_MATMUL_STAGES_64x3};

bool is_half(cudaDataType_t t) { return t == CUDA_R_16F || t == CUDA_R_16BF; }
bool is_fp8(cudaDataType_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }
Kind kind_of(cudaDataType_t t) { return is_fp8(t) ? kFp8 : is_half(t) ? kHalf : kSingle; }
// Algorithm 66 for FP8 inputs: the tiles the H100's heuristic was seen to pick, one stage
// setting, no split-K; 16-byte aligned operands.
const AlgoModel kAlgo66Fp8{66,
                           {CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_TILE_128x256,
                            CUBLASLT_MATMUL_TILE_256x128},
                           {CUBLASLT_MATMUL_STAGES_128xAUTO},
                           false, 0, true, 1, 16, 1024};
// The models for 16-bit inputs.
const std::vector<AlgoModel>& half_models() {
  static const std::vector<AlgoModel> models = [] {
    std::vector<AlgoModel> v(std::begin(kAlgos), std::end(kAlgos));
    for (auto& m : v) {
      if (m.id == 66) m = kAlgo66Half;
      else if (!m.stages.empty()) m.stages = kHalfStages;
      if (m.id == 6) m.tiles = {CUBLASLT_MATMUL_TILE_64x64, CUBLASLT_MATMUL_TILE_128x64, CUBLASLT_MATMUL_TILE_128x128};
    }
    return v;
  }();
  return models;
}
// The model of an algorithm, for inputs of this kind.
const AlgoModel* model(int32_t id, Kind kind) {
  if (kind == kFp8) return id == 66 ? &kAlgo66Fp8 : nullptr;
  if (kind == kHalf) {
    for (auto& a : half_models())
      if (a.id == id) return &a;
    return nullptr;
  }
  for (auto& a : kAlgos)
    if (a.id == id) return &a;
  return nullptr;
}
size_t elem_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : is_fp8(t) ? 1 : 2; }

// The type combinations cuBLASLt documents for these compute types (A, B, C, D).
bool types_supported(cublasComputeType_t compute, cudaDataType_t a, cudaDataType_t b, cudaDataType_t c,
                     cudaDataType_t d) {
  if (is_fp8(a) || is_fp8(b)) {
    if (compute != CUBLAS_COMPUTE_32F || !is_fp8(a) || !is_fp8(b)) return false;
    if (a == CUDA_R_8F_E5M2 && b == CUDA_R_8F_E5M2) return false;
    if (is_fp8(d)) return c == CUDA_R_16BF || c == CUDA_R_16F;
    return c == d && (d == CUDA_R_16BF || d == CUDA_R_16F || d == CUDA_R_32F);
  }
  if (a != b || c != d) return false;
  if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) return a == CUDA_R_32F && c == CUDA_R_32F;
  if (compute != CUBLAS_COMPUTE_32F) return false;
  if (a == CUDA_R_32F) return c == CUDA_R_32F;
  return (a == CUDA_R_16F || a == CUDA_R_16BF) && (c == a || c == CUDA_R_32F);
}

// FP8 <-> float, as the formats define them (e4m3: bias 7, no infinity, NaN S.1111.111; e5m2:
// bias 15, IEEE-like infinities and NaNs).
float fp8_to_float(uint8_t v, bool e4m3) {
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emax = e4m3 ? 15 : 31;
  const int e = (v >> mbits) & emax, mant = v & ((1 << mbits) - 1);
  const float sign = (v & 0x80) ? -1.f : 1.f;
  if (e4m3 && e == 15 && mant == 7) return NAN;
  if (!e4m3 && e == 31) return mant ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(float(mant), 1 - bias - mbits);
  return sign * std::ldexp(float((1 << mbits) | mant), e - bias - mbits);
}
// Round to nearest (ties to even by the float search below), saturating at the largest finite value.
uint8_t float_to_fp8(float x, bool e4m3) {
  if (std::isnan(x)) return e4m3 ? 0x7f : 0x7e;
  uint8_t best = 0;
  float best_d = INFINITY;
  for (int v = 0; v < 128; ++v) {
    float f = fp8_to_float(uint8_t(v), e4m3);
    if (!std::isfinite(f)) continue;
    float d = std::fabs(std::fabs(x) - f);
    if (d < best_d || (d == best_d && (v & 1) == 0)) {
      best_d = d;
      best = uint8_t(v);
    }
  }
  return uint8_t(best | (x < 0 ? 0x80 : 0));
}

float load(const void* p, cudaDataType_t t, int64_t i) {
  if (t == CUDA_R_32F) return static_cast<const float*>(p)[i];
  if (is_fp8(t)) return fp8_to_float(static_cast<const uint8_t*>(p)[i], t == CUDA_R_8F_E4M3);
  uint16_t h = static_cast<const uint16_t*>(p)[i];
  uint32_t bits;
  if (t == CUDA_R_16BF) {
    bits = uint32_t(h) << 16;
  } else {  // IEEE half -> float (inputs here are normal numbers or zero)
    uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    bits = exp == 0 ? sign : sign | (exp - 15 + 127) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
void store(void* p, cudaDataType_t t, int64_t i, float v) {
  if (t == CUDA_R_32F) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  if (is_fp8(t)) {
    static_cast<uint8_t*>(p)[i] = float_to_fp8(v, t == CUDA_R_8F_E4M3);
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint16_t h;
  if (t == CUDA_R_16BF) {
    h = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // round to nearest even
  } else {
    uint32_t sign = (bits >> 16) & 0x8000;
    int exp = int((bits >> 23) & 0xff) - 127 + 15;
    uint32_t mant = bits & 0x7fffff;
    if (v == 0.f || exp <= 0) h = uint16_t(sign);  // the tests keep outputs normal
    else if (exp >= 31) h = uint16_t(sign | 0x7c00);
    else {
      uint32_t r = (uint32_t(exp) << 10 | mant >> 13) + ((mant >> 12) & 1);  // round half up
      h = uint16_t(sign | r);
    }
  }
  static_cast<uint16_t*>(p)[i] = h;
}
float to_tf32(float v) {  // cvt.rna.tf32.f32
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = (bits + 0x1000) & 0xffffe000u;
  std::memcpy(&v, &bits, 4);
  return v;
}

}  // namespace

extern "C" {

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }
size_t cublasLtGetCudartVersion(void) { return 13000; }
const char* cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}
const char* cublasLtGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_NOT_SUPPORTED ? "the functionality requested is not supported (stand-in)"
                                          : "stand-in status";
}
cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  static int handle;
  *h = reinterpret_cast<cublasLtHandle_t>(&handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t d, size_t size, cublasComputeType_t compute,
                                               cudaDataType_t scale) {
  if (size < sizeof(Desc)) return CUBLAS_STATUS_ALLOC_FAILED;
  *as<Desc>(d) = Desc{compute, scale, CUBLAS_OP_N, CUBLAS_OP_N, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  Desc* x = as<Desc>(d);
  auto set = [&](void* field, size_t n) {
    if (size != n || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(field, buf, n);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return set(&x->transa, 4);
    case CUBLASLT_MATMUL_DESC_TRANSB: return set(&x->transb, 4);
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE: return set(&x->mode_a, 4);
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE: return set(&x->mode_b, 4);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return set(&x->fast_accum, 1);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER: return set(&x->scale_a, sizeof(void*));
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER: return set(&x->scale_b, sizeof(void*));
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER: return set(&x->scale_d, sizeof(void*));
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER: return set(&x->amax_d, sizeof(void*));
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}
cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t l, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  if (size < sizeof(Layout)) return CUBLAS_STATUS_ALLOC_FAILED;
  if (ld < int64_t(rows)) return CUBLAS_STATUS_INVALID_VALUE;  // column-major: ld >= rows
  *as<Layout>(l) = Layout{type, rows, cols, ld, CUBLASLT_ORDER_COL};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  if (attr != CUBLASLT_MATRIX_LAYOUT_ORDER || size != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&as<Layout>(l)->order, buf, 4);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t p, size_t size) {
  if (size < sizeof(Pref)) return CUBLAS_STATUS_ALLOC_FAILED;
  *as<Pref>(p) = Pref{0, {256, 256, 256, 256}};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t size) {
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == 8) {
    std::memcpy(&as<Pref>(p)->max_workspace, buf, 8);
  } else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES &&
             size == 4) {
    std::memcpy(&as<Pref>(p)->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, 4);
  } else {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t, cublasComputeType_t compute, cudaDataType_t,
                                        cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cudaDataType_t d,
                                        int requested, int ids[], int* returned) {
  *returned = 0;
  if (!types_supported(compute, a, b, c, d)) return CUBLAS_STATUS_SUCCESS;
  for (auto& m : kAlgos)
    if (*returned < requested && model(m.id, kind_of(a))) ids[(*returned)++] = m.id;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t, cublasComputeType_t compute, cudaDataType_t, cudaDataType_t a,
                                      cudaDataType_t b, cudaDataType_t c, cudaDataType_t d, int id,
                                      cublasLtMatmulAlgo_t* algo) {
  if (!model(id, kind_of(a)) || !types_supported(compute, a, b, c, d)) return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(algo, 0, sizeof(*algo));
  *as<InitAlgo>(algo) = InitAlgo{Algo{id, 0, 0, 1, 0, 0, 0, 0, 0}, uint16_t(kind_of(a))};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                 cublasLtMatmulAlgoCapAttributes_t attr, void* buf, size_t size,
                                                 size_t* written) {
  const AlgoModel* m = model(as<const Algo>(algo)->id, Kind(as<const InitAlgo>(algo)->kind));
  if (!m) return CUBLAS_STATUS_INVALID_VALUE;
  auto list = [&](const std::vector<uint32_t>& v) {
    size_t bytes = v.size() * sizeof(uint32_t);
    if (size == 0) {
      if (!written) return CUBLAS_STATUS_INVALID_VALUE;
      *written = bytes;
      return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size < bytes) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, v.data(), bytes);
    *written = bytes;
    return CUBLAS_STATUS_SUCCESS;
  };
  auto scalar = [&](uint32_t v) {
    if (size != 4 || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, &v, 4);
    *written = 4;
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_ALGO_CAP_TILE_IDS: return list(m->tiles);
    case CUBLASLT_ALGO_CAP_STAGES_IDS: return list(m->stages);
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT: return scalar(m->split_k);
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK: return scalar(m->reduction_mask);
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT: return scalar(m->swizzle);
    case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX: return scalar(uint32_t(m->custom_max));
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES: return scalar(m->align);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    const void* buf, size_t size) {
  Algo* a = as<Algo>(algo);
  auto set = [&](void* field, size_t n) {
    if (size != n || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(field, buf, n);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_TILE_ID: return set(&a->tile, 4);
    case CUBLASLT_ALGO_CONFIG_STAGES_ID: return set(&a->stages, 4);
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: return set(&a->split_k, 4);
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: return set(&a->reduction, 4);
    case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING: return set(&a->swizzle, 4);
    case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: return set(&a->custom, 4);
    case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID: return set(&a->inner, 2);
    case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID: return set(&a->cluster, 2);
    default: return CUBLAS_STATUS_INVALID_VALUE;  // the id is read-only
  }
}
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t size,
                                                    size_t* written) {
  const Algo* a = as<const Algo>(algo);
  auto get = [&](const void* field, size_t n) {
    if (size != n || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(buf, field, n);
    if (written) *written = n;
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_ID: return get(&a->id, 4);
    case CUBLASLT_ALGO_CONFIG_TILE_ID: return get(&a->tile, 4);
    case CUBLASLT_ALGO_CONFIG_STAGES_ID: return get(&a->stages, 4);
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: return get(&a->split_k, 4);
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: return get(&a->reduction, 4);
    case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING: return get(&a->swizzle, 4);
    case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION: return get(&a->custom, 4);
    case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID: return get(&a->inner, 2);
    case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID: return get(&a->cluster, 2);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
                                       cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                       const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  const Desc* d = as<Desc>(desc);
  const Layout *a = as<Layout>(A), *b = as<Layout>(B), *c = as<Layout>(C), *dl = as<Layout>(D);
  const Algo* al = as<const Algo>(algo);
  const AlgoModel* m = model(al->id, kind_of(a->type));
  if (!m || !types_supported(d->compute, a->type, b->type, c->type, dl->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (c->rows != dl->rows || c->cols != dl->cols || c->ld != dl->ld) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!is_fp8(a->type) && (d->mode_a || d->mode_b || d->fast_accum)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (is_fp8(a->type)) {
    // TN only; 128x128 blocks on one operand at most; an FP8 D with scalar scales only.
    if (d->transa != CUBLAS_OP_T || d->transb != CUBLAS_OP_N) return CUBLAS_STATUS_NOT_SUPPORTED;
    const int32_t blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const bool blockwise = d->mode_a == blk || d->mode_a == vec || d->mode_b == blk || d->mode_b == vec;
    if (d->mode_a == blk && d->mode_b == blk) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (blockwise && !((d->mode_a == blk || d->mode_a == vec) && (d->mode_b == blk || d->mode_b == vec)))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((d->mode_a == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F) != (d->mode_b == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (is_fp8(dl->type) && (d->mode_a || d->mode_b)) return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const uint64_t k = d->transa == CUBLAS_OP_N ? a->cols : a->rows;
  auto listed = [](const std::vector<uint32_t>& v, uint32_t x) {
    if (v.empty()) return x == 0;
    for (uint32_t y : v)
      if (y == x) return true;
    return false;
  };
  if (!listed(m->tiles, al->tile) || !listed(m->stages, al->stages)) return CUBLAS_STATUS_NOT_SUPPORTED;
  // Too much shared memory for the largest tile with the deepest pipeline.
  if (al->tile == CUBLASLT_MATMUL_TILE_256x128 && al->stages == CUBLASLT_MATMUL_STAGES_64x4)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (al->split_k < 1 || uint64_t(al->split_k) > k) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (al->split_k > 1 && (!m->split_k || !(m->reduction_mask & al->reduction))) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (al->swizzle > 1 || (al->swizzle && !m->swizzle) || int32_t(al->custom) > m->custom_max)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (al->id == 66 && al->cluster == CUBLASLT_CLUSTER_SHAPE_2x2x1) return CUBLAS_STATUS_NOT_SUPPORTED;
  // For 16-bit inputs the TMA algorithm serves only a K that is a multiple of 8, as the H100's
  // cuBLASLt 13 was seen to (issue 55: 4096x4096x4097 bf16 with A padded to a 16-byte ld still
  // got algorithm 24 alone; the 4104 twin got 66). M is free: the H200's pick at 1x4096x4096
  // is algorithm 66 (docs/results/h200-llm-table.toml).
  if (m == model(66, kHalf) && k % 8) return CUBLAS_STATUS_NOT_SUPPORTED;
  for (const Layout* l : {a, b, dl})
    if ((uint64_t(l->ld) * elem_size(l->type)) % m->align) return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(result, 0, sizeof(*result));
  result->algo = *algo;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  result->workspaceSize = m == model(66, kHalf) ? half66_workspace(al->tile, c->rows, c->cols) : m->workspace;
  if (al->split_k > 1) {
    uint64_t part = c->rows * c->cols * uint64_t(al->split_k);
    result->workspaceSize = al->reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE ? 4096
                            : al->reduction == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ? part * 4
                                                                                      : part * elem_size(c->type);
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
                                              cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
                                              cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t pref,
                                              int requested, cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  if (requested <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  const Pref* p = as<Pref>(pref);
  // Best first. The first carries state its attributes do not spell (it runs with a 2x2x1
  // cluster that AlgoCheck refuses when the algorithm is re-created from its attributes).
  const Algo picks[] = {
      {66, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_STAGES_128xAUTO, 1, 0, 0, 0, 0, CUBLASLT_CLUSTER_SHAPE_2x2x1},
      {66, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_STAGES_128xAUTO, 1, 0, 0, 0, 0, CUBLASLT_CLUSTER_SHAPE_2x1x1},
      {21, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_STAGES_32x3, 1, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, 1, 0, 0,
       0},
      {6, CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_STAGES_64x3, 4, CUBLASLT_REDUCTION_SCHEME_INPLACE, 0, 2,
       CUBLASLT_MATMUL_INNER_SHAPE_MMA16816, 0},
      {6, CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_STAGES_64x3, 3, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, 0, 0, 0,
       0},
      {0, 0, 0, 1, 0, 0, 0, 0, 0},
  };
  // A long reduction (K >= 4096) puts the split-K algorithm first, so that the pick depends
  // on the shape as cuBLASLt's does.
  std::vector<Algo> order(std::begin(picks), std::end(picks));
  const Desc* d = as<Desc>(desc);
  const Layout* a = as<Layout>(A);
  if ((d->transa == CUBLAS_OP_N ? a->cols : a->rows) >= 4096)
    std::stable_partition(order.begin(), order.end(), [](const Algo& x) { return x.split_k > 1; });
  if (is_fp8(a->type)) {
    // FP8: algorithm 66 alone; several picks with tensor scales, one with the other modes.
    const uint16_t c21 = CUBLASLT_CLUSTER_SHAPE_2x1x1, c12 = CUBLASLT_CLUSTER_SHAPE_1x2x1;
    order = {{66, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_STAGES_128xAUTO, 1, 0, 0, 0, 0, c21},
             {66, CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_STAGES_128xAUTO, 1, 0, 0, 1, 0, c12},
             {66, CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_STAGES_128xAUTO, 1, 0, 0, 0, 0, 0}};
    if (d->mode_a || d->mode_b) order.resize(1);
  }
  *returned = 0;
  for (const Algo& pick : order) {
    if (*returned == requested) break;
    const AlgoModel* m = model(pick.id, kind_of(as<Layout>(A)->type));
    uint32_t min_align = std::min(std::min(p->align[0], p->align[1]), std::min(p->align[2], p->align[3]));
    if (m->align > min_align) continue;
    Algo checked = pick;
    if (checked.cluster == CUBLASLT_CLUSTER_SHAPE_2x2x1) checked.cluster = CUBLASLT_CLUSTER_SHAPE_2x1x1;
    cublasLtMatmulAlgo_t probe{};
    *as<Algo>(&probe) = checked;
    cublasLtMatmulHeuristicResult_t r{};
    if (cublasLtMatmulAlgoCheck(h, desc, A, B, C, D, &probe, &r) != CUBLAS_STATUS_SUCCESS) continue;
    if (r.workspaceSize > p->max_workspace) continue;
    *as<Algo>(&r.algo) = pick;
    results[(*returned)++] = r;
  }
  return *returned ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

// D = alpha op(A) op(B) + beta C, every matrix column-major with its ld, on host memory.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t) {
  cublasLtMatmulHeuristicResult_t check{};
  cublasStatus_t st = cublasLtMatmulAlgoCheck(h, desc, Adesc, Bdesc, Cdesc, Ddesc, algo, &check);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (workspace_bytes < check.workspaceSize || (check.workspaceSize && !workspace)) return CUBLAS_STATUS_INVALID_VALUE;
  const Desc* d = as<Desc>(desc);
  const Layout *a = as<Layout>(Adesc), *b = as<Layout>(Bdesc), *c = as<Layout>(Ddesc);
  if (a->order != CUBLASLT_ORDER_COL || b->order != CUBLASLT_ORDER_COL || c->order != CUBLASLT_ORDER_COL)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool ta = d->transa == CUBLAS_OP_T, tb = d->transb == CUBLAS_OP_T;
  const uint64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  const uint64_t kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
  if (k != kb || m != c->rows || n != c->cols) return CUBLAS_STATUS_INVALID_VALUE;
  const bool tf32 = d->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const bool fp8 = is_fp8(a->type);
  if (fp8 && (!d->scale_a || !d->scale_b) && (d->mode_a || d->mode_b)) return CUBLAS_STATUS_INVALID_VALUE;
  float al, be;
  std::memcpy(&al, alpha, 4);
  std::memcpy(&be, beta, 4);
  const uint64_t kb4 = ((k + 127) / 128 + 3) / 4 * 4;  // BLK128x128's rows of block scales
  // The scale of op(A)(i, l) and of op(B)(l, j) by their modes (1 where none is given).
  auto scale_of = [&](const float* s, int32_t mode, uint64_t mn, uint64_t extent, uint64_t l) -> double {
    if (!s) return 1.0;
    switch (mode) {
      case CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: return s[mn];
      case CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: return s[(l / 128) * extent + mn];
      case CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F: return s[(mn / 128) * kb4 + l / 128];
      default: return s[0];
    }
  };
  const double d_scale = fp8 && is_fp8(c->type) && d->scale_d ? double(*d->scale_d) : 1.0;
  float amax = 0.f;
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      double sum = 0;
      for (uint64_t l = 0; l < k; ++l) {
        float x = load(A, a->type, ta ? int64_t(l + i * uint64_t(a->ld)) : int64_t(i + l * uint64_t(a->ld)));
        float y = load(B, b->type, tb ? int64_t(j + l * uint64_t(b->ld)) : int64_t(l + j * uint64_t(b->ld)));
        if (tf32) {
          x = to_tf32(x);
          y = to_tf32(y);
        }
        double term = double(x) * double(y);
        if (fp8) term *= scale_of(d->scale_a, d->mode_a, i, m, l) * scale_of(d->scale_b, d->mode_b, j, n, l);
        sum += term;
      }
      int64_t at = int64_t(i + j * uint64_t(c->ld));
      float prior = be != 0.f ? load(C, c->type, at) : 0.f;  // beta == 0: C is not read
      const float v = float(al * sum + be * prior);
      amax = std::max(amax, std::fabs(v));
      store(D, c->type, at, float(v * d_scale));
    }
  if (fp8 && d->amax_d) *d->amax_d = amax;
  return CUBLAS_STATUS_SUCCESS;
}

// The CUDA runtime: one sm_90 device.
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  if (attr == cudaDevAttrComputeCapabilityMajor) *value = 9;
  else if (attr == cudaDevAttrComputeCapabilityMinor) *value = 0;
  else return cudaErrorInvalidValue;
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t) { return "stand-in CUDA runtime error"; }
// Device memory is host memory here (the plugin's scale stub).
cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::calloc(1, bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

}  // extern "C"
