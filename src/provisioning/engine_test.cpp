// The engine under the real simulator Service, driven by a FakeClock.
#include "provisioning/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/uuid.h"
#include "provisioning/handler.h"
#include "provisioning/unit.h"
#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/state_db.h"
#include "simulator/state_store.h"

namespace hcprp::provisioning {
namespace {

using http::Verb;
using namespace std::chrono_literals;

const std::string kBase(simulator::kApiPrefix);
const std::string kRg = "/subscriptions/sub-1/resourceGroups/rg/providers/";
const std::string kCapz = kRg + "Microsoft.ManagedIdentity/userAssignedIdentities/capz";
const std::string kCpo = kRg + "Microsoft.ManagedIdentity/userAssignedIdentities/cpo";
const std::string kSmi = kRg + "Microsoft.ManagedIdentity/userAssignedIdentities/smi";

std::string ClusterBody(const std::string& name) {
  json::object mi{{"control_plane_operators_managed_identities",
                   json::object{{"cluster-api-azure", json::object{{"resource_id", kCapz}}},
                                {"control-plane", json::object{{"resource_id", kCpo}}}}},
                  {"service_managed_identity", json::object{{"resource_id", kSmi}}}};
  json::object azure{
      {"subscription_id", "sub-1"},
      {"resource_group_name", "rg"},
      {"resource_name", name},
      {"subnet_resource_id", kRg + "Microsoft.Network/virtualNetworks/vnet/subnets/nodes"},
      {"network_security_group_resource_id", kRg + "Microsoft.Network/networkSecurityGroups/nsg"},
      {"operators_authentication", json::object{{"managed_identities", mi}}}};
  return ToJson(json::object{{"name", name},
                             {"region", json::object{{"id", "westus3"}}},
                             {"azure", azure},
                             {"version", json::object{{"id", "openshift-v4.19"}}}});
}

// Records every state the engine moves an object to, and forwards it to the Service.
class RecordingSink final : public StateSink {
 public:
  simulator::Service* service = nullptr;
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> states;
  // Removals of these objects refused (as while a child's removal is still on its way) this many times.
  std::map<std::string, int> refuse_removal;
  Status Transition(const std::string& href, const std::string& state, const std::string& code,
                    const std::string& message) override {
    {
      std::lock_guard lock(mu);
      states[href].push_back(state);
      if (state == simulator::kGone && refuse_removal[href] > 0) {
        --refuse_removal[href];
        return Error::Conflict(href + " still has node pools or external auths");
      }
    }
    return service->Transition(href, state, code, message);
  }
};

class EngineTest : public ::testing::Test {
 protected:
  void Open(LatencyProfile profile, std::string data_dir = "", Duration validation_time = Duration::zero()) {
    data_dir_ = data_dir;
    if (!data_dir.empty() && !state_) {
      auto db = simulator::StateDb::Open(data_dir);
      ASSERT_TRUE(db.ok()) << db.error().ToString();
      state_ = std::move(*db);
    }
    AzureOptions ao;
    ao.clock = &clock_;
    ao.profile = profile;
    ao.seed = 7;
    ao.state = state_.get();
    auto az = SimulatedAzure::Open(ao);
    ASSERT_TRUE(az.ok()) << az.error().ToString();
    azure_ = std::move(*az);
    EngineOptions eo;
    eo.clock = &clock_;
    eo.azure = azure_.get();
    eo.state = state_.get();
    eo.validation_time = validation_time;
    eo.control_plane_upgrade_time = control_plane_upgrade_time_;
    auto e = Engine::Open(eo);
    ASSERT_TRUE(e.ok()) << e.error().ToString();
    engine_ = std::move(*e);
    store_ = state_ ? simulator::NewStateStore(state_.get()) : simulator::NewMemoryStateStore();
    scheduler_ = std::make_unique<simulator::Scheduler>(&clock_);
    simulator::ServiceOptions so;
    so.clock = &clock_;
    so.provisioner = engine_.get();
    so.store = store_.get();
    so.scheduler = scheduler_.get();
    so.seed = 3;
    auto svc = simulator::Service::Open(so);
    ASSERT_TRUE(svc.ok()) << svc.error().ToString();
    service_ = std::move(*svc);
    sink_.service = service_.get();
    engine_->Attach(&sink_);
    handler_ = std::make_unique<AzureHandler>(engine_.get(), azure_.get());
  }
  // A restart: everything goes away (flushing what persists) and comes back from the data dir.
  void Restart() {
    engine_->Stop();
    handler_.reset();
    service_.reset();
    scheduler_.reset();
    store_.reset();
    engine_.reset();
    azure_.reset();
    state_.reset();
    Open(profile_, data_dir_);
  }

  json::object Call(Verb verb, const std::string& target, const std::string& body = "") {
    auto res = service_->Handle(http::MakeRequest(verb, target, body));
    last_status_ = res.result_int();
    if (res.body().empty()) return {};
    auto v = ParseJson(res.body());
    return v.ok() && v->is_object() ? v->as_object() : json::object{};
  }
  json::object Control(Verb verb, const std::string& target, const std::string& body = "") {
    auto res = handler_->Handle(http::MakeRequest(verb, target, body));
    EXPECT_TRUE(res.has_value()) << target;
    last_status_ = res->result_int();
    auto v = ParseJson(res->body().empty() ? "{}" : res->body());
    return v.ok() && v->is_object() ? v->as_object() : json::object{};
  }
  std::string State(const std::string& href) {
    auto s = Call(Verb::get, href + "/status");
    if (last_status_ == 404) return "gone";
    return std::string(GetString(s, "state").value_or(""));
  }
  std::string CreateCluster(const std::string& name) {
    auto c = Call(Verb::post, kBase + "/clusters", ClusterBody(name));
    EXPECT_EQ(last_status_, 201u) << ToJson(c);
    return std::string(GetString(c, "href").value_or(""));
  }
  std::string CreatePool(const std::string& cluster, const std::string& name, int replicas) {
    auto p = Call(Verb::post, cluster + "/node_pools",
                  ToJson(json::object{{"name", name}, {"replicas", replicas}}));
    EXPECT_EQ(last_status_, 201u) << ToJson(p);
    return std::string(GetString(p, "href").value_or(""));
  }
  // Runs the engine, moving the fake clock to each next piece of work, until pred() holds or `limit`
  // of simulated time passed. Returns whether pred() held.
  bool RunUntil(const std::function<bool()>& pred, Duration limit) {
    const TimePoint deadline = clock_.Now() + limit;
    for (;;) {
      engine_->RunDueForTest();
      if (pred()) return true;
      auto next = engine_->NextDueForTest();
      if (!next || *next > deadline) return false;
      if (*next > clock_.Now()) clock_.Set(*next);
    }
  }
  json::object Condition(const std::string& href, std::string_view type) {
    for (const auto& c : engine_->Conditions(href)) {
      if (GetString(c.as_object(), "type") == type) return c.as_object();
    }
    return {};
  }
  size_t EngineResources() {
    size_t n = 0;
    for (const auto& r : azure_->List(""))
      n += GetBool(r.as_object(), "customerOwned").value_or(false) ? 0 : 1;
    return n;
  }

  // status.version_history of an object: "version state" per entry, newest first.
  std::vector<std::string> History(const std::string& href) {
    std::vector<std::string> out;
    const json::object obj = Call(Verb::get, href);
    const json::object* st = GetObject(obj, "status");
    const json::array* h = st ? GetArray(*st, "version_history") : nullptr;
    if (!h) return out;
    for (const auto& e : *h) {
      out.push_back(std::string(GetString(e.as_object(), "version").value_or("")) + " " +
                    std::string(GetString(e.as_object(), "state").value_or("")));
    }
    return out;
  }
  // The machines of the cluster's first node pool, as the engine's view shows them.
  json::array Machines(const std::string& cluster) {
    auto view = engine_->ClusterView(cluster);
    if (!view.ok() || GetArray(*view, "node_pools")->empty()) return {};
    return *GetArray(GetArray(*view, "node_pools")->at(0).as_object(), "machines");
  }
  static bool MachineReady(const json::value& m) {
    if (GetBool(m.as_object(), "deleting").value_or(true)) return false;
    for (const auto& s : *GetArray(m.as_object(), "services")) {
      if (GetString(s.as_object(), "state") != "Ready") return false;
    }
    return true;
  }

  FakeClock clock_;
  std::function<Duration()> control_plane_upgrade_time_;
  LatencyProfile profile_ = LatencyProfile::kRealistic;
  std::string data_dir_;
  std::unique_ptr<simulator::StateDb> state_;
  std::unique_ptr<SimulatedAzure> azure_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<simulator::StateStore> store_;
  std::unique_ptr<simulator::Scheduler> scheduler_;
  std::unique_ptr<simulator::Service> service_;
  std::unique_ptr<AzureHandler> handler_;
  RecordingSink sink_;
  unsigned last_status_ = 0;
};

TEST_F(EngineTest, ClusterAndNodePoolReachReadyThroughCreatingConditions) {
  Open(LatencyProfile::kRealistic);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 3);
  engine_->RunDueForTest();
  // Right after the first reconcile: installing, the control plane's services creating.
  EXPECT_EQ(State(c), "installing");
  EXPECT_EQ(GetString(Condition(c, "ResourceGroupReady"), "reason").value_or("?"), "Creating");
  EXPECT_EQ(State(np), "pending");  // waits for its cluster's control plane

  bool saw_pool_creating = false;
  ASSERT_TRUE(RunUntil(
      [&] {
        auto vm = Condition(np, "VMReady");
        if (GetString(vm, "reason") == "Creating") saw_pool_creating = true;
        return State(np) == "ready";
      },
      2h));
  EXPECT_TRUE(saw_pool_creating);
  EXPECT_EQ(State(c), "ready");
  EXPECT_EQ(sink_.states[c], (std::vector<std::string>{"pending", "installing", "ready"}));
  EXPECT_EQ(sink_.states[np], (std::vector<std::string>{"pending", "installing", "ready"}));
  for (const auto& cond : engine_->Conditions(np)) {
    EXPECT_EQ(GetString(cond.as_object(), "status"), "True") << ToJson(cond);
  }
  EXPECT_EQ(GetString(Condition(c, "AzureIdentityValid"), "status"), "True");
  // Control plane: group, public IP, load balancer, role assignment; 3 machines x 6 services.
  EXPECT_EQ(EngineResources(), 4u + 3u * 6u);
  EXPECT_EQ(azure_->MaxCreateStarts(), 1);
  EXPECT_GT(engine_->metrics().futures_stored, 0);

  // The RP's view through the handler: conditions and the managed resource group's resources.
  auto view = Control(Verb::get, c + "/azure_resources");
  EXPECT_EQ(last_status_, 200u);
  EXPECT_EQ(GetArray(view, "azure_resources")->size(), 4u + 3u * 6u);
  EXPECT_EQ(GetArray(GetArray(view, "node_pools")->at(0).as_object(), "machines")->size(), 3u);
}

TEST_F(EngineTest, NewObjectsStayValidatingForTheValidationTime) {
  Open(LatencyProfile::kDemo, "", std::chrono::seconds(30));
  const TimePoint t0 = clock_.Now();
  const std::string c = CreateCluster("c1");
  engine_->RunDueForTest();
  EXPECT_EQ(State(c), "validating");
  EXPECT_EQ(EngineResources(), 0u);  // nothing provisioned while validating
  ASSERT_TRUE(RunUntil([&] { return State(c) != "validating"; }, 1h));
  EXPECT_GE(clock_.Now() - t0, std::chrono::seconds(30));
  EXPECT_LT(clock_.Now() - t0, std::chrono::seconds(31));
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
}

TEST_F(EngineTest, ScalingFromZeroTo200StartsEveryMachineAtOnce) {
  Open(LatencyProfile::kRealistic);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 0);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  Call(Verb::patch, np, R"({"replicas":200})");
  ASSERT_EQ(last_status_, 200u);
  const TimePoint scaled_at = clock_.Now();
  // Bound: every machine is Creating within one pass over the due work at the same instant (0 s of
  // simulated time): the pool's reconcile creates 200 units and each unit's reconcile starts its first
  // operation and returns without waiting on it. With `concurrency` workers that is ceil(200/10) = 20
  // reconcile rounds, each at most the 2 s client timeout.
  const size_t reconciles = engine_->RunDueForTest();
  EXPECT_EQ(clock_.Now(), scaled_at);
  // One reconcile per machine, plus the pool (its roll-up may run again as machines report).
  EXPECT_LE(reconciles, 1u + 200u + 5u);
  EXPECT_EQ(engine_->machine_count(), 200u);
  auto view = engine_->ClusterView(c);
  ASSERT_TRUE(view.ok());
  const json::array& machines = *GetArray(GetArray(*view, "node_pools")->at(0).as_object(), "machines");
  ASSERT_EQ(machines.size(), 200u);
  for (const auto& m : machines) {
    const auto& first = GetArray(m.as_object(), "services")->at(0).as_object();
    EXPECT_TRUE(GetString(first, "state") == "Creating" || GetString(first, "state") == "Ready") << ToJson(m);
  }
  EXPECT_EQ(State(np), "updating");
  EXPECT_EQ(GetString(Condition(np, "PublicIPsReady"), "reason").value_or("?"), "Creating");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  EXPECT_EQ(EngineResources(), 4u + 200u * 6u);
  EXPECT_EQ(azure_->MaxCreateStarts(), 1);
}

TEST_F(EngineTest, FailedVmCreateShowsTheAzureErrorAndIsRetried) {
  Open(LatencyProfile::kDemo);
  AzureFault f;
  f.type = ResourceType::kVirtualMachine;
  f.code = "AllocationFailed";
  f.message =
      "Allocation failed. We do not have sufficient capacity for the requested VM size in this region.";
  azure_->AddFault(f);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 2);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "error"; }, 1h));
  auto status = Call(Verb::get, np + "/status");
  EXPECT_EQ(GetString(status, "provision_error_code"), "AllocationFailed");
  EXPECT_NE(std::string(GetString(status, "provision_error_message").value_or("")).find("Allocation failed"),
            std::string::npos);
  auto vm = Condition(np, "VMReady");
  EXPECT_EQ(GetString(vm, "status"), "False");
  EXPECT_EQ(GetString(vm, "reason"), "Failed");
  EXPECT_NE(std::string(GetString(vm, "message").value_or("")).find("Allocation failed"), std::string::npos);
  // The engine retries the VM (a new PUT on the failed resource) after its backoff and recovers.
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  int64_t retried = 0;
  for (const auto& r : azure_->List("")) {
    const auto& o = r.as_object();
    if (GetString(o, "type") == ArmType(ResourceType::kVirtualMachine)) {
      retried += GetInt(o, "createAttempts").value_or(0) == 2 ? 1 : 0;
      EXPECT_EQ(GetString(o, "provisioningState"), "Succeeded");
    }
  }
  EXPECT_EQ(retried, 1);
  EXPECT_EQ(EngineResources(), 4u + 2u * 6u);
  EXPECT_EQ(sink_.states[np].back(), "ready");
  EXPECT_NE(std::find(sink_.states[np].begin(), sink_.states[np].end(), "error"), sink_.states[np].end());
}

TEST_F(EngineTest, RestartMidProvisioningResumesFromFuturesWithoutDuplicates) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 5);
  // Until the VMs are being created: every machine holds a stored future.
  ASSERT_TRUE(RunUntil(
      [&] {
        auto vm = Condition(np, "VMReady");
        return GetString(vm, "reason") == "Creating" &&
               std::string(GetString(vm, "message").value_or("")).find("5 Creating") != std::string::npos;
      },
      1h));
  const size_t before = EngineResources();
  const int64_t futures = engine_->metrics().futures_stored;
  EXPECT_GT(futures, 0);
  Restart();
  EXPECT_EQ(EngineResources(), before);
  EXPECT_EQ(State(np), "installing");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  EXPECT_EQ(State(c), "ready");
  EXPECT_EQ(EngineResources(), 4u + 5u * 6u);
  EXPECT_EQ(azure_->MaxCreateStarts(), 1) << "an operation was started twice";
  std::filesystem::remove_all(dir);
}

// A crash at any instant: the restarted simulator tells the engine about every object it holds, and the
// engine finishes them from what its steps committed, adopting the Azure operations already running.
TEST_F(EngineTest, WorkInProgressIsFinishedAfterACrash) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  const std::string np = CreatePool(c, "np1", 2);
  ASSERT_TRUE(RunUntil([&] { return GetString(Condition(np, "VMReady"), "reason") == "Creating"; }, 1h));
  // Down without stopping (as after a crash: what each step committed is all there is), and up again.
  handler_.reset();
  service_.reset();
  engine_.reset();
  azure_.reset();
  state_.reset();
  Open(profile_, data_dir_);
  EXPECT_EQ(State(np), "installing");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  EXPECT_EQ(State(c), "ready");
  EXPECT_EQ(EngineResources(), 4u + 2u * 6u);
  EXPECT_EQ(azure_->MaxCreateStarts(), 1) << "an operation was started twice";
  // The engine knows the cluster again: deleting it removes everything.
  Call(Verb::delete_, c);
  ASSERT_TRUE(RunUntil([&] { return State(c) == "gone"; }, 2h));
  EXPECT_EQ(EngineResources(), 0u) << ToJson(azure_->List(""));
  std::filesystem::remove_all(dir);
}

class IdentityLossTest : public EngineTest {
 protected:
  // Creates a ready cluster with a node pool of 3, breaks identities with `breakage`, deletes the
  // cluster and checks that its deletion finishes with nothing left behind.
  void Run(const std::function<void()>& breakage, std::string_view reason) {
    Open(LatencyProfile::kDemo);
    // The normal deletion time of the same cluster, for the bound below.
    const std::string ref = CreateCluster("ref");
    CreatePool(ref, "np", 3);
    ASSERT_TRUE(RunUntil([&] { return State(ref) == "ready" && engine_->machine_count() == 3; }, 1h));
    ASSERT_TRUE(RunUntil([&] { return EngineResources() == 22u; }, 1h));
    TimePoint t0 = clock_.Now();
    Call(Verb::delete_, ref);
    ASSERT_TRUE(RunUntil([&] { return State(ref) == "gone"; }, 1h));
    const Duration normal = clock_.Now() - t0;
    EXPECT_EQ(EngineResources(), 0u);

    const std::string c = CreateCluster("c1");
    const std::string np = CreatePool(c, "np", 3);
    ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
    breakage();
    t0 = clock_.Now();
    Call(Verb::delete_, c);
    ASSERT_EQ(last_status_, 204u);
    bool saw_invalid = false;
    ASSERT_TRUE(RunUntil(
        [&] {
          auto cond = Condition(c, "AzureIdentityValid");
          if (GetString(cond, "status") == "False" && GetString(cond, "reason") == reason) saw_invalid = true;
          return State(c) == "gone";
        },
        2h));
    const Duration took = clock_.Now() - t0;
    EXPECT_TRUE(saw_invalid);
    EXPECT_LE(took, std::chrono::minutes(10) + normal + 5s) << "took " << took.count();
    EXPECT_GE(took, std::chrono::minutes(10));
    // Nothing left: not in the simulator, not in the engine, not in the simulated Azure (the
    // customer's own network and identities stay theirs).
    EXPECT_EQ(State(np), "gone");
    EXPECT_EQ(service_->object_count(), 0u);
    EXPECT_EQ(engine_->object_count(), 0u);
    EXPECT_EQ(engine_->machine_count(), 0u);
    EXPECT_EQ(EngineResources(), 0u) << ToJson(azure_->List(""));
    EXPECT_EQ(azure_->operations_in_flight(), 0u);
    EXPECT_EQ(engine_->metrics().orphaned_machines, 3);
    EXPECT_GE(engine_->metrics().first_party_group_deletions, 2);
  }
};

TEST_F(IdentityLossTest, ClusterWithDeletedIdentitiesIsDeletedWithNothingLeft) {
  Run(
      [&] {
        for (const auto& id : {kCapz, kCpo, kSmi}) {
          Control(Verb::post, "/control/azure/identities/delete", ToJson(json::object{{"resource_id", id}}));
          EXPECT_EQ(last_status_, 200u);
        }
      },
      "IdentityNotFound");
}

TEST_F(IdentityLossTest, ClusterWithAnIdentityStrippedOfPermissionsIsDeletedWithNothingLeft) {
  Run(
      [&] {
        Control(Verb::post, "/control/azure/identities/permissions",
                ToJson(json::object{{"resource_id", kCapz}, {"granted", false}}));
        EXPECT_EQ(last_status_, 200u);
      },
      "AuthorizationFailed");
}

// Orphaning for a node pool alone: its machines cannot be deleted with the customer's identities gone;
// after the orphan threshold they are skipped and the node pool deletion ends. The cluster's deletion
// later removes what they left behind with the managed resource group.
TEST_F(EngineTest, NodePoolWithDeletedIdentitiesIsDeletedAfterTheThreshold) {
  Open(LatencyProfile::kDemo);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np", 3);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  ASSERT_EQ(EngineResources(), 4u + 3u * 6u);
  for (const auto& id : {kCapz, kCpo, kSmi}) {
    Control(Verb::post, "/control/azure/identities/delete", ToJson(json::object{{"resource_id", id}}));
    ASSERT_EQ(last_status_, 200u);
  }
  const TimePoint t0 = clock_.Now();
  Call(Verb::delete_, np);
  ASSERT_EQ(last_status_, 204u);
  bool saw_deletion_failed = false;
  ASSERT_TRUE(RunUntil(
      [&] {
        if (GetString(Condition(np, "VMExtensionReady"), "reason") == "DeletionFailed")
          saw_deletion_failed = true;
        return State(np) == "gone";
      },
      2h));
  const Duration took = clock_.Now() - t0;
  EXPECT_TRUE(saw_deletion_failed);
  EXPECT_GE(took, std::chrono::minutes(10));
  EXPECT_LE(took, std::chrono::minutes(12)) << "took " << took.count();
  EXPECT_EQ(engine_->metrics().orphaned_machines, 3);
  EXPECT_EQ(engine_->machine_count(), 0u);
  EXPECT_EQ(State(c), "ready");
  EXPECT_EQ(GetString(Condition(c, "AzureIdentityValid"), "status"), "False");
  // The orphaned machines' resources are still in the managed resource group.
  EXPECT_EQ(EngineResources(), 4u + 3u * 6u);

  Call(Verb::delete_, c);
  ASSERT_EQ(last_status_, 204u);
  ASSERT_TRUE(RunUntil([&] { return State(c) == "gone"; }, 2h));
  EXPECT_EQ(service_->object_count(), 0u);
  EXPECT_EQ(engine_->object_count(), 0u);
  EXPECT_EQ(EngineResources(), 0u) << ToJson(azure_->List(""));
  EXPECT_EQ(azure_->operations_in_flight(), 0u);
  EXPECT_GE(engine_->metrics().first_party_group_deletions, 1);
}

// Break-glass credentials are not deleted with their own operation: they go with the cluster, whose
// deletion must not wait for them (it used to wait for ever).
TEST_F(EngineTest, ClusterWithBreakGlassCredentialsIsDeleted) {
  Open(LatencyProfile::kRealistic);
  const std::string c = CreateCluster("c1");
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 2h));
  Call(Verb::post, c + "/request_admin_credential", "{}");
  ASSERT_LT(last_status_, 300u);
  Call(Verb::post, c + "/revoke_credentials", "{}");
  ASSERT_LT(last_status_, 300u);
  Call(Verb::post, c + "/request_admin_credential", "{}");
  Call(Verb::delete_, c);
  ASSERT_EQ(last_status_, 204u);
  ASSERT_TRUE(RunUntil([&] { return State(c) == "gone"; }, 2h));
  EXPECT_EQ(service_->object_count(), 0u);
  EXPECT_EQ(engine_->object_count(), 0u);
  EXPECT_EQ(EngineResources(), 0u) << ToJson(azure_->List(""));
}

// Another worker may apply a child's removal after its cluster's: the Cluster Service then refuses the
// cluster's, which is tried again until it is taken.
TEST_F(EngineTest, AClusterRemovalRefusedForItsChildrenIsTriedAgain) {
  Open(LatencyProfile::kRealistic);
  const std::string c = CreateCluster("c1");
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 2h));
  sink_.refuse_removal[c] = 2;
  Call(Verb::delete_, c);
  ASSERT_EQ(last_status_, 204u);
  ASSERT_TRUE(RunUntil([&] { return State(c) == "gone"; }, 2h));
  EXPECT_EQ(sink_.refuse_removal[c], 0);
  EXPECT_EQ(service_->object_count(), 0u);
  EXPECT_EQ(engine_->object_count(), 0u);
}

TEST_F(EngineTest, ThrottledCallsWaitForRetryAfter) {
  Open(LatencyProfile::kDemo);
  Control(Verb::post, "/control/azure/faults",
          R"({"resource_type":"publicIP","kind":"throttle","count":2,"retry_after_seconds":30})");
  EXPECT_EQ(last_status_, 201u);
  const std::string c = CreateCluster("c1");
  const TimePoint t0 = clock_.Now();
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  EXPECT_GE(clock_.Now() - t0, 60s);  // two 429s with Retry-After 30 s
  EXPECT_EQ(engine_->metrics().throttled, 2);
}

// What a step changes in the engine and the simulated Azure is in the database once the step is done,
// without any flush: a crash right after it loses nothing.
TEST_F(EngineTest, EveryStepIsCommittedWithItsAzureChanges) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  const uint64_t commits = state_->commits();
  EXPECT_GT(commits, 0u);
  auto units = state_->Load("engine.unit");
  ASSERT_TRUE(units.ok());
  ASSERT_EQ(units->size(), 1u);  // the control plane
  EXPECT_NE(units->front().second.find("\"state\":\"Ready\""), std::string::npos) << units->front().second;
  auto resources = state_->Load("azure.resource");
  ASSERT_TRUE(resources.ok());
  size_t succeeded = 0;
  for (const auto& [k, doc] : *resources)
    succeeded += doc.find("\"state\":\"Succeeded\"") != std::string::npos;
  EXPECT_GE(succeeded, 4u);  // the group, the IP, the load balancer, the role assignment (and customer's)
  std::filesystem::remove_all(dir);
}

// Polling an Azure operation that is still running changes nothing, so it writes nothing: the state's
// commits follow the steps that change something, not the reconciles.
TEST_F(EngineTest, AReconcileThatChangesNothingWritesNothing) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 3);
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  size_t ran = 0;
  uint64_t committed = 0;
  std::string before_doc;
  for (int i = 0; i < 200 && State(np) != "ready"; ++i) {
    auto units = state_->Load("engine.unit");
    ASSERT_TRUE(units.ok());
    std::string docs;
    for (const auto& [k, d] : *units) docs += d;
    const uint64_t commits = state_->commits();
    const size_t n = engine_->RunDueForTest(1);
    auto after = state_->Load("engine.unit");
    ASSERT_TRUE(after.ok());
    std::string after_docs;
    for (const auto& [k, d] : *after) after_docs += d;
    if (after_docs == docs && azure_->operations_in_flight() > 0) {
      // Nothing of the units changed: only the simulated Azure may have settled an operation.
      ran += n;
      committed += state_->commits() - commits;
    }
    auto next = engine_->NextDueForTest();
    if (!next) break;
    if (*next > clock_.Now()) clock_.Set(*next);
  }
  EXPECT_GT(ran, 0u) << "no reconcile polled a running operation";
  EXPECT_LT(committed, ran) << "reconciles that changed no unit were committed anyway";
  std::filesystem::remove_all(dir);
}

TEST(RollTest, APoolSurgesOneNewMachineBeforeRetiringAnOldOne) {
  using V = std::vector<RollMachine>;
  auto plan = [](const V& machines, int64_t desired) { return PlanRoll(machines, desired, "4.21.3"); };
  const RollMachine old_ready{"4.20.1", false, true}, new_ready{"4.21.3", false, true};
  EXPECT_EQ(plan(V{old_ready, old_ready, old_ready}, 3).action, RollAction::kSurge);
  EXPECT_EQ(plan(V{old_ready, old_ready, old_ready, {"4.21.3", false, false}}, 3).action, RollAction::kWait);
  RollStep retire = plan(V{new_ready, old_ready, old_ready, new_ready}, 3);
  EXPECT_EQ(retire.action, RollAction::kRetire);
  EXPECT_EQ(retire.retire, 1u);  // the first machine at another version
  EXPECT_EQ(plan(V{new_ready, {"4.20.1", true, false}, old_ready, new_ready}, 3).action, RollAction::kWait);
  EXPECT_EQ(plan(V{new_ready, new_ready, new_ready}, 3).action, RollAction::kDone);
  EXPECT_EQ(plan(V{}, 0).action, RollAction::kDone);
  // Scaled to fewer machines with the same change: old machines go without a replacement first.
  EXPECT_EQ(plan(V{old_ready, old_ready}, 1).action, RollAction::kRetire);
  // A machine that does not become ready holds the roll.
  EXPECT_EQ(plan(V{{"4.20.1", false, false}, old_ready}, 2).action, RollAction::kWait);
}

TEST_F(EngineTest, ANodePoolUpgradeReplacesItsMachinesKeepingItsReplicasReady) {
  Open(LatencyProfile::kDemo);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 3);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.15 Completed"}));
  Call(Verb::patch, np, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_EQ(last_status_, 200u);
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.3 Partial", "4.20.15 Completed"}));
  size_t fewest_ready = 3, most_machines = 0;
  std::set<std::string> progress;
  ASSERT_TRUE(RunUntil(
      [&] {
        const json::array machines = Machines(c);
        const auto ready = static_cast<size_t>(std::count_if(machines.begin(), machines.end(), MachineReady));
        fewest_ready = std::min(fewest_ready, ready);
        most_machines = std::max(most_machines, machines.size());
        auto p = Condition(np, "Progressing");
        if (GetString(p, "status") == "True")
          progress.insert(std::string(GetString(p, "message").value_or("")));
        return State(np) == "ready";
      },
      2h));
  EXPECT_EQ(fewest_ready, 3u);   // max unavailable 0
  EXPECT_EQ(most_machines, 4u);  // max surge 1
  EXPECT_TRUE(progress.count("1 of 3 machines at 4.20.3")) << ToJson(json::value_from(progress));
  EXPECT_TRUE(progress.count("2 of 3 machines at 4.20.3"));
  const json::array machines = Machines(c);
  ASSERT_EQ(machines.size(), 3u);
  for (const auto& m : machines) {
    EXPECT_EQ(GetString(m.as_object(), "version"), "4.20.3") << ToJson(m);
    EXPECT_NE(GetString(m.as_object(), "name"), "np1-0");
  }
  EXPECT_EQ(GetString(Condition(np, "Progressing"), "reason"), "UpgradeCompleted");
  EXPECT_EQ(GetString(Condition(np, "Progressing"), "message"), "3 of 3 machines at 4.20.3");
  EXPECT_EQ(GetString(Condition(np, "MachinesReady"), "status"), "True");
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.3 Completed", "4.20.15 Completed"}));
  EXPECT_EQ(sink_.states[np].back(), "ready");
  EXPECT_EQ(EngineResources(), 4u + 3u * 6u);  // the old machines are gone
  EXPECT_EQ(azure_->MaxCreateStarts(), 1);
}

TEST_F(EngineTest, AFailedUpgradeReplacesNothingAndKeepsTheOldVersion) {
  Open(LatencyProfile::kDemo);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 2);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  Call(
      Verb::post, "/control/faults/provisioning",
      R"({"count":1,"kinds":["NodePool"],"operations":["upgrade"],"code":"OCM4242","message":"payload unavailable"})");
  ASSERT_EQ(last_status_, 201u);
  const std::string before = ToJson(Machines(c));
  Call(Verb::patch, np, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "error"; }, 1h));
  auto status = Call(Verb::get, np + "/status");
  EXPECT_EQ(GetString(status, "provision_error_code"), "OCM4242");
  EXPECT_EQ(GetString(status, "provision_error_message"), "payload unavailable");
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.15 Completed"}));
  EXPECT_EQ(ToJson(Machines(c)), before);  // the old machines keep running
  EXPECT_EQ(GetString(Condition(np, "Progressing"), "reason"), "UpgradeFailed");
  // The same version again retries, and succeeds.
  Call(Verb::patch, np, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 1h));
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.3 Completed", "4.20.15 Completed"}));
  for (const auto& m : Machines(c)) EXPECT_EQ(GetString(m.as_object(), "version"), "4.20.3");
}

TEST_F(EngineTest, AControlPlaneUpgradeTakesItsTimeAndResumesAfterARestart) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  control_plane_upgrade_time_ = [] { return Duration(std::chrono::minutes(25)); };
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  const TimePoint t0 = clock_.Now();
  Call(Verb::patch, c, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_EQ(last_status_, 200u);
  engine_->RunDueForTest();
  EXPECT_EQ(State(c), "updating");
  EXPECT_EQ(GetString(Condition(c, "Progressing"), "message"), "control plane upgrading to 4.20.3");
  clock_.Advance(std::chrono::minutes(10));
  engine_->RunDueForTest();
  EXPECT_EQ(State(c), "updating");
  Restart();
  EXPECT_EQ(State(c), "updating");
  EXPECT_EQ(History(c), (std::vector<std::string>{"4.20.3 Partial", "4.19.24 Completed"}));
  ASSERT_TRUE(RunUntil([&] { return State(c) == "ready"; }, 1h));
  // The due time persists in milliseconds.
  EXPECT_GE(clock_.Now() - t0, std::chrono::minutes(25) - std::chrono::milliseconds(1));
  EXPECT_LT(clock_.Now() - t0, std::chrono::minutes(26));  // not started again by the restart
  EXPECT_EQ(History(c), (std::vector<std::string>{"4.20.3 Completed", "4.19.24 Completed"}));
  EXPECT_EQ(GetString(Condition(c, "Progressing"), "message"), "control plane at 4.20.3");
  std::filesystem::remove_all(dir);
}

TEST_F(EngineTest, ARollingUpgradeResumesAfterACrash) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 2);
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  Call(Verb::patch, np, R"({"version":{"id":"openshift-v4.20.3"}})");
  ASSERT_TRUE(RunUntil(
      [&] { return GetString(Condition(np, "Progressing"), "message") == "1 of 2 machines at 4.20.3"; }, 2h));
  // Down without stopping, and up again.
  handler_.reset();
  service_.reset();
  engine_.reset();
  azure_.reset();
  state_.reset();
  Open(profile_, data_dir_);
  EXPECT_EQ(State(np), "updating");
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  const json::array machines = Machines(c);
  ASSERT_EQ(machines.size(), 2u);
  for (const auto& m : machines) EXPECT_EQ(GetString(m.as_object(), "version"), "4.20.3");
  EXPECT_EQ(History(np), (std::vector<std::string>{"4.20.3 Completed", "4.20.15 Completed"}));
  EXPECT_EQ(EngineResources(), 4u + 2u * 6u);
  EXPECT_EQ(azure_->MaxCreateStarts(), 1) << "an operation was started twice";
  std::filesystem::remove_all(dir);
}

// The documents leave out what their keys say (a unit's key, owner, cluster and name, the resource
// group its services share, a node pool's href before its machines' keys) and load back the same.
TEST_F(EngineTest, CompactDocumentsLoadBackTheSame) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(LatencyProfile::kRealistic, dir);
  const std::string c = CreateCluster("c1");
  const std::string np = CreatePool(c, "np1", 3);
  ASSERT_TRUE(RunUntil([&] { return GetString(Condition(np, "VMReady"), "reason") == "Creating"; }, 1h));
  auto view = engine_->ClusterView(c);
  ASSERT_TRUE(view.ok());
  auto units = state_->Load("engine.unit");
  ASSERT_TRUE(units.ok());
  ASSERT_EQ(units->size(), 4u);  // the control plane and three machines
  for (const auto& [key, doc] : *units) {
    EXPECT_EQ(doc.find(key), std::string::npos) << doc;
    EXPECT_EQ(doc.find("\"owner\""), std::string::npos) << doc;
    EXPECT_EQ(doc.find("\"cluster\""), std::string::npos) << doc;
    if (key.find("#np1-") != std::string::npos) {
      EXPECT_NE(doc.find("\"rid\""), std::string::npos) << doc;
    }
  }
  auto objects = state_->Load("engine.object");
  ASSERT_TRUE(objects.ok());
  bool pool_seen = false;
  for (const auto& [href, doc] : *objects) {
    if (href != np) continue;
    pool_seen = true;
    EXPECT_NE(doc.find("\"#np1-0\""), std::string::npos) << doc;
  }
  EXPECT_TRUE(pool_seen);
  Restart();
  auto again = engine_->ClusterView(c);
  ASSERT_TRUE(again.ok());
  auto machines = [](const json::object& v) {
    std::string out;
    for (const auto& p : *GetArray(v, "node_pools")) out += ToJson(*GetArray(p.as_object(), "machines"));
    return out;
  };
  EXPECT_EQ(machines(*again), machines(*view));
  EXPECT_NE(machines(*view).find("np1-2"), std::string::npos);
  EXPECT_EQ(ToJson(*GetObject(*again, "control_plane")), ToJson(*GetObject(*view, "control_plane")));
  ASSERT_TRUE(RunUntil([&] { return State(np) == "ready"; }, 2h));
  EXPECT_EQ(azure_->MaxCreateStarts(), 1) << "an operation was started twice";
  std::filesystem::remove_all(dir);
}

// The simulated Azure and an engine on `db`, as hcprp opens them; `azure` receives the former.
Result<std::unique_ptr<Engine>> OpenOn(simulator::StateDb* db, const FakeClock& clock, LatencyProfile profile,
                                       std::unique_ptr<SimulatedAzure>& azure) {
  AzureOptions ao;
  ao.clock = &clock;
  ao.profile = profile;
  ao.state = db;
  auto az = SimulatedAzure::Open(ao);
  if (!az.ok()) return az.error();
  azure = std::move(*az);
  EngineOptions eo;
  eo.clock = &clock;
  eo.azure = azure.get();
  eo.state = db;
  return Engine::Open(eo);
}

// Forwards to a StateDb and remembers every object document written, in order.
class RecordingStateDb final : public simulator::StateDb {
 public:
  explicit RecordingStateDb(simulator::StateDb* db) : StateDb(db->dir()), db_(db) {}
  Result<std::vector<std::pair<std::string, std::string>>> Load(std::string_view space) override {
    return db_->Load(space);
  }
  Status Commit(const simulator::StateBatch& batch) override {
    {
      std::lock_guard lock(mu);
      for (const auto& c : batch.changes()) {
        if (c.space == "engine.object") written[c.key].push_back(c.doc.value_or(""));
      }
    }
    return db_->Commit(batch);
  }
  uint64_t commits() const override { return db_->commits(); }
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> written;

 private:
  simulator::StateDb* db_;
};

// A node pool's roll-up that changes nothing, and its cluster marked with it, are not written again.
TEST(EngineStateTest, AnObjectIsWrittenOnlyWhenItsDocumentChanges) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  auto db = simulator::StateDb::Open(dir);
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  RecordingStateDb recording(db->get());
  FakeClock clock;
  std::unique_ptr<SimulatedAzure> azure;
  auto engine = OpenOn(&recording, clock, LatencyProfile::kRealistic, azure);
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  auto store = simulator::NewStateStore(&recording);
  simulator::Scheduler scheduler(&clock);
  simulator::ServiceOptions so;
  so.clock = &clock;
  so.provisioner = engine->get();
  so.store = store.get();
  so.scheduler = &scheduler;
  auto service = simulator::Service::Open(so);
  ASSERT_TRUE(service.ok());
  RecordingSink sink;
  sink.service = service->get();
  (*engine)->Attach(&sink);
  auto created = (*service)->Handle(http::MakeRequest(Verb::post, kBase + "/clusters", ClusterBody("c1")));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  const std::string c(GetString(ParseJson(created.body())->as_object(), "href").value_or(""));
  auto pool = (*service)->Handle(http::MakeRequest(Verb::post, c + "/node_pools",
                                                   ToJson(json::object{{"name", "np1"}, {"replicas", 4}})));
  ASSERT_EQ(pool.result_int(), 201u) << pool.body();
  size_t ran = 0;
  for (int i = 0; i < 5000; ++i) {
    ran += (*engine)->RunDueForTest(1);
    auto next = (*engine)->NextDueForTest();
    if (!next) break;
    if (*next > clock.Now()) clock.Set(*next);
  }
  EXPECT_GT(ran, 100u);
  size_t writes = 0;
  for (const auto& [href, docs] : recording.written) {
    for (size_t i = 1; i < docs.size(); ++i) {
      EXPECT_NE(docs[i], docs[i - 1]) << href << " written again unchanged";
    }
    writes += docs.size();
  }
  EXPECT_GE(writes, 4u);  // each object created, moved and rolled up
  (*engine)->Stop();
  std::filesystem::remove_all(dir);
}

// Older documents, written whole (keys, owners and IDs in full), still load.
TEST(EngineStateTest, FullDocumentsOfAnOlderVersionStillLoad) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  auto db = simulator::StateDb::Open(dir);
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  const std::string rg = "/subscriptions/s/resourceGroups/arohcp-c1/providers/";
  simulator::StateBatch batch;
  batch.Put("engine.object", "/c/1",
            R"({"href":"/c/1","kind":"Cluster","cluster":"/c/1","name":"c1","op":"create",)"
            R"("cs_state":"installing","failure_state":"","desired":0,"sub":"s","mrg_id":"","caller":"",)"
            R"("cp_unit":"","creds_valid":true,"machines":[],"next_index":0,"orphaned":0,)"
            R"("orphaned_machines":[],"cond_since":{}})");
  batch.Put("engine.object", "/c/1/node_pools/p",
            R"({"href":"/c/1/node_pools/p","kind":"NodePool","cluster":"/c/1","name":"p","op":"create",)"
            R"("cs_state":"installing","desired":1,"machines":["/c/1/node_pools/p#p-0"],"next_index":1})");
  batch.Put("engine.unit", "/c/1/node_pools/p#p-0",
            R"({"key":"/c/1/node_pools/p#p-0","owner":"/c/1/node_pools/p","cluster":"/c/1","name":"p-0",)"
            R"("index":0,"caller":"/id","svcs":[{"type":6,"id":")" +
                rg + R"(Microsoft.Network/publicIPAddresses/p-0-pip","state":"Pending","since_ms":0}]})");
  ASSERT_TRUE((*db)->Commit(batch).ok());
  FakeClock clock;
  std::unique_ptr<SimulatedAzure> azure;
  auto e = OpenOn(db->get(), clock, LatencyProfile::kDemo, azure);
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  auto view = (*e)->ClusterView("/c/1");
  ASSERT_TRUE(view.ok()) << view.error().ToString();
  const json::array* pools = GetArray(*view, "node_pools");
  ASSERT_TRUE(pools && pools->size() == 1u) << ToJson(*view);
  const json::array* machines = GetArray(pools->front().as_object(), "machines");
  ASSERT_TRUE(machines && machines->size() == 1u) << ToJson(*view);
  EXPECT_NE(ToJson(machines->front()).find(rg + "Microsoft.Network/publicIPAddresses/p-0-pip"),
            std::string::npos)
      << ToJson(*view);
  std::filesystem::remove_all(dir);
}

// A stored future is persisted as {"fut_type": "create"|"delete", "fut_token": ...}: documents written
// so load with the future they hold, and anything else in fut_type is no future.
TEST(EngineStateTest, StoredFuturesLoadFromTheirPersistedForm) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  auto db = simulator::StateDb::Open(dir);
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  simulator::StateBatch batch;
  batch.Put("engine.object", "/c/1",
            R"({"href":"/c/1","kind":"Cluster","cluster":"/c/1","name":"c1","op":"create",)"
            R"("cs_state":"installing","sub":"s","machines":[]})");
  batch.Put("engine.object", "/c/1/node_pools/p",
            R"({"href":"/c/1/node_pools/p","kind":"NodePool","cluster":"/c/1","name":"p","op":"create",)"
            R"("cs_state":"installing","desired":1,"machines":["/c/1/node_pools/p#p-0"],"next_index":1})");
  batch.Put("engine.unit", "/c/1/node_pools/p#p-0",
            R"({"key":"/c/1/node_pools/p#p-0","caller":"/id","base":"/subscriptions/s/resourceGroups/m",)"
            R"("svcs":[{"type":6,"rid":"/pip","state":"Creating","fut_type":"create","fut_token":"t-1"},)"
            R"({"type":7,"rid":"/nic","state":"Deleting","fut_type":"delete","fut_token":"t-2"},)"
            R"({"type":8,"rid":"/disk","state":"Pending","fut_type":"poll","fut_token":"t-3"}]})");
  ASSERT_TRUE((*db)->Commit(batch).ok());
  FakeClock clock;
  std::unique_ptr<SimulatedAzure> azure;
  auto e = OpenOn(db->get(), clock, LatencyProfile::kDemo, azure);
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  auto view = (*e)->ClusterView("/c/1");
  ASSERT_TRUE(view.ok()) << view.error().ToString();
  const json::array* pools = GetArray(*view, "node_pools");
  ASSERT_TRUE(pools && pools->size() == 1u) << ToJson(*view);
  const json::array* machines = GetArray(pools->front().as_object(), "machines");
  ASSERT_TRUE(machines && machines->size() == 1u) << ToJson(*view);
  const json::array* futures = GetArray(machines->front().as_object(), "longRunningOperationStates");
  ASSERT_TRUE(futures && futures->size() == 2u) << ToJson(*view);
  EXPECT_EQ(
      ToJson((*futures)[0]),
      R"({"type":"create","serviceName":"publicIP","name":"/subscriptions/s/resourceGroups/m/pip","data":"t-1"})");
  EXPECT_EQ(
      ToJson((*futures)[1]),
      R"({"type":"delete","serviceName":"networkInterface","name":"/subscriptions/s/resourceGroups/m/nic","data":"t-2"})");
  std::filesystem::remove_all(dir);
}

// A stored object that names a unit the state does not hold fails the start, naming both.
TEST(EngineStateTest, AnObjectNamingAMissingUnitIsAnErrorAtLoad) {
  const std::string dir = "/tmp/hcprp-prov-" + NewUuidV4();
  auto db = simulator::StateDb::Open(dir);
  ASSERT_TRUE(db.ok()) << db.error().ToString();
  simulator::StateBatch batch;
  batch.Put(
      "engine.object", "/c/1",
      R"({"href":"/c/1","kind":"Cluster","cluster":"/c/1","op":"create","cp_unit":"/c/1#controlplane"})");
  ASSERT_TRUE((*db)->Commit(batch).ok());
  FakeClock clock;
  std::unique_ptr<SimulatedAzure> azure;
  auto e = OpenOn(db->get(), clock, LatencyProfile::kDemo, azure);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("/c/1#controlplane"), std::string::npos) << e.error().ToString();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hcprp::provisioning
