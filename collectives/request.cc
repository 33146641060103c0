#include "collectives/request.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/call_execution.h"
#include "collectives/communicator_transport.h"
#include "collectives/executor.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace zcoll {
namespace {

// How often a waiting collective looks at messages that wait for a receive.
constexpr absl::Duration kLookEvery = absl::Milliseconds(50);

}  // namespace

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (pending_ != nullptr) Wait().IgnoreError();
    pending_ = std::move(other.pending_);
    status_ = std::move(other.status_);
  }
  return *this;
}

void Request::WaitOnDestruction() {
  absl::Status status = Wait();
  if (!status.ok()) ZCOLL_LOG(WARNING) << "a Request destroyed while pending ended with " << status;
}

absl::Status Request::Finish(absl::Status status) {
  Pending& pending = *pending_;
  CallExecution& execution = *pending.execution;
  if (status.ok()) status = execution.status();
  if (status.ok() && pending.finish) status = pending.finish();
  JobConnection& job = pending.transport->job();
  if (!status.ok()) {
    // The collective's peers may still be in it: the job fails so that they learn.
    // That froze the job's transport (JobConnection::RecordFailure), so transfers
    // still pending are abandoned and the execution, its Completions and scratch, and
    // the caller's buffers may all go now.
    status = job.Fail(status);
    --*pending.in_flight;
    pending_.reset();
  } else {
    pending.scratch_pool->Release(execution.TakeScratch());
    --*pending.in_flight;
    constexpr size_t kIdleRequests = 8;
    if (pending.idle_requests->size() < kIdleRequests) {
      if (pending.finish) pending.finish = nullptr;
      pending.idle_requests->push_back(std::move(pending_));
    } else {
      pending_.reset();
    }
  }
  status_ = status;
  return status_;
}

absl::Status OverdueError(CommunicatorTransport& transport, const CallExecution& execution,
                          const char* name, absl::Duration timeout, const char* timeout_source,
                          bool own_deadline) {
  const std::vector<int> pending = execution.PendingPeers();
  std::string waiting = absl::StrJoin(pending, ", ");
  if (!waiting.empty()) waiting = absl::StrCat(pending.size() > 1 ? "ranks " : "rank ", waiting);
  // The ranks this host sees stopped or gone, whether waited for directly or not: the
  // likely cause (a rank waits for one that waits for the stopped one).
  std::string not_running;
  for (int peer : transport.PeersNotRunning()) {
    absl::StrAppend(&not_running, "; ", transport.DescribePeer(peer));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "rank ", transport.rank(), ": ", name, " did not complete ",
      own_deadline ? std::string("by the deadline the call or its Wait was given")
                   : absl::StrCat("within the communicator's timeout of ",
                                  absl::FormatDuration(timeout), " (", timeout_source, ")"),
      waiting.empty() ? "" : absl::StrCat(", waiting for ", waiting), not_running));
}

absl::Status Request::Overdue(bool own_deadline) const {
  return OverdueError(*pending_->transport, *pending_->execution, pending_->name, pending_->timeout,
                      pending_->timeout_source, own_deadline);
}

absl::Status Request::Wait(std::optional<absl::Time> deadline) {
  if (pending_ == nullptr) return status_;
  CallExecution& execution = *pending_->execution;
  absl::Status status;
  // A collective whose steps all completed when it was posted (a root's eager sends)
  // has nothing to wait for.
  if (!execution.finished()) {
    // Every 50 ms of waiting the execution looks at what waits for a receive (and a
    // long wait probes its peers: executor.h), when WaitFor reads the clock.
    absl::Time next_look = absl::InfinitePast();
    status = execution.WaitFor(
        *pending_->transport, [&execution] { return execution.Advance(); },
        deadline.has_value() ? *deadline : pending_->deadline,
        [&](absl::Time now) {
          if (next_look == absl::InfinitePast()) next_look = now + kLookEvery;
          if (now < next_look) return Transport::PollResult::kIdle;
          next_look = now + kLookEvery;
          return execution.Look(now - (pending_->deadline - pending_->timeout));
        });
    if (absl::IsDeadlineExceeded(status)) status = Overdue(deadline.has_value());
  }
  return Finish(std::move(status));
}

absl::StatusOr<bool> Request::Test() {
  if (pending_ == nullptr) {
    if (!status_.ok()) return status_;
    return true;
  }
  CallExecution& execution = *pending_->execution;
  absl::Status status = pending_->transport->Progress();
  if (status.ok() && execution.Advance() != Transport::PollResult::kDone) {
    if (absl::Now() < pending_->deadline) return false;
    status = Overdue(/*own_deadline=*/false);
  }
  RETURN_IF_ERROR(Finish(std::move(status)));
  return true;
}

}  // namespace zcoll
