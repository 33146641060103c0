#include "collectives/topology_discovery.h"

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

TEST(TopologyDiscoveryTest, AgreesWithTheOperatingSystem) {
  absl::StatusOr<NodeHardware> node = DiscoverNodeHardware();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_FALSE(node->host_name.empty());
  EXPECT_GE(node->packages, 1);
  EXPECT_GE(node->numa_domains, 1);
  EXPECT_GE(node->cores, node->packages);
  EXPECT_GE(node->hardware_threads, node->cores);
  // hwloc sees the CPUs this process may run on; the OS counts the online ones.
  EXPECT_LE(node->hardware_threads, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GT(node->memory_bytes, 0u);
  ASSERT_FALSE(node->cache_bytes_per_level.empty());
  for (size_t level = 1; level < node->cache_bytes_per_level.size(); ++level) {
    EXPECT_GE(node->cache_bytes_per_level[level], node->cache_bytes_per_level[level - 1])
        << "L" << level + 1 << " is smaller than L" << level;
  }
}

}  // namespace
}  // namespace zcoll
