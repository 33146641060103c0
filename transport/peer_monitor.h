// Watches same-host peers for death through pidfds, so that a transfer to or from a
// process that was killed ends with Unavailable at once instead of at a deadline.
// Providers on one host (shared memory, libfabric shm, UCX posix) have no other way
// to learn that a peer is gone; network providers also get errors from their
// connections, and a peer on another host is only watched through those.
//
// Not thread-safe: owned and used by one Transport.

#ifndef ZCOLL_TRANSPORT_PEER_MONITOR_H_
#define ZCOLL_TRANSPORT_PEER_MONITOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace zcoll {

class PeerMonitor {
 public:
  explicit PeerMonitor(int size);
  ~PeerMonitor();
  PeerMonitor(const PeerMonitor&) = delete;
  PeerMonitor& operator=(const PeerMonitor&) = delete;

  // Records where `rank` runs; watches it when `host` is this host.
  void Watch(int rank, absl::string_view host, int64_t pid);

  // Ranks found dead since the last call (each reported once). Cheap: one poll(2)
  // with no timeout, at most every few milliseconds.
  std::vector<int> NewDeaths();

  bool IsDead(int rank) const { return dead_[rank]; }
  // Whether `rank` has exited, asked of its pidfd now (it is still reported by
  // NewDeaths): for a provider's error about the peer, which may come before the
  // monitor's regular look.
  bool ExitedNow(int rank);
  // Why `rank` stopped answering, for a provider whose own word is `provider_reason`
  // ("is unreachable: Endpoint timeout"): how it ended if it exited, its condition
  // if it is stopped, else the provider's word.
  std::string WhyGone(int rank, absl::string_view provider_reason);

  // "rank 3 (pid 4242 on host node7)".
  std::string Describe(int rank) const;
  // How a rank that died ended, as the kernel still told while its parent had not
  // reaped it: "was killed by signal 9 (SIGKILL)", "exited with code 3"; "exited"
  // when that was gone already.
  std::string HowItEnded(int rank) const;
  // What can be seen of a living same-host rank that may explain a silence: "is
  // stopped (a SIGSTOP, or a debugger)", "" when it is running or not watched.
  std::string Condition(int rank) const;
  // The watched ranks that are dead or stopped, ascending.
  std::vector<int> NotRunning() const;
  // Describe(rank) followed by HowItEnded or Condition, whichever applies:
  // "rank 3 (pid 4242 on host node7) was killed by signal 9 (SIGKILL)".
  std::string DescribeState(int rank) const;

  // Blocks up to `timeout` or until a watched peer dies.
  void SleepUntilDeath(absl::Duration timeout) const;

  // The pidfds, for providers that poll them with their own fds.
  const std::vector<int>& fds() const { return fds_; }

 private:
  struct Peer {
    std::string host;
    int64_t pid = 0;
    int fd = -1;
    std::string ended;  // HowItEnded, read when the death was seen
  };
  // Reads how `rank`'s process ended into its `ended`, once.
  void ReadEnd(int rank);

  std::vector<Peer> peers_;
  std::vector<bool> dead_;
  std::vector<int> fds_;
  std::vector<int> fd_ranks_;
  absl::Time next_check_ = absl::InfinitePast();
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_PEER_MONITOR_H_
