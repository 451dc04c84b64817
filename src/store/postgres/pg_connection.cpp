#include "store/postgres/pg_connection.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hcprp::store::postgres {
namespace {

void PutBigEndian(char* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

uint64_t GetBigEndian(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

}  // namespace

Params& Params::Add(const char* data, size_t len, unsigned type) {
  values_.push_back(data);
  lengths_.push_back(static_cast<int>(len));
  formats_.push_back(1);
  types_.push_back(type);
  return *this;
}

Params& Params::Int8(int64_t v) {
  auto& buf = scalars_.emplace_back();
  PutBigEndian(buf.data(), static_cast<uint64_t>(v), 8);
  return Add(buf.data(), 8, kInt8Oid);
}

Params& Params::Int2(int16_t v) {
  auto& buf = scalars_.emplace_back();
  PutBigEndian(buf.data(), static_cast<uint16_t>(v), 2);
  return Add(buf.data(), 2, kInt2Oid);
}

Params& Params::Bool(bool v) {
  auto& buf = scalars_.emplace_back();
  buf[0] = v ? 1 : 0;
  return Add(buf.data(), 1, kBoolOid);
}

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

int PgResult::affected() const {
  const char* n = PQcmdTuples(r_);
  return (n == nullptr || *n == '\0') ? 0 : std::atoi(n);
}

int64_t PgResult::Int8(int row, int col) const {
  return static_cast<int64_t>(GetBigEndian(PQgetvalue(r_, row, col), 8));
}

int16_t PgResult::Int2(int row, int col) const {
  return static_cast<int16_t>(GetBigEndian(PQgetvalue(r_, row, col), 2));
}

Error PgError(PGconn* conn, const PGresult* r, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  const char* text = r != nullptr ? PQresultErrorMessage(r) : nullptr;
  if (text == nullptr || *text == '\0') text = conn != nullptr ? PQerrorMessage(conn) : "no connection";
  msg += text;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string_view s = state != nullptr ? state : "";
  if (!s.empty()) msg += " (SQLSTATE " + std::string(s) + ")";
  if (r == nullptr || (conn != nullptr && PQstatus(conn) == CONNECTION_BAD)) return Error::Unavailable(msg);
  std::string_view cls = s.substr(0, 2);
  if (cls == "08" || cls == "53" || cls == "57" || s == "55P03" || cls == "40" || s == kReadOnlySqlstate)
    return Error::Unavailable(msg);
  if (cls == "22") return Error::InvalidArgument(msg);
  if (s == "XX001" || s == "XX002") return Error::Corruption(msg);
  if (cls == "58") return Error::IoError(msg);
  if (s.empty()) return Error::Unavailable(msg);  // a client-side failure (lost connection, no memory)
  return Error::Internal(msg);
}

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& url,
                                                            const std::string& options,
                                                            int connect_timeout_seconds,
                                                            const std::optional<HostList>& hosts) {
  std::string timeout = std::to_string(connect_timeout_seconds);
  // TCP keepalives and a user timeout make a server that vanished without closing the connection
  // (host down, network partition) a broken connection within about 20 s, on pooled and LISTEN
  // connections alike, instead of a call that waits forever. They come before "dbname", so the
  // URL's own parameters override them; "host" and "port" come after it, to override the URL's.
  std::vector<const char*> keys = {"keepalives",       "keepalives_idle",  "keepalives_interval",
                                   "keepalives_count", "tcp_user_timeout", "dbname",
                                   "options",          "connect_timeout",  "application_name"};
  std::vector<const char*> values = {
      "1", "10", "3", "3", "20000", url.c_str(), options.c_str(), timeout.c_str(), "hcprp"};
  if (hosts) {
    keys.push_back("host");
    values.push_back(hosts->hosts.c_str());
    if (!hosts->ports.empty()) {
      keys.push_back("port");
      values.push_back(hosts->ports.c_str());
    }
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* c = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (c == nullptr) return Error::Unavailable("connect to PostgreSQL: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    PQfinish(c);
    // A URI that libpq cannot parse is the caller's mistake; everything else is the server's state.
    if (msg.find("invalid URI") != std::string::npos ||
        msg.find("invalid connection option") != std::string::npos ||
        msg.find("invalid integer value") != std::string::npos) {
      return Error::InvalidArgument("PostgreSQL store URL: " + msg);
    }
    return Error::Unavailable("connect to PostgreSQL: " + msg);
  }
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);  // NOTICEs (IF NOT EXISTS, CASCADE) are noise
  return std::unique_ptr<PgConnection>(new PgConnection(c));
}

bool NoServerAnswered(std::string_view message) {
  // libpq reports each server it tried as `connection to server at "h", port p failed: <why>` (or
  // `on socket "..."`), one after the other.
  constexpr std::string_view kFailed = " failed: ";
  size_t tried = 0;
  for (size_t at = message.find(kFailed); at != std::string_view::npos; at = message.find(kFailed, at + 1)) {
    std::string_view why = message.substr(at + kFailed.size());
    constexpr std::string_view kNoAnswer[] = {"Connection refused", "No such file or directory",
                                              "timeout expired",    "Connection timed out",
                                              "No route to host",   "Network is unreachable"};
    if (std::ranges::none_of(kNoAnswer, [&](std::string_view n) { return why.starts_with(n); })) return false;
    ++tried;
  }
  return tried > 0;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::WaitSocket(short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    int wait_ms = -1;
    if (query_timeout_.count() > 0) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{.fd = PQsocket(conn_), .events = events, .revents = 0};
    if (p.fd < 0) return true;  // libpq reports the broken connection
    int n = poll(&p, 1, wait_ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;
  }
}

std::chrono::steady_clock::time_point PgConnection::Deadline() const {
  return std::chrono::steady_clock::now() + query_timeout_;
}

bool PgConnection::Flush(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    int f = PQflush(conn_);
    if (f < 0) return false;
    if (f == 0) return true;
    if (!WaitSocket(POLLIN | POLLOUT, deadline)) {
      timed_out_ = true;
      return false;
    }
    if (PQconsumeInput(conn_) == 0) return false;
  }
}

bool PgConnection::WaitReady(std::chrono::steady_clock::time_point deadline) {
  while (PQisBusy(conn_) != 0) {
    if (!WaitSocket(POLLIN, deadline)) {
      timed_out_ = true;
      return false;
    }
    if (PQconsumeInput(conn_) == 0) return false;
  }
  return true;
}

PGresult* PgConnection::Await(int sent) {
  if (sent == 0) return nullptr;
  auto deadline = Deadline();
  if (!Flush(deadline)) return nullptr;
  return ReadResults(deadline);
}

PGresult* PgConnection::ReadResults(std::chrono::steady_clock::time_point deadline) {
  PGresult* kept = nullptr;
  while (true) {
    if (!WaitReady(deadline)) {
      PQclear(kept);
      return nullptr;
    }
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) return kept;
    if (kept != nullptr && PQresultStatus(kept) == PGRES_FATAL_ERROR) {
      PQclear(r);
    } else {
      PQclear(kept);
      kept = r;
    }
  }
}

Result<PgResult> PgConnection::Check(PGresult* r, std::string_view context) {
  if (r == nullptr && timed_out_) {
    last_sqlstate_ = "08000";
    return Error::Unavailable(std::string(context) + ": PostgreSQL did not answer within " +
                              std::to_string(query_timeout_.count()) + " ms");
  }
  ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    last_sqlstate_.clear();
    return PgResult(r);
  }
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  last_sqlstate_ = state != nullptr ? state : "08000";
  if (last_sqlstate_ == kReadOnlySqlstate) read_only_ = true;
  Error e = PgError(conn_, r, context);
  PQclear(r);
  return e;
}

Status PgConnection::Prepare(const Statement& st, const Params& p, std::string_view context) {
  if (prepared_.contains(st.name)) return Status::Ok();
  PGresult* r = Await(PQsendPrepare(conn_, st.name, st.sql, p.size(), p.types()));
  HCPRP_RETURN_IF_ERROR(Check(r, context));
  prepared_.insert(st.name);
  return Status::Ok();
}

Result<PgResult> PgConnection::Exec(const Statement& st, const Params& p, std::string_view context) {
  if (pending_begin_ != nullptr) {
    HCPRP_ASSIGN_OR_RETURN(auto results, Pipeline({{&st, &p}}, context));
    return std::move(results.back());
  }
  HCPRP_RETURN_IF_ERROR(Prepare(st, p, context));
  return Check(Await(PQsendQueryPrepared(conn_, st.name, p.size(), p.values(), p.lengths(), p.formats(),
                                         /*binary=*/1)),
               context);
}

Result<PgResult> PgConnection::ExecSql(const std::string& sql, std::string_view context) {
  return Check(Await(PQsendQuery(conn_, sql.c_str())), context);
}

Result<std::vector<PgResult>> PgConnection::Pipeline(const std::vector<PipelineStep>& steps,
                                                     std::string_view context) {
  if (pending_begin_ == nullptr) return SendPipeline(steps, context);
  const Params none;
  std::vector<PipelineStep> with_begin;
  with_begin.reserve(steps.size() + 1);
  with_begin.push_back({pending_begin_, &none});
  with_begin.insert(with_begin.end(), steps.begin(), steps.end());
  pending_begin_ = nullptr;  // sent, or lost with the connection: a rollback ends what it opened
  HCPRP_ASSIGN_OR_RETURN(auto results, SendPipeline(with_begin, context));
  results.erase(results.begin());
  return results;
}

Result<std::vector<PgResult>> PgConnection::SendPipeline(const std::vector<PipelineStep>& steps,
                                                         std::string_view context) {
  for (const PipelineStep& step : steps)
    HCPRP_RETURN_IF_ERROR(Prepare(*step.statement, *step.params, context));
  auto lost = [&]() -> Error {
    lost_ = true;
    return Check(nullptr, context).error();
  };
  if (PQenterPipelineMode(conn_) == 0) return lost();
  for (const PipelineStep& step : steps) {
    const Params& p = *step.params;
    if (PQsendQueryPrepared(conn_, step.statement->name, p.size(), p.values(), p.lengths(), p.formats(),
                            /*binary=*/1) == 0) {
      return lost();
    }
  }
  auto deadline = Deadline();
  if (PQpipelineSync(conn_) == 0 || !Flush(deadline)) return lost();
  std::vector<PgResult> out;
  out.reserve(steps.size());
  std::optional<Error> failed;
  for (size_t i = 0; i < steps.size(); ++i) {
    PGresult* r = ReadResults(deadline);
    if (r == nullptr) return lost();
    if (failed) {  // skipped by the server (PGRES_PIPELINE_ABORTED)
      PQclear(r);
      continue;
    }
    auto checked = Check(r, context);
    if (checked.ok()) {
      out.push_back(std::move(*checked));
    } else {
      failed = checked.error();
    }
  }
  if (!WaitReady(deadline)) return lost();
  PGresult* sync = PQgetResult(conn_);
  const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) == 0) return lost();
  if (failed) return *failed;
  return out;
}

bool PgConnection::LooksDead() {
  if (broken()) return true;
  pollfd p{.fd = PQsocket(conn_), .events = POLLIN, .revents = 0};
  if (p.fd < 0) return true;
  int n = poll(&p, 1, 0);
  if (n == 0) return false;
  // Something arrived while idle: read it; a termination notice or EOF breaks the connection.
  if (PQconsumeInput(conn_) == 0) return true;
  while (PGnotify* note = PQnotifies(conn_)) PQfreemem(note);
  return broken();
}

}  // namespace hcprp::store::postgres
