// The one wrapper of sqlite3 in hcprp (library hcprp_sqlite): a connection with its cache of prepared
// statements, a statement in use, and the mapping of SQLite's result codes to Errors. The store's SQLite
// engine and the simulator's state database (simulator/state_db.cpp) both use it; it knows neither.
// Not thread-safe: a user hands a connection to one thread at a time (SQLite runs in multi-thread
// mode, SQLITE_OPEN_NOMUTEX).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/result.h"

namespace hcprp::store::sqlite {

// The Error for SQLite result code `rc` (extended codes welcome): kUnavailable for BUSY/LOCKED,
// kCorruption for CORRUPT/NOTADB, kIoError for IOERR/FULL/CANTOPEN/PERM/READONLY, else kInternal.
// `db` (may be null) supplies the detailed message.
Error SqliteError(sqlite3* db, int rc, std::string_view context);

// A prepared statement in use: binds, steps, reads columns, and resets (clearing bindings) when it
// goes out of scope, so that the cached statement is clean for the next user. Text and blobs are
// bound SQLITE_STATIC: the bound memory must outlive the last Step().
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  void BindText(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.empty() ? "" : v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  // Binds a BLOB; an empty byte string is an empty BLOB, not NULL.
  void BindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(s_, i, v.empty() ? "" : v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindInt(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void BindNull(int i) { sqlite3_bind_null(s_, i); }
  void BindOptText(int i, const std::optional<std::string>& v) {
    if (v) {
      BindText(i, std::string_view(*v));
    } else {
      BindNull(i);
    }
  }
  void BindOptInt(int i, const std::optional<int64_t>& v) {
    if (v) {
      BindInt(i, *v);
    } else {
      BindNull(i);
    }
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(s_); }
  // Steps a statement that returns no rows; the error names `context`.
  Status Run(std::string_view context);

  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::optional<int64_t> OptInt(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<int64_t>(Int(col));
  }
  std::string_view Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    return p == nullptr ? std::string_view()
                        : std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, col)));
  }
  std::string_view Blob(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, col));
    return p == nullptr ? std::string_view()
                        : std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, col)));
  }

  sqlite3* db() const { return db_; }
  sqlite3_stmt* raw() const { return s_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_;
};

class Connection {
 public:
  // Opens `path` (":memory:" for a private in-memory database) with `flags` (SQLITE_OPEN_* without
  // the mutex flags; NOMUTEX and extended result codes are always used). `vfs` empty: the default.
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, const std::string& vfs, int flags,
                                                  std::chrono::milliseconds busy_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  // The cached statement for `sql` (a string with static storage: the pointer is the cache key),
  // prepared on first use.
  Result<sqlite3_stmt*> Prepare(const char* sql);
  // The cached statement `key` of a family of dynamically built statements; `build` makes its text
  // on first use.
  template <typename Build>
  Result<sqlite3_stmt*> PrepareKeyed(int key, Build&& build) {
    auto it = keyed_.find(key);
    if (it != keyed_.end()) return it->second;
    HCPRP_ASSIGN_OR_RETURN(auto s, PrepareText(build()));
    keyed_.emplace(key, s);
    return s;
  }

  // Runs SQL without results (pragmas, DDL); errors name `context`.
  Status Exec(const char* sql, std::string_view context);
  // The first column of the first row of `sql` as integer (e.g. a pragma).
  Result<int64_t> QueryInt(const char* sql, std::string_view context);
  Result<std::string> QueryText(const char* sql, std::string_view context);

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  Result<sqlite3_stmt*> PrepareText(const std::string& sql);

  sqlite3* db_;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
  std::unordered_map<int, sqlite3_stmt*> keyed_;
};

}  // namespace hcprp::store::sqlite
