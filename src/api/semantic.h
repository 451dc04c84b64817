// Semantic rules: the rules of the real service beyond the OpenAPI schema. They run on the canonical
// body ({"location","tags","identity","properties"}) after the schema checks and the defaults
// (defaults.h lists them in the order they are applied), skip values of the wrong type (the schema
// already reported those) and append to the same error list. docs/validation.md maps every rule of the real
// service to its rule here and its test. Each problem is reported as the real service reports it
// (rules_common.h): code InvalidRequestContent, the target in its path format (`path[key]` for map entries),
// and its message. Limits the OpenAPI schema already enforces with the same bound (osDisk.sizeGiB 64..4095,
// nodeDrainTimeoutMinutes 0..10080, replicas >= 0, audiences 1..10, imageDigestMirrors <= 240,
// enums) are left to the schema.
//
// Rules (rules_cluster.cpp, rules_nodepool.cpp, rules_externalauth.cpp):
//  Names (target "id"): at most 54 characters for clusters, 15 for node pools and external auths, and
//   the path-parameter patterns of the spec.
//  Identity (clusters, node pools): identity.type is given; identity.userAssignedIdentities keys
//   are user-assigned identity resource IDs with a resource group.
//  Cluster:
//   - version.id: required; at least 4.20; X.Y only (the patch is managed); OpenShift 5 and above
//     refused; on update it may not decrease, may move at most one minor, and may cross a major
//     only along the supported paths (4.22 -> 5.0, 4.23 -> 5.1). version.channelGroup: required,
//     "stable" or "fast". With the experimental-features AFEC (experimental.h): a patch pins the
//     exact version, OpenShift 5 is allowed, and "candidate" and "nightly" too.
//   - dns.baseDomainPrefix: at most 15 characters, an RFC 1035 label.
//   - network: pod, service and machine CIDRs are IPv4 CIDRs without host bits and pairwise
//     disjoint (reported at properties.network); hostPrefix is 23..26.
//   - api.authorizedCidrs: 1..500 entries, each an IPv4 address or CIDR, not empty, without
//     surrounding whitespace.
//   - platform: managedResourceGroup is a resource group name and differs from the cluster's
//     resource group; subnetId, vnetIntegrationSubnetId and networkSecurityGroupId are resource
//     IDs of their type, in the cluster's subscription; the subnet, the NSG and the integration
//     subnet are not in the managed resource group; the integration subnet is in the subnet's VNet;
//     Private API visibility requires vnetIntegrationSubnetId. platform cannot change on update.
//   - operator identities (control plane, data plane, service managed): user-assigned identity
//     IDs, unique within the cluster, in the cluster's subscription, not in the managed resource
//     group, operator names not empty. Every identity.userAssignedIdentities entry is used exactly
//     once by a control-plane operator or the service managed identity; those reference only
//     assigned identities; data-plane operator identities are not assigned to the cluster.
//   - autoscaling: maxNodesTotal at most 500; maxPodGracePeriodSeconds and
//     maxNodeProvisionTimeSeconds at least 1; podPriorityThreshold not 0.
//   - etcd.dataEncryption: customerManaged given exactly when keyManagementMode is
//     CustomerManaged, kms exactly when encryptionType is KMS; activeKey name, vaultName, version
//     (kms.vaultName) required, at most 255 characters; keyManagementMode, encryptionType, kms.visibility and
//     the key name and vault cannot change (the key version can).
//   - imageDigestMirrors: source and mirrors are image registries (no scheme, lowercase, no
//     whitespace, DNS host, OpenShift's registry patterns); 1..255 mirrors.
//  Node pool:
//   - version.id: required; MAJOR.MINOR.PATCH (optional pre-release) when it changes; at least
//     4.20.8 (without the AFEC); channelGroup as for clusters. On update a changed version does not
//     exceed the cluster's minor, is within 2 minors of it, and skips at most 2 minors; a major
//     change needs the AFEC and follows the real service's paths (MajorVersionChangeProblem).
//   - platform cannot change on update; subnetId is a subnet in the parent cluster's VNet; vmSize
//     not empty and one of the VM sizes the service offers (vm_sizes.h); Ephemeral OS disks at most
//     2040 GiB and need autoRepair; encryptionSetId is a disk encryption set with a valid name (at
//     most 80 characters). autoRepair cannot change.
//   - nodeDrainTimeoutMinutes is 0..10080.
//   - replicas, autoScaling.min/max at most 200 unless platform.availabilityZone is set; replicas
//     (> 0) and autoScaling not together; autoScaling.max >= autoScaling.min.
//   - labels: keys are Kubernetes qualified names, values label values; node-role.kubernetes.io/
//     master and /worker refused; machine.openshift.io/cluster-api-machine-role and -type may not
//     be master or infra. taints: key required, a qualified name; value a label value.
//  External auth:
//   - issuer.url required, https; audiences not empty; issuer.ca a PEM certificate.
//   - clients: at most 20; component name (<= 256) and namespace (<= 63) required; clientId
//     required and one of issuer.audiences; extraScopes not empty; the console client
//     (console/openshift-console) is Confidential and only it may be; components unique.
//   - claim: mappings.username.claim required (<= 256); prefix given exactly when prefixPolicy is
//     Prefix; groups.claim required (<= 256); a validation rule has requiredClaim exactly when its
//     type is RequiredClaim, with claim and requiredValue.
//   - one external auth a cluster: a create is refused (target "name") when the cluster holds another
//     (DecodeOptions::other_external_auths).
#pragma once

#include <string_view>
#include <vector>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {

class SchemaSet;

// `existing` is the canonical body of the resource being replaced or patched, or nullptr.
void CheckSemantics(Kind kind, const json::object& body, const json::object* existing,
                    const DecodeOptions& options, std::vector<FieldError>& out);

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
