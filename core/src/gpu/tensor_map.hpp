// TMA tensor maps that source families request (plugin_abi.h, gt_tensor_map_request):
// what cuTensorMapEncodeTiled is given for an operand of a problem, checked on the CPU, and
// the encoding itself, reached through the CUDA runtime's driver entry point (nothing links
// libcuda, so every binary still starts without a driver).
#pragma once

#include "base/problem.hpp"
#include "base/refusal.hpp"

#include <gemmtune/plugin_abi.h>

#include <cstdint>
#include <optional>
#include <string>

namespace gt {

// Everything of an encode call but the base address.
struct TensorMapShape {
  int data_type = 0;          // CUtensorMapDataType
  int element_bytes = 0;
  uint64_t dims[2] = {0, 0};  // columns (contiguous), rows
  uint64_t row_stride_bytes = 0;
  uint32_t box[2] = {0, 0};
  uint32_t element_strides[2] = {1, 1};
  int interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
};

// The operand as stored: rows x columns with its leading dimension (plugin_abi.h).
struct OperandView {
  int64_t rows = 0, cols = 0, ld = 0;
  DType dtype = DType::f32;
};
OperandView operand_view(const Problem& p, gt_operand op);
const char* operand_name(gt_operand op);

// The request made concrete for the problem, or why it cannot be: a box TMA cannot copy is
// the family's mistake (GT_REFUSAL_CONFIG), a row stride or base alignment that is not a
// multiple of 16 bytes is the problem's (GT_REFUSAL_SHAPE).
std::optional<TensorMapShape> tensor_map_shape(const Problem& p, const gt_tensor_map_request& r, Refused* why);

// The 128 bytes of the tensor map for `base`. Throws RuntimeFailure when there is no driver
// or the driver refuses the map.
void encode_tensor_map(const TensorMapShape& s, const void* base, void* out128);

}  // namespace gt
