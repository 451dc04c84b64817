// The OpenShift update service (Cincinnati) as the resource provider reads it, and the rule that picks a
// cluster's desired z-stream from it. The graph of channel "<group>-<major>.<minor>" ("stable-4.20") is
// {"nodes": [{"version", "payload", "metadata"}...], "edges": [[from, to]...]}; the Cluster Service
// serves it at GraphPath(). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::clusterservice {

// "stable-4.20" for channel group "stable" and version "4.20" or "4.20.12".
std::string ChannelOf(std::string_view channel_group, std::string_view version);
// The graph of a channel: "/api/upgrades_info/graph?channel=stable-4.20".
std::string GraphPath(std::string_view channel);

// A Cluster Service version ID from a raw version: "openshift-v4.20.12" in the stable group,
// "openshift-v4.20.12-fast" in the others.
std::string VersionIdOf(std::string_view raw, std::string_view channel_group);
// The raw version of a Cluster Service version ID: "openshift-v4.20.12-fast" -> "4.20.12"; a raw
// version is returned as it is.
std::string RawVersionOf(std::string_view version_id);
// "4.20" of "4.20.12" (of "4.20": itself); empty when it is not a version.
std::string MinorOf(std::string_view version);

// Whether raw version `a` is newer than `b` (semantic versioning); false when either is not a version.
bool NewerThan(std::string_view a, std::string_view b);

// The releases of `minor` in a graph, newest first.
std::vector<std::string> ReleasesOfMinor(const json::object& graph, std::string_view minor);

// The desired z-stream of a cluster at `minor` in `channel_group`, as the real service's backend picks it
// from the channel's graph (`source` names the graph in errors): the newest release of the minor, except
// in the stable group, which takes the one before it so that a release new to stable is not picked at
// once. InvalidArgument ("no releases found in <source>", "1 releases found in <source>, which is not
// enough for the requested 1 offset") when the graph has too few.
Result<std::string> SelectDesiredVersion(const json::object& graph, std::string_view minor,
                                         std::string_view channel_group, std::string_view source);

}  // namespace hcprp::clusterservice
