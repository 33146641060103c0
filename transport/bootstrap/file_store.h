// A KeyValueStore in a directory: each key is a file, written to a temporary name
// and renamed into place so that a reader never sees half a value; Add holds an
// flock on a lock file beside the key. Works on one host's /tmp or on a shared
// filesystem with coherent renames and locks (NFSv4, Lustre, GPFS).
//
// Waiting is polling (1 ms growing to 20 ms): the store is for start-up, not for
// traffic.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_FILE_STORE_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_FILE_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/bootstrap/store.h"

namespace zcoll {

// Creates `directory` (mode 0700) if it does not exist.
absl::StatusOr<std::unique_ptr<KeyValueStore>> OpenFileStore(absl::string_view directory);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_FILE_STORE_H_
