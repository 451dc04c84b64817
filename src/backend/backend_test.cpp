// Backend scenarios against the in-memory SQLite store and the fake Cluster Service, driven with a
// FakeClock through ReconcileOnce() (and, for the event-driven ones, the running threads).
#include "backend/backend.h"
#include "backend/divergence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "api/api.h"
#include "arm/documents.h"
#include "arm/store_indexes.h"
#include "backend/event_follower.h"
#include "clusterservice/forwarding_client.h"
#include "clusterservice/mapping.h"
#include "clusterservice/testing/fake_cluster_service.h"
#include "clusterservice/update_graph.h"
#include "core/time.h"
#include "core/uuid.h"
#include "store/fault_injecting_store.h"
#include "store/forwarding_store.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;
using clusterservice::testing::FakeClusterService;

const std::string kClusters = std::string(clusterservice::kApiPrefix) + "/clusters";

class CapturingNotifier final : public Notifier {
 public:
  Status Notify(std::string_view uri, const json::object& body) override {
    std::lock_guard lock(mu_);
    ++attempts_;
    if (failures_left_ > 0) {
      --failures_left_;
      return Error::Unavailable("receiver down");
    }
    sent_.emplace_back(std::string(uri), body);
    return Status::Ok();
  }
  void FailNext(int n) {
    std::lock_guard lock(mu_);
    failures_left_ = n;
  }
  std::vector<std::pair<std::string, json::object>> Sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }
  int Attempts() const {
    std::lock_guard lock(mu_);
    return attempts_;
  }

 private:
  mutable std::mutex mu_;
  int failures_left_ = 0;
  int attempts_ = 0;
  std::vector<std::pair<std::string, json::object>> sent_;
};

// What the frontend leaves behind for one resource and its active operation.
struct Flow {
  std::string resource_id;
  std::string href;
  std::string op;
};

class BackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenStore("sqlite::memory:", {.clock = &clock_, .indexes = arm::StoreIndexes()});
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::move(s).value();
    PutSubscription(sub_, "Registered");
  }

  BackendOptions Options() const {
    BackendOptions o;
    o.gc_enabled = false;
    o.create_recovery_grace = 1min;
    o.notifications.initial_backoff = 1000ms;
    o.notifications.max_backoff = 8000ms;
    o.notifications.max_attempts = 5;
    return o;
  }

  // Only the event stream moves operations (no resync or polling within a test), on quick loops.
  BackendOptions EventsOnlyOptions() const {
    BackendOptions o = Options();
    o.resync_interval = 1h;
    o.poll_interval = 1h;
    o.tick = 50ms;
    o.feed_wait = 50ms;
    o.event_wait = 50ms;
    return o;
  }

  std::unique_ptr<Backend> MakeBackend(BackendOptions o) {
    auto b = Backend::Create(std::move(o), store_.get(), &cs_, &clock_, logger_, &notifier_);
    EXPECT_TRUE(b.ok()) << b.error().ToString();
    return std::move(b).value();
  }
  std::unique_ptr<Backend> MakeBackend() { return MakeBackend(Options()); }

  std::string ClusterId(std::string_view name, std::string_view sub = "") const {
    return "/subscriptions/" + std::string(sub.empty() ? sub_ : sub) +
           "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + std::string(name);
  }

  void PutSubscription(const std::string& sub, std::string_view state) {
    arm::SubscriptionDocument d;
    d.id = sub;
    d.properties = json::object{{"state", state}, {"registrationDate", "2025-01-01T00:00:00Z"}};
    ASSERT_TRUE(store_->Upsert(store::kResources, sub, sub, d.ToBody()).ok());
  }

  void PutResource(const std::string& pk, const std::string& resource_id, std::string_view type,
                   const std::string& internal_id, std::string_view state,
                   std::optional<std::string> active) {
    arm::ResourceDocument d;
    d.resource_type = std::string(type);
    d.resource_id = resource_id;
    d.internal_id = internal_id;
    d.provisioning_state = std::string(state);
    d.active_operation_id = std::move(active);
    // As the frontend stores it: the canonical resource (what a recovered create is built from).
    api::Kind kind = type == arm::kClusterDocType    ? api::Kind::kCluster
                     : type == arm::kNodePoolDocType ? api::Kind::kNodePool
                                                     : api::Kind::kExternalAuth;
    d.resource = api::ToStorage(api::Resource{kind, "eastus", {}, std::nullopt, {}, {}});
    auto r = store_->Upsert(store::kResources, pk, arm::ResourceDocumentId(resource_id), d.ToBody());
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  }

  std::string PutOperation(const std::string& pk, arm::OperationRequest request,
                           const std::string& resource_id, const std::string& internal_id,
                           std::string_view status, std::string notification_uri = "",
                           std::optional<TimePoint> start = std::nullopt) {
    arm::OperationDocument op;
    op.id = NewUuidV4();
    op.request = request;
    op.external_id = resource_id;
    op.internal_id = internal_id;
    op.notification_uri = std::move(notification_uri);
    op.location = "eastus";
    op.start_time = start.value_or(clock_.Now());
    op.last_transition_time = op.start_time;
    op.status = std::string(status);
    if (arm::IsTerminalState(status)) op.error = arm::OperationError{"Canceled", "x", "", {}};
    auto r = store_->Create(store::kResources, pk, op.id, op.ToBody(), arm::kDefaultOperationTtlSeconds);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return op.id;
  }

  // An update the frontend recorded but has not yet confirmed to the Cluster Service.
  std::string PutUnconfirmedUpdate(const Flow& f) {
    std::string op =
        PutOperation(sub_, arm::OperationRequest::kUpdate, f.resource_id, f.href, arm::kStateAccepted);
    EXPECT_TRUE(
        store_
            ->Patch(store::kResources, sub_, op,
                    {store::PatchOp{store::PatchOp::Kind::kSet, std::string(arm::kPathAwaitingClusterService),
                                    json::value(true)}})
            .ok());
    PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateAccepted, op);
    return op;
  }

  // A node pool update to `replicas` that the frontend recorded and has not confirmed; its Cluster
  // Service object holds `held` replicas and is in `state`.
  struct UnconfirmedScale {
    std::string href;
    std::string resource_id;
    std::string op;
  };
  UnconfirmedScale PutUnconfirmedScale(int64_t replicas, int64_t held, std::string_view state) {
    Flow cluster = Existing("c1", sub_);
    UnconfirmedScale u;
    u.href = cs_.AddObject(cluster.href + "/node_pools", state);
    cs_.SetField(u.href, "replicas", json::value(held));
    u.resource_id = cluster.resource_id + "/nodePools/np1";
    u.op = PutOperation(sub_, arm::OperationRequest::kUpdate, u.resource_id, u.href, arm::kStateAccepted);
    EXPECT_TRUE(
        store_
            ->Patch(store::kResources, sub_, u.op,
                    {store::PatchOp{store::PatchOp::Kind::kSet, std::string(arm::kPathAwaitingClusterService),
                                    json::value(true)}})
            .ok());
    arm::ResourceDocument d;
    d.resource_type = std::string(arm::kNodePoolDocType);
    d.resource_id = u.resource_id;
    d.internal_id = u.href;
    d.provisioning_state = std::string(arm::kStateAccepted);
    d.active_operation_id = u.op;
    d.resource = api::ToStorage(api::Resource{
        api::Kind::kNodePool, "eastus", {}, std::nullopt, json::object{{"replicas", replicas}}, {}, {}});
    EXPECT_TRUE(
        store_->Upsert(store::kResources, sub_, arm::ResourceDocumentId(u.resource_id), d.ToBody()).ok());
    return u;
  }

  size_t UpdatesSent() const {
    size_t n = 0;
    for (const std::string& call : cs_.Calls()) n += call.rfind("Update ", 0) == 0 ? 1 : 0;
    return n;
  }

  std::string EtagOf(const std::string& resource_id) {
    auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(resource_id));
    return d.ok() ? d->etag : "";
  }

  // A create the frontend finished: resource + Accepted operation + a Cluster Service object.
  Flow StartCreate(std::string_view name, std::string notification_uri = "") {
    Flow f;
    f.resource_id = ClusterId(name);
    f.href = cs_.AddObject(kClusters, "validating");
    f.op = PutOperation(sub_, arm::OperationRequest::kCreate, f.resource_id, f.href, arm::kStateAccepted,
                        std::move(notification_uri));
    PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateAccepted, f.op);
    return f;
  }

  // A cluster that exists and is idle.
  Flow Existing(std::string_view name, const std::string& sub) {
    Flow f;
    f.resource_id = ClusterId(name, sub);
    f.href = cs_.AddObject(kClusters, "ready");
    PutResource(sub, f.resource_id, arm::kClusterDocType, f.href, arm::kStateSucceeded, std::nullopt);
    return f;
  }

  // A cluster the Cluster Service runs at 4.20.15 in the fast channel group; its href ("" when refused).
  std::string CreateFastCluster(const std::string& name, const std::string& sub) {
    json::object body{
        {"name", name},
        {"azure", json::object{{"subscription_id", sub}}},
        {"version", json::object{{"id", "openshift-v4.20.15-fast"}, {"channel_group", "fast"}}}};
    auto c = cs_.Create(kClusters, body, "");
    EXPECT_TRUE(c.ok()) << c.error().ToString();
    return c.ok() ? std::string(*GetString(*c, "href")) : std::string();
  }

  arm::OperationDocument Op(const std::string& id, const std::string& pk = "") {
    auto d = store_->Read(store::kResources, pk.empty() ? sub_ : pk, id);
    EXPECT_TRUE(d.ok()) << id;
    if (!d.ok()) return {};
    return arm::OperationDocument::FromBody(id, d->body).value();
  }

  std::optional<arm::ResourceDocument> Resource(const std::string& resource_id, const std::string& pk = "") {
    auto d = store_->Read(store::kResources, pk.empty() ? sub_ : pk, arm::ResourceDocumentId(resource_id));
    if (!d.ok()) return std::nullopt;
    return arm::ResourceDocument::FromBody(d->body).value();
  }

  void Reconcile(Backend& b) {
    Status s = b.ReconcileOnce();
    ASSERT_TRUE(s.ok()) << s.error().ToString();
  }
  // Reconciles now, 30 min later (the orphan is kept) and 61 min later (it is being deleted).
  void ExpectCollectedAfterTheWindowOnly(Backend& b, const std::string& orphan) {
    Reconcile(b);
    clock_.Advance(30min);
    Reconcile(b);
    EXPECT_EQ(cs_.StateOf(orphan), "ready");
    clock_.Advance(31min);
    Reconcile(b);
    EXPECT_EQ(cs_.StateOf(orphan), "uninstalling");
  }

  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  FakeClusterService cs_{&clock_};
  CapturingNotifier notifier_;
  Logger logger_{std::make_shared<MemoryLogSink>(), &clock_, LogLevel::kDebug, "backend"};
  std::string sub_ = "11111111-2222-3333-4444-555555555555";
};

TEST_F(BackendTest, CreateGoesThroughProvisioningToSucceeded) {
  auto b = MakeBackend();
  Flow f = StartCreate("c1", "http://arm.example/notify");

  Reconcile(*b);  // validating: no change
  EXPECT_EQ(Op(f.op).status, arm::kStateAccepted);

  clock_.Advance(1min);
  cs_.SetState(f.href, "installing");
  Reconcile(*b);
  EXPECT_EQ(Op(f.op).status, arm::kStateProvisioning);
  EXPECT_EQ(Op(f.op).last_transition_time, clock_.Now());
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateProvisioning);
  EXPECT_EQ(Resource(f.resource_id)->active_operation_id, f.op);

  clock_.Advance(10min);
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  auto op = Op(f.op);
  EXPECT_EQ(op.status, arm::kStateSucceeded);
  EXPECT_FALSE(op.error.has_value());
  auto res = Resource(f.resource_id);
  EXPECT_EQ(res->provisioning_state, arm::kStateSucceeded);
  EXPECT_FALSE(res->active_operation_id.has_value());

  // Billing: the creation time of the resource.
  auto bill = store_->Read(store::kBilling, sub_, arm::ResourceDocumentId(f.resource_id));
  ASSERT_TRUE(bill.ok());
  EXPECT_EQ(GetString(bill->body.as_object(), "creationTime").value_or(""),
            FormatRfc3339(clock_.Now(), true));
  EXPECT_EQ(bill->body.as_object().count("deletionTime"), 0u);

  // The notification carries the operation status resource.
  auto sent = notifier_.Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].first, "http://arm.example/notify");
  EXPECT_EQ(GetString(sent[0].second, "status").value_or(""), "Succeeded");
  EXPECT_EQ(GetString(sent[0].second, "name").value_or(""), f.op);
  EXPECT_EQ(b->Stats().in_flight, 0u);
}

TEST_F(BackendTest, ClusterErrorFailsWithCodeAndMessage) {
  auto b = MakeBackend();
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "error", "OCM3055", "quota exceeded in eastus");
  Reconcile(*b);
  auto op = Op(f.op);
  EXPECT_EQ(op.status, arm::kStateFailed);
  ASSERT_TRUE(op.error.has_value());
  EXPECT_EQ(op.error->code, "OCM3055");
  EXPECT_EQ(op.error->message, "quota exceeded in eastus");
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateFailed);

  // Without a code the error is InternalServerError.
  Flow g = StartCreate("c2");
  cs_.SetState(g.href, "error", "", "boom");
  Reconcile(*b);
  EXPECT_EQ(Op(g.op).error->code, "InternalServerError");
  EXPECT_EQ(Op(g.op).error->message, "boom");
}

TEST_F(BackendTest, UpdateGoesThroughUpdatingToSucceeded) {
  auto b = MakeBackend();
  Flow f = Existing("c1", sub_);
  std::string op =
      PutOperation(sub_, arm::OperationRequest::kUpdate, f.resource_id, f.href, arm::kStateAccepted);
  PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateAccepted, op);
  cs_.SetState(f.href, "updating");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateUpdating);
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateUpdating);
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateSucceeded);
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateSucceeded);
  EXPECT_FALSE(Resource(f.resource_id)->active_operation_id.has_value());
}

TEST_F(BackendTest, StaleReadyEventDoesNotEndAnUpdate) {
  auto b = MakeBackend();
  Reconcile(*b);
  Flow f = Existing("c1", sub_);
  cs_.SetState(f.href, "ready");  // the last event of the creation, not yet read by the backend
  std::string op =
      PutOperation(sub_, arm::OperationRequest::kUpdate, f.resource_id, f.href, arm::kStateAccepted);
  PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateAccepted, op);
  ASSERT_TRUE(b->PumpChangesOnce().ok());  // the update is indexed
  cs_.SetState(f.href, "updating");        // what the update's PATCH did meanwhile
  auto n = b->PumpEventsOnce(0ms);         // delivers the stale "ready", then "updating"
  ASSERT_TRUE(n.ok());
  EXPECT_NE(Op(op).status, arm::kStateSucceeded);
  Reconcile(*b);  // the check reads the current status
  EXPECT_EQ(Op(op).status, arm::kStateUpdating);
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, UnconfirmedUpdateWaitsForTheFrontend) {
  auto b = MakeBackend();
  Reconcile(*b);
  Flow f = Existing("c1", sub_);  // ready: the frontend has not sent the update yet
  std::string op = PutUnconfirmedUpdate(f);
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateAccepted);  // "ready" is the state before the update
  // The frontend's request reached the Cluster Service, and it confirms.
  cs_.SetState(f.href, "updating");
  ASSERT_TRUE(
      store_
          ->Patch(store::kResources, sub_, op,
                  {store::PatchOp{store::PatchOp::Kind::kRemove,
                                  std::string(arm::kPathAwaitingClusterService), json::value(nullptr)}})
          .ok());
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateUpdating);
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, UpdateNeverConfirmedIsJudgedAfterTheGrace) {
  auto b = MakeBackend();
  Flow f = Existing("c1", sub_);
  std::string op = PutUnconfirmedUpdate(f);
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateAccepted);
  clock_.Advance(2min);  // the frontend died before confirming: the state decides after the grace
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, UnconfirmedUpdateTheObjectHoldsIsConfirmedWithoutWaitingForTheGrace) {
  auto b = MakeBackend();
  // The Cluster Service took the PATCH; the store failed under the frontend's confirmation.
  UnconfirmedScale u = PutUnconfirmedScale(5, 5, "updating");
  Reconcile(*b);
  EXPECT_TRUE(Op(u.op).awaiting_cluster_service);  // its frontend may still confirm it
  EXPECT_EQ(Op(u.op).status, arm::kStateAccepted);
  clock_.Advance(1s);
  const std::string etag = EtagOf(u.resource_id);
  Reconcile(*b);
  EXPECT_FALSE(Op(u.op).awaiting_cluster_service);
  EXPECT_EQ(Op(u.op).status, arm::kStateUpdating);  // judged by the object's state from then on
  EXPECT_NE(EtagOf(u.resource_id), etag);           // a late undo of its frontend can no longer win
  EXPECT_EQ(UpdatesSent(), 0u);
  EXPECT_EQ(b->Stats().recovered_updates, 1u);
  cs_.SetState(u.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(u.op).status, arm::kStateSucceeded);
  EXPECT_FALSE(Resource(u.resource_id)->active_operation_id.has_value());
}

TEST_F(BackendTest, UnconfirmedUpdateTheObjectLacksIsSentByTheBackendOnceItsFrontendIsTakenForGone) {
  auto b = MakeBackend();
  // The frontend stopped after recording the update, before its PATCH.
  UnconfirmedScale u = PutUnconfirmedScale(5, 3, "ready");
  clock_.Advance(2s);
  Reconcile(*b);
  EXPECT_TRUE(Op(u.op).awaiting_cluster_service);  // not held, and its frontend may still send it
  EXPECT_EQ(UpdatesSent(), 0u);
  clock_.Advance(3s);
  Reconcile(*b);
  EXPECT_EQ(UpdatesSent(), 1u);
  auto object = cs_.Get(u.href);
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(object->at("replicas"), json::value(5));
  EXPECT_FALSE(Op(u.op).awaiting_cluster_service);
  EXPECT_EQ(b->Stats().recovered_updates, 1u);
}

TEST_F(BackendTest, UnconfirmedUpdateTheClusterServiceRefusesEndsFailedWithItsReason) {
  auto b = MakeBackend();
  UnconfirmedScale u = PutUnconfirmedScale(500, 3, "ready");
  cs_.FailUpdatesWith(Error::InvalidArgument("replicas must be at most 250"));
  clock_.Advance(5s);
  Reconcile(*b);
  auto op = Op(u.op);
  EXPECT_EQ(op.status, arm::kStateFailed);
  ASSERT_TRUE(op.error.has_value());
  EXPECT_EQ(op.error->code, "InvalidRequestContent");
  EXPECT_NE(op.error->message.find("at most 250"), std::string::npos);
  EXPECT_EQ(Resource(u.resource_id)->provisioning_state, arm::kStateFailed);
  EXPECT_FALSE(Resource(u.resource_id)->active_operation_id.has_value());
}

TEST_F(BackendTest, UnconfirmedUpdateABusyObjectRefusesIsSentAgainLater) {
  auto b = MakeBackend();
  UnconfirmedScale u = PutUnconfirmedScale(5, 3, "ready");
  cs_.FailUpdatesWith(Error::Conflict("node pool is in state 'updating' and cannot be updated"));
  clock_.Advance(5s);
  Reconcile(*b);
  EXPECT_TRUE(Op(u.op).awaiting_cluster_service);
  EXPECT_EQ(Op(u.op).status, arm::kStateAccepted);
  cs_.FailUpdatesWith(std::nullopt);
  clock_.Advance(1s);
  Reconcile(*b);
  EXPECT_FALSE(Op(u.op).awaiting_cluster_service);
  EXPECT_EQ(UpdatesSent(), 2u);
}

TEST_F(BackendTest, NodePoolErrorIsInternalServerError) {
  auto b = MakeBackend();
  Flow c = Existing("c1", sub_);
  std::string np_id = c.resource_id + "/nodePools/np1";
  std::string np_href = cs_.AddObject(c.href + "/node_pools", "pending");
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, np_id, np_href, arm::kStateAccepted);
  PutResource(sub_, np_id, arm::kNodePoolDocType, np_href, arm::kStateAccepted, op);
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateAccepted);
  cs_.SetState(np_href, "recoverable_error", "SomeCode", "machines did not join");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateFailed);
  EXPECT_EQ(Op(op).error->code, "InternalServerError");
  EXPECT_EQ(Op(op).error->message, "machines did not join");
}

TEST_F(BackendTest, DeleteConfirmedBy404RemovesDocumentsAndClosesBilling) {
  auto b = MakeBackend();
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  ASSERT_EQ(Op(f.op).status, arm::kStateSucceeded);

  // The frontend's DELETE: CS delete, operation, resource points at it.
  ASSERT_TRUE(cs_.Delete(f.href).ok());
  std::string del = PutOperation(sub_, arm::OperationRequest::kDelete, f.resource_id, f.href,
                                 arm::kStateDeleting, "http://arm.example/n");
  PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateDeleting, del);
  Reconcile(*b);
  EXPECT_EQ(Op(del).status, arm::kStateDeleting);
  EXPECT_TRUE(Resource(f.resource_id).has_value());
  EXPECT_EQ(cs_.deletes(), 1);  // uninstalling already: no second delete

  clock_.Advance(15min);
  cs_.Remove(f.href);
  Reconcile(*b);
  EXPECT_EQ(Op(del).status, arm::kStateSucceeded);
  EXPECT_FALSE(Resource(f.resource_id).has_value());
  auto bill = store_->Read(store::kBilling, sub_, arm::ResourceDocumentId(f.resource_id));
  ASSERT_TRUE(bill.ok());
  EXPECT_EQ(GetString(bill->body.as_object(), "deletionTime").value_or(""),
            FormatRfc3339(clock_.Now(), true));
  EXPECT_EQ(notifier_.Sent().size(), 1u);
}

// A create whose frontend stopped after the Cluster Service made the cluster but before the internal
// ID was recorded, deleted before its recovery: the Delete finds the object by its ARM names and
// deletes it (not another cluster) instead of leaving it behind.
TEST_F(BackendTest, DeleteOfACreateWhoseInternalIdWasNeverRecordedDeletesItsObject) {
  auto b = MakeBackend();
  auto make = [&](std::string_view name) {
    json::object azure{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", name}};
    auto made = cs_.Create(kClusters, json::object{{"name", name}, {"azure", azure}}, NewUuidV4());
    EXPECT_TRUE(made.ok());
    return std::string(GetString(*made, "href").value_or(""));
  };
  const std::string lost = make("c1");
  const std::string other = make("c2");
  const std::string resource_id = ClusterId("c1");
  std::string del = PutOperation(sub_, arm::OperationRequest::kDelete, resource_id, "", arm::kStateDeleting);
  PutResource(sub_, resource_id, arm::kClusterDocType, "", arm::kStateDeleting, del);

  Reconcile(*b);
  EXPECT_EQ(cs_.deletes(), 1);
  EXPECT_EQ(Op(del).status, arm::kStateDeleting);  // uninstalling: not gone yet
  cs_.Remove(lost);
  Reconcile(*b);
  EXPECT_EQ(Op(del).status, arm::kStateSucceeded);
  EXPECT_FALSE(Resource(resource_id).has_value());
  EXPECT_FALSE(cs_.Exists(lost));
  EXPECT_TRUE(cs_.Exists(other));
  EXPECT_EQ(cs_.deletes(), 1);
}

// A create request given up on that reaches the Cluster Service after its resource was deleted (a
// partition healed, TCP delivered it) makes an object nothing records: it is deleted at its first
// event, not after the orphan collector's window (disabled here). An object a create in flight may
// still record, and one whose resource's ending the store does not know, are kept.
TEST_F(BackendTest, ObjectOfACreateThatArrivedAfterItsResourceWasDeletedIsDeletedAtItsFirstEvent) {
  auto b = MakeBackend();
  Reconcile(*b);
  auto late_create = [&](std::string_view name, const std::string& key) {
    json::object azure{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", name}};
    auto made = cs_.Create(kClusters, json::object{{"name", name}, {"azure", azure}}, key);
    EXPECT_TRUE(made.ok());
    return std::string(GetString(*made, "href").value_or(""));
  };
  // c1: its create canceled by the DELETE, which found nothing to delete and succeeded.
  const std::string deleted_id = ClusterId("c1");
  const std::string canceled =
      PutOperation(sub_, arm::OperationRequest::kCreate, deleted_id, "", arm::kStateCanceled);
  PutOperation(sub_, arm::OperationRequest::kDelete, deleted_id, "", arm::kStateSucceeded);
  // c2: its create in flight (the frontend's request timed out; the backend has not found the object).
  const std::string in_doubt_id = ClusterId("c2");
  const std::string in_doubt =
      PutOperation(sub_, arm::OperationRequest::kCreate, in_doubt_id, "", arm::kStateAccepted);
  PutResource(sub_, in_doubt_id, arm::kClusterDocType, "", arm::kStateAccepted, in_doubt);
  // A node pool of a live cluster, deleted the same way.
  Flow cluster = Existing("c3", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "c3"}});
  const std::string pool_id = cluster.resource_id + "/nodePools/np1";
  const std::string pool_create =
      PutOperation(sub_, arm::OperationRequest::kCreate, pool_id, "", arm::kStateCanceled);
  PutOperation(sub_, arm::OperationRequest::kDelete, pool_id, "", arm::kStateSucceeded);
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());  // (the cluster's creation)

  const std::string late = late_create("c1", canceled);
  const std::string kept = late_create("c2", in_doubt);
  const std::string unknown = late_create("c4", NewUuidV4());  // no document, no operation
  auto pool = cs_.Create(cluster.href + "/node_pools", json::object{{"name", "np1"}}, pool_create);
  ASSERT_TRUE(pool.ok());
  const std::string late_pool(GetString(*pool, "href").value_or(""));
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());

  EXPECT_EQ(cs_.StateOf(late), "uninstalling");
  EXPECT_EQ(cs_.StateOf(late_pool), "uninstalling");
  EXPECT_EQ(cs_.StateOf(kept), "validating");
  EXPECT_EQ(cs_.StateOf(unknown), "validating");
  EXPECT_EQ(cs_.StateOf(cluster.href), "ready");
  EXPECT_EQ(b->Stats().gc_deleted, 2u);
}

// The billing record commits with the operation's terminal batch: one durable commit, so a failed
// commit leaves neither and the retry writes both.
TEST_F(BackendTest, BillingRecordCommitsInTheOperationsTerminalBatch) {
  store::FaultInjectingStore faulty(*store_);
  auto made = Backend::Create(Options(), &faulty, &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(made.ok());
  auto b = std::move(made).value();
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "ready");
  const std::string bill_id = arm::ResourceDocumentId(f.resource_id);

  faulty.FailAllCalls(Error::Unavailable("store down"), store::FaultInjectingStore::Method::kBatch);
  Reconcile(*b);
  EXPECT_EQ(Op(f.op).status, arm::kStateAccepted);
  EXPECT_TRUE(store_->Read(store::kBilling, sub_, bill_id).error().IsNotFound());

  faulty.ClearFaults();
  const uint64_t batches = faulty.CallCount(store::FaultInjectingStore::Method::kBatch);
  Reconcile(*b);
  ASSERT_EQ(Op(f.op).status, arm::kStateSucceeded);
  EXPECT_EQ(faulty.CallCount(store::FaultInjectingStore::Method::kBatch) - batches, 1u);
  auto bill = store_->Read(store::kBilling, sub_, bill_id);
  ASSERT_TRUE(bill.ok());
  EXPECT_EQ(GetString(bill->body.as_object(), "internalId").value_or(""), f.href);
  auto op_doc = store_->Read(store::kResources, sub_, f.op);
  ASSERT_TRUE(op_doc.ok());
  EXPECT_EQ(bill->timestamp_ms, op_doc->timestamp_ms);
}

TEST_F(BackendTest, DeleteSupersedingChildCreateEndsWithBothDocumentsGone) {
  auto b = MakeBackend();
  Flow c = Existing("c1", sub_);
  std::string np_id = c.resource_id + "/nodePools/np1";
  std::string np_href = cs_.AddObject(c.href + "/node_pools", "installing");
  std::string np_create =
      PutOperation(sub_, arm::OperationRequest::kCreate, np_id, np_href, arm::kStateAccepted);
  PutResource(sub_, np_id, arm::kNodePoolDocType, np_href, arm::kStateAccepted, np_create);
  Reconcile(*b);
  ASSERT_EQ(Op(np_create).status, arm::kStateProvisioning);

  // The frontend's DELETE of the cluster: cancel the child's create, implicit child delete.
  ASSERT_TRUE(cs_.Delete(c.href).ok());
  std::string del =
      PutOperation(sub_, arm::OperationRequest::kDelete, c.resource_id, c.href, arm::kStateDeleting);
  PutResource(sub_, c.resource_id, arm::kClusterDocType, c.href, arm::kStateDeleting, del);
  {
    auto d = store_->Read(store::kResources, sub_, np_create).value();
    auto op = arm::OperationDocument::FromBody(np_create, d.body).value();
    op.status = arm::kStateCanceled;
    op.error =
        arm::OperationError{std::string(arm::kCanceledCode), std::string(arm::kSupersededMessage), "", {}};
    ASSERT_TRUE(store_->Replace(store::kResources, sub_, np_create, op.ToBody(), d.etag, d.ttl_seconds).ok());
  }
  std::string np_del =
      PutOperation(sub_, arm::OperationRequest::kDelete, np_id, np_href, arm::kStateDeleting);
  PutResource(sub_, np_id, arm::kNodePoolDocType, np_href, arm::kStateDeleting, np_del);

  Reconcile(*b);
  EXPECT_EQ(Op(del).status, arm::kStateDeleting);
  EXPECT_EQ(Op(np_del).status, arm::kStateDeleting);
  EXPECT_EQ(Op(np_create).status, arm::kStateCanceled);

  cs_.Remove(c.href);  // the node pool goes with it
  Reconcile(*b);
  EXPECT_EQ(Op(del).status, arm::kStateSucceeded);
  EXPECT_EQ(Op(np_del).status, arm::kStateSucceeded);
  EXPECT_EQ(Op(np_create).status, arm::kStateCanceled);
  EXPECT_EQ(Op(np_create).error->code, arm::kCanceledCode);
  EXPECT_FALSE(Resource(c.resource_id).has_value());
  EXPECT_FALSE(Resource(np_id).has_value());
  EXPECT_EQ(b->Stats().in_flight, 0u);
}

TEST_F(BackendTest, DeadlineFailsTheOperation) {
  BackendOptions o = Options();
  auto b = MakeBackend(o);
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "installing");
  Reconcile(*b);
  ASSERT_EQ(Op(f.op).status, arm::kStateProvisioning);
  clock_.Advance(59min);
  Reconcile(*b);
  EXPECT_EQ(Op(f.op).status, arm::kStateProvisioning);
  clock_.Advance(2min);
  Reconcile(*b);
  auto op = Op(f.op);
  EXPECT_EQ(op.status, arm::kStateFailed);
  ASSERT_TRUE(op.error.has_value());
  EXPECT_EQ(op.error->code, "OperationTimedOut");
  EXPECT_THAT(op.error->message, ::testing::HasSubstr("60 minutes"));
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateFailed);
  EXPECT_FALSE(Resource(f.resource_id)->active_operation_id.has_value());
  EXPECT_EQ(b->Stats().deadline_failures, 1u);

  // Terminal: a later "ready" changes nothing.
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(f.op).status, arm::kStateFailed);
}

TEST_F(BackendTest, NotificationsRetryWithBackoff) {
  auto b = MakeBackend();
  notifier_.FailNext(2);
  Flow f = StartCreate("c1", "http://arm.example/cb");
  cs_.SetState(f.href, "ready");
  Reconcile(*b);  // attempt 1 fails
  EXPECT_EQ(notifier_.Attempts(), 1);
  EXPECT_EQ(b->DeliverNotificationsOnce(), 0u);  // not due yet
  EXPECT_EQ(notifier_.Attempts(), 1);
  clock_.Advance(1s);
  EXPECT_EQ(b->DeliverNotificationsOnce(), 0u);  // attempt 2 fails
  EXPECT_EQ(notifier_.Attempts(), 2);
  clock_.Advance(1s);
  EXPECT_EQ(b->DeliverNotificationsOnce(), 0u);  // backoff doubled: 2 s
  clock_.Advance(1s);
  EXPECT_EQ(b->DeliverNotificationsOnce(), 1u);  // attempt 3 succeeds
  EXPECT_EQ(notifier_.Attempts(), 3);
  ASSERT_EQ(notifier_.Sent().size(), 1u);
  EXPECT_EQ(GetString(notifier_.Sent()[0].second, "status").value_or(""), "Succeeded");
  EXPECT_EQ(b->Stats().notifications_sent, 1u);
  EXPECT_EQ(b->Stats().notification_failures, 2u);

  // Bounded: a receiver that never answers is given up after max_attempts.
  notifier_.FailNext(100);
  Flow g = StartCreate("c2", "http://arm.example/cb2");
  cs_.SetState(g.href, "ready");
  Reconcile(*b);
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(10s);
    b->DeliverNotificationsOnce();
  }
  EXPECT_EQ(b->Stats().notifications_dropped, 1u);
  EXPECT_EQ(notifier_.Attempts(), 3 + 5);
}

bool PendingNotificationExists(store::Store* store, const std::string& pk, const std::string& op) {
  return store->Read(store::kResources, pk, arm::PendingNotificationId(op)).ok();
}

TEST_F(BackendTest, UndeliveredNotificationSurvivesTheBackend) {
  Flow f = StartCreate("c1", "http://arm.example/cb");
  {
    auto a = MakeBackend();
    notifier_.FailNext(100);
    cs_.SetState(f.href, "ready");
    Reconcile(*a);  // ends the operation; the first attempt fails
    EXPECT_EQ(Op(f.op).status, arm::kStateSucceeded);
    EXPECT_EQ(notifier_.Sent().size(), 0u);
    EXPECT_TRUE(PendingNotificationExists(store_.get(), sub_, f.op));
  }  // a dies with the notification undelivered
  notifier_.FailNext(0);
  auto b = MakeBackend();
  Reconcile(*b);
  ASSERT_EQ(notifier_.Sent().size(), 1u);
  EXPECT_EQ(notifier_.Sent()[0].first, "http://arm.example/cb");
  EXPECT_EQ(GetString(notifier_.Sent()[0].second, "status").value_or(""), "Succeeded");
  EXPECT_FALSE(PendingNotificationExists(store_.get(), sub_, f.op));
  // Delivered once: later passes (and the change feed entry of the pending document) send nothing.
  clock_.Advance(1s);
  Reconcile(*b);
  Reconcile(*b);
  EXPECT_EQ(notifier_.Sent().size(), 1u);
}

TEST_F(BackendTest, GivenUpNotificationLeavesNoPendingDocument) {
  BackendOptions o = Options();
  o.notifications.max_attempts = 2;
  auto b = MakeBackend(o);
  notifier_.FailNext(100);
  Flow f = StartCreate("c1", "http://arm.example/cb");
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  clock_.Advance(10s);
  b->DeliverNotificationsOnce();
  EXPECT_EQ(b->Stats().notifications_dropped, 1u);
  EXPECT_FALSE(PendingNotificationExists(store_.get(), sub_, f.op));
}

TEST_F(BackendTest, NotificationRecordedByTheFrontendIsDelivered) {
  auto b = MakeBackend();
  Reconcile(*b);
  // What the frontend writes when a delete cancels an operation ARM wants to hear about.
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, ClusterId("c9"), "",
                                arm::kStateCanceled, "http://arm.example/canceled");
  ASSERT_TRUE(store_
                  ->Create(store::kResources, sub_, arm::PendingNotificationId(op),
                           arm::PendingNotificationBody(op, "http://arm.example/canceled"))
                  .ok());
  Reconcile(*b);
  ASSERT_EQ(notifier_.Sent().size(), 1u);
  EXPECT_EQ(notifier_.Sent()[0].first, "http://arm.example/canceled");
  EXPECT_EQ(GetString(notifier_.Sent()[0].second, "status").value_or(""), "Canceled");
  EXPECT_FALSE(PendingNotificationExists(store_.get(), sub_, op));
}

TEST_F(BackendTest, RecoversCreateWhoseFrontendCrashedBeforeTheClusterService) {
  auto b = MakeBackend();
  std::string rid = ClusterId("c1");
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, rid, "", arm::kStateAccepted);
  PutResource(sub_, rid, arm::kClusterDocType, "", arm::kStateAccepted, op);

  Reconcile(*b);  // within the grace period: the frontend may still be at it
  EXPECT_EQ(cs_.creates(), 0);
  EXPECT_TRUE(Op(op).internal_id.empty());

  clock_.Advance(2min);
  Reconcile(*b);
  EXPECT_EQ(cs_.creates(), 1);
  std::string href = Op(op).internal_id;
  ASSERT_FALSE(href.empty());
  EXPECT_TRUE(cs_.Exists(href));
  EXPECT_EQ(Resource(rid)->internal_id, href);
  EXPECT_EQ(b->Stats().recovered_creates, 1u);

  cs_.SetState(href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, RecoveryReusesTheObjectTheFrontendAlreadyCreated) {
  auto b = MakeBackend();
  std::string rid = ClusterId("c1");
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, rid, "", arm::kStateAccepted);
  PutResource(sub_, rid, arm::kClusterDocType, "", arm::kStateAccepted, op);
  // As the frontend stores it: the resource, nothing observed yet.
  json::object stored =
      api::ToStorage(api::Resource{api::Kind::kCluster, "eastus", {}, std::nullopt, {}, {}});
  ASSERT_TRUE(
      store_
          ->Patch(store::kResources, sub_, arm::ResourceDocumentId(rid),
                  {{store::PatchOp::Kind::kSet, "/properties/resource", json::value(std::move(stored))}})
          .ok());
  // The frontend reached the Cluster Service, then died before recording the internal ID and the
  // values the Cluster Service assigned.
  auto made = cs_.Create(kClusters,
                         json::object{{"name", "c1"},
                                      {"api", {{"url", "https://api.c1.example.com:6443"}}},
                                      {"azure", {{"issuer_url", "https://oidc.example.com/c1"}}}},
                         op);
  ASSERT_TRUE(made.ok());
  std::string href(GetString(*made, "href").value());

  clock_.Advance(5min);
  Reconcile(*b);
  EXPECT_EQ(Op(op).internal_id, href);
  EXPECT_EQ(Resource(rid)->internal_id, href);
  EXPECT_EQ(cs_.ObjectCount(), 1u);  // no duplicate
  // GET shows them (every api-version's document requires them in a cluster's body).
  json::value observed = Resource(rid)->resource.at("observed");
  const json::value* api_url = FindPointer(observed, "/api/url");
  const json::value* issuer = FindPointer(observed, "/platform/issuerUrl");
  ASSERT_NE(api_url, nullptr) << ToJson(observed);
  ASSERT_NE(issuer, nullptr) << ToJson(observed);
  EXPECT_EQ(*api_url, "https://api.c1.example.com:6443");
  EXPECT_EQ(*issuer, "https://oidc.example.com/c1");
}

TEST_F(BackendTest, RecoveredCreateSendsTheBodyTheFrontendSends) {
  // The subscription's tenant goes into the cluster's azure block, as the frontend sends it.
  arm::SubscriptionDocument sub;
  sub.id = sub_;
  sub.properties = json::object{{"state", "Registered"},
                                {"registrationDate", "2025-01-01T00:00:00Z"},
                                {"properties", {{"tenantId", "72f988bf-86f1-41af-91ab-2d7cd011db47"}}}};
  ASSERT_TRUE(store_->Upsert(store::kResources, sub_, sub_, sub.ToBody()).ok());
  auto b = MakeBackend();
  std::string rid = ClusterId("c1");
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, rid, "", arm::kStateAccepted);
  PutResource(sub_, rid, arm::kClusterDocType, "", arm::kStateAccepted, op);
  clock_.Advance(5min);
  Reconcile(*b);
  std::string href = Op(op).internal_id;
  ASSERT_FALSE(href.empty());
  auto sent = cs_.Get(href);
  ASSERT_TRUE(sent.ok());
  auto expected =
      clusterservice::CreateRequestFor(*Resource(rid), "", "72f988bf-86f1-41af-91ab-2d7cd011db47");
  ASSERT_TRUE(expected.ok()) << expected.error().ToString();
  EXPECT_EQ(expected->collection_href, kClusters);
  for (const auto& [key, value] : expected->body) {
    ASSERT_TRUE(sent->contains(key)) << key;
    EXPECT_EQ(sent->at(key), value) << key;
  }
  const json::value sent_value(*sent);
  const json::value* tenant = FindPointer(sent_value, "/azure/tenant_id");
  ASSERT_NE(tenant, nullptr);
  EXPECT_EQ(*tenant, "72f988bf-86f1-41af-91ab-2d7cd011db47");
  const json::value* name = FindPointer(sent_value, "/azure/resource_name");
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(*name, "c1");
}

TEST_F(BackendTest, ImplicitDeleteOperationsLiveForTheConfiguredTtl) {
  const std::string sub = "99999999-0000-0000-0000-000000000007";
  PutSubscription(sub, "Registered");
  Flow f = Existing("c1", sub);
  BackendOptions o = Options();
  o.operation_ttl_seconds = 3600;
  auto b = MakeBackend(o);
  Reconcile(*b);
  PutSubscription(sub, "Deleted");
  Reconcile(*b);
  ASSERT_EQ(b->Stats().implicit_deletes, 1u);
  auto resource = Resource(f.resource_id, sub);
  ASSERT_TRUE(resource.has_value());
  ASSERT_TRUE(resource->active_operation_id.has_value());
  auto op = store_->Read(store::kResources, sub, *resource->active_operation_id);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(op->ttl_seconds, std::optional<int64_t>(3600));
}

TEST_F(BackendTest, RecoveryRejectedByTheClusterServiceFails) {
  auto b = MakeBackend();
  cs_.RejectCreates("invalid version 4.1");
  std::string rid = ClusterId("c1");
  std::string op = PutOperation(sub_, arm::OperationRequest::kCreate, rid, "", arm::kStateAccepted);
  PutResource(sub_, rid, arm::kClusterDocType, "", arm::kStateAccepted, op);
  clock_.Advance(5min);
  Reconcile(*b);
  auto doc = Op(op);
  EXPECT_EQ(doc.status, arm::kStateFailed);
  EXPECT_EQ(doc.error->code, "InvalidRequestContent");
  EXPECT_THAT(doc.error->message, ::testing::HasSubstr("invalid version"));
  EXPECT_EQ(Resource(rid)->provisioning_state, arm::kStateFailed);
}

TEST_F(BackendTest, SecondBackendTakesOverWhenTheFirstStopsRenewing) {
  BackendOptions oa = Options();
  oa.owner = "a";
  BackendOptions ob = Options();
  ob.owner = "b";
  auto a = MakeBackend(oa);
  auto b = MakeBackend(ob);
  Reconcile(*a);
  EXPECT_TRUE(a->Stats().active);
  Status sb = b->ReconcileOnce();
  ASSERT_FALSE(sb.ok());
  EXPECT_TRUE(sb.error().IsConflict());

  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "installing");
  clock_.Advance(11s);  // a does not renew: its lease lapses
  Reconcile(*b);
  EXPECT_TRUE(b->Stats().active);
  EXPECT_EQ(Op(f.op).status, arm::kStateProvisioning);
  Status sa = a->ReconcileOnce();
  ASSERT_FALSE(sa.ok());
  EXPECT_FALSE(a->Stats().active);
}

TEST_F(BackendTest, StaleFenceIsRefused) {
  BackendOptions oa = Options();
  oa.owner = "a";
  oa.shards = 1;  // a's only lease goes stale: it owns nothing after the refusal
  BackendOptions ob = oa;
  ob.owner = "b";
  auto a = MakeBackend(oa);
  auto b = MakeBackend(ob);
  TimePoint t0 = clock_.Now();
  Reconcile(*a);
  clock_.Advance(11s);
  Reconcile(*b);  // b holds the lease now, with a higher fence

  // a's clock view says its lease is still fresh (no renewal due): it tries to write and the store
  // refuses the stale fence.
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "installing");
  clock_.Set(t0 + 500ms);
  Status s = a->ReconcileOnce();
  EXPECT_FALSE(s.ok());
  EXPECT_GE(a->Stats().fence_refusals, 1u);
  EXPECT_EQ(Op(f.op).status, arm::kStateAccepted);
}

TEST_F(BackendTest, DeletedSubscriptionLosesAllItsResources) {
  const std::string sub = "99999999-0000-0000-0000-000000000250";
  PutSubscription(sub, "Registered");
  std::vector<Flow> flows;
  for (int i = 0; i < 250; ++i) flows.push_back(Existing("c" + std::to_string(i), sub));
  // One of them is still being created.
  std::string creating = PutOperation(sub, arm::OperationRequest::kCreate, flows[7].resource_id,
                                      flows[7].href, arm::kStateProvisioning);
  PutResource(sub, flows[7].resource_id, arm::kClusterDocType, flows[7].href, arm::kStateProvisioning,
              creating);
  cs_.SetState(flows[7].href, "installing");

  auto b = MakeBackend();
  Reconcile(*b);
  PutSubscription(sub, "Deleted");
  Reconcile(*b);
  EXPECT_EQ(b->Stats().implicit_deletes, 250u);
  EXPECT_EQ(cs_.deletes(), 250);
  EXPECT_EQ(Op(creating, sub).status, arm::kStateCanceled);

  Reconcile(*b);  // idempotent: nothing issued twice
  EXPECT_EQ(cs_.deletes(), 250);
  EXPECT_EQ(b->Stats().implicit_deletes, 250u);

  EXPECT_EQ(cs_.RemoveUninstalling(), 250u);
  Reconcile(*b);
  Reconcile(*b);
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = sub;
  q.resource_id_prefix = "/subscriptions/";
  auto left = store_->Query(q);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->documents.empty());
  EXPECT_EQ(b->Stats().in_flight, 0u);
  // The other subscription is untouched.
  EXPECT_EQ(cs_.ObjectCount(), 0u);
}

TEST_F(BackendTest, OrphanClusterCollectedAfterTheWindowOnly) {
  BackendOptions o = Options();
  o.gc_enabled = true;
  o.gc_window = 1h;
  auto b = MakeBackend(o);
  Flow kept = Existing("c1", sub_);
  std::string orphan = cs_.AddObject(kClusters, "ready");
  ExpectCollectedAfterTheWindowOnly(*b, orphan);  // a 1 h window
  EXPECT_EQ(cs_.StateOf(kept.href), "ready");
  EXPECT_EQ(b->Stats().gc_deleted, 1u);
}

TEST_F(BackendTest, OrphanNodePoolCollectedAfterTheWindowOnly) {
  BackendOptions o = Options();
  o.gc_enabled = true;
  o.gc_window = 1h;
  auto b = MakeBackend(o);
  Flow cluster = Existing("c1", sub_);
  const std::string pools = cluster.href + "/node_pools";
  std::string kept = cs_.AddObject(pools, "ready");
  PutResource(sub_, cluster.resource_id + "/nodePools/np1", arm::kNodePoolDocType, kept, arm::kStateSucceeded,
              std::nullopt);
  std::string orphan = cs_.AddObject(pools, "ready");  // its document is gone
  ExpectCollectedAfterTheWindowOnly(*b, orphan);       // a 1 h window
  EXPECT_EQ(cs_.StateOf(kept), "ready");
  EXPECT_EQ(cs_.StateOf(cluster.href), "ready");
  EXPECT_EQ(b->Stats().gc_deleted, 1u);
}

TEST_F(BackendTest, OnlyTheCoordinatorCollectsOrphans) {
  BackendOptions o = Options();
  o.gc_enabled = true;
  o.gc_window = 10s;
  o.gc_interval = 1s;
  o.owner = "a";
  auto a = MakeBackend(o);
  o.owner = "b";
  auto b = MakeBackend(o);
  std::string orphan = cs_.AddObject(kClusters, "ready");
  int both_active = 0;
  for (int i = 0; i < 20; ++i) {  // both keep their leases: a tick every second
    (void)a->ReconcileOnce();
    (void)b->ReconcileOnce();
    both_active += a->Stats().active && b->Stats().active ? 1 : 0;
    clock_.Advance(1s);
  }
  EXPECT_GE(both_active, 10) << "the shards were not split";
  EXPECT_EQ(a->Stats().shards_held + b->Stats().shards_held, o.shards);
  EXPECT_EQ(cs_.StateOf(orphan), "uninstalling");
  EXPECT_EQ(a->Stats().gc_deleted + b->Stats().gc_deleted, 1u);
  EXPECT_EQ(cs_.deletes(), 1);
}

TEST_F(BackendTest, ConditionsOfIdleResourcesFollowTheirEvents) {
  auto b = MakeBackend();
  Reconcile(*b);
  Flow cluster = Existing("idle", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "idle"}});
  std::string pool_href = cs_.AddObject(cluster.href + "/node_pools", "ready");
  cs_.SetField(pool_href, "azure", json::object{{"resource_name", "np1"}});
  const std::string pool_id = cluster.resource_id + "/nodePools/np1";
  PutResource(sub_, pool_id, arm::kNodePoolDocType, pool_href, arm::kStateSucceeded, std::nullopt);
  auto skip = b->PumpEventsOnce(0ms);  // (the creations)
  ASSERT_TRUE(skip.ok());

  json::array lost{json::object{{"type", "AzureIdentityValid"},
                                {"status", "False"},
                                {"reason", "IdentityNotFound"},
                                {"message", "identity deleted"}}};
  cs_.SetConditions(cluster.href, lost);
  cs_.SetConditions(pool_href, lost);
  auto n = b->PumpEventsOnce(0ms);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  auto stored = [&](const std::string& rid) -> json::value {
    auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(rid));
    if (!d.ok()) return nullptr;
    const json::value* c = FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/conditions");
    return c ? *c : json::value(nullptr);
  };
  EXPECT_EQ(stored(cluster.resource_id), json::value(lost));
  EXPECT_EQ(stored(pool_id), json::value(lost));
  EXPECT_EQ(b->Stats().idle_condition_syncs, 2u);
  // Nothing else changed: no operation was created or moved.
  EXPECT_EQ(Resource(cluster.resource_id)->provisioning_state, arm::kStateSucceeded);
}

// Counts the store batches that write a given document.
class BatchCountingStore final : public store::ForwardingStore {
 public:
  BatchCountingStore(store::Store* target, std::string doc_id)
      : store::ForwardingStore(target), doc_id_(std::move(doc_id)) {}
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops,
                                   const store::Lease* fence = nullptr) override {
    for (const store::WriteOp& w : ops) {
      if (w.id == doc_id_ && w.kind != store::WriteOp::Kind::kRead) {
        ++batches;
        break;
      }
    }
    return store::ForwardingStore::Batch(container, pk, std::move(ops), fence);
  }
  std::atomic<int> batches{0};

 private:
  std::string doc_id_;
};

// A status change and the conditions read with it are one durable commit of the resource document.
TEST_F(BackendTest, ConditionsReadWithAStatusChangeCommitInItsBatch) {
  Flow f = StartCreate("c1");
  json::array conditions{json::object{{"type", "Available"}, {"status", "False"}, {"reason", "Installing"}}};
  cs_.SetConditions(f.href, conditions);
  cs_.SetState(f.href, "installing");
  BatchCountingStore counting(store_.get(), arm::ResourceDocumentId(f.resource_id));
  auto b = Backend::Create(Options(), &counting, &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);  // checks the operation against the Cluster Service
  EXPECT_EQ(Op(f.op).status, arm::kStateProvisioning);
  auto doc = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(f.resource_id));
  ASSERT_TRUE(doc.ok());
  const json::value* stored = FindPointer(doc->body, std::string(arm::kPathServiceStatus) + "/conditions");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(*stored, json::value(conditions));
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateProvisioning);
  EXPECT_EQ(counting.batches.load(), 1);
  // Conditions that change without a status change are still copied, on their own.
  json::array ready{json::object{{"type", "Available"}, {"status", "True"}}};
  cs_.SetConditions(f.href, ready);
  Reconcile(**b);
  doc = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(f.resource_id));
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(*FindPointer(doc->body, std::string(arm::kPathServiceStatus) + "/conditions"),
            json::value(ready));
  EXPECT_EQ(counting.batches.load(), 2);
}

// An idle object's events that arrive in one page are copied once, from the last: its newer status.
TEST_F(BackendTest, IdleConditionsOfOnePageCommitOnce) {
  Flow cluster = Existing("idle", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "idle"}});
  BatchCountingStore counting(store_.get(), arm::ResourceDocumentId(cluster.resource_id));
  auto b = Backend::Create(Options(), &counting, &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);
  ASSERT_TRUE((*b)->PumpEventsOnce(0ms).ok());  // (the creation)
  const int before = counting.batches.load();

  json::array upgrading{json::object{{"type", "Progressing"}, {"status", "True"}, {"reason", "Upgrading"}}};
  json::array done{json::object{{"type", "Progressing"}, {"status", "False"}, {"reason", "AsExpected"}}};
  cs_.SetConditions(cluster.href, upgrading);
  cs_.SetConditions(cluster.href, done);
  auto n = (*b)->PumpEventsOnce(0ms);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(cluster.resource_id));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/conditions"), json::value(done));
  EXPECT_EQ(counting.batches.load() - before, 1);
}

// Before the first batch that writes a given document, changes the document's tags (as a frontend
// PATCH would between a reader's read and its write), and notes the kind of each write to it.
class TagsChangingStore final : public store::ForwardingStore {
 public:
  TagsChangingStore(store::Store* target, std::string pk, std::string doc_id)
      : store::ForwardingStore(target), pk_(std::move(pk)), doc_id_(std::move(doc_id)) {}
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops,
                                   const store::Lease* fence = nullptr) override {
    for (const store::WriteOp& w : ops) {
      if (w.id != doc_id_) continue;
      kinds.push_back(w.kind);
      if (kinds.size() == 1) {
        auto tagged = target()->Patch(store::kResources, pk_, doc_id_,
                                      {arm::SetAt("/properties/tags", json::object{{"team", "blue"}})}, {});
        EXPECT_TRUE(tagged.ok()) << tagged.error().ToString();
      }
    }
    return store::ForwardingStore::Batch(container, pk, std::move(ops), fence);
  }
  std::vector<store::WriteOp::Kind> kinds;

 private:
  std::string pk_;
  std::string doc_id_;
};

// A status is copied by replacing the document as read; when the document changed since (another
// field), by patching the status alone: neither change is lost.
TEST_F(BackendTest, IdleConditionsSurviveAChangeOfTheDocumentSinceItWasRead) {
  Flow cluster = Existing("tagged", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "tagged"}});
  auto b = Backend::Create(Options(), store_.get(), &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);
  ASSERT_TRUE((*b)->PumpEventsOnce(0ms).ok());  // (the creation)
  (*b)->Stop();

  TagsChangingStore changing(store_.get(), sub_, arm::ResourceDocumentId(cluster.resource_id));
  auto c = Backend::Create(Options(), &changing, &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  json::array upgrading{json::object{{"type", "Progressing"}, {"status", "True"}, {"reason", "Upgrading"}}};
  cs_.SetConditions(cluster.href, upgrading);
  Reconcile(**c);
  ASSERT_TRUE((*c)->PumpEventsOnce(0ms).ok());
  auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(cluster.resource_id));
  ASSERT_TRUE(d.ok());
  const json::value* conditions = FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/conditions");
  ASSERT_NE(conditions, nullptr);
  EXPECT_EQ(*conditions, json::value(upgrading));
  const json::value* tags = FindPointer(d->body, "/properties/tags");
  ASSERT_NE(tags, nullptr);
  EXPECT_EQ(*tags, json::value(json::object{{"team", "blue"}}));
  ASSERT_GE(changing.kinds.size(), 2u);
  EXPECT_EQ(changing.kinds[0], store::WriteOp::Kind::kReplace);  // refused: the tags changed since the read
  EXPECT_EQ(changing.kinds[1], store::WriteOp::Kind::kPatch);
}

// Holds each batch that writes a given document until the client has been asked for the page after
// the one being applied (at most 5 s), and says whether it was.
class PageAfterClient final : public clusterservice::ForwardingClient {
 public:
  using clusterservice::ForwardingClient::ForwardingClient;
  // `on_read_ahead` runs once, at the first read without a wait after `after`, before it is answered.
  void ExpectReadAfter(uint64_t after, std::function<void()> on_read_ahead) {
    std::lock_guard lock(mu_);
    after_ = after;
    on_read_ahead_ = std::move(on_read_ahead);
  }
  bool WaitReadAhead() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return read_ahead_; });
  }
  Result<clusterservice::EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mu_);
      if (timeout.count() == 0 && after_ && after >= *after_ && !read_ahead_) {
        read_ahead_ = true;
        hook = std::move(on_read_ahead_);
      }
    }
    if (hook) hook();
    cv_.notify_all();
    return target()->WatchEvents(after, timeout);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<uint64_t> after_;
  std::function<void()> on_read_ahead_;
  bool read_ahead_ = false;
};

class HeldBatchStore final : public store::ForwardingStore {
 public:
  HeldBatchStore(store::Store* target, std::string doc_id, PageAfterClient* client)
      : store::ForwardingStore(target), doc_id_(std::move(doc_id)), client_(client) {}
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops,
                                   const store::Lease* fence = nullptr) override {
    if (hold &&
        std::any_of(ops.begin(), ops.end(), [&](const store::WriteOp& w) { return w.id == doc_id_; })) {
      read_ahead_while_held = client_->WaitReadAhead();
    }
    return store::ForwardingStore::Batch(container, pk, std::move(ops), fence);
  }
  std::atomic<bool> hold{false};
  std::atomic<bool> read_ahead_while_held{false};

 private:
  const std::string doc_id_;
  PageAfterClient* const client_;
};

// The follower reads the next page while it applies one: an event that comes meanwhile is in that
// read, and the next call applies it without reading again; nothing is applied twice.
TEST_F(BackendTest, TheNextPageIsReadWhileAPageIsApplied) {
  Flow cluster = Existing("idle", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "idle"}});
  PageAfterClient cs(&cs_);
  HeldBatchStore held(store_.get(), arm::ResourceDocumentId(cluster.resource_id), &cs);
  auto b = Backend::Create(Options(), &held, &cs, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);
  ASSERT_TRUE((*b)->PumpEventsOnce(0ms).ok());  // (the creation)

  auto conditions = [](std::string reason) {
    return json::array{
        json::object{{"type", "Progressing"}, {"status", "True"}, {"reason", std::move(reason)}}};
  };
  auto stored = [&] {
    auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(cluster.resource_id));
    return d.ok() ? *FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/conditions")
                  : json::value();
  };
  const uint64_t before = cs_.WatchEvents(clusterservice::kLatestEvents, 0ms)->last_sequence;
  cs_.SetConditions(cluster.href, conditions("First"));
  // Comes while the first is applied, before the read of the page after it is answered.
  cs.ExpectReadAfter(before + 1, [&] { cs_.SetConditions(cluster.href, conditions("Second")); });
  held.hold = true;
  auto n = (*b)->PumpEventsOnce(0ms);
  held.hold = false;
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 1u);
  EXPECT_TRUE(held.read_ahead_while_held) << "the page after was not read while the first was applied";
  EXPECT_EQ(stored(), json::value(conditions("First")));
  n = (*b)->PumpEventsOnce(0ms);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(stored(), json::value(conditions("Second")));
  n = (*b)->PumpEventsOnce(0ms);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 0u);
}

TEST(SupersededInPageTest, OnlyTheLastEventOfAnObjectIsNotSuperseded) {
  auto event = [](std::string href) {
    clusterservice::Event e;
    e.href = std::move(href);
    return e;
  };
  const std::vector<clusterservice::Event> page{event("/c/1"), event("/c/1/node_pools/p"), event("/c/1"),
                                                event("/c/2"), event("/c/1/node_pools/p")};
  std::vector<const clusterservice::Event*> events;
  for (const clusterservice::Event& e : page) events.push_back(&e);
  EXPECT_EQ(SupersededInPage(events), (std::vector<bool>{true, true, false, false, false}));
  EXPECT_TRUE(SupersededInPage({}).empty());
}

TEST_F(BackendTest, TerminalOperationsNeverChange) {
  auto b = MakeBackend();
  Flow f = StartCreate("c1");
  // The frontend canceled it (superseded) and the resource moved on.
  std::string canceled =
      PutOperation(sub_, arm::OperationRequest::kCreate, f.resource_id, f.href, arm::kStateCanceled);
  cs_.SetState(f.href, "ready");
  Reconcile(*b);
  EXPECT_EQ(Op(canceled).status, arm::kStateCanceled);
  cs_.SetState(f.href, "error", "X", "y");
  clock_.Advance(2h);
  Reconcile(*b);
  EXPECT_EQ(Op(canceled).status, arm::kStateCanceled);
  EXPECT_EQ(Op(f.op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, SupersededOperationChangesAlone) {
  auto b = MakeBackend();
  Flow f = StartCreate("c1");
  // The resource names another operation (the frontend is mid-way through a delete).
  std::string other =
      PutOperation(sub_, arm::OperationRequest::kDelete, f.resource_id, f.href, arm::kStateDeleting);
  PutResource(sub_, f.resource_id, arm::kClusterDocType, f.href, arm::kStateDeleting, other);
  cs_.SetState(f.href, "installing");
  auto ev = b->PumpEventsOnce(0ms);  // (history)
  ASSERT_TRUE(ev.ok());
  Reconcile(*b);
  // Provisioning, or Deleting when the Delete's check ran first and the cluster is uninstalling.
  EXPECT_NE(Op(f.op).status, arm::kStateAccepted);
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateDeleting);
  EXPECT_EQ(Resource(f.resource_id)->active_operation_id, other);
}

TEST_F(BackendTest, CredentialOperations) {
  auto b = MakeBackend();
  Flow f = Existing("c1", sub_);
  auto cred = cs_.Action(f.href, "request_admin_credential", {});
  ASSERT_TRUE(cred.ok());
  std::string cred_href(GetString(*cred, "href").value());
  std::string req = PutOperation(sub_, arm::OperationRequest::kRequestCredential, f.resource_id, cred_href,
                                 arm::kStateAccepted);
  Reconcile(*b);
  EXPECT_EQ(Op(req).status, arm::kStateAccepted);
  cs_.SetState(cred_href, "issued");
  Reconcile(*b);
  EXPECT_EQ(Op(req).status, arm::kStateSucceeded);
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateSucceeded);

  ASSERT_TRUE(cs_.Action(f.href, "revoke_credentials", {}).ok());
  std::string revoke = PutOperation(sub_, arm::OperationRequest::kRevokeCredentials, f.resource_id, f.href,
                                    arm::kStateAccepted);
  Reconcile(*b);
  EXPECT_EQ(Op(revoke).status, arm::kStateAccepted);
  cs_.SetState(cred_href, "revoked");
  Reconcile(*b);
  EXPECT_EQ(Op(revoke).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, IdleCostDoesNotGrowWithSubscriptions) {
  // 10,000 registered subscriptions, each with an idle cluster, nothing in flight.
  for (int i = 0; i < 10000; ++i) {
    char sub[40];
    std::snprintf(sub, sizeof(sub), "00000000-0000-0000-0000-%012d", i);
    PutSubscription(sub, "Registered");
    if (i % 10 == 0) Existing("idle", sub);
  }
  // Counts the store calls the backend makes (no fault set: every call is forwarded).
  store::FaultInjectingStore counting(*store_);
  auto calls = [&] {
    return counting.CallCount() - counting.CallCount(store::FaultInjectingStore::Method::kPurgeExpired);
  };
  BackendOptions o = Options();
  o.gc_enabled = false;
  auto made = Backend::Create(o, &counting, &cs_, &clock_, logger_, &notifier_);
  ASSERT_TRUE(made.ok());
  auto b = std::move(made).value();
  Reconcile(*b);  // takes the lease, reads the subscriptions once (deleted ones need cleanup)
  int status_reads = cs_.status_reads();
  uint64_t before = calls();
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(2s);  // within the leases' ttl, as the lease loop keeps them
    Reconcile(*b);       // a full pass: resync, deadlines, sweeps
  }
  uint64_t per_pass = (calls() - before) / 10;
  // The lease work is constant: a member record and its query, one renewal per shard.
  EXPECT_LE(per_pass, 10u + o.shards + 2) << "store calls per idle pass";
  EXPECT_EQ(cs_.status_reads(), status_reads);
}

// ---------------------------------------------------------------------------------------------
// The running backend (threads).

template <typename Pred>
bool WaitUntil(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

// A Cluster Service that restarted keeps its sequence but not its history: the backend starts from its
// newest event instead of waiting on a sequence it will never serve, and follows the stream again.
TEST_F(BackendTest, FollowsTheEventStreamOfAServiceThatLostItsHistory) {
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "pending");
  cs_.ForgetEventHistory();
  auto b = MakeBackend(EventsOnlyOptions());
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().active && b->Stats().events_available; }));
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().in_flight == 1 && b->Stats().checks >= 1; }));
  cs_.SetState(f.href, "ready");  // only the event stream tells (no resync, no polling)
  ASSERT_TRUE(WaitUntil([&] { return Op(f.op).status == arm::kStateSucceeded; }));
  b->Stop();
}

// A backend restarted under its name applies the events it missed while it was down; when the stream no
// longer reaches back, it lists the Cluster Service at once. No resync or polling could tell.
TEST_F(BackendTest, ARestartedBackendMissesNothingThatChangedWhileItWasDown) {
  BackendOptions o = EventsOnlyOptions();
  o.owner = "b1";
  Flow cluster = Existing("idle", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "idle"}});
  auto stored = [&]() -> json::value {
    auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(cluster.resource_id));
    if (!d.ok()) return nullptr;
    const json::value* c = FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/conditions");
    return c ? *c : json::value(nullptr);
  };
  auto conditions = [](std::string_view status) {
    return json::array{json::object{{"type", "AzureIdentityValid"}, {"status", status}}};
  };
  {
    auto b = MakeBackend(o);
    ASSERT_TRUE(b->Start().ok());
    ASSERT_TRUE(WaitUntil([&] { return store_->Read(store::kLocks, "hcprp-backend", "events-b1").ok(); }));
    b->Stop();
  }
  cs_.SetConditions(cluster.href, conditions("False"));  // while no backend runs
  {
    auto b = MakeBackend(o);
    ASSERT_TRUE(b->Start().ok());
    EXPECT_TRUE(WaitUntil([&] { return stored() == json::value(conditions("False")); })) << stored();
    b->Stop();
  }
  // The stream loses its history while the backend is down: what the listing shows is synced (the
  // fake lists an object's state, not its conditions).
  cs_.SetState(cluster.href, "error", "OCM3001", "upgrade failed");
  cs_.ForgetEventHistory();
  auto provision_error = [&]() -> json::value {
    auto d = store_->Read(store::kResources, sub_, arm::ResourceDocumentId(cluster.resource_id));
    if (!d.ok()) return nullptr;
    const json::value* e = FindPointer(d->body, std::string(arm::kPathServiceStatus) + "/provision_error");
    return e ? *e : json::value(nullptr);
  };
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return provision_error().is_object(); })) << provision_error();
  b->Stop();
}

TEST_F(BackendTest, EventIsAppliedWithoutResyncOrPolling) {
  auto b = MakeBackend(EventsOnlyOptions());
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil(
      [&] { return b->Stats().active && b->Stats().events_available && b->Stats().full_resyncs > 0; }));

  Flow f = StartCreate("c1");  // learned from the change feed, checked once
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().in_flight == 1 && b->Stats().checks >= 1; }));
  uint64_t resyncs = b->Stats().full_resyncs;
  int reads = cs_.status_reads();

  auto start = std::chrono::steady_clock::now();
  cs_.SetState(f.href, "installing");
  ASSERT_TRUE(WaitUntil([&] { return Op(f.op).status == arm::kStateProvisioning; }));
  auto latency = std::chrono::steady_clock::now() - start;
  cs_.SetState(f.href, "ready");
  ASSERT_TRUE(WaitUntil([&] { return Op(f.op).status == arm::kStateSucceeded; }));
  b->Stop();

  EXPECT_EQ(b->Stats().full_resyncs, resyncs);
  EXPECT_EQ(cs_.status_reads(), reads);  // applied from the events alone
  EXPECT_GE(b->Stats().events_applied, 2u);
  EXPECT_LT(latency, 1000ms);
  EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateSucceeded);
}

// While the event stream delivers every page, a periodic resync checks an operation the events drive
// only every full_check_every-th time; after the stream failed, the next one checks it.
TEST_F(BackendTest, PeriodicResyncChecksEverythingOnlyEveryFullCheckEveryWhileEventsFlow) {
  BackendOptions o = Options();
  o.resync_interval = 10s;
  o.full_check_every = 3;
  o.poll_interval = 1h;
  o.tick = 20ms;
  o.feed_wait = 50ms;
  o.event_wait = 50ms;
  o.event_retry = 50ms;
  o.lease_ttl = 1h;
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil(
      [&] { return b->Stats().active && b->Stats().events_available && b->Stats().full_resyncs > 0; }));
  Flow f = StartCreate("c1");  // learned from the change feed, checked once
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().in_flight == 1 && b->Stats().checks >= 1; }));
  // One periodic resync: the checks it queued have run once the step is over.
  auto resync = [&] {
    uint64_t before = b->Stats().full_resyncs;
    clock_.Advance(11s);
    EXPECT_TRUE(WaitUntil([&] { return b->Stats().full_resyncs > before; }));
    EXPECT_TRUE(WaitUntil([&] { return b->Stats().checks_queued == 0 && b->Stats().checks_running == 0; }));
    std::this_thread::sleep_for(100ms);
    return b->Stats().checks;
  };
  uint64_t checks = b->Stats().checks;
  EXPECT_EQ(resync(), checks);  // the first periodic resync: the events drive it
  EXPECT_EQ(resync(), checks);
  EXPECT_EQ(resync(), checks + 1);  // the third: everything
  checks += 1;
  EXPECT_EQ(resync(), checks);
  cs_.SetEventsEnabled(false);  // a failed read of the stream: events may have been missed
  ASSERT_TRUE(WaitUntil([&] { return !b->Stats().events_available; }));
  cs_.SetEventsEnabled(true);
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().events_available; }));
  EXPECT_EQ(resync(), checks + 1);
  EXPECT_EQ(Op(f.op).status, arm::kStateAccepted);
  b->Stop();
}

// The events of one page are applied on several threads, one cluster's in stream order.
TEST_F(BackendTest, EventsOfOnePageApplyConcurrentlyEachClusterInOrder) {
  BackendOptions o = Options();
  o.event_concurrency = 4;
  auto b = MakeBackend(o);
  std::vector<Flow> flows;
  for (int i = 0; i < 12; ++i) flows.push_back(StartCreate("c" + std::to_string(i)));
  Reconcile(*b);                             // indexed (and checked: still validating)
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());  // the creations
  for (const Flow& f : flows) {
    cs_.SetState(f.href, "installing");
    cs_.SetState(f.href, "ready");
  }
  auto n = b->PumpEventsOnce(0ms);
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 24u);
  for (const Flow& f : flows) {
    EXPECT_EQ(Op(f.op).status, arm::kStateSucceeded) << f.resource_id;
    EXPECT_EQ(Resource(f.resource_id)->provisioning_state, arm::kStateSucceeded);
  }
  EXPECT_EQ(b->Stats().transitions, 24u);  // Provisioning, then Succeeded: in order for every cluster
}

TEST_F(BackendTest, FeedPositionRemovedByRetentionResynchronises) {
  auto s = store::OpenStore("sqlite::memory:",
                            {.clock = &clock_, .indexes = arm::StoreIndexes(), .change_retention = 10min});
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  store_ = std::move(s).value();
  PutSubscription(sub_, "Registered");
  auto b = MakeBackend();
  Reconcile(*b);
  Flow f = StartCreate("c1");  // changes the backend has not read yet...
  clock_.Advance(11min);
  ASSERT_TRUE(store_->PurgeExpired().ok());  // ...are removed from the feed
  auto pumped = b->PumpChangesOnce();
  ASSERT_TRUE(pumped.ok()) << pumped.error().ToString();
  ASSERT_TRUE(b->PumpChangesOnce().ok());  // positioned again
  cs_.SetState(f.href, "ready");
  Reconcile(*b);  // the resync finds the operation
  EXPECT_EQ(Op(f.op).status, arm::kStateSucceeded);
}

TEST_F(BackendTest, QueueLongerThanOneStepDrainsWithoutWaitingForTicks) {
  std::vector<Flow> flows;
  for (int i = 0; i < 12; ++i) {
    flows.push_back(StartCreate("c" + std::to_string(i)));
    cs_.SetState(flows.back().href, "ready");
  }
  BackendOptions o = Options();
  o.resync_interval = 1h;
  o.poll_interval = 1h;
  o.tick = 1h;
  o.lease_ttl = 1h;  // no renewal wakes the timer loop either
  o.max_checks_per_step = 2;
  o.check_concurrency = 1;
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::all_of(flows.begin(), flows.end(),
                           [&](const Flow& f) { return Op(f.op).status == arm::kStateSucceeded; });
      },
      10s));
  b->Stop();
}

TEST_F(BackendTest, PollsWhenTheClusterServiceHasNoEventStream) {
  cs_.SetEventsEnabled(false);
  BackendOptions o = Options();
  o.resync_interval = 1h;
  o.poll_interval = 10s;
  o.tick = 20ms;
  o.feed_wait = 50ms;
  o.event_retry = 50ms;
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  // The start's full resync checks everything once: it must be over before the create, or its check
  // could be the one that sees the next state.
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().active && b->Stats().full_resyncs > 0; }));
  Flow f = StartCreate("c1");
  ASSERT_TRUE(WaitUntil([&] {
    BackendStats s = b->Stats();
    return s.in_flight == 1 && s.checks >= 1 && s.checks_queued == 0 && s.checks_running == 0;
  }));
  cs_.SetState(f.href, "installing");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Op(f.op).status, arm::kStateAccepted);  // not before the poll interval
  clock_.Advance(11s);
  ASSERT_TRUE(WaitUntil([&] { return Op(f.op).status == arm::kStateProvisioning; }));
  EXPECT_FALSE(b->Stats().events_available);
  b->Stop();
}

TEST_F(BackendTest, RunningBackendDrivesSubscriptionDeletion) {
  const std::string sub = "99999999-0000-0000-0000-000000000030";
  PutSubscription(sub, "Registered");
  for (int i = 0; i < 30; ++i) Existing("c" + std::to_string(i), sub);
  BackendOptions o = Options();
  o.tick = 20ms;
  o.feed_wait = 50ms;
  o.event_wait = 50ms;
  o.max_cs_deletes_per_step = 7;  // chunked
  o.sweep_page_size = 8;
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return b->Stats().active; }));
  PutSubscription(sub, "Deleted");
  ASSERT_TRUE(WaitUntil([&] { return cs_.deletes() == 30; }));
  cs_.RemoveUninstalling();
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = sub;
  q.resource_id_prefix = "/subscriptions/";
  ASSERT_TRUE(WaitUntil([&] {
    auto left = store_->Query(q);
    return left.ok() && left->documents.empty();
  }));
  b->Stop();
  EXPECT_EQ(cs_.deletes(), 30);
}

TEST_F(BackendTest, StandbyTakesOverWhenTheActiveBackendStops) {
  BackendOptions o = Options();
  o.tick = 20ms;
  o.feed_wait = 50ms;
  o.event_wait = 50ms;
  o.owner = "a";
  auto a = MakeBackend(o);
  o.owner = "b";
  auto b = MakeBackend(o);
  ASSERT_TRUE(a->Start().ok());
  // Active means one shard held; a takes them one at a time, and b would share the rest.
  ASSERT_TRUE(WaitUntil([&] { return a->Stats().shards_held == o.shards; }));
  ASSERT_TRUE(b->Start().ok());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(b->Stats().active);
  a->Stop();  // releases
  ASSERT_TRUE(WaitUntil([&] {
    clock_.Advance(100ms);  // b notices a's member record is gone at its next heartbeat
    return b->Stats().shards_held == o.shards;
  }));
  Flow f = StartCreate("c1");
  cs_.SetState(f.href, "ready");
  ASSERT_TRUE(WaitUntil([&] { return Op(f.op).status == arm::kStateSucceeded; }));
  b->Stop();
}

// The fake Cluster Service with an update service whose fast-4.20 channel offers 4.20.15 and 4.20.16.
// Its PATCHes wait (up to 5 s) until `want_in_flight` of them are in progress at once.
class UpdateServiceClient final : public clusterservice::ForwardingClient {
 public:
  UpdateServiceClient(FakeClusterService* inner, int want_in_flight)
      : clusterservice::ForwardingClient(inner), inner_(inner), want_(want_in_flight) {}
  int max_in_flight() const { return max_in_flight_; }

  Result<json::object> Get(std::string_view href) override {
    if (href != clusterservice::GraphPath("fast-4.20")) return inner_->Get(href);
    return json::object{
        {"nodes", json::array{json::object{{"version", "4.20.15"}}, json::object{{"version", "4.20.16"}}}},
        {"edges", json::array{json::array{0, 1}}}};
  }
  Result<json::object> Update(std::string_view href, const json::object& patch) override {
    {
      std::unique_lock lock(mu_);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
      cv_.notify_all();
      cv_.wait_for(lock, 5s, [&] { return max_in_flight_ >= want_; });
    }
    auto r = inner_->Update(href, patch);
    std::lock_guard lock(mu_);
    --in_flight_;
    return r;
  }

 private:
  FakeClusterService* const inner_;
  const int want_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

TEST_F(BackendTest, AVersionPassRaisesClustersOnUpToVersionConcurrencyThreads) {
  std::vector<std::string> hrefs;
  for (int i = 0; i < 12; ++i) hrefs.push_back(CreateFastCluster("c" + std::to_string(i), sub_));
  UpdateServiceClient cs(&cs_, 3);
  BackendOptions o = Options();
  o.version_concurrency = 3;
  auto b = Backend::Create(o, store_.get(), &cs, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);  // takes the shards
  auto pass = (*b)->VersionPassOnce();
  ASSERT_TRUE(pass.ok()) << pass.error().ToString();
  EXPECT_EQ(pass->clusters, 12u);
  EXPECT_EQ(pass->raised, 12u);
  EXPECT_EQ(pass->failed, 0u);
  EXPECT_EQ(pass->by_version, (std::map<std::string, size_t>{{"4.20.15 desired", 12}}));
  EXPECT_EQ(cs.max_in_flight(), 3);
  for (const std::string& href : hrefs) {
    auto c = cs_.Get(href);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(GetString(*GetObject(*c, "version"), "id"), "openshift-v4.20.16-fast") << href;
  }
  // Nothing newer: the next pass raises nothing.
  auto again = (*b)->VersionPassOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->raised, 0u);
  EXPECT_EQ(again->by_version, (std::map<std::string, size_t>{{"4.20.16 desired", 12}}));
}

// Before the second batch of service provider cluster documents that a version pass writes, waits (up
// to 5 s) until the Cluster Service holds the raised version of the clusters of the first, and says
// whether it did.
class SecondBatchWaitsStore final : public store::ForwardingStore {
 public:
  SecondBatchWaitsStore(store::Store* target, FakeClusterService* cs, std::vector<std::string> hrefs)
      : store::ForwardingStore(target), cs_(cs), hrefs_(std::move(hrefs)) {}
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops,
                                   const store::Lease* fence = nullptr) override {
    std::vector<std::string> written;
    for (const store::WriteOp& w : ops) {
      for (const std::string& href : hrefs_) {
        if (w.id == ServiceProviderClusterId(href)) written.push_back(href);
      }
    }
    if (!written.empty() && ++batches_ == 2) {
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (!Raised(first_) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
      first_raised_before_second = Raised(first_);
    }
    if (!written.empty() && batches_ == 1) first_ = written;
    return store::ForwardingStore::Batch(container, pk, std::move(ops), fence);
  }
  std::atomic<bool> first_raised_before_second{false};

 private:
  bool Raised(const std::vector<std::string>& hrefs) const {
    for (const std::string& href : hrefs) {
      auto c = cs_->Get(href);
      if (!c.ok() || GetString(*GetObject(*c, "version"), "id") != "openshift-v4.20.16-fast") return false;
    }
    return !hrefs.empty();
  }

  FakeClusterService* const cs_;
  const std::vector<std::string> hrefs_;
  int batches_ = 0;  // the pass's batches, written one at a time (version_write_concurrency 1)
  std::vector<std::string> first_;
};

// A cluster is asked to upgrade as soon as the batch that recorded its desired version committed, while
// the pass's other batches are still written.
TEST_F(BackendTest, AVersionPassRaisesTheClustersOfABatchOnceItCommitted) {
  const std::string other = "00000000-0000-0000-0000-0000000000b2";
  PutSubscription(other, "Registered");
  std::vector<std::string> hrefs;
  for (const std::string& sub : {sub_, other}) hrefs.push_back(CreateFastCluster("c-" + sub, sub));
  UpdateServiceClient cs(&cs_, 1);
  SecondBatchWaitsStore store(store_.get(), &cs_, hrefs);
  BackendOptions o = Options();
  o.version_write_concurrency = 1;
  auto b = Backend::Create(o, &store, &cs, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Reconcile(**b);  // takes the shards
  auto pass = (*b)->VersionPassOnce();
  ASSERT_TRUE(pass.ok()) << pass.error().ToString();
  EXPECT_EQ(pass->raised, 2u);
  EXPECT_EQ(pass->triggered, 2u);
  EXPECT_EQ(pass->failed, 0u);
  EXPECT_TRUE(store.first_raised_before_second.load());
}

// The fake Cluster Service with an update service whose fast-4.20 channel offers 4.20.15, and 4.20.16
// once published. The release is published, and announced on the event stream, while the backend
// positions on the stream (its first WatchEvents without a wait), after a version pass read the graph
// (waiting up to 5 s for one): the positioning reads the announcement and passes over it.
class ReleaseWhilePositioningClient final : public clusterservice::ForwardingClient {
 public:
  explicit ReleaseWhilePositioningClient(FakeClusterService* inner)
      : clusterservice::ForwardingClient(inner), inner_(inner) {}
  bool published() const {
    std::lock_guard lock(mu_);
    return published_;
  }
  int graph_reads() const {
    std::lock_guard lock(mu_);
    return graph_reads_;
  }

  Result<json::object> Get(std::string_view href) override {
    if (href != clusterservice::GraphPath("fast-4.20")) return inner_->Get(href);
    std::lock_guard lock(mu_);
    ++graph_reads_;
    cv_.notify_all();
    json::array nodes{json::object{{"version", "4.20.15"}}};
    json::array edges;
    if (published_) {
      nodes.emplace_back(json::object{{"version", "4.20.16"}});
      edges.emplace_back(json::array{0, 1});
    }
    return json::object{{"nodes", std::move(nodes)}, {"edges", std::move(edges)}};
  }
  Result<clusterservice::EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override {
    bool announce = false;
    {
      std::unique_lock lock(mu_);
      if (timeout.count() == 0 && !published_) {
        cv_.wait_for(lock, 5s, [&] { return graph_reads_ > 0; });
        published_ = true;
        announce = true;
      }
    }
    auto page = inner_->WatchEvents(after, timeout);
    if (!page.ok() || !announce) return page;
    clusterservice::Event announced;
    announced.sequence = std::max(after, page->last_sequence) + 1;
    announced.href = std::string(clusterservice::kApiPrefix) + "/versions/openshift-v4.20.16-fast";
    announced.kind = std::string(clusterservice::kVersionEventKind);
    announced.state = "published";
    page->events.push_back(std::move(announced));
    page->last_sequence = page->events.back().sequence;
    return page;
  }

 private:
  FakeClusterService* const inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool published_ = false;
  int graph_reads_ = 0;
};

// A release announced while the event follower positions on the stream is passed over unapplied;
// the version pass that settling the stream requests still raises the cluster to it (without one,
// nothing would before the version resync).
TEST_F(BackendTest, AReleaseAnnouncedWhileTheStreamIsPositionedStillRaisesTheClusters) {
  const std::string href = CreateFastCluster("c1", sub_);
  ASSERT_FALSE(href.empty());
  ReleaseWhilePositioningClient cs(&cs_);
  BackendOptions o = EventsOnlyOptions();
  o.version_resync = 1h;
  auto b = Backend::Create(o, store_.get(), &cs, &clock_, logger_, &notifier_);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  // Owns every shard before it starts: the one version pass requested by then runs at the start, and
  // no later change of ownership requests another.
  Reconcile(**b);
  ASSERT_TRUE((*b)->Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return cs.published(); }));
  EXPECT_GE(cs.graph_reads(), 1);
  EXPECT_TRUE(WaitUntil([&] {
    auto now = cs_.Get(href);
    return now.ok() && GetString(*GetObject(*now, "version"), "id") == "openshift-v4.20.16-fast";
  })) << "the cluster was not raised to the release announced while the stream was positioned";
  (*b)->Stop();
}

TEST_F(BackendTest, AnOperationsOwnDeadlineComesBeforeTheDefault) {
  auto b = MakeBackend(Options());
  Flow f = StartCreate("c1");
  // The deadline an experimental tag gave the create (arm::OperationDocument::deadline_seconds).
  ASSERT_TRUE(store_
                  ->Patch(store::kResources, sub_, f.op,
                          {store::PatchOp{store::PatchOp::Kind::kSet, "/properties/deadlineSeconds",
                                          json::value(19 * 60)}})
                  .ok());
  cs_.SetState(f.href, "installing");
  Reconcile(*b);
  clock_.Advance(18min);
  Reconcile(*b);
  EXPECT_EQ(Op(f.op).status, arm::kStateProvisioning);
  clock_.Advance(2min);
  Reconcile(*b);
  auto op = Op(f.op);
  EXPECT_EQ(op.status, arm::kStateFailed);
  ASSERT_TRUE(op.error.has_value());
  EXPECT_THAT(op.error->message, ::testing::HasSubstr("19 minutes"));
}

// A store restored from an older copy (docs/backup.md): an idle resource whose object the Cluster
// Service deletes follows that delete, from the events, and goes with its children.
TEST_F(BackendTest, IdleResourceFollowsADeleteItsStoreDoesNotRemember) {
  auto b = MakeBackend();
  Reconcile(*b);
  Flow cluster = Existing("gone", sub_);
  cs_.SetField(
      cluster.href, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "gone"}});
  std::string pool_href = cs_.AddObject(cluster.href + "/node_pools", "ready");
  const std::string pool_id = cluster.resource_id + "/nodePools/np1";
  PutResource(sub_, pool_id, arm::kNodePoolDocType, pool_href, arm::kStateSucceeded, std::nullopt);
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());  // (the creations)

  cs_.SetState(cluster.href, "uninstalling");
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());
  ASSERT_TRUE(Resource(cluster.resource_id).has_value());
  EXPECT_EQ(Resource(cluster.resource_id)->provisioning_state, arm::kStateDeleting);
  EXPECT_EQ(b->Stats().implicit_deletes, 1u);

  cs_.RemoveUninstalling();
  ASSERT_TRUE(b->PumpEventsOnce(0ms).ok());
  Reconcile(*b);
  EXPECT_FALSE(Resource(cluster.resource_id).has_value());
  EXPECT_FALSE(Resource(pool_id).has_value());
}

// The same found by the orphan collector's pass, when no event told it (the stream lost its history).
TEST_F(BackendTest, IdleResourceWhoseObjectIsGoneIsRemovedByThePass) {
  BackendOptions o = Options();
  o.gc_enabled = true;
  auto b = MakeBackend(o);
  Flow kept = Existing("kept", sub_);
  Flow gone = Existing("gone", sub_);
  std::string pool_href = cs_.AddObject(gone.href + "/node_pools", "ready");
  const std::string pool_id = gone.resource_id + "/nodePools/np1";
  PutResource(sub_, pool_id, arm::kNodePoolDocType, pool_href, arm::kStateSucceeded, std::nullopt);
  cs_.Remove(gone.href);
  Reconcile(*b);  // the pass gives it a Delete operation
  Reconcile(*b);  // whose check finds the object gone
  EXPECT_FALSE(Resource(gone.resource_id).has_value());
  EXPECT_FALSE(Resource(pool_id).has_value());
  ASSERT_TRUE(Resource(kept.resource_id).has_value());
  EXPECT_EQ(Resource(kept.resource_id)->provisioning_state, arm::kStateSucceeded);
  EXPECT_EQ(cs_.StateOf(kept.href), "ready");
}

// An object made while the store heard from no backend (after the backup the store was restored
// from) is held and recorded, never collected; one made before is an orphan as ever.
TEST_F(BackendTest, ObjectMadeWhileTheStoreHeardFromNoBackendIsHeldNotCollected) {
  BackendOptions o = EventsOnlyOptions();
  o.owner = "b1";
  o.gc_enabled = true;
  o.gc_window = 1h;
  o.gc_interval = 1h;
  std::string orphan = cs_.AddObject(kClusters, "ready");  // before any backend: an orphan
  clock_.Advance(1min);
  {
    auto b = MakeBackend(o);
    ASSERT_TRUE(b->Start().ok());
    ASSERT_TRUE(WaitUntil([&] { return store_->Read(store::kLocks, "hcprp-backend", "events-b1").ok(); }));
    b->Stop();
  }
  clock_.Advance(10min);
  std::string lost = cs_.AddObject(kClusters, "ready");  // while no backend ran on this store
  cs_.SetField(
      lost, "azure",
      json::object{{"subscription_id", sub_}, {"resource_group_name", "rg"}, {"resource_name", "new"}});
  clock_.Advance(2h);
  auto b = MakeBackend(o);
  ASSERT_TRUE(b->Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return b->Stats().gc_held == 1 && b->Stats().gc_deleted == 1; }))
      << b->Stats().gc_held << " held, " << b->Stats().gc_deleted << " deleted";
  EXPECT_EQ(cs_.StateOf(orphan), "uninstalling");
  EXPECT_EQ(cs_.StateOf(lost), "ready");
  auto held = ReadHeldObjects(*store_);
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].href, lost);
  EXPECT_EQ((*held)[0].resource_id, ClusterId("new"));

  // The operator deletes it: the record goes.
  cs_.Remove(lost);
  Reconcile(*b);
  held = ReadHeldObjects(*store_);
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(held->empty());
  b->Stop();
}

}  // namespace
}  // namespace hcprp::backend
