// zcoll_sim: predicted times of zcoll's collectives at any scale (docs/design.md,
// "sim/"): each candidate algorithm's schedules for every rank, made by the generators
// zcoll runs, replayed by a discrete-event simulation under a machine profile; the
// algorithm zcoll's selection table picks marked; a lower bound beside.
//
//   bazel run -c opt //tools:zcoll_sim -- --coll=allreduce --ranks=65536 --min=1048576
//       --max=67108864 --format=csv     (one command)
//   bazel run -c opt //tools:zcoll_sim -- --coll=bcast --ranks=64,1024 --plot=/tmp/bcast.png

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "collectives/selection.h"
#include "core/version.h"
#include "sim/collective_model.h"
#include "sim/machine_profile.h"
#include "tools/command_line.h"
#include "tools/plot.h"

namespace zcoll::sim {
namespace {

constexpr char kUsage[] =
    "usage: zcoll_sim [--coll=NAME[,NAME...]] [--ranks=N[,N...]] [--min=BYTES] [--max=BYTES]\n"
    "                 [--factor=F] [--profile=NAME|FILE] [--nodes=K] [--algo=NAME]\n"
    "                 [--noncommutative] [--skew=S] [--buffers=malloc|zcoll]\n"
    "                 [--format=table|csv|json] [--plot=FILE.png] [--max-steps=N]\n"
    "                 [--print-profile=NAME] [--table] [--simulate-all] [--verbose]\n"
    "                 [--version]\n"
    "Predicts each algorithm's time for every size from --min to --max (multiplying by\n"
    "--factor, default 4) and rank count, on the machine of --profile (default\n"
    "'infiniband': 64-rank nodes on HDR InfiniBand; --print-profile shows one). Rows:\n"
    "coll,ranks,bytes,algorithm,predicted_usec,lower_bound_usec,chosen,steps,seconds\n"
    "(chosen: 1 for the algorithm zcoll's selection table picks; seconds: to generate\n"
    "and simulate). Algorithms not simulated are listed with the reason ('#' lines in\n"
    "CSV): past the step budget (--max-steps), or slower than one already simulated,\n"
    "which one of its ranks' own steps show (they take longer than that one's whole\n"
    "call: it cannot be the fastest). --simulate-all simulates those too, as --plot\n"
    "does; the built-in table's choice is always simulated. Bytes as zcoll_bench counts\n"
    "them (the vector; scatter, gather, allgather, alltoall: one rank's block; the\n"
    "v-forms: every rank's block that size). --plot draws time against bytes, one line\n"
    "per algorithm and one panel per collective and rank count (gnuplot). --verbose: each\n"
    "simulation's steps, memory and seconds on stderr. --nodes=K: the ranks on K nodes\n"
    "(as zcoll_run --nodes places them) instead of the profile's ranks_per_node.\n"
    "--skew=S (0 to 1): reduce_scatter's and the v-forms' blocks rise with the rank from\n"
    "1 - S to 1 + S times the size asked for (alltoallv: what each rank sends each), so\n"
    "that they average it; 0 (the default): all alike.\n"
    "--buffers=zcoll: every rank's buffers from Communicator::AllocateBuffer, so the node\n"
    "engine's reductions read its peers' contributions where they lie instead of copying\n"
    "them (default malloc: ordinary buffers, read through CMA).\n"
    "--table prints instead a tuning\n"
    "table (for ZCOLL_TUNING=FILE): rules that pick each rank count's and size's fastest\n"
    "simulated algorithm, for rank counts that span nodes, with each point's times as\n"
    "comments.\n"
    "colls: reduce allreduce reduce_scatter_block reduce_scatter scatter scatterv bcast\n"
    "gather gatherv allgather allgatherv alltoall alltoallv barrier scan exscan\n";

struct Options {
  std::vector<Collective> colls = {Collective::kAllreduce};
  std::vector<int> ranks = {1024};
  size_t min_bytes = 8;
  size_t max_bytes = size_t{1} << 20;
  size_t factor = 4;
  std::string profile = "infiniband";
  std::string algorithm;
  bool commutative = true;
  std::string format = "table";
  std::string plot;
  uint64_t max_steps = PredictOptions().max_steps;
  bool verbose = false;
  bool table = false;
  bool simulate_all = false;
  int nodes = 0;  // 0: as the profile's ranks_per_node fills them
  double skew = 0;
  bool mapped_buffers = false;  // --buffers=zcoll
};

bool ParseOptions(int argc, char** argv, Options& options, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const CommandLineOption option = NextOption(
        argc, argv, i,
        {"--help", "--version", "--noncommutative", "--verbose", "--table", "--simulate-all"});
    const std::string& argument = option.name;
    const std::string& value = option.value;
    auto number = [&](auto& out, auto minimum) {
      return ParseNumberOption(option, out, error, minimum);
    };
    if (argument == "--coll") {
      options.colls.clear();
      for (absl::string_view name : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        absl::StatusOr<Collective> collective = ParseCollective(name);
        if (!collective.ok()) {
          error = absl::StrCat("--coll: ", collective.status().message());
          return false;
        }
        options.colls.push_back(*collective);
      }
      if (options.colls.empty()) {
        error = "--coll names no collective";
        return false;
      }
    } else if (argument == "--ranks") {
      options.ranks.clear();
      for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        int ranks = 0;
        if (!absl::SimpleAtoi(item, &ranks) || ranks < 2 || ranks > (1 << 22)) {
          error = absl::StrCat("--ranks: '", item, "' is not a rank count from 2 to 4194304");
          return false;
        }
        options.ranks.push_back(ranks);
      }
      if (options.ranks.empty()) {
        error = "--ranks names no rank count";
        return false;
      }
    } else if (argument == "--min") {
      if (!number(options.min_bytes, size_t{0})) return false;
    } else if (argument == "--max") {
      if (!number(options.max_bytes, size_t{0})) return false;
    } else if (argument == "--factor") {
      if (!number(options.factor, size_t{2})) return false;
    } else if (argument == "--nodes") {
      if (!number(options.nodes, 1)) return false;
    } else if (argument == "--max-steps") {
      if (!number(options.max_steps, uint64_t{1})) return false;
    } else if (argument == "--profile") {
      options.profile = value;
    } else if (argument == "--algo") {
      options.algorithm = value;
    } else if (argument == "--verbose") {
      options.verbose = true;
    } else if (argument == "--table") {
      options.table = true;
    } else if (argument == "--simulate-all") {
      options.simulate_all = true;
    } else if (argument == "--noncommutative") {
      options.commutative = false;
    } else if (argument == "--skew") {
      if (!absl::SimpleAtod(value, &options.skew) || !(options.skew >= 0 && options.skew <= 1)) {
        error = absl::StrCat("--skew is a number from 0 to 1, not '", value, "'");
        return false;
      }
    } else if (argument == "--buffers") {
      if (value != "malloc" && value != "zcoll") {
        error = absl::StrCat("--buffers is malloc or zcoll, not '", value, "'");
        return false;
      }
      options.mapped_buffers = value == "zcoll";
    } else if (argument == "--format") {
      if (value != "table" && value != "csv" && value != "json") {
        error = absl::StrCat("--format is table, csv or json, not '", value, "'");
        return false;
      }
      options.format = value;
    } else if (argument == "--plot") {
      options.plot = value;
    } else if (argument == "--print-profile") {
      // A shipped profile as written, with its sources; a file as it parses.
      for (const ShippedProfile& shipped : ShippedProfiles()) {
        if (shipped.name == value) {
          std::printf("%s", std::string(shipped.text).c_str());
          std::exit(0);
        }
      }
      absl::StatusOr<MachineProfile> profile = LoadMachineProfile(value);
      if (!profile.ok()) {
        error = std::string(profile.status().message());
        return false;
      }
      std::printf("%s", FormatMachineProfile(*profile, "").c_str());
      std::exit(0);
    } else if (argument == "--version") {
      std::printf("zcoll_sim %s\n", std::string(kVersion).c_str());
      std::exit(0);
    } else if (argument == "--help") {
      std::printf("%s", kUsage);
      std::exit(0);
    } else {
      error = absl::StrCat("unknown option ", argument);
      return false;
    }
  }
  for (const int ranks : options.ranks) {
    if (options.nodes > ranks) {
      error = absl::StrCat("--nodes (", options.nodes, ") is more than --ranks ", ranks);
      return false;
    }
  }
  if (options.table && !options.algorithm.empty()) {
    error = "--table chooses among every algorithm; it takes no --algo";
    return false;
  }
  if (options.min_bytes > options.max_bytes) {
    error =
        absl::StrCat("--min (", options.min_bytes, ") is above --max (", options.max_bytes, ")");
    return false;
  }
  return true;
}

std::vector<size_t> Sizes(const Options& options, Collective collective) {
  if (collective == Collective::kBarrier) return {0};
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    sizes.push_back(bytes);
    if (bytes == 0) break;
  }
  return sizes;
}

long PeakResidentMegabytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

PredictionCase CallOf(const Options& options, Collective collective, int ranks, size_t bytes) {
  PredictionCase call;
  call.collective = collective;
  call.ranks = ranks;
  call.bytes = bytes;
  call.commutative = options.commutative;
  call.skew = options.skew;
  call.mapped_buffers = options.mapped_buffers;
  return call;
}

// Whether every rank's block of `bytes` would be empty (nothing to predict).
bool EmptyBlocks(Collective collective, size_t bytes, int ranks, size_t element_bytes) {
  return (collective == Collective::kReduceScatterBlock ||
          collective == Collective::kReduceScatter) &&
         bytes / element_bytes < static_cast<size_t>(ranks);
}

// --table: the fastest simulated algorithm of every point of the sweep, as tuning rules.
int RunTable(const Options& options, const MachineProfile& profile) {
  PredictOptions predict;
  predict.max_steps = options.max_steps;
  predict.skip_slower = !options.simulate_all;
  std::vector<std::string> ranks_text;
  for (const int ranks : options.ranks) ranks_text.push_back(absl::StrCat(ranks));
  std::printf(
      "# zcoll tuning table (ZCOLL_TUNING=FILE), derived by zcoll_sim %s --table from the\n"
      "# machine profile '%s' (%d ranks a node): at each rank count (%s) and size\n"
      "# (%zu to %zu bytes, x%zu) the fastest simulated algorithm%s. Rules need 2 nodes or\n"
      "# more: one node is left to the built-in table (its node engine), and so are the\n"
      "# points where the built-in table picks an algorithm that is not simulated.\n",
      std::string(kVersion).c_str(), profile.name.c_str(), profile.ranks_per_node,
      absl::StrJoin(ranks_text, ",").c_str(), options.min_bytes, options.max_bytes, options.factor,
      options.commutative ? "" : " for a non-commutative op");
  for (const Collective collective : options.colls) {
    const std::string coll(CollectiveName(collective));
    std::vector<SweepWinner> winners;
    for (const int ranks : options.ranks) {
      absl::StatusOr<Topology> topology = SimulatedTopology(profile, ranks, options.nodes);
      if (!topology.ok()) {
        std::fprintf(stderr, "zcoll_sim: %s\n", std::string(topology.status().message()).c_str());
        return 2;
      }
      if (topology->num_nodes() == 1) {
        std::printf("# %s on %d ranks: one node; left to the built-in table\n", coll.c_str(),
                    ranks);
        continue;
      }
      for (const size_t bytes : Sizes(options, collective)) {
        const PredictionCase call = CallOf(options, collective, ranks, bytes);
        if (EmptyBlocks(collective, bytes, ranks, call.element_bytes)) continue;
        absl::StatusOr<std::vector<Prediction>> predictions =
            PredictAlgorithms(call, profile, *topology, predict);
        if (!predictions.ok()) {
          std::fprintf(stderr, "zcoll_sim: %s\n",
                       std::string(predictions.status().message()).c_str());
          return 2;
        }
        const double bound = LowerBoundUsec(call, profile, *topology);
        const Prediction* best = nullptr;
        std::vector<std::string> times;
        const Prediction* unsimulated_choice = nullptr;
        for (const Prediction& p : *predictions) {
          if (p.chosen && !p.usec.has_value()) unsimulated_choice = &p;
          if (!p.usec.has_value()) continue;
          times.push_back(absl::StrFormat("%s %.2f%s", p.algorithm, *p.usec, p.chosen ? "*" : ""));
          if (best == nullptr || *p.usec < *best->usec) best = &p;
        }
        // Where the built-in choice is not simulated (node_levels whose level calls are
        // not), nothing shows that another is faster: the point is left to the built-in
        // table.
        winners.push_back(SweepWinner{
            ranks, bytes, best != nullptr && unsimulated_choice == nullptr ? best->algorithm : ""});
        if (unsimulated_choice != nullptr) {
          std::printf(
              "# %s %d ranks %zu bytes: left to the built-in table, whose %s is not "
              "simulated (%s)\n",
              coll.c_str(), ranks, bytes, unsimulated_choice->algorithm.c_str(),
              absl::StrJoin(times, ", ").c_str());
        } else if (best == nullptr) {
          std::printf("# %s %d ranks %zu bytes: none simulated\n", coll.c_str(), ranks, bytes);
        } else {
          std::printf("# %s %d ranks %zu bytes: %s, %.2fx the bound %.2f us (%s)\n", coll.c_str(),
                      ranks, bytes, best->algorithm.c_str(), *best->usec / bound, bound,
                      absl::StrJoin(times, ", ").c_str());
        }
        std::fflush(stdout);
      }
    }
    absl::StatusOr<std::vector<SelectionRule>> rules =
        DeriveTuningRules(collective, winners, /*min_nodes=*/2);
    if (!rules.ok()) {
      std::fprintf(stderr, "zcoll_sim: %s\n", std::string(rules.status().message()).c_str());
      return 2;
    }
    for (const SelectionRule& rule : *rules) std::printf("%s\n", FormatTuningRule(rule).c_str());
  }
  std::printf("# (us: predicted microseconds; *: the built-in table's choice)\n");
  std::fprintf(stderr, "zcoll_sim: peak resident memory %ld MiB\n", PeakResidentMegabytes());
  return 0;
}

int Run(const Options& options) {
  absl::StatusOr<MachineProfile> profile = LoadMachineProfile(options.profile);
  if (!profile.ok()) {
    std::fprintf(stderr, "zcoll_sim: --profile: %s\n",
                 std::string(profile.status().message()).c_str());
    return 2;
  }
  // The choices marked are those of the table a communicator here would use.
  if (const absl::StatusOr<std::vector<SelectionRule>>& tuned = TuningFromEnvironment();
      !tuned.ok()) {
    std::fprintf(stderr, "zcoll_sim: %s\n", std::string(tuned.status().message()).c_str());
    return 2;
  }
  if (options.table) return RunTable(options, *profile);
  PredictOptions predict;
  predict.max_steps = options.max_steps;
  predict.algorithm = options.algorithm;
  // A plot draws every algorithm's line.
  predict.skip_slower = !options.simulate_all && options.plot.empty();
  std::vector<TimedRow> plotted;
  std::vector<std::string> json_rows;
  if (options.format == "csv") {
    std::printf(
        "coll,ranks,bytes,algorithm,predicted_usec,lower_bound_usec,chosen,steps,seconds\n");
  } else if (options.format == "table") {
    std::printf("profile %s (%d ranks a node, %d NUMA domains)\n", profile->name.c_str(),
                profile->ranks_per_node, profile->numa_per_node);
    std::printf("%-21s %7s %10s %-19s %13s %13s %7s %s\n", "coll", "ranks", "bytes", "algorithm",
                "predicted_us", "lower_bound", "x_bound", "");
  }
  for (const int ranks : options.ranks) {
    absl::StatusOr<Topology> topology = SimulatedTopology(*profile, ranks, options.nodes);
    if (!topology.ok()) {
      std::fprintf(stderr, "zcoll_sim: %s\n", std::string(topology.status().message()).c_str());
      return 2;
    }
    for (const Collective collective : options.colls) {
      for (const size_t bytes : Sizes(options, collective)) {
        const PredictionCase call = CallOf(options, collective, ranks, bytes);
        if (EmptyBlocks(collective, bytes, ranks, call.element_bytes)) {
          // Every rank's block would be empty: nothing to predict.
          const std::string note = absl::StrFormat(
              "%s on %d ranks: %zu bytes are less than one %zu-byte element a rank; skipped",
              CollectiveName(collective), ranks, bytes, call.element_bytes);
          std::printf(options.format == "csv" ? "# %s\n" : "%s\n", note.c_str());
          continue;
        }
        absl::StatusOr<std::vector<Prediction>> predictions =
            PredictAlgorithms(call, *profile, *topology, predict);
        if (!predictions.ok()) {
          std::fprintf(stderr, "zcoll_sim: %s\n",
                       std::string(predictions.status().message()).c_str());
          return 2;
        }
        const double bound = LowerBoundUsec(call, *profile, *topology);
        const std::string coll(CollectiveName(collective));
        for (const Prediction& p : *predictions) {
          const double seconds = p.generate_seconds + p.simulate_seconds;
          if (options.format == "csv") {
            if (p.usec.has_value()) {
              std::printf("%s,%d,%zu,%s,%.3f,%.3f,%d,%llu,%.2f\n", coll.c_str(), ranks, bytes,
                          p.algorithm.c_str(), *p.usec, bound, p.chosen ? 1 : 0,
                          static_cast<unsigned long long>(p.steps), seconds);
            } else {
              std::printf("# %s,%d,%zu,%s%s: %s\n", coll.c_str(), ranks, bytes, p.algorithm.c_str(),
                          p.chosen ? " (chosen)" : "", p.skipped.c_str());
            }
          } else if (options.format == "json") {
            json_rows.push_back(absl::StrFormat(
                "    {\"coll\": \"%s\", \"ranks\": %d, \"bytes\": %zu, \"algorithm\": \"%s\", "
                "\"predicted_usec\": %s, \"lower_bound_usec\": %.3f, \"chosen\": %s, "
                "\"steps\": %llu, \"seconds\": %.2f%s%s}",
                coll, ranks, bytes, p.algorithm,
                p.usec.has_value() ? absl::StrFormat("%.3f", *p.usec) : "null", bound,
                p.chosen ? "true" : "false", static_cast<unsigned long long>(p.steps), seconds,
                p.at_least_usec.has_value()
                    ? absl::StrFormat(", \"at_least_usec\": %.3f", *p.at_least_usec)
                    : "",
                p.skipped.empty() ? "" : absl::StrCat(", \"skipped\": \"", p.skipped, "\"")));
          } else if (p.usec.has_value()) {
            std::printf("%-21s %7d %10zu %-19s %13.2f %13.2f %7.2f %s\n", coll.c_str(), ranks,
                        bytes, p.algorithm.c_str(), *p.usec, bound,
                        bound > 0 ? *p.usec / bound : 0.0, p.chosen ? "<- chosen" : "");
          } else {
            std::printf("%-21s %7d %10zu %-19s %s%s\n", coll.c_str(), ranks, bytes,
                        p.algorithm.c_str(), p.chosen ? "(chosen) " : "", p.skipped.c_str());
          }
          std::fflush(stdout);
          if (options.verbose && p.steps > 0) {
            std::fprintf(stderr,
                         "zcoll_sim: %s %d ranks %zu bytes %s: %llu steps, %.1f MiB of "
                         "schedules, %.2f s to generate, %.2f s to simulate\n",
                         coll.c_str(), ranks, bytes, p.algorithm.c_str(),
                         static_cast<unsigned long long>(p.steps), p.memory_bytes / 1048576.0,
                         p.generate_seconds, p.simulate_seconds);
          }
          if (p.usec.has_value()) {
            plotted.push_back(TimedRow{p.algorithm, absl::StrCat(coll, ", ", ranks, " ranks"),
                                       ranks, bytes, *p.usec});
          }
        }
      }
    }
  }
  if (options.format == "json") {
    std::printf(
        "{\n  \"zcoll_version\": \"%s\",\n  \"profile\": \"%s\",\n  \"rows\": [\n%s\n  ]\n}\n",
        std::string(kVersion).c_str(), profile->name.c_str(),
        absl::StrJoin(json_rows, ",\n").c_str());
  }
  std::fprintf(stderr, "zcoll_sim: peak resident memory %ld MiB\n", PeakResidentMegabytes());
  if (!options.plot.empty()) {
    const std::string title =
        absl::StrCat("zcoll_sim ", kVersion, ": predicted on ", profile->name);
    if (absl::Status plotted_status = PlotTimes(plotted, title, options.plot);
        !plotted_status.ok()) {
      std::fprintf(stderr, "zcoll_sim: --plot: %s\n",
                   std::string(plotted_status.message()).c_str());
      return 1;
    }
    std::fprintf(stderr, "plotted into %s\n", options.plot.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace zcoll::sim

int main(int argc, char** argv) {
  // Each rank's schedule is built, copied into the timed schedules and freed, once per
  // rank and candidate: with glibc's defaults its few hundred KiB were mapped from and
  // given back to the kernel every time, and the kernel's page faults took over a
  // quarter of the samples (8192 ranks, 64 MiB rabenseifner; generating took 3.9 s,
  // 1.7 s with these). Kept in the heap instead, the pages are reused.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  zcoll::sim::Options options;
  std::string error;
  if (!zcoll::sim::ParseOptions(argc, argv, options, error)) {
    std::fprintf(stderr, "zcoll_sim: %s\n%s", error.c_str(), zcoll::sim::kUsage);
    return 2;
  }
  return zcoll::sim::Run(options);
}
