#include "gpu/nvml.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace gt {

// The few NVML declarations gemmtune uses (the C ABI of libnvidia-ml.so.1; the toolkit here
// ships no nvml.h). Values from NVML's public API reference.
namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0;
constexpr unsigned long long kIdle = 0x1, kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20,
                             kHwThermal = 0x40, kPowerBrake = 0x80;
}  // namespace

struct Nvml::Fns {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*driver_version)(char*, unsigned);
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*);
};

Nvml& Nvml::get() {
  static Nvml n;
  return n;
}

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_ = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
    return;
  }
  f_ = new Fns{};
  auto sym = [&](const char* name) { return dlsym(lib_, name); };
  f_->init = reinterpret_cast<decltype(f_->init)>(sym("nvmlInit_v2"));
  f_->driver_version = reinterpret_cast<decltype(f_->driver_version)>(sym("nvmlSystemGetDriverVersion"));
  f_->by_uuid = reinterpret_cast<decltype(f_->by_uuid)>(sym("nvmlDeviceGetHandleByUUID"));
  f_->clock = reinterpret_cast<decltype(f_->clock)>(sym("nvmlDeviceGetClockInfo"));
  f_->power = reinterpret_cast<decltype(f_->power)>(sym("nvmlDeviceGetPowerUsage"));
  f_->temperature = reinterpret_cast<decltype(f_->temperature)>(sym("nvmlDeviceGetTemperature"));
  f_->power_limit = reinterpret_cast<decltype(f_->power_limit)>(sym("nvmlDeviceGetEnforcedPowerLimit"));
  f_->reasons = reinterpret_cast<decltype(f_->reasons)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
  if (!f_->reasons)
    f_->reasons = reinterpret_cast<decltype(f_->reasons)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
  if (!f_->init || !f_->by_uuid || !f_->clock) {
    why_ = "libnvidia-ml.so.1 lacks the functions gemmtune reads";
    return;
  }
  nvmlReturn_t r = f_->init();
  if (r != NVML_SUCCESS) {
    why_ = fmt::format("nvmlInit failed ({})", int(r));
    return;
  }
  ok_ = true;
}

std::string Nvml::driver_version() const {
  if (!ok_ || !f_->driver_version) return "";
  char buf[96] = {0};
  if (f_->driver_version(buf, sizeof buf) != NVML_SUCCESS) return "";
  return buf;
}

GpuSensors Nvml::read(const std::string& uuid) const {
  GpuSensors s;
  if (!ok_) return s;
  nvmlDevice_t d;
  if (f_->by_uuid(uuid.c_str(), &d) != NVML_SUCCESS) return s;
  unsigned v = 0;
  if (f_->clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS) s.sm_clock_mhz = v;
  if (f_->clock(d, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) s.mem_clock_mhz = v;
  if (f_->power && f_->power(d, &v) == NVML_SUCCESS) s.power_w = v / 1000.0;
  if (f_->temperature && f_->temperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) s.temp_c = v;
  if (f_->power_limit && f_->power_limit(d, &v) == NVML_SUCCESS) s.power_limit_w = v / 1000.0;
  return s;
}

std::string Nvml::throttle_reasons(const std::string& uuid) const {
  if (!ok_ || !f_->reasons) return "";
  nvmlDevice_t d;
  if (f_->by_uuid(uuid.c_str(), &d) != NVML_SUCCESS) return "";
  unsigned long long r = 0;
  if (f_->reasons(d, &r) != NVML_SUCCESS) return "";
  std::string s;
  auto add = [&](unsigned long long bit, const char* name) {
    if (r & bit) s += (s.empty() ? "" : ",") + std::string(name);
  };
  add(kIdle, "idle");
  add(kSwPowerCap, "sw_power_cap");
  add(kHwSlowdown, "hw_slowdown");
  add(kSwThermal, "sw_thermal");
  add(kHwThermal, "hw_thermal");
  add(kPowerBrake, "power_brake");
  return s.empty() ? "none" : s;
}

}  // namespace gt
