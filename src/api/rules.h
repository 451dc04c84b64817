// The semantic rules of each resource kind (semantic.h lists them all). Private to src/api:
// CheckSemantics is the entry point.
#pragma once

#include <string>
#include <vector>

#include "api/api.h"
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
// version.channelGroup is given and one of the channel groups the service offers.
void CheckChannelGroup(const json::object* version, const std::string& target, std::vector<FieldError>& out);

}  // namespace hcprp::api::rules
