// Shared by the transform tests: integers read and written at an element size, small integers
// as f32/f16/bf16 bits and back (the stand-in cuBLASLt computes in floating point), and the
// stand-in cuBLASLt itself.
#pragma once
#include "base/problem.hpp"
#include "build/plugin.hpp"
#include "table/table.hpp"
#include "transform/transform.hpp"
#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gt::transform_test {

inline constexpr const char* kH200 = "NVIDIA H200";  // the device the stored rows and tables name

// Element i of a buffer of `size`-byte elements as the unsigned integer its bits hold, and back.
// The copies move bits, so a GEMM that reads every element as an integer checks them exactly.
inline uint64_t get_int(const void* p, size_t size, size_t i) {
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(p) + i * size, size);
  return v;
}
inline void set_int(void* p, size_t size, size_t i, uint64_t v) { std::memcpy(static_cast<char*>(p) + i * size, &v, size); }

// Small integers as f32, f16 or bf16 bits (exact in each), and back: the stand-in cuBLASLt
// computes in floating point.
inline uint32_t float_bits(DType t, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (storage_of(t) == DType::f32) return bits;
  if (t == DType::bf16) return bits >> 16;
  if (v == 0) return 0;
  return (bits >> 16 & 0x8000) | (((bits >> 23 & 0xff) - 112) << 10) | (bits >> 13 & 0x3ff);
}
inline double float_of(DType t, uint32_t bits) {
  if (t == DType::f16) {
    uint32_t exp = bits >> 10 & 0x1f;
    if (exp == 0x1f) return std::nan("");
    bits = exp == 0 ? (bits & 0x8000) << 16 : (bits & 0x8000) << 16 | (exp + 112) << 23 | (bits & 0x3ff) << 13;
  } else if (t == DType::bf16) {
    bits <<= 16;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline const Family& standin_cublaslt() {
  static PluginRegistry reg = PluginRegistry::load({test::plugin_dir() / "cublaslt" / "standin"});
  return reg.get("cublaslt");
}

// Problem p run through `plan` on the host by `op`, an op of the stand-in cuBLASLt for the
// plan's inner problem, on A and B of small integers stored as p.in: the elements of C that
// differ from the float64 product of the problem as given (0: every one exact, as small
// integers are in every type). C starts as all-ones bits (NaN), so every element must be written.
template <class Op>
int wrong_through(Op& op, const TransformPlan& plan, const Problem& p, const std::vector<uint8_t>& abuf,
                  const std::vector<uint8_t>& bbuf) {
  std::vector<uint8_t> cbuf(size_t((p.m - 1) * p.ldc + p.n) * size_of(p.out), 0xff);
  std::vector<uint8_t> ws(plan.workspace_bytes + 1), op_ws(size_t(op.workspace_bytes()) + 16);
  run_transformed_on_host(plan, abuf.data(), bbuf.data(), cbuf.data(), ws.data(),
                          [&](const void* ia, const void* ib, void* ic) {
                            op.run(ia, ib, ic, nullptr, op_ws.data(), op.workspace_bytes(), nullptr);
                          });
  auto el = [](DType t, const std::vector<uint8_t>& buf, size_t i) {
    return float_of(t, uint32_t(get_int(buf.data(), size_of(t), i)));
  };
  int wrong = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double ref = 0;
      for (int64_t l = 0; l < p.k; ++l)
        ref += el(p.in, abuf, size_t(p.a_trans() ? l * p.lda + i : i * p.lda + l)) *
               el(p.in, bbuf, size_t(p.b_trans() ? j * p.ldb + l : l * p.ldb + j));
      if (!(el(p.out, cbuf, size_t(i * p.ldc + j)) == ref)) ++wrong;
    }
  return wrong;
}

// The entry a tune on `device` stores for naive's default config at p run through pad (50 µs):
// a transformed winner, for the table, lookup and the runtime to serve.
inline TableEntry padded_naive_entry(const Problem& p, const std::string& device, const gt_device& lim) {
  const Family& naive = test::plugins().get("naive");
  const Space s = naive.space(transformed_problem(p, Transform::pad), lim);
  TableEntry e;
  e.key = ResultKey::of(device, p);
  e.family = "naive";
  e.family_version = naive.version();
  e.config = s.name(s.default_config());
  e.transform = Transform::pad;
  e.time_us = 50;
  e.tflops = p.flops() / 50e-6 / 1e12;
  return e;
}

}  // namespace gt::transform_test
