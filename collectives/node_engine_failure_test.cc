// The node engine's failure paths (node_engine.h), with ranks that are processes on
// one node sharing a segment: a rank killed or stopped in the middle of node
// collectives ends the call on every other rank with an error within the deadline,
// naming what happened; and a rank that reads a peer's buffer in place never returns
// success with what that peer's caller wrote after the peer's call failed.

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/communicator.h"
#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/scoped_environment.h"
#include "testing/status_assertions.h"
#include "transport/transport.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;
using ::zcoll::testing::ScopedEnvironment;

constexpr absl::Duration kTimeout = absl::Seconds(3);

// One node collective of a loop, sized to take the path named.
struct NodeCall {
  const char* name;
  std::function<absl::Status(Communicator&, std::vector<float>&, std::vector<float>&)> call;
  size_t elements;  // per buffer
  // The rank that dies or stops (-1: the last).
  int failing = -1;
  // Whether the node's ranks are declared to outnumber its cores (ZCOLL_CORES=1).
  bool oversubscribed = false;
  int FailingRank(const Communicator& comm) const {
    return failing < 0 ? comm.size() - 1 : failing;
  }
};

// A Bcast from rank 0 on the engine (on 3 ranks on 2 cores the table could choose
// messages).
absl::Status BcastOnTheEngine(Communicator& comm, std::vector<float>& in, std::vector<float>&) {
  RETURN_IF_ERROR(comm.SetAlgorithm(Collective::kBcast, "node"));
  return comm.Bcast(in.data(), in.size(), DataType::kFloat, 0);
}

std::vector<NodeCall> NodeCalls() {
  return {
      {"allreduce_inline",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>& out) {
         return comm.Allreduce(in.data(), out.data(), 2, DataType::kFloat, PredefinedOp::kSum);
       },
       2},
      {"allreduce_partitioned",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>& out) {
         return comm.Allreduce(in.data(), out.data(), in.size(), DataType::kFloat,
                               PredefinedOp::kSum);
       },
       1 << 18},
      {"bcast_in_place_from_the_root",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>&) {
         return comm.Bcast(in.data(), in.size(), DataType::kFloat, 0);
       },
       1 << 16},
      {"alltoall",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>& out) {
         return comm.Alltoall(in.data(), out.data(), in.size() / comm.size(), DataType::kFloat);
       },
       3 << 12},
      // A chain (node_engine_limits::Chained): the last rank reads its predecessor's
      // result as it is made; in the Exscan, the middle rank is the one that fails, so
      // that its successor waits for its progress.
      {"scan_chained",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>& out) {
         return comm.Scan(in.data(), out.data(), in.size(), DataType::kFloat, PredefinedOp::kSum);
       },
       1 << 18},
      {"exscan_chained_middle_rank",
       [](Communicator& comm, std::vector<float>& in, std::vector<float>& out) {
         return comm.Exscan(in.data(), out.data(), in.size(), DataType::kFloat, PredefinedOp::kSum);
       },
       1 << 18, 1},
      // Through the slots (node_engine_limits::BcastThroughSlots, 128 KiB on 3 ranks
      // declared on one core, within their capacity): a leaf fails, whose root has left
      // each call at once (it finds out two calls later, waiting to reuse its slots),
      // then the root, whose leaves wait for its pieces.
      {"bcast_through_slots", BcastOnTheEngine, 1 << 15, -1, true},
      {"bcast_through_slots_root", BcastOnTheEngine, 1 << 15, 0, true},
      // 512 KiB: the root reuses the slots, waiting for the leaves' progress.
      {"bcast_through_slots_reused", BcastOnTheEngine, 1 << 17, -1, true},
      // Released (node_engine_limits::ReleasedBarrier): the leaves wait for rank 0's
      // release, rank 0 for every word; a leaf fails, then rank 0.
      {"barrier_released",
       [](Communicator& comm, std::vector<float>&, std::vector<float>&) { return comm.Barrier(); },
       1, -1, true},
      {"barrier_released_rank_0",
       [](Communicator& comm, std::vector<float>&, std::vector<float>&) { return comm.Barrier(); },
       1, 0, true},
  };
}

class NodeEngineFailureTest : public ::testing::TestWithParam<NodeCall> {};

// The last rank (or the call's failing rank) dies at the 5th call; the others end
// within the deadline with the death named.
TEST_P(NodeEngineFailureTest, AKilledRankEndsTheCallOnTheOthers) {
  const NodeCall& node_call = GetParam();
  const CommunicatorJob job{
      .local_provider = "shm", .size = 3, .communicator_timeout = absl::Seconds(20)};
  std::optional<ScopedEnvironment> cores;
  if (node_call.oversubscribed) cores.emplace("ZCOLL_CORES", "1");
  const absl::Status status =
      RunCommunicatorJob(job, [&](Communicator& comm, RankControl& control) {
        ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
        if (node_call.oversubscribed) {
          ASSERT_TRUE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
        }
        std::vector<float> in(node_call.elements, 1.0f), out(node_call.elements);
        absl::Status result;
        absl::Time died_at = absl::InfiniteFuture(), failed_at = absl::InfiniteFuture();
        for (int i = 0; i < 200 && result.ok(); ++i) {
          if (i == 5) {
            if (comm.rank() == node_call.FailingRank(comm)) control.Die();
            died_at = absl::Now();
          }
          result = node_call.call(comm, in, out);
          if (!result.ok()) failed_at = absl::Now();
        }
        ASSERT_FALSE(result.ok()) << "rank " << comm.rank() << ": 200 calls without the dead rank";
        EXPECT_THAT(std::string(result.message()),
                    HasSubstr(absl::StrCat("rank ", node_call.FailingRank(comm))))
            << result;
        EXPECT_LT(failed_at - died_at, absl::Seconds(5)) << result;
      });
  EXPECT_TRUE(status.ok()) << status;
}

// The last rank (or the call's failing rank) stops itself (SIGSTOP) at the 5th call:
// the others end at their
// deadline, naming it stopped, and then let it go on (SIGCONT), after which it finds
// the job failed.
TEST_P(NodeEngineFailureTest, AStoppedRankEndsTheCallOnTheOthersAtTheDeadline) {
  const NodeCall& node_call = GetParam();
  const CommunicatorJob job{.local_provider = "shm", .size = 3, .communicator_timeout = kTimeout};
  std::optional<ScopedEnvironment> cores;
  if (node_call.oversubscribed) cores.emplace("ZCOLL_CORES", "1");
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    if (node_call.oversubscribed) {
      ASSERT_TRUE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    }
    const int stopping = node_call.FailingRank(comm);
    std::vector<int64_t> pids(comm.size());
    const int64_t mine = getpid();
    ASSERT_OK(comm.Allgather(&mine, pids.data(), 1, DataType::kInt64));
    std::vector<float> in(node_call.elements, 1.0f), out(node_call.elements);
    absl::Status result;
    absl::Time stopped_at = absl::InfiniteFuture(), failed_at = absl::InfiniteFuture();
    for (int i = 0; i < 200 && result.ok(); ++i) {
      if (i == 5) {
        if (comm.rank() == stopping) raise(SIGSTOP);
        stopped_at = absl::Now();
      }
      result = node_call.call(comm, in, out);
      if (!result.ok()) failed_at = absl::Now();
    }
    if (comm.rank() == stopping) {
      EXPECT_FALSE(result.ok()) << "the stopped rank went on as if nothing happened";
      return;
    }
    // Resumed by whichever rank fails first (a stopped process ignores the second).
    kill(static_cast<pid_t>(pids[stopping]), SIGCONT);
    ASSERT_FALSE(result.ok()) << "rank " << comm.rank() << ": 200 calls past a stopped rank";
    EXPECT_THAT(std::string(result.message()),
                AnyOf(HasSubstr("stopped"), HasSubstr(absl::StrCat("rank ", stopping))))
        << result;
    EXPECT_LT(failed_at - stopped_at, kTimeout + absl::Seconds(1)) << result;
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Calls, NodeEngineFailureTest, ::testing::ValuesIn(NodeCalls()),
                         [](const ::testing::TestParamInfo<NodeCall>& info) {
                           return std::string(info.param.name);
                         });

// A blocking node call given a deadline of its own, whose peer does not come: it ends
// at that deadline saying so and naming the rank it waited for (the call runs without
// a Request, which says the same for a nonblocking one); the peer, arriving later,
// finds the job failed.
TEST(NodeEngineDeadlineTest, ABlockingCallEndsAtTheDeadlineItWasGiven) {
  const CommunicatorJob job{
      .local_provider = "shm", .size = 2, .communicator_timeout = absl::Seconds(20)};
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    float value = 1.0f, sum = 0.0f;
    if (comm.rank() == 1) absl::SleepFor(absl::Seconds(1));
    const absl::Time start = absl::Now();
    const absl::Status result = comm.Allreduce(&value, &sum, 1, DataType::kFloat,
                                               PredefinedOp::kSum, start + absl::Milliseconds(200));
    if (comm.rank() == 1) {
      EXPECT_FALSE(result.ok()) << "rank 1 completed a call rank 0 had given up";
      return;
    }
    EXPECT_EQ(result.code(), absl::StatusCode::kDeadlineExceeded) << result;
    EXPECT_THAT(std::string(result.message()),
                HasSubstr("by the deadline the call or its Wait was given"))
        << result;
    EXPECT_THAT(std::string(result.message()), HasSubstr("waiting for rank 1")) << result;
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(900)) << result;
  });
  EXPECT_TRUE(status.ok()) << status;
}

// The same call without a deadline of its own ends at the communicator's timeout, and
// says which limit that was (CommunicatorOptions::timeout here; ZCOLL_TIMEOUT when the
// options leave it unset), nonblocking or not.
TEST(NodeEngineDeadlineTest, ACallWithoutADeadlineNamesTheCommunicatorsTimeout) {
  const CommunicatorJob job{
      .local_provider = "shm", .size = 2, .communicator_timeout = absl::Seconds(2)};
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    float value = 1.0f, sum = 0.0f;
    if (comm.rank() == 1) absl::SleepFor(absl::Seconds(3));
    const absl::Status result =
        comm.Allreduce(&value, &sum, 1, DataType::kFloat, PredefinedOp::kSum);
    if (comm.rank() == 1) {
      EXPECT_FALSE(result.ok()) << "rank 1 completed a call rank 0 had given up";
      return;
    }
    EXPECT_EQ(result.code(), absl::StatusCode::kDeadlineExceeded) << result;
    EXPECT_THAT(std::string(result.message()), HasSubstr("within the communicator's timeout of 2s "
                                                         "(CommunicatorOptions::timeout)"))
        << result;
  });
  EXPECT_TRUE(status.ok()) << status;
}

// Rank 1 starts an Allgather whose blocks are read in place (beyond a slot) and stops
// before rank 0 has published. Rank 0 reads rank 1's block, then waits for rank 1 to
// read its own, fails at its deadline and overwrites its send buffer with a canary
// before resuming rank 1. Rank 1 then reads the canary: it must not return success
// with it.
TEST(NodeEngineExposureTest, AReaderOfAFailedRanksBufferFailsToo) {
  constexpr size_t kElements = 1 << 16;
  constexpr float kCanary = -7.0f;
  const CommunicatorJob job{.local_provider = "shm", .size = 2, .communicator_timeout = kTimeout};
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "this node's ranks cannot read each other's memory";
    std::vector<int64_t> pids(2);
    const int64_t mine = getpid();
    ASSERT_OK(comm.Allgather(&mine, pids.data(), 1, DataType::kInt64));
    std::vector<float> send(kElements, static_cast<float>(comm.rank() + 1));
    std::vector<float> recv(2 * kElements, 0.0f);
    if (comm.rank() == 1) {
      absl::StatusOr<Request> request =
          comm.IAllgather(send.data(), recv.data(), kElements, DataType::kFloat);
      ASSERT_TRUE(request.ok()) << request.status();
      raise(SIGSTOP);
      const absl::Status result = request->Wait();
      bool canary = false;
      for (size_t i = 0; i < kElements; ++i) canary = canary || recv[i] == kCanary;
      EXPECT_FALSE(result.ok() && canary)
          << "rank 1 returned success with what rank 0's caller wrote after its call failed";
      EXPECT_FALSE(result.ok()) << "rank 0's call failed, so rank 1's cannot have succeeded";
      return;
    }
    absl::SleepFor(absl::Milliseconds(300));
    const absl::Status result =
        comm.Allgather(send.data(), recv.data(), kElements, DataType::kFloat);
    std::fill(send.begin(), send.end(), kCanary);
    kill(static_cast<pid_t>(pids[1]), SIGCONT);
    EXPECT_FALSE(result.ok()) << "rank 0 returned before rank 1 had read its buffer";
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A Gatherv or Scatterv on the engine, 3 ranks, whose ranks disagree on rank 1's
// block of `elements` floats: Gatherv's root expects one element fewer from rank 1 than
// rank 1 sends; Scatterv's root sends rank 1 one element more than rank 1 expects.
// Every rank ends within the deadline and nothing is written past a buffer (each ends
// in a canary block that no correct call writes); `check` looks at each rank's status.
// `reader_last`: the rank that reads rank 1's block (Gatherv's root, Scatterv's rank
// 1) enters the call 100 ms after the others, so that it finds their publications.
void RunDisagreeingBlock(
    size_t elements, bool reader_last,
    const std::function<void(bool gather, int rank, const absl::Status&)>& check) {
  constexpr float kCanary = -3.0f;
  for (const bool gather : {true, false}) {
    SCOPED_TRACE(gather ? "gatherv" : "scatterv");
    const CommunicatorJob job{.local_provider = "shm", .size = 3, .communicator_timeout = kTimeout};
    const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
      ASSERT_TRUE(comm.node_single_copy()) << "this node's ranks cannot read each other's memory";
      // (3 ranks on 2 cores: the table could choose messages for these.)
      ASSERT_OK(comm.SetAlgorithm(gather ? Collective::kGatherv : Collective::kScatterv, "node"));
      const int size = comm.size(), rank = comm.rank();
      std::vector<size_t> counts(size, elements), displs(size);
      counts[1] = gather ? elements - 1 : elements + 1;
      // Rank 1's block last, so that a write past it would reach the canary.
      size_t extent = 0;
      for (int r : {0, 2, 1}) {
        displs[r] = extent;
        extent += counts[r];
      }
      std::vector<float> root_buffer(extent + 1024, 1.0f), mine(elements + 1024, 2.0f);
      std::fill(root_buffer.begin() + extent, root_buffer.end(), kCanary);
      std::fill(mine.begin() + elements, mine.end(), kCanary);
      const bool reader = gather ? rank == 0 : rank == 1;
      if (reader_last && reader) absl::SleepFor(absl::Milliseconds(100));
      const absl::Time start = absl::Now();
      const absl::Status result = gather
                                      ? comm.Gatherv(mine.data(), elements, root_buffer.data(),
                                                     counts, displs, DataType::kFloat, 0)
                                      : comm.Scatterv(root_buffer.data(), counts, displs,
                                                      mine.data(), elements, DataType::kFloat, 0);
      EXPECT_LT(absl::Now() - start, kTimeout + absl::Seconds(1)) << result;
      check(gather, rank, result);
      for (size_t i = extent; i < root_buffer.size(); ++i) {
        ASSERT_EQ(root_buffer[i], kCanary) << "rank " << rank << " wrote past a buffer at " << i;
      }
      for (size_t i = elements; i < mine.size(); ++i) {
        ASSERT_EQ(mine[i], kCanary) << "rank " << rank << " wrote past a buffer at " << i;
      }
    });
    EXPECT_TRUE(status.ok()) << status;
  }
}

// A Bcast through the slots (node_engine_limits::BcastThroughSlots) whose pieces lie in
// another leaf's slot too: 3 ranks declared on one core, rank 0 broadcasts 128 KiB
// (its slot, then rank 1's), rank 1 calls a Gather of 60 KiB instead 20 ms later (a
// leaf's block, copied into its own slot, and it leaves: it needs nothing of the
// others), and rank 2 comes 100 ms after that. The root must not write its second
// half where rank 1's block lies (nor rank 1 its block over the root's), so it waits
// for rank 1's word and refuses the call, naming rank 1; rank 2 must not return
// success with anything but the root's vector.
TEST(NodeEngineBcastThroughSlotsTest, ALeafDoesNotPassOffAnotherCallsSlotAsTheRoots) {
  constexpr size_t kElements = 1 << 15;  // 128 KiB of floats
  const CommunicatorJob job{.local_provider = "shm", .size = 3, .communicator_timeout = kTimeout};
  const ScopedEnvironment cores("ZCOLL_CORES", "1");
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
    ASSERT_TRUE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    ASSERT_OK(comm.SetAlgorithm(Collective::kBcast, "node"));
    ASSERT_OK(comm.SetAlgorithm(Collective::kGather, "node"));
    ASSERT_OK(comm.Barrier());
    std::vector<float> vector(kElements, comm.rank() == 0 ? 5.0f : 0.0f);
    if (comm.rank() == 1) {
      absl::SleepFor(absl::Milliseconds(20));
      std::vector<float> block(15 * 1024, -9.0f);
      // (It may finish: its part needed nothing of the others.)
      comm.Gather(block.data(), nullptr, block.size(), DataType::kFloat, 0).IgnoreError();
      return;
    }
    if (comm.rank() == 2) absl::SleepFor(absl::Milliseconds(120));
    const absl::Status result = comm.Bcast(vector.data(), kElements, DataType::kFloat, 0);
    if (comm.rank() == 0) {
      EXPECT_FALSE(result.ok()) << "the root wrote into the slot of a rank in another call";
      EXPECT_THAT(std::string(result.message()), HasSubstr("rank 1")) << result;
      return;
    }
    size_t wrong = 0;
    for (float value : vector) wrong += value != 5.0f ? 1 : 0;
    EXPECT_FALSE(result.ok() && wrong > 0)
        << "rank 2 returned success with " << wrong << " elements not the root's";
    EXPECT_FALSE(result.ok()) << "rank 2's root refused the call";
    EXPECT_THAT(std::string(result.message()), AnyOf(HasSubstr("rank 0"), HasSubstr("rank 1")))
        << result;
  });
  EXPECT_TRUE(status.ok()) << status;
}

// The v-collectives' cooperative copies write into a peer's buffer: ranks that
// disagree on a block's length fail the call with an error naming the counts (the
// writer checks the length its peer published before writing). The ranks that write
// and are written into fail; rank 2, whose part was right, may have finished it.
TEST(NodeEngineCountsTest, CooperativeWritesRefuseCountsTheRanksDisagreeOn) {
  // 128 KiB of floats: written cooperatively.
  RunDisagreeingBlock(1 << 15, /*reader_last=*/false,
                      [](bool gather, int rank, const absl::Status& result) {
                        if (rank != 2) {
                          EXPECT_FALSE(result.ok()) << "rank " << rank << ": the counts disagree";
                        }
                        // Whichever side finds the difference first names it; the others
                        // learn that.
                        if (gather ? rank == 1 : rank == 0) {
                          EXPECT_THAT(std::string(result.message()),
                                      AnyOf(HasSubstr("disagree on the counts"),
                                            HasSubstr("expects"), HasSubstr("recv_count is")))
                              << result;
                        }
                      });
}

// Small v-collectives on the engine (RunSmall's copies, node_engine.h) read their
// blocks from the slots: the rank that reads a block whose length its count does not
// match fails the call with an error naming the counts, and copies nothing past its
// buffer. It comes last, so that it reads on RunSmall's path (a late peer hands the
// call to the general one). The rank that publishes leaves the call at once (it reads
// nothing), so it and rank 2 may finish theirs.
TEST(NodeEngineCountsTest, SmallCallsRefuseCountsTheRanksDisagreeOn) {
  // Within kEagerBytes: RunSmall's path.
  RunDisagreeingBlock(
      4, /*reader_last=*/true, [](bool gather, int rank, const absl::Status& result) {
        if (gather ? rank != 0 : rank != 1) return;
        EXPECT_FALSE(result.ok()) << "rank " << rank << ": the counts disagree";
        EXPECT_THAT(std::string(result.message()),
                    AnyOf(HasSubstr("sent 4 elements but this rank expects 3"),
                          HasSubstr("sends this rank 5 elements but recv_count is 4")))
            << result;
      });
}

}  // namespace
}  // namespace zcoll
