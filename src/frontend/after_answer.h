// Work a request hands over so that its answer need not wait for it. The frontend's create records
// the Cluster Service's internal ID this way: the 201 waits only for the commit of the resource and
// its Accepted operation (docs/architecture.md, "A create, end to end").
//
// Work handed over is not durable: a process that stops before it ran loses it. Only work that
// something else redoes may be handed over (the backend's create recovery records a lost internal
// ID again, with the same idempotency key).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace hcprp::frontend {

class AfterAnswer {
 public:
  virtual ~AfterAnswer() = default;
  // Takes `work` to run later on another thread. False when it cannot (full or stopped): the caller
  // then runs it itself, before answering. Thread-safe.
  virtual bool Post(std::function<void()> work) = 0;
};

struct AfterAnswerPoolOptions {
  // Threads running the work. Store writes block until their commit; on an engine that shares a
  // commit between concurrent writes (SQLite's group commit, PostgreSQL's WAL flush), several
  // threads let the writes of several requests share one.
  int threads = 8;
  // Work waiting beyond this is refused (Post returns false), so a store slower than the request
  // rate slows the answers down instead of growing a queue a crash would lose.
  size_t max_pending = 1024;
};

// Runs posted work on its own threads in the order posted. Thread-safe.
class AfterAnswerPool final : public AfterAnswer {
 public:
  static std::unique_ptr<AfterAnswerPool> Start(AfterAnswerPoolOptions options);
  // Stop().
  ~AfterAnswerPool() override;
  AfterAnswerPool(const AfterAnswerPool&) = delete;
  AfterAnswerPool& operator=(const AfterAnswerPool&) = delete;

  bool Post(std::function<void()> work) override;
  // Returns once everything posted before the call has run.
  void Drain();
  // Runs the work still waiting, then joins the threads; Post refuses from the call on. Idempotent.
  void Stop();
  // Work posted and not finished yet (waiting or running).
  size_t Unfinished() const;

 private:
  explicit AfterAnswerPool(AfterAnswerPoolOptions options);
  void Run();

  const AfterAnswerPoolOptions options_;
  mutable Mutex mu_;
  CondVar changed_;
  std::deque<std::function<void()>> pending_ HCPRP_GUARDED_BY(mu_);
  size_t running_ HCPRP_GUARDED_BY(mu_) = 0;
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // started by Start, joined by the first Stop
  Mutex stop_mu_;                     // serialises Stop
};

}  // namespace hcprp::frontend
