#include "core/topology.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace zcoll {
namespace {

std::string DefaultNodeName(int node) { return absl::StrCat("node", node); }

// "0-3,6,8-9": compact text for a sorted rank list.
std::string RankRanges(absl::Span<const int> ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(ranks[i]) : absl::StrCat(ranks[i], "-", ranks[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace

absl::StatusOr<Topology> Topology::Create(std::vector<RankLocation> ranks,
                                          std::vector<std::string> node_names) {
  if (ranks.empty()) {
    return absl::InvalidArgumentError("Topology::Create: a topology needs at least one rank");
  }
  int max_node = -1;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const RankLocation& location = ranks[rank];
    if (location.node < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Topology::Create: rank ", rank,
                                                     " has node id ", location.node,
                                                     "; node ids start at 0"));
    }
    if (location.package < kUnknownId || location.numa < kUnknownId || location.l3 < kUnknownId) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Topology::Create: rank ", rank, " has package ", location.package, ", NUMA ",
          location.numa, " and L3 ", location.l3, "; ids are >= 0, or -1 for unknown"));
    }
    max_node = std::max(max_node, location.node);
  }
  Topology topology;
  topology.node_ranks_.resize(static_cast<size_t>(max_node) + 1);
  topology.local_ranks_.resize(ranks.size());
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    std::vector<int>& on_node = topology.node_ranks_[ranks[rank].node];
    topology.local_ranks_[rank] = static_cast<int>(on_node.size());
    on_node.push_back(static_cast<int>(rank));
  }
  for (size_t node = 0; node < topology.node_ranks_.size(); ++node) {
    if (topology.node_ranks_[node].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("Topology::Create: node ", node,
                                                     " holds no rank; node ids must be dense (0..",
                                                     max_node, " all used)"));
    }
  }
  if (node_names.empty()) {
    for (int node = 0; node <= max_node; ++node) node_names.push_back(DefaultNodeName(node));
  } else if (node_names.size() != topology.node_ranks_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Topology::Create: ", node_names.size(),
                                                   " node names given for ",
                                                   topology.node_ranks_.size(), " nodes"));
  }
  topology.ranks_before_node_.assign(1, 0);
  for (const std::vector<int>& on_node : topology.node_ranks_) {
    topology.ranks_before_node_.push_back(topology.ranks_before_node_.back() +
                                          static_cast<int>(on_node.size()));
  }
  topology.ranks_ = std::move(ranks);
  topology.node_names_ = std::move(node_names);
  return topology;
}

absl::StatusOr<Topology> Topology::Uniform(int num_nodes, int ranks_per_node) {
  if (num_nodes < 1 || ranks_per_node < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Topology::Uniform: needs at least one node and one rank per node, got ",
                     num_nodes, " nodes of ", ranks_per_node, " ranks"));
  }
  std::vector<int> sizes(static_cast<size_t>(num_nodes), ranks_per_node);
  return FromNodeSizes(sizes);
}

absl::StatusOr<Topology> Topology::Emulated(absl::string_view description, int size) {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("emulated nodes '", description, "' for ", size, " ranks: ", why));
  };
  if (size < 1) return refuse("a job has at least one rank");
  std::vector<int> sizes;
  if (!absl::StrContains(description, ',')) {
    int nodes = 0;
    if (!absl::SimpleAtoi(description, &nodes) || nodes < 1 || nodes > size) {
      return refuse(absl::StrCat("not a node count in 1..", size, " nor a list of node sizes"));
    }
    sizes.assign(static_cast<size_t>(nodes), 0);
    for (int rank = 0; rank < size; ++rank) {
      ++sizes[static_cast<size_t>(static_cast<int64_t>(rank) * nodes / size)];
    }
  } else {
    int64_t total = 0;
    for (absl::string_view part : absl::StrSplit(description, ',')) {
      int ranks = 0;
      if (!absl::SimpleAtoi(part, &ranks) || ranks < 1) {
        return refuse(absl::StrCat("'", part, "' is not a positive rank count"));
      }
      sizes.push_back(ranks);
      total += ranks;
    }
    if (total != size) return refuse(absl::StrCat("the node sizes add up to ", total));
  }
  return FromNodeSizes(sizes);
}

absl::StatusOr<Topology> Topology::FromNodeSizes(absl::Span<const int> ranks_per_node) {
  std::vector<RankLocation> ranks;
  for (size_t node = 0; node < ranks_per_node.size(); ++node) {
    if (ranks_per_node[node] < 1) {
      return absl::InvalidArgumentError(absl::StrCat("Topology::FromNodeSizes: node ", node,
                                                     " has ", ranks_per_node[node],
                                                     " ranks; every node needs at least one"));
    }
    for (int i = 0; i < ranks_per_node[node]; ++i) {
      ranks.push_back(RankLocation{.node = static_cast<int>(node)});
    }
  }
  return Create(std::move(ranks));
}

bool Topology::SamePackage(int a, int b) const {
  return SameNode(a, b) && ranks_[a].package != kUnknownId &&
         ranks_[a].package == ranks_[b].package;
}

bool Topology::SameNuma(int a, int b) const {
  return SameNode(a, b) && ranks_[a].numa != kUnknownId && ranks_[a].numa == ranks_[b].numa;
}

bool Topology::IsUniform() const {
  for (const std::vector<int>& on_node : node_ranks_) {
    if (on_node.size() != node_ranks_.front().size()) return false;
  }
  return true;
}

bool Topology::IsBlockPlacement() const {
  for (const std::vector<int>& on_node : node_ranks_) {
    if (on_node.back() - on_node.front() + 1 != static_cast<int>(on_node.size())) {
      return false;
    }
  }
  return true;
}

std::string Topology::ToString() const {
  std::string text = absl::StrCat(num_nodes(), num_nodes() == 1 ? " node:" : " nodes:");
  for (int node = 0; node < num_nodes(); ++node) {
    absl::StrAppend(&text, " ", node_names_[node], " {", RankRanges(node_ranks_[node]), "}");
  }
  return text;
}

NodeGroupedOrder::NodeGroupedOrder(const Topology& topology, int root)
    : topology_(topology),
      root_node_(topology.node_of(root)),
      root_local_rank_(topology.local_rank(root)) {}

// Indexes count on from the root node's first rank in node order, wrapping: node n
// starts at ranks_before_node(n) - ranks_before_node(root node) (mod size). Only the
// root node's own ranks are rotated, to start at the root.
int NodeGroupedOrder::operator[](int index) const {
  const int size = topology_.size();
  const int unrotated = (index + topology_.ranks_before_node(root_node_)) % size;
  // The last node starting at or before `unrotated`.
  int low = 0;
  int high = topology_.num_nodes() - 1;
  while (low < high) {
    const int middle = low + (high - low + 1) / 2;
    if (topology_.ranks_before_node(middle) <= unrotated) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  const absl::Span<const int> local = topology_.ranks_on_node(low);
  const int within = unrotated - topology_.ranks_before_node(low);
  if (low != root_node_) return local[within];
  return local[(within + root_local_rank_) % static_cast<int>(local.size())];
}

int NodeGroupedOrder::IndexOf(int rank) const {
  const int size = topology_.size();
  const int node = topology_.node_of(rank);
  int within = topology_.local_rank(rank);
  if (node == root_node_) {
    const int local_size = static_cast<int>(topology_.ranks_on_node(node).size());
    within = (within - root_local_rank_ + local_size) % local_size;
  }
  return (topology_.ranks_before_node(node) - topology_.ranks_before_node(root_node_) + size) %
             size +
         within;
}

std::vector<int> NodeGroupedOrder::Ranks() const {
  std::vector<int> ranks;
  ranks.reserve(size());
  for (int index = 0; index < size(); ++index) ranks.push_back((*this)[index]);
  return ranks;
}

bool operator==(const Topology& a, const Topology& b) {
  // The indexes are derived from ranks_, so they need no comparison.
  return a.ranks_ == b.ranks_ && a.node_names_ == b.node_names_;
}

}  // namespace zcoll
