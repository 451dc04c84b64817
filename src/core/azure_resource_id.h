// The shape of an Azure resource ID, the one parse that hcprp's own IDs and the IDs that request
// bodies name (subnets, identities, key vaults) share:
//
//   /subscriptions/{sub}[/resourceGroups/{group}][/providers/{namespace}/{type}/{name}[/{type}/{name}...]]
//   /providers/{namespace}/{type}/{name}[/{type}/{name}...]       (tenant scope, when the caller allows it)
//
// Keywords ("subscriptions", "resourceGroups", "providers") match case-insensitively; the other
// segments are returned as written. The parse is on the request path: its parts are views into the
// text, and an ID of up to 16 segments is split without allocating.
#pragma once

#include <boost/container/small_vector.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp {

struct AzureResourceId {
  struct TypeAndName {
    std::string_view type;
    std::string_view name;
  };
  std::string_view subscription;        // empty for a tenant-level ID
  std::string_view resource_group;      // empty when the ID names no group
  std::string_view provider_namespace;  // empty for the ID of a subscription or a group
  // The type/name pairs after the namespace, outermost first ("virtualNetworks"/"v", "subnets"/"s");
  // empty for the ID of a subscription or a group.
  boost::container::small_vector<TypeAndName, 4> resources;
};

// Which IDs a parse accepts: hcprp's own resources live in a subscription; a field of a request body
// with the `arm-id` format takes any resource ID Azure knows, tenant-level ones included.
enum class ResourceIdScope { kSubscription, kAny };

// Parses `text` into `id` (whatever it held is replaced); one trailing '/' is ignored. The views point
// into `text`. InvalidArgument when it is not a resource ID, with the reason in the message:
// "resource id '<text>' must start with '/'", "... must start with '/subscriptions/'" (with kAny: "...
// must start with '/subscriptions/' or '/providers/'"), "... has an empty segment", "... is not a
// provider resource ID" (checked in that order). `id` is filled in place, so that its small vector is
// never moved.
Status ParseAzureResourceId(std::string_view text, AzureResourceId& id,
                            ResourceIdScope scope = ResourceIdScope::kSubscription);

// The type of the resource `id` names, "{namespace}/{type}[/{type}...]" ("Microsoft.Network/
// virtualNetworks/subnets"); empty for a subscription or a group.
std::string ResourceTypeOf(const AzureResourceId& id);

}  // namespace hcprp
