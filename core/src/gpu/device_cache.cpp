#include "gpu/device_cache.hpp"

#include "base/errors.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace gt {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string("<unset>");
}

// What the runtime's answer depends on; an entry is valid only for the same key.
nlohmann::json environment_key(const SystemFiles& sys) {
  std::string boot = read_text(sys.boot_id);
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  return {{"boot_id", boot},
          {"driver", kernel_driver_version(sys)},
          {"CUDA_VISIBLE_DEVICES", env("CUDA_VISIBLE_DEVICES")},
          {"CUDA_DEVICE_ORDER", env("CUDA_DEVICE_ORDER")}};
}

fs::path entry_path(const fs::path& dir) { return dir / "devices.json"; }

}  // namespace

std::string kernel_driver_version(const SystemFiles& sys) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun ..." (or "Open Kernel Module
  // for x86_64  580.159.04 ...").
  std::string text = read_text(sys.nvidia / "version");
  std::smatch m;
  static const std::regex re(R"(NVRM version:[^\n]*?Module[^\n]*?\s([0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:\s|$))");
  return std::regex_search(text, m, re) ? m[1].str() : std::string();
}

std::set<std::string> kernel_gpu_uuids(const SystemFiles& sys) {
  std::set<std::string> out;
  std::error_code ec;
  fs::directory_iterator it(sys.nvidia / "gpus", ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::istringstream in(read_text(it->path() / "information"));
    std::string line;
    while (std::getline(in, line)) {
      auto pos = line.find("GPU UUID:");
      if (pos == std::string::npos) continue;
      std::string u = line.substr(pos + 9);
      u.erase(0, u.find_first_not_of(" \t"));
      u.erase(u.find_last_not_of(" \t\r") + 1);
      if (!u.empty()) out.insert(u);
    }
  }
  return out;
}

std::optional<std::vector<DeviceInfo>> remembered_devices(const fs::path& dir, const SystemFiles& sys) {
  try {
    std::string text = read_text(entry_path(dir));
    if (text.empty()) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json key = environment_key(sys);
    if (key.at("boot_id").get<std::string>().empty() || key.at("driver").get<std::string>().empty()) return std::nullopt;
    if (j.at("key") != key) return std::nullopt;
    auto devices = j.at("devices").get<std::vector<DeviceInfo>>();
    if (devices.empty()) return std::nullopt;
    const std::set<std::string> listed = kernel_gpu_uuids(sys);
    for (auto& d : devices)
      if (!listed.count(d.uuid)) return std::nullopt;  // gone, or a MIG instance: ask CUDA
    return devices;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable or from another version: ask CUDA
  }
}

void remember_devices(const fs::path& dir, const std::vector<DeviceInfo>& devices, const SystemFiles& sys) {
  try {
    nlohmann::json key = environment_key(sys);
    if (key.at("boot_id").get<std::string>().empty() || key.at("driver").get<std::string>().empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path tmp = entry_path(dir).string() + "." + std::to_string(::getpid()) + ".tmp";
    {
      std::ofstream out(tmp);
      if (!out) return;
      out << nlohmann::json{{"key", key}, {"devices", devices}}.dump(1) << "\n";
      if (!out) return;
    }
    fs::rename(tmp, entry_path(dir), ec);  // atomic: readers see the old entry or the new one
    if (ec) fs::remove(tmp, ec);
  } catch (const std::exception&) {
  }
}

std::vector<DeviceInfo> known_devices(const fs::path& dir) {
  if (auto d = remembered_devices(dir)) return *d;
  std::string why;
  int n = device_count(&why);
  if (n == 0) throw NoGpuError(why);
  std::vector<DeviceInfo> out;
  for (int i = 0; i < n; ++i) out.push_back(device_info(i));
  remember_devices(dir, out);
  return out;
}

}  // namespace gt
