#include "frontend/after_answer.h"

#include <algorithm>
#include <utility>

namespace hcprp::frontend {

AfterAnswerPool::AfterAnswerPool(AfterAnswerPoolOptions options) : options_(options) {}

std::unique_ptr<AfterAnswerPool> AfterAnswerPool::Start(AfterAnswerPoolOptions options) {
  options.threads = std::max(options.threads, 1);
  options.max_pending = std::max<size_t>(options.max_pending, 1);
  std::unique_ptr<AfterAnswerPool> pool(new AfterAnswerPool(options));
  for (int i = 0; i < options.threads; ++i) pool->threads_.emplace_back([p = pool.get()] { p->Run(); });
  return pool;
}

AfterAnswerPool::~AfterAnswerPool() { Stop(); }

bool AfterAnswerPool::Post(std::function<void()> work) {
  {
    MutexLock lock(mu_);
    if (stopping_ || pending_.size() >= options_.max_pending) return false;
    pending_.push_back(std::move(work));
  }
  changed_.NotifyAll();
  return true;
}

void AfterAnswerPool::Drain() {
  MutexLock lock(mu_);
  changed_.Wait(lock, [this]() HCPRP_REQUIRES(mu_) { return pending_.empty() && running_ == 0; });
}

void AfterAnswerPool::Stop() {
  MutexLock stop(stop_mu_);
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  changed_.NotifyAll();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

size_t AfterAnswerPool::Unfinished() const {
  MutexLock lock(mu_);
  return pending_.size() + running_;
}

void AfterAnswerPool::Run() {
  MutexLock lock(mu_);
  for (;;) {
    changed_.Wait(lock, [this]() HCPRP_REQUIRES(mu_) { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and nothing is left to run
    std::function<void()> work = std::move(pending_.front());
    pending_.pop_front();
    ++running_;
    lock.unlock();
    work();
    lock.lock();
    --running_;
    changed_.NotifyAll();
  }
}

}  // namespace hcprp::frontend
