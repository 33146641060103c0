// A rank program for the runtime's tests: creates a Communicator from the
// environment, prints its topology, and passes a token around a ring over the
// communicator's transport, checking what arrives; then splits it by node and meets
// the node's ranks in a barrier.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"

// libpmix 4.2 keeps a few strings it strdup()s in PMIx_Init (pmix_rte_init,
// pmix_bfrops_base_value_load) past PMIx_Finalize; under --config=asan LeakSanitizer
// would fail the mpirun test on libpmix's leak, not zcoll's.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpmix.so\n"; }

int main() {
  // For failure tests: the rank named by ZCOLL_PROBE_ABSENT_RANK never joins; it
  // waits ZCOLL_PROBE_ABSENT_SECONDS (default 10) and exits 0.
  if (const char* absent = std::getenv("ZCOLL_PROBE_ABSENT_RANK")) {
    const char* rank =
        std::getenv("PMIX_RANK") ? std::getenv("PMIX_RANK") : std::getenv("ZCOLL_RANK");
    if (rank != nullptr && std::string(rank) == absent) {
      const char* seconds = std::getenv("ZCOLL_PROBE_ABSENT_SECONDS");
      sleep(seconds != nullptr ? static_cast<unsigned>(std::atoi(seconds)) : 10);
      return 0;
    }
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
  if (!comm.ok()) {
    std::fprintf(stderr, "Create failed after %.0f s: %s\n",
                 absl::ToDoubleSeconds(absl::Now() - start), comm.status().ToString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();
  std::printf("rank %d of %d, node %d: %s\n", rank, size, comm->topology().node_of(rank),
              comm->topology().ToString().c_str());
  std::fflush(stdout);
  if (size == 1) return 0;
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  zcoll::Transport& transport = comm->transport();
  // Two rounds of sizes that take the eager and the rendezvous paths.
  for (size_t bytes : {size_t{8}, size_t{1} << 20}) {
    std::string out(bytes, static_cast<char>('a' + rank)), in(bytes, '\0');
    zcoll::Completion sent, received;
    absl::Status status = transport.PostRecv(previous, 7, in.data(), in.size(), &received);
    if (status.ok()) status = transport.PostSend(next, 7, out.data(), out.size(), &sent);
    if (status.ok()) status = transport.Wait(received, comm->DefaultDeadline());
    if (status.ok()) status = transport.Wait(sent, comm->DefaultDeadline());
    if (!status.ok()) {
      std::fprintf(stderr, "ring of %zu bytes: %s\n", bytes, status.ToString().c_str());
      return 1;
    }
    if (in != std::string(bytes, static_cast<char>('a' + previous))) {
      std::fprintf(stderr, "ring of %zu bytes: wrong data from rank %d\n", bytes, previous);
      return 1;
    }
  }
  std::printf("rank %d: ring ok\n", rank);
  const int node = comm->topology().node_of(rank);
  absl::StatusOr<std::optional<zcoll::Communicator>> on_node = comm->Split(node, rank);
  if (!on_node.ok() || !on_node->has_value()) {
    std::fprintf(stderr, "Split by node: %s\n", on_node.status().ToString().c_str());
    return 1;
  }
  const int expected = static_cast<int>(comm->topology().ranks_on_node(node).size());
  if ((*on_node)->size() != expected) {
    std::fprintf(stderr, "Split by node: %d ranks, expected %d\n", (*on_node)->size(), expected);
    return 1;
  }
  if (absl::Status status = (*on_node)->Barrier(); !status.ok()) {
    std::fprintf(stderr, "Barrier on node %d: %s\n", node, status.ToString().c_str());
    return 1;
  }
  std::printf("rank %d: node %d has %d ranks\n", rank, node, expected);
  return 0;
}
