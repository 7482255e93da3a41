// Merging stores: rows by their identity, winners settled by provenance.
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
#include <thread>
#include <utility>
#include <variant>

namespace gt {
namespace fs = std::filesystem;
using namespace store_sql;  // the store's SQL, shared by its files (store_sql.hpp)

// ---------------------------------------------------------------------------------------
// Merging

int64_t Store::merge_from(const Store& other) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::error_code ec;
  if (impl_.get() == other.impl_.get() || fs::equivalent(impl_->path, other.impl_->path, ec))
    return 0;  // a store merged with itself is itself
  std::scoped_lock lock(impl_->mu, other.impl_->mu);
  sqlite3* db = impl_->db;
  Transaction t(db);
  int64_t before = sqlite3_total_changes64(db);
  {
    // Streamed row by row: a store can be larger than memory would like.
    Stmt src(other.impl_->db, "SELECT " + column_list(other.impl_->version) + " FROM results ORDER BY id");
    Stmt dst(db, insert_sql(true));
    while (src.step()) {
      StoredRow r = read_row(src.get(), other.impl_->version);
      dst.reset();
      Binder b{dst.get()};
      row_fields(b, std::as_const(r));
      dst.step();
    }
  }
  int64_t added = sqlite3_total_changes64(db) - before;
  for (const Winner& theirs : other.impl_->query_winners("", Where{})) {
    auto mine = impl_->winner(theirs.key, theirs.family);
    if (mine) {
      auto ra = impl_->row_by("row_uuid", theirs.row_uuid);
      auto rb = impl_->row_by("row_uuid", mine->row_uuid);
      if (!ra || !rb)
        throw RuntimeFailure(fmt::format("merge: a winner of '{}' names a measurement that is not stored",
                                         theirs.key.text()));
      if (!winner_outranks(theirs, *ra, *mine, *rb)) continue;
    }
    impl_->put_winner(theirs);
  }
  {
    // Roofs: per (device, name) the newer measurement wins (the upsert keeps the newer).
    Stmt src(other.impl_->db, "SELECT device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                              "time_unix FROM roofs");
    Stmt dst(db, "INSERT INTO roofs (device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                 "time_unix) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_name, name) DO UPDATE SET "
                 "value = excluded.value, unit = excluded.unit, how = excluded.how, sm_clock_mhz = "
                 "excluded.sm_clock_mhz, power_w = excluded.power_w, temp_c = excluded.temp_c, time_utc = "
                 "excluded.time_utc, time_unix = excluded.time_unix WHERE excluded.time_unix > roofs.time_unix OR "
                 "(excluded.time_unix = roofs.time_unix AND excluded.value > roofs.value)");
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 10; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  if (other.impl_->has_table("validations")) {
    // Validations: per identity the newer timing wins (the upsert keeps the newer).
    Stmt src(other.impl_->db, "SELECT device_name, at_key, from_key, from_config, time_unix, record FROM validations");
    Stmt dst(db, kValidationUpsert);
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 6; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  {
    // The families' parameter names (note_param_names): names for a version are the same
    // wherever they were noted, so either store's will do.
    Stmt src(other.impl_->db, "SELECT key, value FROM meta WHERE substr(key, 1, 12) = 'param_names/'");
    Stmt dst(db, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING");
    while (src.step()) {
      dst.reset();
      for (int i = 0; i < 2; ++i) sqlite3_bind_value(dst.get(), i + 1, sqlite3_column_value(src.get(), i));
      dst.step();
    }
  }
  t.commit();
  return added;
}

int64_t merge_stores(const std::vector<fs::path>& inputs, const fs::path& output) {
  std::error_code ec;
  for (const auto& in : inputs)
    if (fs::exists(output, ec) && fs::equivalent(in, output, ec))
      throw InputError(fmt::format("merge: the input {} is also the output", in.string()));
  // Inputs are judged before the output is created, so bad input leaves nothing behind.
  std::vector<Store> sources;
  for (const auto& in : inputs) sources.push_back(Store::open_readonly(in));
  Store out = Store::open(output);
  int64_t added = 0;
  for (const auto& s : sources) added += out.merge_from(s);
  return added;
}

static void bind_nullable(sqlite3_stmt* s, int i, double v) {
  if (std::isfinite(v))
    sqlite3_bind_double(s, i, v);
  else
    sqlite3_bind_null(s, i);
}

void Store::put_roof(const RoofRow& r0) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  RoofRow r = r0;
  if (r.time_utc.empty()) std::tie(r.time_utc, r.time_unix) = utc_now();
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db,
          "INSERT INTO roofs (device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, time_unix) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device_name, name) DO UPDATE SET value = excluded.value, "
          "unit = excluded.unit, how = excluded.how, sm_clock_mhz = excluded.sm_clock_mhz, power_w = excluded.power_w, "
          "temp_c = excluded.temp_c, time_utc = excluded.time_utc, time_unix = excluded.time_unix "
          "WHERE excluded.time_unix >= roofs.time_unix");
  sqlite3_stmt* s = st.get();
  sqlite3_bind_text(s, 1, r.device_name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, r.name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 3, r.value);
  sqlite3_bind_text(s, 4, r.unit.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 5, r.how.c_str(), -1, SQLITE_TRANSIENT);
  bind_nullable(s, 6, r.sm_clock_mhz);
  bind_nullable(s, 7, r.power_w);
  bind_nullable(s, 8, r.temp_c);
  sqlite3_bind_text(s, 9, r.time_utc.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 10, r.time_unix);
  st.step();
}

static std::string param_names_key(const std::string& family, const std::string& version) {
  return "param_names/" + family + "/" + version;
}

static std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i <= s.size() && !s.empty();) {
    size_t j = std::min(s.find(',', i), s.size());
    out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void Store::note_param_names(const std::string& family, const std::string& version,
                             const std::vector<std::string>& names) {
  if (impl_->readonly || names.empty()) return;
  std::string joined;
  for (auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  if (split_names(joined) == param_names(family, version)) return;  // one write per new set of names
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  sqlite3_bind_text(st.get(), 1, param_names_key(family, version).c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), 2, joined.c_str(), -1, SQLITE_TRANSIENT);
  st.step();
}

std::vector<std::string> Store::param_names(const std::string& family, const std::string& version) const {
  std::lock_guard lock(impl_->mu);
  // The version's own names first, else another version's (the most recently added key).
  const std::string prefix = "param_names/" + family + "/";
  Stmt st(impl_->db, "SELECT value FROM meta WHERE key = ?1 UNION ALL SELECT value FROM (SELECT value FROM meta "
                     "WHERE substr(key, 1, length(?2)) = ?2 ORDER BY rowid DESC LIMIT 1)");
  sqlite3_bind_text(st.get(), 1, param_names_key(family, version).c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.get(), 2, prefix.c_str(), -1, SQLITE_TRANSIENT);
  if (!st.step()) return {};
  const unsigned char* v = sqlite3_column_text(st.get(), 0);
  return v ? split_names(reinterpret_cast<const char*>(v)) : std::vector<std::string>{};
}

void Store::put_validation(const ValidationRow& v) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, kValidationUpsert);
  sqlite3_stmt* s = st.get();
  int i = 0;
  for (const std::string* t : {&v.device_name, &v.at, &v.from, &v.from_config})
    sqlite3_bind_text(s, ++i, t->c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(s, 5, v.time_unix);
  sqlite3_bind_text(s, 6, v.record.c_str(), -1, SQLITE_TRANSIENT);
  st.step();
}

std::vector<ValidationRow> Store::validations(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  std::vector<ValidationRow> out;
  if (!impl_->has_table("validations")) return out;  // a read-only store from before them
  Stmt st(impl_->db, std::string("SELECT device_name, at_key, from_key, from_config, time_unix, record FROM "
                                 "validations") +
                         (device_name ? " WHERE device_name = ?" : "") + " ORDER BY device_name, at_key, from_key, from_config");
  if (device_name) sqlite3_bind_text(st.get(), 1, device_name->c_str(), -1, SQLITE_TRANSIENT);
  auto text = [](sqlite3_stmt* s, int i) {
    auto* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (st.step()) {
    sqlite3_stmt* s = st.get();
    out.push_back({text(s, 0), text(s, 1), text(s, 2), text(s, 3), sqlite3_column_double(s, 4), text(s, 5)});
  }
  return out;
}

std::vector<RoofRow> Store::roofs(const std::optional<std::string>& device_name) const {
  std::lock_guard lock(impl_->mu);
  std::vector<RoofRow> out;
  Stmt st(impl_->db, std::string("SELECT device_name, name, value, unit, how, sm_clock_mhz, power_w, temp_c, time_utc, "
                                 "time_unix FROM roofs") +
                         (device_name ? " WHERE device_name = ?" : "") + " ORDER BY device_name, name");
  if (device_name) sqlite3_bind_text(st.get(), 1, device_name->c_str(), -1, SQLITE_TRANSIENT);
  auto real = [](sqlite3_stmt* s, int i) {
    return sqlite3_column_type(s, i) == SQLITE_NULL ? kNaN : sqlite3_column_double(s, i);
  };
  auto text = [](sqlite3_stmt* s, int i) {
    auto* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (st.step()) {
    sqlite3_stmt* s = st.get();
    out.push_back(RoofRow{text(s, 0), text(s, 1), real(s, 2), text(s, 3), text(s, 4), real(s, 5), real(s, 6),
                          real(s, 7), text(s, 8), real(s, 9)});
  }
  return out;
}

bool Store::check_integrity(std::string* why) const {
  std::lock_guard lock(impl_->mu);
  std::string report;
  {
    Stmt st(impl_->db, "PRAGMA integrity_check");
    while (st.step()) {
      std::string line = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
      if (line != "ok") report += line + "\n";
    }
  }
  {
    Stmt st(impl_->db, "PRAGMA foreign_key_check");
    while (st.step())
      report += fmt::format("{}: row {} refers to a missing {}\n",
                            reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)),
                            sqlite3_column_int64(st.get(), 1),
                            reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2)));
  }
  if (why) *why = report;
  return report.empty();
}

}  // namespace gt
