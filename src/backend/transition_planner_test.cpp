// The transition planner on its own: documents in, store writes out, no store, no threads.
#include "backend/transition_planner.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace hcprp::backend {
namespace {

const std::string kCluster =
    "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg/providers/"
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1";
const TimePoint kNow = ParseRfc3339("2025-01-01T00:10:00Z").value();

arm::OperationDocument Operation(std::string id, arm::OperationRequest request, std::string status,
                                 std::string uri = "") {
  arm::OperationDocument op;
  op.id = std::move(id);
  op.request = request;
  op.external_id = kCluster;
  op.status = std::move(status);
  op.notification_uri = std::move(uri);
  return op;
}

ReadResource Resource(std::string resource_id, std::string doc_id, std::optional<std::string> active) {
  ReadResource r;
  r.doc_id = std::move(doc_id);
  r.etag = "etag-" + r.doc_id;
  r.doc.resource_type = std::string(arm::kClusterDocType);
  r.doc.resource_id = std::move(resource_id);
  r.doc.internal_id = "/api/aro_hcp/v1alpha1/clusters/x";
  r.doc.active_operation_id = active;
  r.active_operation =
      store::Condition{std::string(arm::kPathActiveOperationId),
                       active ? std::optional<json::value>(json::value(*active)) : std::nullopt};
  return r;
}

const store::PatchOp* FindPatch(const store::WriteOp& w, std::string_view path) {
  for (const store::PatchOp& p : w.patch) {
    if (p.path == path) return &p;
  }
  return nullptr;
}

TEST(TransitionPlanner, NonTerminalChangeMovesOperationAndProvisioningState) {
  TransitionInput in;
  in.partition_key = "11111111-2222-3333-4444-555555555555";
  in.operation = Operation("op1", arm::OperationRequest::kCreate, "Accepted");
  in.change = {std::string(arm::kStateProvisioning), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "op1");
  in.now = kNow;
  TransitionPlan plan = PlanTransition(in);
  EXPECT_FALSE(plan.terminal);
  ASSERT_EQ(plan.writes.size(), 2u);
  EXPECT_EQ(plan.writes[0].id, "op1");
  ASSERT_EQ(plan.writes[0].conditions.size(), 1u);
  EXPECT_EQ(plan.writes[0].conditions[0].equals, std::optional<json::value>("Accepted"));
  ASSERT_NE(FindPatch(plan.writes[0], arm::kPathStatus), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[0], arm::kPathStatus)->value, "Provisioning");
  EXPECT_EQ(plan.writes[1].id, "doc1");
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathProvisioningState)->value, "Provisioning");
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathActiveOperationId), nullptr);
  EXPECT_TRUE(plan.billing.empty());
}

// A create's object found before anything recorded it: its internal ID goes into the operation's and
// the resource's writes of the batch (no write of its own), what the Cluster Service assigned only
// where the resource holds nothing, and the billing record of a create that ends names the object.
TEST(TransitionPlanner, FoundObjectIsRecordedWithTheChange) {
  const std::string href = "/api/aro_hcp/v1alpha1/clusters/found";
  const json::object observed{{"apiUrl", "https://api.example"}};
  TransitionInput in;
  in.partition_key = "11111111-2222-3333-4444-555555555555";
  in.operation = Operation("op1", arm::OperationRequest::kCreate, "Accepted");
  in.change = {std::string(arm::kStateSucceeded), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "op1");
  in.resource->doc.internal_id.clear();
  in.found = FoundObject{href, observed};
  in.now = kNow;
  TransitionPlan plan = PlanTransition(in);
  ASSERT_EQ(plan.writes.size(), 2u);
  ASSERT_NE(FindPatch(plan.writes[0], arm::kPathOperationInternalId), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[0], arm::kPathOperationInternalId)->value, json::value(href));
  EXPECT_EQ(plan.writes[1].id, "doc1");
  ASSERT_NE(FindPatch(plan.writes[1], arm::kPathInternalId), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathInternalId)->value, json::value(href));
  ASSERT_NE(FindPatch(plan.writes[1], arm::kPathObserved), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathObserved)->value, json::value(observed));
  EXPECT_NE(FindPatch(plan.writes[1], arm::kPathProvisioningState), nullptr);
  ASSERT_EQ(plan.billing.size(), 1u);
  EXPECT_EQ(plan.billing[0].body.as_object().at("internalId"), json::value(href));

  // A resource that holds what the Cluster Service assigned keeps it.
  in.resource->doc.resource["observed"] = json::object{{"apiUrl", "https://kept.example"}};
  plan = PlanTransition(in);
  ASSERT_EQ(plan.writes.size(), 2u);
  EXPECT_NE(FindPatch(plan.writes[1], arm::kPathInternalId), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathObserved), nullptr);

  // A resource with an internal ID keeps it; the operation still gets the found one.
  in.resource->doc.internal_id = "/api/aro_hcp/v1alpha1/clusters/recorded";
  plan = PlanTransition(in);
  EXPECT_NE(FindPatch(plan.writes[0], arm::kPathOperationInternalId), nullptr);
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathInternalId), nullptr);
}

// The Cluster Service conditions seen with a change commit in the resource's write of the same batch,
// conditioned on the stored ones being those read; the same conditions again add nothing.
TEST(TransitionPlanner, ConditionsSeenWithTheChangeGoIntoTheResourceWrite) {
  TransitionInput in;
  in.partition_key = "11111111-2222-3333-4444-555555555555";
  in.operation = Operation("op1", arm::OperationRequest::kCreate, "Accepted");
  in.change = {std::string(arm::kStateProvisioning), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "op1");
  in.resource->doc.service_status = json::object{{"state", "installing"}};
  in.resource->service_status = store::Condition{std::string(arm::kPathServiceStatus),
                                                 json::value(json::object{{"state", "installing"}})};
  in.now = kNow;
  const json::value conditions = json::array{json::object{{"type", "Available"}, {"status", "False"}}};
  in.conditions = json::object{{"conditions", conditions}};
  TransitionPlan plan = PlanTransition(in);
  EXPECT_TRUE(plan.conditions);
  ASSERT_EQ(plan.writes.size(), 2u);  // operation, resource: no write of its own
  const store::WriteOp& res = plan.writes[1];
  EXPECT_EQ(res.id, "doc1");
  EXPECT_EQ(FindPatch(res, arm::kPathProvisioningState)->value, "Provisioning");
  ASSERT_NE(FindPatch(res, arm::kPathServiceStatus), nullptr);
  EXPECT_EQ(FindPatch(res, arm::kPathServiceStatus)->value,
            json::value(json::object{{"state", "installing"}, {"conditions", conditions}}));
  ASSERT_EQ(res.conditions.size(), 2u);
  EXPECT_EQ(res.conditions[1].path, arm::kPathServiceStatus);
  EXPECT_EQ(res.conditions[1].equals, std::optional<json::value>(json::object{{"state", "installing"}}));

  in.resource->doc.service_status["conditions"] = conditions;  // stored already
  plan = PlanTransition(in);
  EXPECT_FALSE(plan.conditions);
  ASSERT_EQ(plan.writes.size(), 2u);
  EXPECT_EQ(FindPatch(plan.writes[1], arm::kPathServiceStatus), nullptr);
  EXPECT_EQ(plan.writes[1].conditions.size(), 1u);

  // A Delete that Succeeded removes the resource: no conditions to write.
  in.operation = Operation("del", arm::OperationRequest::kDelete, "Deleting");
  in.change = {std::string(arm::kStateSucceeded), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "del");
  in.conditions = json::object{{"conditions", conditions}};
  plan = PlanTransition(in);
  EXPECT_FALSE(plan.conditions);
  for (const store::WriteOp& w : plan.writes) EXPECT_EQ(FindPatch(w, arm::kPathServiceStatus), nullptr);
}

TEST(TransitionPlanner, SucceededCreateClearsActiveOperationNotifiesAndBills) {
  TransitionInput in;
  in.partition_key = "11111111-2222-3333-4444-555555555555";
  in.operation = Operation("op1", arm::OperationRequest::kCreate, "Provisioning", "https://arm.example/cb");
  in.change = {std::string(arm::kStateSucceeded), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "op1");
  in.now = kNow;
  TransitionPlan plan = PlanTransition(in);
  EXPECT_TRUE(plan.terminal);
  ASSERT_EQ(plan.writes.size(), 3u);  // operation, pending notification, resource
  EXPECT_EQ(plan.writes[1].kind, store::WriteOp::Kind::kCreate);
  EXPECT_EQ(plan.writes[1].id, arm::PendingNotificationId("op1"));
  const store::PatchOp* cleared = FindPatch(plan.writes[2], arm::kPathActiveOperationId);
  ASSERT_NE(cleared, nullptr);
  EXPECT_EQ(cleared->kind, store::PatchOp::Kind::kRemove);
  EXPECT_EQ(plan.ended, std::vector<size_t>{0});
  ASSERT_EQ(plan.billing.size(), 1u);
  EXPECT_EQ(plan.billing[0].id, "doc1");
  EXPECT_EQ(plan.billing[0].body.at("creationTime"), "2025-01-01T00:10:00.000000Z");
  EXPECT_EQ(plan.billing[0].body.at("subscriptionId"), "11111111-2222-3333-4444-555555555555");
}

TEST(TransitionPlanner, SupersededOperationChangesAlone) {
  TransitionInput in;
  in.operation = Operation("op1", arm::OperationRequest::kUpdate, "Updating");
  in.change = {std::string(arm::kStateFailed), arm::OperationError{"X", "broken", "", {}}};
  in.now = kNow;
  TransitionPlan plan = PlanTransition(in);
  ASSERT_EQ(plan.writes.size(), 1u);
  EXPECT_EQ(FindPatch(plan.writes[0], arm::kPathError)->value.at("code"), "X");
  EXPECT_TRUE(plan.deleted.empty());
}

TEST(TransitionPlanner, SucceededDeleteRemovesResourceAndChildrenEndingTheirOperations) {
  TransitionInput in;
  in.operation = Operation("del", arm::OperationRequest::kDelete, "Deleting");
  in.change = {std::string(arm::kStateSucceeded), std::nullopt};
  in.resource = Resource(kCluster, "doc1", "del");
  ReadChild creating{
      Resource(kCluster + "/nodePools/np1", "np1", "npop"),
      Operation("npop", arm::OperationRequest::kCreate, "Provisioning", "https://arm.example/np")};
  ReadChild deleting{Resource(kCluster + "/nodePools/np2", "np2", "npdel"),
                     Operation("npdel", arm::OperationRequest::kDelete, "Deleting")};
  ReadChild idle{Resource(kCluster + "/externalAuths/ea", "ea", std::nullopt), std::nullopt};
  in.children = {creating, deleting, idle};
  in.now = kNow;
  TransitionPlan plan = PlanTransition(in);
  EXPECT_EQ(plan.deleted, (std::vector<std::string>{"doc1", "np1", "np2", "ea"}));
  ASSERT_EQ(plan.ended.size(), 3u);
  const store::WriteOp& canceled = plan.writes[plan.ended[1]];
  EXPECT_EQ(canceled.id, "npop");
  EXPECT_EQ(FindPatch(canceled, arm::kPathStatus)->value, "Canceled");
  EXPECT_EQ(FindPatch(canceled, arm::kPathError)->value.at("message"), json::value(arm::kSupersededMessage));
  const store::WriteOp& finished = plan.writes[plan.ended[2]];
  EXPECT_EQ(finished.id, "npdel");
  EXPECT_EQ(FindPatch(finished, arm::kPathStatus)->value, "Succeeded");
  // The canceled child operation's notification is owed too.
  bool pending = false;
  for (const store::WriteOp& w : plan.writes) pending = pending || w.id == arm::PendingNotificationId("npop");
  EXPECT_TRUE(pending);
  // Children are deleted only as read.
  for (const store::WriteOp& w : plan.writes) {
    if (w.kind == store::WriteOp::Kind::kDelete && w.id != "doc1") {
      EXPECT_EQ(w.if_match, "etag-" + w.id);
    }
  }
  EXPECT_TRUE(plan.billing.empty());
}

}  // namespace
}  // namespace hcprp::backend
