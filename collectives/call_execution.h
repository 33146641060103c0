// CallExecution: one rank's part of one collective call in flight, as a Request
// (request.h) drives it. Two kinds: Execution (executor.h) runs a Schedule of
// messages over the transport; NodeExecution (node_engine.h) runs a collective of the
// ranks that share a node through their shared segment, with no message at all.

#ifndef ZCOLL_COLLECTIVES_CALL_EXECUTION_H_
#define ZCOLL_COLLECTIVES_CALL_EXECUTION_H_

#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace zcoll {

class ScratchArena;

class CallExecution {
 public:
  virtual ~CallExecution() = default;

  // Runs what can run now: kDone when the call has completed or failed.
  virtual Transport::PollResult Advance() = 0;
  // For a caller that has waited `waited` so far (every 50 ms): kDone when that
  // found the ranks disagreeing (the execution then has failed).
  virtual Transport::PollResult Look(absl::Duration waited) = 0;
  // Waits until `poll` says done or `deadline`, as Transport::WaitFor does: the
  // transport's waiting, or the execution's own (a node call sleeps on its segment).
  virtual absl::Status WaitFor(Transport& transport,
                               absl::FunctionRef<Transport::PollResult()> poll, absl::Time deadline,
                               absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) {
    return transport.WaitFor(poll, deadline, on_clock);
  }
  // The ranks it still waits for, ascending.
  virtual std::vector<int> PendingPeers() const = 0;
  // The scratch memory it holds, to be reused (none for a node call).
  virtual std::shared_ptr<ScratchArena> TakeScratch() { return nullptr; }
  // Whether it runs on the node's segment (its Request goes back to that kind's pool).
  virtual bool on_node() const { return false; }

  bool finished() const { return finished_; }
  // The first error; OK when finished without one.
  const absl::Status& status() const { return status_; }

 protected:
  bool finished_ = false;
  absl::Status status_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_CALL_EXECUTION_H_
