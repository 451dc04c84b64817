#include "api/semantic.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "api/schema.h"

namespace hcprp::api {
namespace {

constexpr int64_t kMaxNodesWithoutZone = 200;
constexpr int64_t kMaxDrainMinutes = 10080;
constexpr int kMinHostPrefix = 23;
constexpr int kMaxHostPrefix = 26;

void Add(std::vector<FieldError>& out, std::string message, std::string target,
         std::string_view code = kInvalidParameter) {
  out.push_back(FieldError{std::string(code), std::move(message), std::move(target)});
}

const json::object* Obj(const json::object* o, std::string_view key) {
  return o ? GetObject(*o, key) : nullptr;
}
std::optional<std::string_view> Str(const json::object* o, std::string_view key) {
  return o ? GetString(*o, key) : std::nullopt;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "X.Y" (parts == 2) or also "X.Y.Z" (allow_patch).
bool IsVersionId(std::string_view s, bool allow_patch) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t dot = s.find('.', pos);
    parts.push_back(s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos));
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (parts.size() != 2 && !(allow_patch && parts.size() == 3)) return false;
  return std::all_of(parts.begin(), parts.end(), IsDigits);
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t dot = s.find('.', pos);
    std::string_view label =
        s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (label.empty() || label.size() > 63) return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (label.front() == '-' || label.back() == '-') return false;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return true;
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label value: empty, or up to 63 of [-A-Za-z0-9_.] starting and ending alphanumeric.
bool IsLabelValue(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// "[prefix/]name" with a DNS-subdomain prefix; returns the prefix through `prefix_out`.
bool IsQualifiedName(std::string_view s, std::string_view* prefix_out) {
  std::string_view name = s;
  std::string_view prefix;
  if (size_t slash = s.find('/'); slash != std::string_view::npos) {
    prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (!IsDnsSubdomain(prefix)) return false;
  }
  if (prefix_out) *prefix_out = prefix;
  return !name.empty() && IsLabelValue(name);
}

bool IsReservedDomain(std::string_view prefix) {
  for (std::string_view reserved : {"kubernetes.io", "k8s.io", "openshift.io"}) {
    if (prefix == reserved) return true;
    if (prefix.size() > reserved.size() && prefix.ends_with(reserved) &&
        prefix[prefix.size() - reserved.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

void CheckVersion(const json::object* props, const json::object* existing_props, bool allow_patch,
                  std::vector<FieldError>& out) {
  const json::object* version = Obj(props, "version");
  if (auto id = Str(version, "id"); id && !IsVersionId(*id, allow_patch)) {
    Add(out,
        "version.id '" + std::string(id->substr(0, 64)) + "' must have the form " +
            (allow_patch ? "X.Y or X.Y.Z" : "X.Y") + " (for example 4.19)",
        "properties.version.id");
  }
  if (existing_props != nullptr) {
    auto before = Str(Obj(existing_props, "version"), "channelGroup");
    auto now = Str(version, "channelGroup");
    if (before && now && *before != *now) {
      Add(out, "version.channelGroup cannot be changed after creation yet", "properties.version.channelGroup",
          kPropertyChangeNotAllowed);
    }
  }
}

void CheckNetwork(const json::object* props, std::vector<FieldError>& out) {
  const json::object* network = Obj(props, "network");
  if (network == nullptr) return;
  struct Named {
    std::string_view field;
    Ipv4Cidr cidr;
  };
  std::vector<Named> cidrs;
  for (std::string_view field : {"podCidr", "serviceCidr", "machineCidr"}) {
    auto text = Str(network, field);
    if (!text) continue;
    std::string target = "properties.network." + std::string(field);
    auto cidr = ParseIpv4Cidr(*text);
    if (!cidr) {
      Add(out, "'" + std::string(text->substr(0, 64)) + "' is not an IPv4 CIDR (a.b.c.d/n)", target);
    } else if (cidr->host_bits_set) {
      Add(out,
          "'" + std::string(*text) + "' has bits set after the /" + std::to_string(cidr->prefix) + " prefix",
          target);
    } else {
      for (const auto& other : cidrs) {
        if (Overlaps(other.cidr, *cidr)) {
          Add(out, std::string(field) + " " + std::string(*text) + " overlaps " + std::string(other.field),
              target);
        }
      }
      cidrs.push_back({field, *cidr});
    }
  }
  auto it = network->find("hostPrefix");
  if (it != network->end() && it->value().is_int64()) {
    int64_t host_prefix = it->value().get_int64();
    if (host_prefix < kMinHostPrefix || host_prefix > kMaxHostPrefix) {
      Add(out,
          "hostPrefix must be between " + std::to_string(kMinHostPrefix) + " and " +
              std::to_string(kMaxHostPrefix) + ", got " + std::to_string(host_prefix),
          "properties.network.hostPrefix");
    } else {
      for (const auto& c : cidrs) {
        if (c.field == "podCidr" && c.cidr.prefix >= host_prefix) {
          Add(out, "hostPrefix must be longer than the podCidr prefix /" + std::to_string(c.cidr.prefix),
              "properties.network.hostPrefix");
        }
      }
    }
  }
}

void CheckAuthorizedCidrs(const json::object* props, std::vector<FieldError>& out) {
  const json::array* list = Obj(props, "api") ? GetArray(*Obj(props, "api"), "authorizedCidrs") : nullptr;
  if (list == nullptr) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_string()) continue;
    std::string_view text = (*list)[i].get_string();
    std::string target = IndexPath("properties.api.authorizedCidrs", i);
    auto cidr = ParseIpv4Cidr(text, true);
    if (!cidr) {
      Add(out, "'" + std::string(text.substr(0, 64)) + "' is not an IPv4 CIDR or address", target);
    } else if (!seen.insert(std::string(text)).second) {
      Add(out, "'" + std::string(text) + "' is listed twice", target);
    }
  }
}

// identity.userAssignedIdentities keys (lower-cased), with checks on the identity block.
std::set<std::string> CheckIdentity(const json::object& body, std::vector<FieldError>& out) {
  std::set<std::string> keys;
  const json::object* identity = GetObject(body, "identity");
  if (identity == nullptr) return keys;
  const json::object* assigned = GetObject(*identity, "userAssignedIdentities");
  auto type = GetString(*identity, "type");
  if (assigned == nullptr) return keys;
  if (type && !assigned->empty() && (*type == "None" || *type == "SystemAssigned")) {
    Add(out, "userAssignedIdentities can only be given with an identity type that includes UserAssigned",
        "identity.userAssignedIdentities");
  }
  const std::string prefix = "/providers/microsoft.managedidentity/userassignedidentities/";
  for (const auto& member : *assigned) {
    std::string key = ToLower(member.key());
    std::string target = JoinPath("identity.userAssignedIdentities", member.key());
    size_t at = key.find(prefix);
    bool well_formed = key.starts_with("/subscriptions/") && at != std::string::npos &&
                       key.size() > at + prefix.size() &&
                       key.find('/', at + prefix.size()) == std::string::npos;
    if (!well_formed) {
      Add(out,
          "'" + std::string(member.key().substr(0, 128)) + "' is not a user-assigned identity resource ID",
          target);
    } else if (!keys.insert(key).second) {
      Add(out, "identity '" + std::string(member.key()) + "' is listed twice", target);
    }
  }
  return keys;
}

void CheckOperatorIdentities(const json::object& body, const std::set<std::string>& assigned,
                             std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  const json::object* uai =
      Obj(Obj(Obj(props, "platform"), "operatorsAuthentication"), "userAssignedIdentities");
  if (uai == nullptr) return;
  const std::string base = "properties.platform.operatorsAuthentication.userAssignedIdentities";
  std::map<std::string, std::string> used;  // lower-cased ID -> first target
  auto check = [&](std::string_view id, const std::string& target) {
    std::string key = ToLower(id);
    if (!assigned.contains(key)) {
      Add(out, "identity '" + std::string(id.substr(0, 256)) + "' is not in identity.userAssignedIdentities",
          target);
    }
    auto [it, fresh] = used.emplace(key, target);
    if (!fresh)
      Add(out, "identity '" + std::string(id.substr(0, 256)) + "' is already used by " + it->second, target);
  };
  for (std::string_view group : {"controlPlaneOperators", "dataPlaneOperators"}) {
    const json::object* map = GetObject(*uai, group);
    if (map == nullptr) continue;
    for (const auto& member : *map) {
      if (member.value().is_string()) {
        check(member.value().get_string(), JoinPath(JoinPath(base, group), member.key()));
      }
    }
  }
  if (auto smi = GetString(*uai, "serviceManagedIdentity")) check(*smi, base + ".serviceManagedIdentity");
}

void CheckEtcd(const json::object* props, std::vector<FieldError>& out) {
  const json::object* enc = Obj(Obj(props, "etcd"), "dataEncryption");
  if (enc == nullptr) return;
  const std::string base = "properties.etcd.dataEncryption";
  const json::object* cm = Obj(enc, "customerManaged");
  if (Str(enc, "keyManagementMode") == std::optional<std::string_view>("CustomerManaged") && cm == nullptr) {
    Add(out, "customerManaged is required when keyManagementMode is CustomerManaged",
        base + ".customerManaged");
  }
  if (cm != nullptr && Str(cm, "encryptionType") == std::optional<std::string_view>("KMS") &&
      Obj(cm, "kms") == nullptr) {
    Add(out, "kms is required when encryptionType is KMS", base + ".customerManaged.kms");
  }
}

void CheckDrainTimeout(const json::object* props, std::vector<FieldError>& out) {
  if (props == nullptr) return;
  auto minutes = GetInt(*props, "nodeDrainTimeoutMinutes");
  if (minutes && (*minutes < 0 || *minutes > kMaxDrainMinutes)) {
    Add(out, "nodeDrainTimeoutMinutes must be between 0 and " + std::to_string(kMaxDrainMinutes),
        "properties.nodeDrainTimeoutMinutes");
  }
}

void CheckCluster(const json::object& body, const json::object* existing, std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  CheckVersion(props, existing ? GetObject(*existing, "properties") : nullptr, false, out);
  CheckNetwork(props, out);
  CheckAuthorizedCidrs(props, out);
  CheckEtcd(props, out);
  CheckOperatorIdentities(body, CheckIdentity(body, out), out);
}

void CheckNodePool(const json::object& body, const json::object* existing, std::vector<FieldError>& out) {
  (void)CheckIdentity(body, out);
  const json::object* props = GetObject(body, "properties");
  if (props == nullptr) return;
  CheckVersion(props, existing ? GetObject(*existing, "properties") : nullptr, true, out);
  CheckDrainTimeout(props, out);
  bool zoned = Str(Obj(props, "platform"), "availabilityZone").has_value();
  auto replicas = GetInt(*props, "replicas");
  const json::object* scaling = GetObject(*props, "autoScaling");
  if (replicas && scaling != nullptr) {
    Add(out, "replicas and autoScaling cannot be set together", "properties.autoScaling");
  }
  auto cap = [&](std::optional<int64_t> n, const std::string& target) {
    if (n && !zoned && *n > kMaxNodesWithoutZone) {
      Add(out, "at most " + std::to_string(kMaxNodesWithoutZone) + " nodes without platform.availabilityZone",
          target);
    }
  };
  cap(replicas, "properties.replicas");
  if (scaling != nullptr) {
    auto min = GetInt(*scaling, "min");
    auto max = GetInt(*scaling, "max");
    if (min && max && *min > *max) {
      Add(out,
          "autoScaling.max (" + std::to_string(*max) + ") must be at least autoScaling.min (" +
              std::to_string(*min) + ")",
          "properties.autoScaling.max");
    }
    cap(min, "properties.autoScaling.min");
    cap(max, "properties.autoScaling.max");
  }
  if (const json::array* labels = GetArray(*props, "labels")) {
    std::set<std::string> keys;
    for (size_t i = 0; i < labels->size(); ++i) {
      const json::object* label = (*labels)[i].if_object();
      if (label == nullptr) continue;
      std::string base = IndexPath("properties.labels", i);
      if (auto key = GetString(*label, "key")) {
        std::string_view prefix;
        if (!IsQualifiedName(*key, &prefix)) {
          Add(out, "label key '" + std::string(key->substr(0, 64)) + "' is not a valid Kubernetes label key",
              base + ".key");
        } else if (IsReservedDomain(prefix)) {
          Add(out,
              "label key '" + std::string(*key) + "' uses the reserved prefix '" + std::string(prefix) + "/'",
              base + ".key");
        } else if (!keys.insert(std::string(*key)).second) {
          Add(out, "label key '" + std::string(*key) + "' is given twice", base + ".key");
        }
      }
      if (auto value = GetString(*label, "value"); value && !IsLabelValue(*value)) {
        Add(out,
            "label value '" + std::string(value->substr(0, 64)) + "' is not a valid Kubernetes label value",
            base + ".value");
      }
    }
  }
  if (const json::array* taints = GetArray(*props, "taints")) {
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < taints->size(); ++i) {
      const json::object* taint = (*taints)[i].if_object();
      if (taint == nullptr) continue;
      std::string base = IndexPath("properties.taints", i);
      auto key = GetString(*taint, "key");
      if (key && !IsQualifiedName(*key, nullptr)) {
        Add(out, "taint key '" + std::string(key->substr(0, 64)) + "' is not a valid Kubernetes taint key",
            base + ".key");
      }
      if (auto value = GetString(*taint, "value"); value && !IsLabelValue(*value)) {
        Add(out,
            "taint value '" + std::string(value->substr(0, 64)) + "' is not a valid Kubernetes taint value",
            base + ".value");
      }
      auto effect = GetString(*taint, "effect");
      if (key && effect && !seen.emplace(std::string(*key), std::string(*effect)).second) {
        Add(out, "taint '" + std::string(*key) + ":" + std::string(*effect) + "' is given twice", base);
      }
    }
  }
}

void CheckExternalAuth(const json::object& body, std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  const json::object* issuer = Obj(props, "issuer");
  std::set<std::string> audiences;
  if (issuer != nullptr) {
    if (auto url = GetString(*issuer, "url"); url && !StartsWithIgnoreCase(*url, "https://")) {
      Add(out, "issuer.url must use the https scheme", "properties.issuer.url");
    }
    if (const json::array* list = GetArray(*issuer, "audiences")) {
      for (size_t i = 0; i < list->size(); ++i) {
        if (!(*list)[i].is_string()) continue;
        if (!audiences.insert(std::string((*list)[i].get_string())).second) {
          Add(out, "audience '" + std::string((*list)[i].get_string()) + "' is listed twice",
              IndexPath("properties.issuer.audiences", i));
        }
      }
    }
  }
  if (const json::array* clients = props ? GetArray(*props, "clients") : nullptr) {
    std::set<std::pair<std::string, std::string>> components;
    for (size_t i = 0; i < clients->size(); ++i) {
      const json::object* client = (*clients)[i].if_object();
      if (client == nullptr) continue;
      std::string base = IndexPath("properties.clients", i);
      if (auto id = GetString(*client, "clientId");
          id && issuer != nullptr && !audiences.contains(std::string(*id))) {
        Add(out, "clientId '" + std::string(id->substr(0, 64)) + "' must be one of issuer.audiences",
            base + ".clientId");
      }
      const json::object* component = GetObject(*client, "component");
      auto name = Str(component, "name");
      auto ns = Str(component, "authClientNamespace");
      if (name && ns && !components.emplace(std::string(*name), std::string(*ns)).second) {
        Add(out, "component '" + std::string(*ns) + "/" + std::string(*name) + "' is configured twice",
            base + ".component");
      }
    }
  }
  const json::object* claim = Obj(props, "claim");
  const json::object* username = Obj(Obj(claim, "mappings"), "username");
  if (username != nullptr) {
    auto policy = Str(username, "prefixPolicy");
    auto prefix = Str(username, "prefix");
    bool wants_prefix = policy == std::optional<std::string_view>("Prefix");
    const std::string target = "properties.claim.mappings.username.prefix";
    if (wants_prefix && (!prefix || prefix->empty())) {
      Add(out, "prefix is required when prefixPolicy is Prefix", target);
    } else if (!wants_prefix && prefix) {
      Add(out, "prefix can only be set when prefixPolicy is Prefix", target);
    }
  }
  if (const json::array* rules = claim ? GetArray(*claim, "validationRules") : nullptr) {
    for (size_t i = 0; i < rules->size(); ++i) {
      const json::object* rule = (*rules)[i].if_object();
      if (rule == nullptr) continue;
      auto type = GetString(*rule, "type");
      if ((!type || *type == "RequiredClaim") && GetObject(*rule, "requiredClaim") == nullptr) {
        Add(out, "requiredClaim is required for a RequiredClaim rule",
            IndexPath("properties.claim.validationRules", i) + ".requiredClaim");
      }
    }
  }
}

}  // namespace

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
                    std::vector<FieldError>& out) {
  switch (kind) {
    case Kind::kCluster:
      CheckCluster(body, existing, out);
      break;
    case Kind::kNodePool:
      CheckNodePool(body, existing, out);
      break;
    case Kind::kExternalAuth:
      CheckExternalAuth(body, out);
      break;
  }
}

void CheckResourceName(const SchemaSet& schemas, Kind kind, std::string_view name,
                       std::vector<FieldError>& out) {
  std::string_view parameter = kind == Kind::kCluster    ? "hcpOpenShiftClusterName"
                               : kind == Kind::kNodePool ? "nodePoolName"
                                                         : "externalAuthName";
  auto pattern = schemas.PathParameterPattern(parameter);
  if (!pattern) return;
  if (!schemas.Matches(*pattern, name)) {
    Add(out, "the name '" + std::string(name.substr(0, 64)) + "' does not match " + *pattern, "name",
        kInvalidResourceName);
  }
}

}  // namespace hcprp::api
