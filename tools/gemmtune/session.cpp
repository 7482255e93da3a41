#include "session.hpp"

#include "gpu/device_cache.hpp"
#include "measure/measure_service.hpp"

#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace gt::cli {

std::vector<int> parse_devices(const std::string& s, const std::filesystem::path& cache_dir) {
  if (s.empty()) return {0};
  if (s != "all") return search::parse_device_list(s);
  std::vector<int> out;
  const size_t n = known_devices(cache_dir).size();
  for (size_t i = 0; i < n; ++i) out.push_back(int(i));
  return out;
}

// A replay kept in a named store (--db) takes the recording's roofs where the store has none
// of that name for the device: they were measured on the recorded GPU, and with them a report
// of the store draws the roofline. Dated as the recording, so a roof measured since wins.
static void keep_recorded_roofs(Store& store, const search::Recording& rec, const std::string& file) {
  std::string when;
  for (auto& sp : rec.spaces())
    if (!sp.recorded().empty() && (when.empty() || sp.recorded() < when)) when = sp.recorded();
  std::tm tm{};
  std::istringstream in(when);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  const double unix_time = in.fail() ? 0 : double(timegm(&tm));
  for (RoofRow r : rec.roofs()) {
    bool have = false;
    for (auto& mine : store.roofs(r.device_name)) have = have || mine.name == r.name;
    if (have) continue;
    r.how = fmt::format("from the recording {}: {}", file, r.how);
    r.time_utc = in.fail() ? "" : when;
    r.time_unix = unix_time;
    store.put_roof(r);
  }
}

Session::Session(Globals& g, const SessionOptions& o)
    : g_(g), o_(o), cache_(g.cache()), compiler_(&cache_) {
  if (!o.replay.empty()) rec_ = load_recording(g, o.replay);
  db_ = g.db_path();
  if (rec_ && !g.db_named()) {
    // A replay is not a measurement: keep it out of the user's store unless asked.
    db_ = std::filesystem::temp_directory_path() / fmt::format("gemmtune-replay-{}.db", new_uuid().substr(0, 12));
    temp_db_ = true;
  }
  if (rec_) {
    store_.emplace(Store::open(db_));
    if (!temp_db_) keep_recorded_roofs(*store_, *rec_, o.replay);
    auto sim = std::make_unique<search::ReplayMeasurer>(*rec_);
    replay_measurer_ = sim.get();
    measurers_.push_back(std::move(sim));
    return;
  }
  // The GPUs as CUDA reports them, remembered per boot and environment (device_cache.hpp): a
  // run that measures nothing (a warm re-tune) then never initialises CUDA.
  const std::vector<DeviceInfo> gpus = known_devices(g.cache_path());
  const int n = int(gpus.size());
  for (int d : o.devices)
    if (d >= n)
      throw InputError(fmt::format("{}: GPU {} does not exist (this machine has {})",
                                   o.devices.size() > 1 || o.devices_flag ? "--devices" : "--device", d, n));
  store_.emplace(Store::open(db_));
  for (int d : o.devices) {
    if (!o.isolate) {
      measurers_.push_back(std::make_unique<MeasureService>(g.plugins(), cache_, d));
      continue;
    }
    std::vector<std::string> argv = {(executable_dir() / "gemmtune").string(), "__worker", "--device", std::to_string(d),
                                     "--cache-dir", g.cache_path().string()};
    for (auto& dir : plugin_dirs(g.plugin_dirs)) {
      argv.push_back("--plugin-dir");
      argv.push_back(dir.string());
    }
    WorkerLimits lim;
    lim.hang_floor_s = o.hang_floor_s;
    // The GPU is read here; the worker starts when the first measurement needs it.
    measurers_.push_back(std::make_unique<WorkerClient>(argv, g.plugins(), lim, gpus.at(size_t(d))));
  }
  pool_.emplace(compiler_);
}

Session::~Session() {
  measurers_.clear();
  store_.reset();
  if (temp_db_) {
    std::error_code ec;
    for (auto ext : {"", "-wal", "-shm"}) std::filesystem::remove(db_.string() + ext, ec);
  }
}

search::Recording load_recording(const Globals& g, const std::string& file) {
  search::Recording rec = search::Recording::load(file);
  rec.check_spaces(
      [&g](const search::RecordedSpace& rs) -> std::optional<Space> {
        const Family* fam = g.plugins().find(rs.family());
        if (!fam || fam->is_library()) return std::nullopt;  // a library describes its spaces on a GPU only
        gt_device limits{};
        try {
          limits = arch_limits(rs.device().arch);
        } catch (const InputError&) {
          throw InputError(fmt::format("device.arch '{}' is not an architecture this build knows", rs.device().arch));
        }
        return fam->space(rs.problem(), limits);
      },
      file);
  return rec;
}

std::vector<std::string> known_families(const Globals& g, const search::Recording* rec) {
  if (!rec) return g.plugins().names();
  std::vector<std::string> all;
  for (auto& s : rec->spaces())
    if (std::find(all.begin(), all.end(), s.family()) == all.end()) all.push_back(s.family());
  return all;
}

void require_known_family(const std::string& f, const std::vector<std::string>& known, const std::string& where,
                          const std::string& replay) {
  search::require_known_family(f, known, where, replay.empty() ? "loaded" : "recorded in " + replay);
}

search::Catalog catalog_of(const Globals& g, const search::Recording* rec, const std::string& replay) {
  search::Catalog cat;
  cat.families = known_families(g, rec);
  if (rec) {
    cat.known_as = "recorded in " + replay;
    // A family's own budget may name a family the recording lacks, as long as it exists.
    cat.exists = [&g](const std::string& f) {
      try {
        return g.plugins().find(f) != nullptr;
      } catch (const std::exception&) {
        return false;
      }
    };
    cat.is_library = [](const std::string& f) { return f == "cublaslt"; };
    // Fixed configs are checked against the recorded spaces, a library family's included.
    cat.library_spaces = true;
    cat.space = [rec](const std::string& f, const Problem& p) {
      const search::RecordedSpace* rs = rec->find(p.key(), f);
      if (!rs) throw RuntimeFailure(fmt::format("nothing recorded for {} on {}", f, p.key()));
      return rs->space();
    };
    for (const Problem& p : rec->problems()) {
      std::vector<std::string> fams;
      for (auto& s : rec->spaces())
        if (s.problem().key() == p.key() && std::find(fams.begin(), fams.end(), s.family()) == fams.end())
          fams.push_back(s.family());
      cat.recorded.emplace_back(p, fams);
    }
    return cat;
  }
  cat.is_library = [&g](const std::string& f) {
    const Family* fam = g.plugins().find(f);
    return fam && fam->is_library();
  };
  // Fixed configs are checked with sm_90's limits: no GPU is asked before the job is resolved.
  cat.space = [&g](const std::string& f, const Problem& p) { return g.plugins().get(f).space(p, arch_limits("sm_90")); };
  return cat;
}

SessionOptions session_options(const Globals& g, const search::ResolvedJob& resolved, const std::string& replay, bool isolate,
                               double hang_floor_s) {
  SessionOptions so;
  so.replay = replay;
  so.isolate = isolate;
  so.hang_floor_s = hang_floor_s;
  so.devices_flag = resolved.devices_flag;
  so.devices = resolved.devices;
  // "all" counts the GPUs; a replay has none to count (its recording is the one measurer).
  if (resolved.all_devices) so.devices = replay.empty() ? parse_devices("all", g.cache_path()) : std::vector<int>{0};
  return so;
}

std::vector<search::RunGpu> run_gpus(const Session& s, Distribution d, uint64_t input_seed) {
  std::vector<search::RunGpu> gpus;
  for (size_t i = 0; i < s.measurers(); ++i) gpus.push_back({&s.measurer(i), s.spaces(), s.provenance(d, input_seed, i)});
  return gpus;
}

std::vector<std::string> Session::families() const { return known_families(g_, rec_ ? &*rec_ : nullptr); }

search::SpaceSource Session::spaces() const {
  const search::Recording* rec = rec_ ? &*rec_ : nullptr;
  Globals* g = &g_;
  const Measurer* m = measurers_.front().get();
  return [rec, g, m](const std::string& family, const Problem& p) -> Space {
    if (rec) {
      const search::RecordedSpace* rs = rec->find(p.key(), family);
      if (!rs) throw RuntimeFailure(fmt::format("nothing recorded for {} on {}", family, p.key()));
      return rs->space();
    }
    return g->plugins().get(family).space(p, m->device().limits);
  };
}

search::ProvenanceSource Session::provenance(Distribution d, uint64_t input_seed, size_t measurer) const {
  const search::Recording* rec = rec_ ? &*rec_ : nullptr;
  Globals* g = &g_;
  const Measurer* m = measurers_.at(measurer).get();
  return [rec, g, m, d, input_seed](const std::string& family, bool quick) -> Provenance {
    if (rec) return search::replay_provenance(*rec, family, to_string(d), quick);
    return Provenance::collect(m->device(), g->plugins().get(family), to_string(d), input_seed, quick);
  };
}

std::string Session::label() const {
  if (!rec_) return "";
  return fmt::format(" [REPLAY of {} recorded on {}]", o_.replay, measurers_.front()->device().name);
}

}  // namespace gt::cli
