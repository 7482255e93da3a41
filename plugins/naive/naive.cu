// naive: one thread per output element, every operand straight from global memory.
// The first rung of the ladder; MAPPING is the lab's experiment in coalescing.
//
// Every define has a default, so the file compiles on its own; naive.cpp sets each.
#ifndef IN_T
#define IN_T float  // storage type of A and B (float, __half, __nv_bfloat16)
#endif
#ifndef OUT_T
#define OUT_T float  // storage type of C
#endif
#ifndef TF32
#define TF32 0  // 1: round operands to tf32 before multiplying (tensor-core numerics)
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major
#endif
#ifndef B_TRANS
#define B_TRANS 0  // 0: B is K×N row-major; 1: B is N×K row-major
#endif
#ifndef MAPPING
#define MAPPING 0  // 0: consecutive threads take consecutive columns of C (coalesced); 1: rows
#endif
#ifndef BX
#define BX 32  // threads per block in x
#endif
#ifndef BY
#define BY 8  // threads per block in y
#endif

#include <gemmtune/kernel_prelude.cuh>  // to_f, store, round_tf32

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
