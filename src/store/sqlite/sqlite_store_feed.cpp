// The change feed of the SQLite store (reads, waits), its retention and the purge of expired documents.
#include <limits>
#include <map>

#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

constexpr int64_t kPurgeChunk = 512;

}  // namespace

Result<uint64_t> SqliteStore::MaxSeq(Connection& c, std::string_view container) {
  HCPRP_ASSIGN_STMT(s, c, sql::kMaxSeq);
  s.BindText(1, container);
  int rc = s.Step();
  if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "change feed position of " + std::string(container));
  return static_cast<uint64_t>(s.Int(0));
}

Result<internal::FeedRead> SqliteStore::ChangesAfter(std::string_view container,
                                                     std::optional<uint64_t> position, bool resumed,
                                                     size_t max_changes) {
  return WithReader([&](Connection& c) -> Result<internal::FeedRead> {
    internal::FeedRead read;
    if (position) {
      read.end = *position;
    } else {
      HCPRP_ASSIGN_OR_RETURN(read.end, MaxSeq(c, container));
    }
    // One statement, so one snapshot: superseded versions are stepped over (the position still
    // moves past them) until the page is full or the feed ends.
    HCPRP_ASSIGN_STMT(s, c, sql::kReadChanges);
    s.BindText(1, container);
    s.BindInt(2, static_cast<int64_t>(read.end));
    while (read.changes.size() < max_changes) {
      int rc = s.Step();
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(c.db(), rc, "read changes of " + std::string(container));
      const uint64_t seq = static_cast<uint64_t>(s.Int(0));
      read.end = seq;
      std::string_view stored = s.Text(4);
      if (stored == sql::kVersionInDocuments) {
        if (s.IsNull(8) || s.Text(8) != s.Text(5)) continue;  // superseded or gone: a later change says so
        stored = s.Text(9);
      }
      HCPRP_ASSIGN_OR_RETURN(
          auto change, internal::ChangeFromRow(seq, s.Int(1), std::string(s.Blob(2)), std::string(s.Blob(3)),
                                               stored, std::string(s.Text(5)), s.Int(6), s.OptInt(7)));
      read.changes.push_back(std::move(change));
    }
    if (position && resumed) {
      // Checked after the read: a trim that removed changes after the position before the read
      // is seen (one that ran after it is reported too, which costs the reader a resync only).
      HCPRP_ASSIGN_STMT(t, c, sql::kTrimmedThrough);
      t.BindText(1, container);
      int rc = t.Step();
      if (rc != SQLITE_ROW)
        return SqliteError(c.db(), rc, "change feed retention of " + std::string(container));
      if (static_cast<uint64_t>(t.Int(0)) > *position) return internal::FeedPositionExpired(container);
    }
    return read;
  });
}

Result<bool> SqliteStore::HasChangesAfter(std::string_view container, uint64_t seq) {
  return WithReader([&](Connection& c) -> Result<bool> {
    HCPRP_ASSIGN_STMT(s, c, sql::kHasChanges);
    s.BindText(1, container);
    s.BindInt(2, static_cast<int64_t>(seq));
    int rc = s.Step();
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(c.db(), rc, "look for changes of " + std::string(container));
  });
}

void SqliteStore::EnsureWatcher() {
  if (target_.memory) return;  // only this store's connection can write
  MutexLock lk(watcher_mu_);
  if (watcher_ || watcher_failed_) return;
  auto conn = OpenReader();
  if (conn.ok()) {
    auto w = ChangeWatcher::Start(
        std::move(*conn), target_.path, [this] { NotifyChanged(); }, [this] { return waiters_.load() > 0; });
    if (w.ok()) {
      watcher_ = std::move(*w);
      return;
    }
  }
  // Without a watcher, waits still wake on this store's own commits and at their timeout.
  watcher_failed_ = true;
}

Result<bool> SqliteStore::WaitAfter(std::string_view container, std::optional<uint64_t> position,
                                    std::chrono::steady_clock::time_point deadline) {
  EnsureWatcher();
  uint64_t after = 0;
  if (position) {
    after = *position;
  } else {
    HCPRP_ASSIGN_OR_RETURN(after, WithReader([&](Connection& c) { return MaxSeq(c, container); }));
  }
  waiters_.fetch_add(1);
  struct Leave {
    std::atomic<int>& w;
    ~Leave() { w.fetch_sub(1); }
  } leave{waiters_};
  while (true) {
    uint64_t generation = 0;
    {
      MutexLock lk(notify_mu_);
      generation = generation_;
    }
    auto has = HasChangesAfter(container, after);
    if (!has.ok() || *has) return has;
    MutexLock lk(notify_mu_);
    if (!notify_cv_.WaitUntil(lk, deadline,
                              [&]() HCPRP_REQUIRES(notify_mu_) { return generation_ != generation; }))
      return false;
  }
}

Result<size_t> SqliteStore::PurgeExpired() {
  size_t total = 0;
  while (true) {
    auto purge_chunk = [&](Tx& tx) -> Result<size_t> {
      struct Expired {
        int64_t rowid;
        std::string container, pk, id;
        StoredRow row;
      };
      std::vector<Expired> rows;
      {
        HCPRP_ASSIGN_STMT(s, tx.c, sql::kSelectExpired);
        s.BindInt(1, tx.now);
        s.BindInt(2, kPurgeChunk);
        while (true) {
          int rc = s.Step();
          if (rc == SQLITE_DONE) break;
          if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "find expired documents");
          Expired e;
          e.rowid = s.Int(0);
          e.container = std::string(s.Text(1));
          e.pk = std::string(s.Blob(2));
          e.id = std::string(s.Blob(3));
          e.row.body = std::string(s.Text(4));
          e.row.etag = std::string(s.Text(5));
          e.row.ts = s.Int(6);
          e.row.ttl = s.OptInt(7);
          rows.push_back(std::move(e));
        }
      }
      for (const auto& e : rows) {
        HCPRP_ASSIGN_STMT(d, tx.c, sql::kDeleteByRowid);
        d.BindInt(1, e.rowid);
        HCPRP_RETURN_IF_ERROR(d.Run("purge " + DocName(e.container, e.pk, e.id)));
        HCPRP_RETURN_IF_ERROR(InsertChange(tx, e.container, sql::kKindExpire, e.pk, e.id, e.row.body,
                                           e.row.etag, e.row.ts, e.row.ttl));
      }
      return rows.size();
    };
    HCPRP_ASSIGN_OR_RETURN(size_t n, WriteTx<size_t>("purge expired documents", purge_chunk));
    total += n;
    if (n < static_cast<size_t>(kPurgeChunk)) break;
  }
  HCPRP_RETURN_IF_ERROR(TrimChanges());
  return total;
}

Status SqliteStore::TrimChanges() {
  const bool by_time = options_.change_retention.count() > 0;
  const bool by_size = options_.change_retention_changes > 0;
  if (!by_time && !by_size) return Status::Ok();
  while (true) {
    auto trim_chunk = [&](Tx& tx) -> Result<size_t> {
      std::map<std::string, int64_t> last;  // by container
      size_t removed = 0;
      {
        HCPRP_ASSIGN_STMT(s, tx.c, sql::kTrimChanges);
        s.BindInt(
            1,
            by_time
                ? tx.now -
                      std::chrono::duration_cast<std::chrono::milliseconds>(options_.change_retention).count()
                : std::numeric_limits<int64_t>::min());
        s.BindInt(2, kPurgeChunk);
        s.BindInt(3, by_size ? static_cast<int64_t>(std::min<uint64_t>(options_.change_retention_changes,
                                                                       std::numeric_limits<int64_t>::max()))
                             : std::numeric_limits<int64_t>::max());
        while (true) {
          int rc = s.Step();
          if (rc == SQLITE_DONE) break;
          if (rc != SQLITE_ROW) return SqliteError(tx.c.db(), rc, "trim the change feed");
          int64_t& l = last[std::string(s.Text(0))];
          l = std::max(l, s.Int(1));
          ++removed;
        }
      }
      for (const auto& [container, seq] : last) {
        HCPRP_ASSIGN_STMT(r, tx.c, sql::kRecordTrim);
        r.BindText(1, container);
        r.BindInt(2, seq);
        HCPRP_RETURN_IF_ERROR(r.Run("record the trim of " + container));
      }
      return removed;
    };
    HCPRP_ASSIGN_OR_RETURN(size_t n, WriteTx<size_t>("trim the change feed", trim_chunk));
    if (n < static_cast<size_t>(kPurgeChunk)) return Status::Ok();
  }
}

}  // namespace hcprp::store::sqlite
