// Store::Impl, shared by the files that implement Store (store.cpp: keys and opening, the schema
// and its migrations; rows.cpp; winners.cpp; merge.cpp; json.cpp), with the store's SQLite
// wrapper (sqlite.hpp) and schema (schema.hpp). Internal to core/src/store.
#pragma once

#include "store/schema.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

namespace gt {

struct Store::Impl {
  std::filesystem::path path;
  bool readonly = false;
  int version = kStoreSchemaVersion;  // the file's schema (a read-only v1 store stays v1)
  sqlite3* db = nullptr;
  mutable std::mutex mu;
  ~Impl() {
    if (db) sqlite3_close_v2(db);
  }
  bool has_table(const char* name) const {
    store_sql::Stmt st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    sqlite3_bind_text(st.get(), 1, name, -1, SQLITE_STATIC);
    return st.step();
  }

  std::vector<StoredRow> query_rows(const std::string& tail, const store_sql::Where& w) const {
    store_sql::Stmt st(db, "SELECT " + store_sql::column_list(version) + " FROM results" + w.sql() + tail);
    w.bind(st.get());
    std::vector<StoredRow> out;
    while (st.step()) out.push_back(store_sql::read_row(st.get(), version));
    return out;
  }
  // The row a tune may reuse for `f` (a key, family, config hash, fingerprint, replay or not):
  // the oldest final one, else, after store_sql::kTransientAttempts failures, the newest. The caller holds
  // `mu`. The re-timings after the first row (finalists, confirmations) are other figures;
  // handing one of those to a repeated tune's strategy would send it another way.
  std::optional<StoredRow> reusable(const RowFilter& f, bool need_full) const {
    store_sql::Where w = store_sql::where_of(f, version);
    if (need_full) w.raw("NOT (quick = 1 AND status = 'ok')");
    std::vector<StoredRow> rows = query_rows(" ORDER BY time_unix DESC, id DESC", w);
    if (rows.empty()) return std::nullopt;
    for (auto it = rows.rbegin(); it != rows.rend(); ++it)
      if (store_sql::is_final(it->m.status)) return *it;
    if (int64_t(rows.size()) >= store_sql::kTransientAttempts) return rows.front();  // failed every time: final
    return std::nullopt;
  }
  std::optional<StoredRow> row_by(const char* col, store_sql::Arg a) const {
    store_sql::Where w;
    w.eq(col, std::move(a));
    auto rows = query_rows("", w);
    if (rows.empty()) return std::nullopt;
    return rows.front();
  }
  std::vector<Winner> query_winners(const std::string& cond, const store_sql::Where& w) const {
    store_sql::Stmt st(db, "SELECT " + store_sql::key_select(version, "w.") +
                    ", w.family, w.config_name, w.row_uuid, w.note, w.time_utc, w.time_unix, r.id, " +
                    store_sql::decision_list(version) + ", " + (version < 5 ? "'none'" : "r.transform") +
                    " FROM winners w JOIN results r ON r.row_uuid = w.row_uuid" + cond);
    w.bind(st.get());
    std::vector<Winner> out;
    while (st.step()) {
      sqlite3_stmt* s = st.get();
      Winner x;
      x.key = store_sql::read_key(s, 0);
      store_sql::Reader rd{s, store_sql::kKeyColCount};
      rd.text("family", x.family);
      rd.text("config_name", x.config_name);
      rd.text("row_uuid", x.row_uuid);
      rd.text("note", x.note);
      rd.text("time_utc", x.time_utc);
      rd.real("time_unix", x.time_unix);
      rd.integer("id", x.row_id);
      store_sql::decision_fields(rd, x.decision);
      rd.transform("transform", x.transform);
      out.push_back(std::move(x));
    }
    std::sort(out.begin(), out.end(), [](const Winner& a, const Winner& b) {
      return std::tie(a.key, a.family) < std::tie(b.key, b.family);
    });
    return out;
  }
  std::vector<Winner> winners_of(const ResultKey& key) const {
    store_sql::Where w = store_sql::winner_where(key, nullptr, version);
    return query_winners(w.sql() + " ORDER BY w.family", w);
  }
  std::optional<Winner> winner(const ResultKey& key, const std::string& family) const {
    store_sql::Where w = store_sql::winner_where(key, &family, version);
    auto ws = query_winners(w.sql(), w);
    if (ws.empty()) return std::nullopt;
    return ws.front();
  }
  void put_winner(const Winner& x) {
    store_sql::Stmt st(db, fmt::format("INSERT OR REPLACE INTO winners ({}, family, config_name, row_uuid, note, time_utc, "
                            "time_unix, {}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            store_sql::kKeyCols, store_sql::decision_list(kStoreSchemaVersion, "")));
    store_sql::bind_key(st.get(), 1, x.key);
    store_sql::Binder b{st.get(), store_sql::kKeyColCount + 1};
    b.text("family", x.family);
    b.text("config_name", x.config_name);
    b.text("row_uuid", x.row_uuid);
    b.text("note", x.note);
    b.text("time_utc", x.time_utc);
    b.real("time_unix", x.time_unix);
    store_sql::decision_fields(b, x.decision);
    st.step();
  }
};

}  // namespace gt
