// The problem key: what a tuned result is valid for.
#pragma once

#include <gemmtune/plugin_abi.h>

#include <array>
#include <optional>
#include <utility>
#include <cstdint>
#include <string>
#include <string_view>

namespace gt {

enum class DType : int32_t { f32 = GT_F32, tf32 = GT_TF32, f16 = GT_F16, bf16 = GT_BF16, e4m3 = GT_E4M3, e5m2 = GT_E5M2 };
enum class Layout : int32_t { nn = GT_NN, nt = GT_NT, tn = GT_TN, tt = GT_TT };
// How an FP8 problem's scales are shaped (plugin_abi.h, gt_scale_mode); none for every other.
enum class ScaleMode : int32_t { none = GT_SCALE_NONE, tensor = GT_SCALE_TENSOR, row = GT_SCALE_ROW, block = GT_SCALE_BLOCK };

// Every dimension and leading dimension is at most this (kernels take int32 sizes and
// compute element offsets in 64 bits). Larger shapes are refused with an InputError.
inline constexpr int64_t kMaxDim = 2147483647;

const char* to_string(DType);
const char* to_string(Layout);
const char* to_string(ScaleMode);
size_t size_of(DType);
inline bool is_fp8(DType d) { return d == DType::e4m3 || d == DType::e5m2; }
// The largest finite value of an FP8 type (e4m3 448, e5m2 57344); 0 for the others.
double fp8_max(DType d);
DType parse_dtype(std::string_view s, std::string_view where = "--dtype");
// A and B's types: "e4m3", or "e4m3:e5m2" for FP8 operands of two types (A's first). Mixing
// is FP8 only, and e5m2 x e5m2 does not exist (no library or tensor-core path multiplies it).
std::pair<DType, DType> parse_in_types(std::string_view s, std::string_view where = "--dtype");
// "e4m3" when both are the same, else "e4m3:e5m2".
std::string in_types_text(DType a, DType b);
Layout parse_layout(std::string_view s, std::string_view where = "--layout");
ScaleMode parse_scale_mode(std::string_view s, std::string_view where = "--scale");
// "MxNxK" with M, N, K in [1, kMaxDim]; InputError naming `where` otherwise.
std::array<int64_t, 3> parse_shape(std::string_view s, std::string_view where = "--shape");
// Problem::constant's bits: the caller's A and B.
inline constexpr int32_t kConstantA = 1, kConstantB = 2;
// "" (none), "a", "b" or "a,b".
std::string constant_text(int32_t constant);
// The inverse of constant_text; also takes "none" and "b,a". InputError naming `where` otherwise.
int32_t parse_constant(std::string_view s, std::string_view where = "--constant");
// The storage type of a result: tf32 is fp32 data.
DType storage_of(DType d);

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  DType in = DType::f32;    // A's type (and B's, but for FP8 operands of two types)
  DType in_b = DType::f32;  // B's type: `in`, except e4m3 x e5m2
  DType out = DType::f32;
  ScaleMode scale = ScaleMode::none;  // FP8 problems: how A and B are scaled
  Layout layout = Layout::nn;
  int64_t lda = 0, ldb = 0, ldc = 0;  // elements
  int32_t align = 16;                 // bytes: 1, 2, 4, 8 or 16
  // Bytes known to divide every base pointer (16: aligned, or nothing known against it). Not
  // part of the key (align is); a transform (transform.hpp) needs to know whether a misaligned
  // key comes from a leading dimension or from a pointer.
  int32_t pointer_align = 16;
  // Bytes known to divide A's, B's and C's own base pointer (indexed by gt_operand); 0: not
  // known per operand, pointer_align holds for each. The runtime knows each of the caller's
  // pointers, a transform which operands it reads in place: a family that can write a
  // misaligned C in place (wgmma_tma) needs to know that A and B are aligned.
  std::array<int32_t, 3> operand_pointer_align{0, 0, 0};
  // The operands the program declares constant (its weights): kConstantA | kConstantB bits.
  // Part of the key: a transform copies a constant operand once, when the program prepares the
  // problem, and not on every call, so a time measured that way holds only for calls that
  // declare the operand constant too (docs/transforms.md).
  int32_t constant = 0;

  // A problem with tight leading dimensions and buffers from cudaMalloc (256-byte aligned).
  // B's type is A's unless given; FP8 inputs are scaled tensor-wise unless a mode is given.
  static Problem make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout layout,
                      std::optional<DType> in_b = std::nullopt, std::optional<ScaleMode> scale = std::nullopt);
  // The default output type for an input type (tf32 -> f32, FP8 -> bf16, others -> themselves).
  static DType default_out(DType in) {
    return in == DType::tf32 ? DType::f32 : is_fp8(in) ? DType::bf16 : in;
  }
  bool fp8() const { return is_fp8(in); }
  // Floats of A's and B's scales (plugin_abi.h, gt_scale_mode); 0 without scales.
  size_t scale_count_a() const;
  size_t scale_count_b() const;

  bool a_trans() const { return layout == Layout::tn || layout == Layout::tt; }
  bool b_trans() const { return layout == Layout::nt || layout == Layout::tt; }
  // Rows x cols of A and B as stored.
  int64_t a_rows() const { return a_trans() ? k : m; }
  int64_t a_cols() const { return a_trans() ? m : k; }
  int64_t b_rows() const { return b_trans() ? n : k; }
  int64_t b_cols() const { return b_trans() ? k : n; }
  size_t bytes_a() const { return size_t(a_rows()) * size_t(lda) * size_of(in); }
  size_t bytes_b() const { return size_t(b_rows()) * size_t(ldb) * size_of(in_b); }
  size_t bytes_c() const { return size_t(m) * size_t(ldc) * size_of(out); }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // Fewest bytes moved: each input read once, the output written once, without padding (the
  // roofline's bytes).
  double min_bytes() const {
    return double(m) * double(k) * double(size_of(in)) + double(k) * double(n) * double(size_of(in_b)) +
           double(m) * double(n) * double(size_of(out));
  }

  std::string shape() const;  // "MxNxK"
  // "4096x4096x4096 f16>f16 nn a16" (FP8: "4096x4096x4096 e4m3>bf16 nt a16 row"; a constant B:
  // "... a2 const=b"): the key without the device.
  std::string key() const;
  // An operand's own alignment (gt_problem.align_a/b/c): the largest power of two (bytes, at
  // most 16) dividing its ld * element size and what is known of its base pointer. Where the
  // pointer is not known per operand and the key is less aligned than the leading dimensions
  // explain, some pointer is, and each is taken to be.
  int32_t operand_align(gt_operand op) const;
  // What is known of an operand's base pointer alone (operand_align without the ld).
  int32_t pointer_align_of(gt_operand op) const;
  gt_problem abi() const;
  // InputError on inconsistent fields, and on an FP8 problem no GPU can run: a layout other
  // than nt, e5m2 x e5m2, types mixed outside FP8, an FP8 output with row or block scales.
  void validate() const;
};

// Why a GPU of compute capability cc_major.cc_minor cannot run an FP8 problem at all (nullopt:
// it can, or the problem is not FP8): FP8 tensor cores start at sm_89; row and block scales
// (cuBLASLt's OUTER_VEC_32F, VEC128_32F, BLK128x128_32F, and the wgmma family) are Hopper's (sm_90).
std::optional<std::string> fp8_device_refusal(const Problem& p, int cc_major, int cc_minor);

// The buffers of one call: A, B, C and, for an FP8 problem, its scales (plugin_abi.h,
// gt_scales; null pointers for every other problem).
struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  gt_scales scales{};
};

// The row length of B's 128x128 block scales: ceil(K / 128) rounded up to a multiple of 4
// (plugin_abi.h, GT_SCALE_BLOCK; cuBLASLt's layout).
inline int64_t block_scale_stride(int64_t k) { return ((k + 127) / 128 + 3) / 4 * 4; }

// Largest power of two (bytes, at most 16) dividing every ld * element size and every
// base pointer (pass 0 for pointers not known yet: cudaMalloc aligns to 256).
int32_t alignment_of(const Problem& p, uintptr_t a = 0, uintptr_t b = 0, uintptr_t c = 0);
// The largest power of two (bytes, at most 16) dividing every base pointer (Problem::pointer_align).
int32_t alignment_of_pointers(uintptr_t a, uintptr_t b, uintptr_t c);

}  // namespace gt

#include <nlohmann/json_fwd.hpp>
namespace gt {
void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);  // InputError on bad fields
}  // namespace gt
