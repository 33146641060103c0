// The node engine's size thresholds, the ranks each role waits for, and its partition
// of a large reduction, shared by the engine (node_engine.cc), which acts on them, and
// its data-flow model (node_data_flow.h), which the simulator times: one definition,
// so that the model follows the engine when a threshold or a role is changed.

#ifndef ZCOLL_COLLECTIVES_NODE_ENGINE_LIMITS_H_
#define ZCOLL_COLLECTIVES_NODE_ENGINE_LIMITS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "collectives/algorithms.h"

namespace zcoll::node_engine_limits {

// Bytes of a contribution that travel inside a rank's control line
// (NodeSegment::kInlineBytes).
inline constexpr size_t kInlineBytes = 44;

// A reduction reads this much of each peer's memory at a time (staying in cache).
inline constexpr size_t kReduceChunkBytes = 256 * 1024;

// From this size a transfer between a rank with nothing else to do in the call (a
// Bcast's or Scatter's root, a Gather's leaves) and one that needs the data is copied
// by both at once: one writes into the other's memory (process_vm_writev) while the
// other reads the rest. Below it, the extra handshake costs more than half a copy.
inline constexpr size_t kCooperativeBytes = 64 * 1024;

// Up to this size a rank that needs nothing of the others in a call (a Bcast's or
// Scatter's root, a Reduce's or Gather's leaf, a Scan's or Exscan's rank 0; for a
// Scatter, its block) leaves it once it has published (NodeExecution::ChooseReads).
// 2 ranks, medians of 9 alternating runs against waiting for the others' words: bcast
// 8-512 B 0.12-0.14 us against 0.15-0.18, reduce 0.13-0.15 against 0.16-0.18; 2 KiB
// even; 8 KiB worse (bcast 0.38 against 0.35, reduce 0.40 against 0.34).
inline constexpr size_t kEagerBytes = 1024;

// Whether a rank of a node call of `bytes` (its count's) whose publication is a copy in
// its slot and whose call is neither partitioned nor deferred may leave the words of
// the ranks whose data it does not read to be compared two calls later (RoleReads,
// below; an eager role, RoleNeedsNothing, reads none): within kEagerBytes, and on a
// node whose ranks outnumber its cores below kCooperativeBytes too (where no rank
// writes into another's memory). There a wait for a rank whose data a rank does not
// need costs a context switch: 4 ranks on 2 cores, medians of 5 alternating runs, the
// engine forced, against waiting for every word: bcast 2-32 KiB 0.09-0.51x the time,
// scatter and scatterv 0.13-0.64x, gather 0.38-0.60x.
inline bool MayDeferChecks(size_t bytes, bool oversubscribed) {
  return bytes <= kEagerBytes || (oversubscribed && bytes < kCooperativeBytes);
}

// Whether a node Barrier of `ranks` ranks is released: rank 0 waits for every rank's
// word and then publishes its second word (the release), and the others wait for rank
// 0's words alone (comparing the rest two calls later, as RoleReads' readers do). On a
// node whose ranks outnumber its cores, from 3 ranks: there the ranks of a Barrier in
// which each waits for every word leave in whatever order they get a core, and a
// collective rooted at rank 0 after it waits for rank 0 to get one; released, rank 0
// leaves first, as the linear messages' root does.
inline bool ReleasedBarrier(bool oversubscribed, int ranks) { return oversubscribed && ranks >= 3; }

// Whether a rank's role in a node call of `collective` needs nothing of the others
// (eager within kEagerBytes, above).
inline bool RoleNeedsNothing(Collective collective, int rank, int root) {
  switch (collective) {
    case Collective::kBcast:
    case Collective::kScatter:
    case Collective::kScatterv:
      return rank == root;
    case Collective::kReduce:
    case Collective::kGather:
    case Collective::kGatherv:
      return rank != root;
    case Collective::kScan:
    case Collective::kExscan:
      // Rank 0's result is its own vector (Scan) or nothing (Exscan).
      return rank == 0;
    default:
      return false;
  }
}

// Within kEagerBytes likewise, the ranks whose publications a rank of a node call
// reads (first, last; its own included), whose words it waits for and checks in the
// call (the rest's two calls later): a Bcast's or Scatter(v)'s leaf the root's alone,
// a Scan's rank those up to it, an Exscan's those below it; any other rank every
// rank's. (An eager rank, above, waits for none.) 4 ranks on 2 cores, medians of 5
// alternating runs against waiting for every rank's word: bcast and scatter 8-512 B
// 0.36-0.54 us against 3.5-4.4, scan and exscan 0.47-0.72x. A released Barrier's
// rank other than 0 (ReleasedBarrier, above, where the node is `oversubscribed`) rank
// 0's, then its release.
inline std::pair<int, int> RoleReads(Collective collective, int rank, int root, int ranks,
                                     bool oversubscribed) {
  switch (collective) {
    case Collective::kBcast:
    case Collective::kScatter:
    case Collective::kScatterv:
      if (rank != root) return {root, root};
      break;
    case Collective::kBarrier:
      if (rank != 0 && ReleasedBarrier(oversubscribed, ranks)) return {0, 0};
      break;
    case Collective::kScan:
      return {0, rank};
    case Collective::kExscan:
      return {0, rank - 1};
    default:
      break;
  }
  return {0, ranks - 1};
}

// Where every rank reads every other's data (Allgather, Alltoall and their v-forms),
// publications are copied into the slots only up to this size: a copy through the
// slots costs each rank p - 1 copies in and out where reading in place costs one, and
// beyond this size reading in place wins despite its system call (2 ranks: 32 KiB
// allgather 5.5 us in place against 6.3 through the slots, alltoall 5.1 against 6.4).
// Elsewhere the slots win up to their size: a Scatterv's root copies once (8 KiB 1.5
// against 2.8), and a reduction read the slots in place where beyond them it is
// partitioned (2 ranks, 32 KiB allreduce 6.1 us against 9.2, each rank reading half of
// the other's buffer; but on 2 ranks reading the whole of it wins, below). Medians of 7
// alternating runs.
inline constexpr size_t kAllToAllCopyInBytes = 16 * 1024;

// On a node of 2 ranks, each with a core, likewise from kTwoRankCopyInBytes: a copy
// through the slot is two copies where reading in place is one, and the slot's lines go
// from the writer's core to the reader's in every call.
// - Where one rank's data goes to the other and nothing is reduced (Bcast, Scatter,
//   Gather and their v-forms, and Exscan, whose rank 1 takes rank 0's vector), until
//   2026-12-04, when copies in with streaming stores overtook lending (StreamsCopyIn,
//   below: these calls now use the whole slot). Then, 2 ranks,
//   medians of 11, 9 and 9 alternating runs at 32 KiB, lent against the slot: bcast
//   0.30x, 1.02x and 1.11x the time, gather 0.33x and 0.86x, scatter 0.28x, 0.65x and
//   0.89x, scatterv 0.90x, 0.99x and 1.08x: lent, 4.7-7.3 us in every run; through the
//   slots 1.2, 5 or 17-32 us as this machine runs a process pair's copies through
//   shared memory (README.md, "Rooted calls lend from 16 KiB on 2 ranks").
// - The reductions (Reduce, Allreduce, Reduce_scatter(_block), Scan), whose reducers
//   then read the other's vector a chunk at a time into staging and reduce it there, in
//   cache, instead of reading the slot's lines from the other core (medians of 9
//   alternating runs, lent against the slot: reduce 32 / 48 / 64 KiB 0.93x / 0.87x /
//   0.67x the time, allreduce 0.68x / 0.60x / 0.55x, reduce_scatter_block 0.90x / 0.74x
//   / 0.66x, scan 0.94x / 0.73x / 0.62x, reduce_scatter 32 / 64 KiB 0.94x / 0.67x;
//   below it not: reduce 9 and 12 KiB 1.25x, allreduce 9 KiB even).
// So on 2 ranks every other publication beyond it is lent. Not on more
// ranks, unmeasured here: there the readers of one lent buffer each make a
// system call that pins the same pages. Nor on an oversubscribed node, where a lender
// waits for its readers to get a core.
inline constexpr size_t kTwoRankCopyInBytes = 16 * 1024;

// On 2 ranks with a core each a Reduce's leaf copies its vector into its slot up to this
// size, with streaming stores (StreamsCopyIn, below), its root reducing from the slot
// instead of reading the leaf's buffer in chunks (medians of 7 alternating runs against
// lending: 20 KiB 0.66x and 0.80x the time, 32 KiB 0.72-0.91x in five runs, 0.82x and
// 0.83x in 11 runs of either order; 48 KiB 1.02x, 60 KiB 1.04x). Not
// the other reductions, whose every rank reads (Allreduce, Reduce_scatter_block: 0.90-1.46x
// at 20-60 KiB), nor a Scan (0.81-1.18x), nor Allgather and Alltoall (0.77-1.38x).
inline constexpr size_t kTwoRankStreamedReduceBytes = 32 * 1024;

// On a node of 2 ranks with a core each, up to how many bytes a publication of
// `collective` is copied into its slot (of `slot_bytes`): kTwoRankCopyInBytes, but for
// the calls that move one rank's data to the other, which use the whole slot, and a
// Reduce's leaf, kTwoRankStreamedReduceBytes; beyond kTwoRankCopyInBytes with streaming
// stores (StreamsCopyIn).
inline size_t TwoRankCopyInLimit(Collective collective, size_t slot_bytes) {
  switch (collective) {
    // A Scatter's root publishes both blocks and its reader reads one, the other's,
    // copied: blocks of up to half the slot.
    case Collective::kScatter:
    case Collective::kScatterv:
    case Collective::kGather:
    case Collective::kGatherv:
      return slot_bytes;
    // (Below kCooperativeBytes, from which the root writes a share of the other's copy
    // while it reads the rest of the root's buffer: BcastShare, ExscanShare.)
    case Collective::kBcast:
    case Collective::kExscan:
      return kCooperativeBytes - 1;
    case Collective::kReduce:
      return kTwoRankStreamedReduceBytes;
    default:
      return kTwoRankCopyInBytes;
  }
}

// Up to how many bytes a rank's publication of `collective` is copied into its slot
// (of `slot_bytes`), when the node's ranks can read each other's memory; beyond it
// readers read the publisher's own buffer. (A publisher's own choice: its readers
// read its publication where its exposure line says it is.)
inline size_t CopyInLimit(Collective collective, size_t slot_bytes, int ranks,
                          bool oversubscribed) {
  size_t limit = slot_bytes;
  switch (collective) {
    case Collective::kAllgather:
    case Collective::kAllgatherv:
    case Collective::kAlltoall:
    case Collective::kAlltoallv:
      limit = kAllToAllCopyInBytes;
      break;
    default:
      break;
  }
  if (ranks == 2 && !oversubscribed) {
    const size_t two_ranks = TwoRankCopyInLimit(collective, slot_bytes);
    limit = two_ranks < limit ? two_ranks : limit;
  }
  return slot_bytes < limit ? slot_bytes : limit;
}

// Whether a rank copies `copied` bytes of its publication of `collective` into its slot
// with streaming stores (ops/streaming_copy.h) rather than memcpy: on 2 ranks with a
// core each, the calls that move one rank's data to the other, and a Reduce's leaf,
// beyond kTwoRankCopyInBytes (TwoRankCopyInLimit). A plain copy leaves the slot's lines
// modified in the writer's cache, and the reader then takes each from there, a line's
// trip between the cores; streamed, they go to memory, where the reader finds them. 2
// ranks, medians of 7 alternating runs against lending beyond kTwoRankCopyInBytes (the
// reader's process_vm_readv), 20 / 32 / 48 / 60 KiB: bcast 0.54x / 0.64x / 0.64x / 0.70x
// the time, exscan 0.58x / 0.60x / 0.66x / 0.72x, gather 0.52x / 0.60x / 0.59x / 0.63x;
// scatter 20 and 32 KiB blocks 0.61x and 0.71x, scatterv 20 KiB 0.61x (blocks larger
// than half the slot are still lent: the root's publication holds both). Through the
// slot with plain copies the same 32 KiB calls took 2.6-2.9 times as long as lent in
// one run and 0.9-1.1 times in another (this machine's modes); streamed below 16 KiB
// they took 1.1-2.4 times as long as copied plainly (the lines stay in the cache the
// reader reads them from).
inline bool StreamsCopyIn(Collective collective, size_t copied, int ranks, bool oversubscribed) {
  // (Size first: most copies are small. The calls copied beyond kTwoRankCopyInBytes on
  // 2 ranks are the ones TwoRankCopyInLimit lets past it, whatever the slot's size.)
  constexpr size_t kAnySlot = ~size_t{0};
  return copied > kTwoRankCopyInBytes && ranks == 2 && !oversubscribed &&
         TwoRankCopyInLimit(collective, kAnySlot) > kTwoRankCopyInBytes;
}

// Whether a rank copies its peers' blocks (and its own) into its result of
// `collective` with streaming stores (ops/streaming_copy.h) rather than memcpy: in the
// exchanges whose every rank writes the whole result (Allgather(v), Alltoall(v)), when
// what the node's ranks read and write in the call, `node_bytes` (the ranks times this
// rank's send and receive bytes), outgrows the last-level cache (`cache_bytes`; 0:
// unknown, never). Then every plain store first reads its line from memory (a read for
// ownership) and evicts the sources the other copies still read; streamed, the lines
// go to memory once. 2 ranks, AllocateBuffer buffers (where the copies are memcpy's;
// a process_vm_readv's are the kernel's), this machine's 32 MiB L3, medians of 5-7
// alternating runs: Allgather of 8 MiB (48 MiB a node) 0.65-0.84x the time, Alltoall of
// 8 MiB blocks 0.73-0.79x; within the cache streaming is what loses, Allgather of 1 and 2 MiB
// 1.9x and 1.7x the time, and Gather and Scatter of 8 MiB (32 MiB a node; each rank
// copies one block) 1.28x and 1.10x. With ordinary buffers only a rank's own block is
// its copy (process_vm_readv brings the peers'): 8 MiB Allgather 0.75-0.97x, Alltoall
// 0.80-0.85x. A rank's own choice: nothing its peers read depends on it.
inline bool StreamsResultCopies(Collective collective, size_t node_bytes, size_t cache_bytes) {
  switch (collective) {
    case Collective::kAllgather:
    case Collective::kAllgatherv:
    case Collective::kAlltoall:
    case Collective::kAlltoallv:
      return cache_bytes > 0 && node_bytes > cache_bytes;
    default:
      return false;
  }
}

// Whether a publication of `bytes` that lies in a zcoll buffer (Communicator::
// AllocateBuffer, which the node's peers map) is lent at any size beyond kEagerBytes,
// its readers reading it where it lies, instead of copied into the slot up to
// CopyInLimit: the copy in is then the only copy the slot adds (issue 17's one memcpy
// per byte; a reduction reads it with no copy at all). Not within kEagerBytes, where
// small calls run straight through the slots (RunSmall), nor on a node whose ranks
// outnumber its cores, where a lender waits for readers to get a core: 2 ranks,
// AllocateBuffer buffers, medians of 7 alternating runs against the slots, 8 KiB
// 0.40-0.62x the time (allreduce 0.40, bcast 0.47, reduce_scatter_block 0.62), 2 KiB
// 0.76-1.03x; 4 ranks on 2 cores 2-8 KiB 0.93-2.62x, so not there. A publisher's own
// choice, as CopyInLimit's.
inline bool LendsMappedBuffer(size_t bytes, bool oversubscribed) {
  return bytes > kEagerBytes && !oversubscribed;
}

// Bytes at the start of a slot that hold a table of blocks (two 64-bit words a rank,
// cache-line aligned) for the collectives that publish one: what a rank sends each
// rank (Scatterv's root, Alltoallv), or where a Gather's root wants each rank's block.
inline size_t TableBytes(Collective collective, int ranks) {
  switch (collective) {
    case Collective::kScatterv:
    case Collective::kAlltoallv:
    case Collective::kGather:
    case Collective::kGatherv:
      return (static_cast<size_t>(ranks) * 2 * sizeof(uint64_t) + 63) / 64 * 64;
    default:
      return 0;
  }
}

// Whether a `length`-byte transfer of `collective` between the rank with nothing else
// to do in the call and the one that needs it is copied by both at once (from
// kCooperativeBytes): a Bcast's root writes a share of each leaf's copy (BcastShare)
// while the leaf reads the rest; a Gather(v)'s leaves write their whole blocks into
// the root while it copies its own. Not a Scatter(v)'s root, which copies its own block
// too: shares it wrote would only lengthen its part (2 ranks, medians of 21 alternating
// runs against the root writing half of the other's block: scatter 64 KiB / 256 KiB /
// 1 MiB / 4 MiB 0.83x / 0.88x / 0.65x / 0.80x the time, scatterv 0.83x / 0.88x /
// 0.67x / 0.85x); nor a Gather's root reading a share of each block, for the same
// reason (against the root reading half of the other's block: gather 0.96x / 0.94x /
// 0.57x / 0.68x; 4 ranks on 2 cores, 11 runs, 0.97-1.00x). Nor a Bcast's root where
// ranks outnumber cores, where its shares only move copying from its leaves' cores to
// its own, and they wait for it (4 ranks on 2 cores, 32 KiB-2 MiB, medians of 7
// alternating runs, without the shares: bcast 0.84-0.98x the time); a Gather's leaves
// writing into the root still spare its reading there (with the root reading 1/p of
// each block: without, 1.12-2.27x).
inline bool Cooperates(Collective collective, size_t length, bool oversubscribed) {
  if (length < kCooperativeBytes) return false;
  switch (collective) {
    case Collective::kBcast:
      return !oversubscribed;
    case Collective::kGather:
    case Collective::kGatherv:
      return true;
    default:
      return false;
  }
}

// The bytes a core copies in the time one copy with a peer's own buffer costs besides
// its bytes: the system call (process_vm_readv/writev, 0.49 us for 64 B here) and the
// control line's checks (0.05 us), at about 5.5 GB/s (the infiniband profile's node;
// zcoll_sim charges the same, engine.system_call_usec).
inline constexpr size_t kPeerCallBytes = 3 * 1024;

// Of a cooperative Bcast (Cooperates) of `length` bytes on `ranks` ranks, the share
// (the first bytes) that the root writes into each leaf, the leaf reading the rest.
// Its p - 1 writes, a call each, end with a leaf's one read of the rest where
// p x share = length - (p - 2) x kPeerCallBytes: half on 2 ranks; on a 64-rank node
// none up to 186 KiB, where the root's 63 calls alone outlast a leaf's whole read
// (zcoll_sim, infiniband profile, one 64-rank node, bcast 128 KiB / 512 KiB / 2 MiB:
// 61.4 / 131.8 / 413.3 us with shares of length / p, 27.6 / 98.2 / 379.7 us so; on 2
// ranks, this machine's only node with a core a rank, the share is length / 2 as
// before). 0 where the Bcast is not cooperative.
inline size_t BcastShare(size_t length, int ranks, bool oversubscribed) {
  if (!Cooperates(Collective::kBcast, length, oversubscribed) || ranks < 2) return 0;
  const size_t root_calls = static_cast<size_t>(ranks - 2) * kPeerCallBytes;
  if (length <= root_calls) return 0;
  return (length - root_calls) / static_cast<size_t>(ranks) / 64 * 64;
}

// An Exscan's rank 0 writes this share of rank 1's result (its own vector of `bytes`).
inline size_t ExscanShare(size_t bytes) {
  if (bytes < kCooperativeBytes) return 0;
  return bytes / 2 / 64 * 64;
}

// Whether a Reduce or Allreduce of `bytes` on `ranks` ranks that fits a slot is
// partitioned all the same (InSlots): each rank reduces its block reading the others'
// slots in place and leaves it in its own slot, where it alone read its block of its
// own vector, and the others (Allreduce) or the root (Reduce) copy the blocks from
// there. Each reducer reading every slot whole costs it p times the vector, which on
// many ranks outweighs the second wait: from 4 ranks, beyond kEagerBytes (a Reduce's
// leaves stay eager up to it) and from 16 KiB of all the ranks' vectors (the
// infiniband profile's node, against each reducer reading every slot: allreduce 4, 8,
// 16 and 64 ranks at 4 KiB 0.66, 0.39, 0.25, 0.13x the time; at 1 KiB on 8 ranks and
// more 0.40-0.63x; 64 KiB on 64 ranks 1047 -> 46 us; 256 B 1.04-1.35x, not taken).
// Not where ranks outnumber cores, where the second wait costs a wakeup (4 ranks on 2
// cores, medians of 7 alternating runs: allreduce 4 and 16 KiB 1.51x and 1.15x the
// time, reduce even).
inline bool PartitionedInSlots(Collective collective, size_t bytes, size_t slot_bytes, int ranks,
                               bool oversubscribed) {
  constexpr size_t kFewestAllBytes = 16 * 1024;
  return (collective == Collective::kReduce || collective == Collective::kAllreduce) &&
         !oversubscribed && ranks >= 4 && bytes <= slot_bytes && bytes > kEagerBytes &&
         bytes * static_cast<size_t>(ranks) >= kFewestAllBytes;
}

// Whether a Reduce or Allreduce of `bytes` is partitioned: every rank reduces a block
// of the vector (ReductionBlock), beyond a slot reading the others' buffers, within one
// on many ranks their slots (PartitionedInSlots), instead of each reducer reducing the
// whole from the slots.
inline bool Partitioned(Collective collective, size_t bytes, size_t slot_bytes, int ranks,
                        bool oversubscribed) {
  return ((collective == Collective::kReduce || collective == Collective::kAllreduce) &&
          bytes > slot_bytes) ||
         PartitionedInSlots(collective, bytes, slot_bytes, ranks, oversubscribed);
}

// Whether a partitioned Allreduce beyond the slots (each rank reducing its block of
// `bytes` from the others' buffers) shows each rank's block of the result in its slot,
// copied there once, where the others copy it from, rather than in its own buffer,
// which each of them would read with process_vm_readv: where the largest block fits the
// slot. A system call a read (0.49 us here at 64 B), and its bytes at about half a
// memcpy's speed (64 KiB 3.7 us against 1.9, both from one process's cache), cost more
// than the one copy more: against reading the buffers, medians of 5-9 alternating runs,
// 2 ranks 96 KiB 0.83x the time, 3 ranks 128 KiB 0.83x, 4 ranks 128 KiB 0.70x, 9 ranks
// 0.61x, 16 ranks 0.67x, and 512 KiB on 16 ranks 0.87x (3 ranks and more share the 2
// cores).
inline bool ResultInSlot(Collective collective, size_t bytes, size_t element_bytes,
                         size_t slot_bytes, int ranks) {
  if (collective != Collective::kAllreduce || ranks < 2 || bytes <= slot_bytes) return false;
  // (The largest block (ReductionBlock): the even share, and the cache line its split
  // aligns to or, for elements that do not divide one, an element.)
  const size_t beyond_share = element_bytes > 64 ? element_bytes : 64;
  return bytes / static_cast<size_t>(ranks) + beyond_share <= slot_bytes;
}

// Whether a Bcast of `bytes` beyond the slot (`slot_bytes`) on `ranks` ranks goes
// through the slots of its call's parity, every rank's, rather than from the root's
// own buffer: on a node whose ranks outnumber its cores. The root copies its vector
// into them (its own slot first, then its leaves' in the order it sees them in the
// call) a piece of kBcastSlotPieceParts to a slot at a time, with streaming stores
// (ops/streaming_copy.h), saying after each how many it copied (its progress word);
// each leaf copies the pieces out as the progress shows them. Beyond the slots'
// capacity the root reuses them in turn, each once every leaf has copied what was
// there (their progress words); within it, it returns as soon as it has copied in:
// nobody reads its buffer, so it waits for nobody, as within a slot (MayDeferChecks).
// Lent instead, the root waits for every leaf to have read its buffer, and each leaf
// reads it with process_vm_readv, here at a quarter of memcpy's speed (256 KiB from one
// process's cache: 21-24 us against 5.0-5.3). A leaf needs none of the slots the root
// writes: every rank wrote and read the parity's slots last in the call before last,
// which every rank has consumed before this call's publication (NodeSegment's double
// buffering), and a leaf in this call (its word seen) writes none. 4 ranks on 2 cores,
// against lending, medians of 7-9 alternating runs: 384 KiB-2 MiB 0.60-0.77x the time,
// 4 and 8 MiB 0.56x and 0.65x.
inline constexpr size_t kBcastSlotPieceParts = 4;
// At most this many slots: the root's, and the leaves' it names in its control line's
// payload, a 16-bit rank at each slot's index (index 0, its own, unused).
inline constexpr size_t kBcastMostSlots = kInlineBytes / 2;
// Where the node's ranks cannot read each other's memory (no single copy) a Bcast goes
// through the slots at every size too: the alternative is messages.
inline bool BcastThroughSlots(size_t bytes, size_t slot_bytes, int ranks, bool oversubscribed,
                              bool single_copy) {
  return (oversubscribed || !single_copy) && ranks >= 2 && bytes > slot_bytes;
}

// Whether a Scan or Exscan of `bytes` on `ranks` ranks runs as a chain: beyond a slot,
// from 3 ranks, rank r makes its result a chunk at a time from rank r - 1's as that
// rank makes it (Scan: r - 1's result op r's vector; Exscan: r - 1's inclusive prefix,
// which every rank but the last keeps in scratch, op r's vector), so the node does
// p - 1 reductions of the vector in all, pipelined, where each rank reducing every
// vector up to its own does p(p - 1)/2 and its last rank p - 1 alone (64 ranks, 8 MiB,
// the infiniband profile's node: 228 ms). 2 ranks are a chain already.
inline bool Chained(Collective collective, size_t bytes, size_t slot_bytes, int ranks) {
  return (collective == Collective::kScan || collective == Collective::kExscan) && ranks >= 3 &&
         bytes > slot_bytes;
}

// The elements of a chained Scan's or Exscan's chunk (its `count` elements of
// `element_bytes`, on `ranks` ranks). A chain of p ranks and c chunks takes about
// p - 1 + c chunk times, a chunk's time being a fixed cost (its reader's look at the
// progress word, its process_vm_readv, a wakeup) and its bytes' copy and reduction:
// c = sqrt((p - 1) n / k) chunks, of sqrt(n k / (p - 1)) bytes, minimise it, with k
// the fixed cost in bytes' worth of the rest. Where ranks outnumber cores a waiting
// successor sleeps and each chunk costs a wakeup, so k is larger there. Bounds: 16 KiB
// (a process_vm_readv per chunk) to kReduceChunkBytes (a chunk and what it is reduced
// with stay in cache).
inline size_t ChainChunkElements(size_t count, size_t element_bytes, int ranks,
                                 bool oversubscribed) {
  // About a microsecond (a system call, a cache line's trip) against 0.4 ns a byte (a
  // copy and a reduction at 5 GB/s each). Oversubscribed, a wakeup of tens of
  // microseconds: 4 ranks on 2 cores, 128 KiB-8 MiB, medians of 7 alternating runs,
  // 512 KiB took 0.59-1.08x the time of 32 KiB and 0.68-1.08x that of 128 KiB.
  constexpr double kFixedCostBytes = 4096;
  constexpr double kFixedCostBytesOversubscribed = 512 * 1024;
  constexpr size_t kFewestBytes = 16 * 1024;
  const double bytes = static_cast<double>(count) * static_cast<double>(element_bytes);
  const double best =
      std::sqrt(bytes * (oversubscribed ? kFixedCostBytesOversubscribed : kFixedCostBytes) /
                static_cast<double>(ranks > 1 ? ranks - 1 : 1));
  const size_t chunk = best < static_cast<double>(kFewestBytes) ? kFewestBytes
                       : best > static_cast<double>(kReduceChunkBytes)
                           ? kReduceChunkBytes
                           : static_cast<size_t>(best) / 64 * 64;
  return chunk / element_bytes > 0 ? chunk / element_bytes : 1;
}

// A partitioned Reduce's or Allreduce's block of local rank `rank` of `ranks`: its
// first element and count of the vector's `count` elements of `element_bytes`.
// Cache-line aligned equal blocks, but for a Reduce, whose leaves also write their
// blocks into the root: there the root's block weighs p and a leaf's p - 1 (each reads
// p - 1 inputs per element, a leaf writes one more), so that all finish together.
inline std::pair<size_t, size_t> ReductionBlock(Collective collective, size_t count,
                                                size_t element_bytes, int ranks, int root,
                                                int rank) {
  const size_t align =
      element_bytes <= 64 && 64 % element_bytes == 0 ? 64 / element_bytes : size_t{1};
  const bool weighted = collective == Collective::kReduce;
  const auto p = static_cast<unsigned __int128>(ranks);
  auto weight_before = [&](int r) -> unsigned __int128 {
    if (!weighted) return static_cast<unsigned>(r);
    return static_cast<unsigned>(r) * (p - 1) + (r > root ? 1 : 0);
  };
  const unsigned __int128 total = weighted ? p + (p - 1) * (p - 1) : p;
  auto start = [&](int r) -> size_t {
    if (r >= ranks) return count;
    const auto exact =
        static_cast<size_t>(static_cast<unsigned __int128>(count) * weight_before(r) / total);
    return exact / align * align;
  };
  return {start(rank), start(rank + 1) - start(rank)};
}

}  // namespace zcoll::node_engine_limits

#endif  // ZCOLL_COLLECTIVES_NODE_ENGINE_LIMITS_H_
