// The records ranks exchange through the bootstrap as they join a job (where a rank
// runs and its settings; its transport's address or why it has none) and the
// notices of the job's control channel (collectives/control_records.h), against
// hostile bytes. Checked: nothing reads out of bounds (ASan), and whatever parses
// encodes back to a record that parses to the same values.

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/control_records.h"
#include "fuzz/fuzz_target.h"

namespace zcoll::fuzz {

std::vector<std::string> SeedInputs() {
  return {
      EncodeJoinRecord({.package = 0,
                        .numa = 1,
                        .l3 = 5,
                        .settings = "ZCOLL_CHUNK_BYTES=\nemulated nodes=2",
                        .host = "node17",
                        .cores = 64}),
      EncodeJoinRecord({.problem = "ZCOLL_EMULATE_NODES: 5 nodes for 4 ranks"}),
      EncodeJoinRecord({.package = -1, .numa = -1, .settings = "", .host = "a host with spaces"}),
      EncodeAddressEntry(std::string("\x01\x02 an address\0", 14)),
      EncodeAddressEntry(absl::UnavailableError("no provider")),
      EncodeNotice(NoticeKind::kFailure, 3, absl::AbortedError("rank 3 called Abort: why")),
      EncodeNotice(NoticeKind::kGoodbye, 0, absl::OkStatus()),
  };
}

}  // namespace zcoll::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zcoll;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  if (const absl::StatusOr<JoinRecord> record = ParseJoinRecord(input); record.ok()) {
    const absl::StatusOr<JoinRecord> again = ParseJoinRecord(EncodeJoinRecord(*record));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->problem == record->problem);
    if (record->problem.empty()) {
      FUZZ_CHECK(again->package == record->package && again->numa == record->numa &&
                 again->l3 == record->l3 && again->cores == record->cores &&
                 again->settings == record->settings && again->host == record->host);
      FUZZ_CHECK(record->cores >= 0);
    }
  }
  if (const absl::StatusOr<std::string> address = ParseAddressEntry(input); address.ok()) {
    const absl::StatusOr<std::string> again = ParseAddressEntry(EncodeAddressEntry(*address));
    FUZZ_CHECK(again.ok() && *again == *address);
  }
  if (const std::optional<Notice> notice = DecodeNotice(input, 1024); notice.has_value()) {
    const std::optional<Notice> again =
        DecodeNotice(EncodeNotice(notice->kind, notice->origin, notice->cause), 1024);
    FUZZ_CHECK(again.has_value() && again->kind == notice->kind);
    if (notice->kind == NoticeKind::kFailure) {
      FUZZ_CHECK(again->cause.code() == notice->cause.code());
      FUZZ_CHECK(again->cause.message() == notice->cause.message().substr(0, kNoticeMessageBytes));
    }
  }
  return 0;
}
