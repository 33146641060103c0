// Whether a test's long sweeps run a sample of their cases: ZCOLL_SAMPLED_SWEEPS=1,
// which .ci/run sets for its AddressSanitizer pass. The same sweeps run whole in the
// plain build of the same .ci/run, so the sample checks memory safety on every code
// path (each algorithm, every rank count to 9 and around every power of two) and
// leaves the exhaustive counting to the plain build, where it runs several times
// faster (selection_agreement_test whole: 12 s plain, 89 s under ASan).
// A test that samples prints what it left out.

#ifndef ZCOLL_TESTING_SAMPLED_SWEEPS_H_
#define ZCOLL_TESTING_SAMPLED_SWEEPS_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace zcoll::testing {

inline bool SampledSweeps() {
  const char* value = std::getenv("ZCOLL_SAMPLED_SWEEPS");
  return value != nullptr && std::string(value) == "1";
}

// The rank counts 1..most, or under SampledSweeps() every count to 9 and each power
// of two from 16 with its neighbours (17 counts of 64), printing which.
inline std::vector<int> SweepRankCounts(int most) {
  std::vector<int> counts;
  if (!SampledSweeps()) {
    for (int count = 1; count <= most; ++count) counts.push_back(count);
    return counts;
  }
  for (int count = 1; count <= most && count <= 9; ++count) counts.push_back(count);
  for (int power = 16; power <= most + 1; power *= 2) {
    for (int count : {power - 1, power, power + 1}) {
      if (count > 9 && count <= most) counts.push_back(count);
    }
  }
  std::printf("ZCOLL_SAMPLED_SWEEPS=1: %zu rank counts of the %d, not every one\n", counts.size(),
              most);
  return counts;
}

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_SAMPLED_SWEEPS_H_
