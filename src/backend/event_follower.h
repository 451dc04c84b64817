// The backend's application of Cluster Service events (private to src/backend): where the stream was
// read to, whether it works, and each event applied to the operations of its object (a transition
// through the writer, a check when a status read must decide, the object's conditions). Where the
// stream was read to is kept in the store (the locks container, one record per backend name), so
// that a backend restarted under the same name applies the events it missed. Thread-safe; one
// PumpOnce(), Resume() or Position() at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/condition_sync.h"
#include "backend/counters.h"
#include "backend/divergence.h"
#include "backend/late_objects.h"
#include "backend/operation_index.h"
#include "backend/operation_writer.h"
#include "backend/status_checks.h"
#include "backend/version_controller.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/task_pool.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::backend {

// For each event of one page, in stream order, whether a later event of the page is of the same object
// (href). Each event carries the whole object, so the later one's status supersedes the earlier's:
// the status of an object without an operation in flight is copied once a page, from its last event
// (one commit where an instant upgrade's two state changes arrive together). Events that move an
// operation are all applied, in order.
std::vector<bool> SupersededInPage(const std::vector<const clusterservice::Event*>& events);

class EventFollower {
 public:
  // Not owned; all must outlive this. `event_to_commit` may be null (no metrics).
  EventFollower(const BackendOptions* options, store::Store* store, clusterservice::Client* cs,
                const Clock* clock, OperationIndex* index, StatusChecks* checks, LateObjects* late,
                OperationWriter* writer, ConditionSync* conditions, VersionController* versions,
                Counters* counters, metrics::Histogram* event_to_commit)
      : options_(options),
        store_(store),
        cs_(cs),
        clock_(clock),
        index_(index),
        checks_(checks),
        late_(late),
        writer_(writer),
        conditions_(conditions),
        versions_(versions),
        counters_(counters),
        event_to_commit_(event_to_commit),
        apply_pool_(static_cast<int>(std::max<size_t>(1, options->event_concurrency)),
                    static_cast<int>(std::max<size_t>(1, options->event_concurrency))) {}

  // Moves past the stream's history without applying it (a resync reads the current states);
  // the stream's error when it cannot be read.
  Status Position();
  // At the first call, continues from the place an earlier run under this backend's name saved
  // (true; the next pages apply what it missed; a kPreconditionFailed from PumpOnce() then says the
  // stream no longer reaches back). Otherwise Position() (false). The store's or the stream's error.
  Result<bool> Resume();
  // Reads, once, the time the store heard nothing from any backend before this one started
  // (divergence.h): before this backend saves a place of its own (Resume() calls it first). The
  // store's error, and then the next call reads again.
  Status ReadGap();
  // That time; nullopt before ReadGap() succeeded, or when no backend ever saved a place.
  std::optional<RestoreGap> Gap() const;
  // Saves where the stream was read to, when it moved since the last save and `force` or a second
  // passed since then (a restart re-applies at most that much; applying an event again is harmless).
  void SavePlace(bool force);
  // Applies one page of events, waiting up to `wait` for it; the number of events. While it applies
  // a page it reads the next, without a wait: the next call applies that page when it holds events
  // (else it reads again, waiting), so reading the stream overlaps applying it.
  Result<size_t> PumpOnce(std::chrono::milliseconds wait);

  // The stream works (its last read succeeded, or it has not failed with kUnavailable since).
  bool Available() const { return available_; }
  // Whether events may have been missed since the last call (a failed read, a repositioned stream):
  // the next resync then checks every operation. Clears it.
  bool TakeInterrupted() { return interrupted_.exchange(false); }
  // Marks events as possibly missed (a resync that should have checked everything failed).
  void MarkInterrupted() { interrupted_ = true; }

 private:
  uint64_t After() const;
  // The page after After(): the prefetched one when it is that page and holds events, else read now,
  // waiting up to `wait`.
  Result<clusterservice::EventPage> NextPage(std::chrono::milliseconds wait);
  // Starts reading the page after `page` (when it held events), without waiting.
  void PrefetchAfter(const clusterservice::EventPage& page);
  void Advance(uint64_t last);
  // ApplyEvent for each event of a page, on apply_pool_ (options_.event_concurrency threads, see there).
  void ApplyEvents(const std::vector<clusterservice::Event>& events);
  // `superseded`: a later event of the same page is of the same object (SupersededInPage). An event of
  // an object no operation is in flight for, that a late create request made, deletes it (LateObjects).
  void ApplyEvent(const clusterservice::Event& event, bool superseded);
  // An event of an object no operation is in flight for: the object is being deleted while its
  // resource is idle (FollowsServiceDelete): gives the resource a Delete operation.
  void FollowIdleDelete(const clusterservice::Event& event);

  // Constant after construction.
  const BackendOptions* const options_;
  store::Store* const store_;
  clusterservice::Client* const cs_;
  const Clock* const clock_;
  OperationIndex* const index_;
  StatusChecks* const checks_;
  LateObjects* const late_;
  OperationWriter* const writer_;
  ConditionSync* const conditions_;
  VersionController* const versions_;
  Counters* const counters_;
  metrics::Histogram* const event_to_commit_;
  TaskPool apply_pool_;

  std::atomic<bool> available_{false};
  std::atomic<bool> interrupted_{true};
  mutable Mutex mu_;
  uint64_t after_ HCPRP_GUARDED_BY(mu_) = 0;
  bool gap_read_ HCPRP_GUARDED_BY(mu_) = false;
  std::optional<RestoreGap> gap_ HCPRP_GUARDED_BY(mu_);
  // Only the thread calling PumpOnce(), Resume() and Position(): the read of the page after the one
  // being applied, started before applying it (its `after`), so that reading overlaps applying.
  struct Prefetch {
    uint64_t after = 0;
    std::future<Result<clusterservice::EventPage>> page;
  };
  std::optional<Prefetch> prefetch_;
  // Only the thread calling Resume() and SavePlace().
  bool resume_tried_ = false;
  uint64_t saved_after_ = 0;
  std::chrono::steady_clock::time_point saved_at_{};
};

}  // namespace hcprp::backend
