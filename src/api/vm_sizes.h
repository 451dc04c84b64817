// The Azure VM sizes the service offers for node pools: a node pool's platform.vmSize must be one of
// them (checked when it is set, on create; it is immutable after). The list is the real service's
// allow-list, a superset of what each of its regions offers.
#pragma once

#include <span>
#include <string_view>

namespace hcprp::api {

// Sorted bytewise.
std::span<const std::string_view> EnabledNodePoolVmSizes();
bool IsEnabledNodePoolVmSize(std::string_view size);

}  // namespace hcprp::api
