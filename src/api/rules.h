// The semantic rules of each resource kind (semantic.h lists them all). Private to src/api:
// CheckSemantics is the entry point.
#pragma once

#include <string>
#include <vector>

#include "api/api.h"
#include "api/rules_common.h"
#include "core/json.h"

namespace hcprp::api::rules {

// `body` is the canonical body being validated, `existing` the stored one on replace and patch.
void CheckCluster(const json::object& body, const json::object* existing, const DecodeOptions& options,
                  std::vector<FieldError>& out);
void CheckNodePool(const json::object& body, const json::object* existing, const DecodeOptions& options,
                   std::vector<FieldError>& out);
void CheckExternalAuth(const json::object& body, const json::object* existing, const DecodeOptions& options,
                       std::vector<FieldError>& out);

// Shared by clusters and node pools.
// identity: a type is given, and every identity.userAssignedIdentities key is a user-assigned
// identity resource ID with a resource group.
void CheckIdentityBlock(const json::object& body, std::vector<FieldError>& out);
// version.channelGroup is given and one of the channel groups the service offers: stable and fast, and
// candidate and nightly too when `experimental` (the subscription registered the experimental-features
// AFEC).
void CheckChannelGroup(const json::object* version, const std::string& target, bool experimental,
                       std::vector<FieldError>& out);

// A node pool version change `before` -> `want` next to a control plane running `control_plane` (its
// highest version), across majors: the real service's message when it is refused, nullopt when it is
// allowed or stays within one major of both. `experimental`: the experimental-features AFEC, without
// which no change crosses a major and none is made while the control plane runs another major.
std::optional<std::string> MajorVersionChangeProblem(const Semver& want, const std::optional<Semver>& before,
                                                     const Semver& control_plane, bool experimental);

}  // namespace hcprp::api::rules
