// Sets an environment variable for a scope (a test's, or one case of it) and unsets it
// at the scope's end, whichever way the scope is left (a failed ASSERT returns early).
// Variables that zcoll reads when a communicator is made (ZCOLL_CORES, the providers)
// take effect for the communicators made within the scope.

#ifndef ZCOLL_TESTING_SCOPED_ENVIRONMENT_H_
#define ZCOLL_TESTING_SCOPED_ENVIRONMENT_H_

#include <cstdlib>

namespace zcoll::testing {

class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnvironment() { unsetenv(name_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
};

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_SCOPED_ENVIRONMENT_H_
