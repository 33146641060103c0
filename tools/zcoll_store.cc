// zcoll_store: the rendezvous store of a service-mode job, as a program of its own.
//
// In service mode (no launcher: ranks started by a scheduler, a container runtime or
// by hand) every rank is given ZCOLL_STORE=tcp://HOST:PORT, ZCOLL_JOB_KEY,
// ZCOLL_RANK and ZCOLL_SIZE, and meets the others through this store while
// Communicator::Create runs. The store must be up before the first rank's Create and
// stay up until every rank's Create has returned (ranks also use it to learn how a
// peer that failed ended, so keeping it up for the job's life gives better errors).

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/config.h"
#include "core/version.h"
#include "transport/bootstrap/tcp_store.h"

namespace zcoll {
namespace {

constexpr char kUsage[] =
    "usage: zcoll_store [--host HOST] [--port PORT] [--job-key-file FILE]\n"
    "                   [--max-connections N] [--max-stored-bytes B] [--max-buffered-bytes B]\n"
    "                   [--exit-after SECONDS] [--url-file FILE] [--version]\n"
    "\n"
    "Serves the TCP rendezvous store of a service-mode zcoll job until SIGINT or SIGTERM\n"
    "(or --exit-after). Ranks find it through ZCOLL_STORE=tcp://HOST:PORT and present\n"
    "its job key in ZCOLL_JOB_KEY. Start it before any rank, and keep it up until every\n"
    "rank's Communicator::Create has returned (for the job's life, for the best errors\n"
    "about failed ranks).\n"
    "\n"
    "  --host HOST             address to listen on (default 127.0.0.1; 0.0.0.0: all)\n"
    "  --port PORT             port (default 0: any free one, printed)\n"
    "  --job-key-file FILE     the job key, read from FILE (its first line); default:\n"
    "                          ZCOLL_JOB_KEY from the environment, else a fresh key,\n"
    "                          printed (keep it secret: it lets a process join the job)\n"
    "  --max-connections N     open connections at most (default 1024)\n"
    "  --max-stored-bytes B    keys and values at most, 128 B per key on top (256 MiB)\n"
    "  --max-buffered-bytes B  frames and replies in flight at most (64 MiB)\n"
    "  --exit-after SECONDS    stop after this long (default: never)\n"
    "  --url-file FILE         also write the store's URL to FILE once it listens\n"
    "\n"
    "Prints one line once it listens: ZCOLL_STORE=tcp://HOST:PORT (and, when it made the\n"
    "key, ZCOLL_JOB_KEY=...), ready to be exported.\n";

volatile sig_atomic_t g_stop = 0;
void Stop(int) { g_stop = 1; }

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string job_key_file;
  TcpStoreLimits limits;
  absl::Duration exit_after = absl::InfiniteDuration();
  std::string url_file;
};

bool ParseOptions(int argc, char** argv, Options& options, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "-h" || argument == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (argument == "--version") {
      absl::PrintF("zcoll_store %s\n", kVersion);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      error = absl::StrCat(argument, argument.rfind("--", 0) == 0 ? " needs a value" : ": unknown");
      return false;
    }
    const std::string value = argv[++i];
    auto count = [&](size_t& out, size_t minimum) {
      if (absl::SimpleAtoi(value, &out) && out >= minimum) return true;
      error = absl::StrCat(argument, " '", value, "' is not a whole number, ", minimum, " or more");
      return false;
    };
    if (argument == "--host") {
      options.host = value;
    } else if (argument == "--port") {
      if (!absl::SimpleAtoi(value, &options.port) || options.port < 0 || options.port > 65535) {
        error = absl::StrCat("--port '", value, "' is not a port, 0-65535");
        return false;
      }
    } else if (argument == "--job-key-file") {
      options.job_key_file = value;
    } else if (argument == "--max-connections") {
      if (!count(options.limits.max_connections, 1)) return false;
    } else if (argument == "--max-stored-bytes") {
      if (!count(options.limits.max_stored_bytes, 1)) return false;
    } else if (argument == "--max-buffered-bytes") {
      if (!count(options.limits.max_buffered_bytes, 64 << 10)) return false;
    } else if (argument == "--exit-after") {
      absl::StatusOr<absl::Duration> after = ParsePositiveDuration(value);
      if (!after.ok()) {
        error = absl::StrCat("--exit-after ", after.status().message());
        return false;
      }
      options.exit_after = *after;
    } else if (argument == "--url-file") {
      options.url_file = value;
    } else {
      error = absl::StrCat("unknown option '", argument, "'");
      return false;
    }
  }
  return true;
}

int Run(const Options& options) {
  std::string job_key;
  bool made_key = false;
  if (!options.job_key_file.empty()) {
    std::ifstream file(options.job_key_file);
    if (!file.good()) {
      std::fprintf(stderr, "zcoll_store: cannot read --job-key-file %s: %s\n",
                   options.job_key_file.c_str(), std::strerror(errno));
      return 2;
    }
    std::getline(file, job_key);
    job_key = std::string(absl::StripAsciiWhitespace(job_key));
    if (job_key.empty()) {
      std::fprintf(stderr, "zcoll_store: --job-key-file %s holds no key on its first line\n",
                   options.job_key_file.c_str());
      return 2;
    }
  } else if (const char* key = std::getenv("ZCOLL_JOB_KEY"); key != nullptr && *key != '\0') {
    job_key = key;
  } else {
    job_key = NewJobKey();
    made_key = true;
  }
  struct sigaction stop {};
  stop.sa_handler = Stop;
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> server =
      TcpStoreServer::Start(options.host, options.port, job_key, options.limits);
  if (!server.ok()) {
    std::fprintf(stderr, "zcoll_store: cannot listen on %s:%d: %s\n", options.host.c_str(),
                 options.port, std::string(server.status().message()).c_str());
    return 1;
  }
  absl::PrintF("ZCOLL_STORE=%s\n", (*server)->url());
  if (made_key) absl::PrintF("ZCOLL_JOB_KEY=%s\n", job_key);
  std::fflush(stdout);
  if (!options.url_file.empty()) {
    // Written whole under another name, then renamed: a reader never sees half a URL.
    const std::string partial = options.url_file + ".partial";
    std::ofstream file(partial);
    file << (*server)->url() << "\n";
    file.close();
    if (!file || std::rename(partial.c_str(), options.url_file.c_str()) != 0) {
      std::fprintf(stderr, "zcoll_store: cannot write --url-file %s\n", options.url_file.c_str());
      return 2;
    }
  }
  const absl::Time stop_at = absl::Now() + options.exit_after;
  while (g_stop == 0 && absl::Now() < stop_at) absl::SleepFor(absl::Milliseconds(50));
  std::fprintf(stderr, "zcoll_store: stopping (%s)\n", g_stop != 0 ? "signal" : "--exit-after");
  return 0;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  zcoll::Options options;
  std::string error;
  if (!zcoll::ParseOptions(argc, argv, options, error)) {
    std::fprintf(stderr, "zcoll_store: %s\n\n%s", error.c_str(), zcoll::kUsage);
    return 2;
  }
  return zcoll::Run(options);
}
