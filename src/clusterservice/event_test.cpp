#include "clusterservice/event.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace hcprp::clusterservice {
namespace {

json::object Obj(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok());
  return v->as_object();
}

TEST(Event, Status) {
  auto s = ParseCsStatus(
      Obj(R"({"state":"error","provision_error_code":"OCM3055","provision_error_message":"quota"})"));
  EXPECT_EQ(s.state, "error");
  auto real_np = ParseCsStatus(Obj(R"({"state":{"node_pool_state_value":"ready"},"message":"m"})"));
  EXPECT_EQ(real_np.state, "ready");
  EXPECT_EQ(real_np.provision_error_message, "m");

  EXPECT_EQ(s.provision_error_code, "OCM3055");
  EXPECT_EQ(s.provision_error_message, "quota");
  EXPECT_FALSE(s.conditions.has_value());
}

TEST(Event, StatusConditionsOnlyWhenAnArray) {
  auto s = ParseCsStatus(Obj(R"({"state":"ready","conditions":[{"type":"Ready"}]})"));
  ASSERT_TRUE(s.conditions.has_value());
  EXPECT_EQ(ToJson(json::value(*s.conditions)), R"([{"type":"Ready"}])");
  EXPECT_FALSE(ParseCsStatus(Obj(R"({"conditions":{"type":"Ready"}})")).conditions.has_value());
}

TEST(Event, ClusterObject) {
  auto o = ParseServiceObject(Obj(R"({"href":"/api/aro_hcp/v1alpha1/clusters/c1","name":"n",
      "creation_timestamp":"2026-01-02T03:04:05Z","api":{"url":"https://api"},
      "azure":{"subscription_id":"S","resource_group_name":"RG","resource_name":"my-cluster"},
      "status":{"state":"uninstalling"}})"));
  EXPECT_EQ(o.href, "/api/aro_hcp/v1alpha1/clusters/c1");
  EXPECT_EQ(o.name, "n");
  EXPECT_EQ(o.ArmName(), "my-cluster");
  ASSERT_TRUE(o.cluster_resource_id.has_value());
  EXPECT_EQ(o.cluster_resource_id->ToString(),
            "/subscriptions/S/resourceGroups/RG/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/"
            "my-cluster");
  ASSERT_TRUE(o.created.has_value());
  EXPECT_EQ(FormatRfc3339(*o.created), "2026-01-02T03:04:05Z");
  EXPECT_EQ(o.status.state, "uninstalling");
  EXPECT_EQ(ToJson(json::value(o.assigned)), R"({"api":{"url":"https://api"}})");
}

TEST(Event, ObjectWithoutAzureNamesOrTimestamp) {
  auto o = ParseServiceObject(Obj(R"({"name":"np","azure":{"resource_name":""},"creation_timestamp":"x"})"));
  EXPECT_EQ(o.ArmName(), "np");
  EXPECT_FALSE(o.cluster_resource_id.has_value());
  EXPECT_FALSE(o.created.has_value());
  EXPECT_TRUE(o.status.state.empty());
  EXPECT_TRUE(o.assigned.empty());
}

TEST(Event, ProvisionErrorOfTheTopLevelWhereTheStatusHasNone) {
  auto top_only = ParseServiceObject(
      Obj(R"({"provision_error_code":"C","provision_error_message":"M","status":{"state":"error"}})"));
  EXPECT_EQ(top_only.status.state, "error");
  EXPECT_EQ(top_only.status.provision_error_code, "C");
  EXPECT_EQ(top_only.status.provision_error_message, "M");
  auto both = ParseServiceObject(Obj(R"({"provision_error_code":"C","provision_error_message":"M",
      "status":{"state":"error","provision_error_code":"S"}})"));
  EXPECT_EQ(both.status.provision_error_code, "S");
  EXPECT_EQ(both.status.provision_error_message, "");
  auto no_status = ParseServiceObject(Obj(R"({"state":"ready","provision_error_code":"C","message":"M"})"));
  EXPECT_EQ(no_status.status.state, "");
  EXPECT_EQ(no_status.status.provision_error_code, "C");
  EXPECT_EQ(no_status.status.provision_error_message, "M");
}

TEST(Event, Page) {
  auto page = ParseEventPage(Obj(R"({"last_sequence":9,"items":[
      {"sequence":7,"href":"/c/1","kind":"Cluster","state":"ready","object":{"href":"/c/1","status":{"state":"ready"}}},
      {"sequence":8,"href":"/c/2","state":"deleted"}, 5]})"));
  EXPECT_EQ(page.last_sequence, 9u);
  ASSERT_EQ(page.events.size(), 2u);
  EXPECT_EQ(page.events[0].sequence, 7u);
  EXPECT_EQ(page.events[0].kind, "Cluster");
  EXPECT_FALSE(page.events[0].Deleted());
  EXPECT_EQ(page.events[0].object.status.state, "ready");
  EXPECT_TRUE(page.events[1].Deleted());
  EXPECT_EQ(page.events[1].object.href, "/c/2");
}

}  // namespace
}  // namespace hcprp::clusterservice
