#include "transport/bootstrap/forked_job.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

constexpr int kMaxRanks = 64;
constexpr size_t kSlotBytes = 64 * 1024;

// Lives in a MAP_SHARED anonymous mapping made before fork.
struct SharedMeeting {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
  struct Slot {
    std::atomic<uint32_t> length;
    char bytes[kSlotBytes];
  } slots[kMaxRanks];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

class SharedMemoryMeeting final : public ForkMeeting {
 public:
  SharedMemoryMeeting(SharedMeeting* shared, int size, absl::Time deadline)
      : shared_(shared), size_(size), deadline_(deadline) {}

  // A generation-counting barrier. Memory ordering: the last arriver resets the count
  // and then bumps the generation with release; waiters acquire the generation, so
  // they see everything written before every rank arrived.
  void Barrier(int participants) override {
    const uint32_t generation = shared_->generation.load(std::memory_order_acquire);
    if (shared_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<uint32_t>(participants)) {
      shared_->arrived.store(0, std::memory_order_relaxed);
      shared_->generation.fetch_add(1, std::memory_order_release);
      return;
    }
    while (shared_->generation.load(std::memory_order_acquire) == generation) {
      if (absl::Now() > deadline_) {
        std::fprintf(stderr, "forked job: a barrier timed out; a rank never arrived\n");
        std::fflush(nullptr);
        _exit(kMeetingTimedOut);
      }
      absl::SleepFor(absl::Microseconds(50));
    }
  }

  std::vector<std::string> AllGather(int rank, const std::string& value) override {
    const size_t length = std::min(value.size(), kSlotBytes);
    std::memcpy(shared_->slots[rank].bytes, value.data(), length);
    shared_->slots[rank].length.store(static_cast<uint32_t>(length), std::memory_order_release);
    Barrier(size_);
    std::vector<std::string> all;
    for (int r = 0; r < size_; ++r) {
      all.emplace_back(shared_->slots[r].bytes,
                       shared_->slots[r].length.load(std::memory_order_acquire));
    }
    Barrier(size_);  // nobody overwrites a slot before everyone has read it
    return all;
  }

 private:
  SharedMeeting* shared_;
  int size_;
  absl::Time deadline_;
};

}  // namespace

absl::StatusOr<std::vector<RankOutcome>> RunForkedJob(
    int size, const std::function<int(int rank, ForkMeeting& meeting)>& rank_main,
    absl::Duration timeout) {
  if (size < 1 || size > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("RunForkedJob: size ", size, " is not in 1..", kMaxRanks));
  }
  void* memory = mmap(nullptr, sizeof(SharedMeeting), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return absl::ResourceExhaustedError("RunForkedJob: mmap of the shared meeting failed");
  }
  auto* shared = new (memory) SharedMeeting();
  const absl::Time deadline = absl::Now() + timeout;
  std::fflush(nullptr);  // no buffered output is duplicated into the children
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      SharedMemoryMeeting meeting(shared, size, deadline);
      const int code = rank_main(rank, meeting);
      std::fflush(nullptr);
      _exit(code);
    }
    if (pid < 0) {
      for (pid_t child : children) kill(child, SIGKILL);
      for (pid_t child : children) waitpid(child, nullptr, 0);
      munmap(memory, sizeof(SharedMeeting));
      return absl::ResourceExhaustedError(
          absl::StrCat("RunForkedJob: fork of rank ", rank, " failed: ", std::strerror(errno)));
    }
    children.push_back(pid);
  }
  std::vector<RankOutcome> outcomes(size);
  int remaining = size;
  // A little grace past the ranks' own deadline, so that a rank timing out in a
  // barrier reports itself before it is killed.
  while (remaining > 0 && absl::Now() < deadline + absl::Seconds(5)) {
    for (int rank = 0; rank < size; ++rank) {
      if (outcomes[rank].finished) continue;
      int status = 0;
      if (waitpid(children[rank], &status, WNOHANG) != children[rank]) continue;
      outcomes[rank].finished = true;
      --remaining;
      if (WIFEXITED(status)) outcomes[rank].exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) outcomes[rank].signal = WTERMSIG(status);
    }
    if (remaining > 0) absl::SleepFor(absl::Milliseconds(1));
  }
  for (int rank = 0; rank < size; ++rank) {
    if (!outcomes[rank].finished) {
      kill(children[rank], SIGKILL);
      waitpid(children[rank], nullptr, 0);
    }
    SweepSharedMemory(children[rank]);
  }
  shared->~SharedMeeting();
  munmap(memory, sizeof(SharedMeeting));
  return outcomes;
}

int SweepSharedMemory(int64_t pid) {
  const std::string prefix = SharedMemoryPrefix(pid);
  DIR* directory = opendir("/dev/shm");
  if (directory == nullptr) return 0;
  int removed = 0;
  while (dirent* entry = readdir(directory)) {
    const absl::string_view name = entry->d_name;
    if (absl::StartsWith(name, prefix) && shm_unlink(absl::StrCat("/", name).c_str()) == 0) {
      ++removed;
    }
  }
  closedir(directory);
  return removed;
}

}  // namespace zcoll
