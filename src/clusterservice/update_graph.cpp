#include "clusterservice/update_graph.h"

#include <algorithm>

#include "api/rules_common.h"

namespace hcprp::clusterservice {

namespace {

constexpr std::string_view kIdPrefix = "openshift-v";
constexpr std::string_view kStable = "stable";

std::optional<api::rules::Semver> Parse(std::string_view v) {
  return api::rules::ParseSemverTolerant(v).version;
}

}  // namespace

std::string MinorOf(std::string_view version) {
  auto v = Parse(version);
  if (!v) return {};
  return std::to_string(v->major) + "." + std::to_string(v->minor);
}

std::string ChannelOf(std::string_view channel_group, std::string_view version) {
  return std::string(channel_group.empty() ? kStable : channel_group) + "-" + MinorOf(version);
}

std::string GraphPath(std::string_view channel) {
  return "/api/upgrades_info/graph?channel=" + std::string(channel);
}

std::string VersionIdOf(std::string_view raw, std::string_view channel_group) {
  std::string id = std::string(kIdPrefix) + std::string(raw);
  if (!channel_group.empty() && channel_group != kStable) id += "-" + std::string(channel_group);
  return id;
}

std::string RawVersionOf(std::string_view version_id) {
  if (version_id.substr(0, kIdPrefix.size()) != kIdPrefix) return std::string(version_id);
  std::string_view rest = version_id.substr(kIdPrefix.size());
  // A channel group suffix follows the patch number; a prerelease ("4.21.0-rc.1") keeps its dot.
  if (size_t dash = rest.rfind('-'); dash != std::string_view::npos) {
    std::string_view suffix = rest.substr(dash + 1);
    const bool group = !suffix.empty() &&
                       std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (group) rest = rest.substr(0, dash);
  }
  return std::string(rest);
}

bool NewerThan(std::string_view a, std::string_view b) {
  auto va = Parse(a);
  auto vb = Parse(b);
  return va && vb && api::rules::Compare(*va, *vb) > 0;
}

std::vector<std::string> ReleasesOfMinor(const json::object& graph, std::string_view minor) {
  std::vector<std::pair<api::rules::Semver, std::string>> found;
  if (const json::array* nodes = GetArray(graph, "nodes")) {
    for (const json::value& n : *nodes) {
      const json::object* node = n.if_object();
      auto version = node != nullptr ? GetString(*node, "version") : std::nullopt;
      if (!version || MinorOf(*version) != minor) continue;
      if (auto v = Parse(*version)) found.emplace_back(*v, std::string(*version));
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return api::rules::Compare(a.first, b.first) > 0; });
  std::vector<std::string> out;
  for (auto& [v, text] : found) {
    if (out.empty() || out.back() != text) out.push_back(std::move(text));
  }
  return out;
}

Result<std::string> SelectDesiredVersion(const json::object& graph, std::string_view minor,
                                         std::string_view channel_group, std::string_view source) {
  const size_t offset = channel_group.empty() || channel_group == kStable ? 1 : 0;
  std::vector<std::string> releases = ReleasesOfMinor(graph, minor);
  if (releases.empty()) return Error::InvalidArgument("no releases found in " + std::string(source));
  if (releases.size() <= offset) {
    return Error::InvalidArgument(std::to_string(releases.size()) + " releases found in " +
                                  std::string(source) + ", which is not enough for the requested " +
                                  std::to_string(offset) + " offset");
  }
  return releases[offset];
}

}  // namespace hcprp::clusterservice
