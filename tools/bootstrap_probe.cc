// A rank program for zcoll_run's tests: joins the job through the environment,
// gathers every rank's name, and (when told) fails in a chosen way.
//
//   bootstrap_probe [--exit-rank=R --exit-code=C] [--kill-rank=R]

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config.h"
#include "transport/bootstrap/bootstrap.h"

int main(int argc, char** argv) {
  int exit_rank = -1, exit_code = 0, kill_rank = -1;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view argument = argv[i];
    bool parsed = false;
    if (absl::StartsWith(argument, "--exit-rank=")) {
      parsed = absl::SimpleAtoi(argument.substr(12), &exit_rank);
    } else if (absl::StartsWith(argument, "--exit-code=")) {
      parsed = absl::SimpleAtoi(argument.substr(12), &exit_code);
    } else if (absl::StartsWith(argument, "--kill-rank=")) {
      parsed = absl::SimpleAtoi(argument.substr(12), &kill_rank);
    }
    if (!parsed) {
      std::fprintf(stderr, "bootstrap_probe: bad argument '%s'\n", argv[i]);
      return 2;
    }
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<zcoll::Bootstrap>> bootstrap =
      zcoll::BootstrapFromEnvironment(deadline);
  if (!bootstrap.ok()) {
    std::fprintf(stderr, "%s\n", bootstrap.status().ToString().c_str());
    return 1;
  }
  const int rank = (*bootstrap)->rank();
  absl::StatusOr<std::vector<std::string>> names =
      (*bootstrap)->AllGather(absl::StrCat("rank", rank), deadline);
  if (!names.ok()) {
    std::fprintf(stderr, "%s\n", names.status().ToString().c_str());
    return 1;
  }
  std::printf("rank %d of %d on %s emulated nodes: gathered %s\n", rank, (*bootstrap)->size(),
              zcoll::EnvironmentValue("ZCOLL_EMULATE_NODES").c_str(),
              absl::StrJoin(*names, ",").c_str());
  std::fflush(stdout);
  if (rank == exit_rank) return exit_code;
  if (rank == kill_rank) raise(SIGKILL);
  // The others wait for everyone: a failed rank leaves them here until the launcher
  // stops them.
  const absl::Status barrier = (*bootstrap)->Barrier(deadline);
  if (!barrier.ok()) {
    std::fprintf(stderr, "%s\n", barrier.ToString().c_str());
    return 1;
  }
  return 0;
}
