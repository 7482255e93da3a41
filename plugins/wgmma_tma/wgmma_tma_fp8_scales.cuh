// wgmma_tma: FP8 scales (per tensor, row, or 1x128 / 128x128 block) applied to a consumer's
// accumulators. Part of wgmma_tma.cu's kernel when FP8=1 (included after its defines and
// constants; the plugin build copies it into the embedded source).

#if FP8
// ---- FP8 scales ----
//
// A consumer thread's accumulators (the m64nN layout: store_tile, wgmma_tma_epilogue.cuh) cover, per m64 tile s, rows
// row0 + 64s + 16 warp + lane/4 + {0, 8} and columns col0 + 8j + 2(lane % 4) + {0, 1}. Rows and
// columns past M and N read no scale (theirs are never stored). plugin_abi.h gives the layouts:
// TENSOR sa[0], sb[0]; ROW sa[m], sb[n]; BLOCK sa[kb * M + m], sb[(n / 128) * KB4 + kb].

// One k block's scales for a thread, as loaded (the products are formed when they are used, so
// the loads of the next block do not stall the current one).
struct BlockScales {
  float a[M_SUB][2];  // sa of the thread's rows
  float b[2];         // sb of the consumer's first 128-column block of B and the one after it
};

__device__ __forceinline__ float load_scale(const float* p) { return __ldg(p); }

struct BlockCursor;

struct Scales {
  const float* sa;
  const float* sb;
  int M, N;
  int kb4;         // BLOCK: rows of B's block scales (KB rounded up to a multiple of 4)
  int nb;          // BLOCK: 128-column blocks of B
  int roff, coff;  // the thread's first row and column within an m64 x WN tile
#if SCALE_MODE == 1
  float ta, tb;
#endif

  __device__ Scales(const gt_scales& s, int M_, int N_, int K, int tid) : sa(s.a), sb(s.b), M(M_), N(N_) {
    const int kb = (K + 127) / 128;
    kb4 = (kb + 3) & ~3;
    nb = (N + 127) / 128;
    roff = (tid / 32) * 16 + (tid % 32) / 4;
    coff = 2 * (tid % 4);
#if SCALE_MODE == 1
    ta = load_scale(sa);
    tb = load_scale(sb);
#endif
  }

  // TENSOR and ROW: the unit's sums times their scales.
  __device__ __forceinline__ void apply(float* acc, int row0, int col0) const {
#if SCALE_MODE == 1
    const float t = ta * tb;
#pragma unroll
    for (int r = 0; r < M_SUB * ACC; ++r) acc[r] *= t;
#else
    float fa[M_SUB][2];
#pragma unroll
    for (int s = 0; s < M_SUB; ++s)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = row0 + s * 64 + roff + 8 * i;
        fa[s][i] = row < M ? load_scale(sa + row) : 0.f;
      }
#pragma unroll
    for (int j = 0; j < WN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = col0 + 8 * j + coff + e;
        const float fb = col < N ? load_scale(sb + col) : 0.f;
#pragma unroll
        for (int s = 0; s < M_SUB; ++s)
#pragma unroll
          for (int i = 0; i < 2; ++i) acc[s * ACC + 4 * j + 2 * i + e] *= fa[s][i] * fb;
      }
#endif
  }

  // ROW: pull the unit's row and column scales towards the SM while its k loop runs (a hint;
  // the epilogue's loads then hit L1 rather than wait on L2 after the last wgmma).
  __device__ __forceinline__ void prefetch(int row0, int col0, int tid) const {
#if SCALE_MODE == 2
    const int lines_a = WM / 32;  // 128-byte lines of the consumer's row scales
    if (tid < lines_a) {
      const int row = row0 + 32 * tid;
      if (row < M) asm volatile("prefetch.global.L1 [%0];" ::"l"(sa + row));
    } else if (tid < lines_a + WN / 32) {
      const int col = col0 + 32 * (tid - lines_a);
      if (col < N) asm volatile("prefetch.global.L1 [%0];" ::"l"(sb + col));
    }
#endif
  }

  // BLOCK: where this thread's scales of k block `kb` are (see BlockCursor).
  __device__ __forceinline__ BlockCursor cursor(int kb, int row0, int col0) const;
};

// BLOCK: a thread's way through the block scales of one unit, k block by k block. The rows and
// columns stay and only k moves, so each block's loads are at fixed offsets from two pointers
// that advance by M (A: M contiguous) and by 1 (B: rows of KB4): a few integer instructions a
// stage rather than the indices' 64-bit arithmetic per load.
struct BlockCursor {
  const float* a;  // &sa[kb * M + row0 + roff]: the thread's first row (more at +64s, +8i)
  const float* b;  // &sb[cb * KB4 + kb]: the consumer's first 128-column block of B (the next at +KB4)
  int a_step, b1;  // M; KB4
  // Bit 2s + i: row 64s + 8i of the thread's lies inside C; bits 30, 31: the first and the
  // second column block exist. (One word: the single-consumer m64n192 build has no register
  // to spare beside its two sets of 96 accumulators.)
  unsigned in;

  __device__ __forceinline__ BlockScales load() const {
    BlockScales r;
#pragma unroll
    for (int s = 0; s < M_SUB; ++s)
#pragma unroll
      for (int i = 0; i < 2; ++i) r.a[s][i] = (in >> (2 * s + i)) & 1u ? load_scale(a + s * 64 + 8 * i) : 0.f;
    r.b[0] = (in >> 30) & 1u ? load_scale(b) : 0.f;
    r.b[1] = (in >> 31) & 1u ? load_scale(b + b1) : 0.f;
    return r;
  }
  __device__ __forceinline__ void next() {
    a += a_step;
    ++b;
  }
};

__device__ __forceinline__ BlockCursor Scales::cursor(int kb, int row0, int col0) const {
  BlockCursor c;
  const int row = row0 + roff;
  c.a = sa + (long long)kb * M + row;
  c.a_step = M;
  c.in = 0;
#pragma unroll
  for (int s = 0; s < M_SUB; ++s)
#pragma unroll
    for (int i = 0; i < 2; ++i) c.in |= (row + s * 64 + 8 * i < M ? 1u : 0u) << (2 * s + i);
  const int cb = col0 >> 7;
  c.b = sb + (long long)cb * kb4 + kb;
  c.b1 = kb4;
  c.in |= (cb < nb ? 1u : 0u) << 30;
  // The second block: for 192 columns always, for 128 only when they start mid-block.
  c.in |= ((WN > 128 || (WN > 64 && (col0 & 127) != 0)) && cb + 1 < nb ? 1u : 0u) << 31;
  return c;
}

// BLOCK: acc += part x the block's scales. The consumer's columns start at a multiple of 64,
// so its 64-column group g lies in 128-column block (h + g) / 2 of its own, h = 1 when it
// starts in the middle of one: group 0 in the first, group 2 in the second, group 1 in either.
__device__ __forceinline__ void promote(float* acc, const float* part, const BlockScales& bs, int col0) {
  constexpr int GROUPS = WN / 64;
  const bool h = (col0 & 127) != 0;
  float fb[GROUPS];
#pragma unroll
  for (int g = 0; g < GROUPS; ++g) fb[g] = g == 0 ? bs.b[0] : g >= 2 ? bs.b[1] : (h ? bs.b[1] : bs.b[0]);
#pragma unroll
  for (int s = 0; s < M_SUB; ++s)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float f[GROUPS];
#pragma unroll
      for (int g = 0; g < GROUPS; ++g) f[g] = bs.a[s][i] * fb[g];
#pragma unroll
      for (int j = 0; j < WN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = s * ACC + 4 * j + 2 * i + e;
          acc[r] = fmaf(part[r], f[j / 8], acc[r]);
        }
    }
}
#endif
