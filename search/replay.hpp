// Replay: recorded measurements stand in for the GPU. A recording holds, per (device,
// problem, family), the family's parameters and the outcome of every config measured; the
// tuner and bench_search use it as the objective, with no GPU.
//
// File format (JSON):
//   {"format":"gemmtune-replay/1", "spaces":[ {"recorded":"<ISO time>",
//     "device":{"name":"NVIDIA H200","uuid":"GPU-...","arch":"sm_90"},
//     "problem":{"m":4096,"n":4096,"k":4096,"in":"f32","out":"f32","layout":"nn","align":16},
//     "family":"register_tile","family_version":"1.0",
//     "params":[{"name":"bm","help":"...","values":[64,128],"labels":[],"default":1}, ...],
//     "results":[{"config":[128,...],"status":"ok","median_us":123.4,"message":""}, ...] } ] }
// status: to_string(Status); median_us: the measurement's figure (the median, or the mean for a
// row timed at the power cap: docs/measurement.md), null when there is no time. "problem" may also
// carry "lda", "ldb", "ldc" (default: tight).
#pragma once

#include "driver.hpp"
#include "problem.hpp"
#include "space.hpp"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gt::search {

inline constexpr const char* kReplayFormat = "gemmtune-replay/1";

struct RecordedDevice {
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-..."
  std::string arch;  // "sm_90"
};

// The recorded outcomes of one family's configs for one problem on one device.
class RecordedSpace {
 public:
  RecordedSpace(std::string recorded, RecordedDevice device, Problem problem, std::string family,
                std::string family_version, std::vector<Param> params);
  RecordedSpace(const RecordedSpace& o);  // copies the results (never shares them)
  RecordedSpace& operator=(const RecordedSpace& o);
  RecordedSpace(RecordedSpace&&) noexcept = default;
  RecordedSpace& operator=(RecordedSpace&&) noexcept = default;

  const std::string& recorded() const { return recorded_; }  // ISO time of the recording
  const RecordedDevice& device() const { return device_; }
  const Problem& problem() const { return problem_; }
  const std::string& family() const { return family_; }
  const std::string& family_version() const { return family_version_; }
  const std::vector<Param>& params() const { return params_; }

  // The recorded parameters as a space. A config is valid when it was recorded with a
  // status other than cannot_implement / resources, i.e. it could run on the recording
  // device; the reason says otherwise (refused there, with the recorded message, or not
  // recorded at all). The space shares this recording's results, so it stays usable after
  // this object is gone and sees results added later.
  Space space() const;

  // The recorded outcome of a config (nullopt: not recorded).
  std::optional<Outcome> lookup(const Config& c) const;
  // lookup() as an objective: an unrecorded config is cannot_implement ("not recorded").
  Objective objective() const;

  // Records (or replaces) the outcome of a config. InputError when the config is not in
  // the parameter lists.
  void add(const Config& c, Outcome o);
  size_t size() const;         // configs recorded
  size_t valid_count() const;  // of those, not cannot_implement / resources
  // Every recorded (config, outcome), in raw index order.
  std::vector<std::pair<Config, Outcome>> results() const;

 private:
  struct Results;
  uint64_t index_of(const Config& c) const;  // InputError when c is not in the lists
  std::string recorded_;
  RecordedDevice device_;
  Problem problem_;
  std::string family_, family_version_;
  std::vector<Param> params_;
  std::shared_ptr<Results> results_;
};

class Recording {
 public:
  // InputError naming the file and what is wrong (unreadable, not JSON, wrong format
  // version, a missing key, a wrong type, a config or status that makes no sense).
  static Recording load(const std::filesystem::path& file);
  // `source` names the document in error messages.
  static Recording from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::json to_json() const;
  // Written whole to a temporary file, then renamed over `file`. RuntimeFailure on error.
  void save(const std::filesystem::path& file) const;

  std::vector<RecordedSpace>& spaces() { return spaces_; }
  const std::vector<RecordedSpace>& spaces() const { return spaces_; }

  // The space recorded for a problem key (Problem::key()) and family; with a device uuid,
  // only on that device. The first match, or nullptr.
  const RecordedSpace* find(const std::string& problem_key, const std::string& family,
                            const std::string& device_uuid = "") const;
  RecordedSpace* find(const std::string& problem_key, const std::string& family, const std::string& device_uuid = "");
  // The space of (device, problem, family, version), added empty when missing.
  // InputError when it exists with other parameter lists.
  // `recorded`: when the measurements were taken (ISO time; empty: now).
  RecordedSpace& space_for(const RecordedDevice& device, const Problem& problem, const std::string& family,
                           const std::string& family_version, const std::vector<Param>& params,
                           const std::string& recorded = "");
  // Adds every result of `other`: into the matching space (same device uuid, problem key,
  // family and version; other's outcome wins per config), or as a new space.
  void merge(const Recording& other);

 private:
  std::vector<RecordedSpace> spaces_;
};

// Now as an ISO 8601 UTC time ("2026-11-29T10:43:00Z"), for RecordedSpace::recorded.
std::string iso_time_now();

}  // namespace gt::search
