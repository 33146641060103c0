#include "sim/collective_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collectives/node_data_flow.h"
#include "collectives/selection.h"
#include "core/schedule.h"
#include "sim/event_simulation.h"

namespace zcoll::sim {
namespace {

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

int CeilLog2(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

// (Ranks that outnumber the profile's host cores, args.node_oversubscribed: on one node
// the engine's node, across nodes a host of the job, as zcoll's Create finds them.)
SelectionInputs InputsFor(const CollectiveArgs& args, const Topology& topology) {
  const bool one_node = topology.num_nodes() == 1;
  SelectionInputs inputs =
      AgreedSelectionInputs(args, topology, /*node_engine=*/one_node,
                            /*node_single_copy=*/one_node, one_node && args.node_oversubscribed,
                            !NodeLevelGroups(topology).empty());
  inputs.hosts_oversubscribed = args.node_oversubscribed;
  return inputs;
}

// A v-collective's fixed-size form: what it moves with every rank's block one size, as
// ArgsFor makes them.
Collective FixedSizeForm(Collective collective) {
  switch (collective) {
    case Collective::kScatterv:
      return Collective::kScatter;
    case Collective::kGatherv:
      return Collective::kGather;
    case Collective::kAllgatherv:
      return Collective::kAllgather;
    case Collective::kAlltoallv:
      return Collective::kAlltoall;
    default:
      return collective;
  }
}

// The ranks `members` of `topology` as a communicator of their own sees them: in that
// order, their nodes renumbered densely as they come (packages and domains are the
// node's own).
Topology SubTopology(const Topology& topology, absl::Span<const int> members) {
  std::vector<RankLocation> locations;
  std::vector<int> node_ids;
  for (int rank : members) {
    RankLocation location = topology.location(rank);
    const auto seen = std::find(node_ids.begin(), node_ids.end(), location.node);
    location.node = static_cast<int>(seen - node_ids.begin());
    if (seen == node_ids.end()) node_ids.push_back(topology.location(rank).node);
    locations.push_back(location);
  }
  return *Topology::Create(std::move(locations));
}

// The time of an Allreduce by stripes in `segments` segments (node_levels.h), each
// segment's node Reduce_scatter taking `reduce_scatter`, its stripe Allreduce
// `allreduce` (of which `allreduce_cpu` is the ranks' CPU work: reductions, per-message
// overheads) and its node Allgather `allgather`: the node lane runs every segment's
// Reduce_scatter, then every Allgather, one at a time, an Allgather once its segment's
// Allreduce has ended; the stripe lane runs the Allreduces one at a time, each once its
// segment's Reduce_scatter has ended. The CPUs run the node calls and the stripes' CPU
// work alike: a node call during which a stripe call starts ends that much later. One
// segment: the three calls' sum.
double StripeLanesUsec(size_t segments, double reduce_scatter, double allreduce,
                       double allreduce_cpu, double allgather) {
  std::vector<double> allreduce_start(segments), allreduce_end(segments);
  std::vector<bool> charged(segments, false);
  size_t scheduled = 0;  // stripe calls whose start is known
  // A node call from `start` for `usec`, and the stripe calls that start meanwhile.
  auto node_call = [&](double start, double usec) {
    double end = start + usec;
    for (bool longer = true; longer;) {
      longer = false;
      for (size_t s = 0; s < scheduled; ++s) {
        if (charged[s] || allreduce_start[s] < start || allreduce_start[s] >= end) continue;
        end += allreduce_cpu;
        charged[s] = true;
        longer = true;
      }
    }
    return end;
  };
  double node_free = 0;
  for (size_t s = 0; s < segments; ++s) {
    node_free = node_call(node_free, reduce_scatter);
    allreduce_start[s] = s == 0 ? node_free : std::max(node_free, allreduce_end[s - 1]);
    allreduce_end[s] = allreduce_start[s] + allreduce;
    scheduled = s + 1;
  }
  for (size_t s = 0; s < segments; ++s) {
    node_free = node_call(std::max(node_free, allreduce_end[s]), allgather);
  }
  return node_free;
}

// A node_levels call (collectives/node_levels.h), root 0: its level calls one after
// another, each timed as its level's communicator runs it (the algorithm that
// communicator chooses, predicted on the level's ranks, node_levels again where that
// level has levels of its own), a step taking its slowest group's time. (The calls of
// a step run at once on every group; a group starts its next call when its own ends,
// which the sum of the slowest ones ignores: an upper estimate by the spread.)
// Allgatherv among the leaders is timed as an Allgather of the largest group's blocks.
// node_stripes (`stripes`): in segments (StripeSegments, each timed as the largest),
// a Reduce_scatter_block of the segment on every node, an Allreduce of its largest
// block on one stripe (every node's first rank) with the network's bandwidth shared by
// the node's q stripes, which cross it at once, and an Allgather of the blocks on every
// node, in place as zcoll runs it; the segments' calls in the lanes zcoll runs them in
// (StripeLanesUsec).
absl::StatusOr<double> PredictNodeLevels(const PredictionCase& call, const MachineProfile& profile,
                                         const Topology& topology, const PredictOptions& options,
                                         bool stripes, uint64_t& steps,
                                         std::string& not_simulated) {
  const std::vector<std::vector<int>> groups = NodeLevelGroups(topology);
  std::vector<int> leaders;
  size_t largest = 0;
  for (const std::vector<int>& group : groups) {
    leaders.push_back(group.front());
    largest = std::max(largest, group.size());
  }
  // node_stripes: each node's q ranks hold as many blocks of the vector, the first
  // ones an element longer (timed as the largest), and the network is shared by the
  // node's q stripes.
  const size_t places = groups.front().size();
  // A call of `collective` with `bytes` on `members`, as their chosen algorithm runs it
  // (groups laid out alike are predicted once).
  std::map<std::string, std::optional<double>> known;
  // (`stripe_profile`: a stripe's links, the network shared by its node's stripes.)
  auto level_usec = [&](Collective collective, size_t bytes, absl::Span<const int> members,
                        const MachineProfile* stripe_profile = nullptr,
                        bool in_place = false) -> absl::StatusOr<std::optional<double>> {
    if (members.size() < 2) return std::optional<double>(0.0);
    PredictionCase level = call;
    level.collective = collective;
    level.bytes = bytes;
    level.in_place = in_place;
    level.ranks = static_cast<int>(members.size());
    // (A stripe: chosen as its node's q stripes load the link.)
    level.link_sharers = stripe_profile != nullptr ? static_cast<int>(places) : 1;
    const Topology level_topology = SubTopology(topology, members);
    const std::string key = absl::StrCat(CollectiveName(collective), " ", bytes,
                                         in_place ? " in place " : " ", level_topology.ToString(),
                                         stripe_profile != nullptr ? stripe_profile->name : "");
    if (const auto found = known.find(key); found != known.end()) return found->second;
    PredictOptions level_options = options;
    level_options.algorithm = std::string(ChosenAlgorithm(level, level_topology).name);
    absl::StatusOr<std::vector<Prediction>> predicted =
        PredictAlgorithms(level, stripe_profile != nullptr ? *stripe_profile : profile,
                          level_topology, level_options);
    if (!predicted.ok()) return predicted.status();
    const Prediction& chosen = predicted->front();
    steps += chosen.steps;
    if (!chosen.usec.has_value()) {
      not_simulated =
          absl::StrCat("not simulated: its ", CollectiveName(collective), " on ", members.size(),
                       " ranks (", chosen.algorithm, ") is ", chosen.skipped);
      return std::optional<double>();
    }
    known.emplace(key, chosen.usec);
    return chosen.usec;
  };
  // The slowest of `collective` on the groups: every one, the root's (the first: the
  // root is rank 0), or the others.
  enum class Which { kEvery, kRoots, kOthers };
  auto groups_usec = [&](Collective collective, size_t bytes, Which which,
                         bool in_place = false) -> absl::StatusOr<std::optional<double>> {
    double slowest = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      if ((which == Which::kRoots && g != 0) || (which == Which::kOthers && g == 0)) continue;
      absl::StatusOr<std::optional<double>> usec =
          level_usec(collective, bytes, groups[g], nullptr, in_place);
      if (!usec.ok() || !usec->has_value()) return usec;
      slowest = std::max(slowest, **usec);
    }
    return std::optional<double>(slowest);
  };
  const size_t n = call.bytes;
  std::vector<std::function<absl::StatusOr<std::optional<double>>()>> level_calls;
  const size_t elements = n / call.element_bytes;
  const size_t segments =
      stripes ? StripeSegments(elements, call.element_bytes, places, DefaultChunkBytes(call.ranks))
              : 1;
  // (The largest segment and block: each cut's first, as zcoll cuts them.)
  const size_t segment = EvenBlock(elements, segments, 0).count;
  const size_t block = EvenBlock(segment, places, 0).count * call.element_bytes;
  // The stripes' network, and their CPU work alone (a network of no latency and
  // unbounded bandwidth; all of it where the network's bytes are the CPUs' copies or
  // the ranks share a host's cores).
  MachineProfile shared_network, cpu_alone;
  const LinkCost& network = profile.link(LinkClass::kNetwork);
  const bool stripes_hold_cpus = network.cpu_copies || profile.host_cores > 0;
  if (stripes) {
    shared_network = profile;
    shared_network.name = profile.name + " (the network shared by a node's stripes)";
    shared_network.links[static_cast<int>(LinkClass::kNetwork)].bytes_per_usec /=
        static_cast<double>(places);
    cpu_alone = shared_network;
    cpu_alone.name = profile.name + " (the stripes' CPU work alone)";
    LinkCost& free_network = cpu_alone.links[static_cast<int>(LinkClass::kNetwork)];
    free_network.latency_usec = 0;
    free_network.bytes_per_usec = 1e12;
  }
  switch (call.collective) {
    case Collective::kAllreduce:
      if (stripes) {
        // (Stripe 0, every node's first rank: the leaders.)
        level_calls = {
            [&] {
              return groups_usec(Collective::kReduceScatterBlock, block * places, Which::kEvery);
            },
            [&] { return level_usec(Collective::kAllreduce, block, leaders, &shared_network); },
            // (Its CPU work: all of it where the stripes hold the CPUs.)
            [&] {
              return level_usec(Collective::kAllreduce, block, leaders,
                                stripes_hold_cpus ? &shared_network : &cpu_alone);
            },
            // (In place: each rank's block is where its Reduce_scatter and the
            // stripe's Allreduce left it, StartNodeStripeCall.)
            [&] {
              return groups_usec(Collective::kAllgather, block, Which::kEvery, /*in_place=*/true);
            }};
        break;
      }
      level_calls = {[&] { return groups_usec(Collective::kReduce, n, Which::kEvery); },
                     [&] { return level_usec(Collective::kAllreduce, n, leaders); },
                     [&] { return groups_usec(Collective::kBcast, n, Which::kEvery); }};
      break;
    case Collective::kReduce:
      // Every group but the root's reduces to its leader first; the root's, last.
      level_calls = {[&] { return groups_usec(Collective::kReduce, n, Which::kOthers); },
                     [&] { return level_usec(Collective::kReduce, n, leaders); },
                     [&] { return groups_usec(Collective::kReduce, n, Which::kRoots); }};
      break;
    case Collective::kBcast:
      level_calls = {[&] { return groups_usec(Collective::kBcast, n, Which::kRoots); },
                     [&] { return level_usec(Collective::kBcast, n, leaders); },
                     [&] { return groups_usec(Collective::kBcast, n, Which::kOthers); }};
      break;
    case Collective::kAllgather:
      level_calls = {[&] { return groups_usec(Collective::kGather, n, Which::kEvery); },
                     [&] { return level_usec(Collective::kAllgather, largest * n, leaders); },
                     [&] {
                       return groups_usec(Collective::kBcast, static_cast<size_t>(call.ranks) * n,
                                          Which::kEvery);
                     }};
      break;
    case Collective::kBarrier:
      level_calls = {[&] { return groups_usec(Collective::kBarrier, 0, Which::kEvery); },
                     [&] { return level_usec(Collective::kBarrier, 0, leaders); },
                     [&] { return groups_usec(Collective::kBarrier, 0, Which::kEvery); }};
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("node_levels has no model of ", CollectiveName(call.collective)));
  }
  std::vector<double> usecs;
  for (const auto& level_call : level_calls) {
    absl::StatusOr<std::optional<double>> usec = level_call();
    if (!usec.ok()) return usec.status();
    if (!usec->has_value()) return -1.0;
    usecs.push_back(**usec);
  }
  if (stripes && call.collective == Collective::kAllreduce) {
    return StripeLanesUsec(segments, usecs[0], usecs[1], usecs[2], usecs[3]);
  }
  double total = 0;
  for (double usec : usecs) total += usec;
  return total;
}

}  // namespace

SelectionInputs SelectionInputsFor(const PredictionCase& call, const Topology& topology) {
  SelectionInputs inputs = InputsFor(ArgsFor(call), topology);
  inputs.link_sharers = call.link_sharers;
  return inputs;
}

absl::StatusOr<Topology> SimulatedTopology(const MachineProfile& profile, int ranks, int nodes) {
  if (ranks < 1) {
    return absl::InvalidArgumentError(absl::StrCat("ranks is ", ranks, "; it must be 1 or more"));
  }
  if (nodes < 0 || nodes > ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("nodes is ", nodes, "; it must be from 1 to the ", ranks, " ranks (or 0)"));
  }
  std::vector<RankLocation> locations(static_cast<size_t>(ranks));
  const auto node_of = [&](int r) {
    return nodes == 0 ? r / profile.ranks_per_node : static_cast<int>(int64_t{r} * nodes / ranks);
  };
  // Each node's ranks are consecutive: a node's domains split its [first, end) in blocks.
  for (int first = 0; first < ranks;) {
    int end = first + 1;
    while (end < ranks && node_of(end) == node_of(first)) ++end;
    for (int r = first; r < end; ++r) {
      const int domain =
          static_cast<int>(int64_t{r - first} * profile.numa_per_node / (end - first));
      locations[static_cast<size_t>(r)] = RankLocation{node_of(r), domain, domain};
    }
    first = end;
  }
  return Topology::Create(std::move(locations));
}

namespace {

// Rank r's block of `share` elements under `skew` (PredictionCase::skew).
size_t SkewedBlock(size_t share, double skew, int rank, int ranks) {
  if (skew <= 0 || ranks < 2) return share;
  const double weight = 1 - skew + 2 * skew * rank / (ranks - 1);
  return static_cast<size_t>(std::llround(static_cast<double>(share) * weight));
}

std::vector<size_t> SkewedBlocks(size_t share, double skew, int ranks) {
  std::vector<size_t> blocks;
  for (int r = 0; r < ranks; ++r) blocks.push_back(SkewedBlock(share, skew, r, ranks));
  return blocks;
}

}  // namespace

CollectiveArgs ArgsFor(const PredictionCase& call) {
  CollectiveArgs args;
  args.collective = call.collective;
  args.size = call.ranks;
  args.commutative = call.commutative;
  args.element_bytes = call.element_bytes;
  args.chunk_bytes = DefaultChunkBytes(call.ranks);
  args.mapped_buffers = call.mapped_buffers;
  args.node_oversubscribed = call.oversubscribed;
  args.in_place = call.in_place;
  const size_t elements = call.bytes / call.element_bytes;
  switch (call.collective) {
    case Collective::kReduceScatterBlock:
      args.count = elements / static_cast<size_t>(call.ranks);
      break;
    case Collective::kReduceScatter:
      args.counts = SkewedBlocks(elements / static_cast<size_t>(call.ranks), call.skew, call.ranks);
      break;
    case Collective::kBarrier:
      break;
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv:
    case Collective::kAlltoallv: {
      // Every rank's block alike (on every rank, the root's view included: the
      // generators read the counts only where the standard gives them).
      args.count = elements;
      args.counts = SkewedBlocks(elements, call.skew, call.ranks);
      args.displs = PackedDisplacements(args.counts);
      if (call.collective == Collective::kAlltoallv) {
        args.recv_counts = args.counts;
        args.recv_displs = args.displs;
      }
      break;
    }
    default:
      args.count = elements;
  }
  return args;
}

CollectiveArgs RankArgsFor(const PredictionCase& call, int rank) {
  CollectiveArgs args = ArgsFor(call);
  if (call.skew <= 0) return args;
  const size_t elements = call.bytes / call.element_bytes;
  switch (call.collective) {
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv:
      args.count = args.counts[static_cast<size_t>(rank)];
      break;
    case Collective::kAlltoallv:
      // This rank sends every rank its own block's size, and receives each rank's.
      args.recv_counts = args.counts;
      args.recv_displs = args.displs;
      args.counts.assign(args.counts.size(), SkewedBlock(elements, call.skew, rank, call.ranks));
      args.displs = PackedDisplacements(args.counts);
      break;
    default:
      break;
  }
  return args;
}

const Algorithm& ChosenAlgorithm(const PredictionCase& call, const Topology& topology) {
  return SelectAlgorithm(SelectionInputsFor(call, topology));
}

double CallFootprintBytes(const PredictionCase& call, const MachineProfile& profile,
                          const Topology& topology) {
  const double p = call.ranks;
  const double n = static_cast<double>(call.bytes);
  // Every rank's send and receive buffers in all (n the vector, or a rank's block).
  double total = 0;
  switch (FixedSizeForm(call.collective)) {
    case Collective::kBcast:
      total = p * n;
      break;
    case Collective::kReduce:
      total = (p + (call.in_place ? 0 : 1)) * n;  // the root's result besides
      break;
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan:
      total = (call.in_place ? 1 : 2) * p * n;
      break;
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter:
      total = p * n + (call.in_place ? 0 : n);  // each rank's vector and its block
      break;
    case Collective::kScatter:
    case Collective::kGather:
      total = (2 * p - (call.in_place ? 1 : 0)) * n;  // the root's p blocks, a block each
      break;
    case Collective::kAllgather:
      total = p * p * n + (call.in_place ? 0 : p * n);
      break;
    case Collective::kAlltoall:
      total = (call.in_place ? 1 : 2) * p * p * n;
      break;
    default:
      break;
  }
  // A cache per core holds what its ranks touch: a rank's share, times the ranks that
  // take turns on the core where they outnumber the host's cores (2 ranks on this
  // machine's 2 cores, 2 MiB of L2 each, on the same measurements: rows within 1.3x
  // 64 -> 73 of 164 against every rank's buffers in one cache, 94 with the engine's
  // cached rate that a core's cache lets --calibrate measure).
  if (profile.cache_per_core) {
    const int per_core =
        profile.host_cores > 0 ? (call.ranks + profile.host_cores - 1) / profile.host_cores : 1;
    return total / p * per_core;
  }
  // Ranks that take turns on a core evict each other's data at every switch: nothing of
  // theirs is found in a shared cache (4 ranks on this machine's 2 cores then: the node
  // rows up to 1 MiB measured 1.7x their prediction at the cached rates, 0.73x at
  // memory's).
  if (RanksOutnumberCores(profile, call.ranks)) return std::numeric_limits<double>::infinity();
  int sharing = call.ranks;
  if (profile.host_cores == 0) {
    sharing = 1;
    for (int node = 0; node < topology.num_nodes(); ++node) {
      sharing = std::max(sharing, static_cast<int>(topology.ranks_on_node(node).size()));
    }
  }
  return total * sharing / p;
}

absl::StatusOr<std::vector<Prediction>> PredictAlgorithms(const PredictionCase& given_call,
                                                          const MachineProfile& given_profile,
                                                          const Topology& topology,
                                                          const PredictOptions& options) {
  PredictionCase call = given_call;
  call.oversubscribed = call.oversubscribed || RanksOutnumberCores(given_profile, call.ranks);
  if (topology.size() != call.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("a call of ", call.ranks, " ranks on a topology of ", topology.size()));
  }
  // A call whose buffers stay in cache copies and reduces at the cached rates.
  const MachineProfile profile =
      ProfileForFootprint(given_profile, CallFootprintBytes(call, given_profile, topology));
  const CollectiveArgs args = ArgsFor(call);
  const SelectionInputs inputs = SelectionInputsFor(call, topology);
  // Every rank's own arguments: the agreed ones, but with skew.
  std::optional<CollectiveArgs> skewed;
  auto rank_args = [&](int r) -> const CollectiveArgs& {
    if (call.skew <= 0) return args;
    skewed = RankArgsFor(call, r);
    return *skewed;
  };
  const Algorithm& chosen = SelectAlgorithm(inputs);
  std::vector<Prediction> predictions;
  // The algorithms to simulate in full, with what their sampled ranks' schedules showed.
  struct Candidate {
    const Algorithm* algorithm;
    ScheduleGenerator generate;
    TransferModel transfers;
    size_t prediction;  // its index in `predictions`
    double bound_usec;  // the largest RankLowerBoundUsec of the sampled ranks
    int bound_rank;     // whose that is
  };
  std::vector<Candidate> candidates;
  std::optional<double> fastest;  // the fastest prediction so far
  std::string fastest_name;
  auto note_fastest = [&](const Prediction& prediction) {
    if (prediction.usec.has_value() && (!fastest.has_value() || *prediction.usec < *fastest)) {
      fastest = prediction.usec;
      fastest_name = prediction.algorithm;
    }
  };
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
    // The node engine's algorithms are timed from its data flow (node_data_flow.h).
    const ScheduleGenerator generate =
        algorithm.on_node() ? NodeEngineDataFlow : algorithm.generate;
    if (algorithm.node_levels) {
      const absl::Time start = absl::Now();
      absl::StatusOr<double> usec =
          PredictNodeLevels(call, profile, topology, options, algorithm.runs_by_stripes(),
                            prediction.steps, prediction.skipped);
      if (!usec.ok()) return usec.status();
      if (*usec >= 0) prediction.usec = *usec;
      prediction.simulate_seconds = SecondsSince(start);
      note_fastest(prediction);
      predictions.push_back(std::move(prediction));
      continue;
    }
    std::string not_modelled;
    if (algorithm.on_node() && !profile.has_engine()) {
      not_modelled = absl::StrCat("not simulated: profile ", profile.name,
                                  " has no node engine figures (engine.*; zcoll_bench "
                                  "--calibrate measures them)");
    }
    if (!not_modelled.empty()) {
      prediction.skipped = std::move(not_modelled);
      predictions.push_back(std::move(prediction));
      continue;
    }
    const absl::Time generate_start = absl::Now();
    const TransferModel transfers = !algorithm.on_node()  ? TransferModel::kMessages
                                    : call.mapped_buffers ? TransferModel::kNodeEngineMappedBuffers
                                                          : TransferModel::kNodeEngine;
    // Five ranks' schedules first: when even the fewest steps among them, times the
    // ranks, pass the budget, the whole would (give or take), and generating it all
    // to find out costs as much as simulating. Their own steps also bound the time.
    uint64_t fewest = UINT64_MAX;
    Candidate candidate{&algorithm, generate, transfers, predictions.size(), 0, 0};
    for (const int r : {0, call.ranks / 4, call.ranks / 2, call.ranks / 4 * 3, call.ranks - 1}) {
      const Schedule schedule = generate(rank_args(r), topology, r);
      fewest = std::min<uint64_t>(fewest, schedule.steps().size());
      const double bound =
          RankLowerBoundUsec(schedule, call.element_bytes, transfers, topology, profile);
      if (bound > candidate.bound_usec) {
        candidate.bound_usec = bound;
        candidate.bound_rank = r;
      }
    }
    prediction.generate_seconds = SecondsSince(generate_start);
    if (fewest * static_cast<uint64_t>(call.ranks) > options.max_steps) {
      prediction.skipped = absl::StrCat(
          "not simulated: its schedules would hold about ", fewest * uint64_t(call.ranks),
          " steps (the fewest of 5 sampled ranks' times the ranks), past the budget of ",
          options.max_steps, " (--max-steps)");
    } else {
      candidates.push_back(candidate);
    }
    predictions.push_back(std::move(prediction));
  }
  // The candidates least bounded first, so that a fast one is known early and the
  // slower ones can be seen to be slower without simulating them.
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.bound_usec < b.bound_usec; });
  for (const Candidate& candidate : candidates) {
    Prediction& prediction = predictions[candidate.prediction];
    if (options.skip_slower && !prediction.chosen && fastest.has_value() &&
        candidate.bound_usec > *fastest) {
      prediction.at_least_usec = candidate.bound_usec;
      prediction.skipped = absl::StrFormat(
          "not simulated: rank %d's own steps take at least %.3f us, more than %s's %.3f us, "
          "so it cannot be the fastest",
          candidate.bound_rank, candidate.bound_usec, fastest_name, *fastest);
      continue;
    }
    const absl::Time generate_start = absl::Now();
    TimedSchedules timed(candidate.transfers);
    uint64_t steps = 0;
    for (int r = 0; r < call.ranks; ++r) {
      const Schedule schedule = candidate.generate(rank_args(r), topology, r);
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
    prediction.generate_seconds += SecondsSince(generate_start);
    prediction.steps = steps;
    prediction.memory_bytes = timed.MemoryBytes();
    if (prediction.skipped.empty()) {
      const absl::Time simulate_start = absl::Now();
      absl::StatusOr<SimulationResult> result = Simulate(timed, topology, profile);
      if (!result.ok()) {
        return absl::InternalError(absl::StrCat(candidate.algorithm->name, " on ", call.ranks,
                                                " ranks: ", result.status().message()));
      }
      prediction.simulate_seconds = SecondsSince(simulate_start);
      prediction.usec = result->usec;
      prediction.network_bytes = result->network_bytes;
      note_fastest(prediction);
    }
  }
  if (!found) {
    return FindAlgorithm(call.collective, options.algorithm).status();
  }
  return predictions;
}

double LowerBoundUsec(const PredictionCase& call, const MachineProfile& given_profile,
                      const Topology& topology) {
  const MachineProfile profile =
      ProfileForFootprint(given_profile, CallFootprintBytes(call, given_profile, topology));
  const Collective collective = FixedSizeForm(call.collective);
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
  switch (collective) {
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
      // A rank's port carries its node's blocks; the others' come through the NIC.
      nic = (p - q) * n, port = (q - 1) * n;
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
  // Each element of the results takes at least p-1 operations in all (an exscan's p-2:
  // rank 1's result is rank 0's contribution), done by p ranks at best.
  double operations = 0;
  if (IsReduction(call.collective)) {
    operations = std::max(0.0, call.collective == Collective::kExscan ? p - 2 : p - 1) / p * n;
  }
  const LinkCost& network = profile.link(LinkClass::kNetwork);
  // The fastest and nearest link a rank's port may use within its node: the bound must
  // hold for a schedule that keeps its bytes within NUMA domains.
  LinkCost within = profile.link(LinkClass::kNode);
  const bool numa_usable = q / std::max(1, profile.numa_per_node) >= 2;
  if (numa_usable) {
    const LinkCost& numa = profile.link(LinkClass::kNuma);
    within.bytes_per_usec = std::max(within.bytes_per_usec, numa.bytes_per_usec);
    within.latency_usec = std::min(within.latency_usec, numa.latency_usec);
  }
  const double operations_usec = operations / profile.reduce_bytes_per_usec;
  // What the node's ranks must copy in all, as an even share per CPU: every rank's
  // result but its own contribution for Allgather and Alltoall, (q - 1) blocks each;
  // q - 1 vectors or blocks over q CPUs for the others (Allreduce twice: its
  // reduce-scatter and allgather).
  double copied = share(q) * n;
  if (collective == Collective::kAllreduce) copied = 2 * share(q) * n;
  if (collective == Collective::kAllgather || collective == Collective::kAlltoall) {
    copied = (q - 1) * n;
  }
  // The CPU time of a node's copies, `bytes` an even share of them per CPU at
  // `usec_per_byte` of CPU time each, with the CPU's share of the reductions (both hold
  // the same CPU). On more than one node the NIC might bring a rank some of those bytes
  // instead, at most B * T of them in a time T: then q * T >= q * o + (q * bytes - B * T)
  // * k, so T >= q * (o + bytes * k) / (q + B * k); and T >= o whatever the NIC brings.
  const double nic_relief = nodes > 1 ? network.bytes_per_usec : 0;
  auto cpu_usec = [&](double bytes, double usec_per_byte) {
    return std::max(operations_usec, q * (operations_usec + bytes * usec_per_byte) /
                                         (q + nic_relief * usec_per_byte));
  };
  // Messages within a node: the busiest port's bytes at the link's speed, and where
  // the node's links are the CPUs' copies (a shared-memory transport), every byte also
  // holds its receiver's CPU, and its sender's too if it goes eagerly. A message past
  // eager_bytes may leave a busy sender's copy to the receiver (SendersCopyIsOptional),
  // so only a call none of whose messages can pass it (no buffer of the call is larger)
  // holds both.
  const bool cpus_copy_messages = profile.link(LinkClass::kNode).cpu_copies &&
                                  (!numa_usable || profile.link(LinkClass::kNuma).cpu_copies);
  const bool blocks_per_rank =
      collective == Collective::kAllgather || collective == Collective::kAlltoall ||
      collective == Collective::kScatter || collective == Collective::kGather;
  const double largest_buffer = blocks_per_rank ? p * n : n;
  const double cpus_per_byte = largest_buffer <= static_cast<double>(profile.eager_bytes) ? 2 : 1;
  double within_usec = port / within.bytes_per_usec;
  if (cpus_copy_messages && q > 1) {
    within_usec = std::max(within_usec, cpu_usec(copied, cpus_per_byte / within.bytes_per_usec));
  }
  // The node engine, where the profile has it, has no ports: a node call's bytes are
  // copied by the CPUs of the ranks that read (or write) them, once. Its reductions may
  // read the peers' memory directly (buffers from AllocateBuffer), so a reduction's
  // reading need not be a copy, nor its writing (into the buffer the result belongs
  // in): what must be copied is Allreduce's allgather half, and nothing of Reduce's,
  // Reduce_scatter's, Scan's and Exscan's.
  const bool engine = profile.has_engine() && q > 1;
  if (engine) {
    double engine_copied = copied;
    if (collective == Collective::kAllreduce) engine_copied = share(q) * n;
    if (IsReduction(collective) && collective != Collective::kAllreduce) engine_copied = 0;
    within_usec = std::min(within_usec, cpu_usec(engine_copied, 1 / profile.engine.bytes_per_usec));
    within.latency_usec = std::min(within.latency_usec, profile.engine.latency_usec);
  }
  const double nic_usec = nic / (network.bytes_per_usec * profile.bisection);
  // The busiest link's bytes and then one latency for the last of them to arrive (or
  // the reductions' time), against the rounds of latency the data must travel:
  // log2 of the ranks for the collectives where every rank's data reaches every
  // other's through others, one hop for those where it may go directly.
  const double busiest_usec =
      std::max({nic > 0 ? nic_usec + network.latency_usec : 0.0,
                port > 0 ? within_usec + within.latency_usec : 0.0, operations_usec});
  const bool direct = collective == Collective::kScatter || collective == Collective::kGather ||
                      collective == Collective::kAlltoall;
  const double rounds_usec =
      direct ? (nodes > 1 ? network.latency_usec : within.latency_usec)
             : CeilLog2(topology.num_nodes()) * network.latency_usec +
                   (engine ? 1 : CeilLog2(static_cast<int>(q))) * within.latency_usec;
  return std::max(busiest_usec, rounds_usec);
}

absl::StatusOr<std::vector<SelectionRule>> DeriveTuningRules(
    Collective collective, const std::vector<SweepWinner>& winners, int min_nodes) {
  std::vector<int> rank_counts;
  std::vector<size_t> sizes;
  for (const SweepWinner& point : winners) {
    rank_counts.push_back(point.ranks);
    sizes.push_back(point.bytes);
  }
  std::sort(rank_counts.begin(), rank_counts.end());
  rank_counts.erase(std::unique(rank_counts.begin(), rank_counts.end()), rank_counts.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<SelectionRule> rules;
  // The previous band's rules, reached up to this band when this one's are the same.
  size_t previous_begin = 0;
  for (size_t band = 0; band < rank_counts.size(); ++band) {
    // This band's winner at each size ("" where none, or no point).
    std::vector<absl::string_view> winner(sizes.size());
    for (const SweepWinner& point : winners) {
      if (point.ranks != rank_counts[band] || point.algorithm.empty()) continue;
      absl::StatusOr<const Algorithm*> algorithm = FindAlgorithm(collective, point.algorithm);
      if (!algorithm.ok()) return algorithm.status();
      const size_t at = std::lower_bound(sizes.begin(), sizes.end(), point.bytes) - sizes.begin();
      winner[at] = (*algorithm)->name;
    }
    std::vector<SelectionRule> band_rules;
    for (size_t first = 0; first < sizes.size();) {
      size_t last = first;
      while (last + 1 < sizes.size() && winner[last + 1] == winner[first]) ++last;
      if (!winner[first].empty()) {
        SelectionRule rule{collective, winner[first]};
        rule.min_bytes = first == 0 ? 0 : sizes[first - 1] + 1;
        if (last + 1 < sizes.size()) rule.max_bytes = sizes[last];
        rule.min_ranks = rank_counts[band];
        if (band + 1 < rank_counts.size()) rule.max_ranks = rank_counts[band + 1] - 1;
        rule.min_nodes = min_nodes;
        band_rules.push_back(rule);
      }
      first = last + 1;
    }
    const auto same_sizes = [](const SelectionRule& a, const SelectionRule& b) {
      return a.algorithm == b.algorithm && a.min_bytes == b.min_bytes && a.max_bytes == b.max_bytes;
    };
    if (band > 0 && rules.size() - previous_begin == band_rules.size() &&
        std::equal(band_rules.begin(), band_rules.end(), rules.begin() + previous_begin,
                   same_sizes)) {
      for (size_t i = previous_begin; i < rules.size(); ++i) {
        rules[i].max_ranks = band_rules.front().max_ranks;
      }
      continue;
    }
    previous_begin = rules.size();
    rules.insert(rules.end(), band_rules.begin(), band_rules.end());
  }
  return rules;
}

}  // namespace zcoll::sim
