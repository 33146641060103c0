#include "transport/envelope.h"

#include <limits.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

constexpr uint32_t kAddressMagic = 0x41435a31;  // "1ZCA"
constexpr uint32_t kKeyMagic = 0x4b435a31;      // "1ZCK"
// Provider bytes are small (a sockaddr, a UCX worker address of a few hundred bytes).
constexpr size_t kMaxFieldBytes = 64 * 1024;

}  // namespace

std::string EncodePeerAddress(const PeerAddress& address) {
  WireWriter writer;
  writer.U32(kAddressMagic);
  writer.Bytes(address.provider);
  writer.Bytes(address.host);
  writer.U64(static_cast<uint64_t>(address.pid));
  writer.Bytes(address.provider_address);
  return std::move(writer).Finish();
}

absl::StatusOr<PeerAddress> DecodePeerAddress(absl::string_view encoded, absl::string_view provider,
                                              int rank) {
  WireReader reader(encoded);
  uint32_t magic = 0;
  uint64_t pid = 0;
  PeerAddress address;
  if (!reader.U32(magic) || magic != kAddressMagic ||
      !reader.Bytes(address.provider, kMaxFieldBytes) ||
      !reader.Bytes(address.host, kMaxFieldBytes) || !reader.U64(pid) ||
      !reader.Bytes(address.provider_address, kMaxFieldBytes) || !reader.at_end()) {
    return absl::InvalidArgumentError(absl::StrCat("the address of rank ", rank,
                                                   " is not a zcoll transport address (",
                                                   encoded.size(), " bytes)"));
  }
  if (address.provider != provider) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the address of rank ", rank, " is for provider ", address.provider, ", not ", provider));
  }
  address.pid = static_cast<int64_t>(pid);
  return address;
}

std::string PackRemoteKey(const RemoteKey& key) {
  WireWriter writer;
  writer.U32(kKeyMagic);
  writer.Bytes(key.provider);
  writer.U32(static_cast<uint32_t>(key.owner));
  writer.U64(key.base);
  writer.U64(key.length);
  writer.U8(static_cast<uint8_t>(key.access));
  writer.Bytes(key.provider_key);
  return std::move(writer).Finish();
}

absl::StatusOr<RemoteKey> UnpackRemoteKey(absl::string_view packed, absl::string_view provider,
                                          int owner, int importer) {
  WireReader reader(packed);
  uint32_t magic = 0, packed_owner = 0;
  uint8_t access = 0;
  RemoteKey key;
  if (!reader.U32(magic) || magic != kKeyMagic || !reader.Bytes(key.provider, kMaxFieldBytes) ||
      !reader.U32(packed_owner) || !reader.U64(key.base) || !reader.U64(key.length) ||
      !reader.U8(access) || access > static_cast<uint8_t>(MemoryAccess::kRemoteReadWrite) ||
      !reader.Bytes(key.provider_key, kMaxFieldBytes) || !reader.at_end()) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", importer,
                                                   ": the remote key given for rank ", owner,
                                                   " is malformed (", packed.size(), " bytes)"));
  }
  if (key.provider != provider) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", importer, ": the remote key given for rank ", owner,
                     " was made by provider ", key.provider, ", not ", provider));
  }
  if (static_cast<int>(packed_owner) != owner) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", importer,
                                                   ": the remote key given for rank ", owner,
                                                   " belongs to rank ", packed_owner));
  }
  if (key.base + key.length < key.base) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", importer,
                                                   ": the remote key given for rank ", owner,
                                                   " describes a region that wraps around"));
  }
  key.owner = owner;
  key.access = static_cast<MemoryAccess>(access);
  return key;
}

const std::string& LocalHostName() {
  static const std::string* const name = [] {
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
      return new std::string("unknown-host");
    }
    return new std::string(host);
  }();
  return *name;
}

std::string JoinRoutedParts(absl::string_view local, absl::string_view network) {
  WireWriter writer;
  writer.Bytes(local);
  writer.Bytes(network);
  return std::move(writer).Finish();
}

bool SplitRoutedParts(absl::string_view joined, std::string& local, std::string& network) {
  WireReader reader(joined);
  return reader.Bytes(local, kMaxFieldBytes) && reader.Bytes(network, kMaxFieldBytes) &&
         reader.at_end();
}

}  // namespace zcoll
