// Service mode: no launcher. Each rank is an ordinary process started by whatever
// runs the service (a scheduler, a container runtime, a shell), told where the job's
// store is and who it is through four variables, and meets the others in Create:
//
//   ZCOLL_STORE=tcp://HOST:PORT   the job's store (tools/zcoll_store, started first)
//   ZCOLL_JOB_KEY=...             the secret the store was given
//   ZCOLL_RANK=r ZCOLL_SIZE=n     this process's place in the job
//
// The store must be up before the first rank's Create and stay up until every rank's
// Create has returned; examples/README.md shows a whole run. This program then serves
// "requests": a loop of Allreduce calls with a deadline each, as a service would.

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/time/clock.h"
#include "zcoll/zcoll.h"

int main() {
  zcoll::CommunicatorOptions options;
  // Create's own limit (the default is ZCOLL_TIMEOUT): ranks started by hand may
  // arrive seconds apart, but not minutes.
  options.timeout = absl::Seconds(60);
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create(std::move(options));
  if (!comm.ok()) {
    std::fprintf(stderr, "Create: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();
  std::vector<int64_t> counters(8), totals(8);
  for (int request = 0; request < 100; ++request) {
    for (size_t i = 0; i < counters.size(); ++i) counters[i] = rank + request + i;
    // Each call has a deadline: a peer that stops answering ends it with an error
    // naming that peer, never a hang.
    const absl::Status status =
        comm->Allreduce<int64_t>(counters, absl::MakeSpan(totals), zcoll::PredefinedOp::kSum,
                                 absl::Now() + absl::Seconds(10));
    const int64_t expected = int64_t{size} * (size - 1) / 2 + int64_t{size} * (request + 7);
    if (!status.ok() || totals[7] != expected) {
      std::fprintf(stderr, "rank %d, request %d: %s\n", rank, request,
                   status.ok() ? "wrong total" : status.ToString().c_str());
      return 1;
    }
  }
  std::printf("rank %d of %d: 100 requests served through the store at %s: ok\n", rank, size,
              std::getenv("ZCOLL_STORE"));
  return 0;
}
