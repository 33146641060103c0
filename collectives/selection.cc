#include "collectives/selection.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collectives/node_engine_limits.h"
#include "core/config.h"
#include "core/logging.h"

namespace zcoll {
namespace {

constexpr size_t KiB = 1024;
constexpr size_t kAnySize = std::numeric_limits<size_t>::max();
constexpr int kAnyRanks = std::numeric_limits<int>::max();
constexpr Oversubscription kNotOversubscribed = Oversubscription::kNotOversubscribed;
constexpr Oversubscription kOversubscribed = Oversubscription::kOversubscribed;
constexpr size_t kAllToAllCopyIn = node_engine_limits::kAllToAllCopyInBytes;

// First choices from the algorithms' costs (latency-bound trees for small
// messages, bandwidth-optimal exchanges for large), not yet tuned against the peers
// (README's ratio table shows where they stand); later rules catch what earlier ones
// leave.
constexpr SelectionRule kTable[] = {
    // One node whose ranks share a segment: no messages at all (node_engine.h). But a
    // rooted collective below 64 KiB on a node with more of the job's ranks than cores
    // (a Reduce since 2026-12-02 only between the slot and 1 MiB, below) goes by
    // messages: in a node call every rank waits for every other's publication
    // (which is how ranks that disagree on the root find out in the call), and there
    // that costs context switches the root's messages do not (4 ranks on 2 cores, 8-128
    // B, medians of 5 alternating runs, node against messages: bcast 3.1-3.4 us
    // against 0.5, scatter 3.2-3.9 against 0.4, gather 3.1 against 2.1, reduce 4.0-4.1
    // against 2.2; a Gather's own bands are below). `node` can still be forced there.
    // But up to kEagerBytes a Bcast's and a Scatter's leaves wait for the root's
    // publication alone (the root for none, node_engine_limits::RoleReads): there the
    // engine takes, of the linear messages' time, bcast 0.78-0.94x and scatter
    // 0.75-1.10x (4 ranks on 2 cores, 8-512 B, medians of 9 alternating runs; 4.4 us
    // when leaves waited for every rank).
    // One node of several NUMA domains whose ranks are bound (node_levels.h): each
    // domain's ranks on a segment of their own, then the domains' leaders on theirs,
    // so that a flat call's every-rank-reads-every-line (half of them across the
    // socket link) becomes a few lines per domain. Not measured: this machine has one
    // NUMA domain. From 32 ranks, as Open MPI's xhc reports its hierarchy paying on
    // machines of 64 cores and more; up to the sizes where the model (zcoll_sim, the
    // infiniband profile's node of 8 domains) has the levels faster than the flat
    // engine, whose Reduce and Allreduce from 1 KiB are partitioned in the slots
    // (allreduce 32 ranks 1 / 2 KiB: levels 4.3 / 5.3 us, flat 9.8 / 4.6; 64 ranks
    // 4 / 8 KiB: 8.3 / 14.5 against 9.1 / 11.6; bcast 32 ranks 1 / 2 KiB 1.7 / 2.8
    // against 1.7 / 2.1, 64 ranks 2 / 4 KiB 2.8 / 5.1 against 3.7 / 4.0). Across nodes
    // the rules below keep their own thresholds (these match there first, and where
    // they stop those go on).
    {Collective::kAllreduce, "node_levels", 4 * KiB, 64},
    {Collective::kAllreduce, "node_levels", 1 * KiB, 32},
    {Collective::kReduce, "node_levels", 2 * KiB, 64},
    {Collective::kReduce, "node_levels", 1 * KiB, 32},
    {Collective::kBcast, "node_levels", 2 * KiB, 64},
    {Collective::kBcast, "node_levels", 1 * KiB, 32},
    {Collective::kBarrier, "node_levels", kAnySize, 32},
    {Collective::kReduce, "node", kAnySize, 1, kAnyRanks, 1, 0, kNotOversubscribed},
    // A Reduce on an oversubscribed node goes to the engine at every size but between
    // the slot and 1 MiB on 3 to 16 ranks, where the radix-4 tree's messages do better:
    // there the engine's reducers read every peer's lent buffer (a system call each)
    // and the root waits for every reducer to get a core. 2 cores, forced algorithms,
    // medians of alternating runs (2026-12-02; this machine swung 2x within minutes,
    // so the 4-rank rows were taken 15 times): node over knomial at 8 B-8 KiB 0.71-0.81x
    // the time on 4 ranks (32 KiB 0.46x in 7 runs, 64 KiB 0.67x), 0.67-0.88x on 3,
    // 0.21-0.65x on 8 and 0.09-0.42x on 16 to 32 KiB (the table before sent these to the
    // messages, measured before the engine's small calls ran straight through,
    // RunSmall); knomial over node at 128 and 512 KiB 0.93x and 0.97x on 4 ranks, 0.59x
    // and 0.84x on 8, at 256 KiB and 1 MiB 0.87x and 1.00x on 3, 0.50x and 0.80x on 16;
    // node over knomial at 2 MiB 0.74x on 4. (Its leaves on the engine return once
    // they have published, before a root that refuses its arguments has entered, as on
    // a node with a core per rank: communicator.h, TypedForms/ShortSpanTest.)
    {Collective::kReduce, "knomial", 1024 * KiB, 3, 16, 1, kNodeSlotBytes + 1, kOversubscribed},
    {Collective::kReduce, "node"},
    {Collective::kAllreduce, "node"},
    {Collective::kReduceScatterBlock, "node"},
    {Collective::kReduceScatter, "node"},
    {Collective::kScatter, "node", kAnySize, 1, kAnyRanks, 1, 0, kNotOversubscribed},
    {Collective::kScatter, "node", node_engine_limits::kEagerBytes},
    {Collective::kScatter, "node", kAnySize, 1, kAnyRanks, 1, 64 * KiB},
    // A Scatterv on the engine at every size there too: it has no size the ranks agree
    // on, so one rule takes all of its calls, and its leaves read the root's word alone
    // (its root none) while the blocks are copies in the slots. 4 ranks on 2 cores,
    // engine over the linear messages, medians of 5 alternating runs, two runs (the
    // second with the engine's small calls on RunSmall's path, 7363e57): 8 B-2 KiB
    // 0.38-0.56x the time (0.41-0.76 in the first), 8-32 KiB 0.90-0.96 (1.03-1.21),
    // 128-512 KiB 1.15-1.17 (1.13-1.14), 2-8 MiB 0.76-0.98 (1.16-1.19). Open MPI took
    // 0.42-0.52x the engine's time at 8-128 B and 1.1-24x from 512 B.
    {Collective::kScatterv, "node"},
    // A Bcast stays on the engine there at every size: its root is eager and its leaves
    // wait for the root's word alone while the call's publications are copies in the
    // slots (node_engine_limits::MayDeferChecks, below kCooperativeBytes); from 64 KiB
    // it was there already (binomial, scatter_allgather and linear took 1.04-3.29x the
    // engine's time at 32 KiB-2 MiB on 4 ranks). Engine over messages, medians of
    // 5-7 alternating runs, 2 cores: 4 ranks 2 / 8 / 16 / 32 / 48 KiB 0.85 / 0.75 /
    // 0.37 / 0.45 / 0.83 (4 KiB 1.04), 8 ranks 2 / 8 / 32 KiB 0.10 / 0.25 / 0.17.
    {Collective::kBcast, "node"},
    {Collective::kGather, "node", kAnySize, 1, kAnyRanks, 1, 0, kNotOversubscribed},
    // A Gather on an oversubscribed node of 3 to 8 ranks: on the engine up to the slot
    // (48 KiB measured), by the linear messages from 64 KiB too. Beyond the slot the
    // engine's root reads each leaf's buffer in place and each leaf waits for the root
    // to have read it, where a large message is copied by whichever side runs (the
    // Allgather's case, below). Engine over messages, medians of 6-8 alternating runs, 2
    // cores: 16 / 32 / 48 KiB 0.55 / 0.59-0.82 / 0.98 on 4 ranks, 0.85 / 0.69 / 0.52 on
    // 8; 64 KiB 0.99-1.28 and 1.28-1.43; 128 KiB-8 MiB 1.08-1.55 on 4 ranks, 256 KiB and
    // 1 MiB 1.30-1.33 on 8. Up to 8 KiB (the shm transport's eager messages) the
    // messages had it (2 and 8 KiB 1.72-1.82 and 4.0-5.0x) until the engine's small
    // calls ran straight through (RunSmall); measured again (2026-12-02, medians of
    // 5-15): 8 B-2 KiB 0.74-0.88x on 4 ranks (8 KiB 1.00x, 32 KiB 0.45x), 0.70-0.92x on
    // 8 (8 and 32 KiB 0.74x and 0.26x), 0.73-0.95x on 3. (128 KiB-2 MiB on 4 ranks, the
    // linear messages 0.86-1.12x the engine's time, stay with the messages.)
    {Collective::kGather, "node", 48 * KiB, 3, 8, 1, 0, kOversubscribed},
    {Collective::kGather, "linear", kAnySize, 3, 8, 1, 0, kOversubscribed},
    {Collective::kGather, "node", kAnySize, 1, kAnyRanks, 1, 64 * KiB},
    {Collective::kGatherv, "node", kAnySize, 1, kAnyRanks, 1, 0, kNotOversubscribed},
    // On an oversubscribed node of 3 to 16 ranks, an Allgather or Alltoall whose
    // publication outgrows the slots' copy (kAllToAllCopyInBytes: a block of 16 KiB, or
    // an Alltoall's p blocks) goes by messages. There the engine reads each peer's
    // buffer in place and then waits for every peer to have read its own, so each call
    // waits for every rank to get a core; the shm transport's large messages are copied
    // by whichever side runs (each half by one side), so a rank on a core moves its
    // peers' bytes too. Messages over the engine, medians of 3-7 alternating runs, 2
    // cores: allgather (linear) 4 ranks 32 KiB-8 MiB 0.72-0.91x, 8 ranks 128 KiB-2 MiB
    // 0.67-0.88 (32 KiB 1.00), 3 ranks 256 KiB-1 MiB 0.90 (64 KiB 1.03); alltoall
    // (pairwise) 4 ranks 8 KiB 0.46, 16 KiB-8 MiB 0.74-1.02, 8 ranks 4 KiB 0.33, 8 KiB-2
    // MiB 0.73-0.93, 3 ranks 64 KiB-1 MiB 0.65-0.96 (16 KiB 1.10). Within the copy the
    // engine wins (allgather 16 KiB: 12 us against 30 on 4 ranks; alltoall 2 KiB on 8
    // ranks 23 against 31). 16 ranks (medians of 4): allgather 32-512 KiB 0.69-0.79,
    // alltoall 2 KiB-512 KiB 0.22-0.75 (allgather 2 and 8 KiB, within the copy, 2.10 and
    // 1.73). Not measured beyond 16 ranks; with a core each, messages and engine were
    // even from 32 KiB (2 ranks, 0.87-1.14).
    // (An Alltoall's rules: the copy's share of a block on 4 and on 8 ranks.)
    {Collective::kAllgather, "linear", kAnySize, 3, 16, 1, kAllToAllCopyIn + 1, kOversubscribed},
    {Collective::kAlltoall, "pairwise", kAnySize, 5, 16, 1, kAllToAllCopyIn / 8 + 1,
     kOversubscribed},
    {Collective::kAlltoall, "pairwise", kAnySize, 3, 4, 1, kAllToAllCopyIn / 4 + 1,
     kOversubscribed},
    {Collective::kAllgather, "node"},
    {Collective::kAllgatherv, "node"},
    {Collective::kAlltoall, "node"},
    {Collective::kAlltoallv, "node"},
    // A Barrier on the engine, where on an oversubscribed node of 3 ranks or more it is
    // released (node_engine_limits::ReleasedBarrier: rank 0 has every rank's word, then
    // lets the others go, so it leaves first, as the linear messages' root below does).
    // 4 ranks on 2 cores, medians of 7 alternating runs, against the linear messages
    // (the table before): the barrier 0.57x the time (4.7 us; Open MPI 5.7), a root-0
    // collective after it 8-512 B: bcast 0.78-1.02x, scatter 0.66-0.73x, gather
    // 0.77-0.80x, reduce 0.74-0.96x, scan 1.21-1.44x (still below Open MPI's). The
    // engine's barrier where every rank waits for every word was faster on its own
    // (4.0 us) but let every rank go at once, and a root-0 collective after it waited
    // for its root to get a core (bcast 8 B 1.7 us against 0.2). 8 ranks (medians of 5):
    // barrier 0.94x linear's (the every-word barrier 0.61x), bcast 8 B after it 0.75x
    // (13x); 16 ranks (3): barrier 1.16x the every-word barrier's, bcast after it 0.02x.
    {Collective::kBarrier, "node"},
    // A node's Scan and Exscan within a slot on many ranks by recursive doubling's
    // messages: in the engine each rank reduces the vectors up to its own from the slots
    // (its last rank p of them), where the messages take log2(p) steps (the model, the
    // infiniband profile's node, recursive doubling's time over the engine's: 16 ranks
    // 2-64 KiB 0.63-0.81, 32 ranks 256 B-64 KiB 0.39-0.85, 64 ranks 8 B-128 KiB
    // 0.23-0.90; beyond a slot the engine's chain wins, 1.3-2.3x). Not measured here
    // (2 cores), nor where ranks outnumber cores.
    {Collective::kScan, "recursive_doubling", 128 * KiB, 64, kAnyRanks, 1, 0, kNotOversubscribed},
    {Collective::kScan, "recursive_doubling", 64 * KiB, 32, kAnyRanks, 1, 256, kNotOversubscribed},
    {Collective::kScan, "recursive_doubling", 64 * KiB, 16, kAnyRanks, 1, 2 * KiB,
     kNotOversubscribed},
    {Collective::kExscan, "recursive_doubling", 128 * KiB, 64, kAnyRanks, 1, 0, kNotOversubscribed},
    {Collective::kExscan, "recursive_doubling", 64 * KiB, 32, kAnyRanks, 1, 256,
     kNotOversubscribed},
    {Collective::kExscan, "recursive_doubling", 64 * KiB, 16, kAnyRanks, 1, 2 * KiB,
     kNotOversubscribed},
    {Collective::kScan, "node"},
    {Collective::kExscan, "node"},
    // Across nodes with several ranks on a node: each node's part on its node engine,
    // the leaders' by messages (node_levels.h). 4 ranks on 2 emulated nodes (TCP
    // between them), medians of 3 alternating runs against the rules below: allreduce
    // 8 B-32 KiB 0.67-0.87x (128-512 KiB about even: not chosen), commutative ops only;
    // bcast 8 B-8 KiB 0.66-0.85x (32 KiB and up two_level wins); barrier 0.71x;
    // reduce (root 0) against two_level, medians of 8: 8 B-8 KiB 0.69-0.90x, from 32
    // KiB 1.1-1.4x (two_level pipelines the node's part and the network's).
    {Collective::kAllreduce, "node_levels", 64 * KiB, 1, kAnyRanks, 2},
    {Collective::kReduce, "node_levels", 8 * KiB, 1, kAnyRanks, 2},
    // Allgather against linear (the rule below for these 4 ranks), medians of 5: 8 B-2
    // KiB 0.64-0.80x, 8 KiB 0.94x, from 32 KiB 1.04-1.34x (the leader's Bcast of the
    // whole is a step the direct exchange does not have).
    {Collective::kAllgather, "node_levels", 8 * KiB, 1, kAnyRanks, 2},
    {Collective::kBcast, "node_levels", 8 * KiB, 1, kAnyRanks, 2},
    {Collective::kBarrier, "node_levels", kAnySize, 1, kAnyRanks, 2},
    // Small vectors: latency. Large: Rabenseifner's halving spreads the reduction
    // over every rank and moves each element about twice.
    // Across nodes from 8 ranks, past the levels' sizes: Rabenseifner's, from the model
    // alone (nothing that size was measured). Its time over two_level's, zcoll_sim
    // --coll=reduce --nodes=K, 16 KiB-8 MiB: the infiniband profile 0.24-0.53x on 8
    // ranks of 2, 4 and 8 nodes, 0.17-0.32x on 16 of 16, 0.09-0.22x on 64 of 64, and
    // 0.04-0.23x on 128-8192 ranks of 64 a node (sim/tuning/infiniband_hdr.tuning); that
    // profile with a 10 GbE network (25 us, 1.2 GB/s) 0.58-0.91x on 8 ranks (1.02x at 8
    // MiB on 2 nodes), 0.30-0.87x on 16 of 16 and 64 of 64. two_level's node part is a
    // tree of whole vectors, log2 of a node's ranks of them at its leader.
    // These rules from the model across nodes are a cluster's: not where a host runs more
    // of the job's ranks than it has cores (kNotOversubscribed; an emulated cluster, whose
    // network is copies on the same cores). There 8 ranks on 2 emulated nodes of this
    // 2-core machine took 1.4-3.5x two_level's time by rabenseifner at 32 KiB-2 MiB.
    {Collective::kReduce, "rabenseifner", kAnySize, 8, kAnyRanks, 2, 8 * KiB + 1,
     kNotOversubscribed},
    // Across nodes, fewer ranks: each node's ranks combine before anything crosses the
    // network. Measured on 2 emulated nodes (4 ranks; and 2 ranks over ofi:tcp) it took
    // about half of Rabenseifner's time from 32 KiB to 2 MiB.
    {Collective::kReduce, "two_level", kAnySize, 1, kAnyRanks, 2},
    // Up to 4 ranks and 8 KiB the radix-4 tree is flat: one step for every leaf
    // instead of the binomial's two (4 ranks on 2 cores, medians of 3 interleaved
    // runs: 8 B-8 KiB 2.4-3.7 us against 4.6-5.7; from 32 KiB the root's serial
    // reductions make it slower).
    {Collective::kReduce, "knomial", 8 * KiB, 1, 4},
    {Collective::kReduce, "binomial", 16 * KiB},
    // Up to 4 ranks the pipelined binomial tree wins at every size: measured on 2
    // ranks (one node, 32 KiB-8 MiB: 0.3-0.7x Rabenseifner's time, whose extra round
    // and gather do not pay for halving the root's reduction) and 4 ranks on 2 cores.
    {Collective::kReduce, "binomial", kAnySize, 1, 4},
    {Collective::kReduce, "rabenseifner"},
    // Across nodes that hold as many ranks each, past 2 MiB: by stripes (node_levels.h:
    // each node's reduce-scatter on its engine, the stripes' allreduces across the
    // network a segment at a time while the node reduces the next, the node's
    // allgather), from the model alone. Its time over Rabenseifner's, zcoll_sim
    // --coll=allreduce --nodes=K, 4-32 MiB: the infiniband profile 0.48-0.89x on 4-1024
    // ranks of 2-16 nodes (0.78x on 65,536 of 1,024 at 4 MiB); that profile with a 10
    // GbE network (25 us, 1.2 GB/s) 0.69-0.98x. Below, 10 GbE has it at 0.87-1.32x at
    // 128 KiB-1 MiB on 4-1024 ranks, where infiniband has it gaining from 128 KiB (the
    // derived table, sim/tuning, takes it there). A cluster's rule (kNotOversubscribed).
    {Collective::kAllreduce, "node_stripes", kAnySize, 1, kAnyRanks, 2, 2048 * KiB + 1,
     kNotOversubscribed},
    {Collective::kAllreduce, "recursive_doubling", 16 * KiB},
    {Collective::kAllreduce, "rabenseifner"},
    // Across nodes from 64 ranks where a rank's block is at most 256 B (16 KiB of
    // vector on 64-1023 ranks, 256 KiB on 1024-8191, 2 MiB from 8192): log2(size) rounds
    // of halving instead of size-1 messages, from the model alone. Pairwise's time over
    // recursive halving's, zcoll_sim --coll=reduce_scatter_block --nodes=K: 1-16 KiB, the
    // infiniband profile 1.6-3.7x on 64 ranks of 4, 16 and 64 nodes, 3.0-6.5x on 128 of 8
    // and 128, 2.2-11.2x on 256 of 4; that profile with a 10 GbE network (25 us, 1.2
    // GB/s) 1.5-4.1x, 2.9-6.6x, 1.7-12.5x; 8-256 KiB on 1024 ranks of 16 and 1024 nodes
    // and 2048 of 32, 1.01-23.6x (both networks). At 65,536 ranks pairwise's 1 MiB is
    // past the simulator's step budget (8.6 billion steps), recursive halving 2,800 us.
    // Larger blocks go either way (4 KiB on 1024 ranks of a node each: 0.60x on
    // infiniband, 1.57x on 10 GbE), and on 16-32 ranks it depends on the placement (16
    // of 16 nodes: 0.67-0.97x): pairwise there.
    {Collective::kReduceScatterBlock, "recursive_halving", 16 * KiB, 64, 1023, 2, 0,
     kNotOversubscribed},
    {Collective::kReduceScatterBlock, "recursive_halving", 256 * KiB, 1024, 8191, 2, 0,
     kNotOversubscribed},
    {Collective::kReduceScatterBlock, "recursive_halving", 2048 * KiB, 8192, kAnyRanks, 2, 0,
     kNotOversubscribed},
    {Collective::kReduceScatterBlock, "pairwise"},
    {Collective::kReduceScatter, "pairwise"},
    // Many ranks and small blocks: log2(size) rounds beat size-1 messages from the
    // root.
    {Collective::kScatter, "binomial", 4 * KiB, 5},
    {Collective::kScatter, "linear"},
    {Collective::kScatterv, "linear"},
    // Across nodes every chunk should cross the network once per node. Past 2 MiB, from
    // the model alone (nothing that size across nodes was measured): binary trees, over
    // the leaders and in each node, so that no rank forwards the vector more than twice
    // (two_level's root sends it log2(nodes) times over the network and log2 of its
    // node's ranks times within). Its time over two_level's, zcoll_sim --coll=bcast
    // --nodes=K, 2-64 MiB: the infiniband profile 0.42-0.94x on 8 ranks of 8 nodes, 64
    // and 256 of 4 and 128-8192 of 64 a node, 0.34-0.51x on 64 of 64, 0.68-1.04x on 32
    // of 4 (1.04x at 2 MiB); that profile with a 10 GbE network (25 us, 1.2 GB/s)
    // 0.29-0.75x on 8 of 8, 64 of 64 and 1024-8192 of 64 a node, 0.90-1.05x on 32-256
    // ranks of 2 and 4 nodes. Up to 4 nodes of up to 4 ranks its trees are two_level's.
    // (Where the model has chain, scatter_allgather or node_levels faster still, it is
    // by the placement: sim/tuning/infiniband_hdr.tuning.)
    // Few ranks across nodes and long vectors: a pipelined chain over the ranks grouped
    // by node, every rank forwarding the vector once (binary trees: twice), whose
    // size-1 hops the long vector's chunks amortise. From the model alone, its time over
    // two_level_binary's, zcoll_sim --coll=bcast --nodes=K: from 16 MiB on 3-32 ranks
    // (3 of 3 nodes, 4 of 4, 6 of 3, 8 of 2 and 8, 12 of 12, 16 of 2 and 16, 24 of 3,
    // 32 of 2, 4 and 32) 0.50-0.96x on the infiniband profile but at 6 of 3 and 32 of 2
    // and 4 at 16 MiB (1.00-1.04x), 0.50-0.83x with the 10 GbE network but where a
    // node holds 4 or more of 8-32 ranks on 2 nodes (1.00-1.07x); 64 MiB on 40 of 40,
    // 48 of 6 and 64 of 4 and 64: 0.53-0.99x on both (at 32 MiB up to 1.05x, at 16 MiB
    // up to 1.31x). Not on an emulated cluster (kNotOversubscribed).
    {Collective::kBcast, "chain", kAnySize, 3, 32, 2, 8192 * KiB + 1, kNotOversubscribed},
    {Collective::kBcast, "chain", kAnySize, 33, 64, 2, 32768 * KiB + 1, kNotOversubscribed},
    {Collective::kBcast, "two_level_binary", kAnySize, 1, kAnyRanks, 2, 2048 * KiB + 1,
     kNotOversubscribed},
    {Collective::kBcast, "two_level", kAnySize, 1, kAnyRanks, 2},
    // One node, up to 4 ranks: every leaf pulls from the root at once. 4 ranks on 2
    // cores, medians of 3 interleaved runs: 32 KiB-2 MiB 0.3-0.7x binomial's and
    // scatter_allgather's time, 8 MiB 0.82-0.95x; small vectors about even.
    {Collective::kBcast, "linear", kAnySize, 1, 4},
    {Collective::kBcast, "binomial", 512 * KiB},
    // Long vectors on 3 or more ranks: about twice the vector per rank, whatever the
    // rank count, instead of log2(size) times at the root.
    {Collective::kBcast, "scatter_allgather", kAnySize, 3},
    {Collective::kBcast, "binomial"},
    {Collective::kGather, "binomial", 4 * KiB, 5},
    {Collective::kGather, "linear"},
    {Collective::kGatherv, "linear"},
    // Few ranks and small blocks: one round with every message in flight. Many
    // ranks: Bruck's log2(size) rounds. Large blocks: the ring's single pass.
    // Up to 4 ranks every size: all transfers at once rather than the ring's size-1
    // dependent steps (4 ranks on 2 cores, medians of 3: 0.4-0.6x the ring's time from
    // 2 KiB to 2 MiB, 0.89x at 8 MiB; Bruck's between the two).
    {Collective::kAllgather, "linear", kAnySize, 1, 4},
    {Collective::kAllgather, "linear", 8 * KiB, 1, 8},
    {Collective::kAllgather, "bruck", 8 * KiB},
    {Collective::kAllgather, "ring"},
    {Collective::kAllgatherv, "linear", kAnySize, 1, 4},
    {Collective::kAllgatherv, "linear", 8 * KiB, 1, 8},
    {Collective::kAllgatherv, "ring"},
    // Pairwise puts every message in flight at once. Bruck's log2(size) dependent
    // rounds send fewer, larger messages, which should pay where a message costs far
    // more than moving a block (many nodes, small blocks), but on this 2-core machine
    // it took 1.3-1.9x pairwise's time on 8 ranks and 1.2-2.2x on 16 (8 B-2 KiB,
    // medians of 3 interleaved runs): each round waits for its partner to get a core.
    // Not chosen there. Across nodes from 32 ranks, blocks up to 32 B, from the model
    // alone: pairwise's time over Bruck's, zcoll_sim --coll=alltoall --nodes=K, 8 and 32
    // B: the infiniband profile 1.44-1.74x on 32 ranks of 4 nodes, 2.06-2.89x on 64 of 8
    // and 64, 1.66-4.57x on 128 of 2 and 16, 1.78-5.66x on 256 of 4, 3.74-9.35x on 512 of
    // 64; with the 10 GbE network (25 us, 1.2 GB/s) 1.40-11.90x on the same. From 128 B
    // it goes either way (0.47-2.36x), and from 512 B pairwise wins (Bruck 1.2-3.6x).
    {Collective::kAlltoall, "bruck", 32, 32, kAnyRanks, 2, 0, kNotOversubscribed},
    {Collective::kAlltoall, "pairwise"},
    {Collective::kAlltoallv, "pairwise"},
    // 3 to 8 ranks without the engine: every rank reports to rank 0, which releases
    // them. On this 2-core machine (oversubscribed), medians of 3-5 interleaved runs,
    // before the engine's barrier was released there: the barrier itself
    // 0.91x dissemination's time on 3 ranks, 1.09x on 4, 0.79x on 8; a root-0
    // collective right after it 0.15-0.33x (rank 0 leaves first, so the others find
    // its data when they arrive), and the rest 0.55-0.94x. Open MPI's barrier shapes
    // its rooted collectives the same way: its 4-rank 8 B bcast took 0.29 us after
    // its default barrier and 3.95 after its recursive doubling (forced with
    // coll_tuned_barrier_algorithm=3). 2 ranks: one exchange, both ways at once
    // (linear: 1.5x).
    {Collective::kBarrier, "linear", kAnySize, 3, 8},
    {Collective::kBarrier, "dissemination"},
    // Long vectors on few ranks: the pipelined chain moves each once.
    {Collective::kScan, "chain", kAnySize, 1, 2},
    {Collective::kScan, "recursive_doubling"},
    {Collective::kExscan, "chain", kAnySize, 1, 2},
    {Collective::kExscan, "recursive_doubling"},
};

// Whether every rank of a call of `collective` passes the same message size
// (CollectiveArgs::AgreedMessageBytes has one), so a rule may limit it.
bool HasAgreedMessageSize(Collective collective) {
  return collective != Collective::kScatterv && collective != Collective::kGatherv &&
         collective != Collective::kAlltoallv;
}

}  // namespace

absl::Span<const SelectionRule> SelectionTable() { return kTable; }

bool RuleFits(const SelectionRule& rule, const SelectionInputs& inputs) {
  // A collective without an agreed size matches only rules without a size limit
  // (the agreement test holds the table to that).
  // (Bytes on the link: a stripe's times its sharers, saturating.)
  std::optional<size_t> bytes = inputs.bytes;
  if (bytes.has_value() && inputs.link_sharers > 1) {
    const size_t sharers = static_cast<size_t>(inputs.link_sharers);
    bytes = *bytes > kAnySize / sharers ? kAnySize : *bytes * sharers;
  }
  const bool size_fits = bytes.has_value() ? *bytes <= rule.max_bytes && *bytes >= rule.min_bytes
                                           : rule.max_bytes == kAnySize && rule.min_bytes == 0;
  return rule.collective == inputs.collective && size_fits && inputs.size >= rule.min_ranks &&
         inputs.size <= rule.max_ranks && inputs.num_nodes >= rule.min_nodes &&
         (rule.oversubscription == Oversubscription::kEither ||
          (rule.oversubscription == kOversubscribed
               ? inputs.node_oversubscribed
               : !inputs.node_oversubscribed &&
                     !(inputs.num_nodes > 1 && inputs.hosts_oversubscribed)));
}

const Algorithm& SelectAlgorithm(const SelectionInputs& inputs,
                                 absl::Span<const SelectionRule> tuned) {
  // Tuned rules are looked up by name: selection runs once per plan, not per call.
  for (const SelectionRule& rule : tuned) {
    if (!RuleFits(rule, inputs)) continue;
    absl::StatusOr<const Algorithm*> algorithm = FindAlgorithm(rule.collective, rule.algorithm);
    if (algorithm.ok() && CheckAlgorithmCanRun(**algorithm, inputs).ok()) return **algorithm;
  }
  // The rules' algorithms, looked up once (a call should not compare names).
  static const std::vector<const Algorithm*> resolved = [] {
    std::vector<const Algorithm*> algorithms;
    for (const SelectionRule& rule : kTable) {
      absl::StatusOr<const Algorithm*> algorithm = FindAlgorithm(rule.collective, rule.algorithm);
      ZCOLL_CHECK(algorithm.ok()) << algorithm.status();
      algorithms.push_back(*algorithm);
    }
    return algorithms;
  }();
  for (size_t i = 0; i < std::size(kTable); ++i) {
    if (RuleFits(kTable[i], inputs) && CheckAlgorithmCanRun(*resolved[i], inputs).ok()) {
      return *resolved[i];
    }
  }
  ZCOLL_CHECK(false) << "the selection table has no rule for " << CollectiveName(inputs.collective);
  return AllAlgorithms().front();
}

const Algorithm& SelectAlgorithm(const SelectionInputs& inputs) {
  const absl::StatusOr<std::vector<SelectionRule>>& tuned = TuningFromEnvironment();
  return SelectAlgorithm(
      inputs, tuned.ok() ? absl::MakeConstSpan(*tuned) : absl::Span<const SelectionRule>());
}

absl::StatusOr<std::vector<SelectionRule>> ParseTuningTable(absl::string_view text,
                                                            absl::string_view origin) {
  std::vector<SelectionRule> rules;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const auto refuse = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, " line ", line_number, " ('", absl::StripAsciiWhitespace(line), "'): ", why));
    };
    if (const size_t comment = line.find('#'); comment != absl::string_view::npos) {
      line = line.substr(0, comment);
    }
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (words.size() < 2) return refuse("a rule is COLLECTIVE ALGORITHM [limits]");
    absl::StatusOr<Collective> collective = ParseCollective(words[0]);
    if (!collective.ok()) return refuse(collective.status().message());
    absl::StatusOr<const Algorithm*> algorithm = FindAlgorithm(*collective, words[1]);
    if (!algorithm.ok()) return refuse(algorithm.status().message());
    SelectionRule rule{*collective, (*algorithm)->name};
    std::vector<absl::string_view> keys;
    for (size_t i = 2; i < words.size(); ++i) {
      const absl::string_view key_given = words[i].substr(0, words[i].find('='));
      if (std::find(keys.begin(), keys.end(), key_given) != keys.end()) {
        return refuse(absl::StrCat(key_given, " is given twice"));
      }
      keys.push_back(key_given);
      if (words[i] == "not_oversubscribed" || words[i] == "oversubscribed") {
        if (rule.oversubscription != Oversubscription::kEither) {
          return refuse("not_oversubscribed and oversubscribed exclude each other");
        }
        rule.oversubscription = words[i] == "oversubscribed" ? kOversubscribed : kNotOversubscribed;
        continue;
      }
      const std::pair<absl::string_view, absl::string_view> key_value =
          absl::StrSplit(words[i], absl::MaxSplits('=', 1));
      const auto& [key, value] = key_value;
      uint64_t number = 0;
      const bool is_number = absl::SimpleAtoi(value, &number);
      if (key == "min_bytes" || key == "max_bytes") {
        if (!is_number) return refuse(absl::StrCat(key, " is a number of bytes"));
        (key == "min_bytes" ? rule.min_bytes : rule.max_bytes) = number;
      } else if (key == "min_ranks" || key == "max_ranks" || key == "min_nodes") {
        if (!is_number || number < 1 || number > uint64_t{kAnyRanks}) {
          return refuse(absl::StrCat(key, " is a count from 1 to ", kAnyRanks));
        }
        (key == "min_ranks"   ? rule.min_ranks
         : key == "max_ranks" ? rule.max_ranks
                              : rule.min_nodes) = static_cast<int>(number);
      } else {
        return refuse(absl::StrCat("unknown limit '", words[i],
                                   "' (min_bytes=, max_bytes=, min_ranks=, max_ranks=, min_nodes=, "
                                   "not_oversubscribed, oversubscribed)"));
      }
    }
    if (rule.min_bytes > rule.max_bytes || rule.min_ranks > rule.max_ranks) {
      return refuse("its range is empty (a minimum above its maximum)");
    }
    if (!HasAgreedMessageSize(rule.collective) &&
        (rule.min_bytes != 0 || rule.max_bytes != kAnySize)) {
      return refuse(absl::StrCat(CollectiveName(rule.collective),
                                 " has no size every rank agrees on, so a rule for it cannot "
                                 "limit the size"));
    }
    rules.push_back(rule);
  }
  return rules;
}

std::string FormatTuningRule(const SelectionRule& rule) {
  std::string line = absl::StrCat(CollectiveName(rule.collective), " ", rule.algorithm);
  if (rule.min_bytes != 0) absl::StrAppend(&line, " min_bytes=", rule.min_bytes);
  if (rule.max_bytes != kAnySize) absl::StrAppend(&line, " max_bytes=", rule.max_bytes);
  if (rule.min_ranks != 1) absl::StrAppend(&line, " min_ranks=", rule.min_ranks);
  if (rule.max_ranks != kAnyRanks) absl::StrAppend(&line, " max_ranks=", rule.max_ranks);
  if (rule.min_nodes != 1) absl::StrAppend(&line, " min_nodes=", rule.min_nodes);
  if (rule.oversubscription == kNotOversubscribed) absl::StrAppend(&line, " not_oversubscribed");
  if (rule.oversubscription == kOversubscribed) absl::StrAppend(&line, " oversubscribed");
  return line;
}

uint64_t TuningFingerprint(absl::Span<const SelectionRule> rules) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const SelectionRule& rule : rules) {
    for (const char c : FormatTuningRule(rule) + "\n") {
      hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    }
  }
  return hash;
}

const absl::StatusOr<std::vector<SelectionRule>>& TuningFromEnvironment() {
  static const absl::StatusOr<std::vector<SelectionRule>>* const tuned =
      new absl::StatusOr<std::vector<SelectionRule>>(
          []() -> absl::StatusOr<std::vector<SelectionRule>> {
            const std::string path = EnvironmentValue("ZCOLL_TUNING");
            if (path.empty()) return std::vector<SelectionRule>();
            std::ifstream file(path);
            std::stringstream text;
            text << file.rdbuf();
            if (!file) {
              return absl::NotFoundError(
                  absl::StrCat("ZCOLL_TUNING: cannot read '", path, "': ", std::strerror(errno)));
            }
            return ParseTuningTable(text.str(), absl::StrCat("ZCOLL_TUNING file ", path));
          }());
  return *tuned;
}

const absl::StatusOr<const Algorithm*>& AlgorithmFromEnvironment(Collective collective) {
  static const std::array<absl::StatusOr<const Algorithm*>, kNumCollectives> forced = [] {
    std::array<absl::StatusOr<const Algorithm*>, kNumCollectives> result;
    for (size_t i = 0; i < kNumCollectives; ++i) {
      const Collective c = static_cast<Collective>(i);
      const std::string variable = absl::StrCat("ZCOLL_ALGO_", CollectiveEnvironmentSuffix(c));
      const std::string name = EnvironmentValue(variable);
      if (name.empty()) {
        result[i] = nullptr;
        continue;
      }
      absl::StatusOr<const Algorithm*> algorithm = FindAlgorithm(c, name);
      result[i] = algorithm.ok() ? algorithm
                                 : absl::StatusOr<const Algorithm*>(absl::NotFoundError(
                                       absl::StrCat(variable, ": ", algorithm.status().message())));
    }
    return result;
  }();
  return forced[static_cast<size_t>(collective)];
}

}  // namespace zcoll
