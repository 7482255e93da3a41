// wgmma_tma: a consumer warpgroup: for each of its units, wgmma over the ring's stages as the
// producer fills them (releasing each stage once read), then the scales, split-K and the
// epilogue. Part of wgmma_tma.cu's kernel (included after its defines, constants and the other
// parts; the plugin build copies it into the embedded source).

// A k16 step (FP8: k32) is 32 bytes along a K-major row, two 1024-byte groups of 8 k rows in an
// MN-major block (16-bit only).
constexpr u32 A_KSTEP = A_KMAJOR ? 32 : 2048, B_KSTEP = B_KMAJOR ? 32 : 2048;

// Where a consumer's wgmma read and what they accumulate: the descriptors of its operands in
// stage 0 at k = 0, and the ring's position (stage, phase), which runs on across units.
struct Ring {
  u64 da0, db0;
  u32 full, empty;
  int stage = 0;
  u32 phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) stage = 0, phase ^= 1;
  }
};

#if FP8 && SCALE_MODE == 3
// A unit's k loop with block scales: each stage is one 128-wide block of K. Its wgmma start
// afresh in `part`, and once they are done the consumer adds part x (the block's scales) into
// acc. The scales of the next block are loaded while this block's wgmma run.
__device__ __forceinline__ void k_loop_block_scaled(float* acc, float* part, const Unit& w, const Scales& sc, int srow0,
                                                    int scol0, Ring& ring, int tid) {
#pragma unroll
  for (int r = 0; r < M_SUB * ACC; ++r) acc[r] = 0.f;
  BlockCursor cur = sc.cursor(w.kt_begin, srow0, scol0);
  BlockScales bs;
  if (w.kt_begin < w.kt_end) bs = cur.load(), cur.next();
  for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
    mbar_wait(ring.full + 8 * ring.stage, ring.phase);
    const u32 at = ring.stage * STAGE_BYTES;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const u64 db = desc_advance(ring.db0, at + ks * B_KSTEP);
#pragma unroll
      for (int s = 0; s < M_SUB; ++s) {
        const u64 da = desc_advance(ring.da0, at + s * 8192 + ks * A_KSTEP);
        wgmma<0, 0>(part + s * ACC, da, db, ks > 0 ? 1u : 0u);
      }
    }
    wgmma_commit();
    BlockScales next = bs;
    if (kt + 1 < w.kt_end) next = cur.load(), cur.next();
    wgmma_wait<0>();
    pin(part);
    release_stage(ring.empty + 8 * ring.stage, tid);
    promote(acc, part, bs, scol0);
    bs = next;
    ring.advance();
  }
}
#else
// A unit's k loop (16-bit inputs; FP8 with tensor or row scales, applied after it).
__device__ __forceinline__ void k_loop(float* acc, const Unit& w, Ring& ring, int tid) {
  int prev = -1;
  for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
    mbar_wait(ring.full + 8 * ring.stage, ring.phase);
    const u32 at = ring.stage * STAGE_BYTES;
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const u64 db = desc_advance(ring.db0, at + ks * B_KSTEP);
#pragma unroll
      for (int s = 0; s < M_SUB; ++s) {
        const u64 da = desc_advance(ring.da0, at + s * 8192 + ks * A_KSTEP);
        wgmma<A_KMAJOR ? 0 : 1, B_KMAJOR ? 0 : 1>(acc + s * ACC, da, db, (kt > w.kt_begin || ks > 0) ? 1u : 0u);
      }
    }
    wgmma_commit();
#if INFLIGHT
    // One group stays in flight: the previous stage's wgmma are done once this wait returns,
    // and the warpgroup then releases that stage to every producer of the cluster.
    wgmma_wait<1>();
    pin(acc);
    if (prev >= 0) release_stage(ring.empty + 8 * prev, tid);
    prev = ring.stage;
#else
    // This stage's wgmma done before the next are issued: the stage goes back at once (the
    // other consumer's group keeps the tensor cores busy meanwhile).
    wgmma_wait<0>();
    pin(acc);
    release_stage(ring.empty + 8 * ring.stage, tid);
#endif
    ring.advance();
  }
  wgmma_wait<0>();
  pin(acc);
  if (prev >= 0) release_stage(ring.empty + 8 * prev, tid);
  if (w.kt_end == w.kt_begin) {
#pragma unroll
    for (int r = 0; r < M_SUB * ACC; ++r) acc[r] = 0.f;
  }
}
#endif

__device__ void consume(const Schedule& sch, out_t* C, int M, int N, int ldc, void* workspace, u32 stages, u32 full,
                        u32 empty, u32 rank, long long first, long long stride, int wg, int* flag,
                        const gt_tensor_map* tmC, u32 epi_bufs
#if FP8
                        , const gt_scales& scales, int K
#endif
                        ) {
  const int tid = threadIdx.x - 128 * (wg + 1);
  [[maybe_unused]] const int lane = tid % 32, warp = tid / 32;  // the register epilogue's
  const int n_tiles_m = (M + BM - 1) / BM, n_tiles_n = (N + BN - 1) / BN;
  float acc[M_SUB * ACC];
  [[maybe_unused]] int chunk = 0;  // the TMA epilogue's buffer turn
  // This consumer's operands in stage 0 at k = 0: its first 64-row slab of A (a slab is 8192
  // bytes either way: 64 rows of 128 bytes K-major, one 64-wide block of 64 k rows MN-major) and
  // its columns of B (128 bytes a column either way: a K-major row, or 8192 bytes per 64-wide
  // MN-major block).
  const u32 a0 = stages + (WG_ALONG_N ? 0 : wg * M_SUB) * 8192;
  const u32 b0 = stages + A_STAGE_BYTES + (WG_ALONG_N ? wg * WN : 0) * 128;
  Ring ring{smem_desc(a0, A_KMAJOR ? 16 : 8192, 1024), smem_desc(b0, B_KMAJOR ? 16 : 8192, 1024), full, empty};
#if FP8
  const Scales sc(scales, M, N, K, tid);
#endif
#if FP8 && SCALE_MODE == 3
  float part[M_SUB * ACC];  // one stage's (one k block's) products, before its scales
#endif
  for (long long u = first; u < sch.units; u += stride) {
    const Unit w = sch.unit(u, rank);
#if FP8
    // This consumer's corner of C (as the epilogue's below).
    const int srow0 = w.mb * BM + (WG_ALONG_N ? 0 : wg * WM), scol0 = w.nb * BN + (WG_ALONG_N ? wg * WN : 0);
    sc.prefetch(srow0, scol0, tid);
#endif
#if FP8 && SCALE_MODE == 3
    k_loop_block_scaled(acc, part, w, sc, srow0, scol0, ring, tid);
#else
    k_loop(acc, w, ring, tid);
#endif
    // A cluster tile can stick out of C (an odd number of tiles): that CTA only feeds its peer.
    if (w.mb >= n_tiles_m || w.nb >= n_tiles_n) continue;
#if FP8 && SCALE_MODE != 3
    // Tensor and row scales multiply the sums once (before split-K's partials meet: the sum of
    // scaled partials is the scaled sum).
    sc.apply(acc, srow0, scol0);
#endif
    if (sch.splits > 1 &&
        !reduce_splits(workspace, acc, w, sch.splits, n_tiles_n, (long long)n_tiles_m * n_tiles_n, tid + 128 * wg, flag))
      continue;
    const int row0 = w.mb * BM + (WG_ALONG_N ? 0 : wg * WM), col0 = w.nb * BN + (WG_ALONG_N ? wg * WN : 0);
#if EPILOGUE_TMA
    store_tile_tma(tmC, M, N, acc, row0, col0, tid, wg, epi_bufs + wg * EPI_BUFFERS * CHUNK_BYTES, chunk);
#else
    store_tile(C, M, N, ldc, acc, row0, col0, lane, warp);
#endif
  }
#if EPILOGUE_TMA
  if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // every store done before the CTA ends
#endif
}
