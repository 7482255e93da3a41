// The results store: every measurement, failures included, with its provenance, in one
// SQLite file; the winners the tuner settled on; merging stores from several machines.
//
// Crash safety and concurrency. The database runs in WAL mode with synchronous=FULL, and
// every insert is its own transaction (BEGIN IMMEDIATE ... COMMIT):
//  - a SIGKILL (or any crash of the process) loses at most the measurement in flight: a
//    commit is in the WAL before insert() returns, and SQLite recovers the WAL on the next
//    open. synchronous=NORMAL would already give that; FULL also fsyncs the WAL on every
//    commit, so a row survives a power loss or kernel panic too. That costs one fsync
//    (milliseconds) per measurement, which takes seconds of GPU time anyway.
//  - several processes may write one store at once: writers queue on SQLite's lock with
//    a busy timeout of kBusyTimeoutMs; readers never block writers (WAL).
// A Store object is safe to use from several threads (calls are serialised).
//
// Schema (the file's `meta` table says which version, PRAGMA application_id marks it):
//   meta(key, value)          application = gemmtune, schema_version, created = UTC time;
//                             param_names/FAMILY/VERSION = the family's parameter names
//   results(...)              one row per measurement: identity (row_uuid), time, tune_id,
//                             replay, the key (device_name m n k in_dtype out_dtype layout
//                             align) + lda/ldb/ldc, family, config (JSON array), config_name,
//                             config_hash, transform (v5: none, pad, swap, pad+swap; a
//                             transformed config's name and hash include it), params and
//                             params_from (v9: the config's "name=value,..." and who spelled
//                             them), heuristic_rank and pick (v9: a library's ranking), the
//                             Measurement's fields as columns (status,
//                             message, quick, time_* in µs, err_*, sensors, resources, ...),
//                             tflops (NULL unless ok), and every Provenance field plus its
//                             fingerprint. Unknown numbers (NaN) are NULL.
//   winners(...)              per key and family ("*" = over all families): the winning
//                             config_name, the row_uuid of the measurement it won with, and
//                             the decision as columns (tie, tie_with, runner_up, margin; v3).
// The columns are plain, so sqlite3 / Python can read a store without gemmtune.
// Older schemas are upgraded in place when a store is opened for writing, one step at a time
// (store.cpp, `migrations()`); opened read-only they are read as they are.
#pragma once

#include "base/errors.hpp"
#include "measure/measurement.hpp"
#include "base/problem.hpp"
#include "measure/provenance.hpp"
#include "base/space.hpp"
#include "transform/transform.hpp"

#include <nlohmann/json_fwd.hpp>

#include <compare>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gt {

// v2: results.time_center (which statistic is the figure). v3: the winners' decisions as
// columns. v4: results.build_hash (each measurement's exact build). v5: results.transform (the
// problem transform a config ran through). v6: b_dtype and scale_mode in the key of results and
// winners (FP8: B's type where it differs from A's, and how A and B are scaled; 'none' before).
// v7: `constant` in the key of results and winners (the operands a program declares constant:
// '', 'a', 'b', 'a,b'; '' before), and results.transform takes 'round'.
// v8: the table `validations` (gemmtune validate's timings of transfers; an older store has none).
// v9: results.params, params_from, heuristic_rank and pick: a config's parameters and a library's
// ranking of it as data (before, they were only words in the row's description; the step to v9
// reads them out of it once, and a read-only older store is read the same way).
// A store of an older schema is upgraded when opened for writing (store.cpp, `migrations()`:
// one step per version, in order), and read as it is when opened read-only.
inline constexpr int kStoreSchemaVersion = 9;

// A write to the store that did not happen (a full disk, a lock held past the busy timeout, an
// I/O error): the message names the store and SQLite's reason. It is never a reason to go on
// as if the measurement were kept: the tune stops with it (exit 1). The store keeps every
// write that returned, since each is its own transaction.
struct StoreWriteError : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};
inline constexpr int kBusyTimeoutMs = 60000;

// What a result is valid for: the device model and the problem without its leading
// dimensions (they enter through the alignment).
struct ResultKey {
  std::string device_name;
  int64_t m = 0, n = 0, k = 0;
  DType in = DType::f32;
  DType out = DType::f32;
  Layout layout = Layout::nn;
  int32_t align = 16;
  DType in_b = DType::f32;            // B's type (Problem::in_b)
  ScaleMode scale = ScaleMode::none;  // FP8 (Problem::scale)
  int32_t constant = 0;               // the operands declared constant (Problem::constant; v7)

  static ResultKey of(const std::string& device_name, const Problem& p);
  // "NVIDIA H200 4096x4096x4096 f16>f16 nn a16" ("... e4m3>bf16 nt a16 row")
  std::string text() const;
  auto operator<=>(const ResultKey&) const = default;
};

struct StoredRow {
  int64_t id = 0;          // local to one store (0: not stored yet)
  std::string row_uuid;    // random 128-bit hex: the row's identity across stores (merge)
  std::string time_utc;    // "2026-11-29T12:34:56.123456Z"
  double time_unix = 0;    // seconds since the epoch, microsecond resolution
  std::string tune_id;     // groups the rows of one tune run ("" for a single `run`)
  bool replay = false;     // made from recorded data, not on a GPU
  Problem problem;
  std::string family;
  Config config;            // in the family's space for the transform's problem
  std::string config_name;  // transformed_name(the family's name, transform)
  std::string config_hash;  // hex64 of transformed_hash(Space::hash, transform)
  Transform transform = Transform::none;  // the problem is `problem`; the family ran its transform
  // The config's parameters, "name=value,..." (schema v9), so that a reader names them without the
  // plugin; "" where unknown. params_from says who spelled them: "space" (the family's space, when
  // the row was measured), "description" (read out of an older row's description: cuBLASLt's
  // words, "tile=256x128,CTA swizzle=off,..."), "" (nobody).
  std::string params, params_from;
  // A library family's own ranking of the config for the problem it ran (schema v9): its position
  // among the family's suggestions (cuBLASLt: its heuristic's picks, best first), 0 being the
  // library's pick; -1: not among them; nullopt: not known (a source family, or no way to ask).
  std::optional<int32_t> heuristic_rank;
  Measurement m;
  Provenance prov;          // prov.device_name is the key's device
  std::string fingerprint;  // as stored: prov.fingerprint() when it was inserted

  ResultKey key() const { return ResultKey::of(prov.device_name, problem); }
  // TFLOP/s of an ok row, NaN otherwise.
  double tflops() const { return m.tflops(problem.flops()); }
  // The library's pick for the problem (cuBLASLt's choice): its rank 0.
  bool pick() const { return heuristic_rank == 0; }
};

// One timing of `gemmtune validate`: a neighbour entry's answer at an entry's shape against the
// library's default there. The store keeps the record whole (JSON, evidence.hpp's Validation)
// and indexes it by what identifies it.
struct ValidationRow {
  std::string device_name;
  std::string at;           // the key text of the problem timed (the held-out entry's)
  std::string from;         // the key text of the entry the answer came from
  std::string from_config;  // that entry's config (its transformed name): another config is another timing
  double time_unix = 0;
  std::string record;       // the timing as JSON
};

// Conditions on rows; every field that is set must match.
struct RowFilter {
  std::optional<std::string> device_name;
  std::optional<int64_t> m, n, k;
  std::optional<DType> in, out, in_b;
  std::optional<Layout> layout;
  std::optional<int32_t> align;
  std::optional<ScaleMode> scale;
  std::optional<int32_t> constant;
  std::optional<std::string> family, config_hash, tune_id, fingerprint;
  std::optional<uint64_t> build_hash;  // rows of this build (Provenance::build_hash)
  std::optional<Transform> transform;
  std::optional<Status> status;
  std::optional<bool> replay;  // unset: both
  std::optional<bool> quick;
  int64_t limit = 0;           // 0: no limit

  static RowFilter of(const ResultKey& k);
};

// How a winner was decided, as data (schema v3), so that nothing reads it back out of a note.
struct Decision {
  bool tie = false;       // the winner could not be told apart from `tie_with`
  std::string tie_with;   // a config name (a family's winner) or a family (a problem's); "" without a tie
  std::string runner_up;  // the next contender by the figure (or the challenger a rule kept out); "" when none
  // The runner-up's figure over the winner's, less 1, in the timing that decided: the winner's
  // lead. Negative when the rule kept a slower reference (a tie, or a lead below the margin).
  // NaN: unknown (no runner-up, or a decision migrated from schema v2).
  double margin = kNaN;
};

struct Winner {
  ResultKey key;
  std::string family;  // kAllFamilies for the winner over every family
  std::string config_name;  // as its row has it (a transformed config's name ends with its transform)
  Transform transform = Transform::none;  // its row's
  int64_t row_id = 0;  // local id of the winning measurement
  std::string row_uuid;
  Decision decision;
  std::string note;
  std::string time_utc;  // when it was decided
  double time_unix = 0;
};
inline constexpr const char* kAllFamilies = "*";

// A measured roof: "fp32_fma" and "tensor_<dtype>" in FLOP/s, "mem_read" and "mem_copy"
// in bytes/s.
struct RoofRow {
  std::string device_name;
  std::string name;
  double value = 0;
  std::string unit;
  std::string how;  // what was run to measure it
  double sm_clock_mhz = kNaN, power_w = kNaN, temp_c = kNaN;
  std::string time_utc;
  double time_unix = 0;
};

// Random 128-bit hex (32 characters), from the OS's entropy source: distinct across
// processes, including forked ones.
std::string new_uuid();
// Now, as (UTC ISO 8601 with microseconds, unix seconds).
std::pair<std::string, double> utc_now();

class Store {
 public:
  // Opens or creates a store. Creates the parent directories and, for a new or empty
  // file, the schema. InputError (naming the file) for: a directory; a file that is not an
  // SQLite database; an SQLite database with other tables; a store whose schema is newer
  // than this gemmtune reads. A file that is refused is left byte-for-byte as it was.
  static Store open(const std::filesystem::path& file);
  // Opens an existing store for reading only (InputError when it does not exist).
  static Store open_readonly(const std::filesystem::path& file);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::filesystem::path& path() const;
  bool readonly() const;

  // Stores one row in its own transaction: durable when it returns. Fills in (in `row`)
  // the id, and a fresh row_uuid and the current time when they are empty; the
  // fingerprint column is always prov.fingerprint(). row.family and prov.family must
  // agree (an empty one is filled from the other); RuntimeFailure otherwise. A row_uuid
  // already in the store is a RuntimeFailure (rows are immutable). StoreWriteError when
  // SQLite cannot write it.
  // unless_reusable: where a row a tune would reuse for this one (same key, family, config,
  // fingerprint; final) is stored already, by another process since this one looked, that row
  // is returned (in `row`) and nothing is inserted: concurrent tunes of one job store each
  // exploration once.
  int64_t insert(StoredRow& row, bool unless_reusable = false);
  int64_t insert(const StoredRow& row) {
    StoredRow copy = row;
    return insert(copy);
  }

  std::optional<StoredRow> get(int64_t id) const;
  std::optional<StoredRow> get_by_uuid(const std::string& row_uuid) const;
  int64_t count(const RowFilter& f = {}) const;
  // Matching rows, oldest first.
  std::vector<StoredRow> rows(const RowFilter& f = {}) const;
  // The distinct keys of matching rows, sorted.
  std::vector<ResultKey> keys(const RowFilter& f = {}) const;
  // The fastest ok row (smallest figure: the median, or the mean of a row timed at the power cap) per key, or per (key, family) when
  // per_family; replay rows only when the filter asks for them (replay = true). Ties: the
  // newer measurement, then the smaller row_uuid. Sorted by key, then family.
  std::vector<StoredRow> best(const RowFilter& f = {}, bool per_family = false) const;

  // A stored measurement that stands in for measuring (problem, family, config) again: of
  // the non-replay rows for that key and config_hash whose fingerprint equals `fingerprint`,
  // the oldest whose status is final (the one a first tune measured and learned from, not a
  // later re-timing of it; a repeated tune then sees what the first one saw):
  //  - ok, verify_failed, compile_failed, cannot_implement, resources: final (they follow
  //    from the config, the source and the toolchain, which the fingerprint pins);
  //  - runtime_fault, timeout: may be transient (a sick context, a busy GPU, another
  //    process); measured once more, and final from the second one on (two such rows, the
  //    newest returned).
  // need_full: an ok row timed in quick mode does not count (its timing has fewer
  // samples); failures found in quick mode do (quick changes only the timing).
  // Rows with another fingerprint (stale) are never returned, nor, when `build_hash` is
  // given (nonzero), rows of another build of the config. A replayed tune (replay = true)
  // reuses only replayed rows, a real one only real rows.
  std::optional<StoredRow> find_reusable(const Problem& p, const std::string& device_name, const std::string& family,
                                         const std::string& config_hash, const std::string& fingerprint,
                                         bool need_full, bool replay = false, uint64_t build_hash = 0) const;
  // Non-replay rows for the key and family (and config, when given) whose fingerprint
  // differs from `fingerprint`: measurements a re-tune must redo.
  std::vector<StoredRow> stale_rows(const Problem& p, const std::string& device_name, const std::string& family,
                                    const std::string& fingerprint,
                                    const std::optional<std::string>& config_hash = std::nullopt) const;
  int64_t count_stale(const Problem& p, const std::string& device_name, const std::string& family,
                      const std::string& fingerprint,
                      const std::optional<std::string>& config_hash = std::nullopt) const;

  // Records the winner of `key` for `family` (kAllFamilies: over every family), replacing
  // the one before. The row must exist, be ok, belong to the key (and to the family, unless
  // kAllFamilies) and carry config_name; RuntimeFailure otherwise, StoreWriteError when SQLite
  // cannot write it.
  void set_winner(const ResultKey& key, const std::string& family, const std::string& config_name, int64_t row_id,
                  const std::string& note = "", const Decision& decision = {});
  std::optional<Winner> winner(const ResultKey& key, const std::string& family) const;
  // Every winner of one key: each family's, and the one over every family (kAllFamilies).
  std::vector<Winner> winners_of(const ResultKey& key) const;
  // All winners, sorted by key then family (optionally only one device's).
  std::vector<Winner> winners(const std::optional<std::string>& device_name = std::nullopt) const;

  // Adds `other`'s rows and winners, in one transaction. Rows are deduplicated by row_uuid.
  // Two winners for one (key, family): the one with the newer toolchain wins, then the
  // newer measurement (see winner_outranks). Merging is associative, commutative and
  // idempotent in the resulting sets of rows and winners. Returns the rows added.
  int64_t merge_from(const Store& other);

  // The device's measured roofs (`gemmtune roofs`): one value per (device, roof name), the
  // newest kept. compare and the report read them; they are never datasheet numbers.
  void put_roof(const RoofRow& r);
  std::vector<RoofRow> roofs(const std::optional<std::string>& device_name = std::nullopt) const;

  // `gemmtune validate`'s timings (evidence.hpp): per (device, at, from, from_config) the newest
  // kept. A store made before them has none (the table is created when a store is opened for
  // writing, as roofs' is); merge carries them, the newer per identity.
  void put_validation(const ValidationRow& v);
  std::vector<ValidationRow> validations(const std::optional<std::string>& device_name = std::nullopt) const;

  // A family's parameter names in order (meta key param_names/FAMILY/VERSION), noted by the
  // tuner from the space it searched, so that a config name reads as "p1=V1 p2=V2" where the
  // space cannot be had (a library family without a GPU: an export of a replay). Noting is a
  // write only when the names are new; param_names: the version's, else the latest noted
  // for the family (empty: none).
  void note_param_names(const std::string& family, const std::string& version, const std::vector<std::string>& names);
  std::vector<std::string> param_names(const std::string& family, const std::string& version) const;

  // PRAGMA integrity_check (and the foreign keys of winners); false with the report in *why.
  bool check_integrity(std::string* why = nullptr) const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  static std::unique_ptr<Impl> open_impl(const std::filesystem::path& file, bool readonly);
  std::unique_ptr<Impl> impl_;
};

// Merges `inputs` into `output` (created when missing; its own rows and winners stay in
// the merge). Returns the rows added. InputError when an input is the output.
int64_t merge_stores(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& output);

// The order that settles two winners of one (key, family) in a merge: true when `a`
// (winning with row `ra`) outranks `b` (with row `rb`). Compared in turn: the toolchain of
// the winning measurement (driver, CUDA runtime, NVRTC, library, family version, gemmtune
// version, method version; each as a version number, newer wins), the measurement's time
// (newer wins), the time of the decision (newer wins), then row_uuid, config_name and note
// as text, so the order is total and the merge does not depend on the order of inputs.
bool winner_outranks(const Winner& a, const StoredRow& ra, const Winner& b, const StoredRow& rb);
// Compares versions as sequences of numbers ("580.95.05" < "580.105.8"; "cublasLt 130000"
// > "cublasLt 120804"), then as text: <0, 0, >0.
int compare_versions(const std::string& a, const std::string& b);

// JSON of rows (--json output, export) and winners. Unknown numbers are null.
void to_json(nlohmann::json& j, const ResultKey& k);
void from_json(const nlohmann::json& j, ResultKey& k);
void to_json(nlohmann::json& j, const StoredRow& r);
void from_json(const nlohmann::json& j, StoredRow& r);
void to_json(nlohmann::json& j, const Winner& w);
void from_json(const nlohmann::json& j, Winner& w);
// A Problem as JSON: m n k in out layout lda ldb ldc align, and its key text.
nlohmann::json problem_to_json(const Problem& p);
Problem problem_from_json(const nlohmann::json& j);

}  // namespace gt
