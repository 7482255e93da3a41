// wmma: tensor-core GEMM with fp32 accumulation. One source, two fragment paths:
//   LOADER 0: the nvcuda::wmma API (load_matrix_sync / mma_sync / store_matrix_sync);
//   LOADER 1: ldmatrix + mma.sync PTX (m16n8k16 for f16/bf16, m16n8k8 for tf32), with
//             fragments double-buffered across k-steps.
// Both share the block tiling, the multi-stage shared-memory pipeline fed by cp.async (or
// plain loads where the alignment or the architecture forbids it), the predicated edges and
// the epilogue.
//
// Every define has a default (the default config at 8192³ f16 nn), so the file compiles on its
// own; wmma.cpp sets each and computes every derived quantity once.
#ifndef IN_T
#define IN_T __half  // storage type of A and B (__half, __nv_bfloat16, float for tf32)
#endif
#ifndef OUT_T
#define OUT_T __half  // storage type of C (__half, __nv_bfloat16, float)
#endif
#ifndef IS_TF32
#define IS_TF32 0  // 1: fp32 data rounded to tf32 for the tensor cores
#endif
#ifndef IS_BF16
#define IS_BF16 0  // 1: IN_T is __nv_bfloat16
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major
#endif
#ifndef B_TRANS
#define B_TRANS 0  // 0: B is K×N row-major; 1: B is N×K row-major
#endif
#ifndef LOADER
#define LOADER 1  // 0: the wmma API, 1: ldmatrix + mma.sync
#endif
#ifndef BM
#define BM 128  // block tile rows
#endif
#ifndef BN
#define BN 256  // block tile columns
#endif
#ifndef BK
#define BK 32  // K depth of one stage
#endif
#ifndef WM
#define WM 64  // warp tile rows
#endif
#ifndef WN
#define WN 64  // warp tile columns
#endif
#ifndef FM
#define FM 16  // WMMA fragment M
#endif
#ifndef FN
#define FN 16  // WMMA fragment N
#endif
#ifndef FK
#define FK 16  // WMMA fragment K
#endif
#ifndef STAGES
#define STAGES 4  // shared-memory stages in flight (>= 2)
#endif
#ifndef EPILOGUE
#define EPILOGUE 1  // 0: C stored from registers; 1: staged through shared memory per warp
#endif
#ifndef GROUP_M
#define GROUP_M 8  // block-index swizzle: blocks walk GROUP_M tile rows before moving right
#endif
#ifndef VEC
#define VEC 8  // elements per global->shared copy unit (the alignment allows VEC*size bytes)
#endif
#ifndef OUT_VEC
#define OUT_VEC 4  // elements per C store (1, 2 or 4)
#endif
#ifndef STAGE_BYTES
#define STAGE_BYTES 24576  // A_BYTES + B_BYTES
#endif
#ifndef EPI_ROWS
#define EPI_ROWS 16  // rows of C a warp stages at once in the epilogue
#endif
#ifndef EPI_LD
#define EPI_LD 72  // their float stride
#endif
#ifndef A_ROWS
#define A_ROWS 128  // A's shared tile: rows (oriented as in global memory: BM×BK or BK×BM)
#endif
#ifndef A_COLS
#define A_COLS 32  // A's shared tile: contiguous columns
#endif
#ifndef A_LD
#define A_LD 32  // row stride in elements, padding included
#endif
#ifndef A_DIV
#define A_DIV 2  // XOR swizzle of 16-byte chunks: chunk c of row r is at c ^ (((r / A_DIV) * A_MUL) & (A_W - 1))
#endif
#ifndef A_MUL
#define A_MUL 1  // (swizzle, as above)
#endif
#ifndef A_W
#define A_W 4  // (swizzle, as above; 1 turns it off)
#endif
#ifndef A_BYTES
#define A_BYTES 8192  // bytes of one stage of A (a multiple of 128)
#endif
#ifndef B_ROWS
#define B_ROWS 32  // B's shared tile: rows (BK×BN or BN×BK)
#endif
#ifndef B_COLS
#define B_COLS 256  // B's shared tile: contiguous columns
#endif
#ifndef B_LD
#define B_LD 256  // row stride in elements, padding included
#endif
#ifndef B_DIV
#define B_DIV 1  // XOR swizzle of B (as for A)
#endif
#ifndef B_MUL
#define B_MUL 1  // (swizzle, as above)
#endif
#ifndef B_W
#define B_W 8  // (swizzle, as above)
#endif
#ifndef B_BYTES
#define B_BYTES 16384  // bytes of one stage of B
#endif

#include <gemmtune/kernel_prelude.cuh>  // u32, in_t, out_t, store, store2, round_tf32_bits
#if LOADER == 0
#include <mma.h>
#endif

constexpr int WARPS_M = BM / WM;
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int ESIZE = int(sizeof(in_t));
constexpr int CHUNK = 16 / ESIZE;  // elements per 16-byte chunk

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(A_COLS % CHUNK == 0 && B_COLS % CHUNK == 0, "tile rows are whole 16-byte chunks");
static_assert(A_COLS % VEC == 0 && B_COLS % VEC == 0 && CHUNK % VEC == 0, "copy units split chunks evenly");
static_assert(A_BYTES % 128 == 0 && B_BYTES % 128 == 0, "stages stay 128-byte aligned");
static_assert(STAGES >= 2, "the pipeline needs two stages");

// cp.async exists from sm_80 and copies 4, 8 or 16 bytes; anything else goes through registers.
#define IN_BYTES (IS_TF32 ? 4 : 2)  // sizeof(in_t), usable by the preprocessor
static_assert(IN_BYTES == ESIZE, "IS_TF32 matches IN_T");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && VEC * IN_BYTES >= 4
#define ASYNC_COPY 1
#else
#define ASYNC_COPY 0
#endif

template <int BYTES> struct Raw;
template <> struct Raw<16> { typedef uint4 T; };
template <> struct Raw<8> { typedef uint2 T; };
template <> struct Raw<4> { typedef unsigned T; };
template <> struct Raw<2> { typedef unsigned short T; };
typedef Raw<VEC * ESIZE>::T unit_t;
typedef Raw<ESIZE>::T elem_t;

// ---------------------------------------------------------------------------------------------
// Shared-memory tile addressing
// ---------------------------------------------------------------------------------------------
template <int LD, int DIV, int MUL, int W>
struct Tile {
  static constexpr int ROW_BYTES = LD * ESIZE;
  // Byte offset of 16-byte chunk c of row r.
  static __device__ __forceinline__ u32 chunk(int r, int c) {
    return u32(r * ROW_BYTES) + (u32(c ^ int(((unsigned(r) / DIV) * MUL) & (W - 1))) << 4);
  }
  // Byte offset of element `col` of row r.
  static __device__ __forceinline__ u32 elem(int r, int col) {
    return chunk(r, col / CHUNK) + u32((col % CHUNK) * ESIZE);
  }
};
typedef Tile<A_LD, A_DIV, A_MUL, A_W> TileA;
typedef Tile<B_LD, B_DIV, B_MUL, B_W> TileB;

// ---------------------------------------------------------------------------------------------
// Global -> shared copies
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void cp_async_commit() {
#if ASYNC_COPY
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if ASYNC_COPY
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// One whole unit of VEC elements, in bounds.
__device__ __forceinline__ void copy_unit(unsigned char* smem, u32 smem_u32, u32 off, const in_t* src) {
#if ASYNC_COPY
#if VEC * IN_BYTES == 16
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_u32 + off), "l"(src) : "memory");
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(smem_u32 + off), "l"(src), "n"(VEC * ESIZE)
               : "memory");
#endif
#else
  *reinterpret_cast<unit_t*>(smem + off) = __ldg(reinterpret_cast<const unit_t*>(src));
#endif
}

// A unit of which only the first `valid` elements (0..VEC) exist; the rest become zero, so a
// partial K tile adds nothing and no NaN from beyond the matrix can reach an output.
__device__ __forceinline__ void copy_unit_zfill(unsigned char* smem, u32 smem_u32, u32 off, const in_t* src,
                                                int valid) {
#if ASYNC_COPY
#if VEC * IN_BYTES == 16
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(smem_u32 + off), "l"(src),
               "r"(valid * ESIZE)
               : "memory");
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_u32 + off), "l"(src), "n"(VEC * ESIZE),
               "r"(valid * ESIZE)
               : "memory");
#endif
#else
  union {
    unit_t v;
    elem_t e[VEC];
  } u;
#pragma unroll
  for (int e = 0; e < VEC; ++e) u.e[e] = e < valid ? __ldg(reinterpret_cast<const elem_t*>(src) + e) : elem_t(0);
  *reinterpret_cast<unit_t*>(smem + off) = u.v;
#endif
}

__device__ __forceinline__ int fresh_tid() {
  unsigned t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return int(t);
}
// p + step elements, as an addition the compiler cannot reassociate: a thread's copies walk
// their rows one step at a time, instead of the compiler hoisting every row's offset out of
// the main loop into a register pair of its own. PTX adds bytes: the step is scaled here.
__device__ __forceinline__ const in_t* step_rows(const in_t* p, long long step) {
  const in_t* q;
  asm volatile("add.s64 %0, %1, %2;" : "=l"(q) : "l"(p), "l"(step * ESIZE));
  return q;
}

// Copies one operand's shared tile (ROWS × COLS) from `src`, the global address of the tile's
// first element (always inside the matrix), row stride ld. rows_left / cols_left: rows and
// columns of the matrix from the tile's origin on; the tile is predicated where they are short.
template <class T, int ROWS, int COLS>
__device__ __forceinline__ void load_tile(unsigned char* smem, u32 smem_u32, u32 dst, const in_t* src, int ld,
                                          int rows_left, int cols_left, int tid) {
  constexpr int UPR = COLS / VEC;  // copy units per tile row
  constexpr int UNITS = ROWS * UPR;
  constexpr int ITERS = (UNITS + THREADS - 1) / THREADS;
  constexpr int RSTEP = THREADS % UPR == 0 ? THREADS / UPR : 1;
  // When a thread's units share one column and step by a multiple of 8 rows, their shared
  // offsets differ by constants (the swizzle repeats every 8 rows) and their global addresses
  // by a running stride: two registers, whatever the number of units.
  constexpr bool FIXED = THREADS % UPR == 0 && (RSTEP % 8 == 0 || ITERS == 1);
  const bool full = rows_left >= ROWS && cols_left >= COLS;
  if (FIXED) {
    const int r0 = tid / UPR, c = (tid % UPR) * VEC;
    const u32 d0 = dst + T::elem(r0, c);
    const in_t* s = src + (long long)r0 * ld + c;
    const long long sstep = (long long)RSTEP * ld;
    if (full) {
#pragma unroll
      for (int i = 0; i < ITERS; ++i, s = step_rows(s, sstep)) {
        if (UNITS % THREADS != 0 && tid + i * THREADS >= UNITS) break;
        copy_unit(smem, smem_u32, d0 + u32(i * RSTEP * T::ROW_BYTES), s);
      }
    } else {
      const int cvalid = min(max(cols_left - c, 0), VEC);
#pragma unroll
      for (int i = 0; i < ITERS; ++i, s = step_rows(s, sstep)) {
        if (UNITS % THREADS != 0 && tid + i * THREADS >= UNITS) break;
        const int valid = r0 + i * RSTEP < rows_left ? cvalid : 0;
        copy_unit_zfill(smem, smem_u32, d0 + u32(i * RSTEP * T::ROW_BYTES), valid ? s : src, valid);
      }
    }
  } else {
    // An irregular pattern: each unit's position is recomputed from a fresh read of %tid, so
    // that the compiler does not hold a register per unit through the main loop.
    const int t = fresh_tid();
#pragma unroll
    for (int i = 0; i < ITERS; ++i) {
      const int u = t + i * THREADS;
      if (UNITS % THREADS != 0 && u >= UNITS) break;
      const int r = u / UPR, c = (u % UPR) * VEC;
      const u32 d = dst + T::elem(r, c);
      const in_t* s = src + (long long)r * ld + c;
      if (full) {
        copy_unit(smem, smem_u32, d, s);
      } else {
        const int valid = r < rows_left ? min(max(cols_left - c, 0), VEC) : 0;
        copy_unit_zfill(smem, smem_u32, d, valid ? s : src, valid);
      }
    }
  }
}

// The main loop's copies: the K extent of the tile is whole (the partial K tile is loaded
// first, in the prologue), so only the block's M / N edge can cut units, the same units in
// every tile. Each unit's byte count is then a comparison and a select, with no branch, and
// interior blocks run the same instructions as edge blocks.
template <class T, int ROWS, int COLS, bool K_ROWS>
__device__ __forceinline__ void load_tile_kfull(unsigned char* smem, u32 smem_u32, u32 dst, const in_t* src, int ld,
                                                int mn_left, int tid) {
  constexpr int UPR = COLS / VEC;
  constexpr int UNITS = ROWS * UPR;
  constexpr int ITERS = (UNITS + THREADS - 1) / THREADS;
  constexpr int RSTEP = THREADS % UPR == 0 ? THREADS / UPR : 1;
  constexpr bool FIXED = THREADS % UPR == 0 && (RSTEP % 8 == 0 || ITERS == 1);
  const int rows_left = K_ROWS ? ROWS : mn_left, cols_left = K_ROWS ? mn_left : COLS;
  if (FIXED) {
    const int r0 = tid / UPR, c = (tid % UPR) * VEC;
    const u32 d0 = dst + T::elem(r0, c);
    const in_t* s = src + (long long)r0 * ld + c;
    const long long sstep = (long long)RSTEP * ld;
    const int cvalid = min(max(cols_left - c, 0), VEC);
    // Units 0..nrows-1 of this thread lie on rows inside the matrix (nrows <= 0: none).
    const int nrows = K_ROWS ? ITERS : (min(rows_left, ROWS) - r0 + RSTEP - 1) / RSTEP;
#pragma unroll
    for (int i = 0; i < ITERS; ++i, s = step_rows(s, sstep)) {
      if (UNITS % THREADS != 0 && tid + i * THREADS >= UNITS) break;
      const int valid = i < nrows ? cvalid : 0;
      copy_unit_zfill(smem, smem_u32, d0 + u32(i * RSTEP * T::ROW_BYTES), valid ? s : src, valid);
    }
  } else {
    load_tile<T, ROWS, COLS>(smem, smem_u32, dst, src, ld, rows_left, cols_left, tid);
  }
}

// ---------------------------------------------------------------------------------------------
// Output conversion and stores
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void st4(__half* p, float4 v) {
  __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
  *reinterpret_cast<uint2*>(p) = make_uint2(*reinterpret_cast<unsigned*>(&lo), *reinterpret_cast<unsigned*>(&hi));
}
__device__ __forceinline__ void st4(__nv_bfloat16* p, float4 v) {
  __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
  *reinterpret_cast<uint2*>(p) = make_uint2(*reinterpret_cast<unsigned*>(&lo), *reinterpret_cast<unsigned*>(&hi));
}

// Two adjacent outputs of which `left` (may be <= 0) are inside the matrix.
__device__ __forceinline__ void store_pair(out_t* p, float x, float y, int left) {
  if (OUT_VEC >= 2 && left >= 2) {
    store2(p, x, y);
  } else {
    if (left > 0) store(p, x);
    if (left > 1) store(p + 1, y);
  }
}
// Four adjacent outputs (the first at a multiple of 4 columns) of which `left` are inside.
__device__ __forceinline__ void store_quad(out_t* p, float4 v, int left) {
  if (OUT_VEC == 4 && left >= 4) {
    st4(p, v);
  } else if (OUT_VEC == 2 && left >= 4) {
    store2(p, v.x, v.y);
    store2(p + 2, v.z, v.w);
  } else {
    if (left > 0) store(p, v.x);
    if (left > 1) store(p + 1, v.y);
    if (left > 2) store(p + 2, v.z);
    if (left > 3) store(p + 3, v.w);
  }
}

// A warp's staged rows (ROWS × WN floats, stride EPI_LD) to C: each lane takes 4 adjacent
// columns, so a warp writes whole row segments. `c` points at the warp tile's first row/column
// (row0/col0 relative to it); m_left / n_left: rows / columns of C from there on.
template <int ROWS>
__device__ __forceinline__ void store_staged(const float* stage, out_t* c, int ldc, int m_left, int n_left, int lane) {
  constexpr int PER_ROW = WN / 4;
  constexpr int TOTAL = ROWS * PER_ROW;
  static_assert(TOTAL % 32 == 0, "whole warp passes");
#pragma unroll
  for (int v = lane; v < TOTAL; v += 32) {
    const int r = v / PER_ROW, col = (v % PER_ROW) * 4;
    if (r < m_left) {
      const float4 x = *reinterpret_cast<const float4*>(stage + r * EPI_LD + col);
      store_quad(c + (long long)r * ldc + col, x, n_left - col);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ldmatrix + mma.sync path
// ---------------------------------------------------------------------------------------------
#if LOADER == 1
constexpr int KSTEP = IS_TF32 ? 8 : 16;  // K of one mma instruction
constexpr int KK = BK / KSTEP;           // k-steps per stage
constexpr int MI = WM / 16;              // m16 tiles per warp
constexpr int NI = WN / 8;               // n8 tiles per warp
static_assert(KK % 2 == 0, "fragments are double-buffered across an even number of k-steps");
static_assert(NI % 2 == 0, "ldmatrix.x4 loads B for two n8 tiles");

struct Frags {
  u32 a[MI][4];
  u32 b[NI][2];
};

__device__ __forceinline__ void ldsm_x4(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// The per-thread parts of the ldmatrix addresses, computed once before the main loop. The
// swizzle repeats every 8 rows, so moving by 16 rows is a constant; moving along chunks goes
// through the XOR and needs its own value. A non-transposed tile ([m][k] for A, [n][k] for B)
// therefore keeps one offset per k-step and steps 16 rows per fragment as an immediate; a
// transposed one ([k][m], [k][n]) keeps one per fragment and steps 16 rows per k-step.
#define A_SCALAR (IS_TF32 && A_TRANS)   // tf32 [k][m]: read word by word
#define B_SCALAR (IS_TF32 && !B_TRANS)  // tf32 [k][n]
// Word-by-word reads (lane = 4g + t reads row t, column g): the swizzle repeats every 4 rows
// and every 8 chunks (32 words), so A needs one offset per (mi & 1, column half) and B one per
// ni & 3; rows (k-steps, +4) and 32-column steps are immediates.
constexpr int A_NOFF = A_SCALAR ? 4 : A_TRANS ? MI : KK;
constexpr int B_NOFF = B_SCALAR ? 4 : B_TRANS ? KK : NI / 2;
struct FragOffsets {
  u32 a[A_NOFF], b[B_NOFF];
};

__device__ __forceinline__ FragOffsets frag_offsets(int lane, int wm0, int wn0) {
  FragOffsets o;
  const int g = lane >> 2, t = lane & 3;
#if A_SCALAR
#pragma unroll
  for (int j = 0; j < 4; ++j) o.a[j] = TileA::elem(t, wm0 + (j >> 1) * 16 + (j & 1) * 8 + g);
#elif !A_TRANS
#pragma unroll
  for (int kk = 0; kk < KK; ++kk) o.a[kk] = TileA::chunk(wm0 + (lane & 15), kk * 2 + (lane >> 4));
#else
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
    o.a[mi] = TileA::chunk(((lane >> 4) << 3) + (lane & 7), (wm0 >> 3) + mi * 2 + ((lane >> 3) & 1));
#endif
#if B_SCALAR
#pragma unroll
  for (int j = 0; j < 4; ++j) o.b[j] = TileB::elem(t, wn0 + j * 8 + g);
#elif B_TRANS
#pragma unroll
  for (int kk = 0; kk < KK; ++kk) o.b[kk] = TileB::chunk(wn0 + ((lane >> 4) << 3) + (lane & 7), kk * 2 + ((lane >> 3) & 1));
#else
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) o.b[nj] = TileB::chunk(lane & 15, (wn0 >> 3) + nj * 2 + (lane >> 4));
#endif
  (void)g;
  (void)t;
  return o;
}

// Fragments of k-step kk from the stage whose A tile starts at a (B tile at b), shared-window
// addresses. Register layouts are those of the PTX ISA for mma.m16n8k16 (.m16n8k8 for tf32).
__device__ __forceinline__ void load_frags(Frags& f, u32 a, u32 b, int kk, const FragOffsets& o, int lane, int wm0,
                                           int wn0) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#if !A_TRANS
    // A as [m][k]: matrices (m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15) (m8-15,k8-15) -> a0..a3
    // (tf32: 4-element chunks, so the same rows/chunks give k0-3 and k4-7). Lane l addresses
    // row l%16 of the fragment at chunk 2kk + l/16.
    ldsm_x4(f.a[mi][0], f.a[mi][1], f.a[mi][2], f.a[mi][3], a + o.a[kk] + u32(mi * 16 * TileA::ROW_BYTES));
#elif !A_SCALAR
    // A as [k][m]: transposed 8x8 loads; lane l addresses k row 8(l/16) + l%8 at m chunk
    // 2mi + (l/8)%2 of the warp's columns: matrices (k-half, m-half) = (i/2, i%2).
    ldsm_x4_t(f.a[mi][0], f.a[mi][1], f.a[mi][2], f.a[mi][3], a + o.a[mi] + u32(kk * 16 * TileA::ROW_BYTES));
#else
    // tf32 A as [k][m]: 32-bit elements cannot be transposed by ldmatrix; one word each:
    // a0 (k t, m g), a1 (k t, m g+8), a2 (k t+4, m g), a3 (k t+4, m g+8).
    {
      const u32 base = a + u32(kk * 8 * TileA::ROW_BYTES + (mi >> 1) * 128);
      f.a[mi][0] = lds32(base + o.a[(mi & 1) * 2]);
      f.a[mi][1] = lds32(base + o.a[(mi & 1) * 2 + 1]);
      f.a[mi][2] = lds32(base + o.a[(mi & 1) * 2] + 4 * TileA::ROW_BYTES);
      f.a[mi][3] = lds32(base + o.a[(mi & 1) * 2 + 1] + 4 * TileA::ROW_BYTES);
    }
#endif
  }
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) {
#if B_TRANS
    // B as [n][k]: matrices (n0-7,k-lo) (n0-7,k-hi) (n8-15,k-lo) (n8-15,k-hi); lane l
    // addresses n row 8(l/16) + l%8 at chunk 2kk + (l/8)%2.
    ldsm_x4(f.b[2 * nj][0], f.b[2 * nj][1], f.b[2 * nj + 1][0], f.b[2 * nj + 1][1],
            b + o.b[kk] + u32(nj * 16 * TileB::ROW_BYTES));
#elif !B_SCALAR
    // B as [k][n]: transposed loads, matrices (k0-7,n0-7) (k8-15,n0-7) (k0-7,n8-15)
    // (k8-15,n8-15); lane l addresses k row l%16 at n chunk 2nj + l/16.
    ldsm_x4_t(f.b[2 * nj][0], f.b[2 * nj][1], f.b[2 * nj + 1][0], f.b[2 * nj + 1][1],
              b + o.b[nj] + u32(kk * 16 * TileB::ROW_BYTES));
#else
    // tf32 B as [k][n]: b0 (k t, n g), b1 (k t+4, n g).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ni = 2 * nj + h;
      const u32 base = b + u32(kk * 8 * TileB::ROW_BYTES + (ni >> 2) * 128) + o.b[ni & 3];
      f.b[ni][0] = lds32(base);
      f.b[ni][1] = lds32(base + 4 * TileB::ROW_BYTES);
    }
#endif
  }
#if IS_TF32
  // Round to nearest (the tensor cores would truncate the low mantissa bits).
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int j = 0; j < 4; ++j) f.a[mi][j] = round_tf32_bits(__uint_as_float(f.a[mi][j]));
#pragma unroll
  for (int ni = 0; ni < NI; ++ni)
#pragma unroll
    for (int j = 0; j < 2; ++j) f.b[ni][j] = round_tf32_bits(__uint_as_float(f.b[ni][j]));
#endif
}

__device__ __forceinline__ void mma(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
#if IS_TF32
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif IS_BF16
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  // sm_75 has m16n8k8 only: the k16 fragment is two k8 halves (a0,a1|b0 and a2,a3|b1).
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]));
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[2]), "r"(a[3]), "r"(b[1]));
#endif
}
#endif  // LOADER == 1

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------
// Where a warp's tile of C starts. The epilogue calls this again rather than keeping these
// values alive through the main loop, where every register goes to accumulators and
// fragments; the volatile reads of %ctaid / %tid keep the compiler from merging the two.
struct WarpTile {
  int m0, n0;           // block tile origin in C
  int wm0, wn0;         // warp tile origin inside the block tile
  int tid, lane, warp;
};
__device__ __forceinline__ WarpTile warp_tile(int M, int N) {
  unsigned bid, t;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(bid));
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  // Block-index swizzle: GROUP_M consecutive blocks go down a column of tiles, so the blocks
  // in flight share A rows and B columns in L2.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = int(bid);
  const int per_group = GROUP_M * tiles_n;
  const int first_m = (pid / per_group) * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  WarpTile w;
  w.m0 = (first_m + (pid % per_group) % group_rows) * BM;
  w.n0 = ((pid % per_group) / group_rows) * BN;
  w.tid = int(t);
  w.lane = w.tid & 31;
  w.warp = w.tid >> 5;
  w.wm0 = (w.warp / WARPS_N) * WM;
  w.wn0 = (w.warp % WARPS_N) * WN;
  return w;
}

// ---- stage 1: loads. A block's operand tiles and the copies that fill a pipeline stage ----
struct Operands {
  unsigned char* smem;
  u32 smem_u32;
  const in_t* __restrict__ A;
  const in_t* __restrict__ B;
  int lda, ldb, K;
  int m0, n0, m_left, n_left;  // the block tile's origin in C; rows / columns of C from there (>= 1)
  int tid, KT;                 // KT: k tiles

  // Tiles run over K in the order: the last (possibly partial) K tile first, then the others
  // from K = 0 on. The prologue alone meets a partial tile; the main loop's copies need no
  // K predicate. (Summation order does not matter beyond fp32 rounding.)
  __device__ __forceinline__ int tile_k0(int t) const { return (t == 0 ? KT - 1 : t - 1) * BK; }

  // Tile t of both operands into stage s, predicated everywhere (the prologue).
  __device__ __forceinline__ void load_stage(int s, int t) const {
    const int k0 = tile_k0(t);
    const u32 base = u32(s) * STAGE_BYTES;
#if !A_TRANS
    load_tile<TileA, A_ROWS, A_COLS>(smem, smem_u32, base, A + (long long)m0 * lda + k0, lda, m_left, K - k0, tid);
#else
    load_tile<TileA, A_ROWS, A_COLS>(smem, smem_u32, base, A + (long long)k0 * lda + m0, lda, K - k0, m_left, tid);
#endif
#if !B_TRANS
    load_tile<TileB, B_ROWS, B_COLS>(smem, smem_u32, base + A_BYTES, B + (long long)k0 * ldb + n0, ldb, K - k0, n_left,
                                     tid);
#else
    load_tile<TileB, B_ROWS, B_COLS>(smem, smem_u32, base + A_BYTES, B + (long long)n0 * ldb + k0, ldb, n_left, K - k0,
                                     tid);
#endif
  }

  // Tile t >= 1 (whole in K) into stage s (the main loop).
  __device__ __forceinline__ void load_stage_kfull(int s, int t) const {
    const int k0 = tile_k0(t);
    const u32 base = u32(s) * STAGE_BYTES;
#if !A_TRANS
    load_tile_kfull<TileA, A_ROWS, A_COLS, false>(smem, smem_u32, base, A + (long long)m0 * lda + k0, lda, m_left, tid);
#else
    load_tile_kfull<TileA, A_ROWS, A_COLS, true>(smem, smem_u32, base, A + (long long)k0 * lda + m0, lda, m_left, tid);
#endif
#if !B_TRANS
    load_tile_kfull<TileB, B_ROWS, B_COLS, true>(smem, smem_u32, base + A_BYTES, B + (long long)k0 * ldb + n0, ldb,
                                                 n_left, tid);
#else
    load_tile_kfull<TileB, B_ROWS, B_COLS, false>(smem, smem_u32, base + A_BYTES, B + (long long)n0 * ldb + k0, ldb,
                                                  n_left, tid);
#endif
  }

  // The first STAGES-1 tiles in flight (a group per stage, empty past the end, so that
  // wait_group counts stay exact). Not unrolled: one copy of the copy code is enough.
  __device__ __forceinline__ void prologue() const {
#pragma unroll 1
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) load_stage(s, s);
      cp_async_commit();
    }
  }
};

#if LOADER == 1
// ---- stage 2 (ldmatrix + mma.sync): the k loop ----
typedef float Acc[MI][NI][4];

// One k-step's MMAs over the warp tile.
__device__ __forceinline__ void mma_kstep(Acc& acc, const Frags& f) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int nx = 0; nx < NI; ++nx) {
      const int ni = (mi & 1) ? NI - 1 - nx : nx;  // serpentine: reuse the last B fragment
      mma(acc[mi][ni], f.a[mi], f.b[ni]);
    }
}

// Per k-step: at the first, issue the tile STAGES-1 ahead into the stage everyone finished
// reading before the previous barrier; at the last, wait for the next stage and pass the
// barrier; always prefetch the next k-step's fragments before this one's MMAs.
__device__ __forceinline__ void k_loop(Acc& acc, const Operands& ops, int lane, int wm0, int wn0) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[mi][ni][j] = 0.f;

  Frags fr[2];
  cp_async_wait<STAGES - 2>();
  __syncthreads();
  const FragOffsets offs = frag_offsets(lane, wm0, wn0);
  load_frags(fr[0], ops.smem_u32, ops.smem_u32 + A_BYTES, 0, offs, lane, wm0, wn0);

  int read_stage = 0, write_stage = STAGES - 1;
#pragma unroll 1
  for (int kt = 0; kt < ops.KT; ++kt) {
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) {
      if (kk == 0) {
        if (kt + STAGES - 1 < ops.KT) ops.load_stage_kfull(write_stage, kt + STAGES - 1);
        cp_async_commit();
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
      }
      if (kk == KK - 1) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
      }
      const u32 a = ops.smem_u32 + u32(read_stage) * STAGE_BYTES;
      load_frags(fr[(kk + 1) % 2], a, a + A_BYTES, (kk + 1) % KK, offs, lane, wm0, wn0);
      mma_kstep(acc, fr[kk % 2]);
    }
  }
}

// ---- stage 3 (ldmatrix + mma.sync): the epilogue ----
// The mma accumulator layout: lane 4g + t holds rows g and g + 8 of each m16 tile, columns
// 2t and 2t + 1 of each n8 tile.
__device__ __forceinline__ void epilogue(const Acc& acc, out_t* __restrict__ C, int M, int N, int ldc, unsigned char* smem) {
  const WarpTile e = warp_tile(M, N);
  out_t* const c_warp = C + ((long long)e.m0 + e.wm0) * ldc + ((long long)e.n0 + e.wn0);
  const int wm_left = M - e.m0 - e.wm0, wn_left = N - e.n0 - e.wn0;  // <= 0: the warp is past the edge
  const int g = e.lane >> 2, t = e.lane & 3;
#if EPILOGUE == 0
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int r = mi * 16 + g, col = ni * 8 + 2 * t;
      if (r < wm_left) store_pair(c_warp + (long long)r * ldc + col, acc[mi][ni][0], acc[mi][ni][1], wn_left - col);
      if (r + 8 < wm_left)
        store_pair(c_warp + (long long)(r + 8) * ldc + col, acc[mi][ni][2], acc[mi][ni][3], wn_left - col);
    }
#else
  cp_async_wait<0>();
  __syncthreads();  // the pipeline's buffers become the warps' staging areas
  float* stage = reinterpret_cast<float*>(smem) + e.warp * (EPI_ROWS * EPI_LD);
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      *reinterpret_cast<float2*>(stage + g * EPI_LD + ni * 8 + 2 * t) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<float2*>(stage + (g + 8) * EPI_LD + ni * 8 + 2 * t) =
          make_float2(acc[mi][ni][2], acc[mi][ni][3]);
    }
    __syncwarp();
    store_staged<16>(stage, c_warp + (long long)(mi * 16) * ldc, ldc, wm_left - mi * 16, wn_left, e.lane);
    __syncwarp();
  }
#endif
}

#else
// ---- stage 2 (nvcuda::wmma): the k loop ----
using namespace nvcuda;
#if IS_TF32
typedef wmma::precision::tf32 frag_t;
#else
typedef in_t frag_t;
#endif
#if A_TRANS
typedef wmma::col_major a_layout;  // A stored [k][m]
#else
typedef wmma::row_major a_layout;  // A stored [m][k]
#endif
#if B_TRANS
typedef wmma::col_major b_layout;  // B stored [n][k]
#else
typedef wmma::row_major b_layout;  // B stored [k][n]
#endif
constexpr int MI = WM / FM, NI = WN / FN;
typedef wmma::fragment<wmma::accumulator, FM, FN, FK, float> Acc[MI][NI];

// One barrier per tile: it publishes tile kt and frees the stage tile kt-1 used, which the
// copies issued right after it then refill.
__device__ __forceinline__ void k_loop(Acc& acc, const Operands& ops, int wm0, int wn0) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) wmma::fill_fragment(acc[mi][ni], 0.f);

#pragma unroll 1
  for (int kt = 0; kt < ops.KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (kt + STAGES - 1 < ops.KT) ops.load_stage_kfull((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
    cp_async_commit();
    const in_t* As = reinterpret_cast<const in_t*>(ops.smem + (kt % STAGES) * STAGE_BYTES);
    const in_t* Bs = reinterpret_cast<const in_t*>(ops.smem + (kt % STAGES) * STAGE_BYTES + A_BYTES);
#pragma unroll
    for (int kk = 0; kk < BK / FK; ++kk) {
      wmma::fragment<wmma::matrix_a, FM, FN, FK, frag_t, a_layout> fa[MI];
      wmma::fragment<wmma::matrix_b, FM, FN, FK, frag_t, b_layout> fb[NI];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#if A_TRANS
        wmma::load_matrix_sync(fa[mi], As + (kk * FK) * A_LD + wm0 + mi * FM, A_LD);
#else
        wmma::load_matrix_sync(fa[mi], As + (wm0 + mi * FM) * A_LD + kk * FK, A_LD);
#endif
#if IS_TF32
#pragma unroll
        for (int e = 0; e < fa[mi].num_elements; ++e) fa[mi].x[e] = wmma::__float_to_tf32(fa[mi].x[e]);
#endif
      }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
#if B_TRANS
        wmma::load_matrix_sync(fb[ni], Bs + (wn0 + ni * FN) * B_LD + kk * FK, B_LD);
#else
        wmma::load_matrix_sync(fb[ni], Bs + (kk * FK) * B_LD + wn0 + ni * FN, B_LD);
#endif
#if IS_TF32
#pragma unroll
        for (int e = 0; e < fb[ni].num_elements; ++e) fb[ni].x[e] = wmma::__float_to_tf32(fb[ni].x[e]);
#endif
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) wmma::mma_sync(acc[mi][ni], fa[mi], fb[ni], acc[mi][ni]);
    }
  }
}

// ---- stage 3 (nvcuda::wmma): the epilogue ----
// The API hides the accumulator layout: stage a row of fragments in shared memory, then
// write whole rows with predication.
__device__ __forceinline__ void epilogue(const Acc& acc, out_t* __restrict__ C, int M, int N, int ldc, unsigned char* smem) {
  cp_async_wait<0>();
  __syncthreads();
  const WarpTile e = warp_tile(M, N);
  out_t* const c_warp = C + ((long long)e.m0 + e.wm0) * ldc + ((long long)e.n0 + e.wn0);
  const int wm_left = M - e.m0 - e.wm0, wn_left = N - e.n0 - e.wn0;
  float* stage = reinterpret_cast<float*>(smem) + e.warp * (EPI_ROWS * EPI_LD);
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) wmma::store_matrix_sync(stage + ni * FN, acc[mi][ni], EPI_LD, wmma::mem_row_major);
    __syncwarp();
    store_staged<FM>(stage, c_warp + (long long)(mi * FM) * ldc, ldc, wm_left - mi * FM, wn_left, e.lane);
    __syncwarp();
  }
}
#endif  // LOADER

// The kernel: loads (the prologue fills STAGES-1 stages), then the k loop (loads and MMAs
// interleaved), then the epilogue.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_wmma(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  extern __shared__ __align__(128) unsigned char smem[];
  const WarpTile w = warp_tile(M, N);
  const Operands ops{smem, u32(__cvta_generic_to_shared(smem)), static_cast<const in_t*>(A_),
                     static_cast<const in_t*>(B_), lda, ldb, K, w.m0, w.n0, M - w.m0, N - w.n0, w.tid,
                     (K + BK - 1) / BK};
  ops.prologue();
  Acc acc;
#if LOADER == 1
  k_loop(acc, ops, w.lane, w.wm0, w.wn0);
#else
  k_loop(acc, ops, w.wm0, w.wn0);
#endif
  epilogue(acc, static_cast<out_t*>(C_), M, N, ldc, smem);
}
