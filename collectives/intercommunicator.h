// Intercommunicator: two disjoint groups of the job's processes, and collectives
// between them (MPI_Intercomm_create; MPI-4.1 chapter 6 on intercommunicators).
//
//   // The lower half and the upper half of `world` face each other; each half's
//   // rank 0 leads it, and `world` carries the leaders' exchange.
//   ASSIGN_OR_RETURN(std::optional<Communicator> half, world.Split(upper, world.rank()));
//   ASSIGN_OR_RETURN(Intercommunicator inter,
//                    Intercommunicator::Create(**half, 0, world, upper ? 0 : size / 2, 7));
//   inter.Bcast(buffer, n, type, i_am_root ? kRoot : upper_is_root_group ? kProcNull : 0);
//
// rank() and size() are this process's place in its own (local) group; the other group
// is the remote one. In a collective, "the other group" is what a rank's data goes to
// or comes from: an Allreduce leaves in group A the reduction of group B's vectors and
// in B that of A's; a rooted collective (Reduce, Bcast, Scatter(v), Gather(v)) has its
// root pass kRoot (MPI_ROOT), the root group's other ranks kProcNull (MPI_PROC_NULL),
// and every rank of the other group the root's rank in the root's group.
// Reduce_scatter(_block) scatters each group's reduction over the other group (the
// vector's length equal in both), Allgather(v) gives each rank the other group's
// blocks, Alltoall(v) exchanges blocks with every rank of the other group, and Barrier
// returns once every rank of both groups has entered. kInPlace is refused (the
// standard defines no in-place form on intercommunicators); scan and exscan do not
// exist here. Non-commutative ops reduce in the contributing group's canonical order.
//
// Underneath, an intercommunicator holds its local group's own communicator (a Dup
// of the one it was made from) and a bridge: one communicator over both groups, its
// own tag space, group A's ranks first (A: the group holding the lower job rank). The
// collectives are schedules over the bridge (intercomm_algorithms.h), run by the same
// executor as every collective, with the same failure rules: an error fails the job.

#ifndef ZCOLL_COLLECTIVES_INTERCOMMUNICATOR_H_
#define ZCOLL_COLLECTIVES_INTERCOMMUNICATOR_H_

#include <cstddef>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "collectives/intercomm_algorithms.h"
#include "collectives/request.h"
#include "core/datatype.h"
#include "core/group.h"
#include "core/reduce_op.h"

namespace zcoll {

// (The typed forms' checks: return a refusal.)
#define ZCOLL_INTERCOMM_REFUSE_IF(check)                 \
  do {                                                   \
    if (absl::Status refused = (check); !refused.ok()) { \
      return refused;                                    \
    }                                                    \
  } while (false)

class Intercommunicator {
 public:
  // MPI_Intercomm_create, collective over `local` and, between the two leaders, over
  // `peer`: `local_leader` is the leader's rank in `local` (equal on all of `local`),
  // `remote_leader` the other group's leader's rank in `peer` (significant at the
  // leader only), `tag` (>= 0, significant at the leaders) equal at both leaders. The
  // groups must be disjoint.
  // Errors reach every rank of both groups (a leader's failed exchange is told to its
  // group); a deadline ends it otherwise.
  static absl::StatusOr<Intercommunicator> Create(Communicator& local, int local_leader,
                                                  Communicator& peer, int remote_leader, int tag,
                                                  std::optional<absl::Time> deadline = {});

  Intercommunicator(Intercommunicator&&) noexcept;
  Intercommunicator& operator=(Intercommunicator&&) noexcept;
  ~Intercommunicator();

  // This process's rank in its local group, and that group's size (MPI_Comm_rank and
  // MPI_Comm_size on an intercommunicator).
  int rank() const { return local_.rank(); }
  int size() const { return local_.size(); }
  int remote_size() const { return remote_size_; }
  // MPI_Comm_group and MPI_Comm_remote_group.
  Group group() const { return local_.group(); }
  Group remote_group() const;
  // The local group's own communicator (a Dup of the one Create was given): for
  // collectives within the group.
  Communicator& local() { return local_; }
  // The communicator over both groups that the collectives run on, and the rank on it
  // of the other group's rank `remote_rank`: for point-to-point messages between the
  // groups (the MPI interface's MPI_Send on an intercommunicator).
  Communicator& bridge() { return bridge_; }
  int BridgeRankOfRemote(int remote_rank) const {
    return local_is_first_ ? local_.size() + remote_rank : remote_rank;
  }

  // MPI_Intercomm_merge, collective over both groups: one communicator over both,
  // the group that passed `high` = false first (each group passes one value; equal
  // values: the group first on the bridge, which for an intercommunicator from Create
  // is the one holding the lower job rank; Split, Create(group) and Dup keep their
  // parent's order), each group's ranks in their order.
  absl::StatusOr<Communicator> Merge(bool high, std::optional<absl::Time> deadline = {});
  // MPI_Comm_dup: the same groups, new tag spaces.
  absl::StatusOr<Intercommunicator> Dup(std::optional<absl::Time> deadline = {});
  // MPI_Comm_split on an intercommunicator, collective over both groups: the ranks of
  // each color in this group, ordered by `key` and then by rank, face those of the
  // same color in the other group. A color that has ranks in only one of the groups,
  // and kUndefinedColor, give nullopt. The new groups keep their order on the bridge.
  absl::StatusOr<std::optional<Intercommunicator>> Split(int color, int key,
                                                         std::optional<absl::Time> deadline = {});
  // MPI_Comm_create on an intercommunicator, collective over both groups: each group's
  // ranks all pass the same subgroup of their own group (Group::Empty() too); its
  // members get an intercommunicator of that subgroup and the other group's, the rest
  // (and everyone, when either subgroup is empty) nullopt.
  absl::StatusOr<std::optional<Intercommunicator>> Create(const Group& group,
                                                          std::optional<absl::Time> deadline = {});

  // --- Collectives (MPI semantics on intercommunicators) ----------------------------
  // Counts are elements of `type`; v-form vectors are indexed by the remote group's
  // ranks (a root's counts, allgatherv's and alltoallv's), or, for ReduceScatter's
  // recv_counts, by the local group's (equal on the local group; their sums equal in
  // both groups). Blocking forms wait until `deadline` (default: the timeout).
  absl::StatusOr<Request> IReduce(const void* send, void* recv, size_t count, DataType type,
                                  const ReduceOp& op, int root);
  absl::Status Reduce(const void* send, void* recv, size_t count, DataType type, const ReduceOp& op,
                      int root, std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IAllreduce(const void* send, void* recv, size_t count, DataType type,
                                     const ReduceOp& op);
  absl::Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                         const ReduceOp& op, std::optional<absl::Time> deadline = {});
  // `send` holds size() blocks of `recv_count` (the local group's size; size() *
  // recv_count equals the remote group's remote_size() * its recv_count).
  absl::StatusOr<Request> IReduceScatterBlock(const void* send, void* recv, size_t recv_count,
                                              DataType type, const ReduceOp& op);
  absl::Status ReduceScatterBlock(const void* send, void* recv, size_t recv_count, DataType type,
                                  const ReduceOp& op, std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IReduceScatter(const void* send, void* recv,
                                         absl::Span<const size_t> recv_counts, DataType type,
                                         const ReduceOp& op);
  absl::Status ReduceScatter(const void* send, void* recv, absl::Span<const size_t> recv_counts,
                             DataType type, const ReduceOp& op,
                             std::optional<absl::Time> deadline = {});
  // The root's `send` holds remote_size() blocks of `count`.
  absl::StatusOr<Request> IScatter(const void* send, void* recv, size_t count, DataType type,
                                   int root);
  absl::Status Scatter(const void* send, void* recv, size_t count, DataType type, int root,
                       std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IScatterv(const void* send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> displs, void* recv, size_t recv_count,
                                    DataType type, int root);
  absl::Status Scatterv(const void* send, absl::Span<const size_t> send_counts,
                        absl::Span<const size_t> displs, void* recv, size_t recv_count,
                        DataType type, int root, std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IBcast(void* buffer, size_t count, DataType type, int root);
  absl::Status Bcast(void* buffer, size_t count, DataType type, int root,
                     std::optional<absl::Time> deadline = {});
  // The root's `recv` holds remote_size() blocks of `count`.
  absl::StatusOr<Request> IGather(const void* send, void* recv, size_t count, DataType type,
                                  int root);
  absl::Status Gather(const void* send, void* recv, size_t count, DataType type, int root,
                      std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IGatherv(const void* send, size_t send_count, void* recv,
                                   absl::Span<const size_t> recv_counts,
                                   absl::Span<const size_t> displs, DataType type, int root);
  absl::Status Gatherv(const void* send, size_t send_count, void* recv,
                       absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                       DataType type, int root, std::optional<absl::Time> deadline = {});
  // `recv` holds remote_size() blocks of `count`.
  absl::StatusOr<Request> IAllgather(const void* send, void* recv, size_t count, DataType type);
  absl::Status Allgather(const void* send, void* recv, size_t count, DataType type,
                         std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IAllgatherv(const void* send, size_t send_count, void* recv,
                                      absl::Span<const size_t> recv_counts,
                                      absl::Span<const size_t> displs, DataType type);
  absl::Status Allgatherv(const void* send, size_t send_count, void* recv,
                          absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                          DataType type, std::optional<absl::Time> deadline = {});
  // `send` and `recv` hold remote_size() blocks of `count`.
  absl::StatusOr<Request> IAlltoall(const void* send, void* recv, size_t count, DataType type);
  absl::Status Alltoall(const void* send, void* recv, size_t count, DataType type,
                        std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IAlltoallv(const void* send, absl::Span<const size_t> send_counts,
                                     absl::Span<const size_t> send_displs, void* recv,
                                     absl::Span<const size_t> recv_counts,
                                     absl::Span<const size_t> recv_displs, DataType type);
  absl::Status Alltoallv(const void* send, absl::Span<const size_t> send_counts,
                         absl::Span<const size_t> send_displs, void* recv,
                         absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
                         DataType type, std::optional<absl::Time> deadline = {});
  absl::StatusOr<Request> IBarrier();
  absl::Status Barrier(std::optional<absl::Time> deadline = {});

  // Persistent forms (MPI-4 MPI_<Coll>_init on an intercommunicator): the arguments
  // checked, and the schedule made, once; PersistentRequest::Start runs it again.
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

  // Typed forms: the datatype from T and counts from the spans, as on a Communicator
  // (a span shorter than the call needs at this rank, or one that does not split into
  // remote_size() equal blocks where it must, is refused naming it, and fails the job).
  // Spans of arguments a rank does not use may be empty.

  // count: the root's recv.size(), the other group's send.size().
  template <typename T>
  absl::StatusOr<Request> IReduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                                  int root) {
    return IReduce(send.data(), recv.data(), root == kRoot ? recv.size() : send.size(),
                   kDataTypeOf<T>, op, root);
  }
  // recv holds send.size().
  template <typename T>
  absl::StatusOr<Request> IAllreduce(absl::Span<const T> send, absl::Span<T> recv,
                                     const ReduceOp& op) {
    ZCOLL_INTERCOMM_REFUSE_IF(SpanHolds(true, "Allreduce", "recv", recv.size(), send.size()));
    return IAllreduce(send.data(), recv.data(), send.size(), kDataTypeOf<T>, op);
  }
  // recv_count = recv.size(); send holds size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IReduceScatterBlock(absl::Span<const T> send, absl::Span<T> recv,
                                              const ReduceOp& op) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(true, "ReduceScatterBlock", "send", send.size(), recv.size() * size()));
    return IReduceScatterBlock(send.data(), recv.data(), recv.size(), kDataTypeOf<T>, op);
  }
  // send holds the sum of recv_counts (the local group's); recv its own.
  template <typename T>
  absl::StatusOr<Request> IReduceScatter(absl::Span<const T> send, absl::Span<T> recv,
                                         absl::Span<const size_t> recv_counts, const ReduceOp& op) {
    ZCOLL_INTERCOMM_REFUSE_IF(SpanHolds(true, "ReduceScatter", "send", send.size(),
                                        internal_collectives::SaturatingSum(recv_counts)));
    const size_t mine = static_cast<size_t>(rank()) < recv_counts.size() ? recv_counts[rank()] : 0;
    ZCOLL_INTERCOMM_REFUSE_IF(SpanHolds(true, "ReduceScatter", "recv", recv.size(), mine));
    return IReduceScatter(send.data(), recv.data(), recv_counts, kDataTypeOf<T>, op);
  }
  // count: the root's send.size() / remote_size(), the other group's recv.size().
  template <typename T>
  absl::StatusOr<Request> IScatter(absl::Span<const T> send, absl::Span<T> recv, int root) {
    ZCOLL_INTERCOMM_REFUSE_IF(EqualBlocks(root == kRoot, "Scatter", "send", send.size()));
    return IScatter(send.data(), recv.data(),
                    root == kRoot ? send.size() / RemoteBlocks() : recv.size(), kDataTypeOf<T>,
                    root);
  }
  // recv_count = recv.size(); the root's send reaches every displs[j] + send_counts[j].
  template <typename T>
  absl::StatusOr<Request> IScatterv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> displs, absl::Span<T> recv, int root) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(root == kRoot, "Scatterv", "send", send.size(),
                  internal_collectives::SaturatingExtent(send_counts, displs)));
    return IScatterv(send.data(), send_counts, displs, recv.data(), recv.size(), kDataTypeOf<T>,
                     root);
  }
  template <typename T>
  absl::StatusOr<Request> IBcast(absl::Span<T> buffer, int root) {
    return IBcast(buffer.data(), buffer.size(), kDataTypeOf<T>, root);
  }
  // count: the root's recv.size() / remote_size(), the other group's send.size().
  template <typename T>
  absl::StatusOr<Request> IGather(absl::Span<const T> send, absl::Span<T> recv, int root) {
    ZCOLL_INTERCOMM_REFUSE_IF(EqualBlocks(root == kRoot, "Gather", "recv", recv.size()));
    return IGather(send.data(), recv.data(),
                   root == kRoot ? recv.size() / RemoteBlocks() : send.size(), kDataTypeOf<T>,
                   root);
  }
  // send_count = send.size(); the root's recv reaches every displs[j] + recv_counts[j].
  template <typename T>
  absl::StatusOr<Request> IGatherv(absl::Span<const T> send, absl::Span<T> recv,
                                   absl::Span<const size_t> recv_counts,
                                   absl::Span<const size_t> displs, int root) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(root == kRoot, "Gatherv", "recv", recv.size(),
                  internal_collectives::SaturatingExtent(recv_counts, displs)));
    return IGatherv(send.data(), send.size(), recv.data(), recv_counts, displs, kDataTypeOf<T>,
                    root);
  }
  // count = send.size(); recv holds remote_size() blocks of it.
  template <typename T>
  absl::StatusOr<Request> IAllgather(absl::Span<const T> send, absl::Span<T> recv) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(true, "Allgather", "recv", recv.size(), send.size() * RemoteBlocks()));
    return IAllgather(send.data(), recv.data(), send.size(), kDataTypeOf<T>);
  }
  // send_count = send.size(); recv reaches every displs[j] + recv_counts[j].
  template <typename T>
  absl::StatusOr<Request> IAllgatherv(absl::Span<const T> send, absl::Span<T> recv,
                                      absl::Span<const size_t> recv_counts,
                                      absl::Span<const size_t> displs) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(true, "Allgatherv", "recv", recv.size(),
                  internal_collectives::SaturatingExtent(recv_counts, displs)));
    return IAllgatherv(send.data(), send.size(), recv.data(), recv_counts, displs, kDataTypeOf<T>);
  }
  // send holds remote_size() equal blocks; recv as many.
  template <typename T>
  absl::StatusOr<Request> IAlltoall(absl::Span<const T> send, absl::Span<T> recv) {
    ZCOLL_INTERCOMM_REFUSE_IF(EqualBlocks(true, "Alltoall", "send", send.size()));
    ZCOLL_INTERCOMM_REFUSE_IF(SpanHolds(true, "Alltoall", "recv", recv.size(), send.size()));
    return IAlltoall(send.data(), recv.data(), send.size() / RemoteBlocks(), kDataTypeOf<T>);
  }
  // send and recv each reach every displacement plus its count.
  template <typename T>
  absl::StatusOr<Request> IAlltoallv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                                     absl::Span<const size_t> send_displs, absl::Span<T> recv,
                                     absl::Span<const size_t> recv_counts,
                                     absl::Span<const size_t> recv_displs) {
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(true, "Alltoallv", "send", send.size(),
                  internal_collectives::SaturatingExtent(send_counts, send_displs)));
    ZCOLL_INTERCOMM_REFUSE_IF(
        SpanHolds(true, "Alltoallv", "recv", recv.size(),
                  internal_collectives::SaturatingExtent(recv_counts, recv_displs)));
    return IAlltoallv(send.data(), send_counts, send_displs, recv.data(), recv_counts, recv_displs,
                      kDataTypeOf<T>);
  }
  // The blocking typed forms: the I-form, then Wait(deadline).
  template <typename T>
  absl::Status Reduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op, int root,
                      std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IReduce<T>(send, recv, op, root));
  }
  template <typename T>
  absl::Status Allreduce(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IAllreduce<T>(send, recv, op));
  }
  template <typename T>
  absl::Status ReduceScatterBlock(absl::Span<const T> send, absl::Span<T> recv, const ReduceOp& op,
                                  std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IReduceScatterBlock<T>(send, recv, op));
  }
  template <typename T>
  absl::Status ReduceScatter(absl::Span<const T> send, absl::Span<T> recv,
                             absl::Span<const size_t> recv_counts, const ReduceOp& op,
                             std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IReduceScatter<T>(send, recv, recv_counts, op));
  }
  template <typename T>
  absl::Status Scatter(absl::Span<const T> send, absl::Span<T> recv, int root,
                       std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IScatter<T>(send, recv, root));
  }
  template <typename T>
  absl::Status Scatterv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                        absl::Span<const size_t> displs, absl::Span<T> recv, int root,
                        std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IScatterv<T>(send, send_counts, displs, recv, root));
  }
  template <typename T>
  absl::Status Bcast(absl::Span<T> buffer, int root, std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IBcast<T>(buffer, root));
  }
  template <typename T>
  absl::Status Gather(absl::Span<const T> send, absl::Span<T> recv, int root,
                      std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IGather<T>(send, recv, root));
  }
  template <typename T>
  absl::Status Gatherv(absl::Span<const T> send, absl::Span<T> recv,
                       absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                       int root, std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IGatherv<T>(send, recv, recv_counts, displs, root));
  }
  template <typename T>
  absl::Status Allgather(absl::Span<const T> send, absl::Span<T> recv,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IAllgather<T>(send, recv));
  }
  template <typename T>
  absl::Status Allgatherv(absl::Span<const T> send, absl::Span<T> recv,
                          absl::Span<const size_t> recv_counts, absl::Span<const size_t> displs,
                          std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IAllgatherv<T>(send, recv, recv_counts, displs));
  }
  template <typename T>
  absl::Status Alltoall(absl::Span<const T> send, absl::Span<T> recv,
                        std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline, IAlltoall<T>(send, recv));
  }
  template <typename T>
  absl::Status Alltoallv(absl::Span<const T> send, absl::Span<const size_t> send_counts,
                         absl::Span<const size_t> send_displs, absl::Span<T> recv,
                         absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
                         std::optional<absl::Time> deadline = {}) {
    return Blocking(deadline,
                    IAlltoallv<T>(send, send_counts, send_displs, recv, recv_counts, recv_displs));
  }

  // OK, or Aborted with the job's first failure.
  absl::Status status() const { return local_.status(); }

 private:
  Intercommunicator(Communicator local, Communicator bridge, bool local_is_first, int remote_size);
  struct Call;
  // Checks what is left to check (ZCOLL_CHECK's exchange), makes the schedule and
  // starts it on the bridge.
  absl::StatusOr<Request> Start(const Call& call);
  absl::Status Blocking(std::optional<absl::Time> deadline, absl::StatusOr<Request> request);
  // A typed form's span that holds fewer elements than the call needs: InvalidArgument
  // naming it and the rank, and the job fails (as a refused argument does).
  absl::Status SpanHolds(bool used, const char* call, const char* span, size_t holds,
                         size_t needs) {
    if (!used || holds >= needs) return absl::OkStatus();
    return RefuseSpan(call, span, holds, needs);
  }
  absl::Status RefuseSpan(const char* call, const char* span, size_t holds, size_t needs);
  // A span that must split into remote_size() equal blocks.
  absl::Status EqualBlocks(bool used, const char* call, const char* span, size_t elements) {
    if (!used || elements % RemoteBlocks() == 0) return absl::OkStatus();
    return RefuseBlocks(call, span, elements);
  }
  absl::Status RefuseBlocks(const char* call, const char* span, size_t elements);
  // remote_size() as a divisor (1 on a moved-from intercommunicator).
  size_t RemoteBlocks() const { return remote_size_ > 0 ? static_cast<size_t>(remote_size_) : 1; }
  // Split and Create(group): `local` is this rank's new local communicator (nullopt:
  // none), facing the other side's of the same `color`; the bridge is split to match,
  // and a group whose color the other side lacks gets nullopt.
  absl::StatusOr<std::optional<Intercommunicator>> Derive(std::optional<Communicator> local,
                                                          int color, absl::Time until);

  Communicator local_;
  Communicator bridge_;
  bool local_is_first_ = true;
  int remote_size_ = 0;
  // The last collective's arguments, element size and plan (Start).
  IntercommArgs last_args_;
  size_t last_element_bytes_ = 0;
  std::shared_ptr<const ExecutionPlan> last_plan_;
};

#undef ZCOLL_INTERCOMM_REFUSE_IF

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_INTERCOMMUNICATOR_H_
