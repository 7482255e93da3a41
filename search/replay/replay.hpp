// Replay: recorded measurements stand in for the GPU. A recording holds, per (device,
// problem, family), the family's parameters and the outcome of every config measured; the
// tuner (through ReplayMeasurer, a simulation of the recorded run) and bench_search use it
// with no GPU.
//
// File format (JSON), version 2:
//   {"format":"gemmtune-replay/2",
//    "compile_threads": 16,                       (optional: the recording run's compile pool)
//    "roofs":[{"device":"NVIDIA H200","name":"tensor_f16","value":6.88e14,"unit":"FLOP/s",
//              "how":"..."}, ...],                 (optional: the device's measured roofs)
//    "spaces":[ {"recorded":"<ISO time>",
//     "device":{"name":"NVIDIA H200","uuid":"GPU-...","arch":"sm_90"},
//     "problem":{"m":4096,"n":4096,"k":4096,"in":"f32","out":"f32","layout":"nn","align":16},
//     "family":"register_tile","family_version":"1.0",
//     "params":[{"name":"bm","help":"...","values":[64,128],"labels":[],"default":1}, ...],
//     "results":[{"config":[128,...],"status":"ok","median_us":123.4,"message":"",
//                 "quick":true, "compile_s":1.8, "measure_s":0.06,
//                 "retimed":{Stats as JSON}}, ...] } ] }
// status: to_string(Status); median_us: the exploration measurement's figure (the median, or
// the mean for a row timed at the power cap: docs/measurement.md), null when there is no time;
// quick: whether that was a quick timing; compile_s: what its compile cost the run (0 from the
// cache); measure_s: the GPU's seconds verifying and timing it; retimed: the finalists'
// re-timing, where the config was a finalist. Those four are optional. "problem" may also
// carry "lda", "ldb", "ldc" (default: tight).
// Version 1 ("gemmtune-replay/1") is version 2 without the optional keys: it still loads, and
// its figures are exploration timings with no times recorded.
#pragma once

#include "tune/driver.hpp"
#include "base/problem.hpp"
#include "base/space.hpp"
#include "store/store.hpp"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt::search {

inline constexpr const char* kReplayFormat = "gemmtune-replay/2";
inline constexpr const char* kReplayFormatV1 = "gemmtune-replay/1";

// The measurement rules a recording is held to as it loads. A figure below 0.1 us cannot be
// a GPU kernel's time: CUDA events resolve about 0.5 us, and even an empty kernel takes more
// than a microsecond between two of them; such a figure would become a table entry whose
// rate the table reader refuses (an overflowing TFLOP/s at 1e-300 us).
inline constexpr double kMinRecordedTimeUs = 0.1;
inline constexpr int64_t kMaxCompileThreads = 4096;

// One config as recorded.
struct RecordedResult {
  Outcome explored;              // the exploration measurement
  bool quick = true;             // timed quickly (version 1: assumed, the default of a tune)
  std::optional<Stats> retimed;  // the finalists' re-timing, where it was a finalist
  double compile_s = kNaN;       // seconds its compile cost the run (0: from the cache; NaN: not recorded)
  double measure_s = kNaN;       // the GPU's seconds verifying and timing it (NaN: not recorded)
};

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

  // The recorded exploration outcome of a config (nullopt: not recorded).
  std::optional<Outcome> lookup(const Config& c) const;
  // Everything recorded of a config (nullopt: not recorded).
  std::optional<RecordedResult> recorded(const Config& c) const;
  // The median of re-timed / explored figure over the configs recorded with both: how much
  // slower the finalists' re-timing read than their exploration (e.g. at the sustained clock
  // against the boost clock). nullopt when no config has both.
  std::optional<double> retime_ratio() const;
  // lookup() as an objective: an unrecorded config is cannot_implement ("not recorded").
  Objective objective() const;

  // Records (or replaces) the outcome of a config. InputError when the config is not in
  // the parameter lists.
  void add(const Config& c, Outcome o);
  // Records (or replaces) everything recorded of a config (add: its exploration outcome alone).
  void record(const Config& c, RecordedResult r);
  size_t size() const;         // configs recorded
  size_t valid_count() const;  // of those, not cannot_implement / resources
  // Every recorded (config, exploration outcome), in raw index order.
  std::vector<std::pair<Config, Outcome>> results() const;
  std::vector<std::pair<Config, RecordedResult>> recorded_results() const;

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
  // The same from a document's text; `source` names it in messages.
  static Recording parse(std::string_view text, const std::string& source);
  // `source` names the document in error messages.
  static Recording from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::json to_json() const;
  // Written whole to a temporary file, then renamed over `file`. RuntimeFailure on error.
  void save(const std::filesystem::path& file) const;

  std::vector<RecordedSpace>& spaces() { return spaces_; }
  const std::vector<RecordedSpace>& spaces() const { return spaces_; }
  // The recording devices' measured roofs (`gemmtune roofs`; RoofRow::device_name names the
  // device): the simulation never reports a figure above them.
  std::vector<RoofRow>& roofs() { return roofs_; }
  const std::vector<RoofRow>& roofs() const { return roofs_; }
  // The recording run's compile threads (0: not recorded): a replay compiles ahead with as many.
  unsigned compile_threads = 0;
  // The format it was read from (kReplayFormat when made here).
  std::string format = kReplayFormat;
  // The distinct problems recorded, in the recording's order.
  std::vector<Problem> problems() const;

  // Checks every recorded space against its family's own space (what `space_of` returns for
  // it: the loaded plugin's, on the recorded architecture; nullopt: it cannot be asked, e.g.
  // the family is not loaded, or describes its spaces on a GPU only): the same parameters in
  // the same order, every recorded value one of the family's, with the family's labels. A
  // recording that differs would put configs into a store that no table reader can find in
  // the family. InputError naming `source`, the space and the parameter.
  using FamilySpace = std::function<std::optional<Space>(const RecordedSpace&)>;
  void check_spaces(const FamilySpace& space_of, const std::string& source) const;

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
  // family and version; other's outcome wins per config), or as a new space; and its roofs
  // (other's win per device and name).
  void merge(const Recording& other);

 private:
  std::vector<RecordedSpace> spaces_;
  std::vector<RoofRow> roofs_;
};

// Now as an ISO 8601 UTC time ("2026-11-29T10:43:00Z"), for RecordedSpace::recorded.
std::string iso_time_now();

}  // namespace gt::search
