// Early-return helpers for absl::Status and absl::StatusOr<T>.
//
// Abseil 20220623 (Debian 12) ships no status macros, so zcoll has its own two. Each
// expands to nothing but an `if` with a visible `return`: no goto, no hidden control
// flow (docs/design.md, "Errors").
//
//   absl::Status Connect(...) {
//     RETURN_IF_ERROR(Resolve(address));             // Status or StatusOr<T>
//     ASSIGN_OR_RETURN(Endpoint endpoint, Open(address));
//     ...
//   }
//
// This header is internal: public headers (zcoll.h and what it includes) must not
// include it, so that the unprefixed names never collide with a user's own macros.

#ifndef ZCOLL_CORE_STATUS_MACROS_H_
#define ZCOLL_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zcoll::internal_status {

inline const absl::Status& AsStatus(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace zcoll::internal_status

// Evaluates `expr` (an absl::Status or absl::StatusOr<T>) once; if it is not OK,
// returns its status from the enclosing function.
#define RETURN_IF_ERROR(expr)                                                 \
  do {                                                                        \
    const auto& zcoll_return_if_error_value = (expr);                         \
    if (ABSL_PREDICT_FALSE(!zcoll_return_if_error_value.ok())) {              \
      return ::zcoll::internal_status::AsStatus(zcoll_return_if_error_value); \
    }                                                                         \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); if it is not OK returns its status,
// otherwise moves the value into `lhs`, which may declare a variable:
//   ASSIGN_OR_RETURN(auto buffer, Allocate(bytes));
//   ASSIGN_OR_RETURN(existing_variable, Compute());
// `lhs` must not contain an unparenthesised comma.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  ZCOLL_ASSIGN_OR_RETURN_IMPL_(ZCOLL_STATUS_MACROS_CONCAT_(zcoll_status_or_, __LINE__), lhs, rexpr)

#define ZCOLL_ASSIGN_OR_RETURN_IMPL_(status_or, lhs, rexpr) \
  auto status_or = (rexpr);                                 \
  if (ABSL_PREDICT_FALSE(!status_or.ok())) {                \
    return std::move(status_or).status();                   \
  }                                                         \
  lhs = std::move(status_or).value()

#define ZCOLL_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define ZCOLL_STATUS_MACROS_CONCAT_(x, y) ZCOLL_STATUS_MACROS_CONCAT_INNER_(x, y)

#endif  // ZCOLL_CORE_STATUS_MACROS_H_
