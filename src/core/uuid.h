// UUIDs in their lower-case canonical text form.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hcprp {

// A random (version 4) UUID. Thread-safe.
std::string NewUuidV4();

// A name-based (version 5, SHA-1) UUID of `name` in `namespace_uuid`. The same inputs always give the
// same UUID; callers that derive IDs from resource IDs lower-case the resource ID first.
std::string UuidV5(std::string_view namespace_uuid, std::string_view name);

// The namespace hcprp uses for IDs derived from Azure resource IDs.
inline constexpr std::string_view kResourceIdNamespace = "9b1d2c4e-6a57-4f0e-9d1b-3c8a5e7f2a10";

// True when `s` is a UUID in 8-4-4-4-12 hex form (either case).
bool IsUuid(std::string_view s);

}  // namespace hcprp
