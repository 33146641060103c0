// Where the ranks of a communicator run: nodes, and packages and NUMA domains inside.
//
// Topology is a plain value. Algorithms receive one and never query the system, so a
// real topology (discovered from the host name, PMIx and hwloc) and an emulated one
// (`zcoll_run --nodes K` on a laptop) are interchangeable, and the simulator can build
// topologies of 10^5 ranks without any hardware (docs/design.md, "core/").
//
// Nodes are numbered 0..num_nodes()-1 and every node holds at least one rank. Package
// (socket), NUMA and L3 ids are local to a node; -1 means unknown. Ranks are ints, as in
// MPI: communicators never approach 2^31 ranks, and -1 can mean "no rank".
//
// NodeHardware describes one machine as hwloc sees it; zcoll_info prints it and the
// runtime uses it to fill in package and NUMA ids.

#ifndef ZCOLL_CORE_TOPOLOGY_H_
#define ZCOLL_CORE_TOPOLOGY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zcoll {

inline constexpr int kUnknownId = -1;

struct RankLocation {
  int node = 0;
  int package = kUnknownId;  // socket within the node
  int numa = kUnknownId;     // NUMA domain within the node
  int l3 = kUnknownId;       // last-level (L3) cache within the node: cores sharing one

  friend bool operator==(const RankLocation&, const RankLocation&) = default;
};

class Topology {
 public:
  // No ranks and no nodes (what a moved-from Communicator reports).
  Topology() = default;

  // Validates and indexes `ranks` (one entry per rank, indexed by rank). Node ids
  // must be dense: every id in [0, max] used by at least one rank. `node_names`
  // (host names, for error messages) is empty or has one entry per node.
  static absl::StatusOr<Topology> Create(std::vector<RankLocation> ranks,
                                         std::vector<std::string> node_names = {});

  // `num_nodes` nodes of `ranks_per_node` ranks each, ranks placed in blocks
  // (node 0 holds ranks 0..ranks_per_node-1), package and NUMA unknown.
  static absl::StatusOr<Topology> Uniform(int num_nodes, int ranks_per_node);

  // Nodes of the given sizes, in blocks: {3, 1} puts ranks 0-2 on node 0, 3 on node 1.
  static absl::StatusOr<Topology> FromNodeSizes(absl::Span<const int> ranks_per_node);

  // The emulated nodes of a `size`-rank job as ZCOLL_EMULATE_NODES and zcoll_run
  // --nodes describe them: "K", K nodes with ranks in blocks as even as can be
  // (rank r on node r*K/size), or "A,B,...", nodes of A, B, ... ranks in blocks
  // (summing to `size`). InvalidArgument with a sentence otherwise.
  static absl::StatusOr<Topology> Emulated(absl::string_view description, int size);

  int size() const { return static_cast<int>(ranks_.size()); }
  int num_nodes() const { return static_cast<int>(node_ranks_.size()); }

  // Requires 0 <= rank < size() (and 0 <= node < num_nodes() for node arguments).
  const RankLocation& location(int rank) const { return ranks_[rank]; }
  int node_of(int rank) const { return ranks_[rank].node; }
  // Ranks on `node`, ascending.
  absl::Span<const int> ranks_on_node(int node) const { return node_ranks_[node]; }
  // Position of `rank` among the ranks of its node (0 for the node's leader).
  int local_rank(int rank) const { return local_ranks_[rank]; }
  // The lowest rank on `node`.
  int node_leader(int node) const { return node_ranks_[node].front(); }
  // How many ranks nodes 0..node-1 hold together (0 <= node <= num_nodes()).
  int ranks_before_node(int node) const { return ranks_before_node_[node]; }
  absl::string_view node_name(int node) const { return node_names_[node]; }

  bool SameNode(int a, int b) const { return ranks_[a].node == ranks_[b].node; }
  // False when either id is unknown.
  bool SamePackage(int a, int b) const;
  bool SameNuma(int a, int b) const;

  // Every node holds the same number of ranks.
  bool IsUniform() const;
  // Every node's ranks are consecutive (as Uniform and FromNodeSizes place them).
  bool IsBlockPlacement() const;

  // "2 nodes: node0 {0-1} node1 {2-3}" (names shown when they are not the defaults).
  std::string ToString() const;

  friend bool operator==(const Topology& a, const Topology& b);

 private:
  std::vector<RankLocation> ranks_;
  std::vector<std::string> node_names_;
  std::vector<std::vector<int>> node_ranks_;
  std::vector<int> local_ranks_;
  std::vector<int> ranks_before_node_;  // num_nodes() + 1 entries
};

// The ranks in the order a one-level tree visits them: `root` first, then the rest of
// its node (counting on from root, wrapping), then every other node's ranks together,
// nodes in order from the root's. A binomial or k-nomial tree over it keeps its
// subtrees on one node where it can, so few edges cross the network whatever the
// placement (a tree in rank order over ranks placed round robin on two nodes sends
// every other edge across). On one node: root, root+1, ..., wrapping.
//
// Computed, not stored: each of a schedule's ranks needs its own place and a few
// neighbours', and the simulator builds 65,536 ranks' schedules, so listing every
// rank for each of them would cost O(ranks^2). Refers to `topology`, which must
// outlive it.
class NodeGroupedOrder {
 public:
  NodeGroupedOrder(const Topology& topology, int root);

  int size() const { return topology_.size(); }
  // The rank at `index` (0 <= index < size()): O(log nodes).
  int operator[](int index) const;
  // The index of `rank` (0 <= rank < size()): O(1).
  int IndexOf(int rank) const;
  // Every rank, in order.
  std::vector<int> Ranks() const;

 private:
  const Topology& topology_;
  int root_node_;
  int root_local_rank_;
};

// One machine's hardware, as hwloc reports it.
struct NodeHardware {
  std::string host_name;
  int packages = 0;
  int numa_domains = 0;
  int l3_caches = 0;  // the node levels' last tier (cores that share one)
  int cores = 0;
  int hardware_threads = 0;
  // Data or unified cache sizes in bytes by level (index 0 = L1); 0 when unknown.
  std::vector<uint64_t> cache_bytes_per_level;
  // Total memory in bytes; 0 when unknown.
  uint64_t memory_bytes = 0;
};

}  // namespace zcoll

#endif  // ZCOLL_CORE_TOPOLOGY_H_
