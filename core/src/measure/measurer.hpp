// Where measurements come from. The tune loop asks a Measurer; three kinds answer:
//   MeasureService  - this process's GPU (used inside the worker, and with --no-isolation)
//   WorkerClient    - a child `gemmtune __worker` process that owns the GPU, so a candidate
//                     that faults or hangs kills only the worker (worker_client.hpp)
//   ReplayMeasurer  - recorded measurements instead of a GPU (search/replay/replay.hpp)
#pragma once

#include "gpu/device.hpp"
#include "gpu/gpu_kernels.hpp"
#include "measure/measurement.hpp"
#include "build/plugin.hpp"
#include "transform/transform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gt {

// How candidates are re-timed interleaved: `rounds` rounds, each visiting every candidate once
// in a freshly shuffled order. In its turn a candidate first runs alone, untimed, for
// `warmup_s`, then is sampled for a few ms.
//
// At the power cap the clock follows the power drawn over the last tens of ms, so a short
// warm-up times a candidate at its neighbours' clock, not its own (docs/measurement.md, "The readings behind the constants"). Once NVML reports the
// cap (while measuring this problem, or in a turn), every turn warms up `capped_warmup_s`
// instead, over at most `capped_rounds` rounds (each turn is then a settled measurement of its
// own), and turns timed before that are discarded. `capped_warmup_s` <= `warmup_s` turns this
// off (measurement method 3).
// A finalist's turn samples at least kTurnMinSamples calls, then until kTurnMaxSamples or
// kTurnMaxTimeS of sampling: a few ms, so that many alternations average out clock drift.
inline constexpr int kTurnMinSamples = 3;
inline constexpr int kTurnMaxSamples = 50;
inline constexpr double kTurnMaxTimeS = 0.03;

struct Interleave {
  int rounds = 8;
  double warmup_s = 0.005;
  double capped_warmup_s = 0.1;
  int capped_rounds = 4;
  bool cap_aware() const { return capped_warmup_s > warmup_s; }
  int rounds_at_cap() const { return std::min(rounds, std::max(1, capped_rounds)); }
};

// What a re-timing measured, and how.
struct Retimed {
  Retimed() = default;
  Retimed(std::vector<Stats> s) : stats(std::move(s)) {}  // NOLINT: a plain list of results
  std::vector<Stats> stats;  // one per candidate, in the order given
  bool capped = false;       // at the power cap: Interleave::rounds_at_cap() rounds of capped turns
  // Per candidate (or empty): where its figure came from, when that is not a re-timing on this
  // GPU (a replay says whether it replayed a recorded re-timing or an exploration timing).
  std::vector<std::string> notes;
};

// How a re-timing ran, for a measurement's message: "over 8 rounds", or "over 4 rounds, each
// turn after 0.1 s alone (power cap: the mean)".
inline std::string describe(const Interleave& how, bool capped) {
  if (!capped) return fmt::format("over {} rounds", how.rounds);
  return fmt::format("over {} rounds, each turn after {:g} s alone (power cap: the mean)", how.rounds_at_cap(),
                     how.capped_warmup_s);
}

struct Candidate {
  std::string family;              // family name
  const Family* plugin = nullptr;  // the loaded plugin (null in replay)
  Config config;                   // of the family's space for the transform's problem
  Transform transform = Transform::none;  // the problem transform it runs through (transform.hpp)
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual std::string describe() const = 0;
  virtual bool is_replay() const { return false; }
  // A measurer that simulates a GPU (replay) keeps the clock of the run it stands in for: the
  // seconds the recorded GPU would have spent on everything asked of it so far. A GPU's
  // measurer has none (nullopt): the wall clock is its run's clock.
  virtual std::optional<double> simulated_seconds() const { return std::nullopt; }
  virtual const DeviceInfo& device() const = 0;
  // Prepare the buffers and float64 reference of a problem. RuntimeFailure when it cannot
  // (e.g. not enough memory: the message says how much it needs).
  virtual void set_problem(const Problem& p, Distribution d, uint64_t seed) = 0;
  // Verify and time one candidate of the current problem. Never throws for a bad
  // candidate: the status says what happened.
  virtual Measurement measure(const Candidate& c, bool quick) = 0;
  // Run a candidate continuously until the clock settles (or cap_s). Returns seconds spent.
  virtual double settle(const Candidate& c, double cap_s) = 0;
  // Re-time candidates interleaved (Interleave); a candidate's samples from all rounds pooled
  // into its Stats.
  virtual Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) = 0;
};

}  // namespace gt
