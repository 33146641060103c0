#include "transport/transport_factory.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config.h"
#include "core/status_macros.h"
#include "transport/link_model.h"
#include "transport/ofi/ofi_info.h"
#include "transport/ofi/ofi_transport.h"
#include "transport/routed_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/ucx/ucx_info.h"
#include "transport/ucx/ucx_transport.h"

namespace zcoll {
namespace {

absl::StatusOr<std::unique_ptr<Transport>> CreateSingle(absl::string_view provider, int rank,
                                                        int size) {
  if (provider == "shm") {
    ShmOptions options;
    options.cross_memory_attach = EnvironmentUnsigned("ZCOLL_CROSS_MEMORY_ATTACH") != 0;
    return CreateShmTransport(rank, size, options);
  }
  if (provider == "ofi") return CreateOfiTransport("", rank, size);
  if (absl::StartsWith(provider, "ofi:")) {
    const absl::string_view name = provider.substr(4);
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

// The reason `provider` cannot be used, with what could be.
absl::Status Unusable(absl::string_view role, absl::string_view provider, int rank,
                      const absl::Status& why) {
  // The rank once: `why` may name it already.
  absl::string_view reason = why.message();
  const std::string own_prefix = absl::StrCat("rank ", rank, ": ");
  absl::ConsumePrefix(&reason, own_prefix);
  return absl::Status(why.code(), absl::StrCat(own_prefix, "the ", role, " provider '", provider,
                                               "' cannot be used: ", reason, "; available here: ",
                                               absl::StrJoin(AvailableProviders(), ", ")));
}

// True when UCX has a transport on an RDMA device (rc, dc, ud and their mlx5
// variants), where it is the fastest choice on InfiniBand clusters.
bool UcxHasRdmaDevice() {
  absl::StatusOr<std::vector<ucx::UcxTransportInfo>> transports = ucx::ListUcxTransports();
  if (!transports.ok()) return false;
  for (const ucx::UcxTransportInfo& transport : *transports) {
    for (absl::string_view rdma : {"rc", "dc", "ud"}) {
      if (absl::StartsWith(transport.transport, rdma)) return true;
    }
  }
  return false;
}

// "auto" and the network meaning of "ofi": the first of the providers, fastest
// first, that this machine offers.
absl::StatusOr<std::string> ResolveNetworkProvider(absl::string_view configured) {
  if (configured != "auto" && configured != "ofi") return std::string(configured);
  const std::vector<std::string> available = AvailableProviders();
  auto offered = [&](absl::string_view name) {
    return std::find(available.begin(), available.end(), name) != available.end();
  };
  std::vector<std::string> preference = {"ofi:cxi", "ofi:efa"};
  if (configured == "auto" && UcxHasRdmaDevice()) preference.push_back("ucx");
  preference.push_back("ofi:verbs");
  // Over TCP UCX costs less per message than libfabric's tcp provider (one-way 8 B:
  // ucx_perftest 5.6 us, fi_pingpong 7.4-9.2 here; zcoll's 2-rank collectives over
  // ucx:tcp were at or below Open MPI's TCP BTL in 53 of 90 rows, over ofi:tcp in 10).
  if (configured == "auto") preference.push_back("ucx:tcp");
  preference.push_back("ofi:tcp");
  for (const std::string& name : preference) {
    if (offered(name)) return name;
  }
  return absl::UnavailableError(absl::StrCat(
      "ZCOLL_PROVIDER=", configured, " finds no network provider here (tried ",
      absl::StrJoin(preference, ", "), "); available here: ", absl::StrJoin(available, ", ")));
}

}  // namespace

absl::StatusOr<ProviderChoice> ProvidersFromEnvironment() {
  ProviderChoice choice;
  choice.local = EnvironmentValue("ZCOLL_LOCAL_PROVIDER");
  ASSIGN_OR_RETURN(choice.network, ResolveNetworkProvider(EnvironmentValue("ZCOLL_PROVIDER")));
  return choice;
}

absl::StatusOr<std::unique_ptr<Transport>> CreateJobTransport(int rank, int size,
                                                              std::vector<int> node_of_rank) {
  return CreateNodeAwareTransport(EnvironmentValue("ZCOLL_LOCAL_PROVIDER"),
                                  EnvironmentValue("ZCOLL_PROVIDER"), rank, size,
                                  std::move(node_of_rank));
}

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(absl::string_view provider, int rank,
                                                           int size) {
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateTransport: rank ", rank, " is not a rank of a ", size, "-rank job"));
  }
  // LOCAL+NETWORK/K: K emulated nodes in blocks.
  const std::vector<absl::string_view> routed = absl::StrSplit(provider, absl::MaxSplits('/', 1));
  if (routed.size() == 2) {
    const std::vector<absl::string_view> parts = absl::StrSplit(routed[0], absl::MaxSplits('+', 1));
    int nodes = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(routed[1], &nodes) || nodes < 1 || nodes > size) {
      return absl::InvalidArgumentError(
          absl::StrCat("transport provider '", provider,
                       "' is not LOCAL+NETWORK/NODES with 1 <= NODES <= ", size));
    }
    std::vector<int> node_of_rank(size);
    for (int r = 0; r < size; ++r) node_of_rank[r] = static_cast<int>(int64_t{r} * nodes / size);
    return CreateNodeAwareTransport(parts[0], parts[1], rank, size, std::move(node_of_rank));
  }
  return CreateSingle(provider, rank, size);
}

absl::StatusOr<std::unique_ptr<Transport>> CreateNodeAwareTransport(
    absl::string_view local_provider, absl::string_view network_provider, int rank, int size,
    std::vector<int> node_of_rank) {
  if (static_cast<int>(node_of_rank.size()) != size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateNodeAwareTransport: ", node_of_rank.size(), " node ids for ", size, " ranks"));
  }
  bool has_local_peer = false, has_remote_peer = false;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    (node_of_rank[peer] == node_of_rank[rank] ? has_local_peer : has_remote_peer) = true;
  }
  std::unique_ptr<Transport> local, network;
  if (has_local_peer || !has_remote_peer) {
    absl::StatusOr<std::unique_ptr<Transport>> made = CreateSingle(local_provider, rank, size);
    if (!made.ok()) return Unusable("local", local_provider, rank, made.status());
    local = std::move(*made);
  }
  if (has_remote_peer) {
    // Resolved only here: "auto" and "ofi" open every libfabric and UCX provider to see
    // which work, and a rank with no peer on another node needs none (a 2-rank
    // zcoll_bench job on one node, start to end of a barrier's rows: 0.42-0.48 s
    // resolving "auto", 0.24-0.27 s without, 5 alternating runs each).
    ASSIGN_OR_RETURN(const std::string network_name, ResolveNetworkProvider(network_provider));
    absl::StatusOr<std::unique_ptr<Transport>> made = CreateSingle(network_name, rank, size);
    if (!made.ok()) return Unusable("network", network_name, rank, made.status());
    network = std::move(*made);
    ASSIGN_OR_RETURN(const LinkModel link, LinkModelFromEnvironment());
    if (link.enabled()) network = CreateLinkModelTransport(std::move(network), link);
  }
  if (!network) return local;  // one node: no routing needed
  return CreateRoutedTransport(std::move(local), std::move(network), std::move(node_of_rank));
}

std::vector<std::string> AvailableProviders() {
  std::vector<std::string> available = {"shm"};
  std::set<std::string> ofi;
  if (absl::StatusOr<std::vector<ofi::OfiProviderInfo>> providers = ofi::ListOfiProviders();
      providers.ok()) {
    for (const ofi::OfiProviderInfo& provider : *providers) {
      if (!provider.open_status.ok() || !provider.tagged || !provider.rma) continue;
      std::string name = provider.provider;
      if (name == "tcp;ofi_rxm") name = "tcp";
      if (name == "verbs;ofi_rxm") name = "verbs";
      ofi.insert(absl::StrCat("ofi:", name));
    }
  }
  if (!ofi.empty()) available.push_back("ofi");
  available.insert(available.end(), ofi.begin(), ofi.end());
  if (absl::StatusOr<std::vector<ucx::UcxTransportInfo>> transports = ucx::ListUcxTransports();
      transports.ok() && !transports->empty()) {
    available.push_back("ucx");
    std::set<std::string> names;
    for (const ucx::UcxTransportInfo& transport : *transports) {
      names.insert(absl::StrCat("ucx:", transport.transport));
    }
    available.insert(available.end(), names.begin(), names.end());
  }
  return available;
}

}  // namespace zcoll
