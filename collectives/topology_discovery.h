// Discovery of the local machine's hardware with hwloc.
//
// Algorithms never call this: they receive a Topology (core/topology.h). The runtime
// calls it once per process to fill in package and NUMA ids, and zcoll_info prints it.

#ifndef ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_
#define ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/topology.h"

namespace zcoll {

// Packages, NUMA domains, cores, hardware threads, cache sizes and memory of this
// machine. Unavailable if hwloc cannot load the topology.
absl::StatusOr<NodeHardware> DiscoverNodeHardware();

// "2.9.0": the hwloc library zcoll is running against.
std::string HwlocLibraryVersion();

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_TOPOLOGY_DISCOVERY_H_
