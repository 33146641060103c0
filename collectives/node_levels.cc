#include "collectives/node_levels.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "collectives/communicator.h"
#include "collectives/communicator_transport.h"
#include "core/logging.h"
#include "core/schedule.h"

namespace zcoll {

void NodeLevelsExecution::Restart(const Call& call, std::vector<NodeLevelsExecution*>& starting,
                                  std::vector<NodeLevelsExecution*>& unfinished) {
  call_ = call;
  // A Reduce's partial result: a leader's of its node, or the root's node's leader's
  // of the other nodes and itself (when it is not the root).
  if (call_.collective == Collective::kReduce && call_.leaders != nullptr && call_.node_root != 0) {
    partial_.resize(call_.count * DataTypeSize(call_.type));
  }
  if (call_.stripe != nullptr) {
    // The segments, and each one's blocks, one per place in a node, as equal as they
    // can be: alike on every rank (count, the node's size and the chunk are).
    const size_t places = static_cast<size_t>(call_.node->size());
    const size_t segments =
        StripeSegments(call_.count, DataTypeSize(call_.type), places, call_.chunk_bytes);
    segments_.resize(segments);
    for (size_t segment = 0; segment < segments; ++segment) {
      StripeSegment& cut = segments_[segment];
      const ElementRange range = EvenBlock(call_.count, segments, segment);
      cut.first = range.offset;
      cut.counts.resize(places);
      cut.displs.resize(places);
      for (size_t place = 0; place < places; ++place) {
        const ElementRange block = EvenBlock(range.count, places, place);
        cut.displs[place] = block.offset;
        cut.counts[place] = block.count;
      }
    }
    node_busy_ = stripe_busy_ = false;
    node_next_ = stripe_next_ = 0;
    stripe_current_ = Request();
  }
  next_ = 0;
  current_ = Request();
  finished_ = false;
  status_ = absl::OkStatus();
  starting_ = &starting;
  starting.push_back(this);
  unfinished_ = &unfinished;
  unfinished.push_back(this);
  if (!First()) return;
  if (call_.stripe != nullptr) {
    PumpStripes();
  } else {
    StartNext();
  }
}

void NodeLevelsExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  Finish();
}

void NodeLevelsExecution::Finish() {
  finished_ = true;
  StopStarting();
  Leave(unfinished_);
}

void NodeLevelsExecution::Leave(std::vector<NodeLevelsExecution*>*& calls) {
  if (calls == nullptr) return;
  calls->erase(std::remove(calls->begin(), calls->end(), this), calls->end());
  calls = nullptr;
}

void NodeLevelsExecution::StopStarting() { Leave(starting_); }

bool NodeLevelsExecution::AdvanceEarlierCalls() {
  while (!First()) {
    NodeLevelsExecution* earlier = starting_->front();
    earlier->Advance();  // it is first: it starts its next step if the last completed
    if (starting_ != nullptr && starting_->front() == earlier) return false;
  }
  return true;
}

std::optional<absl::StatusOr<Request>> NodeLevelsExecution::StartStep(int step) {
  Communicator& node = *call_.node;
  Communicator* leaders = call_.leaders;
  switch (call_.collective) {
    case Collective::kAllreduce:
      // A Reduce to the node's leader (its local rank 0), which gets the node's result
      // in `recv`; an Allreduce among the leaders; a Bcast from the leader.
      if (step == 0) {
        const void* send =
            call_.in_place ? (leaders != nullptr ? kInPlace : call_.recv) : call_.send;
        return node.IReduce(send, leaders != nullptr ? call_.recv : nullptr, call_.count,
                            call_.type, call_.op, 0);
      }
      if (step == 1) {
        if (leaders == nullptr) return std::nullopt;
        return leaders->IAllreduce(kInPlace, call_.recv, call_.count, call_.type, call_.op);
      }
      return node.IBcast(call_.recv, call_.count, call_.type, 0);
    case Collective::kReduce: {
      // Every other node reduces to its leader; the leaders reduce to the root's node's
      // leader, which contributes its own vector there; then the root's node reduces
      // to the root, its leader contributing that partial (commutative ops only: each
      // rank's vector is in exactly one sum, in no particular order).
      const bool root_node = call_.node_root >= 0;
      const bool leader = leaders != nullptr;
      const void* own = call_.in_place ? kInPlace : call_.send;
      if (step == 0) {
        if (root_node) return std::nullopt;
        return node.IReduce(call_.send, leader ? partial_.data() : nullptr, call_.count, call_.type,
                            call_.op, 0);
      }
      if (step == 1) {
        if (!leader) return std::nullopt;
        if (!root_node) {
          return leaders->IReduce(partial_.data(), nullptr, call_.count, call_.type, call_.op,
                                  call_.leader_root);
        }
        if (call_.node_root == 0) {
          return leaders->IReduce(own, call_.recv, call_.count, call_.type, call_.op,
                                  call_.leader_root);
        }
        return leaders->IReduce(call_.send, partial_.data(), call_.count, call_.type, call_.op,
                                call_.leader_root);
      }
      if (!root_node) return std::nullopt;
      const bool root = node.rank() == call_.node_root;
      const void* send = !leader ? own : root ? kInPlace : partial_.data();
      return node.IReduce(send, root ? call_.recv : nullptr, call_.count, call_.type, call_.op,
                          call_.node_root);
    }
    case Collective::kAllgather: {
      const size_t block = call_.count * DataTypeSize(call_.type);
      char* recv = static_cast<char*>(call_.recv);
      const std::vector<std::vector<int>>& members = *call_.members;
      const std::vector<int>& mine = members[static_cast<size_t>(call_.group)];
      const char* own = call_.in_place ? recv + static_cast<size_t>(call_.rank) * block
                                       : static_cast<const char*>(call_.send);
      if (step == 0) {
        if (leaders == nullptr) {
          return node.IGather(own, nullptr, call_.count, call_.type, 0);
        }
        if (call_.in_blocks) {
          // The node's blocks go where they belong in `recv` (the leader's own first).
          return node.IGather(call_.in_place ? kInPlace : own, recv + mine.front() * block,
                              call_.count, call_.type, 0);
        }
        group_blocks_.resize(mine.size() * block);
        return node.IGather(own, group_blocks_.data(), call_.count, call_.type, 0);
      }
      if (step == 1) {
        if (leaders == nullptr) return std::nullopt;
        counts_.clear();
        displs_.clear();
        size_t at = 0;
        for (const std::vector<int>& group : members) {
          counts_.push_back(group.size() * call_.count);
          displs_.push_back(at);
          at += group.size() * call_.count;
        }
        if (call_.in_blocks) {
          return leaders->IAllgatherv(kInPlace, counts_[call_.group], recv, counts_, displs_,
                                      call_.type);
        }
        all_blocks_.resize(at * DataTypeSize(call_.type));
        return leaders->IAllgatherv(group_blocks_.data(), counts_[call_.group], all_blocks_.data(),
                                    counts_, displs_, call_.type);
      }
      if (leaders != nullptr && !call_.in_blocks) {
        // Into rank order.
        const char* from = all_blocks_.data();
        for (const std::vector<int>& group : members) {
          for (int rank : group) {
            std::memcpy(recv + static_cast<size_t>(rank) * block, from, block);
            from += block;
          }
        }
      }
      return node.IBcast(recv, call_.count * static_cast<size_t>(call_.size), call_.type, 0);
    }
    case Collective::kBcast:
      // Within the root's node; among the leaders; within each other node.
      if (step == 0) {
        if (call_.node_root < 0) return std::nullopt;
        return node.IBcast(call_.recv, call_.count, call_.type, call_.node_root);
      }
      if (step == 1) {
        if (leaders == nullptr) return std::nullopt;
        return leaders->IBcast(call_.recv, call_.count, call_.type, call_.leader_root);
      }
      if (call_.node_root >= 0) return std::nullopt;
      return node.IBcast(call_.recv, call_.count, call_.type, 0);
    default:  // kBarrier: within the node; among the leaders; within the node.
      if (step == 1) {
        if (leaders == nullptr) return std::nullopt;
        return leaders->IBarrier();
      }
      return node.IBarrier();
  }
}

absl::StatusOr<Request> NodeLevelsExecution::StartNodeStripeCall(size_t index) {
  Communicator& node = *call_.node;
  const size_t element_bytes = DataTypeSize(call_.type);
  const size_t place = static_cast<size_t>(node.rank());
  const StripeSegment& cut = segments_[index % segments_.size()];
  char* recv = static_cast<char*>(call_.recv) + cut.first * element_bytes;
  if (index >= segments_.size()) {
    return node.IAllgatherv(kInPlace, 0, recv, cut.counts, cut.displs, call_.type);
  }
  // In place the node's Reduce_scatter leaves this rank's block at the start of the
  // segment (moved to its place before the stripe's call); else straight there.
  if (call_.in_place) return node.IReduceScatter(kInPlace, recv, cut.counts, call_.type, call_.op);
  return node.IReduceScatter(static_cast<const char*>(call_.send) + cut.first * element_bytes,
                             recv + cut.displs[place] * element_bytes, cut.counts, call_.type,
                             call_.op);
}

absl::StatusOr<Request> NodeLevelsExecution::StartStripeCall(size_t segment) {
  const size_t element_bytes = DataTypeSize(call_.type);
  const size_t place = static_cast<size_t>(call_.node->rank());
  const StripeSegment& cut = segments_[segment];
  char* recv = static_cast<char*>(call_.recv) + cut.first * element_bytes;
  char* block = recv + cut.displs[place] * element_bytes;
  if (call_.in_place && block != recv) {
    std::memmove(block, recv, cut.counts[place] * element_bytes);
  }
  return call_.stripe->IAllreduce(kInPlace, block, cut.counts[place], call_.type, call_.op);
}

void NodeLevelsExecution::PumpStripes() {
  const size_t segments = segments_.size();
  // Tests a lane's call in flight: whether it has completed (false on a failure, which
  // fails this call).
  auto completed = [this](Request& request, bool& busy, bool& failed) {
    if (!busy) return false;
    // (Of a request already done, as a wait leaves it: its status.)
    absl::StatusOr<bool> done = request.Test();
    if (!done.ok()) {
      Fail(done.status());
      failed = true;
      return false;
    }
    if (!*done) return false;
    busy = false;
    return true;
  };
  auto started = [this](absl::StatusOr<Request> request, Request& lane, bool& busy) {
    if (!request.ok()) {
      Fail(request.status());
      return false;
    }
    lane = std::move(*request);
    busy = true;
    return true;
  };
  for (bool moved = true; moved && !finished_;) {
    bool failed = false;
    moved = completed(current_, node_busy_, failed);
    if (failed) return;
    moved = completed(stripe_current_, stripe_busy_, failed) || moved;
    if (failed) return;
    // What each lane has completed: its calls complete in order (the node's first
    // `segments` are the Reduce_scatters).
    const size_t node_completed = node_next_ - (node_busy_ ? 1 : 0);
    const size_t allreduced = stripe_next_ - (stripe_busy_ ? 1 : 0);
    if (!node_busy_ && node_next_ < 2 * segments &&
        (node_next_ < segments || allreduced > node_next_ - segments)) {
      if (!started(StartNodeStripeCall(node_next_), current_, node_busy_)) return;
      ++node_next_;
      moved = true;
    }
    if (!stripe_busy_ && stripe_next_ < segments && node_completed > stripe_next_) {
      if (!started(StartStripeCall(stripe_next_), stripe_current_, stripe_busy_)) return;
      ++stripe_next_;
      moved = true;
    }
    const bool all_started = node_next_ == 2 * segments && stripe_next_ == segments;
    if (all_started) StopStarting();
    if (all_started && !node_busy_ && !stripe_busy_) Finish();
  }
}

bool NodeLevelsExecution::StartNext() {
  while (next_ < kSteps) {
    std::optional<absl::StatusOr<Request>> started = StartStep(next_++);
    if (!started.has_value()) continue;
    if (!started->ok()) {
      Fail(started->status());
      return false;
    }
    current_ = std::move(**started);
    if (next_ == kSteps) StopStarting();
    return true;
  }
  Finish();
  return true;
}

Transport::PollResult NodeLevelsExecution::Advance() {
  if (!finished_ && !AdvanceEarlierCalls()) return Transport::PollResult::kIdle;
  if (call_.stripe != nullptr) {
    PumpStripes();
    return finished_ ? Transport::PollResult::kDone : Transport::PollResult::kIdle;
  }
  while (!finished_) {
    // (Of a request already done, as another call's wait may leave it: its status.)
    absl::StatusOr<bool> done = current_.Test();
    if (!done.ok()) {
      Fail(done.status());
      break;
    }
    if (!*done) return Transport::PollResult::kIdle;
    if (!StartNext()) break;
  }
  return Transport::PollResult::kDone;
}

absl::Status NodeLevelsExecution::WaitFor(
    Transport& transport, absl::FunctionRef<Transport::PollResult()> poll, absl::Time deadline,
    absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
  // The earlier calls first, each waited for to its end (which starts all its steps).
  while (!finished_ && !First()) {
    NodeLevelsExecution* earlier = starting_->front();
    const absl::Status status = earlier->WaitFor(transport, poll, deadline, on_clock);
    if (absl::IsDeadlineExceeded(status)) return status;
  }
  if (call_.stripe != nullptr) return WaitForStripes(transport, deadline, on_clock);
  while (!finished_) {
    if (!current_.done()) {
      Request* const mine[] = {&current_};
      absl::Status status = WaitForLevelCalls(mine, transport, deadline, on_clock);
      if (absl::IsDeadlineExceeded(status)) return status;
      if (!status.ok()) {
        Fail(status);
        break;
      }
    }
    absl::StatusOr<bool> done = current_.Test();
    if (!done.ok()) {
      Fail(done.status());
      break;
    }
    if (*done && !StartNext()) break;
  }
  return absl::OkStatus();
}

bool NodeLevelsExecution::OthersInFlight() const {
  if (unfinished_ == nullptr) return false;
  for (const NodeLevelsExecution* other : *unfinished_) {
    if (other != this && (!other->current_.done() || !other->stripe_current_.done())) return true;
  }
  return false;
}

void NodeLevelsExecution::AdvanceOthers() {
  if (unfinished_ == nullptr) return;
  for (NodeLevelsExecution* other : *unfinished_) {
    if (other == this) continue;
    for (Request* level_call : {&other->current_, &other->stripe_current_}) {
      // (A failure stays in the request, for its own call to report.)
      if (!level_call->done()) level_call->Test().IgnoreError();
    }
  }
}

absl::Status NodeLevelsExecution::WaitForLevelCalls(
    absl::Span<Request* const> mine, Transport& transport, absl::Time deadline,
    absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
  if (mine.size() == 1 && !OthersInFlight()) {
    // The level call's own waiting (a node call sleeps on its segment), to this call's
    // deadline: past it, the caller's Request reports this call overdue with what its
    // communicator sees (a rank stopped on another node, which the level's communicator
    // does not hold).
    Request::Pending& pending = *mine.front()->pending_;
    CallExecution& level = *pending.execution;
    if (level.finished()) return absl::OkStatus();
    return level.WaitFor(
        *pending.transport, [&level] { return level.Advance(); }, deadline, on_clock);
  }
  // Level calls in flight beside this one's: all of them advance while it waits, since
  // a peer may need this rank's part of any (a node call that lent this rank's buffer
  // ends only once its peers have read it, and they may be waiting for another call
  // of this rank's first).
  return transport.WaitFor(
      [&] {
        for (Request* level_call : mine) {
          absl::StatusOr<bool> done = level_call->Test();
          if (!done.ok() || *done) return Transport::PollResult::kDone;
        }
        AdvanceOthers();
        return Transport::PollResult::kIdle;
      },
      deadline, on_clock);
}

absl::Status NodeLevelsExecution::WaitForStripes(
    Transport& transport, absl::Time deadline,
    absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
  // Until either lane's call completes (PumpStripes notes which), both advancing, since
  // a peer's call in one lane may wait for this rank's in the other.
  for (PumpStripes(); !finished_; PumpStripes()) {
    Request* mine[2];
    size_t lanes = 0;
    if (node_busy_) mine[lanes++] = &current_;
    if (stripe_busy_) mine[lanes++] = &stripe_current_;
    // (PumpStripes starts a call in some lane until all have completed.)
    ZCOLL_CHECK(lanes > 0) << "rank " << call_.rank
                           << ": an Allreduce by stripes has no level call to wait for";
    absl::Status status =
        WaitForLevelCalls(absl::MakeConstSpan(mine, lanes), transport, deadline, on_clock);
    if (absl::IsDeadlineExceeded(status)) return status;
    if (!status.ok()) {
      Fail(status);
      break;
    }
  }
  return absl::OkStatus();
}

NodeLevelsExecution::~NodeLevelsExecution() {
  // A level call left pending by a missed deadline ends at once: the job has failed.
  if (!current_.done()) current_.Wait().IgnoreError();
  if (!stripe_current_.done()) stripe_current_.Wait().IgnoreError();
  Finish();
}

}  // namespace zcoll
