// The parts of addresses and remote keys that every provider shares.
//
// A peer address says which provider made it and which process on which host it
// belongs to (so that same-host peers can be watched for death, and routed to shared
// memory), around the provider's own bytes. A packed remote key says which provider,
// which rank owns the region, and its base, length and access, around the provider's
// key bytes. Decoding checks all of it: a key from another provider, for another
// rank, or truncated is InvalidArgument, never undefined behaviour.

#ifndef ZCOLL_TRANSPORT_ENVELOPE_H_
#define ZCOLL_TRANSPORT_ENVELOPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/transport.h"

namespace zcoll {

struct PeerAddress {
  std::string provider;  // provider_name() of the transport that made it
  std::string host;
  int64_t pid = 0;
  std::string provider_address;
};

std::string EncodePeerAddress(const PeerAddress& address);

// `rank` is whose address it is (for messages); `provider` what the decoder expects.
absl::StatusOr<PeerAddress> DecodePeerAddress(absl::string_view encoded, absl::string_view provider,
                                              int rank);

struct RemoteKey {
  std::string provider;
  int owner = -1;
  uint64_t base = 0;
  uint64_t length = 0;
  MemoryAccess access = MemoryAccess::kLocal;
  std::string provider_key;
};

std::string PackRemoteKey(const RemoteKey& key);

// Checks that the key was packed by `provider` on rank `owner`; `importer` is the
// rank importing it (for messages).
absl::StatusOr<RemoteKey> UnpackRemoteKey(absl::string_view packed, absl::string_view provider,
                                          int owner, int importer);

// A routed transport's address or packed key: its local and its network transport's
// in one (either may be empty). SplitRoutedParts is false if `joined` is malformed.
std::string JoinRoutedParts(absl::string_view local, absl::string_view network);
bool SplitRoutedParts(absl::string_view joined, std::string& local, std::string& network);

// This machine's host name ("unknown-host" if it cannot be read).
const std::string& LocalHostName();

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_ENVELOPE_H_
