// Verifying and timing one problem's candidates on the GPU, in this process.
//
// ProblemBench owns the buffers of one problem: input sets rotated past twice the L2 (so
// a small problem is not timed from cache), a float64 reference computed on the GPU from
// set 0, and output buffers poisoned with NaN before every verification run.
#pragma once

#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "gpu/gpu_kernels.hpp"
#include "measure/measurement.hpp"
#include "base/problem.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gt {

// Launch one GEMM on `ops` on stream s; returns the launch's error code.
using LaunchFn = std::function<cudaError_t(const Operands& ops, cudaStream_t s)>;

// A CUDA error during a candidate's run. `sticky` errors leave the context unusable.
struct LaunchError : RuntimeFailure {
  LaunchError(cudaError_t e, const std::string& what);
  cudaError_t code;
  bool sticky;
};

struct Tolerance {
  double rel_fro;   // bound on ||C - C_ref||_F / ||C_ref||_F
  double max_norm;  // bound on max|C - C_ref| / max|C_ref|
};
// By dtype, growing with K: input rounding (tf32), output rounding and fp32 accumulation
// (unit roundoff times sqrt(K) for a random walk of rounding errors), with a safety factor.
// FP8: the reference multiplies the quantised values themselves (with their scales), so the
// tolerance is accumulation and output rounding alone; the tensor cores add FP8 products in
// fewer bits than fp32 (about 14: why libraries promote every 128 of K, and why cuBLASLt's fast
// accumulation, which does not, is less exact), so the accumulation term is 2^-13 per sqrt(K).
Tolerance tolerance_for(const Problem& p);

// The d scale the bench gives an FP8 output: 1/sqrt(K), so that a product of unit-variance
// inputs lands near unit variance, well inside e4m3's range.
double fp8_output_scale(const Problem& p);

struct VerifyResult {
  bool ok = false;
  double rel_fro = kNaN, max_norm = kNaN;
  unsigned long long nonfinite = 0;
  std::string message;
};

// Seconds at most to settle the clock (the CLI's --settle default). Under a power cap the clock
// holds its boost for up to about a second before the cap engages, so a settle lasts at least
// kSettleMinS (or its cap, when shorter); docs/measurement.md, "The readings behind the constants".
inline constexpr double kSettleCapS = 3.0;
inline constexpr double kSettleMinS = 1.0;
// Once NVML reports the power cap, a settle lasts at least this long (or its cap, when
// shorter): for a few seconds after the cap engages the clock stays above where it settles.
inline constexpr double kCappedSettleMinS = 3.0;
// Seconds a single timing (`gemmtune run`) samples at least once the power cap engages: two
// of the governor's periods of about a second, whose mean is the figure (Center::mean).
inline constexpr double kCappedMinTimeS = 2.0;
// True when NVML's throttle reasons name the power cap.
inline bool at_power_cap(const std::string& reasons) { return reasons.find("power_cap") != std::string::npos; }
// The figure of samples taken with these throttle reasons: the mean at the power cap.
inline Center center_for(const std::string& reasons) { return at_power_cap(reasons) ? Center::mean : Center::median; }
// Timed (and settling) calls are queued in batches that run back to back, as in continuous
// use: about kBatchTargetS of work per batch, at most kMaxBatch calls.
inline constexpr int kMaxBatch = 64;
inline constexpr double kBatchTargetS = 0.002;

struct TimingOptions {
  double warmup_s = 0.02;   // continuous calls before sampling (the clock is settled already)
  int min_samples = 10;
  int max_samples = 20000;
  double max_time_s = 1.0;  // sampling stops here even if the interval is still wide
  double target_ci = 0.005; // stop once the median's 95 % CI half-width is within this
  // Queue each timed call behind a held stream (launch_hold), so that its interval is the
  // GPU's time without the host's launch latency. Off: the GPU idles between calls and the
  // host's time to launch falls inside the interval (a few µs: the older method).
  bool hold = true;
  // Sample at least this long even once the interval is narrow (max_time_s and max_samples give
  // way to it); `capped_min_time_s` applies only once NVML reports the power cap while
  // sampling. At the cap the clock moves by several % from one ms to the next, so the few ms
  // that a narrow interval needs catch one moment of it (docs/measurement.md, "The readings behind the constants").
  double min_time_s = 0;
  double capped_min_time_s = 0;
  static TimingOptions quick() { return {0.005, 5, 2000, 0.1, 0.02, true}; }
};

struct Timed {
  Stats time;
  GpuSensors sensors;  // medians of readings taken while sampling
  std::string throttle;
  double wall_s = 0;
  std::vector<double> samples;  // every timed call, in order (µs)
  std::vector<double> sample_t; // when each ended, seconds after sampling began
  struct Reading {
    double t, sm_clock_mhz, power_w, temp_c;  // t: seconds after sampling began
  };
  std::vector<Reading> readings;  // the NVML readings behind `sensors` (empty without NVML)
  // Every sample was queued behind the hold. False when asked not to, when mapped host
  // memory is unavailable, or when queueing one call outlasted the hold's time-out (a call
  // that blocks the host): those times include the host's launch latency.
  bool held = false;
  std::string note;  // why not held, when it was asked for
};

class ProblemBench {
 public:
  // Allocates and fills the buffers; RuntimeFailure naming the memory needed when the
  // problem cannot fit. `max_bytes` caps the rotating sets (0: 80 % of free memory).
  ProblemBench(const Problem& p, const DeviceInfo& dev, Distribution dist, uint64_t seed, size_t max_bytes = 0);
  ~ProblemBench();
  ProblemBench(const ProblemBench&) = delete;
  ProblemBench& operator=(const ProblemBench&) = delete;

  const Problem& problem() const { return p_; }
  int rotation() const { return int(sets_.size()); }
  cudaStream_t stream() const { return stream_; }
  Distribution distribution() const { return dist_; }
  uint64_t seed() const { return seed_; }
  // Bytes one problem needs at least: one input set, C, the float64 reference.
  static size_t min_bytes(const Problem& p);
  // Bytes with every rotating set it wants (past twice the device's L2), before any cap.
  static size_t full_bytes(const Problem& p, const DeviceInfo& dev);
  static size_t wanted_sets(const Problem& p, const DeviceInfo& dev);

  // Poison C with NaN, run once, compare with the float64 reference.
  VerifyResult verify(const LaunchFn& fn);
  // Settled steady-state timing: warm-up, then one event pair per call over rotating sets,
  // the calls queued in batches that run back to back behind a hold (TimingOptions::hold).
  Timed time(const LaunchFn& fn, const TimingOptions& o);
  // Run fn continuously (batches back to back) until the SM clock is stable (NVML: the last 500 ms within 1 %, and at
  // least kSettleMinS passed, kCappedSettleMinS once the power cap is reported) or cap_s passes.
  // Returns seconds spent and the clock it settled at (NaN without NVML).
  std::pair<double, double> settle(const LaunchFn& fn, double cap_s);

  // Called after every completed call (verification, warm-up, samples) with its wall
  // seconds: the measurement worker turns it into heartbeats so a hang can be told from a
  // slow kernel.
  std::function<void(double)> on_call;

  const void* a(int set = 0) const { return sets_.at(size_t(set)).a.get(); }
  const void* b(int set = 0) const { return sets_.at(size_t(set)).b.get(); }
  void* c(int set = 0) const { return sets_.at(size_t(set)).c.get(); }
  // A set's buffers as one call takes them (scales included for an FP8 problem).
  Operands operands(int set = 0) const;

 private:
  // One input set: A, B and C, and an FP8 problem's scales of A and B (quantised with them)
  // and the output's d scale.
  struct Set {
    DeviceBuffer a, b, c, scale_a, scale_b, scale_d;
  };
  void check_launch(cudaError_t e, const char* what);
  // Queues one call on the next rotating set (settle, warm-up and samples step through them).
  void launch_next(const LaunchFn& fn);
  int warm_up(const LaunchFn& fn, const TimingOptions& o, bool hold, std::chrono::steady_clock::time_point t0);
  int next_set_ = 0;
  Problem p_;
  DeviceInfo dev_;
  Distribution dist_;
  uint64_t seed_;
  std::vector<Set> sets_;
  DeviceBuffer ref_, scratch_;
  cudaStream_t stream_ = nullptr;
  // Two batches' event pairs ([slot][call][start, end]), each slot's end of settling batch,
  // and the reference for the samples' end times.
  std::vector<cudaEvent_t> events_;
  cudaEvent_t done_[2] = {nullptr, nullptr}, t_ref_ = nullptr;
  volatile int* hold_ = nullptr;  // mapped host memory, per slot: [2k] release, [2k + 1] timed out
  int* hold_dev_ = nullptr;       // the same four ints as the device sees them
};

}  // namespace gt
