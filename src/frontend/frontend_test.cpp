// Scenario tests: request in, status + headers + body out, store state checked where it matters.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "api/api.h"
#include "arm/cloud_error.h"
#include "arm/paging.h"
#include "core/time.h"
#include "frontend/testing/scenario.h"
#include "metrics/registry.h"
#include "store/fault_injecting_store.h"
#include "store/forwarding_store.h"

namespace hcprp::frontend::testing {
namespace {

namespace bhttp = boost::beast::http;

std::string V(std::string_view version = kStable) { return "?api-version=" + std::string(version); }

std::string Header(const Response& r, std::string_view name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value());
}

std::string ErrorCodeOf(const Response& r) {
  auto b = BodyOf(r);
  const auto* c = FindPointer(b, "/error/code");
  return c != nullptr && c->is_string() ? std::string(c->as_string()) : "";
}

void ExpectValidResource(const Response& r, std::string_view version, std::string_view definition) {
  // The body as sent must conform, the read-only values the service sets included.
  auto errs = api::ValidateResponse(version, definition, BodyOf(r));
  std::string all;
  for (const auto& e : errs.errors) all += e.target + ": " + e.message + "\n";
  EXPECT_TRUE(all.empty()) << all << r.body();
}

class FrontendTest : public ::testing::Test {
 protected:
  void SetUp() override { s.RegisterSubscription(); }

  // Creates a cluster and lets the backend finish it.
  void CreateCluster(const std::string& name, std::string_view rg = "rg1") {
    auto r = s.Put(ClusterPath(name, rg) + V(), ClusterBody());
    ASSERT_EQ(r.result_int(), 201u) << r.body();
    s.FinishOperation(OperationIdOf(Header(r, "Azure-AsyncOperation")));
  }

  Scenario s;
};

TEST_F(FrontendTest, CreateClusterFollowsTheAsyncContract) {
  const std::string path = ClusterPath("MyCluster");
  auto r = s.Put(path + V(), ClusterBody(),
                 {{"x-ms-arm-resource-system-data",
                   R"({"createdBy":"alice","createdByType":"User","createdAt":"2025-01-01T00:00:00Z"})"}});
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  auto body = BodyOf(r);
  EXPECT_EQ(*FindPointer(body, "/properties/provisioningState"), "Accepted");
  EXPECT_EQ(*FindPointer(body, "/id"), json::value(path));
  EXPECT_EQ(*FindPointer(body, "/name"), "MyCluster");
  EXPECT_EQ(*FindPointer(body, "/type"), "Microsoft.RedHatOpenShift/hcpOpenShiftClusters");
  EXPECT_EQ(*FindPointer(body, "/location"), "eastus");
  EXPECT_EQ(*FindPointer(body, "/tags/env"), "test");
  EXPECT_EQ(*FindPointer(body, "/systemData/createdBy"), "alice");
  // The entity tag travels in the ETag header only: the resource schema has no etag property.
  EXPECT_EQ(FindPointer(body, "/etag"), nullptr);
  EXPECT_EQ(Header(r, "ETag").front(), '"');
  ExpectValidResource(r, kStable, "HcpOpenShiftCluster");

  std::string async = Header(r, "Azure-AsyncOperation");
  EXPECT_EQ(async.rfind("https://management.azure.com/subscriptions/" + std::string(kSub) +
                            "/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/",
                        0),
            0u)
      << async;
  EXPECT_NE(async.find("?api-version=2026-10-01"), std::string::npos);
  EXPECT_FALSE(Header(r, "x-ms-request-id").empty());
  EXPECT_EQ(Header(r, "x-ms-correlation-request-id"), "corr-1");

  // Documents as docs/architecture.md ("Data model") lays them out: resource with its active
  // operation; exposed operation; the Cluster Service object made with the operation as idempotency
  // key (its internal ID is recorded by the backend).
  std::string op_id = OperationIdOf(async);
  auto doc = s.Resource(path);
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->active_operation_id, op_id);
  EXPECT_EQ(doc->provisioning_state, "Accepted");
  EXPECT_TRUE(doc->internal_id.empty());
  EXPECT_EQ(s.cs.ObjectCount(), 1u);
  auto op = s.Operation(op_id);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->request, arm::OperationRequest::kCreate);
  EXPECT_TRUE(op->internal_id.empty());
  EXPECT_EQ(op->tenant_id, kTenant);
  EXPECT_EQ(op->client_id, kClient);
  EXPECT_EQ(op->status, "Accepted");

  // Status endpoint while running, then after the backend finishes.
  auto st = s.Get(TargetOf(async));
  ASSERT_EQ(st.result_int(), 200u) << st.body();
  EXPECT_EQ(*FindPointer(BodyOf(st), "/status"), "Accepted");
  EXPECT_EQ(*FindPointer(BodyOf(st), "/name"), json::value(op_id));
  EXPECT_EQ(FindPointer(BodyOf(st), "/endTime"), nullptr);
  s.clock.Advance(std::chrono::minutes(10));
  s.FinishOperation(op_id);
  st = s.Get(TargetOf(async));
  EXPECT_EQ(*FindPointer(BodyOf(st), "/status"), "Succeeded");
  EXPECT_NE(FindPointer(BodyOf(st), "/endTime"), nullptr);
  auto got = s.Get(path + V());
  ASSERT_EQ(got.result_int(), 200u);
  EXPECT_EQ(*FindPointer(BodyOf(got), "/properties/provisioningState"), "Succeeded");
}

TEST_F(FrontendTest, ResourceReadsBackWithTheOtherApiVersionAndKeepsCasing) {
  const std::string path = ClusterPath("CaseKept");
  json::value preview = ParseJson(ClusterBody()).value();
  FindPointer(preview, "/properties/platform")->as_object().erase("vnetIntegrationSubnetId");
  auto created = s.Put(path + V(kPreview), ToJson(preview));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  std::string lower = ToLower(path);
  auto r = s.Get(lower + V(kStable));
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(*FindPointer(BodyOf(r), "/id"), json::value(path));
  ExpectValidResource(r, kStable, "HcpOpenShiftCluster");
  auto p = s.Get(path + V(kPreview));
  ASSERT_EQ(p.result_int(), 200u);
  ExpectValidResource(p, kPreview, "HcpOpenShiftCluster");
}

TEST_F(FrontendTest, GetAbsentIs404ResourceNotFound) {
  auto r = s.Get(ClusterPath("nope") + V());
  EXPECT_EQ(r.result_int(), 404u);
  EXPECT_EQ(ErrorCodeOf(r), "ResourceNotFound");
  EXPECT_EQ(Header(r, "x-ms-error-code"), "ResourceNotFound");
}

TEST_F(FrontendTest, UpdateWhileOperationRunsIsConflict) {
  const std::string path = ClusterPath("busy");
  ASSERT_EQ(s.Put(path + V(), ClusterBody()).result_int(), 201u);
  auto r = s.Put(path + V(), ClusterBody());
  EXPECT_EQ(r.result_int(), 409u);
  EXPECT_EQ(ErrorCodeOf(r), "Conflict");
  r = s.Patch(path + V(), R"({"tags":{"a":"b"}})");
  EXPECT_EQ(r.result_int(), 409u);
}

TEST_F(FrontendTest, PutUpdateIs200AndPatchIs202) {
  const std::string path = ClusterPath("upd");
  CreateCluster("upd");
  auto r = s.Put(path + V(), ClusterBody(),
                 {{"x-ms-arm-resource-system-data",
                   R"({"lastModifiedBy":"bob","lastModifiedAt":"2025-02-01T00:00:00Z"})"}});
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(*FindPointer(BodyOf(r), "/properties/provisioningState"), "Accepted");
  EXPECT_EQ(*FindPointer(BodyOf(r), "/systemData/lastModifiedBy"), "bob");
  EXPECT_FALSE(Header(r, "Azure-AsyncOperation").empty());
  auto op = s.Operation(OperationIdOf(Header(r, "Azure-AsyncOperation")));
  ASSERT_TRUE(op);
  EXPECT_EQ(op->request, arm::OperationRequest::kUpdate);
  // The Cluster Service took the update: the backend may judge the operation by its state now.
  EXPECT_FALSE(op->awaiting_cluster_service);
  s.FinishOperation(op->id);

  r = s.Patch(path + V(), R"({"tags":{"team":"blue"}})");
  ASSERT_EQ(r.result_int(), 202u) << r.body();
  EXPECT_TRUE(r.body().empty());
  std::string location = Header(r, "Location");
  EXPECT_NE(location.find("/hcpOperationResults/"), std::string::npos);
  EXPECT_EQ(Header(r, "Retry-After"), "10");
  EXPECT_FALSE(Header(r, "Azure-AsyncOperation").empty());
  // Result while running: 202 + Location; when done: what a synchronous PATCH would answer.
  auto res = s.Get(TargetOf(location));
  EXPECT_EQ(res.result_int(), 202u);
  EXPECT_EQ(Header(res, "Location"), location);
  s.FinishOperation(OperationIdOf(location));
  res = s.Get(TargetOf(location));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(*FindPointer(BodyOf(res), "/tags/team"), "blue");
  ExpectValidResource(res, kStable, "HcpOpenShiftCluster");
}

TEST_F(FrontendTest, PatchOfAbsentResourceIs404) {
  auto r = s.Patch(ClusterPath("ghost") + V(), R"({"tags":{}})");
  EXPECT_EQ(r.result_int(), 404u);
}

TEST_F(FrontendTest, DeleteRecordsTheNotificationOwedForTheOperationItCancels) {
  const std::string cluster = ClusterPath("notified");
  CreateCluster("notified");
  auto np = s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody(),
                  {{"Azure-AsyncNotificationUri", "http://arm.example/np1"}});
  ASSERT_EQ(np.result_int(), 201u) << np.body();
  std::string np_op = OperationIdOf(Header(np, "Azure-AsyncOperation"));
  auto r = s.Delete(cluster + V());
  ASSERT_EQ(r.result_int(), 202u) << r.body();
  auto pending = s.store->Read(store::kResources, std::string(kSub), arm::PendingNotificationId(np_op));
  ASSERT_TRUE(pending.ok()) << "no pending notification for the canceled node pool create";
  EXPECT_EQ(*FindPointer(pending->body, "/properties/uri"), "http://arm.example/np1");
  EXPECT_EQ(*FindPointer(pending->body, "/properties/operationId"), json::value(np_op));
}

TEST_F(FrontendTest, DeleteCancelsChildOperationsAndExposesOnlyItsOwn) {
  const std::string cluster = ClusterPath("del");
  CreateCluster("del");
  auto np = s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody());
  ASSERT_EQ(np.result_int(), 201u) << np.body();
  ExpectValidResource(np, kStable, "NodePool");
  std::string np_op = OperationIdOf(Header(np, "Azure-AsyncOperation"));

  auto r = s.Delete(cluster + V());
  ASSERT_EQ(r.result_int(), 202u) << r.body();
  EXPECT_FALSE(Header(r, "Location").empty());
  EXPECT_FALSE(Header(r, "Azure-AsyncOperation").empty());
  EXPECT_EQ(Header(r, "Retry-After"), "10");
  std::string del_op = OperationIdOf(Header(r, "Location"));

  auto canceled = s.Operation(np_op);
  ASSERT_TRUE(canceled);
  EXPECT_EQ(canceled->status, "Canceled");
  ASSERT_TRUE(canceled->error);
  EXPECT_EQ(canceled->error->code, "Canceled");
  EXPECT_EQ(canceled->error->message, "This operation was superseded by another");

  auto np_doc = s.Resource(cluster + "/nodePools/np1");
  ASSERT_TRUE(np_doc);
  EXPECT_EQ(np_doc->provisioning_state, "Deleting");
  auto np_del = s.Operation(*np_doc->active_operation_id);
  ASSERT_TRUE(np_del);
  EXPECT_EQ(np_del->request, arm::OperationRequest::kDelete);
  EXPECT_FALSE(np_del->exposed());
  auto c_del = s.Operation(del_op);
  ASSERT_TRUE(c_del);
  EXPECT_TRUE(c_del->exposed());
  EXPECT_EQ(s.Resource(cluster)->provisioning_state, "Deleting");
  EXPECT_EQ(*FindPointer(BodyOf(s.Get(cluster + V())), "/properties/provisioningState"), "Deleting");

  // A second DELETE points at the delete under way.
  auto again = s.Delete(cluster + V());
  ASSERT_EQ(again.result_int(), 202u);
  EXPECT_EQ(OperationIdOf(Header(again, "Location")), del_op);
  // Deleting a child of a deleting cluster points at its implicit delete, now exposed.
  auto child_again = s.Delete(cluster + "/nodePools/np1" + V());
  ASSERT_EQ(child_again.result_int(), 202u);
  EXPECT_EQ(OperationIdOf(Header(child_again, "Location")), np_del->id);
  EXPECT_TRUE(s.Operation(np_del->id)->exposed());

  // PUT on a deleting resource and children of a deleting cluster: 409.
  EXPECT_EQ(s.Put(cluster + V(), ClusterBody()).result_int(), 409u);
  EXPECT_EQ(s.Put(cluster + "/nodePools/np2" + V(), NodePoolBody()).result_int(), 409u);

  // Backend completes: result 204, resource gone, GET 404, second DELETE 204.
  s.FinishAll();
  auto res = s.Get(TargetOf(Header(r, "Location")));
  EXPECT_EQ(res.result_int(), 204u);
  EXPECT_EQ(s.Get(cluster + V()).result_int(), 404u);
  EXPECT_EQ(s.Delete(cluster + V()).result_int(), 204u);
  EXPECT_FALSE(s.cs.Exists(s.cs.Calls().empty() ? "" : "/api/aro_hcp/v1alpha1/clusters/obj1"));
}

TEST_F(FrontendTest, ChildOfProvisioningClusterIsConflictAndMissingParentIs404) {
  const std::string cluster = ClusterPath("young");
  ASSERT_EQ(s.Put(cluster + V(), ClusterBody()).result_int(), 201u);
  auto r = s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody());
  EXPECT_EQ(r.result_int(), 409u);
  auto orphan = s.Put(ClusterPath("absent") + "/nodePools/np1" + V(), NodePoolBody());
  EXPECT_EQ(orphan.result_int(), 404u);
  EXPECT_EQ(ErrorCodeOf(orphan), "ParentResourceNotFound");
}

// A cluster's delete can finish between the frontend's read of the cluster and the batch of a child's
// create (the batch's condition on the cluster then fails with NotFound): the PUT is decided again
// and answers 404 ParentResourceNotFound, as when the cluster was gone before, never a bare NotFound.
TEST_F(FrontendTest, ChildCreateWhoseClusterWentBeforeItsBatchIsParentResourceNotFound) {
  CreateCluster("going");
  const std::string cluster = ClusterPath("going");
  // Removes the cluster's document, as its finished delete does, just before the first batch.
  class DeletesBeforeFirstBatch : public store::ForwardingStore {
   public:
    DeletesBeforeFirstBatch(store::Store* target, std::string doc_id)
        : ForwardingStore(target), doc_id_(std::move(doc_id)) {}
    Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                     std::vector<store::WriteOp> ops, const store::Lease* fence) override {
      if (!done_) {
        done_ = true;
        EXPECT_TRUE(target()->Delete(store::kResources, arm::PartitionKey(kSub), doc_id_).ok());
      }
      return ForwardingStore::Batch(container, pk, std::move(ops), fence);
    }

   private:
    std::string doc_id_;
    bool done_ = false;
  };
  DeletesBeforeFirstBatch racing(s.store.get(), arm::ResourceDocumentId(cluster));
  auto fe = Frontend::Create({}, &racing, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
  ASSERT_TRUE(fe.ok());
  s.frontend = std::move(fe).value();
  auto r = s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody());
  EXPECT_EQ(r.result_int(), 404u) << r.body();
  EXPECT_EQ(ErrorCodeOf(r), "ParentResourceNotFound") << r.body();
}

// A child's create body is judged before its parent's state (the real service's
// FrontendCRUD/{NodePool,ExternalAuth}/cluster-creating and cluster-deleting): a bad body is a 400 while
// the cluster is provisioning or deleting, a good one a 409 in the real service's words. An update is
// refused for the parent's state before its body is judged.
TEST_F(FrontendTest, ChildBodyIsJudgedBeforeTheParentState) {
  const std::string cluster = ClusterPath("busy");
  ASSERT_EQ(s.Put(cluster + V(), ClusterBody()).result_int(), 201u);
  std::string bad_pool = NodePoolBody();
  bad_pool.replace(bad_pool.find("\"replicas\":2"), 12, "\"replicas\":-1");
  auto bad = s.Put(cluster + "/nodePools/np1" + V(), bad_pool);
  EXPECT_EQ(bad.result_int(), 400u) << bad.body();
  auto bad_auth = s.Put(cluster + "/externalAuths/auth1" + V(), R"({"properties":{}})");
  EXPECT_EQ(bad_auth.result_int(), 400u) << bad_auth.body();
  auto good = s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody());
  ASSERT_EQ(good.result_int(), 409u) << good.body();
  EXPECT_EQ(ErrorCodeOf(good), "Conflict");
  EXPECT_EQ(*FindPointer(BodyOf(good), "/error/message"),
            "Cannot create resource while parent resource is provisioning");
  auto good_auth = s.Put(cluster + "/externalAuths/auth1" + V(), ExternalAuthBody());
  EXPECT_EQ(*FindPointer(BodyOf(good_auth), "/error/message"),
            "Cannot create resource while parent resource is provisioning");

  s.FinishAll();
  ASSERT_EQ(s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody()).result_int(), 201u);
  s.FinishAll();
  ASSERT_EQ(s.Delete(cluster + V()).result_int(), 202u);
  EXPECT_EQ(s.Put(cluster + "/nodePools/np2" + V(), bad_pool).result_int(), 400u);
  auto deleting = s.Put(cluster + "/nodePools/np2" + V(), NodePoolBody());
  ASSERT_EQ(deleting.result_int(), 409u) << deleting.body();
  EXPECT_EQ(*FindPointer(BodyOf(deleting), "/error/message"),
            "Cannot create resource while parent resource is deleting");
  auto update = s.Put(cluster + "/nodePools/np1" + V(), bad_pool);
  ASSERT_EQ(update.result_int(), 409u) << update.body();
  EXPECT_EQ(ErrorCodeOf(update), "Conflict");
}

// The last node pool of a cluster cannot be deleted (the real service's
// FrontendCRUD/NodePool/delete-not-last); a pool being deleted does not count, and the cluster's own DELETE
// still deletes every pool.
TEST_F(FrontendTest, LastNodePoolCannotBeDeleted) {
  const std::string cluster = ClusterPath("keeps");
  CreateCluster("keeps");
  ASSERT_EQ(s.Put(cluster + "/nodePools/one" + V(), NodePoolBody()).result_int(), 201u);
  ASSERT_EQ(s.Put(cluster + "/nodePools/two" + V(), NodePoolBody()).result_int(), 201u);
  s.FinishAll();

  auto only_other = s.Delete(cluster + "/nodePools/two" + V());
  ASSERT_EQ(only_other.result_int(), 202u) << only_other.body();
  auto last = s.Delete(cluster + "/nodePools/one" + V());
  ASSERT_EQ(last.result_int(), 400u) << last.body();
  json::value body = BodyOf(last);
  EXPECT_EQ(*FindPointer(body, "/error/code"), "InvalidRequestContent");
  EXPECT_EQ(*FindPointer(body, "/error/message"),
            "Forbidden: The last node pool can not be deleted from a cluster.");
  EXPECT_EQ(*FindPointer(body, "/error/target"), "name");
  EXPECT_EQ(s.Resource(cluster + "/nodePools/one")->provisioning_state, "Succeeded");

  // Once "two" is gone, "one" is still the last.
  s.FinishAll();
  EXPECT_EQ(s.Get(cluster + "/nodePools/two" + V()).result_int(), 404u);
  EXPECT_EQ(s.Delete(cluster + "/nodePools/one" + V()).result_int(), 400u);

  // The cluster's DELETE takes its last pool with it.
  ASSERT_EQ(s.Delete(cluster + V()).result_int(), 202u);
  EXPECT_EQ(s.Resource(cluster + "/nodePools/one")->provisioning_state, "Deleting");
  // A DELETE of a pool the cluster's delete is deleting points at that delete.
  EXPECT_EQ(s.Delete(cluster + "/nodePools/one" + V()).result_int(), 202u);
  s.FinishAll();
  EXPECT_EQ(s.Get(cluster + "/nodePools/one" + V()).result_int(), 404u);
  EXPECT_EQ(s.Get(cluster + V()).result_int(), 404u);
}

TEST_F(FrontendTest, ExternalAuthLifecycle) {
  const std::string cluster = ClusterPath("ea");
  CreateCluster("ea");
  auto r = s.Put(cluster + "/externalAuths/auth1" + V(), ExternalAuthBody());
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(FindPointer(BodyOf(r), "/location"), nullptr);
  EXPECT_EQ(*FindPointer(BodyOf(r), "/type"), "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/externalAuths");
  ExpectValidResource(r, kStable, "ExternalAuth");
  s.FinishAll();
  auto list = s.Get(cluster + "/externalAuths" + V());
  ASSERT_EQ(list.result_int(), 200u);
  EXPECT_EQ(FindPointer(BodyOf(list), "/value")->as_array().size(), 1u);
  EXPECT_EQ(s.Delete(cluster + "/externalAuths/auth1" + V()).result_int(), 202u);
}

TEST_F(FrontendTest, ListsPageWithTopAndNextLink) {
  for (int i = 0; i < 25; ++i) CreateCluster("c" + std::to_string(i), i % 2 == 0 ? "rgA" : "rgB");
  std::set<std::string> seen;
  std::string target = "/subscriptions/" + std::string(kSub) +
                       "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" + V() + "&$top=10";
  int pages = 0;
  while (!target.empty()) {
    auto r = s.Get(target);
    ASSERT_EQ(r.result_int(), 200u) << r.body();
    auto b = BodyOf(r);
    for (const auto& v : FindPointer(b, "/value")->as_array())
      seen.insert(std::string(v.at("name").as_string()));
    ++pages;
    const auto* next = FindPointer(b, "/nextLink");
    if (next == nullptr) break;
    std::string link(next->as_string());
    EXPECT_EQ(link.rfind("https://management.azure.com/", 0), 0u) << link;
    EXPECT_NE(link.find("api-version=2026-10-01"), std::string::npos);
    EXPECT_NE(link.find("$top=10"), std::string::npos);
    target = TargetOf(link);
  }
  EXPECT_EQ(seen.size(), 25u);
  EXPECT_EQ(pages, 3);
  auto rg = s.Get("/subscriptions/" + std::string(kSub) +
                  "/resourceGroups/RGA/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" + V());
  ASSERT_EQ(rg.result_int(), 200u);
  EXPECT_EQ(FindPointer(BodyOf(rg), "/value")->as_array().size(), 13u);
  EXPECT_EQ(FindPointer(BodyOf(rg), "/nextLink"), nullptr);
  EXPECT_EQ(s.Get(target.substr(0, target.find('?')) + V() + "&$top=0").result_int(), 400u);
  EXPECT_EQ(s.Get(target.substr(0, target.find('?')) + V() + "&$skipToken=!!").result_int(), 400u);
}

// Lists show each resource as its GET does, in every api-version and after each change (the
// frontend keeps rendered resources by version for lists).
TEST_F(FrontendTest, ListShowsEachResourceAsItsGetAfterAChange) {
  CreateCluster("listed");
  const std::string list = "/subscriptions/" + std::string(kSub) +
                           "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=";
  auto same_as_get = [&](const std::string& version) {
    auto l = s.Get(list + version);
    ASSERT_EQ(l.result_int(), 200u) << l.body();
    auto g = s.Get(ClusterPath("listed") + "?api-version=" + version);
    ASSERT_EQ(g.result_int(), 200u) << g.body();
    auto listed = BodyOf(l);
    const auto& value = FindPointer(listed, "/value")->as_array();
    ASSERT_EQ(value.size(), 1u);
    EXPECT_EQ(value[0], BodyOf(g)) << version;
  };
  same_as_get("2026-10-01");
  same_as_get("2026-10-01");  // shown again unchanged
  same_as_get("2024-06-10-preview");
  auto p = s.Patch(ClusterPath("listed") + V(), R"({"tags":{"env":"changed"}})");
  ASSERT_EQ(p.result_int(), 202u) << p.body();
  s.FinishOperation(OperationIdOf(Header(p, "Azure-AsyncOperation")));
  auto l = s.Get(list + "2026-10-01");
  EXPECT_EQ(*FindPointer(BodyOf(l), "/value/0/tags/env"), "changed") << l.body();
  same_as_get("2026-10-01");
  same_as_get("2024-06-10-preview");
}

// The render cache's lookups as the metrics show them: {hits, misses}.
std::pair<int, int> RenderCacheLookups(const metrics::Registry& registry) {
  std::string text = registry.Expose();
  auto value = [&](std::string_view result) {
    std::string series = "hcprp_frontend_render_cache_lookups_total{result=\"" + std::string(result) + "\"} ";
    size_t at = text.find(series);
    return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + series.size());
  };
  return {value("hit"), value("miss")};
}

TEST(FrontendRenderCacheTest, AGetRendersOnlyAVersionNotShownBefore) {
  metrics::Registry registry;
  FrontendOptions options;
  options.metrics = &registry;
  Scenario s(options);
  s.RegisterSubscription();
  auto created = s.Put(ClusterPath("cached") + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  const auto start = RenderCacheLookups(registry);
  ASSERT_GE(start.first, 0);

  auto first = s.Get(ClusterPath("cached") + V());
  ASSERT_EQ(first.result_int(), 200u) << first.body();
  EXPECT_EQ(RenderCacheLookups(registry), std::make_pair(start.first, start.second + 1));
  auto again = s.Get(ClusterPath("cached") + V());
  EXPECT_EQ(again.body(), first.body());
  EXPECT_EQ(Header(again, "ETag"), Header(first, "ETag"));
  EXPECT_EQ(RenderCacheLookups(registry), std::make_pair(start.first + 1, start.second + 1));
  ExpectValidResource(again, kStable, "HcpOpenShiftCluster");

  // Another api-version is another rendering; a change is a new version, shown at once.
  auto preview = s.Get(ClusterPath("cached") + V(kPreview));
  ASSERT_EQ(preview.result_int(), 200u) << preview.body();
  EXPECT_EQ(RenderCacheLookups(registry), std::make_pair(start.first + 1, start.second + 2));
  auto p = s.Patch(ClusterPath("cached") + V(), R"({"tags":{"env":"changed"}})");
  ASSERT_EQ(p.result_int(), 202u) << p.body();
  auto changed = s.Get(ClusterPath("cached") + V());
  EXPECT_EQ(*FindPointer(BodyOf(changed), "/tags/env"), "changed") << changed.body();
  EXPECT_NE(Header(changed, "ETag"), Header(first, "ETag"));
}

TEST_F(FrontendTest, NodePoolListByParent) {
  const std::string cluster = ClusterPath("parent");
  CreateCluster("parent");
  for (auto n : {"a", "b", "c"})
    ASSERT_EQ(s.Put(cluster + "/nodePools/" + n + V(), NodePoolBody()).result_int(), 201u);
  auto r = s.Get(cluster + "/nodePools" + V() + "&$top=2");
  ASSERT_EQ(r.result_int(), 200u);
  EXPECT_EQ(FindPointer(BodyOf(r), "/value")->as_array().size(), 2u);
  EXPECT_NE(FindPointer(BodyOf(r), "/nextLink"), nullptr);
  EXPECT_EQ(s.Get(ClusterPath("none") + "/nodePools" + V()).result_int(), 404u);
}

TEST_F(FrontendTest, OperationVisibility) {
  auto r = s.Put(ClusterPath("vis") + V(), ClusterBody());
  std::string status = TargetOf(Header(r, "Azure-AsyncOperation"));
  EXPECT_EQ(s.Get(status).result_int(), 200u);
  EXPECT_EQ(s.Get(status, {{"x-ms-home-tenant-id", "other-tenant"}}).result_int(), 404u);
  EXPECT_EQ(s.Get(status, {{"x-ms-client-object-id", "someone-else"}}).result_int(), 404u);
  EXPECT_EQ(s.Get(status, {{"x-ms-client-object-id", ""}}).result_int(), 404u);
  // Another subscription does not see it.
  std::string other = "00000000-0000-0000-0000-000000000001";
  s.RegisterSubscription(other);
  std::string moved = status;
  moved.replace(moved.find(kSub), kSub.size(), other);
  EXPECT_EQ(s.Get(moved).result_int(), 404u);
  // Implicit operations are never visible.
  CreateCluster("vis2");
  ASSERT_EQ(s.Put(ClusterPath("vis2") + "/nodePools/np" + V(), NodePoolBody()).result_int(), 201u);
  s.FinishAll();
  ASSERT_EQ(s.Delete(ClusterPath("vis2") + V()).result_int(), 202u);
  auto np = s.Resource(ClusterPath("vis2") + "/nodePools/np");
  std::string implicit = "/subscriptions/" + std::string(kSub) +
                         "/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/" +
                         *np->active_operation_id + V();
  EXPECT_EQ(s.Get(implicit).result_int(), 404u);
  EXPECT_EQ(s.Get("/subscriptions/" + std::string(kSub) +
                  "/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/unknown" + V())
                .result_int(),
            404u);
}

TEST_F(FrontendTest, FailedOperationResultCarriesItsError) {
  auto r = s.Put(ClusterPath("bad") + V(), ClusterBody());
  std::string op = OperationIdOf(Header(r, "Azure-AsyncOperation"));
  std::string result = "/subscriptions/" + std::string(kSub) +
                       "/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationResults/" + op +
                       V();
  s.FinishOperation(op, "Failed");
  auto st = s.Get(TargetOf(Header(r, "Azure-AsyncOperation")));
  EXPECT_EQ(*FindPointer(BodyOf(st), "/error/code"), "ProvisionFailed");
  auto res = s.Get(result);
  EXPECT_EQ(res.result_int(), 400u);
  EXPECT_EQ(ErrorCodeOf(res), "ProvisionFailed");
}

TEST_F(FrontendTest, CredentialsActions) {
  const std::string cluster = ClusterPath("cred");
  CreateCluster("cred");
  // The body-less form of the api-versions before 2026-09-01-preview (credential_test.cpp has the CSR).
  auto r = s.Post(cluster + "/requestAdminCredential" + V(kPreview));
  ASSERT_EQ(r.result_int(), 202u) << r.body();
  std::string location = Header(r, "Location");
  EXPECT_EQ(Header(r, "Retry-After"), "10");
  EXPECT_EQ(s.Get(TargetOf(location)).result_int(), 202u);
  s.FinishOperation(OperationIdOf(location));
  auto res = s.Get(TargetOf(location));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(*FindPointer(BodyOf(res), "/kubeconfig"), "apiVersion: v1\nkind: Config\n");
  EXPECT_EQ(*FindPointer(BodyOf(res), "/expirationTimestamp"), "2025-01-02T00:00:00Z");

  auto revoke = s.Post(cluster + "/revokeCredentials" + V());
  ASSERT_EQ(revoke.result_int(), 202u) << revoke.body();
  auto blocked = s.Post(cluster + "/requestAdminCredential" + V(kPreview));
  EXPECT_EQ(blocked.result_int(), 409u);
  EXPECT_EQ(Header(blocked, "Retry-After"), "10");
  s.FinishOperation(OperationIdOf(Header(revoke, "Location")));
  EXPECT_EQ(s.Get(TargetOf(Header(revoke, "Location"))).result_int(), 204u);
  EXPECT_EQ(s.Post(cluster + "/requestAdminCredential" + V(kPreview), R"({"certificateSigningRequest":"x"})")
                .result_int(),
            202u);
  EXPECT_EQ(s.Post(ClusterPath("nocluster") + "/revokeCredentials" + V()).result_int(), 404u);
}

TEST_F(FrontendTest, ClusterServiceRejectionRemovesDocuments) {
  std::string before = s.DumpStore();
  s.cs.FailNextCreate(Error::InvalidArgument("Cluster name is reserved"));
  auto r = s.Put(ClusterPath("reject") + V(), ClusterBody());
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_NE(r.body().find("Cluster name is reserved"), std::string::npos);
  EXPECT_EQ(s.DumpStore(), before);
}

TEST_F(FrontendTest, UnreachableClusterServiceKeepsTheAcceptedOperation) {
  s.cs.FailWith(Error::Unavailable("down"));
  auto r = s.Put(ClusterPath("later") + V(), ClusterBody());
  ASSERT_EQ(r.result_int(), 201u);
  auto op = s.Operation(OperationIdOf(Header(r, "Azure-AsyncOperation")));
  ASSERT_TRUE(op);
  EXPECT_EQ(op->status, "Accepted");
  EXPECT_TRUE(op->internal_id.empty());
}

TEST_F(FrontendTest, DeleteWhileClusterServiceIsDownKeepsOneDeleteOperation) {
  const std::string path = ClusterPath("downdel");
  CreateCluster("downdel");
  std::string href = s.Resource(path)->internal_id;
  s.cs.FailWith(Error::Unavailable("down"));
  auto first = s.Delete(path + V());
  ASSERT_EQ(first.result_int(), 202u) << first.body();
  std::string op_id = OperationIdOf(Header(first, "Azure-AsyncOperation"));
  auto op = s.Operation(op_id);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->request, arm::OperationRequest::kDelete);
  EXPECT_EQ(op->status, "Deleting");
  EXPECT_EQ(op->internal_id, href);
  EXPECT_EQ(s.Resource(path)->provisioning_state, "Deleting");
  // A repeated DELETE answers with the same operation; the Cluster Service object is still there
  // for the backend to delete.
  auto again = s.Delete(path + V());
  ASSERT_EQ(again.result_int(), 202u);
  EXPECT_EQ(OperationIdOf(Header(again, "Azure-AsyncOperation")), op_id);
  s.cs.FailWith(std::nullopt);
  EXPECT_TRUE(s.cs.Exists(href));
  int deletes = 0;
  for (const auto& call : s.cs.Calls()) deletes += call == "Delete " + href ? 1 : 0;
  EXPECT_EQ(deletes, 2);  // each DELETE tried once; neither reached the service
}

// The store is down (a PostgreSQL restart): reads and writes answer 503 ServiceUnavailable with
// Retry-After and a body that does not leak the store's message; when it is back, the same frontend
// answers again.
TEST_F(FrontendTest, StoreUnavailableIs503WithRetryAfterAndRecovers) {
  const std::string path = ClusterPath("outage");
  CreateCluster("outage");
  auto created = s.Put(ClusterPath("pending") + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  const std::string status_target = TargetOf(Header(created, "Azure-AsyncOperation"));

  store::FaultInjectingStore faulty(*s.store);
  auto fe = Frontend::Create({}, &faulty, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
  ASSERT_TRUE(fe.ok());
  s.frontend = std::move(fe).value();
  const std::string before = s.DumpStore();
  faulty.FailAllCalls(Error::Unavailable("connect to PostgreSQL: connection refused"));

  auto expect_unavailable = [&](const Response& r, const std::string& what) {
    EXPECT_EQ(r.result_int(), 503u) << what << ": " << r.body();
    EXPECT_EQ(Header(r, "Retry-After"), std::to_string(arm::kUnavailableRetryAfterSeconds)) << what;
    EXPECT_EQ(ErrorCodeOf(r), "ServiceUnavailable") << what;
    EXPECT_EQ(Header(r, "x-ms-error-code"), "ServiceUnavailable") << what;
    EXPECT_EQ(r.body().find("PostgreSQL"), std::string::npos) << what;
    EXPECT_FALSE(Header(r, "x-ms-request-id").empty()) << what;
  };
  expect_unavailable(s.Get(path + V()), "GET cluster");
  expect_unavailable(s.Get(status_target), "GET operation status");
  expect_unavailable(s.Put(ClusterPath("during") + V(), ClusterBody()), "PUT new cluster");
  expect_unavailable(s.Patch(path + V(), R"({"tags":{"a":"b"}})"), "PATCH cluster");
  expect_unavailable(s.Delete(path + V()), "DELETE cluster");
  expect_unavailable(s.Get("/readyz"), "readiness probe");
  EXPECT_EQ(s.Get("/healthz").result_int(), 200u);  // liveness does not depend on the store
  EXPECT_EQ(Header(s.Get("/healthz"), "Retry-After"), "");

  faulty.ClearFaults();
  EXPECT_EQ(s.DumpStore(), before);  // nothing half-written
  EXPECT_EQ(s.Get(path + V()).result_int(), 200u);
  EXPECT_EQ(s.Get(status_target).result_int(), 200u);
  auto after = s.Put(ClusterPath("during") + V(), ClusterBody());
  EXPECT_EQ(after.result_int(), 201u) << after.body();
}

// --- ETag tables (docs/architecture.md), row by row
// ------------------------------------------------------------

TEST_F(FrontendTest, EtagTablePut) {
  const std::string absent = ClusterPath("etag-absent");
  EXPECT_EQ(s.Put(absent + V(), ClusterBody(), {{"If-Match", "*"}}).result_int(), 412u);
  EXPECT_EQ(s.Put(absent + V(), ClusterBody(), {{"If-Match", "\"xyz\""}}).result_int(), 412u);
  auto created = s.Put(absent + V(), ClusterBody(), {{"If-None-Match", "*"}});
  EXPECT_EQ(created.result_int(), 201u);
  s.FinishAll();
  std::string etag = Header(s.Get(absent + V()), "ETag");
  EXPECT_EQ(s.Put(absent + V(), ClusterBody(), {{"If-None-Match", "*"}}).result_int(), 412u);
  EXPECT_EQ(s.Put(absent + V(), ClusterBody(), {{"If-Match", "\"xyz\""}}).result_int(), 412u);
  auto r = s.Put(absent + V(), ClusterBody(), {{"If-Match", etag}});
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  s.FinishAll();
  EXPECT_EQ(s.Put(absent + V(), ClusterBody(), {{"If-Match", "*"}}).result_int(), 200u);
  s.FinishAll();
  EXPECT_EQ(s.Put(absent + V(), ClusterBody()).result_int(), 200u);
  auto pf = s.Put(absent + V(), ClusterBody(), {{"If-Match", etag}});
  EXPECT_EQ(pf.result_int(), 412u);
  EXPECT_EQ(ErrorCodeOf(pf), "PreconditionFailed");
}

TEST_F(FrontendTest, EtagTablePatch) {
  const std::string path = ClusterPath("etag-patch");
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})").result_int(), 404u);
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})", {{"If-Match", "*"}}).result_int(), 404u);
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})", {{"If-Match", "\"xyz\""}}).result_int(), 404u);
  CreateCluster("etag-patch");
  std::string etag = Header(s.Get(path + V()), "ETag");
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})", {{"If-Match", "\"xyz\""}}).result_int(), 412u);
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})", {{"If-Match", etag}}).result_int(), 202u);
  s.FinishAll();
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})", {{"If-Match", "*"}}).result_int(), 202u);
  s.FinishAll();
  EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})").result_int(), 202u);
}

TEST_F(FrontendTest, EtagTableDelete) {
  const std::string path = ClusterPath("etag-del");
  EXPECT_EQ(s.Delete(path + V()).result_int(), 204u);
  EXPECT_EQ(s.Delete(path + V(), {{"If-Match", "*"}}).result_int(), 204u);
  EXPECT_EQ(s.Delete(path + V(), {{"If-Match", "\"xyz\""}}).result_int(), 204u);
  CreateCluster("etag-del");
  EXPECT_EQ(s.Delete(path + V(), {{"If-Match", "\"xyz\""}}).result_int(), 412u);
  std::string etag = Header(s.Get(path + V()), "ETag");
  EXPECT_EQ(s.Delete(path + V(), {{"If-Match", etag}}).result_int(), 202u);
  EXPECT_EQ(s.Delete(path + V(), {{"If-Match", "*"}}).result_int(), 202u);
  EXPECT_EQ(s.Delete(path + V()).result_int(), 202u);
}

// --- Subscription states ------------------------------------------------------------------------

TEST(SubscriptionStateTest, Table) {
  Scenario s;
  const std::string path = ClusterPath("c1");
  // Unknown subscription: 400 InvalidSubscriptionState for everything.
  auto r = s.Get(path + V());
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_EQ(ErrorCodeOf(r), "InvalidSubscriptionState");
  s.RegisterSubscription(kSub, "Unregistered");
  EXPECT_EQ(s.Put(path + V(), ClusterBody()).result_int(), 400u);
  s.RegisterSubscription(kSub, "Registered");
  ASSERT_EQ(s.Put(path + V(), ClusterBody()).result_int(), 201u);
  s.FinishAll();
  for (auto state : {"Warned", "Suspended"}) {
    s.RegisterSubscription(kSub, state);
    EXPECT_EQ(s.Get(path + V()).result_int(), 200u) << state;
    auto put = s.Put(path + V(), ClusterBody());
    EXPECT_EQ(put.result_int(), 409u) << state;
    EXPECT_EQ(ErrorCodeOf(put), "InvalidSubscriptionState");
    EXPECT_EQ(s.Patch(path + V(), R"({"tags":{}})").result_int(), 409u) << state;
    EXPECT_EQ(s.Post(path + "/revokeCredentials" + V()).result_int(), 409u) << state;
  }
  EXPECT_EQ(s.Delete(path + V()).result_int(), 202u);
  auto sub = s.Get("/subscriptions/" + std::string(kSub) + "?api-version=2.0");
  ASSERT_EQ(sub.result_int(), 200u);
  EXPECT_EQ(*FindPointer(BodyOf(sub), "/state"), "Suspended");
  EXPECT_EQ(s.Get("/subscriptions/" + std::string(kSub) + "?api-version=2026-10-01").result_int(), 400u);
}

TEST(SubscriptionStateTest, DeletedSubscriptionDeletesEverythingInChunks) {
  FrontendOptions options;
  options.delete_batch_size = 3;
  Scenario s(options);
  s.RegisterSubscription();
  for (int i = 0; i < 7; ++i) {
    auto r = s.Put(ClusterPath("c" + std::to_string(i)) + V(), ClusterBody());
    ASSERT_EQ(r.result_int(), 201u);
  }
  s.FinishAll();
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(
        s.Put(ClusterPath("c0") + "/nodePools/n" + std::to_string(i) + V(), NodePoolBody()).result_int(),
        201u);
  }
  s.RegisterSubscription(kSub, "Deleted");
  int deletes = 0;
  for (const auto& op : s.Operations()) {
    if (op.request == arm::OperationRequest::kDelete) {
      ++deletes;
      EXPECT_FALSE(op.exposed());
    }
  }
  EXPECT_EQ(deletes, 11);
  // Idempotent: PUT Deleted again creates nothing new.
  s.RegisterSubscription(kSub, "Deleted");
  int again = 0;
  for (const auto& op : s.Operations()) again += op.request == arm::OperationRequest::kDelete ? 1 : 0;
  EXPECT_EQ(again, 11);
  auto r = s.Get(ClusterPath("c1") + V());
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_EQ(ErrorCodeOf(r), "InvalidSubscriptionState");
}

// The backend may finish deleting a resource between the frontend's read of it and the batch that
// starts its Delete operation (the batch fails with NotFound): the cleanup reads it again instead of
// failing the subscription PUT.
TEST(SubscriptionStateTest, DeletedSubscriptionReadsAgainAResourceGoneBeforeItsBatch) {
  Scenario s;
  s.RegisterSubscription();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(s.Put(ClusterPath("c" + std::to_string(i)) + V(), ClusterBody()).result_int(), 201u);
  }
  s.FinishAll();
  store::FaultInjectingStore faulty(*s.store);
  auto fe = Frontend::Create({}, &faulty, &s.cs, &s.clock, Logger(s.log, &s.clock, LogLevel::kDebug, "fe"));
  ASSERT_TRUE(fe.ok());
  s.frontend = std::move(fe).value();
  faulty.FailNthCall(1, Error::NotFound("operation 0: the document does not exist"),
                     store::FaultInjectingStore::Method::kBatch);
  s.RegisterSubscription(kSub, "Deleted");                                      // asserts 200
  EXPECT_EQ(faulty.CallCount(store::FaultInjectingStore::Method::kBatch), 4u);  // one failed, three committed
  int deletes = 0;
  for (const auto& op : s.Operations()) deletes += op.request == arm::OperationRequest::kDelete ? 1 : 0;
  EXPECT_EQ(deletes, 3);
}

// --- Headers, routing, metadata -------------------------------------------------------------------

TEST_F(FrontendTest, CorrelationHeaders) {
  auto r = s.Get(ClusterPath("x") + V(), {{"x-ms-client-request-id", "client-1"}});
  EXPECT_TRUE(Header(r, "x-ms-client-request-id").empty());
  r = s.Get(ClusterPath("x") + V(),
            {{"x-ms-client-request-id", "client-1"}, {"x-ms-return-client-request-id", "true"}});
  EXPECT_EQ(Header(r, "x-ms-client-request-id"), "client-1");
  EXPECT_EQ(Header(r, "x-ms-correlation-request-id"), "corr-1");
  auto lines = s.log->LinesForTest();
  ASSERT_FALSE(lines.empty());
  auto last = ParseJson(lines.back());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->at("msg"), "access");
  EXPECT_EQ(last->at("status"), 404);
  EXPECT_EQ(last->at("correlation_id"), "corr-1");
  EXPECT_EQ(last->at("method"), "GET");
  EXPECT_TRUE(last->as_object().contains("latency_ms"));
  EXPECT_EQ(last->at("request_id"), json::value(Header(r, "x-ms-request-id")));
}

TEST_F(FrontendTest, RoutingErrors) {
  auto r = s.Get("/nothing/here");
  EXPECT_EQ(r.result_int(), 404u);
  EXPECT_EQ(ErrorCodeOf(r), "NotFound");
  r = s.Get("/subscriptions/" + std::string(kSub) + "/providers/Microsoft.RedHatOpenShift/widgets" + V());
  EXPECT_EQ(r.result_int(), 404u);
  EXPECT_EQ(ErrorCodeOf(r), "InvalidResourceType");
  r = s.Post(ClusterPath("x") + V(), "{}");
  EXPECT_EQ(r.result_int(), 405u);
  EXPECT_EQ(ErrorCodeOf(r), "MethodNotAllowed");
  r = s.Get(ClusterPath("x"));
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_EQ(ErrorCodeOf(r), "InvalidParameter");
  r = s.Get(ClusterPath("x") + V("2020-01-01"));
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_EQ(ErrorCodeOf(r), "InvalidResourceType");
  r = s.Get("/SUBSCRIPTIONS/" + std::string(kSub) +
            "/RESOURCEGROUPS/rg1/PROVIDERS/MICROSOFT.REDHATOPENSHIFT/HCPOPENSHIFTCLUSTERS/x" + V());
  EXPECT_EQ(r.result_int(), 404u);
  EXPECT_EQ(ErrorCodeOf(r), "ResourceNotFound");
}

TEST_F(FrontendTest, MetadataEndpoints) {
  auto ops = s.Get("/providers/Microsoft.RedHatOpenShift/operations" + V());
  ASSERT_EQ(ops.result_int(), 200u);
  EXPECT_FALSE(FindPointer(BodyOf(ops), "/value")->as_array().empty());
  std::string loc =
      "/subscriptions/" + std::string(kSub) + "/providers/Microsoft.RedHatOpenShift/locations/eastus";
  s.cs.SetVersions(json::array{json::object{{"id", "openshift-v4.19.7"},
                                            {"channel_group", "stable"},
                                            {"enabled", true},
                                            {"end_of_life_timestamp", "2027-01-17T00:00:00Z"}},
                               json::object{{"id", "openshift-v4.21.3-candidate"},
                                            {"channel_group", "candidate"},
                                            {"enabled", false},
                                            {"end_of_life_timestamp", "2027-10-21T00:00:00Z"}}});
  auto versions = s.Get(loc + "/hcpOpenShiftVersions" + V());
  ASSERT_EQ(versions.result_int(), 200u);
  auto v = s.Get(loc + "/hcpOpenShiftVersions/4.19.7" + V());
  ASSERT_EQ(v.result_int(), 200u) << v.body();
  EXPECT_EQ(*FindPointer(BodyOf(v), "/type"), "Microsoft.RedHatOpenShift/hcpOpenShiftVersions");
  EXPECT_EQ(*FindPointer(BodyOf(v), "/properties/channelGroup"), "stable");
  EXPECT_EQ(s.Get(loc + "/hcpOpenShiftVersions/9.99" + V()).result_int(), 404u);
  EXPECT_EQ(*FindPointer(BodyOf(versions), "/value/1/name"), "4.21.3-candidate");
  EXPECT_EQ(*FindPointer(BodyOf(versions), "/value/1/properties/enabled"), false);
  auto roles = s.Get(loc + "/hcpOperatorIdentityRoleSets" + V());
  ASSERT_EQ(roles.result_int(), 200u);
  auto role = s.Get(loc + "/hcpOperatorIdentityRoleSets/4.19" + V());
  ASSERT_EQ(role.result_int(), 200u);
  EXPECT_EQ(*FindPointer(BodyOf(role), "/properties/controlPlaneOperators/0/required"), "Always");
  EXPECT_EQ(s.Get("/healthz").result_int(), 200u);
  EXPECT_EQ(s.Get("/readyz").result_int(), 200u);
}

TEST_F(FrontendTest, Preflight) {
  std::string url = "/subscriptions/" + std::string(kSub) +
                    "/resourcegroups/rg1/providers/Microsoft.RedHatOpenShift/deployments/dep1/preflight" +
                    V();
  auto cluster = ParseJson(ClusterBody()).value();
  cluster.as_object()["type"] = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters";
  cluster.as_object()["name"] = "pf";
  cluster.as_object()["apiVersion"] = kStable;
  json::object other{{"type", "Microsoft.Storage/storageAccounts"}, {"name", "whatever"}};
  auto ok = s.Post(url, ToJson(json::object{{"resources", json::array{cluster, other}}}));
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(*FindPointer(BodyOf(ok), "/status"), "Succeeded");
  auto bad = cluster;
  bad.as_object()["properties"].as_object()["network"] = json::object{{"podCidr", "not-a-cidr"}};
  bad.as_object()["name"] = "1bad";
  auto failed = s.Post(url, ToJson(json::object{{"resources", json::array{bad, cluster}}}));
  ASSERT_EQ(failed.result_int(), 200u);
  EXPECT_EQ(*FindPointer(BodyOf(failed), "/status"), "Failed");
  EXPECT_EQ(s.Post(url, "[]").result_int(), 400u);
  EXPECT_EQ(s.DumpStore().find("pf"), std::string::npos);
}

// --- Cluster Service objects and service-set values ---------------------------------------------

TEST_F(FrontendTest, ClusterServiceReceivesOcmObjects) {
  const std::string cluster = ClusterPath("ocm");
  CreateCluster("ocm");
  ASSERT_EQ(s.Put(cluster + "/nodePools/np1" + V(), NodePoolBody()).result_int(), 201u);
  ASSERT_EQ(s.Put(cluster + "/externalAuths/ea1" + V(), ExternalAuthBody()).result_int(), 201u);
  auto bodies = s.cs.CreatedBodies();
  ASSERT_EQ(bodies.size(), 3u);
  json::value c = bodies[0];
  EXPECT_EQ(c.as_object().count("properties"), 0u);
  EXPECT_EQ(*FindPointer(c, "/name"), "ocm");
  EXPECT_EQ(*FindPointer(c, "/region/id"), "eastus");
  EXPECT_EQ(*FindPointer(c, "/azure/subscription_id"), json::value(kSub));
  EXPECT_EQ(*FindPointer(c, "/azure/resource_group_name"), "rg1");
  EXPECT_EQ(*FindPointer(c, "/azure/tenant_id"), json::value(kTenant));
  EXPECT_EQ(*FindPointer(c, "/version/id"), "openshift-v4.20");
  ASSERT_NE(FindPointer(c, "/azure/subnet_resource_id"), nullptr);
  json::value np = bodies[1];
  EXPECT_EQ(*FindPointer(np, "/name"), "np1");
  EXPECT_EQ(*FindPointer(np, "/replicas"), 2);
  EXPECT_EQ(*FindPointer(np, "/azure_node_pool/vm_size"), "Standard_D4s_v3");
  json::value ea = bodies[2];
  EXPECT_EQ(*FindPointer(ea, "/name"), "ea1");
  EXPECT_EQ(*FindPointer(ea, "/issuer/url"), "https://issuer.example.com");
  EXPECT_EQ(*FindPointer(ea, "/claim/mappings/user_name/claim"), "email");
}

TEST_F(FrontendTest, ServiceSetValuesAppearInEveryResponse) {
  const std::string path = ClusterPath("observed");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  ExpectValidResource(created, kStable, "HcpOpenShiftCluster");
  auto listed = s.cs.List(std::string(clusterservice::kApiPrefix) + "/clusters");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  json::value object = listed->at(0);
  json::value body = BodyOf(created);
  EXPECT_EQ(*FindPointer(body, "/properties/api/url"), *FindPointer(object, "/api/url"));
  EXPECT_EQ(*FindPointer(body, "/properties/console/url"), *FindPointer(object, "/console/url"));
  EXPECT_EQ(*FindPointer(body, "/properties/dns/baseDomain"), *FindPointer(object, "/dns/base_domain"));
  EXPECT_EQ(*FindPointer(body, "/properties/platform/issuerUrl"), *FindPointer(object, "/azure/issuer_url"));
  EXPECT_EQ(*FindPointer(body, "/properties/status/conditions/0/type"), "Progressing");
  // Before the backend records the object, a GET reads what the Cluster Service assigned from it.
  auto early = s.Get(path + V());
  ExpectValidResource(early, kStable, "HcpOpenShiftCluster");
  EXPECT_EQ(*FindPointer(BodyOf(early), "/properties/api/url"), *FindPointer(object, "/api/url"));
  EXPECT_EQ(*FindPointer(BodyOf(early), "/properties/platform/issuerUrl"),
            *FindPointer(object, "/azure/issuer_url"));

  s.clock.Advance(std::chrono::minutes(5));
  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  auto got = s.Get(path + V());
  ExpectValidResource(got, kStable, "HcpOpenShiftCluster");
  json::value g = BodyOf(got);
  EXPECT_EQ(*FindPointer(g, "/properties/api/url"), *FindPointer(object, "/api/url"));
  EXPECT_EQ(*FindPointer(g, "/properties/status/conditions/0/type"), "Available");
  EXPECT_EQ(*FindPointer(g, "/properties/status/conditions/0/status"), "True");
  EXPECT_EQ(*FindPointer(g, "/properties/status/conditions/0/lastTransitionTime"),
            json::value(FormatRfc3339(s.clock.Now(), true)));
  ExpectValidResource(s.Get(path + V(kPreview)), kPreview, "HcpOpenShiftCluster");
  EXPECT_EQ(FindPointer(BodyOf(s.Get(path + V(kPreview))), "/properties/status"), nullptr);

  auto list = s.Get("/subscriptions/" + std::string(kSub) +
                    "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" + V());
  ASSERT_EQ(list.result_int(), 200u);
  const json::value item = *FindPointer(BodyOf(list), "/value/0");
  EXPECT_TRUE(api::ValidateResponse(kStable, "HcpOpenShiftCluster", item).errors.empty()) << ToJson(item);

  auto put = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(put.result_int(), 200u) << put.body();
  ExpectValidResource(put, kStable, "HcpOpenShiftCluster");
  s.FinishOperation(OperationIdOf(Header(put, "Azure-AsyncOperation")));
  auto patch = s.Patch(path + V(), R"({"tags":{"team":"red"}})");
  ASSERT_EQ(patch.result_int(), 202u);
  s.FinishOperation(OperationIdOf(Header(patch, "Location")));
  auto result = s.Get(TargetOf(Header(patch, "Location")));
  ASSERT_EQ(result.result_int(), 200u);
  ExpectValidResource(result, kStable, "HcpOpenShiftCluster");
}

// The backend copies the Cluster Service's version history and the identities the managed-identity service
// read into clusterServiceStatus: GET shows what runs (two versions while an upgrade runs) and each
// identity's principalId and clientId ({} for one that could not be read), and a node pool version change
// is judged against the versions the control plane runs.
TEST_F(FrontendTest, ActiveVersionsAndIdentitiesComeFromTheClusterService) {
  const std::string path = ClusterPath("versions");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  const std::string pool = path + "/nodePools/np1";
  auto pool_created = s.Put(pool + V(), NodePoolBody());
  ASSERT_EQ(pool_created.result_int(), 201u) << pool_created.body();
  s.FinishOperation(OperationIdOf(Header(pool_created, "Azure-AsyncOperation")));

  json::value before = BodyOf(s.Get(path + V()));
  const json::object* assigned = FindPointer(before, "/identity/userAssignedIdentities")->if_object();
  ASSERT_NE(assigned, nullptr);
  ASSERT_FALSE(assigned->empty());
  const std::string readable(assigned->begin()->key());
  for (const auto& member : *assigned) EXPECT_TRUE(member.value().as_object().empty()) << member.key();

  auto set_status = [&](const std::string& history, bool identity_readable = true) {
    json::object ids;
    if (identity_readable) {
      ids[ToLower(readable)] = json::object{{"client_id", "11111111-0000-4000-8000-000000000001"},
                                            {"principal_id", "22222222-0000-4000-8000-000000000002"}};
    }
    ASSERT_TRUE(s.store
                    ->Patch(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path),
                            {{store::PatchOp::Kind::kSet, std::string(arm::kPathServiceStatus),
                              json::object{{"version_history", ParseJson(history).value()},
                                           {"managed_identities", std::move(ids)}}}})
                    .ok());
  };
  set_status(R"([{"version":"4.21.3","state":"Partial"},{"version":"4.20.14","state":"Completed"},
                 {"version":"4.20.12","state":"Completed"}])");
  auto upgrading = s.Get(path + V());
  ExpectValidResource(upgrading, kStable, "HcpOpenShiftCluster");
  json::value c = BodyOf(upgrading);
  const json::array* active = FindPointer(c, "/properties/status/activeVersions")->if_array();
  ASSERT_NE(active, nullptr);
  ASSERT_EQ(active->size(), 2u);
  EXPECT_EQ(GetString((*active)[0].as_object(), "version"), "4.21.3");
  EXPECT_EQ(GetString((*active)[1].as_object(), "version"), "4.20.14");
  const json::object& ids = FindPointer(c, "/identity/userAssignedIdentities")->as_object();
  for (const auto& member : ids) {
    const json::object& entry = member.value().as_object();
    if (member.key() == readable) {
      EXPECT_EQ(GetString(entry, "clientId"), "11111111-0000-4000-8000-000000000001");
      EXPECT_EQ(GetString(entry, "principalId"), "22222222-0000-4000-8000-000000000002");
    } else {
      EXPECT_TRUE(entry.empty()) << member.key();
    }
  }

  // While the control plane still runs 4.20.14, a node pool may not move to 4.21.
  auto ahead = s.Patch(pool + V(), R"({"properties":{"version":{"id":"4.21.3"}}})");
  EXPECT_EQ(ahead.result_int(), 400u) << ahead.body();
  EXPECT_NE(
      ahead.body().find("invalid node pool version 4.21.3: cannot exceed control plane version 4.20.14"),
      std::string::npos)
      << ahead.body();
  set_status(R"([{"version":"4.21.3","state":"Completed"},{"version":"4.20.14","state":"Completed"}])",
             false);
  json::value settled = BodyOf(s.Get(path + V()));
  active = FindPointer(settled, "/properties/status/activeVersions")->if_array();
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active->size(), 1u);
  // An identity the managed-identity service can no longer read (deleted) shows as {}.
  EXPECT_TRUE(FindPointer(BodyOf(s.Get(path + V())), "/identity/userAssignedIdentities")
                  ->as_object()
                  .at(readable)
                  .as_object()
                  .empty());
  auto follows = s.Patch(pool + V(), R"({"properties":{"version":{"id":"4.21.3"}}})");
  EXPECT_EQ(follows.result_int(), 202u) << follows.body();
}

// An upgrade the engine rolls out is progress, not unavailability; a failed one, and any Cluster Service
// failure outside an operation of the resource, degrade it with the Cluster Service's reason.
TEST_F(FrontendTest, UpgradesShowAsProgressAndTheirFailuresAsDegraded) {
  const std::string path = ClusterPath("upgrading");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  auto set_status = [&](const std::string& status) {
    ASSERT_TRUE(s.store
                    ->Patch(store::kResources, arm::PartitionKey(kSub), arm::ResourceDocumentId(path),
                            {{store::PatchOp::Kind::kSet, std::string(arm::kPathServiceStatus),
                              ParseJson(status).value()}})
                    .ok());
  };
  auto condition = [&](std::string_view type) {
    json::value body = BodyOf(s.Get(path + V()));
    for (const json::value& c : FindPointer(body, "/properties/status/conditions")->as_array()) {
      if (GetString(c.as_object(), "type") == type) return c.as_object();
    }
    return json::object{};
  };
  set_status(R"({"conditions":[
      {"type":"VMReady","status":"False","reason":"Creating","message":"2 of 3 ready, 1 Creating",
       "lastTransitionTime":"2026-01-02T03:04:05Z"},
      {"type":"Progressing","status":"True","reason":"Upgrading","message":"1 of 2 machines at 4.21.2",
       "lastTransitionTime":"2026-01-02T03:04:05Z"}],"provision_error":null})");
  EXPECT_EQ(GetString(condition("Available"), "status"), "True");
  EXPECT_EQ(GetString(condition("Progressing"), "status"), "True");
  EXPECT_EQ(GetString(condition("Progressing"), "reason"), "Creating");
  EXPECT_NE(std::string(GetString(condition("Progressing"), "message").value_or(""))
                .find("Progressing: 1 of 2 machines at 4.21.2"),
            std::string::npos);
  EXPECT_EQ(GetString(condition("Degraded"), "status"), "False");

  set_status(R"({"conditions":[
      {"type":"Progressing","status":"False","reason":"UpgradeFailed","message":"upgrade to 4.21.2 failed",
       "lastTransitionTime":"2026-01-02T03:05:05Z"}],
      "provision_error":{"code":"OCM4242","message":"payload unavailable"}})");
  ExpectValidResource(s.Get(path + V()), kStable, "HcpOpenShiftCluster");
  EXPECT_EQ(GetString(condition("Available"), "status"), "True");
  EXPECT_EQ(GetString(condition("Progressing"), "status"), "False");
  EXPECT_EQ(GetString(condition("Degraded"), "status"), "True");
  EXPECT_EQ(GetString(condition("Degraded"), "reason"), "OCM4242");
  EXPECT_EQ(GetString(condition("Degraded"), "message"), "payload unavailable");
}

// The backend copies the provisioning engine's conditions into clusterServiceStatus; GET renders them
// as the API's Available/Progressing/Degraded conditions, for every api-version that has the field.
TEST_F(FrontendTest, EngineConditionsAppearInGet) {
  const std::string path = ClusterPath("engine");
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  auto set_conditions = [&](std::string_view resource_path, const std::string& conditions) {
    const std::string pk = arm::PartitionKey(kSub);
    const std::string id = arm::ResourceDocumentId(resource_path);
    ASSERT_TRUE(s.store
                    ->Patch(store::kResources, pk, id,
                            {{store::PatchOp::Kind::kSet, std::string(arm::kPathServiceStatus),
                              json::object{{"conditions", ParseJson(conditions).value()}}}})
                    .ok());
  };
  set_conditions(path, R"([
      {"type":"ResourceGroupReady","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"},
      {"type":"LoadBalancerReady","status":"False","reason":"Creating","message":"0 of 1 ready, 1 Creating",
       "lastTransitionTime":"2026-01-02T03:04:06Z"},
      {"type":"AzureIdentityValid","status":"True","lastTransitionTime":"2026-01-02T03:04:01Z"}])");
  auto creating = s.Get(path + V());
  ExpectValidResource(creating, kStable, "HcpOpenShiftCluster");
  json::value c = BodyOf(creating);
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/0/type"), "Available");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/0/status"), "False");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/0/reason"), "Creating");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/1/type"), "Progressing");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/1/status"), "True");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/1/reason"), "Creating");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/1/message"),
            "LoadBalancerReady: 0 of 1 ready, 1 Creating");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/1/lastTransitionTime"),
            "2026-01-02T03:04:06.000000Z");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/2/type"), "Degraded");
  EXPECT_EQ(*FindPointer(c, "/properties/status/conditions/2/status"), "False");
  ExpectValidResource(s.Get(path + V(kPreview)), kPreview, "HcpOpenShiftCluster");
  EXPECT_EQ(FindPointer(BodyOf(s.Get(path + V(kPreview))), "/properties/status"), nullptr);

  s.FinishOperation(OperationIdOf(Header(created, "Azure-AsyncOperation")));
  set_conditions(path, R"([
      {"type":"LoadBalancerReady","status":"True","lastTransitionTime":"2026-01-02T03:05:00Z"},
      {"type":"AzureIdentityValid","status":"False","reason":"IdentityNotFound",
       "message":"The cluster's managed identity credentials are invalid: AADSTS700016",
       "lastTransitionTime":"2026-01-02T03:06:00Z"}])");
  auto degraded = s.Get(path + V());
  ExpectValidResource(degraded, kStable, "HcpOpenShiftCluster");
  json::value d = BodyOf(degraded);
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/0/status"), "False");
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/1/status"), "False");
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/2/type"), "Degraded");
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/2/status"), "True");
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/2/reason"), "IdentityNotFound");
  EXPECT_EQ(*FindPointer(d, "/properties/status/conditions/2/message"),
            "AzureIdentityValid: The cluster's managed identity credentials are invalid: AADSTS700016");

  set_conditions(path, R"([
      {"type":"LoadBalancerReady","status":"True","lastTransitionTime":"2026-01-02T03:05:00Z"},
      {"type":"AzureIdentityValid","status":"True","lastTransitionTime":"2026-01-02T03:07:00Z"}])");
  json::value ready = BodyOf(s.Get(path + V()));
  EXPECT_EQ(*FindPointer(ready, "/properties/status/conditions/0/status"), "True");
  EXPECT_EQ(*FindPointer(ready, "/properties/status/conditions/0/lastTransitionTime"),
            "2026-01-02T03:07:00.000000Z");
  EXPECT_EQ(*FindPointer(ready, "/properties/status/conditions/1/status"), "False");
  EXPECT_EQ(*FindPointer(ready, "/properties/status/conditions/2/status"), "False");

  // Node pools too; a reason outside the API's pattern is replaced.
  const std::string np = path + "/nodePools/np1";
  auto np_created = s.Put(np + V(), NodePoolBody());
  ASSERT_EQ(np_created.result_int(), 201u) << np_created.body();
  set_conditions(np, R"([
      {"type":"VMReady","status":"False","reason":"Failed badly","message":"np1-0: quota exceeded",
       "lastTransitionTime":"2026-01-02T03:08:00Z"},
      {"type":"MachinesReady","status":"False","reason":"Creating","message":"0 of 2 machines ready",
       "lastTransitionTime":"2026-01-02T03:08:00Z"}])");
  auto pool = s.Get(np + V());
  ExpectValidResource(pool, kStable, "NodePool");
  json::value p = BodyOf(pool);
  EXPECT_EQ(*FindPointer(p, "/properties/status/conditions/2/status"), "True");
  EXPECT_EQ(*FindPointer(p, "/properties/status/conditions/2/reason"), "Degraded");
  EXPECT_EQ(*FindPointer(p, "/properties/status/conditions/2/message"), "VMReady: np1-0: quota exceeded");
  ExpectValidResource(s.Get(np + V(kPreview)), kPreview, "NodePool");
}

TEST_F(FrontendTest, ServiceSetValuesMissedAtCreateAreRecordedByTheNextUpdate) {
  const std::string path = ClusterPath("late");
  s.cs.FailWith(Error::Unavailable("down"));
  auto created = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(created.result_int(), 201u);
  EXPECT_EQ(FindPointer(BodyOf(created), "/properties/api/url"), nullptr);
  s.cs.FailWith(std::nullopt);
  // What the backend does: create the object with the operation's key and record the href.
  std::string op_id = OperationIdOf(Header(created, "Azure-AsyncOperation"));
  auto object =
      s.cs.Create("/api/aro_hcp/v1alpha1/clusters",
                  json::object{{"name", "late"}, {"region", json::object{{"id", "eastus"}}}}, op_id);
  ASSERT_TRUE(object.ok());
  std::string href(object->at("href").as_string());
  auto marked = s.store->Batch(
      store::kResources, arm::PartitionKey(kSub),
      {store::WriteOp::Patch(
          arm::ResourceDocumentId(path),
          {{store::PatchOp::Kind::kSet, std::string(arm::kPathInternalId), json::value(href)}})});
  ASSERT_TRUE(marked.ok());
  s.FinishOperation(op_id);
  auto put = s.Put(path + V(), ClusterBody());
  ASSERT_EQ(put.result_int(), 200u) << put.body();
  ExpectValidResource(put, kStable, "HcpOpenShiftCluster");
  EXPECT_EQ(*FindPointer(BodyOf(put), "/properties/api/url"), object->at("api").at("url"));
  ExpectValidResource(s.Get(path + V()), kStable, "HcpOpenShiftCluster");
}

// --- HEAD and the server's own 413 -----------------------------------------------------------------

TEST_F(FrontendTest, HeadIsGetWithoutBody) {
  const std::string path = ClusterPath("head");
  CreateCluster("head");
  auto get = s.Get(path + V());
  auto head = s.Send({bhttp::verb::head, path + V(), "", {}});
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(Header(head, "Content-Length"), std::to_string(get.body().size()));
  EXPECT_EQ(Header(head, "ETag"), Header(get, "ETag"));
  EXPECT_FALSE(Header(head, "x-ms-request-id").empty());
  auto absent = s.Send({bhttp::verb::head, ClusterPath("nohead") + V(), "", {}});
  EXPECT_EQ(absent.result_int(), 404u);
  EXPECT_TRUE(absent.body().empty());
  EXPECT_EQ(Header(absent, "x-ms-error-code"), "ResourceNotFound");
  EXPECT_EQ(s.Send({bhttp::verb::head, "/healthz", "", {}}).result_int(), 200u);
  // HEAD of a POST-only route is refused like GET.
  EXPECT_EQ(s.Send({bhttp::verb::head, path + "/requestAdminCredential" + V(), "", {}}).result_int(), 405u);
}

TEST(TooLargeResponseTest, MatchesTheInHandlerRefusal) {
  Request header_only{bhttp::verb::put, ClusterPath("big") + V(), 11};
  header_only.set("x-ms-correlation-request-id", "corr-9");
  header_only.set("x-ms-client-request-id", "client-9");
  header_only.set("x-ms-return-client-request-id", "true");
  Response r = TooLargeResponse(header_only, 1024);
  EXPECT_EQ(r.result_int(), 413u);
  EXPECT_EQ(Header(r, "x-ms-error-code"), "RequestEntityTooLarge");
  EXPECT_EQ(ErrorCodeOf(r), "RequestEntityTooLarge");
  EXPECT_NE(r.body().find("1024 bytes"), std::string::npos);
  EXPECT_EQ(Header(r, "x-ms-correlation-request-id"), "corr-9");
  EXPECT_EQ(Header(r, "x-ms-client-request-id"), "client-9");
  EXPECT_EQ(Header(r, "x-ms-request-id").size(), 36u);
  EXPECT_EQ(Header(r, "Content-Type"), "application/json");

  FrontendOptions options;
  options.max_body_bytes = 1024;
  Scenario small(options);
  small.RegisterSubscription();
  auto in_handler = small.Put(ClusterPath("big") + V(), std::string(2000, ' '));
  EXPECT_EQ(in_handler.result_int(), 413u);
  EXPECT_EQ(BodyOf(in_handler), BodyOf(r));
}

// --- Concurrency: store races and the retry loop ---------------------------------------------------

// Runs `a` and `b` on two threads released together.
template <typename A, typename B>
void Race(A a, B b) {
  std::atomic<int> ready{0};
  auto gate = [&ready] {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
  };
  std::thread ta([&] {
    gate();
    a();
  });
  std::thread tb([&] {
    gate();
    b();
  });
  ta.join();
  tb.join();
}

// Exactly one non-terminal operation acts on `path`, and it is the resource's active one.
void ExpectOneActiveOperation(Scenario& s, const std::string& path) {
  auto doc = s.Resource(path);
  ASSERT_TRUE(doc);
  int running = 0;
  for (const auto& op : s.Operations()) {
    if (op.external_id == path && !arm::IsTerminalState(op.status)) {
      ++running;
      EXPECT_EQ(doc->active_operation_id, op.id);
    }
  }
  EXPECT_EQ(running, 1) << path;
}

TEST_F(FrontendTest, ConcurrentCreatesOfOneClusterGiveOne201AndOne409) {
  for (int i = 0; i < 8; ++i) {
    const std::string path = ClusterPath("race" + std::to_string(i));
    Response a, b;
    Race([&] { a = s.Put(path + V(), ClusterBody()); }, [&] { b = s.Put(path + V(), ClusterBody()); });
    std::multiset<unsigned> codes{a.result_int(), b.result_int()};
    EXPECT_EQ(codes, (std::multiset<unsigned>{201u, 409u})) << a.body() << b.body();
    const Response& loser = a.result_int() == 409u ? a : b;
    EXPECT_EQ(ErrorCodeOf(loser), "Conflict");
    ExpectOneActiveOperation(s, path);
  }
  // One Cluster Service object per cluster: the loser never reached it.
  EXPECT_EQ(s.cs.ObjectCount(), 8u);
}

TEST_F(FrontendTest, DeleteRacingCreateLeavesOneConsistentOutcome) {
  for (int i = 0; i < 8; ++i) {
    const std::string path = ClusterPath("delrace" + std::to_string(i));
    Response put, del;
    Race([&] { put = s.Put(path + V(), ClusterBody()); }, [&] { del = s.Delete(path + V()); });
    ASSERT_EQ(put.result_int(), 201u) << put.body();
    auto doc = s.Resource(path);
    ASSERT_TRUE(doc);
    if (del.result_int() == 202u) {
      EXPECT_EQ(doc->provisioning_state, "Deleting");
      auto create_op = s.Operation(OperationIdOf(Header(put, "Azure-AsyncOperation")));
      ASSERT_TRUE(create_op);
      EXPECT_EQ(create_op->status, "Canceled");
    } else {
      EXPECT_EQ(del.result_int(), 204u) << del.body();
      EXPECT_EQ(doc->provisioning_state, "Accepted");
    }
    ExpectOneActiveOperation(s, path);
  }
}

TEST_F(FrontendTest, DeleteRacingReplaceLeavesTheResourceDeleting) {
  for (int i = 0; i < 8; ++i) {
    const std::string name = "updrace" + std::to_string(i);
    const std::string path = ClusterPath(name);
    CreateCluster(name);
    Response put, del;
    Race([&] { put = s.Put(path + V(), ClusterBody()); }, [&] { del = s.Delete(path + V()); });
    ASSERT_EQ(del.result_int(), 202u) << del.body();
    EXPECT_TRUE(put.result_int() == 200u || put.result_int() == 409u) << put.result_int() << put.body();
    if (put.result_int() == 200u) {
      auto update_op = s.Operation(OperationIdOf(Header(put, "Azure-AsyncOperation")));
      ASSERT_TRUE(update_op);
      EXPECT_EQ(update_op->status, "Canceled");
    }
    auto doc = s.Resource(path);
    ASSERT_TRUE(doc);
    EXPECT_EQ(doc->provisioning_state, "Deleting");
    ExpectOneActiveOperation(s, path);
  }
}

}  // namespace
}  // namespace hcprp::frontend::testing
