// A create answers 201 after one durable commit (the resource and its Accepted operation) and writes
// nothing else; the backend finds the Cluster Service object the create made and records its internal
// ID with the operation's first status change. These tests drive the real frontend and backend over
// one store (docs/architecture.md, "A create, end to end").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "backend/backend.h"
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

class SilentNotifier final : public backend::Notifier {
 public:
  Status Notify(std::string_view, const json::object&) override { return Status::Ok(); }
};

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
  // Puts a frontend on `store` (e.g. one that counts the calls) in place of the scenario's.
  void ServeFrom(store::Store* store) {
    auto fe = Frontend::Create({}, store, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
    ASSERT_TRUE(fe.ok());
    s.frontend = std::move(fe).value();
  }
  // The one cluster object the Cluster Service holds.
  std::string OnlyClusterHref() {
    auto all = s.cs.List(kClusters);
    EXPECT_TRUE(all.ok());
    if (!all.ok() || all->size() != 1) return "";
    return std::string(GetString(all->at(0).as_object(), "href").value_or(""));
  }

  SilentNotifier notifier;
  Scenario s;
};

TEST_F(CreateOrderingTest, AnswersAfterOneCommitAndWritesNothingElse) {
  using Method = store::FaultInjectingStore::Method;
  store::FaultInjectingStore counted(*s.store);
  ServeFrom(&counted);

  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  EXPECT_EQ(counted.CallCount(Method::kBatch), 1u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);

  // Answered with what that commit stored: no internal ID, its etag.
  auto doc = s.Resource(path);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->internal_id.empty());
  EXPECT_TRUE(s.Operation(op_id)->internal_id.empty());
  auto stored = s.store->Read(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(Header(r, "ETag"), "\"" + stored->etag + "\"");
  // What the Cluster Service assigned is shown at once.
  EXPECT_NE(FindPointer(BodyOf(r), "/properties/api/url"), nullptr) << r.body();
}

// Without the event stream the backend's check searches for the object by the resource's names. An
// object still pending is recorded at once, with what the Cluster Service assigned (a GET then shows
// it), keeping the operation's time to live; its status changes follow.
TEST_F(CreateOrderingTest, APendingObjectIsRecordedWhenFound) {
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  auto before = s.store->Read(store::kResources, arm::PartitionKey(kSub), op_id);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(before->ttl_seconds.has_value());

  auto b = MakeBackend(BackendOpts());
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateAccepted);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_TRUE(s.Resource(path)->resource.contains("observed"));
  EXPECT_EQ(b->Stats().transitions, 0u);
  auto after = s.store->Read(store::kResources, arm::PartitionKey(kSub), op_id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->ttl_seconds, before->ttl_seconds);
  auto get = s.Get(path + V());
  ASSERT_EQ(get.result_int(), 200u);
  EXPECT_NE(FindPointer(BodyOf(get), "/properties/api/url"), nullptr) << get.body();

  s.cs.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateSucceeded);
  EXPECT_EQ(s.Resource(path)->provisioning_state, arm::kStateSucceeded);
  auto billed = s.store->Read(store::kBilling, arm::PartitionKey(kSub), arm::ResourceDocumentId(path));
  ASSERT_TRUE(billed.ok()) << billed.error().ToString();
  EXPECT_EQ(GetString(billed->body.as_object(), "internalId"), href);
  EXPECT_EQ(b->Stats().recovered_creates, 0u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

// An object found in a state that moves the operation is recorded with that status change: one
// batch for both.
TEST_F(CreateOrderingTest, AnObjectFoundMovingIsRecordedWithTheStatusChange) {
  using Method = store::FaultInjectingStore::Method;
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  s.cs.SetState(href, "installing");

  store::FaultInjectingStore counted(*s.store);
  auto created = backend::Backend::Create(BackendOpts(), &counted, &s.cs, &s.clock,
                                          Logger(s.log, &s.clock, LogLevel::kDebug, "backend"), &notifier);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  auto b = std::move(created).value();
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateProvisioning);
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->provisioning_state, arm::kStateProvisioning);
  EXPECT_EQ(b->Stats().transitions, 1u);
  EXPECT_EQ(counted.CallCount(Method::kBatch), 1u);
}

// The frontend stopped (or the Cluster Service did not answer) before the object was made: nothing
// is found, and after the grace period the backend's recovery makes it with the operation's
// idempotency key and records it.
TEST_F(CreateOrderingTest, NoObjectIsMadeByTheRecoveryAfterTheGracePeriod) {
  s.cs.FailNextCreate(Error::Unavailable("cluster service down"));
  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  EXPECT_EQ(s.cs.ObjectCount(), 0u);

  auto b = MakeBackend(BackendOpts());
  Reconcile(*b);
  EXPECT_EQ(s.cs.ObjectCount(), 0u);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateAccepted);

  s.clock.Advance(3min);
  Reconcile(*b);
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(b->Stats().recovered_creates, 1u);
  s.cs.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(s.Operation(op_id)->status, arm::kStateSucceeded);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
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

// With the event stream, the object's first event names an object no operation knows: the backend
// takes it for the create of that name and ends the create with its internal ID.
TEST_F(CreateOrderingTest, TheObjectsEventEndsTheCreate) {
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
  b->Stop();
  EXPECT_EQ(s.Resource(path)->provisioning_state, arm::kStateSucceeded);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(b->Stats().recovered_creates, 0u);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

// The object's first event can come before the create's operation reaches the backend's index (the
// change feed and the event stream race): the event matches nothing then, and the backend keeps the
// recently made object, so the operation's first check claims it without asking the Cluster Service.
TEST_F(CreateOrderingTest, AnEventBeforeTheOperationIsIndexedIsClaimedByItsCheck) {
  s.cs.SetEventsEnabled(true);
  auto b = MakeBackend(BackendOpts());
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());

  const std::string path = ClusterPath("c1");
  auto r = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  const std::string op_id = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  const std::string href = OnlyClusterHref();
  ASSERT_FALSE(href.empty());
  auto pumped = b->PumpEventsOnce(0ms);
  ASSERT_TRUE(pumped.ok());
  ASSERT_GE(*pumped, 1u);
  EXPECT_TRUE(s.Operation(op_id)->internal_id.empty());

  const size_t calls = s.cs.Calls().size();
  Reconcile(*b);
  for (size_t i = calls; i < s.cs.Calls().size(); ++i)
    EXPECT_EQ(s.cs.Calls()[i].rfind("List", 0), std::string::npos) << s.cs.Calls()[i];  // no search
  EXPECT_EQ(s.Operation(op_id)->internal_id, href);
  EXPECT_EQ(s.Resource(path)->internal_id, href);
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
}

// A PUT without conditional headers tries the create before reading the resource: the only read is the
// subscription's. On an existing resource the create's batch fails, writes nothing, and the request is
// decided as the update it is.
TEST_F(CreateOrderingTest, APutWithoutConditionsCreatesBeforeReadingAndFallsBackToAnUpdate) {
  using Method = store::FaultInjectingStore::Method;
  store::FaultInjectingStore counted(*s.store);
  ServeFrom(&counted);

  const std::string path = ClusterPath("c1");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  EXPECT_EQ(counted.CallCount(Method::kRead), 1u);  // the subscription
  EXPECT_EQ(counted.CallCount(Method::kBatch), 1u);
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
