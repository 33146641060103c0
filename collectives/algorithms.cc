#include "collectives/algorithms.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/algorithm_steps.h"
#include "collectives/node_engine_limits.h"
#include "collectives/schedule_builder.h"

namespace zcoll {
namespace algorithm_steps {

ChunkSpace SplitChunkSpace(int parts, int part) {
  const size_t share = kMaxChunks / static_cast<size_t>(parts);
  return {share * static_cast<size_t>(part), share};
}

std::vector<ElementRange> Chunks(const CollectiveArgs& args, size_t count, ChunkSpace space) {
  size_t per_chunk =
      std::max<size_t>(1, args.chunk_bytes / std::max<size_t>(1, args.element_bytes));
  per_chunk = std::max(per_chunk, (count + space.count - 1) / space.count);
  return SplitIntoChunks(count, per_chunk);
}

void SendChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& source, ChunkSpace space) {
  const std::vector<ElementRange> chunks = Chunks(args, source.count, space);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    builder.Send(peer, ChunkTag(stage, space.first + chunk), Sub(source, chunks[chunk]));
  }
}

void RecvChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& destination, ChunkSpace space) {
  const std::vector<ElementRange> chunks = Chunks(args, destination.count, space);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    builder.Recv(peer, ChunkTag(stage, space.first + chunk), Sub(destination, chunks[chunk]));
  }
}

void ReduceChunked(ScheduleBuilder& builder, const CollectiveArgs& args, const Slice& left,
                   const Slice& right, const Slice& destination, ChunkSpace space) {
  for (const ElementRange& chunk : Chunks(args, destination.count, space)) {
    const Slice operands[] = {Sub(left, chunk), Sub(right, chunk)};
    builder.Reduce(operands, Sub(destination, chunk));
  }
}

size_t Sum(absl::Span<const size_t> values) {
  size_t sum = 0;
  for (size_t value : values) sum += value;
  return sum;
}

size_t Extent(absl::Span<const size_t> counts, absl::Span<const size_t> displs) {
  size_t extent = 0;
  for (size_t r = 0; r < counts.size() && r < displs.size(); ++r) {
    if (counts[r] > 0) extent = std::max(extent, displs[r] + counts[r]);
  }
  return extent;
}

std::pair<size_t, size_t> BufferCounts(const CollectiveArgs& args, int rank) {
  const bool root = rank == args.root;
  const size_t size = static_cast<size_t>(args.size);
  const size_t own = args.in_place ? 0 : args.count;  // a contribution or block of one
  switch (args.collective) {
    case Collective::kReduce:
      return {args.in_place && root ? 0 : args.count, root ? args.count : 0};
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan:
      return {own, args.count};
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter: {
      const size_t total =
          args.collective == Collective::kReduceScatter ? Sum(args.counts) : args.count * size;
      const size_t mine =
          args.collective == Collective::kReduceScatter ? args.counts[rank] : args.count;
      return {args.in_place ? 0 : total, args.in_place ? total : mine};
    }
    case Collective::kScatter:
      return {root ? args.count * size : 0, args.in_place && root ? 0 : args.count};
    case Collective::kScatterv:
      return {root ? Extent(args.counts, args.displs) : 0, args.in_place && root ? 0 : args.count};
    case Collective::kBcast:
      return {0, args.count};
    case Collective::kGather:
      return {args.in_place && root ? 0 : args.count, root ? args.count * size : 0};
    case Collective::kGatherv:
      return {args.in_place && root ? 0 : args.count, root ? Extent(args.counts, args.displs) : 0};
    case Collective::kAllgather:
      return {own, args.count * size};
    case Collective::kAllgatherv:
      return {own, Extent(args.counts, args.displs)};
    case Collective::kAlltoall:
      return {args.in_place ? 0 : args.count * size, args.count * size};
    case Collective::kAlltoallv:
      return {args.in_place ? 0 : Extent(args.counts, args.displs),
              Extent(args.recv_counts, args.recv_displs)};
    case Collective::kBarrier:
      return {0, 0};
  }
  return {0, 0};
}

ScheduleBuilder MakeBuilder(const CollectiveArgs& args, int rank) {
  const auto [send_count, recv_count] = BufferCounts(args, rank);
  return ScheduleBuilder(rank, args.size, send_count, recv_count);
}

TreeLinks BinomialLinks(absl::Span<const int> members, int root_index, int index) {
  return BinomialLinks(
      static_cast<int>(members.size()), [members](int i) { return members[i]; }, root_index, index);
}

TreeLinks BinomialLinks(int count, absl::FunctionRef<int(int)> member, int root_index, int index) {
  const int n = count;
  const int v = (index - root_index + n) % n;
  auto real = [&](int vv) { return member((vv + root_index) % n); };
  TreeLinks links;
  links.parent = v == 0 ? -1 : real(v - LowestBit(v));
  const int top = v == 0 ? LargestPowerOfTwoAtMost(std::max(1, n - 1)) : LowestBit(v) / 2;
  for (int mask = top; mask >= 1; mask /= 2) {
    if (v + mask < n) links.children.push_back(real(v + mask));
  }
  return links;
}

TreeLinks BinaryLinks(absl::Span<const int> members, int root_index, int index) {
  const int n = static_cast<int>(members.size());
  const int v = (index - root_index + n) % n;
  auto real = [&](int vv) { return members[static_cast<size_t>((vv + root_index) % n)]; };
  TreeLinks links;
  links.parent = v == 0 ? -1 : real((v - 1) / 2);
  for (int child = 2 * v + 1; child <= 2 * v + 2 && child < n; ++child) {
    links.children.push_back(real(child));
  }
  return links;
}

int IndexOf(absl::Span<const int> order, int rank) {
  return static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
}

TreeLinks TwoLevelLinks(const Topology& topology, int tree_root, int rank, TreeShape shape) {
  const int root_node = topology.node_of(tree_root);
  auto leader_of = [&](int node) {
    return node == root_node ? tree_root : topology.node_leader(node);
  };
  const int node = topology.node_of(rank);
  const absl::Span<const int> local = topology.ranks_on_node(node);
  auto tree = [shape](absl::Span<const int> members, int root_index, int index) {
    return shape == TreeShape::kBinary ? BinaryLinks(members, root_index, index)
                                       : BinomialLinks(members, root_index, index);
  };
  TreeLinks links = tree(local, IndexOf(local, leader_of(node)), topology.local_rank(rank));
  if (rank == leader_of(node)) {
    std::vector<int> leaders;
    for (int n = 0; n < topology.num_nodes(); ++n) leaders.push_back(leader_of(n));
    TreeLinks over_nodes = tree(leaders, root_node, node);
    over_nodes.children.insert(over_nodes.children.end(), links.children.begin(),
                               links.children.end());
    links = std::move(over_nodes);
  }
  return links;
}

bool NodesInRankOrder(const Topology& topology) {
  // Node by node rather than rank by rank: the simulator asks for every rank's tree.
  int next = 0;
  for (int node = 0; node < topology.num_nodes(); ++node) {
    const absl::Span<const int> on_node = topology.ranks_on_node(node);
    if (on_node.front() != next ||
        on_node.back() - on_node.front() + 1 != static_cast<int>(on_node.size())) {
      return false;
    }
    next = on_node.back() + 1;
  }
  return true;
}

int LargestPowerOfTwoAtMost(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int Log2(int power_of_two) {
  int log = 0;
  while ((1 << log) < power_of_two) ++log;
  return log;
}

}  // namespace algorithm_steps

std::vector<size_t> PackedDisplacements(absl::Span<const size_t> counts) {
  std::vector<size_t> displs(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  return displs;
}

namespace {

using namespace algorithm_steps;  // NOLINT: the generators

// The node engine: one node whose ranks all mapped its segment, and either they can
// read each other's memory or what each publishes fits its slot, or it is a Bcast
// (which goes through the slots beyond one: node_engine_limits::BcastThroughSlots).
bool NodeEngineCanRun(const SelectionInputs& inputs) {
  if (!inputs.node_engine || inputs.num_nodes != 1 || inputs.size < 2) return false;
  if (inputs.node_single_copy || inputs.collective == Collective::kBcast) return true;
  const std::optional<size_t> published =
      NodePublicationBytes(inputs.collective, inputs.bytes, inputs.size);
  return published.has_value() && *published <= kNodeSlotBytes;
}

// A communicator's levels: several nodes (or NUMA domains of one node), one with
// several ranks.
bool NodeLevelsCanRun(const SelectionInputs& inputs) { return inputs.node_levels; }
// And the nodes hold as many ranks each.
bool NodeStripesCanRun(const SelectionInputs& inputs) { return inputs.node_stripes; }

constexpr Algorithm kAlgorithms[] = {
    {"node", Collective::kReduce, true, NodeEngineCanRun, nullptr},
    {"binomial", Collective::kReduce, true, nullptr, BinomialReduce},
    {"knomial", Collective::kReduce, true, nullptr, KnomialReduce4},
    {"rabenseifner", Collective::kReduce, true, nullptr, RabenseifnerReduce},
    {"two_level", Collective::kReduce, true, nullptr, TwoLevelReduce},
    // (Commutative ops only: a node's ranks need not be consecutive.)
    {"node_levels", Collective::kReduce, false, NodeLevelsCanRun, nullptr, true},
    {"node", Collective::kAllreduce, true, NodeEngineCanRun, nullptr},
    {"recursive_doubling", Collective::kAllreduce, true, nullptr, RecursiveDoublingAllreduce},
    {"rabenseifner", Collective::kAllreduce, true, nullptr, RabenseifnerAllreduce},
    {"pipelined_rabenseifner", Collective::kAllreduce, true, nullptr,
     PipelinedRabenseifnerAllreduce},
    {"two_level", Collective::kAllreduce, true, nullptr, TwoLevelAllreduce},
    // (Commutative ops only: a node's ranks need not be consecutive.)
    {"node_levels", Collective::kAllreduce, false, NodeLevelsCanRun, nullptr, true},
    // (Commutative ops only, as node_levels.)
    {"node_stripes", Collective::kAllreduce, false, NodeStripesCanRun, nullptr, true},
    {"node", Collective::kReduceScatterBlock, true, NodeEngineCanRun, nullptr},
    {"pairwise", Collective::kReduceScatterBlock, true, nullptr, PairwiseReduceScatter},
    {"recursive_halving", Collective::kReduceScatterBlock, false, nullptr,
     RecursiveHalvingReduceScatter},
    {"node", Collective::kReduceScatter, true, NodeEngineCanRun, nullptr},
    {"pairwise", Collective::kReduceScatter, true, nullptr, PairwiseReduceScatter},
    {"recursive_halving", Collective::kReduceScatter, false, nullptr,
     RecursiveHalvingReduceScatter},
    {"node", Collective::kScatter, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kScatter, true, nullptr, LinearScatter},
    {"binomial", Collective::kScatter, true, nullptr, BinomialScatter},
    {"node", Collective::kScatterv, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kScatterv, true, nullptr, LinearScatter},
    {"node", Collective::kBcast, true, NodeEngineCanRun, nullptr},
    {"binomial", Collective::kBcast, true, nullptr, BinomialBcast},
    {"chain", Collective::kBcast, true, nullptr, ChainBcast},
    {"linear", Collective::kBcast, true, nullptr, LinearBcast},
    {"scatter_allgather", Collective::kBcast, true, nullptr, ScatterAllgatherBcast},
    {"two_level", Collective::kBcast, true, nullptr, TwoLevelBcast},
    {"two_level_binary", Collective::kBcast, true, nullptr, TwoLevelBinaryBcast},
    {"node_levels", Collective::kBcast, true, NodeLevelsCanRun, nullptr, true},
    {"node", Collective::kGather, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kGather, true, nullptr, LinearGather},
    {"binomial", Collective::kGather, true, nullptr, BinomialGather},
    {"node", Collective::kGatherv, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kGatherv, true, nullptr, LinearGather},
    {"node", Collective::kAllgather, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kAllgather, true, nullptr, LinearAllgather},
    {"ring", Collective::kAllgather, true, nullptr, RingAllgather},
    {"bruck", Collective::kAllgather, true, nullptr, BruckAllgather},
    {"node_levels", Collective::kAllgather, true, NodeLevelsCanRun, nullptr, true},
    {"node", Collective::kAllgatherv, true, NodeEngineCanRun, nullptr},
    {"linear", Collective::kAllgatherv, true, nullptr, LinearAllgather},
    {"ring", Collective::kAllgatherv, true, nullptr, RingAllgather},
    {"node", Collective::kAlltoall, true, NodeEngineCanRun, nullptr},
    {"pairwise", Collective::kAlltoall, true, nullptr, PairwiseAlltoall},
    {"bruck", Collective::kAlltoall, true, nullptr, BruckAlltoall},
    {"node", Collective::kAlltoallv, true, NodeEngineCanRun, nullptr},
    {"pairwise", Collective::kAlltoallv, true, nullptr, PairwiseAlltoall},
    {"node", Collective::kBarrier, true, NodeEngineCanRun, nullptr},
    {"dissemination", Collective::kBarrier, true, nullptr, DisseminationBarrier},
    {"linear", Collective::kBarrier, true, nullptr, LinearBarrier},
    {"node_levels", Collective::kBarrier, true, NodeLevelsCanRun, nullptr, true},
    {"node", Collective::kScan, true, NodeEngineCanRun, nullptr},
    {"recursive_doubling", Collective::kScan, true, nullptr, RecursiveDoublingScan},
    {"chain", Collective::kScan, true, nullptr, ChainScan},
    {"node", Collective::kExscan, true, NodeEngineCanRun, nullptr},
    {"recursive_doubling", Collective::kExscan, true, nullptr, RecursiveDoublingScan},
    {"chain", Collective::kExscan, true, nullptr, ChainScan},
};

constexpr absl::string_view kCollectiveNames[kNumCollectives] = {
    "reduce",         "allreduce",  "reduce_scatter_block",
    "reduce_scatter", "scatter",    "scatterv",
    "bcast",          "gather",     "gatherv",
    "allgather",      "allgatherv", "alltoall",
    "alltoallv",      "barrier",    "scan",
    "exscan",
};

}  // namespace

bool IsRooted(Collective collective) {
  switch (collective) {
    case Collective::kReduce:
    case Collective::kScatter:
    case Collective::kScatterv:
    case Collective::kBcast:
    case Collective::kGather:
    case Collective::kGatherv:
      return true;
    default:
      return false;
  }
}

std::optional<size_t> CollectiveArgs::AgreedMessageBytes() const {
  switch (collective) {
    case Collective::kReduceScatter:
      return algorithm_steps::Sum(counts) * element_bytes;
    case Collective::kReduceScatterBlock:
      return count * static_cast<size_t>(size) * element_bytes;
    case Collective::kAllgatherv:
      // Every rank passes the same counts; its own block is its own.
      return algorithm_steps::Sum(counts) / static_cast<size_t>(size) * element_bytes;
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAlltoallv:
      return std::nullopt;
    case Collective::kBarrier:
      return 0;
    default:
      return count * element_bytes;
  }
}

std::vector<std::vector<int>> NodeLevelGroups(const Topology& topology) {
  // The ranks grouped by `tier`'s id; empty if a rank's is unknown. Groups are met in
  // rank order, so the order they are met in is their lowest ranks'.
  auto group_by = [&](auto tier) {
    std::map<int, size_t> index_of_group;
    std::vector<std::vector<int>> groups;
    for (int r = 0; r < topology.size(); ++r) {
      const int group = tier(topology.location(r));
      if (group == kUnknownId) return std::vector<std::vector<int>>{};
      const auto [entry, added] = index_of_group.emplace(group, groups.size());
      if (added) groups.emplace_back();
      groups[entry->second].push_back(r);
    }
    return groups;
  };
  auto levels = [](std::vector<std::vector<int>> groups) {
    for (const std::vector<int>& group : groups) {
      if (group.size() > 1 && groups.size() > 1) return groups;
    }
    return std::vector<std::vector<int>>{};
  };
  if (topology.num_nodes() > 1) {
    return levels(group_by([](const RankLocation& at) { return at.node; }));
  }
  // The first tier that splits the node: beyond it every group is a single rank, and
  // before it there is one group.
  for (std::vector<std::vector<int>> groups :
       {group_by([](const RankLocation& at) { return at.package; }),
        group_by([](const RankLocation& at) { return at.numa; }),
        group_by([](const RankLocation& at) { return at.l3; })}) {
    if (groups.size() > 1) return levels(std::move(groups));
  }
  return {};
}

bool Algorithm::runs_by_stripes() const { return can_run == NodeStripesCanRun; }

bool NodeStripesPossible(const Topology& topology) {
  if (topology.num_nodes() < 2) return false;
  const size_t per_node = topology.ranks_on_node(0).size();
  for (int node = 1; node < topology.num_nodes(); ++node) {
    if (topology.ranks_on_node(node).size() != per_node) return false;
  }
  return per_node >= 2;
}

size_t StripeSegments(size_t count, size_t element_bytes, size_t places, size_t chunk_bytes) {
  const size_t segment_bytes =
      chunk_bytes > std::numeric_limits<size_t>::max() / kStripeSegmentChunks
          ? std::numeric_limits<size_t>::max()
          : chunk_bytes * kStripeSegmentChunks;
  const size_t bytes = count * element_bytes;
  size_t segments = bytes / segment_bytes + (bytes % segment_bytes != 0 ? 1 : 0);
  if (bytes / 2 >= chunk_bytes) segments = std::max<size_t>(segments, 2);
  segments = std::min(segments, kMaxStripeSegments);
  segments = std::min(segments, count / std::max<size_t>(places, 1));
  return std::max<size_t>(segments, 1);
}

SelectionInputs AgreedSelectionInputs(const CollectiveArgs& args, const Topology& topology,
                                      bool node_engine, bool node_single_copy,
                                      bool node_oversubscribed, bool node_levels) {
  return {args.collective,
          args.AgreedMessageBytes(),
          args.size,
          args.commutative,
          topology.num_nodes(),
          node_engine,
          node_single_copy,
          node_oversubscribed,
          node_levels,
          node_levels && NodeStripesPossible(topology)};
}

std::optional<size_t> NodePublicationBytes(Collective collective, std::optional<size_t> bytes,
                                           int ranks) {
  switch (collective) {
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv:
    case Collective::kAlltoallv:
      return std::nullopt;
    case Collective::kScatter:
    case Collective::kAlltoall:
      // The root's whole vector; every rank's.
      if (!bytes.has_value()) return std::nullopt;
      return *bytes * static_cast<size_t>(ranks);
    case Collective::kGather:
      // A leaf's block, after the place of the table that a large call's root writes at
      // its slot's start (every rank's slot keeps that place alike).
      if (!bytes.has_value()) return std::nullopt;
      return *bytes + node_engine_limits::TableBytes(collective, ranks);
    default:
      return bytes;
  }
}

absl::string_view CollectiveName(Collective collective) {
  return kCollectiveNames[static_cast<size_t>(collective)];
}

absl::StatusOr<Collective> ParseCollective(absl::string_view name) {
  for (size_t i = 0; i < kNumCollectives; ++i) {
    if (kCollectiveNames[i] == name) return static_cast<Collective>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown collective '", name, "'; known: ", absl::StrJoin(kCollectiveNames, ", ")));
}

std::string CollectiveEnvironmentSuffix(Collective collective) {
  return absl::AsciiStrToUpper(CollectiveName(collective));
}

absl::Span<const Algorithm> AllAlgorithms() { return kAlgorithms; }

absl::StatusOr<const Algorithm*> FindAlgorithm(Collective collective, absl::string_view name) {
  std::vector<absl::string_view> names;
  for (const Algorithm& algorithm : kAlgorithms) {
    if (algorithm.collective != collective) continue;
    if (algorithm.name == name) return &algorithm;
    names.push_back(algorithm.name);
  }
  return absl::NotFoundError(absl::StrCat(CollectiveName(collective), " has no algorithm '", name,
                                          "'; it has ", absl::StrJoin(names, ", ")));
}

absl::Status CheckAlgorithmCanRun(const Algorithm& algorithm, const SelectionInputs& inputs) {
  if (!algorithm.any_op && !inputs.commutative) {
    return absl::InvalidArgumentError(absl::StrCat(CollectiveName(algorithm.collective),
                                                   " algorithm '", algorithm.name,
                                                   "' needs a commutative op, and this op is not"));
  }
  if (algorithm.can_run != nullptr && !algorithm.can_run(inputs)) {
    // What the communicator lacks, where the algorithm's condition is one of its own.
    absl::string_view needs;
    if (algorithm.can_run == NodeEngineCanRun) {
      needs =
          ": it needs the node engine (every rank on one node, sharing its segment) and, beyond "
          "a slot, ranks that can read each other's memory";
    } else if (algorithm.can_run == NodeLevelsCanRun) {
      needs =
          ": it needs node levels (several nodes, or packages, NUMA domains or L3 groups of one "
          "node, one of them with several ranks)";
    } else if (algorithm.can_run == NodeStripesCanRun) {
      needs =
          ": it needs two nodes or more, each with as many of the communicator's ranks, two "
          "or more";
    }
    return absl::InvalidArgumentError(absl::StrCat(CollectiveName(algorithm.collective),
                                                   " algorithm '", algorithm.name,
                                                   "' cannot run these arguments", needs));
  }
  return absl::OkStatus();
}

}  // namespace zcoll
