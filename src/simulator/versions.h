// The simulator's OpenShift version catalogue: every z-stream of each supported minor in each
// channel group, with whether it is enabled, its end of life, the default version and the upgrade
// edges between releases. Built from a JSON document (versions.json in this folder is compiled in;
// --versions FILE replaces it); published releases and withdrawn edges make new catalogues
// (UpdateService in update_service.h holds the current one).
//
// A version's ID is "openshift-vX.Y.Z" in the stable channel group and "openshift-vX.Y.Z-<group>"
// in the others; its raw ID is "X.Y.Z".
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::simulator {

struct CatalogueVersion {
  std::string raw_id;         // "4.20.8"
  std::string minor;          // "4.20"
  int z = 0;                  // 8
  std::string channel_group;  // "stable", "fast", "candidate", ...
  bool enabled = true;
  bool is_default = false;
  std::string end_of_life;  // RFC 3339

  std::string id() const;  // "openshift-v4.20.8", "openshift-v4.20.8-fast"
};

// One minor as the document describes it. A channel group holds every z-stream from 0 up to its
// highest; where a minor has them, stable's highest <= fast's <= candidate's (a release enters
// candidate, then fast, then stable).
struct CatalogueMinor {
  std::string minor;  // "4.20"
  int major_number = 0;
  int minor_number = 0;
  std::string end_of_life;                                  // RFC 3339
  std::vector<std::pair<std::string, int>> channel_groups;  // group, highest z; in document order
  std::vector<int> disabled;
  // z-streams >= this of the minor listed before may move to every z-stream of this one.
  std::optional<int> from_previous_minor_min_z;

  // The highest z-stream of `group`; -1 when the minor is not in it.
  int HighestIn(std::string_view group) const;
  // The highest z-stream of any group.
  int Highest() const;
  bool Enabled(int z) const;
};

// A release to publish: a new z-stream (the next of an existing minor), a new minor's X.Y.0 (the
// minor after the last one), or an existing release entering more channel groups.
struct Release {
  std::string version;                           // "4.20.16"
  std::vector<std::string> channel_groups;       // of candidate, fast, stable
  std::optional<int> from_previous_minor_min_z;  // a new minor's edge rule
  std::string end_of_life;                       // a new minor's; empty: 183 days after the last one's

  // {"version", "channel_groups", "from_previous_minor": {"min_z"}, "end_of_life"}; InvalidArgument
  // naming what is wrong.
  static Result<Release> FromJson(const json::object& body);
  json::object ToJson() const;
};

// The compiled-in versions.json.
std::string_view BuiltInVersionsJson();

// Immutable once built; thread-safe.
class VersionCatalogue {
 public:
  // InvalidArgument naming what is wrong with the document.
  static Result<VersionCatalogue> Parse(std::string_view json_text);
  // Reads and parses a file; IoError when it cannot be read.
  static Result<VersionCatalogue> Load(const std::string& path);
  // The compiled-in catalogue.
  static const VersionCatalogue& BuiltIn();

  // Ordered by minor, z-stream, then channel group as the document lists them.
  const std::vector<CatalogueVersion>& versions() const { return versions_; }
  // In ascending order.
  const std::vector<CatalogueMinor>& minors() const { return minors_; }
  const CatalogueVersion& default_version() const { return versions_[default_index_]; }
  // By ID ("openshift-v4.20.8-fast"); nullptr when unknown.
  const CatalogueVersion* Find(std::string_view id) const;

  // Why a cluster or node pool cannot use version `id` ("4.20", "4.20.8", "openshift-v4.20.8",
  // "openshift-v4.20.8-fast") in `channel_group` ("" = the group the ID names, stable for a bare
  // one); nullopt when it can: an enabled version of the catalogue in that group, or for "X.Y" an
  // enabled z-stream of that minor in that group.
  std::optional<std::string> Refusal(std::string_view id, std::string_view channel_group) const;

  // Upgrade edges, between raw IDs ("4.20.8"). The document's rules give an edge from every z-stream
  // of a minor to each later one of that minor, and from each z-stream >= from_previous_minor.min_z
  // of the minor listed before to every z-stream of the minor with the rule. An edge exists when a
  // rule gives it, `to_raw` is enabled (`from_raw` may be disabled: a cluster can leave it) and it
  // is not withdrawn.
  bool HasEdge(std::string_view from_raw, std::string_view to_raw) const;
  // The enabled raw IDs of `channel_group` one edge away from `raw`, ascending.
  std::vector<std::string> UpgradesFrom(std::string_view raw, std::string_view channel_group) const;
  // The newest enabled z-stream of `minor` ("4.21") in `channel_group` ("4.21.3"); nullopt when none.
  std::optional<std::string> Tip(std::string_view minor, std::string_view channel_group) const;
  // The update channels ("stable-4.21") an enabled release is in, sorted: for each group it is in,
  // that group of its own minor, and that group of the next minor when a rule gives it an edge to
  // an enabled release of the next minor in the group. Empty for a disabled or unknown release.
  std::vector<std::string> ChannelsOf(std::string_view raw) const;
  // The OCM Version object, with available_upgrades (UpgradesFrom in its channel group).
  json::object ToOcm(const CatalogueVersion& version) const;

  // This catalogue with `release` published; InvalidArgument with the reason when it cannot be.
  Result<VersionCatalogue> WithRelease(const Release& release) const;
  // This catalogue with the edge withdrawn (or restored); InvalidArgument when no rule gives it.
  Result<VersionCatalogue> WithEdgeWithdrawn(std::string_view from_raw, std::string_view to_raw,
                                             bool withdrawn) const;
  // (from, to) raw IDs, sorted.
  const std::set<std::pair<std::string, std::string>>& withdrawn_edges() const { return withdrawn_; }

 private:
  // versions_ and the default from minors_; InvalidArgument when they break a rule.
  Status Build();
  // The minor of a raw ID and its z-stream when the catalogue has that release; nullptr otherwise.
  const CatalogueMinor* Locate(std::string_view raw, int* z) const;
  // Whether a rule gives the edge (neither enabled nor withdrawn count).
  bool RuleGivesEdge(std::string_view from_raw, std::string_view to_raw) const;

  std::vector<CatalogueMinor> minors_;
  std::vector<CatalogueVersion> versions_;
  std::string default_raw_, default_group_;
  size_t default_index_ = 0;
  std::set<std::pair<std::string, std::string>> withdrawn_;
};

}  // namespace hcprp::simulator
