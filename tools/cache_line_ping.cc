// cache_line_ping: the floor under a small node collective on this machine: two
// processes, each writing its own cache line of a shared mapping and spinning until it
// sees the other's write of the same round (the pattern of a node call's publication
// and its peer's wait), timed per round. Printed as microseconds per exchange, to set
// beside zcoll_bench's small rows (README, "Quick node calls").

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/spin_pause.h"

namespace {

constexpr char kUsage[] =
    "usage: cache_line_ping [--rounds N]\n"
    "\n"
    "Two processes exchange N rounds (default 200000, at least 10) through one cache line\n"
    "each, and the time per round (after the first tenth) is printed.\n";

struct alignas(64) Line {
  std::atomic<uint32_t> round{0};
};

}  // namespace

int main(int argc, char** argv) {
  uint32_t rounds = 200000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &rounds) && rounds >= 10) {
      ++i;
      continue;
    }
    std::fputs(kUsage, stderr);
    return 2;
  }
  void* shared =
      mmap(nullptr, 2 * sizeof(Line), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("cache_line_ping: mmap");
    return 1;
  }
  Line* lines = new (shared) Line[2];
  const pid_t child = fork();
  if (child < 0) {
    std::perror("cache_line_ping: fork");
    return 1;
  }
  const int me = child == 0 ? 1 : 0;
  const uint32_t warmup = rounds / 10;
  absl::Time start;
  for (uint32_t round = 1; round <= rounds; ++round) {
    if (round == warmup + 1) start = absl::Now();
    lines[me].round.store(round, std::memory_order_seq_cst);
    // Bounded: a peer that died leaves this rank spinning no longer than 10 s.
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    for (uint32_t polls = 0; lines[1 - me].round.load(std::memory_order_acquire) < round; ++polls) {
      zcoll::PauseWhileSpinning();
      if ((polls & 0xffff) == 0xffff && absl::Now() > give_up) {
        std::fprintf(stderr, "cache_line_ping: the other process stopped at round %u\n", round);
        return 1;
      }
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (me == 1) return 0;
  int child_status = 0;
  if (waitpid(child, &child_status, 0) != child || !WIFEXITED(child_status) ||
      WEXITSTATUS(child_status) != 0) {
    std::fputs("cache_line_ping: the other process failed\n", stderr);
    return 1;
  }
  std::printf("cache_line_ping: %.3f us per exchange (2 processes, %u rounds timed)\n",
              seconds / (rounds - warmup) * 1e6, rounds - warmup);
  return 0;
}
