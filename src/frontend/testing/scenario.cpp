#include "frontend/testing/scenario.h"

#include <gtest/gtest.h>

#include "arm/resource_id.h"
#include "arm/store_indexes.h"
#include "clusterservice/mapping.h"
#include "core/time.h"

namespace hcprp::frontend::testing {

namespace bhttp = boost::beast::http;

std::string ClusterPath(std::string_view name, std::string_view rg, std::string_view sub) {
  return "/subscriptions/" + std::string(sub) + "/resourceGroups/" + std::string(rg) +
         "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + std::string(name);
}

std::string ClusterBody(std::string_view location) {
  const std::string net = "/subscriptions/" + std::string(kSub) + "/resourceGroups/network-rg/providers/";
  const std::string smi =
      "/subscriptions/" + std::string(kSub) +
      "/resourceGroups/identity-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi";
  return R"({"location":")" + std::string(location) + R"(","tags":{"env":"test"},
    "identity": {"type": "UserAssigned", "userAssignedIdentities": {
      ")" +
         smi + R"(": {}}},
    "properties": {
      "version": {"id": "4.20"},
      "platform": {
        "subnetId": ")" +
         net + R"(Microsoft.Network/virtualNetworks/v/subnets/a",
        "vnetIntegrationSubnetId": ")" +
         net + R"(Microsoft.Network/virtualNetworks/v/subnets/b",
        "networkSecurityGroupId": ")" +
         net + R"(Microsoft.Network/networkSecurityGroups/n",
        "operatorsAuthentication": {"userAssignedIdentities": {"controlPlaneOperators": {}, "dataPlaneOperators": {},
          "serviceManagedIdentity": ")" +
         smi + R"("}}
      }
    }})";
}

std::string NodePoolBody() {
  return R"({"location":"eastus","properties":{"version":{"id":"4.20.8"},
    "platform":{"subnetId":"/subscriptions/)" +
         std::string(kSub) +
         R"(/resourceGroups/network-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
                "vmSize":"Standard_D4s_v3"},
    "replicas":2}})";
}

std::string ExternalAuthBody() {
  return R"({"properties":{"issuer":{"url":"https://issuer.example.com","audiences":["a1"]},
    "claim":{"mappings":{"username":{"claim":"email"}}}}})";
}

Scenario::Scenario(FrontendOptions options, clusterservice::Client* cluster_service)
    : frontend_cs_(cluster_service != nullptr ? cluster_service : &cs) {
  auto opened = store::OpenStore("sqlite::memory:", {.clock = &clock, .indexes = arm::StoreIndexes()});
  if (!opened.ok()) throw std::runtime_error(opened.error().ToString());
  store = std::move(opened).value();
  auto fe = Frontend::Create(options, store.get(), frontend_cs_, &clock,
                             Logger(log, &clock, LogLevel::kDebug, "frontend"));
  if (!fe.ok()) throw std::runtime_error(fe.error().ToString());
  frontend = std::move(fe).value();
}

Response Scenario::Send(Call call) {
  Request req{call.method, call.target, 11};
  req.set(bhttp::field::host, "rp.example.com");
  req.set("Referer", "https://management.azure.com" + call.target);
  req.set("x-ms-home-tenant-id", kTenant);
  req.set("x-ms-client-object-id", kClient);
  req.set("x-ms-correlation-request-id", "corr-1");
  if (!call.body.empty()) req.set(bhttp::field::content_type, "application/json");
  for (const auto& [k, v] : call.headers) {
    if (v.empty()) {
      req.erase(k);
    } else {
      req.set(k, v);
    }
  }
  req.body() = std::move(call.body);
  req.prepare_payload();
  return frontend->Handle(std::move(req));
}

Response Scenario::Get(const std::string& t, std::map<std::string, std::string> h) {
  return Send({bhttp::verb::get, t, "", std::move(h)});
}
Response Scenario::Put(const std::string& t, std::string b, std::map<std::string, std::string> h) {
  return Send({bhttp::verb::put, t, std::move(b), std::move(h)});
}
Response Scenario::Patch(const std::string& t, std::string b, std::map<std::string, std::string> h) {
  return Send({bhttp::verb::patch, t, std::move(b), std::move(h)});
}
Response Scenario::Delete(const std::string& t, std::map<std::string, std::string> h) {
  return Send({bhttp::verb::delete_, t, "", std::move(h)});
}
Response Scenario::Post(const std::string& t, std::string b, std::map<std::string, std::string> h) {
  return Send({bhttp::verb::post, t, std::move(b), std::move(h)});
}

void Scenario::RegisterSubscription(std::string_view sub, std::string_view state) {
  std::string body = R"({"state":")" + std::string(state) +
                     R"(","registrationDate":"2025-01-01T00:00:00Z","properties":{"tenantId":")" +
                     std::string(kTenant) +
                     R"(","registeredFeatures":[{"name":"f1","state":"Registered"}]}})";
  auto r = Put("/subscriptions/" + std::string(sub) + "?api-version=2.0", body);
  ASSERT_EQ(r.result_int(), 200u) << r.body();
}

std::string Scenario::DumpStore() {
  std::string out;
  auto parts = store->ListPartitions(store::kResources, 10000, "");
  if (!parts.ok()) return "error: " + parts.error().ToString();
  for (const auto& p : parts->documents) {
    store::QueryOptions q;
    q.container = std::string(store::kResources);
    q.partition_key = p.partition_key.empty() ? p.id : p.partition_key;
    q.max_items = 10000;
    auto page = store->Query(q);
    if (!page.ok()) return "error: " + page.error().ToString();
    for (const auto& d : page->documents)
      out += d.partition_key + "/" + d.id + " " + d.etag + " " + ToJson(d.body) + "\n";
  }
  return out;
}

std::optional<arm::OperationDocument> Scenario::Operation(std::string_view id, std::string_view sub) {
  auto d = store->Read(store::kResources, arm::PartitionKey(sub), id);
  if (!d.ok()) return std::nullopt;
  auto op = arm::OperationDocument::FromBody(d->id, d->body);
  if (!op.ok()) return std::nullopt;
  return std::move(op).value();
}

std::optional<arm::ResourceDocument> Scenario::Resource(std::string_view resource_id, std::string_view sub) {
  auto d = store->Read(store::kResources, arm::PartitionKey(sub), arm::ResourceDocumentId(resource_id));
  if (!d.ok()) return std::nullopt;
  auto r = arm::ResourceDocument::FromBody(d->body);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

std::vector<arm::OperationDocument> Scenario::Operations(std::string_view sub) {
  std::vector<arm::OperationDocument> out;
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = arm::PartitionKey(sub);
  q.resource_type = std::string(arm::kOperationDocType);
  q.max_items = 10000;
  auto page = store->Query(q);
  if (!page.ok()) return out;
  for (const auto& d : page->documents) {
    auto op = arm::OperationDocument::FromBody(d.id, d.body);
    if (op.ok()) out.push_back(std::move(op).value());
  }
  return out;
}

void Scenario::FinishOperation(std::string_view operation_id, std::string_view status, std::string_view sub) {
  const std::string pk = arm::PartitionKey(sub);
  auto op = Operation(operation_id, sub);
  ASSERT_TRUE(op.has_value()) << operation_id;
  std::vector<store::PatchOp> patch = {
      {store::PatchOp::Kind::kSet, "/properties/status", json::value(status)},
      {store::PatchOp::Kind::kSet, "/properties/lastTransitionTime",
       json::value(FormatRfc3339(clock.Now(), true))}};
  if (status == "Failed") {
    patch.push_back({store::PatchOp::Kind::kSet, "/properties/error",
                     json::value(json::object{{"code", "ProvisionFailed"}, {"message", "it broke"}})});
  }
  std::string found;
  json::object observed;
  if (op->request == arm::OperationRequest::kCreate && op->internal_id.empty()) {
    if (auto object = ObjectOf(op->external_id, sub)) {
      found = std::string(GetString(*object, "href").value_or(""));
      observed =
          clusterservice::ObservedFromClusterService(arm::ParseResourceId(op->external_id)->kind, *object);
      patch.push_back(
          {store::PatchOp::Kind::kSet, std::string(arm::kPathOperationInternalId), json::value(found)});
    }
  }
  ASSERT_TRUE(store->Patch(store::kResources, pk, operation_id, patch).ok());
  if (op->request == arm::OperationRequest::kRequestCredential ||
      op->request == arm::OperationRequest::kRevokeCredentials) {
    return;
  }
  std::string doc_id = arm::ResourceDocumentId(op->external_id);
  auto res = Resource(op->external_id, sub);
  if (!res || res->active_operation_id != std::string(operation_id)) return;
  if (op->request == arm::OperationRequest::kDelete && status == "Succeeded") {
    ASSERT_TRUE(store->Delete(store::kResources, pk, doc_id).ok());
    return;
  }
  std::vector<store::PatchOp> rp = {
      {store::PatchOp::Kind::kSet, "/properties/provisioningState", json::value(status)}};
  if (arm::IsTerminalState(status))
    rp.push_back({store::PatchOp::Kind::kRemove, "/properties/activeOperationId", {}});
  if (!found.empty() && res->internal_id.empty()) {
    rp.push_back({store::PatchOp::Kind::kSet, std::string(arm::kPathInternalId), json::value(found)});
    const json::value* held = res->resource.if_contains("observed");
    if (!observed.empty() && (held == nullptr || !held->is_object() || held->as_object().empty()))
      rp.push_back({store::PatchOp::Kind::kSet, std::string(arm::kPathObserved), json::value(observed)});
  }
  ASSERT_TRUE(store->Patch(store::kResources, pk, doc_id, rp).ok());
}

std::optional<json::object> Scenario::ObjectOf(const std::string& resource_id, std::string_view sub) {
  auto id = arm::ParseResourceId(resource_id);
  if (!id.ok()) return std::nullopt;
  std::string parent;
  if (id->kind != arm::ResourceKind::kCluster) {
    auto cluster = Resource(id->Cluster().ToString(), sub);
    if (!cluster || cluster->internal_id.empty()) return std::nullopt;
    parent = cluster->internal_id;
  }
  auto listed = frontend_cs_->List(clusterservice::ClusterServiceCollection(id->kind, parent),
                                   clusterservice::SearchForResource(*id));
  if (!listed.ok()) return std::nullopt;
  for (const json::value& o : *listed) {
    if (auto href = GetString(o.as_object(), "href"); href && !href->empty()) return o.as_object();
  }
  return std::nullopt;
}

void Scenario::FinishAll(std::string_view status, std::string_view sub) {
  for (const auto& op : Operations(sub)) {
    if (!arm::IsTerminalState(op.status)) FinishOperation(op.id, status, sub);
  }
}

std::string OperationIdOf(const std::string& url) {
  std::string path = url.substr(0, url.find('?'));
  return path.substr(path.rfind('/') + 1);
}

std::string TargetOf(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? "/" : url.substr(slash);
}

json::value BodyOf(const Response& r) {
  auto parsed = ParseJson(r.body());
  if (!parsed.ok()) return json::value();
  return std::move(parsed).value();
}

}  // namespace hcprp::frontend::testing
