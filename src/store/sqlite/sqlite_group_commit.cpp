// Group commit of the SQLite store: concurrent writes share one transaction, each in its own savepoint.
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

// The most writes one group commit takes (bounds the latency a write adds to the others).
constexpr size_t kMaxGroup = 64;

// WAL pages (4 KiB each) after which the checkpointer copies them back into the database file (SQLite's
// own default threshold), and after which the writer does it itself inside its commit, which bounds the
// WAL when the checkpointer cannot keep up or a reader holds it back.
constexpr int kCheckpointPages = 1000;
constexpr int kWriterCheckpointPages = 16 * kCheckpointPages;

}  // namespace

void SqliteStore::Rollback(Connection& c) {
  if (sqlite3_get_autocommit(c.db())) return;  // SQLite already rolled back (e.g. after an I/O error)
  auto s = c.Prepare(sql::kRollback);
  if (s.ok()) {
    Stmt st(c.db(), *s);
    (void)st.Step();
  }
}

void SqliteStore::SubmitWrite(PendingWrite& w) {
  MutexLock lk(group_mu_);
  queue_.push_back(&w);
  while (!w.done) {
    if (leading_) {
      w.woken.Wait(lk);
      continue;
    }
    // This thread leads: it commits everything queued so far (its own write included, unless more
    // than kMaxGroup were ahead of it) in one transaction, then hands the lead on.
    leading_ = true;
    std::vector<PendingWrite*> group;
    while (!queue_.empty() && group.size() < kMaxGroup) {
      group.push_back(queue_.front());
      queue_.pop_front();
    }
    lk.unlock();
    bool feed_changed = false;
    try {
      feed_changed = RunGroup(group);
    } catch (...) {  // bad_alloc outside a write: every member fails, nothing was committed
      for (PendingWrite* g : group) g->exception = std::current_exception();
    }
    if (feed_changed) NotifyChanged();
    lk.lock();
    for (PendingWrite* g : group) {
      g->done = true;
      g->woken.NotifyOne();  // under group_mu_, so its thread cannot return and destroy `g` first
    }
    leading_ = false;
    if (!queue_.empty()) queue_.front()->woken.NotifyOne();  // the next group's leader
  }
}

Status SqliteStore::Exec(Connection& c, const char* statement, std::string_view what) {
  HCPRP_ASSIGN_OR_RETURN(auto prepared, c.Prepare(statement));
  Stmt s(c.db(), prepared);
  int rc = s.Step();
  if (rc != SQLITE_DONE) return SqliteError(c.db(), rc, std::string(what) + ": " + statement);
  return Status::Ok();
}

bool SqliteStore::RunGroup(const std::vector<PendingWrite*>& group) {
  MutexLock lk(write_mu_);
  Connection& c = *writer_;
  bool feed_changed = false;
  size_t next = 0;
  while (next < group.size()) {
    Status begun = Exec(c, sql::kBegin, group[next]->what);
    if (!begun.ok()) {
      Rollback(c);
      for (size_t i = next; i < group.size(); ++i) group[i]->outcome = begun;
      return feed_changed;
    }
    // Members applied in this transaction; each keeps its own outcome through a savepoint.
    std::vector<PendingWrite*> applied;
    std::optional<Error> lost;  // set when SQLite ended the whole transaction
    for (; next < group.size() && !lost; ++next) {
      PendingWrite& w = *group[next];
      Status saved = Exec(c, sql::kSavepoint, w.what);
      if (!saved.ok()) {
        w.outcome = saved;
        lost = saved.error();
        continue;
      }
      Tx tx(c, clock_->NowMillis());
      Status st = Status::Ok();
      try {
        st = w.run(tx);
      } catch (...) {  // a programming error or bad_alloc: undo this member, rethrow in its thread
        w.exception = std::current_exception();
        st = Error::Internal("exception in write");
      }
      if (st.ok()) {
        Status released = Exec(c, sql::kRelease, w.what);
        if (!released.ok()) {
          w.outcome = released;
          lost = released.error();
          continue;
        }
        w.feed_changed = tx.feed_changed;
        applied.push_back(&w);
        continue;
      }
      w.outcome = st;
      if (sqlite3_get_autocommit(c.db())) {  // SQLite rolled the transaction back (I/O error, full disk)
        lost = st.error();
        continue;
      }
      Status undone = Exec(c, sql::kRollbackToSavepoint, w.what);
      if (undone.ok()) undone = Exec(c, sql::kRelease, w.what);
      if (!undone.ok()) lost = undone.error();
    }
    if (lost) {
      // The members applied before the failure went with the transaction; none was acknowledged.
      Rollback(c);
      for (PendingWrite* a : applied) {
        a->outcome =
            Error(lost->code(), std::string(a->what) + ": the shared transaction failed: " + lost->message());
      }
      continue;  // the rest of the group in a new transaction
    }
    Status committed = Exec(c, sql::kCommit, applied.empty() ? std::string_view("write") : applied[0]->what);
    if (!committed.ok()) {
      Rollback(c);
      for (PendingWrite* a : applied) a->outcome = committed;
      continue;
    }
    for (PendingWrite* a : applied) feed_changed = feed_changed || a->feed_changed;
  }
  return feed_changed;
}

Status SqliteStore::StartCheckpointer() {
  HCPRP_ASSIGN_OR_RETURN(
      auto conn, Connection::Open(target_.path, target_.vfs, SQLITE_OPEN_READWRITE, options_.busy_timeout));
  // A connection opens the file at its first statement; until it has seen the WAL mode, a checkpoint
  // through it does nothing.
  HCPRP_ASSIGN_OR_RETURN(auto mode,
                         conn->QueryText("PRAGMA journal_mode", "open checkpointer " + target_.path));
  if (mode != "wal")
    return Error::IoError("open checkpointer " + target_.path + ": journal mode \"" + mode + "\"");
  checkpoint_conn_ = std::move(conn);
  {
    MutexLock lk(write_mu_);
    // Replaces SQLite's automatic checkpoint (itself a WAL hook) on the writer connection.
    sqlite3_wal_hook(writer_->db(), &SqliteStore::WalHook, this);
  }
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
  return Status::Ok();
}

int SqliteStore::WalHook(void* self, sqlite3* db, const char* schema, int pages) {
  auto* me = static_cast<SqliteStore*>(self);
  if (pages >= kWriterCheckpointPages) {
    (void)sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  } else if (pages >= kCheckpointPages) {
    {
      MutexLock lk(me->checkpoint_mu_);
      me->checkpoint_due_ = true;
    }
    me->checkpoint_cv_.NotifyOne();
  }
  return SQLITE_OK;
}

void SqliteStore::CheckpointLoop() {
  MutexLock lk(checkpoint_mu_);
  for (;;) {
    checkpoint_cv_.Wait(lk,
                        [&]() HCPRP_REQUIRES(checkpoint_mu_) { return checkpoint_due_ || checkpoint_stop_; });
    if (checkpoint_stop_) return;
    checkpoint_due_ = false;
    lk.unlock();
    // PASSIVE: copies what it can without waiting for the writer or the readers. The first pass runs
    // while group commits go on and copies the bulk of the WAL; the second runs between two group
    // commits and copies only what they appended meanwhile, so that the WAL is complete in the
    // database file and the next commit starts it from its beginning (a WAL that commits keep
    // appending to is never complete otherwise, and grows). A failure (busy, I/O) is retried after
    // the next commit past the threshold.
    (void)sqlite3_wal_checkpoint_v2(checkpoint_conn_->db(), "main", SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                    nullptr);
    {
      MutexLock writes(write_mu_);
      (void)sqlite3_wal_checkpoint_v2(checkpoint_conn_->db(), "main", SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                      nullptr);
    }
    lk.lock();
  }
}

void SqliteStore::NotifyChanged() {
  {
    MutexLock lk(notify_mu_);
    ++generation_;
  }
  notify_cv_.NotifyAll();
}
}  // namespace hcprp::store::sqlite
