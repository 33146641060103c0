#include "transport/ucx/ucx_info.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll::ucx {
namespace {

TEST(UcxInfoTest, SharedMemoryTransportsAreListed) {
  absl::StatusOr<std::vector<UcxTransportInfo>> transports = ListUcxTransports();
  ASSERT_TRUE(transports.ok()) << transports.status();
  bool posix = false, self = false;
  for (const UcxTransportInfo& transport : *transports) {
    EXPECT_FALSE(transport.device.empty());
    if (transport.transport == "posix") {
      posix = true;
      EXPECT_EQ(transport.device_type, "shared memory");
    }
    if (transport.transport == "self") self = true;
  }
  EXPECT_TRUE(posix) << "UCX lists no posix shared-memory transport";
  EXPECT_TRUE(self);
}

TEST(UcxInfoTest, VersionIsTheOneZcollIsWrittenFor) {
  EXPECT_TRUE(absl::StartsWith(UcxLibraryVersion(), "1.13")) << UcxLibraryVersion();
}

}  // namespace
}  // namespace zcoll::ucx
