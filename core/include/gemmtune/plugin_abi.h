/* gemmtune plugin ABI — the one header a kernel-family plugin depends on.
 *
 * A plugin is a shared library that exports one C symbol:
 *
 *     const gt_plugin* gemmtune_plugin_entry(uint32_t host_abi_version);
 *
 * The host checks `abi_version` and `struct_size` before it calls anything else.
 * Only plain data crosses this boundary (integers, enums, const char*, pointer + count,
 * opaque handles). No C++ types, no exceptions: every entry point catches everything and
 * returns a gt_status with a message written into the caller's buffer (msg, msg_cap).
 *
 * The problem: C = A · B with C of M×N (row-major, leading dimension ldc), reduction over K,
 * fp32 accumulation. Layout letters as on the command line: first A, second B;
 *   'n': A is M×K row-major (lda ≥ K),  B is K×N row-major (ldb ≥ N)
 *   't': A is K×M row-major (lda ≥ M),  B is N×K row-major (ldb ≥ K)
 * Dimensions and leading dimensions fit in int32; element offsets do not have to, so
 * kernels compute `row * ld` in 64 bits.
 *
 * Source families (GT_KIND_SOURCE) return CUDA C++ source that the host compiles with
 * NVRTC; the kernel must be `extern "C"` and take exactly
 *     (const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb, int ldc)
 * Library families (GT_KIND_LIBRARY, e.g. cuBLASLt) create an opaque operation and run it.
 *
 * Strings a plugin returns (in gt_space, gt_kernel) stay valid for the life of the process,
 * or, where a slot says so, until the next call into the plugin from the same thread.
 */
#ifndef GEMMTUNE_PLUGIN_ABI_H
#define GEMMTUNE_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GT_ABI_VERSION 1u
#define GT_PLUGIN_ENTRY_SYMBOL "gemmtune_plugin_entry"

#if defined(_WIN32)
#define GT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define GT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

typedef enum gt_status {
  GT_OK = 0,
  GT_REFUSED = 1, /* the plugin cannot implement this (problem, config); msg says why */
  GT_FAILED = 2   /* an error inside the plugin; msg says what */
} gt_status;

typedef enum gt_dtype { GT_F32 = 0, GT_TF32 = 1, GT_F16 = 2, GT_BF16 = 3 } gt_dtype;
typedef enum gt_layout { GT_NN = 0, GT_NT = 1, GT_TN = 2, GT_TT = 3 } gt_layout;
typedef enum gt_kind { GT_KIND_SOURCE = 0, GT_KIND_LIBRARY = 1 } gt_kind;

typedef struct gt_problem {
  int64_t m, n, k;
  int64_t lda, ldb, ldc; /* in elements */
  int32_t in_dtype;      /* gt_dtype of A and B ("tf32": fp32 data, tensor-core math) */
  int32_t out_dtype;     /* gt_dtype of C (never GT_TF32) */
  int32_t layout;        /* gt_layout */
  int32_t align_bytes;   /* 1, 2, 4, 8 or 16: divides every ld*elem_size and base pointer */
} gt_problem;

/* What the device allows; filled from cudaGetDeviceProperties, or from a table for an
 * architecture named on a machine without a GPU. */
typedef struct gt_device {
  int32_t cc_major, cc_minor;
  int32_t sm_count;
  int32_t warp_size;
  int32_t max_threads_per_block;
  int32_t max_threads_per_sm;
  int32_t max_blocks_per_sm;
  int32_t regs_per_block;
  int32_t regs_per_sm;
  int32_t smem_per_block;       /* bytes without opt-in (48 KiB) */
  int32_t smem_per_block_optin; /* bytes with cudaFuncAttributeMaxDynamicSharedMemorySize */
  int32_t smem_per_sm;
  int64_t l2_bytes;
  int64_t global_mem_bytes;
  int32_t has_device; /* 0 when these are an architecture's limits and no GPU is present */
  int32_t reserved[7];
} gt_device;

/* One tunable parameter: a name and an ordered list of integer values. `labels`, when not
 * NULL, names each value (e.g. "coalesced"), and names are used in config names. */
typedef struct gt_param {
  const char* name;
  const char* help; /* one line: what it means */
  const int64_t* values;
  const char* const* labels; /* NULL or `count` strings */
  int32_t count;
  int32_t default_index; /* index into values of the family's default */
} gt_param;

typedef struct gt_space {
  const gt_param* params;
  int32_t count;
} gt_space;

/* A kernel to compile and launch. Strings valid until the next call from this thread. */
typedef struct gt_kernel {
  const char* source;      /* CUDA C++ source (NVRTC) */
  const char* source_name; /* file name shown in compiler messages */
  const char* kernel_name; /* extern "C" entry */
  const char* const* options; /* extra NVRTC options, typically -DNAME=VALUE */
  int32_t option_count;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_smem_bytes;
  uint32_t reserved[8];
} gt_kernel;

typedef struct gt_plugin {
  uint32_t abi_version; /* GT_ABI_VERSION the plugin was built against */
  uint32_t struct_size; /* sizeof(gt_plugin) as the plugin saw it */
  const char* name;     /* family name: lower case, digits and '_' */
  const char* version;  /* family version; part of every stored result's provenance */
  const char* summary;  /* one line */
  int32_t kind;         /* gt_kind */
  uint64_t source_hash; /* hash of the kernel source (library families: of the library
                           version); a change makes stored results stale */

  /* Which dtypes/layouts the family handles at all is answered by can_implement; this is
   * the parameter space for a problem. `device` may describe an architecture only. */
  gt_status (*describe_space)(const gt_problem* problem, const gt_device* device,
                              gt_space* out, char* msg, size_t msg_cap);

  /* GT_OK, or GT_REFUSED with the reason (unsupported dtype, tile too large for the
   * shared memory, ...). A reason that is a limit of the device says "the device" (e.g.
   * "needs 300000 bytes of shared memory; the device allows 232448"): the host records it
   * as `resources`, any other refusal as `cannot_implement`. Cheap: called for every point
   * a search looks at. */
  gt_status (*can_implement)(const gt_problem* problem, const int64_t* config, int32_t n,
                             const gt_device* device, char* msg, size_t msg_cap);

  /* Source families: the kernel for (problem, config). NULL for library families. */
  gt_status (*build_kernel)(const gt_problem* problem, const int64_t* config, int32_t n,
                            const gt_device* device, gt_kernel* out, char* msg, size_t msg_cap);

  /* Optional (may be NULL): configs the family recommends for this problem, best first
   * (cuBLASLt: its heuristic; rank 0 is "cuBLASLt's choice"). Writes up to `max` configs of
   * the space's parameter count each into `configs`, and their number into `count`. */
  gt_status (*suggest)(const gt_problem* problem, const gt_device* device, int32_t max,
                       int64_t* configs, int32_t* count, char* msg, size_t msg_cap);

  /* Library families (NULL for source families). create_op does the expensive setup for a
   * (problem, config) on the current CUDA device and says how much workspace it needs;
   * run_op runs it on `stream` (a cudaStream_t); destroy_op frees it. */
  gt_status (*create_op)(const gt_problem* problem, const int64_t* config, int32_t n,
                         void** op, uint64_t* workspace_bytes, char* msg, size_t msg_cap);
  gt_status (*run_op)(void* op, const void* a, const void* b, void* c, void* workspace,
                      uint64_t workspace_bytes, void* stream, char* msg, size_t msg_cap);
  void (*destroy_op)(void* op);

  /* Optional: a readable description of a config (tile, stages, split-K, ...). */
  gt_status (*describe_config)(const gt_problem* problem, const int64_t* config, int32_t n,
                               char* out, size_t out_cap);

  /* Optional: extra provenance, e.g. "cublasLt 130000". Valid for the life of the process. */
  const char* (*provenance)(void);
} gt_plugin;

typedef const gt_plugin* (*gt_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif /* GEMMTUNE_PLUGIN_ABI_H */
