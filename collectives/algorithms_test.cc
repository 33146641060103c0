// Every algorithm's schedules, checked without processes: valid, deadlock-free
// (ValidateSchedules) and, run symbolically, producing exactly the standard's result
// on every rank: each output element the right contributions in canonical rank order.

#include "collectives/algorithms.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collectives/node_data_flow.h"
#include "collectives/node_engine_limits.h"
#include "collectives/selection.h"
#include "core/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/block_layouts.h"
#include "testing/rank_views.h"
#include "testing/sampled_sweeps.h"
#include "testing/status_assertions.h"
#include "testing/symbolic_run.h"

namespace zcoll {
namespace {

using ::zcoll::testing::Contribution;
using ::zcoll::testing::PairCount;
using ::zcoll::testing::RankView;
using ::zcoll::testing::ReversedWithGaps;
using ::zcoll::testing::RunSymbolically;
using ::zcoll::testing::SymbolicBuffers;
using ::zcoll::testing::SymbolicValue;
using ::zcoll::testing::VariedCounts;

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

bool RankThenElement(const Contribution& a, const Contribution& b) {
  return std::tie(a.rank, a.element) < std::tie(b.rank, b.element);
}

std::string Describe(const SymbolicValue& value) {
  std::string out;
  for (size_t i = 0; i < value.size() && i < 12; ++i) {
    absl::StrAppend(&out, "(", value[i].rank, ",", value[i].element, ")");
  }
  if (value.size() > 12) absl::StrAppend(&out, "... (", value.size(), " contributions)");
  return out;
}

// Runs `algorithm` for `args` on every rank and checks every rank's result. Returns
// a description of the first difference, or "".
std::string Check(const Algorithm& algorithm, CollectiveArgs args, const Topology& topology) {
  const int size = args.size;
  std::vector<Schedule> schedules;
  std::vector<CollectiveArgs> per_rank;
  for (int r = 0; r < size; ++r) {
    per_rank.push_back(
        RankView(args, r, [&](int from, int to) { return PairCount(from, to, args.count); }));
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
    // The receive buffer is an input in place and at a bcast's root.
    const bool input =
        per_rank[r].in_place || (args.collective == Collective::kBcast && r == args.root);
    for (size_t i = 0; i < recv; ++i) {
      buffers[r].recv.push_back(input ? Own(r, i) : SymbolicValue{{kPoison, 0}});
    }
  }
  if (absl::Status status = RunSymbolically(schedules, buffers); !status.ok()) {
    return std::string(status.message());
  }
  for (int r = 0; r < size; ++r) {
    const CollectiveArgs& view = per_rank[r];
    // expected[i]: what element i must hold (empty: anything).
    std::vector<SymbolicValue> expected;
    auto expect = [&](size_t at, SymbolicValue value) {
      if (expected.size() <= at) expected.resize(at + 1);
      expected[at] = std::move(value);
    };
    // Gathers: block `from` of `count` elements at `at`, from rank `from`'s own block
    // (its kSend, or in place its kRecv at `from_offset`).
    auto expect_block = [&](size_t at, int from, size_t count, size_t from_offset) {
      const bool from_recv = per_rank[from].in_place;
      for (size_t i = 0; i < count; ++i) {
        expect(at + i, Own(from, (from_recv ? from_offset : 0) + i));
      }
    };
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
      case Collective::kBcast:
        for (size_t i = 0; i < args.count; ++i) expected.push_back(Own(args.root, i));
        break;
      case Collective::kGather:
      case Collective::kAllgather:
        if (r == args.root || args.collective == Collective::kAllgather) {
          for (int from = 0; from < size; ++from) {
            expect_block(args.count * from, from, args.count, args.count * from);
          }
        }
        break;
      case Collective::kGatherv:
      case Collective::kAllgatherv:
        if (r == args.root || args.collective == Collective::kAllgatherv) {
          for (int from = 0; from < size; ++from) {
            expect_block(args.displs[from], from, args.counts[from], args.displs[from]);
          }
        }
        break;
      case Collective::kAlltoall:
        // Block `from` is block r of rank from's input (either buffer: same layout).
        for (int from = 0; from < size; ++from) {
          for (size_t i = 0; i < args.count; ++i) {
            expect(args.count * from + i, Own(from, args.count * r + i));
          }
        }
        break;
      case Collective::kAlltoallv:
        for (int from = 0; from < size; ++from) {
          const CollectiveArgs& sender = per_rank[from];
          const size_t source = sender.in_place ? sender.recv_displs[r] : sender.displs[r];
          for (size_t i = 0; i < view.recv_counts[from]; ++i) {
            expect(view.recv_displs[from] + i, Own(from, source + i));
          }
        }
        break;
      case Collective::kBarrier:
        break;
      case Collective::kScan:
      case Collective::kExscan: {
        const int last = args.collective == Collective::kScan ? r : r - 1;
        if (last < 0) break;  // exscan's rank 0: undefined
        for (size_t i = 0; i < args.count; ++i) expected.push_back(AllRanks(last + 1, i));
        break;
      }
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i].empty()) continue;
      if (i >= buffers[r].recv.size()) {
        return absl::StrCat("rank ", r, " element ", i, ": got nothing, expected ",
                            Describe(expected[i]));
      }
      // A commutative op may be combined in any order, but each contribution once.
      SymbolicValue got = buffers[r].recv[i];
      if (args.commutative) std::sort(got.begin(), got.end(), RankThenElement);
      if (got != expected[i]) {
        return absl::StrCat("rank ", r, " element ", i, ": got ", Describe(buffers[r].recv[i]),
                            ", expected ", Describe(expected[i]));
      }
    }
    // Bit-identical on every rank: the same contributions combined in the same order.
    if (args.collective == Collective::kAllreduce && buffers[r].recv != buffers[0].recv) {
      for (size_t i = 0; i < args.count; ++i) {
        if (buffers[r].recv[i] != buffers[0].recv[i]) {
          return absl::StrCat("rank ", r, " element ", i, " combines ",
                              Describe(buffers[r].recv[i]), ", rank 0's ",
                              Describe(buffers[0].recv[i]));
        }
      }
    }
  }
  return "";
}

CollectiveArgs MakeArgs(Collective collective, int size, size_t count, int root, bool in_place,
                        bool commutative = false) {
  CollectiveArgs args;
  args.collective = collective;
  args.size = size;
  args.root = root;
  args.count = count;
  args.in_place = in_place;
  args.commutative = commutative;
  args.element_bytes = 4;
  args.chunk_bytes = 8;  // two elements: many chunks, to exercise pipelining and tags
  if (collective == Collective::kReduceScatter) args.counts = VariedCounts(size, count);
  if (collective == Collective::kScatterv || collective == Collective::kGatherv ||
      collective == Collective::kAllgatherv) {
    args.counts = VariedCounts(size, count);
    args.displs = ReversedWithGaps(args.counts);
  }
  return args;
}

// The algorithms whose trees follow the nodes: the two-level ones, and the one-level
// trees built over the ranks grouped by node.
bool FollowsNodes(const Algorithm& algorithm) {
  return absl::StartsWith(algorithm.name, "two_level") ||
         (algorithm.collective == Collective::kBcast &&
          (algorithm.name == "binomial" || algorithm.name == "chain")) ||
         (algorithm.collective == Collective::kReduce &&
          (algorithm.name == "binomial" || algorithm.name == "knomial"));
}

// One node; for the algorithms that follow the nodes also nodes of uneven sizes, ranks
// not in blocks (round robin over 3 nodes) and many nodes.
std::vector<Topology> TopologiesFor(const Algorithm& algorithm, int size) {
  std::vector<Topology> topologies = {*Topology::Uniform(1, size)};
  if (!FollowsNodes(algorithm) || size < 2) return topologies;
  topologies.push_back(*Topology::Emulated("2", size));
  if (size >= 3) {
    std::vector<RankLocation> round_robin(size);
    for (int r = 0; r < size; ++r) round_robin[r].node = r % 3;
    topologies.push_back(*Topology::Create(round_robin));
    std::vector<int> uneven = {1, size - 2, 1};
    topologies.push_back(*Topology::FromNodeSizes(uneven));
  }
  // Many nodes (two ranks each, the last one alone if size is odd): from 5 the trees
  // over the nodes' leaders differ by shape (binomial, binary).
  if (size >= 5) {
    std::vector<int> pairs(static_cast<size_t>(size / 2), 2);
    if (size % 2 == 1) pairs.push_back(1);
    topologies.push_back(*Topology::FromNodeSizes(pairs));
  }
  return topologies;
}

// Whether the op is commutative, in each check of `algorithm`: reductions also as a
// commutative op sees them, as some trees follow the root or the nodes then, and only
// so for the algorithms that need a commutative op.
std::vector<bool> OpKinds(const Algorithm& algorithm) {
  if (!IsReduction(algorithm.collective)) return {false};
  if (!algorithm.any_op) return {true};
  return {false, true};
}

// ZCOLL_ALGO_<COLL>'s description (README's table mirrors it) names every algorithm
// of the collective.
TEST(AlgorithmNamesTest, EachForcingVariableListsItsAlgorithms) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    const std::string variable =
        absl::StrCat("ZCOLL_ALGO_", CollectiveEnvironmentSuffix(algorithm.collective));
    const EnvironmentVariable* found = nullptr;
    for (const EnvironmentVariable& candidate : EnvironmentVariables()) {
      if (candidate.name == variable) found = &candidate;
    }
    ASSERT_NE(found, nullptr) << variable << " is not declared in core/config.cc";
    // "Forces the reduce algorithm (binomial, knomial, ...); ..."
    const absl::string_view description = found->description;
    const size_t open = description.find('('), close = description.find(')');
    ASSERT_LT(open, close) << variable << "'s description lists no algorithms";
    const std::vector<absl::string_view> listed =
        absl::StrSplit(description.substr(open + 1, close - open - 1), ", ");
    EXPECT_THAT(listed, ::testing::Contains(algorithm.name))
        << variable << "'s description does not name " << algorithm.name;
  }
}

// An Allreduce by stripes in segments of at most four chunks (1 MiB at the default
// chunk), two from two chunks, at most eight, each with an element for every place;
// one where a chunk is the whole vector (2 ranks).
TEST(StripeSegmentsTest, AtMostFourChunksEachTwoFromTwoChunksAtMostEight) {
  constexpr size_t MiB = 1 << 20;
  EXPECT_EQ(StripeSegments(0, 4, 64, kDefaultChunkBytes), 1u);
  EXPECT_EQ(StripeSegments(2 * kDefaultChunkBytes / 4 - 1, 4, 64, kDefaultChunkBytes), 1u);
  EXPECT_EQ(StripeSegments(2 * kDefaultChunkBytes / 4, 4, 64, kDefaultChunkBytes), 2u);
  EXPECT_EQ(StripeSegments(MiB / 4, 4, 64, kDefaultChunkBytes), 2u);
  EXPECT_EQ(StripeSegments(MiB / 4 + 1, 4, 64, kDefaultChunkBytes), 2u);
  EXPECT_EQ(StripeSegments(2 * MiB / 4 + 1, 4, 64, kDefaultChunkBytes), 3u);
  EXPECT_EQ(StripeSegments(4 * MiB / 4, 4, 64, kDefaultChunkBytes), 4u);
  EXPECT_EQ(StripeSegments(64 * MiB / 4, 4, 64, kDefaultChunkBytes), kMaxStripeSegments);
  EXPECT_EQ(StripeSegments(20000, 4, 3, 4096), 5u);
  EXPECT_EQ(StripeSegments(200, 1, 64, 4), 3u);  // 200 elements, 64 places: 3 segments
  EXPECT_EQ(StripeSegments(64 * MiB, 4, 2, DefaultChunkBytes(2)), 1u);
}

// An algorithm the communicator cannot run is refused with what it needs: node_stripes
// on 3 ranks over 2 nodes (2 and 1), but not on 4 (2 and 2).
TEST(CheckAlgorithmCanRunTest, SaysWhatTheStripesNeed) {
  const Algorithm& stripes = **FindAlgorithm(Collective::kAllreduce, "node_stripes");
  CollectiveArgs args;
  args.collective = Collective::kAllreduce;
  args.count = 1000;
  args.element_bytes = 4;
  args.size = 3;
  const Topology uneven = *Topology::Create({{0, 0, 0}, {0, 0, 0}, {1, 0, 0}});
  const absl::Status refused = CheckAlgorithmCanRun(
      stripes, AgreedSelectionInputs(args, uneven, false, false, false, /*node_levels=*/true));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("'node_stripes' cannot run these arguments: it needs two "
                                   "nodes or more, each with as many of the communicator's ranks"));
  args.size = 4;
  EXPECT_OK(CheckAlgorithmCanRun(
      stripes, AgreedSelectionInputs(args, *Topology::Uniform(2, 2), false, false, false, true)));
  // The levels' own need, on one node without them.
  const Algorithm& levels = **FindAlgorithm(Collective::kAllreduce, "node_levels");
  EXPECT_THAT(std::string(CheckAlgorithmCanRun(
                              levels, AgreedSelectionInputs(args, *Topology::Uniform(1, 4)))
                              .message()),
              ::testing::HasSubstr("it needs node levels"));
}

class AlgorithmTest : public ::testing::TestWithParam<const Algorithm*> {};

// Schedules of size-1 messages or steps per rank, or whose ranks each hold the whole
// vector of size blocks, grow as size squared.
bool IsQuadratic(const Algorithm& algorithm) {
  return algorithm.name == "pairwise" || algorithm.name == "linear" || algorithm.name == "ring" ||
         algorithm.name == "node" || algorithm.name == "scatter_allgather" ||
         algorithm.name == "recursive_halving" ||
         (algorithm.name == "bruck" && algorithm.collective == Collective::kAlltoall);
}

// Checks `algorithm` on `size` ranks at each of `counts` with roots 0, `middle_root`
// and the last (rooted collectives), in place and not, each op kind and topology.
// Returns the first problem, described, or "".
std::string FirstProblemOfEveryVariant(const Algorithm& algorithm, int size,
                                       const std::vector<size_t>& counts, int middle_root) {
  std::vector<int> roots = {0};
  if (IsRooted(algorithm.collective) && size > 1) roots = {0, middle_root, size - 1};
  for (size_t count : counts) {
    for (int root : roots) {
      for (bool in_place : {false, true}) {
        for (bool commutative : OpKinds(algorithm)) {
          for (const Topology& topology : TopologiesFor(algorithm, size)) {
            const std::string problem = Check(
                algorithm, MakeArgs(algorithm.collective, size, count, root, in_place, commutative),
                topology);
            if (!problem.empty()) {
              return absl::StrCat(problem, " (", algorithm.name, " with ", size, " ranks on ",
                                  topology.ToString(), ", count ", count, ", root ", root,
                                  in_place ? ", in place" : "", commutative ? ", commutative" : "",
                                  ")");
            }
          }
        }
      }
    }
  }
  return "";
}

TEST_P(AlgorithmTest, ExactResultsForEveryRankCountUpTo64) {
  const Algorithm& algorithm = *GetParam();
  const std::vector<int> sizes = testing::SweepRankCounts(64);
  for (const int size : sizes) {
    ASSERT_EQ(FirstProblemOfEveryVariant(algorithm, size, {0, 1, 3, 17}, size / 2), "");
  }
}

TEST_P(AlgorithmTest, ExactResultsForLargeRankCounts) {
  const Algorithm& algorithm = *GetParam();
  std::vector<int> sizes =
      IsQuadratic(algorithm) ? std::vector<int>{100, 257} : std::vector<int>{100, 1000, 4096};
  if (testing::SampledSweeps()) {
    sizes.pop_back();
    testing::PrintSampled("without its largest rank count");
    // (Under a sanitizer the smallest alone: testing/sampled_sweeps.h says why.)
    if (testing::UnderSanitizer()) {
      sizes.resize(1);
      testing::PrintSampled(absl::StrCat("under a sanitizer, ", sizes[0], " ranks alone"));
    }
  }
  for (int size : sizes) {
    const int root = IsRooted(algorithm.collective) ? size / 3 : 0;
    for (const Topology& topology : TopologiesFor(algorithm, size)) {
      for (bool commutative : OpKinds(algorithm)) {
        const std::string problem =
            Check(algorithm,
                  MakeArgs(algorithm.collective, size, 2, root, /*in_place=*/true, commutative),
                  topology);
        ASSERT_EQ(problem, "") << algorithm.name << " with " << size << " ranks on "
                               << topology.num_nodes() << " nodes"
                               << (commutative ? ", commutative" : "");
      }
    }
  }
}

// The pipelined Rabenseifner allreduce cut into 2 to 32 segments (a segment is at least 8
// bytes a rank; MakeArgs' chunks are 8 bytes): exact, bit-identical results on sizes
// that fold and that do not, and each segment's tags in its own share of the chunk
// numbers (the last segment's are in the last share).
TEST(PipelinedRabenseifnerTest, ExactResultsWithManySegments) {
  const Algorithm& algorithm = **FindAlgorithm(Collective::kAllreduce, "pipelined_rabenseifner");
  std::vector<int> sizes = {2, 5, 12, 33, 64};
  if (testing::SampledSweeps()) {
    sizes = {2, 5, 12};
    testing::PrintSampled("without 33 and 64 ranks");
  }
  for (int size : sizes) {
    for (size_t segments : {2, 7, 32}) {
      const size_t count = segments * 2 * static_cast<size_t>(size) + 1;  // 4-byte elements
      for (bool in_place : {false, true}) {
        for (bool commutative : {false, true}) {
          const CollectiveArgs args =
              MakeArgs(Collective::kAllreduce, size, count, 0, in_place, commutative);
          ASSERT_EQ(Check(algorithm, args, *Topology::Uniform(1, size)), "")
              << size << " ranks, count " << count << (in_place ? ", in place" : "")
              << (commutative ? ", commutative" : "");
          size_t last_chunk = 0;
          const Schedule schedule = algorithm.generate(args, *Topology::Uniform(1, size), 0);
          for (const Step& step : schedule.steps()) {
            if (step.is_transfer())
              last_chunk = std::max<size_t>(last_chunk, step.tag % kMaxChunks);
          }
          EXPECT_GE(last_chunk, (segments - 1) * (kMaxChunks / segments))
              << size << " ranks, count " << count << ": fewer than " << segments << " segments";
        }
      }
    }
  }
}

#ifdef ZCOLL_SYMBOLIC_SWEEP
// Every algorithm at 4096 ranks, quadratic ones too, at a few sizes (chunks of two
// elements, so a count of 5 is three chunks) with its roots, in place or not, each op
// kind and topology: the sweep of //collectives:algorithms_sweep_test
// (tools/symbolic_sweep.sh; tagged manual, too long for .ci/run, which runs
// ExactResultsForLargeRankCounts' sample).
TEST_P(AlgorithmTest, SweepAt4096Ranks) {
  const Algorithm& algorithm = *GetParam();
  // Bruck's alltoall at 4096 ranks holds more symbolic values than this machine's 24 GiB
  // (killed at 23 GiB at a count of 1): it runs at 2048, saying so.
  const bool bruck_alltoall =
      algorithm.name == "bruck" && algorithm.collective == Collective::kAlltoall;
  const int kSize = bruck_alltoall ? 2048 : 4096;
  if (bruck_alltoall) {
    std::printf("alltoall bruck runs at 2048 ranks: at 4096 its symbolic values pass 23 GiB\n");
  }
  // The quadratic ones hold size^2 elements a count (pairwise alltoall at a count of 5:
  // over 16 GiB of symbolic values), so they run up to a count of 1.
  const std::vector<size_t> counts =
      IsQuadratic(algorithm) ? std::vector<size_t>{0, 1} : std::vector<size_t>{0, 1, 5};
  EXPECT_EQ(FirstProblemOfEveryVariant(algorithm, kSize, counts, kSize / 3), "");
}
#endif  // ZCOLL_SYMBOLIC_SWEEP

// The node engine's algorithms as their data-flow models (node_data_flow.h), which
// the simulator times: checked like a schedule, they must compute the collective.
// (The engine itself runs on the node's segment; collectives_test runs it.)
const std::vector<Algorithm>& NodeModels() {
  static const std::vector<Algorithm>* models = [] {
    auto* all = new std::vector<Algorithm>;
    for (const Algorithm& algorithm : AllAlgorithms()) {
      if (!algorithm.on_node()) continue;
      Algorithm model = algorithm;
      model.generate = NodeEngineDataFlow;
      all->push_back(model);
    }
    return all;
  }();
  return *models;
}

// Every algorithm that makes a Schedule, and the node engine's models.
std::vector<const Algorithm*> Every() {
  std::vector<const Algorithm*> all;
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.runs_schedule()) all.push_back(&algorithm);
  }
  for (const Algorithm& model : NodeModels()) all.push_back(&model);
  return all;
}

// The node models at the sizes where the engine changes its ways: elements of 1 KiB
// (whose symbolic values cost no more than 4-byte ones) so that a few elements pass
// the control line, a slot, the cooperative size and several reduction chunks; with
// ordinary buffers and with mapped ones (whose chunks are reduced where they lie); on a
// node with a core a rank and on one whose ranks outnumber its cores (a Bcast beyond a
// slot through the slots, its pieces' places reused beyond their capacity).
TEST(NodeDataFlowTest, ExactResultsAtTheEnginesThresholds) {
  constexpr size_t kElement = 1024;
  const size_t slot = kNodeSlotBytes / kElement;
  const size_t chunk = node_engine_limits::kReduceChunkBytes / kElement;
  for (const Algorithm& model : NodeModels()) {
    for (int size : {2, 3, 5}) {
      for (size_t count : {size_t{1}, slot / 4 + 1, slot, slot + 1, 2 * chunk * size + 3}) {
        for (int root : {0, size - 1}) {
          if (root != 0 && !IsRooted(model.collective)) continue;
          for (bool in_place : {false, true}) {
            for (bool commutative : OpKinds(model)) {
              for (bool mapped : {false, true}) {
                for (bool oversubscribed : {false, true}) {
                  CollectiveArgs args =
                      MakeArgs(model.collective, size, count, root, in_place, commutative);
                  args.element_bytes = kElement;
                  args.mapped_buffers = mapped;
                  args.node_oversubscribed = oversubscribed;
                  const std::string problem = Check(model, args, *Topology::Uniform(1, size));
                  ASSERT_EQ(problem, "")
                      << model.name << " " << CollectiveName(model.collective) << " with " << size
                      << " ranks, count " << count << ", root " << root
                      << (in_place ? ", in place" : "") << (commutative ? ", commutative" : "")
                      << (mapped ? ", mapped buffers" : "")
                      << (oversubscribed ? ", oversubscribed" : "");
                }
              }
            }
          }
        }
      }
    }
  }
}

// With mapped buffers a chained Scan's rank reduces its predecessor's chunks where they
// lie, but an Exscan's last rank reads its result, its predecessor's prefix, straight
// into its buffer: a copy still (5 ranks, 4 MiB, chained beyond a slot).
TEST(NodeDataFlowTest, MappedBuffersSpareReadsOnlyWhereTheyAreReduced) {
  constexpr int kRanks = 5;
  for (Collective collective : {Collective::kScan, Collective::kExscan}) {
    CollectiveArgs args = MakeArgs(collective, kRanks, size_t{1} << 20, 0, false, true);
    args.element_bytes = 4;
    args.mapped_buffers = true;
    const Schedule last = NodeEngineDataFlow(args, *Topology::Uniform(1, kRanks), kRanks - 1);
    int chunk_reads = 0, in_place = 0;
    for (const Step& step : last.steps()) {
      if (step.kind != StepKind::kRecv || step.peer != kRanks - 2) continue;
      // (Not the control line's read: the chunks', copied or not.)
      const bool copied = step.tag >= kNodeChunkTag && step.tag < kNodeInPlaceReadTag;
      const bool reduced_in_place = step.tag >= kNodeInPlaceChunkTag && step.tag < kNodeStageTag;
      if (copied || reduced_in_place) ++chunk_reads;
      if (reduced_in_place) ++in_place;
    }
    EXPECT_GT(chunk_reads, 1) << CollectiveName(collective);
    EXPECT_EQ(in_place, collective == Collective::kScan ? chunk_reads : 0)
        << CollectiveName(collective);
  }
}

// On 2 ranks with a core each a reduction's publication goes into its slot only up to
// kTwoRankCopyInBytes, and beyond it the rank lends its buffer, which its reducers read
// in chunks; a rooted call that moves data and reduces none (Bcast, Scatter, Gather and
// their v-forms, and Exscan, whose rank 1 takes rank 0's vector) uses the whole slot
// (below the cooperative size for a Bcast and an Exscan), copied in with streaming
// stores beyond kTwoRankCopyInBytes (StreamsCopyIn); on more ranks, or an oversubscribed
// node, the slot keeps its size (16 KiB for Allgather and Alltoall) and copies are plain.
// A Reduce's leaf, streaming too, up to kTwoRankStreamedReduceBytes. The engine decides
// with CopyInLimit, which its model shares: a 2-rank Allreduce's rank copies 8 KiB into
// the slot, but not 16 KiB and 4 bytes, which a 3-rank one does; a Reduce_scatter_block's
// rank and a Scan's rank 0 likewise; a Reduce's leaf up to 32 KiB; a Bcast's root, a
// Gather's leaf, an Exscan's rank 0 and a Scatter's root (blocks of those sizes: it
// publishes both, the leaf reads one, up to half the slot) copy every size here in.
// Only the exchanges whose every rank writes the whole result stream their copies into
// it, and only where the node's buffers outgrow the cache; an unknown cache (0) never.
TEST(NodeEngineLimitsTest, ExchangesBeyondTheCacheStreamTheirResultCopies) {
  constexpr size_t kCache = 32 << 20;
  for (Collective collective : {Collective::kAllgather, Collective::kAllgatherv,
                                Collective::kAlltoall, Collective::kAlltoallv}) {
    EXPECT_TRUE(node_engine_limits::StreamsResultCopies(collective, kCache + 1, kCache))
        << CollectiveName(collective);
    EXPECT_FALSE(node_engine_limits::StreamsResultCopies(collective, kCache, kCache))
        << CollectiveName(collective);
    EXPECT_FALSE(node_engine_limits::StreamsResultCopies(collective, kCache + 1, 0))
        << CollectiveName(collective);
  }
  for (Collective collective : {Collective::kGather, Collective::kScatter, Collective::kBcast,
                                Collective::kAllreduce, Collective::kReduceScatterBlock}) {
    EXPECT_FALSE(node_engine_limits::StreamsResultCopies(collective, 4 * kCache, kCache))
        << CollectiveName(collective);
  }
}

TEST(NodeDataFlowTest, TwoRankReductionsLendBeyondSixteenKiBAndMovesUseTheSlot) {
  constexpr size_t kLimit = node_engine_limits::kTwoRankCopyInBytes;
  for (Collective collective : {Collective::kBcast, Collective::kGather, Collective::kScatter,
                                Collective::kExscan, Collective::kReduce, Collective::kAllreduce,
                                Collective::kReduceScatterBlock, Collective::kScan}) {
    const bool moves = collective == Collective::kBcast || collective == Collective::kGather ||
                       collective == Collective::kScatter || collective == Collective::kExscan;
    constexpr size_t kReduceLimit = node_engine_limits::kTwoRankStreamedReduceBytes;
    for (auto [ranks, bytes] : {std::pair{2, kLimit / 2}, std::pair{2, kLimit + 4},
                                std::pair{2, kReduceLimit + 4}, std::pair{3, kLimit + 4}}) {
      // (A Reduce_scatter_block's count is a rank's block; its publication, all of them,
      // at least `bytes`.)
      const size_t count = collective == Collective::kReduceScatterBlock
                               ? (bytes / 4 + ranks - 1) / ranks
                               : bytes / 4;
      CollectiveArgs args = MakeArgs(collective, ranks, count, 0, false, true);
      args.element_bytes = 4;
      // (The Bcast's and Scatter's root publishes, the Gather's and Reduce's leaf.)
      const bool leaf_publishes =
          collective == Collective::kGather || collective == Collective::kReduce;
      const int publisher = leaf_publishes ? 1 : 0;
      const Schedule schedule = NodeEngineDataFlow(args, *Topology::Uniform(1, ranks), publisher);
      bool copied_in = false;
      for (const Step& step : schedule.steps()) {
        copied_in = copied_in || (step.kind == StepKind::kCopy &&
                                  step.output.buffer.kind == BufferKind::kScratch);
      }
      const bool within_slot = collective != Collective::kScatter || 2 * bytes <= kNodeSlotBytes;
      const bool reduce_within = collective == Collective::kReduce && bytes <= kReduceLimit;
      EXPECT_EQ(copied_in, ranks > 2 || bytes <= kLimit || (moves && within_slot) || reduce_within)
          << CollectiveName(collective) << " of " << bytes << " on " << ranks << " ranks";
    }
  }
  for (Collective collective :
       {Collective::kBcast, Collective::kScatter, Collective::kScatterv, Collective::kGather,
        Collective::kGatherv, Collective::kExscan, Collective::kReduce, Collective::kAllreduce,
        Collective::kReduceScatterBlock, Collective::kReduceScatter, Collective::kScan,
        Collective::kAllgather, Collective::kAlltoallv}) {
    const bool scatter_or_gather =
        collective == Collective::kScatter || collective == Collective::kScatterv ||
        collective == Collective::kGather || collective == Collective::kGatherv;
    const bool bcast_or_exscan =
        collective == Collective::kBcast || collective == Collective::kExscan;
    const bool all_to_all =
        collective == Collective::kAllgather || collective == Collective::kAlltoallv;
    const size_t elsewhere = all_to_all ? node_engine_limits::kAllToAllCopyInBytes : kNodeSlotBytes;
    const bool reduce = collective == Collective::kReduce;
    const size_t two_ranks = scatter_or_gather ? kNodeSlotBytes
                             : bcast_or_exscan ? node_engine_limits::kCooperativeBytes - 1
                             : reduce          ? node_engine_limits::kTwoRankStreamedReduceBytes
                                               : kLimit;
    EXPECT_EQ(node_engine_limits::CopyInLimit(collective, kNodeSlotBytes, 2, false), two_ranks)
        << CollectiveName(collective);
    EXPECT_EQ(node_engine_limits::CopyInLimit(collective, kNodeSlotBytes, 2, true), elsewhere)
        << CollectiveName(collective);
    EXPECT_EQ(node_engine_limits::CopyInLimit(collective, kNodeSlotBytes, 4, false), elsewhere)
        << CollectiveName(collective);
    // Streaming stores: those calls' and a Reduce's copies beyond kTwoRankCopyInBytes on
    // 2 ranks with a core each, no others.
    const bool streams = scatter_or_gather || bcast_or_exscan || reduce;
    EXPECT_EQ(node_engine_limits::StreamsCopyIn(collective, kLimit + 1, 2, false), streams)
        << CollectiveName(collective);
    EXPECT_FALSE(node_engine_limits::StreamsCopyIn(collective, kLimit, 2, false))
        << CollectiveName(collective);
    EXPECT_FALSE(node_engine_limits::StreamsCopyIn(collective, kLimit + 1, 2, true))
        << CollectiveName(collective);
    EXPECT_FALSE(node_engine_limits::StreamsCopyIn(collective, kLimit + 1, 3, false))
        << CollectiveName(collective);
  }
}

// A publication in a zcoll buffer (mapped_buffers) goes into the slot up to kEagerBytes
// and is lent beyond it, at any size, on 2 ranks and on 5 (where a 4 KiB Allreduce is
// partitioned in the slots: its blocks reduced from the lent vectors into the slot);
// ordinary buffers keep the slots (CopyInLimit). The engine decides with
// LendsMappedBuffer, which its model shares; the publishers as in the test above.
TEST(NodeDataFlowTest, ZcollBuffersAreLentBeyondTheEagerSize) {
  constexpr size_t kEager = node_engine_limits::kEagerBytes;
  for (Collective collective : {Collective::kBcast, Collective::kGather, Collective::kScatter,
                                Collective::kScatterv, Collective::kExscan, Collective::kReduce,
                                Collective::kAllreduce, Collective::kReduceScatterBlock,
                                Collective::kScan, Collective::kAllgather, Collective::kAlltoall}) {
    for (int ranks : {2, 5}) {
      for (size_t bytes : {kEager, kEager + 4, size_t{4096}}) {
        for (bool mapped : {false, true}) {
          // (A rank's block where the count is one: its publication at least `bytes`.)
          const bool per_rank_block =
              collective == Collective::kReduceScatterBlock || collective == Collective::kScatter ||
              collective == Collective::kScatterv || collective == Collective::kAlltoall;
          const size_t count = per_rank_block ? (bytes / 4 + ranks - 1) / ranks : bytes / 4;
          CollectiveArgs args = MakeArgs(collective, ranks, count, 0, false, true);
          args.element_bytes = 4;
          args.mapped_buffers = mapped;
          const bool leaf_publishes =
              collective == Collective::kGather || collective == Collective::kReduce;
          const Schedule schedule =
              NodeEngineDataFlow(args, *Topology::Uniform(1, ranks), leaf_publishes ? 1 : 0);
          bool copied_in = false;
          for (const Step& step : schedule.steps()) {
            copied_in = copied_in || (step.kind == StepKind::kCopy &&
                                      step.output.buffer.kind == BufferKind::kScratch &&
                                      step.inputs.front().buffer.kind != BufferKind::kScratch);
          }
          size_t published = per_rank_block ? count * 4 * ranks : count * 4;
          if (collective == Collective::kScatterv) {
            published = 0;  // (MakeArgs varies its blocks)
            for (size_t block : args.counts) published += block * 4;
          }
          EXPECT_EQ(copied_in, !(mapped && published > kEager))
              << CollectiveName(collective) << " of " << bytes << " on " << ranks << " ranks"
              << (mapped ? ", mapped" : "");
        }
      }
    }
  }
}

// A lent vector of a 2-rank Reduce or Allreduce (beyond kTwoRankCopyInBytes, and a
// Reduce's beyond kTwoRankStreamedReduceBytes; within a slot: reduced whole, not
// partitioned) is read in chunks from its owner's buffer, not reduced where it lies as
// a slot is; in place, an Allreduce's result is made in scratch and copied into the
// buffer the other rank reads only at the end.
TEST(NodeDataFlowTest, ALentReductionIsReadInChunksAndAnInPlaceAllreduceDefersItsResult) {
  static_assert(node_engine_limits::kTwoRankStreamedReduceBytes >=
                node_engine_limits::kTwoRankCopyInBytes);
  constexpr size_t kCount = (node_engine_limits::kTwoRankStreamedReduceBytes + 4096) / 4;
  static_assert(kCount * 4 < kNodeSlotBytes);
  for (Collective collective : {Collective::kReduce, Collective::kAllreduce}) {
    for (bool in_place : {false, true}) {
      CollectiveArgs args = MakeArgs(collective, 2, kCount, 0, in_place, true);
      args.element_bytes = 4;
      // (The root, rank 0, reduces in both.)
      const Schedule schedule = NodeEngineDataFlow(args, *Topology::Uniform(1, 2), 0);
      const std::string what =
          absl::StrCat(CollectiveName(collective), in_place ? " in place" : "");
      int chunk_reads = 0, in_place_reads = 0, copies_into_result = 0;
      for (const Step& step : schedule.steps()) {
        if (step.kind == StepKind::kRecv && step.tag >= kNodeChunkTag &&
            step.tag < kNodeInPlaceReadTag) {
          ++chunk_reads;
        }
        if (step.kind == StepKind::kRecv && NodeReadInPlace(step.tag)) ++in_place_reads;
        if (step.kind == StepKind::kCopy &&
            step.inputs.front().buffer.kind == BufferKind::kScratch &&
            step.output.buffer == BufferId::Recv()) {
          ++copies_into_result;
        }
      }
      EXPECT_GE(chunk_reads, 1) << what;
      EXPECT_EQ(in_place_reads, 0) << what;
      const bool deferred = collective == Collective::kAllreduce && in_place;
      EXPECT_EQ(copies_into_result, deferred ? 1 : 0) << what;
    }
  }
}

// A partitioned Allreduce beyond the slots shows its block of the result in the slot
// where the block fits it (node_engine_limits::ResultInSlot): each rank copies its block
// into scratch and serves the others from there; where it does not fit, from its
// buffer.
TEST(NodeDataFlowTest, APartitionedAllreduceShowsItsBlockInTheSlotWhereItFits) {
  for (int ranks : {2, 4}) {
    for (size_t bytes : {size_t{96} * 1024, size_t{512} * 1024}) {
      CollectiveArgs args = MakeArgs(Collective::kAllreduce, ranks, bytes / 4, 0, false, true);
      args.element_bytes = 4;
      const bool in_slot =
          node_engine_limits::ResultInSlot(Collective::kAllreduce, bytes, 4, kNodeSlotBytes, ranks);
      // (96 KiB: blocks of 48 and 24 KiB; 512 KiB: of 256 and 128 KiB.)
      EXPECT_EQ(in_slot, bytes == 96 * 1024) << ranks << " ranks, " << bytes;
      const Schedule schedule = NodeEngineDataFlow(args, *Topology::Uniform(1, ranks), 1);
      int stage_sends = 0, from_scratch = 0;
      for (const Step& step : schedule.steps()) {
        if (step.kind != StepKind::kSend || step.tag != kNodeStageTag) continue;
        ++stage_sends;
        if (step.inputs.front().buffer.kind == BufferKind::kScratch) ++from_scratch;
      }
      EXPECT_EQ(stage_sends, ranks - 1) << ranks << " ranks, " << bytes;
      EXPECT_EQ(from_scratch, in_slot ? ranks - 1 : 0) << ranks << " ranks, " << bytes;
    }
  }
}

// On a node whose ranks outnumber its cores a Bcast beyond a slot goes through the
// slots (node_engine_limits::BcastThroughSlots), as the engine runs it there: the root
// copies the vector in pieces of a quarter slot into scratch (the slots: one per rank
// here, 4 ranks, so 16 places, reused beyond them) and serves every leaf each piece
// from there; a leaf reads the pieces from the root (kNodeChunkTag + k) and nothing is
// written into it. With a core a rank, the root writes a share into each leaf instead.
TEST(NodeDataFlowTest, AnOversubscribedNodesBcastGoesThroughTheSlots) {
  constexpr int kRanks = 4;
  const size_t bytes = size_t{1} << 20;
  const size_t piece = kNodeSlotBytes / node_engine_limits::kBcastSlotPieceParts;
  const size_t pieces = bytes / piece;
  for (bool oversubscribed : {false, true}) {
    CollectiveArgs args = MakeArgs(Collective::kBcast, kRanks, bytes / 4, 0, false, true);
    args.element_bytes = 4;
    args.node_oversubscribed = oversubscribed;
    const Topology topology = *Topology::Uniform(1, kRanks);
    const Schedule root = NodeEngineDataFlow(args, topology, 0);
    size_t copies = 0, piece_sends = 0, largest_scratch = 0;
    for (const Step& step : root.steps()) {
      if (step.kind == StepKind::kCopy && step.output.buffer.kind == BufferKind::kScratch) {
        ++copies;
        EXPECT_EQ(step.output.count * 4, piece);
        largest_scratch = std::max(largest_scratch, step.output.offset * 4 + piece);
      }
      if (step.kind == StepKind::kSend && step.tag >= kNodeChunkTag &&
          step.tag < kNodeInPlaceReadTag) {
        ++piece_sends;
      }
    }
    const Schedule leaf = NodeEngineDataFlow(args, topology, 2);
    size_t piece_reads = 0, written = 0;
    for (const Step& step : leaf.steps()) {
      if (step.kind != StepKind::kRecv) continue;
      if (step.tag >= kNodeChunkTag && step.tag < kNodeInPlaceReadTag) ++piece_reads;
      if (NodeWriteBySender(step.tag)) ++written;
    }
    SCOPED_TRACE(oversubscribed ? "oversubscribed" : "a core a rank");
    EXPECT_EQ(copies, oversubscribed ? pieces : 0);
    EXPECT_EQ(piece_sends, oversubscribed ? pieces * (kRanks - 1) : 0);
    EXPECT_EQ(largest_scratch, oversubscribed ? 16 * piece : 0);
    EXPECT_EQ(piece_reads, oversubscribed ? pieces : 0);
    EXPECT_EQ(written, oversubscribed ? 0 : 1);
  }
}

// Where ResultInSlot shows the blocks in the slots, every rank's block fits one: at the
// rule's edge, for element sizes that divide a cache line and some that do not (whose
// blocks are not aligned) or outgrow it, on 2 to 64 ranks.
TEST(NodeEngineLimitsTest, EveryBlockOfAResultShownInTheSlotFitsIt) {
  int shown = 0;
  for (int ranks : {2, 3, 5, 9, 16, 63, 64}) {
    for (size_t element_bytes :
         {size_t{1}, size_t{4}, size_t{8}, size_t{12}, size_t{96}, size_t{200}}) {
      const size_t edge = kNodeSlotBytes * static_cast<size_t>(ranks);
      for (size_t bytes = edge - 4 * 1024; bytes <= edge + 1024; bytes += 61) {
        const size_t count = bytes / element_bytes;
        const size_t exact = count * element_bytes;
        if (!node_engine_limits::ResultInSlot(Collective::kAllreduce, exact, element_bytes,
                                              kNodeSlotBytes, ranks)) {
          continue;
        }
        ++shown;
        for (int rank = 0; rank < ranks; ++rank) {
          const auto [first, length] = node_engine_limits::ReductionBlock(
              Collective::kAllreduce, count, element_bytes, ranks, 0, rank);
          ASSERT_LE(length * element_bytes, kNodeSlotBytes)
              << ranks << " ranks, " << element_bytes << "-byte elements, " << count
              << " of them: rank " << rank;
        }
      }
    }
  }
  EXPECT_GT(shown, 0);
}

// A Bcast beyond a slot goes through the slots wherever ranks outnumber cores or cannot
// read each other's memory, at any size (reusing them beyond their capacity), and the
// root's control line names the leaf of every slot it may use: a 16-bit rank per slot
// but its own.
TEST(NodeEngineLimitsTest, ABcastGoesThroughTheSlotsWhereRanksShareCoresOrCannotReadPeers) {
  using node_engine_limits::BcastThroughSlots;
  EXPECT_LE(node_engine_limits::kBcastMostSlots * sizeof(uint16_t),
            node_engine_limits::kInlineBytes);
  for (int ranks : {2, 3, 4, 9, 22, 23, 64}) {
    for (bool oversubscribed : {false, true}) {
      for (bool single_copy : {false, true}) {
        const std::string where = absl::StrCat(ranks, " ranks, oversubscribed ", oversubscribed,
                                               ", single copy ", single_copy);
        EXPECT_FALSE(
            BcastThroughSlots(kNodeSlotBytes, kNodeSlotBytes, ranks, oversubscribed, single_copy))
            << where;
        for (size_t bytes : {kNodeSlotBytes + 1, kNodeSlotBytes * 22 + 1, size_t{1} << 30}) {
          // (Where ranks have a core each and read each other's memory, the root lends its
          // buffer.)
          EXPECT_EQ(BcastThroughSlots(bytes, kNodeSlotBytes, ranks, oversubscribed, single_copy),
                    oversubscribed || !single_copy)
              << where << ", " << bytes << " bytes";
        }
      }
    }
  }
  EXPECT_FALSE(BcastThroughSlots(kNodeSlotBytes + 1, kNodeSlotBytes, 1, true, false));
}

// Without single copy the engine runs what fits a slot, and a Bcast of any size; the
// rest goes by messages.
TEST(NodeEngineLimitsTest, WithoutSingleCopyTheEngineRunsBcastsOfAnySize) {
  for (const bool oversubscribed : {false, true}) {
    for (const size_t bytes : {size_t{8}, kNodeSlotBytes, kNodeSlotBytes + 4, size_t{8} << 20}) {
      for (const Collective collective : {Collective::kBcast, Collective::kAllreduce}) {
        const CollectiveArgs args = MakeArgs(collective, 4, bytes / 4, 0, false, true);
        const SelectionInputs inputs =
            AgreedSelectionInputs(args, *Topology::Uniform(1, 4), /*node_engine=*/true,
                                  /*node_single_copy=*/false, oversubscribed, false);
        EXPECT_EQ(SelectAlgorithm(inputs).name == "node",
                  collective == Collective::kBcast || bytes <= kNodeSlotBytes)
            << CollectiveName(collective) << " of " << bytes << " bytes";
      }
    }
  }
}

// A Bcast's root writes each of the other p - 1 ranks a share, a call each
// (kPeerCallBytes of copying) besides its bytes, while each of them reads the rest: the
// root's writes end no later than the others' reads, and within a cache line of
// copying each; none where its calls alone outlast a read of the whole; half on 2
// ranks, as before. A Gather's leaves write their whole blocks (where ranks outnumber
// cores too); a Scatter's root writes none.
TEST(NodeEngineLimitsTest, ARootsSharesEndWithTheOthersCopies) {
  using node_engine_limits::BcastShare;
  using node_engine_limits::Cooperates;
  using node_engine_limits::kCooperativeBytes;
  using node_engine_limits::kPeerCallBytes;
  const Collective bcast = Collective::kBcast;
  EXPECT_EQ(BcastShare(1 << 20, 2, false), size_t{1} << 19);
  EXPECT_EQ(BcastShare(128 * 1024, 64, false), 0u);
  EXPECT_EQ(BcastShare(kCooperativeBytes - 64, 2, false), 0u);
  EXPECT_FALSE(Cooperates(bcast, 1 << 20, /*oversubscribed=*/true));
  EXPECT_EQ(BcastShare(1 << 20, 4, /*oversubscribed=*/true), 0u);
  for (int ranks : {2, 3, 4, 9, 16, 64}) {
    for (size_t length = kCooperativeBytes; length <= (size_t{8} << 20); length = length * 3 / 2) {
      ASSERT_TRUE(Cooperates(bcast, length, false));
      const size_t share = BcastShare(length, ranks, false);
      const size_t others = ranks - 1;
      if (share == 0) {
        // The root's calls alone take as long as another's whole read.
        EXPECT_GE(others * kPeerCallBytes, kPeerCallBytes + length - ranks * 64)
            << ranks << " ranks, " << length;
        continue;
      }
      EXPECT_EQ(share % 64, 0u);
      const size_t root = others * (kPeerCallBytes + share);
      const size_t other = kPeerCallBytes + length - share;
      EXPECT_LE(root, other) << ranks << " ranks, " << length;
      EXPECT_LT(other - root, ranks * 64) << ranks << " ranks, " << length;
    }
  }
  for (bool oversubscribed : {false, true}) {
    for (Collective collective : {Collective::kGather, Collective::kGatherv}) {
      EXPECT_TRUE(Cooperates(collective, kCooperativeBytes, oversubscribed));
      EXPECT_FALSE(Cooperates(collective, kCooperativeBytes - 1, oversubscribed));
    }
    for (Collective collective : {Collective::kScatter, Collective::kScatterv}) {
      EXPECT_FALSE(Cooperates(collective, 1 << 20, oversubscribed));
    }
  }
}

// Nobody reads the last rank's vector in a Scan or Exscan within a slot: it copies
// none into its slot, in place or not (an Exscan's needs none, a Scan's reduces its
// own where it lies); the other ranks copy theirs in.
TEST(NodeDataFlowTest, TheLastRankOfAScanCopiesNothingIntoItsSlot) {
  constexpr int kRanks = 3;
  for (Collective collective : {Collective::kScan, Collective::kExscan}) {
    for (bool in_place : {false, true}) {
      CollectiveArgs args = MakeArgs(collective, kRanks, 2048, 0, in_place, true);
      args.element_bytes = 4;
      for (int rank = 0; rank < kRanks; ++rank) {
        const Schedule schedule = NodeEngineDataFlow(args, *Topology::Uniform(1, kRanks), rank);
        bool copied_in = false;
        for (const Step& step : schedule.steps()) {
          copied_in = copied_in || (step.kind == StepKind::kCopy &&
                                    step.output.buffer.kind == BufferKind::kScratch);
        }
        EXPECT_EQ(copied_in, rank != kRanks - 1)
            << CollectiveName(collective) << (in_place ? " in place" : "") << " rank " << rank;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, AlgorithmTest, ::testing::ValuesIn(Every()),
                         [](const ::testing::TestParamInfo<const Algorithm*>& info) {
                           return absl::StrCat(CollectiveName(info.param->collective), "_",
                                               info.param->name,
                                               info.param->name == "node" ? "_model" : "");
                         });

// A barrier's promise is about order, not data: no rank may finish before every
// rank has started. A rank's steps can only start once it entered, and it leaves
// when all its steps are done; so for every pair (s, r) some step of r must depend,
// through steps and messages, on some step of s.
std::string CheckEveryRankHearsFromAll(const Algorithm& algorithm, int size) {
  CollectiveArgs args;
  args.collective = Collective::kBarrier;
  args.size = size;
  const Topology topology = *Topology::Uniform(1, size);
  std::vector<Schedule> schedules;
  for (int r = 0; r < size; ++r) schedules.push_back(algorithm.generate(args, topology, r));
  if (absl::Status status = ValidateSchedules(schedules); !status.ok()) {
    return std::string(status.message());
  }
  // Steps numbered globally; edges from a step to those that wait for it.
  std::vector<size_t> first(size + 1, 0);
  for (int r = 0; r < size; ++r) first[r + 1] = first[r] + schedules[r].steps().size();
  std::vector<std::vector<size_t>> next(first[size]);
  std::map<std::tuple<int, int, uint32_t>, size_t> sends;  // (from, to, tag) -> step
  for (int r = 0; r < size; ++r) {
    for (StepId id = 0; id < schedules[r].steps().size(); ++id) {
      const Step& step = schedules[r].step(id);
      for (StepId dep : step.deps) next[first[r] + dep].push_back(first[r] + id);
      if (step.kind == StepKind::kSend) sends[{r, step.peer, step.tag}] = first[r] + id;
    }
  }
  for (int r = 0; r < size; ++r) {
    for (StepId id = 0; id < schedules[r].steps().size(); ++id) {
      const Step& step = schedules[r].step(id);
      if (step.kind == StepKind::kRecv) {
        next[sends.at({step.peer, r, step.tag})].push_back(first[r] + id);
      }
    }
  }
  for (int s = 0; s < size; ++s) {
    std::vector<bool> reached(first[size], false);
    std::vector<size_t> stack;
    for (size_t step = first[s]; step < first[s + 1]; ++step) {
      reached[step] = true;
      stack.push_back(step);
    }
    while (!stack.empty()) {
      const size_t step = stack.back();
      stack.pop_back();
      for (size_t after : next[step]) {
        if (!reached[after]) {
          reached[after] = true;
          stack.push_back(after);
        }
      }
    }
    for (int r = 0; r < size; ++r) {
      if (r == s) continue;
      bool heard = false;
      for (size_t step = first[r]; step < first[r + 1] && !heard; ++step) heard = reached[step];
      if (!heard) return absl::StrCat("rank ", r, " can leave before rank ", s, " entered");
    }
  }
  return "";
}

TEST(BarrierTest, NoRankLeavesBeforeEveryRankEntered) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.collective != Collective::kBarrier || !algorithm.runs_schedule()) continue;
    for (int size = 1; size <= 64; ++size) {
      EXPECT_EQ(CheckEveryRankHearsFromAll(algorithm, size), "")
          << algorithm.name << " with " << size << " ranks";
    }
    EXPECT_EQ(CheckEveryRankHearsFromAll(algorithm, 1000), "") << algorithm.name;
  }
}

// Sends from one node to another in every rank's schedule.
int CrossNodeSends(const Algorithm& algorithm, const CollectiveArgs& args,
                   const Topology& topology) {
  int sends = 0;
  for (int r = 0; r < args.size; ++r) {
    const Schedule schedule = algorithm.generate(args, topology, r);
    for (const Step& step : schedule.steps()) {
      sends += step.kind == StepKind::kSend && topology.node_of(step.peer) != topology.node_of(r);
    }
  }
  return sends;
}

// The one-level trees are built over the ranks grouped by node: with ranks placed
// round robin (rank r on node r % 2), a tree in rank order would send 4 of its 7
// edges across the network; grouped, one message crosses, as in a two-level tree.
TEST(TreeTest, OneLevelTreesCrossTheNetworkOnceForTwoNodesWhateverThePlacement) {
  constexpr int kSize = 8;
  std::vector<RankLocation> round_robin(kSize);
  for (int r = 0; r < kSize; ++r) round_robin[r].node = r % 2;
  const Topology topology = *Topology::Create(round_robin);
  const std::pair<Collective, absl::string_view> trees[] = {{Collective::kBcast, "binomial"},
                                                            {Collective::kReduce, "binomial"},
                                                            {Collective::kReduce, "knomial"}};
  for (const auto& [collective, name] : trees) {
    const Algorithm& algorithm = **FindAlgorithm(collective, name);
    for (int root : {0, 3, 6}) {
      // One element: one chunk, so every tree edge is one message.
      const CollectiveArgs args = MakeArgs(collective, kSize, 1, root, /*in_place=*/false,
                                           /*commutative=*/true);
      EXPECT_EQ(CrossNodeSends(algorithm, args, topology), 1)
          << CollectiveName(collective) << " " << name << " rooted at " << root;
    }
  }
}

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
        const SelectionInputs inputs = AgreedSelectionInputs(args, *Topology::Uniform(1, size));
        const Algorithm& chosen = SelectAlgorithm(inputs);
        EXPECT_EQ(chosen.collective, args.collective);
        EXPECT_OK(CheckAlgorithmCanRun(chosen, inputs));
      }
    }
  }
}

// The node engine runs every collective of a one-node communicator, but for rooted
// ones below 64 KiB where the node's ranks outnumber its cores (selection.cc says why),
// except a Bcast at every size and a Scatter within kEagerBytes, whose leaves wait for
// the root alone; a Gather there on 3 to 8 ranks is on the engine only up to 48 KiB;
// and a Reduce there is on the engine but beyond the slot (64 KiB) up to 1 MiB on 3 to
// 16 ranks.
TEST(SelectionTest, RootedCollectivesGoByMessagesOnAnOversubscribedNode) {
  for (const bool oversubscribed : {false, true}) {
    for (const Collective collective :
         {Collective::kBcast, Collective::kReduce, Collective::kScatter, Collective::kGather,
          Collective::kScatterv, Collective::kAllreduce}) {
      for (const size_t count : {size_t{2}, size_t{256}, size_t{257}, size_t{2048}, size_t{2049},
                                 size_t{12288}, size_t{12289}, size_t{16384}, size_t{16385},
                                 size_t{262144}, size_t{262145}, size_t{1} << 20}) {
        CollectiveArgs args = MakeArgs(collective, 4, count, 0, false);
        args.element_bytes = 4;
        const SelectionInputs inputs =
            AgreedSelectionInputs(args, *Topology::Uniform(1, 4), /*node_engine=*/true,
                                  /*node_single_copy=*/true, oversubscribed);
        const std::optional<size_t> bytes = inputs.bytes;
        const bool leaves_read_the_root_alone =
            collective == Collective::kBcast || collective == Collective::kScatterv ||
            (collective == Collective::kScatter && *bytes <= node_engine_limits::kEagerBytes);
        const bool gather_in_a_slot = collective == Collective::kGather && *bytes <= 48 * 1024;
        const bool reduce_past_the_slot =
            collective == Collective::kReduce && *bytes > 64 * 1024 && *bytes <= 1024 * 1024;
        const bool by_messages =
            oversubscribed && IsRooted(collective) && !gather_in_a_slot &&
            (collective == Collective::kGather || reduce_past_the_slot ||
             ((!bytes.has_value() || *bytes < 64 * 1024) && !leaves_read_the_root_alone &&
              collective != Collective::kReduce));
        EXPECT_EQ(SelectAlgorithm(inputs).on_node(), !by_messages)
            << CollectiveName(collective) << " " << count << " floats, oversubscribed "
            << oversubscribed;
      }
    }
  }
}

// A barrier is on the engine there too (released, so that rank 0 leaves it first:
// node_engine_limits::ReleasedBarrier); without the engine 3 to 8 ranks are linear.
TEST(SelectionTest, ABarrierIsOnTheEngineAndLinearWithoutIt) {
  for (const bool engine : {false, true}) {
    for (const bool oversubscribed : {false, true}) {
      for (const int size : {2, 4, 8, 12}) {
        const SelectionInputs inputs = AgreedSelectionInputs(
            MakeArgs(Collective::kBarrier, size, 0, 0, false), *Topology::Uniform(1, size),
            /*node_engine=*/engine, /*node_single_copy=*/true, oversubscribed);
        const char* expected = engine                   ? "node"
                               : size >= 3 && size <= 8 ? "linear"
                                                        : "dissemination";
        EXPECT_EQ(SelectAlgorithm(inputs).name, expected)
            << size << " ranks, engine " << engine << ", oversubscribed " << oversubscribed;
      }
    }
  }
}

// And on 3 to 16 ranks there an Allgather or Alltoall beyond the slots' copy goes by
// messages; with a core a rank, or more ranks, on the engine at every size.
TEST(SelectionTest, ExchangesBeyondTheCopyGoByMessagesOnAnOversubscribedNode) {
  for (const bool oversubscribed : {false, true}) {
    for (const int size : {2, 3, 4, 8, 9, 16, 17}) {
      for (const size_t bytes : {size_t{2048}, size_t{2052}, size_t{4096}, size_t{4100},
                                 size_t{16384}, size_t{16388}, size_t{1} << 20}) {
        for (const Collective collective : {Collective::kAllgather, Collective::kAlltoall}) {
          CollectiveArgs args = MakeArgs(collective, size, bytes / 4, 0, false);
          args.element_bytes = 4;
          const SelectionInputs inputs =
              AgreedSelectionInputs(args, *Topology::Uniform(1, size), /*node_engine=*/true,
                                    /*node_single_copy=*/true, oversubscribed);
          const size_t from = collective == Collective::kAllgather ? 16384 : size > 4 ? 2048 : 4096;
          const bool by_messages = oversubscribed && size >= 3 && size <= 16 && bytes > from;
          const absl::string_view messages =
              collective == Collective::kAllgather ? "linear" : "pairwise";
          EXPECT_EQ(SelectAlgorithm(inputs).name, by_messages ? messages : "node")
              << CollectiveName(collective) << " " << size << " ranks, " << bytes
              << " bytes, oversubscribed " << oversubscribed;
        }
      }
    }
  }
}

// One node with NUMA levels (node_levels.h): from 32 ranks its small allreduce,
// reduce, bcast and barrier go through the domains' levels, a non-commutative op and
// fewer ranks stay flat on the node's segment, and without levels nothing changes.
// Larger ones stay flat: from 2 KiB on 32 ranks, from 4 KiB (bcast, reduce) or 8 KiB
// (allreduce) on 64.
TEST(SelectionTest, LargerCallsOverNumaDomainsStayFlat) {
  struct Case {
    Collective collective;
    int size;
    size_t bytes;
    bool levels;
  };
  const Case cases[] = {
      {Collective::kAllreduce, 32, 1024, true}, {Collective::kAllreduce, 32, 2048, false},
      {Collective::kAllreduce, 64, 4096, true}, {Collective::kAllreduce, 64, 8192, false},
      {Collective::kReduce, 32, 1024, true},    {Collective::kReduce, 32, 2048, false},
      {Collective::kReduce, 64, 2048, true},    {Collective::kReduce, 64, 4096, false},
      {Collective::kBcast, 32, 1024, true},     {Collective::kBcast, 32, 2048, false},
      {Collective::kBcast, 64, 2048, true},     {Collective::kBcast, 64, 4096, false},
  };
  for (const Case& c : cases) {
    CollectiveArgs args = MakeArgs(c.collective, c.size, c.bytes / 4, 0, false);
    args.element_bytes = 4;
    args.commutative = true;
    const SelectionInputs inputs = AgreedSelectionInputs(
        args, *Topology::Uniform(1, c.size), /*node_engine=*/true, /*node_single_copy=*/true,
        /*node_oversubscribed=*/false, /*levels=*/true);
    EXPECT_EQ(SelectAlgorithm(inputs).name, c.levels ? "node_levels" : "node")
        << CollectiveName(c.collective) << " " << c.size << " ranks, " << c.bytes << " bytes";
  }
}

TEST(SelectionTest, ManyRanksOverNumaDomainsUseTheLevels) {
  for (const int size : {16, 32, 64}) {
    for (const bool levels : {false, true}) {
      for (const bool commutative : {false, true}) {
        for (const Collective collective : {Collective::kAllreduce, Collective::kReduce,
                                            Collective::kBcast, Collective::kBarrier}) {
          CollectiveArgs args = MakeArgs(collective, size, 64, 0, false);
          args.element_bytes = 4;
          args.commutative = commutative;
          const SelectionInputs inputs = AgreedSelectionInputs(
              args, *Topology::Uniform(1, size), /*node_engine=*/true,
              /*node_single_copy=*/true, /*node_oversubscribed=*/false, levels);
          const bool reduces =
              collective == Collective::kAllreduce || collective == Collective::kReduce;
          const bool expected = levels && size >= 32 && (commutative || !reduces);
          EXPECT_EQ(SelectAlgorithm(inputs).name, expected ? "node_levels" : "node")
              << CollectiveName(collective) << " " << size << " ranks, levels " << levels
              << ", commutative " << commutative;
        }
      }
    }
  }
}

// A node's Scan and Exscan on many ranks within the sizes where the model has
// recursive doubling faster than the engine: 16 ranks from 2 KiB, 32 from 256 B, 64
// from any size, to 64 KiB (128 KiB on 64); else, fewer ranks, oversubscribed, the
// engine.
TEST(SelectionTest, ScansOnManyRanksWithinASlotAreRecursiveDoubling) {
  struct Case {
    int size;
    size_t bytes;
    bool oversubscribed;
    bool messages;
  };
  const Case cases[] = {
      {8, 8192, false, false},    {16, 1024, false, false},   {16, 2048, false, true},
      {16, 65536, false, true},   {16, 131072, false, false}, {32, 128, false, false},
      {32, 256, false, true},     {64, 8, false, true},       {64, 131072, false, true},
      {64, 262144, false, false}, {64, 8192, true, false},
  };
  for (const Collective collective : {Collective::kScan, Collective::kExscan}) {
    for (const Case& c : cases) {
      CollectiveArgs args = MakeArgs(collective, c.size, c.bytes / 4, 0, false);
      args.element_bytes = 4;
      const SelectionInputs inputs =
          AgreedSelectionInputs(args, *Topology::Uniform(1, c.size), /*node_engine=*/true,
                                /*node_single_copy=*/true, c.oversubscribed);
      EXPECT_EQ(SelectAlgorithm(inputs).name, c.messages ? "recursive_doubling" : "node")
          << CollectiveName(collective) << " " << c.size << " ranks, " << c.bytes
          << " bytes, oversubscribed " << c.oversubscribed;
    }
  }
}

// A stripe communicator's Allreduce is chosen by the bytes its network link carries:
// its node's q stripes cross it at once. 16 KiB on 64 sharers is the 1 MiB a NIC
// carries (rabenseifner), where 16 KiB alone is recursive doubling; 256 B on 64
// sharers is 16 KiB, still recursive doubling; sizes past what a size_t holds saturate.
TEST(SelectionTest, AStripeIsChosenByTheBytesItsLinkCarries) {
  struct Case {
    size_t bytes;
    int sharers;
    absl::string_view chosen;
  };
  const Case cases[] = {
      {16384, 1, "recursive_doubling"},      {16384, 64, "rabenseifner"},
      {256, 64, "recursive_doubling"},       {257 * 4, 64, "rabenseifner"},
      {size_t{1} << 62, 64, "rabenseifner"},
  };
  for (const Case& c : cases) {
    CollectiveArgs args = MakeArgs(Collective::kAllreduce, 16, c.bytes / 4, 0, false, true);
    args.element_bytes = 4;
    SelectionInputs inputs = AgreedSelectionInputs(args, *Topology::Uniform(16, 1));
    inputs.link_sharers = c.sharers;
    EXPECT_EQ(SelectAlgorithm(inputs).name, c.chosen) << c.bytes << " bytes, " << c.sharers;
  }
}

// The selection inputs of a call of `bytes` (int32, a commutative op, root 0) on `ranks`
// in `nodes` even nodes, each with a node engine that reads its peers' memory, and the
// levels or not.
SelectionInputs CommutativeInputsAcrossNodes(Collective collective, int ranks, int nodes,
                                             size_t bytes, bool levels) {
  const size_t count = collective == Collective::kReduceScatterBlock
                           ? bytes / 4 / static_cast<size_t>(ranks)
                           : bytes / 4;
  CollectiveArgs args = MakeArgs(collective, ranks, count, 0, false);
  args.element_bytes = 4;
  args.commutative = true;
  return AgreedSelectionInputs(args, *Topology::Uniform(nodes, ranks / nodes),
                               /*node_engine=*/true, /*node_single_copy=*/true,
                               /*node_oversubscribed=*/false, levels);
}

// Across nodes, where nothing was measured, the model's choices (selection.cc): a
// Reduce from 8 ranks past the levels' 8 KiB by Rabenseifner's halving (fewer ranks,
// as measured, two_level), a ReduceScatterBlock from 64 ranks by recursive halving
// where a rank's block is at most 256 B (else pairwise). Node counts from 2 to one a
// rank; with and without levels. An Alltoall from 32 ranks of blocks up to 32 B by
// Bruck's rounds. A Bcast past 2 MiB by binary trees, by a chain on up to 32 ranks
// past 8 MiB and on up to 64 past 32 MiB. An Allreduce past 2 MiB by stripes.
TEST(SelectionTest, ManyRanksAcrossNodesFollowTheModel) {
  struct Case {
    Collective collective;
    int ranks;
    int nodes;
    size_t bytes;
    absl::string_view chosen;
  };
  const Case cases[] = {
      {Collective::kReduce, 4, 2, 32768, "two_level"},
      {Collective::kReduce, 7, 7, 1 << 20, "two_level"},
      {Collective::kReduce, 8, 2, 8192 + 4, "rabenseifner"},
      {Collective::kReduce, 8, 8, 1 << 20, "rabenseifner"},
      {Collective::kReduce, 1024, 16, 64 << 20, "rabenseifner"},
      {Collective::kReduceScatterBlock, 63, 9, 1024, "pairwise"},
      {Collective::kReduceScatterBlock, 64, 2, 1024, "recursive_halving"},
      {Collective::kReduceScatterBlock, 64, 64, 16384, "recursive_halving"},
      {Collective::kReduceScatterBlock, 64, 8, 16384 + 256, "pairwise"},
      {Collective::kReduceScatterBlock, 1024, 16, 256 << 10, "recursive_halving"},
      {Collective::kReduceScatterBlock, 1024, 1024, (256 << 10) + 4096, "pairwise"},
      {Collective::kReduceScatterBlock, 65536, 1024, 2 << 20, "recursive_halving"},
      {Collective::kAlltoall, 32, 4, 32, "bruck"},
      {Collective::kAlltoall, 1024, 16, 8, "bruck"},
      {Collective::kAlltoall, 31, 31, 8, "pairwise"},
      {Collective::kAlltoall, 64, 8, 36, "pairwise"},
      {Collective::kBcast, 8, 8, 2 << 20, "two_level"},
      {Collective::kBcast, 8, 8, (2 << 20) + 4, "two_level_binary"},
      {Collective::kBcast, 4, 2, 8 << 20, "two_level_binary"},
      {Collective::kBcast, 65536, 1024, 64 << 20, "two_level_binary"},
      {Collective::kBcast, 3, 3, (8 << 20) + 4, "chain"},
      {Collective::kBcast, 32, 4, 8 << 20, "two_level_binary"},
      {Collective::kBcast, 32, 32, 64 << 20, "chain"},
      {Collective::kBcast, 64, 4, 32 << 20, "two_level_binary"},
      {Collective::kBcast, 64, 64, (32 << 20) + 4, "chain"},
      {Collective::kBcast, 65, 5, 64 << 20, "two_level_binary"},
  };
  for (const Case& c : cases) {
    for (const bool levels : {false, true}) {
      const SelectionInputs inputs =
          CommutativeInputsAcrossNodes(c.collective, c.ranks, c.nodes, c.bytes, levels);
      EXPECT_EQ(SelectAlgorithm(inputs).name, c.chosen)
          << CollectiveName(c.collective) << " " << c.ranks << " ranks on " << c.nodes << " nodes, "
          << c.bytes << " bytes, levels " << levels;
    }
  }
  // Below the levels' size a Reduce with levels stays on them.
  EXPECT_EQ(SelectAlgorithm(CommutativeInputsAcrossNodes(Collective::kReduce, 64, 8, 8192,
                                                         /*levels=*/true))
                .name,
            "node_levels");
  // An Allreduce past 2 MiB by stripes where the nodes hold as many ranks each (which
  // the levels say), else Rabenseifner's.
  const Case allreduces[] = {
      {Collective::kAllreduce, 4, 2, 2 << 20, "rabenseifner"},
      {Collective::kAllreduce, 4, 2, (2 << 20) + 4, "node_stripes"},
      {Collective::kAllreduce, 128, 16, 8 << 20, "node_stripes"},
      {Collective::kAllreduce, 65536, 1024, 64 << 20, "node_stripes"},
  };
  for (const Case& c : allreduces) {
    for (const bool levels : {false, true}) {
      const SelectionInputs inputs =
          CommutativeInputsAcrossNodes(c.collective, c.ranks, c.nodes, c.bytes, levels);
      EXPECT_EQ(SelectAlgorithm(inputs).name, levels ? c.chosen : "rabenseifner")
          << c.ranks << " ranks on " << c.nodes << " nodes, " << c.bytes << " bytes, levels "
          << levels;
    }
  }
}

// Where some host runs more of the job's ranks than it has cores (an emulated cluster),
// the model's rules across nodes are left out and the choices measured on such a
// machine stay; on one node that bit is not consulted (the node engine's own is).
TEST(SelectionTest, OversubscribedHostsKeepTheMeasuredChoicesAcrossNodes) {
  struct Case {
    Collective collective;
    int ranks;
    int nodes;
    size_t bytes;
    absl::string_view cluster, oversubscribed;
  };
  const Case cases[] = {
      {Collective::kReduce, 8, 2, 32768, "rabenseifner", "two_level"},
      {Collective::kReduceScatterBlock, 64, 2, 1024, "recursive_halving", "pairwise"},
      {Collective::kAlltoall, 32, 4, 32, "bruck", "pairwise"},
      {Collective::kBcast, 8, 8, 4 << 20, "two_level_binary", "two_level"},
      {Collective::kBcast, 8, 8, 16 << 20, "chain", "two_level"},
      {Collective::kAllreduce, 8, 2, 4 << 20, "node_stripes", "rabenseifner"},
      {Collective::kGather, 4, 1, 1024, "node", "node"},
  };
  for (const Case& c : cases) {
    for (const bool hosts_oversubscribed : {false, true}) {
      // (With levels: an Allreduce's stripes need them, the other cases' rules do not
      // look at them at these sizes.)
      SelectionInputs inputs =
          CommutativeInputsAcrossNodes(c.collective, c.ranks, c.nodes, c.bytes, /*levels=*/true);
      inputs.hosts_oversubscribed = hosts_oversubscribed;
      EXPECT_EQ(SelectAlgorithm(inputs).name, hosts_oversubscribed ? c.oversubscribed : c.cluster)
          << CollectiveName(c.collective) << " " << c.ranks << " ranks on " << c.nodes
          << " nodes, hosts oversubscribed " << hosts_oversubscribed;
    }
  }
}

// The levels' groups: nodes (in the order of their lowest ranks, whatever the
// placement), else one node's NUMA domains when every rank's is known; none where no
// group holds several ranks or there is one group.
TEST(NodeLevelGroupsTest, NodesThenNumaDomains) {
  using Groups = std::vector<std::vector<int>>;
  EXPECT_EQ(NodeLevelGroups(*Topology::Uniform(2, 2)), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{1}, {0}, {1}, {0}, {2}})),
            (Groups{{0, 2}, {1, 3}, {4}}));
  EXPECT_EQ(NodeLevelGroups(*Topology::Uniform(3, 1)), Groups{});
  EXPECT_EQ(NodeLevelGroups(*Topology::Uniform(1, 4)), Groups{});  // domains unknown
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0}, {0, 0, 1}, {0, 0, 0}, {0, 0, 1}})),
            (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0}, {0, 0, 1}})), Groups{});
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0}, {0, 0, 0}})), Groups{});
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0}, {0, 0, kUnknownId}, {0, 0, 1}})),
            Groups{});
}

// On one node the first tier that splits it: packages, then NUMA domains, then L3
// groups; a tier whose ids are unknown or alike passes to the next, so a package's own
// communicator (one package) splits by its domains, and a domain's by its L3 groups.
TEST(NodeLevelGroupsTest, PackagesThenNumaDomainsThenL3Groups) {
  using Groups = std::vector<std::vector<int>>;
  // Two packages of two domains of two L3 groups, a rank in each.
  std::vector<RankLocation> machine;
  for (int r = 0; r < 8; ++r) machine.push_back({0, r / 4, r / 2, r});
  EXPECT_EQ(NodeLevelGroups(*Topology::Create(machine)), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const std::vector<RankLocation> package(machine.begin(), machine.begin() + 4);
  EXPECT_EQ(NodeLevelGroups(*Topology::Create(package)), (Groups{{0, 1}, {2, 3}}));
  const std::vector<RankLocation> domain(machine.begin(), machine.begin() + 2);
  EXPECT_EQ(NodeLevelGroups(*Topology::Create(domain)), Groups{});  // one rank an L3
  // One package and domain (unknown or alike), L3 groups in a round robin.
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, kUnknownId, kUnknownId, 0},
                                               {0, kUnknownId, kUnknownId, 1},
                                               {0, kUnknownId, kUnknownId, 0}})),
            (Groups{{0, 2}, {1}}));
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0, 3}, {0, 0, 0, 3}, {0, 0, 0, 1}})),
            (Groups{{0, 1}, {2}}));
  // An L3 group unknown: no levels at that tier.
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0, 3}, {0, 0, 0, 3}, {0, 0, 0, -1}})),
            Groups{});
  // Across nodes the nodes alone, whatever lies inside them.
  EXPECT_EQ(NodeLevelGroups(*Topology::Create({{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}})),
            (Groups{{0, 1}, {2}}));
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
