#include "gpu/tensor_map.hpp"

#include "base/errors.hpp"

#include <cuda.h>  // types and enums only: the function is reached through the runtime
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <mutex>

namespace gt {

const char* operand_name(gt_operand op) {
  switch (op) {
    case GT_OPERAND_A: return "A";
    case GT_OPERAND_B: return "B";
    case GT_OPERAND_C: return "C";
  }
  return "?";
}

OperandView operand_view(const Problem& p, gt_operand op) {
  switch (op) {
    case GT_OPERAND_A: return {p.a_rows(), p.a_cols(), p.lda, storage_of(p.in)};
    case GT_OPERAND_B: return {p.b_rows(), p.b_cols(), p.ldb, storage_of(p.in_b)};
    case GT_OPERAND_C: return {p.m, p.n, p.ldc, p.out};
  }
  return {};
}

namespace {

int data_type_of(DType d) {
  switch (d) {
    case DType::f32: case DType::tf32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    // TMA copies bytes: FP8 tiles are moved as 8-bit integers (the tensor cores read the bits).
    case DType::e4m3: case DType::e5m2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

// Bytes a swizzle mode lets a box's row span (CUtensorMapSwizzle; 0: no limit but 256 elements).
int swizzle_span(int swizzle) {
  switch (swizzle) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B: return 128;
    default: return -1;
  }
}

std::optional<TensorMapShape> refuse(Refused* why, gt_refusal code, std::string text) {
  if (why) *why = Refused{code, std::move(text)};
  return std::nullopt;
}

}  // namespace

std::optional<TensorMapShape> tensor_map_shape(const Problem& p, const gt_tensor_map_request& r, Refused* why) {
  if (r.operand < GT_OPERAND_A || r.operand > GT_OPERAND_C)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("a tensor map names operand {}, not A, B or C", r.operand));
  const auto op = gt_operand(r.operand);
  const char* name = operand_name(op);
  if (r.rank != 2)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} has rank {}; core encodes rank 2", name, r.rank));
  const OperandView v = operand_view(p, op);
  TensorMapShape s;
  s.data_type = data_type_of(v.dtype);
  s.element_bytes = int(size_of(v.dtype));
  s.dims[0] = uint64_t(v.cols);
  s.dims[1] = uint64_t(v.rows);
  s.row_stride_bytes = uint64_t(v.ld) * uint64_t(s.element_bytes);
  for (int i = 0; i < 2; ++i) {
    s.box[i] = r.box[i];
    s.element_strides[i] = r.element_strides[i] ? r.element_strides[i] : 1;
    if (s.box[i] < 1 || s.box[i] > 256)
      return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks a box of {} along dimension {}; TMA copies 1 to 256", name, s.box[i], i));
    if (s.element_strides[i] > 8)
      return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks an element stride of {}; TMA takes 1 to 8", name, s.element_strides[i]));
  }
  s.interleave = r.interleave;
  s.swizzle = r.swizzle;
  s.l2_promotion = r.l2_promotion;
  s.oob_fill = r.oob_fill;
  const int64_t box_row_bytes = int64_t(s.box[0]) * s.element_bytes;
  if (s.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks an interleaved layout; core encodes none", name));
  if (box_row_bytes % 16 != 0)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks box rows of {} bytes; TMA needs a multiple of 16", name, box_row_bytes));
  const int span = swizzle_span(s.swizzle);
  if (span < 0)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks swizzle mode {}; core knows none, 32B, 64B and 128B", name, s.swizzle));
  if (span > 0 && box_row_bytes > span)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks box rows of {} bytes under a {}-byte swizzle, which spans at most {}", name, box_row_bytes, span, span));
  if (s.l2_promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE || s.l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks L2 promotion {}", name, s.l2_promotion));
  if (s.oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && s.oob_fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return refuse(why, GT_REFUSAL_CONFIG, fmt::format("the tensor map of {} asks out-of-bounds fill {}", name, s.oob_fill));
  // What the problem must give TMA: 16-byte aligned base addresses and row strides.
  if (s.row_stride_bytes % 16 != 0)
    return refuse(why, GT_REFUSAL_SHAPE,
                  fmt::format("TMA needs the rows of {} {} bytes apart to be a multiple of 16 (ld{} = {}); pad the leading dimension",
                              name, s.row_stride_bytes, char('a' + int(op)), v.ld));
  // The operand's own alignment: a misaligned C does not stop TMA from reading A and B.
  if (const int32_t al = p.operand_align(op); al < 16)
    return refuse(why, GT_REFUSAL_SHAPE,
                  fmt::format("TMA needs 16-byte aligned operands; {} is aligned to {} bytes", name, al));
  if (s.row_stride_bytes >= (uint64_t(1) << 40))
    return refuse(why, GT_REFUSAL_SHAPE, fmt::format("the rows of {} are {} bytes apart; TMA allows under 2^40", name, s.row_stride_bytes));
  return s;
}

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static std::once_flag once;
  static EncodeTiled fn = nullptr;
  static std::string error;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
      error = fmt::format("the driver has no cuTensorMapEncodeTiled ({})", cudaGetErrorString(e));
    else
      fn = reinterpret_cast<EncodeTiled>(p);
  });
  if (!fn) throw RuntimeFailure(error);
  return fn;
}

}  // namespace

void encode_tensor_map(const TensorMapShape& s, const void* base, void* out128) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    throw RuntimeFailure(fmt::format("a tensor map's base address {} is not 16-byte aligned", base));
  const cuuint64_t dims[2] = {s.dims[0], s.dims[1]};
  const cuuint64_t strides[1] = {s.row_stride_bytes};
  const cuuint32_t box[2] = {s.box[0], s.box[1]};
  const cuuint32_t estr[2] = {s.element_strides[0], s.element_strides[1]};
  CUtensorMap map;
  CUresult r = encode_fn()(&map, CUtensorMapDataType(s.data_type), 2, const_cast<void*>(base), dims, strides, box,
                           estr, CUtensorMapInterleave(s.interleave), CUtensorMapSwizzle(s.swizzle),
                           CUtensorMapL2promotion(s.l2_promotion), CUtensorMapFloatOOBfill(s.oob_fill));
  if (r != CUDA_SUCCESS)
    throw RuntimeFailure(fmt::format("cuTensorMapEncodeTiled refused a {}x{} map (box {}x{}): CUresult {}", s.dims[0],
                                     s.dims[1], s.box[0], s.box[1], int(r)));
  static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");
  std::memcpy(out128, &map, sizeof map);
}

}  // namespace gt
