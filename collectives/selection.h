// Which algorithm runs a collective: one declarative table (docs/design.md, "A call, end to end").
//
// The first rule of the collective whose limits contain the call and whose
// algorithm can run it wins. The choice sees only SelectionInputs, each the same on
// every rank of a call (the agreed message size, communicator size, commutativity,
// the number of nodes), so all ranks choose alike; a collective without an agreed
// message size (scatterv, gatherv, alltoallv) may have no rule limited by size.
// ZCOLL_ALGO_<COLL>=name (e.g. ZCOLL_ALGO_REDUCE=binomial) or Communicator::SetAlgorithm forces
// one; `zcoll_info --algorithms` prints the table.

#ifndef ZCOLL_COLLECTIVES_SELECTION_H_
#define ZCOLL_COLLECTIVES_SELECTION_H_

#include <cstddef>
#include <limits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "core/topology.h"

namespace zcoll {

struct SelectionRule {
  Collective collective;
  absl::string_view algorithm;
  // The rule applies to messages (SelectionInputs::bytes) up to this size and
  // to communicators of at least min_ranks and at most max_ranks ranks.
  size_t max_bytes = std::numeric_limits<size_t>::max();
  int min_ranks = 1;
  int max_ranks = std::numeric_limits<int>::max();
  // And to topologies of at least this many nodes (two-level algorithms).
  int min_nodes = 1;
  // And to messages of at least this size (a call without an agreed size matches
  // only rules without a size limit either way).
  size_t min_bytes = 0;
  // Only where the node engine's node is not oversubscribed (more of the job's ranks
  // than cores: SelectionInputs::node_oversubscribed).
  bool not_oversubscribed = false;
};

absl::Span<const SelectionRule> SelectionTable();

// The table's choice for a call.
const Algorithm& SelectAlgorithm(const SelectionInputs& inputs);

// ZCOLL_ALGO_<COLL> for `collective`, read once per process: null when unset;
// NotFound (naming the variable) for a name the collective does not have.
const absl::StatusOr<const Algorithm*>& AlgorithmFromEnvironment(Collective collective);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_SELECTION_H_
