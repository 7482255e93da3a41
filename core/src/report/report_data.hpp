// The report's data model: what `gemmtune report` reads from a store and writes to data.json
// for tools/report.py (rows as measurements with their parameters spelled out, devices, status
// counts, roofs, winners, problems' fields). The command adds its jobs and writes the file.
#pragma once

#include "build/plugin.hpp"
#include "store/store.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gt::report {

using nlohmann::json;
// A config's parameters, in order, as [name, value text].
using Params = std::vector<std::pair<std::string, std::string>>;
// "k=v,k=v" as Params.
Params split_assignments(const std::string& a);
// The loaded plugins, asked for only when a row's parameters need them (loading them may fail).
using PluginSource = std::function<const PluginRegistry&()>;

// A problem's fields as the report's panels read them (shape, types, layout, kind, ...).
json problem_fields(const Problem& p);
// The architecture's limits, for the report's device section (null for an unknown arch).
json limits_json(const std::string& arch);

// What the report shows of a store, read once without writing to it or beside it (a store
// in use is read in place; else a snapshot), and let go of before the slow part.
struct StoreContents {
  std::vector<StoredRow> rows;
  std::vector<RoofRow> roofs;
  std::vector<Winner> winners;
  std::vector<std::string> notes;
  // family|version -> the parameter names the tuner noted (Store::note_param_names)
  std::map<std::string, std::vector<std::string>> param_names;
};
StoreContents read_store(const std::filesystem::path& db);

// The rows as the report's measurements, devices and status counts. plugins: where the
// families' spaces come from to spell parameters out; null: from the names and the store.
struct RowsJson {
  json measurements = json::array(), devices = json::array(), status_counts = json::array();
};
RowsJson rows_json(const StoreContents& c, const PluginSource* plugins);
json roofs_json(const std::vector<RoofRow>& roofs);
json winners_json(const std::vector<Winner>& winners);

}  // namespace gt::report
