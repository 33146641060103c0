// One Transport for a job that spans nodes: peers on this rank's node go through a
// local transport (zcoll's shm by default), the others through a network transport
// (ZCOLL_PROVIDER: ofi, ofi:verbs, ucx, ...).
//
// Which node a rank is on comes from the caller (the job's Topology), not from host
// names, so emulated nodes on one machine are routed exactly like real ones. Both
// transports are created for the whole job and connected only to the peers they
// serve. Registrations are made with both, and a packed key carries both keys; an
// importer keeps the one for the route to the owner.

#ifndef ZCOLL_TRANSPORT_ROUTED_TRANSPORT_H_
#define ZCOLL_TRANSPORT_ROUTED_TRANSPORT_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace zcoll {

// `node_of_rank[r]` is rank r's node. `local` may be null when this rank is alone
// on its node, `network` when the job has one node; both belong to the same rank
// and job size.
absl::StatusOr<std::unique_ptr<Transport>> CreateRoutedTransport(std::unique_ptr<Transport> local,
                                                                 std::unique_ptr<Transport> network,
                                                                 std::vector<int> node_of_rank);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_ROUTED_TRANSPORT_H_
