// Names of the shared-memory objects zcoll's transports create in /dev/shm.
//
// Every name starts with SharedMemoryPrefix(pid) of the creating process, so that a
// launcher can remove what a killed rank left (SweepSharedMemory) without touching
// anyone else's. A pid alone is not enough: processes in different PID namespaces
// (containers, Bazel's sandbox running tests side by side) share /dev/shm and reuse
// the same small pids, so the prefix also carries the PID namespace's id.

#ifndef ZCOLL_TRANSPORT_SHARED_MEMORY_NAME_H_
#define ZCOLL_TRANSPORT_SHARED_MEMORY_NAME_H_

#include <cstdint>
#include <string>

namespace zcoll {

// "zcoll-<pid namespace>-<pid>-" for process `pid` of this process's PID namespace.
std::string SharedMemoryPrefix(int64_t pid);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_SHARED_MEMORY_NAME_H_
