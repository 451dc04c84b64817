#include "store/sqlite/test_vfs.h"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace hcprp::store::sqlite {
namespace {

sqlite3_vfs* g_real = nullptr;
TestVfs* g_self = nullptr;

struct ShimFile {
  sqlite3_file base;
  sqlite3_file* real;  // points just past this struct
  bool main_db;        // the database file (not its WAL or a journal)
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<ShimFile*>(f)->real; }

int Close(sqlite3_file* f) {
  int rc = Real(f)->pMethods->xClose(Real(f));
  return rc;
}
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (g_self->fail_writes_.load()) return SQLITE_IOERR_WRITE;
  g_self->writes_.fetch_add(1);
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (g_self->fail_writes_.load()) return SQLITE_IOERR_TRUNCATE;
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
thread_local uint64_t t_db_syncs = 0;

int Sync(sqlite3_file* f, int flags) {
  if (uint64_t us = g_self->sync_delay_us_.load(); us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  if (g_self->fail_syncs_.load()) return SQLITE_IOERR_FSYNC;
  g_self->syncs_.fetch_add(1);
  if (reinterpret_cast<ShimFile*>(f)->main_db) ++t_db_syncs;
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) { return Real(f)->pMethods->xFileSize(Real(f), size); }
int Lock(sqlite3_file* f, int l) { return Real(f)->pMethods->xLock(Real(f), l); }
int Unlock(sqlite3_file* f, int l) { return Real(f)->pMethods->xUnlock(Real(f), l); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return Real(f)->pMethods->xDeviceCharacteristics(Real(f)); }
int ShmMap(sqlite3_file* f, int pg, int sz, int extend, void volatile** p) {
  return Real(f)->pMethods->xShmMap(Real(f), pg, sz, extend, p);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** pp) {
  return Real(f)->pMethods->xFetch(Real(f), off, amt, pp);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

sqlite3_io_methods MakeMethods(int version) {
  sqlite3_io_methods m;
  std::memset(&m, 0, sizeof(m));
  m.iVersion = version;
  m.xClose = Close;
  m.xRead = Read;
  m.xWrite = Write;
  m.xTruncate = Truncate;
  m.xSync = Sync;
  m.xFileSize = FileSize;
  m.xLock = Lock;
  m.xUnlock = Unlock;
  m.xCheckReservedLock = CheckReservedLock;
  m.xFileControl = FileControl;
  m.xSectorSize = SectorSize;
  m.xDeviceCharacteristics = DeviceCharacteristics;
  if (version >= 2) {
    m.xShmMap = ShmMap;
    m.xShmLock = ShmLock;
    m.xShmBarrier = ShmBarrier;
    m.xShmUnmap = ShmUnmap;
  }
  if (version >= 3) {
    m.xFetch = Fetch;
    m.xUnfetch = Unfetch;
  }
  return m;
}

sqlite3_io_methods g_methods[4];

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  auto* shim = reinterpret_cast<ShimFile*>(f);
  shim->real = reinterpret_cast<sqlite3_file*>(shim + 1);
  shim->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  int rc = g_real->xOpen(g_real, name, shim->real, flags, out_flags);
  if (rc != SQLITE_OK || shim->real->pMethods == nullptr) {
    shim->base.pMethods = nullptr;
    return rc;
  }
  int v = shim->real->pMethods->iVersion;
  shim->base.pMethods = &g_methods[v < 1 ? 1 : (v > 3 ? 3 : v)];
  return rc;
}

int Delete(sqlite3_vfs*, const char* name, int sync) { return g_real->xDelete(g_real, name, sync); }
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_real->xAccess(g_real, name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void DlError(sqlite3_vfs*, int n, char* msg) { g_real->xDlError(g_real, n, msg); }
void (*DlSym(sqlite3_vfs*, void* h, const char* sym))(void) { return g_real->xDlSym(g_real, h, sym); }
void DlClose(sqlite3_vfs*, void* h) { g_real->xDlClose(g_real, h); }
int Randomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int Sleep(sqlite3_vfs*, int us) { return g_real->xSleep(g_real, us); }
int CurrentTime(sqlite3_vfs*, double* t) { return g_real->xCurrentTime(g_real, t); }
int GetLastError(sqlite3_vfs*, int n, char* out) { return g_real->xGetLastError(g_real, n, out); }
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* t) { return g_real->xCurrentTimeInt64(g_real, t); }

sqlite3_vfs g_vfs;

}  // namespace

uint64_t TestVfs::DatabaseFileSyncsOnThisThread() { return t_db_syncs; }

TestVfs& TestVfs::Get() {
  static std::once_flag once;
  static TestVfs* self = nullptr;
  std::call_once(once, [] {
    self = new TestVfs();  // lives as long as the process: SQLite keeps a pointer to the VFS
    g_self = self;
    sqlite3_initialize();
    g_real = sqlite3_vfs_find(nullptr);
    for (int v = 1; v <= 3; ++v) g_methods[v] = MakeMethods(v);
    std::memset(&g_vfs, 0, sizeof(g_vfs));
    g_vfs.iVersion = 2;
    g_vfs.szOsFile = static_cast<int>(sizeof(ShimFile)) + g_real->szOsFile;
    g_vfs.mxPathname = g_real->mxPathname;
    g_vfs.zName = "hcprp-test";
    g_vfs.xOpen = Open;
    g_vfs.xDelete = Delete;
    g_vfs.xAccess = Access;
    g_vfs.xFullPathname = FullPathname;
    g_vfs.xDlOpen = DlOpen;
    g_vfs.xDlError = DlError;
    g_vfs.xDlSym = DlSym;
    g_vfs.xDlClose = DlClose;
    g_vfs.xRandomness = Randomness;
    g_vfs.xSleep = Sleep;
    g_vfs.xCurrentTime = CurrentTime;
    g_vfs.xGetLastError = GetLastError;
    g_vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    sqlite3_vfs_register(&g_vfs, 0);
  });
  return *self;
}

}  // namespace hcprp::store::sqlite
