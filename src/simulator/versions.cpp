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

std::optional<int> ParseNumber(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "4.20" -> true.
bool IsMinor(std::string_view s) {
  auto dot = s.find('.');
  return dot != std::string_view::npos && ParseNumber(s.substr(0, dot)) && ParseNumber(s.substr(dot + 1));
}

}  // namespace

std::string CatalogueVersion::id() const {
  std::string out = std::string(kPrefix) + raw_id;
  if (channel_group != kStable) out += "-" + channel_group;
  return out;
}

json::object CatalogueVersion::ToOcm() const {
  const std::string i = id();
  return json::object{{"kind", "Version"},
                      {"id", i},
                      {"href", "/api/aro_hcp/v1alpha1/versions/" + i},
                      {"raw_id", raw_id},
                      {"channel_group", channel_group},
                      {"enabled", enabled},
                      {"default", is_default},
                      {"end_of_life_timestamp", end_of_life}};
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
    if (!mv.is_object()) return Error::InvalidArgument("version catalogue: every minor must be an object");
    const json::object& m = mv.as_object();
    std::string minor(GetString(m, "minor").value_or(""));
    if (!IsMinor(minor)) return Error::InvalidArgument("version catalogue: bad minor '" + minor + "'");
    std::string eol(GetString(m, "end_of_life").value_or(""));
    if (!ParseRfc3339(eol).ok()) {
      std::string message = "version catalogue: minor " + minor;
      message.append(" needs an RFC 3339 end_of_life, not '").append(eol).append("'");
      return Error::InvalidArgument(message);
    }
    const json::object* groups = hcprp::GetObject(m, "channel_groups");
    if (!groups || groups->empty()) {
      return Error::InvalidArgument("version catalogue: minor " + minor + " has no channel_groups");
    }
    std::vector<int> disabled;
    if (const json::array* d = GetArray(m, "disabled")) {
      for (const auto& z : *d) {
        if (!z.is_int64())
          return Error::InvalidArgument("version catalogue: 'disabled' lists z-stream numbers");
        disabled.push_back(static_cast<int>(z.as_int64()));
      }
    }
    int top = -1;
    for (const auto& [g, v] : *groups) {
      if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() > 1000) {
        return Error::InvalidArgument("version catalogue: minor " + minor + " channel group " +
                                      std::string(g) + " needs the highest z-stream number");
      }
      top = std::max(top, static_cast<int>(v.as_int64()));
    }
    for (int z = 0; z <= top; ++z) {
      for (const auto& [g, v] : *groups) {
        if (z > v.as_int64()) continue;
        CatalogueVersion cv;
        cv.minor = minor;
        cv.z = z;
        cv.raw_id = minor + "." + std::to_string(z);
        cv.channel_group = std::string(g);
        cv.enabled = std::find(disabled.begin(), disabled.end(), z) == disabled.end();
        cv.end_of_life = eol;
        cat.versions_.push_back(std::move(cv));
      }
    }
  }
  const json::object* def = hcprp::GetObject(root, "default");
  std::string dv(def ? GetString(*def, "version").value_or("") : "");
  std::string dg(def ? GetString(*def, "channel_group").value_or(kStable) : kStable);
  bool found = false;
  for (size_t i = 0; i < cat.versions_.size(); ++i) {
    auto& v = cat.versions_[i];
    if (v.raw_id == dv && v.channel_group == dg) {
      if (!v.enabled) return Error::InvalidArgument("version catalogue: the default version is disabled");
      v.is_default = true;
      cat.default_index_ = i;
      found = true;
    }
  }
  if (!found) {
    return Error::InvalidArgument("version catalogue: default {version: '" + dv + "', channel_group: '" + dg +
                                  "'} is not in the catalogue");
  }
  return cat;
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

}  // namespace hcprp::simulator
