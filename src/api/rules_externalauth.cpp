// External auth rules (semantic.h lists them).
#include "api/rules.h"
#include "api/rules_common.h"

namespace hcprp::api::rules {
namespace {

// A client as the real service prints it in a duplicate's message: its members in the order of its
// own type, every one present (an empty string or list when the body left it out).
json::object ClientAsShown(const json::object& client) {
  const json::object* component = GetObject(client, "component");
  auto text = [](const json::object* o, std::string_view key) {
    return json::value(o != nullptr ? std::string(Str(o, key).value_or("")) : std::string());
  };
  const json::array* scopes = GetArray(client, "extraScopes");
  return json::object{
      {"component", json::object{{"name", text(component, "name")},
                                 {"authClientNamespace", text(component, "authClientNamespace")}}},
      {"clientId", text(&client, "clientId")},
      {"extraScopes", scopes != nullptr ? json::value(*scopes) : json::value(json::array())},
      {"type", text(&client, "type")}};
}

constexpr std::string_view kConsoleName = "console";
constexpr std::string_view kConsoleNamespace = "openshift-console";

void RequiredString(const json::object* o, std::string_view key, const std::string& target, size_t max_len,
                    std::vector<FieldError>& out) {
  auto value = Str(o, key);
  if (!value || value->empty()) Required(out, target);
  if (value && max_len > 0 && value->size() > max_len) TooLong(out, target, max_len);
}

// A PEM bundle with at least one certificate block.
bool IsPemCertificate(std::string_view text) {
  constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  size_t begin = text.find(kBegin);
  if (begin == std::string_view::npos) return false;
  size_t end = text.find(kEnd, begin + kBegin.size());
  if (end == std::string_view::npos) return false;
  std::string_view body = text.substr(begin + kBegin.size(), end - begin - kBegin.size());
  size_t chars = 0;
  for (char c : body) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=') {
      ++chars;
    } else if (c != '\n' && c != '\r' && c != ' ' && c != '\t') {
      return false;
    }
  }
  return chars > 0 && chars % 4 == 0;
}

void CheckIssuer(const json::object* props, std::vector<FieldError>& out) {
  const json::object* issuer = Obj(props, "issuer");
  if (issuer == nullptr) return;
  const std::string base = "properties.issuer";
  auto url = Str(issuer, "url");
  if (!url || url->empty()) {
    Required(out, base + ".url");
  } else if (!url->starts_with("https://")) {
    Invalid(out, base + ".url", json::value(*url), "must be https URL");
  }
  if (const json::array* audiences = GetArray(*issuer, "audiences")) {
    for (size_t i = 0; i < audiences->size(); ++i) {
      if ((*audiences)[i].is_string() && (*audiences)[i].get_string().empty()) {
        Required(out, IndexTarget(base + ".audiences", i));
      }
    }
  }
  if (auto ca = Str(issuer, "ca"); ca && !ca->empty() && !IsPemCertificate(*ca)) {
    Invalid(out, base + ".ca", json::value(*ca), "not a valid PEM");
  }
}

void CheckClients(const json::object* props, std::vector<FieldError>& out) {
  const json::array* clients = props ? GetArray(*props, "clients") : nullptr;
  if (clients == nullptr) return;
  const std::string base = "properties.clients";
  if (clients->size() > 20) TooMany(out, base, clients->size(), 20);
  const json::array* audiences =
      Obj(props, "issuer") ? GetArray(*Obj(props, "issuer"), "audiences") : nullptr;
  std::vector<std::pair<std::string, std::string>> components;
  for (size_t i = 0; i < clients->size(); ++i) {
    const json::object* client = (*clients)[i].if_object();
    if (client == nullptr) continue;
    std::string target = IndexTarget(base, i);
    const json::object* component = Obj(client, "component");
    if (component == nullptr) Required(out, target + ".component");
    RequiredString(component, "name", target + ".component.name", 256, out);
    RequiredString(component, "authClientNamespace", target + ".component.authClientNamespace", 63, out);
    RequiredString(client, "clientId", target + ".clientId", 0, out);
    if (const json::array* scopes = GetArray(*client, "extraScopes")) {
      for (size_t s = 0; s < scopes->size(); ++s) {
        if ((*scopes)[s].is_string() && (*scopes)[s].get_string().empty()) {
          Required(out, IndexTarget(target + ".extraScopes", s));
        }
      }
    }
    auto type = Str(client, "type");
    auto name = Str(component, "name").value_or("");
    auto ns = Str(component, "authClientNamespace").value_or("");
    bool is_console = name == kConsoleName && ns == kConsoleNamespace;
    if (type && is_console && *type != "Confidential") {
      Invalid(
          out, target + ".type", json::value(*type),
          "must be Confidential when component name is console and component namespace is openshift-console");
    }
    if (type && *type == "Confidential" && !is_console) {
      Invalid(out, target + ".type", json::value(*type),
              "confidential client type is not allowed for this component");
    }
    std::pair<std::string, std::string> key(name, ns);
    if (std::find(components.begin(), components.end(), key) != components.end()) {
      out.push_back(FieldError{std::string(kInvalidRequestContent),
                               "Duplicate value: " + json::serialize(ClientAsShown(*client)), target});
    }
    components.push_back(std::move(key));
    if (auto id = Str(client, "clientId")) {
      bool matched = false;
      if (audiences != nullptr) {
        for (const auto& a : *audiences) matched = matched || (a.is_string() && a.get_string() == *id);
      }
      if (!matched)
        Invalid(out, target + ".clientId", json::value(*id), "must match an audience in issuer audiences");
    }
  }
}

void CheckClaim(const json::object* props, std::vector<FieldError>& out) {
  const json::object* claim = Obj(props, "claim");
  if (claim == nullptr) return;
  const std::string base = "properties.claim";
  const json::object* mappings = Obj(claim, "mappings");
  if (mappings == nullptr) Required(out, base + ".mappings");
  const json::object* username = Obj(mappings, "username");
  if (mappings != nullptr && username == nullptr) Required(out, base + ".mappings.username");
  if (username != nullptr) {
    RequiredString(username, "claim", base + ".mappings.username.claim", 256, out);
    auto policy = Str(username, "prefixPolicy");
    bool selected = policy == std::optional<std::string_view>("Prefix");
    bool set = !Str(username, "prefix").value_or("").empty();
    const std::string target = base + ".mappings.username.prefix";
    if (selected && !set)
      Invalid(out, target, json::value(""), "must be specified when `prefixPolicy` is \"Prefix\"");
    if (!selected && set)
      Invalid(out, target, json::value(""), "may only be specified when `prefixPolicy` is \"Prefix\"");
  }
  if (const json::object* groups = Obj(mappings, "groups")) {
    RequiredString(groups, "claim", base + ".mappings.groups.claim", 256, out);
  }
  const json::array* rules = GetArray(*claim, "validationRules");
  if (rules == nullptr) return;
  for (size_t i = 0; i < rules->size(); ++i) {
    const json::object* rule = (*rules)[i].if_object();
    if (rule == nullptr) continue;
    std::string target = IndexTarget(base + ".validationRules", i);
    const json::object* required = Obj(rule, "requiredClaim");
    bool selected = Str(rule, "type") == std::optional<std::string_view>("RequiredClaim");
    if (selected && required == nullptr) {
      Invalid(out, target + ".requiredClaim", json::value(""),
              "must be specified when `type` is \"RequiredClaim\"");
    }
    if (!selected && required != nullptr) {
      Invalid(out, target + ".requiredClaim", json::value(""),
              "may only be specified when `type` is \"RequiredClaim\"");
    }
    RequiredString(required, "claim", target + ".requiredClaim.claim", 0, out);
    RequiredString(required, "requiredValue", target + ".requiredClaim.requiredValue", 0, out);
  }
}

}  // namespace

void CheckExternalAuth(const json::object& body, const json::object* existing, const DecodeOptions& options,
                       std::vector<FieldError>& out) {
  const json::object* props = GetObject(body, "properties");
  CheckIssuer(props, out);
  CheckClients(props, out);
  CheckClaim(props, out);
  // Checked after the body's own rules, and only on a create: a replace or patch of the one external
  // auth the cluster has is allowed.
  if (existing == nullptr && options.other_external_auths) {
    Forbidden(
        out, "name",
        "There are other external auths on the cluster. Only one external auth is allowed per cluster.");
  }
}

}  // namespace hcprp::api::rules
