#include "sim/collective_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collectives/selection.h"
#include "sim/event_simulation.h"

namespace zcoll::sim {
namespace {

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

int CeilLog2(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

SelectionInputs InputsFor(const CollectiveArgs& args, const Topology& topology) {
  const bool one_node = topology.num_nodes() == 1;
  return AgreedSelectionInputs(args, topology, /*node_engine=*/one_node,
                               /*node_single_copy=*/one_node, /*node_oversubscribed=*/false,
                               !NodeLevelGroups(topology).empty());
}

}  // namespace

bool CanPredict(Collective collective) {
  switch (collective) {
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv:
    case Collective::kAlltoallv:
      return false;
    default:
      return true;
  }
}

absl::StatusOr<Topology> SimulatedTopology(const MachineProfile& profile, int ranks) {
  if (ranks < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ranks is ", ranks, "; it must be 1 or more"));
  }
  std::vector<RankLocation> locations(static_cast<size_t>(ranks));
  const int per_node = profile.ranks_per_node;
  for (int r = 0; r < ranks; ++r) {
    const int node = r / per_node, local = r % per_node;
    const int domain = static_cast<int>(int64_t{local} * profile.numa_per_node / per_node);
    locations[static_cast<size_t>(r)] = RankLocation{node, domain, domain};
  }
  return Topology::Create(std::move(locations));
}

CollectiveArgs ArgsFor(const PredictionCase& call) {
  CollectiveArgs args;
  args.collective = call.collective;
  args.size = call.ranks;
  args.commutative = call.commutative;
  args.element_bytes = call.element_bytes;
  const size_t elements = call.bytes / call.element_bytes;
  switch (call.collective) {
    case Collective::kReduceScatterBlock:
      args.count = elements / static_cast<size_t>(call.ranks);
      break;
    case Collective::kReduceScatter:
      args.counts.assign(static_cast<size_t>(call.ranks),
                         elements / static_cast<size_t>(call.ranks));
      break;
    case Collective::kBarrier:
      break;
    default:
      args.count = elements;
  }
  return args;
}

const Algorithm& ChosenAlgorithm(const PredictionCase& call, const Topology& topology) {
  return SelectAlgorithm(InputsFor(ArgsFor(call), topology));
}

absl::StatusOr<std::vector<Prediction>> PredictAlgorithms(const PredictionCase& call,
                                                          const MachineProfile& profile,
                                                          const Topology& topology,
                                                          const PredictOptions& options) {
  if (!CanPredict(call.collective)) {
    return absl::InvalidArgumentError(absl::StrCat(
        CollectiveName(call.collective),
        " cannot be predicted: its counts differ from rank to rank (zcoll_sim takes the "
        "collectives whose arguments every rank passes alike)"));
  }
  if (topology.size() != call.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("a call of ", call.ranks, " ranks on a topology of ", topology.size()));
  }
  const CollectiveArgs args = ArgsFor(call);
  const SelectionInputs inputs = InputsFor(args, topology);
  const Algorithm& chosen = SelectAlgorithm(inputs);
  std::vector<Prediction> predictions;
  bool found = options.algorithm.empty();
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.collective != call.collective) continue;
    if (!options.algorithm.empty() && algorithm.name != options.algorithm) continue;
    found = true;
    Prediction prediction;
    prediction.algorithm = std::string(algorithm.name);
    prediction.chosen = &algorithm == &chosen;
    // An algorithm that cannot run the call is listed only when it was asked for.
    std::string cannot_run;
    if (!call.commutative && !algorithm.any_op) {
      cannot_run =
          "it combines contributions in no fixed order, so a non-commutative op cannot use it";
    } else if (absl::Status can_run = CheckAlgorithmCanRun(algorithm, inputs); !can_run.ok()) {
      cannot_run = std::string(can_run.message());
    }
    if (!cannot_run.empty()) {
      if (!options.algorithm.empty()) {
        prediction.skipped = absl::StrCat("not simulated: ", cannot_run);
        predictions.push_back(std::move(prediction));
      }
      continue;
    }
    if (!algorithm.runs_schedule()) {
      prediction.skipped =
          "not simulated: it runs on a node's shared segment, not as a schedule, and the "
          "simulator has no model of the node engine yet";
      predictions.push_back(std::move(prediction));
      continue;
    }
    const absl::Time generate_start = absl::Now();
    TimedSchedules timed;
    uint64_t steps = 0;
    for (int r = 0; r < call.ranks; ++r) {
      const Schedule schedule = algorithm.generate(args, topology, r);
      steps += schedule.steps().size();
      if (steps > options.max_steps) {
        prediction.skipped = absl::StrCat(
            "not simulated: its schedules pass ", options.max_steps, " steps (", options.max_steps,
            " is the budget, --max-steps) by rank ", r, " of ", call.ranks);
        break;
      }
      if (absl::Status added = timed.Add(schedule, call.element_bytes); !added.ok()) {
        prediction.skipped = absl::StrCat("not simulated: ", added.message());
        break;
      }
    }
    prediction.generate_seconds = SecondsSince(generate_start);
    prediction.steps = steps;
    prediction.memory_bytes = timed.MemoryBytes();
    if (prediction.skipped.empty()) {
      const absl::Time simulate_start = absl::Now();
      absl::StatusOr<SimulationResult> result = Simulate(timed, topology, profile);
      if (!result.ok()) {
        return absl::InternalError(absl::StrCat(algorithm.name, " on ", call.ranks,
                                                " ranks: ", result.status().message()));
      }
      prediction.simulate_seconds = SecondsSince(simulate_start);
      prediction.usec = result->usec;
      prediction.network_bytes = result->network_bytes;
    }
    predictions.push_back(std::move(prediction));
  }
  if (!found) {
    return FindAlgorithm(call.collective, options.algorithm).status();
  }
  return predictions;
}

double LowerBoundUsec(const PredictionCase& call, const MachineProfile& profile,
                      const Topology& topology) {
  const double n = static_cast<double>(call.bytes);
  const double p = call.ranks;
  const double nodes = topology.num_nodes();
  double q = 1;
  for (int node = 0; node < topology.num_nodes(); ++node) {
    q = std::max(q, static_cast<double>(topology.ranks_on_node(node).size()));
  }
  auto share = [](double k) { return (k - 1) / k; };
  // Bytes through the busiest NIC and the busiest rank's port within a node.
  double nic = 0, port = 0;
  switch (call.collective) {
    case Collective::kAllreduce:
      nic = 2 * share(nodes) * n, port = 2 * share(q) * n;
      break;
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter:
    case Collective::kReduce:
      nic = share(nodes) * n, port = share(q) * n;
      break;
    case Collective::kBcast:
    case Collective::kScan:
    case Collective::kExscan:
      nic = nodes > 1 ? n : 0, port = q > 1 ? n : 0;
      break;
    case Collective::kAllgather:
      nic = (p - q) * n, port = (p - 1) * n;
      break;
    case Collective::kScatter:
    case Collective::kGather:
      nic = (p - q) * n, port = (q - 1) * n;
      break;
    case Collective::kAlltoall:
      nic = q * (p - q) * n, port = (q - 1) * n;
      break;
    default:
      break;
  }
  const LinkCost& network = profile.link(LinkClass::kNetwork);
  const LinkCost& node = profile.link(LinkClass::kNode);
  const double bandwidth_usec =
      std::max(nic / (network.bytes_per_usec * profile.bisection), port / node.bytes_per_usec);
  return bandwidth_usec + CeilLog2(topology.num_nodes()) * network.latency_usec +
         CeilLog2(static_cast<int>(q)) * node.latency_usec;
}

}  // namespace zcoll::sim
