// The data-moving collectives' algorithms: scatter(v), gather(v), bcast,
// allgather(v), alltoall(v) and barrier (algorithms.h lists them; algorithm_steps.h
// has the pieces).

#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/algorithm_steps.h"

namespace zcoll::algorithm_steps {
namespace {

// Block r on the root's side of a scatter(v) or gather(v): in `buffer`, at r * count
// or at displs[r].
Slice RootBlock(const CollectiveArgs& args, BufferId buffer, int r) {
  const bool vector =
      args.collective == Collective::kScatterv || args.collective == Collective::kGatherv;
  return vector ? BlockAt(buffer, args.displs[r], args.counts[r])
                : Slice{buffer, args.count * static_cast<size_t>(r), args.count};
}

// A binomial tree over vranks (ranks relative to the root): the root's blocks for
// vranks [v, v + n) lie in one or two runs of its buffer (two when the ranks wrap
// past size - 1). Returns (first vrank, vranks) of each.
std::vector<std::pair<int, int>> RootPieces(int size, int root, int v, int n) {
  std::vector<std::pair<int, int>> pieces;
  const int wrap = size - root;  // vrank of rank 0
  if (v < wrap && wrap < v + n) {
    pieces.emplace_back(v, wrap - v);
    pieces.emplace_back(wrap, v + n - wrap);
  } else {
    pieces.emplace_back(v, n);
  }
  return pieces;
}

}  // namespace

// ---------------------------------------------------------------------------------
// Scatter(v).

// Linear: the root sends every rank its block in one message. Scatterv's counts are
// known at the root only, so this is scatterv's algorithm.
Schedule LinearScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  if (rank != args.root) {
    builder.Recv(args.root, 0, Whole(BufferId::Recv(), args.count));
    return std::move(builder).Finish();
  }
  auto block = [&](int r) { return RootBlock(args, BufferId::Send(), r); };
  for (int distance = 1; distance < args.size; ++distance) {
    const int to = (args.root + distance) % args.size;
    builder.Send(to, 0, block(to));
  }
  const Slice own = block(rank);
  if (!args.in_place && own.count > 0) builder.Copy(own, Whole(BufferId::Recv(), own.count));
  return std::move(builder).Finish();
}

// Binomial: each rank receives its subtree's blocks from its parent and passes the
// subtrees of its children on, largest first: log2(size) rounds.
Schedule BinomialScatter(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size, root = args.root;
  const size_t count = args.count;
  const int vrank = (rank - root + size) % size;
  auto real = [&](int v) { return (v + root) % size; };
  auto subtree = [&](int v) { return v == 0 ? size : std::min(LowestBit(v), size - v); };
  auto root_pieces = [&](int v, int n) { return RootPieces(size, root, v, n); };
  const int mine = subtree(vrank);
  // This rank's subtree's blocks, in vrank order (the root reads its buffer instead).
  Slice held = Whole(BufferId::Recv(), count);
  if (vrank != 0) {
    if (mine > 1) held = Whole(builder.AddScratch(count * mine), count * mine);
    const int parent = vrank - LowestBit(vrank);
    if (parent == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(vrank, mine);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Recv(root, static_cast<uint32_t>(piece),
                     Slice{held.buffer, count * (pieces[piece].first - vrank),
                           count * pieces[piece].second});
      }
    } else {
      builder.Recv(real(parent), 0, held);
    }
  }
  const int top =
      vrank == 0 ? LargestPowerOfTwoAtMost(std::max(1, size - 1)) : LowestBit(vrank) / 2;
  for (int mask = top; mask >= 1; mask /= 2) {
    const int child = vrank + mask;
    if (child >= size) continue;
    const int blocks = subtree(child);
    if (vrank == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(child, blocks);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Send(real(child), static_cast<uint32_t>(piece),
                     Slice{BufferId::Send(), count * real(pieces[piece].first),
                           count * pieces[piece].second});
      }
    } else {
      builder.Send(real(child), 0, Slice{held.buffer, count * (child - vrank), count * blocks});
    }
  }
  if (vrank == 0) {
    if (!args.in_place && count > 0) {
      builder.Copy(Slice{BufferId::Send(), count * rank, count}, Whole(BufferId::Recv(), count));
    }
  } else if (mine > 1 && count > 0) {
    builder.Copy(Whole(held.buffer, count), Whole(BufferId::Recv(), count));
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Gather(v): the mirror images of the scatters.

// Linear: every rank sends its block to the root in one message, all at once (also
// for empty blocks, so that a count the root does not expect is an error there).
// Gatherv's counts are known at the root only, so this is gatherv's algorithm.
Schedule LinearGather(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  if (rank != args.root) {
    builder.Send(args.root, 0, Whole(BufferId::Send(), args.count));
    return std::move(builder).Finish();
  }
  auto block = [&](int r) { return RootBlock(args, BufferId::Recv(), r); };
  for (int distance = 1; distance < args.size; ++distance) {
    const int from = (args.root + distance) % args.size;
    builder.Recv(from, 0, block(from));
  }
  const Slice own = block(rank);
  if (!args.in_place && own.count > 0) builder.Copy(Whole(BufferId::Send(), own.count), own);
  return std::move(builder).Finish();
}

// Binomial: each rank collects its subtree's blocks (in vrank order) and sends them
// to its parent in one message: log2(size) rounds, for small blocks.
Schedule BinomialGather(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size, root = args.root;
  const size_t count = args.count;
  const int vrank = (rank - root + size) % size;
  auto real = [&](int v) { return (v + root) % size; };
  auto subtree = [&](int v) { return v == 0 ? size : std::min(LowestBit(v), size - v); };
  const int mine = subtree(vrank);
  auto root_pieces = [&](int v, int n) { return RootPieces(size, root, v, n); };
  // Non-roots hold their subtree's blocks in scratch (their own first) unless the
  // subtree is their own block alone.
  Slice held = Whole(BufferId::Send(), count);
  if (vrank != 0 && mine > 1) {
    held = Whole(builder.AddScratch(count * mine), count * mine);
    if (count > 0) builder.Copy(Whole(BufferId::Send(), count), Whole(held.buffer, count));
  }
  if (vrank == 0 && !args.in_place && count > 0) {
    builder.Copy(Whole(BufferId::Send(), count),
                 Slice{BufferId::Recv(), count * static_cast<size_t>(rank), count});
  }
  // Children from the smallest subtree up, as they finish first.
  const int top =
      vrank == 0 ? LargestPowerOfTwoAtMost(std::max(1, size - 1)) : LowestBit(vrank) / 2;
  for (int mask = 1; mask <= top; mask *= 2) {
    const int child = vrank + mask;
    if (child >= size) continue;
    const int blocks = subtree(child);
    if (vrank == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(child, blocks);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Recv(real(child), static_cast<uint32_t>(piece),
                     Slice{BufferId::Recv(), count * real(pieces[piece].first),
                           count * pieces[piece].second});
      }
    } else {
      builder.Recv(real(child), 0, Slice{held.buffer, count * (child - vrank), count * blocks});
    }
  }
  if (vrank != 0) {
    const int parent = vrank - LowestBit(vrank);
    if (parent == 0) {
      const std::vector<std::pair<int, int>> pieces = root_pieces(vrank, mine);
      for (size_t piece = 0; piece < pieces.size(); ++piece) {
        builder.Send(root, static_cast<uint32_t>(piece),
                     Slice{held.buffer, count * (pieces[piece].first - vrank),
                           count * pieces[piece].second});
      }
    } else {
      builder.Send(real(parent), 0, held);
    }
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Bcast.

namespace {

// Passes the vector (kRecv) down a tree chunk by chunk: a chunk goes on to the
// children as soon as it lands, so the tree's levels pipeline.
Schedule TreeBcast(const CollectiveArgs& args, int rank, const TreeLinks& links) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const Slice data = Whole(BufferId::Recv(), args.count);
  const std::vector<ElementRange> chunks = Chunks(args, args.count);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    if (links.parent >= 0) {
      builder.Recv(links.parent, ChunkTag(0, chunk), Sub(data, chunks[chunk]));
    }
    for (int child : links.children)
      builder.Send(child, ChunkTag(0, chunk), Sub(data, chunks[chunk]));
  }
  return std::move(builder).Finish();
}

}  // namespace

// Binomial: log2(size) levels, pipelined by chunks, over the ranks grouped by node
// (few edges cross the network, however the ranks are placed).
Schedule BinomialBcast(const CollectiveArgs& args, const Topology& topology, int rank) {
  const NodeGroupedOrder order(topology, args.root);
  return TreeBcast(
      args, rank,
      BinomialLinks(
          order.size(), [&order](int index) { return order[index]; }, 0, order.IndexOf(rank)));
}

// Flat: the root sends to every other rank (its own node's first). One hop deep: where
// the receiver pulls (shm's single copy) the leaves copy from the root's buffer at
// once instead of waiting for a parent's copy, which on few ranks beats a tree's depth.
Schedule LinearBcast(const CollectiveArgs& args, const Topology& topology, int rank) {
  TreeLinks links;
  if (rank == args.root) {
    const std::vector<int> order = NodeGroupedOrder(topology, args.root).Ranks();
    links.children.assign(order.begin() + 1, order.end());
  } else {
    links.parent = args.root;
  }
  return TreeBcast(args, rank, links);
}

// Pipelined chain over the ranks grouped by node (on one node root -> root+1 -> ...):
// size-1 hops of latency, but every rank forwards the vector once, and it crosses the
// network once per node boundary, for long vectors.
Schedule ChainBcast(const CollectiveArgs& args, const Topology& topology, int rank) {
  const NodeGroupedOrder order(topology, args.root);
  const int index = order.IndexOf(rank);
  TreeLinks links;
  if (index > 0) links.parent = order[index - 1];
  if (index + 1 < order.size()) links.children.push_back(order[index + 1]);
  return TreeBcast(args, rank, links);
}

// Two-level: the root sends to one leader per node (the root leads its own node),
// the leaders form a binomial tree over the nodes, and each leader a binomial tree
// over its node; a leader serves its remote children first, as the network is the
// longer path. Every chunk crosses the network once per node.
Schedule TwoLevelBcast(const CollectiveArgs& args, const Topology& topology, int rank) {
  return TreeBcast(args, rank, TwoLevelLinks(topology, args.root, rank));
}

// Two-level with a binary tree over the nodes' leaders: each leader forwards the
// vector to at most two other nodes, so a pipelined long vector crosses each node's
// network link at most three times (in once, out twice) where the binomial tree's
// root node sends it log2(nodes) times; the tree is deeper in sends (two a level), so
// short vectors keep two_level's.
Schedule TwoLevelBinaryBcast(const CollectiveArgs& args, const Topology& topology, int rank) {
  return TreeBcast(args, rank, TwoLevelLinks(topology, args.root, rank, TreeShape::kBinary));
}

// Van de Geijn's: a binomial scatter of the vector's blocks (block v to the rank
// at distance v from the root), then a ring allgather. Every rank sends and receives
// about twice the vector, whatever the rank count: for long vectors on many ranks.
Schedule ScatterAllgatherBcast(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size, root = args.root;
  const size_t count = args.count;
  if (count == 0 || size == 1) return std::move(builder).Finish();
  const int vrank = (rank - root + size) % size;
  auto real = [&](int v) { return (v + root) % size; };
  auto blocks = [&](int v, int n) {  // the elements of vranks [v, v + n)'s blocks
    const ElementRange first = EvenBlock(count, size, v);
    const ElementRange last = EvenBlock(count, size, v + n - 1);
    return Slice{BufferId::Recv(), first.offset, last.offset + last.count - first.offset};
  };
  auto subtree = [&](int v) { return v == 0 ? size : std::min(LowestBit(v), size - v); };
  constexpr uint32_t kScatterTag = 0, kRingTag = 1;
  if (vrank != 0) {
    builder.Recv(real(vrank - LowestBit(vrank)), kScatterTag, blocks(vrank, subtree(vrank)));
  }
  const int top =
      vrank == 0 ? LargestPowerOfTwoAtMost(std::max(1, size - 1)) : LowestBit(vrank) / 2;
  for (int mask = top; mask >= 1; mask /= 2) {
    const int child = vrank + mask;
    if (child < size) builder.Send(real(child), kScatterTag, blocks(child, subtree(child)));
  }
  // Ring over vranks: in step s, send block vrank-s on, receive block vrank-s-1.
  const int next = real((vrank + 1) % size), previous = real((vrank - 1 + size) % size);
  for (int step = 0; step < size - 1; ++step) {
    builder.Send(next, kRingTag + static_cast<uint32_t>(step),
                 blocks(((vrank - step) % size + size) % size, 1));
    builder.Recv(previous, kRingTag + static_cast<uint32_t>(step),
                 blocks(((vrank - step - 1) % size + size) % size, 1));
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Allgather(v).

namespace {

// Where block r lies in kRecv (allgather: r * count; allgatherv: displs[r]) and how
// long it is.
Slice GatheredBlock(const CollectiveArgs& args, int r) {
  if (args.collective == Collective::kAllgatherv) {
    return BlockAt(BufferId::Recv(), args.displs[r], args.counts[r]);
  }
  return {BufferId::Recv(), args.count * static_cast<size_t>(r), args.count};
}

// This rank's block as it is first sent: from kSend, or in place from kRecv.
Slice OwnGatheredBlock(const CollectiveArgs& args, int rank) {
  const Slice block = GatheredBlock(args, rank);
  return args.in_place ? block : Whole(BufferId::Send(), block.count);
}

}  // namespace

// Linear: every rank sends its block to every other rank directly, all at once:
// one round of size-1 messages, for small blocks on shared memory.
Schedule LinearAllgather(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const Slice own = OwnGatheredBlock(args, rank);
  for (int distance = 1; distance < size; ++distance) {
    builder.Send((rank + distance) % size, 0, own);
    const int from = (rank - distance + size) % size;
    builder.Recv(from, 0, GatheredBlock(args, from));
  }
  if (!args.in_place && own.count > 0) builder.Copy(own, GatheredBlock(args, rank));
  return std::move(builder).Finish();
}

// Ring: in step s every rank passes block rank-s to rank+1. size-1 steps, each link
// carries every block once: bandwidth-optimal, for large blocks.
Schedule RingAllgather(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const int next = (rank + 1) % size, previous = (rank - 1 + size) % size;
  for (int step = 0; step < size - 1; ++step) {
    const int out = ((rank - step) % size + size) % size;
    const int in = ((rank - step - 1) % size + size) % size;
    builder.Send(next, static_cast<uint32_t>(step),
                 step == 0 ? OwnGatheredBlock(args, rank) : GatheredBlock(args, out));
    builder.Recv(previous, static_cast<uint32_t>(step), GatheredBlock(args, in));
  }
  const Slice own = OwnGatheredBlock(args, rank);
  if (!args.in_place && own.count > 0) builder.Copy(own, GatheredBlock(args, rank));
  return std::move(builder).Finish();
}

// Bruck's: ceil(log2(size)) rounds; in round k every rank sends the blocks it holds
// (up to 2^k, in rank order from its own) to rank - 2^k and receives as many from
// rank + 2^k into a scratch buffer in rotated order, then puts them in place.
Schedule BruckAllgather(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const size_t count = args.count;
  const Slice own = OwnGatheredBlock(args, rank);
  if (count == 0) return std::move(builder).Finish();
  if (size == 1) {
    if (!args.in_place) builder.Copy(own, GatheredBlock(args, rank));
    return std::move(builder).Finish();
  }
  // rotated[i] = the block of rank (rank + i) % size.
  const BufferId rotated = builder.AddScratch(count * static_cast<size_t>(size));
  builder.Copy(own, Slice{rotated, 0, count});
  for (int round = 0, distance = 1; distance < size; ++round, distance *= 2) {
    const int n = std::min(distance, size - distance);
    builder.Send((rank - distance + size) % size, static_cast<uint32_t>(round),
                 Slice{rotated, 0, count * n});
    builder.Recv((rank + distance) % size, static_cast<uint32_t>(round),
                 Slice{rotated, count * distance, count * n});
  }
  // Blocks 1 .. size-rank-1 of `rotated` are ranks rank+1 .. size-1; the rest wrap.
  const size_t upper = static_cast<size_t>(size - rank - 1);
  if (upper > 0) {
    builder.Copy(Slice{rotated, count, count * upper},
                 Slice{BufferId::Recv(), count * (rank + 1), count * upper});
  }
  if (rank > 0) {
    builder.Copy(Slice{rotated, count * (upper + 1), count * rank},
                 Slice{BufferId::Recv(), 0, count * rank});
  }
  if (!args.in_place) builder.Copy(own, GatheredBlock(args, rank));
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Alltoall(v).

// Pairwise: every rank sends each peer its block directly, all at once (one message
// per pair, also for empty alltoallv blocks, so that disagreeing counts are an error).
// In place the input is copied aside first, as the output overwrites it.
Schedule PairwiseAlltoall(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const bool vector = args.collective == Collective::kAlltoallv;
  auto recv_block = [&](int r) {
    return vector ? BlockAt(BufferId::Recv(), args.recv_displs[r], args.recv_counts[r])
                  : Slice{BufferId::Recv(), args.count * static_cast<size_t>(r), args.count};
  };
  // The input's layout: kSend's, or in place kRecv's.
  BufferId input = BufferId::Send();
  auto send_block = [&](int r) {
    if (vector && !args.in_place) return BlockAt(input, args.displs[r], args.counts[r]);
    Slice block = recv_block(r);
    block.buffer = input;
    return block;
  };
  if (args.in_place) {
    input = builder.AddScratch(BufferCounts(args, rank).second);
    // Only the blocks that leave: the own block stays where it is.
    for (int distance = 1; distance < size; ++distance) {
      const int to = (rank + distance) % size;
      const Slice block = recv_block(to);
      if (block.count > 0) builder.Copy(block, send_block(to));
    }
  }
  for (int distance = 1; distance < size; ++distance) {
    const int to = (rank + distance) % size;
    const int from = (rank - distance + size) % size;
    builder.Send(to, 0, send_block(to));
    builder.Recv(from, 0, recv_block(from));
  }
  const Slice own = send_block(rank);
  if (!args.in_place && own.count > 0) builder.Copy(own, recv_block(rank));
  return std::move(builder).Finish();
}

// Bruck's: ceil(log2(size)) messages per rank instead of size - 1. The blocks are
// first rotated (block i is the one for rank + i); in round k every rank sends the
// blocks whose index has bit k set, packed, to rank + 2^k, and receives as many from
// rank - 2^k into the same indices; block i then holds what rank - i sent this rank.
// A block moves once per set bit of its distance, log2(size)/2 times on average: for
// small blocks on many ranks, where a message costs more than moving a block again.
Schedule BruckAlltoall(const CollectiveArgs& args, const Topology&, int rank) {
  ScheduleBuilder builder = MakeBuilder(args, rank);
  const int size = args.size;
  const size_t count = args.count;
  const BufferId input = args.in_place ? BufferId::Recv() : BufferId::Send();
  auto block = [count](BufferId buffer, int index) {
    return Slice{buffer, count * static_cast<size_t>(index), count};
  };
  // Copies of no elements are left out; the messages are sent whatever their size, so
  // that ranks disagreeing on the count end with an error.
  auto copy = [&](Slice from, Slice to) {
    if (count > 0) builder.Copy(from, to);
  };
  const BufferId rotated = builder.AddScratch(count * static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) copy(block(input, (rank + i) % size), block(rotated, i));
  for (int round = 0, distance = 1; distance < size; ++round, distance *= 2) {
    std::vector<int> moving;
    for (int i = distance; i < size; ++i) {
      if ((i & distance) != 0) moving.push_back(i);
    }
    const size_t n = moving.size();
    const int to = (rank + distance) % size, from = (rank - distance + size) % size;
    const uint32_t tag = static_cast<uint32_t>(round);
    // Received into a buffer of its own: a receive into the blocks being sent would
    // wait for that send, and a send that waits for its receiver (rendezvous) would
    // then close a cycle around the ranks.
    const BufferId in = builder.AddScratch(count * n);
    if (n == 1) {  // one block: sent as it lies
      builder.Send(to, tag, block(rotated, moving[0]));
    } else {
      const BufferId out = builder.AddScratch(count * n);
      for (size_t j = 0; j < n; ++j) {
        copy(block(rotated, moving[j]), block(out, static_cast<int>(j)));
      }
      builder.Send(to, tag, Slice{out, 0, count * n});
    }
    builder.Recv(from, tag, Slice{in, 0, count * n});
    for (size_t j = 0; j < n; ++j) copy(block(in, static_cast<int>(j)), block(rotated, moving[j]));
  }
  for (int i = 0; i < size; ++i) {
    copy(block(rotated, i), block(BufferId::Recv(), (rank - i + size) % size));
  }
  return std::move(builder).Finish();
}

// ---------------------------------------------------------------------------------
// Barrier: dissemination. In round k every rank signals rank + 2^k and waits for
// rank - 2^k; after ceil(log2(size)) rounds each rank has heard, directly or not,
// from every other. That needs round k's signal to follow everything heard in
// rounds 0..k-1: each signal is a one-element token reduced from all tokens received
// so far, so the dependency is carried by the data.
Schedule DisseminationBarrier(const CollectiveArgs& args, const Topology&, int rank) {
  const int size = args.size;
  int rounds = 0;
  while ((1 << rounds) < size) ++rounds;
  ScheduleBuilder builder(rank, size, 0, 0);
  if (rounds == 0) return std::move(builder).Finish();
  // heard[k]: what this rank has heard before round k; arrived[k]: round k's token.
  const BufferId heard = builder.AddScratch(static_cast<size_t>(rounds));
  const BufferId arrived = builder.AddScratch(static_cast<size_t>(rounds));
  for (int round = 0; round < rounds; ++round) {
    const int distance = 1 << round;
    const size_t k = static_cast<size_t>(round);
    builder.Send((rank + distance) % size, static_cast<uint32_t>(round), Slice{heard, k, 1});
    builder.Recv((rank - distance + size) % size, static_cast<uint32_t>(round),
                 Slice{arrived, k, 1});
    if (round + 1 < rounds) {
      const Slice operands[] = {Slice{heard, k, 1}, Slice{arrived, k, 1}};
      builder.Reduce(operands, Slice{heard, k + 1, 1});
    }
  }
  return std::move(builder).Finish();
}

// Linear: every rank tells rank 0 it has entered, and rank 0, having heard from all,
// releases them: two message latencies and 2 (size - 1) messages, every one through
// rank 0. A waiting rank needs its core twice,
// once to arrive and once to leave, which suits oversubscribed nodes; rank 0 leaves
// first. The release depends on every arrival through the data: rank 0 reduces the
// arrivals' tokens into the one it sends.
Schedule LinearBarrier(const CollectiveArgs& args, const Topology&, int rank) {
  const int size = args.size;
  ScheduleBuilder builder(rank, size, 0, 0);
  if (size == 1) return std::move(builder).Finish();
  constexpr uint32_t kArrival = 0, kRelease = 1;
  if (rank != 0) {
    // Separate slots, so that the release's receive is posted with the arrival.
    const BufferId tokens = builder.AddScratch(2);
    builder.Send(0, kArrival, Slice{tokens, 0, 1});
    builder.Recv(0, kRelease, Slice{tokens, 1, 1});
    return std::move(builder).Finish();
  }
  const BufferId arrivals = builder.AddScratch(static_cast<size_t>(size - 1));
  std::vector<Slice> operands;
  for (int peer = 1; peer < size; ++peer) {
    const Slice slot{arrivals, static_cast<size_t>(peer - 1), 1};
    builder.Recv(peer, kArrival, slot);
    operands.push_back(slot);
  }
  // One arrival (2 ranks) is itself the release.
  Slice release = operands.front();
  if (operands.size() > 1) {
    release = Slice{builder.AddScratch(1), 0, 1};
    builder.Reduce(operands, release);
  }
  for (int peer = 1; peer < size; ++peer) builder.Send(peer, kRelease, release);
  return std::move(builder).Finish();
}
}  // namespace zcoll::algorithm_steps
