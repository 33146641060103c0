#include "transport/peer_monitor.h"

#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

// The fields of /proc/PID/stat after the command name (field 3, the state, first),
// or none when the process is gone.
std::vector<std::string> StatFields(int64_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(file, line)) return {};
  const size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return {};
  return absl::StrSplit(absl::string_view(line).substr(name_end + 1), ' ', absl::SkipEmpty());
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
    ReadEnd(rank);
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

void PeerMonitor::ReadEnd(int rank) {
  Peer& peer = peers_[rank];
  if (!peer.ended.empty()) return;
  // A process its parent has not reaped yet is a zombie whose stat still holds its
  // exit status (field 52): read it now, before it is gone.
  peer.ended = "exited";
  const std::vector<std::string> fields = StatFields(peer.pid);
  int status = 0;
  if (fields.size() > 49 && fields[0] == "Z" && absl::SimpleAtoi(fields[49], &status)) {
    if (WIFSIGNALED(status)) {
      const char* name = sigabbrev_np(WTERMSIG(status));
      peer.ended = absl::StrCat("was killed by signal ", WTERMSIG(status),
                                name != nullptr ? absl::StrCat(" (SIG", name, ")") : "");
    } else if (WIFEXITED(status)) {
      peer.ended = absl::StrCat("exited with code ", WEXITSTATUS(status));
    }
  }
}

bool PeerMonitor::ExitedNow(int rank) {
  if (dead_[rank]) return true;
  const int fd = peers_[rank].fd;
  if (fd < 0) return false;
  pollfd entry{fd, POLLIN, 0};
  if (poll(&entry, 1, 0) <= 0 || (entry.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return false;
  ReadEnd(rank);
  return true;
}

std::string PeerMonitor::WhyGone(int rank, absl::string_view provider_reason) {
  if (ExitedNow(rank)) return HowItEnded(rank);
  const std::string condition = Condition(rank);
  if (!condition.empty()) return absl::StrCat(condition, "; ", provider_reason);
  return std::string(provider_reason);
}

std::string PeerMonitor::HowItEnded(int rank) const {
  return peers_[rank].ended.empty() ? "exited" : peers_[rank].ended;
}

std::string PeerMonitor::Condition(int rank) const {
  const Peer& peer = peers_[rank];
  if (dead_[rank] || peer.fd < 0) return "";
  const std::vector<std::string> fields = StatFields(peer.pid);
  if (!fields.empty() && (fields[0] == "T" || fields[0] == "t")) {
    return "is stopped (a SIGSTOP, or a debugger)";
  }
  return "";
}

std::vector<int> PeerMonitor::NotRunning() const {
  std::vector<int> ranks;
  for (int rank = 0; rank < static_cast<int>(peers_.size()); ++rank) {
    if (dead_[rank] || !Condition(rank).empty()) ranks.push_back(rank);
  }
  return ranks;
}

std::string PeerMonitor::DescribeState(int rank) const {
  const std::string state = dead_[rank] ? HowItEnded(rank) : Condition(rank);
  return state.empty() ? Describe(rank) : absl::StrCat(Describe(rank), " ", state);
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
