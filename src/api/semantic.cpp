#include "api/semantic.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "api/rules.h"
#include "api/rules_common.h"
#include "api/schema.h"

namespace hcprp::api {

namespace rules {

void CheckIdentityBlock(const json::object& body, std::vector<FieldError>& out) {
  const json::object* identity = GetObject(body, "identity");
  if (identity == nullptr) return;
  if (!GetString(*identity, "type").has_value()) Required(out, "identity.type");
  const json::object* assigned = GetObject(*identity, "userAssignedIdentities");
  if (assigned == nullptr) return;
  for (const auto& member : *assigned) {
    std::string target = KeyPath("identity.userAssignedIdentities", member.key());
    if (member.key().empty()) {
      Required(out, target);
      continue;
    }
    CheckResourceId(out, target, member.key(), "Microsoft.ManagedIdentity/userAssignedIdentities");
  }
}

void CheckChannelGroup(const json::object* version, const std::string& target, bool experimental,
                       std::vector<FieldError>& out) {
  auto group = Str(version, "channelGroup");
  if (group && group->empty()) {
    Required(out, target);
    return;
  }
  if (!group || *group == "stable" || *group == "fast") return;
  if (!experimental) {
    Unsupported(out, target, json::value(*group), {"fast", "stable"});
  } else if (*group != "candidate" && *group != "nightly") {
    Unsupported(out, target, json::value(*group), {"candidate", "fast", "nightly", "stable"});
  }
}

}  // namespace rules

std::optional<Ipv4Cidr> ParseIpv4Cidr(std::string_view text, bool allow_bare_address) {
  Ipv4Cidr out;
  size_t slash = text.find('/');
  std::string_view addr = text.substr(0, slash);
  if (slash == std::string_view::npos) {
    if (!allow_bare_address) return std::nullopt;
    out.prefix = 32;
  } else {
    std::string_view bits = text.substr(slash + 1);
    if (bits.empty() || bits.size() > 2) return std::nullopt;
    auto [p, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), out.prefix);
    if (ec != std::errc() || p != bits.data() + bits.size() || out.prefix < 0 || out.prefix > 32)
      return std::nullopt;
  }
  uint32_t address = 0;
  int octets = 0;
  size_t pos = 0;
  while (octets < 4) {
    size_t dot = addr.find('.', pos);
    std::string_view part =
        addr.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
    unsigned value = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || p != part.data() + part.size() || value > 255) return std::nullopt;
    address = (address << 8) | value;
    ++octets;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (octets != 4 || (pos < addr.size() && addr.find('.', pos) != std::string_view::npos))
    return std::nullopt;
  // The loop stops at the fourth octet; anything after it is an error.
  size_t dots = static_cast<size_t>(std::count(addr.begin(), addr.end(), '.'));
  if (dots != 3) return std::nullopt;
  out.address = address;
  uint32_t mask = out.prefix == 0 ? 0 : ~uint32_t{0} << (32 - out.prefix);
  out.host_bits_set = (address & ~mask) != 0;
  return out;
}

bool Overlaps(const Ipv4Cidr& a, const Ipv4Cidr& b) {
  int prefix = std::min(a.prefix, b.prefix);
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (a.address & mask) == (b.address & mask);
}

void CheckSemantics(Kind kind, const json::object& body, const json::object* existing,
                    const DecodeOptions& options, std::vector<FieldError>& out) {
  // A field the schema already refused is not reported again by a rule. A change of an immutable field
  // says nothing of its value: the rules still judge it, as the real service does.
  std::set<std::string> refused;
  for (const auto& e : out) {
    if (e.message != "Forbidden: field is immutable") refused.insert(e.target);
  }
  const size_t first_rule_error = out.size();
  switch (kind) {
    case Kind::kCluster:
      rules::CheckCluster(body, existing, options, out);
      break;
    case Kind::kNodePool:
      rules::CheckNodePool(body, existing, options, out);
      break;
    case Kind::kExternalAuth:
      rules::CheckExternalAuth(body, existing, options, out);
      break;
  }
  auto from_rules = out.begin() + static_cast<std::ptrdiff_t>(first_rule_error);
  out.erase(
      std::remove_if(from_rules, out.end(), [&](const FieldError& e) { return refused.contains(e.target); }),
      out.end());
}

void CheckResourceName(const SchemaSet& schemas, Kind kind, std::string_view name,
                       std::vector<FieldError>& out) {
  std::string_view parameter = kind == Kind::kCluster    ? "hcpOpenShiftClusterName"
                               : kind == Kind::kNodePool ? "nodePoolName"
                                                         : "externalAuthName";
  // As the real service checks the name of the resource's ID: a length and a pattern, at "id".
  const size_t max = kind == Kind::kCluster ? 54 : 15;
  if (name.size() > max) rules::TooLong(out, "id", max);
  auto pattern = schemas.PathParameterPattern(parameter);
  if (pattern && !schemas.Matches(*pattern, name)) {
    rules::Invalid(out, "id", json::value(name), "(must be a valid DNS RFC 1035 label)");
  }
}

}  // namespace hcprp::api
