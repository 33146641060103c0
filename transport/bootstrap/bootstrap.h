// How the ranks of a job learn their rank, the job's size, and each other's
// transport addresses before any transport is connected.
//
// A Bootstrap is collective: every rank calls AllGather and Barrier in the same
// order. Each call takes a deadline, and a rank that never arrives makes the others
// fail with DeadlineExceeded naming it, never hang.
//
// StoreBootstrap works over any KeyValueStore (store.h). BootstrapFromEnvironment
// reads what a launcher set:
//   ZCOLL_RANK, ZCOLL_SIZE   this process's rank and the number of ranks
//   ZCOLL_STORE              tcp://HOST:PORT or file:///DIR
//   ZCOLL_JOB_KEY            the TCP store's key (zcoll_run generates one)
// or, when PMIX_RANK and PMIX_NAMESPACE say a PMIx launcher (mpirun, srun
// --mpi=pmix, prterun) started the process, uses PMIx (pmix_bootstrap.h).
// ZCOLL_BOOTSTRAP=pmix|store overrides the choice.

#ifndef ZCOLL_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
#define ZCOLL_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/bootstrap/store.h"

namespace zcoll {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank contributes `value` (at most kMaxStoreValueBytes); returns all,
  // indexed by rank.
  virtual absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view value,
                                                             absl::Time deadline) = 0;
  virtual absl::Status Barrier(absl::Time deadline) = 0;
  // For messages: "tcp://127.0.0.1:4000", "file:///tmp/job".
  virtual std::string description() const = 0;
  // This process's host as the launcher names it (PMIx's PMIX_HOSTNAME), which then
  // decides which ranks share a node; nullopt: the host name the system reports.
  virtual std::optional<std::string> host_name() const { return std::nullopt; }
  // How rank `rank`'s process ended, as the launcher saw it ("was killed by signal 9
  // (SIGKILL)", "exited with code 3"), waiting until `deadline` for the launcher to
  // say; nullopt when it has not said by then or does not say (only zcoll_run does,
  // through its store). Safe to call from any thread.
  virtual std::optional<std::string> HowRankEnded(int rank, absl::Time deadline) {
    return std::nullopt;
  }
};

// The store keys through which zcoll_run tells how the ranks of a job it started
// ended (under the scope "job" of BootstrapFromEnvironment's bootstrap): the first is
// set when the job starts, the second when rank r's process has ended.
inline constexpr absl::string_view kLauncherRecordsEndsKey = "job.ends-recorded";
std::string RankEndKey(int rank);

// A bootstrap over `store`, whose keys it prefixes with `scope` (so that several
// jobs or communicators can share one store). Refuses a rank outside [0, size) and
// a second process claiming a rank that another already holds.
absl::StatusOr<std::unique_ptr<Bootstrap>> CreateStoreBootstrap(
    std::unique_ptr<KeyValueStore> store, int rank, int size, absl::string_view scope,
    absl::Time deadline);

// PMIx under a PMIx launcher, else ZCOLL_RANK, ZCOLL_SIZE, ZCOLL_STORE and
// ZCOLL_JOB_KEY; an error says which variable is missing or malformed.
absl::StatusOr<std::unique_ptr<Bootstrap>> BootstrapFromEnvironment(absl::Time deadline);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
