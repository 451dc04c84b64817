// Helpers shared by the api tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {
// The oldest served api-version, the one that differs most from the canonical model.
inline constexpr std::string_view kFirstPreview = "2024-06-10-preview";
}  // namespace hcprp::api

namespace hcprp::api::testing {

inline json::value LoadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseJson(ss.str());
  EXPECT_TRUE(parsed.ok()) << path;
  return parsed.ok() ? parsed.value() : json::value();
}

inline json::value Parse(std::string_view text) {
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? parsed.value() : json::value();
}

// Sets the value at an RFC 6901 pointer, creating intermediate objects.
inline void Set(json::value& root, std::string_view pointer, json::value v) {
  json::value* cur = &root;
  size_t pos = 1;
  while (pos <= pointer.size()) {
    size_t end = pointer.find('/', pos);
    std::string key(pointer.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (json::array* a = cur->if_array()) {
      cur = &(*a)[std::stoul(key)];
    } else {
      if (!cur->is_object()) *cur = json::object();
      cur = &cur->get_object()[key];
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  *cur = std::move(v);
}

inline void Erase(json::value& root, std::string_view pointer) {
  size_t slash = pointer.rfind('/');
  json::value* parent = FindPointer(root, pointer.substr(0, slash));
  ASSERT_NE(parent, nullptr) << pointer;
  ASSERT_TRUE(parent->is_object()) << pointer;
  parent->get_object().erase(pointer.substr(slash + 1));
}

inline std::string Dump(const ValidationErrors& e) {
  std::string s;
  for (const auto& f : e.errors) s += "  [" + f.code + "] " + f.target + ": " + f.message + "\n";
  return s;
}

inline std::string Dump(const Validated<Resource>& v) {
  if (const auto* e = std::get_if<ValidationErrors>(&v)) return Dump(*e);
  return "  (no errors)\n";
}

// What a client receives: the body serialized and parsed again, nothing erased or rewritten.
inline json::value OnTheWire(const json::object& body) { return Parse(json::serialize(body)); }

// --- The published examples (api-spec/.../<version>/examples) ---------------------------------------

struct Example {
  std::string version;
  Kind kind;
  std::string prefix;      // file prefix: HcpOpenShiftClusters, NodePools, ExternalAuths
  std::string name_param;  // path parameter holding the resource name
};

inline std::vector<Example> Examples() {
  std::vector<Example> out;
  for (const ApiVersion& v : ApiVersions()) {
    std::string version(v.name);
    out.push_back({version, Kind::kCluster, "HcpOpenShiftClusters", "hcpOpenShiftClusterName"});
    out.push_back({version, Kind::kNodePool, "NodePools", "nodePoolName"});
    out.push_back({version, Kind::kExternalAuth, "ExternalAuths", "externalAuthName"});
  }
  return out;
}

inline Example ExampleOf(std::string_view version, Kind kind) {
  for (Example& e : Examples()) {
    if (e.version == version && e.kind == kind) return e;
  }
  ADD_FAILURE() << "no example for " << version;
  return {};
}

inline std::string ExamplePath(const Example& e, std::string_view operation) {
  const ApiVersion* v = FindApiVersion(e.version);
  std::string dir = std::string(HCPRP_API_SPEC_DIR) + (v != nullptr && v->stable ? "/stable/" : "/preview/");
  return dir + e.version + "/examples/" + e.prefix + "_" + std::string(operation) + "_MaximumSet_Gen.json";
}

// The examples are generated with random values; these break semantic rules (the real service's, as
// docs/validation.md lists them) and are fixed before use:
// - clusters: network.hostPrefix 21 -> 23 (allowed range 23..26);
// - node pools: replicas and autoScaling are both set (autoScaling is removed), the update example
//   has autoScaling.min 29 > max 2 (removed too), its identity is type "None" with an identity key
//   "key4794" that is no resource ID (identity removed), and the taint key of 213 characters is no
//   Kubernetes qualified name (-> "example.com/dedicated");
// - external auths: username.prefixPolicy is a random string (-> "Prefix", a prefix is given), and
//   clients[0].clientId is not among issuer.audiences (-> "audience1").
inline void FixExample(Kind kind, json::value& body) {
  json::object* props =
      body.as_object().if_contains("properties") ? body.as_object()["properties"].if_object() : nullptr;
  if (props == nullptr) return;
  switch (kind) {
    case Kind::kCluster:
      if (json::value* hp = FindPointer(body, "/properties/network/hostPrefix")) *hp = 23;
      // The generated examples carry values the service refuses: an OpenShift version below its
      // minimum and zero autoscaling durations.
      if (json::value* id = FindPointer(body, "/properties/version/id")) *id = "4.20";
      if (json::value* s = FindPointer(body, "/properties/autoscaling/maxPodGracePeriodSeconds")) *s = 600;
      if (json::value* s = FindPointer(body, "/properties/autoscaling/maxNodeProvisionTimeSeconds")) *s = 900;
      break;
    case Kind::kNodePool:
      props->erase("autoScaling");
      body.as_object().erase("identity");
      if (json::value* key = FindPointer(body, "/properties/taints/0/key")) *key = "example.com/dedicated";
      if (json::value* id = FindPointer(body, "/properties/version/id")) *id = "4.20.8";
      // ... and a VM size the service does not offer.
      if (json::value* size = FindPointer(body, "/properties/platform/vmSize")) *size = "Standard_D4s_v3";
      break;
    case Kind::kExternalAuth:
      if (json::value* p = FindPointer(body, "/properties/claim/mappings/username/prefixPolicy"))
        *p = "Prefix";
      if (json::value* c = FindPointer(body, "/properties/clients/0/clientId")) *c = "audience1";
      // The service takes a PEM CA only, and Confidential clients only for the console.
      if (json::value* issuer = FindPointer(body, "/properties/issuer")) issuer->as_object().erase("ca");
      if (json::value* t = FindPointer(body, "/properties/clients/0/type")) *t = "Public";
      break;
  }
}

inline Envelope EnvelopeOf(const json::value& response_body) {
  Envelope env;
  const json::object& o = response_body.as_object();
  env.id = std::string(GetString(o, "id").value_or(""));
  env.name = std::string(GetString(o, "name").value_or(""));
  env.type = std::string(GetString(o, "type").value_or(""));
  if (const json::object* sd = GetObject(o, "systemData")) env.system_data = *sd;
  env.provisioning_state = "Succeeded";
  return env;
}

struct Created {
  Resource resource;
  Envelope envelope;
};

// Decodes the example's request body as a create through its version; the read-only values come
// from the example's response, as the service would observe them.
inline Created CreateFromExample(const Example& e) {
  json::value doc = LoadJson(ExamplePath(e, "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(e.kind, body);
  DecodeOptions options;
  options.name = std::string(FindPointer(doc, "/parameters/" + e.name_param)->as_string());
  auto decoded = DecodeCreate(e.version, e.kind, body, options);
  EXPECT_TRUE(std::holds_alternative<Resource>(decoded)) << e.prefix << " " << e.version << "\n"
                                                         << Dump(decoded);
  if (!std::holds_alternative<Resource>(decoded)) return {Resource{e.kind, "", {}, std::nullopt, {}, {}}, {}};
  const json::value& response = *FindPointer(doc, "/responses/200/body");
  Resource r = std::get<Resource>(decoded);
  r.observed = ObservedFromWire(e.version, e.kind, response);
  return {r, EnvelopeOf(response)};
}

}  // namespace hcprp::api::testing
