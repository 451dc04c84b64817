// The admin listener's handler against a frontend scenario (in-memory SQLite, fake Cluster Service)
// and a backend on the same store: authentication, metrics, the admin API's listings and actions,
// and the console's live model.
#include "admin/admin_api.h"

#include <gtest/gtest.h>

#include <thread>

#include "clusterservice/testing/fake_cluster_service.h"
#include "frontend/testing/scenario.h"
#include "http/url.h"

namespace hcprp::admin {
namespace {

using frontend::testing::ClusterBody;
using frontend::testing::ClusterPath;
using frontend::testing::kStable;
using frontend::testing::kSub;
using frontend::testing::OperationIdOf;
using namespace std::chrono_literals;

const std::string kToken = "0123456789abcdef0123456789abcdef";

class AdminTest : public ::testing::Test {
 protected:
  AdminTest() : scenario_(FrontendOptionsWithMetrics()), backend_cs_(&scenario_.clock) {
    backend::BackendOptions bo;
    bo.owner = "be-test";
    bo.gc_window = 1h;
    bo.metrics = &registry_;
    auto b = backend::Backend::Create(bo, scenario_.store.get(), &backend_cs_, &scenario_.clock,
                                      Logger(scenario_.log, &scenario_.clock, LogLevel::kDebug, "backend"),
                                      nullptr);
    EXPECT_TRUE(b.ok());
    backend_ = std::move(b).value();
    EXPECT_TRUE(backend_->ReconcileOnce().ok());  // takes the shard leases
    LiveViewOptions lo;
    lo.metrics = &registry_;
    lo.operation_metrics = true;
    lo.start_thread = false;
    auto live = LiveView::Start(lo, scenario_.store.get(), &scenario_.clock,
                                Logger(scenario_.log, &scenario_.clock, LogLevel::kDebug, "console"));
    EXPECT_TRUE(live.ok());
    live_ = std::move(live).value();
    AdminOptions ao;
    ao.token = kToken;
    ao.metrics = &registry_;
    ao.store = scenario_.store.get();
    ao.backend = backend_.get();
    ao.live = live_.get();
    ao.console_dir = HCPRP_CONSOLE_DIR;
    ao.event_wait = 5s;
    api_ = std::make_unique<AdminApi>(ao, &scenario_.clock,
                                      Logger(scenario_.log, &scenario_.clock, LogLevel::kDebug, "admin"));
    scenario_.RegisterSubscription();
  }

  frontend::FrontendOptions FrontendOptionsWithMetrics() {
    frontend::FrontendOptions o;
    o.metrics = &registry_;
    return o;
  }

  http::Response Call(http::Verb method, const std::string& target, std::string body = "",
                      bool authorized = true) {
    http::Request r = http::MakeRequest(method, target, std::move(body));
    if (authorized) r.set(http::Field::authorization, "Bearer " + kToken);
    return api_->Handle(std::move(r));
  }
  json::value Body(const http::Response& r) {
    auto v = ParseJson(r.body());
    EXPECT_TRUE(v.ok()) << r.body();
    return v.ok() ? *v : json::value();
  }

  // Creates cluster `name` through the ARM frontend; returns its operation id.
  std::string CreateCluster(const std::string& name) {
    auto r = scenario_.Put(ClusterPath(name) + "?api-version=" + std::string(kStable), ClusterBody());
    EXPECT_EQ(r.result_int(), 201) << r.body();
    return OperationIdOf(std::string(r["Azure-AsyncOperation"]));
  }

  metrics::Registry registry_;  // before the parts that record into it
  frontend::testing::Scenario scenario_;
  clusterservice::testing::FakeClusterService backend_cs_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<LiveView> live_;
  std::unique_ptr<AdminApi> api_;
};

TEST_F(AdminTest, AdminApiRefusesRequestsWithoutTheToken) {
  for (const char* target : {"/admin/operations", "/admin/orphans", "/admin/console/summary"}) {
    auto r = Call(http::Verb::get, target, "", false);
    EXPECT_EQ(r.result_int(), 401) << target;
    EXPECT_EQ(Body(r).at("error").at("code"), "AuthenticationFailed");
    EXPECT_NE(r[http::Field::www_authenticate], "");
  }
  http::Request wrong = http::MakeRequest(http::Verb::get, "/admin/operations");
  wrong.set(http::Field::authorization, "Bearer " + kToken.substr(1) + "x");
  EXPECT_EQ(api_->Handle(std::move(wrong)).result_int(), 401);
  http::Request lower_case = http::MakeRequest(http::Verb::get, "/admin/operations");
  lower_case.set(http::Field::authorization, "bearer " + kToken);  // RFC 9110: the scheme ignores case
  EXPECT_EQ(api_->Handle(std::move(lower_case)).result_int(), 200);
  // The token itself is no cookie.
  http::Request cookie = http::MakeRequest(http::Verb::get, "/admin/operations");
  cookie.set(http::Field::cookie, "other=1; hcprp_session=" + kToken);
  EXPECT_EQ(api_->Handle(std::move(cookie)).result_int(), 401);
  EXPECT_EQ(api_->Screen(http::MakeRequest(http::Verb::post, "/admin/orphans"))->result_int(), 401);
  EXPECT_FALSE(api_->Screen(http::MakeRequest(http::Verb::get, "/metrics")).has_value());
}

// The console's session cookie: a separate value, and from another origin it reaches nothing.
TEST_F(AdminTest, SessionCookieIsNotTheTokenAndServesOnlyTheConsolesOrigin) {
  auto r = Call(http::Verb::get, "/console/?token=" + kToken, "", false);
  ASSERT_EQ(r.result_int(), 303);
  std::string set_cookie(r[http::Field::set_cookie]);
  EXPECT_EQ(set_cookie.find(kToken), std::string::npos) << set_cookie;
  for (const char* attribute : {"HttpOnly", "SameSite=Strict", "Path=/"}) {
    EXPECT_NE(set_cookie.find(attribute), std::string::npos) << set_cookie;
  }
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  ASSERT_EQ(cookie.rfind("hcprp_session=", 0), 0u) << cookie;
  auto with_cookie = [&](http::Verb method, const std::string& target,
                         std::vector<std::pair<std::string, std::string>> headers) {
    http::Request req =
        http::MakeRequest(method, target, method == http::Verb::post ? R"({"reason":"x"})" : "");
    req.set(http::Field::host, "127.0.0.1:9000");
    req.set(http::Field::cookie, cookie);
    for (const auto& [k, v] : headers) req.set(k, v);
    return api_->Handle(std::move(req)).result_int();
  };
  // The console's own requests.
  EXPECT_EQ(with_cookie(http::Verb::get, "/admin/console/summary", {}), 200);
  EXPECT_EQ(with_cookie(http::Verb::get, "/admin/console/summary",
                        {{"Origin", "http://127.0.0.1:9000"}, {"Sec-Fetch-Site", "same-origin"}}),
            200);
  EXPECT_EQ(with_cookie(http::Verb::post, "/admin/operations/s/op/redrive",
                        {{"Origin", "http://127.0.0.1:9000"}, {"X-HCPRP-Console", "1"}}),
            404);  // through to the handler: no such operation
  // Another page on 127.0.0.1 (another port: the same site for the browser).
  EXPECT_EQ(
      with_cookie(http::Verb::post, "/admin/operations/s/op/fail", {{"Origin", "http://127.0.0.1:8000"}}),
      403);
  EXPECT_EQ(with_cookie(http::Verb::post, "/admin/operations/s/op/fail",
                        {{"Origin", "http://127.0.0.1:8000"}, {"X-HCPRP-Console", "1"}}),
            403);
  EXPECT_EQ(with_cookie(http::Verb::get, "/admin/console/summary", {{"Sec-Fetch-Site", "same-site"}}), 403);
  // A form post carries no custom header: refused even without Origin.
  EXPECT_EQ(with_cookie(http::Verb::post, "/admin/operations/s/op/fail", {}), 403);
}

TEST_F(AdminTest, MetricsNeedTheTokenWhereOthersCanReachTheListener) {
  AdminOptions ao;
  ao.token = kToken;
  ao.metrics = &registry_;
  ao.metrics_need_token = true;
  AdminApi open_to_network(ao, &scenario_.clock,
                           Logger(scenario_.log, &scenario_.clock, LogLevel::kDebug, "admin"));
  EXPECT_EQ(open_to_network.Handle(http::MakeRequest(http::Verb::get, "/metrics")).result_int(), 401);
  http::Request with_token = http::MakeRequest(http::Verb::get, "/metrics");
  with_token.set(http::Field::authorization, "Bearer " + kToken);
  EXPECT_EQ(open_to_network.Handle(std::move(with_token)).result_int(), 200);
  EXPECT_EQ(Call(http::Verb::get, "/metrics", "", false).result_int(), 200);  // loopback: open
}

TEST_F(AdminTest, ConsoleLinkTradesTheTokenForACookie) {
  auto r = Call(http::Verb::get, "/console/?token=" + kToken, "", false);
  EXPECT_EQ(r.result_int(), 303);
  EXPECT_NE(std::string(r[http::Field::set_cookie]).find("hcprp_session="), std::string::npos);
  EXPECT_NE(std::string(r[http::Field::set_cookie]).find("HttpOnly"), std::string::npos);
  EXPECT_EQ(Call(http::Verb::get, "/console/?token=nope", "", false).result_int(), 401);
  auto page = Call(http::Verb::get, "/console/", "", false);
  EXPECT_EQ(page.result_int(), 200);
  EXPECT_NE(page.body().find("<html"), std::string::npos);
  EXPECT_EQ(Call(http::Verb::get, "/console/..%2fREADME.md", "", false).result_int(), 404);
}

TEST_F(AdminTest, MetricsCountFrontendRequestsByRouteTemplate) {
  CreateCluster("c1");
  scenario_.Get(ClusterPath("c1") + "?api-version=" + std::string(kStable));
  scenario_.Get(ClusterPath("c1") + "?api-version=1999-01-01");
  auto r = Call(http::Verb::get, "/metrics", "", false);
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(r[http::Field::content_type], metrics::kContentType);
  const std::string& text = r.body();
  const std::string route =
      "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/"
      "Microsoft.RedHatOpenShift/"
      "hcpOpenShiftClusters/{hcpOpenShiftClusterName}";
  EXPECT_NE(text.find("hcprp_frontend_requests_total{route=\"" + route +
                      "\",method=\"PUT\",api_version=\"2026-10-01\",code=\"201\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hcprp_frontend_requests_total{route=\"" + route +
                      "\",method=\"GET\",api_version=\"unsupported\",code=\"400\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(text.find("c1"), std::string::npos) << "a resource name leaked into a label";
  EXPECT_NE(text.find("hcprp_backend_shards_held 8\n"), std::string::npos);
  EXPECT_NE(text.find("hcprp_frontend_requests_in_flight 0\n"), std::string::npos);
}

TEST_F(AdminTest, ListsNonTerminalOperationsWithFilters) {
  std::string op1 = CreateCluster("c1");
  scenario_.clock.Advance(120s);
  std::string op2 = CreateCluster("c2");
  auto all = Body(Call(http::Verb::get, "/admin/operations"));
  EXPECT_EQ(all.at("value").as_array().size(), 2u);
  auto old = Body(Call(http::Verb::get, "/admin/operations?min_age_seconds=60"));
  ASSERT_EQ(old.at("value").as_array().size(), 1u);
  EXPECT_EQ(old.at("value").at(0).at("id").as_string(), op1);
  EXPECT_EQ(old.at("value").at(0).at("request"), "Create");
  auto by_sub =
      Body(Call(http::Verb::get, "/admin/operations?subscription=" + std::string(kSub) + "&state=Accepted"));
  EXPECT_EQ(by_sub.at("value").as_array().size(), 2u);
  auto other =
      Body(Call(http::Verb::get, "/admin/operations?subscription=00000000-0000-4000-8000-000000000000"));
  EXPECT_EQ(other.at("value").as_array().size(), 0u);
  auto none = Body(Call(http::Verb::get, "/admin/operations?state=Deleting"));
  EXPECT_EQ(none.at("value").as_array().size(), 0u);
  EXPECT_EQ(Call(http::Verb::get, "/admin/operations?min_age_seconds=abc").result_int(), 400);
  (void)op2;
}

TEST_F(AdminTest, ShowsAResourcesDocumentsAndOperations) {
  std::string op = CreateCluster("c1");
  const std::string id = ClusterPath("c1");
  auto r = Call(http::Verb::get, "/admin/resources?id=" + http::EncodeQueryComponent(id));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto b = Body(r);
  ASSERT_EQ(b.at("documents").as_array().size(), 1u);
  EXPECT_EQ(b.at("documents").at(0).at("body").at("properties").at("activeOperationId").as_string(), op);
  ASSERT_EQ(b.at("operations").as_array().size(), 1u);
  EXPECT_EQ(b.at("operations").at(0).at("id").as_string(), op);
  EXPECT_EQ(Call(http::Verb::get, "/admin/resources?id=" + http::EncodeQueryComponent(ClusterPath("nope")))
                .result_int(),
            404);
  EXPECT_EQ(Call(http::Verb::get, "/admin/resources?id=nonsense").result_int(), 400);
}

TEST_F(AdminTest, FailsAStuckOperationWithTheReasonAuditedInTheLogAndTheError) {
  std::string op = CreateCluster("c1");
  EXPECT_EQ(Call(http::Verb::post, "/admin/operations/" + std::string(kSub) + "/" + op + "/fail", "{}")
                .result_int(),
            400);
  auto r = Call(http::Verb::post, "/admin/operations/" + std::string(kSub) + "/" + op + "/fail",
                R"({"reason":"INC-42: stuck on a wedged Cluster Service"})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto doc = scenario_.Operation(op);
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->status, "Failed");
  ASSERT_TRUE(doc->error.has_value());
  EXPECT_NE(doc->error->message.find("INC-42: stuck on a wedged Cluster Service"), std::string::npos);
  auto res = scenario_.Resource(ClusterPath("c1"));
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->provisioning_state, "Failed");
  EXPECT_FALSE(res->active_operation_id.has_value());
  bool audited = false;
  for (const auto& line : scenario_.log->LinesForTest()) {
    if (line.find("admin: operation failed") != std::string::npos && line.find("INC-42") != std::string::npos)
      audited = true;
  }
  EXPECT_TRUE(audited);
  // A terminal operation never changes.
  auto again = Call(http::Verb::post, "/admin/operations/" + std::string(kSub) + "/" + op + "/fail",
                    R"({"reason":"again"})");
  EXPECT_EQ(again.result_int(), 409);
  EXPECT_EQ(
      Call(http::Verb::post, "/admin/operations/" + std::string(kSub) + "/missing/fail", R"({"reason":"x"})")
          .result_int(),
      404);
}

TEST_F(AdminTest, RedrivesAnOperationNow) {
  std::string op = CreateCluster("c1");
  auto r = Call(http::Verb::post, "/admin/operations/" + std::string(kSub) + "/" + op + "/redrive");
  ASSERT_EQ(r.result_int(), 202) << r.body();
  EXPECT_EQ(backend_->Stats().checks_queued, 1u);
  EXPECT_EQ(
      Call(http::Verb::get, "/admin/operations/" + std::string(kSub) + "/" + op + "/redrive").result_int(),
      405);
}

TEST_F(AdminTest, ActionsNeedABackendInTheProcess) {
  AdminOptions ao;
  ao.token = kToken;
  ao.metrics = &registry_;
  ao.store = scenario_.store.get();
  AdminApi frontend_only(ao, &scenario_.clock,
                         Logger(scenario_.log, &scenario_.clock, LogLevel::kDebug, "admin"));
  std::string op = CreateCluster("c1");
  for (const std::string& target :
       {"/admin/operations/" + std::string(kSub) + "/" + op + "/redrive", std::string("/admin/orphans")}) {
    http::Request r =
        http::MakeRequest(target.ends_with("orphans") ? http::Verb::get : http::Verb::post, target);
    r.set(http::Field::authorization, "Bearer " + kToken);
    auto res = frontend_only.Handle(std::move(r));
    EXPECT_EQ(res.result_int(), 409) << target;
    EXPECT_EQ(Body(res).at("error").at("code"), "NoBackend");
  }
  http::Request console = http::MakeRequest(http::Verb::get, "/admin/console/summary");
  console.set(http::Field::authorization, "Bearer " + kToken);
  EXPECT_EQ(frontend_only.Handle(std::move(console)).result_int(), 404);
  // The store endpoints work without a backend.
  http::Request list = http::MakeRequest(http::Verb::get, "/admin/operations");
  list.set(http::Field::authorization, "Bearer " + kToken);
  EXPECT_EQ(frontend_only.Handle(std::move(list)).result_int(), 200);
}

TEST_F(AdminTest, ListsOrphansAndWhatTheCollectorWouldDo) {
  const std::string clusters = std::string(clusterservice::kApiPrefix) + "/clusters";
  std::string href = backend_cs_.AddObject(clusters, "ready");
  auto first = Body(Call(http::Verb::get, "/admin/orphans"));
  EXPECT_EQ(first.at("coordinator"), true);
  ASSERT_EQ(first.at("value").as_array().size(), 1u);
  EXPECT_EQ(first.at("value").at(0).at("internalId").as_string(), href);
  EXPECT_EQ(first.at("value").at(0).at("action"), "wait");
  scenario_.clock.Advance(2h);
  auto later = Body(Call(http::Verb::get, "/admin/orphans"));
  EXPECT_EQ(later.at("value").at(0).at("action"), "delete");
  EXPECT_TRUE(backend_cs_.Exists(href)) << "a plan deletes nothing";
}

TEST_F(AdminTest, ConsoleModelFollowsTheChangeFeedWithOneReaderForEveryViewer) {
  ASSERT_TRUE(live_->PumpOnce().ok());  // the subscription's registration: event 1
  auto summary = Body(Call(http::Verb::get, "/admin/console/summary"));
  EXPECT_EQ(summary.at("subscriptions"), 1);
  EXPECT_EQ(summary.at("lastEvent"), 1);
  auto position = Call(http::Verb::get, "/admin/console/events");
  EXPECT_EQ(position[http::Field::content_type], "text/event-stream");
  EXPECT_NE(position.body().find("id: 1\n"), std::string::npos) << position.body();

  // Ten viewers wait for the next event; one feed read serves them all.
  std::vector<std::thread> viewers;
  std::atomic<int> saw_cluster{0};
  for (int i = 0; i < 10; ++i) {
    viewers.emplace_back([&] {
      http::Request r = http::MakeRequest(http::Verb::get, "/admin/console/events");
      r.set(http::Field::authorization, "Bearer " + kToken);
      r.set("Last-Event-ID", "1");
      auto res = api_->Handle(std::move(r));
      if (res.body().find("hcpOpenShiftClusters/c1") != std::string::npos) ++saw_cluster;
    });
  }
  std::this_thread::sleep_for(100ms);
  std::string op = CreateCluster("c1");
  const uint64_t calls_before = live_->store_calls();
  ASSERT_TRUE(live_->PumpOnce().ok());
  for (auto& t : viewers) t.join();
  EXPECT_EQ(saw_cluster, 10);
  EXPECT_EQ(live_->store_calls() - calls_before, 1u) << "one read of the change feed for ten viewers";

  auto resources = Body(Call(http::Verb::get, "/admin/console/resources?q=C1&type=cluster"));
  ASSERT_EQ(resources.at("total"), 1);
  EXPECT_EQ(resources.at("items").at(0).at("provisioningState"), "Accepted");
  EXPECT_EQ(Body(Call(http::Verb::get, "/admin/console/resources?q=zzz")).at("total"), 0);
  auto ops = Body(Call(http::Verb::get, "/admin/console/operations?inflight=1"));
  ASSERT_EQ(ops.at("total"), 1);

  scenario_.clock.Advance(5s);
  scenario_.FinishOperation(op, "Succeeded");
  ASSERT_TRUE(live_->PumpOnce().ok());
  auto one = Body(Call(http::Verb::get, "/admin/console/operations/" + std::string(kSub) + "/" + op));
  const auto& timeline = one.at("timeline").as_array();
  ASSERT_EQ(timeline.size(), 2u) << one;
  EXPECT_EQ(timeline.at(0).at("status"), "Accepted");
  EXPECT_EQ(timeline.at(0).at("seconds").as_double(), 5.0);
  EXPECT_EQ(timeline.at(1).at("status"), "Succeeded");
  std::string text = registry_.Expose();
  EXPECT_NE(text.find("hcprp_operations_started_total{request=\"Create\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hcprp_operations_ended_total{request=\"Create\",state=\"Succeeded\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("hcprp_operation_state_duration_seconds_count{state=\"Accepted\"} 1\n"),
            std::string::npos);
}

TEST_F(AdminTest, ConsoleListsArePagedOverManyResources) {
  for (int i = 0; i < 120; ++i) CreateCluster("p" + std::to_string(1000 + i));
  ASSERT_TRUE(live_->PumpOnce().ok());
  auto page = Body(Call(http::Verb::get, "/admin/console/resources?offset=100&limit=50"));
  EXPECT_EQ(page.at("total"), 120);
  EXPECT_EQ(page.at("items").as_array().size(), 20u);
  auto found = Body(Call(http::Verb::get, "/admin/console/resources?q=p1117"));
  EXPECT_EQ(found.at("total"), 1);
}

}  // namespace
}  // namespace hcprp::admin
