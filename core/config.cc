#include "core/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace zcoll {
namespace {

// Keep sorted by name; README.md's "Environment variables" table mirrors this one
// (core/config_test.cc checks that every entry appears there).
constexpr EnvironmentVariable kEnvironmentVariables[] = {
    {"ZCOLL_ALGO_ALLGATHER", "",
     "Forces the allgather algorithm (node, linear, ring, bruck, node_levels); unset: the "
     "selection table "
     "(zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_ALLGATHERV", "",
     "Forces the allgatherv algorithm (node, linear, ring); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_ALLREDUCE", "",
     "Forces the allreduce algorithm (node, recursive_doubling, rabenseifner, "
     "pipelined_rabenseifner, two_level, node_levels, node_stripes); unset: "
     "the "
     "selection table (zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_ALLTOALL", "",
     "Forces the alltoall algorithm (node, pairwise, bruck); unset: the selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_ALLTOALLV", "",
     "Forces the alltoallv algorithm (node, pairwise); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_BARRIER", "",
     "Forces the barrier algorithm (node, dissemination, linear, node_levels); unset: the "
     "selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_BCAST", "",
     "Forces the bcast algorithm (node, binomial, chain, linear, scatter_allgather, two_level, "
     "two_level_binary, "
     "node_levels); "
     "unset: "
     "the "
     "selection table (zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_EXSCAN", "",
     "Forces the exscan algorithm (node, recursive_doubling, chain); unset: the selection table "
     "(zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_GATHER", "",
     "Forces the gather algorithm (node, linear, binomial); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_GATHERV", "",
     "Forces the gatherv algorithm (node, linear); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_REDUCE", "",
     "Forces the reduce algorithm (node, binomial, knomial, rabenseifner, two_level, "
     "node_levels); unset: the "
     "selection table (zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_REDUCE_SCATTER", "",
     "Forces the reduce_scatter algorithm (node, pairwise, recursive_halving); unset: the "
     "selection "
     "table (zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_REDUCE_SCATTER_BLOCK", "",
     "Forces the reduce_scatter_block algorithm (node, pairwise, recursive_halving); unset: the "
     "selection table (zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_SCAN", "",
     "Forces the scan algorithm (node, recursive_doubling, chain); unset: the selection table "
     "(zcoll_info --algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_SCATTER", "",
     "Forces the scatter algorithm (node, linear, binomial); unset: the selection table "
     "(zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ALGO_SCATTERV", "",
     "Forces the scatterv algorithm (node, linear); unset: the selection table (zcoll_info "
     "--algorithms prints it).",
     true, Form::kAlgorithm},
    {"ZCOLL_ASYMMETRIC_FENCES", "1",
     "1: a node's ranks publish into their shared segment with plain stores where every "
     "rank could register for membarrier, a rank about to sleep making every CPU that runs "
     "one fence instead; 0: every publication is a sequentially consistent store (an "
     "exchange on x86), as where the kernel or a seccomp filter refuses the registration.",
     false, Form::kFlag},
    {"ZCOLL_BOOTSTRAP", "auto",
     "How ranks meet: auto (PMIx when a PMIx launcher such as mpirun or srun started the "
     "process, else ZCOLL_STORE), pmix, or store.",
     false, Form::kBootstrap},
    {"ZCOLL_CACHE_BYTES", "0",
     "Bytes of last-level cache the node engine assumes each rank has: an Allgather or "
     "Alltoall whose ranks' buffers outgrow it copies with streaming stores; 0: hwloc's "
     "figure for the cache above the rank's CPUs.",
     false, Form::kCount},
    {"ZCOLL_CHECK", "0",
     "1: every collective first exchanges a signature of its arguments (collective, count, type, "
     "op, root) and fails on every rank, naming the rank that differs, when they disagree.",
     true, Form::kFlag},
    {"ZCOLL_CHUNK_BYTES", "262144",
     "Bytes per chunk of the pipelined collective algorithms (unset, a 2-rank "
     "communicator sends each vector whole: it has nothing to pipeline).",
     true, Form::kCount},
    {"ZCOLL_CORES", "0",
     "Cores a machine gives the job: its ranks there beyond them oversubscribe it (waits "
     "then yield at once, the node engine keeps to its one-wait paths, and across nodes "
     "the selection table keeps to the choices measured on such a machine); 0: the cores "
     "online, which a CPU quota does not lower.",
     false, Form::kCount},
    {"ZCOLL_CROSS_MEMORY_ATTACH", "1",
     "1: ranks of a node read and write each other's memory (process_vm_readv/writev) "
     "where the system permits it: node collectives beyond a slot, the shm transport's "
     "messages beyond 8 KiB, its puts and gets; 0: never, as where it does not: they "
     "copy through shared memory (a Bcast through the node slots at every size, other "
     "node calls beyond a slot by messages).",
     true, Form::kFlag},
    {"ZCOLL_EMULATE_L3", "",
     "Splits each NUMA domain's ranks (each node's, where domains are unknown) into K "
     "emulated L3 groups, in even blocks, as if each block shared a last-level cache; "
     "unset: hwloc's view of each rank's binding.",
     true, Form::kPositiveCount},
    {"ZCOLL_EMULATE_NODES", "",
     "Places the job's ranks on emulated nodes (zcoll_run --nodes sets it): a count K "
     "(ranks in even blocks) or node sizes like 3,1; unset: a node is a host.",
     true, Form::kNodeSizes},
    {"ZCOLL_EMULATE_NUMA", "",
     "Splits each node's ranks into K emulated NUMA domains (and packages), in even blocks, "
     "as if each block were bound to its own socket; unset: hwloc's view of each rank's "
     "binding.",
     true, Form::kPositiveCount},
    {"ZCOLL_JOB_KEY", "",
     "Secret a process presents to the job's TCP store; zcoll_run generates one. A "
     "process without it cannot join, read or write the job's rendezvous.",
     false, Form::kText},
    {"ZCOLL_LINK_GBITS", "0",
     "Bandwidth in Gbit/s of the modelled link between nodes (emulated clusters; "
     "transport/link_model.h); 0: not limited.",
     false, Form::kNumber},
    {"ZCOLL_LINK_LATENCY_US", "0",
     "Microseconds the modelled link between nodes adds to every send, put and get; 0 "
     "with ZCOLL_LINK_GBITS 0: no model.",
     false, Form::kNumber},
    {"ZCOLL_LOCAL_PROVIDER", "shm",
     "Transport between ranks of one node: shm (zcoll's own), or any ZCOLL_PROVIDER "
     "name, e.g. ofi:shm or ucx:posix,cma.",
     true, Form::kLocalProvider},
    {"ZCOLL_LOG_LEVEL", "warning",
     "Least severe message printed to stderr: error, warning, info, debug or trace "
     "(or 0-4).",
     false, Form::kLogLevel},
    {"ZCOLL_NODE_ENGINE", "1",
     "1: the ranks of a communicator that share one node run its collectives through a "
     "shared segment with no messages (node collectives); 0: by messages.",
     true, Form::kFlag},
    {"ZCOLL_OFI_MR_LOCAL", "0",
     "1: libfabric transports register every buffer and pass its descriptor even when "
     "the provider does not ask for it (FI_MR_LOCAL), as verbs and efa do; for tests.",
     false, Form::kFlag},
    {"ZCOLL_PROVIDER", "auto",
     "Transport between nodes: auto (fastest that opens: ofi:cxi, ofi:efa, ucx on "
     "RDMA, ofi:verbs, ucx:tcp, ofi:tcp), ofi, ofi:NAME, ucx or ucx:TLS; zcoll_info "
     "lists what opens here. A job on one node opens none and does not look for one.",
     true, Form::kNetworkProvider},
    {"ZCOLL_RANK", "", "This process's rank in [0, ZCOLL_SIZE), set by the launcher.", false,
     Form::kCount},
    {"ZCOLL_SIZE", "", "The number of ranks of the job, set by the launcher.", false,
     Form::kPositiveCount},
    {"ZCOLL_SPREAD_RANKS", "1",
     "1: where a machine's ranks outnumber the CPUs a rank may run on, Communicator::Create "
     "moves each rank once onto a CPU of its own turn (its place among the machine's ranks, "
     "modulo the CPUs) and gives it back the affinity it had, so that the scheduler starts "
     "from an even spread; 0: zcoll never touches a rank's CPU placement.",
     false, Form::kFlag},
    {"ZCOLL_STORE", "",
     "The job's rendezvous store: tcp://HOST:PORT (a TCP store, needs ZCOLL_JOB_KEY) or "
     "file:///DIR (a fresh directory on a filesystem all ranks share).",
     false, Form::kStore},
    {"ZCOLL_TIMEOUT", "120",
     "How long an operation of a communicator may take, Create included, unless the "
     "call gives its own limit: seconds (120, 0.5) or with a unit (10s, 500ms, 2m); past "
     "it the operation fails with DeadlineExceeded naming this limit.",
     false, Form::kDuration},
    {"ZCOLL_TUNING", "",
     "A tuning table file whose rules are tried before the built-in selection table's "
     "(zcoll_sim --table derives one from a machine profile); the files may differ in "
     "path but every rank must read the same rules (Create compares them); unset: the "
     "built-in table alone.",
     false, Form::kText},
    {"ZCOLL_WAIT_SPIN_US", "20",
     "Microseconds a blocking wait polls before it starts yielding the core (0 when the "
     "job's ranks on this machine outnumber its cores, and then a wait also yields every "
     "4th idle poll from its start unless this is set).",
     false, Form::kCount},
    {"ZCOLL_WAIT_YIELD_US", "1000",
     "Microseconds a blocking wait then polls with sched_yield before it sleeps on the "
     "provider's wait object (100000 when the job's ranks on this machine outnumber its "
     "cores).",
     false, Form::kCount},
};

// The declaration of `name`. A name that is not declared is a bug in zcoll; logging
// depends on this file, so that is reported by hand.
const EnvironmentVariable& Declared(absl::string_view name) {
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (variable.name == name) return variable;
  }
  std::fprintf(stderr,
               "zcoll: internal error: environment variable %.*s is read but not "
               "declared in core/config.cc\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

bool IsWholeNumber(absl::string_view text, uint64_t minimum) {
  uint64_t value = 0;
  // (SimpleAtoi takes "+5" and " 5"; a setting is digits only.)
  return !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit) &&
         absl::SimpleAtoi(text, &value) && value >= minimum;
}

bool IsOneOf(absl::string_view text, std::initializer_list<absl::string_view> choices) {
  return std::find(choices.begin(), choices.end(), text) != choices.end();
}

// ofi, ofi:NAME, ucx, ucx:TLS (and shm for the local role): the transports'
// spellings. Whether the provider opens here is the transport factory's question.
bool IsProviderName(absl::string_view text) {
  if (IsOneOf(text, {"ofi", "ucx"})) return true;
  for (absl::string_view family : {"ofi:", "ucx:"}) {
    absl::string_view rest = text;
    if (absl::ConsumePrefix(&rest, family)) {
      return !rest.empty() && std::none_of(rest.begin(), rest.end(), [](char c) {
        return absl::ascii_isspace(static_cast<unsigned char>(c)) || c == ':';
      });
    }
  }
  return false;
}

bool IsAccepted(Form form, absl::string_view value) {
  switch (form) {
    case Form::kText:
    case Form::kAlgorithm:
      return true;
    case Form::kFlag:
      return IsOneOf(value, {"0", "1"});
    case Form::kCount:
      return IsWholeNumber(value, 0);
    case Form::kPositiveCount:
      return IsWholeNumber(value, 1);
    case Form::kNumber: {
      double number = 0;
      return absl::SimpleAtod(value, &number) && number >= 0 && std::isfinite(number) &&
             !absl::StartsWith(value, "+");
    }
    case Form::kDuration:
      return ParsePositiveDuration(value).ok();
    case Form::kNodeSizes: {
      for (absl::string_view size : absl::StrSplit(value, ',')) {
        if (!IsWholeNumber(size, 1)) return false;
      }
      return true;
    }
    case Form::kLogLevel:
      return IsOneOf(value,
                     {"error", "warning", "info", "debug", "trace", "0", "1", "2", "3", "4"});
    case Form::kBootstrap:
      return IsOneOf(value, {"auto", "pmix", "store"});
    case Form::kStore: {
      absl::string_view rest = value;
      if (absl::ConsumePrefix(&rest, "file://")) return absl::StartsWith(rest, "/");
      if (!absl::ConsumePrefix(&rest, "tcp://")) return false;
      const size_t colon = rest.rfind(':');
      return colon != absl::string_view::npos && colon > 0 &&
             IsWholeNumber(rest.substr(colon + 1), 1);
    }
    case Form::kNetworkProvider:
      return value == "auto" || IsProviderName(value);
    case Form::kLocalProvider:
      return value == "shm" || IsProviderName(value);
  }
  return false;
}

}  // namespace

absl::string_view AcceptedForms(Form form) {
  switch (form) {
    case Form::kText:
      return "any text";
    case Form::kAlgorithm:
      return "an algorithm's name (zcoll_info --algorithms lists them)";
    case Form::kFlag:
      return "0 or 1";
    case Form::kCount:
      return "a whole number, 0 or more";
    case Form::kPositiveCount:
      return "a whole number, 1 or more";
    case Form::kNumber:
      return "a number, 0 or more (like 2.5)";
    case Form::kDuration:
      return "a positive number of seconds (120, 0.5) or a duration with its unit (10s, 500ms, "
             "2m, 1h)";
    case Form::kNodeSizes:
      return "a count of nodes K, or the nodes' sizes like 3,1";
    case Form::kLogLevel:
      return "error, warning, info, debug, trace, or 0-4";
    case Form::kBootstrap:
      return "auto, pmix or store";
    case Form::kStore:
      return "tcp://HOST:PORT or file:///DIR";
    case Form::kNetworkProvider:
      return "auto, ofi, ofi:NAME (ofi:tcp, ofi:verbs, ...), ucx or ucx:TLS (ucx:tcp, "
             "ucx:rc, ...)";
    case Form::kLocalProvider:
      return "shm, ofi, ofi:NAME (ofi:shm, ...), ucx or ucx:TLS (ucx:posix,cma, ...)";
  }
  return "";
}

absl::StatusOr<absl::Duration> ParsePositiveDuration(absl::string_view text) {
  // A plain number is seconds; anything else must be absl::ParseDuration's (10s,
  // 500ms). Either way it starts with a digit or a point: no sign, no "inf".
  double seconds = 0;
  absl::Duration duration;
  const bool starts_well =
      !text.empty() && (absl::ascii_isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.');
  if (starts_well && absl::SimpleAtod(text, &seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!starts_well || !absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not ", AcceptedForms(Form::kDuration)));
  }
  if (duration <= absl::ZeroDuration() || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a positive, finite duration"));
  }
  return duration;
}

absl::Status CheckEnvironmentValue(const EnvironmentVariable& variable, absl::string_view value) {
  // (Spaces around a value are a shell quoting slip; no form but text has them.)
  const bool padded = value != absl::StripAsciiWhitespace(value);
  if ((variable.form == Form::kText || !padded) && IsAccepted(variable.form, value)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      variable.name, "='", value, "' is not accepted; it is ", AcceptedForms(variable.form)));
}

absl::Status CheckEnvironment() {
  std::vector<std::string> problems;
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (!EnvironmentIsSet(variable.name)) continue;
    absl::Status status = CheckEnvironmentValue(variable, EnvironmentValue(variable.name));
    if (!status.ok()) problems.emplace_back(status.message());
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

absl::Span<const EnvironmentVariable> EnvironmentVariables() { return kEnvironmentVariables; }

std::string EnvironmentValue(absl::string_view name) {
  const EnvironmentVariable& variable = Declared(name);
  // (The declared name is a string literal, so its data is NUL-terminated.)
  const char* value = std::getenv(variable.name.data());
  if (value == nullptr || *value == '\0') return std::string(variable.default_value);
  return value;
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

absl::Duration EnvironmentDuration(absl::string_view name) {
  absl::StatusOr<absl::Duration> parsed = ParsePositiveDuration(EnvironmentValue(name));
  return parsed.ok() ? *parsed : ParsePositiveDuration(Declared(name).default_value).value();
}

uint64_t EnvironmentUnsigned(absl::string_view name) {
  const std::string value = EnvironmentValue(name);
  uint64_t parsed = 0;
  if (absl::SimpleAtoi(value, &parsed)) return parsed;
  const absl::string_view fallback = Declared(name).default_value;
  std::fprintf(stderr, "zcoll: %.*s='%s' is not a non-negative integer; using %.*s\n",
               static_cast<int>(name.size()), name.data(), value.c_str(),
               static_cast<int>(fallback.size()), fallback.data());
  (void)absl::SimpleAtoi(fallback, &parsed);
  return parsed;
}

}  // namespace zcoll
