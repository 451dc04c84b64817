// The operations console's model of the store: every subscription, resource and operation as a
// small summary, kept in memory from one initial scan and then from the store's change feed, read by
// one thread however many viewers there are. Viewers page and search it and wait for its events
// (server-sent events in the admin API) without touching the store: the store is read once per
// change, not once per viewer.
//
// With LiveViewOptions::operation_metrics it also records the operation metrics (started, ended by
// request and terminal state, time in each state, oldest in flight, stuck) into the registry. Only
// one process of a deployment should: the admin listener turns it on where a backend runs.
//
// Thread-safe; Stop() (or the destructor) joins the reader.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::admin {

struct LiveViewOptions {
  std::chrono::milliseconds feed_wait{1000};  // long-poll of the change feed
  size_t event_ring = 4096;                   // events kept for viewers that reconnect
  size_t page_size = 500;                     // store page size of the initial scan and the feed
  bool operation_metrics = false;
  Duration stuck_after = std::chrono::minutes(10);  // an operation without a change this long is stuck
  metrics::Registry* metrics = nullptr;             // not owned; null: no metrics
  bool start_thread = true;                         // false: tests call PumpOnce()
};

// Query of ListResources/ListOperations.
struct ListQuery {
  std::string type;          // "cluster", "nodePool", "externalAuth" or "" for all
  std::string subscription;  // "" for all
  std::string search;        // case-insensitive substring of the resource ID; "" for all
  bool in_flight_only = false;
  size_t offset = 0;
  size_t limit = 50;
};

struct Events {
  std::vector<std::pair<uint64_t, std::string>> events;  // (id, JSON)
  uint64_t last = 0;                                     // the newest event id
  bool reset = false;  // `after` is older than the ring: the viewer must reload
};

class LiveView {
 public:
  // Starts the feed reader, which first scans the store (partitions, then each partition's
  // documents); until the scan is done the model holds part of the store. With
  // options.start_thread false the scan is made here, before Start returns (its error is returned).
  static Result<std::unique_ptr<LiveView>> Start(LiveViewOptions options, store::Store* store,
                                                 const Clock* clock, Logger logger);
  ~LiveView();
  void Stop();

  // Reads the change feed once without waiting; returns how many changes were applied.
  Result<size_t> PumpOnce();

  // The events after `after`, waiting up to `wait` for the first one.
  Events WaitEvents(uint64_t after, std::chrono::milliseconds wait);

  json::object ListResources(const ListQuery& q) const;
  json::object ListOperations(const ListQuery& q) const;
  json::array ListSubscriptions() const;
  // One operation with its timeline, or nullopt.
  std::optional<json::object> Operation(std::string_view subscription, std::string_view id) const;
  // Counts for the console's header and charts: resources by type, operations by status, in flight.
  json::object Summary() const;

  // Store calls made so far (the initial scan and the feed reader's), for tests.
  uint64_t store_calls() const { return store_calls_; }

 private:
  struct Op {
    json::object view;
    std::vector<std::pair<std::string, TimePoint>> timeline;  // status, since
    std::string request;
    std::string status;
    TimePoint last_change{};
    TimePoint start{};
  };
  LiveView(LiveViewOptions options, store::Store* store, const Clock* clock, Logger logger);
  Status Load();
  void LoadThenRun();  // the reader thread: Load (again after a failure) then Run
  void Run();
  // Applies one document (or its deletion) to the model and queues its event.
  void Apply(const store::Document& doc, bool deleted, bool is_new, bool during_load) HCPRP_REQUIRES(mu_);
  void Emit(std::string kind, std::string change, const json::object& item) HCPRP_REQUIRES(mu_);
  json::object OpJson(const Op& op) const;
  void RegisterMetrics(metrics::Registry& r);

  // Constant after construction.
  const LiveViewOptions options_;
  store::Store* const store_;
  const Clock* const clock_;
  const Logger logger_;
  metrics::Family<metrics::Counter>* started_ = nullptr;
  metrics::Family<metrics::Counter>* ended_ = nullptr;
  metrics::Family<metrics::Histogram>* state_seconds_ = nullptr;

  std::atomic<uint64_t> store_calls_{0};
  std::string continuation_;  // only the reader thread (or PumpOnce) uses it

  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, json::object> resources_ HCPRP_GUARDED_BY(mu_);  // lower-cased resource ID -> view
  std::map<std::string, std::string> resource_docs_;  // pk/doc id -> lower-cased resource ID
  std::map<std::string, json::object> subscriptions_ HCPRP_GUARDED_BY(mu_);  // pk -> view
  std::map<std::string, Op> operations_ HCPRP_GUARDED_BY(mu_);               // pk/id -> op
  std::deque<std::pair<uint64_t, std::string>> ring_ HCPRP_GUARDED_BY(mu_);
  uint64_t next_event_ HCPRP_GUARDED_BY(mu_) = 1;
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hcprp::admin
