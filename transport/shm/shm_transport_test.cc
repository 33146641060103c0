// What the conformance suite cannot see from outside: the shared-memory footprint
// and option checks of the native transport.

#include "transport/shm/shm_transport.h"

#include <sys/stat.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/envelope.h"

namespace zcoll {
namespace {

// The size of the segment behind a transport's address.
size_t SegmentBytes(const Transport& transport) {
  absl::StatusOr<PeerAddress> address = DecodePeerAddress(transport.address(), "shm", 0);
  EXPECT_TRUE(address.ok()) << address.status();
  if (!address.ok()) return 0;
  struct stat info;
  const std::string path = "/dev/shm" + address->provider_address;
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return static_cast<size_t>(info.st_size);
}

TEST(ShmTransportTest, SegmentsGrowByAFewKilobytesPerRank) {
  // Eager payloads live in a per-sender pool, not in per-peer rings: a rank of a
  // 256-rank node maps about 1.5 MiB, not hundreds.
  absl::StatusOr<std::unique_ptr<Transport>> small = CreateShmTransport(0, 2);
  absl::StatusOr<std::unique_ptr<Transport>> large = CreateShmTransport(0, 256);
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(large.ok()) << large.status();
  const size_t small_bytes = SegmentBytes(**small), large_bytes = SegmentBytes(**large);
  EXPECT_LT(small_bytes, size_t{640} << 10);
  EXPECT_LT(large_bytes, size_t{2} << 20);
  EXPECT_LE((large_bytes - small_bytes) / 254, size_t{4} << 10) << "bytes per extra rank";
}

TEST(ShmTransportTest, OptionsAreChecked) {
  ShmOptions options;
  options.eager_bytes = 16;  // not above the inline size
  absl::StatusOr<std::unique_ptr<Transport>> made = CreateShmTransport(0, 2, options);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), ::testing::HasSubstr("eager_bytes must be in (32"));
  options = {};
  options.pool_buffers = 0;
  EXPECT_EQ(CreateShmTransport(0, 2, options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zcoll
