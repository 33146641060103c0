// What a Communicator holds (internal to collectives/: communicator.cc makes and
// splits communicators, collectives.cc runs their collectives).

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "collectives/algorithms.h"
#include "collectives/communicator.h"
#include "collectives/communicator_transport.h"
#include "collectives/executor.h"
#include "core/topology.h"
#include "transport/bootstrap/bootstrap.h"

namespace zcoll {

// What a plan was made for; a call with equal arguments and algorithm reuses it.
struct PlanKey {
  const Algorithm* algorithm = nullptr;
  CollectiveArgs args;

  friend bool operator==(const PlanKey&, const PlanKey&) = default;
};

struct Communicator::State {
  // Only the job's first communicator uses it, but it lives as long as the job's
  // communicators: a PMIx client stays initialised while the process is in the job.
  std::shared_ptr<Bootstrap> bootstrap;
  std::unique_ptr<CommunicatorTransport> transport;
  Topology topology;
  absl::Duration timeout;

  // Collectives started so far: the sequence number that keeps their tags apart.
  uint64_t collectives_started = 0;
  // Nonblocking collectives not yet completed.
  int in_flight = 0;
  // Algorithms forced by SetAlgorithm (null: the selection table or
  // ZCOLL_ALGO_<COLL>).
  std::array<const Algorithm*, kNumCollectives> forced{};
  // Recently used plans; the least recently used goes when a new one needs room.
  struct CachedPlan {
    PlanKey key;
    std::shared_ptr<const ExecutionPlan> plan;
    uint64_t last_used = 0;  // collectives_started when it was last used
  };
  std::vector<CachedPlan> plans;
  ScratchPool scratch;
  // Executions that finished without error, ready to run another call.
  std::vector<std::shared_ptr<Execution>> idle_executions;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_STATE_H_
