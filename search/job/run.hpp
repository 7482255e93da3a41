// A resolved job's problems over one or more GPUs. Each problem is explored, re-timed and decided on
// one GPU (ratios are taken within a GPU, never across two), and the problems are handed out
// as the GPUs free up: a GPU that finishes a problem takes the next one not yet started. No
// GPU waits for another. Afterwards, with more than one GPU, cross-GPU consistency is checked
// on a sample: the winners of a few problems (by default the first each GPU decided) are timed
// on every GPU, and the spread is reported.
#pragma once

#include "job/resolve.hpp"
#include "tune/tuner.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace gt::search {

// One GPU of a run: its measurer, and where its spaces and provenance come from.
struct RunGpu {
  Measurer* measurer = nullptr;
  SpaceSource spaces;
  ProvenanceSource provenance;
};

struct RunContext {
  const PluginRegistry* plugins = nullptr;  // null in replay
  Store* store = nullptr;
  CompilePool* pool = nullptr;
  // A tuner was made for GPU `gpu` (attach its progress and note callbacks).
  std::function<void(Tuner&, size_t gpu)> on_tuner;
  // A problem was decided on GPU `gpu`.
  std::function<void(const ProblemOutcome&, size_t gpu)> on_problem;
};

// One config timed on every GPU.
struct ConsistencySample {
  Problem problem;
  std::string family, config_name;  // config_name with its transform (transformed_name)
  Transform transform = Transform::none;
  size_t decided_on = 0;         // the GPU that tuned the problem
  std::vector<Measurement> per_gpu;  // in the run's GPU order
  double spread = kNaN;          // slowest / fastest - 1 over the GPUs that timed it
  std::string config_params;     // the config's readable form (Space::readable)
};

struct RunResult {
  std::vector<std::optional<ProblemOutcome>> outcomes;  // per problem of the resolved job (unset: not tuned here)
  std::vector<int> gpu_of;                              // per problem: the GPU that decided it (-1: none)
  std::vector<ConsistencySample> consistency;
  bool stopped = false;  // Ctrl-C
};

RunResult run_job(const ResolvedJob& resolved, const std::vector<RunGpu>& gpus, const RunContext& ctx);

std::string consistency_tune_id(const std::string& tune_id);

// The check itself: each sampled problem's winner timed on every GPU (full timing, after a
// settle), each GPU in its own thread; every timing is stored, under the run's tune id with
// "/consistency" added (consistency_tune_id): they are not the tune's own measurements, and
// a recording of the run (--record) leaves them out.
std::vector<ConsistencySample> check_consistency(const ResolvedJob& resolved, const std::vector<RunGpu>& gpus,
                                                 const RunContext& ctx, const RunResult& done);

}  // namespace gt::search
