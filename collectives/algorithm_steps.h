// Building blocks shared by the algorithms (collectives/algorithms.h), and the
// generators themselves, which algorithms.cc lists. Internal to the algorithms'
// sources: reduction_algorithms.cc (reduce, allreduce, reduce-scatter, scan) and
// movement_algorithms.cc (scatter, gather, bcast, allgather, alltoall, barrier).

#ifndef ZCOLL_COLLECTIVES_ALGORITHM_STEPS_H_
#define ZCOLL_COLLECTIVES_ALGORITHM_STEPS_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "collectives/schedule_builder.h"
#include "core/schedule.h"
#include "core/topology.h"

namespace zcoll::algorithm_steps {

// Stages of the tags (ChunkTag): every transfer of one pair in one direction has its
// own (stage, chunk).
inline constexpr int kFoldStage = 0;
inline constexpr int kHalvingStage = 1;  // + log2 of the distance: at most 12 stages
inline constexpr int kGatherStage = 20;  // + log2 of the distance
inline constexpr int kFinalStage = 40;

inline uint32_t ChunkTag(int stage, size_t chunk) {
  return (static_cast<uint32_t>(stage) << kChunkTagBits) | static_cast<uint32_t>(chunk);
}

inline Slice Sub(const Slice& slice, const ElementRange& range) {
  return {slice.buffer, slice.offset + range.offset, range.count};
}
inline Slice Whole(BufferId buffer, size_t count) { return {buffer, 0, count}; }
// A v-collective's block: an empty one is placed at 0, as its displacement need not
// lie inside the buffer.
inline Slice BlockAt(BufferId buffer, size_t displ, size_t count) {
  return {buffer, count == 0 ? 0 : displ, count};
}

// The chunk numbers a stage's transfers may put in their tags: [first, first + count).
// One pipeline owns them all; an algorithm that runs several independent pipelines
// over parts of a vector gives each part its own share (SplitChunkSpace), so their
// tags never meet.
struct ChunkSpace {
  size_t first = 0;
  size_t count = kMaxChunks;
};
// Share `part` of `parts` equal shares of the whole space.
ChunkSpace SplitChunkSpace(int parts, int part);

// The pipelining chunks of `count` elements: about chunk_bytes each, at most
// space.count.
std::vector<ElementRange> Chunks(const CollectiveArgs& args, size_t count, ChunkSpace space = {});
void SendChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& source, ChunkSpace space = {});
void RecvChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& destination, ChunkSpace space = {});
// destination = left op right, chunk by chunk (left and right equally long).
void ReduceChunked(ScheduleBuilder& builder, const CollectiveArgs& args, const Slice& left,
                   const Slice& right, const Slice& destination, ChunkSpace space = {});

size_t Sum(absl::Span<const size_t> values);
// The elements a layout of blocks spans: max(displs[r] + counts[r]).
size_t Extent(absl::Span<const size_t> counts, absl::Span<const size_t> displs);

// Element counts of this rank's send and receive buffers (algorithms.h's table).
std::pair<size_t, size_t> BufferCounts(const CollectiveArgs& args, int rank);
ScheduleBuilder MakeBuilder(const CollectiveArgs& args, int rank);

// A rank's place in a tree: its parent (-1 at the tree's root) and its children.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};
// The binomial tree over `members` rooted at members[root_index], as members[index]
// sees it; children largest subtree first. Every subtree is a run of consecutive
// members (counting on from the root, wrapping).
TreeLinks BinomialLinks(absl::Span<const int> members, int root_index, int index);
// The same over `count` members given by `member(i)`, for orders that are computed
// rather than listed (NodeGroupedOrder).
TreeLinks BinomialLinks(int count, absl::FunctionRef<int(int)> member, int root_index, int index);
// The binary tree over `members` rooted at members[root_index] (counting on from the
// root, member v's children are v*2+1 and v*2+2), as members[index] sees it: at most
// two children a member, so a long pipelined vector leaves each member twice, where
// the binomial tree's root sends it log2(size) times.
TreeLinks BinaryLinks(absl::Span<const int> members, int root_index, int index);
// The position of `rank` in `order`.
int IndexOf(absl::Span<const int> order, int rank);
// The shape of TwoLevelLinks' trees.
enum class TreeShape { kBinomial, kBinary };
// The two-level tree rooted at `tree_root`: one leader per node (tree_root leads its
// own node, the lowest rank the others), a tree of `shape` over the leaders and one
// over each node's ranks under its leader. A leader's remote children come first.
TreeLinks TwoLevelLinks(const Topology& topology, int tree_root, int rank,
                        TreeShape shape = TreeShape::kBinomial);
// Every node's ranks are consecutive and nodes are numbered in rank order, so the
// two-level tree rooted at rank 0 reduces in canonical rank order.
bool NodesInRankOrder(const Topology& topology);

int LargestPowerOfTwoAtMost(int n);
int Log2(int power_of_two);
inline int LowestBit(int value) { return value & -value; }

// The generators.
Schedule BinomialReduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule KnomialReduce4(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule RabenseifnerReduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule TwoLevelReduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule RecursiveDoublingAllreduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule RabenseifnerAllreduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule PipelinedRabenseifnerAllreduce(const CollectiveArgs& args, const Topology& topology,
                                        int rank);
Schedule TwoLevelAllreduce(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule PairwiseReduceScatter(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule RecursiveHalvingReduceScatter(const CollectiveArgs& args, const Topology& topology,
                                       int rank);
Schedule RecursiveDoublingScan(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule ChainScan(const CollectiveArgs& args, const Topology& topology, int rank);

Schedule LinearScatter(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule BinomialScatter(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule LinearGather(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule BinomialGather(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule BinomialBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule ChainBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule LinearBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule ScatterAllgatherBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule TwoLevelBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule TwoLevelBinaryBcast(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule RingAllgather(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule BruckAllgather(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule LinearAllgather(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule PairwiseAlltoall(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule BruckAlltoall(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule DisseminationBarrier(const CollectiveArgs& args, const Topology& topology, int rank);
Schedule LinearBarrier(const CollectiveArgs& args, const Topology& topology, int rank);

}  // namespace zcoll::algorithm_steps

#endif  // ZCOLL_COLLECTIVES_ALGORITHM_STEPS_H_
