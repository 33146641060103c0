// NodeSegment: the shared memory through which the ranks of one communicator that
// share a node run their collectives without passing messages (issue 17's node
// engine; README, "Node collectives").
//
// One segment per communicator per node. The node's leader (its lowest rank) creates
// it at Create/Split/Dup, the node's other ranks map it by name, and the leader unlinks
// the name once all have, so the memory goes with the last process that maps it. The
// name starts with the leader's SharedMemoryPrefix, so that a launcher can sweep what
// a killed leader left between creating and unlinking it.
//
// Layout, for R ranks on the node (local ranks 0..R-1):
//
//   header page         magic, version, R, slot bytes, how many have attached, the
//                       creator's verdict on the setup; how many ranks sleep, and
//                       how often ranks left a call unfinished
//   2R control lines    by rank and parity: the last `published` sequence number of
//                       that parity, the check words of the rank's last two calls of
//                       it, and an inline payload
//   R consumed lines    rank i's `consumed` sequence number
//   R sleep lines       rank i's futex doorbell and whether it sleeps on it
//   R exposure lines    rank i's process id, how its publication of a call is read
//                       (inline, slot or its own memory) and where, its `stage`
//                       sequence number (a second publication within a call),
//                       whether it left a call unfinished, and a chain's progress
//   2R slots            rank i's two slots (by the parity of the call's sequence)
//
// Control, consumed lines and slots have a single writer, their rank (no atomic
// read-modify-write, no locks; only doorbells are rung by others): a rank writes its
// contribution into its inline payload or slot of the call's parity, then stores the
// call's sequence number into `published`; a reader loads it, reads, and stores the
// sequence into its own `consumed` once it has read everything it needs from the
// others in that call. The loads are sequentially consistent (a plain load on x86 and
// ARMv8); the stores release (ordering the payload before the number) and, as the
// sleeping protocol below needs, are ordered before the publisher's look at the
// sleepers' count: by an exchange (full fences) or by the sleepers' membarrier
// (asymmetric fences, the creator's verdict). A rank writes the parity of call s again
// in call s + 2, and first waits until every rank consumed s (usually long done): two
// buffers per rank make an exit barrier unnecessary.
//
// Sequence numbers are 32 bits and compared modulo 2^32 (SequenceReached), so a
// communicator that runs 2^32 collectives wraps around without confusing an old number
// with a new one; tests start near the wrap (first_sequence) to check that.
//
// Sleeping: a waiter sets its `sleeping` flag, counts itself among the sleepers, reads
// its doorbell, checks its condition once more and sleeps on the doorbell (a futex); a
// publisher, after publishing, looks at the sleepers' count and rings the doorbell of
// every rank whose flag is set. With full fences both sides' operations are
// sequentially consistent; with asymmetric fences the publisher's are a release store
// and a load, and the waiter, after counting itself in, makes every CPU that runs a
// registered process fence (membarrier's MEMBARRIER_CMD_GLOBAL_EXPEDITED). Either way
// the publisher sees the count or the waiter sees the publication. Asymmetric fences
// move the cost from every publication (a cache line's trip: the line a rank
// publishes in is in its peers' caches) to each sleep (a microsecond), and a wait
// sleeps only once it has spun and yielded (where ranks outnumber cores, 100 ms of
// yielding), so they are used wherever every rank could register. With full fences a
// small call publishes quietly (PublishQuietly) and pays the look at the sleepers by a
// fence before it waits or with its `consumed` count.

#ifndef ZCOLL_COLLECTIVES_NODE_SEGMENT_H_
#define ZCOLL_COLLECTIVES_NODE_SEGMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/shared_buffers.h"

namespace zcoll {

// Whether `value` has reached `target`, modulo 2^32: true when value is target or up
// to 2^31 - 1 beyond it.
inline bool SequenceReached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

class NodeSegment {
 public:
  // Bytes of a contribution that travel inside the control line.
  static constexpr size_t kInlineBytes = 44;
  // A rank's check words are kept for this many calls (by sequence modulo it): a rank
  // that returned from a call without reading the others' (NodeExecution's eager
  // ranks) compares them two calls later, when every rank has published that call and
  // none can yet have overwritten its word.
  static constexpr uint32_t kCheckWords = 4;
  // Slots are whole cache lines.
  static constexpr size_t kSlotAlignment = 64;
  // At most this many ranks per node share a segment.
  static constexpr int kMaxRanks = 1024;

  // The bytes of a segment for `ranks` ranks with slots of `slot_bytes`.
  static size_t SegmentBytes(int ranks, size_t slot_bytes);

  // Creates a segment named `name` (a POSIX shared-memory name without the slash;
  // it must not exist) for `ranks` ranks, this process being local rank 0, with every
  // rank's sequence numbers at first_sequence - 1 (nothing published yet).
  static absl::StatusOr<NodeSegment> Create(const std::string& name, int ranks, size_t slot_bytes,
                                            uint32_t first_sequence = 1);
  // Maps the segment `name` that the leader created for `ranks` ranks and slots of
  // `slot_bytes`, as local rank `rank`; InvalidArgument if it was made for another
  // shape.
  static absl::StatusOr<NodeSegment> Open(const std::string& name, int ranks, size_t slot_bytes,
                                          int rank);

  NodeSegment(NodeSegment&& other) noexcept;
  NodeSegment& operator=(NodeSegment&& other) noexcept;
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;
  ~NodeSegment();

  // Removes the name (the creator, once every rank has opened it); the memory stays
  // mapped. Idempotent.
  void Unlink();
  // Ranks that have opened the segment, the creator not counted.
  int attached() const;
  // What the creator decided once every rank said whether it mapped the segment
  // (NodeEngine::Create): kPending until then.
  enum class SetupState : uint32_t { kPending = 0, kReady = 1, kAbandoned = 2 };
  SetupState setup() const;
  void SetSetup(SetupState state);

  // Whether every rank can read every other's memory (process_vm_readv, or one
  // process): the creator's verdict, with the setup's.
  bool single_copy() const;
  void SetSingleCopy(bool single_copy);
  // Whether the machine's cores are fewer than the job's ranks on it: the creator's
  // view, with the setup's, so that every rank chooses alike.
  bool oversubscribed() const;
  void SetOversubscribed(bool oversubscribed);
  // Whether publications and `consumed` counts are stored without a fence, the
  // sleepers' side ordering them with a membarrier (Announce, BeginSleep): the
  // creator's verdict, written with the setup's when every rank registered for it
  // (RegisterAsymmetricFences) and none declined (ZCOLL_ASYMMETRIC_FENCES=0). A segment
  // follows it from UseSetupVerdicts on.
  bool asymmetric_fences() const;
  void SetAsymmetricFences(bool asymmetric);
  // Registers this process for the membarrier that asymmetric fences need (Linux 4.16
  // and later; a seccomp filter may refuse it): OK once registered, else why not.
  // Registers once per process.
  static absl::Status RegisterAsymmetricFences();
  // Reads the creator's verdicts that the hot paths follow (after the setup is ready),
  // and whether this segment's follow asymmetric fences.
  void UseSetupVerdicts();
  bool uses_asymmetric_fences() const { return asymmetric_fences_; }
  // The creator's address of its mapping and its process, for a rank that probes
  // whether it can read another process's memory (ProbeSingleCopy).
  absl::Status ProbeSingleCopy() const;

  const std::string& name() const { return name_; }
  int ranks() const { return ranks_; }
  size_t slot_bytes() const { return slot_bytes_; }
  size_t bytes() const { return bytes_; }

  // The sequence number of the last call of `sequence`'s parity that rank `rank`
  // published, and publishing one (then the sleepers' doorbells are rung).
  uint32_t published(int rank, uint32_t sequence) const {
    return control(rank, sequence)->published.load(std::memory_order_seq_cst);
  }
  void Publish(int rank, uint32_t sequence) {
    ControlLine* line = CarryConsumed(rank, sequence);
    Announce(line->published, sequence);
  }
  // Publish without the look at the sleepers that follows it: the publisher owes that
  // look before it next waits (WakeForQuietPublication), and pays it at the latest when
  // it says it has read the call (ConsumeAfterQuietPublication) or leaves. With
  // full fences a publication's exchange waits for its line, which peers hold since
  // they read the last one: published quietly, that wait overlaps what the publisher
  // does next (its look at a peer's line, its copy) until the store that pays it.
  // (With asymmetric fences Publish waits for nothing: used with full fences only.)
  void PublishQuietly(int rank, uint32_t sequence) {
    CarryConsumed(rank, sequence)->published.store(sequence, std::memory_order_release);
  }
  // The look a quiet publication owes, where nothing sequentially consistent follows it
  // before the publisher waits: a full fence (the quiet store before the count's load,
  // as Announce's exchange orders it), then the sleepers rung.
  void WakeForQuietPublication() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    WakeSleepers();
  }
  // Consume, paying a quiet publication's look: both stores, then the fence that
  // orders them before the count's load (one wait for the lines, not two).
  void ConsumeAfterQuietPublication(int rank, uint32_t sequence) {
    consumed_line(rank)->consumed.store(sequence, std::memory_order_release);
    WakeForQuietPublication();
  }
  // What `consumed` held when the rank last published (read after seeing that
  // publication): a peer learns it from the line it reads anyway, and need not read
  // the consumed line itself while this says enough (NodeEngine::ConsumedReached).
  // (Atomic: a rank may publish its next call while a peer reads this; either value
  // is a count the rank had reached.)
  uint32_t consumed_when_published(int rank, uint32_t sequence) const {
    return control(rank, sequence)->consumed_when_published.load(std::memory_order_relaxed);
  }
  // The sequence number of the last call whose contributions rank `rank` has finished
  // reading, and recording one (which rings the sleepers too: a writer may wait to
  // reuse its buffer).
  uint32_t consumed(int rank) const {
    return consumed_line(rank)->consumed.load(std::memory_order_seq_cst);
  }
  void Consume(int rank, uint32_t sequence) { Announce(consumed_line(rank)->consumed, sequence); }

  // The check word rank `rank` published with `sequence` (written before Publish,
  // read after seeing it; kept until the rank publishes sequence + kCheckWords).
  void SetCheck(int rank, uint32_t sequence, uint32_t check) {
    control(rank, sequence)->check[(sequence >> 1) & 1] = check;
  }
  uint32_t check(int rank, uint32_t sequence) const {
    return control(rank, sequence)->check[(sequence >> 1) & 1];
  }
  // Asks for the line of `check(rank, sequence)` without waiting for it.
  void FetchCheck(int rank, uint32_t sequence) const {
    __builtin_prefetch(&control(rank, sequence)->check[(sequence >> 1) & 1]);
  }

  // Rank `rank`'s inline payload and slot for calls of `sequence`'s parity.
  char* InlinePayload(int rank, uint32_t sequence) const {
    return reinterpret_cast<char*>(control(rank, sequence)->inline_payload);
  }
  char* Slot(int rank, uint32_t sequence) const {
    return slots_ + (static_cast<size_t>(rank) * 2 + (sequence & 1)) * slot_bytes_;
  }

  // How rank `rank`'s publication of a call is read: from its control line, its slot,
  // or its own memory at `address` (in its process `pid`). Written before Publish.
  enum class Where : uint32_t { kInline = 0, kSlot = 1, kAddress = 2 };
  // `extent`: the bytes published, which a reader must stay within; `buffer`: the
  // zcoll buffer (shared_buffers.h) that holds them, if any.
  void SetWhere(int rank, uint32_t sequence, Where where, const void* address, uint64_t extent,
                BufferRef buffer = {}) {
    if (where == Where::kAddress) {
      ExposureLine* line = exposure(rank);
      line->address[sequence & 1] = reinterpret_cast<uint64_t>(address);
      line->extent[sequence & 1] = extent;
      line->buffers[static_cast<int>(Exposed::kPublication)][sequence & 1] = buffer;
      extent = 0;
    }
    control(rank, sequence)->descriptor =
        (static_cast<uint32_t>(where) << kWhereShift) | static_cast<uint32_t>(extent);
  }
  uint64_t extent(int rank, uint32_t sequence) const {
    const uint32_t descriptor = control(rank, sequence)->descriptor;
    if ((descriptor >> kWhereShift) == static_cast<uint32_t>(Where::kAddress)) {
      return exposure(rank)->extent[sequence & 1];
    }
    return descriptor & ((uint32_t{1} << kWhereShift) - 1);
  }
  Where where(int rank, uint32_t sequence) const {
    return static_cast<Where>(control(rank, sequence)->descriptor >> kWhereShift);
  }
  uint64_t address(int rank, uint32_t sequence) const {
    return exposure(rank)->address[sequence & 1];
  }
  // A second address, of what the rank computed within the call (written before
  // PublishStage).
  void SetResultAddress(int rank, uint32_t sequence, const void* address, BufferRef buffer) {
    exposure(rank)->result_address[sequence & 1] = reinterpret_cast<uint64_t>(address);
    exposure(rank)->buffers[static_cast<int>(Exposed::kResult)][sequence & 1] = buffer;
  }
  uint64_t result_address(int rank, uint32_t sequence) const {
    return exposure(rank)->result_address[sequence & 1];
  }
  // Which of a rank's exposed addresses: its publication, its result, its destination.
  enum class Exposed { kPublication = 0, kResult = 1, kDestination = 2 };
  // The zcoll buffer that holds it (none: serial 0), which a peer may map.
  BufferRef buffer(int rank, uint32_t sequence, Exposed what) const {
    return exposure(rank)->buffers[static_cast<int>(what)][sequence & 1];
  }
  uint32_t pid(int rank) const { return exposure(rank)->pid; }
  // The second publication of a call: what the rank computed is ready.
  uint32_t stage(int rank) const { return exposure(rank)->stage.load(std::memory_order_seq_cst); }
  void PublishStage(int rank, uint32_t sequence) {
    exposure(rank)->stage.store(sequence, std::memory_order_seq_cst);
    WakeSleepers();
  }
  // A chained call's progress (a Scan's or Exscan's chain, node_engine_limits::Chained):
  // how many chunks of what its successor reads the rank has made in its call of
  // `sequence`'s parity. Reset before the rank publishes that call (its successor looks
  // only after seeing the publication, and the rank publishes the same parity again
  // only once every rank has consumed the call), then advanced chunk by chunk, ringing
  // `reader`, the one rank that waits for it, if it sleeps.
  void ResetProgress(int rank, uint32_t sequence) {
    exposure(rank)->progress[sequence & 1].store(0, std::memory_order_relaxed);
  }
  void PublishProgress(int rank, uint32_t sequence, uint32_t chunks, int reader) {
    Announce(exposure(rank)->progress[sequence & 1], chunks, reader);
  }
  uint32_t progress(int rank, uint32_t sequence) const {
    return exposure(rank)->progress[sequence & 1].load(std::memory_order_seq_cst);
  }
  // The rank left a call before its end (its job failed): its memory may be reused, so
  // whatever a peer read from it since is suspect.
  bool left(int rank) const { return exposure(rank)->left.load(std::memory_order_seq_cst) != 0; }
  // Whether the rank left before it finished call `sequence` (its job failed, or it
  // destroyed its communicator mid-call). One that said it had read the call and then
  // left had published all of it first: a peer that looked for a part of it an instant
  // before it left finds it at its next look. (`left` before `consumed`: the leaver
  // wrote them the other way round.)
  bool LeftUnfinished(int rank, uint32_t sequence) const {
    return left(rank) && !SequenceReached(consumed(rank), sequence);
  }
  void Leave(int rank) {
    departures().fetch_add(1, std::memory_order_seq_cst);
    exposure(rank)->left.store(1, std::memory_order_seq_cst);
    WakeSleepers();
  }
  // Whether any rank has left a call unfinished: one word to look at before each
  // rank's `left` (a small call's end checks every peer's).
  bool anyone_left() const { return departures().load(std::memory_order_seq_cst) != 0; }
  // Where the rank wants a peer to write into its memory in a call (its destination,
  // of `extent` bytes), written before Publish.
  void SetDestination(int rank, uint32_t sequence, const void* address, uint64_t extent,
                      BufferRef buffer) {
    ExposureLine* line = exposure(rank);
    line->destination[sequence & 1] = reinterpret_cast<uint64_t>(address);
    line->destination_extent[sequence & 1] = extent;
    line->buffers[static_cast<int>(Exposed::kDestination)][sequence & 1] = buffer;
  }
  uint64_t destination(int rank, uint32_t sequence) const {
    return exposure(rank)->destination[sequence & 1];
  }
  uint64_t destination_extent(int rank, uint32_t sequence) const {
    return exposure(rank)->destination_extent[sequence & 1];
  }
  // A peer that writes into the rank's memory counts itself in first and gives up if
  // the rank has left (BeginWriting false); a rank that leaves waits, up to `patience`,
  // until no writer is counted in, so that none writes after it returns (false if one
  // still was: a writer stopped between counting in and writing).
  bool BeginWriting(int rank) {
    exposure(rank)->writers.fetch_add(1, std::memory_order_seq_cst);
    if (!left(rank)) return true;
    EndWriting(rank);
    return false;
  }
  void EndWriting(int rank) { exposure(rank)->writers.fetch_sub(1, std::memory_order_seq_cst); }
  bool AwaitNoWriters(int rank, absl::Duration patience) const;

  // Sleeping on rank `rank`'s doorbell: BeginSleep announces it and returns the
  // doorbell's value; the caller checks its condition again and, if it still waits,
  // calls Sleep with that value (which returns when the doorbell rings, on a signal,
  // or after `timeout`); EndSleep withdraws the announcement.
  uint32_t BeginSleep(int rank);
  void Sleep(int rank, uint32_t doorbell, absl::Duration timeout);
  void EndSleep(int rank);

 private:
  struct Header;
  static constexpr int kWhereShift = 30;
  // One per rank and parity: a call's publication goes to the line of its parity, so
  // that a rank that publishes its next call does not take the line away from peers
  // still reading its last one.
  struct alignas(64) ControlLine {
    std::atomic<uint32_t> published;
    uint32_t check[kCheckWords / 2];  // by (sequence / 2) % 2
    // Where in the top 2 bits; for inline and slot publications their bytes below (a
    // small call's readers touch this line alone).
    uint32_t descriptor;
    std::atomic<uint32_t> consumed_when_published;
    unsigned char inline_payload[kInlineBytes];
  };
  struct alignas(64) ConsumedLine {
    std::atomic<uint32_t> consumed;
  };
  struct alignas(64) SleepLine {
    std::atomic<uint32_t> doorbell;
    std::atomic<uint32_t> sleeping;
  };
  struct alignas(64) ExposureLine {
    uint32_t pid;
    std::atomic<uint32_t> stage;
    std::atomic<uint32_t> left;
    uint64_t address[2];
    uint64_t result_address[2];
    uint64_t extent[2];
    std::atomic<uint32_t> writers;  // peers inside a write into this rank's memory
    uint64_t destination[2];
    uint64_t destination_extent[2];
    BufferRef buffers[3][2];            // by Exposed, by parity
    std::atomic<uint32_t> progress[2];  // by parity
  };
  static_assert(sizeof(ControlLine) == 64 && sizeof(ConsumedLine) == 64 &&
                sizeof(SleepLine) == 64 && sizeof(ExposureLine) == 192);

  NodeSegment(std::string name, int ranks, size_t slot_bytes, char* base, size_t bytes, bool owner);
  static absl::StatusOr<NodeSegment> Map(const std::string& name, int ranks, size_t slot_bytes,
                                         int rank, uint32_t first_sequence);

  Header* header() const { return reinterpret_cast<Header*>(base_); }
  ControlLine* control(int rank, uint32_t sequence) const {
    return controls_ + 2 * rank + (sequence & 1);
  }
  ConsumedLine* consumed_line(int rank) const { return consumed_lines_ + rank; }
  SleepLine* sleep_line(int rank) const { return sleep_lines_ + rank; }
  ExposureLine* exposure(int rank) const { return exposures_ + rank; }
  // Stores `value` in a word that sleepers may wait on, then rings them. The store
  // must be visible before the sleepers' count is loaded, or a rank announcing its
  // sleep meanwhile could miss it and sleep through it. With full fences the store is
  // sequentially consistent: on x86 an xchg, which waits for the line, and the line is
  // usually in a peer's cache, as peers read it: a cache line's trip on every
  // publication. With asymmetric fences the store is a plain release store and the
  // sleeper pays instead (BeginSleep's membarrier makes every running registered
  // process's CPU fence, so either this store is visible to the sleeper's check after
  // it, or this load comes after the fence and sees the sleeper counted).
  // With `reader` (0 or more), only that rank waits for the word: only it is rung (a
  // chain's progress, whose other ranks, woken by every chunk, would take the cores
  // that ranks sharing them need).
  void Announce(std::atomic<uint32_t>& word, uint32_t value, int reader = -1) {
    if (asymmetric_fences_) {
      word.store(value, std::memory_order_release);
      // (Only the compiler must keep the load below after the store.)
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      word.store(value, std::memory_order_seq_cst);
    }
    if (reader < 0) {
      WakeSleepers();
    } else if (sleepers().load(std::memory_order_seq_cst) != 0) {
      // (A sleeper sets its flag before it counts itself in: one this load counts has
      // its flag seen below.)
      RingIfSleeping(reader);
    }
  }
  // Rings the doorbell of every rank that announced it sleeps (after each publication:
  // the count is looked at here, inline, and is usually 0).
  void WakeSleepers() {
    // After the publication (both sequentially consistent): a sleeper that counted
    // itself in after this load sees the publication when it looks once more.
    if (sleepers().load(std::memory_order_seq_cst) != 0) RingSleepers();
  }
  void RingSleepers();
  void RingIfSleeping(int rank);
  // Writes the rank's `consumed` count into its control line of `sequence`'s parity,
  // before it publishes there (consumed_when_published), and returns that line.
  ControlLine* CarryConsumed(int rank, uint32_t sequence) {
    ControlLine* line = control(rank, sequence);
    line->consumed_when_published.store(
        consumed_line(rank)->consumed.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return line;
  }
  // Node-wide counts, each in a line of its own in the header page after Header: how
  // many ranks announced they sleep (a publisher with none to wake looks at no rank's
  // line), and how many times ranks left a call unfinished.
  struct alignas(64) CountLine {
    std::atomic<uint32_t> count;
  };
  static constexpr size_t kSleepersOffset = 1024;
  static constexpr size_t kDeparturesOffset = kSleepersOffset + sizeof(CountLine);
  std::atomic<uint32_t>& sleepers() const {
    return reinterpret_cast<CountLine*>(base_ + kSleepersOffset)->count;
  }
  std::atomic<uint32_t>& departures() const {
    return reinterpret_cast<CountLine*>(base_ + kDeparturesOffset)->count;
  }

  std::string name_;
  int ranks_ = 0;
  size_t slot_bytes_ = 0;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  bool owner_ = false;
  bool linked_ = false;
  bool asymmetric_fences_ = false;  // UseSetupVerdicts
  // Where each kind of line starts in the mapping (set with base_, kept rather than
  // recomputed from offsets: a small call reaches the control lines about ten times).
  ControlLine* controls_ = nullptr;
  ConsumedLine* consumed_lines_ = nullptr;
  SleepLine* sleep_lines_ = nullptr;
  ExposureLine* exposures_ = nullptr;
  char* slots_ = nullptr;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_SEGMENT_H_
