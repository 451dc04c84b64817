// A thin libpq layer for the PostgreSQL engine: binary parameters and results, statements prepared
// once per connection, and SQLSTATE -> ErrorCode mapping. Not thread-safe: one thread uses a
// connection at a time (the store's pool hands them out). Shared with bench/store_bench_pg.
#pragma once

#include <libpq-fe.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/result.h"
#include "store/postgres/pg_host_order.h"

namespace hcprp::store::postgres {

// A statement with a stable name; prepared on a connection the first time it runs there.
struct Statement {
  const char* name;
  const char* sql;
};

// Parameters of one statement, all sent in binary format with explicit types (so that the server
// never guesses). The bytes of string parameters are not copied: they must outlive the call.
class Params {
 public:
  Params() = default;
  Params(const Params&) = delete;
  Params& operator=(const Params&) = delete;

  Params& Bytea(std::string_view v) { return Add(v.data(), v.size(), kByteaOid); }
  Params& Text(std::string_view v) { return Add(v.data(), v.size(), kTextOid); }
  Params& OptBytea(const std::optional<std::string>& v) { return v ? Bytea(*v) : Add(nullptr, 0, kByteaOid); }
  Params& OptText(const std::string* v) { return v ? Text(*v) : Add(nullptr, 0, kTextOid); }
  Params& Int8(int64_t v);
  Params& OptInt8(const std::optional<int64_t>& v) { return v ? Int8(*v) : Add(nullptr, 0, kInt8Oid); }
  Params& Int2(int16_t v);
  Params& Bool(bool v);

  int size() const { return static_cast<int>(values_.size()); }
  const char* const* values() const { return values_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }
  const unsigned* types() const { return types_.data(); }

  static constexpr unsigned kBoolOid = 16, kByteaOid = 17, kInt8Oid = 20, kInt2Oid = 21, kTextOid = 25;

 private:
  Params& Add(const char* data, size_t len, unsigned type);

  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::vector<unsigned> types_;
  std::deque<std::array<char, 8>> scalars_;  // storage of encoded numbers (stable addresses)
};

// A query result with binary columns.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  ~PgResult() { PQclear(r_); }

  int rows() const { return PQntuples(r_); }
  int affected() const;  // rows affected by INSERT/UPDATE/DELETE
  bool IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string_view Bytes(int row, int col) const {
    return {PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col))};
  }
  std::string String(int row, int col) const { return std::string(Bytes(row, col)); }
  int64_t Int8(int row, int col) const;
  int16_t Int2(int row, int col) const;
  bool Bool(int row, int col) const { return PQgetvalue(r_, row, col)[0] != 0; }
  std::optional<int64_t> OptInt8(int row, int col) const {
    return IsNull(row, col) ? std::nullopt : std::optional<int64_t>(Int8(row, col));
  }

 private:
  PGresult* r_;
};

// One statement of a pipeline (PgConnection::Pipeline): both must outlive the call.
struct PipelineStep {
  const Statement* statement;
  const Params* params;
};

// One server connection.
class PgConnection {
 public:
  // `url` is a libpq connection URI; `options` the libpq "options" string (server settings such as
  // search_path); `hosts`, when given, replaces the URL's host and port lists (the same servers in
  // another order, pg_host_order.h). kUnavailable when the server cannot be reached.
  static Result<std::unique_ptr<PgConnection>> Connect(const std::string& url, const std::string& options,
                                                       int connect_timeout_seconds,
                                                       const std::optional<HostList>& hosts = std::nullopt);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `st` (preparing it on first use with the parameter types of `p`); binary results.
  Result<PgResult> Exec(const Statement& st, const Params& p, std::string_view context);
  // Runs SQL text without parameters (may hold several statements; text results).
  Result<PgResult> ExecSql(const std::string& sql, std::string_view context);
  // Sends `steps` in one round trip (libpq's pipeline mode) and waits for every answer: the result of
  // each step, or the first error (the server skips the steps after a failed one). A failure to send
  // or to read the answers leaves the connection broken.
  Result<std::vector<PgResult>> Pipeline(const std::vector<PipelineStep>& steps, std::string_view context);

  // Defers `begin` (a statement that opens a transaction): the next Exec or Pipeline sends it first,
  // in the same round trip, so that a transaction costs no round trip of its own to open.
  // begin_pending() is true until then; CancelBegin() forgets it (a transaction that ends before
  // sending anything).
  void DeferBegin(const Statement& begin) { pending_begin_ = &begin; }
  bool begin_pending() const { return pending_begin_ != nullptr; }
  void CancelBegin() { pending_begin_ = nullptr; }

  // How long a call waits for the server's answer (0: for ever). A call that gets none in time fails
  // with kUnavailable and leaves the connection broken (its state is unknown): a server that
  // accepts connections but stops answering fails calls instead of hanging them.
  void set_query_timeout(std::chrono::milliseconds t) { query_timeout_ = t; }
  // The SQLSTATE of the last failed call ("" after a success).
  const std::string& last_sqlstate() const { return last_sqlstate_; }
  // The connection is unusable (the server went away, a call ran out of time, or the server no
  // longer takes writes).
  bool broken() const { return timed_out_ || read_only_ || lost_ || PQstatus(conn_) == CONNECTION_BAD; }
  // A call ran out of time (the server may be stuck: a new connection would not do better).
  bool timed_out() const { return timed_out_; }
  // The server refused a write because it no longer accepts them (SQLSTATE 25006: a primary being
  // demoted, or a standby): a new connection (target_session_attrs=read-write) finds the primary.
  bool read_only() const { return read_only_; }
  // An idle connection that the server has written to (a termination notice, EOF) is dead: checked
  // without blocking before the pool hands it out again.
  bool LooksDead();
  PGconn* raw() { return conn_; }

 private:
  explicit PgConnection(PGconn* c) : conn_(c) {}
  // Waits for the answer to a query sent with PQsend*() (`sent` is its return value) within the
  // query timeout; returns what PQexec would have (the first error, else the last result), null on
  // failure or timeout.
  PGresult* Await(int sent);
  // Reads the results of one query (of a pipeline's step, up to the null that ends them): the first
  // error, else the last result; null when they could not be read in time.
  PGresult* ReadResults(std::chrono::steady_clock::time_point deadline);
  // Sends what libpq still buffers; false on failure or when the deadline passes (timed_out_ set).
  bool Flush(std::chrono::steady_clock::time_point deadline);
  // Reads until PQgetResult would not block; false on failure or when the deadline passes.
  bool WaitReady(std::chrono::steady_clock::time_point deadline);
  std::chrono::steady_clock::time_point Deadline() const;
  // Prepares `st` on this connection unless done before.
  Status Prepare(const Statement& st, const Params& p, std::string_view context);
  // The pipeline of `steps`, without a deferred begin.
  Result<std::vector<PgResult>> SendPipeline(const std::vector<PipelineStep>& steps,
                                             std::string_view context);

  // Waits until the socket is ready for `events` or the deadline passes (false).
  bool WaitSocket(short events, std::chrono::steady_clock::time_point deadline);
  Result<PgResult> Check(PGresult* r, std::string_view context);

  PGconn* conn_;
  std::chrono::milliseconds query_timeout_{0};
  bool timed_out_ = false;
  bool read_only_ = false;
  bool lost_ = false;                         // a pipeline failed midway: the connection's state is unknown
  const Statement* pending_begin_ = nullptr;  // see DeferBegin
  std::unordered_set<const char*> prepared_;  // statement names prepared on this connection
  std::string last_sqlstate_;
};

// Maps a failed call to an Error: connection loss, shutdown, lock timeouts, deadlocks, serialisation
// failures and writes refused by a server that is not (or no longer) the primary are kUnavailable; data
// exceptions kInvalidArgument; storage errors kIoError or kCorruption; the rest kInternal.
Error PgError(PGconn* conn, const PGresult* r, std::string_view context);

// Whether a failed connection attempt's message (PgConnection::Connect) says that no server it tried
// answered: each refused the connection (nothing listens), was unreachable, or stayed silent until
// connect_timeout, so no server started a session for it. False for anything else: a server that
// turned the session down (read-only, starting up), a message it does not know.
bool NoServerAnswered(std::string_view message);

// Whether a SQLSTATE means the transaction was rolled back by the server and may simply be rerun.
inline bool IsRetryableSqlstate(std::string_view s) { return s == "40P01" || s == "40001"; }

// read_only_sql_transaction: the server does not take writes (a standby, or a primary that a
// failover or switchover is demoting). Nothing was written; the primary is elsewhere.
inline constexpr std::string_view kReadOnlySqlstate = "25006";

}  // namespace hcprp::store::postgres
