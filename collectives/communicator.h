// Communicator: the handle a program holds for a job's group of ranks. The public
// API of zcoll starts here.
//
//   absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
//
// Create finds the job from the environment the launcher left (zcoll_run, or
// ZCOLL_RANK / ZCOLL_SIZE / ZCOLL_STORE / ZCOLL_JOB_KEY set by hand or by a service's
// orchestration), learns which ranks share a node (the host name, or the emulated
// node with ZCOLL_EMULATE_NODES), and connects a transport to every peer: shared
// memory within a node, the network provider between nodes (transport_factory.h).
// Create is collective: every rank of the job calls it, and it fails on every rank
// (never hangs) when one does not arrive within the timeout.
//
// A Communicator is movable, not copyable; destroying it disconnects and frees its
// transport and shared memory. Collectives arrive with the collectives issue; Split
// and Dup, PMIx and Abort follow in later changes.

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/topology.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace zcoll {

struct CommunicatorOptions {
  // The default time limit of every operation on the communicator, Create included.
  // Zero: ZCOLL_TIMEOUT seconds.
  absl::Duration timeout = absl::ZeroDuration();
  // How the ranks meet. Null: from the environment (BootstrapFromEnvironment).
  std::unique_ptr<Bootstrap> bootstrap;
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

  // The transport connected to every other rank (for the collectives' executor and
  // for tests; its tag space belongs to the communicator).
  Transport& transport();

 private:
  struct State;
  explicit Communicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_H_
