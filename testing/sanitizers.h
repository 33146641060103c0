// Whether this build runs under a sanitizer that changes how much memory a process
// holds, so that the memory figures of the soak and the store flood say nothing about
// zcoll (AddressSanitizer keeps freed memory in its quarantine and adds shadow
// memory). Those programs still run every operation and check every result; they
// only do not judge the figures, and say so.

#ifndef ZCOLL_TESTING_SANITIZERS_H_
#define ZCOLL_TESTING_SANITIZERS_H_

namespace zcoll::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr const char* kMemoryFiguresSkipped =
    "not judged: built with AddressSanitizer, whose quarantine holds freed memory and "
    "whose shadow adds to every allocation";
#else
inline constexpr const char* kMemoryFiguresSkipped = nullptr;
#endif

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_SANITIZERS_H_
