// A training loop's gradient allreduce as a persistent collective (MPI-4's
// MPI_Allreduce_init): the arguments are checked and the algorithm chosen and planned
// once, and each step only starts and waits, overlapping the wait with other work.
//
//   bazel build //examples:persistent_step
//   bazel run //tools:zcoll_run -- -n 4 bazel-bin/examples/persistent_step

#include <cstdio>
#include <vector>

#include "zcoll/zcoll.h"

int main() {
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
  if (!comm.ok()) {
    std::fprintf(stderr, "Create: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();
  constexpr size_t kParameters = 4096;
  constexpr int kSteps = 200;
  std::vector<double> gradients(kParameters), mean(kParameters);

  // Made once, collectively: every rank calls AllreduceInit with its own buffers.
  absl::StatusOr<zcoll::PersistentRequest> step =
      comm->AllreduceInit<double>(gradients, absl::MakeSpan(mean), zcoll::PredefinedOp::kAvg);
  if (!step.ok()) {
    std::fprintf(stderr, "rank %d: AllreduceInit: %s\n", rank, step.status().ToString().c_str());
    return 1;
  }
  size_t wrong = 0;
  for (int s = 0; s < kSteps; ++s) {
    // This step's gradients: new contents in the same buffer.
    for (size_t i = 0; i < kParameters; ++i) gradients[i] = rank + s + static_cast<double>(i % 10);
    absl::Status status = step->Start();
    // ... the optimizer's bookkeeping of the last step could run here; Test() now and
    // then lets the collective progress (there is no progress thread) ...
    if (status.ok()) status = step->Wait();
    if (!status.ok()) {
      std::fprintf(stderr, "rank %d: step %d: %s\n", rank, s, status.ToString().c_str());
      return 1;
    }
    for (size_t i = 0; i < kParameters; ++i) {
      wrong += mean[i] != (size - 1) / 2.0 + s + static_cast<double>(i % 10);
    }
  }
  std::printf("rank %d of %d: %d persistent allreduce steps: %s\n", rank, size, kSteps,
              wrong == 0 ? "ok" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
