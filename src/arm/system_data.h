// systemData: ARM's x-ms-arm-resource-system-data header, persisted on the resource document.
#pragma once

#include <optional>
#include <string_view>

#include "core/json.h"

namespace hcprp::arm {

// Parses the header value; only the six known string members are kept. nullopt when the header is
// absent, not a JSON object, or carries none of them.
std::optional<json::object> ParseSystemData(std::string_view header);

// The systemData to store after a write: a create takes the header as is; an update keeps the
// created* members of `existing` and takes the lastModified* members of the header.
std::optional<json::object> MergeSystemData(const std::optional<json::object>& existing,
                                            const std::optional<json::object>& header, bool is_create);

}  // namespace hcprp::arm
