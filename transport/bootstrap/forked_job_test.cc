#include "transport/bootstrap/forked_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

TEST(ForkedJobTest, RanksGatherEachOthersValuesAndReportExitCodes) {
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      4,
      [](int rank, ForkMeeting& meeting) {
        const std::vector<std::string> all = meeting.AllGather(rank, absl::StrCat("rank", rank));
        for (int r = 0; r < 4; ++r) {
          if (all[r] != absl::StrCat("rank", r)) return 10 + r;
        }
        meeting.Barrier(4);
        return rank;  // distinct exit codes show each outcome is the right rank's
      },
      absl::Seconds(30));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE((*outcomes)[rank].finished);
    EXPECT_EQ((*outcomes)[rank].exit_code, rank);
  }
}

TEST(ForkedJobTest, AKilledRankMakesTheOthersTimeOutInsteadOfHanging) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      2,
      [](int rank, ForkMeeting& meeting) {
        if (rank == 1) kill(getpid(), SIGKILL);
        meeting.Barrier(2);
        return 0;
      },
      absl::Milliseconds(500));
  ASSERT_OK(outcomes);
  EXPECT_EQ((*outcomes)[1].signal, SIGKILL);
  EXPECT_EQ((*outcomes)[0].exit_code, ForkMeeting::kMeetingTimedOut);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(ForkedJobTest, WhatADeadRankLeftInDevShmIsSwept) {
  std::string leftover;
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      1,
      [](int rank, ForkMeeting&) {
        const std::string name = absl::StrCat("/", SharedMemoryPrefix(getpid()), "test");
        const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
        if (fd < 0) return 1;
        kill(getpid(), SIGKILL);  // dies without unlinking
        return 0;
      },
      absl::Seconds(30));
  ASSERT_OK(outcomes);
  EXPECT_EQ((*outcomes)[0].signal, SIGKILL);
  DIR* directory = opendir("/dev/shm");
  ASSERT_NE(directory, nullptr);
  while (dirent* entry = readdir(directory)) {
    EXPECT_FALSE(absl::EndsWith(entry->d_name, "-test") &&
                 absl::StartsWith(entry->d_name, "zcoll-"))
        << entry->d_name << " was left behind";
  }
  closedir(directory);
}

// Another PID namespace (a container, a neighbouring Bazel sandbox) reuses the same
// pids in the same /dev/shm: its objects are not this namespace's to sweep.
TEST(ForkedJobTest, TheSweepLeavesOtherPidNamespacesAlone) {
  const std::string ours = SharedMemoryPrefix(getpid());
  ASSERT_TRUE(absl::StartsWith(ours, "zcoll-"));
  ASSERT_TRUE(absl::EndsWith(ours, absl::StrCat("-", getpid(), "-")));
  EXPECT_NE(ours, absl::StrCat("zcoll-0-", getpid(), "-")) << "no PID namespace id";
  const std::string theirs = absl::StrCat("/zcoll-1-", getpid(), "-test");
  const int fd = shm_open(theirs.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(SweepSharedMemory(getpid()), 0);
  EXPECT_EQ(shm_unlink(theirs.c_str()), 0) << "the sweep removed another namespace's object";
}

TEST(ForkedJobTest, SizesOutsideTheLimitAreRefused) {
  EXPECT_EQ(RunForkedJob(
                0, [](int, ForkMeeting&) { return 0; }, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunForkedJob(
                65, [](int, ForkMeeting&) { return 0; }, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zcoll
