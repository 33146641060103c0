#include "transport/bootstrap/store_wire.h"

#include "absl/strings/str_cat.h"
#include "transport/wire.h"

namespace zcoll::store_wire {

std::string Frame(absl::string_view payload) {
  WireWriter writer;
  writer.U32(static_cast<uint32_t>(payload.size()));
  std::string frame = std::move(writer).Finish();
  frame.append(payload.data(), payload.size());
  return frame;
}

std::optional<uint32_t> FrameLength(absl::string_view in) {
  if (in.size() < kFrameHeaderBytes) return std::nullopt;
  WireReader reader(in.substr(0, kFrameHeaderBytes));
  uint32_t length = 0;
  reader.U32(length);
  return length;
}

std::string EncodeRequest(const Request& request) {
  WireWriter writer;
  writer.U8(static_cast<uint8_t>(request.opcode));
  writer.Bytes(request.key);
  switch (request.opcode) {
    case Opcode::kSet:
      writer.Bytes(request.value);
      break;
    case Opcode::kGet:
    case Opcode::kAdd:
      writer.U64(request.number);
      break;
    default:
      break;
  }
  return std::move(writer).Finish();
}

absl::StatusOr<Request> ParseRequest(absl::string_view payload, bool authenticated) {
  WireReader reader(payload);
  Request request;
  uint8_t opcode = 0;
  if (!reader.U8(opcode)) return absl::InvalidArgumentError("an empty request");
  request.opcode = static_cast<Opcode>(opcode);
  if (!authenticated) {
    if (request.opcode != Opcode::kHello || !reader.Bytes(request.key, kMaxFrameBytesBeforeHello) ||
        !reader.at_end()) {
      return absl::InvalidArgumentError("a connection without this job's key");
    }
    return request;
  }
  if (!reader.Bytes(request.key, kMaxStoreKeyBytes) || !CheckStoreKey(request.key).ok()) {
    return absl::InvalidArgumentError("a malformed request");
  }
  switch (request.opcode) {
    case Opcode::kSet:
      if (!reader.Bytes(request.value, kMaxStoreValueBytes) || !reader.at_end()) {
        return absl::InvalidArgumentError("a malformed Set");
      }
      return request;
    case Opcode::kGet:
      if (!reader.U64(request.number) || !reader.at_end()) {
        return absl::InvalidArgumentError("a malformed Get");
      }
      return request;
    case Opcode::kAdd:
      if (!reader.U64(request.number) || !reader.at_end()) {
        return absl::InvalidArgumentError("a malformed Add");
      }
      return request;
    default:
      return absl::InvalidArgumentError("an unknown request");
  }
}

std::string EncodeReply(const Reply& reply) {
  WireWriter writer;
  writer.U8(static_cast<uint8_t>(reply.opcode));
  switch (reply.opcode) {
    case Opcode::kValue:
    case Opcode::kError:
      writer.Bytes(reply.bytes);
      break;
    case Opcode::kNumber:
      writer.U64(reply.number);
      break;
    default:
      break;
  }
  return std::move(writer).Finish();
}

std::string FramedReply(Opcode opcode, absl::string_view bytes, uint64_t number) {
  const bool has_bytes = opcode == Opcode::kValue || opcode == Opcode::kError;
  const size_t payload = 1 + (has_bytes ? 4 + bytes.size() : opcode == Opcode::kNumber ? 8 : 0);
  WireWriter header;
  header.U32(static_cast<uint32_t>(payload));
  header.U8(static_cast<uint8_t>(opcode));
  if (has_bytes) header.U32(static_cast<uint32_t>(bytes.size()));
  if (opcode == Opcode::kNumber) header.U64(number);
  const std::string head = std::move(header).Finish();
  std::string frame;
  frame.reserve(head.size() + (has_bytes ? bytes.size() : 0));
  frame.append(head);
  if (has_bytes) frame.append(bytes.data(), bytes.size());
  return frame;
}

absl::StatusOr<Reply> ParseReply(absl::string_view payload) {
  WireReader reader(payload);
  Reply reply;
  uint8_t opcode = 0;
  bool ok = reader.U8(opcode);
  reply.opcode = static_cast<Opcode>(opcode);
  switch (reply.opcode) {
    case Opcode::kOk:
    case Opcode::kTimeout:
      break;
    case Opcode::kValue:
    case Opcode::kError:
      ok = ok && reader.Bytes(reply.bytes, kMaxFrameBytes);
      break;
    case Opcode::kNumber:
      ok = ok && reader.U64(reply.number);
      break;
    default:
      ok = false;
  }
  if (!ok || !reader.at_end()) {
    return absl::DataLossError(absl::StrCat("a malformed reply (", payload.size(), " bytes)"));
  }
  return reply;
}

}  // namespace zcoll::store_wire
