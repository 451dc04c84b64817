// A Client that forwards every call to another Client, the base of decorators (as
// store::ForwardingStore is for stores): a decorator overrides the calls it watches or alters and
// inherits the rest. The target is not owned and must outlive the wrapper. Thread-safe when the
// target is and the subclass's overrides are.
#pragma once

#include "clusterservice/client.h"

namespace hcprp::clusterservice {

class ForwardingClient : public Client {
 public:
  explicit ForwardingClient(Client* target) : target_(target) {}
  Client* target() const { return target_; }

  Result<json::object> Create(std::string_view collection_href, const json::object& body,
                              std::string_view idempotency_key) override {
    return target_->Create(collection_href, body, idempotency_key);
  }
  Result<json::object> Get(std::string_view href) override { return target_->Get(href); }
  Result<json::object> GetStatus(std::string_view href) override { return target_->GetStatus(href); }
  Result<json::object> Update(std::string_view href, const json::object& patch) override {
    return target_->Update(href, patch);
  }
  Status Delete(std::string_view href) override { return target_->Delete(href); }
  Result<json::object> Action(std::string_view href, std::string_view action,
                              const json::object& body) override {
    return target_->Action(href, action, body);
  }
  Result<json::array> List(std::string_view collection_href, std::string_view search = "") override {
    return target_->List(collection_href, search);
  }
  Result<EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override {
    return target_->WatchEvents(after, timeout);
  }

 private:
  Client* const target_;
};

}  // namespace hcprp::clusterservice
