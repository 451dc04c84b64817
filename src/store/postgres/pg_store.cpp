// Opening a PostgreSQL store: the URL, the schema migrations, the connection pool.
#include "store/postgres/pg_store.h"

#include <unistd.h>

#include <charconv>

#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
namespace {

bool ValidSchemaName(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

int64_t MigrationLockKey(std::string_view schema) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : std::string("hcprp-migrations:") + std::string(schema)) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

}  // namespace

std::string ConnectionOptions(std::string_view schema, std::chrono::milliseconds busy_timeout) {
  return "-c search_path=" + std::string(schema) +
         " -c lock_timeout=" + std::to_string(std::max<int64_t>(1, busy_timeout.count())) +
         " -c idle_in_transaction_session_timeout=" + std::to_string(kIdleInTransactionTimeoutMs);
}

PgStore::PgStore(PgTarget target, const OpenOptions& options, internal::DocumentIndexer indexer)
    : EngineStore(options.clock, std::move(indexer), /*reruns=*/true),
      target_(std::move(target)),
      options_(options),
      conn_options_(ConnectionOptions(target_.schema, options.busy_timeout)),
      channel_("hcprp_feed_" + target_.schema),
      host_order_(target_.libpq_url) {}

Result<std::unique_ptr<PgConnection>> PgStore::Connect(const std::string* options) {
  auto c = PgConnection::Connect(target_.libpq_url, options != nullptr ? *options : conn_options_,
                                 kConnectTimeoutSeconds, host_order_.Preferred());
  if (c.ok()) {
    (*c)->set_query_timeout(target_.query_timeout);
    host_order_.Connected((*c)->raw());
  }
  return c;
}

Result<std::unique_ptr<Store>> PgStore::Open(PgTarget target, const OpenOptions& options) {
  HCPRP_ASSIGN_OR_RETURN(auto indexer, internal::DocumentIndexer::Make(options.indexes));
  std::unique_ptr<PgStore> s(new PgStore(std::move(target), options, std::move(indexer)));
  HCPRP_ASSIGN_OR_RETURN(auto c, s->Connect());
  c->set_query_timeout(std::chrono::milliseconds(0));  // a migration may rewrite a large table
  HCPRP_RETURN_IF_ERROR(Migrate(*c, s->target_, options));
  c->set_query_timeout(s->target_.query_timeout);
  {
    MutexLock lk(s->pool_mu_);
    s->open_ = 1;
  }
  s->Release(std::move(c));
  if (options.purge_interval.count() > 0) s->StartSweeper(options.purge_interval);
  return std::unique_ptr<Store>(std::move(s));
}

Status PgStore::Migrate(PgConnection& c, const PgTarget& t, const OpenOptions& options) {
  std::string where = "migrate schema " + t.schema;
  auto run = [&]() -> Status {
    HCPRP_RETURN_IF_ERROR(c.ExecSql("BEGIN", where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql(
        "SET LOCAL lock_timeout = " + std::to_string(std::max<int64_t>(1, options.busy_timeout.count())),
        where));
    HCPRP_RETURN_IF_ERROR(
        c.ExecSql("SELECT pg_advisory_xact_lock(" + std::to_string(MigrationLockKey(t.schema)) + ")", where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql("CREATE SCHEMA IF NOT EXISTS " + t.schema, where));
    HCPRP_RETURN_IF_ERROR(c.ExecSql("CREATE TABLE IF NOT EXISTS " + t.schema +
                                        ".schema_migrations (version integer PRIMARY KEY, "
                                        "applied_at timestamptz NOT NULL DEFAULT now())",
                                    where));
    HCPRP_ASSIGN_OR_RETURN(
        auto current,
        c.ExecSql("SELECT coalesce(max(version), 0) FROM " + t.schema + ".schema_migrations", where));
    int version = 0;
    std::string_view text = current.Bytes(0, 0);
    std::from_chars(text.data(), text.data() + text.size(), version);
    const auto& migrations = sql::Migrations();
    if (version > migrations.back().version) {
      return Error::InvalidArgument(where + ": the store has schema version " + std::to_string(version) +
                                    ", newer than this binary's " +
                                    std::to_string(migrations.back().version));
    }
    for (const auto& m : migrations) {
      if (m.version <= version) continue;
      std::string step = where + ": migration " + std::to_string(m.version);
      HCPRP_RETURN_IF_ERROR(c.ExecSql(m.sql, step));
      HCPRP_RETURN_IF_ERROR(c.ExecSql("INSERT INTO " + t.schema + ".schema_migrations(version) VALUES (" +
                                          std::to_string(m.version) + ")",
                                      step));
    }
    HCPRP_RETURN_IF_ERROR(c.ExecSql("COMMIT", where));
    return Status::Ok();
  };
  Status st = run();
  if (!st.ok() && !c.broken()) (void)c.ExecSql("ROLLBACK", where);
  return st;
}

PgStore::~PgStore() {
  {
    MutexLock lk(announce_mu_);
    announce_stop_ = true;
  }
  announce_cv_.NotifyAll();
  if (notifier_.joinable()) notifier_.join();
  StopSweeper();
  stopping_ = true;
  MutexLock lk(listener_mu_);
  if (listener_.joinable()) {
    char b = 1;
    (void)!write(wake_pipe_[1], &b, 1);
    listener_.join();
  }
  for (int fd : wake_pipe_) {
    if (fd >= 0) close(fd);
  }
}

Result<PgStore::Reservation> PgStore::Reserve() {
  using Clock = ConnectGate::Clock;
  const Clock::time_point arrived = Clock::now();
  const Clock::time_point give_up = arrived + kConnectRetryPeriod;
  MutexLock lk(pool_mu_);
  while (true) {
    if (!idle_.empty()) {
      Reservation r{.idle = std::move(idle_.back()), .attempt = {}};
      idle_.pop_back();
      return r;
    }
    if (open_ >= kMaxConnections) {
      pool_cv_.Wait(lk);
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (gate_.MayStart(now)) {
      ++open_;
      return Reservation{.idle = nullptr, .attempt = gate_.Start(now)};
    }
    const Clock::time_point opens = gate_.Opens(now);
    if (gate_.Waited(now) > Clock::duration::zero()) {
      // A silent server: a call waits a period at most.
      if (now >= give_up) return ConnectGateClosed(now, opens);
      (void)pool_cv_.WaitUntil(lk, std::min(give_up, opens));
      continue;
    }
    // Backing off after attempts a server turned down: a call fails with the outcome of an attempt
    // that started after it came (its own or another call's), so a server that came back meanwhile
    // is found; the next attempt starts within kConnectBackoffMax, and its end wakes the waiters.
    if (gate_.TurnedDownSince(arrived) || now >= give_up + kConnectBackoffMax)
      return ConnectGateClosed(now, opens);
    (void)pool_cv_.WaitUntil(lk, opens);
  }
}

Error PgStore::ConnectGateClosed(ConnectGate::Clock::time_point now, ConnectGate::Clock::time_point opens) {
  auto ms = [](ConnectGate::Clock::duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
  };
  if (const auto waited = gate_.Waited(now); waited > ConnectGate::Clock::duration::zero()) {
    return Error::Unavailable("connect to PostgreSQL: no answer to a connection attempt for " + ms(waited) +
                              " (a new one starts every " + ms(kConnectRetryPeriod) + ")");
  }
  return Error::Unavailable("connect to PostgreSQL: " + std::to_string(gate_.failures()) +
                            " attempts turned down in a row, the last with: " + last_connect_error_ +
                            " (the next starts in " + ms(opens - now) + ")");
}

void PgStore::Unreserve() {
  {
    MutexLock lk(pool_mu_);
    --open_;
  }
  pool_cv_.NotifyOne();
}

Result<std::unique_ptr<PgConnection>> PgStore::Acquire(bool& reused) {
  while (true) {
    HCPRP_ASSIGN_OR_RETURN(Reservation r, Reserve());
    if (r.idle) {
      if (!r.idle->LooksDead()) {
        reused = true;
        return std::move(r.idle);
      }
      r.idle.reset();
      Unreserve();
      continue;
    }
    reused = false;
    auto opened = Connect();
    {
      MutexLock lk(pool_mu_);
      if (opened.ok()) {
        gate_.Finish(r.attempt, ConnectGate::Clock::now(), ConnectGate::Outcome::kConnected);
      } else {
        const std::string& why = opened.error().message();
        gate_.Finish(
            r.attempt, ConnectGate::Clock::now(),
            NoServerAnswered(why) ? ConnectGate::Outcome::kNotAnswered : ConnectGate::Outcome::kTurnedDown);
        last_connect_error_ = why;
        --open_;
      }
    }
    // Waiters held by the gate may go now (a success), or take the place given back.
    pool_cv_.NotifyAll();
    return opened;
  }
}

void PgStore::Release(std::unique_ptr<PgConnection> c) {
  const bool timed_out = c->timed_out();
  if (timed_out) host_order_.Unresponsive(c->raw());
  const bool avoided = host_order_.Avoided(c->raw());
  {
    MutexLock lk(pool_mu_);
    if (avoided || c->broken() || PQtransactionStatus(c->raw()) != PQTRANS_IDLE) {
      --open_;
      c.reset();
    } else {
      idle_.push_back(std::move(c));
    }
  }
  pool_cv_.NotifyOne();
  if (timed_out) DropIdle();  // most are sessions on the server that stopped answering
}

void PgStore::DropIdle() {
  std::vector<std::unique_ptr<PgConnection>> dropped;
  {
    MutexLock lk(pool_mu_);
    dropped.swap(idle_);
    open_ -= dropped.size();
  }
  pool_cv_.NotifyAll();
}

Result<PgTarget> ParsePostgresUrl(std::string_view url) {
  if (url.substr(0, 13) != "postgresql://" && url.substr(0, 11) != "postgres://") {
    return Error::InvalidArgument("bad PostgreSQL store URL \"" + std::string(url) +
                                  "\": expected postgresql://user@host:port/db");
  }
  PgTarget t;
  t.schema = "hcprp";
  std::string_view base = url;
  std::string_view query;
  if (size_t q = url.find('?'); q != std::string_view::npos) {
    base = url.substr(0, q);
    query = url.substr(q + 1);
  }
  std::string kept;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.substr(0, 17) == "query_timeout_ms=") {
      std::string_view v = kv.substr(17);
      int64_t ms = -1;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
      if (ec != std::errc() || end != v.data() + v.size() || ms < 0 || ms > 86'400'000) {
        return Error::InvalidArgument("PostgreSQL store URL: query_timeout_ms \"" + Printable(v) +
                                      "\" must be a number of milliseconds from 0 to 86400000");
      }
      t.query_timeout = std::chrono::milliseconds(ms);
    } else if (kv.substr(0, 7) == "schema=") {
      t.schema = std::string(kv.substr(7));
      if (!ValidSchemaName(t.schema)) {
        return Error::InvalidArgument("PostgreSQL store URL: schema \"" + Printable(t.schema) +
                                      "\" must be 1-40 characters of [a-z0-9_]");
      }
    } else if (!kv.empty()) {
      kept += kept.empty() ? "?" : "&";
      kept += kv;
    }
  }
  // Several hosts (a primary and its standbys): sessions must go to the one that takes writes,
  // whichever it is now, unless the URL says otherwise.
  std::string_view authority = base.substr(base.find("://") + 3);
  authority = authority.substr(0, authority.find('/'));
  if (authority.find(',') != std::string_view::npos &&
      kept.find("target_session_attrs=") == std::string::npos) {
    kept += kept.empty() ? "?" : "&";
    kept += "target_session_attrs=read-write";
  }
  t.libpq_url = std::string(base) + kept;
  return t;
}

Result<std::unique_ptr<Store>> OpenPostgresStore(std::string_view url, const OpenOptions& options) {
  if (options.clock == nullptr) return Error::InvalidArgument("OpenOptions::clock is required");
  HCPRP_ASSIGN_OR_RETURN(auto target, ParsePostgresUrl(url));
  return PgStore::Open(std::move(target), options);
}
}  // namespace hcprp::store::postgres
