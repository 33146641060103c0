// The native shared-memory provider: zcoll's intra-node fast path.
//
// Every rank owns one POSIX shared-memory segment holding one single-producer
// single-consumer ring of cache-line slots per peer (the messages that peer sends
// it) and a pool of send buffers for its own medium-sized messages. A segment is
// about 0.5 MiB plus 4.5 KiB per rank of the job (a ring, and words of split claims).
// Peers map it at Connect; once all have, the owner unlinks its name, so the memory
// disappears with the last process even if some crash (a segment is only left behind
// by a process killed between creating it and its peers attaching; names carry the
// pid so that a launcher can sweep them).
//
// Data paths:
//   - messages of at most 32 bytes travel inside a ring slot; up to eager_bytes the
//     sender copies them into its pool and the receiver copies them out;
//   - larger messages are single-copy: the sender announces its buffer in the ring
//     and the receiver reads it with process_vm_readv (Linux cross-memory attach)
//     straight into the receive buffer, then acknowledges; from split_bytes up the
//     receiver reads the head half while the sender writes the tail half with
//     process_vm_writev, so two cores copy where the sender would otherwise only wait;
//     whoever claims the tail first (a word in the receiver's segment) copies it, so a
//     sender busy with work of its own leaves it to the receiver instead of making it
//     wait;
//   - puts and gets are process_vm_writev / process_vm_readv into and out of the
//     peer's registered region, followed by a notification message;
//   - where a rank may not read a peer's memory (a container's seccomp filter or ptrace
//     policy forbids cross-memory attach: each rank tries once, at Connect, and
//     assumes the peer can no more read its own), or where the options say so, its
//     messages to that peer beyond the eager size go as pieces through the pool, which
//     the receiver copies into the receive buffer as they come, and its puts and gets
//     are pieces the peer copies into or out of its own memory.
// A waiting rank sleeps on a futex in its own segment, which senders ring when they
// publish to a sleeping owner; a killed peer is noticed through its pidfd.
//
// Requirements: all ranks on one host, the same user. Cross-memory attach is used
// where permitted (the transport calls prctl(PR_SET_PTRACER_ANY) for Yama).

#ifndef ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_
#define ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace zcoll {

struct ShmOptions {
  // Messages up to this size are copied into shared memory and out of it (up to 32
  // bytes inside the ring slot, larger ones through the sender's pool); larger
  // ones are read by the receiver in one copy.
  size_t eager_bytes = 8192;
  // Slots (64 bytes each) per ring; a sender with more messages in flight to one
  // peer queues them.
  size_t ring_slots = 64;
  // Send-pool buffers of eager_bytes each, shared by all peers: a rank with more
  // eager messages unread by their receivers queues the rest.
  size_t pool_buffers = 64;
  // Rendezvous messages of at least this size are copied by both sides at once
  // (the receiver reads the head half, the sender writes the tail half unless the
  // receiver has claimed it first); 0 disables.
  size_t split_bytes = 64 * 1024;
  // false: never read or write a peer's memory (process_vm_readv/writev), as where it
  // is not permitted: larger messages, puts and gets go as pieces through the pool.
  bool cross_memory_attach = true;
};

absl::StatusOr<std::unique_ptr<Transport>> CreateShmTransport(int rank, int size,
                                                              const ShmOptions& options = {});

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_SHM_SHM_TRANSPORT_H_
