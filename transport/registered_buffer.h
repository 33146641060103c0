// A buffer registered with a transport once, for use in many transfers: the way
// users pre-register memory (as NCCL's user-buffer registration or UCC's mem_map do),
// so that no transfer pays for registering or looking up a registration.
//
//   ASSIGN_OR_RETURN(RegisteredBuffer buffer,
//                    RegisteredBuffer::Allocate(transport, 64 << 20,
//                                               MemoryAccess::kRemoteReadWrite));
//   transport.PostSend(peer, tag, buffer.data(), buffer.size(), &done, &buffer.region());
//
// Allocate owns page-aligned memory; Register wraps the caller's memory, which must
// outlive the RegisteredBuffer. Either way the registration ends when the
// RegisteredBuffer is destroyed, which must not happen while a transfer or a peer's
// RemoteRegion still uses it, nor after its Transport is destroyed.

#ifndef ZCOLL_TRANSPORT_REGISTERED_BUFFER_H_
#define ZCOLL_TRANSPORT_REGISTERED_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/transport.h"

namespace zcoll {

class RegisteredBuffer {
 public:
  // Page-aligned, so that registrations of neighbouring buffers never share a page.
  static constexpr size_t kAlignment = 4096;

  // `bytes` of zeroed memory owned by the buffer, registered with `access`.
  static absl::StatusOr<RegisteredBuffer> Allocate(Transport& transport, size_t bytes,
                                                   MemoryAccess access);
  // Registers [data, data + bytes) of the caller's memory.
  static absl::StatusOr<RegisteredBuffer> Register(Transport& transport, void* data, size_t bytes,
                                                   MemoryAccess access);

  RegisteredBuffer(RegisteredBuffer&&) = default;
  RegisteredBuffer& operator=(RegisteredBuffer&&) = default;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  absl::Span<uint8_t> span() const { return {data_, size_}; }
  // Pass to Post* for any buffer inside this one.
  const MemoryRegion& region() const { return *region_; }
  // What a peer imports to put into or get from this buffer.
  const std::string& packed_key() const { return region_->packed_key(); }

 private:
  struct AlignedDelete {
    void operator()(uint8_t* memory) const {
      ::operator delete[](memory, std::align_val_t{kAlignment});
    }
  };

  RegisteredBuffer(std::unique_ptr<uint8_t[], AlignedDelete> owned, uint8_t* data, size_t size,
                   std::unique_ptr<MemoryRegion> region)
      : owned_(std::move(owned)), data_(data), size_(size), region_(std::move(region)) {}

  // Declared first so that it is destroyed last: deregistration before freeing.
  std::unique_ptr<uint8_t[], AlignedDelete> owned_;
  uint8_t* data_;
  size_t size_;
  std::unique_ptr<MemoryRegion> region_;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_REGISTERED_BUFFER_H_
