// Measures this machine's figures for a simulator profile (sim/machine_profile.h), as
// `zcoll_bench --calibrate=FILE` writes them: per link (two ranks of one node over the
// local transport, two emulated nodes over the network provider) the one-way times of
// a small and of two large messages (a ping-pong of 2-rank bcasts forced to one
// message) and the gap between messages a rank posts back to back; the reduction
// kernel's and memcpy's throughput.

#ifndef ZCOLL_TOOLS_CALIBRATION_H_
#define ZCOLL_TOOLS_CALIBRATION_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/communicator.h"
#include "sim/machine_profile.h"

namespace zcoll {

inline constexpr size_t kCalibrationSmallBytes = 8;
inline constexpr size_t kCalibrationMediumBytes = size_t{1} << 20;
inline constexpr size_t kCalibrationLargeBytes = size_t{4} << 20;
// A message past the eager size, whose handshake MeasureLink times.
inline constexpr size_t kCalibrationHandshakeBytes = size_t{64} << 10;
// The node engine's in-cache pair: kCalibrationCachedBytes and kCalibrationMediumBytes.
inline constexpr size_t kCalibrationCachedBytes = size_t{256} << 10;

// Medians over repeats, in microseconds.
struct LinkTimings {
  double small_usec = 0;     // one way, kCalibrationSmallBytes
  double medium_usec = 0;    // one way, kCalibrationMediumBytes
  double large_usec = 0;     // one way, kCalibrationLargeBytes
  double gap_usec = 0;       // per message, small messages posted back to back
  double post_usec = 0;      // of those, the sender's time to post one
  double exchange_usec = 0;  // kCalibrationLargeBytes each way at once
  // Rank 0's calls one after another (a benchmark's loop) at kCalibrationCachedBytes
  // (the link's and the node engine's); the size large_usec was measured at
  // (kCalibrationLargeBytes but for the engine).
  double cached_usec = 0;
  size_t large_bytes = kCalibrationLargeBytes;
  // The link's (MeasureLink): per call of rank 0's bcasts of kCalibrationHandshakeBytes
  // one after another, as a benchmark's loop.
  double handshake_probe_usec = 0;
  // The link's: rank 0's calls of kCalibrationMediumBytes one after another (the
  // engine's medium_usec is rank 0's already).
  double cached_medium_usec = 0;
};

// The model's cost of a link from its timings (LogGP's way): the bandwidth from the two
// large sizes' difference (latency and overheads cancel); the overhead a side's CPU time
// per message, the sender's time to post one (at most half the small one-way time); the
// latency what is left of the small one-way time after both overheads and its bytes
// (at least 0). `cpu_copies`: a transfer is the CPUs' copy (shared memory), which the
// model then charges to both ends' CPUs, an exchange's two directions included;
// otherwise half duplex when an exchange takes 1.5 times a one-way transfer or more, and
// then, `on_shared_cores` (nodes emulated on this machine, whose TCP runs on the cores
// the ranks share), the CPUs' copy as well: the two directions wait for each other
// because both need the same cores. The rendezvous, for a link whose CPUs copy
// (`cpu_copies`, shared memory): what the handshake probe's call took beyond the small
// one-way time and its extra bytes (at least 0; 0 without a probe). The back-to-back gap is not in
// the model (a port carries a small message in no time); it is reported beside.
//
// With a cache (`cache_bytes`, and `cache_per_core` as EngineCostFrom has them) that holds
// the ranks' 1 MiB buffers, a link whose CPUs copy has a cached rate too, for messages of
// data unwritten in the call, from rank 0's 256 KiB and 1 MiB calls' difference
// (cached_usec, cached_medium_usec), when that is the faster; the ping-pong's rate stays
// the link's, and the small message's and the probe's bytes go at the cached rate.
sim::LinkCost LinkCostFrom(const LinkTimings& timings, bool cpu_copies,
                           bool on_shared_cores = false, size_t cache_bytes = 0,
                           bool cache_per_core = false);

// The share of a transfer's time that holds each end's CPU (sim::LinkCost::cpu_share)
// on a link whose bytes each side's kernel copies once, as TCP's over loopback: the
// link's rate over memcpy's (`copy_bytes_per_usec`, past the cache), from 0.01 (a
// profile's share is above 0) to 1; 1 without a copy rate.
double CopyShareOfTransfer(double link_bytes_per_usec, double copy_bytes_per_usec);

// Both ranks of a 2-rank communicator call it; it forces the bcast to `linear` (one
// message) for the measurement and restores the selection table after.
absl::StatusOr<LinkTimings> MeasureLink(Communicator& comm);

// The node engine's timings on a 2-rank communicator with a node engine (every rank
// calls it): the one-way times of node Bcasts of 8 B, 256 KiB, 1 MiB and `large_bytes`
// (half a round trip, as MeasureLink's; from 64 KiB each rank copies half the vector,
// both at once); the other fields 0. InvalidArgument for another size, or a
// `large_bytes` not above 1 MiB; FailedPrecondition when the communicator has no node
// engine.
absl::StatusOr<LinkTimings> MeasureEngine(Communicator& comm,
                                          size_t large_bytes = kCalibrationLargeBytes);

// The cache that a call's buffers fit in to be found there again, and the kernels' rates
// in it and past it. memcpy's throughput over working sets (source and destination) of
// 256 KiB to 64 MiB, each the median of repeats: `cache_bytes` is the largest working
// set whose rate is at least 3/4 of the fastest (0 when that is 64 MiB: no fall seen, so
// no cache assumed). Past the cache (64 MiB of working set), memcpy's and the float-sum
// kernel's (ReduceLocal, two 32 MiB operands) rates less the cache's share of that
// working set (sim::MemoryRateFrom; as measured where no cache was seen); in it, memcpy's
// median rate of the working sets up to the cache, and the kernel's over two operands of
// a quarter of it. Single-threaded: the last-level cache one rank sees alone, which the
// model compares with the buffers of every rank that shares it.
struct CacheSweep {
  size_t cache_bytes = 0;
  double cached_copy_bytes_per_usec = 0;  // 0 without a cache
  double copy_bytes_per_usec = 0;
  double cached_reduce_bytes_per_usec = 0;  // 0 without a cache
  double reduce_bytes_per_usec = 0;
  std::vector<std::pair<size_t, double>> rates;  // memcpy's (working set, bytes per microsecond)
  // Whether the cache is each core's own: a copy over cache_bytes kept 3/4 of the
  // cached rate while another process on another core copied over as much (a shared
  // cache would have held half of each). False where there is no cache or no second
  // core to try it on.
  bool per_core = false;
  double rate_beside_another = 0;  // the copy's rate in that trial (0: not tried)
};
CacheSweep MeasureCacheSweep();
inline constexpr size_t kCacheSweepLargestBytes = size_t{64} << 20;

// The large size MeasureEngine needs to see the engine copy from memory: a vector that
// two ranks' buffers hold twice over past `cache_bytes`, at least kCalibrationLargeBytes.
size_t EngineLargeBytes(size_t cache_bytes);

// A control line's trip between two cores: two processes, each writing its own cache
// line and spinning until it sees the other's write of the same round, per round after
// a tenth to warm up (the median of 5 repeats; cache_line_ping's pattern). -1 when it
// could not be measured (no fork, or a process that stopped).
double MeasureCacheLineTripUsec();

// The system call of a read of a peer's own buffer: one process_vm_readv of
// kCalibrationSystemCallBytes from a child process, per call (the median of 5 repeats
// of many calls). -1 when it could not be measured (no fork, or the kernel refused the
// read: Yama's ptrace scope 3, a seccomp filter).
inline constexpr size_t kCalibrationSystemCallBytes = 64;
double MeasureSystemCallUsec();

// The engine's figures from its timings and the line's trip, half of each bcast's vector
// copied by each rank. Without a cache (`cache_bytes` 0, or one that 2 ranks' 1 MiB
// do not fit): the bandwidth from the 1 MiB and large sizes' difference. With one: the
// cached bandwidth from the 256 KiB and 1 MiB difference, and the bandwidth from memory
// from the large size's time less the fixed part the cached pair leaves (t(1 MiB) -
// 512 KiB / cached rate), so that the two regimes meet at the same fixed cost, less the
// cache's share of the large size's two buffers (sim::MemoryRateFrom); 0 for the cached
// rate when it comes out no faster. With `cache_per_core` (each rank's core has a cache
// of `cache_bytes`, CacheSweep::per_core) the footprints are a rank's: its own 1 MiB
// buffer must fit, and the large size's one buffer had the cache's share in it. The
// latency is the trip; the overhead
// what is left of the small one-way time after the trip and its bytes (at least 0); the
// system call's cost `system_call_usec` (MeasureSystemCallUsec; 0 where that could not
// be measured).
sim::EngineCost EngineCostFrom(const LinkTimings& timings, double trip_usec,
                               double system_call_usec = 0, size_t cache_bytes = 0,
                               bool cache_per_core = false);

// Output bytes per microsecond of a two-operand float sum (ReduceLocal) over `bytes` of
// each operand (the median of repeats).
double MeasureReduceBytesPerUsec(size_t bytes);

// LinkTimings as one line of numbers and back (ranks hand them to the parent process).
std::string FormatLinkTimings(const LinkTimings& timings);
absl::StatusOr<LinkTimings> ParseLinkTimings(const std::string& line);

}  // namespace zcoll

#endif  // ZCOLL_TOOLS_CALIBRATION_H_
