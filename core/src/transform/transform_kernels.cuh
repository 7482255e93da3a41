// The copies a problem transform makes (transform.hpp): their index arithmetic, and the kernels
// that run it. One file for three readers, so the arithmetic cannot drift between them:
//  - the host (transform.cpp): the same functions drive a CPU run of a plan, which the tests
//    compare with a CPU reference GEMM;
//  - nvcc (gpu_kernels.cu): the kernels, compiled ahead of time for sm_80 and sm_90
//    (CMAKE_CUDA_ARCHITECTURES), launched by core wherever a transformed config runs;
//  - NVRTC (a test): the same text compiled for sm_80 and sm_90 on a machine without a GPU.
// Elements are copied as raw bits (1, 2 or 4 bytes): a copy never converts, and zero bits are
// 0.0 in f32, f16, bf16 and both FP8 types. Nothing here includes a header, so NVRTC needs no include path.
#ifndef GEMMTUNE_TRANSFORM_KERNELS_CUH
#define GEMMTUNE_TRANSFORM_KERNELS_CUH

#if defined(__CUDACC__)
#define GT_HD static __host__ __device__ __forceinline__
#else
#define GT_HD static inline
#endif

// A padded copy of a row-major matrix: the source is rows x cols with leading dimension
// ld_src; the copy is rows_dst x ld_dst (rows_dst >= rows, ld_dst >= cols) and holds zeros
// wherever the source has no element. The index into the source of copy element (r, c), or -1
// for a zero.
GT_HD long long gt_pad_source(long long r, long long c, long long rows, long long cols, long long ld_src) {
  return (r < rows && c < cols) ? r * ld_src + c : -1;
}

// The write-back of C: element (i, j) of the caller's C (M x N) comes from the family's output
// C' at this index: C'[i][j] (ld_src), or, when the product was computed swapped (C' = Cᵀ,
// N x M), C'[j][i].
GT_HD long long gt_crop_source(long long i, long long j, long long ld_src, int transposed) {
  return transposed ? j * ld_src + i : i * ld_src + j;
}

#if defined(__CUDACC__)

// Each thread fills kVec consecutive elements of a copy's row (16 bytes: the copy's rows are
// 16-byte aligned by construction) and stores them at once; the loads from the source, whose
// rows are what is misaligned, are element by element. Grid: x along a row, y over rows.
template <class E>
__device__ void gt_pad_copy(const E* __restrict__ src, E* __restrict__ dst, long long rows, long long cols,
                            long long ld_src, long long rows_dst, long long ld_dst) {
  constexpr int kVec = 16 / sizeof(E);
  struct alignas(16) Chunk {
    E v[kVec];
  };
  for (long long r = blockIdx.y; r < rows_dst; r += gridDim.y) {
    for (long long c0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * kVec; c0 < ld_dst;
         c0 += (long long)gridDim.x * blockDim.x * kVec) {
      Chunk ch;
#pragma unroll
      for (int v = 0; v < kVec; ++v) {
        const long long s = gt_pad_source(r, c0 + v, rows, cols, ld_src);
        ch.v[v] = s >= 0 ? src[s] : E(0);
      }
      *reinterpret_cast<Chunk*>(dst + r * ld_dst + c0) = ch;
    }
  }
}

// The write-back, not transposed: kVec elements per thread (16 bytes), a block's width apart,
// so each load and store of a warp is coalesced and every thread has kVec loads in flight
// before it stores (one 2-byte load per thread leaves too few bytes in flight to stream).
template <class E>
__device__ void gt_crop_copy(const E* __restrict__ src, E* __restrict__ dst, long long m, long long n,
                             long long ld_src, long long ld_dst) {
  constexpr int kVec = 16 / sizeof(E);
  for (long long i = blockIdx.y; i < m; i += gridDim.y)
    for (long long j0 = blockIdx.x * (long long)blockDim.x * kVec + threadIdx.x; j0 < n;
         j0 += (long long)gridDim.x * blockDim.x * kVec) {
      E v[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const long long j = j0 + (long long)e * blockDim.x;
        v[e] = j < n ? src[gt_crop_source(i, j, ld_src, 0)] : E(0);
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const long long j = j0 + (long long)e * blockDim.x;
        if (j < n) dst[i * ld_dst + j] = v[e];
      }
    }
}

// The write-back of a swapped product: a 32x32 tile through shared memory, so that both the
// read of C' and the write of C walk their rows (block 32x8; grid x over N, y over M).
template <class E>
__device__ void gt_crop_copy_transposed(const E* __restrict__ src, E* __restrict__ dst, long long m, long long n,
                                        long long ld_src, long long ld_dst) {
  __shared__ E tile[32][33];
  for (long long i0 = blockIdx.y * 32ll; i0 < m; i0 += gridDim.y * 32ll)
    for (long long j0 = blockIdx.x * 32ll; j0 < n; j0 += gridDim.x * 32ll) {
      // Read C' rows j0.. (C' is N x M): consecutive threads walk i, C's row index.
      for (int dj = threadIdx.y; dj < 32; dj += 8) {
        const long long i = i0 + threadIdx.x, j = j0 + dj;
        if (i < m && j < n) tile[dj][threadIdx.x] = src[gt_crop_source(i, j, ld_src, 1)];
      }
      __syncthreads();
      for (int di = threadIdx.y; di < 32; di += 8) {
        const long long i = i0 + di, j = j0 + threadIdx.x;
        if (i < m && j < n) dst[i * ld_dst + j] = tile[threadIdx.x][di];
      }
      __syncthreads();
    }
}

// The entry points, one per element size, extern "C" so that NVRTC's test finds them by name.
extern "C" __global__ void gt_pad_copy_1(const unsigned char* src, unsigned char* dst, long long rows, long long cols,
                                         long long ld_src, long long rows_dst, long long ld_dst) {
  gt_pad_copy(src, dst, rows, cols, ld_src, rows_dst, ld_dst);
}
extern "C" __global__ void gt_crop_copy_1(const unsigned char* src, unsigned char* dst, long long m, long long n,
                                          long long ld_src, long long ld_dst) {
  gt_crop_copy(src, dst, m, n, ld_src, ld_dst);
}
extern "C" __global__ void __launch_bounds__(256) gt_crop_copy_t_1(const unsigned char* src, unsigned char* dst,
                                                                   long long m, long long n, long long ld_src,
                                                                   long long ld_dst) {
  gt_crop_copy_transposed(src, dst, m, n, ld_src, ld_dst);
}
extern "C" __global__ void gt_pad_copy_2(const unsigned short* src, unsigned short* dst, long long rows, long long cols,
                                         long long ld_src, long long rows_dst, long long ld_dst) {
  gt_pad_copy(src, dst, rows, cols, ld_src, rows_dst, ld_dst);
}
extern "C" __global__ void gt_pad_copy_4(const unsigned int* src, unsigned int* dst, long long rows, long long cols,
                                         long long ld_src, long long rows_dst, long long ld_dst) {
  gt_pad_copy(src, dst, rows, cols, ld_src, rows_dst, ld_dst);
}
extern "C" __global__ void gt_crop_copy_2(const unsigned short* src, unsigned short* dst, long long m, long long n,
                                          long long ld_src, long long ld_dst) {
  gt_crop_copy(src, dst, m, n, ld_src, ld_dst);
}
extern "C" __global__ void gt_crop_copy_4(const unsigned int* src, unsigned int* dst, long long m, long long n,
                                          long long ld_src, long long ld_dst) {
  gt_crop_copy(src, dst, m, n, ld_src, ld_dst);
}
extern "C" __global__ void __launch_bounds__(256) gt_crop_copy_t_2(const unsigned short* src, unsigned short* dst,
                                                                   long long m, long long n, long long ld_src,
                                                                   long long ld_dst) {
  gt_crop_copy_transposed(src, dst, m, n, ld_src, ld_dst);
}
extern "C" __global__ void __launch_bounds__(256) gt_crop_copy_t_4(const unsigned int* src, unsigned int* dst,
                                                                   long long m, long long n, long long ld_src,
                                                                   long long ld_dst) {
  gt_crop_copy_transposed(src, dst, m, n, ld_src, ld_dst);
}

#endif  // __CUDACC__
#endif  // GEMMTUNE_TRANSFORM_KERNELS_CUH
