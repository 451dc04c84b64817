// Node pool rules (semantic.h lists them).
#include <algorithm>
#include <cctype>
#include <map>

#include "api/rules.h"
#include "api/rules_common.h"
#include "api/vm_sizes.h"

namespace hcprp::api::rules {
namespace {

constexpr int64_t kMaxNodesWithoutZone = 200;
constexpr int64_t kMaxEphemeralDiskGiB = 2040;
constexpr std::string_view kMinNodePoolVersion = "4.20.8";

// Labels a node pool may not set: a key refused whatever its value, or the values refused for it.
const std::map<std::string, std::vector<std::string>, std::less<>>& ForbiddenLabels() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kLabels = {
      {"node-role.kubernetes.io/master", {}},
      {"node-role.kubernetes.io/worker", {}},
      {"machine.openshift.io/cluster-api-machine-role", {"master", "infra"}},
      {"machine.openshift.io/cluster-api-machine-type", {"master", "infra"}},
  };
  return kLabels;
}

std::string Text(const Semver& v) {
  std::string s = std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
  return v.prerelease.empty() ? s : s + "-" + v.prerelease;
}
std::string Line(const Semver& v) { return std::to_string(v.major) + "." + std::to_string(v.minor); }

// Node pool release lines allowed next to a control plane of another major, and the major upgrade
// paths, as the real service lists them.
const std::map<std::string, std::vector<std::string>, std::less<>>& CrossMajorSkew() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kSkew = {
      {"4.21", {"5.0"}}, {"4.22", {"5.0", "5.1"}}, {"4.23", {"5.1", "5.2"}}};
  return kSkew;
}
const std::map<std::string, std::string, std::less<>>& MajorUpgradePaths() {
  static const std::map<std::string, std::string, std::less<>> kPaths = {{"4.22", "5.0"}, {"4.23", "5.1"}};
  return kPaths;
}

std::optional<std::string> CrossMajorSkewProblem(const Semver& node_pool, const Semver& control_plane) {
  auto it = CrossMajorSkew().find(Line(node_pool));
  if (it == CrossMajorSkew().end()) {
    return "node pool version " + Text(node_pool) +
           " is not allowed to coexist with a different-major control plane";
  }
  if (std::find(it->second.begin(), it->second.end(), Line(control_plane)) == it->second.end()) {
    return "node pool version " + Text(node_pool) + " cannot coexist with control plane version " +
           Text(control_plane);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> MajorVersionChangeProblem(const Semver& want, const std::optional<Semver>& before,
                                                     const Semver& control_plane, bool experimental) {
  const bool same_major_change = !before || want.major == before->major;
  if (want.major != control_plane.major && same_major_change) {
    if (!experimental) {
      return "node pool version changes are not supported while the control plane is on a different major "
             "version (node pool major version " +
             std::to_string(want.major) + " vs control plane major version " +
             std::to_string(control_plane.major) + ")";
    }
    return CrossMajorSkewProblem(want, control_plane);
  }
  if (!before || want.major == before->major) return std::nullopt;
  if (!experimental) return std::string("major version changes are not supported");
  if (want.major < before->major) return CrossMajorSkewProblem(want, control_plane);
  auto path = MajorUpgradePaths().find(Line(*before));
  const std::string prefix = "invalid upgrade path from " + Text(*before) + " to " + Text(want) + ": ";
  if (path == MajorUpgradePaths().end()) return prefix + "major version upgrades are not supported";
  if (path->second != Line(want)) return prefix + Line(*before) + " can only upgrade to " + path->second;
  return std::nullopt;
}

namespace {

void CheckVersion(const json::object* props, const json::object* old_props, const DecodeOptions& options,
                  std::vector<FieldError>& out) {
  const json::object* version = Obj(props, "version");
  const std::string target = "properties.version.id";
  auto id = Str(version, "id");
  auto old_id = Str(Obj(old_props, "version"), "id");
  if ((old_props == nullptr || (old_id && !old_id->empty())) && (!id || id->empty())) Required(out, target);
  bool changed = old_props == nullptr || id != old_id;
  std::optional<Semver> parsed;
  if (id && !id->empty() && changed) {
    SemverParse strict = ParseSemver(*id);
    if (!strict.version) {
      Invalid(out, target, json::value(*id), strict.error);
    } else {
      parsed = strict.version;
    }
  }
  CheckChannelGroup(version, "properties.version.channelGroup", options.experimental_release_features, out);
  if (id && !id->empty() && !options.experimental_release_features) {
    SemverParse tolerant = ParseSemverTolerant(*id);
    if (!tolerant.version) {
      Invalid(out, target, json::value(*id), tolerant.error);
    } else if (Compare(*tolerant.version, *ParseSemverTolerant(kMinNodePoolVersion).version) < 0) {
      Invalid(out, target, json::value(*id), "must be at least " + std::string(kMinNodePoolVersion));
    }
  }
  // A changed version stays within what the control plane runs: not above its minor, at most two
  // minors below it, and at most two minors above the node pool's current version.
  if (!parsed || old_props == nullptr || options.parent_cluster == nullptr) return;
  const Semver& want = *parsed;
  // The control plane's lowest and highest running versions; its version.id when they are unknown.
  std::optional<std::pair<Semver, std::string>> lowest;
  std::optional<std::pair<Semver, std::string>> highest;
  auto consider = [&](std::string_view text) {
    SemverParse v = ParseSemverTolerant(text);
    if (!v.version) return;
    if (!lowest || Compare(*v.version, lowest->first) < 0) lowest.emplace(*v.version, std::string(text));
    if (!highest || Compare(*v.version, highest->first) > 0) highest.emplace(*v.version, std::string(text));
  };
  for (const std::string& v : options.control_plane_versions) consider(v);
  if (!lowest) {
    if (auto cluster_id = Str(Obj(GetObject(*options.parent_cluster, "properties"), "version"), "id"))
      consider(*cluster_id);
  }
  SemverParse before = old_id ? ParseSemverTolerant(*old_id) : SemverParse{};
  if (lowest) {
    const Semver& low = lowest->first;
    const Semver& high = highest->first;
    if (want.major > low.major || (want.major == low.major && want.minor > low.minor)) {
      Invalid(out, target, json::value(*id),
              "invalid node pool version " + std::string(*id) + ": cannot exceed control plane version " +
                  lowest->second);
    } else if (want.major == high.major && high.minor > want.minor + 2) {
      Invalid(out, target, json::value(*id),
              "invalid node pool version " + std::string(*id) +
                  ": must be within 2 minor versions of control plane version " + highest->second);
    } else if (auto problem = MajorVersionChangeProblem(want, before.version, high,
                                                        options.experimental_release_features)) {
      Invalid(out, target, json::value(*id), *problem);
    }
  }
  if (before.version && want.major == before.version->major && want.minor > before.version->minor + 2) {
    Invalid(out, target, json::value(*id),
            "invalid upgrade path from " + std::string(*old_id) + " to " + std::string(*id) +
                ": skipping more than 2 minor versions is not allowed");
  }
}

void CheckPlatform(const json::object* props, const json::object* old_props, const DecodeOptions& options,
                   std::vector<FieldError>& out) {
  const json::object* platform = Obj(props, "platform");
  const std::string base = "properties.platform";
  if (old_props != nullptr) {
    // The real service reports a changed block as well as its changed fields (the schema's create-only
    // check reports those).
    Immutable(out, base, Member(props, "platform"), Member(old_props, "platform"));
    Immutable(out, base + ".osDisk", Member(platform, "osDisk"),
              Member(Obj(old_props, "platform"), "osDisk"));
  }
  if (platform == nullptr) return;
  if (auto subnet = Str(platform, "subnetId")) {
    auto id = CheckResourceId(out, base + ".subnetId", *subnet, "Microsoft.Network/virtualNetworks/subnets");
    const json::object* parent = options.parent_cluster;
    auto cluster_subnet =
        parent ? Str(Obj(GetObject(*parent, "properties"), "platform"), "subnetId") : std::nullopt;
    auto old_subnet = Str(Obj(old_props, "platform"), "subnetId");
    bool changed = old_props == nullptr || !old_subnet || !EqualsIgnoreCase(*old_subnet, *subnet);
    if (id && cluster_subnet && changed) {
      auto cluster_id = ParseAzureId(*cluster_subnet).id;
      if (cluster_id && !EqualsIgnoreCase(cluster_id->parent, id->parent)) {
        Invalid(out, base + ".subnetId", json::value(*subnet),
                "must belong to the same VNet as the parent cluster VNet '" + cluster_id->parent + "'");
      }
    }
  }
  if (auto size = Str(platform, "vmSize"); size && size->empty()) {
    Required(out, base + ".vmSize");
  } else if (size) {
    // Checked when set or changed, as the service ratchets its allow-list.
    auto old_size = Str(Obj(old_props, "platform"), "vmSize");
    if ((!old_size || *old_size != *size) && !IsEnabledNodePoolVmSize(*size)) {
      auto sizes = EnabledNodePoolVmSizes();
      Unsupported(out, base + ".vmSize", json::value(*size),
                  std::vector<std::string_view>(sizes.begin(), sizes.end()));
    }
  }
  const json::object* disk = Obj(platform, "osDisk");
  if (disk == nullptr) return;
  if (Str(disk, "diskType") == std::optional<std::string_view>("Ephemeral")) {
    AtMost(out, base + ".osDisk.sizeGiB", Int(disk, "sizeGiB"), kMaxEphemeralDiskGiB);
  }
  if (auto set = Str(disk, "encryptionSetId")) {
    const std::string target = base + ".osDisk.encryptionSetId";
    if (auto id = CheckResourceId(out, target, *set, "Microsoft.Compute/diskEncryptionSets")) {
      if (id->name.size() > 80) TooLong(out, target, 80);
      bool name_ok = std::all_of(id->name.begin(), id->name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
      });
      if (!name_ok) {
        Invalid(out, target, json::value(id->name),
                "(must contain only alphanumeric characters, underscores, and hyphens)");
      }
    }
  }
}

void CheckScaling(const json::object* props, std::vector<FieldError>& out) {
  bool zoned = !Str(Obj(props, "platform"), "availabilityZone").value_or("").empty();
  auto replicas = Int(props, "replicas");
  if (!zoned) AtMost(out, "properties.replicas", replicas, kMaxNodesWithoutZone);
  const json::object* scaling = Obj(props, "autoScaling");
  if (scaling != nullptr && replicas && *replicas > 0) {
    Invalid(out, "properties.replicas", json::value(Int(scaling, "min").value_or(0)),
            "cannot specify replicas when autoScaling is enabled");
  }
  if (scaling == nullptr) return;
  std::vector<FieldError> found;
  auto min = Int(scaling, "min");
  auto max = Int(scaling, "max");
  if (min && *min >= 0 && !zoned) AtMost(found, "properties.autoScaling.min", min, kMaxNodesWithoutZone);
  if (max && !zoned) AtMost(found, "properties.autoScaling.max", max, kMaxNodesWithoutZone);
  if (found.empty() && min && max && *min >= 0) AtLeast(found, "properties.autoScaling.max", max, *min);
  out.insert(out.end(), found.begin(), found.end());
}

void CheckLabels(const json::object* props, std::vector<FieldError>& out) {
  const json::array* labels = props ? GetArray(*props, "labels") : nullptr;
  if (labels == nullptr) return;
  const std::string base = "properties.labels";
  for (const auto& item : *labels) {
    const json::object* label = item.if_object();
    auto key = Str(label, "key");
    if (!key) continue;
    for (const auto& e : QualifiedNameErrors(*key)) Invalid(out, base, json::value(*key), e);
    auto value = Str(label, "value").value_or("");
    for (const auto& e : LabelValueErrors(value)) Invalid(out, KeyPath(base, *key), json::value(value), e);
    auto forbidden = ForbiddenLabels().find(*key);
    if (forbidden == ForbiddenLabels().end()) continue;
    if (forbidden->second.empty()) {
      Invalid(out, KeyPath(base, *key), json::value(*key), "label key is not allowed on node pools");
    } else if (std::find(forbidden->second.begin(), forbidden->second.end(), value) !=
               forbidden->second.end()) {
      Invalid(out, KeyPath(base, *key), json::value(value), "label value is not allowed for this label key");
    }
  }
}

void CheckTaints(const json::object* props, std::vector<FieldError>& out) {
  const json::array* taints = props ? GetArray(*props, "taints") : nullptr;
  if (taints == nullptr) return;
  for (size_t i = 0; i < taints->size(); ++i) {
    const json::object* taint = (*taints)[i].if_object();
    if (taint == nullptr) continue;
    std::string base = IndexTarget("properties.taints", i);
    auto key = Str(taint, "key");
    if (!key || key->empty()) {
      Required(out, base + ".key");
    }
    if (key) {
      for (const auto& e : QualifiedNameErrors(*key)) Invalid(out, base + ".key", json::value(*key), e);
    }
    if (auto value = Str(taint, "value")) {
      for (const auto& e : LabelValueErrors(*value)) Invalid(out, base + ".value", json::value(*value), e);
    }
  }
}

}  // namespace

void CheckNodePool(const json::object& body, const json::object* existing, const DecodeOptions& options,
                   std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  const json::object* old_props = existing ? GetObject(*existing, "properties") : nullptr;
  CheckIdentityBlock(body, out);
  CheckVersion(props, old_props, options, out);
  CheckPlatform(props, old_props, options, out);
  CheckScaling(props, out);
  if (old_props != nullptr) {
    Immutable(out, "properties.autoRepair", Member(props, "autoRepair"), Member(old_props, "autoRepair"));
  }
  if (Str(Obj(Obj(props, "platform"), "osDisk"), "diskType") ==
      std::optional<std::string_view>("Ephemeral")) {
    const json::value* repair = Member(props, "autoRepair");
    if (repair != nullptr && repair->is_bool() && !repair->get_bool()) {
      Invalid(out, "properties.autoRepair", json::value(false),
              "must be true when platform.osDisk.diskType is Ephemeral (nodes with ephemeral disks lose data "
              "on host "
              "events)");
    }
  }
  CheckLabels(props, out);
  CheckTaints(props, out);
  AtLeast(out, "properties.nodeDrainTimeoutMinutes", Int(props, "nodeDrainTimeoutMinutes"), 0);
  AtMost(out, "properties.nodeDrainTimeoutMinutes", Int(props, "nodeDrainTimeoutMinutes"), 10080);
}

}  // namespace hcprp::api::rules

namespace hcprp::api {

ValidationErrors CheckNodePoolDelete(size_t others_remaining) {
  ValidationErrors errors;
  if (others_remaining == 0) {
    rules::Forbidden(errors.errors, "name", "The last node pool can not be deleted from a cluster.");
  }
  return errors;
}

}  // namespace hcprp::api
