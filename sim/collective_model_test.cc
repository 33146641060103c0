#include "sim/collective_model.h"

#include <string>
#include <vector>

#include "collectives/selection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll::sim {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Formatted(const std::vector<SelectionRule>& rules) {
  std::vector<std::string> lines;
  for (const SelectionRule& rule : rules) lines.push_back(FormatTuningRule(rule));
  return lines;
}

TEST(DeriveTuningRulesTest, RunsOfOneWinnerBecomeSizeRangesPerRankBand) {
  const std::vector<SweepWinner> winners = {
      {128, 8, "recursive_doubling"},  {128, 1024, "recursive_doubling"},
      {128, 65536, "rabenseifner"},    {128, 1048576, "rabenseifner"},
      {1024, 8, "recursive_doubling"}, {1024, 1024, ""},  // none simulated there
      {1024, 65536, "rabenseifner"},   {1024, 1048576, "two_level"},
  };
  absl::StatusOr<std::vector<SelectionRule>> rules =
      DeriveTuningRules(Collective::kAllreduce, winners, 2);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_THAT(Formatted(*rules),
              ::testing::ElementsAre(
                  "allreduce recursive_doubling max_bytes=1024 min_ranks=128 max_ranks=1023 "
                  "min_nodes=2",
                  "allreduce rabenseifner min_bytes=1025 min_ranks=128 max_ranks=1023 min_nodes=2",
                  "allreduce recursive_doubling max_bytes=8 min_ranks=1024 min_nodes=2",
                  "allreduce rabenseifner min_bytes=1025 max_bytes=65536 min_ranks=1024 "
                  "min_nodes=2",
                  "allreduce two_level min_bytes=65537 min_ranks=1024 min_nodes=2"));
}

TEST(DeriveTuningRulesTest, RankCountsWithTheSameRulesShareThem) {
  std::vector<SweepWinner> winners;
  for (int ranks : {128, 1024, 8192}) {
    winners.push_back({ranks, 1024, "recursive_doubling"});
    winners.push_back({ranks, 1048576, ranks == 8192 ? "two_level" : "rabenseifner"});
  }
  absl::StatusOr<std::vector<SelectionRule>> rules =
      DeriveTuningRules(Collective::kAllreduce, winners, 2);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_THAT(Formatted(*rules),
              ::testing::ElementsAre(
                  "allreduce recursive_doubling max_bytes=1024 min_ranks=128 max_ranks=8191 "
                  "min_nodes=2",
                  "allreduce rabenseifner min_bytes=1025 min_ranks=128 max_ranks=8191 min_nodes=2",
                  "allreduce recursive_doubling max_bytes=1024 min_ranks=8192 min_nodes=2",
                  "allreduce two_level min_bytes=1025 min_ranks=8192 min_nodes=2"));
}

TEST(DeriveTuningRulesTest, TheRulesPickEveryPointsWinner) {
  // Whatever the winners, selecting with the derived rules gives each point's winner
  // (where the winner can run the call).
  const std::vector<std::string> names = {"recursive_doubling", "rabenseifner", "two_level"};
  std::vector<SweepWinner> winners;
  int pick = 0;
  for (int ranks : {256, 512, 4096}) {
    for (size_t bytes = 16; bytes <= (size_t{1} << 24); bytes *= 8) {
      winners.push_back({ranks, bytes, names[(pick++ * 7 / 3) % names.size()]});
    }
  }
  absl::StatusOr<std::vector<SelectionRule>> rules =
      DeriveTuningRules(Collective::kAllreduce, winners, 2);
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const SweepWinner& point : winners) {
    SelectionInputs inputs;
    inputs.collective = Collective::kAllreduce;
    inputs.bytes = point.bytes;
    inputs.size = point.ranks;
    inputs.num_nodes = point.ranks / 64;
    inputs.node_levels = true;
    EXPECT_EQ(SelectAlgorithm(inputs, *rules).name, point.algorithm)
        << point.ranks << " ranks, " << point.bytes << " bytes";
  }
}

TEST(DeriveTuningRulesTest, RefusesAnAlgorithmTheCollectiveHasNot) {
  absl::StatusOr<std::vector<SelectionRule>> rules =
      DeriveTuningRules(Collective::kBcast, {{128, 8, "rabenseifner"}}, 2);
  ASSERT_FALSE(rules.ok());
  EXPECT_THAT(rules.status().message(), HasSubstr("rabenseifner"));
}

}  // namespace
}  // namespace zcoll::sim
