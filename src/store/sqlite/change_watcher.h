// Notices commits made to an SQLite database file by other connections (another Store object or
// another process) so that WaitForChanges can wake without polling the change table.
//
// Linux: inotify on the database's directory reports writes to "<db>-wal" (and "<db>"). A write to
// the WAL precedes the moment the commit becomes visible (SQLite publishes it in the -shm index
// after the fsync), so each burst of events is confirmed with PRAGMA data_version on a private
// connection, re-checked with exponential backoff (1 ms .. 256 ms) for 10 s after the last event:
// the callback runs once per observed data_version change, never per event. Between bursts the
// thread sleeps in poll() without a timeout. Elsewhere, or when
// inotify is unavailable, data_version is polled every 50 ms while `has_waiters()` is true.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/result.h"
#include "store/sqlite/connection.h"

namespace hcprp::store::sqlite {

class ChangeWatcher {
 public:
  // `conn` is a connection to the database at `db_path` owned by the watcher from now on.
  // `on_change` and `has_waiters` are called from the watcher's thread.
  static Result<std::unique_ptr<ChangeWatcher>> Start(std::unique_ptr<Connection> conn,
                                                      const std::string& db_path,
                                                      std::function<void()> on_change,
                                                      std::function<bool()> has_waiters);
  ~ChangeWatcher();  // stops and joins the thread
  ChangeWatcher(const ChangeWatcher&) = delete;
  ChangeWatcher& operator=(const ChangeWatcher&) = delete;

  bool uses_inotify() const { return inotify_fd_ >= 0; }

 private:
  ChangeWatcher() = default;
  void Run();
  bool DataVersionChanged();

  // Constant after Start(); used only by the watcher thread afterwards.
  std::unique_ptr<Connection> conn_;
  std::function<void()> on_change_;
  std::function<bool()> has_waiters_;
  std::string db_name_, wal_name_;
  int inotify_fd_ = -1;
  int wake_fds_[2] = {-1, -1};  // pipe: the destructor writes to stop the thread
  int64_t last_version_ = -1;
  std::thread thread_;
};

}  // namespace hcprp::store::sqlite
