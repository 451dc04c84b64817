// Experimental tags and what they turn on (experimental.h).
#include "api/experimental.h"

#include <cctype>
#include <cmath>
#include <string>

#include "api/rules_common.h"

namespace hcprp::api {
namespace {

using rules::Invalid;
using rules::KeyPath;

constexpr std::string_view kClusterPrefix = "aro-hcp.experimental.cluster.";
constexpr std::string_view kNodePoolPrefix = "aro-hcp.experimental.nodepool.";
constexpr int64_t kMinDeadlineNanos = int64_t{60} * 1000 * 1000 * 1000;  // 1m, shown as Go shows it
constexpr std::string_view kMinDeadlineText = "1m0s";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HasPrefix(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The tag's value, looked up case-insensitively; nullopt when absent. A value that is not a string
// counts as empty (the schema refuses it first).
std::optional<std::string> Tag(const json::object& tags, std::string_view name) {
  for (const auto& member : tags) {
    if (Lower(member.key()) != name) continue;
    const json::string* s = member.value().if_string();
    return s ? std::string(*s) : std::string();
  }
  return std::nullopt;
}

std::string TagTarget(std::string_view name) { return KeyPath("tags", name); }

// The first experimental tag of `prefix` that is not in `known` is refused, as the real service
// refuses only the first.
bool RefuseUnknownTag(const json::object& tags, std::string_view prefix,
                      const std::vector<std::string_view>& known, std::vector<FieldError>& out) {
  for (const auto& member : tags) {
    std::string name = Lower(member.key());
    if (!HasPrefix(name, prefix)) continue;
    bool listed = false;
    for (std::string_view k : known) listed = listed || (std::string(prefix) + std::string(k)) == name;
    if (listed) continue;
    Invalid(out, TagTarget(member.key()), json::value(member.key()), "unrecognized experimental tag");
    return true;
  }
  return false;
}

// A deadline tag: its seconds in `features` when its value is a duration of at least a minute.
void Deadline(const json::object& tags, const std::string& name, std::string_view example,
              std::string_view member, json::object& features, std::vector<FieldError>& out) {
  auto value = Tag(tags, name);
  if (!value || value->empty()) return;
  auto nanos = ParseGoDuration(*value);
  if (!nanos) {
    Invalid(out, TagTarget(name), json::value(*value),
            "must be a valid Go duration string (e.g. \"" + std::string(example) + "\", \"30m\")");
  } else if (*nanos < kMinDeadlineNanos) {
    Invalid(out, TagTarget(name), json::value(*value), "must be at least " + std::string(kMinDeadlineText));
  } else {
    features[member] = *nanos / 1000000000;
  }
}

// single-replica, size-override and the operator image: each a value the tag must carry exactly.
void ControlPlaneTags(const json::object& tags, json::object& features, std::vector<FieldError>& out) {
  const std::string prefix(kClusterPrefix);
  auto enum_tag = [&](std::string_view tag, std::string_view allowed, std::string_view member) {
    const std::string name = prefix + std::string(tag);
    auto value = Tag(tags, name).value_or("");
    if (value == allowed) {
      features[member] = std::string(allowed);
    } else if (!value.empty()) {
      Invalid(out, TagTarget(name), json::value(value), "must be \"" + std::string(allowed) + "\" or empty");
    }
  };
  enum_tag("single-replica", "SingleReplica", kControlPlaneAvailability);
  enum_tag("size-override", "Minimal", kControlPlanePodSizing);
  const std::string image_tag = prefix + "control-plane-operator-image-override";
  auto image = Tag(tags, image_tag).value_or("");
  if (image.empty()) return;
  size_t begin = image.find_first_not_of(" \t\n\r\f\v");
  if (begin == std::string::npos) {
    Invalid(out, TagTarget(image_tag), json::value(image), "must not be blank when provided");
    return;
  }
  features[kControlPlaneOperatorImage] =
      image.substr(begin, image.find_last_not_of(" \t\n\r\f\v") - begin + 1);
}

// The exact control plane version: from its tag, else from a version.id with a patch; version.id
// keeps the release line.
void PinExactVersion(const json::object& tags, json::object& body, json::object& features,
                     std::vector<FieldError>& out) {
  const std::string name = std::string(kClusterPrefix) + "control-plane-exact-version";
  auto tag = Tag(tags, name);
  json::value* id = nullptr;
  if (json::object* props = body.if_contains("properties") ? body["properties"].if_object() : nullptr) {
    if (json::object* version = props->if_contains("version") ? (*props)["version"].if_object() : nullptr) {
      if (version->if_contains("id") && (*version)["id"].is_string()) id = &(*version)["id"];
    }
  }
  std::string exact;
  if (tag && tag->empty()) {
    Invalid(out, TagTarget(name), json::value(""),
            "must specify an exact \"<major>.<minor>.<patch>\" version");
    return;
  }
  if (tag) {
    if (!rules::ParseSemver(*tag).version) {
      Invalid(out, TagTarget(name), json::value(*tag), "must be a valid semantic version (e.g. \"4.17.3\")");
      return;
    }
    exact = *tag;
  } else if (id != nullptr && rules::ParseSemver(id->get_string()).version) {
    exact = std::string(id->get_string());
  }
  if (exact.empty()) return;
  rules::Semver v = *rules::ParseSemver(exact).version;
  features[kControlPlaneExactVersion] = exact;
  if (id != nullptr) *id = std::to_string(v.major) + "." + std::to_string(v.minor);
}

}  // namespace

json::object AdmitExperimentalFeatures(Kind kind, json::object& body, bool create,
                                       std::vector<FieldError>& out) {
  json::object features;
  if (kind == Kind::kExternalAuth) return features;
  json::object tags;
  if (const json::object* t = body.if_contains("tags") ? body["tags"].if_object() : nullptr) tags = *t;
  if (kind == Kind::kNodePool) {
    RefuseUnknownTag(tags, kNodePoolPrefix, {"max-creation-duration"}, out);
    if (create) {
      Deadline(tags, std::string(kNodePoolPrefix) + "max-creation-duration", "19m", kCreateDeadlineSeconds,
               features, out);
    }
    return features;
  }
  if (!RefuseUnknownTag(tags, kClusterPrefix,
                        {"single-replica", "size-override", "control-plane-operator-image-override",
                         "control-plane-exact-version", "max-creation-duration", "max-deletion-duration"},
                        out)) {
    ControlPlaneTags(tags, features, out);
  }
  if (create) {
    Deadline(tags, std::string(kClusterPrefix) + "max-creation-duration", "19m", kCreateDeadlineSeconds,
             features, out);
  }
  Deadline(tags, std::string(kClusterPrefix) + "max-deletion-duration", "24m", kDeleteDeadlineSeconds,
           features, out);
  PinExactVersion(tags, body, features, out);
  return features;
}

std::optional<int64_t> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;
  if (s.empty()) return std::nullopt;
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    long double number = 0;
    bool digits = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
      number = number * 10 + (s[i++] - '0');
      digits = true;
    }
    if (i < s.size() && s[i] == '.') {
      long double scale = 0.1L;
      for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i, scale /= 10) {
        number += (s[i] - '0') * scale;
        digits = true;
      }
    }
    if (!digits) return std::nullopt;
    size_t unit_end = i;
    while (unit_end < s.size() && s[unit_end] != '.' &&
           std::isdigit(static_cast<unsigned char>(s[unit_end])) == 0)
      ++unit_end;
    std::string_view unit = s.substr(i, unit_end - i);
    long double nanos_per = 0;
    if (unit == "ns") {
      nanos_per = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      nanos_per = 1e3L;
    } else if (unit == "ms") {
      nanos_per = 1e6L;
    } else if (unit == "s") {
      nanos_per = 1e9L;
    } else if (unit == "m") {
      nanos_per = 60e9L;
    } else if (unit == "h") {
      nanos_per = 3600e9L;
    } else {
      return std::nullopt;
    }
    total += number * nanos_per;
    if (total > 9223372036854775807.0L) return std::nullopt;
    s.remove_prefix(unit_end);
  }
  auto nanos = static_cast<int64_t>(std::floor(total));
  return negative ? -nanos : nanos;
}

}  // namespace hcprp::api
