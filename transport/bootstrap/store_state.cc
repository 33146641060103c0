#include "transport/bootstrap/store_state.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zcoll::store_wire {
namespace {

// Compares without an early exit, so that timing does not reveal how much of a
// guessed key was right.
bool SameKey(absl::string_view a, absl::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return difference == 0;
}

}  // namespace

void StoreState::Handle(Session& session, const Request& request, absl::Time now,
                        std::string& out) {
  switch (request.opcode) {
    case Opcode::kSet: {
      auto existing = values_.find(request.key);
      const size_t old_bytes =
          existing == values_.end() ? 0 : EntryBytes(request.key, existing->second);
      const size_t new_bytes = EntryBytes(request.key, request.value);
      if (stored_bytes_ - old_bytes + new_bytes > max_stored_bytes_) {
        return Refuse(
            session, out,
            absl::StrCat("a Set of ", request.value.size(), " bytes: the store is full (",
                         stored_bytes_, " of ", max_stored_bytes_, " bytes used, counting ",
                         kEntryOverheadBytes, " bytes per key)"));
      }
      stored_bytes_ = stored_bytes_ - old_bytes + new_bytes;
      values_[request.key] = request.value;
      out += FramedReply(Opcode::kOk);
      return;
    }
    case Opcode::kGet:
      session.waiting_key = request.key;
      session.waiting_until =
          now + absl::Milliseconds(std::min<uint64_t>(request.number, uint64_t{1} << 40));
      return;
    case Opcode::kAdd: {
      auto existing = values_.find(request.key);
      int64_t current = 0;
      if (existing != values_.end() && !existing->second.empty() &&
          !absl::SimpleAtoi(existing->second, &current)) {
        out += FramedReply(Opcode::kError,
                           absl::StrCat("the value of key '", request.key, "' is not an integer"));
        return;
      }
      const int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(current) + request.number);
      const std::string value = absl::StrCat(sum);
      const size_t old_bytes =
          existing == values_.end() ? 0 : EntryBytes(request.key, existing->second);
      const size_t new_bytes = EntryBytes(request.key, value);
      if (stored_bytes_ - old_bytes + new_bytes > max_stored_bytes_) {
        return Refuse(session, out,
                      absl::StrCat("an Add: the store is full (", stored_bytes_, " of ",
                                   max_stored_bytes_, " bytes used)"));
      }
      stored_bytes_ = stored_bytes_ - old_bytes + new_bytes;
      values_[request.key] = value;
      out += FramedReply(Opcode::kNumber, "", static_cast<uint64_t>(sum));
      return;
    }
    default:
      return Refuse(session, out, "an unknown request");
  }
}

bool StoreState::HandleFrame(Session& session, absl::string_view payload, absl::string_view job_key,
                             size_t authenticated, size_t max_authenticated, absl::Time now,
                             std::string& out) {
  absl::StatusOr<Request> request = ParseRequest(payload, session.authenticated);
  if (!request.ok()) {
    Refuse(session, out, request.status().message());
    return false;
  }
  if (session.authenticated) {
    Handle(session, *request, now, out);
    return false;
  }
  if (!SameKey(request->key, job_key)) {
    Refuse(session, out, "a connection without this job's key");
    return false;
  }
  if (authenticated >= max_authenticated) {
    Refuse(session, out,
           absl::StrCat("a connection over its limit of ", max_authenticated, " connections"));
    return false;
  }
  session.authenticated = true;
  out += FramedReply(Opcode::kOk);
  return true;
}

std::string StoreState::Answer(const Session& session, absl::Time now) const {
  if (!session.waiting_key) return "";
  auto found = values_.find(*session.waiting_key);
  if (found != values_.end()) return FramedReply(Opcode::kValue, found->second);
  if (now >= session.waiting_until) return FramedReply(Opcode::kTimeout);
  return "";
}

void StoreState::Refuse(Session& session, std::string& out, absl::string_view why) {
  out += FramedReply(Opcode::kError, absl::StrCat("the store refused ", why));
  session.closing = true;
}

}  // namespace zcoll::store_wire
