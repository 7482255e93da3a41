// gemmtune runtime — C++ API. What it does, and what a problem is: see gemmtune_runtime.h.
//
//   gemmtune::Runtime rt("table.json");           // plugins: GEMMTUNE_PLUGIN_PATH, else the library's own
//   gemmtune::GemmArgs g{m, n, k, GEMMTUNE_F16, GEMMTUNE_F16, GEMMTUNE_NN, dA, k, dB, n, dC, n};
//   rt.gemm(g, stream);                            // first call: pick + build; then: launch only
//
// Failures throw gemmtune::Error, whose status() is the C API's status code.
//
// The hot path. After the first call for a problem, gemm() computes the problem's key from
// the arguments (sizes, types, layout, leading dimensions, the alignment of the pointers),
// finds its prepared kernel in a hash map under a shared lock and launches it: no compile,
// no allocation, no plugin call other than the launch itself (a library family's run).
#pragma once

#include "gemmtune_runtime.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmtune {

class Error : public std::runtime_error {
 public:
  Error(gemmtune_status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  gemmtune_status status() const noexcept { return status_; }

 private:
  gemmtune_status status_;
};

struct Options {
  std::vector<std::string> plugin_dirs;   // empty: GEMMTUNE_PLUGIN_PATH, else the library's own (gemmtune_runtime.h)
  std::string cache_dir;                  // empty: GEMMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/gemmtune
  int device = -1;                        // CUDA ordinal; -1: the device current at creation
  bool dry_run = false;                   // everything but the launch; needs no GPU
  std::string arch;                       // dry run: the architecture compiled for ("": the GPU's, else sm_90)
  std::string device_name;                // whose entries to use ("": the GPU's name; dry run: none named)
  bool exact_device = false;              // only that device's entries (no same-architecture or any-device tier)
  double max_distance = 1.3862943611198906;  // nearest entries within this log-space distance (ln 4); inf: any
  int64_t decode_max_m = 16;              // M <= this is the decode regime; a nearest entry serves its own regime (decode: its own N)
  std::string default_family;             // where cuBLASLt's heuristic cannot answer: this family's default ("": none)
  // A transfer (nearest, transferred, adapted) runs only where it is backed: by the table's
  // evidence for this GPU model, or by the online check; else the library's default runs
  // (docs/lookup.md, "Backed answers"). true: any transfer, as before (to measure the rules).
  bool unbacked_transfers = false;
  // The online check: a transfer no evidence backs is timed against the default on its
  // problem's first gemm() (on the caller's stream, with scratch buffers of the runtime's own;
  // that call waits for it), the faster is kept and the decision written to online_file, which
  // later processes read instead of timing again. -1: GEMMTUNE_ONLINE decides ("1": on, "0" or
  // unset: off); 0: off; 1: on.
  int online = -1;
  // The decisions' file ("": GEMMTUNE_ONLINE_FILE, else beside the table: TABLE.online.jsonl).
  // Where it cannot be written they are kept in this process only (one warning on stderr).
  std::string online_file;
  // Every problem answered without an exact entry is appended to this job file, which
  // `gemmtune tune --config FILE` reads as it is ("": GEMMTUNE_RECORD_UNTUNED, else none).
  std::string record_untuned;
};

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  gemmtune_dtype in = GEMMTUNE_F32;
  gemmtune_dtype out = GEMMTUNE_F32;
  gemmtune_layout layout = GEMMTUNE_NN;
  const void* a = nullptr;
  int64_t lda = 0;  // elements
  const void* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  // FP8 inputs (in e4m3 or e5m2, layout NT): the scale mode, the scales (device float32,
  // shaped as gemmtune_runtime.h says) and, for e4m3 x e5m2, B's type.
  gemmtune_scale_mode scale = GEMMTUNE_SCALE_NONE;
  int32_t in_b = -1;  // B's gemmtune_dtype where it differs from `in`; -1: `in`
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  const float* scale_d = nullptr;  // an FP8 output's d scale (nullptr: 1)
  float* amax_d = nullptr;         // receives max|C| where the config computes it (nullptr: not asked)
  // The operands the program keeps constant from call to call (its weights):
  // GEMMTUNE_CONSTANT_A | GEMMTUNE_CONSTANT_B. A transform then copies such an operand once per
  // buffer (the first call with it) into a buffer of its own, and each later call copies only
  // what changes; entries tuned with a constant operand serve only calls that declare it.
  uint32_t constant = 0;
};

// What the runtime chose for a problem, and what preparing it cost.
struct Choice {
  gemmtune_match match = GEMMTUNE_MATCH_EXACT;
  std::string how;          // "exact", "nearest (from 4096x4096x4096)", "default (...)"
  std::string rule;         // the step that served it: "exact", "nearest", "transferred", "adapted",
                            // "library default", "family default" (gt::to_string(gt::Rule))
  std::string reason;       // a default's: why no entry served
  std::string backing;      // why it may run instead of the default: "exact", "evidence", "online", "default"
                            // (a transfer that is the default itself), "unbacked" (asked for), "none" (a default)
  std::string backing_note; // the evidence or the online timing that backs it
  std::string pending;      // online mode, a default: the transfer its first gemm() times against it ("": none)
  std::string unchecked;    // dry run without a GPU: why the config could not be checked (or named)
  std::string family;
  std::string config;       // canonical name ("" for cuBLASLt's pick in a dry run without a GPU)
  std::string params;       // "k=v,..."
  std::string transform = "none";  // the problem transform it runs through: "none", "pad", "swap", "pad+swap"
  std::string transform_plan;      // what the transform does for this problem (copies, buffers), "" for none
  std::string problem;      // the key: "4096x4096x4096 f16>f16 nn a16"
  std::string tuned_key;    // the entry's key ("" for the default)
  double tuned_time_us = 0; // the entry's time where it was tuned (0 for the default)
  std::string note;         // e.g. that the table has no entries for this device
  double prepare_s = 0;     // the first call's lookup + build + load
  bool compiled = false;    // NVRTC ran (false: from the cubin cache, or a library family)
  bool launchable = false;  // a kernel or library op is ready (false in a dry run)
};

class Runtime {
 public:
  // Loads the table and the plugins; in a real run also finds the GPU. Throws Error.
  explicit Runtime(const std::string& table_path, const Options& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // C = A·B on `stream`. The first call for a problem prepares it (see prepare()).
  void gemm(const GemmArgs& g, cudaStream_t stream);
  // Looks up, builds and loads the problem's config (once), without running it. A problem with
  // a pending online check changes its choice at its first gemm() (the choice returned here is
  // then updated in place).
  const Choice& prepare(const GemmArgs& g);
  // Starts (a path) or stops ("") recording the problems answered without an exact entry, as
  // Options::record_untuned; problems prepared before are not recorded.
  void record_untuned(const std::string& path);

  size_t prepared() const;  // problems prepared so far
  size_t compiles() const;  // NVRTC compiles run (cubin-cache hits do not count)
  bool dry_run() const;
  const std::string& device_name() const;  // "" in a dry run without Options::device_name
  const std::string& arch() const;
  int device() const;  // the CUDA ordinal it runs on; -1 in a dry run
  // The loaded table as JSON (see gemmtune_table_json in gemmtune_runtime.h).
  std::string table_json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct Internals;  // gemmtune's own benchmarks (runtime_internal.hpp)
};

}  // namespace gemmtune
