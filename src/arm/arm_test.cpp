#include <gtest/gtest.h>

#include "arm/cloud_error.h"
#include "arm/documents.h"
#include "arm/operation_status.h"
#include "arm/operation_writes.h"
#include "arm/paging.h"
#include "arm/resource_id.h"
#include "arm/system_data.h"
#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::arm {
namespace {

constexpr std::string_view kSub = "1D3378D3-5A3F-4712-85A1-2485495DFC4B";

TEST(ResourceIdTest, ParsesClusterAndChildrenCaseInsensitively) {
  auto c =
      ParseResourceId(std::string("/SUBSCRIPTIONS/") + std::string(kSub) +
                      "/resourcegroups/My.RG/PROVIDERS/microsoft.redhatopenshift/HCPOPENSHIFTCLUSTERS/Abc");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, ResourceKind::kCluster);
  EXPECT_EQ(c->resource_group, "My.RG");
  EXPECT_EQ(c->Name(), "Abc");
  EXPECT_EQ(c->ToString(),
            std::string("/subscriptions/") + std::string(kSub) +
                "/resourceGroups/My.RG/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/Abc");

  auto np = ParseResourceId(c->ToString() + "/NODEPOOLS/np1");
  ASSERT_TRUE(np.ok());
  EXPECT_EQ(np->kind, ResourceKind::kNodePool);
  EXPECT_EQ(np->Name(), "np1");
  EXPECT_EQ(np->Cluster().ToString(), c->ToString());
  auto ea = ParseResourceId(c->ToString() + "/externalauths/e");
  ASSERT_TRUE(ea.ok());
  EXPECT_EQ(ea->kind, ResourceKind::kExternalAuth);

  EXPECT_FALSE(ParseResourceId(c->ToString() + "/widgets/x").ok());
  EXPECT_FALSE(ParseResourceId(c->ToString() + "/nodePools").ok());
  EXPECT_FALSE(ParseResourceId("subscriptions/x").ok());
  EXPECT_FALSE(ParseResourceId("").ok());
  EXPECT_FALSE(ParseResourceId(c->ToString() + "/").ok());
  EXPECT_FALSE(ParseResourceId(np->ToString() + "/").ok());
  EXPECT_FALSE(ParseResourceId(c->ToString() + "/nodePools/np1/x/y").ok());
  EXPECT_FALSE(
      ParseResourceId("/subscriptions/s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c").ok());
  EXPECT_FALSE(
      ParseResourceId("/subscriptions/s/resourceGroups/g/providers/Microsoft.Other/hcpOpenShiftClusters/c")
          .ok());
  EXPECT_FALSE(
      ParseResourceId("/subscriptions/s/resourceGroups/g/providers/Microsoft.RedHatOpenShift/widgets/c")
          .ok());
  EXPECT_FALSE(
      ParseResourceId(
          "/subscriptions/s/resourceGroups//providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c")
          .ok());
}

TEST(ResourceIdTest, NameRules) {
  EXPECT_TRUE(IsValidClusterName("a"));
  EXPECT_TRUE(IsValidClusterName("a-b1"));
  EXPECT_FALSE(IsValidClusterName("1a"));
  EXPECT_FALSE(IsValidClusterName("a-"));
  EXPECT_FALSE(IsValidClusterName(std::string(55, 'a')));
  EXPECT_TRUE(IsValidClusterName(std::string(54, 'a')));
  EXPECT_TRUE(IsValidChildName(std::string(15, 'a')));
  EXPECT_FALSE(IsValidChildName(std::string(16, 'a')));
  EXPECT_TRUE(IsValidResourceGroupName("rg_(1).x"));
  EXPECT_FALSE(IsValidResourceGroupName("rg."));
  EXPECT_FALSE(IsValidResourceGroupName(std::string(91, 'a')));
  EXPECT_TRUE(IsValidSubscriptionId(kSub));
  EXPECT_FALSE(IsValidSubscriptionId("not-a-uuid"));
}

TEST(DocumentsTest, ResourceDocumentRoundTrips) {
  ResourceDocument d;
  d.resource_type = std::string(kClusterDocType);
  d.resource_id =
      "/subscriptions/x/resourceGroups/r/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/C";
  d.internal_id = "/api/aro_hcp/v1alpha1/clusters/abc";
  d.active_operation_id = "op";
  d.provisioning_state = "Accepted";
  d.tags["k"] = "v";
  d.resource["location"] = "eastus";
  d.system_data = json::object{{"createdBy", "me"}};
  auto body = d.ToBody();
  EXPECT_EQ(*FindPointer(body, "/resourceType"), json::value(kClusterDocType));
  EXPECT_EQ(*FindPointer(body, kPathActiveOperationId), json::value("op"));
  auto back = ResourceDocument::FromBody(body);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->resource_id, d.resource_id);
  EXPECT_EQ(back->internal_id, d.internal_id);
  EXPECT_EQ(back->active_operation_id, d.active_operation_id);
  EXPECT_EQ(back->tags, d.tags);
  EXPECT_EQ(back->resource, d.resource);
  EXPECT_EQ(back->system_data, d.system_data);
  EXPECT_FALSE(ResourceDocument::FromBody(json::parse(R"({"resourceType":"x","properties":{}})")).ok());
  EXPECT_FALSE(ResourceDocument::FromBody(json::value(3)).ok());
}

TEST(DocumentsTest, ResourceDocumentIdIgnoresCase) {
  EXPECT_EQ(ResourceDocumentId("/Subscriptions/A/x"), ResourceDocumentId("/subscriptions/a/X"));
  EXPECT_EQ(ResourceDocumentId("/a"), UuidV5(kResourceIdNamespace, "/a"));
  EXPECT_EQ(PartitionKey(kSub), ToLower(kSub));
}

TEST(DocumentsTest, ResourceDocumentIdIsTheSameAcrossTheThreadsMemory) {
  // More IDs than a thread remembers, twice: each is the UUID of the lower-cased ID every time.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 1500; ++i) {
      const std::string id = "/subscriptions/S/resourceGroups/G/x/N" + std::to_string(i * 7 % 1500);
      ASSERT_EQ(ResourceDocumentId(id), UuidV5(kResourceIdNamespace, ToLower(id))) << id;
    }
  }
}

TEST(DocumentsTest, OperationDocumentRoundTrips) {
  FakeClock clock;
  OperationDocument op;
  op.id = "11111111-2222-3333-4444-555555555555";
  op.request = OperationRequest::kRevokeCredentials;
  op.external_id =
      "/subscriptions/x/resourceGroups/r/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/C";
  op.start_time = clock.Now();
  op.last_transition_time = clock.Now();
  op.status = "Failed";
  op.error = OperationError{"Boom", "it broke", "", {}};
  op.tenant_id = "t";
  op.client_id = "c";
  op.operation_id = "/subscriptions/x/providers/.../hcpOperationStatuses/" + op.id;
  auto body = op.ToBody();
  EXPECT_EQ(*FindPointer(body, "/properties/request"), json::value("RevokeCredentials"));
  EXPECT_EQ(*FindPointer(body, "/resourceType"), json::value(kOperationDocType));
  auto back = OperationDocument::FromBody(op.id, body);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->request, op.request);
  EXPECT_EQ(back->status, "Failed");
  EXPECT_EQ(back->error->code, "Boom");
  EXPECT_EQ(back->start_time, op.start_time);
  EXPECT_TRUE(back->exposed());

  OperationDocument implicit = op;
  implicit.tenant_id.clear();
  implicit.client_id.clear();
  implicit.operation_id.clear();
  auto ib = implicit.ToBody();
  EXPECT_EQ(FindPointer(ib, "/properties/tenantId"), nullptr);
  EXPECT_EQ(FindPointer(ib, "/properties/operationId"), nullptr);
  EXPECT_FALSE(OperationDocument::FromBody("x", ResourceDocument{}.ToBody()).ok());
}

TEST(DocumentsTest, SubscriptionDocument) {
  auto body =
      json::parse(R"({"resourceType":"microsoft.resources/subscriptions","properties":{"state":"warned",)"
                  R"("registrationDate":"x","properties":{"tenantId":"T"}}})");
  auto d = SubscriptionDocument::FromBody("sub", body);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->state, SubscriptionState::kWarned);
  EXPECT_EQ(d->tenant_id(), "T");
  EXPECT_EQ(d->ToBody(), body);
  EXPECT_FALSE(ParseSubscriptionState("Bogus").ok());
}

TEST(DocumentsTest, TerminalStates) {
  EXPECT_TRUE(IsTerminalState("Succeeded"));
  EXPECT_TRUE(IsTerminalState("failed"));
  EXPECT_TRUE(IsTerminalState("Canceled"));
  EXPECT_FALSE(IsTerminalState("Accepted"));
  EXPECT_FALSE(IsTerminalState("Deleting"));
}

TEST(CloudErrorTest, MapsInternalErrorsInOnePlace) {
  EXPECT_EQ(FromError(Error::NotFound("secret")).status, 404);
  EXPECT_EQ(FromError(Error::AlreadyExists("x")).status, 409);
  EXPECT_EQ(FromError(Error::PreconditionFailed("x")).status, 412);
  EXPECT_EQ(FromError(Error::PreconditionFailed("x")).body.code, "PreconditionFailed");
  EXPECT_EQ(FromError(Error::Unavailable("x")).status, 503);
  EXPECT_EQ(FromError(Error::Throttled("x")).status, 429);
  auto internal = FromError(Error::Corruption("db file /var/secret broken"));
  EXPECT_EQ(internal.status, 500);
  EXPECT_EQ(internal.body.message.find("secret"), std::string::npos);
  EXPECT_EQ(FromError(Error::NotFound("secret")).body.message.find("secret"), std::string::npos);
}

TEST(CloudErrorTest, UnavailableIs503ServiceUnavailableWithRetryAfter) {
  CloudError e = FromError(Error::Unavailable("connect to PostgreSQL: connection refused"));
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(e.body.code, codes::kServiceUnavailable);
  EXPECT_EQ(e.body.message.find("PostgreSQL"), std::string::npos);
  EXPECT_TRUE(IsRetryableStatus(e.status));
  EXPECT_EQ(DefaultRetryAfterSeconds(e.status), kUnavailableRetryAfterSeconds);
  EXPECT_GT(kUnavailableRetryAfterSeconds, 0);
  EXPECT_EQ(DefaultRetryAfterSeconds(FromError(Error::Throttled("x")).status), kThrottledRetryAfterSeconds);
  for (int status : {200, 201, 202, 400, 404, 409, 412, 500, 504}) {
    EXPECT_EQ(DefaultRetryAfterSeconds(status), 0) << status;
  }
}

TEST(CloudErrorTest, TimeoutIs503ServiceUnavailableWithRetryAfter) {
  CloudError e = FromError(Error::Timeout("Cluster Service PATCH: connecting to 10.0.0.3:443: timed out"));
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(e.body.code, codes::kServiceUnavailable);
  EXPECT_EQ(e.body.message.find("10.0.0.3"), std::string::npos);
  EXPECT_EQ(DefaultRetryAfterSeconds(e.status), kUnavailableRetryAfterSeconds);
}

TEST(CloudErrorTest, BodyShape) {
  CloudError e(400, codes::kInvalidParameter, "bad", "t");
  auto j = e.ToJson();
  EXPECT_EQ(j.at("error").at("code"), "InvalidParameter");
  EXPECT_EQ(j.at("error").at("target"), "t");
  EXPECT_EQ(j.at("error").as_object().count("details"), 0u);
  auto multi = CloudError::FromProblems(
      {{"InvalidRequestContent", "a", "x", {}}, {"InvalidRequestContent", "b", "y", {}}});
  EXPECT_EQ(multi.body.code, "MultipleErrorsOccurred");
  EXPECT_EQ(multi.ToJson().at("error").at("details").as_array().size(), 2u);
  auto one = CloudError::FromProblems({{"InvalidRequestContent", "a", "x", {}}});
  EXPECT_EQ(one.body.target, "x");
}

TEST(SystemDataTest, ParseAndMerge) {
  auto created = ParseSystemData(
      R"({"createdBy":"a","createdByType":"User","createdAt":"2025-01-01T00:00:00Z","other":1})");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->count("other"), 0u);
  EXPECT_FALSE(ParseSystemData("not json"));
  EXPECT_FALSE(ParseSystemData(""));
  auto update =
      ParseSystemData(R"({"createdBy":"z","lastModifiedBy":"b","lastModifiedAt":"2025-02-01T00:00:00Z"})");
  auto merged = MergeSystemData(created, update, false);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->at("createdBy"), "a");
  EXPECT_EQ(merged->at("lastModifiedBy"), "b");
  EXPECT_EQ(MergeSystemData(created, update, true), update);
}

TEST(PagingTest, SkipTokenRoundTrips) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "{\"k\":\"\xff\x00z\"}", "0123456789"}) {
    if (s.empty()) continue;
    auto t = EncodeSkipToken(s);
    auto back = DecodeSkipToken(t);
    ASSERT_TRUE(back.ok()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(DecodeSkipToken("").ok());
  EXPECT_FALSE(DecodeSkipToken("a").ok());
  EXPECT_FALSE(DecodeSkipToken("ab$d").ok());
  EXPECT_EQ(NextLink("https://h", "/p", "2026-10-01", 10, "ab"),
            "https://h/p?api-version=2026-10-01&$top=10&$skipToken=ab");
}

TEST(OperationStatusTest, Renders) {
  FakeClock clock;
  OperationDocument op;
  op.id = "opid";
  op.start_time = clock.Now();
  op.last_transition_time = clock.Now() + std::chrono::seconds(5);
  op.status = "Accepted";
  auto path = OperationStatusPath("sub", "eastus", "opid");
  EXPECT_EQ(
      path,
      "/subscriptions/sub/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/opid");
  auto j = RenderOperationStatus(op, path);
  EXPECT_EQ(j.at("name"), "opid");
  EXPECT_EQ(j.count("endTime"), 0u);
  EXPECT_EQ(j.count("error"), 0u);
  op.status = "Canceled";
  op.error = OperationError{std::string(kCanceledCode), std::string(kSupersededMessage), "", {}};
  j = RenderOperationStatus(op, path);
  EXPECT_EQ(j.at("endTime"), json::value(FormatRfc3339(op.last_transition_time, true)));
  EXPECT_EQ(j.at("error").at("code"), "Canceled");
  op.status = "Failed";
  op.error.reset();
  j = RenderOperationStatus(op, path);
  EXPECT_EQ(j.at("error").at("code"), "InternalServerError");
}

TEST(OperationWrites, StartDeleteCancelsTheActiveOperationCreatesTheDeleteAndMarksTheResource) {
  const TimePoint now = ParseRfc3339("2025-01-01T00:00:00Z").value();
  OperationDocument active;
  active.id = "create-op";
  active.request = OperationRequest::kCreate;
  active.status = "Provisioning";
  active.notification_uri = "https://arm.example/cb";
  OperationDocument del;
  del.id = "delete-op";
  del.request = OperationRequest::kDelete;
  del.status = std::string(kStateDeleting);
  ResourceAsRead resource{"doc", std::string("etag1"), std::nullopt};
  StartDeletePlan plan = PlanStartDelete(resource, del, 3600, &active, now);
  ASSERT_TRUE(plan.canceled_index.has_value());
  const store::WriteOp& cancel = plan.writes[*plan.canceled_index];
  EXPECT_EQ(cancel.id, "create-op");
  ASSERT_EQ(cancel.conditions.size(), 1u);
  EXPECT_EQ(cancel.conditions[0].path, kPathStatus);
  EXPECT_EQ(cancel.conditions[0].equals, std::optional<json::value>("Provisioning"));
  bool pending = false;
  for (const store::WriteOp& w : plan.writes) pending = pending || w.id == PendingNotificationId("create-op");
  EXPECT_TRUE(pending);
  const store::WriteOp& create = plan.writes[plan.created_index];
  EXPECT_EQ(create.kind, store::WriteOp::Kind::kCreate);
  EXPECT_EQ(create.id, "delete-op");
  EXPECT_EQ(create.ttl_seconds, std::optional<int64_t>(3600));
  const store::WriteOp& mark = plan.writes.back();
  EXPECT_EQ(mark.id, "doc");
  EXPECT_EQ(mark.if_match, std::optional<std::string>("etag1"));
  ASSERT_EQ(mark.patch.size(), 2u);
  EXPECT_EQ(mark.patch[0].value, "Deleting");
  EXPECT_EQ(mark.patch[1].value, "delete-op");
}

TEST(OperationWrites, StartDeleteOfAnIdleResourceCancelsNothing) {
  OperationDocument del;
  del.id = "delete-op";
  del.request = OperationRequest::kDelete;
  OperationDocument ended;
  ended.id = "old";
  ended.status = std::string(kStateSucceeded);
  ResourceAsRead resource{
      "doc", std::nullopt,
      Unchanged(json::value(json::object{{"properties", json::object{}}}), kPathActiveOperationId)};
  StartDeletePlan plan = PlanStartDelete(resource, del, 60, &ended, TimePoint{});
  EXPECT_FALSE(plan.canceled_index.has_value());
  ASSERT_EQ(plan.writes.size(), 2u);
  ASSERT_EQ(plan.writes[1].conditions.size(), 1u);
  EXPECT_FALSE(plan.writes[1].conditions[0].equals.has_value());  // activeOperationId still absent
}

TEST(DocumentsTest, SubscriptionRegisteredFeatures) {
  auto body =
      json::parse(R"({"resourceType":"microsoft.resources/subscriptions","properties":{"state":"Registered",)"
                  R"("registrationDate":"x","properties":{"registeredFeatures":[)"
                  R"({"name":"Microsoft.RedHatOpenShift/ExperimentalReleaseFeatures","state":"Registered"},)"
                  R"({"name":"Microsoft.RedHatOpenShift/Other","state":"Pending"}]}}})");
  auto d = SubscriptionDocument::FromBody("sub", body);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->HasRegisteredFeature("microsoft.redhatopenshift/experimentalreleasefeatures"));
  EXPECT_FALSE(d->HasRegisteredFeature("Microsoft.RedHatOpenShift/Other"));  // not Registered
  EXPECT_FALSE(d->HasRegisteredFeature("Microsoft.RedHatOpenShift/Missing"));
  auto none = SubscriptionDocument::FromBody(
      "sub", json::parse(R"({"resourceType":"microsoft.resources/subscriptions","properties":{"state":)"
                         R"("Registered","registrationDate":"x","properties":null}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->HasRegisteredFeature("Microsoft.RedHatOpenShift/ExperimentalReleaseFeatures"));
}

TEST(DocumentsTest, OperationDeadlineRoundTrips) {
  OperationDocument op;
  op.status = "Accepted";
  op.deadline_seconds = 1140;
  auto back = OperationDocument::FromBody("x", op.ToBody());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->deadline_seconds, std::optional<int64_t>(1140));
  op.deadline_seconds.reset();
  EXPECT_EQ(OperationDocument::FromBody("x", op.ToBody())->deadline_seconds, std::nullopt);
}

}  // namespace
}  // namespace hcprp::arm
