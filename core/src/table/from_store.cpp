// A table from a store's winners (export).
#include "table/table.hpp"

#include "gpu/device.hpp"
#include "base/errors.hpp"
#include "base/files.hpp"
#include "base/json_text.hpp"
#include "measure/provenance.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "base/toml.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>
#include <variant>

namespace gt {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// From the store

LookupTable table_from_store(const Store& store, const ExportOptions& o, std::vector<std::string>* notes,
                             ExportSummary* summary) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  auto usable = [&](const StoredRow& r) {
    return r.m.status == Status::ok && std::isfinite(r.m.time_us()) && r.m.time_us() > 0 &&
           (o.include_replay || !r.replay);
  };

  // Best measured per key (replay rows only when asked for, and then the faster of both).
  std::map<ResultKey, StoredRow> best;
  RowFilter f;
  f.device_name = o.device;
  std::vector<bool> replay_modes = {false};
  if (o.include_replay) replay_modes.push_back(true);
  for (bool rp : replay_modes) {
    f.replay = rp;
    for (auto& r : store.best(f, false)) {
      auto k = r.key();
      auto it = best.find(k);
      if (it == best.end() || r.m.time_us() < it->second.m.time_us()) best[k] = std::move(r);
    }
  }

  std::map<ResultKey, std::vector<Winner>> winners;
  for (auto& w : store.winners(o.device)) winners[w.key].push_back(w);

  std::set<ResultKey> keys;
  for (auto& [k, r] : best) keys.insert(k);
  for (auto& [k, w] : winners) keys.insert(k);

  LookupTable t;
  auto [now, unix_now] = utc_now();
  (void)unix_now;
  t.info.generated_at = now;
  t.info.generator = std::string("gemmtune ") + kGemmtuneVersion;
  t.info.source = store.path().string();
  size_t unknown_params = 0;
  std::set<std::string> unknown_params_families;
  // Keys with replayed results, when replays are left out: each is either left out (nothing
  // measured on a GPU) or served by measured rows only. Counted per key, one note for both.
  std::set<ResultKey> replayed;
  if (!o.include_replay) {
    RowFilter rf;
    rf.device_name = o.device;
    rf.replay = true;
    rf.status = Status::ok;
    for (auto& k : store.keys(rf)) replayed.insert(k);
  }
  for (const ResultKey& k : keys) {
    std::optional<StoredRow> chosen;
    std::string origin;
    auto wit = winners.find(k);
    if (wit != winners.end()) {
      std::optional<StoredRow> overall, fastest_family;
      for (const Winner& w : wit->second) {
        auto row = store.get_by_uuid(w.row_uuid);
        if (!row) continue;
        if (!usable(*row)) continue;
        if (w.family == kAllFamilies)
          overall = row;
        else if (!fastest_family || row->m.time_us() < fastest_family->m.time_us())
          fastest_family = row;
      }
      if (overall) {
        chosen = overall;
        origin = "winner";
      } else if (fastest_family) {
        chosen = fastest_family;
        origin = "family winner";
      }
    }
    if (!chosen) {
      auto bit = best.find(k);
      if (bit == best.end()) continue;  // only replay winners, and replay is excluded
      chosen = bit->second;
      origin = "best measured";
    }
    const StoredRow& r = *chosen;
    TableEntry e;
    e.key = k;
    e.family = r.family;
    e.family_version = r.prov.family_version;
    e.source_hash = hex64(r.prov.source_hash);
    e.config = family_config_name(r.config_name, r.transform);
    e.transform = r.transform;
    if (o.params_of) {
      if (auto ps = o.params_of(r)) {
        e.params = *ps;
      } else {
        ++unknown_params;
        unknown_params_families.insert(r.family);
      }
    }
    e.time_us = r.m.time_us();
    e.tflops = r.tflops();
    e.measured_at = r.time_utc;
    e.arch = r.prov.arch;
    e.driver = r.prov.driver;
    e.cuda_runtime = r.prov.cuda_runtime;
    e.nvrtc = r.prov.nvrtc;
    e.library = r.prov.library;
    e.gemmtune_version = r.prov.gemmtune_version;
    e.row_uuid = r.row_uuid;
    e.origin = origin;
    e.replay = r.replay;
    t.entries.push_back(std::move(e));
  }
  t.sort();
  ExportSummary sum;
  for (const ResultKey& k : replayed) {
    const bool served = std::any_of(t.entries.begin(), t.entries.end(), [&](const TableEntry& e) { return e.key == k; });
    ++(served ? sum.replay_passed_over : sum.replay_left_out);
  }
  if (summary) *summary = sum;
  if (sum.replay_left_out || sum.replay_passed_over) {
    auto problems = [](size_t n) { return fmt::format("{} problem{}", n, n == 1 ? "" : "s"); };
    std::string what;
    if (sum.replay_left_out && t.entries.empty())
      what = fmt::format("the table is empty: every result in the store {}{} ({}) was replayed from a recording",
                         store.path().string(), o.device ? fmt::format(" for device '{}'", *o.device) : "",
                         problems(sum.replay_left_out));
    else if (sum.replay_left_out)
      what = fmt::format("{} left out: their results were replayed from a recording", problems(sum.replay_left_out));
    if (sum.replay_passed_over)
      what += fmt::format("{}{} served by GPU measurements only, their replayed results passed over",
                          what.empty() ? "" : "; ", problems(sum.replay_passed_over));
    note(what + " (a replay is not a measurement on a GPU; --include-replay exports replayed results too)");
  }
  if (unknown_params) {
    std::string fams;
    for (auto& s : unknown_params_families) fams += (fams.empty() ? "" : ", ") + s;
    note(fmt::format("{} entr{} without parameter assignments: family {} could not describe its space here (not "
                     "loaded, or it needs a GPU); the config names are complete",
                     unknown_params, unknown_params == 1 ? "y" : "ies", fams));
  }
  return t;
}

}  // namespace gt
