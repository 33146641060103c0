// Per-node communicators with Split: the ranks of each node get a communicator of
// their own (colour = node), and each node's first rank joins a communicator of the
// node leaders (the others pass kUndefinedColor and get none, MPI_UNDEFINED's
// role). A hierarchical sum: within the node, then across the leaders, then back.
// (zcoll's node_levels algorithms do this inside one Allreduce; this shows the API.)
//
//   bazel run //tools:zcoll_run -- -n 6 --nodes 3 bazel-bin/examples/per_node

#include <cstdio>
#include <optional>

#include "zcoll/zcoll.h"

int main() {
  absl::StatusOr<zcoll::Communicator> world = zcoll::Communicator::Create({});
  if (!world.ok()) {
    std::fprintf(stderr, "Create: %s\n", world.status().ToString().c_str());
    return 1;
  }
  const int rank = world->rank();
  // Every rank knows every rank's node (emulated nodes under zcoll_run --nodes).
  const int node = world->topology().node_of(rank);
  // Key = rank: the node's ranks keep their order.
  absl::StatusOr<std::optional<zcoll::Communicator>> local = world->Split(node, rank);
  if (!local.ok()) {
    std::fprintf(stderr, "rank %d: Split: %s\n", rank, local.status().ToString().c_str());
    return 1;
  }
  zcoll::Communicator& node_comm = **local;
  const bool leader = node_comm.rank() == 0;
  absl::StatusOr<std::optional<zcoll::Communicator>> leaders =
      world->Split(leader ? 0 : zcoll::kUndefinedColor, rank);
  if (!leaders.ok()) {
    std::fprintf(stderr, "rank %d: Split: %s\n", rank, leaders.status().ToString().c_str());
    return 1;
  }
  // A value per rank; its sum over the job is size*(size-1)/2.
  int64_t value = rank, node_sum = 0, total = 0;
  absl::Status status =
      node_comm.Reduce<int64_t>(absl::MakeConstSpan(&value, 1), absl::MakeSpan(&node_sum, 1),
                                zcoll::PredefinedOp::kSum, /*root=*/0);
  if (status.ok() && leader) {
    status = (*leaders)->Allreduce<int64_t>(absl::MakeConstSpan(&node_sum, 1),
                                            absl::MakeSpan(&total, 1), zcoll::PredefinedOp::kSum);
  }
  if (status.ok()) status = node_comm.Bcast<int64_t>(absl::MakeSpan(&total, 1), 0);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.ToString().c_str());
    return 1;
  }
  const int64_t size = world->size();
  const bool right = total == size * (size - 1) / 2;
  std::printf("rank %d on node %d (rank %d of %d there%s): total %lld: %s\n", rank, node,
              node_comm.rank(), node_comm.size(), leader ? ", its leader" : "",
              static_cast<long long>(total), right ? "ok" : "WRONG");
  return right ? 0 : 1;
}
