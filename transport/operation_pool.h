// Recycles the records providers keep per posted operation, and links the live ones.
//
// Posting an operation then allocates nothing once the pool has warmed up, and the
// operations with a dead peer, or still pending at teardown, can be walked without a
// hash set. T must have `T* pool_previous` and `T* pool_next` members, which the pool
// owns, and be default-constructible; Acquire returns a record reset to T{} (with the
// pool's links).
//
// Not thread-safe (owned by one Transport).

#ifndef ZCOLL_TRANSPORT_OPERATION_POOL_H_
#define ZCOLL_TRANSPORT_OPERATION_POOL_H_

#include <cstddef>

namespace zcoll {

template <typename T>
class OperationPool {
 public:
  OperationPool() = default;
  OperationPool(const OperationPool&) = delete;
  OperationPool& operator=(const OperationPool&) = delete;
  ~OperationPool() {
    Delete(live_);
    Delete(free_);
  }

  T* Acquire() {
    T* record = free_;
    if (record != nullptr) {
      free_ = record->pool_next;
      *record = T{};
    } else {
      record = new T{};
    }
    record->pool_previous = nullptr;
    record->pool_next = live_;
    if (live_ != nullptr) live_->pool_previous = record;
    live_ = record;
    ++live_count_;
    return record;
  }

  void Release(T* record) {
    if (record->pool_previous != nullptr) {
      record->pool_previous->pool_next = record->pool_next;
    } else {
      live_ = record->pool_next;
    }
    if (record->pool_next != nullptr) record->pool_next->pool_previous = record->pool_previous;
    record->pool_previous = nullptr;
    record->pool_next = free_;
    free_ = record;
    --live_count_;
  }

  // Calls `visit(record)` for every live record; `visit` may Release it.
  template <typename Visit>
  void ForEachLive(Visit visit) {
    for (T* record = live_; record != nullptr;) {
      T* next = record->pool_next;
      visit(record);
      record = next;
    }
  }

  size_t live_count() const { return live_count_; }

 private:
  static void Delete(T* list) {
    while (list != nullptr) {
      T* next = list->pool_next;
      delete list;
      list = next;
    }
  }

  T* live_ = nullptr;
  T* free_ = nullptr;
  size_t live_count_ = 0;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_OPERATION_POOL_H_
