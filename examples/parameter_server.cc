// A parameter server in two collectives: the workers' updates are summed at rank 0
// (Reduce), which applies them to the parameters and sends the new parameters to
// every worker (Bcast). Ten steps.
//
//   bazel run //tools:zcoll_run -- -n 3 bazel-bin/examples/parameter_server

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
  constexpr int kServer = 0;
  constexpr int kSteps = 10;
  std::vector<double> parameters(1000, 0.0), update(1000), total(1000);
  for (int step = 0; step < kSteps; ++step) {
    // Each worker's update: 1 per parameter (a stand-in for its gradient step).
    for (double& u : update) u = 1.0;
    // Only the root's receive buffer is written; the others' may be empty spans.
    absl::Status status =
        comm->Reduce<double>(update, rank == kServer ? absl::MakeSpan(total) : absl::Span<double>(),
                             zcoll::PredefinedOp::kSum, kServer);
    if (status.ok() && rank == kServer) {
      for (size_t i = 0; i < parameters.size(); ++i) parameters[i] += total[i];
    }
    if (status.ok()) status = comm->Bcast<double>(absl::MakeSpan(parameters), kServer);
    if (!status.ok()) {
      std::fprintf(stderr, "rank %d, step %d: %s\n", rank, step, status.ToString().c_str());
      return 1;
    }
  }
  // Every step added `size` to every parameter.
  const bool right = parameters.front() == kSteps * size && parameters.back() == kSteps * size;
  std::printf("rank %d: parameters after %d steps = %g: %s\n", rank, kSteps, parameters.front(),
              right ? "ok" : "WRONG");
  return right ? 0 : 1;
}
