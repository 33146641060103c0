// What libfabric offers on this machine: the providers zcoll could use for reliable
// datagram (FI_EP_RDM) endpoints, and whether each one actually opens.
//
// Used by zcoll_info and by provider selection's error messages ("ofi:verbs is not
// available here; available: shm, tcp;ofi_rxm").

#ifndef ZCOLL_TRANSPORT_OFI_OFI_INFO_H_
#define ZCOLL_TRANSPORT_OFI_OFI_INFO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zcoll::ofi {

struct OfiProviderInfo {
  std::string provider;  // "shm", "tcp;ofi_rxm", "verbs;ofi_rxm", "efa", ...
  std::string fabric;
  std::string domain;
  bool tagged = false;  // FI_TAGGED
  bool rma = false;     // FI_RMA
  // FI_MR_* bits the provider requires, e.g. "local,virt_addr,prov_key,allocated".
  std::string mr_mode;
  // OK when a fabric and a domain could be opened on it.
  absl::Status open_status;
};

// "1.17.0": the libfabric library zcoll is running against.
std::string OfiLibraryVersion();

// One entry per (provider, domain) that fi_getinfo reports for FI_EP_RDM endpoints,
// each tried by opening it. An error only when fi_getinfo itself fails for a reason
// other than "no provider" (which gives an empty list).
absl::StatusOr<std::vector<OfiProviderInfo>> ListOfiProviders();

}  // namespace zcoll::ofi

#endif  // ZCOLL_TRANSPORT_OFI_OFI_INFO_H_
