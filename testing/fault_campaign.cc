// fault_campaign: injects faults into jobs of random collectives and checks what
// the survivors see. Each job is `zcoll_run --keep-going -n RANKS` of fault_rank
// (testing/fault_rank.cc) on one provider configuration; one random rank (the victim)
// is killed (SIGKILL), stopped (SIGSTOP), exits (_exit(0) mid-call) or leaves (returns
// from main between calls) at a random call after a random delay, while the calls
// move small or large vectors. A job passes when:
//   - every survivor's call ends with an error within its deadline (ZCOLL_TIMEOUT)
//     + 1 s, and the error names the victim's rank and what happened to it
//     ("killed by signal 9", "is stopped", "exited with code 0");
//   - no survivor crashes: each destroys its Communicator and exits 0;
//   - afterwards no process of the job is left and no shared memory named for one
//     of its processes (transport/shared_memory_name.h) is left in /dev/shm;
//   - the whole job ends within a hard bound (a hang fails it).
// A fault that comes after the survivors' last call (all of them return OK) is
// "late": counted apart, and not toward --faults.
//
//   fault_campaign --zcoll-run=PATH --rank=PATH [--faults=12] [--seed=1]
//                  [--configs=shm,ofi:tcp,ucx:tcp,mix] [--kinds=kill,stop,exit,leave]
//                  [--ranks=4] [--timeout-s=3] [--verbose]
//
// Exit code 0 when every job passed; 1 otherwise (each failure printed with its
// job's output).

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "transport/shared_memory_name.h"

extern char** environ;

namespace zcoll::testing {
namespace {

struct CampaignOptions {
  std::string zcoll_run;
  std::string rank;
  int faults = 12;
  uint64_t seed = 1;
  std::vector<std::string> configs = {"shm", "ofi:tcp", "ucx:tcp", "mix"};
  std::vector<std::string> kinds = {"kill", "stop", "exit", "leave"};
  int ranks = 4;
  int timeout_s = 3;
  bool verbose = false;
};

// A provider configuration: emulated nodes and the providers' variables.
struct Config {
  std::string nodes;
  std::vector<std::string> environment;
};

Config ConfigNamed(const std::string& name, int ranks, int job) {
  if (name == "shm") return {"1", {"ZCOLL_LOCAL_PROVIDER=shm"}};
  if (name == "ofi:tcp" || name == "ucx:tcp") {
    return {std::to_string(ranks), {"ZCOLL_PROVIDER=" + name}};
  }
  // mix: two nodes, shm within them and a network provider between, alternating.
  return {"2",
          {"ZCOLL_LOCAL_PROVIDER=shm",
           job % 2 == 0 ? "ZCOLL_PROVIDER=ofi:tcp" : "ZCOLL_PROVIDER=ucx:tcp"}};
}

double MonotonicMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

struct RankReport {
  int pid = 0;
  bool result = false;
  int call = -1;
  int ms = 0;
  std::string code, message;
  bool destroyed = false;
  int destroy_ms = 0;
  std::string end;  // zcoll_run's "exited with code 1" / "was killed by signal 11 ..."
};

struct Job {
  int index;
  std::string config;
  std::string kind;
  int victim;
  int fault_call;
  int delay_us;
  size_t max_elements;
  uint64_t seed;
};

struct JobOutcome {
  bool late = false;
  bool hung = false;
  std::vector<std::string> failures;
  std::string log;
  int max_ms_over_deadline = -1000000;  // the survivors' worst call against the deadline
  int max_destroy_ms = 0;
  int named_cause = 0, survivors = 0;
};

bool NamesRank(absl::string_view message, int rank) {
  const std::string needle = absl::StrCat("rank ", rank);
  for (size_t at = message.find(needle); at != absl::string_view::npos;
       at = message.find(needle, at + 1)) {
    const size_t after = at + needle.size();
    if (after >= message.size() || !std::isdigit(static_cast<unsigned char>(message[after]))) {
      return true;
    }
  }
  return false;
}

const char* CauseOf(const std::string& kind) {
  if (kind == "kill") return "was killed by signal 9";
  if (kind == "stop") return "is stopped";
  return "exited with code 0";
}

// Whether `message` names the cause of a fault of `kind`. A rank that leaves (destroys
// its Communicator) mid-job is named as such where its peers wait for it in a node
// engine's segment (they learn it there before its process ends).
bool NamesCause(const std::string& message, const std::string& kind) {
  return absl::StrContains(message, CauseOf(kind)) ||
         (kind == "leave" && absl::StrContains(message, "left the communicator"));
}

bool ProcessOfJobAlive(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) return false;
  char buffer[4096] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::fclose(file);
  // (A reused pid runs something else.)
  return absl::StrContains(absl::string_view(buffer, n), "fault_rank");
}

std::vector<std::string> SharedMemoryOf(int pid) {
  std::vector<std::string> found;
  const std::string prefix = SharedMemoryPrefix(pid);
  DIR* directory = opendir("/dev/shm");
  if (directory == nullptr) return found;
  while (dirent* entry = readdir(directory)) {
    if (absl::StartsWith(entry->d_name, prefix)) found.push_back(entry->d_name);
  }
  closedir(directory);
  return found;
}

void ParseLine(const std::string& line, std::map<int, RankReport>& ranks, double& fault_ms) {
  int rank = -1;
  absl::string_view rest = line;
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(1, close - 1), &rank)) {
      return;
    }
    rest.remove_prefix(std::min(rest.size(), close + 2));
  }
  if (rank >= 0) {
    RankReport& report = ranks[rank];
    if (absl::ConsumePrefix(&rest, "PID ")) {
      (void)absl::SimpleAtoi(rest, &report.pid);
    } else if (absl::ConsumePrefix(&rest, "FAULT ")) {
      const std::vector<absl::string_view> words = absl::StrSplit(rest, ' ');
      if (words.size() == 2) (void)absl::SimpleAtod(words[1], &fault_ms);
    } else if (absl::ConsumePrefix(&rest, "RESULT ")) {
      report.result = true;
      // call=I ms=M code=C message=TEXT
      const size_t message_at = rest.find(" message=");
      const absl::string_view fields = rest.substr(0, message_at);
      if (message_at != absl::string_view::npos) {
        report.message = std::string(rest.substr(message_at + 9));
      }
      for (absl::string_view field : absl::StrSplit(fields, ' ')) {
        if (absl::ConsumePrefix(&field, "call=")) (void)absl::SimpleAtoi(field, &report.call);
        if (absl::ConsumePrefix(&field, "ms=")) (void)absl::SimpleAtoi(field, &report.ms);
        if (absl::ConsumePrefix(&field, "code=")) report.code = std::string(field);
      }
    } else if (absl::ConsumePrefix(&rest, "DESTROYED ms=")) {
      report.destroyed = true;
      (void)absl::SimpleAtoi(rest, &report.destroy_ms);
    }
    return;
  }
  // zcoll_run: rank R exited with code C; ... / rank R was killed by signal S (...)
  if (absl::ConsumePrefix(&rest, "zcoll_run: rank ")) {
    const size_t space = rest.find(' ');
    if (space != absl::string_view::npos && absl::SimpleAtoi(rest.substr(0, space), &rank)) {
      absl::string_view end = rest.substr(space + 1);
      end = end.substr(0, end.find(';'));
      ranks[rank].end = std::string(end);
    }
  }
}

JobOutcome RunJob(const CampaignOptions& options, const Job& job) {
  JobOutcome outcome;
  const Config config = ConfigNamed(job.config, options.ranks, job.index);
  std::vector<std::string> arguments = {
      options.zcoll_run,
      "--keep-going",
      "-n",
      std::to_string(options.ranks),
      "--nodes",
      config.nodes,
      "--",
      options.rank,
      absl::StrCat("--seed=", job.seed),
      // Enough calls after the fault that it comes within them (late ones are rare).
      absl::StrCat("--calls=", job.fault_call + 2000),
      absl::StrCat("--max-elements=", job.max_elements),
      absl::StrCat("--victim=", job.victim),
      absl::StrCat("--fault=", job.kind),
      absl::StrCat("--fault-call=", job.fault_call),
      absl::StrCat("--fault-delay-us=", job.delay_us),
  };
  std::vector<std::string> environment;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const absl::string_view entry(*variable);
    if (absl::StartsWith(entry, "ZCOLL_")) continue;  // the campaign's own only
    environment.emplace_back(entry);
  }
  for (const std::string& entry : config.environment) environment.push_back(entry);
  environment.push_back(absl::StrCat("ZCOLL_TIMEOUT=", options.timeout_s));
  std::vector<char*> argv, envp;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    outcome.failures.push_back(absl::StrCat("pipe2: ", std::strerror(errno)));
    return outcome;
  }
  std::fflush(nullptr);
  const pid_t launcher = fork();
  if (launcher == 0) {
    setpgid(0, 0);
    dup2(output[1], STDOUT_FILENO);
    dup2(output[1], STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(output[1]);
  if (launcher < 0) {
    close(output[0]);
    outcome.failures.push_back(absl::StrCat("fork: ", std::strerror(errno)));
    return outcome;
  }
  // A job that ran this long hangs: the deadline is timeout_s per call, and the
  // survivors fail within a few of them.
  const double hard_bound_ms = 1000.0 * (10 * options.timeout_s + 30);
  const double start = MonotonicMs();
  std::map<int, RankReport> ranks;
  double fault_ms = 0;
  std::string partial;
  bool victim_killed = false;
  bool open = true;
  int status = 0;
  bool exited = false;
  while (open || !exited) {
    if (open) {
      pollfd poll_fd{output[0], POLLIN, 0};
      poll(&poll_fd, 1, 100);
      if (poll_fd.revents != 0) {
        char buffer[8192];
        const ssize_t n = read(output[0], buffer, sizeof(buffer));
        if (n > 0) {
          partial.append(buffer, static_cast<size_t>(n));
          outcome.log.append(buffer, static_cast<size_t>(n));
          size_t newline;
          while ((newline = partial.find('\n')) != std::string::npos) {
            ParseLine(partial.substr(0, newline), ranks, fault_ms);
            partial.erase(0, newline + 1);
          }
        } else if (n == 0 || errno != EINTR) {
          open = false;
        }
      }
    } else {
      usleep(10000);
    }
    if (!exited && waitpid(launcher, &status, WNOHANG) == launcher) exited = true;
    // Every survivor done: a stopped victim is killed so that the job can end.
    bool survivors_done = true;
    for (int r = 0; r < options.ranks; ++r) {
      if (r == job.victim) continue;
      const RankReport& report = ranks[r];
      survivors_done = survivors_done && (report.destroyed || !report.end.empty());
    }
    if (survivors_done && job.kind == "stop" && !victim_killed && ranks[job.victim].pid > 0) {
      kill(ranks[job.victim].pid, SIGKILL);
      victim_killed = true;
    }
    if (MonotonicMs() - start > hard_bound_ms && !outcome.hung) {
      outcome.hung = true;
      outcome.failures.push_back(
          absl::StrCat("the job ran past ", hard_bound_ms / 1000, " s: killed (a hang)"));
      kill(-launcher, SIGKILL);
      for (auto& [rank, report] : ranks) {
        if (report.pid > 0) kill(report.pid, SIGKILL);
      }
    }
  }
  close(output[0]);
  if (!partial.empty()) ParseLine(partial, ranks, fault_ms);

  // The survivors' outcomes.
  int ok = 0;
  for (int r = 0; r < options.ranks; ++r) {
    if (r == job.victim) continue;
    ++outcome.survivors;
    const RankReport& report = ranks[r];
    if (!report.result) {
      outcome.failures.push_back(absl::StrCat("rank ", r, " reported no result",
                                              report.end.empty() ? "" : ": it ", report.end));
      continue;
    }
    if (report.code == "OK") {
      ++ok;
      continue;
    }
    const int over = report.ms - 1000 * options.timeout_s;
    outcome.max_ms_over_deadline = std::max(outcome.max_ms_over_deadline, over);
    if (over > 1000) {
      outcome.failures.push_back(absl::StrCat("rank ", r, "'s call ", report.call, " took ",
                                              report.ms, " ms, past its deadline + 1 s"));
    }
    if (!NamesRank(report.message, job.victim)) {
      outcome.failures.push_back(absl::StrCat("rank ", r, "'s error does not name rank ",
                                              job.victim, ": ", report.message));
    } else if (!NamesCause(report.message, job.kind)) {
      outcome.failures.push_back(absl::StrCat("rank ", r, "'s error does not say the victim ",
                                              CauseOf(job.kind), ": ", report.message));
    } else {
      ++outcome.named_cause;
    }
    if (!report.destroyed) {
      outcome.failures.push_back(absl::StrCat("rank ", r,
                                              " did not finish destroying its "
                                              "Communicator",
                                              report.end.empty() ? "" : ": it ", report.end));
    } else {
      outcome.max_destroy_ms = std::max(outcome.max_destroy_ms, report.destroy_ms);
      if (report.destroy_ms > 1000 * options.timeout_s + 1000) {
        outcome.failures.push_back(absl::StrCat("rank ", r, " took ", report.destroy_ms,
                                                " ms to destroy its Communicator"));
      }
    }
    if (!report.end.empty()) {
      outcome.failures.push_back(absl::StrCat("rank ", r, " ", report.end, " (a crash)"));
    }
  }
  if (ok == outcome.survivors && outcome.failures.empty()) {
    outcome.late = true;  // the fault came after every survivor's last call
  } else if (ok > 0) {
    outcome.failures.push_back(absl::StrCat(ok, " survivor(s) finished every call without error"));
  }
  if (job.kind == "kill" && !absl::StartsWith(ranks[job.victim].end, "was killed by signal 9")) {
    outcome.failures.push_back(absl::StrCat(
        "the victim ", ranks[job.victim].end.empty() ? "ended normally" : ranks[job.victim].end));
  }
  // Nothing left of the job.
  for (const auto& [rank, report] : ranks) {
    if (report.pid <= 0) continue;
    if (ProcessOfJobAlive(report.pid)) {
      outcome.failures.push_back(
          absl::StrCat("rank ", rank, " (pid ", report.pid, ") still runs after the job ended"));
      kill(report.pid, SIGKILL);
    }
    const std::vector<std::string> left = SharedMemoryOf(report.pid);
    if (!left.empty()) {
      outcome.failures.push_back(
          absl::StrCat("rank ", rank, " left /dev/shm/", absl::StrJoin(left, ", /dev/shm/")));
    }
  }
  if (exited && WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    outcome.failures.push_back("zcoll_run could not be started");
  }
  return outcome;
}

bool Parse(int argc, char** argv, CampaignOptions& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--verbose") {
      options.verbose = true;
      continue;
    }
    const std::vector<std::string> parts = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    bool ok = parts.size() == 2;
    if (ok) {
      const std::string& name = parts[0];
      const std::string& value = parts[1];
      if (name == "--zcoll-run") {
        options.zcoll_run = value;
      } else if (name == "--rank") {
        options.rank = value;
      } else if (name == "--faults") {
        ok = absl::SimpleAtoi(value, &options.faults) && options.faults > 0;
      } else if (name == "--seed") {
        ok = absl::SimpleAtoi(value, &options.seed);
      } else if (name == "--ranks") {
        ok = absl::SimpleAtoi(value, &options.ranks) && options.ranks >= 2;
      } else if (name == "--timeout-s") {
        ok = absl::SimpleAtoi(value, &options.timeout_s) && options.timeout_s > 0;
      } else if (name == "--configs") {
        options.configs = absl::StrSplit(value, ',');
        for (const std::string& c : options.configs) {
          ok = ok && (c == "shm" || c == "ofi:tcp" || c == "ucx:tcp" || c == "mix");
        }
      } else if (name == "--kinds") {
        options.kinds = absl::StrSplit(value, ',');
        for (const std::string& k : options.kinds) {
          ok = ok && (k == "kill" || k == "stop" || k == "exit" || k == "leave");
        }
      } else {
        ok = false;
      }
    }
    if (!ok) {
      std::fprintf(stderr, "fault_campaign: bad argument %s (see the head of fault_campaign.cc)\n",
                   arg.c_str());
      return false;
    }
  }
  if (options.zcoll_run.empty() || options.rank.empty()) {
    std::fprintf(stderr, "fault_campaign: --zcoll-run=PATH and --rank=PATH are needed\n");
    return false;
  }
  return true;
}

struct Tally {
  int faults = 0, late = 0, failed = 0, survivors = 0, named = 0;
  int worst_over_deadline_ms = -1000000, worst_destroy_ms = 0;
};

int Run(const CampaignOptions& options) {
  std::mt19937_64 random(options.seed);
  std::map<std::string, Tally> tallies;  // "config kind"
  int injected = 0, failed_jobs = 0;
  const int max_jobs = 2 * options.faults + 10;
  const double start = MonotonicMs();
  for (int index = 0; injected < options.faults && index < max_jobs; ++index) {
    Job job;
    job.index = index;
    job.config = options.configs[index % options.configs.size()];
    job.kind = options.kinds[(index / options.configs.size()) % options.kinds.size()];
    job.victim = static_cast<int>(random() % options.ranks);
    job.fault_call = 1 + static_cast<int>(random() % 10);
    // Log-uniform from none to 50 ms: mostly within the call just started.
    job.delay_us = random() % 5 == 0 ? 0 : static_cast<int>(std::exp2((random() % 1600) / 100.0));
    job.delay_us = std::min(job.delay_us, 50000);
    job.max_elements =
        (index / (options.configs.size() * options.kinds.size())) % 2 == 0 ? 256 : size_t{1} << 20;
    job.seed = random();
    const JobOutcome outcome = RunJob(options, job);
    Tally& tally = tallies[job.config + " " + job.kind];
    const std::string what =
        absl::StrCat("job ", index, ": ", job.config, " ", job.kind, " rank ", job.victim,
                     " at call ", job.fault_call, " +", job.delay_us, " us, vectors up to ",
                     job.max_elements, ", seed ", job.seed);
    if (outcome.late && outcome.failures.empty()) {
      ++tally.late;
      if (options.verbose) std::printf("%s: late (after the survivors' last call)\n", what.c_str());
      continue;
    }
    ++injected;
    ++tally.faults;
    tally.survivors += outcome.survivors;
    tally.named += outcome.named_cause;
    tally.worst_over_deadline_ms =
        std::max(tally.worst_over_deadline_ms, outcome.max_ms_over_deadline);
    tally.worst_destroy_ms = std::max(tally.worst_destroy_ms, outcome.max_destroy_ms);
    if (!outcome.failures.empty()) {
      ++tally.failed;
      ++failed_jobs;
      std::printf("FAILED %s\n  %s\n  its output:\n%s\n", what.c_str(),
                  absl::StrJoin(outcome.failures, "\n  ").c_str(), outcome.log.c_str());
    } else if (options.verbose) {
      std::printf("%s: ok\n", what.c_str());
    }
    std::fflush(stdout);
  }
  std::printf(
      "fault_campaign: %d faults injected on %d ranks (ZCOLL_TIMEOUT=%d s), %.0f s\n"
      "%-16s %7s %6s %10s %13s %18s %11s %7s\n",
      injected, options.ranks, options.timeout_s, (MonotonicMs() - start) / 1000, "config kind",
      "faults", "late", "survivors", "named cause", "worst vs deadline", "destroy ms", "failed");
  for (const auto& [name, tally] : tallies) {
    std::printf("%-16s %7d %6d %10d %13d %15d ms %11d %7d\n", name.c_str(), tally.faults,
                tally.late, tally.survivors, tally.named,
                tally.faults > 0 ? tally.worst_over_deadline_ms : 0, tally.worst_destroy_ms,
                tally.failed);
  }
  if (injected < options.faults) {
    std::printf("fault_campaign: only %d of %d faults came before the job's end\n", injected,
                options.faults);
    return 1;
  }
  std::printf("fault_campaign: %s\n", failed_jobs == 0
                                          ? "every job passed"
                                          : absl::StrCat(failed_jobs, " job(s) failed").c_str());
  return failed_jobs == 0 ? 0 : 1;
}

}  // namespace
}  // namespace zcoll::testing

int main(int argc, char** argv) {
  zcoll::testing::CampaignOptions options;
  if (!zcoll::testing::Parse(argc, argv, options)) return 64;
  signal(SIGPIPE, SIG_IGN);
  return zcoll::testing::Run(options);
}
