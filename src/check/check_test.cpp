#include "check/check.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "arm/documents.h"
#include "arm/store_indexes.h"
#include "backend/divergence.h"
#include "backend/documents.h"
#include "core/time.h"

namespace hcprp::check {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kSub = "11111111-2222-4333-8444-555555555555";
constexpr std::string_view kClusterId =
    "/subscriptions/11111111-2222-4333-8444-555555555555/resourceGroups/rg/providers/"
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1";
constexpr std::string_view kHref = "/api/aro_hcp/v1alpha1/clusters/c1";

// A Cluster Service that serves fixed objects: Get by href (the simulator's control API included)
// and the cluster list. Nothing else is called by the check.
class FixedClusterService final : public clusterservice::Client {
 public:
  std::map<std::string, json::object> objects;
  json::array clusters;

  Result<json::object> Create(std::string_view, const json::object&, std::string_view) override {
    return Error::Internal("not used");
  }
  Result<json::object> Get(std::string_view href) override {
    auto it = objects.find(std::string(href));
    if (it == objects.end()) return Error::NotFound(std::string(href));
    return it->second;
  }
  Result<json::object> GetStatus(std::string_view) override { return Error::Internal("not used"); }
  Result<json::object> Update(std::string_view, const json::object&) override {
    return Error::Internal("not used");
  }
  Status Delete(std::string_view) override { return Error::Internal("not used"); }
  Result<json::object> Action(std::string_view, std::string_view, const json::object&) override {
    return Error::Internal("not used");
  }
  Result<json::array> List(std::string_view collection, std::string_view) override {
    if (collection == std::string(clusterservice::kApiPrefix) + "/clusters") return clusters;
    if (auto it = lists.find(std::string(collection)); it != lists.end()) return it->second;
    return json::array{};
  }
  std::map<std::string, json::array> lists;  // other collections by href
  Result<clusterservice::EventPage> WatchEvents(uint64_t, std::chrono::milliseconds) override {
    return Error::Internal("not used");
  }
};

json::object AzureResource(std::string id, bool customer) {
  return {{"id", std::move(id)}, {"customerOwned", customer}, {"provisioningState", "Succeeded"}};
}

class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.clock = &clock_;
    o.indexes = arm::StoreIndexes();
    auto s = store::OpenStore("sqlite::memory:", o);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::move(s).value();
  }

  // A cluster whose operation `status` started and last changed at `changed`; its document carries
  // Cluster Service conditions that last changed at `conditions_changed`.
  void PutCluster(arm::OperationRequest request, std::string status, TimePoint changed,
                  std::optional<TimePoint> conditions_changed) {
    arm::OperationDocument op;
    op.id = "op1";
    op.request = request;
    op.external_id = std::string(kClusterId);
    op.internal_id = std::string(kHref);
    op.location = "eastus";
    op.start_time = changed;
    op.last_transition_time = changed;
    op.status = status;
    arm::ResourceDocument r;
    r.resource_type = std::string(arm::kClusterDocType);
    r.resource_id = std::string(kClusterId);
    r.internal_id = std::string(kHref);
    r.location = "eastus";
    if (!arm::IsTerminalState(status)) r.active_operation_id = "op1";
    r.provisioning_state = status;
    if (conditions_changed) {
      r.service_status["conditions"] =
          json::array{json::object{{"type", "LoadBalancersReady"},
                                   {"status", "False"},
                                   {"reason", "Deleting"},
                                   {"lastTransitionTime", FormatRfc3339(*conditions_changed)}}};
    }
    const std::string pk = arm::PartitionKey(kSub);
    ASSERT_TRUE(store_->Upsert(store::kResources, pk, "op1", op.ToBody()).ok());
    ASSERT_TRUE(store_->Upsert(store::kResources, pk, arm::ResourceDocumentId(kClusterId), r.ToBody()).ok());
  }

  std::vector<Violation> Run(clusterservice::Client* cs, CheckOptions o = {}) {
    o.check_cluster_service = cs != nullptr;
    auto r = RunCheck(*store_, cs, clock_, o);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? r->violations : std::vector<Violation>{};
  }

  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(CheckTest, AnOperationWithoutProgressIsStuckLongBeforeItsDeadline) {
  const TimePoint start = clock_.Now();
  PutCluster(arm::OperationRequest::kDelete, "Deleting", start, start + 1min);
  clock_.Advance(10min);
  EXPECT_TRUE(Run(nullptr).empty());  // a condition changed 9 minutes ago
  clock_.Advance(2min);
  auto v = Run(nullptr);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].invariant, Invariant::kOperationsEnd);
  EXPECT_EQ(v[0].subject, "op1");
  EXPECT_NE(v[0].message.find("stuck"), std::string::npos) << v[0].message;
  CheckOptions off;
  off.stuck_after = 0s;
  EXPECT_TRUE(Run(nullptr, off).empty());
  CheckOptions longer;
  longer.stuck_after = 1h;
  EXPECT_TRUE(Run(nullptr, longer).empty());
}

TEST_F(CheckTest, TerminalOperationsAreNeverStuck) {
  PutCluster(arm::OperationRequest::kCreate, "Succeeded", clock_.Now(), std::nullopt);
  clock_.Advance(48h);
  EXPECT_TRUE(Run(nullptr).empty());
}

TEST_F(CheckTest, ManagedResourceGroupOfNoClusterIsALeak) {
  FixedClusterService cs;
  const std::string live = "/subscriptions/" + std::string(kSub) + "/resourceGroups/arohcp-live";
  const std::string gone = "/subscriptions/" + std::string(kSub) + "/resourceGroups/arohcp-gone";
  cs.clusters.push_back(json::object{{"href", kHref}, {"creation_timestamp", FormatRfc3339(clock_.Now())}});
  cs.objects[std::string(kHref)] = json::object{{"href", kHref}};
  cs.objects[std::string(kHref) + "/azure_resources"] = json::object{{"managed_resource_group", live}};
  cs.objects["/control/azure/resources"] = json::object{
      {"items",
       json::array{AzureResource(live, false), AzureResource(live + "/providers/x/y/lb", false),
                   AzureResource(gone, false), AzureResource(gone + "/providers/x/y/vm", false),
                   AzureResource(gone + "/providers/x/y/disk", false),
                   AzureResource("/subscriptions/" + std::string(kSub) + "/resourceGroups/customer", true)}}};
  PutCluster(arm::OperationRequest::kCreate, "Succeeded", clock_.Now(), std::nullopt);
  auto v = Run(&cs);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].invariant, Invariant::kNothingLeftInAzure);
  EXPECT_EQ(v[0].subject, ToLower(gone));
  EXPECT_NE(v[0].message.find("3 Azure resource"), std::string::npos) << v[0].message;

  // A Cluster Service without a simulated Azure is not checked for it.
  cs.objects.erase("/control/azure/resources");
  EXPECT_TRUE(Run(&cs).empty());
}

// An object the backend holds (made while the store heard from no backend: a store restored from an
// older copy lacks its document) is reported at once, with its node pools; any other object without a
// document only after the window.
TEST_F(CheckTest, HeldObjectsAreReportedAtOnceWithTheirNodePools) {
  FixedClusterService cs;
  const std::string held = "/api/aro_hcp/v1alpha1/clusters/late";
  const std::string pool = held + "/node_pools/np1";
  const std::string young = "/api/aro_hcp/v1alpha1/clusters/young";
  const std::string created = FormatRfc3339(clock_.Now());
  cs.clusters.push_back(json::object{{"href", held}, {"creation_timestamp", created}});
  cs.clusters.push_back(json::object{{"href", young}, {"creation_timestamp", created}});
  cs.lists[held + "/node_pools"] = json::array{json::object{{"href", pool}, {"creation_timestamp", created}}};
  backend::HeldObject record{held, "/subscriptions/s/resourceGroups/rg/x/late", "ready", clock_.Now(),
                             clock_.Now() - 1h};
  ASSERT_TRUE(store_
                  ->Upsert(store::kLocks, backend::kHeldPartition, backend::HeldObjectId(held),
                           backend::HeldObjectBody(record))
                  .ok());
  auto v = Run(&cs);
  ASSERT_EQ(v.size(), 2u);
  std::set<std::string> subjects;
  for (const Violation& x : v) {
    EXPECT_EQ(x.invariant, Invariant::kServiceObjectsMatchDocuments);
    EXPECT_NE(x.message.find("held, not deleted"), std::string::npos) << x.message;
    EXPECT_NE(x.message.find(record.resource_id), std::string::npos) << x.message;
    subjects.insert(x.subject);
  }
  EXPECT_EQ(subjects, (std::set<std::string>{held, pool}));
}

TEST_F(CheckTest, MachinesOfADeletedNodePoolNotOrphanedAreALeak) {
  FixedClusterService cs;
  const std::string mrg = "/subscriptions/" + std::string(kSub) + "/resourceGroups/arohcp-live";
  const std::string p = mrg + "/providers/";
  cs.clusters.push_back(json::object{{"href", kHref}, {"creation_timestamp", FormatRfc3339(clock_.Now())}});
  cs.objects[std::string(kHref)] = json::object{{"href", kHref}};
  cs.lists[std::string(kHref) + "/node_pools"] =
      json::array{json::object{{"href", std::string(kHref) + "/node_pools/id1"}, {"name", "live"}}};
  json::array in_group{
      AzureResource(mrg, false),
      AzureResource(p + "Microsoft.Network/publicIPAddresses/kube-apiserver-pip", false),
      AzureResource(p + "Microsoft.Compute/virtualMachines/live-0", false),
      AzureResource(p + "Microsoft.Network/networkInterfaces/live-0-nic", false),
      // gone-0: deleted pool, not orphaned: its VM, NIC and disk are leaks.
      AzureResource(p + "Microsoft.Compute/virtualMachines/gone-0", false),
      AzureResource(p + "Microsoft.Compute/virtualMachines/gone-0/extensions/node-bootstrap", false),
      AzureResource(p + "Microsoft.Compute/disks/gone-0-osdisk", false),
      // gone-1: orphaned (its identity could not delete it): left to the group deletion.
      AzureResource(p + "Microsoft.Compute/virtualMachines/gone-1", false),
      AzureResource(p + "Microsoft.Network/networkInterfaces/gone-1-nic", false)};
  cs.objects[std::string(kHref) + "/azure_resources"] =
      json::object{{"managed_resource_group", mrg},
                   {"orphaned_machines", json::array{json::value("gone-1")}},
                   {"azure_resources", in_group}};
  cs.objects["/control/azure/resources"] = json::object{{"items", in_group}};
  PutCluster(arm::OperationRequest::kCreate, "Succeeded", clock_.Now(), std::nullopt);
  std::vector<Violation> v;
  for (auto& x : Run(&cs)) {
    if (x.invariant == Invariant::kNothingLeftInAzure)
      v.push_back(std::move(x));  // (the live pool has no resource document: 6)
  }
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, std::string(kHref) + "/node_pools/gone");
  EXPECT_NE(v[0].message.find("3 Azure resource"), std::string::npos) << v[0].message;
}

// Every invariant has its documented number, a name and a description, once.
json::object Versioned(std::string href, std::string desired, std::string history) {
  auto h = ParseJson(history);
  EXPECT_TRUE(h.ok());
  return {{"href", std::move(href)},
          {"version", json::object{{"id", "openshift-v" + desired}}},
          {"status", json::object{{"state", "ready"}, {"version_history", *h}}}};
}

TEST_F(CheckTest, VersionsAreConsistent) {
  FixedClusterService cs;
  const std::string pools = std::string(kHref) + "/node_pools";
  PutCluster(arm::OperationRequest::kCreate, "Succeeded", clock_.Now(), std::nullopt);
  // An upgrade of the control plane in progress, a node pool behind it: consistent.
  cs.clusters.push_back(
      Versioned(std::string(kHref), "4.21.3",
                R"([{"version":"4.21.3","state":"Partial"},{"version":"4.20.14","state":"Completed"}])"));
  cs.lists[pools] =
      json::array{Versioned(pools + "/np1", "4.20.14", R"([{"version":"4.20.14","state":"Completed"}])")};
  CheckOptions o;
  o.gc_window = std::chrono::seconds(0);
  auto only_versions = [&] {
    std::vector<Violation> out;
    for (Violation& v : Run(&cs, o)) {
      if (v.invariant == Invariant::kVersionsConsistent) out.push_back(std::move(v));
    }
    return out;
  };
  EXPECT_TRUE(only_versions().empty());

  // A node pool on a newer minor than anything its control plane runs.
  cs.lists[pools] =
      json::array{Versioned(pools + "/np1", "4.22.1", R"([{"version":"4.22.1","state":"Completed"}])")};
  auto v = only_versions();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, pools + "/np1");
  EXPECT_NE(v[0].message.find("newer minor than its control plane (4.21)"), std::string::npos)
      << v[0].message;

  // A desired version below what runs.
  cs.lists[pools] = json::array{};
  cs.clusters[0] = Versioned(std::string(kHref), "4.20.10", R"([{"version":"4.20.14","state":"Completed"}])");
  v = only_versions();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "desired version 4.20.10 is below running version 4.20.14");
}

// The control plane's desired version the backend keeps in the store may not be below what runs
// either, while the Cluster Service's is.
TEST_F(CheckTest, AStoredDesiredVersionBelowWhatRunsIsReported) {
  FixedClusterService cs;
  PutCluster(arm::OperationRequest::kCreate, "Succeeded", clock_.Now(), std::nullopt);
  cs.clusters.push_back(
      Versioned(std::string(kHref), "4.20.14", R"([{"version":"4.20.14","state":"Completed"}])"));
  const std::string pk = arm::PartitionKey(kSub);
  auto put_stored = [&](std::string desired) {
    backend::ServiceProviderCluster spc{std::string(kHref), std::move(desired), "stable"};
    ASSERT_TRUE(
        store_->Upsert(store::kResources, pk, backend::ServiceProviderClusterId(kHref), spc.ToBody()).ok());
  };
  CheckOptions o;
  o.gc_window = std::chrono::seconds(0);
  auto only_versions = [&] {
    std::vector<Violation> out;
    for (Violation& v : Run(&cs, o)) {
      if (v.invariant == Invariant::kVersionsConsistent) out.push_back(std::move(v));
    }
    return out;
  };
  put_stored("4.20.16");  // above what runs: the upgrade not yet asked for
  EXPECT_TRUE(only_versions().empty());
  put_stored("4.20.12");
  auto v = only_versions();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].subject, std::string(kHref));
  EXPECT_EQ(v[0].message, "stored desired version 4.20.12 is below running version 4.20.14");
}

TEST(InvariantTest, TheTableNamesEachInvariantOnceInNumberOrder) {
  std::set<std::string_view> names;
  int last = 0;
  for (const auto& i : Invariants()) {
    EXPECT_GT(InvariantNumber(i.invariant), last) << i.name;
    last = InvariantNumber(i.invariant);
    EXPECT_TRUE(names.insert(i.name).second) << i.name;
    EXPECT_EQ(InvariantName(i.invariant), i.name);
    EXPECT_FALSE(InvariantDescription(i.invariant).empty()) << i.name;
  }
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(InvariantNumber(Invariant::kOneActiveOperation), 1);
  EXPECT_EQ(InvariantNumber(Invariant::kOperationsEnd), 4);
  EXPECT_EQ(InvariantNumber(Invariant::kServiceObjectsMatchDocuments), 6);
  EXPECT_EQ(InvariantNumber(Invariant::kNothingLeftInAzure), 9);
  EXPECT_EQ(InvariantName(Invariant::kNothingLeftInAzure), "nothing-left-in-azure");
}

// Reports show an invariant by its number, as before the invariants had names.
TEST(InvariantTest, ReportsShowTheNumber) {
  std::ostringstream out;
  out << Invariant::kDeletedResourcesGo;
  EXPECT_EQ(out.str(), "5");
  Report report;
  report.violations.push_back({Invariant::kProvisioningStateFollowsOperation, "/r", "m"});
  const json::object j = ReportToJson(report);
  EXPECT_EQ(ToJson(*GetArray(j, "violations")), R"([{"invariant":2,"subject":"/r","message":"m"}])");
}

}  // namespace
}  // namespace hcprp::check
