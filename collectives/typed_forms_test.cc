// The typed forms (absl::Span<T> arguments): every collective on 3 ranks with its
// datatype taken from T and its counts from the spans, results checked element by
// element; the nonblocking typed forms; and the span checks (a span shorter than the
// call needs is refused, naming it, on the rank that passed it).

#include <cstdint>
#include <functional>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;

constexpr int kRanks = 3;
constexpr int kRoot = 1;

// Rank r's vector: 100 r + i, so that every element says where it came from.
std::vector<int32_t> VectorOf(int rank, size_t count) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = 100 * rank + static_cast<int32_t>(i);
  return values;
}

TEST(TypedFormsTest, EveryCollectiveTakesItsTypeAndCountsFromTheSpans) {
  const absl::Status status = RunCommunicatorJob({.size = kRanks}, [](Communicator& comm,
                                                                      RankControl&) {
    const int rank = comm.rank();
    const std::vector<int32_t> mine = VectorOf(rank, 2);
    const ReduceOp sum(PredefinedOp::kSum);
    // Sums over the ranks of 100 r + i: 300 + 3 i.
    const std::vector<int32_t> sums = {300, 303};

    std::vector<int32_t> reduced(2, -1);
    ASSERT_OK(comm.Reduce<int32_t>(mine, absl::MakeSpan(reduced), sum, kRoot));
    EXPECT_EQ(reduced, rank == kRoot ? sums : std::vector<int32_t>(2, -1));

    std::vector<int32_t> all(2);
    ASSERT_OK(comm.Allreduce<int32_t>(mine, absl::MakeSpan(all), sum));
    EXPECT_EQ(all, sums);
    std::vector<int32_t> in_place = mine;
    ASSERT_OK(comm.Allreduce<int32_t>(absl::MakeSpan(in_place), sum));
    EXPECT_EQ(in_place, sums);

    // Blocks of 2 per rank: rank r gets block r summed, 300 + 3 (2 r + j).
    const std::vector<int32_t> blocks = VectorOf(rank, 2 * kRanks);
    std::vector<int32_t> block(2);
    ASSERT_OK(comm.ReduceScatterBlock<int32_t>(blocks, absl::MakeSpan(block), sum));
    EXPECT_THAT(block, ElementsAre(300 + 6 * rank, 303 + 6 * rank));

    // Blocks of 1, 0 and 2 elements.
    const std::vector<size_t> uneven = {1, 0, 2};
    const std::vector<int32_t> three = VectorOf(rank, 3);
    std::vector<int32_t> part(uneven[rank], -1);
    ASSERT_OK(comm.ReduceScatter<int32_t>(three, absl::MakeSpan(part), uneven, sum));
    const std::vector<std::vector<int32_t>> parts = {{300}, {}, {303, 306}};
    EXPECT_EQ(part, parts[rank]);

    // The root's send: 100 root + i for i < 6.
    const std::vector<int32_t> root_blocks = VectorOf(kRoot, 2 * kRanks);
    std::vector<int32_t> scattered(2);
    ASSERT_OK(comm.Scatter<int32_t>(
        rank == kRoot ? absl::MakeConstSpan(root_blocks) : absl::Span<const int32_t>(),
        absl::MakeSpan(scattered), kRoot));
    EXPECT_THAT(scattered, ElementsAre(100 * kRoot + 2 * rank, 100 * kRoot + 2 * rank + 1));

    // Scatterv: rank r gets uneven[r] elements from displacement 2 r (gaps between).
    const std::vector<size_t> spread = {0, 2, 4};
    std::vector<int32_t> scattered_v(uneven[rank], -1);
    ASSERT_OK(
        comm.Scatterv<int32_t>(root_blocks, uneven, spread, absl::MakeSpan(scattered_v), kRoot));
    std::vector<int32_t> expected_v(uneven[rank]);
    std::iota(expected_v.begin(), expected_v.end(), 100 * kRoot + 2 * rank);
    EXPECT_EQ(scattered_v, expected_v);

    std::vector<int32_t> broadcast = rank == kRoot ? mine : std::vector<int32_t>(2, -1);
    ASSERT_OK(comm.Bcast<int32_t>(absl::MakeSpan(broadcast), kRoot));
    EXPECT_EQ(broadcast, VectorOf(kRoot, 2));

    // Gathers: block r is rank r's vector, 100 r + i.
    std::vector<int32_t> expected_gather;
    for (int r = 0; r < kRanks; ++r) {
      const std::vector<int32_t> theirs = VectorOf(r, 2);
      expected_gather.insert(expected_gather.end(), theirs.begin(), theirs.end());
    }
    std::vector<int32_t> gathered(rank == kRoot ? 2 * kRanks : 0);
    ASSERT_OK(comm.Gather<int32_t>(mine, absl::MakeSpan(gathered), kRoot));
    if (rank == kRoot) {
      EXPECT_EQ(gathered, expected_gather);
    }
    std::vector<int32_t> everyone(2 * kRanks);
    ASSERT_OK(comm.Allgather<int32_t>(mine, absl::MakeSpan(everyone)));
    EXPECT_EQ(everyone, expected_gather);

    // The v-gathers: rank r sends uneven[r] elements, landing at 2 r.
    const std::vector<int32_t> own_part(mine.begin(), mine.begin() + uneven[rank]);
    std::vector<int32_t> expected_gather_v(6, -1);
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < uneven[r]; ++i) expected_gather_v[spread[r] + i] = 100 * r + i;
    }
    std::vector<int32_t> gathered_v(6, -1);
    ASSERT_OK(comm.Gatherv<int32_t>(own_part, absl::MakeSpan(gathered_v), uneven, spread, kRoot));
    if (rank == kRoot) {
      EXPECT_EQ(gathered_v, expected_gather_v);
    }
    std::vector<int32_t> everyone_v(6, -1);
    ASSERT_OK(comm.Allgatherv<int32_t>(own_part, absl::MakeSpan(everyone_v), uneven, spread));
    EXPECT_EQ(everyone_v, expected_gather_v);

    // Alltoall: block s of rank r (elements 2 s, 2 s + 1 of 100 r + i) lands as block r
    // of rank s.
    std::vector<int32_t> exchanged(2 * kRanks);
    ASSERT_OK(comm.Alltoall<int32_t>(blocks, absl::MakeSpan(exchanged)));
    std::vector<int32_t> expected_exchange;
    for (int r = 0; r < kRanks; ++r) {
      expected_exchange.push_back(100 * r + 2 * rank);
      expected_exchange.push_back(100 * r + 2 * rank + 1);
    }
    EXPECT_EQ(exchanged, expected_exchange);

    // Alltoallv: one element to every rank, from element s of the send; received
    // packed.
    const std::vector<size_t> ones(kRanks, 1), packed = {0, 1, 2};
    std::vector<int32_t> exchanged_v(kRanks, -1);
    ASSERT_OK(
        comm.Alltoallv<int32_t>(three, ones, packed, absl::MakeSpan(exchanged_v), ones, packed));
    EXPECT_THAT(exchanged_v, ElementsAre(rank, 100 + rank, 200 + rank));

    // Scan: the ranks up to this one; Exscan: those before it (rank 0 untouched).
    std::vector<int32_t> scanned(2);
    ASSERT_OK(comm.Scan<int32_t>(mine, absl::MakeSpan(scanned), sum));
    const int32_t below = 100 * rank * (rank + 1) / 2;
    EXPECT_THAT(scanned, ElementsAre(below, below + rank + 1));
    std::vector<int32_t> exscanned(2, -1);
    ASSERT_OK(comm.Exscan<int32_t>(mine, absl::MakeSpan(exscanned), sum));
    const int32_t before = 100 * (rank - 1) * rank / 2;
    EXPECT_THAT(exscanned, rank == 0 ? ElementsAre(-1, -1) : ElementsAre(before, before + rank));
  });
  EXPECT_TRUE(status.ok()) << status;
}

TEST(TypedFormsTest, NonblockingFormsComplete) {
  const absl::Status status =
      RunCommunicatorJob({.size = kRanks}, [](Communicator& comm, RankControl&) {
        const std::vector<double> mine(5, comm.rank() + 1.0);
        std::vector<double> sums(5), gathered(5 * kRanks);
        absl::StatusOr<Request> allreduce =
            comm.IAllreduce<double>(mine, absl::MakeSpan(sums), PredefinedOp::kSum);
        absl::StatusOr<Request> allgather = comm.IAllgather<double>(mine, absl::MakeSpan(gathered));
        ASSERT_OK(allreduce);
        ASSERT_OK(allgather);
        ASSERT_OK(allgather->Wait());
        ASSERT_OK(allreduce->Wait());
        EXPECT_THAT(sums, ElementsAreArray(std::vector<double>(5, 6.0)));
        for (int r = 0; r < kRanks; ++r) EXPECT_EQ(gathered[5 * r + 4], r + 1.0);
      });
  EXPECT_TRUE(status.ok()) << status;
}

// Rank 0 passes a span too short for its call (or one whose blocks do not split);
// the others make the matching call with good spans. Rank 0 gets InvalidArgument
// naming the span; the others are released with the same cause. Where the others need
// nothing of rank 0 (a Reduce's or Gatherv's leaves with rank 0 the root), a leaf may
// have finished its part before rank 0 refused (the node engine's leaves return once
// they have published, as MPI lets them): it returns OK, and its next call Aborted
// with the cause.
struct ShortSpan {
  const char* name;
  std::function<absl::Status(Communicator&, bool bad)> call;
  const char* expected;
  bool peers_need_nothing_of_rank_0 = false;
  friend void PrintTo(const ShortSpan& short_span, std::ostream* out) { *out << short_span.name; }
};

std::vector<ShortSpan> ShortSpans() {
  static float in[16] = {};
  static float out[16];
  const ReduceOp sum(PredefinedOp::kSum);
  return {
      {"allreduce_recv",
       [sum](Communicator& comm, bool bad) {
         return comm.Allreduce<float>(absl::MakeConstSpan(in, 4), absl::MakeSpan(out, bad ? 3 : 4),
                                      sum);
       },
       "Allreduce: `recv` holds 3 elements; this call needs 4"},
      {"reduce_recv_at_root",
       [sum](Communicator& comm, bool bad) {
         return comm.Reduce<float>(absl::MakeConstSpan(in, 4), absl::MakeSpan(out, bad ? 0 : 4),
                                   sum, 0);
       },
       "Reduce: `recv` holds 0 elements; this call needs 4", /*peers_need_nothing_of_rank_0=*/true},
      {"reduce_scatter_block_send",
       [sum](Communicator& comm, bool bad) {
         return comm.ReduceScatterBlock<float>(absl::MakeConstSpan(in, bad ? 5 : 6),
                                               absl::MakeSpan(out, 2), sum);
       },
       "ReduceScatterBlock: `send` holds 5 elements; this call needs 6"},
      {"reduce_scatter_recv",
       [sum](Communicator& comm, bool bad) {
         const std::vector<size_t> counts = {2, 1, 1};
         return comm.ReduceScatter<float>(absl::MakeConstSpan(in, 4),
                                          absl::MakeSpan(out, bad ? 1 : counts[comm.rank()]),
                                          counts, sum);
       },
       "ReduceScatter: `recv` holds 1 elements; this call needs 2"},
      {"scatter_send_at_root",
       [](Communicator& comm, bool bad) {
         return comm.Scatter<float>(absl::MakeConstSpan(in, bad ? 2 : 3), absl::MakeSpan(out, 1),
                                    0);
       },
       "Scatter: `send` holds 2 elements; this call needs 3"},
      {"gatherv_recv_at_root",
       [](Communicator& comm, bool bad) {
         const std::vector<size_t> counts = {1, 1, 1}, displs = {0, 4, 8};
         return comm.Gatherv<float>(absl::MakeConstSpan(in, 1), absl::MakeSpan(out, bad ? 8 : 9),
                                    counts, displs, 0);
       },
       "Gatherv: `recv` holds 8 elements; this call needs 9",
       /*peers_need_nothing_of_rank_0=*/true},
      {"allgather_recv",
       [](Communicator& comm, bool bad) {
         return comm.Allgather<float>(absl::MakeConstSpan(in, 2), absl::MakeSpan(out, bad ? 5 : 6));
       },
       "Allgather: `recv` holds 5 elements; this call needs 6"},
      {"alltoall_uneven_send",
       [](Communicator& comm, bool bad) {
         return comm.Alltoall<float>(absl::MakeConstSpan(in, bad ? 7 : 6), absl::MakeSpan(out, 8));
       },
       "Alltoall: `send` holds 7 elements, which do not split into 3 equal blocks"},
      {"alltoallv_counts_beyond_any_span",
       [](Communicator& comm, bool bad) {
         const std::vector<size_t> huge = {1, SIZE_MAX, 1}, ones = {1, 1, 1}, displs = {0, 1, 2};
         return comm.Alltoallv<float>(absl::MakeConstSpan(in, 3), bad ? huge : ones, displs,
                                      absl::MakeSpan(out, 3), ones, displs);
       },
       "Alltoallv: the counts need more elements in `send` than any span holds"},
  };
}

class ShortSpanTest : public ::testing::TestWithParam<ShortSpan> {};

TEST_P(ShortSpanTest, IsRefusedOnItsRankAndReleasesThePeers) {
  const ShortSpan& short_span = GetParam();
  const absl::Status status = RunCommunicatorJob(
      {.size = kRanks, .communicator_timeout = absl::Seconds(30)},
      [&](Communicator& comm, RankControl&) {
        const absl::Time start = absl::Now();
        absl::Status result = short_span.call(comm, comm.rank() == 0);
        if (comm.rank() != 0 && short_span.peers_need_nothing_of_rank_0 && result.ok()) {
          // (Finished before rank 0 refused: the failure reaches its next call.)
          result = comm.Barrier();
        }
        EXPECT_EQ(result.code(), comm.rank() == 0 ? absl::StatusCode::kInvalidArgument
                                                  : absl::StatusCode::kAborted)
            << result;
        EXPECT_THAT(result.message(), HasSubstr(absl::StrCat("rank 0: ", short_span.expected)));
        EXPECT_LT(absl::Now() - start, absl::Seconds(10));
      });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(TypedForms, ShortSpanTest, ::testing::ValuesIn(ShortSpans()),
                         [](const ::testing::TestParamInfo<ShortSpan>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace zcoll
