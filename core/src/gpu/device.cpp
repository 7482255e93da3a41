#include "gpu/device.hpp"

#include "base/errors.hpp"

#include <fmt/format.h>

namespace gt {

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", limits.cc_major, limits.cc_minor); }

void cuda_check(cudaError_t e, std::string_view what) {
  if (e != cudaSuccess)
    throw RuntimeFailure(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

int device_count(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) {
      if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
        *why = fmt::format("no GPU found: {} (no NVIDIA driver or no device on this machine)", cudaGetErrorString(e));
      else
        *why = fmt::format("no GPU usable: {}", cudaGetErrorString(e));
    }
    cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "no GPU found: the driver reports no CUDA device";
  return n;
}

static std::string uuid_string(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    s += fmt::format("{:02x}", b[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) s += '-';
  }
  return s;
}

DeviceInfo device_info(int index) {
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.uuid = uuid_string(p.uuid);
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) d.pci_bus_id = bus;
  gt_device& l = d.limits;
  l.cc_major = p.major;
  l.cc_minor = p.minor;
  l.sm_count = p.multiProcessorCount;
  l.warp_size = p.warpSize;
  l.max_threads_per_block = p.maxThreadsPerBlock;
  l.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  l.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  l.regs_per_block = p.regsPerBlock;
  l.regs_per_sm = p.regsPerMultiprocessor;
  l.smem_per_block = int32_t(p.sharedMemPerBlock);
  l.smem_per_block_optin = int32_t(p.sharedMemPerBlockOptin);
  l.smem_per_sm = int32_t(p.sharedMemPerMultiprocessor);
  l.l2_bytes = p.l2CacheSize;
  l.global_mem_bytes = int64_t(p.totalGlobalMem);
  l.has_device = 1;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess) d.max_sm_clock_mhz = khz / 1000;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess) d.max_mem_clock_mhz = khz / 1000;
  d.mem_bus_width_bits = p.memoryBusWidth;
  d.total_mem = p.totalGlobalMem;
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) d.driver_version = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) d.runtime_version = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  return d;
}

DeviceInfo require_device(int index) {
  std::string why;
  int n = device_count(&why);
  if (n == 0) throw NoGpuError(why);
  if (index < 0 || index >= n)
    throw NoGpuError(fmt::format("GPU {} does not exist (this machine has {})", index, n));
  return device_info(index);
}

std::vector<std::string> known_archs() {
  return {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120"};
}

gt_device arch_limits(std::string_view named) {
  // An architecture-specific target (sm_90a) has the limits of its architecture.
  std::string_view arch = named == "sm_90a" ? std::string_view("sm_90") : named;
  gt_device l{};
  l.warp_size = 32;
  l.max_threads_per_block = 1024;
  l.regs_per_block = 65536;
  l.regs_per_sm = 65536;
  l.smem_per_block = 48 * 1024;
  l.has_device = 0;
  // Per-architecture limits from the CUDA C++ Programming Guide's table of compute
  // capabilities. SM count and L2 are those of the architecture's flagship part.
  if (arch == "sm_70") { l.cc_major = 7; l.cc_minor = 0; l.max_threads_per_sm = 2048; l.max_blocks_per_sm = 32; l.smem_per_block_optin = 96 * 1024; l.smem_per_sm = 96 * 1024; l.sm_count = 80; l.l2_bytes = 6 << 20; }
  else if (arch == "sm_75") { l.cc_major = 7; l.cc_minor = 5; l.max_threads_per_sm = 1024; l.max_blocks_per_sm = 16; l.smem_per_block_optin = 64 * 1024; l.smem_per_sm = 64 * 1024; l.sm_count = 40; l.l2_bytes = 4 << 20; }
  else if (arch == "sm_80") { l.cc_major = 8; l.cc_minor = 0; l.max_threads_per_sm = 2048; l.max_blocks_per_sm = 32; l.smem_per_block_optin = 163 * 1024; l.smem_per_sm = 164 * 1024; l.sm_count = 108; l.l2_bytes = 40 << 20; }
  else if (arch == "sm_86") { l.cc_major = 8; l.cc_minor = 6; l.max_threads_per_sm = 1536; l.max_blocks_per_sm = 16; l.smem_per_block_optin = 99 * 1024; l.smem_per_sm = 100 * 1024; l.sm_count = 84; l.l2_bytes = 6 << 20; }
  else if (arch == "sm_89") { l.cc_major = 8; l.cc_minor = 9; l.max_threads_per_sm = 1536; l.max_blocks_per_sm = 24; l.smem_per_block_optin = 99 * 1024; l.smem_per_sm = 100 * 1024; l.sm_count = 128; l.l2_bytes = 72 << 20; }
  else if (arch == "sm_90") { l.cc_major = 9; l.cc_minor = 0; l.max_threads_per_sm = 2048; l.max_blocks_per_sm = 32; l.smem_per_block_optin = 227 * 1024; l.smem_per_sm = 228 * 1024; l.sm_count = 132; l.l2_bytes = 50 << 20; }
  else if (arch == "sm_100") { l.cc_major = 10; l.cc_minor = 0; l.max_threads_per_sm = 2048; l.max_blocks_per_sm = 32; l.smem_per_block_optin = 227 * 1024; l.smem_per_sm = 228 * 1024; l.sm_count = 148; l.l2_bytes = 126 << 20; }
  else if (arch == "sm_120") { l.cc_major = 12; l.cc_minor = 0; l.max_threads_per_sm = 1536; l.max_blocks_per_sm = 32; l.smem_per_block_optin = 99 * 1024; l.smem_per_sm = 100 * 1024; l.sm_count = 170; l.l2_bytes = 96 << 20; }
  else {
    std::string known;
    for (auto& a : known_archs()) known += (known.empty() ? "" : ", ") + a;
    throw InputError(fmt::format("--arch: unknown architecture '{}' (known: {})", named, known));
  }
  return l;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : n_(bytes) {
  if (bytes == 0) return;
  cudaError_t e = cudaMalloc(&p_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    p_ = nullptr;
    throw RuntimeFailure(fmt::format("cudaMalloc of {:.1f} MiB failed: {}", double(bytes) / (1 << 20), cudaGetErrorString(e)));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

LoadedKernel::LoadedKernel(const std::string& cubin, const std::string& kernel_name, unsigned dynamic_smem) {
  cuda_check(cudaLibraryLoadData(&lib_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             "loading the cubin (cudaLibraryLoadData)");
  cudaError_t e = cudaLibraryGetKernel(&kernel_, lib_, kernel_name.c_str());
  if (e != cudaSuccess) {
    cudaLibraryUnload(lib_);
    lib_ = nullptr;
    cuda_check(e, "finding kernel " + kernel_name);
  }
  if (dynamic_smem > 48 * 1024) {
    e = cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(dynamic_smem));
    if (e != cudaSuccess) {
      cudaLibraryUnload(lib_);
      lib_ = nullptr;
      cuda_check(e, fmt::format("allowing {} bytes of dynamic shared memory", dynamic_smem));
    }
  }
}

LoadedKernel::~LoadedKernel() {
  if (lib_) cudaLibraryUnload(lib_);
}

// A cluster launch's configuration (no stream); `attr` holds the cluster's shape and must
// outlive the configuration, which points at it.
static cudaLaunchConfig_t cluster_launch_config(const LaunchGeometry& g, cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(g.grid[0], g.grid[1], g.grid[2]);
  cfg.blockDim = dim3(g.block[0], g.block[1], g.block[2]);
  cfg.dynamicSmemBytes = g.smem;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = g.cluster[0];
  attr.val.clusterDim.y = g.cluster[1];
  attr.val.clusterDim.z = g.cluster[2];
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

cudaError_t LoadedKernel::launch(const LaunchGeometry& g, cudaStream_t s, void** args) const {
  const void* fn = reinterpret_cast<const void*>(kernel_);
  if (g.cluster[0] * g.cluster[1] * g.cluster[2] <= 1)
    return cudaLaunchKernel(fn, dim3(g.grid[0], g.grid[1], g.grid[2]), dim3(g.block[0], g.block[1], g.block[2]), args,
                            g.smem, s);
  cudaLaunchAttribute attr{};
  cudaLaunchConfig_t cfg = cluster_launch_config(g, attr);
  cfg.stream = s;
  return cudaLaunchKernelExC(&cfg, fn, args);
}

int LoadedKernel::max_active_clusters(const LaunchGeometry& g) const {
  if (g.cluster[0] * g.cluster[1] * g.cluster[2] <= 1) return 0;
  cudaLaunchAttribute attr{};
  const cudaLaunchConfig_t cfg = cluster_launch_config(g, attr);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(kernel_), &cfg) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the launch itself will say what is wrong
    return 0;
  }
  return n;
}

std::pair<size_t, size_t> memory_info() {
  size_t f = 0, t = 0;
  cuda_check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  return {f, t};
}

}  // namespace gt

#include <nlohmann/json.hpp>
namespace gt {
void to_json(nlohmann::json& j, const DeviceInfo& d) {
  const gt_device& l = d.limits;
  j = {{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}, {"pci_bus_id", d.pci_bus_id},
       {"max_sm_clock_mhz", d.max_sm_clock_mhz}, {"max_mem_clock_mhz", d.max_mem_clock_mhz},
       {"mem_bus_width_bits", d.mem_bus_width_bits}, {"total_mem", d.total_mem},
       {"driver_version", d.driver_version}, {"runtime_version", d.runtime_version},
       {"limits", {l.cc_major, l.cc_minor, l.sm_count, l.warp_size, l.max_threads_per_block, l.max_threads_per_sm,
                   l.max_blocks_per_sm, l.regs_per_block, l.regs_per_sm, l.smem_per_block, l.smem_per_block_optin,
                   l.smem_per_sm, l.l2_bytes, l.global_mem_bytes, l.has_device}}};
}
void from_json(const nlohmann::json& j, DeviceInfo& d) {
  d.index = j.at("index");
  d.name = j.at("name");
  d.uuid = j.at("uuid");
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.max_sm_clock_mhz = j.value("max_sm_clock_mhz", 0);
  d.max_mem_clock_mhz = j.value("max_mem_clock_mhz", 0);
  d.mem_bus_width_bits = j.value("mem_bus_width_bits", 0);
  d.total_mem = j.value("total_mem", size_t(0));
  d.driver_version = j.value("driver_version", "");
  d.runtime_version = j.value("runtime_version", "");
  auto& a = j.at("limits");
  gt_device& l = d.limits;
  l = gt_device{};
  l.cc_major = a.at(0); l.cc_minor = a.at(1); l.sm_count = a.at(2); l.warp_size = a.at(3);
  l.max_threads_per_block = a.at(4); l.max_threads_per_sm = a.at(5); l.max_blocks_per_sm = a.at(6);
  l.regs_per_block = a.at(7); l.regs_per_sm = a.at(8); l.smem_per_block = a.at(9); l.smem_per_block_optin = a.at(10);
  l.smem_per_sm = a.at(11); l.l2_bytes = a.at(12); l.global_mem_bytes = a.at(13); l.has_device = a.at(14);
}
}  // namespace gt
