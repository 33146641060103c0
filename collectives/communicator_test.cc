// Communicators on every kind of job: threads over loopback (1..8 ranks, 1..3
// emulated nodes) and forked processes over shm, libfabric and UCX, one node or
// several.

#include "collectives/communicator.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collectives/communicator_transport.h"
#include "collectives/topology_discovery.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"
#include "transport/bootstrap/fork_meeting_bootstrap.h"
#include "transport/bootstrap/forked_job.h"
#include "transport/bootstrap/in_process_bootstrap.h"
#include "transport/loopback/loopback_transport.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using testing::CommunicatorJob;
using ::testing::HasSubstr;
using testing::RankControl;
using testing::RunCommunicatorJob;

// Every rank sends `value` to the next rank and returns what the previous one sent,
// on `tag`.
uint64_t ShiftAround(Communicator& comm, uint64_t tag, uint64_t value) {
  const int size = comm.size(), rank = comm.rank();
  if (size == 1) return value;
  Transport& transport = comm.transport();
  uint64_t received = 0;
  Completion sent, got;
  EXPECT_OK(transport.PostRecv((rank + size - 1) % size, tag, &received, sizeof(received), &got));
  EXPECT_OK(transport.PostSend((rank + 1) % size, tag, &value, sizeof(value), &sent));
  const Completion* both[] = {&sent, &got};
  const absl::Status status = transport.WaitAll(both, comm.DefaultDeadline());
  EXPECT_TRUE(status.ok()) << status;
  return received;
}

class CommunicatorTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  void Run(const std::function<void(Communicator&, RankControl&)>& body) {
    const absl::Status status = RunCommunicatorJob(GetParam(), body);
    EXPECT_TRUE(status.ok()) << status;
  }
};

TEST_P(CommunicatorTest, KnowsItsRanksAndNodesAndPassesMessages) {
  const CommunicatorJob job = GetParam();
  Run([&](Communicator& comm, RankControl&) {
    EXPECT_EQ(comm.size(), job.size);
    EXPECT_EQ(comm.topology().size(), job.size);
    EXPECT_EQ(comm.topology().num_nodes(), job.nodes);
    absl::StatusOr<RankLocation> placement = DiscoverProcessPlacement();
    ASSERT_TRUE(placement.ok()) << placement.status();
    for (int rank = 0; rank < job.size; ++rank) {
      EXPECT_EQ(comm.topology().node_of(rank), static_cast<int64_t>(rank) * job.nodes / job.size);
      // Every rank runs here, with this test's binding.
      EXPECT_EQ(comm.topology().location(rank).package, placement->package);
      EXPECT_EQ(comm.topology().location(rank).numa, placement->numa);
    }
    absl::StatusOr<NodeHardware> hardware = DiscoverNodeHardware();
    ASSERT_TRUE(hardware.ok()) << hardware.status();
    if (hardware->packages == 1) {
      EXPECT_EQ(placement->package, 0);
    }
    const int size = comm.size(), rank = comm.rank();
    EXPECT_EQ(ShiftAround(comm, 7, 1000 + rank), 1000 + (rank + size - 1) % size);
    EXPECT_OK(comm.Barrier());
    EXPECT_OK(comm.status());
  });
}

TEST_P(CommunicatorTest, SplitOrdersByKeyAndKeepsTagSpacesApart) {
  const CommunicatorJob job = GetParam();
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    // Two colors; keys reverse the order within each.
    absl::StatusOr<std::optional<Communicator>> split = comm.Split(rank % 2, -rank);
    ASSERT_TRUE(split.ok()) << split.status();
    ASSERT_TRUE(split->has_value());
    Communicator& half = **split;
    std::vector<int> members;  // of my color, in the new order
    for (int r = size - 1; r >= 0; --r) {
      if (r % 2 == rank % 2) members.push_back(r);
    }
    EXPECT_EQ(half.size(), static_cast<int>(members.size()));
    EXPECT_EQ(members[half.rank()], rank);
    ASSERT_EQ(half.topology().size(), half.size());
    for (int r = 0; r < half.size(); ++r) {
      EXPECT_EQ(half.topology().node_name(half.topology().node_of(r)),
                comm.topology().node_name(comm.topology().node_of(members[r])));
    }
    absl::StatusOr<Communicator> dup = comm.Dup();
    ASSERT_TRUE(dup.ok()) << dup.status();
    EXPECT_EQ(dup->rank(), rank);
    EXPECT_EQ(dup->size(), size);
    EXPECT_TRUE(dup->topology() == comm.topology());

    // The same tag on three communicators at once, sends and receives posted in
    // crossed orders: each receive must get its own communicator's message.
    if (size > 1) {
      Communicator* comms[] = {&comm, &*dup, &half};
      uint64_t sent_values[3], received[3] = {};
      Completion sends[3], receives[3];
      for (int c = 0; c < 3; ++c) {
        Communicator& each = *comms[c];
        if (each.size() == 1) continue;
        sent_values[c] = (uint64_t{1} << 32) * (c + 1) + each.rank();
        ASSERT_OK(each.transport().PostSend((each.rank() + 1) % each.size(), 3, &sent_values[c],
                                            sizeof(uint64_t), &sends[c]));
      }
      for (int c = 2; c >= 0; --c) {
        Communicator& each = *comms[c];
        if (each.size() == 1) continue;
        ASSERT_OK(each.transport().PostRecv((each.rank() + each.size() - 1) % each.size(), 3,
                                            &received[c], sizeof(uint64_t), &receives[c]));
      }
      for (int c = 0; c < 3; ++c) {
        Communicator& each = *comms[c];
        if (each.size() == 1) continue;
        ASSERT_OK(each.transport().Wait(receives[c], each.DefaultDeadline()));
        ASSERT_OK(each.transport().Wait(sends[c], each.DefaultDeadline()));
        EXPECT_EQ(received[c],
                  (uint64_t{1} << 32) * (c + 1) + (each.rank() + each.size() - 1) % each.size())
            << "communicator " << c;
      }
    }
    EXPECT_OK(half.Barrier());
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(CommunicatorTest, UndefinedColorGetsNothingAndABadColorFailsEveryRank) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    absl::StatusOr<std::optional<Communicator>> split =
        comm.Split(rank == 0 ? kUndefinedColor : 4, 0);
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_EQ(split->has_value(), rank != 0);
    if (split->has_value()) {
      EXPECT_EQ((*split)->size(), size - 1);
    }

    split = comm.Split(rank == size - 1 ? -5 : 0, 0);
    EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(split.status().message(),
                HasSubstr(absl::StrCat("rank ", size - 1, " passed color -5")));
    // A refused argument is not a failure of the job.
    EXPECT_OK(comm.status());
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(CommunicatorTest, CommunicatorsRunConcurrentlyOnThreads) {
  Run([&](Communicator& comm, RankControl&) {
    constexpr int kThreads = 3;
    std::vector<Communicator> comms;
    for (int t = 0; t < kThreads; ++t) {
      absl::StatusOr<Communicator> dup = comm.Dup();
      ASSERT_TRUE(dup.ok()) << dup.status();
      comms.push_back(std::move(*dup));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Communicator& mine = comms[t];
        const int size = mine.size(), rank = mine.rank();
        for (int round = 0; round < 60; ++round) {
          const uint64_t value =
              (static_cast<uint64_t>(t) << 40) + (static_cast<uint64_t>(round) << 16) + rank;
          const uint64_t expected = (static_cast<uint64_t>(t) << 40) +
                                    (static_cast<uint64_t>(round) << 16) + (rank + size - 1) % size;
          ASSERT_EQ(ShiftAround(mine, 1, value), expected) << "thread " << t;
          if (round % 20 == 0) {
            // Splits of different communicators at once allocate context ids
            // concurrently.
            absl::StatusOr<std::optional<Communicator>> sub = mine.Split(rank % 2, rank);
            ASSERT_TRUE(sub.ok()) << sub.status();
            ASSERT_OK((*sub)->Barrier());
          }
        }
        EXPECT_OK(mine.Barrier());
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(CommunicatorTest, AbortReachesEveryRankAndSticks) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    absl::StatusOr<Communicator> dup = comm.Dup();
    ASSERT_TRUE(dup.ok()) << dup.status();
    // The last rank aborts once every other rank has finished Dup (each tells it so);
    // the others then wait in a barrier it never joins, which only the notice ends.
    const int aborter = size - 1;
    const absl::Time start = absl::Now();
    if (rank == aborter) {
      std::vector<char> ready(size);
      std::vector<Completion> heard(size);
      for (int peer = 0; peer < aborter; ++peer) {
        ASSERT_OK(comm.transport().PostRecv(peer, 9, &ready[peer], 1, &heard[peer]));
        ASSERT_OK(comm.transport().Wait(heard[peer], comm.DefaultDeadline()));
      }
      const absl::Status aborted = comm.Abort("the test says so");
      EXPECT_EQ(aborted.code(), absl::StatusCode::kAborted);
    } else {
      char ready = 1;
      Completion told;
      ASSERT_OK(comm.transport().PostSend(aborter, 9, &ready, 1, &told));
      // The aborter may act on this message before its sender sees the send complete;
      // the abort then stops this transport first and the wait reports that.
      const absl::Status sent = comm.transport().Wait(told, comm.DefaultDeadline());
      ASSERT_TRUE(sent.ok() || comm.status().code() == absl::StatusCode::kAborted) << sent;
      const absl::Status barrier = comm.Barrier();
      EXPECT_EQ(barrier.code(), absl::StatusCode::kAborted) << barrier;
    }
    EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "the notice came late";
    for (Communicator* each : {&comm, &*dup}) {
      const absl::Status status = each->status();
      EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
      EXPECT_THAT(status.message(),
                  HasSubstr(absl::StrCat("rank ", size - 1, " called Abort: the test says so")));
      EXPECT_EQ(each->Barrier().code(), absl::StatusCode::kAborted);
      EXPECT_EQ(each->Split(0, 0).status().code(), absl::StatusCode::kAborted);
      uint64_t byte = 0;
      Completion unused;
      EXPECT_EQ(each->transport().PostSend((rank + 1) % size, 0, &byte, 1, &unused).code(),
                absl::StatusCode::kAborted);
    }
  });
}

TEST_P(CommunicatorTest, AMissingRankFailsTheOthersAtTheirDeadline) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    if (size == 1) return;
    // Create can return on one rank before it has on every rank (over nodes, the
    // leaders' level is made after the node level): a first barrier takes every rank
    // past it, so that the short deadline below cannot expire inside another rank's
    // Create (seen under ThreadSanitizer on shm+ofi:tcp 4x2), which is not this test.
    // (A rank still finishing this barrier when another's deadline below passes hears
    // of the failure in it instead: Aborted.)
    const absl::Status first = comm.Barrier();
    EXPECT_TRUE(first.ok() || first.code() == absl::StatusCode::kAborted) << first;
    if (rank != 0) {
      const absl::Status barrier = comm.Barrier(absl::Now() + absl::Seconds(1));
      EXPECT_THAT(barrier.code(),
                  AnyOf(absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kAborted))
          << barrier;
    }
    // Rank 0 never came to the barrier, but hears of the failure.
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (comm.transport().Progress().ok() && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kAborted);
    EXPECT_EQ(comm.Barrier().code(), absl::StatusCode::kAborted);
  });
}

TEST_P(CommunicatorTest, ADeadRankFailsTheOthersQuickly) {
  if (GetParam().in_process() || GetParam().size == 1) {
    GTEST_SKIP() << "needs a rank that can die: processes, at least two";
  }
  Run([&](Communicator& comm, RankControl& control) {
    const int size = comm.size(), rank = comm.rank();
    // Create can return on one rank before it has on every rank (a communicator over
    // nodes makes its leaders' level after this rank's node level), and a rank that
    // died meanwhile would fail the others' Create, correctly but not what this test
    // is about: the dying rank leaves a first barrier, which every rank entered after
    // its Create, then dies; the others' first or second barrier fails.
    const absl::Time start = absl::Now();
    absl::Status barrier = comm.Barrier();
    if (rank == size - 1) {
      ASSERT_TRUE(barrier.ok()) << barrier;
      control.Die();
    }
    if (barrier.ok()) barrier = comm.Barrier();
    EXPECT_THAT(barrier.code(), AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kAborted))
        << barrier;
    EXPECT_LT(absl::Now() - start, absl::Seconds(20));
    EXPECT_FALSE(comm.status().ok());
  });
}

// A communicator's transport is the job's under the communicator's ranks and tags:
// one-sided transfers work through it, and what belongs to another communicator (or
// to no communicator) is refused with a sentence.
TEST_P(CommunicatorTest, ItsTransportPutsAndRefusesWhatIsNotItsOwn) {
  Run([&](Communicator& comm, RankControl&) {
    Transport& transport = comm.transport();
    EXPECT_EQ(transport.Connect({}).code(), absl::StatusCode::kFailedPrecondition);
    uint64_t byte = 0;
    Completion unused;
    const absl::Status high_tag = transport.PostSend((comm.rank() + 1) % comm.size(),
                                                     kMaxCommunicatorTag + 1, &byte, 1, &unused);
    EXPECT_EQ(high_tag.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(high_tag.message(), HasSubstr("largest tag"));
    const int size = comm.size(), rank = comm.rank();
    if (size == 1) return;
    absl::StatusOr<Communicator> dup = comm.Dup();
    ASSERT_TRUE(dup.ok()) << dup.status();

    // Each rank exposes one word; the rank before it puts its own rank there.
    const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    uint64_t window = 0;
    absl::StatusOr<std::unique_ptr<MemoryRegion>> region =
        transport.RegisterMemory(&window, sizeof(window), MemoryAccess::kRemoteWrite);
    ASSERT_TRUE(region.ok()) << region.status();
    std::string next_key(4096, '\0');
    Completion key_sent, key_received;
    ASSERT_OK(transport.PostRecv(next, 2, next_key.data(), next_key.size(), &key_received));
    ASSERT_OK(transport.PostSend(previous, 2, (*region)->packed_key().data(),
                                 (*region)->packed_key().size(), &key_sent));
    ASSERT_OK(transport.Wait(key_received, comm.DefaultDeadline()));
    ASSERT_OK(transport.Wait(key_sent, comm.DefaultDeadline()));
    next_key.resize(key_received.bytes());

    absl::StatusOr<std::unique_ptr<RemoteRegion>> foreign =
        dup->transport().ImportRegion(next, next_key);
    ASSERT_TRUE(foreign.ok()) << foreign.status();
    uint64_t mine = 100 + rank;
    const absl::Status refused = transport.PostPut(&mine, sizeof(mine), **foreign, 0, 4, &unused);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.message(), HasSubstr("not imported by this communicator's transport"));

    absl::StatusOr<std::unique_ptr<RemoteRegion>> remote = transport.ImportRegion(next, next_key);
    ASSERT_TRUE(remote.ok()) << remote.status();
    EXPECT_EQ((*remote)->peer(), next);
    Completion put, notified;
    ASSERT_OK(transport.PostNotifyRecv(previous, 4, &notified));
    ASSERT_OK(transport.PostPut(&mine, sizeof(mine), **remote, 0, 4, &put));
    ASSERT_OK(transport.Wait(put, comm.DefaultDeadline()));
    ASSERT_OK(transport.Wait(notified, comm.DefaultDeadline()));
    EXPECT_EQ(window, 100u + previous);
    // Nobody deregisters while a peer may still write.
    EXPECT_OK(comm.Barrier());
  });
}

std::vector<CommunicatorJob> Jobs() {
  std::vector<CommunicatorJob> jobs;
  for (int size = 1; size <= 8; ++size) jobs.push_back({.size = size});
  jobs.push_back({.size = 4, .nodes = 2});
  jobs.push_back({.size = 7, .nodes = 3});
  jobs.push_back({.local_provider = "shm", .size = 3});
  jobs.push_back({.local_provider = "shm", .network_provider = "ofi:tcp", .size = 4, .nodes = 2});
  jobs.push_back({.local_provider = "ofi:shm", .size = 2});
  jobs.push_back({.local_provider = "shm", .network_provider = "ucx:tcp", .size = 3, .nodes = 3});
  return jobs;
}

INSTANTIATE_TEST_SUITE_P(Jobs, CommunicatorTest, ::testing::ValuesIn(Jobs()),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

TEST(CommunicatorCreateTest, ATransportOfAnotherShapeIsRefused) {
  absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> bootstraps = CreateInProcessBootstraps(1);
  ASSERT_OK(bootstraps);
  std::shared_ptr<LoopbackFabric> fabric = LoopbackFabric::Create(2);
  absl::StatusOr<std::unique_ptr<Transport>> transport = fabric->CreateTransport(0);
  ASSERT_OK(transport);
  CommunicatorOptions options;
  options.bootstrap = std::move((*bootstraps)[0]);
  options.transport = std::move(*transport);
  absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(comm.status().message(),
              HasSubstr("CommunicatorOptions::transport is rank 0 of 2 but the bootstrap says "
                        "rank 0 of 1"));
}

// Settings that decide what the ranks must agree on (ZCOLL_CHUNK_BYTES here) differ
// on one rank: Create fails on every rank at once, naming the variable and both
// values, instead of a job whose ranks cut their messages differently.
// Forks 3 ranks, each setting its environment with `set_up(rank)` before Create, and
// expects every rank's Create to fail within 10 s with InvalidArgument whose message
// holds each of `expected(rank)`. (A rank's own diagnosis goes to stderr.)
void ExpectCreateRefusedOnEveryRank(
    const std::function<void(int rank)>& set_up,
    const std::function<std::vector<std::string>(int rank)>& expected, const std::string& what) {
  constexpr int kRanks = 3;
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      kRanks,
      [&](int rank, ForkMeeting& meeting) {
        setenv("ZCOLL_LOCAL_PROVIDER", "shm", 1);
        set_up(rank);
        CommunicatorOptions options;
        options.timeout = absl::Seconds(30);
        options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, kRanks);
        const absl::Time start = absl::Now();
        absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
        bool refused = comm.status().code() == absl::StatusCode::kInvalidArgument;
        for (const std::string& part : expected(rank)) {
          refused = refused && absl::StrContains(comm.status().message(), part);
        }
        if (!refused || absl::Now() - start > absl::Seconds(10)) {
          std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
          return 1;
        }
        return 0;
      },
      absl::Seconds(60));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_TRUE((*outcomes)[rank].finished && (*outcomes)[rank].exit_code == 0)
        << what << ": rank " << rank;
  }
}

TEST(CommunicatorCreateTest, RanksWhoseJobWideSettingsDifferAreRefusedOnEveryRank) {
  ExpectCreateRefusedOnEveryRank(
      [](int rank) {
        if (rank == 2) setenv("ZCOLL_CHUNK_BYTES", "65536", 1);
      },
      [](int rank) -> std::vector<std::string> {
        if (rank == 2) return {"ZCOLL_CHUNK_BYTES=65536", "ZCOLL_CHUNK_BYTES=(unset)"};
        return {"ZCOLL_CHUNK_BYTES=(unset)", "ZCOLL_CHUNK_BYTES=65536"};
      },
      "rank 2's ZCOLL_CHUNK_BYTES");
}

// A setting Create cannot accept, even on one rank only and even where nothing would
// read it (the network provider of a one-node job), fails Create on every rank at once,
// naming the variable, the value, the rank and the accepted forms.
TEST(CommunicatorCreateTest, ASettingThatDoesNotParseFailsCreateOnEveryRankNamingIt) {
  const std::pair<std::string, std::string> kBadSettings[] = {
      {"ZCOLL_TIMEOUT", "abc"},  {"ZCOLL_TIMEOUT", "-5"}, {"ZCOLL_TIMEOUT", "0"},
      {"ZCOLL_PROVIDER", "foo"}, {"ZCOLL_CHECK", "yes"},  {"ZCOLL_WAIT_SPIN_US", "10us"}};
  for (const auto& [variable, value] : kBadSettings) {
    ExpectCreateRefusedOnEveryRank(
        [&](int rank) {
          if (rank == 1) setenv(variable.c_str(), value.c_str(), 1);
        },
        [&](int rank) -> std::vector<std::string> {
          return {absl::StrCat(
              rank == 1 ? "rank 1: " : absl::StrCat("rank ", rank, ": rank 1 cannot join: "),
              variable, "='", value, "' is not accepted; it is ")};
        },
        absl::StrCat(variable, "=", value));
  }
}

// Ranks that outnumber this machine's cores make blocking waits yield at once (a
// spinning rank would keep its peer off the core); a job that fits does not. Emulated
// nodes share the host, so they count.
TEST(CommunicatorCreateTest, RanksBeyondTheCoresMarkTheMachineOversubscribed) {
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  ASSERT_GT(cores, 0);
  for (const CommunicatorJob& job :
       {CommunicatorJob{.size = cores + 1, .nodes = 2}, CommunicatorJob{.size = 1}}) {
    const bool expected = job.size > cores;
    const absl::Status status = RunCommunicatorJob(job, [&](Communicator&, RankControl&) {
      EXPECT_EQ(CoresOversubscribed(), expected) << job.size << " ranks, " << cores << " cores";
    });
    EXPECT_TRUE(status.ok()) << status;
  }
}

// Emulated NUMA domains split each node's ranks into even blocks (as ranks bound
// socket by socket would be), and a communicator split along them keeps them.
TEST(CommunicatorCreateTest, EmulatedNumaDomainsSplitEachNodeInBlocks) {
  const absl::Status status = RunCommunicatorJob(
      {.size = 7, .nodes = 2, .numa_domains = 2}, [](Communicator& comm, RankControl&) {
        // Node 0 holds ranks 0-3 (domains 0 0 1 1), node 1 ranks 4-6 (0 0 1).
        const std::vector<int> expected = {0, 0, 1, 1, 0, 0, 1};
        for (int r = 0; r < comm.size(); ++r) {
          EXPECT_EQ(comm.topology().location(r).numa, expected[r]) << "rank " << r;
          EXPECT_EQ(comm.topology().location(r).package, expected[r]) << "rank " << r;
        }
        absl::StatusOr<std::optional<Communicator>> node =
            comm.Split(comm.topology().node_of(comm.rank()), comm.rank());
        ASSERT_TRUE(node.ok()) << node.status();
        for (int r = 0; r < (*node)->size(); ++r) {
          const int parent = comm.topology().node_of(comm.rank()) == 0 ? r : 4 + r;
          EXPECT_EQ((*node)->topology().location(r).numa, expected[parent]) << "rank " << r;
        }
      });
  EXPECT_TRUE(status.ok()) << status;
}

// Emulated L3 groups split each NUMA domain's ranks into even blocks, numbered across
// the node's domains, and a communicator split along them keeps them.
TEST(CommunicatorCreateTest, EmulatedL3GroupsSplitEachDomainInBlocks) {
  const absl::Status status = RunCommunicatorJob(
      {.size = 7, .nodes = 2, .numa_domains = 2, .l3_groups = 2},
      [](Communicator& comm, RankControl&) {
        // Node 0: ranks 0-3, domains 0 0 1 1, L3 0 1 2 3; node 1: ranks
        // 4-6, domains 0 0 1, L3 0 1 2.
        const std::vector<int> expected = {0, 1, 2, 3, 0, 1, 2};
        for (int r = 0; r < comm.size(); ++r) {
          EXPECT_EQ(comm.topology().location(r).l3, expected[r]) << "rank " << r;
        }
        absl::StatusOr<std::optional<Communicator>> odd = comm.Split(comm.rank() % 2, comm.rank());
        ASSERT_TRUE(odd.ok()) << odd.status();
        for (int r = 0; r < (*odd)->size(); ++r) {
          EXPECT_EQ((*odd)->topology().location(r).l3, expected[2 * r + comm.rank() % 2])
              << "rank " << r;
        }
      });
  EXPECT_TRUE(status.ok()) << status;
}

// A bad count of emulated NUMA domains or L3 groups is refused, naming the option.
TEST(CommunicatorCreateTest, ABadEmulatedCountIsRefusedNamingIt) {
  for (const bool l3 : {false, true}) {
    absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> bootstraps =
        CreateInProcessBootstraps(1);
    ASSERT_OK(bootstraps);
    CommunicatorOptions options;
    options.bootstrap = std::move((*bootstraps)[0]);
    options.transport = *LoopbackFabric::Create(1)->CreateTransport(0);
    (l3 ? options.emulated_l3_groups : options.emulated_numa_domains) = -2;
    absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(comm.status().message(),
                HasSubstr(l3 ? "CommunicatorOptions::emulated_l3_groups is '-2'; it is a count "
                               "of L3 groups per NUMA domain, 1 or more"
                             : "CommunicatorOptions::emulated_numa_domains is '-2'; it is a "
                               "count of NUMA domains per node, 1 or more"));
  }
}

// Context ids are per process and come back when a communicator goes.
TEST(CommunicatorContextTest, IdsAreReusedAndTheirExhaustionIsAnError) {
  const absl::Status status = RunCommunicatorJob({.size = 2}, [](Communicator& comm, RankControl&) {
    for (int i = 0; i < 5000; ++i) {
      absl::StatusOr<Communicator> dup = comm.Dup();
      ASSERT_TRUE(dup.ok()) << "dup " << i << ": " << dup.status();
    }
    std::vector<Communicator> held;
    absl::Status exhausted;
    for (uint32_t i = 0; i < kMaxContexts; ++i) {
      absl::StatusOr<Communicator> dup = comm.Dup();
      if (!dup.ok()) {
        exhausted = dup.status();
        break;
      }
      held.push_back(std::move(*dup));
    }
    // The world communicator holds one id.
    EXPECT_EQ(held.size(), kMaxContexts - 1);
    EXPECT_EQ(exhausted.code(), absl::StatusCode::kResourceExhausted) << exhausted;
    held.clear();
    EXPECT_OK(comm.Dup());
  });
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace zcoll
