// ZCOLL_CHECK=1 on intercommunicators: kRoot passed in both groups and counts the two
// groups do not agree on are reported on every rank of both groups, naming the rank;
// agreeing calls pass. (Its own binary: the variable is read once per process.)

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/intercommunicator.h"
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

// Five ranks: P = {0, 1}, Q = {2, 3, 4}. Every rank runs `call(inter, in_p, local_rank)`
// and expects the check to refuse it, with `expected` in the message.
void ExpectRefusedEverywhere(const std::function<absl::Status(Intercommunicator&, bool, int)>& call,
                             const std::string& expected) {
  ASSERT_TRUE(kCheckEnabled);
  const absl::Status status =
      RunCommunicatorJob({.size = 5}, [&](Communicator& world, RankControl&) {
        const bool in_p = world.rank() < 2;
        absl::StatusOr<std::optional<Communicator>> local = world.Split(in_p ? 0 : 1, 0);
        ASSERT_TRUE(local.ok()) << local.status();
        absl::StatusOr<Intercommunicator> inter =
            Intercommunicator::Create(**local, 0, world, in_p ? 2 : 0, 1);
        ASSERT_TRUE(inter.ok()) << inter.status();
        // An agreeing call passes the check.
        ASSERT_OK(inter->Barrier());
        const absl::Status result = call(*inter, in_p, inter->rank());
        EXPECT_THAT(result.code(),
                    AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
            << result;
        EXPECT_THAT(result.message(), HasSubstr("(intercommunicator, ZCOLL_CHECK)"));
        EXPECT_THAT(result.message(), HasSubstr(expected));
      });
  EXPECT_TRUE(status.ok()) << status;
}

TEST(IntercommunicatorCheckTest, RootInBothGroupsIsRefused) {
  ExpectRefusedEverywhere(
      [](Intercommunicator& inter, bool, int local_rank) {
        std::vector<float> data(4, 1.0f);
        // Each group's rank 0 passes kRoot (MPI_ROOT in both groups).
        return inter.Bcast(data.data(), 4, DataType::kFloat, local_rank == 0 ? kRoot : kProcNull);
      },
      "2 ranks passed kRoot");
}

TEST(IntercommunicatorCheckTest, CountsTheGroupsDisagreeOnAreRefused) {
  ExpectRefusedEverywhere(
      [](Intercommunicator& inter, bool in_p, int) {
        std::vector<float> in(8, 1.0f), out(8);
        return inter.Allreduce(in.data(), out.data(), in_p ? 4 : 5, DataType::kFloat,
                               PredefinedOp::kSum);
      },
      "both groups must agree");
}

TEST(IntercommunicatorCheckTest, AReduceScatterBlockWhoseVectorsDifferIsRefused) {
  // P's vectors hold 2 * 3 elements, Q's 3 * 3: the standard wants them equal.
  ExpectRefusedEverywhere(
      [](Intercommunicator& inter, bool, int) {
        std::vector<float> in(9, 1.0f), out(3);
        return inter.ReduceScatterBlock(in.data(), out.data(), 3, DataType::kFloat,
                                        PredefinedOp::kSum);
      },
      "both groups must agree");
}

}  // namespace
}  // namespace zcoll
