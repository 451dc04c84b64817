#include "backend/version_plan.h"

#include <algorithm>
#include <map>

#include "clusterservice/update_graph.h"

namespace hcprp::backend {

namespace {

// The newer of two raw versions; `a` when neither is newer (or `b` is not a version).
const std::string& NewerOf(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return clusterservice::NewerThan(b, a) ? b : a;
}

}  // namespace

VersionsKey KeyOf(const ClusterVersionState& c) {
  return VersionsKey{c.channel_group, c.stored_desired, c.service_desired};
}

std::string DecidingChannel(const ClusterVersionState& c) {
  const std::string& base = NewerOf(c.stored_desired, c.service_desired);
  if (clusterservice::MinorOf(base).empty()) return {};
  return clusterservice::ChannelOf(c.channel_group, base);
}

std::string DesiredVersionOf(const ClusterVersionState& c, const ChannelPicks& picks) {
  const std::string& base = NewerOf(c.stored_desired, c.service_desired);
  auto pick = picks.find(DecidingChannel(c));
  if (pick == picks.end() || !pick->second) return base;
  return NewerOf(base, *pick->second);
}

std::vector<DesiredWrite> PlanDesiredWrites(const std::vector<ClusterVersionState>& clusters,
                                            const ChannelPicks& picks) {
  // What a cluster gets depends only on its VersionsKey, which most clusters share: each is decided
  // once (a decision parses versions several times; 10,000 clusters took 20 ms deciding each).
  struct Decision {
    std::optional<std::string> to;  // nullopt: nothing to write
    bool raises = false;
  };
  std::map<VersionsKey, Decision> decided;
  std::vector<DesiredWrite> writes;
  for (const ClusterVersionState& c : clusters) {
    auto [it, fresh] = decided.try_emplace(KeyOf(c));
    Decision& d = it->second;
    if (fresh) {
      std::string to = DesiredVersionOf(c, picks);
      if (!to.empty() && !clusterservice::MinorOf(to).empty() &&
          (c.stored_desired.empty() || clusterservice::NewerThan(to, c.stored_desired))) {
        d.raises = clusterservice::NewerThan(to, c.service_desired);
        d.to = std::move(to);
      }
    }
    if (!d.to) continue;
    writes.push_back(
        DesiredWrite{c.href, c.partition_key, c.channel_group, c.stored_desired, *d.to, c.etag, d.raises});
  }
  std::sort(writes.begin(), writes.end(), [](const DesiredWrite& a, const DesiredWrite& b) {
    return a.partition_key != b.partition_key ? a.partition_key < b.partition_key : a.href < b.href;
  });
  return writes;
}

std::vector<std::span<const DesiredWrite>> BatchesOf(const std::vector<DesiredWrite>& writes,
                                                     size_t max_batch) {
  max_batch = std::max<size_t>(max_batch, 1);
  std::vector<std::span<const DesiredWrite>> batches;
  size_t begin = 0;
  for (size_t i = 1; i <= writes.size(); ++i) {
    if (i == writes.size() || i - begin == max_batch ||
        writes[i].partition_key != writes[begin].partition_key) {
      batches.emplace_back(writes.data() + begin, i - begin);
      begin = i;
    }
  }
  return batches;
}

std::vector<const ClusterVersionState*> PlanTriggers(const std::vector<ClusterVersionState>& clusters) {
  std::vector<const ClusterVersionState*> triggers;
  for (const ClusterVersionState& c : clusters) {
    if (clusterservice::NewerThan(c.stored_desired, c.service_desired)) triggers.push_back(&c);
  }
  return triggers;
}

}  // namespace hcprp::backend
