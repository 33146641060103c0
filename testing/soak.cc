// soak: one rank of a long run of random collectives (testing/random_collectives.h),
// every result checked against the reference; started by zcoll_run:
//
//   zcoll_run -n 4 --nodes 4 -- soak --ops 100000 --seed 7
//
// Every rank draws the same calls. A mismatch or an error ends the rank with exit
// code 1 and a line saying what differed. Rank 0 reports progress and, at the end,
// the largest resident set over the ranks at each tenth of the run; the run fails
// (exit code 2) if it grew after the first tenth by more than --rss-growth-mb, which
// is how a leak per call shows (allocations of the largest calls are reached early:
// counts are log-uniform). Each rank first gives the allocator's free pages back
// (malloc_trim): otherwise the sample says which buffer sizes the last calls freed
// into the heap (tens of MiB either way at 2^20 elements), not what is held.

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "testing/random_collectives.h"
#include "testing/sanitizers.h"

namespace zcoll::testing {
namespace {

struct SoakOptions {
  uint64_t ops = 1000;
  uint64_t seed = 1;
  size_t max_elements = size_t{1} << 20;
  double rss_growth_mb = 16;
};

bool Parse(int argc, char** argv, SoakOptions& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::vector<std::string> parts = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    std::string value;
    if (parts.size() == 2) {
      value = parts[1];
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    const std::string& name = parts[0];
    bool ok = false;
    if (name == "--ops") ok = absl::SimpleAtoi(value, &options.ops);
    if (name == "--seed") ok = absl::SimpleAtoi(value, &options.seed);
    if (name == "--max-elements") ok = absl::SimpleAtoi(value, &options.max_elements);
    if (name == "--rss-growth-mb") ok = absl::SimpleAtod(value, &options.rss_growth_mb);
    if (!ok) {
      std::fprintf(stderr,
                   "soak: bad argument %s\nusage: soak [--ops N] [--seed S] [--max-elements E] "
                   "[--rss-growth-mb M]\n",
                   arg.c_str());
      return false;
    }
  }
  return true;
}

int Run(const SoakOptions& options) {
  absl::StatusOr<Communicator> created = Communicator::Create({});
  if (!created.ok()) {
    std::fprintf(stderr, "soak: Create: %s\n", created.status().ToString().c_str());
    return 1;
  }
  Communicator& comm = *created;
  RandomCalls calls(options.seed, comm.size(), options.max_elements);
  const absl::Time start = absl::Now();
  std::vector<uint64_t> rss_by_tenth;  // the largest over the ranks, KiB
  for (uint64_t done = 0; done < options.ops; ++done) {
    const RandomCall call = calls.Next();
    const CallOutcome outcome = RunRandomCall(comm, call, /*check=*/true);
    if (!outcome.status.ok()) {
      std::printf("soak: call %llu (%s) failed: %s\n", static_cast<unsigned long long>(done),
                  call.Describe().c_str(), outcome.status.ToString().c_str());
      return 1;
    }
    if (!outcome.mismatch.empty()) {
      std::printf("soak: MISMATCH at call %llu: %s\n", static_cast<unsigned long long>(done),
                  outcome.mismatch.c_str());
      return 1;
    }
    // At each tenth: the ranks' largest resident set (a collective itself).
    if ((done + 1) * 10 / options.ops != done * 10 / options.ops) {
      malloc_trim(0);
      uint64_t rss = ResidentKiB(), largest = 0;
      const absl::Status status =
          comm.Allreduce(&rss, &largest, 1, DataType::kUint64, PredefinedOp::kMax);
      if (!status.ok()) {
        std::printf("soak: the RSS Allreduce failed: %s\n", status.ToString().c_str());
        return 1;
      }
      rss_by_tenth.push_back(largest);
      if (comm.rank() == 0) {
        std::printf("soak: %llu calls, %.0f s, largest RSS %.1f MiB\n",
                    static_cast<unsigned long long>(done + 1),
                    absl::ToDoubleSeconds(absl::Now() - start), largest / 1024.0);
        std::fflush(stdout);
      }
    }
  }
  if (comm.rank() != 0) return 0;
  std::string tenths;
  for (uint64_t kib : rss_by_tenth) absl::StrAppend(&tenths, " ", kib / 1024);
  const double growth_mb =
      rss_by_tenth.size() < 2
          ? 0
          : (static_cast<double>(rss_by_tenth.back()) - static_cast<double>(rss_by_tenth.front())) /
                1024;
  std::printf(
      "soak: %llu calls on %d ranks, 0 mismatches, %.0f s; largest RSS by tenth (MiB):%s; growth "
      "after the first tenth %.1f MiB (allowed %.1f)\n",
      static_cast<unsigned long long>(options.ops), comm.size(),
      absl::ToDoubleSeconds(absl::Now() - start), tenths.c_str(), growth_mb, options.rss_growth_mb);
  if (testing::kMemoryFiguresSkipped != nullptr) {
    std::printf("soak: RSS growth %s\n", testing::kMemoryFiguresSkipped);
    return 0;
  }
  return growth_mb > options.rss_growth_mb ? 2 : 0;
}

}  // namespace
}  // namespace zcoll::testing

int main(int argc, char** argv) {
  zcoll::testing::SoakOptions options;
  if (!zcoll::testing::Parse(argc, argv, options)) return 64;
  return zcoll::testing::Run(options);
}
