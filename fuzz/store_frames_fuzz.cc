// The TCP store's server and client parsers against hostile bytes. The input is what
// one client sends the server: frames (or not) that the server reads the way
// tcp_store.cc does (a frame's length checked against the session's limit before its
// bytes are taken, then its payload parsed and answered), until it refuses the
// session or the bytes run out. Checked: nothing reads out of bounds (ASan), every
// reply the server writes is a well-formed frame the client parses, the stored bytes
// never pass the store's limit, and a request the server parses encodes back to the
// same request. The input is also a reply the client parses.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "fuzz/fuzz_target.h"
#include "transport/bootstrap/store_state.h"
#include "transport/bootstrap/store_wire.h"

namespace zcoll::fuzz {
namespace {

using store_wire::Opcode;
using store_wire::Request;

constexpr char kJobKey[] = "fuzz-job-key";
constexpr size_t kStoreLimit = 4096;  // small, so that inputs can fill it

// Every frame in `out` is whole and parses as a reply.
void CheckReplies(const std::string& out) {
  absl::string_view rest = out;
  while (!rest.empty()) {
    const std::optional<uint32_t> length = store_wire::FrameLength(rest);
    FUZZ_CHECK(length.has_value());
    FUZZ_CHECK(rest.size() >= store_wire::kFrameHeaderBytes + *length);
    FUZZ_CHECK(store_wire::ParseReply(rest.substr(store_wire::kFrameHeaderBytes, *length)).ok());
    rest.remove_prefix(store_wire::kFrameHeaderBytes + *length);
  }
}

void CheckRoundTrip(absl::string_view payload, bool authenticated) {
  const absl::StatusOr<Request> request = store_wire::ParseRequest(payload, authenticated);
  if (!request.ok()) return;
  const absl::StatusOr<Request> again =
      store_wire::ParseRequest(store_wire::EncodeRequest(*request), authenticated);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->opcode == request->opcode && again->key == request->key &&
             again->value == request->value && again->number == request->number);
}

}  // namespace

std::vector<std::string> SeedInputs() {
  auto frame = [](const Request& request) {
    return store_wire::Frame(store_wire::EncodeRequest(request));
  };
  const std::string hello = frame({.opcode = Opcode::kHello, .key = kJobKey});
  return {
      hello,
      hello + frame({.opcode = Opcode::kSet, .key = "job.address.3", .value = "tcp://1.2.3.4"}),
      hello + frame({.opcode = Opcode::kSet, .key = "a", .value = std::string(200, 'x')}) +
          frame({.opcode = Opcode::kGet, .key = "a", .number = 1000}),
      hello + frame({.opcode = Opcode::kAdd, .key = "barrier.0", .number = 1}) +
          frame({.opcode = Opcode::kAdd, .key = "barrier.0", .number = 2}),
      hello + frame({.opcode = Opcode::kGet, .key = "missing", .number = 0}),
      frame({.opcode = Opcode::kHello, .key = "a-wrong-key"}),
      store_wire::FramedReply(Opcode::kValue, "a value"),
      store_wire::FramedReply(Opcode::kNumber, "", 42),
  };
}

}  // namespace zcoll::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zcoll;
  using namespace zcoll::fuzz;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  // The client's parser, on the input as one reply payload.
  (void)store_wire::ParseReply(input);
  store_wire::StoreState state(kStoreLimit);
  store_wire::Session session;
  const absl::Time now = absl::FromUnixSeconds(1000000);
  absl::string_view rest = input;
  size_t authenticated = 0;
  while (!session.closing && !session.waiting_key) {
    const std::optional<uint32_t> length = store_wire::FrameLength(rest);
    if (!length.has_value()) break;  // the server waits for the rest of the header
    std::string out;
    if (*length > store_wire::StoreState::FrameLimit(session)) {
      store_wire::StoreState::Refuse(session, out, "a message too long");
      CheckReplies(out);
      break;
    }
    if (rest.size() < store_wire::kFrameHeaderBytes + *length) break;  // and for the payload
    const absl::string_view payload = rest.substr(store_wire::kFrameHeaderBytes, *length);
    rest.remove_prefix(store_wire::kFrameHeaderBytes + *length);
    CheckRoundTrip(payload, session.authenticated);
    if (state.HandleFrame(session, payload, kJobKey, authenticated,
                          /*max_authenticated=*/4, now, out)) {
      ++authenticated;
    }
    FUZZ_CHECK(state.stored_bytes() <= kStoreLimit);
    CheckReplies(out);
    if (session.waiting_key) {
      // A Get: answered at once if set, else at its deadline.
      CheckReplies(state.Answer(session, now + absl::Hours(24 * 365 * 100)));
    }
  }
  return 0;
}
