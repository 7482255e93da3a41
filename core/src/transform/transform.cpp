#include "transform/transform.hpp"

#include "base/errors.hpp"
#include "transform/transform_kernels.cuh"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace gt {

const char* to_string(Transform t) {
  switch (t) {
    case Transform::none: return "none";
    case Transform::pad: return "pad";
    case Transform::swap: return "swap";
    case Transform::pad_swap: return "pad+swap";
    case Transform::round: return "round";
  }
  return "?";
}

Transform parse_transform(std::string_view s, std::string_view where) {
  for (Transform t : kTransforms)
    if (s == to_string(t)) return t;
  throw InputError(fmt::format("{}: unknown transform '{}' (expected none, pad, round, swap or pad+swap)", where, s));
}

std::string transformed_name(const std::string& config_name, Transform t) {
  return t == Transform::none ? config_name : config_name + "+" + to_string(t);
}

std::string family_config_name(const std::string& transformed, Transform t) {
  if (t == Transform::none) return transformed;
  const std::string suffix = std::string("+") + to_string(t);
  if (transformed.size() <= suffix.size() || transformed.compare(transformed.size() - suffix.size(), suffix.size(), suffix))
    throw InputError(fmt::format("config name '{}' does not end with its transform '{}'", transformed, suffix));
  return transformed.substr(0, transformed.size() - suffix.size());
}

uint64_t transformed_hash(uint64_t h, Transform t) {
  if (t == Transform::none) return h;
  uint64_t x = h ^ (0x9e3779b97f4a7c15ull * (uint64_t(t) + 1));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

int64_t round_up(int64_t v, int64_t step) { return (v + step - 1) / step * step; }
// Elements in 16 bytes.
int64_t per16(DType t) { return 16 / int64_t(size_of(t)); }
bool aligned16(int64_t ld, DType t) { return ld % per16(t) == 0; }

Layout layout_of(bool a_trans, bool b_trans) {
  return a_trans ? (b_trans ? Layout::tt : Layout::tn) : (b_trans ? Layout::nt : Layout::nn);
}

// The alignment a plan may take the caller's pointers to have: what Problem::pointer_align
// says, and, where the key is less aligned than its leading dimensions explain, the key's.
int32_t pointer_alignment(const Problem& p) {
  int32_t ptr = p.pointer_align;
  if (p.align < alignment_of(p)) ptr = std::min(ptr, p.align);
  return ptr;
}

// Cᵀ = BᵀAᵀ as a problem: the family's A is the caller's B as stored (the letter flipped: B
// stored K x N is, as an N x K matrix, stored transposed), its B the caller's A. C' is C
// relabelled where C is a single row or a single contiguous column; else (c_in_place false)
// C' = Cᵀ lives in the workspace with a 16-byte leading dimension.
Problem swapped(const Problem& p, bool* c_in_place) {
  Problem q = p;
  q.m = p.n;
  q.n = p.m;
  q.layout = layout_of(!p.b_trans(), !p.a_trans());
  q.lda = p.ldb;
  q.ldb = p.lda;
  std::swap(q.in, q.in_b);  // mixed FP8: the family's A is the caller's B
  *c_in_place = p.m == 1 || (p.n == 1 && p.ldc == 1);
  // M = 1: C' is N x 1, element j at j, so ldc' = 1. N = 1 (ldc = 1): C' is one row of M.
  q.ldc = !*c_in_place ? round_up(q.n, per16(q.out)) : p.m == 1 ? 1 : q.n;
  return q;
}

// Relabels operands whose storage allows another leading dimension or letter (see
// transform.hpp): a single stored row takes the 16-byte rounded leading dimension, a single
// column with ld 1 becomes the single row of the other letter. `c_in_place`: C' may be relabelled.
void relabel_vectors(Problem& q, bool c_in_place) {
  auto one_row = [&](int64_t rows, int64_t cols, int64_t& ld, DType t) {
    if (rows == 1) ld = round_up(cols, per16(t));
  };
  if (q.a_cols() == 1 && q.a_rows() > 1 && q.lda == 1) {
    q.layout = layout_of(!q.a_trans(), q.b_trans());
    q.lda = q.a_cols();
  }
  if (q.b_cols() == 1 && q.b_rows() > 1 && q.ldb == 1) {
    q.layout = layout_of(q.a_trans(), !q.b_trans());
    q.ldb = q.b_cols();
  }
  one_row(q.a_rows(), q.a_cols(), q.lda, q.in);
  one_row(q.b_rows(), q.b_cols(), q.ldb, q.in_b);
  if (c_in_place) one_row(q.m, q.n, q.ldc, q.out);
}

// pad's copies for the (possibly swapped) problem q: which operands are copied, K rounded up
// when both are, the padded leading dimensions. `c_in_place`: C' can be written in place.
// `round_all` (round): every size is rounded up, so each operand spanning a size that is not a
// multiple of 16 bytes is copied too.
void plan_copies(TransformPlan& pl, Problem& q, bool c_in_place, int32_t ptr, bool round_all) {
  const bool ptr_ok = ptr >= 16;
  pl.a.copy = !aligned16(q.lda, q.in) || !ptr_ok;
  pl.b.copy = !aligned16(q.ldb, q.in_b) || !ptr_ok;
  pl.c.copy = !c_in_place || !aligned16(q.ldc, q.out) || !ptr_ok;
  if (round_all) {
    const int64_t per = per16(q.in);
    const bool m_odd = q.m % per != 0, n_odd = q.n % per != 0, k_odd = q.k % per != 0;
    pl.a.copy = pl.a.copy || m_odd || k_odd;
    pl.b.copy = pl.b.copy || k_odd || n_odd;
    pl.c.copy = pl.c.copy || m_odd || n_odd;
  }
  // A dimension is rounded up to 16 bytes' worth of elements, with zeros, where every matrix
  // that spans it is copied anyway (K: A and B; M: A and C; N: B and C), so the family sees
  // sizes that are multiples of 8 (16-bit): cuBLASLt offers its TMA kernels only for those, and
  // the zeros cost no copy that was not made already. Otherwise the size stays, so that an
  // aligned operand is not copied for the sake of a size alone.
  const int64_t step = per16(q.in);
  const int64_t k_new = pl.a.copy && pl.b.copy ? round_up(q.k, step) : q.k;
  const int64_t m_new = pl.a.copy && pl.c.copy ? round_up(q.m, step) : q.m;
  const int64_t n_new = pl.b.copy && pl.c.copy ? round_up(q.n, step) : q.n;
  auto copy_operand = [&](OperandCopy& oc, bool trans_a_side, bool transposed, int64_t mn, int64_t mn_new,
                          int64_t& ld) {
    // A (mn = M): stored M x K ('n') or K x M ('t'); B (mn = N): K x N ('n') or N x K ('t').
    const bool k_rows = trans_a_side ? transposed : !transposed;
    oc.rows = k_rows ? q.k : mn;
    oc.cols = k_rows ? mn : q.k;
    oc.ld_src = ld;
    oc.rows_dst = k_rows ? k_new : mn_new;
    oc.ld_dst = round_up(k_rows ? mn_new : k_new, step);
    if (oc.copy) ld = oc.ld_dst;
  };
  copy_operand(pl.a, true, q.a_trans(), q.m, m_new, q.lda);
  copy_operand(pl.b, false, q.b_trans(), q.n, n_new, q.ldb);
  q.k = k_new;
  q.m = m_new;
  q.n = n_new;
  if (pl.c.copy) q.ldc = round_up(q.n, per16(q.out));
}

void place_buffers(TransformPlan& pl) {
  size_t at = 0;
  auto place = [&](size_t bytes) {
    const size_t off = at;
    at += (bytes + 255) / 256 * 256;
    return off;
  };
  if (pl.a.copy) pl.a.offset = place(pl.a.bytes() * size_of(pl.inner.in));
  if (pl.b.copy) pl.b.offset = place(pl.b.bytes() * size_of(pl.inner.in_b));
  if (pl.c.copy) pl.c.offset = place(size_t(pl.c.rows) * size_t(pl.c.ld_src) * size_of(pl.inner.out));
  for (ScaleCopy* sc : {&pl.scale_a, &pl.scale_b})
    if (sc->copy) sc->offset = place(size_t(sc->rows) * size_t(sc->cols_dst) * sizeof(float));
  pl.workspace_bytes = at;
}

// The scales an FP8 family's problem q needs beyond what the caller's cover: row scales of a
// padded M or N, 1x128 block scales of a padded M (M-contiguous rows of them). B's 128x128
// blocks never need a copy: N rounds up to 16, and a multiple of 128 is one of 16, so the
// number of 128-row blocks stays.
void plan_scale_copies(TransformPlan& pl, const Problem& q) {
  const Problem& p = pl.outer;
  const int64_t have_m = pl.swap_operands ? p.n : p.m, have_n = pl.swap_operands ? p.m : p.n;
  auto need = [](ScaleCopy& sc, int64_t rows, int64_t have, int64_t want) {
    if (want > have) sc = ScaleCopy{true, rows, have, want, 0};
  };
  if (q.scale == ScaleMode::row) {
    need(pl.scale_a, 1, have_m, q.m);
    need(pl.scale_b, 1, have_n, q.n);
  } else if (q.scale == ScaleMode::block) {
    need(pl.scale_a, (q.k + 127) / 128, have_m, q.m);
  }
}

}  // namespace

std::optional<TransformPlan> plan_transform(const Problem& p, Transform t, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<TransformPlan> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  TransformPlan pl;
  pl.transform = t;
  pl.outer = p;
  pl.inner = p;
  pl.pointer_align = pointer_alignment(p);
  if (t == Transform::none) return pl;
  // The copies read and write whole elements: a pointer that is not even element-aligned is
  // beyond them (and beyond every family).
  if (pl.pointer_align < int32_t(std::max(size_of(p.in), size_of(p.out))))
    return refuse(fmt::format("{}: the operands' pointers are aligned to {} bytes, less than an element", to_string(t),
                              pl.pointer_align));
  // A's 1x128 blocks and B's 128x128 blocks are not the same shape: swapped, A would need B's.
  if (swaps(t) && p.scale == ScaleMode::block)
    return refuse(fmt::format("{}: block scales are 1x128 for A and 128x128 for B; the swapped product would need "
                              "them the other way round",
                              to_string(t)));
  bool c_in_place = true;
  Problem q = swaps(t) ? swapped(p, &c_in_place) : p;
  pl.swap_operands = swaps(t);
  if (t == Transform::swap && !c_in_place)
    return refuse(fmt::format(
        "swap computes Cᵀ = BᵀAᵀ, which a family writes row-major as an N x M matrix: that is C's own buffer only "
        "when C is a single row (M = 1) or a single contiguous column (N = 1, ldc = 1); here C is {}x{} with ldc {} "
        "(pad+swap writes it back transposed)",
        p.m, p.n, p.ldc));
  relabel_vectors(q, c_in_place);
  if (pads(t)) {
    plan_copies(pl, q, c_in_place, pl.pointer_align, t == Transform::round);
    if (!pl.copies() && t == Transform::round)
      return refuse("round copies nothing here: M, N, K and every leading dimension are multiples of 16 bytes and "
                    "every base pointer is 16-byte aligned: it is the plain problem");
    if (!pl.copies())
      return refuse(t == Transform::pad
                        ? std::string("pad copies nothing here: every leading dimension and base pointer is 16-byte "
                                      "aligned (or a single row, whose leading dimension is free): it is the plain "
                                      "problem")
                        : std::string("pad+swap copies nothing here: it is swap"));
  }
  pl.c.rows = q.m;
  pl.c.cols = q.n;
  pl.c.ld_src = q.ldc;
  pl.c.transposed = pl.swap_operands;
  const bool in_place = !pl.a.copy || !pl.b.copy || !pl.c.copy;
  q.pointer_align = in_place ? pl.pointer_align : 16;
  // Each operand the family reads in place is the caller's (A and B exchanged when swapped); a
  // copy is core's, 256-byte aligned.
  auto caller = [&](gt_operand op) { return p.pointer_align_of(op); };
  const gt_operand src_a = pl.swap_operands ? GT_OPERAND_B : GT_OPERAND_A;
  const gt_operand src_b = pl.swap_operands ? GT_OPERAND_A : GT_OPERAND_B;
  q.operand_pointer_align = {pl.a.copy ? 16 : caller(src_a), pl.b.copy ? 16 : caller(src_b),
                             pl.c.copy ? 16 : caller(GT_OPERAND_C)};
  q.align = std::min(alignment_of(q), q.pointer_align);
  q.validate();
  pl.inner = q;
  plan_scale_copies(pl, q);
  place_buffers(pl);
  return pl;
}

Problem transformed_problem(const Problem& p, Transform t) {
  std::string why;
  auto pl = plan_transform(p, t, &why);
  if (!pl) throw InputError(why);
  return pl->inner;
}

std::string TransformPlan::describe() const {
  if (transform == Transform::none) return "the problem as it is";
  std::string s = swap_operands ? fmt::format("swapped (the family's A is B, its B is A): {}", inner.key())
                                : fmt::format("the family runs {}", inner.key());
  auto operand = [&](const char* name, const OperandCopy& oc, const char* ld) {
    if (!oc.copy) return fmt::format("{} in place", name);
    return fmt::format("{} copied ({} {} -> {})", name, ld, oc.ld_src, oc.ld_dst);
  };
  // The sizes rounded up with zeros (the family's M and N are the caller's N and M when swapped).
  const int64_t m = swap_operands ? inner.n : inner.m, n = swap_operands ? inner.m : inner.n;
  std::string zeros;
  for (auto [dim, was, now] : {std::tuple{"M", outer.m, m}, {"N", outer.n, n}, {"K", outer.k, inner.k}})
    if (was != now) zeros += fmt::format("{}{} {} -> {}", zeros.empty() ? "" : ", ", dim, was, now);
  if (!zeros.empty()) s += " (" + zeros + ", zeros)";
  s += "; " + operand("A", a, "lda") + ", " + operand("B", b, "ldb");
  if (c.copy)
    s += fmt::format(", C through the workspace (ldc {}), written back{}", c.ld_src, c.transposed ? " transposed" : "");
  else
    s += ", C in place";
  return s;
}

void run_transformed_on_host(const TransformPlan& pl, const void* a, const void* b, void* c, void* workspace,
                             const HostRun& inner) {
  auto* ws = static_cast<char*>(workspace);
  const size_t out_size = size_of(pl.inner.out);
  const char* src_a = static_cast<const char*>(pl.swap_operands ? b : a);
  const char* src_b = static_cast<const char*>(pl.swap_operands ? a : b);
  auto pad_copy = [&](const OperandCopy& oc, const char* src, size_t in_size) -> const void* {
    if (!oc.copy) return src;
    char* dst = ws + oc.offset;
    for (long long r = 0; r < oc.rows_dst; ++r)
      for (long long col = 0; col < oc.ld_dst; ++col) {
        const long long s = gt_pad_source(r, col, oc.rows, oc.cols, oc.ld_src);
        char* to = dst + size_t(r * oc.ld_dst + col) * in_size;
        if (s >= 0) std::memcpy(to, src + size_t(s) * in_size, in_size);
        else std::memset(to, 0, in_size);
      }
    return dst;
  };
  const void* ia = pad_copy(pl.a, src_a, size_of(pl.inner.in));
  const void* ib = pad_copy(pl.b, src_b, size_of(pl.inner.in_b));
  void* ic = pl.c.copy ? static_cast<void*>(ws + pl.c.offset) : c;
  inner(ia, ib, ic);
  if (!pl.c.copy) return;
  auto* out = static_cast<char*>(c);
  for (long long i = 0; i < pl.outer.m; ++i)
    for (long long j = 0; j < pl.outer.n; ++j)
      std::memcpy(out + size_t(i * pl.outer.ldc + j) * out_size,
                  ws + pl.c.offset + size_t(gt_crop_source(i, j, pl.c.ld_src, pl.c.transposed)) * out_size, out_size);
}

}  // namespace gt
