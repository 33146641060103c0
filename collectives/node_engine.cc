#include "collectives/node_engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "collectives/communicator_transport.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "ops/reduce.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

// What the node's leader sends its ranks (the segment's name, or why there is none)
// and what they answer (whether they mapped it, or why not).
struct SetupRecord {
  uint32_t ok;
  char text[252];
};

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

bool NodeEngineRuns(Collective collective) {
  switch (collective) {
    case Collective::kBarrier:
    case Collective::kBcast:
    case Collective::kReduce:
    case Collective::kAllreduce:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::unique_ptr<NodeEngine>> NodeEngine::Create(CommunicatorTransport& transport,
                                                               const Topology& topology,
                                                               absl::Time deadline,
                                                               uint32_t first_sequence) {
  const int size = transport.size(), rank = transport.rank();
  if (size < 2 || topology.num_nodes() != 1 || EnvironmentUnsigned("ZCOLL_NODE_ENGINE") == 0) {
    return nullptr;
  }
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
    for (int peer = 1; peer < size && why.empty(); ++peer) {
      if (state->answers[peer].ok == 1) continue;
      state->answers[peer].text[sizeof(state->answers[peer].text) - 1] = '\0';
      why = absl::StrCat("rank ", peer, ": ", state->answers[peer].text);
    }
    if (!segment.has_value()) {
      ZCOLL_LOG(WARNING) << "rank 0: this communicator's ranks run their collectives by "
                         << "messages: its node segment could not be made (" << why << ")";
      return nullptr;
    }
    // Every rank that will ever map it has: the name can go.
    segment->Unlink();
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
    absl::StatusOr<NodeSegment> opened = NodeSegment::Open(state->offer.text, size, kSlotBytes);
    answer.ok = opened.ok() ? 1 : 0;
    if (opened.ok()) {
      segment.emplace(std::move(*opened));
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

void NodeEngine::Ended(NodeExecution* execution) {
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

NodeExecution::~NodeExecution() {
  if (!finished_) engine_.Ended(this);
}

void NodeExecution::Restart(const Call& call) {
  call_ = call;
  phase_ = Phase::kPublish;
  next_peer_ = 0;
  finished_ = false;
  status_ = absl::OkStatus();
  engine_.Started(this);
}

void NodeExecution::End() {
  finished_ = true;
  engine_.Ended(this);
}

bool NodeExecution::Contributes() const {
  switch (call_.collective) {
    case Collective::kBcast:
      return engine_.local_rank() == call_.root;
    case Collective::kReduce:
    case Collective::kAllreduce:
      return true;
    default:
      return false;
  }
}

const char* NodeExecution::Contribution(int rank) const {
  NodeSegment& segment = engine_.segment();
  return bytes() <= NodeSegment::kInlineBytes ? segment.InlinePayload(rank, call_.sequence)
                                              : segment.Slot(rank, call_.sequence);
}

void NodeExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  End();
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

Transport::PollResult NodeExecution::Advance() {
  if (finished_) return Transport::PollResult::kDone;
  engine_.AdvanceOlder(this);
  return Step();
}

Transport::PollResult NodeExecution::Step() {
  if (finished_) return Transport::PollResult::kDone;
  NodeSegment& segment = engine_.segment();
  const int me = engine_.local_rank(), ranks = engine_.local_size();
  const uint32_t sequence = call_.sequence;
  Transport::PollResult result = Transport::PollResult::kIdle;
  if (phase_ == Phase::kPublish) {
    // This rank's check word and buffer of the call's parity were last read in
    // sequence - 2 (a rank that contributes nothing still publishes its word).
    for (; next_peer_ < ranks; ++next_peer_) {
      if (!SequenceReached(segment.consumed(next_peer_), sequence - 2)) return result;
    }
    if (Contributes() && bytes() > 0) {
      const bool from_recv = call_.in_place || call_.collective == Collective::kBcast;
      std::memcpy(const_cast<char*>(Contribution(me)), from_recv ? call_.recv : call_.send,
                  bytes());
    }
    segment.SetCheck(me, sequence, call_.check);
    segment.Publish(me, sequence);
    phase_ = Phase::kGather;
    next_peer_ = 0;
    result = Transport::PollResult::kAdvanced;
  }
  // Every rank's word, even where this rank needs no data of it (a Bcast's root, a
  // Reduce's leaf): so that ranks that disagree (on the root, say) all find out in the
  // call, and none returns before every rank has entered it.
  for (; next_peer_ < ranks; ++next_peer_) {
    if (!SequenceReached(segment.published(next_peer_), sequence)) return result;
    if (const uint32_t theirs = segment.check(next_peer_, sequence); theirs != call_.check) {
      Fail(Disagreement(next_peer_, theirs));
      return Transport::PollResult::kDone;
    }
  }
  absl::Status status = Finish();
  segment.Consume(me, sequence);
  if (!status.ok()) {
    Fail(std::move(status));
  } else {
    End();
  }
  return Transport::PollResult::kDone;
}

absl::Status NodeExecution::Finish() {
  const int me = engine_.local_rank(), ranks = engine_.local_size();
  switch (call_.collective) {
    case Collective::kBcast:
      if (me != call_.root && bytes() > 0) {
        std::memcpy(call_.recv, Contribution(call_.root), bytes());
      }
      return absl::OkStatus();
    case Collective::kReduce:
      if (me != call_.root) return absl::OkStatus();
      [[fallthrough]];
    case Collective::kAllreduce: {
      if (call_.count == 0) return absl::OkStatus();
      // Every rank's contribution, in rank order: the canonical order, and the same
      // sums on every rank.
      absl::InlinedVector<const void*, 16> inputs;
      for (int rank = 0; rank < ranks; ++rank) inputs.push_back(Contribution(rank));
      absl::Status status = ReduceMany(call_.op, call_.type, inputs, call_.recv, call_.count);
      if (!status.ok()) {
        return absl::Status(status.code(),
                            absl::StrCat("rank ", transport_.rank(), ": ", status.message()));
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

std::vector<int> NodeExecution::PendingPeers() const {
  std::vector<int> peers;
  if (finished_) return peers;
  NodeSegment& segment = engine_.segment();
  for (int rank = 0; rank < engine_.local_size(); ++rank) {
    const bool waiting = phase_ == Phase::kPublish
                             ? !SequenceReached(segment.consumed(rank), call_.sequence - 2)
                             : !SequenceReached(segment.published(rank), call_.sequence);
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
    const int me = engine_.local_rank();
    // Announced before looking once more: a rank that publishes after the look rings.
    const uint32_t doorbell = segment.BeginSleep(me);
    if (Advance() == Transport::PollResult::kIdle) segment.Sleep(me, doorbell, timeout);
    segment.EndSleep(me);
  });
}

}  // namespace zcoll
