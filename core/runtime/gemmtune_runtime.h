/* gemmtune runtime — C API.
 *
 * Load a lookup table that `gemmtune export` wrote (JSON or TOML), and run C = A·B with the
 * config it names for the problem, by the rule `gemmtune lookup` answers with (the same
 * function; docs/lookup.md): the exact key; else the nearest tuned shape of the problem's
 * M regime (decode or prefill) within a log-space distance whose config can run the problem
 * (where that shape's winner was its family's default, such as cuBLASLt's heuristic pick, the
 * family's default for this problem), and only where that answer is backed: by the table's
 * evidence measured on this GPU model (gemmtune validate), or by the online check (options.online);
 * else cuBLASLt's heuristic pick; else, only when one is named, another family's default config.
 * So a table never makes a program slower than running the default. Entries are the device's own, else those of its
 * architecture, else any device's (unless exact_device). The first call for a problem picks
 * and builds the config (NVRTC through the cubin cache, or the cuBLASLt algorithm re-created
 * from its attributes); every later call for the same problem only launches.
 *
 * A problem is its sizes, types, layout, leading dimensions and the alignment of the actual
 * pointers (the largest power of two, at most 16 bytes, dividing every base pointer and
 * every leading dimension times the element size). Layouts as gemmtune's command line:
 * first letter A, second B; 'n' = as written (A M×K, B K×N, row-major), 't' = stored
 * transposed (A K×M, B N×K, row-major); C is M×N row-major with ldc. Accumulation is fp32.
 *
 * FP8 (A and B in e4m3 or e5m2, layout NT): gemmtune_gemm_scaled takes the scales too,
 * shaped as the scale mode says (gemmtune_scale_mode); what a table answers for an FP8 problem
 * is its entries of that mode and those types.
 *
 * Errors: every function returns a status; nothing is thrown across this interface. The
 * message of the last failure on the calling thread is gemmtune_last_error().
 * Threads: one handle may be used from several threads; the first call for a problem
 * serialises with other first calls. Calls must be made with the handle's GPU current.
 * Calls of one cuBLASLt-backed problem share its workspace, and calls of a problem whose entry
 * has a transform (pad, swap) share the buffers of its copies, which the runtime owns and reuses:
 * do not run them concurrently on different streams.
 */
#ifndef GEMMTUNE_RUNTIME_H
#define GEMMTUNE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gemmtune_status {
  GEMMTUNE_SUCCESS = 0,
  GEMMTUNE_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad size, an unknown enum value, no plugins */
  GEMMTUNE_ERROR_BAD_TABLE = 2,        /* the table cannot be read, or names a config that no longer exists */
  GEMMTUNE_ERROR_NO_GPU = 3,           /* no usable GPU (a dry run needs none) */
  GEMMTUNE_ERROR_NOT_SUPPORTED = 4,    /* no entry can run the problem and there is no default */
  GEMMTUNE_ERROR_BUILD_FAILED = 5,     /* compiling, loading or creating the chosen config failed */
  GEMMTUNE_ERROR_LAUNCH_FAILED = 6,    /* the launch returned a CUDA error */
  GEMMTUNE_ERROR_INTERNAL = 7          /* anything else (out of host memory, ...) */
} gemmtune_status;

/* Values as in gemmtune's plugin ABI (gt_dtype, gt_layout, gt_scale_mode). */
typedef enum gemmtune_dtype {
  GEMMTUNE_F32 = 0,
  GEMMTUNE_TF32 = 1, /* fp32 data on tensor cores; input only */
  GEMMTUNE_F16 = 2,
  GEMMTUNE_BF16 = 3,
  GEMMTUNE_E4M3 = 4, /* FP8 e4m3 ("fn": largest finite 448); through gemmtune_gemm_scaled */
  GEMMTUNE_E5M2 = 5  /* FP8 e5m2 (largest finite 57344); through gemmtune_gemm_scaled */
} gemmtune_dtype;
/* How an FP8 problem's float32 scales are shaped (C = (A·sa)·(B·sb)); KB = ceil(K/128),
 * KB4 = KB rounded up to a multiple of 4:
 *   TENSOR: one scale each.  ROW: sa[m] (M values), sb[n] (N values).
 *   BLOCK:  sa[kb*M + m] (1x128 blocks of A along K, M contiguous),
 *           sb[(n/128)*KB4 + kb] (128x128 blocks of B, stored N x K). */
typedef enum gemmtune_scale_mode {
  GEMMTUNE_SCALE_NONE = 0,
  GEMMTUNE_SCALE_TENSOR = 1,
  GEMMTUNE_SCALE_ROW = 2,
  GEMMTUNE_SCALE_BLOCK = 3
} gemmtune_scale_mode;
typedef enum gemmtune_layout { GEMMTUNE_NN = 0, GEMMTUNE_NT = 1, GEMMTUNE_TN = 2, GEMMTUNE_TT = 3 } gemmtune_layout;

/* Operands a program keeps constant from call to call (its weights), for gemmtune_gemm_constant. */
#define GEMMTUNE_CONSTANT_A 1u
#define GEMMTUNE_CONSTANT_B 2u
typedef enum gemmtune_match {
  GEMMTUNE_MATCH_EXACT = 0,   /* an entry for exactly this key */
  GEMMTUNE_MATCH_NEAREST = 1, /* the nearest tuned shape (log space over M, N, K) */
  GEMMTUNE_MATCH_DEFAULT = 2  /* nothing in the table fits: the default */
} gemmtune_match;

typedef struct gemmtune_options {
  uint32_t struct_size;       /* sizeof(gemmtune_options); set by gemmtune_options_init */
  const char* plugin_dirs;    /* colon-separated; NULL: GEMMTUNE_PLUGIN_PATH, else the library's own: the
                                 install's lib/gemmtune/plugins, or "plugins" beside it in a build (linked
                                 statically: beside the program, or ../lib/gemmtune/plugins from its bin/) */
  const char* cache_dir;      /* compiled kernels; NULL: GEMMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/gemmtune */
  int32_t device;             /* CUDA device ordinal; -1: the current device */
  int32_t dry_run;            /* nonzero: everything but the launch (no GPU needed; nothing is computed) */
  const char* arch;           /* dry run: the architecture to compile for (NULL: the GPU's, else sm_90) */
  const char* device_name;    /* use this device's table entries (NULL: the GPU's name; dry run: none named) */
  const char* default_family; /* where cuBLASLt cannot answer: this family's default config (NULL: none) */
  int32_t exact_device;       /* nonzero: only the device's own entries, no same-architecture or any-device ones */
  double max_distance;        /* nearest entries within this log-space distance (default ln 4 = 1.386; INFINITY: any) */
  int64_t decode_max_m;       /* M <= this is the decode regime (default 16); nearest entries serve their own regime (decode: their own N) */
  /* A transfer (an answer from a nearest entry) runs only where it is backed: by the table's
   * evidence for this GPU model (gemmtune validate), or by the online check; else cuBLASLt's pick
   * runs (docs/lookup.md, "Backed answers"). */
  int32_t unbacked_transfers; /* nonzero: any transfer, without evidence (to measure the rules) */
  int32_t online;             /* the online check: -1 (default): GEMMTUNE_ONLINE decides ("1": on); 0: off; 1: on.
                                 An unbacked transfer is timed against cuBLASLt's pick on its problem's first
                                 gemmtune_gemm (on its stream, with scratch buffers; that call waits), the faster
                                 is kept and the decision written to online_file */
  const char* online_file;    /* NULL: GEMMTUNE_ONLINE_FILE, else beside the table (TABLE.online.jsonl) */
  const char* record_untuned; /* append every problem answered without an exact entry to this job file, which
                                 `gemmtune tune --config FILE` reads as it is; NULL: GEMMTUNE_RECORD_UNTUNED */
} gemmtune_options;

typedef struct gemmtune_gemm_args {
  int64_t m, n, k;
  int32_t in_dtype;  /* gemmtune_dtype of A and B */
  int32_t out_dtype; /* gemmtune_dtype of C (not TF32) */
  int32_t layout;    /* gemmtune_layout */
  const void* a;
  int64_t lda; /* in elements */
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
} gemmtune_gemm_args;

/* An FP8 call's scales and B's type (device pointers, float32). */
typedef struct gemmtune_scales {
  uint32_t struct_size; /* sizeof(gemmtune_scales) */
  int32_t mode;         /* gemmtune_scale_mode: TENSOR, ROW or BLOCK */
  int32_t b_dtype;      /* B's gemmtune_dtype when it differs from A's (e4m3 x e5m2); -1: A's */
  const float* a;       /* A's scales */
  const float* b;       /* B's scales */
  const float* d;       /* an FP8 output's: C = round(d * ...); NULL: 1 */
  float* amax_d;        /* receives max|C| before rounding where the config computes it; NULL: not asked */
} gemmtune_scales;

typedef struct gemmtune_runtime gemmtune_runtime; /* opaque */

/* Fills the defaults in. */
void gemmtune_options_init(gemmtune_options* options);

/* Loads the table and the plugins. `options` may be NULL (defaults). On failure *out is NULL. */
gemmtune_status gemmtune_create(const char* table_path, const gemmtune_options* options, gemmtune_runtime** out);
void gemmtune_destroy(gemmtune_runtime* rt);

/* C = A·B on `stream` (a cudaStream_t; NULL: the default stream). Asynchronous like a
 * kernel launch. The first call for a problem also picks and builds its config. */
gemmtune_status gemmtune_gemm(gemmtune_runtime* rt, const gemmtune_gemm_args* args, void* stream);

/* The same for FP8 inputs (args->in_dtype GEMMTUNE_E4M3 or GEMMTUNE_E5M2, layout NT), with
 * `scales` (for any other input type `scales` must be NULL, and this is gemmtune_gemm). */
gemmtune_status gemmtune_gemm_scaled(gemmtune_runtime* rt, const gemmtune_gemm_args* args, const gemmtune_scales* scales,
                                     void* stream);

/* gemmtune_gemm with operands declared constant (`constant`: GEMMTUNE_CONSTANT_A | _B): the
 * program passes the same buffer, with the same contents, on every call (a layer's weights).
 * Where the config's transform pads such an operand, it is copied once per buffer, at the first
 * call with that buffer, into a buffer the runtime owns; later calls read that copy (so change a
 * constant buffer's contents only under a new pointer). Table entries tuned with a constant
 * operand (`gemmtune tune --constant b`) serve only calls that declare it; gemmtune_gemm never
 * uses them. */
gemmtune_status gemmtune_gemm_constant(gemmtune_runtime* rt, const gemmtune_gemm_args* args, uint32_t constant,
                                       void* stream);
/* gemmtune_choice for a call of gemmtune_gemm_constant. */
gemmtune_status gemmtune_choice_constant(gemmtune_runtime* rt, const gemmtune_gemm_args* args, uint32_t constant,
                                         int32_t* match, char* config, size_t config_cap, char* how, size_t how_cap);
/* Picks and builds the config for the problem of `args` (the pointers count for their
 * alignment only) without running it, and says what it chose: `match`, the config's
 * canonical name (with its problem transform, "...+pad", where the entry has one: the runtime
 * then copies the operands into padded buffers it owns, or runs the swapped product; see
 * docs/transforms.md) and how it was found ("exact", "nearest (from 4096x4096x4096)",
 * "default (cuBLASLt's heuristic pick)"). Any output may be NULL; strings are truncated to
 * their capacity and always NUL-terminated. In a dry run without a GPU the config of
 * cuBLASLt's pick cannot be named: `config` is "" and `how` says so. */
gemmtune_status gemmtune_choice(gemmtune_runtime* rt, const gemmtune_gemm_args* args, int32_t* match, char* config,
                                size_t config_cap, char* how, size_t how_cap);
/* The same for an FP8 problem: `scales` gives its mode and B's type (its pointers count for
 * nothing here). */
gemmtune_status gemmtune_choice_scaled(gemmtune_runtime* rt, const gemmtune_gemm_args* args,
                                       const gemmtune_scales* scales, int32_t* match, char* config, size_t config_cap,
                                       char* how, size_t how_cap);

/* Everything the runtime chose for the problem of `args` (scales: NULL, or an FP8 problem's), as a
 * JSON object: {"match", "rule", "backing", "backing_note", "pending", "how", "reason", "family",
 * "config" (with its transform), "params", "transform", "problem", "tuned_key", "unchecked", "note"}
 * (docs/lookup.md). *json stays valid until the next gemmtune call on this thread. */
gemmtune_status gemmtune_choice_json(gemmtune_runtime* rt, const gemmtune_gemm_args* args,
                                     const gemmtune_scales* scales, const char** json);

/* Starts recording the problems answered without an exact entry into the job file `path` (as
 * gemmtune_options.record_untuned), or stops it (NULL or ""). */
gemmtune_status gemmtune_set_record_untuned(gemmtune_runtime* rt, const char* path);

/* What the handle runs on: the CUDA device ordinal (-1 in a dry run), whether it is a dry
 * run, the architecture it builds for ("sm_90") and the device whose entries it uses (""
 * for every entry). Any output may be NULL; strings as for gemmtune_choice. */
gemmtune_status gemmtune_runtime_info(gemmtune_runtime* rt, int32_t* device, int32_t* dry_run, char* arch,
                                      size_t arch_cap, char* device_name, size_t device_name_cap);

/* The table the handle loaded, as JSON: {"table": its path, "generated_at", "generator",
 * "source", "entries": [...]}, each entry with the fields of an entry of a JSON table.
 * *json stays valid until gemmtune_destroy(rt). */
gemmtune_status gemmtune_table_json(gemmtune_runtime* rt, const char** json);

/* The library's version, "MAJOR.MINOR.PATCH". */
const char* gemmtune_version(void);

/* The message of the last failure on this thread ("" after a success). Valid until the next
 * gemmtune call on this thread. */
const char* gemmtune_last_error(void);
const char* gemmtune_status_string(gemmtune_status status);

#ifdef __cplusplus
}
#endif
#endif /* GEMMTUNE_RUNTIME_H */
