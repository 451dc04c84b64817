// The one in-memory Cluster Service for unit tests (frontend, backend, admin) and benchmarks: the
// client.h interface, drivers that move objects through their states, fault switches, and a record of
// every call. Every state change is published on the event stream (unless the stream is disabled; then
// WatchEvents answers kUnavailable like a Cluster Service without one). Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/mutex.h"

namespace hcprp::clusterservice::testing {

struct FakeClusterServiceOptions {
  // Delete removes the object and everything under it at once; otherwise they stay "uninstalling"
  // until Remove() or RemoveUninstalling() (how the backend's tests drive a deletion).
  bool deletes_at_once = false;
  // A created cluster (a body with "region") gets API and console URLs, a DNS domain and an issuer
  // URL, as the real service assigns them.
  bool assign_endpoints = false;
  std::string href_stem = "fake";  // created hrefs are <collection>/<stem><n>
  std::string initial_state = "validating";
  bool events = true;
};

// What frontend tests and benchmarks use: no event stream, deletions done at once, endpoints assigned,
// hrefs <collection>/obj<n>, new objects "pending".
FakeClusterServiceOptions ImmediateOptions();

class FakeClusterService final : public Client {
 public:
  // `clock` (not owned, must outlive the fake; null: the system clock) stamps creation times.
  explicit FakeClusterService(const Clock* clock = nullptr, FakeClusterServiceOptions options = {})
      : clock_(clock != nullptr ? clock : &system_clock_),
        options_(std::move(options)),
        events_enabled_(options_.events) {}

  // Client
  Result<json::object> Create(std::string_view collection_href, const json::object& body,
                              std::string_view idempotency_key) override;
  Result<json::object> Get(std::string_view href) override;
  Result<json::object> GetStatus(std::string_view href) override;
  Result<json::object> Update(std::string_view href, const json::object& patch) override;
  Status Delete(std::string_view href) override;
  Result<json::object> Action(std::string_view href, std::string_view action,
                              const json::object& body) override;
  Result<json::array> List(std::string_view collection_href, std::string_view search = "") override;
  Result<EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override;

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
  void SetEventsEnabled(bool enabled);
  // Drops the event history as a restarted service does: a reader behind its last sequence gets
  // kPreconditionFailed until it reads from kLatestEvents.
  void ForgetEventHistory();
  // The versions GET and List of <prefix>/versions answer.
  void SetVersions(json::array versions);

  // Faults. Every call from now on (until cleared) fails with `error` (WatchEvents excepted).
  void FailWith(std::optional<Error> error);
  // The next Create fails with this error (e.g. InvalidArgument with an OCM reason).
  void FailNextCreate(Error error);
  // Create answers 400 with this message while set (empty: cleared).
  void RejectCreates(std::string message);
  // Update answers this error while set (nullopt: cleared); other calls are not affected.
  void FailUpdatesWith(std::optional<Error> error);

  bool Exists(std::string_view href) const;
  std::string StateOf(std::string_view href) const;
  size_t ObjectCount() const;
  std::vector<std::string> Calls() const;           // "Create /api/...", "Delete /api/...", ...
  std::vector<json::object> CreatedBodies() const;  // the body of every Create that made an object
  int creates() const { return creates_; }
  int deletes() const { return deletes_; }
  int status_reads() const { return status_reads_; }

 private:
  struct Object {
    std::string kind;
    json::object fields;  // id, href, kind, creation_timestamp, ... (status kept apart)
    std::string state;
    std::string error_code;
    std::string error_message;
    json::array conditions;  // status.conditions, in events
  };
  // The failure every call answers now, recording the call.
  std::optional<Error> CallLocked(std::string call) HCPRP_REQUIRES(mu_);
  void PublishLocked(const std::string& href, const Object* o) HCPRP_REQUIRES(mu_);
  std::string NewHrefLocked(std::string_view collection) HCPRP_REQUIRES(mu_);
  void RemoveLocked(std::string_view href) HCPRP_REQUIRES(mu_);
  json::object RenderLocked(const Object& o) const HCPRP_REQUIRES(mu_);

  const SystemClock system_clock_;
  const Clock* const clock_;
  const FakeClusterServiceOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, Object> objects_ HCPRP_GUARDED_BY(mu_);
  std::map<std::string, std::string> by_key_ HCPRP_GUARDED_BY(mu_);  // idempotency key -> href
  std::vector<Event> events_ HCPRP_GUARDED_BY(mu_);
  uint64_t forgotten_through_ HCPRP_GUARDED_BY(mu_) = 0;  // the last sequence ForgetEventHistory dropped
  uint64_t next_sequence_ HCPRP_GUARDED_BY(mu_) = 1;
  uint64_t next_id_ HCPRP_GUARDED_BY(mu_) = 1;
  bool events_enabled_ HCPRP_GUARDED_BY(mu_);
  std::string reject_creates_ HCPRP_GUARDED_BY(mu_);
  std::optional<Error> fail_all_ HCPRP_GUARDED_BY(mu_);
  std::optional<Error> fail_next_create_ HCPRP_GUARDED_BY(mu_);
  std::optional<Error> fail_updates_ HCPRP_GUARDED_BY(mu_);
  std::optional<json::array> versions_ HCPRP_GUARDED_BY(mu_);
  std::vector<std::string> calls_ HCPRP_GUARDED_BY(mu_);
  std::vector<json::object> created_bodies_ HCPRP_GUARDED_BY(mu_);
  std::atomic<int> creates_{0}, deletes_{0}, status_reads_{0};
};

}  // namespace hcprp::clusterservice::testing
