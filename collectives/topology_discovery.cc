#include "collectives/topology_discovery.h"

#include <hwloc.h>
#include <limits.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

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

absl::StatusOr<HwlocTopology> LoadTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::UnavailableError("hwloc_topology_init failed");
  }
  HwlocTopology topology(raw);
  if (hwloc_topology_load(topology.get()) != 0) {
    return absl::UnavailableError(
        "hwloc_topology_load failed: cannot read this machine's topology");
  }
  return topology;
}

struct BitmapFreer {
  void operator()(hwloc_bitmap_s* bitmap) const { hwloc_bitmap_free(bitmap); }
};
using HwlocBitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFreer>;

// The logical index of the one object of `type` whose CPUs include all of `cpus`;
// kUnknownId when none or several do.
int ContainingObject(hwloc_topology_t topology, hwloc_obj_type_t type, hwloc_const_cpuset_t cpus) {
  int found = kUnknownId;
  const int count = CountObjects(topology, type);
  for (int index = 0; index < count; ++index) {
    hwloc_obj_t object = hwloc_get_obj_by_type(topology, type, index);
    if (object == nullptr || object->cpuset == nullptr) continue;
    if (hwloc_bitmap_isincluded(cpus, object->cpuset)) {
      if (found != kUnknownId) return kUnknownId;
      found = static_cast<int>(object->logical_index);
    }
  }
  return found;
}

RankLocation PlacementOf(hwloc_topology_t topology, hwloc_const_cpuset_t cpus) {
  RankLocation location;
  if (hwloc_bitmap_iszero(cpus)) return location;
  location.package = ContainingObject(topology, HWLOC_OBJ_PACKAGE, cpus);
  location.numa = ContainingObject(topology, HWLOC_OBJ_NUMANODE, cpus);
  location.l3 = ContainingObject(topology, HWLOC_OBJ_L3CACHE, cpus);
  return location;
}

}  // namespace

absl::StatusOr<RankLocation> DiscoverProcessPlacement() {
  absl::StatusOr<HwlocTopology> topology = LoadTopology();
  if (!topology.ok()) return topology.status();
  HwlocBitmap binding(hwloc_bitmap_alloc());
  if (binding == nullptr ||
      hwloc_get_cpubind(topology->get(), binding.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    return absl::UnavailableError("hwloc_get_cpubind failed: cannot read this process's binding");
  }
  return PlacementOf(topology->get(), binding.get());
}

absl::StatusOr<RankLocation> DiscoverPlacementOfCpus(absl::Span<const int> cpus) {
  absl::StatusOr<HwlocTopology> topology = LoadTopology();
  if (!topology.ok()) return topology.status();
  HwlocBitmap set(hwloc_bitmap_alloc());
  if (set == nullptr) return absl::ResourceExhaustedError("hwloc_bitmap_alloc failed");
  for (int cpu : cpus) {
    if (cpu < 0) {
      return absl::InvalidArgumentError(absl::StrCat("DiscoverPlacementOfCpus: CPU ", cpu,
                                                     " is not an operating-system CPU number"));
    }
    hwloc_bitmap_set(set.get(), static_cast<unsigned>(cpu));
  }
  return PlacementOf(topology->get(), set.get());
}

absl::StatusOr<NodeHardware> DiscoverNodeHardware() {
  absl::StatusOr<HwlocTopology> loaded = LoadTopology();
  if (!loaded.ok()) return loaded.status();
  HwlocTopology topology = std::move(*loaded);
  NodeHardware hardware;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) hardware.host_name = host;
  hardware.packages = CountObjects(topology.get(), HWLOC_OBJ_PACKAGE);
  hardware.numa_domains = CountObjects(topology.get(), HWLOC_OBJ_NUMANODE);
  hardware.l3_caches = CountObjects(topology.get(), HWLOC_OBJ_L3CACHE);
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

namespace {

size_t FindLastLevelCacheBytes() {
  absl::StatusOr<HwlocTopology> topology = LoadTopology();
  if (!topology.ok()) return 0;
  HwlocBitmap binding(hwloc_bitmap_alloc());
  if (binding == nullptr ||
      hwloc_get_cpubind(topology->get(), binding.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    return 0;
  }
  const int first_cpu = hwloc_bitmap_first(binding.get());
  if (first_cpu < 0) return 0;
  size_t bytes = 0;
  // From the CPU up: the last cache passed is the highest level.
  for (hwloc_obj_t object =
           hwloc_get_pu_obj_by_os_index(topology->get(), static_cast<unsigned>(first_cpu));
       object != nullptr; object = object->parent) {
    if (hwloc_obj_type_is_dcache(object->type) && object->attr != nullptr) {
      bytes = static_cast<size_t>(object->attr->cache.size);
    }
  }
  return bytes;
}

}  // namespace

size_t LastLevelCacheBytes() {
  static const size_t bytes = FindLastLevelCacheBytes();
  return bytes;
}

std::string HwlocLibraryVersion() {
  const unsigned version = hwloc_get_api_version();
  return absl::StrCat(version >> 16, ".", (version >> 8) & 0xff, ".", version & 0xff);
}

}  // namespace zcoll
