#include "tools/plot.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

constexpr char kRows[] =
    "zcoll,allreduce,2,8,0.31\n"
    "openmpi,allreduce,2,8,0.30\n"
    "zcoll,allreduce,2,32,0.40\n"
    "openmpi,allreduce,2,32,0.35\n"
    "mpich,bcast,2,8,0.50\n"
    "zcoll,bcast,2,8,0.25\n"
    "zcoll,barrier,2,0,0.20\n";

TEST(PlotTest, RowsParseAndBadLinesAreNamed) {
  absl::StatusOr<std::vector<TimedRow>> rows =
      ParseTimedRows(absl::StrCat("impl,coll,ranks,bytes,usec\n", kRows));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 7u);
  EXPECT_EQ((*rows)[1].library, "openmpi");
  EXPECT_EQ((*rows)[2].bytes, 32u);
  EXPECT_DOUBLE_EQ((*rows)[2].usec, 0.40);
  const absl::StatusOr<std::vector<TimedRow>> bad =
      ParseTimedRows("zcoll,allreduce,2,8,0.3\nzcoll,x,2\n");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("line 2 ('zcoll,x,2')"));
}

// One panel per collective in the order met, one line per library with points in
// size order, log-log axes; the barrier's 0 bytes is drawn at 1.
TEST(PlotTest, TheScriptHasAPanelPerCollectiveAndALinePerLibrary) {
  const std::vector<TimedRow> rows = *ParseTimedRows(kRows);
  const std::string script = PlotScript(rows, "2 ranks", "/tmp/out.png");
  EXPECT_THAT(script, HasSubstr("set multiplot layout 2,2 title '2 ranks'"));
  // Underscores in names stay underscores, not subscripts.
  EXPECT_THAT(script, HasSubstr("set terminal pngcairo noenhanced "));
  EXPECT_THAT(script, HasSubstr("set logscale x 4\nset logscale y\n"));
  EXPECT_THAT(
      script,
      HasSubstr(
          "set title 'allreduce'\nset xrange [*:*]\nplot '-' using 1:2 with linespoints title "
          "'zcoll', '-' using 1:2 with linespoints title 'openmpi'\n"
          "8 0.31\n32 0.4\ne\n8 0.3\n32 0.35\ne\n"));
  // bcast: zcoll's line first (libraries keep the order they first appear in).
  EXPECT_THAT(script, HasSubstr("title 'zcoll', '-' using 1:2 with linespoints title 'mpich'\n"
                                "8 0.25\ne\n8 0.5\ne\n"));
  EXPECT_THAT(script, HasSubstr("set title 'barrier'\nset xrange [1/4.0:1*4.0]\nplot '-' using 1:2 "
                                "with linespoints title "
                                "'zcoll'\n1 0.2\ne\n"));
}

TEST(PlotTest, GnuplotDrawsAPng) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "gnuplot is not installed here (tools/setup.sh installs gnuplot-nox)";
  }
  const char* directory = std::getenv("TEST_TMPDIR");
  // (A quote in the path: the shell line that starts gnuplot quotes it.)
  const std::string png = std::string(directory != nullptr ? directory : "/tmp") + "/it's.png";
  const absl::Status status = PlotTimes(*ParseTimedRows(kRows), "test's title", png);
  ASSERT_TRUE(status.ok()) << status;
  FILE* file = std::fopen(png.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  unsigned char magic[8] = {};
  ASSERT_EQ(std::fread(magic, 1, 8, file), 8u);
  std::fclose(file);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(magic + 1), 3), "PNG");
  EXPECT_EQ(PlotTimes({}, "", png).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlotTest, AFileOfRowsIsReadAndItsProblemsNameIt) {
  const char* directory = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(directory != nullptr ? directory : "/tmp") + "/rows.csv";
  FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("zcoll,allreduce,2,8,0.3\nzcoll,allreduce,2\n", file);
  std::fclose(file);
  const absl::StatusOr<std::vector<TimedRow>> bad = ReadTimedRows(path);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr(path + ": line 2"));
  const absl::StatusOr<std::vector<TimedRow>> missing = ReadTimedRows(path + ".none");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("cannot open " + path + ".none: No such file or directory"));
}

}  // namespace
}  // namespace zcoll
