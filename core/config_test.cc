#include "core/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

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

const EnvironmentVariable& Declared(absl::string_view name) {
  for (const EnvironmentVariable& variable : EnvironmentVariables()) {
    if (variable.name == name) return variable;
  }
  ADD_FAILURE() << name << " is not declared";
  return EnvironmentVariables()[0];
}

// Each form takes what the README says it takes and nothing else; a refusal names the
// variable, the value and the accepted forms.
TEST(ConfigTest, EveryFormAcceptsItsSpellingsAndRefusesOthers) {
  struct Case {
    absl::string_view variable;
    std::vector<absl::string_view> accepted, refused;
  };
  const Case cases[] = {
      {"ZCOLL_TIMEOUT",
       {"120", "0.5", ".25", "10s", "500ms", "2m", "1h", "1.5s"},
       {"0", "-5", "abc", "10 s", "s", "0s", "inf", "+5", " 5", "5 ", "5x", "-1s"}},
      {"ZCOLL_CHECK", {"0", "1"}, {"yes", "true", "2", "01", " 1"}},
      {"ZCOLL_CHUNK_BYTES", {"0", "4096", "262144"}, {"-1", "4k", "+5", "1.5", " 5", "0x10"}},
      {"ZCOLL_EMULATE_NUMA", {"1", "4"}, {"0", "-2", "two"}},
      {"ZCOLL_LINK_GBITS", {"0", "100", "12.5"}, {"-1", "fast", "inf", "nan", "+3", "5 ", " 5"}},
      {"ZCOLL_EMULATE_NODES", {"2", "3,1", "1,1,2"}, {"0", "3,", ",1", "3;1", "a"}},
      {"ZCOLL_LOG_LEVEL",
       {"error", "warning", "info", "debug", "trace", "0", "4"},
       {"WARNING", "5", "verbose"}},
      {"ZCOLL_BOOTSTRAP", {"auto", "pmix", "store"}, {"slurm", "PMIX"}},
      {"ZCOLL_STORE",
       {"tcp://127.0.0.1:29500", "tcp://[::1]:1", "tcp://host:80", "file:///tmp/x"},
       {"127.0.0.1:29500", "tcp://host", "tcp://:80", "tcp://host:port", "file://relative"}},
      {"ZCOLL_PROVIDER",
       {"auto", "ofi", "ofi:tcp", "ofi:verbs;ofi_rxm", "ucx", "ucx:rc,ud"},
       {"foo", "shm", "ofi:", "tcp", "ucx:", "ofi:tcp:x"}},
      {"ZCOLL_LOCAL_PROVIDER", {"shm", "ofi:shm", "ucx:posix,cma"}, {"auto", "posix", "sm"}},
  };
  for (const Case& c : cases) {
    const EnvironmentVariable& variable = Declared(c.variable);
    for (absl::string_view value : c.accepted) {
      EXPECT_TRUE(CheckEnvironmentValue(variable, value).ok())
          << c.variable << "='" << value << "': " << CheckEnvironmentValue(variable, value);
    }
    for (absl::string_view value : c.refused) {
      const absl::Status status = CheckEnvironmentValue(variable, value);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
          << c.variable << "='" << value << "'";
      EXPECT_THAT(
          std::string(status.message()),
          testing::HasSubstr(absl::StrCat(c.variable, "='", value, "' is not accepted; it is ",
                                          AcceptedForms(variable.form))));
    }
  }
}

// Every declared default is itself accepted (a default the checker refused would fail
// every Create that leaves the variable unset... or be a typo in the table).
TEST(ConfigTest, EveryDefaultIsAccepted) {
  for (const EnvironmentVariable& variable : EnvironmentVariables()) {
    if (variable.default_value.empty()) continue;
    EXPECT_TRUE(CheckEnvironmentValue(variable, variable.default_value).ok()) << variable.name;
  }
}

TEST(ConfigTest, DurationsReadSecondsOrUnits) {
  EXPECT_EQ(*ParsePositiveDuration("120"), absl::Seconds(120));
  EXPECT_EQ(*ParsePositiveDuration("0.5"), absl::Milliseconds(500));
  EXPECT_EQ(*ParsePositiveDuration("10s"), absl::Seconds(10));
  EXPECT_EQ(*ParsePositiveDuration("250ms"), absl::Milliseconds(250));
  EXPECT_EQ(*ParsePositiveDuration("2m"), absl::Minutes(2));
  EXPECT_FALSE(ParsePositiveDuration("0").ok());
  ASSERT_EQ(setenv("ZCOLL_TIMEOUT", "3s", 1), 0);
  EXPECT_EQ(EnvironmentDuration("ZCOLL_TIMEOUT"), absl::Seconds(3));
  ASSERT_EQ(unsetenv("ZCOLL_TIMEOUT"), 0);
  EXPECT_EQ(EnvironmentDuration("ZCOLL_TIMEOUT"), absl::Seconds(120));
}

TEST(ConfigTest, CheckingTheEnvironmentNamesEveryBadValue) {
  EXPECT_TRUE(CheckEnvironment().ok()) << CheckEnvironment();
  ASSERT_EQ(setenv("ZCOLL_TIMEOUT", "10 seconds", 1), 0);
  ASSERT_EQ(setenv("ZCOLL_NODE_ENGINE", "on", 1), 0);
  ASSERT_EQ(setenv("ZCOLL_CHECK", "1", 1), 0);
  const absl::Status status = CheckEnvironment();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("ZCOLL_TIMEOUT='10 seconds'"));
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("ZCOLL_NODE_ENGINE='on'"));
  EXPECT_THAT(std::string(status.message()), testing::Not(testing::HasSubstr("ZCOLL_CHECK")));
  for (const char* name : {"ZCOLL_TIMEOUT", "ZCOLL_NODE_ENGINE", "ZCOLL_CHECK"}) {
    ASSERT_EQ(unsetenv(name), 0);
  }
  EXPECT_OK(CheckEnvironment());
}

TEST(ConfigDeathTest, UndeclaredVariableIsABug) {
  EXPECT_DEATH(EnvironmentValue("ZCOLL_NOT_DECLARED"), "not declared in core/config.cc");
}

}  // namespace
}  // namespace zcoll
