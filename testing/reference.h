// Naive reference collectives: what every rank's result must be, computed in one
// process from every rank's buffer, the way the MPI standard defines each operation.
//
// The differential tests of the collectives (issue 6) compare each algorithm's
// results with these. Reductions fold in canonical rank order,
// ((a0 op a1) op a2) ... op a(n-1), with the ops/ kernels (tested on their own against
// scalar references), so a non-commutative op's expected result is exact; AVG sums and
// divides once, as the collectives do. Floating results of algorithms that associate
// differently may differ in rounding: tests use values whose sums are exact.
//
// Buffers are bytes, one std::vector<char> per rank; counts are elements of `type`.
// Arguments are checked (InvalidArgument with a sentence) so that a test that builds
// them wrongly says so instead of reading out of bounds.

#ifndef ZCOLL_TESTING_REFERENCE_H_
#define ZCOLL_TESTING_REFERENCE_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/datatype.h"
#include "core/reduce_op.h"

namespace zcoll::testing {

using Bytes = std::vector<char>;
// Indexed by rank.
using RankBytes = std::vector<Bytes>;

// A user op on int64 that is associative but not commutative, for tests of the
// canonical order: it appends the decimal digits of the right operand to the left
// one (12 op 3 = 123), so a result spells the order of its fold. Contributions of
// one digit each keep every fold of up to 18 ranks exact.
ReduceOp DigitsInRankOrder();

// The first `count` elements of every rank's buffer, reduced in rank order (Reduce's
// root result, Allreduce's result on every rank).
absl::StatusOr<Bytes> ReferenceReduce(const ReduceOp& op, DataType type, const RankBytes& inputs,
                                      size_t count);

// Rank r gets elements [c0 + ... + c(r-1), + counts[r]) of the reduction of
// sum(counts) elements (MPI_Reduce_scatter).
absl::StatusOr<RankBytes> ReferenceReduceScatter(const ReduceOp& op, DataType type,
                                                 const RankBytes& inputs,
                                                 absl::Span<const size_t> counts);

// Rank r gets counts[r] elements of the root's buffer starting at element displs[r]
// (MPI_Scatterv; Scatter is equal counts at displacements r * count).
absl::StatusOr<RankBytes> ReferenceScatterv(DataType type, const Bytes& root_send,
                                            absl::Span<const size_t> counts,
                                            absl::Span<const size_t> displs);

// The root gets rank r's first counts[r] elements at element displs[r] of a buffer of
// `recv_count` elements (MPI_Gatherv); elements no rank writes stay as `initial`.
absl::StatusOr<Bytes> ReferenceGatherv(DataType type, const RankBytes& inputs,
                                       absl::Span<const size_t> counts,
                                       absl::Span<const size_t> displs, const Bytes& initial);

// Rank r gets, as block s of `count` elements, block r of rank s's buffer
// (MPI_Alltoall).
absl::StatusOr<RankBytes> ReferenceAlltoall(DataType type, const RankBytes& inputs, size_t count);

// Rank r gets a0 op ... op ar (MPI_Scan); with `exclusive`, a0 op ... op a(r-1) and
// an empty buffer for rank 0, whose result the standard leaves undefined (MPI_Exscan).
absl::StatusOr<RankBytes> ReferenceScan(const ReduceOp& op, DataType type, const RankBytes& inputs,
                                        size_t count, bool exclusive);

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_REFERENCE_H_
