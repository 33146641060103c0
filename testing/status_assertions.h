// ASSERT_OK and EXPECT_OK for an absl::Status or absl::StatusOr<T>: on failure they print
// the status, so that a failure (in CI above all, where a flaky one may not come back)
// says what went wrong. A bare ASSERT_TRUE(call.ok()) prints only "Actual: false".
//
//   ASSERT_OK(comm.Barrier());
//   EXPECT_OK(request->Wait());

#ifndef ZCOLL_TESTING_STATUS_ASSERTIONS_H_
#define ZCOLL_TESTING_STATUS_ASSERTIONS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace zcoll::status_assertions_internal {

inline const absl::Status& StatusOf(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace zcoll::status_assertions_internal

// (The expression is evaluated once; a temporary lives to the end of the check.)
#define ZCOLL_STATUS_CHECK_(check, expression)                                       \
  do {                                                                               \
    const auto& zcoll_checked_status_ = (expression);                                \
    check(::zcoll::status_assertions_internal::StatusOf(zcoll_checked_status_).ok()) \
        << #expression << ": "                                                       \
        << ::zcoll::status_assertions_internal::StatusOf(zcoll_checked_status_);     \
  } while (false)

#define ASSERT_OK(expression) ZCOLL_STATUS_CHECK_(ASSERT_TRUE, expression)
#define EXPECT_OK(expression) ZCOLL_STATUS_CHECK_(EXPECT_TRUE, expression)

#endif  // ZCOLL_TESTING_STATUS_ASSERTIONS_H_
