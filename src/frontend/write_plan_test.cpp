// The write plans of PUT and PATCH, checked as the pure functions they are: no store, no Cluster
// Service, no clock.
#include "frontend/write_plan.h"

#include <gtest/gtest.h>

#include "arm/operation_writes.h"
#include "clusterservice/mapping.h"

namespace hcprp::frontend {
namespace {

const std::string kClusterPath =
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/"
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1";
const std::string kNodePoolPath = kClusterPath + "/nodePools/np1";
constexpr int64_t kTtl = 3600;

arm::ResourceId IdOf(const std::string& path) {
  auto id = arm::ParseResourceId(path);
  EXPECT_TRUE(id.ok());
  return std::move(id).value();
}

api::Resource AResource(api::Kind kind) {
  api::Resource r;
  r.kind = kind;
  r.location = "eastus";
  r.tags = json::object{{"team", "a"}};
  r.identity = json::object{{"type", "UserAssigned"}};
  return r;
}

arm::OperationDocument AnOperation(arm::OperationRequest request, std::string_view path,
                                   std::string internal_id = "") {
  return arm::NewOperation(request, std::string(path), std::move(internal_id), "eastus", TimePoint{});
}

CreateInput ACreateInput(std::string_view path, std::string_view parent_internal_id = "") {
  return {.resource_id = path,
          .location = "eastus",
          .parent_internal_id = parent_internal_id,
          .tenant_id = "tenant",
          .system_data = json::object{{"createdBy", "someone"}},
          .operation_ttl_seconds = kTtl};
}

LoadedResource AStoredCluster(std::string internal_id) {
  LoadedResource r;
  r.doc_id = arm::ResourceDocumentId(kClusterPath);
  r.etag = "etag-read";
  r.doc.resource_type = std::string(arm::kClusterDocType);
  r.doc.resource_id = kClusterPath;
  r.doc.location = "eastus";
  r.doc.internal_id = std::move(internal_id);
  r.doc.provisioning_state = std::string(arm::kStateSucceeded);
  r.doc.resource = json::object{{"properties", json::object{}}, {"old", true}};
  return r;
}

TEST(PlanCreateTest, OneBatchCreatesTheResourceAndItsOperation) {
  auto op = AnOperation(arm::OperationRequest::kCreate, kClusterPath);
  const std::string op_id = op.id;
  auto plan = PlanCreate(IdOf(kClusterPath), AResource(api::Kind::kCluster), std::move(op),
                         ACreateInput(kClusterPath));
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();

  EXPECT_EQ(plan->partition_key, arm::PartitionKey("00000000-0000-0000-0000-000000000001"));
  EXPECT_EQ(plan->doc_id, arm::ResourceDocumentId(kClusterPath));
  ASSERT_EQ(plan->writes.size(), 2u);
  const store::WriteOp& doc = plan->writes[0];
  EXPECT_EQ(doc.kind, store::WriteOp::Kind::kCreate);
  EXPECT_EQ(doc.id, plan->doc_id);
  auto written = arm::ResourceDocument::FromBody(doc.body);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->active_operation_id, op_id);
  EXPECT_EQ(written->provisioning_state, arm::kStateAccepted);
  EXPECT_EQ(written->location, "eastus");
  EXPECT_EQ(written->resource_id, kClusterPath);
  EXPECT_EQ(written->tags, (json::object{{"team", "a"}}));
  EXPECT_EQ(written->system_data, (json::object{{"createdBy", "someone"}}));
  EXPECT_FALSE(written->resource.empty());  // the canonical resource goes into the written body

  const store::WriteOp& operation = plan->writes[1];
  EXPECT_EQ(operation.kind, store::WriteOp::Kind::kCreate);
  EXPECT_EQ(operation.id, op_id);
  EXPECT_EQ(operation.ttl_seconds, kTtl);

  // The document kept for the answer holds no copy of the canonical resource.
  EXPECT_TRUE(plan->doc.resource.empty());
  EXPECT_EQ(plan->doc.active_operation_id, op_id);
  EXPECT_EQ(plan->resource.tags, (json::object{{"team", "a"}}));
  EXPECT_EQ(plan->op.id, op_id);
  EXPECT_EQ(plan->kind, arm::ResourceKind::kCluster);
}

TEST(PlanCreateTest, TheClusterServiceCreateIsKeyedByTheOperation) {
  auto op = AnOperation(arm::OperationRequest::kCreate, kClusterPath);
  const std::string op_id = op.id;
  const api::Resource resource = AResource(api::Kind::kCluster);
  auto plan = PlanCreate(IdOf(kClusterPath), resource, std::move(op), ACreateInput(kClusterPath));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->call.collection, clusterservice::ClusterServiceCollection(arm::ResourceKind::kCluster, ""));
  EXPECT_EQ(plan->call.idempotency_key, op_id);
  EXPECT_EQ(plan->call.body,
            clusterservice::ClusterServiceCreateBody(IdOf(kClusterPath), resource, "tenant"));
}

TEST(PlanCreateTest, AChildIsCreatedUnderItsClustersObject) {
  auto plan = PlanCreate(IdOf(kNodePoolPath), AResource(api::Kind::kNodePool),
                         AnOperation(arm::OperationRequest::kCreate, kNodePoolPath),
                         ACreateInput(kNodePoolPath, "/api/clusters_mgmt/v1/clusters/abc"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->call.collection, "/api/clusters_mgmt/v1/clusters/abc/node_pools");
  EXPECT_EQ(plan->doc.resource_type, arm::DocType(arm::ResourceKind::kNodePool));
  EXPECT_EQ(plan->kind, arm::ResourceKind::kNodePool);
}

TEST(PlanCreateTest, AChildsCreateMarksItsClusterOnTheEtagRead) {
  CreateInput in = ACreateInput(kNodePoolPath, "/api/clusters_mgmt/v1/clusters/abc");
  const std::string cluster_doc = arm::ResourceDocumentId(kClusterPath);
  in.parent_doc_id = cluster_doc;
  in.parent_etag = "etag-read";
  auto plan = PlanCreate(IdOf(kNodePoolPath), AResource(api::Kind::kNodePool),
                         AnOperation(arm::OperationRequest::kCreate, kNodePoolPath), in);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->writes.size(), 3U);
  const store::WriteOp& mark = plan->writes[2];
  EXPECT_EQ(mark.kind, store::WriteOp::Kind::kPatch);
  EXPECT_EQ(mark.id, cluster_doc);
  EXPECT_EQ(mark.if_match, std::optional<std::string>("etag-read"));
  ASSERT_EQ(mark.patch.size(), 1U);
  EXPECT_EQ(mark.patch[0].path, arm::kPathLastChildCreate);
  EXPECT_EQ(mark.patch[0].value, json::value(plan->op.id));
}

TEST(PlanCreateTest, AClustersCreateWritesNothingElse) {
  auto plan =
      PlanCreate(IdOf(kClusterPath), AResource(api::Kind::kCluster),
                 AnOperation(arm::OperationRequest::kCreate, kClusterPath), ACreateInput(kClusterPath));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->writes.size(), 2U);
}

TEST(PlanCreateTest, TheUndoRemovesBothDocumentsWhileTheCreateOwnsTheResource) {
  auto plan =
      PlanCreate(IdOf(kClusterPath), AResource(api::Kind::kCluster),
                 AnOperation(arm::OperationRequest::kCreate, kClusterPath), ACreateInput(kClusterPath));
  ASSERT_TRUE(plan.ok());
  std::vector<store::WriteOp> undo = PlanCreateUndo(*plan);
  ASSERT_EQ(undo.size(), 2u);
  EXPECT_EQ(undo[0].kind, store::WriteOp::Kind::kDelete);
  EXPECT_EQ(undo[0].id, plan->doc_id);
  ASSERT_EQ(undo[0].conditions.size(), 1u);
  EXPECT_EQ(undo[0].conditions[0].path, arm::kPathActiveOperationId);
  EXPECT_EQ(undo[0].conditions[0].equals, json::value(plan->op.id));
  EXPECT_EQ(undo[1].kind, store::WriteOp::Kind::kDelete);
  EXPECT_EQ(undo[1].id, plan->op.id);
}

TEST(UpdateRefusalTest, ABusyOrDeletingResourceTakesNoUpdate) {
  LoadedResource stored = AStoredCluster("/api/clusters_mgmt/v1/clusters/abc");
  EXPECT_FALSE(UpdateRefusal(kClusterPath, stored.doc, std::nullopt).has_value());

  auto active = AnOperation(arm::OperationRequest::kUpdate, kClusterPath);
  auto busy = UpdateRefusal(kClusterPath, stored.doc, active);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(busy->status, 409);
  EXPECT_EQ(busy->body.target, kClusterPath);
  EXPECT_NE(busy->body.message.find("operation in progress"), std::string::npos) << busy->body.message;

  stored.doc.provisioning_state = std::string(arm::kStateDeleting);
  auto deleting = UpdateRefusal(kClusterPath, stored.doc, std::nullopt);
  ASSERT_TRUE(deleting.has_value());
  EXPECT_EQ(deleting->status, 409);
  EXPECT_EQ(deleting->body.message, "The resource is being deleted.");
}

TEST(PlanUpdateTest, AResourceUnknownToTheClusterServiceIsRefused) {
  LoadedResource stored = AStoredCluster("");
  auto planned = PlanUpdate(IdOf(kClusterPath), kClusterPath, stored, AResource(api::Kind::kCluster),
                            AnOperation(arm::OperationRequest::kUpdate, kClusterPath), std::nullopt, kTtl);
  auto* refusal = std::get_if<arm::CloudError>(&planned);
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->status, 409);
  EXPECT_EQ(refusal->body.target, kClusterPath);
}

TEST(PlanUpdateTest, OneBatchReplacesTheVersionReadAndCreatesAnOperationAwaitingTheClusterService) {
  LoadedResource stored = AStoredCluster("/api/clusters_mgmt/v1/clusters/abc");
  auto op = AnOperation(arm::OperationRequest::kUpdate, kClusterPath, stored.doc.internal_id);
  const std::string op_id = op.id;
  api::Resource resource = AResource(api::Kind::kCluster);
  resource.observed = json::object{{"api", json::object{{"url", "https://api"}}}};
  auto planned = PlanUpdate(IdOf(kClusterPath), kClusterPath, stored, resource, std::move(op),
                            json::object{{"lastModifiedBy", "someone"}}, kTtl);
  auto* plan = std::get_if<UpdatePlan>(&planned);
  ASSERT_NE(plan, nullptr);

  EXPECT_EQ(plan->previous, &stored);
  EXPECT_EQ(plan->path, kClusterPath);
  ASSERT_EQ(plan->writes.size(), 2u);
  EXPECT_EQ(plan->writes[0].kind, store::WriteOp::Kind::kReplace);
  EXPECT_EQ(plan->writes[0].id, stored.doc_id);
  EXPECT_EQ(plan->writes[0].if_match, stored.etag);
  auto written = arm::ResourceDocument::FromBody(plan->writes[0].body);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->active_operation_id, op_id);
  EXPECT_EQ(written->provisioning_state, arm::kStateAccepted);
  EXPECT_EQ(written->internal_id, stored.doc.internal_id);
  EXPECT_EQ(written->resource, api::ToStorage(resource));
  EXPECT_EQ(written->system_data, (json::object{{"lastModifiedBy", "someone"}}));

  EXPECT_EQ(plan->writes[1].kind, store::WriteOp::Kind::kCreate);
  EXPECT_EQ(plan->writes[1].id, op_id);
  EXPECT_EQ(plan->writes[1].ttl_seconds, kTtl);
  auto operation = arm::OperationDocument::FromBody(op_id, plan->writes[1].body);
  ASSERT_TRUE(operation.ok());
  EXPECT_TRUE(operation->awaiting_cluster_service);
  EXPECT_TRUE(plan->op.awaiting_cluster_service);

  EXPECT_EQ(plan->call.href, stored.doc.internal_id);
  EXPECT_EQ(plan->call.patch, clusterservice::ClusterServiceUpdateBody(IdOf(kClusterPath), resource));
  EXPECT_EQ(plan->known_observed, resource.observed);
  EXPECT_EQ(plan->doc.resource, api::ToStorage(resource));
}

TEST(PlanUpdateTest, ANodePoolWithoutLocationKeepsTheStoredOne) {
  LoadedResource stored = AStoredCluster("/api/clusters_mgmt/v1/clusters/abc/node_pools/np1");
  stored.doc.resource_id = kNodePoolPath;
  stored.doc.location = "westus";
  api::Resource resource = AResource(api::Kind::kNodePool);
  resource.location.clear();
  auto planned = PlanUpdate(IdOf(kNodePoolPath), kNodePoolPath, stored, resource,
                            AnOperation(arm::OperationRequest::kUpdate, kNodePoolPath), std::nullopt, kTtl);
  auto* plan = std::get_if<UpdatePlan>(&planned);
  ASSERT_NE(plan, nullptr);
  resource.location = "westus";
  EXPECT_EQ(plan->doc.resource, api::ToStorage(resource));
}

TEST(PlanUpdateTest, TheUndoRestoresThePreviousDocumentIfItIsStillTheOneWritten) {
  LoadedResource stored = AStoredCluster("/api/clusters_mgmt/v1/clusters/abc");
  auto planned = PlanUpdate(IdOf(kClusterPath), kClusterPath, stored, AResource(api::Kind::kCluster),
                            AnOperation(arm::OperationRequest::kUpdate, kClusterPath), std::nullopt, kTtl);
  auto& plan = std::get<UpdatePlan>(planned);
  std::vector<store::WriteOp> undo = PlanUpdateUndo(plan, "etag-written");
  ASSERT_EQ(undo.size(), 2u);
  EXPECT_EQ(undo[0].kind, store::WriteOp::Kind::kReplace);
  EXPECT_EQ(undo[0].id, stored.doc_id);
  EXPECT_EQ(undo[0].if_match, "etag-written");
  EXPECT_EQ(undo[0].body, stored.doc.ToBody());
  EXPECT_EQ(undo[1].kind, store::WriteOp::Kind::kDelete);
  EXPECT_EQ(undo[1].id, plan.op.id);
}

TEST(PlanUpdateTest, TheConfirmationRemovesTheAwaitingMark) {
  LoadedResource stored = AStoredCluster("/api/clusters_mgmt/v1/clusters/abc");
  auto planned = PlanUpdate(IdOf(kClusterPath), kClusterPath, stored, AResource(api::Kind::kCluster),
                            AnOperation(arm::OperationRequest::kUpdate, kClusterPath), std::nullopt, kTtl);
  auto& plan = std::get<UpdatePlan>(planned);
  store::WriteOp confirm = PlanUpdateConfirmed(plan);
  EXPECT_EQ(confirm.kind, store::WriteOp::Kind::kPatch);
  EXPECT_EQ(confirm.id, plan.op.id);
  ASSERT_EQ(confirm.patch.size(), 1u);
  EXPECT_EQ(confirm.patch[0].kind, store::PatchOp::Kind::kRemove);
  EXPECT_EQ(confirm.patch[0].path, arm::kPathAwaitingClusterService);
  EXPECT_FALSE(confirm.if_match.has_value());
}

TEST(PlanRecordObservedTest, NothingWhenTheAnswerShowsNothingNew) {
  const json::object known{{"api", json::object{{"url", "https://api"}}}};
  EXPECT_FALSE(PlanRecordObserved("doc", known, known, "etag").has_value());
  EXPECT_FALSE(PlanRecordObserved("doc", known, json::object{}, "etag").has_value());
}

TEST(PlanRecordObservedTest, NewOrChangedValuesAreMergedOverTheKnownOnes) {
  const json::object known{{"api", json::object{{"url", "https://old"}}}, {"dns", json::object{{"x", 1}}}};
  const json::object answered{{"api", json::object{{"url", "https://new"}}},
                              {"platform", json::object{{"issuerUrl", "https://issuer"}}}};
  auto record = PlanRecordObserved("doc", known, answered, "etag-written");
  ASSERT_TRUE(record.has_value());
  const json::object merged{{"api", json::object{{"url", "https://new"}}},
                            {"dns", json::object{{"x", 1}}},
                            {"platform", json::object{{"issuerUrl", "https://issuer"}}}};
  EXPECT_EQ(record->merged, merged);
  EXPECT_EQ(record->write.kind, store::WriteOp::Kind::kPatch);
  EXPECT_EQ(record->write.id, "doc");
  EXPECT_EQ(record->write.if_match, "etag-written");
  ASSERT_EQ(record->write.patch.size(), 1u);
  EXPECT_EQ(record->write.patch[0].kind, store::PatchOp::Kind::kSet);
  EXPECT_EQ(record->write.patch[0].path, arm::kPathObserved);
  EXPECT_EQ(record->write.patch[0].value, json::value(merged));
}

}  // namespace
}  // namespace hcprp::frontend
