#include "collectives/shared_buffers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

TEST(SharedBuffersTest, AllocatesZeroedPageAlignedMemoryAndFindsIt) {
  absl::StatusOr<void*> data = AllocateSharedBuffer(10000);
  ASSERT_TRUE(data.ok()) << data.status();
  auto* bytes = static_cast<unsigned char*>(*data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % 4096, 0u);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << i;
  std::memset(bytes, 7, 10000);
  EXPECT_TRUE(FindSharedBuffer(bytes, 10000));
  EXPECT_TRUE(FindSharedBuffer(bytes + 100, 9900));
  EXPECT_FALSE(FindSharedBuffer(bytes + 100, 9901));  // runs past its end
  EXPECT_FALSE(FindSharedBuffer(bytes - 1, 1));
  int stack_value = 0;
  EXPECT_FALSE(FindSharedBuffer(&stack_value, sizeof stack_value));
  ASSERT_OK(FreeSharedBuffer(bytes));
  EXPECT_FALSE(FindSharedBuffer(bytes, 1));
}

TEST(SharedBuffersTest, RefusesZeroBytesAndForeignPointers) {
  absl::StatusOr<void*> none = AllocateSharedBuffer(0);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("bytes is 0"));
  int value = 0;
  absl::Status freed = FreeSharedBuffer(&value);
  EXPECT_EQ(freed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(freed.message(), HasSubstr("not a buffer from AllocateBuffer"));
  absl::StatusOr<void*> data = AllocateSharedBuffer(1);
  ASSERT_OK(data);
  ASSERT_OK(FreeSharedBuffer(*data));
  EXPECT_FALSE(FreeSharedBuffer(*data).ok());  // twice
}

// A child process maps its parent's buffer, sees what the parent wrote and writes into
// it; a stale reference (the serial of a freed buffer) is not mapped.
TEST(SharedBuffersTest, APeerProcessMapsTheBufferAndRejectsAStaleReference) {
  absl::StatusOr<void*> data = AllocateSharedBuffer(8192);
  ASSERT_TRUE(data.ok()) << data.status();
  auto* bytes = static_cast<char*>(*data);
  std::strcpy(bytes + 5000, "from the parent");
  const BufferRef ref = FindSharedBuffer(bytes, 8192);
  ASSERT_TRUE(ref);
  const auto parent = static_cast<uint32_t>(getpid());
  const auto address = reinterpret_cast<uint64_t>(bytes);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::shared_ptr<const PeerBufferMapping> mapping = MapPeerBuffer(parent, ref);
    if (mapping == nullptr) _exit(2);
    char* here = mapping->Translate(address + 5000, 100);
    if (here == nullptr || std::strcmp(here, "from the parent") != 0) _exit(3);
    if (mapping->Translate(address + 8000, 193) != nullptr) _exit(4);  // past the end
    if (mapping->Translate(address - 1, 1) != nullptr) _exit(5);
    std::strcpy(here, "from the child");
    BufferRef stale = ref;
    stale.serial += 1000;
    if (MapPeerBuffer(parent, stale) != nullptr) _exit(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_STREQ(bytes + 5000, "from the child");
  ASSERT_OK(FreeSharedBuffer(bytes));
}

// More peers' buffers than the old bound of all (64) stay mapped from one round of
// lookups to the next, as a node engine call on 40 ranks looks its peers' two buffers
// up again in every call (with a bound below that, least-recently-used order dropped
// each mapping just before its next use). Each child holds two buffers and waits.
TEST(SharedBuffersTest, ManyPeersBuffersStayMappedFromOneRoundToTheNext) {
  constexpr int kPeers = 40, kBuffersEach = 2;
  static_assert(kPeers * kBuffersEach > 64);
  static_assert(kBuffersEach <= kMappedBuffersPerPeer);
  struct Published {
    uint32_t pid, fd, serial, value;
    uint64_t address;
  };
  int to_parent[2], to_children[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_children), 0);
  std::vector<pid_t> children;
  for (int peer = 0; peer < kPeers; ++peer) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(to_parent[0]);
      close(to_children[1]);
      Published mine[kBuffersEach];
      for (int b = 0; b < kBuffersEach; ++b) {
        absl::StatusOr<void*> data = AllocateSharedBuffer(4096);
        if (!data.ok()) _exit(2);
        const auto value = static_cast<uint32_t>(peer * kBuffersEach + b);
        static_cast<uint32_t*>(*data)[0] = value;
        const BufferRef ref = FindSharedBuffer(*data, 4096);
        mine[b] = Published{static_cast<uint32_t>(getpid()), ref.fd, ref.serial, value,
                            reinterpret_cast<uint64_t>(*data)};
      }
      if (write(to_parent[1], mine, sizeof mine) != static_cast<ssize_t>(sizeof mine)) _exit(3);
      char done;
      while (read(to_children[0], &done, 1) > 0) {
      }
      _exit(0);
    }
    children.push_back(child);
  }
  close(to_parent[1]);
  close(to_children[0]);
  std::vector<Published> published(kPeers * kBuffersEach);
  // (Each child's record is written at once, within PIPE_BUF: whole, in some order.)
  for (int peer = 0; peer < kPeers; ++peer) {
    Published record[kBuffersEach];
    ASSERT_EQ(read(to_parent[0], record, sizeof record), static_cast<ssize_t>(sizeof record));
    for (int b = 0; b < kBuffersEach; ++b) published[peer * kBuffersEach + b] = record[b];
  }
  std::vector<std::shared_ptr<const PeerBufferMapping>> first_round(published.size());
  for (size_t i = 0; i < published.size(); ++i) {
    const BufferRef ref{published[i].fd, published[i].serial};
    first_round[i] = MapPeerBuffer(published[i].pid, ref);
    ASSERT_NE(first_round[i], nullptr) << "buffer " << i << " could not be mapped";
    const auto* value =
        reinterpret_cast<const uint32_t*>(first_round[i]->Translate(published[i].address, 4));
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(*value, published[i].value);
  }
  for (size_t i = 0; i < published.size(); ++i) {
    const BufferRef ref{published[i].fd, published[i].serial};
    EXPECT_EQ(MapPeerBuffer(published[i].pid, ref), first_round[i])
        << "buffer " << i << " was mapped again";
  }
  close(to_children[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

// A process's buffers' serials start at random: a process that takes a gone one's pid
// does not give its first buffer the serial that one's first buffer had, which a peer
// may still have mapped (the pid, the descriptor and the serial would all match).
TEST(SharedBuffersTest, TwoProcessesFirstBuffersHaveDifferentSerials) {
  uint32_t serials[2] = {0, 0};
  for (uint32_t& serial : serials) {
    int pipe_ends[2];
    ASSERT_EQ(pipe(pipe_ends), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      absl::StatusOr<void*> data = AllocateSharedBuffer(1);
      if (!data.ok()) _exit(2);
      const uint32_t mine = FindSharedBuffer(*data, 1).serial;
      _exit(write(pipe_ends[1], &mine, sizeof mine) == sizeof mine ? 0 : 3);
    }
    close(pipe_ends[1]);
    ASSERT_EQ(read(pipe_ends[0], &serial, sizeof serial), static_cast<ssize_t>(sizeof serial));
    close(pipe_ends[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
  }
  EXPECT_NE(serials[0], serials[1]);
}

}  // namespace
}  // namespace zcoll
