// Node levels: a communicator that spans nodes, one of which has several of its
// ranks, holds two communicators of its own (made at Create, Split and Dup): its
// node's ranks (whose collectives run on that node's engine, node_engine.h) and, on
// each node's lowest rank, the nodes' leaders (by messages across the network); a
// third where every node holds as many of its ranks: the ranks at its place of
// every node (its stripe). On one
// node the first of its packages, NUMA domains and L3 groups that splits it takes the
// nodes' place (NodeLevelGroups: every rank's id known, several groups): the group's
// ranks on a segment of their own, the groups' leaders on another; a node's level
// across nodes is such a communicator, and a package's or a domain's too, so the levels
// nest down the hierarchy. The
// "node_levels" algorithms of the selection table compose calls on them:
//   Allreduce: Reduce to the node's leader; Allreduce among the leaders; Bcast from
//     the leader (commutative ops only: a node's ranks need not be consecutive);
//   Reduce: Reduce to the leader in every node but the root's; Reduce among the
//     leaders to the root's node's leader (its own vector its contribution); Reduce
//     within the root's node to the root, the leader contributing what it got
//     (commutative ops only);
//   Bcast: Bcast within the root's node; among the leaders from the root's node's;
//     within every other node from its leader;
//   Allgather: Gather to the node's leader; Allgatherv among the leaders (each node's
//     blocks, put in rank order by the leader unless the nodes hold runs of
//     consecutive ranks); Bcast of the whole from the leader;
//   Barrier: within the node; among the leaders; within the node.
// and the "node_stripes" Allreduce, where every node holds q ranks (NodeStripesPossible):
//   Reduce_scatter within each node, the vector cut into q blocks (block i, the first
//     count % q one element longer, to the node's rank at place i); Allreduce of block
//     i among the ranks at place i of every node (the stripe), q of them at once
//     across the network; Allgatherv of the blocks within each node (commutative ops
//     only). Each rank reduces and sends 1/q of the vector across nodes, where the
//     leaders of node_levels send all of it. A long vector is cut into segments first
//     (StripeSegments: at most 1 MiB each, two from 512 KiB, at most 8), each done so,
//     in two lanes of calls: the node's Reduce_scatters of every segment, then their
//     Allgathervs; the stripe's Allreduces, each once its segment's Reduce_scatter has
//     completed; a segment's Allgatherv once its Allreduce has. So the network's part
//     of a segment runs while the node reduces the next ones.
// How each level runs is that level's own choice from its own agreed inputs (a node
// whose ranks cannot share a segment runs its level by messages), so the ranks of a
// node agree on it and nothing else needs to.
//
// NodeLevelsExecution runs the calls one after another: each is a nonblocking call on a
// level's communicator (a Request of its own), started when the one before it has
// completed, so a nonblocking node_levels call advances whenever it is tested or
// waited for (an Allreduce by stripes, one call at a time in each lane: with both in
// flight it polls both, since a peer's call in one may wait for this rank's in the
// other). A level's failure fails the job, as any failed call does.
//
// Every rank must start its level calls on a level's communicator in one order, and a
// step starts when the step before it completes, which is a matter of timing. So the
// node_levels calls of a communicator start their steps one call at a time, in the
// order the calls were made (the communicator's `starting` list): a call starts its
// first step once every earlier call has started its last. Advancing or waiting for
// a later call advances the earlier ones first, so that a program may complete
// several nonblocking node_levels calls in any order.

#ifndef ZCOLL_COLLECTIVES_NODE_LEVELS_H_
#define ZCOLL_COLLECTIVES_NODE_LEVELS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "collectives/call_execution.h"
#include "collectives/request.h"
#include "core/datatype.h"
#include "core/reduce_op.h"

namespace zcoll {

class Communicator;

class NodeLevelsExecution final : public CallExecution {
 public:
  // One call as the levels run it (an Allreduce's AVG already a sum).
  struct Call {
    Collective collective = Collective::kBarrier;
    Communicator* node = nullptr;     // this node's ranks
    Communicator* leaders = nullptr;  // the nodes' leaders; null but on a node's leader
    // Allreduce by stripes ("node_stripes"): the ranks at this rank's place of every
    // node (null: by the leaders).
    Communicator* stripe = nullptr;
    const void* send = nullptr;
    void* recv = nullptr;  // Bcast: the buffer
    bool in_place = false;
    size_t count = 0;
    DataType type = DataType::kByte;
    ReduceOp op = PredefinedOp::kSum;
    // Bcast, Reduce: the root's rank in its node's communicator (-1: this rank is on
    // another node) and its node's leader's among the leaders.
    int node_root = -1;
    int leader_root = 0;
    // Allgather: each group's ranks, groups in their leaders' order; this rank's
    // group there, its rank and the communicator's size; whether the groups are runs of consecutive
    // ranks in that order (then the levels gather straight into `recv`).
    const std::vector<std::vector<int>>* members = nullptr;
    int group = 0;
    int rank = 0;
    int size = 0;
    bool in_blocks = false;
    // Allreduce by stripes: the communicator's pipelining chunk (StripeSegments).
    size_t chunk_bytes = kDefaultChunkBytes;
  };
  // The level calls of a collective, in order; one that a rank takes no part in is
  // skipped.
  static constexpr int kSteps = 3;

  NodeLevelsExecution() = default;
  ~NodeLevelsExecution() override;
  NodeLevelsExecution(const NodeLevelsExecution&) = delete;
  NodeLevelsExecution& operator=(const NodeLevelsExecution&) = delete;

  // Starts `call`'s first level call, or queues it behind the calls of `starting`
  // (its communicator's calls that have not yet started their last step); it stays in
  // `unfinished` (its communicator's calls not yet finished) until it finishes.
  void Restart(const Call& call, std::vector<NodeLevelsExecution*>& starting,
               std::vector<NodeLevelsExecution*>& unfinished);

  Transport::PollResult Advance() override;
  Transport::PollResult Look(absl::Duration) override { return Transport::PollResult::kIdle; }
  // Waits for each level's call in turn (each waits as its own kind does).
  absl::Status WaitFor(Transport& transport, absl::FunctionRef<Transport::PollResult()> poll,
                       absl::Time deadline,
                       absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) override;
  // (A level's own Request names whom it waits for, in that level's ranks.)
  std::vector<int> PendingPeers() const override { return {}; }

 private:
  // Level call `step` of the call, on its level's communicator; nullopt where this rank
  // takes no part in it.
  std::optional<absl::StatusOr<Request>> StartStep(int step);
  // An Allreduce by stripes: starts what its lanes can start and notes what completed,
  // until nothing moves (finished_ once every call has completed).
  void PumpStripes();
  // The node lane's call `index` (the segments' Reduce_scatters, then their
  // Allgathervs) and the stripe lane's Allreduce of segment `segment`.
  absl::StatusOr<Request> StartNodeStripeCall(size_t index);
  absl::StatusOr<Request> StartStripeCall(size_t segment);
  // WaitFor's part for an Allreduce by stripes.
  absl::Status WaitForStripes(Transport& transport, absl::Time deadline,
                              absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock);
  // Waits until one of `mine` (this call's level calls in flight) completes or fails
  // (the requests say which), or DeadlineExceeded past `deadline` (left pending): as
  // that level's call waits where it is the only level call in flight on this rank's
  // levels, else advancing every one.
  absl::Status WaitForLevelCalls(absl::Span<Request* const> mine, Transport& transport,
                                 absl::Time deadline,
                                 absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock);
  // Whether another call of the communicator has a level call in flight; advancing
  // those.
  bool OthersInFlight() const;
  void AdvanceOthers();
  // Finished: leaves the starting and unfinished lists.
  void Finish();
  // Takes this call out of `calls` (one of those lists), if in one, and clears it.
  void Leave(std::vector<NodeLevelsExecution*>*& calls);
  // Starts the next step, or finishes when none is left; false on an error.
  bool StartNext();
  void Fail(absl::Status status);
  // Whether this call may start steps: it is first among the calls still starting.
  bool First() const { return starting_ == nullptr || starting_->front() == this; }
  // Advances the calls before this one until this one is first: false while the first
  // still waits for a level call to complete.
  bool AdvanceEarlierCalls();
  // Leaves the starting list (its last step started, or it finished).
  void StopStarting();

  Call call_;
  // The communicator's calls still starting steps, this one among them, or null; its
  // calls not yet finished, likewise.
  std::vector<NodeLevelsExecution*>* starting_ = nullptr;
  std::vector<NodeLevelsExecution*>* unfinished_ = nullptr;
  int next_ = 0;
  Request current_;            // the level call in flight (done between steps)
  std::vector<char> partial_;  // a Reduce's partial result (Restart)
  // Allgather's blocks in group order where they are not in rank order: this group's
  // (gathered) and every group's (among the leaders); the leaders' counts and
  // displacements, or a stripes call's blocks of the vector (Restart).
  std::vector<char> group_blocks_;
  std::vector<char> all_blocks_;
  std::vector<size_t> counts_, displs_;
  // An Allreduce by stripes: its segments (elements from `first`; each place's block's
  // counts and displacements within the segment), and its two lanes, each one call at
  // a time: the node's (every segment's Reduce_scatter, then every segment's
  // Allgatherv, which waits for the segment's Allreduce; in current_) and the stripe's
  // (every segment's Allreduce, once its Reduce_scatter has completed). Whether a
  // lane has a call in flight, and its next to start (so what it has completed: a lane
  // completes its calls in order).
  struct StripeSegment {
    size_t first = 0;
    std::vector<size_t> counts, displs;
  };
  std::vector<StripeSegment> segments_;
  Request stripe_current_;
  bool node_busy_ = false, stripe_busy_ = false;
  size_t node_next_ = 0, stripe_next_ = 0;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_LEVELS_H_
