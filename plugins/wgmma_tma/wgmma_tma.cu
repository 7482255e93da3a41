// wgmma_tma: a Hopper GEMM (sm_90a). C = A·B with fp32 accumulation, f16/bf16 inputs and
// f32/f16/bf16 output, every layout. Warp-specialised: warpgroup 0 is the producer, whose one
// thread issues TMA tile copies into a ring of STAGES shared-memory stages guarded by full and
// empty mbarriers; warpgroups 1..CONSUMERS issue wgmma.mma_async (m64nNk16) from the
// 128-byte-swizzled stages into registers, with one wgmma group kept in flight. Thread-block
// clusters share operands through TMA multicast (2x1, 4x1: the CTAs of a cluster take
// neighbouring M tiles and share B; 1x2, 1x4: neighbouring N tiles sharing A; 2x2: a square of
// tiles, each row sharing A and each column B). The grid is
// either one cluster per tile or persistent (a whole number of clusters, each striding over
// the tiles in grouped order); split-K divides K over `splits` units per tile whose fp32
// partials meet in the workspace, where the last to arrive adds them and writes C.
//
// FP8 (FP8=1, plugin ABI v3): A and B in e4m3 or e5m2, both K-major (layout nt: wgmma has no
// transpose for 8-bit types), scaled per tensor, row or 1x128 / 128x128 block (SCALE_MODE).
// A K-major FP8 tile of R rows x 128 elements is byte for byte a 16-bit one of R x 64 (128
// bytes a row, the same 128-byte swizzle), so the producer, the ring, the barriers and the
// descriptors are the 16-bit kernel's; a stage holds 128 k instead of 64, and its four wgmma
// steps are m64nNk32 instead of k16 (32 bytes along the rows either way). Tensor and row
// scales multiply the accumulators once, after a unit's k loop; block scales change the loop:
// each stage (one 128-wide block of K) is accumulated into a second set of registers and added
// into the result with that block's scales (promotion, as DeepGEMM does).
//
// Kernel parameters (plugin ABI v2): the nine standard ones, the workspace, the launch
// scalars, (FP8: the scales, a gt_scales by value,) then the tensor maps of A and B that core
// encodes per problem and buffer.
// Every define below has a default, so this file compiles on its own (nvcc or NVRTC,
// -arch sm_90a, -I core/include); wgmma_tma.cpp sets each from the config and the problem.
// The kernel's parts are in the wgmma_tma_*.cuh files beside this one (included below).

#ifndef IN_T
#define IN_T __nv_bfloat16  // storage type of A and B
#endif
#ifndef IS_BF16
#define IS_BF16 1  // 1: IN_T is bf16, 0: f16 (the wgmma input kind)
#endif
#ifndef OUT_T
#define OUT_T __nv_bfloat16  // storage type of C: float, __half or __nv_bfloat16
#endif
#ifndef A_KMAJOR
#define A_KMAJOR 1  // 1: A is stored M×K (layout n, K contiguous); 0: K×M (layout t)
#endif
#ifndef B_KMAJOR
#define B_KMAJOR 0  // 1: B is stored N×K (layout t, K contiguous); 0: K×N (layout n)
#endif
#ifndef BM
#define BM 128  // block tile rows (a multiple of 64)
#endif
#ifndef BN
#define BN 256  // block tile columns
#endif
#ifndef CONSUMERS
#define CONSUMERS 2  // consumer warpgroups (1 or 2)
#endif
#ifndef WG_ALONG_N
#define WG_ALONG_N 0  // 0: consumers stacked along M (BM/CONSUMERS rows each); 1: side by side along N
#endif
#ifndef STAGES
#define STAGES 4  // shared-memory stages of (BM + BN) x 64 elements in the ring
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1  // CTAs of a cluster along M (they share B): 1, 2 or 4 (launched 1-D: rank r at (r % CLUSTER_M, r / CLUSTER_M))
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1  // CTAs of a cluster along N (they share A): 1, 2 or 4
#endif
#ifndef INFLIGHT
#define INFLIGHT 1  // wgmma groups a consumer keeps in flight while it issues the next (0 or 1)
#endif
#ifndef EPILOGUE_TMA
#define EPILOGUE_TMA 0  // 1: C leaves through shared memory and TMA stores (needs the tensor map of C)
#endif
#ifndef C_PAIRS
#define C_PAIRS 1  // 1: the register epilogue stores two adjacent outputs at once; 0: one by one (C misaligned)
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40  // setmaxnreg of the producer warpgroup
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232  // setmaxnreg of each consumer warpgroup
#endif
// FP8 (1: A and B are FP8, IN_T and IS_BF16 unused, both K-major, scaled per SCALE_MODE),
// A_E5M2 and B_E5M2 (1: that operand is e5m2) are the prelude's, default 0.
#ifndef SCALE_MODE
#define SCALE_MODE 1  // FP8: gt_scale_mode: 1 one scale per tensor, 2 per row of A / column of B, 3 per block
#endif

#include <gemmtune/kernel_prelude.cuh>  // u32, u64, in_t, out_t, store, store2

#if IS_BF16
#define WGMMA_AB "bf16"
#else
#define WGMMA_AB "f16"
#endif
// The wgmma's K, its input types, and its transpose operands: 16-bit wgmma reads either major
// order (imm-trans-a, imm-trans-b: the asm's operands TA, TB); 8-bit wgmma has no such operands
// and reads K-major tiles only.
#if FP8
#define WGMMA_K "k32"
#define WGMMA_TYPES FP8_A_PTX "." FP8_B_PTX
#define WGMMA_TRANS(ta, tb) ""
#else
#define WGMMA_K "k16"
#define WGMMA_TYPES WGMMA_AB "." WGMMA_AB
#define WGMMA_TRANS(ta, tb) ", %" #ta ", %" #tb
#endif

constexpr int ELEM_BYTES = FP8 ? 1 : 2;  // of A and B
constexpr int BK = 128 / ELEM_BYTES;      // K per stage: one 128-byte swizzle span (64 16-bit or 128 FP8 elements)
constexpr int KSTEPS = 4;                 // wgmma per m64 tile and stage: k16 (16-bit) or k32 (FP8), 32 bytes of K each
constexpr int WM = WG_ALONG_N ? BM : BM / CONSUMERS;  // rows of C per consumer warpgroup
constexpr int WN = WG_ALONG_N ? BN / CONSUMERS : BN;  // columns per consumer: the wgmma N
constexpr int M_SUB = WM / 64;                        // m64 wgmma tiles per consumer
constexpr int ACC = WN / 2;                           // fp32 accumulators per thread per m64 tile
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
constexpr int A_STAGE_BYTES = BM * BK * ELEM_BYTES;
constexpr int B_STAGE_BYTES = BN * BK * ELEM_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
// Multicast: the operand that the CTAs of a cluster share is copied in CLUSTER slices, each
// CTA issuing one slice to all of them.
constexpr int A_SLICES = CLUSTER_N;
constexpr int B_SLICES = CLUSTER_M;
// Rank r of a cluster sits at (r % CLUSTER_M, r / CLUSTER_M) in its grid of CLUSTER_M x
// CLUSTER_N tiles. The CTAs of one row of that grid (same M tile) share A, those of one column
// (same N tile) share B.
// (Written so that a 1-D cluster's code is what it was before 2x2 existed: its coordinate is the
// rank itself, the other the constant 0; the consumers have no register to spare.)
__device__ __forceinline__ int rank_m(unsigned rank) {
  return CLUSTER_M == 1 ? 0 : CLUSTER_N == 1 ? int(rank) : int(rank % CLUSTER_M);
}
__device__ __forceinline__ int rank_n(unsigned rank) {
  return CLUSTER_N == 1 ? 0 : CLUSTER_M == 1 ? int(rank) : int(rank / CLUSTER_M);
}
// The CTAs that receive this CTA's slice of A (its row of the cluster) and of B (its column).
__device__ __forceinline__ unsigned short a_mask(unsigned rank) {
  unsigned m = 0;
  for (int j = 0; j < CLUSTER_N; ++j) m |= 1u << (rank_m(rank) + CLUSTER_M * j);
  return (unsigned short)m;
}
__device__ __forceinline__ unsigned short b_mask(unsigned rank) {
  unsigned m = 0;
  for (int i = 0; i < CLUSTER_M; ++i) m |= 1u << (i + CLUSTER_M * rank_n(rank));
  return (unsigned short)m;
}

static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
static_assert(WM % 64 == 0 && WM * CONSUMERS == BM * (WG_ALONG_N ? CONSUMERS : 1), "consumers tile the block tile");
static_assert(WN == 64 || WN == 128 || WN == 192 || WN == 256, "wgmma N of 64, 128, 192 or 256");
static_assert(M_SUB * ACC <= 128, "at most 128 accumulators per consumer thread");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4, "clusters of one, two or four CTAs");
static_assert(CLUSTER_M * CLUSTER_N <= 4, "clusters of up to four CTAs (1-D, 2-D only as 2x2)");
static_assert(STAGES >= 2, "a ring of at least two stages");
static_assert(!FP8 || (A_KMAJOR && B_KMAJOR), "FP8 wgmma reads K-major tiles only (layout nt)");
static_assert(!FP8 || !(A_E5M2 && B_E5M2), "e5m2 x e5m2 is not a wgmma (nor a cuBLASLt) type pair");
static_assert(!FP8 || (SCALE_MODE >= 1 && SCALE_MODE <= 3), "FP8 scales per tensor (1), row (2) or block (3)");
// Block scales hold a second accumulator set per consumer (each stage's wgmma results before
// they are scaled and added), and a consumer's columns may span at most two 128-wide blocks of B.
static_assert(!(FP8 && SCALE_MODE == 3) || (2 * M_SUB * ACC <= 192 && WN <= 192),
              "block scales: at most 96 accumulators per set and 192 columns per consumer");

// Launch scalars (plugin ABI v2: eight int64 values passed by value).
struct gt_scalars {
  long long v[8];
};
enum { kRaster = 0, kGroup = 1, kSplits = 2 };

// FP8: the call's scales are the prelude's gt_scales (`d` and `amax_d` concern FP8 outputs,
// which the family does not build).

// A CUtensorMap as the driver lays it out: 128 opaque bytes, 128-byte aligned (CUDA 13).
struct __align__(128) gt_tensor_map {
  u64 opaque[16];
};

#include "wgmma_tma_sync.cuh"
#include "wgmma_tma_mma.cuh"
#include "wgmma_tma_schedule.cuh"
#include "wgmma_tma_epilogue.cuh"
#include "wgmma_tma_fp8_scales.cuh"
#include "wgmma_tma_consumer.cuh"

// ---- the kernel ----

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_tma(const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb, int ldc,
                   void* workspace, const gt_scalars scalars,
#if FP8
                   const gt_scales scales,  // plugin ABI v3: after the scalars, before the maps
#endif
                   const __grid_constant__ gt_tensor_map tmA,
                   const __grid_constant__ gt_tensor_map tmB
#if EPILOGUE_TMA
                   , const __grid_constant__ gt_tensor_map tmC  // requested only with the TMA epilogue
#endif
                   ) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes of the address: stages start 1024-aligned.
  const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;
  const u32 stages = base;
  const u32 epi_bufs = stages + STAGES * STAGE_BYTES;  // the epilogue's chunk buffers (1024-aligned), if any
  const u32 full = epi_bufs + (EPILOGUE_TMA ? CONSUMERS * EPI_BUFFERS * CHUNK_BYTES : 0);  // STAGES barriers of 8 bytes
  const u32 empty = full + 8 * STAGES;
  int* flag = reinterpret_cast<int*>(smem_raw + (empty + 8 * STAGES - smem_u32(smem_raw)));

  const Schedule sch(M, N, K, scalars);
  const u32 rank = cluster_rank();
  const long long first = blockIdx.x / CLUSTER, stride = gridDim.x / CLUSTER;
  // Warp-uniform by construction (a shuffle from lane 0), so what derives from it (the consumers'
  // descriptors) can live in uniform registers rather than be computed by every lane.
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);                           // the producer's expect_tx
      mbar_init(empty + 8 * s, CONSUMERS * CLUSTER);        // every consumer warpgroup of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (CLUSTER > 1) cluster_sync();
  else __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
    if (threadIdx.x == 0)
      produce(sch, &tmA, &tmB, stages, full, empty, rank, first, stride);
    __syncwarp();
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
#if EPILOGUE_TMA
    const gt_tensor_map* tmc = &tmC;
#else
    const gt_tensor_map* tmc = nullptr;
#endif
    consume(sch, reinterpret_cast<out_t*>(C), M, N, ldc, workspace, stages, full, empty, rank, first, stride, wg - 1,
            flag, tmc, epi_bufs
#if FP8
            , scales, K
#endif
            );
  }
  // No CTA may leave while a peer can still multicast into it or arrive on its barriers.
  if (CLUSTER > 1) cluster_sync();
#else
  __trap();  // built for a target without wgmma (the family asks for sm_90a)
#endif
}
