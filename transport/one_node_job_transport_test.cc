// A job whose ranks share one node opens no network provider, so it does not look for
// one (CreateJobTransport). Its own binary: libfabric reads FI_PROVIDER once, at its
// first use in a process, and this test needs it to offer nothing.

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/scoped_environment.h"
#include "transport/transport_factory.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;
using ::zcoll::testing::ScopedEnvironment;

// With ZCOLL_PROVIDER=ofi and libfabric offering nothing (FI_PROVIDER names none of its
// providers), the network provider cannot be resolved: a job on two nodes fails to
// create its transport saying so, and a job on one node creates its own all the same.
TEST(OneNodeJobTransportTest, AJobOnOneNodeLooksForNoNetworkProvider) {
  ScopedEnvironment fabric("FI_PROVIDER", "no_such_provider");
  ScopedEnvironment network("ZCOLL_PROVIDER", "ofi");
  ScopedEnvironment local("ZCOLL_LOCAL_PROVIDER", "shm");
  absl::StatusOr<ProviderChoice> choice = ProvidersFromEnvironment();
  ASSERT_FALSE(choice.ok()) << "libfabric offered " << choice->network
                            << " with FI_PROVIDER=no_such_provider";
  EXPECT_THAT(choice.status().message(), HasSubstr("ZCOLL_PROVIDER=ofi finds no network provider"));
  EXPECT_THAT(CreateJobTransport(0, 2, {0, 1}).status().message(),
              HasSubstr("finds no network provider"));
  absl::StatusOr<std::unique_ptr<Transport>> made = CreateJobTransport(0, 2, {0, 0});
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)->provider_name(), "shm");
}

}  // namespace
}  // namespace zcoll
