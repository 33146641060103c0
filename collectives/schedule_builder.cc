#include "collectives/schedule_builder.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace zcoll {
namespace {

void AddUnique(absl::InlinedVector<StepId, 4>& deps, StepId step) {
  if (std::find(deps.begin(), deps.end(), step) == deps.end()) deps.push_back(step);
}

}  // namespace

ScheduleBuilder::ScheduleBuilder(int rank, int size, size_t send_count, size_t recv_count)
    : schedule_(rank, size, send_count, recv_count) {
  send_segments_.runs.push_back(Segment{0, send_count});
  recv_segments_.runs.push_back(Segment{0, recv_count});
}

ScheduleBuilder::Segments& ScheduleBuilder::SegmentsOf(BufferId buffer) {
  switch (buffer.kind) {
    case BufferKind::kSend:
      return send_segments_;
    case BufferKind::kRecv:
      return recv_segments_;
    case BufferKind::kScratch:
      break;
  }
  while (scratch_segments_.size() <= buffer.scratch_index) {
    Segments fresh;
    fresh.runs.push_back(Segment{0, schedule_.BufferCount(BufferId::Scratch(
                                        static_cast<uint32_t>(scratch_segments_.size())))});
    scratch_segments_.push_back(std::move(fresh));
  }
  return scratch_segments_[buffer.scratch_index];
}

size_t ScheduleBuilder::SplitAt(Segments& segments, size_t offset, size_t end) {
  std::vector<Segment>& runs = segments.runs;
  // The index of the last segment from `from` on that begins at or before `at`:
  // `guess` or the one after it where they hold it, else by binary search.
  auto holding = [&runs](size_t at, size_t from, size_t guess) {
    for (const size_t index : {guess, guess + 1}) {
      if (index >= from && index < runs.size() && runs[index].begin <= at &&
          (index + 1 == runs.size() || at < runs[index + 1].begin)) {
        return index;
      }
    }
    return static_cast<size_t>(
        std::upper_bound(runs.begin() + static_cast<ptrdiff_t>(from), runs.end(), at,
                         [](size_t value, const Segment& run) { return value < run.begin; }) -
        runs.begin() - 1);
  };
  // Splits the segment holding `at` there unless one begins there; returns the index of
  // the segment that begins at `at` (runs.size() at the buffer's end).
  auto split = [&runs](size_t at, size_t index) {
    Segment& run = runs[index];
    if (run.begin == at) return index;
    if (run.end <= at) return index + 1;
    Segment tail = run;  // [at, old end), same history
    tail.begin = at;
    run.end = at;
    runs.insert(runs.begin() + static_cast<ptrdiff_t>(index + 1), tail);
    return index + 1;
  };
  const size_t first = split(offset, holding(offset, 0, segments.last_found));
  split(end, holding(end, first, first));
  segments.last_found = first;
  return first;
}

void ScheduleBuilder::CollectDeps(const Slice& slice, bool write,
                                  absl::InlinedVector<StepId, 4>& deps) {
  if (slice.count == 0) return;
  Segments& segments = SegmentsOf(slice.buffer);
  const std::vector<Segment>& runs = segments.runs;
  for (size_t i = SplitAt(segments, slice.offset, slice.end());
       i < runs.size() && runs[i].begin < slice.end(); ++i) {
    if (runs[i].writer != kNoStep) AddUnique(deps, runs[i].writer);
    if (write) {
      for (uint32_t node = runs[i].readers; node != kNoReaders; node = reader_nodes_[node].next) {
        AddUnique(deps, reader_nodes_[node].step);
      }
    }
  }
}

void ScheduleBuilder::Record(const Slice& slice, bool write, StepId step) {
  if (slice.count == 0) return;
  Segments& segments = SegmentsOf(slice.buffer);
  std::vector<Segment>& runs = segments.runs;
  const size_t first = SplitAt(segments, slice.offset, slice.end());
  size_t last = first;
  while (last + 1 < runs.size() && runs[last + 1].begin < slice.end()) ++last;
  if (write) {
    // The written run becomes one segment with a fresh history.
    runs[first].end = runs[last].end;
    runs[first].writer = step;
    runs[first].readers = kNoReaders;
    runs.erase(runs.begin() + static_cast<ptrdiff_t>(first + 1),
               runs.begin() + static_cast<ptrdiff_t>(last + 1));
    return;
  }
  for (size_t i = first; i <= last; ++i) {
    const uint32_t head = runs[i].readers;
    if (head != kNoReaders && reader_nodes_[head].step == step) continue;
    reader_nodes_.push_back(ReaderNode{step, head});
    runs[i].readers = static_cast<uint32_t>(reader_nodes_.size() - 1);
  }
}

StepId ScheduleBuilder::Add(absl::Span<const Slice> reads, const Slice* write,
                            absl::FunctionRef<StepId(absl::Span<const StepId>)> emit) {
  absl::InlinedVector<StepId, 4> deps;
  for (const Slice& read : reads) CollectDeps(read, /*write=*/false, deps);
  if (write != nullptr) CollectDeps(*write, /*write=*/true, deps);
  if (start_after_ != kNoStep &&
      std::none_of(deps.begin(), deps.end(), [&](StepId dep) { return dep >= gated_from_; })) {
    AddUnique(deps, start_after_);
  }
  std::sort(deps.begin(), deps.end());
  const StepId step = emit(deps);
  for (const Slice& read : reads) Record(read, /*write=*/false, step);
  if (write != nullptr) Record(*write, /*write=*/true, step);
  return step;
}

StepId ScheduleBuilder::Send(int peer, uint32_t tag, Slice source) {
  return Add({&source, 1}, nullptr, [&](absl::Span<const StepId> deps) {
    return schedule_.Send(peer, tag, source, deps);
  });
}

StepId ScheduleBuilder::Recv(int peer, uint32_t tag, Slice destination) {
  return Add({}, &destination, [&](absl::Span<const StepId> deps) {
    return schedule_.Recv(peer, tag, destination, deps);
  });
}

StepId ScheduleBuilder::Reduce(absl::Span<const Slice> operands, Slice destination) {
  return Add(operands, &destination, [&](absl::Span<const StepId> deps) {
    return schedule_.Reduce(operands, destination, deps);
  });
}

StepId ScheduleBuilder::Copy(Slice source, Slice destination) {
  return Add({&source, 1}, &destination, [&](absl::Span<const StepId> deps) {
    return schedule_.Copy(source, destination, deps);
  });
}

}  // namespace zcoll
