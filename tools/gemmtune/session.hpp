// What a command that measures needs, set up once: the store, the measurer (a worker
// process per GPU, this process, or a recording), the compile pool, and where spaces and
// provenance come from. Shared by every command that measures: tune, compare and roofs.
#pragma once

#include "cli.hpp"
#include "job/resolve.hpp"
#include "replay/replay_measurer.hpp"
#include "job/run.hpp"
#include "store/store.hpp"
#include "tune/tuner.hpp"
#include "measure/worker_client.hpp"

#include <filesystem>
#include <memory>
#include <optional>

namespace gt::cli {

struct SessionOptions {
  std::vector<int> devices = {0};
  bool devices_flag = false;  // the GPUs came from --devices (for messages), not --device
  bool isolate = true;     // measure in worker processes
  std::string replay;      // a recording instead of a GPU
  double hang_floor_s = 10;
};

class Session {
 public:
  // Opens the store and starts the measurers. NoGpuError without a GPU (unless replay).
  Session(Globals& g, const SessionOptions& o);
  ~Session();

  bool replay() const { return rec_.has_value(); }
  const search::Recording* recording() const { return rec_ ? &*rec_ : nullptr; }
  Store& store() { return *store_; }
  const std::filesystem::path& db() const { return db_; }
  bool temporary_db() const { return temp_db_; }
  size_t measurers() const { return measurers_.size(); }
  Measurer& measurer(size_t i = 0) const { return *measurers_.at(i); }
  CompilePool* pool() { return pool_ ? &*pool_ : nullptr; }
  const PluginRegistry* plugins() const { return rec_ ? nullptr : &g_.plugins(); }
  std::vector<std::string> families() const;  // loaded (or recorded) family names
  search::SpaceSource spaces() const;
  search::ProvenanceSource provenance(Distribution d, uint64_t input_seed, size_t measurer = 0) const;
  // " [REPLAY of FILE recorded on DEVICE]" in replay, "" otherwise.
  std::string label() const;
  // The replay's simulation of the recorded GPU (null when measuring on GPUs).
  const search::ReplayMeasurer* simulation() const { return replay_measurer_; }

 private:
  Globals& g_;
  SessionOptions o_;
  std::optional<search::Recording> rec_;
  std::filesystem::path db_;
  bool temp_db_ = false;
  std::optional<Store> store_;
  std::vector<std::unique_ptr<Measurer>> measurers_;
  const search::ReplayMeasurer* replay_measurer_ = nullptr;
  CubinCache cache_;
  Compiler compiler_;
  std::optional<CompilePool> pool_;
};

// A recording, loaded (Recording::load) and checked against the loaded plugins' spaces on
// the recorded architecture (Recording::check_spaces): a recording whose parameters differ
// from its family's would put configs into the store that no table reader finds.
search::Recording load_recording(const Globals& g, const std::string& file);

// The family names a run can use: those recorded in `rec` when there is one, else the loaded
// plugins'.
std::vector<std::string> known_families(const Globals& g, const search::Recording* rec);
// InputError "WHERE: unknown family 'F' (loaded: ...)" (or "recorded in REPLAY: ...") unless F is
// one of `known`. Checked before any GPU work.
void require_known_family(const std::string& f, const std::vector<std::string>& known, const std::string& where,
                          const std::string& replay);
// What a resolved job may use (search/job/resolve.hpp): the loaded plugins, or a recording's families and
// problems (`replay` names its file).
search::Catalog catalog_of(const Globals& g, const search::Recording* rec, const std::string& replay);
// The measurers a resolved job asks for: its GPUs (every one for --devices all), or the recording.
SessionOptions session_options(const Globals& g, const search::ResolvedJob& resolved, const std::string& replay, bool isolate,
                               double hang_floor_s);
// The session's measurers as the GPUs of a run.
std::vector<search::RunGpu> run_gpus(const Session& s, Distribution d, uint64_t input_seed);

// Device indices from "--devices all|0,1,..." (InputError when malformed).
// "all" (every GPU, remembered per boot in cache_dir: device_cache.hpp) or "0,1,...".
std::vector<int> parse_devices(const std::string& s, const std::filesystem::path& cache_dir);

}  // namespace gt::cli
