// ScheduleBuilder: writes a Schedule as a sequential program and infers its
// dependencies.
//
// An algorithm emits its steps in an order that would be correct if each ran to
// completion before the next; the builder records which elements of which buffer each
// step reads (send and copy sources, reduce operands) and writes (receive, copy and
// reduce destinations) and makes a step depend on exactly the earlier steps it
// conflicts with: the last writer of anything it reads or writes, and every reader
// of anything it writes since that write. So chunked stages pipeline into each other
// without the algorithm spelling out any dependency, and no step waits for one it does
// not touch.
//
// Cost: a buffer's elements are kept as runs (segments) split at the slices'
// boundaries, in a sorted array, so an access costs O(log segments + segments it
// covers) plus moving the array's tail when it splits one; the steps that read a
// segment since its last write are a list shared by the segments split from it, so
// splitting copies 24 bytes and allocates nothing. (A std::map of segments, each with
// its own vector of readers, made a 65,536-rank simulation spend half its time here.)

#ifndef ZCOLL_COLLECTIVES_SCHEDULE_BUILDER_H_
#define ZCOLL_COLLECTIVES_SCHEDULE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "core/schedule.h"

namespace zcoll {

class ScheduleBuilder {
 public:
  ScheduleBuilder(int rank, int size, size_t send_count, size_t recv_count);

  int rank() const { return schedule_.rank(); }
  int size() const { return schedule_.size(); }

  BufferId AddScratch(size_t count) { return schedule_.AddScratch(count); }

  StepId Send(int peer, uint32_t tag, Slice source);
  StepId Recv(int peer, uint32_t tag, Slice destination);
  // destination = operands[0] op operands[1] op ..., left to right.
  StepId Reduce(absl::Span<const Slice> operands, Slice destination);
  StepId Copy(Slice source, Slice destination);

  // The steps emitted from here on also wait for `step` (until the next call; kNoStep:
  // no more): an order the algorithm wants between steps that share no elements. Only
  // a step none of whose dependencies came after this call gets the extra one; the
  // others wait for it through those.
  void StartAfter(StepId step) {
    start_after_ = step;
    gated_from_ = static_cast<StepId>(schedule_.steps().size());
  }
  // The last step emitted (kNoStep: none yet).
  StepId last_step() const {
    return schedule_.steps().empty() ? kNoStep : static_cast<StepId>(schedule_.steps().size() - 1);
  }
  static constexpr StepId kNoStep = ~StepId{0};

  Schedule Finish() && { return std::move(schedule_); }

 private:
  // What happened last to a run of elements [begin, end).
  struct Segment {
    size_t begin = 0;
    size_t end = 0;
    // The last step that wrote it (kNoStep: none yet) and the steps that read it since
    // (a list in reader_nodes_, newest first; kNoReaders: none).
    StepId writer = kNoStep;
    uint32_t readers = kNoReaders;
  };
  struct Segments {
    std::vector<Segment> runs;  // sorted, covering the buffer
    // Where SplitAt found the last slice's start: a chunked loop's slices come in
    // order, so the next one starts there or in the segment after it.
    size_t last_found = 0;
  };
  // A list of readers: lists only grow at their heads, so segments split from one
  // share its tail, and a write starts its segment's list afresh.
  struct ReaderNode {
    StepId step;
    uint32_t next;
  };
  static constexpr uint32_t kNoReaders = ~uint32_t{0};

  Segments& SegmentsOf(BufferId buffer);
  // Splits `segments` so that boundaries fall at `offset` and `end`, and returns the
  // index of the first segment of [offset, end).
  static size_t SplitAt(Segments& segments, size_t offset, size_t end);
  // Adds to `deps` the steps a read (or write) of `slice` must wait for.
  void CollectDeps(const Slice& slice, bool write, absl::InlinedVector<StepId, 4>& deps);
  // Records that `step` read (or wrote) `slice`.
  void Record(const Slice& slice, bool write, StepId step);
  StepId Add(absl::Span<const Slice> reads, const Slice* write,
             absl::FunctionRef<StepId(absl::Span<const StepId>)> emit);

  Schedule schedule_;
  Segments send_segments_;
  Segments recv_segments_;
  std::vector<Segments> scratch_segments_;
  std::vector<ReaderNode> reader_nodes_;
  StepId start_after_ = kNoStep;
  StepId gated_from_ = 0;  // the first step emitted after StartAfter
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_SCHEDULE_BUILDER_H_
