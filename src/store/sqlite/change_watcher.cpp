#include "store/sqlite/change_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#ifdef __linux__
#include <sys/inotify.h>
#endif

#include "store/sqlite/sql.h"

namespace hcprp::store::sqlite {

Result<std::unique_ptr<ChangeWatcher>> ChangeWatcher::Start(std::unique_ptr<Connection> conn,
                                                            const std::string& db_path,
                                                            std::function<void()> on_change,
                                                            std::function<bool()> has_waiters) {
  std::unique_ptr<ChangeWatcher> w(new ChangeWatcher());
  w->conn_ = std::move(conn);
  w->on_change_ = std::move(on_change);
  w->has_waiters_ = std::move(has_waiters);
  std::filesystem::path p(db_path);
  w->db_name_ = p.filename().string();
  w->wal_name_ = w->db_name_ + "-wal";
  if (pipe2(w->wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) return Error::IoError("change watcher: pipe failed");
#ifdef __linux__
  int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd >= 0) {
    std::string dir = p.parent_path().empty() ? std::string(".") : p.parent_path().string();
    if (inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE) >= 0) {
      w->inotify_fd_ = fd;
    } else {
      close(fd);  // e.g. out of watches: fall back to polling
    }
  }
#endif
  // Read after the watch is in place: a commit whose WAL write came before the watch is confirmed by
  // the polling that Run() starts with.
  HCPRP_ASSIGN_OR_RETURN(auto v, w->conn_->QueryInt(sql::kDataVersion, "PRAGMA data_version"));
  w->last_version_ = v;
  w->thread_ = std::thread([raw = w.get()] { raw->Run(); });
  return w;
}

ChangeWatcher::~ChangeWatcher() {
  if (thread_.joinable()) {
    char c = 1;
    [[maybe_unused]] auto n = write(wake_fds_[1], &c, 1);
    thread_.join();
  }
  if (inotify_fd_ >= 0) close(inotify_fd_);
  for (int fd : wake_fds_) {
    if (fd >= 0) close(fd);
  }
}

bool ChangeWatcher::DataVersionChanged() {
  auto v = conn_->QueryInt(sql::kDataVersion, "PRAGMA data_version");
  if (!v.ok() || *v == last_version_) return false;
  last_version_ = *v;
  return true;
}

void ChangeWatcher::Run() {
  using Clock = std::chrono::steady_clock;
  constexpr auto kConfirmWindow = std::chrono::seconds(10);
  bool pending = true;  // see Start()
  int backoff_ms = 1;
  Clock::time_point pending_until = Clock::now() + kConfirmWindow;
  while (true) {
    pollfd fds[2] = {{wake_fds_[0], POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int timeout = -1;
    if (inotify_fd_ < 0) {
      timeout = 50;
    } else if (pending) {
      timeout = backoff_ms;
    }
    int n = poll(fds, inotify_fd_ >= 0 ? 2 : 1, timeout);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
#ifdef __linux__
    if (inotify_fd_ >= 0 && (fds[1].revents & POLLIN) != 0) {
      alignas(inotify_event) char buf[8192];
      bool relevant = false;
      while (true) {
        ssize_t len = read(inotify_fd_, buf, sizeof(buf));
        if (len <= 0) break;
        for (char* p = buf; p < buf + len;) {
          auto* ev = reinterpret_cast<inotify_event*>(p);
          if (ev->len > 0) {
            std::string_view name(ev->name);
            if (name == wal_name_ || name == db_name_) relevant = true;
          }
          if ((ev->mask & IN_Q_OVERFLOW) != 0) relevant = true;
          p += sizeof(inotify_event) + ev->len;
        }
      }
      if (relevant) {
        pending = true;
        backoff_ms = 1;
        pending_until = Clock::now() + kConfirmWindow;
      }
    }
#endif
    if (inotify_fd_ < 0) {
      if (has_waiters_() && DataVersionChanged()) on_change_();
      continue;
    }
    if (!pending) continue;
    if (DataVersionChanged()) {
      on_change_();
      backoff_ms = 1;
    } else {
      backoff_ms = std::min(backoff_ms * 2, 256);
    }
    if (Clock::now() >= pending_until) pending = false;
  }
}

}  // namespace hcprp::store::sqlite
