// What one measurement of one config is: a closed set of statuses, timing statistics,
// the error against float64, the sensors while timing, the compiler's resource report.
#pragma once

#include "build/compiler.hpp"
#include "gpu/nvml.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gt {

enum class Status {
  ok,                // verified and timed
  cannot_implement,  // the family refused the (problem, config)
  resources,         // exceeds the device's shared memory / registers / threads
  compile_failed,
  verify_failed,     // wrong answer (or NaN, or an element left unwritten)
  runtime_fault,     // the launch failed or the kernel faulted
  timeout,           // the kernel or the compile did not finish in time
};
const char* to_string(Status s);
Status parse_status(const std::string& s);  // RuntimeFailure when unknown

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Which statistic is a timing's figure (what ranks it and what is reported). The median,
// unless the samples were taken at the power cap: there the governor moves the clock between
// levels a few % apart, each held for about half a second, so a window's samples are
// a mixture of two modes and its median jumps from one to the other with the mixture; the
// mean over whole periods follows the mixture smoothly (docs/measurement.md, method 5).
enum class Center { median, mean };
const char* to_string(Center c);

// Times in microseconds per call.
struct Stats {
  int64_t count = 0;
  double median = kNaN, mean = kNaN, min = kNaN, max = kNaN, p10 = kNaN, p90 = kNaN;
  double ci_low = kNaN, ci_high = kNaN;  // 95 % confidence interval of the figure
  Center center = Center::median;
  double value() const { return center == Center::mean ? mean : median; }  // the figure
  // Relative half-width of the figure's confidence interval.
  double ci_rel() const { return (ci_high - ci_low) / 2.0 / value(); }
};

// Summary statistics of samples (in the order taken). The median's 95 % interval from order
// statistics (distribution-free: ranks n/2 ± 1.96·√n/2); the mean's from the means of blocks
// of consecutive samples (Student's t), which holds for samples that drift together in time:
// `groups` gives the blocks' sizes (a re-timing's turns), else ten equal blocks. Fewer than
// two blocks: no interval (NaN, which ties with everything).
Stats summarize(std::vector<double> samples, Center center = Center::median, const std::vector<size_t>& groups = {});
// True when the two figures' intervals overlap: the measurements cannot tell them apart.
bool tie(const Stats& a, const Stats& b);

struct Measurement {
  Status status = Status::ok;
  std::string message;  // why it failed, or notes
  Stats time;
  double err_rel_fro = kNaN;   // ||C - C_ref||_F / ||C_ref||_F
  double err_max_norm = kNaN;  // max|C - C_ref| / max|C_ref|
  GpuSensors sensors;          // medians while timing (NaN: unknown)
  std::string throttle;        // NVML clock-event reasons seen while timing
  Resources res;
  double compile_s = 0;
  bool compiled_from_cache = false;
  double measure_s = 0;  // wall seconds the GPU spent verifying and timing it
  bool quick = false;    // measured in quick mode (fewer samples)

  double time_us() const { return time.value(); }
  double tflops(double flops) const { return status == Status::ok ? flops / (time_us() * 1e-6) / 1e12 : kNaN; }
};

void to_json(nlohmann::json& j, const Stats& s);
void from_json(const nlohmann::json& j, Stats& s);
void to_json(nlohmann::json& j, const Measurement& m);
void from_json(const nlohmann::json& j, Measurement& m);

}  // namespace gt
