// A create answers 201 after one durable commit (the resource and its Accepted operation); the
// internal ID is recorded after the answer. These tests drive the real frontend and backend over one
// store and check that a lost or late record still ends the create Succeeded with the internal ID
// recorded and one Cluster Service object (docs/architecture.md, "A create, end to end").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "backend/backend.h"
#include "frontend/after_answer.h"
#include "frontend/testing/scenario.h"
#include "store/fault_injecting_store.h"

namespace hcprp::frontend::testing {
namespace {

using namespace std::chrono_literals;

const std::string kClusters = std::string(clusterservice::kApiPrefix) + "/clusters";

std::string V() { return "?api-version=" + std::string(kStable); }

std::string Header(const Response& r, std::string_view name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value());
}

template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds limit = 10s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

// Holds what the frontend hands over until the test runs it, or drops it as a process that died
// after answering would.
class HeldWork final : public AfterAnswer {
 public:
  bool Post(std::function<void()> work) override {
    MutexLock lock(mu_);
    work_.push_back(std::move(work));
    return true;
  }
  void RunAll() {
    std::vector<std::function<void()>> work;
    {
      MutexLock lock(mu_);
      work.swap(work_);
    }
    for (auto& w : work) w();
  }
  void DropAll() {
    MutexLock lock(mu_);
    work_.clear();
  }
  size_t Size() const {
    MutexLock lock(mu_);
    return work_.size();
  }

 private:
  mutable Mutex mu_;
  std::vector<std::function<void()>> work_ HCPRP_GUARDED_BY(mu_);
};

class SilentNotifier final : public backend::Notifier {
 public:
  Status Notify(std::string_view, const json::object&) override { return Status::Ok(); }
};

FrontendOptions WithAfterAnswer(AfterAnswer* after) {
  FrontendOptions o;
  o.after_answer = after;
  return o;
}

class CreateOrderingTest : public ::testing::Test {
 protected:
  void SetUp() override { s.RegisterSubscription(); }

  backend::BackendOptions BackendOpts() const {
    backend::BackendOptions o;
    o.gc_enabled = false;
    o.create_recovery_grace = 2min;
    return o;
  }
  std::unique_ptr<backend::Backend> MakeBackend(backend::BackendOptions o) {
    auto b = backend::Backend::Create(std::move(o), s.store.get(), &s.cs, &s.clock,
                                      Logger(s.log, &s.clock, LogLevel::kDebug, "backend"), &notifier);
    EXPECT_TRUE(b.ok()) << b.error().ToString();
    return std::move(b).value();
  }
  void Reconcile(backend::Backend& b) {
    Status st = b.ReconcileOnce();
    ASSERT_TRUE(st.ok()) << st.error().ToString();
  }
  // The one cluster object the Cluster Service holds.
  std::string OnlyClusterHref() {
    auto all = s.cs.List(kClusters);
    EXPECT_TRUE(all.ok());
    if (!all.ok() || all->size() != 1) return "";
    return std::string(GetString(all->at(0).as_object(), "href").value_or(""));
  }

  HeldWork held;
  SilentNotifier notifier;
  Scenario s{WithAfterAnswer(&held)};
};

TEST_F(CreateOrderingTest, AnswersAfterTheFirstCommitAndRecordsTheInternalIdAfterwards) {
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  ASSERT_EQ(held.Size(), 1u);

  // Answered with what step 2 committed: no internal ID yet, the etag of that commit.
  auto doc = s.Resource(path);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->internal_id.empty());
  EXPECT_TRUE(s.Operation(op_id)->internal_id.empty());
  auto stored = s.store->Read(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Header(r, "ETag"), "\"" + stored->etag + "\"");
  // What the Cluster Service assigned is shown at once.
  EXPECT_NE(FindPointer(BodyOf(r), "/properties/api/url"), nullptr) << r.body();
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());

  held.RunAll();
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

// The record replaces the operation document whole: it keeps the operation's time to live.
TEST_F(CreateOrderingTest, TheRecordKeepsTheOperationsTimeToLive) {
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  auto before = s.store->Read(store::kResources, arm::PartitionKey(kSub), op_id);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(before->ttl_seconds.has_value());

  held.RunAll();
  auto after = s.store->Read(store::kResources, arm::PartitionKey(kSub), op_id);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->etag, before->etag);
  EXPECT_EQ(after->ttl_seconds, before->ttl_seconds);
  EXPECT_EQ(s.Operation(op_id)->internal_id, OnlyClusterHref());
}

// A write between the create's commit and the record (the backend syncing the Cluster Service's
// status) is kept: the record does not replace a document that changed since the create.
TEST_F(CreateOrderingTest, TheRecordKeepsAWriteThatCameBetween) {
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  json::object status{{"state", "installing"}};
  auto between = s.store->Patch(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path),
                                {{store::PatchOp::Kind::kSet, std::string(arm::kPathServiceStatus), status}});
  ASSERT_TRUE(between.ok()) << between.error().ToString();

  held.RunAll();
  const std::string href = OnlyClusterHref();
  auto doc = s.Resource(path);
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->internal_id, href);
  EXPECT_EQ(doc->service_status, status);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
}

TEST_F(CreateOrderingTest, WithoutAnAfterAnswerPoolTheAnswerWaitsForTheRecord) {
  Scenario inline_scenario;
  inline_scenario.RegisterSubscription();
  const std::string path = ClusterPath("c1");
  auto r = inline_scenario.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  auto doc = inline_scenario.Resource(path);
  ASSERT_TRUE(doc);
  EXPECT_FALSE(doc->internal_id.empty());
  auto stored =
      inline_scenario.store->Read(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Header(r, "ETag"), "\"" + stored->etag + "\"");
}

// The process dies after the 201, before the internal ID's batch: the backend's create recovery asks
// the Cluster Service again with the same idempotency key and records the object the frontend made.
// The record is lost after the answer (the process stopped): the backend finds the object the
// create made by the names it carries, without waiting for the recovery's grace period and without
// a second object, and records its internal ID with the operation's first status change.
TEST_F(CreateOrderingTest, RecordLostAfterTheAnswerIsFoundWithoutADuplicate) {
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  held.DropAll();

  auto b = MakeBackend(BackendOpts());
  Reconcile(*b);  // the object is found; it is still pending, so there is nothing to write yet
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateAccepted);
  EXPECT_TRUE(s.Operation(op_id)->internal_id.empty());
  EXPECT_EQ(b->Stats().transitions, 0u);

  s.cs.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateSucceeded);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->provisioning_state, arm::kStateSucceeded);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(b->Stats().transitions, 1u);  // the status and the internal ID in one batch
  EXPECT_EQ(b->Stats().recovered_creates, 0u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

// The internal ID's batch fails after the answer (store down for a moment): found the same way.
TEST_F(CreateOrderingTest, RecordFailingAfterTheAnswerIsFound) {
  store::FaultInjectingStore faulty(*s.store);
  auto pool = AfterAnswerPool::Start({.threads = 2});
  FrontendOptions o;
  o.after_answer = pool.get();
  auto fe = Frontend::Create(o, &faulty, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
  ASSERT_TRUE(fe.ok());
  s.frontend = std::move(fe).value();
  // The first batch (resource + operation) commits; the second (the internal ID) fails.
  faulty.FailNthCall(2, Error::Unavailable("database is locked"), store::FaultInjectingStore::Method::kBatch);

  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  pool->Drain();
  EXPECT_EQ(faulty.CallCount(store::FaultInjectingStore::Method::kBatch), 2u);
  EXPECT_TRUE(s.Resource(path)->internal_id.empty());

  auto b = MakeBackend(BackendOpts());
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  s.cs.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateSucceeded);
  EXPECT_EQ(b->Stats().recovered_creates, 0u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
  pool->Stop();
}

// An object of the same name made well before the operation started (left over from an earlier
// resource) is not the create's: the backend records the one the create made.
TEST_F(CreateOrderingTest, AnOlderObjectOfTheSameNameIsNotTakenForTheCreates) {
  json::object azure{
      {"subscription_id", std::string(kSub)}, {"resource_group_name", "rg1"}, {"resource_name", "c1"}};
  auto old = s.cs.Create(kClusters, json::object{{"name", "c1"}, {"azure", azure}}, "an-earlier-request");
  ASSERT_TRUE(old.ok()) << old.error().ToString();
  const std::string old_href(GetString(*old, "href").value_or(""));
  s.clock.Advance(10min);

  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  held.DropAll();
  auto all = s.cs.List(kClusters);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  std::string href;
  for (const json::value& o : *all) {
    std::string h(GetString(o.as_object(), "href").value_or(""));
    if (h != old_href) href = h;
  }
  ASSERT_FALSE(href.empty());

  auto b = MakeBackend(BackendOpts());
  s.cs.SetState(old_href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateAccepted);  // the older object says nothing of it
  s.cs.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateSucceeded);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
}

// The Cluster Service says "ready" before the internal ID is recorded: the event names an object no
// operation knows, so the backend looks for the creates of that name, finds the object and ends the
// create with its internal ID. The frontend's record that comes afterwards finds it recorded.
TEST_F(CreateOrderingTest, ReadyEventBeforeTheRecordEndsTheCreate) {
  s.cs.SetEventsEnabled(true);
  backend::BackendOptions o = BackendOpts();
  o.resync_interval = 1h;
  o.poll_interval = 1h;
  o.tick = 50ms;
  o.feed_wait = 50ms;
  o.event_wait = 50ms;
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().active && b->Stats().events_available; }));

  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().in_flight == 1; }));

  s.cs.SetState(href, "ready");
  EXPECT_TRUE(WaitUntil([&] { return s.Operation(op_id)->status == arm::kStateSucceeded; }));
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);

  held.RunAll();
  b->Stop();
  EXPECT_EQ(s.Resource(path)->provisioning_state, arm::kStateSucceeded);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(b->Stats().recovered_creates, 0u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
  for (const std::string& line : s.log->LinesForTest())
    EXPECT_EQ(line.find("could not record the internal ID"), std::string::npos) << line;
}

// --- AfterAnswerPool ---------------------------------------------------------------------------

TEST(AfterAnswerPoolTest, RunsEveryPostedWorkAndDrainWaitsForIt) {
  auto pool = AfterAnswerPool::Start({.threads = 4});
  std::atomic<int> ran{0};
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(pool->Post([&ran] {
      std::this_thread::sleep_for(100us);
      ran.fetch_add(1);
    }));
  }
  pool->Drain();
  EXPECT_EQ(ran.load(), 200);
  EXPECT_EQ(pool->Unfinished(), 0u);
}

TEST(AfterAnswerPoolTest, RefusesWhenFullAndRunsWhatWaitsWhenStopped) {
  auto pool = AfterAnswerPool::Start({.threads = 1, .max_pending = 2});
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool->Post([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(1ms);
    ran.fetch_add(1);
  }));
  ASSERT_TRUE(WaitUntil([&] { return started.load(); }));
  EXPECT_TRUE(pool->Post([&] { ran.fetch_add(1); }));
  EXPECT_TRUE(pool->Post([&] { ran.fetch_add(1); }));
  EXPECT_FALSE(pool->Post([&] { ran.fetch_add(1); }));  // two wait already: the caller runs it
  EXPECT_EQ(pool->Unfinished(), 3u);

  std::thread stopper([&] { pool->Stop(); });
  std::this_thread::sleep_for(20ms);
  release = true;
  stopper.join();
  EXPECT_EQ(ran.load(), 3);  // what was waiting ran before the threads ended
  EXPECT_FALSE(pool->Post([&] { ran.fetch_add(1); }));
  EXPECT_EQ(ran.load(), 3);
}

// A PUT without conditional headers tries the create before reading the resource: the only read is the
// subscription's. On an existing resource the create's batch fails, writes nothing, and the request is
// decided as the update it is.
TEST_F(CreateOrderingTest, APutWithoutConditionsCreatesBeforeReadingAndFallsBackToAnUpdate) {
  using Method = store::FaultInjectingStore::Method;
  store::FaultInjectingStore counted(*s.store);
  auto fe = Frontend::Create(WithAfterAnswer(&held), &counted, &s.cs, &s.clock,
                             Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
  ASSERT_TRUE(fe.ok());
  s.frontend = std::move(fe).value();

  const std::string path = ClusterPath("c1");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  EXPECT_EQ(counted.CallCount(Method::kRead), 1u);  // the subscription
  EXPECT_EQ(counted.CallCount(Method::kBatch), 1u);
  held.RunAll();
  s.FinishAll();
  const std::string before = s.DumpStore();

  // The same PUT again is an update: the speculative create's batch fails and leaves nothing behind.
  auto again = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(again.result_int(), 200u) << again.body();
  EXPECT_GT(counted.CallCount(Method::kRead), 2u);
  EXPECT_EQ(s.Operations().size(), 2u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
  EXPECT_NE(s.DumpStore(), before);

  // A body a create would accept but this update may not (a create-only field changed) is refused by
  // the update rules, and nothing is written.
  json::value moved = ParseJson(ClusterBody()).value();
  FindPointer(moved, "/properties/platform")->as_object()["managedResourceGroup"] = "another-group";
  s.FinishAll();
  auto changed = s.Put(path + V(), ToJson(moved));
  EXPECT_EQ(changed.result_int(), 400u) << changed.body();
  EXPECT_NE(changed.body().find("managedResourceGroup"), std::string::npos) << changed.body();
  EXPECT_EQ(s.Operations().size(), 2u);
}

}  // namespace
}  // namespace hcprp::frontend::testing
