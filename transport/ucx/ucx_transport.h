// The UCX provider (ucp: tagged messages and RMA with packed rkeys).
//
// Written for the transports of InfiniBand clusters (rc, dc, ud) and run here with
// posix, cma, self and tcp. One ucp context, one single-threaded worker and one
// endpoint per peer. Endpoints to other hosts use UCX's peer error handling; peers on
// this host are watched through pidfds, because peer error handling would exclude
// UCX's shared-memory transports.
//
// Mapping of the Transport verbs:
//   send/recv     ucp_tag_send_nbx / ucp_tag_recv_nbx. UCX tags carry no source, so
//                 the 64-bit UCX tag holds the caller's 40-bit tag, the sender's
//                 rank (22 bits) and a notification bit, and receives match all of
//                 it;
//   put/get       ucp_put_nbx / ucp_get_nbx, then (put) ucp_ep_flush_nbx so the data
//                 is visible remotely, then a tagged notification message; the
//                 operation completes once the notification is sent.
// Peers on this host are also watched through pidfds.

#ifndef ZCOLL_TRANSPORT_UCX_UCX_TRANSPORT_H_
#define ZCOLL_TRANSPORT_UCX_UCX_TRANSPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/transport.h"

namespace zcoll {

// `transports` restricts UCX to a UCX_TLS list ("tcp", "posix,cma,self", "rc,ud");
// empty keeps UCX's own choice (the UCX_TLS environment variable, if set).
absl::StatusOr<std::unique_ptr<Transport>> CreateUcxTransport(absl::string_view transports,
                                                              int rank, int size);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_UCX_UCX_TRANSPORT_H_
