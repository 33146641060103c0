#include "transport/ofi/ofi_info.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zcoll::ofi {
namespace {

// zcoll is written against the libfabric 1.17 API.
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

std::string MrModeText(int mode) {
  constexpr std::pair<int, const char*> kBits[] = {
      {FI_MR_LOCAL, "local"},         {FI_MR_RAW, "raw"},
      {FI_MR_VIRT_ADDR, "virt_addr"}, {FI_MR_ALLOCATED, "allocated"},
      {FI_MR_PROV_KEY, "prov_key"},   {FI_MR_MMU_NOTIFY, "mmu_notify"},
      {FI_MR_RMA_EVENT, "rma_event"}, {FI_MR_ENDPOINT, "endpoint"},
      {FI_MR_HMEM, "hmem"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kBits) {
    if (mode & bit) names.emplace_back(name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::Status FabricError(const char* call, int rc) {
  return absl::UnavailableError(absl::StrCat(call, " failed: ", fi_strerror(-rc)));
}

// Opens and closes a fabric and a domain for `info`. No endpoint: ofi_rxm 1.17
// crashes when an endpoint that was never enabled is closed, and enabling one needs
// an address vector and completion queues, i.e. the provider itself.
absl::Status TryOpen(fi_info* info) {
  fid_fabric* fabric = nullptr;
  int rc = fi_fabric(info->fabric_attr, &fabric, nullptr);
  if (rc != 0) return FabricError("fi_fabric", rc);
  fid_domain* domain = nullptr;
  rc = fi_domain(fabric, info, &domain, nullptr);
  if (rc == 0) fi_close(&domain->fid);
  fi_close(&fabric->fid);
  return rc == 0 ? absl::OkStatus() : FabricError("fi_domain", rc);
}

}  // namespace

std::string OfiLibraryVersion() {
  const uint32_t version = fi_version();
  return absl::StrCat(FI_MAJOR(version), ".", FI_MINOR(version));
}

absl::StatusOr<std::vector<OfiProviderInfo>> ListOfiProviders() {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return absl::ResourceExhaustedError("fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  // Accept every memory-registration mode zcoll handles (docs/design.md, "transport/").
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  fi_info* list = nullptr;
  const int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  std::vector<OfiProviderInfo> providers;
  if (rc == -FI_ENODATA) return providers;
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("fi_getinfo failed: ", fi_strerror(-rc)));
  }
  // fi_getinfo lists one entry per capability set of a domain, and some cannot be
  // opened (libfabric 1.17's shm offers an FI_ATOMIC entry whose domain fails with
  // FI_ENODATA). Keep one row per (provider, domain): the first entry that opens.
  std::map<std::pair<std::string, std::string>, size_t> row_of;
  for (fi_info* info = list; info != nullptr; info = info->next) {
    OfiProviderInfo entry;
    entry.provider = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "?";
    entry.fabric = info->fabric_attr->name ? info->fabric_attr->name : "?";
    entry.domain = info->domain_attr->name ? info->domain_attr->name : "?";
    const auto [row, inserted] =
        row_of.emplace(std::make_pair(entry.provider, entry.domain), providers.size());
    if (!inserted && providers[row->second].open_status.ok()) continue;
    entry.tagged = (info->caps & FI_TAGGED) != 0;
    entry.rma = (info->caps & FI_RMA) != 0;
    entry.mr_mode = MrModeText(info->domain_attr->mr_mode);
    entry.open_status = TryOpen(info);
    if (inserted) {
      providers.push_back(std::move(entry));
    } else if (entry.open_status.ok()) {
      providers[row->second] = std::move(entry);
    }
  }
  fi_freeinfo(list);
  return providers;
}

}  // namespace zcoll::ofi
