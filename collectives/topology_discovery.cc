#include "collectives/topology_discovery.h"

#include <hwloc.h>
#include <limits.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace zcoll {
namespace {

struct TopologyCloser {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, TopologyCloser>;

int CountObjects(hwloc_topology_t topology, hwloc_obj_type_t type) {
  const int count = hwloc_get_nbobjs_by_type(topology, type);
  return count < 0 ? 0 : count;
}

}  // namespace

absl::StatusOr<NodeHardware> DiscoverNodeHardware() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::UnavailableError("hwloc_topology_init failed");
  }
  HwlocTopology topology(raw);
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::UnavailableError(
        "hwloc_topology_load failed: cannot read this machine's topology");
  }
  NodeHardware hardware;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) hardware.host_name = host;
  hardware.packages = CountObjects(topology.get(), HWLOC_OBJ_PACKAGE);
  hardware.numa_domains = CountObjects(topology.get(), HWLOC_OBJ_NUMANODE);
  hardware.cores = CountObjects(topology.get(), HWLOC_OBJ_CORE);
  hardware.hardware_threads = CountObjects(topology.get(), HWLOC_OBJ_PU);
  // Data (or unified) caches by level; the first object of a level stands for all.
  constexpr hwloc_obj_type_t kCacheLevels[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
                                               HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                               HWLOC_OBJ_L5CACHE};
  for (hwloc_obj_type_t level : kCacheLevels) {
    hwloc_obj_t cache = hwloc_get_obj_by_type(topology.get(), level, 0);
    if (cache == nullptr) break;
    hardware.cache_bytes_per_level.push_back(cache->attr->cache.size);
  }
  hwloc_obj_t root = hwloc_get_root_obj(topology.get());
  hardware.memory_bytes = root != nullptr ? root->total_memory : 0;
  return hardware;
}

std::string HwlocLibraryVersion() {
  const unsigned version = hwloc_get_api_version();
  return absl::StrCat(version >> 16, ".", (version >> 8) & 0xff, ".", version & 0xff);
}

}  // namespace zcoll
