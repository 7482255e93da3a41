// register_tile: SIMT fp32 GEMM with a block tile in shared memory, a warp tile, and a
// thread tile of accumulators in registers. The lab's fourth rung, grown into the shape of a
// fast SGEMM: A is stored transposed in shared memory so both operands are read along their
// tile's long side with vector loads (LDS.128), the thread tile is optionally cut into 4-wide
// sub-blocks spread across the warp tile (conflict-free LDS.128), the k-loop of a tile is
// unrolled with the next k's fragments loaded while the current FFMAs issue, and global ->
// shared copies are single-buffered, register-staged double-buffered, or cp.async multi-stage.
//
// Every define has a default (the family's default config at layout nn), so the file
// compiles on its own; register_tile.cpp sets and checks each (static_asserts repeat the
// divisibility rules).
#ifndef A_TRANS
#define A_TRANS 0  // 0: A is M×K row-major; 1: A is K×M row-major
#endif
#ifndef B_TRANS
#define B_TRANS 0  // 0: B is K×N row-major; 1: B is N×K row-major
#endif
#ifndef BM
#define BM 128  // block tile: rows of C
#endif
#ifndef BN
#define BN 128  // block tile: columns of C
#endif
#ifndef BK
#define BK 8  // depth of one k-step
#endif
#ifndef TM
#define TM 8  // thread tile: accumulators per thread along M
#endif
#ifndef TN
#define TN 8  // thread tile: accumulators per thread along N
#endif
#ifndef WTM
#define WTM 4  // lanes of a warp along M (32 / WTM along N); warp tile = (WTM·TM)×(WTN·TN)
#endif
#ifndef TM_SUB
#define TM_SUB 4  // contiguous run of a thread's rows; TM/TM_SUB sub-blocks sit WTM·TM_SUB rows apart
#endif
#ifndef TN_SUB
#define TN_SUB 4  // contiguous run of a thread's columns
#endif
#ifndef VEC
#define VEC 4  // global-load width in floats (1, 2, 4), along each operand's contiguous axis
#endif
#ifndef PIPE
#define PIPE 2  // 0: single buffer, 1: register-staged double buffer, 2: cp.async, STAGES deep
#endif
#ifndef STAGES
#define STAGES 3  // shared-memory buffers (1, 2, or 2..4 for cp.async)
#endif
#ifndef PAD_A
#define PAD_A 4  // floats of padding per shared-memory row of A (kills transposed-store conflicts)
#endif
#ifndef PAD_B
#define PAD_B 0  // floats of padding per shared-memory row of B
#endif
#ifndef SWZ
#define SWZ 8  // rasterisation: block rows grouped SWZ at a time (1: row-major order)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2  // blocks per SM promised to ptxas (__launch_bounds__), which caps registers
#endif
#ifndef CVEC
#define CVEC 4  // width of the stores to C in floats (1, 2, 4)
#endif
#define HALF_TYPES 0  // f32 only: the 16-bit headers would only lengthen the compile

#include <gemmtune/kernel_prelude.cuh>

constexpr int kWTN = 32 / WTM;
constexpr int kWM = WTM * TM;  // warp tile
constexpr int kWN = kWTN * TN;
constexpr int kWarpsM = BM / kWM;
constexpr int kWarpsN = BN / kWN;
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kSubM = TM / TM_SUB;  // sub-blocks of a thread tile
constexpr int kSubN = TN / TN_SUB;
constexpr int kSubStrideM = WTM * TM_SUB;  // distance between a thread's sub-blocks
constexpr int kSubStrideN = kWTN * TN_SUB;
constexpr int kAsLd = BM + PAD_A;  // shared memory: As[BK][BM + PAD_A], Bs[BK][BN + PAD_B]
constexpr int kBsLd = BN + PAD_B;
constexpr int kAStage = BK * kAsLd;
constexpr int kStage = kAStage + BK * kBsLd;

static_assert(32 % WTM == 0, "WTM divides a warp");
static_assert(BM % kWM == 0 && BN % kWN == 0, "the warp tile divides the block tile");
static_assert(TM % TM_SUB == 0 && TN % TN_SUB == 0, "sub-blocks divide the thread tile");
static_assert(kAsLd % 4 == 0 && kBsLd % 4 == 0, "rows stay 16-byte aligned for LDS.128");
static_assert(TN_SUB % CVEC == 0, "C stores never straddle a sub-block");

// Operand transposition in shared memory: As is [k][m] and Bs is [k][n], whatever the layout.
// A stored M×K (A_TRANS=0) and B stored N×K (B_TRANS=1) have k contiguous in global memory and
// are transposed on the way in; the others are copied row for row.
constexpr bool kATransStore = !A_TRANS;
constexpr bool kBTransStore = B_TRANS;
// cp.async copies bytes without rearranging them: a transposed operand goes 4 bytes at a time.
constexpr int kLvA = (PIPE == 2 && kATransStore) ? 1 : VEC;
constexpr int kLvB = (PIPE == 2 && kBTransStore) ? 1 : VEC;

template <int W>
struct VecT;
template <> struct VecT<1> { using type = float; };
template <> struct VecT<2> { using type = float2; };
template <> struct VecT<4> { using type = float4; };

template <int W>
__device__ __forceinline__ void load_vec(float* dst, const float* src) {
  typename VecT<W>::type v = *reinterpret_cast<const typename VecT<W>::type*>(src);
  const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
  for (int e = 0; e < W; ++e) dst[e] = f[e];
}
template <int W>
__device__ __forceinline__ void store_vec(float* dst, const float* src) {
  typename VecT<W>::type v;
  float* f = reinterpret_cast<float*>(&v);
#pragma unroll
  for (int e = 0; e < W; ++e) f[e] = src[e];
  *reinterpret_cast<typename VecT<W>::type*>(dst) = v;
}
// W consecutive floats from shared memory in the widest loads alignment allows (W ≤ 4 is
// aligned to W floats; longer runs to 16 bytes).
template <int W>
__device__ __forceinline__ void lds_run(float* dst, const float* src) {
  if constexpr (W <= 4) {
    load_vec<W>(dst, src);
  } else {
#pragma unroll
    for (int e = 0; e < W; e += 4) load_vec<4>(dst + e, src + e);
  }
}

template <int BYTES>
__device__ __forceinline__ void cp_async(float* smem, const float* gmem, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  // src_bytes < BYTES zero-fills the rest: that is how edge tiles get their zeros.
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(BYTES), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// One operand's tile as stored in global memory: OUTER rows of INNER contiguous elements,
// copied by all kThreads threads, LV elements per copy, into shared memory with leading
// dimension SLD, as is ([outer][inner]) or transposed ([inner][outer]).
// Copy l of thread t covers vector v = l·kThreads + t: row v / kVecPerRow, column
// (v % kVecPerRow)·LV. Both counts are powers of two, so that splits into a thread part
// (row0, col0) and a compile-time part (drow(l), dcol(l)).
// The state is one pointer: the edge checks take the valid extent from the caller, which
// knows it from the loop counter, so interior tiles pay for no bookkeeping registers.
template <int OUTER, int INNER, int LV, bool TRANS, int SLD>
struct TileCopy {
  static constexpr int kVecPerRow = INNER / LV;
  static constexpr int kCopies = OUTER * INNER / (kThreads * LV);
  static_assert(INNER % LV == 0, "a row is whole vectors");
  static_assert((OUTER * INNER) % (kThreads * LV) == 0 && kCopies >= 1, "the tile splits evenly over the threads");
  static_assert(kThreads % kVecPerRow == 0 || kVecPerRow % kThreads == 0, "powers of two");
  __device__ static constexpr int drow(int l) {
    return kThreads % kVecPerRow == 0 ? l * (kThreads / kVecPerRow) : l / (kVecPerRow / kThreads);
  }
  __device__ static constexpr int dcol(int l) {
    return kThreads % kVecPerRow == 0 ? 0 : (l % (kVecPerRow / kThreads)) * kThreads * LV;
  }
  __device__ static constexpr int sidx(int l, int e) {
    return TRANS ? (dcol(l) + e) * SLD + drow(l) : drow(l) * SLD + dcol(l) + e;
  }

  const float* g;  // this thread's first element of the next tile: tile origin + row0·ld + col0
  int ld;
  int row0, col0;
  int soff;  // this thread's shared-memory offset

  __device__ __forceinline__ TileCopy(const float* origin, int ld_, int t) : ld(ld_) {
    if (kThreads % kVecPerRow == 0) {
      row0 = t / kVecPerRow;
      col0 = (t % kVecPerRow) * LV;
    } else {
      row0 = 0;
      col0 = t * LV;
    }
    g = origin + (long long)row0 * ld + col0;
    soff = TRANS ? col0 * SLD + row0 : row0 * SLD + col0;
  }
  __device__ __forceinline__ const float* src(int l) const { return g + (long long)drow(l) * ld + dcol(l); }
  // Valid elements of copy l in a tile with rows_left rows and cols_left columns in range:
  // LV, fewer at the last column, 0 past the last row or column.
  __device__ __forceinline__ int valid(int l, int rows_left, int cols_left) const {
    return row0 + drow(l) < rows_left ? max(0, min(LV, cols_left - (col0 + dcol(l)))) : 0;
  }
  // The next tile is n rows (k is the outer axis) or n columns further on.
  __device__ __forceinline__ void next_rows(int n) { g += (long long)n * ld; }
  __device__ __forceinline__ void next_cols(int n) { g += n; }

  // Global -> registers; the edge version puts zeros outside the matrix.
  __device__ __forceinline__ void load(float (&r)[kCopies][LV]) const {
#pragma unroll
    for (int l = 0; l < kCopies; ++l) load_vec<LV>(r[l], src(l));
  }
  __device__ __forceinline__ void load_edge(float (&r)[kCopies][LV], int rows_left, int cols_left) const {
#pragma unroll
    for (int l = 0; l < kCopies; ++l) {
      const int n = valid(l, rows_left, cols_left);
      const float* p = src(l);
#pragma unroll
      for (int e = 0; e < LV; ++e) r[l][e] = e < n ? p[e] : 0.f;
    }
  }
  // Registers -> shared memory.
  __device__ __forceinline__ void store(float* s, const float (&r)[kCopies][LV]) const {
#pragma unroll
    for (int l = 0; l < kCopies; ++l) {
      if (TRANS) {
#pragma unroll
        for (int e = 0; e < LV; ++e) s[soff + sidx(l, e)] = r[l][e];
      } else {
        store_vec<LV>(s + soff + sidx(l, 0), r[l]);
      }
    }
  }
  // Global -> shared memory with cp.async; the edge version zero-fills outside the matrix
  // and reads nothing there (`safe` is a valid address for copies of 0 bytes).
  __device__ __forceinline__ void copy_async(float* s) const {
    static_assert(PIPE != 2 || !TRANS || LV == 1, "cp.async cannot transpose a vector");
#pragma unroll
    for (int l = 0; l < kCopies; ++l) cp_async<LV * 4>(s + soff + sidx(l, 0), src(l), LV * 4);
  }
  __device__ __forceinline__ void copy_async_edge(float* s, const float* safe, int rows_left, int cols_left) const {
#pragma unroll
    for (int l = 0; l < kCopies; ++l) {
      const int n = valid(l, rows_left, cols_left);
      cp_async<LV * 4>(s + soff + sidx(l, 0), n > 0 ? src(l) : safe, n * 4);
    }
  }
};

// A: outer×inner = BM×BK (k contiguous, transposed into As) or BK×BM (m contiguous).
using ACopy = TileCopy<A_TRANS ? BK : BM, A_TRANS ? BM : BK, kLvA, kATransStore, kAsLd>;
// B: BK×BN (n contiguous) or BN×BK (k contiguous, transposed into Bs).
using BCopy = TileCopy<B_TRANS ? BN : BK, B_TRANS ? BK : BN, kLvB, kBTransStore, kBsLd>;

// Both operands' copies and the block's place in the matrices: what it takes to move the
// tile starting at k0 into shared memory, interior tiles without any range checks.
struct Copier {
  ACopy a;
  BCopy b;
  const float* A;
  const float* B;
  int M, N, K, m0, n0;
  bool mn_full;  // the block's rows and columns are all inside C

  __device__ __forceinline__ Copier(const float* A_, const float* B_, int lda, int ldb, int M_, int N_, int K_, int m0_,
                                    int n0_, int t)
      : a(A_TRANS ? A_ + m0_ : A_ + (long long)m0_ * lda, lda, t),
        b(B_TRANS ? B_ + (long long)n0_ * ldb : B_ + n0_, ldb, t),
        A(A_), B(B_), M(M_), N(N_), K(K_), m0(m0_), n0(n0_),
        mn_full(m0_ + BM <= M_ && n0_ + BN <= N_) {}

  __device__ __forceinline__ bool full(int k0) const { return mn_full && k0 + BK <= K; }
  // Rows and columns in range of the tiles at k0, as each operand is stored.
  __device__ __forceinline__ int a_rows(int k0) const { return A_TRANS ? K - k0 : M - m0; }
  __device__ __forceinline__ int a_cols(int k0) const { return A_TRANS ? M - m0 : K - k0; }
  __device__ __forceinline__ int b_rows(int k0) const { return B_TRANS ? N - n0 : K - k0; }
  __device__ __forceinline__ int b_cols(int k0) const { return B_TRANS ? K - k0 : N - n0; }
  __device__ __forceinline__ void next() {
    if (A_TRANS) a.next_rows(BK); else a.next_cols(BK);
    if (B_TRANS) b.next_cols(BK); else b.next_rows(BK);
  }

  __device__ __forceinline__ void copy_async(float* s, int k0) {
    if (full(k0)) {
      a.copy_async(s);
      b.copy_async(s + kAStage);
    } else {
      a.copy_async_edge(s, A, a_rows(k0), a_cols(k0));
      b.copy_async_edge(s + kAStage, B, b_rows(k0), b_cols(k0));
    }
    next();
  }
  __device__ __forceinline__ void load(float (&ra)[ACopy::kCopies][kLvA], float (&rb)[BCopy::kCopies][kLvB], int k0) {
    if (full(k0)) {
      a.load(ra);
      b.load(rb);
    } else {
      a.load_edge(ra, a_rows(k0), a_cols(k0));
      b.load_edge(rb, b_rows(k0), b_cols(k0));
    }
    next();
  }
  __device__ __forceinline__ void store(float* s, const float (&ra)[ACopy::kCopies][kLvA],
                                        const float (&rb)[BCopy::kCopies][kLvB]) const {
    a.store(s, ra);
    b.store(s + kAStage, rb);
  }
};

// Fragments of one k: the thread's TM values of A and TN values of B, sub-block by sub-block.
__device__ __forceinline__ void load_frags(float (&a)[TM], float (&b)[TN], const float* as, const float* bs) {
#pragma unroll
  for (int s = 0; s < kSubM; ++s) lds_run<TM_SUB>(a + s * TM_SUB, as + s * kSubStrideM);
#pragma unroll
  for (int s = 0; s < kSubN; ++s) lds_run<TN_SUB>(b + s * TN_SUB, bs + s * kSubStrideN);
}

// All BK steps of one shared-memory tile; the next k's fragments load while this k's FFMAs issue.
__device__ __forceinline__ void compute_tile(float (&acc)[TM][TN], const float* as, const float* bs) {
  float a[2][TM], b[2][TN];
  load_frags(a[0], b[0], as, bs);
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    if (k + 1 < BK) load_frags(a[(k + 1) & 1], b[(k + 1) & 1], as + (k + 1) * kAsLd, bs + (k + 1) * kBsLd);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[k & 1][i], b[k & 1][j], acc[i][j]);
  }
}

// Block coordinates. SWZ > 1 walks SWZ block rows column by column before moving on, so
// blocks running together share panels of A and B in L2.
__device__ __forceinline__ void block_coords(int gm, int gn, int& bm, int& bn) {
  const long long bid = blockIdx.x;
  if (SWZ > 1) {
    const long long per_group = (long long)SWZ * gn;
    const long long group = bid / per_group;
    const int first = int(group * SWZ);
    const int rows = min(gm - first, SWZ);
    const int local = int(bid - group * per_group);
    bm = first + local % rows;
    bn = local / rows;
  } else {
    bm = int(bid / gn);
    bn = int(bid - (long long)bm * gn);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
gemm_register_tile(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const float* __restrict__ A = static_cast<const float*>(A_);
  const float* __restrict__ B = static_cast<const float*>(B_);
  float* __restrict__ C = static_cast<float*>(C_);

  int bmi, bni;
  block_coords((M + BM - 1) / BM, (N + BN - 1) / BN, bmi, bni);
  const int m0 = bmi * BM, n0 = bni * BN;
  const int t = threadIdx.x;
  const int warp = t / 32, lane = t % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  const int lm = lane / kWTN, ln = lane % kWTN;
  // This thread's first row and column inside the block tile.
  const int a_off = wm * kWM + lm * TM_SUB;
  const int b_off = wn * kWN + ln * TN_SUB;

  Copier cp(A, B, lda, ldb, M, N, K, m0, n0, t);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const int ktiles = (K + BK - 1) / BK;
#if PIPE == 2
  // cp.async ring of STAGES tiles: tile kt lives in stage kt % STAGES. One commit group per
  // tile (empty past the end, so the group count stays uniform for wait_group).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) cp.copy_async(smem + s * kStage, s * BK);
    cp_async_commit();
  }
#pragma unroll 1
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // tile kt has landed (this thread's part) ...
    __syncthreads();              // ... everyone's part, and everyone is done with tile kt-1's stage
    if (kt + STAGES - 1 < ktiles) cp.copy_async(smem + ((kt + STAGES - 1) % STAGES) * kStage, (kt + STAGES - 1) * BK);
    cp_async_commit();
    const int read = kt % STAGES;
    compute_tile(acc, smem + read * kStage + a_off, smem + read * kStage + kAStage + b_off);
  }
#elif PIPE == 1
  // Two stages; tile kt+1 travels through registers while tile kt is computed.
  float ra[ACopy::kCopies][kLvA], rb[BCopy::kCopies][kLvB];
  cp.load(ra, rb, 0);
  cp.store(smem, ra, rb);
  __syncthreads();
  int read = 0;
#pragma unroll 1
  for (int kt = 0; kt < ktiles; ++kt) {
    const bool more = kt + 1 < ktiles;
    if (more) cp.load(ra, rb, (kt + 1) * BK);
    compute_tile(acc, smem + read * kStage + a_off, smem + read * kStage + kAStage + b_off);
    read ^= 1;
    if (more) cp.store(smem + read * kStage, ra, rb);
    __syncthreads();
  }
#else
  // One stage: load, wait, compute, wait.
  float ra[ACopy::kCopies][kLvA], rb[BCopy::kCopies][kLvB];
#pragma unroll 1
  for (int kt = 0; kt < ktiles; ++kt) {
    cp.load(ra, rb, kt * BK);
    cp.store(smem, ra, rb);
    __syncthreads();
    compute_tile(acc, smem + a_off, smem + kAStage + b_off);
    __syncthreads();
  }
#endif

  // Epilogue: every in-range element of C written once, CVEC floats at a time where whole.
  const int row0 = m0 + a_off, col0 = n0 + b_off;
#pragma unroll
  for (int si = 0; si < kSubM; ++si)
#pragma unroll
    for (int ii = 0; ii < TM_SUB; ++ii) {
      const int r = row0 + si * kSubStrideM + ii;
      if (r >= M) continue;
      float* crow = C + (long long)r * ldc;
      const int i = si * TM_SUB + ii;
#pragma unroll
      for (int sj = 0; sj < kSubN; ++sj)
#pragma unroll
        for (int jj = 0; jj < TN_SUB; jj += CVEC) {
          const int c = col0 + sj * kSubStrideN + jj;
          const int j = sj * TN_SUB + jj;
          if (c + CVEC <= N) {
            store_vec<CVEC>(crow + c, &acc[i][j]);
          } else {
#pragma unroll
            for (int e = 0; e < CVEC; ++e)
              if (c + e < N) crow[c + e] = acc[i][j + e];
          }
        }
    }
}
