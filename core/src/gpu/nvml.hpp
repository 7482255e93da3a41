// NVML, loaded at run time with dlopen: clocks, power and temperature while timing.
// Without NVML (no driver, or a machine without it) every reading is "unknown" (NaN).
#pragma once

#include <limits>
#include <optional>
#include <string>

namespace gt {

struct GpuSensors {
  double sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double mem_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double temp_c = std::numeric_limits<double>::quiet_NaN();
  double power_limit_w = std::numeric_limits<double>::quiet_NaN();
};

class Nvml {
 public:
  static Nvml& get();  // loads on first use; thread-safe
  bool available() const { return ok_; }
  const std::string& why_unavailable() const { return why_; }
  std::string driver_version() const;  // "580.159.04" or ""
  // Readings of the GPU with this UUID ("GPU-..."); NaN for what cannot be read.
  GpuSensors read(const std::string& uuid) const;
  // Current throttle reasons as text ("none", "sw_power_cap", ...), "" when unknown.
  std::string throttle_reasons(const std::string& uuid) const;

 private:
  Nvml();
  bool ok_ = false;
  std::string why_;
  void* lib_ = nullptr;
  struct Fns;
  Fns* f_ = nullptr;
};

}  // namespace gt
