// Little-endian encoding of the few small records transports exchange (addresses,
// remote keys): a writer that appends, and a reader that refuses to read past the
// end, so that a malformed or truncated record is an error, never a crash.

#ifndef ZCOLL_TRANSPORT_WIRE_H_
#define ZCOLL_TRANSPORT_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"

namespace zcoll {

class WireWriter {
 public:
  void U8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void U32(uint32_t value) { Fixed(value); }
  void U64(uint64_t value) { Fixed(value); }
  void Bytes(absl::string_view bytes) {
    U32(static_cast<uint32_t>(bytes.size()));
    out_.append(bytes.data(), bytes.size());
  }
  std::string Finish() && { return std::move(out_); }

 private:
  template <typename T>
  void Fixed(T value) {
    char bytes[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<char>(value >> (8 * i));
    out_.append(bytes, sizeof(T));
  }

  std::string out_;
};

// Every method returns false once the input is exhausted or malformed, and keeps
// returning false; the caller checks once at the end or after each field.
class WireReader {
 public:
  explicit WireReader(absl::string_view in) : in_(in) {}

  bool U8(uint8_t& value) { return Fixed(value); }
  bool U32(uint32_t& value) { return Fixed(value); }
  bool U64(uint64_t& value) { return Fixed(value); }
  // A length-prefixed string of at most `max_length` bytes.
  bool Bytes(std::string& value, size_t max_length) {
    uint32_t length = 0;
    if (!U32(length) || length > max_length || length > in_.size()) return ok_ = false;
    value.assign(in_.data(), length);
    in_.remove_prefix(length);
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && in_.empty(); }

 private:
  template <typename T>
  bool Fixed(T& value) {
    if (!ok_ || in_.size() < sizeof(T)) return ok_ = false;
    value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(static_cast<uint8_t>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(sizeof(T));
    return true;
  }

  absl::string_view in_;
  bool ok_ = true;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_WIRE_H_
