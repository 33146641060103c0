// Runs a whole collective's schedules symbolically, without processes or data: every
// element holds the list of contributions (rank, element) it was made from, in the
// order they were combined. A test then checks each output element against what the
// standard says it must be — the exact contributions, in canonical order for a
// reduction — for any rank count (the first part of the simulator; docs/design.md, "core/").
//
// Transfers are matched by (sender, receiver, tag) and happen when both sides are
// ready; a Send reads its source when its receiver is ready, as a rendezvous does.
// Steps that can never run (a deadlock) are an error naming the first of them.

#ifndef ZCOLL_TESTING_SYMBOLIC_RUN_H_
#define ZCOLL_TESTING_SYMBOLIC_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/schedule.h"

namespace zcoll::testing {

struct Contribution {
  int32_t rank;
  uint32_t element;
  friend bool operator==(const Contribution&, const Contribution&) = default;
};
// An element: the contributions it combines, left to right.
using SymbolicValue = std::vector<Contribution>;

struct SymbolicBuffers {
  std::vector<SymbolicValue> send;
  std::vector<SymbolicValue> recv;
};

// A marker for an element nobody wrote: contributions of this "rank".
inline constexpr int32_t kUnwritten = -1;

// Runs schedules[r] over buffers[r] (send and recv sized as the schedules say;
// scratch starts unwritten). InvalidArgument on a deadlock or a slice outside its
// buffer.
absl::Status RunSymbolically(absl::Span<const Schedule> schedules,
                             std::vector<SymbolicBuffers>& buffers);

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_SYMBOLIC_RUN_H_
