#include "tools/command_line.h"

#include <algorithm>

namespace zcoll {

CommandLineOption NextOption(int argc, char** argv, int& i,
                             absl::Span<const absl::string_view> switches) {
  CommandLineOption option{argv[i], ""};
  const size_t equals = option.name.find('=');
  if (equals != std::string::npos) {
    option.value = option.name.substr(equals + 1);
    option.name.resize(equals);
  } else if (std::find(switches.begin(), switches.end(), option.name) == switches.end() &&
             i + 1 < argc) {
    option.value = argv[++i];
  }
  return option;
}

}  // namespace zcoll
