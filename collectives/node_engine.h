// The node engine: collectives of the ranks that share a node, through one shared
// segment (node_segment.h), with no message passing at all.
//
// Where it lives: beside the schedule executor, not inside it. A node collective is
// not a set of transfers between pairs of ranks but every rank reading the others'
// published contributions, so it does not fit the Schedule IR's Send/Recv pairs; its
// algorithms are entries of the one selection table (selection.cc, names starting with
// "node"), chosen from the agreed inputs like any other, and ZCOLL_ALGO_<COLL> can still
// force the message-passing ones. A Request drives either kind through CallExecution;
// a blocking call with nothing else in flight runs on a NodeExecution of its
// communicator's own, without a Request (RunToEnd).
//
// Every collective of the API runs here, at every size, flat: each rank publishes
// what the others need of it and reads what it needs of them.
//   - How a rank publishes is its own choice, recorded in the segment with the
//     publication, so that ranks need not agree on it (a Scatterv's root alone knows
//     how much it sends): up to NodeSegment::kInlineBytes inside its control line, up to
//     a slot (kSlotBytes; 16 KiB for Allgather and Alltoall, and on 2 ranks with a core
//     each for the reductions, 32 KiB for a Reduce: CopyInLimit) copied into its slot
//     (on 2 ranks with a core each beyond 16 KiB with streaming stores, so that the
//     reader finds the lines in memory rather than in the writer's cache: StreamsCopyIn),
//     beyond that not copied at all (nor a publication in an AllocateBuffer
//     buffer beyond kEagerBytes where the ranks have a core each: LendsMappedBuffer): the
//     segment records the address of the caller's own buffer, and a reader copies
//     straight from it into its destination with process_vm_readv (a plain memcpy when
//     the ranks are threads of one process, or when the buffer came from
//     AllocateBuffer and the reader mapped it: shared_buffers.h), each rank reading
//     what it needs, so the
//     copies run in parallel. Scatterv and Alltoallv publish a table of where each
//     rank's block starts in the slot.
//   - Reductions combine all contributions in rank order with the ops' SIMD kernels, so
//     any op (non-commutative included) is reduced in the canonical order and
//     Allreduce's result is bit-identical on every rank. Up to a slot every rank of an
//     Allreduce (the root of a Reduce) reduces the whole vector from the slots (on 2
//     ranks with a core each, from 16 KiB, a Reduce's from 32 KiB, from the other's
//     buffer, read a chunk at a time: CopyInLimit), but on many ranks with a core each
//     (node_engine_limits::PartitionedInSlots) each rank its block into its own slot,
//     which the others (the root) then copy; beyond it the vector is split into one
//     block per rank (cache-line aligned, a function of the count alone), each rank
//     reduces its block reading the peers' buffers in chunks, publishes the result (a
//     second, `stage` publication), and the others copy it (Allreduce) or the root
//     does (Reduce). ReduceScatter(Block) is the first half
//     alone. Scan and Exscan: up to a slot each rank reduces the vectors up to its own;
//     beyond it, from 3 ranks, a chain (node_engine_limits::Chained): rank r makes its
//     result from rank r - 1's a chunk at a time, as r - 1 says it has made each (its
//     `progress` word), so the node does p - 1 reductions of the vector, pipelined,
//     instead of p(p - 1)/2. Nobody reads the last rank's vector: it copies none
//     into its slot (PublishUnread), and an Exscan's rank 1 copies rank 0's vector
//     straight into its result (from its slot, as a Bcast's).
//   - A rank whose memory others read returns only once they all say they have read
//     the call (their `consumed`), since its caller may then reuse the buffer; a
//     result that would overwrite what peers still read (in place: ReduceScatter's,
//     Scan's, Alltoall's, a lent Allreduce's) is made in scratch and copied in after
//     that.
//   - Without process_vm_readv between the node's processes (a ptrace policy that
//     forbids it; probed at setup, agreed by all) the engine runs only calls whose
//     publications fit a slot, and the selection table knows it.
//
// Agreement: each publication carries the call's check word (the same hash of the
// collective, algorithm, count, root, type and op that messages carry), and every rank
// reads every other's before it returns (so no rank leaves a node call before all
// have entered it): a rank that finds another rank's word differing fails naming that
// rank, at once, different roots included. The exception, for latency: up to 1 KiB (on
// a node whose ranks outnumber its cores, below 64 KiB while the call's publications
// are copies in the slots: node_engine_limits::MayDeferChecks) a rank that needs
// nothing of the others (a Bcast's or Scatter's root, a Reduce's or
// Gather's leaf, a Scan's rank 0; RoleNeedsNothing) is eager, returning once it has
// published, and compares their words of that call when it publishes its call after
// next (VerifyEagerCall), when all have published it and none can yet have overwritten
// it (a control line keeps its rank's last two words of its parity); on a node whose
// ranks outnumber its cores a rank that waits in the next call compares them meanwhile
// (CompareEagerCallWhileWaiting), failing that call instead. Likewise a rank
// that needs some of them (a Bcast's or Scatter's leaf the root, a Scan's rank those
// before it) waits for and checks those alone, and the rest two calls later.
//
// Failures: a waiting node call drives the job's transport as any wait does, so a
// rank that dies (its pidfd), a failure notice, or the deadline ends it with the
// job's error on every rank; nothing of a call is read or written after it returns
// (every access is to the segment, and to the caller's buffers inside the call). A rank
// that leaves a call unfinished marks itself in the segment before its caller can
// reuse its buffers, and a reader checks that mark after every read of another
// process's memory: what it read is then suspect, and its call fails too.

#ifndef ZCOLL_COLLECTIVES_NODE_ENGINE_H_
#define ZCOLL_COLLECTIVES_NODE_ENGINE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "collectives/call_execution.h"
#include "collectives/executor.h"
#include "collectives/node_segment.h"
#include "collectives/shared_buffers.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "core/topology.h"
#include "ops/reduce.h"

namespace zcoll {

class CommunicatorTransport;
class NodeExecution;

class NodeEngine {
 public:
  // Bytes of a rank's slot: node collectives move vectors up to this size.
  static constexpr size_t kSlotBytes = kNodeSlotBytes;

  // Sets up the engine of the communicator of `transport` (every rank calls it, in
  // Create, Split and Dup): null when the communicator spans more than one node or
  // has a single rank, or ZCOLL_NODE_ENGINE=0. The node's lowest rank creates the
  // segment and sends its name to the others, which map it and answer; if any could
  // not, every rank of the node gets null (and the first says why in a warning), so
  // the ranks still agree. An error only when the job failed or the deadline passed.
  // `first_sequence` is for tests (wrap-around).
  static absl::StatusOr<std::unique_ptr<NodeEngine>> Create(CommunicatorTransport& transport,
                                                            const Topology& topology,
                                                            absl::Time deadline,
                                                            uint32_t first_sequence = 1);

  NodeEngine(NodeSegment segment, int local_rank, uint32_t first_sequence);
  ~NodeEngine();
  NodeEngine(const NodeEngine&) = delete;
  NodeEngine& operator=(const NodeEngine&) = delete;

  NodeSegment& segment() { return segment_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return segment_.ranks(); }
  // Whether every rank can read every other's memory (else only calls whose
  // publications fit a slot run here): the same on every rank.
  bool single_copy() const { return single_copy_; }
  // Whether the job has more ranks on this machine than it has cores (the leader's
  // view at setup): the same on every rank.
  bool oversubscribed() const { return oversubscribed_; }
  // Bytes of last-level cache this rank has (ZCOLL_CACHE_BYTES, else hwloc's figure; 0:
  // unknown), for its own choice of copies (node_engine_limits::StreamsResultCopies).
  size_t cache_bytes() const { return cache_bytes_; }
  bool asymmetric_fences() const { return segment_.uses_asymmetric_fences(); }
  // Whether local rank `rank` is a thread of this process (its memory is read in place).
  bool SameProcess(int rank) const { return segment_.pid(rank) == pid_; }
  // The sequence number of the next node call (every rank of the node numbers its
  // calls alike: they make the same calls in the same order and choose alike).
  uint32_t TakeSequence() { return next_sequence_++; }
  // Whether local rank `rank` has consumed (finished reading) call `sequence`: from
  // what this rank last learned of it if that says so, else from its consumed line.
  // (A peer's publication carries its consumed count, so a loop of calls reads the
  // consumed lines rarely: one cache line fewer to fetch before each publication.)
  bool ConsumedReached(int rank, uint32_t sequence) {
    if (SequenceReached(known_consumed_[rank], sequence)) return true;
    known_consumed_[rank] = segment_.consumed(rank);
    return SequenceReached(known_consumed_[rank], sequence);
  }
  // `rank` had consumed `sequence` when it published (NodeSegment::consumed_when_published).
  void LearnConsumed(int rank, uint32_t sequence) {
    if (SequenceReached(sequence, known_consumed_[rank])) known_consumed_[rank] = sequence;
  }

  // The node calls in flight, oldest first. A wait for one call advances the older ones
  // too: a rank may wait for its nonblocking calls in any order, and a later call can
  // need this rank to have read an earlier one (its buffers' reuse), which nothing else
  // would advance.
  void Started(NodeExecution* execution) { in_flight_.push_back(execution); }
  void Ended(NodeExecution* execution) {
    // Usually the newest (a blocking call's is the only one).
    if (ABSL_PREDICT_TRUE(!in_flight_.empty() && in_flight_.back() == execution)) {
      in_flight_.pop_back();
      return;
    }
    EndedOlder(execution);
  }
  void AdvanceOlder(const NodeExecution* execution);

  // A call this rank left without reading some others' check words (an eager rank, or
  // one that read some: NodeExecution::ChooseReads), to compare with theirs two calls
  // later (NodeExecution::VerifyEagerCall). By the parity of its sequence number.
  struct EagerCall {
    bool pending = false;
    uint32_t sequence = 0;
    uint32_t check = 0;
    const char* name = "";
  };
  EagerCall& eager_call(uint32_t sequence) { return eager_calls_[sequence & 1]; }

 private:
  // Ended for an execution that is not the newest.
  void EndedOlder(NodeExecution* execution);

  NodeSegment segment_;
  int local_rank_;
  uint32_t next_sequence_;
  std::vector<uint32_t> known_consumed_;  // per local rank (ConsumedReached)
  bool single_copy_;
  bool oversubscribed_;
  size_t cache_bytes_;
  uint32_t pid_;
  std::vector<NodeExecution*> in_flight_;
  std::array<EagerCall, 2> eager_calls_;
};

// One node call. Restarted for each call (a small collective should not allocate).
class NodeExecution final : public CallExecution {
 public:
  struct Call {
    Collective collective = Collective::kBarrier;
    uint32_t sequence = 0;
    uint32_t check = 0;  // the call's check word
    DataType type = DataType::kByte;
    ReduceOp op = PredefinedOp::kSum;
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;
    size_t element_bytes = 1;
    int root = 0;
    bool in_place = false;
    const char* name = "";
    // The v-collectives' counts and displacements, as CollectiveArgs names them
    // (copied at Restart).
    std::array<absl::Span<const size_t>, 4> vectors;
    bool has_vectors = false;  // a v-collective (`vectors` may be empty all the same)
  };

  // `scratch` (the communicator's) lends a deferred result its memory for the call
  // alone, so that the executions a communicator keeps do not each hold the largest
  // result they ever deferred.
  // Made finished: an execution with no call started yet (a quick call's, made with its
  // key) is in no call, and leaves none when destroyed.
  NodeExecution(NodeEngine& engine, Transport& transport, ScratchPool& scratch)
      : engine_(engine), transport_(transport), scratch_pool_(scratch) {
    finished_ = true;
  }
  ~NodeExecution() override;
  NodeExecution(const NodeExecution&) = delete;
  NodeExecution& operator=(const NodeExecution&) = delete;
  // The next call's arguments, filled in place before Restart (and, once started, the
  // call's).
  Call& next_call() { return call_; }
  const Call& call() const { return call_; }
  // Copies the next call's vectors into this execution, which holds them from then on
  // (a quick call's, its key's; a start copies a caller's).
  void HoldVectors();
  // For a quick call's execution (a loop's repetitions of one call but for its sequence
  // number and buffers): holds the next call's vectors and makes the choices that
  // depend on nothing else (Decide), once, so that RunToEnd(..., decided=true) skips them.
  void DecideForRepeats();
  // Whether the call's vectors are those it holds (a quick call's repetition).
  bool VectorsHeld() const;
  // Starts the call next_call() describes (for a Request; RunToEnd starts its own).
  void Restart();

  Transport::PollResult Advance() override;
  Transport::PollResult Look(absl::Duration) override { return Transport::PollResult::kIdle; }
  // Waits as the transport does, sleeping on this rank's doorbell in the segment.
  absl::Status WaitFor(Transport& transport, absl::FunctionRef<Transport::PollResult()> poll,
                       absl::Time deadline,
                       absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) override;
  // Starts the call next_call() describes and runs it to its end for a blocking caller
  // with nothing else in flight on the node: polls the segment alone for a moment
  // first (a small call's peers usually arrive within it), then waits as WaitFor does
  // until `deadline()`, read only then. Returns what the wait returned (the call's own
  // outcome is status()).
  // `decided`: DecideForRepeats ran for this call, which repeats the last but for its
  // sequence number and buffers.
  absl::Status RunToEnd(Transport& transport, absl::FunctionRef<absl::Time()> deadline,
                        bool decided);
  std::vector<int> PendingPeers() const override;
  bool on_node() const override { return true; }

 private:
  friend class NodeEngine;
  // kPublish: waits until every rank consumed the call before last (this rank's slot
  // of this parity is free), publishes; kGather: waits until every rank published,
  // checks their words, reads; kStage: waits for the ranks' second publication, reads
  // it; kChain (a chained Scan or Exscan instead of kGather's reading and kStage):
  // makes its result a chunk at a time as its predecessor's progress allows; kPieces
  // (a Bcast through the slots instead of kGather's reading): the root copies its
  // vector into the slots a piece at a time, the leaves copy each out as the root's
  // progress shows it; kDrain:
  // waits until every rank has read this rank's memory.
  enum class Phase : uint8_t { kPublish, kGather, kStage, kChain, kPieces, kDrain };
  // Restart's work (inlined into RunToEnd): Decide unless `decided`, then the call's
  // own state.
  void Start(bool decided);
  // The choices that depend only on the call's collective, counts, type, op and root
  // and on the node (small_, partitioned_, chained_, ...).
  void Decide();
  // Advances this call alone.
  Transport::PollResult Step();
  // A small call (small_) straight through the phases Step goes through, as long as
  // everything is as a loop of calls usually finds it, spinning on a late peer while
  // `polls` (counted there) stays below RunToEnd's budget; anything else (a peer that
  // has not read the call before last, is later than that, disagrees or left) it hands
  // to Step at the phase it reached, which deals with it as for any call. (Step's
  // general dispatch cost a small call about a third of its instructions.)
  Transport::PollResult RunSmall(int& polls);
  // RunSmall's kDrain.
  Transport::PollResult RunSmallDrain();
  // Whether this rank's part of a Scatter(v) or Gather(v) is small: every block it
  // publishes or reads within kEagerBytes (as this rank's arguments give them).
  bool SmallBlocks() const;
  // RunSmall's part of such a call: its publication, as Publish makes it, and its
  // copies, as Gather makes them; false where Gather must run instead (a count or a
  // publication not as this rank's arguments expect: Gather's checks name it).
  absl::Status PublishSmallBlocks();
  bool ReadSmallBlocks();
  size_t bytes() const { return call_.count * call_.element_bytes; }
  int me() const { return engine_.local_rank(); }
  int ranks() const { return engine_.local_size(); }
  // Publishes this rank's part (before its sequence number).
  absl::Status Publish();
  // Publish for a chained Scan or Exscan (node_engine_limits::Chained): what this
  // rank's successor reads (rank 0: its vector; Scan: its result, made in place;
  // Exscan: its inclusive prefix, in scratch; the last rank: nothing), its progress
  // at none.
  absl::Status PublishChained(const char* input);
  // kChain's work on chunk `chunk` (its predecessor has made it): Scan, the
  // predecessor's result op this rank's vector; Exscan, the predecessor's prefix as
  // this rank's result and, but on the last rank, that op its vector as its own prefix.
  absl::Status ChainChunk(uint32_t chunk);
  // How many chunks a chained call's vector has (chain_chunk_ elements each).
  uint32_t ChainChunks() const;
  // A Bcast through the slots (through_slots_): its pieces' bytes and count, and
  // kPieces' copies, false where a leaf waits for the root's next piece or the root
  // needs a leaf's slot for its next (Step chooses it); the leaves whose slots the
  // root writes, by slot (the first, the root's own, not in it), in the root's
  // control line's payload, which the call leaves unused.
  size_t SlotPieceBytes() const;
  uint32_t SlotPieces() const;
  enum class PiecesState { kDone, kAwaitRoot, kNeedHolder, kAwaitLeaves };
  PiecesState MovePieces();
  uint16_t* SlotHolders() const;
  // The slots a Bcast through them uses (its root's and leaves'), reused in turn
  // beyond their capacity, and that capacity in pieces.
  uint32_t RingSlots() const;
  uint32_t RingPieces() const;
  // Publishes this rank's vector `input` where it lies, for its own reduction alone
  // (no peer reads it, so the call neither copies it nor waits for readers): a Scan's
  // last rank's.
  void PublishUnread(const char* input);
  // Publishes `bytes` at `data`: inline, in the slot, or (beyond it) where it is. A copy
  // (inline or in the slot) leaves out the `hole_bytes` at `hole_at`, which no reader
  // reads (a Scatter root's own block); a lent buffer is as it is.
  absl::Status Expose(const char* data, size_t bytes, size_t hole_at = 0, size_t hole_bytes = 0);
  // Publishes a copy of `bytes` at `data` but for the `hole_bytes` at `hole_at`: in the
  // control line where what it keeps fits, else in this rank's slot past the call's
  // table (Expose's copy, and the small calls').
  void ExposeCopy(const void* data, size_t bytes, size_t hole_at = 0, size_t hole_bytes = 0);
  // Publishes the blocks of `data` at the call's displacements (elements, vectors[1]) of
  // its counts (vectors[0]), one per rank, with the table of where each starts, as
  // packing_ lays them out.
  absl::Status ExposeBlocks(const char* data);
  // ExposeBlocks' publications that do not fit the control line: in the slot, or lent.
  absl::Status ExposeBlocksBeyondControlLine(const char* data);
  // Copies the blocks of `data` but this rank's own one after another into `into`.
  void PackBlocks(const char* data, char* into) const;
  // Works out packing_ for the call's vectors (Decide).
  void DecideBlockPacking();
  // Where rank `rank`'s block for rank `to` starts in its slot's table (a Gather
  // root's destinations).
  size_t BlockOffset(int rank, int to) const;
  // Rank `rank`'s block for rank `to` in its publication by ExposeBlocks: where it
  // starts (as Fetch takes offsets) and its bytes, from the inline table or the slot's.
  struct BlockEntry {
    uint64_t offset;
    uint64_t length;
  };
  BlockEntry PublishedBlock(int rank, int to) const;
  // Where this rank's block starts in its Scatter root's publication: a copy leaves out
  // the root's own block (Publish, PublishSmallBlocks), a lent buffer is the root's
  // send buffer as it is.
  size_t ScatterBlockOffset() const;
  // This rank's place among a rooted call's leaves (its rank, less one past the root):
  // where a copy of the root's blocks without its own puts this rank's.
  size_t PlaceAmongLeaves() const;
  // Bytes before the data in a slot: the table of ExposeBlocks' collectives.
  size_t TableBytes() const;
  // Copies `bytes` at `offset` of `rank`'s publication into `destination`.
  absl::Status Fetch(int rank, size_t offset, size_t bytes, void* destination);
  // Copies `bytes` between `local` and `address` in `rank`'s memory (into it when
  // `write`): memcpy where Mapped finds it, else process_vm_readv/writev. `what` says
  // which of the rank's exposed addresses `address` lies in.
  absl::Status CopyWithPeer(int rank, bool write, NodeSegment::Exposed what, uint64_t address,
                            void* local, size_t bytes);
  // Where this rank can touch `bytes` at `address` of `rank`'s memory directly: the
  // same address (a rank of this process), or its zcoll buffer (`what` names the
  // exposed address it lies in) mapped here; null if neither.
  char* Mapped(int rank, NodeSegment::Exposed what, uint64_t address, size_t bytes);
  // Publishes where this rank wants peers to write its result (`extent` bytes).
  void ExposeDestination(void* recv, uint64_t extent);
  // The error of a call whose peer left while this rank copied to or from its memory.
  absl::Status Departed(int rank);
  // The error of a call whose peer left it: the job's failure, if its notice comes
  // within a moment (the likely reason the peer left, naming the cause), else `seen`.
  absl::Status CauseOfLeaving(absl::Status seen);
  // `bytes` at `address` of `rank`'s memory (CopyWithPeer), checked against its leaving.
  absl::Status ReadPeer(int rank, NodeSegment::Exposed what, uint64_t address, size_t bytes,
                        void* destination);
  // Writes `bytes` at `from` into `rank`'s destination (the buffer it published for
  // this call), `offset` + `at` bytes in, after checking that the rank expects
  // `length` bytes there (its block, of which this is a part).
  absl::Status WriteDestination(int rank, size_t offset, size_t length, const char* from,
                                size_t bytes, size_t at = 0);
  // Up to how many bytes (its table included) this rank copies what it publishes into
  // its slot; beyond, peers read it where it lies.
  size_t CopyInLimit() const;
  // Whether a publication of `bytes` in a zcoll buffer is lent at any size beyond
  // kEagerBytes (node_engine_limits::LendsMappedBuffer) rather than copied in.
  bool LendsMappedBuffer(size_t bytes) const;
  // Whether this rank copies `copied` bytes of its publication into its slot with
  // streaming stores (node_engine_limits::StreamsCopyIn).
  bool StreamsCopyIn(size_t copied) const;
  // Whether a transfer of `length` is copied by both its sides at once, and the first
  // bytes of a Bcast's that the root writes, the leaf reading the rest
  // (node_engine_limits.h; neither where ranks cannot read each other's memory).
  bool Cooperates(size_t length) const;
  size_t BcastShare(size_t length) const;
  // The first bytes of an Exscan's vector that rank 0 (which computes nothing) writes
  // into rank 1's result, rank 1's own copy of rank 0's vector being the rest: half,
  // from the cooperative size.
  size_t ExscanShare() const;
  // Whether this rank waits for `rank`'s second publication in this call.
  bool AwaitsStageOf(int rank) const;
  // Whether this rank may leave the call without reading the words of ranks whose
  // publications it does not need, comparing them two calls later (VerifyEagerCall):
  // with nothing lent, deferred or partitioned, node_engine_limits::MayDeferChecks.
  bool MayDeferChecks() const;
  // The ranks whose publications this rank's role reads (first, last; its own
  // included): node_engine_limits::RoleReads.
  std::pair<int, int> RoleReads() const;
  // Whether this call is a Barrier whose leaves wait for rank 0's release
  // (node_engine_limits::ReleasedBarrier) rather than every rank's word.
  bool ReleasedBarrier() const;
  // Sets read_first_..read_last_, the ranks whose words kGather waits for: where
  // `may_defer` (MayDeferChecks), none for an eager rank and else RoleReads; otherwise
  // every rank; and, if some are left out, has VerifyEagerCall compare them two calls
  // later. (Every rank's in one call would make a Bcast's leaf on a node of 64 read 63
  // lines where it needs one, and wait on an oversubscribed node until each of them
  // has had a core.)
  void ChooseReads(bool may_defer);
  // Whether first..last leaves out a rank other than this one.
  bool LeavesOthersOut(int first, int last) const;
  // The ranks whose words kGather waits for where checks may be deferred (ChooseReads).
  std::pair<int, int> DeferredReads() const;
  // Records this call as one whose peers' words this rank left unread, for
  // VerifyEagerCall to compare two calls later.
  void RememberEagerCall();
  // Whether this rank's role needs nothing of the others (a Bcast's or Scatter's root,
  // a Reduce's or Gather's leaf, a Scan's or Exscan's rank 0;
  // node_engine_limits::RoleNeedsNothing). Where MayDeferChecks too it is eager: it
  // leaves the call once it has published, without waiting for the others (their
  // reading is what holds its next call of the same parity back), and compares their
  // check words with its own two calls later (VerifyEagerCall).
  bool RoleNeedsNothing() const;
  // What of a peer's slot RunSmall fetches while it waits for the peer's word (bytes 0:
  // nothing).
  struct SlotSpan {
    size_t offset = 0;
    size_t bytes = 0;
  };
  SlotSpan SlotReadAhead() const;
  // Before this rank publishes call s: if it was eager in call s - 2, every rank's
  // word of that call against its own (every rank has published it, having read it,
  // and none can publish s + 2 before this rank has read s).
  absl::Status VerifyEagerCall();
  // While call s waits: if this rank was eager in call s - 1 and every rank has
  // published that call by now, their words against its own, so that call s + 1 need
  // not (its look at each peer's line is a cache line's trip, the peer having written
  // the line since; a wait is the time that costs nothing). A disagreement fails call
  // s (kDone); otherwise kIdle, compared or not.
  Transport::PollResult CompareEagerCallWhileWaiting();
  // Every rank's word of the eager call `eager`, `calls_back` node calls before this
  // one and published by all, against this rank's: OK, or the disagreement naming the
  // first rank that differs (VerifyEagerCall's and CompareEagerCallWhileWaiting's).
  absl::Status CompareEagerCall(const NodeEngine::EagerCall& eager, int calls_back) const;
  // Marks this rank out of the call (its caller may reuse its buffers) and waits for
  // peers still writing into them.
  void Leave();
  // `rank`'s publication at `offset` if it lies in the segment (inline or in its
  // slot), else null.
  const char* InSegment(int rank, size_t offset) const;
  // `rank`'s publication at `offset` where this rank can read it in place (inline,
  // slot, a rank of this process, or a zcoll buffer mapped here), else null.
  const char* Direct(int rank, size_t offset);
  // Reduces ranks first..last's publications, `count` elements from `offset` bytes,
  // into `out`, in rank order.
  absl::Status ReduceFrom(int first, int last, size_t offset, size_t count, char* out);
  // ReduceFrom beyond its inline case: resolves the kernels if the last call's are not
  // the call's, then ReduceAnywhere.
  absl::Status ReduceResolving(int first, int last, size_t offset, size_t count, char* out);
  // Whether reduction_ holds the kernels of the call's op and type.
  bool ReductionResolved() const {
    return reduction_.has_value() && reduction_->type() == call_.type &&
           reduction_->op() == call_.op;
  }
  // ReduceFrom wherever the publications lie (peers' memory read in chunks when it
  // cannot be read in place), after the kernels were resolved.
  absl::Status ReduceAnywhere(int first, int last, size_t offset, size_t count, char* out);
  // Looks up the kernels of the call's op and type into reduction_.
  absl::Status ResolveReduction();
  // The block of `count` elements that rank `rank` reduces (its first element, its
  // length): split by the count alone, so every rank splits alike.
  std::pair<size_t, size_t> Block(int rank) const;
  // Says (Consume) that this rank read all it reads of its peers in the call, once its
  // reduction has staged their data: where kDrain would, it may now.
  void ConsumeAfterReading();
  // The error of a call whose peer `rank` left before this rank finished it (while
  // this rank waited for it, or after it published).
  absl::Status LeftTheCall(int rank);
  // `status` (an error of a reduction) with this rank's number in front.
  absl::Status NamingThisRank(absl::Status status) const;
  // The reading of kGather; sets phase_ to what follows.
  absl::Status Gather();
  // The reading of kStage: rank `rank`'s block.
  absl::Status ReadStage(int rank);
  // Where results go: the caller's buffer, or scratch while peers still read it.
  char* Output() { return deferred_ ? deferred_result_->data() : static_cast<char*>(call_.recv); }
  // The (offset, bytes) ranges of the output a deferred result fills.
  void DeferredRanges(std::vector<std::pair<size_t, size_t>>& ranges) const;
  void Fail(absl::Status status);
  // Pays a quiet publication's owed look at the sleepers (wake_owed_), before a wait.
  void PayOwedWake() {
    if (ABSL_PREDICT_FALSE(wake_owed_)) {
      wake_owed_ = false;
      engine_.segment().WakeForQuietPublication();
    }
  }
  // Marks the call finished (with status_) and leaves the engine's list.
  void End();
  // The ranks' check words differ: the error naming `rank`.
  absl::Status Disagreement(int rank, uint32_t theirs) const;
  // Reads what it gathered into the caller's buffer.
  absl::Status Finish();

  NodeEngine& engine_;
  Transport& transport_;
  Call call_;
  std::array<std::vector<size_t>, 4> vectors_;  // call_.vectors, owned
  bool holds_vectors_ = false;                  // vectors_ were filled by the last call
  Phase phase_ = Phase::kPublish;
  // An Allreduce, Reduce, Bcast, Barrier (not a released one), Scan or Exscan of at most
  // kEagerBytes, or a Scatter(v) or Gather(v) whose blocks are (SmallBlocks), whose every
  // publication is copied into the control line or the slot: RunToEnd runs it with
  // RunSmall.
  bool small_ = false;
  // A small call's choices that depend on nothing but its shape and this rank's role,
  // made with small_ by Decide: RunSmall's without their dispatch on the collective
  // (four switches, about thirty instructions a call).
  struct SmallReads {
    bool needs_nothing = false;  // RoleNeedsNothing
    int first = 0;               // DeferredReads
    int last = 0;
    bool leaves_others_out = false;  // LeavesOthersOut of them
    SlotSpan ahead;                  // SlotReadAhead where ranks spin, else nothing
  };
  SmallReads small_reads_;
  // How ExposeBlocks packs this rank's blocks (a Scatterv root's, an Alltoallv rank's)
  // into its publication: all of it depends on nothing but the call's counts,
  // displacements and element size and this rank, so Decide works it out and a loop's
  // repetitions copy the blocks and the table without working them out again (4 ranks,
  // a Scatterv root's 8 B: 817 instructions a call to 700; with the control line's case
  // of ExposeBlocks inline, 658 to 617).
  struct BlockPacking {
    size_t packed = 0;  // a copy's bytes: all the blocks but this rank's own, which it keeps
    size_t extent = 0;  // the bytes of `data` the blocks span, where it is lent
    // Blocks that lie one after another (displacements the running sum of the counts,
    // as most callers lay them out) go in two copies around this rank's own, rather than
    // one a rank: from `first` the `before` bytes, and from `after` the rest.
    bool contiguous = false;
    size_t first = 0;
    size_t before = 0;
    size_t after = 0;
    bool few = false;              // packed fits the control line: copied without a memcpy call
    bool streams = false;          // copied into the slot with streaming stores (StreamsCopyIn)
    bool in_control_line = false;  // the table and the blocks fit the control line
    bool inline_table = false;     // the table is in the control line (InlineTable)
    bool fits = false;             // the table and all the blocks fit CopyInLimit
    bool may_lend = false;         // lent either way or would be for being in a zcoll buffer
    // The table as 16-bit pairs (offset, bytes) as it goes into the control line where
    // inline_table: offsets past the table where in_control_line, else in the slot.
    size_t pairs_bytes = 0;
    std::array<uint16_t, NodeSegment::kInlineBytes / sizeof(uint16_t)> pairs{};
  };
  BlockPacking packing_;
  int next_peer_ = 0;   // the first rank not yet seen to have published or consumed
  int read_first_ = 0;  // kGather waits for ranks read_first_..read_last_ (ChooseReads)
  int read_last_ = 0;
  uint32_t idle_polls_ = 0;  // polls that found a peer not there yet
  // Beyond a slot, a Reduce or Allreduce splits the vector (ranks agree: the count),
  // and within one on many ranks (node_engine_limits::PartitionedInSlots: its blocks
  // reduced from the slots into the slots).
  bool partitioned_ = false;
  bool partitioned_in_slots_ = false;
  // A partitioned Allreduce's block of the result shown in the slot
  // (node_engine_limits::ResultInSlot).
  bool result_in_slot_ = false;
  // Peers read this rank's memory: it waits for them before it ends.
  bool exposed_ = false;
  // The result goes to result_ first (exposed_, in place, and overlapping what peers
  // read).
  bool deferred_ = false;
  // This rank has said it read the call (its `consumed`).
  bool consumed_ = false;
  // RunSmall published quietly (NodeSegment::PublishQuietly): the look at the sleepers
  // is owed until this rank waits (PayOwedWake) or its Consume or Leave pays it.
  bool wake_owed_ = false;
  // Whether the call says it consumed its peers' data once its reduction has read them,
  // before reducing (ConsumeAfterReading).
  bool consumes_after_reading_ = false;
  // Whether this rank copies into its result with streaming stores
  // (node_engine_limits::StreamsResultCopies; this rank's own choice).
  bool streams_result_ = false;
  // It waits for some peers' second publication (kStage).
  bool awaits_stage_ = false;
  // A chained Scan or Exscan (node_engine_limits::Chained: ranks agree, by the count):
  // the chunks made, and how many its predecessor had made when last looked at.
  bool chained_ = false;
  size_t chain_chunk_ = 1;  // elements (node_engine_limits::ChainChunkElements)
  uint32_t chain_made_ = 0;
  uint32_t chain_available_ = 0;
  // A Bcast through the slots of its parity (node_engine_limits::BcastThroughSlots:
  // ranks agree, by the count): the pieces this rank copied in (the root) or out, and
  // how many the root's progress showed when a leaf last looked; the root: the slots
  // it has, its own and the leaves' it chose (SlotHolders).
  bool through_slots_ = false;
  uint32_t pieces_done_ = 0;
  uint32_t pieces_shown_ = 0;
  uint32_t slots_held_ = 1;
  // Beyond the slots' capacity: the pieces the root may have copied by the leaves'
  // progress it last saw (their fewest plus the capacity).
  uint32_t pieces_freed_ = 0;
  // A chained Exscan's inclusive prefix (but on its last rank), from scratch_pool_ for
  // the call alone.
  std::shared_ptr<ScratchArena> chain_prefix_;
  // The op's kernels for the last reduction (calls in a loop share them).
  std::optional<ResolvedReduction> reduction_;
  std::vector<char> staging_;        // peers' chunks, read for a reduction
  std::vector<const void*> inputs_;  // a reduction's inputs, in rank order (kept: no allocation)
  std::vector<char> result_;         // a chunk of a partitioned Reduce's result (the root's)
  ScratchPool& scratch_pool_;
  // A deferred result, from scratch_pool_ for the call alone.
  std::shared_ptr<ScratchArena> deferred_result_;
  std::vector<std::pair<size_t, size_t>> ranges_;
  // Peers' zcoll buffers this execution mapped, by rank and kind (Mapped), kept for
  // its later calls (null: could not be mapped).
  struct PeerMapping {
    uint32_t pid = 0;
    BufferRef ref;
    std::shared_ptr<const PeerBufferMapping> mapping;
  };
  std::vector<PeerMapping> mapped_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_ENGINE_H_
