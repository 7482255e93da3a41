// Where a measurement came from: the GPU, the toolchain, the kernel family's source, the
// inputs and the mode. Stored with every row of the results store.
//
// The fingerprint and the build hash decide reuse: a stored measurement is reused only when
// its fingerprint equals the current one and its config's build hash is unchanged (a change
// of host code that changes a define or the launch makes the old rows stale, no version bump
// needed). It covers exactly what changes the result of
// measuring the same config on the same problem (device model, driver, CUDA runtime,
// NVRTC, the library a family calls, the family's version and source, the input
// distribution, and gemmtune's measurement method). It leaves out what does not: which
// card of that model (uuid), the host, the seed (every seed draws from the same
// distribution), quick/full (the store decides that per row: Measurement::quick).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace gt {

struct DeviceInfo;
class Family;

// gemmtune's own version (the CLI's --version prints the same).
inline constexpr const char* kGemmtuneVersion = "0.1.0";

// Version of the measurement method: verification tolerances, settling, timing statistics,
// buffer rotation. Bump it when a change makes old measurements incomparable with new
// ones; every stored row then becomes stale and is re-measured, never silently reused.
// 2: timed calls are queued behind a held stream (bench.hpp, TimingOptions::hold), so times no
//    longer include the host's launch latency.
// 3: timed and settling calls run in batches back to back (kBatchTargetS), as in continuous
//    use: one call at a time left the GPU idle for a few µs between calls, and what a
//    power-capped board sustains depends on that.
// 4: at the power cap each turn of an interleaved re-timing runs its candidate alone for
//    0.1 s before sampling (Interleave::capped_warmup_s): with 5 ms, a candidate was timed at
//    the clock its neighbours' power left behind, up to 20 % off its own.
// 5: at the power cap the figure is the mean, not the median (Center): the governor moves the
//    clock between levels a few % apart every half second or so, and a window's median jumps
//    between them; a settle lasts 3 s once the cap engages, `run` samples 2 s there.
inline constexpr int kMethodVersion = 5;

struct Provenance {
  // The GPU.
  std::string device_name;  // "NVIDIA H200"
  std::string device_uuid;  // "GPU-..."
  std::string arch;         // "sm_90"
  int sm_count = 0;
  // The toolchain.
  std::string driver;        // NVML driver string ("580.95.05"); "cuda X.Y" when NVML is absent
  std::string cuda_runtime;  // "13.0"
  std::string nvrtc;         // "13.0"
  std::string library;       // a plugin's extra provenance ("cublasLt 130000"); "" for source families
  std::string gemmtune_version = kGemmtuneVersion;
  int method_version = kMethodVersion;
  // The kernel family.
  std::string family;
  std::string family_version;
  uint64_t source_hash = 0;  // the plugin's hash of its kernel sources
  // The hash of what was built for this config (Family::build_hash: source, defines, options,
  // launch geometry and requests; a library's algorithm). Not part of the fingerprint: reuse
  // checks it per config. 0: unknown (rows of stores older than schema v3).
  uint64_t build_hash = 0;
  // The run.
  std::string input_dist = "normal";
  uint64_t input_seed = 0;
  std::string mode = "full";  // "full" | "quick"
  std::string host;           // hostname

  // Hex of a stable hash of the reuse-relevant fields (see the top of this file). Equal
  // fingerprints: a stored measurement may be reused.
  std::string fingerprint() const;

  // The provenance of measuring `fam` on `dev` now, in this process: NVML driver string,
  // linked CUDA runtime, NVRTC version, the plugin's version/source hash/extra provenance,
  // this host's name.
  static Provenance collect(const DeviceInfo& dev, const Family& fam, const std::string& input_dist,
                            uint64_t input_seed, bool quick);

  bool operator==(const Provenance&) const = default;
};

// This machine's host name ("" when it cannot be read).
std::string host_name();

void to_json(nlohmann::json& j, const Provenance& p);
void from_json(const nlohmann::json& j, Provenance& p);

}  // namespace gt
