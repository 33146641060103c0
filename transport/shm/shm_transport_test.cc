// What the conformance suite cannot see from outside: the shared-memory footprint
// and option checks of the native transport.

#include "transport/shm/shm_transport.h"

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "testing/transport_harness.h"
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
  // Per rank: its ring (64 slots of 64 bytes) and its 64 words of split claims; beyond
  // that only the rounding of their end to a page.
  EXPECT_LE(large_bytes - small_bytes, 254 * (64 * 64 + 64 * 8) + 4096)
      << "bytes for 254 more ranks";
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

// Byte `i` of test message `message`: differs from page to page and message to message,
// so that a half written to the wrong place, or another message's, shows.
uint8_t MessageByte(size_t message, size_t i) {
  return static_cast<uint8_t>(i * 7 + i / 4093 + message * 31);
}
std::vector<uint8_t> Message(size_t message, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = MessageByte(message, i);
  return data;
}
size_t WrongBytes(const std::vector<uint8_t>& data, size_t message) {
  size_t wrong = 0;
  for (size_t i = 0; i < data.size(); ++i) wrong += data[i] != MessageByte(message, i) ? 1 : 0;
  return wrong;
}

// A split rendezvous whose sender is busy elsewhere (it posted the send and does not
// call into the transport until the receive is over, as a linear scatter's root copies
// its own block): the receiver reads the whole message instead of waiting for the
// sender's share. With fixed halves it waited for the sender, here for ever.
TEST(ShmTransportTest, ASplitMessageArrivesWhileItsSenderMakesNoProgress) {
  const std::vector<size_t> sizes = {size_t{64} << 10, (size_t{1} << 20) + 3, size_t{8} << 20};
  const absl::Status status = testing::RunRanks("shm", 2, [&](testing::RankContext& context) {
    Transport& transport = context.transport();
    for (size_t index = 0; index < sizes.size(); ++index) {
      const size_t bytes = sizes[index];
      Completion done;
      if (context.rank() == 0) {
        const std::vector<uint8_t> out = Message(index, bytes);
        ASSERT_OK(transport.PostSend(1, index, out.data(), bytes, &done));
        context.Barrier();  // the receive is over: no transport call until then
        ASSERT_OK(transport.Wait(done, absl::Now() + absl::Seconds(30)));
        continue;
      }
      std::vector<uint8_t> in(bytes, 0xee);
      ASSERT_OK(transport.PostRecv(0, index, in.data(), bytes, &done));
      const absl::Status received = transport.Wait(done, absl::Now() + absl::Seconds(10));
      context.Barrier();
      ASSERT_TRUE(received.ok()) << bytes << " bytes: " << received;
      EXPECT_EQ(done.bytes(), bytes);
      EXPECT_EQ(WrongBytes(in, index), 0u) << "bytes of the " << bytes << "-byte message";
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A stream of split messages one way (an exchange is not split): more at once than a
// sender has claims words at its receiver (the rest are read whole), each arriving
// whole and in its own buffer.
TEST(ShmTransportTest, ManySplitMessagesInFlightAtOnce) {
  constexpr int kMessages = 80;
  constexpr size_t kBytes = (size_t{64} << 10) + 4097;
  const absl::Status status = testing::RunRanks("shm", 2, [&](testing::RankContext& context) {
    Transport& transport = context.transport();
    std::vector<std::vector<uint8_t>> buffers(kMessages);
    std::vector<Completion> done(kMessages);
    std::vector<const Completion*> all;
    for (int m = 0; m < kMessages; ++m) {
      all.push_back(&done[m]);
      if (context.rank() == 0) {
        buffers[m] = Message(m, kBytes);
        ASSERT_OK(transport.PostSend(1, m, buffers[m].data(), kBytes, &done[m]));
      } else {
        buffers[m].assign(kBytes, 0xee);
        ASSERT_OK(transport.PostRecv(0, m, buffers[m].data(), kBytes, &done[m]));
      }
    }
    ASSERT_OK(transport.WaitAll(all, absl::Now() + absl::Seconds(30)));
    if (context.rank() == 0) return;
    for (int m = 0; m < kMessages; ++m) {
      EXPECT_EQ(WrongBytes(buffers[m], m), 0u) << "bytes of message " << m;
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace zcoll
