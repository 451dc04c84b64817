// The pure steps of a unit's reconcile: which call each service needs and what an answer does.
#include "provisioning/unit_step.h"

#include <gtest/gtest.h>

namespace hcprp::provisioning {
namespace {

using namespace std::chrono_literals;

const TimePoint kNow = TimePoint{} + 1000h;
const std::string kIdentity = "/subscriptions/s/resourceGroups/rg/providers/id/capz";

StepContext Context() { return StepContext{kNow, 2s, 10min, 5s, 2min}; }

UnitService Service(ResourceType type, SvcState state, std::string caller = kIdentity) {
  UnitService s;
  s.type = type;
  s.id = "/subscriptions/s/resourceGroups/mrg/" + std::string(ShortName(type));
  s.caller = std::move(caller);
  s.state = state;
  return s;
}

// A machine with its first two services.
UnitPass Machine(SvcState first, SvcState second, bool deleting = false) {
  UnitPass pass;
  pass.unit.key = "/c/1/node_pools/p#p-0";
  pass.unit.name = "p-0";
  pass.unit.deleting = deleting;
  pass.unit.svcs = {Service(ResourceType::kPublicIp, first),
                    Service(ResourceType::kNetworkInterface, second)};
  return pass;
}

UnitPass ControlPlane(bool deleting) {
  UnitPass pass;
  pass.unit.key = "/c/1#controlplane";
  pass.unit.control_plane = true;
  pass.unit.deleting = deleting;
  const SvcState s = deleting ? SvcState::kReady : SvcState::kPending;
  pass.unit.svcs = {Service(ResourceType::kResourceGroup, s, std::string(kFirstParty)),
                    Service(ResourceType::kPublicIp, s), Service(ResourceType::kLoadBalancer, s)};
  return pass;
}

AzureCall Answer(AzureCall::Outcome outcome, int status = 200) {
  AzureCall r;
  r.outcome = outcome;
  r.http_status = status;
  if (outcome == AzureCall::Outcome::kFailed || outcome == AzureCall::Outcome::kThrottled) {
    r.code = status == 401 ? "Unauthorized" : "InternalServerError";
    r.message = "answer " + std::to_string(status);
  }
  return r;
}

AzureCall Running(Duration left, Duration retry_after, std::string token = "op-1") {
  AzureCall r = Answer(AzureCall::Outcome::kPending, 202);
  r.token = std::move(token);
  r.done_at = kNow + left;
  r.retry_after = retry_after;
  return r;
}

// Steps service `index` with `answer` to the call PlanCall gives it, and folds the effects in.
StepEffects StepAndApply(UnitPass& pass, size_t index, const AzureCall& answer, TimePoint at = kNow) {
  const AzureRequest request = PlanCall(pass.unit.svcs[index], pass.unit.deleting);
  StepEffects effects = StepService(pass, index, request, answer, at, Context());
  StepEffects copy = effects;
  ApplyStep(index, std::move(effects), kNow, &pass);
  return copy;
}

TEST(AzureOpKindTest, PersistedNamesRoundTrip) {
  EXPECT_EQ(AzureOpKindName(AzureOpKind::kCreate), "create");
  EXPECT_EQ(AzureOpKindName(AzureOpKind::kDelete), "delete");
  EXPECT_EQ(ParseAzureOpKind("create"), AzureOpKind::kCreate);
  EXPECT_EQ(ParseAzureOpKind("delete"), AzureOpKind::kDelete);
  EXPECT_EQ(ParseAzureOpKind(""), std::nullopt);
  EXPECT_EQ(ParseAzureOpKind("poll"), std::nullopt);
}

TEST(UnitStepTest, NextServiceFollowsCreationOrderAndItsReverseWhenDeleting) {
  EXPECT_EQ(NextService(Machine(SvcState::kReady, SvcState::kPending).unit), 1u);
  EXPECT_EQ(NextService(Machine(SvcState::kFailed, SvcState::kPending).unit), 0u);
  EXPECT_EQ(NextService(Machine(SvcState::kReady, SvcState::kReady).unit), std::nullopt);
  EXPECT_EQ(NextService(Machine(SvcState::kReady, SvcState::kReady, true).unit), 1u);
  EXPECT_EQ(NextService(Machine(SvcState::kReady, SvcState::kDeleted, true).unit), 0u);
  EXPECT_EQ(NextService(Machine(SvcState::kDeleted, SvcState::kDeleted, true).unit), std::nullopt);
  UnitPass orphaned = Machine(SvcState::kReady, SvcState::kReady, true);
  orphaned.unit.orphaned = true;
  EXPECT_EQ(NextService(orphaned.unit), std::nullopt);
}

TEST(UnitStepTest, PollsOnlyAnOperationThatDoesWhatTheUnitDoesNow) {
  UnitService s = Service(ResourceType::kDisk, SvcState::kCreating);
  EXPECT_EQ(PlanCall(s, false), (AzureRequest{AzureOpKind::kCreate, std::nullopt}));
  s.pending = PendingAzureOp{AzureOpKind::kCreate, "op-7", true};
  EXPECT_EQ(PlanCall(s, false), (AzureRequest{AzureOpKind::kCreate, "op-7"}));
  // A create still awaited when the deletion starts: DELETE, not a poll of the create.
  EXPECT_EQ(PlanCall(s, true), (AzureRequest{AzureOpKind::kDelete, std::nullopt}));
  s.pending = PendingAzureOp{AzureOpKind::kDelete, "op-8", false};
  EXPECT_EQ(PlanCall(s, true), (AzureRequest{AzureOpKind::kDelete, "op-8"}));
}

TEST(UnitStepTest, CallPointsNameTheUnitTheOperationAndTheService) {
  UnitPass m = Machine(SvcState::kPending, SvcState::kPending);
  EXPECT_EQ(CallPoint(m.unit, m.unit.svcs[0]), "machine.create.publicIP");
  UnitPass cp = ControlPlane(true);
  EXPECT_EQ(CallPoint(cp.unit, cp.unit.svcs[2]), "controlplane.delete.loadBalancer");
}

TEST(UnitStepTest, ADoneAnswerReadiesTheServiceClearsItsErrorAndGoesOn) {
  UnitPass pass = Machine(SvcState::kFailed, SvcState::kPending);
  UnitService& s = pass.unit.svcs[0];
  s.attempts = 3;
  s.err_status = 500;
  s.err_code = "InternalServerError";
  s.err_message = "boom";
  s.pending = PendingAzureOp{AzureOpKind::kCreate, "op-1", true};
  const StepEffects e = StepAndApply(pass, 0, Answer(AzureCall::Outcome::kDone));
  EXPECT_TRUE(e.go_on);
  EXPECT_EQ(e.next, std::nullopt);
  EXPECT_EQ(e.counts.calls, 1);
  EXPECT_EQ(e.sighting.kind, CredentialSighting::Kind::kValid);
  const UnitService& after = pass.unit.svcs[0];
  EXPECT_EQ(after.state, SvcState::kReady);
  EXPECT_EQ(after.since, kNow);
  EXPECT_EQ(after.pending, std::nullopt);
  EXPECT_EQ(after.attempts, 0);
  EXPECT_EQ(after.err_status, 0);
  EXPECT_TRUE(after.err_code.empty() && after.err_message.empty());
  EXPECT_EQ(NextService(pass.unit), 1u);
}

TEST(UnitStepTest, AnOperationDoneWithinTheClientTimeoutIsAwaitedNotStored) {
  UnitPass pass = Machine(SvcState::kPending, SvcState::kPending);
  const TimePoint answered = kNow + 30ms;
  const StepEffects e = StepAndApply(pass, 0, Running(1s, 1s), answered);
  EXPECT_FALSE(e.go_on);
  EXPECT_EQ(e.next, answered + 1s);  // Retry-After counts from the answer
  EXPECT_EQ(e.counts.completed_within_timeout, 1);
  EXPECT_EQ(e.counts.futures_stored, 0);
  EXPECT_EQ(pass.next, answered + 1s);
  EXPECT_EQ(pass.unit.svcs[0].state, SvcState::kCreating);
  EXPECT_EQ(pass.unit.svcs[0].pending, (PendingAzureOp{AzureOpKind::kCreate, "op-1", false}));
}

TEST(UnitStepTest, AnOperationOutlivingTheClientTimeoutIsStoredOnce) {
  UnitPass pass = Machine(SvcState::kPending, SvcState::kPending);
  StepEffects e = StepAndApply(pass, 0, Running(5min, 10s));
  EXPECT_EQ(e.counts.futures_stored, 1);
  EXPECT_EQ(pass.unit.svcs[0].pending, (PendingAzureOp{AzureOpKind::kCreate, "op-1", true}));
  // The next poll answers it still running: stored already, counted neither way.
  e = StepAndApply(pass, 0, Running(4min, 0s));
  EXPECT_EQ(e.counts.futures_stored, 0);
  EXPECT_EQ(e.counts.completed_within_timeout, 0);
  EXPECT_EQ(e.next, kNow + 1ms);  // never sooner than a millisecond
  EXPECT_TRUE(pass.unit.svcs[0].pending->stored);
}

TEST(UnitStepTest, AThrottledCallKeepsTheOperationAndRetriesAfterRetryAfter) {
  UnitPass pass = Machine(SvcState::kCreating, SvcState::kPending);
  pass.unit.svcs[0].pending = PendingAzureOp{AzureOpKind::kCreate, "op-1", true};
  AzureCall throttled = Answer(AzureCall::Outcome::kThrottled, 429);
  throttled.retry_after = 7s;
  const StepEffects e = StepAndApply(pass, 0, throttled, kNow + 5ms);
  EXPECT_FALSE(e.go_on);
  EXPECT_EQ(e.next, kNow + 5ms + 7s);
  EXPECT_EQ(e.counts.throttled, 1);
  EXPECT_EQ(e.sighting.kind, CredentialSighting::Kind::kNone);
  const UnitService& s = pass.unit.svcs[0];
  EXPECT_EQ(s.state, SvcState::kCreating);
  EXPECT_EQ(s.pending, (PendingAzureOp{AzureOpKind::kCreate, "op-1", true}));
  EXPECT_EQ(s.err_status, 429);
  EXPECT_EQ(s.attempts, 0);
}

TEST(UnitStepTest, FailuresBackOffExponentiallyUpToTheMaximum) {
  UnitPass pass = Machine(SvcState::kPending, SvcState::kPending);
  pass.unit.svcs[0].pending = PendingAzureOp{AzureOpKind::kCreate, "op-1", false};
  StepEffects e = StepAndApply(pass, 0, Answer(AzureCall::Outcome::kFailed, 500));
  EXPECT_FALSE(e.go_on);
  EXPECT_EQ(e.next, kNow + 5s);
  EXPECT_EQ(e.counts.failures, 1);
  EXPECT_EQ(e.counts.credential_failures, 0);
  EXPECT_FALSE(e.creds_invalid_now);
  const UnitService& s = pass.unit.svcs[0];
  EXPECT_EQ(s.state, SvcState::kFailed);
  EXPECT_EQ(s.since, kNow);
  EXPECT_EQ(s.pending, std::nullopt);
  EXPECT_EQ(s.err_status, 500);
  EXPECT_EQ(s.err_message, "answer 500");
  // The retry fails too: twice the backoff, then up to backoff_max.
  e = StepAndApply(pass, 0, Answer(AzureCall::Outcome::kFailed, 500));
  EXPECT_EQ(e.next, kNow + 10s);
  EXPECT_EQ(pass.unit.svcs[0].attempts, 2);
  pass.unit.svcs[0].attempts = 20;
  e = StepAndApply(pass, 0, Answer(AzureCall::Outcome::kFailed, 500));
  EXPECT_EQ(e.next, kNow + 2min);
  // A retry that succeeds clears the failure.
  StepAndApply(pass, 0, Answer(AzureCall::Outcome::kDone));
  EXPECT_EQ(pass.unit.svcs[0].state, SvcState::kReady);
  EXPECT_EQ(pass.unit.svcs[0].attempts, 0);
}

TEST(UnitStepTest, ACredentialFailureDuringCreationRetriesAndMarksTheCredentialsInvalid) {
  UnitPass pass = Machine(SvcState::kReady, SvcState::kPending);
  const StepEffects e = StepAndApply(pass, 1, Answer(AzureCall::Outcome::kFailed, 401));
  EXPECT_EQ(e.next, kNow + 5s);
  EXPECT_EQ(e.counts.credential_failures, 1);
  EXPECT_TRUE(e.creds_invalid_now);
  EXPECT_EQ(e.orphaning, Orphaning::kNone);
  EXPECT_TRUE(pass.creds_invalid);
  EXPECT_EQ(pass.creds_invalid_since, kNow);
  EXPECT_EQ(pass.creds_seen.kind, CredentialSighting::Kind::kInvalid);
  EXPECT_EQ(pass.creds_seen.reason, "IdentityNotFound");
  EXPECT_EQ(pass.creds_seen.message, "answer 401");
  EXPECT_EQ(pass.unit.svcs[1].state, SvcState::kFailed);
}

TEST(UnitStepTest, AnInvalidSightingWinsOverValidOnes) {
  UnitPass pass = Machine(SvcState::kPending, SvcState::kPending);
  StepAndApply(pass, 0, Answer(AzureCall::Outcome::kDone));
  EXPECT_EQ(pass.creds_seen.kind, CredentialSighting::Kind::kValid);
  StepAndApply(pass, 1, Answer(AzureCall::Outcome::kFailed, 403));
  EXPECT_EQ(pass.creds_seen.kind, CredentialSighting::Kind::kInvalid);
  EXPECT_EQ(pass.creds_seen.reason, "AuthorizationFailed");
  StepAndApply(pass, 1, Answer(AzureCall::Outcome::kDone));
  EXPECT_EQ(pass.creds_seen.kind, CredentialSighting::Kind::kInvalid);
}

TEST(UnitStepTest, ADeletionWithoutCredentialsRetriesUntilTheOrphanThreshold) {
  UnitPass pass = Machine(SvcState::kReady, SvcState::kReady, true);
  pass.creds_invalid = true;
  pass.creds_invalid_since = kNow - 9min - 58s;
  const StepEffects e = StepAndApply(pass, 1, Answer(AzureCall::Outcome::kFailed, 403));
  EXPECT_FALSE(e.creds_invalid_now);
  EXPECT_EQ(e.orphaning, Orphaning::kNone);
  EXPECT_EQ(e.next, kNow + 2s);  // the threshold comes before the backoff
  EXPECT_EQ(pass.unit.svcs[1].state, SvcState::kDeletionFailed);
  EXPECT_EQ(pass.creds_invalid_since, kNow - 9min - 58s);
  EXPECT_FALSE(pass.unit.orphaned);
}

TEST(UnitStepTest, AMachineDeletionWithoutCredentialsPastTheThresholdIsOrphaned) {
  UnitPass pass = Machine(SvcState::kReady, SvcState::kReady, true);
  pass.creds_invalid = true;
  pass.creds_invalid_since = kNow - 10min;
  const StepEffects e = StepAndApply(pass, 1, Answer(AzureCall::Outcome::kFailed, 401));
  EXPECT_EQ(e.orphaning, Orphaning::kMachine);
  EXPECT_FALSE(e.go_on);
  EXPECT_EQ(e.next, std::nullopt);
  EXPECT_EQ(e.points, std::vector<std::string>{"orphan.machine"});
  EXPECT_TRUE(pass.unit.orphaned);
  EXPECT_EQ(pass.next, std::nullopt);
  EXPECT_EQ(NextService(pass.unit), std::nullopt);
  EXPECT_TRUE(pass.unit.Done());
  EXPECT_TRUE(ShownStateChanged(pass.unit.svcs, pass.unit));
}

TEST(UnitStepTest, AControlPlaneDeletionPastTheThresholdLeavesItsGroupToTheFirstParty) {
  UnitPass pass = ControlPlane(true);
  pass.creds_invalid = true;
  pass.creds_invalid_since = kNow - 11min;
  const StepEffects e = StepAndApply(pass, 2, Answer(AzureCall::Outcome::kFailed, 401));
  EXPECT_EQ(e.orphaning, Orphaning::kControlPlane);
  EXPECT_TRUE(e.go_on);
  EXPECT_EQ(e.counts.orphaned_control_planes, 1);
  EXPECT_EQ(e.points, std::vector<std::string>{"orphan.controlplane"});
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(pass.unit.svcs[i].state, SvcState::kDeleted) << i;
    EXPECT_TRUE(pass.unit.svcs[i].orphaned) << i;
    EXPECT_EQ(pass.unit.svcs[i].since, kNow) << i;
  }
  EXPECT_EQ(pass.unit.svcs[0].state, SvcState::kReady);
  EXPECT_FALSE(pass.unit.svcs[0].orphaned);
  ASSERT_EQ(NextService(pass.unit), 0u);
  // The first party's DELETE of the group starts its deletion: counted once, not when polled.
  EXPECT_EQ(PlanCall(pass.unit.svcs[0], true), (AzureRequest{AzureOpKind::kDelete, std::nullopt}));
  StepEffects group = StepAndApply(pass, 0, Running(5min, 10s, "rg-op"));
  EXPECT_EQ(group.counts.first_party_group_deletions, 1);
  EXPECT_EQ(group.sighting.kind, CredentialSighting::Kind::kNone);
  EXPECT_EQ(pass.unit.svcs[0].pending, (PendingAzureOp{AzureOpKind::kDelete, "rg-op", true}));
  group = StepAndApply(pass, 0, Running(4min, 10s, "rg-op"));
  EXPECT_EQ(group.counts.first_party_group_deletions, 0);
  StepAndApply(pass, 0, Answer(AzureCall::Outcome::kDone));
  EXPECT_TRUE(pass.unit.Done());
  EXPECT_EQ(pass.counts.first_party_group_deletions, 1);
  EXPECT_EQ(pass.counts.calls, 4);
}

TEST(UnitStepTest, AStoredFutureStaysStoredWhenTheDeletionReplacesItsOperation) {
  UnitPass pass = Machine(SvcState::kReady, SvcState::kCreating, true);
  pass.unit.svcs[1].pending = PendingAzureOp{AzureOpKind::kCreate, "create-op", true};
  const StepEffects e = StepAndApply(pass, 1, Running(1s, 1s, "delete-op"));
  EXPECT_EQ(e.counts.futures_stored, 0);
  EXPECT_EQ(e.counts.completed_within_timeout, 0);
  EXPECT_EQ(pass.unit.svcs[1].state, SvcState::kDeleting);
  EXPECT_EQ(pass.unit.svcs[1].pending, (PendingAzureOp{AzureOpKind::kDelete, "delete-op", true}));
}

TEST(UnitStepTest, ShownStateChangesAreStatesAndErrorMessages) {
  const UnitPass pass = Machine(SvcState::kCreating, SvcState::kPending);
  Unit after = pass.unit;
  EXPECT_FALSE(ShownStateChanged(pass.unit.svcs, after));
  after.svcs[0].pending = PendingAzureOp{AzureOpKind::kCreate, "op", true};  // not shown
  EXPECT_FALSE(ShownStateChanged(pass.unit.svcs, after));
  after.svcs[1].err_message = "throttled";
  EXPECT_TRUE(ShownStateChanged(pass.unit.svcs, after));
  after = pass.unit;
  after.svcs[0].state = SvcState::kReady;
  EXPECT_TRUE(ShownStateChanged(pass.unit.svcs, after));
}

}  // namespace
}  // namespace hcprp::provisioning
