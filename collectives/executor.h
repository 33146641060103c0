// The executor: runs one rank's Schedule over a transport (docs/design.md, "A call, end to end").
//
// An ExecutionPlan is a Schedule prepared once (who waits for whom, where the scratch
// buffers lie) and reused by every call with the same arguments. An Execution runs a
// plan over the user's buffers: it posts every transfer whose dependencies are met,
// runs reductions (ops/ kernels) and copies the moment their inputs are in place,
// and releases the steps that waited for them. Many transfers are in flight at once,
// so chunks of one stage overlap the next stage's (pipelining), and the transport
// moves large messages zero-copy (rendezvous into the destination).
//
// Transfers carry the schedule's tag below kScheduleTagBits and `tag_base` above it
// (the collective's sequence number), so consecutive collectives never match each
// other's messages. A failed transfer, or a message of the wrong length, ends the
// execution with that error; the caller turns it into the job's failure.
//
// Every message also carries a check word (Transport::PostSend): the call's (a hash
// of what every rank passes alike: the collective, its algorithm, root, count, type
// and op) mixed with the message's step: the elements that stage of the schedule
// moves between the two ranks, summed over its chunks. The receiver expects the same
// word; one that differs means the ranks disagree, which ends the execution at once,
// at the first message, even where the chunks match in size (a rank with 2^19
// elements and one with 2^20, chunked alike, used to exchange their first chunks
// and return OK on one side and wait for the deadline on the other).
//
// Ranks that disagree where no message shows it are found from the messages that
// wait for a receive (Transport::FindUnexpected), where the provider can look:
// when the call completes, one of it or of the calls just before it that still
// waits will never be received (a Bcast's root that only sends, to a rank that took
// its data from another root); and a call that waits long (kStallProbeAfter) sends an
// empty probe with its check word to each rank it waits for, on the call's reserved
// tag, and reads the probes of the ranks that wait for it: a word that is not its
// own means both wait on a call the other does not make (a Reduce whose ranks name
// different roots: both "roots" wait for each other's contribution). Either ends the
// call with the error, naming the other rank, long before the deadline.

#ifndef ZCOLL_COLLECTIVES_EXECUTOR_H_
#define ZCOLL_COLLECTIVES_EXECUTOR_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collectives/algorithms.h"
#include "collectives/call_execution.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "core/schedule.h"
#include "transport/transport.h"

namespace zcoll {

class ExecutionPlan {
 public:
  ExecutionPlan(Schedule schedule, size_t element_bytes);

  const Schedule& schedule() const { return schedule_; }
  size_t element_bytes() const { return element_bytes_; }
  size_t scratch_bytes() const { return scratch_bytes_; }
  size_t scratch_offset(uint32_t index) const { return scratch_offsets_[index]; }
  // How many steps each step waits for, by step.
  absl::Span<const uint32_t> dependency_counts() const { return dependency_counts_; }
  absl::Span<const StepId> dependents(StepId step) const {
    return absl::MakeConstSpan(dependents_)
        .subspan(dependents_begin_[step], dependents_begin_[step + 1] - dependents_begin_[step]);
  }
  // Steps that depend on nothing, in schedule order.
  absl::Span<const StepId> initial_steps() const { return initial_steps_; }
  // A transfer step's part of its messages' check word, and the elements its stage
  // moves between this rank and the step's peer in that direction.
  uint32_t step_check(StepId step) const { return step_checks_[step]; }
  uint64_t stage_elements(StepId step) const { return stage_elements_[step]; }
  // The receive step from `peer` with schedule tag `tag`, if there is one.
  std::optional<StepId> ReceiveStep(int peer, uint64_t tag) const;

 private:
  Schedule schedule_;
  size_t element_bytes_;
  size_t scratch_bytes_ = 0;
  std::vector<size_t> scratch_offsets_;
  std::vector<uint32_t> dependency_counts_;
  std::vector<uint32_t> dependents_begin_;
  std::vector<StepId> dependents_;
  std::vector<StepId> initial_steps_;
  std::vector<uint32_t> step_checks_;
  std::vector<uint64_t> stage_elements_;
  absl::flat_hash_map<uint64_t, StepId> receive_steps_;  // by (peer, tag)
};

// The hash of a few integers into a check word's bits (kCheckMask).
uint32_t MixCheck(std::initializer_list<uint64_t> values);

// Scratch memory, reused from call to call (fresh pages would cost a page fault per
// 4 KiB every time).
class ScratchArena {
 public:
  explicit ScratchArena(size_t bytes);
  size_t bytes() const { return bytes_; }
  char* data() { return data_; }

 private:
  std::unique_ptr<char[]> storage_;
  char* data_;
  size_t bytes_;
};

// Free arenas of one communicator (used by one thread at a time).
class ScratchPool {
 public:
  // An arena of at least `bytes`.
  std::shared_ptr<ScratchArena> Acquire(size_t bytes);
  void Release(std::shared_ptr<ScratchArena> arena);

 private:
  std::vector<std::shared_ptr<ScratchArena>> free_;
};

class Execution final : public CallExecution {
 public:
  // `send` and `recv` are the user's buffers (kSend and kRecv of the schedule);
  // `scratch` holds at least plan->scratch_bytes().
  // The tag bases of calls of the same communicator that had all completed when this
  // one started (the last few): a message of theirs that still waits for a receive
  // when this one completes was never to be received.
  // The calls just before this one whose messages it looks for (the first `count`
  // of tag_bases; the rest hold this call's own tag base).
  struct Predecessors {
    std::array<uint64_t, 2> tag_bases{};
    size_t count = 0;
  };

  // `check` is the call's check word; `name` the collective's, for messages.
  Execution(const std::shared_ptr<const ExecutionPlan>& plan, Transport& transport,
            uint64_t tag_base, DataType type, const ReduceOp& op, const void* send, void* recv,
            std::shared_ptr<ScratchArena> scratch, uint32_t check, const char* name,
            const Predecessors& predecessors);
  ~Execution() override;
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  // Runs another call, reusing this one's memory (a small collective should not
  // allocate). Only after this execution finished without error: nothing of it may
  // still be pending in the transport.
  void Restart(const std::shared_ptr<const ExecutionPlan>& plan, uint64_t tag_base, DataType type,
               const ReduceOp& op, const void* send, void* recv,
               std::shared_ptr<ScratchArena> scratch, uint32_t check, const char* name,
               const Predecessors& predecessors);

  // Runs what can run now: kDone when every step has completed or one failed.
  Transport::PollResult Advance() override;
  // For a caller that has waited `waited` so far: probes the ranks this call waits
  // for once it has waited kStallProbeAfter, and looks at what waits for a receive.
  // kDone when that found the ranks disagreeing (the execution then has failed).
  Transport::PollResult Look(absl::Duration waited) override;
  // The peers of the transfers still in flight, ascending (whom it waits for).
  std::vector<int> PendingPeers() const override;
  std::shared_ptr<ScratchArena> TakeScratch() override { return std::move(scratch_); }

 private:
  char* Address(const Slice& slice) const;
  // Starts `step`: posts a transfer, or runs a local step at once (then it is done).
  void Start(StepId step);
  void Completed(StepId step);
  void Fail(absl::Status status);
  // The error of a message whose check word is not this call's.
  absl::Status Disagreement(StepId step, const Completion& completion) const;
  // Looks at a message of this call that waits for a receive (the provider's
  // FindUnexpected): once every step has completed (`completed`) any such message is
  // one this rank will never receive, as is one of a predecessor; before, one whose
  // step this rank does not have, or whose check word is not the step's, cannot be
  // for this call either. Either way the ranks disagree: an error naming the sender.
  absl::Status CheckWaitingMessages(bool completed) const;
  // Whether a message of this call or its predecessors may wait: every call asks, so
  // where the transport counts waiting messages by call this reads three counters
  // (Predecessors fills the entries past `count` with this call's own tag base);
  // where it cannot count, whether it can look at all.
  bool MayHaveStrays() const {
    if (waiting_by_call_.empty()) return can_look_;
    const std::atomic<int32_t>* counts = waiting_by_call_.data();
    const auto waiting = [counts](uint64_t tag_base) {
      return counts[(tag_base >> Transport::kCountedCallShift) % Transport::kCountedCalls].load(
          std::memory_order_relaxed);
    };
    return (waiting(tag_base_) | waiting(predecessors_.tag_bases[0]) |
            waiting(predecessors_.tag_bases[1])) != 0;
  }
  absl::Status Stray(const Transport::WaitingMessage& waiting, bool has_step, bool completed,
                     bool predecessor) const;
  // The probes: sends to the ranks it waits for, once; and the probes from them.
  void SendProbes();
  absl::Status CheckProbes();
  // Takes this call's probes that wait for a receive, when it completes.
  void TakeProbes();

  std::shared_ptr<const ExecutionPlan> plan_;
  Transport& transport_;
  const uint32_t check_mask_;  // the bits of a check word the transport carries
  // The transport's counts of waiting messages by call, if it keeps them.
  const absl::Span<const std::atomic<int32_t>> waiting_by_call_;
  const bool can_look_;  // the transport's CanFindUnexpected
  uint64_t tag_base_;
  uint32_t check_ = 0;
  const char* name_ = "";
  Predecessors predecessors_;
  DataType type_;
  ReduceOp op_;
  const char* send_;
  char* recv_;
  std::shared_ptr<ScratchArena> scratch_;
  std::unique_ptr<Completion[]> completions_;
  size_t completions_capacity_ = 0;
  std::vector<uint32_t> waiting_;  // unmet dependencies by step
  std::vector<StepId> ready_;
  size_t ready_head_ = 0;
  std::vector<StepId> in_flight_;
  size_t completed_ = 0;
  bool probed_ = false;
  // Probe transfers, kept until done (they may outlive the call): an empty send or
  // receive each.
  std::vector<std::unique_ptr<Completion>> probes_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_EXECUTOR_H_
