#include "transport/ucx/ucx_info.h"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zcoll::ucx {
namespace {

const char* DeviceTypeName(uct_device_type_t type) {
  switch (type) {
    case UCT_DEVICE_TYPE_NET:
      return "network";
    case UCT_DEVICE_TYPE_SHM:
      return "shared memory";
    case UCT_DEVICE_TYPE_ACC:
      return "accelerator";
    case UCT_DEVICE_TYPE_SELF:
      return "self";
    default:
      return "other";
  }
}

// Appends the transports of one memory domain; silently skips one that cannot open.
void AppendTransports(uct_component_h component, const std::string& component_name,
                      const char* md_name, std::vector<UcxTransportInfo>& out) {
  uct_md_config_t* config = nullptr;
  if (uct_md_config_read(component, nullptr, nullptr, &config) != UCS_OK) return;
  uct_md_h md = nullptr;
  const ucs_status_t opened = uct_md_open(component, md_name, config, &md);
  uct_config_release(config);
  if (opened != UCS_OK) return;
  uct_tl_resource_desc_t* resources = nullptr;
  unsigned count = 0;
  if (uct_md_query_tl_resources(md, &resources, &count) == UCS_OK) {
    for (unsigned i = 0; i < count; ++i) {
      out.push_back(UcxTransportInfo{
          .component = component_name,
          .memory_domain = md_name,
          .transport = resources[i].tl_name,
          .device = resources[i].dev_name,
          .device_type = DeviceTypeName(resources[i].dev_type),
      });
    }
    uct_release_tl_resource_list(resources);
  }
  uct_md_close(md);
}

}  // namespace

std::string UcxLibraryVersion() { return ucp_get_version_string(); }

absl::StatusOr<std::vector<UcxTransportInfo>> ListUcxTransports() {
  uct_component_h* components = nullptr;
  unsigned num_components = 0;
  const ucs_status_t listed = uct_query_components(&components, &num_components);
  if (listed != UCS_OK) {
    return absl::UnavailableError(
        absl::StrCat("uct_query_components failed: ", ucs_status_string(listed)));
  }
  std::vector<UcxTransportInfo> transports;
  for (unsigned c = 0; c < num_components; ++c) {
    uct_component_attr_t attr = {};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (!mds.empty() && uct_component_query(components[c], &attr) != UCS_OK) continue;
    const std::string component_name = attr.name;
    for (const uct_md_resource_desc_t& md : mds) {
      AppendTransports(components[c], component_name, md.md_name, transports);
    }
  }
  uct_release_component_list(components);
  return transports;
}

}  // namespace zcoll::ucx
