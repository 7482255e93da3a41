#include "measure/provenance.hpp"

#include "build/compiler.hpp"
#include "gpu/device.hpp"
#include "gpu/device_cache.hpp"
#include "gpu/nvml.hpp"
#include "build/plugin.hpp"
#include "base/space.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

namespace gt {

std::string Provenance::fingerprint() const {
  // Each field length-prefixed, so no two different field lists serialise alike
  // ("ab" + "c" vs "a" + "bc").
  std::string s = "gemmtune-fingerprint\n";
  auto add = [&s](std::string_view name, std::string_view v) { s += fmt::format("{}:{}:{}\n", name, v.size(), v); };
  add("device_name", device_name);
  add("arch", arch);
  add("driver", driver);
  add("cuda_runtime", cuda_runtime);
  add("nvrtc", nvrtc);
  add("library", library);
  add("family", family);
  add("family_version", family_version);
  add("source_hash", hex64(source_hash));
  add("input_dist", input_dist);
  add("method_version", std::to_string(method_version));
  return hex64(stable_hash(s));
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

Provenance Provenance::collect(const DeviceInfo& dev, const Family& fam, const std::string& input_dist,
                               uint64_t input_seed, bool quick) {
  Provenance p;
  p.device_name = dev.name;
  p.device_uuid = dev.uuid;
  p.arch = dev.arch();
  p.sm_count = dev.limits.sm_count;
  // The exact driver build ("580.159.04"): from the kernel driver's version file (no library
  // to load), else from NVML (the same string); the CUDA version the driver supports is the
  // fallback (coarser, but it still changes with the driver).
  std::string driver = kernel_driver_version();
  if (driver.empty() && Nvml::get().available()) driver = Nvml::get().driver_version();
  p.driver = !driver.empty() ? driver : "cuda " + dev.driver_version;
  p.cuda_runtime = dev.runtime_version;
  p.nvrtc = nvrtc_version();
  p.library = fam.provenance();
  p.family = fam.name();
  p.family_version = fam.version();
  p.source_hash = fam.source_hash();
  p.input_dist = input_dist;
  p.input_seed = input_seed;
  p.mode = quick ? "quick" : "full";
  p.host = host_name();
  return p;
}

void to_json(nlohmann::json& j, const Provenance& p) {
  j = {{"device_name", p.device_name},
       {"device_uuid", p.device_uuid},
       {"arch", p.arch},
       {"sm_count", p.sm_count},
       {"driver", p.driver},
       {"cuda_runtime", p.cuda_runtime},
       {"nvrtc", p.nvrtc},
       {"library", p.library},
       {"gemmtune_version", p.gemmtune_version},
       {"method_version", p.method_version},
       {"family", p.family},
       {"family_version", p.family_version},
       {"source_hash", hex64(p.source_hash)},
       {"build_hash", p.build_hash ? hex64(p.build_hash) : std::string()},
       {"input_dist", p.input_dist},
       {"input_seed", p.input_seed},
       {"mode", p.mode},
       {"host", p.host},
       {"fingerprint", p.fingerprint()}};
}

void from_json(const nlohmann::json& j, Provenance& p) {
  p.device_name = j.value("device_name", "");
  p.device_uuid = j.value("device_uuid", "");
  p.arch = j.value("arch", "");
  p.sm_count = j.value("sm_count", 0);
  p.driver = j.value("driver", "");
  p.cuda_runtime = j.value("cuda_runtime", "");
  p.nvrtc = j.value("nvrtc", "");
  p.library = j.value("library", "");
  p.gemmtune_version = j.value("gemmtune_version", "");
  p.method_version = j.value("method_version", 0);
  p.family = j.value("family", "");
  p.family_version = j.value("family_version", "");
  p.source_hash = std::stoull(j.value("source_hash", std::string("0")), nullptr, 16);
  const std::string build = j.value("build_hash", std::string());
  p.build_hash = build.empty() ? 0 : std::stoull(build, nullptr, 16);
  p.input_dist = j.value("input_dist", "");
  p.input_seed = j.value("input_seed", uint64_t(0));
  p.mode = j.value("mode", "");
  p.host = j.value("host", "");
}

}  // namespace gt
