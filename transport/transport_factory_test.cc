#include "transport/transport_factory.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scoped_environment.h"

namespace zcoll {
namespace {

using ::zcoll::testing::ScopedEnvironment;

using ::testing::Contains;
using ::testing::HasSubstr;

TEST(TransportFactoryTest, ThisMachineOffersTheProvidersZcollIsTestedWith) {
  const std::vector<std::string> available = AvailableProviders();
  EXPECT_THAT(available, Contains("shm"));
  EXPECT_THAT(available, Contains("ofi:shm"));
  EXPECT_THAT(available, Contains("ofi:tcp"));
  EXPECT_THAT(available, Contains("ucx"));
  EXPECT_THAT(available, Contains("ucx:tcp"));
}

TEST(TransportFactoryTest, UnknownProvidersAreRefusedWithWhatIsAvailable) {
  absl::StatusOr<std::unique_ptr<Transport>> made = CreateTransport("carrier-pigeon", 0, 2);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("unknown transport provider 'carrier-pigeon'"));
  EXPECT_THAT(made.status().message(), HasSubstr("available here: shm"));
  EXPECT_THAT(CreateTransport("shm", 2, 2).status().message(), HasSubstr("rank 2 is not a rank"));
  EXPECT_THAT(CreateTransport("shm+ofi:tcp/0", 0, 2).status().message(),
              HasSubstr("is not LOCAL+NETWORK/NODES"));
  EXPECT_THAT(CreateTransport("shm/2", 0, 2).status().message(),
              HasSubstr("is not LOCAL+NETWORK/NODES"));
}

TEST(TransportFactoryTest, NodeAwareTransportsRouteByNode) {
  // Ranks 0-1 on node 0, 2-3 on node 1.
  const std::vector<int> nodes = {0, 0, 1, 1};
  absl::StatusOr<std::unique_ptr<Transport>> routed =
      CreateNodeAwareTransport("shm", "ofi:tcp", 0, 4, nodes);
  ASSERT_TRUE(routed.ok()) << routed.status();
  EXPECT_EQ((*routed)->provider_name(), "shm+ofi:tcp;ofi_rxm");
  // One node: only the local provider.
  absl::StatusOr<std::unique_ptr<Transport>> single =
      CreateNodeAwareTransport("shm", "ofi:tcp", 1, 2, {0, 0});
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ((*single)->provider_name(), "shm");
  // Alone on its node: only the network provider.
  absl::StatusOr<std::unique_ptr<Transport>> alone =
      CreateNodeAwareTransport("shm", "ucx:tcp", 2, 3, {0, 0, 1});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*alone)->provider_name(), "ucx");
}

TEST(TransportFactoryTest, AnUnusableNetworkProviderSaysWhyAndWhatWouldWork) {
  absl::StatusOr<std::unique_ptr<Transport>> made =
      CreateNodeAwareTransport("shm", "ofi:verbs", 0, 2, {0, 1});
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.status().message(),
              HasSubstr("rank 0: the network provider 'ofi:verbs' cannot be used:"));
  EXPECT_THAT(made.status().message(), HasSubstr("available here: shm, ofi"));
  EXPECT_THAT(CreateNodeAwareTransport("shm", "ofi", 0, 2, {0}).status().message(),
              HasSubstr("1 node ids for 2 ranks"));
}

TEST(TransportFactoryTest, TheEnvironmentChoosesProviders) {
  {
    // Unset: shm within a node, and here (no RDMA device) UCX's TCP between nodes.
    absl::StatusOr<ProviderChoice> choice = ProvidersFromEnvironment();
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->local, "shm");
    EXPECT_EQ(choice->network, "ucx:tcp");
  }
  {
    ScopedEnvironment network("ZCOLL_PROVIDER", "ucx:tcp");
    ScopedEnvironment local("ZCOLL_LOCAL_PROVIDER", "ofi:shm");
    absl::StatusOr<std::unique_ptr<Transport>> made = CreateJobTransport(0, 4, {0, 0, 1, 1});
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ((*made)->provider_name(), "ofi:shm+ucx");
  }
  {
    // "ofi" between nodes never means libfabric's shm, whatever fi_getinfo lists first.
    ScopedEnvironment network("ZCOLL_PROVIDER", "ofi");
    absl::StatusOr<ProviderChoice> choice = ProvidersFromEnvironment();
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->network, "ofi:tcp");
  }
  {
    ScopedEnvironment network("ZCOLL_PROVIDER", "ofi:verbs");
    absl::StatusOr<std::unique_ptr<Transport>> made = CreateJobTransport(1, 2, {0, 1});
    ASSERT_FALSE(made.ok());
    EXPECT_THAT(made.status().message(),
                HasSubstr("rank 1: the network provider 'ofi:verbs' cannot be used"));
    EXPECT_THAT(made.status().message(), HasSubstr("available here: shm, ofi"));
    EXPECT_THAT(made.status().message(), HasSubstr("ofi:tcp"));
  }
}

}  // namespace
}  // namespace zcoll
