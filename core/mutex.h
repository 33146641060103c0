// Mutex, MutexLock and CondVar with the subset of absl::Mutex's API zcoll uses,
// built on std::mutex and std::condition_variable.
//
// Why not absl::Mutex: Debian's abseil is not built with ThreadSanitizer, so its
// Mutex (futexes and spinning inside an uninstrumented library) is invisible to
// --config=tsan, and every access it protects is reported as a race. std::mutex
// goes through pthread, which ThreadSanitizer intercepts. Use these in zcoll code.

#ifndef ZCOLL_CORE_MUTEX_H_
#define ZCOLL_CORE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace zcoll {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mutex_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mutex_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mutex_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) ABSL_EXCLUSIVE_LOCK_FUNCTION(mutex) : mutex_(mutex) {
    mutex_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mutex_;
};

class CondVar {
 public:
  // Each wait requires `mutex` held; it is held again on return.
  void Wait(Mutex* mutex) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    condition_.wait(lock);
    lock.release();
  }
  // True if the timeout passed (like absl::CondVar).
  bool WaitWithTimeout(Mutex* mutex, absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    const bool timed_out =
        condition_.wait_for(lock, absl::ToChronoNanoseconds(timeout)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  bool WaitWithDeadline(Mutex* mutex, absl::Time deadline) {
    return WaitWithTimeout(mutex, deadline - absl::Now());
  }
  void Signal() { condition_.notify_one(); }
  void SignalAll() { condition_.notify_all(); }

 private:
  std::condition_variable condition_;
};

}  // namespace zcoll

#endif  // ZCOLL_CORE_MUTEX_H_
