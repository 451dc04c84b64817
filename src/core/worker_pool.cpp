#include "core/worker_pool.h"

namespace hcprp {

WorkerPool::WorkerPool(size_t threads) {
  for (size_t i = 1; i < threads; ++i) helpers_.emplace_back([this] { Help(); });
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  for (std::thread& t : helpers_) t.join();
}

void WorkerPool::Drain(const std::function<void(size_t)>& fn, size_t count) {
  for (size_t i = next_.fetch_add(1); i < count; i = next_.fetch_add(1)) fn(i);
}

void WorkerPool::ForEach(size_t count, const std::function<void(size_t)>& fn) {
  MutexLock call(call_mu_);
  if (helpers_.empty() || count <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  {
    MutexLock lock(mu_);
    next_ = 0;
    fn_ = &fn;
    count_ = count;
    ++loop_;
  }
  wake_.NotifyAll();
  Drain(fn, count);
  MutexLock lock(mu_);
  fn_ = nullptr;  // a helper waking from now on does not join this loop
  idle_.Wait(lock, [this]() HCPRP_REQUIRES(mu_) { return busy_ == 0; });
}

void WorkerPool::Help() {
  uint64_t joined = 0;  // the last loop this helper joined
  while (true) {
    const std::function<void(size_t)>* fn = nullptr;
    size_t count = 0;
    {
      MutexLock lock(mu_);
      wake_.Wait(lock,
                 [&]() HCPRP_REQUIRES(mu_) { return stopping_ || (fn_ != nullptr && loop_ != joined); });
      if (stopping_) return;
      joined = loop_;
      fn = fn_;
      count = count_;
      ++busy_;
    }
    Drain(*fn, count);
    MutexLock lock(mu_);
    if (--busy_ == 0) idle_.NotifyAll();
  }
}

}  // namespace hcprp
