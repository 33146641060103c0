// Communicator: the handle a program holds for a group of ranks. The public API of
// zcoll starts here.
//
//   absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
//
// Create finds the job from the environment the launcher left (zcoll_run, PMIx from
// mpirun/srun, or ZCOLL_RANK / ZCOLL_SIZE / ZCOLL_STORE / ZCOLL_JOB_KEY set by a
// service's orchestration), learns which ranks share a node (the host name, or the
// emulated node with ZCOLL_EMULATE_NODES), and connects a transport to every peer:
// shared memory within a node, the network provider between nodes
// (transport_factory.h). Create is collective: every rank of the job calls it, and
// it fails on every rank (never hangs) when one does not arrive within the timeout.
//
// Split and Dup make communicators over the same connection with their own tag
// space (MPI_Comm_split / MPI_Comm_dup), so operations of different communicators
// never match each other and may run at the same time, from different threads too
// (one thread per communicator). communicator_transport.h says how.
//
// Failure is sticky and the job's: the first error of a communicator operation, or
// Abort(), is sent to every rank, and from then on every operation of every
// communicator of the job returns Aborted with that first cause. A rank that dies
// fails the job the same way. After a failure, destroy the communicators; pending
// operations keep their buffers until the last communicator of the job is gone.
//
// A Communicator is movable, not copyable; the job's transport and shared memory are
// torn down when the last communicator made from it is destroyed.

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/topology.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace zcoll {

// Split's color for "no communicator" (MPI_UNDEFINED).
inline constexpr int kUndefinedColor = -1;

struct CommunicatorOptions {
  // The default time limit of every operation on the communicator, Create included.
  // Zero: ZCOLL_TIMEOUT seconds.
  absl::Duration timeout = absl::ZeroDuration();
  // How the ranks meet. Null: from the environment (BootstrapFromEnvironment).
  std::unique_ptr<Bootstrap> bootstrap;
  // This rank's transport, made by the caller and not yet connected (for example a
  // loopback transport when the ranks are threads). Null: the job transport of the
  // configured providers (CreateJobTransport).
  std::unique_ptr<Transport> transport;
  // Ranks are placed on this many emulated nodes, in blocks. Zero:
  // ZCOLL_EMULATE_NODES if set, else one node per host name.
  int emulated_nodes = 0;
};

class Communicator {
 public:
  static absl::StatusOr<Communicator> Create(CommunicatorOptions options);

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  ~Communicator();

  int rank() const;
  int size() const;
  const Topology& topology() const;
  absl::Duration timeout() const;
  // The deadline of an operation started now under the default timeout.
  absl::Time DefaultDeadline() const { return absl::Now() + timeout(); }

  // MPI_Comm_split, collective over this communicator: ranks passing the same
  // `color` (>= 0) form a new communicator, ordered by `key` and then by their rank
  // here. kUndefinedColor takes no part and gets nullopt. A bad color on any rank
  // fails the call on every rank with InvalidArgument naming it.
  absl::StatusOr<std::optional<Communicator>> Split(int color, int key,
                                                    std::optional<absl::Time> deadline = {});
  // MPI_Comm_dup: the same ranks and topology, a new tag space.
  absl::StatusOr<Communicator> Dup(std::optional<absl::Time> deadline = {});
  // Returns once every rank of the communicator has called Barrier.
  absl::Status Barrier(std::optional<absl::Time> deadline = {});

  // OK, or Aborted with the job's first failure.
  absl::Status status() const;
  // Fails the job with `reason` (MPI_Abort): every rank's pending and later
  // operations on any communicator of the job return Aborted naming this rank and
  // the reason. Waits at most a second for the notices to leave, so the caller may
  // exit right after. Returns the status the job now holds.
  absl::Status Abort(absl::string_view reason);

  // The transport of this communicator: its ranks, its tag space (tags up to
  // kMaxCommunicatorTag), failing with the job. For the collectives' executor and
  // for tests.
  Transport& transport();

 private:
  struct State;
  explicit Communicator(std::unique_ptr<State> state);
  // Records `status` (an error of an operation of this communicator) as the job's
  // failure and returns what the caller should see.
  absl::Status Failed(const absl::Status& status);
  absl::Time DeadlineOrDefault(std::optional<absl::Time> deadline) const {
    return deadline.has_value() ? *deadline : DefaultDeadline();
  }
  std::unique_ptr<State> state_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_H_
