// A family that misbehaves on purpose, for the reliability tests. MODE picks what its
// kernel does: 0 computes C = A·B correctly (naive), 1 writes far out of bounds (illegal
// address), 2 executes a trap, 3 spins forever (a hang), 4 leaves C unwritten, 5 does a
// misaligned 8-byte load.
#ifndef MODE
#define MODE 0  // what the kernel does (see above); 0: compute C correctly
#endif

extern "C" __global__ void gemm_faulty(const void* A_, const void* B_, void* C_, int M, int N, int K, int lda, int ldb,
                                       int ldc) {
  const float* A = static_cast<const float*>(A_);
  const float* B = static_cast<const float*>(B_);
  float* C = static_cast<float*>(C_);
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
#if MODE == 1
  if (row == 0 && col == 0) C[(long long)1 << 40] = 1.f;
#elif MODE == 2
  if (row == 0 && col == 0) __trap();
#elif MODE == 3
  // A loop with no side effect may be assumed to end and be deleted; the asm keeps it.
  for (;;) asm volatile("nanosleep.u32 1000;" ::: "memory");
#elif MODE == 5
  if (row == 0 && col == 0) {
    const double* p = reinterpret_cast<const double*>(reinterpret_cast<const char*>(A_) + 4);
    C[0] = float(*p);
  }
#endif
  if (row >= M || col >= N) return;
#if MODE != 4
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[(long long)row * lda + k] * B[(long long)k * ldb + col];
  C[(long long)row * ldc + col] = acc;
#endif
}
