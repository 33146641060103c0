// Discovery of the local machine's hardware with hwloc.
//
// Algorithms never call this: they receive a Topology (core/topology.h). The runtime
// calls it once per process to fill in package and NUMA ids, and zcoll_info prints it.

#ifndef ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_
#define ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/topology.h"

namespace zcoll {

// Packages, NUMA domains, cores, hardware threads, cache sizes and memory of this
// machine. Unavailable if hwloc cannot load the topology.
absl::StatusOr<NodeHardware> DiscoverNodeHardware();

// Where this process may run: the package (socket) and NUMA domain that hold every
// CPU of its binding (sched_setaffinity, taskset, a launcher's --bind-to), or
// kUnknownId where the binding spans several. `node` is left 0.
absl::StatusOr<RankLocation> DiscoverProcessPlacement();

// The same for a set of CPUs (operating-system numbering), as if bound to them.
absl::StatusOr<RankLocation> DiscoverPlacementOfCpus(absl::Span<const int> cpus);

// Bytes of the last-level cache above this process's CPUs (the highest cache hwloc
// finds above the first CPU of its binding), or 0 when hwloc cannot say. Loaded once a
// process: the machine's caches do not change under it.
size_t LastLevelCacheBytes();

// "2.9.0": the hwloc library zcoll is running against.
std::string HwlocLibraryVersion();

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_
