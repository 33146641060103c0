// SpreadOverCpus: which CPU a rank's place names, and that the thread lands there with
// its affinity given back as it was.

#include <sched.h>

#include <cstdio>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/transport.h"

namespace zcoll {
namespace {

TEST(CpuOfPlaceTest, PlacesTakeTheAllowedCpusInTurn) {
  const std::vector<int> two = {0, 1};
  EXPECT_EQ(CpuOfPlace(two, 0, 4), 0);
  EXPECT_EQ(CpuOfPlace(two, 1, 4), 1);
  EXPECT_EQ(CpuOfPlace(two, 2, 4), 0);
  EXPECT_EQ(CpuOfPlace(two, 3, 4), 1);
  // A mask with gaps (a cpuset, a launcher's binding): its own CPUs, in order.
  const std::vector<int> gaps = {1, 3, 5};
  EXPECT_EQ(CpuOfPlace(gaps, 0, 7), 1);
  EXPECT_EQ(CpuOfPlace(gaps, 1, 7), 3);
  EXPECT_EQ(CpuOfPlace(gaps, 2, 7), 5);
  EXPECT_EQ(CpuOfPlace(gaps, 6, 7), 1);
}

TEST(CpuOfPlaceTest, RanksThatFitOrASingleCpuAreLeftWhereTheyAre) {
  EXPECT_EQ(CpuOfPlace(std::vector<int>{0, 1}, 1, 2), std::nullopt);
  EXPECT_EQ(CpuOfPlace(std::vector<int>{0, 1, 2, 3}, 0, 3), std::nullopt);
  EXPECT_EQ(CpuOfPlace(std::vector<int>{2}, 1, 8), std::nullopt);
  EXPECT_EQ(CpuOfPlace(std::vector<int>{0, 1}, -1, 4), std::nullopt);
}

TEST(AllowedCpusTest, TheyAreTheThreadsAffinityAndSetAllowedCpusChangesIt) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  ASSERT_EQ(sched_getaffinity(0, sizeof(affinity), &affinity), 0);
  EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&affinity));
  for (int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &affinity)) << cpu;
  ASSERT_TRUE(SetAllowedCpus({cpus.back()}));
  EXPECT_THAT(AllowedCpus(), testing::ElementsAre(cpus.back()));
  ASSERT_TRUE(SetAllowedCpus(cpus));
  EXPECT_EQ(AllowedCpus(), cpus);
  // Nothing a CPU number: refused, the affinity as it was.
  EXPECT_FALSE(SetAllowedCpus({-1}));
  EXPECT_EQ(AllowedCpus(), cpus);
}

TEST(SpreadOverCpusTest, TheThreadLandsOnItsPlacesCpuWithItsAffinityGivenBack) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) {
    std::printf("SKIPPED: this thread may run on %zu CPU(s); spreading needs two\n", cpus.size());
    GTEST_SKIP() << "one allowed CPU: nothing to spread over";
  }
  const int ranks = static_cast<int>(cpus.size()) + 1;
  // The scheduler may move the thread itself at any time, so each try asks for a CPU
  // other than the one it is on and looks right after; one landing out of several
  // shows the move (left alone, the thread would stay where it was).
  int landed = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int here = sched_getcpu();
    size_t place = 0;
    while (cpus[place] == here) ++place;
    SpreadOverCpus(static_cast<int>(place), ranks);
    if (sched_getcpu() == cpus[place]) ++landed;
    ASSERT_EQ(AllowedCpus(), cpus) << "the affinity was not given back, attempt " << attempt;
  }
  EXPECT_GE(landed, 10) << "the thread was on its place's CPU after " << landed << " of 20 moves";
}

}  // namespace
}  // namespace zcoll
