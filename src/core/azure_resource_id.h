// The shape of an Azure resource ID, the one parse that hcprp's own IDs and the IDs that request
// bodies name (subnets, identities, key vaults) share:
//
//   /subscriptions/{sub}[/resourceGroups/{group}][/providers/{namespace}/{type}/{name}[/{type}/{name}...]]
//
// Keywords ("subscriptions", "resourceGroups", "providers") match case-insensitively; the other
// segments are returned as written. The parse is on the request path: its parts are views into the
// text, and an ID of up to 16 segments is split without allocating.
#pragma once

#include <boost/container/small_vector.hpp>
#include <string_view>

#include "core/result.h"

namespace hcprp {

struct AzureResourceId {
  struct TypeAndName {
    std::string_view type;
    std::string_view name;
  };
  std::string_view subscription;
  std::string_view resource_group;      // empty when the ID names no group
  std::string_view provider_namespace;  // empty for the ID of a subscription or a group
  // The type/name pairs after the namespace, outermost first ("virtualNetworks"/"v", "subnets"/"s");
  // empty for the ID of a subscription or a group.
  boost::container::small_vector<TypeAndName, 4> resources;
};

// Parses `text` into `id` (whatever it held is replaced); one trailing '/' is ignored. The views point
// into `text`. InvalidArgument when it is not a resource ID, with the reason in the message:
// "resource id '<text>' must start with '/'", "... must start with '/subscriptions/'", "... has an empty
// segment", "... is not a provider resource ID" (checked in that order). `id` is filled in place, so that
// its small vector is never moved.
Status ParseAzureResourceId(std::string_view text, AzureResourceId& id);

}  // namespace hcprp
