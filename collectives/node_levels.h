// Node levels: a communicator that spans nodes, one of which has several of its
// ranks, holds two communicators of its own (made at Create, Split and Dup): its
// node's ranks (whose collectives run on that node's engine, node_engine.h) and, on
// each node's lowest rank, the nodes' leaders (by messages across the network). The
// "node_levels" algorithms of the selection table compose calls on them:
//   Allreduce: Reduce to the node's leader; Allreduce among the leaders; Bcast from
//     the leader (commutative ops only: a node's ranks need not be consecutive);
//   Bcast: Bcast within the root's node; among the leaders from the root's node's;
//     within every other node from its leader;
//   Barrier: within the node; among the leaders; within the node.
// How each level runs is that level's own choice from its own agreed inputs (a node
// whose ranks cannot share a segment runs its level by messages), so the ranks of a
// node agree on it and nothing else needs to.
//
// NodeLevelsExecution runs the calls one after another: each is a nonblocking call on a
// level's communicator (a Request of its own), started when the one before it has
// completed, so a nonblocking node_levels call advances whenever it is tested or
// waited for. A level's failure fails the job, as any failed call does.

#ifndef ZCOLL_COLLECTIVES_NODE_LEVELS_H_
#define ZCOLL_COLLECTIVES_NODE_LEVELS_H_

#include <array>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/call_execution.h"
#include "collectives/request.h"

namespace zcoll {

class NodeLevelsExecution final : public CallExecution {
 public:
  // One call on a level: started by the function (none: nothing on this rank).
  using Step = std::function<absl::StatusOr<Request>()>;
  static constexpr size_t kMostSteps = 3;

  NodeLevelsExecution() = default;
  ~NodeLevelsExecution() override;
  NodeLevelsExecution(const NodeLevelsExecution&) = delete;
  NodeLevelsExecution& operator=(const NodeLevelsExecution&) = delete;

  // Runs `steps` (at most kMostSteps; empty ones skipped) in order, from the first.
  void Restart(std::array<Step, kMostSteps> steps);

  Transport::PollResult Advance() override;
  Transport::PollResult Look(absl::Duration) override { return Transport::PollResult::kIdle; }
  // Waits for each level's call in turn (each waits as its own kind does).
  absl::Status WaitFor(Transport& transport, absl::FunctionRef<Transport::PollResult()> poll,
                       absl::Time deadline,
                       absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) override;
  // (A level's own Request names whom it waits for, in that level's ranks.)
  std::vector<int> PendingPeers() const override { return {}; }

 private:
  // Starts the next step, or finishes when none is left; false on an error.
  bool StartNext();
  void Fail(absl::Status status);

  std::array<Step, kMostSteps> steps_;
  size_t next_ = 0;
  Request current_;  // the level call in flight (done between steps)
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_LEVELS_H_
