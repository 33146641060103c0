// Creates Transports from provider names, as ZCOLL_PROVIDER and tests spell them:
//
//   shm            zcoll's native shared-memory transport (one host)
//   ofi            libfabric, the first RDM provider that opens here
//   ofi:NAME       libfabric provider NAME: shm, tcp (tcp;ofi_rxm), verbs
//                  (verbs;ofi_rxm), efa, cxi, or any name fi_info lists
//   ucx            UCX with its own choice of transports
//   ucx:TLS        UCX restricted to TLS (UCX_TLS syntax: tcp, posix,cma,self, rc, ...)
//   LOCAL+NETWORK/K  a routed transport over K nodes, ranks placed in blocks:
//                  LOCAL within a node, NETWORK between nodes ("shm+ofi:tcp/2");
//                  for tests and benchmarks of emulated multi-node jobs
//
// "loopback" is not created here: its transports come from a LoopbackFabric.
// A name that is unknown or cannot work here is an error whose sentence lists the
// providers this machine offers.

#ifndef ZCOLL_TRANSPORT_TRANSPORT_FACTORY_H_
#define ZCOLL_TRANSPORT_TRANSPORT_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/transport.h"

namespace zcoll {

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(absl::string_view provider, int rank,
                                                           int size);

// The transport of a job spread over nodes: `local_provider` between ranks of one
// node and `network_provider` between nodes, per `node_of_rank`. A single-node job
// uses only the local provider, and does not resolve the network one ("auto" and "ofi"
// as ProvidersFromEnvironment resolves them, only for a rank with a peer on another
// node); a rank alone on its node only the network one.
absl::StatusOr<std::unique_ptr<Transport>> CreateNodeAwareTransport(
    absl::string_view local_provider, absl::string_view network_provider, int rank, int size,
    std::vector<int> node_of_rank);

// The providers a job's transport is built from, as the user configured them:
// ZCOLL_LOCAL_PROVIDER between ranks of a node (default shm) and ZCOLL_PROVIDER
// between nodes (default auto). "auto" and, for the network role, "ofi" resolve to
// the fastest provider that opens here: libfabric cxi, efa, UCX on an RDMA device
// (rc/dc/ud), libfabric verbs, then TCP (ofi:tcp, ucx:tcp). A choice that resolves
// to nothing is an error naming what is available.
struct ProviderChoice {
  std::string local;
  std::string network;
};
absl::StatusOr<ProviderChoice> ProvidersFromEnvironment();

// CreateNodeAwareTransport with ZCOLL_LOCAL_PROVIDER and ZCOLL_PROVIDER.
absl::StatusOr<std::unique_ptr<Transport>> CreateJobTransport(int rank, int size,
                                                              std::vector<int> node_of_rank);

// Provider names that open on this machine (probed: libfabric providers and UCX
// transports that are present).
std::vector<std::string> AvailableProviders();

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_TRANSPORT_FACTORY_H_
