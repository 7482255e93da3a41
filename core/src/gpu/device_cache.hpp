// The GPUs a process sees, remembered between runs so that a run which needs no GPU work (a warm
// re-tune that finds every result stored) names its GPUs without initialising CUDA, which costs
// about half a second even with the driver in persistence mode.
//
// An entry is used only while everything that decides what the CUDA runtime would report is
// unchanged: the boot, the kernel driver, CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER; and every
// GPU it names is still listed by the kernel driver (/proc/driver/nvidia/gpus/*/information).
// Whatever cannot be read or does not match means "ask CUDA". The measurement worker reads its
// GPU from CUDA itself and refuses to work if that is not the GPU it was started for.
#pragma once

#include "gpu/device.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gt {

// Where the kernel driver and the boot are described (tests point these elsewhere).
struct SystemFiles {
  std::filesystem::path nvidia = "/proc/driver/nvidia";  // version, gpus/*/information
  std::filesystem::path boot_id = "/proc/sys/kernel/random/boot_id";
};

// The kernel driver's version ("580.159.04") from its NVRM line; empty when not readable.
std::string kernel_driver_version(const SystemFiles& sys = {});
// The UUIDs of the GPUs the kernel driver lists; empty when not readable.
std::set<std::string> kernel_gpu_uuids(const SystemFiles& sys = {});

// The remembered GPUs for this environment, if the entry in `dir` is still valid.
std::optional<std::vector<DeviceInfo>> remembered_devices(const std::filesystem::path& dir,
                                                          const SystemFiles& sys = {});
// Remembers `devices` (as CUDA reported them, in index order) for this environment. Best effort:
// a directory that cannot be written is left alone.
void remember_devices(const std::filesystem::path& dir, const std::vector<DeviceInfo>& devices,
                      const SystemFiles& sys = {});

// Every GPU of this process: remembered if valid, else from CUDA (and then remembered). Throws
// NoGpuError when CUDA finds none.
std::vector<DeviceInfo> known_devices(const std::filesystem::path& dir);

}  // namespace gt
