#include "collectives/shared_buffers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

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

}  // namespace
}  // namespace zcoll
