// What UCX offers on this machine: its version and the transports (with devices) of
// every memory domain that opens, as `ucx_info -d` lists them.

#ifndef ZCOLL_TRANSPORT_UCX_UCX_INFO_H_
#define ZCOLL_TRANSPORT_UCX_UCX_INFO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zcoll::ucx {

struct UcxTransportInfo {
  std::string component;      // "posix", "tcp", "ib", ...
  std::string memory_domain;  // "posix", "mlx5_0", ...
  std::string transport;      // "posix", "cma", "tcp", "rc_mlx5", ...
  std::string device;         // "memory", "lo", "mlx5_0:1", ...
  std::string device_type;    // "network", "shared memory", "accelerator", "self"
};

// "1.13.1".
std::string UcxLibraryVersion();

// Every transport resource of every memory domain that opens. Memory domains that
// fail to open (no device) are skipped; an error only if UCX cannot list components.
absl::StatusOr<std::vector<UcxTransportInfo>> ListUcxTransports();

}  // namespace zcoll::ucx

#endif  // ZCOLL_TRANSPORT_UCX_UCX_INFO_H_
