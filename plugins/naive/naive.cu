// naive: one thread per output element, every operand straight from global memory.
// The first rung of the ladder; MAPPING is the lab's experiment in coalescing.
//
// Defines (set by naive.cpp):
//   IN_T, OUT_T   storage types of A/B and of C (float, __half, __nv_bfloat16)
//   TF32          1: round operands to tf32 before multiplying (tensor-core numerics)
//   A_TRANS       0: A is M×K row-major; 1: A is K×M row-major
//   B_TRANS       0: B is K×N row-major; 1: B is N×K row-major
//   MAPPING       0 (coalesced): consecutive threads take consecutive columns of C;
//                 1 (uncoalesced): consecutive threads take consecutive rows of C
//   BX, BY        block shape (threads in x and y)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ float round_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

extern "C" __global__ void __launch_bounds__(BX * BY)
gemm_naive(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  const IN_T* __restrict__ A = static_cast<const IN_T*>(A_);
  const IN_T* __restrict__ B = static_cast<const IN_T*>(B_);
  OUT_T* __restrict__ C = static_cast<OUT_T*>(C_);
#if MAPPING == 0
  const int col = blockIdx.x * BX + threadIdx.x;
  const int row = blockIdx.y * BY + threadIdx.y;
#else
  const int row = blockIdx.x * BX + threadIdx.x;
  const int col = blockIdx.y * BY + threadIdx.y;
#endif
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
#if A_TRANS
    float a = to_f(A[(long long)k * lda + row]);
#else
    float a = to_f(A[(long long)row * lda + k]);
#endif
#if B_TRANS
    float b = to_f(B[(long long)col * ldb + k]);
#else
    float b = to_f(B[(long long)k * ldb + col]);
#endif
#if TF32
    a = round_tf32(a);
    b = round_tf32(b);
#endif
    acc = fmaf(a, b, acc);
  }
  store(&C[(long long)row * ldc + col], acc);
}
