// skinny: C = A·B for few rows of C (M up to 64: LLM decode), bound by reading B once.
// Each block owns TX·VEC consecutive columns of C and MR rows; its TX×KY threads split K
// over KY groups. Every thread streams rows k, k+KY, ... of its VEC columns of B with one
// VEC_BYTES load per row (UNROLL rows in flight), multiplies them by the MR values of A at
// that k (the same for all threads of a group: broadcast from L1), and accumulates in fp32.
// The KY partial sums are added in shared memory (a tree) and each output written once.
//
// Every define has a default, so the file compiles on its own; skinny.cpp sets each.
#ifndef IN_T
#define IN_T float  // storage type of A and B (float, __half, __nv_bfloat16)
#endif
#ifndef OUT_T
#define OUT_T float  // storage type of C
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major (B is always K×N row-major)
#endif
#ifndef MR
#define MR 1  // rows of C per block (grid.y covers M in steps of MR)
#endif
#ifndef TX
#define TX 8  // threads along N
#endif
#ifndef KY
#define KY 64  // thread groups along K (block = TX·KY threads; KY a power of two)
#endif
#ifndef VEC
#define VEC 4  // elements of B per load (VEC·sizeof(IN_T) bytes)
#endif
#ifndef UNROLL
#define UNROLL 8  // rows of B each thread has in flight
#endif

#include <gemmtune/kernel_prelude.cuh>  // to_f, store

struct __align__(VEC * sizeof(IN_T)) Pack {
  IN_T v[VEC];
};

// One thread's share of K: rows k0, k0 + KY, ... of its VEC columns of B, UNROLL rows in flight.
// FULL: all VEC columns lie inside C, one vector load per row; else element by element.
template <bool FULL>
__device__ __forceinline__ void stream(const IN_T* __restrict__ A, const IN_T* __restrict__ B, float (&acc)[MR][VEC],
                                       int M, int N, int K, int lda, int ldb, int row0, int col0, int k0) {
  auto load_b = [&](int k, Pack& b) {
    const IN_T* p = B + (long long)k * ldb + col0;
    if (FULL) {
      b = *reinterpret_cast<const Pack*>(p);
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v) b.v[v] = col0 + v < N ? p[v] : IN_T(0.f);
    }
  };
  auto fma_row = [&](int k, const Pack& b) {
#pragma unroll
    for (int m = 0; m < MR; ++m) {
      if (row0 + m >= M) break;
#if A_TRANS
      const float a = to_f(A[(long long)k * lda + row0 + m]);
#else
      const float a = to_f(A[(long long)(row0 + m) * lda + k]);
#endif
#pragma unroll
      for (int v = 0; v < VEC; ++v) acc[m][v] = fmaf(a, to_f(b.v[v]), acc[m][v]);
    }
  };
  int k = k0;
  for (; k + (UNROLL - 1) * KY < K; k += UNROLL * KY) {
    Pack b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) load_b(k + u * KY, b[u]);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) fma_row(k + u * KY, b[u]);
  }
  for (; k < K; k += KY) {
    Pack b;
    load_b(k, b);
    fma_row(k, b);
  }
}

extern "C" __global__ void __launch_bounds__(TX * KY)
gemm_skinny(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  const IN_T* __restrict__ A = static_cast<const IN_T*>(A_);
  const IN_T* __restrict__ B = static_cast<const IN_T*>(B_);
  OUT_T* __restrict__ C = static_cast<OUT_T*>(C_);
  constexpr int COLS = TX * VEC;  // columns of the block
  const int tx = threadIdx.x % TX, ky = threadIdx.x / TX;
  const int col0 = blockIdx.x * COLS + tx * VEC;
  const int row0 = blockIdx.y * MR;

  float acc[MR][VEC];
#pragma unroll
  for (int m = 0; m < MR; ++m)
#pragma unroll
    for (int v = 0; v < VEC; ++v) acc[m][v] = 0.f;
  if (col0 + VEC <= N)
    stream<true>(A, B, acc, M, N, K, lda, ldb, row0, col0, ky);
  else if (col0 < N)
    stream<false>(A, B, acc, M, N, K, lda, ldb, row0, col0, ky);

  // Add the KY partial sums in a tree: red[ky][m][column of the block], KY a power of two.
  extern __shared__ float red[];
  float* mine = red + ky * MR * COLS + tx * VEC;
#pragma unroll
  for (int m = 0; m < MR; ++m)
#pragma unroll
    for (int v = 0; v < VEC; ++v) mine[m * COLS + v] = acc[m][v];
  __syncthreads();
#pragma unroll 1
  for (int s = KY / 2; s > 0; s /= 2) {
    if (ky < s) {
      const float* other = mine + s * MR * COLS;
#pragma unroll
      for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int v = 0; v < VEC; ++v) mine[m * COLS + v] += other[m * COLS + v];
    }
    __syncthreads();
  }
  for (int o = threadIdx.x; o < MR * COLS; o += TX * KY) {
    const int m = o / COLS, c = o % COLS;
    const int row = row0 + m, col = blockIdx.x * COLS + c;
    if (row < M && col < N) store(&C[(long long)row * ldc + col], red[o]);
  }
}
