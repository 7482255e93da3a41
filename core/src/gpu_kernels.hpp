// Kernels core compiles ahead of time with nvcc: input generation, NaN poisoning, the float64
// reference GEMM, error reduction, and the roof kernels. Host-side wrappers only here.
#pragma once

#include "problem.hpp"
#include "transform.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gt {

enum class Distribution : int { normal = 0, uniform = 1, zeros = 2 };
const char* to_string(Distribution d);
Distribution parse_distribution(const char* s);  // InputError when unknown

// count elements of type t: iid N(0,1), U(-1,1) or zeros, from a counter-based hash of
// (seed, index) so the same seed gives the same data on every GPU. (FP8: rounded, unscaled.)
void fill_random(void* p, DType t, size_t count, uint64_t seed, Distribution d, cudaStream_t s);
// An FP8 problem's operand (A or B, as stored, padding included) and its scales: the values
// fill_random would draw, quantised group by group (the problem's scale mode: the whole tensor,
// a row, a 1x128 or 128x128 block) with scale = the group's amax / the type's largest finite
// value, so that the largest of each group lands on it. `scales` holds scale_count_a() (or _b())
// floats, laid out as plugin_abi.h's gt_scale_mode says.
void fill_quantised(const Problem& p, gt_operand which, void* q, float* scales, uint64_t seed, Distribution d,
                    cudaStream_t s);
// Every element NaN: an element a kernel forgets to write fails verification.
void fill_nan(void* p, DType t, size_t count, cudaStream_t s);
// C_ref (M×N, row-major, ld = N) = A·B in float64 from A and B as the problem stores them
// (an FP8 problem's with their scales applied, and an FP8 output's d scale).
void reference_gemm(const Problem& p, const Operands& ops, double* c_ref, cudaStream_t s);

struct ErrorSums {
  double sum_sq_diff = 0, sum_sq_ref = 0, max_abs_diff = 0, max_abs_ref = 0;
  unsigned long long nonfinite = 0;
};
// Reduces C (as the problem stores it) against C_ref. `scratch` holds at least 64 bytes.
ErrorSums compare_to_reference(const Problem& p, const void* c, const double* c_ref, void* scratch, cudaStream_t s);

// Roof kernels. fma_peak: each of `threads` threads runs `iters` iterations of 16 independent
// FMAs (32 FLOP each; iters a multiple of 4). stream_read: reads `bytes` (a multiple of 16) once,
// each of `blocks` blocks an equal contiguous share (size the grid to one wave). `loads`: blocks
// of 256 threads, each thread 8 loads of 16 bytes in flight; `bulk` (sm_90 only): blocks of one
// warp keeping `stages` bulk copies of `chunk_bytes` (a multiple of 16) in flight into shared
// memory, as the decode family's TMA engine streams B; RuntimeFailure when core's kernels were
// not built for sm_90 (CMAKE_CUDA_ARCHITECTURES).
struct StreamRead {
  enum class Engine { loads, bulk };
  Engine engine = Engine::loads;
  int blocks = 1;
  int stages = 6;               // bulk
  int chunk_bytes = 32 * 1024;  // bulk
};
void launch_fma_peak(float* out, int blocks, int threads_per_block, int iters, cudaStream_t s);
void launch_stream_read(const void* x, size_t bytes, float* sink, const StreamRead& how, cudaStream_t s);

// Holds stream s (one spinning thread) until the host writes non-zero to *release, or
// timeout_s passes and it writes 1 to *timed_out. Both point into mapped host memory
// (cudaHostAllocMapped). Timing uses it so that the start event, the call and the end event
// are queued before the GPU reaches them: the interval is then the GPU's time alone, without
// the host's launch latency (nvbench's "blocking kernel" method).
void launch_hold(const volatile int* release, volatile int* timed_out, double timeout_s, cudaStream_t s);

// A transform's copies (transform_kernels.cuh), as raw elements of `elem_size` bytes (1, 2 or 4).
// They return the launch's error instead of throwing: they run inside a candidate's launch.
// launch_pad_copy: the operand `oc` from src into its padded copy at dst (16-byte aligned).
cudaError_t launch_pad_copy(const void* src, void* dst, size_t elem_size, const OperandCopy& oc, cudaStream_t s);
// launch_crop_copy: the caller's C (m x n, ld_dst) from the family's output C' (ld_src), read
// transposed (C[i][j] = C'[j][i]) for a swapped product.
cudaError_t launch_crop_copy(const void* src, void* dst, size_t elem_size, int64_t m, int64_t n, int64_t ld_src,
                             int64_t ld_dst, bool transposed, cudaStream_t s);

}  // namespace gt
