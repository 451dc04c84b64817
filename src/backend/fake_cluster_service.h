// An in-memory Cluster Service for backend tests: the client.h interface plus drivers a test uses
// to move objects through their states. Every state change is published on the event stream
// (unless the stream is disabled, then WatchEvents answers kUnavailable like a Cluster Service
// without one). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "clusterservice/client.h"
#include "core/clock.h"

namespace hcprp::backend::testing {

class FakeClusterService final : public clusterservice::Client {
 public:
  explicit FakeClusterService(const Clock* clock) : clock_(clock) {}

  // clusterservice::Client
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

  // Drivers. AddObject creates an object directly (state "validating" unless given) and returns its
  // href; `collection` is e.g. kApiPrefix + "/clusters".
  std::string AddObject(std::string_view collection, std::string_view state = "validating");
  void SetState(std::string_view href, std::string_view state, std::string_view error_code = "",
                std::string_view error_message = "");
  // Finishes a deletion: the object and everything under it disappear ("deleted" events).
  void Remove(std::string_view href);
  // Finishes every deletion in progress (objects in "uninstalling").
  size_t RemoveUninstalling();
  void SetField(std::string_view href, std::string_view key, json::value value);
  // Replaces the object's status.conditions and publishes the change (state unchanged).
  void SetConditions(std::string_view href, json::array conditions);
  bool Exists(std::string_view href) const;
  std::string StateOf(std::string_view href) const;
  void SetEventsEnabled(bool enabled);
  // Create answers 400 with this message while set.
  void RejectCreates(std::string message);

  int creates() const { return creates_; }
  int deletes() const { return deletes_; }
  int status_reads() const { return status_reads_; }
  size_t ObjectCount() const;

 private:
  struct Object {
    std::string kind;
    json::object fields;  // id, href, kind, creation_timestamp, ... (status kept apart)
    std::string state;
    std::string error_code;
    std::string error_message;
    json::array conditions;  // status.conditions, in events
  };
  void PublishLocked(const std::string& href, const Object* o);  // REQUIRES mu_
  std::string NewHrefLocked(std::string_view collection);        // REQUIRES mu_

  const Clock* const clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Object> objects_;      // guarded by mu_
  std::map<std::string, std::string> by_key_;  // idempotency key -> href; guarded by mu_
  std::vector<clusterservice::Event> events_;  // guarded by mu_
  uint64_t next_sequence_ = 1;                 // guarded by mu_
  uint64_t next_id_ = 1;                       // guarded by mu_
  bool events_enabled_ = true;                 // guarded by mu_
  std::string reject_creates_;                 // guarded by mu_
  std::atomic<int> creates_{0}, deletes_{0}, status_reads_{0};
};

}  // namespace hcprp::backend::testing
