// A mutex the compiler can reason about: Clang's thread-safety analysis (-Wthread-safety) checks that
// members declared HCPRP_GUARDED_BY(mu) are touched only with `mu` held and that functions declared
// HCPRP_REQUIRES(mu) are called with it held. Other compilers see plain std::mutex wrappers.
//
//   Mutex mu_;
//   int n_ HCPRP_GUARDED_BY(mu_);
//   void Bump() { MutexLock lock(mu_); ++n_; }
//
// CondVar waits on a MutexLock (which is BasicLockable, so std::condition_variable_any accepts it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define HCPRP_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define HCPRP_THREAD_ANNOTATION_(x)
#endif

#define HCPRP_CAPABILITY(x) HCPRP_THREAD_ANNOTATION_(capability(x))
#define HCPRP_SCOPED_CAPABILITY HCPRP_THREAD_ANNOTATION_(scoped_lockable)
#define HCPRP_GUARDED_BY(x) HCPRP_THREAD_ANNOTATION_(guarded_by(x))
#define HCPRP_PT_GUARDED_BY(x) HCPRP_THREAD_ANNOTATION_(pt_guarded_by(x))
#define HCPRP_REQUIRES(...) HCPRP_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define HCPRP_REQUIRES_SHARED(...) HCPRP_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define HCPRP_EXCLUDES(...) HCPRP_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define HCPRP_ACQUIRE(...) HCPRP_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define HCPRP_RELEASE(...) HCPRP_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define HCPRP_ACQUIRE_SHARED(...) HCPRP_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define HCPRP_RELEASE_SHARED(...) HCPRP_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define HCPRP_TRY_ACQUIRE(...) HCPRP_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define HCPRP_NO_THREAD_SAFETY_ANALYSIS HCPRP_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace hcprp {

class HCPRP_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() HCPRP_ACQUIRE() { mu_.lock(); }
  void unlock() HCPRP_RELEASE() { mu_.unlock(); }
  bool try_lock() HCPRP_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope. A CondVar may release and re-acquire it while waiting.
class HCPRP_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) HCPRP_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() HCPRP_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // BasicLockable, for CondVar only.
  void lock() HCPRP_NO_THREAD_SAFETY_ANALYSIS { mu_.lock(); }
  void unlock() HCPRP_NO_THREAD_SAFETY_ANALYSIS { mu_.unlock(); }

 private:
  Mutex& mu_;
};

// A readers-writer mutex: many ReaderMutexLocks or one WriterMutexLock at a time.
class HCPRP_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() HCPRP_ACQUIRE() { mu_.lock(); }
  void unlock() HCPRP_RELEASE() { mu_.unlock(); }
  void lock_shared() HCPRP_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() HCPRP_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (reading) for its scope.
class HCPRP_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) HCPRP_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderMutexLock() HCPRP_RELEASE() { mu_.unlock_shared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex exclusively (writing) for its scope.
class HCPRP_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) HCPRP_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterMutexLock() HCPRP_RELEASE() { mu_.unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable for Mutex. Predicates run with the mutex held.
class CondVar {
 public:
  void NotifyAll() { cv_.notify_all(); }
  void NotifyOne() { cv_.notify_one(); }
  template <typename Rep, typename Period, typename Pred>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> d, Pred pred) {
    return cv_.wait_for(lock, d, std::move(pred));
  }
  template <typename Clock, typename Dur, typename Pred>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Dur> t, Pred pred) {
    return cv_.wait_until(lock, t, std::move(pred));
  }
  template <typename Pred>
  void Wait(MutexLock& lock, Pred pred) {
    cv_.wait(lock, std::move(pred));
  }
  // Waits for one notification (or a spurious wake-up): the caller re-checks its condition.
  void Wait(MutexLock& lock) { cv_.wait(lock); }
  // As Wait, for at most `d`: std::cv_status::timeout when it ran out.
  template <typename Rep, typename Period>
  std::cv_status WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> d) {
    return cv_.wait_for(lock, d);
  }
  // As Wait, until `t` at the latest: std::cv_status::timeout when it passed.
  template <typename Clock, typename Dur>
  std::cv_status WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Dur> t) {
    return cv_.wait_until(lock, t);
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace hcprp
