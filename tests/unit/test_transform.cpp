// Problem transforms (core/src/transform/transform.hpp) on the CPU: the plans' index arithmetic against a
// CPU reference GEMM, the refusals and their reasons, which forms a tune explores, a family run
// through a transform end to end with the stand-in cuBLASLt, and the copy kernels compiled for
// sm_80 and sm_90; a transformed winner from the store to a table in every format, answered by
// lookup and prepared by the runtime through its transform. (The store's migration is in
// test_store.cpp; the tune's choice among forms in test_transform_tune.cpp; every family under
// pad and swap on a GPU in tests/gpu/test_transform_gpu.cpp.)
#include <nlohmann/json.hpp>

#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "base/errors.hpp"
#include "tune/forms.hpp"
#include "tune/tuner.hpp"
#include "gemmtune_runtime.h"
#include "gemmtune_runtime.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "table/table.hpp"
#include "test_util.hpp"
#include "transform/transform.hpp"
#include "unit/transform_fixtures.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace gt;
namespace fs = std::filesystem;
using namespace gt::transform_test;

namespace {

// C = A·B of problem q, every element an integer (the CPU reference, and the "family" a plan runs).
void int_gemm(const Problem& q, const void* a, const void* b, void* c) {
  const size_t in = size_of(q.in), out = size_of(q.out);
  for (int64_t i = 0; i < q.m; ++i)
    for (int64_t j = 0; j < q.n; ++j) {
      uint64_t acc = 0;
      for (int64_t l = 0; l < q.k; ++l)
        acc += get_int(a, in, size_t(q.a_trans() ? l * q.lda + i : i * q.lda + l)) *
               get_int(b, in, size_t(q.b_trans() ? j * q.ldb + l : l * q.ldb + j));
      set_int(c, out, size_t(i * q.ldc + j), acc);
    }
}

// Elements an operand stored rows x cols with leading dimension ld spans.
size_t footprint(int64_t rows, int64_t cols, int64_t ld) { return size_t((rows - 1) * ld + cols); }

// Whether pad has something to copy, told independently of the plan: an operand needs a copy
// unless its leading dimension is 16-byte aligned or it is a single row (free ld) or a single
// contiguous column; any misaligned pointer copies all.
bool pad_needed(const Problem& p) {
  const int64_t e_in = 16 / int64_t(size_of(p.in)), e_out = 16 / int64_t(size_of(p.out));
  auto fine = [](int64_t rows, int64_t cols, int64_t ld, int64_t e) { return ld % e == 0 || rows == 1 || (cols == 1 && ld == 1); };
  const bool ptr = std::min(p.pointer_align, p.align < alignment_of(p) ? p.align : 16) >= 16;
  return !ptr || !fine(p.a_rows(), p.a_cols(), p.lda, e_in) || !fine(p.b_rows(), p.b_cols(), p.ldb, e_in) ||
         !(p.ldc % e_out == 0 || p.m == 1);
}

struct Case {
  Problem p;
  std::vector<uint8_t> a, b;
};

// A random problem: sizes with 1s and odd numbers, every layout, 2- and 4-byte types, leading
// dimensions tight or padded by a few elements, sometimes a misaligned pointer.
Case random_case(std::mt19937_64& rng) {
  static const int64_t dims[] = {1, 1, 2, 3, 5, 8, 9, 13, 16, 17, 24, 31};
  static const std::pair<DType, DType> types[] = {{DType::f16, DType::f16}, {DType::bf16, DType::f32},
                                                  {DType::f32, DType::f32}, {DType::tf32, DType::f32},
                                                  {DType::f16, DType::f32}, {DType::f32, DType::bf16}};
  auto pick = [&](auto& arr) { return arr[rng() % std::size(arr)]; };
  auto [in, out] = pick(types);
  Case c;
  c.p = Problem::make(pick(dims), pick(dims), pick(dims), in, out, Layout(rng() % 4));
  auto pad = [&] { return rng() % 3 == 0 ? int64_t(rng() % 9) : 0; };
  c.p.lda += pad();
  c.p.ldb += pad();
  c.p.ldc += pad();
  if (rng() % 8 == 0) c.p.ldc = c.p.n == 1 ? 1 : c.p.ldc;  // tight single columns are a swap case
  c.p.pointer_align = rng() % 6 == 0 ? int32_t(std::max(size_of(in), size_of(out))) : 16;
  c.p.align = std::min(alignment_of(c.p), c.p.pointer_align);
  c.p.validate();
  c.a.resize(footprint(c.p.a_rows(), c.p.a_cols(), c.p.lda) * size_of(in));
  c.b.resize(footprint(c.p.b_rows(), c.p.b_cols(), c.p.ldb) * size_of(in));
  for (size_t i = 0; i < c.a.size() / size_of(in); ++i) set_int(c.a.data(), size_of(in), i, rng() % 7);
  for (size_t i = 0; i < c.b.size() / size_of(in); ++i) set_int(c.b.data(), size_of(in), i, rng() % 7);
  return c;
}

// What a plan promises of itself: sizes, which operand is copied, K, the buffers.
void check_plan_shape(const TransformPlan& pl) {
  const Problem &p = pl.outer, &q = pl.inner;
  // Sizes grow only with zeros, up to the next 16 bytes, and only where every matrix spanning
  // the size is copied anyway (K: A and B; M: A and C; N: B and C, as the family sees them).
  const int64_t step = 16 / int64_t(size_of(q.in));
  auto grown = [&](int64_t now, int64_t was, bool copied) {
    CHECK(now >= was);
    if (now == was) return;
    CHECK(copied);
    CHECK(now % step == 0);
    CHECK(now - was < step);
  };
  grown(q.m, swaps(pl.transform) ? p.n : p.m, pl.a.copy && pl.c.copy);
  grown(q.n, swaps(pl.transform) ? p.m : p.n, pl.b.copy && pl.c.copy);
  grown(q.k, p.k, pl.a.copy && pl.b.copy);
  if (pl.a.copy && pl.c.copy) CHECK(q.m % step == 0);
  if (pl.b.copy && pl.c.copy) CHECK(q.n % step == 0);
  if (pads(pl.transform)) CHECK(q.align == 16);
  CHECK(pl.copies() == (pl.describe().find("copied") != std::string::npos || pl.c.copy));
  // Buffers: 256-byte aligned, apart, inside the workspace.
  std::vector<std::pair<size_t, size_t>> spans;
  if (pl.a.copy) spans.emplace_back(pl.a.offset, pl.a.bytes() * size_of(q.in));
  if (pl.b.copy) spans.emplace_back(pl.b.offset, pl.b.bytes() * size_of(q.in));
  if (pl.c.copy) spans.emplace_back(pl.c.offset, size_t(pl.c.rows * pl.c.ld_src) * size_of(q.out));
  for (size_t i = 0; i < spans.size(); ++i) {
    CHECK(spans[i].first % 256 == 0);
    CHECK(spans[i].first + spans[i].second <= pl.workspace_bytes);
    for (size_t j = 0; j < i; ++j)
      CHECK((spans[j].first + spans[j].second <= spans[i].first || spans[i].first + spans[i].second <= spans[j].first));
  }
  // An operand used in place must fit the caller's buffer as the family addresses it.
  const Problem& src_a = p;  // the caller's operands as stored
  auto caller_a = footprint(src_a.a_rows(), src_a.a_cols(), src_a.lda),
       caller_b = footprint(src_a.b_rows(), src_a.b_cols(), src_a.ldb);
  if (!pl.a.copy) CHECK(footprint(q.a_rows(), q.a_cols(), q.lda) <= (pl.swap_operands ? caller_b : caller_a));
  if (!pl.b.copy) CHECK(footprint(q.b_rows(), q.b_cols(), q.ldb) <= (pl.swap_operands ? caller_a : caller_b));
  if (!pl.c.copy) CHECK(footprint(q.m, q.n, q.ldc) <= footprint(p.m, p.n, p.ldc));
}

}  // namespace

TEST_CASE("transforms: every plan's copies and relabellings compute A·B, as a CPU reference does", "[transform]") {
  std::mt19937_64 rng(24);
  int runs[5] = {0, 0, 0, 0, 0}, refused[5] = {0, 0, 0, 0, 0}, k_padded = 0, mn_padded = 0, swapped_copy_back = 0, relabelled = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Case c = random_case(rng);
    const Problem& p = c.p;
    INFO(p.key() << " lda " << p.lda << " ldb " << p.ldb << " ldc " << p.ldc << " pointers " << p.pointer_align);
    const size_t out = size_of(p.out);
    std::vector<uint8_t> want(footprint(p.m, p.n, p.ldc) * out, 0xab);
    int_gemm(p, c.a.data(), c.b.data(), want.data());
    for (Transform t : kTransforms) {
      INFO("transform " << to_string(t));
      std::string why;
      auto pl = plan_transform(p, t, &why);
      if (t == Transform::swap) CHECK(bool(pl) == (p.m == 1 || (p.n == 1 && p.ldc == 1)));
      if (t == Transform::pad) CHECK(bool(pl) == pad_needed(p));
      if (!pl) {
        ++refused[int(t)];
        CHECK_FALSE(why.empty());
        continue;
      }
      INFO(pl->describe());
      check_plan_shape(*pl);
      if (t == Transform::round) {  // every size and leading dimension a multiple of 16 bytes
        const Problem& q = pl->inner;
        const int64_t per = 16 / int64_t(size_of(q.in));
        CHECK(q.m % per == 0);
        CHECK(q.n % per == 0);
        CHECK(q.k % per == 0);
        CHECK(q.align == 16);
      }
      k_padded += pl->inner.k != p.k;
      mn_padded += pl->inner.m * pl->inner.n != p.m * p.n;
      swapped_copy_back += pl->c.copy && pl->c.transposed;
      // The letters a plain swap gives (nn <-> tt; nt, tn stay); a vector operand may take the other.
      const Layout flipped = p.layout == Layout::nn ? Layout::tt : p.layout == Layout::tt ? Layout::nn : p.layout;
      relabelled += t == Transform::swap && pl->inner.layout != flipped ? 1 : 0;
      // C starts as a sentinel: every element must be written, and nothing beyond N in its rows.
      std::vector<uint8_t> got(want.size(), 0xab);
      std::vector<uint8_t> ws(pl->workspace_bytes + 1, 0xcd);
      run_transformed_on_host(*pl, c.a.data(), c.b.data(), got.data(), ws.data(),
                              [&](const void* a, const void* b, void* cc) { int_gemm(pl->inner, a, b, cc); });
      CHECK(got == want);
      ++runs[int(t)];
    }
  }
  INFO("runs none/pad/swap/pad+swap/round " << runs[0] << "/" << runs[1] << "/" << runs[2] << "/" << runs[3] << "/"
                                            << runs[4]);
  CHECK(runs[0] == 3000);
  for (int t = 1; t < 5; ++t) CHECK(runs[t] > 200);  // each transform ran on many problems ...
  CHECK(refused[1] > 100);                            // ... and was refused on others
  CHECK(refused[2] > 1000);
  CHECK(refused[3] > 0);
  CHECK(refused[4] > 0);  // round: only where every size and ld is already a multiple of 16 bytes
  CHECK(k_padded > 50);
  CHECK(mn_padded > 50);
  CHECK(swapped_copy_back > 200);
  CHECK(relabelled > 20);  // vector operands took another letter than the flip
}

TEST_CASE("transforms: pad at 4097^3 f16: everything copied, K padded with zeros, the family sees an aligned problem",
          "[transform]") {
  Problem p = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  REQUIRE(p.align == 2);
  auto pl = plan_transform(p, Transform::pad);
  REQUIRE(pl);
  CHECK(pl->a.copy);
  CHECK(pl->b.copy);
  CHECK(pl->c.copy);
  CHECK_FALSE(pl->c.transposed);
  CHECK(pl->inner.key() == "4104x4104x4104 f16>f16 nn a16");  // every size a multiple of 8: cuBLASLt's TMA kernels
  CHECK(pl->inner.lda == 4104);
  CHECK(pl->inner.ldb == 4104);
  CHECK(pl->inner.ldc == 4104);
  CHECK(pl->a.rows_dst == 4104);  // A's extra M rows are zeros
  CHECK(pl->b.rows_dst == 4104);  // B's extra K rows are zeros
  CHECK(pl->c.rows == 4104);
  CHECK_THAT(pl->describe(), Catch::Contains("(M 4097 -> 4104, N 4097 -> 4104, K 4097 -> 4104, zeros)") &&
                                 Catch::Contains("written back"));
  // About 3 x 33.7 MB of padded copies beside the GEMM.
  CHECK(pl->workspace_bytes >= size_t(3) * 4097 * 4104 * 2);
}

TEST_CASE("transforms: pad of an LM head: only the misaligned weight is copied; a decode row of C is relabelled, not copied",
          "[transform]") {
  Problem prefill = Problem::make(4096, 32001, 4096, DType::bf16, DType::bf16, Layout::nn);
  auto pl = plan_transform(prefill, Transform::pad);
  REQUIRE(pl);
  CHECK_FALSE(pl->a.copy);
  CHECK(pl->b.copy);
  CHECK(pl->c.copy);
  CHECK(pl->inner.k == 4096);
  CHECK(pl->inner.m == 4096);   // A in place: M stays
  CHECK(pl->inner.n == 32008);  // B and C copied: N rounded up with zero columns
  CHECK(pl->inner.ldb == 32008);
  Problem decode = Problem::make(1, 32001, 4096, DType::bf16, DType::bf16, Layout::nn);
  pl = plan_transform(decode, Transform::pad);
  REQUIRE(pl);
  CHECK(pl->b.copy);
  CHECK_FALSE(pl->c.copy);
  CHECK(pl->inner.ldc == 32008);  // one row: its leading dimension is free
  CHECK(pl->inner.n == 32001);    // C in place: N stays
  CHECK(pl->inner.align == 16);
}

TEST_CASE("transforms: swap of a tight column GEMV: no copy, and the swapped problem is 16-byte aligned",
          "[transform]") {
  Problem p = Problem::make(4096, 1, 4096, DType::f16, DType::f16, Layout::tn);
  REQUIRE(p.align == 2);
  auto pl = plan_transform(p, Transform::swap);
  REQUIRE(pl);
  CHECK_FALSE(pl->copies());
  CHECK(pl->workspace_bytes == 0);
  CHECK(pl->swap_operands);
  CHECK(pl->inner.key() == "1x4096x4096 f16>f16 nn a16");  // B's column became A's row; A (K x M) is B
  std::string why;
  CHECK_FALSE(plan_transform(p, Transform::pad_swap, &why));
  CHECK_THAT(why, Catch::Contains("copies nothing here: it is swap"));
}

TEST_CASE("transforms: swap of a matrix C is refused: C's transpose is another buffer; pad+swap writes it back",
          "[transform]") {
  Problem p = Problem::make(4096, 16, 4096, DType::f16, DType::f16, Layout::tn);
  std::string why;
  CHECK_FALSE(plan_transform(p, Transform::swap, &why));
  CHECK_THAT(why, Catch::Contains("single row (M = 1) or a single contiguous column (N = 1, ldc = 1)") &&
                      Catch::Contains("here C is 4096x16 with ldc 16") && Catch::Contains("pad+swap"));
  auto pl = plan_transform(p, Transform::pad_swap);
  REQUIRE(pl);
  CHECK_FALSE(pl->a.copy);
  CHECK_FALSE(pl->b.copy);
  CHECK(pl->c.copy);
  CHECK(pl->c.transposed);
  CHECK(pl->inner.key() == "16x4096x4096 f16>f16 tn a16");
  // A column with ldc > 1 is not C^T's buffer either.
  Problem strided = Problem::make(64, 1, 64, DType::f32, DType::f32, Layout::nn);
  strided.ldc = 4;
  strided.align = alignment_of(strided);
  CHECK_FALSE(plan_transform(strided, Transform::swap, &why));
}

TEST_CASE("transforms: pad of an aligned problem copies nothing: refused, it would be the plain problem",
          "[transform]") {
  std::string why;
  CHECK_FALSE(plan_transform(Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn), Transform::pad, &why));
  CHECK_THAT(why, Catch::Contains("pad copies nothing here") && Catch::Contains("the plain problem"));
  CHECK_THROWS_WITH(transformed_problem(Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn), Transform::pad),
                    Catch::Contains("copies nothing"));
}

TEST_CASE("transforms: a misaligned pointer under aligned leading dimensions: pad copies every operand",
          "[transform]") {
  Problem p = Problem::make(64, 64, 64, DType::f16, DType::f16, Layout::nn);
  p.pointer_align = 2;
  p.align = 2;
  auto pl = plan_transform(p, Transform::pad);
  REQUIRE(pl);
  CHECK((pl->a.copy && pl->b.copy && pl->c.copy));
  CHECK(pl->inner.align == 16);
  // A key lowered below its leading dimensions (a job's align, a lookup's --align) means the same.
  Problem q = Problem::make(64, 64, 64, DType::f16, DType::f16, Layout::nn);
  q.align = 4;
  auto ql = plan_transform(q, Transform::pad);
  REQUIRE(ql);
  CHECK((ql->a.copy && ql->b.copy && ql->c.copy));
  // Swap uses the pointers in place: the swapped problem keeps their alignment.
  Problem v = Problem::make(1, 64, 64, DType::f16, DType::f16, Layout::nn);
  v.pointer_align = 4;
  v.align = 4;
  auto vl = plan_transform(v, Transform::swap);
  REQUIRE(vl);
  CHECK(vl->inner.align <= 4);
  CHECK(vl->pointer_align == 4);
  // Not even element-aligned: beyond the copies.
  Problem odd = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  odd.pointer_align = 2;
  odd.align = 2;
  std::string why;
  CHECK_FALSE(plan_transform(odd, Transform::pad, &why));
  CHECK_THAT(why, Catch::Contains("aligned to 2 bytes, less than an element"));
}

TEST_CASE("transforms: names, hashes and spellings", "[transform]") {
  CHECK(transformed_name("wmma_bm128", Transform::none) == "wmma_bm128");
  CHECK(transformed_name("wmma_bm128", Transform::pad_swap) == "wmma_bm128+pad+swap");
  CHECK(family_config_name("wmma_bm128+pad+swap", Transform::pad_swap) == "wmma_bm128");
  CHECK_THROWS_WITH(family_config_name("wmma_bm128+pad", Transform::swap), Catch::Contains("does not end with"));
  CHECK(transformed_hash(42, Transform::none) == 42);
  std::set<uint64_t> hashes;
  for (Transform t : kTransforms) hashes.insert(transformed_hash(42, t));
  CHECK(hashes.size() == std::size(kTransforms));  // each form its own hash
  for (Transform t : kTransforms) CHECK(parse_transform(to_string(t)) == t);
  CHECK_THROWS_WITH(parse_transform("padded", "--transforms"),
                    Catch::Contains("--transforms: unknown transform 'padded' (expected none, pad, round, swap or pad+swap)"));
}

TEST_CASE("transforms: which forms a tune explores beside the plain problem", "[transform][tune]") {
  using search::FormsSoFar;
  using search::skip_form;
  using search::TransformPolicy;
  const TransformPolicy autom;
  const Problem aligned = Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  const Problem cliff = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  const Problem gemv = Problem::make(4096, 1, 4096, DType::f16, DType::f16, Layout::tn);
  const Problem tall = Problem::make(4096, 16, 4096, DType::f16, DType::f16, Layout::tn);
  const FormsSoFar runs{true, true}, none_runs{false, false};
  auto skip = [](const TransformPolicy& pol, const Problem& p, Transform t, const FormsSoFar& so) {
    return skip_form(pol, p, t, so).value_or("(explored)");
  };
  CHECK_THAT(skip(autom, aligned, Transform::pad, runs), Catch::Contains("16-byte aligned"));
  CHECK_FALSE(skip_form(autom, cliff, Transform::pad, runs));
  // Swap: where the swapped problem is better aligned, or the family cannot run the plain one.
  CHECK_FALSE(skip_form(autom, gemv, Transform::swap, runs));
  const Problem row = Problem::make(1, 4096, 4096, DType::f16, DType::f16, Layout::nn);
  CHECK_THAT(skip(autom, row, Transform::swap, runs), Catch::Contains("no better aligned"));
  CHECK_FALSE(skip_form(autom, row, Transform::swap, none_runs));
  CHECK_THAT(skip(autom, tall, Transform::swap, none_runs), Catch::Contains("pad+swap"));  // the plan's refusal
  // pad+swap: only where no form explored so far runs the family.
  CHECK(skip_form(autom, tall, Transform::pad_swap, FormsSoFar{false, true}));
  CHECK_FALSE(skip_form(autom, tall, Transform::pad_swap, none_runs));
  // A list: exactly those forms.
  TransformPolicy list = TransformPolicy::parse("pad,pad+swap");
  CHECK(list.describe() == "pad,pad+swap");
  CHECK_FALSE(skip_form(list, aligned, Transform::pad, runs));  // its plan then says "copies nothing"
  CHECK_THAT(skip(list, gemv, Transform::swap, runs), Catch::Contains("not asked for (--transforms pad,pad+swap)"));
  CHECK(TransformPolicy::parse("none").describe() == "none");
  CHECK(TransformPolicy::parse("auto").automatic);
  CHECK_THROWS_WITH(TransformPolicy::parse("pad,pad"), Catch::Contains("'pad' is named twice"));
  CHECK_THROWS_WITH(TransformPolicy::parse("pad,none"), Catch::Contains("'none' is a value of its own"));
  CHECK_THROWS_WITH(TransformPolicy::parse("pad,,swap"), Catch::Contains("unknown transform ''"));
}

TEST_CASE("transforms: cuBLASLt (stand-in) run through pad, swap and pad+swap computes the untransformed problem",
          "[transform][cublaslt]") {
  const Family& f = standin_cublaslt();
  const gt_device d = arch_limits("sm_90");
  std::mt19937_64 rng(7);
  struct Shape {
    int64_t m, n, k, ldc_extra;
  };
  const Shape shapes[] = {{33, 17, 9, 0}, {1, 37, 21, 0}, {29, 1, 15, 0}, {24, 8, 17, 3}, {1, 1, 5, 0}, {12, 40, 16, 1}};
  const std::pair<DType, DType> types[] = {{DType::f16, DType::f16}, {DType::bf16, DType::f32}, {DType::f32, DType::f32}};
  int runs = 0, padded_fast = 0;
  for (const Shape& sh : shapes)
    for (const auto& tp : types)
      for (Layout lay : {Layout::nn, Layout::nt, Layout::tn, Layout::tt}) {
        const DType in = tp.first, out = tp.second;
        Problem p = Problem::make(sh.m, sh.n, sh.k, in, out, lay);
        p.ldc += sh.ldc_extra;
        p.align = alignment_of(p);
        std::vector<uint32_t> a(footprint(p.a_rows(), p.a_cols(), p.lda)), b(footprint(p.b_rows(), p.b_cols(), p.ldb));
        std::vector<uint8_t> abuf(a.size() * size_of(in)), bbuf(b.size() * size_of(in));
        for (size_t i = 0; i < a.size(); ++i) set_int(abuf.data(), size_of(in), i, float_bits(in, float(int(rng() % 7) - 3)));
        for (size_t i = 0; i < b.size(); ++i) set_int(bbuf.data(), size_of(in), i, float_bits(in, float(int(rng() % 7) - 3)));
        for (Transform t : {Transform::pad, Transform::swap, Transform::pad_swap}) {
          auto pl = plan_transform(p, t);
          if (!pl) continue;
          INFO(p.key() << " ldc " << p.ldc << " " << to_string(t) << ": " << pl->describe());
          const Problem& q = pl->inner;
          Space s = f.space(q, d);
          auto picks = f.suggest(q, d, 2, s.dims());
          REQUIRE_FALSE(picks.empty());
          // What pad is for: at a misaligned key the plain problem cannot have the 16-byte algorithm.
          if (t == Transform::pad && p.align < 16 && q.align == 16 && picks.front()[0] == 66) {
            Space plain = f.space(p, d);
            auto plain_picks = f.suggest(p, d, 32, plain.dims());
            bool plain_has_66 = false;
            for (auto& c : plain_picks) plain_has_66 = plain_has_66 || c[0] == 66;
            padded_fast += !plain_has_66;
          }
          for (const Config& c : picks) {
            INFO(s.name(c));
            CHECK_FALSE(f.can_implement(q, c, d));
            Refused why;
            auto op = f.create_op(q, c, &why);
            INFO(why.why);
            REQUIRE(op);
            CHECK(wrong_through(*op, *pl, p, abuf, bbuf) == 0);
            ++runs;
          }
        }
      }
  CHECK(runs > 60);
  CHECK(padded_fast > 0);  // pad let the 16-byte algorithm serve where the plain problem could not
}

TEST_CASE("transforms: the copy kernels compile for sm_80 and sm_90", "[transform][compile]") {
  // The same text nvcc compiles ahead of time into core (gpu_kernels.cu), compiled here by NVRTC
  // for each architecture gemmtune builds core for.
  std::ifstream in(test::source_dir() / "core" / "src" / "transform" / "transform_kernels.cuh");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  Compiler compiler(nullptr);
  for (const char* arch : {"sm_80", "sm_90"}) {
    CompileRequest r;
    r.source = source.c_str();
    r.source_name = "transform_kernels.cuh";
    r.kernel_name = "gt_pad_copy_2";
    r.arch = arch;
    r.family = "core";
    CompileResult cr = compiler.compile(r);
    INFO(arch << ":\n" << cr.log);
    REQUIRE(cr.ok);
    // ptxas reports each entry it built for the architecture: all six are there.
    for (const char* k : {"gt_pad_copy_2", "gt_pad_copy_4", "gt_crop_copy_2", "gt_crop_copy_4", "gt_crop_copy_t_2",
                          "gt_crop_copy_t_4"}) {
      CHECK_THAT(cr.log, Catch::Contains(fmt::format("Compiling entry function '{}' for '{}'", k, arch)));
      CHECK(cr.cubin.find(k) != std::string::npos);
    }
  }
}

namespace {
// A stored measurement of `family`'s config `c` (of its space for p through t), as a tune makes one.
StoredRow row_of(const Problem& p, const Family& fam, const Space& s, const Config& c, Transform t, double us) {
  StoredRow r;
  r.problem = p;
  r.family = fam.name();
  r.config = c;
  r.config_name = transformed_name(s.name(c), t);
  r.config_hash = hex64(transformed_hash(s.hash(c), t));
  r.transform = t;
  r.m.status = Status::ok;
  r.m.time = summarize({us * 0.99, us, us * 1.01});
  r.prov.device_name = kH200;
  r.prov.arch = "sm_90";
  r.prov.family = fam.name();
  r.prov.family_version = fam.version();
  return r;
}
}  // namespace

TEST_CASE("transforms: a transformed winner in every table format, answered by lookup through its transform",
          "[transform][table]") {
  test::TempDir d;
  const gt_device lim = arch_limits("sm_90");
  const PluginRegistry& reg = test::plugins();
  const Family& wg = reg.get("wgmma_tma");
  // 4097^3 fp16: TMA refuses every config of the problem as it is; padded, the default runs.
  const Problem p = Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn);
  const Problem q = transformed_problem(p, Transform::pad);
  REQUIRE(wg.space(p, lim).count_valid() == 0);
  const Space s = wg.space(q, lim);
  const Config c = s.default_config();
  REQUIRE_FALSE(s.check(c));
  Store store = Store::open(d.path / "store.db");
  StoredRow r = row_of(p, wg, s, c, Transform::pad, 610);
  const int64_t id = store.insert(r);
  store.set_winner(r.key(), wg.name(), r.config_name, id);
  store.set_winner(r.key(), kAllFamilies, r.config_name, id);

  LookupTable t = table_from_store(store, ExportOptions{});
  REQUIRE(t.entries.size() == 1);
  const TableEntry e = t.entries[0];
  CHECK(e.config == s.name(c));  // the family's name: its space parses it
  CHECK(e.transform == Transform::pad);
  CHECK(e.text() == r.key().text() + " -> " + s.name(c) + "+pad");
  for (TableFormat f : {TableFormat::toml, TableFormat::json}) {
    LookupTable back = LookupTable::parse(t.serialize(f), f, "mem");
    REQUIRE(back.entries.size() == 1);
    CHECK(back.entries[0] == e);
  }
  CHECK_THAT(t.serialize(TableFormat::toml), Catch::Contains("transform = \"pad\""));
  CHECK_THAT(t.serialize(TableFormat::csv), Catch::Contains("," + s.name(c) + ",,pad,"));
  CHECK_THAT(t.serialize(TableFormat::cpp), Catch::Contains("\"pad\"sv") && Catch::Contains("padded_ld"));

  LookupPolicy policy;
  policy.device = kH200;
  policy.arch = "sm_90";
  policy.unbacked_transfers = true;  // the transform's reach (test_backed.cpp: the backing)
  LookupResult a = answer(t, p, reg, lim, policy);
  CHECK(a.rule == Rule::exact);
  CHECK(a.transform == Transform::pad);
  CHECK(a.config == s.name(c));
  ResolvedChoice rc = resolve_choice(reg, lim, a, p);
  CHECK(rc.transform == Transform::pad);
  CHECK(rc.problem.key() == q.key());
  CHECK(rc.config == c);
  // Another misaligned shape nearby: the entry serves it through the same transform.
  const Problem near = Problem::make(4095, 4095, 4095, DType::f16, DType::f16, Layout::nn);
  a = answer(t, near, reg, lim, policy);
  CHECK(a.rule == Rule::nearest);
  CHECK(a.transform == Transform::pad);
  // The same config without the transform cannot serve it: the family refuses the misaligned problem.
  LookupTable plain = t;
  plain.entries[0].transform = Transform::none;
  a = answer(plain, near, reg, lim, policy);
  CHECK(a.rule != Rule::nearest);
  REQUIRE_FALSE(a.passed_over.empty());
  CHECK_THAT(a.passed_over[0].second, Catch::Contains("TMA copies need 16-byte aligned operands"));

  SECTION("a swap entry where swap cannot serve is passed over with the reason") {
    const Family& naive = reg.get("naive");
    const Problem row = Problem::make(1, 4096, 4096, DType::f16, DType::f16, Layout::nn);
    const Space ns = naive.space(transformed_problem(row, Transform::swap), lim);
    TableEntry se;
    se.key = ResultKey::of(kH200, row);
    se.family = "naive";
    se.config = ns.name(ns.default_config());
    se.transform = Transform::swap;
    se.time_us = 100;
    se.tflops = row.flops() / 100e-6 / 1e12;
    LookupTable st;
    st.entries = {se};
    policy.default_family = "naive";
    LookupResult x = answer(st, row, reg, lim, policy);
    CHECK(x.rule == Rule::exact);
    CHECK(x.transform == Transform::swap);
    const Problem two = Problem::make(2, 4096, 4096, DType::f16, DType::f16, Layout::nn);
    x = answer(st, two, reg, lim, policy);
    CHECK(x.kind == MatchKind::fallback);  // the default (cuBLASLt's pick, unnamed without a GPU)
    CHECK(x.transform == Transform::none);
    REQUIRE(x.passed_over.size() == 1);
    CHECK_THAT(x.passed_over[0].second, Catch::StartsWith("swap: swap computes") && Catch::Contains("here C is 2x4096"));
  }
}

TEST_CASE("transforms: the runtime prepares a padded entry, and lookup prints what it does", "[transform][runtime][cli]") {
  // A naive entry at a misaligned fp32 shape, tuned through pad: the runtime (dry run, no GPU)
  // compiles the config for the padded problem and says what the copies are.
  const Problem p = Problem::make(101, 101, 101, DType::f32, DType::f32, Layout::nn);
  REQUIRE(p.align == 4);
  CHECK(transformed_problem(p, Transform::pad).key() == "104x104x104 f32>f32 nn a16");
  const TableEntry e = padded_naive_entry(p, kH200, arch_limits("sm_90"));
  test::TempDir d, cache;
  LookupTable t;
  t.entries = {e};
  const fs::path file = d.path / "table.toml";
  t.save(file, TableFormat::toml);

  gemmtune::Options o;
  o.plugin_dirs = {test::naive_only_dir().string()};
  o.cache_dir = cache.path.string();
  o.dry_run = true;
  o.arch = "sm_90";
  o.device_name = kH200;
  gemmtune::Runtime rt(file.string(), o);
  gemmtune::GemmArgs g;
  g.m = g.n = g.k = 101;
  g.in = g.out = GEMMTUNE_F32;
  g.layout = GEMMTUNE_NN;
  g.a = reinterpret_cast<const void*>(uintptr_t(1) << 20);
  g.b = reinterpret_cast<const void*>(uintptr_t(2) << 20);
  g.c = reinterpret_cast<void*>(uintptr_t(3) << 20);
  g.lda = g.ldb = g.ldc = 101;
  const gemmtune::Choice& ch = rt.prepare(g);
  CHECK(ch.match == GEMMTUNE_MATCH_EXACT);
  CHECK(ch.config == e.config);
  CHECK(ch.transform == "pad");
  CHECK_THAT(ch.transform_plan, Catch::Contains("(M 101 -> 104, N 101 -> 104, K 101 -> 104, zeros); A copied (lda 101 -> 104)") &&
                                    Catch::Contains("C through the workspace (ldc 104)"));
  CHECK(ch.compiled);  // NVRTC built the config for the padded problem
  // The C API's name carries the transform.
  gemmtune_options co;
  gemmtune_options_init(&co);
  const std::string dirs = test::naive_only_dir().string(), cdir = cache.path.string();
  co.plugin_dirs = dirs.c_str();
  co.cache_dir = cdir.c_str();
  co.dry_run = 1;
  co.arch = "sm_90";
  co.device_name = kH200;
  gemmtune_runtime* h = nullptr;
  REQUIRE(gemmtune_create(file.c_str(), &co, &h) == GEMMTUNE_SUCCESS);
  gemmtune_gemm_args ca{};
  ca.m = ca.n = ca.k = 101;
  ca.in_dtype = ca.out_dtype = GEMMTUNE_F32;
  ca.layout = GEMMTUNE_NN;
  ca.a = g.a;
  ca.b = g.b;
  ca.c = g.c;
  ca.lda = ca.ldb = ca.ldc = 101;
  char name[512] = {0};
  REQUIRE(gemmtune_choice(h, &ca, nullptr, name, sizeof name, nullptr, 0) == GEMMTUNE_SUCCESS);
  CHECK(std::string(name) == e.config + "+pad");
  gemmtune_destroy(h);

  auto r = test::run_command(fmt::format("'{}' --plugin-dir '{}' lookup --table '{}' --shape 101x101x101 --device '{}'",
                                         test::gemmtune_binary().string(), test::naive_only_dir().string(), file.string(),
                                         kH200));
  INFO(r.out);
  CHECK(r.exit_code == 0);
  // The first line names the family and its readable config, then the transform.
  const std::string first_line = r.out.substr(0, r.out.find('\n'));
  CHECK_THAT(first_line, Catch::StartsWith("naive  ") && Catch::EndsWith("  +pad"));
  CHECK_THAT(r.out, Catch::Contains("transform: pad: the family runs 104x104x104"));
  // --json names the config as the runtime's choice does.
  auto j = test::run_command(fmt::format("'{}' --plugin-dir '{}' lookup --table '{}' --shape 101x101x101 --device '{}' --json",
                                         test::gemmtune_binary().string(), test::naive_only_dir().string(), file.string(),
                                         kH200));
  INFO(j.out);
  REQUIRE(j.exit_code == 0);
  CHECK(nlohmann::json::parse(j.out).at("config") == e.config + "+pad");
}

TEST_CASE("FP8 problems through pad and swap: 1-byte copies, and the scales padded where the sizes grow", "[transform][fp8]") {
  // K and N odd: A, B and C are copied, so M, N and K round up to 16 one-byte elements.
  Problem row = Problem::make(999, 1001, 1001, DType::e4m3, DType::bf16, Layout::nt, std::nullopt, ScaleMode::row);
  auto pl = plan_transform(row, Transform::pad);
  REQUIRE(pl);
  CHECK(pl->inner.key() == "1008x1008x1008 e4m3>bf16 nt a16 row");
  CHECK(pl->a.copy);
  CHECK(pl->b.copy);
  CHECK(pl->c.copy);
  // Row scales: M and N grew, so both vectors are copied into 1008 floats.
  CHECK(pl->scale_a.copy);
  CHECK(pl->scale_a.rows == 1);
  CHECK(pl->scale_a.cols == 999);
  CHECK(pl->scale_a.cols_dst == 1008);
  CHECK(pl->scale_b.copy);
  CHECK(pl->scale_b.cols == 1001);
  CHECK(pl->scale_b.cols_dst == 1008);
  // The buffers do not overlap and fit the workspace.
  std::vector<std::pair<size_t, size_t>> spans = {{pl->a.offset, pl->a.bytes()}, {pl->b.offset, pl->b.bytes()},
                                                  {pl->scale_a.offset, size_t(pl->scale_a.cols_dst) * 4},
                                                  {pl->scale_b.offset, size_t(pl->scale_b.cols_dst) * 4}};
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i + 1 < spans.size(); ++i) CHECK(spans[i].first + spans[i].second <= spans[i + 1].first);
  CHECK(spans.back().first + spans.back().second <= pl->workspace_bytes);
  // Block scales: A's 1x128 rows of M are re-laid to the padded M; B's 128x128 blocks stay (a
  // multiple of 128 is one of 16, so the number of 128-row blocks does not change).
  Problem blk = row;
  blk.scale = ScaleMode::block;
  auto pb = plan_transform(blk, Transform::pad);
  REQUIRE(pb);
  CHECK(pb->scale_a.copy);
  CHECK(pb->scale_a.rows == 8);  // ceil(1001 / 128)
  CHECK(pb->scale_a.cols_dst == 1008);
  CHECK_FALSE(pb->scale_b.copy);
  CHECK(pb->inner.scale_count_b() == blk.scale_count_b());
  // An aligned K: nothing is copied for the scales, whose sizes stay.
  auto tight = plan_transform(Problem::make(999, 1024, 1024, DType::e4m3, DType::bf16, Layout::nt, std::nullopt,
                                            ScaleMode::row),
                              Transform::pad);
  if (tight) {
    CHECK_FALSE(tight->scale_a.copy);
    CHECK_FALSE(tight->scale_b.copy);
  }
  // Swap keeps nt, exchanges the operands (and mixed types with them), and is refused for block scales.
  Problem one = Problem::make(1, 4096, 4096, DType::e4m3, DType::bf16, Layout::nt, DType::e5m2, ScaleMode::row);
  auto sw = plan_transform(one, Transform::swap);
  REQUIRE(sw);
  CHECK(sw->inner.key() == "4096x1x4096 e5m2:e4m3>bf16 nt a2 row");  // C' of one column: ldc' = 1
  std::string why;
  Problem one_blk = one;
  one_blk.scale = ScaleMode::block;
  CHECK_FALSE(plan_transform(one_blk, Transform::swap, &why));
  CHECK_THAT(why, Catch::Contains("block scales are 1x128 for A and 128x128 for B"));
}

// Plugin ABI v4: the family's problem under a transform says which of its operands are the
// caller's (their pointers as the caller's) and which core's copies (aligned).
TEST_CASE("transforms: the family's problem carries each operand's own alignment", "[transform][abi]") {
  // The LM head: pad copies C alone (ldc 50257 -> 50264); A and B are read in place.
  const Problem head = Problem::make(1024, 50257, 768, DType::bf16, DType::bf16, Layout::nt);
  auto pad = plan_transform(head, Transform::pad);
  REQUIRE(pad);
  CHECK_FALSE(pad->a.copy);
  CHECK(pad->c.copy);
  const gt_problem g = pad->inner.abi();
  CHECK(g.align_a == 16);
  CHECK(g.align_b == 16);
  CHECK(g.align_c == 16);
  // --transforms auto still explores pad there, beside the plain form a family may now run.
  CHECK_FALSE(search::skip_form(search::TransformPolicy{}, head, Transform::pad, search::FormsSoFar{true, true}));
  // A decode row with A's pointer 2 bytes off, swapped: the family's B is the caller's A.
  Problem row = Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nt);
  row.operand_pointer_align = {2, 16, 16};
  row.pointer_align = 2;
  row.align = 2;
  auto swap = plan_transform(row, Transform::swap);
  REQUIRE(swap);
  const gt_problem s = swap->inner.abi();
  CHECK(s.align_a == 16);  // the caller's B
  CHECK(s.align_b == 2);   // the caller's A
}
