#include "core/config.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"

namespace zcoll {
namespace {

// Keep sorted by name; README.md's "Environment variables" table mirrors this one
// (core/config_test.cc checks that every entry appears there).
constexpr EnvironmentVariable kEnvironmentVariables[] = {
    {"ZCOLL_ALGO_ALLGATHER", "",
     "Forces the allgather algorithm (node, linear, ring, bruck, node_levels); unset: the "
     "selection table "
     "(zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_ALLGATHERV", "",
     "Forces the allgatherv algorithm (node, linear, ring); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_ALLREDUCE", "",
     "Forces the allreduce algorithm (node, recursive_doubling, rabenseifner, two_level, "
     "node_levels); unset: "
     "the "
     "selection table (zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_ALLTOALL", "",
     "Forces the alltoall algorithm (node, pairwise, bruck); unset: the selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_ALLTOALLV", "",
     "Forces the alltoallv algorithm (node, pairwise); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_BARRIER", "",
     "Forces the barrier algorithm (node, dissemination, linear, node_levels); unset: the "
     "selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_BCAST", "",
     "Forces the bcast algorithm (node, binomial, chain, linear, scatter_allgather, two_level, "
     "node_levels); "
     "unset: "
     "the "
     "selection table (zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_EXSCAN", "",
     "Forces the exscan algorithm (node, recursive_doubling, chain); unset: the selection table "
     "(zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_GATHER", "",
     "Forces the gather algorithm (node, linear, binomial); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_GATHERV", "",
     "Forces the gatherv algorithm (node, linear); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_REDUCE", "",
     "Forces the reduce algorithm (node, binomial, knomial, rabenseifner, two_level, "
     "node_levels); unset: the "
     "selection table (zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_REDUCE_SCATTER", "",
     "Forces the reduce_scatter algorithm (node, pairwise, recursive_halving); unset: the "
     "selection "
     "table (zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_REDUCE_SCATTER_BLOCK", "",
     "Forces the reduce_scatter_block algorithm (node, pairwise, recursive_halving); unset: the "
     "selection table (zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_SCAN", "",
     "Forces the scan algorithm (node, recursive_doubling, chain); unset: the selection table "
     "(zcoll_info --algorithms prints it).",
     true},
    {"ZCOLL_ALGO_SCATTER", "",
     "Forces the scatter algorithm (node, linear, binomial); unset: the selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_ALGO_SCATTERV", "",
     "Forces the scatterv algorithm (node, linear); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true},
    {"ZCOLL_BOOTSTRAP", "auto",
     "How ranks meet: auto (PMIx when a PMIx launcher such as mpirun or srun started the "
     "process, else ZCOLL_STORE), pmix, or store."},
    {"ZCOLL_CHECK", "0",
     "1: every collective first exchanges a signature of its arguments (collective, count, type, "
     "op, root) and fails on every rank, naming the rank that differs, when they disagree.",
     true},
    {"ZCOLL_CHUNK_BYTES", "262144",
     "Bytes per chunk of the pipelined collective algorithms (unset, a 2-rank "
     "communicator sends each vector whole: it has nothing to pipeline).",
     true},
    {"ZCOLL_EMULATE_NODES", "",
     "Places the job's ranks on emulated nodes (zcoll_run --nodes sets it): a count K "
     "(ranks in even blocks) or node sizes like 3,1; unset: a node is a host.",
     true},
    {"ZCOLL_EMULATE_NUMA", "",
     "Splits each node's ranks into K emulated NUMA domains (and packages), in even blocks, "
     "as if each block were bound to its own socket; unset: hwloc's view of each rank's "
     "binding.",
     true},
    {"ZCOLL_JOB_KEY", "",
     "Secret a process presents to the job's TCP store; zcoll_run generates one. A "
     "process without it cannot join, read or write the job's rendezvous."},
    {"ZCOLL_LINK_GBITS", "0",
     "Bandwidth in Gbit/s of the modelled link between nodes (emulated clusters; "
     "transport/link_model.h); 0: not limited."},
    {"ZCOLL_LINK_LATENCY_US", "0",
     "Microseconds the modelled link between nodes adds to every send, put and get; 0 "
     "with ZCOLL_LINK_GBITS 0: no model."},
    {"ZCOLL_LOCAL_PROVIDER", "shm",
     "Transport between ranks of one node: shm (zcoll's own), or any ZCOLL_PROVIDER "
     "name, e.g. ofi:shm or ucx:posix,cma.",
     true},
    {"ZCOLL_LOG_LEVEL", "warning",
     "Least severe message printed to stderr: error, warning, info, debug or trace "
     "(or 0-4)."},
    {"ZCOLL_NODE_ENGINE", "1",
     "1: the ranks of a communicator that share one node run its collectives through a "
     "shared segment with no messages (node collectives); 0: by messages.",
     true},
    {"ZCOLL_OFI_MR_LOCAL", "0",
     "1: libfabric transports register every buffer and pass its descriptor even when "
     "the provider does not ask for it (FI_MR_LOCAL), as verbs and efa do; for tests."},
    {"ZCOLL_PROVIDER", "auto",
     "Transport between nodes: auto (fastest that opens: ofi:cxi, ofi:efa, ucx on "
     "RDMA, ofi:verbs, ucx:tcp, ofi:tcp), ofi, ofi:NAME, ucx or ucx:TLS; zcoll_info "
     "lists what opens here.",
     true},
    {"ZCOLL_RANK", "", "This process's rank in [0, ZCOLL_SIZE), set by the launcher."},
    {"ZCOLL_SIZE", "", "The number of ranks of the job, set by the launcher."},
    {"ZCOLL_STORE", "",
     "The job's rendezvous store: tcp://HOST:PORT (a TCP store, needs ZCOLL_JOB_KEY) or "
     "file:///DIR (a fresh directory on a filesystem all ranks share)."},
    {"ZCOLL_TIMEOUT", "120",
     "Seconds an operation of a communicator may take, Create included, unless the "
     "call gives its own limit; past it the operation fails with DeadlineExceeded."},
    {"ZCOLL_WAIT_SPIN_US", "20",
     "Microseconds a blocking wait polls before it starts yielding the core (0 when the "
     "job's ranks on this machine outnumber its cores, and then a wait also yields every "
     "4th idle poll from its start unless this is set)."},
    {"ZCOLL_WAIT_YIELD_US", "1000",
     "Microseconds a blocking wait then polls with sched_yield before it sleeps on the "
     "provider's wait object (100000 when the job's ranks on this machine outnumber its "
     "cores)."},
};

}  // namespace

absl::Span<const EnvironmentVariable> EnvironmentVariables() { return kEnvironmentVariables; }

std::string EnvironmentValue(absl::string_view name) {
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (variable.name != name) continue;
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::string(variable.default_value);
    return value;
  }
  // Logging depends on this file, so a broken invariant here reports by hand.
  std::fprintf(stderr,
               "zcoll: internal error: environment variable %.*s is read but not "
               "declared in core/config.cc\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

std::string JobWideSettings() {
  std::string settings;
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (!variable.job_wide) continue;
    // Unset differs from set to the default where being set matters (ZCOLL_CHUNK_BYTES).
    settings += std::string(variable.name) + "=" +
                (EnvironmentIsSet(variable.name) ? EnvironmentValue(variable.name) : "(unset)") +
                "\n";
  }
  return settings;
}

bool EnvironmentIsSet(absl::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  return value != nullptr && *value != '\0';
}

uint64_t EnvironmentUnsigned(absl::string_view name) {
  const std::string value = EnvironmentValue(name);
  uint64_t parsed = 0;
  if (absl::SimpleAtoi(value, &parsed)) return parsed;
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (variable.name != name) continue;
    std::fprintf(stderr, "zcoll: %.*s='%s' is not a non-negative integer; using %.*s\n",
                 static_cast<int>(name.size()), name.data(), value.c_str(),
                 static_cast<int>(variable.default_value.size()), variable.default_value.data());
    (void)absl::SimpleAtoi(variable.default_value, &parsed);
  }
  return parsed;
}

}  // namespace zcoll
