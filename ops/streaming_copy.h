// StreamingCopy: a copy whose stores bypass this core's caches (non-temporal stores),
// for a writer whose destination lines other cores read last: a plain store first
// takes each line back from the cores that hold it (a read for ownership, a line's
// trip between cores each), where a streaming store sends it to memory without
// asking for it; and for one whose destination is too large to stay in the cache, whose
// plain stores would read every line from memory first and evict what the copy still
// reads. The node engine's Bcast through the slots copies into slots that its leaves
// read in the call before (collectives/node_engine_limits.h, BcastThroughSlots), and its
// exchanges beyond the last-level cache into their results (StreamsResultCopies).

#ifndef ZCOLL_OPS_STREAMING_COPY_H_
#define ZCOLL_OPS_STREAMING_COPY_H_

#include <cstddef>

namespace zcoll {

// Copies `bytes` from `from` to `to` (which do not overlap), streaming the stores of
// every whole vector of the widest SIMD target this CPU runs (Highway's dispatch) and
// storing the unaligned head and the tail plainly; the stores are ordered (a store
// fence) before it returns, so that a release store after it publishes them.
void StreamingCopy(void* to, const void* from, size_t bytes);

}  // namespace zcoll

#endif  // ZCOLL_OPS_STREAMING_COPY_H_
