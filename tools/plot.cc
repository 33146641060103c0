#include "tools/plot.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace zcoll {
namespace {

// The order in which `names` first appear.
std::vector<std::string> FirstAppearances(const std::vector<TimedRow>& rows,
                                          std::string TimedRow::*field) {
  std::vector<std::string> names;
  for (const TimedRow& row : rows) {
    if (std::find(names.begin(), names.end(), row.*field) == names.end()) {
      names.push_back(row.*field);
    }
  }
  return names;
}

// gnuplot's single-quoted strings end at a quote; none of ours has one, but a title
// or path from a user might.
std::string Quoted(absl::string_view text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

// A path for the shell, single-quoted (a quote in it closed, escaped, reopened).
std::string ShellQuoted(absl::string_view path) {
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

}  // namespace

absl::StatusOr<std::vector<TimedRow>> ReadTimedRows(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<TimedRow>> rows = ParseTimedRows(*text);
  if (!rows.ok()) {
    return absl::Status(rows.status().code(), absl::StrCat(path, ": ", rows.status().message()));
  }
  return rows;
}

absl::StatusOr<std::vector<TimedRow>> ParseTimedRows(absl::string_view csv) {
  std::vector<TimedRow> rows;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "library,") || absl::StartsWith(line, "impl,")) {
      continue;
    }
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    TimedRow row;
    if (fields.size() != 5 || fields[0].empty() || fields[1].empty() ||
        !absl::SimpleAtoi(fields[2], &row.ranks) || !absl::SimpleAtoi(fields[3], &row.bytes) ||
        !absl::SimpleAtod(fields[4], &row.usec) || !(row.usec >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, " ('", line,
                                                     "') is not library,coll,ranks,bytes,usec"));
    }
    row.library = std::string(fields[0]);
    row.coll = std::string(fields[1]);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string PlotScript(const std::vector<TimedRow>& rows, absl::string_view title,
                       absl::string_view png_path) {
  const std::vector<std::string> colls = FirstAppearances(rows, &TimedRow::coll);
  const std::vector<std::string> libraries = FirstAppearances(rows, &TimedRow::library);
  const int columns = colls.size() <= 1 ? 1 : colls.size() <= 4 ? 2 : 3;
  const int panel_rows = static_cast<int>((colls.size() + columns - 1) / columns);
  // noenhanced: the names are printed as they are (enhanced text would make the
  // underscores of "zcoll_sim" and "pipelined_rabenseifner" subscripts).
  std::string script = absl::StrCat(
      "set terminal pngcairo noenhanced size ", 480 * columns, ",", 360 * std::max(1, panel_rows),
      " font ',9'\nset output ", Quoted(png_path), "\nset multiplot layout ",
      std::max(1, panel_rows), ",", columns, " title ", Quoted(title),
      "\nset logscale x 4\nset logscale y\nset format x '%.0b%B'\nset xlabel "
      "'bytes'\nset ylabel 'usec per call'\n"
      "set key top left\nset grid\n");
  for (const std::string& coll : colls) {
    absl::StrAppend(&script, "set title ", Quoted(coll), "\n");
    // A panel whose rows are all of one size (a barrier's) gets a range around it.
    size_t smallest = SIZE_MAX, largest = 0;
    for (const TimedRow& row : rows) {
      if (row.coll != coll) continue;
      smallest = std::min(smallest, std::max<size_t>(row.bytes, 1));
      largest = std::max(largest, std::max<size_t>(row.bytes, 1));
    }
    if (smallest == largest) {
      absl::StrAppend(&script, "set xrange [", smallest, "/4.0:", largest, "*4.0]\n");
    } else {
      absl::StrAppend(&script, "set xrange [*:*]\n");
    }
    // A barrier's one row (0 bytes) has no place on a log axis: drawn at 1 byte.
    std::string plot = "plot";
    std::string data;
    for (const std::string& library : libraries) {
      std::vector<const TimedRow*> points;
      for (const TimedRow& row : rows) {
        if (row.coll == coll && row.library == library) points.push_back(&row);
      }
      if (points.empty()) continue;
      std::sort(points.begin(), points.end(),
                [](const TimedRow* a, const TimedRow* b) { return a->bytes < b->bytes; });
      absl::StrAppend(&plot, plot == "plot" ? " " : ", ", "'-' using 1:2 with linespoints title ",
                      Quoted(library));
      for (const TimedRow* row : points) {
        absl::StrAppend(&data, std::max<size_t>(row->bytes, 1), " ", std::max(row->usec, 0.01),
                        "\n");
      }
      absl::StrAppend(&data, "e\n");
    }
    absl::StrAppend(&script, plot, "\n", data);
  }
  absl::StrAppend(&script, "unset multiplot\n");
  return script;
}

absl::Status PlotTimes(const std::vector<TimedRow>& rows, absl::string_view title,
                       const std::string& png_path) {
  if (rows.empty()) return absl::InvalidArgumentError("no rows to plot");
  const std::string script = PlotScript(rows, title, png_path);
  std::remove(png_path.c_str());
  // gnuplot's chatter (warnings about a one-point panel) goes to a log beside the
  // plot, shown only when nothing was drawn: stdout may be carrying CSV.
  const std::string log_path = png_path + ".gnuplot.log";
  FILE* gnuplot = popen(absl::StrCat("gnuplot >", ShellQuoted(log_path), " 2>&1").c_str(), "w");
  if (gnuplot == nullptr) return absl::UnavailableError("cannot start gnuplot");
  std::fwrite(script.data(), 1, script.size(), gnuplot);
  const int status = pclose(gnuplot);
  const std::string log = ReadWhole(log_path).value_or("");
  std::remove(log_path.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127) {
    return absl::UnavailableError(
        "gnuplot is not installed (Debian: gnuplot-nox; tools/setup.sh installs it)");
  }
  struct stat drawn;
  if (WEXITSTATUS(status) != 0 || stat(png_path.c_str(), &drawn) != 0 || drawn.st_size == 0) {
    return absl::InternalError(absl::StrCat("gnuplot did not draw ", png_path, " (exit ",
                                            WEXITSTATUS(status), "): ", log));
  }
  return absl::OkStatus();
}

}  // namespace zcoll
