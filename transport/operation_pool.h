// Recycles the records providers keep per posted operation, and links the live ones.
//
// Posting an operation then allocates nothing once the pool has warmed up, and the
// operations with a dead peer, or still pending at teardown, can be walked without a
// hash set. T must have `T* pool_previous`, `T* pool_next` and `bool pool_live` members, which the
// pool owns, and be default-constructible; Acquire returns a record reset to T{} (with the pool's
// links).
//
// Not thread-safe (owned by one Transport).

#ifndef ZCOLL_TRANSPORT_OPERATION_POOL_H_
#define ZCOLL_TRANSPORT_OPERATION_POOL_H_

#include <cstddef>
#include <vector>

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
    record->pool_live = true;
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
    record->pool_live = false;
    record->pool_next = free_;
    free_ = record;
    --live_count_;
  }

  // Calls `visit(record)` for every record live when the call began and still live
  // when its turn comes. `visit` may Release it or any other record: a provider's
  // cancel runs completion callbacks that end other operations, and a walk along the
  // links would then follow a released record into the free list (and visit
  // operations long done, whose Completions are gone).
  template <typename Visit>
  void ForEachLive(Visit visit) {
    std::vector<T*> live;
    live.reserve(live_count_);
    for (T* record = live_; record != nullptr; record = record->pool_next) live.push_back(record);
    for (T* record : live) {
      if (record->pool_live) visit(record);
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
