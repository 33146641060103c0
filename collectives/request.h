// Request: a nonblocking collective in flight (MPI_Request).
//
//   ASSIGN_OR_RETURN(zcoll::Request request, comm.IAllreduce(send, recv, n, type, op));
//   ... compute ...
//   RETURN_IF_ERROR(request.Wait());
//
// A collective starts in the call that posts it (its first sends and receives are
// posted there); later progress happens inside Wait and Test (there is no progress
// thread), so a program that computes between the two should call Test now and then.
// A Request must not outlive its Communicator, and its buffers must stay valid until
// it is done (Wait or Test returned, with any status; after that zcoll never touches
// them). Destroying a pending Request waits for it (up to its deadline), as the
// collective cannot be cancelled. An error of the collective, including a missed
// deadline, is the job's failure (communicator.h).

#ifndef ZCOLL_COLLECTIVES_REQUEST_H_
#define ZCOLL_COLLECTIVES_REQUEST_H_

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zcoll {

class CallExecution;
class CommunicatorTransport;
class ScratchPool;

class Request {
 public:
  // A request that is already done, with OK.
  Request() = default;
  Request(Request&& other) noexcept = default;
  Request& operator=(Request&& other) noexcept;
  ~Request() {
    if (pending_ != nullptr) WaitOnDestruction();
  }

  // Waits until the collective has completed on this rank, at most until `deadline`
  // (default: its start plus the communicator's timeout). Returns its status; later
  // calls return the same.
  absl::Status Wait(std::optional<absl::Time> deadline = {});
  // Advances the collective without blocking: true once it has completed (then
  // Wait returns at once), an error if it failed.
  absl::StatusOr<bool> Test();
  bool done() const { return pending_ == nullptr; }

 private:
  friend class Communicator;
  friend class NodeLevelsExecution;  // waits for its levels' calls as for its own
  struct Pending {
    std::shared_ptr<CallExecution> execution;
    CommunicatorTransport* transport;
    ScratchPool* scratch_pool;
    // Where this request goes to be reused once it succeeded.
    std::vector<std::unique_ptr<Pending>>* idle_requests;
    int* in_flight;                   // the communicator's count of pending requests
    const char* name = "";            // the collective, for messages ("Allreduce")
    absl::Duration timeout;           // that `deadline` is the start plus
    const char* timeout_source = "";  // where `timeout` was set, for messages
    absl::Time deadline;
    // Runs once the schedule has completed (AVG's division).
    std::function<absl::Status()> finish;
  };
  explicit Request(std::unique_ptr<Pending> pending) : pending_(std::move(pending)) {}
  // A pending request's destructor: waits, and logs a failure nobody will see.
  void WaitOnDestruction();
  // Ends the request with the execution's outcome (or `status` if it is an error).
  absl::Status Finish(absl::Status status);
  // What a missed deadline says: the collective, its time limit, whom it still waited
  // for, and which ranks this host can see are not running. `own_deadline`: the
  // caller gave Wait a deadline of its own.
  absl::Status Overdue(bool own_deadline) const;

  std::unique_ptr<Pending> pending_;
  absl::Status status_;
};

// What a missed deadline says (Request::Overdue; a blocking node call, which has no
// Request, says the same): the collective `name`, its time limit and which limit it
// was (the call's own deadline, or the communicator's `timeout` from
// `timeout_source`), whom `execution` still waits for, and which ranks this host can
// see are not running.
absl::Status OverdueError(CommunicatorTransport& transport, const CallExecution& execution,
                          const char* name, absl::Duration timeout, const char* timeout_source,
                          bool own_deadline);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_REQUEST_H_
