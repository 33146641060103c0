#include "transport/ofi/ofi_info.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll::ofi {
namespace {

TEST(OfiInfoTest, SharedMemoryProviderOpensWithTaggedAndRma) {
  // libfabric's shm provider needs no device, so it is present wherever zcoll builds.
  absl::StatusOr<std::vector<OfiProviderInfo>> providers = ListOfiProviders();
  ASSERT_TRUE(providers.ok()) << providers.status();
  const OfiProviderInfo* shm = nullptr;
  for (const OfiProviderInfo& provider : *providers) {
    EXPECT_FALSE(provider.provider.empty());
    EXPECT_FALSE(provider.mr_mode.empty());
    if (provider.provider == "shm") shm = &provider;
  }
  ASSERT_NE(shm, nullptr) << "libfabric lists no shm provider";
  EXPECT_TRUE(shm->open_status.ok()) << shm->open_status;
  EXPECT_TRUE(shm->tagged);
  EXPECT_TRUE(shm->rma);
}

TEST(OfiInfoTest, VersionIsTheOneZcollIsWrittenFor) { EXPECT_EQ(OfiLibraryVersion(), "1.17"); }

}  // namespace
}  // namespace zcoll::ofi
