// Predicted times of a collective call at any scale: every candidate algorithm's
// schedules, made by the generators zcoll runs (collectives/algorithms.h), timed by the
// event simulation (event_simulation.h) on a machine profile; with which algorithm
// zcoll's selection table picks there, and a lower bound to judge them by.
//
// The node engine's algorithms ("node") are timed from the engine's data flow
// (collectives/node_data_flow.h) under the profile's engine figures (or listed as not
// simulated, saying why, on a profile without them). "node_levels", calls composed on
// the communicator's levels, is listed as not simulated: the simulator has no model of
// the composition yet.

#ifndef ZCOLL_SIM_COLLECTIVE_MODEL_H_
#define ZCOLL_SIM_COLLECTIVE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/algorithms.h"
#include "collectives/selection.h"
#include "core/topology.h"
#include "sim/machine_profile.h"

namespace zcoll::sim {

// One call: `bytes` is its size as zcoll_bench counts it (CollectiveArgs::
// AgreedMessageBytes: the vector, or for scatter, gather, allgather and alltoall the
// block of one rank).
struct PredictionCase {
  Collective collective = Collective::kAllreduce;
  int ranks = 2;
  size_t bytes = 8;
  size_t element_bytes = 4;
  bool commutative = true;
  // The blocks of reduce_scatter and the v-collectives: 0, every rank's alike; S in
  // (0, 1], rank r's (for alltoallv the block rank r sends each rank) rising with r
  // from 1 - S to 1 + S times its share, so that they average it (give or take an
  // element each).
  double skew = 0;
  // Every rank's buffers from AllocateBuffer: the node engine reduces its peers'
  // contributions where they lie (CollectiveArgs::mapped_buffers).
  bool mapped_buffers = false;
  // In place (MPI_IN_PLACE): a node_stripes level call's, where zcoll makes it so (its
  // node's Allgatherv, each rank's block already in its place).
  bool in_place = false;
  // The calls that share each rank's network link with this one (a node_stripes
  // stripe's q: SelectionInputs::link_sharers), for the selection only: the profile
  // given is already the shared link's.
  int link_sharers = 1;
  // The node's ranks outnumber its cores (NodeSegment::oversubscribed): selection and
  // the node engine's data flow take such a node's ways (CollectiveArgs::
  // node_oversubscribed). PredictAlgorithms sets it where the profile's host has fewer
  // cores than the call's ranks (RanksOutnumberCores), as every emulated node of a
  // job on one machine sees it; a node_levels level call inherits it.
  bool oversubscribed = false;
};

// `ranks` ranks placed as the profile's nodes hold them: nodes of ranks_per_node in
// blocks (the last node takes what is left), each node's NUMA domains in blocks. With
// `nodes` (not 0), on that many nodes instead, as zcoll_run --nodes places them (rank
// r on node r*nodes/ranks), whatever ranks_per_node says.
absl::StatusOr<Topology> SimulatedTopology(const MachineProfile& profile, int ranks, int nodes = 0);

// The arguments of `call` that every rank agrees on (not in place, root 0), from which
// the algorithm is chosen. Without skew they are also every rank's own: the
// v-collectives get every rank's block of the call's size, so they are timed as their
// fixed-size forms' message patterns with their own algorithms.
CollectiveArgs ArgsFor(const PredictionCase& call);
// Rank `rank`'s own arguments: ArgsFor's, with its own block (and for alltoallv its own
// send and receive counts) where the call has skew.
CollectiveArgs RankArgsFor(const PredictionCase& call, int rank);

// What zcoll's selection table picks for `call` on `topology`, as a communicator made
// there would see it (a node engine on one node, its ranks able to read each other's
// memory, oversubscribed as `call` says; levels across nodes or NUMA domains).
const Algorithm& ChosenAlgorithm(const PredictionCase& call, const Topology& topology);
// What that selection is made from.
SelectionInputs SelectionInputsFor(const PredictionCase& call, const Topology& topology);

struct Prediction {
  std::string algorithm;
  // Nullopt when not simulated; `skipped` says why.
  std::optional<double> usec;
  std::string skipped;
  bool chosen = false;
  // Where it was not simulated because it cannot be the fastest (skip_slower): a lower
  // bound on its time, more than another algorithm's predicted time.
  std::optional<double> at_least_usec;
  uint64_t steps = 0;
  uint64_t network_bytes = 0;
  double generate_seconds = 0;
  double simulate_seconds = 0;
  size_t memory_bytes = 0;  // of the timed schedules
};

struct PredictOptions {
  // An algorithm whose schedules would hold more steps is not simulated (the
  // simulation's memory is about 25 bytes a step).
  uint64_t max_steps = 100'000'000;
  // Only this algorithm (empty: every one of the collective).
  std::string algorithm;
  // Leaves unsimulated an algorithm that one of its sampled ranks' own steps show to
  // take longer than another algorithm's predicted time (RankLowerBoundUsec,
  // event_simulation.h): it cannot be the fastest, and at 65,536 ranks simulating it
  // can take most of a size's time. The built-in table's choice is always simulated.
  bool skip_slower = false;
};

// Every candidate algorithm of `call.collective` that can run it (any_op ones only for a
// non-commutative op), in the order of AllAlgorithms(). InvalidArgument when the
// collective cannot be predicted, or `options.algorithm` is not one of it.
absl::StatusOr<std::vector<Prediction>> PredictAlgorithms(const PredictionCase& call,
                                                          const MachineProfile& profile,
                                                          const Topology& topology,
                                                          const PredictOptions& options);

// The bytes of `call`'s buffers that the ranks sharing one cache hold (send and receive
// buffers, in place once), the footprint MachineProfile::cache_bytes is compared with:
// every rank's on a cluster emulated on one machine (profile.host_cores), else those of
// the node with the most of the call's ranks, each rank's share of the call's total.
// Infinite where the call's ranks outnumber the machine's cores (host_cores): ranks
// that take turns on a core evict each other's data.
double CallFootprintBytes(const PredictionCase& call, const MachineProfile& profile,
                          const Topology& topology);

// A lower bound on `call`'s time under the profile, from its nodes and ranks per node:
// for N nodes of q ranks, the largest of three terms (overheads not counted):
// - the bytes every node must send through its NIC, over the NIC's bandwidth times the
//   bisection;
// - the bytes every rank must send through its port, at the fastest link within a node
//   (a NUMA domain's, where the profile has domains of two ranks or more);
// - for the reductions, the (p-1)/p * n bytes of operations each rank does when the
//   p-1 operations per element are spread evenly, over the kernel's throughput;
// the link terms plus one latency of their link (the last byte must arrive). Rates are
// the cached ones where the call's footprint is in cache (ProfileForFootprint). Or, if
// larger, the latency of the rounds the data must travel (with skew, as if every block
// were the average: a bound still, since the busiest rank moves at least that): ceil(log2(N))
// network latencies and ceil(log2(q)) within a node (one hop for scatter, gather and alltoall,
// whose data may go directly; one within a node whose profile has the node engine,
// where every rank reads every other directly, and the engine's figures count among
// the node's links). For allreduce on one rank per node and free reductions
// this is max(2(p-1)/p * n/B + L, log2(p) * L): the usual sum of the two terms is not a
// bound where transfers pipeline (a pairwise alltoall on two nodes beat it).
double LowerBoundUsec(const PredictionCase& call, const MachineProfile& profile,
                      const Topology& topology);

// The fastest simulated algorithm at one point of a sweep (empty: none was simulated
// there).
struct SweepWinner {
  int ranks = 2;
  size_t bytes = 0;
  std::string algorithm;
};

// Tuning-table rules (collectives/selection.h) that pick each point's winner of a
// sweep of `collective` over rank counts and sizes: for each rank count up to the
// next one's (the last: any more), the sizes in runs of one winner, each run reaching
// from above the previous point's size up to its last point's (the last run: any
// larger). A point without a winner is left to the built-in table. Rank counts whose
// rules would be the same share them (one rule reaching over both). Every rule needs
// at least `min_nodes` nodes. InvalidArgument for an algorithm the collective does
// not have.
absl::StatusOr<std::vector<SelectionRule>> DeriveTuningRules(
    Collective collective, const std::vector<SweepWinner>& winners, int min_nodes);

}  // namespace zcoll::sim

#endif  // ZCOLL_SIM_COLLECTIVE_MODEL_H_
