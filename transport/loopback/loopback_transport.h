// The loopback provider: ranks are threads of one process, joined by a LoopbackFabric.
//
// Used by unit tests of the executor and the collectives, which then run without
// sockets or shared memory. Semantics are those of a rendezvous transport: a send
// completes when its receive has been matched and the data copied, so a schedule
// that only works with eager buffering deadlocks here as it would on a real fabric
// for large messages. Puts and gets copy at once. A rank "dies" when its Transport
// is destroyed: its pending operations end with Aborted and its peers' operations
// with it end with Unavailable.
//
// Thread safety: the fabric is shared by all ranks and locked internally; each
// rank's Transport is used by one thread, as every Transport.

#ifndef ZCOLL_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_
#define ZCOLL_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace zcoll {

class LoopbackFabric {
 public:
  // A fabric for `size` ranks; must outlive every Transport made from it.
  static std::shared_ptr<LoopbackFabric> Create(int size);

  virtual ~LoopbackFabric() = default;

  // The Transport of `rank`; at most one per rank.
  virtual absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(int rank) = 0;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_LOOPBACK_LOOPBACK_TRANSPORT_H_
