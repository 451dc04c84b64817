#include "simulator/update_service.h"

#include <openssl/evp.h>

#include <algorithm>

namespace hcprp::simulator {
namespace {

constexpr std::string_view kReleasesKey = "releases";
constexpr std::string_view kWithdrawnKey = "withdrawn_edges";
constexpr std::string_view kChannelsKey = "io.openshift.upgrades.graph.release.channels";
constexpr std::string_view kManifestRefKey = "io.openshift.upgrades.graph.release.manifestref";

// The hex SHA-256 of a raw version: the digest of its simulated release image.
std::string ReleaseDigest(std::string_view raw) {
  const std::string input = "ocp-release:" + std::string(raw);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

std::string ReleasesDocument(const std::vector<Release>& releases) {
  json::array items;
  for (const auto& r : releases) items.emplace_back(r.ToJson());
  return ToJson(json::object{{"releases", std::move(items)}});
}

json::array EdgesJson(const VersionCatalogue& catalogue) {
  json::array edges;
  for (const auto& [from, to] : catalogue.withdrawn_edges()) {
    edges.emplace_back(json::object{{"from", from}, {"to", to}});
  }
  return edges;
}

// `releases` with `release` merged in: its groups join those of an earlier publication of the version.
std::vector<Release> Merged(std::vector<Release> releases, const Release& release) {
  for (auto& r : releases) {
    if (r.version != release.version) continue;
    for (const auto& g : release.channel_groups) {
      if (std::find(r.channel_groups.begin(), r.channel_groups.end(), g) == r.channel_groups.end()) {
        r.channel_groups.push_back(g);
      }
    }
    return releases;
  }
  releases.push_back(release);
  return releases;
}

Result<json::array> DocumentArray(const UpdateDocuments& documents, std::string_view key,
                                  std::string_view member) {
  for (const auto& [k, doc] : documents) {
    if (k != key) continue;
    auto v = ParseJson(doc);
    const json::array* items = v.ok() && v->is_object() ? GetArray(v->as_object(), member) : nullptr;
    if (!items) return Error::Corruption("update service: unreadable document '" + std::string(key) + "'");
    return *items;
  }
  return json::array{};
}

void Warn(const Logger* logger, std::string_view what, const Error& error) {
  if (logger) logger->Warn(std::string(what), {{"reason", error.message()}});
}

}  // namespace

std::optional<std::pair<std::string, std::string>> ParseChannel(std::string_view channel) {
  auto dash = channel.find('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  std::string_view minor = channel.substr(dash + 1);
  auto dot = minor.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos || !digits(minor.substr(0, dot)) || !digits(minor.substr(dot + 1))) {
    return std::nullopt;
  }
  return std::pair{std::string(channel.substr(0, dash)), std::string(minor)};
}

std::string ReleasePayload(std::string_view raw) {
  return "quay.io/openshift-release-dev/ocp-release@sha256:" + ReleaseDigest(raw);
}

json::object CincinnatiGraph(const VersionCatalogue& catalogue, std::string_view channel) {
  std::vector<std::string> nodes;
  json::array node_items;
  const auto& minors = catalogue.minors();
  auto parsed = ParseChannel(channel);
  auto it = std::find_if(minors.begin(), minors.end(),
                         [&](const CatalogueMinor& m) { return parsed && m.minor == parsed->second; });
  // Only the channel's minor and the one before it have releases in the channel.
  for (auto m = it == minors.begin() ? it : it - 1; it != minors.end() && m <= it; ++m) {
    for (int z = 0; z <= m->Highest(); ++z) {
      std::string raw = m->minor + "." + std::to_string(z);
      std::vector<std::string> channels = catalogue.ChannelsOf(raw);
      if (std::find(channels.begin(), channels.end(), channel) == channels.end()) continue;
      node_items.emplace_back(
          json::object{{"version", raw},
                       {"payload", ReleasePayload(raw)},
                       {"metadata", json::object{{kChannelsKey, Join(channels, ",")},
                                                 {kManifestRefKey, "sha256:" + ReleaseDigest(raw)}}}});
      nodes.push_back(std::move(raw));
    }
  }
  json::array edges;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (catalogue.HasEdge(nodes[i], nodes[j])) {
        edges.emplace_back(json::array{static_cast<int64_t>(i), static_cast<int64_t>(j)});
      }
    }
  }
  return json::object{
      {"nodes", std::move(node_items)}, {"edges", std::move(edges)}, {"conditionalEdges", json::array{}}};
}

UpdateService::UpdateService(std::shared_ptr<const VersionCatalogue> catalogue, std::vector<Release> releases)
    : catalogue_(std::move(catalogue)), releases_(std::move(releases)) {}

Result<std::unique_ptr<UpdateService>> UpdateService::Open(const VersionCatalogue& base,
                                                           const UpdateDocuments& documents,
                                                           const Logger* logger) {
  HCPRP_ASSIGN_OR_RETURN(auto releases, DocumentArray(documents, kReleasesKey, "releases"));
  HCPRP_ASSIGN_OR_RETURN(auto edges, DocumentArray(documents, kWithdrawnKey, "edges"));
  VersionCatalogue catalogue = base;
  std::vector<Release> published;
  for (const auto& item : releases) {
    auto release = item.is_object() ? Release::FromJson(item.as_object())
                                    : Result<Release>(Error::InvalidArgument("not an object"));
    if (!release.ok()) return Error::Corruption("update service: " + release.error().message());
    auto next = catalogue.WithRelease(*release);
    if (!next.ok()) {
      Warn(logger, "a published release no longer fits the version catalogue: skipped", next.error());
      continue;
    }
    catalogue = std::move(next).value();
    published.push_back(std::move(release).value());
  }
  for (const auto& item : edges) {
    const json::object* e = item.if_object();
    auto from = e ? GetString(*e, "from") : std::nullopt;
    auto to = e ? GetString(*e, "to") : std::nullopt;
    if (!from || !to) return Error::Corruption("update service: unreadable withdrawn edge");
    auto next = catalogue.WithEdgeWithdrawn(*from, *to, true);
    if (!next.ok()) {
      Warn(logger, "a withdrawn edge no longer fits the version catalogue: skipped", next.error());
      continue;
    }
    catalogue = std::move(next).value();
  }
  return std::unique_ptr<UpdateService>(new UpdateService(
      std::make_shared<const VersionCatalogue>(std::move(catalogue)), std::move(published)));
}

std::shared_ptr<const VersionCatalogue> UpdateService::catalogue() const {
  MutexLock lock(mu_);
  return catalogue_;
}

bool UpdateService::HasEdge(std::string_view from_raw, std::string_view to_raw) const {
  return catalogue()->HasEdge(from_raw, to_raw);
}

std::vector<std::string> UpdateService::UpgradesFrom(std::string_view raw,
                                                     std::string_view channel_group) const {
  return catalogue()->UpgradesFrom(raw, channel_group);
}

std::optional<std::string> UpdateService::Tip(std::string_view minor, std::string_view channel_group) const {
  return catalogue()->Tip(minor, channel_group);
}

json::object UpdateService::PublishedJson() const {
  MutexLock lock(mu_);
  json::array releases;
  for (const auto& r : releases_) releases.emplace_back(r.ToJson());
  return json::object{{"releases", std::move(releases)}, {"withdrawn_edges", EdgesJson(*catalogue_)}};
}

Result<UpdateChange> UpdateService::PlanPublish(const Release& release) const {
  std::shared_ptr<const VersionCatalogue> current;
  std::vector<Release> releases;
  {
    MutexLock lock(mu_);
    current = catalogue_;
    releases = releases_;
  }
  HCPRP_ASSIGN_OR_RETURN(auto next, current->WithRelease(release));
  UpdateChange change;
  for (const auto& v : next.versions()) {
    if (v.raw_id == release.version && !current->Find(v.id())) change.new_version_ids.push_back(v.id());
  }
  change.changed = !change.new_version_ids.empty();
  change.releases = change.changed ? Merged(std::move(releases), release) : std::move(releases);
  if (change.changed) change.documents.emplace_back(kReleasesKey, ReleasesDocument(change.releases));
  change.catalogue = std::make_shared<const VersionCatalogue>(std::move(next));
  return change;
}

Result<UpdateChange> UpdateService::PlanEdge(std::string_view from_raw, std::string_view to_raw,
                                             bool withdrawn) const {
  std::shared_ptr<const VersionCatalogue> current;
  UpdateChange change;
  {
    MutexLock lock(mu_);
    current = catalogue_;
    change.releases = releases_;
  }
  HCPRP_ASSIGN_OR_RETURN(auto next, current->WithEdgeWithdrawn(from_raw, to_raw, withdrawn));
  change.changed = next.withdrawn_edges() != current->withdrawn_edges();
  if (change.changed) {
    change.documents.emplace_back(kWithdrawnKey, ToJson(json::object{{"edges", EdgesJson(next)}}));
  }
  change.catalogue = std::make_shared<const VersionCatalogue>(std::move(next));
  return change;
}

void UpdateService::Apply(UpdateChange change) {
  MutexLock lock(mu_);
  catalogue_ = std::move(change.catalogue);
  releases_ = std::move(change.releases);
}

}  // namespace hcprp::simulator
