#include "transport/transport_factory.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "transport/ofi/ofi_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace zcoll {

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(absl::string_view provider, int rank,
                                                           int size) {
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateTransport: rank ", rank, " is not a rank of a ", size, "-rank job"));
  }
  if (provider == "shm") return CreateShmTransport(rank, size);
  if (provider == "ofi") return CreateOfiTransport("", rank, size);
  if (absl::StartsWith(provider, "ofi:")) {
    absl::string_view name = provider.substr(4);
    // Short names for the layered providers zcoll users mean.
    if (name == "tcp") return CreateOfiTransport("tcp;ofi_rxm", rank, size);
    if (name == "verbs") return CreateOfiTransport("verbs;ofi_rxm", rank, size);
    return CreateOfiTransport(name, rank, size);
  }
  if (provider == "ucx") return CreateUcxTransport("", rank, size);
  if (absl::StartsWith(provider, "ucx:")) return CreateUcxTransport(provider.substr(4), rank, size);
  if (provider == "loopback") {
    return absl::InvalidArgumentError(
        "CreateTransport: loopback transports are made by a LoopbackFabric, not by name");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transport provider '", provider,
                   "'; available here: ", absl::StrJoin(AvailableProviders(), ", ")));
}

std::vector<std::string> AvailableProviders() {
  return {"shm", "ofi", "ofi:shm", "ofi:tcp", "ucx", "ucx:tcp"};
}

}  // namespace zcoll
