// zcoll's version, for tools, logs and the consumer check.

#ifndef ZCOLL_CORE_VERSION_H_
#define ZCOLL_CORE_VERSION_H_

#include "absl/strings/string_view.h"

namespace zcoll {

inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;
inline constexpr absl::string_view kVersion = "0.1.0";

}  // namespace zcoll

#endif  // ZCOLL_CORE_VERSION_H_
