// What a version pass decides (private to src/backend; pure functions, thread-safe): each cluster's
// desired control-plane z-stream, the store writes that record it, and the clusters whose Cluster
// Service object is asked to upgrade to it (version_controller.h runs the plan).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace hcprp::backend {

// A cluster of an owned partition as the version controller's in-memory view holds it.
struct ClusterVersionState {
  std::string href;
  std::string partition_key;
  std::string channel_group;
  std::string service_desired;  // raw: the Cluster Service's version.id (what it was asked to run)
  std::string stored_desired;   // raw: the desired version in the store; empty: none stored yet
  std::string etag;             // of the stored document; empty: there is none
  // What runs, as the hcprp_cluster_versions gauge counts it: "<version> completed|partial" for each
  // running version, and "<version> desired" for the Cluster Service's desired one while nothing runs it.
  std::vector<std::string> counted_as;
};

// The pick of each channel a plan reads ("fast-4.20" -> the release clusterservice::
// SelectDesiredVersion picks from its graph); nullopt: the channel offers none (or could not be read).
using ChannelPicks = std::map<std::string, std::optional<std::string>>;

// The channel whose pick decides a cluster's desired version: its group and the minor of the newer
// of its stored and its Cluster Service desired version ("" when neither is a version).
std::string DecidingChannel(const ClusterVersionState& c);

// What a cluster's deciding channel and desired version depend on: its channel group, stored desired
// version and the Cluster Service's (views into the cluster's strings).
using VersionsKey = std::tuple<std::string_view, std::string_view, std::string_view>;
VersionsKey KeyOf(const ClusterVersionState& c);

// The desired version a cluster should hold: the newer of the stored one and the Cluster Service's
// (a customer's change to the next minor reaches the Cluster Service first), raised to its deciding
// channel's pick when that is newer. Never below either of them.
std::string DesiredVersionOf(const ClusterVersionState& c, const ChannelPicks& picks);

// One store write of a cluster's desired version.
struct DesiredWrite {
  std::string href;
  std::string partition_key;
  std::string channel_group;
  std::string from;             // the stored desired version; empty: none
  std::string to;               // newer than `from`
  std::string etag;             // the write is conditioned on it; empty: it creates the document
  bool raises_service = false;  // `to` is newer than the Cluster Service's desired version
};

// The writes that bring each cluster's stored desired version to DesiredVersionOf, ordered by
// partition (then href), so that each partition's writes are one run.
std::vector<DesiredWrite> PlanDesiredWrites(const std::vector<ClusterVersionState>& clusters,
                                            const ChannelPicks& picks);

// Runs of at most `max_batch` (>= 1) writes of one partition each, in order: one store batch each.
std::vector<std::span<const DesiredWrite>> BatchesOf(const std::vector<DesiredWrite>& writes,
                                                     size_t max_batch);

// The clusters whose stored desired version is newer than the Cluster Service's: the upgrades to
// ask the Cluster Service for (again, after a crash between the store write and the request).
std::vector<const ClusterVersionState*> PlanTriggers(const std::vector<ClusterVersionState>& clusters);

}  // namespace hcprp::backend
