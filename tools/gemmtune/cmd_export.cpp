// gemmtune export: the lookup table of winners from the results store, as TOML, JSON, CSV
// or a self-contained C++ header; PyTorch TunableOp's results file of the cuBLASLt winners
// (--format tunableop); or, with --recording, one tune's measurements as a replay
// recording. Needs no GPU.
#include "cli.hpp"
#include "table/evidence.hpp"
#include "replay/replay_measurer.hpp"
#include "store/store.hpp"
#include "table/table.hpp"
#include "table/tunableop.hpp"

#include <cstdio>
#include <cctype>
#include <map>
#include <set>

namespace gt::cli {
namespace fs = std::filesystem;

// The readable "k=v,..." of a stored config: from the family's space for the row's problem
// on the row's architecture, and only when the space still names the config as the row
// does (a plugin that changed since would spell other parameters); else the config's name
// split by the parameter names the store noted when it was tuned (a library family without
// a GPU: the export of a replay).
static std::optional<std::string> params_of(const PluginRegistry& reg, const Store& store, const StoredRow& r) {
  if (const Family* fam = reg.find(r.family)) {
    try {
      gt_device lim = arch_limits(r.prov.arch.empty() ? "sm_90" : r.prov.arch);
      Space s = fam->space(transformed_problem(r.problem, r.transform), lim);  // the family's problem
      if (transformed_name(s.name(r.config), r.transform) == r.config_name) return s.assignments(r.config);
    } catch (const std::exception&) {
      // unknown arch, a family that needs a GPU, a config not in the space: the names below
    }
  }
  std::string name = r.config_name;  // the family's own name: without the transform's suffix
  const std::string suffix = r.transform == Transform::none ? "" : std::string("+") + to_string(r.transform);
  if (!suffix.empty() && name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return assignments_from_name(name, r.family, store.param_names(r.family, r.prov.family_version));
}

// The table's format: --format, else the extension of -o (.toml, .json, .csv; .h, .hpp, .hh,
// .hxx: the C++ header), else (standard output) JSON with --json and TOML otherwise. An -o
// whose extension names no format, or another format than --format, is refused: a table
// written in a format its name does not say is one no reader expects.
static TableFormat table_format(const std::string& format, const std::string& output, bool json) {
  const bool to_file = !output.empty() && output != "-";
  const std::string ext = to_file ? fs::path(output).extension().string() : "";
  if (!format.empty()) {
    TableFormat f = TableFormat::toml;
    try {
      f = parse_table_format(format, "--format");
    } catch (const InputError&) {
      throw InputError(fmt::format("--format: unknown format '{}' (expected toml, json, csv, cpp or tunableop)", format));
    }
    if (to_file)
      if (auto named = format_of_extension(output); named && *named != f)
        throw InputError(fmt::format("-o {}: a {} name, but --format {}: name the file for its format", output, ext,
                                     format));
    return f;
  }
  if (!to_file) return json ? TableFormat::json : TableFormat::toml;
  if (auto named = format_of_extension(output)) return *named;
  static const std::set<std::string> sources = {".cpp", ".cc", ".cxx", ".c++", ".cu"};
  std::string lower = ext;
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (sources.count(lower))
    throw InputError(fmt::format("-o {}: the cpp format is a header (constexpr data that compiles on its own): name "
                                 "it .h or .hpp, or give --format cpp to write it to this name",
                                 output));
  throw InputError(fmt::format("-o {}: {} names no table format: name the file .toml, .json, .csv or .h/.hpp (the "
                               "C++ header), or give --format toml|json|csv|cpp",
                               output, ext.empty() ? std::string("a name without an extension") : "'" + ext + "'"));
}

static Store open_store(Globals& g, const std::string& output);

// A tune's measurements as a replay recording. The parameter lists come from the plugins,
// for the architecture the rows were measured on.
static int export_recording(Globals& g, const std::string& tune_id, const std::string& output) {
  if (output.empty() || output == "-") throw InputError("--recording: name the file to write with -o");
  Store store = open_store(g, output);
  const fs::path db = store.path();
  RowFilter f;
  f.tune_id = tune_id;
  f.limit = 1;
  auto first = store.rows(f);
  if (first.empty()) throw InputError(fmt::format("--recording: the store {} holds no row of tune '{}'", db.string(), tune_id));
  const gt_device lim = arch_limits(first.front().prov.arch.empty() ? "sm_90" : first.front().prov.arch);
  auto space_of = [&g, &lim](const std::string& family, const Problem& p) {
    const Family* fam = g.plugins().find(family);
    if (!fam) throw InputError(fmt::format("--recording: family '{}' of the tune is not loaded", family));
    if (fam->is_library())
      throw InputError(fmt::format("--recording: family '{}' describes its space on a GPU only; record it with "
                                   "`tune --record` instead", family));
    return fam->space(p, lim);
  };
  search::Recording rec = search::recording_from_store(store, tune_id, space_of);
  rec.save(output);
  size_t configs = 0;
  for (auto& sp : rec.spaces()) configs += sp.size();
  fmt::print(stderr, "recorded {} space(s), {} configs, of tune {} from {} to {}\n", rec.spaces().size(), configs,
             tune_id, db.string(), output);
  return 0;
}

// The store that export reads; InputError when there is none, or when -o names it, its -wal
// or -shm file, or a link to one of them, or cannot be written (files.hpp: export never
// overwrites what it reads).
static Store open_store(Globals& g, const std::string& output) {
  fs::path db = g.db_path();
  std::error_code ec;
  if (!fs::exists(db, ec))
    throw InputError(fmt::format("{}: there is no results store at {} (tune first, or name one with --db)",
                                 g.db_flag(), db.string()));
  std::vector<FileRole> files = {{FileUse::store_readonly, g.db_flag(), db}};
  if (!output.empty() && output != "-") files.push_back({FileUse::write, "-o", output});
  check_file_roles(files);
  return Store::open_readonly(db);
}

// The best cuBLASLt row per key: its recorded family winner, else its fastest ok row (as
// the table's entries are chosen, for the one family PyTorch can run).
static std::vector<StoredRow> cublaslt_rows(const Store& store, const std::string& device, bool include_replay) {
  std::optional<std::string> dev;
  if (!device.empty()) dev = device;
  std::map<ResultKey, StoredRow> best;
  for (const Winner& w : store.winners(dev)) {
    if (w.family != "cublaslt") continue;
    auto r = store.get(w.row_id);
    if (r && (include_replay || !r->replay)) best.emplace(w.key, *r);
  }
  RowFilter f;
  f.family = "cublaslt";
  f.device_name = dev;
  f.transform = Transform::none;  // beyond the winners: the rows a TunableOp file can express
  for (bool replay : {false, true}) {
    if (replay && !include_replay) break;
    f.replay = replay;
    for (StoredRow& r : store.best(f, true)) best.emplace(r.key(), std::move(r));
  }
  std::vector<StoredRow> rows;
  for (auto& [k, r] : best) rows.push_back(std::move(r));
  return rows;
}

static int export_tunableop(Globals& g, const std::string& output, const std::string& device, bool include_replay,
                            const std::string& torch_version, const std::string& cublaslt_version) {
  std::vector<std::string> notes;
  TunableOpOptions o;
  std::string note;
  if (torch_version.empty())
    throw InputError("--torch-version: --format tunableop needs the version of the PyTorch that reads the file "
                     "(python -c 'import torch; print(torch.__version__)'); PyTorch ignores a file of another version");
  o.torch_version = tunableop_torch_version(torch_version, &note);
  if (!note.empty()) notes.push_back(note);
  if (!cublaslt_version.empty() && cublaslt_version.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(fmt::format("--cublaslt-version: '{}' is not a number such as 130100 (cublasLtGetVersion())",
                                 cublaslt_version));
  o.cublaslt_version = cublaslt_version;
  Store store = open_store(g, output);
  TunableOpFile f = tunableop_file(cublaslt_rows(store, device, include_replay), o);
  notes.insert(notes.end(), f.notes.begin(), f.notes.end());
  bool to_stdout = output.empty() || output == "-";
  if (to_stdout) {
    fmt::print("{}", f.text);
    std::fflush(stdout);
  } else {
    write_file_atomically(output, f.text);
  }
  if (g.json && !to_stdout) {
    nlohmann::json j;
    j["file"] = output;
    j["format"] = "tunableop";
    j["results"] = f.lines;
    j["notes"] = notes;
    j["store"] = store.path().string();
    print_json(j);
  } else {
    fmt::print(stderr, "exported {} cuBLASLt result{} from {} as a TunableOp file to {}\n", f.lines,
               f.lines == 1 ? "" : "s", store.path().string(), to_stdout ? std::string("standard output") : output);
    for (auto& n : notes) fmt::print(stderr, "note: {}\n", n);
  }
  return 0;
}

namespace {

struct ExportArgs {
  std::string format, output, device, ns = "gemmtune_table", recording, torch_version, cublaslt_version;
  bool include_replay = false;
  const CLI::App* app = nullptr;  // which flags were given
};

void add_export_options(CLI::App* sub, ExportArgs& a) {
  a.app = sub;
  sub->add_option("--format", a.format,
                  "toml|json|csv|cpp, or tunableop: PyTorch TunableOp's results file of the cuBLASLt winners "
                  "(default: from the extension of -o: .toml, .json, .csv, or .h/.hpp/.hh/.hxx for the C++ header; any "
                  "other extension is refused unless --format names the format; to standard output: json with "
                  "--json, else toml)");
  sub->add_option("--torch-version", a.torch_version,
                  "tunableop: the PyTorch version that reads the file (its PT_VERSION validator, e.g. 2.15.0; 2.14 "
                  "or later)");
  sub->add_option("--cublaslt-version", a.cublaslt_version,
                  "tunableop: the CUBLASLT_VERSION validator, cublasLtGetVersion() of the PyTorch process (default: "
                  "the version the results were tuned with)");
  sub->add_option("-o,--output", a.output, "file to write (replaced atomically; default: standard output)");
  sub->add_option("--device", a.device, "only the results of this device (its name as `gemmtune devices` prints it)");
  sub->add_flag("--include-replay", a.include_replay,
                "keep results made by replaying recorded measurements (left out by default: not measured on a GPU)");
  sub->add_option("--namespace", a.ns, "C++ namespace of the header (cpp format)")->capture_default_str();
  sub->add_option("--recording", a.recording,
                  "instead of a table: the measurements of this tune (its tune_id, as `tune --json` prints it) as a "
                  "replay recording (JSON, for `tune --replay` and bench_search); source families only");
}

// The table of winners (the formats but tunableop), with the evidence validate stored.
int export_table(Globals& g, const ExportArgs& a) {
  // The paths first: -o naming the store is refused as that, whatever its extension.
  Store store = open_store(g, a.output);
  const TableFormat f = table_format(a.format, a.output, g.json);
  fs::path db = store.path();
  ExportOptions o;
  if (!a.device.empty()) o.device = a.device;
  o.include_replay = a.include_replay;
  // Plugins only spell the parameters out; a family that is missing leaves them empty.
  const PluginRegistry* reg = nullptr;
  o.params_of = [&g, &reg, &store](const StoredRow& r) {
    if (!reg) reg = &g.plugins();
    return params_of(*reg, store, r);
  };
  std::vector<std::string> notes;
  ExportSummary summary;
  LookupTable t = table_from_store(store, o, &notes, &summary);
  // The transfers `gemmtune validate` found to hold: what lets the table answer other shapes.
  t.evidence = evidence_of(t, stored_validations(store, o.device), a.include_replay, &notes);
  if (f == TableFormat::csv && !t.evidence.empty())
    notes.push_back(fmt::format("a CSV table lists entries only: its {} evidence record{} left out, so "
                                "what reads it answers the shapes it holds and the default elsewhere",
                                t.evidence.size(), t.evidence.size() == 1 ? " is" : "s are"));
  if (t.entries.empty() && summary.replay_left_out == 0) {
    std::string have;
    for (auto& k : store.keys()) {
      if (have.find("'" + k.device_name + "'") == std::string::npos)
        have += (have.empty() ? "'" : ", '") + k.device_name + "'";
    }
    notes.push_back(a.device.empty()
                        ? fmt::format("the store {} holds no successful measurement: the table is empty",
                                      db.string())
                        : fmt::format("the store {} holds no successful measurement for device '{}' "
                                      "(devices in the store: {}): the table is empty",
                                      db.string(), a.device, have.empty() ? "none" : have));
  }
  std::map<std::string, size_t> origins;
  for (auto& e : t.entries) ++origins[e.origin];
  if (a.output.empty() || a.output == "-") {
    fmt::print("{}", t.serialize(f, a.ns));
    std::fflush(stdout);  // the table before the summary on stderr, where both go to one place
  } else {
    t.save(a.output, f, a.ns);
  }
  std::string where = a.output.empty() || a.output == "-" ? std::string("standard output") : a.output;
  if (g.json && !(a.output.empty() || a.output == "-")) {
    nlohmann::json j;
    j["file"] = a.output;
    j["format"] = to_string(f);
    j["entries"] = t.entries.size();
    j["evidence"] = t.evidence.size();
    j["origins"] = origins;
    j["replay_left_out"] = summary.replay_left_out;  // problems, as the note counts them
    j["replay_passed_over"] = summary.replay_passed_over;
    j["notes"] = notes;
    j["store"] = db.string();
    print_json(j);
  } else {
    std::string by;
    for (auto& [k, n] : origins) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", n, k);
    fmt::print(stderr, "exported {} entr{}{} and {} evidence record{} from {} as {} to {}\n", t.entries.size(),
               t.entries.size() == 1 ? "y" : "ies", by.empty() ? "" : " (" + by + ")", t.evidence.size(),
               t.evidence.size() == 1 ? "" : "s", db.string(), to_string(f), where);
    if (t.evidence.empty() && !t.entries.empty())
      notes.push_back("no evidence: the table answers the shapes it holds and the library's default "
                      "elsewhere (`gemmtune validate` on the GPU measures which transfers hold)");
    for (auto& n : notes) fmt::print(stderr, "note: {}\n", n);
  }
  return 0;
}

int run_export(Globals& g, const ExportArgs& a) {
  if (!a.recording.empty()) return export_recording(g, a.recording, a.output);
  if (a.format == "tunableop") {
    if (a.app->count("--namespace") > 0) throw InputError("--namespace is for --format cpp");
    return export_tunableop(g, a.output, a.device, a.include_replay, a.torch_version, a.cublaslt_version);
  }
  for (const char* flag : {"--torch-version", "--cublaslt-version"})
    if (a.app->count(flag) > 0) throw InputError(fmt::format("{} is for --format tunableop", flag));
  return export_table(g, a);
}

Registrar reg_export(75, [](CLI::App& app, Globals& g) {
  return make_command<ExportArgs>(app, g, "export",
      "writes the lookup table of winners from the store: TOML, JSON, CSV or a self-contained C++ header (no GPU)",
      add_export_options, run_export);
});

}  // namespace

}  // namespace gt::cli
