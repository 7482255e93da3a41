// wgmma_tma: shared-memory addresses, mbarriers, TMA copies and the cluster's rank and
// barrier. Part of wgmma_tma.cu's kernel (included after its defines and constants; the
// plugin build copies it into the embedded source).

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
