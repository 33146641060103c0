// A machine as the simulator models it (docs/design.md, "sim/"): how many ranks a node
// holds, and what a message costs on each class of link between two ranks, in the
// LogGP manner: latency L, a per-byte gap G (1 / bandwidth) and CPU overhead o, paid
// by the sender when it posts and by the receiver when the data has come. Reductions
// and copies cost their bytes over the kernel's throughput.
//
// Link classes, from the nearest: two ranks of one NUMA domain; of one node (across
// domains or sockets); of two nodes (through each node's NIC, whose injection
// bandwidth the node's ranks share; `bisection` below 1 thins the fabric between
// nodes, as a tapered fat tree does).
//
// Profiles are text, one `key = value` per line, `#` to the end of a line a comment
// (where the figures come from belongs there). ParseMachineProfile names the line of
// anything it refuses. `zcoll_sim --print-profile=NAME` prints a shipped one, and
// `zcoll_bench --calibrate` writes one measured on this machine.

#ifndef ZCOLL_SIM_MACHINE_PROFILE_H_
#define ZCOLL_SIM_MACHINE_PROFILE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zcoll::sim {

enum class LinkClass : int { kNuma = 0, kNode = 1, kNetwork = 2 };
inline constexpr int kNumLinkClasses = 3;
absl::string_view LinkClassName(LinkClass link);  // "numa", "node", "network"

struct LinkCost {
  double latency_usec = 0;
  // Bytes per microsecond (= MB/s); of one rank's port within a node, of a node's NIC
  // across nodes.
  double bytes_per_usec = 1;
  // CPU time a transfer costs each side.
  double overhead_usec = 0;
  // Whether a port (NIC) carries one direction at a time: a transfer then holds the
  // sender's and the receiver's one timeline, so an exchange takes twice a one-way
  // transfer (links whose bytes a CPU copies, as TCP over loopback; InfiniBand is
  // full duplex).
  bool half_duplex = false;
  // Whether a CPU at each end moves the bytes (shared-memory rings and CMA, TCP: the
  // kernel copies on both sides), so that a transfer holds the sender's and the
  // receiver's CPU for its duration, as a reduction does, instead of running beside
  // them (RDMA: the NICs move the bytes).
  bool cpu_copies = false;
  // With cpu_copies, the share of a transfer's time that holds each end's CPU: 1 where a
  // CPU's copy is the transfer (shared memory: rings, CMA); less where the bytes move
  // slower than the CPUs copy them (TCP over loopback here: each side's kernel copies
  // them once, at memcpy's rate, while the transfer takes longer). `zcoll_bench
  // --calibrate` gives the emulated network its rate over memcpy's (CopyShareOfTransfer).
  double cpu_share = 1;
  // What a message past the profile's eager_bytes waits once both its sides are posted,
  // before its bytes move: the transport's handshake (ready-to-send, the receiver's
  // read or the sender's write, done) and its system call, beyond the small message's
  // latency.
  double rendezvous_usec = 0;
  // The bytes per microsecond of a message of the user's data, unwritten in the call,
  // while the call's data stays in the cache (MachineProfile::cache_bytes; a loop of
  // calls on the same buffers, each sender's lines found again where its receiver read
  // them the call before); 0: at bytes_per_usec, as every other message (a block
  // received or reduced in the call, whose lines move from the core that wrote them).
  // Where CPUs copy the bytes (cpu_copies) such a copy runs at the cache's rate: here a
  // 2-rank bcast of 1 MiB from one root took 39-52 us in a benchmark's loop, against
  // 103 us one way in a ping-pong whose roots take turns (the lines then move between the
  // cores every call). `zcoll_bench --calibrate --cached-links` measures it; not by
  // default, since on the machine of 2026-12-02 it was a wash (README, "Calibration and
  // validation").
  double cached_bytes_per_usec = 0;
};

// The CPU time a transfer of `transfer_usec` on a link of `cost` holds each end's CPU
// (cpu_copies, cpu_share).
inline double CpuCopyUsec(const LinkCost& cost, double transfer_usec) {
  return cost.cpu_copies ? cost.cpu_share * transfer_usec : 0;
}

// The node engine (collectives/node_engine.h): a node's ranks reading and writing each
// other's memory through a shared segment, with no messages. Its calls are timed from
// its data flow (collectives/node_data_flow.h): a read or write starts a control line's
// trip after both its ends are ready, then holds the CPU of the rank that copies.
struct EngineCost {
  // A control line's trip from the core that writes it to one that reads it.
  double latency_usec = 0;
  // One rank's copy from or into a peer's memory (a slot, or the peer's own buffer by
  // process_vm_readv/writev).
  double bytes_per_usec = 0;
  // The copying rank's CPU time per read or write besides its bytes (the line's
  // checks).
  double overhead_usec = 0;
  // What a read or write of a peer's own buffer costs on top (process_vm_readv/writev's
  // system call: 0.49 us for 64 B on this machine, ten times the line's checks), where
  // the buffers are not mapped; a copy in the segment, or a zcoll buffer the node maps,
  // is a memcpy with no call.
  double system_call_usec = 0;
  // The copy's bytes per microsecond while the call's data stays in the cache
  // (MachineProfile::cache_bytes); 0: as from memory.
  double cached_bytes_per_usec = 0;
};

struct MachineProfile {
  std::string name;
  int ranks_per_node = 1;
  // NUMA domains per node; a node's ranks fill them in blocks (rank r of a node in
  // domain r * numa_per_node / ranks_per_node).
  int numa_per_node = 1;
  LinkCost links[kNumLinkClasses];
  // The share of the nodes' injection bandwidth the fabric carries between nodes (1: full
  // bisection).
  double bisection = 1;
  // Messages up to this size go eagerly; larger ones wait for their receive
  // (rendezvous), as zcoll's transports do.
  size_t eager_bytes = 8192;
  // A two-operand reduction's output bytes per microsecond (the SIMD kernels'
  // throughput) and a copy's.
  double reduce_bytes_per_usec = 1;
  double copy_bytes_per_usec = 1;
  // The cache a node's ranks share (its last level; on a cluster emulated on one machine,
  // the machine's): a call whose buffers, summed over the ranks that share it, fit in
  // `cache_bytes` finds its data there when it is called again on the same buffers (a
  // benchmark's loop, an iteration's gradients), and copies and reduces at the cached
  // rates below (each 0: as from memory); a larger one, the cache's share of its bytes
  // (RateAtFootprint). cache_bytes 0: no call is in cache.
  size_t cache_bytes = 0;
  // Whether each core has a cache of cache_bytes of its own (a private L2 the sweep
  // fell off), rather than one the ranks share (an L3): then a call's footprint is what
  // one core's ranks touch, a rank's share of the buffers times the ranks that take
  // turns on a core, instead of every rank's together (CallFootprintBytes).
  bool cache_per_core = false;
  double cached_reduce_bytes_per_usec = 0;
  double cached_copy_bytes_per_usec = 0;
  // The cores that every rank shares when the whole cluster is emulated on one machine
  // (a profile calibrated there, where ranks may outnumber cores): a rank's CPU work
  // then also needs one of them. 0: each rank has a core of its own (a cluster).
  int host_cores = 0;
  // The node engine's figures (engine.*): optional; without them (a bandwidth of 0) the
  // engine's algorithms are not simulated.
  EngineCost engine;

  bool has_engine() const { return engine.bytes_per_usec > 0; }
  const LinkCost& link(LinkClass link) const { return links[static_cast<int>(link)]; }
};

// Whether a call of `ranks` ranks on `profile` has more ranks than its host's cores
// (host_cores, where every rank shares them): then the node's ranks take turns on the
// cores, and the node engine takes its ways for such a node, as zcoll's engine does
// where the ranks on its machine outnumber the cores (SetRanksOnThisMachine).
inline bool RanksOutnumberCores(const MachineProfile& profile, int ranks) {
  return profile.host_cores > 0 && ranks > profile.host_cores;
}

// A rate where a call's buffers, summed over the ranks that share a cache, hold
// `footprint_bytes`: the cached one while they fit in `cache_bytes`; past it, the
// cache's share of them (cache_bytes / footprint) at the cached rate and the rest at
// memory's. (A step to memory's rate at the cache's size made this machine's 2-rank
// gathers, reduces and scans of 4 MiB, 12 MiB of buffers against an 8 MiB cache, 1.3-2
// times faster than predicted; memcpy over 16 MiB keeps 60% of its cached rate here.)
// `memory_rate` alone where there is no cache or no cached rate.
double RateAtFootprint(double memory_rate, double cached_rate, size_t cache_bytes,
                       double footprint_bytes);
// Its inverse for a calibration: memory's rate from one measured at a footprint past the
// cache (the measured rate where the footprint fits, or there is no cache).
double MemoryRateFrom(double measured_rate, double cached_rate, size_t cache_bytes,
                      double footprint_bytes);

// The profile a call sees whose buffers, summed over the ranks that share a cache, hold
// `footprint_bytes`: its copy, reduction and engine rates, and its links' cached rates,
// at that footprint (RateAtFootprint; a link's cached rate stays its own, for the
// messages of unwritten data). Decided: its cache_bytes is 0, so that the parts of the call (a
// level's calls) keep the decision the whole call's footprint made.
MachineProfile ProfileForFootprint(const MachineProfile& profile, double footprint_bytes);

// Parses a profile; `origin` (a file name) goes into error messages. Every key must be
// known and every number positive (overheads and latencies may be 0); keys not given
// keep MachineProfile's defaults but for the required ones (ranks_per_node and each
// link's latency and bandwidth; the engine's latency and bandwidth once any engine key
// is given). InvalidArgument naming the origin, line and key.
absl::StatusOr<MachineProfile> ParseMachineProfile(absl::string_view text,
                                                   absl::string_view origin);

// The profile's text as ParseMachineProfile reads it, with `comment` lines on top.
std::string FormatMachineProfile(const MachineProfile& profile, absl::string_view comment);

// The shipped profiles, by name ("infiniband", ...), with their text.
struct ShippedProfile {
  absl::string_view name;
  absl::string_view text;
};
absl::Span<const ShippedProfile> ShippedProfiles();

// A shipped profile by name, or else a profile file by path. NotFound listing the
// shipped names when it is neither.
absl::StatusOr<MachineProfile> LoadMachineProfile(const std::string& name_or_path);

}  // namespace zcoll::sim

#endif  // ZCOLL_SIM_MACHINE_PROFILE_H_
