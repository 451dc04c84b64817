#include "provisioning/azure.h"

#include <gtest/gtest.h>

#include <map>

#include <filesystem>

#include "core/uuid.h"

namespace hcprp::provisioning {
namespace {

using namespace std::chrono_literals;
using Outcome = AzureCall::Outcome;

const std::string kSub = "/subscriptions/s1";
const std::string kMrg = kSub + "/resourceGroups/mrg";
const std::string kPip = kMrg + "/providers/Microsoft.Network/publicIPAddresses/a";
const std::string kId =
    kSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz";

class AzureTest : public ::testing::Test {
 protected:
  void Open(std::string dir = "") {
    AzureOptions o;
    o.clock = &clock_;
    o.profile = LatencyProfile::kDemo;  // deterministic: realistic median / 30
    if (!dir.empty()) {
      auto db = simulator::StateDb::Open(dir);
      ASSERT_TRUE(db.ok()) << db.error().ToString();
      state_ = std::move(*db);
    }
    o.state = state_.get();
    auto az = SimulatedAzure::Open(o);
    ASSERT_TRUE(az.ok()) << az.error().ToString();
    az_ = std::move(*az);
  }
  void Group() {
    auto g = az_->BeginCreate(kFirstParty, ResourceType::kResourceGroup, kMrg);
    clock_.Advance(1h);
    if (g.outcome == Outcome::kPending) {
      ASSERT_EQ(az_->Poll(kFirstParty, g.token).outcome, Outcome::kDone);
    }
  }
  FakeClock clock_;
  std::unique_ptr<simulator::StateDb> state_;
  std::unique_ptr<SimulatedAzure> az_;
};

TEST_F(AzureTest, CreateIsALongRunningOperationCompletedByTheClockAndIdempotent) {
  Open();
  Group();
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  ASSERT_EQ(a.outcome, Outcome::kPending);
  EXPECT_EQ(a.done_at - clock_.Now(),
            std::chrono::duration_cast<Duration>(std::chrono::duration<double>(4.0 / 30)));
  // A second PUT adopts the running operation instead of starting another.
  auto b = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  EXPECT_EQ(b.token, a.token);
  EXPECT_EQ(az_->CreateStarts(kPip), 1);
  EXPECT_EQ(az_->ProvisioningState(kPip), "Creating");
  clock_.Set(a.done_at);
  EXPECT_EQ(az_->Poll(kFirstParty, a.token).outcome, Outcome::kDone);
  EXPECT_EQ(az_->ProvisioningState(kPip), "Succeeded");
  EXPECT_EQ(az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip).outcome, Outcome::kDone);
  EXPECT_EQ(az_->CreateStarts(kPip), 1);
}

TEST_F(AzureTest, CreateOutsideAMissingGroupFails) {
  Open();
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  EXPECT_EQ(a.outcome, Outcome::kFailed);
  EXPECT_EQ(a.code, "ResourceGroupNotFound");
}

TEST_F(AzureTest, ThrottlingAnswers429WithRetryAfterAndStartsNothing) {
  Open();
  Group();
  AzureFault f;
  f.kind = "throttle";
  f.type = ResourceType::kPublicIp;
  f.retry_after = 17s;
  az_->AddFault(f);
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  EXPECT_EQ(a.outcome, Outcome::kThrottled);
  EXPECT_EQ(a.http_status, 429);
  EXPECT_EQ(a.retry_after, 17s);
  EXPECT_EQ(az_->CreateStarts(kPip), 0);
  EXPECT_EQ(az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip).outcome, Outcome::kPending);
}

// Calls are counted by service, call and outcome (the metrics of the simulated Azure).
TEST_F(AzureTest, CallsAreCountedByServiceCallAndOutcome) {
  Open();
  Group();  // resourceGroup: create accepted, poll succeeded
  AzureFault f;
  f.kind = "throttle";
  f.type = ResourceType::kPublicIp;
  az_->AddFault(f);
  EXPECT_EQ(az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip).outcome, Outcome::kThrottled);
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  ASSERT_EQ(a.outcome, Outcome::kPending);
  clock_.Set(a.done_at);
  EXPECT_EQ(az_->Poll(kFirstParty, a.token).outcome, Outcome::kDone);
  std::map<std::string, int64_t> got;
  for (const auto& c : az_->CallCounts()) {
    got[std::string(ShortName(c.type)) + " " + std::string(c.call) + " " + std::string(c.outcome)] += c.count;
  }
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"publicIP create accepted", 1},
                                                 {"publicIP create throttled", 1},
                                                 {"publicIP poll succeeded", 1},
                                                 {"resourceGroup create accepted", 1},
                                                 {"resourceGroup poll succeeded", 1}}));
}

TEST_F(AzureTest, DeletingTheGroupDeletesEverythingInIt) {
  Open();
  Group();
  az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  az_->BeginCreate(kFirstParty, ResourceType::kDisk, kMrg + "/providers/Microsoft.Compute/disks/d");
  auto d = az_->BeginDelete(kFirstParty, kMrg);
  ASSERT_EQ(d.outcome, Outcome::kPending);
  EXPECT_EQ(az_->List(kMrg).size(), 3u);
  clock_.Set(d.done_at);
  EXPECT_EQ(az_->Poll(kFirstParty, d.token).outcome, Outcome::kDone);
  EXPECT_EQ(az_->List(kMrg).size(), 0u);
  EXPECT_EQ(az_->operations_in_flight(), 0u);
}

TEST_F(AzureTest, DeletedOrPowerlessIdentitiesCannotAct) {
  Open();
  Group();
  az_->EnsureCustomerResource(ResourceType::kManagedIdentity, kId);
  EXPECT_EQ(az_->BeginCreate(kId, ResourceType::kPublicIp, kPip).outcome, Outcome::kPending);
  ASSERT_TRUE(az_->SetIdentityPermissions(kId, false).ok());
  auto denied = az_->BeginDelete(kId, kPip);
  EXPECT_TRUE(denied.credential_error());
  EXPECT_EQ(denied.http_status, 403);
  EXPECT_EQ(denied.code, "AuthorizationFailed");
  ASSERT_TRUE(az_->DeleteIdentity(kId).ok());
  auto gone = az_->BeginDelete(kId, kPip);
  EXPECT_EQ(gone.http_status, 401);
  EXPECT_NE(gone.message.find("AADSTS700016: Application with identifier"), std::string::npos);
  // The customer's identity stays deleted even when a cluster still names it.
  az_->EnsureCustomerResource(ResourceType::kManagedIdentity, kId);
  EXPECT_EQ(az_->ProvisioningState(kId), std::nullopt);
  // The first-party identity still can.
  EXPECT_EQ(az_->BeginDelete(kFirstParty, kPip).outcome, Outcome::kPending);
}

TEST_F(AzureTest, InjectedFailureEndsTheOperationFailedAndAPutRetries) {
  Open();
  Group();
  AzureFault f;
  f.type = ResourceType::kPublicIp;
  f.code = "PublicIPCountLimitReached";
  az_->AddFault(f);
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  clock_.Set(a.done_at);
  auto r = az_->Poll(kFirstParty, a.token);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.code, "PublicIPCountLimitReached");
  EXPECT_EQ(az_->ProvisioningState(kPip), "Failed");
  auto b = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  EXPECT_EQ(b.outcome, Outcome::kPending);
  EXPECT_EQ(az_->CreateStarts(kPip), 2);
}

TEST_F(AzureTest, StateSurvivesARestart) {
  const std::string dir = "/tmp/hcprp-azure-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(dir);
  Group();
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  ASSERT_TRUE(az_->Flush().ok());
  az_.reset();
  state_.reset();
  Open(dir);
  EXPECT_EQ(az_->ProvisioningState(kPip), "Creating");
  clock_.Set(a.done_at);
  EXPECT_EQ(az_->Poll(kFirstParty, a.token).outcome, Outcome::kDone);
  EXPECT_EQ(az_->CreateStarts(kPip), 1);
  std::filesystem::remove_all(dir);
}

// The stored documents leave out what loading defaults; what differs from the defaults (a customer's
// identity without permissions, an operation bound to fail with its code and message, a delete)
// comes back after a restart.
TEST_F(AzureTest, WhatDiffersFromTheDefaultsSurvivesARestart) {
  const std::string dir = "/tmp/hcprp-azure-" + NewUuidV4();
  std::filesystem::create_directories(dir);
  Open(dir);
  Group();
  az_->EnsureCustomerResource(ResourceType::kManagedIdentity, kId);
  ASSERT_TRUE(az_->SetIdentityPermissions(kId, false).ok());
  const std::string disk_id = kMrg + "/providers/Microsoft.Compute/disks/d1";
  auto d = az_->BeginCreate(kFirstParty, ResourceType::kDisk, disk_id);
  clock_.Set(d.done_at);
  ASSERT_EQ(az_->Poll(kFirstParty, d.token).outcome, Outcome::kDone);
  auto del = az_->BeginDelete(kFirstParty, disk_id);
  ASSERT_EQ(del.outcome, Outcome::kPending);
  AzureFault f;
  f.type = ResourceType::kPublicIp;
  f.code = "PublicIPCountLimitReached";
  f.message = "Cannot create more than 10 public IP addresses";
  az_->AddFault(f);
  auto a = az_->BeginCreate(kFirstParty, ResourceType::kPublicIp, kPip);
  ASSERT_EQ(a.outcome, Outcome::kPending);
  az_->ClearFaults();
  ASSERT_TRUE(az_->Flush().ok());
  az_.reset();
  state_.reset();
  Open(dir);
  EXPECT_EQ(az_->BeginDelete(kId, kPip).http_status, 403) << "the identity got its permissions back";
  EXPECT_EQ(az_->ProvisioningState(disk_id), "Deleting");
  clock_.Set(std::max(a.done_at, del.done_at));
  auto r = az_->Poll(kFirstParty, a.token);
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.code, "PublicIPCountLimitReached");
  EXPECT_EQ(r.message, f.message);
  EXPECT_EQ(az_->Poll(kFirstParty, del.token).outcome, Outcome::kDone);
  EXPECT_EQ(az_->ProvisioningState(disk_id), std::nullopt);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hcprp::provisioning
