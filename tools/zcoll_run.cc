// zcoll_run: starts the ranks of a job on this host, as emulated nodes.
//
//   zcoll_run -n 8 --nodes 2 -- PROGRAM ARGS...
//
// It hosts the job's TCP store (with a fresh job key), starts N copies of PROGRAM
// with ZCOLL_RANK, ZCOLL_SIZE, ZCOLL_STORE, ZCOLL_JOB_KEY and ZCOLL_EMULATE_NODES
// set, prefixes every line they print with "[rank] ", and ends the job at the first
// failure: it stops the other ranks and exits with the failing rank's status (its
// exit code, or 128 + the signal that killed it). Shared memory that killed ranks
// leave behind is removed. The ranks run in a process group of their own and die
// with zcoll_run (PR_SET_PDEATHSIG), even if it is killed with SIGKILL.

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/topology.h"
#include "core/version.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/forked_job.h"
#include "transport/bootstrap/tcp_store.h"

extern char** environ;

namespace zcoll {
namespace {

constexpr char kUsage[] =
    "usage: zcoll_run -n RANKS [--nodes NODES] [--timeout SECONDS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Starts RANKS copies of PROGRAM on this host as one zcoll job, placed in blocks\n"
    "on emulated nodes (default 1): ranks of one emulated node talk through\n"
    "shared memory (ZCOLL_LOCAL_PROVIDER), ranks of different ones through the network\n"
    "provider (ZCOLL_PROVIDER), exactly as on a cluster.\n"
    "\n"
    "  -n, --np RANKS       number of ranks (1-4096)\n"
    "  --nodes NODES        emulated nodes: a count, 1-RANKS, with ranks spread evenly\n"
    "                       in blocks (default 1), or node sizes, e.g. 3,1 (ranks 0-2\n"
    "                       on node 0, rank 3 on node 1)\n"
    "  --timeout SECONDS    stop the job after this long and exit 124 (default: none)\n"
    "  --keep-going         a failing rank does not stop the others: wait for every\n"
    "                       rank (for fault tests: the survivors report their errors)\n"
    "  --version            prints zcoll_run's version\n"
    "  -h, --help           this text\n"
    "\n"
    "Each rank gets ZCOLL_RANK, ZCOLL_SIZE, ZCOLL_STORE (the TCP store this launcher\n"
    "hosts on 127.0.0.1), ZCOLL_JOB_KEY (fresh per job) and ZCOLL_EMULATE_NODES; other\n"
    "ZCOLL_* variables pass through. Output lines are prefixed with \"[rank] \".\n"
    "The first rank to fail ends the job: the others get SIGTERM, then SIGKILL 3 s\n"
    "later, and zcoll_run exits with the failed rank's exit code (128 + signal if a\n"
    "signal killed it). SIGINT or SIGTERM to zcoll_run is passed on to every rank.\n"
    "The ranks form a process group of their own and are killed if zcoll_run dies,\n"
    "however it dies.\n"
    "\n"
    "PROGRAM is found as the shell would (a name without '/' in PATH); under\n"
    "`bazel run` a relative path is taken from the directory bazel was run in\n"
    "(BUILD_WORKING_DIRECTORY), as the shell there would.\n"
    "\n"
    "ZCOLL_LINK_LATENCY_US and ZCOLL_LINK_GBITS model the network between emulated\n"
    "nodes (added latency, bandwidth cap) so that its cost relative to shared memory\n"
    "is a real fabric's.\n";

struct Options {
  int ranks = 0;
  std::string nodes = "1";  // a Topology::Emulated description
  absl::Duration timeout = absl::InfiniteDuration();
  bool keep_going = false;
  std::vector<std::string> command;
};

bool ParseOptions(int argc, char** argv, Options& options, std::string& error) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string argument = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        error = absl::StrCat(name, " needs a value");
        return nullptr;
      }
      return argv[++i];
    };
    if (argument == "--") {
      ++i;
      break;
    }
    if (argument == "-h" || argument == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (argument == "--version") {
      absl::PrintF("zcoll_run %s\n", kVersion);
      std::exit(0);
    }
    if (argument == "-n" || argument == "--np") {
      const char* text = value("-n");
      if (text == nullptr) return false;
      if (!absl::SimpleAtoi(text, &options.ranks) || options.ranks < 1 || options.ranks > 4096) {
        error = absl::StrCat("-n '", text, "' is not a number of ranks in 1-4096");
        return false;
      }
    } else if (argument == "--nodes") {
      const char* text = value("--nodes");
      if (text == nullptr) return false;
      options.nodes = text;
    } else if (argument == "--keep-going") {
      options.keep_going = true;
    } else if (argument == "--timeout") {
      const char* text = value("--timeout");
      if (text == nullptr) return false;
      double seconds = 0;
      if (!absl::SimpleAtod(text, &seconds) || seconds <= 0) {
        error = absl::StrCat("--timeout '", text, "' is not a positive number of seconds");
        return false;
      }
      options.timeout = absl::Seconds(seconds);
    } else if (!argument.empty() && argument[0] == '-') {
      error = absl::StrCat("unknown option '", argument, "'");
      return false;
    } else {
      break;
    }
  }
  for (; i < argc; ++i) options.command.push_back(argv[i]);
  if (options.ranks == 0) {
    error = "-n RANKS is required";
    return false;
  }
  if (absl::StatusOr<Topology> nodes = Topology::Emulated(options.nodes, options.ranks);
      !nodes.ok()) {
    error = absl::StrCat("--nodes: ", nodes.status().message());
    return false;
  }
  if (options.command.empty()) {
    error = "no PROGRAM to run";
    return false;
  }
  return true;
}

// The file PROGRAM names, found as a shell in the directory the user ran zcoll_run
// from would find it: a name without '/' in PATH, a relative path from that directory
// (`bazel run` starts tools in their runfiles tree, and says where the user was in
// BUILD_WORKING_DIRECTORY). Checked before any rank starts, so that a wrong path is
// one clear error rather than a failure per rank.
absl::StatusOr<std::string> ResolveProgram(const std::string& program) {
  // Why `path` cannot be run ("" when it can), as execve would say.
  auto unrunnable = [](const std::string& path) -> std::string {
    struct stat info;
    if (stat(path.c_str(), &info) != 0) return std::strerror(errno);
    if (S_ISDIR(info.st_mode)) return std::strerror(EISDIR);
    if (!S_ISREG(info.st_mode) || access(path.c_str(), X_OK) != 0) return std::strerror(EACCES);
    return "";
  };
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    for (absl::string_view directory : absl::StrSplit(path != nullptr ? path : "", ':')) {
      const std::string candidate = absl::StrCat(directory.empty() ? "." : directory, "/", program);
      if (unrunnable(candidate).empty()) return candidate;
    }
    return absl::NotFoundError(absl::StrCat("cannot execute '", program,
                                            "': no such program in PATH (give a path, e.g. ./",
                                            program, ")"));
  }
  std::string path = program;
  std::string where;
  const char* origin = std::getenv("BUILD_WORKING_DIRECTORY");
  if (program[0] != '/' && origin != nullptr && *origin != '\0') {
    path = absl::StrCat(origin, "/", program);
    where = absl::StrCat(" (relative to BUILD_WORKING_DIRECTORY=", origin,
                         ", where bazel run was started)");
  } else if (program[0] != '/') {
    char directory[4096];
    if (getcwd(directory, sizeof(directory)) != nullptr) {
      where = absl::StrCat(" (relative to the working directory ", directory, ")");
    }
  }
  if (const std::string why = unrunnable(path); !why.empty()) {
    return absl::NotFoundError(absl::StrCat("cannot execute '", program, "'", where, ": ", why));
  }
  return path;
}

volatile sig_atomic_t g_forwarded_signal = 0;
void RememberSignal(int signal) { g_forwarded_signal = signal; }

// Output of one rank's stdout or stderr, split into lines.
struct Stream {
  int rank;
  int fd;
  FILE* sink;
  std::string partial;
};

void Emit(Stream& stream, bool flush_partial) {
  size_t start = 0;
  while (true) {
    const size_t newline = stream.partial.find('\n', start);
    if (newline == std::string::npos) break;
    absl::FPrintF(stream.sink, "[%d] %s\n", stream.rank,
                  absl::string_view(stream.partial).substr(start, newline - start));
    start = newline + 1;
  }
  stream.partial.erase(0, start);
  if (flush_partial && !stream.partial.empty()) {
    absl::FPrintF(stream.sink, "[%d] %s\n", stream.rank, stream.partial);
    stream.partial.clear();
  }
  std::fflush(stream.sink);
}

int Run(const Options& options) {
  const absl::StatusOr<std::string> program = ResolveProgram(options.command[0]);
  if (!program.ok()) {
    std::fprintf(stderr, "zcoll_run: %s\n", std::string(program.status().message()).c_str());
    return 127;
  }
  const std::string job_key = NewJobKey();
  // Every rank holds one connection for the job's life.
  TcpStoreLimits limits;
  limits.max_connections = std::max<size_t>(limits.max_connections, options.ranks + size_t{16});
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> store =
      TcpStoreServer::Start("127.0.0.1", 0, job_key, limits);
  if (!store.ok()) {
    std::fprintf(stderr, "zcoll_run: %s\n", store.status().ToString().c_str());
    return 1;
  }
  // The ranks learn through the store how a rank that left them ended
  // (Bootstrap::HowRankEnded), so that their errors can say it.
  absl::StatusOr<std::unique_ptr<KeyValueStore>> recorder =
      ConnectTcpStore("127.0.0.1", (*store)->port(), job_key, absl::Now() + absl::Seconds(10));
  if (recorder.ok() &&
      !(*recorder)->Set(kLauncherRecordsEndsKey, "1", absl::Now() + absl::Seconds(10)).ok()) {
    recorder = absl::UnavailableError("zcoll_run could not write to its own store");
  }
  auto record_end = [&](int rank, const std::string& how) {
    if (recorder.ok())
      (void)(*recorder)->Set(RankEndKey(rank), how, absl::Now() + absl::Seconds(1));
  };
  struct sigaction forward {};
  forward.sa_handler = RememberSignal;
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Everything a child needs is built before forking: between fork and exec a
  // child of a threaded process (the store's thread) may only make plain syscalls.
  std::vector<std::string> inherited;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const absl::string_view entry(*variable);
    bool ours = false;
    for (const char* name :
         {"ZCOLL_RANK=", "ZCOLL_SIZE=", "ZCOLL_STORE=", "ZCOLL_JOB_KEY=", "ZCOLL_EMULATE_NODES="}) {
      ours = ours || entry.substr(0, std::strlen(name)) == name;
    }
    if (!ours) inherited.emplace_back(entry);
  }
  std::vector<char*> argv;
  for (const std::string& word : options.command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);

  std::vector<pid_t> children(options.ranks, -1);
  std::vector<Stream> streams;
  // The ranks' process group: the first rank's pid (0 until it exists). Signals to
  // the job go to the group, so a rank's own children get them too.
  pid_t group = 0;
  const pid_t launcher = getpid();
  for (int rank = 0; rank < options.ranks; ++rank) {
    std::vector<std::string> environment = inherited;
    environment.push_back(absl::StrCat("ZCOLL_RANK=", rank));
    environment.push_back(absl::StrCat("ZCOLL_SIZE=", options.ranks));
    environment.push_back(absl::StrCat("ZCOLL_STORE=", (*store)->url()));
    environment.push_back(absl::StrCat("ZCOLL_JOB_KEY=", job_key));
    environment.push_back(absl::StrCat("ZCOLL_EMULATE_NODES=", options.nodes));
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      std::perror("zcoll_run: pipe2");
      return 1;
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, group);
      // Killed with the launcher; if it is gone already, at once.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(128 + SIGKILL);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      execve(program->c_str(), argv.data(), envp.data());
      // (Checked before forking; this is a race with the file's removal, or a format
      // the kernel refuses. strerrordesc_np reads a static table: safe after fork.)
      const char* parts[] = {"zcoll_run: cannot execute '", program->c_str(),
                             "': ", strerrordesc_np(errno), "\n"};
      for (const char* part : parts) (void)!write(STDERR_FILENO, part, std::strlen(part));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
      std::perror("zcoll_run: fork");
      if (group > 0) kill(-group, SIGKILL);
      return 1;
    }
    // (Also here: the parent must not signal the group before the child joined it.)
    setpgid(pid, group);
    if (group == 0) group = pid;
    children[rank] = pid;
    streams.push_back({rank, out[0], stdout, {}});
    streams.push_back({rank, err[0], stderr, {}});
  }

  const absl::Time start = absl::Now();
  absl::Time kill_at = absl::InfiniteFuture();  // SIGKILL for those still running
  int exit_code = 0;
  bool stopping = false;
  auto stop = [&](const std::string& why, int code) {
    if (stopping) return;
    stopping = true;
    exit_code = code;
    std::fprintf(stderr, "zcoll_run: %s; stopping the other ranks\n", why.c_str());
    kill(-group, SIGTERM);
    kill_at = absl::Now() + absl::Seconds(3);
  };

  int running = options.ranks;
  while (running > 0 || !streams.empty()) {
    if (g_forwarded_signal != 0) {
      const int signal = g_forwarded_signal;
      g_forwarded_signal = 0;
      stop(absl::StrCat("received signal ", signal), 128 + signal);
    }
    if (!stopping && absl::Now() - start > options.timeout) {
      stop(absl::StrCat("the job ran past --timeout ", absl::FormatDuration(options.timeout)), 124);
    }
    if (absl::Now() > kill_at) {
      kill(-group, SIGKILL);
      kill_at = absl::InfiniteFuture();
    }
    std::vector<pollfd> polls;
    for (const Stream& stream : streams) polls.push_back({stream.fd, POLLIN, 0});
    poll(polls.data(), polls.size(), 20);
    for (size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = read(streams[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        streams[i].partial.append(buffer, static_cast<size_t>(n));
        Emit(streams[i], streams[i].partial.size() > (1 << 20));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        Emit(streams[i], true);
        close(streams[i].fd);
        streams[i].fd = -1;
      }
    }
    streams.erase(std::remove_if(streams.begin(), streams.end(),
                                 [](const Stream& stream) { return stream.fd < 0; }),
                  streams.end());
    for (int rank = 0; rank < options.ranks; ++rank) {
      if (children[rank] <= 0) continue;
      int status = 0;
      if (waitpid(children[rank], &status, WNOHANG) != children[rank]) continue;
      SweepSharedMemory(children[rank]);
      children[rank] = -1;
      --running;
      record_end(rank, WIFSIGNALED(status)
                           ? absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                                          sigabbrev_np(WTERMSIG(status)) != nullptr
                                              ? absl::StrCat("SIG", sigabbrev_np(WTERMSIG(status)))
                                              : strsignal(WTERMSIG(status)),
                                          ")")
                           : absl::StrCat("exited with code ", WEXITSTATUS(status)));
      std::string failure;
      int code = 0;
      if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        failure = absl::StrCat("rank ", rank, " exited with code ", WEXITSTATUS(status));
        code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status) && !stopping) {
        failure = absl::StrCat("rank ", rank, " was killed by signal ", WTERMSIG(status), " (",
                               strsignal(WTERMSIG(status)), ")");
        code = 128 + WTERMSIG(status);
      }
      if (failure.empty()) continue;
      if (!options.keep_going) {
        stop(failure, code);
      } else {
        std::fprintf(stderr, "zcoll_run: %s; the other ranks go on (--keep-going)\n",
                     failure.c_str());
        if (exit_code == 0) exit_code = code;
      }
    }
    // A rank that closed its output but keeps running is still waited for.
    if (streams.empty() && running > 0) absl::SleepFor(absl::Milliseconds(10));
  }
  return exit_code;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  zcoll::Options options;
  std::string error;
  if (!zcoll::ParseOptions(argc, argv, options, error)) {
    std::fprintf(stderr, "zcoll_run: %s\n\n%s", error.c_str(), zcoll::kUsage);
    return 2;
  }
  return zcoll::Run(options);
}
