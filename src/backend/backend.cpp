// Backend is the public face of the Controller (controller.h), which composes the backend's parts.
#include "backend/backend.h"

#include "backend/controller.h"

namespace hcprp::backend {

Backend::Backend(std::unique_ptr<Controller> controller) : controller_(std::move(controller)) {}

Backend::~Backend() = default;  // the controller Stop()s

Result<std::unique_ptr<Backend>> Backend::Create(BackendOptions options, store::Store* store,
                                                 clusterservice::Client* cs, const Clock* clock,
                                                 Logger logger, Notifier* notifier) {
  HCPRP_ASSIGN_OR_RETURN(
      std::unique_ptr<Controller> controller,
      Controller::Create(std::move(options), store, cs, clock, std::move(logger), notifier));
  return std::unique_ptr<Backend>(new Backend(std::move(controller)));
}

Status Backend::Start() { return controller_->Start(); }
void Backend::Stop() { controller_->Stop(); }
Status Backend::ReconcileOnce() { return controller_->ReconcileOnce(); }
Result<size_t> Backend::PumpChangesOnce() { return controller_->PumpChangesOnce(); }
Result<size_t> Backend::PumpEventsOnce(std::chrono::milliseconds wait) {
  return controller_->PumpEventsOnce(wait);
}
size_t Backend::DeliverNotificationsOnce() { return controller_->DeliverNotificationsOnce(); }
Result<VersionPassResult> Backend::VersionPassOnce() { return controller_->VersionPassOnce(); }
BackendStats Backend::Stats() const { return controller_->Stats(); }

Status Backend::FailOperation(std::string_view pk, std::string_view op_id, std::string code,
                              std::string message) {
  return controller_->steering().FailOperation(pk, op_id, std::move(code), std::move(message));
}

Status Backend::RedriveOperation(std::string_view pk, std::string_view op_id) {
  return controller_->steering().RedriveOperation(pk, op_id);
}

Result<OrphanPlan> Backend::PlanOrphanCollection() { return controller_->steering().PlanOrphanCollection(); }

}  // namespace hcprp::backend
