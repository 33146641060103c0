#include "core/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

TEST(ConfigTest, VariablesAreSortedUniqueAndDocumented) {
  absl::string_view previous;
  for (const EnvironmentVariable& variable : EnvironmentVariables()) {
    EXPECT_TRUE(absl::StartsWith(variable.name, "ZCOLL_")) << variable.name;
    EXPECT_LT(previous, variable.name) << "not sorted or duplicated";
    EXPECT_FALSE(variable.description.empty()) << variable.name;
    previous = variable.name;
  }
}

TEST(ConfigTest, ReadmeDocumentsEveryVariable) {
  std::ifstream file("README.md");
  ASSERT_TRUE(file.good()) << "README.md is not in the test's runfiles";
  std::stringstream readme;
  readme << file.rdbuf();
  for (const EnvironmentVariable& variable : EnvironmentVariables()) {
    // A row of the README's table starts with the variable's name in backquotes.
    EXPECT_THAT(readme.str(), testing::HasSubstr(absl::StrCat("| `", variable.name, "` |")))
        << variable.name << " is missing from README.md's environment variable table";
  }
}

TEST(ConfigTest, UnsetOrEmptyMeansDefault) {
  ASSERT_EQ(unsetenv("ZCOLL_LOG_LEVEL"), 0);
  EXPECT_EQ(EnvironmentValue("ZCOLL_LOG_LEVEL"), "warning");
  ASSERT_EQ(setenv("ZCOLL_LOG_LEVEL", "", 1), 0);
  EXPECT_EQ(EnvironmentValue("ZCOLL_LOG_LEVEL"), "warning");
  ASSERT_EQ(setenv("ZCOLL_LOG_LEVEL", "debug", 1), 0);
  EXPECT_EQ(EnvironmentValue("ZCOLL_LOG_LEVEL"), "debug");
  ASSERT_EQ(unsetenv("ZCOLL_LOG_LEVEL"), 0);
}

TEST(ConfigTest, UnsignedValuesParseOrFallBackToTheDefault) {
  ASSERT_EQ(setenv("ZCOLL_WAIT_SPIN_US", "7", 1), 0);
  EXPECT_EQ(EnvironmentUnsigned("ZCOLL_WAIT_SPIN_US"), 7u);
  ASSERT_EQ(setenv("ZCOLL_WAIT_SPIN_US", "-3", 1), 0);
  testing::internal::CaptureStderr();
  EXPECT_EQ(EnvironmentUnsigned("ZCOLL_WAIT_SPIN_US"), 20u);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              testing::HasSubstr("ZCOLL_WAIT_SPIN_US='-3' is not a non-negative integer"));
  ASSERT_EQ(unsetenv("ZCOLL_WAIT_SPIN_US"), 0);
  EXPECT_EQ(EnvironmentUnsigned("ZCOLL_WAIT_SPIN_US"), 20u);
}

TEST(ConfigDeathTest, UndeclaredVariableIsABug) {
  EXPECT_DEATH(EnvironmentValue("ZCOLL_NOT_DECLARED"), "not declared in core/config.cc");
}

}  // namespace
}  // namespace zcoll
