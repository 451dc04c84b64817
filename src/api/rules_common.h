// Building blocks of the semantic rules (semantic.h lists the rules): how a rule reports a problem,
// and the parsers the rules share (Azure resource IDs, OpenShift versions, Kubernetes names).
//
// Problems are reported the way the real service reports its field errors: code
// InvalidRequestContent, the target in its path format (map entries as `path[key]`, list items as
// `path[3]`), and a message "<kind>: <detail>" such as
// `Invalid value: "4.19": must be at least 4.20` or `Forbidden: field is immutable`.
//
// Private to src/api.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api::rules {

// `base[key]`: the target of a map entry or a list item.
std::string KeyPath(std::string_view base, std::string_view key);
std::string IndexTarget(std::string_view base, size_t index);

// Problem reporters. `value` is shown as the rejected value (strings quoted, numbers bare).
void Invalid(std::vector<FieldError>& out, std::string target, const json::value& value,
             std::string_view detail);
void Required(std::vector<FieldError>& out, std::string target, std::string_view detail = {});
void Forbidden(std::vector<FieldError>& out, std::string target, std::string_view detail);
void TooLong(std::vector<FieldError>& out, std::string target, size_t max_bytes);
void TooMany(std::vector<FieldError>& out, std::string target, size_t actual, size_t max_items);
void Unsupported(std::vector<FieldError>& out, std::string target, const json::value& value,
                 const std::vector<std::string_view>& supported);
// "must be greater than or equal to N" / "must be less than or equal to N" on an integer.
void AtLeast(std::vector<FieldError>& out, const std::string& target, std::optional<int64_t> value,
             int64_t min);
void AtMost(std::vector<FieldError>& out, const std::string& target, std::optional<int64_t> value,
            int64_t max);
// "field is immutable" when `now` and `before` differ (absent and null are the same).
void Immutable(std::vector<FieldError>& out, const std::string& target, const json::value* now,
               const json::value* before);

// Accessors that tolerate missing parents and values of the wrong type.
const json::object* Obj(const json::object* o, std::string_view key);
std::optional<std::string_view> Str(const json::object* o, std::string_view key);
std::optional<int64_t> Int(const json::object* o, std::string_view key);
const json::value* Member(const json::object* o, std::string_view key);

// An Azure resource ID: "/subscriptions/S[/resourceGroups/G][/providers/NS/T1/N1[/T2/N2...]]".
struct AzureId {
  std::string subscription;
  std::string resource_group;
  std::string type;    // "Microsoft.Network/virtualNetworks/subnets"; "" for a group or subscription
  std::string name;    // the last name
  std::string parent;  // the ID without its last type/name pair ("" when it has only one)
};
// nullopt with the reason when `text` is not a resource ID.
struct AzureIdParse {
  std::optional<AzureId> id;
  std::string error;
};
AzureIdParse ParseAzureId(std::string_view text);

// A value that is no resource ID, as the real service refuses it (its conversion parses resource IDs
// before any rule runs): `Invalid value: "/x": invalid resource ID: /x`, at the target its conversion
// names, which spells three leaves with "ID" (properties.platform.subnetID, networkSecurityGroupID,
// osDisk.encryptionSetID). The schema's arm-id format and CheckResourceId both report it so.
// The properties the real service's conversion refuses as null ("Required value: field cannot be
// null"), whether a PUT leaves them out (no default fills them) or a PATCH sets them to null:
// properties.platform.vnetIntegrationSubnetId, ...kms.visibility, properties.network.hostPrefix, the three
// autoscaling values, a node pool's properties.autoRepair.
bool NullChecked(std::string_view target);

std::string MalformedIdMessage(std::string_view text);
std::string MalformedIdTarget(std::string target);
// The real service parses a body's resource IDs while it converts the body, before it validates
// anything: when one does not parse, those are the only problems it reports. Keeps only the
// malformed-ID problems of `errors` when there are any.
void KeepMalformedIdsAlone(std::vector<FieldError>& errors);

// The resource-ID checks of the real service: subscription, name, type (when `type` is not
// empty) and, when `want_group`, a resource group. Returns the parsed ID when it is usable.
std::optional<AzureId> CheckResourceId(std::vector<FieldError>& out, const std::string& target,
                                       std::string_view text, std::string_view type, bool want_group = true);

// An OpenShift version. `Parse` is strict semantic versioning ("4.20.8", "4.21.0-rc.1");
// `ParseTolerant` also takes "4.20" and "v4.20" (missing parts are 0).
struct Semver {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  std::string prerelease;
  int parts = 0;  // how many of major.minor.patch the text gave
};
struct SemverParse {
  std::optional<Semver> version;
  std::string error;  // the reason, worded as the semver library of the real service words it
};
SemverParse ParseSemver(std::string_view text);
SemverParse ParseSemverTolerant(std::string_view text);
int Compare(const Semver& a, const Semver& b);  // -1, 0, 1; prerelease sorts before release

// Kubernetes names: a qualified name ("[prefix/]name") and a label value. Each returns the
// reasons it is not valid (empty when valid), worded as Kubernetes words them.
std::vector<std::string> QualifiedNameErrors(std::string_view value);
std::vector<std::string> LabelValueErrors(std::string_view value);
std::vector<std::string> Dns1123SubdomainErrors(std::string_view value);

}  // namespace hcprp::api::rules
