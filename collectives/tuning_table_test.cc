// Tuning tables (ZCOLL_TUNING, collectives/selection.h): parsing, the rules' place
// before the built-in table, and a job whose ranks read different tables.

#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "collectives/selection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/bootstrap/fork_meeting_bootstrap.h"
#include "transport/bootstrap/forked_job.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

SelectionInputs AcrossNodes(Collective collective, size_t bytes, int ranks, bool commutative) {
  SelectionInputs inputs;
  inputs.collective = collective;
  inputs.bytes = bytes;
  inputs.size = ranks;
  inputs.num_nodes = ranks;
  inputs.commutative = commutative;
  return inputs;
}

TEST(TuningTableTest, ParsesRulesAndFormatsThemBack) {
  absl::StatusOr<std::vector<SelectionRule>> rules = ParseTuningTable(
      "# derived for a test\n"
      "allreduce recursive_doubling max_bytes=4096 min_ranks=4 max_ranks=64 min_nodes=2\n"
      "\n"
      "  bcast binomial min_bytes=1 # a comment after a rule\n"
      "alltoallv pairwise not_oversubscribed\n"
      "alltoall pairwise min_bytes=4097 oversubscribed\n",
      "test table");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 4u);
  const SelectionRule& first = (*rules)[0];
  EXPECT_EQ(first.collective, Collective::kAllreduce);
  EXPECT_EQ(first.algorithm, "recursive_doubling");
  EXPECT_EQ(first.max_bytes, 4096u);
  EXPECT_EQ(first.min_bytes, 0u);
  EXPECT_EQ(first.min_ranks, 4);
  EXPECT_EQ(first.max_ranks, 64);
  EXPECT_EQ(first.min_nodes, 2);
  EXPECT_EQ((*rules)[1].min_bytes, 1u);
  EXPECT_EQ((*rules)[2].oversubscription, Oversubscription::kNotOversubscribed);
  EXPECT_EQ((*rules)[3].oversubscription, Oversubscription::kOversubscribed);
  EXPECT_EQ(FormatTuningRule(first),
            "allreduce recursive_doubling max_bytes=4096 min_ranks=4 max_ranks=64 min_nodes=2");
  std::string text;
  for (const SelectionRule& rule : *rules) text += FormatTuningRule(rule) + "\n";
  absl::StatusOr<std::vector<SelectionRule>> again = ParseTuningTable(text, "formatted");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(TuningFingerprint(*again), TuningFingerprint(*rules));
  EXPECT_NE(TuningFingerprint(*again), TuningFingerprint(absl::MakeConstSpan(*rules).subspan(1)));
}

TEST(TuningTableTest, RefusesEachBadLineByNumber) {
  const struct {
    const char* line;
    const char* why;
  } cases[] = {
      {"allreduce", "a rule is COLLECTIVE ALGORITHM"},
      {"allreduction ring", "allreduction"},
      {"allreduce fastest", "fastest"},
      {"allreduce rabenseifner max_bytes=lots", "max_bytes is a number of bytes"},
      {"allreduce rabenseifner min_ranks=0", "min_ranks is a count from 1"},
      {"allreduce rabenseifner ranks=4", "unknown limit 'ranks=4'"},
      {"allreduce rabenseifner min_bytes=10 max_bytes=5", "its range is empty"},
      {"allreduce rabenseifner min_ranks=10 max_ranks=5", "its range is empty"},
      {"alltoallv pairwise max_bytes=64", "alltoallv has no size every rank agrees on"},
      {"allreduce rabenseifner max_bytes=64 max_bytes=128", "max_bytes is given twice"},
      {"alltoall pairwise oversubscribed not_oversubscribed", "exclude each other"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::vector<SelectionRule>> rules =
        ParseTuningTable(absl::StrCat("# first line\nbcast binomial\n", c.line, "\n"), "t.tuning");
    ASSERT_FALSE(rules.ok()) << c.line;
    EXPECT_THAT(rules.status().message(), HasSubstr(absl::StrCat("t.tuning line 3 ('", c.line)));
    EXPECT_THAT(rules.status().message(), HasSubstr(c.why));
  }
}

TEST(TuningTableTest, TunedRulesComeBeforeTheTableAndFallThroughWhenTheyCannotRun) {
  // Algorithms that reduce in any order cannot take a non-commutative op.
  const Algorithm* commutative_only = nullptr;
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.collective == Collective::kReduceScatterBlock && !algorithm.any_op &&
        algorithm.runs_schedule()) {
      commutative_only = &algorithm;
      break;
    }
  }
  ASSERT_NE(commutative_only, nullptr);
  const SelectionInputs inputs = AcrossNodes(Collective::kAllreduce, 1 << 20, 8, true);
  const Algorithm& untuned = SelectAlgorithm(inputs, {});
  // A rule for an algorithm the table does not pick here.
  std::string other;
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.collective == Collective::kAllreduce && algorithm.runs_schedule() &&
        algorithm.name != untuned.name && CheckAlgorithmCanRun(algorithm, inputs).ok()) {
      other = std::string(algorithm.name);
      break;
    }
  }
  ASSERT_FALSE(other.empty());
  absl::StatusOr<std::vector<SelectionRule>> tuned =
      ParseTuningTable(absl::StrCat("allreduce ", other, " min_bytes=65536 min_nodes=2\n"), "t");
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(SelectAlgorithm(inputs, *tuned).name, other);
  // Outside its limits: the table's choice.
  EXPECT_EQ(SelectAlgorithm(AcrossNodes(Collective::kAllreduce, 1024, 8, true), *tuned).name,
            SelectAlgorithm(AcrossNodes(Collective::kAllreduce, 1024, 8, true), {}).name);
  // Another collective: untouched.
  EXPECT_EQ(SelectAlgorithm(AcrossNodes(Collective::kBcast, 1 << 20, 8, true), *tuned).name,
            SelectAlgorithm(AcrossNodes(Collective::kBcast, 1 << 20, 8, true), {}).name);
  // A rule whose algorithm cannot run the call gives way to the table.
  absl::StatusOr<std::vector<SelectionRule>> impossible =
      ParseTuningTable(absl::StrCat("reduce_scatter_block ", commutative_only->name, "\n"), "t");
  ASSERT_TRUE(impossible.ok()) << impossible.status();
  const SelectionInputs noncommutative =
      AcrossNodes(Collective::kReduceScatterBlock, 1 << 20, 8, false);
  EXPECT_EQ(SelectAlgorithm(noncommutative, *impossible).name,
            SelectAlgorithm(noncommutative, {}).name);
  EXPECT_TRUE(SelectAlgorithm(noncommutative, *impossible).any_op);
}

std::string WriteTable(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << text;
  return path;
}

// Each rank reads ZCOLL_TUNING = `paths[rank]` (read once per process: the ranks are
// fresh children), then creates a 2-rank communicator on one node. Exits 0 when
// Create's outcome has `expected` in its message (empty: Create succeeds and an
// allreduce is right), 1 otherwise.
int CreateWithTables(const std::vector<std::string>& paths, const std::string& expected, int rank,
                     ForkMeeting& meeting) {
  setenv("ZCOLL_TUNING", paths[rank].c_str(), 1);
  CommunicatorOptions options;
  options.timeout = absl::Seconds(30);
  options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, 2);
  absl::StatusOr<Communicator> comm = Communicator::Create(std::move(options));
  if (!expected.empty()) {
    const bool ok = !comm.ok() && absl::StrContains(comm.status().message(), expected);
    if (!ok) std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return ok ? 0 : 1;
  }
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return 1;
  }
  std::vector<int32_t> send(1000, rank + 1), recv(1000, 0);
  absl::Status status = comm->Allreduce<int32_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum);
  return status.ok() && recv[0] == 3 && recv[999] == 3 ? 0 : 1;
}

void ExpectJob(const std::vector<std::string>& paths, const std::string& expected) {
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      2,
      [&](int rank, ForkMeeting& meeting) {
        return CreateWithTables(paths, expected, rank, meeting);
      },
      absl::Seconds(60));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE((*outcomes)[rank].finished && (*outcomes)[rank].exit_code == 0)
        << "rank " << rank << " (expected '" << expected << "'): exit "
        << (*outcomes)[rank].exit_code;
  }
}

TEST(TuningTableTest, EveryRankMustReadTheSameRules) {
  const std::string a = WriteTable("a.tuning", "allreduce rabenseifner\n");
  const std::string a_again =
      WriteTable("a_again.tuning", "allreduce  rabenseifner # the same rule\n");
  const std::string b = WriteTable("b.tuning", "allreduce recursive_doubling\n");
  // Same path, same rules: runs (with the tuned algorithm where it can).
  ExpectJob({a, a}, "");
  // Different rules: every rank's Create says so.
  ExpectJob({a, b}, "ZCOLL_TUNING's rules=1 with hash");
  // The same rules in another file (a node-local copy, say): runs.
  ExpectJob({a, a_again}, "");
}

TEST(TuningTableTest, AnUnreadableOrBadTableFailsCreateOnEveryRank) {
  const std::string bad = WriteTable("bad.tuning", "allreduce rabenseifner\nallreduce fastest\n");
  ExpectJob({bad, bad}, "line 2 ('allreduce fastest')");
  const std::string missing = absl::StrCat(getenv("TEST_TMPDIR"), "/no_such.tuning");
  ExpectJob({missing, missing}, "ZCOLL_TUNING: cannot read '");
}

TEST(TuningTableTest, TheEnvironmentsTableIsTheOneSelectAlgorithmUses) {
  const SelectionInputs inputs = AcrossNodes(Collective::kAllreduce, 1 << 20, 8, true);
  const std::string untuned(SelectAlgorithm(inputs, {}).name);
  const std::string forced =
      untuned == "recursive_doubling" ? "rabenseifner" : "recursive_doubling";
  const std::string path = WriteTable("env.tuning", absl::StrCat("allreduce ", forced, "\n"));
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      1,
      [&](int, ForkMeeting&) {
        setenv("ZCOLL_TUNING", path.c_str(), 1);
        return SelectAlgorithm(inputs).name == forced ? 0 : 1;
      },
      absl::Seconds(30));
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  EXPECT_EQ((*outcomes)[0].exit_code, 0)
      << "SelectAlgorithm did not take " << forced << " from ZCOLL_TUNING";
}

}  // namespace
}  // namespace zcoll
