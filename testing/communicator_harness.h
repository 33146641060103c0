// Runs a test body on every rank of a small job, each rank holding a Communicator
// made by Communicator::Create, as a service's would be.
//
// With local_provider "loopback" the ranks are threads of the test process (the
// in-process harness: fast, and visible to ThreadSanitizer). With any other provider
// they are processes forked from the test, each creating its communicator over the
// providers named, exactly as under zcoll_run: ranks on the same emulated node use
// `local_provider`, ranks on different nodes `network_provider`. A child's gtest
// failures make it exit non-zero and the parent reports which rank failed; the job
// is killed after its timeout instead of hanging.
//
//   RunCommunicatorJob({.local_provider = "shm", .size = 4, .nodes = 2},
//                      [](zcoll::Communicator& comm, RankControl& control) { ... });

#ifndef ZCOLL_TESTING_COMMUNICATOR_HARNESS_H_
#define ZCOLL_TESTING_COMMUNICATOR_HARNESS_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"

namespace zcoll::testing {

struct CommunicatorJob {
  std::string local_provider = "loopback";
  std::string network_provider = "ofi:tcp";
  int size = 2;
  int nodes = 1;
  // Emulated NUMA domains per node (CommunicatorOptions::emulated_numa_domains); 0: none.
  int numa_domains = 0;
  // Emulated L3 groups per NUMA domain (CommunicatorOptions::emulated_l3_groups); 0: none.
  int l3_groups = 0;
  // The communicators' default timeout (CommunicatorOptions::timeout).
  absl::Duration communicator_timeout = absl::Seconds(30);
  // The whole job must end within this.
  absl::Duration job_timeout = absl::Seconds(120);

  bool in_process() const { return local_provider == "loopback"; }
  // "loopback_4x2" (4 ranks, 2 nodes), "shm_ofi_tcp_4x2", "loopback_6x1_numa2": usable in
  // test names.
  std::string Name() const;
  friend void PrintTo(const CommunicatorJob& job, std::ostream* out) { *out << job.Name(); }
};

// What a rank can do besides using its communicator.
class RankControl {
 public:
  virtual ~RankControl() = default;
  // Whether ranks are processes (only they can die).
  virtual bool is_process() const = 0;
  // Ends this process at once, without telling anyone (as a crash would). Processes
  // only; the harness accepts the rank's exit.
  [[noreturn]] virtual void Die() = 0;
};

// Creates a communicator on every rank of `job` and runs `body` with it. OK when
// every rank created its communicator and finished without a test failure;
// otherwise a status naming the ranks that failed and how.
absl::Status RunCommunicatorJob(const CommunicatorJob& job,
                                const std::function<void(Communicator&, RankControl&)>& body);

}  // namespace zcoll::testing

#endif  // ZCOLL_TESTING_COMMUNICATOR_HARNESS_H_
