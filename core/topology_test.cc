#include "core/topology.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TopologyTest, UniformPlacesRanksInBlocks) {
  absl::StatusOr<Topology> topology = Topology::Uniform(2, 3);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->size(), 6);
  EXPECT_EQ(topology->num_nodes(), 2);
  EXPECT_THAT(topology->ranks_on_node(0), ElementsAre(0, 1, 2));
  EXPECT_THAT(topology->ranks_on_node(1), ElementsAre(3, 4, 5));
  EXPECT_EQ(topology->node_of(4), 1);
  EXPECT_EQ(topology->local_rank(4), 1);
  EXPECT_EQ(topology->node_leader(1), 3);
  EXPECT_TRUE(topology->SameNode(3, 5));
  EXPECT_FALSE(topology->SameNode(2, 3));
  EXPECT_TRUE(topology->IsUniform());
  EXPECT_TRUE(topology->IsBlockPlacement());
  EXPECT_EQ(topology->node_name(1), "node1");
  EXPECT_EQ(topology->ToString(), "2 nodes: node0 {0-2} node1 {3-5}");
}

TEST(TopologyTest, UnevenAndInterleavedPlacements) {
  absl::StatusOr<Topology> uneven = Topology::FromNodeSizes({3, 1, 2});
  ASSERT_OK(uneven);
  EXPECT_FALSE(uneven->IsUniform());
  EXPECT_TRUE(uneven->IsBlockPlacement());
  EXPECT_THAT(uneven->ranks_on_node(2), ElementsAre(4, 5));

  // Round-robin placement, as `mpirun --map-by node` does.
  absl::StatusOr<Topology> round_robin = Topology::Create(
      {{.node = 0}, {.node = 1}, {.node = 0}, {.node = 1}, {.node = 0}}, {"alpha", "beta"});
  ASSERT_OK(round_robin);
  EXPECT_THAT(round_robin->ranks_on_node(0), ElementsAre(0, 2, 4));
  EXPECT_EQ(round_robin->local_rank(4), 2);
  EXPECT_EQ(round_robin->node_leader(1), 1);
  EXPECT_FALSE(round_robin->IsBlockPlacement());
  EXPECT_FALSE(round_robin->IsUniform());
  EXPECT_EQ(round_robin->ToString(), "2 nodes: alpha {0,2,4} beta {1,3}");
}

TEST(TopologyTest, NodeGroupedOrderStartsAtTheRootAndKeepsNodesTogether) {
  // Nodes interleaved and of uneven sizes: node 0 {0,3,5}, node 1 {1,4}, node 2 {2,6}.
  absl::StatusOr<Topology> topology = Topology::Create(
      {{.node = 0}, {.node = 1}, {.node = 2}, {.node = 0}, {.node = 1}, {.node = 0}, {.node = 2}});
  ASSERT_OK(topology);
  EXPECT_THAT(NodeGroupedOrder(*topology, 3).Ranks(), ElementsAre(3, 5, 0, 1, 4, 2, 6));
  EXPECT_THAT(NodeGroupedOrder(*topology, 4).Ranks(), ElementsAre(4, 1, 2, 6, 0, 3, 5));
  EXPECT_THAT(NodeGroupedOrder(*topology, 2).Ranks(), ElementsAre(2, 6, 0, 3, 5, 1, 4));
  for (int root = 0; root < topology->size(); ++root) {
    const NodeGroupedOrder order(*topology, root);
    for (int index = 0; index < order.size(); ++index) {
      EXPECT_EQ(order.IndexOf(order[index]), index) << "root " << root << " index " << index;
    }
  }
  absl::StatusOr<Topology> one_node = Topology::Uniform(1, 4);
  ASSERT_OK(one_node);
  EXPECT_THAT(NodeGroupedOrder(*one_node, 2).Ranks(), ElementsAre(2, 3, 0, 1));
}

TEST(TopologyTest, PackageAndNumaNeedKnownIdsOnTheSameNode) {
  absl::StatusOr<Topology> topology = Topology::Create({{.node = 0, .package = 0, .numa = 0},
                                                        {.node = 0, .package = 0, .numa = 1},
                                                        {.node = 0, .package = 1, .numa = 2},
                                                        {.node = 1, .package = 0, .numa = 0},
                                                        {.node = 1}});
  ASSERT_OK(topology);
  EXPECT_TRUE(topology->SamePackage(0, 1));
  EXPECT_FALSE(topology->SameNuma(0, 1));
  EXPECT_FALSE(topology->SamePackage(1, 2));
  EXPECT_FALSE(topology->SamePackage(0, 3)) << "same ids on different nodes";
  EXPECT_FALSE(topology->SameNuma(0, 3));
  EXPECT_FALSE(topology->SamePackage(3, 4)) << "unknown is never the same";
}

TEST(TopologyTest, EqualityComparesPlacementAndNames) {
  EXPECT_EQ(*Topology::Uniform(2, 2), *Topology::FromNodeSizes({2, 2}));
  EXPECT_FALSE(*Topology::Uniform(2, 2) == *Topology::FromNodeSizes({3, 1}));
  EXPECT_FALSE(*Topology::Create({{.node = 0}}, {"a"}) == *Topology::Create({{.node = 0}}, {"b"}));
}

TEST(TopologyTest, InvalidDescriptionsAreRefused) {
  auto message = [](const absl::StatusOr<Topology>& topology) {
    EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(topology.status().message());
  };
  EXPECT_THAT(message(Topology::Create({})), HasSubstr("at least one rank"));
  EXPECT_THAT(message(Topology::Create({{.node = 0}, {.node = 2}})),
              HasSubstr("node 1 holds no rank"));
  EXPECT_THAT(message(Topology::Create({{.node = -2}})), HasSubstr("rank 0 has node id -2"));
  EXPECT_THAT(message(Topology::Create({{.node = 0, .package = -3}})),
              HasSubstr("rank 0 has package -3"));
  EXPECT_THAT(message(Topology::Create({{.node = 0}, {.node = 0, .l3 = -2}})),
              HasSubstr("rank 1 has package -1, NUMA -1 and L3 -2"));
  EXPECT_THAT(message(Topology::Create({{.node = 0}, {.node = 1}}, {"only-one"})),
              HasSubstr("1 node names given for 2 nodes"));
  EXPECT_THAT(message(Topology::Uniform(0, 4)), HasSubstr("got 0 nodes of 4 ranks"));
  EXPECT_THAT(message(Topology::FromNodeSizes({2, 0})), HasSubstr("node 1 has 0 ranks"));
}

TEST(TopologyTest, LargeTopologiesAreCheap) {
  absl::StatusOr<Topology> topology = Topology::Uniform(1024, 96);
  ASSERT_OK(topology);
  EXPECT_EQ(topology->size(), 98304);
  EXPECT_EQ(topology->node_of(98303), 1023);
  EXPECT_EQ(topology->local_rank(98303), 95);
}

TEST(TopologyEmulatedTest, ACountSpreadsRanksEvenlyInBlocks) {
  absl::StatusOr<Topology> topology = Topology::Emulated("3", 7);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_nodes(), 3);
  EXPECT_THAT(topology->ranks_on_node(0), ElementsAre(0, 1, 2));
  EXPECT_THAT(topology->ranks_on_node(1), ElementsAre(3, 4));
  EXPECT_THAT(topology->ranks_on_node(2), ElementsAre(5, 6));
}

TEST(TopologyEmulatedTest, NodeSizesPlaceBlocksOfThoseSizes) {
  absl::StatusOr<Topology> topology = Topology::Emulated("1,3", 4);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_THAT(topology->ranks_on_node(0), ElementsAre(0));
  EXPECT_THAT(topology->ranks_on_node(1), ElementsAre(1, 2, 3));
}

TEST(TopologyEmulatedTest, BadDescriptionsAreRefusedWithASentence) {
  for (const auto& [description, says] : std::vector<std::pair<std::string, std::string>>{
           {"0", "not a node count in 1..4"},
           {"5", "not a node count in 1..4"},
           {"two", "not a node count"},
           {"2,x", "'x' is not a positive rank count"},
           {"2,0,2", "'0' is not a positive rank count"},
           {"2,1", "add up to 3"}}) {
    absl::StatusOr<Topology> topology = Topology::Emulated(description, 4);
    EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument) << description;
    EXPECT_THAT(topology.status().message(), HasSubstr(says)) << description;
  }
}

}  // namespace
}  // namespace zcoll
