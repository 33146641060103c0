#include "transport/bootstrap/tcp_store.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

enum class Opcode : uint8_t {
  // Requests.
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  // Replies.
  kOk = 64,
  kValue = 65,
  kNumber = 66,
  kTimeout = 67,
  kError = 68,
};

constexpr size_t kMaxFrameBytes = kMaxStoreValueBytes + 1024;
constexpr size_t kMaxFrameBytesBeforeHello = 4096;
// Connections beyond TcpStoreLimits::max_connections are accepted, this many at a
// time, only to be told at their Hello why they are refused (a refusal sent before
// the Hello is read could be lost to the reset that closing an unread socket
// sends).
constexpr size_t kRefusedConnections = 16;
// A reply a client does not read is dropped with the client past this.
constexpr size_t kMaxUnsentBytes = size_t{64} << 20;
constexpr absl::Duration kHelloWithin = absl::Seconds(10);
// How long a client waits beyond its deadline for the server's answer to a Get.
constexpr absl::Duration kReplySlack = absl::Seconds(5);

std::string Frame(std::string payload) {
  WireWriter writer;
  writer.U32(static_cast<uint32_t>(payload.size()));
  std::string frame = std::move(writer).Finish();
  frame += payload;
  return frame;
}

std::string Reply(Opcode opcode) {
  WireWriter writer;
  writer.U8(static_cast<uint8_t>(opcode));
  return Frame(std::move(writer).Finish());
}

std::string ReplyWithBytes(Opcode opcode, absl::string_view bytes) {
  WireWriter writer;
  writer.U8(static_cast<uint8_t>(opcode));
  writer.Bytes(bytes);
  return Frame(std::move(writer).Finish());
}

// Compares without an early exit, so that timing does not reveal how much of a
// guessed key was right.
bool SameKey(absl::string_view a, absl::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return difference == 0;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// ---------------------------------------------------------------------------------
// Server

struct Connection {
  int fd = -1;
  bool authenticated = false;
  bool closing = false;  // close once `out` is sent
  absl::Time hello_by;
  std::string in, out;
  std::optional<std::string> waiting_key;  // a Get not answered yet
  absl::Time waiting_until;
};

class StoreState {
 public:
  explicit StoreState(size_t max_stored_bytes) : max_stored_bytes_(max_stored_bytes) {}

  // Answers one request frame of an authenticated connection.
  void Handle(Connection& connection, absl::string_view payload, absl::Time now) {
    WireReader reader(payload);
    uint8_t opcode = 0;
    std::string key;
    if (!reader.U8(opcode) || !reader.Bytes(key, kMaxStoreKeyBytes) || !CheckStoreKey(key).ok()) {
      return Refuse(connection, "a malformed request");
    }
    switch (static_cast<Opcode>(opcode)) {
      case Opcode::kSet: {
        std::string value;
        if (!reader.Bytes(value, kMaxStoreValueBytes) || !reader.at_end()) {
          return Refuse(connection, "a malformed Set");
        }
        auto existing = values_.find(key);
        const size_t old_bytes = existing == values_.end() ? 0 : existing->second.size();
        if (stored_bytes_ - old_bytes + value.size() > max_stored_bytes_) {
          return Refuse(connection,
                        absl::StrCat("a Set of ", value.size(), " bytes: the store is full (",
                                     stored_bytes_, " of ", max_stored_bytes_, " bytes used)"));
        }
        stored_bytes_ = stored_bytes_ - old_bytes + value.size();
        values_[key] = std::move(value);
        connection.out += Reply(Opcode::kOk);
        return;
      }
      case Opcode::kGet: {
        uint64_t timeout_ms = 0;
        if (!reader.U64(timeout_ms) || !reader.at_end()) {
          return Refuse(connection, "a malformed Get");
        }
        connection.waiting_key = key;
        connection.waiting_until =
            now + absl::Milliseconds(std::min<uint64_t>(timeout_ms, uint64_t{1} << 40));
        AnswerIfSet(connection, now);
        return;
      }
      case Opcode::kAdd: {
        uint64_t delta = 0;
        if (!reader.U64(delta) || !reader.at_end()) return Refuse(connection, "a malformed Add");
        std::string& value = values_[key];
        int64_t current = 0;
        if (!value.empty() && !absl::SimpleAtoi(value, &current)) {
          connection.out += ReplyWithBytes(
              Opcode::kError, absl::StrCat("the value of key '", key, "' is not an integer"));
          return;
        }
        const int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(current) + delta);
        stored_bytes_ -= value.size();
        value = absl::StrCat(sum);
        stored_bytes_ += value.size();
        WireWriter writer;
        writer.U8(static_cast<uint8_t>(Opcode::kNumber));
        writer.U64(static_cast<uint64_t>(sum));
        connection.out += Frame(std::move(writer).Finish());
        return;
      }
      default:
        return Refuse(connection, "an unknown request");
    }
  }

  // Answers a waiting Get if its key is set or its time is up.
  void AnswerIfSet(Connection& connection, absl::Time now) {
    if (!connection.waiting_key) return;
    auto found = values_.find(*connection.waiting_key);
    if (found != values_.end()) {
      connection.out += ReplyWithBytes(Opcode::kValue, found->second);
    } else if (now >= connection.waiting_until) {
      connection.out += Reply(Opcode::kTimeout);
    } else {
      return;
    }
    connection.waiting_key.reset();
  }

  static void Refuse(Connection& connection, absl::string_view why) {
    connection.out += ReplyWithBytes(Opcode::kError, absl::StrCat("the store refused ", why));
    connection.closing = true;
  }

 private:
  const size_t max_stored_bytes_;
  std::map<std::string, std::string> values_;
  size_t stored_bytes_ = 0;
};

// Moves complete frames out of `connection.in`; false when one is over the bound.
bool NextFrame(Connection& connection, std::string& payload) {
  if (connection.in.size() < 4) return false;
  WireReader reader(absl::string_view(connection.in).substr(0, 4));
  uint32_t length = 0;
  reader.U32(length);
  const size_t limit = connection.authenticated ? kMaxFrameBytes : kMaxFrameBytesBeforeHello;
  if (length > limit) {
    StoreState::Refuse(connection, absl::StrCat("a message of ", length, " bytes"));
    connection.in.clear();
    return false;
  }
  if (connection.in.size() < 4 + size_t{length}) return false;
  payload.assign(connection.in, 4, length);
  connection.in.erase(0, 4 + size_t{length});
  return true;
}

}  // namespace

TcpStoreServer::TcpStoreServer(std::string host, int listener, int port, int wake_read,
                               int wake_write, std::string job_key, const TcpStoreLimits& limits)
    : host_(std::move(host)),
      listener_(listener),
      port_(port),
      wake_read_(wake_read),
      wake_write_(wake_write),
      job_key_(std::move(job_key)),
      limits_(limits) {
  thread_ = std::thread([this] { Serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  const char stop = 1;
  (void)!write(wake_write_, &stop, 1);
  thread_.join();
  close(listener_);
  close(wake_read_);
  close(wake_write_);
}

std::string TcpStoreServer::url() const { return absl::StrCat("tcp://", host_, ":", port_); }

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(
    absl::string_view host, int port, std::string job_key, const TcpStoreLimits& limits) {
  if (job_key.empty()) {
    return absl::InvalidArgumentError("the TCP store needs a job key (ZCOLL_JOB_KEY)");
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("TCP store port ", port, " is not 0-65535"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* addresses = nullptr;
  const std::string host_string(host);
  const std::string port_string = absl::StrCat(port);
  if (int failed = getaddrinfo(host_string.c_str(), port_string.c_str(), &hints, &addresses)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TCP store host '", host, "' does not resolve: ", gai_strerror(failed)));
  }
  int listener = -1;
  int error = 0;
  for (addrinfo* address = addresses; address != nullptr && listener < 0;
       address = address->ai_next) {
    listener = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, 0);
    if (listener < 0) {
      error = errno;
      continue;
    }
    const int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (bind(listener, address->ai_addr, address->ai_addrlen) != 0 || listen(listener, 512) != 0) {
      error = errno;
      close(listener);
      listener = -1;
    }
  }
  freeaddrinfo(addresses);
  if (listener < 0) {
    return absl::UnavailableError(absl::StrCat("the TCP store cannot listen on ", host, ":", port,
                                               ": ", std::strerror(error)));
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  SetNonBlocking(listener);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(listener);
    return absl::ResourceExhaustedError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(
      host_string, listener, bound_port, wake[0], wake[1], std::move(job_key), limits));
}

void TcpStoreServer::Serve() {
  StoreState state(limits_.max_stored_bytes);
  std::vector<Connection> connections;
  const size_t most_open = limits_.max_connections + kRefusedConnections;
  size_t authenticated = 0;
  std::vector<pollfd> polls;
  while (true) {
    absl::Time now = absl::Now();
    // The next time something is due: a Get's deadline or a hello's.
    absl::Time next = now + absl::Seconds(1);
    for (const Connection& connection : connections) {
      if (connection.waiting_key) next = std::min(next, connection.waiting_until);
      if (!connection.authenticated) next = std::min(next, connection.hello_by);
    }
    polls.clear();
    polls.push_back({wake_read_, POLLIN, 0});
    polls.push_back(
        {listener_, static_cast<short>(connections.size() < most_open ? POLLIN : 0), 0});
    for (const Connection& connection : connections) {
      short events = connection.closing ? 0 : POLLIN;
      if (!connection.out.empty()) events |= POLLOUT;
      polls.push_back({connection.fd, events, 0});
    }
    const int timeout_ms =
        static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(next - now) + 1, 0, 1000));
    if (poll(polls.data(), polls.size(), timeout_ms) < 0 && errno != EINTR) {
      ZCOLL_LOG(ERROR) << "TCP store " << url() << ": poll failed: " << std::strerror(errno);
      break;
    }
    if (polls[0].revents != 0) break;
    now = absl::Now();
    if (polls[1].revents & POLLIN) {
      while (connections.size() < most_open) {
        const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        const int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
        Connection connection;
        connection.fd = fd;
        connection.hello_by = now + kHelloWithin;
        connections.push_back(std::move(connection));
      }
    }
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& connection = connections[i];
      const short revents = i + 2 < polls.size() ? polls[i + 2].revents : 0;
      bool drop = (revents & (POLLERR | POLLNVAL)) != 0;
      if (!drop && (revents & (POLLIN | POLLHUP)) && !connection.closing) {
        char buffer[65536];
        const ssize_t n = recv(connection.fd, buffer, sizeof(buffer), 0);
        if (n > 0) {
          connection.in.append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          drop = true;
        }
      }
      std::string payload;
      // One request at a time: a connection whose Get waits sends nothing new.
      while (!drop && !connection.closing && !connection.waiting_key &&
             NextFrame(connection, payload)) {
        if (connection.authenticated) {
          state.Handle(connection, payload, now);
          continue;
        }
        WireReader reader(payload);
        uint8_t opcode = 0;
        std::string key;
        if (reader.U8(opcode) && static_cast<Opcode>(opcode) == Opcode::kHello &&
            reader.Bytes(key, kMaxFrameBytesBeforeHello) && reader.at_end() &&
            SameKey(key, job_key_)) {
          if (authenticated < limits_.max_connections) {
            ++authenticated;
            connection.authenticated = true;
            connection.out += Reply(Opcode::kOk);
          } else {
            StoreState::Refuse(connection, absl::StrCat("a connection over its limit of ",
                                                        limits_.max_connections, " connections"));
          }
        } else {
          StoreState::Refuse(connection, "a connection without this job's key");
        }
      }
      state.AnswerIfSet(connection, now);
      if (!connection.authenticated && now >= connection.hello_by) drop = true;
      if (!drop && !connection.out.empty()) {
        const ssize_t n =
            send(connection.fd, connection.out.data(), connection.out.size(), MSG_NOSIGNAL);
        if (n > 0) {
          connection.out.erase(0, static_cast<size_t>(n));
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          drop = true;
        }
        if (connection.out.size() > kMaxUnsentBytes) drop = true;
      }
      if (connection.closing && connection.out.empty()) drop = true;
      if (drop) {
        close(connection.fd);
        connection.fd = -1;
        if (connection.authenticated) --authenticated;
      }
    }
    // Sets may have satisfied other connections' Gets: answer them in the next round
    // (the poll below returns at once when they have output).
    for (Connection& connection : connections) {
      if (connection.fd >= 0) state.AnswerIfSet(connection, now);
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.fd < 0; }),
                      connections.end());
  }
  for (Connection& connection : connections) close(connection.fd);
}

// ---------------------------------------------------------------------------------
// Client

namespace {

class TcpStoreClient : public KeyValueStore {
 public:
  TcpStoreClient(int fd, std::string url) : fd_(fd), url_(std::move(url)) {}
  ~TcpStoreClient() override { close(fd_); }

  absl::Status Set(absl::string_view key, absl::string_view value, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreValue(key, value));
    WireWriter writer;
    writer.U8(static_cast<uint8_t>(Opcode::kSet));
    writer.Bytes(key);
    writer.Bytes(value);
    // Not ASSIGN_OR_RETURN: GCC 12 then warns (wrongly) that the moved string may be
    // uninitialised.
    absl::StatusOr<std::string> reply = Call(std::move(writer).Finish(), deadline, "Set", key);
    if (!reply.ok()) return reply.status();
    return ExpectOpcode(*reply, Opcode::kOk, "Set", key);
  }

  absl::StatusOr<std::string> Get(absl::string_view key, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    const absl::Duration remaining = std::max(deadline - absl::Now(), absl::ZeroDuration());
    WireWriter writer;
    writer.U8(static_cast<uint8_t>(Opcode::kGet));
    writer.Bytes(key);
    writer.U64(static_cast<uint64_t>(absl::ToInt64Milliseconds(remaining)));
    absl::StatusOr<std::string> reply =
        Call(std::move(writer).Finish(), deadline + kReplySlack, "Get", key);
    if (!reply.ok()) return reply.status();
    WireReader reader(*reply);
    uint8_t opcode = 0;
    reader.U8(opcode);
    if (static_cast<Opcode>(opcode) == Opcode::kTimeout) {
      return absl::DeadlineExceededError(
          absl::StrCat("key '", key, "' was not set in ", url_, " before the deadline"));
    }
    std::string value;
    if (static_cast<Opcode>(opcode) == Opcode::kValue && reader.Bytes(value, kMaxStoreValueBytes) &&
        reader.at_end()) {
      return value;
    }
    return ExpectOpcode(*reply, Opcode::kValue, "Get", key);
  }

  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    WireWriter writer;
    writer.U8(static_cast<uint8_t>(Opcode::kAdd));
    writer.Bytes(key);
    writer.U64(static_cast<uint64_t>(delta));
    absl::StatusOr<std::string> reply = Call(std::move(writer).Finish(), deadline, "Add", key);
    if (!reply.ok()) return reply.status();
    WireReader reader(*reply);
    uint8_t opcode = 0;
    uint64_t sum = 0;
    if (reader.U8(opcode) && static_cast<Opcode>(opcode) == Opcode::kNumber && reader.U64(sum) &&
        reader.at_end()) {
      return static_cast<int64_t>(sum);
    }
    return ExpectOpcode(*reply, Opcode::kNumber, "Add", key);
  }

  std::string url() const override { return url_; }

  // Sends one request and returns the reply's payload.
  absl::StatusOr<std::string> Call(std::string request, absl::Time deadline, absl::string_view what,
                                   absl::string_view key) {
    MutexLock lock(&mutex_);
    if (!broken_.ok()) return broken_;
    absl::StatusOr<std::string> reply = Exchange(Frame(std::move(request)), deadline);
    if (!reply.ok()) {
      // A request half sent or a reply half read leaves the stream unusable.
      broken_ = absl::Status(
          reply.status().code(),
          absl::StrCat(what, " of key '", key, "' in ", url_, ": ", reply.status().message()));
      return broken_;
    }
    return reply;
  }

 private:
  absl::Status ExpectOpcode(absl::string_view reply, Opcode expected, absl::string_view what,
                            absl::string_view key) {
    WireReader reader(reply);
    uint8_t opcode = 0;
    reader.U8(opcode);
    if (static_cast<Opcode>(opcode) == expected && reader.at_end()) return absl::OkStatus();
    std::string message;
    if (static_cast<Opcode>(opcode) == Opcode::kError && reader.Bytes(message, kMaxFrameBytes)) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " of key '", key, "' in ", url_, ": ", message));
    }
    return absl::DataLossError(
        absl::StrCat(what, " of key '", key, "' in ", url_, ": a malformed reply"));
  }

  absl::StatusOr<std::string> Exchange(const std::string& frame, absl::Time deadline) {
    size_t sent = 0;
    while (sent < frame.size()) {
      RETURN_IF_ERROR(AwaitSocket(POLLOUT, deadline));
      const ssize_t n = send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Lost(errno);
      sent += static_cast<size_t>(n);
    }
    std::string in;
    size_t needed = 4;
    while (in.size() < needed) {
      RETURN_IF_ERROR(AwaitSocket(POLLIN, deadline));
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, std::min(sizeof(buffer), needed - in.size()), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Lost(n == 0 ? ECONNRESET : errno);
      in.append(buffer, static_cast<size_t>(n));
      if (needed == 4 && in.size() == 4) {
        WireReader reader(in);
        uint32_t length = 0;
        reader.U32(length);
        if (length > kMaxFrameBytes) {
          return absl::DataLossError(absl::StrCat("a reply of ", length, " bytes"));
        }
        needed = 4 + size_t{length};
      }
    }
    return in.substr(4);
  }

  absl::Status AwaitSocket(short events, absl::Time deadline) {
    while (true) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError("the store did not answer before the deadline");
      }
      pollfd entry{fd_, events, 0};
      const int timeout_ms =
          static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000));
      const int ready = poll(&entry, 1, timeout_ms);
      if (ready > 0) return absl::OkStatus();
      if (ready < 0 && errno != EINTR) return Lost(errno);
    }
  }

  static absl::Status Lost(int error) {
    return absl::UnavailableError(
        absl::StrCat("lost the connection to the store: ", std::strerror(error)));
  }

  int fd_;
  std::string url_;
  Mutex mutex_;
  absl::Status broken_ ABSL_GUARDED_BY(mutex_);
};

// One connection attempt; ECONNREFUSED and friends are retried by the caller.
int ConnectOnce(const addrinfo* address, int& error) {
  const int fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  if (connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
    error = errno;
    close(fd);
    return -1;
  }
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  SetNonBlocking(fd);
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectTcpStore(absl::string_view host, int port,
                                                               absl::string_view job_key,
                                                               absl::Time deadline) {
  const std::string url = absl::StrCat("tcp://", host, ":", port);
  if (job_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the TCP store ", url, " needs the job key (ZCOLL_JOB_KEY), which is empty"));
  }
  if (port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("TCP store port ", port, " is not 1-65535"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string host_string(host), port_string = absl::StrCat(port);
  absl::Duration nap = absl::Milliseconds(10);
  int error = 0;
  while (true) {
    addrinfo* addresses = nullptr;
    const int resolved = getaddrinfo(host_string.c_str(), port_string.c_str(), &hints, &addresses);
    int fd = -1;
    if (resolved == 0) {
      for (addrinfo* address = addresses; address != nullptr && fd < 0;
           address = address->ai_next) {
        fd = ConnectOnce(address, error);
      }
      freeaddrinfo(addresses);
    }
    if (fd >= 0) {
      auto client = std::make_unique<TcpStoreClient>(fd, url);
      WireWriter hello;
      hello.U8(static_cast<uint8_t>(Opcode::kHello));
      hello.Bytes(job_key);
      absl::StatusOr<std::string> reply =
          client->Call(std::move(hello).Finish(), deadline, "Hello", "job-key");
      if (!reply.ok()) return reply.status();
      WireReader reader(*reply);
      uint8_t opcode = 0;
      if (reader.U8(opcode) && static_cast<Opcode>(opcode) == Opcode::kOk && reader.at_end()) {
        return client;
      }
      std::string why;
      if (static_cast<Opcode>(opcode) == Opcode::kError && reader.Bytes(why, kMaxFrameBytes) &&
          absl::StrContains(why, "limit")) {
        return absl::ResourceExhaustedError(absl::StrCat("the TCP store ", url, ": ", why));
      }
      return absl::PermissionDeniedError(
          absl::StrCat("the TCP store ", url, " refused this process's job key (ZCOLL_JOB_KEY)"));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      const std::string why =
          resolved != 0 ? gai_strerror(resolved) : std::string(std::strerror(error));
      return absl::DeadlineExceededError(
          absl::StrCat("cannot reach the TCP store ", url, " before the deadline: ", why));
    }
    absl::SleepFor(std::min(nap, deadline - now));
    nap = std::min(nap * 2, absl::Milliseconds(500));
  }
}

std::string NewJobKey() {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    ZCOLL_CHECK(n >= 0 || errno == EINTR) << "getrandom: " << std::strerror(errno);
    if (n > 0) filled += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace zcoll
