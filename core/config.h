// The one place where zcoll's tunables are declared (STYLE.md, habit 11).
//
// Every environment variable zcoll reads is listed in kEnvironmentVariables, with its
// default and a sentence for users. `zcoll_info` prints the table, the README carries
// the same table (a test keeps them in step), and `EnvironmentValue` refuses to read a
// variable that is not declared here, so no knob can appear mid-file unannounced.

#ifndef ZCOLL_CORE_CONFIG_H_
#define ZCOLL_CORE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zcoll {

struct EnvironmentVariable {
  absl::string_view name;           // e.g. "ZCOLL_LOG_LEVEL"
  absl::string_view default_value;  // what an unset or empty variable means
  absl::string_view description;    // one sentence for the README and zcoll_info
  // Every rank of a job must see the same value (it decides what the ranks must agree
  // on: algorithms, chunks, transports, placement); Communicator::Create refuses a job
  // whose ranks differ.
  bool job_wide = false;
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

// EnvironmentValue parsed as a non-negative integer. A value that does not parse is
// reported once on stderr and the declared default is used instead.
uint64_t EnvironmentUnsigned(absl::string_view name);

}  // namespace zcoll

#endif  // ZCOLL_CORE_CONFIG_H_
