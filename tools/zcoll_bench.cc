// zcoll_bench: times zcoll's collectives with the OSU method of docs/benchmarks.md, on a
// job it forks itself (emulated nodes on this machine), verifies every collective's
// result, and prints a table, CSV rows `coll,ranks,bytes,usec` that line up with
// tools/peers/run_peers.sh, or JSON.
//
//   bazel run -c opt //tools:zcoll_bench                       # 4 ranks, 2 nodes
//   bazel run -c opt //tools:zcoll_bench -- --np 2 --nodes 1 --max 8388608 --format=csv
//   bazel run -c opt //tools:zcoll_bench -- --np 2 --nodes 2 --provider=ofi:tcp
//
// Method: 1000 timed iterations after 100 warm-up ones up to 8 KiB, 100 after 10
// above (--iterations=N: N after N/10 at every size, for a quick check); each iteration timed alone
// (reduce: barrier; t0; coll; t1 -- the others: t0; coll; t1; barrier; t0 and t1 clock_gettime, as
// MPI_Wtime, with the call alone between them); the per-rank mean averaged over ranks. Float sum.
// Ranks are bound to a core each while they fit the machine's (--bind=none: not), as mpirun binds
// the peers'.
//
// --alloc=zcoll puts every buffer in memory from Communicator::AllocateBuffer (the
// node engine's zero-copy path; MPI_Alloc_mem's role) instead of malloc, and adds
// after each allreduce row a `sum_loop` row: rank 0 alone timing a plain loop
// c[i] = a[i] + b[i] over the same bytes (reading twice the message, writing it once),
// the memory bound a 2-rank allreduce is measured against (README); and after each
// allgather row a `copy_loop` row: every rank at once copying its block into each of
// the ranks' places of a receive-sized buffer (memcpy), the copies an allgather cannot
// do without, timed as the collectives are.

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "collectives/communicator.h"
#include "collectives/topology_discovery.h"
#include "core/config.h"
#include "core/version.h"
#include "ops/reduce.h"
#include "sim/machine_profile.h"
#include "tools/calibration.h"
#include "tools/command_line.h"
#include "tools/plot.h"
#include "transport/bootstrap/fork_meeting_bootstrap.h"
#include "transport/bootstrap/forked_job.h"
#include "transport/transport.h"
#include "transport/transport_factory.h"

namespace zcoll {
namespace {

// The names of docs/benchmarks.md and mpi_coll_bench.c.
constexpr absl::string_view kBenchmarkedColls[] = {
    "reduce",         "allreduce",    "reduce_scatter_block",
    "reduce_scatter", "scatter",      "scatterv",
    "bcast",          "gather",       "allgather",
    "alltoall",       "reduce_local", "barrier",
    "scan",           "exscan"};

// The seconds of the clock that both peers' MPI_Wtime read (and zcoll's own): about
// 60 cycles a read here, against about 250 for absl::Now(), whose difference the
// timed region would add to every call (0.09 us at this machine's 2.1 GHz).
double MonotonicSeconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct Options {
  int ranks = 4;
  int nodes = 2;
  std::vector<std::string> colls = {"reduce",         "allreduce", "reduce_scatter_block",
                                    "reduce_scatter", "scatter",   "scatterv"};
  size_t min_bytes = 8;
  size_t max_bytes = 1 << 20;
  std::string provider;        // the network provider; empty: ZCOLL_PROVIDER
  std::string local_provider;  // empty: ZCOLL_LOCAL_PROVIDER
  std::string algorithm;       // forced where the collective has it
  std::string format = "table";
  bool bind = true;            // a core per rank, while they fit (BindToCore)
  bool zcoll_buffers = false;  // --alloc=zcoll
  bool persistent = false;     // --persistent: *Init once, then Start + Wait
  std::string plot;            // --plot=FILE.png: draw the rows there at the end
  std::string plot_csv;        // --plot-csv=FILE: only draw FILE's rows (no job)
  std::string title;           // the plot's title; empty: the run's description
  std::string calibrate;       // --calibrate=FILE: measure a simulator profile into FILE
  bool cached_links = false;   // --cached-links: give links within a node a cached rate
  int iterations = 0;          // --iterations=N: timed iterations a size; 0: the method's
};

constexpr const char* kUsage =
    "usage: zcoll_bench [--np N] [--nodes K] [--colls=a,b,...] [--min BYTES] [--max BYTES]\n"
    "                   [--provider=NAME] [--local-provider=NAME] [--algo=NAME]\n"
    "                   [--format=table|csv|json] [--bind=core|none] [--alloc=malloc|zcoll]\n"
    "                   [--persistent] [--iterations=N] [--plot=FILE.png [--title=TEXT]]\n"
    "                   [--plot-csv=ROWS.csv --plot=FILE.png]\n"
    "                   [--calibrate=PROFILE [--cached-links]] [--version]\n"
    "--calibrate: measures this machine's figures for zcoll_sim (2 ranks over the local\n"
    "  provider, 2 emulated nodes over --provider; the kernels) into a profile file\n"
    "  (zcoll_sim --profile=PROFILE) instead of timing collectives. --cached-links: the\n"
    "  links within a node get a cached rate too, for messages of data unwritten in the\n"
    "  call (rank 0's messages in a loop; README, \"Calibration and validation\").\n"
    "--plot: also draws the times (log-log usec against bytes, a panel per collective)\n"
    "  with gnuplot; --plot-csv: draws rows library,coll,ranks,bytes,usec from a file\n"
    "  (compare_peers.sh's) instead of running. --format=json: an object with the run's\n"
    "  metadata (zcoll version, host, CPU, cores, ranks, nodes, providers) and its rows.\n"
    "--persistent: each collective made once with its persistent form (AllreduceInit, ...)\n"
    "  and timed as Start + Wait (reduce_local has none: it runs as it is).\n"
    "--iterations=N: N timed iterations at every size after N/10 warm-up ones, instead of\n"
    "  the method's 1000 up to 8 KiB and 100 above (fewer: a quick check, not a figure).\n"
    "colls: reduce allreduce reduce_scatter_block reduce_scatter scatter scatterv bcast "
    "gather allgather alltoall reduce_local barrier scan exscan\n"
    "(barrier: one row, bytes 0, OSU's osu_barrier method, as the peers' benchmark)\n";

bool ParseOptions(int argc, char** argv, Options& options, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const CommandLineOption option =
        NextOption(argc, argv, i, {"--help", "--version", "--persistent", "--cached-links"});
    const std::string& argument = option.name;
    const std::string& value = option.value;
    auto number = [&](auto& out) { return ParseNumberOption(option, out, error); };
    if (argument == "--np") {
      if (!number(options.ranks) || options.ranks < 1 || options.ranks > 64) {
        if (error.empty()) error = "--np is 1..64";
        return false;
      }
    } else if (argument == "--nodes") {
      if (!number(options.nodes) || options.nodes < 1) {
        if (error.empty()) error = "--nodes is at least 1";
        return false;
      }
    } else if (argument == "--colls") {
      options.colls = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (argument == "--min") {
      if (!number(options.min_bytes)) return false;
    } else if (argument == "--max") {
      if (!number(options.max_bytes)) return false;
    } else if (argument == "--provider") {
      options.provider = value;
    } else if (argument == "--local-provider") {
      options.local_provider = value;
    } else if (argument == "--algo") {
      options.algorithm = value;
    } else if (argument == "--bind") {
      if (value != "core" && value != "none") {
        error = "--bind is core (a core per rank while they fit the machine's, as mpirun) or none";
        return false;
      }
      options.bind = value == "core";
    } else if (argument == "--alloc") {
      if (value != "malloc" && value != "zcoll") {
        error = "--alloc is malloc or zcoll (Communicator::AllocateBuffer)";
        return false;
      }
      options.zcoll_buffers = value == "zcoll";
    } else if (argument == "--persistent") {
      options.persistent = true;
    } else if (argument == "--iterations") {
      if (!number(options.iterations) || options.iterations < 1) {
        if (error.empty()) error = "--iterations is at least 1";
        return false;
      }
    } else if (argument == "--format") {
      options.format = value;
      if (value != "table" && value != "csv" && value != "json") {
        error = "--format is table, csv or json";
        return false;
      }
    } else if (argument == "--plot") {
      options.plot = value;
    } else if (argument == "--plot-csv") {
      options.plot_csv = value;
    } else if (argument == "--title") {
      options.title = value;
    } else if (argument == "--calibrate") {
      if (value.empty()) {
        error = "--calibrate needs the profile file to write (--calibrate=FILE)";
        return false;
      }
      options.calibrate = value;
    } else if (argument == "--cached-links") {
      options.cached_links = true;
    } else if (argument == "--version") {
      std::printf("zcoll_bench %s\n", std::string(kVersion).c_str());
      std::exit(0);
    } else {
      error = argument == "--help" ? "" : absl::StrCat("unknown option ", argument);
      return false;
    }
  }
  if (!options.plot_csv.empty() && options.plot.empty()) {
    error = "--plot-csv needs --plot=FILE.png to draw into";
    return false;
  }
  if (options.cached_links && options.calibrate.empty()) {
    error = "--cached-links is a choice of --calibrate's; give --calibrate=FILE too";
    return false;
  }
  if (!options.plot.empty() && !absl::EndsWith(options.plot, ".png")) {
    error = absl::StrCat("--plot '", options.plot, "' is not a .png file name");
    return false;
  }
  if (options.nodes > options.ranks) {
    error = absl::StrCat("--nodes ", options.nodes, " exceeds --np ", options.ranks);
    return false;
  }
  if (options.min_bytes == 0 || options.min_bytes > options.max_bytes) {
    error = "--min must be at least 1 and at most --max";
    return false;
  }
  for (const std::string& coll : options.colls) {
    if (std::find(std::begin(kBenchmarkedColls), std::end(kBenchmarkedColls), coll) ==
        std::end(kBenchmarkedColls)) {
      error = absl::StrCat("unknown collective '", coll, "'");
      return false;
    }
  }
  return true;
}

// The timed iterations at `bytes`: the method's, or `chosen` (--iterations) when not 0.
int IterationsFor(size_t bytes, int chosen) {
  if (chosen > 0) return chosen;
  return bytes <= 8192 ? 1000 : 100;
}

// A benchmark buffer of floats, zeroed: from malloc, or from AllocateBuffer.
class Floats {
 public:
  Floats() = default;
  Floats(size_t count, bool zcoll) : count_(count), zcoll_(zcoll) {
    const size_t bytes = std::max<size_t>(1, count) * sizeof(float);
    if (zcoll) {
      absl::StatusOr<void*> data = Communicator::AllocateBuffer(bytes);
      if (!data.ok()) {
        std::fprintf(stderr, "zcoll_bench: %s\n", data.status().ToString().c_str());
        std::exit(2);
      }
      data_ = static_cast<float*>(*data);
    } else {
      data_ = static_cast<float*>(std::calloc(1, bytes));
    }
  }
  Floats(Floats&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(other.count_), zcoll_(other.zcoll_) {}
  Floats& operator=(Floats&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(zcoll_, other.zcoll_);
    return *this;
  }
  ~Floats() {
    if (data_ == nullptr) return;
    if (zcoll_) {
      Communicator::FreeBuffer(data_).IgnoreError();
    } else {
      std::free(data_);
    }
  }
  float* data() const { return data_; }
  float* begin() const { return data_; }
  float* end() const { return data_ + count_; }
  float& operator[](size_t i) const { return data_[i]; }

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
  bool zcoll_ = false;
};

// One collective of the benchmark over prepared buffers, as mpi_coll_bench.c calls
// it (float sum, root 0).
struct Case {
  std::string coll;
  // The collective, resolved once: Run dispatches on it within the timed region, as
  // mpi_coll_bench.c's function pointer does (comparing the name with each
  // collective's, a scan took about 130 cycles more a call). None: reduce_local.
  std::optional<Collective> collective;
  size_t count;  // elements of the message as docs/benchmarks.md counts it
  Floats send;
  Floats recv;
  std::vector<size_t> counts;
  std::vector<size_t> displs;

  // --persistent: the collective made once (Init), and run as Start + Wait.
  std::optional<PersistentRequest> persistent;

  absl::Status Init(Communicator& comm) {
    const int size = comm.size();
    const size_t per_rank = std::max<size_t>(1, count / size);
    absl::StatusOr<PersistentRequest> made = absl::UnimplementedError("no persistent form");
    const DataType type = DataType::kFloat;
    if (coll == "reduce") {
      made = comm.ReduceInit(send.data(), recv.data(), count, type, PredefinedOp::kSum, 0);
    } else if (coll == "allreduce") {
      made = comm.AllreduceInit(send.data(), recv.data(), count, type, PredefinedOp::kSum);
    } else if (coll == "reduce_scatter_block") {
      made =
          comm.ReduceScatterBlockInit(send.data(), recv.data(), per_rank, type, PredefinedOp::kSum);
    } else if (coll == "reduce_scatter") {
      made = comm.ReduceScatterInit(send.data(), recv.data(), counts, type, PredefinedOp::kSum);
    } else if (coll == "scatter") {
      made = comm.ScatterInit(send.data(), recv.data(), count, type, 0);
    } else if (coll == "scatterv") {
      made = comm.ScattervInit(send.data(), counts, displs, recv.data(), count, type, 0);
    } else if (coll == "bcast") {
      made = comm.BcastInit(recv.data(), count, type, 0);
    } else if (coll == "gather") {
      made = comm.GatherInit(send.data(), recv.data(), count, type, 0);
    } else if (coll == "allgather") {
      made = comm.AllgatherInit(send.data(), recv.data(), count, type);
    } else if (coll == "alltoall") {
      made = comm.AlltoallInit(send.data(), recv.data(), count, type);
    } else if (coll == "barrier") {
      made = comm.BarrierInit();
    } else if (coll == "scan") {
      made = comm.ScanInit(send.data(), recv.data(), count, type, PredefinedOp::kSum);
    } else if (coll == "exscan") {
      made = comm.ExscanInit(send.data(), recv.data(), count, type, PredefinedOp::kSum);
    } else {
      return absl::OkStatus();  // reduce_local: no communicator, nothing to keep
    }
    if (!made.ok()) return made.status();
    persistent = std::move(*made);
    return absl::OkStatus();
  }

  absl::Status Run(Communicator& comm) {
    if (persistent.has_value()) {
      if (absl::Status started = persistent->Start(); !started.ok()) return started;
      return persistent->Wait();
    }
    const DataType type = DataType::kFloat;
    constexpr PredefinedOp kSum = PredefinedOp::kSum;
    if (!collective.has_value()) {
      return ReduceLocal(kSum, type, send.data(), recv.data(), count);
    }
    switch (*collective) {
      case Collective::kReduce:
        return comm.Reduce(send.data(), recv.data(), count, type, kSum, 0);
      case Collective::kAllreduce:
        return comm.Allreduce(send.data(), recv.data(), count, type, kSum);
      case Collective::kReduceScatterBlock:
        return comm.ReduceScatterBlock(send.data(), recv.data(),
                                       std::max<size_t>(1, count / comm.size()), type, kSum);
      case Collective::kReduceScatter:
        return comm.ReduceScatter(send.data(), recv.data(), counts, type, kSum);
      case Collective::kScatter:
        return comm.Scatter(send.data(), recv.data(), count, type, 0);
      case Collective::kScatterv:
        return comm.Scatterv(send.data(), counts, displs, recv.data(), count, type, 0);
      case Collective::kBcast:
        // Bcast moves `recv`, which the root fills (PrepareResult).
        return comm.Bcast(recv.data(), count, type, 0);
      case Collective::kGather:
        return comm.Gather(send.data(), recv.data(), count, type, 0);
      case Collective::kAllgather:
        return comm.Allgather(send.data(), recv.data(), count, type);
      case Collective::kAlltoall:
        return comm.Alltoall(send.data(), recv.data(), count, type);
      case Collective::kBarrier:
        return comm.Barrier();
      case Collective::kScan:
        return comm.Scan(send.data(), recv.data(), count, type, kSum);
      case Collective::kExscan:
        return comm.Exscan(send.data(), recv.data(), count, type, kSum);
      default:  // (the v-forms of gather, allgather and alltoall are not benchmarked)
        break;
    }
    return absl::InvalidArgumentError(absl::StrCat("zcoll_bench does not time ", coll));
  }
};

Case MakeCase(const std::string& coll, size_t bytes, int rank, int size, bool zcoll_buffers) {
  Case c;
  c.coll = coll;
  if (absl::StatusOr<Collective> parsed = ParseCollective(coll); parsed.ok()) {
    c.collective = *parsed;
  }
  c.count = std::max<size_t>(1, bytes / sizeof(float));
  const size_t total = c.count * static_cast<size_t>(size);
  c.send = Floats(total, zcoll_buffers);
  c.recv = Floats(total, zcoll_buffers);
  // Small integers: every sum is exact, so results can be checked exactly.
  for (size_t i = 0; i < total; ++i) c.send[i] = static_cast<float>(i % 7 + rank);
  const size_t per_rank = std::max<size_t>(1, c.count / size);
  if (coll == "reduce_scatter") c.counts.assign(size, per_rank);
  if (coll == "scatterv") {
    c.counts.assign(size, c.count);
    for (int r = 0; r < size; ++r) c.displs.push_back(c.count * r);
  }
  return c;
}

// Clears the result before the verifying run; a bcast's root holds its message there.
void PrepareResult(Case& c, int rank) {
  std::fill(c.recv.begin(), c.recv.end(), 0.0f);
  if (c.coll == "bcast" && rank == 0) std::copy_n(c.send.begin(), c.count, c.recv.begin());
}

// The number of wrong elements in this rank's result of the last Run.
size_t CountErrors(const Case& c, int rank, int size) {
  const float rank_sum = static_cast<float>(size * (size - 1) / 2);
  auto sum_at = [&](size_t i) {
    return static_cast<float>(size * static_cast<int>(i % 7)) + rank_sum;
  };
  size_t errors = 0;
  const size_t per_rank = std::max<size_t>(1, c.count / size);
  if (c.coll == "reduce" || c.coll == "allreduce") {
    if (c.coll == "reduce" && rank != 0) return 0;
    for (size_t i = 0; i < c.count; ++i) errors += c.recv[i] != sum_at(i);
  } else if (c.coll == "reduce_scatter_block" || c.coll == "reduce_scatter") {
    for (size_t i = 0; i < per_rank; ++i) errors += c.recv[i] != sum_at(per_rank * rank + i);
  } else if (c.coll == "scan" || c.coll == "exscan") {
    // Ranks 0..r (0..r-1 for exscan; rank 0's exscan result is undefined) each add
    // i % 7 + their rank.
    const int contributors = c.coll == "scan" ? rank + 1 : rank;
    if (contributors == 0) return 0;
    const float ranks_sum = static_cast<float>(contributors * (contributors - 1) / 2);
    for (size_t i = 0; i < c.count; ++i) {
      errors += c.recv[i] != static_cast<float>(contributors * static_cast<int>(i % 7)) + ranks_sum;
    }
  } else if (c.coll == "reduce_local") {
    // 0 + send.
    for (size_t i = 0; i < c.count; ++i) errors += c.recv[i] != c.send[i];
  } else if (c.coll == "scatter" || c.coll == "scatterv") {
    // Root 0's element c.count * rank + i.
    for (size_t i = 0; i < c.count; ++i) {
      errors += c.recv[i] != static_cast<float>((c.count * rank + i) % 7);
    }
  } else if (c.coll == "bcast") {
    for (size_t i = 0; i < c.count; ++i) errors += c.recv[i] != static_cast<float>(i % 7);
  } else if (c.coll == "gather" || c.coll == "allgather" || c.coll == "alltoall") {
    if (c.coll == "gather" && rank != 0) return 0;
    // Block r: rank r's first block (gathers) or its block `rank` (alltoall).
    const size_t from_block = c.coll == "alltoall" ? static_cast<size_t>(rank) : 0;
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < c.count; ++i) {
        errors += c.recv[c.count * r + i] !=
                  static_cast<float>((c.count * from_block + i) % 7 + static_cast<size_t>(r));
      }
    }
  }
  return errors;
}

// As Open MPI's mpirun binds its ranks by default (to a core each while they do not
// outnumber the cores): a rank left to the scheduler may share a core with its peer
// for a whole run, every wait then a context switch (the 2-rank runs of this machine
// went 0.4 or 1.0 us per 8 B allreduce, run by run, before this).
void BindToCore(int local_rank) {
  const std::vector<int> cpus = AllowedCpus();
  if (!cpus.empty()) SetAllowedCpus({cpus[static_cast<size_t>(local_rank) % cpus.size()]});
}

// The rows printed so far (rank 0's), for --plot.
std::vector<TimedRow>& PrintedRows() {
  static std::vector<TimedRow>* rows = new std::vector<TimedRow>();
  return *rows;
}

void PrintRow(const std::string& format, bool& first_row, absl::string_view coll, int ranks,
              size_t bytes, double usec) {
  PrintedRows().push_back({"zcoll", std::string(coll), ranks, bytes, usec});
  if (format == "csv") {
    std::printf("%s,%d,%zu,%.3f\n", std::string(coll).c_str(), ranks, bytes, usec);
  } else if (format == "json") {
    std::printf("%s\n    {\"coll\": \"%s\", \"ranks\": %d, \"bytes\": %zu, \"usec\": %.3f}",
                first_row ? "" : ",", std::string(coll).c_str(), ranks, bytes, usec);
  } else {
    std::printf("%-22s %6d %10zu %12.3f\n", std::string(coll).c_str(), ranks, bytes, usec);
  }
  first_row = false;
  std::fflush(stdout);
}

// out = x + y, vectorised (-O3 for this function alone: -c opt's -O2 may leave a loop of
// unknown length scalar, which would make the bound too easy).
__attribute__((noinline, optimize("O3"))) void SumArrays(const float* __restrict x,
                                                         const float* __restrict y,
                                                         float* __restrict out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = x[i] + y[i];
}

// The mean time of a plain c[i] = a[i] + b[i] over `bytes` of floats (buffers of
// AllocateBuffer, as the allreduce's), with the allreduce's iteration counts.
double SumLoopMicroseconds(size_t bytes, int chosen_iterations) {
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  Floats a(count, true), b(count, true), c(count, true);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i % 7);
    b[i] = 1.0f;
  }
  const int iterations = IterationsFor(bytes, chosen_iterations), warmup = iterations / 10;
  double total_seconds = 0;
  for (int it = 0; it < warmup + iterations; ++it) {
    const double start = MonotonicSeconds();
    SumArrays(a.data(), b.data(), c.data(), count);
    if (it >= warmup) total_seconds += MonotonicSeconds() - start;
    // (Reading the result keeps the loop.)
    if (c[count - 1] != static_cast<float>((count - 1) % 7) + 1.0f) std::abort();
  }
  return total_seconds / iterations * 1e6;
}

// This rank's mean time for copying its block of `bytes` into each of `ranks` places of
// a receive buffer (AllocateBuffer memory, as the allgather's), every rank at once
// between barriers, with the allgather's iteration counts: what an allgather's writes
// cost on this machine with nothing else to do.
absl::StatusOr<double> CopyLoopMicroseconds(Communicator& comm, size_t bytes,
                                            int chosen_iterations) {
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  const size_t ranks = static_cast<size_t>(comm.size());
  Floats block(count, true), result(count * ranks, true);
  for (size_t i = 0; i < count; ++i) block[i] = static_cast<float>(i % 7);
  const int iterations = IterationsFor(bytes, chosen_iterations), warmup = iterations / 10;
  double total_seconds = 0;
  absl::Status status = comm.Barrier();
  for (int it = 0; status.ok() && it < warmup + iterations; ++it) {
    const double start = MonotonicSeconds();
    for (size_t place = 0; place < ranks; ++place) {
      std::memcpy(result.data() + place * count, block.data(), count * sizeof(float));
    }
    if (it >= warmup) total_seconds += MonotonicSeconds() - start;
    status = comm.Barrier();
  }
  if (!status.ok()) return status;
  // (Reading the result keeps the copies, and checks them.)
  if (result[count * ranks - 1] != static_cast<float>((count - 1) % 7)) {
    return absl::InternalError(absl::StrCat("rank ", comm.rank(), ": copy_loop of ", bytes,
                                            " bytes: the last element copied is ",
                                            result[count * ranks - 1], ", not ", (count - 1) % 7));
  }
  return total_seconds / iterations * 1e6;
}

// A JSON string's contents (quotes, backslashes and control characters escaped).
std::string JsonEscaped(absl::string_view text) {
  std::string escaped;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      escaped += '\\';
      escaped += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      escaped += absl::StrFormat("\\u%04x", c);
    } else {
      escaped += c;
    }
  }
  return escaped;
}

// This machine's CPU as /proc/cpuinfo names it ("unknown" elsewhere).
std::string CpuModel() {
  FILE* file = std::fopen("/proc/cpuinfo", "r");
  if (file == nullptr) return "unknown";
  char line[512];
  std::string model = "unknown";
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    absl::string_view text(line);
    if (!absl::ConsumePrefix(&text, "model name")) continue;
    const size_t colon = text.find(':');
    if (colon == absl::string_view::npos) continue;
    model = std::string(absl::StripAsciiWhitespace(text.substr(colon + 1)));
    break;
  }
  std::fclose(file);
  return model;
}

// The opening of --format=json's object: what was measured, where and how, so that a
// saved result can be compared with another without guessing.
std::string JsonMetadata(const Options& options, int size) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const absl::StatusOr<ProviderChoice> providers = ProvidersFromEnvironment();
  std::vector<std::string> colls;
  for (const std::string& coll : options.colls) colls.push_back(absl::StrCat("\"", coll, "\""));
  return absl::StrFormat(
      "{\n  \"zcoll_version\": \"%s\",\n  \"date\": \"%s\",\n  \"host\": \"%s\",\n"
      "  \"cpu_model\": \"%s\",\n  \"cores\": %d,\n  \"ranks\": %d,\n  \"nodes\": %d,\n"
      "  \"local_provider\": \"%s\",\n  \"network_provider\": \"%s\",\n"
      "  \"algorithm\": \"%s\",\n  \"buffers\": \"%s\",\n  \"calls\": \"%s\",\n"
      "  \"datatype\": \"float\",\n"
      "  \"op\": \"sum\",\n  \"method\": \"OSU: mean of timed iterations after a warmup, "
      "averaged over ranks\",\n  \"iterations\": \"%s\",\n  \"collectives\": [%s],\n"
      "  \"rows\": [",
      kVersion, absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()),
      JsonEscaped(host), JsonEscaped(CpuModel()),
      static_cast<int>(std::thread::hardware_concurrency()), size, options.nodes,
      JsonEscaped(providers.ok() ? providers->local : "?"),
      JsonEscaped(providers.ok() ? providers->network : providers.status().message()),
      JsonEscaped(options.algorithm.empty() ? "selection table" : options.algorithm),
      options.zcoll_buffers ? "Communicator::AllocateBuffer" : "malloc",
      options.persistent ? "persistent (Init once, Start + Wait)" : "blocking",
      options.iterations > 0 ? absl::StrCat(options.iterations, " a size (--iterations)")
                             : std::string("1000 up to 8 KiB, 100 above"),
      absl::StrJoin(colls, ", "));
}

int RunRank(const Options& options, int rank, ForkMeeting& meeting) {
  // Every emulated node's ranks run on this machine: bound when all of them fit its
  // cores.
  if (options.bind && options.ranks <= static_cast<int>(std::thread::hardware_concurrency())) {
    BindToCore(rank);
  }
  CommunicatorOptions communicator_options;
  communicator_options.bootstrap =
      std::make_unique<ForkMeetingBootstrap>(meeting, rank, options.ranks);
  communicator_options.emulated_nodes = options.nodes;
  absl::StatusOr<Communicator> created = Communicator::Create(std::move(communicator_options));
  if (!created.ok()) {
    std::fprintf(stderr, "zcoll_bench: rank %d: %s\n", rank, created.status().ToString().c_str());
    return 2;
  }
  Communicator& comm = *created;
  const int size = comm.size();
  if (!options.algorithm.empty()) {
    for (const std::string& coll : options.colls) {
      absl::StatusOr<Collective> collective = ParseCollective(coll);
      if (collective.ok() && FindAlgorithm(*collective, options.algorithm).ok()) {
        comm.SetAlgorithm(*collective, options.algorithm).IgnoreError();
      }
    }
  }
  bool first_row = true;
  if (rank == 0) {
    if (options.format == "csv") std::printf("coll,ranks,bytes,usec\n");
    if (options.format == "table") {
      std::printf("# zcoll_bench: %d ranks on %d emulated nodes, float sum, OSU method\n", size,
                  options.nodes);
      std::printf("%-22s %6s %10s %12s\n", "coll", "ranks", "bytes", "usec");
    }
    if (options.format == "json") std::printf("%s", JsonMetadata(options, size).c_str());
  }
  for (const std::string& coll : options.colls) {
    // A barrier moves nothing: one row, bytes 0, each iteration just t0; barrier; t1.
    const bool barrier = coll == "barrier";
    for (size_t bytes = barrier ? 0 : options.min_bytes; bytes <= options.max_bytes;
         bytes = barrier ? options.max_bytes + 1 : bytes * 4) {
      Case c = MakeCase(coll, bytes, rank, size, options.zcoll_buffers);
      PrepareResult(c, rank);
      if (options.persistent) {
        if (absl::Status made = c.Init(comm); !made.ok()) {
          std::fprintf(stderr, "zcoll_bench: rank %d: %s at %zu bytes: %s\n", rank, coll.c_str(),
                       bytes, made.ToString().c_str());
          return 1;
        }
      }
      const int iterations = IterationsFor(bytes, options.iterations), warmup = iterations / 10;
      const bool barrier_first = coll == "reduce";
      double total_seconds = 0;
      absl::Status status = comm.Barrier();
      for (int it = 0; status.ok() && it < warmup + iterations; ++it) {
        if (barrier_first) status = comm.Barrier();
        const double start = MonotonicSeconds();
        if (status.ok()) status = c.Run(comm);
        if (it >= warmup) total_seconds += MonotonicSeconds() - start;
        if (status.ok() && !barrier_first && !barrier) status = comm.Barrier();
      }
      // Verification: a fresh run over a cleared result.
      PrepareResult(c, rank);
      if (status.ok()) status = c.Run(comm);
      if (!status.ok()) {
        std::fprintf(stderr, "zcoll_bench: rank %d: %s at %zu bytes: %s\n", rank, coll.c_str(),
                     bytes, status.ToString().c_str());
        return 1;
      }
      // The allgather's copies alone (every rank at once, so before rank 0 prints).
      double copy_loop = 0;
      if (options.zcoll_buffers && coll == "allgather") {
        absl::StatusOr<double> copied = CopyLoopMicroseconds(comm, bytes, options.iterations);
        status = copied.status();
        if (copied.ok()) copy_loop = *copied;
      }
      const double mine[3] = {total_seconds / iterations * 1e6,
                              static_cast<double>(CountErrors(c, rank, size)), copy_loop};
      double sums[3] = {0, 0, 0};
      if (status.ok())
        status = comm.Reduce(mine, sums, 3, DataType::kDouble, PredefinedOp::kSum, 0);
      if (!status.ok()) {
        std::fprintf(stderr, "zcoll_bench: rank %d: %s\n", rank, status.ToString().c_str());
        return 1;
      }
      if (rank != 0) continue;
      if (sums[1] != 0) {
        std::fprintf(stderr, "zcoll_bench: %s at %zu bytes: %.0f wrong elements\n", coll.c_str(),
                     bytes, sums[1]);
        return 1;
      }
      const double usec = sums[0] / size;
      PrintRow(options.format, first_row, coll, size, bytes, usec);
      // The memory bound of an allreduce, timed while the other ranks wait (asleep)
      // in the next barrier.
      if (options.zcoll_buffers && coll == "allreduce") {
        PrintRow(options.format, first_row, "sum_loop", 1, bytes,
                 SumLoopMicroseconds(bytes, options.iterations));
      }
      if (options.zcoll_buffers && coll == "allgather") {
        PrintRow(options.format, first_row, "copy_loop", size, bytes, sums[2] / size);
      }
    }
  }
  if (rank == 0 && options.format == "json") std::printf("\n  ]\n}\n");
  if (rank == 0 && !options.plot.empty()) {
    const std::string title = !options.title.empty()
                                  ? options.title
                                  : absl::StrCat("zcoll ", kVersion, ": ", size, " ranks on ",
                                                 options.nodes, " emulated nodes, float sum");
    if (absl::Status plotted = PlotTimes(PrintedRows(), title, options.plot); !plotted.ok()) {
      std::fprintf(stderr, "zcoll_bench: --plot: %s\n", std::string(plotted.message()).c_str());
      return 1;
    }
    std::fprintf(stderr, "zcoll_bench: plotted %zu rows into %s\n", PrintedRows().size(),
                 options.plot.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// One 2-rank job on `nodes` emulated nodes measuring with `measure` (its link, or its
// node engine); rank 0's timings.
absl::StatusOr<LinkTimings> MeasureInJob(
    int nodes, const std::function<absl::StatusOr<LinkTimings>(Communicator&)>& measure) {
  char path[] = "/tmp/zcoll_calibrate_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  close(fd);
  absl::StatusOr<std::vector<RankOutcome>> outcomes = RunForkedJob(
      2,
      [&](int rank, ForkMeeting& meeting) {
        if (std::thread::hardware_concurrency() >= 2) BindToCore(rank);
        CommunicatorOptions communicator_options;
        communicator_options.bootstrap = std::make_unique<ForkMeetingBootstrap>(meeting, rank, 2);
        communicator_options.emulated_nodes = nodes;
        absl::StatusOr<Communicator> comm = Communicator::Create(std::move(communicator_options));
        absl::StatusOr<LinkTimings> timings =
            comm.ok() ? measure(*comm) : absl::StatusOr<LinkTimings>(comm.status());
        if (!timings.ok()) {
          std::fprintf(stderr, "zcoll_bench: --calibrate: rank %d: %s\n", rank,
                       timings.status().ToString().c_str());
          return 1;
        }
        if (rank == 0) std::ofstream(path) << FormatLinkTimings(*timings) << "\n";
        return 0;
      },
      absl::Minutes(10));
  std::string line;
  std::getline(std::ifstream(path), line);
  unlink(path);
  if (!outcomes.ok()) return outcomes.status();
  for (const RankOutcome& outcome : *outcomes) {
    if (!outcome.finished || outcome.exit_code != 0) {
      return absl::InternalError(
          absl::StrCat("the measuring job on ", nodes, " emulated nodes failed"));
    }
  }
  return ParseLinkTimings(line);
}

int Calibrate(const Options& options) {
  // The cache first: the engine's large size must be past it.
  const CacheSweep cache = MeasureCacheSweep();
  const size_t engine_large_bytes = EngineLargeBytes(cache.cache_bytes);
  auto measure_link = [](Communicator& comm) { return MeasureLink(comm); };
  absl::StatusOr<LinkTimings> local = MeasureInJob(1, measure_link);
  absl::StatusOr<LinkTimings> network = local.ok() ? MeasureInJob(2, measure_link) : local;
  if (!network.ok()) {
    std::fprintf(stderr, "zcoll_bench: --calibrate: %s\n", network.status().ToString().c_str());
    return 1;
  }
  // The node engine, where the node's ranks can have one (not with ZCOLL_NODE_ENGINE=0,
  // or where they cannot share a segment): without it the profile has no engine
  // figures, and zcoll_sim says the engine's algorithms are not simulated.
  const absl::StatusOr<LinkTimings> engine =
      MeasureInJob(1, [&](Communicator& comm) { return MeasureEngine(comm, engine_large_bytes); });
  const double trip_usec = MeasureCacheLineTripUsec();
  const double system_call_usec = MeasureSystemCallUsec();
  if (!engine.ok()) {
    std::fprintf(stderr, "zcoll_bench: --calibrate: no node engine figures: %s\n",
                 engine.status().ToString().c_str());
  } else if (trip_usec <= 0) {
    std::fprintf(stderr,
                 "zcoll_bench: --calibrate: no node engine figures: a cache line's trip between "
                 "two processes could not be measured\n");
  }
  sim::MachineProfile profile;
  profile.name = "this_machine";
  // A node of this machine's cores, in its NUMA domains (hwloc's; without it, the
  // cores the process may use in one domain).
  const absl::StatusOr<NodeHardware> hardware = DiscoverNodeHardware();
  profile.ranks_per_node =
      hardware.ok() && hardware->cores > 0
          ? hardware->cores
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  profile.numa_per_node =
      std::clamp(hardware.ok() ? hardware->numa_domains : 1, 1, profile.ranks_per_node);
  // Every emulated node of a job runs on this machine: its ranks share its cores.
  profile.host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // One figure within a node: this machine's two ranks share its NUMA domain. Within a
  // node a transfer is a copy by the CPUs (rings, CMA), so it holds them for its whole
  // time. Across the emulated nodes TCP's time is the cores' copying only where its
  // exchange waits for itself (half duplex, LinkCostFrom): in this machine's slow mode
  // it does not, and so charged, 3 ranks on 3 nodes were predicted 1.7 times too slow.
  // With --cached-links, a loop's messages of unwritten data within a node find their
  // bytes in cache (LinkCostFrom). Not by default: on the same measurements
  // (validate_sim.sh, 2026-12-02, a machine of 4 MiB of L2 a core) 116 / 71 / 55 / 61
  // rows within 1.3x on 2:1 / 4:1 / 2:2 / 4:2 against 116 / 73 / 55 / 58 without (README,
  // "Calibration and validation").
  const sim::LinkCost local_cost =
      options.cached_links
          ? LinkCostFrom(*local, true, /*on_shared_cores=*/false, cache.cache_bytes, cache.per_core)
          : LinkCostFrom(*local, true);
  profile.links[static_cast<int>(sim::LinkClass::kNuma)] = local_cost;
  profile.links[static_cast<int>(sim::LinkClass::kNode)] = local_cost;
  sim::LinkCost& network_cost = profile.links[static_cast<int>(sim::LinkClass::kNetwork)];
  network_cost = LinkCostFrom(*network, false, /*on_shared_cores=*/true);
  // Where TCP's transfers are charged to the cores, each side's kernel copies the bytes
  // once at memcpy's rate, not for the transfer's whole time (validate_sim.sh,
  // 2026-12-04, two runs' measurements of 2:2 / 3:3 / 4:2, 392 rows each: within 1.3x
  // 199 and 179 with the whole time, 226 and 233 with this share; the predicted
  // fastest the measured fastest 78 and 71 of 132, then 88 and 80).
  if (network_cost.cpu_copies) {
    network_cost.cpu_share =
        CopyShareOfTransfer(network_cost.bytes_per_usec, cache.copy_bytes_per_usec);
  }
  if (engine.ok() && trip_usec > 0) {
    profile.engine =
        EngineCostFrom(*engine, trip_usec, system_call_usec, cache.cache_bytes, cache.per_core);
  }
  // Copies and reductions past the cache and, where there is one, in it.
  profile.cache_bytes = cache.cache_bytes;
  profile.cache_per_core = cache.per_core;
  profile.copy_bytes_per_usec = cache.copy_bytes_per_usec;
  profile.reduce_bytes_per_usec = cache.reduce_bytes_per_usec;
  profile.cached_copy_bytes_per_usec = cache.cached_copy_bytes_per_usec;
  profile.cached_reduce_bytes_per_usec = cache.cached_reduce_bytes_per_usec;
  std::string sweep_text;
  for (const auto& [working_set, rate] : cache.rates) {
    absl::StrAppendFormat(&sweep_text, "%s%zu KiB %.0f", sweep_text.empty() ? "" : ", ",
                          working_set >> 10, rate);
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const auto describe = [](const char* name, const LinkTimings& t) {
    return absl::StrFormat(
        "%s: one way %.2f us at %zu B, %.1f us at %zu B, %.1f us at %zu B; messages "
        "posted back to back: %.2f us each to post, one done every %.2f us; %zu B both "
        "ways at once: %.1f us; rank 0's bcasts one after another: %.2f us each at %zu B, "
        "%.1f at %zu B, %.1f at %zu B",
        name, t.small_usec, kCalibrationSmallBytes, t.medium_usec, kCalibrationMediumBytes,
        t.large_usec, kCalibrationLargeBytes, t.post_usec, t.gap_usec, kCalibrationLargeBytes,
        t.exchange_usec, t.handshake_probe_usec, kCalibrationHandshakeBytes, t.cached_usec,
        kCalibrationCachedBytes, t.cached_medium_usec, kCalibrationMediumBytes);
  };
  const std::string comment = absl::StrCat(
      "Measured by zcoll_bench ", kVersion, " --calibrate on ", host, " (", CpuModel(), ", ",
      profile.ranks_per_node, " cores) at ",
      absl::FormatTime("%Y-%m-%d %H:%M", absl::Now(), absl::UTCTimeZone()),
      " UTC.\nLinks from 2-rank bcast ping-pongs (medians of 15 repeats): within a node over "
      "ZCOLL_LOCAL_PROVIDER=",
      EnvironmentValue("ZCOLL_LOCAL_PROVIDER"),
      ", across 2 emulated nodes over "
      "ZCOLL_PROVIDER=",
      EnvironmentValue("ZCOLL_PROVIDER"), ".\n", describe("node", *local), ".\n",
      describe("network", *network),
      ".\nBandwidth from the 1 and 4 MiB difference; overhead the time to post (at most half "
      "the 8 B time); latency the rest of the 8 B time; within a node the rendezvous "
      "what the 64 KiB calls took beyond the 8 B time and their bytes (across nodes only "
      "reported). Within a node CPUs copy the bytes "
      "(cpu_copies)",
      options.cached_links
          ? ", and (--cached-links) with a cache that holds the ranks' 1 MiB buffers the "
            "cached rate, for messages of data unwritten in the call, is rank 0's 256 KiB "
            "and 1 MiB calls' difference (the handshake's and the 8 B message's bytes then "
            "at it)"
          : "",
      "; across nodes the link is half duplex when both ways at once take 1.5 "
      "times one way or more, and then the CPUs' copy too (the two directions wait for the "
      "cores they share), holding each side's CPU for the link's rate over memcpy's share of "
      "a transfer (cpu_share: each side's kernel copies the bytes once). The ranks of every "
      "emulated node share this machine's ",
      profile.host_cores,
      " cores.\nCache: memcpy's bytes/us over working sets (source and destination) of ",
      sweep_text,
      "; cache_bytes the largest that keeps 3/4 of the fastest (0: no fall seen), the cached "
      "copy rate the median up to it, memory's at ",
      kCacheSweepLargestBytes >> 20, " MiB. Kernels: float sum (ReduceLocal) over operands of ",
      kCacheSweepLargestBytes >> 21, " MiB, and of a quarter of the cache for the cached rate. ",
      cache.rate_beside_another > 0
          ? absl::StrFormat("Over cache_bytes beside another process copying as much on another "
                            "core: %.0f, so the cache is %s (cache_per_core).\n",
                            cache.rate_beside_another,
                            cache.per_core ? "each core's own" : "shared")
          : std::string("No second core to try whether the cache is each core's own.\n"),
      profile.has_engine()
          ? absl::StrFormat(
                "Node engine: a cache line's trip between two processes %.3f us (the latency); "
                "2-rank node bcasts one way %.3f us at %zu B (the overhead is the rest); rank 0's "
                "bcasts %.1f us at %zu B, %.1f us at %zu B, %.1f us at %zu B (half of each vector "
                "copied by each rank; with a cache that holds the ranks' 1 MiB buffers (2 MiB, or "
                "1 MiB a core) the cached rate from the first two and memory's from the last "
                "less the fixed part they leave, else the rate from the last two); a "
                "process_vm_readv of %zu B from another process %.3f us "
                "(the system call%s).",
                trip_usec, engine->small_usec, kCalibrationSmallBytes, engine->cached_usec,
                kCalibrationCachedBytes, engine->medium_usec, kCalibrationMediumBytes,
                engine->large_usec, engine->large_bytes, kCalibrationSystemCallBytes,
                system_call_usec, system_call_usec > 0 ? "" : ": not measured here, so left out")
          : "No node engine here: no engine figures.");
  const std::string text = sim::FormatMachineProfile(profile, comment);
  if (absl::StatusOr<sim::MachineProfile> back = sim::ParseMachineProfile(text, "calibration");
      !back.ok()) {
    std::fprintf(stderr, "zcoll_bench: --calibrate: the measured profile does not parse: %s\n",
                 std::string(back.status().message()).c_str());
    return 1;
  }
  std::ofstream file(options.calibrate);
  file << text;
  if (!file.flush()) {
    std::fprintf(stderr, "zcoll_bench: --calibrate: cannot write '%s': %s\n",
                 options.calibrate.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("%s", text.c_str());
  std::fprintf(stderr, "zcoll_bench: wrote the profile to %s (zcoll_sim --profile=%s)\n",
               options.calibrate.c_str(), options.calibrate.c_str());
  return 0;
}

// Whether the file an option names (--calibrate's profile, --plot's PNG) can be written,
// asked before the run that fills it: a calibration or a sweep takes minutes, and a
// mistyped folder should not cost them. The file itself is left as it is (an existing
// profile survives a calibration that fails).
bool CanWriteFile(const std::string& path, const char* option) {
  const bool exists = access(path.c_str(), F_OK) == 0;
  const size_t slash = path.rfind('/');
  const std::string folder =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string& checked = exists ? path : folder;
  if (access(checked.c_str(), exists ? W_OK : W_OK | X_OK) == 0) return true;
  const int failure = errno;
  const std::string where = exists ? "" : absl::StrCat(" in the folder '", folder, "'");
  std::fprintf(stderr, "zcoll_bench: %s: cannot write '%s'%s: %s (checked before measuring)\n",
               option, path.c_str(), where.c_str(), std::strerror(failure));
  return false;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  zcoll::Options options;
  std::string error;
  if (!zcoll::ParseOptions(argc, argv, options, error)) {
    if (!error.empty()) std::fprintf(stderr, "zcoll_bench: %s\n", error.c_str());
    std::fputs(zcoll::kUsage, stderr);
    return error.empty() ? 0 : 2;
  }
  if (!options.plot_csv.empty()) {
    // Only a plot of rows measured before (compare_peers.sh --plot).
    absl::StatusOr<std::vector<zcoll::TimedRow>> rows = zcoll::ReadTimedRows(options.plot_csv);
    absl::Status status = rows.status();
    if (status.ok()) {
      status = zcoll::PlotTimes(*rows, options.title.empty() ? options.plot_csv : options.title,
                                options.plot);
    }
    if (!status.ok()) {
      std::fprintf(stderr, "zcoll_bench: --plot-csv: %s\n", std::string(status.message()).c_str());
      return 1;
    }
    return 0;
  }
  if (!options.provider.empty()) setenv("ZCOLL_PROVIDER", options.provider.c_str(), 1);
  if (!options.local_provider.empty()) {
    setenv("ZCOLL_LOCAL_PROVIDER", options.local_provider.c_str(), 1);
  }
  if (!options.calibrate.empty() && !zcoll::CanWriteFile(options.calibrate, "--calibrate")) {
    return 1;
  }
  if (!options.plot.empty() && !zcoll::CanWriteFile(options.plot, "--plot")) return 1;
  if (!options.calibrate.empty()) return zcoll::Calibrate(options);
  absl::StatusOr<std::vector<zcoll::RankOutcome>> outcomes = zcoll::RunForkedJob(
      options.ranks,
      [&](int rank, zcoll::ForkMeeting& meeting) { return zcoll::RunRank(options, rank, meeting); },
      absl::Hours(2));
  if (!outcomes.ok()) {
    std::fprintf(stderr, "zcoll_bench: %s\n", outcomes.status().ToString().c_str());
    return 1;
  }
  int result = 0;
  for (size_t rank = 0; rank < outcomes->size(); ++rank) {
    const zcoll::RankOutcome& outcome = (*outcomes)[rank];
    if (!outcome.finished || outcome.signal != 0 || outcome.exit_code != 0) {
      std::fprintf(stderr, "zcoll_bench: rank %zu %s\n", rank,
                   !outcome.finished     ? "did not finish"
                   : outcome.signal != 0 ? absl::StrCat("died of signal ", outcome.signal).c_str()
                                         : absl::StrCat("exited with ", outcome.exit_code).c_str());
      result = 1;
    }
  }
  return result;
}
