#include "collectives/control_records.h"

#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

// Quoted in a sentence, cut short: the entry may be anything.
std::string Quoted(absl::string_view entry) {
  constexpr size_t kShown = 120;
  return absl::StrCat("'", absl::CHexEscape(entry.substr(0, kShown)),
                      entry.size() > kShown ? "...'" : "'");
}

bool IsHex(absl::string_view text) {
  if (text.size() % 2 != 0) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string EncodeJoinRecord(const JoinRecord& record) {
  if (!record.problem.empty()) return absl::StrCat("! ", record.problem);
  return absl::StrCat(record.package, " ", record.numa, " ", record.l3, " ", record.cores, " ",
                      absl::BytesToHexString(record.settings), " ", record.host);
}

absl::StatusOr<JoinRecord> ParseJoinRecord(absl::string_view entry) {
  JoinRecord record;
  if (absl::ConsumePrefix(&entry, "! ")) {
    record.problem = std::string(entry);
    if (record.problem.empty()) record.problem = "(no reason given)";
    return record;
  }
  const std::vector<absl::string_view> fields = absl::StrSplit(entry, absl::MaxSplits(' ', 5));
  if (fields.size() != 6 || !absl::SimpleAtoi(fields[0], &record.package) ||
      !absl::SimpleAtoi(fields[1], &record.numa) || !absl::SimpleAtoi(fields[2], &record.l3) ||
      !absl::SimpleAtoi(fields[3], &record.cores) || record.cores < 0 || !IsHex(fields[4])) {
    return absl::InvalidArgumentError(absl::StrCat("a malformed location ", Quoted(entry)));
  }
  record.settings = absl::HexStringToBytes(fields[4]);
  record.host = std::string(fields[5]);
  return record;
}

std::string EncodeAddressEntry(const absl::StatusOr<std::string>& address) {
  // The first byte says which: '+' and an address, or '!' and the reason.
  return address.ok() ? absl::StrCat("+", *address) : absl::StrCat("!", address.status().message());
}

absl::StatusOr<std::string> ParseAddressEntry(absl::string_view entry) {
  if (absl::ConsumePrefix(&entry, "+")) return std::string(entry);
  if (absl::ConsumePrefix(&entry, "!") && !entry.empty()) {
    return absl::UnavailableError(std::string(entry));
  }
  return absl::UnavailableError(entry.empty()
                                    ? "(no reason given)"
                                    : absl::StrCat("a malformed address entry ", Quoted(entry)));
}

std::string EncodeNotice(NoticeKind kind, int origin, const absl::Status& cause) {
  WireWriter writer;
  writer.U8(static_cast<uint8_t>(kind));
  writer.U32(static_cast<uint32_t>(origin));
  writer.U32(static_cast<uint32_t>(cause.code()));
  writer.Bytes(absl::string_view(cause.message()).substr(0, kNoticeMessageBytes));
  return std::move(writer).Finish();
}

std::optional<Notice> DecodeNotice(absl::string_view bytes, size_t max_message_bytes) {
  WireReader reader(bytes);
  uint8_t kind = 0;
  uint32_t origin = 0, code = 0;
  std::string message;
  if (!reader.U8(kind) || !reader.U32(origin) || !reader.U32(code) ||
      !reader.Bytes(message, max_message_bytes) || !reader.at_end()) {
    return std::nullopt;
  }
  if (kind != static_cast<uint8_t>(NoticeKind::kFailure) &&
      kind != static_cast<uint8_t>(NoticeKind::kGoodbye)) {
    return std::nullopt;
  }
  Notice notice;
  notice.kind = static_cast<NoticeKind>(kind);
  notice.origin = origin > static_cast<uint32_t>(INT32_MAX) ? -1 : static_cast<int>(origin);
  const absl::StatusCode status_code =
      code == 0 || code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)
          ? absl::StatusCode::kUnknown
          : static_cast<absl::StatusCode>(code);
  if (notice.kind == NoticeKind::kFailure) notice.cause = absl::Status(status_code, message);
  return notice;
}

}  // namespace zcoll
