// What the simulated Azure's source files share: the resource-type table (azure_types.cpp), the records
// SimulatedAzure keeps (its operations in azure.cpp, their persistence in azure_state.cpp). Private to
// the simulated Azure (azure.h is its interface).
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "provisioning/azure.h"

namespace hcprp::provisioning {

namespace azure_internal {

// One resource type: its names and its realistic latencies in seconds.
struct TypeInfo {
  ResourceType type;
  std::string_view arm;
  std::string_view condition;
  std::string_view short_name;
  double create_median, create_p99, delete_median, delete_p99;
};

const TypeInfo& Info(ResourceType t);

}  // namespace azure_internal

struct SimulatedAzure::Resource {
  std::string id;  // as first given
  ResourceType type = ResourceType::kResourceGroup;
  std::string state;  // Creating, Succeeded, Failed, Deleting
  TimePoint created{};
  std::string active_op;
  bool customer = false;
  bool permissions = true;  // identities
};

struct SimulatedAzure::Operation {
  std::string token;
  std::string key;  // lower-cased resource ID
  ResourceType type = ResourceType::kResourceGroup;
  bool is_delete = false;
  TimePoint started{}, done_at{};
  bool settled = false;
  bool failed = false;
  std::string code, message;
};

}  // namespace hcprp::provisioning
