/* gemmtune plugin ABI, version 4 — the one header a kernel-family plugin depends on.
 *
 * A plugin is a shared library that exports one C symbol:
 *
 *     const gt_plugin* gemmtune_plugin_entry(uint32_t host_abi_version);
 *
 * The host checks `abi_version` and `struct_size` before it calls anything else. It loads
 * plugins of this version, of version 3 and of version 2 (GT_ABI_VERSION_OLDEST): a v2 table
 * is the prefix of a v3 table up to run_op_scaled, a v2 plugin reads the prefix of gt_problem
 * up to align_bytes, and the host never asks a v2 plugin about an FP8 problem. v4 adds no
 * slot (a v3 table is a v4 table); a v3 plugin reads the prefix of gt_problem up to
 * scale_mode, and so sees only align_bytes, never the per-operand alignment of v4. A plugin
 * of any other version is refused by name with the reason. Only plain data crosses this boundary
 * (integers, enums, const char*, pointer + count, opaque handles). No C++ types, no
 * exceptions: every entry point catches everything and returns a gt_status, with a message
 * and, for a refusal, a closed code (gt_refusal) written into the caller's gt_reply.
 *
 * The problem: C = A · B with C of M×N (row-major, leading dimension ldc), reduction over K,
 * fp32 accumulation. FP8 problems (v3: A and B in e4m3 or e5m2) carry scales: C = (A·sa)·(B·sb),
 * the scales' shape given by gt_problem.scale_mode (gt_scale_mode below). Layout letters as on the command line: first A, second B;
 *   'n': A is M×K row-major (lda ≥ K),  B is K×N row-major (ldb ≥ N)
 *   't': A is K×M row-major (lda ≥ M),  B is N×K row-major (ldb ≥ K)
 * Dimensions and leading dimensions fit in int32; element offsets do not have to, so
 * kernels compute `row * ld` in 64 bits.
 *
 * Source families (GT_KIND_SOURCE) return CUDA C++ source that the host compiles with
 * NVRTC, and say how to launch it (gt_kernel). The kernel is `extern "C"` and takes
 *     (const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb, int ldc,
 *      void* workspace, gt_scalars scalars,
 *      const __grid_constant__ CUtensorMap map0, map1, ...)
 * where gt_scalars is `struct { long long v[8]; }` (gt_kernel.scalars, passed by value) and
 * there is one 128-byte, 128-aligned tensor map per gt_kernel.tensor_maps entry, in order.
 * A kernel whose gt_kernel.takes_scales is 1 (v3, FP8 problems) takes a gt_scales (below) by
 * value between `scalars` and the first tensor map.
 * A kernel may stop after the last parameter it uses (after ldc, when it requests nothing).
 * Library families (GT_KIND_LIBRARY, e.g. cuBLASLt) create an opaque operation and run it.
 *
 * What core provides everywhere a kernel runs (tune, run, compare, the runtime library):
 * the tensor maps, encoded per problem and buffer; the thread-block cluster (launched with
 * cudaLaunchKernelEx); dynamic shared memory past 48 KiB (the opt-in attribute); a persistent
 * grid sized from the device's SM count; a device workspace of the requested size, owned by
 * core, zeroed as requested and reused across calls.
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

#define GT_ABI_VERSION 4u
#define GT_ABI_VERSION_OLDEST 2u /* the oldest plugin ABI the host still loads */
#define GT_PLUGIN_ENTRY_SYMBOL "gemmtune_plugin_entry"

#if defined(_WIN32)
#define GT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define GT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

typedef enum gt_status {
  GT_OK = 0,
  GT_REFUSED = 1, /* the plugin cannot implement this (problem, config); the reply says why */
  GT_FAILED = 2   /* an error inside the plugin; the reply's message says what */
} gt_status;

/* Why a (problem, config) is refused: a closed set, so the host never reads the message to
 * tell one kind of refusal from another. */
typedef enum gt_refusal {
  GT_REFUSAL_NONE = 0,
  GT_REFUSAL_DTYPE = 1,     /* the family does not handle this input or output type */
  GT_REFUSAL_LAYOUT = 2,    /* the family does not handle this layout */
  GT_REFUSAL_ARCH = 3,      /* the family does not run on this GPU architecture */
  GT_REFUSAL_SHAPE = 4,     /* this config cannot implement this shape, leading dimension or alignment */
  GT_REFUSAL_RESOURCES = 5, /* this config exceeds the device's limits: shared memory, registers, threads, grid */
  GT_REFUSAL_CONFIG = 6     /* the config itself: a value outside the space, or parameters that contradict */
} gt_refusal;
#define GT_REFUSAL_COUNT 7

/* The host's buffer for a message, and the refusal's code (written with GT_REFUSED). */
typedef struct gt_reply {
  char* msg;
  size_t msg_cap;
  int32_t refusal; /* out: a gt_refusal */
} gt_reply;

typedef enum gt_dtype {
  GT_F32 = 0,
  GT_TF32 = 1,
  GT_F16 = 2,
  GT_BF16 = 3,
  GT_E4M3 = 4, /* v3: FP8 e4m3, the OCP "fn" variant: largest finite 448, no infinity, NaN S.1111.111 */
  GT_E5M2 = 5  /* v3: FP8 e5m2: largest finite 57344, infinities */
} gt_dtype;

/* v3: how an FP8 problem's scales are laid out (all float32, device memory). "sa" scales A,
 * "sb" scales B; C[m][n] = sum_k (A[m][k] * sa(m, k)) * (B[k][n] * sb(k, n)), rounded to C's
 * type (an FP8 C is also multiplied by gt_scales.d first). KB = ceil(K / 128), and KB4 = KB
 * rounded up to a multiple of 4.
 *   TENSOR: sa[0], sb[0].
 *   ROW:    sa[m] (M values, one per row of A and C), sb[n] (N values, one per column of C).
 *   BLOCK:  A (activations) in 1x128 blocks along K: sa[kb * M + m], M contiguous;
 *           B (weights) in 128x128 blocks of (n, k): sb[(n / 128) * KB4 + kb] (rows of KB4).
 *           (cuBLASLt's VEC128_32F and BLK128x128_32F, and torch._scaled_mm's block recipe.) */
typedef enum gt_scale_mode {
  GT_SCALE_NONE = 0, /* no scales: every problem whose inputs are not FP8 */
  GT_SCALE_TENSOR = 1,
  GT_SCALE_ROW = 2,
  GT_SCALE_BLOCK = 3
} gt_scale_mode;
typedef enum gt_layout { GT_NN = 0, GT_NT = 1, GT_TN = 2, GT_TT = 3 } gt_layout;
typedef enum gt_kind { GT_KIND_SOURCE = 0, GT_KIND_LIBRARY = 1 } gt_kind;

typedef struct gt_problem {
  int64_t m, n, k;
  int64_t lda, ldb, ldc; /* in elements */
  int32_t in_dtype;      /* gt_dtype of A, and of B unless b_dtype says otherwise ("tf32": fp32
                            data, tensor-core math) */
  int32_t out_dtype;     /* gt_dtype of C (never GT_TF32) */
  int32_t layout;        /* gt_layout */
  int32_t align_bytes;   /* 1, 2, 4, 8 or 16: divides every ld*elem_size and base pointer */
  /* v3 (a v2 plugin reads the fields above only) */
  int32_t b_dtype;       /* gt_dtype of B: in_dtype, except for mixed FP8 (e4m3 x e5m2) */
  int32_t scale_mode;    /* gt_scale_mode: GT_SCALE_NONE unless A and B are FP8 */
  /* v4 (a v3 plugin reads the fields above only). Each operand's own alignment: the largest
   * power of two (bytes, at most 16) dividing its ld*elem_size and its base pointer. Never
   * below align_bytes, which is their minimum and the one alignment in a result's key; they
   * tell a family which operand is misaligned (e.g. only C, whose ldc is odd, while A and B
   * can still be read by TMA). Where a pointer is not known per operand, core takes the
   * least the key allows for each. */
  int32_t align_a, align_b, align_c;
} gt_problem;

/* v3: an FP8 problem's scales for one call (device pointers; gt_scale_mode says how many).
 * `d` (NULL: 1) multiplies an FP8 output before it is rounded; `amax_d` (NULL: not wanted)
 * receives max |C| before that rounding. */
typedef struct gt_scales {
  const float* a;
  const float* b;
  const float* d;
  float* amax_d;
} gt_scales;

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

/* The operands a tensor map can describe, each as stored: rows x columns, row-major, the
 * columns contiguous (A: M×K for 'n', K×M for 't'; B: K×N for 'n', N×K for 't'; C: M×N).
 * The element type is the problem's (A: in_dtype, B: b_dtype, C: out_dtype). */
typedef enum gt_operand { GT_OPERAND_A = 0, GT_OPERAND_B = 1, GT_OPERAND_C = 2 } gt_operand;

/* A TMA tensor map core encodes (cuTensorMapEncodeTiled) for the operand's buffer of each
 * call. Rank 2: dimension 0 runs along a row (the columns), dimension 1 across rows; global
 * dimensions and the row stride come from the problem. The enums take the values of the
 * driver's CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion and
 * CUtensorMapFloatOOBfill (0: none / zeros). */
typedef struct gt_tensor_map_request {
  int32_t operand;            /* gt_operand */
  int32_t rank;               /* 2 */
  uint32_t box[2];            /* elements copied per request: box[0] along a row (its bytes a
                                 multiple of 16, at most the swizzle span), box[1] rows; each <= 256 */
  uint32_t element_strides[2]; /* 1 for dense boxes (1..8) */
  int32_t interleave;
  int32_t swizzle;
  int32_t l2_promotion;
  int32_t oob_fill;           /* out-of-bounds elements read as zeros (0), or NaN (1) */
  int32_t reserved[4];
} gt_tensor_map_request;
#define GT_MAX_TENSOR_MAPS 3
#define GT_SCALARS 8

typedef enum gt_workspace_zero {
  GT_WORKSPACE_ZERO_NEVER = 0,    /* contents undefined */
  GT_WORKSPACE_ZERO_ONCE = 1,     /* zeroed when allocated: the kernel leaves it as it found it */
  GT_WORKSPACE_ZERO_EACH_CALL = 2 /* zeroed before every launch (the memset is timed with it) */
} gt_workspace_zero;

/* A kernel to compile and launch. Strings valid until the next call from this thread.
 * Everything here is part of a measurement's build fingerprint: a change to any of it makes
 * the stored measurements of the config stale. */
typedef struct gt_kernel {
  const char* source;      /* CUDA C++ source (NVRTC) */
  const char* source_name; /* file name shown in compiler messages */
  const char* kernel_name; /* extern "C" entry */
  const char* const* options; /* extra NVRTC options, typically -DNAME=VALUE */
  int32_t option_count;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_smem_bytes; /* past the device's 48 KiB default, core sets the opt-in attribute */
  uint32_t cluster[3];         /* thread-block cluster ({0,0,0} or {1,1,1}: none); the grid is
                                  a multiple of it */
  uint32_t grid_per_sm;        /* 0: grid as given. n > 0: persistent: grid[0] becomes
                                  min(grid[0], n × the device's SMs), rounded down to a
                                  multiple of cluster[0] (at least one cluster) */
  int32_t arch_specific;       /* 1: compile for the architecture-specific target (sm_90a:
                                  wgmma, setmaxnreg) */
  int32_t workspace_zero;      /* gt_workspace_zero */
  uint64_t workspace_bytes;    /* device workspace passed as the `workspace` parameter (0: NULL) */
  int32_t tensor_map_count;    /* 0..GT_MAX_TENSOR_MAPS */
  gt_tensor_map_request tensor_maps[GT_MAX_TENSOR_MAPS];
  int64_t scalars[GT_SCALARS]; /* passed by value as the `scalars` parameter: launch values
                                  that need no recompile (a schedule, a split count) */
  int32_t takes_scales;        /* v3: 1: the kernel takes a gt_scales after `scalars` (FP8) */
  uint32_t reserved[7];
} gt_kernel;

typedef struct gt_plugin {
  uint32_t abi_version; /* GT_ABI_VERSION the plugin was built against */
  uint32_t struct_size; /* sizeof(gt_plugin) as the plugin saw it */
  const char* name;     /* family name: lower case, digits and '_' */
  const char* version;  /* family version; part of every stored result's provenance */
  const char* summary;  /* one line */
  int32_t kind;         /* gt_kind */
  uint64_t source_hash; /* hash of the kernel source (library families: of the library
                           version): provenance. Reuse of a stored measurement is decided by
                           the exact build (gt_kernel, or op_hash) */

  /* Which dtypes/layouts the family handles at all is answered by can_implement; this is
   * the parameter space for a problem. `device` may describe an architecture only. */
  gt_status (*describe_space)(const gt_problem* problem, const gt_device* device,
                              gt_space* out, gt_reply* reply);

  /* GT_OK, or GT_REFUSED with its code and reason (an unsupported dtype: GT_REFUSAL_DTYPE;
   * a tile too large for the shared memory: GT_REFUSAL_RESOURCES, "needs 300000 bytes of
   * shared memory; the device allows 232448"). The host records GT_REFUSAL_RESOURCES as
   * `resources`, every other code as `cannot_implement`. Cheap: called for every point a
   * search looks at. Agrees with build_kernel: what it accepts builds. */
  gt_status (*can_implement)(const gt_problem* problem, const int64_t* config, int32_t n,
                             const gt_device* device, gt_reply* reply);

  /* Source families: the kernel for (problem, config). NULL for library families. */
  gt_status (*build_kernel)(const gt_problem* problem, const int64_t* config, int32_t n,
                            const gt_device* device, gt_kernel* out, gt_reply* reply);

  /* Optional (may be NULL): configs the family recommends for this problem, best first
   * (cuBLASLt: its heuristic; rank 0 is "cuBLASLt's choice"). Writes up to `max` configs of
   * the space's parameter count each into `configs`, and their number into `count`. */
  gt_status (*suggest)(const gt_problem* problem, const gt_device* device, int32_t max,
                       int64_t* configs, int32_t* count, gt_reply* reply);

  /* Library families (NULL for source families). create_op does the expensive setup for a
   * (problem, config) on the current CUDA device and says how much workspace it needs;
   * run_op runs it on `stream` (a cudaStream_t); destroy_op frees it. */
  gt_status (*create_op)(const gt_problem* problem, const int64_t* config, int32_t n,
                         void** op, uint64_t* workspace_bytes, gt_reply* reply);
  gt_status (*run_op)(void* op, const void* a, const void* b, void* c, void* workspace,
                      uint64_t workspace_bytes, void* stream, gt_reply* reply);
  void (*destroy_op)(void* op);

  /* Library families, optional: a hash of what create_op builds for (problem, config),
   * computed without a GPU (cuBLASLt: the algorithm attributes it sets). A stored
   * measurement is reused only while this hash is unchanged. NULL: core hashes the config
   * with the family's version and provenance. */
  gt_status (*op_hash)(const gt_problem* problem, const int64_t* config, int32_t n,
                       uint64_t* hash, gt_reply* reply);

  /* Optional: a readable description of a config (tile, stages, split-K, ...). */
  gt_status (*describe_config)(const gt_problem* problem, const int64_t* config, int32_t n,
                               char* out, size_t out_cap);

  /* Optional: extra provenance, e.g. "cublasLt 130000". Valid for the life of the process. */
  const char* (*provenance)(void);

  /* v3. Library families that run FP8 problems (NULL otherwise): run_op with the call's
   * scales. The host calls it, never run_op, for a problem whose scale_mode is not NONE. */
  gt_status (*run_op_scaled)(void* op, const void* a, const void* b, void* c, const gt_scales* scales,
                             void* workspace, uint64_t workspace_bytes, void* stream, gt_reply* reply);
} gt_plugin;

/* The size of a v2 table: everything before run_op_scaled. */
#define GT_PLUGIN_V2_SIZE offsetof(gt_plugin, run_op_scaled)

typedef const gt_plugin* (*gt_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif /* GEMMTUNE_PLUGIN_ABI_H */
