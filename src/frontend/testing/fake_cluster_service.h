// An in-memory Cluster Service for frontend tests: objects keyed by href, idempotent creates, a
// switch to fail the next calls, and a record of every call.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "clusterservice/client.h"

namespace hcprp::frontend::testing {

class FakeClusterService final : public clusterservice::Client {
 public:
  Result<json::object> Create(std::string_view collection_href, const json::object& body,
                              std::string_view idempotency_key) override;
  Result<json::object> Get(std::string_view href) override;
  Result<json::object> GetStatus(std::string_view href) override;
  Result<json::object> Update(std::string_view href, const json::object& patch) override;
  Status Delete(std::string_view href) override;
  Result<json::object> Action(std::string_view href, std::string_view action,
                              const json::object& body) override;
  Result<json::array> List(std::string_view collection_href, std::string_view search = "") override;
  Result<clusterservice::EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override;

  // Every call from now on (until cleared) fails with this error.
  void FailWith(std::optional<Error> error);
  // The next Create fails with this error (e.g. InvalidArgument with an OCM reason).
  void FailNextCreate(Error error);

  bool Exists(std::string_view href) const;
  size_t ObjectCount() const;
  std::vector<std::string> Calls() const;           // "Create /api/...", "Delete /api/...", ...
  std::vector<json::object> CreatedBodies() const;  // the body of every Create that made an object
  void SetVersions(json::array versions);

 private:
  mutable std::mutex mu_;
  std::map<std::string, json::object> objects_;
  std::map<std::string, std::string> by_key_;  // idempotency key -> href
  std::optional<Error> fail_all_;
  std::optional<Error> fail_next_create_;
  std::vector<std::string> calls_;
  std::vector<json::object> created_bodies_;
  std::optional<json::array> versions_;
  uint64_t next_id_ = 1;
};

}  // namespace hcprp::frontend::testing
