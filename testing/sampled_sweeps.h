// Whether a test's long sweeps run a sample of their cases (the default) or all of them
// (ZCOLL_WHOLE_SWEEPS=1, which testing/whole_sweeps.sh sets). `bazel test //...` and
// every step of .ci/run run the sample: it still takes every code path (each algorithm,
// every rank count to 9 and around every power of two, and one drawn afresh each run),
// and the whole sweeps cost several CPU minutes (the algorithms' alone: 6
// plain, 18 under ASan) on a 2-core machine with a 40-minute CI budget.
// A test that samples prints what it left out.

#ifndef ZCOLL_TESTING_SAMPLED_SWEEPS_H_
#define ZCOLL_TESTING_SAMPLED_SWEEPS_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace zcoll::testing {

inline bool SampledSweeps() {
  const char* value = std::getenv("ZCOLL_WHOLE_SWEEPS");
  return value == nullptr || std::string(value) != "1";
}

// Prints what a sampled sweep leaves out, in the words every sampled test uses.
inline void PrintSampled(const std::string& what) {
  std::printf("sampled sweep (ZCOLL_WHOLE_SWEEPS=1 runs it whole): %s\n", what.c_str());
}

// The seed of the rank counts a sampled sweep draws, one per process: ZCOLL_SWEEP_SEED
// when set (to repeat a run that failed: every sampled sweep prints its seed), or else
// the clock's, so that runs over time cover the counts no one sample has.
inline uint64_t SweepSeed() {
  static const uint64_t seed = []() -> uint64_t {
    const char* value = std::getenv("ZCOLL_SWEEP_SEED");
    if (value != nullptr && *value != '\0') return std::strtoull(value, nullptr, 10);
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) %
           1000000007;
  }();
  return seed;
}

// Whether the test runs under a sanitizer (ZCOLL_UNDER_SANITIZER=1, which
// --config=asan and --config=tsan set). There a sampled sweep stops at
// kMostSanitizedRanks: what a sanitizer looks for (a stray access, a leak, a race) is in
// the code a schedule of 17 or 33 ranks takes as much as in one of 64, which costs
// several times as much, and the plain run (and ZCOLL_WHOLE_SWEEPS=1) sweeps to the end.
inline bool UnderSanitizer() {
  const char* value = std::getenv("ZCOLL_UNDER_SANITIZER");
  return value != nullptr && std::string(value) == "1";
}
inline constexpr int kMostSanitizedRanks = 33;

// How many rank counts a sampled sweep draws beyond its fixed ones. One: a count above
// 16 costs a symbolic sweep as much as all those to 9 together, and four (then 21
// counts of 64) made the sampled sweeps under ASan twice as long (algorithms_test 215 ->
// 424 s, selection_agreement_test 27 -> 99).
inline constexpr int kDrawnRankCounts = 1;

// The rank counts 1..most, or when sampled every count to 9, each power of two from 16
// with its neighbours, and kDrawnRankCounts more drawn from SweepSeed() (18 counts of
// 64), printing which; under a sanitizer only those to kMostSanitizedRanks (16 counts).
inline std::vector<int> SweepRankCounts(int most) {
  std::vector<int> counts;
  if (!SampledSweeps()) {
    for (int count = 1; count <= most; ++count) counts.push_back(count);
    return counts;
  }
  if (UnderSanitizer() && most > kMostSanitizedRanks) {
    std::printf("sampled sweep under a sanitizer: rank counts to %d, not %d\n", kMostSanitizedRanks,
                most);
    most = kMostSanitizedRanks;
  }
  for (int count = 1; count <= most && count <= 9; ++count) counts.push_back(count);
  for (int power = 16; power <= most + 1; power *= 2) {
    for (int count : {power - 1, power, power + 1}) {
      if (count > 9 && count <= most) counts.push_back(count);
    }
  }
  std::vector<int> others;
  for (int count = 10; count <= most; ++count) {
    if (std::find(counts.begin(), counts.end(), count) == counts.end()) others.push_back(count);
  }
  std::mt19937_64 random(SweepSeed());
  std::string drawn;
  for (int draw = 0; draw < kDrawnRankCounts && !others.empty(); ++draw) {
    const size_t pick = random() % others.size();
    counts.push_back(others[pick]);
    drawn += " " + std::to_string(others[pick]);
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  std::sort(counts.begin(), counts.end());
  std::printf(
      "sampled sweep: %zu rank counts of the %d, of them drawn:%s (ZCOLL_SWEEP_SEED=%llu "
      "draws them again; ZCOLL_WHOLE_SWEEPS=1 runs every count)\n",
      counts.size(), most, drawn.c_str(), static_cast<unsigned long long>(SweepSeed()));
  return counts;
}

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_SAMPLED_SWEEPS_H_
