// The transports' shared envelopes against hostile bytes: a peer's address
// (DecodePeerAddress), a packed remote key (UnpackRemoteKey) and a routed
// transport's two-part address or key (SplitRoutedParts), as a peer could send them.
// The first byte picks the provider the decoder expects; the rest is the record.
// Checked: nothing reads out of bounds (ASan), and whatever decodes encodes back to
// a record that decodes to the same values.

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"
#include "transport/envelope.h"

namespace zcoll::fuzz {
namespace {

constexpr const char* kProviders[] = {"shm", "ofi:tcp", "ucx:tcp", "routed", "loopback"};

}  // namespace

std::vector<std::string> SeedInputs() {
  std::vector<std::string> seeds;
  for (size_t p = 0; p < std::size(kProviders); ++p) {
    const std::string pick(1, static_cast<char>(p));
    seeds.push_back(pick + EncodePeerAddress({.provider = kProviders[p],
                                              .host = "node17",
                                              .pid = 4242,
                                              .provider_address = std::string("\x01\x02\0x", 4)}));
    seeds.push_back(pick + PackRemoteKey({.provider = kProviders[p],
                                          .owner = 2,
                                          .base = 0x7f0000001000,
                                          .length = 1 << 20,
                                          .access = MemoryAccess::kRemoteWrite,
                                          .provider_key = "key bytes"}));
  }
  seeds.push_back(std::string(1, 3) + JoinRoutedParts("local address", "network address"));
  return seeds;
}

}  // namespace zcoll::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zcoll;
  if (size == 0) return 0;
  const char* provider = zcoll::fuzz::kProviders[data[0] % std::size(zcoll::fuzz::kProviders)];
  const absl::string_view record(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (const absl::StatusOr<PeerAddress> address = DecodePeerAddress(record, provider, 3);
      address.ok()) {
    FUZZ_CHECK(address->provider == provider);
    const absl::StatusOr<PeerAddress> again =
        DecodePeerAddress(EncodePeerAddress(*address), provider, 3);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->host == address->host && again->pid == address->pid &&
               again->provider_address == address->provider_address);
  }
  if (const absl::StatusOr<RemoteKey> key = UnpackRemoteKey(record, provider, 2, 1); key.ok()) {
    FUZZ_CHECK(key->provider == provider && key->owner == 2);
    const absl::StatusOr<RemoteKey> again = UnpackRemoteKey(PackRemoteKey(*key), provider, 2, 1);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->base == key->base && again->length == key->length &&
               again->access == key->access && again->provider_key == key->provider_key);
  }
  std::string local, network;
  if (SplitRoutedParts(record, local, network)) {
    FUZZ_CHECK(JoinRoutedParts(local, network) == record);
  }
  return 0;
}
