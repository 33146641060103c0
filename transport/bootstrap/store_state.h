// The TCP store server's state apart from its sockets (internal): the values, what
// they cost against TcpStoreLimits::max_stored_bytes, and each client's protocol
// state. tcp_store.cc serves it over sockets; the fuzz target feeds it hostile
// frames directly.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_STORE_STATE_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_STORE_STATE_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/bootstrap/store_wire.h"

namespace zcoll::store_wire {

// What a key costs the store beyond its key and value bytes (the map's node and the
// two strings' headers, rounded up), so that many empty values fill it too.
inline constexpr size_t kEntryOverheadBytes = 128;

// One client's protocol state.
struct Session {
  bool authenticated = false;
  bool closing = false;                    // close once the replies are sent
  std::optional<std::string> waiting_key;  // a Get not answered yet
  absl::Time waiting_until;
};

class StoreState {
 public:
  explicit StoreState(size_t max_stored_bytes) : max_stored_bytes_(max_stored_bytes) {}

  // Answers one request of an authenticated session; the reply (a frame) is
  // appended to `out`. A Get waits instead (Answer).
  void Handle(Session& session, const Request& request, absl::Time now, std::string& out);
  // A whole frame's payload from `session`: its Hello, checked against `job_key` and
  // refused when `authenticated` sessions of at most `max_authenticated` are open
  // already, or a request (Handle). A malformed one is refused. True when the
  // session has just been authenticated.
  bool HandleFrame(Session& session, absl::string_view payload, absl::string_view job_key,
                   size_t authenticated, size_t max_authenticated, absl::Time now,
                   std::string& out);
  // The largest payload the session may send next.
  static size_t FrameLimit(const Session& session) {
    return session.authenticated ? kMaxFrameBytes : kMaxFrameBytesBeforeHello;
  }
  // The reply to a waiting Get if its key is set or its time is up ("" if neither).
  std::string Answer(const Session& session, absl::Time now) const;
  // Appends an error reply saying why, and closes the session after it.
  static void Refuse(Session& session, std::string& out, absl::string_view why);

  size_t stored_bytes() const { return stored_bytes_; }
  size_t max_stored_bytes() const { return max_stored_bytes_; }

 private:
  static size_t EntryBytes(absl::string_view key, absl::string_view value) {
    return kEntryOverheadBytes + key.size() + value.size();
  }

  const size_t max_stored_bytes_;
  std::map<std::string, std::string> values_;
  size_t stored_bytes_ = 0;
};

}  // namespace zcoll::store_wire

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_STORE_STATE_H_
