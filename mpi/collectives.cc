// The collectives of mpi/include/mpi.h, each in its four forms: blocking
// (MPI_Allreduce), nonblocking (MPI_Iallreduce), persistent (MPI_Allreduce_init), and
// the large-count _c variants of each, on zcoll's Communicator. One body per
// collective checks the arguments and runs zcoll's blocking call, its I-form or its
// *Init form, as the call's Launch says.
//
// Data-moving collectives go to zcoll in bytes (MPI_BYTE with the blocks' sizes), so
// that a send type and a receive type of one signature (4 MPI_INT against 4
// MPI_INT32_T, or 1 of a contiguous type of 4 MPI_INT) meet; reductions keep the
// datatype's base type, which the op needs.

#include <cstddef>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "collectives/intercommunicator.h"
#include "collectives/request.h"
#include "core/datatype.h"
#include "core/status_macros.h"
#include "mpi/call_support.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {
namespace {

// How a collective call runs: blocking (MPI_<coll>), or as the request `*request` it
// returns (MPI_I<coll>; MPI_<coll>_init with `info`).
class Launch {
 public:
  static Launch Blocking() { return Launch(Mode::kBlocking, nullptr, MPI_INFO_NULL); }
  static Launch Nonblocking(MPI_Request* request) {
    return Launch(Mode::kNonblocking, request, MPI_INFO_NULL);
  }
  static Launch Persistent(MPI_Info info, MPI_Request* request) {
    return Launch(Mode::kPersistent, request, info);
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
  // A request made by Begin and not kept (the call was refused) goes.
  ~Launch() {
    if (handle_ != MPI_REQUEST_NULL) Runtime::Get().RemoveRequest(handle_);
  }

  // Before the call's arguments are read: a request's call checks `request` (and
  // `info`) and makes the request, whose layouts its v-collective fills.
  absl::Status Begin(CommEntry& entry, const char* function) {
    Runtime& rt = Runtime::Get();
    if (mode_ == Mode::kBlocking) {
      direct_ = !rt.AnyActive();
      return absl::OkStatus();
    }
    direct_ = false;
    if (request_ == nullptr) return Refuse(entry.comm(), MPI_ERR_ARG, "request is a null pointer");
    if (mode_ == Mode::kPersistent) RETURN_IF_ERROR(CheckInfo(&entry.comm(), "info", info_));
    handle_ = rt.AddRequest(entry, function, mode_ == Mode::kPersistent);
    request_entry_ = rt.FindRequest(handle_);
    return absl::OkStatus();
  }

  // Where a v-collective's vectors go: scratch for a blocking call (no allocation per
  // call once it has grown), the request's own otherwise, as zcoll may read them
  // until the request completes.
  ByteLayout& layout(int which) {
    thread_local ByteLayout scratch[2];
    return request_entry_ != nullptr ? request_entry_->layouts[which] : scratch[which];
  }

  // zcoll's blocking call does it: blocking, and no request to advance meanwhile.
  bool direct() const { return direct_; }
  bool persistent() const { return mode_ == Mode::kPersistent; }

  // A started I-form: waited for here (a blocking call while requests are active),
  // or kept in the request.
  absl::Status Keep(absl::StatusOr<Request> started) {
    if (!started.ok()) return started.status();
    if (mode_ == Mode::kBlocking) return Runtime::Get().Complete(*started);
    request_entry_->request = *std::move(started);
    Runtime::Get().Activate(*request_entry_);
    return Hand();
  }
  // A persistent request, inactive until MPI_Start.
  absl::Status Keep(absl::StatusOr<PersistentRequest> made) {
    if (!made.ok()) return made.status();
    request_entry_->persistent_request = *std::move(made);
    return Hand();
  }

 private:
  enum class Mode { kBlocking, kNonblocking, kPersistent };
  Launch(Mode mode, MPI_Request* request, MPI_Info info)
      : mode_(mode), request_(request), info_(info) {}

  // Gives the request to the program.
  absl::Status Hand() {
    *request_ = handle_;
    handle_ = MPI_REQUEST_NULL;
    return absl::OkStatus();
  }

  Mode mode_;
  MPI_Request* request_;
  MPI_Info info_;
  bool direct_ = true;
  MPI_Request handle_ = MPI_REQUEST_NULL;
  RequestEntry* request_entry_ = nullptr;
};

// Runs zcoll's `Name` (blocking), `IName` or `NameInit` with the arguments, as
// `launch` says.
#define ZCOLL_MPI_RUN(launch, comm, Name, ...)                             \
  ((launch).direct()       ? (comm).Name(__VA_ARGS__)                      \
   : (launch).persistent() ? (launch).Keep((comm).Name##Init(__VA_ARGS__)) \
                           : (launch).Keep((comm).I##Name(__VA_ARGS__)))

template <typename C>
constexpr bool kInter = std::is_same_v<C, Intercommunicator>;

// The communicator a refusal fails the job through.
Communicator& LocalOf(Communicator& c) { return c; }
Communicator& LocalOf(Intercommunicator& c) { return c.local(); }
// How many entries a v-collective's vectors have: one per rank, or on an
// intercommunicator one per rank of the other group.
size_t VectorLength(const Communicator& c) { return static_cast<size_t>(c.size()); }
size_t VectorLength(const Intercommunicator& c) { return static_cast<size_t>(c.remote_size()); }

// A collective on `comm`: its launch begins, then `body` checks and runs it on the
// intracommunicator or the intercommunicator.
template <typename Body>
int Run(const char* function, MPI_Comm comm, Launch& launch, Body&& body) {
  return OnCollective(function, comm, [&](CommEntry& entry) {
    RETURN_IF_ERROR(launch.Begin(entry, function));
    if (entry.inter != nullptr) return body(*entry.inter);
    return body(*entry.intra);
  });
}

// The standard defines no in-place form on an intercommunicator.
template <typename C>
absl::Status NoInPlaceOnInter(C& c, const void* sendbuf, const void* recvbuf) {
  if constexpr (kInter<C>) {
    if (sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE) {
      return Refuse(c.local(), MPI_ERR_BUFFER,
                    "MPI_IN_PLACE on an intercommunicator (the standard defines no in-place "
                    "form there)");
    }
  }
  return absl::OkStatus();
}

// A rank's part in a rooted collective: the root; a rank that gets from or gives to
// it; or, on an intercommunicator, a rank of the root's group other than the root
// (MPI_PROC_NULL), which takes no part.
enum class Role { kRoot, kOther, kIdle };

template <typename C>
absl::Status RoleOf(C& c, int root, Role* role) {
  if constexpr (kInter<C>) {
    if (root == MPI_ROOT) {
      *role = Role::kRoot;
    } else if (root == MPI_PROC_NULL) {
      *role = Role::kIdle;
    } else if (root >= 0 && root < c.remote_size()) {
      *role = Role::kOther;
    } else {
      return Refuse(c.local(), MPI_ERR_ROOT,
                    absl::StrCat("root ", root,
                                 " is not MPI_ROOT, MPI_PROC_NULL or a rank of the other group (",
                                 c.remote_size(), " ranks) of the intercommunicator"));
    }
    return absl::OkStatus();
  } else {
    if (root < 0 || root >= c.size()) {
      return Refuse(
          c, MPI_ERR_ROOT,
          absl::StrCat("root ", root, " is not a rank of the ", c.size(), "-rank communicator"));
    }
    *role = root == c.rank() ? Role::kRoot : Role::kOther;
    return absl::OkStatus();
  }
}

// A rooted collective's block: at the root from `root_side` (and also `other_side` on
// an intracommunicator's root unless in place, `root_holds_both`), elsewhere from
// `other_side`; none where the rank is idle.
template <typename C>
absl::Status RootedBlock(C& c, Role role, bool root_holds_both, const Side& root_side,
                         const Side& other_side, size_t* bytes) {
  *bytes = 0;
  switch (role) {
    case Role::kRoot:
      return BlockOf(LocalOf(c), !kInter<C> && root_holds_both, root_side, other_side, bytes);
    case Role::kOther:
      return BlockOf(LocalOf(c), false, other_side, root_side, bytes);
    case Role::kIdle:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// A rooted v-collective's arguments: the root's per-rank layout (`counts`, `displs` of
// `type`; empty elsewhere) and this rank's own block from `own`, or, in place at an
// intracommunicator's root, from the layout's own entry.
template <typename Count, typename Displ>
struct Vectors {
  const char* counts_name;
  const Count* counts;
  const Displ* displs;
  const char* type_name;
  MPI_Datatype type;
};

template <typename C, typename Count, typename Displ>
absl::Status RootedLayout(C& c, Role role, const Vectors<Count, Displ>& vectors, bool in_place,
                          const Side& own, ByteLayout& layout, size_t* own_bytes) {
  layout.counts.clear();
  layout.displs.clear();
  *own_bytes = 0;
  if (role == Role::kIdle) return absl::OkStatus();
  if (role == Role::kRoot) {
    RETURN_IF_ERROR(ToBytes(LocalOf(c), VectorLength(c), vectors.counts_name, vectors.counts,
                            "displs", vectors.displs, vectors.type_name, vectors.type, &layout));
    // An intercommunicator's root sends or receives nothing of its own.
    if constexpr (kInter<C>) return absl::OkStatus();
    *own_bytes = layout.counts[static_cast<size_t>(c.rank())];
  }
  if (in_place) return absl::OkStatus();
  return BlockBytes(LocalOf(c), own.count_name, own.count, own.type_name, own.type, own_bytes);
}

const int* const kNoDispls = nullptr;

int Barrier(const char* function, Launch launch, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) { return ZCOLL_MPI_RUN(launch, c, Barrier); });
}

int Bcast(const char* function, Launch launch, void* buffer, MPI_Count count, MPI_Datatype datatype,
          int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    size_t bytes = 0;
    if (role != Role::kIdle) {
      RETURN_IF_ERROR(BlockBytes(LocalOf(c), "count", count, "datatype", datatype, &bytes));
    }
    return ZCOLL_MPI_RUN(launch, c, Bcast, buffer, bytes, DataType::kByte, root);
  });
}

int Reduce(const char* function, Launch launch, const void* sendbuf, void* recvbuf, MPI_Count count,
           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    ASSIGN_OR_RETURN(const TypedOp reduction,
                     ReductionOf(LocalOf(c), role == Role::kIdle ? 0 : count, datatype, op));
    return ZCOLL_MPI_RUN(launch, c, Reduce, sendbuf, recvbuf, reduction.count, reduction.type,
                         *reduction.op, root);
  });
}

// Allreduce and Reduce_scatter_block: (sendbuf, recvbuf, count, type, op).
#define ZCOLL_MPI_REDUCTION(Name)                                                              \
  int Name(const char* function, Launch launch, const void* sendbuf, void* recvbuf,            \
           MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {                 \
    return Run(function, comm, launch, [&](auto& c) {                                          \
      RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));                                  \
      ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(LocalOf(c), count, datatype, op)); \
      return ZCOLL_MPI_RUN(launch, c, Name, sendbuf, recvbuf, reduction.count, reduction.type, \
                           *reduction.op);                                                     \
    });                                                                                        \
  }
ZCOLL_MPI_REDUCTION(Allreduce)
ZCOLL_MPI_REDUCTION(ReduceScatterBlock)
#undef ZCOLL_MPI_REDUCTION

// Scan and Exscan: intracommunicators only (the standard defines them nowhere else).
#define ZCOLL_MPI_SCAN(Name)                                                                     \
  int Name(const char* function, Launch launch, const void* sendbuf, void* recvbuf,              \
           MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {                   \
    return Run(function, comm, launch, [&](auto& c) {                                            \
      if constexpr (kInter<std::decay_t<decltype(c)>>) {                                         \
        return Refuse(c.local(), MPI_ERR_COMM,                                                   \
                      "comm is an intercommunicator, on which the standard defines no scan");    \
      } else {                                                                                   \
        ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, count, datatype, op));          \
        return ZCOLL_MPI_RUN(launch, c, Name, sendbuf, recvbuf, reduction.count, reduction.type, \
                             *reduction.op);                                                     \
      }                                                                                          \
    });                                                                                          \
  }
ZCOLL_MPI_SCAN(Scan)
ZCOLL_MPI_SCAN(Exscan)
#undef ZCOLL_MPI_SCAN

template <typename Count>
int ReduceScatter(const char* function, Launch launch, const void* sendbuf, void* recvbuf,
                  const Count* recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    // One element of the MPI type is reduction.count of the base type: the counts'
    // scale (the reduction keeps its datatype, so counts stay in elements). The counts
    // are the local group's, also on an intercommunicator.
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(LocalOf(c), 1, datatype, op));
    ByteLayout& counts = launch.layout(0);
    RETURN_IF_ERROR(ScaledLayout(LocalOf(c), static_cast<size_t>(c.size()), "recvcounts",
                                 recvcounts, nullptr, kNoDispls, reduction.count, &counts));
    return ZCOLL_MPI_RUN(launch, c, ReduceScatter, sendbuf, recvbuf, counts.counts, reduction.type,
                         *reduction.op);
  });
}

int Scatter(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
            MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
            int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    size_t block = 0;
    RETURN_IF_ERROR(RootedBlock(c, role, recvbuf != MPI_IN_PLACE, send, recv, &block));
    return ZCOLL_MPI_RUN(launch, c, Scatter, sendbuf, recvbuf, block, DataType::kByte, root);
  });
}

template <typename Count, typename Displ>
int Scatterv(const char* function, Launch launch, const void* sendbuf, const Count* sendcounts,
             const Displ* displs, MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
             MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    ByteLayout& layout = launch.layout(0);
    size_t received = 0;
    RETURN_IF_ERROR(RootedLayout(
        c, role, Vectors<Count, Displ>{"sendcounts", sendcounts, displs, "sendtype", sendtype},
        recvbuf == MPI_IN_PLACE, Side{"recvcount", recvcount, "recvtype", recvtype}, layout,
        &received));
    return ZCOLL_MPI_RUN(launch, c, Scatterv, sendbuf, layout.counts, layout.displs, recvbuf,
                         received, DataType::kByte, root);
  });
}

int Gather(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
           MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
           int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    size_t block = 0;
    RETURN_IF_ERROR(RootedBlock(c, role, sendbuf != MPI_IN_PLACE, recv, send, &block));
    return ZCOLL_MPI_RUN(launch, c, Gather, sendbuf, recvbuf, block, DataType::kByte, root);
  });
}

template <typename Count, typename Displ>
int Gatherv(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
            MPI_Datatype sendtype, void* recvbuf, const Count* recvcounts, const Displ* displs,
            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    Role role;
    RETURN_IF_ERROR(RoleOf(c, root, &role));
    ByteLayout& layout = launch.layout(0);
    size_t sent = 0;
    RETURN_IF_ERROR(RootedLayout(
        c, role, Vectors<Count, Displ>{"recvcounts", recvcounts, displs, "recvtype", recvtype},
        sendbuf == MPI_IN_PLACE, Side{"sendcount", sendcount, "sendtype", sendtype}, layout,
        &sent));
    return ZCOLL_MPI_RUN(launch, c, Gatherv, sendbuf, sent, recvbuf, layout.counts, layout.displs,
                         DataType::kByte, root);
  });
}

// Uniform blocks of `bytes` for each of `ranks`, as a v-collective's layout: an
// intercommunicator's Allgather or Alltoall whose two groups' blocks differ in size.
void UniformLayout(size_t ranks, size_t bytes, ByteLayout& layout) {
  layout.counts.assign(ranks, bytes);
  layout.displs.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) layout.displs[r] = r * bytes;
}

int Allgather(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
              MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
              MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    size_t block = 0;
    if constexpr (kInter<std::decay_t<decltype(c)>>) {
      // The two groups' blocks may differ: each rank sends one of its own size and
      // receives the other group's.
      size_t sent = 0;
      RETURN_IF_ERROR(BlockOf(c.local(), false, recv, send, &block));
      RETURN_IF_ERROR(BlockOf(c.local(), false, send, recv, &sent));
      ByteLayout& layout = launch.layout(0);
      UniformLayout(VectorLength(c), block, layout);
      return ZCOLL_MPI_RUN(launch, c, Allgatherv, sendbuf, sent, recvbuf, layout.counts,
                           layout.displs, DataType::kByte);
    } else {
      RETURN_IF_ERROR(BlockOf(c, sendbuf != MPI_IN_PLACE, recv, send, &block));
      return ZCOLL_MPI_RUN(launch, c, Allgather, sendbuf, recvbuf, block, DataType::kByte);
    }
  });
}

int Alltoall(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
             MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
             MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    size_t block = 0;
    if constexpr (kInter<std::decay_t<decltype(c)>>) {
      size_t sent = 0;
      RETURN_IF_ERROR(BlockOf(c.local(), false, recv, send, &block));
      RETURN_IF_ERROR(BlockOf(c.local(), false, send, recv, &sent));
      ByteLayout& sends = launch.layout(0);
      ByteLayout& receives = launch.layout(1);
      UniformLayout(VectorLength(c), sent, sends);
      UniformLayout(VectorLength(c), block, receives);
      return ZCOLL_MPI_RUN(launch, c, Alltoallv, sendbuf, sends.counts, sends.displs, recvbuf,
                           receives.counts, receives.displs, DataType::kByte);
    } else {
      RETURN_IF_ERROR(BlockOf(c, sendbuf != MPI_IN_PLACE, recv, send, &block));
      return ZCOLL_MPI_RUN(launch, c, Alltoall, sendbuf, recvbuf, block, DataType::kByte);
    }
  });
}

template <typename Count, typename Displ>
int Allgatherv(const char* function, Launch launch, const void* sendbuf, MPI_Count sendcount,
               MPI_Datatype sendtype, void* recvbuf, const Count* recvcounts, const Displ* displs,
               MPI_Datatype recvtype, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    ByteLayout& layout = launch.layout(0);
    RETURN_IF_ERROR(ToBytes(LocalOf(c), VectorLength(c), "recvcounts", recvcounts, "displs", displs,
                            "recvtype", recvtype, &layout));
    size_t sent = 0;
    if (sendbuf == MPI_IN_PLACE) {
      sent = layout.counts[static_cast<size_t>(c.rank())];  // (intracommunicators only)
    } else {
      RETURN_IF_ERROR(BlockBytes(LocalOf(c), "sendcount", sendcount, "sendtype", sendtype, &sent));
    }
    return ZCOLL_MPI_RUN(launch, c, Allgatherv, sendbuf, sent, recvbuf, layout.counts,
                         layout.displs, DataType::kByte);
  });
}

template <typename Count, typename Displ>
int Alltoallv(const char* function, Launch launch, const void* sendbuf, const Count* sendcounts,
              const Displ* sdispls, MPI_Datatype sendtype, void* recvbuf, const Count* recvcounts,
              const Displ* rdispls, MPI_Datatype recvtype, MPI_Comm comm) {
  return Run(function, comm, launch, [&](auto& c) {
    RETURN_IF_ERROR(NoInPlaceOnInter(c, sendbuf, recvbuf));
    ByteLayout& sends = launch.layout(0);
    ByteLayout& receives = launch.layout(1);
    sends.counts.clear();
    sends.displs.clear();
    RETURN_IF_ERROR(ToBytes(LocalOf(c), VectorLength(c), "recvcounts", recvcounts, "rdispls",
                            rdispls, "recvtype", recvtype, &receives));
    if (sendbuf != MPI_IN_PLACE) {
      RETURN_IF_ERROR(ToBytes(LocalOf(c), VectorLength(c), "sendcounts", sendcounts, "sdispls",
                              sdispls, "sendtype", sendtype, &sends));
    }
    return ZCOLL_MPI_RUN(launch, c, Alltoallv, sendbuf, sends.counts, sends.displs, recvbuf,
                         receives.counts, receives.displs, DataType::kByte);
  });
}

#undef ZCOLL_MPI_RUN

}  // namespace
}  // namespace zcoll::mpi

using zcoll::mpi::Launch;

int MPI_Barrier(MPI_Comm comm) {
  return zcoll::mpi::Barrier("MPI_Barrier", Launch::Blocking(), comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Barrier("MPI_Ibarrier", Launch::Nonblocking(request), comm);
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Barrier("MPI_Barrier_init", Launch::Persistent(info, request), comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return zcoll::mpi::Bcast("MPI_Bcast", Launch::Blocking(), buffer, count, datatype, root, comm);
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request* request) {
  return zcoll::mpi::Bcast("MPI_Ibcast", Launch::Nonblocking(request), buffer, count, datatype,
                           root, comm);
}

int MPI_Bcast_init(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Bcast("MPI_Bcast_init", Launch::Persistent(info, request), buffer, count,
                           datatype, root, comm);
}

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return zcoll::mpi::Bcast("MPI_Bcast_c", Launch::Blocking(), buffer, count, datatype, root, comm);
}

int MPI_Ibcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request* request) {
  return zcoll::mpi::Bcast("MPI_Ibcast_c", Launch::Nonblocking(request), buffer, count, datatype,
                           root, comm);
}

int MPI_Bcast_init_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Bcast("MPI_Bcast_init_c", Launch::Persistent(info, request), buffer, count,
                           datatype, root, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  return zcoll::mpi::Reduce("MPI_Reduce", Launch::Blocking(), sendbuf, recvbuf, count, datatype, op,
                            root, comm);
}

int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Reduce("MPI_Ireduce", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                            datatype, op, root, comm);
}

int MPI_Reduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Reduce("MPI_Reduce_init", Launch::Persistent(info, request), sendbuf, recvbuf,
                            count, datatype, op, root, comm);
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm) {
  return zcoll::mpi::Reduce("MPI_Reduce_c", Launch::Blocking(), sendbuf, recvbuf, count, datatype,
                            op, root, comm);
}

int MPI_Ireduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Reduce("MPI_Ireduce_c", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                            datatype, op, root, comm);
}

int MPI_Reduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Reduce("MPI_Reduce_init_c", Launch::Persistent(info, request), sendbuf,
                            recvbuf, count, datatype, op, root, comm);
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  return zcoll::mpi::Allreduce("MPI_Allreduce", Launch::Blocking(), sendbuf, recvbuf, count,
                               datatype, op, comm);
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Allreduce("MPI_Iallreduce", Launch::Nonblocking(request), sendbuf, recvbuf,
                               count, datatype, op, comm);
}

int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Allreduce("MPI_Allreduce_init", Launch::Persistent(info, request), sendbuf,
                               recvbuf, count, datatype, op, comm);
}

int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::Allreduce("MPI_Allreduce_c", Launch::Blocking(), sendbuf, recvbuf, count,
                               datatype, op, comm);
}

int MPI_Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Allreduce("MPI_Iallreduce_c", Launch::Nonblocking(request), sendbuf, recvbuf,
                               count, datatype, op, comm);
}

int MPI_Allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Allreduce("MPI_Allreduce_init_c", Launch::Persistent(info, request), sendbuf,
                               recvbuf, count, datatype, op, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Reduce_scatter_block", Launch::Blocking(), sendbuf,
                                        recvbuf, recvcount, datatype, op, comm);
}

int MPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request* request) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Ireduce_scatter_block", Launch::Nonblocking(request),
                                        sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request* request) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Reduce_scatter_block_init",
                                        Launch::Persistent(info, request), sendbuf, recvbuf,
                                        recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Reduce_scatter_block_c", Launch::Blocking(), sendbuf,
                                        recvbuf, recvcount, datatype, op, comm);
}

int MPI_Ireduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request* request) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Ireduce_scatter_block_c", Launch::Nonblocking(request),
                                        sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter_block_init_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request* request) {
  return zcoll::mpi::ReduceScatterBlock("MPI_Reduce_scatter_block_init_c",
                                        Launch::Persistent(info, request), sendbuf, recvbuf,
                                        recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::ReduceScatter("MPI_Reduce_scatter", Launch::Blocking(), sendbuf, recvbuf,
                                   recvcounts, datatype, op, comm);
}

int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::ReduceScatter("MPI_Ireduce_scatter", Launch::Nonblocking(request), sendbuf,
                                   recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request* request) {
  return zcoll::mpi::ReduceScatter("MPI_Reduce_scatter_init", Launch::Persistent(info, request),
                                   sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::ReduceScatter("MPI_Reduce_scatter_c", Launch::Blocking(), sendbuf, recvbuf,
                                   recvcounts, datatype, op, comm);
}

int MPI_Ireduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::ReduceScatter("MPI_Ireduce_scatter_c", Launch::Nonblocking(request), sendbuf,
                                   recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Reduce_scatter_init_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request* request) {
  return zcoll::mpi::ReduceScatter("MPI_Reduce_scatter_init_c", Launch::Persistent(info, request),
                                   sendbuf, recvbuf, recvcounts, datatype, op, comm);
}

int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  return zcoll::mpi::Scan("MPI_Scan", Launch::Blocking(), sendbuf, recvbuf, count, datatype, op,
                          comm);
}

int MPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Scan("MPI_Iscan", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                          datatype, op, comm);
}

int MPI_Scan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Scan("MPI_Scan_init", Launch::Persistent(info, request), sendbuf, recvbuf,
                          count, datatype, op, comm);
}

int MPI_Scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::Scan("MPI_Scan_c", Launch::Blocking(), sendbuf, recvbuf, count, datatype, op,
                          comm);
}

int MPI_Iscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Scan("MPI_Iscan_c", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                          datatype, op, comm);
}

int MPI_Scan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Scan("MPI_Scan_init_c", Launch::Persistent(info, request), sendbuf, recvbuf,
                          count, datatype, op, comm);
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  return zcoll::mpi::Exscan("MPI_Exscan", Launch::Blocking(), sendbuf, recvbuf, count, datatype, op,
                            comm);
}

int MPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Exscan("MPI_Iexscan", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                            datatype, op, comm);
}

int MPI_Exscan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Exscan("MPI_Exscan_init", Launch::Persistent(info, request), sendbuf, recvbuf,
                            count, datatype, op, comm);
}

int MPI_Exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm) {
  return zcoll::mpi::Exscan("MPI_Exscan_c", Launch::Blocking(), sendbuf, recvbuf, count, datatype,
                            op, comm);
}

int MPI_Iexscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Exscan("MPI_Iexscan_c", Launch::Nonblocking(request), sendbuf, recvbuf, count,
                            datatype, op, comm);
}

int MPI_Exscan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Exscan("MPI_Exscan_init_c", Launch::Persistent(info, request), sendbuf,
                            recvbuf, count, datatype, op, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return zcoll::mpi::Scatter("MPI_Scatter", Launch::Blocking(), sendbuf, sendcount, sendtype,
                             recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request* request) {
  return zcoll::mpi::Scatter("MPI_Iscatter", Launch::Nonblocking(request), sendbuf, sendcount,
                             sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request) {
  return zcoll::mpi::Scatter("MPI_Scatter_init", Launch::Persistent(info, request), sendbuf,
                             sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return zcoll::mpi::Scatter("MPI_Scatter_c", Launch::Blocking(), sendbuf, sendcount, sendtype,
                             recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Iscatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Request* request) {
  return zcoll::mpi::Scatter("MPI_Iscatter_c", Launch::Nonblocking(request), sendbuf, sendcount,
                             sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatter_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Scatter("MPI_Scatter_init_c", Launch::Persistent(info, request), sendbuf,
                             sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  return zcoll::mpi::Scatterv("MPI_Scatterv", Launch::Blocking(), sendbuf, sendcounts, displs,
                              sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Scatterv("MPI_Iscatterv", Launch::Nonblocking(request), sendbuf, sendcounts,
                              displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv_init(const void* sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Scatterv("MPI_Scatterv_init", Launch::Persistent(info, request), sendbuf,
                              sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
}

int MPI_Scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm) {
  return zcoll::mpi::Scatterv("MPI_Scatterv_c", Launch::Blocking(), sendbuf, sendcounts, displs,
                              sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Iscatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Scatterv("MPI_Iscatterv_c", Launch::Nonblocking(request), sendbuf, sendcounts,
                              displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                        MPI_Request* request) {
  return zcoll::mpi::Scatterv("MPI_Scatterv_init_c", Launch::Persistent(info, request), sendbuf,
                              sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return zcoll::mpi::Gather("MPI_Gather", Launch::Blocking(), sendbuf, sendcount, sendtype, recvbuf,
                            recvcount, recvtype, root, comm);
}

int MPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request* request) {
  return zcoll::mpi::Gather("MPI_Igather", Launch::Nonblocking(request), sendbuf, sendcount,
                            sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request* request) {
  return zcoll::mpi::Gather("MPI_Gather_init", Launch::Persistent(info, request), sendbuf,
                            sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return zcoll::mpi::Gather("MPI_Gather_c", Launch::Blocking(), sendbuf, sendcount, sendtype,
                            recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Igather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request* request) {
  return zcoll::mpi::Gather("MPI_Igather_c", Launch::Nonblocking(request), sendbuf, sendcount,
                            sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Gather("MPI_Gather_init_c", Launch::Persistent(info, request), sendbuf,
                            sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return zcoll::mpi::Gatherv("MPI_Gatherv", Launch::Blocking(), sendbuf, sendcount, sendtype,
                             recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Gatherv("MPI_Igatherv", Launch::Nonblocking(request), sendbuf, sendcount,
                             sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Gatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Gatherv("MPI_Gatherv_init", Launch::Persistent(info, request), sendbuf,
                             sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                             comm);
}

int MPI_Gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  int root, MPI_Comm comm) {
  return zcoll::mpi::Gatherv("MPI_Gatherv_c", Launch::Blocking(), sendbuf, sendcount, sendtype,
                             recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Igatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Gatherv("MPI_Igatherv_c", Launch::Nonblocking(request), sendbuf, sendcount,
                             sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

int MPI_Gatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                       MPI_Request* request) {
  return zcoll::mpi::Gatherv("MPI_Gatherv_init_c", Launch::Persistent(info, request), sendbuf,
                             sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                             comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Allgather("MPI_Allgather", Launch::Blocking(), sendbuf, sendcount, sendtype,
                               recvbuf, recvcount, recvtype, comm);
}

int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Allgather("MPI_Iallgather", Launch::Nonblocking(request), sendbuf, sendcount,
                               sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request* request) {
  return zcoll::mpi::Allgather("MPI_Allgather_init", Launch::Persistent(info, request), sendbuf,
                               sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Allgather("MPI_Allgather_c", Launch::Blocking(), sendbuf, sendcount, sendtype,
                               recvbuf, recvcount, recvtype, comm);
}

int MPI_Iallgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request* request) {
  return zcoll::mpi::Allgather("MPI_Iallgather_c", Launch::Nonblocking(request), sendbuf, sendcount,
                               sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Allgather("MPI_Allgather_init_c", Launch::Persistent(info, request), sendbuf,
                               sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return zcoll::mpi::Allgatherv("MPI_Allgatherv", Launch::Blocking(), sendbuf, sendcount, sendtype,
                                recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Allgatherv("MPI_Iallgatherv", Launch::Nonblocking(request), sendbuf, sendcount,
                                sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Allgatherv("MPI_Allgatherv_init", Launch::Persistent(info, request), sendbuf,
                                sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm) {
  return zcoll::mpi::Allgatherv("MPI_Allgatherv_c", Launch::Blocking(), sendbuf, sendcount,
                                sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Iallgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Allgatherv("MPI_Iallgatherv_c", Launch::Nonblocking(request), sendbuf,
                                sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Allgatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                          MPI_Request* request) {
  return zcoll::mpi::Allgatherv("MPI_Allgatherv_init_c", Launch::Persistent(info, request), sendbuf,
                                sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Alltoall("MPI_Alltoall", Launch::Blocking(), sendbuf, sendcount, sendtype,
                              recvbuf, recvcount, recvtype, comm);
}

int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Alltoall("MPI_Ialltoall", Launch::Nonblocking(request), sendbuf, sendcount,
                              sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request* request) {
  return zcoll::mpi::Alltoall("MPI_Alltoall_init", Launch::Persistent(info, request), sendbuf,
                              sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Alltoall("MPI_Alltoall_c", Launch::Blocking(), sendbuf, sendcount, sendtype,
                              recvbuf, recvcount, recvtype, comm);
}

int MPI_Ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request) {
  return zcoll::mpi::Alltoall("MPI_Ialltoall_c", Launch::Nonblocking(request), sendbuf, sendcount,
                              sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request* request) {
  return zcoll::mpi::Alltoall("MPI_Alltoall_init_c", Launch::Persistent(info, request), sendbuf,
                              sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Alltoallv("MPI_Alltoallv", Launch::Blocking(), sendbuf, sendcounts, sdispls,
                               sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request* request) {
  return zcoll::mpi::Alltoallv("MPI_Ialltoallv", Launch::Nonblocking(request), sendbuf, sendcounts,
                               sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request* request) {
  return zcoll::mpi::Alltoallv("MPI_Alltoallv_init", Launch::Persistent(info, request), sendbuf,
                               sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm);
}

int MPI_Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return zcoll::mpi::Alltoallv("MPI_Alltoallv_c", Launch::Blocking(), sendbuf, sendcounts, sdispls,
                               sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request* request) {
  return zcoll::mpi::Alltoallv("MPI_Ialltoallv_c", Launch::Nonblocking(request), sendbuf,
                               sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm);
}

int MPI_Alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request* request) {
  return zcoll::mpi::Alltoallv("MPI_Alltoallv_init_c", Launch::Persistent(info, request), sendbuf,
                               sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm);
}
