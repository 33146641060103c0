// The executor: runs one rank's Schedule over a transport (DESIGN.md step 4).
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

#ifndef ZCOLL_COLLECTIVES_EXECUTOR_H_
#define ZCOLL_COLLECTIVES_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
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

 private:
  Schedule schedule_;
  size_t element_bytes_;
  size_t scratch_bytes_ = 0;
  std::vector<size_t> scratch_offsets_;
  std::vector<uint32_t> dependency_counts_;
  std::vector<uint32_t> dependents_begin_;
  std::vector<StepId> dependents_;
  std::vector<StepId> initial_steps_;
};

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

class Execution {
 public:
  // `send` and `recv` are the user's buffers (kSend and kRecv of the schedule);
  // `scratch` holds at least plan->scratch_bytes().
  Execution(const std::shared_ptr<const ExecutionPlan>& plan, Transport& transport,
            uint64_t tag_base, DataType type, const ReduceOp& op, const void* send, void* recv,
            std::shared_ptr<ScratchArena> scratch);
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  // Runs another call, reusing this one's memory (a small collective should not
  // allocate). Only after this execution finished without error: nothing of it may
  // still be pending in the transport.
  void Restart(const std::shared_ptr<const ExecutionPlan>& plan, uint64_t tag_base, DataType type,
               const ReduceOp& op, const void* send, void* recv,
               std::shared_ptr<ScratchArena> scratch);

  // Runs what can run now: kDone when every step has completed or one failed.
  Transport::PollResult Advance();
  bool finished() const { return finished_; }
  // The peers of the transfers still in flight, ascending (whom it waits for).
  std::vector<int> PendingPeers() const;
  // The first error; OK when finished without one.
  const absl::Status& status() const { return status_; }
  std::shared_ptr<ScratchArena> TakeScratch() { return std::move(scratch_); }

 private:
  char* Address(const Slice& slice) const;
  // Starts `step`: posts a transfer, or runs a local step at once (then it is done).
  void Start(StepId step);
  void Completed(StepId step);
  void Fail(absl::Status status);

  std::shared_ptr<const ExecutionPlan> plan_;
  Transport& transport_;
  uint64_t tag_base_;
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
  bool finished_ = false;
  absl::Status status_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_EXECUTOR_H_
