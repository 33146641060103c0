// The one place where zcoll's tunables are declared (docs/design.md, "Conventions").
//
// Every environment variable zcoll reads is listed in kEnvironmentVariables, with its
// default and a sentence for users. `zcoll_info` prints the table, the README carries
// the same table (a test keeps them in step), and `EnvironmentValue` refuses to read a
// variable that is not declared here, so no knob can appear mid-file unannounced.

#ifndef ZCOLL_CORE_CONFIG_H_
#define ZCOLL_CORE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace zcoll {

// What a variable's value may be; CheckEnvironment refuses anything else, naming the
// variable and these forms, so a typo is an error at Communicator::Create rather than
// a default silently used.
enum class Form {
  kText,             // anything (a secret, ...)
  kFlag,             // 0 or 1
  kCount,            // a whole number, 0 or more
  kPositiveCount,    // a whole number, 1 or more
  kNumber,           // a decimal number, 0 or more
  kDuration,         // a positive duration: seconds (120, 0.5) or with a unit (10s, 500ms)
  kNodeSizes,        // K, or node sizes like 3,1
  kLogLevel,         // error, warning, info, debug, trace or 0-4
  kBootstrap,        // auto, pmix or store
  kStore,            // tcp://HOST:PORT or file:///DIR
  kNetworkProvider,  // auto, ofi, ofi:NAME, ucx, ucx:TLS
  kLocalProvider,    // shm, ofi, ofi:NAME, ucx, ucx:TLS
  kAlgorithm,        // an algorithm's name (checked against the collective's list when
                     // a communicator is made: the names live in collectives/)
};

// The accepted forms of `form`, as a phrase for error messages ("0 or 1").
absl::string_view AcceptedForms(Form form);

struct EnvironmentVariable {
  absl::string_view name;           // e.g. "ZCOLL_LOG_LEVEL"
  absl::string_view default_value;  // what an unset or empty variable means
  absl::string_view description;    // one sentence for the README and zcoll_info
  // Every rank of a job must see the same value (it decides what the ranks must agree
  // on: algorithms, chunks, transports, placement); Communicator::Create refuses a job
  // whose ranks differ.
  bool job_wide = false;
  Form form = Form::kText;
};

// All variables, sorted by name.
absl::Span<const EnvironmentVariable> EnvironmentVariables();

// The value of `name` from the process environment, or its declared default when the
// variable is unset or empty. `name` must be declared in EnvironmentVariables(); a
// name that is not is a bug in zcoll and aborts with a message.
std::string EnvironmentValue(absl::string_view name);

// Whether `name` is set to a non-empty value in the process environment.
bool EnvironmentIsSet(absl::string_view name);

// The job-wide variables with the values in effect, one "NAME=value" per line, in the
// table's order: what Communicator::Create compares across ranks.
std::string JobWideSettings();

// Whether `value` has the form `variable` accepts: OK, or InvalidArgument naming the
// variable, the value and the accepted forms.
absl::Status CheckEnvironmentValue(const EnvironmentVariable& variable, absl::string_view value);

// Every set variable checked with CheckEnvironmentValue: OK, or one InvalidArgument
// naming each variable whose value is not accepted.
absl::Status CheckEnvironment();

// A duration as ZCOLL_TIMEOUT spells it: a positive number of seconds (120, 0.5) or a
// number with a unit (10s, 500ms, 2m, 1h; absl::ParseDuration's units).
absl::StatusOr<absl::Duration> ParsePositiveDuration(absl::string_view text);

// EnvironmentValue parsed with ParsePositiveDuration; a value that does not parse
// gives the declared default (CheckEnvironment, which Communicator::Create runs, has
// refused it already).
absl::Duration EnvironmentDuration(absl::string_view name);

// EnvironmentValue parsed as a non-negative integer. A value that does not parse is
// reported once on stderr and the declared default is used instead.
uint64_t EnvironmentUnsigned(absl::string_view name);

}  // namespace zcoll

#endif  // ZCOLL_CORE_CONFIG_H_
