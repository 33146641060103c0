#include "collectives/node_segment.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

// (A random part, as the engine's own names have: a run killed before it removed its
// segments leaves them under its pid, which a later run may be given.)
std::string FreshName(absl::string_view what) {
  static int counter = 0;
  static const uint32_t run = static_cast<uint32_t>(std::random_device{}());
  return absl::StrCat(SharedMemoryPrefix(getpid()), "node-test-", what, "-", absl::Hex(run), "-",
                      counter++);
}

bool NameExists(const std::string& name) {
  struct stat info {};
  return stat(("/dev/shm/" + name).c_str(), &info) == 0;
}

// Waits for `done` as the engine does: polls, then sleeps on the rank's doorbell,
// checking again between announcing the sleep and sleeping. False after 20 s.
bool WaitUntil(NodeSegment& segment, int rank, const std::function<bool()>& done) {
  for (int spin = 0; spin < 64; ++spin) {
    if (done()) return true;
  }
  for (int naps = 0; naps < 20000; ++naps) {
    const uint32_t doorbell = segment.BeginSleep(rank);
    if (done()) {
      segment.EndSleep(rank);
      return true;
    }
    segment.Sleep(rank, doorbell, absl::Milliseconds(1));
    segment.EndSleep(rank);
  }
  return done();
}

TEST(SequenceReachedTest, ComparesModuloTwoToThe32) {
  EXPECT_TRUE(SequenceReached(5, 5));
  EXPECT_TRUE(SequenceReached(6, 5));
  EXPECT_FALSE(SequenceReached(4, 5));
  EXPECT_TRUE(SequenceReached(2, 0xFFFFFFFEu));   // 4 past it, across the wrap
  EXPECT_FALSE(SequenceReached(0xFFFFFFFEu, 2));  // 4 before it
  EXPECT_TRUE(SequenceReached(0x7FFFFFFFu, 0));
  EXPECT_FALSE(SequenceReached(0x80000000u, 0));  // too far: read as before
}

TEST(NodeSegmentTest, OpenChecksTheShapeAndTheCreatorUnlinksTheName) {
  const std::string name = FreshName("shape");
  absl::StatusOr<NodeSegment> leader = NodeSegment::Create(name, 3, 1000);
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_EQ(leader->slot_bytes(), 1024u) << "slots are whole cache lines";
  EXPECT_EQ(leader->bytes(), NodeSegment::SegmentBytes(3, 1000));
  EXPECT_TRUE(NameExists(name));

  absl::StatusOr<NodeSegment> wrong = NodeSegment::Open(name, 4, 1000, 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("another shape"));

  absl::StatusOr<NodeSegment> first = NodeSegment::Open(name, 3, 1000, 1);
  absl::StatusOr<NodeSegment> second = NodeSegment::Open(name, 3, 1000, 2);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(leader->attached(), 2);
  EXPECT_EQ(second->pid(2), static_cast<uint32_t>(getpid()));
  EXPECT_TRUE(first->ProbeSingleCopy().ok()) << "one process reads its own memory";
  leader->Unlink();
  EXPECT_FALSE(NameExists(name));
  // The memory stays shared after the name is gone.
  std::memcpy(leader->Slot(0, 7), "hello", 6);
  leader->Publish(0, 7);
  EXPECT_EQ(first->published(0, 7), 7u);
  EXPECT_STREQ(second->Slot(0, 7), "hello");

  absl::StatusOr<NodeSegment> gone = NodeSegment::Open(name, 3, 1000, 1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(gone.status().message(), HasSubstr(name));
  EXPECT_FALSE(NodeSegment::Create(name, 0, 64).ok());
}

TEST(NodeSegmentTest, ACreatorThatGoesAwayBeforeUnlinkingRemovesTheName) {
  const std::string name = FreshName("destroyed");
  { ASSERT_OK(NodeSegment::Create(name, 2, 64)); }
  EXPECT_FALSE(NameExists(name));
}

// A rank that left (NodeSegment::Leave) left unfinished only the calls it had not said
// it had read: one that finished its last call and then destroyed its communicator
// fails no peer still in that call (an eager Bcast's root returns at once, so a leaf
// may find it gone right after looking for its publication), and one whose call
// failed fails its peers in that call. Across the sequence wrap.
TEST(NodeSegmentTest, ALeaverLeftUnfinishedOnlyTheCallsItHadNotRead) {
  constexpr uint32_t kLast = 0xFFFFFFFFu;  // the leaver's last call; the next is 0
  absl::StatusOr<NodeSegment> segment = NodeSegment::Create(FreshName("leaver"), 3, 64, kLast);
  ASSERT_TRUE(segment.ok()) << segment.status();
  segment->Publish(1, kLast);
  segment->Publish(2, kLast);
  EXPECT_FALSE(segment->LeftUnfinished(1, kLast)) << "still in the call";
  // Rank 1 finishes its last call and leaves; rank 2 leaves the same call unfinished.
  segment->Consume(1, kLast);
  segment->Leave(1);
  segment->Leave(2);
  EXPECT_FALSE(segment->LeftUnfinished(1, kLast)) << "rank 1 had read the call before it left";
  EXPECT_TRUE(segment->LeftUnfinished(1, kLast + 1)) << "rank 1 never entered the next call";
  EXPECT_TRUE(segment->LeftUnfinished(2, kLast)) << "rank 2 left the call before reading it";
  EXPECT_FALSE(segment->LeftUnfinished(0, kLast)) << "rank 0 never left";
}

// Every rank adds its contribution to every other's, call after call, through its
// slot (parity of the call) or inline payload, reusing each buffer two calls later
// only once every rank consumed it. Starting a few calls before 2^32 crosses the wrap.
void RunRounds(NodeSegment& segment, int rank, uint32_t first, int rounds,
               std::vector<std::string>& errors) {
  const int ranks = segment.ranks();
  for (int round = 0; round < rounds; ++round) {
    const uint32_t sequence = first + static_cast<uint32_t>(round);
    const bool inline_call = round % 3 == 0;
    const size_t words = inline_call ? NodeSegment::kInlineBytes / 8 : segment.slot_bytes() / 8;
    // The buffer of this parity was last read in sequence - 2.
    if (!WaitUntil(segment, rank, [&] {
          for (int peer = 0; peer < ranks; ++peer) {
            if (!SequenceReached(segment.consumed(peer), sequence - 2)) return false;
          }
          return true;
        })) {
      errors[rank] = absl::StrCat("rank ", rank, " waited too long to reuse its buffer");
      return;
    }
    char* mine = inline_call ? segment.InlinePayload(rank, sequence) : segment.Slot(rank, sequence);
    for (size_t w = 0; w < words; ++w) {
      const uint64_t value = (uint64_t{sequence} << 16) + rank * 1000 + w;
      std::memcpy(mine + w * 8, &value, 8);
    }
    segment.Publish(rank, sequence);
    for (int peer = 0; peer < ranks; ++peer) {
      if (!WaitUntil(segment, rank, [&] {
            return SequenceReached(segment.published(peer, sequence), sequence);
          })) {
        errors[rank] = absl::StrCat("rank ", rank, " waited too long for rank ", peer);
        return;
      }
      const char* theirs =
          inline_call ? segment.InlinePayload(peer, sequence) : segment.Slot(peer, sequence);
      for (size_t w = 0; w < words; ++w) {
        uint64_t value;
        std::memcpy(&value, theirs + w * 8, 8);
        const uint64_t expected = (uint64_t{sequence} << 16) + peer * 1000 + w;
        if (value != expected) {
          errors[rank] = absl::StrCat("rank ", rank, " read ", value, " from rank ", peer, " word ",
                                      w, " in call ", sequence, "; expected ", expected);
          return;
        }
      }
    }
    segment.Consume(rank, sequence);
  }
}

TEST(NodeSegmentTest, ThreadsExchangeAcrossTheSequenceWrap) {
  constexpr int kRanks = 4;
  constexpr uint32_t kFirst = 0xFFFFFFFFu - 300;
  const std::string name = FreshName("threads");
  absl::StatusOr<NodeSegment> leader = NodeSegment::Create(name, kRanks, 256, kFirst);
  ASSERT_TRUE(leader.ok()) << leader.status();
  std::vector<std::optional<NodeSegment>> segments(kRanks);
  for (int rank = 1; rank < kRanks; ++rank) {
    absl::StatusOr<NodeSegment> opened = NodeSegment::Open(name, kRanks, 256, rank);
    ASSERT_TRUE(opened.ok()) << opened.status();
    segments[rank].emplace(std::move(*opened));
  }
  leader->Unlink();
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    NodeSegment& segment = rank == 0 ? *leader : *segments[rank];
    threads.emplace_back([&, rank] { RunRounds(segment, rank, kFirst, 1000, errors); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  EXPECT_EQ(leader->published(3, kFirst + 999), kFirst + 999) << "the numbers wrapped past 2^32";
}

TEST(NodeSegmentTest, ProcessesExchangeAndWakeEachOther) {
  constexpr int kRanks = 2;
  const std::string name = FreshName("processes");
  absl::StatusOr<NodeSegment> leader = NodeSegment::Create(name, kRanks, 4096, 0xFFFFFF00u);
  ASSERT_TRUE(leader.ok()) << leader.status();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<NodeSegment> mine = NodeSegment::Open(name, kRanks, 4096, 1);
    if (!mine.ok()) _exit(2);
    // A child may read its parent's memory (Yama's scope 1 allows it too).
    if (!mine->ProbeSingleCopy().ok()) _exit(3);
    if (mine->pid(0) != static_cast<uint32_t>(getppid()) ||
        mine->pid(1) != static_cast<uint32_t>(getpid()))
      _exit(4);
    std::vector<std::string> errors(kRanks);
    RunRounds(*mine, 1, 0xFFFFFF00u, 600, errors);
    _exit(errors[1].empty() ? 0 : 1);
  }
  std::vector<std::string> errors(kRanks);
  RunRounds(*leader, 0, 0xFFFFFF00u, 600, errors);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed: " << status;
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(leader->attached(), 1);
}

TEST(NodeSegmentTest, AsymmetricFencesAreTheCreatorsVerdict) {
  const std::string name = FreshName("fences");
  absl::StatusOr<NodeSegment> leader = NodeSegment::Create(name, 2, 64);
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_FALSE(leader->asymmetric_fences()) << "full fences until the creator decides";
  leader->SetAsymmetricFences(true);
  absl::StatusOr<NodeSegment> other = NodeSegment::Open(name, 2, 64, 1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->asymmetric_fences());
  leader->SetAsymmetricFences(false);
  EXPECT_FALSE(other->asymmetric_fences());
}

// How a sleeper's wait for a publication went (SleepUntilPublished).
struct SleepOutcome {
  bool came_before_the_sleep = false;  // seen before announcing a sleep
  bool slept = false;
  int lost = 0;  // sleeps that outlasted the publication by most of their nap
};

int64_t MonotonicNanos() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

// When the leader published each sequence, in memory both processes share: the
// leader writes the time right after publishing, then the sequence.
struct PublicationClock {
  std::atomic<int64_t> at_nanos{0};
  std::atomic<uint32_t> sequence{0};
};

// Waits for `peer`'s publication of `sequence` by sleeping at once (no spinning), each
// sleep up to `nap`. A lost wakeup is a publication that came while this rank announced
// its sleep and did not wake it: the sleep then runs out its nap with the publication
// there since about its start. So a sleep counts as lost when it ended 3/4 of a nap or
// more after the leader published. (Not "a sleep of most of its nap that finds the
// publication": on a loaded machine the leader may get no core for most of a nap and
// then publish and wake this rank properly, as it did under ThreadSanitizer.)
SleepOutcome SleepUntilPublished(NodeSegment& segment, int rank, int peer, uint32_t sequence,
                                 absl::Duration nap, const PublicationClock& clock) {
  SleepOutcome outcome;
  if (SequenceReached(segment.published(peer, sequence), sequence)) {
    outcome.came_before_the_sleep = true;
    return outcome;
  }
  for (int naps = 0; naps < 100; ++naps) {
    const uint32_t doorbell = segment.BeginSleep(rank);
    if (SequenceReached(segment.published(peer, sequence), sequence)) {
      segment.EndSleep(rank);
      return outcome;
    }
    segment.Sleep(rank, doorbell, nap);
    const int64_t woke_at = MonotonicNanos();
    segment.EndSleep(rank);
    outcome.slept = true;
    if (!SequenceReached(segment.published(peer, sequence), sequence)) continue;
    // Published: the leader writes its time next (bounded: it may be off its core).
    for (int waits = 0;
         waits < 100000 && clock.sequence.load(std::memory_order_acquire) != sequence; ++waits) {
      sched_yield();
    }
    if (clock.sequence.load(std::memory_order_acquire) == sequence &&
        woke_at - clock.at_nanos.load(std::memory_order_relaxed) >=
            absl::ToInt64Nanoseconds(nap * 0.75)) {
      ++outcome.lost;
    }
    return outcome;
  }
  outcome.lost = 1000;  // the peer never published
  return outcome;
}

// The race the fences decide, many times over, with either kind: a child process says
// it is ready for call s (publishes s), spins for a while and sleeps at once until the
// leader publishes s; the leader, spinning on the child's word, publishes s as soon as
// it sees it. The child moves its while so that the leader's publication lands as it
// goes to sleep (later when it slept, sooner when the publication came first), with a
// jitter. No publication may go unnoticed by the sleeper. (Mutation-checked on this
// machine: without BeginSleep's membarrier under asymmetric fences, or with a release
// store under full fences, the child slept through a publication in each of 5 and 3
// runs, within 60-370 ms: the race is the leader's store still in its store buffer
// when it looks at the sleepers' count, a window of about a cache line's trip.)
// `quiet`: the leader publishes quietly (full fences; NodeSegment::PublishQuietly) and
// then pays the look at the sleepers as the node engine does, by its Consume in odd
// rounds and before a wait in even ones.
void PublishWhileThePeerGoesToSleep(bool asymmetric, bool quiet = false) {
  if (asymmetric) {
    const absl::Status registered = NodeSegment::RegisterAsymmetricFences();
    if (!registered.ok()) GTEST_SKIP() << "this machine cannot: " << registered;
  }
  constexpr uint32_t kRounds = 20000;
  constexpr absl::Duration kNap = absl::Milliseconds(200);
  const std::string name = FreshName(asymmetric ? "asymmetric" : quiet ? "quiet" : "full");
  void* shared = mmap(nullptr, sizeof(PublicationClock), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  PublicationClock* clock = new (shared) PublicationClock;
  absl::StatusOr<NodeSegment> leader = NodeSegment::Create(name, 2, 64);
  ASSERT_TRUE(leader.ok()) << leader.status();
  leader->SetAsymmetricFences(asymmetric);
  leader->UseSetupVerdicts();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<NodeSegment> mine = NodeSegment::Open(name, 2, 64, 1);
    if (!mine.ok()) _exit(100);
    mine->UseSetupVerdicts();
    int lost = 0;
    uint32_t random = 12345, delay = 256;
    for (uint32_t sequence = 1; sequence <= kRounds && lost == 0; ++sequence) {
      mine->Publish(1, sequence);
      random = random * 1103515245u + 12345u;
      volatile uint32_t spin = delay / 2 + (random >> 16) % (delay + 1);
      while (spin > 0) spin = spin - 1;
      const SleepOutcome outcome = SleepUntilPublished(*mine, 1, 0, sequence, kNap, *clock);
      lost += outcome.lost;
      if (outcome.slept) delay = std::min<uint32_t>(delay + delay / 8 + 1, 1 << 16);
      if (outcome.came_before_the_sleep) delay -= delay / 8;
    }
    _exit(std::min(lost, 99));
  }
  int status = 0;
  bool child_gone = false;
  for (uint32_t sequence = 1; sequence <= kRounds && !child_gone; ++sequence) {
    for (int polls = 1; !SequenceReached(leader->published(1, sequence), sequence); ++polls) {
      if (polls % 1024 == 0) {
        sched_yield();  // the child may need this core
        if (waitpid(child, &status, WNOHANG) == child) {
          child_gone = true;  // it stopped at a lost wakeup, or failed
          break;
        }
      }
    }
    if (!quiet) {
      leader->Publish(0, sequence);
    } else {
      leader->PublishQuietly(0, sequence);
      if (sequence % 2 == 1) {
        leader->ConsumeAfterQuietPublication(0, sequence);
      } else {
        leader->WakeForQuietPublication();
      }
    }
    clock->at_nanos.store(MonotonicNanos(), std::memory_order_relaxed);
    clock->sequence.store(sequence, std::memory_order_release);
  }
  if (!child_gone) {
    ASSERT_EQ(waitpid(child, &status, 0), child);
  }
  munmap(shared, sizeof(PublicationClock));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "publications the child slept through (100: it could not open the segment)";
}

TEST(NodeSegmentTest, NoPublicationIsSleptThroughWithFullFences) {
  PublishWhileThePeerGoesToSleep(false);
}

TEST(NodeSegmentTest, NoPublicationIsSleptThroughWithAsymmetricFences) {
  PublishWhileThePeerGoesToSleep(true);
}

TEST(NodeSegmentTest, NoQuietPublicationIsSleptThrough) {
  PublishWhileThePeerGoesToSleep(false, /*quiet=*/true);
}

}  // namespace
}  // namespace zcoll
