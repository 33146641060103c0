// Each rank's own view of one collective call, for tests that generate every rank's
// schedule from one description of the call.
//
// A call is described as one CollectiveArgs holding what every rank passes (for the
// v-collectives every rank's counts and displacements); RankView cuts out what rank r
// itself passes, as Communicator's collectives do: a scatterv's or gatherv's counts
// are the root's only and each rank's count is its own block, an allgatherv rank's
// count is its own block, an alltoallv rank's counts are its row (sends) and column
// (receives) of the call's matrix, and only the ranks that may pass kInPlace keep
// `in_place`.

#ifndef ZCOLL_TESTING_RANK_VIEWS_H_
#define ZCOLL_TESTING_RANK_VIEWS_H_

#include <cstddef>
#include <functional>

#include "collectives/algorithms.h"

namespace zcoll::testing {

// The elements rank `from` sends rank `to` in an alltoallv.
using PairCounts = std::function<size_t(int from, int to)>;

// Rank `rank`'s arguments of `call`. Alltoallv's displacements are laid out by
// ReversedWithGaps (block_layouts.h).
CollectiveArgs RankView(const CollectiveArgs& call, int rank, const PairCounts& pair_counts);

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_RANK_VIEWS_H_
