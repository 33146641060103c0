// store_flood: floods a TCP store with what a client holding the job key could send,
// and measures the server's memory against its documented bound (tcp_store.h): about
// max_stored_bytes + max_buffered_bytes + 2 KiB per connection over what it used
// before.
//
// The server runs in a child process of its own, so its resident memory (VmHWM in
// /proc) is its own. Attacks, one after another, each on fresh connections:
//   empty-keys    Sets of empty values under new keys until the store refuses one
//   big-values    Sets of the largest value under new keys until refused
//   half-frames   connections that announce the largest frame, send a little of it
//                 and stop
//   unread-gets   connections that Get the largest value and never read the reply
//   idle          connections that connect and never say Hello
// Prints one line per attack (the server's peak resident memory after it) and the
// bound; exits 1 if the peak exceeds the bound by more than --slack-mb.
//
//   bazel run //testing:store_flood -- --stored-mb=256 --buffered-mb=64 --connections=1024

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "testing/sanitizers.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_wire.h"
#include "transport/bootstrap/tcp_store.h"

namespace zcoll {
namespace {

struct Options {
  size_t stored_mb = 256;
  size_t buffered_mb = 64;
  size_t connections = 1024;
  size_t slack_mb = 48;
};

// VmHWM (peak resident) of `pid`, in KiB; 0 if unreadable.
size_t PeakKiB(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      size_t kib = 0;
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(6, line.size() - 9)), &kib);
      return kib;
    }
  }
  return 0;
}

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// A connection that has said Hello with the job key (-1 if the server refused it).
int Member(int port, const std::string& key) {
  const int fd = Connect(port);
  if (fd < 0) return -1;
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  char reply[5];
  if (!SendAll(fd, store_wire::Frame(
                       store_wire::EncodeRequest({store_wire::Opcode::kHello, key, "", 0}))) ||
      recv(fd, reply, sizeof(reply), MSG_WAITALL) != 5 ||
      reply[4] != static_cast<char>(store_wire::Opcode::kOk)) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Server {
  pid_t pid = -1;
  int port = -1;
};

// A TcpStoreServer in a child process of its own.
Server StartServer(const std::string& key, const TcpStoreLimits& limits) {
  int ready[2];
  if (pipe(ready) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    absl::StatusOr<std::unique_ptr<TcpStoreServer>> started =
        TcpStoreServer::Start("127.0.0.1", 0, key, limits);
    const int port = started.ok() ? (*started)->port() : -1;
    (void)!write(ready[1], &port, sizeof(port));
    pause();  // serves from its thread until killed
    _exit(0);
  }
  close(ready[1]);
  Server server{pid, -1};
  if (read(ready[0], &server.port, sizeof(server.port)) != sizeof(server.port)) server.port = -1;
  close(ready[0]);
  absl::SleepFor(absl::Milliseconds(100));
  return server;
}

// Sets under new keys until refused, on one connection, each reply read.
size_t Fill(int port, const std::string& key, const char* prefix, size_t value_bytes) {
  const int fd = Member(port, key);
  size_t sets = 0;
  const std::string value(value_bytes, 'v');
  while (fd >= 0 && sets < 50'000'000) {
    const std::string frame = store_wire::Frame(store_wire::EncodeRequest(
        {store_wire::Opcode::kSet, absl::StrCat(prefix, ".", sets), value, 0}));
    char header[5];
    if (!SendAll(fd, frame) || recv(fd, header, sizeof(header), MSG_WAITALL) != 5 ||
        header[4] != static_cast<char>(store_wire::Opcode::kOk)) {
      break;
    }
    ++sets;
  }
  if (fd >= 0) close(fd);
  return sets;
}

// Connections of members that announce the largest frame and stop after a little.
size_t HalfFrames(int port, const std::string& key, size_t connections, std::vector<int>& fds) {
  const std::string set = store_wire::Frame(store_wire::EncodeRequest(
      {store_wire::Opcode::kSet, "half", std::string(kMaxStoreValueBytes, 'h'), 0}));
  for (size_t i = 0; i < connections; ++i) {
    const int fd = Member(port, key);
    if (fd < 0) break;
    fds.push_back(fd);
    SendAll(fd, absl::string_view(set).substr(0, 64 * 1024));
  }
  return fds.size();
}

// Members that Get the largest value, four times, and never read a reply.
size_t UnreadGets(int port, const std::string& key, size_t connections, std::vector<int>& fds) {
  const int setter = Member(port, key);
  if (setter < 0) return 0;
  char header[5];
  SendAll(setter,
          store_wire::Frame(store_wire::EncodeRequest(
              {store_wire::Opcode::kSet, "big", std::string(kMaxStoreValueBytes, 'g'), 0})));
  recv(setter, header, sizeof(header), MSG_WAITALL);
  close(setter);
  const std::string get =
      store_wire::Frame(store_wire::EncodeRequest({store_wire::Opcode::kGet, "big", "", 1000}));
  for (size_t i = 0; i < connections; ++i) {
    const int fd = Member(port, key);
    if (fd < 0) break;
    fds.push_back(fd);
    for (int request = 0; request < 4; ++request) SendAll(fd, get);
  }
  return fds.size();
}

// Connections that never say Hello.
size_t Idle(int port, size_t connections, std::vector<int>& fds) {
  for (size_t i = 0; i < connections; ++i) {
    const int fd = Connect(port);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  return fds.size();
}

int Run(const Options& options) {
  const std::string key = NewJobKey();
  TcpStoreLimits limits;
  limits.max_stored_bytes = options.stored_mb << 20;
  limits.max_buffered_bytes = options.buffered_mb << 20;
  limits.max_connections = options.connections;
  std::printf(
      "store_flood: limits %zu MiB stored, %zu MiB buffered, %zu connections; bound: "
      "the server's start + stored + buffered + 2 KiB per connection\n",
      options.stored_mb, options.buffered_mb, options.connections);
  std::printf("%-12s %10s %12s %12s %12s\n", "attack", "requests", "start_MiB", "peak_MiB",
              "bound_MiB");
  bool within = true;
  const char* attacks[] = {"empty-keys", "big-values", "half-frames", "unread-gets", "idle"};
  for (const char* attack : attacks) {
    const Server server = StartServer(key, limits);
    if (server.port < 0) {
      std::fprintf(stderr, "store_flood: the server did not start\n");
      return 2;
    }
    const size_t start_kib = PeakKiB(server.pid);
    std::vector<int> fds;
    const std::string name = attack;
    size_t requests = 0;
    if (name == "empty-keys") requests = Fill(server.port, key, attack, 0);
    if (name == "big-values") requests = Fill(server.port, key, attack, kMaxStoreValueBytes);
    if (name == "half-frames") requests = HalfFrames(server.port, key, options.connections, fds);
    if (name == "unread-gets") requests = UnreadGets(server.port, key, options.connections, fds);
    if (name == "idle") requests = Idle(server.port, options.connections * 2, fds);
    absl::SleepFor(absl::Milliseconds(500));
    const size_t peak_kib = PeakKiB(server.pid);
    for (int fd : fds) close(fd);
    kill(server.pid, SIGKILL);
    waitpid(server.pid, nullptr, 0);
    const size_t bound_kib = start_kib + ((options.stored_mb + options.buffered_mb) << 10) +
                             2 * (options.connections + 16);
    const bool ok = peak_kib <= bound_kib + (options.slack_mb << 10);
    within = within && ok;
    std::printf("%-12s %10zu %12.1f %12.1f %12.1f%s\n", attack, requests, start_kib / 1024.0,
                peak_kib / 1024.0, bound_kib / 1024.0, ok ? "" : "  OVER");
    std::fflush(stdout);
  }
  std::printf("%s\n", within ? "every attack within the bound" : "an attack went OVER the bound");
  if (testing::kMemoryFiguresSkipped != nullptr) {
    std::printf("store_flood: the bound %s\n", testing::kMemoryFiguresSkipped);
    return 0;
  }
  return within ? 0 : 1;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  zcoll::Options options;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    size_t* field = nullptr;
    absl::string_view value;
    for (auto [name, target] :
         {std::pair<absl::string_view, size_t*>{"--stored-mb=", &options.stored_mb},
          {"--buffered-mb=", &options.buffered_mb},
          {"--connections=", &options.connections},
          {"--slack-mb=", &options.slack_mb}}) {
      if (arg.rfind(name, 0) == 0) {
        field = target;
        value = arg.substr(name.size());
      }
    }
    if (field == nullptr || !absl::SimpleAtoi(value, field)) {
      std::fprintf(stderr,
                   "usage: store_flood [--stored-mb=N] [--buffered-mb=N] [--connections=N] "
                   "[--slack-mb=N]\n");
      return 2;
    }
  }
  return zcoll::Run(options);
}
