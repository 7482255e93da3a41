// The `requests` test family's kernel: a correct fp32 GEMM (one thread per element of C)
// that uses every launch request of plugin ABI v2 and traps when one is not as asked:
//   - it runs in thread-block clusters of CLUSTER_X CTAs;
//   - thread 0 of each CTA copies an 8x8 box of A (at the CTA's first rows) through the
//     tensor map with TMA and compares it with A read directly;
//   - the workspace is present and each CTA counts its launch in it;
//   - scalars.v[0] carries MAGIC.
// Every define has a default, so the file compiles on its own (sm_90a or sm_90).
#ifndef BX
#define BX 16  // threads per block in x (along N)
#endif
#ifndef BY
#define BY 16  // threads per block in y (along M)
#endif
#ifndef CLUSTER_X
#define CLUSTER_X 2  // CTAs per cluster the launch must give
#endif
#ifndef MAGIC
#define MAGIC 12345  // the value scalars.v[0] must carry
#endif
#ifndef HOST_TAG
#define HOST_TAG 0  // set from the host side only (the fingerprint test changes it)
#endif

struct gt_scalars {
  long long v[8];
};
struct __align__(128) gt_tensor_map {
  unsigned long long opaque[16];
};

extern "C" __global__ void __launch_bounds__(BX * BY)
    gemm_requests(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb, int ldc,
                  void* workspace, const gt_scalars scalars, const __grid_constant__ gt_tensor_map mapA) {
  const float* A = static_cast<const float*>(A_);
  const float* B = static_cast<const float*>(B_);
  float* C = static_cast<float*>(C_);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) float box[8 * 8];
  __shared__ __align__(8) unsigned long long bar;
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    unsigned n = 0;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    if (n != CLUSTER_X || scalars.v[0] != MAGIC || workspace == nullptr) __trap();
    atomicAdd(static_cast<unsigned long long*>(workspace), 1ull);
    const unsigned b = unsigned(__cvta_generic_to_shared(&bar)), d = unsigned(__cvta_generic_to_shared(box));
    const int row0 = int(blockIdx.y) * BY;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(8 * 8 * 4) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(d),
        "l"(&mapA), "r"(0), "r"(row0), "r"(b)
        : "memory");
    asm volatile(
        "{\n.reg .pred done;\nwait:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n@!done bra wait;\n}\n" ::"r"(b)
        : "memory");
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        const float direct = row0 + r < M && c < K ? A[(long long)(row0 + r) * lda + c] : 0.f;  // out of bounds: zero fill
        if (box[r * 8 + c] != direct) __trap();
      }
  }
#endif
  const int col = blockIdx.x * BX + threadIdx.x, row = blockIdx.y * BY + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[(long long)row * lda + k] * B[(long long)k * ldb + col];
  C[(long long)row * ldc + col] = acc + float(HOST_TAG) * 0.f;
}
