#include "collectives/executor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "collectives/algorithms.h"
#include "ops/reduce.h"

namespace zcoll {

// The transport counts waiting messages by the bits above the schedule's tag: the
// call's sequence number (MayHaveStrays).
static_assert(Transport::kCountedCallShift == kScheduleTagBits);
namespace {

constexpr size_t kScratchAlignment = 64;
// A call that has waited this long probes the ranks it waits for (executor.h): long
// enough that a call between ranks that agree has rarely stalled as long (a rank
// busy elsewhere), short beside any deadline.
constexpr absl::Duration kStallProbeAfter = absl::Milliseconds(250);

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// A transfer's group: its peer, its direction and its stage (the schedule tag's bits
// above the chunk's).
uint64_t GroupOf(const Step& step) {
  return (uint64_t{static_cast<uint32_t>(step.peer)} << 32) |
         (uint64_t{step.kind == StepKind::kSend ? 1u : 0u} << 31) | (step.tag >> kChunkTagBits);
}

}  // namespace

uint32_t MixCheck(std::initializer_list<uint64_t> values) {
  uint64_t hash = 0x9e3779b97f4a7c15ull;
  for (uint64_t value : values) {
    hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
    hash *= 0xff51afd7ed558ccdull;
    hash ^= hash >> 33;
  }
  return static_cast<uint32_t>(hash ^ (hash >> 16) ^ (hash >> 32)) & kCheckMask;
}

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
  // Check words: the elements of each group of transfers (a stage's chunks between
  // this rank and one peer, one way). A receiver's group is its sender's, so both
  // sides compute the same sums when their arguments agree.
  absl::flat_hash_map<uint64_t, uint64_t> group_elements;
  for (const Step& step : steps) {
    if (step.kind == StepKind::kSend || step.kind == StepKind::kRecv) {
      group_elements[GroupOf(step)] += step.count();
    }
  }
  step_checks_.assign(steps.size(), 0);
  stage_elements_.assign(steps.size(), 0);
  for (StepId id = 0; id < steps.size(); ++id) {
    const Step& step = steps[id];
    if (step.kind != StepKind::kSend && step.kind != StepKind::kRecv) continue;
    stage_elements_[id] = group_elements[GroupOf(step)];
    step_checks_[id] = MixCheck({stage_elements_[id], step.tag >> kChunkTagBits});
    if (step.kind == StepKind::kRecv) {
      receive_steps_[(uint64_t{static_cast<uint32_t>(step.peer)} << 32) | step.tag] = id;
    }
  }
}

std::optional<StepId> ExecutionPlan::ReceiveStep(int peer, uint64_t tag) const {
  const auto found = receive_steps_.find((uint64_t{static_cast<uint32_t>(peer)} << 32) | tag);
  if (found == receive_steps_.end()) return std::nullopt;
  return found->second;
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
                     void* recv, std::shared_ptr<ScratchArena> scratch, uint32_t check,
                     const char* name, const Predecessors& predecessors)
    : transport_(transport),
      check_mask_(transport.check_bits() >= 32 ? ~uint32_t{0}
                                               : (uint32_t{1} << transport.check_bits()) - 1),
      waiting_by_call_(transport.UnexpectedCountsByCall()),
      can_look_(transport.CanFindUnexpected()),
      op_(PredefinedOp::kSum) {
  Restart(plan, tag_base, type, op, send, recv, std::move(scratch), check, name, predecessors);
}

void Execution::Restart(const std::shared_ptr<const ExecutionPlan>& plan, uint64_t tag_base,
                        DataType type, const ReduceOp& op, const void* send, void* recv,
                        std::shared_ptr<ScratchArena> scratch, uint32_t check, const char* name,
                        const Predecessors& predecessors) {
  if (plan_ != plan) plan_ = plan;
  tag_base_ = tag_base;
  check_ = check;
  name_ = name;
  predecessors_ = predecessors;
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
  probed_ = false;
  if (!probes_.empty()) {
    probes_.erase(
        std::remove_if(probes_.begin(), probes_.end(),
                       [](const std::unique_ptr<Completion>& probe) { return probe->done(); }),
        probes_.end());
  }
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
                                   &completions_[id], nullptr, check_ ^ plan_->step_check(id));
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

absl::Status Execution::CheckWaitingMessages(bool completed) const {
  // Any sender, this call's sequence, any schedule tag.
  constexpr uint64_t kScheduleTags = (uint64_t{1} << kScheduleTagBits) - 1;
  if (const std::optional<Transport::WaitingMessage> waiting =
          transport_.FindUnexpected(-1, tag_base_, kScheduleTags);
      waiting.has_value() && (waiting->tag & kScheduleTags) != kStallProbeTag) {
    const std::optional<StepId> step =
        plan_->ReceiveStep(waiting->peer, waiting->tag & kScheduleTags);
    const bool ours = step.has_value() && !completed &&
                      ((waiting->check ^ check_ ^ plan_->step_check(*step)) & check_mask_) == 0;
    if (!ours) return Stray(*waiting, step.has_value(), completed, /*predecessor=*/false);
  }
  if (!completed) return absl::OkStatus();
  for (size_t i = 0; i < predecessors_.count; ++i) {
    if (const std::optional<Transport::WaitingMessage> waiting =
            transport_.FindUnexpected(-1, predecessors_.tag_bases[i], kScheduleTags);
        waiting.has_value() && (waiting->tag & kScheduleTags) != kStallProbeTag) {
      return Stray(*waiting, true, true, /*predecessor=*/true);
    }
  }
  return absl::OkStatus();
}

Execution::~Execution() {
  // A probe still under way when the call is gone (to a rank that stopped, say) keeps
  // its Completion with the transport, which may still write it. A few bytes, rarely.
  auto pending = std::make_shared<std::vector<std::unique_ptr<Completion>>>();
  for (std::unique_ptr<Completion>& probe : probes_) {
    if (!probe->done()) pending->push_back(std::move(probe));
  }
  if (!pending->empty()) transport_.KeepUntilDestroyed(std::move(pending));
}

Transport::PollResult Execution::Look(absl::Duration waited) {
  if (finished_) return Transport::PollResult::kDone;
  if (waited >= kStallProbeAfter && !probed_) SendProbes();
  absl::Status found = CheckWaitingMessages(/*completed=*/false);
  if (found.ok() && probed_) found = CheckProbes();
  if (found.ok()) return Transport::PollResult::kIdle;
  Fail(std::move(found));
  return Transport::PollResult::kDone;
}

void Execution::SendProbes() {
  probed_ = true;
  // Only where the ranks' probes can be read (FindUnexpected): elsewhere they would
  // only wait forever.
  if (!transport_.CanFindUnexpected()) return;
  for (int peer : PendingPeers()) {
    probes_.push_back(std::make_unique<Completion>());
    if (!transport_
             .PostSend(peer, tag_base_ | kStallProbeTag, nullptr, 0, probes_.back().get(), nullptr,
                       check_)
             .ok()) {
      probes_.pop_back();
    }
  }
}

absl::Status Execution::CheckProbes() {
  // From every rank, not only those this one waits for: a cycle of waits through a
  // tree (this rank waits for one rank, which waits for another, which waits for this
  // one) probes round the cycle.
  for (int peer = 0; peer < transport_.size(); ++peer) {
    if (peer == transport_.rank()) continue;
    const std::optional<Transport::WaitingMessage> probe =
        transport_.FindUnexpected(peer, tag_base_ | kStallProbeTag, 0);
    if (!probe.has_value() || ((probe->check ^ check_) & check_mask_) == 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", transport_.rank(), ": ", name_, ": the ranks disagree on the arguments: rank ",
        peer, " waits in this call with other arguments than this rank's (its check word ",
        absl::Hex(probe->check & check_mask_), ", this rank's ", absl::Hex(check_ & check_mask_),
        "), as this rank does: different roots, counts, types or ops, or forced algorithms "
        "(ZCOLL_CHECK=1 names the argument)"));
  }
  return absl::OkStatus();
}

void Execution::TakeProbes() {
  // Bounded: each probe taken is one receive posted.
  for (int taken = 0; taken < 64; ++taken) {
    const std::optional<Transport::WaitingMessage> probe =
        transport_.FindUnexpected(-1, tag_base_ | kStallProbeTag, 0);
    if (!probe.has_value()) return;
    probes_.push_back(std::make_unique<Completion>());
    if (!transport_
             .PostRecv(probe->peer, tag_base_ | kStallProbeTag, nullptr, 0, probes_.back().get())
             .ok()) {
      probes_.pop_back();
      return;
    }
  }
}

absl::Status Execution::Stray(const Transport::WaitingMessage& waiting, bool has_step,
                              bool completed, bool predecessor) const {
  return absl::InvalidArgumentError(absl::StrCat(
      "rank ", transport_.rank(), ": ", name_, ": the ranks disagree on the arguments: rank ",
      waiting.peer, " sent a message of ",
      predecessor ? "an earlier call that this rank completed without it"
      : completed ? "this call that this rank completed without it"
                  : "this call",
      has_step || predecessor ? "" : ", at a step this rank's schedule does not receive",
      !completed && has_step ? ", with a check word that is not this rank's" : "",
      " (different roots, counts, types or ops, or forced algorithms; ZCOLL_CHECK=1 names "
      "the argument)"));
}

absl::Status Execution::Disagreement(StepId id, const Completion& completion) const {
  const Step& step = plan_->schedule().step(id);
  return absl::InvalidArgumentError(absl::StrCat(
      "rank ", transport_.rank(), ": ", name_, ": the ranks disagree on the arguments: rank ",
      step.peer,
      " sent a message of a call with other arguments than this rank's (its check "
      "word ",
      absl::Hex(completion.check() & check_mask_), ", this rank's ",
      absl::Hex((check_ ^ plan_->step_check(id)) & check_mask_), "); this rank expects ",
      plan_->stage_elements(id) * plan_->element_bytes(), " bytes from rank ", step.peer,
      " in this step, of a ", DataTypeName(type_),
      " call (different counts, types, ops or roots, or forced algorithms; ZCOLL_CHECK=1 "
      "names the argument)"));
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
      // Equal lengths, but a message of another call: chunks of different vectors.
      if (step.kind == StepKind::kRecv &&
          ABSL_PREDICT_FALSE(
              ((completion.check() ^ check_ ^ plan_->step_check(id)) & check_mask_) != 0)) {
        Fail(Disagreement(id, completion));
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
    // A message of this call still waiting is one no receive of it will take: a rank
    // that disagrees (a root that only sends, to a rank that only sends too).
    if (ABSL_PREDICT_FALSE(MayHaveStrays())) {
      if (absl::Status stray = CheckWaitingMessages(/*completed=*/true); !stray.ok()) {
        Fail(std::move(stray));
        return Transport::PollResult::kDone;
      }
    }
    if (ABSL_PREDICT_FALSE(probed_)) TakeProbes();
    finished_ = true;
    return Transport::PollResult::kDone;
  }
  return advanced ? Transport::PollResult::kAdvanced : Transport::PollResult::kIdle;
}

}  // namespace zcoll
