#include "store/store_sql.hpp"

#include "base/errors.hpp"
#include "base/files.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <variant>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace gt {
namespace fs = std::filesystem;
using namespace store_sql;  // the store's SQL, shared by its files (store_sql.hpp)


// 'GMTN': marks the file as ours in the SQLite header (PRAGMA application_id).
static constexpr int32_t kApplicationId = 0x474D544E;

// ---------------------------------------------------------------------------------------
// Keys, ids, time

ResultKey ResultKey::of(const std::string& device_name, const Problem& p) {
  return ResultKey{device_name, p.m, p.n, p.k, p.in, p.out, p.layout, p.align, p.in_b, p.scale, p.constant};
}

std::string ResultKey::text() const {
  std::string t = fmt::format("{} {}x{}x{} {}>{} {} a{}", device_name, m, n, k, in_types_text(in, in_b),
                              to_string(out), to_string(layout), align);
  if (scale != ScaleMode::none) t += fmt::format(" {}", to_string(scale));
  if (constant) t += " const=" + constant_text(constant);
  return t;
}

RowFilter RowFilter::of(const ResultKey& k) {
  RowFilter f;
  f.device_name = k.device_name;
  f.m = k.m;
  f.n = k.n;
  f.k = k.k;
  f.in = k.in;
  f.out = k.out;
  f.layout = k.layout;
  f.align = k.align;
  f.in_b = k.in_b;
  f.scale = k.scale;
  f.constant = k.constant;
  return f;
}

std::string new_uuid() {
  // random_device reads the OS entropy source on every call; a generator seeded once
  // would hand forked children the same sequence.
  std::random_device rd;
  uint64_t hi = (uint64_t(rd()) << 32) | rd(), lo = (uint64_t(rd()) << 32) | rd();
  return hex64(hi) + hex64(lo);
}

std::pair<std::string, double> utc_now() {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  std::time_t secs = std::time_t(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string text = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
  return {text, double(us) / 1e6};
}

// ---------------------------------------------------------------------------------------
// SQLite in small pieces

// ---------------------------------------------------------------------------------------
// Opening


namespace {

const char* kMagic = "SQLite format 3";  // and a NUL: the first 16 bytes of every database

// What a file is, judged without letting SQLite touch it.
void check_header(const fs::path& file) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read the store: {}", file.string(), ec.message()));
  if (size == 0) return;  // an empty file: SQLite treats it as an empty database
  char head[16] = {0};
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the store for reading", file.string()));
  in.read(head, sizeof head);
  if (in.gcount() < 16 || std::string_view(head, 16) != std::string_view(kMagic, 16))
    throw InputError(fmt::format("{} is not a gemmtune store (not an SQLite database)", file.string()));
}

enum class Kind { empty, ours };

// Reads the schema (only reads) and says whether the database is empty or one of our
// stores; InputError for everything else.
Kind classify(sqlite3* db, const fs::path& file, int* version_out = nullptr) {
  std::vector<std::string> tables;
  {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1, &s,
                                nullptr);
    if (rc == SQLITE_OK) {
      while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    std::string msg = sqlite3_errmsg(db);
    sqlite3_finalize(s);
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      throw InputError(fmt::format("{} is not a gemmtune store (not an SQLite database: {})", file.string(), msg));
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw RuntimeFailure(fmt::format("{}: the store stayed locked by another process for {} s", file.string(),
                                       kBusyTimeoutMs / 1000));
    if (rc != SQLITE_OK) throw RuntimeFailure(fmt::format("{}: cannot read the store: {}", file.string(), msg));
  }
  if (tables.empty()) return Kind::empty;
  auto listed = [&] {
    std::string s;
    for (size_t i = 0; i < tables.size() && i < 8; ++i) s += (i ? ", " : "") + tables[i];
    if (tables.size() > 8) s += ", ...";
    return s;
  };
  if (std::find(tables.begin(), tables.end(), "meta") == tables.end())
    throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its tables: {})", file.string(),
                                 listed()));
  std::map<std::string, std::string> meta;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &s, nullptr) != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_finalize(s);
      throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its meta table: {})",
                                   file.string(), msg));
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
      auto k = sqlite3_column_text(s, 0), v = sqlite3_column_text(s, 1);
      if (k && v) meta[reinterpret_cast<const char*>(k)] = reinterpret_cast<const char*>(v);
    }
    sqlite3_finalize(s);
  }
  if (meta["application"] != "gemmtune" || meta["schema_version"].empty())
    throw InputError(fmt::format("{} is an SQLite database but not a gemmtune store (its tables: {})", file.string(),
                                 listed()));
  int version = 0;
  try {
    version = std::stoi(meta["schema_version"]);
  } catch (const std::exception&) {
    throw InputError(fmt::format("{}: the store's schema_version '{}' is not a number", file.string(),
                                 meta["schema_version"]));
  }
  if (version > kStoreSchemaVersion)
    throw InputError(fmt::format("{} has schema v{}; this gemmtune reads up to v{} — upgrade gemmtune",
                                 file.string(), version, kStoreSchemaVersion));
  if (version < 1)
    throw InputError(fmt::format("{}: the store's schema_version {} is not one gemmtune ever wrote", file.string(),
                                 version));
  if (version_out) *version_out = version;
  return Kind::ours;
}

const char* kRoofsDdl =
    "CREATE TABLE IF NOT EXISTS roofs (\n"
    "  device_name TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL,\n"
    "  how TEXT NOT NULL, sm_clock_mhz REAL, power_w REAL, temp_c REAL,\n"
    "  time_utc TEXT NOT NULL, time_unix REAL NOT NULL,\n"
    "  PRIMARY KEY (device_name, name)\n)";

// The decision columns of `winners` as DDL lines ("  tie INTEGER NOT NULL ...,\n" ...).
std::string decisions_ddl() {
  std::string s;
  for (auto& [name, type] : decision_columns()) s += fmt::format("  {} {},\n", name, type);
  return s;
}

std::string winners_ddl(const char* table) {
  return fmt::format("CREATE TABLE {} (\n"
                     "  device_name TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,\n"
                     "  in_dtype TEXT NOT NULL, out_dtype TEXT NOT NULL, layout TEXT NOT NULL,\n"
                     "  align INTEGER NOT NULL,\n"
                     "  b_dtype TEXT NOT NULL, scale_mode TEXT NOT NULL DEFAULT 'none',\n"
                     "  constant TEXT NOT NULL DEFAULT '',\n"
                     "  family TEXT NOT NULL,  -- '*': over every family\n"
                     "  config_name TEXT NOT NULL,\n"
                     "  row_uuid TEXT NOT NULL REFERENCES results (row_uuid),\n"
                     "  note TEXT NOT NULL, time_utc TEXT NOT NULL, time_unix REAL NOT NULL,\n"
                     "{}"
                     "  PRIMARY KEY ({}, family)\n)",
                     table, decisions_ddl(), kKeyCols);
}

void create_schema(sqlite3* db) {
  exec(db, fmt::format("PRAGMA application_id = {}", kApplicationId));
  exec(db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  exec(db, results_ddl());
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyCols));
  exec(db, "CREATE INDEX results_by_tune ON results (tune_id)");
  exec(db, winners_ddl("winners"));
  exec(db, kRoofsDdl);
  exec(db, kValidationsDdl);
  auto [now, unix_now] = utc_now();
  (void)unix_now;
  Stmt st(db, "INSERT INTO meta (key, value) VALUES ('application', 'gemmtune'), ('schema_version', ?), "
              "('created', ?), ('created_by', ?)");
  Binder b{st.get()};
  b.text("schema_version", std::to_string(kStoreSchemaVersion));
  b.text("created", now);
  b.text("created_by", std::string("gemmtune ") + kGemmtuneVersion);
  st.step();
}

// Sets a pragma that needs the database to itself for a moment (journal_mode): retried
// while another process holds it, up to the busy timeout.
void exec_retrying(sqlite3* db, const std::string& sql) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > until)
      throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", msg, sql));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The schema's upgrades, in order: step `to` turns a store of schema to - 1 into one of schema
// `to`, in place, keeping every row and winner. A new schema version is one more step here.
struct Migration {
  int to;
  void (*apply)(sqlite3* db);
};

// v1 -> v2: the figure's statistic (time_center); every v1 figure was the median.
void add_time_center(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "time_center") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v2 -> v3: the winners' decisions as columns. A v2 store said a decision's tie only in its
// note, which v2 wrote in two fixed forms ("tie with CONFIG (...", "tie between F1 and F2..."):
// read once, here, into the columns. Its runner-up (beyond a tie) and margin were not kept:
// '' and NULL (unknown).
void add_decision_columns(sqlite3* db) {
  for (auto& [name, type] : decision_columns()) {
    const bool not_null = type.find("NOT NULL") != std::string::npos;
    const char* fill = !not_null ? "" : type.rfind("TEXT", 0) == 0 ? " DEFAULT ''" : " DEFAULT 0";
    exec(db, fmt::format("ALTER TABLE winners ADD COLUMN {} {}{}", name, type, fill));
  }
  exec(db, "UPDATE winners SET tie = 1, tie_with = substr(note, 10, instr(note, ' (') - 10) "
           "WHERE note LIKE 'tie with % (%'");
  exec(db, "UPDATE winners SET tie = 1, tie_with = rtrim(substr(note, instr(note, ' and ') + 5, "
           "CASE WHEN instr(note, ':') > 0 THEN instr(note, ':') - instr(note, ' and ') - 5 ELSE length(note) END)) "
           "WHERE note LIKE 'tie between % and %'");
  exec(db, "UPDATE winners SET runner_up = tie_with WHERE tie = 1");
}

// v3 -> v4: each measurement's exact build (Provenance::build_hash). Older rows get '':
// their build is unknown, so a reuse that names a build measures them again.
void add_build_hash(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "build_hash") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v4 -> v5: the problem transform each measurement ran through. Every older row ran the
// problem as it is: 'none'.
void add_transform(sqlite3* db) {
  for (auto& [name, type] : result_columns())
    if (name == "transform") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
}

// v5 -> v6: FP8 in the key: B's type (every older row's is A's) and the scale mode (every older
// row's is 'none'). The winners' primary key grows by both, and SQLite cannot change a key in
// place: the table is copied into one of the new shape.
void add_fp8_key(sqlite3* db) {
  exec(db, "ALTER TABLE results ADD COLUMN b_dtype TEXT NOT NULL DEFAULT ''");
  exec(db, "UPDATE results SET b_dtype = in_dtype");
  for (auto& [name, type] : result_columns())
    if (name == "scale_mode") exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
  exec(db, "DROP INDEX IF EXISTS results_by_key");
  // v6's key (a later step adds to it): results has no column of a later version yet.
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyColsV6));
  std::string decisions;
  for (auto& [name, type] : decision_columns()) decisions += ", " + name;
  exec(db, winners_ddl("winners_v6"));  // today's shape: a later column takes its default
  exec(db, fmt::format("INSERT INTO winners_v6 ({0}, family, config_name, row_uuid, note, time_utc, time_unix{1}) "
                       "SELECT {2}, in_dtype, 'none', family, config_name, row_uuid, note, time_utc, time_unix{1} "
                       "FROM winners",
                       kKeyColsV6, decisions, kKeyColsV5));
  exec(db, "DROP TABLE winners");
  exec(db, "ALTER TABLE winners_v6 RENAME TO winners");
}

// v6 -> v7: the operands declared constant join the key (every older row: none, ''), and
// results.transform takes 'round'. A CHECK cannot change in place, so results is copied into a
// table of the new shape; winners, which refers to it, is set aside first (with foreign keys on,
// the old results could not be dropped under it) and copied back with the new key.
void add_constant_key(sqlite3* db) {
  std::string names;  // v6's columns: `constant` and the columns of later versions take their defaults
  for (auto& [name, type] : result_columns())
    if (column_since(name) < 7) names += ", " + name;
  std::string decisions;
  for (auto& [name, type] : decision_columns()) decisions += ", " + name;
  exec(db, "CREATE TABLE winners_before_v7 AS SELECT * FROM winners");
  exec(db, "DROP TABLE winners");
  exec(db, "DROP INDEX IF EXISTS results_by_key");
  exec(db, "DROP INDEX IF EXISTS results_by_tune");
  exec(db, "ALTER TABLE results RENAME TO results_before_v7");
  exec(db, results_ddl());
  exec(db, fmt::format("INSERT INTO results (id{0}, constant) SELECT id{0}, '' FROM results_before_v7", names));
  exec(db, "DROP TABLE results_before_v7");
  exec(db, fmt::format("CREATE INDEX results_by_key ON results ({}, family, config_hash, time_unix)", kKeyCols));
  exec(db, "CREATE INDEX results_by_tune ON results (tune_id)");
  exec(db, winners_ddl("winners"));
  exec(db, fmt::format("INSERT INTO winners ({0}, family, config_name, row_uuid, note, time_utc, time_unix{1}) "
                       "SELECT {2}, '', family, config_name, row_uuid, note, time_utc, time_unix{1} "
                       "FROM winners_before_v7",
                       kKeyCols, decisions, kKeyColsV6));
  exec(db, "DROP TABLE winners_before_v7");
}

// v7 -> v8: validate's timings, in a table of their own; an older store has none.
void add_validations(sqlite3* db) { exec(db, kValidationsDdl); }

// v8 -> v9: a config's parameters and a library's ranking of it as columns. Up to v8 they were
// words in the description cuBLASLt gave its rows; they are read out of it here, once
// (legacy_description.hpp), so that an older row reads as it did. A store that passed through
// the step to v7 has the columns already (that step makes today's table).
void add_config_facts(sqlite3* db) {
  std::set<std::string> have;
  {
    Stmt st(db, "PRAGMA table_info(results)");
    while (st.step()) have.insert(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1)));
  }
  for (auto& [name, type] : result_columns())
    if (column_since(name) == 9 && !have.count(name))
      exec(db, fmt::format("ALTER TABLE results ADD COLUMN {} {}", name, type));
  Stmt read(db, "SELECT id, message FROM results WHERE message <> ''");
  Stmt write(db, "UPDATE results SET params = ?, params_from = ?, heuristic_rank = ?, pick = ? WHERE id = ?");
  while (read.step()) {
    StoredRow r;
    const unsigned char* text = sqlite3_column_text(read.get(), 1);
    r.m.message.assign(reinterpret_cast<const char*>(text), size_t(sqlite3_column_bytes(read.get(), 1)));
    fill_from_description(r);
    if (r.params.empty() && !r.heuristic_rank) continue;
    write.reset();
    Binder b{write.get()};
    b.text("params", r.params);
    b.text("params_from", r.params_from);
    b.rank("heuristic_rank", r.heuristic_rank);
    b.computed_flag("pick", r.pick());
    b.integer("id", int64_t(sqlite3_column_int64(read.get(), 0)));
    write.step();
  }
}

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {{2, add_time_center}, {3, add_decision_columns}, {4, add_build_hash},
                                               {5, add_transform},   {6, add_fp8_key},
                                               {7, add_constant_key}, {8, add_validations},
                                               {9, add_config_facts}};
  return steps;
}

// Brings a writable store to kStoreSchemaVersion, one step per transaction; several processes
// may open the store at once: each step is taken by the first to hold the write lock, the
// others find it done.
void migrate(sqlite3* db, const fs::path& file, int& version) {
  for (const Migration& m : migrations()) {
    if (version >= m.to) continue;
    Transaction t(db);
    classify(db, file, &version);
    if (version < m.to) {
      m.apply(db);
      exec(db, fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'", m.to));
      version = m.to;
    }
    t.commit();
  }
}

bool folder_writable(const fs::path& file) {
  const fs::path dir = fs::absolute(file).parent_path();
  return ::access(dir.c_str(), W_OK) == 0;
}

// file:PATH?immutable=1, with the characters a URI gives meaning to escaped.
std::string immutable_uri(const fs::path& file) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(file).string()) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c > 0x7e)
      uri += fmt::format("%{:02X}", c);
    else
      uri += char(c);
  }
  return uri + "?immutable=1";
}

}  // namespace

// A store this call set out to create and could not (a full disk): the empty file SQLite made is
// removed, so that the failure leaves nothing behind. Only while it is still empty with no log
// that holds anything: another process creating the same store at once keeps its work.
static void remove_unborn_store(sqlite3*& db, const fs::path& file) {
  sqlite3_close_v2(db);
  db = nullptr;
  std::error_code ec;
  const fs::path wal = file.string() + "-wal";
  if (fs::file_size(file, ec) != 0 || ec) return;
  if (fs::exists(wal, ec) && fs::file_size(wal, ec) != 0) return;
  for (const char* suffix : {"-wal", "-shm", "-journal", ""}) fs::remove(file.string() + suffix, ec);
}

std::unique_ptr<Store::Impl> Store::open_impl(const fs::path& file, bool readonly) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw InputError(fmt::format("{} is a directory, not a gemmtune store", file.string()));
  // A FIFO or a device would block or take SQLite's writes to somewhere else.
  if (std::string kind = special_file_kind(file); !kind.empty())
    throw InputError(fmt::format("{} is {}, not a gemmtune store", file.string(), kind));
  bool existed = fs::exists(file, ec);
  if (readonly && !existed) throw InputError(fmt::format("{}: no such store", file.string()));
  if (existed && ::access(file.c_str(), R_OK) != 0)
    throw RuntimeFailure(fmt::format("{}: cannot read the store ({})", file.string(), std::strerror(errno)));
  if (existed && !readonly && ::access(file.c_str(), W_OK) != 0)
    throw RuntimeFailure(fmt::format("{}: the store cannot be written ({}); commands that only read it still can",
                                     file.string(), std::strerror(errno)));
  if (existed) check_header(file);
  if (!readonly && !file.parent_path().empty()) {
    fs::create_directories(file.parent_path(), ec);
    if (ec)
      throw InputError(fmt::format("{}: cannot create the directory {}: {}", file.string(),
                                   file.parent_path().string(), ec.message()));
  }

  auto impl = std::make_unique<Store::Impl>();
  impl->path = file;
  impl->readonly = readonly;
  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A reader of a WAL store makes its -shm file beside it, so in a folder it cannot write SQLite
  // refuses even to read. Nobody can be writing such a store (a writer needs the folder too):
  // it is read as it is on disk (immutable).
  const bool immutable = readonly && !folder_writable(file) && !fs::exists(file.string() + "-shm", ec);
  const std::string name = immutable ? immutable_uri(file) : file.string();
  if (immutable) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(name.c_str(), &impl->db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = impl->db ? sqlite3_errmsg(impl->db) : sqlite3_errstr(rc);
    throw InputError(fmt::format("{}: cannot open the store: {}", file.string(), msg));
  }
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);

  // Judge the file before changing anything in it: a refused file stays as it was.
  Kind kind = classify(impl->db, file, &impl->version);
  if (readonly) {
    if (kind == Kind::empty) throw InputError(fmt::format("{} is empty, not a gemmtune store", file.string()));
    return impl;
  }
  try {
    exec_retrying(impl->db, "PRAGMA journal_mode = WAL");
    exec(impl->db, "PRAGMA synchronous = FULL");
    exec(impl->db, "PRAGMA foreign_keys = ON");
    if (kind == Kind::empty) {
      // Several processes may create one store at once: the first to take the write lock
      // creates the schema, the others find it done.
      Transaction t(impl->db);
      if (classify(impl->db, file) == Kind::empty) create_schema(impl->db);
      t.commit();
      classify(impl->db, file, &impl->version);
    }
    migrate(impl->db, file, impl->version);
    exec(impl->db, kRoofsDdl);
  } catch (const RuntimeFailure& e) {
    if (!existed) remove_unborn_store(impl->db, file);
    // SQLite's words ("database or disk is full") do not say which file: the message does.
    const std::string what = e.what();
    if (what.find(file.string()) != std::string::npos) throw;
    throw RuntimeFailure(fmt::format("{}: cannot {} the store: {}", file.string(),
                                     kind == Kind::empty ? "create" : "open", what));
  }
  return impl;
}

Store Store::open(const fs::path& file) { return Store(open_impl(file, false)); }
Store Store::open_readonly(const fs::path& file) { return Store(open_impl(file, true)); }

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const fs::path& Store::path() const { return impl_->path; }
bool Store::readonly() const { return impl_->readonly; }


}  // namespace gt
