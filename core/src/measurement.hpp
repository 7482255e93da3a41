// What one measurement of one config is: a closed set of statuses, timing statistics,
// the error against float64, the sensors while timing, the compiler's resource report.
#pragma once

#include "compiler.hpp"
#include "nvml.hpp"

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
inline bool is_failure(Status s) { return s != Status::ok; }

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Times in microseconds per call.
struct Stats {
  int64_t count = 0;
  double median = kNaN, mean = kNaN, min = kNaN, max = kNaN, p10 = kNaN, p90 = kNaN;
  double ci_low = kNaN, ci_high = kNaN;  // 95 % confidence interval of the median
  // Relative half-width of the median's confidence interval.
  double ci_rel() const { return (ci_high - ci_low) / 2.0 / median; }
};

// Summary statistics of samples; the median's 95 % interval from order statistics
// (distribution-free: ranks n/2 ± 1.96·√n/2).
Stats summarize(std::vector<double> samples);
// True when the two medians' intervals overlap: the measurements cannot tell them apart.
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

  double tflops(double flops) const { return status == Status::ok ? flops / (time.median * 1e-6) / 1e12 : kNaN; }
};

void to_json(nlohmann::json& j, const Stats& s);
void from_json(const nlohmann::json& j, Stats& s);
void to_json(nlohmann::json& j, const Measurement& m);
void from_json(const nlohmann::json& j, Measurement& m);

}  // namespace gt
