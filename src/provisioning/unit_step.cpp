#include "provisioning/unit_step.h"

#include <algorithm>

namespace hcprp::provisioning {

namespace {

// Retry-After as the time to ask again, never sooner than a millisecond after the answer.
TimePoint AskAgainAt(const AzureCall& answer, TimePoint answered_at) {
  return answered_at + std::max(answer.retry_after, Duration(std::chrono::milliseconds(1)));
}

CredentialSighting SightingOf(const UnitService& service, const AzureCall& answer) {
  if (service.caller == kFirstParty) return {};
  if (answer.credential_error()) {
    return {CredentialSighting::Kind::kInvalid,
            answer.http_status == 401 ? "IdentityNotFound" : "AuthorizationFailed", answer.message};
  }
  if (answer.outcome == AzureCall::Outcome::kThrottled) return {};
  return {CredentialSighting::Kind::kValid, "", ""};
}

void EnterState(UnitService& s, SvcState state, TimePoint now) {
  if (s.state != state) s.since = now;
  s.state = state;
}

void StepDone(bool deleting, const StepContext& context, StepEffects& e) {
  UnitService& s = e.service;
  EnterState(s, deleting ? SvcState::kDeleted : SvcState::kReady, context.now);
  s.pending.reset();
  s.attempts = 0;
  s.err_status = 0;
  s.err_code.clear();
  s.err_message.clear();
  e.go_on = true;
}

void StepPending(bool deleting, const AzureCall& answer, TimePoint answered_at, const StepContext& context,
                 StepEffects& e) {
  UnitService& s = e.service;
  EnterState(s, deleting ? SvcState::kDeleting : SvcState::kCreating, context.now);
  // A future stored once stays stored (also when the operation it waits on changes).
  const bool was_stored = s.pending && s.pending->stored;
  s.pending =
      PendingAzureOp{deleting ? AzureOpKind::kDelete : AzureOpKind::kCreate, answer.token, was_stored};
  if (answer.done_at - context.now <= context.client_timeout) {
    // The call would have returned within the client timeout: carry on when it does.
    if (!was_stored) e.counts.completed_within_timeout = 1;
  } else if (!was_stored) {
    s.pending->stored = true;
    e.counts.futures_stored = 1;
  }
  e.next = AskAgainAt(answer, answered_at);
}

void StepThrottled(const AzureCall& answer, TimePoint answered_at, StepEffects& e) {
  e.counts.throttled = 1;
  e.service.err_status = 429;
  e.service.err_code = answer.code;
  e.service.err_message = answer.message;
  e.next = AskAgainAt(answer, answered_at);
}

// A deletion failing on the cluster's credentials since `invalid_since`: orphaned once that is
// orphan_threshold ago, else retried after the backoff, or sooner when the threshold comes first.
void StepDeletionWithoutCredentials(const UnitPass& pass, TimePoint invalid_since, Duration backoff,
                                    const StepContext& context, StepEffects& e) {
  const TimePoint now = context.now;
  if (now - invalid_since < context.orphan_threshold) {
    e.next = now + std::min(backoff, invalid_since + context.orphan_threshold - now);
    return;
  }
  // Orphaning: skip the cleanup the customer's identity can no longer do; the first-party identity
  // deletes the managed resource group with everything in it.
  if (pass.unit.control_plane) {
    e.orphaning = Orphaning::kControlPlane;
    e.counts.orphaned_control_planes = 1;
    e.points.emplace_back("orphan.controlplane");
    e.go_on = true;
    return;
  }
  e.orphaning = Orphaning::kMachine;
  e.points.emplace_back("orphan.machine");
}

void StepFailed(const UnitPass& pass, const AzureCall& answer, const StepContext& context, StepEffects& e) {
  UnitService& s = e.service;
  const bool deleting = pass.unit.deleting;
  e.counts.failures = 1;
  s.attempts++;
  s.err_status = answer.http_status;
  s.err_code = answer.code;
  s.err_message = answer.message;
  s.pending.reset();
  EnterState(s, deleting ? SvcState::kDeletionFailed : SvcState::kFailed, context.now);
  const Duration backoff =
      std::min(context.backoff_base * (1 << std::min(s.attempts - 1, 10)), context.backoff_max);
  if (answer.credential_error()) {
    e.counts.credential_failures = 1;
    e.creds_invalid_now = !pass.creds_invalid;
    if (deleting) {
      const TimePoint invalid_since = pass.creds_invalid ? pass.creds_invalid_since : context.now;
      StepDeletionWithoutCredentials(pass, invalid_since, backoff, context, e);
      return;
    }
  }
  e.next = context.now + backoff;
}

}  // namespace

std::optional<size_t> NextService(const Unit& unit) {
  if (unit.deleting && unit.orphaned) return std::nullopt;
  const auto& svcs = unit.svcs;
  if (!unit.deleting) {
    for (size_t i = 0; i < svcs.size(); ++i) {
      if (svcs[i].state != SvcState::kReady) return i;
    }
    return std::nullopt;
  }
  for (size_t i = svcs.size(); i > 0; --i) {
    if (svcs[i - 1].state != SvcState::kDeleted) return i - 1;
  }
  return std::nullopt;
}

AzureRequest PlanCall(const UnitService& service, bool deleting) {
  AzureRequest request{deleting ? AzureOpKind::kDelete : AzureOpKind::kCreate, std::nullopt};
  if (service.pending && service.pending->kind == request.kind) request.poll_token = service.pending->token;
  return request;
}

std::string CallPoint(const Unit& unit, const UnitService& service) {
  return std::string(unit.control_plane ? "controlplane." : "machine.") +
         (unit.deleting ? "delete." : "create.") + std::string(ShortName(service.type));
}

StepEffects StepService(const UnitPass& pass, size_t index, const AzureRequest& request,
                        const AzureCall& answer, TimePoint answered_at, const StepContext& context) {
  StepEffects e;
  e.service = pass.unit.svcs[index];
  e.sighting = SightingOf(e.service, answer);
  e.counts.calls = 1;
  // A DELETE of a managed resource group that starts its deletion (not a poll of one running).
  if (request.kind == AzureOpKind::kDelete && !request.poll_token &&
      e.service.type == ResourceType::kResourceGroup && answer.outcome == AzureCall::Outcome::kPending) {
    e.counts.first_party_group_deletions = 1;
  }
  switch (answer.outcome) {
    case AzureCall::Outcome::kDone:
      StepDone(pass.unit.deleting, context, e);
      break;
    case AzureCall::Outcome::kPending:
      StepPending(pass.unit.deleting, answer, answered_at, context, e);
      break;
    case AzureCall::Outcome::kThrottled:
      StepThrottled(answer, answered_at, e);
      break;
    case AzureCall::Outcome::kFailed:
      StepFailed(pass, answer, context, e);
      break;
  }
  return e;
}

bool ApplyStep(size_t index, StepEffects effects, TimePoint now, UnitPass* pass) {
  Unit& u = pass->unit;
  u.svcs[index] = std::move(effects.service);
  if (effects.sighting.kind == CredentialSighting::Kind::kInvalid) {
    pass->creds_seen = std::move(effects.sighting);
  } else if (effects.sighting.kind == CredentialSighting::Kind::kValid &&
             pass->creds_seen.kind == CredentialSighting::Kind::kNone) {
    pass->creds_seen.kind = CredentialSighting::Kind::kValid;
  }
  if (effects.creds_invalid_now) {
    pass->creds_invalid = true;
    pass->creds_invalid_since = now;
  }
  if (effects.orphaning == Orphaning::kControlPlane) {
    for (auto& s : u.svcs) {
      if (s.caller != kFirstParty && s.state != SvcState::kDeleted) {
        s.state = SvcState::kDeleted;
        s.orphaned = true;
        s.since = now;
      }
    }
  } else if (effects.orphaning == Orphaning::kMachine) {
    u.orphaned = true;
  }
  pass->counts += effects.counts;
  if (!effects.go_on) pass->next = effects.next;
  return effects.go_on;
}

bool ShownStateChanged(const std::vector<UnitService>& before, const Unit& after) {
  if (after.orphaned) return true;
  for (size_t i = 0; i < after.svcs.size() && i < before.size(); ++i) {
    if (after.svcs[i].state != before[i].state || after.svcs[i].err_message != before[i].err_message)
      return true;
  }
  return false;
}

}  // namespace hcprp::provisioning
