#include "core/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

absl::StatusOr<int> Half(int value) {
  if (value % 2 != 0) return absl::InvalidArgumentError("odd");
  return value / 2;
}

absl::Status HalveTwice(int value, int* result) {
  ASSIGN_OR_RETURN(int half, Half(value));
  ASSIGN_OR_RETURN(*result, Half(half));
  return absl::OkStatus();
}

absl::Status CheckEven(int value, int* calls) {
  ++*calls;
  RETURN_IF_ERROR(Half(value));  // A StatusOr works too.
  RETURN_IF_ERROR(value > 100 ? absl::OutOfRangeError("big") : absl::OkStatus());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPassesValuesAndErrors) {
  int result = -1;
  EXPECT_OK(HalveTwice(12, &result));
  EXPECT_EQ(result, 3);
  result = -1;
  const absl::Status status = HalveTwice(6, &result);  // 6 -> 3 -> odd
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "odd");
  EXPECT_EQ(result, -1);
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheFirstError) {
  int calls = 0;
  EXPECT_OK(CheckEven(8, &calls));
  EXPECT_EQ(CheckEven(7, &calls).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckEven(200, &calls).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(calls, 3);
}

TEST(StatusMacrosTest, AssignOrReturnMovesOnlyTypes) {
  auto make = []() -> absl::StatusOr<std::unique_ptr<std::string>> {
    return std::make_unique<std::string>("moved");
  };
  auto use = [&]() -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(std::unique_ptr<std::string> text, make());
    return *text;
  };
  absl::StatusOr<std::string> text = use();
  ASSERT_OK(text);
  EXPECT_EQ(*text, "moved");
}

TEST(StatusMacrosTest, ExpressionIsEvaluatedOnce) {
  int evaluations = 0;
  auto once = [&]() -> absl::Status {
    RETURN_IF_ERROR((++evaluations, absl::InternalError("x")));
    return absl::OkStatus();
  };
  EXPECT_EQ(once().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(evaluations, 1);
}

}  // namespace
}  // namespace zcoll
