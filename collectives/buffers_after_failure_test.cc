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
// must be intact, and the error must come within the deadline and a second. Over UCX and libfabric
// over TCP between emulated nodes. Within a node (zcoll's shm) the receiver reads the stopped
// root's message itself, its second half too (the root, busy or stopped, has not claimed it), so
// there the Bcast succeeds; the root, resumed, must then not write its half of the message into the
// receiver's buffer (its clear-to-send comes to it after the call is over).

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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
  // The transports' messages: on one node the engine would read the stopped root's
  // buffer in place and succeed (node_engine_failure_test covers the engine).
  setenv("ZCOLL_ALGO_BCAST", "binomial", 1);
  const std::vector<std::string> pids = meeting.AllGather(rank, std::to_string(getpid()));
  pid_t root = 0;
  if (!absl::SimpleAtoi(pids[1], &root)) return 10;
  // Allocated before the communicator, so that it outlives it, as a program's would
  // not: here the test can look at it after the communicator is gone.
  std::vector<unsigned char> buffer(kBytes, rank == 1 ? 1 : 0);
  // Within a node the receiver reads a stopped root's message itself (the file comment).
  const bool reads_stopped_root = providers.nodes == 1;
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
    // A Bcast that succeeded brought the root's bytes (looked at while it is stopped).
    size_t not_the_roots = 0;
    for (size_t i = 0; status.ok() && i < kBytes; ++i) not_the_roots += buffer[i] != 1 ? 1 : 0;
    // The canary goes in before the root may go on, then the root goes on, whatever
    // happened.
    std::memset(buffer.data(), kCanary, kBytes);
    kill(root, SIGCONT);
    if (status.ok() != reads_stopped_root) {
      std::fprintf(stderr, "rank 0: the Bcast from a stopped root %s\n",
                   status.ok() ? "succeeded" : absl::StrCat("failed: ", status.ToString()).c_str());
      return 13;
    }
    if (not_the_roots > 0) {
      std::fprintf(stderr, "rank 0: %zu bytes of the Bcast's buffer are not the root's\n",
                   not_the_roots);
      return 16;
    }
    if (took > kDeadline + absl::Seconds(1)) {
      std::fprintf(stderr, "rank 0: the Bcast ended after %s, past its deadline and a second\n",
                   absl::FormatDuration(took).c_str());
      return 14;
    }
    // The root sends on: its data reaches this host and waits in its sockets.
    absl::SleepFor(absl::Seconds(1));
  }  // The communicator is destroyed here.
  for (size_t i = 0; i < kBytes; ++i) {
    if (buffer[i] != kCanary) {
      std::fprintf(stderr,
                   "rank 0: byte %zu of the Bcast's buffer was written after the "
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

// The same promise when the call ends for another rank's failure while a live peer's
// data is still to come (a survivor on ofi:tcp crashed so in the fault campaign:
// libfabric, closing its endpoint, delivered into a receive posted by a call that had
// long returned). Rank 0 gathers (linear: it posts a receive from each rank); rank 1
// aborts the job; rank 2 sleeps, without progress so that it has not heard of the
// abort, and then sends its block. Rank 0's Gather fails; it makes its receive
// buffer unreadable and unwritable (a later touch is a SIGSEGV), waits for rank 2's
// block to reach its host, and destroys its communicator.
struct LateSender {
  Providers providers;
  size_t block_bytes;  // eager (below the providers' rendezvous sizes) or not
};

class LateSenderTest : public ::testing::TestWithParam<LateSender> {};

int LateSenderRankMain(const LateSender& param, int rank, ForkMeeting& meeting) {
  setenv("ZCOLL_LOCAL_PROVIDER", param.providers.local, 1);
  setenv("ZCOLL_PROVIDER", param.providers.network, 1);
  const size_t block = param.block_bytes;
  const size_t mapped = (3 * block + 4095) / 4096 * 4096;
  void* recv = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (recv == MAP_FAILED) return 10;
  std::vector<char> send(block, static_cast<char>(rank + 1));
  {
    CommunicatorOptions options;
    options.timeout = absl::Seconds(30);
    options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, 3);
    options.emulated_nodes = param.providers.nodes;
    absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: Create: %s\n", rank, comm.status().ToString().c_str());
      return 11;
    }
    if (!comm->SetAlgorithm(Collective::kGather, "linear").ok() || !comm->Barrier().ok()) return 12;
    if (rank == 1) {
      absl::SleepFor(absl::Milliseconds(100));
      (void)comm->Abort("the test fails the job");
      return 0;
    }
    if (rank == 2) {
      absl::SleepFor(absl::Milliseconds(600));
      (void)comm->Gather(send.data(), nullptr, block, DataType::kUint8, 0);
      // Its block (or the offer of it) is out; the communicator goes after a while.
      absl::SleepFor(absl::Seconds(1));
      return 0;
    }
    const absl::Time start = absl::Now();
    const absl::Status status =
        comm->Gather(send.data(), recv, block, DataType::kUint8, 0, start + kDeadline);
    const absl::Duration took = absl::Now() - start;
    if (mprotect(recv, mapped, PROT_NONE) != 0) return 13;
    if (status.ok()) {
      std::fprintf(stderr, "rank 0: the Gather of an aborted job succeeded\n");
      return 14;
    }
    if (took > kDeadline + absl::Seconds(1)) {
      std::fprintf(stderr, "rank 0: the Gather failed after %s\n",
                   absl::FormatDuration(took).c_str());
      return 15;
    }
    // The abort's reason arrived, though rank 1 left right after it (its notice must
    // have reached this rank by then, not have waited in its provider).
    if (!absl::StrContains(status.message(), "rank 1 called Abort: the test fails the job")) {
      std::fprintf(stderr, "rank 0: the Gather's error does not give the abort's reason: %s\n",
                   status.ToString().c_str());
      return 16;
    }
    absl::SleepFor(absl::Milliseconds(1500));  // rank 2's block arrives meanwhile
  }  // The communicator is destroyed here: a touch of `recv` is a SIGSEGV.
  return 0;
}

TEST_P(LateSenderTest, ALivePeersLateBlockNeverReachesTheFailedCallsBuffer) {
  const LateSender param = GetParam();
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      3, [&](int rank, ForkMeeting& meeting) { return LateSenderRankMain(param, rank, meeting); },
      absl::Seconds(60));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE((*outcomes)[rank].finished && (*outcomes)[rank].signal == 0 &&
                (*outcomes)[rank].exit_code == 0)
        << "rank " << rank << ": exit " << (*outcomes)[rank].exit_code << ", signal "
        << (*outcomes)[rank].signal;
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, LateSenderTest,
                         ::testing::Values(LateSender{{"shm", "ofi:tcp", 3}, 8 << 10},
                                           LateSender{{"shm", "ofi:tcp", 3}, 4 << 20},
                                           LateSender{{"shm", "ucx:tcp", 3}, 8 << 10},
                                           LateSender{{"shm", "ucx:tcp", 3}, 4 << 20},
                                           LateSender{{"shm", "ofi:tcp", 1}, 4 << 20}),
                         [](const ::testing::TestParamInfo<LateSender>& info) {
                           std::string name = info.param.providers.nodes == 1
                                                  ? info.param.providers.local
                                                  : info.param.providers.network;
                           for (char& c : name) {
                             if (c == ':') c = '_';
                           }
                           return name +
                                  (info.param.block_bytes > (64 << 10) ? "_large" : "_small");
                         });

}  // namespace
}  // namespace zcoll
