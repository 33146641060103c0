// zcoll_info: what zcoll can use on this machine.
//
// Prints the zcoll version, the SIMD target the reduction kernels run on, this node's
// hardware (hwloc), the libfabric providers and
// UCX transports that open here, the transports a job would choose, and zcoll's
// environment variables with their values.
// Run it first when a job picks an unexpected transport or topology.
//
//   bazel run //tools:zcoll_info

#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "collectives/algorithms.h"
#include "collectives/node_segment.h"
#include "collectives/selection.h"
#include "collectives/topology_discovery.h"
#include "core/config.h"
#include "core/version.h"
#include "ops/reduce.h"
#include "transport/link_model.h"
#include "transport/ofi/ofi_info.h"
#include "transport/transport_factory.h"
#include "transport/ucx/ucx_info.h"

namespace zcoll {
namespace {

std::string Bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.4g %s", value, kUnits[unit]);
}

void PrintNode() {
  absl::StatusOr<NodeHardware> node = DiscoverNodeHardware();
  if (!node.ok()) {
    absl::PrintF("Node: unknown (%s)\n\n", node.status().ToString());
    return;
  }
  absl::PrintF("Node %s (hwloc API %s)\n", node->host_name, HwlocLibraryVersion());
  absl::PrintF("  packages %d, NUMA domains %d, L3 caches %d, cores %d, hardware threads %d\n",
               node->packages, node->numa_domains, node->l3_caches, node->cores,
               node->hardware_threads);
  std::vector<std::string> caches;
  for (size_t level = 0; level < node->cache_bytes_per_level.size(); ++level) {
    caches.push_back(absl::StrCat("L", level + 1, " ", Bytes(node->cache_bytes_per_level[level])));
  }
  absl::PrintF("  caches: %s\n", caches.empty() ? "unknown" : absl::StrJoin(caches, ", "));
  absl::PrintF("  memory: %s\n\n", node->memory_bytes ? Bytes(node->memory_bytes) : "unknown");
}

void PrintOfi() {
  absl::PrintF("libfabric %s providers (FI_EP_RDM):\n", ofi::OfiLibraryVersion());
  absl::StatusOr<std::vector<ofi::OfiProviderInfo>> providers = ofi::ListOfiProviders();
  if (!providers.ok()) {
    absl::PrintF("  unavailable: %s\n\n", providers.status().ToString());
    return;
  }
  if (providers->empty()) absl::PrintF("  none\n");
  absl::PrintF("  %-16s %-14s %-6s %-4s %-32s %s\n", "provider", "domain", "tagged", "rma",
               "mr_mode", "opens");
  for (const ofi::OfiProviderInfo& provider : *providers) {
    absl::PrintF("  %-16s %-14s %-6s %-4s %-32s %s\n", provider.provider, provider.domain,
                 provider.tagged ? "yes" : "no", provider.rma ? "yes" : "no", provider.mr_mode,
                 provider.open_status.ok() ? "yes" : std::string(provider.open_status.message()));
  }
  absl::PrintF("\n");
}

void PrintUcx() {
  absl::PrintF("UCX %s transports:\n", ucx::UcxLibraryVersion());
  absl::StatusOr<std::vector<ucx::UcxTransportInfo>> transports = ucx::ListUcxTransports();
  if (!transports.ok()) {
    absl::PrintF("  unavailable: %s\n\n", transports.status().ToString());
    return;
  }
  if (transports->empty()) absl::PrintF("  none\n");
  absl::PrintF("  %-12s %-12s %-16s %s\n", "transport", "device", "memory domain", "type");
  for (const ucx::UcxTransportInfo& transport : *transports) {
    absl::PrintF("  %-12s %-12s %-16s %s\n", transport.transport, transport.device,
                 transport.memory_domain, transport.device_type);
  }
  absl::PrintF("\n");
}

void PrintProviders() {
  absl::PrintF("zcoll transports that open here: %s\n", absl::StrJoin(AvailableProviders(), ", "));
  absl::StatusOr<ProviderChoice> choice = ProvidersFromEnvironment();
  if (choice.ok()) {
    absl::PrintF("  a job uses %s within a node and %s between nodes\n", choice->local,
                 choice->network);
  } else {
    absl::PrintF("  no usable choice: %s\n", choice.status().message());
  }
  absl::StatusOr<LinkModel> link = LinkModelFromEnvironment();
  if (!link.ok()) {
    absl::PrintF("  link model: %s\n", link.status().message());
  } else if (link->enabled()) {
    absl::PrintF("  traffic between nodes goes through a modelled link: %s\n", link->ToString());
  }
  absl::PrintF("\n");
}

// For ZCOLL_ALGO_<COLL>: whether it names an algorithm of its collective.
absl::Status CollectiveOfVariable(absl::string_view name) {
  for (size_t c = 0; c < kNumCollectives; ++c) {
    const Collective collective = static_cast<Collective>(c);
    if (name != absl::StrCat("ZCOLL_ALGO_", CollectiveEnvironmentSuffix(collective))) continue;
    return AlgorithmFromEnvironment(collective).status();
  }
  return absl::OkStatus();
}

void PrintEnvironment() {
  absl::PrintF("Environment variables (value in effect, default):\n");
  for (const EnvironmentVariable& variable : EnvironmentVariables()) {
    std::string value = EnvironmentValue(variable.name);
    // The job key is a secret: logs of zcoll_info must not leak it.
    if (absl::string_view(variable.name) == "ZCOLL_JOB_KEY" && !value.empty()) value = "(set)";
    // A value Create would refuse is marked, with what it accepts.
    std::string verdict;
    if (EnvironmentIsSet(variable.name)) {
      absl::Status status = CheckEnvironmentValue(variable, EnvironmentValue(variable.name));
      if (status.ok() && variable.form == Form::kAlgorithm) {
        status = CollectiveOfVariable(variable.name);
      }
      if (!status.ok()) {
        verdict =
            absl::StrCat("\n    INVALID (Communicator::Create refuses it): ", status.message());
      }
    }
    absl::PrintF("  %s=%s (default %s)%s\n    %s\n", variable.name, value, variable.default_value,
                 verdict, variable.description);
  }
}

// The collectives' algorithms and the selection table, in the table's order.
void PrintAlgorithms() {
  absl::PrintF("Collective algorithms (ZCOLL_ALGO_<COLL>=name forces one):\n");
  for (size_t c = 0; c < kNumCollectives; ++c) {
    const Collective collective = static_cast<Collective>(c);
    std::vector<absl::string_view> names;
    for (const Algorithm& algorithm : AllAlgorithms()) {
      if (algorithm.collective == collective) names.push_back(algorithm.name);
    }
    absl::PrintF("  %-21s %s\n", CollectiveName(collective), absl::StrJoin(names, ", "));
  }
  const absl::StatusOr<std::vector<SelectionRule>>& tuned = TuningFromEnvironment();
  if (!tuned.ok()) {
    absl::PrintF("\nTuning table: %s\n", tuned.status().message());
  } else if (!tuned->empty()) {
    absl::PrintF("\nTuning table (ZCOLL_TUNING=%s), tried before the selection table:\n",
                 EnvironmentValue("ZCOLL_TUNING"));
    for (const SelectionRule& rule : *tuned) absl::PrintF("  %s\n", FormatTuningRule(rule));
  }
  absl::PrintF("\nSelection table (the first rule that fits the call wins):\n");
  for (const SelectionRule& rule : SelectionTable()) {
    std::vector<std::string> limits;
    if (rule.max_bytes != std::numeric_limits<size_t>::max()) {
      limits.push_back(absl::StrCat("bytes <= ", rule.max_bytes));
    }
    if (rule.min_ranks > 1) limits.push_back(absl::StrCat("ranks >= ", rule.min_ranks));
    if (rule.max_ranks != std::numeric_limits<int>::max()) {
      limits.push_back(absl::StrCat("ranks <= ", rule.max_ranks));
    }
    if (rule.min_nodes > 1) limits.push_back(absl::StrCat("nodes >= ", rule.min_nodes));
    if (rule.min_bytes > 0) limits.push_back(absl::StrCat("bytes >= ", rule.min_bytes));
    if (rule.oversubscription == Oversubscription::kNotOversubscribed) {
      limits.push_back("node not oversubscribed");
    }
    if (rule.oversubscription == Oversubscription::kOversubscribed) {
      limits.push_back("node oversubscribed");
    }
    absl::PrintF("  %-21s %-19s %s\n", CollectiveName(rule.collective), rule.algorithm,
                 limits.empty() ? "otherwise" : absl::StrJoin(limits, ", "));
  }
  absl::PrintF("\n");
}

// Whether a process can read its parent's memory with process_vm_readv after the
// parent allowed any tracer, as the node engine's ranks do (siblings under a launcher
// then read each other's): a child probes this process.
std::string SingleCopyHere() {
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  static volatile uint64_t word = 0x7a636f6c6cULL;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return "unknown (fork failed)";
  if (child == 0) {
    uint64_t read = 0;
    iovec local{&read, sizeof(read)};
    iovec remote{const_cast<uint64_t*>(&word), sizeof(read)};
    const bool ok =
        process_vm_readv(parent, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof(read)) &&
        read == word;
    _exit(ok ? 0 : errno == EPERM ? 2 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return "unknown (the probe died)";
  if (WEXITSTATUS(status) == 0) return "yes";
  return WEXITSTATUS(status) == 2 ? "no (EPERM: a ptrace policy forbids it)" : "no";
}

void PrintNodeEngine() {
  absl::PrintF(
      "Node collectives (ZCOLL_NODE_ENGINE): one shared segment per communicator and node,\n"
      "  %s per rank for its slots plus a header page:\n",
      Bytes(2 * kNodeSlotBytes));
  std::vector<std::string> sizes;
  for (int ranks : {2, 4, 8, 16, 64}) {
    sizes.push_back(
        absl::StrCat(ranks, " ranks ", Bytes(NodeSegment::SegmentBytes(ranks, kNodeSlotBytes))));
  }
  absl::PrintF("  segment for %s\n", absl::StrJoin(sizes, ", "));
  // (Without it, node calls beyond a slot and the shm transport's messages beyond its
  // eager size copy through shared memory instead.)
  absl::PrintF(
      "  ranks read each other's memory (process_vm_readv: node calls beyond a slot, shm\n"
      "  messages beyond 8 KiB; else they copy through shared memory): %s%s\n",
      SingleCopyHere(),
      EnvironmentUnsigned("ZCOLL_CROSS_MEMORY_ATTACH") == 0
          ? "; not used: ZCOLL_CROSS_MEMORY_ATTACH=0"
          : "");
  const absl::Status fences = NodeSegment::RegisterAsymmetricFences();
  absl::PrintF(
      "  publications without a fence, a sleeping rank fencing for them (membarrier): %s%s\n\n",
      fences.ok() ? "yes" : absl::StrCat("no (", fences.message(), ")"),
      fences.ok() && EnvironmentUnsigned("ZCOLL_ASYMMETRIC_FENCES") == 0
          ? "; not used: ZCOLL_ASYMMETRIC_FENCES=0"
          : "");
}

constexpr char kUsage[] =
    "usage: zcoll_info [--algorithms | --version]\n"
    "Prints the zcoll version, this node's hardware (hwloc), the libfabric providers\n"
    "and UCX transports that open on this machine, and zcoll's environment variables.\n"
    "--algorithms: prints the collectives' algorithms and the selection table instead.\n";

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--help" || argument == "-h") {
      std::fputs(zcoll::kUsage, stdout);
      return 0;
    }
    if (argument == "--version") {
      absl::PrintF("zcoll_info %s\n", zcoll::kVersion);
      return 0;
    }
    if (argument == "--algorithms") {
      zcoll::PrintAlgorithms();
      return 0;
    }
    std::fprintf(stderr, "zcoll_info: unknown argument '%s'\n%s", argv[i], zcoll::kUsage);
    return 2;
  }
  absl::PrintF("zcoll %s\n\n", zcoll::kVersion);
  absl::PrintF("Reduction kernels: %s (best SIMD target of this CPU, chosen at run time)\n\n",
               zcoll::ReduceKernelTarget());
  zcoll::PrintNode();
  zcoll::PrintOfi();
  zcoll::PrintUcx();
  zcoll::PrintProviders();
  zcoll::PrintNodeEngine();
  zcoll::PrintEnvironment();
  return 0;
}
