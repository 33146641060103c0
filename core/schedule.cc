#include "core/schedule.h"

#include <algorithm>
#include <deque>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace zcoll {
namespace {

std::string BufferName(BufferId buffer) {
  switch (buffer.kind) {
    case BufferKind::kSend:
      return "send";
    case BufferKind::kRecv:
      return "recv";
    case BufferKind::kScratch:
      return absl::StrCat("scratch", buffer.scratch_index);
  }
  return "?";
}

std::string SliceToString(const Slice& slice) {
  return absl::StrCat(BufferName(slice.buffer), "[", slice.offset, ",+", slice.count, ")");
}

bool IsSenderSide(StepKind kind) { return kind == StepKind::kSend || kind == StepKind::kPut; }

Step MakeStep(StepKind kind, int peer = kNoPeer, uint32_t tag = 0) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.tag = tag;
  return step;
}

}  // namespace

absl::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kSend:
      return "send";
    case StepKind::kRecv:
      return "recv";
    case StepKind::kPut:
      return "put";
    case StepKind::kGet:
      return "get";
    case StepKind::kReduce:
      return "reduce";
    case StepKind::kCopy:
      return "copy";
  }
  return "?";
}

Schedule::Schedule(int rank, int size, size_t send_count, size_t recv_count)
    : rank_(rank), size_(size), send_count_(send_count), recv_count_(recv_count) {}

BufferId Schedule::AddScratch(size_t count) {
  scratch_counts_.push_back(count);
  return BufferId::Scratch(static_cast<uint32_t>(scratch_counts_.size() - 1));
}

size_t Schedule::BufferCount(BufferId buffer) const {
  switch (buffer.kind) {
    case BufferKind::kSend:
      return send_count_;
    case BufferKind::kRecv:
      return recv_count_;
    case BufferKind::kScratch:
      return buffer.scratch_index < scratch_counts_.size() ? scratch_counts_[buffer.scratch_index]
                                                           : 0;
  }
  return 0;
}

StepId Schedule::Add(Step step, absl::Span<const StepId> deps) {
  step.deps.assign(deps.begin(), deps.end());
  steps_.push_back(std::move(step));
  return static_cast<StepId>(steps_.size() - 1);
}

StepId Schedule::Send(int peer, uint32_t tag, Slice source, absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kSend, peer, tag);
  step.inputs.push_back(source);
  return Add(std::move(step), deps);
}

StepId Schedule::Recv(int peer, uint32_t tag, Slice destination, absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kRecv, peer, tag);
  step.output = destination;
  return Add(std::move(step), deps);
}

StepId Schedule::Put(int peer, uint32_t tag, Slice source, Slice remote_destination,
                     absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kPut, peer, tag);
  step.inputs.push_back(source);
  step.remote = remote_destination;
  return Add(std::move(step), deps);
}

StepId Schedule::Get(int peer, uint32_t tag, Slice remote_source, Slice destination,
                     absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kGet, peer, tag);
  step.output = destination;
  step.remote = remote_source;
  return Add(std::move(step), deps);
}

StepId Schedule::Reduce(absl::Span<const Slice> operands, Slice destination,
                        absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kReduce);
  step.inputs.assign(operands.begin(), operands.end());
  step.output = destination;
  return Add(std::move(step), deps);
}

StepId Schedule::Copy(Slice source, Slice destination, absl::Span<const StepId> deps) {
  Step step = MakeStep(StepKind::kCopy);
  step.inputs.push_back(source);
  step.output = destination;
  return Add(std::move(step), deps);
}

std::string Schedule::StepToString(StepId id) const {
  const Step& step = steps_[id];
  std::string text = absl::StrCat("#", id, " ", StepKindName(step.kind));
  switch (step.kind) {
    case StepKind::kSend:
      absl::StrAppend(&text, " to ", step.peer, " tag ", step.tag, " <- ",
                      SliceToString(step.inputs.front()));
      break;
    case StepKind::kRecv:
      absl::StrAppend(&text, " from ", step.peer, " tag ", step.tag, " -> ",
                      SliceToString(step.output));
      break;
    case StepKind::kPut:
      absl::StrAppend(&text, " to ", step.peer, " tag ", step.tag, " ",
                      SliceToString(step.inputs.front()), " -> remote ",
                      SliceToString(step.remote));
      break;
    case StepKind::kGet:
      absl::StrAppend(&text, " from ", step.peer, " tag ", step.tag, " remote ",
                      SliceToString(step.remote), " -> ", SliceToString(step.output));
      break;
    case StepKind::kReduce: {
      std::vector<std::string> operands;
      for (const Slice& slice : step.inputs) operands.push_back(SliceToString(slice));
      absl::StrAppend(&text, " ", SliceToString(step.output), " = ",
                      absl::StrJoin(operands, " op "));
      break;
    }
    case StepKind::kCopy:
      absl::StrAppend(&text, " ", SliceToString(step.inputs.front()), " -> ",
                      SliceToString(step.output));
      break;
  }
  if (!step.deps.empty()) {
    absl::StrAppend(&text, " after ",
                    absl::StrJoin(step.deps, ",", [](std::string* out, StepId dep) {
                      absl::StrAppend(out, "#", dep);
                    }));
  }
  return text;
}

std::string Schedule::ToString() const {
  std::string text;
  for (StepId id = 0; id < steps_.size(); ++id) absl::StrAppend(&text, StepToString(id), "\n");
  return text;
}

absl::Status Schedule::Validate() const {
  auto error = [this](StepId id, absl::string_view problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule of rank ", rank_, ", step ", StepToString(id), ": ", problem));
  };
  auto check_slice = [&](StepId id, const Slice& slice, bool written) -> absl::Status {
    if (slice.buffer.kind == BufferKind::kScratch &&
        slice.buffer.scratch_index >= scratch_counts_.size()) {
      return error(id, absl::StrCat("scratch buffer ", slice.buffer.scratch_index,
                                    " does not exist (", scratch_counts_.size(), " allocated)"));
    }
    const size_t capacity = BufferCount(slice.buffer);
    if (slice.offset > capacity || slice.count > capacity - slice.offset) {
      return error(id,
                   absl::StrCat("slice ", SliceToString(slice), " ends past its ",
                                BufferName(slice.buffer), " buffer of ", capacity, " elements"));
    }
    if (written && slice.buffer.kind == BufferKind::kSend) {
      return error(id, "writes the send buffer, which is read-only");
    }
    return absl::OkStatus();
  };

  for (StepId id = 0; id < steps_.size(); ++id) {
    const Step& step = steps_[id];
    for (StepId dep : step.deps) {
      if (dep >= id) {
        return error(id, absl::StrCat("depends on #", dep, ", which is not an earlier step"));
      }
    }
    const bool transfer = step.kind == StepKind::kSend || step.kind == StepKind::kRecv ||
                          step.kind == StepKind::kPut || step.kind == StepKind::kGet;
    if (transfer && (step.peer < 0 || step.peer >= size_ || step.peer == rank_)) {
      return error(id, absl::StrCat("peer ", step.peer, " is not another rank of the ", size_,
                                    "-rank communicator"));
    }
    if (!transfer && step.peer != kNoPeer) {
      return error(id, "a local step names a peer");
    }
    switch (step.kind) {
      case StepKind::kSend:
        if (step.inputs.size() != 1) return error(id, "a send needs one source");
        RETURN_IF_ERROR(check_slice(id, step.inputs.front(), /*written=*/false));
        break;
      case StepKind::kRecv:
        RETURN_IF_ERROR(check_slice(id, step.output, /*written=*/true));
        break;
      case StepKind::kPut:
        if (step.inputs.size() != 1) return error(id, "a put needs one source");
        RETURN_IF_ERROR(check_slice(id, step.inputs.front(), /*written=*/false));
        if (step.remote.count != step.inputs.front().count) {
          return error(id, "source and remote destination differ in length");
        }
        if (step.remote.buffer.kind == BufferKind::kSend) {
          return error(id, "writes the peer's send buffer, which is read-only");
        }
        break;
      case StepKind::kGet:
        RETURN_IF_ERROR(check_slice(id, step.output, /*written=*/true));
        if (step.remote.count != step.output.count) {
          return error(id, "remote source and destination differ in length");
        }
        break;
      case StepKind::kReduce:
        if (step.inputs.size() < 2) return error(id, "a reduce needs at least two operands");
        RETURN_IF_ERROR(check_slice(id, step.output, /*written=*/true));
        for (const Slice& operand : step.inputs) {
          RETURN_IF_ERROR(check_slice(id, operand, /*written=*/false));
          if (operand.count != step.output.count) {
            return error(id, "operands and destination differ in length");
          }
          // Element-wise kernels may write an operand in place, never a shifted copy.
          if (operand.Overlaps(step.output) && !(operand == step.output)) {
            return error(
                id, absl::StrCat("destination partly overlaps operand ", SliceToString(operand)));
          }
        }
        break;
      case StepKind::kCopy:
        if (step.inputs.size() != 1) return error(id, "a copy needs one source");
        RETURN_IF_ERROR(check_slice(id, step.inputs.front(), /*written=*/false));
        RETURN_IF_ERROR(check_slice(id, step.output, /*written=*/true));
        if (step.inputs.front().count != step.output.count) {
          return error(id, "source and destination differ in length");
        }
        if (step.inputs.front().Overlaps(step.output)) {
          return error(id, "source and destination overlap");
        }
        break;
    }
  }
  return absl::OkStatus();
}

namespace {

struct StepRef {
  int rank = -1;
  StepId step = 0;
};

// Both sides of the transfer (sender, receiver, tag).
struct TransferSides {
  StepRef sender;
  StepRef receiver;
};

std::string Describe(absl::Span<const Schedule> schedules, StepRef ref) {
  return absl::StrCat("rank ", ref.rank, " ", schedules[ref.rank].StepToString(ref.step));
}

// Pairs every transfer step with its partner; partner[r][s] is filled for transfers.
absl::Status MatchTransfers(absl::Span<const Schedule> schedules,
                            std::vector<std::vector<StepRef>>& partner) {
  absl::flat_hash_map<std::tuple<int, int, uint32_t>, TransferSides> transfers;
  for (const Schedule& schedule : schedules) {
    for (StepId id = 0; id < schedule.steps().size(); ++id) {
      const Step& step = schedule.step(id);
      if (!step.is_transfer()) continue;
      const bool sender = IsSenderSide(step.kind);
      const int from = sender ? schedule.rank() : step.peer;
      const int to = sender ? step.peer : schedule.rank();
      TransferSides& sides = transfers[{from, to, step.tag}];
      StepRef& side = sender ? sides.sender : sides.receiver;
      const StepRef here{schedule.rank(), id};
      if (side.rank != -1) {
        return absl::InvalidArgumentError(
            absl::StrCat("two transfers from rank ", from, " to rank ", to, " use tag ", step.tag,
                         ": ", Describe(schedules, side), " and ", Describe(schedules, here)));
      }
      side = here;
    }
  }
  for (const auto& [key, sides] : transfers) {
    const auto& [from, to, tag] = key;
    if (sides.sender.rank == -1 || sides.receiver.rank == -1) {
      const StepRef& lonely = sides.sender.rank == -1 ? sides.receiver : sides.sender;
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(schedules, lonely), " has no partner on rank ",
                       sides.sender.rank == -1 ? from : to, " with tag ", tag));
    }
    const Step& send = schedules[sides.sender.rank].step(sides.sender.step);
    const Step& recv = schedules[sides.receiver.rank].step(sides.receiver.step);
    const std::string pair = absl::StrCat(Describe(schedules, sides.sender), " and ",
                                          Describe(schedules, sides.receiver));
    if (send.kind == StepKind::kPut && recv.kind == StepKind::kGet) {
      return absl::InvalidArgumentError(
          absl::StrCat(pair, ": a put must be received by a recv, not a get"));
    }
    if (send.count() != recv.count()) {
      return absl::InvalidArgumentError(absl::StrCat(pair, ": lengths differ"));
    }
    if (send.kind == StepKind::kPut && !(send.remote == recv.output)) {
      return absl::InvalidArgumentError(
          absl::StrCat(pair, ": the put's remote destination is not the recv's slice"));
    }
    if (recv.kind == StepKind::kGet && !(recv.remote == send.inputs.front())) {
      return absl::InvalidArgumentError(
          absl::StrCat(pair, ": the get's remote source is not the send's slice"));
    }
    partner[sides.sender.rank][sides.sender.step] = sides.receiver;
    partner[sides.receiver.rank][sides.receiver.step] = sides.sender;
  }
  return absl::OkStatus();
}

// Runs the schedules abstractly: local steps complete once their dependencies have;
// a transfer completes when both of its sides are ready (a send waits for its
// receiver, the strictest transport behaviour). Fails if some step never completes.
absl::Status CheckCompletes(absl::Span<const Schedule> schedules,
                            const std::vector<std::vector<StepRef>>& partner) {
  const size_t ranks = schedules.size();
  std::vector<std::vector<uint32_t>> waiting(ranks);  // unfinished dependencies
  std::vector<std::vector<std::vector<StepId>>> dependents(ranks);
  std::vector<std::vector<bool>> ready(ranks), done(ranks);
  std::deque<StepRef> queue;
  size_t total = 0, completed = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const auto steps = schedules[r].steps();
    total += steps.size();
    waiting[r].resize(steps.size());
    dependents[r].resize(steps.size());
    ready[r].assign(steps.size(), false);
    done[r].assign(steps.size(), false);
    for (StepId id = 0; id < steps.size(); ++id) {
      waiting[r][id] = static_cast<uint32_t>(steps[id].deps.size());
      for (StepId dep : steps[id].deps) dependents[r][dep].push_back(id);
      if (steps[id].deps.empty()) queue.push_back({static_cast<int>(r), id});
    }
  }
  auto complete = [&](StepRef ref) {
    done[ref.rank][ref.step] = true;
    ++completed;
    for (StepId next : dependents[ref.rank][ref.step]) {
      if (--waiting[ref.rank][next] == 0) queue.push_back({ref.rank, next});
    }
  };
  while (!queue.empty()) {
    const StepRef ref = queue.front();
    queue.pop_front();
    ready[ref.rank][ref.step] = true;
    if (!schedules[ref.rank].step(ref.step).is_transfer()) {
      complete(ref);
      continue;
    }
    const StepRef other = partner[ref.rank][ref.step];
    if (ready[other.rank][other.step]) {
      complete(ref);
      complete(other);
    }
  }
  if (completed == total) return absl::OkStatus();

  std::vector<std::string> stuck;
  for (size_t r = 0; r < ranks && stuck.size() < 4; ++r) {
    for (StepId id = 0; id < done[r].size(); ++id) {
      if (done[r][id]) continue;
      const StepRef ref{static_cast<int>(r), id};
      std::string reason = ready[r][id] ? "waits for its partner " : "waits for its dependencies";
      if (ready[r][id]) absl::StrAppend(&reason, Describe(schedules, partner[r][id]));
      stuck.push_back(absl::StrCat(Describe(schedules, ref), " ", reason));
      break;  // The first stuck step of each rank tells the story.
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("the schedules deadlock: ", total - completed,
                                                 " of ", total, " steps never complete; ",
                                                 absl::StrJoin(stuck, "; ")));
}

}  // namespace

absl::Status ValidateSchedules(absl::Span<const Schedule> schedules) {
  const int size = static_cast<int>(schedules.size());
  for (int r = 0; r < size; ++r) {
    if (schedules[r].rank() != r || schedules[r].size() != size) {
      return absl::InvalidArgumentError(absl::StrCat("schedule ", r, " of ", size, " is for rank ",
                                                     schedules[r].rank(), " of ",
                                                     schedules[r].size()));
    }
    RETURN_IF_ERROR(schedules[r].Validate());
  }
  std::vector<std::vector<StepRef>> partner(schedules.size());
  for (int r = 0; r < size; ++r) partner[r].resize(schedules[r].steps().size());
  RETURN_IF_ERROR(MatchTransfers(schedules, partner));
  return CheckCompletes(schedules, partner);
}

std::vector<ElementRange> SplitIntoChunks(size_t count, size_t max_chunk) {
  ZCOLL_CHECK(max_chunk > 0) << "SplitIntoChunks needs a positive chunk size";
  std::vector<ElementRange> chunks;
  chunks.reserve((count + max_chunk - 1) / max_chunk);
  for (size_t offset = 0; offset < count; offset += max_chunk) {
    chunks.push_back({offset, std::min(max_chunk, count - offset)});
  }
  return chunks;
}

ElementRange EvenBlock(size_t count, size_t parts, size_t index) {
  ZCOLL_CHECK(parts > 0 && index < parts)
      << "EvenBlock: block " << index << " of " << parts << " does not exist";
  const size_t base = count / parts;
  const size_t larger = count % parts;  // the first `larger` blocks get one more
  const size_t offset = index * base + std::min(index, larger);
  return {offset, base + (index < larger ? 1 : 0)};
}

}  // namespace zcoll
