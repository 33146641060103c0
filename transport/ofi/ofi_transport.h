// The libfabric provider (FI_EP_RDM, reliable datagram endpoints).
//
// Written for the providers of InfiniBand and HPC clusters (verbs;ofi_rxm, efa, cxi)
// and run here on shm and tcp;ofi_rxm. Memory-registration modes are handled as
// fi_getinfo reports them: FI_MR_LOCAL (descriptors for local buffers, from the
// caller's MemoryRegion or a RegistrationCache), FI_MR_VIRT_ADDR (remote addresses
// are virtual addresses, else offsets), FI_MR_PROV_KEY (provider-chosen keys, else
// ours), FI_MR_ALLOCATED, FI_MR_ENDPOINT (registrations bound to the endpoint).
//
// Mapping of the Transport verbs:
//   send/recv     fi_tsend / fi_trecv with FI_DIRECTED_RECV (matched by source and
//                 tag; the provider does eager and rendezvous itself);
//   put/get       fi_writemsg with FI_DELIVERY_COMPLETE (where offered) / fi_read,
//                 then a tagged notification message in a separate tag space; the
//                 operation completes when the notification has been sent.
// Peers on this host are watched through pidfds, so a killed one ends operations
// with Unavailable even on providers (shm) that never report it; other peers are
// declared dead by the provider's connection errors.

#ifndef ZCOLL_TRANSPORT_OFI_OFI_TRANSPORT_H_
#define ZCOLL_TRANSPORT_OFI_OFI_TRANSPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/transport.h"

namespace zcoll {

// `provider` is a libfabric provider name as fi_info prints it ("shm",
// "tcp;ofi_rxm", "verbs;ofi_rxm", "efa"), or empty for the first RDM provider
// that opens.
absl::StatusOr<std::unique_ptr<Transport>> CreateOfiTransport(absl::string_view provider, int rank,
                                                              int size);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_OFI_OFI_TRANSPORT_H_
