// Every decision the ranks of one call must agree on is taken from what they pass
// alike. For every collective and every rule of the selection table, random calls
// whose per-rank arguments differ where the standard lets them (the v-collectives' own
// counts on both sides of the rule's size limit, an alltoallv's rows and columns, the
// root's counts that only the root passes) on 1 to 64 ranks over 1 to 3 nodes give
// every rank the same SelectionInputs and so the same algorithm, and the schedules the
// ranks generate from their own views then match transfer for transfer, chunk for
// chunk (ValidateSchedules: every send has one receive of the same tag and count, and
// nothing can deadlock). Every algorithm forced by name is held to the same.
//
// The Allgatherv hang this guards against: the table's message size was each rank's
// own block, so 5 ranks with int32 blocks of 2048, 2049, 2048, 2048, 2048 elements
// chose the linear algorithm on four ranks and the ring on one.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/algorithms.h"
#include "collectives/selection.h"
#include "core/schedule.h"
#include "core/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/block_layouts.h"
#include "testing/rank_views.h"
#include "testing/sampled_sweeps.h"

namespace zcoll {
namespace {

using ::zcoll::testing::RankView;

constexpr int kMostRanks = 64;

// The rank counts from `first` to `last` the tests below try: the sample of
// testing/sampled_sweeps.h and both ends, or under ZCOLL_WHOLE_SWEEPS=1 every one.
std::vector<int> RankCountsFromTo(int first, int last) {
  static const std::vector<int>* const swept =
      new std::vector<int>(testing::SweepRankCounts(kMostRanks));
  std::vector<int> counts;
  for (int count : *swept) {
    if (count >= first && count <= last) counts.push_back(count);
  }
  if (testing::SampledSweeps()) {
    counts.push_back(first);
    // (A rule's own limit, not this test's 64 under a sanitizer: the sample stops short
    // of it there, testing/sampled_sweeps.h.)
    if (last < kMostRanks || !testing::UnderSanitizer()) counts.push_back(last);
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  }
  return counts;
}

struct RandomCall {
  CollectiveArgs call;  // every rank's arguments (RankView cuts out each rank's own)
  std::vector<std::vector<size_t>> pair_counts;  // alltoallv: [from][to]
  Topology topology;
};

// `target` elements with a small random difference: blocks of neighbouring ranks lie
// on both sides of a rule's limit. A few are zero, a few much larger.
size_t Near(std::mt19937_64& random, size_t target) {
  const uint64_t kind = random() % 16;
  if (kind == 0) return 0;
  if (kind == 1) return target * 2 + 1;
  const size_t jitter = random() % 3;
  return random() % 2 == 0 ? target + jitter : (target > jitter ? target - jitter : 0);
}

// 1 to 3 nodes (at most `size`), ranks placed at random but every node used.
Topology RandomTopology(std::mt19937_64& random, int size, int min_nodes) {
  const int nodes = std::min(size, std::max(min_nodes, 1 + static_cast<int>(random() % 3)));
  std::vector<RankLocation> locations(size);
  std::vector<int> order(size);
  for (int r = 0; r < size; ++r) order[r] = r;
  std::shuffle(order.begin(), order.end(), random);
  for (int i = 0; i < size; ++i) {
    locations[order[i]].node = i < nodes ? i : static_cast<int>(random() % nodes);
  }
  absl::StatusOr<Topology> topology = Topology::Create(std::move(locations));
  EXPECT_TRUE(topology.ok()) << topology.status();
  return *topology;
}

// A call of `collective` on `size` ranks whose agreed message is about `bytes`.
RandomCall MakeCall(std::mt19937_64& random, Collective collective, int size, size_t bytes,
                    int min_nodes) {
  RandomCall made{CollectiveArgs{}, {}, RandomTopology(random, size, min_nodes)};
  CollectiveArgs& call = made.call;
  call.collective = collective;
  call.size = size;
  call.root = static_cast<int>(random() % size);
  call.commutative = IsReduction(collective) ? random() % 2 == 0 : true;
  const size_t element_bytes[] = {1, 4, 8};
  call.element_bytes = element_bytes[random() % 3];
  // Small chunks pipeline even small messages, so chunking is part of every check;
  // the default size too.
  // (At most about 16 chunks a transfer, so that 64 ranks stay quick.)
  const size_t chunk_bytes[] = {64, 1024, 256 * 1024};
  call.chunk_bytes = std::max(chunk_bytes[random() % 3], bytes / 16);
  const size_t elements = bytes / call.element_bytes;
  call.in_place = random() % 4 == 0;
  switch (collective) {
    case Collective::kReduceScatterBlock:
      call.count = Near(random, elements / static_cast<size_t>(size));
      break;
    case Collective::kReduceScatter:
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv: {
      const size_t per_rank = collective == Collective::kReduceScatter
                                  ? elements / static_cast<size_t>(size)
                                  : elements;
      for (int r = 0; r < size; ++r) call.counts.push_back(Near(random, per_rank));
      if (collective != Collective::kReduceScatter) {
        call.displs = testing::ReversedWithGaps(call.counts);
      }
      break;
    }
    case Collective::kAlltoallv:
      made.pair_counts.assign(size, std::vector<size_t>(size));
      for (int from = 0; from < size; ++from) {
        for (int to = 0; to < size; ++to) made.pair_counts[from][to] = Near(random, elements);
      }
      // In place the input has the output's layout: a symmetric matrix.
      if (call.in_place) {
        for (int from = 0; from < size; ++from) {
          for (int to = 0; to < from; ++to) made.pair_counts[from][to] = made.pair_counts[to][from];
        }
      }
      break;
    case Collective::kBarrier:
      break;
    default:
      call.count = Near(random, elements);
      break;
  }
  return made;
}

std::vector<CollectiveArgs> Views(const RandomCall& made) {
  std::vector<CollectiveArgs> views;
  for (int r = 0; r < made.call.size; ++r) {
    views.push_back(
        RankView(made.call, r, [&](int from, int to) { return made.pair_counts[from][to]; }));
  }
  return views;
}

std::string Describe(const RandomCall& made) {
  const CollectiveArgs& call = made.call;
  std::string counts;
  for (size_t i = 0; i < call.counts.size() && i < 8; ++i)
    absl::StrAppend(&counts, call.counts[i], " ");
  return absl::StrCat(
      CollectiveName(call.collective), " on ", call.size, " ranks (", made.topology.ToString(),
      "), count ", call.count, ", counts ", counts, call.counts.size() > 8 ? "..." : "", " x ",
      call.element_bytes, " B, root ", call.root, ", chunks of ", call.chunk_bytes, " B",
      call.in_place ? ", in place" : "", call.commutative ? "" : ", non-commutative");
}

// Generates every rank's schedule of `algorithm` from its own view and checks that
// they fit together. Returns "" or what is wrong.
std::string SchedulesMatch(const Algorithm& algorithm, const RandomCall& made,
                           const std::vector<CollectiveArgs>& views) {
  // The node engine's algorithms have no schedule: every rank reads the others'
  // contributions in the node's segment (node_engine.h).
  if (!algorithm.runs_schedule()) return "";
  std::vector<Schedule> schedules;
  for (int r = 0; r < made.call.size; ++r) {
    schedules.push_back(algorithm.generate(views[r], made.topology, r));
    // The last stage of the tags is the executor's own (its probes).
    for (const Step& step : schedules.back().steps()) {
      if (step.is_transfer() && (step.tag >> kChunkTagBits) >= kReservedStage) {
        return absl::StrCat("rank ", r, " uses reserved tag ", step.tag);
      }
    }
  }
  const absl::Status valid = ValidateSchedules(schedules);
  return valid.ok() ? "" : std::string(valid.message());
}

// The bytes a rule is tried at: at and around its limit (or a few sizes when it has
// none), small ones too.
std::vector<size_t> BytesFor(const SelectionRule& rule) {
  if (rule.max_bytes == std::numeric_limits<size_t>::max()) return {0, 24, 4096, 40000};
  return {rule.max_bytes / 4, rule.max_bytes, rule.max_bytes + 8};
}

TEST(SelectionAgreementTest, CollectivesWithoutAnAgreedSizeHaveNoSizeLimitedRule) {
  for (const SelectionRule& rule : SelectionTable()) {
    CollectiveArgs args;
    args.collective = rule.collective;
    args.size = 4;
    args.counts = {1, 2, 3, 4};
    args.recv_counts = {1, 2, 3, 4};
    if (!args.AgreedMessageBytes().has_value()) {
      EXPECT_EQ(rule.max_bytes, std::numeric_limits<size_t>::max())
          << CollectiveName(rule.collective) << " rule '" << rule.algorithm
          << "' is limited by a message size no rank can know";
    }
  }
}

TEST(SelectionAgreementTest, EveryRankOfACallChoosesTheSameAlgorithmAndTheSchedulesMatch) {
  std::mt19937_64 random(20261124);
  int calls = 0;
  for (const SelectionRule& rule : SelectionTable()) {
    const int first = std::max(1, rule.min_ranks);
    const int last = std::min(kMostRanks, rule.max_ranks);
    if (first > last) {
      // Every rank's schedule at 1024 ranks and more is O(ranks^2) steps (pairwise's
      // 67 million at 8192): the rule's limits are algorithms_test's SelectionTest's, and
      // what the ranks agree on is the same code at 64 ranks as at 65,536.
      std::printf("%s %.*s from %d ranks: past this test's %d ranks\n",
                  std::string(CollectiveName(rule.collective)).c_str(),
                  static_cast<int>(rule.algorithm.size()), rule.algorithm.data(), first,
                  kMostRanks);
      continue;
    }
    for (int size : RankCountsFromTo(first, last)) {
      for (size_t bytes : BytesFor(rule)) {
        const RandomCall made = MakeCall(random, rule.collective, size, bytes, rule.min_nodes);
        const std::vector<CollectiveArgs> views = Views(made);
        // A communicator on one node has the node engine (its ranks agree on that:
        // the node's leader tells them all).
        const bool node_engine = made.topology.num_nodes() == 1 && size >= 2;
        const SelectionInputs inputs = AgreedSelectionInputs(views[0], made.topology, node_engine);
        const Algorithm& chosen = SelectAlgorithm(inputs);
        for (int r = 1; r < size; ++r) {
          ASSERT_EQ(AgreedSelectionInputs(views[r], made.topology, node_engine), inputs)
              << "rank " << r << " sees other selection inputs than rank 0: " << Describe(made);
          ASSERT_EQ(&SelectAlgorithm(AgreedSelectionInputs(views[r], made.topology, node_engine)),
                    &chosen)
              << Describe(made);
        }
        const std::string mismatch = SchedulesMatch(chosen, made, views);
        ASSERT_EQ(mismatch, "") << chosen.name << ": " << Describe(made);
        ++calls;
      }
    }
  }
  // Every rule, every rank count it covers up to 64 (or the sample: 3584 calls), at
  // its limit and around it.
  EXPECT_GT(calls, 2000);
}

TEST(SelectionAgreementTest, EveryForcedAlgorithmMatchesAcrossRankViews) {
  std::mt19937_64 random(1124);
  for (const Algorithm& algorithm : AllAlgorithms()) {
    for (int size : RankCountsFromTo(1, kMostRanks)) {
      for (size_t bytes : {size_t{8}, size_t{8192}, size_t{20000}}) {
        RandomCall made = MakeCall(random, algorithm.collective, size, bytes, 1);
        if (!algorithm.any_op) made.call.commutative = true;
        const std::vector<CollectiveArgs> views = Views(made);
        const bool node_engine = made.topology.num_nodes() == 1 && size >= 2;
        const absl::Status can_run = CheckAlgorithmCanRun(
            algorithm, AgreedSelectionInputs(views[0], made.topology, node_engine));
        // The node engine runs one node's vectors up to a slot (agreed inputs only: the
        // test above holds every rank to the same answer).
        if (!algorithm.runs_schedule() && !can_run.ok()) continue;
        ASSERT_TRUE(can_run.ok()) << can_run;
        const std::string mismatch = SchedulesMatch(algorithm, made, views);
        ASSERT_EQ(mismatch, "") << algorithm.name << ": " << Describe(made);
      }
    }
  }
}

}  // namespace
}  // namespace zcoll
