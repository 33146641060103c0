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
// when the data is in. On a link whose bytes CPUs copy (cpu_copies: shared memory,
// TCP), a transfer also holds the sender's CPU while it leaves and the receiver's while
// it comes in (a receiver whose CPU was busy meanwhile completes later); within a node
// a message past the eager size is the receiver's copy, which the sender shares only
// if its CPU is free (the shm transport's split rendezvous), so a busy sender does not
// hold it up. On a profile
// with host cores (a cluster emulated on one machine), every CPU's work also holds one
// of those cores, so ranks that outnumber them wait for one. CPUs, ports and cores are
// reserved in the order the events ask for them. A step starts when its dependencies
// have completed, as the executor starts it. Events at the same time run in the order they were
// made, so a run is deterministic.
//
// The node engine's data flow (collectives/node_data_flow.h) is timed otherwise: there a
// transfer is one rank's copy of a peer's memory (the receiver's read, or the sender's
// write for the write tags), which starts the engine's latency (a control line's trip)
// after both sides are posted and then holds the copying rank's CPU for the engine's
// overhead and its bytes: from or into a peer's own buffer, the engine's system call
// and its bandwidth (process_vm_readv/writev), or where the buffers are mapped
// (kNodeEngineMappedBuffers) memcpy's rate (copy_bytes_per_usec) and no call; at
// memcpy's rate from a copy in the segment; and not at all where the reader reduces
// them in place (the reduction's cost reads them). Posting costs nothing, no port is
// used, and both sides complete when the copy is done.
//
// Events are kept per distinct time, first made first run: a collective's ranks act
// in step, so thousands of events share a time and a queue operation is a vector's
// append, not a heap's log(n) moves.
//
// Memory: the steps (24 bytes each and 4 per dependency) plus the transfers and
// events in flight; nothing per pair of ranks. Transfers are paired before the run
// (TimedSchedules::MatchTransfers), so a posting finds its partner by index.

#ifndef ZCOLL_SIM_EVENT_SIMULATION_H_
#define ZCOLL_SIM_EVENT_SIMULATION_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schedule.h"
#include "core/topology.h"
#include "sim/machine_profile.h"

namespace zcoll::sim {

// A growable array in blocks of 2^20 elements: it never copies what it holds to grow,
// and a block's pages past what it holds are reserved but never written (its elements
// are constructed as they are added), so a simulation's peak memory is what it holds.
template <typename T>
class BlockArray {
 public:
  void push_back(const T& value) {
    if ((size_ >> kShift) == blocks_.size()) blocks_.push_back(NewBlock());
    // Constructed as it is added, not with its block: a block holds 2^20, and
    // constructing them all (24 MiB of steps) was most of a small simulation's time,
    // 10-30 ms of every algorithm's.
    ::new (&(*this)[size_]) T(value);
    ++size_;
  }
  T& operator[](size_t index) { return blocks_[index >> kShift][index & (kBlock - 1)]; }
  const T& operator[](size_t index) const { return blocks_[index >> kShift][index & (kBlock - 1)]; }
  size_t size() const { return size_; }
  // What its elements take: the rest of the last block is never written, so it is not
  // resident.
  size_t MemoryBytes() const { return size_ * sizeof(T); }

 private:
  static constexpr int kShift = 20;
  static constexpr size_t kBlock = size_t{1} << kShift;
  struct Free {
    void operator()(T* block) const { std::free(block); }
  };
  // A block on 2 MiB pages where the kernel has them (transparent huge pages on
  // request): the simulation reads steps all over its blocks, each rank's few at a
  // time, and on 4 KiB pages most such reads missed the TLB too (65,536 ranks, 16 MiB
  // rabenseifner: 12.0 s to simulate on 4 KiB pages, 9.2 s on 2 MiB ones, medians of 3).
  static std::unique_ptr<T[], Free> NewBlock() {
    constexpr size_t kHugePage = size_t{2} << 20;
    constexpr size_t bytes = (kBlock * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, bytes);
    if (memory == nullptr) throw std::bad_alloc();
    madvise(memory, bytes, MADV_HUGEPAGE);
    static_assert(std::is_trivially_destructible_v<T>, "blocks are freed without destructors");
    return std::unique_ptr<T[], Free>(static_cast<T*>(memory));
  }
  std::vector<std::unique_ptr<T[], Free>> blocks_;
  size_t size_ = 0;
};

// How a simulation times the schedules' transfers.
enum class TransferModel : uint8_t {
  kMessages,    // messages over the profile's links (LogGP)
  kNodeEngine,  // the node engine's reads and writes of peers' memory (one node)
  // The same where every rank's buffers are zcoll buffers the node maps
  // (CollectiveArgs::mapped_buffers): a copy from or into a peer's own buffer is then a
  // memcpy, with no system call.
  kNodeEngineMappedBuffers,
};
// Whether `transfers` is one of the node engine's.
inline bool OnNodeEngine(TransferModel transfers) { return transfers != TransferModel::kMessages; }

// Every rank's schedule reduced to what its time depends on, in one flat array.
class TimedSchedules {
 public:
  static constexpr uint32_t kNoPartner = UINT32_MAX;
  static constexpr uint32_t kNoDependents = UINT32_MAX;
  static constexpr uint32_t kOneDependent = uint32_t{1} << 31;

  explicit TimedSchedules(TransferModel transfers = TransferModel::kMessages)
      : transfers_(transfers) {}
  TransferModel transfers() const { return transfers_; }

  // 24 bytes: the simulation's memory is mostly these.
  struct TimedStep {
    uint32_t bytes = 0;
    int32_t peer = kNoPeer;
    // The steps that wait for it: none (kNoDependents), one (kOneDependent | its
    // index: most steps, whose dependents then take no other memory), or where its
    // list is in the dependents (a count, then the steps).
    uint32_t dependents = kNoDependents;
    uint16_t tag = 0;
    StepKind kind = StepKind::kCopy;
    // A Reduce's operands; a Send's or Put's source (kSourceBits): kSourceScratch for a
    // scratch buffer (in the node engine's data flow, a publication's copy in the
    // segment), kSourceWritten for the user's receive buffer after a step of the rank
    // before it wrote it, else 0 (the user's data, which a loop of calls finds again in
    // cache: a link's cached rate applies); its receiving side has the same after
    // MatchTransfers. (The simulation flags a transfer side posted before its partner
    // in its top bits.)
    uint8_t operands = 0;
    uint32_t partner = kNoPartner;  // a transfer's other side (MatchTransfers)
    // The simulation's: dependencies not yet completed until the step starts. (With
    // `partner`, a transfer side posted before its partner keeps its posting's time
    // there until the partner takes it.)
    uint32_t waiting_for = 0;
  };

  static constexpr uint8_t kSourceScratch = 1;
  static constexpr uint8_t kSourceWritten = 2;
  static constexpr uint8_t kSourceBits = 3;

  // Appends the next rank's schedule (ranks in order, from 0); `element_bytes` turns
  // its element counts into bytes. InvalidArgument when a step moves 4 GiB or more, a
  // tag is 2^16 or more (schedules' tags are below 2^kScheduleTagBits), or the steps reach
  // 2^31 - 1 in all.
  absl::Status Add(const Schedule& schedule, size_t element_bytes);

  // Pairs every transfer side with its partner (the step of the peer with the same
  // sender, receiver and tag), so the simulation looks nothing up. Done once after the
  // last Add; InvalidArgument naming the rank and step of a side without a partner or
  // of two transfers with the same sender, receiver and tag.
  absl::Status MatchTransfers();
  bool matched() const { return matched_; }

  int ranks() const { return static_cast<int>(rank_begin_.size()) - 1; }
  size_t num_steps() const { return steps_.size(); }
  const TimedStep& step(size_t index) const { return steps_[index]; }
  TimedStep& mutable_step(size_t index) { return steps_[index]; }
  // Steps of `rank` are [rank_begin(rank), rank_begin(rank + 1)).
  size_t rank_begin(int rank) const { return rank_begin_[rank]; }
  // Calls `visit(dependent)` for each step that depends on step `index`.
  template <typename Visit>
  void ForEachDependent(size_t index, Visit visit) const {
    const uint32_t dependents = steps_[index].dependents;
    if (dependents == kNoDependents) return;
    if ((dependents & kOneDependent) != 0) {
      visit(dependents & ~kOneDependent);
      return;
    }
    const uint32_t count = dependents_[dependents];
    for (uint32_t k = 1; k <= count; ++k) visit(dependents_[dependents + k]);
  }
  // Where step `index`'s list of dependents starts (its count; ForEachDependent reads
  // the steps after it), or null when it has none or one (held in the step).
  const uint32_t* DependentList(size_t index) const {
    const uint32_t dependents = steps_[index].dependents;
    if (dependents == kNoDependents || (dependents & kOneDependent) != 0) return nullptr;
    return &dependents_[dependents];
  }
  // Step `index`'s dependents one by one (k < DependentCount(index)), as ForEachDependent
  // visits them.
  uint32_t DependentCount(size_t index) const {
    const uint32_t dependents = steps_[index].dependents;
    if (dependents == kNoDependents) return 0;
    return (dependents & kOneDependent) != 0 ? 1 : dependents_[dependents];
  }
  uint32_t Dependent(size_t index, uint32_t k) const {
    const uint32_t dependents = steps_[index].dependents;
    return (dependents & kOneDependent) != 0 ? dependents & ~kOneDependent
                                             : dependents_[dependents + 1 + k];
  }
  size_t MemoryBytes() const;

 private:
  TransferModel transfers_;
  BlockArray<TimedStep> steps_;
  BlockArray<uint32_t> dependents_;  // lists of global step indices, each after its count
  std::vector<size_t> rank_begin_ = {0};
  bool matched_ = false;
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
// steps cannot all run (a deadlock), naming the first rank and step left; for the node
// engine's schedules, also when the profile has no engine figures or the ranks span
// nodes. Matches the
// transfers first if they are not yet; uses the steps' `waiting_for` fields (so one
// simulation of `schedules` at a time).
absl::StatusOr<SimulationResult> Simulate(TimedSchedules& schedules, const Topology& topology,
                                          const MachineProfile& profile);

// A lower bound on the time `schedule` (rank schedule.rank()'s, its element counts
// turned into bytes by `element_bytes`) takes under Simulate's model of messages,
// from that rank's own steps alone: the largest of the work its CPU does (the
// overheads, reductions, copies and the bytes a CPU copies) and the time its bytes hold
// its port and its node's NIC. Each of those serves one thing at a time from time 0,
// so the rank's last step cannot complete sooner, whatever the other ranks do. For
// pruning candidates that cannot win (collective_model.h's PredictOptions). 0 for the
// node engine's data flow, which is not bounded here.
double RankLowerBoundUsec(const Schedule& schedule, size_t element_bytes, TransferModel transfers,
                          const Topology& topology, const MachineProfile& profile);

// The link class between two ranks of `topology`.
LinkClass LinkBetween(const Topology& topology, int a, int b);

}  // namespace zcoll::sim

#endif  // ZCOLL_SIM_EVENT_SIMULATION_H_
