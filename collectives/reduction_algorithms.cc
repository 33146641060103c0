// The reducing collectives' algorithms: reduce, allreduce, reduce-scatter(_block),
// scan and exscan (algorithms.h lists them; algorithm_steps.h has the pieces).

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "collectives/algorithm_steps.h"

namespace zcoll::algorithm_steps {

namespace {
// Where this rank's contribution to a reduction is.
Slice Contribution(const CollectiveArgs& args, int rank, size_t count) {
  const bool from_recv =
      args.in_place && (args.collective != Collective::kReduce || rank == args.root);
  return Whole(from_recv ? BufferId::Recv() : BufferId::Send(), count);
}

// ---------------------------------------------------------------------------------
// Reduce: trees.

// One chunk of a tree's way up: receive `range` of each child's partial result
// into from_child and combine it after this rank's own into `partial`.
void CombineChildren(ScheduleBuilder& builder, const TreeLinks& links, size_t chunk,
                     const ElementRange& range, const Slice& mine,
                     absl::Span<const Slice> from_child, const Slice& partial) {
  if (links.children.empty()) return;
  std::vector<Slice> operands = {Sub(mine, range)};
  for (size_t i = 0; i < links.children.size(); ++i) {
    builder.Recv(links.children[i], ChunkTag(0, chunk), Sub(from_child[i], range));
    operands.push_back(Sub(from_child[i], range));
  }
  builder.Reduce(operands, Sub(partial, range));
}

// The way up a tree, chunk by chunk: each chunk of this rank's contribution `mine`
// combined with its children's into `partial` and sent on to the parent, at once (a
// rank passes a chunk on as soon as it has combined it); then `then(chunk, range)`
// adds what the caller does with that chunk next.
void ReduceUpTree(ScheduleBuilder& builder, const CollectiveArgs& args, const TreeLinks& links,
                  size_t count, const Slice& mine, const Slice& partial,
                  absl::FunctionRef<void(size_t chunk, const ElementRange& range)> then) {
  std::vector<Slice> from_child;  // a scratch vector per child's partial result
  for (size_t i = 0; i < links.children.size(); ++i) {
    from_child.push_back(Whole(builder.AddScratch(count), count));
  }
  const std::vector<ElementRange> chunks = Chunks(args, count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    const ElementRange& range = chunks[chunk];
    CombineChildren(builder, links, chunk, range, mine, from_child, partial);
    if (links.parent >= 0) builder.Send(links.parent, ChunkTag(0, chunk), Sub(partial, range));
    then(chunk, range);
  }
}

// Reduces up a tree towards `tree_root` (ReduceUpTree), then `tree_root` sends the
// result to the root if it is not the root. A rank combines its own contribution and then its
// children's in the order `links` lists them: canonical rank order when each child's subtree is a
// run of ranks above the rank's and the children are listed in increasing order.
Schedule TreeReduce(const CollectiveArgs& args, int rank, const TreeLinks& links, int tree_root) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Contribution(args, rank, count);
  const bool holds_result = rank == args.root && rank == tree_root;
  const Slice result = Whole(BufferId::Recv(), count);
  if (links.children.empty() && holds_result) {  // a one-rank communicator
    if (!args.in_place) builder.Copy(mine, result);
    return std::move(builder).Finish();
  }
  Slice partial = mine;
  if (!links.children.empty()) {
    partial = holds_result ? result : Whole(builder.AddScratch(count), count);
  }
  ReduceUpTree(builder, args, links, count, mine, partial,
               [&](size_t chunk, const ElementRange& range) {
                 if (links.parent < 0 && !holds_result) {
                   builder.Send(args.root, ChunkTag(kFinalStage, chunk), Sub(partial, range));
                 }
               });
  if (rank == args.root && !holds_result) {
    RecvChunked(builder, args, tree_root, kFinalStage, result);
  }
  return std::move(builder).Finish();
}

// The k-nomial tree for commutative ops: rooted at the root, over the ranks grouped
// by node (few edges cross the network, however the ranks are placed). For the
// others it is rooted at rank 0 over the ranks in order, where every subtree is a run
// of ranks and children come in increasing order, which is canonical rank order;
// rank 0 then sends the result to the root.
Schedule KnomialReduce(const CollectiveArgs& args, const Topology& topology, int rank, int radix) {
  const int size = args.size;
  const int tree_root = args.commutative ? args.root : 0;
  const NodeGroupedOrder grouped(topology, tree_root);
  auto real = [&](int64_t vrank) {
    return args.commutative ? grouped[static_cast<int>(vrank)] : static_cast<int>(vrank);
  };
  const int vrank = args.commutative ? grouped.IndexOf(rank) : rank;
  // The parent clears vrank's lowest non-zero base-radix digit.
  TreeLinks links;
  for (int64_t stride = 1; stride < size; stride *= radix) {
    const int digit = static_cast<int>((vrank / stride) % radix);
    if (digit != 0) {
      links.parent = real(vrank - digit * stride);
      break;
    }
    for (int64_t i = 1; i < radix && vrank + i * stride < size; ++i) {
      links.children.push_back(real(vrank + i * stride));
    }
  }
  return TreeReduce(args, rank, links, tree_root);
}

// A tree for a reduction that follows the nodes (TwoLevelLinks) with children in the
// order they are combined, rooted at `root` for a commutative op. Otherwise it is
// rooted at rank 0, and two-level only where nodes hold runs of ranks in order
// (canonical order then holds: a leader's own node's ranks come before the nodes
// below it); elsewhere a plain binomial tree, as following the nodes would reorder
// the contributions.
std::pair<TreeLinks, int> ReductionTree(const CollectiveArgs& args, const Topology& topology,
                                        int root, int rank) {
  const int tree_root = args.commutative ? root : 0;
  TreeLinks links = args.commutative || NodesInRankOrder(topology)
                        ? TwoLevelLinks(topology, tree_root, rank)
                        : BinomialLinks(
                              args.size, [](int index) { return index; }, 0, rank);
  // Listed largest subtree (and remote nodes) first: reversed, they are in
  // increasing rank order.
  std::reverse(links.children.begin(), links.children.end());
  return {std::move(links), tree_root};
}

}  // namespace

Schedule BinomialReduce(const CollectiveArgs& args, const Topology& topology, int rank) {
  return KnomialReduce(args, topology, rank, 2);
}

Schedule KnomialReduce4(const CollectiveArgs& args, const Topology& topology, int rank) {
  return KnomialReduce(args, topology, rank, 4);
}

// Two-level: up each node's tree to its leader, then up the tree of node leaders
// (HAN's shape): every chunk crosses the network once per node.
Schedule TwoLevelReduce(const CollectiveArgs& args, const Topology& topology, int rank) {
  const auto [links, tree_root] = ReductionTree(args, topology, args.root, rank);
  return TreeReduce(args, rank, links, tree_root);
}

namespace {
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
struct Halving {
  int p2 = 1;
  int rem = 0;
  int newrank = -1;  // -1: folded away (an even rank below 2*rem)
  // The last step of this participant's first stage (kNoStep: it has none).
  StepId first_stage_end = ScheduleBuilder::kNoStep;
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

ElementRange BlockRange(size_t count, int parts, std::pair<int, int> blocks) {
  const ElementRange first = EvenBlock(count, parts, blocks.first);
  const ElementRange last = EvenBlock(count, parts, blocks.second - 1);
  return {first.offset, last.offset + last.count - first.offset};
}

// The buffers of a halving: the data so far, the partner's half, the reduced half.
struct HalvingBuffers {
  Slice source;
  Slice incoming;
  Slice work;
};

// One halving stage with `partner`: sends it the `given` part of the data so far,
// receives its `kept` part and reduces the two into work, the lower participant's
// data as the left operand (canonical order where the halves are runs of ranks).
void ExchangeHalves(ScheduleBuilder& builder, const CollectiveArgs& args, int partner,
                    bool partner_is_lower, int stage, const HalvingBuffers& buffers,
                    const ElementRange& kept, const ElementRange& given, ChunkSpace space = {}) {
  SendChunked(builder, args, partner, kHalvingStage + stage, Sub(buffers.source, given), space);
  RecvChunked(builder, args, partner, kHalvingStage + stage, Sub(buffers.incoming, kept), space);
  const Slice mine = Sub(buffers.source, kept), theirs = Sub(buffers.incoming, kept);
  ReduceChunked(builder, args, partner_is_lower ? theirs : mine, partner_is_lower ? mine : theirs,
                Sub(buffers.work, kept), space);
}

// Leaves the reduced window in `work` (a whole vector) on each participant.
Halving HalvingReduceScatter(ScheduleBuilder& builder, const CollectiveArgs& args,
                             const Slice& mine, const Slice& work, const Slice& incoming,
                             ChunkSpace space = {}) {
  const int rank = builder.rank(), size = args.size;
  Halving halving = Halving::For(rank, size);
  Slice source = mine;
  if (rank < 2 * halving.rem) {
    if (rank % 2 == 0) {
      SendChunked(builder, args, rank + 1, kFoldStage, mine, space);
      return halving;
    }
    RecvChunked(builder, args, rank - 1, kFoldStage, incoming, space);
    ReduceChunked(builder, args, incoming, mine, work, space);
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
    ExchangeHalves(builder, args, partner, partner_new < halving.newrank, stage,
                   {source, incoming, work}, kept, given, space);
    if (stage == 0) halving.first_stage_end = builder.last_step();
    source = work;
    lo = keep.first;
    hi = keep.second;
    halving.window.emplace_back(lo, hi);
  }
  if (!(source == work)) builder.Copy(source, work);  // one participant and no fold
  return halving;
}
}  // namespace

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

namespace {
// ---------------------------------------------------------------------------------
// Allreduce.

// The even ranks folded away get the result from their odd neighbour.
void Unfold(ScheduleBuilder& builder, const CollectiveArgs& args, const Halving& halving,
            const Slice& result, ChunkSpace space = {}) {
  const int rank = builder.rank();
  if (rank >= 2 * halving.rem) return;
  if (rank % 2 == 1) {
    SendChunked(builder, args, rank - 1, kFinalStage, result, space);
  } else {
    RecvChunked(builder, args, rank + 1, kFinalStage, result, space);
  }
}
}  // namespace

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

// Two-level: the two-level reduce towards rank 0 and the two-level bcast back down
// the same tree, chunk by chunk, so the way up and the way down pipeline. Every chunk
// crosses the network twice per node; all ranks get rank 0's bits.
Schedule TwoLevelAllreduce(const CollectiveArgs& args, const Topology& topology, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const TreeLinks links = ReductionTree(args, topology, 0, rank).first;
  const Slice mine = Contribution(args, rank, count);
  const Slice result = Whole(BufferId::Recv(), count);
  if (args.size == 1) {
    if (!args.in_place) builder.Copy(mine, result);
    return std::move(builder).Finish();
  }
  // The partial result goes where the result will be, and is overwritten by it.
  const Slice partial = links.children.empty() ? mine : result;
  ReduceUpTree(
      builder, args, links, count, mine, partial, [&](size_t chunk, const ElementRange& range) {
        if (links.parent >= 0) {
          builder.Recv(links.parent, ChunkTag(kFinalStage, chunk), Sub(result, range));
        }
        // Down the tree remote nodes first, as the bcast does.
        for (auto child = links.children.rbegin(); child != links.children.rend(); ++child) {
          builder.Send(*child, ChunkTag(kFinalStage, chunk), Sub(result, range));
        }
      });
  return std::move(builder).Finish();
}

namespace {
// Rabenseifner's allreduce of `args.count` elements (mine, result and incoming are that
// long), its tags' chunk numbers in `space`.
Halving RabenseifnerAllreducePart(ScheduleBuilder& builder, const CollectiveArgs& args,
                                  const Slice& mine, const Slice& result, const Slice& incoming,
                                  ChunkSpace space) {
  const size_t count = args.count;
  const Halving halving = HalvingReduceScatter(builder, args, mine, result, incoming, space);
  if (halving.newrank >= 0) {
    for (int stage = Log2(halving.p2) - 1; stage >= 0; --stage) {
      const int partner = halving.RealRank(halving.newrank ^ (1 << stage));
      SendChunked(builder, args, partner, kGatherStage + stage,
                  Sub(result, BlockRange(count, halving.p2, halving.window[stage])), space);
      RecvChunked(builder, args, partner, kGatherStage + stage,
                  Sub(result, BlockRange(count, halving.p2, halving.PartnerWindow(stage))), space);
    }
  }
  Unfold(builder, args, halving, result, space);
  return halving;
}

// A segment's messages are chunked at an eighth of the segment, but not below a
// sixteenth of the call's chunk (16 KiB by default) nor above it, so that its first
// stage's half moves in four chunks and its reductions start a quarter of the way into
// it instead of after the whole half. zcoll_sim, infiniband profile, against whole
// 256 KiB chunks: on 128-8192 ranks 4-32 MiB take 0.84-0.93x the time, 2 MiB (and
// 128-256 KiB on 8192) 0.97-0.98x, 64 MiB 1.00x (its eighth is the call's chunk); on
// one node (64 ranks) 2-16 MiB 1.01-1.03x. With an 8 KiB floor one node lost more (2
// MiB 1.12x) for small gains at 1 MiB. Where a message costs more the finer chunks are
// slower (TCP here, 4 ranks on 2 emulated nodes, 4 MiB: 11.1 ms against 8.3, medians
// of 3 alternating runs), as the model with this machine's profile predicts too: a
// table derived for such a machine picks rabenseifner there, and a larger
// ZCOLL_CHUNK_BYTES raises the floor with the chunk.
size_t SegmentChunkBytes(const CollectiveArgs& args, size_t segment_elements) {
  return std::min(args.chunk_bytes,
                  std::max(args.chunk_bytes / 16, segment_elements * args.element_bytes / 8));
}

// The vector cut into `segments`, each reduced by its own Rabenseifner allreduce in its
// own share of the chunk numbers (chunked at SegmentChunkBytes when there are several), a
// segment starting on this rank once the one before it has finished its first halving
// stage here.
Schedule SegmentedRabenseifnerAllreduce(const CollectiveArgs& args, int rank, int segments) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const size_t count = args.count;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Contribution(args, rank, count);
  const Slice result = Whole(BufferId::Recv(), count);
  const Slice incoming = Whole(builder.AddScratch(count), count);
  for (int segment = 0; segment < segments; ++segment) {
    const ElementRange range = EvenBlock(count, segments, segment);
    CollectiveArgs part = args;
    part.count = range.count;
    if (segments > 1) part.chunk_bytes = SegmentChunkBytes(args, range.count);
    const Halving halving =
        RabenseifnerAllreducePart(builder, part, Sub(mine, range), Sub(result, range),
                                  Sub(incoming, range), SplitChunkSpace(segments, segment));
    builder.StartAfter(halving.first_stage_end);
  }
  return std::move(builder).Finish();
}
}  // namespace

// Rabenseifner's allreduce: reduce-scatter by recursive halving, then an allgather
// by recursive doubling that retraces it. Each block is reduced on one rank only, so
// every rank gets bit-identical results.
Schedule RabenseifnerAllreduce(const CollectiveArgs& args, const Topology&, int rank) {
  return SegmentedRabenseifnerAllreduce(args, rank, 1);
}

namespace {
// Segments of the pipelined Rabenseifner allreduce.
int PipelinedRabenseifnerSegments(const CollectiveArgs& args) {
  // A segment of at least an eighth of a chunk (32 KiB by default) and 8 bytes for each
  // rank: below that, a segment's 2 log2(p) stages of latency cost more than its
  // overlap gains (zcoll_sim, infiniband profile: at 8192 ranks 32 KiB segments take
  // 1.1-4x the time of 64 KiB ones).
  const size_t bytes = args.count * args.element_bytes;
  const size_t segment_bytes =
      std::max<size_t>({args.chunk_bytes / 8, 8 * static_cast<size_t>(args.size), 1});
  // More segments overlap more (8192 ranks, 4-64 MiB: 16 segments take 1.04-1.07x the
  // time of 32, 8 segments 1.09-1.14x); 32 keeps a segment's tags 32 chunk numbers.
  constexpr size_t kMaxSegments = 32;
  return static_cast<int>(std::clamp<size_t>(bytes / segment_bytes, 1, kMaxSegments));
}
}  // namespace

// Pipelined Rabenseifner: Rabenseifner's allreduce in staggered segments
// (SegmentedRabenseifnerAllreduce). Within one Rabenseifner the reduce-scatter's
// reductions (the CPU) come before its allgather (the ports alone); staggered segments
// overlap one segment's allgather with the next ones' reductions (zcoll_sim,
// infiniband profile, 128-8192 ranks: 1-64 MiB in 0.70-0.86 of Rabenseifner's time).
// The first stage is the gate because it is the largest: later ones pipeline behind it
// chunk by chunk, and started all at once the segments would share the CPU and every
// allgather would wait for all of the reductions.
Schedule PipelinedRabenseifnerAllreduce(const CollectiveArgs& args, const Topology&, int rank) {
  return SegmentedRabenseifnerAllreduce(args, rank, PipelinedRabenseifnerSegments(args));
}

// ---------------------------------------------------------------------------------
// A reduce-scatter's blocks: every rank's count (the block form's one count each),
// where they lie in the input vector (packed in rank order), the input (the send
// buffer, or the receive buffer in place) and this rank's result.
struct ReduceScatterLayout {
  std::vector<size_t> counts;
  std::vector<size_t> displs;
  Slice input;
  Slice output;

  static ReduceScatterLayout Of(const CollectiveArgs& args, int rank) {
    ReduceScatterLayout layout;
    layout.counts = args.collective == Collective::kReduceScatter
                        ? args.counts
                        : std::vector<size_t>(args.size, args.count);
    layout.displs = PackedDisplacements(layout.counts);
    layout.input = Whole(args.in_place ? BufferId::Recv() : BufferId::Send(), Sum(layout.counts));
    layout.output = Slice{BufferId::Recv(), 0, layout.counts[rank]};
    return layout;
  }
};

// Reduce-scatter: pairwise. Every rank sends each peer that peer's block directly
// and reduces its own block from all contributions in one pass, in rank order (any
// op). Bandwidth-optimal; size-1 messages per rank, all in flight at once.
Schedule PairwiseReduceScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const auto [counts, displs, input, output] = ReduceScatterLayout::Of(args, rank);
  const size_t mine_count = counts[rank];
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

// Reduce-scatter: recursive halving, for commutative ops. After Rabenseifner's fold
// (the first 2*rem ranks pairwise), the p2 participants halve their window of
// participants log2(p2) times, the farthest partner first and the half holding
// themselves kept, so that participant j ends with exactly the blocks of the ranks
// it stands for; a folded rank gets its block back from its odd neighbour. About
// log2(size) rounds where pairwise sends size-1 messages: for small blocks on many
// ranks. The partial results combine ranks that are not neighbours, so the op must
// commute.
Schedule RecursiveHalvingReduceScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const auto [counts, displs, input, output] = ReduceScatterLayout::Of(args, rank);
  const size_t total = input.count;
  auto block = [&](int r) { return ElementRange{displs[r], counts[r]}; };
  if (size == 1) {
    if (!args.in_place) builder.Copy(Sub(input, block(0)), output);
    return std::move(builder).Finish();
  }
  const Halving halving = Halving::For(rank, size);
  // The elements of the ranks that participants [lo, hi) stand for (a run of ranks).
  auto span = [&](int lo, int hi) {
    const int first = lo < halving.rem ? 2 * lo : lo + halving.rem;
    const int last = hi - 1 < halving.rem ? 2 * (hi - 1) + 1 : hi - 1 + halving.rem;
    return ElementRange{displs[first], displs[last] + counts[last] - displs[first]};
  };
  if (rank < 2 * halving.rem && rank % 2 == 0) {
    SendChunked(builder, args, rank + 1, kFoldStage, input);
    RecvChunked(builder, args, rank + 1, kFinalStage, output);
    return std::move(builder).Finish();
  }
  const Slice work = Whole(builder.AddScratch(total), total);
  const Slice incoming = Whole(builder.AddScratch(total), total);
  Slice source = input;
  if (rank < 2 * halving.rem) {
    RecvChunked(builder, args, rank - 1, kFoldStage, incoming);
    ReduceChunked(builder, args, incoming, input, work);
    source = work;
  }
  int lo = 0, hi = halving.p2;
  for (int stage = 0, mask = halving.p2 / 2; mask >= 1; ++stage, mask /= 2) {
    const int partner_new = halving.newrank ^ mask;
    const int partner = halving.RealRank(partner_new);
    const int mid = lo + mask;
    const bool keep_upper = (halving.newrank & mask) != 0;
    const ElementRange kept = keep_upper ? span(mid, hi) : span(lo, mid);
    const ElementRange given = keep_upper ? span(lo, mid) : span(mid, hi);
    ExchangeHalves(builder, args, partner, partner_new < halving.newrank, stage,
                   {source, incoming, work}, kept, given);
    source = work;
    if (keep_upper) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (rank < 2 * halving.rem) {
    SendChunked(builder, args, rank - 1, kFinalStage, Sub(work, block(rank - 1)));
  }
  if (counts[rank] > 0) builder.Copy(Sub(work, block(rank)), output);
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Scan and exscan.

namespace {

// Where a scan's running values are: `mine` (the contribution), then copies or
// reductions in scratch or kRecv; a Slice that moves as the algorithm goes.
struct ScanState {
  Slice mine;
  Slice result;  // kRecv
  bool exclusive = false;
  bool has_result = false;  // exscan: something has arrived
};

// result = incoming op result (or = incoming for an exscan's first), chunk by chunk.
void AddLowerToResult(ScheduleBuilder& builder, const CollectiveArgs& args, ScanState& state,
                      const Slice& incoming, const Slice& current) {
  if (state.exclusive && !state.has_result) {
    for (const ElementRange& chunk : Chunks(args, incoming.count)) {
      builder.Copy(Sub(incoming, chunk), Sub(state.result, chunk));
    }
  } else {
    ReduceChunked(builder, args, incoming, current, state.result);
  }
  state.has_result = true;
}

}  // namespace

// Recursive doubling (Hillis-Steele over the ranks' partial reductions): in round k
// partners at distance 2^k swap `partial`, the reduction of their aligned group of
// 2^k ranks; a rank adds a lower partner's to its result from the left. Every
// partial covers a contiguous range of ranks and lower ranges are always left
// operands, so any op may use it. log2(size) rounds.
Schedule RecursiveDoublingScan(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const size_t count = args.count;
  const bool exclusive = args.collective == Collective::kExscan;
  if (count == 0) return std::move(builder).Finish();
  ScanState state{Whole(args.in_place ? BufferId::Recv() : BufferId::Send(), count),
                  Whole(BufferId::Recv(), count), exclusive};
  Slice partial = state.mine;
  // In place, the contribution is overwritten by the result: keep it first.
  if (args.in_place && size > 1) {
    const Slice kept = Whole(builder.AddScratch(count), count);
    builder.Copy(state.mine, kept);
    partial = state.mine = kept;
  }
  const Slice incoming = Whole(builder.AddScratch(count), count);
  Slice partial_scratch{};
  Slice current = state.mine;  // the inclusive result so far (scan)
  int last_round_with_partner = -1;
  for (int round = 0, mask = 1; mask < size; ++round, mask <<= 1) {
    if ((rank ^ mask) < size) last_round_with_partner = round;
  }
  for (int round = 0, mask = 1; mask < size; ++round, mask <<= 1) {
    const int partner = rank ^ mask;
    if (partner >= size) continue;
    SendChunked(builder, args, partner, round, partial);
    RecvChunked(builder, args, partner, round, incoming);
    const bool lower = partner < rank;
    // The partial is needed again only if a later round has a partner.
    if (round < last_round_with_partner) {
      if (partial_scratch.count == 0) partial_scratch = Whole(builder.AddScratch(count), count);
      if (lower) {
        ReduceChunked(builder, args, incoming, partial, partial_scratch);
      } else {
        ReduceChunked(builder, args, partial, incoming, partial_scratch);
      }
      partial = partial_scratch;
    }
    if (lower) {
      AddLowerToResult(builder, args, state, incoming, exclusive ? state.result : current);
      current = state.result;
    }
  }
  if (!exclusive && !(current == state.result)) builder.Copy(current, state.result);
  return std::move(builder).Finish();
}

// A pipelined chain: rank r receives a0 op ... op a(r-1) from r-1 chunk by chunk,
// combines its own and passes it on. size-1 hops of latency, but every rank moves the
// vector once, so it is the choice for long vectors and few ranks.
Schedule ChainScan(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const size_t count = args.count;
  const bool exclusive = args.collective == Collective::kExscan;
  if (count == 0) return std::move(builder).Finish();
  const Slice mine = Whole(args.in_place ? BufferId::Recv() : BufferId::Send(), count);
  const Slice result = Whole(BufferId::Recv(), count);
  const bool last = rank == size - 1;
  if (rank == 0) {
    if (!exclusive && !args.in_place) builder.Copy(mine, result);
    if (!last) SendChunked(builder, args, 1, 0, mine);
    return std::move(builder).Finish();
  }
  // Inclusive: the prefix lands in kRecv and is combined there. Exclusive: it lands
  // in scratch, is passed on combined with this rank's own, and copied out last (in
  // place, the own contribution is in kRecv until then).
  const Slice incoming = exclusive ? Whole(builder.AddScratch(count), count) : result;
  const Slice outgoing = exclusive && !last ? Whole(builder.AddScratch(count), count) : result;
  Slice contribution = mine;
  if (!exclusive && args.in_place) {
    contribution = Whole(builder.AddScratch(count), count);
    builder.Copy(mine, contribution);
  }
  const std::vector<ElementRange> chunks = Chunks(args, count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    const ElementRange& range = chunks[chunk];
    builder.Recv(rank - 1, ChunkTag(0, chunk), Sub(incoming, range));
    if (!exclusive || !last) {
      const Slice operands[] = {Sub(incoming, range), Sub(contribution, range)};
      builder.Reduce(operands, Sub(outgoing, range));
    }
    if (!last) builder.Send(rank + 1, ChunkTag(0, chunk), Sub(outgoing, range));
    if (exclusive) builder.Copy(Sub(incoming, range), Sub(result, range));
  }
  return std::move(builder).Finish();
}

}  // namespace zcoll::algorithm_steps
