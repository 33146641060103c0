// The TCP store's wire format, for the server and client in tcp_store.cc and the
// fuzz target that feeds them hostile bytes (internal).
//
// Every message is a frame: a 4-byte little-endian length, then that many bytes of
// payload. A request payload is an opcode, a key (length-prefixed) and the opcode's
// argument: a Hello's job key, a Set's value, a Get's timeout in milliseconds, an
// Add's delta. A reply payload is an opcode and its result. Parsing refuses anything
// malformed, truncated, over its bound or with bytes left over.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_STORE_WIRE_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_STORE_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/bootstrap/store.h"

namespace zcoll::store_wire {

enum class Opcode : uint8_t {
  // Requests.
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  // Replies.
  kOk = 64,
  kValue = 65,
  kNumber = 66,
  kTimeout = 67,
  kError = 68,
};

// The largest frame payload after the Hello, and before it.
inline constexpr size_t kMaxFrameBytes = kMaxStoreValueBytes + 1024;
inline constexpr size_t kMaxFrameBytesBeforeHello = 4096;
inline constexpr size_t kFrameHeaderBytes = 4;

struct Request {
  Opcode opcode = Opcode::kHello;
  std::string key;      // a Hello's job key, else a checked store key
  std::string value;    // kSet
  uint64_t number = 0;  // kGet: timeout in milliseconds; kAdd: delta
};

struct Reply {
  Opcode opcode = Opcode::kOk;
  std::string bytes;    // kValue: the value; kError: the sentence
  uint64_t number = 0;  // kNumber
};

// `payload` with its frame header in front.
std::string Frame(absl::string_view payload);
// The payload length a frame announces once its header is in `in`.
std::optional<uint32_t> FrameLength(absl::string_view in);

std::string EncodeRequest(const Request& request);
// A request of an authenticated connection (`authenticated`), or its Hello.
// InvalidArgument with a sentence naming what is wrong otherwise.
absl::StatusOr<Request> ParseRequest(absl::string_view payload, bool authenticated);

std::string EncodeReply(const Reply& reply);
// Frame(EncodeReply(...)) in one allocation (a value's reply may be 1 MiB).
std::string FramedReply(Opcode opcode, absl::string_view bytes = "", uint64_t number = 0);
absl::StatusOr<Reply> ParseReply(absl::string_view payload);

}  // namespace zcoll::store_wire

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_STORE_WIRE_H_
