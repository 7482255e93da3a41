// The exported lookup table: the tuned winner per key, with its time and provenance, and
// the answer to "what should I run for this problem?".
//
// Formats. TOML and JSON are read and written and round-trip exactly (doubles in their
// shortest round-trip form); CSV and a self-contained C++17 header are written only.
// Every format carries the same flat fields per entry (see TableEntry); TOML and JSON add
// a header: `gemmtune_table` (the format version, required), `generated_at`, `generator`,
// `source`.
//
// Lookup: see LookupTable::lookup below, and docs/lookup.md for the rule in prose. Every
// program that answers from a table (`gemmtune lookup`, the runtime library, its C API) asks
// answer(), so one table, problem and machine give one answer.
#pragma once

#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "base/problem.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

// 2: entries carry `transform` (version 1 tables are read as transform "none"). 3: entries
// carry `b_dtype` and `scale` (FP8: B's type and the scale mode; older tables are read as B's
// type = dtype and scale "none"). 4: entries carry `constant` (the operands the time took as
// prepared once: "", "b", ...; older tables are read as ""), and transform may be "round".
// 5: `evidence`, the transfers validated on a GPU that held (older tables have none: they
// answer exact keys and defaults only, unless told otherwise).
inline constexpr int kTableFormatVersion = 5;

enum class TableFormat { toml, json, csv, cpp };
const char* to_string(TableFormat f);
// "toml", "json", "csv", "cpp" (also "hpp", "h"); InputError naming `where` otherwise.
TableFormat parse_table_format(std::string_view s, std::string_view where = "--format");
// The format an output file's extension implies (.toml .json .csv .hpp/.h/.hh), if any.
std::optional<TableFormat> format_of_extension(const std::filesystem::path& p);

struct TableEntry {
  ResultKey key;               // device, M, N, K, dtype (A), out dtype, layout, alignment, B's dtype, scale mode
  std::string family;
  std::string family_version;
  std::string source_hash;     // hex64 of the plugin's kernel-source hash
  std::string config;          // canonical config name: the authority on what to run
  std::string params;          // "bm=128,bn=128,..." (readable; "" when unknown at export)
  // The problem transform the config runs through (transform.hpp): the config is of the
  // family's space for the transformed problem. "none" in files of format version 1.
  Transform transform = Transform::none;
  double time_us = 0;          // time per call where it was tuned (the figure: median, or mean at the power cap)
  double tflops = 0;
  // Provenance of the measurement the entry comes from.
  std::string measured_at;     // UTC ISO 8601
  std::string arch;            // "sm_90"
  std::string driver, cuda_runtime, nvrtc, library, gemmtune_version;
  std::string row_uuid;        // the measurement's identity in the store
  std::string origin;          // "winner", "family winner" or "best measured" (see table_from_store)
  bool replay = false;         // made from recorded measurements, not on a GPU

  // "NVIDIA H200 4096x4096x4096 f16>f16 nn a16 -> naive_map..." (the config's transformed name)
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

// Which step of the rule served the answer (LookupTable::lookup); the match kind is implied.
enum class Rule {
  exact,            // the entry for exactly this key
  nearest,          // the nearest usable entry's own config
  transferred,      // the nearest entry's family default for this problem (its winner was that default there)
  adapted,          // the nearest entry's config with one parameter set to the family's default here
  library_default,  // no entry serves: cuBLASLt's heuristic pick for this problem
  family_default,   // no entry serves and cuBLASLt cannot answer: the named default family's default config
};
const char* to_string(Rule r);  // "exact", "nearest", "transferred", "adapted", "library default", "family default"
// The rule of a to_string name; InputError naming `where` otherwise.
Rule parse_rule(std::string_view s, std::string_view where = "rule");

// Why an answer may run instead of the library's default (docs/lookup.md, "Backed answers"). A
// table must never make a program slower than not using it, and an entry's config carried to
// another shape did (the reading: docs/lookup.md, "Backed answers").
enum class Backing {
  none,            // a default: nothing to back
  exact,           // the entry for exactly this key
  evidence,        // a transfer the table's evidence backs: validated on this GPU model, within its radius
  online,          // a transfer timed against the default on this machine (the online check), and faster
  default_config,  // a transfer whose answer is the library's default for the problem itself
  unbacked,        // a transfer without evidence, asked for (LookupPolicy::unbacked_transfers)
};
const char* to_string(Backing b);  // "none", "exact", "evidence", "online", "default", "unbacked"

// Whose entries were candidates: the asked device's, those measured on its architecture (the
// table has none of the device), or every entry (it has none of either).
enum class Tier { device, arch, any };
const char* to_string(Tier t);  // "device", "arch", "any"

// Where an answer may come from. `gemmtune lookup`'s flags and the runtime's options fill it in.
inline constexpr double kDefaultMaxDistance = 1.3862943611198906;  // ln 4: a factor of 4 along one dimension
inline constexpr int64_t kDefaultDecodeMaxM = 16;                  // see LookupPolicy::decode_max_m
struct LookupPolicy {
  std::optional<std::string> device;  // the device the answer is for ("NVIDIA H200"); nullopt: none named
  std::string arch;                   // its architecture ("sm_90"): the fallback tier; "": no such tier
  bool exact_device = false;          // only `device`'s own entries (no architecture or any-device tier)
  // A nearest entry serves only within this log-space distance (sqrt of the sum of the squared
  // ln-ratios of M, N and K). Why ln 4: the committed LLM table's neighbours lie 0.58-1.39 apart,
  // where the nearest answer measured 0.82-1.0 of tuning the shape; at 5.4 (1x64x128 from
  // 1x4096x4096) a config has little to do with the problem. infinity: no limit.
  double max_distance = kDefaultMaxDistance;
  // The M regime: M <= decode_max_m is decode, above it prefill; a nearest entry serves only a
  // problem of its own regime. Why 16: one m16 tensor-core tile of rows holds the whole of C's
  // rows, so the time is the read of B; the LLM table's winners at M = 1 and 16 share one kind of
  // config (cuBLASLt algo 66, cluster 4x1x1, custom 1, tiles 8-32 rows deep, and a wmma decode
  // kernel), those from M = 64 up do not. 0: one regime. A decode entry serves only its own N
  // (a decode grid is laid over N; across N its config measured 0.82-0.92 of tuning the shape).
  int64_t decode_max_m = kDefaultDecodeMaxM;
  std::string default_family;  // where cuBLASLt cannot answer: this family's default config ("": none)
  // A transfer (nearest, transferred, adapted) answers only where it is backed: by the table's
  // evidence for the asked device, or by an online check (LookupHooks::checked). true: any
  // transfer, as the rule was before issue 54 (to measure the rules: validate, bench_lookup).
  bool unbacked_transfers = false;
  // Online mode: where the nearest transfer that could serve is not backed and not decided yet,
  // the answer is the default and LookupResult::pending names that transfer, to be timed
  // against the default by the runtime on the problem's first calls.
  bool online = false;
};

// A config that is not the entry's own: a default, a transfer or an adaptation.
struct DefaultChoice {
  std::string family;
  std::string config;  // canonical name ("" when it cannot be named here: cuBLASLt's pick without a GPU)
  std::string params;
  std::string note;    // "cuBLASLt's heuristic pick", "naive's default config", "swz=1 for swz=8"
  bool library_pick = false;  // a library's own choice for the problem (cuBLASLt's heuristic pick)
  std::string unchecked;      // why this machine could not name or check it ("": it could)
  Transform transform = Transform::none;  // a transfer or adaptation keeps its entry's
};

// The answer, structured: which entry (if any), how it matched, which rule served it and why.
struct LookupResult {
  MatchKind kind = MatchKind::exact;
  Rule rule = Rule::exact;
  Tier tier = Tier::device;
  std::string how;     // "exact", "nearest (from 4096x4096x4096)", "default (cuBLASLt's heuristic pick)"
  std::string family, config, params;
  Transform transform = Transform::none;  // run `config` through it (its entry's; none for a default)
  std::optional<TableEntry> entry;  // exact and nearest
  double distance = 0;              // nearest: the log-space distance
  std::string transferred;          // rule transferred: its note ("cuBLASLt's heuristic pick")
  std::string adapted;              // rule adapted: what changed and why ("swz=1 for swz=8: ...")
  std::string unchecked;            // a config this machine could not check (or name): why
  std::string device_note;          // set when the answer came from another tier than the device's
  std::string reason;               // defaults: why no entry served
  Backing backing = Backing::none;  // why it may run instead of the default
  std::string backing_note;         // the evidence or the online timing that backs it ("": none)
  // Online mode, a default: the unbacked transfer to time against it (null: none).
  std::shared_ptr<const LookupResult> pending;
  // Entries the lookup looked at and could not use, nearest first, with the reason.
  std::vector<std::pair<std::string, std::string>> passed_over;
};

// Evidence that a transfer from an entry holds near it, measured on a GPU (gemmtune validate
// times each entry's neighbours' answers at its shape, leave-one-out; export keeps what held).
// It backs the entry's `rule` answers on the entry's device model up to `radius`.
struct TransferEvidence {
  ResultKey from;              // the entry's key; its device is the GPU model it was measured on
  std::string family, config;  // the entry's family and config when validated (another config: stale)
  Transform transform = Transform::none;
  Rule rule = Rule::nearest;   // nearest, transferred or adapted
  double radius = 0;           // the log-space distance up to which every neighbour timed held
  int64_t neighbours = 0;      // how many were timed within it
  double worst = 0;            // the slowest of their answer / default time ratios
  double tolerance = 0;        // how much slower than the default a held answer could be (0.01: 1 %)
  std::string measured_at;     // the newest of those timings (UTC ISO 8601)
  bool operator==(const TransferEvidence&) const = default;
};

// An online check's outcome for a problem: the transfer timed against the default, and which
// was kept (the transfer only where it ran faster by the margin: kOnlineMargin).
struct OnlineVerdict {
  bool candidate_kept = false;
  double candidate_us = 0, default_us = 0;
  std::string candidate, default_config;  // what was timed (transformed config names)
  std::string decided_at;                 // UTC ISO 8601
  std::string where;                      // the file it came from ("": this process)
};
inline constexpr double kOnlineMargin = 0.01;

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

// An entry that names a config its family no longer has (the plugin changed since the table
// was written): the table is broken, not the problem unsupported.
struct BrokenEntryError : InputError {
  using InputError::InputError;
};

// Whether the entry's config can run `problem`. May throw InputError when the entry itself is
// broken (its config no longer exists); lookup() then throws BrokenEntryError naming the table
// file and the entry.
using CanImplementFn = std::function<Verdict(const TableEntry&, const Problem&)>;
// The default for a problem no entry serves; nullopt with the reason in *why when none.
using DefaultFn = std::function<std::optional<DefaultChoice>(const Problem&, std::string* why)>;
// For a nearest (not exact) entry: the config to run instead of the entry's own, or nullopt
// to run the entry's config (after can_implement). See plugin_transfer.
using TransferFn = std::function<std::optional<DefaultChoice>(const TableEntry&, const Problem&)>;
// For a nearest entry whose config cannot run the problem: a config that differs from it in
// one parameter and can, or nullopt. See plugin_adapt.
using AdaptFn = std::function<std::optional<DefaultChoice>(const TableEntry&, const Problem&)>;

// For an unbacked transfer: the online check's verdict for the problem, if one was made.
using CheckedFn = std::function<std::optional<OnlineVerdict>(const Problem&, const LookupResult& transfer)>;

// What lookup() asks of the plugins. An empty can_implement accepts every entry; an empty
// fallback has no default; empty transfer and adapt never answer; an empty checked knows of
// no online check.
struct LookupHooks {
  CanImplementFn can_implement;
  DefaultFn fallback;
  TransferFn transfer;
  AdaptFn adapt;
  CheckedFn checked = {};
};

class LookupTable {
 public:
  TableInfo info;
  std::vector<TableEntry> entries;  // sorted by key (save and load keep the order)
  std::vector<TransferEvidence> evidence;  // sorted by entry key, then rule
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

  // The rule, step by step (docs/lookup.md says the same in prose):
  //  0. candidates: the policy's device's entries when the table has any; else (unless
  //     exact_device) those measured on its architecture, else every entry (device_note
  //     says so). Of these, the entries of the problem's dtype, out dtype, layout and
  //     alignment (in bytes, equal), nearest first in log space over M, N, K; at equal
  //     distance the faster entry, then the key order.
  //  1. exact: the entry for the problem's key, unless can_implement refuses it;
  //  2. nearest: the first candidate of the problem's M regime (policy.decode_max_m) within
  //     policy.max_distance that can serve it:
  //     a. transfer answers for it (a library family's entry whose winner was the family's
  //        default there: the family's default for this problem), else
  //     b. its own config, when can_implement accepts it (Verdict::unchecked, such as cuBLASLt
  //        without a GPU: answered, marked unchecked, with the reason), else
  //     c. adapt answers for it (its config with one parameter at the family's default here);
  //     and only where that answer is backed (backing_of): the table's evidence on the asked
  //     device reaches it, or an online check kept it, or it is the library's default itself
  //     (or policy.unbacked_transfers); else the candidate is passed over, and in online mode
  //     the first one becomes the default answer's `pending`;
  //     every candidate passed over is listed in passed_over with the reason;
  //  3. default: the fallback's choice (plugin_default: cuBLASLt's heuristic pick, else the
  //     named default family's default config), with the reason no entry served.
  // InputError when nothing serves and there is no default (with the reasons); BrokenEntryError
  // when an entry of the asked device (or of any, when none is asked) names a config its family's
  // space lacks. An entry of another device with such a config is passed over: spaces can depend
  // on the device (cuBLASLt's).
  LookupResult lookup(const Problem& problem, const LookupPolicy& policy, const LookupHooks& hooks) const;

  // The same with the rule as it was before distance limits, regimes and architecture tiers
  // (no limit, one regime, the device's entries else every entry); for tests of the hooks.
  LookupResult lookup(const Problem& problem, const std::optional<std::string>& device = std::nullopt,
                      const CanImplementFn& can_implement = {}, const DefaultFn& fallback = {},
                      const TransferFn& transfer = {}) const;

  // The evidence that backs `e`'s `rule` answers at log-space distance `d` on `device`, or null.
  const TransferEvidence* evidence_for(const TableEntry& e, Rule rule, double d,
                                       const std::optional<std::string>& device) const;

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
// The problem the entry's family runs for `p`: p through the entry's transform; InputError
// with the reason when the transform cannot serve p.
Problem family_problem(const TableEntry& e, const Problem& p);

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
// include_replay. `notes` (optional) receives one line per thing worth telling the user (one
// about replays, counted in problems as `summary` counts them).
// What an export left out, per problem (key): where replays are left out, the keys whose only
// results were replayed, and those served by GPU measurements though they had replayed ones.
struct ExportSummary {
  size_t replay_left_out = 0;
  size_t replay_passed_over = 0;
};
LookupTable table_from_store(const Store& store, const ExportOptions& o, std::vector<std::string>* notes = nullptr,
                             ExportSummary* summary = nullptr);

// ---------------------------------------------------------------------------------------
// Plugins: checking entries and choosing defaults.

// Checks an entry against the loaded plugins and device limits:
//  - family not loaded: not usable (reason);
//  - its config does not parse in the family's space for the entry's own key: InputError
//    (the plugin changed since the table was written; names the versions);
//  - the family cannot describe its space here: for an exact key, usable (it was verified
//    there); for another shape, Verdict::unchecked without a GPU (cuBLASLt describes its
//    spaces by asking the GPU's library), else not usable (another --arch, say);
//  - else the family's can_implement for the problem decides.
// `reg` must outlive the returned function (it is held by reference).
CanImplementFn plugin_can_implement(const PluginRegistry& reg, const gt_device& limits);

// The default: cuBLASLt's heuristic pick (rank 0) when the cublaslt family is loaded and
// can answer for the problem (without a GPU it cannot be asked: the pick is answered
// unnamed, marked unchecked); else `fallback_family`'s default config when it is named and
// can implement the problem. Never a hand-written family's default unless named: naive's
// runs about 100x slower than cuBLASLt's pick.
// `reg` must outlive the returned function.
DefaultFn plugin_default(const PluginRegistry& reg, const gt_device& limits, std::string fallback_family = "");

// A nearest entry whose config its family refuses for the problem, where setting one
// parameter to the value of the family's default config for the problem makes it valid:
// that config (the first such parameter in the space's order), noting the change
// ("swz=1 for swz=8"). Why: a parameter that does nothing at the asked shape (register_tile's
// swz on a grid one block high, occ=2 where it is occ=1's kernel, a workspace budget the
// algorithm does not need) is refused there so that a space spells each kernel once; that
// says nothing against the rest of the tuned config. The family's refusal does not say
// whether the parameter does nothing or matters, so the answer names the change and the
// refusal. nullopt when the family cannot describe the problem's space here.
// `reg` must outlive the returned function.
AdaptFn plugin_adapt(const PluginRegistry& reg, const gt_device& limits);

// A nearest entry of a library family (cuBLASLt) whose config is the family's default at the
// entry's own shape (cuBLASLt: the heuristic's rank 0 there) transfers as the family's default
// for the problem (the heuristic's pick at this shape), when that default can implement it.
// nullopt (the entry's config is used as before) for source families (their defaults are
// a fixed guess, and the transfer was not measured on them), for another config, for an
// entry written by another version of the family, and when the family cannot describe its
// spaces on this machine (cuBLASLt without a GPU).
// Why: a cuBLASLt pick carried to another shape is the heuristic's answer for the wrong shape,
// mostly slower than the asked shape's pick (the readings: docs/results-h200.md, nearest-shape lookup).
// `reg` must outlive the returned function.
TransferFn plugin_transfer(const PluginRegistry& reg, const gt_device& limits);

// The answer for `problem` from `table` on this machine: lookup() with the policy and the
// plugins' hooks (plugin_can_implement, plugin_default with policy.default_family,
// plugin_transfer, plugin_adapt) and the online check's decisions (`checked`; empty: none).
// `gemmtune lookup`, the runtime library and its C API all answer through this function.
// Throws as lookup() does.
LookupResult answer(const LookupTable& table, const Problem& problem, const PluginRegistry& reg,
                    const gt_device& limits, const LookupPolicy& policy, const CheckedFn& checked = {});

// The machine a lookup answers for: the device named, else GPU `gpu`'s name when there is a
// GPU (else none); the architecture named, else that GPU's, else sm_90; and its limits (the
// GPU's own where the architecture is the GPU's). `gemmtune lookup` and the runtime's dry run
// both start from it.
struct LookupMachine {
  std::optional<std::string> device;
  std::string arch;
  gt_device limits{};
};
LookupMachine lookup_machine(const std::string& device_name, const std::string& arch, int gpu = 0);

// M regime of a problem under a policy: "decode (M <= 16)" or "prefill (M > 16)".
bool is_decode(int64_t m, const LookupPolicy& policy);
std::string regime_text(int64_t m, const LookupPolicy& policy);

// The family and config a lookup chose, resolved for `problem` through the answer's
// transform. InputError when the family is not loaded, the transform cannot serve the problem
// or the config is not in the family's space for the transformed problem.
struct ResolvedChoice {
  const Family* family = nullptr;
  Config config;       // of the family's space for the transformed problem
  std::string name;    // the family's canonical name (without the transform)
  std::string params;
  Transform transform = Transform::none;
  Problem problem;     // what the family runs: the transformed problem
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
