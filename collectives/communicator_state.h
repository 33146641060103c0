// What a Communicator holds (internal to collectives/: communicator.cc makes and
// splits communicators, collectives.cc runs their collectives).

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "collectives/algorithms.h"
#include "collectives/communicator.h"
#include "collectives/communicator_transport.h"
#include "collectives/executor.h"
#include "collectives/node_engine.h"
#include "collectives/node_levels.h"
#include "core/topology.h"
#include "transport/bootstrap/bootstrap.h"

namespace zcoll {

// What a plan was made for: the algorithm the caller asked for (SetAlgorithm or
// ZCOLL_ALGO_<COLL>; null when the selection table chose) and the arguments. A call
// with an equal key reuses the plan without consulting the table again (the table
// depends on nothing else: the topology is the communicator's).
struct PlanKey {
  const Algorithm* requested = nullptr;
  // The arguments without their vectors, which are below (CollectiveCall's split).
  ScalarArgs args;
  std::array<std::vector<size_t>, 4> vectors;

  friend bool operator==(const PlanKey&, const PlanKey&) = default;
};

// ZCOLL_CHECK=1: collectives exchange their arguments' signatures before they run
// (read once per process).
bool ArgumentCheckEnabled();

// FailedPrecondition for `operation` on a moved-from Communicator.
absl::Status MovedFromError(absl::string_view operation);

// A plan as the cache (and a persistent request) keeps it.
struct Communicator::CachedPlan {
  PlanKey key;
  std::shared_ptr<const ExecutionPlan> plan;
  uint64_t last_used = 0;  // collectives_started when it was last used
  // The plan's part of its messages' check word (the collective, the algorithm, the
  // agreed size, root and ranks), and the last call's whole word with the type and
  // op it was made for.
  uint32_t plan_check = 0;
  uint32_t call_check = 0;
  uint32_t call_check_key = ~uint32_t{0};
  // The algorithm composes calls on the node levels (node_levels.h); plan is null.
  bool node_levels = false;
  // Of them, the allreduce by stripes ("node_stripes").
  bool node_stripes = false;
};

struct Communicator::State {
  // Only the job's first communicator uses it, but it lives as long as the job's
  // communicators: a PMIx client stays initialised while the process is in the job.
  std::shared_ptr<Bootstrap> bootstrap;
  std::unique_ptr<CommunicatorTransport> transport;
  Topology topology;
  absl::Duration timeout;
  // `timeout` in nanoseconds, -1 for none (set by Communicator's constructor, so that a
  // deadline costs a clock reading and an addition).
  int64_t timeout_ns = -1;
  // Which setting `timeout` came from, for the messages of missed deadlines.
  const char* timeout_source = "ZCOLL_TIMEOUT";
  // Some host of the job runs more of its ranks than it has cores (found at Create from
  // every rank's record; inherited by the communicators made from this one):
  // SelectionInputs::hosts_oversubscribed.
  bool hosts_oversubscribed = false;

  // Collectives started so far: the sequence number that keeps their tags apart.
  uint64_t collectives_started = 0;
  // Nonblocking collectives not yet completed.
  int in_flight = 0;
  // Algorithms forced by SetAlgorithm (null: the selection table or
  // ZCOLL_ALGO_<COLL>).
  std::array<const Algorithm*, kNumCollectives> forced{};
  // ZCOLL_ALGO_<COLL>'s algorithm (null: none; AlgorithmFromEnvironment, read once per
  // process and kept here for every call). A name that is no algorithm never gets
  // here: Create refuses it.
  std::array<const Algorithm*, kNumCollectives> from_environment{};
  // Recently used plans; the least recently used goes when a new one needs room.
  using CachedPlan = Communicator::CachedPlan;
  std::vector<CachedPlan> plans;
  // The plan the last call used: a loop of equal calls finds it first.
  size_t last_plan = 0;
  ScratchPool scratch;
  // Requests that finished without error, with their executions, ready to run
  // another call (a small collective should not allocate).
  std::vector<std::unique_ptr<Request::Pending>> idle_requests;
  // The node engine, when every rank shares one node (null otherwise), and its idle
  // requests (declared after it: they refer to it).
  std::unique_ptr<NodeEngine> node;
  std::vector<std::unique_ptr<Request::Pending>> idle_node_requests;
  // The call being started is a blocking one (Communicator::Blocking), to end by
  // `blocking_deadline` (none: the timeout); StartCollective clears it.
  bool blocking = false;
  std::optional<absl::Time> blocking_deadline;
  // The execution of blocking node calls, which need no Request (made on first use;
  // after it failed, made anew).
  std::unique_ptr<NodeExecution> blocking_node;
  // By collective, the last blocking call that ran on the node's segment, when it can be repeated
  // without the general path's checks, plan cache and Launch (Communicator::QuickCallFits): an
  // Allreduce, Reduce, Bcast, Barrier, Scan, Exscan, Scatter(v), Gather(v),
  // ReduceScatter(Block), Allgather(v) or Alltoall(v), with a predefined op other than AVG. Its
  // arguments but the buffers are the key (the v-collectives' vectors as their calls record
  // them): equal ones choose the same algorithm (SetAlgorithm forgets the keys, ZCOLL_CHECK=1
  // never sets one) and make the same check word. (By collective: a loop may alternate collectives,
  // a benchmark's Barrier between its calls, say.)
  struct QuickNodeCall {
    bool valid = false;
    size_t count = 0;
    DataType type = DataType::kByte;
    PredefinedOp op = PredefinedOp::kSum;
    int root = 0;
    bool in_place = false;
    // Made from the key once, not at every call (a small call's whole cost is a few
    // hundred instructions): bytes of one block (count elements), and of one per rank.
    // The v-collectives': a Scatterv's or Gatherv's root, an Allgatherv: the blocks'
    // extent in `all_bytes`; a ReduceScatter: this rank's block and the sum; an
    // Alltoallv: what it sends and what it receives (their extents).
    size_t bytes = 0;
    size_t all_bytes = 0;
    bool at_root = false;  // this rank is `root`
    // The collective's own execution, whose call holds the key's arguments (its check
    // word, name and the v-collectives' vectors, which are part of the key, too) from one
    // repetition to the next: a repetition writes only its sequence number and buffers,
    // even in a loop that alternates collectives. Made with the first key, kept
    // (declared after `node`, which it refers to); a failed call takes it.
    std::unique_ptr<NodeExecution> execution;
  };
  std::array<QuickNodeCall, kNumCollectives> quick{};
  // The levels (node_levels.h), on a communicator that spans nodes (or, on one node,
  // NUMA domains), one with several ranks: this rank's group's ranks (its node's, or
  // its NUMA domain's), and the groups' leaders (null but on a group's lowest rank).
  // By rank: its place in its group, its group's leader's rank among the leaders
  // (which also names the group). Then the idle requests of node_levels calls (declared after the
  // levels: their finished requests belong to them).
  std::unique_ptr<Communicator> node_level;
  std::unique_ptr<Communicator> leader_level;
  // The ranks at this rank's place of every node (NodeStripesPossible; else null).
  std::unique_ptr<Communicator> stripe_level;
  // On a stripe communicator: its node's stripes, which share each rank's network link
  // with it (SelectionInputs::link_sharers); 1 on any other.
  int link_sharers = 1;
  std::vector<int> level_position;
  std::vector<int> level_leader_index;
  // Each group's ranks (ascending), groups in their leaders' order; whether that order
  // is the ranks' own (each group a run of consecutive ranks, groups ascending).
  std::vector<std::vector<int>> level_members;
  bool levels_in_blocks = false;
  // The node_levels calls that have not yet started their last level call, in the
  // order they were made (node_levels.h); declared before the requests whose
  // executions take themselves out of it.
  std::vector<NodeLevelsExecution*> levels_starting;
  // Those not yet finished (each advances the others' level calls while it waits).
  std::vector<NodeLevelsExecution*> levels_unfinished;
  std::vector<std::unique_ptr<Request::Pending>> idle_level_requests;
  // A persistent collective's init is under way (Communicator::Persistent): the
  // call StartCollective reaches is kept here instead of run.
  internal_collectives::PersistentCall* initializing = nullptr;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_
