// Shared by the transform tests: integers read and written at an element size, small integers
// as f32/f16/bf16 bits and back (the stand-in cuBLASLt computes in floating point), and the
// stand-in cuBLASLt itself.
#pragma once
#include "base/problem.hpp"
#include "build/plugin.hpp"
#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

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

}  // namespace gt::transform_test
