// The Schedule IR: what one rank does in one collective, as data.
//
// An algorithm (collectives/) is a pure function (arguments, topology, rank) ->
// Schedule. The executor runs a Schedule over real transports, the in-process harness
// runs it over loopback, and the simulator checks it symbolically and predicts its
// time; none of them knows which algorithm produced it (docs/design.md, "core/").
//
// A Schedule is a list of steps. Each step names slices of three kinds of buffer, in
// elements of the collective's datatype: the user's send buffer (read-only), the
// user's receive buffer, and scratch buffers the executor allocates. Steps:
//
//   Send(peer, tag, source)                  two-sided; the executor picks eager or
//   Recv(peer, tag, destination)             rendezvous by size
//   Put(peer, tag, source, remote_dest)      one-sided write into the peer's buffer;
//                                            the peer posts a Recv for that slice and
//                                            completes when the put is notified
//   Get(peer, tag, remote_source, dest)      one-sided read from the peer's buffer;
//                                            the peer posts a Send for that slice and
//                                            completes when the get is done
//   Reduce(operands..., destination)         destination = op0 op op1 op ... op opk, in
//                                            the order given (canonical for
//                                            non-commutative ops)
//   Copy(source, destination)
//
// So the passive side of a one-sided transfer is always a plain Send or Recv, and a
// transfer is identified by (sender, receiver, tag): each such triple occurs once.
//
// Dependencies: a step starts when every step in its `deps` has completed. A step may
// only depend on earlier steps, so the list order is a topological order. Completion
// means: Send/Put - the source may be overwritten; Recv/Get - the data is in place;
// Reduce/Copy - written. Pipelining is expressed by emitting one step per chunk
// (SplitIntoChunks), each depending only on what its own chunk needs.
//
// The datatype and op are not part of the IR: one Schedule serves every datatype with
// the same element counts.

#ifndef ZCOLL_CORE_SCHEDULE_H_
#define ZCOLL_CORE_SCHEDULE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace zcoll {

enum class BufferKind : uint8_t {
  kSend,     // the user's send buffer; never written
  kRecv,     // the user's receive buffer
  kScratch,  // allocated by the executor for the duration of the collective
};

struct BufferId {
  BufferKind kind = BufferKind::kRecv;
  uint32_t scratch_index = 0;  // which scratch buffer; 0 for kSend and kRecv

  static constexpr BufferId Send() { return {BufferKind::kSend, 0}; }
  static constexpr BufferId Recv() { return {BufferKind::kRecv, 0}; }
  static constexpr BufferId Scratch(uint32_t index) { return {BufferKind::kScratch, index}; }

  friend bool operator==(const BufferId&, const BufferId&) = default;
};

// `count` elements of `buffer` starting at element `offset`.
struct Slice {
  BufferId buffer;
  size_t offset = 0;
  size_t count = 0;

  size_t end() const { return offset + count; }
  // Same buffer and at least one element in common.
  bool Overlaps(const Slice& other) const {
    return buffer == other.buffer && count > 0 && other.count > 0 && offset < other.end() &&
           other.offset < end();
  }

  friend bool operator==(const Slice&, const Slice&) = default;
};

enum class StepKind : uint8_t { kSend, kRecv, kPut, kGet, kReduce, kCopy };

using StepId = uint32_t;

inline constexpr int kNoPeer = -1;

struct Step {
  StepKind kind = StepKind::kCopy;
  int peer = kNoPeer;  // transfers only
  uint32_t tag = 0;    // transfers only
  // Send, Put, Copy: {source}. Reduce: the operands, left to right. Recv, Get: empty.
  absl::InlinedVector<Slice, 2> inputs;
  // Recv, Get, Reduce, Copy: the destination. Unused for Send and Put.
  Slice output;
  // Put: the destination on `peer`. Get: the source on `peer`. Unused otherwise.
  Slice remote;
  absl::InlinedVector<StepId, 4> deps;

  bool is_transfer() const { return peer != kNoPeer; }
  // Elements moved or produced by the step.
  size_t count() const {  // inline: the executor asks for every step it runs
    switch (kind) {
      case StepKind::kSend:
      case StepKind::kPut:
      case StepKind::kCopy:
        return inputs.empty() ? 0 : inputs.front().count;
      case StepKind::kRecv:
      case StepKind::kGet:
      case StepKind::kReduce:
        return output.count;
    }
    return 0;
  }
};

absl::string_view StepKindName(StepKind kind);

// One rank's schedule. Building does not validate (it is on the hot path of
// schedule generation); Validate() and ValidateSchedules() do, for tests, debug
// builds and the simulator.
class Schedule {
 public:
  // `send_count` and `recv_count` are the element counts of this rank's user buffers
  // (0 when a buffer is not used).
  Schedule(int rank, int size, size_t send_count, size_t recv_count);

  int rank() const { return rank_; }
  int size() const { return size_; }

  // A new scratch buffer of `count` elements.
  BufferId AddScratch(size_t count);
  size_t num_scratch() const { return scratch_counts_.size(); }
  // Element count of `buffer`; 0 for a scratch index that does not exist.
  size_t BufferCount(BufferId buffer) const;

  StepId Send(int peer, uint32_t tag, Slice source, absl::Span<const StepId> deps = {});
  StepId Recv(int peer, uint32_t tag, Slice destination, absl::Span<const StepId> deps = {});
  StepId Put(int peer, uint32_t tag, Slice source, Slice remote_destination,
             absl::Span<const StepId> deps = {});
  StepId Get(int peer, uint32_t tag, Slice remote_source, Slice destination,
             absl::Span<const StepId> deps = {});
  StepId Reduce(absl::Span<const Slice> operands, Slice destination,
                absl::Span<const StepId> deps = {});
  StepId Copy(Slice source, Slice destination, absl::Span<const StepId> deps = {});

  absl::Span<const Step> steps() const { return steps_; }
  const Step& step(StepId id) const { return steps_[id]; }

  // Checks this rank's schedule on its own: peers in range and not itself, slices
  // inside their buffers, no writes to the send buffer, counts that agree, a Reduce
  // with at least two operands whose destination is one of them or overlaps none,
  // a Copy whose source and destination do not overlap, dependencies on earlier
  // steps only. InvalidArgument naming the rank and step otherwise.
  absl::Status Validate() const;

  // One line per step, e.g. "#3 recv from 1 tag 7 -> recv[0,+4) after #1,#2".
  std::string ToString() const;
  std::string StepToString(StepId id) const;

 private:
  StepId Add(Step step, absl::Span<const StepId> deps);

  int rank_;
  int size_;
  size_t send_count_;
  size_t recv_count_;
  std::vector<size_t> scratch_counts_;
  std::vector<Step> steps_;
};

// Checks a whole collective: `schedules[r]` is rank r's schedule, every one valid on
// its own; every transfer has exactly one partner on its peer with the same tag and
// count (Send with Recv or Get, Put with Recv), one-sided steps name exactly their
// partner's slice; and the steps can all complete when sends wait for their receivers
// (rendezvous), i.e. the collective cannot deadlock. InvalidArgument naming the
// ranks and steps otherwise.
absl::Status ValidateSchedules(absl::Span<const Schedule> schedules);

// [offset, offset + count) of a partition.
struct ElementRange {
  size_t offset = 0;
  size_t count = 0;

  friend bool operator==(const ElementRange&, const ElementRange&) = default;
};

// Splits [0, count) into consecutive ranges of `max_chunk` elements (the last may be
// shorter). count 0 gives no ranges. Requires max_chunk > 0.
std::vector<ElementRange> SplitIntoChunks(size_t count, size_t max_chunk);

// Block `index` of [0, count) cut into `parts` blocks whose sizes differ by at most
// one, larger blocks first: the balanced partition of ring and reduce-scatter
// algorithms. Requires parts > 0 and index < parts.
ElementRange EvenBlock(size_t count, size_t parts, size_t index);

}  // namespace zcoll

#endif  // ZCOLL_CORE_SCHEDULE_H_
