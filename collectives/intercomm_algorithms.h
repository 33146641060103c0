// The intercommunicator collectives' schedules (MPI-4.1 chapter 6 on
// intercommunicators), pure functions like the intracommunicator algorithms
// (algorithms.h): arguments and a rank -> Schedule.
//
// The schedules run on the intercommunicator's bridge, one communicator over both
// groups: group A's ranks are its ranks 0..|A|-1, group B's follow (A is the group
// holding the lower job rank, so both sides number the bridge alike). A rank's
// "local" group is its own, "remote" the other; each group's leader is its rank 0.
//
// Shapes (every reduction in the contributing group's canonical rank order: a
// binomial tree rooted at the group's rank 0 over its ranks in order, children
// combined in increasing order):
//   reduce        the non-root group reduces to its leader, which sends the result to
//                 the root (kRoot); the root group's other ranks (kProcNull) do nothing
//   bcast         the root sends to the other group's leader, which broadcasts it
//                 down a binomial tree
//   allreduce     each group reduces to its leader; the leaders swap results and
//                 broadcast the other group's result in their own group
//   reduce_scatter(_block)  as allreduce up to the swap; each leader then scatters
//                 the other group's result over its own group (its counts)
//   gather(v), scatter(v)   the root to or from every rank of the other group
//   allgather(v), alltoall(v)  every rank to and from every rank of the other group
//   barrier       each group's arrivals up a tree to its leader, the leaders swap,
//                 and the release goes down each tree
//
// Buffers (elements of the call's type), this rank's:
//   collective            kSend                              kRecv
//   reduce                the contribution (count)           root: the result (count)
//   allreduce             the contribution (count)           the result (count)
//   reduce_scatter_block  local size * count                 count
//   reduce_scatter        sum(counts), counts: local group's counts[rank]
//   scatter(v)            root: remote size blocks           count (non-root group)
//   gather(v)             count (non-root group)             root: remote size blocks
//   bcast                 (unused)                           the vector
//   allgather             count                              remote size * count
//   allgatherv            count                              remote blocks at displs
//   alltoall              remote size * count                remote size * count
//   alltoallv             blocks at send_displs              blocks at recv_displs

#ifndef ZCOLL_COLLECTIVES_INTERCOMM_ALGORITHMS_H_
#define ZCOLL_COLLECTIVES_INTERCOMM_ALGORITHMS_H_

#include <cstddef>
#include <vector>

#include "collectives/algorithms.h"
#include "core/group.h"
#include "core/schedule.h"

namespace zcoll {

// MPI_ROOT: what the root passes as `root` in a rooted intercommunicator collective
// (its group's other ranks pass kProcNull, core/group.h; the other group passes the
// root's rank in the root's group).
inline constexpr int kRoot = -3;

struct IntercommArgs {
  Collective collective = Collective::kBarrier;
  int local_size = 1;
  int remote_size = 1;
  // This rank's group is A (its ranks come first on the bridge).
  bool local_is_first = true;
  // Rooted collectives: kRoot, kProcNull, or the root's rank in the remote group.
  int root = kProcNull;
  size_t count = 0;
  // reduce_scatter: the local group's counts. scatterv (root): the remote ranks'
  // counts and displs. gatherv (root): likewise. allgatherv: the remote ranks' blocks
  // (counts, displs). alltoallv: counts/displs to send to each remote rank, and
  // recv_counts/recv_displs to receive from each.
  std::vector<size_t> counts;
  std::vector<size_t> displs;
  std::vector<size_t> recv_counts;
  std::vector<size_t> recv_displs;

  int bridge_size() const { return local_size + remote_size; }
  friend bool operator==(const IntercommArgs&, const IntercommArgs&) = default;
  // Bridge ranks of the local group's rank `i` and the remote group's rank `j`.
  int LocalOnBridge(int i) const { return local_is_first ? i : remote_size + i; }
  int RemoteOnBridge(int j) const { return local_is_first ? local_size + j : j; }
};

// This rank's (`local_rank` of its group) schedule, in bridge ranks.
Schedule IntercommSchedule(const IntercommArgs& args, int local_rank);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_INTERCOMM_ALGORITHMS_H_
