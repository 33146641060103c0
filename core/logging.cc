#include "core/logging.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/config.h"
#include "core/mutex.h"

namespace zcoll {
namespace {

constexpr LogLevel kDefaultLevel = LogLevel::kWarning;

Mutex prefix_mutex;
std::string& LogPrefix() ABSL_EXCLUSIVE_LOCKS_REQUIRED(prefix_mutex) {
  static std::string* prefix = new std::string();
  return *prefix;
}

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return 'E';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kTrace:
      return 'T';
  }
  return '?';
}

absl::string_view Basename(absl::string_view path) {
  size_t slash = path.rfind('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// One write(2) per message so concurrent lines stay whole.
void WriteLine(absl::string_view header, absl::string_view body) {
  std::string line;
  {
    MutexLock lock(&prefix_mutex);
    const std::string& prefix = LogPrefix();
    line = absl::StrCat(header, prefix.empty() ? "" : " ", prefix, "] ", body, "\n");
  }
  const char* data = line.data();
  size_t remaining = line.size();
  while (remaining > 0) {
    ssize_t written = ::write(STDERR_FILENO, data, remaining);
    if (written <= 0) return;  // Nowhere left to report a failing stderr.
    data += written;
    remaining -= static_cast<size_t>(written);
  }
}

std::string Header(char letter, const char* file, int line) {
  return absl::StrCat("[zcoll ", std::string(1, letter), " ",
                      absl::FormatTime("%H:%M:%E6S", absl::Now(), absl::LocalTimeZone()), " ",
                      Basename(file), ":", line);
}

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug,
                         LogLevel::kTrace}) {
    if (lower == LogLevelName(level)) return level;
  }
  int number = 0;
  if (absl::SimpleAtoi(lower, &number) && number >= 0 &&
      number <= static_cast<int>(LogLevel::kTrace)) {
    return static_cast<LogLevel>(number);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "log level '", text, "' is not one of error, warning, info, debug, trace or a number 0-4"));
}

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kTrace:
      return "trace";
  }
  return "unknown";
}

void SetLogLevel(LogLevel level) {
  internal_log::log_threshold.store(static_cast<int>(level), std::memory_order_relaxed);
}

void SetLogPrefix(absl::string_view prefix) {
  MutexLock lock(&prefix_mutex);
  LogPrefix() = std::string(prefix);
}

namespace internal_log {

int InitializeThresholdSlow() {
  // Several threads may race here; they all compute the same value from the same
  // environment, so the last store wins harmlessly.
  const std::string text = EnvironmentValue("ZCOLL_LOG_LEVEL");
  absl::StatusOr<LogLevel> level = ParseLogLevel(text);
  int threshold = static_cast<int>(kDefaultLevel);
  if (level.ok()) {
    threshold = static_cast<int>(*level);
  } else {
    WriteLine(Header('W', __FILE__, __LINE__),
              absl::StrCat("ZCOLL_LOG_LEVEL: ", level.status().message(), "; using ",
                           LogLevelName(kDefaultLevel)));
  }
  int expected = -1;
  log_threshold.compare_exchange_strong(expected, threshold, std::memory_order_relaxed);
  return log_threshold.load(std::memory_order_relaxed);
}

LogMessage::LogMessage(const char* file, int line, LogLevel level)
    : file_(file), line_(line), letter_(LevelLetter(level)) {}

LogMessage::~LogMessage() {
  // The header is built here so that its time is the time of writing.
  WriteLine(Header(letter_, file_, line_), stream_.str());
}

FatalMessage::FatalMessage(const char* file, int line, const char* condition)
    : file_(file), line_(line) {
  stream_ << "check failed: " << condition << ": ";
}

FatalMessage::~FatalMessage() {
  WriteLine(Header('F', file_, line_), stream_.str());
  std::abort();
}

}  // namespace internal_log
}  // namespace zcoll
