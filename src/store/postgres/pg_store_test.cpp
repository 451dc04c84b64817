// PostgreSQL-specific behaviour: URLs, schema migrations (idempotent, concurrent, newer schema
// refused), a server restart under an open store, and the change feed when a slow transaction
// that wrote its change first commits after faster ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <barrier>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/json.h"
#include "store/document_logic.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_sql.h"
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_store_internal.h"
#include "store/postgres/pg_test_server.h"
#include "store/store.h"

namespace hcprp::store::postgres {
namespace {

using namespace std::chrono_literals;

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

json::value Body(int i) {
  json::object o;
  o["i"] = i;
  return o;
}

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    server_ = PgTestServer::Shared(&error);
    ASSERT_NE(server_, nullptr) << "cannot start the PostgreSQL test server: " << error;
    static std::atomic<int> counter{0};
    schema_ = "pgt_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    url_ = server_->Url() + "?schema=" + schema_;
  }
  void TearDown() override {
    if (server_ != nullptr) (void)server_->Exec("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
  }

  std::unique_ptr<Store> Open() {
    auto s = OpenStore(url_, {.clock = &clock_});
    EXPECT_TRUE(IsOk(s));
    return s.ok() ? std::move(*s) : nullptr;
  }
  // A raw connection with the store's schema on its search_path.
  std::unique_ptr<PgConnection> Raw() {
    auto c = PgConnection::Connect(server_->Url(), "-c search_path=" + schema_, 10);
    EXPECT_TRUE(IsOk(c));
    return c.ok() ? std::move(*c) : nullptr;
  }
  int64_t QueryInt(const std::string& q) {
    auto c = Raw();
    if (c == nullptr) return -1;
    auto r = c->ExecSql(q, "test query");
    EXPECT_TRUE(IsOk(r));
    if (!r.ok() || r->rows() != 1) return -1;
    return std::stoll(r->String(0, 0));
  }

  FakeClock clock_;
  PgTestServer* server_ = nullptr;
  std::string schema_, url_;
};

// Stored bodies are compressed with lz4 when the server has it (Debian's has), pglz otherwise.
TEST_F(PgStoreTest, BodiesAreCompressedWithLz4WhenTheServerHasIt) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  const bool has_lz4 = c->ExecSql("CREATE TEMP TABLE lz4_probe (b bytea COMPRESSION lz4)", "probe").ok();
  const int64_t expected = has_lz4 ? 2 : 0;
  EXPECT_EQ(QueryInt("SELECT count(*) FROM pg_attribute WHERE attname = 'body' AND attcompression = 'l' "
                     "AND attrelid IN ('documents'::regclass, 'changes'::regclass)"),
            expected);
  // A body large enough to be compressed reads back whole.
  json::object big;
  big["text"] = std::string(20000, 'x');
  ASSERT_TRUE(IsOk(s->Create("resources", "p", "big", json::value(big))));
  auto read = s->Read("resources", "p", "big");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->body.as_object().at("text").as_string().size(), 20000u);
  if (has_lz4) {
    EXPECT_EQ(QueryInt("SELECT count(*) FROM documents WHERE pg_column_compression(body) = 'lz4'"), 1);
  }
}

TEST(PgUrlTest, ParsesSchemaAndKeepsLibpqParameters) {
  auto t = ParsePostgresUrl("postgresql://u@h:5432/db?sslmode=disable&schema=abc_1&connect_timeout=3");
  ASSERT_TRUE(IsOk(t));
  EXPECT_EQ(t->schema, "abc_1");
  EXPECT_EQ(t->libpq_url, "postgresql://u@h:5432/db?sslmode=disable&connect_timeout=3");
  auto d = ParsePostgresUrl("postgres://u@h/db");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->schema, "hcprp");
  EXPECT_EQ(d->libpq_url, "postgres://u@h/db");
  FakeClock clock;
  EXPECT_TRUE(HasCode(ParsePostgresUrl("postgresql://u@h/db?schema=Bad-Name"), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(ParsePostgresUrl("postgresql://u@h/db?schema="), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(OpenStore("postgresql://u@h/db?schema=x;drop", {.clock = &clock}),
                      ErrorCode::kInvalidArgument));
  EXPECT_TRUE(HasCode(OpenStore("postgresql://u@h/db", {}), ErrorCode::kInvalidArgument));  // no clock
}

TEST(PgUrlTest, ParsesTheQueryTimeout) {
  auto d = ParsePostgresUrl("postgresql://u@h/db");
  ASSERT_TRUE(IsOk(d));
  EXPECT_EQ(d->query_timeout, 10000ms);
  auto t = ParsePostgresUrl("postgresql://u@h/db?query_timeout_ms=250&sslmode=disable");
  ASSERT_TRUE(IsOk(t));
  EXPECT_EQ(t->query_timeout, 250ms);
  EXPECT_EQ(t->libpq_url, "postgresql://u@h/db?sslmode=disable");
  auto none = ParsePostgresUrl("postgresql://u@h/db?query_timeout_ms=0");
  ASSERT_TRUE(IsOk(none));
  EXPECT_EQ(none->query_timeout, 0ms);
  for (const char* bad : {"-1", "", "10s", "99999999999"}) {
    EXPECT_TRUE(HasCode(ParsePostgresUrl(std::string("postgresql://u@h/db?query_timeout_ms=") + bad),
                        ErrorCode::kInvalidArgument))
        << bad;
  }
}

TEST(PgUrlTest, SeveralHostsGoToTheOneThatTakesWrites) {
  auto ha = ParsePostgresUrl("postgresql://u@h1:5432,h2:5433/db?schema=s1");
  ASSERT_TRUE(IsOk(ha));
  EXPECT_EQ(ha->libpq_url, "postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write");
  EXPECT_EQ(ha->schema, "s1");
  auto chosen = ParsePostgresUrl("postgresql://u@h1,h2/db?target_session_attrs=primary&connect_timeout=2");
  ASSERT_TRUE(IsOk(chosen));
  EXPECT_EQ(chosen->libpq_url, "postgresql://u@h1,h2/db?target_session_attrs=primary&connect_timeout=2");
  auto one = ParsePostgresUrl("postgresql://u@h1:5432/db");
  ASSERT_TRUE(IsOk(one));
  EXPECT_EQ(one->libpq_url, "postgresql://u@h1:5432/db");
}

TEST(PgUrlTest, UnreachableServerIsUnavailable) {
  FakeClock clock;
  auto t0 = std::chrono::steady_clock::now();
  // Port 1 on loopback: connection refused at once.
  EXPECT_TRUE(
      HasCode(OpenStore("postgresql://postgres@127.0.0.1:1/db", {.clock = &clock}), ErrorCode::kUnavailable));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(PgConnectTest, TellsAServerThatDidNotAnswerFromOneThatTurnedTheSessionDown) {
  // Nothing listens on port 1: refused, no server started anything.
  auto refused = PgConnection::Connect("postgresql://postgres@127.0.0.1:1/db", "", 5, std::nullopt);
  ASSERT_FALSE(IsOk(refused));
  EXPECT_TRUE(NoServerAnswered(refused.error().message())) << refused.error().message();

  // A server that starts a session and turns it down: read-only, where writes are asked for.
  auto server = PgTestServer::Start();
  ASSERT_TRUE(IsOk(server)) << "cannot start the PostgreSQL test server";
  auto target = ParsePostgresUrl((*server)->Url());
  ASSERT_TRUE(IsOk(target));
  std::string url = target->libpq_url;
  url += url.find('?') == std::string::npos ? "?" : "&";
  url += "target_session_attrs=read-write";
  auto read_only = PgConnection::Connect(url, "-c default_transaction_read_only=on", 5, std::nullopt);
  ASSERT_FALSE(IsOk(read_only));
  EXPECT_FALSE(NoServerAnswered(read_only.error().message())) << read_only.error().message();
  ASSERT_TRUE(IsOk(PgConnection::Connect(url, "", 5, std::nullopt)));

  // Several servers: not answered only if none answered.
  EXPECT_TRUE(NoServerAnswered(
      "connect to PostgreSQL: connection to server at \"10.0.0.1\", port 5432 failed: Connection refused\n"
      "\tIs the server running on that host and accepting TCP/IP connections?\n"
      "connection to server at \"10.0.0.2\", port 5432 failed: Connection refused"));
  EXPECT_FALSE(NoServerAnswered(
      "connect to PostgreSQL: connection to server at \"10.0.0.1\", port 5432 failed: Connection refused\n"
      "connection to server at \"10.0.0.2\", port 5432 failed: session is read-only"));
  EXPECT_TRUE(NoServerAnswered(
      "connect to PostgreSQL: connection to server at \"10.0.0.1\", port 5432 failed: timeout expired\n"
      "connection to server at \"10.0.0.2\", port 5432 failed: Connection refused"));
  EXPECT_FALSE(NoServerAnswered(
      "connect to PostgreSQL: connection to server at \"10.0.0.1\", port 5432 failed: timeout expired\n"
      "connection to server at \"10.0.0.2\", port 5432 failed: FATAL:  the database system is starting up"));
  EXPECT_FALSE(NoServerAnswered("connect to PostgreSQL: out of memory"));
}

// While no server takes writes (a standby being promoted), each new session the store asks for costs
// the server a process start: the store starts them only as its back-off allows, not one per call.
TEST(PgRestartTest, WhileNoServerTakesWritesSessionsAreAttemptedOnlyAsTheBackoffAllows) {
  auto server = PgTestServer::Start();
  ASSERT_TRUE(IsOk(server)) << "cannot start the PostgreSQL test server";
  FakeClock clock;
  // As the URL of several servers gets it (ParsePostgresUrl).
  auto opened = OpenStore((*server)->Url() + "?target_session_attrs=read-write", {.clock = &clock});
  ASSERT_TRUE(IsOk(opened));
  Store& store = **opened;
  ASSERT_TRUE(IsOk(store.Create("resources", "p", "a", Body(1))));
  auto sessions = [&]() -> int64_t {
    auto c = PgConnection::Connect((*server)->Url(), "", 5, std::nullopt);
    if (!c.ok()) return -1;
    auto r = (*c)->ExecSql(
        "SELECT pg_stat_force_next_flush(), sessions FROM pg_stat_database WHERE datname = "
        "current_database()",
        "");
    return r.ok() && r->rows() == 1 ? std::stoll(r->String(0, 1)) : -1;
  };
  // Read-only as pg_auto_failover makes a standby it promotes, and the store's sessions gone.
  ASSERT_TRUE(IsOk((*server)->Exec("ALTER SYSTEM SET default_transaction_read_only = on")));
  ASSERT_TRUE(IsOk((*server)->Exec("SELECT pg_reload_conf()")));
  ASSERT_TRUE(
      IsOk((*server)->Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE application_name = 'hcprp' AND pid <> pg_backend_pid()")));
  std::this_thread::sleep_for(200ms);
  const int64_t before = sessions();
  ASSERT_GE(before, 0);
  // Calls from 4 threads for a second, each needing a new session.
  std::atomic<int> calls{0};
  {
    const auto end = std::chrono::steady_clock::now() + 1s;
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
          EXPECT_TRUE(HasCode(
              store.Create("resources", "p", "b" + std::to_string(t) + "-" + std::to_string(i), Body(2)),
              ErrorCode::kUnavailable));
          calls.fetch_add(1);
          std::this_thread::sleep_for(10ms);
        }
      });
    }
    for (auto& c : callers) c.join();
  }
  std::this_thread::sleep_for(200ms);
  // The four first calls start an attempt each (no server had turned one down yet), then one starts
  // 500 ms after the last (four in a row): at most 7 for the second, where one per call would be
  // dozens. The counter also has the two sessions of sessions() itself.
  const int64_t attempts = sessions() - before - 1;
  EXPECT_GE(calls.load(), 8);
  EXPECT_GE(attempts, 1);
  EXPECT_LE(attempts, 7) << calls.load() << " calls";

  // Writable again: the store finds it within the longest back-off.
  ASSERT_TRUE(IsOk((*server)->Exec("ALTER SYSTEM SET default_transaction_read_only = off")));
  ASSERT_TRUE(IsOk((*server)->Exec("SELECT pg_reload_conf()")));
  bool created = false;
  for (auto end = std::chrono::steady_clock::now() + 3s;
       !created && std::chrono::steady_clock::now() < end;) {
    created = store.Create("resources", "p", "c", Body(3)).ok();
    if (!created) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(created);
}

TEST_F(PgStoreTest, MigrationsAreRecordedOnceAndReopeningAppliesNothing) {
  auto s = Open();
  ASSERT_NE(s, nullptr);
  const int latest = sql::Migrations().back().version;
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(sql::Migrations().size()));
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_migrations"), latest);
  ASSERT_TRUE(IsOk(s->Create("resources", "p", "x", Body(1))));
  s.reset();
  auto again = Open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(sql::Migrations().size()));
  EXPECT_TRUE(IsOk(again->Read("resources", "p", "x")));
}

TEST_F(PgStoreTest, FeedWrittenBeforeTheReaderNumberedFeedContinuesAfterTheUpgrade) {
  // A store at schema version 1, whose writers numbered their own changes (feed_counters).
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(IsOk(c->ExecSql("CREATE SCHEMA " + schema_, "schema")));
  ASSERT_TRUE(IsOk(c->ExecSql(sql::Migrations().front().sql, "migration 1")));
  ASSERT_TRUE(
      IsOk(c->ExecSql("CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
                      "applied_at timestamptz NOT NULL DEFAULT now()); "
                      "INSERT INTO schema_migrations(version) VALUES (1); "
                      "INSERT INTO documents(container, pk, id, body, etag, ts) VALUES "
                      "('resources', 'p', 'old', '{\"i\":0}', 'e-old', 1); "
                      "INSERT INTO changes(container, seq, kind, pk, id, body, etag, ts) VALUES "
                      "('resources', 1, 0, 'p', 'old', '{\"i\":0}', 'e-old', 1); "
                      "INSERT INTO feed_counters VALUES ('resources', 1)",
                      "version 1 data")));
  auto s = Open();  // applies the later migrations
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_migrations"), sql::Migrations().back().version);
  ASSERT_TRUE(IsOk(s->Create("resources", "p", "new", Body(1))));
  auto page = s->ReadChanges("resources", internal::EncodeChangeContinuation(0), 10);
  ASSERT_TRUE(IsOk(page));
  ASSERT_EQ(page->changes.size(), 2u);
  EXPECT_EQ(page->changes[0].document.id, "old");
  EXPECT_EQ(page->changes[0].sequence, 1u);
  EXPECT_EQ(page->changes[1].document.id, "new");
  EXPECT_EQ(page->changes[1].sequence, 2u);
}

TEST_F(PgStoreTest, ConcurrentOpenersMigrateOnce) {
  constexpr int kOpeners = 8;
  std::barrier sync(kOpeners);
  std::vector<std::unique_ptr<Store>> stores(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      sync.arrive_and_wait();
      auto s = OpenStore(url_, {.clock = &clock_});
      EXPECT_TRUE(IsOk(s)) << "opener " << i;
      if (s.ok()) stores[i] = std::move(*s);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(sql::Migrations().size()));
  // Every handle works on the same tables.
  for (int i = 0; i < kOpeners; ++i) {
    ASSERT_NE(stores[i], nullptr);
    ASSERT_TRUE(IsOk(stores[i]->Create("resources", "p", "d" + std::to_string(i), Body(i))));
  }
  auto page = stores[0]->Query({.container = "resources", .partition_key = "p"});
  ASSERT_TRUE(IsOk(page));
  EXPECT_EQ(page->documents.size(), static_cast<size_t>(kOpeners));
}

TEST_F(PgStoreTest, NewerSchemaIsRefused) {
  ASSERT_NE(Open(), nullptr);
  ASSERT_TRUE(IsOk(server_->Exec("INSERT INTO " + schema_ + ".schema_migrations(version) VALUES (100000)")));
  auto s = OpenStore(url_, {.clock = &clock_});
  ASSERT_TRUE(HasCode(s, ErrorCode::kInvalidArgument));
  EXPECT_NE(s.error().message().find("newer"), std::string::npos) << s.error().message();
}

TEST_F(PgStoreTest, ChangeSequencesAreConsecutivePerContainerUnderConcurrentWriters) {
  constexpr int kHandles = 2, kWritersPerHandle = 4, kOps = 40;
  std::vector<std::unique_ptr<Store>> handles;
  for (int h = 0; h < kHandles; ++h) {
    handles.push_back(Open());
    ASSERT_NE(handles.back(), nullptr);
  }
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  // A reader that follows the feed while the writers run: it must see 1, 2, 3, ... with no gap
  // and no reordering, whatever the page size.
  std::vector<uint64_t> seen;
  std::thread reader([&] {
    std::string cont;
    while (true) {
      bool finished = done.load();
      auto p = handles[0]->ReadChanges("resources", cont, 7);
      if (!p.ok()) {
        ++failures;
        return;
      }
      cont = p->continuation;
      for (const auto& c : p->changes) seen.push_back(c.sequence);
      if (p->changes.empty()) {
        if (finished) return;
        (void)handles[0]->WaitForChanges("resources", cont, 200ms);
      }
    }
  });
  std::vector<std::thread> writers;
  for (int h = 0; h < kHandles; ++h) {
    for (int w = 0; w < kWritersPerHandle; ++w) {
      writers.emplace_back([&, h, w] {
        Store& s = *handles[h];
        std::string pk = "sub" + std::to_string(w % 3);
        for (int i = 0; i < kOps; ++i) {
          std::string id = "h" + std::to_string(h) + "w" + std::to_string(w) + "-" + std::to_string(i);
          Status st = Status::Ok();
          if (i % 4 == 3) {
            // Two changes in one transaction (two creates: a superseded version would be left out
            // of the feed and hide its number).
            auto b =
                s.Batch("resources", pk, {WriteOp::Create(id, Body(i)), WriteOp::Create(id + "b", Body(i))});
            if (!b.ok()) st = b.error();
          } else {
            auto c = s.Create("resources", pk, id, Body(i));
            if (!c.ok()) st = c.error();
          }
          EXPECT_TRUE(IsOk(st)) << id;
          if (!st.ok()) ++failures;
        }
      });
    }
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  const size_t want = kHandles * kWritersPerHandle * (kOps + kOps / 4);
  ASSERT_EQ(seen.size(), want);
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i + 1) << "gap or reordering at " << i;
}

// The parameters of sql::kInsertDoc for a document with no ttl and no indexed fields.
void BindPlainDocument(Params& p, std::string_view container, std::string_view pk, std::string_view id,
                       const std::string& body, const std::string& etag, int64_t now) {
  p.Bytea(container).Bytea(pk).Bytea(id).Bytea(body).Text(etag).Int8(now).OptInt8(std::nullopt);
  p.OptInt8(std::nullopt).OptBytea(std::nullopt).OptBytea(std::nullopt).OptBytea(std::nullopt).Bool(false);
}

// The engine's own statements on a raw connection, to hold a transaction open at a chosen point.
class SlowWriter {
 public:
  SlowWriter(std::unique_ptr<PgConnection> c, std::string schema)
      : c_(std::move(c)), schema_(std::move(schema)) {}

  // BEGIN; insert a document and its (unnumbered) change -- everything a create does short of
  // COMMIT. Its change's serial is lower than those of every writer that starts after it.
  Status BeginCreate(std::string_view container, std::string_view pk, std::string_view id, int64_t now) {
    HCPRP_RETURN_IF_ERROR(c_->Exec(sql::kBegin, Params(), "begin"));
    std::string body = json::serialize(Body(0));
    etag_ = internal::NewEtag();
    Params d;
    BindPlainDocument(d, container, pk, id, body, etag_, now);
    HCPRP_RETURN_IF_ERROR(c_->Exec(sql::kInsertDoc, d, "insert"));
    Params ch;
    ch.Bytea(container).Int2(sql::kKindCreate).Bytea(pk).Bytea(id).Bytea(body).Text(etag_).Int8(now);
    ch.OptInt8(std::nullopt);
    HCPRP_RETURN_IF_ERROR(c_->Exec(sql::kInsertChange, ch, "append"));
    return Status::Ok();
  }
  // COMMIT, then NOTIFY the other processes, as the engine does.
  Status Commit() {
    HCPRP_RETURN_IF_ERROR(c_->Exec(sql::kCommit, Params(), "commit"));
    HCPRP_RETURN_IF_ERROR(c_->ExecSql("NOTIFY hcprp_feed_" + schema_, "notify"));
    return Status::Ok();
  }
  Status Rollback() {
    HCPRP_RETURN_IF_ERROR(c_->Exec(sql::kRollback, Params(), "rollback"));
    return Status::Ok();
  }
  const std::string& etag() const { return etag_; }

 private:
  std::unique_ptr<PgConnection> c_;
  std::string schema_;
  std::string etag_;
};

// A writer cut off inside a fenced batch (its lease row share-locked, then nothing more: a network
// partition) must not hold off a takeover of the lapsed lease for longer than the idle timeout.
TEST_F(PgStoreTest, AWriterCutOffInsideAFencedBatchDoesNotHoldOffATakeover) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto held = store->AcquireLease("locks", "shards", "shard-0", "cut-off", 3s);
  ASSERT_TRUE(IsOk(held));
  auto raw = PgConnection::Connect(server_->Url(), ConnectionOptions(schema_, 5000ms), 10);
  ASSERT_TRUE(IsOk(raw));
  PgConnection& cut_off = **raw;
  ASSERT_TRUE(IsOk(cut_off.Exec(sql::kBegin, Params(), "begin")));
  Params p;
  p.Bytea("locks").Bytea("shards").Bytea("shard-0");
  ASSERT_TRUE(IsOk(cut_off.Exec(sql::kLeaseFence, p, "fence")));

  clock_.Advance(4s);
  auto t0 = std::chrono::steady_clock::now();
  auto taken = store->AcquireLease("locks", "shards", "shard-0", "survivor", 3s);
  ASSERT_TRUE(IsOk(taken));
  EXPECT_EQ(taken->fencing_token, held->fencing_token + 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s) << "the takeover waited for the busy timeout";
  EXPECT_FALSE(cut_off.Exec(sql::kCommit, Params(), "commit").ok()) << "the idle session was not ended";
}

TEST_F(PgStoreTest, SlowTransactionCommittingAfterAFasterOneIsNeverSkipped) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("resources", "sub", "before", Body(0))));
  auto start = store->ReadChanges("resources", "", 100);
  ASSERT_TRUE(IsOk(start));
  ASSERT_EQ(start->changes.size(), 1u);
  std::string cont = start->continuation;

  // T1 writes its change first (the lower serial) and stays open.
  SlowWriter t1(Raw(), schema_);
  ASSERT_TRUE(IsOk(t1.BeginCreate("resources", "sub", "slow", clock_.NowMillis())));
  // T2, a faster writer of the same container, commits meanwhile without waiting for T1.
  auto t2 =
      std::async(std::launch::async, [&] { return store->Create("resources", "sub", "fast", Body(2)); });
  ASSERT_EQ(t2.wait_for(20s), std::future_status::ready);
  auto fast = t2.get();
  ASSERT_TRUE(IsOk(fast));
  // A reader sees T2's change at once, numbered right after the last one.
  auto mid = store->ReadChanges("resources", cont, 100);
  ASSERT_TRUE(IsOk(mid));
  ASSERT_EQ(mid->changes.size(), 1u);
  EXPECT_EQ(mid->changes[0].document.id, "fast");
  EXPECT_EQ(mid->changes[0].document.etag, fast->etag);
  EXPECT_EQ(mid->changes[0].sequence, start->changes[0].sequence + 1);
  cont = mid->continuation;
  EXPECT_FALSE(*store->WaitForChanges("resources", cont, 50ms));

  // A waiter of another handle (another process) is woken by T1's commit and NOTIFY.
  auto other = Open();
  ASSERT_NE(other, nullptr);
  auto waiter = std::async(std::launch::async, [&] { return other->WaitForChanges("resources", cont, 20s); });
  std::this_thread::sleep_for(100ms);  // let it start waiting
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(IsOk(t1.Commit()));
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  auto woke = waiter.get();
  ASSERT_TRUE(IsOk(woke));
  EXPECT_TRUE(*woke);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s) << "woken by the safety re-check, not by NOTIFY";

  // T1's change comes next, with the next number: committed later, delivered later, never skipped.
  auto after = store->ReadChanges("resources", cont, 100);
  ASSERT_TRUE(IsOk(after));
  ASSERT_EQ(after->changes.size(), 1u);
  EXPECT_EQ(after->changes[0].document.id, "slow");
  EXPECT_EQ(after->changes[0].document.etag, t1.etag());
  EXPECT_EQ(after->changes[0].sequence, mid->changes[0].sequence + 1);
}

TEST_F(PgStoreTest, ADeferredBeginTravelsWithTheFirstStatementAndThePipelineCommits) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  c->DeferBegin(sql::kBegin);
  EXPECT_TRUE(c->begin_pending());
  EXPECT_EQ(PQtransactionStatus(c->raw()), PQTRANS_IDLE);  // nothing sent yet
  const std::string body = json::serialize(Body(7));
  const std::string etag = internal::NewEtag();
  Params d;
  BindPlainDocument(d, "resources", "sub", "piped", body, etag, clock_.NowMillis());
  auto inserted = c->Exec(sql::kInsertDoc, d, "insert");
  ASSERT_TRUE(IsOk(inserted));
  EXPECT_EQ(inserted->rows(), 1);
  EXPECT_FALSE(c->begin_pending());
  // The insert ran inside the transaction that the deferred BEGIN opened.
  EXPECT_EQ(PQtransactionStatus(c->raw()), PQTRANS_INTRANS);
  EXPECT_TRUE(HasCode(store->Read("resources", "sub", "piped"), ErrorCode::kNotFound));

  Params ch;
  ch.Bytea("resources").Int2(sql::kKindCreate).Bytea("sub").Bytea("piped").Bytea("").Text(etag);
  ch.Int8(clock_.NowMillis()).OptInt8(std::nullopt);
  const Params none;
  auto ended = c->Pipeline({{&sql::kInsertChange, &ch}, {&sql::kCommit, &none}}, "changes and commit");
  ASSERT_TRUE(IsOk(ended));
  EXPECT_EQ(ended->size(), 2u);
  EXPECT_EQ(PQtransactionStatus(c->raw()), PQTRANS_IDLE);
  EXPECT_FALSE(c->broken());
  auto read = store->Read("resources", "sub", "piped");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->etag, etag);
  auto changes = store->ReadChanges("resources", internal::EncodeChangeContinuation(0), 10);
  ASSERT_TRUE(IsOk(changes));
  ASSERT_EQ(changes->changes.size(), 1u);
  EXPECT_EQ(changes->changes[0].document.id, "piped");
}

TEST_F(PgStoreTest, APipelineStopsAtItsFirstFailureAndItsTransactionRollsBack) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  const std::string body = json::serialize(Body(1));
  const std::string etag1 = internal::NewEtag(), etag2 = internal::NewEtag();  // Params keep no copies
  Params first, second;
  BindPlainDocument(first, "resources", "sub", "first", body, etag1, clock_.NowMillis());
  BindPlainDocument(second, "resources", "sub", "second", body, etag2, clock_.NowMillis());
  static constexpr Statement kDivideByZero{"t_div0", "SELECT 1/0"};
  const Params none;
  c->DeferBegin(sql::kBegin);
  auto r = c->Pipeline({{&sql::kInsertDoc, &first},
                        {&kDivideByZero, &none},
                        {&sql::kInsertDoc, &second},
                        {&sql::kCommit, &none}},
                       "failing pipeline");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("failing pipeline"), std::string::npos) << r.error().ToString();
  EXPECT_EQ(c->last_sqlstate(), "22012");  // division_by_zero: the failed step's own error
  EXPECT_FALSE(c->broken());               // the connection left pipeline mode in a known state
  EXPECT_EQ(PQtransactionStatus(c->raw()), PQTRANS_INERROR);  // the COMMIT was skipped
  ASSERT_TRUE(IsOk(c->Exec(sql::kRollback, none, "rollback")));
  EXPECT_EQ(PQtransactionStatus(c->raw()), PQTRANS_IDLE);
  EXPECT_TRUE(HasCode(store->Read("resources", "sub", "first"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(store->Read("resources", "sub", "second"), ErrorCode::kNotFound));
  // The connection still serves statements, one at a time and in pipelines.
  auto again = c->Pipeline({{&sql::kInsertDoc, &first}}, "insert again");
  ASSERT_TRUE(IsOk(again));
  EXPECT_EQ((*again)[0].rows(), 1);
  EXPECT_TRUE(IsOk(store->Read("resources", "sub", "first")));
}

TEST_F(PgStoreTest, RolledBackTransactionLeavesNoGap) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  SlowWriter t1(Raw(), schema_);
  ASSERT_TRUE(IsOk(t1.BeginCreate("resources", "sub", "aborted", clock_.NowMillis())));
  ASSERT_TRUE(IsOk(store->Create("resources", "sub", "kept", Body(1))));
  ASSERT_TRUE(IsOk(t1.Rollback()));
  ASSERT_TRUE(IsOk(store->Create("resources", "sub", "later", Body(2))));
  auto all = store->ReadChanges("resources", "", 100);
  ASSERT_TRUE(IsOk(all));
  auto from_start = store->ReadChanges("resources", internal::EncodeChangeContinuation(0), 100);
  ASSERT_TRUE(IsOk(from_start));
  ASSERT_EQ(from_start->changes.size(), 2u);
  EXPECT_EQ(from_start->changes[0].document.id, "kept");
  EXPECT_EQ(from_start->changes[0].sequence, 1u);
  EXPECT_EQ(from_start->changes[1].document.id, "later");
  EXPECT_EQ(from_start->changes[1].sequence, 2u);
  EXPECT_TRUE(HasCode(store->Read("resources", "sub", "aborted"), ErrorCode::kNotFound));
}

TEST_F(PgStoreTest, NowIsAfterABacklogLongerThanOneNumberingChunk) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(
      IsOk(c->ExecSql("INSERT INTO changes(container, kind, pk, id, body, etag, ts) SELECT 'resources', "
                      "0, 'p', convert_to('x' || g, 'UTF8'), '{}', 'e', 1 FROM generate_series(1, " +
                          std::to_string(sql::kNumberChunk + 10) + ") g",
                      "backlog")));
  auto now = store->ReadChanges("resources", kChangeFeedNow, 10);
  ASSERT_TRUE(IsOk(now));
  EXPECT_TRUE(now->changes.empty());
  ASSERT_TRUE(IsOk(store->Create("resources", "p", "after-now", Body(1))));
  auto next = store->ReadChanges("resources", now->continuation, 100);
  ASSERT_TRUE(IsOk(next));
  ASSERT_EQ(next->changes.size(), 1u);
  EXPECT_EQ(next->changes[0].document.id, "after-now");
  EXPECT_EQ(next->changes[0].sequence, static_cast<uint64_t>(sql::kNumberChunk + 11));
}

TEST_F(PgStoreTest, ChangesOfOneDocumentKeepTheirOrderAcrossTransactions) {
  // T1 takes a low serial with a change of "a", then waits for "b"'s row lock held by T2, which
  // changed "b" and commits first; T1's later change of "b" must come after T2's.
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("resources", "sub", "b", Body(0))));
  auto start = store->ReadChanges("resources", "", 100);
  ASSERT_TRUE(IsOk(start));
  auto t1c = Raw();
  ASSERT_TRUE(IsOk(t1c->ExecSql("BEGIN", "t1")));
  ASSERT_TRUE(
      IsOk(t1c->ExecSql("INSERT INTO changes(container, kind, pk, id, body, etag, ts) VALUES "
                        "('resources', 0, 'sub', 'a', '{}', 'e1', 1)",
                        "t1 change a")));
  auto t2c = Raw();
  ASSERT_TRUE(IsOk(t2c->ExecSql("BEGIN", "t2")));
  ASSERT_TRUE(IsOk(t2c->ExecSql("SELECT 1 FROM documents WHERE id = 'b' FOR UPDATE", "t2 lock b")));
  ASSERT_TRUE(
      IsOk(t2c->ExecSql("INSERT INTO changes(container, kind, pk, id, body, etag, ts) VALUES "
                        "('resources', 1, 'sub', 'b', '{}', 'from-t2', 2)",
                        "t2 change b")));
  // T1 now wants b: it waits for T2 (as the engine's FOR UPDATE would), then records its change.
  auto t1 = std::async(std::launch::async, [&]() -> Status {
    HCPRP_RETURN_IF_ERROR(t1c->ExecSql("SELECT 1 FROM documents WHERE id = 'b' FOR UPDATE", "t1 lock b"));
    HCPRP_RETURN_IF_ERROR(
        t1c->ExecSql("INSERT INTO changes(container, kind, pk, id, body, etag, ts) VALUES "
                     "('resources', 1, 'sub', 'b', '{}', 'from-t1', 3)",
                     "t1 change b"));
    HCPRP_RETURN_IF_ERROR(t1c->ExecSql("COMMIT", "t1 commit"));
    return Status::Ok();
  });
  EXPECT_EQ(t1.wait_for(200ms), std::future_status::timeout);
  ASSERT_TRUE(IsOk(t2c->ExecSql("COMMIT", "t2 commit")));
  ASSERT_EQ(t1.wait_for(20s), std::future_status::ready);
  ASSERT_TRUE(IsOk(t1.get()));
  auto page = store->ReadChanges("resources", start->continuation, 100);
  ASSERT_TRUE(IsOk(page));
  std::vector<std::string> b_etags;
  for (const auto& c : page->changes) {
    if (c.document.id == "b") b_etags.push_back(c.document.etag);
  }
  EXPECT_EQ(b_etags, (std::vector<std::string>{"from-t2", "from-t1"}));
  EXPECT_EQ(page->changes.size(), 3u);
}

TEST_F(PgStoreTest, OtherContainersDoNotWaitForASlowTransaction) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  SlowWriter t1(Raw(), schema_);
  ASSERT_TRUE(IsOk(t1.BeginCreate("resources", "sub", "slow", clock_.NowMillis())));
  auto other = std::async(std::launch::async, [&] { return store->Create("billing", "sub", "x", Body(1)); });
  ASSERT_EQ(other.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(IsOk(other.get()));
  ASSERT_TRUE(IsOk(t1.Rollback()));
}

// A server of its own: this test stops and restarts it.
// The value libpq uses for a connection option ("" when unset).
std::string ConnOption(PgConnection& c, std::string_view key) {
  std::string value;
  PQconninfoOption* options = PQconninfo(c.raw());
  for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (key == o->keyword && o->val != nullptr) value = o->val;
  }
  PQconninfoFree(options);
  return value;
}

TEST_F(PgStoreTest, ConnectionsCarryKeepalivesThatTheUrlCanOverride) {
  auto c = PgConnection::Connect(server_->Url(), "", 5);
  ASSERT_TRUE(IsOk(c));
  EXPECT_EQ(ConnOption(**c, "keepalives"), "1");
  EXPECT_EQ(ConnOption(**c, "keepalives_idle"), "10");
  EXPECT_EQ(ConnOption(**c, "tcp_user_timeout"), "20000");
  auto tuned = PgConnection::Connect(server_->Url() + "?tcp_user_timeout=5000&keepalives_idle=30", "", 5);
  ASSERT_TRUE(IsOk(tuned));
  EXPECT_EQ(ConnOption(**tuned, "tcp_user_timeout"), "5000");
  EXPECT_EQ(ConnOption(**tuned, "keepalives_idle"), "30");
  EXPECT_EQ(ConnOption(**tuned, "keepalives_count"), "3");
}

// After a failover the server that took writes last is tried first: a first host that does not
// answer (port 1 here, refused; a machine that is gone would cost connect_timeout) is tried last.
TEST_F(PgStoreTest, TheServerThatLastGaveASessionIsTriedFirst) {
  const std::string port = std::to_string(server_->port());
  const std::string url = "postgresql://postgres@127.0.0.1:1,127.0.0.1:" + port + "/" +
                          server_->Url().substr(server_->Url().rfind('/') + 1);
  HostOrder order(url);
  ASSERT_EQ(order.Preferred(), std::nullopt);
  auto first = PgConnection::Connect(url, "", 5, order.Preferred());
  ASSERT_TRUE(IsOk(first));
  order.Connected((*first)->raw());
  EXPECT_EQ(order.Preferred(), (HostList{.hosts = "127.0.0.1,127.0.0.1", .ports = port + ",1"}));
  auto next = PgConnection::Connect(url, "", 5, order.Preferred());
  ASSERT_TRUE(IsOk(next));
  EXPECT_EQ(std::string(PQport((*next)->raw())), port);
  EXPECT_EQ(std::string(PQhost((*next)->raw())), "127.0.0.1");
}

TEST_F(PgStoreTest, ServerThatStopsAnsweringFailsTheCallInsteadOfHangingIt) {
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  c->set_query_timeout(300ms);
  auto pid = c->ExecSql("SELECT pg_backend_pid()", "pid");
  ASSERT_TRUE(IsOk(pid));
  pid_t server_process = static_cast<pid_t>(std::stol(pid->String(0, 0)));
  // The server process serving this connection freezes: the kernel still accepts its traffic, but
  // nothing answers (what keepalives cannot detect).
  ASSERT_EQ(kill(server_process, SIGSTOP), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto r = c->ExecSql("SELECT 1", "probe");
  auto took = std::chrono::steady_clock::now() - t0;
  kill(server_process, SIGCONT);
  EXPECT_TRUE(HasCode(r, ErrorCode::kUnavailable));
  if (!r.ok()) {
    EXPECT_NE(r.error().message().find("did not answer within 300 ms"), std::string::npos);
  }
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(c->broken());  // never reused: its protocol state is unknown
  EXPECT_TRUE(c->timed_out());
}

// A primary being demoted (a switchover) turns read-only under open connections: writes fail with
// kUnavailable (503 at the frontend), not an internal error, the connections that lead there are
// dropped, and the first write once a server takes writes again succeeds.
TEST_F(PgStoreTest, WritesRefusedByAServerThatTurnedReadOnlyAreUnavailableAndRecover) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("resources", "p", "a", Body(1))));
  auto set_read_only = [&](bool on) {
    ASSERT_TRUE(IsOk(server_->Exec(on ? "ALTER SYSTEM SET default_transaction_read_only = on"
                                      : "ALTER SYSTEM RESET default_transaction_read_only")));
    ASSERT_TRUE(IsOk(server_->Exec("SELECT pg_reload_conf()")));
  };
  set_read_only(true);
  // Open sessions apply the new default when they next get a command; the reload is signalled.
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    auto w = store->Create("resources", "p", "b" + std::to_string(i), Body(2));
    if (!w.ok()) {
      EXPECT_TRUE(HasCode(w, ErrorCode::kUnavailable));
      refused = true;
    } else {
      std::this_thread::sleep_for(20ms);
    }
  }
  EXPECT_TRUE(refused) << "writes were never refused by the read-only server";
  EXPECT_TRUE(HasCode(store->AcquireLease("locks", "p", "l", "me", 10s), ErrorCode::kUnavailable));
  EXPECT_TRUE(IsOk(store->Read("resources", "p", "a")));  // reads still work
  set_read_only(false);
  bool accepted = false;
  for (int i = 0; i < 100 && !accepted; ++i) {
    accepted = store->Create("resources", "p", "after" + std::to_string(i), Body(3)).ok();
    if (!accepted) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(accepted);
  EXPECT_TRUE(IsOk(store->AcquireLease("locks", "p", "l2", "me", 10s)));
}

// After a failover to a standby that lacked the last commits (possible only when replication was
// asynchronous), a reader's position can lie past the feed's end. Read before new changes take
// those numbers again, it fails with kOutOfRange and the reader resyncs instead of skipping them.
TEST_F(PgStoreTest, PositionPastTheFeedsEndIsOutOfRange) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(IsOk(store->Create("resources", "p", "a", Body(1))));
  ASSERT_TRUE(IsOk(store->Create("resources", "p", "b", Body(2))));
  auto read = store->ReadChanges("resources", "", 10);
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->changes.size(), 2u);
  auto c = Raw();
  ASSERT_NE(c, nullptr);
  // What a new primary that never received the second write holds.
  ASSERT_TRUE(
      IsOk(c->ExecSql("DELETE FROM documents WHERE id = 'b'::bytea; DELETE FROM changes WHERE seq = 2; "
                      "UPDATE feed_counters SET last_seq = 1",
                      "lose the last write")));
  EXPECT_TRUE(HasCode(store->ReadChanges("resources", read->continuation, 10), ErrorCode::kOutOfRange));
  // A reader that had not read past the end reads on and gets the next change, numbered 2 again.
  ASSERT_TRUE(IsOk(store->Create("resources", "p", "c", Body(3))));
  auto again = store->ReadChanges("resources", internal::EncodeChangeContinuation(1), 10);
  ASSERT_TRUE(IsOk(again));
  ASSERT_EQ(again->changes.size(), 1u);
  EXPECT_EQ(again->changes[0].document.id, "c");
  EXPECT_EQ(again->changes[0].sequence, 2u);
}

TEST(PgRestartTest, CallsFailWhileTheServerIsDownAndSucceedAfterItReturns) {
  auto server = PgTestServer::Start();
  ASSERT_TRUE(IsOk(server)) << "cannot start the PostgreSQL test server";
  FakeClock clock;
  auto opened = OpenStore((*server)->Url(), {.clock = &clock});
  ASSERT_TRUE(IsOk(opened));
  Store& store = **opened;
  auto watcher_store = OpenStore((*server)->Url(), {.clock = &clock});
  ASSERT_TRUE(IsOk(watcher_store));
  ASSERT_TRUE(IsOk(store.Create("resources", "p", "a", Body(1))));
  // Several pooled connections, so that several are dead after the restart.
  {
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i)
      readers.emplace_back([&] { EXPECT_TRUE(IsOk(store.Read("resources", "p", "a"))); });
    for (auto& t : readers) t.join();
  }
  // Start the listener of the second handle.
  EXPECT_FALSE(*(*watcher_store)->WaitForChanges("resources", kChangeFeedNow, 10ms));

  ASSERT_TRUE(IsOk((*server)->Stop()));
  EXPECT_TRUE(HasCode(store.Read("resources", "p", "a"), ErrorCode::kUnavailable));
  EXPECT_TRUE(HasCode(store.Create("resources", "p", "b", Body(2)), ErrorCode::kUnavailable));
  EXPECT_TRUE(HasCode(store.ReadChanges("resources", "", 10), ErrorCode::kUnavailable));
  EXPECT_TRUE(HasCode(store.AcquireLease("locks", "p", "l", "me", 10s), ErrorCode::kUnavailable));
  EXPECT_TRUE(HasCode(store.WaitForChanges("resources", "", 10ms), ErrorCode::kUnavailable));

  ASSERT_TRUE(IsOk((*server)->Restart())) << (*server)->Log();
  // The first call after the restart already succeeds: dead pooled connections are replaced.
  auto read = store.Read("resources", "p", "a");
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(read->body, Body(1));
  auto now = (*watcher_store)->ReadChanges("resources", kChangeFeedNow, 1);
  ASSERT_TRUE(IsOk(now));
  auto waiter = std::async(std::launch::async, [&] {
    return (*watcher_store)->WaitForChanges("resources", now->continuation, 20s);
  });
  ASSERT_TRUE(IsOk(store.Create("resources", "p", "b", Body(2))));
  ASSERT_TRUE(IsOk(store.AcquireLease("locks", "p", "l", "me", 10s)));
  // The other handle's listener reconnected: its waiter wakes on the commit.
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  auto woke = waiter.get();
  ASSERT_TRUE(IsOk(woke));
  EXPECT_TRUE(*woke);
  auto changes = store.ReadChanges("resources", "", 10);
  ASSERT_TRUE(IsOk(changes));
  ASSERT_EQ(changes->changes.size(), 2u);
  EXPECT_EQ(changes->changes[1].document.id, "b");
}

}  // namespace
}  // namespace hcprp::store::postgres
