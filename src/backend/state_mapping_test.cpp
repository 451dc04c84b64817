#include "backend/state_mapping.h"

#include <gtest/gtest.h>

namespace hcprp::backend {
namespace {

std::string Next(Request r, std::string_view href, std::string state, bool gone = false) {
  Observation o;
  o.state = std::move(state);
  o.gone = gone;
  auto t = Decide(r, KindOfHref(href), o);
  return t ? t->status : std::string("-");
}

constexpr std::string_view kCluster = "/api/aro_hcp/v1alpha1/clusters/a";
constexpr std::string_view kPool = "/api/aro_hcp/v1alpha1/clusters/a/node_pools/b";

TEST(StateMapping, Cluster) {
  using R = Request;
  EXPECT_EQ(Next(R::kCreate, kCluster, "validating"), "-");
  EXPECT_EQ(Next(R::kCreate, kCluster, "pending"), "-");
  EXPECT_EQ(Next(R::kCreate, kCluster, "installing"), "Provisioning");
  EXPECT_EQ(Next(R::kCreate, kCluster, "ready"), "Succeeded");
  EXPECT_EQ(Next(R::kCreate, kCluster, "error"), "Failed");
  EXPECT_EQ(Next(R::kUpdate, kCluster, "updating"), "Updating");
  EXPECT_EQ(Next(R::kUpdate, kCluster, "ready"), "Succeeded");
  EXPECT_EQ(Next(R::kCreate, kCluster, "uninstalling"), "Deleting");
  EXPECT_EQ(Next(R::kDelete, kCluster, "uninstalling"), "Deleting");
  EXPECT_EQ(Next(R::kDelete, kCluster, "ready"), "-");  // not during Delete
  EXPECT_EQ(Next(R::kDelete, kCluster, "installing"), "-");
  EXPECT_EQ(Next(R::kDelete, kCluster, "", true), "Succeeded");
  EXPECT_EQ(Next(R::kCreate, kCluster, "", true), "Failed");
}

TEST(StateMapping, ClusterErrorCarriesTheProvisionError) {
  Observation o{false, "error", "OCM1", "bad", false};
  auto t = Decide(Request::kCreate, ObjectKind::kCluster, o);
  ASSERT_TRUE(t && t->error);
  EXPECT_EQ(t->error->code, "OCM1");
  EXPECT_EQ(t->error->message, "bad");
  o.error_code.clear();
  t = Decide(Request::kCreate, ObjectKind::kCluster, o);
  EXPECT_EQ(t->error->code, "InternalServerError");
}

TEST(StateMapping, NodePool) {
  using R = Request;
  for (const char* s : {"validating", "pending", "validating_update", "pending_update"}) {
    EXPECT_EQ(Next(R::kCreate, kPool, s), "-") << s;
  }
  EXPECT_EQ(Next(R::kCreate, kPool, "installing"), "Provisioning");
  EXPECT_EQ(Next(R::kCreate, kPool, "ready"), "Succeeded");
  EXPECT_EQ(Next(R::kUpdate, kPool, "updating"), "Updating");
  EXPECT_EQ(Next(R::kDelete, kPool, "uninstalling"), "Deleting");
  EXPECT_EQ(Next(R::kCreate, kPool, "recoverable_error"), "Failed");
  EXPECT_EQ(Next(R::kCreate, kPool, "error"), "Failed");
  Observation o{false, "error", "OCM1", "nodes", false};
  auto t = Decide(Request::kCreate, ObjectKind::kNodePool, o);
  EXPECT_EQ(t->error->code, "InternalServerError");
  EXPECT_EQ(t->error->message, "nodes");
}

// An update that changes the version ends once the upgrade was accepted (the newest version history
// entry is Partial), whatever the object's state while it rolls out; a create does not.
TEST(StateMapping, AnUpgradeEndsTheUpdateOnceAccepted) {
  clusterservice::CsStatus status = clusterservice::ParseCsStatus(
      ParseJson(R"({"state":"updating","version_history":[{"version":"4.21.3","state":"Partial"},
                   {"version":"4.20.14","state":"Completed"}]})")
          .value()
          .as_object());
  Observation o = ObservationFrom(status);
  EXPECT_TRUE(o.upgrading);
  for (ObjectKind kind : {ObjectKind::kCluster, ObjectKind::kNodePool}) {
    EXPECT_EQ(Decide(Request::kUpdate, kind, o)->status, "Succeeded");
    EXPECT_EQ(Decide(Request::kCreate, kind, o)->status, "Updating");
  }
  o.state = "pending_update";
  EXPECT_EQ(Decide(Request::kUpdate, ObjectKind::kNodePool, o)->status, "Succeeded");
  o.state = "error";  // the upgrade failed before the update was decided
  EXPECT_EQ(Decide(Request::kUpdate, ObjectKind::kCluster, o)->status, "Failed");
  status.version_history = json::array{json::object{{"version", "4.20.14"}, {"state", "Completed"}}};
  EXPECT_FALSE(ObservationFrom(status).upgrading);
  EXPECT_EQ(Decide(Request::kUpdate, ObjectKind::kCluster, ObservationFrom(status))->status, "Updating");
}

TEST(StateMapping, Credentials) {
  constexpr std::string_view kCred = "/api/aro_hcp/v1alpha1/clusters/a/break_glass_credentials/c";
  EXPECT_EQ(KindOfHref(kCred), ObjectKind::kCredential);
  EXPECT_EQ(Next(Request::kRequestCredential, kCred, "issuing"), "-");
  EXPECT_EQ(Next(Request::kRequestCredential, kCred, "issued"), "Succeeded");
  EXPECT_EQ(Next(Request::kRequestCredential, kCred, "failed"), "Failed");
  EXPECT_EQ(Next(Request::kRevokeCredentials, kCluster, std::string(kCredentialsRevoking)), "-");
  EXPECT_EQ(Next(Request::kRevokeCredentials, kCluster, std::string(kCredentialsRevoked)), "Succeeded");
  EXPECT_EQ(Next(Request::kRevokeCredentials, kCluster, "ready"), "-");
}

}  // namespace
}  // namespace hcprp::backend
