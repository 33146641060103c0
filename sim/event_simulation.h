// Times a whole collective's schedules (core/schedule.h) under a machine profile
// (machine_profile.h) by discrete-event simulation: no processes, no data, one core.
//
// The model, per rank: one CPU that runs its steps' costs one after another (a send's
// overhead when it is posted, a receive's when its data has come, a reduction's and a
// copy's bytes over the kernel's throughput). Per transfer, LogGP: the data leaves
// through the sender's port (within a node: the rank's own; across nodes: its node's
// NIC, which the node's ranks share) and comes in through the receiver's, each port
// carrying one transfer at a time at the link's bandwidth, `latency` after it leaves.
// Messages up to the profile's eager size leave when posted and the send completes
// once they are out; larger ones and one-sided transfers leave when the receive is
// posted and the ready-to-send has reached it (one latency), and both sides complete
// when the data is in. A step starts when its dependencies have completed, as the
// executor starts it. Events at the same time run in the order they were made, so a
// run is deterministic.
//
// Memory: the steps (about 40 bytes each with their dependency edges) plus the
// transfers in flight; nothing per pair of ranks.

#ifndef ZCOLL_SIM_EVENT_SIMULATION_H_
#define ZCOLL_SIM_EVENT_SIMULATION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schedule.h"
#include "core/topology.h"
#include "sim/machine_profile.h"

namespace zcoll::sim {

// Every rank's schedule reduced to what its time depends on, in one flat array.
class TimedSchedules {
 public:
  struct TimedStep {
    uint64_t bytes = 0;
    int32_t peer = kNoPeer;
    uint32_t tag = 0;
    uint32_t dependents_begin = 0;  // into dependents()
    uint32_t num_dependents = 0;
    uint32_t num_deps = 0;
    StepKind kind = StepKind::kCopy;
    uint8_t operands = 0;  // a Reduce's
  };

  // Appends the next rank's schedule (ranks in order, from 0); `element_bytes` turns
  // its element counts into bytes.
  void Add(const Schedule& schedule, size_t element_bytes);

  int ranks() const { return static_cast<int>(rank_begin_.size()) - 1; }
  size_t num_steps() const { return steps_.size(); }
  const TimedStep& step(size_t index) const { return steps_[index]; }
  // Steps of `rank` are [rank_begin(rank), rank_begin(rank + 1)).
  size_t rank_begin(int rank) const { return rank_begin_[rank]; }
  const uint32_t* dependents(const TimedStep& step) const {
    return dependents_.data() + step.dependents_begin;
  }
  size_t MemoryBytes() const;

 private:
  std::vector<TimedStep> steps_;
  std::vector<uint32_t> dependents_;  // global step indices
  std::vector<size_t> rank_begin_ = {0};
};

struct SimulationResult {
  // When the last rank's last step completed, from every rank starting at 0.
  double usec = 0;
  uint64_t steps = 0;
  uint64_t transfers = 0;
  uint64_t network_bytes = 0;  // bytes that crossed between nodes
  uint64_t events = 0;
};

// Simulates `schedules` on ranks placed as `topology` says (nodes, NUMA domains).
// InvalidArgument when the ranks disagree (a transfer without its partner) or the
// steps cannot all run (a deadlock), naming the first rank and step left.
absl::StatusOr<SimulationResult> Simulate(const TimedSchedules& schedules, const Topology& topology,
                                          const MachineProfile& profile);

// The link class between two ranks of `topology`.
LinkClass LinkBetween(const Topology& topology, int a, int b);

}  // namespace zcoll::sim

#endif  // ZCOLL_SIM_EVENT_SIMULATION_H_
