// wgmma_tma: the consumers' epilogue: C stored from the accumulators (directly, or through
// shared memory and TMA stores), and split-K's partial tiles meeting in the workspace. Part of
// wgmma_tma.cu's kernel (included after its defines and constants; the plugin build copies it
// into the embedded source).

// Two adjacent outputs, or the first alone (`both` false: the second is past N). Where C is
// not aligned to two elements (C_PAIRS 0: an odd ldc, or C's pointer; A and B still aligned for
// TMA), each is its own store: the masked epilogue writes C in place instead of a padded copy.
template <class T>
__device__ __forceinline__ void store_pair(T* c, float x, float y, bool both) {
#if C_PAIRS
  if (both) store2(c, x, y);
  else store(c, x);
#else
  store(c, x);
  if (both) store(c + 1, y);
#endif
}

// The m64nN accumulator layout: warp w of the warpgroup holds rows 16w..16w+15; lane l holds
// rows l/4 and l/4 + 8 of them, columns 8j + 2(l%4) + {0, 1}; register 4j + 2i + e is
// (row l/4 + 8i, column 8j + 2(l%4) + e). (row0, col0): the consumer's corner of C.
__device__ void store_tile(out_t* C, int M, int N, int ldc, const float* acc, int row0, int col0, int lane, int warp) {
#pragma unroll
  for (int s = 0; s < M_SUB; ++s)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = row0 + s * 64 + warp * 16 + lane / 4 + 8 * i;
      if (row >= M) continue;
      out_t* crow = C + (long long)row * ldc;
#pragma unroll
      for (int j = 0; j < WN / 8; ++j) {
        const int col = col0 + 8 * j + 2 * (lane % 4);
        if (col < N) store_pair(crow + col, acc[s * ACC + 4 * j + 2 * i], acc[s * ACC + 4 * j + 2 * i + 1], col + 1 < N);
      }
    }
}

// The epilogue through shared memory: each consumer warpgroup writes its part of the tile in
// chunks of 64 rows x 128 bytes (64 columns of 16-bit C, 32 of f32) into one of two buffers,
// 128-byte swizzled as TMA expects (the 16-byte unit u of row r sits at u ^ (r % 8), so the
// eight rows a warp's store spans fall into distinct banks), and one thread sends each chunk
// with a TMA store, which clips rows and columns past M and N. The stores run on while the
// warpgroup starts its next tile; a buffer is refilled only once the store issued from it two
// chunks earlier has read it.
constexpr int CHUNK_COLS = 128 / int(sizeof(out_t));
constexpr int CHUNK_BYTES = 64 * 128;
constexpr int EPI_BUFFERS = 2;  // per consumer warpgroup

__device__ __forceinline__ void tma_store(const gt_tensor_map* map, u32 src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map), "r"(src),
               "r"(inner), "r"(outer)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// At most N of this thread's store groups may still be reading shared memory.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void warpgroup_sync(int wg) {
  asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");  // barriers 2, 3: one per consumer warpgroup
}

// One pair of adjacent columns of a chunk row, at its swizzled place.
__device__ __forceinline__ void store_chunk_pair(u32 buf, int row, int byte, float x, float y) {
  const u32 addr = buf + row * 128 + ((((byte >> 4) ^ (row & 7)) << 4) | (byte & 15));
  if constexpr (sizeof(out_t) == 4) {
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
  } else {
    out_t pair[2];
    store_pair(pair, x, y, true);  // the same rounding as the direct epilogue
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(*reinterpret_cast<u32*>(pair)) : "memory");
  }
}

__device__ void store_tile_tma(const gt_tensor_map* tmC, int M, int N, const float* acc, int row0, int col0, int tid,
                               int wg, u32 bufs, int& chunk) {
  const int lane = tid % 32, warp = tid / 32;
#pragma unroll
  for (int s = 0; s < M_SUB; ++s)
#pragma unroll
    for (int c = 0; c < WN / CHUNK_COLS; ++c) {
      const int row = row0 + s * 64, col = col0 + c * CHUNK_COLS;
      if (row >= M || col >= N) continue;  // wholly outside C (the same for the whole warpgroup)
      const u32 buf = bufs + (chunk % EPI_BUFFERS) * CHUNK_BYTES;
      if (tid == 0) tma_store_wait_read<EPI_BUFFERS - 1>();
      warpgroup_sync(wg);  // the buffer's previous store has read it
#pragma unroll
      for (int j = 0; j < CHUNK_COLS / 8; ++j)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int r = s * ACC + 4 * (c * CHUNK_COLS / 8 + j) + 2 * i;
          store_chunk_pair(buf, warp * 16 + lane / 4 + 8 * i, (8 * j + 2 * (lane % 4)) * int(sizeof(out_t)), acc[r],
                           acc[r + 1]);
        }
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the writes, visible to TMA
      warpgroup_sync(wg);
      if (tid == 0) {
        tma_store(tmC, buf, col, row);
        tma_store_commit();
      }
      ++chunk;
    }
}

// Split-K: each unit writes its fp32 partial tile into its slot of the workspace, in the
// accumulator layout (register r of consumer thread t at [r][t], so stores coalesce); the
// last unit of a tile to arrive adds the others' partials to its own and writes C. The tile
// counters reset themselves, so the workspace is zeroed only once.
constexpr int CONSUMER_THREADS = 128 * CONSUMERS;
constexpr long long PARTIAL = (long long)BM * BN;  // floats per partial tile

__device__ bool reduce_splits(void* workspace, float* acc, const Unit& w, int splits, int n_tiles_n, long long tiles,
                              int ct, int* flag) {
  int* counters = reinterpret_cast<int*>(workspace);
  float* partials = reinterpret_cast<float*>(counters + ((tiles + 63) / 64) * 64);
  const long long tile = (long long)w.mb * n_tiles_n + w.nb;
  float* mine = partials + (tile * splits + w.split) * PARTIAL;
#pragma unroll
  for (int r = 0; r < M_SUB * ACC; ++r) mine[(long long)r * CONSUMER_THREADS + ct] = acc[r];
  __threadfence();
  asm volatile("bar.sync 1, %0;" ::"n"(CONSUMER_THREADS) : "memory");
  if (ct == 0) *flag = atomicAdd(counters + tile, 1) == splits - 1;
  asm volatile("bar.sync 1, %0;" ::"n"(CONSUMER_THREADS) : "memory");
  if (!*flag) return false;
  __threadfence();
  for (int s = 0; s < splits; ++s) {
    if (s == w.split) continue;
    const float* other = partials + (tile * splits + s) * PARTIAL;
#pragma unroll
    for (int r = 0; r < M_SUB * ACC; ++r) acc[r] += __ldcg(other + (long long)r * CONSUMER_THREADS + ct);
  }
  if (ct == 0) counters[tile] = 0;
  return true;
}
