#include "collectives/shared_buffers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"

namespace zcoll {
namespace {

// The first page of a buffer's file: what a peer checks before it trusts a mapping.
struct BufferHeader {
  uint64_t magic;
  uint32_t serial;
  uint32_t pid;
  uint64_t owner_data;  // the data's address in the owner
  uint64_t data_bytes;
};
constexpr uint64_t kBufferMagic = 0x7a636f6c6c627566;  // "zcollbuf"
constexpr size_t kHeaderBytes = 4096;

struct OwnBuffer {
  int fd;
  uint32_t serial;
  char* base;  // the mapping: header, then data
  size_t mapped_bytes;
  size_t data_bytes;
};

struct PeerEntry {
  BufferRef ref;
  uint64_t last_used;
  std::shared_ptr<const PeerBufferMapping> mapping;  // null: it could not be mapped
};

// Where a process's serials start: random, so that a process that takes a gone
// process's pid does not give its buffers the serials of that one's, which a peer may
// still hold mappings of (the pid, the descriptor and the serial must all match). A
// forked child, which inherits its parent's count, starts again (serial_pid).
uint32_t FirstSerial() {
  uint32_t serial = 0;
  if (getentropy(&serial, sizeof serial) != 0) {
    serial = static_cast<uint32_t>(getpid()) * 2654435761u;
  }
  return serial == 0 ? 1 : serial;
}

struct Registry {
  Mutex mutex;
  std::map<uintptr_t, OwnBuffer> own ABSL_GUARDED_BY(mutex);  // by data address
  uint32_t next_serial ABSL_GUARDED_BY(mutex) = 0;
  pid_t serial_pid ABSL_GUARDED_BY(mutex) = 0;  // the process next_serial is for
  // Peers' buffers mapped here, by the peer's pid.
  absl::flat_hash_map<uint32_t, std::vector<PeerEntry>> peers ABSL_GUARDED_BY(mutex);
  size_t peer_entries ABSL_GUARDED_BY(mutex) = 0;
  uint64_t clock ABSL_GUARDED_BY(mutex) = 0;
  // Whether this process has any buffer (FindSharedBuffer's lock-free answer when not).
  std::atomic<size_t> own_count{0};
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

size_t PageRounded(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

PeerBufferMapping::~PeerBufferMapping() { munmap(base_, mapped_bytes_); }

char* PeerBufferMapping::Translate(uint64_t address, size_t bytes) const {
  if (address < owner_data_ || address - owner_data_ > data_bytes_ ||
      bytes > data_bytes_ - (address - owner_data_)) {
    return nullptr;
  }
  return base_ + kHeaderBytes + (address - owner_data_);
}

absl::StatusOr<void*> AllocateSharedBuffer(size_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError("AllocateBuffer: bytes is 0 (allocate at least one byte)");
  }
  if (bytes > (size_t{1} << 47)) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllocateBuffer: bytes is ", bytes, ", more than this machine can map"));
  }
  const size_t mapped_bytes = kHeaderBytes + PageRounded(bytes);
  const int fd = memfd_create("zcoll-buffer", MFD_CLOEXEC);
  if (fd < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("AllocateBuffer: memfd_create failed: ", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(mapped_bytes)) != 0) {
    const int error = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("AllocateBuffer: sizing ", bytes, " bytes failed: ", std::strerror(error)));
  }
  void* base = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("AllocateBuffer: mapping ", bytes, " bytes failed: ", std::strerror(error)));
  }
  char* data = static_cast<char*>(base) + kHeaderBytes;
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mutex);
  if (registry.serial_pid != getpid()) {
    registry.serial_pid = getpid();
    registry.next_serial = FirstSerial();
  }
  const uint32_t serial = registry.next_serial++;
  if (registry.next_serial == 0) registry.next_serial = 1;
  auto* header = static_cast<BufferHeader*>(base);
  header->magic = kBufferMagic;
  header->serial = serial;
  header->pid = static_cast<uint32_t>(getpid());
  header->owner_data = reinterpret_cast<uint64_t>(data);
  header->data_bytes = bytes;
  registry.own[reinterpret_cast<uintptr_t>(data)] =
      OwnBuffer{fd, serial, static_cast<char*>(base), mapped_bytes, bytes};
  registry.own_count.fetch_add(1, std::memory_order_release);
  return static_cast<void*>(data);
}

absl::Status FreeSharedBuffer(void* data) {
  Registry& registry = TheRegistry();
  OwnBuffer buffer;
  {
    MutexLock lock(&registry.mutex);
    auto found = registry.own.find(reinterpret_cast<uintptr_t>(data));
    if (found == registry.own.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("FreeBuffer: ", absl::Hex(reinterpret_cast<uintptr_t>(data)),
                       " is not a buffer from AllocateBuffer (or was freed already)"));
    }
    buffer = found->second;
    registry.own.erase(found);
    registry.own_count.fetch_sub(1, std::memory_order_release);
  }
  // Peers that mapped it keep their pages until they unmap; this process's are gone.
  munmap(buffer.base, buffer.mapped_bytes);
  close(buffer.fd);
  return absl::OkStatus();
}

BufferRef FindSharedBuffer(const void* data, size_t bytes) {
  Registry& registry = TheRegistry();
  if (registry.own_count.load(std::memory_order_acquire) == 0) return {};
  const auto address = reinterpret_cast<uintptr_t>(data);
  MutexLock lock(&registry.mutex);
  auto after = registry.own.upper_bound(address);
  if (after == registry.own.begin()) return {};
  const auto& [start, buffer] = *std::prev(after);
  if (address - start > buffer.data_bytes || bytes > buffer.data_bytes - (address - start)) {
    return {};
  }
  return BufferRef{static_cast<uint32_t>(buffer.fd), buffer.serial};
}

std::shared_ptr<const PeerBufferMapping> MapPeerBuffer(uint32_t pid, BufferRef ref) {
  if (!ref) return nullptr;
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mutex);
  const uint64_t now = ++registry.clock;
  std::vector<PeerEntry>& entries = registry.peers[pid];
  for (size_t i = 0; i < entries.size(); ++i) {
    PeerEntry& entry = entries[i];
    if (entry.ref.fd != ref.fd) continue;
    if (entry.ref.serial == ref.serial) {
      entry.last_used = now;
      return entry.mapping;
    }
    // The descriptor holds another buffer now: the old one was freed.
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
    --registry.peer_entries;
    break;
  }
  auto least_recent = [](const PeerEntry& a, const PeerEntry& b) {
    return a.last_used < b.last_used;
  };
  if (entries.size() >= kMappedBuffersPerPeer) {
    entries.erase(std::min_element(entries.begin(), entries.end(), least_recent));
    --registry.peer_entries;
  }
  if (registry.peer_entries >= kMappedPeerBuffers) {
    // The least recently used of all (a gone process's, as a rule): a scan, on a miss
    // past the whole bound alone.
    uint32_t oldest_pid = 0;
    std::vector<PeerEntry>* oldest_in = nullptr;
    std::vector<PeerEntry>::iterator oldest;
    for (auto& [other_pid, others] : registry.peers) {
      if (others.empty()) continue;
      auto found = std::min_element(others.begin(), others.end(), least_recent);
      if (oldest_in == nullptr || found->last_used < oldest->last_used) {
        oldest_pid = other_pid, oldest_in = &others, oldest = found;
      }
    }
    if (oldest_in != nullptr) {
      oldest_in->erase(oldest);
      --registry.peer_entries;
      // (Not this pid's: `entries` refers into the table.)
      if (oldest_in->empty() && oldest_pid != pid) registry.peers.erase(oldest_pid);
    }
  }
  std::shared_ptr<const PeerBufferMapping> mapping;
  const std::string path = absl::StrCat("/proc/", pid, "/fd/", ref.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    struct stat status;
    if (fstat(fd, &status) == 0 && static_cast<size_t>(status.st_size) > kHeaderBytes) {
      const auto mapped_bytes = static_cast<size_t>(status.st_size);
      void* base = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base != MAP_FAILED) {
        const auto* header = static_cast<const BufferHeader*>(base);
        if (header->magic == kBufferMagic && header->serial == ref.serial && header->pid == pid &&
            header->data_bytes <= mapped_bytes - kHeaderBytes) {
          mapping = std::make_shared<const PeerBufferMapping>(
              static_cast<char*>(base), mapped_bytes, header->owner_data, header->data_bytes);
        } else {
          munmap(base, mapped_bytes);
        }
      }
    }
    close(fd);
  }
  entries.push_back(PeerEntry{ref, now, mapping});
  ++registry.peer_entries;
  return mapping;
}

}  // namespace zcoll
