#include "transport/bootstrap/store.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/tcp_store.h"

namespace zcoll {

absl::Status CheckStoreKey(absl::string_view key) {
  if (key.empty() || key.size() > kMaxStoreKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("store key '", key, "' has ", key.size(),
                                                   " characters; keys have 1-", kMaxStoreKeyBytes));
  }
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("store key '", key, "' has a character outside [A-Za-z0-9._:-]"));
    }
  }
  if (key[0] == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat("store key '", key, "' starts with '.', which stores keep for themselves"));
  }
  return absl::OkStatus();
}

absl::Status CheckStoreValue(absl::string_view key, absl::string_view value) {
  if (absl::Status status = CheckStoreKey(key); !status.ok()) return status;
  if (value.size() > kMaxStoreValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the value for store key '", key, "' has ",
                                                   value.size(), " bytes; at most ",
                                                   kMaxStoreValueBytes, " are allowed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectStore(absl::string_view url,
                                                            absl::string_view job_key,
                                                            absl::Time deadline) {
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "file://")) return OpenFileStore(rest);
  if (absl::ConsumePrefix(&rest, "tcp://")) {
    // HOST:PORT, HOST may be [IPv6].
    const size_t colon = rest.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(rest.substr(colon + 1), &port)) {
      return absl::InvalidArgumentError(
          absl::StrCat("store URL '", url, "' is not tcp://HOST:PORT"));
    }
    absl::string_view host = rest.substr(0, colon);
    if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
    return ConnectTcpStore(host, port, job_key, deadline);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "store URL '", url, "' is neither tcp://HOST:PORT nor file:///DIRECTORY (ZCOLL_STORE)"));
}

}  // namespace zcoll
