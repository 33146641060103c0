#include "testing/transport_harness.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutex.h"
#include "gtest/gtest.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/transport_factory.h"

namespace zcoll::testing {
namespace {

// ---------------------------------------------------------------------------------
// Threads.

class ThreadMeeting final : public RankMeeting {
 public:
  ThreadMeeting(int size, absl::Time deadline) : size_(size), deadline_(deadline), slots_(size) {}

  void Barrier(int rank) override { Meet(size_); }
  void MeetWith(int participants) { Meet(participants); }

  std::vector<std::string> AllGather(int rank, const std::string& value) override {
    {
      MutexLock lock(&mu_);
      slots_[rank] = value;
    }
    Meet(size_);
    std::vector<std::string> all;
    {
      MutexLock lock(&mu_);
      all = slots_;
    }
    Meet(size_);
    return all;
  }

 private:
  void Meet(int participants) {
    MutexLock lock(&mu_);
    const uint64_t generation = generation_;
    if (++arrived_ == participants) {
      arrived_ = 0;
      ++generation_;
      changed_.SignalAll();
      return;
    }
    while (generation == generation_) {
      if (changed_.WaitWithDeadline(&mu_, deadline_)) {
        ADD_FAILURE() << "a barrier of the test harness timed out: a rank never arrived";
        return;
      }
    }
  }

  const int size_;
  const absl::Time deadline_;
  Mutex mu_;
  CondVar changed_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> slots_ ABSL_GUARDED_BY(mu_);
};

absl::Status RunThreads(int size, const std::function<void(RankContext&)>& body,
                        const RunOptions& options) {
  const std::shared_ptr<LoopbackFabric> fabric = LoopbackFabric::Create(size);
  ThreadMeeting meeting(size, absl::Now() + options.timeout);
  std::vector<std::unique_ptr<RankContext>> contexts;
  std::vector<std::string> addresses;
  for (int rank = 0; rank < size; ++rank) {
    absl::StatusOr<std::unique_ptr<Transport>> transport = fabric->CreateTransport(rank);
    if (!transport.ok()) return transport.status();
    addresses.push_back((*transport)->address());
    contexts.push_back(std::make_unique<RankContext>(rank, size, std::move(*transport), &meeting,
                                                     /*is_process=*/false));
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(size);
  const int survivors = size - static_cast<int>(options.ranks_that_die.size());
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      RankContext& context = *contexts[rank];
      const absl::Status connected = context.transport().Connect(addresses);
      if (!connected.ok()) {
        errors[rank] = absl::StrCat("rank ", rank, ": ", connected.ToString());
        return;
      }
      body(context);
      if (!options.ranks_that_die.count(rank)) meeting.MeetWith(survivors);
    });
  }
  for (std::thread& thread : threads) thread.join();
  contexts.clear();  // destroys the transports after every rank finished
  std::vector<std::string> failed;
  for (const std::string& error : errors) {
    if (!error.empty()) failed.push_back(error);
  }
  if (!failed.empty()) return absl::InternalError(absl::StrJoin(failed, "; "));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------
// Processes.

constexpr int kMaxRanks = 16;
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

class ProcessMeeting final : public RankMeeting {
 public:
  ProcessMeeting(SharedMeeting* shared, int size, absl::Time deadline)
      : shared_(shared), size_(size), deadline_(deadline) {}

  void Barrier(int rank) override { Meet(size_); }

  // The generation-counting barrier over shared memory. A rank that waits past the
  // job's deadline gives up and exits, so a dead peer cannot hang the test.
  void Meet(int participants) {
    const uint32_t generation = shared_->generation.load(std::memory_order_acquire);
    if (shared_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<uint32_t>(participants)) {
      shared_->arrived.store(0, std::memory_order_relaxed);
      shared_->generation.fetch_add(1, std::memory_order_release);
      return;
    }
    while (shared_->generation.load(std::memory_order_acquire) == generation) {
      if (absl::Now() > deadline_) {
        std::fprintf(stderr, "test harness: a barrier timed out; a rank never arrived\n");
        std::fflush(nullptr);
        _exit(3);
      }
      absl::SleepFor(absl::Microseconds(100));
    }
  }

  std::vector<std::string> AllGather(int rank, const std::string& value) override {
    if (value.size() > kSlotBytes) {
      ADD_FAILURE() << "AllGather of " << value.size() << " bytes exceeds the harness's slots";
      return {};
    }
    std::memcpy(shared_->slots[rank].bytes, value.data(), value.size());
    shared_->slots[rank].length.store(static_cast<uint32_t>(value.size()),
                                      std::memory_order_release);
    Meet(size_);
    std::vector<std::string> all;
    for (int r = 0; r < size_; ++r) {
      const uint32_t length = shared_->slots[r].length.load(std::memory_order_acquire);
      all.emplace_back(shared_->slots[r].bytes, length);
    }
    Meet(size_);
    return all;
  }

 private:
  SharedMeeting* shared_;
  int size_;
  absl::Time deadline_;
};

[[noreturn]] void RunChild(absl::string_view provider, int rank, int size,
                           const std::function<void(RankContext&)>& body, SharedMeeting* shared,
                           const RunOptions& options, absl::Time deadline) {
  ProcessMeeting meeting(shared, size, deadline);
  absl::StatusOr<std::unique_ptr<Transport>> transport =
      CreateProcessTransport(provider, rank, size);
  if (!transport.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, transport.status().ToString().c_str());
    std::fflush(nullptr);
    _exit(2);
  }
  const std::vector<std::string> addresses = meeting.AllGather(rank, (*transport)->address());
  const absl::Status connected = (*transport)->Connect(addresses);
  if (!connected.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, connected.ToString().c_str());
    std::fflush(nullptr);
    _exit(2);
  }
  int exit_code = 0;
  {
    RankContext context(rank, size, std::move(*transport), &meeting, /*is_process=*/true);
    body(context);
    meeting.Meet(size - static_cast<int>(options.ranks_that_die.size()));
    exit_code = ::testing::Test::HasFailure() ? 1 : 0;
  }  // the transport is destroyed here, after every survivor finished
  std::fflush(nullptr);
  _exit(exit_code);
}

absl::Status RunProcesses(absl::string_view provider, int size,
                          const std::function<void(RankContext&)>& body,
                          const RunOptions& options) {
  if (size > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("the harness runs at most ", kMaxRanks, " ranks"));
  }
  void* memory = mmap(nullptr, sizeof(SharedMeeting), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return absl::InternalError("mmap of the harness's meeting failed");
  auto* shared = new (memory) SharedMeeting();
  const absl::Time deadline = absl::Now() + options.timeout;
  std::fflush(nullptr);  // no buffered output is duplicated into the children
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) RunChild(provider, rank, size, body, shared, options, deadline);
    if (pid < 0) return absl::InternalError("fork failed");
    children.push_back(pid);
  }
  std::vector<std::string> failures;
  std::vector<bool> finished(size, false);
  int remaining = size;
  while (remaining > 0) {
    for (int rank = 0; rank < size; ++rank) {
      if (finished[rank]) continue;
      int status = 0;
      if (waitpid(children[rank], &status, WNOHANG) != children[rank]) continue;
      finished[rank] = true;
      --remaining;
      const bool should_die = options.ranks_that_die.count(rank) > 0;
      if (should_die) {
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
          failures.push_back(absl::StrCat("rank ", rank, " was meant to die but exited"));
        }
      } else if (WIFSIGNALED(status)) {
        failures.push_back(absl::StrCat("rank ", rank, " died of signal ", WTERMSIG(status)));
      } else if (WEXITSTATUS(status) != 0) {
        failures.push_back(absl::StrCat("rank ", rank, " failed (exit ", WEXITSTATUS(status), ")"));
      }
    }
    if (remaining == 0) break;
    if (absl::Now() > deadline + absl::Seconds(5)) {
      for (int rank = 0; rank < size; ++rank) {
        if (finished[rank]) continue;
        kill(children[rank], SIGKILL);
        waitpid(children[rank], nullptr, 0);
        failures.push_back(absl::StrCat("rank ", rank, " did not finish within ",
                                        absl::FormatDuration(options.timeout)));
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  shared->~SharedMeeting();
  munmap(memory, sizeof(SharedMeeting));
  if (!failures.empty()) return absl::InternalError(absl::StrJoin(failures, "; "));
  return absl::OkStatus();
}

}  // namespace

void RankContext::Die() {
  if (is_process_) {
    std::fflush(nullptr);
    kill(getpid(), SIGKILL);
    pause();
  }
  transport_.reset();
}

absl::StatusOr<std::unique_ptr<Transport>> CreateProcessTransport(absl::string_view provider,
                                                                  int rank, int size) {
  return CreateTransport(provider, rank, size);
}

absl::Status RunRanks(absl::string_view provider, int size,
                      const std::function<void(RankContext&)>& body, const RunOptions& options) {
  if (provider == "loopback") return RunThreads(size, body, options);
  return RunProcesses(provider, size, body, options);
}

}  // namespace zcoll::testing
