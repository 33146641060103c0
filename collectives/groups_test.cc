// Groups and the communicators made of them (Communicator::group, Create(group),
// CreateGroup), on threads over loopback and on forked processes over shm and tcp.

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "core/group.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using testing::CommunicatorJob;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::RankControl;
using testing::RunCommunicatorJob;

class GroupsTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  void Run(const std::function<void(Communicator&, RankControl&)>& body) {
    const absl::Status status = RunCommunicatorJob(GetParam(), body);
    EXPECT_TRUE(status.ok()) << status;
  }
};

// The communicator works: every rank's job rank, summed by an allreduce, is the sum
// of `job_ranks`.
void ExpectSumOfJobRanks(Communicator& comm, absl::Span<const int> job_ranks) {
  const std::vector<int64_t> mine = {comm.group().job_rank(comm.rank()), 1};
  std::vector<int64_t> sums(2);
  const absl::Status status =
      comm.Allreduce<int64_t>(mine, absl::MakeSpan(sums), PredefinedOp::kSum);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(sums[0], std::accumulate(job_ranks.begin(), job_ranks.end(), int64_t{0}));
  EXPECT_EQ(sums[1], static_cast<int64_t>(job_ranks.size()));
}

TEST_P(GroupsTest, ACommunicatorsGroupIsItsProcessesInRankOrder) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    const Group world = comm.group();
    ASSERT_EQ(world.size(), size);
    EXPECT_EQ(world.rank(), rank);
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(world.job_rank(r), r);
    }
    // A split in reverse order: its group lists the same processes backwards.
    absl::StatusOr<std::optional<Communicator>> reversed = comm.Split(0, size - rank);
    ASSERT_TRUE(reversed.ok()) << reversed.status();
    const Group backwards = (*reversed)->group();
    EXPECT_EQ(backwards.rank(), size - 1 - rank);
    EXPECT_EQ(Group::Compare(world, backwards),
              size == 1 ? GroupComparison::kIdentical : GroupComparison::kSimilar);
    std::vector<int> all(static_cast<size_t>(size));
    std::iota(all.begin(), all.end(), 0);
    absl::StatusOr<std::vector<int>> translated = world.TranslateRanks(all, backwards);
    ASSERT_TRUE(translated.ok()) << translated.status();
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ((*translated)[r], size - 1 - r);
    }
  });
}

TEST_P(GroupsTest, CreateMakesSeveralDisjointGroupsAtOnceAndNoneForTheRest) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    const Group world = comm.group();
    // The even ranks from the top down and the odd ranks, but for the last rank, which
    // passes the empty group (as kUndefinedColor in Split).
    std::vector<int> evens, odds;
    for (int r = size - 2; r >= 0; --r) {
      if (r % 2 == 0) evens.push_back(r);
    }
    for (int r = 1; r < size - 1; r += 2) odds.push_back(r);
    const bool last = rank == size - 1;
    const std::vector<int>& mine = last ? std::vector<int>{} : rank % 2 == 0 ? evens : odds;
    absl::StatusOr<Group> group = world.Incl(mine);
    ASSERT_TRUE(group.ok()) << group.status();
    absl::StatusOr<std::optional<Communicator>> made = comm.Create(*group);
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_EQ(made->has_value(), !last);
    if (!last) {
      Communicator& sub = **made;
      EXPECT_EQ(sub.size(), static_cast<int>(mine.size()));
      EXPECT_EQ(mine[sub.rank()], rank);
      EXPECT_EQ(Group::Compare(sub.group(), *group), GroupComparison::kIdentical);
      ExpectSumOfJobRanks(sub, mine);
    }
    // The MPI-1 form: every rank passes the same group; the others get nothing.
    const int half = (size + 1) / 2;
    absl::StatusOr<Group> lower = world.RangeIncl({{0, half - 1, 1}});
    ASSERT_TRUE(lower.ok()) << lower.status();
    made = comm.Create(*lower);
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_EQ(made->has_value(), rank < half);
    if (rank < half) ExpectSumOfJobRanks(**made, lower->job_ranks());
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(GroupsTest, CreateRefusesGroupsThatBreakTheRulesOnEveryRank) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    if (size < 2) GTEST_SKIP() << "two ranks are needed to disagree";
    const Group world = comm.group();
    // Rank 1 passes the whole group in another order than the others.
    std::vector<int> order(static_cast<size_t>(size));
    std::iota(order.begin(), order.end(), 0);
    if (rank == 1) std::reverse(order.begin(), order.end());
    absl::StatusOr<std::optional<Communicator>> made = comm.Create(*world.Incl(order));
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument) << made.status();
    EXPECT_THAT(made.status().message(),
                AnyOf(HasSubstr("passed another group"), HasSubstr("of them passed it")));
    // Rank 0 passes {0, 1} while rank 1 passes {1}: groups that overlap.
    const std::vector<int> pair = {0, 1}, single = {1};
    const Group overlapping = *world.Incl(rank == 0   ? absl::MakeConstSpan(pair)
                                          : rank == 1 ? absl::MakeConstSpan(single)
                                                      : absl::Span<const int>());
    made = comm.Create(overlapping);
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument) << made.status();
    // A process of another communicator: the top half's group, passed to the bottom
    // half's communicator.
    absl::StatusOr<std::optional<Communicator>> halves = comm.Split(rank < size / 2 ? 0 : 1, 0);
    ASSERT_TRUE(halves.ok()) << halves.status();
    const Group top = *world.RangeIncl({{size / 2, size - 1, 1}});
    made = (*halves)->Create(rank < size / 2 ? top : (*halves)->group());
    if (rank < size / 2) {
      EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument) << made.status();
      EXPECT_THAT(made.status().message(), HasSubstr("not in this communicator"));
    } else {
      EXPECT_TRUE(made.ok()) << made.status();
    }
    // Refused arguments are not failures of the job.
    EXPECT_OK(comm.status());
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(GroupsTest, CreateGroupIsCollectiveOverTheGroupOnly) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    const Group world = comm.group();
    // The odd ranks make theirs while the even ranks make theirs with another tag,
    // backwards; neither half waits for the other.
    std::vector<int> mine;
    for (int r = 0; r < size; ++r) {
      if (r % 2 == rank % 2) mine.push_back(r);
    }
    if (rank % 2 == 0) std::reverse(mine.begin(), mine.end());
    absl::StatusOr<std::optional<Communicator>> made =
        comm.CreateGroup(*world.Incl(mine), rank % 2 == 0 ? 4 : 9);
    ASSERT_TRUE(made.ok()) << made.status();
    ASSERT_TRUE(made->has_value());
    EXPECT_EQ((*made)->size(), static_cast<int>(mine.size()));
    EXPECT_EQ(mine[(*made)->rank()], rank);
    ExpectSumOfJobRanks(**made, mine);
    // Rank 0 alone, while the rest are not asked.
    if (rank == 0) {
      made = comm.CreateGroup(*world.Incl({0}), 1);
      ASSERT_TRUE(made.ok()) << made.status();
      EXPECT_EQ((*made)->size(), 1);
    }
    made = comm.CreateGroup(Group::Empty(), 0);
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_FALSE(made->has_value());
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(GroupsTest, CreateGroupRefusesTagsThatDisagree) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    if (size < 2) GTEST_SKIP() << "two ranks are needed to disagree";
    absl::StatusOr<std::optional<Communicator>> made =
        comm.CreateGroup(comm.group(), rank == size - 1 ? 8 : 7);
    EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument) << made.status();
    EXPECT_THAT(made.status().message(), HasSubstr("passed tag"));
    EXPECT_OK(comm.Barrier());
  });
}

TEST_P(GroupsTest, CreateGroupByAnOutsiderFailsTheJob) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    if (size < 2) GTEST_SKIP() << "an outsider needs a group without it";
    // Every rank has finished Create before any leaves this barrier and fails the job
    // (which may end a slower rank's barrier: the failure reaches every operation).
    const absl::Status entered = comm.Barrier();
    EXPECT_THAT(entered.code(), AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted))
        << entered;
    const absl::Time start = absl::Now();
    // Everyone passes {0}: rank 0 belongs to it, the others do not.
    absl::StatusOr<std::optional<Communicator>> made = comm.CreateGroup(*comm.group().Incl({0}), 3);
    // Rank 0's call may finish before the others fail the job, or meet the failure.
    if (rank != 0) {
      EXPECT_THAT(made.status().code(),
                  AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
          << made.status();
    } else {
      EXPECT_THAT(made.status().code(), AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted))
          << made.status();
    }
    // The job has failed: the barrier returns at once with the outsider's reason.
    const absl::Status barrier = comm.Barrier();
    EXPECT_EQ(barrier.code(), absl::StatusCode::kAborted) << barrier;
    EXPECT_THAT(barrier.message(), HasSubstr("this rank is not in the group it passed"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  });
}

std::vector<CommunicatorJob> Jobs() {
  std::vector<CommunicatorJob> jobs;
  for (int size = 1; size <= 6; ++size) jobs.push_back({.size = size});
  jobs.push_back({.size = 4, .nodes = 2});
  jobs.push_back({.local_provider = "shm", .size = 3});
  jobs.push_back({.local_provider = "shm", .network_provider = "ofi:tcp", .size = 4, .nodes = 2});
  return jobs;
}

INSTANTIATE_TEST_SUITE_P(Jobs, GroupsTest, ::testing::ValuesIn(Jobs()),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

}  // namespace
}  // namespace zcoll
