// A key-value rendezvous store: how the ranks of a job that was not started by an
// HPC launcher find each other (they exchange transport addresses through it).
//
// Keys are 1-200 characters of [A-Za-z0-9._:-]; values at most kMaxStoreValueBytes.
// A key, once set, is seen by every later Get; Set on an existing key replaces it.
// Every call that waits takes a deadline and ends with DeadlineExceeded there, so a
// rank that never arrives cannot hang the others.
//
// Stores (ConnectStore parses the URL, as ZCOLL_STORE spells it):
//   tcp://HOST:PORT   a TcpStoreServer (tcp_store.h), authenticated by the job key
//   file:///DIR       files in a directory (a shared filesystem, tests)

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_STORE_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace zcoll {

inline constexpr size_t kMaxStoreKeyBytes = 200;
inline constexpr size_t kMaxStoreValueBytes = size_t{1} << 20;

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  virtual absl::Status Set(absl::string_view key, absl::string_view value, absl::Time deadline) = 0;
  // Waits until `key` is set, then returns its value.
  virtual absl::StatusOr<std::string> Get(absl::string_view key, absl::Time deadline) = 0;
  // Adds `delta` to the decimal integer stored at `key` (absent: 0), atomically with
  // respect to every other Add, and returns the sum.
  virtual absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta,
                                      absl::Time deadline) = 0;
  // For error messages: "tcp://host:port", "file:///dir".
  virtual std::string url() const = 0;
};

// InvalidArgument naming the key when it is empty, too long or has a character
// outside [A-Za-z0-9._:-].
absl::Status CheckStoreKey(absl::string_view key);
absl::Status CheckStoreValue(absl::string_view key, absl::string_view value);

// Connects to the store at `url` (tcp://HOST:PORT or file:///DIR). A TCP store is
// retried until `deadline` (its server may start after this process) and refuses
// a wrong `job_key`; a file store ignores the key (its directory's permissions
// guard it).
absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectStore(absl::string_view url,
                                                            absl::string_view job_key,
                                                            absl::Time deadline);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_STORE_H_
