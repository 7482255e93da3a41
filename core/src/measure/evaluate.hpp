// One config, start to finish on the GPU: build -> compile (or reuse a compile) -> load ->
// verify against float64 -> time. Every outcome is a Measurement with a status; nothing is
// thrown for a bad candidate. A fault that kills the CUDA context is flagged so the caller
// (the measurement worker) can stop using it.
#pragma once

#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "build/plugin.hpp"
#include "gpu/tensor_map.hpp"
#include "transform/transform.hpp"

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace gt {

// A config made runnable: a loaded kernel with everything its build requested (launch
// geometry, cluster, persistent grid, workspace, launch scalars, tensor maps), or a library
// op with its workspace; or either of them run through a problem transform (transform.hpp),
// with the copies' buffers, owned here and reused by every call. What it needs per buffer
// (tensor maps) it makes at launch and keeps for the buffers it saw last. One Runnable may be
// launched from several threads (calls of one transformed Runnable share its buffers: on one
// stream at a time).
class Runnable {
 public:
  // `dev`: the device it runs on (its SM count sizes a persistent grid).
  static std::unique_ptr<Runnable> from_kernel(const KernelSpec& spec, const std::string& cubin, const Problem& p,
                                               const gt_device& dev);
  static std::unique_ptr<Runnable> from_op(std::unique_ptr<LibraryOp> op, const Problem& p);
  // `inner` built for plan.inner, run on the caller's problem (plan.outer) through the plan's
  // copies; for a plan of Transform::none, `inner` itself.
  static std::unique_ptr<Runnable> transformed(std::unique_ptr<Runnable> inner, const TransformPlan& plan);
  LaunchFn launch_fn() const;
  // The caller's A, B and C (of the problem it was made for, before any transform), and an FP8
  // problem's scales.
  cudaError_t launch(const Operands& ops, cudaStream_t s) const;
  // The library's own message for the last failed launch, or why a kernel's tensor maps
  // could not be made ("" when there is none).
  const std::string& last_error() const { return inner_ && last_error_.empty() ? inner_->last_error() : last_error_; }
  // The family's kernel's launch (a transformed one: the kernel's, without the copies).
  const LaunchGeometry& geometry() const { return inner_ ? inner_->geometry() : geometry_; }
  // The transform it runs through (none for a plain config).
  Transform transform() const { return plan_ ? plan_->transform : Transform::none; }

 private:
  cudaError_t launch_transformed(const Operands& ops, cudaStream_t s) const;

  struct TensorMaps {
    const void *a = nullptr, *b = nullptr, *c = nullptr;
    alignas(128) std::array<std::array<unsigned char, 128>, GT_MAX_TENSOR_MAPS> bytes{};
  };
  const TensorMaps& tensor_maps_for(const void* a, const void* b, void* c) const;  // under mu_
  cudaError_t launch_kernel(const Operands& ops, cudaStream_t s) const;

  Problem p_;
  KernelSpec spec_;
  LaunchGeometry geometry_;
  std::vector<TensorMapShape> map_shapes_;
  std::unique_ptr<LoadedKernel> kernel_;
  std::unique_ptr<LibraryOp> op_;
  DeviceBuffer workspace_;
  // A transformed config: the family's runnable, the plan, the copies' buffers.
  std::unique_ptr<Runnable> inner_;
  std::unique_ptr<TransformPlan> plan_;
  DeviceBuffer copies_;
  // The caller's buffers whose copies the workspace holds, for operands the problem declares
  // constant (Problem::constant): the family's A and B. Another buffer is copied again.
  mutable const void* prepared_a_ = nullptr;
  mutable const void* prepared_b_ = nullptr;
  mutable std::mutex mu_;
  mutable std::vector<TensorMaps> maps_;  // the most recent buffer triples, newest last
  mutable std::string last_error_;
};

struct EvaluateOptions {
  TimingOptions timing;
  bool quick = false;
  bool time_it = true;  // false: verify only
  double settle_s = 0;  // settle the clock on this candidate before timing (0: the caller did)
  bool keep_trace = false;  // keep every sample and sensor reading in Evaluation::trace
  Transform transform = Transform::none;  // run the config through this transform
  std::function<void()> on_built;  // after a successful build, before the first launch
};

struct Evaluation {
  Measurement m;
  bool context_lost = false;  // a sticky CUDA error: this process's context is unusable
  std::optional<Timed> trace;  // with EvaluateOptions::keep_trace, when timed
};

// The status of a family's refusal: `resources` for GT_REFUSAL_RESOURCES, else
// `cannot_implement` (plugin_abi.h).
Status refusal_status(gt_refusal code);

// `compiled`: a compile made ahead (the tune pipeline, for the transform's problem); nullptr
// compiles here. A transformed config is verified against the problem as given (`p`), with the
// copies, and timed with them.
Evaluation evaluate(const Family& fam, const Problem& p, const Config& c, const DeviceInfo& dev, ProblemBench& bench,
                    const Compiler& compiler, const CompileResult* compiled, const EvaluateOptions& o);

// The compile request for a source family's config (nullopt + the refusal). `arch` is the
// device's ("sm_90"); a build that needs the architecture-specific target gets "sm_90a".
std::optional<CompileRequest> compile_request(const Family& fam, const Problem& p, const Config& c,
                                              const gt_device& dev, const std::string& arch, KernelSpec* spec,
                                              Refused* why);

// A config through a transform, built for `p`: the plan, the family's build for the plan's
// problem, and the Runnable around both. Where the transform cannot serve p or the family
// refuses the config, `run` is null and `status`/`message` say why; a compile that fails is
// `compile_failed` with its log. `compiled`: a compile made ahead for the plan's problem.
// `load` false (a dry run): everything but creating and loading (no GPU needed; run stays null).
struct Built {
  std::unique_ptr<Runnable> run;
  Status status = Status::ok;
  std::string message;
  std::optional<TransformPlan> plan;
  CompileResult compile;  // source families: the compile used (from_cache, seconds, res)
  std::string name;       // the config's name for messages (with the transform)
};
Built build_runnable(const Family& fam, const Problem& p, const Config& c, Transform t, const gt_device& dev,
                     const std::string& arch, const Compiler& compiler, const CompileResult* compiled = nullptr,
                     bool load = true);

}  // namespace gt
