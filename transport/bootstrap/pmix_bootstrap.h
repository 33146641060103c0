// Bootstrap through PMIx, for processes started by a PMIx launcher: Open MPI's
// mpirun, `srun --mpi=pmix`, prterun. Rank and size come from PMIx; AllGather is
// PMIx_Put + PMIx_Commit + a data-collecting PMIx_Fence with a timeout + PMIx_Get.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_PMIX_BOOTSTRAP_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_PMIX_BOOTSTRAP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "transport/bootstrap/bootstrap.h"

namespace zcoll {

// True when this process was started by a PMIx launcher (PMIX_RANK and
// PMIX_NAMESPACE are set).
bool StartedByPmix();

// Initialises PMIx (finalised when the Bootstrap is destroyed).
absl::StatusOr<std::unique_ptr<Bootstrap>> CreatePmixBootstrap();

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_PMIX_BOOTSTRAP_H_
