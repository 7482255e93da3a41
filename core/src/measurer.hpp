// Where measurements come from. The tune loop asks a Measurer; three kinds answer:
//   MeasureService  - this process's GPU (used inside the worker, and with --no-isolation)
//   WorkerClient    - a child `gemmtune __worker` process that owns the GPU, so a candidate
//                     that faults or hangs kills only the worker (worker_client.hpp)
//   ReplayMeasurer  - recorded measurements instead of a GPU (search/replay.hpp)
#pragma once

#include "device.hpp"
#include "gpu_kernels.hpp"
#include "measurement.hpp"
#include "plugin.hpp"

#include <string>
#include <utility>
#include <vector>

namespace gt {

struct Candidate {
  std::string family;              // family name
  const Family* plugin = nullptr;  // the loaded plugin (null in replay)
  Config config;
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual std::string describe() const = 0;
  virtual bool is_replay() const { return false; }
  virtual const DeviceInfo& device() const = 0;
  // Prepare the buffers and float64 reference of a problem. RuntimeFailure when it cannot
  // (e.g. not enough memory: the message says how much it needs).
  virtual void set_problem(const Problem& p, Distribution d, uint64_t seed) = 0;
  // Verify and time one candidate of the current problem. Never throws for a bad
  // candidate: the status says what happened.
  virtual Measurement measure(const Candidate& c, bool quick) = 0;
  // Run a candidate continuously until the clock settles (or cap_s). Returns seconds spent.
  virtual double settle(const Candidate& c, double cap_s) = 0;
  // Re-time candidates interleaved: `rounds` rounds, each visiting every candidate once in
  // a freshly shuffled order; a candidate's samples from all rounds pooled into its Stats.
  virtual std::vector<Stats> retime(const std::vector<Candidate>& cs, int rounds, uint64_t seed) = 0;
};

}  // namespace gt
