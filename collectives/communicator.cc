#include "collectives/communicator.h"

#include <unistd.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "core/status_macros.h"
#include "transport/transport_factory.h"

namespace zcoll {

struct Communicator::State {
  std::unique_ptr<Bootstrap> bootstrap;
  std::unique_ptr<Transport> transport;
  Topology topology;
  absl::Duration timeout;
};

namespace {

absl::Status WithRank(int rank, const absl::Status& status) {
  if (status.ok() || absl::StartsWith(status.message(), "rank ")) return status;
  return absl::Status(status.code(), absl::StrCat("rank ", rank, ": ", status.message()));
}

// Node of every rank: blocks of emulated nodes, or one node per distinct host name
// (numbered in order of the lowest rank on each).
absl::StatusOr<Topology> DiscoverTopology(Bootstrap& bootstrap, absl::Time deadline) {
  const int size = bootstrap.size();
  const std::string emulated = EnvironmentValue("ZCOLL_EMULATE_NODES");
  std::vector<RankLocation> locations(size);
  std::vector<std::string> names;
  if (!emulated.empty()) {
    int nodes = 0;
    if (!absl::SimpleAtoi(emulated, &nodes) || nodes < 1 || nodes > size) {
      return absl::InvalidArgumentError(absl::StrCat("ZCOLL_EMULATE_NODES='", emulated,
                                                     "' is not a node count in 1..", size,
                                                     " (the job's size)"));
    }
    for (int rank = 0; rank < size; ++rank) {
      locations[rank].node = static_cast<int>(static_cast<int64_t>(rank) * nodes / size);
    }
    for (int node = 0; node < nodes; ++node) names.push_back(absl::StrCat("emulated", node));
  } else {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    ASSIGN_OR_RETURN(std::vector<std::string> hosts, bootstrap.AllGather(host, deadline));
    std::map<std::string, int> node_of_host;
    for (int rank = 0; rank < size; ++rank) {
      auto [entry, added] = node_of_host.emplace(hosts[rank], static_cast<int>(names.size()));
      if (added) names.push_back(hosts[rank]);
      locations[rank].node = entry->second;
    }
  }
  return Topology::Create(std::move(locations), std::move(names));
}

}  // namespace

Communicator::Communicator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

int Communicator::rank() const { return state_->bootstrap->rank(); }
int Communicator::size() const { return state_->bootstrap->size(); }
const Topology& Communicator::topology() const { return state_->topology; }
absl::Duration Communicator::timeout() const { return state_->timeout; }
Transport& Communicator::transport() { return *state_->transport; }

absl::StatusOr<Communicator> Communicator::Create(CommunicatorOptions options) {
  absl::Duration timeout = options.timeout;
  if (timeout <= absl::ZeroDuration()) {
    timeout = absl::Seconds(static_cast<int64_t>(EnvironmentUnsigned("ZCOLL_TIMEOUT")));
  }
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_ptr<Bootstrap> bootstrap = std::move(options.bootstrap);
  if (bootstrap == nullptr) {
    ASSIGN_OR_RETURN(bootstrap, BootstrapFromEnvironment(deadline));
  }
  const int rank = bootstrap->rank(), size = bootstrap->size();
  absl::StatusOr<Topology> topology = DiscoverTopology(*bootstrap, deadline);
  if (!topology.ok()) return WithRank(rank, topology.status());
  std::vector<int> node_of_rank(size);
  for (int r = 0; r < size; ++r) node_of_rank[r] = topology->node_of(r);
  absl::StatusOr<std::unique_ptr<Transport>> transport =
      CreateJobTransport(rank, size, std::move(node_of_rank));
  // Every rank takes part in the address exchange even when its transport failed, so
  // that the others learn of the failure at once instead of at the deadline. The
  // first byte says which: '+' and an address, or '!' and the reason.
  const std::string entry = transport.ok() ? absl::StrCat("+", (*transport)->address())
                                           : absl::StrCat("!", transport.status().message());
  absl::StatusOr<std::vector<std::string>> entries = bootstrap->AllGather(entry, deadline);
  if (!transport.ok()) return WithRank(rank, transport.status());
  if (!entries.ok()) return WithRank(rank, entries.status());
  std::vector<std::string> addresses(size);
  for (int peer = 0; peer < size; ++peer) {
    const std::string& got = (*entries)[peer];
    if (got.empty() || got[0] != '+') {
      return absl::UnavailableError(absl::StrCat(
          "rank ", rank, ": rank ", peer,
          " could not create its transport: ", got.empty() ? "(no reason given)" : got.substr(1)));
    }
    addresses[peer] = got.substr(1);
  }
  RETURN_IF_ERROR(WithRank(rank, (*transport)->Connect(addresses)));
  // Nobody leaves Create before every rank is connected, so a first message never
  // meets a peer that is still connecting.
  RETURN_IF_ERROR(WithRank(rank, bootstrap->Barrier(deadline)));
  auto state = std::make_unique<State>(
      State{std::move(bootstrap), std::move(*transport), std::move(*topology), timeout});
  return Communicator(std::move(state));
}

}  // namespace zcoll
