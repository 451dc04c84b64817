// One reconcile of a unit, planned by pure functions: which service to call next and with which call
// (NextService, PlanCall), what an Azure answer does (StepService: the effects), and how the effects
// fold into the reconcile so far (ApplyStep). The engine's loop makes the calls between them and
// commits what the reconcile leaves (engine_unit.cpp). Private to the engine.
//
// One reconcile calls the services in order (creation order, or the reverse when deleting) until one
// is not done: an operation still running or throttled (run again when Azure advises), a failure (run
// again after an exponential backoff), or an orphaned deletion. A deletion failing with 401/403 for
// orphan_threshold is orphaned: a control plane marks its customer's services deleted and goes on (the
// first-party identity deletes the managed resource group), a machine is orphaned whole.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "provisioning/azure.h"
#include "provisioning/engine.h"
#include "provisioning/unit.h"

namespace hcprp::provisioning {

// The call a service needs: a poll of the operation it waits on when that operation does what the
// unit does now, else a PUT or DELETE (which adopts an operation already running).
struct AzureRequest {
  AzureOpKind kind = AzureOpKind::kCreate;
  std::optional<std::string> poll_token;

  bool operator==(const AzureRequest&) const = default;
};

// What holds for the whole reconcile: when it started and the durations it applies (scaled).
struct StepContext {
  TimePoint now{};
  Duration client_timeout{};
  Duration orphan_threshold{};
  Duration backoff_base{};
  Duration backoff_max{};
};

// What an answer showed of the cluster's credentials; calls as the first party show nothing, nor does
// a throttled call.
struct CredentialSighting {
  enum class Kind { kNone, kValid, kInvalid };
  Kind kind = Kind::kNone;
  std::string reason, message;  // kInvalid: IdentityNotFound (401) or AuthorizationFailed (403)
};

// A reconcile as it goes.
struct UnitPass {
  Unit unit;  // as the answers so far leave it
  // Whether the cluster's credentials are invalid and since when: as the cluster said when the
  // reconcile started, or from the first credential failure of this reconcile.
  bool creds_invalid = false;
  TimePoint creds_invalid_since{};
  CredentialSighting creds_seen;  // an invalid sighting wins over valid ones; the last invalid one's reason
  EngineMetrics counts;           // to add to the engine's (calls, futures, failures, ...)
  std::optional<TimePoint> next;  // when to reconcile the unit again
};

enum class Orphaning { kNone, kControlPlane, kMachine };

// What one answer does to the reconcile.
struct StepEffects {
  UnitService service;  // the called service as the answer leaves it
  CredentialSighting sighting;
  bool creds_invalid_now = false;  // the first credential failure of the reconcile: invalid since now
  Orphaning orphaning = Orphaning::kNone;
  EngineMetrics counts;
  bool go_on = false;               // call the next service; else the reconcile ends
  std::optional<TimePoint> next;    // when the reconcile ends: run the unit again then (none: not by itself)
  std::vector<std::string> points;  // crash points reached (AfterCommit)
};

// The index of the service to call next (the first not ready, or when deleting the last not deleted);
// nullopt when every one is done or the deletion is orphaned.
std::optional<size_t> NextService(const Unit& unit);

// The call `service` needs while its unit is (or is not) `deleting`.
AzureRequest PlanCall(const UnitService& service, bool deleting);

// The crash point reached before calling `service` ("machine.create.publicIP", ...).
std::string CallPoint(const Unit& unit, const UnitService& service);

// What `answer` (to `request` for unit.svcs[index], answered at `answered_at`) does. Retry-After
// counts from the answer; a backoff counts from the start of the reconcile.
// REQUIRES: index < pass.unit.svcs.size().
StepEffects StepService(const UnitPass& pass, size_t index, const AzureRequest& request,
                        const AzureCall& answer, TimePoint answered_at, const StepContext& context);

// Folds `effects` of the answer for service `index` into `pass`; returns effects.go_on.
bool ApplyStep(size_t index, StepEffects effects, TimePoint now, UnitPass* pass);

// Whether the conditions would show a change from `before` (the services when the reconcile started):
// a service's state or error message, or the unit orphaned.
bool ShownStateChanged(const std::vector<UnitService>& before, const Unit& after);

}  // namespace hcprp::provisioning
