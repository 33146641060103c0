#include "ops/streaming_copy.h"

#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/streaming_copy.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace zcoll::ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void StreamingCopyBytes(uint8_t* to, const uint8_t* from, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  // (Stream needs a destination aligned to the vector; the head up to it is stored
  // plainly.)
  const size_t misalignment = reinterpret_cast<uintptr_t>(to) % lanes;
  size_t done = misalignment == 0 ? 0 : lanes - misalignment;
  if (done > bytes) done = bytes;
  if (done > 0) std::memcpy(to, from, done);
  for (; done + lanes <= bytes; done += lanes) {
    hn::Stream(hn::LoadU(d, from + done), d, to + done);
  }
  if (done < bytes) std::memcpy(to + done, from + done, bytes - done);
  hwy::FlushStream();
}

}  // namespace HWY_NAMESPACE
}  // namespace zcoll::ops_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zcoll {
namespace ops_internal {
HWY_EXPORT(StreamingCopyBytes);
}  // namespace ops_internal

void StreamingCopy(void* to, const void* from, size_t bytes) {
  HWY_DYNAMIC_DISPATCH(ops_internal::StreamingCopyBytes)
  (static_cast<uint8_t*>(to), static_cast<const uint8_t*>(from), bytes);
}

}  // namespace zcoll
#endif  // HWY_ONCE
