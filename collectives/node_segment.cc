#include "collectives/node_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/mutex.h"

namespace zcoll {
namespace {

constexpr uint64_t kMagic = 0x646f6e6c6f63637aULL;  // "zccolnod"
constexpr uint32_t kVersion = 8;  // 8: a chain's progress words in the exposure lines
constexpr size_t kHeaderBytes = 4096;

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string Errno(int error) { return std::strerror(error); }

// The segments this process maps, by name: ranks that are threads of one process map a
// segment once and share the mapping, so every access to a word goes through one
// address (ThreadSanitizer then sees the publications order the reads, and the
// process maps the memory once, not once per rank).
struct Mapping {
  char* base;
  size_t bytes;
  int users;
};
Mutex mappings_mutex;
std::map<std::string, Mapping>& Mappings() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mappings_mutex) {
  static auto* mappings = new std::map<std::string, Mapping>();
  return *mappings;
}

// This process's mapping of `name`, shared, or null.
char* ShareMapping(const std::string& name, size_t bytes) {
  MutexLock lock(&mappings_mutex);
  auto found = Mappings().find(name);
  if (found == Mappings().end() || found->second.bytes != bytes) return nullptr;
  ++found->second.users;
  return found->second.base;
}

void RecordMapping(const std::string& name, char* base, size_t bytes) {
  MutexLock lock(&mappings_mutex);
  Mappings()[name] = {base, bytes, 1};
}

void ReleaseMapping(const std::string& name, char* base, size_t bytes) {
  {
    MutexLock lock(&mappings_mutex);
    auto found = Mappings().find(name);
    if (found != Mappings().end() && found->second.base == base) {
      if (--found->second.users > 0) return;
      Mappings().erase(found);
    }
  }
  munmap(base, bytes);
}

}  // namespace

struct NodeSegment::Header {
  uint64_t magic;
  uint32_t version;
  uint32_t ranks;
  uint64_t slot_bytes;
  uint64_t creator_base;  // where the creator mapped it, for ProbeSingleCopy
  alignas(64) std::atomic<uint32_t> attached;
  std::atomic<uint32_t> setup;  // NodeSegment::SetupState
  std::atomic<uint32_t> single_copy;
  std::atomic<uint32_t> oversubscribed;
  std::atomic<uint32_t> asymmetric_fences;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared atomics must be lock-free");

size_t NodeSegment::SegmentBytes(int ranks, size_t slot_bytes) {
  static_assert(sizeof(Header) <= kSleepersOffset && kDeparturesOffset + 64 <= kHeaderBytes);
  // Two control lines, a consumed and a sleep line, an exposure line per rank.
  const size_t lines = static_cast<size_t>(ranks) * (4 * 64 + sizeof(ExposureLine));
  return kHeaderBytes + RoundUp(lines, kSlotAlignment) +
         static_cast<size_t>(ranks) * 2 * RoundUp(slot_bytes, kSlotAlignment);
}

NodeSegment::NodeSegment(std::string name, int ranks, size_t slot_bytes, char* base, size_t bytes,
                         bool owner)
    : name_(std::move(name)),
      ranks_(ranks),
      slot_bytes_(RoundUp(slot_bytes, kSlotAlignment)),
      base_(base),
      bytes_(bytes),
      owner_(owner),
      linked_(owner) {
  const size_t controls_offset = kHeaderBytes;
  const size_t consumed_offset =
      controls_offset + static_cast<size_t>(ranks) * 2 * sizeof(ControlLine);
  const size_t sleep_offset = consumed_offset + static_cast<size_t>(ranks) * sizeof(ConsumedLine);
  const size_t exposure_offset = sleep_offset + static_cast<size_t>(ranks) * sizeof(SleepLine);
  const size_t slots_offset =
      RoundUp(exposure_offset + static_cast<size_t>(ranks) * sizeof(ExposureLine), kSlotAlignment);
  if (base_ != nullptr) {
    controls_ = reinterpret_cast<ControlLine*>(base_ + controls_offset);
    consumed_lines_ = reinterpret_cast<ConsumedLine*>(base_ + consumed_offset);
    sleep_lines_ = reinterpret_cast<SleepLine*>(base_ + sleep_offset);
    exposures_ = reinterpret_cast<ExposureLine*>(base_ + exposure_offset);
    slots_ = base_ + slots_offset;
  }
}

NodeSegment::NodeSegment(NodeSegment&& other) noexcept { *this = std::move(other); }

NodeSegment& NodeSegment::operator=(NodeSegment&& other) noexcept {
  if (this == &other) return *this;
  this->~NodeSegment();
  name_ = std::move(other.name_);
  ranks_ = other.ranks_;
  slot_bytes_ = other.slot_bytes_;
  base_ = std::exchange(other.base_, nullptr);
  bytes_ = std::exchange(other.bytes_, 0);
  owner_ = other.owner_;
  linked_ = std::exchange(other.linked_, false);
  asymmetric_fences_ = other.asymmetric_fences_;
  controls_ = std::exchange(other.controls_, nullptr);
  consumed_lines_ = std::exchange(other.consumed_lines_, nullptr);
  sleep_lines_ = std::exchange(other.sleep_lines_, nullptr);
  exposures_ = std::exchange(other.exposures_, nullptr);
  slots_ = std::exchange(other.slots_, nullptr);
  return *this;
}

NodeSegment::~NodeSegment() {
  Unlink();
  if (base_ != nullptr) ReleaseMapping(name_, base_, bytes_);
  base_ = nullptr;
}

void NodeSegment::Unlink() {
  if (!linked_) return;
  linked_ = false;
  shm_unlink(("/" + name_).c_str());
}

int NodeSegment::attached() const {
  return static_cast<int>(header()->attached.load(std::memory_order_acquire));
}

NodeSegment::SetupState NodeSegment::setup() const {
  return static_cast<SetupState>(header()->setup.load(std::memory_order_acquire));
}

void NodeSegment::SetSetup(SetupState state) {
  header()->setup.store(static_cast<uint32_t>(state), std::memory_order_release);
}

bool NodeSegment::single_copy() const {
  return header()->single_copy.load(std::memory_order_acquire) != 0;
}

bool NodeSegment::oversubscribed() const {
  return header()->oversubscribed.load(std::memory_order_acquire) != 0;
}

void NodeSegment::SetOversubscribed(bool oversubscribed) {
  header()->oversubscribed.store(oversubscribed ? 1 : 0, std::memory_order_release);
}

bool NodeSegment::asymmetric_fences() const {
  return header()->asymmetric_fences.load(std::memory_order_acquire) != 0;
}

void NodeSegment::SetAsymmetricFences(bool asymmetric) {
  header()->asymmetric_fences.store(asymmetric ? 1 : 0, std::memory_order_release);
}

absl::Status NodeSegment::RegisterAsymmetricFences() {
  static const int registered = [] {
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0 ? 0 : errno;
  }();
  if (registered == 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) failed: ", Errno(registered)));
}

void NodeSegment::UseSetupVerdicts() { asymmetric_fences_ = asymmetric_fences(); }

void NodeSegment::SetSingleCopy(bool single_copy) {
  header()->single_copy.store(single_copy ? 1 : 0, std::memory_order_release);
}

absl::Status NodeSegment::ProbeSingleCopy() const {
  const pid_t creator = static_cast<pid_t>(pid(0));
  if (creator == getpid()) return absl::OkStatus();
  uint64_t magic = 0;
  iovec local{&magic, sizeof(magic)};
  iovec remote{reinterpret_cast<void*>(header()->creator_base), sizeof(magic)};
  const ssize_t read = process_vm_readv(creator, &local, 1, &remote, 1, 0);
  if (read == static_cast<ssize_t>(sizeof(magic)) && magic == kMagic) return absl::OkStatus();
  const int error = errno;
  return absl::PermissionDeniedError(
      absl::StrCat("process_vm_readv of the node leader's memory (process ", creator,
                   "): ", read < 0 ? Errno(error) : "it read something else",
                   "; node collectives beyond a slot copy through shared memory"));
}

absl::StatusOr<NodeSegment> NodeSegment::Create(const std::string& name, int ranks,
                                                size_t slot_bytes, uint32_t first_sequence) {
  return Map(name, ranks, slot_bytes, /*rank=*/0, first_sequence);
}

absl::StatusOr<NodeSegment> NodeSegment::Open(const std::string& name, int ranks, size_t slot_bytes,
                                              int rank) {
  return Map(name, ranks, slot_bytes, rank, 0);
}

absl::StatusOr<NodeSegment> NodeSegment::Map(const std::string& name, int ranks, size_t slot_bytes,
                                             int rank, uint32_t first_sequence) {
  if (ranks < 1 || ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("a node segment is for 1 to ", kMaxRanks, " ranks; asked for ", ranks));
  }
  if (rank < 0 || rank >= ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " of a node segment for ", ranks, " ranks"));
  }
  const bool create = rank == 0;
  const size_t bytes = SegmentBytes(ranks, slot_bytes);
  const std::string path = "/" + name;
  const int fd = create ? shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600)
                        : shm_open(path.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int error = errno;
    return absl::UnavailableError(absl::StrCat(
        create ? "creating" : "opening", " the node segment /dev/shm/", name, ": ", Errno(error)));
  }
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(path.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("sizing the node segment /dev/shm/", name,
                                                     " to ", bytes, " bytes: ", Errno(error)));
  }
  if (!create) {
    struct stat info {};
    if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != bytes) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat("the node segment /dev/shm/", name, " holds ", info.st_size,
                       " bytes; ranks=", ranks, " and slots of ", slot_bytes, " bytes need ", bytes,
                       " (its creator made it for another shape)"));
    }
  }
  void* mapped = create ? nullptr : ShareMapping(name, bytes);
  if (mapped == nullptr) {
    mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int map_error = errno;
    if (mapped == MAP_FAILED) {
      close(fd);
      if (create) shm_unlink(path.c_str());
      return absl::ResourceExhaustedError(absl::StrCat("mapping the node segment /dev/shm/", name,
                                                       " (", bytes, " bytes): ", Errno(map_error)));
    }
    RecordMapping(name, static_cast<char*>(mapped), bytes);
  }
  close(fd);
  NodeSegment segment(name, ranks, slot_bytes, static_cast<char*>(mapped), bytes, create);
  Header* header = segment.header();
  if (create) {
    // Fresh pages are zero; the sequence numbers start one before the first call.
    for (int rank = 0; rank < ranks; ++rank) {
      for (const uint32_t parity : {0u, 1u}) {
        segment.control(rank, parity)
            ->published.store(first_sequence - 1, std::memory_order_relaxed);
        segment.control(rank, parity)
            ->consumed_when_published.store(first_sequence - 1, std::memory_order_relaxed);
      }
      segment.consumed_line(rank)->consumed.store(first_sequence - 1, std::memory_order_relaxed);
      segment.exposure(rank)->stage.store(first_sequence - 1, std::memory_order_relaxed);
    }
    segment.exposure(0)->pid = static_cast<uint32_t>(getpid());
    header->creator_base = reinterpret_cast<uint64_t>(segment.base_);
    header->ranks = static_cast<uint32_t>(ranks);
    header->slot_bytes = segment.slot_bytes_;
    header->version = kVersion;
    // The magic last: an opener that sees it sees the rest (it learns the name only
    // afterwards anyway, through a message).
    std::atomic_ref<uint64_t>(header->magic).store(kMagic, std::memory_order_release);
  } else {
    if (std::atomic_ref<uint64_t>(header->magic).load(std::memory_order_acquire) != kMagic ||
        header->version != kVersion || header->ranks != static_cast<uint32_t>(ranks) ||
        header->slot_bytes != segment.slot_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("the node segment /dev/shm/", name, " is not one of this zcoll version for ",
                       ranks, " ranks and slots of ", segment.slot_bytes_, " bytes"));
    }
    segment.exposure(rank)->pid = static_cast<uint32_t>(getpid());
    header->attached.fetch_add(1, std::memory_order_acq_rel);
  }
  return segment;
}

bool NodeSegment::AwaitNoWriters(int rank, absl::Duration patience) const {
  const absl::Time give_up = absl::Now() + patience;
  while (exposure(rank)->writers.load(std::memory_order_seq_cst) != 0) {
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Microseconds(20));
  }
  return true;
}

uint32_t NodeSegment::BeginSleep(int rank) {
  SleepLine* line = sleep_line(rank);
  line->sleeping.store(1, std::memory_order_seq_cst);
  sleepers().fetch_add(1, std::memory_order_seq_cst);
  // Publishers with asymmetric fences do not fence between their store and their look
  // at the count: this makes every CPU that runs one fence now (Announce). It cannot
  // fail once the process registered (UseSetupVerdicts follows a verdict that every
  // rank did).
  if (asymmetric_fences_) syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
  return line->doorbell.load(std::memory_order_seq_cst);
}

void NodeSegment::Sleep(int rank, uint32_t doorbell, absl::Duration timeout) {
  const int64_t nanoseconds = absl::ToInt64Nanoseconds(timeout);
  if (nanoseconds <= 0) return;
  timespec relative{static_cast<time_t>(nanoseconds / 1000000000),
                    static_cast<long>(nanoseconds % 1000000000)};
  // Not FUTEX_PRIVATE: the word is shared with other processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sleep_line(rank)->doorbell), FUTEX_WAIT, doorbell,
          &relative, nullptr, 0);
}

void NodeSegment::EndSleep(int rank) {
  sleep_line(rank)->sleeping.store(0, std::memory_order_relaxed);
  sleepers().fetch_sub(1, std::memory_order_seq_cst);
}

void NodeSegment::RingSleepers() {
  for (int rank = 0; rank < ranks_; ++rank) RingIfSleeping(rank);
}

void NodeSegment::RingIfSleeping(int rank) {
  SleepLine* line = sleep_line(rank);
  if (line->sleeping.load(std::memory_order_seq_cst) == 0) return;
  line->doorbell.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&line->doorbell), FUTEX_WAKE, 1, nullptr, nullptr,
          0);
}

}  // namespace zcoll
