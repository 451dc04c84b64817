// A SQLite VFS for tests and benchmarks: forwards to the default VFS, counts syncs and writes, and
// fails writes or syncs on demand (leveldb's FaultInjectionTestEnv, for SQLite). Select it with
// OpenStore("sqlite:///path.db?vfs=" + TestVfs::Get().name(), ...).
#pragma once

#include <atomic>
#include <cstdint>

namespace hcprp::store::sqlite {

class TestVfs {
 public:
  // Registers the VFS (once, not as the default) and returns it. Thread-safe.
  static TestVfs& Get();

  const char* name() const { return "hcprp-test"; }

  // Counters over every file opened through this VFS.
  uint64_t syncs() const { return syncs_.load(); }
  uint64_t writes() const { return writes_.load(); }
  // Syncs of a database file (not of its WAL) made by the calling thread through this VFS: only a
  // checkpoint syncs the database file in WAL mode.
  static uint64_t DatabaseFileSyncsOnThisThread();

  // From now on every xWrite / xSync fails with SQLITE_IOERR_WRITE / SQLITE_IOERR_FSYNC.
  void FailWrites(bool on) { fail_writes_.store(on); }
  void FailSyncs(bool on) { fail_syncs_.store(on); }
  void ClearFaults() {
    fail_writes_.store(false);
    fail_syncs_.store(false);
    sync_delay_us_.store(0);
  }
  // From now on every xSync first sleeps this long (a slow disk: lets concurrent writers queue up).
  void DelaySyncs(uint64_t microseconds) { sync_delay_us_.store(microseconds); }

  // Used by the VFS callbacks.
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<bool> fail_writes_{false};
  std::atomic<bool> fail_syncs_{false};
  std::atomic<uint64_t> sync_delay_us_{0};

 private:
  TestVfs() = default;
};

}  // namespace hcprp::store::sqlite
