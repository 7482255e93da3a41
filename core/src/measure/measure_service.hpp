// Measuring on this process's GPU: the implementation the worker process serves, and what
// `--no-isolation` uses directly.
#pragma once

#include "measure/bench.hpp"
#include "build/compiler.hpp"
#include "measure/evaluate.hpp"
#include "measure/measurer.hpp"

#include <list>
#include <memory>
#include <optional>

namespace gt {

class MeasureService : public Measurer {
 public:
  MeasureService(const PluginRegistry& plugins, const CubinCache& cache, int device_index);
  std::string describe() const override;
  const DeviceInfo& device() const override { return dev_; }
  void set_problem(const Problem& p, Distribution d, uint64_t seed) override;
  Measurement measure(const Candidate& c, bool quick) override;
  double settle(const Candidate& c, double cap_s) override;
  Retimed retime(const std::vector<Candidate>& cs, const Interleave& how, uint64_t seed) override;

  // True once a candidate left the CUDA context unusable: the worker must exit.
  bool context_lost() const { return context_lost_; }
  TimingOptions timing;  // for full measurements
  std::function<void(double)> heartbeat;  // after every completed GPU call (see ProblemBench)
  std::function<void()> built;  // a measure's build is done: its first launch comes next

 private:
  void use_device() const;
  const Runnable& runnable(const Candidate& c);  // built once, kept in a small LRU
  const PluginRegistry& plugins_;
  CubinCache cache_;  // a copy: the service outlives whatever the caller passed
  Compiler compiler_;
  DeviceInfo dev_;
  // A prepared problem: its buffers and the configs built for it.
  struct Prepared {
    std::string key;  // problem, distribution, seed
    std::unique_ptr<ProblemBench> bench;
    std::list<std::pair<std::string, std::unique_ptr<Runnable>>> runnables;
    bool capped = false;
  };
  // The problem prepared now.
  std::unique_ptr<ProblemBench> bench_;
  std::list<std::pair<std::string, std::unique_ptr<Runnable>>> runnables_;
  std::string key_;
  // NVML has reported the power cap while this problem ran (a measurement, a settle or a
  // re-timing turn): its re-timings warm each turn up longer (Interleave).
  bool capped_ = false;
  void note_throttle(const std::string& reasons);
  // One problem prepared before, kept while memory allows: a GPU that leaves its problem for a
  // moment (the cross-GPU check times another GPU's winner) goes back to it without a new
  // allocation, input generation or float64 reference.
  std::optional<Prepared> parked_;
  bool context_lost_ = false;
};

}  // namespace gt
