// libFuzzer target: arbitrary bytes as a request body for every kind, api-version and operation.
// Decoding must never crash, hang or leak, whatever the input; a body that decodes must encode to
// something the response schema check can walk.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/api.h"
#include "core/json.h"

namespace {

const hcprp::api::Resource& Existing(hcprp::api::Kind kind) {
  using hcprp::api::Kind;
  static const hcprp::api::Resource kCluster{
      Kind::kCluster,
      "eastus",
      {},
      std::nullopt,
      hcprp::json::parse(R"({"version":{"id":"4.19","channelGroup":"stable"},
        "network":{"podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},
        "platform":{"subnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
          "vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/b",
          "networkSecurityGroupId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkSecurityGroups/n",
          "operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{}}}}})")
          .as_object(),
      {}};
  static const hcprp::api::Resource kNodePool{
      Kind::kNodePool,
      "eastus",
      {},
      std::nullopt,
      hcprp::json::parse(R"({"version":{"id":"4.19"},"platform":{"vmSize":"Standard_D4s_v3"},"replicas":2})")
          .as_object(),
      {}};
  static const hcprp::api::Resource kExternalAuth{
      Kind::kExternalAuth,
      "",
      {},
      std::nullopt,
      hcprp::json::parse(
          R"({"issuer":{"url":"https://x","audiences":["a"]},"claim":{"mappings":{"username":{"claim":"email"}}}})")
          .as_object(),
      {}};
  switch (kind) {
    case Kind::kCluster:
      return kCluster;
    case Kind::kNodePool:
      return kNodePool;
    case Kind::kExternalAuth:
      return kExternalAuth;
  }
  return kCluster;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcprp::api;
  if (size < 1) return 0;
  // The first byte picks the kind, version and operation; the rest is the body.
  const uint8_t selector = data[0];
  const Kind kind = static_cast<Kind>(selector % 3);
  const auto versions = ApiVersions();
  const std::string_view version = versions[(selector / 3) % versions.size()].name;
  const int op = static_cast<int>((selector / (3 * versions.size())) % 3);
  auto parsed = hcprp::ParseJson(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!parsed.ok()) return 0;
  DecodeOptions options;
  options.name = "fuzz";
  options.current_provisioning_state = "Succeeded";
  Validated<Resource> result = op == 0 ? DecodeCreate(version, kind, parsed.value(), options)
                               : op == 1
                                   ? DecodeReplace(version, kind, parsed.value(), Existing(kind), options)
                                   : DecodePatch(version, kind, parsed.value(), Existing(kind), options);
  if (const auto* r = std::get_if<Resource>(&result)) {
    for (const auto& v : SupportedVersions()) {
      auto body = EncodeProperties(v, *r);
      (void)ValidateResponse(v, DefinitionName(kind), body);
    }
    auto back = FromStorage(ToStorage(*r));
    if (!back.ok()) __builtin_trap();
  } else if (std::get<ValidationErrors>(result).errors.empty()) {
    __builtin_trap();  // a rejection always says why
  }
  return 0;
}
