// Data-parallel training's gradient step: every rank computed gradients on its own
// shard of the batch; an Allreduce makes every rank hold the mean, so all replicas
// apply the same update. Two ways: sum then divide (what MPI offers), or zcoll's AVG
// op (as NCCL's ncclAvg), which divides once, after the sum.
//
//   bazel build //examples:gradient_allreduce
//   bazel run //tools:zcoll_run -- -n 4 --nodes 2 bazel-bin/examples/gradient_allreduce
//
// (Any launcher works: mpirun and srun through PMIx, or by hand with a store;
// examples/README.md shows each.)

#include <cmath>
#include <cstdio>
#include <vector>

#include "zcoll/zcoll.h"

int main() {
  // Create reads the job from the environment the launcher set up.
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
  if (!comm.ok()) {
    std::fprintf(stderr, "Create: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();

  // This rank's gradients (a stand-in for a backward pass): element i is rank + i.
  constexpr size_t kParameters = 1 << 16;
  std::vector<float> gradients(kParameters);
  for (size_t i = 0; i < kParameters; ++i) gradients[i] = static_cast<float>(rank + i % 100);

  // 1. Sum in place (the typed form takes its count and datatype from the span),
  //    then divide by the number of replicas.
  std::vector<float> summed = gradients;
  absl::Status status = comm->Allreduce<float>(absl::MakeSpan(summed), zcoll::PredefinedOp::kSum);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: Allreduce: %s\n", rank, status.ToString().c_str());
    return 1;
  }
  for (float& g : summed) g /= static_cast<float>(size);

  // 2. The same mean with AVG, into another buffer.
  std::vector<float> averaged(kParameters);
  status = comm->Allreduce<float>(gradients, absl::MakeSpan(averaged), zcoll::PredefinedOp::kAvg);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: Allreduce AVG: %s\n", rank, status.ToString().c_str());
    return 1;
  }

  // The mean of rank + i%100 over ranks 0..size-1 is (size-1)/2 + i%100.
  size_t wrong = 0;
  for (size_t i = 0; i < kParameters; ++i) {
    const float expected = static_cast<float>(size - 1) / 2 + static_cast<float>(i % 100);
    wrong += std::fabs(summed[i] - expected) > 1e-4f || std::fabs(averaged[i] - expected) > 1e-4f;
  }
  std::printf("rank %d of %d: mean gradient[1] = %g (sum/size) and %g (AVG): %s\n", rank, size,
              summed[1], averaged[1], wrong == 0 ? "ok" : "WRONG");
  return wrong == 0 ? 0 : 1;
}
