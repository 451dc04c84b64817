// Cluster rules (semantic.h lists them).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "api/rules.h"
#include "api/rules_common.h"
#include "api/semantic.h"

namespace hcprp::api::rules {
namespace {

constexpr std::string_view kMinClusterVersion = "4.20";
constexpr std::string_view kUaiType = "Microsoft.ManagedIdentity/userAssignedIdentities";
constexpr std::string_view kSubnetType = "Microsoft.Network/virtualNetworks/subnets";
constexpr std::string_view kNsgType = "Microsoft.Network/networkSecurityGroups";
const std::string kPlatform = "properties.platform";
const std::string kOperators = "properties.platform.operatorsAuthentication.userAssignedIdentities";

// Major upgrade paths the service supports: from release line -> to release line.
const std::map<std::string, std::string>& MajorUpgradePaths() {
  static const std::map<std::string, std::string> kPaths = {{"4.22", "5.0"}, {"4.23", "5.1"}};
  return kPaths;
}

std::string Line(const Semver& v) { return std::to_string(v.major) + "." + std::to_string(v.minor); }

// `experimental`: the subscription registered the experimental-features AFEC, which allows a patch in
// version.id, OpenShift 5 and the candidate and nightly channels.
void CheckVersion(const json::object* props, const json::object* old_props, bool experimental,
                  std::vector<FieldError>& out) {
  const json::object* version = Obj(props, "version");
  const std::string target = "properties.version.id";
  auto id = Str(version, "id");
  auto old_id = Str(Obj(old_props, "version"), "id");
  bool old_has_id = old_id && !old_id->empty();
  // A missing version.id is the schema's to report.
  if (old_props == nullptr || old_has_id) {
    if (id && id->empty()) Required(out, target);
    if (id && !id->empty()) {
      SemverParse now = ParseSemverTolerant(*id);
      const json::value shown(*id);
      if (!now.version) {
        Invalid(out, target, shown, now.error);
      } else {
        Semver min = *ParseSemverTolerant(kMinClusterVersion).version;
        if (Compare(*now.version, min) < 0)
          Invalid(out, target, shown, "must be at least " + std::string(kMinClusterVersion));
        SemverParse before = old_has_id ? ParseSemverTolerant(*old_id) : SemverParse{};
        if (before.version) {
          const Semver& b = *before.version;
          const Semver& n = *now.version;
          if (Compare(n, b) < 0) Invalid(out, target, shown, "may not decrease from " + std::string(*old_id));
          if (n.major != b.major) {
            if (n.major != b.major + 1) {
              Invalid(out, target, shown,
                      "invalid upgrade path from " + std::string(*old_id) + " to " + std::string(*id) +
                          ": skipping major versions is not allowed");
            } else {
              auto it = MajorUpgradePaths().find(Line(b));
              std::string allowed = it == MajorUpgradePaths().end() ? "" : it->second;
              if (Line(n) != allowed) {
                Invalid(out, target, shown,
                        "invalid upgrade path from " + std::string(*old_id) + " to " + std::string(*id) +
                            ": cross-major upgrade from " + Line(b) + " is only allowed to " + allowed);
              }
            }
          } else if (n.minor > b.minor + 1) {
            Invalid(out, target, shown,
                    "only upgrade to the next minor is allowed: expected " + std::to_string(b.major) + "." +
                        std::to_string(b.minor + 1) + " after " + Line(b));
          }
        }
      }
    }
  }
  if (id && !id->empty()) {
    SemverParse parsed = ParseSemverTolerant(*id);
    if (!parsed.version) {
      Invalid(out, target, json::value(*id), parsed.error);
    } else if (!experimental) {
      if (parsed.version->parts > 2) {
        Invalid(out, target, json::value(*id),
                "must be specified as MAJOR.MINOR; the PATCH value is managed");
      }
      if (parsed.version->major >= 5)
        Invalid(out, target, json::value(*id), "OpenShift v5 and above is not supported");
    }
  }
  CheckChannelGroup(version, "properties.version.channelGroup", experimental, out);
}

// A control plane may run at most two minors ahead of every node pool: a changed version.id more than
// two minors above one of `node_pools` (name, version.id) is refused, naming the node pool.
void CheckNodePoolSkew(const json::object* props, const json::object* old_props,
                       const std::vector<std::pair<std::string, std::string>>& node_pools,
                       std::vector<FieldError>& out) {
  auto id = Str(Obj(props, "version"), "id");
  if (old_props == nullptr || !id || id == Str(Obj(old_props, "version"), "id")) return;
  SemverParse now = ParseSemverTolerant(*id);
  if (!now.version) return;  // CheckVersion reports it
  for (const auto& [name, version] : node_pools) {
    SemverParse pool = ParseSemverTolerant(version);
    if (!pool.version || pool.version->major != now.version->major ||
        now.version->minor <= pool.version->minor + 2) {
      continue;
    }
    Invalid(out, "properties.version.id", json::value(*id),
            "cluster minor " + Line(*now.version) +
                " must not be more than two minor versions ahead of node pool " +
                json::serialize(json::value(name)) + " (minor " + Line(*pool.version) + ")");
  }
}

void CheckDns(const json::object* props, std::vector<FieldError>& out) {
  auto prefix = Str(Obj(props, "dns"), "baseDomainPrefix");
  if (!prefix || prefix->empty()) return;
  const std::string target = "properties.dns.baseDomainPrefix";
  if (prefix->size() > 15) TooLong(out, target, 15);
  // ^[a-z]([-a-z0-9]*[a-z0-9])?$
  bool label = prefix->front() >= 'a' && prefix->front() <= 'z' && prefix->back() != '-' &&
               std::all_of(prefix->begin(), prefix->end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
               });
  if (!label) {
    Invalid(out, target, json::value(*prefix), "(must be a valid DNS RFC 1035 label)");
  }
}

// The real service's CIDRv4 check; the parsed CIDR when it passes.
std::optional<Ipv4Cidr> CheckCidr(std::string_view text, const std::string& target,
                                  std::vector<FieldError>& out) {
  if (text.empty()) return std::nullopt;
  const json::value shown(text);
  if (text.find(':') != std::string_view::npos && text.find('/') != std::string_view::npos) {
    Invalid(out, target, shown, "not IPv4");
    return std::nullopt;
  }
  auto cidr = ParseIpv4Cidr(text);
  if (!cidr) {
    Invalid(out, target, shown, "invalid CIDR address: " + std::string(text));
    return std::nullopt;
  }
  if (cidr->host_bits_set) {
    Invalid(out, target, shown, "not IPv4 CIDR");
    return std::nullopt;
  }
  return cidr;
}

void CheckNetwork(const json::object* props, std::vector<FieldError>& out) {
  const json::object* network = Obj(props, "network");
  if (network == nullptr) return;
  const std::string base = "properties.network";
  std::map<std::string, std::optional<Ipv4Cidr>> cidrs;
  for (std::string_view field : {"podCidr", "serviceCidr", "machineCidr"}) {
    std::string target = base + "." + std::string(field);
    auto text = Str(network, field);
    if (text && text->empty()) Required(out, target);
    cidrs[std::string(field)] = text ? CheckCidr(*text, target, out) : std::nullopt;
  }
  if (auto host_prefix = Int(network, "hostPrefix")) {
    if (*host_prefix == 0) Required(out, base + ".hostPrefix");
    AtLeast(out, base + ".hostPrefix", host_prefix, 23);
    AtMost(out, base + ".hostPrefix", host_prefix, 26);
  }
  auto overlap = [&](std::string_view a, std::string_view an, std::string_view b, std::string_view bn) {
    const auto& ca = cidrs[std::string(a)];
    const auto& cb = cidrs[std::string(b)];
    if (!ca || !cb || !Overlaps(*ca, *cb)) return;
    std::string va(*Str(network, a));
    std::string vb(*Str(network, b));
    Invalid(out, base, json::value(va),
            std::string(an) + " CIDR '" + va + "' and " + std::string(bn) + " CIDR '" + vb + "' overlap");
  };
  overlap("machineCidr", "machine", "serviceCidr", "service");
  overlap("machineCidr", "machine", "podCidr", "pod");
  overlap("serviceCidr", "service", "podCidr", "pod");
}

void CheckApi(const json::object* props, std::vector<FieldError>& out) {
  const json::object* api = Obj(props, "api");
  const json::array* list = api ? GetArray(*api, "authorizedCidrs") : nullptr;
  if (list == nullptr) return;
  const std::string base = "properties.api.authorizedCidrs";
  if (list->size() > 500) TooMany(out, base, list->size(), 500);
  if (list->empty()) Invalid(out, base, json::value(0), "must have at least 1 items");
  for (size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_string()) continue;
    std::string_view text = (*list)[i].get_string();
    std::string target = IndexTarget(base, i);
    if (text.empty()) {
      Required(out, target);
      continue;
    }
    // An IPv4 address or an IPv4 CIDR; when neither, both reasons are given.
    std::vector<FieldError> as_ip;
    bool is_ip = false;
    if (text.find('/') == std::string_view::npos && ParseIpv4Cidr(text, true)) {
      is_ip = true;
    } else if (text.find(':') != std::string_view::npos && text.find('/') == std::string_view::npos) {
      Invalid(as_ip, target, json::value(text), "not IPv4");
    } else {
      Invalid(as_ip, target, json::value(text), "not an IP");
    }
    if (!is_ip) {
      std::vector<FieldError> as_cidr;
      if (!CheckCidr(text, target, as_cidr)) {
        out.insert(out.end(), as_ip.begin(), as_ip.end());
        out.insert(out.end(), as_cidr.begin(), as_cidr.end());
      }
    }
    if (text.find_first_of(" \t\n\r\f\v") == 0 || text.find_last_of(" \t\n\r\f\v") == text.size() - 1) {
      Invalid(out, target, json::value(text), "must not contain extra whitespace");
    }
  }
}

void CheckAutoscaling(const json::object* props, std::vector<FieldError>& out) {
  const json::object* scaling = Obj(props, "autoscaling");
  if (scaling == nullptr) return;
  const std::string base = "properties.autoscaling.";
  auto total = Int(scaling, "maxNodesTotal");
  if (total && *total >= 0) AtMost(out, base + "maxNodesTotal", total, 500);
  for (std::string_view field : {"maxPodGracePeriodSeconds", "maxNodeProvisionTimeSeconds"}) {
    auto value = Int(scaling, field);
    if (value && *value == 0) Required(out, base + std::string(field));
    AtLeast(out, base + std::string(field), value, 1);  // the schema leaves negative values to this rule
  }
  if (auto threshold = Int(scaling, "podPriorityThreshold"); threshold && *threshold == 0) {
    Required(out, base + "podPriorityThreshold");
  }
}

void CheckUnion(const json::object* parent, const std::string& base, std::string_view discriminator,
                std::string_view member, std::string_view value, bool member_set,
                std::vector<FieldError>& out) {
  auto d = Str(parent, discriminator);
  bool selected = d && *d == value;
  std::string when = "`" + std::string(discriminator) + "` is \"" + std::string(value) + "\"";
  std::string target = base + "." + std::string(member);
  if (selected && !member_set) Invalid(out, target, json::value(""), "must be specified when " + when);
  if (!selected && member_set) Invalid(out, target, json::value(""), "may only be specified when " + when);
}

void CheckEtcd(const json::object* props, const json::object* old_props, std::vector<FieldError>& out) {
  const json::object* enc = Obj(Obj(props, "etcd"), "dataEncryption");
  const json::object* old_enc = Obj(Obj(old_props, "etcd"), "dataEncryption");
  if (enc == nullptr) return;
  const std::string base = "properties.etcd.dataEncryption";
  const json::object* cm = Obj(enc, "customerManaged");
  CheckUnion(enc, base, "keyManagementMode", "customerManaged", "CustomerManaged", cm != nullptr, out);
  const json::object* old_cm = Obj(old_enc, "customerManaged");
  if (old_props != nullptr) {
    Immutable(out, base + ".keyManagementMode", Member(enc, "keyManagementMode"),
              Member(old_enc, "keyManagementMode"));
    if (cm != nullptr && old_cm != nullptr) {
      Immutable(out, base + ".customerManaged.encryptionType", Member(cm, "encryptionType"),
                Member(old_cm, "encryptionType"));
    }
  }
  if (cm == nullptr) return;
  const std::string cm_base = base + ".customerManaged";
  const json::object* kms = Obj(cm, "kms");
  CheckUnion(cm, cm_base, "encryptionType", "kms", "KMS", kms != nullptr, out);
  if (kms == nullptr) return;
  const std::string kms_base = cm_base + ".kms";
  const json::object* old_kms = Obj(old_cm, "kms");
  if (old_kms != nullptr)
    Immutable(out, kms_base + ".visibility", Member(kms, "visibility"), Member(old_kms, "visibility"));
  const json::object* key = Obj(kms, "activeKey");
  const json::object* old_key = Obj(old_kms, "activeKey");
  // The key version can be rotated; the key and its vault cannot change.
  struct KeyField {
    const json::object* now;
    const json::object* before;
    std::string_view name;
    std::string target;
    bool immutable;
  };
  for (const KeyField& f : {KeyField{key, old_key, "name", kms_base + ".activeKey.name", true},
                            KeyField{key, old_key, "version", kms_base + ".activeKey.version", false},
                            KeyField{kms, old_kms, "vaultName", kms_base + ".vaultName", true}}) {
    if (f.now == nullptr) continue;
    auto v = Str(f.now, f.name);
    if (!v || v->empty()) Required(out, f.target);
    if (v && v->size() > 255) TooLong(out, f.target, 255);
    if (f.immutable && f.before != nullptr)
      Immutable(out, f.target, Member(f.now, f.name), Member(f.before, f.name));
  }
}

// A DNS label as OpenShift's registry patterns take it: [a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?
bool IsRegistryLabel(std::string_view s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !s.empty() && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

bool AllLabels(std::string_view s) {
  size_t pos = 0;
  while (true) {
    size_t dot = s.find('.', pos);
    if (!IsRegistryLabel(s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    pos = dot + 1;
  }
}

// A repository path component: [a-z0-9]+ runs joined by ".", "_", "__" or one or more "-".
bool IsPathComponent(std::string_view s) {
  auto run = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !run(s.front()) || !run(s.back())) return false;
  size_t i = 0;
  while (i < s.size()) {
    if (run(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && !run(s[j])) ++j;
    std::string_view sep = s.substr(i, j - i);
    bool dashes = std::all_of(sep.begin(), sep.end(), [](char c) { return c == '-'; });
    if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
    i = j;
  }
  return true;
}

// OpenShift's patterns for an image digest mirror source (source == true) or mirror:
// host[:port][/component...], and for a source also *.domain. Written out rather than as a regular
// expression, whose backtracking takes exponential time on some inputs.
bool MatchesRegistryPattern(std::string_view value, bool source) {
  if (source && value.starts_with("*")) {
    return value.size() > 2 && value[1] == '.' && AllLabels(value.substr(2));
  }
  size_t slash = value.find('/');
  std::string_view host = value.substr(0, slash);
  if (size_t colon = host.find(':'); colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    host = host.substr(0, colon);
  }
  if (!AllLabels(host)) return false;
  if (slash == std::string_view::npos) return true;
  std::string_view path = value.substr(slash + 1);
  size_t pos = 0;
  while (true) {
    size_t next = path.find('/', pos);
    if (!IsPathComponent(
            path.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos))) {
      return false;
    }
    if (next == std::string_view::npos) return true;
    pos = next + 1;
  }
}

// ImageRegistry and the OpenShift pattern for image digest mirror sources and mirrors.
void CheckRegistry(std::string_view value, const std::string& target, bool source,
                   std::vector<FieldError>& out) {
  const json::value shown(value);
  if (value.empty()) {
    Required(out, target);
    return;
  }
  size_t before = out.size();
  if (value.size() > 255) {
    TooLong(out, target, 255);
  } else if (value.starts_with("http://") || value.starts_with("https://")) {
    Invalid(out, target, shown, "cannot contain protocol prefix (http/https)");
  } else if (std::any_of(value.begin(), value.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    Invalid(out, target, shown, "must be lowercase");
  } else if (value.find_first_of(" \t\n\r\f\v") != std::string_view::npos) {
    Invalid(out, target, shown, "cannot contain whitespace characters");
  } else {
    std::string_view host = value.substr(0, value.find('/'));
    if (host.starts_with("*.")) host.remove_prefix(2);
    if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
      if (colon + 1 == host.size()) {
        Invalid(out, target, shown, "empty port");
        return;
      }
      host = host.substr(0, colon);
    }
    if (!ParseIpv4Cidr(host, true)) {
      for (const auto& e : Dns1123SubdomainErrors(host)) Invalid(out, target, shown, e);
    }
  }
  if (out.size() != before) return;
  if (!MatchesRegistryPattern(value, source)) {
    Invalid(out, target, shown,
            source ? "(must be a valid source image registry)" : "(must be a valid mirrored image registry)");
  }
}

void CheckImageDigestMirrors(const json::object* props, std::vector<FieldError>& out) {
  const json::array* list = props ? GetArray(*props, "imageDigestMirrors") : nullptr;
  if (list == nullptr) return;
  for (size_t i = 0; i < list->size(); ++i) {
    const json::object* item = (*list)[i].if_object();
    if (item == nullptr) continue;
    std::string base = IndexTarget("properties.imageDigestMirrors", i);
    if (auto source = Str(item, "source")) CheckRegistry(*source, base + ".source", true, out);
    const json::array* mirrors = GetArray(*item, "mirrors");
    if (mirrors == nullptr) continue;
    if (mirrors->empty()) Invalid(out, base + ".mirrors", json::value(0), "must have at least 1 items");
    if (mirrors->size() > 255) TooMany(out, base + ".mirrors", mirrors->size(), 255);
    for (size_t m = 0; m < mirrors->size(); ++m) {
      if ((*mirrors)[m].is_string())
        CheckRegistry((*mirrors)[m].get_string(), IndexTarget(base + ".mirrors", m), false, out);
    }
  }
}

void CheckPlatform(const json::object* props, std::vector<FieldError>& out, std::optional<AzureId>& subnet,
                   std::string& managed_rg) {
  const json::object* platform = Obj(props, "platform");
  if (platform == nullptr) return;
  if (auto mrg = Str(platform, "managedResourceGroup")) {
    managed_rg = std::string(*mrg);
    // [-\w._()]{0,89}[-\w_()]: letters, digits, '_', '-', '.', '(', ')', not ending in '.'.
    auto group_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' ||
             c == '(' || c == ')';
    };
    bool group_ok = !mrg->empty() && std::all_of(mrg->begin(), mrg->end(), group_char) && mrg->back() != '.';
    if (mrg->empty()) {
      Required(out, kPlatform + ".managedResourceGroup");
    } else if (mrg->size() > 90 || !group_ok) {
      Invalid(
          out, kPlatform + ".managedResourceGroup", json::value(*mrg),
          "it must be max 90 characters and only letters, digits, underscores (_), hyphens (-), periods (.), "
          "and parentheses (( )) are allowed, and it cannot end with a period '.'.");
    }
  }
  if (auto id = Str(platform, "subnetId"))
    subnet = CheckResourceId(out, kPlatform + ".subnetId", *id, kSubnetType);
  if (auto id = Str(platform, "vnetIntegrationSubnetId")) {
    const std::string target = kPlatform + ".vnetIntegrationSubnetId";
    if (auto vnet = CheckResourceId(out, target, *id, kSubnetType)) {
      if (EqualsIgnoreCase(vnet->resource_group, managed_rg)) {
        Invalid(out, target, json::value(*id),
                "must not be the same resource group name: \"" + managed_rg + "\"");
      }
      if (subnet && !vnet->parent.empty() && !subnet->parent.empty() &&
          !EqualsIgnoreCase(vnet->parent, subnet->parent)) {
        Invalid(out, target, json::value(*id),
                "must belong to the same VNet as subnetId '" + std::string(*Str(platform, "subnetId")) + "'");
      }
    }
  }
  if (auto id = Str(platform, "networkSecurityGroupId"))
    CheckResourceId(out, kPlatform + ".networkSecurityGroupId", *id, kNsgType);
}

// Operator identities: well-formed, unique within the cluster, in the cluster's subscription and
// not in the managed resource group.
void CheckOperatorIdentities(const json::object* props, const DecodeOptions& options,
                             const std::string& managed_rg, std::vector<FieldError>& out) {
  const json::object* uai =
      Obj(Obj(Obj(props, "platform"), "operatorsAuthentication"), "userAssignedIdentities");
  if (uai == nullptr) return;
  std::set<std::string> seen;
  auto check = [&](std::string_view text, const std::string& target) {
    if (!seen.insert(ToLower(text)).second) {
      Invalid(
          out, target, json::value(text),
          "managed identity with resource id '" + std::string(text) + "' must be unique within the cluster");
    }
    auto id = CheckResourceId(out, target, text, kUaiType);
    if (!id) return;
    if (!options.subscription_id.empty() && !EqualsIgnoreCase(id->subscription, options.subscription_id)) {
      Invalid(out, target, json::value(text),
              "must be in the same Azure subscription: \"" + options.subscription_id + "\"");
    }
    if (EqualsIgnoreCase(id->resource_group, managed_rg)) {
      Invalid(out, target, json::value(text),
              "must not be the same resource group name: \"" + managed_rg + "\"");
    }
  };
  for (std::string_view group : {"controlPlaneOperators", "dataPlaneOperators"}) {
    const json::object* map = GetObject(*uai, group);
    if (map == nullptr) continue;
    std::map<std::string, std::string> sorted;  // the real service walks operators by name
    for (const auto& member : *map) {
      if (member.value().is_string()) sorted.emplace(member.key(), member.value().get_string());
    }
    for (const auto& [name, id] : sorted) {
      std::string target = KeyPath(kOperators + "." + std::string(group), name);
      if (name.empty()) Required(out, target);
      check(id, target);
    }
  }
  if (auto smi = GetString(*uai, "serviceManagedIdentity"))
    check(*smi, kOperators + ".serviceManagedIdentity");
}

// Every identity assigned to the cluster is used exactly once by a control-plane operator or the
// service managed identity; data-plane operator identities are not assigned to the cluster.
void CheckIdentityUsage(const json::object& body, std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  const json::object* uai =
      Obj(Obj(Obj(props, "platform"), "operatorsAuthentication"), "userAssignedIdentities");
  const json::object* assigned = Obj(GetObject(body, "identity"), "userAssignedIdentities");
  if (uai == nullptr) return;  // no operator identities at all: the schema reports the missing block
  std::map<std::string, int> tally;
  if (assigned != nullptr) {
    for (const auto& member : *assigned) tally[ToLower(member.key())] = 0;
  }
  auto use = [&](std::string_view id, const std::string& target) {
    auto it = tally.find(ToLower(id));
    if (it == tally.end()) {
      Invalid(out, target, json::value(id), "identity is not assigned to this resource");
    } else {
      ++it->second;
    }
  };
  if (const json::object* cp = Obj(uai, "controlPlaneOperators")) {
    for (const auto& member : *cp) {
      if (member.value().is_string())
        use(member.value().get_string(), KeyPath(kOperators + ".controlPlaneOperators", member.key()));
    }
  }
  if (auto smi = Str(uai, "serviceManagedIdentity")) use(*smi, kOperators + ".serviceManagedIdentity");
  if (assigned != nullptr) {
    for (const auto& member : *assigned) {
      int count = tally[ToLower(member.key())];
      std::string target = KeyPath("identity.userAssignedIdentities", member.key());
      if (count == 0)
        Invalid(out, target, json::value(member.key()), "identity is assigned to this resource but not used");
      if (count > 1) Invalid(out, target, json::value(member.key()), "identity is used multiple times");
    }
  }
  if (const json::object* dp = Obj(uai, "dataPlaneOperators")) {
    for (const auto& member : *dp) {
      if (member.value().is_string() && tally.contains(ToLower(member.value().get_string()))) {
        Invalid(out, KeyPath(kOperators + ".dataPlaneOperators", member.key()), member.value(),
                "cannot use identity assigned to this resource by .identities.userAssignedIdentities");
      }
    }
  }
}

// Rules that compare the cluster's own resource ID (subscription, resource group) with the IDs
// in its body.
void CheckAgainstClusterId(const json::object* props, const DecodeOptions& options,
                           const std::string& managed_rg, std::vector<FieldError>& out) {
  const json::object* platform = Obj(props, "platform");
  if (platform == nullptr) return;
  if (!options.resource_group.empty() && !managed_rg.empty() &&
      EqualsIgnoreCase(managed_rg, options.resource_group)) {
    Invalid(out, kPlatform + ".managedResourceGroup", json::value(managed_rg),
            "must not be the same resource group name: \"" + options.resource_group + "\"");
  }
  struct Ref {
    std::string_view field;
    bool not_in_managed_group;
  };
  for (Ref ref :
       {Ref{"subnetId", true}, Ref{"networkSecurityGroupId", true}, Ref{"vnetIntegrationSubnetId", false}}) {
    auto text = Str(platform, ref.field);
    if (!text) continue;
    auto parsed = ParseAzureId(*text);
    if (!parsed.id) continue;
    std::string target = kPlatform + "." + std::string(ref.field);
    if (!options.subscription_id.empty() &&
        !EqualsIgnoreCase(parsed.id->subscription, options.subscription_id)) {
      Invalid(out, target, json::value(*text),
              "must be in the same Azure subscription: \"" + options.subscription_id + "\"");
    }
    if (ref.not_in_managed_group && EqualsIgnoreCase(parsed.id->resource_group, managed_rg)) {
      Invalid(out, target, json::value(*text),
              "must not be the same resource group name: \"" + managed_rg + "\"");
    }
  }
}

}  // namespace

void CheckCluster(const json::object& body, const json::object* existing, const DecodeOptions& options,
                  std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  const json::object* old_props = existing ? GetObject(*existing, "properties") : nullptr;
  CheckVersion(props, old_props, options.experimental_release_features, out);
  CheckNodePoolSkew(props, old_props, options.node_pool_versions, out);
  CheckDns(props, out);
  CheckNetwork(props, out);
  CheckApi(props, out);
  std::optional<AzureId> subnet;
  std::string managed_rg;
  CheckPlatform(props, out, subnet, managed_rg);
  if (old_props != nullptr) {
    // The real service reports a changed block as well as its changed fields (the schema's create-only
    // check reports those).
    Immutable(out, "properties.network", Member(props, "network"), Member(old_props, "network"));
    Immutable(out, kPlatform, Member(props, "platform"), Member(old_props, "platform"));
  }
  CheckAutoscaling(props, out);
  CheckEtcd(props, old_props, out);
  CheckImageDigestMirrors(props, out);
  CheckIdentityBlock(body, out);
  CheckOperatorIdentities(props, options, managed_rg, out);
  CheckAgainstClusterId(props, options, managed_rg, out);
  if (Str(Obj(props, "api"), "visibility") == std::optional<std::string_view>("Private") &&
      Str(Obj(props, "platform"), "vnetIntegrationSubnetId") == std::nullopt) {
    Required(out, kPlatform + ".vnetIntegrationSubnetId",
             "required when customerProperties.api.visibility is Private");
  }
  CheckIdentityUsage(body, out);
}

}  // namespace hcprp::api::rules
