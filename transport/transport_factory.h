// Creates a Transport from a provider name, as ZCOLL_PROVIDER and tests spell it:
//
//   shm            zcoll's native shared-memory transport (same host only)
//   ofi            libfabric, the first RDM provider that opens here
//   ofi:NAME       libfabric provider NAME: shm, tcp (means tcp;ofi_rxm), verbs
//                  (verbs;ofi_rxm), efa, cxi, or any name fi_info lists
//   ucx            UCX with its default transports
//   ucx:TLS        UCX restricted to TLS (UCX_TLS syntax: tcp, posix,cma,self, rc, ...)
//
// "loopback" is not created here: its transports come from a LoopbackFabric.
// An unknown or unusable name is InvalidArgument / Unavailable with a sentence that
// lists what this machine offers.

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

// Provider names that can be created on this machine.
std::vector<std::string> AvailableProviders();

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_TRANSPORT_FACTORY_H_
