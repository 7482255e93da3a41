// SQLite, as the store uses it: a prepared statement that finalizes itself, exec that throws
// with the SQL it ran, binding a value of one of three types, and a transaction that rolls back
// unless committed. Internal to core/src/store.
#pragma once

#include "base/errors.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <variant>

namespace gt::store_sql {

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &s_, nullptr) != SQLITE_OK)
      throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  // True while there is a row; throws on errors.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    last_rc_ = rc;
    throw RuntimeFailure(fmt::format("SQLite: {} ({})", sqlite3_errmsg(db_), sqlite3_errstr(rc)));
  }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int last_rc() const { return last_rc_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int last_rc_ = SQLITE_OK;
};

inline void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw RuntimeFailure(fmt::format("SQLite: {} (in: {})", msg, sql.substr(0, 200)));
  }
}

using Arg = std::variant<int64_t, double, std::string>;

inline void bind_arg(sqlite3_stmt* s, int i, const Arg& a) {
  if (auto* v = std::get_if<int64_t>(&a)) sqlite3_bind_int64(s, i, *v);
  else if (auto* d = std::get_if<double>(&a)) sqlite3_bind_double(s, i, *d);
  else {
    const auto& t = std::get<std::string>(a);
    sqlite3_bind_text(s, i, t.data(), int(t.size()), SQLITE_TRANSIENT);
  }
}

// A transaction that rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
  void commit() {
    exec(db_, "COMMIT");
    done_ = true;
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace gt::store_sql
