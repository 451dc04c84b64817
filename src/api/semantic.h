// Semantic rules: what a user expects beyond the OpenAPI schema. They run on the canonical body
// ({"location","tags","identity","properties"}) after the schema checks, skip values of the wrong
// type (the schema already reported those) and append to the same error list.
//
// Rules (code InvalidParameter unless noted):
//  Names (InvalidResourceName, target "name"): the path-parameter patterns of the spec
//    (cluster ^[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?$, node pool and external auth up to 15 chars).
//  Cluster:
//   - network.podCidr / serviceCidr / machineCidr are IPv4 CIDRs without host bits, pairwise disjoint.
//   - network.hostPrefix is 23..26 and longer than the pod CIDR's prefix.
//   - api.authorizedCidrs entries are IPv4 CIDRs or addresses, without duplicates.
//   - version.id is "X.Y"; version.channelGroup cannot change after creation (its description says so
//     until updates are supported): PropertyChangeNotAllowed.
//   - every identity in platform.operatorsAuthentication.userAssignedIdentities (control plane, data
//     plane, service managed) is a key of identity.userAssignedIdentities (resource IDs compared
//     case-insensitively), and no identity is used twice.
//   - etcd.dataEncryption: keyManagementMode "CustomerManaged" needs customerManaged, and
//     encryptionType "KMS" needs kms.
//  Node pool:
//   - replicas and autoScaling are not both set; autoScaling.min <= autoScaling.max.
//   - replicas, autoScaling.min/max are at most 200 unless platform.availabilityZone is set.
//   - version.id is "X.Y" or "X.Y.Z"; version.channelGroup cannot change after creation.
//   - labels: keys are Kubernetes qualified names, unique, and not under the reserved kubernetes.io,
//     k8s.io or openshift.io domains (or their subdomains); values are valid label values.
//   - taints: keys are qualified names, values valid label values, (key, effect) pairs unique.
//   - nodeDrainTimeoutMinutes is 0..10080, as for clusters.
//  External auth:
//   - issuer.url is an https URL; issuer.audiences are unique.
//   - every clients[].clientId is one of issuer.audiences; (component.name,
//     component.authClientNamespace) pairs are unique.
//   - claim.mappings.username.prefix is set when prefixPolicy is "Prefix", and only then.
//   - a validation rule of type "RequiredClaim" has requiredClaim.
//  All tracked resources: identity.userAssignedIdentities keys are user-assigned identity resource
//   IDs, unique ignoring case, and only given with an identity type that includes "UserAssigned".
#pragma once

#include <string_view>
#include <vector>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {

class SchemaSet;

// `existing` is the canonical body of the resource being replaced or patched, or nullptr.
void CheckSemantics(Kind kind, const json::object& body, const json::object* existing,
                    std::vector<FieldError>& out);

void CheckResourceName(const SchemaSet& schemas, Kind kind, std::string_view name,
                       std::vector<FieldError>& out);

// An IPv4 CIDR ("10.128.0.0/14"); nullopt when malformed. Exposed for tests.
struct Ipv4Cidr {
  uint32_t address = 0;
  int prefix = 0;
  bool host_bits_set = false;
};
std::optional<Ipv4Cidr> ParseIpv4Cidr(std::string_view text, bool allow_bare_address = false);
bool Overlaps(const Ipv4Cidr& a, const Ipv4Cidr& b);

}  // namespace hcprp::api
