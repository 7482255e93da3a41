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

namespace {
// A row the table may take: measured ok, in a finite positive time, and replayed only when asked for.
bool usable(const StoredRow& r, const ExportOptions& o) {
  return r.m.status == Status::ok && std::isfinite(r.m.time_us()) && r.m.time_us() > 0 &&
         (o.include_replay || !r.replay);
}

// Best measured per key (replay rows only when asked for, and then the faster of both).
std::map<ResultKey, StoredRow> best_measured(const Store& store, const ExportOptions& o) {
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
  return best;
}

// The row a key's entry is made of, and where it came from: the tune's overall winner, else the
// fastest family winner, else the best measured row; nullopt when none is usable.
std::optional<std::pair<StoredRow, std::string>> chosen_row(const Store& store, const std::vector<Winner>* winners,
                                                            const StoredRow* best, const ExportOptions& o) {
  std::optional<StoredRow> overall, fastest_family;
  if (winners)
    for (const Winner& w : *winners) {
      auto row = store.get_by_uuid(w.row_uuid);
      if (!row || !usable(*row, o)) continue;
      if (w.family == kAllFamilies)
        overall = row;
      else if (!fastest_family || row->m.time_us() < fastest_family->m.time_us())
        fastest_family = row;
    }
  if (overall) return std::pair{*overall, std::string("winner")};
  if (fastest_family) return std::pair{*fastest_family, std::string("family winner")};
  if (best) return std::pair{*best, std::string("best measured")};
  return std::nullopt;  // only replay winners, and replay is excluded
}

// A table entry of a stored row: its config, time and provenance (params are filled by the caller).
TableEntry entry_of(const ResultKey& k, const StoredRow& r, const std::string& origin) {
  TableEntry e;
  e.key = k;
  e.family = r.family;
  e.family_version = r.prov.family_version;
  e.source_hash = hex64(r.prov.source_hash);
  e.config = family_config_name(r.config_name, r.transform);
  e.transform = r.transform;
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
  return e;
}

// Keys with replayed results, when replays are left out: each is either left out (nothing
// measured on a GPU) or served by measured rows only. Counted per key, one note for both.
std::string replay_note(const Store& store, const ExportOptions& o, const LookupTable& t, ExportSummary& sum) {
  if (o.include_replay) return "";
  RowFilter rf;
  rf.device_name = o.device;
  rf.replay = true;
  rf.status = Status::ok;
  for (auto& k : store.keys(rf)) {
    const bool served = std::any_of(t.entries.begin(), t.entries.end(), [&](const TableEntry& e) { return e.key == k; });
    ++(served ? sum.replay_passed_over : sum.replay_left_out);
  }
  if (!sum.replay_left_out && !sum.replay_passed_over) return "";
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
  return what + " (a replay is not a measurement on a GPU; --include-replay exports replayed results too)";
}
}  // namespace

LookupTable table_from_store(const Store& store, const ExportOptions& o, std::vector<std::string>* notes,
                             ExportSummary* summary) {
  auto note = [&](std::string s) {
    if (notes && !s.empty()) notes->push_back(std::move(s));
  };
  const std::map<ResultKey, StoredRow> best = best_measured(store, o);
  std::map<ResultKey, std::vector<Winner>> winners;
  for (auto& w : store.winners(o.device)) winners[w.key].push_back(w);
  std::set<ResultKey> keys;
  for (auto& [k, r] : best) keys.insert(k);
  for (auto& [k, w] : winners) keys.insert(k);

  LookupTable t;
  t.info.generated_at = utc_now().first;
  t.info.generator = std::string("gemmtune ") + kGemmtuneVersion;
  t.info.source = store.path().string();
  size_t unknown_params = 0;
  std::set<std::string> unknown_params_families;
  for (const ResultKey& k : keys) {
    auto wit = winners.find(k);
    auto bit = best.find(k);
    auto chosen = chosen_row(store, wit == winners.end() ? nullptr : &wit->second,
                             bit == best.end() ? nullptr : &bit->second, o);
    if (!chosen) continue;
    TableEntry e = entry_of(k, chosen->first, chosen->second);
    if (o.params_of) {
      if (auto ps = o.params_of(chosen->first)) {
        e.params = *ps;
      } else {
        ++unknown_params;
        unknown_params_families.insert(chosen->first.family);
      }
    }
    t.entries.push_back(std::move(e));
  }
  t.sort();
  ExportSummary sum;
  note(replay_note(store, o, t, sum));
  if (summary) *summary = sum;
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
