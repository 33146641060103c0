#include "testing/status_assertions.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

TEST(StatusAssertionsTest, AFailurePrintsTheExpressionAndTheStatus) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::InternalError("rank 3: the ring broke")),
                          "absl::InternalError(\"rank 3: the ring broke\"): INTERNAL: rank 3: "
                          "the ring broke");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::StatusOr<int>(absl::DeadlineExceededError("late"))),
                          "DEADLINE_EXCEEDED: late");
  EXPECT_FATAL_FAILURE(ASSERT_OK(absl::UnavailableError("gone")), "UNAVAILABLE: gone");
}

TEST(StatusAssertionsTest, OkPassesAndTheExpressionRunsOnce) {
  int calls = 0;
  auto call = [&calls]() -> absl::StatusOr<int> {
    ++calls;
    return 7;
  };
  EXPECT_OK(call());
  ASSERT_OK(absl::OkStatus());
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace zcoll
