#include "collectives/node_levels.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "collectives/communicator.h"
#include "collectives/communicator_transport.h"

namespace zcoll {

void NodeLevelsExecution::Restart(const Call& call, std::vector<NodeLevelsExecution*>& starting) {
  call_ = call;
  // A Reduce's partial result: a leader's of its node, or the root's node's leader's
  // of the other nodes and itself (when it is not the root).
  if (call_.collective == Collective::kReduce && call_.leaders != nullptr && call_.node_root != 0) {
    partial_.resize(call_.count * DataTypeSize(call_.type));
  }
  if (call_.stripe != nullptr) {
    // The vector's blocks, one per place in a node, as equal as they can be: alike on
    // every rank (count and the node's size are).
    const size_t places = static_cast<size_t>(call_.node->size());
    counts_.assign(places, call_.count / places);
    displs_.resize(places);
    size_t at = 0;
    for (size_t place = 0; place < places; ++place) {
      if (place < call_.count % places) ++counts_[place];
      displs_[place] = at;
      at += counts_[place];
    }
    stripe_displ_bytes_ =
        displs_[static_cast<size_t>(call_.node->rank())] * DataTypeSize(call_.type);
  }
  next_ = 0;
  current_ = Request();
  finished_ = false;
  status_ = absl::OkStatus();
  starting_ = &starting;
  starting.push_back(this);
  if (First()) StartNext();
}

void NodeLevelsExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  finished_ = true;
  StopStarting();
}

void NodeLevelsExecution::StopStarting() {
  if (starting_ == nullptr) return;
  starting_->erase(std::remove(starting_->begin(), starting_->end(), this), starting_->end());
  starting_ = nullptr;
}

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
  if (call_.stripe != nullptr) return StartStripeStep(step);
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

std::optional<absl::StatusOr<Request>> NodeLevelsExecution::StartStripeStep(int step) {
  Communicator& node = *call_.node;
  char* recv = static_cast<char*>(call_.recv);
  const size_t place = static_cast<size_t>(node.rank());
  if (step == 0) {
    // In place the node's Reduce_scatter leaves this rank's block at the start of
    // `recv` (moved to its place before the stripe's call); else straight there.
    return call_.in_place ? node.IReduceScatter(kInPlace, recv, counts_, call_.type, call_.op)
                          : node.IReduceScatter(call_.send, recv + stripe_displ_bytes_, counts_,
                                                call_.type, call_.op);
  }
  if (step == 1) {
    if (call_.in_place && stripe_displ_bytes_ > 0) {
      std::memmove(recv + stripe_displ_bytes_, recv, counts_[place] * DataTypeSize(call_.type));
    }
    return call_.stripe->IAllreduce(kInPlace, recv + stripe_displ_bytes_, counts_[place],
                                    call_.type, call_.op);
  }
  return node.IAllgatherv(kInPlace, 0, recv, counts_, displs_, call_.type);
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
  finished_ = true;
  StopStarting();
  return true;
}

Transport::PollResult NodeLevelsExecution::Advance() {
  if (!finished_ && !AdvanceEarlierCalls()) return Transport::PollResult::kIdle;
  while (!finished_) {
    if (!current_.done()) {
      absl::StatusOr<bool> done = current_.Test();
      if (!done.ok()) {
        Fail(done.status());
        break;
      }
      if (!*done) return Transport::PollResult::kIdle;
    }
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
  while (!finished_) {
    if (!current_.done()) {
      // The level call's own waiting, to this call's deadline: past it, the caller's
      // Request reports this call overdue with what its communicator sees (a rank
      // stopped on another node, which the level's communicator does not hold).
      Request::Pending& pending = *current_.pending_;
      CallExecution& level = *pending.execution;
      absl::Status status =
          level.finished()
              ? absl::OkStatus()
              : level.WaitFor(
                    *pending.transport, [&level] { return level.Advance(); }, deadline, on_clock);
      if (absl::IsDeadlineExceeded(status)) return status;
      status = current_.Wait();  // done (or failed): ends the level's request
      if (!status.ok()) {
        Fail(status);
        break;
      }
    }
    if (!StartNext()) break;
  }
  return absl::OkStatus();
}

NodeLevelsExecution::~NodeLevelsExecution() {
  // A level call left pending by a missed deadline ends at once: the job has failed.
  if (!current_.done()) current_.Wait().IgnoreError();
  StopStarting();
}

}  // namespace zcoll
