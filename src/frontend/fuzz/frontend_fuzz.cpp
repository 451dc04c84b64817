// libFuzzer target: request path routing and body decoding through the whole frontend pipeline.
// Input layout: first byte picks the method, the bytes up to the first '\n' are the target, the
// rest is the body. Any crash, sanitizer report or non-ARM answer is a bug.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>

#include "arm/store_indexes.h"
#include "clusterservice/testing/fake_cluster_service.h"
#include "frontend/frontend.h"

namespace {

using namespace hcprp;
namespace bhttp = boost::beast::http;

struct World {
  FakeClock clock;
  clusterservice::testing::FakeClusterService cs{nullptr, clusterservice::testing::ImmediateOptions()};
  std::unique_ptr<store::Store> store;
  std::unique_ptr<frontend::Frontend> fe;

  World() {
    store = std::move(store::OpenStore("sqlite::memory:", {.clock = &clock, .indexes = arm::StoreIndexes()}))
                .value();
    auto sink = std::make_shared<MemoryLogSink>();
    fe = std::move(
             frontend::Frontend::Create({}, store.get(), &cs, &clock, Logger(sink, &clock, LogLevel::kError)))
             .value();
    Request(bhttp::verb::put, "/subscriptions/1d3378d3-5a3f-4712-85a1-2485495dfc4b?api-version=2.0",
            R"({"state":"Registered","properties":{"tenantId":"t"}})");
  }

  frontend::Response Request(bhttp::verb method, std::string target, std::string body) {
    frontend::Request req{method, target, 11};
    req.set(bhttp::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
    return fe->Handle(std::move(req));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  if (size == 0) return 0;
  static constexpr bhttp::verb kMethods[] = {bhttp::verb::get,     bhttp::verb::put,  bhttp::verb::patch,
                                             bhttp::verb::delete_, bhttp::verb::post, bhttp::verb::head};
  bhttp::verb method = kMethods[data[0] % std::size(kMethods)];
  std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t nl = rest.find('\n');
  std::string target = "/" + rest.substr(0, nl);
  std::string body = nl == std::string::npos ? "" : rest.substr(nl + 1);
  for (char& c : target) {
    if (c == '\r' || c == '\0' || c == ' ') c = '_';
  }
  auto res = world->Request(method, target, body);
  if (res.find("x-ms-request-id") == res.end()) __builtin_trap();
  if (res.result_int() >= 400 && res.find("x-ms-error-code") == res.end()) __builtin_trap();
  if (method == bhttp::verb::head && !res.body().empty()) __builtin_trap();
  return 0;
}
