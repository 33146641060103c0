#include "core/group.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Job ranks 10, 11, ..., 10 + size - 1, held by job rank `self`.
Group Numbered(int size, int self) {
  std::vector<int> members;
  for (int i = 0; i < size; ++i) members.push_back(10 + i);
  return *Group::FromJobRanks(members, self);
}

TEST(GroupTest, RankIsTheHolderPositionOrUndefined) {
  EXPECT_EQ(Numbered(4, 12).rank(), 2);
  EXPECT_EQ(Numbered(4, 99).rank(), kUndefinedRank);
  EXPECT_EQ(Group::Empty().size(), 0);
  EXPECT_EQ(Group::Empty().rank(), kUndefinedRank);
}

TEST(GroupTest, FromJobRanksRefusesRepeatsAndNegatives) {
  EXPECT_THAT(Group::FromJobRanks({1, 2, 1}).status().message(), HasSubstr("job rank 1"));
  EXPECT_THAT(Group::FromJobRanks({1, -3}).status().message(), HasSubstr("-3"));
}

TEST(GroupTest, InclTakesTheNamedRanksInTheirOrder) {
  const Group group = Numbered(6, 14);
  absl::StatusOr<Group> picked = group.Incl({4, 0, 2});
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_THAT(picked->job_ranks(), ElementsAre(14, 10, 12));
  EXPECT_EQ(picked->rank(), 0);  // the holder, job rank 14, comes first
  EXPECT_THAT(group.Incl({1, 6}).status().message(), HasSubstr("ranks[1] = 6"));
  EXPECT_THAT(group.Incl({1, 1}).status().message(), HasSubstr("rank 1 is named twice"));
  EXPECT_THAT(group.Incl({-1}).status().message(), HasSubstr("ranks[0] = -1"));
}

TEST(GroupTest, ExclKeepsTheRestInGroupOrder) {
  absl::StatusOr<Group> kept = Numbered(5, 10).Excl({3, 0});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_THAT(kept->job_ranks(), ElementsAre(11, 12, 14));
  EXPECT_EQ(kept->rank(), kUndefinedRank);
  EXPECT_FALSE(Numbered(5, 10).Excl({5}).ok());
}

TEST(GroupTest, RangesWalkForwardAndBackward) {
  const Group group = Numbered(10, 10);
  absl::StatusOr<Group> picked = group.RangeIncl({{0, 9, 3}, {8, 4, -4}});
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_THAT(picked->job_ranks(), ElementsAre(10, 13, 16, 19, 18, 14));
  // A range whose last element is not reached exactly stops before it; one that
  // runs the wrong way is empty.
  picked = group.RangeIncl({{1, 8, 4}, {5, 2, 1}});
  ASSERT_TRUE(picked.ok()) << picked.status();
  EXPECT_THAT(picked->job_ranks(), ElementsAre(11, 15));
  absl::StatusOr<Group> kept = group.RangeExcl({{0, 8, 2}});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_THAT(kept->job_ranks(), ElementsAre(11, 13, 15, 17, 19));
}

TEST(GroupTest, RangesRefuseZeroStridesOutsidersAndRepeats) {
  const Group group = Numbered(4, 10);
  EXPECT_THAT(group.RangeIncl({{0, 3, 0}}).status().message(), HasSubstr("stride 0"));
  EXPECT_THAT(group.RangeIncl({{2, 5, 1}}).status().message(), HasSubstr("reaches 4"));
  EXPECT_THAT(group.RangeIncl({{0, 2000000000, 1}}).status().message(), HasSubstr("names"));
  EXPECT_THAT(group.RangeExcl({{0, 1, 1}, {1, 1, 1}}).status().message(),
              HasSubstr("rank 1 is named twice"));
}

TEST(GroupTest, SetOperationsKeepTheFirstGroupsOrder) {
  const Group a = *Group::FromJobRanks({5, 1, 3, 7}, 3);
  const Group b = *Group::FromJobRanks({2, 3, 5, 8}, 3);
  EXPECT_THAT(Group::Union(a, b).job_ranks(), ElementsAre(5, 1, 3, 7, 2, 8));
  EXPECT_THAT(Group::Intersection(a, b).job_ranks(), ElementsAre(5, 3));
  EXPECT_THAT(Group::Difference(a, b).job_ranks(), ElementsAre(1, 7));
  EXPECT_THAT(Group::Difference(b, a).job_ranks(), ElementsAre(2, 8));
  EXPECT_EQ(Group::Intersection(a, b).rank(), 1);
  EXPECT_EQ(Group::Difference(a, b).rank(), kUndefinedRank);
  EXPECT_EQ(Group::Union(Group::Empty(), b).rank(), 1);
}

TEST(GroupTest, TranslateRanksFindsTheSameProcesses) {
  const Group a = *Group::FromJobRanks({5, 1, 3, 7});
  const Group b = *Group::FromJobRanks({7, 3, 9});
  absl::StatusOr<std::vector<int>> translated = a.TranslateRanks({0, 2, 3, kProcNull}, b);
  ASSERT_TRUE(translated.ok()) << translated.status();
  EXPECT_THAT(*translated, ElementsAre(kUndefinedRank, 1, 0, kProcNull));
  EXPECT_THAT(a.TranslateRanks({4}, b).status().message(), HasSubstr("ranks[0] = 4"));
}

TEST(GroupTest, CompareTellsIdenticalSimilarAndUnequal) {
  const Group a = *Group::FromJobRanks({1, 2, 3});
  EXPECT_EQ(Group::Compare(a, *Group::FromJobRanks({1, 2, 3})), GroupComparison::kIdentical);
  EXPECT_EQ(Group::Compare(a, *Group::FromJobRanks({3, 1, 2})), GroupComparison::kSimilar);
  EXPECT_EQ(Group::Compare(a, *Group::FromJobRanks({1, 2, 4})), GroupComparison::kUnequal);
  EXPECT_EQ(Group::Compare(a, *Group::FromJobRanks({1, 2})), GroupComparison::kUnequal);
  EXPECT_EQ(Group::Compare(Group::Empty(), Group::Empty()), GroupComparison::kIdentical);
}

}  // namespace
}  // namespace zcoll
