#include "report/report_data.hpp"

#include "base/errors.hpp"
#include "gpu/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>

#include <unistd.h>

namespace gt::report {
namespace fs = std::filesystem;

namespace {

json num(double v) { return std::isfinite(v) ? json(v) : json(); }

}  // namespace

// ---------------------------------------------------------------------------------------
// Parameters of a stored config, as an ordered list of [name, value text].

Params split_assignments(const std::string& a) {
  Params out;
  size_t i = 0;
  while (i < a.size()) {
    size_t comma = a.find(',', i);
    std::string kv = a.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return out;
}

std::vector<std::string> name_tokens(const StoredRow& r) {
  std::vector<std::string> t;
  std::string prefix = r.family + "_";
  // The family's own name: a transformed config's ends with its transform (the row says which).
  const std::string name = r.transform == Transform::none ? r.config_name : family_config_name(r.config_name, r.transform);
  if (name.rfind(prefix, 0) != 0) return t;
  std::string rest = name.substr(prefix.size());
  size_t i = 0;
  while (i <= rest.size()) {
    size_t u = rest.find('_', i);
    t.push_back(rest.substr(i, u == std::string::npos ? std::string::npos : u - i));
    if (u == std::string::npos) break;
    i = u + 1;
  }
  return t;
}

// Resolves parameters through the family's own space (its names and labels), which needs
// the plugin and, for library families, a GPU. Where that is not possible the canonical
// name is split by the parameter names the store noted when the family was tuned
// (Store::note_param_names), else the row's own params as its family's space spelled them when
// it was measured (schema v9). Stores from before that are split by guess: a name is
// family_p1V1_p2V2..., so when it has one token per parameter, the part all of the family's
// tokens at a position share is the parameter's name and the rest its value; else the params
// the store read out of the row's description (cuBLASLt's "algo N: tile 256x128, stages 8x3,
// ...", legacy_description.hpp); else the parameters are numbered.
class ParamResolver {
 public:
  ParamResolver(const PluginSource* plugins, bool use_plugins, const std::map<std::string, std::vector<std::string>>& noted)
      : plugins_(plugins), use_plugins_(use_plugins && plugins), noted_(noted) {}

  // First pass: everything the name-based fallback needs to know about the family.
  void observe(const StoredRow& r) {
    auto t = name_tokens(r);
    if (t.size() == r.config.size()) tokens_[r.family].push_back(std::move(t));
  }

  std::pair<Params, std::string> resolve(const StoredRow& r) {
    if (auto p = from_plugin(r)) return {*p, "plugin"};
    if (auto it = noted_.find(r.family + "|" + r.prov.family_version); it != noted_.end())
      if (auto a = assignments_from_name(r.config_name, r.family, it->second)) return {split_assignments(*a), "store"};
    if (r.params_from == "space" && !r.params.empty()) return {split_assignments(r.params), "row"};
    auto t = name_tokens(r);
    Params out;
    if (!r.config.empty() && t.size() == r.config.size()) {
      const auto& names = common_names(r.family, t.size());
      for (size_t i = 0; i < t.size(); ++i) {
        const std::string& n = names[i];
        out.emplace_back(n, t[i].substr(std::min(n.size(), t[i].size())));
      }
      return {out, "name"};
    }
    if (r.params_from == "description" && !r.params.empty()) return {split_assignments(r.params), "description"};
    for (size_t i = 0; i < r.config.size(); ++i) out.emplace_back(fmt::format("p{}", i), std::to_string(r.config[i]));
    return {out, "index"};
  }

 private:
  std::optional<Params> from_plugin(const StoredRow& r) {
    if (!use_plugins_) return std::nullopt;
    const PluginRegistry* reg = nullptr;
    try {
      reg = &(*plugins_)();
    } catch (const std::exception&) {
      use_plugins_ = false;
      return std::nullopt;
    }
    const Family* fam = reg->find(r.family);
    if (!fam) return std::nullopt;
    std::string arch = r.prov.arch.empty() ? "sm_90" : r.prov.arch;
    std::string cache_key = r.family + "|" + arch + "|" + r.problem.key() + "|" + std::to_string(r.problem.lda) + "," +
                            std::to_string(r.problem.ldb) + "," + std::to_string(r.problem.ldc) + "|" +
                            to_string(r.transform);
    auto it = spaces_.find(cache_key);
    if (it == spaces_.end()) {
      std::optional<Space> s;
      try {
        s = fam->space(transformed_problem(r.problem, r.transform), arch_limits(arch));  // the family's problem
      } catch (const std::exception&) {
        // A library family without a GPU, an unknown architecture: the name says the rest.
      }
      it = spaces_.emplace(cache_key, std::move(s)).first;
    }
    if (!it->second) return std::nullopt;
    const Space& s = *it->second;
    try {
      // A plugin that changed since the row was stored would spell other parameters.
      if (r.config.size() != s.dims() || transformed_name(s.name(r.config), r.transform) != r.config_name)
        return std::nullopt;
      return split_assignments(s.assignments(r.config));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  const std::vector<std::string>& common_names(const std::string& family, size_t n) {
    auto key = family + "#" + std::to_string(n);
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::vector<std::string> names(n);
    for (size_t i = 0; i < n; ++i) {
      std::optional<std::string> common;
      for (auto& t : tokens_[family]) {
        if (t.size() != n) continue;
        if (!common) {
          common = t[i];
        } else {
          size_t j = 0;
          while (j < common->size() && j < t[i].size() && (*common)[j] == t[i][j]) ++j;
          common->resize(j);
        }
      }
      // The name is the letters all tokens share; a shared leading digit ("bm1" of bm128
      // and bm16) belongs to the value. With one value only nothing says where the name
      // ends, and its leading letters are the guess.
      std::string c = common.value_or("");
      size_t letters = 0;
      while (letters < c.size() && std::isalpha(static_cast<unsigned char>(c[letters]))) ++letters;
      names[i] = c.substr(0, letters);
      if (names[i].empty()) names[i] = fmt::format("p{}", i);
    }
    return names_.emplace(key, std::move(names)).first->second;
  }

  const PluginSource* plugins_;
  bool use_plugins_;
  const std::map<std::string, std::vector<std::string>>& noted_;
  std::map<std::string, std::optional<Space>> spaces_;
  std::map<std::string, std::vector<std::vector<std::string>>> tokens_;
  std::map<std::string, std::vector<std::string>> names_;
};

// ---------------------------------------------------------------------------------------

// `kind`: the input types and, for FP8, the scale mode ("bf16", "e4m3:e5m2 row"): what the
// report's panels group by, so that FP8 problems of different scales are not one series.
json problem_fields(const Problem& p) {
  std::string kind = in_types_text(p.in, p.in_b);
  if (p.scale != ScaleMode::none) kind += std::string(" ") + to_string(p.scale);
  return {{"key", p.key()},
          {"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"dtype", to_string(p.in)},
          {"b_dtype", to_string(p.in_b)},
          {"scale", to_string(p.scale)},
          {"kind", kind},
          {"out_dtype", to_string(p.out)},
          {"layout", to_string(p.layout)},
          {"align", p.align}};
}

json limits_json(const std::string& arch) {
  try {
    gt_device d = arch_limits(arch);
    return {{"arch", arch},
            {"regs_per_sm", d.regs_per_sm},
            {"regs_per_block", d.regs_per_block},
            {"max_threads_per_sm", d.max_threads_per_sm},
            {"max_threads_per_block", d.max_threads_per_block},
            {"max_blocks_per_sm", d.max_blocks_per_sm},
            {"smem_per_sm", d.smem_per_sm},
            {"smem_per_block_optin", d.smem_per_block_optin},
            {"warp_size", d.warp_size},
            {"l2_bytes", d.l2_bytes}};
  } catch (const std::exception&) {
    return json();
  }
}


// Opens the store without writing to it or beside it. SQLite opens a WAL store, even
// read-only, by creating its -shm and -wal files next to it, and leaves them there; so
// where nobody has the store open (it has no -shm file) a copy in a temporary directory is
// read instead, which also works where the store's directory cannot be written. A store
// in use (a tune writing to it) is read in place, through the files its writer made.
struct ReadonlyStore {
  std::optional<Store> store;
  fs::path snapshot_dir;
  ~ReadonlyStore() {
    store.reset();
    std::error_code ec;
    if (!snapshot_dir.empty()) fs::remove_all(snapshot_dir, ec);
  }
};

void open_store(const fs::path& db, ReadonlyStore& out) {
  fs::path shm = db.string() + "-shm", wal = db.string() + "-wal";
  // A store that cannot be read is said so before anything is copied.
  if (::access(db.c_str(), F_OK) == 0 && ::access(db.c_str(), R_OK) != 0)
    throw RuntimeFailure(fmt::format("{}: cannot read the store ({})", db.string(), std::strerror(errno)));
  // In a folder nobody can write, nobody is writing the store either: it is read in place.
  const bool folder_writable = ::access(fs::absolute(db).parent_path().c_str(), W_OK) == 0;
  if (fs::exists(shm) || !folder_writable) {
    out.store.emplace(Store::open_readonly(db));
    return;
  }
  out.snapshot_dir = fs::temp_directory_path() / ("gemmtune-report-" + new_uuid().substr(0, 12));
  fs::create_directories(out.snapshot_dir);
  fs::path copy = out.snapshot_dir / "store.db";
  try {
    fs::copy_file(db, copy);
    if (fs::exists(wal)) fs::copy_file(wal, fs::path(copy.string() + "-wal"));
  } catch (const fs::filesystem_error& e) {
    // A full temporary folder, say: the half copy goes, and the message names both places.
    std::error_code ec;
    fs::remove_all(out.snapshot_dir, ec);
    throw RuntimeFailure(fmt::format("{}: cannot copy the store to {} to read it ({}); set TMPDIR to a folder with room",
                                     db.string(), out.snapshot_dir.string(), e.code().message()));
  }
  out.store.emplace(Store::open_readonly(copy));
}



StoreContents read_store(const fs::path& db) {
  ReadonlyStore rs;
  open_store(db, rs);
  Store& store = *rs.store;
  StoreContents c;
  c.rows = store.rows();
  try {
    c.roofs = store.roofs();
  } catch (const std::exception& e) {
    c.notes.push_back(std::string("the store has no roofs table (an older store): ") + e.what());
  }
  c.winners = store.winners();
  for (auto& r : c.rows) {
    const std::string k = r.family + "|" + r.prov.family_version;
    if (!c.param_names.count(k)) c.param_names[k] = store.param_names(r.family, r.prov.family_version);
  }
  return c;  // the store is let go of before the slow part
}

struct DevSummary {
  std::set<std::string> uuids, archs, drivers, runtimes, nvrtcs, hosts, gemmtune, dists, tunes;
  std::map<std::string, std::set<std::string>> libraries, family_versions;
  int64_t sm_count = 0, rows = 0, ok = 0, replay = 0, quick = 0;
  std::string first, last;
  void add(const StoredRow& r) {
    rows++;
    uuids.insert(r.prov.device_uuid);
    archs.insert(r.prov.arch);
    sm_count = std::max<int64_t>(sm_count, r.prov.sm_count);
    drivers.insert(r.prov.driver);
    runtimes.insert(r.prov.cuda_runtime);
    nvrtcs.insert(r.prov.nvrtc);
    hosts.insert(r.prov.host);
    gemmtune.insert(r.prov.gemmtune_version);
    dists.insert(r.prov.input_dist);
    tunes.insert(r.tune_id);
    if (!r.prov.library.empty()) libraries[r.family].insert(r.prov.library);
    family_versions[r.family].insert(r.prov.family_version);
    replay += r.replay;
    quick += r.m.quick;
    ok += r.m.status == Status::ok;
    if (first.empty() || r.time_utc < first) first = r.time_utc;
    if (r.time_utc > last) last = r.time_utc;
  }
  json to_json(const std::string& name) const {
    json libs = json::object(), fvs = json::object();
    for (auto& [f, s] : libraries) libs[f] = s;
    for (auto& [f, s] : family_versions) fvs[f] = s;
    return {{"name", name},           {"uuids", uuids},           {"archs", archs},
            {"sm_count", sm_count},   {"drivers", drivers},       {"cuda_runtimes", runtimes},
            {"nvrtc", nvrtcs},        {"libraries", libs},        {"family_versions", fvs},
            {"hosts", hosts},         {"gemmtune_versions", gemmtune}, {"input_dists", dists},
            {"tune_runs", tunes.size()}, {"rows", rows},           {"ok", ok},
            {"replay_rows", replay},  {"quick_rows", quick},      {"first", first},
            {"last", last},           {"limits", archs.size() == 1 ? limits_json(*archs.begin()) : json()}};
  }
};

// One successful row as the report plots it.
json measurement_json(const StoredRow& r, ParamResolver& params, bool pick) {
  auto [ps, source] = params.resolve(r);
  json pj = json::array();
  for (auto& [k, v] : ps) pj.push_back({k, v});
  json m = problem_fields(r.problem);
  double flops = r.problem.flops(), bytes = r.problem.min_bytes();
  m.update({{"id", r.id},
            {"device", r.prov.device_name},
            {"family", r.family},
            {"config", r.config_name},
            {"transform", to_string(r.transform)},
            {"params", pj},
            {"params_from", source},
            {"time_us", num(r.m.time_us())},
            {"min_us", num(r.m.time.min)},
            {"max_us", num(r.m.time.max)},
            {"p10_us", num(r.m.time.p10)},
            {"p90_us", num(r.m.time.p90)},
            {"ci_low_us", num(r.m.time.ci_low)},
            {"ci_high_us", num(r.m.time.ci_high)},
            {"samples", r.m.time.count},
            {"tflops", num(r.tflops())},
            {"flops", flops},
            {"bytes", bytes},
            {"intensity", flops / bytes},
            {"err_rel_fro", num(r.m.err_rel_fro)},
            {"err_max_norm", num(r.m.err_max_norm)},
            {"registers", r.m.res.registers},
            {"spill_stores", r.m.res.spill_stores},
            {"spill_loads", r.m.res.spill_loads},
            {"static_smem", r.m.res.static_smem},
            {"sm_clock_mhz", num(r.m.sensors.sm_clock_mhz)},
            {"power_w", num(r.m.sensors.power_w)},
            {"temp_c", num(r.m.sensors.temp_c)},
            {"replay", r.replay},
            {"quick", r.m.quick},
            {"tune_id", r.tune_id},
            {"time_utc", r.time_utc},
            {"description", r.m.message},
            {"heuristic_rank", r.heuristic_rank ? json(*r.heuristic_rank) : json()},
            {"pick", pick}});
  return m;
}


RowsJson rows_json(const StoreContents& c, const PluginSource* plugins) {
  ParamResolver params(plugins, plugins != nullptr, c.param_names);
  for (auto& r : c.rows)
    if (r.m.status == Status::ok) params.observe(r);
  // The library's pick: the row's heuristic rank (0) says so where it was known; other rows of
  // that config for the same key (a replay's re-timings, which nobody ranked) are the pick too. A
  // transformed row marked so is the pick for the transformed problem (cuBLASLt's pick for the
  // padded one): its `transform` tells them apart (report.py keeps the plain pick as the problem's pick).
  std::set<std::string> pick_names;  // device|key|config_name
  auto key_of = [](const StoredRow& r) { return r.prov.device_name + "|" + r.problem.key(); };
  for (auto& r : c.rows)
    if (r.m.status == Status::ok && r.pick()) pick_names.insert(key_of(r) + "|" + r.config_name);
  RowsJson out;
  std::map<std::string, std::map<std::string, int64_t>> by_status;  // family -> status -> count
  std::map<std::string, std::string> first_message;                 // family|status -> message
  std::map<std::string, DevSummary> devices;
  for (auto& r : c.rows) {
    devices[r.prov.device_name].add(r);
    std::string st = to_string(r.m.status);
    by_status[r.family][st]++;
    if (r.m.status != Status::ok) first_message.emplace(r.family + "|" + st, r.m.message.substr(0, 300));
    else out.measurements.push_back(measurement_json(r, params, pick_names.count(key_of(r) + "|" + r.config_name) > 0));
  }
  for (auto& [name, d] : devices) out.devices.push_back(d.to_json(name));
  for (auto& r : c.roofs)
    if (!devices.count(r.device_name))
      out.devices.push_back({{"name", r.device_name}, {"rows", 0}, {"ok", 0}, {"replay_rows", 0}});
  for (auto& [fam, m] : by_status)
    for (auto& [st, n] : m)
      out.status_counts.push_back({{"family", fam}, {"status", st}, {"count", n},
                                   {"example", st == "ok" ? json() : json(first_message[fam + "|" + st])}});
  return out;
}

json roofs_json(const std::vector<RoofRow>& roofs) {
  json out = json::array();
  for (auto& r : roofs)
    out.push_back({{"device", r.device_name}, {"name", r.name}, {"value", num(r.value)}, {"unit", r.unit},
                   {"how", r.how}, {"sm_clock_mhz", num(r.sm_clock_mhz)}, {"power_w", num(r.power_w)},
                   {"temp_c", num(r.temp_c)}, {"time_utc", r.time_utc}});
  return out;
}

json winners_json(const std::vector<Winner>& winners) {
  json out = json::array();
  for (auto& w : winners) {
    const Decision& d = w.decision;
    json wj = {{"device", w.key.device_name}, {"m", w.key.m}, {"n", w.key.n}, {"k", w.key.k},
               {"dtype", to_string(w.key.in)}, {"out_dtype", to_string(w.key.out)},
               {"layout", to_string(w.key.layout)}, {"align", w.key.align}, {"family", w.family},
               {"config", w.config_name}, {"row_id", w.row_id}, {"note", w.note}, {"time_utc", w.time_utc},
               {"tie", d.tie}, {"tie_with", d.tie_with}, {"runner_up", d.runner_up}, {"margin", num(d.margin)}};
    wj["key"] = w.key.text().substr(w.key.device_name.size() + 1);  // the problem's key, without the device
    wj["b_dtype"] = to_string(w.key.in_b);
    wj["scale"] = to_string(w.key.scale);
    out.push_back(std::move(wj));
  }
  return out;
}
}  // namespace gt::report
