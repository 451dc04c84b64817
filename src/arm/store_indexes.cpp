#include "arm/store_indexes.h"

#include "arm/documents.h"

namespace hcprp::arm {

store::IndexSpec StoreIndexes() {
  store::IndexSpec spec;
  spec.resource_type = "/resourceType";
  spec.resource_id = "/properties/resourceId";
  spec.status = std::string(kPathStatus);
  spec.terminal_statuses.assign(kTerminalStates.begin(), kTerminalStates.end());
  return spec;
}

}  // namespace hcprp::arm
