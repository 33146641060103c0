#include "collectives/schedule_builder.h"

#include <algorithm>
#include <utility>

namespace zcoll {
namespace {

void AddUnique(absl::InlinedVector<StepId, 4>& deps, StepId step) {
  if (std::find(deps.begin(), deps.end(), step) == deps.end()) deps.push_back(step);
}

}  // namespace

ScheduleBuilder::ScheduleBuilder(int rank, int size, size_t send_count, size_t recv_count)
    : schedule_(rank, size, send_count, recv_count) {
  send_segments_[0] = Segment{send_count};
  recv_segments_[0] = Segment{recv_count};
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
    fresh[0] = Segment{
        schedule_.BufferCount(BufferId::Scratch(static_cast<uint32_t>(scratch_segments_.size())))};
    scratch_segments_.push_back(std::move(fresh));
  }
  return scratch_segments_[buffer.scratch_index];
}

ScheduleBuilder::Segments::iterator ScheduleBuilder::SplitAt(Segments& segments, size_t offset,
                                                             size_t end) {
  auto split = [&](size_t at) {
    auto it = std::prev(segments.upper_bound(at));
    if (it->first == at || it->second.end <= at) return;
    Segment tail = it->second;  // [at, old end), same history
    it->second.end = at;
    segments.emplace(at, std::move(tail));
  };
  split(offset);
  split(end);
  return segments.find(offset);
}

void ScheduleBuilder::CollectDeps(const Slice& slice, bool write,
                                  absl::InlinedVector<StepId, 4>& deps) {
  if (slice.count == 0) return;
  Segments& segments = SegmentsOf(slice.buffer);
  for (auto it = SplitAt(segments, slice.offset, slice.end());
       it != segments.end() && it->first < slice.end(); ++it) {
    if (it->second.writer != kNoStep) AddUnique(deps, it->second.writer);
    if (write) {
      for (StepId reader : it->second.readers) AddUnique(deps, reader);
    }
  }
}

void ScheduleBuilder::Record(const Slice& slice, bool write, StepId step) {
  if (slice.count == 0) return;
  Segments& segments = SegmentsOf(slice.buffer);
  auto it = SplitAt(segments, slice.offset, slice.end());
  if (write) {
    // The written run becomes one segment with a fresh history.
    auto last = it;
    while (std::next(last) != segments.end() && std::next(last)->first < slice.end()) ++last;
    const size_t end = last->second.end;
    segments.erase(std::next(it), std::next(last));
    it->second.end = end;
    it->second.writer = step;
    it->second.readers.clear();
    return;
  }
  for (; it != segments.end() && it->first < slice.end(); ++it) {
    if (it->second.readers.empty() || it->second.readers.back() != step) {
      it->second.readers.push_back(step);
    }
  }
}

StepId ScheduleBuilder::Add(absl::Span<const Slice> reads, const Slice* write,
                            const std::function<StepId(absl::Span<const StepId>)>& emit) {
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
