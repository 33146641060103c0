// Caches memory registrations so that a buffer used in every iteration is registered
// once (registering pins pages and talks to the NIC: microseconds to milliseconds).
//
// Acquire returns a registration covering the range, reusing a cached one when one
// covers it with the access needed; ranges are widened to whole pages so that
// neighbouring buffers share registrations. At most `capacity` registrations are
// cached, least recently used evicted first. Acquire hands out shared ownership:
// an operation in flight keeps its registration alive even if the cache drops it.
//
// A cached registration may outlive the memory it covers: call Invalidate(range)
// before freeing or remapping memory that was used without an explicit
// MemoryRegion (the transport's InvalidateRegistrations does). Providers whose
// registrations pin pages (verbs, EFA) rely on this; the shared-memory providers
// register nothing.
//
// Not thread-safe (owned by one Transport).

#ifndef ZCOLL_TRANSPORT_REGISTRATION_CACHE_H_
#define ZCOLL_TRANSPORT_REGISTRATION_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace zcoll {

class RegistrationCache {
 public:
  using RegisterFunction = std::function<absl::StatusOr<std::unique_ptr<MemoryRegion>>(
      void* base, size_t length, MemoryAccess access)>;

  RegistrationCache(RegisterFunction register_memory, size_t capacity)
      : register_(std::move(register_memory)), capacity_(capacity) {}

  absl::StatusOr<std::shared_ptr<const MemoryRegion>> Acquire(const void* pointer, size_t bytes,
                                                              MemoryAccess access);

  // Drops every cached registration that overlaps [pointer, pointer + bytes).
  void Invalidate(const void* pointer, size_t bytes);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uintptr_t begin;
    uintptr_t end;
    MemoryAccess access;
    uint64_t last_use;
    std::shared_ptr<const MemoryRegion> region;
  };

  RegisterFunction register_;
  size_t capacity_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_REGISTRATION_CACHE_H_
