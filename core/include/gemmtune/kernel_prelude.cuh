// The kernel prelude: what every family's CUDA source needs to read and write its operands'
// types, written once. A family's .cu includes it as <gemmtune/kernel_prelude.cuh> after its
// own defines; the plugin build (plugins/embed_kernels.cmake) copies it into the embedded
// source, so what NVRTC compiles is one self-contained text and the family's source hash and
// every build's fingerprint cover the prelude too. nvcc finds it with -I core/include.
//
// Reads, when defined before the include:
//   IN_T, OUT_T  the storage types of A/B and of C: typedef'd as in_t and out_t;
//   HALF_TYPES   0 leaves out cuda_fp16.h / cuda_bf16.h and the 16-bit overloads (for a
//                small fp32 kernel those headers are most of the compile time); default 1.
//   FP8          1 for a kernel of FP8 inputs (default 0); then A_E5M2, B_E5M2 (1: that
//                operand is e5m2, default 0: e4m3) name their PTX types as FP8_A_PTX and
//                FP8_B_PTX, and gt_scales is the plugin ABI's (v3) scales argument.
#ifndef GEMMTUNE_KERNEL_PRELUDE_CUH
#define GEMMTUNE_KERNEL_PRELUDE_CUH

#ifndef HALF_TYPES
#define HALF_TYPES 1
#endif
#if HALF_TYPES
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

typedef unsigned int u32;  // NVRTC has no <cstdint>
typedef unsigned long long u64;
#ifdef IN_T
typedef IN_T in_t;
#endif
#ifdef OUT_T
typedef OUT_T out_t;
#endif

#ifndef FP8
#define FP8 0
#endif
#ifndef A_E5M2
#define A_E5M2 0
#endif
#ifndef B_E5M2
#define B_E5M2 0
#endif
#if FP8
#if A_E5M2
#define FP8_A_PTX "e5m2"
#else
#define FP8_A_PTX "e4m3"
#endif
#if B_E5M2
#define FP8_B_PTX "e5m2"
#else
#define FP8_B_PTX "e4m3"
#endif
// An FP8 call's scales (plugin ABI v3's gt_scales: four device pointers, by value, after the
// launch scalars). `d` and `amax_d` concern FP8 outputs.
struct gt_scales {
  const float* a;
  const float* b;
  const float* d;
  float* amax_d;
};
#endif

// An element as fp32: every family accumulates in fp32.
__device__ __forceinline__ float to_f(float x) { return x; }
// One fp32 result into C's type, rounded to nearest even; store2: two adjacent ones as one
// vector store (p aligned to two elements).
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store2(float* p, float x, float y) {
  *reinterpret_cast<float2*>(p) = make_float2(x, y);
}
#if HALF_TYPES
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store2(__half* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}
#endif

// fp32 rounded to tf32 (to nearest, ties away), as a tf32 tensor-core path would see it; the
// tensor cores themselves truncate the low mantissa bits, which is why operands are rounded
// first. The bit-pattern form is for values held in registers as u32 (mma fragments).
__device__ __forceinline__ u32 round_tf32_bits(float x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float round_tf32(float x) { return __uint_as_float(round_tf32_bits(x)); }

#endif  // GEMMTUNE_KERNEL_PRELUDE_CUH
