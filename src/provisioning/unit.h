// The records of one unit of the provisioning engine (a machine or a control plane): its Azure
// services in order, each with its state and the Azure operation it waits on. Private to the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "provisioning/azure.h"

namespace hcprp::provisioning {

enum class SvcState { kPending, kCreating, kReady, kFailed, kDeleting, kDeleted, kDeletionFailed };

// The persisted and shown form ("Pending", "Creating", ...).
std::string_view SvcStateName(SvcState s);
// An unknown name is kPending.
SvcState ParseSvcState(std::string_view s);

// What an Azure long-running operation does to its resource.
enum class AzureOpKind { kCreate, kDelete };

// "create" or "delete": the form persisted in stored futures and shown in the cluster view.
std::string_view AzureOpKindName(AzureOpKind kind);
// nullopt for anything else (no operation to wait on).
std::optional<AzureOpKind> ParseAzureOpKind(std::string_view name);

// The Azure operation a service waits on.
struct PendingAzureOp {
  AzureOpKind kind = AzureOpKind::kCreate;
  std::string token;
  // The operation outlived the client timeout: a future, persisted with the unit. One answered within
  // the timeout is not persisted; after a restart a PUT or DELETE adopts it.
  bool stored = false;

  bool operator==(const PendingAzureOp&) const = default;
};

struct UnitService {
  ResourceType type = ResourceType::kPublicIp;
  std::string id;
  std::string caller;  // the identity the calls act as (kFirstParty or a managed identity's ID)
  SvcState state = SvcState::kPending;
  std::optional<PendingAzureOp> pending;
  int attempts = 0;  // failed calls in a row
  int err_status = 0;
  std::string err_code, err_message;
  bool orphaned = false;  // deletion skipped (invalid credentials)
  TimePoint since{};      // when it entered `state`

  bool operator==(const UnitService&) const = default;
};

struct Unit {
  std::string key;
  std::string owner;    // the node pool's or cluster's href
  std::string cluster;  // the cluster's href
  std::string name;
  int64_t index = 0;
  bool control_plane = false;
  bool deleting = false;
  bool orphaned = false;
  std::string version;            // machines: the raw OpenShift version it runs ("4.21.3"); "" when unknown
  std::vector<UnitService> svcs;  // in creation order

  // Every service is ready (created) or deleted (deleting); an orphaned deletion is done.
  bool Done() const;
  // The first failed service's code and "<Service> <id>: <message>".
  bool AnyFailed(std::string* code, std::string* message) const;
};

// A node pool's rolling upgrade (CAPI MachineDeployment, max surge 1, max unavailable 0): one machine at
// the new version is created and ready before one at another version is deleted, one at a time, so
// that at least `desired` machines stay ready and at most desired + 1 exist.
struct RollMachine {
  std::string_view version;
  bool deleting = false;
  bool done = false;  // Unit::Done()
};
enum class RollAction {
  kDone,    // no machine left at another version: scale as usual
  kWait,    // a machine is being created or deleted
  kSurge,   // create one machine at the new version
  kRetire,  // delete machines[retire], one at another version
};
struct RollStep {
  RollAction action = RollAction::kDone;
  size_t retire = 0;
};
RollStep PlanRoll(const std::vector<RollMachine>& machines, int64_t desired, std::string_view version);

}  // namespace hcprp::provisioning
