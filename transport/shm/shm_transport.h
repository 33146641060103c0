// The native shared-memory provider: zcoll's intra-node fast path.
//
// Every rank owns one POSIX shared-memory segment holding one single-producer
// single-consumer ring per peer (the messages that peer sends it). Peers map it at
// Connect; once all have, the owner unlinks its name, so the memory disappears with
// the last process even if some crash (a segment is only left behind by a process
// killed between creating it and its peers attaching; names carry the pid so that a
// launcher can sweep them).
//
// Data paths:
//   - messages of at most kEagerBytes are copied into a ring slot and out of it;
//   - larger messages are single-copy: the sender announces its buffer in the ring
//     and the receiver reads it with process_vm_readv (Linux cross-memory attach)
//     straight into the receive buffer, then acknowledges; from split_bytes up the
//     receiver reads the head while the sender writes the tail with
//     process_vm_writev, so two cores copy (the sender would otherwise only wait);
//   - puts and gets are process_vm_writev / process_vm_readv into and out of the
//     peer's registered region, followed by a notification message.
// A waiting rank sleeps on a futex in its own segment, which senders ring when they
// publish to a sleeping owner; a killed peer is noticed through its pidfd.
//
// Requirements: all ranks on one host, the same user, and cross-memory attach
// permitted (the transport calls prctl(PR_SET_PTRACER_ANY) for Yama; a container
// that forbids process_vm_readv makes large transfers fail with a message saying so).

#ifndef ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_
#define ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace zcoll {

struct ShmOptions {
  // Messages up to this size travel through the ring (two copies); larger ones are
  // read by the receiver in one copy.
  size_t eager_bytes = 8192;
  // Slots per ring; a sender with more messages in flight to one peer queues them.
  size_t ring_slots = 32;
  // Rendezvous messages of at least this size are copied by both sides at once
  // (receiver reads the head, sender writes the tail); 0 disables.
  size_t split_bytes = 64 * 1024;
};

absl::StatusOr<std::unique_ptr<Transport>> CreateShmTransport(int rank, int size,
                                                              const ShmOptions& options = {});

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_
