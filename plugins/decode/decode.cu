// decode: C = A·B for a handful of rows of C (M ≤ 16: LLM decode), at the speed of reading B
// (the weights) once. With M this small the tensor cores idle; the time is B's bytes over the
// memory's bandwidth, plus whatever keeps that bandwidth from being reached from the first
// microsecond to the last. So:
//
// - B streams through a ring of STAGES shared-memory stages of BN features x BK k, each stage
//   copied by TMA tensor copies (sm_90: one thread issues a stage in BK/64 or BN/64
//   instructions, so a CTA has its whole ring in flight within a few hundred cycles of its
//   start) or by 16-byte cp.async from PRODUCER_WARPS warps (sm_80 and newer), guarded by full
//   and empty mbarriers. The stage is 128-byte swizzled (as TMA writes it) so that ldmatrix
//   reads it without bank conflicts.
// - Split-K by an even share of bytes: the (tile, k block) pairs, BN x BK each, k fastest, are
//   cut into gridDim.x contiguous ranges that differ by at most one block; the grid is
//   CTAS_PER_SM per SM (decode.cpp sizes it from the device), so every SM has its ring full
//   from the start and every CTA ends at about the same time. A range starts and ends inside
//   tiles: a tile it covers whole is written to C at once; the (at most two) it shares with its
//   neighbours leave fp32 partials in the workspace, and the last of a tile's CTAs to arrive
//   (a counter per tile and consumer warp) adds them in CTA order (deterministic) and writes C.
//   No CTA ever waits for another.
// - Every row of A (M ≤ 16) is served from the one read of B: mma.m16n8k16 with the weights as
//   the 16-row operand (16 features x 16 k, ldmatrix from the ring) and the activations as the
//   8-column operand (MT tiles of 8 rows of A, loaded from global memory, L1/L2-resident);
//   C[j][n] = D[n][j]. CONSUMER_WARPS warps each own BN / CONSUMER_WARPS features of the tile.
//
// Layouts: B stored N x K (B_KMAJOR: a PyTorch Linear's weight, layout t) or K x N (layout n);
// A stored M x K or K x M (A_TRANS). The kernel needs 16-byte aligned B rows (decode.cpp
// refuses other problems). Tails in N and K come as zeros from TMA's out-of-bounds fill or
// cp.async's zero fill; A is masked past M and K, and C past M and N.
//
// FP8 (FP8=1: A and B e4m3 or e5m2, stored as bytes, B N x K and A M x K only) is the same
// kernel in bytes: the ring, the copies and the swizzle are written in bytes (a 128-byte row
// holds 128 / sizeof(b_t) k), and m16n8k32's 8-bit fragments sit in the same bytes as
// m16n8k16's 16-bit ones (each thread's 4-byte pieces at the same byte offsets of a 32-byte k
// step), so ldmatrix and the activations' 4-byte loads are unchanged; only the mma instruction
// and the k per step differ. Tensor or row scales multiply a CTA's sums at the end of its part
// of a tile, before they meet other CTAs' (the sum of scaled parts is the scaled sum).
//
// Kernel parameters (plugin ABI v3): the nine standard ones, the workspace, the launch scalars
// (unused), with FP8 the scales (a gt_scales by value), and with ENGINE_TMA the tensor map of
// B. Every define has a default, so this file compiles on its own (NVRTC, sm_80 or sm_90);
// decode.cpp sets each. FP8 (1: A and B are FP8 bytes, IN_T and B_T unsigned char, multiplied by
// m16n8k32), A_E5M2 and B_E5M2 are the prelude's (default 0).
#ifndef SCALE_MODE
#define SCALE_MODE 0  // FP8: gt_scale_mode, 1 (tensor: sa[0] sb[0]) or 2 (row: sa[m] sb[n])
#endif
#ifndef IN_T
#define IN_T __nv_bfloat16  // storage type of A (the activations): __half, __nv_bfloat16, or unsigned char (FP8)
#endif
#ifndef B_T
#define B_T IN_T  // storage type of B (the weights)
#endif
#ifndef OUT_T
#define OUT_T __nv_bfloat16  // storage type of C: float, __half or __nv_bfloat16
#endif
#ifndef IS_BF16
#define IS_BF16 1  // 1: the mma takes bf16 (IN_T is __nv_bfloat16), 0: f16
#endif
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is stored M x K (layout n); 1: K x M (layout t)
#endif
#ifndef B_KMAJOR
#define B_KMAJOR 1  // 1: B is stored N x K (layout t, K contiguous); 0: K x N (layout n)
#endif
#ifndef ENGINE_TMA
#define ENGINE_TMA 1  // 1: TMA tensor copies of B (sm_90); 0: 16-byte cp.async (sm_80 and newer)
#endif
#ifndef BN
#define BN 128  // output features (columns of C) per tile: a multiple of 64, at most 256
#endif
#ifndef BK
#define BK 128  // k per stage: a multiple of 64, at most 256
#endif
#ifndef STAGES
#define STAGES 6  // stages of BN x BK elements of B in the ring
#endif
#ifndef CONSUMER_WARPS
#define CONSUMER_WARPS 4  // warps running the mma, each owning BN / CONSUMER_WARPS features
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS (ENGINE_TMA ? 1 : 4)  // warps issuing the copies (TMA: one thread of one warp)
#endif
#ifndef CTAS_PER_SM
#define CTAS_PER_SM 1  // CTAs meant to share an SM (the launch bounds hold registers to that)
#endif
#ifndef MT
#define MT 1  // 8-row tiles of A per mma: 1 for M ≤ 8, 2 for M ≤ 16
#endif
#ifndef B_EVICT_FIRST
#define B_EVICT_FIRST 1  // 1: B's TMA copies ask L2 to evict B first (it is read once); 0: no hint
#endif

#include <gemmtune/kernel_prelude.cuh>  // u32, u64, in_t, out_t, store

typedef B_T b_t;

static_assert(sizeof(b_t) == (FP8 ? 1 : 2) && sizeof(in_t) == sizeof(b_t), "16-bit A and B, or FP8 bytes");
static_assert(!FP8 || (B_KMAJOR && !A_TRANS), "FP8: A stored M x K, B stored N x K (layout nt)");
static_assert(!FP8 || SCALE_MODE == 1 || SCALE_MODE == 2, "FP8: tensor or row scales");

constexpr int ROW_BYTES = 128;                                // one swizzled row of a sub-tile (TMA's 128-byte span)
constexpr int ROW_ELEMS = ROW_BYTES / int(sizeof(b_t));      // elements of B in that row
constexpr int CHUNK_ELEMS = 16 / int(sizeof(b_t));            // elements of B in a 16-byte copy (cp.async)
constexpr int STAGE_BYTES = BN * BK * int(sizeof(b_t));
constexpr int SUB_ROWS = B_KMAJOR ? BN : BK;                  // rows of one 128-byte-wide sub-tile
[[maybe_unused]] constexpr int SUBS = (B_KMAJOR ? BK : BN) / ROW_ELEMS;  // sub-tiles per stage (the TMA producer's boxes)
constexpr int SUB_BYTES = SUB_ROWS * ROW_BYTES;
constexpr int WARP_N = BN / CONSUMER_WARPS;                   // features per consumer warp
constexpr int NT = WARP_N / 16;                               // m16 tiles per consumer warp
constexpr int MMA_K = 32 / int(sizeof(b_t));                 // k per mma: 32 bytes of a row (k16, or k32 in FP8)
constexpr int KSTEPS = BK / MMA_K;                            // mma k steps per stage
constexpr int PAIR_K = 4 / int(sizeof(in_t));                 // k in one 4-byte piece of a fragment
constexpr int THREADS = 32 * (PRODUCER_WARPS + CONSUMER_WARPS);
constexpr int PARTIAL = NT * MT * 4;                          // fp32 partial sums per consumer thread

static_assert(BN % 64 == 0 && BN <= 256, "BN: whole 64-wide sub-tiles, one TMA box of at most 256 rows");
static_assert(BK % 64 == 0 && BK <= 256, "BK: whole 64-wide sub-tiles, one TMA box of at most 256 rows");
static_assert((B_KMAJOR ? BK : BN) % ROW_ELEMS == 0, "a stage is whole 128-byte rows along B's stored rows");
static_assert(WARP_N % 16 == 0 && NT >= 1, "each consumer warp owns whole m16 tiles");
static_assert(SUB_ROWS % 8 == 0, "sub-tiles are whole 1024-byte swizzle atoms");
static_assert(MT == 1 || MT == 2, "M ≤ 16: one or two 8-row tiles of A");
static_assert(STAGES >= 2, "a ring of at least two stages");
static_assert(ENGINE_TMA || STAGE_BYTES % (16 * 32 * PRODUCER_WARPS) == 0, "cp.async: whole 16-byte chunks per producer thread");

struct gt_scalars {  // plugin ABI: eight launch scalars by value (unused here)
  long long v[8];
};
struct __align__(128) gt_tensor_map {  // a CUtensorMap: 128 opaque bytes
  u64 opaque[16];
};


// ---- shared memory, mbarriers, copies ----

__device__ __forceinline__ u32 smem_u32(const void* p) { return u32(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait:\n"
      "mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

#if ENGINE_TMA
// The producer's arrival on a stage's full barrier, announcing the bytes its copies bring.
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#else
  __trap();  // TMA needs sm_90 (decode.cpp asks it only there)
#endif
}
// A 2-D box of B: `inner` elements along a stored row, `outer` rows; out-of-bounds reads zeros.
__device__ __forceinline__ void tma_load(u32 dst, const gt_tensor_map* map, u32 bar, int inner, int outer, u64 policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if B_EVICT_FIRST
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
      "l"(map), "r"(bar), "r"(inner), "r"(outer), "l"(policy)
      : "memory");
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(inner), "r"(outer)
      : "memory");
#endif
#else
  __trap();
#endif
}
__device__ __forceinline__ u64 evict_first_policy() {
  u64 p = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && B_EVICT_FIRST
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
#endif
  return p;
}
#else
// 16 bytes from global to shared memory, of which `bytes` are read and the rest zero.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// Arrives on `bar` once this thread's earlier cp.async have landed (counted as its arrival).
__device__ __forceinline__ void cp_async_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
#endif

// Where chunk `c` (16 bytes) of row `r` of a sub-tile sits: TMA's 128-byte swizzle, whose
// pattern repeats every 8 rows (1024 bytes; every sub-tile starts on such a boundary).
__device__ __forceinline__ u32 swizzled(int r, int c) { return u32(r * ROW_BYTES + ((c ^ (r & 7)) << 4)); }

// ---- the mma ----

__device__ __forceinline__ void ldmatrix_x4(u32 (&a)[4], u32 addr) {
#if B_KMAJOR
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
#endif
}

// d += w x x: w the weights' 16 x (32 bytes) fragment, x the activations' (32 bytes) x 8.
__device__ __forceinline__ void mma_kstep(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if FP8
  // The mma's A is the weights (B's type), its B the activations (A's type).
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." FP8_B_PTX "." FP8_A_PTX
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif IS_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// The weights' fragment of m16 tile `nt` of this warp at k step `t` of a stage: features
// (rows of the mma) i0 .. i0 + 15, bytes 32t .. 32t + 31 of the stage's k (k16, or k32 in
// FP8), from the swizzled stage at `stage`. Lane l addresses one 16-byte row of one of the four
// 8x8 (b16) matrices (a0: features 0-7, bytes 0-15; a1: features 8-15, bytes 0-15; a2:
// features 0-7, bytes 16-31; a3: features 8-15, bytes 16-31): m16n8k16's A fragment, and
// m16n8k32's 8-bit one, which holds the same bytes.
__device__ __forceinline__ void load_w(u32 (&a)[4], u32 stage, int i0, int t, int lane) {
#if B_KMAJOR
  // Stored rows are features, 64 k each per sub-tile: feature i0 + (l & 7) + 8 (l >> 3 & 1),
  // 16-byte chunk 2t + (l >> 4) of the stage's k.
  constexpr int STEPS_PER_SUB = ROW_ELEMS / MMA_K;
  const int r = i0 + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int c = 2 * (t % STEPS_PER_SUB) + (lane >> 4);
  ldmatrix_x4(a, stage + u32(t / STEPS_PER_SUB) * SUB_BYTES + swizzled(r, c));
#else
  // Stored rows are k, 64 features each per sub-tile; .trans turns each 8x8 block around:
  // k row 16t + (l & 7) + 8 (l >> 4), 16-byte chunk of features i0 / 8 + (l >> 3 & 1).
  const int r = 16 * t + (lane & 7) + ((lane >> 4) << 3);
  const int c = (i0 % ROW_ELEMS) / 8 + ((lane >> 3) & 1);
  ldmatrix_x4(a, stage + u32(i0 / ROW_ELEMS) * SUB_BYTES + swizzled(r, c));
#endif
}

#if !FP8
__device__ __forceinline__ u32 bits(in_t x) {
  unsigned short s;
  memcpy(&s, &x, 2);
  return s;
}
#endif

// One 4-byte piece of the mma's B operand: activations of row j at k .. k + PAIR_K - 1 (two
// 16-bit, or four FP8), the lower k in the low bytes; zero past M (rows) and K. K_FULL: the
// piece is known to lie within K.
template <bool K_FULL>
__device__ __forceinline__ u32 x_pair(const in_t* __restrict__ A, int M, int K, int lda, int j, int k) {
  if (j >= M) return 0u;
#if A_TRANS
  const u32 lo = (K_FULL || k < K) ? bits(A[(long long)k * lda + j]) : 0u;
  const u32 hi = (K_FULL || k + 1 < K) ? bits(A[(long long)(k + 1) * lda + j]) : 0u;
  return lo | (hi << 16);
#else
  const in_t* p = A + (long long)j * lda + k;
  if (K_FULL || k + PAIR_K <= K) return __ldg(reinterpret_cast<const u32*>(p));  // 4-byte aligned: rows 16-byte aligned
#if FP8
  return 0u;  // K is a multiple of 16 (16-byte rows): a piece is whole or past K
#else
  return k < K ? bits(*p) : 0u;
#endif
#endif
}

// The activations' fragments of X_STEPS k steps from k0: step t, 8-row tile jt, the piece at
// k0 + MMA_K t + PAIR_K q (b0) and MMA_K / 2 further (b1), rows 8jt + g. A stage takes them X_STEPS steps at a
// time, the next group's loads issued before the current group's mma (registers: a whole
// stage's fragments at MT = 2 and bk = 256 would be 64).
constexpr int X_STEPS = KSTEPS < 4 ? KSTEPS : 4;
constexpr int X_GROUPS = KSTEPS / X_STEPS;
static_assert(KSTEPS % X_STEPS == 0, "whole groups of k steps");
typedef u32 XFrag[X_STEPS][MT][2];

template <bool K_FULL>
__device__ __forceinline__ void load_x(XFrag& x, const in_t* __restrict__ A, int M, int K, int lda, int k0, int g, int q) {
#pragma unroll
  for (int t = 0; t < X_STEPS; ++t)
#pragma unroll
    for (int jt = 0; jt < MT; ++jt) {
      const int j = 8 * jt + g, k = k0 + MMA_K * t + PAIR_K * q;
      x[t][jt][0] = x_pair<K_FULL>(A, M, K, lda, j, k);
      x[t][jt][1] = x_pair<K_FULL>(A, M, K, lda, j, k + MMA_K / 2);
    }
}
__device__ __forceinline__ void load_x_group(XFrag& x, const in_t* __restrict__ A, int M, int K, int lda, int k0,
                                             int g, int q) {
  if (k0 + MMA_K * X_STEPS <= K) load_x<true>(x, A, M, K, lda, k0, g, q);
  else load_x<false>(x, A, M, K, lda, k0, g, q);
}

// ---- the output ----

// Calls f(sum, n, j) for each of a consumer warp's sums d[nt][jt][e]: feature (column of C)
// n = n0 + 16nt + g + 8(e >> 1), row j = 8jt + 2q + (e & 1) of C (the mma's D is C transposed).
template <class Sums, class F>
__device__ __forceinline__ void each_sum(Sums& d, int n0, int g, int q, F f) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int jt = 0; jt < MT; ++jt)
#pragma unroll
      for (int e = 0; e < 4; ++e) f(d[nt][jt][e], n0 + 16 * nt + g + 8 * (e >> 1), 8 * jt + 2 * q + (e & 1));
}

// A consumer warp's sums into C.
__device__ __forceinline__ void store_c(out_t* __restrict__ C, int M, int N, int ldc, const float (&d)[NT][MT][4],
                                        int n0, int g, int q) {
  each_sum(d, n0, g, q, [&](float v, int n, int j) {
    if (j < M && n < N) store(C + (long long)j * ldc + n, v);
  });
}

#if FP8
// FP8: a warp's sums times their scales, before they are written or meet other CTAs' sums.
// Tensor: one factor; row: sa[j] of the row of C, sb[n] of its column (zero past M and N,
// where nothing is written).
__device__ __forceinline__ void scale_sums(float (&d)[NT][MT][4], const gt_scales& sc, int M, int N, int n0, int g,
                                           int q) {
#if SCALE_MODE == 1
  const float f = __ldg(sc.a) * __ldg(sc.b);
  each_sum(d, n0, g, q, [&](float& v, int, int) { v *= f; });
#else
  each_sum(d, n0, g, q, [&](float& v, int n, int j) {
    v *= (j < M ? __ldg(sc.a + j) : 0.f) * (n < N ? __ldg(sc.b + n) : 0.f);
  });
#endif
}
#endif

// ---- the even split ----

// CTA c of P takes blocks [c T / P, (c + 1) T / P) of the T (tile, k block) pairs.
__device__ __forceinline__ long long first_block(long long c, long long T, long long P) { return c * T / P; }
// The CTA whose range holds block s.
__device__ __forceinline__ long long owner(long long s, long long T, long long P) { return ((s + 1) * P - 1) / T; }

// Split tiles: the workspace holds a counter per (tile, consumer warp), then two fp32 slots
// per CTA (0: its first tile, 1: its last), each the consumer threads' partial sums in
// register order ([warp][register][lane], so the stores coalesce). Every contributor writes
// its slot when its part of the tile ends and counts itself in after its range's last block;
// the last adds all contributors' sums in CTA order and writes C, then resets the counter (the
// workspace is zeroed once).
__device__ __forceinline__ float* slot_of(void* ws, int tiles, long long cta, int which, int cw) {
  int* counters = static_cast<int*>(ws);
  float* slots = reinterpret_cast<float*>(counters + ((tiles * CONSUMER_WARPS + 63) / 64) * 64);
  return slots + ((cta * 2 + which) * CONSUMER_WARPS + cw) * (PARTIAL * 32);
}

__device__ __forceinline__ void write_slot(float* slot, const float (&d)[NT][MT][4], int lane) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int jt = 0; jt < MT; ++jt)
#pragma unroll
      for (int e = 0; e < 4; ++e) slot[((nt * MT + jt) * 4 + e) * 32 + lane] = d[nt][jt][e];
}

// A consumer warp's count into split tile `tile` (its slot written and fenced before); the
// last of the tile's contributors adds every contributor's slot in CTA order (the same bits,
// whoever is last), writes C and resets the counter for the next launch. The slots' loads of
// four contributors are in flight at once (unrolled), not one L2 round trip each.
__device__ __forceinline__ void finish_split_tile(out_t* __restrict__ C, int M, int N, int ldc, void* ws, int tiles,
                                               int kblocks, long long T, long long P, int tile, int cw, int lane,
                                               int g, int q) {
  const long long tb0 = (long long)tile * kblocks;
  const long long ca = owner(tb0, T, P), cb = owner(tb0 + kblocks - 1, T, P);
  int* counter = static_cast<int*>(ws) + tile * CONSUMER_WARPS + cw;
  int last = 0;
  if (lane == 0) last = atomicAdd(counter, 1) == int(cb - ca);
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  __threadfence();
  float sum[NT][MT][4] = {};
#pragma unroll 4
  for (long long c = ca; c <= cb; ++c) {
    const float* part = slot_of(ws, tiles, c, tile == int(first_block(c, T, P) / kblocks) ? 0 : 1, cw);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int jt = 0; jt < MT; ++jt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sum[nt][jt][e] += __ldcg(part + ((nt * MT + jt) * 4 + e) * 32 + lane);
  }
  if (lane == 0) *counter = 0;
  store_c(C, M, N, ldc, sum, tile * BN + cw * WARP_N, g, q);
}

// ---- the kernel's stages ----

// The producer: the CTA's blocks [s0, s1), in order, each into the next free stage of the ring
// (TMA: one thread issues a stage's boxes; cp.async: every producer thread a share of its
// 16-byte chunks, zero-filled past N and K).
__device__ __forceinline__ void produce(const void* B_, int N, int K, int ldb, int kblocks, long long s0, long long s1,
                                        u32 ring, u32 full, u32 empty
#if ENGINE_TMA
                                        , const gt_tensor_map& tmB
#endif
) {
#if ENGINE_TMA
  const u64 policy = evict_first_policy();
  (void)B_, (void)N, (void)K, (void)ldb;
#else
  const b_t* __restrict__ B = static_cast<const b_t*>(B_);
  const int pt = threadIdx.x;  // 0 .. 32 * PRODUCER_WARPS - 1
#endif
  int tile = int(s0 / kblocks), kb = int(s0 % kblocks), stage = 0;
  u32 phase = 0;
  for (long long s = s0; s < s1; ++s) {
    mbar_wait(empty + 8 * stage, phase ^ 1);  // a fresh barrier passes parity 1 at once
    const u32 dst = ring + stage * STAGE_BYTES;
#if ENGINE_TMA
    mbar_expect_tx(full + 8 * stage, STAGE_BYTES);  // whole boxes, zero-filled past N and K
#pragma unroll
    for (int sub = 0; sub < SUBS; ++sub) {
#if B_KMAJOR
      tma_load(dst + sub * SUB_BYTES, &tmB, full + 8 * stage, kb * BK + sub * ROW_ELEMS, tile * BN, policy);
#else
      tma_load(dst + sub * SUB_BYTES, &tmB, full + 8 * stage, tile * BN + sub * ROW_ELEMS, kb * BK, policy);
#endif
    }
#else
    // Chunk i: sub-tile i / (8 SUB_ROWS), row i / 8 % SUB_ROWS, 16-byte column i % 8, so that
    // eight neighbouring threads read one 128-byte row segment.
#pragma unroll 4
    for (int i = pt; i < STAGE_BYTES / 16; i += 32 * PRODUCER_WARPS) {
      const int sub = i / (8 * SUB_ROWS), r = (i / 8) % SUB_ROWS, c = i % 8;
#if B_KMAJOR
      const int outer = tile * BN + r, inner = kb * BK + sub * ROW_ELEMS + c * CHUNK_ELEMS;  // feature, k
      const int left = outer < N ? min(max(K - inner, 0), CHUNK_ELEMS) : 0;
#else
      const int outer = kb * BK + r, inner = tile * BN + sub * ROW_ELEMS + c * CHUNK_ELEMS;  // k, feature
      const int left = outer < K ? min(max(N - inner, 0), CHUNK_ELEMS) : 0;
#endif
      const b_t* src = left > 0 ? B + (long long)outer * ldb + inner : B;
      cp_async16(dst + sub * SUB_BYTES + swizzled(r, c), src, u32(left) * u32(sizeof(b_t)));
    }
    cp_async_arrive(full + 8 * stage);
#endif
    if (++stage == STAGES) stage = 0, phase ^= 1;
    if (++kb == kblocks) kb = 0, ++tile;
  }
#if !ENGINE_TMA
  asm volatile("cp.async.wait_all;" ::: "memory");  // no thread leaves with its copies in flight
#endif
}

// A consumer warp's mma over one landed stage (k from k0): the weights by ldmatrix from the
// ring, the activations loaded a group ahead (the first group before the wait, so that its
// loads run while the stage's copies land).
__device__ __forceinline__ void consume_stage(float (&d)[NT][MT][4], const in_t* __restrict__ A, int M, int K, int lda,
                                              int k0, u32 st, u32 full_bar, u32 phase, int cw, int lane, int g, int q) {
  XFrag x[2];
  load_x_group(x[0], A, M, K, lda, k0, g, q);
  mbar_wait(full_bar, phase);
#pragma unroll
  for (int xg = 0; xg < X_GROUPS; ++xg) {
    if (xg + 1 < X_GROUPS) load_x_group(x[(xg + 1) % 2], A, M, K, lda, k0 + MMA_K * X_STEPS * (xg + 1), g, q);
#pragma unroll
    for (int ts = 0; ts < X_STEPS; ++ts)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        u32 a[4];
        load_w(a, st, cw * WARP_N + 16 * nt, xg * X_STEPS + ts, lane);
#pragma unroll
        for (int jt = 0; jt < MT; ++jt) mma_kstep(d[nt][jt], a, x[xg % 2][ts][jt][0], x[xg % 2][ts][jt][1]);
      }
  }
}

__device__ __forceinline__ void zero_sums(float (&d)[NT][MT][4]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int jt = 0; jt < MT; ++jt)
#pragma unroll
      for (int e = 0; e < 4; ++e) d[nt][jt][e] = 0.f;
}

// The consumers: every block of [s0, s1) through the ring; at the end of its part of each tile
// a warp writes C (the whole tile's K was the CTA's) or its slot (a split tile, counted in
// after the range's last block, so that the stream does not stop at a tile boundary for a
// fence and an atomic's round trip).
__device__ __forceinline__ void consume(const in_t* __restrict__ A, out_t* __restrict__ C, int M, int N, int K,
                                        int lda, int ldc, void* workspace, int tiles, int kblocks, long long T,
                                        long long P, long long cta, long long s0, long long s1, u32 ring, u32 full,
                                        u32 empty, int warp, int lane
#if FP8
                                        , const gt_scales& scales
#endif
) {
  const int cw = warp - PRODUCER_WARPS, g = lane / 4, q = lane % 4;
  const int first_tile = int(s0 / kblocks);
  int tile = first_tile, kb = int(s0 % kblocks), stage = 0;
  u32 phase = 0;
  float d[NT][MT][4];
  zero_sums(d);
  // The split tiles this CTA has a part of (-1: none): its first, and its last (scalars, not an
  // array indexed at run time, which would live in local memory).
  int split_first = -1, split_last = -1;
  for (long long s = s0; s < s1; ++s) {
    consume_stage(d, A, M, K, lda, kb * BK, ring + stage * STAGE_BYTES, full + 8 * stage, phase, cw, lane, g, q);
    __syncwarp();  // every lane's ldmatrix of the stage is done
    if (lane == 0) mbar_arrive(empty + 8 * stage);
    if (++stage == STAGES) stage = 0, phase ^= 1;

    if (kb == kblocks - 1 || s == s1 - 1) {  // the end of this CTA's part of the tile
      const int n0 = tile * BN + cw * WARP_N;
#if FP8
      scale_sums(d, scales, M, N, n0, g, q);
#endif
      const long long tb0 = (long long)tile * kblocks;
      if (tb0 >= s0 && tb0 + kblocks <= s1) {
        store_c(C, M, N, ldc, d, n0, g, q);
      } else {
        const bool first = tile == first_tile;
        write_slot(slot_of(workspace, tiles, cta, first ? 0 : 1, cw), d, lane);
        (first ? split_first : split_last) = tile;
      }
      zero_sums(d);
    }
    if (++kb == kblocks) kb = 0, ++tile;
  }

  if (split_first >= 0 || split_last >= 0) {
    __threadfence();  // this warp's slots are visible before its counts are
    __syncwarp();
#pragma unroll
    for (int which = 0; which < 2; ++which) {
      const int t = which == 0 ? split_first : split_last;
      if (t >= 0) finish_split_tile(C, M, N, ldc, workspace, tiles, kblocks, T, P, t, cw, lane, g, q);
    }
  }
}

// ---- the kernel ----

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
    gemm_decode(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc,
                void* workspace, const gt_scalars scalars
#if FP8
                , const gt_scales scales  // plugin ABI v3: after the scalars, before the map
#endif
#if ENGINE_TMA
                , const __grid_constant__ gt_tensor_map tmB
#endif
    ) {
  (void)scalars;
  extern __shared__ unsigned char smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes of the address: the ring starts 1024-aligned.
  const u32 ring = (smem_u32(smem_raw) + 1023) & ~1023u;
  const u32 full = ring + STAGES * STAGE_BYTES;  // STAGES barriers of 8 bytes
  const u32 empty = full + 8 * STAGES;

  const int tiles = (N + BN - 1) / BN, kblocks = (K + BK - 1) / BK;
  const long long T = (long long)tiles * kblocks, cta = blockIdx.x;
  // decode.cpp launches at most T CTAs; were there more, the extra ones would own no block and
  // a split tile would wait for an arrival that never comes, so they leave.
  const long long P = min((long long)gridDim.x, T);
  if (cta >= P) return;
  const long long s0 = first_block(cta, T, P), s1 = first_block(cta + 1, T, P);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, ENGINE_TMA ? 1 : 32 * PRODUCER_WARPS);
      mbar_init(empty + 8 * s, CONSUMER_WARPS);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
  }
  __syncthreads();

  if (warp < PRODUCER_WARPS) {
#if ENGINE_TMA
    if (lane != 0) return;
    produce(B_, N, K, ldb, kblocks, s0, s1, ring, full, empty, tmB);
#else
    produce(B_, N, K, ldb, kblocks, s0, s1, ring, full, empty);
#endif
    return;
  }
  consume(static_cast<const in_t*>(A_), static_cast<out_t*>(C_), M, N, K, lda, ldc, workspace, tiles, kblocks, T, P,
          cta, s0, s1, ring, full, empty, warp, lane
#if FP8
          , scales
#endif
  );
}
