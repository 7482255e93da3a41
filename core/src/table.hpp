// The exported lookup table: the tuned winner per key, with its time and provenance, and
// the answer to "what should I run for this problem?".
//
// Formats. TOML and JSON are read and written and round-trip exactly (doubles in their
// shortest round-trip form); CSV and a self-contained C++17 header are written only.
// Every format carries the same flat fields per entry (see TableEntry); TOML and JSON add
// a header: `gemmtune_table` (the format version, required), `generated_at`, `generator`,
// `source`.
//
// Lookup, in this order:
//  1. exact: an entry for the problem's key (M, N, K, dtype, out dtype, layout, alignment);
//  2. nearest: among the entries of the same dtype, out dtype, layout and alignment class
//     (the alignment in bytes, equal), the closest shape in log space,
//     d = sqrt(ln²(M/M') + ln²(N/N') + ln²(K/K')), whose config the caller's
//     can_implement accepts for this problem (at equal distance: the faster entry, then
//     the key order);
//     Steps 1 and 2 skip entries the caller's can_implement refuses (listed in passed_over);
//     an entry it cannot judge here (Verdict::unchecked: cuBLASLt without a GPU) is answered
//     as the nearest, marked unchecked with the reason, rather than passed over for a farther
//     one that happens to be checkable;
//     when the nearest entry's winner is its family's default at its own shape (for
//     cuBLASLt, the heuristic's pick there), the caller's `transfer` may answer with that
//     family's default for this problem instead (plugin_transfer, library families: the
//     tuning found the default best there, and what carries over is the default's choice,
//     not the concrete algorithm picked for another shape);
//  3. default: what the caller's DefaultFn picks (plugin_default: the cublaslt family's
//     heuristic pick when that plugin is loaded and can answer, else the named fallback
//     family's default config).
// Device: with a device name, only that device's entries are candidates, unless the table
// holds none of it; then every entry is (and the result says so). Without one, every
// entry is; among equally distant ones the faster wins.
#pragma once

#include "plugin.hpp"
#include "problem.hpp"
#include "store.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

inline constexpr int kTableFormatVersion = 1;

enum class TableFormat { toml, json, csv, cpp };
const char* to_string(TableFormat f);
// "toml", "json", "csv", "cpp" (also "hpp", "h"); InputError naming `where` otherwise.
TableFormat parse_table_format(std::string_view s, std::string_view where = "--format");
// The format an output file's extension implies (.toml .json .csv .hpp/.h/.hh), if any.
std::optional<TableFormat> format_of_extension(const std::filesystem::path& p);

struct TableEntry {
  ResultKey key;               // device, M, N, K, dtype, out dtype, layout, alignment
  std::string family;
  std::string family_version;
  std::string source_hash;     // hex64 of the plugin's kernel-source hash
  std::string config;          // canonical config name: the authority on what to run
  std::string params;          // "bm=128,bn=128,..." (readable; "" when unknown at export)
  double time_us = 0;          // time per call where it was tuned (the figure: median, or mean at the power cap)
  double tflops = 0;
  // Provenance of the measurement the entry comes from.
  std::string measured_at;     // UTC ISO 8601
  std::string arch;            // "sm_90"
  std::string driver, cuda_runtime, nvrtc, library, gemmtune_version;
  std::string row_uuid;        // the measurement's identity in the store
  std::string origin;          // "winner", "family winner" or "best measured" (see table_from_store)
  bool replay = false;         // made from recorded measurements, not on a GPU

  // "NVIDIA H200 4096x4096x4096 f16>f16 nn a16 -> naive_map..."
  std::string text() const;
  std::string shape() const;  // "MxNxK"
  bool operator==(const TableEntry&) const = default;
};

struct TableInfo {
  int format_version = kTableFormatVersion;
  std::string generated_at;  // UTC ISO 8601
  std::string generator;     // "gemmtune 0.1.0"
  std::string source;        // where the entries came from (the store's path)
  bool operator==(const TableInfo&) const = default;
};

enum class MatchKind { exact, nearest, fallback };  // fallback: the default
const char* to_string(MatchKind k);  // "exact", "nearest", "default"

// A config that is not from the table.
struct DefaultChoice {
  std::string family;
  std::string config;  // canonical name
  std::string params;
  std::string note;    // "cuBLASLt's heuristic pick", "naive's default config"
};

struct LookupResult {
  MatchKind kind = MatchKind::exact;
  std::string how;     // "exact", "nearest (from 4096x4096x4096)", "default (naive's default config)"
  std::string family, config, params;
  std::optional<TableEntry> entry;  // exact and nearest
  double distance = 0;              // nearest: the log-space distance
  std::string transferred;          // nearest answered by `transfer`: its note ("cuBLASLt's heuristic pick")
  std::string unchecked;            // nearest whose config this machine could not check: why
  std::string device_note;          // set when the device filter was dropped
  // Entries the lookup looked at and could not use, nearest first, with the reason.
  std::vector<std::pair<std::string, std::string>> passed_over;
};

// Whether an entry's config can run a problem: it runs; it cannot (why); or this machine cannot
// tell (why: e.g. cuBLASLt's spaces need a GPU). Built from a family's refusal (nullopt: runs).
struct Verdict {
  enum class Kind { runs, cannot, unchecked };
  Kind kind = Kind::runs;
  std::string why;
  Verdict() = default;
  Verdict(std::optional<std::string> refusal)  // NOLINT: implicit, as a family's can_implement answers
      : kind(refusal ? Kind::cannot : Kind::runs), why(refusal.value_or("")) {}
  static Verdict cannot(std::string why) { return Verdict(std::optional<std::string>(std::move(why))); }
  static Verdict unchecked(std::string why) {
    Verdict v;
    v.kind = Kind::unchecked;
    v.why = std::move(why);
    return v;
  }
};

// Whether the entry's config can run `problem`. May throw InputError when the entry itself is
// broken (its config no longer exists); lookup() then names the table file and the entry.
using CanImplementFn = std::function<Verdict(const TableEntry&, const Problem&)>;
// The default for a problem no entry serves; nullopt with the reason in *why when none.
using DefaultFn = std::function<std::optional<DefaultChoice>(const Problem&, std::string* why)>;
// For a nearest (not exact) entry: the config to run instead of the entry's own, or nullopt
// to run the entry's config (after can_implement). See plugin_transfer.
using TransferFn = std::function<std::optional<DefaultChoice>(const TableEntry&, const Problem&)>;

class LookupTable {
 public:
  TableInfo info;
  std::vector<TableEntry> entries;  // sorted by key (save and load keep the order)
  std::string origin;               // the file it was loaded from ("" when made in memory)

  // Reads a TOML or JSON table, the format detected from the content ('{' first: JSON),
  // else the extension. InputError naming the file (and line, entry and field) for
  // unreadable files, syntax errors, missing or unknown fields, wrong types, unknown
  // dtypes or layouts, bad numbers, duplicate keys, a newer format version, CSV or C++.
  static LookupTable load(const std::filesystem::path& file);
  // The same from text; `origin` names it in messages.
  static LookupTable parse(std::string_view text, TableFormat format, const std::string& origin);

  std::string serialize(TableFormat format, const std::string& cpp_namespace = "gemmtune_table") const;
  // Written to a temporary file beside `file` and renamed over it.
  void save(const std::filesystem::path& file, TableFormat format,
            const std::string& cpp_namespace = "gemmtune_table") const;

  // See the top of this file. `device`: match this device's entries (nullopt: any).
  // An empty can_implement accepts every entry; an empty fallback has no default.
  // InputError when nothing fits (with the reasons), or when an entry is broken (naming
  // the table file and the entry).
  LookupResult lookup(const Problem& problem, const std::optional<std::string>& device = std::nullopt,
                      const CanImplementFn& can_implement = {}, const DefaultFn& fallback = {},
                      const TransferFn& transfer = {}) const;

  // The devices the entries are for, sorted, once each.
  std::vector<std::string> devices() const;
  // InputError when two entries share a key (names both).
  void check_unique() const;
  // Restores the order by key.
  void sort();
};

// Writes `text` to a temporary file beside `file` and renames it over `file`: a reader sees
// the old file or the new one, never half of one.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);

// The log-space distance between two shapes.
double shape_distance(int64_t m, int64_t n, int64_t k, int64_t m2, int64_t n2, int64_t k2);

// A problem standing for an entry's key: leading dimensions padded so that the alignment
// can be the key's (never above it).
Problem problem_of(const TableEntry& e);

// ---------------------------------------------------------------------------------------
// From the results store.

struct ExportOptions {
  std::optional<std::string> device;  // only this device's results
  bool include_replay = false;        // replay rows count as measurements
  // The readable "k=v,..." of a row's config; nullopt when it cannot be told (the family
  // is not loaded). Empty: params stay "".
  std::function<std::optional<std::string>(const StoredRow&)> params_of;
};

// One entry per key: the recorded winner over all families (origin "winner"); else the
// fastest of the recorded per-family winners ("family winner"); else the fastest ok row
// (Store::best, "best measured"). Winners whose row is a replay row are passed over unless
// include_replay. `notes` (optional) receives one line per thing worth telling the user.
LookupTable table_from_store(const Store& store, const ExportOptions& o, std::vector<std::string>* notes = nullptr);

// ---------------------------------------------------------------------------------------
// Plugins: checking entries and choosing defaults.

// Checks an entry against the loaded plugins and device limits:
//  - family not loaded: not usable (reason);
//  - its config does not parse in the family's space for the entry's own key: InputError
//    (the plugin changed since the table was written; names the versions);
//  - the family cannot describe its space here (cuBLASLt without a GPU): usable for an
//    exact key (it was verified there), not for another shape (reason);
//  - else the family's can_implement for the problem decides.
// `reg` must outlive the returned function (it is held by reference).
CanImplementFn plugin_can_implement(const PluginRegistry& reg, const gt_device& limits);

// The default: cuBLASLt's heuristic pick (rank 0) when the cublaslt family is loaded and
// can answer for the problem, else `fallback_family`'s default config when it can
// implement the problem.
// `reg` must outlive the returned function.
DefaultFn plugin_default(const PluginRegistry& reg, const gt_device& limits, std::string fallback_family = "naive");

// A nearest entry of a library family (cuBLASLt) whose config is the family's default at the
// entry's own shape (cuBLASLt: the heuristic's rank 0 there) transfers as the family's default
// for the problem (the heuristic's pick at this shape), when that default can implement it.
// nullopt (the entry's config is used as before) for source families (their defaults are
// a fixed guess, and the transfer was not measured on them), for another config, for an
// entry written by another version of the family, and when the family cannot describe its
// spaces on this machine (cuBLASLt without a GPU).
// Why: a cuBLASLt pick carried to another shape is the heuristic's answer for the wrong
// shape; measured on the H200 it ran up to 22 % slower than the pick at the asked shape. Not
// always: at 64x4096x11008, answered from 64x4096x4096, the asked shape's pick (split-K 3)
// ran 17 % slower than the entry's config (docs/results-h200.md, nearest-shape lookup).
// `reg` must outlive the returned function.
TransferFn plugin_transfer(const PluginRegistry& reg, const gt_device& limits);

// The family and config a lookup chose, resolved for `problem`. InputError when the
// family is not loaded or the config is not in its space for the problem.
struct ResolvedChoice {
  const Family* family = nullptr;
  Config config;
  std::string name;
  std::string params;
};
ResolvedChoice resolve_choice(const PluginRegistry& reg, const gt_device& limits, const LookupResult& r,
                              const Problem& problem);

// An entry as JSON: the same flat fields as in a JSON table.
void to_json(nlohmann::json& j, const TableEntry& e);

// Escaping for the C++ header: the bytes of `s` as the body of a string literal (no
// quotes), and as text safe inside a // comment.
std::string cpp_string_body(std::string_view s);
std::string cpp_comment_text(std::string_view s);

}  // namespace gt
