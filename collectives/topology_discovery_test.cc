#include "collectives/topology_discovery.h"

#include <sched.h>
#include <unistd.h>

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

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

// The last-level cache above this process's CPUs is the largest level hwloc lists
// (this machine's caches grow level by level, checked above), the same at every call.
TEST(TopologyDiscoveryTest, TheLastLevelCacheIsTheLargestLevel) {
  absl::StatusOr<NodeHardware> node = DiscoverNodeHardware();
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_FALSE(node->cache_bytes_per_level.empty());
  EXPECT_EQ(LastLevelCacheBytes(), node->cache_bytes_per_level.back());
  EXPECT_EQ(LastLevelCacheBytes(), LastLevelCacheBytes());
}

TEST(TopologyDiscoveryTest, PlacesOneCpuInOnePackageAndNumaDomain) {
  absl::StatusOr<NodeHardware> node = DiscoverNodeHardware();
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<RankLocation> one = DiscoverPlacementOfCpus({0});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_GE(one->package, 0);
  EXPECT_LT(one->package, node->packages);
  EXPECT_GE(one->numa, 0);
  EXPECT_LT(one->numa, node->numa_domains);
}

TEST(TopologyDiscoveryTest, ABindingAcrossPackagesHasNoPackage) {
  absl::StatusOr<NodeHardware> node = DiscoverNodeHardware();
  ASSERT_TRUE(node.ok()) << node.status();
  std::vector<int> all;
  for (int cpu = 0; cpu < sysconf(_SC_NPROCESSORS_ONLN); ++cpu) all.push_back(cpu);
  absl::StatusOr<RankLocation> everywhere = DiscoverPlacementOfCpus(all);
  ASSERT_TRUE(everywhere.ok()) << everywhere.status();
  EXPECT_EQ(everywhere->package, node->packages == 1 ? 0 : kUnknownId);
  EXPECT_EQ(everywhere->numa, node->numa_domains == 1 ? 0 : kUnknownId);
  // No CPU at all: nothing is known.
  absl::StatusOr<RankLocation> nowhere = DiscoverPlacementOfCpus({});
  ASSERT_OK(nowhere);
  EXPECT_EQ(nowhere->package, kUnknownId);
  EXPECT_EQ(DiscoverPlacementOfCpus({-1}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TopologyDiscoveryTest, ThisProcessIsPlacedAsItsAffinitySays) {
  cpu_set_t affinity;
  ASSERT_EQ(sched_getaffinity(0, sizeof(affinity), &affinity), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &affinity)) cpus.push_back(cpu);
  }
  absl::StatusOr<RankLocation> process = DiscoverProcessPlacement();
  absl::StatusOr<RankLocation> expected = DiscoverPlacementOfCpus(cpus);
  ASSERT_TRUE(process.ok()) << process.status();
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(*process, *expected);
}

}  // namespace
}  // namespace zcoll
