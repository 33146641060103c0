#include "transport/registration_cache.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

class FakeRegion final : public MemoryRegion {
 public:
  FakeRegion(void* base, size_t length, MemoryAccess access, int* live)
      : MemoryRegion(base, length, access), live_(live) {
    ++*live_;
  }
  ~FakeRegion() override { --*live_; }

 private:
  int* live_;
};

class RegistrationCacheTest : public ::testing::Test {
 protected:
  RegistrationCache MakeCache(size_t capacity) {
    return RegistrationCache(
        [this](void* base, size_t length,
               MemoryAccess access) -> absl::StatusOr<std::unique_ptr<MemoryRegion>> {
          ++registrations_;
          return std::make_unique<FakeRegion>(base, length, access, &live_);
        },
        capacity);
  }

  int registrations_ = 0;
  int live_ = 0;
};

TEST_F(RegistrationCacheTest, ABufferUsedRepeatedlyIsRegisteredOnce) {
  RegistrationCache cache = MakeCache(8);
  std::vector<char> buffer(100000);
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<std::shared_ptr<const MemoryRegion>> region =
        cache.Acquire(buffer.data() + 10, 5000, MemoryAccess::kLocal);
    ASSERT_OK(region);
    EXPECT_TRUE((*region)->Contains(buffer.data() + 10, 5000));
  }
  EXPECT_EQ(registrations_, 1);
  EXPECT_EQ(cache.hits(), 9u);
  EXPECT_EQ(cache.misses(), 1u);
  // A range inside the registered pages hits too; more access than granted does not.
  ASSERT_OK(cache.Acquire(buffer.data() + 100, 10, MemoryAccess::kLocal));
  EXPECT_EQ(registrations_, 1);
  ASSERT_OK(cache.Acquire(buffer.data() + 100, 10, MemoryAccess::kRemoteWrite));
  EXPECT_EQ(registrations_, 2);
}

TEST_F(RegistrationCacheTest, InvalidationForcesANewRegistration) {
  RegistrationCache cache = MakeCache(8);
  std::vector<char> a(10000), b(10000);
  ASSERT_OK(cache.Acquire(a.data(), a.size(), MemoryAccess::kLocal));
  ASSERT_OK(cache.Acquire(b.data(), b.size(), MemoryAccess::kLocal));
  EXPECT_EQ(live_, 2);
  cache.Invalidate(a.data() + 50, 1);
  EXPECT_EQ(live_, 1) << "the registration overlapping the range is released";
  ASSERT_OK(cache.Acquire(a.data(), a.size(), MemoryAccess::kLocal));
  EXPECT_EQ(registrations_, 3);
  ASSERT_OK(cache.Acquire(b.data(), b.size(), MemoryAccess::kLocal));
  EXPECT_EQ(registrations_, 3) << "b was not invalidated";
}

TEST_F(RegistrationCacheTest, LeastRecentlyUsedIsEvictedButInUseRegionsSurvive) {
  RegistrationCache cache = MakeCache(2);
  std::vector<std::vector<char>> buffers(3, std::vector<char>(3 * 4096));
  absl::StatusOr<std::shared_ptr<const MemoryRegion>> held =
      cache.Acquire(buffers[0].data(), 10, MemoryAccess::kLocal);
  ASSERT_OK(held);
  ASSERT_OK(cache.Acquire(buffers[1].data(), 10, MemoryAccess::kLocal));
  ASSERT_OK(cache.Acquire(buffers[2].data(), 10, MemoryAccess::kLocal));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(live_, 3) << "the evicted registration is still held by an operation";
  held->reset();
  EXPECT_EQ(live_, 2);
  ASSERT_OK(cache.Acquire(buffers[0].data(), 10, MemoryAccess::kLocal));
  EXPECT_EQ(registrations_, 4) << "buffer 0 was evicted, so it is registered again";
}

TEST_F(RegistrationCacheTest, RegistrationErrorsPassThrough) {
  RegistrationCache cache(
      [](void*, size_t, MemoryAccess) -> absl::StatusOr<std::unique_ptr<MemoryRegion>> {
        return absl::ResourceExhaustedError("out of pinnable memory");
      },
      4);
  char byte = 0;
  EXPECT_EQ(cache.Acquire(&byte, 1, MemoryAccess::kLocal).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace zcoll
