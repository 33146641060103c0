#include "transport/transport.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/status_macros.h"

namespace zcoll {
namespace {

// How a blocking wait backs off, read once per process (core/config.cc).
struct WaitPolicy {
  absl::Duration spin;
  absl::Duration yield;
  // Give the core up every kIdlePollsPerYield idle polls from the start of a wait.
  bool yield_early;
};

std::atomic<bool> cores_oversubscribed{false};

// Measured with 4 ranks on 2 cores (zcoll_bench --np 4 --nodes 1): 8 B reduce 35 us
// with the default policy, 12 us without the spin, 4.3 us when the yielding also lasts
// 100 ms (a yielding rank may wait a whole time slice of the other rank on its core).
constexpr absl::Duration kOversubscribedYield = absl::Milliseconds(100);

// When ranks outnumber cores, the rank a wait needs may be queued behind the waiter
// on its core, so the waiter gives the core up early: every 4th idle poll instead of
// from the 64th (when the clock is first read). Measured with 4 ranks on 2 cores,
// medians of 5 interleaved runs, 8-512 B: bcast 5.5-6.9 -> 3.8-3.9 us, scatter 7.0-7.4
// -> 2.6-3.2, allreduce 10.4-11.6 -> 7.3-8.3, alltoall 9.8-10.7 -> 6.9-7.2; every
// 2nd poll, every 8th, or every 16th from the 4th were 8-15% slower over those rows,
// and every poll (a yield costs a system call even when nobody else wants the core)
// slower still.
constexpr uint64_t kIdlePollsPerYield = 4;

WaitPolicy PolicyFromEnvironment(bool oversubscribed) {
  auto setting = [&](absl::string_view variable, absl::Duration when_oversubscribed) {
    if (oversubscribed && !EnvironmentIsSet(variable)) return when_oversubscribed;
    return absl::Microseconds(EnvironmentUnsigned(variable));
  };
  return {setting("ZCOLL_WAIT_SPIN_US", absl::ZeroDuration()),
          setting("ZCOLL_WAIT_YIELD_US", kOversubscribedYield),
          oversubscribed && !EnvironmentIsSet("ZCOLL_WAIT_SPIN_US")};
}

const WaitPolicy& GetWaitPolicy() {
  static const WaitPolicy policies[2] = {PolicyFromEnvironment(false), PolicyFromEnvironment(true)};
  return policies[cores_oversubscribed.load(std::memory_order_relaxed) ? 1 : 0];
}

// A sleep lasts an eighth of the time waited so far, within these bounds: a provider
// without a wait object wakes a sleeper only when the nap ends, and a wait that
// oversleeps by at most an eighth of what a transfer took costs at most 12% of its
// time, while a long wait (a slow peer) still checks rarely. The upper bound is also
// the longest a wait oversleeps a wake-up its provider cannot signal.
constexpr absl::Duration kShortestSleep = absl::Microseconds(50);
constexpr absl::Duration kLongestSleep = absl::Milliseconds(5);

}  // namespace

// The payload of PeerError: the rank, in decimal.
constexpr absl::string_view kPeerPayload = "zcoll.dev/peer";

absl::Status Completion::OwnCopy(const absl::Status& status) {
  absl::Status copy(status.code(), status.message());
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    copy.SetPayload(url, absl::Cord(std::string(payload)));
  });
  return copy;
}

absl::Status PeerError(absl::StatusCode code, int peer, absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kPeerPayload, absl::Cord(absl::StrCat(peer)));
  return status;
}

std::optional<int> PeerOfError(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kPeerPayload);
  int peer = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &peer)) return std::nullopt;
  return peer;
}

std::string Transport::DescribePeer(int peer) const { return absl::StrCat("rank ", peer); }

int CoresOfThisMachine() {
  const uint64_t declared = EnvironmentUnsigned("ZCOLL_CORES");
  const long cores = declared > 0 ? static_cast<long>(std::min<uint64_t>(declared, 1 << 20))
                                  : sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::max(cores, 0L));
}

void SetRanksOnThisMachine(int ranks) {
  const int cores = CoresOfThisMachine();
  cores_oversubscribed.store(cores > 0 && ranks > cores, std::memory_order_relaxed);
}

bool CoresOversubscribed() { return cores_oversubscribed.load(std::memory_order_relaxed); }

std::optional<int> CpuOfPlace(absl::Span<const int> allowed, int place, int ranks) {
  const int cpus = static_cast<int>(allowed.size());
  // (Ranks that fit the CPUs each find an idle one by the scheduler's own balancing.)
  if (place < 0 || cpus < 2 || ranks <= cpus) return std::nullopt;
  return allowed[static_cast<size_t>(place % cpus)];
}

std::vector<int> AllowedCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

bool SetAllowedCpus(absl::Span<const int> cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return CPU_COUNT(&set) > 0 && sched_setaffinity(0, sizeof(set), &set) == 0;
}

void SpreadOverCpus(int place, int ranks) {
  if (EnvironmentUnsigned("ZCOLL_SPREAD_RANKS") == 0) return;
  const std::vector<int> cpus = AllowedCpus();
  const std::optional<int> cpu = CpuOfPlace(cpus, place, ranks);
  // (Allowing one CPU alone moves the thread there at once; allowing all of them again
  // moves nothing.)
  if (!cpu.has_value() || !SetAllowedCpus({*cpu})) return;
  if (!SetAllowedCpus(cpus)) {
    // (Only where the CPUs it may use changed meanwhile, its cpuset's say.)
    ZCOLL_LOG(WARNING) << "spreading the ranks over the CPUs: giving this thread back its "
                       << cpus.size() << " CPUs failed (" << std::strerror(errno)
                       << "); it stays on CPU " << *cpu;
  }
}

void KeepUntilExit(const void* pointer) {
  static absl::Mutex mutex(absl::kConstInit);
  static std::vector<const void*>* const kept = new std::vector<const void*>();
  absl::MutexLock lock(&mutex);
  kept->push_back(pointer);
}

absl::Status Transport::Wait(const Completion& completion, absl::Time deadline) {
  RETURN_IF_ERROR(
      WaitFor([&] { return completion.done() ? PollResult::kDone : PollResult::kIdle; }, deadline));
  return completion.status();
}

absl::Status Transport::WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline) {
  return WaitFor(poll, deadline, [](absl::Time) { return PollResult::kIdle; });
}

absl::Status Transport::WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline,
                                absl::FunctionRef<PollResult(absl::Time now)> on_clock) {
  return WaitFor(poll, deadline, on_clock, [this](absl::Duration timeout) { Sleep(timeout); });
}

absl::Status Transport::WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline,
                                absl::FunctionRef<PollResult(absl::Time now)> on_clock,
                                absl::FunctionRef<void(absl::Duration)> sleep) {
  const WaitPolicy& policy = GetWaitPolicy();
  absl::Time start = absl::InfinitePast();
  // Most waits end within a few polls, and reading the clock costs about as much as
  // a poll: the clock is first read after 64 idle polls, then every 16.
  uint64_t idle_polls = 0;
  for (;;) {
    // Polled before progressing: an operation another thread completed ends the wait
    // even when the transport has failed since.
    switch (poll()) {
      case PollResult::kDone:
        return absl::OkStatus();
      case PollResult::kAdvanced:
        idle_polls = 0;
        start = absl::InfinitePast();
        break;
      case PollResult::kIdle:
        ++idle_polls;
        break;
    }
    absl::Status progress = Progress();
    if (ABSL_PREDICT_FALSE(!progress.ok())) {
      // What completed between the poll and the failure (a peer that finished this call
      // with this rank and then failed the job, say) still completed: the failure is
      // this wait's only if it is not done.
      if (poll() == PollResult::kDone) return absl::OkStatus();
      return progress;
    }
    if (idle_polls == 0) continue;
    if (policy.yield_early && idle_polls % kIdlePollsPerYield == 0) sched_yield();
    if (idle_polls < 64 || idle_polls % 16 != 0) continue;
    const absl::Time now = absl::Now();
    if (on_clock(now) == PollResult::kDone) return absl::OkStatus();
    if (start == absl::InfinitePast()) start = now;
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rank ", rank_, " (", provider_name(), "): an operation did not complete within ",
          absl::FormatDuration(now - start), " of waiting"));
    }
    const absl::Duration waited = now - start;
    if (waited < policy.spin) continue;
    if (waited < policy.spin + policy.yield) {
      if (!policy.yield_early) sched_yield();  // (else yielded above: 16 is a multiple of 4)
      continue;
    }
    sleep(std::min(std::clamp(waited / 8, kShortestSleep, kLongestSleep), deadline - now));
  }
}

absl::Status Transport::WaitAll(absl::Span<const Completion* const> completions,
                                absl::Time deadline) {
  absl::Status first_error;
  for (const Completion* completion : completions) {
    absl::Status status = Wait(*completion, deadline);
    if (absl::IsDeadlineExceeded(status) && !completion->done()) return status;
    if (!status.ok() && first_error.ok()) first_error = std::move(status);
  }
  return first_error;
}

absl::Status Transport::BeginConnect(absl::Span<const std::string> addresses) {
  if (addresses.size() != static_cast<size_t>(size_)) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank_, " (", provider_name(),
                                                   "): Connect got ", addresses.size(),
                                                   " addresses for ", size_, " ranks"));
  }
  reachable_.assign(size_, 0);
  for (int peer = 0; peer < size_; ++peer) {
    reachable_[peer] = peer != rank_ && !addresses[peer].empty() ? 1 : 0;
  }
  return absl::OkStatus();
}

absl::Status Transport::FrozenError(absl::string_view operation) const {
  return absl::FailedPreconditionError(
      absl::StrCat(operation, " on rank ", rank_, " (", provider_name(),
                   "): the transport was stopped when its job failed; it moves no more data"));
}

absl::Status Transport::CheckPeerSlow(absl::string_view operation, int peer) const {
  if (frozen_) return FrozenError(operation);
  if (peer < 0 || peer >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(operation, " on rank ", rank_, ": peer ", peer,
                                                   " is not a rank of the ", size_, "-rank job"));
  }
  if (peer == rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        operation, " on rank ", rank_, ": peer is this rank; a transfer to oneself is a copy"));
  }
  if (!reachable_.empty() && !reachable_[peer]) {
    return absl::InvalidArgumentError(absl::StrCat(operation, " on rank ", rank_, ": rank ", peer,
                                                   " is not connected through ", provider_name()));
  }
  return absl::OkStatus();
}

absl::Status Transport::CheckMessageSlow(absl::string_view operation, int peer, uint64_t tag,
                                         const void* data, size_t bytes,
                                         const MemoryRegion* region) const {
  if (absl::Status status = CheckPeer(operation, peer); !status.ok()) return status;
  if (tag > kMaxTag) {
    return absl::InvalidArgumentError(absl::StrCat(operation, " on rank ", rank_, ": tag ", tag,
                                                   " exceeds the ", kTagBits, "-bit tag space"));
  }
  if (data == nullptr && bytes > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, " on rank ", rank_, ": the buffer is null but bytes is ", bytes));
  }
  if (region != nullptr && !region->Contains(data, bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, " on rank ", rank_, ": the buffer of ", bytes,
                     " bytes is not inside the MemoryRegion given for it (", region->length(),
                     " bytes at ", absl::Hex(reinterpret_cast<uintptr_t>(region->base())), ")"));
  }
  return absl::OkStatus();
}

absl::Status Transport::CheckOneSided(absl::string_view operation, const void* data, size_t bytes,
                                      const RemoteRegion& remote, size_t offset,
                                      uint64_t notify_tag, MemoryAccess needed,
                                      const MemoryRegion* region) const {
  if (absl::Status status = CheckMessage(operation, remote.peer(), notify_tag, data, bytes, region);
      !status.ok()) {
    return status;
  }
  if (!Allows(remote.access(), needed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, " on rank ", rank_, ": rank ", remote.peer(),
                     "'s region was not registered for ",
                     needed == MemoryAccess::kRemoteWrite ? "remote writes" : "remote reads"));
  }
  if (offset > remote.length() || bytes > remote.length() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        operation, " on rank ", rank_, ": bytes [", offset, ", ", offset + bytes,
        ") lie outside rank ", remote.peer(), "'s region of ", remote.length(), " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace zcoll
