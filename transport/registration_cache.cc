#include "transport/registration_cache.h"

#include <unistd.h>

#include <algorithm>

namespace zcoll {
namespace {

uintptr_t PageSize() {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const MemoryRegion>> RegistrationCache::Acquire(
    const void* pointer, size_t bytes, MemoryAccess access) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(pointer);
  const uintptr_t end = begin + std::max<size_t>(bytes, 1);
  ++clock_;
  for (Entry& entry : entries_) {
    if (entry.begin <= begin && end <= entry.end && Allows(entry.access, access)) {
      entry.last_use = clock_;
      ++hits_;
      return entry.region;
    }
  }
  ++misses_;
  const uintptr_t page = PageSize();
  const uintptr_t page_begin = begin / page * page;
  const uintptr_t page_end = (end + page - 1) / page * page;
  absl::StatusOr<std::unique_ptr<MemoryRegion>> region =
      register_(reinterpret_cast<void*>(page_begin), page_end - page_begin, access);
  if (!region.ok()) return region.status();
  if (entries_.size() >= capacity_ && !entries_.empty()) {
    // The least recently used entry goes; operations using it keep it alive.
    auto oldest =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    entries_.erase(oldest);
  }
  entries_.push_back({page_begin, page_end, access, clock_, std::move(*region)});
  return entries_.back().region;
}

void RegistrationCache::Invalidate(const void* pointer, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(pointer);
  const uintptr_t end = begin + std::max<size_t>(bytes, 1);
  entries_.erase(
      std::remove_if(entries_.begin(), entries_.end(),
                     [&](const Entry& entry) { return entry.begin < end && begin < entry.end; }),
      entries_.end());
}

}  // namespace zcoll
