#include "testing/transport_harness.h"

#include <signal.h>
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
#include "transport/bootstrap/forked_job.h"
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
// Processes (transport/bootstrap/forked_job.h).

class ForkedMeetingAdapter final : public RankMeeting {
 public:
  ForkedMeetingAdapter(ForkMeeting& meeting, int size) : meeting_(meeting), size_(size) {}
  void Barrier(int rank) override { meeting_.Barrier(size_); }
  std::vector<std::string> AllGather(int rank, const std::string& value) override {
    if (value.size() > 64 * 1024) {
      ADD_FAILURE() << "AllGather of " << value.size() << " bytes exceeds the harness's slots";
    }
    return meeting_.AllGather(rank, value);
  }

 private:
  ForkMeeting& meeting_;
  int size_;
};

int RunChild(absl::string_view provider, int rank, int size,
             const std::function<void(RankContext&)>& body, ForkMeeting& fork_meeting,
             const RunOptions& options) {
  ForkedMeetingAdapter meeting(fork_meeting, size);
  absl::StatusOr<std::unique_ptr<Transport>> transport =
      CreateProcessTransport(provider, rank, size);
  if (!transport.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, transport.status().ToString().c_str());
    return 2;
  }
  const std::vector<std::string> addresses = meeting.AllGather(rank, (*transport)->address());
  const absl::Status connected = (*transport)->Connect(addresses);
  if (!connected.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, connected.ToString().c_str());
    return 2;
  }
  RankContext context(rank, size, std::move(*transport), &meeting, /*is_process=*/true);
  body(context);
  // The transport is destroyed (with `context`) only after every survivor finished.
  fork_meeting.Barrier(size - static_cast<int>(options.ranks_that_die.size()));
  return ::testing::Test::HasFailure() ? 1 : 0;
}

absl::Status RunProcesses(absl::string_view provider, int size,
                          const std::function<void(RankContext&)>& body,
                          const RunOptions& options) {
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      size,
      [&](int rank, ForkMeeting& meeting) {
        return RunChild(provider, rank, size, body, meeting, options);
      },
      options.timeout);
  if (!outcomes.ok()) return outcomes.status();
  std::vector<std::string> failures;
  for (int rank = 0; rank < size; ++rank) {
    const RankOutcome& outcome = (*outcomes)[rank];
    if (!outcome.finished) {
      failures.push_back(absl::StrCat("rank ", rank, " did not finish within ",
                                      absl::FormatDuration(options.timeout)));
    } else if (options.ranks_that_die.count(rank)) {
      if (outcome.signal != SIGKILL) {
        failures.push_back(absl::StrCat("rank ", rank, " was meant to die but exited"));
      }
    } else if (outcome.signal != 0) {
      failures.push_back(absl::StrCat("rank ", rank, " died of signal ", outcome.signal));
    } else if (outcome.exit_code != 0) {
      failures.push_back(absl::StrCat("rank ", rank, " failed (exit ", outcome.exit_code, ")"));
    }
  }
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
