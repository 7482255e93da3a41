// wgmma_tma: the tile schedule (units of work: a tile of C and its range of k tiles) and the
// producer, whose one thread copies every stage of the ring with TMA. Part of wgmma_tma.cu's
// kernel (included after its defines and constants; the plugin build copies it into the
// embedded source).

// One unit of work: a tile of C (this CTA's part of a cluster tile) and its range of k tiles.
struct Unit {
  int mb, nb;          // tile row and column (in BM x BN tiles)
  int kt_begin, kt_end;  // k tiles [begin, end) of 64
  int split;           // index of the split (0 when not split)
};

struct Schedule {
  int cm_count, cn_count;  // cluster tiles along M and N
  int k_tiles, splits, raster, group;
  long long units;

  __device__ Schedule(int M, int N, int K, const gt_scalars& s) {
    cm_count = (M + BM * CLUSTER_M - 1) / (BM * CLUSTER_M);
    cn_count = (N + BN * CLUSTER_N - 1) / (BN * CLUSTER_N);
    k_tiles = (K + BK - 1) / BK;
    raster = int(s.v[kRaster]);
    group = s.v[kGroup] > 0 ? int(s.v[kGroup]) : 1;
    splits = s.v[kSplits] > 0 ? int(s.v[kSplits]) : 1;
    units = (long long)cm_count * cn_count * splits;
  }

  // Units are numbered split-fastest (a tile's splits run side by side, so their partials
  // meet in L2), then over cluster tiles in groups: along M, `group` cluster rows are walked
  // before moving one column right (along N the same with the roles swapped), so the tiles in
  // flight share operands in L2.
  __device__ Unit unit(long long u, u32 rank) const {
    Unit w;
    w.split = int(u % splits);
    const long long t = u / splits;
    const int major = raster == 0 ? cm_count : cn_count, minor = raster == 0 ? cn_count : cm_count;
    const long long per_group = (long long)group * minor;
    const int g = int(t / per_group);
    const int first = g * group;
    const int rows = min(major - first, group);
    const int local = int(t % per_group);
    const int a = first + local % rows, b = local / rows;
    const int cm = raster == 0 ? a : b, cn = raster == 0 ? b : a;
    w.mb = cm * CLUSTER_M + rank_m(rank);
    w.nb = cn * CLUSTER_N + rank_n(rank);
    w.kt_begin = int((long long)k_tiles * w.split / splits);
    w.kt_end = int((long long)k_tiles * (w.split + 1) / splits);
    return w;
  }
};

// ---- producer: one thread copies every stage ----

__device__ __forceinline__ void load_stage(const gt_tensor_map* tmA, const gt_tensor_map* tmB, u32 a_dst, u32 b_dst,
                                           u32 full, const Unit& w, int kt, u32 rank) {
  const int k0 = kt * BK;
  // A: shared by the CLUSTER_N CTAs of this CTA's row of the cluster (1x2, 1x4, 2x2), each
  // copying one slice to all of them; else this CTA's own.
  {
    const u32 slice = A_SLICES > 1 ? u32(rank_n(rank)) : 0;
    const unsigned short mask = a_mask(rank);
#if A_KMAJOR
    constexpr int rows = BM / A_SLICES;
    const u32 dst = a_dst + slice * rows * 128;
    if (A_SLICES > 1) tma_load_multicast(dst, tmA, full, k0, w.mb * BM + int(slice) * rows, mask);
    else tma_load(dst, tmA, full, k0, w.mb * BM);
#else
    constexpr int krows = BK / A_SLICES;
#pragma unroll
    for (int j = 0; j < BM / 64; ++j) {
      const u32 dst = a_dst + j * 8192 + slice * krows * 128;
      if (A_SLICES > 1) tma_load_multicast(dst, tmA, full, w.mb * BM + j * 64, k0 + int(slice) * krows, mask);
      else tma_load(dst, tmA, full, w.mb * BM + j * 64, k0);
    }
#endif
  }
  // B: shared by the CLUSTER_M CTAs of this CTA's column of the cluster (2x1, 4x1, 2x2).
  {
    const u32 slice = B_SLICES > 1 ? u32(rank_m(rank)) : 0;
    const unsigned short mask = b_mask(rank);
#if B_KMAJOR
    constexpr int rows = BN / B_SLICES;
    const u32 dst = b_dst + slice * rows * 128;
    if (B_SLICES > 1) tma_load_multicast(dst, tmB, full, k0, w.nb * BN + int(slice) * rows, mask);
    else tma_load(dst, tmB, full, k0, w.nb * BN);
#else
    constexpr int krows = BK / B_SLICES;
#pragma unroll
    for (int j = 0; j < BN / 64; ++j) {
      const u32 dst = b_dst + j * 8192 + slice * krows * 128;
      if (B_SLICES > 1) tma_load_multicast(dst, tmB, full, w.nb * BN + j * 64, k0 + int(slice) * krows, mask);
      else tma_load(dst, tmB, full, w.nb * BN + j * 64, k0);
    }
#endif
  }
}

__device__ void produce(const Schedule& sch, const gt_tensor_map* tmA, const gt_tensor_map* tmB, u32 stages,
                        u32 full, u32 empty, u32 rank, long long first, long long stride) {
  int stage = 0;
  u32 phase = 0;
  for (long long u = first; u < sch.units; u += stride) {
    const Unit w = sch.unit(u, rank);
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      // Wait until every consumer of the cluster has released this stage (a fresh barrier
      // passes the wait on parity 1 at once).
      mbar_wait(empty + 8 * stage, phase ^ 1);
      mbar_expect_tx(full + 8 * stage, STAGE_BYTES);
      const u32 a_dst = stages + stage * STAGE_BYTES;
      load_stage(tmA, tmB, a_dst, a_dst + A_STAGE_BYTES, full + 8 * stage, w, kt, rank);
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
  }
}
