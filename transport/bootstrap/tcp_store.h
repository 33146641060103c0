// The TCP rendezvous store: a small key-value server that the launcher (zcoll_run)
// or rank 0 of a service hosts, and the client every rank connects with.
//
// Authentication: a client's first message carries the job key; a connection that
// presents a wrong key, or none within 10 seconds, is refused and closed before it
// can read or write anything. The key crosses the network in the clear: it keeps
// out strangers and stale jobs on a trusted cluster network, not an eavesdropper.
//
// Bounds, so that whatever a client sends, even one with the job key, the server's
// memory stays within TcpStoreLimits: frames of at most kMaxStoreValueBytes + 1 KiB
// (4 KiB before authentication), each taken whole from max_buffered_bytes before it
// is read; stored keys and values counted against max_stored_bytes with 128 bytes
// per key on top; max_connections connections; at most one frame and one reply per
// connection in memory (a connection is not read while a reply waits for it), a frame
// completed and a reply taken within frame_within (30 s), small replies (under 1 KiB) outside the
// budget. A request or connection over a bound is answered with an error naming it
// and closed. So the server holds at most about max_stored_bytes +
// max_buffered_bytes + 2 KiB per connection. A Get waits on the server, which answers
// when the key is set or at the client's deadline.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_TCP_STORE_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_TCP_STORE_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/bootstrap/store.h"

namespace zcoll {

struct TcpStoreLimits {
  size_t max_connections = 1024;
  // Keys and values, plus 128 bytes per key.
  size_t max_stored_bytes = size_t{256} << 20;
  // Frames being received and replies being sent, all connections together.
  size_t max_buffered_bytes = size_t{64} << 20;
  // A frame must arrive whole, and a reply be taken, within this of its first byte
  // (a client that stops half way holds buffer space nobody else can use).
  absl::Duration frame_within = absl::Seconds(30);
};

class TcpStoreServer {
 public:
  // Listens on `host` ("127.0.0.1", "0.0.0.0", a name) and `port` (0: any free
  // port) and serves from a thread of its own until destroyed. `job_key` must not
  // be empty.
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(absl::string_view host, int port,
                                                               std::string job_key,
                                                               const TcpStoreLimits& limits = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  // tcp://HOST:PORT as clients should use it.
  std::string url() const;

 private:
  TcpStoreServer(std::string host, int listener, int port, int wake_read, int wake_write,
                 std::string job_key, const TcpStoreLimits& limits);
  void Serve();

  std::string host_;
  int listener_;
  int port_;
  int wake_read_, wake_write_;  // a pipe that ends Serve
  std::string job_key_;
  TcpStoreLimits limits_;
  std::thread thread_;
};

// Connects to a TcpStoreServer, retrying refused connections until `deadline`.
absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectTcpStore(absl::string_view host, int port,
                                                               absl::string_view job_key,
                                                               absl::Time deadline);

// A fresh random job key (32 hex digits from the kernel's random source).
std::string NewJobKey();

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_TCP_STORE_H_
