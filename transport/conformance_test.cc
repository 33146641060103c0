// The conformance suite every transport provider must pass. One binary per provider
// (transport/conformance.bzl), chosen with --provider=NAME; ranks are threads for
// loopback and processes otherwise (testing/transport_harness.h).

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"
#include "testing/transport_harness.h"
#include "transport/registered_buffer.h"
#include "transport/transport.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;
using testing::RankContext;
using testing::RunOptions;
using testing::RunRanks;

std::string* provider_flag = new std::string("loopback");

const std::string& Provider() { return *provider_flag; }

absl::Time Soon() { return absl::Now() + absl::Seconds(60); }

uint8_t PatternByte(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8) * 13) & 0xff);
}

std::vector<uint8_t> Pattern(uint64_t seed, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = PatternByte(seed, i);
  return data;
}

// Index of the first byte that differs from the pattern, or -1.
int64_t FirstMismatch(const uint8_t* data, size_t bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != PatternByte(seed, i)) return static_cast<int64_t>(i);
  }
  return -1;
}

void RunJob(int size, const std::function<void(RankContext&)>& body, RunOptions options = {}) {
  const absl::Status status = RunRanks(Provider(), size, body, options);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ConformanceTest, SendRecvOfEverySizeBothWays) {
  const std::vector<size_t> sizes = {
      0, 1, 7, 64, 4095, 4096, 65537, 1 << 20, (1 << 20) + 3, size_t{16} << 20, size_t{64} << 20};
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    const int peer = 1 - context.rank();
    for (size_t index = 0; index < sizes.size(); ++index) {
      const size_t bytes = sizes[index];
      const std::vector<uint8_t> out = Pattern(index + 10 * context.rank(), bytes);
      std::vector<uint8_t> in(bytes, 0xee);
      Completion sent, received;
      ASSERT_OK(transport.PostRecv(peer, index, in.data(), bytes, &received));
      ASSERT_OK(transport.PostSend(peer, index, out.data(), bytes, &sent));
      const absl::Status send_status = transport.Wait(sent, Soon());
      const absl::Status recv_status = transport.Wait(received, Soon());
      ASSERT_TRUE(send_status.ok()) << bytes << " bytes: " << send_status;
      ASSERT_TRUE(recv_status.ok()) << bytes << " bytes: " << recv_status;
      EXPECT_EQ(received.bytes(), bytes);
      EXPECT_EQ(FirstMismatch(in.data(), bytes, index + 10 * peer), -1)
          << "message of " << bytes << " bytes from rank " << peer << " is corrupted";
    }
  });
}

// One way only: a receiver whose sender has nothing for it to read may share the
// copying with it (shm's split rendezvous), which an exchange does not do.
TEST(ConformanceTest, SendRecvOfEverySizeOneWay) {
  const std::vector<size_t> sizes = {0,     1,     4096,          65535,
                                     65536, 65537, (1 << 20) + 3, size_t{16} << 20};
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    for (size_t index = 0; index < sizes.size(); ++index) {
      const size_t bytes = sizes[index];
      Completion done;
      if (context.rank() == 0) {
        const std::vector<uint8_t> out = Pattern(index + 100, bytes);
        ASSERT_OK(transport.PostSend(1, index, out.data(), bytes, &done));
        const absl::Status status = transport.Wait(done, Soon());
        ASSERT_TRUE(status.ok()) << bytes << " bytes: " << status;
        continue;
      }
      std::vector<uint8_t> in(bytes, 0xee);
      ASSERT_OK(transport.PostRecv(0, index, in.data(), bytes, &done));
      const absl::Status status = transport.Wait(done, Soon());
      ASSERT_TRUE(status.ok()) << bytes << " bytes: " << status;
      EXPECT_EQ(done.bytes(), bytes);
      EXPECT_EQ(FirstMismatch(in.data(), bytes, index + 100), -1)
          << "message of " << bytes << " bytes from rank 0 is corrupted";
    }
  });
}

TEST(ConformanceTest, ManyOutstandingOperations) {
  constexpr int kMessages = 400;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    const int peer = 1 - context.rank();
    std::vector<std::vector<uint8_t>> outgoing, incoming;
    std::vector<Completion> sends(kMessages), recvs(kMessages);
    for (int i = 0; i < kMessages; ++i) {
      const size_t bytes = (i * 977) % 9000 + 1;
      outgoing.push_back(Pattern(i * 3 + context.rank(), bytes));
      incoming.emplace_back(bytes);
    }
    // Receives in reverse order of the sends: matching is by tag, not by position.
    for (int i = kMessages - 1; i >= 0; --i) {
      ASSERT_OK(transport.PostRecv(peer, i, incoming[i].data(), incoming[i].size(), &recvs[i]));
    }
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_OK(transport.PostSend(peer, i, outgoing[i].data(), outgoing[i].size(), &sends[i]));
    }
    std::vector<const Completion*> all;
    for (int i = 0; i < kMessages; ++i) all.push_back(&sends[i]), all.push_back(&recvs[i]);
    ASSERT_OK(transport.WaitAll(all, Soon()));
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_EQ(FirstMismatch(incoming[i].data(), incoming[i].size(), i * 3 + peer), -1)
          << "message " << i;
    }
  });
}

TEST(ConformanceTest, TagsMatchWhateverOrderReceivesArePostedIn) {
  constexpr int kTags = 64;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    if (context.rank() == 0) {
      std::vector<std::vector<uint8_t>> messages;
      std::vector<Completion> sends(kTags);
      for (int tag = 0; tag < kTags; ++tag) messages.push_back(Pattern(tag, 100 + tag * 50));
      for (int tag = 0; tag < kTags; ++tag) {
        ASSERT_OK(transport.PostSend(1, tag * 1000 + 5, messages[tag].data(), messages[tag].size(),
                                     &sends[tag]));
      }
      for (const Completion& send : sends) ASSERT_OK(transport.Wait(send, Soon()));
    } else {
      std::vector<int> order(kTags);
      for (int tag = 0; tag < kTags; ++tag) order[tag] = tag;
      std::shuffle(order.begin(), order.end(), std::mt19937(42));
      std::vector<std::vector<uint8_t>> buffers(kTags, std::vector<uint8_t>(100 + kTags * 50));
      std::vector<Completion> recvs(kTags);
      for (int tag : order) {
        ASSERT_OK(transport.PostRecv(0, tag * 1000 + 5, buffers[tag].data(), buffers[tag].size(),
                                     &recvs[tag]));
      }
      for (int tag = 0; tag < kTags; ++tag) {
        ASSERT_OK(transport.Wait(recvs[tag], Soon()));
        EXPECT_EQ(recvs[tag].bytes(), 100u + tag * 50);
        EXPECT_EQ(FirstMismatch(buffers[tag].data(), recvs[tag].bytes(), tag), -1) << tag;
      }
    }
  });
}

TEST(ConformanceTest, MessagesWithOneTagArriveInOrder) {
  constexpr int kMessages = 16;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    std::vector<uint64_t> values(kMessages);
    std::vector<Completion> completions(kMessages);
    for (int i = 0; i < kMessages; ++i) {
      values[i] = context.rank() == 0 ? 1000 + i : 0;
      absl::Status posted =
          context.rank() == 0
              ? transport.PostSend(1, 77, &values[i], sizeof(uint64_t), &completions[i])
              : transport.PostRecv(0, 77, &values[i], sizeof(uint64_t), &completions[i]);
      ASSERT_OK(posted);
    }
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_OK(transport.Wait(completions[i], Soon()));
      EXPECT_EQ(values[i], 1000u + i) << "message " << i << " overtook another";
    }
  });
}

// A large message whose receive is posted while it is arriving, then a small one of
// the same tag: each receive gets its own message, whole, in order. The receiver
// progresses its transport a few times first: where a message goes in pieces, some
// have come by then (the shm transport's first 80 at most, 640 KiB of 3 MiB: 16 a
// call from a peer; its sender's pool holds 512 KiB, so it waits for the receiver).
TEST(ConformanceTest, AReceivePostedWhileItsMessageArrivesGetsItWhole) {
  constexpr size_t kLarge = size_t{3} << 20, kSmall = 24;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    if (context.rank() == 0) {
      const std::vector<uint8_t> large = Pattern(11, kLarge), small = Pattern(12, kSmall);
      Completion first, second;
      ASSERT_OK(transport.PostSend(1, 31, large.data(), kLarge, &first));
      ASSERT_OK(transport.PostSend(1, 31, small.data(), kSmall, &second));
      ASSERT_OK(transport.Wait(first, Soon()));
      ASSERT_OK(transport.Wait(second, Soon()));
    } else {
      absl::SleepFor(absl::Milliseconds(20));
      for (int round = 0; round < 5; ++round) {
        ASSERT_OK(transport.Progress());
        absl::SleepFor(absl::Milliseconds(2));
      }
      std::vector<uint8_t> large(kLarge + 64, 0), small(kLarge, 0);
      Completion first, second;
      ASSERT_OK(transport.PostRecv(0, 31, large.data(), large.size(), &first));
      ASSERT_OK(transport.PostRecv(0, 31, small.data(), small.size(), &second));
      ASSERT_OK(transport.Wait(first, Soon()));
      ASSERT_OK(transport.Wait(second, Soon()));
      EXPECT_EQ(first.bytes(), kLarge);
      EXPECT_EQ(FirstMismatch(large.data(), kLarge, 11), -1) << "the large message";
      EXPECT_EQ(second.bytes(), kSmall);
      EXPECT_EQ(FirstMismatch(small.data(), kSmall, 12), -1) << "the small message";
    }
  });
}

// A send's check word reaches the receive it matches, which is not matched on it:
// messages that arrive before their receive and after it, small and rendezvous-sized,
// and two messages of one tag with different words, received in order. A provider
// carries check_bits() bits of it.
TEST(ConformanceTest, ACheckWordReachesTheReceiverAndIsNotMatchedOn) {
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    const uint32_t mask =
        transport.check_bits() == 0 ? 0 : (uint32_t{1} << transport.check_bits()) - 1;
    if (mask == 0 && context.rank() == 0) {
      std::printf("%s carries no check word (check_bits() is 0): only matching is checked\n",
                  std::string(transport.provider_name()).c_str());
    }
    for (size_t bytes : {size_t{8}, size_t{65536}, size_t{4} << 20}) {
      for (bool receive_first : {false, true}) {
        std::vector<uint8_t> first(bytes, 1), second(bytes, 2);
        Completion a, b;
        if (context.rank() == 0) {
          if (receive_first) context.Barrier();
          ASSERT_OK(transport.PostSend(1, 9, first.data(), bytes, &a, nullptr, 0xbeef));
          ASSERT_OK(transport.PostSend(1, 9, second.data(), bytes, &b, nullptr, 0x1234));
          if (!receive_first) context.Barrier();
        } else {
          std::vector<uint8_t> in(bytes), in2(bytes);
          if (!receive_first) context.Barrier();  // both sent before the receives
          ASSERT_OK(transport.PostRecv(0, 9, in.data(), bytes, &a));
          ASSERT_OK(transport.PostRecv(0, 9, in2.data(), bytes, &b));
          if (receive_first) context.Barrier();
          ASSERT_OK(transport.Wait(a, Soon()));
          ASSERT_OK(transport.Wait(b, Soon()));
          EXPECT_EQ(a.check(), 0xbeefu & mask) << bytes << " bytes";
          EXPECT_EQ(b.check(), 0x1234u & mask) << bytes << " bytes";
          EXPECT_EQ(in[0], 1) << "the messages of one tag were received out of order";
          EXPECT_EQ(in2[bytes - 1], 2);
        }
        ASSERT_OK(transport.Wait(a, Soon()));
        ASSERT_OK(transport.Wait(b, Soon()));
        context.Barrier();
      }
    }
  });
}

// Small and large (the shm transport's rendezvous, or its pieces without cross-memory
// attach); the receiver's buffer is half the message, in a vector of exactly that
// size, so that a provider writing past it is caught under ASan.
TEST(ConformanceTest, MessageLongerThanTheReceiveBufferIsRefused) {
  for (const size_t bytes : {size_t{100}, size_t{100} << 10}) {
    RunJob(2, [&](RankContext& context) {
      Transport& transport = context.transport();
      std::vector<uint8_t> data(context.rank() == 0 ? bytes : bytes / 2, 1);
      Completion completion;
      if (context.rank() == 0) {
        ASSERT_OK(transport.PostSend(1, 3, data.data(), data.size(), &completion));
      } else {
        ASSERT_OK(transport.PostRecv(0, 3, data.data(), data.size(), &completion));
      }
      const absl::Status status = transport.Wait(completion, Soon());
      if (context.rank() == 1) {
        EXPECT_TRUE(absl::IsInvalidArgument(status))
            << "a " << bytes << "-byte message into a buffer of half that: " << status;
      }
      // The receiver's mistake is not the sender's end: the next message gets through.
      uint8_t next = context.rank() == 0 ? 42 : 0;
      Completion next_done;
      if (context.rank() == 0) {
        ASSERT_OK(transport.PostSend(1, 4, &next, 1, &next_done));
      } else {
        ASSERT_OK(transport.PostRecv(0, 4, &next, 1, &next_done));
      }
      const absl::Status next_status = transport.Wait(next_done, Soon());
      ASSERT_TRUE(next_status.ok())
          << "after a truncated " << bytes << "-byte message: " << next_status;
      EXPECT_EQ(next, 42);
    });
  }
}

TEST(ConformanceTest, PutAndGetReachRegisteredMemoryAndNotify) {
  for (size_t bytes : {size_t{1000}, size_t{8} << 20}) {
    RunJob(2, [&](RankContext& context) {
      Transport& transport = context.transport();
      const size_t region_bytes = bytes + 4096;
      std::vector<uint8_t> memory(region_bytes, 0x55);
      absl::StatusOr<std::unique_ptr<MemoryRegion>> region =
          transport.RegisterMemory(memory.data(), memory.size(), MemoryAccess::kRemoteReadWrite);
      ASSERT_TRUE(region.ok()) << region.status();
      const std::vector<std::string> keys = context.AllGather((*region)->packed_key());
      if (context.rank() == 0) {
        absl::StatusOr<std::unique_ptr<RemoteRegion>> remote = transport.ImportRegion(1, keys[1]);
        ASSERT_TRUE(remote.ok()) << remote.status();
        const std::vector<uint8_t> data = Pattern(5, bytes);
        Completion put;
        ASSERT_OK(transport.PostPut(data.data(), bytes, **remote, 100, 7, &put));
        ASSERT_OK(transport.Wait(put, Soon()));
        context.Barrier();  // rank 1 refills its region for the get
        std::vector<uint8_t> read(bytes);
        Completion get;
        ASSERT_OK(transport.PostGet(read.data(), bytes, **remote, 50, 9, &get));
        ASSERT_OK(transport.Wait(get, Soon()));
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(read[i], PatternByte(6, i + 50)) << "byte " << i << " of the get";
        }
      } else {
        Completion put_done;
        ASSERT_OK(transport.PostNotifyRecv(0, 7, &put_done));
        ASSERT_OK(transport.Wait(put_done, Soon()));
        EXPECT_EQ(memory[99], 0x55) << "the put wrote before its offset";
        EXPECT_EQ(FirstMismatch(memory.data() + 100, bytes, 5), -1) << "the put's data";
        EXPECT_EQ(memory[100 + bytes], 0x55) << "the put wrote past its end";
        for (size_t i = 0; i < region_bytes; ++i) memory[i] = PatternByte(6, i);
        context.Barrier();
        Completion get_done;
        ASSERT_OK(transport.PostNotifyRecv(0, 9, &get_done));
        ASSERT_OK(transport.Wait(get_done, Soon()));
      }
      context.Barrier();  // nobody deregisters while a peer may still use the region
    });
  }
}

TEST(ConformanceTest, PreRegisteredBuffersNeedNoFurtherRegistration) {
  constexpr size_t kLargest = size_t{4} << 20;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    const int peer = 1 - context.rank();
    absl::StatusOr<RegisteredBuffer> out =
        RegisteredBuffer::Allocate(transport, kLargest, MemoryAccess::kLocal);
    absl::StatusOr<RegisteredBuffer> in =
        RegisteredBuffer::Allocate(transport, kLargest + 4096, MemoryAccess::kRemoteReadWrite);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(in.ok()) << in.status();
    const RegistrationStats before = transport.registration_stats();
    for (size_t bytes : {size_t{8}, size_t{65536}, kLargest}) {
      const uint64_t seed = bytes + context.rank();
      for (size_t i = 0; i < bytes; ++i) out->data()[i] = PatternByte(seed, i);
      Completion sent, received;
      ASSERT_OK(transport.PostRecv(peer, 1, in->data(), bytes, &received, &in->region()));
      ASSERT_OK(transport.PostSend(peer, 1, out->data(), bytes, &sent, &out->region()));
      ASSERT_OK(transport.Wait(sent, Soon()));
      ASSERT_OK(transport.Wait(received, Soon()));
      EXPECT_EQ(FirstMismatch(in->data(), bytes, bytes + peer), -1) << bytes << " bytes";
    }
    // A put from one registered buffer into the peer's.
    const std::vector<std::string> keys = context.AllGather(in->packed_key());
    absl::StatusOr<std::unique_ptr<RemoteRegion>> remote = transport.ImportRegion(peer, keys[peer]);
    ASSERT_TRUE(remote.ok()) << remote.status();
    context.Barrier();  // both have read their messages before puts overwrite them
    for (size_t i = 0; i < kLargest; ++i) out->data()[i] = PatternByte(70 + context.rank(), i);
    Completion put, put_arrived;
    ASSERT_OK(transport.PostNotifyRecv(peer, 3, &put_arrived));
    ASSERT_OK(transport.PostPut(out->data(), kLargest, **remote, 4096, 3, &put, &out->region()));
    ASSERT_OK(transport.Wait(put, Soon()));
    ASSERT_OK(transport.Wait(put_arrived, Soon()));
    EXPECT_EQ(FirstMismatch(in->data() + 4096, kLargest, 70 + peer), -1) << "the put's data";
    const RegistrationStats after = transport.registration_stats();
    EXPECT_EQ(after.misses, before.misses) << "a transfer registered a pre-registered buffer";
    EXPECT_EQ(after.hits, before.hits) << "a transfer looked up a pre-registered buffer";

    // A region that does not cover the buffer is refused, not trusted.
    std::vector<uint8_t> elsewhere(64);
    Completion unused;
    const absl::Status outside =
        transport.PostSend(peer, 2, elsewhere.data(), 64, &unused, &out->region());
    EXPECT_EQ(outside.code(), absl::StatusCode::kInvalidArgument) << outside;
    EXPECT_THAT(outside.message(), HasSubstr("not inside the MemoryRegion"));
    const absl::Status overrun =
        transport.PostRecv(peer, 2, in->data() + 4096, kLargest + 1, &unused, &in->region());
    EXPECT_EQ(overrun.code(), absl::StatusCode::kInvalidArgument) << overrun;
    EXPECT_FALSE(unused.done());
    EXPECT_EQ(
        RegisteredBuffer::Register(transport, nullptr, 8, MemoryAccess::kLocal).status().code(),
        absl::StatusCode::kInvalidArgument);
    context.Barrier();  // nobody deregisters while the peer's put may still land
  });
}

TEST(ConformanceTest, RegistrationCacheRegistersOnceAndForgetsWhenTold) {
  constexpr size_t kBytes = 256 * 1024;
  constexpr int kRepeats = 4;
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    const int peer = 1 - context.rank();
    auto transfer = [&](std::vector<uint8_t>& buffer, uint64_t seed) {
      Completion done;
      if (context.rank() == 0) {
        for (size_t i = 0; i < kBytes; ++i) buffer[i] = PatternByte(seed, i);
        ASSERT_OK(transport.PostSend(peer, seed, buffer.data(), kBytes, &done));
      } else {
        std::fill(buffer.begin(), buffer.end(), 0);
        ASSERT_OK(transport.PostRecv(peer, seed, buffer.data(), kBytes, &done));
      }
      ASSERT_OK(transport.Wait(done, Soon()));
      if (context.rank() == 1) {
        EXPECT_EQ(FirstMismatch(buffer.data(), kBytes, seed), -1) << "transfer " << seed;
      }
    };
    auto buffer = std::make_unique<std::vector<uint8_t>>(kBytes);
    const RegistrationStats start = transport.registration_stats();
    transfer(*buffer, 1);
    const RegistrationStats first = transport.registration_stats();
    if (first.misses == start.misses && first.hits == start.hits) {
      context.Barrier();
      GTEST_SKIP() << Provider() << " registers no local buffers here, so there is no cache "
                   << "to test (the ofi_tcp_registering variant tests it)";
    }
    EXPECT_EQ(first.misses, start.misses + 1) << "the first use of a buffer registers it once";
    for (int repeat = 2; repeat <= kRepeats; ++repeat) transfer(*buffer, repeat);
    const RegistrationStats reused = transport.registration_stats();
    EXPECT_EQ(reused.misses, first.misses) << "a buffer used again was registered again";
    EXPECT_GE(reused.hits, first.hits + kRepeats - 1);

    // Told the memory goes away, the cache drops its registration; memory that
    // takes its place is registered afresh and carries its own contents.
    transport.InvalidateRegistrations(buffer->data(), kBytes);
    EXPECT_LT(transport.registration_stats().cached, reused.cached);
    buffer = std::make_unique<std::vector<uint8_t>>(kBytes);
    transfer(*buffer, kRepeats + 1);
    EXPECT_EQ(transport.registration_stats().misses, reused.misses + 1);
    context.Barrier();
  });
}

TEST(ConformanceTest, RemoteKeysAndRangesAreChecked) {
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    std::vector<uint8_t> memory(4096);
    absl::StatusOr<std::unique_ptr<MemoryRegion>> region =
        transport.RegisterMemory(memory.data(), memory.size(), MemoryAccess::kRemoteRead);
    ASSERT_TRUE(region.ok()) << region.status();
    const std::vector<std::string> keys = context.AllGather((*region)->packed_key());
    if (context.rank() == 0) {
      auto code = [](const auto& status_or) { return status_or.status().code(); };
      EXPECT_EQ(code(transport.ImportRegion(1, "not a key")), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(code(transport.ImportRegion(1, keys[1].substr(0, keys[1].size() - 1))),
                absl::StatusCode::kInvalidArgument);
      const auto wrong_owner = transport.ImportRegion(1, keys[0]);
      EXPECT_EQ(code(wrong_owner), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(wrong_owner.status().message(), HasSubstr("belongs to rank 0"));
      absl::StatusOr<std::unique_ptr<RemoteRegion>> remote = transport.ImportRegion(1, keys[1]);
      ASSERT_TRUE(remote.ok()) << remote.status();
      std::vector<uint8_t> buffer(8192);
      Completion unused;
      const absl::Status read_only = transport.PostPut(buffer.data(), 10, **remote, 0, 1, &unused);
      EXPECT_EQ(read_only.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(read_only.message(), HasSubstr("not registered for remote writes"));
      const absl::Status past_end =
          transport.PostGet(buffer.data(), 200, **remote, 4000, 1, &unused);
      EXPECT_EQ(past_end.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(past_end.message(), HasSubstr("lie outside rank 1's region of 4096 bytes"));
      EXPECT_EQ(transport.PostGet(buffer.data(), 8, **remote, ~size_t{0} - 4, 1, &unused).code(),
                absl::StatusCode::kInvalidArgument);
      EXPECT_FALSE(unused.done()) << "a refused operation must not complete";
    }
    context.Barrier();
  });
}

TEST(ConformanceTest, BadArgumentsAreRefusedWithASentence) {
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    char byte = 0;
    Completion unused;
    const int self = context.rank(), size = context.size();
    auto message = [](const absl::Status& status) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      return std::string(status.message());
    };
    EXPECT_THAT(message(transport.PostSend(size, 0, &byte, 1, &unused)),
                HasSubstr(absl::StrCat("peer ", size, " is not a rank")));
    EXPECT_THAT(message(transport.PostRecv(-1, 0, &byte, 1, &unused)),
                HasSubstr("peer -1 is not a rank"));
    EXPECT_THAT(message(transport.PostSend(self, 0, &byte, 1, &unused)),
                HasSubstr("peer is this rank"));
    EXPECT_THAT(message(transport.PostSend(1 - self, kMaxTag + 1, &byte, 1, &unused)),
                HasSubstr("exceeds the 40-bit tag space"));
    EXPECT_THAT(message(transport.PostRecv(1 - self, 0, nullptr, 4, &unused)),
                HasSubstr("the buffer is null but bytes is 4"));
    EXPECT_FALSE(unused.done());
    context.Barrier();
  });
}

TEST(ConformanceTest, WaitGivesUpAtTheDeadline) {
  RunJob(2, [&](RankContext& context) {
    Transport& transport = context.transport();
    uint32_t value = 0;
    Completion completion;
    if (context.rank() == 0) {
      ASSERT_OK(transport.PostRecv(1, 5, &value, sizeof(value), &completion));
      const absl::Time start = absl::Now();
      const absl::Status status = transport.Wait(completion, start + absl::Milliseconds(300));
      const absl::Duration waited = absl::Now() - start;
      EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
      EXPECT_GE(waited, absl::Milliseconds(300));
      EXPECT_LT(waited, absl::Seconds(3)) << "the wait overslept its deadline";
      context.Barrier();  // now the message comes, and the receive still completes
      ASSERT_OK(transport.Wait(completion, Soon()));
      EXPECT_EQ(value, 0xabcdu);
    } else {
      context.Barrier();
      value = 0xabcd;
      ASSERT_OK(transport.PostSend(0, 5, &value, sizeof(value), &completion));
      ASSERT_OK(transport.Wait(completion, Soon()));
    }
  });
}

TEST(ConformanceTest, AKilledPeerEndsOperationsWithUnavailable) {
  constexpr size_t kBytes = size_t{64} << 20;
  RunOptions options;
  options.ranks_that_die = {1};
  RunJob(
      2,
      [&](RankContext& context) {
        Transport& transport = context.transport();
        std::vector<uint8_t> buffer(kBytes, 1);
        Completion transfer, never;
        if (context.rank() == 1) {
          ASSERT_OK(transport.PostRecv(0, 1, buffer.data(), kBytes, &transfer));
          context.Barrier();
          // Let the transfer start, then die in the middle of it.
          (void)transport.Wait(transfer, absl::Now() + absl::Milliseconds(5));
          context.Die();
          return;
        }
        context.Barrier();
        const absl::Time start = absl::Now();
        ASSERT_OK(transport.PostSend(1, 1, buffer.data(), kBytes, &transfer));
        ASSERT_OK(transport.PostRecv(1, 2, buffer.data(), 8, &never));
        const absl::Time deadline = start + absl::Seconds(30);
        const absl::Status send = transport.Wait(transfer, deadline);
        const absl::Status recv = transport.Wait(never, deadline);
        // The send may have finished before rank 1 died; the receive cannot.
        if (!send.ok()) {
          EXPECT_TRUE(absl::IsUnavailable(send)) << send;
        }
        EXPECT_TRUE(absl::IsUnavailable(recv)) << recv;
        EXPECT_THAT(recv.message(), HasSubstr("rank 1"));
        EXPECT_LT(absl::Now() - start, absl::Seconds(30));
        // Later operations with the dead peer fail at once too.
        Completion after;
        ASSERT_OK(transport.PostSend(1, 3, buffer.data(), 8, &after));
        EXPECT_TRUE(absl::IsUnavailable(transport.Wait(after, absl::Now() + absl::Seconds(10))));
      },
      options);
}

// The sender dies in the middle of a large message its peer is receiving: the
// receive ends with Unavailable (unless it had all of it), well before its deadline.
TEST(ConformanceTest, ASenderKilledMidMessageEndsItsReceiveWithUnavailable) {
  constexpr size_t kBytes = size_t{256} << 20;  // (still arriving 5 ms after it started)
  RunOptions options;
  options.ranks_that_die = {1};
  RunJob(
      2,
      [&](RankContext& context) {
        Transport& transport = context.transport();
        std::vector<uint8_t> buffer(kBytes, 1);
        Completion transfer;
        if (context.rank() == 1) {
          context.Barrier();
          ASSERT_OK(transport.PostSend(0, 1, buffer.data(), kBytes, &transfer));
          // Let the transfer start (what posting it sends, and what the receiver can
          // take from here), then die without progressing it further.
          absl::SleepFor(absl::Milliseconds(5));
          context.Die();
          return;
        }
        ASSERT_OK(transport.PostRecv(1, 1, buffer.data(), kBytes, &transfer));
        context.Barrier();
        const absl::Time start = absl::Now();
        const absl::Status recv = transport.Wait(transfer, start + absl::Seconds(30));
        if (!recv.ok()) {
          EXPECT_TRUE(absl::IsUnavailable(recv)) << recv;
          EXPECT_THAT(recv.message(), HasSubstr("rank 1"));
        }
        EXPECT_LT(absl::Now() - start, absl::Seconds(30));
      },
      options);
}

// A frozen transport never touches the buffers of its operations again, sends' or
// receives': operations of every protocol's size (eager, segmented, rendezvous) are
// pending with rank 1 when rank 0 freezes its transport; rank 0 then makes their
// buffers unreadable and unwritable, rank 1 posts the other side and progresses, and
// rank 0's transport is destroyed (by the harness, after the body) with rank 1's
// data and requests in its sockets: any touch of a buffer is a SIGSEGV. (libfabric,
// closing its endpoint, went on with such a transfer: a survivor of the fault
// campaign crashed so.)
void FreezeWithPending(bool rank0_sends) {
  constexpr size_t kSizes[] = {8, size_t{60} << 10, size_t{200} << 10, size_t{4} << 20};
  RunJob(3, [&](RankContext& context) {
    Transport& transport = context.transport();
    // Mapped for good: they outlive the transport, which the harness destroys later.
    std::vector<uint8_t*> buffers;
    for (size_t bytes : kSizes) {
      void* mapped =
          mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(mapped, MAP_FAILED);
      std::memset(mapped, context.rank() + 1, bytes);
      buffers.push_back(static_cast<uint8_t*>(mapped));
    }
    // Completions kept by the transport: a frozen transport abandons them, and the
    // others' transports may complete their operations as they are destroyed.
    auto kept = std::make_shared<std::array<Completion, std::size(kSizes)>>();
    transport.KeepUntilDestroyed(kept);
    Completion* completions = kept->data();
    auto post = [&](size_t i) {
      const int peer = 1 - context.rank();
      const bool send = (context.rank() == 0) == rank0_sends;
      return send ? transport.PostSend(peer, 40 + i, buffers[i], kSizes[i], &completions[i])
                  : transport.PostRecv(peer, 40 + i, buffers[i], kSizes[i], &completions[i]);
    };
    // Ranks 0 and 1 connected (providers connect on first use), so that the
    // transfers start before rank 0 freezes.
    if (context.rank() < 2) {
      uint8_t out = 1, in = 0;
      Completion sent, received;
      ASSERT_OK(transport.PostSend(1 - context.rank(), 39, &out, 1, &sent));
      ASSERT_OK(transport.PostRecv(1 - context.rank(), 39, &in, 1, &received));
      ASSERT_OK(transport.Wait(sent, Soon()));
      ASSERT_OK(transport.Wait(received, Soon()));
    }
    context.Barrier();
    if (context.rank() == 0) {
      for (size_t i = 0; i < std::size(kSizes); ++i) ASSERT_OK(post(i));
      // The provider's progress starts what it can.
      for (int i = 0; i < 100; ++i) (void)transport.Progress();
      context.Barrier();  // posted
      transport.Freeze(absl::Now() + absl::Milliseconds(250));
      for (size_t i = 0; i < std::size(kSizes); ++i) {
        ASSERT_EQ(mprotect(buffers[i], kSizes[i], PROT_NONE), 0);
      }
      context.Barrier();                        // frozen: rank 1 posts its side
      context.Barrier();                        // and progressed
      absl::SleepFor(absl::Milliseconds(300));  // what it sent reaches this host
      context.DestroyTransport();               // while the others are still there
      context.Barrier();
      return;
    }
    context.Barrier();
    context.Barrier();
    if (context.rank() == 1) {
      for (size_t i = 0; i < std::size(kSizes); ++i) ASSERT_OK(post(i));
      // What can go without rank 0's help goes now.
      for (size_t i = 0; i < std::size(kSizes); ++i) {
        (void)transport.Wait(completions[i], absl::Now() + absl::Milliseconds(100));
      }
    } else {
      // A rank that never spoke to rank 0 does now: a provider that connects lazily
      // has a connection request to handle as it closes.
      ASSERT_OK(transport.PostSend(0, 50, buffers[0], kSizes[0], &completions[0]));
      (void)transport.Wait(completions[0], absl::Now() + absl::Milliseconds(100));
    }
    context.Barrier();
    // Rank 0 destroys its transport: these stay, and progress, meanwhile.
    for (int i = 0; i < 200; ++i) {
      (void)transport.Progress();
      absl::SleepFor(absl::Milliseconds(2));
    }
    context.Barrier();
  });
}

TEST(ConformanceTest, AFrozenTransportNeverTouchesItsReceiveBuffersAgain) {
  FreezeWithPending(/*rank0_sends=*/false);
}

TEST(ConformanceTest, AFrozenTransportNeverTouchesItsSendBuffersAgain) {
  FreezeWithPending(/*rank0_sends=*/true);
}

TEST(ConformanceTest, EveryPairOfFourRanksExchanges) {
  constexpr size_t kBytes = 10000;
  RunJob(4, [&](RankContext& context) {
    Transport& transport = context.transport();
    const int me = context.rank();
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<Completion> completions(2 * 3 * 4);
    std::vector<int> sources;
    int next = 0;
    for (int peer = 0; peer < 4; ++peer) {
      if (peer == me) continue;
      for (int k = 0; k < 3; ++k) {
        out.push_back(Pattern(me * 100 + peer * 10 + k, kBytes));
        in.emplace_back(kBytes);
        sources.push_back(peer * 100 + me * 10 + k);
        ASSERT_OK(transport.PostRecv(peer, k, in.back().data(), kBytes, &completions[next++]));
        ASSERT_OK(transport.PostSend(peer, k, out.back().data(), kBytes, &completions[next++]));
      }
    }
    for (int i = 0; i < next; ++i) ASSERT_OK(transport.Wait(completions[i], Soon()));
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(FirstMismatch(in[i].data(), kBytes, sources[i]), -1) << "message " << i;
    }
  });
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--provider=", 0) == 0) *zcoll::provider_flag = argument.substr(11);
    // --setenv=NAME=VALUE: a zcoll variable for this run (conformance.bzl's variants).
    if (argument.rfind("--setenv=", 0) == 0) {
      const std::string assignment = argument.substr(9);
      const size_t equals = assignment.find('=');
      if (equals == std::string::npos) {
        std::fprintf(stderr, "--setenv needs NAME=VALUE, got '%s'\n", assignment.c_str());
        return 2;
      }
      setenv(assignment.substr(0, equals).c_str(), assignment.substr(equals + 1).c_str(), 1);
      std::printf("with %s\n", assignment.c_str());
    }
  }
  std::printf("transport conformance suite for provider %s\n", zcoll::Provider().c_str());
  return RUN_ALL_TESTS();
}
