// The collectives' failure paths: refused arguments (each named, on the rank that
// passed them, and the peers released at once), counts that disagree across ranks,
// a rank killed mid-collective, the limit on collectives in flight, unknown
// algorithms; and nonblocking collectives that overlap.

#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/algorithms.h"
#include "collectives/communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/reduce.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;

// Rank 0 makes `bad` call; rank 1 makes the matching valid one. Rank 0 must get
// InvalidArgument naming itself and `expected`; rank 1 must be released with
// Aborted (the job failed with rank 0's cause) long before its timeout.
struct Refusal {
  const char* name;
  std::function<absl::Status(Communicator&)> bad;
  std::function<absl::Status(Communicator&)> valid;
  const char* expected;
  // Rank 1 needs nothing of rank 0 in its valid call (a Reduce's or Gather's leaf, a
  // Scatter's root, up to 1 KiB: NodeExecution::ChooseReads), so it may leave the call
  // before the refusal reaches it, and learn at its next call.
  bool eager_valid = false;
};

std::vector<Refusal> Refusals() {
  static float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static float out[8];
  static float out1[8];
  const std::vector<size_t> two = {1, 1};
  const std::vector<size_t> packed = {0, 1};  // displacements of two blocks of one
  auto valid_reduce = [](Communicator& comm) {
    return comm.Reduce(in, out1, 4, DataType::kFloat, PredefinedOp::kSum, 0);
  };
  auto valid_allreduce = [](Communicator& comm) {
    return comm.Allreduce(in, out1, 4, DataType::kFloat, PredefinedOp::kSum);
  };
  auto valid_scatter_from_1 = [](Communicator& comm) {
    return comm.Scatter(in, out1, 2, DataType::kFloat, 1);
  };
  return {
      {"bad_root",
       [](Communicator& comm) {
         return comm.Reduce(in, out, 4, DataType::kFloat, PredefinedOp::kSum, 5);
       },
       valid_reduce, "root 5 is not a rank of this 2-rank communicator", true},
      {"null_send",
       [](Communicator& comm) {
         return comm.Reduce(nullptr, out, 4, DataType::kFloat, PredefinedOp::kSum, 0);
       },
       valid_reduce, "`send` is null but holds 4 elements", true},
      {"op_not_for_type",
       [](Communicator& comm) {
         return comm.Allreduce(in, out, 4, DataType::kFloat, PredefinedOp::kBand);
       },
       valid_allreduce, "float"},
      {"bad_type",
       [](Communicator& comm) {
         return comm.Allreduce(in, out, 4, static_cast<DataType>(200), PredefinedOp::kSum);
       },
       valid_allreduce, "type 200 is not a zcoll DataType"},
      {"in_place_at_a_non_root",
       [](Communicator& comm) {
         return comm.Reduce(kInPlace, out, 4, DataType::kFloat, PredefinedOp::kSum, 1);
       },
       [](Communicator& comm) {
         return comm.Reduce(in, out1, 4, DataType::kFloat, PredefinedOp::kSum, 1);
       },
       "only the root may reduce in place"},
      {"overlapping_buffers",
       [](Communicator& comm) {
         return comm.Allreduce(in, in + 1, 4, DataType::kFloat, PredefinedOp::kSum);
       },
       valid_allreduce, "overlap; pass kInPlace"},
      {"scatter_in_place_send",
       [](Communicator& comm) { return comm.Scatter(kInPlace, out, 2, DataType::kFloat, 0); },
       [](Communicator& comm) { return comm.Scatter(nullptr, out1, 2, DataType::kFloat, 0); },
       "kInPlace is not allowed as `send`"},
      {"scatter_in_place_recv_at_a_non_root",
       [](Communicator& comm) { return comm.Scatter(nullptr, kInPlace, 2, DataType::kFloat, 1); },
       valid_scatter_from_1, "only the root may scatter in place", true},
      {"scatterv_counts_of_the_wrong_length",
       [two](Communicator& comm) {
         const std::vector<size_t> one = {1};
         return comm.Scatterv(in, one, two, out, 1, DataType::kFloat, 0);
       },
       [](Communicator& comm) {
         return comm.Scatterv(nullptr, {}, {}, out1, 1, DataType::kFloat, 0);
       },
       "send_counts and displs need 2 counts and displacements each; got 1 and 2"},
      {"scatterv_root_count_differs",
       [two](Communicator& comm) {
         return comm.Scatterv(in, two, two, out, 3, DataType::kFloat, 0);
       },
       [](Communicator& comm) {
         return comm.Scatterv(nullptr, {}, {}, out1, 1, DataType::kFloat, 0);
       },
       "send_counts[0] = 1 elements but recv_count is 3"},
      {"reduce_scatter_counts_of_the_wrong_length",
       [](Communicator& comm) {
         const std::vector<size_t> three = {1, 1, 1};
         return comm.ReduceScatter(in, out, three, DataType::kFloat, PredefinedOp::kSum);
       },
       [two](Communicator& comm) {
         return comm.ReduceScatter(in, out1, two, DataType::kFloat, PredefinedOp::kSum);
       },
       "recv_counts has 3 entries for 2 ranks"},
      {"reduce_scatter_counts_whose_sum_overflows",
       [](Communicator& comm) {
         const std::vector<size_t> halves = {SIZE_MAX / 2, SIZE_MAX / 2};
         return comm.ReduceScatter(in, out, halves, DataType::kFloat, PredefinedOp::kSum);
       },
       [two](Communicator& comm) {
         return comm.ReduceScatter(in, out1, two, DataType::kFloat, PredefinedOp::kSum);
       },
       "the sum of recv_counts overflows"},
      {"reduce_scatter_block_overflow",
       [](Communicator& comm) {
         return comm.ReduceScatterBlock(in, out, SIZE_MAX / 2, DataType::kFloat,
                                        PredefinedOp::kSum);
       },
       [](Communicator& comm) {
         return comm.ReduceScatterBlock(in, out1, 1, DataType::kFloat, PredefinedOp::kSum);
       },
       "too large"},
      {"bcast_null_buffer",
       [](Communicator& comm) { return comm.Bcast(nullptr, 4, DataType::kFloat, 0); },
       [](Communicator& comm) { return comm.Bcast(out1, 4, DataType::kFloat, 0); },
       "`buffer` is null but holds 4 elements"},
      {"gather_in_place_at_a_non_root",
       [](Communicator& comm) { return comm.Gather(kInPlace, out, 2, DataType::kFloat, 1); },
       [](Communicator& comm) { return comm.Gather(in, out1, 2, DataType::kFloat, 1); },
       "only the root may gather in place"},
      {"gatherv_root_count_differs",
       [two](Communicator& comm) {
         return comm.Gatherv(in, 3, out, two, two, DataType::kFloat, 0);
       },
       [](Communicator& comm) { return comm.Gatherv(in, 1, nullptr, {}, {}, DataType::kFloat, 0); },
       "recv_counts[0] = 1 elements from itself but send_count is 3", true},
      {"gatherv_count_too_large",
       [packed](Communicator& comm) {
         const std::vector<size_t> huge = {SIZE_MAX / 2, 1};
         return comm.Gatherv(in, 1, out, huge, packed, DataType::kFloat, 0);
       },
       [](Communicator& comm) { return comm.Gatherv(in, 1, nullptr, {}, {}, DataType::kFloat, 0); },
       "recv_counts and displs: count or displacement 0 is too large", true},
      {"allgather_total_too_large",
       [](Communicator& comm) { return comm.Allgather(in, out, SIZE_MAX / 8, DataType::kFloat); },
       [](Communicator& comm) { return comm.Allgather(in, out1, 1, DataType::kFloat); },
       "count times the communicator size 4611686018427387902 is too large for any buffer "
       "of float"},
      {"scatterv_extent_too_large",
       [](Communicator& comm) {
         const std::vector<size_t> ones = {1, 1}, far = {0, SIZE_MAX / 4 - 1};
         return comm.Scatterv(in, ones, far, out, 1, DataType::kFloat, 0);
       },
       [](Communicator& comm) {
         return comm.Scatterv(nullptr, {}, {}, out1, 1, DataType::kFloat, 0);
       },
       "the extent of send_counts and displs 4611686018427387903 is too large for any "
       "buffer of float"},
      {"allgather_in_place_recv",
       [](Communicator& comm) { return comm.Allgather(in, kInPlace, 2, DataType::kFloat); },
       [](Communicator& comm) { return comm.Allgather(in, out1, 2, DataType::kFloat); },
       "kInPlace is not allowed as `recv`"},
      {"allgatherv_send_count_differs",
       [two, packed](Communicator& comm) {
         return comm.Allgatherv(in, 2, out, two, packed, DataType::kFloat);
       },
       [two, packed](Communicator& comm) {
         return comm.Allgatherv(in + 4, 1, out1, two, packed, DataType::kFloat);
       },
       "recv_counts[0] = 1 but this rank sends send_count = 2 elements"},
      {"alltoallv_counts_of_the_wrong_length",
       [two, packed](Communicator& comm) {
         const std::vector<size_t> three = {1, 1, 1};
         return comm.Alltoallv(in, three, three, out, two, packed, DataType::kFloat);
       },
       [two, packed](Communicator& comm) {
         return comm.Alltoallv(in, two, packed, out1, two, packed, DataType::kFloat);
       },
       "send_counts and send_displs need 2 counts and displacements each; got 3 and 3"},
      {"scan_op_not_for_type",
       [](Communicator& comm) {
         return comm.Scan(in, out, 4, DataType::kFloat, PredefinedOp::kBor);
       },
       [](Communicator& comm) {
         return comm.Scan(in, out1, 4, DataType::kFloat, PredefinedOp::kSum);
       },
       "float"},
  };
}

class RefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusalTest, NamesTheArgumentAndReleasesThePeers) {
  const Refusal& refusal = GetParam();
  const absl::Status status = RunCommunicatorJob(
      {.size = 2, .communicator_timeout = absl::Seconds(30)},
      [&](Communicator& comm, RankControl&) {
        const absl::Time start = absl::Now();
        const absl::Status result = comm.rank() == 0 ? refusal.bad(comm) : refusal.valid(comm);
        if (comm.rank() == 0) {
          EXPECT_EQ(result.code(), absl::StatusCode::kInvalidArgument) << result;
          EXPECT_THAT(result.message(), HasSubstr("rank 0: "));
          EXPECT_THAT(result.message(), HasSubstr(refusal.expected));
        } else if (result.ok()) {
          // Only a rank that needs nothing of the others may have left the call before
          // the refusal reached it; it learns at its next call (below).
          EXPECT_TRUE(refusal.eager_valid)
              << "rank 1's valid call succeeded though rank 0 refused its own";
        } else {
          EXPECT_EQ(result.code(), absl::StatusCode::kAborted) << result;
          EXPECT_THAT(result.message(), HasSubstr(refusal.expected));
          EXPECT_LT(absl::Now() - start, absl::Seconds(10));
        }
        // The job has failed: later collectives say so at once, on both ranks.
        const absl::Status later =
            comm.Allreduce(nullptr, nullptr, 0, DataType::kFloat, PredefinedOp::kSum);
        EXPECT_EQ(later.code(), absl::StatusCode::kAborted) << later;
        EXPECT_THAT(later.message(), HasSubstr(refusal.expected));
      });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Collectives, RefusalTest, ::testing::ValuesIn(Refusals()),
                         [](const ::testing::TestParamInfo<Refusal>& info) {
                           return std::string(info.param.name);
                         });

// Counts that disagree (no ZCOLL_CHECK): every rank ends with an error, none hangs,
// and the error says what happened.
TEST(MismatchTest, CountsThatDisagreeEndTheCollectiveOnEveryRank) {
  std::vector<std::string> messages(3);
  const absl::Status status = RunCommunicatorJob(
      {.size = 3, .communicator_timeout = absl::Seconds(30)},
      [&](Communicator& comm, RankControl&) {
        std::vector<float> send(8, 1.0f), recv(8);
        const size_t count = comm.rank() == 2 ? 8 : 4;
        const absl::Time start = absl::Now();
        const absl::Status result =
            comm.Allreduce(send.data(), recv.data(), count, DataType::kFloat, PredefinedOp::kSum);
        EXPECT_FALSE(result.ok());
        EXPECT_LT(absl::Now() - start, absl::Seconds(10));
        messages[comm.rank()] = std::string(result.message());
      });
  EXPECT_TRUE(status.ok()) << status;
  const std::string all = absl::StrCat(messages[0], "\n", messages[1], "\n", messages[2]);
  EXPECT_THAT(all, AnyOf(HasSubstr("were expected; the ranks passed different counts"),
                         HasSubstr("does not fit"), HasSubstr("disagree on the arguments")))
      << all;
}

// Issue 16: ranks that disagree where message lengths do not show it. Every message
// carries a check word of the call's arguments (executor.h), so the first message a
// rank receives from a rank with other arguments ends the call there, at once, and
// fails the job: no rank waits for its deadline, and every rank's next call returns
// the cause. (A rank that only sends in the call, a Bcast's or a Reduce's leaf, cannot
// learn it before it returns: its next call does.) Over shared memory between
// processes, and over TCP between nodes.
struct Disagreement {
  const char* name;
  std::function<absl::Status(Communicator&)> call;
  bool every_rank_fails_in_the_call;
};

std::vector<Disagreement> Disagreements() {
  return {
      // 2^19 floats on one rank, 2^20 on the others: chunks of 256 KiB alike, so the
      // first chunks matched in length; that rank returned OK in 30 ms, the others
      // failed at the deadline.
      {"counts_whose_chunks_match",
       [](Communicator& comm) {
         const size_t count = comm.rank() == 1 ? size_t{1} << 19 : size_t{1} << 20;
         std::vector<float> in(count, 1.0f), out(count);
         return comm.Allreduce(in.data(), out.data(), count, DataType::kFloat, PredefinedOp::kSum);
       },
       true},
      {"ops",
       [](Communicator& comm) {
         std::vector<float> in(64, 1.0f), out(64);
         return comm.Allreduce(in.data(), out.data(), 64, DataType::kFloat,
                               comm.rank() == 2 ? PredefinedOp::kMax : PredefinedOp::kSum);
       },
       true},
      {"types_of_one_size",
       [](Communicator& comm) {
         std::vector<int32_t> in(64, 1), out(64);
         return comm.Allreduce(in.data(), out.data(), 64,
                               comm.rank() == 0 ? DataType::kFloat : DataType::kInt32,
                               PredefinedOp::kSum);
       },
       true},
      // (By messages, and the Barriers after it too: on a node whose ranks outnumber its
      // cores the node engine's Bcast of 4000 B leaves its roots eager and its leaves
      // reading the root they name, and the disagreement is found two node calls later
      // (QuickNodeCallTest); a node call looks at no message, so the stray one this
      // leaves is found by the next call that receives messages.)
      {"bcast_roots",
       [](Communicator& comm) {
         for (const auto& [collective, algorithm] : {std::pair{Collective::kBcast, "binomial"},
                                                     std::pair{Collective::kBarrier, "linear"}}) {
           if (absl::Status forced = comm.SetAlgorithm(collective, algorithm); !forced.ok()) {
             return forced;
           }
         }
         std::vector<int32_t> buffer(1000, comm.rank());
         return comm.Bcast(buffer.data(), buffer.size(), DataType::kInt32,
                           comm.rank() == 3 ? 3 : 0);
       },
       false},
      {"reduce_roots",
       [](Communicator& comm) {
         std::vector<int64_t> in(100, 1), out(100);
         return comm.Reduce(in.data(), out.data(), in.size(), DataType::kInt64, PredefinedOp::kSum,
                            comm.rank() == 1 ? 1 : 2);
       },
       false},
  };
}

class DisagreementTest : public ::testing::TestWithParam<Disagreement> {};

TEST_P(DisagreementTest, EndsTheCallAtTheFirstMessageAndFailsTheJob) {
  const Disagreement& disagreement = GetParam();
  for (const CommunicatorJob& job :
       {CommunicatorJob{
            .local_provider = "shm", .size = 4, .communicator_timeout = absl::Seconds(30)},
        CommunicatorJob{.local_provider = "shm",
        .network_provider = "ucx:tcp",
        .size = 4,
        .nodes = 4,
        .communicator_timeout = absl::Seconds(30)}}) {
    const absl::Status status = RunCommunicatorJob(job, [&](Communicator& comm, RankControl&) {
      const absl::Time start = absl::Now();
      const absl::Status result = disagreement.call(comm);
      if (disagreement.every_rank_fails_in_the_call) {
        EXPECT_FALSE(result.ok()) << "rank " << comm.rank() << " returned OK";
        EXPECT_THAT(std::string(result.message()), HasSubstr("disagree on the arguments"));
      }
      // The job has failed: the next call says why, whatever this one returned. Where
      // no message showed the disagreement at once (different roots), the rank that
      // holds the stray message finds it at the latest as its next call completes
      // (the stray came before that call's messages from the same rank), and ranks
      // that finished that call before it did fail in the one after.
      absl::Status next = comm.Barrier();
      if (!disagreement.every_rank_fails_in_the_call && next.ok()) next = comm.Barrier();
      EXPECT_FALSE(next.ok());
      EXPECT_THAT(std::string(next.message()), HasSubstr("disagree on the arguments"));
      EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "rank " << comm.rank() << " waited";
    });
    EXPECT_TRUE(status.ok()) << job.Name() << ": " << status;
  }
}

INSTANTIATE_TEST_SUITE_P(Arguments, DisagreementTest, ::testing::ValuesIn(Disagreements()),
                         [](const ::testing::TestParamInfo<Disagreement>& info) {
                           return std::string(info.param.name);
                         });

// A rank killed in the middle of a run of collectives: the others return an error
// within seconds, over shared memory and over TCP between nodes (libfabric's and
// UCX's).
TEST(DeathTest, AKilledRankEndsTheCollectiveOnTheOthers) {
  for (const CommunicatorJob& job :
       {CommunicatorJob{
            .local_provider = "shm", .size = 3, .communicator_timeout = absl::Seconds(60)},
        CommunicatorJob{.local_provider = "shm",
        .network_provider = "ofi:tcp",
        .size = 4,
        .nodes = 2,
        .communicator_timeout = absl::Seconds(60)},
        CommunicatorJob{.local_provider = "shm",
        .network_provider = "ucx:tcp",
        .size = 4,
        .nodes = 2,
        .communicator_timeout = absl::Seconds(60)}}) {
    const absl::Status status = RunCommunicatorJob(job, [](Communicator& comm,
                                                           RankControl& control) {
      std::vector<float> send(1 << 18, 1.0f), recv(1 << 18);
      absl::Status result;
      absl::Time failed_at = absl::InfiniteFuture(), died_at = absl::InfiniteFuture();
      for (int i = 0; i < 200 && result.ok(); ++i) {
        if (comm.rank() == comm.size() - 1 && i == 5) control.Die();
        if (i == 5) died_at = absl::Now();
        result = comm.Allreduce(send.data(), recv.data(), send.size(), DataType::kFloat,
                                PredefinedOp::kSum);
        if (!result.ok()) failed_at = absl::Now();
      }
      EXPECT_THAT(result.code(), AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kAborted))
          << result;
      EXPECT_LT(failed_at - died_at, absl::Seconds(20));
    });
    EXPECT_TRUE(status.ok()) << job.Name() << ": " << status;
  }
}

// The same on an Allreduce by stripes (node_levels.h): a rank dies in the stripes'
// calls across the network or its node's calls on the engine, wherever its peers are;
// 3 MiB, three segments at the default chunk, so that both lanes have calls in flight.
TEST(DeathTest, AKilledRankEndsAnAllreduceByStripesOnTheOthers) {
  const CommunicatorJob job{.local_provider = "shm",
                            .network_provider = "ofi:tcp",
                            .size = 4,
                            .nodes = 2,
                            .communicator_timeout = absl::Seconds(60)};
  const absl::Status status = RunCommunicatorJob(job, [](Communicator& comm, RankControl& control) {
    ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "node_stripes"));
    constexpr size_t kCount = 3 << 18;
    ASSERT_EQ(StripeSegments(kCount, sizeof(float), 2, kDefaultChunkBytes), 3u);
    std::vector<float> send(kCount, 1.0f), recv(kCount);
    absl::Status result;
    absl::Time failed_at = absl::InfiniteFuture(), died_at = absl::InfiniteFuture();
    for (int i = 0; i < 200 && result.ok(); ++i) {
      if (comm.rank() == 1 && i == 5) control.Die();
      if (i == 5) died_at = absl::Now();
      result = comm.Allreduce(send.data(), recv.data(), send.size(), DataType::kFloat,
                              PredefinedOp::kSum);
      if (result.ok()) {
        ASSERT_EQ(recv.front(), static_cast<float>(comm.size()));
        ASSERT_EQ(recv.back(), static_cast<float>(comm.size()));
      } else {
        failed_at = absl::Now();
      }
    }
    EXPECT_THAT(result.code(), AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kAborted))
        << result;
    EXPECT_LT(failed_at - died_at, absl::Seconds(20));
  });
  EXPECT_TRUE(status.ok()) << job.Name() << ": " << status;
}

// Nonblocking collectives of different kinds in flight together, completed out of
// order, with Test polling one of them.
TEST(NonblockingTest, OverlappingCollectivesAllComplete) {
  const absl::Status status = RunCommunicatorJob({.size = 4}, [](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    std::vector<float> a(1000, static_cast<float>(rank)), a_out(1000);
    std::vector<int32_t> b(77, rank + 1), b_out(77);
    std::vector<double> c(4 * 300, 1.0), c_out(300);
    std::vector<float> d(4 * 5), d_out(5);
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(i);
    absl::StatusOr<Request> ra =
        comm.IAllreduce(a.data(), a_out.data(), a.size(), DataType::kFloat, PredefinedOp::kSum);
    absl::StatusOr<Request> rb =
        comm.IReduce(b.data(), b_out.data(), b.size(), DataType::kInt32, PredefinedOp::kProd, 3);
    absl::StatusOr<Request> rc = comm.IReduceScatterBlock(c.data(), c_out.data(), 300,
                                                          DataType::kDouble, PredefinedOp::kMax);
    absl::StatusOr<Request> rd = comm.IScatter(d.data(), d_out.data(), 5, DataType::kFloat, 1);
    ASSERT_OK(ra);
    ASSERT_OK(rb);
    ASSERT_OK(rc);
    ASSERT_OK(rd);
    // Polled with a yield between tests: on the node engine the newest call completes
    // only after the older ones (a rank says it has read its calls in order), which
    // need the other ranks' threads to run.
    bool done = false;
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (!done && absl::Now() < give_up) {
      absl::StatusOr<bool> tested = rd->Test();
      ASSERT_TRUE(tested.ok()) << tested.status();
      done = *tested;
      std::this_thread::yield();
    }
    ASSERT_TRUE(done);
    EXPECT_OK(rd->Wait());  // done: returns at once
    ASSERT_OK(rc->Wait());
    ASSERT_OK(rb->Wait());
    ASSERT_OK(ra->Wait());
    EXPECT_EQ(a_out, std::vector<float>(1000, static_cast<float>(size * (size - 1) / 2)));
    if (rank == 3) {
      EXPECT_EQ(b_out, std::vector<int32_t>(77, 24));  // 1*2*3*4
    }
    EXPECT_EQ(c_out, std::vector<double>(300, 1.0));
    for (int i = 0; i < 5; ++i) EXPECT_EQ(d_out[i], static_cast<float>(5 * rank + i));
  });
  EXPECT_TRUE(status.ok()) << status;
}

// More nonblocking collectives in flight than their sequence numbers can tell apart
// is refused, not mismatched.
// Node calls in flight together, waited for newest first: a call two after another
// reuses its buffers only once every rank has read that one, so waiting for the newest
// must advance the older ones too.
TEST(NonblockingTest, NodeCallsWaitedForNewestFirstComplete) {
  const absl::Status status = RunCommunicatorJob(
      {.local_provider = "shm", .size = 3, .communicator_timeout = absl::Seconds(10)},
      [](Communicator& comm, RankControl&) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "node"));
        constexpr int kCalls = 6;
        std::vector<std::vector<int32_t>> in(kCalls), out(kCalls);
        std::vector<Request> requests;
        for (int i = 0; i < kCalls; ++i) {
          in[i].assign(8, comm.rank() + i);
          out[i].assign(8, -1);
          absl::StatusOr<Request> request =
              comm.IAllreduce(in[i].data(), out[i].data(), 8, DataType::kInt32, PredefinedOp::kSum);
          ASSERT_TRUE(request.ok()) << request.status();
          requests.push_back(std::move(*request));
        }
        for (int i = kCalls - 1; i >= 0; --i) {
          const absl::Status waited = requests[i].Wait();
          ASSERT_TRUE(waited.ok()) << "call " << i << ": " << waited;
        }
        for (int i = 0; i < kCalls; ++i) {
          EXPECT_EQ(out[i], std::vector<int32_t>(8, 0 + 1 + 2 + 3 * i)) << "call " << i;
        }
      });
  EXPECT_TRUE(status.ok()) << status;
}

TEST(NonblockingTest, TooManyInFlightIsResourceExhausted) {
  const absl::Status status = RunCommunicatorJob({.size = 1}, [](Communicator& comm, RankControl&) {
    std::vector<float> in(1, 1.0f), out(1);
    std::vector<Request> requests;
    absl::Status refused;
    for (int i = 0; i < 5000 && refused.ok(); ++i) {
      absl::StatusOr<Request> request =
          comm.IAllreduce(in.data(), out.data(), 1, DataType::kFloat, PredefinedOp::kSum);
      if (request.ok()) {
        requests.push_back(std::move(*request));
      } else {
        refused = request.status();
      }
    }
    EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
    EXPECT_THAT(refused.message(), HasSubstr("nonblocking collectives are in flight"));
    EXPECT_GT(requests.size(), 4000u);
    EXPECT_OK(requests.front().Wait());
  });
  EXPECT_TRUE(status.ok()) << status;
}

TEST(AlgorithmChoiceTest, UnknownNamesAreRefusedAndKnownOnesRun) {
  const absl::Status status = RunCommunicatorJob({.size = 3}, [](Communicator& comm, RankControl&) {
    const absl::Status unknown = comm.SetAlgorithm(Collective::kAllreduce, "ring");
    EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(unknown.message(), HasSubstr("recursive_doubling"));
    ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "rabenseifner"));
    std::vector<int64_t> in(10, comm.rank()), out(10);
    ASSERT_OK(comm.Allreduce(in.data(), out.data(), 10, DataType::kInt64, PredefinedOp::kSum));
    EXPECT_EQ(out, std::vector<int64_t>(10, 3));
  });
  EXPECT_TRUE(status.ok()) << status;
}

// An algorithm that needs a commutative op, forced with one that is not, is refused on
// every rank: InvalidArgument naming the algorithm, or Aborted quoting the rank that
// refused first (a refusal fails the job). Left to the table, the same call takes an
// algorithm for any op.
TEST(AlgorithmChoiceTest, AnAlgorithmForCommutativeOpsRefusesOthersOnEveryRank) {
  const ReduceOp first_wins = *ReduceOp::CreateUser(
      [](const void* in, void* inout, size_t count, DataType) {
        std::memcpy(inout, in, count * sizeof(int32_t));  // a op b = a: not commutative
      },
      /*commutative=*/false, "first_wins");
  const absl::Status table = RunCommunicatorJob({.size = 4}, [&](Communicator& comm, RankControl&) {
    std::vector<int32_t> in(4, comm.rank()), out(1, -1);
    ASSERT_OK(comm.ReduceScatterBlock(in.data(), out.data(), 1, DataType::kInt32, first_wins));
    EXPECT_EQ(out[0], 0);  // rank 0's, in canonical order
  });
  EXPECT_TRUE(table.ok()) << table;
  const absl::Status forced =
      RunCommunicatorJob({.size = 4}, [&](Communicator& comm, RankControl&) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kReduceScatterBlock, "recursive_halving"));
        std::vector<int32_t> in(4, comm.rank()), out(1, -1);
        const absl::Status refused =
            comm.ReduceScatterBlock(in.data(), out.data(), 1, DataType::kInt32, first_wins);
        EXPECT_TRUE(absl::IsInvalidArgument(refused) || absl::IsAborted(refused)) << refused;
        EXPECT_THAT(refused.message(), HasSubstr("'recursive_halving' needs a commutative op"));
        EXPECT_THAT(refused.message(), HasSubstr(absl::StrCat("rank ", comm.rank())));
      });
  EXPECT_TRUE(forced.ok()) << forced;
}

// A user op that throws (its contract says it should not): the rank whose op threw
// gets Unknown naming the op and the exception's text, and the job fails with it, so
// the other ranks return Aborted at once instead of at the deadline. Nothing escapes
// Allreduce as an exception. (Ranks are threads here: `throws_here` is per rank.)
thread_local bool throws_here = false;

// int32 sum that throws where `throws_here`.
ReduceOp Thrower() {
  return *ReduceOp::CreateUser(
      [](const void* in, void* inout, size_t count, DataType) {
        if (throws_here) throw std::runtime_error("boom in the user op");
        for (size_t i = 0; i < count; ++i) {
          static_cast<int32_t*>(inout)[i] += static_cast<const int32_t*>(in)[i];
        }
      },
      /*commutative=*/true, "thrower");
}

TEST(UserOpTest, AThrowingUserOpFailsTheCallAndReleasesThePeers) {
  const ReduceOp thrower = Thrower();
  const absl::Status status = RunCommunicatorJob(
      {.size = 3, .communicator_timeout = absl::Seconds(30)},
      [&](Communicator& comm, RankControl&) {
        // Every rank reduces something in a 3-rank recursive doubling; one throws.
        ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "recursive_doubling"));
        throws_here = comm.rank() == 1;
        std::vector<int32_t> in(16, comm.rank()), out(16);
        const absl::Time start = absl::Now();
        absl::Status result;
        try {
          result = comm.Allreduce(in.data(), out.data(), in.size(), DataType::kInt32, thrower);
        } catch (...) {
          ADD_FAILURE() << "rank " << comm.rank() << ": an exception escaped Allreduce";
          return;
        }
        EXPECT_FALSE(result.ok());
        EXPECT_THAT(result.message(), HasSubstr("the user op 'thrower' threw an exception: boom"));
        if (comm.rank() == 1) {
          EXPECT_EQ(result.code(), absl::StatusCode::kUnknown) << result;
        }
        EXPECT_LT(absl::Now() - start, absl::Seconds(10));
      });
  EXPECT_TRUE(status.ok()) << status;
  // MPI_Reduce_local too.
  throws_here = true;
  int32_t left[2] = {1, 2}, right[2] = {3, 4};
  const absl::Status local = ReduceLocal(thrower, DataType::kInt32, left, right, 2);
  throws_here = false;
  EXPECT_EQ(local.code(), absl::StatusCode::kUnknown) << local;
  EXPECT_THAT(local.message(), HasSubstr("'thrower' threw an exception: boom"));
}

// On the node engine every rank reduces the published contributions itself: the rank
// whose op throws gets Unknown, the others may return OK (their results are whole: the
// exception did not touch them) or Aborted, and the job has failed: the next call
// fails on every rank, naming the op.
TEST(UserOpTest, AThrowingUserOpOnTheNodeEngineFailsTheJob) {
  const ReduceOp thrower = Thrower();
  const absl::Status status = RunCommunicatorJob(
      {.local_provider = "shm", .size = 3, .communicator_timeout = absl::Seconds(30)},
      [&](Communicator& comm, RankControl&) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "node"));
        throws_here = comm.rank() == 1;
        std::vector<int32_t> in(16, comm.rank()), out(16);
        const absl::Status result =
            comm.Allreduce(in.data(), out.data(), in.size(), DataType::kInt32, thrower);
        if (comm.rank() == 1) {
          EXPECT_EQ(result.code(), absl::StatusCode::kUnknown) << result;
          EXPECT_THAT(result.message(), HasSubstr("'thrower' threw an exception: boom"));
        } else if (result.ok()) {
          EXPECT_EQ(out, std::vector<int32_t>(16, 0 + 1 + 2));
        } else {
          EXPECT_EQ(result.code(), absl::StatusCode::kAborted) << result;
        }
        const absl::Status next = comm.Barrier();
        EXPECT_FALSE(next.ok());
        EXPECT_THAT(next.message(), HasSubstr("'thrower' threw an exception: boom"));
      });
  EXPECT_TRUE(status.ok()) << status;
}

// Every operation of a moved-from Communicator is refused with FailedPrecondition,
// none crashes, and the communicator it moved to works.
TEST(MovedFromTest, EveryOperationOfAMovedFromCommunicatorIsRefused) {
  const absl::Status status = RunCommunicatorJob({.size = 2}, [](Communicator& comm, RankControl&) {
    Communicator moved = std::move(comm);
    Communicator& old = comm;  // NOLINT(bugprone-use-after-move): the point of the test
    const auto refused = [](const absl::Status& got, absl::string_view what) {
      EXPECT_EQ(got.code(), absl::StatusCode::kFailedPrecondition) << what << ": " << got;
      EXPECT_THAT(got.message(), HasSubstr("moved from")) << what;
    };
    refused(old.status(), "status");
    EXPECT_EQ(old.rank(), -1);
    EXPECT_EQ(old.size(), 0);
    EXPECT_EQ(old.topology().size(), 0);
    float in[4] = {1, 2, 3, 4}, out[4] = {};
    std::vector<size_t> counts = {1, 1}, displs = {0, 1};
    refused(old.Barrier(), "Barrier");
    refused(old.Allreduce(in, out, 4, DataType::kFloat, PredefinedOp::kSum), "Allreduce");
    refused(old.Allreduce<float>(absl::MakeSpan(out), PredefinedOp::kSum), "typed Allreduce");
    refused(old.Alltoall<float>(in, absl::MakeSpan(out)), "typed Alltoall");
    refused(old.Gather<float>(in, absl::MakeSpan(out, 1), 0), "typed Gather");
    refused(old.Allgatherv(in, 1, out, counts, displs, DataType::kFloat), "Allgatherv");
    refused(old.Scatterv(in, counts, displs, out, 1, DataType::kFloat, 0), "Scatterv");
    refused(old.IBcast(out, 4, DataType::kFloat, 0).status(), "IBcast");
    refused(old.Split(0, 0).status(), "Split");
    refused(old.Dup().status(), "Dup");
    refused(old.Abort("x"), "Abort");
    refused(old.SetAlgorithm(Collective::kBcast, "binomial"), "SetAlgorithm");
    Completion completion;
    refused(old.transport().PostSend(0, 1, in, 4, &completion), "PostSend");
    refused(old.transport().Progress(), "Progress");
    // The communicator it moved to has the rank and works.
    EXPECT_OK(moved.status());
    ASSERT_OK(moved.Allreduce(in, out, 4, DataType::kFloat, PredefinedOp::kSum));
    EXPECT_EQ(out[3], 8.0f);
  });
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace zcoll
