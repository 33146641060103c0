#include "transport/peer_monitor.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "transport/envelope.h"

namespace zcoll {
namespace {

// poll(2) on every pidfd costs a syscall; checking more often than this gains little
// (a dead peer is found within this interval of the next progress call).
constexpr absl::Duration kCheckInterval = absl::Milliseconds(2);

int OpenPidfd(int64_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
}

}  // namespace

PeerMonitor::PeerMonitor(int size) : peers_(size), dead_(size, false) {}

PeerMonitor::~PeerMonitor() {
  for (int fd : fds_) close(fd);
}

void PeerMonitor::Watch(int rank, absl::string_view host, int64_t pid) {
  Peer& peer = peers_[rank];
  peer.host = std::string(host);
  peer.pid = pid;
  if (host != LocalHostName() || pid <= 0) return;
  peer.fd = OpenPidfd(pid);
  if (peer.fd >= 0) {
    fds_.push_back(peer.fd);
    fd_ranks_.push_back(rank);
  } else if (errno == ESRCH) {
    dead_[rank] = true;  // gone before we could watch it; reported by NewDeaths
    fd_ranks_.push_back(rank);
    fds_.push_back(-1);
  } else {
    ZCOLL_LOG(DEBUG) << "pidfd_open(" << pid << ") failed: errno " << errno << "; rank " << rank
                     << " is not watched";
  }
}

std::vector<int> PeerMonitor::NewDeaths() {
  std::vector<int> deaths;
  if (fds_.empty()) return deaths;
  const absl::Time now = absl::Now();
  if (now < next_check_) return deaths;
  next_check_ = now + kCheckInterval;
  std::vector<pollfd> polls(fds_.size());
  for (size_t i = 0; i < fds_.size(); ++i) polls[i] = {fds_[i], POLLIN, 0};
  if (poll(polls.data(), polls.size(), 0) < 0 && errno != EINTR) return deaths;
  for (size_t i = 0; i < fds_.size(); ++i) {
    const bool exited = fds_[i] < 0 || (polls[i].revents & (POLLIN | POLLHUP | POLLERR));
    if (!exited) continue;
    const int rank = fd_ranks_[i];
    dead_[rank] = true;
    deaths.push_back(rank);
    if (fds_[i] >= 0) close(fds_[i]);
    fds_.erase(fds_.begin() + i);
    fd_ranks_.erase(fd_ranks_.begin() + i);
    polls.erase(polls.begin() + i);
    --i;
  }
  return deaths;
}

std::string PeerMonitor::Describe(int rank) const {
  const Peer& peer = peers_[rank];
  if (peer.host.empty()) return absl::StrCat("rank ", rank);
  return absl::StrCat("rank ", rank, " (pid ", peer.pid, " on host ", peer.host, ")");
}

void PeerMonitor::SleepUntilDeath(absl::Duration timeout) const {
  std::vector<pollfd> polls;
  for (int fd : fds_) {
    if (fd >= 0) polls.push_back({fd, POLLIN, 0});
  }
  if (polls.empty()) {
    absl::SleepFor(timeout);
    return;
  }
  const timespec limit = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  ppoll(polls.data(), polls.size(), &limit, nullptr);
}

}  // namespace zcoll
