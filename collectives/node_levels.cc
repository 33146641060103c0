#include "collectives/node_levels.h"

#include <utility>

#include "collectives/communicator_transport.h"

namespace zcoll {

void NodeLevelsExecution::Restart(std::array<Step, kMostSteps> steps) {
  steps_ = std::move(steps);
  next_ = 0;
  current_ = Request();
  finished_ = false;
  status_ = absl::OkStatus();
  StartNext();
}

void NodeLevelsExecution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  finished_ = true;
  for (Step& step : steps_) step = nullptr;
}

bool NodeLevelsExecution::StartNext() {
  while (next_ < steps_.size() && !steps_[next_]) ++next_;
  if (next_ == steps_.size()) {
    finished_ = true;
    for (Step& step : steps_) step = nullptr;
    return true;
  }
  absl::StatusOr<Request> started = steps_[next_++]();
  if (!started.ok()) {
    Fail(started.status());
    return false;
  }
  current_ = std::move(*started);
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
