// The node engine's data flow as schedules: what each rank of a node call (node_engine.h)
// publishes, reads of whom, copies and reduces, step by step as node_engine.cc does it,
// for the simulator (zcoll_sim times it) and the symbolic tests (which check that it
// computes the collective: the flow is a model of the engine, and a wrong model of a
// right engine is caught there). The engine runs no schedule; this is what the
// simulator has of it, built from the engine's own thresholds (node_engine_limits.h).
//
// How the engine's actions appear as steps:
//   - A publication that fits its rank's slot is a Copy into a scratch buffer (the
//     slot), which readers read; one that fits the control line costs nothing; a
//     larger one is read where it lies (the publisher's own buffer).
//   - A read is a Send on the publisher (passive: it only says what is read) and a
//     Recv on the reader, whose CPU copies the bytes. A write into a peer's buffer (the
//     cooperative copies of large Bcasts, Scatters, Gathers and an Exscan's rank 1,
//     a partitioned Reduce's blocks) is a Send whose sender copies: its tag is
//     kNodeWriteTag or more (NodeWriteBySender).
//   - Every rank reads every other's control line (tag kNodePublicationTag), whose
//     transfer carries the first piece of data it needs of that rank, or none; or
//     kNodeInPlaceReadTag where that piece is a publication in the segment that the
//     reader reduces where it lies (its bytes cost the reduction, not a copy). (A rank
//     that leaves a small call eagerly reads those lines two calls later; the model
//     reads them in the call, which lengthens only that rank's own time, not the
//     readers' that end the call. A small call's rank that needs only some ranks'
//     data, RoleReads, reads their lines alone; the model leaves out the others', which
//     it reads two calls later.)
//   - Reductions from peers' own buffers read them in chunks (tags kNodeChunkTag + k)
//     into a staging buffer that each chunk reuses; where the buffers are mapped
//     (CollectiveArgs::mapped_buffers) they are reduced where they lie
//     (kNodeInPlaceChunkTag + k). A partitioned Allreduce's blocks of result are read
//     with kNodeStageTag. A chained Scan's or Exscan's rank reads its predecessor's
//     chunks with the same tags (an Exscan's result, read straight in, is a copy in
//     either case), each once the predecessor's step that made it is done (the
//     builder's dependency is the engine's progress word).
//   - A result that would overwrite what peers still read (in place, beyond the slots)
//     is made in scratch and copied in once they have read it, as the engine defers it.
// The ranks are assumed able to read each other's memory (single copy) and to have a
// core each (not oversubscribed), as the simulator's communicators are.

#ifndef ZCOLL_COLLECTIVES_NODE_DATA_FLOW_H_
#define ZCOLL_COLLECTIVES_NODE_DATA_FLOW_H_

#include <cstdint>

#include "collectives/algorithms.h"
#include "core/schedule.h"
#include "core/topology.h"

namespace zcoll {

inline constexpr uint32_t kNodePublicationTag = 0;
inline constexpr uint32_t kNodeChunkTag = 1;  // + the chunk, below kNodeInPlaceReadTag
inline constexpr uint32_t kNodeInPlaceReadTag = 0x2000;
inline constexpr uint32_t kNodeInPlaceChunkTag = 0x2001;  // + the chunk, below kNodeStageTag
inline constexpr uint32_t kNodeStageTag = 0x4000;
inline constexpr uint32_t kNodeWriteTag = 0x8000;  // + the chunk
// (As many in-place chunk tags as copied ones, below kNodeStageTag.)
static_assert(kNodeInPlaceChunkTag + (kNodeInPlaceReadTag - kNodeChunkTag) <= kNodeStageTag);

// Whether a node data flow's transfer with `tag` is a write by its sender into the
// receiver's memory (else a read by the receiver).
inline bool NodeWriteBySender(uint32_t tag) { return tag >= kNodeWriteTag; }
// Whether it is a read whose bytes the reader reduces where they lie, copying nothing
// (a publication in the segment, or a chunk of a mapped buffer).
inline bool NodeReadInPlace(uint32_t tag) {
  return tag >= kNodeInPlaceReadTag && tag < kNodeStageTag;
}

// Rank `rank`'s part of the node engine's call of `args` (the ranks of `topology`, one
// node), as a ScheduleGenerator.
Schedule NodeEngineDataFlow(const CollectiveArgs& args, const Topology& topology, int rank);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_DATA_FLOW_H_
