#include "core/config.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace zcoll {
namespace {

// Keep sorted by name; README.md's "Environment variables" table mirrors this one
// (core/config_test.cc checks that every entry appears there).
constexpr EnvironmentVariable kEnvironmentVariables[] = {
    {"ZCOLL_LOG_LEVEL", "warning",
     "Least severe message printed to stderr: error, warning, info, debug or trace "
     "(or 0-4)."},
};

}  // namespace

absl::Span<const EnvironmentVariable> EnvironmentVariables() { return kEnvironmentVariables; }

std::string EnvironmentValue(absl::string_view name) {
  for (const EnvironmentVariable& variable : kEnvironmentVariables) {
    if (variable.name != name) continue;
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::string(variable.default_value);
    return value;
  }
  // Logging depends on this file, so a broken invariant here reports by hand.
  std::fprintf(stderr,
               "zcoll: internal error: environment variable %.*s is read but not "
               "declared in core/config.cc\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

}  // namespace zcoll
