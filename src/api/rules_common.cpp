#include "api/rules_common.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/azure_resource_id.h"

namespace hcprp::api::rules {
namespace {

void Push(std::vector<FieldError>& out, std::string target, std::string message) {
  constexpr size_t kMaxMessage = 768;  // messages quote rejected values; a huge one is cut short
  if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage - 3) + "...";
  out.push_back(FieldError{std::string(kInvalidRequestContent), std::move(message), std::move(target)});
}

std::string Render(const json::value& value) {
  constexpr size_t kShown = 256;  // a huge value is shown by its beginning
  if (value.is_string() && value.get_string().size() > kShown) {
    return json::serialize(json::value(value.get_string().subview(0, kShown))) + "...";
  }
  if (value.is_string()) return json::serialize(value);  // quoted and escaped
  if (value.is_null()) return "null";
  return json::serialize(value);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t next = s.find(sep, pos);
    if (next == std::string_view::npos) {
      parts.push_back(s.substr(pos));
      return parts;
    }
    parts.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
}

std::string Quoted(std::string_view s) { return json::serialize(json::value(s)); }

std::optional<uint64_t> Number(std::string_view part, std::string_view what, std::string& error) {
  if (part.empty() || !std::all_of(part.begin(), part.end(), IsDigit)) {
    error = "Invalid character(s) found in " + std::string(what) + " number " + Quoted(part);
    return std::nullopt;
  }
  if (part.size() > 1 && part[0] == '0') {
    std::string cap(what);
    cap[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(cap[0])));
    error = cap + " number must not contain leading zeroes " + Quoted(part);
    return std::nullopt;
  }
  if (part.size() > 18) {
    error = "Invalid character(s) found in " + std::string(what) + " number " + Quoted(part);
    return std::nullopt;
  }
  return std::stoull(std::string(part));
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?
bool IsQualifiedPart(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";

std::string RegexError(std::string_view msg, std::string_view fmt,
                       const std::vector<std::string_view>& examples) {
  std::string out(msg);
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + std::string(examples[i]) + "', ";
  }
  out += "regex used for validation is '" + std::string(fmt) + "')";
  return out;
}

}  // namespace

std::string KeyPath(std::string_view base, std::string_view key) {
  return std::string(base) + "[" + std::string(key) + "]";
}

std::string IndexTarget(std::string_view base, size_t index) { return KeyPath(base, std::to_string(index)); }

void Invalid(std::vector<FieldError>& out, std::string target, const json::value& value,
             std::string_view detail) {
  std::string message = "Invalid value: " + Render(value);
  if (!detail.empty()) message += ": " + std::string(detail);
  Push(out, std::move(target), std::move(message));
}

void Required(std::vector<FieldError>& out, std::string target, std::string_view detail) {
  std::string message = "Required value";
  if (!detail.empty()) message += ": " + std::string(detail);
  Push(out, std::move(target), std::move(message));
}

void Forbidden(std::vector<FieldError>& out, std::string target, std::string_view detail) {
  Push(out, std::move(target), "Forbidden: " + std::string(detail));
}

void TooLong(std::vector<FieldError>& out, std::string target, size_t max_bytes) {
  Push(out, std::move(target), "Too long: may not be more than " + std::to_string(max_bytes) + " bytes");
}

void TooMany(std::vector<FieldError>& out, std::string target, size_t actual, size_t max_items) {
  Push(out, std::move(target),
       "Too many: " + std::to_string(actual) + ": must have at most " + std::to_string(max_items) + " items");
}

void Unsupported(std::vector<FieldError>& out, std::string target, const json::value& value,
                 const std::vector<std::string_view>& supported) {
  std::string message = "Unsupported value: " + Render(value) + ": supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) message += ", ";
    message += Quoted(supported[i]);
  }
  Push(out, std::move(target), std::move(message));
}

void AtLeast(std::vector<FieldError>& out, const std::string& target, std::optional<int64_t> value,
             int64_t min) {
  if (value && *value < min) {
    Invalid(out, target, json::value(*value), "must be greater than or equal to " + std::to_string(min));
  }
}

void AtMost(std::vector<FieldError>& out, const std::string& target, std::optional<int64_t> value,
            int64_t max) {
  if (value && *value > max) {
    Invalid(out, target, json::value(*value), "must be less than or equal to " + std::to_string(max));
  }
}

void Immutable(std::vector<FieldError>& out, const std::string& target, const json::value* now,
               const json::value* before) {
  bool now_absent = now == nullptr || now->is_null();
  bool before_absent = before == nullptr || before->is_null();
  if (now_absent && before_absent) return;
  if (now_absent != before_absent || *now != *before) Forbidden(out, target, "field is immutable");
}

const json::object* Obj(const json::object* o, std::string_view key) {
  return o ? GetObject(*o, key) : nullptr;
}

std::optional<std::string_view> Str(const json::object* o, std::string_view key) {
  return o ? GetString(*o, key) : std::nullopt;
}

std::optional<int64_t> Int(const json::object* o, std::string_view key) {
  return o ? GetInt(*o, key) : std::nullopt;
}

const json::value* Member(const json::object* o, std::string_view key) {
  if (o == nullptr) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &it->value();
}

AzureIdParse ParseAzureId(std::string_view text) {
  AzureIdParse result;
  AzureResourceId parts;
  if (Status parsed = ParseAzureResourceId(text, parts); !parsed.ok()) {
    result.error = "invalid resource ID: " + parsed.error().message();
    return result;
  }
  AzureId& id = result.id.emplace();
  id.subscription = std::string(parts.subscription);
  id.resource_group = std::string(parts.resource_group);
  if (parts.resources.empty()) {
    id.name = id.resource_group.empty() ? id.subscription : id.resource_group;
    return result;
  }
  // type: the namespace and every type segment; name: the last name; parent: the ID up to the last
  // type/name pair, "resourceGroups" and "providers" spelled so (empty for one pair).
  id.type = std::string(parts.provider_namespace);
  for (const auto& r : parts.resources) {
    id.type += '/';
    id.type += r.type;
  }
  id.name = std::string(parts.resources.back().name);
  if (parts.resources.size() > 1) {
    // The "subscriptions" keyword as written: the parse matched it right after the leading '/'.
    id.parent =
        "/" + std::string(text.substr(1, std::string_view("subscriptions").size())) + "/" + id.subscription;
    if (!id.resource_group.empty()) id.parent += "/resourceGroups/" + id.resource_group;
    id.parent += "/providers/";
    id.parent += parts.provider_namespace;
    for (size_t k = 0; k + 1 < parts.resources.size(); ++k) {
      id.parent += '/';
      id.parent += parts.resources[k].type;
      id.parent += '/';
      id.parent += parts.resources[k].name;
    }
  }
  return result;
}

bool NullChecked(std::string_view target) {
  static constexpr std::array<std::string_view, 7> kNullChecked = {
      "properties.platform.vnetIntegrationSubnetId",
      "properties.etcd.dataEncryption.customerManaged.kms.visibility",
      "properties.network.hostPrefix",
      "properties.autoscaling.maxPodGracePeriodSeconds",
      "properties.autoscaling.maxNodeProvisionTimeSeconds",
      "properties.autoscaling.podPriorityThreshold",
      "properties.autoRepair"};
  return std::ranges::find(kNullChecked, target) != kNullChecked.end();
}

std::string MalformedIdMessage(std::string_view text) {
  std::string why = text.starts_with('/') ? std::string(text)
                                          : "resource id '" + std::string(text) + "' must start with '/'";
  return "Invalid value: " + json::serialize(json::value(text)) + ": invalid resource ID: " + why;
}

void KeepMalformedIdsAlone(std::vector<FieldError>& errors) {
  auto malformed = [](const FieldError& e) {
    return e.message.find(": invalid resource ID: ") != std::string::npos;
  };
  if (std::ranges::none_of(errors, malformed)) return;
  std::erase_if(errors, [&](const FieldError& e) { return !malformed(e); });
}

std::string MalformedIdTarget(std::string target) {
  for (std::string_view leaf : {"subnetId", "networkSecurityGroupId", "encryptionSetId"}) {
    const std::string suffix = "." + std::string(leaf);
    if (target.size() > suffix.size() && target.ends_with(suffix)) {
      target.replace(target.size() - 2, 2, "ID");
      break;
    }
  }
  return target;
}

std::optional<AzureId> CheckResourceId(std::vector<FieldError>& out, const std::string& target,
                                       std::string_view text, std::string_view type, bool want_group) {
  AzureIdParse parsed = ParseAzureId(text);
  const json::value shown(text);
  if (!parsed.id) {
    out.push_back(
        FieldError{std::string(kInvalidRequestContent), MalformedIdMessage(text), MalformedIdTarget(target)});
    return std::nullopt;
  }
  const AzureId& id = *parsed.id;
  size_t before = out.size();
  if (id.subscription.empty()) Invalid(out, target, shown, "subscription ID is required");
  if (id.name.empty()) Invalid(out, target, shown, "resource name is required");
  if (!type.empty() && !EqualsIgnoreCase(type, id.type)) {
    Invalid(out, target, shown, "resource ID must reference an instance of type " + Quoted(type));
  }
  if (want_group && id.resource_group.empty()) Invalid(out, target, shown, "resource group is required");
  if (out.size() != before) return std::nullopt;
  return parsed.id;
}

SemverParse ParseSemver(std::string_view text) {
  SemverParse result;
  if (text.empty()) {
    result.error = "Version string empty";
    return result;
  }
  // major.minor.rest, where rest is patch[-prerelease][+build]
  size_t first = text.find('.');
  size_t second = first == std::string_view::npos ? first : text.find('.', first + 1);
  if (second == std::string_view::npos) {
    result.error = "No Major.Minor.Patch elements found";
    return result;
  }
  Semver v;
  v.parts = 3;
  std::string error;
  auto major = Number(text.substr(0, first), "major", error);
  if (!major) {
    result.error = error;
    return result;
  }
  auto minor = Number(text.substr(first + 1, second - first - 1), "minor", error);
  if (!minor) {
    result.error = error;
    return result;
  }
  std::string_view rest = text.substr(second + 1);
  size_t build = rest.find('+');
  if (build != std::string_view::npos) rest = rest.substr(0, build);
  size_t dash = rest.find('-');
  std::string_view patch_text = rest.substr(0, dash);
  auto patch = Number(patch_text, "patch", error);
  if (!patch) {
    result.error = error;
    return result;
  }
  if (dash != std::string_view::npos) {
    v.prerelease = std::string(rest.substr(dash + 1));
    for (std::string_view id : Split(v.prerelease, '.')) {
      if (id.empty()) {
        result.error = "Prerelease is empty";
        return result;
      }
      if (!std::all_of(id.begin(), id.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
        result.error = "Invalid character(s) found in prerelease " + Quoted(id);
        return result;
      }
    }
  }
  v.major = *major;
  v.minor = *minor;
  v.patch = *patch;
  result.version = v;
  return result;
}

SemverParse ParseSemverTolerant(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  std::vector<std::string_view> parts = Split(text, '.');
  int given = static_cast<int>(std::min<size_t>(parts.size(), 3));
  std::string padded(text);
  if (parts.size() < 3) {
    if (text.find_first_of("+-") != std::string_view::npos) {
      return SemverParse{std::nullopt, "Short version cannot contain PreRelease/Build meta data"};
    }
    // Leading zeroes are tolerated in the short form.
    padded.clear();
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string_view p = parts[i];
      while (p.size() > 1 && p.front() == '0') p.remove_prefix(1);
      if (i > 0) padded += ".";
      padded += std::string(p);
    }
    for (size_t i = parts.size(); i < 3; ++i) padded += ".0";
  }
  SemverParse result = ParseSemver(padded);
  if (result.version) result.version->parts = given;
  return result;
}

int Compare(const Semver& a, const Semver& b) {
  auto key = [](const Semver& v) { return std::tuple(v.major, v.minor, v.patch); };
  if (key(a) != key(b)) return key(a) < key(b) ? -1 : 1;
  if (a.prerelease == b.prerelease) return 0;
  if (a.prerelease.empty()) return 1;
  if (b.prerelease.empty()) return -1;
  return a.prerelease < b.prerelease ? -1 : 1;
}

std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  std::vector<std::string> errors;
  std::vector<std::string_view> parts = Split(value, '/');
  std::string_view name;
  if (parts.size() == 1) {
    name = parts[0];
  } else if (parts.size() == 2) {
    std::string_view prefix = parts[0];
    name = parts[1];
    if (prefix.empty()) {
      errors.emplace_back("prefix part must be non-empty");
    } else {
      for (const auto& e : Dns1123SubdomainErrors(prefix)) errors.push_back("prefix part " + e);
    }
  } else {
    errors.push_back("a qualified name " +
                     RegexError(kQualifiedNameMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errors;
  }
  if (name.empty()) {
    errors.emplace_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errors.emplace_back("name part must be no more than 63 characters");
  }
  if (!name.empty() && !IsQualifiedPart(name)) {
    errors.push_back("name part " +
                     RegexError(kQualifiedNameMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errors;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) errors.emplace_back("must be no more than 63 characters");
  if (!value.empty() && !IsQualifiedPart(value)) {
    errors.push_back(RegexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
        "must start and end with an alphanumeric character",
        "(" + std::string(kQualifiedNameFmt) + ")?", {"MyValue", "my_value", "12345"}));
  }
  return errors;
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 253) errors.emplace_back("must be no more than 253 characters");
  bool ok = !value.empty();
  for (std::string_view label : Split(value, '.')) {
    if (label.empty() || !std::isalnum(static_cast<unsigned char>(label.front())) ||
        !std::isalnum(static_cast<unsigned char>(label.back()))) {
      ok = false;
      break;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || IsDigit(c) || c == '-')) ok = false;
    }
  }
  if (!ok) {
    errors.push_back(RegexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character",
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", {"example.com"}));
  }
  return errors;
}

}  // namespace hcprp::api::rules
