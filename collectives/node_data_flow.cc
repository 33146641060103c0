#include "collectives/node_data_flow.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/algorithm_steps.h"
#include "collectives/node_engine_limits.h"

namespace zcoll {
namespace {

using namespace algorithm_steps;     // NOLINT: the generators' building blocks
using namespace node_engine_limits;  // NOLINT: the engine's thresholds

// Rank `me`'s steps of one node call, emitted in the order the engine takes them; the
// builder infers what waits for what from the buffers the steps touch.
class NodeFlow {
 public:
  NodeFlow(const CollectiveArgs& args, int me)
      : args_(args), me_(me), p_(args.size), builder_(MakeBuilder(args, me)) {}

  Schedule Run() && {
    switch (args_.collective) {
      case Collective::kBarrier:
        Words();
        break;
      case Collective::kBcast:
        Bcast();
        break;
      case Collective::kReduce:
      case Collective::kAllreduce:
        if (PartitionedInSlots(args_.collective, Bytes(args_.count), kNodeSlotBytes, p_,
                               Oversubscribed())) {
          SlotPartitionedReduction();
        } else if (Partitioned(args_.collective, Bytes(args_.count), kNodeSlotBytes, p_,
                               Oversubscribed())) {
          PartitionedReduction();
        } else {
          WholeReduction();
        }
        break;
      case Collective::kReduceScatterBlock:
      case Collective::kReduceScatter:
        ReduceScatter();
        break;
      case Collective::kScan:
      case Collective::kExscan:
        if (Chained(args_.collective, Bytes(args_.count), kNodeSlotBytes, p_)) {
          ChainedScan();
        } else {
          Scan();
        }
        break;
      case Collective::kScatter:
      case Collective::kScatterv:
        Scatter();
        break;
      case Collective::kGather:
      case Collective::kGatherv:
        Gather();
        break;
      case Collective::kAllgather:
      case Collective::kAllgatherv:
        Allgather();
        break;
      case Collective::kAlltoall:
      case Collective::kAlltoallv:
        Alltoall();
        break;
    }
    return std::move(builder_).Finish();
  }

 private:
  size_t Bytes(size_t elements) const { return elements * args_.element_bytes; }
  size_t Elements(size_t bytes) const { return bytes / args_.element_bytes; }
  bool Root() const { return me_ == args_.root; }
  // The node's ranks outnumber its cores: the engine's paths for such a node.
  bool Oversubscribed() const { return args_.node_oversubscribed; }
  BufferId Input() const {
    return args_.in_place && (Root() || !IsRooted(args_.collective)) ? BufferId::Recv()
                                                                     : BufferId::Send();
  }
  static Slice Empty() { return Slice{BufferId::Recv(), 0, 0}; }

  // Whether a publication of `bytes` is copied into the segment: into the control line
  // (up to kInlineBytes) or the slot (beside the collective's table), rather than read
  // where it lies. (A copy into the line is a Copy step too: its cost is nothing to
  // speak of, and readers then read the copy, as they do.)
  // (A zcoll buffer's is lent beyond kEagerBytes: LendsMappedBuffer.)
  bool Copied(size_t bytes) const {
    if (args_.mapped_buffers && LendsMappedBuffer(bytes, Oversubscribed())) return false;
    return bytes > 0 && (bytes <= kInlineBytes ||
                         TableBytes(args_.collective, p_) + bytes <=
                             CopyInLimit(args_.collective, kNodeSlotBytes, p_, Oversubscribed()));
  }
  // The publication of `source`: its copy in the segment (scratch), or itself.
  Slice Publish(Slice source) {
    if (!Copied(Bytes(source.count))) return source;
    copied_ = true;
    const Slice slot = Whole(builder_.AddScratch(source.count), source.count);
    builder_.Copy(source, slot);
    return slot;
  }

  // Every other rank reads this rank's control line, with `piece(reader)` of its
  // publication; this rank reads every other's, into `into(publisher)`. Where
  // `reduced(reader)`, the reader reduces that piece where it lies in the segment
  // rather than copying it (kNodeInPlaceReadTag).
  template <typename Piece, typename Into>
  void Lines(Piece piece, Into into) {
    Lines(piece, into, [](int) { return false; });
  }
  template <typename Piece, typename Into, typename Reduced>
  void Lines(Piece piece, Into into, Reduced reduced) {
    auto tag = [&](int reader) {
      return reduced(reader) ? kNodeInPlaceReadTag : kNodePublicationTag;
    };
    for (int r = 0; r < p_; ++r) {
      if (r != me_ && ReadsInCall(r, me_)) builder_.Send(r, tag(r), piece(r));
    }
    for (int q = 0; q < p_; ++q) {
      if (q != me_ && ReadsInCall(me_, q)) builder_.Recv(q, tag(me_), into(q));
    }
  }
  // Whether `reader` reads `publisher`'s control line in the call: every rank's, but
  // where its checks may wait (MayDeferChecks, below) a rank that needs only some ranks'
  // data (RoleReads: a Bcast's or Scatter(v)'s leaf, a Scan's or Exscan's rank) reads
  // theirs alone, and compares the others' words two calls later, when they are long
  // there: a line each, which the model leaves out. (An eager rank's reads, also two
  // calls later, the model makes in the call: they lengthen only its own time, not the
  // readers' that end it.)
  bool ReadsInCall(int reader, int publisher) const {
    // (Whether a Scatterv's leaf does depends on its count, which its peers' arguments
    // do not hold, as they hold no other's: the model has them read every line.)
    if (args_.collective == Collective::kScatterv) return true;
    // (Where ranks outnumber cores, up to kCooperativeBytes, and a Bcast through the
    // slots at every size: MayDeferChecks, as the engine's NodeExecution::MayDeferChecks.)
    const size_t reader_bytes = Bytes(args_.count);
    const bool defers = MayDeferChecks(reader_bytes, Oversubscribed()) || ThroughSlots();
    if (!defers || RoleNeedsNothing(args_.collective, reader, args_.root)) return true;
    const auto [first, last] =
        RoleReads(args_.collective, reader, args_.root, p_, Oversubscribed());
    return publisher >= first && publisher <= last;
  }
  void Words() {
    Lines([](int) { return Empty(); }, [](int) { return Empty(); });
  }

  // destination = operands in order (one operand: a copy, unless it is the destination).
  void Combine(const std::vector<Slice>& operands, const Slice& destination) {
    if (operands.size() == 1) {
      if (!(operands[0] == destination) && destination.count > 0) {
        builder_.Copy(operands[0], destination);
      }
      return;
    }
    if (operands.size() <= kMostOperands) {
      builder_.Reduce(operands, destination);
      return;
    }
    // More operands than the simulator counts in one step (nodes of more ranks): a
    // left fold of steps of at most kMostOperands into scratch (the destination may be
    // one of the later operands, in place), then the copy.
    if (destination.count == 0) return;
    const Slice partial = Whole(builder_.AddScratch(destination.count), destination.count);
    std::vector<Slice> group(operands.begin(), operands.begin() + kMostOperands);
    builder_.Reduce(group, partial);
    for (size_t next = kMostOperands; next < operands.size();) {
      group.assign({partial});
      while (group.size() < kMostOperands && next < operands.size()) {
        group.push_back(operands[next++]);
      }
      builder_.Reduce(group, partial);
    }
    builder_.Copy(partial, destination);
  }
  // The most operands of one Reduce step (TimedSchedules keeps a step's count in a byte).
  static constexpr size_t kMostOperands = 255;

  // The tag of chunk k of a peer's buffer that a reduction reads: reduced where it lies
  // where the buffers are mapped (mapped_buffers), else read into staging.
  uint32_t OperandChunkTag(size_t k) const {
    return (args_.mapped_buffers ? kNodeInPlaceChunkTag : kNodeChunkTag) + static_cast<uint32_t>(k);
  }

  // `count` elements in chunks of `elements` (the engine's), bigger only where the
  // chunk tags (kNodeChunkTag + k, below kNodeInPlaceReadTag) would run out.
  static std::vector<ElementRange> TaggedChunks(size_t count, size_t elements) {
    const size_t most = kNodeInPlaceReadTag - kNodeChunkTag;
    return SplitIntoChunks(count, std::max({size_t{1}, elements, (count + most - 1) / most}));
  }
  // Chunks of `count` elements a reduction reads of a peer's own buffer at a time.
  std::vector<ElementRange> ReadChunks(size_t count) const {
    return TaggedChunks(count, Elements(kReduceChunkBytes));
  }

  // Reduces [offset, offset + count) of the publications of ranks [first, last] (this
  // rank's own is `own`, a slice of its input at that range, when it is among them)
  // into `out`, reading the others' into staging: whole from slots and control lines
  // (carried by the line's transfer, which the caller makes), in chunks from their
  // buffers (here). `whole_reads` gives each peer's staged range for the former.
  void ReduceRange(int first, int last, size_t count, const Slice& own,
                   const std::vector<Slice>& staged_whole, bool in_chunks, const Slice& out) {
    if (!in_chunks) {
      std::vector<Slice> operands;
      for (int r = first; r <= last; ++r) operands.push_back(r == me_ ? own : staged_whole[r]);
      Combine(operands, out);
      return;
    }
    const int peers = last - first + 1 - (me_ >= first && me_ <= last ? 1 : 0);
    const std::vector<ElementRange> chunks = ReadChunks(count);
    const size_t chunk = chunks.empty() ? 0 : chunks.front().count;
    const BufferId staging = builder_.AddScratch(static_cast<size_t>(peers) * chunk);
    for (size_t k = 0; k < chunks.size(); ++k) {
      std::vector<Slice> operands;
      int staged = 0;
      for (int r = first; r <= last; ++r) {
        if (r == me_) {
          operands.push_back(Sub(own, chunks[k]));
          continue;
        }
        const Slice into{staging, static_cast<size_t>(staged++) * chunk, chunks[k].count};
        builder_.Recv(r, OperandChunkTag(k), into);
        operands.push_back(into);
      }
      Combine(operands, Sub(out, chunks[k]));
    }
  }
  // The passive side of ReduceRange's chunked reads: `reader` reads `range` of this
  // rank's publication `published` in chunks.
  void ServeChunks(int reader, const Slice& published, const ElementRange& range) {
    const std::vector<ElementRange> chunks = ReadChunks(range.count);
    for (size_t k = 0; k < chunks.size(); ++k) {
      builder_.Send(reader, OperandChunkTag(k), Sub(Sub(published, range), chunks[k]));
    }
  }
  // Staging for whole reads: one range of `count` for each rank but this one.
  std::vector<Slice> WholeStaging(size_t count, int first, int last) {
    std::vector<Slice> staged(static_cast<size_t>(p_), Empty());
    const int peers = last - first + 1 - (me_ >= first && me_ <= last ? 1 : 0);
    if (peers <= 0) return staged;
    const BufferId staging = builder_.AddScratch(static_cast<size_t>(peers) * count);
    int next = 0;
    for (int r = first; r <= last; ++r) {
      if (r != me_) staged[r] = Slice{staging, static_cast<size_t>(next++) * count, count};
    }
    return staged;
  }

  bool ThroughSlots() const {
    return args_.collective == Collective::kBcast &&
           BcastThroughSlots(Bytes(args_.count), kNodeSlotBytes, p_, Oversubscribed(),
                             /*single_copy=*/true);
  }

  void Bcast() {
    const size_t count = args_.count;
    if (ThroughSlots()) {
      BcastThroughTheSlots();
      return;
    }
    const size_t share = std::min(count, Elements(BcastShare(Bytes(count), p_, Oversubscribed())));
    const Slice buffer = Whole(BufferId::Recv(), count);
    const ElementRange rest{share, count - share};
    const Slice published = Root() ? Publish(buffer) : Empty();
    Lines([&](int) { return Root() ? Sub(published, rest) : Empty(); },
          [&](int q) { return q == args_.root ? Sub(buffer, rest) : Empty(); });
    if (share == 0) return;
    const Slice first{BufferId::Recv(), 0, share};
    if (!Root()) {
      builder_.Recv(args_.root, kNodeWriteTag, first);
      return;
    }
    for (int r = 0; r < p_; ++r) {
      if (r != me_) builder_.Send(r, kNodeWriteTag, first);
    }
  }

  // Beyond a slot where the node's ranks outnumber its cores (BcastThroughSlots): the
  // root copies its vector into the slots a piece at a time (its own slot, then its
  // leaves', which the engine takes in the order it sees them arrive and the model in
  // rank order), and each leaf copies every piece out once it is in. Beyond the slots'
  // capacity a piece's place is reused once every leaf has copied what was there (the
  // builder's dependency: the copy into it waits for the reads of it). The root lends
  // nothing, so it waits for nobody within the capacity.
  void BcastThroughTheSlots() {
    const size_t count = args_.count;
    Words();
    const std::vector<ElementRange> pieces =
        TaggedChunks(count, Elements(kNodeSlotBytes / kBcastSlotPieceParts / 64 * 64));
    const size_t piece = pieces.front().count;  // (count > 0: beyond a slot)
    const Slice buffer = Whole(BufferId::Recv(), count);
    if (!Root()) {
      for (size_t k = 0; k < pieces.size(); ++k) {
        builder_.Recv(args_.root, kNodeChunkTag + static_cast<uint32_t>(k), Sub(buffer, pieces[k]));
      }
      return;
    }
    const size_t ring = std::min(static_cast<size_t>(p_), kBcastMostSlots) * kBcastSlotPieceParts;
    const size_t places = std::min(pieces.size(), ring);
    const BufferId slots = builder_.AddScratch(places * piece);
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Slice place{slots, (k % ring) * piece, pieces[k].count};
      builder_.Copy(Sub(buffer, pieces[k]), place);
      for (int r = 0; r < p_; ++r) {
        if (r != me_) builder_.Send(r, kNodeChunkTag + static_cast<uint32_t>(k), place);
      }
    }
  }

  // Reduce and Allreduce up to a slot: every rank (a Reduce's root) reduces the whole
  // vector from the others' publications: in their slots, or (on 2 ranks beyond
  // CopyInLimit) read from their buffers in chunks. In place, such a lent vector's
  // Allreduce result waits in scratch until the other has read it.
  void WholeReduction() {
    const size_t count = args_.count;
    const bool everywhere = args_.collective == Collective::kAllreduce;
    const bool reduces = everywhere || Root();
    const Slice input = Whole(Input(), count);
    const Slice published = Publish(input);
    const bool in_chunks = !copied_;
    auto reads = [&](int r) { return everywhere || r == args_.root; };
    const std::vector<Slice> staged =
        reduces && !in_chunks ? WholeStaging(count, 0, p_ - 1) : std::vector<Slice>(p_, Empty());
    Lines([&](int r) { return reads(r) && !in_chunks ? published : Empty(); },
          [&](int q) { return staged[q]; }, [&](int) { return !in_chunks; });
    if (in_chunks) {
      for (int r = 0; r < p_; ++r) {
        if (r != me_ && reads(r)) ServeChunks(r, published, ElementRange{0, count});
      }
    }
    if (!reduces) return;
    const bool deferred = in_chunks && everywhere && args_.in_place;
    const Slice result =
        deferred ? Whole(builder_.AddScratch(count), count) : Whole(BufferId::Recv(), count);
    ReduceRange(0, p_ - 1, count, input, staged, in_chunks, result);
    if (deferred && count > 0) builder_.Copy(result, Whole(BufferId::Recv(), count));
  }

  // Beyond a slot: each rank reduces its block reading the others' buffers in chunks.
  // Allreduce: then every rank reads every other's block of result. Reduce: a leaf
  // writes its block into the root's buffer a chunk at a time.
  void PartitionedReduction() {
    const size_t count = args_.count;
    const bool everywhere = args_.collective == Collective::kAllreduce;
    const Slice input = Whole(Input(), count);
    const Slice published = Publish(input);  // (beyond a slot: where it lies)
    auto block = [&](int r) {
      const auto [first, length] =
          ReductionBlock(args_.collective, count, args_.element_bytes, p_, args_.root, r);
      return ElementRange{first, length};
    };
    Words();
    for (int r = 0; r < p_; ++r) {
      if (r != me_) ServeChunks(r, published, block(r));
    }
    const ElementRange mine = block(me_);
    const Slice result = Sub(Whole(BufferId::Recv(), count), mine);
    const std::vector<Slice> none(p_, Empty());
    if (everywhere || Root()) {
      ReduceRange(0, p_ - 1, mine.count, Sub(input, mine), none, true, result);
    }
    if (everywhere) {
      // The block shown in the slot (ResultInSlot), or where it lies.
      Slice shown = result;
      if (mine.count > 0 &&
          ResultInSlot(args_.collective, Bytes(count), args_.element_bytes, kNodeSlotBytes, p_)) {
        shown = Whole(builder_.AddScratch(mine.count), mine.count);
        builder_.Copy(result, shown);
      }
      for (int r = 0; r < p_; ++r) {
        if (r != me_) builder_.Send(r, kNodeStageTag, shown);
      }
      for (int q = 0; q < p_; ++q) {
        if (q != me_)
          builder_.Recv(q, kNodeStageTag, Sub(Whole(BufferId::Recv(), count), block(q)));
      }
      return;
    }
    if (Root()) {
      // The leaves' blocks come in as they write them, a chunk at a time.
      for (int q = 0; q < p_; ++q) {
        if (q == me_) continue;
        const ElementRange theirs = block(q);
        const std::vector<ElementRange> chunks = ReadChunks(theirs.count);
        for (size_t k = 0; k < chunks.size(); ++k) {
          builder_.Recv(q, kNodeWriteTag + static_cast<uint32_t>(k),
                        Sub(Sub(Whole(BufferId::Recv(), count), theirs), chunks[k]));
        }
      }
      return;
    }
    // A leaf: each chunk reduced into a chunk of scratch, then written to the root.
    const std::vector<ElementRange> chunks = ReadChunks(mine.count);
    const size_t chunk = chunks.empty() ? 0 : chunks.front().count;
    const BufferId staging = builder_.AddScratch(static_cast<size_t>(p_ - 1) * chunk);
    const BufferId reduced = builder_.AddScratch(chunk);
    for (size_t k = 0; k < chunks.size(); ++k) {
      std::vector<Slice> operands;
      int staged = 0;
      for (int r = 0; r < p_; ++r) {
        if (r == me_) {
          operands.push_back(Sub(Sub(input, mine), chunks[k]));
          continue;
        }
        const Slice into{staging, static_cast<size_t>(staged++) * chunk, chunks[k].count};
        builder_.Recv(r, OperandChunkTag(k), into);
        operands.push_back(into);
      }
      const Slice out{reduced, 0, chunks[k].count};
      Combine(operands, out);
      builder_.Send(args_.root, kNodeWriteTag + static_cast<uint32_t>(k), out);
    }
  }

  // Within a slot on many ranks (PartitionedInSlots): each rank reduces its block
  // reading the others' slots in place into its own slot's block (which only it read),
  // then the others (Allreduce) or the root (Reduce) copy the blocks from the slots.
  // (Lent zcoll buffers are read where they lie, and the block is reduced into the
  // slot, where its copy would have been.)
  void SlotPartitionedReduction() {
    const size_t count = args_.count;
    const bool everywhere = args_.collective == Collective::kAllreduce;
    const Slice input = Whole(Input(), count);
    const Slice published = Publish(input);  // (its copy in the slot)
    auto block = [&](int r) {
      const auto [first, length] =
          ReductionBlock(args_.collective, count, args_.element_bytes, p_, args_.root, r);
      return ElementRange{first, length};
    };
    const ElementRange mine = block(me_);
    const std::vector<Slice> staged = WholeStaging(mine.count, 0, p_ - 1);
    Lines([&](int r) { return Sub(published, block(r)); }, [&](int q) { return staged[q]; },
          [](int) { return true; });
    const Slice reduced =
        copied_ ? Sub(published, mine) : Whole(builder_.AddScratch(mine.count), mine.count);
    ReduceRange(0, p_ - 1, mine.count, Sub(published, mine), staged, false, reduced);
    const Slice result = Whole(BufferId::Recv(), count);
    if (everywhere || Root()) Combine({reduced}, Sub(result, mine));
    for (int r = 0; r < p_; ++r) {
      if (r != me_ && (everywhere || r == args_.root)) builder_.Send(r, kNodeStageTag, reduced);
    }
    if (!everywhere && !Root()) return;
    for (int q = 0; q < p_; ++q) {
      if (q != me_) builder_.Recv(q, kNodeStageTag, Sub(result, block(q)));
    }
  }

  // Each rank reduces its own block of everyone's vector.
  void ReduceScatter() {
    const bool vectored = args_.collective == Collective::kReduceScatter;
    const std::vector<size_t> counts =
        vectored ? args_.counts : std::vector<size_t>(static_cast<size_t>(p_), args_.count);
    const std::vector<size_t> displs = PackedDisplacements(counts);
    const size_t total = Sum(counts);
    const Slice input = Whole(Input(), total);
    const Slice published = Publish(input);
    const bool in_chunks = !copied_;
    auto block = [&](int r) { return ElementRange{displs[r], counts[r]}; };
    const size_t mine = counts[me_];
    const std::vector<Slice> staged =
        in_chunks ? std::vector<Slice>(p_, Empty()) : WholeStaging(mine, 0, p_ - 1);
    Lines([&](int r) { return in_chunks ? Empty() : Sub(published, block(r)); },
          [&](int q) { return staged[q]; }, [&](int) { return !in_chunks; });
    if (in_chunks) {
      for (int r = 0; r < p_; ++r) {
        if (r != me_) ServeChunks(r, published, block(r));
      }
    }
    // In place beyond the slots, the result waits in scratch until the others have
    // read this rank's input.
    const bool deferred = in_chunks && args_.in_place;
    const Slice result =
        deferred ? Whole(builder_.AddScratch(mine), mine) : Whole(BufferId::Recv(), mine);
    // (Its own contribution read from its copy in the segment when there is one, as the
    // engine reads it: in place, the result overwrites the input's first block.)
    const Slice own = Sub(copied_ ? published : input, block(me_));
    ReduceRange(0, p_ - 1, mine, own, staged, in_chunks, result);
    if (deferred && mine > 0) builder_.Copy(result, Whole(BufferId::Recv(), mine));
  }

  // Scan: rank r reduces ranks 0..r. Exscan: ranks 0..r-1; rank 1 copies rank 0's
  // vector, which rank 0 helps write when it is large.
  void Scan() {
    const bool exclusive = args_.collective == Collective::kExscan;
    const size_t count = args_.count;
    const Slice input = Whole(Input(), count);
    // Nobody reads the last rank's vector: it publishes none (an Exscan's), or reduces
    // its own where it lies (a Scan's), and defers nothing.
    const bool last_rank = me_ == p_ - 1;
    const Slice published = !last_rank ? Publish(input) : exclusive ? Empty() : input;
    // (How the others publish theirs.)
    const bool in_chunks = !Copied(Bytes(count));
    const size_t share = exclusive ? std::min(count, Elements(ExscanShare(Bytes(count)))) : 0;
    const ElementRange rest{share, count - share};
    const int last = exclusive ? me_ - 1 : me_;
    // Exscan's rank 1 reads rank 0's vector (less the share) through the line.
    auto copies_from_zero = [&](int r) { return exclusive && r == 1; };
    // (Scan's rank 0: its result is its input.)
    const bool deferred =
        in_chunks && args_.in_place && last >= 0 && !(!exclusive && me_ == 0) && !last_rank;
    const Slice result =
        deferred ? Whole(builder_.AddScratch(count), count) : Whole(BufferId::Recv(), count);
    const std::vector<Slice> staged = in_chunks || copies_from_zero(me_)
                                          ? std::vector<Slice>(p_, Empty())
                                          : WholeStaging(count, 0, std::max(last, 0));
    Lines(
        [&](int r) {
          const int their_last = exclusive ? r - 1 : r;
          if (me_ > their_last) return Empty();
          if (copies_from_zero(r)) return Sub(published, rest);
          return in_chunks ? Empty() : published;
        },
        [&](int q) {
          if (q > last) return Empty();
          if (copies_from_zero(me_)) return Sub(result, rest);
          return staged[q];
        },
        [&](int reader) { return !in_chunks && !copies_from_zero(reader); });
    if (copies_from_zero(me_)) {
      if (share > 0) builder_.Recv(0, kNodeWriteTag, Slice{result.buffer, 0, share});
    } else if (last >= 0) {
      ReduceRange(0, last, count, input, staged, in_chunks, result);
    }
    for (int r = me_ + 1; r < p_; ++r) {
      if (copies_from_zero(r)) {
        if (share > 0) builder_.Send(1, kNodeWriteTag, Slice{input.buffer, 0, share});
      } else if (in_chunks) {
        ServeChunks(r, published, ElementRange{0, count});
      }
    }
    if (deferred && count > 0) builder_.Copy(result, Whole(BufferId::Recv(), count));
  }

  // Beyond a slot from 3 ranks, a chain: rank r reads rank r - 1's publication a chunk
  // at a time (rank 0's vector; a Scan's result, an Exscan's inclusive prefix, each
  // made in place of a chunk the reader may then read: the builder's dependency from
  // the chunk's reduction to its Send is the engine's progress word) and makes its own
  // from it (Scan: that op its vector; Exscan: that is its result, and that op its
  // vector its prefix, in scratch, but on the last rank).
  void ChainedScan() {
    const bool exclusive = args_.collective == Collective::kExscan;
    const bool last = me_ == p_ - 1;
    const size_t count = args_.count;
    const std::vector<ElementRange> chunks =
        TaggedChunks(count, ChainChunkElements(count, args_.element_bytes, p_, Oversubscribed()));
    const Slice input = Whole(Input(), count);
    const Slice result = Whole(BufferId::Recv(), count);
    const Slice prefix =
        exclusive && me_ > 0 && !last ? Whole(builder_.AddScratch(count), count) : Empty();
    const Slice published = me_ == 0 ? input : exclusive ? prefix : result;
    Words();
    // A reader of its predecessor's chunk into staging where the result's chunk holds
    // its own vector still to be reduced (in place).
    // Whether rank `reader` reads its predecessor's chunks into staging: in place, where
    // the result's chunk still holds its own vector to be reduced (all but an Exscan's
    // last rank, whose result is its predecessor's prefix alone).
    auto staged_reader = [&](int reader) {
      return reader > 0 && args_.in_place && (!exclusive || reader != p_ - 1);
    };
    const bool staged = staged_reader(me_);
    const size_t chunk = chunks.empty() ? 0 : chunks.front().count;
    const Slice staging = staged ? Whole(builder_.AddScratch(chunk), chunk) : Empty();
    // A chunk read is a reduction's operand (reduced where it lies, where the buffers
    // are mapped) but where an Exscan's reader reads its result's chunk straight in: a
    // copy. `reader`'s tags, as it and its predecessor both know them.
    auto read_tag = [&](int reader, size_t k) {
      return !exclusive || staged_reader(reader) ? OperandChunkTag(k)
                                                 : kNodeChunkTag + static_cast<uint32_t>(k);
    };
    for (size_t k = 0; k < chunks.size(); ++k) {
      const Slice mine = Sub(result, chunks[k]);
      if (me_ == 0) {
        if (!exclusive) Combine({Sub(input, chunks[k])}, mine);
      } else {
        const Slice theirs = staged ? Slice{staging.buffer, 0, chunks[k].count} : mine;
        builder_.Recv(me_ - 1, read_tag(me_, k), theirs);
        if (!exclusive) {
          builder_.Reduce({theirs, Sub(input, chunks[k])}, mine);
        } else {
          if (!last) builder_.Reduce({theirs, Sub(input, chunks[k])}, Sub(prefix, chunks[k]));
          if (staged) builder_.Copy(theirs, mine);
        }
      }
      if (!last) builder_.Send(me_ + 1, read_tag(me_ + 1, k), Sub(published, chunks[k]));
    }
  }

  void Scatter() {
    const bool vectored = args_.collective == Collective::kScatterv;
    auto length = [&](int r) { return vectored ? args_.counts[r] : args_.count; };
    auto displ = [&](int r) {
      return vectored ? args_.displs[r] : args_.count * static_cast<size_t>(r);
    };
    // The root's publication: its blocks, packed into the slot when they fit.
    std::vector<Slice> blocks(static_cast<size_t>(p_), Empty());
    if (Root()) {
      size_t packed = 0;
      for (int r = 0; r < p_; ++r) packed += length(r);
      const bool slot = Copied(Bytes(packed));
      const BufferId into = slot ? builder_.AddScratch(packed) : BufferId::Send();
      size_t at = 0;
      for (int r = 0; r < p_; ++r) {
        const Slice source = BlockAt(BufferId::Send(), displ(r), length(r));
        blocks[r] = slot ? Slice{into, at, length(r)} : source;
        if (slot && length(r) > 0 && r != me_) builder_.Copy(source, blocks[r]);
        at += length(r);
      }
    }
    // Each leaf reads its whole block while the root copies its own (Cooperates).
    const size_t mine = args_.count;
    Lines([&](int r) { return Root() ? blocks[r] : Empty(); },
          [&](int q) { return q == args_.root ? Whole(BufferId::Recv(), mine) : Empty(); });
    if (Root() && !args_.in_place && mine > 0) {
      builder_.Copy(BlockAt(BufferId::Send(), displ(me_), length(me_)),
                    Whole(BufferId::Recv(), mine));
    }
  }

  void Gather() {
    const bool vectored = args_.collective == Collective::kGatherv;
    const size_t mine = args_.count;
    auto block = [&](int r) {
      return vectored ? BlockAt(BufferId::Recv(), args_.displs[r], args_.counts[r])
                      : Slice{BufferId::Recv(), args_.count * static_cast<size_t>(r), args_.count};
    };
    // (A block that its leaf writes whole into the root, which reads the others.)
    auto written = [&](size_t elements) {
      return Cooperates(args_.collective, Bytes(elements), Oversubscribed());
    };
    const Slice published = Root() ? Empty() : Publish(Whole(BufferId::Send(), mine));
    Lines(
        [&](int r) {
          if (r != args_.root || written(mine)) return Empty();
          return published;
        },
        [&](int q) {
          if (!Root()) return Empty();
          const Slice theirs = block(q);
          return written(theirs.count) ? Empty() : theirs;
        });
    if (!Root()) {
      if (written(mine)) builder_.Send(args_.root, kNodeWriteTag, Whole(BufferId::Send(), mine));
      return;
    }
    for (int q = 0; q < p_; ++q) {
      const Slice theirs = block(q);
      if (q == me_) {
        if (!args_.in_place && theirs.count > 0)
          builder_.Copy(Whole(BufferId::Send(), mine), theirs);
      } else if (written(theirs.count)) {
        builder_.Recv(q, kNodeWriteTag, theirs);
      }
    }
  }

  void Allgather() {
    const bool vectored = args_.collective == Collective::kAllgatherv;
    auto block = [&](int r) {
      return vectored ? BlockAt(BufferId::Recv(), args_.displs[r], args_.counts[r])
                      : Slice{BufferId::Recv(), args_.count * static_cast<size_t>(r), args_.count};
    };
    const Slice own = args_.in_place ? block(me_) : Whole(BufferId::Send(), args_.count);
    const Slice published = Publish(own);
    Lines([&](int) { return published; }, [&](int q) { return block(q); });
    if (!args_.in_place && own.count > 0) builder_.Copy(own, block(me_));
  }

  void Alltoall() {
    const bool vectored = args_.collective == Collective::kAlltoallv;
    auto recv_block = [&](int r) {
      return vectored ? BlockAt(BufferId::Recv(), args_.recv_displs[r], args_.recv_counts[r])
                      : Slice{BufferId::Recv(), args_.count * static_cast<size_t>(r), args_.count};
    };
    const BufferId input = Input();
    // The input's layout: kSend's, or in place kRecv's.
    auto send_block = [&](int r) {
      if (vectored && !args_.in_place) return BlockAt(input, args_.displs[r], args_.counts[r]);
      Slice block = recv_block(r);
      block.buffer = input;
      return block;
    };
    size_t packed = 0;
    for (int r = 0; r < p_; ++r) packed += send_block(r).count;
    // Copied into the segment block by block, or read where it lies.
    const bool slot = Copied(Bytes(packed));
    std::vector<Slice> published(static_cast<size_t>(p_), Empty());
    const BufferId into = slot ? builder_.AddScratch(packed) : input;
    size_t at = 0;
    for (int r = 0; r < p_; ++r) {
      const Slice source = send_block(r);
      published[r] = slot ? Slice{into, at, source.count} : source;
      if (slot && source.count > 0 && r != me_) builder_.Copy(source, published[r]);
      at += source.count;
    }
    // In place beyond the slots the blocks wait in scratch until the others have read
    // this rank's input.
    const bool deferred = args_.in_place && !slot;
    const BufferId output =
        deferred ? builder_.AddScratch(BufferCounts(args_, me_).second) : BufferId::Recv();
    auto out_block = [&](int q) {
      Slice block = recv_block(q);
      block.buffer = output;
      return block;
    };
    Lines([&](int r) { return published[r]; }, [&](int q) { return out_block(q); });
    if (!args_.in_place && send_block(me_).count > 0)
      builder_.Copy(send_block(me_), recv_block(me_));
    if (!deferred) return;
    for (int q = 0; q < p_; ++q) {
      if (q != me_ && recv_block(q).count > 0) builder_.Copy(out_block(q), recv_block(q));
    }
  }

  const CollectiveArgs& args_;
  const int me_;
  const int p_;
  ScheduleBuilder builder_;
  bool copied_ = false;  // Publish copied the publication into the segment
};

}  // namespace

Schedule NodeEngineDataFlow(const CollectiveArgs& args, const Topology&, int rank) {
  return NodeFlow(args, rank).Run();
}

}  // namespace zcoll
