// The store's rows: inserting measurements (each its own durable transaction), finding and reading them.
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
// Rows

int64_t Store::insert(StoredRow& row, bool unless_reusable) {
  if (impl_->readonly) throw RuntimeFailure(fmt::format("{}: the store is open read-only", impl_->path.string()));
  if (row.family.empty()) row.family = row.prov.family;
  if (row.prov.family.empty()) row.prov.family = row.family;
  if (row.family != row.prov.family)
    throw RuntimeFailure(fmt::format("a row of family '{}' carries the provenance of family '{}'", row.family,
                                     row.prov.family));
  if (row.transform != Transform::none) {
    const std::string suffix = std::string("+") + to_string(row.transform);
    if (row.config_name.size() <= suffix.size() ||
        row.config_name.compare(row.config_name.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw RuntimeFailure(fmt::format("a row of transform '{}' names its config '{}' without it (a transformed "
                                       "config's name ends with '{}')",
                                       to_string(row.transform), row.config_name, suffix));
  }
  if (row.row_uuid.empty()) row.row_uuid = new_uuid();
  if (row.time_unix <= 0 || row.time_utc.empty()) std::tie(row.time_utc, row.time_unix) = utc_now();
  row.fingerprint = row.prov.fingerprint();

  std::lock_guard lock(impl_->mu);
  bool duplicate = false;
  try {
    Transaction t(impl_->db);
    // Under the write lock, so that of several processes measuring the same config at once
    // only the first stores it: the others take its row.
    if (unless_reusable) {
      RowFilter f = RowFilter::of(ResultKey::of(row.prov.device_name, row.problem));
      f.family = row.family;
      f.config_hash = row.config_hash;
      f.fingerprint = row.fingerprint;
      f.replay = row.replay;
      if (auto known = impl_->reusable(f, !row.m.quick)) {
        t.commit();
        row = *known;
        return row.id;
      }
    }
    Stmt st(impl_->db, insert_sql(false));
    Binder b{st.get()};
    row_fields(b, std::as_const(row));
    try {
      st.step();
    } catch (const RuntimeFailure&) {
      duplicate = st.last_rc() == SQLITE_CONSTRAINT_UNIQUE;
      throw;
    }
    row.id = sqlite3_last_insert_rowid(impl_->db);
    t.commit();
  } catch (const RuntimeFailure& e) {
    if (duplicate)
      throw RuntimeFailure(fmt::format("{}: row {} is already stored (rows are immutable)", impl_->path.string(),
                                       row.row_uuid));
    throw StoreWriteError(fmt::format("{}: a measurement could not be stored: {}", impl_->path.string(), e.what()));
  }
  return row.id;
}

std::optional<StoredRow> Store::get(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  return impl_->row_by("id", id);
}

std::optional<StoredRow> Store::get_by_uuid(const std::string& row_uuid) const {
  std::lock_guard lock(impl_->mu);
  return impl_->row_by("row_uuid", row_uuid);
}

int64_t Store::count(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  Where w = where_of(f, impl_->version);
  Stmt st(impl_->db, "SELECT COUNT(*) FROM results" + w.sql());
  w.bind(st.get());
  st.step();
  int64_t n = sqlite3_column_int64(st.get(), 0);
  return f.limit > 0 ? std::min(n, f.limit) : n;
}

std::vector<StoredRow> Store::rows(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  return impl_->query_rows(" ORDER BY time_unix, id" + limit_sql(f.limit), where_of(f, impl_->version));
}

std::vector<ResultKey> Store::keys(const RowFilter& f) const {
  std::lock_guard lock(impl_->mu);
  Where w = where_of(f, impl_->version);
  Stmt st(impl_->db, fmt::format("SELECT DISTINCT {} FROM results{}", key_select(impl_->version), w.sql()));
  w.bind(st.get());
  std::vector<ResultKey> out;
  while (st.step()) out.push_back(read_key(st.get(), 0));
  std::sort(out.begin(), out.end());
  if (f.limit > 0 && int64_t(out.size()) > f.limit) out.resize(size_t(f.limit));
  return out;
}

std::vector<StoredRow> Store::best(const RowFilter& f, bool per_family) const {
  std::lock_guard lock(impl_->mu);
  RowFilter g = f;
  g.status = Status::ok;
  if (!g.replay) g.replay = false;
  Where w = where_of(g, impl_->version);
  w.raw("time_median_us IS NOT NULL");
  // By the figure: the median, or the mean where it is the figure (time_center, schema v2).
  std::string sql = fmt::format(
      "SELECT {} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY {}{} ORDER BY {} ASC, "
      "time_unix DESC, row_uuid ASC) AS place FROM results{}) WHERE place = 1",
      column_list(impl_->version), key_partition(impl_->version), per_family ? ", family" : "",
      impl_->version < 2 ? "time_median_us"
                         : "CASE time_center WHEN 'mean' THEN time_mean_us ELSE time_median_us END",
      w.sql());
  Stmt st(impl_->db, sql);
  w.bind(st.get());
  std::vector<StoredRow> out;
  while (st.step()) out.push_back(read_row(st.get(), impl_->version));
  std::sort(out.begin(), out.end(), [](const StoredRow& a, const StoredRow& b) {
    auto ka = a.key(), kb = b.key();
    return std::tie(ka, a.family) < std::tie(kb, b.family);
  });
  if (f.limit > 0 && int64_t(out.size()) > f.limit) out.resize(size_t(f.limit));
  return out;
}

std::optional<StoredRow> Store::find_reusable(const Problem& p, const std::string& device_name,
                                              const std::string& family, const std::string& config_hash,
                                              const std::string& fingerprint, bool need_full, bool replay,
                                              uint64_t build_hash) const {
  RowFilter f = RowFilter::of(ResultKey::of(device_name, p));
  f.family = family;
  f.config_hash = config_hash;
  f.fingerprint = fingerprint;
  f.replay = replay;
  if (build_hash) f.build_hash = build_hash;
  std::lock_guard lock(impl_->mu);
  return impl_->reusable(f, need_full);
}

// The measured (not replayed) rows of a family at a problem whose fingerprint is not `fingerprint`
// (of one config where config_hash says which): what stale_rows lists and count_stale counts.
static Where stale_where(const Problem& p, const std::string& device_name, const std::string& family,
                         const std::string& fingerprint, const std::optional<std::string>& config_hash, int version) {
  RowFilter f = RowFilter::of(ResultKey::of(device_name, p));
  f.family = family;
  f.config_hash = config_hash;
  f.replay = false;
  Where w = where_of(f, version);
  w.raw("fingerprint <> ?");
  w.args.push_back(fingerprint);
  return w;
}

std::vector<StoredRow> Store::stale_rows(const Problem& p, const std::string& device_name, const std::string& family,
                                         const std::string& fingerprint,
                                         const std::optional<std::string>& config_hash) const {
  Where w = stale_where(p, device_name, family, fingerprint, config_hash, impl_->version);
  std::lock_guard lock(impl_->mu);
  return impl_->query_rows(" ORDER BY time_unix, id", w);
}

int64_t Store::count_stale(const Problem& p, const std::string& device_name, const std::string& family,
                           const std::string& fingerprint, const std::optional<std::string>& config_hash) const {
  Where w = stale_where(p, device_name, family, fingerprint, config_hash, impl_->version);
  std::lock_guard lock(impl_->mu);
  Stmt st(impl_->db, "SELECT COUNT(*) FROM results" + w.sql());
  w.bind(st.get());
  st.step();
  return sqlite3_column_int64(st.get(), 0);
}

}  // namespace gt
