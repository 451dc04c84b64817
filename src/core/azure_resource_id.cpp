#include "core/azure_resource_id.h"

#include <algorithm>
#include <string>

#include "core/json.h"

namespace hcprp {
namespace {

Error NotAnId(std::string_view text, std::string_view reason) {
  return Error::InvalidArgument("resource id '" + std::string(text) + "' " + std::string(reason));
}

}  // namespace

Status ParseAzureResourceId(std::string_view text, AzureResourceId& id, ResourceIdScope scope) {
  id.subscription = {};
  id.resource_group = {};
  id.provider_namespace = {};
  id.resources.clear();
  if (text.empty() || text.front() != '/') return NotAnId(text, "must start with '/'");
  boost::container::small_vector<std::string_view, 16> parts;
  for (size_t pos = 1;;) {
    const size_t next = text.find('/', pos);
    parts.push_back(text.substr(pos, next == std::string_view::npos ? next : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();
  const bool tenant =
      scope == ResourceIdScope::kAny && !parts.empty() && EqualsIgnoreCase(parts[0], "providers");
  if (!tenant && (parts.size() < 2 || !EqualsIgnoreCase(parts[0], "subscriptions") || parts[1].empty())) {
    return NotAnId(text, scope == ResourceIdScope::kAny ? "must start with '/subscriptions/' or '/providers/'"
                                                        : "must start with '/subscriptions/'");
  }
  if (std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); })) {
    return NotAnId(text, "has an empty segment");
  }
  size_t i = 0;
  if (!tenant) {
    id.subscription = parts[1];
    i = 2;
  }
  if (!tenant && i + 1 < parts.size() && EqualsIgnoreCase(parts[i], "resourceGroups")) {
    id.resource_group = parts[i + 1];
    i += 2;
  }
  if (i == parts.size()) return Status::Ok();
  // "providers", the namespace, then whole type/name pairs (at least one).
  if (!EqualsIgnoreCase(parts[i], "providers") || i + 3 > parts.size() || (parts.size() - i - 2) % 2 != 0) {
    return NotAnId(text, "is not a provider resource ID");
  }
  id.provider_namespace = parts[i + 1];
  for (size_t k = i + 2; k < parts.size(); k += 2) id.resources.push_back({parts[k], parts[k + 1]});
  return Status::Ok();
}

std::string ResourceTypeOf(const AzureResourceId& id) {
  if (id.provider_namespace.empty()) return {};
  std::string type(id.provider_namespace);
  for (const auto& r : id.resources) {
    type += '/';
    type += r.type;
  }
  return type;
}

}  // namespace hcprp
