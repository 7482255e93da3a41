// gemmtune devices: the GPUs, their limits and the software versions that matter.
#include "cli.hpp"
#include "gpu/nvml.hpp"

namespace gt::cli {

namespace {

struct DevicesArgs {};

void add_devices_options(CLI::App*, DevicesArgs&) {
  // devices takes no options of its own
}

int run_devices(Globals& g, const DevicesArgs&) {
  std::string why;
  int n = device_count(&why);
  if (n == 0) throw NoGpuError(why);
  nlohmann::json out = nlohmann::json::array();
  nlohmann::json libraries = nlohmann::json::object();  // family -> its library's version
  for (auto& f : g.plugins().families())
    if (!f.provenance().empty()) libraries[f.name()] = f.provenance();
  Nvml& nvml = Nvml::get();
  for (int i = 0; i < n; ++i) {
    DeviceInfo d = device_info(i);
    GpuSensors s = nvml.read(d.uuid);
    nlohmann::json j = {{"index", i},
                        {"name", d.name},
                        {"uuid", d.uuid},
                        {"pci_bus_id", d.pci_bus_id},
                        {"arch", d.arch()},
                        {"sm_count", d.limits.sm_count},
                        {"memory_gib", double(d.total_mem) / (1ull << 30)},
                        {"l2_mib", double(d.limits.l2_bytes) / (1 << 20)},
                        {"smem_per_block_optin", d.limits.smem_per_block_optin},
                        {"smem_per_sm", d.limits.smem_per_sm},
                        {"regs_per_sm", d.limits.regs_per_sm},
                        {"max_sm_clock_mhz", d.max_sm_clock_mhz},
                        {"max_mem_clock_mhz", d.max_mem_clock_mhz},
                        {"sm_clock_now_mhz", std::isfinite(s.sm_clock_mhz) ? nlohmann::json(s.sm_clock_mhz) : nlohmann::json()},
                        {"power_limit_w", std::isfinite(s.power_limit_w) ? nlohmann::json(s.power_limit_w) : nlohmann::json()},
                        {"driver", nvml.driver_version()},
                        {"driver_cuda", d.driver_version},
                        {"runtime", d.runtime_version},
                        {"nvrtc", nvrtc_version()},
                        {"libraries", libraries}};
    out.push_back(j);
    if (!g.json) {
      fmt::print("GPU {}: {} ({}, {})\n", i, d.name, d.arch(), d.uuid);
      fmt::print("  SMs {}, memory {:.1f} GiB, L2 {:.0f} MiB, shared memory {} KiB/block (opt-in), {} KiB/SM, "
                 "{} registers/SM\n",
                 d.limits.sm_count, double(d.total_mem) / (1ull << 30), double(d.limits.l2_bytes) / (1 << 20),
                 d.limits.smem_per_block_optin / 1024, d.limits.smem_per_sm / 1024, d.limits.regs_per_sm);
      fmt::print("  max clocks: SM {} MHz, memory {} MHz; now SM {} MHz; power limit {} W\n", d.max_sm_clock_mhz,
                 d.max_mem_clock_mhz, std::isfinite(s.sm_clock_mhz) ? fmt::format("{:.0f}", s.sm_clock_mhz) : "unknown",
                 std::isfinite(s.power_limit_w) ? fmt::format("{:.0f}", s.power_limit_w) : "unknown");
      fmt::print("  driver {} (CUDA {}), runtime {}, NVRTC {}{}\n", nvml.available() ? nvml.driver_version() : "unknown",
                 d.driver_version, d.runtime_version, nvrtc_version(),
                 nvml.available() ? "" : "  [NVML: " + nvml.why_unavailable() + "]");
    }
  }
  if (!g.json)
    for (auto& [name, version] : libraries.items()) fmt::print("{}: {}\n", name, version.get<std::string>());
  if (g.json) print_json(out);
  return 0;
}

Registrar reg_devices(10, [](CLI::App& app, Globals& g) {
  return make_command<DevicesArgs>(app, g, "devices",
      "GPUs with name, compute capability, SMs, memory, L2, clocks, and the driver / runtime / NVRTC "
      "versions and the version of each library a plugin calls (cuBLASLt); needs a GPU",
      add_devices_options, run_devices);
});

}  // namespace

}  // namespace gt::cli
