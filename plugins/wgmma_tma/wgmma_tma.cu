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
// -arch sm_90a); wgmma_tma.cpp sets each from the config and the problem.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

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
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40  // setmaxnreg of the producer warpgroup
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232  // setmaxnreg of each consumer warpgroup
#endif
#ifndef FP8
#define FP8 0  // 1: A and B are FP8 (IN_T and IS_BF16 unused), both K-major, scaled per SCALE_MODE
#endif
#ifndef A_E5M2
#define A_E5M2 0  // FP8: 1 when A is e5m2, 0 when e4m3
#endif
#ifndef B_E5M2
#define B_E5M2 0  // FP8: 1 when B is e5m2, 0 when e4m3
#endif
#ifndef SCALE_MODE
#define SCALE_MODE 1  // FP8: gt_scale_mode: 1 one scale per tensor, 2 per row of A / column of B, 3 per block
#endif

typedef unsigned int u32;
typedef unsigned long long u64;
typedef IN_T in_t;
typedef OUT_T out_t;

#if IS_BF16
#define WGMMA_AB "bf16"
#else
#define WGMMA_AB "f16"
#endif
// The wgmma's K, its input types, and its transpose operands: 16-bit wgmma reads either major
// order (imm-trans-a, imm-trans-b: the asm's operands TA, TB); 8-bit wgmma has no such operands
// and reads K-major tiles only.
#if FP8
#if A_E5M2
#define WGMMA_TA "e5m2"
#else
#define WGMMA_TA "e4m3"
#endif
#if B_E5M2
#define WGMMA_TB "e5m2"
#else
#define WGMMA_TB "e4m3"
#endif
#define WGMMA_K "k32"
#define WGMMA_TYPES WGMMA_TA "." WGMMA_TB
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

#if FP8
// An FP8 call's scales (plugin ABI v3's gt_scales: four pointers, by value). `d` and `amax_d`
// concern FP8 outputs, which the family does not build.
struct gt_scales {
  const float* a;
  const float* b;
  const float* d;
  float* amax_d;
};
#endif

// A CUtensorMap as the driver lays it out: 128 opaque bytes, 128-byte aligned (CUDA 13).
struct __align__(128) gt_tensor_map {
  u64 opaque[16];
};

// ---- shared-memory addresses, mbarriers, TMA ----

__device__ __forceinline__ u32 smem_u32(const void* p) { return u32(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
// The producer's arrival on a full barrier, announcing the bytes the stage's copies bring.
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  // The label is local to the braces, so every inlined copy may use the same name.
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta` of the cluster (this
// CTA included).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive_local(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// A consumer warpgroup releases a stage once its wgmma have read it: its thread r arrives on
// the empty barrier of CTA r, since the producer of every CTA of the cluster writes into this
// CTA's stage (multicast).
__device__ __forceinline__ void release_stage(u32 empty_bar, int tid) {
  if (CLUSTER > 1) {
    if (tid < CLUSTER) mbar_arrive_cluster(empty_bar, u32(tid));
  } else if (tid == 0) {
    mbar_arrive_local(empty_bar);
  }
}

// A 2-D tile copy: coordinates are (inner, outer) elements of the operand as stored.
__device__ __forceinline__ void tma_load(u32 dst, const gt_tensor_map* map, u32 bar, int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(inner), "r"(outer)
      : "memory");
}
// The same copy delivered to every CTA of the cluster named in `mask`, each at `dst` of its
// own shared memory, completing on its own barrier at `bar`.
__device__ __forceinline__ void tma_load_multicast(u32 dst, const gt_tensor_map* map, u32 bar, int inner, int outer,
                                                   unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
      "l"(map), "r"(bar), "r"(inner), "r"(outer), "h"(mask)
      : "memory");
}

__device__ __forceinline__ u32 cluster_rank() {
  u32 r = 0;
  if (CLUSTER > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  // Not .aligned: the producer warp arrives here after its one busy lane has reconverged.
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

// ---- wgmma ----

// A shared-memory matrix descriptor with the 128-byte swizzle. K-major tiles (rows of 64
// elements, 8-row atoms of 1024 bytes): the stride offset is the 1024 between atoms and the
// leading offset is unused. MN-major tiles (blocks of 64 M or N by 64 k rows): the leading
// offset is the 8192 bytes between 64-wide blocks, the stride offset the 1024 between groups
// of 8 k rows.
__device__ __forceinline__ u64 smem_desc(u32 addr, u32 leading, u32 stride) {
  return u64((addr & 0x3FFFF) >> 4) | (u64(leading >> 4) << 16) | (u64(stride >> 4) << 32) | (1ull << 62);
}
// The same descriptor `bytes` further on in shared memory. Only the address field (the low 14
// bits, in 16-byte units) moves, and nothing here carries out of it (shared memory ends below
// 256 KB), so the main loop pays one 32-bit add per operand, not the descriptor's arithmetic.
__device__ __forceinline__ u64 desc_advance(u64 desc, u32 bytes) {
  return (desc & 0xFFFFFFFF00000000ull) | u32(u32(desc) + (bytes >> 4));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across a wgmma still in flight.
__device__ __forceinline__ void pin(float* d) {
#pragma unroll
  for (int i = 0; i < M_SUB * ACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// wgmma.mma_async m64nNk16 (FP8: m64nNk32) for each N of the space (the accumulator list is
// spelled out: the instruction names every register).
template <int TA, int TB>
__device__ __forceinline__ void wgmma_n64(float* d, u64 da, u64 db, u32 accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64" WGMMA_K ".f32." WGMMA_TYPES " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
      ", %32, %33, p, 1, 1" WGMMA_TRANS(35, 36) ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
}

template <int TA, int TB>
__device__ __forceinline__ void wgmma_n128(float* d, u64 da, u64 db, u32 accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128" WGMMA_K ".f32." WGMMA_TYPES " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
      ", %64, %65, p, 1, 1" WGMMA_TRANS(67, 68) ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
}

template <int TA, int TB>
__device__ __forceinline__ void wgmma_n192(float* d, u64 da, u64 db, u32 accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192" WGMMA_K ".f32." WGMMA_TYPES " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
      ", %96, %97, p, 1, 1" WGMMA_TRANS(99, 100) ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
}

template <int TA, int TB>
__device__ __forceinline__ void wgmma_n256(float* d, u64 da, u64 db, u32 accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256" WGMMA_K ".f32." WGMMA_TYPES " {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
      ", %128, %129, p, 1, 1" WGMMA_TRANS(131, 132) ";\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
}

template <int TA, int TB>
__device__ __forceinline__ void wgmma(float* d, u64 da, u64 db, u32 accumulate) {
  if (WN == 64) wgmma_n64<TA, TB>(d, da, db, accumulate);
  if (WN == 128) wgmma_n128<TA, TB>(d, da, db, accumulate);
  if (WN == 192) wgmma_n192<TA, TB>(d, da, db, accumulate);
  if (WN == 256) wgmma_n256<TA, TB>(d, da, db, accumulate);
}

// ---- the tile schedule ----

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

// ---- consumers: wgmma over the stages, then the epilogue ----

__device__ __forceinline__ void store_pair(float* c, float x, float y, bool both) {
  if (both) *reinterpret_cast<float2*>(c) = make_float2(x, y);
  else c[0] = x;
}
__device__ __forceinline__ void store_pair(__half* c, float x, float y, bool both) {
  if (both) *reinterpret_cast<__half2*>(c) = __floats2half2_rn(x, y);
  else c[0] = __float2half_rn(x);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* c, float x, float y, bool both) {
  if (both) *reinterpret_cast<__nv_bfloat162*>(c) = __floats2bfloat162_rn(x, y);
  else c[0] = __float2bfloat16_rn(x);
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

#if FP8
// ---- FP8 scales ----
//
// A consumer thread's accumulators (the m64nN layout above) cover, per m64 tile s, rows
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
  int stage = 0;
  [[maybe_unused]] int chunk = 0;  // the TMA epilogue's buffer turn
  u32 phase = 0;
  // This consumer's operands in stage 0 at k = 0: its first 64-row slab of A (a slab is 8192
  // bytes either way: 64 rows of 128 bytes K-major, one 64-wide block of 64 k rows MN-major) and
  // its columns of B (128 bytes a column either way: a K-major row, or 8192 bytes per 64-wide
  // MN-major block). A k16 step (FP8: k32) is 32 bytes along a K-major row, two 1024-byte groups
  // of 8 k rows in an MN-major block (16-bit only).
  const u32 a0 = stages + (WG_ALONG_N ? 0 : wg * M_SUB) * 8192;
  const u32 b0 = stages + A_STAGE_BYTES + (WG_ALONG_N ? wg * WN : 0) * 128;
  const u64 da0 = smem_desc(a0, A_KMAJOR ? 16 : 8192, 1024), db0 = smem_desc(b0, B_KMAJOR ? 16 : 8192, 1024);
  constexpr u32 A_KSTEP = A_KMAJOR ? 32 : 2048, B_KSTEP = B_KMAJOR ? 32 : 2048;
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
    // Block scales: each stage is one 128-wide block of K. Its wgmma start afresh in `part`,
    // and once they are done the consumer adds part x (the block's scales) into acc. The
    // scales of the next block are loaded while this block's wgmma run.
#pragma unroll
    for (int r = 0; r < M_SUB * ACC; ++r) acc[r] = 0.f;
    BlockCursor cur = sc.cursor(w.kt_begin, srow0, scol0);
    BlockScales bs;
    if (w.kt_begin < w.kt_end) bs = cur.load(), cur.next();
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      mbar_wait(full + 8 * stage, phase);
      const u32 at = stage * STAGE_BYTES;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const u64 db = desc_advance(db0, at + ks * B_KSTEP);
#pragma unroll
        for (int s = 0; s < M_SUB; ++s) {
          const u64 da = desc_advance(da0, at + s * 8192 + ks * A_KSTEP);
          wgmma<0, 0>(part + s * ACC, da, db, ks > 0 ? 1u : 0u);
        }
      }
      wgmma_commit();
      BlockScales next = bs;
      if (kt + 1 < w.kt_end) next = cur.load(), cur.next();
      wgmma_wait<0>();
      pin(part);
      release_stage(empty + 8 * stage, tid);
      promote(acc, part, bs, scol0);
      bs = next;
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
#else
    int prev = -1;
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      mbar_wait(full + 8 * stage, phase);
      const u32 at = stage * STAGE_BYTES;
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const u64 db = desc_advance(db0, at + ks * B_KSTEP);
#pragma unroll
        for (int s = 0; s < M_SUB; ++s) {
          const u64 da = desc_advance(da0, at + s * 8192 + ks * A_KSTEP);
          wgmma<A_KMAJOR ? 0 : 1, B_KMAJOR ? 0 : 1>(acc + s * ACC, da, db, (kt > w.kt_begin || ks > 0) ? 1u : 0u);
        }
      }
      wgmma_commit();
#if INFLIGHT
      // One group stays in flight: the previous stage's wgmma are done once this wait returns,
      // and the warpgroup then releases that stage to every producer of the cluster.
      wgmma_wait<1>();
      pin(acc);
      if (prev >= 0) release_stage(empty + 8 * prev, tid);
      prev = stage;
#else
      // This stage's wgmma done before the next are issued: the stage goes back at once (the
      // other consumer's group keeps the tensor cores busy meanwhile).
      wgmma_wait<0>();
      pin(acc);
      release_stage(empty + 8 * stage, tid);
#endif
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    pin(acc);
    if (prev >= 0) release_stage(empty + 8 * prev, tid);
    if (w.kt_end == w.kt_begin) {
#pragma unroll
      for (int r = 0; r < M_SUB * ACC; ++r) acc[r] = 0.f;
    }
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
