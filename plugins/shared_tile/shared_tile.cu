// shared_tile: the lab's third rung. A block computes a TILE_M×TILE_N tile of C, one thread
// per output element; it stages a TILE_M×TILE_K tile of A and a TILE_K×TILE_N tile of B in
// shared memory, so each element fetched from global memory is used TILE_N (A) or TILE_M (B)
// times. Loads are coalesced: consecutive threads walk the contiguous axis of each operand as
// it is stored, whatever the layout. Shared memory holds fp32 (f16/bf16 are widened on the
// way in, tf32 operands rounded), so the arithmetic is fp32 for every dtype.
//
// Every define has a default, so the file compiles on its own; shared_tile.cpp sets each.
#ifndef IN_T
#define IN_T float  // storage type of A and B (float, __half, __nv_bfloat16)
#endif
#ifndef OUT_T
#define OUT_T float  // storage type of C
#endif
#ifndef TF32
#define TF32 0  // 1: round operands to tf32 (cvt.rna) before multiplying
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major
#endif
#ifndef B_TRANS
#define B_TRANS 0  // 0: B is K×N row-major; 1: B is N×K row-major
#endif
#ifndef TILE_M
#define TILE_M 32  // output tile rows; the block is TILE_N (x, along N) × TILE_M (y) threads
#endif
#ifndef TILE_N
#define TILE_N 32  // output tile columns
#endif
#ifndef TILE_K
#define TILE_K 32  // k-depth of the shared-memory tiles
#endif
#ifndef PAD
#define PAD 1  // floats added to each shared-memory row (1 spreads a column over all banks)
#endif
#ifndef HALF_TYPES
#define HALF_TYPES 0  // 1 when a type is f16 or bf16: only then are their headers included (most of the compile time)
#endif

#include <gemmtune/kernel_prelude.cuh>  // to_f, store, round_tf32

__device__ __forceinline__ float operand(float x) {
#if TF32
  return round_tf32(x);
#else
  return x;
#endif
}

constexpr int kThreads = TILE_M * TILE_N;

// Copies one ROWS×COLS tile (as it sits in shared memory) from global memory, zeros outside
// the matrix. STORED_T: the operand is stored transposed in global memory, so its contiguous
// axis is the tile's rows. Consecutive threads take consecutive elements along the contiguous
// axis (coalesced); copy l of thread t is element i = l·kThreads + t of the tile in that order.
// Tile element (r, c) is logical element (r0 + r, c0 + c), stored at (r0+r)·ld + (c0+c), or at
// (c0+c)·ld + (r0+r) when STORED_T.
template <int ROWS, int COLS, int LD, bool STORED_T>
__device__ __forceinline__ void copy_tile(float (*s)[LD], const IN_T* __restrict__ g, int ld, int r0, int c0,
                                          int rows, int cols, int t) {
  constexpr int kElems = ROWS * COLS;
  constexpr int kCopies = (kElems + kThreads - 1) / kThreads;
  constexpr int kContig = STORED_T ? ROWS : COLS;  // extent of the contiguous axis in the tile
  // Along the contiguous axis: position ca; across it: sa (both relative to the tile).
  const int ca0 = STORED_T ? r0 : c0, sa0 = STORED_T ? c0 : r0;
  const int ca_ext = STORED_T ? rows : cols, sa_ext = STORED_T ? cols : rows;
  const IN_T* tile = g + (long long)sa0 * ld + ca0;
  float v[kCopies];
#pragma unroll
  for (int l = 0; l < kCopies; ++l) {
    const int i = l * kThreads + t;
    const int ca = i % kContig, sa = i / kContig;
    v[l] = 0.f;
    if ((kElems % kThreads == 0 || i < kElems) && ca0 + ca < ca_ext && sa0 + sa < sa_ext)
      v[l] = to_f(tile[(long long)sa * ld + ca]);
  }
#pragma unroll
  for (int l = 0; l < kCopies; ++l) {
    const int i = l * kThreads + t;
    const int ca = i % kContig, sa = i / kContig;
    if (kElems % kThreads == 0 || i < kElems) {
      if (STORED_T) s[ca][sa] = operand(v[l]);
      else s[sa][ca] = operand(v[l]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
gemm_shared_tile(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  const IN_T* __restrict__ A = static_cast<const IN_T*>(A_);
  const IN_T* __restrict__ B = static_cast<const IN_T*>(B_);
  OUT_T* __restrict__ C = static_cast<OUT_T*>(C_);
  __shared__ float As[TILE_M][TILE_K + PAD];
  __shared__ float Bs[TILE_K][TILE_N + PAD];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int t = ty * TILE_N + tx;
  // A one-dimensional grid: no 65535 limit on the number of block rows.
  const int gn = (N + TILE_N - 1) / TILE_N;
  const int bm = blockIdx.x / gn, bn = blockIdx.x - bm * gn;
  const int m0 = bm * TILE_M, n0 = bn * TILE_N;

  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    copy_tile<TILE_M, TILE_K, TILE_K + PAD, A_TRANS>(As, A, lda, m0, k0, M, K, t);
    copy_tile<TILE_K, TILE_N, TILE_N + PAD, B_TRANS>(Bs, B, ldb, k0, n0, K, N, t);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE_K; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  const int row = m0 + ty, col = n0 + tx;
  if (row < M && col < N) store(&C[(long long)row * ldc + col], acc);
}
