// A nonblocking Allreduce overlapped with computation.
//
// Progress model: zcoll has no progress thread. A collective starts in the call that
// posts it (IAllreduce sends what it can at once) and advances whenever this rank
// calls into zcoll for it: Test() (never blocks) or Wait(). A program that computes
// for a long time between posting and waiting calls Test() now and then, as here,
// so that its peers are not kept waiting for its part.
//
//   bazel run //tools:zcoll_run -- -n 4 bazel-bin/examples/overlap

#include <cmath>
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
  std::vector<float> layer(1 << 18, static_cast<float>(rank + 1)), summed(layer.size());

  // Post the reduction of one layer's gradients...
  absl::StatusOr<zcoll::Request> request =
      comm->IAllreduce<float>(layer, absl::MakeSpan(summed), zcoll::PredefinedOp::kSum);
  if (!request.ok()) {
    std::fprintf(stderr, "rank %d: IAllreduce: %s\n", rank, request.status().ToString().c_str());
    return 1;
  }
  // ...and compute the next layer's meanwhile, giving the collective a turn between
  // blocks of work. (`layer` and `summed` belong to the collective until it is done:
  // neither is touched here.)
  double work = 0;
  int tests = 0;
  bool done = false;
  for (int block = 0; block < 64; ++block) {
    for (int i = 0; i < 20000; ++i) work += std::sin(block * 20000.0 + i);
    if (!done) {
      absl::StatusOr<bool> finished = request->Test();
      if (!finished.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, finished.status().ToString().c_str());
        return 1;
      }
      done = *finished;
      ++tests;
    }
  }
  if (absl::Status status = request->Wait(); !status.ok()) {
    std::fprintf(stderr, "rank %d: Wait: %s\n", rank, status.ToString().c_str());
    return 1;
  }
  const float expected = static_cast<float>(size * (size + 1) / 2);
  const bool right = summed.front() == expected && summed.back() == expected;
  std::printf("rank %d: allreduce %s after %d tests (%s while computing; work %.3f)\n", rank,
              right ? "ok" : "WRONG", tests, done ? "completed" : "not completed", work);
  return right ? 0 : 1;
}
