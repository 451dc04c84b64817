#include "simulator/versions.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/time.h"

namespace hcprp::simulator {
namespace {

constexpr std::string_view kPrefix = "openshift-v";
constexpr std::string_view kStable = "stable";
constexpr std::string_view kFast = "fast";
constexpr std::string_view kCandidate = "candidate";
constexpr int kMaxZ = 1000;
// A published minor without an end of life reaches it this long after the minor before it.
constexpr auto kDefaultMinorLifetime = std::chrono::hours(24 * 183);

// A number as the catalogue writes it: decimal digits without a leading zero.
std::optional<int> ParseNumber(std::string_view s) {
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "4.20" -> {4, 20}.
std::optional<std::pair<int, int>> ParseMinor(std::string_view s) {
  auto dot = s.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major = ParseNumber(s.substr(0, dot));
  auto minor = ParseNumber(s.substr(dot + 1));
  if (!major || !minor) return std::nullopt;
  return std::pair{*major, *minor};
}

bool IsMinor(std::string_view s) { return ParseMinor(s).has_value(); }

// "4.20.8" -> {"4.20", 8}.
std::optional<std::pair<std::string_view, int>> ParseRaw(std::string_view s) {
  auto dot = s.rfind('.');
  if (dot == std::string_view::npos || !IsMinor(s.substr(0, dot))) return std::nullopt;
  auto z = ParseNumber(s.substr(dot + 1));
  if (!z) return std::nullopt;
  return std::pair{s.substr(0, dot), *z};
}

std::string RawId(const CatalogueMinor& m, int z) { return m.minor + "." + std::to_string(z); }

bool IsOrderedGroup(std::string_view g) { return g == kCandidate || g == kFast || g == kStable; }

Result<CatalogueMinor> ParseMinorEntry(const json::value& mv) {
  if (!mv.is_object()) return Error::InvalidArgument("version catalogue: every minor must be an object");
  const json::object& m = mv.as_object();
  CatalogueMinor out;
  out.minor = std::string(GetString(m, "minor").value_or(""));
  auto numbers = ParseMinor(out.minor);
  if (!numbers) return Error::InvalidArgument("version catalogue: bad minor '" + out.minor + "'");
  out.major_number = numbers->first;
  out.minor_number = numbers->second;
  out.end_of_life = std::string(GetString(m, "end_of_life").value_or(""));
  if (!ParseRfc3339(out.end_of_life).ok()) {
    std::string message = "version catalogue: minor " + out.minor;
    message.append(" needs an RFC 3339 end_of_life, not '").append(out.end_of_life).append("'");
    return Error::InvalidArgument(message);
  }
  const json::object* groups = hcprp::GetObject(m, "channel_groups");
  if (!groups || groups->empty()) {
    return Error::InvalidArgument("version catalogue: minor " + out.minor + " has no channel_groups");
  }
  for (const auto& [g, v] : *groups) {
    if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() > kMaxZ) {
      return Error::InvalidArgument("version catalogue: minor " + out.minor + " channel group " +
                                    std::string(g) + " needs the highest z-stream number");
    }
    out.channel_groups.emplace_back(std::string(g), static_cast<int>(v.as_int64()));
  }
  if (const json::array* d = GetArray(m, "disabled")) {
    for (const auto& z : *d) {
      if (!z.is_int64())
        return Error::InvalidArgument("version catalogue: 'disabled' lists z-stream numbers");
      out.disabled.push_back(static_cast<int>(z.as_int64()));
    }
  }
  if (const json::object* rule = hcprp::GetObject(m, "from_previous_minor")) {
    auto min_z = GetInt(*rule, "min_z");
    if (!min_z || *min_z < 0) {
      return Error::InvalidArgument("version catalogue: minor " + out.minor +
                                    " from_previous_minor needs min_z, a z-stream number");
    }
    out.from_previous_minor_min_z = static_cast<int>(*min_z);
  }
  return out;
}

// Why the minor's channel groups break "candidate before fast before stable"; nullopt when they do not.
std::optional<std::string> GroupOrderProblem(const CatalogueMinor& m) {
  const int stable = m.HighestIn(kStable), fast = m.HighestIn(kFast), candidate = m.HighestIn(kCandidate);
  const bool ok = (fast < 0 || stable <= fast) && (candidate < 0 || stable <= candidate) &&
                  (candidate < 0 || fast <= candidate);
  if (ok) return std::nullopt;
  return "minor " + m.minor + ": a release enters candidate before fast and fast before stable";
}

}  // namespace

std::string CatalogueVersion::id() const {
  std::string out = std::string(kPrefix) + raw_id;
  if (channel_group != kStable) out += "-" + channel_group;
  return out;
}

int CatalogueMinor::HighestIn(std::string_view group) const {
  for (const auto& [g, top] : channel_groups) {
    if (g == group) return top;
  }
  return -1;
}

int CatalogueMinor::Highest() const {
  int top = -1;
  for (const auto& [g, t] : channel_groups) top = std::max(top, t);
  return top;
}

bool CatalogueMinor::Enabled(int z) const {
  return std::find(disabled.begin(), disabled.end(), z) == disabled.end();
}

Result<Release> Release::FromJson(const json::object& body) {
  Release r;
  r.version = std::string(GetString(body, "version").value_or(""));
  if (!ParseRaw(r.version)) return Error::InvalidArgument("version must be a release number X.Y.Z");
  const json::array* groups = GetArray(body, "channel_groups");
  if (!groups || groups->empty()) {
    return Error::InvalidArgument("channel_groups must list candidate, fast or stable");
  }
  for (const auto& g : *groups) {
    if (!g.is_string() || !IsOrderedGroup(g.as_string())) {
      return Error::InvalidArgument("channel_groups must list candidate, fast or stable");
    }
    std::string group(g.as_string());
    if (std::find(r.channel_groups.begin(), r.channel_groups.end(), group) == r.channel_groups.end()) {
      r.channel_groups.push_back(std::move(group));
    }
  }
  if (const auto* rule = body.if_contains("from_previous_minor")) {
    const json::object* o = rule->if_object();
    auto min_z = o ? GetInt(*o, "min_z") : std::nullopt;
    if (!min_z || *min_z < 0 || *min_z > kMaxZ) {
      return Error::InvalidArgument("from_previous_minor must be {\"min_z\": N}, N a z-stream number");
    }
    r.from_previous_minor_min_z = static_cast<int>(*min_z);
  }
  if (const auto* eol = body.if_contains("end_of_life")) {
    if (!eol->is_string() || !ParseRfc3339(eol->as_string()).ok()) {
      return Error::InvalidArgument("end_of_life must be an RFC 3339 time");
    }
    r.end_of_life = std::string(eol->as_string());
  }
  return r;
}

json::object Release::ToJson() const {
  json::object out{{"version", version},
                   {"channel_groups", json::array(channel_groups.begin(), channel_groups.end())}};
  if (from_previous_minor_min_z) {
    out["from_previous_minor"] = json::object{{"min_z", *from_previous_minor_min_z}};
  }
  if (!end_of_life.empty()) out["end_of_life"] = end_of_life;
  return out;
}

Result<VersionCatalogue> VersionCatalogue::Parse(std::string_view json_text) {
  auto doc = ParseJson(json_text);
  if (!doc.ok()) return Error::InvalidArgument("version catalogue: " + doc.error().message());
  if (!doc->is_object()) return Error::InvalidArgument("version catalogue: not a JSON object");
  const json::object& root = doc->as_object();
  const json::array* minors = GetArray(root, "minors");
  if (!minors || minors->empty())
    return Error::InvalidArgument("version catalogue: 'minors' must list minors");
  VersionCatalogue cat;
  for (const auto& mv : *minors) {
    HCPRP_ASSIGN_OR_RETURN(auto minor, ParseMinorEntry(mv));
    cat.minors_.push_back(std::move(minor));
  }
  const json::object* def = hcprp::GetObject(root, "default");
  cat.default_raw_ = std::string(def ? GetString(*def, "version").value_or("") : "");
  cat.default_group_ = std::string(def ? GetString(*def, "channel_group").value_or(kStable) : kStable);
  HCPRP_RETURN_IF_ERROR(cat.Build());
  return cat;
}

Status VersionCatalogue::Build() {
  versions_.clear();
  for (size_t i = 0; i < minors_.size(); ++i) {
    const CatalogueMinor& m = minors_[i];
    if (i > 0 && std::pair{minors_[i - 1].major_number, minors_[i - 1].minor_number} >=
                     std::pair{m.major_number, m.minor_number}) {
      return Error::InvalidArgument("version catalogue: minors must be listed in ascending order (" +
                                    minors_[i - 1].minor + " before " + m.minor + ")");
    }
    if (i == 0 && m.from_previous_minor_min_z) {
      return Error::InvalidArgument("version catalogue: minor " + m.minor +
                                    " has no previous minor for from_previous_minor");
    }
    if (auto problem = GroupOrderProblem(m)) return Error::InvalidArgument("version catalogue: " + *problem);
    for (int z = 0; z <= m.Highest(); ++z) {
      for (const auto& [g, top] : m.channel_groups) {
        if (z > top) continue;
        CatalogueVersion cv;
        cv.minor = m.minor;
        cv.z = z;
        cv.raw_id = RawId(m, z);
        cv.channel_group = g;
        cv.enabled = m.Enabled(z);
        cv.end_of_life = m.end_of_life;
        versions_.push_back(std::move(cv));
      }
    }
  }
  bool found = false;
  for (size_t i = 0; i < versions_.size(); ++i) {
    auto& v = versions_[i];
    if (v.raw_id == default_raw_ && v.channel_group == default_group_) {
      if (!v.enabled) return Error::InvalidArgument("version catalogue: the default version is disabled");
      v.is_default = true;
      default_index_ = i;
      found = true;
    }
  }
  if (!found) {
    return Error::InvalidArgument("version catalogue: default {version: '" + default_raw_ +
                                  "', channel_group: '" + default_group_ + "'} is not in the catalogue");
  }
  return Status::Ok();
}

Result<VersionCatalogue> VersionCatalogue::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::IoError("cannot read version catalogue " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto cat = Parse(ss.str());
  if (!cat.ok()) return Error::InvalidArgument(path + ": " + cat.error().message());
  return cat;
}

const VersionCatalogue& VersionCatalogue::BuiltIn() {
  static const VersionCatalogue kBuiltIn = [] {
    auto c = Parse(BuiltInVersionsJson());
    if (!c.ok()) std::abort();  // versions_test checks the compiled-in document
    return std::move(c).value();
  }();
  return kBuiltIn;
}

const CatalogueVersion* VersionCatalogue::Find(std::string_view id) const {
  for (const auto& v : versions_) {
    if (v.id() == id) return &v;
  }
  return nullptr;
}

std::optional<std::string> VersionCatalogue::Refusal(std::string_view id,
                                                     std::string_view channel_group) const {
  const std::string given(id);
  std::string_view rest = id;
  if (rest.rfind(kPrefix, 0) == 0) rest.remove_prefix(kPrefix.size());
  // A group suffix ("4.20.8-fast") names the group too.
  std::string_view named_group;
  if (auto dash = rest.find('-'); dash != std::string_view::npos) {
    named_group = rest.substr(dash + 1);
    rest = rest.substr(0, dash);
  }
  std::string_view group = channel_group;
  if (!named_group.empty()) {
    if (!group.empty() && group != named_group) {
      return "version '" + given + "' belongs to channel group '" + std::string(named_group) + "', not '" +
             std::string(group) + "'";
    }
    group = named_group;
  }
  if (group.empty()) group = kStable;
  const bool minor_only = IsMinor(rest);
  bool known = false, in_group = false;
  for (const auto& v : versions_) {
    if (!(minor_only ? v.minor == rest : v.raw_id == rest)) continue;
    known = true;
    if (v.channel_group != group) continue;
    in_group = true;
    if (v.enabled) return std::nullopt;
  }
  if (!known) return "version '" + given + "' is not supported";
  if (!in_group) {
    return "version '" + given + "' is not available in channel group '" + std::string(group) + "'";
  }
  return "version '" + given + "' is disabled";
}

const CatalogueMinor* VersionCatalogue::Locate(std::string_view raw, int* z) const {
  auto parsed = ParseRaw(raw);
  if (!parsed) return nullptr;
  for (const auto& m : minors_) {
    if (m.minor != parsed->first) continue;
    if (parsed->second > m.Highest()) return nullptr;
    *z = parsed->second;
    return &m;
  }
  return nullptr;
}

bool VersionCatalogue::RuleGivesEdge(std::string_view from_raw, std::string_view to_raw) const {
  int from_z = 0, to_z = 0;
  const CatalogueMinor* from = Locate(from_raw, &from_z);
  const CatalogueMinor* to = Locate(to_raw, &to_z);
  if (!from || !to) return false;
  if (from == to) return from_z < to_z;
  return to == from + 1 && to->from_previous_minor_min_z && from_z >= *to->from_previous_minor_min_z;
}

bool VersionCatalogue::HasEdge(std::string_view from_raw, std::string_view to_raw) const {
  if (!RuleGivesEdge(from_raw, to_raw)) return false;
  int to_z = 0;
  if (!Locate(to_raw, &to_z)->Enabled(to_z)) return false;
  return !withdrawn_.count({std::string(from_raw), std::string(to_raw)});
}

std::vector<std::string> VersionCatalogue::UpgradesFrom(std::string_view raw,
                                                        std::string_view channel_group) const {
  std::vector<std::string> out;
  int z = 0;
  const CatalogueMinor* from = Locate(raw, &z);
  if (!from) return out;
  const CatalogueMinor* end = minors_.data() + minors_.size();
  for (const CatalogueMinor* m = from; m != end && m <= from + 1; ++m) {
    for (int to = 0; to <= m->HighestIn(channel_group); ++to) {
      std::string to_raw = RawId(*m, to);
      if (HasEdge(raw, to_raw)) out.push_back(std::move(to_raw));
    }
  }
  return out;
}

std::optional<std::string> VersionCatalogue::Tip(std::string_view minor,
                                                 std::string_view channel_group) const {
  for (const auto& m : minors_) {
    if (m.minor != minor) continue;
    for (int z = m.HighestIn(channel_group); z >= 0; --z) {
      if (m.Enabled(z)) return RawId(m, z);
    }
  }
  return std::nullopt;
}

std::vector<std::string> VersionCatalogue::ChannelsOf(std::string_view raw) const {
  std::vector<std::string> out;
  int z = 0;
  const CatalogueMinor* m = Locate(raw, &z);
  if (!m || !m->Enabled(z)) return out;
  const CatalogueMinor* next = m + 1 == minors_.data() + minors_.size() ? nullptr : m + 1;
  for (const auto& [g, top] : m->channel_groups) {
    if (z > top) continue;
    out.push_back(g + "-" + m->minor);
    if (!next) continue;
    for (int to = 0; to <= next->HighestIn(g); ++to) {
      if (next->Enabled(to) && RuleGivesEdge(raw, RawId(*next, to))) {
        out.push_back(g + "-" + next->minor);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

json::object VersionCatalogue::ToOcm(const CatalogueVersion& v) const {
  const std::string i = v.id();
  std::vector<std::string> upgrades = UpgradesFrom(v.raw_id, v.channel_group);
  return json::object{{"kind", "Version"},
                      {"id", i},
                      {"href", "/api/aro_hcp/v1alpha1/versions/" + i},
                      {"raw_id", v.raw_id},
                      {"channel_group", v.channel_group},
                      {"enabled", v.enabled},
                      {"default", v.is_default},
                      {"end_of_life_timestamp", v.end_of_life},
                      {"available_upgrades", json::array(upgrades.begin(), upgrades.end())}};
}

namespace {

// The minor a release of a minor the catalogue does not have yet starts; InvalidArgument when it is
// not the minor after the last one or the release is not its X.Y.0.
Result<CatalogueMinor> NewMinor(const CatalogueMinor& last, const Release& r) {
  auto [minor, z] = *ParseRaw(r.version);
  auto numbers = *ParseMinor(minor);
  const std::pair next_minor{last.major_number, last.minor_number + 1};
  const std::pair next_major{last.major_number + 1, 0};
  if (numbers != next_minor && numbers != next_major) {
    return Error::InvalidArgument("minor " + std::string(minor) +
                                  " is neither an existing minor nor the next (" +
                                  std::to_string(next_minor.first) + "." + std::to_string(next_minor.second) +
                                  " or " + std::to_string(next_major.first) + ".0)");
  }
  if (z != 0) {
    return Error::InvalidArgument("the first release of minor " + std::string(minor) + " is " +
                                  std::string(minor) + ".0");
  }
  CatalogueMinor m;
  m.minor = std::string(minor);
  m.major_number = numbers.first;
  m.minor_number = numbers.second;
  m.end_of_life = r.end_of_life;
  if (m.end_of_life.empty())
    m.end_of_life = FormatRfc3339(*ParseRfc3339(last.end_of_life) + kDefaultMinorLifetime);
  m.from_previous_minor_min_z = r.from_previous_minor_min_z;
  return m;
}

// Adds release z-stream `z` to the groups it names; InvalidArgument when a group would skip a z-stream.
Status EnterGroups(CatalogueMinor& m, int z, const Release& r) {
  if (z > m.Highest() + 1) {
    return Error::InvalidArgument(r.version + " is not the next z-stream of " + m.minor + " (" +
                                  RawId(m, m.Highest() + 1) + ")");
  }
  for (const auto& g : r.channel_groups) {
    const int top = m.HighestIn(g);
    if (z <= top) continue;
    if (z > top + 1) {
      return Error::InvalidArgument(r.version + " cannot enter " + g + " before " + RawId(m, top + 1));
    }
    auto it = std::find_if(m.channel_groups.begin(), m.channel_groups.end(),
                           [&](const auto& entry) { return entry.first == g; });
    if (it == m.channel_groups.end()) {
      m.channel_groups.emplace_back(g, z);
    } else {
      it->second = z;
    }
  }
  if (auto problem = GroupOrderProblem(m)) return Error::InvalidArgument(*problem);
  return Status::Ok();
}

}  // namespace

Result<VersionCatalogue> VersionCatalogue::WithRelease(const Release& release) const {
  auto parsed = ParseRaw(release.version);
  if (!parsed) return Error::InvalidArgument("version must be a release number X.Y.Z");
  VersionCatalogue out = *this;
  auto it = std::find_if(out.minors_.begin(), out.minors_.end(),
                         [&](const CatalogueMinor& m) { return m.minor == parsed->first; });
  if (it == out.minors_.end()) {
    HCPRP_ASSIGN_OR_RETURN(auto minor, NewMinor(minors_.back(), release));
    out.minors_.push_back(std::move(minor));
    it = out.minors_.end() - 1;
  } else if (release.from_previous_minor_min_z &&
             release.from_previous_minor_min_z != it->from_previous_minor_min_z) {
    return Error::InvalidArgument("from_previous_minor applies to a new minor only; " + it->minor +
                                  " has one");
  } else if (!release.end_of_life.empty() && release.end_of_life != it->end_of_life) {
    return Error::InvalidArgument("end_of_life applies to a new minor only; " + it->minor + " has one");
  }
  HCPRP_RETURN_IF_ERROR(EnterGroups(*it, parsed->second, release));
  HCPRP_RETURN_IF_ERROR(out.Build());
  return out;
}

Result<VersionCatalogue> VersionCatalogue::WithEdgeWithdrawn(std::string_view from_raw,
                                                             std::string_view to_raw, bool withdrawn) const {
  if (!RuleGivesEdge(from_raw, to_raw)) {
    return Error::InvalidArgument("no upgrade edge from '" + std::string(from_raw) + "' to '" +
                                  std::string(to_raw) + "'");
  }
  VersionCatalogue out = *this;
  std::pair edge{std::string(from_raw), std::string(to_raw)};
  if (withdrawn) {
    out.withdrawn_.insert(std::move(edge));
  } else {
    out.withdrawn_.erase(edge);
  }
  return out;
}

}  // namespace hcprp::simulator
