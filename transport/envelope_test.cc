#include "transport/envelope.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

TEST(EnvelopeTest, AddressesRoundTripAndNameTheirProvider) {
  const PeerAddress address{.provider = "shm",
                            .host = "node7",
                            .pid = 4242,
                            .provider_address = std::string("\0\1\2", 3)};
  absl::StatusOr<PeerAddress> decoded = DecodePeerAddress(EncodePeerAddress(address), "shm", 3);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->host, "node7");
  EXPECT_EQ(decoded->pid, 4242);
  EXPECT_EQ(decoded->provider_address, address.provider_address);
  EXPECT_THAT(DecodePeerAddress(EncodePeerAddress(address), "ucx", 3).status().message(),
              HasSubstr("the address of rank 3 is for provider shm, not ucx"));
  EXPECT_THAT(DecodePeerAddress("junk", "shm", 3).status().message(),
              HasSubstr("the address of rank 3 is not a zcoll transport address"));
}

TEST(EnvelopeTest, RemoteKeysAreCheckedField_by_field) {
  const RemoteKey key{.provider = "ofi:shm",
                      .owner = 2,
                      .base = 0x1000,
                      .length = 64,
                      .access = MemoryAccess::kRemoteWrite,
                      .provider_key = "k"};
  const std::string packed = PackRemoteKey(key);
  absl::StatusOr<RemoteKey> unpacked = UnpackRemoteKey(packed, "ofi:shm", 2, 0);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status();
  EXPECT_EQ(unpacked->base, 0x1000u);
  EXPECT_EQ(unpacked->access, MemoryAccess::kRemoteWrite);
  EXPECT_THAT(UnpackRemoteKey(packed, "ofi:shm", 1, 0).status().message(),
              HasSubstr("belongs to rank 2"));
  EXPECT_THAT(UnpackRemoteKey(packed, "ucx", 2, 0).status().message(),
              HasSubstr("made by provider ofi:shm, not ucx"));
  for (size_t cut = 0; cut < packed.size(); ++cut) {
    EXPECT_EQ(UnpackRemoteKey(packed.substr(0, cut), "ofi:shm", 2, 0).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "truncated at " << cut;
  }
  RemoteKey wrapping = key;
  wrapping.base = ~uint64_t{0} - 10;
  EXPECT_THAT(UnpackRemoteKey(PackRemoteKey(wrapping), "ofi:shm", 2, 0).status().message(),
              HasSubstr("wraps around"));
}

}  // namespace
}  // namespace zcoll
