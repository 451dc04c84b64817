// Scenario test harness: a Frontend over an in-memory SQLite store and a fake Cluster Service, a
// request builder, a store dump for "nothing changed" checks, and a stand-in for the backend that
// moves operations to terminal states.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arm/documents.h"
#include "clusterservice/testing/fake_cluster_service.h"
#include "core/clock.h"
#include "core/log.h"
#include "frontend/frontend.h"
#include "store/store.h"

namespace hcprp::frontend::testing {

inline constexpr std::string_view kSub = "1d3378d3-5a3f-4712-85a1-2485495dfc4b";
inline constexpr std::string_view kTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
inline constexpr std::string_view kClient = "11111111-2222-3333-4444-555555555555";
inline constexpr std::string_view kStable = "2026-10-01";
inline constexpr std::string_view kPreview = "2024-06-10-preview";

std::string ClusterPath(std::string_view name, std::string_view rg = "rg1", std::string_view sub = kSub);
std::string ClusterBody(std::string_view location = "eastus");
std::string NodePoolBody();
std::string ExternalAuthBody();

struct Call {
  boost::beast::http::verb method;
  std::string target;  // path?query
  std::string body;
  std::map<std::string, std::string> headers;  // overrides; "" value removes a default header
};

class Scenario {
 public:
  // `cluster_service`: the Cluster Service the frontend calls instead of `cs` (e.g. an HttpClient to the
  // simulator); not owned.
  explicit Scenario(FrontendOptions options = {}, clusterservice::Client* cluster_service = nullptr);

  Response Send(Call call);
  Response Get(const std::string& target, std::map<std::string, std::string> headers = {});
  Response Put(const std::string& target, std::string body, std::map<std::string, std::string> headers = {});
  Response Patch(const std::string& target, std::string body,
                 std::map<std::string, std::string> headers = {});
  Response Delete(const std::string& target, std::map<std::string, std::string> headers = {});
  Response Post(const std::string& target, std::string body = "",
                std::map<std::string, std::string> headers = {});

  void RegisterSubscription(std::string_view sub = kSub, std::string_view state = "Registered");

  // The store's resources container, every partition, as "pk/id etag body" lines.
  std::string DumpStore();

  // Backend stand-in. Moves an operation to `status` (and its resource's provisioningState, clearing
  // activeOperationId when terminal); a Succeeded Delete removes the resource document. A create's
  // first change records the internal ID of the object the create made, as the backend does.
  void FinishOperation(std::string_view operation_id, std::string_view status = "Succeeded",
                       std::string_view sub = kSub);
  // Finishes every non-terminal operation of the subscription with `status`.
  void FinishAll(std::string_view status = "Succeeded", std::string_view sub = kSub);
  std::optional<arm::OperationDocument> Operation(std::string_view operation_id, std::string_view sub = kSub);
  std::optional<arm::ResourceDocument> Resource(std::string_view resource_id, std::string_view sub = kSub);
  std::vector<arm::OperationDocument> Operations(std::string_view sub = kSub);

  FakeClock clock;
  clusterservice::testing::FakeClusterService cs{&clock, clusterservice::testing::ImmediateOptions()};
  std::shared_ptr<MemoryLogSink> log = std::make_shared<MemoryLogSink>();
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Frontend> frontend;

 private:
  // The Cluster Service object made for the resource, found by its names.
  std::optional<json::object> ObjectOf(const std::string& resource_id, std::string_view sub);

  clusterservice::Client* frontend_cs_;  // the Cluster Service the frontend calls
};

// The last path segment of an Azure-AsyncOperation or Location URL (the operation ID).
std::string OperationIdOf(const std::string& url);
// The path?query of an absolute URL.
std::string TargetOf(const std::string& url);
json::value BodyOf(const Response& r);

}  // namespace hcprp::frontend::testing
