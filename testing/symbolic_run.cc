#include "testing/symbolic_run.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace zcoll::testing {
namespace {

struct RankState {
  const Schedule* schedule;
  SymbolicBuffers* buffers;
  std::vector<std::vector<SymbolicValue>> scratch;
  std::vector<bool> done;
  std::vector<uint32_t> waiting;  // unmet dependencies
  std::vector<std::vector<StepId>> dependents;

  std::vector<SymbolicValue>& Buffer(BufferId buffer) {
    switch (buffer.kind) {
      case BufferKind::kSend:
        return buffers->send;
      case BufferKind::kRecv:
        return buffers->recv;
      case BufferKind::kScratch:
        break;
    }
    return scratch[buffer.scratch_index];
  }
};

absl::Status CheckSlice(RankState& state, const Slice& slice, StepId step) {
  if (slice.end() > state.Buffer(slice.buffer).size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", state.schedule->rank(), " step ", step,
                     " reaches past its buffer: ", state.schedule->StepToString(step)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSymbolically(absl::Span<const Schedule> schedules,
                             std::vector<SymbolicBuffers>& buffers) {
  const int size = static_cast<int>(schedules.size());
  std::vector<RankState> ranks(size);
  // Ready steps (dependencies met) not yet run, and transfers waiting for a partner.
  std::vector<std::pair<int, StepId>> ready;
  using Key = std::tuple<int, int, uint32_t>;  // sender, receiver, tag
  std::map<Key, std::pair<int, StepId>> waiting_sends, waiting_recvs;
  for (int r = 0; r < size; ++r) {
    RankState& state = ranks[r];
    state.schedule = &schedules[r];
    state.buffers = &buffers[r];
    for (size_t i = 0; i < schedules[r].num_scratch(); ++i) {
      state.scratch.emplace_back(
          schedules[r].BufferCount(BufferId::Scratch(static_cast<uint32_t>(i))),
          SymbolicValue{{kUnwritten, 0}});
    }
    const absl::Span<const Step> steps = schedules[r].steps();
    state.done.assign(steps.size(), false);
    state.waiting.resize(steps.size());
    state.dependents.resize(steps.size());
    for (StepId id = 0; id < steps.size(); ++id) {
      state.waiting[id] = static_cast<uint32_t>(steps[id].deps.size());
      for (StepId dep : steps[id].deps) state.dependents[dep].push_back(id);
      if (steps[id].deps.empty()) ready.emplace_back(r, id);
    }
  }
  auto complete = [&](int r, StepId id) {
    RankState& state = ranks[r];
    state.done[id] = true;
    for (StepId dependent : state.dependents[id]) {
      if (--state.waiting[dependent] == 0) ready.emplace_back(r, dependent);
    }
  };
  auto transfer = [&](int sender, StepId send, int receiver, StepId recv) -> absl::Status {
    const Step& from = schedules[sender].step(send);
    const Step& to = schedules[receiver].step(recv);
    RETURN_IF_ERROR(CheckSlice(ranks[sender], from.inputs[0], send));
    RETURN_IF_ERROR(CheckSlice(ranks[receiver], to.output, recv));
    if (from.inputs[0].count != to.output.count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", sender, " sends ", from.inputs[0].count, " elements to rank ", receiver,
          " which receives ", to.output.count, ": ", schedules[sender].StepToString(send)));
    }
    std::vector<SymbolicValue>& source = ranks[sender].Buffer(from.inputs[0].buffer);
    std::vector<SymbolicValue>& destination = ranks[receiver].Buffer(to.output.buffer);
    for (size_t i = 0; i < to.output.count; ++i) {
      destination[to.output.offset + i] = source[from.inputs[0].offset + i];
    }
    complete(sender, send);
    complete(receiver, recv);
    return absl::OkStatus();
  };
  while (!ready.empty()) {
    const auto [r, id] = ready.back();
    ready.pop_back();
    RankState& state = ranks[r];
    const Step& step = schedules[r].step(id);
    switch (step.kind) {
      case StepKind::kSend: {
        const Key key{r, step.peer, step.tag};
        auto partner = waiting_recvs.find(key);
        if (partner == waiting_recvs.end()) {
          waiting_sends.emplace(key, std::make_pair(r, id));
        } else {
          const auto [receiver, recv] = partner->second;
          waiting_recvs.erase(partner);
          RETURN_IF_ERROR(transfer(r, id, receiver, recv));
        }
        break;
      }
      case StepKind::kRecv: {
        const Key key{step.peer, r, step.tag};
        auto partner = waiting_sends.find(key);
        if (partner == waiting_sends.end()) {
          waiting_recvs.emplace(key, std::make_pair(r, id));
        } else {
          const auto [sender, send] = partner->second;
          waiting_sends.erase(partner);
          RETURN_IF_ERROR(transfer(sender, send, r, id));
        }
        break;
      }
      case StepKind::kReduce: {
        for (const Slice& input : step.inputs) RETURN_IF_ERROR(CheckSlice(state, input, id));
        RETURN_IF_ERROR(CheckSlice(state, step.output, id));
        std::vector<SymbolicValue> result(step.output.count);
        for (size_t i = 0; i < step.output.count; ++i) {
          for (const Slice& input : step.inputs) {
            const SymbolicValue& operand = state.Buffer(input.buffer)[input.offset + i];
            result[i].insert(result[i].end(), operand.begin(), operand.end());
          }
        }
        std::vector<SymbolicValue>& output = state.Buffer(step.output.buffer);
        for (size_t i = 0; i < step.output.count; ++i) {
          output[step.output.offset + i] = std::move(result[i]);
        }
        complete(r, id);
        break;
      }
      case StepKind::kCopy: {
        RETURN_IF_ERROR(CheckSlice(state, step.inputs[0], id));
        RETURN_IF_ERROR(CheckSlice(state, step.output, id));
        const std::vector<SymbolicValue> copied(
            state.Buffer(step.inputs[0].buffer).begin() + step.inputs[0].offset,
            state.Buffer(step.inputs[0].buffer).begin() + step.inputs[0].end());
        std::copy(copied.begin(), copied.end(),
                  state.Buffer(step.output.buffer).begin() + step.output.offset);
        complete(r, id);
        break;
      }
      case StepKind::kPut:
      case StepKind::kGet:
        return absl::UnimplementedError(
            absl::StrCat("RunSymbolically does not model one-sided steps: rank ", r, " ",
                         schedules[r].StepToString(id)));
    }
  }
  for (int r = 0; r < size; ++r) {
    for (StepId id = 0; id < ranks[r].done.size(); ++id) {
      if (!ranks[r].done[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat("deadlock: rank ", r, " never completes ", schedules[r].StepToString(id)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace zcoll::testing
