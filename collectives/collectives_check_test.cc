// ZCOLL_CHECK=1: arguments that disagree across ranks are found before any data
// moves and reported on every rank, naming the rank that differs; arguments that
// agree pass. (Its own binary: the variable is read once per process.)

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;

// Set before main, so before any collective reads it.
const bool kCheckEnabled = [] { return setenv("ZCOLL_CHECK", "1", 1) == 0; }();

// Every rank runs `call(comm)`; rank 1's arguments differ in one respect.
void ExpectMismatchReported(const std::function<absl::Status(Communicator&)>& call,
                            const std::string& expected) {
  ASSERT_TRUE(kCheckEnabled);
  const absl::Status status =
      RunCommunicatorJob({.size = 3}, [&](Communicator& comm, RankControl&) {
        const absl::Status result = call(comm);
        EXPECT_THAT(result.code(),
                    AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
            << result;
        EXPECT_THAT(result.message(), HasSubstr("(ZCOLL_CHECK)"));
        EXPECT_THAT(result.message(), HasSubstr(expected));
      });
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ArgumentCheckTest, ADifferentCountIsReportedEverywhere) {
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<float> in(8, 1.0f), out(8);
        return comm.Allreduce(in.data(), out.data(), comm.rank() == 1 ? 5 : 4, DataType::kFloat,
                              PredefinedOp::kSum);
      },
      "passed count");
}

TEST(ArgumentCheckTest, ADifferentRootTypeOrOpIsReportedEverywhere) {
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<float> in(4, 1.0f), out(4);
        return comm.Reduce(in.data(), out.data(), 4, DataType::kFloat, PredefinedOp::kSum,
                           comm.rank() == 1 ? 2 : 0);
      },
      "passed root");
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<int32_t> in(4, 1), out(4);
        return comm.Allreduce(in.data(), out.data(), 4,
                              comm.rank() == 1 ? DataType::kUint32 : DataType::kInt32,
                              PredefinedOp::kSum);
      },
      "passed type");
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<int32_t> in(4, 1), out(4);
        return comm.Allreduce(in.data(), out.data(), 4, DataType::kInt32,
                              comm.rank() == 1 ? PredefinedOp::kMax : PredefinedOp::kSum);
      },
      "passed op");
}

TEST(ArgumentCheckTest, DataMovementMismatchesAreReportedEverywhere) {
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<float> buffer(4, 1.0f);
        return comm.Bcast(buffer.data(), 4, DataType::kFloat, comm.rank() == 1 ? 1 : 0);
      },
      "passed root");
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<float> in(4, 1.0f), out(12);
        return comm.Allgather(in.data(), out.data(), comm.rank() == 1 ? 3 : 4, DataType::kFloat);
      },
      "passed count");
  // Allgatherv's counts are the same on every rank: rank 1's differ.
  ExpectMismatchReported(
      [](Communicator& comm) {
        const std::vector<size_t> counts =
            comm.rank() == 1 ? std::vector<size_t>{1, 2, 1} : std::vector<size_t>{1, 1, 1};
        const std::vector<size_t> displs = {0, 1, 3};
        std::vector<float> in(counts[comm.rank()], 1.0f), out(4);
        return comm.Allgatherv(in.data(), in.size(), out.data(), counts, displs, DataType::kFloat);
      },
      "passed different counts");
  ExpectMismatchReported(
      [](Communicator& comm) {
        std::vector<int64_t> in(2, 1), out(2);
        return comm.Scan(in.data(), out.data(), 2, DataType::kInt64,
                         comm.rank() == 1 ? PredefinedOp::kProd : PredefinedOp::kSum);
      },
      "passed op");
}

TEST(ArgumentCheckTest, ArgumentsThatAgreePass) {
  const absl::Status status = RunCommunicatorJob({.size = 3}, [](Communicator& comm, RankControl&) {
    std::vector<float> in(6, 1.0f), out(2);
    const std::vector<size_t> counts = {2, 0, 4};
    std::vector<float> big_out(4);
    EXPECT_OK(comm.ReduceScatter(in.data(), big_out.data(), counts, DataType::kFloat,
                                 PredefinedOp::kSum));
    // Scatterv's receive counts differ by rank, legitimately.
    const std::vector<size_t> displs = {0, 2, 2};
    std::vector<float> part(counts[comm.rank()]);
    EXPECT_OK(
        comm.Scatterv(in.data(), counts, displs, part.data(), part.size(), DataType::kFloat, 0));
    // So do Gatherv's and Alltoallv's.
    std::vector<float> gathered(6);
    EXPECT_OK(comm.Gatherv(part.data(), part.size(), gathered.data(), counts, displs,
                           DataType::kFloat, 2));
    const std::vector<size_t> ones = {1, 1, 1}, packed = {0, 1, 2};
    std::vector<float> exchanged(3);
    EXPECT_OK(
        comm.Alltoallv(in.data(), ones, packed, exchanged.data(), ones, packed, DataType::kFloat));
  });
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace zcoll
