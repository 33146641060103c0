// Buffers allocated through zcoll (Communicator::AllocateBuffer, MPI_Alloc_mem's role),
// which the node's other processes map into their own address space, so that the node
// engine reads and writes them with plain loads and stores: reductions run the SIMD
// kernels straight over a peer's memory, a copy is one memcpy, and nothing goes
// through process_vm_readv or an intermediate buffer.
//
// Each buffer is its own memory file (memfd_create): a header page (which identifies
// it) followed by the caller's bytes. The node engine records, with each address it
// publishes, which buffer holds it (a BufferRef: the file's descriptor number in the
// owner and a process-unique serial). A peer opens the file through
// /proc/<pid>/fd/<fd> (the same permission as process_vm_readv) once, maps it, checks
// the header's serial, and keeps the mapping for later calls. Using one is each
// reader's own choice (it falls back on process_vm_readv when it cannot map), so ranks
// need not agree on it, and a buffer that is not zcoll's keeps working as before.
//
// Lifetime: a file lives while its owner keeps it or any process maps it, so a peer's
// mapping never points at freed memory; a reader holds its mapping (shared) for the
// whole call that uses it. Each process keeps at most kMappedBuffersPerPeer mappings
// of each peer's buffers and kMappedPeerBuffers in all (least recently used dropped
// first), and drops a peer's mapping as soon as it sees that the peer's descriptor now
// holds another buffer; until then a freed peer buffer's pages stay allocated. (A node
// engine execution also keeps the mapping of each peer's last buffer of each kind
// for its next call, which then takes no lock: NodeExecution::Mapped.)

#ifndef ZCOLL_COLLECTIVES_SHARED_BUFFERS_H_
#define ZCOLL_COLLECTIVES_SHARED_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zcoll {

// Which zcoll buffer of its owner an address lies in: serial 0 for none.
struct BufferRef {
  uint32_t fd = 0;
  uint32_t serial = 0;
  explicit operator bool() const { return serial != 0; }
};

// A peer's buffer mapped into this process.
class PeerBufferMapping {
 public:
  PeerBufferMapping(char* base, size_t mapped_bytes, uint64_t owner_data, size_t data_bytes)
      : base_(base),
        mapped_bytes_(mapped_bytes),
        owner_data_(owner_data),
        data_bytes_(data_bytes) {}
  ~PeerBufferMapping();
  PeerBufferMapping(const PeerBufferMapping&) = delete;
  PeerBufferMapping& operator=(const PeerBufferMapping&) = delete;

  // Here, the bytes [address, address + bytes) of the owner's address space; null if
  // they are not all inside this buffer.
  char* Translate(uint64_t address, size_t bytes) const;

 private:
  char* base_;
  size_t mapped_bytes_;
  uint64_t owner_data_;  // where the data starts in the owner's address space
  size_t data_bytes_;
};

// How many buffers of one peer process a process keeps mapped, and how many of all its
// peers'. A node engine call maps up to three buffers of each peer (what it publishes,
// its result, its destination), every call again: were the bound below what a node's
// calls use, least-recently-used order would drop each mapping just before its next
// use (until 2026-11-29 one bound of 64 for all: on 40 ranks a 256 KiB allreduce of
// AllocateBuffer buffers mapped and unmapped every peer's two buffers in every call,
// 54 ms against 3.2 with ordinary buffers; README.md, "Zero copy"). The bound of all is for the
// mappings of gone processes, which only it drops.
inline constexpr size_t kMappedBuffersPerPeer = 16;
inline constexpr size_t kMappedPeerBuffers = 4096;

// Allocates `bytes` (> 0) of memory the node's peers can map: page aligned, zeroed.
absl::StatusOr<void*> AllocateSharedBuffer(size_t bytes);
// Frees what AllocateSharedBuffer returned: an error for any other pointer.
absl::Status FreeSharedBuffer(void* data);
// The zcoll buffer of this process that holds all of [data, data + bytes), if any.
BufferRef FindSharedBuffer(const void* data, size_t bytes);
// Process `pid`'s buffer `ref`, mapped here (once; later calls share the mapping); null
// if it cannot be (the process is gone, the permission is missing, the descriptor
// now holds another buffer): then the caller copies through process_vm_readv.
std::shared_ptr<const PeerBufferMapping> MapPeerBuffer(uint32_t pid, BufferRef ref);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_SHARED_BUFFERS_H_
