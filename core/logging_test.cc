#include "core/logging.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

TEST(LogLevelTest, ParsesNamesAndNumbers) {
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_EQ(*ParseLogLevel("WARNING"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel(" info "), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("3"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("trace"), LogLevel::kTrace);
  for (const char* bad : {"", "5", "-1", "verbose"}) {
    absl::StatusOr<LogLevel> level = ParseLogLevel(bad);
    ASSERT_FALSE(level.ok()) << bad;
    EXPECT_EQ(level.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(level.status().message(), HasSubstr("error, warning, info, debug, trace"));
  }
}

TEST(LogLevelTest, NamesRoundTrip) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug,
                         LogLevel::kTrace}) {
    EXPECT_EQ(*ParseLogLevel(LogLevelName(level)), level);
  }
}

TEST(LoggingTest, PrintsMessagesAtOrAboveTheThreshold) {
  SetLogLevel(LogLevel::kInfo);
  SetLogPrefix("rank 7");
  testing::internal::CaptureStderr();
  ZCOLL_LOG(INFO) << "shown " << 42;
  ZCOLL_LOG(DEBUG) << "hidden";
  ZCOLL_LOG(ERROR) << "also shown";
  const std::string output = testing::internal::GetCapturedStderr();
  EXPECT_THAT(output, HasSubstr("[zcoll I "));
  EXPECT_THAT(output, HasSubstr("logging_test.cc:"));
  EXPECT_THAT(output, HasSubstr(" rank 7] shown 42\n"));
  EXPECT_THAT(output, HasSubstr("] also shown\n"));
  EXPECT_THAT(output, Not(HasSubstr("hidden")));
  SetLogPrefix("");
}

TEST(LoggingTest, SuppressedMessagesDoNotEvaluateTheirArguments) {
  SetLogLevel(LogLevel::kError);
  int evaluations = 0;
  auto count = [&] { return ++evaluations; };
  ZCOLL_LOG(TRACE) << count();
  EXPECT_EQ(evaluations, 0);
  ZCOLL_CHECK(true) << count();
  EXPECT_EQ(evaluations, 0);
}

TEST(LoggingDeathTest, CheckAbortsWithConditionAndMessage) {
  EXPECT_DEATH(ZCOLL_CHECK(1 + 1 == 3) << "arithmetic is broken",
               "check failed: 1 \\+ 1 == 3: arithmetic is broken");
  EXPECT_DEATH(ZCOLL_CHECK_OK(absl::InternalError("bad state")), "bad state");
}

TEST(LoggingDeathTest, DcheckFollowsNdebug) {
#ifdef NDEBUG
  ZCOLL_DCHECK(false) << "not evaluated in NDEBUG builds";
#else
  EXPECT_DEATH(ZCOLL_DCHECK(false) << "debug check", "debug check");
#endif
}

}  // namespace
}  // namespace zcoll
