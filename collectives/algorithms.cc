#include "collectives/algorithms.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/schedule_builder.h"

namespace zcoll {
namespace {

// Stages of the tags (ChunkTag): every transfer of one pair in one direction has its
// own (stage, chunk).
constexpr int kFoldStage = 0;
constexpr int kHalvingStage = 1;  // + log2 of the distance: at most 12 stages of 4096
constexpr int kGatherStage = 20;  // + log2 of the distance
constexpr int kFinalStage = 40;

uint32_t ChunkTag(int stage, size_t chunk) {
  return (static_cast<uint32_t>(stage) << kChunkTagBits) | static_cast<uint32_t>(chunk);
}

Slice Sub(const Slice& slice, const ElementRange& range) {
  return {slice.buffer, slice.offset + range.offset, range.count};
}

Slice Whole(BufferId buffer, size_t count) { return {buffer, 0, count}; }

// The pipelining chunks of `count` elements: about chunk_bytes each, at most
// kMaxChunks.
std::vector<ElementRange> Chunks(const CollectiveArgs& args, size_t count) {
  size_t per_chunk =
      std::max<size_t>(1, args.chunk_bytes / std::max<size_t>(1, args.element_bytes));
  per_chunk = std::max(per_chunk, (count + kMaxChunks - 1) / kMaxChunks);
  return SplitIntoChunks(count, per_chunk);
}

void SendChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& source) {
  const std::vector<ElementRange> chunks = Chunks(args, source.count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    builder.Send(peer, ChunkTag(stage, chunk), Sub(source, chunks[chunk]));
  }
}

void RecvChunked(ScheduleBuilder& builder, const CollectiveArgs& args, int peer, int stage,
                 const Slice& destination) {
  const std::vector<ElementRange> chunks = Chunks(args, destination.count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    builder.Recv(peer, ChunkTag(stage, chunk), Sub(destination, chunks[chunk]));
  }
}

// Every rank's block of a reduce_scatter(_block).
std::vector<size_t> BlockCounts(const CollectiveArgs& args) {
  if (args.collective == Collective::kReduceScatter) return args.counts;
  return std::vector<size_t>(args.size, args.count);
}

size_t Sum(absl::Span<const size_t> values) {
  size_t sum = 0;
  for (size_t value : values) sum += value;
  return sum;
}

// Element counts of this rank's send and receive buffers (algorithms.h's table).
std::pair<size_t, size_t> BufferCounts(const CollectiveArgs& args, int rank) {
  const bool root = rank == args.root;
  switch (args.collective) {
    case Collective::kReduce:
      return {args.in_place && root ? 0 : args.count, root ? args.count : 0};
    case Collective::kAllreduce:
      return {args.in_place ? 0 : args.count, args.count};
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter: {
      const std::vector<size_t> counts = BlockCounts(args);
      const size_t total = Sum(counts);
      return {args.in_place ? 0 : total, args.in_place ? total : counts[rank]};
    }
    case Collective::kScatter:
      return {root ? args.count * args.size : 0, args.in_place && root ? 0 : args.count};
    case Collective::kScatterv: {
      size_t extent = 0;
      for (size_t r = 0; r < args.counts.size(); ++r) {
        extent = std::max(extent, args.displs[r] + args.counts[r]);
      }
      return {root ? extent : 0, args.in_place && root ? 0 : args.count};
    }
  }
  return {0, 0};
}

ScheduleBuilder MakeBuilder(const CollectiveArgs& args, int rank) {
  const auto [send_count, recv_count] = BufferCounts(args, rank);
  return ScheduleBuilder(rank, args.size, send_count, recv_count);
}

// Where this rank's contribution to a reduction is.
Slice Contribution(const CollectiveArgs& args, int rank, size_t count) {
  const bool from_recv =
      args.in_place && (args.collective != Collective::kReduce || rank == args.root);
  return Whole(from_recv ? BufferId::Recv() : BufferId::Send(), count);
}

// Reduces `left op right` into `destination` chunk by chunk, where `left` and `right`
// are equally long.
void ReduceChunked(ScheduleBuilder& builder, const CollectiveArgs& args, const Slice& left,
                   const Slice& right, const Slice& destination) {
  for (const ElementRange& chunk : Chunks(args, destination.count)) {
    const Slice operands[] = {Sub(left, chunk), Sub(right, chunk)};
    builder.Reduce(operands, Sub(destination, chunk));
  }
}

// ---------------------------------------------------------------------------------
// Reduce: k-nomial tree.
//
// Over ranks relative to the root for commutative ops. For the others the tree is
// rooted at rank 0, where every subtree is a contiguous range of ranks and a node
// combines its own contribution with its children's in increasing order, which is
// canonical rank order; rank 0 then sends the result to the root.
Schedule KnomialReduce(const CollectiveArgs& args, int rank, int radix) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const int tree_root = args.commutative ? args.root : 0;
  auto real = [&](int vrank) { return (vrank + tree_root) % size; };
  const int vrank = (rank - tree_root + size) % size;
  // Children in increasing order of their subtrees; the parent clears vrank's lowest
  // non-zero base-radix digit.
  std::vector<int> children;
  int parent = -1;
  for (int64_t stride = 1; stride < size; stride *= radix) {
    const int digit = static_cast<int>((vrank / stride) % radix);
    if (digit != 0) {
      parent = vrank - digit * static_cast<int>(stride);
      break;
    }
    for (int64_t i = 1; i < radix && vrank + i * stride < size; ++i) {
      children.push_back(vrank + static_cast<int>(i * stride));
    }
  }
  const Slice mine = Contribution(args, rank, count);
  const bool holds_result = rank == args.root && vrank == 0;
  const Slice result = Whole(BufferId::Recv(), count);
  if (children.empty() && holds_result) {  // a one-rank communicator
    if (!args.in_place) builder.Copy(mine, result);
    return std::move(builder).Finish();
  }
  Slice partial = mine;
  std::vector<Slice> from_child;
  if (!children.empty()) {
    partial = holds_result ? result : Whole(builder.AddScratch(count), count);
    for (size_t i = 0; i < children.size(); ++i) {
      from_child.push_back(Whole(builder.AddScratch(count), count));
    }
  }
  const std::vector<ElementRange> chunks = Chunks(args, count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    const ElementRange& range = chunks[chunk];
    if (!children.empty()) {
      std::vector<Slice> operands = {Sub(mine, range)};
      for (size_t i = 0; i < children.size(); ++i) {
        builder.Recv(real(children[i]), ChunkTag(0, chunk), Sub(from_child[i], range));
        operands.push_back(Sub(from_child[i], range));
      }
      builder.Reduce(operands, Sub(partial, range));
    }
    if (parent >= 0) {
      builder.Send(real(parent), ChunkTag(0, chunk), Sub(partial, range));
    } else if (!holds_result) {
      builder.Send(args.root, ChunkTag(kFinalStage, chunk), Sub(partial, range));
    }
  }
  if (rank == args.root && !holds_result) {
    RecvChunked(builder, args, tree_root, kFinalStage, result);
  }
  return std::move(builder).Finish();
}

Schedule BinomialReduce(const CollectiveArgs& args, const Topology&, int rank) {
  return KnomialReduce(args, rank, 2);
}

Schedule KnomialReduce4(const CollectiveArgs& args, const Topology&, int rank) {
  return KnomialReduce(args, rank, 4);
}

// ---------------------------------------------------------------------------------
// Rabenseifner's reduce-scatter by recursive halving, the first half of the
// Rabenseifner reduce and allreduce.
//
// With p2 the largest power of two <= size and rem = size - p2, the first 2*rem
// ranks fold pairwise (rank 2i sends its vector to 2i+1, which reduces a(2i) op
// a(2i+1)), leaving p2 participants numbered in rank order. In stage s (distance
// 2^s) partners exchange half of their current window of the vector's p2 blocks and
// reduce the half they keep; the one whose bit s is clear keeps the lower half. Each
// partial result then covers a contiguous, aligned range of participants and the
// lower range is always the left operand, so the order is canonical. Chunks pipeline
// each stage into the next.
int LargestPowerOfTwoAtMost(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

struct Halving {
  int p2 = 1;
  int rem = 0;
  int newrank = -1;  // -1: folded away (an even rank below 2*rem)
  // window[s]: the blocks this participant holds after stage s.
  std::vector<std::pair<int, int>> window;

  // The fold of `size` ranks as `rank` sees it, before any stage.
  static Halving For(int rank, int size) {
    Halving halving;
    halving.p2 = LargestPowerOfTwoAtMost(size);
    halving.rem = size - halving.p2;
    halving.newrank = Participant(rank, halving.rem);
    return halving;
  }
  int RealRank(int participant) const {
    return participant < rem ? 2 * participant + 1 : participant + rem;
  }
  static int Participant(int rank, int rem) {
    if (rank < 2 * rem) return rank % 2 == 1 ? rank / 2 : -1;
    return rank - rem;
  }
  // The window before stage s.
  std::pair<int, int> WindowBefore(int stage) const {
    return stage == 0 ? std::make_pair(0, p2) : window[stage - 1];
  }
  // The partner's window after stage s: the other half of the window before it.
  std::pair<int, int> PartnerWindow(int stage) const {
    const auto [lo, hi] = WindowBefore(stage);
    const int mid = (lo + hi) / 2;
    return window[stage].first == lo ? std::make_pair(mid, hi) : std::make_pair(lo, mid);
  }
};

int Log2(int power_of_two) {
  int log = 0;
  while ((1 << log) < power_of_two) ++log;
  return log;
}

ElementRange BlockRange(size_t count, int parts, std::pair<int, int> blocks) {
  const ElementRange first = EvenBlock(count, parts, blocks.first);
  const ElementRange last = EvenBlock(count, parts, blocks.second - 1);
  return {first.offset, last.offset + last.count - first.offset};
}

// Leaves the reduced window in `work` (a whole vector) on each participant.
Halving HalvingReduceScatter(ScheduleBuilder& builder, const CollectiveArgs& args,
                             const Slice& mine, const Slice& work, const Slice& incoming) {
  const int rank = builder.rank(), size = args.size;
  Halving halving = Halving::For(rank, size);
  Slice source = mine;
  if (rank < 2 * halving.rem) {
    if (rank % 2 == 0) {
      SendChunked(builder, args, rank + 1, kFoldStage, mine);
      return halving;
    }
    RecvChunked(builder, args, rank - 1, kFoldStage, incoming);
    ReduceChunked(builder, args, incoming, mine, work);
    source = work;
  }
  int lo = 0, hi = halving.p2;
  for (int stage = 0, mask = 1; mask < halving.p2; ++stage, mask <<= 1) {
    const int partner_new = halving.newrank ^ mask;
    const int partner = halving.RealRank(partner_new);
    const int mid = (lo + hi) / 2;
    const bool keep_upper = (halving.newrank & mask) != 0;
    const std::pair<int, int> keep = keep_upper ? std::make_pair(mid, hi) : std::make_pair(lo, mid);
    const std::pair<int, int> give = keep_upper ? std::make_pair(lo, mid) : std::make_pair(mid, hi);
    const ElementRange kept = BlockRange(args.count, halving.p2, keep);
    const ElementRange given = BlockRange(args.count, halving.p2, give);
    SendChunked(builder, args, partner, kHalvingStage + stage, Sub(source, given));
    RecvChunked(builder, args, partner, kHalvingStage + stage, Sub(incoming, kept));
    if (partner_new < halving.newrank) {
      ReduceChunked(builder, args, Sub(incoming, kept), Sub(source, kept), Sub(work, kept));
    } else {
      ReduceChunked(builder, args, Sub(source, kept), Sub(incoming, kept), Sub(work, kept));
    }
    source = work;
    lo = keep.first;
    hi = keep.second;
    halving.window.emplace_back(lo, hi);
  }
  if (!(source == work)) builder.Copy(source, work);  // one participant and no fold
  return halving;
}

// Reduce: Rabenseifner's (reduce-scatter by recursive halving, then a binomial
// gather of the blocks towards the root). Bandwidth-optimal: every rank reduces and
// moves about 2 (size-1)/size of the vector.
Schedule RabenseifnerReduce(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Contribution(args, rank, count);
  const Slice result = Whole(BufferId::Recv(), count);
  const Slice work = rank == args.root ? result : Whole(builder.AddScratch(count), count);
  const Slice incoming = Whole(builder.AddScratch(count), count);
  const Halving halving = HalvingReduceScatter(builder, args, mine, work, incoming);
  // The gather's target: the root, or the participant that folded it in.
  int target = Halving::Participant(args.root, halving.rem);
  if (target < 0) target = Halving::Participant(args.root + 1, halving.rem);
  if (halving.newrank >= 0) {
    const int stages = Log2(halving.p2);
    for (int stage = stages - 1; stage >= 0; --stage) {
      const int mask = 1 << stage;
      const int partner = halving.RealRank(halving.newrank ^ mask);
      if ((halving.newrank ^ target) & mask) {
        SendChunked(builder, args, partner, kGatherStage + stage,
                    Sub(work, BlockRange(count, halving.p2, halving.window[stage])));
        break;
      }
      RecvChunked(builder, args, partner, kGatherStage + stage,
                  Sub(work, BlockRange(count, halving.p2, halving.PartnerWindow(stage))));
    }
    if (halving.newrank == target && rank != args.root) {
      SendChunked(builder, args, args.root, kFinalStage, work);
    }
  }
  if (rank == args.root && halving.newrank < 0) {
    RecvChunked(builder, args, halving.RealRank(target), kFinalStage, result);
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Allreduce.

// The even ranks folded away get the result from their odd neighbour.
void Unfold(ScheduleBuilder& builder, const CollectiveArgs& args, const Halving& halving,
            const Slice& result) {
  const int rank = builder.rank();
  if (rank >= 2 * halving.rem) return;
  if (rank % 2 == 1) {
    SendChunked(builder, args, rank - 1, kFinalStage, result);
  } else {
    RecvChunked(builder, args, rank + 1, kFinalStage, result);
  }
}

// Recursive doubling: log2(size) exchanges of the whole vector, after the same fold
// as Rabenseifner's. Partners reduce in the same order (lower ranks left), so every
// rank computes bit-identical results. For small vectors: latency log2(size).
Schedule RecursiveDoublingAllreduce(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Contribution(args, rank, count);
  const Slice result = Whole(BufferId::Recv(), count);
  const Halving halving = Halving::For(rank, args.size);
  if (args.size == 1) {
    if (!args.in_place) builder.Copy(mine, result);
    return std::move(builder).Finish();
  }
  const Slice incoming = Whole(builder.AddScratch(count), count);
  Slice source = mine;
  if (rank < 2 * halving.rem) {
    if (rank % 2 == 0) {
      SendChunked(builder, args, rank + 1, kFoldStage, mine);
      Unfold(builder, args, halving, result);
      return std::move(builder).Finish();
    }
    RecvChunked(builder, args, rank - 1, kFoldStage, incoming);
    ReduceChunked(builder, args, incoming, mine, result);
    source = result;
  }
  for (int stage = 0, mask = 1; mask < halving.p2; ++stage, mask <<= 1) {
    const int partner_new = halving.newrank ^ mask;
    const int partner = halving.RealRank(partner_new);
    SendChunked(builder, args, partner, kHalvingStage + stage, source);
    RecvChunked(builder, args, partner, kHalvingStage + stage, incoming);
    if (partner_new < halving.newrank) {
      ReduceChunked(builder, args, incoming, source, result);
    } else {
      ReduceChunked(builder, args, source, incoming, result);
    }
    source = result;
  }
  Unfold(builder, args, halving, result);
  return std::move(builder).Finish();
}

// Rabenseifner's allreduce: reduce-scatter by recursive halving, then an allgather
// by recursive doubling that retraces it. Each block is reduced on one rank only, so
// every rank gets bit-identical results.
Schedule RabenseifnerAllreduce(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Contribution(args, rank, count);
  const Slice result = Whole(BufferId::Recv(), count);
  const Slice incoming = Whole(builder.AddScratch(count), count);
  const Halving halving = HalvingReduceScatter(builder, args, mine, result, incoming);
  if (halving.newrank >= 0) {
    for (int stage = Log2(halving.p2) - 1; stage >= 0; --stage) {
      const int partner = halving.RealRank(halving.newrank ^ (1 << stage));
      SendChunked(builder, args, partner, kGatherStage + stage,
                  Sub(result, BlockRange(count, halving.p2, halving.window[stage])));
      RecvChunked(builder, args, partner, kGatherStage + stage,
                  Sub(result, BlockRange(count, halving.p2, halving.PartnerWindow(stage))));
    }
  }
  Unfold(builder, args, halving, result);
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Reduce-scatter: pairwise. Every rank sends each peer that peer's block directly
// and reduces its own block from all contributions in one pass, in rank order (any
// op). Bandwidth-optimal; size-1 messages per rank, all in flight at once.
Schedule PairwiseReduceScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const std::vector<size_t> counts = BlockCounts(args);
  std::vector<size_t> displs(size, 0);
  for (int r = 1; r < size; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  const size_t total = Sum(counts);
  const Slice input = Whole(args.in_place ? BufferId::Recv() : BufferId::Send(), total);
  const size_t mine_count = counts[rank];
  const Slice output{BufferId::Recv(), 0, mine_count};
  Slice own{input.buffer, displs[rank], mine_count};
  if (size == 1) {
    if (!args.in_place) builder.Copy(own, output);
    return std::move(builder).Finish();
  }
  // In place, the result's first elements may be the own block's later ones: keep a
  // copy of the own block then.
  if (args.in_place && displs[rank] > 0 && displs[rank] < mine_count) {
    const Slice copy = Whole(builder.AddScratch(mine_count), mine_count);
    builder.Copy(own, copy);
    own = copy;
  }
  const BufferId incoming = builder.AddScratch(mine_count * static_cast<size_t>(size - 1));
  // Peer at distance d: its block goes to slot d-1.
  auto slot = [&](int distance) {
    return Slice{incoming, mine_count * static_cast<size_t>(distance - 1), mine_count};
  };
  for (int distance = 1; distance < size; ++distance) {
    const int to = (rank + distance) % size;
    SendChunked(builder, args, to, 0, Slice{input.buffer, displs[to], counts[to]});
    RecvChunked(builder, args, (rank - distance + size) % size, 0, slot(distance));
  }
  for (const ElementRange& chunk : Chunks(args, mine_count)) {
    std::vector<Slice> operands;
    for (int from = 0; from < size; ++from) {
      operands.push_back(from == rank ? Sub(own, chunk)
                                      : Sub(slot((rank - from + size) % size), chunk));
    }
    builder.Reduce(operands, Sub(output, chunk));
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Scatter(v).

// Linear: the root sends every rank its block in one message. Scatterv's counts are
// known at the root only, so this is scatterv's algorithm.
Schedule LinearScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const bool vector = args.collective == Collective::kScatterv;
  if (rank != args.root) {
    builder.Recv(args.root, 0, Whole(BufferId::Recv(), args.count));
    return std::move(builder).Finish();
  }
  auto block = [&](int r) {
    return vector ? Slice{BufferId::Send(), args.displs[r], args.counts[r]}
                  : Slice{BufferId::Send(), args.count * static_cast<size_t>(r), args.count};
  };
  // Farthest first, so the nearest ranks (often the same node's) are not served
  // before the rest.
  for (int distance = 1; distance < args.size; ++distance) {
    const int to = (args.root + distance) % args.size;
    builder.Send(to, 0, block(to));
  }
  const Slice own = block(rank);
  if (!args.in_place && own.count > 0) builder.Copy(own, Whole(BufferId::Recv(), own.count));
  return std::move(builder).Finish();
}

int LowestBit(int value) { return value & -value; }

// Binomial: each rank receives its subtree's blocks from its parent and passes the
// subtrees of its children on, largest first: log2(size) rounds.
Schedule BinomialScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size, root = args.root;
  const size_t count = args.count;
  const int vrank = (rank - root + size) % size;
  auto real = [&](int v) { return (v + root) % size; };
  auto subtree = [&](int v) { return v == 0 ? size : std::min(LowestBit(v), size - v); };
  // The root's blocks for vranks [v, v + n) lie in one or two runs of its buffer
  // (two when the ranks wrap past size - 1).
  auto root_pieces = [&](int v, int n) {
    std::vector<std::pair<int, int>> pieces;  // (first vrank, vranks)
    const int wrap = size - root;             // vrank of rank 0
    if (v < wrap && wrap < v + n) {
      pieces.emplace_back(v, wrap - v);
      pieces.emplace_back(wrap, v + n - wrap);
    } else {
      pieces.emplace_back(v, n);
    }
    return pieces;
  };
  const int mine = subtree(vrank);
  // This rank's subtree's blocks, in vrank order (the root reads its buffer instead).
  Slice held = Whole(BufferId::Recv(), count);
  if (vrank != 0) {
    if (mine > 1) held = Whole(builder.AddScratch(count * mine), count * mine);
    const int parent = vrank - LowestBit(vrank);
    if (parent == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(vrank, mine);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Recv(root, static_cast<uint32_t>(piece),
                     Slice{held.buffer, count * (pieces[piece].first - vrank),
                           count * pieces[piece].second});
      }
    } else {
      builder.Recv(real(parent), 0, held);
    }
  }
  const int top =
      vrank == 0 ? LargestPowerOfTwoAtMost(std::max(1, size - 1)) : LowestBit(vrank) / 2;
  for (int mask = top; mask >= 1; mask /= 2) {
    const int child = vrank + mask;
    if (child >= size) continue;
    const int blocks = subtree(child);
    if (vrank == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(child, blocks);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Send(real(child), static_cast<uint32_t>(piece),
                     Slice{BufferId::Send(), count * real(pieces[piece].first),
                           count * pieces[piece].second});
      }
    } else {
      builder.Send(real(child), 0, Slice{held.buffer, count * (child - vrank), count * blocks});
    }
  }
  if (vrank == 0) {
    if (!args.in_place && count > 0) {
      builder.Copy(Slice{BufferId::Send(), count * rank, count}, Whole(BufferId::Recv(), count));
    }
  } else if (mine > 1 && count > 0) {
    builder.Copy(Whole(held.buffer, count), Whole(BufferId::Recv(), count));
  }
  return std::move(builder).Finish();
}

constexpr Algorithm kAlgorithms[] = {
    {"binomial", Collective::kReduce, true, nullptr, BinomialReduce},
    {"knomial", Collective::kReduce, true, nullptr, KnomialReduce4},
    {"rabenseifner", Collective::kReduce, true, nullptr, RabenseifnerReduce},
    {"recursive_doubling", Collective::kAllreduce, true, nullptr, RecursiveDoublingAllreduce},
    {"rabenseifner", Collective::kAllreduce, true, nullptr, RabenseifnerAllreduce},
    {"pairwise", Collective::kReduceScatterBlock, true, nullptr, PairwiseReduceScatter},
    {"pairwise", Collective::kReduceScatter, true, nullptr, PairwiseReduceScatter},
    {"linear", Collective::kScatter, true, nullptr, LinearScatter},
    {"binomial", Collective::kScatter, true, nullptr, BinomialScatter},
    {"linear", Collective::kScatterv, true, nullptr, LinearScatter},
};

constexpr absl::string_view kCollectiveNames[kNumCollectives] = {
    "reduce", "allreduce", "reduce_scatter_block", "reduce_scatter", "scatter", "scatterv",
};

}  // namespace

size_t CollectiveArgs::MessageBytes() const {
  switch (collective) {
    case Collective::kReduceScatter: {
      size_t total = 0;
      for (size_t c : counts) total += c;
      return total * element_bytes;
    }
    case Collective::kReduceScatterBlock:
      return count * static_cast<size_t>(size) * element_bytes;
    default:
      return count * element_bytes;
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

absl::Status CheckAlgorithmCanRun(const Algorithm& algorithm, const CollectiveArgs& args) {
  if (!algorithm.any_op && !args.commutative) {
    return absl::InvalidArgumentError(absl::StrCat(CollectiveName(algorithm.collective),
                                                   " algorithm '", algorithm.name,
                                                   "' needs a commutative op, and this op is not"));
  }
  if (algorithm.can_run != nullptr && !algorithm.can_run(args)) {
    return absl::InvalidArgumentError(absl::StrCat(CollectiveName(algorithm.collective),
                                                   " algorithm '", algorithm.name,
                                                   "' cannot run these arguments"));
  }
  return absl::OkStatus();
}

}  // namespace zcoll
