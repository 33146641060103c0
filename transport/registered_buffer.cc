#include "transport/registered_buffer.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace zcoll {

absl::StatusOr<RegisteredBuffer> RegisteredBuffer::Allocate(Transport& transport, size_t bytes,
                                                            MemoryAccess access) {
  // Registering zero bytes means nothing to most providers; one page keeps data()
  // a valid, registered pointer.
  const size_t allocated = bytes == 0 ? kAlignment : bytes;
  uint8_t* memory = static_cast<uint8_t*>(
      ::operator new[](allocated, std::align_val_t{kAlignment}, std::nothrow));
  if (memory == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("RegisteredBuffer::Allocate on rank ",
                                                     transport.rank(), ": cannot allocate ", bytes,
                                                     " bytes"));
  }
  std::unique_ptr<uint8_t[], AlignedDelete> owned(memory);
  std::memset(memory, 0, allocated);
  ASSIGN_OR_RETURN(std::unique_ptr<MemoryRegion> region,
                   transport.RegisterMemory(memory, allocated, access));
  return RegisteredBuffer(std::move(owned), memory, bytes, std::move(region));
}

absl::StatusOr<RegisteredBuffer> RegisteredBuffer::Register(Transport& transport, void* data,
                                                            size_t bytes, MemoryAccess access) {
  if (data == nullptr || bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("RegisteredBuffer::Register on rank ",
                                                   transport.rank(), ": the memory to register is ",
                                                   data == nullptr ? "null" : "empty (0 bytes)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MemoryRegion> region,
                   transport.RegisterMemory(data, bytes, access));
  return RegisteredBuffer(nullptr, static_cast<uint8_t*>(data), bytes, std::move(region));
}

}  // namespace zcoll
