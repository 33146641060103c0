// After a call returns, with any status, zcoll never touches its buffers again, even
// when the data it was waiting for arrives later (issue 16: a survivor of a killed
// peer crashed while its communicator was destroyed, UCX delivering an eager
// fragment into a receive buffer the program had freed).
//
// Made to happen every time: the root of a 2-rank Bcast of 64 MiB posts it (which
// sends what the sockets between the two hold, or offers it) and stops itself
// (SIGSTOP). The other rank then enters its Bcast, which takes what arrived and ends
// at its deadline with an error; it then fills its buffer with a canary, resumes the root
// (SIGCONT), whose transfer goes on, waits for the rest of the data to reach its host, and destroys
// its communicator, which used to progress the transport and so let the late data in. The canary
// must be intact, and the error must come within the deadline and a second. Over every provider a
// job uses between ranks: UCX and libfabric over TCP between emulated nodes, and zcoll's shm within
// one (where the late writer would be the root itself, copying the second half of the message into
// the receiver's memory: refused once the receiver has stopped its transport).

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "collectives/communicator.h"
#include "gtest/gtest.h"
#include "transport/bootstrap/fork_meeting_bootstrap.h"
#include "transport/bootstrap/forked_job.h"

namespace zcoll {
namespace {

// More than the sockets between two ranks hold, so that a stopped root has not sent it
// all.
constexpr size_t kBytes = size_t{64} << 20;
constexpr unsigned char kCanary = 0x5a;
constexpr absl::Duration kDeadline = absl::Seconds(2);

struct Providers {
  const char* local;
  const char* network;
  int nodes;
};

class BuffersAfterFailureTest : public ::testing::TestWithParam<Providers> {};

// Rank 1 is the root that stops; rank 0 the one whose buffer must stay untouched.
int RankMain(const Providers& providers, int rank, ForkMeeting& meeting) {
  setenv("ZCOLL_LOCAL_PROVIDER", providers.local, 1);
  setenv("ZCOLL_PROVIDER", providers.network, 1);
  const std::vector<std::string> pids = meeting.AllGather(rank, std::to_string(getpid()));
  pid_t root = 0;
  if (!absl::SimpleAtoi(pids[1], &root)) return 10;
  // Allocated before the communicator, so that it outlives it, as a program's would
  // not: here the test can look at it after the communicator is gone.
  std::vector<unsigned char> buffer(kBytes, 1);
  {
    CommunicatorOptions options;
    options.timeout = absl::Seconds(30);
    options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, 2);
    options.emulated_nodes = providers.nodes;
    absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: Create: %s\n", rank, comm.status().ToString().c_str());
      return 11;
    }
    if (rank == 1) {
      absl::StatusOr<Request> request = comm->IBcast(buffer.data(), kBytes, DataType::kUint8, 1);
      if (!request.ok()) return 12;
      raise(SIGSTOP);
      // Resumed: the transfer goes on until the job's failure reaches this rank.
      (void)request->Wait();
      return 0;
    }
    // The root has posted and stopped by then.
    absl::SleepFor(absl::Milliseconds(300));
    const absl::Time start = absl::Now();
    const absl::Status status =
        comm->Bcast(buffer.data(), kBytes, DataType::kUint8, 1, start + kDeadline);
    const absl::Duration took = absl::Now() - start;
    // The canary goes in before the root may go on, then the root goes on, whatever
    // happened.
    std::memset(buffer.data(), kCanary, kBytes);
    kill(root, SIGCONT);
    if (status.ok()) {
      std::fprintf(stderr, "rank 0: the Bcast from a stopped root succeeded\n");
      return 13;
    }
    if (took > kDeadline + absl::Seconds(1)) {
      std::fprintf(stderr, "rank 0: the Bcast failed after %s, past its deadline and a second\n",
                   absl::FormatDuration(took).c_str());
      return 14;
    }
    // The root sends on: its data reaches this host and waits in its sockets.
    absl::SleepFor(absl::Seconds(1));
  }  // The communicator is destroyed here.
  for (size_t i = 0; i < kBytes; ++i) {
    if (buffer[i] != kCanary) {
      std::fprintf(stderr,
                   "rank 0: byte %zu of the failed Bcast's buffer was written after the "
                   "call returned (0x%02x)\n",
                   i, buffer[i]);
      return 15;
    }
  }
  return 0;
}

TEST_P(BuffersAfterFailureTest, DataArrivingAfterAFailedCallNeverReachesItsBuffer) {
  const Providers providers = GetParam();
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      2, [&](int rank, ForkMeeting& meeting) { return RankMain(providers, rank, meeting); },
      absl::Seconds(60));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  EXPECT_TRUE((*outcomes)[0].finished && (*outcomes)[0].signal == 0 &&
              (*outcomes)[0].exit_code == 0)
      << "rank 0: exit " << (*outcomes)[0].exit_code << ", signal " << (*outcomes)[0].signal;
  EXPECT_TRUE((*outcomes)[1].finished) << "the root never resumed or ended";
}

INSTANTIATE_TEST_SUITE_P(Providers, BuffersAfterFailureTest,
                         ::testing::Values(Providers{"shm", "ofi:tcp", 1},
                                           Providers{"shm", "ucx:tcp", 2},
                                           Providers{"shm", "ofi:tcp", 2}),
                         [](const ::testing::TestParamInfo<Providers>& info) {
                           std::string name =
                               info.param.nodes == 1 ? info.param.local : info.param.network;
                           for (char& c : name) {
                             if (c == ':') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace zcoll
