// Problem transforms: a config of any family run on another form of the problem, with core
// doing the rest. A candidate is (family config, transform); docs/transforms.md says why.
//
//  pad       the operands whose leading dimension (or base pointer) is not 16-byte aligned are
//            copied into core-owned workspace buffers whose leading dimensions are rounded up
//            to 16 bytes (zeros in the padding); a size is rounded up too, with zeros, where
//            every matrix spanning it is copied (K: A and B; M: A and C; N: B and C), so that
//            the family sees multiples of 8. C goes through a padded buffer and is written back cropped, unless
//            the caller's C is aligned (then the family writes it in place). The copies are part
//            of the candidate: they are timed with it.
//  swap      Cᵀ = Bᵀ·Aᵀ: B is the family's A and A its B (their stored matrices as they are, no
//            copy), M and N exchanged, the layout letters flipped (nn <-> tt, nt and tn stay).
//            The family then writes Cᵀ row-major, N x M, which is another buffer than C (M x N
//            row-major) unless C is a single row (M = 1) or a single contiguous column (N = 1,
//            ldc = 1): swap serves those only, and refuses the rest with that reason.
//  round     pad's rounding taken to every size: M, N and K are rounded up to 16 bytes' worth of
//            elements, each operand that spans a size that grows (or is misaligned) copied, so
//            that the family sees the aligned problem whatever it costs in copies (at
//            4096x4096x4097 pad copies A alone and K stays odd, which keeps cuBLASLt on its slow
//            kernels; round copies A and B and K becomes 4104).
//  pad+swap  the swapped product with pad's copies; C' = Cᵀ always lands in the workspace and is
//            written back transposed (unless C is a single row or column as above), so it
//            serves every problem.
//
// A matrix of one row has a free leading dimension (no second row is ever addressed), and a
// single contiguous column is the same memory as the single row of the transposed letter: the
// transformed problem relabels such operands to their best alignment instead of copying them
// (a decode problem's C of one row is never copied).
#pragma once

#include "base/problem.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

enum class Transform : int32_t { none = 0, pad = 1, swap = 2, pad_swap = 3, round = 4 };
// The order a tune explores them in (forms.hpp): round after pad, whose plan it is compared with.
inline constexpr Transform kTransforms[] = {Transform::none, Transform::pad, Transform::round, Transform::swap,
                                            Transform::pad_swap};

const char* to_string(Transform t);  // "none", "pad", "round", "swap", "pad+swap"
// InputError naming `where` for anything else.
Transform parse_transform(std::string_view s, std::string_view where = "--transforms");
inline bool pads(Transform t) { return t == Transform::pad || t == Transform::pad_swap || t == Transform::round; }
inline bool swaps(Transform t) { return t == Transform::swap || t == Transform::pad_swap; }

// The name of a transformed config: the family's canonical name, then "+pad", "+swap" or
// "+pad+swap" ("wmma_bm128_..._stages2+pad"); a plain config's name is the family's. The store
// and every printed table use it; a table entry keeps the family's name and the transform apart.
std::string transformed_name(const std::string& config_name, Transform t);
// The family's name of a transformed config's name (the suffix of `t` removed). InputError when
// the name does not end with it.
std::string family_config_name(const std::string& transformed, Transform t);
// A config's identity hash with the transform mixed in (unchanged for none).
uint64_t transformed_hash(uint64_t config_hash, Transform t);
// Bumped whenever the copy kernels or the plans change: part of every transformed build hash,
// so stored measurements of transformed configs are re-measured after such a change.
inline constexpr uint64_t kTransformVersion = 2;  // 2: M, N rounded up too; the crop copy 16 bytes a thread

// One operand of the transformed problem, copied into the workspace or used in place.
struct OperandCopy {
  bool copy = false;
  // The source as stored (row-major): rows x cols, leading dimension ld_src.
  int64_t rows = 0, cols = 0, ld_src = 0;
  // The copy: rows_dst x ld_dst, zeros beyond rows x cols. 16-byte rows.
  int64_t rows_dst = 0, ld_dst = 0;
  size_t offset = 0;  // bytes into the transform's workspace
  size_t bytes() const { return size_t(rows_dst) * size_t(ld_dst); }  // elements
};

// The output: written by the family in place, or into the workspace and copied back into C.
struct OutputCopy {
  bool copy = false;
  bool transposed = false;  // C' = Cᵀ (swapped): C[i][j] = C'[j][i]
  int64_t rows = 0, cols = 0;  // C' as the family writes it (M' x N')
  int64_t ld_src = 0;          // C''s leading dimension in the workspace
  size_t offset = 0;
};

// An FP8 problem's scales for the family's problem, where padding made it larger than the
// caller's scales cover (row scales of a padded M or N; 1x128 block scales of a padded M):
// `rows` rows of `cols` floats, copied into rows of `cols_dst` (the rest never multiplies
// anything but the zeros of the padding).
struct ScaleCopy {
  bool copy = false;
  int64_t rows = 0, cols = 0, cols_dst = 0;
  size_t offset = 0;  // bytes into the transform's workspace
};

struct TransformPlan {
  Transform transform = Transform::none;
  Problem outer;  // the caller's problem
  Problem inner;  // what the family runs
  bool swap_operands = false;  // the family's A is the caller's B, its B the caller's A
  OperandCopy a, b;            // the family's A and B
  OutputCopy c;
  ScaleCopy scale_a, scale_b;  // the family's A's and B's scales (FP8); swapped with the operands
  size_t workspace_bytes = 0;  // the copies' buffers, each 256-byte aligned
  // The alignment the plan takes the caller's pointers to have (bytes): each pointer used in
  // place must have it (Runnable checks at launch).
  int32_t pointer_align = 16;

  // "B copied (ldb 32001 -> 32008), C through the workspace (ldc 32008), A in place" etc.
  std::string describe() const;
  // Whether any element is copied (a plan that copies nothing is the plain problem relabelled).
  bool copies() const { return a.copy || b.copy || c.copy; }
};

// The plan for running `p` through transform `t`, or nullopt with the reason (for a refusal).
// `none` plans the problem itself. Refuses pad and pad+swap where they would copy nothing
// (then they are the plain problem, or swap), and swap where C is not a single row or a single
// contiguous column.
std::optional<TransformPlan> plan_transform(const Problem& p, Transform t, std::string* why = nullptr);

// The transformed problem a family sees for (p, t); InputError with the reason when t cannot
// serve p.
Problem transformed_problem(const Problem& p, Transform t);

// A plan's copies, on the host (the same index arithmetic as the GPU's kernels:
// transform_kernels.cuh): copy A and B in, run `inner` on the transformed problem's buffers,
// write C back. `workspace` holds plan.workspace_bytes. For tests and CPU stand-ins.
using HostRun = std::function<void(const void* a, const void* b, void* c)>;
void run_transformed_on_host(const TransformPlan& plan, const void* a, const void* b, void* c, void* workspace,
                             const HostRun& inner);

}  // namespace gt
