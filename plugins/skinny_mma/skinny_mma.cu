// skinny_mma: C = A·B for few rows of C (M up to 64: LLM decode) on the tensor cores, bound
// by reading B (K×N row-major: the weights) once, straight from global memory into registers.
//
// A block owns 32·NW consecutive columns of C and 16·MT rows; its WK warps split K into steps
// of 32 (warp w takes steps w, w + WK, ...), UNROLL steps' loads of B in flight per warp; each
// step is two mma.m16n8k16 k-steps.
// No shared memory on the way in: each thread loads 16 bytes (8 columns) of one row of B, and
// `movmatrix.trans` turns them into B fragments. For that the columns of an n8 tile are taken
// out of order — tile j of a 32-column group holds columns 8(c/2) + 2j + c%2, c = 0..7 — which
// is free, since every column of C is independent: the accumulator of tile j then holds, for
// thread (g = lane/4, q = lane%4), columns 8q + 2j and 8q + 2j + 1 of rows g and g + 8, i.e.
// every thread ends with 8 consecutive columns of two rows.
// The rows of K are taken out of order too, the same way for A and B (a reduction does not care
// in which order it adds): in a step of 32, the mma's k index κ of k-step t stands for row
// 8(κ%8/2) + 4t + 2(κ/8) + κ%2. Thread q's A fragments of both k-steps (κ = 2q, 2q+1, 2q+8,
// 2q+9) are then the 8 consecutive rows 8q..8q+7: one 16-byte load of A per row and step
// instead of eight 4-byte ones. A is small and read from L2 by every block.
// The WK partial tiles are added in shared memory and each output written once.
//
// Every define has a default, so the file compiles on its own; skinny_mma.cpp sets each.
#ifndef IN_T
#define IN_T __nv_bfloat16  // storage type of A and B (__half, __nv_bfloat16)
#endif
#ifndef OUT_T
#define OUT_T __nv_bfloat16  // storage type of C (those, or float)
#endif
#ifndef IS_BF16
#define IS_BF16 1  // 1: IN_T is __nv_bfloat16
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major (B is always K×N row-major)
#endif
#ifndef MT
#define MT 1  // m16 tiles per block
#endif
#ifndef NW
#define NW 1  // 32-column groups per block
#endif
#ifndef WK
#define WK 16  // warps along K (block = 32·WK threads)
#endif
#ifndef UNROLL
#define UNROLL 2  // k32 steps of B each warp has in flight
#endif

#include <gemmtune/kernel_prelude.cuh>  // u32, store

__device__ __forceinline__ u32 transpose8x8(u32 x) {
  u32 r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

__device__ __forceinline__ void mma16816(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if IS_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ u32 pack2(IN_T lo, IN_T hi) {
  unsigned short l, h;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return u32(l) | (u32(h) << 16);
}

// Row of K (0..31 within a step) that k-step t's mma index κ stands for; see the top.
__device__ __forceinline__ int krow(int t, int kappa) {
  return 8 * ((kappa & 7) >> 1) + 4 * t + 2 * (kappa >> 3) + (kappa & 1);
}

// One k32 step's B for one thread: for k-step t and half h (mma k 0-7 / 8-15), the row that
// κ = 8h + g stands for, 8 columns in each 32-column group.
struct BStep {
  uint4 v[NW][2][2];  // [group][t][h]
};

// FULL: the step lies inside K and the thread's 8 columns inside N (one 16-byte load each).
template <bool FULL>
__device__ __forceinline__ void load_b(BStep& s, const IN_T* __restrict__ B, int K, int N, int ldb, int k0, int col0,
                                       int g) {
#pragma unroll
  for (int nw = 0; nw < NW; ++nw)
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = k0 + krow(t, 8 * h + g), col = col0 + 32 * nw;
        const IN_T* p = B + (long long)k * ldb + col;
        if (FULL) {
          s.v[nw][t][h] = __ldg(reinterpret_cast<const uint4*>(p));
        } else {
          IN_T e[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) e[i] = (k < K && col + i < N) ? p[i] : IN_T(0.f);
          s.v[nw][t][h] = make_uint4(pack2(e[0], e[1]), pack2(e[2], e[3]), pack2(e[4], e[5]), pack2(e[6], e[7]));
        }
      }
}

// A's fragments of one m16 tile for both k-steps of the step at k0: rows g and g + 8, K rows
// k0 + 8q .. k0 + 8q + 7 (zero past M and K). a[t] = {a0, a1, a2, a3} of k-step t.
template <bool FULL>
__device__ __forceinline__ void load_a(u32 (&a)[2][4], const IN_T* __restrict__ A, int M, int K, int lda, int row0,
                                       int k0, int g, int q) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // rows g (a0, a2) and g + 8 (a1, a3)
    const int r = row0 + g + 8 * half, k = k0 + 8 * q;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < M) {
#if A_TRANS
      IN_T e[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = (FULL || k + i < K) ? A[(long long)(k + i) * lda + r] : IN_T(0.f);
      v = make_uint4(pack2(e[0], e[1]), pack2(e[2], e[3]), pack2(e[4], e[5]), pack2(e[6], e[7]));
#else
      const IN_T* p = A + (long long)r * lda + k;
      if (FULL) {
        v = __ldg(reinterpret_cast<const uint4*>(p));
      } else {
        IN_T e[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) e[i] = k + i < K ? p[i] : IN_T(0.f);
        v = make_uint4(pack2(e[0], e[1]), pack2(e[2], e[3]), pack2(e[4], e[5]), pack2(e[6], e[7]));
      }
#endif
    }
    // Rows 8q + {0,1} are κ = 2q, 2q+1 of k-step 0 (a0 / a1), {2,3} κ + 8 (a2 / a3), {4..7} k-step 1.
    a[0][half] = v.x;
    a[0][2 + half] = v.y;
    a[1][half] = v.z;
    a[1][2 + half] = v.w;
  }
}

template <bool FULL>
__device__ __forceinline__ void mma_step(float (&acc)[MT][NW][4][4], const BStep& s, const IN_T* __restrict__ A,
                                         int M, int K, int lda, int row0, int k0, int g, int q) {
  u32 a[MT][2][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) load_a<FULL>(a[mt], A, M, K, lda, row0 + 16 * mt, k0, g, q);
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    u32 b[NW][4][2];
#pragma unroll
    for (int nw = 0; nw < NW; ++nw)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        b[nw][0][h] = transpose8x8(s.v[nw][t][h].x);
        b[nw][1][h] = transpose8x8(s.v[nw][t][h].y);
        b[nw][2][h] = transpose8x8(s.v[nw][t][h].z);
        b[nw][3][h] = transpose8x8(s.v[nw][t][h].w);
      }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nw = 0; nw < NW; ++nw)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma16816(acc[mt][nw][j], a[mt][t], b[nw][j][0], b[nw][j][1]);
  }
}

constexpr int TILE_ROWS = 16 * MT, TILE_COLS = 32 * NW;

extern "C" __global__ void __launch_bounds__(32 * WK)
gemm_skinny_mma(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  const IN_T* __restrict__ A = static_cast<const IN_T*>(A_);
  const IN_T* __restrict__ B = static_cast<const IN_T*>(B_);
  OUT_T* __restrict__ C = static_cast<OUT_T*>(C_);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int col_blk = blockIdx.x * TILE_COLS, row0 = blockIdx.y * TILE_ROWS;
  const int col0 = col_blk + 8 * q;  // this thread's 8 columns in each 32-column group
  const bool cols_full = col_blk + TILE_COLS <= N;

  float acc[MT][NW][4][4] = {};

  const int steps = K / 32;  // whole k32 steps; a ragged last one is done element-wise below
  int s = warp;
  if (cols_full) {
    for (; s + (UNROLL - 1) * WK < steps; s += UNROLL * WK) {
      BStep b[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) load_b<true>(b[u], B, K, N, ldb, 32 * (s + u * WK), col0, g);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) mma_step<true>(acc, b[u], A, M, K, lda, row0, 32 * (s + u * WK), g, q);
    }
    for (; s < steps; s += WK) {
      BStep b;
      load_b<true>(b, B, K, N, ldb, 32 * s, col0, g);
      mma_step<true>(acc, b, A, M, K, lda, row0, 32 * s, g, q);
    }
  } else {
    for (; s < steps; s += WK) {
      BStep b;
      load_b<false>(b, B, K, N, ldb, 32 * s, col0, g);
      mma_step<true>(acc, b, A, M, K, lda, row0, 32 * s, g, q);
    }
  }
  if (K % 32 != 0 && warp == steps % WK) {
    BStep b;
    load_b<false>(b, B, K, N, ldb, 32 * steps, col0, g);
    mma_step<false>(acc, b, A, M, K, lda, row0, 32 * steps, g, q);
  }

  // The WK partial tiles, [warp][row][column] in C's order, added by all threads.
  extern __shared__ float red[];
  float* mine = red + warp * TILE_ROWS * TILE_COLS;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nw = 0; nw < NW; ++nw)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = 16 * mt + g + 8 * (e >> 1), c = 32 * nw + 8 * q + 2 * j + (e & 1);
          mine[r * TILE_COLS + c] = acc[mt][nw][j][e];
        }
  __syncthreads();
  for (int o = threadIdx.x; o < TILE_ROWS * TILE_COLS; o += 32 * WK) {
    const int row = row0 + o / TILE_COLS, col = col_blk + o % TILE_COLS;
    if (row >= M || col >= N) continue;
    float sum = 0.f;
#pragma unroll 8
    for (int w = 0; w < WK; ++w) sum += red[w * TILE_ROWS * TILE_COLS + o];
    store(&C[(long long)row * ldc + col], sum);
  }
}
