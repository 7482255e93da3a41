#include "gpu_kernels.hpp"

#include "device.hpp"
#include "errors.hpp"
#include "transform_kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

namespace gt {

const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::normal: return "normal";
    case Distribution::uniform: return "uniform";
    case Distribution::zeros: return "zeros";
  }
  return "?";
}

Distribution parse_distribution(const char* s) {
  if (!std::strcmp(s, "normal")) return Distribution::normal;
  if (!std::strcmp(s, "uniform")) return Distribution::uniform;
  if (!std::strcmp(s, "zeros")) return Distribution::zeros;
  throw InputError(std::string("--dist: unknown distribution '") + s + "' (expected normal, uniform or zeros)");
}

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ double unit_open(uint64_t h) { return (double(h >> 11) + 0.5) * 0x1.0p-53; }

__device__ __forceinline__ void put(float* p, size_t i, double v) { p[i] = float(v); }
__device__ __forceinline__ void put(__half* p, size_t i, double v) { p[i] = __float2half_rn(float(v)); }
__device__ __forceinline__ void put(__nv_bfloat16* p, size_t i, double v) { p[i] = __float2bfloat16_rn(float(v)); }
// FP8: round to nearest, saturating to the largest finite value (cuda_fp8.h's conversion); a NaN stays NaN.
__device__ __forceinline__ void put(__nv_fp8_e4m3* p, size_t i, double v) { p[i] = __nv_fp8_e4m3(float(v)); }
__device__ __forceinline__ void put(__nv_fp8_e5m2* p, size_t i, double v) { p[i] = __nv_fp8_e5m2(float(v)); }

__device__ __forceinline__ double get(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ double get(const __half* p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ double get(const __nv_bfloat16* p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ double get(const __nv_fp8_e4m3* p, size_t i) { return float(p[i]); }
__device__ __forceinline__ double get(const __nv_fp8_e5m2* p, size_t i) { return float(p[i]); }

// Element i of the stream of (seed, dist): what every fill draws.
__device__ __forceinline__ double draw(uint64_t seed, size_t i, int dist) {
  if (dist == 0) {  // Box-Muller from two hashed uniforms
    uint64_t h1 = splitmix64(seed ^ splitmix64(2 * i)), h2 = splitmix64(seed ^ splitmix64(2 * i + 1));
    return sqrt(-2.0 * log(unit_open(h1))) * cospi(2.0 * unit_open(h2));
  }
  if (dist == 1) return 2.0 * unit_open(splitmix64(seed ^ splitmix64(i))) - 1.0;
  return 0.0;
}

template <class T>
__global__ void k_fill(T* p, size_t n, uint64_t seed, int dist) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    put(p, i, draw(seed, i, dist));
}

// Which scale an element of an FP8 operand belongs to (plugin_abi.h, gt_scale_mode). Both FP8
// operands are stored K-major (layout nt): A as M x K, B as N x K, `rows` x ld; an element in the
// padding past K counts as its row's last column.
struct ScaleGroups {
  int mode;           // gt_scale_mode
  int is_b;           // 1: B (128x128 blocks), 0: A (1x128 blocks)
  long long ld, k;    // the operand's leading dimension and K
  long long m, kb;    // M (A's blocks are M-contiguous); B's rows of block scales (block_scale_stride)
  __device__ long long of(size_t i) const {
    const long long r = (long long)(i / ld), c = min((long long)(i % ld), k - 1);
    switch (mode) {
      case GT_SCALE_ROW: return r;
      case GT_SCALE_BLOCK: return is_b ? (r / 128) * kb + c / 128 : (c / 128) * m + r;
      default: return 0;
    }
  }
};

// Pass 1: each group's amax, into its scale's slot (non-negative floats order like their bits).
__global__ void k_group_amax(float* amax, size_t n, uint64_t seed, int dist, ScaleGroups g) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    atomicMax(reinterpret_cast<int*>(amax + g.of(i)), __float_as_int(fabsf(float(draw(seed, i, dist)))));
}
// Pass 2: amax -> scale (an all-zero group keeps the scale 1).
__global__ void k_amax_to_scale(float* s, size_t n, float type_max) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    s[i] = s[i] > 0.f ? s[i] / type_max : 1.f;
}
// Pass 3: the same draws divided by their group's scale and rounded.
template <class T>
__global__ void k_quantise(T* q, size_t n, uint64_t seed, int dist, ScaleGroups g, const float* scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    put(q, i, draw(seed, i, dist) / double(scale[g.of(i)]));
}

// The reference's view of an operand: element (row, col) of A (M x K) or B (K x N) as a double.
template <class T>
struct Plain {
  const T* p;
  long long ld;
  int trans;  // stored transposed
  __device__ double operator()(int r, int c) const { return get(p, trans ? size_t(c) * ld + r : size_t(r) * ld + c); }
};
// An FP8 operand (stored K-major: A as M x K, B as N x K) times its scale.
template <class T>
struct Scaled {
  const T* p;
  long long ld;
  const float* s;
  int is_b, mode;
  long long m, kb;  // M, and B's rows of block scales (block_scale_stride)
  __device__ double operator()(int r, int c) const {
    const int row = is_b ? c : r, k = is_b ? r : c;  // B's logical (k, n) is stored at (n, k)
    long long g = 0;
    if (mode == GT_SCALE_ROW) g = row;
    else if (mode == GT_SCALE_BLOCK) g = is_b ? (row / 128) * kb + k / 128 : (long long)(k / 128) * m + row;
    return get(p, size_t(row) * ld + k) * double(s[g]);
  }
};

template <class T>
__global__ void k_nan(T* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    put(p, i, __longlong_as_double(0x7ff8000000000000ll));
}

// float64 reference: 64×64 tile per block, 16-deep K slices, 256 threads, 4×4 outputs each
// (rows ty + 16i, columns tx + 16j so shared-memory reads spread over the banks). LA and LB
// read A (m, k) and B (k, n) (Plain, Scaled); `at`, `bt` say how they are stored, so that
// consecutive threads walk the contiguous dimension. `c_scale` multiplies every result.
template <class LA, class LB>
__global__ void __launch_bounds__(256) k_ref_gemm(LA A, LB B, double* C, int M, int N, int K, int at, int bt,
                                                  double c_scale) {
  __shared__ double As[16][65];
  __shared__ double Bs[16][65];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  double acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = tid; i < 16 * 64; i += 256) {
      // Consecutive threads walk the contiguous dimension of each operand.
      int kk = at ? i / 64 : i % 16, mm = at ? i % 64 : i / 16;
      int gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? A(gm, gk) : 0.0;
      kk = bt ? i % 16 : i / 64;
      int nn = bt ? i / 16 : i % 64;
      int gn = n0 + nn;
      gk = k0 + kk;
      Bs[kk][nn] = (gn < N && gk < K) ? B(gk, gn) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      double a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = As[kk][ty + 16 * i];
        b[i] = Bs[kk][tx + 16 * i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
      if (r < M && c < N) C[size_t(r) * N + c] = acc[i][j] * c_scale;
    }
}

__device__ __forceinline__ void atomic_max_nonneg(double* addr, double v) {
  // For non-negative doubles the bit patterns order like the values.
  atomicMax(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(__double_as_longlong(v)));
}

template <class T>
__global__ void k_compare(const T* C, long long ldc, const double* R, int M, int N, double* out,
                          unsigned long long* nonfinite) {
  double sq = 0, sr = 0, md = 0, mr = 0;
  unsigned long long bad = 0;
  size_t total = size_t(M) * N;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    size_t r = i / N, c = i % N;
    double x = get(C, r * ldc + c), ref = R[i];
    if (!isfinite(x)) {
      ++bad;
      continue;
    }
    double d = x - ref;
    sq += d * d;
    sr += ref * ref;
    md = fmax(md, fabs(d));
    mr = fmax(mr, fabs(ref));
  }
  for (int o = 16; o > 0; o /= 2) {
    sq += __shfl_down_sync(0xffffffffu, sq, o);
    sr += __shfl_down_sync(0xffffffffu, sr, o);
    md = fmax(md, __shfl_down_sync(0xffffffffu, md, o));
    mr = fmax(mr, __shfl_down_sync(0xffffffffu, mr, o));
    bad += __shfl_down_sync(0xffffffffu, bad, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out[0], sq);
    atomicAdd(&out[1], sr);
    atomic_max_nonneg(&out[2], md);
    atomic_max_nonneg(&out[3], mr);
    atomicAdd(nonfinite, bad);
  }
}

// 16 independent FMA chains per thread (enough to hide the 4-cycle latency at any
// occupancy); b comes from the parameter bank and c is an immediate, so each FFMA reads one
// register and the loop body is long enough that its overhead is a few percent.
__global__ void k_fma_peak(float* out, int iters, float b) {
  float a[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = 1e-6f * float(threadIdx.x + i);
  for (int k = 0; k < iters; k += 4) {
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int i = 0; i < 16; ++i) a[i] = fmaf(a[i], b, 1e-5f);
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += a[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Spins until the host writes a non-zero *release (mapped host memory) or timeout_ns passes
// (then sets *timed_out). One thread: it only holds the stream.
__global__ void k_hold(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns) {
  auto now = [] {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  };
  const unsigned long long t0 = now();
  while (*release == 0) {
    if (now() - t0 > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(500);
  }
}

// Reads n16 16-byte vectors once, as a GEMM at decode reads its weights. Every block takes one
// contiguous share, equal to a vector, so that the blocks (one wave: the caller sizes the grid
// to what the SMs hold at once) start together and end together.
// LOADS: 256 threads a block, each keeping kReadUnroll 16-byte loads in flight (evict-first):
//   2048 threads an SM hold 256 KiB in flight, a whole SM's share of 32 MiB on 132 SMs.
// BULK (sm_90; launched only there): one warp a block, whose lane 0 keeps `stages` bulk copies
//   (cp.async.bulk) of chunk16 vectors in flight into a shared-memory ring, each on its own
//   mbarrier: a block's ring is requested within its first few hundred cycles, whatever the
//   number of threads, and refilled as each copy lands. What decode's TMA engine does for B.
constexpr int kReadUnroll = 8;
constexpr int kReadThreads = 256;

template <bool BULK>
__global__ void __launch_bounds__(BULK ? 32 : kReadThreads)
    k_stream_read(const float4* __restrict__ x, long long n16, float* sink, int stages, int chunk16) {
  const long long v0 = n16 * blockIdx.x / gridDim.x, v1 = n16 * (blockIdx.x + 1) / gridDim.x;
  float acc = 0.f;
  if constexpr (!BULK) {
    long long i = v0 + threadIdx.x;
    for (; i + (kReadUnroll - 1) * kReadThreads < v1; i += kReadUnroll * kReadThreads) {
      float4 v[kReadUnroll];
#pragma unroll
      for (int u = 0; u < kReadUnroll; ++u) v[u] = __ldcs(x + i + u * kReadThreads);
#pragma unroll
      for (int u = 0; u < kReadUnroll; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    for (; i < v1; i += kReadThreads) {
      const float4 v = __ldcs(x + i);
      acc += v.x + v.y + v.z + v.w;
    }
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char ring[];
    if (threadIdx.x != 0) return;
    const unsigned base = unsigned(__cvta_generic_to_shared(ring));
    const unsigned chunk = unsigned(chunk16) * 16u, bars = base + unsigned(stages) * chunk;  // mbarriers after the ring
    for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    // Copy i goes to stage i % stages and completes phase i / stages of its barrier.
    auto wait = [&](long long i) {
      const unsigned bar = bars + 8 * unsigned(i % stages), parity = unsigned(i / stages) & 1u;
      asm volatile(
          "{\n.reg .pred done;\n"
          "wait:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
          "@!done bra wait;\n}\n" ::"r"(bar),
          "r"(parity)
          : "memory");
    };
    long long i = 0;
    for (long long v = v0; v < v1; v += chunk16, ++i) {
      if (i >= stages) wait(i - stages);  // the stage's previous copy has landed
      const unsigned bytes = unsigned(min((long long)chunk16, v1 - v)) * 16u, bar = bars + 8 * unsigned(i % stages);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       base + unsigned(i % stages) * chunk),
                   "l"(x + v), "r"(bytes), "r"(bar)
                   : "memory");
    }
    for (long long j = i > stages ? i - stages : 0; j < i; ++j) wait(j);
    if (i > 0) acc = reinterpret_cast<const float*>(ring)[0];  // landed data, so the reads count
#else
    __trap();  // bulk copies need sm_90 (the callers ask them only there)
#endif
  }
  if (acc == 1234.5f) sink[0] = acc;
}

int grid_for(size_t n) {
  size_t b = (n + 255) / 256;
  return int(b > 65536 ? 65536 : (b == 0 ? 1 : b));
}

}  // namespace

// Calls f with a null pointer of the CUDA type that stores t.
template <class F>
void with_type(DType t, F&& f) {
  switch (storage_of(t)) {
    case DType::f16: f(static_cast<__half*>(nullptr)); break;
    case DType::bf16: f(static_cast<__nv_bfloat16*>(nullptr)); break;
    case DType::e4m3: f(static_cast<__nv_fp8_e4m3*>(nullptr)); break;
    case DType::e5m2: f(static_cast<__nv_fp8_e5m2*>(nullptr)); break;
    default: f(static_cast<float*>(nullptr)); break;
  }
}

void fill_random(void* p, DType t, size_t count, uint64_t seed, Distribution d, cudaStream_t s) {
  with_type(t, [&](auto* type) { k_fill<<<grid_for(count), 256, 0, s>>>(static_cast<decltype(type)>(p), count, seed, int(d)); });
  cuda_check(cudaGetLastError(), "fill_random");
}

void fill_quantised(const Problem& p, gt_operand which, void* q, float* scales, uint64_t seed, Distribution d,
                    cudaStream_t s) {
  if (!p.fp8() || p.layout != Layout::nt) throw RuntimeFailure("fill_quantised: " + p.key() + " is not an FP8 problem");
  const bool is_b = which == GT_OPERAND_B;
  const DType t = is_b ? p.in_b : p.in;
  const ScaleGroups g{int(p.scale), is_b ? 1 : 0, is_b ? p.ldb : p.lda, p.k, p.m, block_scale_stride(p.k)};
  const size_t n = size_t(is_b ? p.n : p.m) * size_t(g.ld), groups = is_b ? p.scale_count_b() : p.scale_count_a();
  cuda_check(cudaMemsetAsync(scales, 0, groups * sizeof(float), s), "fill_quantised: clear");
  k_group_amax<<<grid_for(n), 256, 0, s>>>(scales, n, seed, int(d), g);
  k_amax_to_scale<<<grid_for(groups), 256, 0, s>>>(scales, groups, float(fp8_max(t)));
  with_type(t, [&](auto* type) { k_quantise<<<grid_for(n), 256, 0, s>>>(static_cast<decltype(type)>(q), n, seed, int(d), g, scales); });
  cuda_check(cudaGetLastError(), "fill_quantised");
}

void fill_nan(void* p, DType t, size_t count, cudaStream_t s) {
  with_type(t, [&](auto* type) { k_nan<<<grid_for(count), 256, 0, s>>>(static_cast<decltype(type)>(p), count); });
  cuda_check(cudaGetLastError(), "fill_nan");
}

void reference_gemm(const Problem& p, const Operands& ops, double* c_ref, cudaStream_t s) {
  dim3 grid(unsigned((p.n + 63) / 64), unsigned((p.m + 63) / 64));
  if (grid.y > 65535) throw RuntimeFailure("reference GEMM: M too large for the reference kernel's grid");
  const int M = int(p.m), N = int(p.n), K = int(p.k), at = p.a_trans(), bt = p.b_trans();
  if (!p.fp8()) {
    with_type(p.in, [&](auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      k_ref_gemm<<<grid, 256, 0, s>>>(Plain<T>{static_cast<const T*>(ops.a), p.lda, at},
                                      Plain<T>{static_cast<const T*>(ops.b), p.ldb, bt}, c_ref, M, N, K, at, bt, 1.0);
    });
  } else {
    // The output's d scale is read back once here: the reference is made once per bench.
    float d = 1.f;
    if (ops.scales.d) cuda_check(cudaMemcpyAsync(&d, ops.scales.d, sizeof d, cudaMemcpyDeviceToHost, s), "reference: d scale");
    cuda_check(cudaStreamSynchronize(s), "reference: d scale");
    const long long kb = block_scale_stride(p.k);
    with_type(p.in, [&](auto* ta) {
      with_type(p.in_b, [&](auto* tb) {
        using TA = std::remove_pointer_t<decltype(ta)>;
        using TB = std::remove_pointer_t<decltype(tb)>;
        if constexpr (sizeof(TA) == 1 && sizeof(TB) == 1)
          k_ref_gemm<<<grid, 256, 0, s>>>(Scaled<TA>{static_cast<const TA*>(ops.a), p.lda, ops.scales.a, 0, int(p.scale), p.m, kb},
                                          Scaled<TB>{static_cast<const TB*>(ops.b), p.ldb, ops.scales.b, 1, int(p.scale), p.m, kb},
                                          c_ref, M, N, K, at, bt, double(d));
      });
    });
  }
  cuda_check(cudaGetLastError(), "reference_gemm");
}

ErrorSums compare_to_reference(const Problem& p, const void* c, const double* c_ref, void* scratch, cudaStream_t s) {
  auto* out = static_cast<double*>(scratch);
  auto* bad = reinterpret_cast<unsigned long long*>(out + 4);
  cuda_check(cudaMemsetAsync(scratch, 0, 5 * sizeof(double), s), "compare: clear");
  int g = grid_for(size_t(p.m) * size_t(p.n));
  if (g > 4096) g = 4096;
  with_type(p.out, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    k_compare<<<g, 256, 0, s>>>(static_cast<const T*>(c), p.ldc, c_ref, int(p.m), int(p.n), out, bad);
  });
  cuda_check(cudaGetLastError(), "compare");
  double host[5];
  cuda_check(cudaMemcpyAsync(host, scratch, sizeof host, cudaMemcpyDeviceToHost, s), "compare: copy back");
  cuda_check(cudaStreamSynchronize(s), "compare: synchronise");
  ErrorSums e;
  e.sum_sq_diff = host[0];
  e.sum_sq_ref = host[1];
  e.max_abs_diff = host[2];
  e.max_abs_ref = host[3];
  std::memcpy(&e.nonfinite, &host[4], sizeof e.nonfinite);
  return e;
}

void launch_fma_peak(float* out, int blocks, int threads_per_block, int iters, cudaStream_t s) {
  k_fma_peak<<<blocks, threads_per_block, 0, s>>>(out, iters, 0.99999f);
  cuda_check(cudaGetLastError(), "fma_peak");
}

void launch_stream_read(const void* x, size_t bytes, float* sink, const StreamRead& how, cudaStream_t s) {
  const long long n16 = (long long)(bytes / 16);
  const int blocks = std::max(1, how.blocks);
  if (how.engine == StreamRead::Engine::loads) {
    k_stream_read<false><<<blocks, kReadThreads, 0, s>>>(static_cast<const float4*>(x), n16, sink, 0, 0);
  } else {
    // The bulk copies exist only in sm_90 code: a build whose core kernels are PTX for an older
    // target (CMake's default CMAKE_CUDA_ARCHITECTURES, 75 with CUDA 13) would trap instead.
    cudaFuncAttributes fa{};
    cuda_check(cudaFuncGetAttributes(&fa, k_stream_read<true>), "stream_read: attributes");
    if (fa.ptxVersion < 90)
      throw RuntimeFailure("stream_read: bulk copies need core's kernels built for sm_90; this build's are compute_" +
                           std::to_string(fa.ptxVersion) +
                           " (configure with -DCMAKE_CUDA_ARCHITECTURES=\"80-real;90-real;90-virtual\")");
    const int stages = std::max(1, how.stages), chunk16 = std::max(1, how.chunk_bytes / 16);
    const size_t smem = size_t(stages) * size_t(chunk16) * 16 + 8 * size_t(stages);
    if (smem > 48 * 1024)
      cuda_check(cudaFuncSetAttribute(k_stream_read<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                 "stream_read: shared memory");
    k_stream_read<true><<<blocks, 32, smem, s>>>(static_cast<const float4*>(x), n16, sink, stages, chunk16);
  }
  cuda_check(cudaGetLastError(), "stream_read");
}

cudaError_t launch_pad_copy(const void* src, void* dst, size_t elem_size, const OperandCopy& oc, cudaStream_t s) {
  const long long chunks = (oc.ld_dst * (long long)elem_size + 15) / 16;  // 16 bytes per thread
  dim3 grid(unsigned(std::min<long long>((chunks + 255) / 256, 65535)), unsigned(std::min<long long>(oc.rows_dst, 65535)));
  if (elem_size == 1)
    gt_pad_copy_1<<<grid, 256, 0, s>>>(static_cast<const unsigned char*>(src), static_cast<unsigned char*>(dst), oc.rows,
                                       oc.cols, oc.ld_src, oc.rows_dst, oc.ld_dst);
  else if (elem_size == 2)
    gt_pad_copy_2<<<grid, 256, 0, s>>>(static_cast<const unsigned short*>(src), static_cast<unsigned short*>(dst), oc.rows,
                                       oc.cols, oc.ld_src, oc.rows_dst, oc.ld_dst);
  else if (elem_size == 4)
    gt_pad_copy_4<<<grid, 256, 0, s>>>(static_cast<const unsigned int*>(src), static_cast<unsigned int*>(dst), oc.rows,
                                       oc.cols, oc.ld_src, oc.rows_dst, oc.ld_dst);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_crop_copy(const void* src, void* dst, size_t elem_size, int64_t m, int64_t n, int64_t ld_src,
                             int64_t ld_dst, bool transposed, cudaStream_t s) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4) return cudaErrorInvalidValue;
  using u8 = unsigned char;
  using u16 = unsigned short;
  using u32 = unsigned int;
  if (transposed) {
    dim3 grid(unsigned(std::min<int64_t>((n + 31) / 32, 65535)), unsigned(std::min<int64_t>((m + 31) / 32, 65535)));
    dim3 block(32, 8);
    if (elem_size == 1) gt_crop_copy_t_1<<<grid, block, 0, s>>>(static_cast<const u8*>(src), static_cast<u8*>(dst), m, n, ld_src, ld_dst);
    else if (elem_size == 2) gt_crop_copy_t_2<<<grid, block, 0, s>>>(static_cast<const u16*>(src), static_cast<u16*>(dst), m, n, ld_src, ld_dst);
    else gt_crop_copy_t_4<<<grid, block, 0, s>>>(static_cast<const u32*>(src), static_cast<u32*>(dst), m, n, ld_src, ld_dst);
  } else {
    const int64_t per_block = 256 * int64_t(16 / elem_size);  // gt_crop_copy: 16 bytes per thread
    dim3 grid(unsigned(std::min<int64_t>((n + per_block - 1) / per_block, 65535)), unsigned(std::min<int64_t>(m, 65535)));
    if (elem_size == 1) gt_crop_copy_1<<<grid, 256, 0, s>>>(static_cast<const u8*>(src), static_cast<u8*>(dst), m, n, ld_src, ld_dst);
    else if (elem_size == 2) gt_crop_copy_2<<<grid, 256, 0, s>>>(static_cast<const u16*>(src), static_cast<u16*>(dst), m, n, ld_src, ld_dst);
    else gt_crop_copy_4<<<grid, 256, 0, s>>>(static_cast<const u32*>(src), static_cast<u32*>(dst), m, n, ld_src, ld_dst);
  }
  return cudaGetLastError();
}

void launch_hold(const volatile int* release, volatile int* timed_out, double timeout_s, cudaStream_t s) {
  k_hold<<<1, 1, 0, s>>>(release, timed_out, (unsigned long long)(timeout_s * 1e9));
  cuda_check(cudaGetLastError(), "hold");
}

}  // namespace gt
