// The records ranks exchange through the bootstrap as they join a job, and the
// notices they send one another when it fails: bytes from other processes, turned
// here into values or refused with a sentence, never read past their end (the fuzz
// targets in fuzz/ feed them hostile bytes).

#ifndef ZCOLL_COLLECTIVES_CONTROL_RECORDS_H_
#define ZCOLL_COLLECTIVES_CONTROL_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/topology.h"

namespace zcoll {

// Create's first exchange: where a rank runs and the job-wide settings it has (which
// every rank must have alike), or why it cannot join.
struct JoinRecord {
  std::string problem;  // not empty: the rank cannot join, and why
  int package = kUnknownId;
  int numa = kUnknownId;
  int l3 = kUnknownId;
  std::string settings;
  std::string host;
  // The cores of its host as it counts them (CoresOfThisMachine; 0: unknown).
  int cores = 0;
};
std::string EncodeJoinRecord(const JoinRecord& record);
// InvalidArgument naming what is malformed.
absl::StatusOr<JoinRecord> ParseJoinRecord(absl::string_view entry);

// Create's second exchange: a rank's transport address, or why it has none.
std::string EncodeAddressEntry(const absl::StatusOr<std::string>& address);
// The address; Unavailable with the rank's reason when it has none.
absl::StatusOr<std::string> ParseAddressEntry(absl::string_view entry);

// A notice on the job's control channel: a rank failed (and why), or leaves.
enum class NoticeKind : uint8_t { kFailure = 1, kGoodbye = 2 };
struct Notice {
  NoticeKind kind = NoticeKind::kFailure;
  int origin = -1;
  absl::Status cause;  // a failure's (its code Unknown if the code was out of range)
};
// Long causes are cut to kNoticeMessageBytes.
inline constexpr size_t kNoticeMessageBytes = 900;
std::string EncodeNotice(NoticeKind kind, int origin, const absl::Status& cause);
// nullopt when garbled (an unknown kind, truncated, bytes left over, a message
// longer than `max_message_bytes`).
std::optional<Notice> DecodeNotice(absl::string_view bytes, size_t max_message_bytes);
// Whether an encoded notice (this rank's own) tells of a failure.
inline bool IsFailureNotice(absl::string_view bytes) {
  return !bytes.empty() &&
         static_cast<uint8_t>(bytes[0]) == static_cast<uint8_t>(NoticeKind::kFailure);
}

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_CONTROL_RECORDS_H_
