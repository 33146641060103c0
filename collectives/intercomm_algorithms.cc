#include "collectives/intercomm_algorithms.h"

#include <algorithm>
#include <vector>

#include "collectives/algorithm_steps.h"
#include "collectives/schedule_builder.h"

namespace zcoll {

namespace {

using algorithm_steps::BinomialLinks;
using algorithm_steps::TreeLinks;

// One message per (sender, receiver, stage): the stages' tags.
constexpr uint32_t kUpTag = 1;       // up a group's tree
constexpr uint32_t kSwapTag = 2;     // between the leaders
constexpr uint32_t kDownTag = 3;     // down a group's tree
constexpr uint32_t kDirectTag = 4;   // between a rank and a rank of the other group
constexpr uint32_t kScatterTag = 5;  // a leader to its group's ranks

Slice Whole(BufferId buffer, size_t count) { return {buffer, 0, count}; }
Slice At(BufferId buffer, size_t offset, size_t count) {
  return {buffer, count == 0 ? 0 : offset, count};
}

// A rank's place in its group: the group's ranks on the bridge, its index, and the
// binomial tree rooted at the leader (children in increasing order, so that their
// partial results combine in canonical order after the rank's own).
struct GroupTree {
  std::vector<int> members;
  int index = 0;
  TreeLinks links;

  GroupTree(const IntercommArgs& args, int local_rank) : index(local_rank) {
    for (int i = 0; i < args.local_size; ++i) members.push_back(args.LocalOnBridge(i));
    links = BinomialLinks(members, 0, index);
    std::reverse(links.children.begin(), links.children.end());
  }
  bool leader() const { return index == 0; }
};

// Reduces the group's `mine` (count elements) up its tree; returns where the leader
// holds the group's result (`mine` itself in a group of one), unset elsewhere.
Slice ReduceUp(ScheduleBuilder& builder, const GroupTree& tree, const Slice& mine, size_t count) {
  if (tree.links.children.empty()) {
    if (tree.links.parent >= 0) builder.Send(tree.links.parent, kUpTag, mine);
    return mine;
  }
  std::vector<Slice> operands = {mine};
  for (int child : tree.links.children) {
    const Slice from_child = Whole(builder.AddScratch(count), count);
    builder.Recv(child, kUpTag, from_child);
    operands.push_back(from_child);
  }
  const Slice partial = Whole(builder.AddScratch(count), count);
  builder.Reduce(operands, partial);
  if (tree.links.parent >= 0) builder.Send(tree.links.parent, kUpTag, partial);
  return partial;
}

// Broadcasts `data` from the leader down the group's tree (the others receive it into
// `data`).
void BroadcastDown(ScheduleBuilder& builder, const GroupTree& tree, const Slice& data) {
  if (tree.links.parent >= 0) builder.Recv(tree.links.parent, kDownTag, data);
  // Largest subtree first, so that the deepest path starts earliest.
  for (auto child = tree.links.children.rbegin(); child != tree.links.children.rend(); ++child) {
    builder.Send(*child, kDownTag, data);
  }
}

size_t Sum(const std::vector<size_t>& values) {
  size_t sum = 0;
  for (size_t value : values) sum += value;
  return sum;
}

Schedule Reduce(const IntercommArgs& args, int local_rank, const GroupTree& tree) {
  const size_t count = args.count;
  if (args.root == kProcNull)
    return ScheduleBuilder(tree.members[tree.index], args.bridge_size(), 0, 0).Finish();
  if (args.root == kRoot) {
    ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(), 0, count);
    if (count > 0) builder.Recv(args.RemoteOnBridge(0), kSwapTag, Whole(BufferId::Recv(), count));
    return std::move(builder).Finish();
  }
  ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(), count, 0);
  if (count == 0) return std::move(builder).Finish();
  const Slice result = ReduceUp(builder, tree, Whole(BufferId::Send(), count), count);
  if (tree.leader()) builder.Send(args.RemoteOnBridge(args.root), kSwapTag, result);
  return std::move(builder).Finish();
}

Schedule Bcast(const IntercommArgs& args, int local_rank, const GroupTree& tree) {
  const size_t count = args.count;
  const int me = args.LocalOnBridge(local_rank);
  if (args.root == kProcNull) return ScheduleBuilder(me, args.bridge_size(), 0, 0).Finish();
  ScheduleBuilder builder(me, args.bridge_size(), 0, count);
  if (count == 0) return std::move(builder).Finish();
  const Slice data = Whole(BufferId::Recv(), count);
  if (args.root == kRoot) {
    builder.Send(args.RemoteOnBridge(0), kSwapTag, data);
  } else {
    if (tree.leader()) builder.Recv(args.RemoteOnBridge(args.root), kSwapTag, data);
    BroadcastDown(builder, tree, data);
  }
  return std::move(builder).Finish();
}

Schedule Allreduce(const IntercommArgs& args, int local_rank, const GroupTree& tree) {
  const size_t count = args.count;
  ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(), count, count);
  if (count == 0) return std::move(builder).Finish();
  const Slice result = ReduceUp(builder, tree, Whole(BufferId::Send(), count), count);
  const Slice theirs = Whole(BufferId::Recv(), count);
  if (tree.leader()) {
    builder.Send(args.RemoteOnBridge(0), kSwapTag, result);
    builder.Recv(args.RemoteOnBridge(0), kSwapTag, theirs);
  }
  BroadcastDown(builder, tree, theirs);
  return std::move(builder).Finish();
}

// Reduce_scatter(_block): `blocks` are the local group's blocks of the remote group's
// reduction (their sum is the vector's length in both groups).
Schedule ReduceScatter(const IntercommArgs& args, int local_rank, const GroupTree& tree,
                       const std::vector<size_t>& blocks) {
  const size_t total = Sum(blocks);
  const size_t mine = blocks[local_rank];
  ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(), total, mine);
  if (total == 0) return std::move(builder).Finish();
  const Slice result = ReduceUp(builder, tree, Whole(BufferId::Send(), total), total);
  if (tree.leader()) {
    const Slice theirs = Whole(builder.AddScratch(total), total);
    builder.Send(args.RemoteOnBridge(0), kSwapTag, result);
    builder.Recv(args.RemoteOnBridge(0), kSwapTag, theirs);
    size_t offset = 0;
    for (int i = 0; i < args.local_size; ++i) {
      const Slice block = At(theirs.buffer, offset, blocks[i]);
      offset += blocks[i];
      if (i == 0) {
        if (blocks[0] > 0) builder.Copy(block, Whole(BufferId::Recv(), blocks[0]));
      } else {
        builder.Send(args.LocalOnBridge(i), kScatterTag, block);
      }
    }
  } else {
    builder.Recv(args.LocalOnBridge(0), kScatterTag, Whole(BufferId::Recv(), mine));
  }
  return std::move(builder).Finish();
}

// Scatter(v) and gather(v): the root and every rank of the other group. `counts` and
// `displs` are the root's (by remote rank); `count` is a non-root's own.
Schedule RootToEach(const IntercommArgs& args, int local_rank, bool scatter,
                    const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
  const int me = args.LocalOnBridge(local_rank);
  if (args.root == kProcNull) return ScheduleBuilder(me, args.bridge_size(), 0, 0).Finish();
  if (args.root == kRoot) {
    size_t extent = 0;
    for (int j = 0; j < args.remote_size; ++j) {
      if (counts[j] > 0) extent = std::max(extent, displs[j] + counts[j]);
    }
    ScheduleBuilder builder(me, args.bridge_size(), scatter ? extent : 0, scatter ? 0 : extent);
    for (int j = 0; j < args.remote_size; ++j) {
      const Slice block = At(scatter ? BufferId::Send() : BufferId::Recv(), displs[j], counts[j]);
      if (scatter) {
        builder.Send(args.RemoteOnBridge(j), kDirectTag, block);
      } else {
        builder.Recv(args.RemoteOnBridge(j), kDirectTag, block);
      }
    }
    return std::move(builder).Finish();
  }
  ScheduleBuilder builder(me, args.bridge_size(), scatter ? 0 : args.count,
                          scatter ? args.count : 0);
  const int root = args.RemoteOnBridge(args.root);
  if (scatter) {
    builder.Recv(root, kDirectTag, Whole(BufferId::Recv(), args.count));
  } else {
    builder.Send(root, kDirectTag, Whole(BufferId::Send(), args.count));
  }
  return std::move(builder).Finish();
}

// Allgather(v) and alltoall(v): every rank sends send_counts[j] elements at
// send_displs[j] to remote rank j and receives recv_counts[j] at recv_displs[j] from
// it.
Schedule EachToEach(const IntercommArgs& args, int local_rank,
                    const std::vector<size_t>& send_counts, const std::vector<size_t>& send_displs,
                    const std::vector<size_t>& recv_counts,
                    const std::vector<size_t>& recv_displs) {
  auto extent = [&](const std::vector<size_t>& counts, const std::vector<size_t>& displs) {
    size_t end = 0;
    for (int j = 0; j < args.remote_size; ++j) {
      if (counts[j] > 0) end = std::max(end, displs[j] + counts[j]);
    }
    return end;
  };
  ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(),
                          extent(send_counts, send_displs), extent(recv_counts, recv_displs));
  // Receives first (posted before the peers' sends arrive), then sends, starting
  // with a different peer on each rank so that no remote rank is everyone's first.
  for (int step = 0; step < args.remote_size; ++step) {
    const int j = (local_rank + step) % args.remote_size;
    builder.Recv(args.RemoteOnBridge(j), kDirectTag,
                 At(BufferId::Recv(), recv_displs[j], recv_counts[j]));
  }
  for (int step = 0; step < args.remote_size; ++step) {
    const int j = (local_rank + step) % args.remote_size;
    builder.Send(args.RemoteOnBridge(j), kDirectTag,
                 At(BufferId::Send(), send_displs[j], send_counts[j]));
  }
  return std::move(builder).Finish();
}

Schedule Barrier(const IntercommArgs& args, int local_rank, const GroupTree& tree) {
  ScheduleBuilder builder(args.LocalOnBridge(local_rank), args.bridge_size(), 0, 0);
  // One-element tokens: each send reads what the receives before it wrote, so the
  // release cannot leave before every arrival (the builder orders by the data).
  const BufferId tokens = builder.AddScratch(4 + tree.links.children.size());
  const Slice own{tokens, 0, 1}, gathered{tokens, 1, 1}, swapped{tokens, 2, 1},
      released{tokens, 3, 1};
  std::vector<Slice> arrivals = {own};
  for (size_t c = 0; c < tree.links.children.size(); ++c) {
    const Slice from_child{tokens, 4 + c, 1};
    builder.Recv(tree.links.children[c], kUpTag, from_child);
    arrivals.push_back(from_child);
  }
  Slice up = own;
  if (arrivals.size() > 1) {
    builder.Reduce(arrivals, gathered);
    up = gathered;
  }
  if (tree.leader()) {
    builder.Send(args.RemoteOnBridge(0), kSwapTag, up);
    builder.Recv(args.RemoteOnBridge(0), kSwapTag, swapped);
    const Slice both[] = {up, swapped};
    builder.Reduce(both, released);
  } else {
    builder.Send(tree.links.parent, kUpTag, up);
    builder.Recv(tree.links.parent, kDownTag, released);
  }
  for (auto child = tree.links.children.rbegin(); child != tree.links.children.rend(); ++child) {
    builder.Send(*child, kDownTag, released);
  }
  return std::move(builder).Finish();
}

std::vector<size_t> Blocks(int count, size_t each) {
  return std::vector<size_t>(static_cast<size_t>(count), each);
}
std::vector<size_t> Packed(int count, size_t each) {
  std::vector<size_t> displs(static_cast<size_t>(count));
  for (int j = 0; j < count; ++j) displs[j] = static_cast<size_t>(j) * each;
  return displs;
}

}  // namespace

Schedule IntercommSchedule(const IntercommArgs& args, int local_rank) {
  const GroupTree tree(args, local_rank);
  const int remote = args.remote_size;
  switch (args.collective) {
    case Collective::kReduce:
      return Reduce(args, local_rank, tree);
    case Collective::kBcast:
      return Bcast(args, local_rank, tree);
    case Collective::kAllreduce:
      return Allreduce(args, local_rank, tree);
    case Collective::kReduceScatterBlock:
      return ReduceScatter(args, local_rank, tree, Blocks(args.local_size, args.count));
    case Collective::kReduceScatter:
      return ReduceScatter(args, local_rank, tree, args.counts);
    case Collective::kScatter:
    case Collective::kGather:
      return RootToEach(args, local_rank, args.collective == Collective::kScatter,
                        Blocks(remote, args.count), Packed(remote, args.count));
    case Collective::kScatterv:
    case Collective::kGatherv:
      return RootToEach(args, local_rank, args.collective == Collective::kScatterv, args.counts,
                        args.displs);
    case Collective::kAllgather:
      return EachToEach(args, local_rank, Blocks(remote, args.count), Blocks(remote, 0),
                        Blocks(remote, args.count), Packed(remote, args.count));
    case Collective::kAllgatherv:
      return EachToEach(args, local_rank, Blocks(remote, args.count), Blocks(remote, 0),
                        args.counts, args.displs);
    case Collective::kAlltoall:
      return EachToEach(args, local_rank, Blocks(remote, args.count), Packed(remote, args.count),
                        Blocks(remote, args.count), Packed(remote, args.count));
    case Collective::kAlltoallv:
      return EachToEach(args, local_rank, args.counts, args.displs, args.recv_counts,
                        args.recv_displs);
    case Collective::kBarrier:
    default:  // (scan and exscan have no intercommunicator form: refused before here)
      return Barrier(args, local_rank, tree);
  }
}

}  // namespace zcoll
