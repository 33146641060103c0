// Leveled logging to stderr and crash-only invariant checks.
//
//   ZCOLL_LOG(INFO) << "connected to rank " << peer;
//   ZCOLL_CHECK(offset <= size) << "slice overruns its buffer";
//
// Levels, most to least severe: ERROR, WARNING, INFO, DEBUG, TRACE. A message is
// printed when its level is at or above the threshold from ZCOLL_LOG_LEVEL (default
// WARNING), read on first use. A suppressed ZCOLL_LOG costs one relaxed atomic load
// and a compare; its stream arguments are not evaluated.
//
// ZCOLL_CHECK is for broken invariants of zcoll itself: it prints the condition, the
// place and the streamed message, then aborts. Never use it for user input, which
// gets an absl::Status (docs/design.md, "Errors"). ZCOLL_DCHECK compiles away under NDEBUG
// (its condition is still type-checked, never evaluated).
//
// The macros carry a ZCOLL_ prefix because services that link zcoll often link glog
// or abseil logging, which own the plain CHECK and LOG names.
//
// Thread safety: any thread may log; each message is written with one write(2), so
// lines from concurrent threads (or ranks sharing a terminal) do not interleave.

#ifndef ZCOLL_CORE_LOGGING_H_
#define ZCOLL_CORE_LOGGING_H_

#include <atomic>
#include <sstream>
#include <string>

#include "absl/base/optimization.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zcoll {

enum class LogLevel : int {
  kError = 0,
  kWarning = 1,
  kInfo = 2,
  kDebug = 3,
  kTrace = 4,
};

// Parses "error", "warning", "info", "debug", "trace" (any case) or "0".."4".
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text);

// The lower-case name of `level`.
absl::string_view LogLevelName(LogLevel level);

// Overrides ZCOLL_LOG_LEVEL for the rest of the process (tools and tests).
void SetLogLevel(LogLevel level);

// Text printed at the start of every message of this process, e.g. "rank 3"; empty
// by default. The runtime sets it once the rank is known.
void SetLogPrefix(absl::string_view prefix);

namespace internal_log {

// -1 until the threshold has been read from the environment.
inline constinit std::atomic<int> log_threshold{-1};
int InitializeThresholdSlow();

inline bool Enabled(LogLevel level) {
  int threshold = log_threshold.load(std::memory_order_relaxed);
  if (ABSL_PREDICT_FALSE(threshold < 0)) threshold = InitializeThresholdSlow();
  return static_cast<int>(level) <= threshold;
}

// Collects one message and writes it when destroyed.
class LogMessage {
 public:
  LogMessage(const char* file, int line, LogLevel level);
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  char letter_;
  std::ostringstream stream_;
};

// Collects the message of a failed check; writes it and aborts when destroyed.
class FatalMessage {
 public:
  FatalMessage(const char* file, int line, const char* condition);
  FatalMessage(const FatalMessage&) = delete;
  FatalMessage& operator=(const FatalMessage&) = delete;
  [[noreturn]] ~FatalMessage();
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Lets a `cond ? (void)0 : Voidify() & stream << ...` expression type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};

inline constexpr LogLevel kLevel_ERROR = LogLevel::kError;
inline constexpr LogLevel kLevel_WARNING = LogLevel::kWarning;
inline constexpr LogLevel kLevel_INFO = LogLevel::kInfo;
inline constexpr LogLevel kLevel_DEBUG = LogLevel::kDebug;
inline constexpr LogLevel kLevel_TRACE = LogLevel::kTrace;

}  // namespace internal_log
}  // namespace zcoll

// `level` is pasted, never expanded, so a user's `-DDEBUG` cannot break ZCOLL_LOG(DEBUG).
#define ZCOLL_LOG(level)                                                             \
  !::zcoll::internal_log::Enabled(::zcoll::internal_log::kLevel_##level)             \
      ? (void)0                                                                      \
      : ::zcoll::internal_log::Voidify() &                                           \
            ::zcoll::internal_log::LogMessage(__FILE__, __LINE__,                    \
                                              ::zcoll::internal_log::kLevel_##level) \
                .stream()

#define ZCOLL_CHECK(condition)         \
  ABSL_PREDICT_TRUE(condition)         \
  ? (void)0                            \
  : ::zcoll::internal_log::Voidify() & \
          ::zcoll::internal_log::FatalMessage(__FILE__, __LINE__, #condition).stream()

// Aborts with the status's message unless `expr` (an absl::Status) is OK.
#define ZCOLL_CHECK_OK(expr)                                          \
  do {                                                                \
    const ::absl::Status zcoll_check_ok_status = (expr);              \
    ZCOLL_CHECK(zcoll_check_ok_status.ok()) << zcoll_check_ok_status; \
  } while (false)

#ifdef NDEBUG
#define ZCOLL_DCHECK(condition) \
  while (false) ZCOLL_CHECK(condition)
#else
#define ZCOLL_DCHECK(condition) ZCOLL_CHECK(condition)
#endif

#endif  // ZCOLL_CORE_LOGGING_H_
