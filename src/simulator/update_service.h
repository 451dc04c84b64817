// The simulator's OpenShift update service: the version catalogue as it is now (the one it started
// from, plus the releases published and the edges withdrawn since), and the Cincinnati graph that
// /api/upgrades_info/graph serves from it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "simulator/versions.h"

namespace hcprp::simulator {

// What an update service persists: (key, JSON document) pairs.
using UpdateDocuments = std::vector<std::pair<std::string, std::string>>;

// "stable-4.21" -> {"stable", "4.21"}; nullopt when a channel is not <group>-<major>.<minor>.
std::optional<std::pair<std::string, std::string>> ParseChannel(std::string_view channel);

// The release image of a raw version: "quay.io/openshift-release-dev/ocp-release@sha256:<64 hex>",
// the digest derived from the version alone.
std::string ReleasePayload(std::string_view raw);

// The graph of `channel` ("stable-4.21") in the published Cincinnati form: {"nodes": [{"version",
// "payload", "metadata": {"io.openshift.upgrades.graph.release.channels",
// "io.openshift.upgrades.graph.release.manifestref"}}], "edges": [[from, to]], "conditionalEdges": []}.
// A node is an enabled release whose channels (VersionCatalogue::ChannelsOf) include `channel`, in
// ascending order; an edge is every HasEdge between two nodes. Empty for an unknown channel.
json::object CincinnatiGraph(const VersionCatalogue& catalogue, std::string_view channel);

// A change to the update service, planned but not made (UpdateService::Plan*, then Apply once the
// documents are persisted).
struct UpdateChange {
  std::shared_ptr<const VersionCatalogue> catalogue;  // after the change
  std::vector<Release> releases;                      // published, after the change
  UpdateDocuments documents;                          // what to persist, by key
  std::vector<std::string> new_version_ids;           // Version IDs the change adds
  bool changed = false;                               // false: the change changes nothing
};

// Thread-safe. Readers see a consistent catalogue at every moment. Writers (Plan* then Apply) must be
// serialised by the caller.
class UpdateService {
 public:
  // Starts from `base` and replays what `documents` (as UpdateChange::documents wrote them) hold.
  // A release or withdrawn edge that `base` no longer admits is skipped with a warning through
  // `logger` (may be null); Corruption when a document cannot be read.
  static Result<std::unique_ptr<UpdateService>> Open(const VersionCatalogue& base,
                                                     const UpdateDocuments& documents, const Logger* logger);

  // The catalogue now; never null. It stays valid and unchanged while held.
  std::shared_ptr<const VersionCatalogue> catalogue() const;
  // The catalogue's queries on the catalogue now (see versions.h).
  bool HasEdge(std::string_view from_raw, std::string_view to_raw) const;
  std::vector<std::string> UpgradesFrom(std::string_view raw, std::string_view channel_group) const;
  std::optional<std::string> Tip(std::string_view minor, std::string_view channel_group) const;
  // The releases published since the start (one entry per version, its groups merged) and the
  // withdrawn edges: {"releases": [Release::ToJson()], "withdrawn_edges": [{"from", "to"}]}.
  json::object PublishedJson() const;

  // Publishing `release`; InvalidArgument with the reason when the catalogue refuses it.
  Result<UpdateChange> PlanPublish(const Release& release) const;
  // Withdrawing (or restoring) an edge; InvalidArgument when no rule gives it.
  Result<UpdateChange> PlanEdge(std::string_view from_raw, std::string_view to_raw, bool withdrawn) const;
  void Apply(UpdateChange change);

 private:
  UpdateService(std::shared_ptr<const VersionCatalogue> catalogue, std::vector<Release> releases);

  mutable Mutex mu_;
  std::shared_ptr<const VersionCatalogue> catalogue_ HCPRP_GUARDED_BY(mu_);
  std::vector<Release> releases_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::simulator
