#include "transport/shared_memory_name.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace zcoll {
namespace {

// The inode of /proc/self/ns/pid names the namespace; 0 where /proc does not say.
uint64_t PidNamespaceId() {
  static const uint64_t id = [] {
    struct stat namespace_file {};
    return stat("/proc/self/ns/pid", &namespace_file) == 0
               ? static_cast<uint64_t>(namespace_file.st_ino)
               : uint64_t{0};
  }();
  return id;
}

}  // namespace

std::string SharedMemoryPrefix(int64_t pid) {
  return absl::StrCat("zcoll-", PidNamespaceId(), "-", pid, "-");
}

}  // namespace zcoll
