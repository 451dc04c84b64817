// Operator actions on the backend (the admin API's break-glass actions; Backend documents them): fail
// an operation, re-drive one now, and the orphan collector's plan (private to src/backend). Each acts
// only on partitions this backend owns. Thread-safe (stateless apart from its collaborators).
#pragma once

#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backend/operation_index.h"
#include "backend/operation_writer.h"
#include "backend/orphan_collector.h"
#include "backend/ownership.h"
#include "backend/status_checks.h"

namespace hcprp::backend {

class Steering {
 public:
  // Not owned; all must outlive this.
  Steering(const BackendOptions* options, store::Store* store, Ownership* ownership, const Logger* logger,
           OperationIndex* index, OperationWriter* writer, StatusChecks* checks, OrphanCollector* orphans)
      : options_(options),
        store_(store),
        ownership_(ownership),
        logger_(logger),
        index_(index),
        writer_(writer),
        checks_(checks),
        orphans_(orphans) {}

  // As Backend.
  Status FailOperation(std::string_view pk, std::string_view op_id, std::string code, std::string message);
  Status RedriveOperation(std::string_view pk, std::string_view op_id);
  Result<OrphanPlan> PlanOrphanCollection();

 private:
  const BackendOptions* const options_;
  store::Store* const store_;
  Ownership* const ownership_;
  const Logger* const logger_;
  OperationIndex* const index_;
  OperationWriter* const writer_;
  StatusChecks* const checks_;
  OrphanCollector* const orphans_;
};

}  // namespace hcprp::backend
