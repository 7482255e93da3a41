// The GPU through the CUDA runtime only (cudart_static; nothing links libcuda), so every
// binary starts on a machine without a driver and says plainly that there is no GPU.
#pragma once

#include "base/problem.hpp"

#include <gemmtune/plugin_abi.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string pci_bus_id;
  gt_device limits{};
  int max_sm_clock_mhz = 0;
  int max_mem_clock_mhz = 0;
  int mem_bus_width_bits = 0;
  size_t total_mem = 0;
  std::string driver_version;   // CUDA version the driver supports, e.g. "13.0"
  std::string runtime_version;  // CUDA runtime linked in, e.g. "13.0"
  std::string arch() const;     // "sm_90"
};

// Number of GPUs; 0 with the reason in *why when there is none (no driver, no device).
int device_count(std::string* why = nullptr);
DeviceInfo device_info(int index);
// Throws NoGpuError with the reason when there is no usable GPU `index`.
DeviceInfo require_device(int index);
// Limits of an architecture, for compiling and checking constraints without a GPU.
gt_device arch_limits(std::string_view arch);
std::vector<std::string> known_archs();

// Throws RuntimeFailure naming `what` and the CUDA error.
void cuda_check(cudaError_t e, std::string_view what);
// True for errors that leave the context unusable (illegal address, trap, ...).
bool is_sticky(cudaError_t e);

// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// How a kernel is launched: the grid, block, dynamic shared memory and cluster.
struct LaunchGeometry {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  unsigned smem = 0;
  uint32_t cluster[3] = {1, 1, 1};  // {1,1,1}: a plain launch
};

// A cubin loaded with cudaLibraryLoadData and one kernel of it.
class LoadedKernel {
 public:
  LoadedKernel(const std::string& cubin, const std::string& kernel_name, unsigned dynamic_smem);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  // Launch with the kernel's argument list (`args`: one pointer per parameter; extra
  // trailing ones are not read); a cluster through cudaLaunchKernelEx. Returns the launch
  // error (not thrown).
  cudaError_t launch(const LaunchGeometry& g, cudaStream_t s, void** args) const;
  // How many clusters of `g`'s shape (block, shared memory, cluster) can run at once on the
  // current device (cudaOccupancyMaxActiveClusters); 0 for a plain launch or when it cannot say.
  int max_active_clusters(const LaunchGeometry& g) const;

 private:
  cudaLibrary_t lib_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
};

// Free and total device memory (bytes) of the current device.
std::pair<size_t, size_t> memory_info();

}  // namespace gt

#include <nlohmann/json_fwd.hpp>
namespace gt {
void to_json(nlohmann::json& j, const DeviceInfo& d);
void from_json(const nlohmann::json& j, DeviceInfo& d);
}  // namespace gt
