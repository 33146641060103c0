#include "collectives/node_levels.h"

#include <utility>

#include "collectives/communicator.h"
#include "collectives/communicator_transport.h"

namespace zcoll {

void NodeLevelsExecution::Restart(const Call& call) {
  call_ = call;
  next_ = 0;
  current_ = Request();
  finished_ = false;
  status_ = absl::OkStatus();
  StartNext();
}

void NodeLevelsExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  finished_ = true;
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

bool NodeLevelsExecution::StartNext() {
  while (next_ < kSteps) {
    std::optional<absl::StatusOr<Request>> started = StartStep(next_++);
    if (!started.has_value()) continue;
    if (!started->ok()) {
      Fail(started->status());
      return false;
    }
    current_ = std::move(**started);
    return true;
  }
  finished_ = true;
  return true;
}

Transport::PollResult NodeLevelsExecution::Advance() {
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
    Transport&, absl::FunctionRef<Transport::PollResult()>, absl::Time deadline,
    absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
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
}

}  // namespace zcoll
