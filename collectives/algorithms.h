// The collective algorithms, each a pure function (arguments, topology, rank) ->
// Schedule (core/schedule.h, docs/design.md, "A call, end to end"). Nothing here touches a
// transport: the executor runs the schedules, the symbolic checker and the tests inspect them.
//
// Buffer conventions (what the Schedule's send and receive buffers are, in elements):
//
//   collective            kSend (this rank)                 kRecv (this rank)
//   reduce                the contribution (count)          root: the result (count)
//   allreduce             the contribution (count)          the result (count)
//   reduce_scatter_block  size * count contributions        the block (count)
//   reduce_scatter        sum(counts) contributions         the block (counts[rank])
//   scatter               root: size * count                the block (count)
//   scatterv              root: the blocks at displs        the block (counts[rank])
//   bcast                 (unused)                          the vector (root: input)
//   gather                the block (count)                 root: size * count
//   gatherv               the block (count)                 root: the blocks at displs
//   allgather             the block (count)                 size * count
//   allgatherv            the block (counts[rank])          the blocks at displs
//   alltoall              size * count                      size * count
//   alltoallv             the blocks at displs              the blocks at recv_displs
//   barrier               (unused)                          (unused)
//   scan, exscan          the contribution (count)          the result (count)
//
// In place (CollectiveArgs::in_place) the contribution is in kRecv: reduce at the
// root, allreduce, scan and exscan read the vector from kRecv; reduce_scatter(_block)
// read the whole input from kRecv and leave the result at its start; scatter(v) at
// the root leaves its own block where it is (no step touches it); gather(v) at the
// root and allgather(v) find their own block in place in kRecv; alltoall(v) read
// their input from kRecv (laid out as the output). kSend is then unused (0 elements).
// Exscan leaves rank 0's kRecv untouched (the standard leaves it undefined).
//
// Reductions combine contributions in canonical rank order wherever an algorithm is
// marked non-commutative-safe (Algorithm::any_op); the others assume commutativity and
// are chosen only for commutative ops.
//
// Tags: a schedule's tags are below 2^kScheduleTagBits; the executor puts the
// collective's sequence number above them.

#ifndef ZCOLL_COLLECTIVES_ALGORITHMS_H_
#define ZCOLL_COLLECTIVES_ALGORITHMS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/schedule.h"
#include "core/topology.h"

namespace zcoll {

enum class Collective : uint8_t {
  kReduce,
  kAllreduce,
  kReduceScatterBlock,
  kReduceScatter,
  kScatter,
  kScatterv,
  kBcast,
  kGather,
  kGatherv,
  kAllgather,
  kAllgatherv,
  kAlltoall,
  kAlltoallv,
  kBarrier,
  kScan,
  kExscan,
};
inline constexpr size_t kNumCollectives = static_cast<size_t>(Collective::kExscan) + 1;

// The collectives that combine contributions with an op. (Inline: every call asks.)
inline bool IsReduction(Collective collective) {
  switch (collective) {
    case Collective::kReduce:
    case Collective::kAllreduce:
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter:
    case Collective::kScan:
    case Collective::kExscan:
      return true;
    default:
      return false;
  }
}
// The collectives with a root argument.
bool IsRooted(Collective collective);

// "reduce", "reduce_scatter_block", ...: the names of zcoll_bench and run_peers.sh.
absl::string_view CollectiveName(Collective collective);
absl::StatusOr<Collective> ParseCollective(absl::string_view name);
// "REDUCE", "REDUCE_SCATTER_BLOCK": the suffix of ZCOLL_ALGO_<COLL>.
std::string CollectiveEnvironmentSuffix(Collective collective);

inline constexpr int kScheduleTagBits = 16;
// Tags are (stage << kChunkTagBits) | chunk, so a pipelined stage has at most
// kMaxChunks chunks.
inline constexpr int kChunkTagBits = 10;
inline constexpr size_t kMaxChunks = size_t{1} << kChunkTagBits;
// The last stage of every call's tags is zcoll's own: no algorithm uses it, and the
// executor sends a stalled call's probes there (executor.h).
inline constexpr int kReservedStage = (1 << (kScheduleTagBits - kChunkTagBits)) - 1;
inline constexpr uint32_t kStallProbeTag = static_cast<uint32_t>(kReservedStage) << kChunkTagBits;

// Bytes per pipelining chunk when the user sets none (ZCOLL_CHUNK_BYTES unset): 256 KiB,
// or the whole vector on two ranks, which have no path of two hops for chunks to
// pipeline along while every chunk costs its own handshake (2 ranks, medians of 7
// interleaved runs, 512 KiB-8 MiB: reduce 69-2055 us against 177-2861, bcast 38-739
// against 40-982, allreduce 81-3647 against 231-3817, reduce_scatter_block 37-1600
// against 42-1774). What communicators run and what zcoll_sim times. (Inline: every
// call's start reads it.)
inline constexpr size_t kDefaultChunkBytes = 256 * 1024;
inline constexpr size_t DefaultChunkBytes(int size) {
  return size == 2 ? std::numeric_limits<size_t>::max() : kDefaultChunkBytes;
}

// The arguments of a call but for the v-collectives' vectors: what a loop of equal
// calls compares with a cached plan's, field by field, without touching a vector.
struct ScalarArgs {
  Collective collective = Collective::kReduce;
  int size = 1;
  int root = 0;
  // reduce, allreduce, bcast, scan, exscan: the vector; reduce_scatter_block,
  // scatter, gather, allgather, alltoall: the block of one rank; scatterv: this
  // rank's block (recvcount); gatherv, allgatherv: this rank's block (sendcount).
  size_t count = 0;
  bool in_place = false;
  bool commutative = true;
  // Bytes of one element, for size-based choices (chunks, selection).
  size_t element_bytes = 1;
  // Pipelined algorithms move data in chunks of about this many bytes.
  size_t chunk_bytes = kDefaultChunkBytes;
  // For the node engine's data-flow model alone (node_data_flow.h; zcoll_sim
  // --buffers=zcoll): every rank's buffers are AllocateBuffer memory its node's peers
  // have mapped, so a reduction reads a peer's contribution where it lies. Calls never
  // set it: their engine finds that out buffer by buffer.
  bool mapped_buffers = false;
  // For the data-flow model alone too (zcoll_sim on a profile whose host has fewer
  // cores than the call's ranks): the node's ranks outnumber its cores, so the model
  // takes the engine's paths for such a node (NodeSegment::oversubscribed: a Bcast
  // through the slots, no cooperative shares, no reductions partitioned in the slots).
  // Calls never set it: their engine knows.
  bool node_oversubscribed = false;

  friend bool operator==(const ScalarArgs&, const ScalarArgs&) = default;
};

// What the ranks of one collective agree on, plus this rank's own view where the
// standard lets it differ (a scatterv's counts are known at the root only).
struct CollectiveArgs : ScalarArgs {
  // reduce_scatter: every rank's block (the same on every rank). scatterv, gatherv:
  // the root's counts (root only; empty elsewhere). allgatherv: every rank's block.
  // alltoallv: this rank's sendcounts (its recvcounts in place).
  std::vector<size_t> counts;
  // The displacements that go with `counts` (not for reduce_scatter).
  std::vector<size_t> displs;
  // alltoallv: this rank's recvcounts and their displacements.
  std::vector<size_t> recv_counts;
  std::vector<size_t> recv_displs;

  // Bytes of the collective's message as the benchmarks count it (the vector for
  // reduce, allreduce, bcast and scan; the whole vector for reduce_scatter(_block);
  // the block per rank for scatter, gather, allgather and alltoall; allgatherv's
  // average block), computed only from arguments that are equal on every rank, so
  // that every rank of a call gets the same figure. Scatterv, gatherv and alltoallv
  // have none (their counts are known to one rank, or differ from rank to rank):
  // nullopt.
  std::optional<size_t> AgreedMessageBytes() const;

  friend bool operator==(const CollectiveArgs&, const CollectiveArgs&) = default;
};

// Everything the choice of an algorithm may depend on, each equal on every rank of a
// call (the message size from AgreedMessageBytes, the communicator's size, whether the
// op commutes, the number of nodes). Ranks that chose differently would post
// transfers their peers never match; building the choice on this alone keeps a rank's
// own view (a v-collective's own count) out of it.
struct SelectionInputs {
  Collective collective = Collective::kReduce;
  std::optional<size_t> bytes;
  int size = 1;
  bool commutative = true;
  int num_nodes = 1;
  // The communicator has a node engine (node_engine.h): one node, and every rank of it
  // mapped the shared segment (the node's leader told them all alike).
  bool node_engine = false;
  // And its ranks can read each other's memory (process_vm_readv, or threads of one
  // process; the leader told them all alike): its calls of any size run there, not
  // only those whose publications fit a slot.
  bool node_single_copy = false;
  // And that node has more of the job's ranks than cores (the leader's view): there a
  // node call, in which every rank waits for every other, costs the context switches
  // that a rooted collective's messages do not.
  bool node_oversubscribed = false;
  // The communicator spans nodes, one of which has several of its ranks, and so has
  // its node levels (node_levels.h; a function of the topology alone).
  bool node_levels = false;
  // And its nodes hold as many ranks each, so that the ranks at one place of every
  // node make a communicator of their own (NodeStripesPossible).
  bool node_stripes = false;
  // How many communicators' calls cross each rank's network link at once with this
  // one's, alike: a stripe communicator's q, whose node's q stripes run their
  // Allreduces together (node_levels.h). The rules' sizes are compared with bytes times
  // this, the load on the link, so that a stripe of 16 KiB on 64-rank nodes is chosen
  // as the 1 MiB its NIC carries (bandwidth-optimal), not as 16 KiB (latency-bound:
  // recursive doubling's log2(p) whole blocks at a 64th of the NIC).
  int link_sharers = 1;
  // Some host of the job runs more of its ranks than it has cores (agreed at Create
  // from every rank's record): an emulated cluster on one machine, whose "network" is
  // copies on the same cores, not a cluster's. Across nodes, the rules that exclude
  // oversubscription (SelectionRule::oversubscription) exclude it.
  bool hosts_oversubscribed = false;

  friend bool operator==(const SelectionInputs&, const SelectionInputs&) = default;
};
// The groups of a communicator's node levels (node_levels.h), a function of its
// topology alone so that every rank makes the same levels: its nodes when it spans
// several; on one node, the first of its packages, NUMA domains and L3 groups that
// splits it, where every rank's is known (bound), so that the levels nest down the
// hierarchy (a group's own communicator splits by the next tier). Each group's ranks
// ascending, the groups in the order of their lowest ranks (the leaders'
// communicator's order). Empty when there are no levels: no tier splits the ranks
// into two groups or more, one holding several ranks (else the leaders would be
// everyone).
std::vector<std::vector<int>> NodeLevelGroups(const Topology& topology);
// Whether a communicator with node levels also has stripes (node_levels.h): it spans
// two nodes or more, each with the same number of its ranks, two or more; then the
// ranks at place i of every node's ranks (ascending) make the stripe communicator of
// place i. A function of the topology alone, as the levels are.
bool NodeStripesPossible(const Topology& topology);
// How many segments an Allreduce by stripes of `count` elements of `element_bytes`
// cuts its vector into, on nodes of `places` ranks with pipelining chunks of
// `chunk_bytes` (node_levels.h): a segment's node calls overlap the stripes' calls of
// the segment before, so the network's part hides behind the node's. At most
// kStripeSegmentChunks chunks a segment (1 MiB by default), but two segments for a
// vector of two chunks or more (one segment leaves nothing to overlap), at most
// kMaxStripeSegments, each with an element for every place. A function of arguments
// every rank passes alike.
inline constexpr size_t kStripeSegmentChunks = 4;
inline constexpr size_t kMaxStripeSegments = 8;
size_t StripeSegments(size_t count, size_t element_bytes, size_t places, size_t chunk_bytes);

SelectionInputs AgreedSelectionInputs(const CollectiveArgs& args, const Topology& topology,
                                      bool node_engine = false, bool node_single_copy = false,
                                      bool node_oversubscribed = false, bool node_levels = false);

// Bytes of a rank's slot in the node engine's segment: what a rank publishes up to
// this size is copied there, beyond it read from the rank's own buffer
// (node_engine.h).
inline constexpr size_t kNodeSlotBytes = 64 * 1024;

// The most bytes a rank publishes in a node call of `collective` whose agreed message
// size (CollectiveArgs::AgreedMessageBytes) is `bytes` on `ranks` ranks, to compare
// with a slot (without single copy the engine runs only calls that fit, and Bcasts of
// any size, through its slots: node_engine_limits::BcastThroughSlots). Nullopt for
// the v-collectives, whose sizes are not agreed.
// Displacements of blocks of `counts` laid end to end (0, counts[0], counts[0] +
// counts[1], ...): the layout the generators and the simulator's calls use for packed
// blocks.
std::vector<size_t> PackedDisplacements(absl::Span<const size_t> counts);

std::optional<size_t> NodePublicationBytes(Collective collective, std::optional<size_t> bytes,
                                           int ranks);

using ScheduleGenerator = Schedule (*)(const CollectiveArgs& args, const Topology& topology,
                                       int rank);

struct Algorithm {
  absl::string_view name;
  Collective collective;
  // Reduces in canonical rank order, so any op may use it.
  bool any_op;
  // Whether it can run a call (null: always); only agreed inputs, so that every rank
  // of the call answers alike.
  bool (*can_run)(const SelectionInputs& inputs);
  // Null for the node engine's algorithms ("node"), which run on the node's shared
  // segment instead of a Schedule (node_engine.h), and for "node_levels".
  ScheduleGenerator generate;
  // A composition of calls on the communicator's node levels (node_levels.h): each
  // node's ranks through their own communicator (its node engine), its leaders' (or
  // for "node_stripes", each place's stripe) through theirs.
  bool node_levels = false;

  bool runs_schedule() const { return generate != nullptr; }
  // The node levels' Allreduce by stripes ("node_stripes"), not by the leaders.
  bool runs_by_stripes() const;
  bool on_node() const { return generate == nullptr && !node_levels; }
};

// Every algorithm, grouped by collective.
absl::Span<const Algorithm> AllAlgorithms();
// The algorithm `name` of `collective`; NotFound listing the names there are.
absl::StatusOr<const Algorithm*> FindAlgorithm(Collective collective, absl::string_view name);
// Why `algorithm` cannot run a call (InvalidArgument with a sentence), or OK.
absl::Status CheckAlgorithmCanRun(const Algorithm& algorithm, const SelectionInputs& inputs);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_ALGORITHMS_H_
