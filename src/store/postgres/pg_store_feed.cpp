// The change feed of the PostgreSQL store: numbering, reads, commit notifications (NOTIFY/LISTEN) and
// waits, its retention and the purge of expired documents.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "store/postgres/pg_store_internal.h"

namespace hcprp::store::postgres {
namespace {

constexpr int64_t kPurgeChunk = 512;
constexpr std::chrono::milliseconds kWaitSafetyInterval = 5s;

Error FeedPositionAhead(std::string_view container, uint64_t position, uint64_t last) {
  return Error::OutOfRange("the change feed of " + Printable(container) + " ends at " + std::to_string(last) +
                           ", before position " + std::to_string(position) +
                           " (changes read there were lost by a failover to a server without them); "
                           "start again from \"now\" after a full resynchronisation");
}

}  // namespace

void PgStore::AnnounceCommit() {
  MutexLock lk(announce_mu_);
  if (announce_stop_) return;
  announce_due_ = true;
  if (!notifier_.joinable()) {
    notifier_ = std::thread([this] { NotifierLoop(); });
  } else {
    announce_cv_.NotifyOne();
  }
}

void PgStore::NotifierLoop() {
  // Its own connection, committing asynchronously: a notification needs no WAL flush, so the
  // server's lock on the notification queue is held for microseconds, not for a disk write, and
  // writers never wait for it. Commits that arrive while a NOTIFY is in flight share the next one.
  // A process that dies between a commit and its NOTIFY leaves the other processes' waiters to
  // their periodic re-check.
  std::unique_ptr<PgConnection> conn;
  auto backoff = 50ms;
  MutexLock lk(announce_mu_);
  while (true) {
    announce_cv_.Wait(lk, [&]() HCPRP_REQUIRES(announce_mu_) { return announce_due_ || announce_stop_; });
    if (announce_stop_) return;
    announce_due_ = false;
    lk.unlock();
    if (!conn) {
      const std::string options = conn_options_ + " -c synchronous_commit=off";
      auto c = Connect(&options);
      if (c.ok()) conn = std::move(*c);
    }
    bool sent = conn && conn->ExecSql("NOTIFY " + channel_, "notify").ok();
    lk.lock();
    if (sent) {
      backoff = 50ms;
      continue;
    }
    conn.reset();
    announce_due_ = true;  // the server is away: try again after a pause (or at the next commit)
    announce_cv_.WaitFor(lk, backoff, [&]() HCPRP_REQUIRES(announce_mu_) { return announce_stop_; });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 2s);
  }
}

void PgStore::NotifyChanged() {
  {
    MutexLock lk(notify_mu_);
    ++generation_;
  }
  notify_cv_.NotifyAll();
}

Result<uint64_t> PgStore::NumberChanges(PgConnection& c, std::string_view container, bool all) {
  Params p;
  p.Bytea(container).Int8(all ? std::numeric_limits<int64_t>::max() : sql::kNumberChunk);
  HCPRP_ASSIGN_OR_RETURN(auto r,
                         c.Exec(sql::kNumberChanges, p, "number the changes of " + Printable(container)));
  return static_cast<uint64_t>(r.Int8(0, 0));
}

Result<internal::FeedRead> PgStore::ChangesAfter(std::string_view container, std::optional<uint64_t> position,
                                                 bool resumed, size_t max_changes) {
  return WithConn([&](PgConnection& c) -> Result<internal::FeedRead> {
    HCPRP_ASSIGN_OR_RETURN(const uint64_t last, NumberChanges(c, container, /*all=*/!position));
    const uint64_t start = position ? *position : last;
    // A position past the feed's end names numbers this server never gave: it took over from a
    // primary whose last acknowledged commits it had not received (asynchronous replication).
    // Reading on would skip the changes that get those numbers here: the reader must resync.
    if (start > last) return FeedPositionAhead(container, start, last);
    internal::FeedRead read;
    read.end = start;
    bool gap = false;
    // Superseded versions are stepped over (the position still moves past them): read ranges until
    // the page is full or the feed ends.
    for (bool first = true; read.changes.size() < max_changes; first = false) {
      const size_t want = max_changes - read.changes.size();
      Params p;
      p.Bytea(container)
          .Int8(static_cast<int64_t>(read.end))
          .Int8(static_cast<int64_t>(std::min<size_t>(want, INT32_MAX)));
      HCPRP_ASSIGN_OR_RETURN(auto r, c.Exec(sql::kReadChanges, p, "read changes of " + Printable(container)));
      // Numbers are consecutive: a read that does not start right after the position (or finds
      // nothing below the last number) met changes removed by retention.
      if (first) gap = r.rows() == 0 ? last > start : static_cast<uint64_t>(r.Int8(0, 0)) != start + 1;
      for (int i = 0; i < r.rows(); ++i) {
        read.end = static_cast<uint64_t>(r.Int8(i, 0));
        if (r.IsNull(i, 4)) continue;  // a superseded version: a later change of the document follows
        HCPRP_ASSIGN_OR_RETURN(
            auto change,
            internal::ChangeFromRow(read.end, r.Int2(i, 1), r.String(i, 2), r.String(i, 3), r.Bytes(i, 4),
                                    r.String(i, 5), r.Int8(i, 6), r.OptInt8(i, 7)));
        read.changes.push_back(std::move(change));
      }
      if (static_cast<size_t>(r.rows()) < want) break;
    }
    if (gap && resumed) return internal::FeedPositionExpired(container);
    return read;
  });
}

void PgStore::EnsureListener() {
  MutexLock lk(listener_mu_);
  if (listener_.joinable()) return;
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    return;  // waits still wake on local commits and re-check
  listener_ = std::thread([this] { ListenLoop(); });
}

void PgStore::ListenLoop() {
  std::unique_ptr<PgConnection> conn;
  auto backoff = 50ms;
  auto sleep_interruptibly = [&](std::chrono::milliseconds d) {
    pollfd p{.fd = wake_pipe_[0], .events = POLLIN, .revents = 0};
    (void)poll(&p, 1, static_cast<int>(d.count()));
  };
  while (!stopping_) {
    if (!conn) {
      auto c = Connect();
      if (c.ok() && (*c)->ExecSql("LISTEN " + channel_, "listen").ok()) {
        conn = std::move(*c);
        backoff = 50ms;
        NotifyChanged();  // notifications may have been missed while disconnected: re-check
      } else {
        sleep_interruptibly(backoff);
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, 2s);
        continue;
      }
    }
    pollfd fds[2] = {{.fd = PQsocket(conn->raw()), .events = POLLIN, .revents = 0},
                     {.fd = wake_pipe_[0], .events = POLLIN, .revents = 0}};
    int n = poll(fds, 2, 60000);
    if (stopping_) break;
    if (n <= 0 || fds[0].revents == 0) continue;
    bool ok = PQconsumeInput(conn->raw()) != 0;
    bool any = false;
    while (PGnotify* note = PQnotifies(conn->raw())) {
      any = true;
      PQfreemem(note);
    }
    if (!ok || conn->broken()) {
      conn.reset();
      any = true;
    }
    if (any) NotifyChanged();
  }
}

Result<bool> PgStore::WaitAfter(std::string_view container, std::optional<uint64_t> position,
                                std::chrono::steady_clock::time_point deadline) {
  EnsureListener();
  uint64_t after = 0;
  if (position) {
    after = *position;
  } else {
    HCPRP_ASSIGN_OR_RETURN(
        after, WithConn([&](PgConnection& c) { return NumberChanges(c, container, /*all=*/true); }));
  }
  while (true) {
    uint64_t generation = 0;
    {
      MutexLock lk(notify_mu_);
      generation = generation_;
    }
    auto has_changes = [&](PgConnection& c) -> Result<bool> {
      Params p;
      p.Bytea(container);
      HCPRP_ASSIGN_OR_RETURN(auto r,
                             c.Exec(sql::kFeedState, p, "change feed state of " + Printable(container)));
      return static_cast<uint64_t>(r.Int8(0, 0)) > after || r.Bool(0, 1);
    };
    HCPRP_ASSIGN_OR_RETURN(bool has, WithConn(has_changes));
    if (has) return true;
    MutexLock lk(notify_mu_);
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    auto until = std::min(deadline, now + kWaitSafetyInterval);
    notify_cv_.WaitUntil(lk, until, [&]() HCPRP_REQUIRES(notify_mu_) { return generation_ != generation; });
  }
}

Result<size_t> PgStore::PurgeExpired() {
  size_t total = 0;
  while (true) {
    auto purge_chunk = [&](Tx& tx) -> Result<size_t> {
      Params p;
      p.Int8(tx.now).Int8(kPurgeChunk);
      HCPRP_ASSIGN_OR_RETURN(auto r, tx.c.Exec(sql::kPurgeChunk, p, "purge expired documents"));
      for (int i = 0; i < r.rows(); ++i) {
        RecordChange(tx, r.Bytes(i, 0), sql::kKindExpire, r.Bytes(i, 1), r.Bytes(i, 2), r.String(i, 3),
                     r.String(i, 4), r.Int8(i, 5), r.OptInt8(i, 6));
      }
      return static_cast<size_t>(r.rows());
    };
    HCPRP_ASSIGN_OR_RETURN(size_t n, WriteTx<size_t>("purge expired documents", purge_chunk));
    total += n;
    if (n < static_cast<size_t>(kPurgeChunk)) break;
  }
  HCPRP_RETURN_IF_ERROR(TrimChanges());
  return total;
}

Status PgStore::TrimChanges() {
  const bool by_time = options_.change_retention.count() > 0;
  const bool by_size = options_.change_retention_changes > 0;
  if (!by_time && !by_size) return Status::Ok();
  const int64_t cutoff =
      by_time ? clock_->NowMillis() -
                    std::chrono::duration_cast<std::chrono::milliseconds>(options_.change_retention).count()
              : std::numeric_limits<int64_t>::min();
  const int64_t keep = by_size ? static_cast<int64_t>(std::min<uint64_t>(options_.change_retention_changes,
                                                                         std::numeric_limits<int64_t>::max()))
                               : std::numeric_limits<int64_t>::max();
  auto list_feeds = [&](PgConnection& c) -> Result<std::vector<std::string>> {
    HCPRP_ASSIGN_OR_RETURN(auto pending,
                           c.Exec(sql::kPendingContainers, Params(), "find unnumbered changes"));
    for (int i = 0; i < pending.rows(); ++i) {
      HCPRP_RETURN_IF_ERROR(NumberChanges(c, pending.Bytes(i, 0), /*all=*/true));
    }
    HCPRP_ASSIGN_OR_RETURN(auto feeds, c.Exec(sql::kFeedContainers, Params(), "list change feeds"));
    std::vector<std::string> out;
    for (int i = 0; i < feeds.rows(); ++i) out.push_back(feeds.String(i, 0));
    return out;
  };
  HCPRP_ASSIGN_OR_RETURN(auto containers, WithConn(list_feeds));
  for (const std::string& container : containers) {
    while (true) {
      auto trim_chunk = [&](PgConnection& c) -> Result<int> {
        Params p;
        p.Bytea(container).Int8(cutoff).Int8(kPurgeChunk).Int8(keep);
        HCPRP_ASSIGN_OR_RETURN(
            auto r, c.Exec(sql::kTrimChanges, p, "trim the change feed of " + Printable(container)));
        return r.affected();
      };
      HCPRP_ASSIGN_OR_RETURN(int removed, WithConn(trim_chunk));
      if (removed < kPurgeChunk) break;
    }
  }
  return Status::Ok();
}

}  // namespace hcprp::store::postgres
