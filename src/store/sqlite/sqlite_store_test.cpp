// SQLite-specific behaviour of the store: URLs and open errors, durability settings, I/O faults,
// corrupt rows, and several processes on one database file. The engine-independent semantics are in
// the conformance suite (store_conformance.cpp).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "store/sqlite/sql.h"
#include "store/sqlite/test_vfs.h"
#include "store/store.h"

extern char** environ;

namespace hcprp::store::sqlite {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

template <typename R>
::testing::AssertionResult IsOk(const R& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().ToString();
}

template <typename R>
::testing::AssertionResult HasCode(const R& r, ErrorCode code) {
  if (r.ok()) return ::testing::AssertionFailure() << "succeeded, expected " << ErrorCodeName(code);
  if (r.error().code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << r.error().ToString() << ", expected " << ErrorCodeName(code);
}

// Runs SQL on a plain sqlite3 connection (another "program" touching the file).
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  int Exec(const std::string& sql) { return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(s, 0);
      if (t != nullptr) out = reinterpret_cast<const char*>(t);
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "hcprp-sqlite-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (dir_ / "store.db").string();
    url_ = "sqlite://" + path_;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result<std::unique_ptr<Store>> Open(const std::string& url, std::chrono::milliseconds busy = 5000ms) {
    OpenOptions o{.clock = &clock_};
    o.busy_timeout = busy;
    return OpenStore(url, o);
  }
  std::unique_ptr<Store> OpenOk(const std::string& url) {
    auto s = Open(url);
    EXPECT_TRUE(IsOk(s));
    return s.ok() ? std::move(*s) : nullptr;
  }

  FakeClock clock_;
  fs::path dir_;
  std::string path_, url_;
};

TEST_F(SqliteStoreTest, BadUrls) {
  for (std::string url : {"sqlite://relative.db", "sqlite:", "sqlite:///", "sqlite:///tmp/dir/",
                          "sqlite:memory", "sqlite:///x.db?vfs=no-such-vfs", "sqlite:///x.db?journal=off",
                          "sqlite:///bad%zzescape", "sqlite:///trailing%2"}) {
    EXPECT_TRUE(HasCode(Open(url), ErrorCode::kInvalidArgument)) << url;
  }
}

TEST_F(SqliteStoreTest, UrlPathIsPercentDecoded) {
  auto s = OpenOk("sqlite://" + (dir_ / "with%20space.db").string());
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(fs::exists(dir_ / "with space.db"));
}

TEST_F(SqliteStoreTest, GarbageFileIsCorruption) {
  {
    std::ofstream f(path_, std::ios::binary);
    for (int i = 0; i < 1000; ++i) f << "this is not an sqlite database at all ";
  }
  auto s = Open(url_);
  ASSERT_TRUE(HasCode(s, ErrorCode::kCorruption));
  EXPECT_NE(s.error().message().find(path_), std::string::npos) << s.error().message();
}

TEST_F(SqliteStoreTest, UnopenablePathsAreIoErrors) {
  // A directory (tests run as root, so permissions cannot make a file unreadable).
  fs::create_directory(dir_ / "a-directory.db");
  EXPECT_TRUE(HasCode(Open("sqlite://" + (dir_ / "a-directory.db").string()), ErrorCode::kIoError));
  // A missing parent directory.
  EXPECT_TRUE(HasCode(Open("sqlite://" + (dir_ / "missing" / "x.db").string()), ErrorCode::kIoError));
  // A regular file as a parent directory.
  { std::ofstream f(dir_ / "file"); }
  EXPECT_TRUE(HasCode(Open("sqlite://" + (dir_ / "file" / "x.db").string()), ErrorCode::kIoError));
}

TEST_F(SqliteStoreTest, ForeignOrNewerDatabasesAreRefused) {
  {
    RawDb raw(path_);
    ASSERT_EQ(raw.Exec("CREATE TABLE something_else(x)"), SQLITE_OK);
  }
  auto s = Open(url_);
  ASSERT_TRUE(HasCode(s, ErrorCode::kInvalidArgument));
  EXPECT_NE(s.error().message().find("not an hcprp store"), std::string::npos);

  std::string other = (dir_ / "newer.db").string();
  ASSERT_NE(OpenOk("sqlite://" + other), nullptr);
  {
    RawDb raw(other);
    ASSERT_EQ(raw.Exec("PRAGMA user_version=99"), SQLITE_OK);
  }
  auto n = Open("sqlite://" + other);
  ASSERT_TRUE(HasCode(n, ErrorCode::kInvalidArgument));
  EXPECT_NE(n.error().message().find("newer"), std::string::npos);
}

TEST_F(SqliteStoreTest, LockedDatabaseIsUnavailableAtOpen) {
  ASSERT_NE(OpenOk(url_), nullptr);  // an hcprp store, closed again
  RawDb raw(path_);
  ASSERT_EQ(raw.Exec("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; "
                     "INSERT INTO leases VALUES('c', x'00', x'00', NULL, NULL, 1, 0);"),
            SQLITE_OK);
  auto t0 = std::chrono::steady_clock::now();
  auto s = Open(url_, 200ms);
  ASSERT_TRUE(HasCode(s, ErrorCode::kUnavailable));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
  EXPECT_NE(s.error().message().find("locked"), std::string::npos) << s.error().message();
  ASSERT_EQ(raw.Exec("ROLLBACK"), SQLITE_OK);
}

TEST_F(SqliteStoreTest, WriteBusyPastTimeoutIsUnavailable) {
  auto s = Open(url_, 100ms);
  ASSERT_TRUE(IsOk(s));
  Store& store = **s;
  ASSERT_TRUE(IsOk(store.Create("c", "p", "a", json::object{})));
  RawDb raw(path_);
  ASSERT_EQ(raw.Exec("BEGIN IMMEDIATE"), SQLITE_OK);  // another writer holds the write lock
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(HasCode(store.Create("c", "p", "b", json::object{}), ErrorCode::kUnavailable));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);
  EXPECT_TRUE(IsOk(store.Read("c", "p", "a")));  // readers are not blocked in WAL mode
  ASSERT_EQ(raw.Exec("COMMIT"), SQLITE_OK);
  EXPECT_TRUE(IsOk(store.Create("c", "p", "b", json::object{})));
}

TEST_F(SqliteStoreTest, CheckpointsRunBesideTheCommitsNotInsideThem) {
  TestVfs& vfs = TestVfs::Get();
  auto store = OpenOk(url_ + "?vfs=" + vfs.name());
  ASSERT_NE(store, nullptr);
  // 40 batches of 10 documents of 16 KiB: about 1,600 WAL pages, past the checkpoint threshold (1,000).
  const std::string filler(16 * 1024, 'x');
  for (int b = 0; b < 40; ++b) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 10; ++i) {
      ops.push_back(WriteOp::Create("d" + std::to_string(b * 10 + i), json::object{{"filler", filler}}));
    }
    uint64_t before = TestVfs::DatabaseFileSyncsOnThisThread();
    ASSERT_TRUE(IsOk(store->Batch("c", "p", std::move(ops))));
    // The committing thread synced the WAL only; a checkpoint inside the commit syncs the database file.
    EXPECT_EQ(TestVfs::DatabaseFileSyncsOnThisThread() - before, 0u) << "batch " << b;
  }
  // Meanwhile the checkpointer copied the WAL into the database file (in WAL mode nothing else writes it).
  const uintmax_t copied = 3u * 1024 * 1024;  // most of the first 1,000 pages
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (fs::file_size(path_) < copied && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GE(fs::file_size(path_), copied);
  for (int i : {0, 399}) EXPECT_TRUE(IsOk(store->Read("c", "p", "d" + std::to_string(i))));
}

TEST_F(SqliteStoreTest, UsesWalAndSyncsOncePerTransaction) {
  TestVfs& vfs = TestVfs::Get();
  auto store = OpenOk(url_ + "?vfs=" + vfs.name());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawDb(path_).Text("PRAGMA journal_mode"), "wal");

  uint64_t before = vfs.syncs();
  ASSERT_TRUE(IsOk(store->Create("c", "p", "single", json::object{})));
  EXPECT_EQ(vfs.syncs() - before, 1u);  // synchronous=FULL: the WAL is synced at every commit

  before = vfs.syncs();
  std::vector<WriteOp> ops;
  for (int i = 0; i < 5; ++i) ops.push_back(WriteOp::Create("b" + std::to_string(i), json::object{{"i", i}}));
  ASSERT_TRUE(IsOk(store->Batch("c", "p", std::move(ops))));
  EXPECT_EQ(vfs.syncs() - before, 1u);  // five writes, one transaction, one sync

  before = vfs.syncs();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(IsOk(store->Create("c", "p", "s" + std::to_string(i), json::object{})));
  EXPECT_EQ(vfs.syncs() - before, 5u);

  before = vfs.syncs();
  EXPECT_TRUE(IsOk(store->Read("c", "p", "single")));
  EXPECT_TRUE(store->Create("c", "p", "single", json::object{}).error().IsAlreadyExists());  // rolled back
  EXPECT_EQ(vfs.syncs() - before, 0u);
}

TEST_F(SqliteStoreTest, CorruptStoredBodyIsCorruptionNotACrash) {
  auto store = OpenOk(url_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("c", "p", "bad", json::object{{"resourceType", "t"}})));
  ASSERT_TRUE(IsOk(store->Create("c", "p", "good", json::object{{"resourceType", "t"}})));
  {
    RawDb raw(path_);
    ASSERT_EQ(raw.Exec("UPDATE documents SET body='{\"unterminated' WHERE id=CAST('bad' AS BLOB)"),
              SQLITE_OK);
  }
  EXPECT_TRUE(HasCode(store->Read("c", "p", "bad"), ErrorCode::kCorruption));
  EXPECT_TRUE(HasCode(store->Patch("c", "p", "bad", {}), ErrorCode::kCorruption));
  EXPECT_TRUE(HasCode(store->Query({.container = "c", .partition_key = "p"}), ErrorCode::kCorruption));
  // Read as text, the page comes back and only that body fails to parse.
  auto page = store->Query({.container = "c", .partition_key = "p", .body_text = true});
  ASSERT_TRUE(IsOk(page));
  ASSERT_EQ(page->documents.size(), 2u);
  EXPECT_TRUE(HasCode(ParseBodyText(page->documents[0].body_text), ErrorCode::kCorruption));
  EXPECT_TRUE(IsOk(ParseBodyText(page->documents[1].body_text)));
  EXPECT_TRUE(IsOk(store->Read("c", "p", "good")));
  EXPECT_TRUE(IsOk(store->Replace("c", "p", "bad", json::object{})));  // a blind replace repairs it
  EXPECT_TRUE(IsOk(store->Read("c", "p", "bad")));
}

TEST_F(SqliteStoreTest, IoErrorFailsTheCallAndLosesNothingCommitted) {
  TestVfs& vfs = TestVfs::Get();
  std::string url = url_ + "?vfs=" + vfs.name();
  auto store = OpenOk(url);
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(IsOk(store->Create("c", "p", "before" + std::to_string(i), json::object{})));

  vfs.FailWrites(true);
  EXPECT_TRUE(HasCode(store->Create("c", "p", "lost", json::object{}), ErrorCode::kIoError));
  EXPECT_TRUE(
      HasCode(store->Batch("c", "p", {WriteOp::Create("lost2", json::object{})}), ErrorCode::kIoError));
  vfs.ClearFaults();
  EXPECT_TRUE(HasCode(store->Read("c", "p", "lost"), ErrorCode::kNotFound));
  EXPECT_TRUE(IsOk(store->Read("c", "p", "before7")));
  EXPECT_TRUE(IsOk(store->Create("c", "p", "after", json::object{})));  // the store recovers

  vfs.FailSyncs(true);
  EXPECT_TRUE(HasCode(store->Create("c", "p", "unsynced", json::object{}), ErrorCode::kIoError));
  vfs.ClearFaults();
  EXPECT_TRUE(IsOk(store->Create("c", "p", "after2", json::object{})));

  store.reset();
  store = OpenOk(url);
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(IsOk(store->Read("c", "p", "before" + std::to_string(i))));
  EXPECT_TRUE(IsOk(store->Read("c", "p", "after")));
  EXPECT_TRUE(IsOk(store->Read("c", "p", "after2")));
  EXPECT_TRUE(HasCode(store->Read("c", "p", "lost"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store->Read("c", "p", "lost2"), ErrorCode::kNotFound));
  // The feed holds exactly the committed writes, in order.
  auto feed = store->ReadChanges("c", "", 100);
  ASSERT_TRUE(IsOk(feed));
  std::vector<std::string> ids;
  for (auto& ch : feed->changes) ids.push_back(ch.document.id);
  ASSERT_EQ(ids.size(), 22u) << "feed has " << ids.size();
  EXPECT_EQ(ids[20], "after");
  EXPECT_EQ(ids[21], "after2");
  EXPECT_EQ(RawDb(path_).Text("PRAGMA integrity_check"), "ok");
}

// Every query the engine runs is answered from an index on the extracted columns: no statement
// scans the documents table (and so none looks into JSON bodies).
TEST_F(SqliteStoreTest, QueriesUseIndexes) {
  ASSERT_NE(OpenOk(url_), nullptr);
  auto plan = [&](const std::string& q) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    std::string out;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + q).c_str(), -1, &s, nullptr), SQLITE_OK) << q;
    while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
      out += reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
      out += "; ";
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
  };
  std::vector<std::string> queries = {
      sql::kReadDoc,       sql::kLoadDoc,        sql::kReadChanges,   sql::kMaxSeq,        sql::kHasChanges,
      sql::kSelectExpired, sql::kFirstPartition, sql::kNextPartition, sql::kPartitionLive, sql::kLeaseGet};
  for (int shape = 0; shape < sql::kQueryShapes; ++shape) {
    if (!(shape & (sql::kQueryPartition | sql::kQueryType))) continue;
    if ((shape & sql::kQueryPrefixUpper) && !(shape & sql::kQueryPrefix)) continue;
    queries.push_back(sql::QuerySql(shape));
  }
  for (const auto& q : queries) {
    std::string p = plan(q);
    EXPECT_NE(p.find("USING"), std::string::npos) << q << "\n  plan: " << p;
    EXPECT_EQ(p.find("SCAN documents"), std::string::npos) << q << "\n  plan: " << p;
    EXPECT_EQ(p.find("SCAN changes"), std::string::npos) << q << "\n  plan: " << p;
  }
}

TEST_F(SqliteStoreTest, InMemoryStoresArePrivate) {
  auto a = OpenOk("sqlite::memory:");
  auto b = OpenOk("sqlite::memory:");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(IsOk(a->Create("c", "p", "x", json::object{})));
  EXPECT_TRUE(HasCode(b->Read("c", "p", "x"), ErrorCode::kNotFound));
}

TEST_F(SqliteStoreTest, ManyThreadsReadWhileWriting) {
  auto store = OpenOk(url_);
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(IsOk(store->Create("c", "p", std::to_string(i), json::object{{"i", i}})));
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  std::atomic<int> reads{0};
  for (int t = 0; t < 40; ++t) {  // more threads than pooled reader connections
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        auto d = store->Read("c", "p", std::to_string((t * 7 + reads.load()) % 50));
        ASSERT_TRUE(IsOk(d));
        reads++;
      }
    });
  }
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(IsOk(store->Upsert("c", "p", std::to_string(i), json::object{{"i", -i}})));
  }
  while (reads.load() < 2000) std::this_thread::sleep_for(1ms);
  stop = true;
  for (auto& t : readers) t.join();
}

// ------------------------------------------------------------------------------------------------
// Several processes

// A child process running store_test_helper, with its stdout on a pipe.
class Helper {
 public:
  explicit Helper(const std::vector<std::string>& args) {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    std::vector<std::string> all = {HCPRP_STORE_TEST_HELPER};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    fd_ = fds[0];
  }
  ~Helper() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    close(fd_);
  }
  // The next line, or nullopt at EOF or after `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout = 30s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  void Kill(int sig) { kill(pid_, sig); }
  int Wait() {
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

TEST_F(SqliteStoreTest, KillDashNineLosesNothingCommitted) {
  ASSERT_NE(OpenOk(url_), nullptr);  // create the database
  std::vector<std::string> reported;
  {
    Helper child({"write", url_, "resources", "sub", "doc", "1000000", "hang"});
    while (reported.size() < 300) {
      auto line = child.ReadLine();
      ASSERT_TRUE(line) << "helper stopped after " << reported.size();
      ASSERT_EQ(line->rfind("error", 0), std::string::npos) << *line;
      reported.push_back(*line);
    }
    child.Kill(SIGKILL);  // in the middle of its writes
    int status = child.Wait();
    EXPECT_TRUE(WIFSIGNALED(status));
    // Anything it reported before dying is committed; more may be.
    while (auto line = child.ReadLine(1s)) reported.push_back(*line);
  }
  EXPECT_EQ(RawDb(path_).Text("PRAGMA integrity_check"), "ok");
  auto store = OpenOk(url_);
  ASSERT_NE(store, nullptr);
  for (const auto& id : reported) EXPECT_TRUE(IsOk(store->Read("resources", "sub", id))) << id;
  // The feed has every reported create, in order, without gaps in what was reported.
  std::string cont;
  std::vector<std::string> feed;
  while (true) {
    auto p = store->ReadChanges("resources", cont, 500);
    ASSERT_TRUE(IsOk(p));
    if (p->changes.empty()) break;
    cont = p->continuation;
    for (auto& c : p->changes) feed.push_back(c.document.id);
  }
  ASSERT_GE(feed.size(), reported.size());
  for (size_t i = 0; i < reported.size(); ++i) EXPECT_EQ(feed[i], reported[i]);
  // And the database takes writes again.
  EXPECT_TRUE(IsOk(store->Create("resources", "sub", "after-crash", json::object{})));
}

// Group commit: concurrent batches share transactions and syncs, and each keeps its own outcome: a
// batch whose precondition fails leaves nothing behind while the batches committed beside it stay.
TEST_F(SqliteStoreTest, GroupCommitKeepsEachBatchAllOrNothing) {
  TestVfs& vfs = TestVfs::Get();
  auto store = OpenOk(url_ + "?vfs=" + vfs.name());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("c", "p", "taken", json::object{})));
  constexpr int kThreads = 8, kBatches = 40;
  vfs.DelaySyncs(2000);  // a slow disk: writers arriving during a sync queue for the next group
  uint64_t syncs_before = vfs.syncs();
  std::atomic<int> committed{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBatches; ++i) {
        std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        bool doomed = i % 3 == 2;
        std::vector<WriteOp> ops{WriteOp::Create(name + "-a", json::object{{"i", i}}),
                                 WriteOp::Create(name + "-b", json::object{{"i", i}})};
        if (doomed) ops.push_back(WriteOp::Create("taken", json::object{}));
        auto r = store->Batch("c", "p", std::move(ops));
        if (doomed) {
          if (r.ok() || !r.error().IsAlreadyExists() || FailedBatchIndex(r.error()) != 2u) ++wrong;
        } else if (!r.ok() || r->documents.size() != 2) {
          ++wrong;
        } else {
          ++committed;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  vfs.ClearFaults();
  uint64_t syncs = vfs.syncs() - syncs_before;
  EXPECT_EQ(wrong.load(), 0);
  ASSERT_EQ(committed.load(), kThreads * (kBatches - kBatches / 3));
  // Fewer syncs than commits: batches shared them.
  EXPECT_LT(syncs, static_cast<uint64_t>(committed.load()));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kBatches; ++i) {
      std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
      bool doomed = i % 3 == 2;
      for (const char* half : {"-a", "-b"}) {
        auto d = store->Read("c", "p", name + half);
        if (doomed) {
          EXPECT_TRUE(HasCode(d, ErrorCode::kNotFound)) << name << half;
        } else {
          EXPECT_TRUE(IsOk(d)) << name << half;
        }
      }
    }
  }
  // The feed holds each committed batch's two creates next to each other, nothing of the failed ones.
  auto feed = store->ReadChanges("c", "", 10000);
  ASSERT_TRUE(IsOk(feed));
  ASSERT_EQ(feed->changes.size(), 1u + 2u * static_cast<size_t>(committed.load()));
  for (size_t i = 1; i + 1 < feed->changes.size(); i += 2) {
    const std::string& a = feed->changes[i].document.id;
    const std::string& b = feed->changes[i + 1].document.id;
    ASSERT_EQ(a.substr(a.size() - 2), "-a");
    EXPECT_EQ(b, a.substr(0, a.size() - 2) + "-b");
  }
}

// A failed commit fails every batch of the group, and none of them is visible afterwards, while a
// group committed before it stays.
TEST_F(SqliteStoreTest, GroupCommitWhoseSyncFailsAcknowledgesNone) {
  TestVfs& vfs = TestVfs::Get();
  std::string url = url_ + "?vfs=" + vfs.name();
  auto store = OpenOk(url);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("c", "p", "before", json::object{})));
  vfs.FailWrites(true);
  std::atomic<int> acknowledged{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      auto r = store->Batch("c", "p", {WriteOp::Create("x" + std::to_string(t), json::object{})});
      (r.ok() ? acknowledged : failed)++;
    });
  }
  for (auto& th : threads) th.join();
  vfs.ClearFaults();
  EXPECT_EQ(acknowledged.load(), 0);
  EXPECT_EQ(failed.load(), 6);
  store.reset();
  store = OpenOk(url);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(IsOk(store->Read("c", "p", "before")));
  for (int t = 0; t < 6; ++t)
    EXPECT_TRUE(HasCode(store->Read("c", "p", "x" + std::to_string(t)), ErrorCode::kNotFound));
  EXPECT_TRUE(IsOk(store->Create("c", "p", "after", json::object{})));
}

// kill -9 while threads of another process commit batches in groups: every batch it acknowledged
// is there whole, every other batch is whole or absent, and the planned failures left nothing.
TEST_F(SqliteStoreTest, KillDuringGroupCommitLosesOnlyUnacknowledgedBatches) {
  ASSERT_NE(OpenOk(url_), nullptr);
  std::vector<std::string> ok, failed;
  {
    Helper child({"group-write", url_, "resources", "sub", "8", "hang"});
    while (ok.size() < 400) {
      auto line = child.ReadLine();
      ASSERT_TRUE(line) << "helper stopped after " << ok.size();
      ASSERT_EQ(line->rfind("error", 0), std::string::npos) << *line;
      if (line->rfind("ok ", 0) == 0) ok.push_back(line->substr(3));
      if (line->rfind("failed ", 0) == 0) failed.push_back(line->substr(7));
    }
    child.Kill(SIGKILL);
    int status = child.Wait();
    EXPECT_TRUE(WIFSIGNALED(status));
  }
  EXPECT_EQ(RawDb(path_).Text("PRAGMA integrity_check"), "ok");
  auto store = OpenOk(url_);
  ASSERT_NE(store, nullptr);
  for (const auto& name : ok) {
    EXPECT_TRUE(IsOk(store->Read("resources", "sub", name + "-a"))) << name;
    EXPECT_TRUE(IsOk(store->Read("resources", "sub", name + "-b"))) << name;
  }
  for (const auto& name : failed) {
    EXPECT_TRUE(HasCode(store->Read("resources", "sub", name + "-a"), ErrorCode::kNotFound)) << name;
  }
  // Whatever else committed is whole: every "-a" has its "-b".
  size_t seen = 0;
  Status listed =
      ForEachDocument(*store, {.container = "resources", .partition_key = "sub"}, [&](const Document& d) {
        if (d.id.size() < 2 || d.id.substr(d.id.size() - 2) != "-a") return;
        ++seen;
        std::string b = d.id.substr(0, d.id.size() - 2) + "-b";
        EXPECT_TRUE(IsOk(store->Read("resources", "sub", b))) << b;
      });
  EXPECT_TRUE(IsOk(listed));
  EXPECT_GE(seen, ok.size());
  EXPECT_TRUE(IsOk(store->Create("resources", "sub", "after-crash", json::object{})));
}

TEST_F(SqliteStoreTest, TwoProcessesSeeEachOthersWritesAndWakeEachOther) {
  SystemClock real_clock;
  OpenOptions o{.clock = &real_clock};
  auto opened = OpenStore(url_, o);
  ASSERT_TRUE(IsOk(opened));
  Store& store = **opened;
  std::string pong = store.ReadChanges("pong", kChangeFeedNow, 1)->continuation;

  Helper child({"wait-then-write", url_, "ping", "20000", "pong"});
  ASSERT_EQ(child.ReadLine(), "ready");
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(IsOk(store.Create("ping", "p", "hello", json::object{})));
  auto woke = child.ReadLine();
  ASSERT_TRUE(woke);
  ASSERT_EQ(woke->rfind("woke 1 ", 0), 0u) << *woke;
  EXPECT_LT(std::stoi(woke->substr(7)), 5000) << *woke;  // woken by the commit, not the timeout

  auto t0 = std::chrono::steady_clock::now();
  auto w = store.WaitForChanges("pong", pong, 20s);
  ASSERT_TRUE(IsOk(w));
  EXPECT_TRUE(*w);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  auto changes = store.ReadChanges("pong", pong, 10);
  ASSERT_TRUE(IsOk(changes));
  ASSERT_EQ(changes->changes.size(), 1u);
  EXPECT_EQ(changes->changes[0].document.id, "reply");
  EXPECT_TRUE(IsOk(store.Read("pong", "p", "reply")));
  EXPECT_EQ(child.ReadLine(), "done");
  EXPECT_EQ(child.Wait(), 0);
}

TEST_F(SqliteStoreTest, TwoProcessesWriteConcurrently) {
  auto store = OpenOk(url_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("c", "p", "counter", json::object{{"n", 0}})));
  std::string cont = store->ReadChanges("c", kChangeFeedNow, 1)->continuation;
  constexpr int kEach = 150;
  Helper inc({"increment", url_, "c", "p", "counter", std::to_string(kEach)});
  Helper writer({"write", url_, "c", "p", "child-", std::to_string(kEach)});
  for (int i = 0; i < kEach; ++i) {
    ASSERT_TRUE(IsOk(store->Patch("c", "p", "counter", {{PatchOp::Kind::kIncrement, "/n", 1}})));
    ASSERT_TRUE(IsOk(store->Create("c", "p", "parent-" + std::to_string(i), json::object{})));
  }
  std::optional<std::string> line;
  while ((line = writer.ReadLine()) && *line != "done") {
    ASSERT_EQ(line->rfind("error", 0), std::string::npos) << *line;
  }
  EXPECT_EQ(inc.ReadLine(), "done");
  EXPECT_EQ(inc.Wait(), 0);
  EXPECT_EQ(writer.Wait(), 0);
  auto d = store->Read("c", "p", "counter");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->body.as_object().at("n").as_int64(), 2 * kEach);
  // Every document both processes wrote is in the feed once, in one strictly increasing order.
  std::set<std::string> created;
  size_t replaces = 0;
  uint64_t last = 0;
  while (true) {
    auto p = store->ReadChanges("c", cont, 100);
    ASSERT_TRUE(IsOk(p));
    if (p->changes.empty()) break;
    cont = p->continuation;
    for (auto& c : p->changes) {
      EXPECT_GT(c.sequence, last);
      last = c.sequence;
      if (c.kind == Change::Kind::kCreate) {
        EXPECT_TRUE(created.insert(c.document.id).second);
      }
      if (c.kind == Change::Kind::kReplace) ++replaces;
    }
  }
  EXPECT_EQ(created.size(), 2u * kEach);
  EXPECT_EQ(replaces, 1u);  // the counter's latest version; the feed does not keep superseded ones
}

}  // namespace
}  // namespace hcprp::store::sqlite
