#include "provisioning/unit.h"

namespace hcprp::provisioning {

namespace {

constexpr SvcState kSvcStates[] = {SvcState::kPending,       SvcState::kCreating, SvcState::kReady,
                                   SvcState::kFailed,        SvcState::kDeleting, SvcState::kDeleted,
                                   SvcState::kDeletionFailed};

}  // namespace

std::string_view SvcStateName(SvcState s) {
  switch (s) {
    case SvcState::kPending:
      return "Pending";
    case SvcState::kCreating:
      return "Creating";
    case SvcState::kReady:
      return "Ready";
    case SvcState::kFailed:
      return "Failed";
    case SvcState::kDeleting:
      return "Deleting";
    case SvcState::kDeleted:
      return "Deleted";
    case SvcState::kDeletionFailed:
      return "DeletionFailed";
  }
  return "Pending";
}

SvcState ParseSvcState(std::string_view s) {
  for (SvcState v : kSvcStates) {
    if (SvcStateName(v) == s) return v;
  }
  return SvcState::kPending;
}

std::string_view AzureOpKindName(AzureOpKind kind) {
  return kind == AzureOpKind::kDelete ? "delete" : "create";
}

std::optional<AzureOpKind> ParseAzureOpKind(std::string_view name) {
  if (name == "create") return AzureOpKind::kCreate;
  if (name == "delete") return AzureOpKind::kDelete;
  return std::nullopt;
}

bool Unit::Done() const {
  if (orphaned) return deleting;
  for (const auto& s : svcs) {
    if (deleting ? s.state != SvcState::kDeleted : s.state != SvcState::kReady) return false;
  }
  return true;
}

bool Unit::AnyFailed(std::string* code, std::string* message) const {
  for (const auto& s : svcs) {
    if (s.state == SvcState::kFailed || s.state == SvcState::kDeletionFailed) {
      *code = s.err_code;
      *message = std::string(ShortName(s.type)) + " " + s.id + ": " + s.err_message;
      return true;
    }
  }
  return false;
}

RollStep PlanRoll(const std::vector<RollMachine>& machines, int64_t desired, std::string_view version) {
  std::optional<size_t> old;
  int64_t active = 0;
  bool busy = false;
  for (size_t i = 0; i < machines.size(); ++i) {
    const RollMachine& m = machines[i];
    busy = busy || m.deleting || !m.done;
    if (m.deleting) continue;
    ++active;
    if (m.version != version && !old) old = i;
  }
  if (!old) return RollStep{RollAction::kDone, 0};
  if (busy) return RollStep{RollAction::kWait, 0};
  if (active > desired) return RollStep{RollAction::kRetire, *old};
  return RollStep{RollAction::kSurge, 0};
}

}  // namespace hcprp::provisioning
