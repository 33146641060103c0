// Block layouts for tests of the v-collectives (Scatterv, Gatherv, Allgatherv,
// Alltoallv, ReduceScatter): counts with zeros, displacements out of rank order with
// gaps between blocks, and alltoallv's per-pair counts. The symbolic checks of the
// algorithms and the differential tests use the same ones.

#ifndef ZCOLL_TESTING_BLOCK_LAYOUTS_H_
#define ZCOLL_TESTING_BLOCK_LAYOUTS_H_

#include <cstddef>
#include <vector>

#include "absl/types/span.h"

namespace zcoll::testing {

// Rank r's block holds (7r + base) % (base + 2) elements: varied, some zero.
inline std::vector<size_t> VariedCounts(int size, size_t base) {
  std::vector<size_t> counts(size);
  for (int r = 0; r < size; ++r) counts[r] = (7 * static_cast<size_t>(r) + base) % (base + 2);
  return counts;
}

// Displacements of blocks laid out in reverse rank order, one element apart;
// `extent` (if not null) gets the elements they span.
inline std::vector<size_t> ReversedWithGaps(absl::Span<const size_t> counts,
                                            size_t* extent = nullptr) {
  std::vector<size_t> displs(counts.size());
  size_t at = 0;
  for (size_t r = counts.size(); r-- > 0;) {
    displs[r] = at;
    at += counts[r] + 1;
  }
  if (extent != nullptr) *extent = at;
  return displs;
}

// Displacements of blocks laid end to end in rank order; `extent` as above.
inline std::vector<size_t> PackedInRankOrder(absl::Span<const size_t> counts,
                                             size_t* extent = nullptr) {
  std::vector<size_t> displs(counts.size());
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displs[r] = at;
    at += counts[r];
  }
  if (extent != nullptr) *extent = at;
  return displs;
}

// The elements rank `from` sends rank `to` in an alltoallv: varied, some zero, and
// symmetric, so that the in-place form (where the two must agree) can use it too.
inline size_t PairCount(int from, int to, size_t base) {
  return (3 * static_cast<size_t>(from + to) + base) % (base + 2);
}

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_BLOCK_LAYOUTS_H_
