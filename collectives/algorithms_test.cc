// Every algorithm's schedules, checked without processes: valid, deadlock-free
// (ValidateSchedules) and, run symbolically, producing exactly the standard's result
// on every rank: each output element the right contributions in canonical rank order.

#include "collectives/algorithms.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/selection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/symbolic_run.h"

namespace zcoll {
namespace {

using ::zcoll::testing::Contribution;
using ::zcoll::testing::RunSymbolically;
using ::zcoll::testing::SymbolicBuffers;
using ::zcoll::testing::SymbolicValue;

// What a receive buffer holds before the collective when it is not an input.
constexpr int32_t kPoison = -2;

SymbolicValue Own(int rank, size_t element) {
  return {Contribution{rank, static_cast<uint32_t>(element)}};
}

SymbolicValue AllRanks(int size, size_t element) {
  SymbolicValue value;
  for (int r = 0; r < size; ++r) value.push_back({r, static_cast<uint32_t>(element)});
  return value;
}

std::string Describe(const SymbolicValue& value) {
  std::string out;
  for (size_t i = 0; i < value.size() && i < 12; ++i) {
    absl::StrAppend(&out, "(", value[i].rank, ",", value[i].element, ")");
  }
  if (value.size() > 12) absl::StrAppend(&out, "... (", value.size(), " contributions)");
  return out;
}

// Varied block counts with zeros: rank r gets (7r + base) % (base + 2).
std::vector<size_t> VariedCounts(int size, size_t base) {
  std::vector<size_t> counts(size);
  for (int r = 0; r < size; ++r) counts[r] = (7 * static_cast<size_t>(r) + base) % (base + 2);
  return counts;
}

bool IsRooted(Collective collective) {
  return collective == Collective::kReduce || collective == Collective::kScatter ||
         collective == Collective::kScatterv;
}

// Runs `algorithm` for `args` on every rank and checks every rank's result. Returns
// a description of the first difference, or "".
std::string Check(const Algorithm& algorithm, CollectiveArgs args) {
  const int size = args.size;
  const Topology topology = *Topology::Uniform(1, size);
  std::vector<Schedule> schedules;
  std::vector<CollectiveArgs> per_rank(size, args);
  // Scatterv's counts and displs are the root's only.
  for (int r = 0; r < size; ++r) {
    if (args.collective == Collective::kScatterv) {
      per_rank[r].count = args.counts[r];
      if (r != args.root) {
        per_rank[r].counts.clear();
        per_rank[r].displs.clear();
      }
    }
    if (r != args.root && IsRooted(args.collective)) per_rank[r].in_place = false;
    schedules.push_back(algorithm.generate(per_rank[r], topology, r));
  }
  if (absl::Status status = ValidateSchedules(schedules); !status.ok()) {
    return std::string(status.message());
  }
  std::vector<SymbolicBuffers> buffers(size);
  for (int r = 0; r < size; ++r) {
    const size_t send = schedules[r].BufferCount(BufferId::Send());
    const size_t recv = schedules[r].BufferCount(BufferId::Recv());
    for (size_t i = 0; i < send; ++i) buffers[r].send.push_back(Own(r, i));
    for (size_t i = 0; i < recv; ++i) {
      buffers[r].recv.push_back(per_rank[r].in_place ? Own(r, i) : SymbolicValue{{kPoison, 0}});
    }
  }
  if (absl::Status status = RunSymbolically(schedules, buffers); !status.ok()) {
    return std::string(status.message());
  }
  for (int r = 0; r < size; ++r) {
    std::vector<SymbolicValue> expected;
    switch (args.collective) {
      case Collective::kReduce:
        if (r == args.root) {
          for (size_t i = 0; i < args.count; ++i) expected.push_back(AllRanks(size, i));
        }
        break;
      case Collective::kAllreduce:
        for (size_t i = 0; i < args.count; ++i) expected.push_back(AllRanks(size, i));
        break;
      case Collective::kReduceScatterBlock:
      case Collective::kReduceScatter: {
        const std::vector<size_t> counts = args.collective == Collective::kReduceScatter
                                               ? args.counts
                                               : std::vector<size_t>(size, args.count);
        size_t displ = 0;
        for (int s = 0; s < r; ++s) displ += counts[s];
        for (size_t i = 0; i < counts[r]; ++i) expected.push_back(AllRanks(size, displ + i));
        break;
      }
      case Collective::kScatter:
        if (!(r == args.root && args.in_place)) {
          for (size_t i = 0; i < args.count; ++i) {
            expected.push_back(Own(args.root, args.count * static_cast<size_t>(r) + i));
          }
        }
        break;
      case Collective::kScatterv:
        if (!(r == args.root && args.in_place)) {
          for (size_t i = 0; i < args.counts[r]; ++i) {
            expected.push_back(Own(args.root, args.displs[r] + i));
          }
        }
        break;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      if (i >= buffers[r].recv.size() || buffers[r].recv[i] != expected[i]) {
        return absl::StrCat("rank ", r, " element ", i, ": got ",
                            i < buffers[r].recv.size() ? Describe(buffers[r].recv[i]) : "nothing",
                            ", expected ", Describe(expected[i]));
      }
    }
  }
  return "";
}

CollectiveArgs MakeArgs(Collective collective, int size, size_t count, int root, bool in_place) {
  CollectiveArgs args;
  args.collective = collective;
  args.size = size;
  args.root = root;
  args.count = count;
  args.in_place = in_place;
  args.commutative = false;
  args.element_bytes = 4;
  args.chunk_bytes = 8;  // two elements: many chunks, to exercise pipelining and tags
  if (collective == Collective::kReduceScatter) args.counts = VariedCounts(size, count);
  if (collective == Collective::kScatterv) {
    args.counts = VariedCounts(size, count);
    // Blocks in reverse rank order with a gap of one element between them.
    args.displs.assign(size, 0);
    size_t at = 0;
    for (int r = size - 1; r >= 0; --r) {
      args.displs[r] = at;
      at += args.counts[r] + 1;
    }
  }
  return args;
}

class AlgorithmTest : public ::testing::TestWithParam<const Algorithm*> {};

TEST_P(AlgorithmTest, ExactResultsForEveryRankCountUpTo64) {
  const Algorithm& algorithm = *GetParam();
  for (int size = 1; size <= 64; ++size) {
    for (size_t count : {0, 1, 3, 17}) {
      std::vector<int> roots = {0};
      if (IsRooted(algorithm.collective) && size > 1) roots = {0, size / 2, size - 1};
      for (int root : roots) {
        for (bool in_place : {false, true}) {
          const std::string problem =
              Check(algorithm, MakeArgs(algorithm.collective, size, count, root, in_place));
          ASSERT_EQ(problem, "") << algorithm.name << " with " << size << " ranks, count " << count
                                 << ", root " << root << (in_place ? ", in place" : "");
        }
      }
    }
  }
}

TEST_P(AlgorithmTest, ExactResultsForLargeRankCounts) {
  const Algorithm& algorithm = *GetParam();
  // Schedules of size-1 messages per rank (linear, pairwise) grow as size squared.
  const bool quadratic = algorithm.name == "pairwise" || algorithm.name == "linear";
  for (int size : quadratic ? std::vector<int>{100, 257} : std::vector<int>{100, 1000, 4096}) {
    const int root = IsRooted(algorithm.collective) ? size / 3 : 0;
    const std::string problem =
        Check(algorithm, MakeArgs(algorithm.collective, size, 2, root, /*in_place=*/true));
    ASSERT_EQ(problem, "") << algorithm.name << " with " << size << " ranks";
  }
}

std::vector<const Algorithm*> Every() {
  std::vector<const Algorithm*> all;
  for (const Algorithm& algorithm : AllAlgorithms()) all.push_back(&algorithm);
  return all;
}

INSTANTIATE_TEST_SUITE_P(All, AlgorithmTest, ::testing::ValuesIn(Every()),
                         [](const ::testing::TestParamInfo<const Algorithm*>& info) {
                           return absl::StrCat(CollectiveName(info.param->collective), "_",
                                               info.param->name);
                         });

TEST(SelectionTest, EveryRuleNamesAnAlgorithmOfItsCollective) {
  for (const SelectionRule& rule : SelectionTable()) {
    EXPECT_TRUE(FindAlgorithm(rule.collective, rule.algorithm).ok())
        << CollectiveName(rule.collective) << " " << rule.algorithm;
  }
}

TEST(SelectionTest, EveryCollectiveHasAnAlgorithmForAnyArguments) {
  for (size_t c = 0; c < kNumCollectives; ++c) {
    for (int size : {1, 2, 7, 64}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1} << 20}) {
        CollectiveArgs args = MakeArgs(static_cast<Collective>(c), size, count, 0, false);
        const Algorithm& chosen = SelectAlgorithm(args, *Topology::Uniform(1, size));
        EXPECT_EQ(chosen.collective, args.collective);
        EXPECT_TRUE(CheckAlgorithmCanRun(chosen, args).ok());
      }
    }
  }
}

TEST(AlgorithmLookupTest, UnknownNamesAreRefusedWithTheKnownOnes) {
  absl::StatusOr<const Algorithm*> found = FindAlgorithm(Collective::kReduce, "ring");
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), ::testing::HasSubstr("binomial"));
  EXPECT_EQ(*ParseCollective("reduce_scatter_block"), Collective::kReduceScatterBlock);
  EXPECT_FALSE(ParseCollective("allgatherw").ok());
}

}  // namespace
}  // namespace zcoll
