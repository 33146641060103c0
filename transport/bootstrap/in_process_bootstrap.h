// Bootstraps for a job whose ranks are threads of one process: the in-process
// communicator harness (testing/communicator_harness.h) and services that run
// several ranks in one process over the loopback provider.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_IN_PROCESS_BOOTSTRAP_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_IN_PROCESS_BOOTSTRAP_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/bootstrap/bootstrap.h"

namespace zcoll {

// One Bootstrap per rank (element r has rank r), joined in memory. Each is used by
// its rank's thread; they may be destroyed in any order. InvalidArgument unless
// 1 <= size <= 65536.
absl::StatusOr<std::vector<std::unique_ptr<Bootstrap>>> CreateInProcessBootstraps(int size);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_IN_PROCESS_BOOTSTRAP_H_
