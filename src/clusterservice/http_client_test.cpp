#include <gtest/gtest.h>

#include "clusterservice/convert.h"
#include "clusterservice/http_client.h"
#include "http/client.h"
#include "http/server.h"
#include "simulator/simulator.h"

namespace hcprp::clusterservice {
namespace {

using namespace std::chrono_literals;

const std::string kClusters = "/api/aro_hcp/v1alpha1/clusters";
const std::string kClusterId =
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/"
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/";

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    simulator::SimulatorOptions o;
    o.profile = simulator::Profile::kInstant;
    auto s = simulator::Simulator::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    sim_ = std::move(*s);
    client_ = NewClient(sim_->base_url());
  }

  std::unique_ptr<HttpClient> NewClient(const std::string& url, int attempts = 4,
                                        std::chrono::milliseconds timeout = 5s) {
    HttpClientOptions co;
    co.base_url = url;
    co.timeout = timeout;
    co.retry.max_attempts = attempts;
    co.retry.sleep = [](std::chrono::milliseconds) {};  // no waiting in tests
    co.page_size = 2;
    auto c = HttpClient::Create(co);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  json::object ClusterBody(const std::string& name) {
    auto props = ParseJson(R"({"version":{"id":"4.19","channelGroup":"stable"},
                               "network":{"hostPrefix":23},"api":{"visibility":"Public"}})");
    auto cs = ClusterToCs(props->as_object(), AzureContext{kClusterId + name, "eastus", "t", {}});
    EXPECT_TRUE(cs.ok());
    return *cs;
  }

  void Control(http::Verb verb, const std::string& path, const std::string& body) {
    http::Client c;
    auto res = c.Send(http::MakeRequest(verb, sim_->base_url() + path, body), 2s);
    ASSERT_TRUE(res.ok());
    ASSERT_LT(res->result_int(), 300u) << res->body();
  }

  // Waits through the event stream until `href` reaches `state`.
  void WaitForState(const std::string& href, const std::string& state) {
    uint64_t after = 0;
    for (int i = 0; i < 50; ++i) {
      if (href.find("/break_glass_credentials/") != std::string::npos) {
        auto c = client_->Get(href);
        if (c.ok() && GetString(*c, "status") == state) return;
      } else {
        auto st = client_->GetStatus(href);
        if (st.ok() && ParseCsStatus(*st).state == state) return;
      }
      auto page = client_->WatchEvents(after, 1000ms);
      ASSERT_TRUE(page.ok()) << page.error().ToString();
      after = page->last_sequence;
    }
    FAIL() << href << " never reached " << state;
  }

  std::unique_ptr<simulator::Simulator> sim_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(HttpClientTest, ClusterLifecycle) {
  auto created = client_->Create(kClusters, ClusterBody("c1"), "op-1");
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  const std::string href(*GetString(*created, "href"));
  EXPECT_EQ(href.rfind(kClusters + "/", 0), 0u);
  EXPECT_EQ(*GetString(*created, "name"), "c1");
  WaitForState(href, "ready");
  auto got = client_->Get(href);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(ClusterReadOnlyFromCs(*got).empty());
  auto st = client_->GetStatus(href);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(ParseCsStatus(*st).state, "ready");

  auto patch = ClusterPatchToCs(ParseJson(R"({"version":{"id":"4.20"}})")->as_object());
  auto updated = client_->Update(href, *patch);
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  WaitForState(href, "ready");

  auto np = client_->Create(
      href + "/node_pools",
      *NodePoolToCs(ParseJson(R"({"replicas":2,"platform":{"vmSize":"Standard_D8s_v3"}})")->as_object(),
                    AzureContext{kClusterId + "c1/nodePools/np1", "", "", {}}),
      "op-2");
  ASSERT_TRUE(np.ok()) << np.error().ToString();
  auto pools = client_->List(href + "/node_pools");
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->size(), 1u);

  auto cred = client_->Action(href, "request_admin_credential", {});
  ASSERT_TRUE(cred.ok()) << cred.error().ToString();
  const std::string cred_href(*GetString(*cred, "href"));
  WaitForState(cred_href, "issued");
  auto issued = client_->Get(cred_href);
  ASSERT_TRUE(issued.ok());
  EXPECT_TRUE(GetString(*issued, "kubeconfig"));
  auto rev = client_->Action(href, "revoke_credentials", {});
  ASSERT_TRUE(rev.ok());
  EXPECT_EQ(*GetString(*rev, "state"), "revoking");
  auto creds = client_->List(href + "/break_glass_credentials");
  ASSERT_TRUE(creds.ok());
  ASSERT_EQ(creds->size(), 1u);

  ASSERT_TRUE(client_->Delete(href).ok());
  for (int i = 0; i < 100; ++i) {
    auto g = client_->Get(href);
    if (!g.ok() && g.error().IsNotFound()) break;
    std::this_thread::sleep_for(10ms);
  }
  auto gone = client_->Get(href);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.error().IsNotFound());
  EXPECT_NE(gone.error().message().find("CLUSTERS-MGMT-404"), std::string::npos);
  auto del = client_->Delete(href);
  ASSERT_FALSE(del.ok());
  EXPECT_TRUE(del.error().IsNotFound());
}

TEST_F(HttpClientTest, ErrorMapping) {
  json::object bad{{"name", "x"}};
  auto r = client_->Create(kClusters, bad, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().Is(ErrorCode::kInvalidArgument));
  EXPECT_NE(r.error().message().find("azure.subscription_id"), std::string::npos);  // the OCM reason
  ASSERT_TRUE(client_->Create(kClusters, ClusterBody("dup"), "k1").ok());
  auto dup = client_->Create(kClusters, ClusterBody("dup"), "k2");
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(dup.error().IsConflict());
  auto search = client_->List(kClusters, "name = ");
  ASSERT_FALSE(search.ok());
  EXPECT_TRUE(search.error().Is(ErrorCode::kInvalidArgument));
}

TEST_F(HttpClientTest, ListPagesAndSearches) {
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(client_->Create(kClusters, ClusterBody("c" + std::to_string(i)), "").ok());
  auto all = client_->List(kClusters);  // page size 2: three pages
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 5u);
  auto one = client_->List(kClusters,
                           "name = 'c3' and azure.subscription_id = '00000000-0000-0000-0000-000000000001'");
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(*GetString(one->at(0).as_object(), "name"), "c3");
}

TEST_F(HttpClientTest, RetriesFiveHundreds) {
  Control(http::Verb::put, "/control/faults/http", R"({"error_count":3})");
  auto list = client_->List(kClusters);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  Control(http::Verb::put, "/control/faults/http", R"({"error_count":10})");
  auto fail = client_->List(kClusters);
  ASSERT_FALSE(fail.ok());
  EXPECT_TRUE(fail.error().Is(ErrorCode::kUnavailable));
  EXPECT_NE(fail.error().message().find("503"), std::string::npos);
}

// The first answer is lost after the cluster was created: the retry with the same key returns it.
TEST_F(HttpClientTest, RetriedPostNeverCreatesTwo) {
  Control(http::Verb::put, "/control/faults/http", R"({"error_after_count":2})");
  auto created = client_->Create(kClusters, ClusterBody("once"), "op-42");
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  Control(http::Verb::delete_, "/control/faults", "");
  auto all = client_->List(kClusters);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(*GetString(all->at(0).as_object(), "id"), *GetString(*created, "id"));
  // Without a key a POST is not retried.
  Control(http::Verb::put, "/control/faults/http", R"({"error_count":1})");
  auto unkeyed = client_->Create(kClusters, ClusterBody("twice"), "");
  ASSERT_FALSE(unkeyed.ok());
  EXPECT_TRUE(unkeyed.error().Is(ErrorCode::kUnavailable));
}

TEST_F(HttpClientTest, TimeoutsAndUnreachable) {
  auto slow = NewClient(sim_->base_url(), 1, 200ms);
  Control(http::Verb::put, "/control/faults/http", R"({"hang_fraction":1,"hang_ms":1500})");
  auto r = slow->Get(kClusters + "/x");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().Is(ErrorCode::kTimeout)) << r.error().ToString();
  Control(http::Verb::delete_, "/control/faults", "");

  uint16_t port = sim_->port();
  sim_->Stop();
  auto down = NewClient("http://127.0.0.1:" + std::to_string(port), 2);
  auto d = down->Get(kClusters);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.error().Is(ErrorCode::kUnavailable)) << d.error().ToString();
  EXPECT_FALSE(HttpClient::Create(HttpClientOptions{.base_url = "not a url"}).ok());
}

TEST_F(HttpClientTest, WatchEvents) {
  auto latest = client_->WatchEvents(kLatestEvents, 0ms);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->last_sequence, 0u);
  EXPECT_TRUE(latest->events.empty());
  auto created = client_->Create(kClusters, ClusterBody("w"), "op");
  ASSERT_TRUE(created.ok());
  const std::string href(*GetString(*created, "href"));
  std::vector<std::string> states;
  uint64_t after = 0;
  while (states.empty() || states.back() != "ready") {
    auto page = client_->WatchEvents(after, 2000ms);
    ASSERT_TRUE(page.ok()) << page.error().ToString();
    ASSERT_FALSE(page->events.empty());
    for (const auto& e : page->events) {
      EXPECT_EQ(e.href, href);
      EXPECT_EQ(e.kind, "Cluster");
      EXPECT_GT(e.sequence, after);
      EXPECT_EQ(e.object.status.state, e.state);
      states.push_back(e.state);
      after = e.sequence;
    }
    EXPECT_EQ(page->last_sequence, after);
  }
  EXPECT_EQ(states, (std::vector<std::string>{"validating", "pending", "installing", "ready"}));
  auto future = client_->WatchEvents(after + 100, 0ms);
  ASSERT_FALSE(future.ok());
  EXPECT_TRUE(future.error().IsPreconditionFailed());
}

// A page holds at most event_page_size events; last_sequence says where it ended.
TEST_F(HttpClientTest, EventPagesHoldAtMostThePageSize) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(client_->Create(kClusters, ClusterBody("p" + std::to_string(i)), "").ok());
  HttpClientOptions co;
  co.base_url = sim_->base_url();
  co.event_page_size = 2;
  auto paged = HttpClient::Create(co);
  ASSERT_TRUE(paged.ok());
  uint64_t after = 0;
  std::vector<uint64_t> sequences;
  for (int reads = 0; reads < 10; ++reads) {
    auto page = (*paged)->WatchEvents(after, 0ms);
    ASSERT_TRUE(page.ok()) << page.error().ToString();
    if (page->events.empty()) break;
    EXPECT_LE(page->events.size(), 2u);
    for (const auto& e : page->events) sequences.push_back(e.sequence);
    EXPECT_EQ(page->last_sequence, page->events.back().sequence);
    after = page->last_sequence;
  }
  ASSERT_GE(sequences.size(), 3u);  // at least each cluster's creation
  for (size_t i = 0; i < sequences.size(); ++i) EXPECT_EQ(sequences[i], i + 1);
}

TEST(HttpClientNoEvents, ServiceWithoutEventStreamIsUnavailable) {
  // Any server answering 404 for /events looks like a Cluster Service without an event stream.
  auto server = http::Server::Start({}, [](http::Request&&) {
    return http::JsonResponse(http::StatusCode::not_found, R"({"kind":"Error","reason":"no"})");
  });
  ASSERT_TRUE(server.ok());
  auto c = HttpClient::Create(
      HttpClientOptions{.base_url = "http://127.0.0.1:" + std::to_string((*server)->port())});
  ASSERT_TRUE(c.ok());
  auto w = (*c)->WatchEvents(0, 10ms);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(w.error().Is(ErrorCode::kUnavailable));
}

}  // namespace
}  // namespace hcprp::clusterservice
