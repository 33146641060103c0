#include "collectives/node_engine.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "collectives/communicator_transport.h"
#include "collectives/node_engine_limits.h"
#include "collectives/topology_discovery.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/spin_pause.h"
#include "core/status_macros.h"
#include "ops/reduce.h"
#include "ops/streaming_copy.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

// What the node's leader sends its ranks (the segment's name, or why there is none)
// and what they answer (whether they mapped it, or why not).
struct SetupRecord {
  uint32_t ok;
  uint32_t single_copy;  // an answer: this rank can read the leader's memory
  // An answer: this process registered for the membarrier of asymmetric fences.
  uint32_t asymmetric_fences;
  char text[248];
};

// Whether this rank offers asymmetric fences: registered for their membarrier, and not
// asked for full fences (ZCOLL_ASYMMETRIC_FENCES=0).
bool OffersAsymmetricFences() {
  return EnvironmentUnsigned("ZCOLL_ASYMMETRIC_FENCES") != 0 &&
         NodeSegment::RegisterAsymmetricFences().ok();
}

void SetText(SetupRecord& record, absl::string_view text) {
  const size_t length = std::min(text.size(), sizeof(record.text) - 1);
  std::memcpy(record.text, text.data(), length);
  record.text[length] = '\0';
}

struct SetupState {
  SetupRecord offer;                 // leader: the one sent; others: the one received
  std::vector<SetupRecord> answers;  // leader: one per rank; others: their own
  std::unique_ptr<Completion[]> completions;
};

std::string FreshSegmentName(const CommunicatorTransport& transport) {
  // One generator per thread: ranks that are threads of one process make segments
  // at once.
  thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrCat(SharedMemoryPrefix(getpid()), "node-", transport.job_rank(transport.rank()),
                      "-", transport.context(), "-", absl::Hex(random() & 0xffffffffu));
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeEngine>> NodeEngine::Create(CommunicatorTransport& transport,
                                                               const Topology& topology,
                                                               absl::Time deadline,
                                                               uint32_t first_sequence) {
  const int size = transport.size(), rank = transport.rank();
  if (size < 2 || topology.num_nodes() != 1 || EnvironmentUnsigned("ZCOLL_NODE_ENGINE") == 0) {
    return nullptr;
  }
  // Peers read this process's memory (process_vm_readv) under Yama's ptrace scope 1
  // too (the shm transport does the same).
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  // One node: the communicator's ranks are the node's, rank 0 its leader. The leader
  // makes the segment and sends its name; each rank maps it and answers; the leader
  // writes its verdict into the segment, which the ranks that mapped it wait for.
  // Nobody leaves before the verdict (but a rank that could not map the segment, which
  // learns nothing more), so until then no rank can have failed the job by a call of
  // its own, and once it is written nothing here can fail: a rank that leaves first
  // and fails the job at once does not make a slower rank's Create or Split fail.
  auto state = std::make_shared<SetupState>();
  const size_t peers = static_cast<size_t>(size) - 1;
  state->completions = std::make_unique<Completion[]>(rank == 0 ? 2 * peers : 2);
  auto wait = [&](size_t from, size_t to) -> absl::Status {
    std::vector<const Completion*> pending;
    for (size_t i = from; i < to; ++i) pending.push_back(&state->completions[i]);
    absl::Status status = transport.WaitAll(pending, deadline);
    if (!status.ok()) transport.KeepUntilDestroyed(state);
    return status;
  };
  std::optional<NodeSegment> segment;
  if (rank == 0) {
    state->answers.resize(size);
    const std::string name = FreshSegmentName(transport);
    absl::StatusOr<NodeSegment> created =
        NodeSegment::Create(name, size, kSlotBytes, first_sequence);
    state->offer.ok = created.ok() ? 1 : 0;
    SetText(state->offer, created.ok() ? name : created.status().ToString());
    if (created.ok()) segment.emplace(std::move(*created));
    for (int peer = 1; peer < size; ++peer) {
      RETURN_IF_ERROR(transport.PostInternalRecv(peer, InternalTag::kNodeSetup,
                                                 &state->answers[peer], sizeof(SetupRecord),
                                                 &state->completions[peer - 1]));
      RETURN_IF_ERROR(transport.PostInternalSend(peer, InternalTag::kNodeSetup, &state->offer,
                                                 sizeof(SetupRecord),
                                                 &state->completions[peers + peer - 1]));
    }
    RETURN_IF_ERROR(wait(0, 2 * peers));
    std::string why = segment.has_value() ? "" : state->offer.text;
    // (Job-wide, so every rank's setting is this one.)
    bool single_copy = EnvironmentUnsigned("ZCOLL_CROSS_MEMORY_ATTACH") != 0;
    // Asymmetric fences need every rank registered. Their cost, the sleeper's membarrier
    // (about a microsecond), is paid only by a wait that has already lasted its spin and
    // yield (on a node whose ranks outnumber its cores, 100 ms of yielding: waits there
    // give the core up instead of sleeping), so they serve every node.
    bool asymmetric_fences = OffersAsymmetricFences();
    for (int peer = 1; peer < size; ++peer) {
      SetupRecord& answer = state->answers[peer];
      asymmetric_fences = asymmetric_fences && answer.ok == 1 && answer.asymmetric_fences == 1;
      answer.text[sizeof(answer.text) - 1] = '\0';
      if (answer.ok == 1 && answer.single_copy == 1) continue;
      if (answer.ok == 1 && single_copy) {
        ZCOLL_LOG(WARNING) << "rank 0: this communicator's node collectives move what does not "
                           << "fit their slots by messages (a Bcast through the slots): rank "
                           << peer << ": " << answer.text;
      }
      if (answer.ok == 1) {
        single_copy = false;
      } else if (why.empty()) {
        why = absl::StrCat("rank ", peer, ": ", answer.text);
      }
    }
    if (!segment.has_value()) {
      ZCOLL_LOG(WARNING) << "rank 0: this communicator's ranks run their collectives by "
                         << "messages: its node segment could not be made (" << why << ")";
      return nullptr;
    }
    // Every rank that will ever map it has: the name can go.
    segment->Unlink();
    segment->SetSingleCopy(single_copy);
    const bool oversubscribed = CoresOversubscribed();
    segment->SetOversubscribed(oversubscribed);
    segment->SetAsymmetricFences(asymmetric_fences);
    segment->SetSetup(why.empty() ? NodeSegment::SetupState::kReady
                                  : NodeSegment::SetupState::kAbandoned);
    if (!why.empty()) {
      ZCOLL_LOG(WARNING) << "rank 0: this communicator's ranks run their collectives by "
                         << "messages: a rank could not map its node segment (" << why << ")";
      return nullptr;
    }
    return std::make_unique<NodeEngine>(std::move(*segment), rank, first_sequence);
  }
  RETURN_IF_ERROR(transport.PostInternalRecv(0, InternalTag::kNodeSetup, &state->offer,
                                             sizeof(SetupRecord), &state->completions[0]));
  RETURN_IF_ERROR(wait(0, 1));
  SetupRecord& answer = state->answers.emplace_back();
  if (state->offer.ok == 1) {
    state->offer.text[sizeof(state->offer.text) - 1] = '\0';
    absl::StatusOr<NodeSegment> opened =
        NodeSegment::Open(state->offer.text, size, kSlotBytes, rank);
    answer.ok = opened.ok() ? 1 : 0;
    if (opened.ok()) {
      segment.emplace(std::move(*opened));
      const absl::Status probe = segment->ProbeSingleCopy();
      answer.single_copy = probe.ok() ? 1 : 0;
      answer.asymmetric_fences = OffersAsymmetricFences() ? 1 : 0;
      if (!probe.ok()) SetText(answer, probe.message());
    } else {
      SetText(answer, opened.status().ToString());
    }
  }
  RETURN_IF_ERROR(transport.PostInternalSend(0, InternalTag::kNodeSetup, &answer,
                                             sizeof(SetupRecord), &state->completions[1]));
  RETURN_IF_ERROR(wait(1, 2));
  // Without the segment (the leader could not make it, or this rank map it) the others
  // learn it from the verdict.
  if (!segment.has_value()) return nullptr;
  // The verdict: the segment's word, looked at before every progress of the transport,
  // so that a failure after it (of a rank that left first) is not this call's.
  const absl::Status waited = transport.WaitFor(
      [&] {
        return segment->setup() != NodeSegment::SetupState::kPending ? Transport::PollResult::kDone
                                                                     : Transport::PollResult::kIdle;
      },
      deadline);
  if (segment->setup() == NodeSegment::SetupState::kReady) {
    return std::make_unique<NodeEngine>(std::move(*segment), rank, first_sequence);
  }
  if (segment->setup() == NodeSegment::SetupState::kAbandoned) return nullptr;
  return waited;
}

NodeEngine::~NodeEngine() {
  // Ranks still waiting for this one in a call fail at once rather than at their
  // deadline (it will publish nothing more).
  segment_.Leave(local_rank_);
}

void NodeEngine::EndedOlder(NodeExecution* execution) {
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    if (in_flight_[i] != execution) continue;
    in_flight_.erase(in_flight_.begin() + static_cast<ptrdiff_t>(i));
    return;
  }
}

void NodeEngine::AdvanceOlder(const NodeExecution* execution) {
  size_t i = 0;
  while (i < in_flight_.size() && in_flight_[i] != execution) {
    NodeExecution* older = in_flight_[i];
    older->Step();
    // (A call that ended left the list: the next one took its place.)
    if (i < in_flight_.size() && in_flight_[i] == older) ++i;
  }
}

namespace {

// ZCOLL_CACHE_BYTES, else hwloc's last-level cache above this process's CPUs.
size_t CacheBytesOfThisRank() {
  const uint64_t asked = EnvironmentUnsigned("ZCOLL_CACHE_BYTES");
  return asked != 0 ? static_cast<size_t>(asked) : LastLevelCacheBytes();
}

}  // namespace

NodeEngine::NodeEngine(NodeSegment segment, int local_rank, uint32_t first_sequence)
    : segment_(std::move(segment)),
      local_rank_(local_rank),
      next_sequence_(first_sequence),
      known_consumed_(static_cast<size_t>(segment_.ranks()), first_sequence - 1),
      single_copy_(segment_.single_copy()),
      oversubscribed_(segment_.oversubscribed()),
      cache_bytes_(CacheBytesOfThisRank()),
      pid_(static_cast<uint32_t>(getpid())) {
  segment_.UseSetupVerdicts();
  // The reduction kernels for this machine's SIMD target are chosen once per process,
  // on first use: here, rather than inside the first reduction on the segment.
  ReduceKernelTarget();
}

namespace {

// (The thresholds, and why each has its value: node_engine_limits.h.)
using node_engine_limits::kEagerBytes;
using node_engine_limits::kReduceChunkBytes;
static_assert(NodeSegment::kInlineBytes == node_engine_limits::kInlineBytes,
              "the data-flow model's inline size is the control line's");
static_assert(NodeSegment::kSlotAlignment == 64, "node_engine_limits::TableBytes aligns to 64");

// A block's (offset, bytes) in an inline table of ExposeBlocks: two 16-bit words.
constexpr size_t kInlinePairBytes = 2 * sizeof(uint16_t);

// memcpy for the few bytes of a control line's payload (at most kInlineBytes), without
// a library call (about 18 instructions each, as many as the copy).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void CopyFewBytes(char* to, const char* from, size_t bytes) {
  if (bytes >= 8) {
    // 8-byte words, the last one overlapping the one before where bytes is no multiple.
    for (size_t at = 0; at + 8 < bytes; at += 8) std::memcpy(to + at, from + at, 8);
    std::memcpy(to + bytes - 8, from + bytes - 8, 8);
  } else {
    for (size_t at = 0; at < bytes; ++at) to[at] = from[at];
  }
}

// Copies `bytes`: with streaming stores where `streams` (StreamsCopyIn for a copy into
// a slot, StreamsResultCopies for one into a result), else with memcpy.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void CopyPlainOrStreamed(char* to, const char* from,
                                                             size_t bytes, bool streams) {
  if (bytes == 0) return;
  if (streams) {
    StreamingCopy(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

// Whether ExposeBlocks' table of a slot publication of `packed` bytes on `ranks` ranks is
// in the control line (16-bit pairs) rather than in the slot's first lines: then a
// reader fetches the control line it reads anyway and the lines of its block, not a
// table line too (2 ranks, a Scatterv of 64 B: three lines' trips to two). Readers
// decide it alike from the published extent.
bool InlineTable(int ranks, uint64_t packed) {
  return static_cast<size_t>(ranks) * kInlinePairBytes <= NodeSegment::kInlineBytes &&
         packed <= UINT16_MAX;
}

size_t SumOf(absl::Span<const size_t> values) {
  size_t sum = 0;
  for (size_t value : values) sum += value;
  return sum;
}

}  // namespace

NodeExecution::~NodeExecution() {
  if (finished_) return;
  engine_.Ended(this);
  Leave();
}

void NodeExecution::Leave() {
  // The caller may reuse its buffers from now: peers that read them must know, and
  // none may still be writing into them.
  NodeSegment& segment = engine_.segment();
  segment.Leave(me());
  if (!segment.AwaitNoWriters(me(), absl::Seconds(1))) {
    ZCOLL_LOG(WARNING) << "rank " << transport_.rank() << ": " << call_.name
                       << ": a peer of this node was still writing into this rank's buffer "
                       << "a second after the call failed (stopped mid-copy?)";
  }
}

void NodeExecution::Restart() { Start(/*decided=*/false); }

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::VectorsHeld() const {
  return holds_vectors_ && call_.vectors[0].data() == vectors_[0].data() &&
         call_.vectors[1].data() == vectors_[1].data() &&
         call_.vectors[2].data() == vectors_[2].data() &&
         call_.vectors[3].data() == vectors_[3].data();
}

void NodeExecution::HoldVectors() {
  for (size_t i = 0; i < vectors_.size(); ++i) {
    // (Held already: a quick call's, from one repetition to the next.)
    if (call_.vectors[i].data() == vectors_[i].data()) continue;
    vectors_[i].assign(call_.vectors[i].begin(), call_.vectors[i].end());
    call_.vectors[i] = vectors_[i];
  }
  holds_vectors_ = call_.has_vectors;
}

void NodeExecution::Decide() {
  const Call& call = call_;
  if ((call.collective == Collective::kScatterv && me() == call.root) ||
      call.collective == Collective::kAlltoallv) {
    DecideBlockPacking();
  }
  switch (call.collective) {
    case Collective::kAllreduce:
    case Collective::kReduce:
    case Collective::kBcast:
    case Collective::kScan:
    case Collective::kExscan:
      // (Up to kEagerBytes nothing is partitioned, chained, lent or deferred: every
      // publication is a copy, the control line's or the slot's.)
      small_ = bytes() <= node_engine_limits::kEagerBytes;
      break;
    case Collective::kBarrier:
      // (A released Barrier's leaves wait for rank 0's second publication, which
      // RunSmall does not look for.)
      small_ = !ReleasedBarrier();
      break;
    case Collective::kScatter:
    case Collective::kScatterv:
    case Collective::kGather:
    case Collective::kGatherv:
      small_ = SmallBlocks();
      break;
    default:
      small_ = false;
      break;
  }
  if (small_) {
    // (RunSmall's calls are copies: nothing lent or deferred, so checks may be deferred.)
    small_reads_.needs_nothing = RoleNeedsNothing();
    std::tie(small_reads_.first, small_reads_.last) = DeferredReads();
    small_reads_.leaves_others_out = LeavesOthersOut(small_reads_.first, small_reads_.last);
    small_reads_.ahead = engine_.oversubscribed() ? SlotSpan{} : SlotReadAhead();
  }
  // (Up to kEagerBytes nothing is partitioned or chained: a small call decides it in one
  // comparison.)
  static_assert(NodeEngine::kSlotBytes >= node_engine_limits::kEagerBytes);
  if (ABSL_PREDICT_TRUE(bytes() <= node_engine_limits::kEagerBytes)) {
    // (Nor staged: its publications lie in the segment, so nothing consumes early.)
    partitioned_ = partitioned_in_slots_ = result_in_slot_ = chained_ = consumes_after_reading_ =
        through_slots_ = streams_result_ = false;
    return;
  }
  // (What this rank sends and receives, for the exchanges StreamsResultCopies names.)
  size_t sent_and_received = 0;
  const size_t element_bytes = call.element_bytes;
  const size_t all_blocks = bytes() * static_cast<size_t>(ranks());
  switch (call.collective) {
    case Collective::kAllgather:
      sent_and_received = bytes() + all_blocks;
      break;
    case Collective::kAllgatherv:
      sent_and_received = bytes() + SumOf(call.vectors[0]) * element_bytes;
      break;
    case Collective::kAlltoall:
      sent_and_received = 2 * all_blocks;
      break;
    case Collective::kAlltoallv:
      sent_and_received = (SumOf(call.vectors[0]) + SumOf(call.vectors[2])) * element_bytes;
      break;
    default:
      break;
  }
  streams_result_ = node_engine_limits::StreamsResultCopies(
      call.collective, static_cast<size_t>(ranks()) * sent_and_received, engine_.cache_bytes());
  const size_t slot_bytes = engine_.segment().slot_bytes();
  partitioned_ = node_engine_limits::Partitioned(call.collective, bytes(), slot_bytes, ranks(),
                                                 engine_.oversubscribed());
  partitioned_in_slots_ = partitioned_ && bytes() <= slot_bytes;
  result_in_slot_ =
      partitioned_ && node_engine_limits::ResultInSlot(call.collective, bytes(), call.element_bytes,
                                                       slot_bytes, ranks());
  chained_ = node_engine_limits::Chained(call.collective, bytes(), slot_bytes, ranks());
  through_slots_ =
      call.collective == Collective::kBcast &&
      node_engine_limits::BcastThroughSlots(bytes(), slot_bytes, ranks(), engine_.oversubscribed(),
                                            engine_.single_copy());
  // (Where the call's one reduction is its last look at its peers' data, and cannot
  // fail once its inputs are read: ConsumeAfterReading.)
  switch (call.collective) {
    case Collective::kReduce:
    case Collective::kAllreduce:
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter:
    case Collective::kScan:
      consumes_after_reading_ = !partitioned_ && !chained_ && call.op.is_predefined();
      break;
    default:
      consumes_after_reading_ = false;
      break;
  }
  if (chained_) {
    chain_chunk_ = node_engine_limits::ChainChunkElements(call.count, call.element_bytes, ranks(),
                                                          engine_.oversubscribed());
  }
}

void NodeExecution::DecideForRepeats() {
  HoldVectors();
  Decide();
}

// (Inlined into RunToEnd, as End into RunSmallDrain and RunSmall into RunToEnd: a small
// call is a few hundred instructions, and a function's entry and exit about twenty.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::Start(bool decided) {
  if (!decided) {
    // The caller's vectors, copied (only the v-collectives have them; held ones are
    // emptied by the next call).
    if ((call_.has_vectors || holds_vectors_) && !VectorsHeld()) HoldVectors();
    Decide();
  }
  phase_ = Phase::kPublish;
  next_peer_ = 0;
  if (ABSL_PREDICT_FALSE(bytes() > node_engine_limits::kEagerBytes)) {
    pieces_done_ = 0;
    pieces_shown_ = 0;
    slots_held_ = 1;  // (the root's own)
    pieces_freed_ = 0;
    chain_made_ = 0;
    chain_available_ = 0;
  }
  exposed_ = false;
  deferred_ = false;
  consumed_ = false;
  awaits_stage_ = false;
  finished_ = false;
  if (!status_.ok()) status_ = absl::OkStatus();
  engine_.Started(this);
}

// (Far below kCooperativeBytes, so that no rank writes into another's buffer
// (Cooperates) and nobody awaits a stage; what the rank publishes is a copy.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::SmallBlocks() const {
  static_assert(node_engine_limits::kEagerBytes < node_engine_limits::kCooperativeBytes);
  constexpr size_t kEager = node_engine_limits::kEagerBytes;
  const Call& call = call_;
  const bool root = me() == call.root;
  switch (call.collective) {
    case Collective::kScatter:
      // The root publishes every block (leaves: theirs within that).
      return bytes() * static_cast<size_t>(ranks()) <= kEager;
    case Collective::kGather:
      // A leaf publishes its block (after the table that a large call's root writes),
      // which the root reads.
      return bytes() <= kEager && TableBytes() + bytes() <= CopyInLimit();
    case Collective::kScatterv: {
      if (bytes() > kEager) return false;
      if (!root) return true;
      // The root publishes its blocks packed, with their table, in its slot.
      const size_t packed = SumOf(call.vectors[0]) * call.element_bytes;
      return packed <= kEager && TableBytes() + packed <= CopyInLimit();
    }
    case Collective::kGatherv:
      if (bytes() > kEager || TableBytes() + bytes() > CopyInLimit()) return false;
      if (!root) return true;
      // The root reads every block from the slots.
      for (size_t count : call.vectors[0]) {
        if (count * call.element_bytes > kEager) return false;
      }
      return true;
    default:
      return false;
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status NodeExecution::PublishSmallBlocks() {
  const bool root = me() == call_.root;
  const char* send = static_cast<const char*>(call_.send);
  switch (call_.collective) {
    case Collective::kScatter:
    case Collective::kScatterv:
      if (!root) {
        // (Nobody writes into a Scatter's leaf: no destination.)
        ExposeCopy(nullptr, 0);
        return absl::OkStatus();
      }
      if (call_.collective == Collective::kScatterv) {
        return ExposeBlocks(send);
      }
      // (Its own block left out, as Publish's copy leaves it: ScatterBlockOffset.)
      ExposeCopy(send, bytes() * static_cast<size_t>(ranks()), me() * bytes(), bytes());
      return absl::OkStatus();
    default:  // Gather(v)
      if (root) {
        // (No rank writes into it: an extent of none, so that none writes by a stale
        // one.)
        ExposeDestination(call_.recv, 0);
        ExposeCopy(nullptr, 0);
      } else {
        ExposeCopy(send, bytes());
      }
      return absl::OkStatus();
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::ReadSmallBlocks() {
  const NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const size_t element_bytes = call_.element_bytes, block = bytes();
  const char* send = static_cast<const char*>(call_.send);
  char* recv = static_cast<char*>(call_.recv);
  const int root = call_.root;
  const bool vectored =
      call_.collective == Collective::kScatterv || call_.collective == Collective::kGatherv;
  absl::Span<const size_t> counts = call_.vectors[0], displs = call_.vectors[1];
  switch (call_.collective) {
    case Collective::kScatter:
    case Collective::kScatterv: {
      if (me() == root) {
        if (!call_.in_place) {
          const size_t length = vectored ? counts[me()] * element_bytes : block;
          const char* from = send + (vectored ? displs[me()] * element_bytes : me() * block);
          if (length > 0) std::memcpy(recv, from, length);
        }
        return true;
      }
      if (segment.where(root, sequence) == NodeSegment::Where::kAddress) return false;
      size_t offset = ScatterBlockOffset();
      if (vectored) {
        const BlockEntry entry = PublishedBlock(root, me());
        if (entry.length != block) return false;
        offset = entry.offset;
      } else if (offset + block > segment.extent(root, sequence)) {
        return false;
      }
      if (block > 0) std::memcpy(recv, InSegment(root, offset), block);
      return true;
    }
    case Collective::kGather:
    case Collective::kGatherv:
      if (me() != root) return true;
      for (int rank = 0; rank < ranks(); ++rank) {
        const size_t length = vectored ? counts[rank] * element_bytes : block;
        char* into = recv + (vectored ? displs[rank] * element_bytes : rank * block);
        if (rank == me()) {
          if (!call_.in_place && length > 0) std::memcpy(into, send, length);
          continue;
        }
        if (segment.extent(rank, sequence) != length ||
            segment.where(rank, sequence) == NodeSegment::Where::kAddress) {
          return false;
        }
        if (length > 0) std::memcpy(into, InSegment(rank, 0), length);
      }
      return true;
    default:
      return false;
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::End() {
  finished_ = true;
  if (deferred_result_ != nullptr) scratch_pool_.Release(std::move(deferred_result_));
  if (chain_prefix_ != nullptr) scratch_pool_.Release(std::move(chain_prefix_));
  engine_.Ended(this);
}

void NodeExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  PayOwedWake();
  Leave();
  // A successor may still be reading this rank's chain prefix (it finds out from the
  // mark Leave set, after its read): the arena stays until the transport goes rather
  // than back to a pool that may free it under a reader of this process.
  if (chain_prefix_ != nullptr) transport_.KeepUntilDestroyed(std::move(chain_prefix_));
  End();
}

void NodeExecution::ExposeDestination(void* recv, uint64_t extent) {
  // Peers write into a destination only in transfers of kCooperativeBytes or more
  // (Cooperates, ExscanShare) or a partitioned Reduce's blocks (beyond a slot), so a
  // smaller one needs no look for the zcoll buffer that holds it (a small Bcast's leaf).
  const bool written =
      extent >= node_engine_limits::kCooperativeBytes || extent > engine_.segment().slot_bytes();
  const BufferRef buffer = written ? FindSharedBuffer(recv, extent) : BufferRef();
  engine_.segment().SetDestination(me(), call_.sequence, recv, extent, buffer);
}

absl::Status NodeExecution::Disagreement(int rank, uint32_t theirs) const {
  return absl::InvalidArgumentError(absl::StrCat(
      "rank ", transport_.rank(), ": ", call_.name, ": the ranks disagree on the arguments: rank ",
      rank,
      " published a call of other arguments than this rank's in the node's shared segment (its "
      "check word ",
      absl::Hex(theirs), ", this rank's ", absl::Hex(call_.check), "); this rank passed ",
      call_.count, " elements of ", DataTypeName(call_.type),
      " (different counts, types, ops or roots, or forced algorithms; ZCOLL_CHECK=1 names the "
      "argument)"));
}

size_t NodeExecution::TableBytes() const {
  return node_engine_limits::TableBytes(call_.collective, ranks());
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::ExposeCopy(const void* from, size_t bytes,
                                                                   size_t hole_at,
                                                                   size_t hole_bytes) {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const char* data = static_cast<const char*>(from);
  const size_t after = hole_at + hole_bytes, copied = bytes - hole_bytes;
  if (ABSL_PREDICT_TRUE(copied <= NodeSegment::kInlineBytes)) {
    char* into = reinterpret_cast<char*>(segment.InlinePayload(me(), sequence));
    CopyFewBytes(into, data, hole_at);
    CopyFewBytes(into + hole_at, data + after, bytes - after);
    segment.SetWhere(me(), sequence, NodeSegment::Where::kInline, nullptr, copied);
    return;
  }
  char* into = segment.Slot(me(), sequence) + TableBytes();
  const bool streams = StreamsCopyIn(copied);
  CopyPlainOrStreamed(into, data, hole_at, streams);
  if (bytes > after) CopyPlainOrStreamed(into + hole_at, data + after, bytes - after, streams);
  segment.SetWhere(me(), sequence, NodeSegment::Where::kSlot, nullptr, copied);
}

inline void NodeExecution::PublishUnread(const char* input) {
  engine_.segment().SetWhere(me(), call_.sequence, NodeSegment::Where::kAddress, input, bytes());
}

absl::Status NodeExecution::Expose(const char* data, size_t bytes, size_t hole_at,
                                   size_t hole_bytes) {
  if (bytes - hole_bytes <= NodeSegment::kInlineBytes) {
    ExposeCopy(data, bytes, hole_at, hole_bytes);
    return absl::OkStatus();
  }
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  // (The zcoll buffer holding it, looked up once: where it is lent either way, or where
  // it would be lent for being in one.)
  const bool fits = bytes <= CopyInLimit() - TableBytes();
  const BufferRef shared =
      !fits || LendsMappedBuffer(bytes) ? FindSharedBuffer(data, bytes) : BufferRef();
  if (fits && !shared) {
    ExposeCopy(data, bytes, hole_at, hole_bytes);
    return absl::OkStatus();
  }
  if (!engine_.single_copy()) {
    return absl::InternalError(absl::StrCat(
        "rank ", transport_.rank(), ": ", call_.name, ": ", bytes,
        " bytes do not fit a node slot and this node's ranks cannot read each other's memory"));
  }
  segment.SetWhere(me(), sequence, NodeSegment::Where::kAddress, data, bytes, shared);
  exposed_ = true;
  return absl::OkStatus();
}

void NodeExecution::DecideBlockPacking() {
  BlockPacking& packing = packing_;
  const int self = me(), size = ranks();
  absl::Span<const size_t> counts = call_.vectors[0], displs = call_.vectors[1];
  packing = BlockPacking();
  // (A Scatterv's leaves pass no vectors; a checked call's are one count a rank.)
  if (counts.size() != static_cast<size_t>(size) || displs.size() != counts.size()) return;
  const size_t element_bytes = call_.element_bytes;
  const size_t all = SumOf(counts) * element_bytes;
  // A copy leaves out this rank's own block, which it takes from `data` itself (a
  // Scatterv's root, an Alltoallv's every rank): 2 ranks, a Scatterv of 32 B then fits
  // the control line with its table. Whether the blocks are copied or lent is still
  // decided by all of them (`all`), as the limits were measured (CopyInLimit).
  packing.packed = all - counts[self] * element_bytes;
  packing.few = packing.packed <= NodeSegment::kInlineBytes;
  packing.streams = !packing.few && StreamsCopyIn(packing.packed);
  size_t next = displs[0];  // (elements)
  bool contiguous = true;
  for (int rank = 0; rank < size; ++rank) {
    contiguous &= displs[rank] == next;
    next += counts[rank];
    packing.extent =
        std::max<size_t>(packing.extent, (displs[rank] + counts[rank]) * element_bytes);
  }
  packing.contiguous = contiguous;
  if (contiguous) {
    packing.first = displs[0] * element_bytes;
    packing.before = (displs[self] - displs[0]) * element_bytes;
    packing.after = (displs[self] + counts[self]) * element_bytes;
  }
  const size_t pairs_bytes = static_cast<size_t>(size) * kInlinePairBytes;
  packing.in_control_line = pairs_bytes + packing.packed <= NodeSegment::kInlineBytes;
  packing.inline_table = InlineTable(size, packing.packed);
  packing.fits = TableBytes() + all <= CopyInLimit();
  packing.may_lend = !packing.fits || LendsMappedBuffer(all);
  if (!packing.inline_table) return;
  // Blocks that fit the control line with the table go there too, past the table, so
  // that a small call's reader fetches that line alone (2 ranks: a leaf's block of up
  // to 36 bytes); else in the slot from its data's start.
  size_t at = packing.in_control_line ? pairs_bytes : 0;
  for (int rank = 0; rank < size; ++rank) {
    const size_t length = rank == self ? 0 : counts[rank] * element_bytes;
    packing.pairs[2 * rank] = static_cast<uint16_t>(at);
    packing.pairs[2 * rank + 1] = static_cast<uint16_t>(length);
    at += length;
  }
  packing.pairs_bytes = pairs_bytes;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::PackBlocks(const char* data,
                                                                   char* into) const {
  // (Held in locals and read through plain pointers: the copies' stores may alias
  // anything, and the compiler would reload the packing and the spans after each.)
  const BlockPacking& packing = packing_;
  const bool few = packing.few, streams = packing.streams;
  // Copies `length` bytes (a control line's few without a memcpy call; a slot's with
  // streaming stores where StreamsCopyIn says).
  auto copy = [=](char* to, const char* from, size_t length) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    if (few) {
      CopyFewBytes(to, from, length);
    } else {
      CopyPlainOrStreamed(to, from, length, streams);
    }
  };
  if (packing.contiguous) {
    const size_t before = packing.before, after = packing.after;
    const size_t after_bytes = packing.packed - before;
    copy(into, data + packing.first, before);
    copy(into + before, data + after, after_bytes);
    return;
  }
  const int self = me(), size = ranks();
  const size_t element_bytes = call_.element_bytes;
  const size_t* count_of = call_.vectors[0].data();
  const size_t* displ_of = call_.vectors[1].data();
  for (int rank = 0; rank < size; ++rank) {
    const size_t length = rank == self ? 0 : count_of[rank] * element_bytes;
    copy(into, data + displ_of[rank] * element_bytes, length);
    into += length;
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status NodeExecution::ExposeBlocks(const char* data) {
  const BlockPacking& packing = packing_;
  if (ABSL_PREDICT_FALSE(!packing.in_control_line)) return ExposeBlocksBeyondControlLine(data);
  // (Inline: a small call's whole publication, without a call's entry and exit.)
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const size_t pairs_bytes = packing.pairs_bytes, packed = packing.packed;
  char* payload = segment.InlinePayload(me(), sequence);
  CopyFewBytes(payload, reinterpret_cast<const char*>(packing.pairs.data()), pairs_bytes);
  PackBlocks(data, payload + pairs_bytes);
  segment.SetWhere(me(), sequence, NodeSegment::Where::kInline, nullptr, pairs_bytes + packed);
  return absl::OkStatus();
}

absl::Status NodeExecution::ExposeBlocksBeyondControlLine(const char* data) {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const BlockPacking& packing = packing_;
  const int self = me(), size = ranks();
  const size_t element_bytes = call_.element_bytes, packed = packing.packed;
  const size_t* count_of = call_.vectors[0].data();
  const size_t* displ_of = call_.vectors[1].data();
  // Pairs (offset from the data's start, bytes), one per rank.
  auto* table = reinterpret_cast<uint64_t*>(segment.Slot(self, sequence));
  // The zcoll buffer holding the blocks, where they are lent either way or would be for
  // being in one (as Expose's).
  const BufferRef shared = packing.may_lend ? FindSharedBuffer(data, packing.extent) : BufferRef();
  if (packing.fits && !shared) {
    if (packing.inline_table) {
      CopyFewBytes(segment.InlinePayload(self, sequence),
                   reinterpret_cast<const char*>(packing.pairs.data()), packing.pairs_bytes);
    } else {
      size_t at = 0;
      for (int rank = 0; rank < size; ++rank) {
        const size_t length = rank == self ? 0 : count_of[rank] * element_bytes;
        table[2 * rank] = at;
        table[2 * rank + 1] = length;
        at += length;
      }
    }
    PackBlocks(data, segment.Slot(self, sequence) + TableBytes());
    segment.SetWhere(self, sequence, NodeSegment::Where::kSlot, nullptr, packed);
    return absl::OkStatus();
  }
  if (!engine_.single_copy()) {
    return absl::InternalError(absl::StrCat(
        "rank ", transport_.rank(), ": ", call_.name, ": ", packed,
        " bytes do not fit a node slot and this node's ranks cannot read each other's memory"));
  }
  for (int rank = 0; rank < size; ++rank) {
    table[2 * rank] = displ_of[rank] * element_bytes;
    table[2 * rank + 1] = count_of[rank] * element_bytes;
  }
  segment.SetWhere(self, sequence, NodeSegment::Where::kAddress, data, packing.extent, shared);
  exposed_ = true;
  return absl::OkStatus();
}

absl::Status NodeExecution::Publish() {
  // The reductions' publication (their input) before the general dispatch: every rank
  // of them publishes it, and one that fits the control line defers nothing.
  if (call_.collective == Collective::kAllreduce && bytes() <= NodeSegment::kInlineBytes) {
    ExposeCopy(call_.in_place ? call_.recv : call_.send, bytes());
    return absl::OkStatus();
  }
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const size_t element_bytes = call_.element_bytes;
  const char* send = static_cast<const char*>(call_.send);
  char* recv = static_cast<char*>(call_.recv);
  const char* input = call_.in_place ? recv : send;
  const bool root = me() == call_.root;
  absl::Span<const size_t> counts = call_.vectors[0], displs = call_.vectors[1];
  absl::Status status;
  switch (call_.collective) {
    case Collective::kBarrier:
      status = Expose(nullptr, 0);
      break;
    case Collective::kBcast:
      if (through_slots_) {
        // The vector goes through the slots in kPieces; published here is the rank's
        // progress, at none (read only by ranks that have seen this call's word), and
        // a destination of no bytes, so that no rank writes by a stale one.
        segment.ResetProgress(me(), sequence);
        ExposeDestination(recv, 0);
        status = Expose(nullptr, 0);
        break;
      }
      status = Expose(root ? recv : nullptr, root ? bytes() : 0);
      if (!root) ExposeDestination(recv, bytes());
      break;
    case Collective::kScan:
    case Collective::kExscan:
      if (chained_) {
        status = PublishChained(input);
        break;
      }
      if (me() == ranks() - 1) {
        // Nobody reads the last rank's vector: an Exscan's needs none, a Scan's reduces
        // its own where it lies (into itself, in place: the kernels allow an output
        // that is one of their inputs) rather than a copy of it in the slot, and
        // returns without waiting for readers.
        if (call_.collective == Collective::kExscan) {
          status = Expose(nullptr, 0);
        } else {
          PublishUnread(input);
        }
        break;
      }
      [[fallthrough]];
    case Collective::kReduce:
    case Collective::kAllreduce:
      status = Expose(input, bytes());
      // A partitioned Reduce's leaves write their blocks into the root's buffer.
      if (root && call_.collective == Collective::kReduce) {
        ExposeDestination(recv, bytes());
      }
      break;
    case Collective::kReduceScatterBlock:
      status = Expose(input, bytes() * static_cast<size_t>(ranks()));
      break;
    case Collective::kReduceScatter:
      status = Expose(input, SumOf(counts) * element_bytes);
      break;
    case Collective::kScatter:
      // A copy leaves out the root's own block, which it takes from `send` itself
      // (ScatterBlockOffset): 2 ranks, 8 KiB, half the copy into the slot.
      status = root ? Expose(send, bytes() * static_cast<size_t>(ranks()), me() * bytes(), bytes())
                    : Expose(nullptr, 0);
      break;
    case Collective::kScatterv:
      status = root ? ExposeBlocks(send) : Expose(nullptr, 0);
      break;
    case Collective::kGather:
    case Collective::kGatherv: {
      if (!root) {
        status = Expose(send, bytes());
        break;
      }
      // The root publishes no data (nobody reads its block) but, where some block is
      // large enough for its rank to write it, where it wants each rank's (else a
      // destination of no bytes, so that no rank writes by a stale one).
      const bool vectored = call_.collective == Collective::kGatherv;
      size_t largest = vectored ? 0 : bytes();
      for (size_t count : counts) largest = std::max(largest, count * element_bytes);
      size_t extent = 0;
      if (Cooperates(largest)) {
        auto* table = reinterpret_cast<uint64_t*>(segment.Slot(me(), sequence));
        for (int rank = 0; rank < ranks(); ++rank) {
          table[2 * rank] = vectored ? displs[rank] * element_bytes : rank * bytes();
          table[2 * rank + 1] = vectored ? counts[rank] * element_bytes : bytes();
          extent = std::max<size_t>(extent, table[2 * rank] + table[2 * rank + 1]);
        }
      }
      ExposeDestination(recv, extent);
      status = Expose(nullptr, 0);
      break;
    }
    case Collective::kAllgather:
      status = Expose(call_.in_place ? recv + me() * bytes() : send, bytes());
      break;
    case Collective::kAllgatherv:
      status = Expose(call_.in_place ? recv + displs[me()] * element_bytes : send, bytes());
      break;
    case Collective::kAlltoall:
      status = Expose(input, bytes() * static_cast<size_t>(ranks()));
      break;
    case Collective::kAlltoallv:
      status = ExposeBlocks(input);
      break;
  }
  RETURN_IF_ERROR(status);
  // In place, a result that overwrites what peers still read from this rank's buffer
  // waits in scratch until they are done.
  switch (call_.collective) {
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
    case Collective::kAlltoallv:
      // (A chain's ranks overwrite only what they themselves read, or chunks their
      // successor reads once made.)
      deferred_ = exposed_ && call_.in_place && !chained_;
      break;
    case Collective::kScan:
    case Collective::kExscan:
      // Likewise, but rank 0 writes nothing over its vector: a Scan's result is that
      // vector, an Exscan's is undefined there (so it would copy it into scratch and
      // back, or hold scratch it never writes).
      deferred_ = exposed_ && call_.in_place && !chained_ && me() > 0;
      break;
    case Collective::kAllreduce:
      // A lent vector that its rank reduces whole (on 2 ranks, CopyInLimit); partitioned,
      // each rank's block of the result overwrites only its block of the vector, which
      // the others do not read.
      deferred_ = exposed_ && call_.in_place && !partitioned_;
      break;
    default:
      break;
  }
  if (deferred_) {
    DeferredRanges(ranges_);
    size_t extent = 0;
    for (const auto& [offset, length] : ranges_) extent = std::max(extent, offset + length);
    extent = std::max<size_t>(extent, 1);  // an arena, even for zero counts
    deferred_result_ = scratch_pool_.Acquire(extent);
  }
  // An Exscan's rank 1 takes rank 0's vector as its result, where it is made (in
  // scratch while in place): rank 0 writes the first share of it there.
  if (call_.collective == Collective::kExscan && me() == 1 && ExscanShare() > 0) {
    ExposeDestination(Output(), bytes());
  }
  return absl::OkStatus();
}

absl::Status NodeExecution::PublishChained(const char* input) {
  NodeSegment& segment = engine_.segment();
  segment.ResetProgress(me(), call_.sequence);
  if (me() == 0) return Expose(input, bytes());
  if (me() == ranks() - 1) return Expose(nullptr, 0);
  if (call_.collective == Collective::kScan) return Expose(static_cast<char*>(call_.recv), bytes());
  chain_prefix_ = scratch_pool_.Acquire(bytes());
  return Expose(chain_prefix_->data(), bytes());
}

uint32_t NodeExecution::ChainChunks() const {
  return static_cast<uint32_t>((call_.count + chain_chunk_ - 1) / chain_chunk_);
}

absl::Status NodeExecution::ChainChunk(uint32_t chunk) {
  const size_t element_bytes = call_.element_bytes;
  const size_t chunk_elements = chain_chunk_;
  const size_t first = chunk * chunk_elements;
  const size_t count = std::min(chunk_elements, call_.count - first);
  const size_t at = first * element_bytes, length = count * element_bytes;
  const bool scan = call_.collective == Collective::kScan;
  char* recv = static_cast<char*>(call_.recv) + at;
  const char* own = call_.in_place ? recv : static_cast<const char*>(call_.send) + at;
  if (me() == 0) {
    // Scan: its result is its vector. Exscan: it has none.
    if (scan && !call_.in_place) std::memcpy(recv, own, length);
    return absl::OkStatus();
  }
  const int previous = me() - 1;
  const bool last = me() == ranks() - 1;
  // The predecessor's chunk where it lies (a rank of this process, a zcoll buffer
  // mapped here), else read: into the result where nothing this rank still needs is
  // there, else into staging.
  const char* theirs = Direct(previous, at);
  const bool read_in_place = theirs != nullptr;
  if (!read_in_place) {
    char* into = recv;
    if (call_.in_place && (scan || !last)) {
      if (staging_.size() < length) staging_.resize(chunk_elements * element_bytes);
      into = staging_.data();
    }
    const NodeSegment& segment = engine_.segment();
    RETURN_IF_ERROR(ReadPeer(previous, NodeSegment::Exposed::kPublication,
                             segment.address(previous, call_.sequence) + at, length, into));
    theirs = into;
  }
  if (scan || !last) {
    if (!ReductionResolved()) RETURN_IF_ERROR(ResolveReduction());
    const void* inputs[2] = {theirs, own};
    char* out = scan ? recv : chain_prefix_->data() + at;
    absl::Status status = reduction_->Run(absl::MakeConstSpan(inputs, 2), out, count);
    if (!status.ok()) return NamingThisRank(std::move(status));
  }
  // Exscan: the predecessor's prefix is this rank's result (after its own vector, in
  // place, went into its prefix above).
  if (!scan && theirs != recv) std::memcpy(recv, theirs, length);
  if (read_in_place) {
    // Its memory read in place: still in the call?
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (engine_.segment().left(previous)) return Departed(previous);
  }
  return absl::OkStatus();
}

size_t NodeExecution::SlotPieceBytes() const {
  return engine_.segment().slot_bytes() / node_engine_limits::kBcastSlotPieceParts / 64 * 64;
}

uint32_t NodeExecution::SlotPieces() const {
  const size_t piece = SlotPieceBytes();
  return static_cast<uint32_t>((bytes() + piece - 1) / piece);
}

uint16_t* NodeExecution::SlotHolders() const {
  return reinterpret_cast<uint16_t*>(engine_.segment().InlinePayload(call_.root, call_.sequence));
}

uint32_t NodeExecution::RingSlots() const {
  return static_cast<uint32_t>(
      std::min(static_cast<size_t>(ranks()), node_engine_limits::kBcastMostSlots));
}

uint32_t NodeExecution::RingPieces() const {
  return RingSlots() * node_engine_limits::kBcastSlotPieceParts;
}

NodeExecution::PiecesState NodeExecution::MovePieces() {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const int root = call_.root;
  const uint32_t pieces = SlotPieces();
  constexpr uint32_t kPerSlot = node_engine_limits::kBcastSlotPieceParts;
  const uint32_t slots = RingSlots(), capacity = RingPieces();
  // (Beyond the slots' capacity the root reuses them, once every leaf has copied what
  // was there: each leaf counts its pieces then.)
  const bool ring = pieces > capacity;
  const size_t piece_bytes = SlotPieceBytes();
  char* recv = static_cast<char*>(call_.recv);
  const bool is_root = me() == root;
  while (pieces_done_ < pieces) {
    if (!is_root && pieces_shown_ <= pieces_done_) {
      pieces_shown_ = segment.progress(root, sequence);
      if (pieces_shown_ <= pieces_done_) return PiecesState::kAwaitRoot;
    }
    // (The root's own slot first, then the leaves' it chose, in its control line.)
    const uint32_t round_slot = pieces_done_ / kPerSlot, slot_index = round_slot % slots;
    if (is_root && round_slot < slots && slot_index >= slots_held_) {
      return PiecesState::kNeedHolder;
    }
    if (is_root && pieces_done_ >= capacity && pieces_freed_ <= pieces_done_) {
      return PiecesState::kAwaitLeaves;
    }
    const int holder = slot_index == 0 ? root : SlotHolders()[slot_index];
    const size_t at = static_cast<size_t>(pieces_done_) * piece_bytes;
    const size_t length = std::min(piece_bytes, bytes() - at);
    char* piece = segment.Slot(holder, sequence) + (pieces_done_ % kPerSlot) * piece_bytes;
    if (is_root) {
      // Streamed: the leaves read these lines last, two calls ago, and a plain copy
      // took each back from their cores first (4 ranks on 2 cores, 128 KiB: the root's
      // copy 65-92 us of CPU in this machine's slow mode, the whole call 5-87 us from
      // run to run; streamed, 7-16 us).
      StreamingCopy(piece, recv + at, length);
    } else {
      std::memcpy(recv + at, piece, length);
    }
    ++pieces_done_;
    if (is_root) {
      // (Rings every leaf that sleeps: they all wait for it.)
      segment.PublishProgress(me(), sequence, pieces_done_, /*reader=*/-1);
    } else if (ring) {
      segment.PublishProgress(me(), sequence, pieces_done_, root);
    }
  }
  return PiecesState::kDone;
}

void NodeExecution::DeferredRanges(std::vector<std::pair<size_t, size_t>>& ranges) const {
  ranges.clear();
  const size_t element_bytes = call_.element_bytes;
  switch (call_.collective) {
    case Collective::kReduceScatterBlock:
    case Collective::kScan:
    case Collective::kExscan:
    case Collective::kAllreduce:
      ranges.emplace_back(0, bytes());
      break;
    case Collective::kReduceScatter:
      ranges.emplace_back(0, vectors_[0][me()] * element_bytes);
      break;
    case Collective::kAlltoall:
      ranges.emplace_back(0, bytes() * static_cast<size_t>(ranks()));
      break;
    case Collective::kAlltoallv:
      for (int rank = 0; rank < ranks(); ++rank) {
        ranges.emplace_back(vectors_[3][rank] * element_bytes, vectors_[2][rank] * element_bytes);
      }
      break;
    default:
      break;
  }
}

size_t NodeExecution::BlockOffset(int rank, int to) const {
  return reinterpret_cast<const uint64_t*>(engine_.segment().Slot(rank, call_.sequence))[2 * to];
}

NodeExecution::BlockEntry NodeExecution::PublishedBlock(int rank, int to) const {
  const NodeSegment& segment = engine_.segment();
  const NodeSegment::Where where = segment.where(rank, call_.sequence);
  if (where == NodeSegment::Where::kInline ||
      (where == NodeSegment::Where::kSlot &&
       InlineTable(ranks(), segment.extent(rank, call_.sequence)))) {
    uint16_t pair[2];
    std::memcpy(pair, segment.InlinePayload(rank, call_.sequence) + to * kInlinePairBytes,
                kInlinePairBytes);
    return {pair[0], pair[1]};
  }
  const auto* table = reinterpret_cast<const uint64_t*>(segment.Slot(rank, call_.sequence));
  return {table[2 * to], table[2 * to + 1]};
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline size_t NodeExecution::PlaceAmongLeaves() const {
  return static_cast<size_t>(me() - (me() > call_.root ? 1 : 0));
}

size_t NodeExecution::ScatterBlockOffset() const {
  const bool copied =
      engine_.segment().where(call_.root, call_.sequence) != NodeSegment::Where::kAddress;
  return (copied ? PlaceAmongLeaves() : static_cast<size_t>(me())) * bytes();
}

inline const char* NodeExecution::InSegment(int rank, size_t offset) const {
  const NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  switch (segment.where(rank, sequence)) {
    case NodeSegment::Where::kInline:
      return segment.InlinePayload(rank, sequence) + offset;
    case NodeSegment::Where::kSlot:
      return segment.Slot(rank, sequence) + TableBytes() + offset;
    case NodeSegment::Where::kAddress:
      break;
  }
  return nullptr;
}

const char* NodeExecution::Direct(int rank, size_t offset) {
  if (const char* in_segment = InSegment(rank, offset); in_segment != nullptr) return in_segment;
  const NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  return Mapped(rank, NodeSegment::Exposed::kPublication, segment.address(rank, sequence) + offset,
                segment.extent(rank, sequence) - std::min(offset, segment.extent(rank, sequence)));
}

char* NodeExecution::Mapped(int rank, NodeSegment::Exposed what, uint64_t address, size_t bytes) {
  if (engine_.SameProcess(rank)) return reinterpret_cast<char*>(address);
  const NodeSegment& segment = engine_.segment();
  const BufferRef buffer = segment.buffer(rank, call_.sequence, what);
  if (!buffer) return nullptr;
  // The execution keeps each peer's last buffer of each kind: a call finds it here in
  // a few loads, where the process's registry takes a lock (on 64 ranks, 63 a call),
  // and holds it for the whole call, so that nothing unmaps it while the call reads
  // (only a later call replaces it, with that peer's other buffer).
  constexpr size_t kKinds = 3;
  static_assert(static_cast<size_t>(NodeSegment::Exposed::kDestination) < kKinds);
  const size_t at = static_cast<size_t>(rank) * kKinds + static_cast<size_t>(what);
  if (ABSL_PREDICT_FALSE(mapped_.size() <= at))
    mapped_.resize(static_cast<size_t>(ranks()) * kKinds);
  PeerMapping& known = mapped_[at];
  const uint32_t pid = segment.pid(rank);
  if (known.pid != pid || known.ref.fd != buffer.fd || known.ref.serial != buffer.serial) {
    known = PeerMapping{pid, buffer, MapPeerBuffer(pid, buffer)};
  }
  return known.mapping == nullptr ? nullptr : known.mapping->Translate(address, bytes);
}

absl::Status NodeExecution::CopyWithPeer(int rank, bool write, NodeSegment::Exposed what,
                                         uint64_t address, void* local, size_t bytes) {
  if (char* remote = Mapped(rank, what, address, bytes); remote != nullptr) {
    std::memcpy(write ? remote : local, write ? local : remote, bytes);
    return absl::OkStatus();
  }
  const auto pid = static_cast<pid_t>(engine_.segment().pid(rank));
  size_t done = 0;
  while (done < bytes) {
    iovec here{static_cast<char*>(local) + done, bytes - done};
    iovec there{reinterpret_cast<void*>(address + done), bytes - done};
    const ssize_t copied = write ? process_vm_writev(pid, &here, 1, &there, 1, 0)
                                 : process_vm_readv(pid, &here, 1, &there, 1, 0);
    if (copied < 0 && errno == EINTR) continue;
    if (copied <= 0) {
      const int error = copied < 0 ? errno : EIO;
      return absl::UnavailableError(
          absl::StrCat("rank ", transport_.rank(), ": ", call_.name, ": ",
                       write ? "writing into rank " : "reading rank ", rank, "'s buffer (",
                       write ? "process_vm_writev" : "process_vm_readv", " of ", bytes - done,
                       " bytes): ", std::strerror(error)));
    }
    done += static_cast<size_t>(copied);
  }
  return absl::OkStatus();
}

absl::Status NodeExecution::Departed(int rank) {
  return CauseOfLeaving(absl::AbortedError(
      absl::StrCat("rank ", transport_.rank(), ": ", call_.name, ": rank ", rank,
                   " left the call (its job failed) while this rank copied to or from its "
                   "buffer")));
}

absl::Status NodeExecution::CauseOfLeaving(absl::Status seen) {
  // A peer leaves a call unfinished when its job failed, and that failure's notice
  // (which names the cause: a rank that died, stopped or failed a call) is on its way
  // here too; an error naming only the peer that left would hide the cause. Wait for
  // the notice a little; a peer that left by destroying its communicator sends none.
  constexpr int kNoticeWaitMs = 250;
  for (int waited = 0; waited < kNoticeWaitMs; ++waited) {
    absl::Status progress = transport_.Progress();
    if (!progress.ok()) return progress;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return seen;
}

absl::Status NodeExecution::ReadPeer(int rank, NodeSegment::Exposed what, uint64_t address,
                                     size_t bytes, void* destination) {
  RETURN_IF_ERROR(CopyWithPeer(rank, /*write=*/false, what, address, destination, bytes));
  // What was read counts only if the rank was still in the call afterwards.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (engine_.segment().left(rank)) return Departed(rank);
  return absl::OkStatus();
}

bool NodeExecution::LendsMappedBuffer(size_t bytes) const {
  return engine_.single_copy() &&
         node_engine_limits::LendsMappedBuffer(bytes, engine_.oversubscribed());
}

size_t NodeExecution::CopyInLimit() const {
  const size_t slot = engine_.segment().slot_bytes();
  if (!engine_.single_copy()) return slot;
  return node_engine_limits::CopyInLimit(call_.collective, slot, ranks(), engine_.oversubscribed());
}

bool NodeExecution::StreamsCopyIn(size_t copied) const {
  return node_engine_limits::StreamsCopyIn(call_.collective, copied, ranks(),
                                           engine_.oversubscribed());
}

bool NodeExecution::Cooperates(size_t length) const {
  return engine_.single_copy() &&
         node_engine_limits::Cooperates(call_.collective, length, engine_.oversubscribed());
}

size_t NodeExecution::BcastShare(size_t length) const {
  if (!engine_.single_copy()) return 0;
  return node_engine_limits::BcastShare(length, ranks(), engine_.oversubscribed());
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::RoleNeedsNothing() const {
  return node_engine_limits::RoleNeedsNothing(call_.collective, me(), call_.root);
}

// (A Bcast through the slots is, like the calls within a slot, copies in the segment:
// its leaves wait for the root alone, and its root for nobody within the slots'
// capacity, beyond it for the leaves' progress, whose words it checks first.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::MayDeferChecks() const {
  return !exposed_ && !deferred_ && !partitioned_ &&
         (through_slots_ || node_engine_limits::MayDeferChecks(bytes(), engine_.oversubscribed()));
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline std::pair<int, int> NodeExecution::RoleReads() const {
  return node_engine_limits::RoleReads(call_.collective, me(), call_.root, ranks(),
                                       engine_.oversubscribed());
}

bool NodeExecution::ReleasedBarrier() const {
  return node_engine_limits::ReleasedBarrier(engine_.oversubscribed(), ranks());
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool NodeExecution::LeavesOthersOut(int first, int last) const {
  // (A Bcast's leaf on 2 ranks reads the root alone, leaving only itself out: nothing
  // to compare later.)
  const int outside = first + (ranks() - 1 - last);
  const bool self_outside = me() < first || me() > last;
  return outside > (self_outside ? 1 : 0);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::RememberEagerCall() {
  engine_.eager_call(call_.sequence) = {true, call_.sequence, call_.check, call_.name};
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline std::pair<int, int> NodeExecution::DeferredReads() const {
  if (RoleNeedsNothing()) return {ranks(), ranks() - 1};
  return RoleReads();
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void NodeExecution::ChooseReads(bool may_defer) {
  if (may_defer) {
    std::tie(read_first_, read_last_) = DeferredReads();
  } else {
    read_first_ = 0;
    read_last_ = ranks() - 1;
  }
  // Words this rank does not read in the call it compares two calls later.
  if (LeavesOthersOut(read_first_, read_last_)) {
    RememberEagerCall();
  }
}

absl::Status NodeExecution::VerifyEagerCall() {
  NodeEngine::EagerCall& eager = engine_.eager_call(call_.sequence);
  if (ABSL_PREDICT_TRUE(!eager.pending)) return absl::OkStatus();
  eager.pending = false;
  if (eager.sequence != call_.sequence - 2) return absl::OkStatus();
  return CompareEagerCall(eager, 2);
}

Transport::PollResult NodeExecution::CompareEagerCallWhileWaiting() {
  NodeEngine::EagerCall& eager = engine_.eager_call(call_.sequence - 1);
  if (eager.sequence != call_.sequence - 1) return Transport::PollResult::kIdle;
  // A rank that has published the call, or the next of its parity (whose word goes to
  // the other place: NodeSegment::kCheckWords), has its word of it in the segment; one
  // that has not is looked at again at the next poll.
  const NodeSegment& segment = engine_.segment();
  for (int rank = 0; rank < ranks(); ++rank) {
    if (rank != me() && !SequenceReached(segment.published(rank, eager.sequence), eager.sequence)) {
      return Transport::PollResult::kIdle;
    }
  }
  eager.pending = false;
  if (absl::Status status = CompareEagerCall(eager, 1); !status.ok()) {
    Fail(std::move(status));
    return Transport::PollResult::kDone;
  }
  return Transport::PollResult::kIdle;
}

absl::Status NodeExecution::CompareEagerCall(const NodeEngine::EagerCall& eager,
                                             int calls_back) const {
  const NodeSegment& segment = engine_.segment();
  int rank = 0;
  uint32_t theirs = 0;
  for (; rank < ranks(); ++rank) {
    theirs = segment.check(rank, eager.sequence);
    if (rank != me() && theirs != eager.check) break;
  }
  if (ABSL_PREDICT_TRUE(rank == ranks())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "rank ", transport_.rank(), ": ", call_.name,
      ": the ranks disagree on the arguments of this rank's ", eager.name, " ",
      calls_back == 1 ? "the node call" : "two node calls", " before this one: rank ", rank,
      " published a call of other arguments in the node's shared segment (its check word ",
      absl::Hex(theirs), ", this rank's ", absl::Hex(eager.check),
      "); this rank had left that call without waiting for the ranks whose data it did not "
      "need (different counts, types, ops or roots; ZCOLL_CHECK=1 names the argument in "
      "the call itself)"));
}

size_t NodeExecution::ExscanShare() const {
  if (!engine_.single_copy() || chained_) return 0;
  return node_engine_limits::ExscanShare(bytes());
}

bool NodeExecution::AwaitsStageOf(int rank) const {
  if (rank == me()) return false;
  switch (call_.collective) {
    case Collective::kBarrier:
      return rank == 0;  // (awaits_stage_ only where the Barrier is released)
    case Collective::kReduce:
    case Collective::kAllreduce:
      return true;  // (awaits_stage_ only where it reads the others' blocks)
    case Collective::kBcast:
      return rank == call_.root;
    case Collective::kGather:
      return Cooperates(bytes());
    case Collective::kGatherv:
      return Cooperates(vectors_[0][rank] * call_.element_bytes);
    case Collective::kExscan:
      return rank == 0 && me() == 1 && ExscanShare() > 0;
    default:
      return false;
  }
}

absl::Status NodeExecution::WriteDestination(int rank, size_t offset, size_t length,
                                             const char* from, size_t bytes, size_t at) {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  // The length the rank expects (its count, or the root's for this rank), so that a
  // disagreement is an error here, not a write past its buffer.
  const bool gather =
      call_.collective == Collective::kGather || call_.collective == Collective::kGatherv;
  const uint64_t expected =
      segment.destination_extent(rank, sequence) == 0 ? ~uint64_t{0}
      : gather ? reinterpret_cast<const uint64_t*>(segment.Slot(rank, sequence))[2 * me() + 1]
               : segment.destination_extent(rank, sequence);
  if (expected != length) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", transport_.rank(), ": ", call_.name,
                     ": the ranks disagree on the counts: rank ", rank, " expects ",
                     expected == ~uint64_t{0} ? std::string("fewer")
                                              : absl::StrCat(expected / call_.element_bytes),
                     " elements from this rank, which has ", length / call_.element_bytes));
  }
  const uint64_t address = segment.destination(rank, sequence) + offset + at;
  if (!segment.BeginWriting(rank)) return Departed(rank);
  const absl::Status status = CopyWithPeer(rank, /*write=*/true, NodeSegment::Exposed::kDestination,
                                           address, const_cast<char*>(from), bytes);
  segment.EndWriting(rank);
  return status;
}

absl::Status NodeExecution::Fetch(int rank, size_t offset, size_t bytes, void* destination) {
  if (bytes == 0) return absl::OkStatus();
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const uint64_t extent = segment.extent(rank, sequence);
  if (offset > extent || bytes > extent - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", transport_.rank(), ": ", call_.name,
        ": the ranks disagree on the counts: this rank needs bytes [", offset, ", ", offset + bytes,
        ") of what rank ", rank, " published, which holds ", extent, " bytes"));
  }
  if (segment.where(rank, sequence) != NodeSegment::Where::kAddress) {
    CopyPlainOrStreamed(static_cast<char*>(destination), Direct(rank, offset), bytes,
                        streams_result_);
    return absl::OkStatus();
  }
  return ReadPeer(rank, NodeSegment::Exposed::kPublication,
                  segment.address(rank, sequence) + offset, bytes, destination);
}

std::pair<size_t, size_t> NodeExecution::Block(int rank) const {
  return node_engine_limits::ReductionBlock(call_.collective, call_.count, call_.element_bytes,
                                            ranks(), call_.root, rank);
}

absl::Status NodeExecution::ResolveReduction() {
  absl::StatusOr<ResolvedReduction> resolved = ResolvedReduction::Resolve(call_.op, call_.type);
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(), absl::StrCat("rank ", transport_.rank(), ": ",
                                                               resolved.status().message()));
  }
  reduction_.emplace(std::move(*resolved));
  return absl::OkStatus();
}

// (Inlined where it is called, RunSmall's reductions among them: a small call's
// reduction is a few instructions of work.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status NodeExecution::ReduceFrom(int first, int last,
                                                                           size_t offset,
                                                                           size_t count,
                                                                           char* out) {
  // A few publications that all lie in the segment (a small call's), with the kernels
  // the last call resolved: their addresses on the stack and one kernel call, before
  // the general path's staging and checks.
  constexpr int kFewRanks = 8;
  if (ABSL_PREDICT_TRUE(count > 0 && last - first < kFewRanks && ReductionResolved())) {
    const void* inputs[kFewRanks];
    int in_segment = 0;
    for (int rank = first; rank <= last; ++rank, ++in_segment) {
      inputs[in_segment] = InSegment(rank, offset);
      if (inputs[in_segment] == nullptr) {
        // This rank's own vector where it lies (PublishUnread).
        if (rank != me()) break;
        inputs[in_segment] =
            reinterpret_cast<const char*>(engine_.segment().address(me(), call_.sequence)) + offset;
      }
    }
    if (in_segment == last - first + 1) {
      absl::Status status =
          reduction_->Run(absl::MakeConstSpan(inputs, static_cast<size_t>(in_segment)), out, count);
      if (ABSL_PREDICT_FALSE(!status.ok())) status = NamingThisRank(std::move(status));
      return status;
    }
  }
  return ReduceResolving(first, last, offset, count, out);
}

absl::Status NodeExecution::ReduceResolving(int first, int last, size_t offset, size_t count,
                                            char* out) {
  if (count == 0) return absl::OkStatus();
  // The kernels, looked up once for a run of calls with one op and type.
  if (!ReductionResolved()) RETURN_IF_ERROR(ResolveReduction());
  return ReduceAnywhere(first, last, offset, count, out);
}

absl::Status NodeExecution::ReduceAnywhere(int first, int last, size_t offset, size_t count,
                                           char* out) {
  auto reduce = [&](absl::Span<const void* const> inputs, char* into, size_t length) {
    absl::Status status = reduction_->Run(inputs, into, length);
    if (ABSL_PREDICT_FALSE(!status.ok())) status = NamingThisRank(std::move(status));
    return status;
  };
  NodeSegment& segment = engine_.segment();
  const size_t element_bytes = call_.element_bytes;
  std::vector<const void*>& inputs = inputs_;
  inputs.clear();
  int staged_ranks = 0;
  bool in_place_peers = false;       // a peer's buffer read in place (Direct)
  bool peers_read_directly = false;  // a peer's slot or buffer, reduced where it lies
  for (int rank = first; rank <= last; ++rank) {
    const char* input = Direct(rank, offset);
    if (input == nullptr) {
      ++staged_ranks;
    } else if (rank != me()) {
      peers_read_directly = true;
      if (segment.where(rank, call_.sequence) == NodeSegment::Where::kAddress) {
        in_place_peers = true;
      }
    }
    inputs.push_back(input);
  }
  if (staged_ranks == 0) {
    // Every contribution readable where it lies (slots, ranks of this process, mapped
    // zcoll buffers).
    RETURN_IF_ERROR(reduce(inputs, out, count));
  } else {
    // Chunks of the others' buffers read into staging, in cache.
    const size_t chunk = std::max<size_t>(1, kReduceChunkBytes / element_bytes);
    const size_t staging_bytes = static_cast<size_t>(staged_ranks) * chunk * element_bytes;
    if (staging_.size() < staging_bytes) staging_.resize(staging_bytes);
    for (size_t done = 0; done < count; done += chunk) {
      const size_t length = std::min(chunk, count - done);
      const size_t at = offset + done * element_bytes;
      size_t staged = 0;
      for (int rank = first; rank <= last; ++rank) {
        const char* input = Direct(rank, at);
        if (input == nullptr) {
          char* into = staging_.data() + staged++ * chunk * element_bytes;
          RETURN_IF_ERROR(ReadPeer(rank, NodeSegment::Exposed::kPublication,
                                   segment.address(rank, call_.sequence) + at,
                                   length * element_bytes, into));
          input = into;
        }
        inputs[static_cast<size_t>(rank - first)] = input;
      }
      // The last chunk staged: where nothing of the peers is reduced where it lies, this
      // rank has read all it reads of them, and they may go before it has reduced.
      if (consumes_after_reading_ && !peers_read_directly && done + chunk >= count) {
        ConsumeAfterReading();
      }
      RETURN_IF_ERROR(reduce(inputs, out + done * element_bytes, length));
    }
  }
  if (!in_place_peers) return absl::OkStatus();
  // A peer's memory read in place (its process is this one, or its buffer is mapped
  // here): still in the call?
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int rank = first; rank <= last; ++rank) {
    if (rank != me() && segment.where(rank, call_.sequence) == NodeSegment::Where::kAddress &&
        segment.left(rank)) {
      return Departed(rank);
    }
  }
  return absl::OkStatus();
}

void NodeExecution::ConsumeAfterReading() {
  // Said now rather than in kDrain, where the lenders wait for it: a Reduce's leaf, on
  // 2 ranks, returns while the root reduces what it read (medians of 9 alternating runs,
  // 32 / 48 KiB: reduce 0.88x / 0.86x the time, allreduce 0.96x / 0.90x,
  // reduce_scatter_block 0.95x / 0.95x, scan 1.00x / 0.90x). As kDrain does it: in the
  // calls' order, and with no peer gone (else kDrain says it, or fails the call). The
  // reduction then cannot fail (a predefined op's kernels, resolved).
  NodeSegment& segment = engine_.segment();
  if (consumed_ || segment.consumed(me()) != call_.sequence - 1 || segment.anyone_left()) return;
  segment.Consume(me(), call_.sequence);
  consumed_ = true;
}

absl::Status NodeExecution::LeftTheCall(int rank) {
  return CauseOfLeaving(absl::UnavailableError(absl::StrCat(
      "rank ", transport_.rank(), ": ", call_.name, ": ", transport_.DescribePeer(rank),
      " left the communicator (destroyed it, or failed in a call) before this rank finished "
      "the call in the node's shared segment")));
}

absl::Status NodeExecution::NamingThisRank(absl::Status status) const {
  return absl::Status(status.code(),
                      absl::StrCat("rank ", transport_.rank(), ": ", status.message()));
}

absl::Status NodeExecution::Gather() {
  NodeSegment& segment = engine_.segment();
  const size_t element_bytes = call_.element_bytes, block = bytes();
  const char* send = static_cast<const char*>(call_.send);
  char* recv = static_cast<char*>(call_.recv);
  const bool root = me() == call_.root;
  const int last = ranks() - 1;
  // Copies this rank's own block where the result wants it (not in place).
  auto own = [&](char* into, const char* from, size_t length) {
    if (into != from) CopyPlainOrStreamed(into, from, length, streams_result_);
  };
  switch (call_.collective) {
    case Collective::kBarrier:
      // Released: rank 0 has every rank's word (kGather) and lets the others go.
      if (ReleasedBarrier()) {
        if (me() == 0) {
          segment.PublishStage(me(), call_.sequence);
        } else {
          awaits_stage_ = true;
        }
      }
      return absl::OkStatus();
    case Collective::kBcast: {
      // A large vector: the root writes the first share of every rank's copy while
      // each reads the rest.
      const size_t share = BcastShare(block);
      if (!root) {
        awaits_stage_ = share > 0;
        return Fetch(call_.root, share, block - share, recv + share);
      }
      // (Small: nothing to announce; every rank knows it from the agreed count.)
      if (share == 0) return absl::OkStatus();
      for (int rank = 0; rank <= last; ++rank) {
        if (rank == me()) continue;
        RETURN_IF_ERROR(WriteDestination(rank, 0, block, recv, share));
      }
      segment.PublishStage(me(), call_.sequence);
      return absl::OkStatus();
    }
    case Collective::kReduce:
    case Collective::kAllreduce: {
      const bool everywhere = call_.collective == Collective::kAllreduce;
      if (!partitioned_) {
        return everywhere || root ? ReduceFrom(0, last, 0, call_.count, Output())
                                  : absl::OkStatus();
      }
      // Each rank its block. Allreduce: then each reads the others' blocks from them.
      // Reduce: a leaf writes its block into the root's buffer a chunk at a time as it
      // reduces it (the chunk still in cache), and the root waits for those writes.
      const auto [first, length] = Block(me());
      if (partitioned_in_slots_) {
        // From the slots into its own slot's block, which it alone read; the others
        // (Allreduce) or the root (Reduce) copy it from there (kStage).
        char* reduced = engine_.segment().Slot(me(), call_.sequence) + first * element_bytes;
        RETURN_IF_ERROR(ReduceFrom(0, last, first * element_bytes, length, reduced));
        if (everywhere || root) {
          if (length > 0)
            std::memcpy(recv + first * element_bytes, reduced, length * element_bytes);
          awaits_stage_ = true;
        }
        segment.PublishStage(me(), call_.sequence);
        return absl::OkStatus();
      }
      exposed_ = true;
      if (everywhere || root) {
        RETURN_IF_ERROR(
            ReduceFrom(0, last, first * element_bytes, length, recv + first * element_bytes));
        if (result_in_slot_) {
          // (At the slot's start: ReadStage.)
          if (length > 0) {
            std::memcpy(segment.Slot(me(), call_.sequence), recv + first * element_bytes,
                        length * element_bytes);
          }
        } else {
          segment.SetResultAddress(me(), call_.sequence, recv, FindSharedBuffer(recv, bytes()));
        }
        segment.PublishStage(me(), call_.sequence);
        awaits_stage_ = true;
        return absl::OkStatus();
      }
      const size_t chunk = std::max<size_t>(1, kReduceChunkBytes / element_bytes);
      result_.resize(std::min(chunk, length) * element_bytes);
      for (size_t done = 0; done < length; done += chunk) {
        const size_t part = std::min(chunk, length - done);
        const size_t at = (first + done) * element_bytes;
        RETURN_IF_ERROR(ReduceFrom(0, last, at, part, result_.data()));
        RETURN_IF_ERROR(
            WriteDestination(call_.root, 0, bytes(), result_.data(), part * element_bytes, at));
      }
      segment.PublishStage(me(), call_.sequence);
      return absl::OkStatus();
    }
    case Collective::kReduceScatterBlock:
      return ReduceFrom(0, last, me() * block, call_.count, Output());
    case Collective::kReduceScatter: {
      absl::Span<const size_t> counts = vectors_[0];
      return ReduceFrom(0, last, SumOf(counts.subspan(0, me())) * element_bytes, counts[me()],
                        Output());
    }
    case Collective::kScan:
      return ReduceFrom(0, me(), 0, call_.count, Output());
    case Collective::kExscan: {
      // Rank 1's result is rank 0's vector: from the cooperative size the two copy it
      // together, rank 0 writing the first share (it has nothing else to do), rank 1
      // reading the rest (2 ranks, 1 MiB: 1.12-1.27x Open MPI's time with rank 1
      // copying alone).
      const size_t share = ExscanShare();
      if (me() == 0) {
        if (share == 0) return absl::OkStatus();
        RETURN_IF_ERROR(WriteDestination(1, 0, block, call_.in_place ? recv : send, share));
        segment.PublishStage(me(), call_.sequence);
        return absl::OkStatus();
      }
      if (me() == 1) {
        // Straight from where rank 0 published it (its slot, or its own buffer) into
        // the result: one copy.
        awaits_stage_ = share > 0;
        return Fetch(0, share, block - share, Output() + share);
      }
      return ReduceFrom(0, me() - 1, 0, call_.count, Output());
    }
    case Collective::kScatter:
    case Collective::kScatterv: {
      // Each leaf reads its whole block while the root copies its own (Cooperates).
      const bool vectored = call_.collective == Collective::kScatterv;
      if (root) {
        if (call_.in_place) return absl::OkStatus();
        // (Scatterv: its own count in the vector, as the root sends it.)
        const size_t length = vectored ? vectors_[0][me()] * element_bytes : block;
        own(recv, send + (vectored ? vectors_[1][me()] * element_bytes : me() * block), length);
        return absl::OkStatus();
      }
      if (!vectored) return Fetch(call_.root, ScatterBlockOffset(), block, recv);
      const BlockEntry entry = PublishedBlock(call_.root, me());
      if (entry.length != block) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", transport_.rank(), ": ", call_.name, ": the root (rank ",
                         call_.root, ") sends this rank ", entry.length / element_bytes,
                         " elements but recv_count is ", call_.count));
      }
      return Fetch(call_.root, entry.offset, block, recv);
    }
    case Collective::kGather:
    case Collective::kGatherv:
    case Collective::kAllgather:
    case Collective::kAllgatherv: {
      const bool vectored =
          call_.collective == Collective::kGatherv || call_.collective == Collective::kAllgatherv;
      const bool gather =
          call_.collective == Collective::kGather || call_.collective == Collective::kGatherv;
      if (!root && gather) {
        // A large block: this rank writes it into the root's buffer while the root
        // copies its own (Cooperates).
        // (The root waits for this only from ranks whose blocks it knows are large.)
        if (Cooperates(block)) {
          RETURN_IF_ERROR(
              WriteDestination(call_.root, BlockOffset(call_.root, me()), block, send, block));
          segment.PublishStage(me(), call_.sequence);
        }
        return absl::OkStatus();
      }
      for (int rank = 0; rank <= last; ++rank) {
        const size_t length = vectored ? vectors_[0][rank] * element_bytes : block;
        char* into = recv + (vectored ? vectors_[1][rank] * element_bytes : rank * block);
        if (rank == me()) {
          if (!call_.in_place) own(into, send, length);
          continue;
        }
        if (segment.extent(rank, call_.sequence) != length) {
          return absl::InvalidArgumentError(absl::StrCat(
              "rank ", transport_.rank(), ": ", call_.name, ": rank ", rank, " sent ",
              segment.extent(rank, call_.sequence) / element_bytes, " elements but this rank ",
              "expects ", length / element_bytes, " from it"));
        }
        if (gather && Cooperates(length)) {
          awaits_stage_ = true;  // (it writes its block here)
          continue;
        }
        RETURN_IF_ERROR(Fetch(rank, 0, length, into));
      }
      return absl::OkStatus();
    }
    case Collective::kAlltoall: {
      const char* input = call_.in_place ? recv : send;
      for (int rank = 0; rank <= last; ++rank) {
        if (rank == me()) {
          if (!call_.in_place || deferred_)
            own(Output() + me() * block, input + me() * block, block);
          continue;
        }
        RETURN_IF_ERROR(Fetch(rank, me() * block, block, Output() + rank * block));
      }
      return absl::OkStatus();
    }
    case Collective::kAlltoallv: {
      const char* input = call_.in_place ? recv : send;
      absl::Span<const size_t> send_displs = vectors_[1], recv_counts = vectors_[2],
                               recv_displs = vectors_[3];
      for (int rank = 0; rank <= last; ++rank) {
        const size_t length = recv_counts[rank] * element_bytes;
        char* into = Output() + recv_displs[rank] * element_bytes;
        if (rank == me()) {
          if (!call_.in_place || deferred_)
            own(into, input + send_displs[me()] * element_bytes, length);
          continue;
        }
        const BlockEntry entry = PublishedBlock(rank, me());
        if (entry.length != length) {
          return absl::InvalidArgumentError(
              absl::StrCat("rank ", transport_.rank(), ": ", call_.name, ": rank ", rank,
                           " sends this rank ", entry.length / element_bytes,
                           " elements but recv_counts[", rank, "] is ", recv_counts[rank]));
        }
        RETURN_IF_ERROR(Fetch(rank, entry.offset, length, into));
      }
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status NodeExecution::ReadStage(int rank) {
  const auto [first, length] = Block(rank);
  const size_t element_bytes = call_.element_bytes;
  if (length == 0) return absl::OkStatus();
  NodeSegment& segment = engine_.segment();
  char* into = static_cast<char*>(call_.recv) + first * element_bytes;
  if (partitioned_in_slots_ || result_in_slot_) {
    const size_t at = partitioned_in_slots_ ? first * element_bytes : 0;
    std::memcpy(into, segment.Slot(rank, call_.sequence) + at, length * element_bytes);
    return absl::OkStatus();
  }
  const uint64_t address = segment.result_address(rank, call_.sequence) + first * element_bytes;
  return ReadPeer(rank, NodeSegment::Exposed::kResult, address, length * element_bytes, into);
}

Transport::PollResult NodeExecution::Advance() {
  if (finished_) return Transport::PollResult::kDone;
  engine_.AdvanceOlder(this);
  const Transport::PollResult result = Step();
  // (Where ranks share cores, whose waits give the core up: where they spin, the look
  // would take the lines the peers are about to publish in from under them, and the
  // publication fetches them ahead instead.)
  if (result == Transport::PollResult::kIdle &&
      ABSL_PREDICT_FALSE(engine_.eager_call(call_.sequence - 1).pending) &&
      engine_.oversubscribed()) {
    return CompareEagerCallWhileWaiting();
  }
  return result;
}

Transport::PollResult NodeExecution::Step() {
  if (finished_) return Transport::PollResult::kDone;
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  Transport::PollResult result = Transport::PollResult::kIdle;
  auto fail = [this](absl::Status status) {
    Fail(std::move(status));
    return Transport::PollResult::kDone;
  };
  // A rank this call waits for that has left it unfinished (its communicator destroyed,
  // or its call failed) will never get there: the call fails at once, naming it. (One
  // that finished the call and then left, as an eager Bcast's root may at once, has
  // published what this rank waits for: it is there at the next poll.)
  auto waiting = [&](int rank) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    // Looked at every 16th idle poll: the mark is in another line of the segment, and
    // a peer that left is found a few polls later all the same.
    if (ABSL_PREDICT_TRUE((++idle_polls_ & 15) != 0) || !segment.LeftUnfinished(rank, sequence)) {
      return result;
    }
    return fail(LeftTheCall(rank));
  };
  // `rank`'s word of this call: nothing when it published it and agrees (what it had
  // consumed learned), else what to return (waiting, or the disagreement's failure).
  auto check_word = [&](int rank)
                        ABSL_ATTRIBUTE_ALWAYS_INLINE -> std::optional<Transport::PollResult> {
    if (!SequenceReached(segment.published(rank, sequence), sequence)) return waiting(rank);
    if (const uint32_t theirs = segment.check(rank, sequence); theirs != call_.check) {
      return fail(Disagreement(rank, theirs));
    }
    engine_.LearnConsumed(rank, segment.consumed_when_published(rank, sequence));
    return std::nullopt;
  };
  if (phase_ == Phase::kPublish) {
    // This rank's check word and slot of the call's parity were last read in
    // sequence - 2 (a rank that contributes nothing still publishes its word).
    for (; next_peer_ < ranks(); ++next_peer_) {
      if (!engine_.ConsumedReached(next_peer_, sequence - 2)) return waiting(next_peer_);
    }
    if (absl::Status status = VerifyEagerCall(); !status.ok()) return fail(std::move(status));
    if (absl::Status status = Publish(); !status.ok()) return fail(std::move(status));
    segment.SetCheck(me(), sequence, call_.check);
    segment.Publish(me(), sequence);
    result = Transport::PollResult::kAdvanced;
    phase_ = Phase::kGather;
    // (An eager rank waits for no word: Gather does its own part alone, a Scatter
    // root's own block.)
    if (chained_) {
      // A chain's rank needs its predecessor alone to start; it checks the others'
      // words once its chunks are made (kChain), before it returns.
      read_first_ = std::max(0, me() - 1);
      read_last_ = me();
    } else {
      ChooseReads(MayDeferChecks());
    }
    next_peer_ = read_first_;
  }
  if (phase_ == Phase::kGather) {
    // Beyond kEagerBytes every rank's word, even where this rank needs no data of it
    // (a Bcast's root, a Reduce's leaf): so that ranks that disagree (on the root,
    // say) all find out in the call, and none returns before every rank has entered
    // it. Within it (and on an oversubscribed node while the call is a copy in the
    // slots, a Bcast through them too: MayDeferChecks) the words of the ranks it reads
    // (ChooseReads); VerifyEagerCall compares the others' later.
    for (; next_peer_ <= read_last_; ++next_peer_) {
      if (std::optional<Transport::PollResult> stop = check_word(next_peer_)) return *stop;
    }
    next_peer_ = 0;
    result = Transport::PollResult::kAdvanced;
    if (chained_) {
      phase_ = Phase::kChain;  // (its reading, below)
    } else if (through_slots_) {
      phase_ = Phase::kPieces;
    } else {
      // (An Allreduce within a slot, the commonest small call, skips Gather's dispatch.)
      absl::Status status = call_.collective == Collective::kAllreduce && !partitioned_
                                ? ReduceFrom(0, ranks() - 1, 0, call_.count, Output())
                                : Gather();
      if (!status.ok()) return fail(std::move(status));
      phase_ = awaits_stage_ ? Phase::kStage : Phase::kDrain;
    }
  }
  if (phase_ == Phase::kStage) {
    // The ranks whose second publication this rank needs: the other blocks of a
    // partitioned reduction, read as each is ready, or the end of a peer's writes into
    // this rank's buffer.
    for (; next_peer_ < ranks(); ++next_peer_) {
      if (!AwaitsStageOf(next_peer_)) continue;
      if (!SequenceReached(segment.stage(next_peer_), sequence)) return waiting(next_peer_);
      if (partitioned_ && (call_.collective == Collective::kAllreduce || partitioned_in_slots_)) {
        if (absl::Status status = ReadStage(next_peer_); !status.ok()) {
          return fail(std::move(status));
        }
      }
      result = Transport::PollResult::kAdvanced;
    }
    next_peer_ = 0;
    phase_ = Phase::kDrain;
  }
  if (phase_ == Phase::kChain) {
    // Each chunk once the predecessor has made it; the successor told of each. (Rank 0
    // reads nothing, and its publication, its vector, is there from the start.)
    const uint32_t chunks = ChainChunks();
    const bool first = me() == 0, last = me() == ranks() - 1;
    if (me() <= 1) chain_available_ = chunks;
    while (chain_made_ < chunks) {
      if (chain_available_ <= chain_made_) {
        chain_available_ = segment.progress(me() - 1, sequence);
        if (chain_available_ <= chain_made_) return waiting(me() - 1);
      }
      if (absl::Status status = ChainChunk(chain_made_); !status.ok()) {
        return fail(std::move(status));
      }
      ++chain_made_;
      if (!first && !last) segment.PublishProgress(me(), sequence, chain_made_, me() + 1);
      result = Transport::PollResult::kAdvanced;
    }
    // The words kGather did not wait for.
    for (; next_peer_ < ranks(); ++next_peer_) {
      if (next_peer_ >= read_first_ && next_peer_ <= read_last_) continue;
      if (std::optional<Transport::PollResult> stop = check_word(next_peer_)) return *stop;
    }
    next_peer_ = 0;
    phase_ = Phase::kDrain;
  }
  if (phase_ == Phase::kPieces) {
    // A leaf waits for the root's next piece. The root, before its first piece into a
    // slot beyond its own, chooses the leaf whose slot it is, among those it sees in
    // this call (their words published and agreeing): such a rank writes nothing into
    // its slot in it, where one in a call of other arguments may write its own
    // publication there, which the leaves would take for the root's. The first leaf
    // there, not a given one, so that the root seldom waits for a rank to get a core.
    // Beyond the slots' capacity, before it reuses a piece's place, it waits until
    // every leaf has copied what was there (their words seen first, so that their
    // progress is this call's). (One that copied pieces before it waited advanced, so
    // that its wait starts over from spinning.)
    const uint32_t done_before = pieces_done_;
    for (PiecesState state; (state = MovePieces()) != PiecesState::kDone;) {
      if (pieces_done_ != done_before) result = Transport::PollResult::kAdvanced;
      if (state == PiecesState::kAwaitRoot) return waiting(call_.root);
      if (state == PiecesState::kAwaitLeaves) {
        for (; next_peer_ < ranks(); ++next_peer_) {
          if (next_peer_ == me()) continue;
          if (std::optional<Transport::PollResult> stop = check_word(next_peer_)) return *stop;
        }
        uint32_t fewest = SlotPieces();
        int slowest = call_.root;
        for (int rank = 0; rank < ranks(); ++rank) {
          if (rank == me()) continue;
          if (const uint32_t theirs = segment.progress(rank, sequence); theirs < fewest) {
            fewest = theirs;
            slowest = rank;
          }
        }
        pieces_freed_ = fewest + RingPieces();
        if (pieces_freed_ <= pieces_done_) return waiting(slowest);
        continue;
      }
      uint16_t* holders = SlotHolders();
      int late = -1, chosen = -1;
      for (int step = 1; step < ranks() && chosen < 0; ++step) {
        const int rank = (call_.root + step) % ranks();
        if (std::find(holders + 1, holders + slots_held_, rank) != holders + slots_held_) continue;
        if (!SequenceReached(segment.published(rank, sequence), sequence)) {
          if (late < 0) late = rank;
          continue;
        }
        // (Published: its word agrees, or the call fails.)
        if (std::optional<Transport::PollResult> stop = check_word(rank)) return *stop;
        chosen = rank;
      }
      // (A leaf is left for every slot: BcastThroughSlots.)
      if (chosen < 0) return waiting(late);
      holders[slots_held_++] = static_cast<uint16_t>(chosen);
    }
    next_peer_ = 0;
    result = Transport::PollResult::kAdvanced;
    phase_ = Phase::kDrain;
  }
  // kDrain: everything this rank reads is read. Its calls say so in order (a peer
  // that sees `consumed` reach s takes every call up to s as read): an older call
  // still waiting for its peers holds the newer ones back.
  if (!consumed_) {
    if (segment.consumed(me()) != sequence - 1) return result;
    // A peer that left the call unfinished after publishing (its job failed, or its
    // caller's deadline passed: its caller got an error) fails it here too, so that no
    // rank reports success for a call another reported failed; one that finished it
    // (said it read it) and then left, destroying its communicator, does not. (Small
    // calls leave the marks' lines unwritten: they stay in this core's cache.)
    if (segment.anyone_left()) {
      for (int rank = 0; rank < ranks(); ++rank) {
        if (rank != me() && segment.LeftUnfinished(rank, sequence)) return fail(LeftTheCall(rank));
      }
    }
    segment.Consume(me(), sequence);
    consumed_ = true;
  }
  if (!exposed_) {
    End();
    return Transport::PollResult::kDone;
  }
  // Peers read this rank's memory: its caller may not reuse it before they are done.
  // (A chain's rank is read by its successor alone: it need not wait for the chain's
  // end, as a pipeline's stage hands on and goes.)
  for (; next_peer_ < ranks(); ++next_peer_) {
    if (chained_ && next_peer_ != me() + 1) continue;
    if (!SequenceReached(segment.consumed(next_peer_), sequence)) return waiting(next_peer_);
  }
  if (deferred_) {
    char* recv = static_cast<char*>(call_.recv);
    for (const auto& [offset, length] : ranges_) {
      if (length > 0) std::memcpy(recv + offset, deferred_result_->data() + offset, length);
    }
  }
  End();
  return Transport::PollResult::kDone;
}

namespace {

// Polls of the segment a blocking call makes before it waits as other waits do (which
// also progress the job's transport and read the clock): about 2-5 us of an idle
// poll, within which a small call's peers usually publish.
constexpr int kQuickPolls = 128;

// At most this many bytes of a slot publication are fetched ahead (SlotReadAhead):
// lines fetched while the writer still copies into them are taken from it, and each
// one it must take back costs it a trip (2 ranks, a 512 B Bcast fetched whole: 1.3-2.0x
// the time).
constexpr size_t kBytesFetchedAhead = 128;

// Asks for the `bytes` from `from` on, a line at a time, without waiting for them.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void FetchAhead(const char* from, size_t bytes) {
  for (size_t at = 0; at < bytes; at += NodeSegment::kSlotAlignment) __builtin_prefetch(from + at);
}

}  // namespace

ABSL_ATTRIBUTE_ALWAYS_INLINE inline NodeExecution::SlotSpan NodeExecution::SlotReadAhead() const {
  switch (call_.collective) {
    // A peer's whole vector from the start of its slot (TableBytes is 0 for these), once
    // it outgrows the control line: a Bcast's leaves, the reductions. (Where ExposeCopy
    // puts it and InSegment finds it.)
    case Collective::kBcast:
    case Collective::kReduce:
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan:
      if (bytes() <= NodeSegment::kInlineBytes) return {};
      return {0, std::min(bytes(), kBytesFetchedAhead)};
    // A Scatter leaf's block of the root's slot, once the leaves' blocks outgrow its
    // control line (PublishSmallBlocks: a copy, so ScatterBlockOffset's).
    case Collective::kScatter:
      if (me() == call_.root ||
          static_cast<size_t>(ranks() - 1) * bytes() <= NodeSegment::kInlineBytes) {
        return {};
      }
      return {PlaceAmongLeaves() * bytes(), std::min(bytes(), kBytesFetchedAhead)};
    // A Scatterv leaf's block of the root's slot (ExposeBlocks: the leaves' blocks in
    // rank order after the table's place). A leaf knows its own count alone, so the
    // place is a guess that every rank's count is its own, the common case: a wrong one
    // fetches lines this rank does not copy, and changes nothing it reads.
    case Collective::kScatterv: {
      const size_t leaves = static_cast<size_t>(ranks() - 1);
      if (me() == call_.root ||
          (leaves + 1) * kInlinePairBytes + leaves * bytes() <= NodeSegment::kInlineBytes) {
        return {};
      }
      return {TableBytes() + PlaceAmongLeaves() * bytes(), std::min(bytes(), kBytesFetchedAhead)};
    }
    // A Gather root's blocks of the leaves' slots (after the table's place).
    case Collective::kGather:
      if (me() != call_.root || bytes() <= NodeSegment::kInlineBytes) return {};
      return {TableBytes(), std::min(bytes(), kBytesFetchedAhead)};
    default:
      return {};
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline Transport::PollResult NodeExecution::RunSmall(int& polls) {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  const int self = me(), last = ranks() - 1;
  // An eager call two calls back is compared below (VerifyEagerCall), before this
  // rank publishes: its peers' lines are asked for now, so that their trip overlaps the
  // waits and the copy before it rather than holding back the publication (2 ranks,
  // 8-128 B, rooted calls, scan and exscan 0.81-1.05x the time). Only where ranks
  // spin, as the fetch ahead.
  if (ABSL_PREDICT_FALSE(engine_.eager_call(sequence).pending) && !engine_.oversubscribed()) {
    for (int rank = 0; rank <= last; ++rank) {
      if (rank != self) segment.FetchCheck(rank, sequence - 2);
    }
  }
  // kPublish: every rank read the call before last (known from its publications, as
  // a rule), so this rank's payload of the call's parity is free.
  for (int rank = 0; rank <= last; ++rank) {
    if (!engine_.ConsumedReached(rank, sequence - 2)) return Step();
  }
  const bool root = self == call_.root;
  const void* data = nullptr;
  size_t length = 0;
  bool moves_blocks = false;  // a Scatter(v) or Gather(v)
  switch (call_.collective) {
    case Collective::kAllreduce:
    case Collective::kReduce:
    case Collective::kScan:
    case Collective::kExscan:
      data = call_.in_place ? call_.recv : call_.send;
      length = bytes();
      break;
    case Collective::kBcast:
      if (root) {
        data = call_.recv;
        length = bytes();
      }
      break;
    case Collective::kBarrier:
      break;
    case Collective::kScatter:
    case Collective::kScatterv:
    case Collective::kGather:
    case Collective::kGatherv:
      moves_blocks = true;
      break;
    default:  // (none: Restart sets small_ for the collectives above alone)
      return Step();
  }
  if (moves_blocks) {
    if (absl::Status status = PublishSmallBlocks(); !status.ok()) {
      Fail(std::move(status));
      return Transport::PollResult::kDone;
    }
  } else {
    // (The destinations Publish also exposes serve only large calls. These collectives
    // publish no table, and kSlotBytes >= kEagerBytes.)
    ExposeCopy(data, length);
  }
  // An eager call two calls back is compared only now, after this call's contribution
  // is written (unseen until it is published below): the comparison's loads of the
  // peers' lines, which usually miss, then overlap the writes' taking of this rank's
  // own lines (2 ranks, 8-512 B eager calls: 0.73-0.99x the time of comparing first).
  if (ABSL_PREDICT_FALSE(engine_.eager_call(sequence).pending)) {
    if (absl::Status status = VerifyEagerCall(); !status.ok()) {
      Fail(std::move(status));
      return Transport::PollResult::kDone;
    }
  }
  segment.SetCheck(self, sequence, call_.check);
  // With full fences, quietly: the exchange's wait for the line overlaps the look at
  // the peers and the copy that follow, and the Consume at the end (or the first wait)
  // pays the look at the sleepers. (4 ranks on 2 cores under full fences, with the
  // comparison while waiting, against the build before, medians of 15 alternating
  // runs: bcast, scatter and scatterv 8-512 B 0.82-1.03x the time, 0.89 their median.)
  if (segment.uses_asymmetric_fences()) {
    segment.Publish(self, sequence);
  } else {
    segment.PublishQuietly(self, sequence);
    wake_owed_ = true;
  }
  // RunSmall's calls are copies: nothing lent or deferred, so an eager rank's role is
  // enough to say so (as ChooseReads would).
  if (small_reads_.needs_nothing) {
    // A Scan's rank 0 returns its own vector.
    if (call_.collective == Collective::kScan && !call_.in_place && length > 0) {
      std::memcpy(call_.recv, data, length);
    }
    // A Scatter's root copies its own block (a Gather's leaf has nothing to do).
    if (moves_blocks && !ReadSmallBlocks()) {
      if (absl::Status status = Gather(); !status.ok()) {
        Fail(std::move(status));
        return Transport::PollResult::kDone;
      }
    }
    RememberEagerCall();
    phase_ = Phase::kDrain;
    return RunSmallDrain();
  }
  // The ranks whose words kGather waits for, the others' to compare two calls later
  // (ChooseReads(true), as Decide made it).
  read_first_ = small_reads_.first;
  read_last_ = small_reads_.last;
  if (small_reads_.leaves_others_out) {
    RememberEagerCall();
  }
  phase_ = Phase::kGather;
  const bool spin = !engine_.oversubscribed();
  // The first lines of a slot publication this rank copies whole are fetched with each
  // look at its word, so that the copy after it finds them: one cache line's trip for
  // the word and the data together rather than one and then the other. Only where
  // ranks spin (with ranks sharing cores: 4 ranks on 2, a 128 B Bcast 1.16x the time).
  const SlotSpan ahead = small_reads_.ahead;
  // (A local counter: next_peer_, where Step takes over, is written only then.)
  for (int rank = read_first_; rank <= read_last_; ++rank) {
    const char* slot = ahead.bytes > 0 ? segment.Slot(rank, sequence) + ahead.offset : nullptr;
    FetchAhead(slot, ahead.bytes);
    while (!SequenceReached(segment.published(rank, sequence), sequence)) {
      PayOwedWake();
      if (!spin || polls >= kQuickPolls) {
        next_peer_ = rank;
        return Step();
      }
      ++polls;
      FetchAhead(slot, ahead.bytes);
      PauseWhileSpinning();
    }
    if (segment.check(rank, sequence) != call_.check) {
      PayOwedWake();
      next_peer_ = rank;
      return Step();
    }
    engine_.LearnConsumed(rank, segment.consumed_when_published(rank, sequence));
  }
  // What Gather reads of small calls, without its general dispatch: everything lies in
  // the control lines or the slots.
  char* recv = static_cast<char*>(call_.recv);
  int reduce_last = -1;  // a reduction of ranks 0..reduce_last into recv
  switch (call_.collective) {
    case Collective::kAllreduce:
      reduce_last = last;
      break;
    case Collective::kReduce:
      if (root) reduce_last = last;
      break;
    case Collective::kBcast:
      if (!root && bytes() > 0) {
        std::memcpy(recv, InSegment(call_.root, 0), bytes());
      }
      break;
    case Collective::kScan:
      reduce_last = self;
      break;
    case Collective::kExscan:
      reduce_last = self - 1;
      break;
    case Collective::kBarrier:
      break;
    case Collective::kScatter:
    case Collective::kScatterv:
    case Collective::kGather:
    case Collective::kGatherv:
      if (ReadSmallBlocks()) break;
      [[fallthrough]];  // (a disagreement: Gather's checks name it)
    default:
      if (absl::Status status = Gather(); !status.ok()) {
        Fail(std::move(status));
        return Transport::PollResult::kDone;
      }
      break;
  }
  if (reduce_last >= 0) {
    if (absl::Status status = ReduceFrom(0, reduce_last, 0, call_.count, recv); !status.ok()) {
      Fail(std::move(status));
      return Transport::PollResult::kDone;
    }
  }
  next_peer_ = 0;
  phase_ = Phase::kDrain;
  return RunSmallDrain();
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline Transport::PollResult NodeExecution::RunSmallDrain() {
  NodeSegment& segment = engine_.segment();
  const uint32_t sequence = call_.sequence;
  // kDrain: this rank read everything; said in order, with no peer gone. (Step may
  // wait: a quiet publication's look is paid first.)
  if (segment.consumed(me()) != sequence - 1) {
    PayOwedWake();
    return Step();
  }
  if (ABSL_PREDICT_FALSE(segment.anyone_left())) {
    for (int rank = 0; rank < ranks(); ++rank) {
      if (rank != me() && segment.left(rank)) {
        PayOwedWake();
        return Step();
      }
    }
  }
  if (wake_owed_) {
    segment.ConsumeAfterQuietPublication(me(), sequence);
    wake_owed_ = false;
  } else {
    segment.Consume(me(), sequence);
  }
  consumed_ = true;
  End();
  return Transport::PollResult::kDone;
}

absl::Status NodeExecution::RunToEnd(Transport& transport, absl::FunctionRef<absl::Time()> deadline,
                                     bool decided) {
  Start(decided);
  int polls = 0;
  Transport::PollResult result = small_ ? RunSmall(polls) : Step();
  // When ranks outnumber cores the peer may need this core: no spinning then.
  if (!engine_.oversubscribed()) {
    for (; result != Transport::PollResult::kDone && polls < kQuickPolls; ++polls) {
      PauseWhileSpinning();
      result = Step();
    }
  }
  if (result == Transport::PollResult::kDone) return absl::OkStatus();
  return WaitFor(
      transport, [this] { return Advance(); }, deadline(),
      [](absl::Time) { return Transport::PollResult::kIdle; });
}

std::vector<int> NodeExecution::PendingPeers() const {
  std::vector<int> peers;
  if (finished_) return peers;
  NodeSegment& segment = engine_.segment();
  for (int rank = 0; rank < ranks(); ++rank) {
    bool waiting = false;
    switch (phase_) {
      case Phase::kPublish:
        waiting = !SequenceReached(segment.consumed(rank), call_.sequence - 2);
        break;
      case Phase::kGather:
        waiting = rank >= read_first_ && rank <= read_last_ &&
                  !SequenceReached(segment.published(rank, call_.sequence), call_.sequence);
        break;
      case Phase::kStage:
        waiting = rank != me() && !SequenceReached(segment.stage(rank), call_.sequence);
        break;
      case Phase::kChain:
        waiting = chain_made_ < ChainChunks()
                      ? rank == me() - 1 && rank > 0 &&
                            segment.progress(rank, call_.sequence) <= chain_made_
                      : !SequenceReached(segment.published(rank, call_.sequence), call_.sequence);
        break;
      case Phase::kPieces:
        // (A leaf: the root's next piece; the root: the leaves not seen in the call, or,
        // reusing the slots, those behind.)
        waiting =
            me() != call_.root
                ? rank == call_.root && segment.progress(rank, call_.sequence) <= pieces_done_
                : rank != me() &&
                      (!SequenceReached(segment.published(rank, call_.sequence), call_.sequence) ||
                       (pieces_done_ >= RingPieces() &&
                        segment.progress(rank, call_.sequence) + RingPieces() <= pieces_done_));
        break;
      case Phase::kDrain:
        waiting = (!chained_ || !consumed_ || rank == me() + 1) &&
                  !SequenceReached(segment.consumed(rank), call_.sequence);
        break;
    }
    if (waiting) peers.push_back(rank);
  }
  return peers;
}

absl::Status NodeExecution::WaitFor(Transport& transport,
                                    absl::FunctionRef<Transport::PollResult()> poll,
                                    absl::Time deadline,
                                    absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
  return transport.WaitFor(poll, deadline, on_clock, [this](absl::Duration timeout) {
    NodeSegment& segment = engine_.segment();
    // Announced before looking once more: a rank that publishes after the look rings.
    const uint32_t doorbell = segment.BeginSleep(me());
    // (This poll, and the one after the sleep, look for peers that left.)
    idle_polls_ = 15;
    if (Advance() == Transport::PollResult::kIdle) segment.Sleep(me(), doorbell, timeout);
    idle_polls_ = 15;
    segment.EndSleep(me());
  });
}

}  // namespace zcoll
