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
#include "transport/bootstrap/store_state.h"
#include "transport/bootstrap/store_wire.h"

namespace zcoll {
namespace {

using store_wire::FramedReply;
using store_wire::Opcode;
using store_wire::Reply;
using store_wire::Request;
using store_wire::StoreState;

// Connections beyond TcpStoreLimits::max_connections are accepted, this many at a
// time, only to be told at their Hello why they are refused (a refusal sent before
// the Hello is read could be lost to the reset that closing an unread socket
// sends).
constexpr size_t kRefusedConnections = 16;
constexpr absl::Duration kHelloWithin = absl::Seconds(10);
// How long a client waits beyond its deadline for the server's answer to a Get.
constexpr absl::Duration kReplySlack = absl::Seconds(5);

// Frees a buffer's memory. (Assigning an empty string keeps the old allocation:
// libstdc++ copies a short string into the capacity it has; 64 connections that had
// each sent a 1 MiB reply held 64 MiB that way.)
void Release(std::string& buffer) { std::string().swap(buffer); }

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// ---------------------------------------------------------------------------------
// Server

struct Connection {
  int fd = -1;
  store_wire::Session session;  // authenticated, closing, a waiting Get
  absl::Time hello_by;
  // At most one frame being received (header, then payload), and the replies not yet
  // sent; no new request is read while a reply waits.
  std::string in, out;
  size_t reserved = 0;   // buffer bytes held for `in`'s frame
  size_t out_taken = 0;  // and for `out`, given back only once it is all sent (its memory
                         // stays allocated until then)
  absl::Time frame_by = absl::InfiniteFuture();
  absl::Time reply_by = absl::InfiniteFuture();
};

// The bytes every connection's frames and replies hold, against
// TcpStoreLimits::max_buffered_bytes.
class BufferBudget {
 public:
  explicit BufferBudget(size_t limit) : limit_(limit) {}
  bool Fits(size_t bytes) const { return used_ <= limit_ && bytes <= limit_ - used_; }
  bool TryTake(size_t bytes) {
    if (!Fits(bytes)) return false;
    used_ += bytes;
    return true;
  }
  // Past the limit too (small replies; see Serve).
  void Take(size_t bytes) { used_ += bytes; }
  void Give(size_t bytes) { used_ -= bytes; }
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  size_t used_ = 0;
};

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
  BufferBudget budget(limits_.max_buffered_bytes);
  std::vector<Connection> connections;
  const size_t most_open = limits_.max_connections + kRefusedConnections;
  size_t authenticated = 0;
  std::vector<pollfd> polls;
  // Replies this small (OK, a number, an error) are queued even past the budget: a
  // connection holds at most one, so together they stay under max_connections KiB.
  constexpr size_t kSmallReply = 1024;
  auto queue = [&](Connection& connection, std::string reply, absl::Time now) {
    budget.Take(reply.size());
    connection.out_taken += reply.size();
    if (connection.out.empty()) connection.reply_by = now + limits_.frame_within;
    connection.out += reply;
  };
  bool deferred = false;  // a Get's answer waits for buffer space
  // Answers a waiting Get whose key is set or whose time is up, if its reply fits.
  auto answer = [&](Connection& connection, absl::Time now) {
    if (!connection.session.waiting_key || !connection.out.empty()) return;
    std::string reply = state.Answer(connection.session, now);
    if (reply.empty()) return;
    if (reply.size() > kSmallReply && !budget.Fits(reply.size())) {
      deferred = true;
      return;
    }
    queue(connection, std::move(reply), now);
    connection.session.waiting_key.reset();
  };
  while (true) {
    absl::Time now = absl::Now();
    // The next time something is due: a Get's deadline, a hello's, a frame's.
    absl::Time next = now + (deferred ? absl::Milliseconds(10) : absl::Seconds(1));
    for (const Connection& connection : connections) {
      if (connection.session.waiting_key) next = std::min(next, connection.session.waiting_until);
      if (!connection.session.authenticated) next = std::min(next, connection.hello_by);
      next = std::min({next, connection.frame_by, connection.reply_by});
    }
    deferred = false;
    polls.clear();
    polls.push_back({wake_read_, POLLIN, 0});
    polls.push_back(
        {listener_, static_cast<short>(connections.size() < most_open ? POLLIN : 0), 0});
    for (const Connection& connection : connections) {
      // A connection is read only between requests: not while a reply waits to be
      // sent or taken, nor while its Get waits (the kernel holds what it sends then).
      const bool reads =
          !connection.session.closing && connection.out.empty() && !connection.session.waiting_key;
      short events = POLLRDHUP;
      if (reads) events |= POLLIN;
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
      const bool reads =
          !connection.session.closing && connection.out.empty() && !connection.session.waiting_key;
      // A client that hung up while it is not being read is gone for good.
      if (!reads && (revents & (POLLRDHUP | POLLHUP))) drop = true;
      if (!drop && reads && (revents & (POLLIN | POLLRDHUP | POLLHUP))) {
        // At most the rest of the frame under way: one frame in memory at a time.
        const std::optional<uint32_t> length = store_wire::FrameLength(connection.in);
        const size_t wanted = length
                                  ? store_wire::kFrameHeaderBytes + *length - connection.in.size()
                                  : store_wire::kFrameHeaderBytes - connection.in.size();
        char buffer[65536];
        const ssize_t n = recv(connection.fd, buffer, std::min(sizeof(buffer), wanted), 0);
        if (n > 0) {
          if (connection.in.empty()) connection.frame_by = now + limits_.frame_within;
          connection.in.append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          drop = true;
        }
      }
      // A whole header: the frame's bytes are taken from the budget before they are
      // read, or the connection is refused.
      if (!drop && !connection.session.closing && connection.reserved == 0) {
        if (const std::optional<uint32_t> length = store_wire::FrameLength(connection.in)) {
          const size_t limit = StoreState::FrameLimit(connection.session);
          const size_t frame = store_wire::kFrameHeaderBytes + *length;
          std::string refusal;
          if (*length > limit) {
            StoreState::Refuse(connection.session, refusal,
                               absl::StrCat("a message of ", *length, " bytes"));
          } else if (!budget.TryTake(frame)) {
            StoreState::Refuse(
                connection.session, refusal,
                absl::StrCat("a message of ", *length, " bytes: its buffers (", budget.used(),
                             " of ", budget.limit(), " bytes) are in use"));
          } else {
            connection.reserved = frame;
          }
          if (!refusal.empty()) {
            Release(connection.in);
            connection.frame_by = absl::InfiniteFuture();
            queue(connection, std::move(refusal), now);
          }
        }
      }
      // A whole frame: answered, and its bytes given back.
      if (!drop && !connection.session.closing && connection.reserved > 0 &&
          connection.in.size() == connection.reserved) {
        const std::string payload = connection.in.substr(store_wire::kFrameHeaderBytes);
        budget.Give(connection.reserved);
        connection.reserved = 0;
        Release(connection.in);
        connection.frame_by = absl::InfiniteFuture();
        std::string reply;
        if (state.HandleFrame(connection.session, payload, job_key_, authenticated,
                              limits_.max_connections, now, reply)) {
          ++authenticated;
        }
        if (!reply.empty()) queue(connection, std::move(reply), now);
      }
      if (!drop) answer(connection, now);
      if (!connection.session.authenticated && now >= connection.hello_by) drop = true;
      if (now >= connection.frame_by || now >= connection.reply_by) drop = true;
      if (!drop && !connection.out.empty()) {
        const ssize_t n =
            send(connection.fd, connection.out.data(), connection.out.size(), MSG_NOSIGNAL);
        if (n > 0) {
          connection.out.erase(0, static_cast<size_t>(n));
          if (connection.out.empty()) {
            Release(connection.out);
            budget.Give(connection.out_taken);
            connection.out_taken = 0;
            connection.reply_by = absl::InfiniteFuture();
          }
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          drop = true;
        }
      }
      if (connection.session.closing && connection.out.empty()) drop = true;
      if (drop) {
        close(connection.fd);
        connection.fd = -1;
        budget.Give(connection.reserved + connection.out_taken);
        if (connection.session.authenticated) --authenticated;
      }
    }
    // Sets may have satisfied other connections' Gets: their replies go out in the
    // next round (whose poll returns at once for connections with output).
    for (Connection& connection : connections) {
      if (connection.fd >= 0) answer(connection, now);
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

absl::Status AwaitSocket(int fd, short events, absl::Time deadline);

class TcpStoreClient : public KeyValueStore {
 public:
  TcpStoreClient(int fd, std::string url) : fd_(fd), url_(std::move(url)) {}
  ~TcpStoreClient() override { close(fd_); }

  absl::Status Set(absl::string_view key, absl::string_view value, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreValue(key, value));
    absl::StatusOr<Reply> reply =
        Call({Opcode::kSet, std::string(key), std::string(value), 0}, deadline, "Set", key);
    if (!reply.ok()) return reply.status();
    return Expect(*reply, Opcode::kOk, "Set", key);
  }

  absl::StatusOr<std::string> Get(absl::string_view key, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    const absl::Duration remaining = std::max(deadline - absl::Now(), absl::ZeroDuration());
    absl::StatusOr<Reply> reply =
        Call({Opcode::kGet, std::string(key), "",
              static_cast<uint64_t>(absl::ToInt64Milliseconds(remaining))},
             deadline + kReplySlack, "Get", key);
    if (!reply.ok()) return reply.status();
    if (reply->opcode == Opcode::kTimeout) {
      return absl::DeadlineExceededError(
          absl::StrCat("key '", key, "' was not set in ", url_, " before the deadline"));
    }
    RETURN_IF_ERROR(Expect(*reply, Opcode::kValue, "Get", key));
    if (reply->bytes.size() > kMaxStoreValueBytes) {
      return absl::DataLossError(absl::StrCat("Get of key '", key, "' in ", url_, ": a value of ",
                                              reply->bytes.size(), " bytes"));
    }
    return std::move(reply->bytes);
  }

  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    absl::StatusOr<Reply> reply = Call(
        {Opcode::kAdd, std::string(key), "", static_cast<uint64_t>(delta)}, deadline, "Add", key);
    if (!reply.ok()) return reply.status();
    RETURN_IF_ERROR(Expect(*reply, Opcode::kNumber, "Add", key));
    return static_cast<int64_t>(reply->number);
  }

  std::string url() const override { return url_; }

  // Sends one request and returns the reply.
  absl::StatusOr<Reply> Call(const Request& request, absl::Time deadline, absl::string_view what,
                             absl::string_view key) {
    MutexLock lock(&mutex_);
    if (!broken_.ok()) return broken_;
    absl::StatusOr<Reply> reply =
        Exchange(store_wire::Frame(store_wire::EncodeRequest(request)), deadline);
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
  absl::Status Expect(const Reply& reply, Opcode expected, absl::string_view what,
                      absl::string_view key) {
    if (reply.opcode == expected) return absl::OkStatus();
    if (reply.opcode == Opcode::kError) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " of key '", key, "' in ", url_, ": ", reply.bytes));
    }
    return absl::DataLossError(
        absl::StrCat(what, " of key '", key, "' in ", url_, ": an unexpected reply"));
  }

  absl::StatusOr<Reply> Exchange(const std::string& frame, absl::Time deadline) {
    size_t sent = 0;
    while (sent < frame.size()) {
      RETURN_IF_ERROR(AwaitSocket(fd_, POLLOUT, deadline));
      const ssize_t n = send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Lost(errno);
      sent += static_cast<size_t>(n);
    }
    std::string in;
    size_t needed = store_wire::kFrameHeaderBytes;
    while (in.size() < needed) {
      RETURN_IF_ERROR(AwaitSocket(fd_, POLLIN, deadline));
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, std::min(sizeof(buffer), needed - in.size()), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return Lost(n == 0 ? ECONNRESET : errno);
      in.append(buffer, static_cast<size_t>(n));
      if (needed == store_wire::kFrameHeaderBytes && in.size() == needed) {
        const uint32_t length = *store_wire::FrameLength(in);
        if (length > store_wire::kMaxFrameBytes) {
          return absl::DataLossError(absl::StrCat("a reply of ", length, " bytes"));
        }
        needed += length;
      }
    }
    return store_wire::ParseReply(absl::string_view(in).substr(store_wire::kFrameHeaderBytes));
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

// Waits until `fd` is ready for `events`, at most until `deadline`.
absl::Status AwaitSocket(int fd, short events, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("the store did not answer before the deadline");
    }
    pollfd entry{fd, events, 0};
    const int timeout_ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000));
    const int ready = poll(&entry, 1, timeout_ms);
    if (ready > 0) return absl::OkStatus();
    if (ready < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    }
  }
}

// One connection attempt, given up at `deadline`: a server whose accept queue is full
// drops the handshake, and a blocking connect() would wait minutes for it.
// ECONNREFUSED and friends are retried by the caller.
int ConnectOnce(const addrinfo* address, absl::Time deadline, int& error) {
  const int fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  if (connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = errno;
      close(fd);
      return -1;
    }
    socklen_t length = sizeof(error);
    if (!AwaitSocket(fd, POLLOUT, deadline).ok()) {
      error = ETIMEDOUT;
      close(fd);
      return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      if (error == 0) error = errno;
      close(fd);
      return -1;
    }
  }
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
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
        fd = ConnectOnce(address, deadline, error);
      }
      freeaddrinfo(addresses);
    }
    if (fd >= 0) {
      auto client = std::make_unique<TcpStoreClient>(fd, url);
      absl::StatusOr<Reply> reply =
          client->Call({Opcode::kHello, std::string(job_key), "", 0}, deadline, "Hello", "job-key");
      if (!reply.ok()) return reply.status();
      if (reply->opcode == Opcode::kOk) return client;
      if (reply->opcode == Opcode::kError && absl::StrContains(reply->bytes, "limit")) {
        return absl::ResourceExhaustedError(
            absl::StrCat("the TCP store ", url, ": ", reply->bytes));
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
