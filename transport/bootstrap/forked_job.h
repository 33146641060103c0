// Runs a function as every rank of a job of forked processes on this host.
//
// The simplest bootstrap: the parent maps a small shared anonymous region, forks one
// child per rank, and the children meet through it (a barrier and an all-gather of
// small strings, e.g. transport addresses) without any transport. Used by the
// transport benchmarks and the multi-process test harness; real jobs use the
// launchers and stores of issue 5.
//
// The parent creates nothing but the mapping before forking, so libraries that must
// not be initialised before fork (UCX, libfabric) start fresh in each child.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_FORKED_JOB_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_FORKED_JOB_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zcoll {

// How the ranks of a forked job meet. A rank that waits past the job's deadline
// exits with code kMeetingTimedOut, so a dead peer cannot hang the job.
class ForkMeeting {
 public:
  static constexpr int kMeetingTimedOut = 3;

  virtual ~ForkMeeting() = default;
  // All `participants` ranks (the whole job unless fewer are expected) meet.
  virtual void Barrier(int participants) = 0;
  // Every rank contributes `value` (at most 64 KiB); returns all, indexed by rank.
  virtual std::vector<std::string> AllGather(int rank, const std::string& value) = 0;
};

struct RankOutcome {
  bool finished = false;  // false: still running at the deadline, then killed
  int exit_code = -1;     // when it exited
  int signal = 0;         // when a signal ended it
};

// Forks `size` (at most 64) children; child r runs `rank_main(r, meeting)` and exits
// with its return value. Waits for all, killing those still running `timeout` after
// the start, and sweeps what dead children left in /dev/shm. Returns each rank's
// outcome.
absl::StatusOr<std::vector<RankOutcome>> RunForkedJob(
    int size, const std::function<int(int rank, ForkMeeting& meeting)>& rank_main,
    absl::Duration timeout);

// Removes the shared-memory objects that zcoll's transports name after process
// `pid` of this PID namespace (SharedMemoryPrefix: libfabric shm's and zcoll's
// shm's). Only for processes known to be dead: a killed process cannot unlink its
// own. Returns how many were removed.
int SweepSharedMemory(int64_t pid);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_FORKED_JOB_H_
