#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "core/uuid.h"
#include "http/client.h"
#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/service_internal.h"
#include "simulator/simulator.h"
#include "simulator/state_store.h"
#include "simulator/test_util.h"

namespace hcprp::simulator {
namespace {

using namespace std::chrono_literals;
using http::Verb;

TEST_F(SimulatorTest, ClusterCreateWalksEveryState) {
  StartSim(Profile::kDemo);
  auto a = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"));
  ASSERT_EQ(a.status, 201u);
  EXPECT_EQ(a.str("kind"), "Cluster");
  const std::string href = a.str("href");
  EXPECT_EQ(href, kBase + "/clusters/" + a.str("id"));
  EXPECT_EQ(a.state(), "validating");
  EXPECT_NE(GetString(*GetObject(a.obj(), "api"), "url")->find("https://api."), std::string::npos);
  EXPECT_EQ(State(href), "validating");
  Advance(1s);
  EXPECT_EQ(State(href), "pending");
  Advance(1s);
  EXPECT_EQ(State(href), "installing");
  Advance(3s);
  EXPECT_EQ(State(href), "installing");
  Advance(3s);
  EXPECT_EQ(State(href), "ready");
  auto st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(st.str("kind"), "ClusterStatus");
  EXPECT_EQ(st.str("provision_error_code"), "");
  EXPECT_EQ(StatesOf(Events(0), href),
            (std::vector<std::string>{"validating", "pending", "installing", "ready"}));
}

TEST_F(SimulatorTest, InstantProfileStillPassesEveryState) {
  StartSim(Profile::kInstant);
  const std::string href = CreateCluster("fast");
  sim_->RunDueForTest();
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(StatesOf(Events(0), href),
            (std::vector<std::string>{"validating", "pending", "installing", "ready"}));
}

TEST_F(SimulatorTest, PatchReplacesTheClusterProperties) {
  StartSim(Profile::kInstant);
  const std::string href = CreateCluster("props");
  sim_->RunDueForTest();
  ASSERT_EQ(State(href), "ready");
  auto set = Call(
      *sim_, Verb::patch, href,
      R"({"properties":{"hosted_cluster_single_replica":"true","hosted_cluster_size_override":"e2e_minimal"}})");
  ASSERT_EQ(set.status, 200u);
  sim_->RunDueForTest();
  auto one =
      Call(*sim_, Verb::patch, href, R"({"properties":{"hosted_cluster_size_override":"e2e_minimal"}})");
  ASSERT_EQ(one.status, 200u);
  EXPECT_EQ(json::value(*GetObject(one.obj(), "properties")),
            json::value(json::object{{"hosted_cluster_size_override", "e2e_minimal"}}));
  sim_->RunDueForTest();
  auto none = Call(*sim_, Verb::patch, href, R"({"properties":{}})");
  ASSERT_EQ(none.status, 200u);
  EXPECT_EQ(GetObject(none.obj(), "properties"), nullptr);
  // Nothing left to remove: no update.
  sim_->RunDueForTest();
  auto again = Call(*sim_, Verb::patch, href, R"({"properties":{}})");
  EXPECT_EQ(again.state(), "ready");
}

TEST_F(SimulatorTest, UpdateGoesThroughUpdating) {
  StartSim(Profile::kDemo);
  const std::string href = CreateCluster("c1");
  auto early = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  EXPECT_EQ(early.status, 409u);
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  auto renamed = Call(*sim_, Verb::patch, href, R"({"name":"other"})");
  EXPECT_EQ(renamed.status, 400u);
  auto badver = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v3.11"}})");
  EXPECT_EQ(badver.status, 400u);
  auto same = Call(*sim_, Verb::patch, href, R"({"region":{"id":"westus3"}})");
  EXPECT_EQ(same.status, 200u);
  EXPECT_EQ(same.state(), "ready");  // nothing changed: no update
  // The minor it runs already: nothing changes, its z-stream stays.
  auto again = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.19"}})");
  ASSERT_EQ(again.status, 200u);
  EXPECT_EQ(again.state(), "ready");
  EXPECT_EQ(*GetString(*GetObject(again.obj(), "version"), "id"), "openshift-v4.19.24");
  // Two minors ahead: no upgrade edge from 4.19 into 4.21's channel.
  auto skip = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.21"}})");
  EXPECT_EQ(skip.status, 400u);
  EXPECT_NE(ToJson(skip.body).find(R"(no upgrade path to update channel \"stable-4.21\")"), std::string::npos)
      << ToJson(skip.body);
  // The next minor: the release before the stable tip (4.20.15), pinned as an exact ID.
  auto p = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  ASSERT_EQ(p.status, 200u);
  EXPECT_EQ(p.state(), "updating");
  EXPECT_EQ(*GetString(*GetObject(p.obj(), "version"), "id"), "openshift-v4.20.14");
  Advance(3s);
  EXPECT_EQ(State(href), "updating");  // a version change is an upgrade: 4 s under demo
  Advance(1s);
  EXPECT_EQ(State(href), "ready");
}

TEST_F(SimulatorTest, NodePoolLifecycle) {
  StartSim(Profile::kDemo);
  const std::string cluster = CreateCluster("c1");
  auto np = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np1","replicas":2})");
  ASSERT_EQ(np.status, 201u) << ToJson(np.body);
  const std::string href = np.str("href");
  EXPECT_EQ(href, cluster + "/node_pools/" + np.str("id"));
  EXPECT_EQ(np.str("kind"), "NodePool");
  auto dup = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"NP1"})");
  EXPECT_EQ(dup.status, 409u);
  auto neg = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np2","replicas":-1})");
  EXPECT_EQ(neg.status, 400u);
  Advance(10s);
  EXPECT_EQ(State(href), "ready");
  auto p = Call(*sim_, Verb::patch, href, R"({"replicas":3})");
  ASSERT_EQ(p.status, 200u);
  EXPECT_EQ(p.state(), "validating_update");
  Advance(1s);
  EXPECT_EQ(State(href), "pending_update");
  Advance(1s);
  EXPECT_EQ(State(href), "updating");
  Advance(3s);
  EXPECT_EQ(State(href), "ready");
  auto list = Call(*sim_, Verb::get, cluster + "/node_pools");
  EXPECT_EQ(list.str("kind"), "NodePoolList");
  EXPECT_EQ(*GetInt(list.obj(), "total"), 1);
  auto del = Call(*sim_, Verb::delete_, href);
  EXPECT_EQ(del.status, 204u);
  EXPECT_EQ(State(href), "uninstalling");
  EXPECT_EQ(Call(*sim_, Verb::delete_, href).status, 204u);  // repeated delete
  Advance(3s);
  EXPECT_EQ(Call(*sim_, Verb::get, href).status, 404u);
  EXPECT_EQ(StatesOf(Events(0), href),
            (std::vector<std::string>{"validating", "pending", "installing", "ready", "validating_update",
                                      "pending_update", "updating", "ready", "uninstalling", "deleted"}));
}

TEST_F(SimulatorTest, ExternalAuthLifecycle) {
  StartSim(Profile::kInstant);
  const std::string cluster = CreateCluster("c1");
  auto ea = Call(*sim_, Verb::post, cluster + "/external_auth_configs",
                 R"({"name":"ea1","issuer":{"url":"https://issuer.example.com","audiences":["a"]}})");
  ASSERT_EQ(ea.status, 201u);
  const std::string href = ea.str("href");
  EXPECT_EQ(href, cluster + "/external_auth_configs/" + ea.str("id"));
  EXPECT_EQ(
      Call(*sim_, Verb::post, cluster + "/external_auth_configs", R"({"name":"ea2","issuer":{}})").status,
      400u);
  sim_->RunDueForTest();
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/status").str("kind"), "ExternalAuthStatus");
  ASSERT_EQ(Call(*sim_, Verb::patch, href, R"({"issuer":{"audiences":["a","b"]}})").state(), "updating");
  sim_->RunDueForTest();
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(*GetInt(Call(*sim_, Verb::get, cluster + "/external_auth_configs").obj(), "total"), 1);
  Call(*sim_, Verb::delete_, href);
  sim_->RunDueForTest();
  EXPECT_EQ(Call(*sim_, Verb::get, href).status, 404u);
  EXPECT_EQ(StatesOf(Events(0), href),
            (std::vector<std::string>{"validating", "installing", "ready", "updating", "ready",
                                      "uninstalling", "deleted"}));
}

TEST_F(SimulatorTest, FailedUpdateAndRetry) {
  StartSim(Profile::kInstant);
  const std::string href = CreateCluster("c1");
  sim_->RunDueForTest();
  Call(*sim_, Verb::post, "/control/faults/provisioning",
       R"({"count":1,"operations":["update"],"code":"OCM5001"})");
  Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  sim_->RunDueForTest();
  auto st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(st.state(), "error");
  EXPECT_EQ(st.str("provision_error_code"), "OCM5001");
  // An update of a failed cluster is allowed and clears the error: the same minor again retries the
  // upgrade, which still runs the old one.
  Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  sim_->RunDueForTest();
  st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(st.state(), "ready");
  EXPECT_EQ(st.str("provision_error_code"), "");
}

TEST_F(SimulatorTest, DeletingAClusterDeletesItsChildrenFirst) {
  StartSim(Profile::kDemo);
  const std::string cluster = CreateCluster("c1");
  Advance(10s);
  auto np = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np1"})");
  auto ea = Call(*sim_, Verb::post, cluster + "/external_auth_configs",
                 R"({"name":"ea1","issuer":{"url":"https://issuer.example.com","audiences":["a"]}})");
  ASSERT_EQ(ea.status, 201u) << ToJson(ea.body);
  EXPECT_EQ(ea.str("kind"), "ExternalAuth");
  // The cluster's uninstall (4 s) is shorter than its node pool's create in flight; the node pool
  // gets deleted too and the cluster waits for it.
  ASSERT_EQ(Call(*sim_, Verb::delete_, cluster).status, 204u);
  EXPECT_EQ(State(cluster), "uninstalling");
  EXPECT_EQ(State(np.str("href")), "uninstalling");
  EXPECT_EQ(State(ea.str("href")), "uninstalling");
  EXPECT_EQ(Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np2"})").status, 409u);
  Advance(1s);
  EXPECT_EQ(Call(*sim_, Verb::get, ea.str("href")).status, 404u);
  Advance(2s);
  EXPECT_EQ(Call(*sim_, Verb::get, np.str("href")).status, 404u);
  EXPECT_EQ(State(cluster), "uninstalling");
  Advance(1s);
  EXPECT_EQ(Call(*sim_, Verb::get, cluster).status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::get, cluster + "/status").status, 404u);
  // The cluster's removal is the last event.
  auto events = Events(0);
  auto last = events.back().as_object();
  EXPECT_EQ(*GetString(last, "href"), cluster);
  EXPECT_EQ(*GetString(last, "state"), "deleted");
}

TEST_F(SimulatorTest, ClusterWaitsForSlowChildren) {
  StartSim(Profile::kDemo);
  const std::string cluster = CreateCluster("c1");
  Advance(10s);
  auto np = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np1"})");
  Advance(10s);
  ASSERT_EQ(Call(*sim_, Verb::delete_, cluster).status, 204u);
  // Hold the node pool in uninstalling as an engine would; the cluster must not go first.
  ASSERT_TRUE(sim_->TransitionForTest(np.str("href"), "uninstalling").ok());
  Advance(5s);
  // The node pool was re-planned by the transition (3 s from its new state) and is gone by now.
  EXPECT_EQ(Call(*sim_, Verb::get, np.str("href")).status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::get, cluster).status, 404u);
}

TEST_F(SimulatorTest, ErrorsAreOcmShaped) {
  StartSim();
  auto nf = Call(*sim_, Verb::get, kBase + "/clusters/nope");
  EXPECT_EQ(nf.status, 404u);
  EXPECT_EQ(nf.str("kind"), "Error");
  EXPECT_EQ(nf.str("id"), "404");
  EXPECT_EQ(nf.str("code"), "CLUSTERS-MGMT-404");
  EXPECT_EQ(nf.str("href"), kBase + "/errors/404");
  EXPECT_FALSE(nf.str("reason").empty());
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters/nope/node_pools").status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters", "{not json").status, 400u);
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters", "[]").status, 400u);
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters",
                 R"({"azure":{"subscription_id":"s","resource_group_name":"r"}})")
                .status,
            400u);
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters", R"({"name":"x"})").status, 400u);
  auto ver = Call(
      *sim_, Verb::post, kBase + "/clusters",
      R"({"name":"x","azure":{"subscription_id":"s","resource_group_name":"r"},"version":{"id":"4.2"}})");
  EXPECT_EQ(ver.status, 400u);
  EXPECT_NE(ver.str("reason").find("4.2"), std::string::npos);
  CreateCluster("dup");
  auto dup = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("DUP"));
  EXPECT_EQ(dup.status, 409u);
  EXPECT_EQ(dup.str("code"), "CLUSTERS-MGMT-409");
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("dup", "sub-2")).status, 201u);
  EXPECT_EQ(Call(*sim_, Verb::put, kBase + "/clusters").status, 405u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/unknown").status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::get, "/elsewhere").status, 404u);
  auto page = Call(*sim_, Verb::get, kBase + "/clusters?page=0");
  EXPECT_EQ(page.status, 400u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters?search=name%20%3D").status, 400u);
}

TEST_F(SimulatorTest, ListPagingAndSearch) {
  StartSim();
  for (int i = 0; i < 5; ++i) {
    std::string name = "c";
    name += std::to_string(i);  // not "c" + to_string: GCC 12 -O3 reports a false -Wrestrict on it
    CreateCluster(name, i % 2 ? "sub-odd" : "sub-even");
  }
  auto all = Call(*sim_, Verb::get, kBase + "/clusters");
  EXPECT_EQ(all.str("kind"), "ClusterList");
  EXPECT_EQ(*GetInt(all.obj(), "total"), 5);
  auto p2 = Call(*sim_, Verb::get, kBase + "/clusters?page=2&size=2");
  EXPECT_EQ(*GetInt(p2.obj(), "page"), 2);
  EXPECT_EQ(*GetInt(p2.obj(), "size"), 2);
  EXPECT_EQ(*GetInt(p2.obj(), "total"), 5);
  EXPECT_EQ(*GetString(GetArray(p2.obj(), "items")->at(0).as_object(), "name"), "c2");
  auto p3 = Call(*sim_, Verb::get, kBase + "/clusters?page=3&size=2");
  EXPECT_EQ(GetArray(p3.obj(), "items")->size(), 1u);
  auto odd =
      Call(*sim_, Verb::get,
           kBase + "/clusters?search=" + http::EncodeQueryComponent("azure.subscription_id='SUB-ODD'"));
  EXPECT_EQ(*GetInt(odd.obj(), "total"), 2);
  auto named = Call(*sim_, Verb::get, kBase + "/clusters?search=" + http::EncodeQueryComponent("name='c3'"));
  ASSERT_EQ(*GetInt(named.obj(), "total"), 1);
  EXPECT_EQ(*GetString(GetArray(named.obj(), "items")->at(0).as_object(), "name"), "c3");
  auto versions = Call(*sim_, Verb::get, kBase + "/versions");
  EXPECT_EQ(versions.str("kind"), "VersionList");
  EXPECT_GT(*GetInt(versions.obj(), "total"), 0);
  auto v = GetArray(versions.obj(), "items")->at(0).as_object();
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/versions/" + std::string(*GetString(v, "id"))).status, 200u);
}

TEST_F(SimulatorTest, IdempotentPost) {
  StartSim();
  auto first = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"), "key-1");
  ASSERT_EQ(first.status, 201u);
  auto again = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"), "key-1");
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(again.str("id"), first.str("id"));
  auto other = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"), "key-2");
  EXPECT_EQ(other.status, 409u);
  EXPECT_EQ(*GetInt(Call(*sim_, Verb::get, kBase + "/clusters").obj(), "total"), 1);
  // Keys are per collection.
  const std::string cluster = first.str("href");
  auto np1 = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np"})", "key-1");
  auto np2 = Call(*sim_, Verb::post, cluster + "/node_pools", R"({"name":"np"})", "key-1");
  EXPECT_EQ(np1.status, 201u);
  EXPECT_EQ(np2.status, 200u);
  EXPECT_EQ(np1.str("id"), np2.str("id"));
}

TEST_F(SimulatorTest, ProvisioningFaults) {
  StartSim(Profile::kInstant);
  auto f = Call(*sim_, Verb::post, "/control/faults/provisioning",
                R"({"count":1,"code":"OCM3055","message":"quota exceeded","kinds":["Cluster"]})");
  ASSERT_EQ(f.status, 201u);
  const std::string bad = CreateCluster("bad");
  const std::string good = CreateCluster("good");
  sim_->RunDueForTest();
  auto st = Call(*sim_, Verb::get, bad + "/status");
  EXPECT_EQ(st.state(), "error");
  EXPECT_EQ(st.str("provision_error_code"), "OCM3055");
  EXPECT_EQ(st.str("provision_error_message"), "quota exceeded");
  EXPECT_EQ(StatesOf(Events(0), bad),
            (std::vector<std::string>{"validating", "pending", "installing", "error"}));
  EXPECT_EQ(State(good), "ready");
  // A failed cluster can be updated (retried) and deleted.
  // Node pool faults with recoverable_error, on updates only.
  ASSERT_EQ(Call(*sim_, Verb::post, "/control/faults/provisioning",
                 R"({"fraction":1,"state":"recoverable_error","kinds":["NodePool"],"operations":["update"]})")
                .status,
            201u);
  auto np = Call(*sim_, Verb::post, good + "/node_pools", R"({"name":"np","replicas":1})");
  sim_->RunDueForTest();
  EXPECT_EQ(State(np.str("href")), "ready");
  Call(*sim_, Verb::patch, np.str("href"), R"({"replicas":2})");
  sim_->RunDueForTest();
  EXPECT_EQ(State(np.str("href")), "recoverable_error");
  auto faults = Call(*sim_, Verb::get, "/control/faults");
  EXPECT_EQ(GetArray(faults.obj(), "provisioning")->size(), 1u);
  EXPECT_EQ(Call(*sim_, Verb::delete_, "/control/faults").status, 204u);
  Call(*sim_, Verb::patch, np.str("href"), R"({"replicas":3})");
  sim_->RunDueForTest();
  EXPECT_EQ(State(np.str("href")), "ready");
  // Delete faults.
  Call(*sim_, Verb::post, "/control/faults/provisioning", R"({"count":1,"operations":["delete"]})");
  Call(*sim_, Verb::delete_, bad);
  sim_->RunDueForTest();
  EXPECT_EQ(State(bad), "error");
  Call(*sim_, Verb::delete_, bad);
  sim_->RunDueForTest();
  EXPECT_EQ(Call(*sim_, Verb::get, bad).status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::post, "/control/faults/provisioning", R"({"state":"broken"})").status, 400u);
}

TEST_F(SimulatorTest, HttpFaults) {
  StartSim();
  ASSERT_EQ(Call(*sim_, Verb::put, "/control/faults/http", R"({"error_count":2,"status":502})").status, 204u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters").status, 502u);
  auto e = Call(*sim_, Verb::get, kBase + "/clusters");
  EXPECT_EQ(e.status, 502u);
  EXPECT_EQ(e.str("code"), "CLUSTERS-MGMT-502");
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters").status, 200u);
  EXPECT_EQ(Call(*sim_, Verb::get, "/control/health").status, 200u);  // never faulted

  // A lost answer: the POST takes effect, the caller sees 503, its retry with the key gets the object.
  Call(*sim_, Verb::put, "/control/faults/http", R"({"error_after_fraction":1,"methods":["POST"]})");
  EXPECT_EQ(Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"), "k").status, 503u);
  Call(*sim_, Verb::delete_, "/control/faults/http");
  auto retry = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"), "k");
  EXPECT_EQ(retry.status, 200u);
  EXPECT_EQ(*GetInt(Call(*sim_, Verb::get, kBase + "/clusters").obj(), "total"), 1);

  Call(*sim_, Verb::put, "/control/faults/http", R"({"delay_ms":150})");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters").status, 200u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);

  Call(*sim_, Verb::put, "/control/faults/http", R"({"hang_fraction":1,"hang_ms":200})");
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/clusters").status, 504u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(Call(*sim_, Verb::put, "/control/faults/http", R"({"error_fraction":2})").status, 400u);
}

TEST_F(SimulatorTest, TimingCanChangeAtRuntime) {
  StartSim(Profile::kRealistic);
  const std::string href = CreateCluster("slow");
  Advance(1s);
  EXPECT_EQ(State(href), "validating");
  auto t = Call(*sim_, Verb::put, "/control/timing", R"({"profile":"instant"})");
  ASSERT_EQ(t.status, 200u);
  EXPECT_EQ(t.str("profile"), "instant");
  sim_->RunDueForTest();
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(Call(*sim_, Verb::put, "/control/timing", R"({"profile":"warp"})").status, 400u);
  auto h = Call(*sim_, Verb::get, "/control/health");
  EXPECT_EQ(h.str("status"), "ok");
  EXPECT_EQ(*GetInt(h.obj(), "objects"), 1);
}

TEST_F(SimulatorTest, RealisticTimingIsMinutesAndScales) {
  StartSim(Profile::kRealistic);
  const std::string href = CreateCluster("slow");
  Advance(5min);
  EXPECT_NE(State(href), "ready");
  Advance(60min);
  EXPECT_EQ(State(href), "ready");
  ASSERT_EQ(Call(*sim_, Verb::put, "/control/timing", R"({"time_scale":0.01})").status, 200u);
  const std::string quick = CreateCluster("quick");
  Advance(30s);
  EXPECT_EQ(State(quick), "ready");
}

TEST_F(SimulatorTest, EventsResumeFromASequence) {
  StartSim(Profile::kInstant);
  const std::string a = CreateCluster("a");
  sim_->RunDueForTest();
  auto first = Call(*sim_, Verb::get, kBase + "/events?after=0&limit=2");
  ASSERT_EQ(first.status, 200u);
  ASSERT_EQ(GetArray(first.obj(), "items")->size(), 2u);
  uint64_t cursor = static_cast<uint64_t>(*GetInt(first.obj(), "last_sequence"));
  EXPECT_EQ(cursor, 2u);
  auto rest = Events(cursor);
  ASSERT_EQ(rest.size(), 2u);
  auto e = rest[0].as_object();
  EXPECT_EQ(*GetInt(e, "sequence"), 3);
  EXPECT_EQ(*GetString(e, "kind"), "Cluster");
  EXPECT_EQ(*GetString(e, "href"), a);
  EXPECT_EQ(*GetString(*GetObject(*GetObject(e, "object"), "status"), "state"), "installing");
  auto latest = Call(*sim_, Verb::get, kBase + "/events?after=latest");
  EXPECT_EQ(*GetInt(latest.obj(), "last_sequence"), 4);
  // Nothing new: an empty page after the timeout, cursor unchanged.
  auto empty = Call(*sim_, Verb::get, kBase + "/events?after=4&timeout=50");
  EXPECT_EQ(GetArray(empty.obj(), "items")->size(), 0u);
  EXPECT_EQ(*GetInt(empty.obj(), "last_sequence"), 4);
  // A future sequence (another incarnation): resync.
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/events?after=99").status, 410u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/events?after=x").status, 400u);
}

TEST_F(SimulatorTest, LongPollWakesOnChange) {
  StartSim(Profile::kDemo);
  auto waiter = std::async(std::launch::async,
                           [&] { return Call(*sim_, Verb::get, kBase + "/events?after=0&timeout=10000"); });
  std::this_thread::sleep_for(50ms);
  auto start = std::chrono::steady_clock::now();
  CreateCluster("c1");
  auto a = waiter.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_EQ(GetArray(a.obj(), "items")->size(), 1u);
  EXPECT_EQ(*GetInt(a.obj(), "last_sequence"), 1);
}

TEST_F(SimulatorTest, EventsTooFarBehindAreGone) {
  history_ = 3;
  StartSim(Profile::kInstant);
  CreateCluster("a");
  sim_->RunDueForTest();  // 4 events, only 3 kept
  auto gone = Call(*sim_, Verb::get, kBase + "/events?after=0");
  EXPECT_EQ(gone.status, 410u);
  EXPECT_EQ(*GetInt(gone.obj(), "last_sequence"), 4);
  EXPECT_EQ(Events(1).size(), 3u);
}

TEST_F(SimulatorTest, StopWakesLongPolls) {
  StartSim();
  auto waiter = std::async(std::launch::async,
                           [&] { return Call(*sim_, Verb::get, kBase + "/events?after=0&timeout=30000"); });
  std::this_thread::sleep_for(50ms);
  auto start = std::chrono::steady_clock::now();
  sim_->Stop();
  auto a = waiter.get();
  EXPECT_EQ(a.status, 200u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(SimulatorTest, Credentials) {
  StartSim(Profile::kDemo);
  const std::string href = CreateCluster("c1");
  EXPECT_EQ(Call(*sim_, Verb::post, href + "/request_admin_credential").status, 409u);  // not ready
  Advance(10s);
  auto cred = Call(*sim_, Verb::post, href + "/request_admin_credential", "", "cred-key");
  ASSERT_EQ(cred.status, 201u) << ToJson(cred.body);
  EXPECT_EQ(cred.str("kind"), "BreakGlassCredential");
  const std::string cred_href = cred.str("href");
  EXPECT_EQ(cred_href, href + "/break_glass_credentials/" + cred.str("id"));
  EXPECT_EQ(cred.str("status"), "issuing");
  EXPECT_EQ(cred.str("kubeconfig"), "");
  EXPECT_FALSE(cred.str("expiration_timestamp").empty());
  EXPECT_EQ(Call(*sim_, Verb::post, href + "/request_admin_credential", "", "cred-key").str("id"),
            cred.str("id"));
  Advance(1s);
  auto issued = Call(*sim_, Verb::get, cred_href);
  EXPECT_EQ(issued.str("status"), "issued");
  EXPECT_NE(issued.str("kubeconfig").find("apiVersion: v1"), std::string::npos);
  // The real service's collection works too.
  auto second = Call(*sim_, Verb::post, href + "/break_glass_credentials", R"({"expiration_seconds":60})");
  ASSERT_EQ(second.status, 201u);
  Advance(1s);
  auto list = Call(*sim_, Verb::get, href + "/break_glass_credentials");
  EXPECT_EQ(list.str("kind"), "BreakGlassCredentialList");
  EXPECT_EQ(*GetInt(list.obj(), "total"), 2);
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/revoke_credentials").str("state"), "none");

  auto rev = Call(*sim_, Verb::post, href + "/revoke_credentials");
  EXPECT_EQ(rev.status, 202u);
  EXPECT_EQ(rev.str("state"), "revoking");
  EXPECT_EQ(Call(*sim_, Verb::get, cred_href).str("status"), "awaiting_revocation");
  EXPECT_EQ(Call(*sim_, Verb::get, cred_href).str("kubeconfig"), "");
  EXPECT_EQ(Call(*sim_, Verb::post, href + "/revoke_credentials").status, 202u);
  EXPECT_EQ(Call(*sim_, Verb::post, href + "/request_admin_credential").status, 409u);
  Advance(2s);
  auto done = Call(*sim_, Verb::get, href + "/revoke_credentials");
  EXPECT_EQ(done.str("state"), "revoked");
  EXPECT_FALSE(done.str("completion_timestamp").empty());
  EXPECT_EQ(Call(*sim_, Verb::get, cred_href).str("status"), "revoked");
  EXPECT_EQ(Call(*sim_, Verb::get, second.str("href")).str("status"), "revoked");
  EXPECT_EQ(StatesOf(Events(0), href + "/revoke_credentials"),
            (std::vector<std::string>{"revoking", "revoked"}));
  EXPECT_EQ(StatesOf(Events(0), cred_href),
            (std::vector<std::string>{"issuing", "issued", "awaiting_revocation", "revoked"}));

  // Expiry.
  auto third = Call(*sim_, Verb::post, href + "/request_admin_credential", R"({"expiration_seconds":30})");
  ASSERT_EQ(third.status, 201u);
  Advance(1s);
  EXPECT_EQ(Call(*sim_, Verb::get, third.str("href")).str("status"), "issued");
  Advance(30s);
  EXPECT_EQ(Call(*sim_, Verb::get, third.str("href")).str("status"), "expired");

  // Credentials go with their cluster and never hold it back.
  Call(*sim_, Verb::delete_, href);
  Advance(4s);
  EXPECT_EQ(Call(*sim_, Verb::get, href).status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::get, cred_href).status, 404u);
}

TEST_F(SimulatorTest, StateSurvivesRestartAndTransitionsResume) {
  TempDir dir;
  StartSim(Profile::kDemo, dir.str());
  const std::string href = CreateCluster("persist");
  auto np = Call(*sim_, Verb::post, href + "/node_pools", R"({"name":"np1"})", "np-key");
  const std::string done = CreateCluster("done");
  Advance(2s);
  EXPECT_EQ(State(href), "installing");
  Advance(6s);
  ASSERT_EQ(State(done), "ready");
  Call(*sim_, Verb::delete_, done);
  Call(*sim_, Verb::post, href + "/revoke_credentials");
  const uint64_t seq = *GetInt(Call(*sim_, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence");
  sim_->Stop();
  sim_.reset();

  StartSim(Profile::kDemo, dir.str());
  EXPECT_EQ(State(href), "ready");  // the 6 s of install ran out while "down"
  EXPECT_EQ(State(done), "uninstalling");
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/revoke_credentials").str("state"), "revoking");
  // Sequences continue; the old cursor is current, anything older must resync.
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/events?after=" + std::to_string(seq)).status, 200u);
  EXPECT_EQ(Call(*sim_, Verb::get, kBase + "/events?after=" + std::to_string(seq - 1)).status, 410u);
  // Idempotency keys survive too.
  auto again = Call(*sim_, Verb::post, href + "/node_pools", R"({"name":"np1"})", "np-key");
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(again.str("id"), np.str("id"));
  sim_->RunDueForTest();
  EXPECT_EQ(State(np.str("href")), "ready");
  Advance(4s);
  EXPECT_EQ(Call(*sim_, Verb::get, done).status, 404u);
  EXPECT_EQ(Call(*sim_, Verb::get, href + "/revoke_credentials").str("state"), "revoked");
  auto after = Events(seq);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(*GetInt(after[0].as_object(), "sequence"), static_cast<int64_t>(seq + 1));
  // New IDs do not collide with old ones and ordering is by creation.
  CreateCluster("third");
  auto list = Call(*sim_, Verb::get, kBase + "/clusters");
  auto items = *GetArray(list.obj(), "items");
  EXPECT_EQ(*GetString(items.back().as_object(), "name"), "third");
}

TEST_F(SimulatorTest, InFlightTransitionsResumeWithoutTimePassing) {
  TempDir dir;
  StartSim(Profile::kDemo, dir.str());
  const std::string href = CreateCluster("c");
  Advance(1s);
  ASSERT_EQ(State(href), "pending");
  sim_.reset();
  StartSim(Profile::kDemo, dir.str());
  EXPECT_EQ(State(href), "pending");
  Advance(1s);
  EXPECT_EQ(State(href), "installing");
  Advance(6s);
  EXPECT_EQ(State(href), "ready");
}

// status.version_history of an object: [[version, state], ...], newest first.
std::vector<std::pair<std::string, std::string>> History(const json::object& object) {
  std::vector<std::pair<std::string, std::string>> out;
  const json::object* st = GetObject(object, "status");
  const json::array* h = st ? GetArray(*st, "version_history") : nullptr;
  if (!h) h = GetArray(object, "version_history");  // a .../status answer
  if (!h) return out;
  for (const auto& e : *h) {
    out.emplace_back(GetString(e.as_object(), "version").value_or(""),
                     GetString(e.as_object(), "state").value_or(""));
  }
  return out;
}

using Entries = std::vector<std::pair<std::string, std::string>>;

TEST_F(SimulatorTest, CreateAtAMinorResolvesAsTheVersionSelectionPicks) {
  StartSim(Profile::kDemo);
  // openshift-v4.19: in the stable group the release before the newest (4.19.25)
  auto c = Call(*sim_, Verb::post, kBase + "/clusters", ClusterBody("c1"));
  ASSERT_EQ(c.status, 201u);
  const std::string href = c.str("href");
  EXPECT_EQ(*GetString(*GetObject(c.obj(), "version"), "id"), "openshift-v4.19.24");
  EXPECT_EQ(*GetString(*GetObject(c.obj(), "version"), "channel_group"), "stable");
  EXPECT_EQ(History(c.obj()), (Entries{{"4.19.24", "Partial"}}));  // installing
  auto np = Call(*sim_, Verb::post, href + "/node_pools",
                 R"({"name":"np1","replicas":1,"version":{"id":"openshift-v4.21","channel_group":"fast"}})");
  ASSERT_EQ(np.status, 201u) << ToJson(np.body);
  EXPECT_EQ(*GetString(*GetObject(np.obj(), "version"), "id"), "openshift-v4.21.5-fast");
  auto exact = Call(*sim_, Verb::post, href + "/node_pools",
                    R"({"name":"np2","version":{"id":"openshift-v4.20.3","channel_group":"stable"}})");
  EXPECT_EQ(*GetString(*GetObject(exact.obj(), "version"), "id"), "openshift-v4.20.3");
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  auto st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(History(st.obj()), (Entries{{"4.19.24", "Completed"}}));
  const json::object& entry = GetArray(st.obj(), "version_history")->at(0).as_object();
  EXPECT_EQ(GetString(entry, "started_time"), GetString(c.obj(), "creation_timestamp"));
  EXPECT_TRUE(GetString(entry, "completion_time").has_value());
  EXPECT_EQ(History(Call(*sim_, Verb::get, np.str("href")).obj()), (Entries{{"4.21.5", "Completed"}}));
  // Events carry the object with its history.
  auto events = Events(0);
  EXPECT_EQ(History(*GetObject(events.back().as_object(), "object")).size(), 1u);
}

TEST_F(SimulatorTest, UpgradeShowsThePartialVersionOnTopUntilItCompletes) {
  StartSim(Profile::kDemo);
  const std::string href = CreateCluster("c1");
  auto np = Call(*sim_, Verb::post, href + "/node_pools",
                 R"({"name":"np1","replicas":3,"version":{"id":"openshift-v4.19"}})");
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  auto p = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_EQ(p.status, 200u);
  EXPECT_EQ(p.state(), "updating");
  EXPECT_EQ(History(p.obj()), (Entries{{"4.20.3", "Partial"}, {"4.19.24", "Completed"}}));
  EXPECT_FALSE(GetObject(GetArray(*GetObject(p.obj(), "status"), "version_history")->at(0).as_object(),
                         "completion_time"));
  Advance(3s);
  EXPECT_EQ(State(href), "updating");
  Advance(1s);
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(History(Call(*sim_, Verb::get, href + "/status").obj()),
            (Entries{{"4.20.3", "Completed"}, {"4.19.24", "Completed"}}));
  // A change of other fields is an update as before; the history stays.
  auto other = Call(*sim_, Verb::patch, href, R"({"region":{"id":"eastus"}})");
  EXPECT_EQ(other.state(), "updating");
  Advance(3s);
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(History(Call(*sim_, Verb::get, href).obj()).size(), 2u);
  // The same version again changes nothing.
  EXPECT_EQ(Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.3"}})").state(), "ready");

  // A node pool rolls its 3 machines one after the other: 2 s each under demo.
  const std::string pool = np.str("href");
  auto pp = Call(*sim_, Verb::patch, pool, R"({"version":{"id":"openshift-v4.20.3"}})");
  EXPECT_EQ(pp.state(), "validating_update");
  EXPECT_EQ(History(pp.obj()), (Entries{{"4.20.3", "Partial"}, {"4.19.24", "Completed"}}));
  Advance(2s);
  ASSERT_EQ(State(pool), "updating");
  Advance(5s);
  EXPECT_EQ(State(pool), "updating");
  Advance(1s);
  EXPECT_EQ(State(pool), "ready");
  EXPECT_EQ(History(Call(*sim_, Verb::get, pool).obj()),
            (Entries{{"4.20.3", "Completed"}, {"4.19.24", "Completed"}}));
}

TEST_F(SimulatorTest, AnUpgradingClusterTakesOtherChangesAndRefusesAnotherUpgrade) {
  StartSim(Profile::kDemo);
  const std::string href = CreateCluster("c1");
  auto np = Call(*sim_, Verb::post, href + "/node_pools",
                 R"({"name":"np1","replicas":2,"version":{"id":"openshift-v4.19"}})");
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  ASSERT_EQ(Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.3"}})").state(), "updating");
  const size_t events_before = Events(0).size();

  auto change =
      Call(*sim_, Verb::patch, href, R"({"node_drain_grace_period":{"value":33,"unit":"minutes"}})");
  ASSERT_EQ(change.status, 200u) << ToJson(change.body);
  EXPECT_EQ(change.state(), "updating");
  EXPECT_EQ(*GetObject(change.obj(), "node_drain_grace_period")->at("value").if_int64(), 33);
  EXPECT_EQ(History(change.obj()), (Entries{{"4.20.3", "Partial"}, {"4.19.24", "Completed"}}));
  EXPECT_EQ(Events(0).size(), events_before + 1);  // the change is announced

  // The version it upgrades to again changes nothing; another one is refused while it runs.
  EXPECT_EQ(Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.3"}})").status, 200u);
  auto other = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.14"}})");
  EXPECT_EQ(other.status, 409u);
  EXPECT_NE(ToJson(other.body).find("is upgrading to 4.20.3"), std::string::npos) << ToJson(other.body);

  // The upgrade ends as it would have, with the change kept.
  Advance(4s);
  EXPECT_EQ(State(href), "ready");
  auto done = Call(*sim_, Verb::get, href);
  EXPECT_EQ(History(done.obj()), (Entries{{"4.20.3", "Completed"}, {"4.19.24", "Completed"}}));
  EXPECT_EQ(*GetObject(done.obj(), "node_drain_grace_period")->at("value").if_int64(), 33);

  // A node pool whose machines roll takes no change until they have.
  const std::string pool = np.str("href");
  ASSERT_EQ(Call(*sim_, Verb::patch, pool, R"({"version":{"id":"openshift-v4.20.3"}})").state(),
            "validating_update");
  EXPECT_EQ(Call(*sim_, Verb::patch, pool, R"({"replicas":3})").status, 409u);
}

TEST_F(SimulatorTest, FailedUpgradeKeepsTheOldVersionAndCanBeRetried) {
  StartSim(Profile::kInstant);
  const std::string href = CreateCluster("c1");
  auto rule =
      Call(*sim_, Verb::post, "/control/faults/provisioning",
           R"({"count":1,"operations":["upgrade"],"code":"OCM4242","message":"payload unavailable"})");
  ASSERT_EQ(rule.status, 201u) << ToJson(rule.body);
  sim_->RunDueForTest();
  ASSERT_EQ(State(href), "ready");  // an upgrade rule fails no create
  auto np = Call(*sim_, Verb::post, href + "/node_pools", R"({"name":"np1","replicas":1})");
  sim_->RunDueForTest();
  Call(*sim_, Verb::patch, np.str("href"), R"({"replicas":2})");
  sim_->RunDueForTest();
  ASSERT_EQ(State(np.str("href")), "ready");  // nor an update
  Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  sim_->RunDueForTest();
  auto st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(st.state(), "error");
  EXPECT_EQ(st.str("provision_error_code"), "OCM4242");
  EXPECT_EQ(st.str("provision_error_message"), "payload unavailable");
  EXPECT_EQ(History(st.obj()), (Entries{{"4.19.24", "Completed"}}));
  auto obj = Call(*sim_, Verb::get, href);
  EXPECT_EQ(*GetString(*GetObject(obj.obj(), "version"), "id"), "openshift-v4.20.14");  // still desired
  EXPECT_EQ(StatesOf(Events(0), href),
            (std::vector<std::string>{"validating", "pending", "installing", "ready", "updating", "error"}));
  // The same version again is a retry.
  auto retry = Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20"}})");
  EXPECT_EQ(retry.state(), "updating");
  sim_->RunDueForTest();
  st = Call(*sim_, Verb::get, href + "/status");
  EXPECT_EQ(st.state(), "ready");
  EXPECT_EQ(History(st.obj()), (Entries{{"4.20.14", "Completed"}, {"4.19.24", "Completed"}}));
  EXPECT_EQ(Call(*sim_, Verb::post, "/control/faults/provisioning", R"({"operations":["upgrayedd"]})").status,
            400u);
}

TEST_F(SimulatorTest, AnUpgradeInProgressResumesAfterARestart) {
  TempDir dir;
  StartSim(Profile::kDemo, dir.str());
  const std::string href = CreateCluster("c1");
  Advance(10s);
  ASSERT_EQ(State(href), "ready");
  Call(*sim_, Verb::patch, href, R"({"version":{"id":"openshift-v4.20.3"}})");
  Advance(2s);
  sim_.reset();
  StartSim(Profile::kDemo, dir.str());
  EXPECT_EQ(State(href), "updating");
  EXPECT_EQ(History(Call(*sim_, Verb::get, href).obj()),
            (Entries{{"4.20.3", "Partial"}, {"4.19.24", "Completed"}}));
  Advance(2s);
  EXPECT_EQ(State(href), "ready");
  EXPECT_EQ(History(Call(*sim_, Verb::get, href).obj()),
            (Entries{{"4.20.3", "Completed"}, {"4.19.24", "Completed"}}));
}

TEST(VersionHistoryTest, AdvancesPartialCompletedAndFailedEntries) {
  json::array h;
  AdvanceVersionHistory(h, "4.19.2", "validating", "t0");
  AdvanceVersionHistory(h, "4.19.2", "installing", "t1");  // still the same Partial entry
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].as_object(),
            (json::object{{"version", "4.19.2"}, {"state", "Partial"}, {"started_time", "t0"}}));
  AdvanceVersionHistory(h, "4.19.2", "ready", "t2");
  EXPECT_EQ(
      h[0].as_object(),
      (json::object{
          {"version", "4.19.2"}, {"state", "Completed"}, {"started_time", "t0"}, {"completion_time", "t2"}}));
  AdvanceVersionHistory(h, "4.20.1", "updating", "t3");
  ASSERT_EQ(h.size(), 2u);
  AdvanceVersionHistory(h, "4.20.1", "error", "t4");  // the old version keeps running
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(GetString(h[0].as_object(), "version"), "4.19.2");
  AdvanceVersionHistory(h, "4.20.1", "error", "t5");  // nothing Partial left to remove
  EXPECT_EQ(h.size(), 1u);
  AdvanceVersionHistory(h, "4.20.1", "ready", "t6");  // ready without a Partial entry: Completed at once
  EXPECT_EQ(
      h[0].as_object(),
      (json::object{
          {"version", "4.20.1"}, {"state", "Completed"}, {"started_time", "t6"}, {"completion_time", "t6"}}));
  for (int z = 2; z < 20; ++z) AdvanceVersionHistory(h, "4.20." + std::to_string(z), "ready", "t");
  EXPECT_EQ(h.size(), kMaxVersionHistory);
  EXPECT_EQ(GetString(h[0].as_object(), "version"), "4.20.19");
}

// A minor resolves as the resource provider's version selection picks: the newest enabled z-stream of the
// group, in the stable group the one before it.
TEST(VersionHistoryTest, ResolvesMinorsAsTheVersionSelectionPicks) {
  const VersionCatalogue& cat = VersionCatalogue::BuiltIn();
  auto id = [&](std::string_view v, std::string_view g) {
    const CatalogueVersion* r = ResolveVersion(cat, v, g);
    return r ? r->id() : std::string("none");
  };
  EXPECT_EQ(id("openshift-v4.21", ""), "openshift-v4.21.2");
  EXPECT_EQ(id("openshift-v4.21", "stable"), "openshift-v4.21.2");
  EXPECT_EQ(id("openshift-v4.21", "fast"), "openshift-v4.21.5-fast");
  EXPECT_EQ(id("4.21", "candidate"), "openshift-v4.21.5-candidate");
  EXPECT_EQ(id("openshift-v4.20.8-fast", ""), "openshift-v4.20.8-fast");
  EXPECT_EQ(id("openshift-v4.20.8", "stable"), "openshift-v4.20.8");
  EXPECT_EQ(id("openshift-v4.18.1", ""), "none");  // disabled
  EXPECT_EQ(id("openshift-v4.17", ""), "none");
  json::object o{
      {"status", json::object{{"version_history",
                               json::array{json::object{{"version", "4.20.1"}, {"state", "Partial"}},
                                           json::object{{"version", "4.19.2"}, {"state", "Completed"}}}}}}};
  EXPECT_EQ(RunningVersion(o), "4.19.2");
  EXPECT_EQ(RunningVersion(json::object{}), "");
}

TEST(TimedProvisionerTest, UpgradeTimesFollowTheProfileAndGrowWithReplicas) {
  TimedProvisioner instant(Timing{Profile::kInstant, 1.0}, 1);
  EXPECT_EQ(instant.ControlPlaneUpgradeTime(), Duration::zero());
  TimedProvisioner demo(Timing{Profile::kDemo, 1.0}, 1);
  EXPECT_EQ(demo.ControlPlaneUpgradeTime(), std::chrono::seconds(4));
  EXPECT_EQ(demo.NodePoolUpgradeTime(3), std::chrono::seconds(6));
  EXPECT_EQ(demo.NodePoolUpgradeTime(0), Duration::zero());
  TimedProvisioner real(Timing{Profile::kRealistic, 1.0}, 1);
  std::vector<Duration> cp;
  for (int i = 0; i < 200; ++i) cp.push_back(real.ControlPlaneUpgradeTime());
  std::sort(cp.begin(), cp.end());
  EXPECT_GT(cp[100], std::chrono::minutes(20));
  EXPECT_LT(cp[100], std::chrono::minutes(30));
  EXPECT_LT(cp[190], std::chrono::minutes(60));
  EXPECT_GT(real.NodePoolUpgradeTime(10), std::chrono::minutes(40));
  EXPECT_LT(real.NodePoolUpgradeTime(10), std::chrono::minutes(90));
  TimedProvisioner scaled(Timing{Profile::kDemo, 0.5}, 1);
  EXPECT_EQ(scaled.NodePoolUpgradeTime(2), std::chrono::seconds(2));
  EXPECT_EQ(NodePoolReplicas(json::object{{"replicas", 3}}), 3);
  EXPECT_EQ(
      NodePoolReplicas(json::object{{"replicas", 3}, {"autoscaling", json::object{{"min_replica", 5}}}}), 5);
  EXPECT_EQ(NodePoolReplicas(json::object{{"replicas", -2}}), 0);
}

// Through a real socket, with the system clock.
TEST(SimulatorHttp, ServesOverHttp) {
  SimulatorOptions o;
  o.profile = Profile::kInstant;
  o.max_body_bytes = 1024;
  auto sim = Simulator::Start(o);
  ASSERT_TRUE(sim.ok()) << sim.error().ToString();
  ASSERT_NE((*sim)->port(), 0);
  EXPECT_EQ((*sim)->base_url(), "http://127.0.0.1:" + std::to_string((*sim)->port()));
  http::Client client;
  http::Endpoint ep{"127.0.0.1", (*sim)->port()};
  auto res = client.Send(ep, http::MakeRequest(Verb::post, kBase + "/clusters", ClusterBody("c1")), 2s);
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->result_int(), 201u);
  auto href = std::string(*GetString(ParseJson(res->body())->as_object(), "href"));
  // Wait for "ready" through the event stream.
  uint64_t after = 0;
  std::string state;
  for (int i = 0; i < 20 && state != "ready"; ++i) {
    auto ev = client.Send(
        ep, http::MakeRequest(Verb::get, kBase + "/events?timeout=2000&after=" + std::to_string(after)), 5s);
    ASSERT_TRUE(ev.ok());
    auto page = ParseJson(ev->body())->as_object();
    after = static_cast<uint64_t>(*GetInt(page, "last_sequence"));
    for (const auto& e : *GetArray(page, "items")) state = std::string(*GetString(e.as_object(), "state"));
  }
  EXPECT_EQ(state, "ready");
  auto big = client.Send(ep, http::MakeRequest(Verb::post, kBase + "/clusters", std::string(4096, ' ')), 2s);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->result_int(), 413u);
  EXPECT_EQ(*GetString(ParseJson(big->body())->as_object(), "code"), "CLUSTERS-MGMT-413");
  (*sim)->Stop();
}

TEST(SimulatorFlags, ParseProfileAndTimeScale) {
  SimulatorOptions o;
  EXPECT_TRUE(ApplyProfileFlag(o, "realistic").ok());
  EXPECT_EQ(o.profile, Profile::kRealistic);
  EXPECT_FALSE(ApplyProfileFlag(o, "fast").ok());
  EXPECT_TRUE(ApplyTimeScaleFlag(o, "0.05").ok());
  EXPECT_DOUBLE_EQ(o.time_scale, 0.05);
  EXPECT_FALSE(ApplyTimeScaleFlag(o, "-1").ok());
  EXPECT_FALSE(ApplyTimeScaleFlag(o, "abc").ok());
}

}  // namespace
}  // namespace hcprp::simulator

namespace hcprp::simulator {
namespace {

// A store that fails its commits on demand (the leveldb FaultInjectionTestEnv pattern).
class FailingStore final : public StateStore {
 public:
  Result<Snapshot> Load() override { return Snapshot{}; }
  Status Commit(const Documents&, const std::vector<std::string>&, uint64_t, const Documents&) override {
    if (fail) return Error::IoError("disk full");
    ++commits;
    return Status::Ok();
  }
  bool fail = false;
  int commits = 0;
};

TEST(SimulatorService, FailedCommitChangesNothing) {
  FakeClock clock;
  TimedProvisioner prov(Timing{Profile::kDemo, 1.0}, 1);
  FailingStore store;
  Scheduler scheduler(&clock);
  ServiceOptions o;
  o.clock = &clock;
  o.provisioner = &prov;
  o.store = &store;
  o.scheduler = &scheduler;
  auto svc = Service::Open(o);
  ASSERT_TRUE(svc.ok());
  auto post = [&](const std::string& name) {
    return (*svc)->Handle(http::MakeRequest(Verb::post, kBase + "/clusters", ClusterBody(name)));
  };
  store.fail = true;
  EXPECT_EQ(post("c1").result_int(), 500u);
  EXPECT_EQ((*svc)->object_count(), 0u);
  EXPECT_EQ((*svc)->last_sequence(), 0u);
  EXPECT_EQ(scheduler.pending(), 0u);
  store.fail = false;
  auto ok = post("c1");
  ASSERT_EQ(ok.result_int(), 201u);
  const std::string href(*GetString(ParseJson(ok.body())->as_object(), "href"));
  EXPECT_EQ((*svc)->last_sequence(), 1u);
  // A transition that cannot be persisted is retried later, not lost.
  store.fail = true;
  clock.Advance(1s);
  scheduler.RunDue();
  auto st = (*svc)->Handle(http::MakeRequest(Verb::get, href + "/status"));
  EXPECT_EQ(*GetString(ParseJson(st.body())->as_object(), "state"), "validating");
  store.fail = false;
  clock.Advance(1s);
  scheduler.RunDue();
  st = (*svc)->Handle(http::MakeRequest(Verb::get, href + "/status"));
  EXPECT_EQ(*GetString(ParseJson(st.body())->as_object(), "state"), "installing");  // caught up
  (*svc)->Shutdown();
}

// A plugged-in engine that rests every object and lets the test drive it through the host.
class RestingEngine final : public PluggedProvisioner, public Provisioner {
 public:
  explicit RestingEngine(std::vector<std::string>* log) : log_(log) {}
  ~RestingEngine() override { log_->push_back("destroyed"); }
  Provisioner* provisioner() override { return this; }
  void Start(EngineHost* h) override {
    host = h;
    log_->push_back("start");
  }
  void Stop() override { log_->push_back("stop"); }
  std::optional<http::Response> Handle(const http::Request& r) override {
    if (r.target() != "/control/engine") return std::nullopt;
    return http::JsonResponse(http::StatusCode::ok, R"({"engine":true})");
  }
  std::optional<Step> Next(const ObjectInfo&) override { return std::nullopt; }
  Duration CredentialIssueTime() override { return std::chrono::seconds(1); }
  Duration RevocationTime() override { return std::chrono::seconds(1); }

  EngineHost* host = nullptr;

 private:
  std::vector<std::string>* log_;
};

TEST(SimulatorEngineTest, PluggedEngineDrivesStatesAndKeepsConditions) {
  FakeClock clock;
  std::vector<std::string> log;
  RestingEngine* engine = nullptr;
  SimulatorOptions o;
  o.serve_http = false;
  o.clock = &clock;
  o.provisioner_factory = [&](const ProvisionerContext& ctx) -> Result<std::unique_ptr<PluggedProvisioner>> {
    EXPECT_EQ(ctx.clock, &clock);
    auto e = std::make_unique<RestingEngine>(&log);
    engine = e.get();
    return std::unique_ptr<PluggedProvisioner>(std::move(e));
  };
  o.extra_handler = [](const http::Request& r) -> std::optional<http::Response> {
    if (r.target() != "/control/extra") return std::nullopt;
    return http::JsonResponse(http::StatusCode::ok, R"({"extra":true})");
  };
  auto s = Simulator::Start(o);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  std::unique_ptr<Simulator> sim = std::move(*s);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(engine->host, nullptr);
  EXPECT_EQ(Call(*sim, Verb::get, "/control/engine").status, 200u);
  EXPECT_EQ(Call(*sim, Verb::get, "/control/extra").status, 200u);

  auto created = Call(*sim, Verb::post, kBase + "/clusters", ClusterBody("e1"));
  ASSERT_EQ(created.status, 201u);
  const std::string href = created.str("href");
  clock.Advance(std::chrono::minutes(5));
  sim->RunDueForTest();
  EXPECT_EQ(Call(*sim, Verb::get, href).state(), "validating");  // the engine rests it

  json::array conds{json::object{{"type", "AzureIdentityValid"}, {"status", "True"}}};
  const uint64_t before =
      *GetInt(Call(*sim, Verb::get, kBase + "/events?after=latest").obj(), "last_sequence");
  ASSERT_TRUE(engine->host->SetStatusFields(href, json::object{{"conditions", conds}}).ok());
  // The same fields again change nothing and announce nothing.
  ASSERT_TRUE(engine->host->SetStatusFields(href, json::object{{"conditions", conds}}).ok());
  auto events = Call(*sim, Verb::get, kBase + "/events?after=" + std::to_string(before));
  ASSERT_EQ(GetArray(events.obj(), "items")->size(), 1u);
  EXPECT_FALSE(engine->host->SetStatusFields(href, json::object{{"state", "ready"}}).ok());
  EXPECT_TRUE(engine->host->SetStatusFields(kBase + "/clusters/nope", json::object{{"conditions", conds}})
                  .error()
                  .IsNotFound());

  ASSERT_TRUE(engine->host->Transition(href, "ready", "", "").ok());
  auto got = Call(*sim, Verb::get, href);
  EXPECT_EQ(got.state(), "ready");
  const json::object* st = GetObject(got.obj(), "status");
  ASSERT_NE(st, nullptr);
  ASSERT_NE(GetArray(*st, "conditions"), nullptr);
  EXPECT_EQ(*GetArray(*st, "conditions"), conds);  // kept across the state change

  sim->Stop();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1], "stop");  // stopped by Stop(), destroyed only with the simulator
  sim.reset();
  EXPECT_EQ(log.back(), "destroyed");
}

}  // namespace
}  // namespace hcprp::simulator
