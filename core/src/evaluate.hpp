// One config, start to finish on the GPU: build -> compile (or reuse a compile) -> load ->
// verify against float64 -> time. Every outcome is a Measurement with a status; nothing is
// thrown for a bad candidate. A fault that kills the CUDA context is flagged so the caller
// (the measurement worker) can stop using it.
#pragma once

#include "bench.hpp"
#include "compiler.hpp"
#include "plugin.hpp"

#include <memory>
#include <optional>

namespace gt {

// A config made runnable: a loaded kernel with its launch geometry, or a library op with
// its workspace.
class Runnable {
 public:
  static std::unique_ptr<Runnable> from_kernel(const KernelSpec& spec, const std::string& cubin, const Problem& p);
  static std::unique_ptr<Runnable> from_op(std::unique_ptr<LibraryOp> op, const Problem& p);
  LaunchFn launch_fn() const;
  cudaError_t launch(const void* a, const void* b, void* c, cudaStream_t s) const;
  // The library's own message for the last failed launch ("" for kernels).
  const std::string& last_error() const { return last_error_; }

 private:
  Problem p_;
  KernelSpec spec_;
  std::unique_ptr<LoadedKernel> kernel_;
  std::unique_ptr<LibraryOp> op_;
  DeviceBuffer workspace_;
  mutable std::string last_error_;
};

struct EvaluateOptions {
  TimingOptions timing;
  bool quick = false;
  bool time_it = true;  // false: verify only
  double settle_s = 0;  // settle the clock on this candidate before timing (0: the caller did)
  bool keep_trace = false;  // keep every sample and sensor reading in Evaluation::trace
};

struct Evaluation {
  Measurement m;
  bool context_lost = false;  // a sticky CUDA error: this process's context is unusable
  std::optional<Timed> trace;  // with EvaluateOptions::keep_trace, when timed
};

// The status of a family's refusal: `resources` when it names a limit of "the device"
// (plugin_abi.h), else `cannot_implement`.
Status refusal_status(const std::string& why);

// `compiled`: a compile made ahead (the tune pipeline); nullptr compiles here.
Evaluation evaluate(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                    const Compiler& compiler, const CompileResult* compiled, const EvaluateOptions& o);

// The compile request for a source family's config (nullopt + reason on refusal).
std::optional<CompileRequest> compile_request(const Family& fam, const Problem& p, const Config& c,
                                              const gt_device& dev, const std::string& arch, KernelSpec* spec,
                                              std::string* why);

}  // namespace gt
