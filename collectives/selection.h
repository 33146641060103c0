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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "core/topology.h"

namespace zcoll {

enum class Oversubscription { kEither, kNotOversubscribed, kOversubscribed };

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
  // Where ranks outnumber cores: either way; only where they do not (neither the node
  // engine's node, SelectionInputs::node_oversubscribed, nor, across nodes, any host of
  // the job, SelectionInputs::hosts_oversubscribed: the rules from the model, for a
  // cluster); or only where the node engine's node has more of the job's ranks than
  // cores (which implies a node engine: the rules measured on this 2-core machine).
  Oversubscription oversubscription = Oversubscription::kEither;
};

absl::Span<const SelectionRule> SelectionTable();

// Whether `rule`'s limits contain the call (not whether its algorithm can run it).
bool RuleFits(const SelectionRule& rule, const SelectionInputs& inputs);

// The choice for a call: the first fitting rule of `tuned` whose algorithm can run the
// call, else the table's.
const Algorithm& SelectAlgorithm(const SelectionInputs& inputs,
                                 absl::Span<const SelectionRule> tuned);
// With ZCOLL_TUNING's rules (none when it is unset or cannot be read).
const Algorithm& SelectAlgorithm(const SelectionInputs& inputs);

// A tuning table: rules tried before the built-in table's (ZCOLL_TUNING=FILE; zcoll_sim
// --table derives one from a machine profile). One rule a line, '#' to the end of a line
// a comment:
//   COLLECTIVE ALGORITHM [min_bytes=N] [max_bytes=N] [min_ranks=N] [max_ranks=N]
//                        [min_nodes=N] [not_oversubscribed | oversubscribed]
// e.g. "allreduce rabenseifner min_bytes=65537 min_ranks=128 min_nodes=2". The rules'
// algorithm names point at the algorithms' own (static) names. InvalidArgument naming
// `origin` and the line for an unknown collective, algorithm or key, a bad number, an
// empty range, or a size limit on a collective without an agreed size.
absl::StatusOr<std::vector<SelectionRule>> ParseTuningTable(absl::string_view text,
                                                            absl::string_view origin);
// One rule as ParseTuningTable reads it back.
std::string FormatTuningRule(const SelectionRule& rule);

// A hash of `rules` that is the same in every process (FNV-1a of their formatted
// lines), for ranks to check that they read the same table.
uint64_t TuningFingerprint(absl::Span<const SelectionRule> rules);

// ZCOLL_TUNING's rules, read once per process: empty when it is unset; an error
// naming the variable and the file when the file cannot be read or parsed.
const absl::StatusOr<std::vector<SelectionRule>>& TuningFromEnvironment();

// ZCOLL_ALGO_<COLL> for `collective`, read once per process: null when unset;
// NotFound (naming the variable) for a name the collective does not have.
const absl::StatusOr<const Algorithm*>& AlgorithmFromEnvironment(Collective collective);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_SELECTION_H_
