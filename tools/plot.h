// Plots of benchmark times: log-log time against message size, one line per library,
// one panel per collective, drawn by gnuplot (Debian's gnuplot-nox) into a PNG.
// zcoll_bench --plot draws its own rows; compare_peers.sh hands its rows (zcoll's and
// the peers') to zcoll_bench --plot-csv.

#ifndef ZCOLL_TOOLS_PLOT_H_
#define ZCOLL_TOOLS_PLOT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zcoll {

struct TimedRow {
  std::string library;  // "zcoll", "openmpi", "mpich"
  std::string coll;     // "allreduce", ...
  int ranks = 0;
  size_t bytes = 0;
  double usec = 0;
};

// Rows of `library,coll,ranks,bytes,usec` (compare_peers.sh's and run_peers.sh's
// format); a header line starting with "library" or "impl" is skipped. A line of
// another shape is an error naming its number.
absl::StatusOr<std::vector<TimedRow>> ParseTimedRows(absl::string_view csv);

// ParseTimedRows of the file at `path`; an error names the file.
absl::StatusOr<std::vector<TimedRow>> ReadTimedRows(const std::string& path);

// The gnuplot script that draws `rows` (panels in the order collectives first appear,
// lines in the order libraries first appear) under `title` into `png_path`.
std::string PlotScript(const std::vector<TimedRow>& rows, absl::string_view title,
                       absl::string_view png_path);

// Runs gnuplot on PlotScript. Fails, saying so, when gnuplot is not installed
// (tools/setup.sh installs gnuplot-nox) or draws nothing.
absl::Status PlotTimes(const std::vector<TimedRow>& rows, absl::string_view title,
                       const std::string& png_path);

}  // namespace zcoll

#endif  // ZCOLL_TOOLS_PLOT_H_
