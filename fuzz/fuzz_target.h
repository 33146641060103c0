// What every fuzz target of fuzz/ defines, besides libFuzzer's entry point
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// which must return 0 and abort (a crash, a sanitizer's report, or FUZZ_CHECK) on a
// bug: the valid inputs it starts from, for libFuzzer's corpus and for the replay in
// `bazel test` (standalone_main.cc, which builds with gcc too).

#ifndef ZCOLL_FUZZ_FUZZ_TARGET_H_
#define ZCOLL_FUZZ_FUZZ_TARGET_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace zcoll::fuzz {

// Valid inputs of the target (each a whole input as LLVMFuzzerTestOneInput takes it).
std::vector<std::string> SeedInputs();

}  // namespace zcoll::fuzz

// An invariant of the code under test: aborts with where and what when it does not
// hold (assert() would vanish under NDEBUG).
#define FUZZ_CHECK(condition)                                                                 \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

#endif  // ZCOLL_FUZZ_FUZZ_TARGET_H_
