// Remembered GPUs (core/src/device_cache.*): a warm re-tune names its GPUs without initialising
// CUDA, but only while the boot, the kernel driver, CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER and
// the driver's list of GPUs are what they were. Tested against a stand-in /proc.
#include "gpu/device_cache.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

using namespace gt;
namespace fs = std::filesystem;

namespace {

const char* kClosedVersion =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  2 21:06:45 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
const char* kOpenVersion =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  (dvs-builder@U16)  "
    "Sat May 24 07:21:19 UTC 2025\n";

struct FakeSystem {
  test::TempDir tmp;
  SystemFiles sys;
  FakeSystem() {
    sys.nvidia = tmp.path / "nvidia";
    sys.boot_id = tmp.path / "boot_id";
    test::write_file(sys.nvidia / "version", kClosedVersion);
    test::write_file(sys.boot_id, "fc1458dd-8170-4683-a165-dd9e06f46f7c\n");
    add_gpu("0000:18:00.0", "GPU-0686f15f-1c4c-eeb4-d059-a343c1543cc0");
    add_gpu("0000:2a:00.0", "GPU-bb59d4cc-88e3-8d58-497d-a92bffc232b4");
  }
  void add_gpu(const std::string& bus, const std::string& uuid) {
    test::write_file(sys.nvidia / "gpus" / bus / "information",
                     "Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t GPU-x\n"
                     "Video BIOS: \t 96.00.a5.00.01\nBus Type: \t PCIe\n"
                     "GPU UUID: \t " + uuid + "\n");
  }
};

DeviceInfo gpu(int index, const std::string& uuid) {
  DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  d.uuid = uuid;
  d.limits = arch_limits("sm_90");
  d.limits.l2_bytes = 60 << 20;
  d.driver_version = "13.0";
  d.runtime_version = "13.0";
  return d;
}

// Sets an environment variable for one scope.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    if (v)
      setenv(n, v, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("the kernel driver's version and GPUs are read without CUDA", "[device]") {
  FakeSystem f;
  CHECK(kernel_driver_version(f.sys) == "580.159.04");
  test::write_file(f.sys.nvidia / "version", kOpenVersion);
  CHECK(kernel_driver_version(f.sys) == "575.57.08");
  auto uuids = kernel_gpu_uuids(f.sys);
  CHECK(uuids.count("GPU-0686f15f-1c4c-eeb4-d059-a343c1543cc0") == 1);
  CHECK(uuids.count("GPU-bb59d4cc-88e3-8d58-497d-a92bffc232b4") == 1);
  SystemFiles none{f.tmp.path / "absent", f.tmp.path / "absent_boot"};
  CHECK(kernel_driver_version(none).empty());
  CHECK(kernel_gpu_uuids(none).empty());
}

TEST_CASE("remembered GPUs are used only while nothing that decides them has changed", "[device]") {
  FakeSystem f;
  EnvVar visible("CUDA_VISIBLE_DEVICES", nullptr), order("CUDA_DEVICE_ORDER", nullptr);
  const fs::path dir = f.tmp.path / "cache";
  const std::vector<DeviceInfo> two = {gpu(0, "GPU-0686f15f-1c4c-eeb4-d059-a343c1543cc0"),
                                       gpu(1, "GPU-bb59d4cc-88e3-8d58-497d-a92bffc232b4")};
  CHECK_FALSE(remembered_devices(dir, f.sys));  // nothing yet
  remember_devices(dir, two, f.sys);
  auto got = remembered_devices(dir, f.sys);
  REQUIRE(got);
  REQUIRE(got->size() == 2);
  CHECK((*got)[1].uuid == two[1].uuid);
  CHECK((*got)[1].index == 1);
  CHECK((*got)[0].limits.sm_count == 132);
  CHECK((*got)[0].limits.l2_bytes == 60 << 20);

  SECTION("another boot") {
    test::write_file(f.sys.boot_id, "00000000-0000-0000-0000-000000000000\n");
    CHECK_FALSE(remembered_devices(dir, f.sys));
  }
  SECTION("another driver") {
    test::write_file(f.sys.nvidia / "version", kOpenVersion);
    CHECK_FALSE(remembered_devices(dir, f.sys));
  }
  SECTION("another CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER") {
    {
      EnvVar v("CUDA_VISIBLE_DEVICES", "1");
      CHECK_FALSE(remembered_devices(dir, f.sys));
    }
    {
      EnvVar o("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
      CHECK_FALSE(remembered_devices(dir, f.sys));
    }
    CHECK(remembered_devices(dir, f.sys));  // back as it was
  }
  SECTION("a GPU the driver no longer lists") {
    fs::remove_all(f.sys.nvidia / "gpus" / "0000:2a:00.0");
    CHECK_FALSE(remembered_devices(dir, f.sys));
  }
  SECTION("no boot id or no driver to compare with: nothing is remembered or used") {
    fs::remove(f.sys.boot_id);
    CHECK_FALSE(remembered_devices(dir, f.sys));
    fs::remove_all(dir);
    remember_devices(dir, two, f.sys);
    CHECK_FALSE(fs::exists(dir / "devices.json"));
  }
  SECTION("a damaged entry is ignored, never an error") {
    test::write_file(dir / "devices.json", "{\"key\": 3, \"devi");
    CHECK_FALSE(remembered_devices(dir, f.sys));
    test::write_file(dir / "devices.json", "[]");
    CHECK_FALSE(remembered_devices(dir, f.sys));
  }
}
