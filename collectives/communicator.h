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
// fails the job the same way. The job's transport then stops moving data, so a call
// that returns, with any status, never has its buffers touched again: the caller may
// free them at once, communicators alive or not.
//
// A Communicator is movable, not copyable; the job's transport and shared memory are
// torn down when the last communicator made from it is destroyed. A moved-from
// Communicator refuses every operation with FailedPrecondition (status() included); its
// rank() is -1, its size() 0, its topology() empty and its transport() refuses
// everything.

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/algorithms.h"
#include "collectives/request.h"
#include "core/datatype.h"
#include "core/group.h"
#include "core/reduce_op.h"
#include "core/topology.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace zcoll {

// Split's color for "no communicator" (MPI_UNDEFINED).
inline constexpr int kUndefinedColor = -1;

// MPI_IN_PLACE: passed as a send (or, for scatter, receive) buffer where the standard
// allows it, it says "the data is already where the result goes".
inline void* const kInPlace = reinterpret_cast<void*>(uintptr_t{1});

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
  // Each node's ranks are split into this many emulated NUMA domains (and packages), in
  // blocks. Zero: ZCOLL_EMULATE_NUMA if set, else hwloc's view of each rank's binding.
  int emulated_numa_domains = 0;
  // Each NUMA domain's ranks (each node's, where domains are unknown) are split into
  // this many emulated L3 groups (cores sharing a last-level cache), in blocks. Zero:
  // ZCOLL_EMULATE_L3 if set, else hwloc's view of each rank's binding.
  int emulated_l3_groups = 0;
};

namespace internal_collectives {
// (Inline: the raw v-collectives' argument checks run them on every call too.)
// The sum of `counts`, or SIZE_MAX where it would overflow (more than any span holds).
inline size_t SaturatingSum(absl::Span<const size_t> counts) {
  size_t sum = 0;
  for (size_t count : counts) {
    if (count > SIZE_MAX - sum) return SIZE_MAX;
    sum += count;
  }
  return sum;
}
// The elements a v-collective's blocks span: the largest displs[r] + counts[r] of a
// non-empty block, over the entries both have, or SIZE_MAX where it would overflow.
inline size_t SaturatingExtent(absl::Span<const size_t> counts, absl::Span<const size_t> displs) {
  const size_t entries = counts.size() < displs.size() ? counts.size() : displs.size();
  size_t extent = 0;
  for (size_t r = 0; r < entries; ++r) {
    if (counts[r] == 0) continue;
    if (counts[r] > SIZE_MAX - displs[r]) return SIZE_MAX;
    if (displs[r] + counts[r] > extent) extent = displs[r] + counts[r];
  }
  return extent;
}
}  // namespace internal_collectives

class ExecutionPlan;
class NodeExecution;

namespace internal_collectives {
// A persistent request's kept call (collectives.cc).
struct PersistentCall;
}  // namespace internal_collectives

// A persistent collective (MPI-4's persistent request), made by a Communicator's
// *Init call. Inactive until Start(); Start() runs the collective once with the
// arguments fixed at init; Wait() and Test() complete it as a Request's do, and it is
// inactive again, ready for the next Start(). Its plan was made at init and is kept
// here, so a start costs no selection, no plan lookup and, once the communicator's
// pools are warm, no allocation.
//
// Like a Request it must not outlive its Communicator (which may move meanwhile), and
// its buffers stay the caller's to keep valid while it lives. Destroying an active one
// waits for it, as a Request does. Once the job has failed, Start returns the job's
// failure (Aborted with the first cause).
class PersistentRequest {
 public:
  // An empty persistent request: Start() refuses it.
  PersistentRequest();
  PersistentRequest(PersistentRequest&&) noexcept;
  PersistentRequest& operator=(PersistentRequest&&) noexcept;
  ~PersistentRequest();

  // MPI_Start: starts the collective. FailedPrecondition when it is active (started and
  // not yet completed by Wait or Test) or empty.
  absl::Status Start();
  // MPI_Wait: completes the active instance (deadline as Request::Wait); OK at once
  // when inactive.
  absl::Status Wait(std::optional<absl::Time> deadline = {});
  // MPI_Test: true once the active instance has completed (or none is active).
  absl::StatusOr<bool> Test();
  bool active() const { return !instance_.done(); }

 private:
  friend class Communicator;
  explicit PersistentRequest(std::unique_ptr<internal_collectives::PersistentCall> call);

  // The call and its plan (null: empty).
  std::unique_ptr<internal_collectives::PersistentCall> call_;
  Request instance_;
};

class Communicator {
 public:
  static absl::StatusOr<Communicator> Create(CommunicatorOptions options);

  // MPI_Alloc_mem's role: `bytes` (> 0) of page-aligned, zeroed memory that the other
  // processes on this node map into their own address space, so that node collectives
  // on it move data with one memcpy per byte and reduce straight from the peers'
  // memory (README, "Node collectives"). Any buffer works in any call; these are the
  // fastest. Free it with FreeBuffer (not free()). Not tied to a communicator.
  static absl::StatusOr<void*> AllocateBuffer(size_t bytes);
  // A typed span of `count` elements of T (trivially copyable), from AllocateBuffer.
  template <typename T>
  static absl::StatusOr<absl::Span<T>> AllocateBuffer(size_t count) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (count > SIZE_MAX / sizeof(T)) {
      return absl::InvalidArgumentError("AllocateBuffer: count times the element size overflows");
    }
    absl::StatusOr<void*> data = AllocateBuffer(count * sizeof(T));
    if (!data.ok()) return data.status();
    return absl::Span<T>(static_cast<T*>(*data), count);
  }
  // Frees a buffer of AllocateBuffer; InvalidArgument for any other pointer. A peer
  // that mapped it keeps its pages until it drops its mapping (README).
  static absl::Status FreeBuffer(void* data);

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  ~Communicator();

  int rank() const;
  int size() const;
  const Topology& topology() const;
  // The node engine (README, "Node collectives"): the bytes of this communicator's
  // shared segment on this node, 0 when its collectives run by messages (it spans
  // nodes, has one rank, or ZCOLL_NODE_ENGINE=0); and whether its ranks read each
  // other's memory, so that node calls of any size run there; and whether its
  // publications go without a fence (asymmetric fences: NodeSegment::Announce).
  size_t node_segment_bytes() const;
  bool node_single_copy() const;
  bool node_asymmetric_fences() const;
  absl::Duration timeout() const;
  // The deadline of an operation started now under the default timeout (read off
  // the kernel's coarse clock, which costs a few nanoseconds where absl::Now costs
  // tens; it may lag by a scheduler tick, a few milliseconds of a timeout of seconds).
  absl::Time DefaultDeadline() const;

  // MPI_Comm_split, collective over this communicator: ranks passing the same
  // `color` (>= 0) form a new communicator, ordered by `key` and then by their rank
  // here. kUndefinedColor takes no part and gets nullopt. A bad color on any rank
  // fails the call on every rank with InvalidArgument naming it.
  absl::StatusOr<std::optional<Communicator>> Split(int color, int key,
                                                    std::optional<absl::Time> deadline = {});
  // MPI_Comm_dup: the same ranks and topology, a new tag space.
  absl::StatusOr<Communicator> Dup(std::optional<absl::Time> deadline = {});
  // MPI_Comm_group: this communicator's processes in rank order, held by this one.
  Group group() const;
  // MPI_Comm_create, collective over this communicator: each rank passes a group of
  // some of its processes (Group::Empty() too). A rank in the group it passed gets a
  // communicator of that group (ranks in the group's order), any other rank nullopt.
  // Several disjoint groups may be made at once, each process of a group passing that
  // group (same processes, same order); ranks outside every group pass any group they
  // are not in. A group holding a process outside this communicator, or groups that
  // break those rules, fail the call on every rank with InvalidArgument naming the
  // rank that passed it.
  absl::StatusOr<std::optional<Communicator>> Create(const Group& group,
                                                     std::optional<absl::Time> deadline = {});
  // MPI_Comm_create_group: collective over `group`'s processes only (the others of
  // this communicator do not call it), which all pass the same group and the same
  // `tag` (>= 0); a communicator of the group. Calls on one communicator are matched
  // in program order, as all its operations are; the tag is checked to agree. An
  // empty group gives nullopt. A caller outside the group or a group holding a
  // process outside this communicator: InvalidArgument, and the job fails (the
  // group's other processes return Aborted rather than wait).
  absl::StatusOr<std::optional<Communicator>> CreateGroup(const Group& group, int tag,
                                                          std::optional<absl::Time> deadline = {});

  // --- Collectives (MPI semantics, MPI-4.1 chapter 6) -------------------------------
  //
  // Every rank of the communicator calls the same collectives in the same order with
  // matching arguments. Counts are elements of `type`. A blocking call is its I-form
  // followed by Request::Wait(deadline); the I-forms return at once.
  //
  // Arguments are checked before any communication: a bad root, a null buffer with a
  // count, an op the standard does not define for the type, send and receive buffers
  // that overlap without kInPlace, kInPlace where the standard forbids it, counts
  // that do not fit. The caller gets InvalidArgument naming the argument and its
  // rank; because its peers have entered the collective, the job fails with that
  // cause too, so they return Aborted at once instead of waiting for the deadline. A
  // peer whose part needed nothing of the refusing rank (a Reduce's or Gather(v)'s
  // leaf, the root refusing) may have finished it already, as MPI lets it: that call
  // returns OK, and the peer's next operation Aborted with the cause.
  // Arguments that disagree across ranks (count, type, op, root) are found before
  // communication when ZCOLL_CHECK=1 (an exchange of signatures, reported on every
  // rank); without it a disagreement that changes message sizes ends the collective
  // with an error, never a write out of bounds.
  //
  // Non-commutative user ops are applied in canonical rank order, a0 op a1 op ... op
  // a(n-1), by every algorithm. Allreduce and ReduceScatter(Block) give bit-identical
  // results on every rank. AVG sums and divides once at the end.

  // MPI_Reduce. `send` may be kInPlace at the root only (its vector is then in
  // `recv`); `recv` matters at the root only.
  absl::StatusOr<Request> IReduce(const void* send, void* recv, size_t count, DataType type,
                                  const ReduceOp& op, int root);
  absl::Status Reduce(const void* send, void* recv, size_t count, DataType type, const ReduceOp& op,
                      int root, std::optional<absl::Time> deadline = {});
  // MPI_Allreduce. `send` may be kInPlace (the vector is then in `recv`).
  absl::StatusOr<Request> IAllreduce(const void* send, void* recv, size_t count, DataType type,
                                     const ReduceOp& op);
  absl::Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                         const ReduceOp& op, std::optional<absl::Time> deadline = {});
  // MPI_Reduce_scatter_block: `send` holds size() blocks of `recv_count`; rank r gets
  // the reduction of block r. With `send` kInPlace the blocks are in `recv` and the
  // result is left at its start.
  absl::StatusOr<Request> IReduceScatterBlock(const void* send, void* recv, size_t recv_count,
                                              DataType type, const ReduceOp& op);
  absl::Status ReduceScatterBlock(const void* send, void* recv, size_t recv_count, DataType type,
                                  const ReduceOp& op, std::optional<absl::Time> deadline = {});
  // MPI_Reduce_scatter: rank r gets recv_counts[r] elements (zeros allowed), the
  // blocks lying one after another in `send` (kInPlace: in `recv`, result at its
  // start). `recv_counts` has size() entries, equal on every rank.
  absl::StatusOr<Request> IReduceScatter(const void* send, void* recv,
                                         absl::Span<const size_t> recv_counts, DataType type,
                                         const ReduceOp& op);
  absl::Status ReduceScatter(const void* send, void* recv, absl::Span<const size_t> recv_counts,
                             DataType type, const ReduceOp& op,
                             std::optional<absl::Time> deadline = {});
  // MPI_Scatter: the root's `send` holds size() blocks of `count`; rank r receives
  // block r. `recv` may be kInPlace at the root only (its block is not moved); `send`
  // matters at the root only.
  absl::StatusOr<Request> IScatter(const void* send, void* recv, size_t count, DataType type,
                                   int root);
  absl::Status Scatter(const void* send, void* recv, size_t count, DataType type, int root,
                       std::optional<absl::Time> deadline = {});
  // MPI_Scatterv: rank r receives send_counts[r] elements from element displs[r] of
  // the root's `send` into `recv` (`recv_count` elements, which must equal
  // send_counts[r]). `send`, `send_counts` and `displs` matter at the root only, where
  // they have size() entries; `recv` may be kInPlace at the root.
  absl::StatusOr<Request> IScatterv(const void* send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> displs, void* recv, size_t recv_count,
                                    DataType type, int root);
  absl::Status Scatterv(const void* send, absl::Span<const size_t> send_counts,
                        absl::Span<const size_t> displs, void* recv, size_t recv_count,
                        DataType type, int root, std::optional<absl::Time> deadline = {});
  // The collectives from here to Barrier move data only: `type` says how large an
  // element is (any valid DataType).
  //
  // MPI_Bcast: the root's `buffer` of `count` elements lands in every rank's.
  absl::StatusOr<Request> IBcast(void* buffer, size_t count, DataType type, int root);
  absl::Status Bcast(void* buffer, size_t count, DataType type, int root,
                     std::optional<absl::Time> deadline = {});
  // MPI_Gather: rank r's `count` elements become block r of the root's `recv`
  // (size() blocks). `send` may be kInPlace at the root only (its block is then
  // already in place); `recv` matters at the root only.
  absl::StatusOr<Request> IGather(const void* send, void* recv, size_t count, DataType type,
                                  int root);
  absl::Status Gather(const void* send, void* recv, size_t count, DataType type, int root,
                      std::optional<absl::Time> deadline = {});
  // MPI_Gatherv: rank r's `send_count` elements land at element displs[r] of the
  // root's `recv`; they must equal recv_counts[r]. `recv`, `recv_counts` and `displs`
  // matter at the root only, where they have size() entries; `send` may be kInPlace
  // at the root.
  absl::StatusOr<Request> IGatherv(const void* send, size_t send_count, void* recv,
                                   absl::Span<const size_t> recv_counts,
                                   absl::Span<const size_t> displs, DataType type, int root);
  absl::Status Gatherv(const void* send, size_t send_count, void* recv,
                       absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                       DataType type, int root, std::optional<absl::Time> deadline = {});
  // MPI_Allgather: every rank gets every rank's `count` elements, block r from rank
  // r. `send` may be kInPlace (the own block is then already at block rank()).
  absl::StatusOr<Request> IAllgather(const void* send, void* recv, size_t count, DataType type);
  absl::Status Allgather(const void* send, void* recv, size_t count, DataType type,
                         std::optional<absl::Time> deadline = {});
  // MPI_Allgatherv: rank r's `send_count` (= recv_counts[r]) elements land at
  // element displs[r] of every rank's `recv`. `recv_counts` are the same on every
  // rank; `displs` are each rank's own. `send` may be kInPlace (`send_count` is then
  // ignored and the own block is already in place).
  absl::StatusOr<Request> IAllgatherv(const void* send, size_t send_count, void* recv,
                                      absl::Span<const size_t> recv_counts,
                                      absl::Span<const size_t> displs, DataType type);
  absl::Status Allgatherv(const void* send, size_t send_count, void* recv,
                          absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                          DataType type, std::optional<absl::Time> deadline = {});
  // MPI_Alltoall: block s (of `count` elements) of rank r's `send` becomes block r of
  // rank s's `recv`. `send` may be kInPlace (the input is then in `recv`).
  absl::StatusOr<Request> IAlltoall(const void* send, void* recv, size_t count, DataType type);
  absl::Status Alltoall(const void* send, void* recv, size_t count, DataType type,
                        std::optional<absl::Time> deadline = {});
  // MPI_Alltoallv: send_counts[s] elements at send_displs[s] of rank r's `send` land
  // at recv_displs[r] of rank s's `recv`, where recv_counts[r] must equal them. With
  // `send` kInPlace the input is in `recv`, laid out by recv_counts and recv_displs
  // (the send arguments are ignored).
  absl::StatusOr<Request> IAlltoallv(const void* send, absl::Span<const size_t> send_counts,
                                     absl::Span<const size_t> send_displs, void* recv,
                                     absl::Span<const size_t> recv_counts,
                                     absl::Span<const size_t> recv_displs, DataType type);
  absl::Status Alltoallv(const void* send, absl::Span<const size_t> send_counts,
                         absl::Span<const size_t> send_displs, void* recv,
                         absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
                         DataType type, std::optional<absl::Time> deadline = {});
  // MPI_Barrier: returns once every rank of the communicator has called it.
  absl::StatusOr<Request> IBarrier();
  absl::Status Barrier(std::optional<absl::Time> deadline = {});
  // MPI_Scan: rank r gets a0 op ... op ar. `send` may be kInPlace.
  absl::StatusOr<Request> IScan(const void* send, void* recv, size_t count, DataType type,
                                const ReduceOp& op);
  absl::Status Scan(const void* send, void* recv, size_t count, DataType type, const ReduceOp& op,
                    std::optional<absl::Time> deadline = {});
  // MPI_Exscan: rank r > 0 gets a0 op ... op a(r-1); rank 0's `recv` is not touched
  // (the standard leaves it undefined). `send` may be kInPlace.
  absl::StatusOr<Request> IExscan(const void* send, void* recv, size_t count, DataType type,
                                  const ReduceOp& op);
  absl::Status Exscan(const void* send, void* recv, size_t count, DataType type, const ReduceOp& op,
                      std::optional<absl::Time> deadline = {});

  // Typed forms: the datatype from T, counts from the spans, and each span checked
  // against what the call reads or writes at this rank (a span shorter than that
  // fails the call with InvalidArgument naming it and the rank, and fails the job as
  // any refused argument does, so the peers return at once). A span may be longer
  // than needed; arguments a rank does not use (a non-root's recv in Reduce, send in
  // Scatter) may be empty. Counts that the raw form takes on their own are the
  // length of one span, named below. In place: the raw forms with kInPlace, or
  // Allreduce's one-span form.
  //
  //   std::vector<float> grads(n), sums(n);
  //   absl::Status done = comm.Allreduce<float>(grads, absl::MakeSpan(sums), PredefinedOp::kSum);

  // count = send.size(); the root's recv holds count.
  template <typename T>
  absl::StatusOr<Request> IReduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                                  int root) {
    absl::Status refused = SpanHolds("Reduce", "recv", rank() == root, recv.size(), send.size());
    if (!refused.ok()) return refused;
    return IReduce(send.data(), recv.data(), send.size(), kDataTypeOf<T>, op, root);
  }
  // recv holds send.size().
  template <typename T>
  absl::StatusOr<Request> IAllreduce(absl::Span<const T> send, absl::Span<T> recv,
                                     const ReduceOp& op) {
    absl::Status refused = SpanHolds("Allreduce", "recv", true, recv.size(), send.size());
    if (!refused.ok()) return refused;
    return IAllreduce(send.data(), recv.data(), send.size(), kDataTypeOf<T>, op);
  }
  // In place: every rank's `buffer` becomes the reduction of all of them.
  template <typename T>
  absl::StatusOr<Request> IAllreduce(absl::Span<T> buffer, const ReduceOp& op) {
    return IAllreduce(kInPlace, buffer.data(), buffer.size(), kDataTypeOf<T>, op);
  }
  // recv_count = recv.size(); send holds size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IReduceScatterBlock(absl::Span<const T> send, absl::Span<T> recv,
                                              const ReduceOp& op) {
    absl::Status refused =
        SpanHolds("ReduceScatterBlock", "send", true, send.size(), PerRank(recv.size()));
    if (!refused.ok()) return refused;
    return IReduceScatterBlock(send.data(), recv.data(), recv.size(), kDataTypeOf<T>, op);
  }
  // send holds the sum of recv_counts; recv holds recv_counts[rank()].
  template <typename T>
  absl::StatusOr<Request> IReduceScatter(absl::Span<const T> send, absl::Span<T> recv,
                                         absl::Span<const size_t> recv_counts, const ReduceOp& op) {
    absl::Status refused = SpanHolds("ReduceScatter", "send", true, send.size(),
                                     internal_collectives::SaturatingSum(recv_counts));
    if (!refused.ok()) return refused;
    refused = SpanHolds("ReduceScatter", "recv", true, recv.size(), OwnCount(recv_counts));
    if (!refused.ok()) return refused;
    return IReduceScatter(send.data(), recv.data(), recv_counts, kDataTypeOf<T>, op);
  }
  // count = recv.size(); the root's send holds size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IScatter(absl::Span<const T> send, absl::Span<T> recv, int root) {
    absl::Status refused =
        SpanHolds("Scatter", "send", rank() == root, send.size(), PerRank(recv.size()));
    if (!refused.ok()) return refused;
    return IScatter(send.data(), recv.data(), recv.size(), kDataTypeOf<T>, root);
  }
  // recv_count = recv.size(); the root's send reaches every displs[r] + send_counts[r].
  template <typename T>
  absl::StatusOr<Request> IScatterv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> displs, absl::Span<T> recv, int root) {
    absl::Status refused = SpanHolds("Scatterv", "send", rank() == root, send.size(),
                                     internal_collectives::SaturatingExtent(send_counts, displs));
    if (!refused.ok()) return refused;
    return IScatterv(send.data(), send_counts, displs, recv.data(), recv.size(), kDataTypeOf<T>,
                     root);
  }
  template <typename T>
  absl::StatusOr<Request> IBcast(absl::Span<T> buffer, int root) {
    return IBcast(buffer.data(), buffer.size(), kDataTypeOf<T>, root);
  }
  // count = send.size(); the root's recv holds size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IGather(absl::Span<const T> send, absl::Span<T> recv, int root) {
    absl::Status refused =
        SpanHolds("Gather", "recv", rank() == root, recv.size(), PerRank(send.size()));
    if (!refused.ok()) return refused;
    return IGather(send.data(), recv.data(), send.size(), kDataTypeOf<T>, root);
  }
  // send_count = send.size(); the root's recv reaches every displs[r] + recv_counts[r].
  template <typename T>
  absl::StatusOr<Request> IGatherv(absl::Span<const T> send, absl::Span<T> recv,
                                   absl::Span<const size_t> recv_counts,
                                   absl::Span<const size_t> displs, int root) {
    absl::Status refused = SpanHolds("Gatherv", "recv", rank() == root, recv.size(),
                                     internal_collectives::SaturatingExtent(recv_counts, displs));
    if (!refused.ok()) return refused;
    return IGatherv(send.data(), send.size(), recv.data(), recv_counts, displs, kDataTypeOf<T>,
                    root);
  }
  // count = send.size(); recv holds size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IAllgather(absl::Span<const T> send, absl::Span<T> recv) {
    absl::Status refused = SpanHolds("Allgather", "recv", true, recv.size(), PerRank(send.size()));
    if (!refused.ok()) return refused;
    return IAllgather(send.data(), recv.data(), send.size(), kDataTypeOf<T>);
  }
  // send_count = send.size(); recv reaches every displs[r] + recv_counts[r].
  template <typename T>
  absl::StatusOr<Request> IAllgatherv(absl::Span<const T> send, absl::Span<T> recv,
                                      absl::Span<const size_t> recv_counts,
                                      absl::Span<const size_t> displs) {
    absl::Status refused = SpanHolds("Allgatherv", "recv", true, recv.size(),
                                     internal_collectives::SaturatingExtent(recv_counts, displs));
    if (!refused.ok()) return refused;
    return IAllgatherv(send.data(), send.size(), recv.data(), recv_counts, displs, kDataTypeOf<T>);
  }
  // send holds size() equal blocks (count = send.size() / size()); recv as many.
  template <typename T>
  absl::StatusOr<Request> IAlltoall(absl::Span<const T> send, absl::Span<T> recv) {
    absl::Status refused = EqualBlocks("Alltoall", "send", send.size());
    if (!refused.ok()) return refused;
    refused = SpanHolds("Alltoall", "recv", true, recv.size(), send.size());
    if (!refused.ok()) return refused;
    // (A moved-from communicator has no ranks; the raw form refuses it.)
    const size_t ranks = size() > 0 ? static_cast<size_t>(size()) : 1;
    return IAlltoall(send.data(), recv.data(), send.size() / ranks, kDataTypeOf<T>);
  }
  // send and recv each reach every displacement plus its count.
  template <typename T>
  absl::StatusOr<Request> IAlltoallv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                                     absl::Span<const size_t> send_displs, absl::Span<T> recv,
                                     absl::Span<const size_t> recv_counts,
                                     absl::Span<const size_t> recv_displs) {
    absl::Status refused =
        SpanHolds("Alltoallv", "send", true, send.size(),
                  internal_collectives::SaturatingExtent(send_counts, send_displs));
    if (!refused.ok()) return refused;
    refused = SpanHolds("Alltoallv", "recv", true, recv.size(),
                        internal_collectives::SaturatingExtent(recv_counts, recv_displs));
    if (!refused.ok()) return refused;
    return IAlltoallv(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs,
                      kDataTypeOf<T>);
  }
  // recv holds send.size().
  template <typename T>
  absl::StatusOr<Request> IScan(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op) {
    absl::Status refused = SpanHolds("Scan", "recv", true, recv.size(), send.size());
    if (!refused.ok()) return refused;
    return IScan(send.data(), recv.data(), send.size(), kDataTypeOf<T>, op);
  }
  // recv holds send.size() (at rank 0 too, as the raw form asks, though not written).
  template <typename T>
  absl::StatusOr<Request> IExscan(absl::Span<const T> send, absl::Span<T> recv,
                                  const ReduceOp& op) {
    absl::Status refused = SpanHolds("Exscan", "recv", true, recv.size(), send.size());
    if (!refused.ok()) return refused;
    return IExscan(send.data(), recv.data(), send.size(), kDataTypeOf<T>, op);
  }

  // The blocking typed forms: the I-form, then Wait(deadline).
  template <typename T>
  absl::Status Reduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op, int root,
                      std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IReduce<T>(send, recv, op, root); });
  }
  template <typename T>
  absl::Status Allreduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IAllreduce<T>(send, recv, op); });
  }
  template <typename T>
  absl::Status Allreduce(absl::Span<T> buffer, const ReduceOp& op,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IAllreduce<T>(buffer, op); });
  }
  template <typename T>
  absl::Status ReduceScatterBlock(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                                  std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IReduceScatterBlock<T>(send, recv, op); });
  }
  template <typename T>
  absl::Status ReduceScatter(absl::Span<const T> send, absl::Span<T> recv,
                             absl::Span<const size_t> recv_counts, const ReduceOp& op,
                             std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IReduceScatter<T>(send, recv, recv_counts, op); });
  }
  template <typename T>
  absl::Status Scatter(absl::Span<const T> send, absl::Span<T> recv, int root,
                       std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IScatter<T>(send, recv, root); });
  }
  template <typename T>
  absl::Status Scatterv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                        absl::Span<const size_t> displs, absl::Span<T> recv, int root,
                        std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IScatterv<T>(send, send_counts, displs, recv, root); });
  }
  template <typename T>
  absl::Status Bcast(absl::Span<T> buffer, int root, std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IBcast<T>(buffer, root); });
  }
  template <typename T>
  absl::Status Gather(absl::Span<const T> send, absl::Span<T> recv, int root,
                      std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IGather<T>(send, recv, root); });
  }
  template <typename T>
  absl::Status Gatherv(absl::Span<const T> send, absl::Span<T> recv,
                       absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                       int root, std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IGatherv<T>(send, recv, recv_counts, displs, root); });
  }
  template <typename T>
  absl::Status Allgather(absl::Span<const T> send, absl::Span<T> recv,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IAllgather<T>(send, recv); });
  }
  template <typename T>
  absl::Status Allgatherv(absl::Span<const T> send, absl::Span<T> recv,
                          absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                          std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IAllgatherv<T>(send, recv, recv_counts, displs); });
  }
  template <typename T>
  absl::Status Alltoall(absl::Span<const T> send, absl::Span<T> recv,
                        std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IAlltoall<T>(send, recv); });
  }
  template <typename T>
  absl::Status Alltoallv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                         absl::Span<const size_t> send_displs, absl::Span<T> recv,
                         absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] {
      return IAlltoallv<T>(send, send_counts, send_displs, recv, recv_counts, recv_displs);
    });
  }
  template <typename T>
  absl::Status Scan(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                    std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IScan<T>(send, recv, op); });
  }
  template <typename T>
  absl::Status Exscan(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                      std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, [&] { return IExscan<T>(send, recv, op); });
  }

  // --- Persistent collectives (MPI-4 MPI_<Coll>_init) ---------------------------------
  //
  // Each *Init takes the arguments of its collective, checks them, and (collective over
  // the communicator, as the collective itself) chooses the algorithm and makes the
  // plan once; it returns a PersistentRequest whose Start() runs that collective with
  // those buffers and arguments, any number of times (the buffers' contents may change
  // between starts, their addresses and the arguments may not). Every rank starts its
  // persistent requests of a communicator in the same order, as it calls collectives.
  // Arguments refused at init fail the job as a refused collective argument does.
  //
  //   ASSIGN_OR_RETURN(zcoll::PersistentRequest step,
  //                    comm.AllreduceInit(grads, sums, n, DataType::kFloat32, PredefinedOp::kSum));
  //   for (...) { fill(grads); RETURN_IF_ERROR(step.Start()); RETURN_IF_ERROR(step.Wait()); }
  absl::StatusOr<PersistentRequest> ReduceInit(const void* send, void* recv, size_t count,
                                               DataType type, const ReduceOp& op, int root);
  absl::StatusOr<PersistentRequest> AllreduceInit(const void* send, void* recv, size_t count,
                                                  DataType type, const ReduceOp& op);
  absl::StatusOr<PersistentRequest> ReduceScatterBlockInit(const void* send, void* recv,
                                                           size_t recv_count, DataType type,
                                                           const ReduceOp& op);
  absl::StatusOr<PersistentRequest> ReduceScatterInit(const void* send, void* recv,
                                                      absl::Span<const size_t> recv_counts,
                                                      DataType type, const ReduceOp& op);
  absl::StatusOr<PersistentRequest> ScatterInit(const void* send, void* recv, size_t count,
                                                DataType type, int root);
  absl::StatusOr<PersistentRequest> ScattervInit(const void* send,
                                                 absl::Span<const size_t> send_counts,
                                                 absl::Span<const size_t> displs, void* recv,
                                                 size_t recv_count, DataType type, int root);
  absl::StatusOr<PersistentRequest> BcastInit(void* buffer, size_t count, DataType type, int root);
  absl::StatusOr<PersistentRequest> GatherInit(const void* send, void* recv, size_t count,
                                               DataType type, int root);
  absl::StatusOr<PersistentRequest> GathervInit(const void* send, size_t send_count, void* recv,
                                                absl::Span<const size_t> recv_counts,
                                                absl::Span<const size_t> displs, DataType type,
                                                int root);
  absl::StatusOr<PersistentRequest> AllgatherInit(const void* send, void* recv, size_t count,
                                                  DataType type);
  absl::StatusOr<PersistentRequest> AllgathervInit(const void* send, size_t send_count, void* recv,
                                                   absl::Span<const size_t> recv_counts,
                                                   absl::Span<const size_t> displs, DataType type);
  absl::StatusOr<PersistentRequest> AlltoallInit(const void* send, void* recv, size_t count,
                                                 DataType type);
  absl::StatusOr<PersistentRequest> AlltoallvInit(const void* send,
                                                  absl::Span<const size_t> send_counts,
                                                  absl::Span<const size_t> send_displs, void* recv,
                                                  absl::Span<const size_t> recv_counts,
                                                  absl::Span<const size_t> recv_displs,
                                                  DataType type);
  absl::StatusOr<PersistentRequest> BarrierInit();
  absl::StatusOr<PersistentRequest> ScanInit(const void* send, void* recv, size_t count,
                                             DataType type, const ReduceOp& op);
  absl::StatusOr<PersistentRequest> ExscanInit(const void* send, void* recv, size_t count,
                                               DataType type, const ReduceOp& op);
  // The typed forms, as the typed I-forms take their spans.
  template <typename T>
  absl::StatusOr<PersistentRequest> ReduceInit(absl::Span<const T> send, absl::Span<T> recv,
                                               const ReduceOp& op, int root) {
    return Persistent([&] { return IReduce<T>(send, recv, op, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AllreduceInit(absl::Span<const T> send, absl::Span<T> recv,
                                                  const ReduceOp& op) {
    return Persistent([&] { return IAllreduce<T>(send, recv, op); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AllreduceInit(absl::Span<T> buffer, const ReduceOp& op) {
    return Persistent([&] { return IAllreduce<T>(buffer, op); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ReduceScatterBlockInit(absl::Span<const T> send,
                                                           absl::Span<T> recv, const ReduceOp& op) {
    return Persistent([&] { return IReduceScatterBlock<T>(send, recv, op); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ReduceScatterInit(absl::Span<const T> send, absl::Span<T> recv,
                                                      absl::Span<const size_t> recv_counts,
                                                      const ReduceOp& op) {
    return Persistent([&] { return IReduceScatter<T>(send, recv, recv_counts, op); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ScatterInit(absl::Span<const T> send, absl::Span<T> recv,
                                                int root) {
    return Persistent([&] { return IScatter<T>(send, recv, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ScattervInit(absl::Span<const T> send,
                                                 absl::Span<const size_t> send_counts,
                                                 absl::Span<const size_t> displs,
                                                 absl::Span<T> recv, int root) {
    return Persistent([&] { return IScatterv<T>(send, send_counts, displs, recv, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> BcastInit(absl::Span<T> buffer, int root) {
    return Persistent([&] { return IBcast<T>(buffer, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> GatherInit(absl::Span<const T> send, absl::Span<T> recv,
                                               int root) {
    return Persistent([&] { return IGather<T>(send, recv, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> GathervInit(absl::Span<const T> send, absl::Span<T> recv,
                                                absl::Span<const size_t> recv_counts,
                                                absl::Span<const size_t> displs, int root) {
    return Persistent([&] { return IGatherv<T>(send, recv, recv_counts, displs, root); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AllgatherInit(absl::Span<const T> send, absl::Span<T> recv) {
    return Persistent([&] { return IAllgather<T>(send, recv); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AllgathervInit(absl::Span<const T> send, absl::Span<T> recv,
                                                   absl::Span<const size_t> recv_counts,
                                                   absl::Span<const size_t> displs) {
    return Persistent([&] { return IAllgatherv<T>(send, recv, recv_counts, displs); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AlltoallInit(absl::Span<const T> send, absl::Span<T> recv) {
    return Persistent([&] { return IAlltoall<T>(send, recv); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> AlltoallvInit(absl::Span<const T> send,
                                                  absl::Span<const size_t> send_counts,
                                                  absl::Span<const size_t> send_displs,
                                                  absl::Span<T> recv,
                                                  absl::Span<const size_t> recv_counts,
                                                  absl::Span<const size_t> recv_displs) {
    return Persistent([&] {
      return IAlltoallv<T>(send, send_counts, send_displs, recv, recv_counts, recv_displs);
    });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ScanInit(absl::Span<const T> send, absl::Span<T> recv,
                                             const ReduceOp& op) {
    return Persistent([&] { return IScan<T>(send, recv, op); });
  }
  template <typename T>
  absl::StatusOr<PersistentRequest> ExscanInit(absl::Span<const T> send, absl::Span<T> recv,
                                               const ReduceOp& op) {
    return Persistent([&] { return IExscan<T>(send, recv, op); });
  }

  // Forces `algorithm` (a name AllAlgorithms() lists for `collective`) for this
  // communicator's later calls of `collective`, as ZCOLL_ALGO_<COLL> does for every
  // communicator; "" returns to the selection table. Every rank must force the same.
  // NotFound for an unknown name; a forced algorithm that cannot run some arguments
  // fails those calls with InvalidArgument.
  absl::Status SetAlgorithm(Collective collective, absl::string_view algorithm);

  // OK, or Aborted with the job's first failure.
  absl::Status status() const;
  // Fails the job with `reason` (MPI_Abort): every rank's pending and later
  // operations on any communicator of the job return Aborted naming this rank and
  // the reason. Waits a quarter second at most for the notices to leave, so the caller
  // may exit right after. Returns the status the job now holds.
  absl::Status Abort(absl::string_view reason);
  // Fails the job with `status` (not OK) as a refused argument of a collective does:
  // every other rank's pending and later operations return Aborted with it. Returns
  // `status`. For bindings that check their own arguments before calling (the MPI C
  // interface), so that a call refused on one rank does not leave the others waiting.
  absl::Status FailJob(const absl::Status& status) { return Failed(status); }

  // The transport of this communicator: its ranks, its tag space (tags up to
  // kMaxCommunicatorTag), failing with the job. For the collectives' executor and
  // for tests.
  Transport& transport();

  // Point-to-point messages beside the collectives, for the MPI interface's MPI_Send
  // and MPI_Recv (mpi/messages.h matches them to the program's receives): two
  // channels between every pair of ranks, on tags of the communicator's own that no
  // collective uses, each matched on (peer, channel) in posting order. They fail with
  // the job as every operation does; Completion and buffer rules are the transport's.
  enum class MessageChannel {
    kEnvelope,  // small messages and the protocol's envelopes
    kPayload,   // large messages' payloads, sent once the receiver asked for them
  };
  absl::Status PostChannelSend(int peer, MessageChannel channel, const void* data, size_t bytes,
                               Completion* completion);
  absl::Status PostChannelRecv(int peer, MessageChannel channel, void* data, size_t bytes,
                               Completion* completion);

 private:
  struct State;
  explicit Communicator(std::unique_ptr<State> state);
  // Records `status` (an error of an operation of this communicator) as the job's
  // failure and returns what the caller should see.
  absl::Status Failed(const absl::Status& status);
  absl::Time DeadlineOrDefault(std::optional<absl::Time> deadline) const {
    return deadline.has_value() ? *deadline : DefaultDeadline();
  }
  struct CollectiveCall;
  // The typed forms' span checks. A span that `used` by this rank must hold at
  // least `needs` elements; one that does not: InvalidArgument, and the job fails.
  absl::Status SpanHolds(const char* call, const char* span, bool used, size_t holds,
                         size_t needs) {
    if (ABSL_PREDICT_TRUE(!used || holds >= needs)) return absl::OkStatus();
    return RefuseSpan(call, span, holds, needs);
  }
  absl::Status RefuseSpan(const char* call, const char* span, size_t holds, size_t needs);
  // `elements` must split into size() equal blocks.
  absl::Status EqualBlocks(const char* call, const char* span, size_t elements);
  // size() blocks of `count` (saturating: a count too large for any span needs more
  // than any span holds).
  size_t PerRank(size_t count) const;
  // counts[rank()], or 0 where `counts` has no such entry (the raw form refuses it).
  size_t OwnCount(absl::Span<const size_t> counts) const;
  // A blocking collective: `start` (its I-form) runs marked blocking, so that a call
  // that runs on the node's segment with nothing else in flight runs there to its end
  // without a Request (StartCollective); then Wait(deadline) on what it returns.
  absl::Status Blocking(std::optional<absl::Time> deadline,
                        absl::FunctionRef<absl::StatusOr<Request>()> start);
  // Blocking, out of line, for a call whose quick path (QuickCallFits) did not fit:
  // `start` captures by value, so the quick path stores none of its arguments for it
  // (inline, its captures were set up before the quick test: 15-20 instructions a call).
  template <typename Start>
  ABSL_ATTRIBUTE_NOINLINE absl::Status BlockingAfterQuickTest(std::optional<absl::Time> deadline,
                                                              const Start& start) {
    return Blocking(deadline, start);
  }
  absl::StatusOr<Request> IScanOrExscan(const void* send, void* recv, size_t count, DataType type,
                                        const ReduceOp& op, bool exclusive);
  // Checks, selects, plans and starts one collective (collectives.cc).
  absl::StatusOr<Request> StartCollective(const CollectiveCall& call);
  // Whether this call, with nothing else in flight, repeats its collective's last
  // quick node call (State::quick) but for its buffers, and the buffers are fine (any
  // the general path would refuse go that way, which says why): then a blocking caller
  // runs it with RunQuickNodeCall (the blocking forms and, through Blocking, the typed
  // ones). `send` is ignored for Bcast and Barrier, `recv` for Barrier.
  // (`vectors`: a v-collective's counts and displacements as its call records them,
  // CollectiveArgs' order; empty where the rank passes none.)
  bool QuickCallFits(Collective collective, const void* send, const void* recv, size_t count,
                     DataType type, const ReduceOp& op, int root,
                     const std::array<absl::Span<const size_t>, 4>& vectors = {}) const;
  absl::Status RunQuickNodeCall(Collective collective, const void* send, void* recv,
                                std::optional<absl::Time> deadline);
  // Runs the node call `execution` was restarted with to its end, for a blocking
  // caller (`deadline` as given, or none: the timeout's): the call's outcome.
  // `decided`: a quick call, whose execution's choices DecideForRepeats made.
  static absl::Status RunNodeCallToEnd(State& state, NodeExecution& execution,
                                       std::optional<absl::Time> deadline, bool decided);
  // A persistent collective: `start` (its I-form) runs in init mode, where
  // StartCollective keeps the call and its plan in the PersistentRequest instead of
  // running it.
  friend class PersistentRequest;
  friend struct internal_collectives::PersistentCall;
  friend class Intercommunicator;
  // Starts `plan`, a schedule over this communicator's ranks made elsewhere (an
  // intercommunicator's, on its bridge), as the collective `collective` named `name`:
  // `plan_check` is the part of its check word every rank computes alike; AVG divides
  // `result_count` elements at `result` by `contributions`. A refusal in `invalid`
  // fails the job.
  absl::StatusOr<Request> StartPlan(const char* name, Collective collective,
                                    std::shared_ptr<const ExecutionPlan> plan, uint32_t plan_check,
                                    DataType type, const ReduceOp& op, const void* send, void* recv,
                                    void* result, size_t result_count, size_t contributions);
  // A plan made for a call, as the cache keeps it (communicator_state.h).
  struct CachedPlan;
  absl::StatusOr<PersistentRequest> Persistent(absl::FunctionRef<absl::StatusOr<Request>()> start);
  // The plan of `call`: from the cache (the last call's first), or chosen and made now.
  absl::StatusOr<CachedPlan*> FindOrMakePlan(const CollectiveCall& call);
  // Starts `call` with `cached`'s plan (`blocking`: see Blocking). Static: a persistent
  // request holds the State, which stays where it is when its Communicator moves.
  static absl::StatusOr<Request> Launch(State& state, const CollectiveCall& call,
                                        CachedPlan& cached, bool blocking);
  static absl::Time DeadlineAfterTimeout(const State& state);
  // Starts `call` on the node levels in `execution`, a NodeLevelsExecution
  // (node_levels.h), with `op` (AVG's sum); an Allreduce by stripes where `stripes`.
  static void RestartNodeLevels(State& state, const CollectiveCall& call, const ReduceOp& op,
                                bool stripes, CallExecution& execution);
  // `communicator` with its node engine set up (node_engine.h; every rank of a new
  // communicator calls it); an error fails the job.
  // Create with its settings checked: `timeout` (from `timeout_source`) bounds it;
  // `problem`, when not empty, is what is wrong with this rank's settings, told to
  // every rank before all fail.
  static absl::StatusOr<Communicator> CreateWithin(CommunicatorOptions options,
                                                   absl::Duration timeout,
                                                   const char* timeout_source,
                                                   const std::string& problem);
  static absl::StatusOr<Communicator> WithNodeEngine(Communicator communicator,
                                                     absl::Time deadline);
  // Split and Create(group): exchanges this rank's record, checks everyone's, and
  // makes the communicator of this rank's color.
  struct SplitRecord;
  absl::StatusOr<std::optional<Communicator>> SplitBy(SplitRecord mine, const char* call,
                                                      absl::Time until);
  absl::Status CheckSplitRecords(absl::Span<const SplitRecord> records, const char* call) const;
  // The communicator of `members` (ranks here, in their new order, this rank among
  // them), where members[i] gave it context id contexts[i].
  absl::StatusOr<Communicator> Derive(absl::Span<const int> members, std::vector<uint32_t> contexts,
                                      absl::Time until);
  std::unique_ptr<State> state_;
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_H_
