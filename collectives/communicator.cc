#include "collectives/communicator.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collectives/communicator_state.h"
#include "collectives/communicator_transport.h"
#include "collectives/control_records.h"
#include "collectives/selection.h"
#include "collectives/shared_buffers.h"
#include "collectives/topology_discovery.h"
#include "core/config.h"
#include "core/status_macros.h"
#include "transport/transport_factory.h"

namespace zcoll {

namespace {

absl::Status WithRank(int rank, const absl::Status& status) {
  if (status.ok() || absl::StartsWith(status.message(), "rank ")) return status;
  return absl::Status(status.code(), absl::StrCat("rank ", rank, ": ", status.message()));
}

struct Placement {
  // Where every rank runs: its node (blocks of emulated nodes, or one node per distinct
  // host name, numbered in order of the lowest rank on each) and the package and NUMA
  // domain its CPU binding lies in (hwloc).
  Topology topology;
  // The job's ranks on this rank's host, emulated nodes or not: they share its cores.
  int ranks_on_this_host = 1;
  // This rank's place among them, in rank order (SpreadOverCpus).
  int place_on_this_host = 0;
  // Some host's ranks outnumber its cores (every rank's record counted, so every rank
  // finds the same): SelectionInputs::hosts_oversubscribed.
  bool hosts_oversubscribed = false;
};

// The first setting of `mine` that `theirs` gives another value (lines of
// "NAME=value"): "NAME=mine" and "NAME=theirs".
std::pair<std::string, std::string> FirstDifference(absl::string_view mine,
                                                    absl::string_view theirs) {
  const std::vector<absl::string_view> a = absl::StrSplit(mine, '\n');
  const std::vector<absl::string_view> b = absl::StrSplit(theirs, '\n');
  for (size_t i = 0; i < a.size() || i < b.size(); ++i) {
    const absl::string_view x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x != y) return {std::string(x), std::string(y)};
  }
  return {"", ""};
}

// Places each node's ranks in `domains` emulated NUMA domains (and packages) in even
// blocks: local rank i of n in domain i*domains/n.
std::vector<RankLocation> WithEmulatedNuma(const Topology& topology, int domains) {
  std::vector<RankLocation> locations;
  for (int rank = 0; rank < topology.size(); ++rank) {
    RankLocation location = topology.location(rank);
    const int64_t ranks_here = topology.ranks_on_node(location.node).size();
    location.numa = static_cast<int>(topology.local_rank(rank) * int64_t{domains} / ranks_here);
    location.package = location.numa;
    locations.push_back(location);
  }
  return locations;
}

// Splits each NUMA domain's ranks (each node's, where domains are unknown) into `groups`
// emulated L3 groups in even blocks: the domain's i-th rank of n in group i*groups/n,
// numbered across the node's domains.
std::vector<RankLocation> WithEmulatedL3(const Topology& topology, int groups) {
  std::map<std::pair<int, int>, int64_t> in_domain, seen;
  for (int rank = 0; rank < topology.size(); ++rank) {
    ++in_domain[{topology.node_of(rank), topology.location(rank).numa}];
  }
  std::vector<RankLocation> locations;
  for (int rank = 0; rank < topology.size(); ++rank) {
    RankLocation location = topology.location(rank);
    const std::pair<int, int> domain{location.node, location.numa};
    const int64_t index = seen[domain]++;
    location.l3 = static_cast<int>(std::max(location.numa, 0) * int64_t{groups} +
                                   index * groups / in_domain[domain]);
    locations.push_back(location);
  }
  return locations;
}

// A count of emulated groups from its CommunicatorOptions field (`option`, 0: unset)
// or environment variable; `problem` gets a sentence if it is not 1 or more.
int EmulatedGroups(int option, absl::string_view option_name, absl::string_view variable,
                   absl::string_view what, std::string& setting, std::string& problem) {
  setting = option != 0 ? absl::StrCat(option) : EnvironmentValue(variable);
  int groups = 0;
  if (!setting.empty() && problem.empty() && (!absl::SimpleAtoi(setting, &groups) || groups < 1)) {
    problem = absl::StrCat(option != 0 ? option_name : variable, " is '", setting, "'; it is a ",
                           what, ", 1 or more");
  }
  return groups;
}

// `problem`: what is wrong with this rank's settings (empty: nothing).
absl::StatusOr<Placement> DiscoverPlacement(Bootstrap& bootstrap, int emulated_nodes,
                                            int emulated_numa, int emulated_l3, std::string problem,
                                            absl::Time deadline) {
  const int size = bootstrap.size();
  const std::string emulated =
      emulated_nodes != 0 ? absl::StrCat(emulated_nodes) : EnvironmentValue("ZCOLL_EMULATE_NODES");
  std::optional<Topology> emulated_topology;
  // A problem of this rank's own is still told to every rank in the exchange below, so
  // that they all fail at once rather than at the deadline.
  if (!emulated.empty() && problem.empty()) {
    absl::StatusOr<Topology> described = Topology::Emulated(emulated, size);
    if (described.ok()) {
      emulated_topology = std::move(*described);
    } else {
      problem = absl::StrCat(
          emulated_nodes != 0 ? "CommunicatorOptions::emulated_nodes: " : "ZCOLL_EMULATE_NODES: ",
          described.status().message());
    }
  }
  std::string numa_setting, l3_setting;
  const int numa_domains =
      EmulatedGroups(emulated_numa, "CommunicatorOptions::emulated_numa_domains",
                     "ZCOLL_EMULATE_NUMA", "count of NUMA domains per node", numa_setting, problem);
  const int l3_groups =
      EmulatedGroups(emulated_l3, "CommunicatorOptions::emulated_l3_groups", "ZCOLL_EMULATE_L3",
                     "count of L3 groups per NUMA domain", l3_setting, problem);
  // What every rank must see alike (algorithms, chunks, transports, placement, the
  // tuning table's rules, by hash: its files may have different paths).
  const absl::StatusOr<std::vector<SelectionRule>>& tuned = TuningFromEnvironment();
  const std::string settings = absl::StrCat(
      JobWideSettings(), "emulated nodes=", emulated, "\nemulated NUMA domains=", numa_setting,
      "\nemulated L3 groups=", l3_setting, "\nZCOLL_TUNING's rules=",
      tuned.ok() ? absl::StrCat(tuned->size(), " with hash ", absl::Hex(TuningFingerprint(*tuned)))
                 : "(unreadable)");
  // Without hwloc's view the ids stay unknown; that only costs algorithms a hint.
  const RankLocation binding = DiscoverProcessPlacement().value_or(RankLocation{});
  char system_host[256] = {};
  gethostname(system_host, sizeof(system_host) - 1);
  const std::string host = bootstrap.host_name().value_or(system_host);
  absl::StatusOr<std::vector<std::string>> entries =
      bootstrap.AllGather(EncodeJoinRecord({.problem = problem,
                                            .package = binding.package,
                                            .numa = binding.numa,
                                            .l3 = binding.l3,
                                            .settings = settings,
                                            .host = host,
                                            .cores = CoresOfThisMachine()}),
                          deadline);
  if (!entries.ok()) return entries.status();
  if (!problem.empty()) return absl::InvalidArgumentError(problem);
  std::vector<JoinRecord> records;
  for (int rank = 0; rank < size; ++rank) {
    absl::StatusOr<JoinRecord> record = ParseJoinRecord((*entries)[rank]);
    if (!record.ok()) {
      return absl::InternalError(absl::StrCat("rank ", bootstrap.rank(), ": rank ", rank, " sent ",
                                              record.status().message()));
    }
    if (!record->problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", bootstrap.rank(), ": rank ", rank,
                                                     " cannot join: ", record->problem));
    }
    records.push_back(std::move(*record));
  }
  std::vector<RankLocation> locations(size);
  std::vector<std::string> names;
  std::map<std::string, int> node_of_host;
  // Each host's ranks and the fewest cores any of them counted there.
  std::map<std::string, std::pair<int, int>> ranks_and_cores_of_host;
  for (int rank = 0; rank < size; ++rank) {
    const JoinRecord& record = records[rank];
    RankLocation& location = locations[rank];
    location.package = record.package;
    location.numa = record.numa;
    location.l3 = record.l3;
    if (const std::string& theirs = record.settings; theirs != settings) {
      const auto [in_mine, in_theirs] = FirstDifference(settings, theirs);
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", bootstrap.rank(), ": this rank has ", in_mine, " but rank ", rank,
                       " has ", in_theirs,
                       "; every rank of a job must set it alike (it decides what the ranks must "
                       "agree on)"));
    }
    auto [of_host, first] =
        ranks_and_cores_of_host.emplace(record.host, std::pair{0, record.cores});
    ++of_host->second.first;
    if (!first) of_host->second.second = std::min(of_host->second.second, record.cores);
    if (emulated_topology.has_value()) {
      location.node = emulated_topology->node_of(rank);
    } else {
      auto [entry, added] = node_of_host.emplace(record.host, static_cast<int>(names.size()));
      if (added) names.push_back(record.host);
      location.node = entry->second;
    }
  }
  if (emulated_topology.has_value()) {
    for (int node = 0; node < emulated_topology->num_nodes(); ++node) {
      names.push_back(absl::StrCat("emulated", node));
    }
  }
  absl::StatusOr<Topology> topology = Topology::Create(std::move(locations), names);
  if (!topology.ok()) return topology.status();
  if (numa_domains > 0) {
    topology = Topology::Create(WithEmulatedNuma(*topology, numa_domains), names);
    if (!topology.ok()) return topology.status();
  }
  if (l3_groups > 0) {
    topology = Topology::Create(WithEmulatedL3(*topology, l3_groups), names);
    if (!topology.ok()) return topology.status();
  }
  bool hosts_oversubscribed = false;
  for (const auto& [name, ranks_and_cores] : ranks_and_cores_of_host) {
    const auto [ranks, cores] = ranks_and_cores;
    hosts_oversubscribed = hosts_oversubscribed || (cores > 0 && ranks > cores);
  }
  int place_on_this_host = 0;
  for (int rank = 0; rank < bootstrap.rank(); ++rank) {
    if (records[rank].host == host) ++place_on_this_host;
  }
  return Placement{std::move(*topology), ranks_and_cores_of_host[host].first, place_on_this_host,
                   hosts_oversubscribed};
}

// The topology of `members` (ranks of `parent`, in their new order): nodes renumbered
// in order of first appearance, names kept.
absl::StatusOr<Topology> RestrictTopology(const Topology& parent, absl::Span<const int> members) {
  std::vector<RankLocation> locations;
  std::vector<std::string> names;
  std::map<int, int> new_node;
  for (int member : members) {
    RankLocation location = parent.location(member);
    auto [entry, added] = new_node.emplace(location.node, static_cast<int>(names.size()));
    if (added) names.emplace_back(parent.node_name(location.node));
    location.node = entry->second;
    locations.push_back(location);
  }
  return Topology::Create(std::move(locations), std::move(names));
}

enum SplitProblem : uint32_t { kNoProblem = 0, kBadColor = 1, kNoContext = 2, kNotMember = 3 };

// A group's members in order, hashed (FNV-1a), so that ranks can compare the groups
// they passed by exchanging a word.
uint64_t HashMembers(absl::Span<const int> job_ranks) {
  uint64_t hash = 1469598103934665603ull;
  for (int member : job_ranks) hash = (hash ^ static_cast<uint32_t>(member)) * 1099511628211ull;
  return hash ^ job_ranks.size();
}

// The ranks of `transport` that `group`'s members are, in the group's order; for a
// member that is none, its job rank in `missing`.
std::vector<int> RanksOfGroup(const CommunicatorTransport& transport, const Group& group,
                              int* missing) {
  std::map<int, int> rank_of_job_rank;
  for (int r = 0; r < transport.size(); ++r) rank_of_job_rank[transport.job_rank(r)] = r;
  std::vector<int> ranks;
  for (int member : group.job_ranks()) {
    const auto found = rank_of_job_rank.find(member);
    if (found == rank_of_job_rank.end()) {
      *missing = member;
      return {};
    }
    ranks.push_back(found->second);
  }
  return ranks;
}

// What a moved-from Communicator's transport() is: every operation refused.
class MovedFromTransport final : public Transport {
 public:
  MovedFromTransport() : Transport(-1, 0) {}
  absl::string_view provider_name() const override { return "none (moved from)"; }
  const std::string& address() const override { return address_; }
  absl::Status Connect(absl::Span<const std::string>) override { return MovedFromError("Connect"); }
  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void*, size_t,
                                                               MemoryAccess) override {
    return MovedFromError("RegisterMemory");
  }
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int, absl::string_view) override {
    return MovedFromError("ImportRegion");
  }
  absl::Status PostSend(int, uint64_t, const void*, size_t, Completion*, const MemoryRegion*,
                        uint32_t) override {
    return MovedFromError("PostSend");
  }
  absl::Status PostRecv(int, uint64_t, void*, size_t, Completion*, const MemoryRegion*) override {
    return MovedFromError("PostRecv");
  }
  absl::Status PostNotifyRecv(int, uint64_t, Completion*) override {
    return MovedFromError("PostNotifyRecv");
  }
  absl::Status Progress() override { return MovedFromError("Progress"); }

 protected:
  absl::Status PostOneSided(MemoryAccess access, void*, size_t, const RemoteRegion&, size_t,
                            uint64_t, Completion*, const MemoryRegion*) override {
    return MovedFromError(OneSidedName(access));
  }
  void Sleep(absl::Duration) override {}
  void OnFreeze(absl::Time) override {}

 private:
  std::string address_;
};

}  // namespace

// One rank's contribution to Split and Create(group).
struct Communicator::SplitRecord {
  int32_t color;
  int32_t key;
  uint32_t context;  // kMaxContexts: none
  uint32_t problem;  // SplitProblem
  // Create(group): the group this rank passed (a hash of its members in order, and
  // their number; 0 for the empty group and for Split), and the rank here of its first
  // member (-1: empty). For kNotMember: the job rank that is not a rank here.
  uint64_t group_hash;
  int32_t group_size;
  int32_t group_first;
};
absl::Status MovedFromError(absl::string_view operation) {
  return absl::FailedPreconditionError(
      absl::StrCat(operation, ": this Communicator was moved from; use the one it was moved to"));
}

Communicator::Communicator(std::unique_ptr<State> state) : state_(std::move(state)) {
  // Plain nanoseconds while they fit (absl's Time arithmetic is out of line).
  constexpr absl::Duration kLongest = absl::Hours(24 * 365 * 100);
  state_->timeout_ns = state_->timeout >= kLongest ? -1 : absl::ToInt64Nanoseconds(state_->timeout);
  for (size_t c = 0; c < kNumCollectives; ++c) {
    const absl::StatusOr<const Algorithm*>& named =
        AlgorithmFromEnvironment(static_cast<Collective>(c));
    state_->from_environment[c] = named.ok() ? *named : nullptr;
  }
}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

int Communicator::rank() const { return state_ != nullptr ? state_->transport->rank() : -1; }
int Communicator::size() const { return state_ != nullptr ? state_->transport->size() : 0; }
const Topology& Communicator::topology() const {
  static const Topology* const none = new Topology();
  return state_ != nullptr ? state_->topology : *none;
}
size_t Communicator::node_segment_bytes() const {
  return state_ != nullptr && state_->node != nullptr ? state_->node->segment().bytes() : 0;
}
absl::StatusOr<void*> Communicator::AllocateBuffer(size_t bytes) {
  return AllocateSharedBuffer(bytes);
}

absl::Status Communicator::FreeBuffer(void* data) { return FreeSharedBuffer(data); }

bool Communicator::node_single_copy() const {
  return state_ != nullptr && state_->node != nullptr && state_->node->single_copy();
}

bool Communicator::node_asymmetric_fences() const {
  return state_ != nullptr && state_->node != nullptr && state_->node->asymmetric_fences();
}
absl::Duration Communicator::timeout() const {
  return state_ != nullptr ? state_->timeout : absl::ZeroDuration();
}

absl::Time Communicator::DefaultDeadline() const {
  if (state_ == nullptr) return absl::InfiniteFuture();
  return DeadlineAfterTimeout(*state_);
}

absl::Time Communicator::DeadlineAfterTimeout(const State& state) {
  if (state.timeout_ns < 0) return absl::InfiniteFuture();
  timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return absl::FromUnixNanos(int64_t{now.tv_sec} * 1000000000 + now.tv_nsec + state.timeout_ns);
}
Transport& Communicator::transport() {
  static Transport* const none = new MovedFromTransport();
  if (state_ == nullptr) return *none;
  return *state_->transport;
}

namespace {
InternalTag ChannelTag(Communicator::MessageChannel channel) {
  return channel == Communicator::MessageChannel::kEnvelope ? InternalTag::kMessageEnvelope
                                                            : InternalTag::kMessagePayload;
}
}  // namespace

absl::Status Communicator::PostChannelSend(int peer, MessageChannel channel, const void* data,
                                           size_t bytes, Completion* completion) {
  if (state_ == nullptr) return MovedFromError("PostChannelSend");
  return state_->transport->PostInternalSend(peer, ChannelTag(channel), data, bytes, completion);
}

absl::Status Communicator::PostChannelRecv(int peer, MessageChannel channel, void* data,
                                           size_t bytes, Completion* completion) {
  if (state_ == nullptr) return MovedFromError("PostChannelRecv");
  return state_->transport->PostInternalRecv(peer, ChannelTag(channel), data, bytes, completion);
}

absl::StatusOr<Communicator> Communicator::Create(CommunicatorOptions options) {
  // The settings are checked before anything waits on them. A rank with a bad one
  // still joins (DiscoverPlacement tells every rank its problem), so that all fail at
  // once naming it instead of waiting for it until the deadline.
  std::string problem;
  if (absl::Status settings = CheckEnvironment(); !settings.ok()) {
    problem = std::string(settings.message());
  }
  for (size_t c = 0; c < kNumCollectives; ++c) {
    const absl::StatusOr<const Algorithm*>& forced =
        AlgorithmFromEnvironment(static_cast<Collective>(c));
    if (!forced.ok()) {
      absl::StrAppend(&problem, problem.empty() ? "" : "; ", forced.status().message());
    }
  }
  if (const absl::StatusOr<std::vector<SelectionRule>>& tuned = TuningFromEnvironment();
      !tuned.ok()) {
    absl::StrAppend(&problem, problem.empty() ? "" : "; ", tuned.status().message());
  }
  absl::Duration timeout = options.timeout;
  const char* timeout_source = "CommunicatorOptions::timeout";
  if (timeout <= absl::ZeroDuration()) {
    timeout = EnvironmentDuration("ZCOLL_TIMEOUT");
    timeout_source = "ZCOLL_TIMEOUT";
  }
  absl::StatusOr<Communicator> made =
      CreateWithin(std::move(options), timeout, timeout_source, problem);
  if (!made.ok() && absl::IsDeadlineExceeded(made.status())) {
    return absl::Status(
        made.status().code(),
        absl::StrCat(made.status().message(), " (Create's limit: ", absl::FormatDuration(timeout),
                     ", from ", timeout_source, ")"));
  }
  return made;
}

absl::StatusOr<Communicator> Communicator::CreateWithin(CommunicatorOptions options,
                                                        absl::Duration timeout,
                                                        const char* timeout_source,
                                                        const std::string& problem) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_ptr<Bootstrap> bootstrap = std::move(options.bootstrap);
  if (bootstrap == nullptr) {
    absl::StatusOr<std::unique_ptr<Bootstrap>> made = BootstrapFromEnvironment(deadline);
    // (Without a bootstrap the others cannot be told; the settings' problem is likely
    // the cause of the bootstrap's, so it comes first.)
    if (!made.ok() && !problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(problem, "; ", made.status().message()));
    }
    ASSIGN_OR_RETURN(bootstrap, std::move(made));
  }
  const int rank = bootstrap->rank(), size = bootstrap->size();
  absl::StatusOr<Placement> placement =
      DiscoverPlacement(*bootstrap, options.emulated_nodes, options.emulated_numa_domains,
                        options.emulated_l3_groups, problem, deadline);
  if (!placement.ok()) return WithRank(rank, placement.status());
  SetRanksOnThisMachine(placement->ranks_on_this_host);
  Topology& topology = placement->topology;
  std::vector<int> node_of_rank(size);
  for (int r = 0; r < size; ++r) node_of_rank[r] = topology.node_of(r);
  absl::StatusOr<std::unique_ptr<Transport>> transport = std::move(options.transport);
  if (*transport == nullptr) {
    transport = CreateJobTransport(rank, size, std::move(node_of_rank));
  } else if ((*transport)->rank() != rank || (*transport)->size() != size) {
    transport = absl::InvalidArgumentError(
        absl::StrCat("CommunicatorOptions::transport is rank ", (*transport)->rank(), " of ",
                     (*transport)->size(), " but the bootstrap says rank ", rank, " of ", size));
  }
  // Every rank takes part in the address exchange even when its transport failed, so
  // that the others learn of the failure at once instead of at the deadline.
  const std::string entry = EncodeAddressEntry(
      transport.ok() ? absl::StatusOr<std::string>((*transport)->address()) : transport.status());
  absl::StatusOr<std::vector<std::string>> entries = bootstrap->AllGather(entry, deadline);
  if (!transport.ok()) return WithRank(rank, transport.status());
  if (!entries.ok()) return WithRank(rank, entries.status());
  std::vector<std::string> addresses(size);
  for (int peer = 0; peer < size; ++peer) {
    absl::StatusOr<std::string> address = ParseAddressEntry((*entries)[peer]);
    if (!address.ok()) {
      return absl::UnavailableError(
          absl::StrCat("rank ", rank, ": rank ", peer,
                       " could not create its transport: ", address.status().message()));
    }
    addresses[peer] = std::move(*address);
  }
  RETURN_IF_ERROR(WithRank(rank, (*transport)->Connect(addresses)));
  // Nobody leaves Create before every rank is connected, so a first message never
  // meets a peer that is still connecting.
  RETURN_IF_ERROR(WithRank(rank, bootstrap->Barrier(deadline)));
  std::shared_ptr<Bootstrap> shared_bootstrap = std::move(bootstrap);
  absl::StatusOr<std::shared_ptr<JobConnection>> job = JobConnection::Create(
      std::move(*transport), [shared_bootstrap](int rank, absl::Time deadline) {
        return shared_bootstrap->HowRankEnded(rank, deadline);
      });
  if (!job.ok()) return WithRank(rank, job.status());
  // A fresh connection's first context id is 0 on every rank, so the job's first
  // communicator needs no exchange.
  absl::StatusOr<uint32_t> context = (*job)->AllocateContext();
  if (!context.ok()) return context.status();
  std::vector<int> job_ranks(size);
  for (int r = 0; r < size; ++r) job_ranks[r] = r;
  Communicator made(std::make_unique<State>(
      State{std::move(shared_bootstrap),
            std::make_unique<CommunicatorTransport>(std::move(*job), rank, std::move(job_ranks),
                                                    std::vector<uint32_t>(size, *context)),
            std::move(topology), timeout}));
  // (Before the levels' Splits, which inherit them.)
  made.state_->timeout_source = timeout_source;
  made.state_->hosts_oversubscribed = placement->hosts_oversubscribed;
  absl::StatusOr<Communicator> with_engine = WithNodeEngine(std::move(made), deadline);
  // Last, once every wait of the setup (whose wakeups place threads too) is over.
  if (with_engine.ok()) {
    SpreadOverCpus(placement->place_on_this_host, placement->ranks_on_this_host);
  }
  return with_engine;
}

absl::StatusOr<Communicator> Communicator::WithNodeEngine(Communicator communicator,
                                                          absl::Time deadline) {
  State& state = *communicator.state_;
  absl::StatusOr<std::unique_ptr<NodeEngine>> engine =
      NodeEngine::Create(*state.transport, state.topology, deadline);
  if (!engine.ok()) return communicator.Failed(engine.status());
  state.node = std::move(*engine);
  // The levels (node_levels.h): a function of the topology, which every rank shares,
  // so that all make the same two Splits or none.
  const Topology& topology = state.topology;
  const int size = topology.size();
  std::vector<std::vector<int>> members = NodeLevelGroups(topology);
  if (members.empty()) return communicator;
  std::vector<int> leader_index(static_cast<size_t>(size)), position(static_cast<size_t>(size));
  for (size_t group = 0; group < members.size(); ++group) {
    for (size_t at = 0; at < members[group].size(); ++at) {
      leader_index[members[group][at]] = static_cast<int>(group);
      position[members[group][at]] = static_cast<int>(at);
    }
  }
  const int rank = communicator.rank();
  absl::StatusOr<std::optional<Communicator>> node_level =
      communicator.Split(leader_index[rank], rank, deadline);
  if (!node_level.ok()) return node_level.status();
  const bool leader = position[rank] == 0;
  absl::StatusOr<std::optional<Communicator>> leader_level =
      communicator.Split(leader ? 0 : kUndefinedColor, rank, deadline);
  if (!leader_level.ok()) return leader_level.status();
  state.node_level = std::make_unique<Communicator>(std::move(**node_level));
  if (leader) state.leader_level = std::make_unique<Communicator>(std::move(**leader_level));
  if (NodeStripesPossible(topology)) {
    // Every node's ranks at one place, in the nodes' order.
    absl::StatusOr<std::optional<Communicator>> stripe =
        communicator.Split(position[rank], leader_index[rank], deadline);
    if (!stripe.ok()) return stripe.status();
    state.stripe_level = std::make_unique<Communicator>(std::move(**stripe));
    state.stripe_level->state_->link_sharers = static_cast<int>(members[0].size());
  }
  // Each group a run of consecutive ranks: then every group's index is its
  // predecessor's or the next.
  state.levels_in_blocks = true;
  for (int r = 1; r < size; ++r) {
    const int step = leader_index[r] - leader_index[r - 1];
    state.levels_in_blocks = state.levels_in_blocks && (step == 0 || step == 1);
  }
  state.level_members = std::move(members);
  state.level_leader_index = std::move(leader_index);
  state.level_position = std::move(position);
  return communicator;
}

absl::Status Communicator::Failed(const absl::Status& status) {
  if (status.ok() || state_ == nullptr) return status;
  return state_->transport->job().Fail(status);
}

absl::Status Communicator::status() const {
  if (state_ == nullptr) return MovedFromError("status");
  return state_->transport->job().FailureStatus();
}

absl::Status Communicator::Abort(absl::string_view reason) {
  if (state_ == nullptr) return MovedFromError("Abort");
  JobConnection& job = state_->transport->job();
  // (Failing waits for the notices to leave, a quarter second at most.)
  job.Fail(absl::AbortedError(absl::StrCat("rank ", job.rank(), " called Abort: ", reason)))
      .IgnoreError();
  return job.FailureStatus();
}

absl::StatusOr<std::optional<Communicator>> Communicator::Split(
    int color, int key, std::optional<absl::Time> deadline) {
  if (state_ == nullptr) return MovedFromError("Split");
  SplitRecord mine{color, key, kMaxContexts, kNoProblem, 0, 0, -1};
  if (color < 0 && color != kUndefinedColor) mine.problem = kBadColor;
  return SplitBy(mine, "Split", DeadlineOrDefault(deadline));
}

absl::StatusOr<std::optional<Communicator>> Communicator::Create(
    const Group& group, std::optional<absl::Time> deadline) {
  if (state_ == nullptr) return MovedFromError("Create");
  int missing = -1;
  const std::vector<int> ranks = RanksOfGroup(*state_->transport, group, &missing);
  SplitRecord mine{kUndefinedColor,
                   0,
                   kMaxContexts,
                   kNoProblem,
                   group.size() > 0 ? HashMembers(group.job_ranks()) : 0,
                   group.size(),
                   -1};
  if (missing >= 0) {
    mine.problem = kNotMember;
    mine.key = missing;
  } else if (!ranks.empty()) {
    mine.group_first = ranks.front();
    // Disjoint groups have distinct first members: the color that keeps them apart.
    const auto position = std::find(ranks.begin(), ranks.end(), rank());
    if (position != ranks.end()) {
      mine.color = ranks.front();
      mine.key = static_cast<int>(position - ranks.begin());
    }
  }
  return SplitBy(mine, "Create", DeadlineOrDefault(deadline));
}

absl::StatusOr<std::optional<Communicator>> Communicator::SplitBy(SplitRecord mine,
                                                                  const char* call,
                                                                  absl::Time until) {
  CommunicatorTransport& transport = *state_->transport;
  JobConnection& job = transport.job();
  RETURN_IF_ERROR(job.FailureStatus());
  if (mine.problem == kNoProblem && mine.color != kUndefinedColor) {
    absl::StatusOr<uint32_t> context = job.AllocateContext();
    if (context.ok()) {
      mine.context = *context;
    } else {
      mine.problem = kNoContext;
    }
  }
  // Every rank takes part in the exchange, even with a bad argument, so that all
  // learn of it at once.
  absl::StatusOr<std::vector<char>> exchanged = ExchangeRecords(
      transport, absl::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)), until);
  auto release = [&] {
    if (mine.context != kMaxContexts) job.ReleaseContext(mine.context);
  };
  if (!exchanged.ok()) {
    release();
    return Failed(exchanged.status());
  }
  const int size = transport.size();
  std::vector<SplitRecord> records(size);
  std::memcpy(records.data(), exchanged->data(), exchanged->size());
  // Every rank judges every rank's record alike, so that all return the same error.
  absl::Status refused = CheckSplitRecords(records, call);
  if (!refused.ok()) {
    release();
    return refused;
  }
  if (mine.color == kUndefinedColor) return std::optional<Communicator>();
  std::vector<int> members;
  for (int r = 0; r < size; ++r) {
    if (records[r].color == mine.color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return records[a].key < records[b].key; });
  std::vector<uint32_t> contexts;
  for (int member : members) contexts.push_back(records[member].context);
  absl::StatusOr<Communicator> made = Derive(members, std::move(contexts), until);
  if (!made.ok()) return made.status();
  return std::optional<Communicator>(std::move(*made));
}

absl::Status Communicator::CheckSplitRecords(absl::Span<const SplitRecord> records,
                                             const char* call) const {
  const int size = static_cast<int>(records.size());
  for (int r = 0; r < size; ++r) {
    switch (records[r].problem) {
      case kNoProblem:
        break;
      case kBadColor:
        return absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank(), ": ", call, ": rank ", r, " passed color ", records[r].color,
            "; a color is >= 0 or kUndefinedColor (", kUndefinedColor, ")"));
      case kNotMember:
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank(), ": ", call, ": rank ", r,
                         " passed a group holding job rank ", records[r].key,
                         ", which is not in this communicator (a group passed to Create is a "
                         "subgroup of the communicator's)"));
      default:
        return absl::ResourceExhaustedError(absl::StrCat("rank ", rank(), ": ", call, ": rank ", r,
                                                         " has no free communicator context id (",
                                                         kMaxContexts, " are live)"));
    }
  }
  // Create(group): every process of a non-empty group passed that same group (the
  // standard's rule), so its first member leads it with the same hash, and as many
  // ranks joined it as it has members. (Split's records pass this trivially.)
  std::vector<int> joined(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (records[r].color != kUndefinedColor && records[r].group_size > 0)
      ++joined[records[r].color];
  }
  for (int r = 0; r < size; ++r) {
    const SplitRecord& record = records[r];
    if (record.group_size == 0) continue;
    const SplitRecord& first = records[record.group_first];
    if (first.group_hash != record.group_hash || first.group_size != record.group_size ||
        first.color != record.group_first) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank(), ": ", call, ": rank ", r, " passed a group of ",
                       record.group_size, " processes led by rank ", record.group_first,
                       ", which passed another group; every "
                       "process of a group passes that same group (same processes, same order)"));
    }
    if (joined[record.group_first] != record.group_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), ": ", call, ": rank ", r, " passed a group of ", record.group_size,
          " processes led by rank ", record.group_first, ", but ", joined[record.group_first],
          " of them passed it; every process of a group passes that same group, and groups "
          "passed at once are disjoint"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Communicator>> Communicator::CreateGroup(
    const Group& group, int tag, std::optional<absl::Time> deadline) {
  if (state_ == nullptr) return MovedFromError("CreateGroup");
  CommunicatorTransport& transport = *state_->transport;
  JobConnection& job = transport.job();
  RETURN_IF_ERROR(job.FailureStatus());
  if (group.size() == 0) return std::optional<Communicator>();
  // Only the group's processes call it, so a problem here cannot be told through an
  // exchange with them (they may not know it): it fails the job, as a refused
  // collective argument does, and they return Aborted at once.
  int missing = -1;
  const std::vector<int> members = RanksOfGroup(transport, group, &missing);
  if (missing >= 0) {
    return Failed(absl::InvalidArgumentError(
        absl::StrCat("rank ", rank(), ": CreateGroup: the group holds job rank ", missing,
                     ", which is not in this communicator")));
  }
  if (std::find(members.begin(), members.end(), rank()) == members.end()) {
    return Failed(absl::InvalidArgumentError(
        absl::StrCat("rank ", rank(),
                     ": CreateGroup: this rank is not in the group it passed; only the "
                     "group's processes call CreateGroup (an empty group gives no communicator)")));
  }
  if (tag < 0) {
    return Failed(absl::InvalidArgumentError(
        absl::StrCat("rank ", rank(), ": CreateGroup: tag ", tag, " is negative")));
  }
  struct GroupRecord {
    uint64_t group_hash;
    int32_t tag;
    uint32_t context;  // kMaxContexts: none left
  };
  GroupRecord mine{HashMembers(group.job_ranks()), tag, kMaxContexts};
  if (absl::StatusOr<uint32_t> context = job.AllocateContext(); context.ok()) {
    mine.context = *context;
  }
  const absl::Time until = DeadlineOrDefault(deadline);
  absl::StatusOr<std::vector<char>> exchanged = ExchangeRecordsAmong(
      transport, members, InternalTag::kGroupExchange,
      absl::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)), until);
  auto release = [&] {
    if (mine.context != kMaxContexts) job.ReleaseContext(mine.context);
  };
  if (!exchanged.ok()) {
    release();
    return Failed(exchanged.status());
  }
  std::vector<GroupRecord> records(members.size());
  std::memcpy(records.data(), exchanged->data(), exchanged->size());
  std::vector<uint32_t> contexts;
  for (size_t i = 0; i < members.size(); ++i) {
    const GroupRecord& theirs = records[i];
    absl::Status refused;
    if (theirs.group_hash != mine.group_hash) {
      refused = absl::InvalidArgumentError(
          absl::StrCat("rank ", rank(), ": CreateGroup: rank ", members[i],
                       " passed another group; every process of the group passes that same "
                       "group (same processes, same order)"));
    } else if (theirs.tag != mine.tag) {
      refused = absl::InvalidArgumentError(absl::StrCat("rank ", rank(), ": CreateGroup: rank ",
                                                        members[i], " passed tag ", theirs.tag,
                                                        " and this rank ", mine.tag));
    } else if (theirs.context == kMaxContexts) {
      refused = absl::ResourceExhaustedError(
          absl::StrCat("rank ", rank(), ": CreateGroup: rank ", members[i],
                       " has no free communicator context id (", kMaxContexts, " are live)"));
    }
    if (!refused.ok()) {
      release();
      return refused;
    }
    contexts.push_back(theirs.context);
  }
  absl::StatusOr<Communicator> made = Derive(members, std::move(contexts), until);
  if (!made.ok()) return made.status();
  return std::optional<Communicator>(std::move(*made));
}

absl::StatusOr<Communicator> Communicator::Derive(absl::Span<const int> members,
                                                  std::vector<uint32_t> contexts,
                                                  absl::Time until) {
  CommunicatorTransport& transport = *state_->transport;
  std::vector<int> job_ranks;
  int new_rank = -1;
  for (int member : members) {
    if (member == rank()) new_rank = static_cast<int>(job_ranks.size());
    job_ranks.push_back(transport.job_rank(member));
  }
  absl::StatusOr<Topology> topology = RestrictTopology(state_->topology, members);
  if (!topology.ok()) {
    transport.job().ReleaseContext(contexts[new_rank]);
    return topology.status();
  }
  Communicator child(std::make_unique<State>(
      State{state_->bootstrap,
            std::make_unique<CommunicatorTransport>(transport.shared_job(), new_rank,
                                                    std::move(job_ranks), std::move(contexts)),
            std::move(*topology), state_->timeout}));
  // (Before the levels' Splits, which inherit them.)
  child.state_->timeout_source = state_->timeout_source;
  child.state_->hosts_oversubscribed = state_->hosts_oversubscribed;
  return WithNodeEngine(std::move(child), until);
}

Group Communicator::group() const {
  if (state_ == nullptr) return Group::Empty();
  const CommunicatorTransport& transport = *state_->transport;
  std::vector<int> job_ranks(static_cast<size_t>(transport.size()));
  for (int r = 0; r < transport.size(); ++r) job_ranks[r] = transport.job_rank(r);
  // (A communicator's ranks are distinct job ranks: this cannot fail.)
  return *Group::FromJobRanks(std::move(job_ranks), transport.job_rank(transport.rank()));
}

absl::StatusOr<Communicator> Communicator::Dup(std::optional<absl::Time> deadline) {
  if (state_ == nullptr) return MovedFromError("Dup");
  absl::StatusOr<std::optional<Communicator>> copy = Split(0, rank(), deadline);
  if (!copy.ok()) return copy.status();
  return std::move(**copy);
}

}  // namespace zcoll
