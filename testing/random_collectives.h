// Random collective calls for the soak and the fault campaign: every rank draws the
// same sequence from a shared seed (so they agree on every argument that must be
// equal), makes every rank's input from the call's salt (so each can compute every
// result the reference way, testing/reference.h) and checks its own.
//
// A call is any collective of the communicator, blocking or nonblocking, with a
// random root, in place where the standard allows it, over a type and op whose
// results are exact under any association (small integers; a non-commutative user
// op, DigitsInRankOrder; MINLOC ties; AVG; float16 and bfloat16), and of 0 to
// `max_elements` elements per rank's buffer (log-uniform: most are small, some
// large). v-forms get varied counts with zeros and blocks out of rank order.

#ifndef ZCOLL_TESTING_RANDOM_COLLECTIVES_H_
#define ZCOLL_TESTING_RANDOM_COLLECTIVES_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "collectives/communicator.h"
#include "core/datatype.h"
#include "core/reduce_op.h"

namespace zcoll::testing {

struct RandomCall {
  Collective collective;
  const char* values;  // how inputs are made and reduced: "float_sum", "bytes", ...
  DataType type;
  ReduceOp op = PredefinedOp::kSum;
  // The count argument: elements per rank (reductions, Bcast), per block (Scatter,
  // Gather, Allgather, Alltoall, ReduceScatterBlock).
  size_t count = 0;
  // v-forms: elements by rank (Scatterv, Gatherv, Allgatherv, ReduceScatter); for
  // Alltoallv, pair_counts[from * size + to].
  std::vector<size_t> counts;
  std::vector<size_t> pair_counts;
  int root = 0;
  bool in_place = false;
  bool nonblocking = false;
  uint64_t salt = 0;

  std::string Describe() const;
};

// The sequence of calls for a job of `size` ranks; equal on every rank for equal
// seeds.
class RandomCalls {
 public:
  RandomCalls(uint64_t seed, int size, size_t max_elements);
  RandomCall Next();

 private:
  size_t Elements();

  std::mt19937_64 random_;
  int size_;
  size_t max_elements_;
  uint64_t calls_ = 0;
};

// What running one call found.
struct CallOutcome {
  absl::Status status;   // the collective's
  std::string mismatch;  // with `check` and an OK status: what differs, if anything
};

// Runs `call` on `comm` (its inputs made from the call's salt) and, with `check`,
// compares this rank's result with the reference's.
CallOutcome RunRandomCall(Communicator& comm, const RandomCall& call, bool check);

// This process's resident set, in KiB (/proc/self/statm); 0 if unreadable.
size_t ResidentKiB();

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_RANDOM_COLLECTIVES_H_
