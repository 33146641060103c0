#include "collectives/executor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ops/reduce.h"

namespace zcoll {
namespace {

constexpr size_t kScratchAlignment = 64;

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

ExecutionPlan::ExecutionPlan(Schedule schedule, size_t element_bytes)
    : schedule_(std::move(schedule)), element_bytes_(element_bytes) {
  for (size_t i = 0; i < schedule_.num_scratch(); ++i) {
    scratch_offsets_.push_back(scratch_bytes_);
    scratch_bytes_ +=
        RoundUp(schedule_.BufferCount(BufferId::Scratch(static_cast<uint32_t>(i))) * element_bytes_,
                kScratchAlignment);
  }
  const absl::Span<const Step> steps = schedule_.steps();
  dependency_counts_.resize(steps.size());
  dependents_begin_.assign(steps.size() + 1, 0);
  for (StepId id = 0; id < steps.size(); ++id) {
    dependency_counts_[id] = static_cast<uint32_t>(steps[id].deps.size());
    if (steps[id].deps.empty()) initial_steps_.push_back(id);
    for (StepId dep : steps[id].deps) ++dependents_begin_[dep + 1];
  }
  for (size_t i = 1; i < dependents_begin_.size(); ++i) {
    dependents_begin_[i] += dependents_begin_[i - 1];
  }
  dependents_.resize(dependents_begin_.back());
  std::vector<uint32_t> filled(steps.size(), 0);
  for (StepId id = 0; id < steps.size(); ++id) {
    for (StepId dep : steps[id].deps) dependents_[dependents_begin_[dep] + filled[dep]++] = id;
  }
}

ScratchArena::ScratchArena(size_t bytes)
    : storage_(new char[bytes + kScratchAlignment]), bytes_(bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(storage_.get());
  data_ = storage_.get() + (RoundUp(at, kScratchAlignment) - at);
}

std::shared_ptr<ScratchArena> ScratchPool::Acquire(size_t bytes) {
  if (bytes == 0) return nullptr;
  // The smallest free arena that fits; else replace the largest (grow).
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if ((*it)->bytes() >= bytes && (best == free_.end() || (*it)->bytes() < (*best)->bytes())) {
      best = it;
    }
  }
  if (best != free_.end()) {
    std::shared_ptr<ScratchArena> arena = std::move(*best);
    free_.erase(best);
    return arena;
  }
  if (!free_.empty()) {
    free_.erase(std::max_element(free_.begin(), free_.end(), [](const auto& a, const auto& b) {
      return a->bytes() < b->bytes();
    }));
  }
  return std::make_shared<ScratchArena>(bytes);
}

void ScratchPool::Release(std::shared_ptr<ScratchArena> arena) {
  // A few arenas serve the nonblocking collectives in flight together; more would
  // only hold memory.
  constexpr size_t kMaxFree = 4;
  if (arena == nullptr) return;
  if (free_.size() >= kMaxFree) free_.erase(free_.begin());
  free_.push_back(std::move(arena));
}

Execution::Execution(const std::shared_ptr<const ExecutionPlan>& plan, Transport& transport,
                     uint64_t tag_base, DataType type, const ReduceOp& op, const void* send,
                     void* recv, std::shared_ptr<ScratchArena> scratch)
    : transport_(transport), op_(PredefinedOp::kSum) {
  Restart(plan, tag_base, type, op, send, recv, std::move(scratch));
}

void Execution::Restart(const std::shared_ptr<const ExecutionPlan>& plan, uint64_t tag_base,
                        DataType type, const ReduceOp& op, const void* send, void* recv,
                        std::shared_ptr<ScratchArena> scratch) {
  if (plan_ != plan) plan_ = plan;
  tag_base_ = tag_base;
  type_ = type;
  if (op_ != op) op_ = op;
  send_ = static_cast<const char*>(send);
  recv_ = static_cast<char*>(recv);
  scratch_ = std::move(scratch);
  const size_t steps = plan_->schedule().steps().size();
  if (steps > completions_capacity_) {
    completions_ = std::make_unique<Completion[]>(steps);
    completions_capacity_ = steps;
  } else {
    for (size_t id = 0; id < steps; ++id) completions_[id].Reset();
  }
  // Sized, then copied: cheaper than assign for the few steps of a small collective.
  const absl::Span<const uint32_t> counts = plan_->dependency_counts();
  waiting_.resize(counts.size());
  std::copy(counts.begin(), counts.end(), waiting_.begin());
  const absl::Span<const StepId> initial = plan_->initial_steps();
  ready_.reserve(steps);
  ready_.resize(initial.size());
  std::copy(initial.begin(), initial.end(), ready_.begin());
  ready_head_ = 0;
  in_flight_.clear();
  completed_ = 0;
  finished_ = steps == 0;
  if (!status_.ok()) status_ = absl::OkStatus();
}

char* Execution::Address(const Slice& slice) const {
  const size_t at = slice.offset * plan_->element_bytes();
  switch (slice.buffer.kind) {
    case BufferKind::kSend:
      return const_cast<char*>(send_) + at;
    case BufferKind::kRecv:
      return recv_ + at;
    case BufferKind::kScratch:
      // Scratch buffers of no elements leave the plan without an arena.
      if (scratch_ == nullptr) return nullptr;
      return scratch_->data() + plan_->scratch_offset(slice.buffer.scratch_index) + at;
  }
  return nullptr;
}

void Execution::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  finished_ = true;
}

void Execution::Start(StepId id) {
  const Step& step = plan_->schedule().step(id);
  const size_t bytes = step.count() * plan_->element_bytes();
  absl::Status status;
  switch (step.kind) {
    case StepKind::kSend:
      status = transport_.PostSend(step.peer, tag_base_ | step.tag, Address(step.inputs[0]), bytes,
                                   &completions_[id]);
      break;
    case StepKind::kRecv:
      status = transport_.PostRecv(step.peer, tag_base_ | step.tag, Address(step.output), bytes,
                                   &completions_[id]);
      break;
    case StepKind::kPut:
    case StepKind::kGet:
      status = absl::UnimplementedError(
          absl::StrCat("rank ", transport_.rank(), ": the executor does not run one-sided ",
                       StepKindName(step.kind), " steps; no zcoll algorithm emits them"));
      break;
    case StepKind::kReduce: {
      absl::InlinedVector<const void*, 8> inputs;
      for (const Slice& input : step.inputs) inputs.push_back(Address(input));
      status = ReduceMany(op_, type_, inputs, Address(step.output), step.output.count);
      if (status.ok()) {
        Completed(id);
      } else {
        status = absl::Status(status.code(),
                              absl::StrCat("rank ", transport_.rank(), ": ", status.message()));
      }
      break;
    }
    case StepKind::kCopy:
      if (bytes > 0) std::memcpy(Address(step.output), Address(step.inputs[0]), bytes);
      Completed(id);
      break;
  }
  if (!status.ok()) {
    Fail(std::move(status));
  } else if (step.is_transfer()) {
    in_flight_.push_back(id);
  }
}

void Execution::Completed(StepId id) {
  ++completed_;
  for (StepId dependent : plan_->dependents(id)) {
    if (--waiting_[dependent] == 0) ready_.push_back(dependent);
  }
}

std::vector<int> Execution::PendingPeers() const {
  std::vector<int> peers;
  for (StepId id : in_flight_) peers.push_back(plan_->schedule().step(id).peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

Transport::PollResult Execution::Advance() {
  if (finished_) return Transport::PollResult::kDone;
  bool advanced = false;
  for (;;) {
    bool moved = false;
    for (size_t i = 0; i < in_flight_.size();) {
      const StepId id = in_flight_[i];
      const Completion& completion = completions_[id];
      if (!completion.done()) {
        ++i;
        continue;
      }
      if (!completion.status().ok()) {
        Fail(completion.status());
        return Transport::PollResult::kDone;
      }
      const Step& step = plan_->schedule().step(id);
      const size_t expected = step.count() * plan_->element_bytes();
      if (step.kind == StepKind::kRecv && completion.bytes() != expected) {
        Fail(absl::InvalidArgumentError(
            absl::StrCat("rank ", transport_.rank(), ": rank ", step.peer, " sent ",
                         completion.bytes(), " bytes where ", expected,
                         " were expected; the ranks passed different counts, types or roots")));
        return Transport::PollResult::kDone;
      }
      in_flight_[i] = in_flight_.back();
      in_flight_.pop_back();
      Completed(id);
      moved = true;
    }
    while (ready_head_ < ready_.size()) {
      Start(ready_[ready_head_++]);
      if (finished_) return Transport::PollResult::kDone;
      moved = true;
    }
    if (!moved) break;
    advanced = true;
  }
  if (completed_ == waiting_.size()) {
    finished_ = true;
    return Transport::PollResult::kDone;
  }
  return advanced ? Transport::PollResult::kAdvanced : Transport::PollResult::kIdle;
}

}  // namespace zcoll
