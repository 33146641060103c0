// The command lines of zcoll_bench and zcoll_sim: options are "--name=value", or
// "--name value" for an option that takes a value (a switch such as --help takes none).

#ifndef ZCOLL_TOOLS_COMMAND_LINE_H_
#define ZCOLL_TOOLS_COMMAND_LINE_H_

#include <limits>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zcoll {

struct CommandLineOption {
  std::string name;   // "--min"
  std::string value;  // empty for a switch, or an option given last without its value
};

// The option at argv[i]; moves i past its value when that is the next argument.
// `switches` are the options that take no value.
CommandLineOption NextOption(int argc, char** argv, int& i,
                             absl::Span<const absl::string_view> switches);

// `option`'s value as a whole number of at least `minimum` into `out`; else false, with
// `error` naming the option and what it got.
template <typename T>
bool ParseNumberOption(const CommandLineOption& option, T& out, std::string& error,
                       T minimum = std::numeric_limits<T>::lowest()) {
  if (absl::SimpleAtoi(option.value, &out) && out >= minimum) return true;
  error = absl::StrCat(option.name, " needs a whole number",
                       minimum == std::numeric_limits<T>::lowest()
                           ? std::string()
                           : absl::StrCat(" of at least ", minimum),
                       ", got '", option.value, "'");
  return false;
}

}  // namespace zcoll

#endif  // ZCOLL_TOOLS_COMMAND_LINE_H_
