// The C functions of mpi/include/mpi.h but the collectives and requests: the
// environment, errors, communicators, datatypes, ops, info objects and memory, on
// zcoll's Communicator (call_support.h says how every call checks and fails).

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectives/communicator.h"
#include "collectives/intercommunicator.h"
#include "core/datatype.h"
#include "core/group.h"
#include "core/reduce_op.h"
#include "core/status_macros.h"
#include "core/version.h"
#include "mpi/call_support.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"
#include "ops/reduce.h"

namespace zcoll::mpi {
namespace {

static_assert(MPI_LONG_DOUBLE_INT - kDatatypeBase == static_cast<int>(kNumDataTypes),
              "mpi.h numbers every DataType");
static_assert(MPIX_AVG - kOpBase == static_cast<int>(kNumPredefinedOps),
              "mpi.h numbers every PredefinedOp");

MPI_User_function_c* const kNoCountFunction = nullptr;

// A user op over MPI_User_function (int lengths, called in pieces of at most INT_MAX)
// or MPI_User_function_c.
ReduceOp MakeUserOp(MPI_User_function* function, MPI_User_function_c* function_c,
                    bool commutative) {
  UserReduceFunction body = [function, function_c](const void* in, void* inout, size_t count,
                                                   DataType type) {
    MPI_Datatype handle = HandleOf(type);
    if (function_c != nullptr) {
      MPI_Count length = static_cast<MPI_Count>(count);
      function_c(const_cast<void*>(in), inout, &length, &handle);
      return;
    }
    const size_t element = DataTypeSize(type);
    while (count > 0) {
      int length = static_cast<int>(std::min<size_t>(count, INT_MAX));
      function(const_cast<void*>(in), inout, &length, &handle);
      in = static_cast<const char*>(in) + static_cast<size_t>(length) * element;
      inout = static_cast<char*>(inout) + static_cast<size_t>(length) * element;
      count -= static_cast<size_t>(length);
    }
  };
  // (CreateUser refuses an empty function only, which this is not.)
  return *ReduceOp::CreateUser(std::move(body), commutative, "MPI_Op_create");
}

}  // namespace
}  // namespace zcoll::mpi

using zcoll::Communicator;
using zcoll::DataType;
using zcoll::ReduceOp;
using zcoll::mpi::CommEntry;
using zcoll::mpi::Local;
using zcoll::mpi::OnCollective;
using zcoll::mpi::OnComm;
using zcoll::mpi::Refusal;
using zcoll::mpi::Runtime;
using zcoll::mpi::TypeShape;
using zcoll::mpi::WorldRank;

// ---- Environment.

int MPI_Init(int* argc, char*** argv) {
  Runtime& rt = Runtime::Get();
  if (rt.phase() != Runtime::Phase::kNotInitialized) {
    zcoll::mpi::EndJob(nullptr, "MPI_Init: MPI was initialized before (MPI_Init runs once)", 1);
  }
  absl::Status status = rt.Initialize();
  if (!status.ok()) zcoll::mpi::EndJob(nullptr, absl::StrCat("MPI_Init: ", status.message()), 1);
  return MPI_SUCCESS;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  if (provided == nullptr) {
    zcoll::mpi::EndJob(nullptr, "MPI_Init_thread: provided is a null pointer", 1);
  }
  const int result = MPI_Init(argc, argv);
  *provided = std::min(required, MPI_THREAD_SERIALIZED);
  return result;
}

int MPI_Query_thread(int* provided) {
  return Local("MPI_Query_thread", [&] {
    if (provided == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "provided");
    *provided = MPI_THREAD_SERIALIZED;
    return absl::OkStatus();
  });
}

int MPI_Finalize(void) {
  Runtime& rt = Runtime::Get();
  if (rt.phase() != Runtime::Phase::kRunning) return zcoll::mpi::NotRunning("MPI_Finalize");
  // Sends and receives the program freed while active complete first.
  rt.Drain();
  // A barrier, so that no rank's transport goes while another still sends to it.
  CommEntry* world = rt.Find(MPI_COMM_WORLD);
  absl::Status status;
  if (rt.AnyActive()) {
    // (Requests the program left pending still advance, for peers that wait on them.)
    absl::StatusOr<zcoll::Request> barrier = world->comm().IBarrier();
    status = barrier.ok() ? rt.Complete(*barrier) : barrier.status();
  } else {
    status = world->comm().Barrier();
  }
  const int result = status.ok() ? MPI_SUCCESS : zcoll::mpi::Raise(world, "MPI_Finalize", status);
  rt.Finalize();
  return result;
}

int MPI_Initialized(int* flag) {
  if (flag == nullptr) zcoll::mpi::EndJob(nullptr, "MPI_Initialized: flag is a null pointer", 1);
  *flag = Runtime::Get().phase() != Runtime::Phase::kNotInitialized;
  return MPI_SUCCESS;
}

int MPI_Finalized(int* flag) {
  if (flag == nullptr) zcoll::mpi::EndJob(nullptr, "MPI_Finalized: flag is a null pointer", 1);
  *flag = Runtime::Get().phase() == Runtime::Phase::kFinalized;
  return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
  Runtime& rt = Runtime::Get();
  CommEntry* entry = rt.phase() == Runtime::Phase::kRunning
                         ? (rt.Find(comm) != nullptr ? rt.Find(comm) : rt.Find(MPI_COMM_WORLD))
                         : nullptr;
  zcoll::mpi::EndJob(entry != nullptr ? &entry->comm() : nullptr,
                     absl::StrCat("MPI_Abort(errorcode ", errorcode, ") on rank ",
                                  entry != nullptr ? entry->comm().rank() : -1),
                     errorcode == 0 ? 1 : errorcode & 0xff);
}

double MPI_Wtime(void) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double MPI_Wtick(void) {
  timespec resolution;
  clock_getres(CLOCK_MONOTONIC, &resolution);
  return static_cast<double>(resolution.tv_sec) + 1e-9 * static_cast<double>(resolution.tv_nsec);
}

int MPI_Get_processor_name(char* name, int* resultlen) {
  return Local("MPI_Get_processor_name", [&] {
    if (name == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "name");
    if (resultlen == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "resultlen");
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0) name[0] = '\0';
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = static_cast<int>(std::strlen(name));
    return absl::OkStatus();
  });
}

int MPI_Get_version(int* version, int* subversion) {
  // Callable before MPI_Init and after MPI_Finalize (the standard says so).
  if (version == nullptr || subversion == nullptr) {
    zcoll::mpi::EndJob(nullptr, "MPI_Get_version: version or subversion is a null pointer", 1);
  }
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int MPI_Get_library_version(char* version, int* resultlen) {
  if (version == nullptr || resultlen == nullptr) {
    zcoll::mpi::EndJob(nullptr, "MPI_Get_library_version: an argument is a null pointer", 1);
  }
  const std::string text = absl::StrCat("zcoll ", zcoll::kVersion, " (MPI ", MPI_VERSION, ".",
                                        MPI_SUBVERSION, " C interface)");
  const size_t length = std::min<size_t>(text.size(), MPI_MAX_LIBRARY_VERSION_STRING - 1);
  std::memcpy(version, text.data(), length);
  version[length] = '\0';
  *resultlen = static_cast<int>(length);
  return MPI_SUCCESS;
}

// ---- Errors.

int MPI_Error_string(int errorcode, char* string, int* resultlen) {
  // Callable before MPI_Init and after MPI_Finalize.
  if (string == nullptr || resultlen == nullptr) {
    zcoll::mpi::EndJob(nullptr, "MPI_Error_string: string or resultlen is a null pointer", 1);
  }
  std::string text;
  int error_class = 0;
  if (!Runtime::Get().Describe(errorcode, &text, &error_class)) {
    text = absl::StrCat("MPI_Error_string: errorcode ", errorcode, " is not an error code");
  }
  const size_t length = std::min<size_t>(text.size(), MPI_MAX_ERROR_STRING - 1);
  std::memcpy(string, text.data(), length);
  string[length] = '\0';
  *resultlen = static_cast<int>(length);
  return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int* errorclass) {
  std::string text;
  int error_class = 0;
  if (errorclass == nullptr) {
    zcoll::mpi::EndJob(nullptr, "MPI_Error_class: errorclass is a null pointer", 1);
  }
  if (!Runtime::Get().Describe(errorcode, &text, &error_class)) {
    return Local("MPI_Error_class", [&] {
      return Refusal(MPI_ERR_ARG, absl::StrCat("errorcode ", errorcode, " is not an error code"));
    });
  }
  *errorclass = error_class;
  return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  return OnComm("MPI_Comm_set_errhandler", comm, [&](CommEntry& entry) {
    if (errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN &&
        errhandler != MPI_ERRORS_ABORT) {
      return Refusal(MPI_ERR_ERRHANDLER,
                     absl::StrFormat("rank %d: errhandler 0x%x is not MPI_ERRORS_ARE_FATAL, "
                                     "MPI_ERRORS_RETURN or MPI_ERRORS_ABORT",
                                     entry.comm().rank(), errhandler));
    }
    entry.errhandler = errhandler;
    return absl::OkStatus();
  });
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return OnComm("MPI_Comm_get_errhandler", comm, [&](CommEntry& entry) {
    if (errhandler == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "errhandler");
    *errhandler = entry.errhandler;
    return absl::OkStatus();
  });
}

int MPI_Errhandler_free(MPI_Errhandler* errhandler) {
  return Local("MPI_Errhandler_free", [&] {
    if (errhandler == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "errhandler");
    if (*errhandler != MPI_ERRORS_ARE_FATAL && *errhandler != MPI_ERRORS_RETURN &&
        *errhandler != MPI_ERRORS_ABORT) {
      return Refusal(MPI_ERR_ERRHANDLER,
                     absl::StrFormat("errhandler 0x%x is not an error handler", *errhandler));
    }
    *errhandler = MPI_ERRHANDLER_NULL;
    return absl::OkStatus();
  });
}

// ---- Communicators.

int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  return OnComm("MPI_Comm_rank", comm, [&](CommEntry& entry) {
    if (rank == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "rank");
    *rank = entry.comm().rank();
    return absl::OkStatus();
  });
}

int MPI_Comm_size(MPI_Comm comm, int* size) {
  return OnComm("MPI_Comm_size", comm, [&](CommEntry& entry) {
    if (size == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "size");
    *size = entry.comm().size();
    return absl::OkStatus();
  });
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_dup", comm, [&](CommEntry& entry) {
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "newcomm");
    const MPI_Errhandler inherited = entry.errhandler;
    if (entry.inter != nullptr) {
      absl::StatusOr<zcoll::Intercommunicator> dup = entry.inter->Dup();
      if (!dup.ok()) return dup.status();
      *newcomm = Runtime::Get().AddInter(*std::move(dup), inherited);
      return absl::OkStatus();
    }
    absl::StatusOr<Communicator> dup = entry.intra->Dup();
    if (!dup.ok()) return dup.status();
    *newcomm = Runtime::Get().Add(*std::move(dup), inherited);
    return absl::OkStatus();
  });
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_split", comm, [&](CommEntry& entry) {
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "newcomm");
    // zcoll's "no communicator" is -1, which MPI calls a bad color: it stays one.
    const int zcoll_color =
        color == MPI_UNDEFINED ? zcoll::kUndefinedColor : (color == -1 ? -2 : color);
    const MPI_Errhandler inherited = entry.errhandler;
    if (entry.inter != nullptr) {
      absl::StatusOr<std::optional<zcoll::Intercommunicator>> split =
          entry.inter->Split(zcoll_color, key);
      if (!split.ok()) return split.status();
      *newcomm = split->has_value() ? Runtime::Get().AddInter(**std::move(split), inherited)
                                    : MPI_COMM_NULL;
      return absl::OkStatus();
    }
    absl::StatusOr<std::optional<Communicator>> split = entry.intra->Split(zcoll_color, key);
    if (!split.ok()) return split.status();
    *newcomm =
        split->has_value() ? Runtime::Get().Add(**std::move(split), inherited) : MPI_COMM_NULL;
    return absl::OkStatus();
  });
}

namespace {
absl::Status GroupOf(MPI_Group handle, const char* name, zcoll::Group** group) {
  *group = Runtime::Get().FindGroup(handle);
  if (*group != nullptr) return absl::OkStatus();
  return Refusal(
      MPI_ERR_GROUP,
      absl::StrFormat("rank %d: %s %s is not a group (never one, or freed)", WorldRank(), name,
                      handle == MPI_GROUP_NULL ? std::string("MPI_GROUP_NULL")
                                               : absl::StrFormat("0x%x", handle)));
}

// A refused group argument of zcoll's (a rank outside the group, one named twice, a
// zero stride) as the standard's class.
absl::Status GroupRefusal(const absl::Status& status) {
  return Refusal(MPI_ERR_RANK, absl::StrCat("rank ", WorldRank(), ": ", status.message()));
}

// MPI_Comm_remote_group and remote_size: an intercommunicator's only.
absl::Status HasRemoteGroup(CommEntry& entry) {
  if (entry.inter != nullptr) return absl::OkStatus();
  return Refusal(MPI_ERR_COMM, absl::StrCat("rank ", entry.comm().rank(),
                                            ": comm is an intracommunicator, which has no remote "
                                            "group"));
}

// MPI_Comm_create and MPI_Comm_create_group: the new communicator, or MPI_COMM_NULL.
absl::Status AddMade(absl::StatusOr<std::optional<Communicator>> made, MPI_Errhandler inherited,
                     MPI_Comm* newcomm) {
  if (!made.ok()) return made.status();
  *newcomm = made->has_value() ? Runtime::Get().Add(**std::move(made), inherited) : MPI_COMM_NULL;
  return absl::OkStatus();
}
}  // namespace

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_create", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm();
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(c.rank(), "newcomm");
    zcoll::Group* members = nullptr;
    if (absl::Status status = GroupOf(group, "group", &members); !status.ok()) {
      return zcoll::mpi::Refuse(c, MPI_ERR_GROUP, status.message());
    }
    const MPI_Errhandler inherited = entry.errhandler;
    if (entry.inter != nullptr) {
      absl::StatusOr<std::optional<zcoll::Intercommunicator>> made = entry.inter->Create(*members);
      if (!made.ok()) return made.status();
      *newcomm =
          made->has_value() ? Runtime::Get().AddInter(**std::move(made), inherited) : MPI_COMM_NULL;
      return absl::OkStatus();
    }
    return AddMade(entry.intra->Create(*members), inherited, newcomm);
  });
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_create_group", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm();
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(c.rank(), "newcomm");
    if (entry.inter != nullptr) {
      return zcoll::mpi::Refuse(c, MPI_ERR_COMM,
                                "comm is an intercommunicator; MPI_Comm_create_group takes an "
                                "intracommunicator");
    }
    zcoll::Group* members = nullptr;
    if (absl::Status status = GroupOf(group, "group", &members); !status.ok()) {
      return zcoll::mpi::Refuse(c, MPI_ERR_GROUP, status.message());
    }
    if (tag < 0) {
      return zcoll::mpi::Refuse(c, MPI_ERR_TAG, absl::StrCat("tag ", tag, " is negative"));
    }
    return AddMade(entry.intra->CreateGroup(*members, tag), entry.errhandler, newcomm);
  });
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group* group) {
  return OnComm("MPI_Comm_group", comm, [&](CommEntry& entry) {
    if (group == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "group");
    *group = Runtime::Get().AddGroup(entry.comm().group());
    return absl::OkStatus();
  });
}

int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group* group) {
  return OnComm("MPI_Comm_remote_group", comm, [&](CommEntry& entry) {
    if (group == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "group");
    RETURN_IF_ERROR(HasRemoteGroup(entry));
    *group = Runtime::Get().AddGroup(entry.inter->remote_group());
    return absl::OkStatus();
  });
}

int MPI_Comm_remote_size(MPI_Comm comm, int* size) {
  return OnComm("MPI_Comm_remote_size", comm, [&](CommEntry& entry) {
    if (size == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "size");
    RETURN_IF_ERROR(HasRemoteGroup(entry));
    *size = entry.inter->remote_size();
    return absl::OkStatus();
  });
}

int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                         int remote_leader, int tag, MPI_Comm* newintercomm) {
  return OnCollective("MPI_Intercomm_create", local_comm, [&](CommEntry& entry) {
    Communicator& local = entry.comm();
    if (newintercomm == nullptr) return zcoll::mpi::NullPointer(local.rank(), "newintercomm");
    if (entry.inter != nullptr) {
      return zcoll::mpi::Refuse(local, MPI_ERR_COMM,
                                "local_comm is an intercommunicator; MPI_Intercomm_create takes "
                                "an intracommunicator");
    }
    // peer_comm is significant at the local leader only (others may pass anything).
    Communicator* peer = &local;
    if (local.rank() == local_leader) {
      CommEntry* peer_entry = Runtime::Get().Find(peer_comm);
      if (peer_entry == nullptr || peer_entry->inter != nullptr) {
        return zcoll::mpi::Refuse(local, MPI_ERR_COMM,
                                  absl::StrFormat("peer_comm 0x%x at the local leader is not an "
                                                  "intracommunicator",
                                                  peer_comm));
      }
      peer = &peer_entry->comm();
    }
    if (tag < 0) {
      return zcoll::mpi::Refuse(local, MPI_ERR_TAG, absl::StrCat("tag ", tag, " is negative"));
    }
    absl::StatusOr<zcoll::Intercommunicator> made =
        zcoll::Intercommunicator::Create(local, local_leader, *peer, remote_leader, tag);
    if (!made.ok()) return made.status();
    *newintercomm = Runtime::Get().AddInter(*std::move(made), entry.errhandler);
    return absl::OkStatus();
  });
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) {
  return OnCollective("MPI_Intercomm_merge", intercomm, [&](CommEntry& entry) {
    if (newintracomm == nullptr) {
      return zcoll::mpi::NullPointer(entry.comm().rank(), "newintracomm");
    }
    if (entry.inter == nullptr) {
      return zcoll::mpi::Refuse(entry.comm(), MPI_ERR_COMM, "intercomm is an intracommunicator");
    }
    absl::StatusOr<Communicator> merged = entry.inter->Merge(high != 0);
    if (!merged.ok()) return merged.status();
    *newintracomm = Runtime::Get().Add(*std::move(merged), entry.errhandler);
    return absl::OkStatus();
  });
}

// ---- Groups.

int MPI_Group_size(MPI_Group group, int* size) {
  return Local("MPI_Group_size", [&] {
    zcoll::Group* found = nullptr;
    RETURN_IF_ERROR(GroupOf(group, "group", &found));
    if (size == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "size");
    *size = found->size();
    return absl::OkStatus();
  });
}

int MPI_Group_rank(MPI_Group group, int* rank) {
  return Local("MPI_Group_rank", [&] {
    zcoll::Group* found = nullptr;
    RETURN_IF_ERROR(GroupOf(group, "group", &found));
    if (rank == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "rank");
    const int own = found->rank();
    *rank = own == zcoll::kUndefinedRank ? MPI_UNDEFINED : own;
    return absl::OkStatus();
  });
}

int MPI_Group_free(MPI_Group* group) {
  return Local("MPI_Group_free", [&] {
    if (group == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "group");
    zcoll::Group* found = nullptr;
    RETURN_IF_ERROR(GroupOf(*group, "group", &found));
    if (*group == MPI_GROUP_EMPTY) {
      return Refusal(MPI_ERR_GROUP, absl::StrCat("rank ", WorldRank(),
                                                 ": group is MPI_GROUP_EMPTY, which is never "
                                                 "freed"));
    }
    Runtime::Get().RemoveGroup(*group);
    *group = MPI_GROUP_NULL;
    return absl::OkStatus();
  });
}

namespace {
// A group call that makes `*newgroup` from `group` by `make`.
template <typename Make>
int NewGroup(const char* function, MPI_Group group, int n, const void* list, MPI_Group* newgroup,
             Make&& make) {
  return Local(function, [&] {
    zcoll::Group* found = nullptr;
    RETURN_IF_ERROR(GroupOf(group, "group", &found));
    if (newgroup == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "newgroup");
    if (n < 0) {
      return Refusal(MPI_ERR_ARG, absl::StrCat("rank ", WorldRank(), ": n ", n, " is negative"));
    }
    if (n > 0 && list == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "ranks");
    absl::StatusOr<zcoll::Group> made = make(*found);
    if (!made.ok()) return GroupRefusal(made.status());
    *newgroup = Runtime::Get().AddGroup(*std::move(made));
    return absl::OkStatus();
  });
}

std::vector<zcoll::Group::Range> RangesOf(int n, int ranges[][3]) {
  std::vector<zcoll::Group::Range> out(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = {ranges[i][0], ranges[i][1], ranges[i][2]};
  return out;
}

// Union, intersection, difference: `*newgroup` from two groups.
template <typename Combine>
int CombineGroups(const char* function, MPI_Group group1, MPI_Group group2, MPI_Group* newgroup,
                  Combine&& combine) {
  return Local(function, [&] {
    zcoll::Group *first = nullptr, *second = nullptr;
    RETURN_IF_ERROR(GroupOf(group1, "group1", &first));
    RETURN_IF_ERROR(GroupOf(group2, "group2", &second));
    if (newgroup == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "newgroup");
    *newgroup = Runtime::Get().AddGroup(combine(*first, *second));
    return absl::OkStatus();
  });
}
}  // namespace

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  return NewGroup("MPI_Group_incl", group, n, ranks, newgroup, [&](const zcoll::Group& g) {
    return g.Incl(absl::MakeConstSpan(ranks, static_cast<size_t>(n)));
  });
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  return NewGroup("MPI_Group_excl", group, n, ranks, newgroup, [&](const zcoll::Group& g) {
    return g.Excl(absl::MakeConstSpan(ranks, static_cast<size_t>(n)));
  });
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  return NewGroup("MPI_Group_range_incl", group, n, ranges, newgroup,
                  [&](const zcoll::Group& g) { return g.RangeIncl(RangesOf(n, ranges)); });
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  return NewGroup("MPI_Group_range_excl", group, n, ranges, newgroup,
                  [&](const zcoll::Group& g) { return g.RangeExcl(RangesOf(n, ranges)); });
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return CombineGroups("MPI_Group_union", group1, group2, newgroup, zcoll::Group::Union);
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return CombineGroups("MPI_Group_intersection", group1, group2, newgroup,
                       zcoll::Group::Intersection);
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return CombineGroups("MPI_Group_difference", group1, group2, newgroup, zcoll::Group::Difference);
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                              int ranks2[]) {
  return Local("MPI_Group_translate_ranks", [&] {
    zcoll::Group *first = nullptr, *second = nullptr;
    RETURN_IF_ERROR(GroupOf(group1, "group1", &first));
    RETURN_IF_ERROR(GroupOf(group2, "group2", &second));
    if (n < 0) {
      return Refusal(MPI_ERR_ARG, absl::StrCat("rank ", WorldRank(), ": n ", n, " is negative"));
    }
    if (n > 0 && (ranks1 == nullptr || ranks2 == nullptr)) {
      return zcoll::mpi::NullPointer(WorldRank(), ranks1 == nullptr ? "ranks1" : "ranks2");
    }
    absl::StatusOr<std::vector<int>> translated =
        first->TranslateRanks(absl::MakeConstSpan(ranks1, static_cast<size_t>(n)), *second);
    if (!translated.ok()) return GroupRefusal(translated.status());
    for (int i = 0; i < n; ++i) {
      const int rank = (*translated)[static_cast<size_t>(i)];
      ranks2[i] = rank == zcoll::kUndefinedRank ? MPI_UNDEFINED : rank;
    }
    return absl::OkStatus();
  });
}

namespace {
int CompareResult(zcoll::GroupComparison comparison, int identical) {
  switch (comparison) {
    case zcoll::GroupComparison::kIdentical:
      return identical;
    case zcoll::GroupComparison::kSimilar:
      return MPI_SIMILAR;
    case zcoll::GroupComparison::kUnequal:
      return MPI_UNEQUAL;
  }
  return MPI_UNEQUAL;
}
}  // namespace

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int* result) {
  return Local("MPI_Group_compare", [&] {
    zcoll::Group *first = nullptr, *second = nullptr;
    RETURN_IF_ERROR(GroupOf(group1, "group1", &first));
    RETURN_IF_ERROR(GroupOf(group2, "group2", &second));
    if (result == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "result");
    *result = CompareResult(zcoll::Group::Compare(*first, *second), MPI_IDENT);
    return absl::OkStatus();
  });
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (comm == nullptr) {
    return Local("MPI_Comm_free", [] { return zcoll::mpi::NullPointer(WorldRank(), "comm"); });
  }
  const MPI_Comm handle = *comm;
  return OnComm("MPI_Comm_free", handle, [&](CommEntry& entry) {
    if (handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF) {
      return Refusal(MPI_ERR_COMM,
                     absl::StrCat("rank ", entry.comm().rank(), ": comm is ",
                                  handle == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "MPI_COMM_SELF",
                                  ", which MPI_Finalize frees"));
    }
    Runtime::Get().Remove(handle);
    *comm = MPI_COMM_NULL;
    return absl::OkStatus();
  });
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int* result) {
  return OnComm("MPI_Comm_compare", comm1, [&](CommEntry& first) {
    CommEntry* second = Runtime::Get().Find(comm2);
    if (second == nullptr) {
      return Refusal(MPI_ERR_COMM, absl::StrFormat("rank %d: comm2 0x%x is not a communicator",
                                                   first.comm().rank(), comm2));
    }
    if (result == nullptr) return zcoll::mpi::NullPointer(first.comm().rank(), "result");
    if (comm1 == comm2) {
      *result = MPI_IDENT;
      return absl::OkStatus();
    }
    if ((first.inter == nullptr) != (second->inter == nullptr)) {
      *result = MPI_UNEQUAL;
      return absl::OkStatus();
    }
    // Groups (and, for intercommunicators, remote groups too) in the same order:
    // congruent; the same members: similar.
    int local = CompareResult(zcoll::Group::Compare(first.comm().group(), second->comm().group()),
                              MPI_CONGRUENT);
    if (first.inter != nullptr) {
      const int remote = CompareResult(
          zcoll::Group::Compare(first.inter->remote_group(), second->inter->remote_group()),
          MPI_CONGRUENT);
      local = std::max(local, remote);  // MPI_CONGRUENT < MPI_SIMILAR < MPI_UNEQUAL
    }
    *result = local;
    return absl::OkStatus();
  });
}

int MPI_Comm_test_inter(MPI_Comm comm, int* flag) {
  return OnComm("MPI_Comm_test_inter", comm, [&](CommEntry& entry) {
    if (flag == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "flag");
    *flag = entry.inter != nullptr ? 1 : 0;
    return absl::OkStatus();
  });
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_split_type", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm();
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(c.rank(), "newcomm");
    if (entry.inter != nullptr) {
      return zcoll::mpi::Refuse(c, MPI_ERR_COMM,
                                "comm is an intercommunicator; zcoll splits intracommunicators "
                                "by type");
    }
    RETURN_IF_ERROR(zcoll::mpi::CheckInfo(&c, "info", info));
    if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED) {
      return zcoll::mpi::Refuse(c, MPI_ERR_ARG,
                                absl::StrCat("split_type ", split_type,
                                             " is not MPI_COMM_TYPE_SHARED or MPI_UNDEFINED "
                                             "(the kinds zcoll has)"));
    }
    // The ranks of one node share memory: the node's number is the color.
    const int color =
        split_type == MPI_UNDEFINED ? zcoll::kUndefinedColor : c.topology().node_of(c.rank());
    absl::StatusOr<std::optional<Communicator>> split = c.Split(color, key);
    if (!split.ok()) return split.status();
    const MPI_Errhandler inherited = entry.errhandler;
    *newcomm =
        split->has_value() ? Runtime::Get().Add(**std::move(split), inherited) : MPI_COMM_NULL;
    return absl::OkStatus();
  });
}

int MPI_Comm_set_name(MPI_Comm comm, const char* comm_name) {
  return OnComm("MPI_Comm_set_name", comm, [&](CommEntry& entry) {
    if (comm_name == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "comm_name");
    entry.name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
    return absl::OkStatus();
  });
}

int MPI_Comm_get_name(MPI_Comm comm, char* comm_name, int* resultlen) {
  return OnComm("MPI_Comm_get_name", comm, [&](CommEntry& entry) {
    if (comm_name == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "comm_name");
    if (resultlen == nullptr) return zcoll::mpi::NullPointer(entry.comm().rank(), "resultlen");
    zcoll::mpi::CopyOut(entry.name, comm_name, MPI_MAX_OBJECT_NAME, resultlen);
    return absl::OkStatus();
  });
}

// ---- Info objects: keys and values a program passes (zcoll reads none of them yet;
// they are kept and returned as the standard says).

namespace {
absl::Status FindInfo(MPI_Info info, zcoll::mpi::InfoEntry** entry) {
  *entry = Runtime::Get().FindInfo(info);
  if (*entry != nullptr) return absl::OkStatus();
  return Refusal(MPI_ERR_INFO, absl::StrFormat("rank %d: info 0x%x is not an info object "
                                               "(MPI_INFO_NULL, never one, or freed)",
                                               WorldRank(), info));
}

absl::Status CheckKey(const char* key) {
  if (key == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "key");
  const size_t length = strnlen(key, MPI_MAX_INFO_KEY + 1);
  if (length == 0 || length > MPI_MAX_INFO_KEY) {
    return Refusal(
        MPI_ERR_INFO,
        absl::StrCat("rank ", WorldRank(), ": key \"", absl::string_view(key, length),
                     "\" is empty or longer than MPI_MAX_INFO_KEY (", MPI_MAX_INFO_KEY, ")"));
  }
  return absl::OkStatus();
}
}  // namespace

int MPI_Info_create(MPI_Info* info) {
  return Local("MPI_Info_create", [&] {
    if (info == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "info");
    *info = Runtime::Get().AddInfo({});
    return absl::OkStatus();
  });
}

int MPI_Info_dup(MPI_Info info, MPI_Info* newinfo) {
  return Local("MPI_Info_dup", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    if (newinfo == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "newinfo");
    *newinfo = Runtime::Get().AddInfo(*entry);
    return absl::OkStatus();
  });
}

int MPI_Info_free(MPI_Info* info) {
  return Local("MPI_Info_free", [&] {
    if (info == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "info");
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(*info, &entry));
    Runtime::Get().RemoveInfo(*info);
    *info = MPI_INFO_NULL;
    return absl::OkStatus();
  });
}

int MPI_Info_set(MPI_Info info, const char* key, const char* value) {
  return Local("MPI_Info_set", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    RETURN_IF_ERROR(CheckKey(key));
    if (value == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "value");
    if (strnlen(value, MPI_MAX_INFO_VAL + 1) > MPI_MAX_INFO_VAL) {
      return Refusal(MPI_ERR_INFO,
                     absl::StrCat("rank ", WorldRank(), ": the value of key \"", key,
                                  "\" is longer than MPI_MAX_INFO_VAL (", MPI_MAX_INFO_VAL, ")"));
    }
    for (auto& [existing, old_value] : entry->entries) {
      if (existing == key) {
        old_value = value;
        return absl::OkStatus();
      }
    }
    entry->entries.emplace_back(key, value);
    return absl::OkStatus();
  });
}

int MPI_Info_delete(MPI_Info info, const char* key) {
  return Local("MPI_Info_delete", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    RETURN_IF_ERROR(CheckKey(key));
    for (auto it = entry->entries.begin(); it != entry->entries.end(); ++it) {
      if (it->first == key) {
        entry->entries.erase(it);
        return absl::OkStatus();
      }
    }
    return Refusal(MPI_ERR_INFO,
                   absl::StrCat("rank ", WorldRank(), ": key \"", key, "\" is not set"));
  });
}

int MPI_Info_get_string(MPI_Info info, const char* key, int* buflen, char* value, int* flag) {
  return Local("MPI_Info_get_string", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    RETURN_IF_ERROR(CheckKey(key));
    if (buflen == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "buflen");
    if (flag == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "flag");
    *flag = 0;
    for (const auto& [existing, stored] : entry->entries) {
      if (existing != key) continue;
      *flag = 1;
      // The standard's contract: copy at most *buflen - 1 characters, and return the
      // value's full length plus one, so that a caller with *buflen 0 learns the size.
      const int capacity = *buflen;
      if (capacity > 0) {
        if (value == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "value");
        int copied = 0;
        zcoll::mpi::CopyOut(stored, value, capacity, &copied);
      }
      *buflen = static_cast<int>(stored.size()) + 1;
    }
    return absl::OkStatus();
  });
}

int MPI_Info_get_nkeys(MPI_Info info, int* nkeys) {
  return Local("MPI_Info_get_nkeys", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    if (nkeys == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "nkeys");
    *nkeys = static_cast<int>(entry->entries.size());
    return absl::OkStatus();
  });
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char* key) {
  return Local("MPI_Info_get_nthkey", [&] {
    zcoll::mpi::InfoEntry* entry = nullptr;
    RETURN_IF_ERROR(FindInfo(info, &entry));
    if (key == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "key");
    if (n < 0 || static_cast<size_t>(n) >= entry->entries.size()) {
      return Refusal(MPI_ERR_ARG,
                     absl::StrCat("rank ", WorldRank(), ": n ", n,
                                  " is not below the number of keys, ", entry->entries.size()));
    }
    int length = 0;
    zcoll::mpi::CopyOut(entry->entries[static_cast<size_t>(n)].first, key, MPI_MAX_INFO_KEY + 1,
                        &length);
    return absl::OkStatus();
  });
}

// ---- Memory: zcoll's node-shared buffers, so that MPI programs get the zero-copy path.

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  return Local("MPI_Alloc_mem", [&] {
    RETURN_IF_ERROR(zcoll::mpi::CheckInfo(nullptr, "info", info));
    if (baseptr == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "baseptr");
    if (size < 0) {
      return Refusal(MPI_ERR_ARG,
                     absl::StrCat("rank ", WorldRank(), ": size ", size, " is negative"));
    }
    // A size of 0 still gets a pointer of its own, which MPI_Free_mem takes.
    absl::StatusOr<void*> memory =
        Communicator::AllocateBuffer(std::max<size_t>(static_cast<size_t>(size), 1));
    if (!memory.ok()) {
      return Refusal(MPI_ERR_NO_MEM,
                     absl::StrCat("rank ", WorldRank(), ": ", memory.status().message()));
    }
    std::memcpy(baseptr, &*memory, sizeof(void*));
    return absl::OkStatus();
  });
}

int MPI_Free_mem(void* base) {
  return Local("MPI_Free_mem", [&] {
    absl::Status freed = Communicator::FreeBuffer(base);
    if (freed.ok()) return freed;
    return Refusal(MPI_ERR_BUFFER, absl::StrCat("rank ", WorldRank(), ": ", freed.message()));
  });
}

// ---- Datatypes.

namespace {
absl::Status DatatypeOnly(MPI_Datatype datatype, TypeShape* shape, bool committed_or_not = true) {
  return zcoll::mpi::TypeOf(nullptr, "datatype", datatype, shape, committed_or_not);
}
}  // namespace

int MPI_Type_size_c(MPI_Datatype datatype, MPI_Count* size) {
  return Local("MPI_Type_size", [&] {
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(datatype, &shape));
    if (size == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "size");
    *size = static_cast<MPI_Count>(shape.bytes());
    return absl::OkStatus();
  });
}

int MPI_Type_size(MPI_Datatype datatype, int* size) {
  if (size == nullptr) return MPI_Type_size_c(datatype, nullptr);
  MPI_Count bytes = 0;
  const int result = MPI_Type_size_c(datatype, &bytes);
  if (result != MPI_SUCCESS) return result;
  // The standard's answer for a size an int cannot hold.
  *size = bytes > INT_MAX ? MPI_UNDEFINED : static_cast<int>(bytes);
  return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent) {
  return Local("MPI_Type_get_extent", [&] {
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(datatype, &shape));
    if (lb == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "lb");
    if (extent == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "extent");
    *lb = 0;
    *extent = static_cast<MPI_Aint>(shape.bytes());
    return absl::OkStatus();
  });
}

int MPI_Type_get_name(MPI_Datatype datatype, char* type_name, int* resultlen) {
  return Local("MPI_Type_get_name", [&] {
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(datatype, &shape));
    if (type_name == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "type_name");
    if (resultlen == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "resultlen");
    // A derived type has no name (the standard's empty string); the extensions have no
    // MPI name: their mpi.h names.
    std::string name;
    if (!shape.derived) name = std::string(zcoll::GetDataTypeInfo(shape.base).mpi_name);
    if (!shape.derived && shape.base == DataType::kFloat16) name = "MPIX_C_FLOAT16";
    if (!shape.derived && shape.base == DataType::kBfloat16) name = "MPIX_BFLOAT16";
    zcoll::mpi::CopyOut(name, type_name, MPI_MAX_OBJECT_NAME, resultlen);
    return absl::OkStatus();
  });
}

int MPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return Local("MPI_Type_contiguous", [&] {
    TypeShape shape;
    RETURN_IF_ERROR(zcoll::mpi::TypeOf(nullptr, "oldtype", oldtype, &shape, true));
    if (newtype == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "newtype");
    if (count < 0) {
      return Refusal(MPI_ERR_COUNT,
                     absl::StrCat("rank ", WorldRank(), ": count ", count, " is negative"));
    }
    if (shape.elements != 0 && static_cast<unsigned long long>(count) > SIZE_MAX / shape.bytes()) {
      return Refusal(MPI_ERR_COUNT, absl::StrCat("rank ", WorldRank(), ": count ", count,
                                                 " elements of oldtype overflow a size"));
    }
    *newtype = Runtime::Get().AddType(
        zcoll::mpi::DerivedType{shape.base, static_cast<size_t>(count) * shape.elements, false});
    return absl::OkStatus();
  });
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return MPI_Type_contiguous_c(count, oldtype, newtype);
}

int MPI_Type_commit(MPI_Datatype* datatype) {
  return Local("MPI_Type_commit", [&] {
    if (datatype == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "datatype");
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(*datatype, &shape));
    // A predefined type is committed already.
    if (zcoll::mpi::DerivedType* derived = Runtime::Get().FindType(*datatype)) {
      derived->committed = true;
    }
    return absl::OkStatus();
  });
}

int MPI_Type_free(MPI_Datatype* datatype) {
  return Local("MPI_Type_free", [&] {
    if (datatype == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "datatype");
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(*datatype, &shape));
    if (!shape.derived) {
      return Refusal(MPI_ERR_TYPE, absl::StrFormat("rank %d: datatype 0x%x is predefined, and "
                                                   "predefined datatypes are never freed",
                                                   WorldRank(), *datatype));
    }
    // Nothing in flight holds it: collectives took its shape when they started.
    Runtime::Get().RemoveType(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return absl::OkStatus();
  });
}

int MPI_Get_count_c(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count) {
  return Local("MPI_Get_count", [&] {
    if (status == MPI_STATUS_IGNORE) {
      return Refusal(MPI_ERR_ARG,
                     absl::StrCat("rank ", WorldRank(), ": status is MPI_STATUS_IGNORE (null)"));
    }
    TypeShape shape;
    RETURN_IF_ERROR(DatatypeOnly(datatype, &shape, /*committed_or_not=*/false));
    if (count == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "count");
    const MPI_Count bytes = status->zcoll_bytes;
    const MPI_Count unit = static_cast<MPI_Count>(shape.bytes());
    if (unit == 0) {
      *count = bytes == 0 ? 0 : MPI_UNDEFINED;
    } else {
      *count = bytes % unit == 0 ? bytes / unit : MPI_UNDEFINED;
    }
    return absl::OkStatus();
  });
}

int MPI_Get_count(const MPI_Status* status, MPI_Datatype datatype, int* count) {
  if (count == nullptr) return MPI_Get_count_c(status, datatype, nullptr);
  MPI_Count elements = 0;
  const int result = MPI_Get_count_c(status, datatype, &elements);
  if (result != MPI_SUCCESS) return result;
  *count = elements > INT_MAX ? MPI_UNDEFINED : static_cast<int>(elements);
  return MPI_SUCCESS;
}

// ---- Ops.

int MPI_Op_create(MPI_User_function* user_fn, int commute, MPI_Op* op) {
  return Local("MPI_Op_create", [&] {
    if (user_fn == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "user_fn");
    if (op == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "op");
    *op = Runtime::Get().AddOp(
        zcoll::mpi::MakeUserOp(user_fn, zcoll::mpi::kNoCountFunction, commute != 0));
    return absl::OkStatus();
  });
}

int MPI_Op_create_c(MPI_User_function_c* user_fn, int commute, MPI_Op* op) {
  return Local("MPI_Op_create_c", [&] {
    if (user_fn == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "user_fn");
    if (op == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "op");
    *op = Runtime::Get().AddOp(zcoll::mpi::MakeUserOp(nullptr, user_fn, commute != 0));
    return absl::OkStatus();
  });
}

int MPI_Op_free(MPI_Op* op) {
  return Local("MPI_Op_free", [&] {
    if (op == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "op");
    if (*op < zcoll::mpi::kUserOpBase || Runtime::Get().FindOp(*op) == nullptr) {
      return Refusal(MPI_ERR_OP, absl::StrFormat("op 0x%x is not an op of MPI_Op_create "
                                                 "(predefined ops are never freed)",
                                                 *op));
    }
    Runtime::Get().RemoveOp(*op);
    *op = MPI_OP_NULL;
    return absl::OkStatus();
  });
}

int MPI_Op_commutative(MPI_Op op, int* commute) {
  return Local("MPI_Op_commutative", [&] {
    const ReduceOp* found = Runtime::Get().FindOp(op);
    if (found == nullptr) {
      return Refusal(MPI_ERR_OP, absl::StrFormat("op 0x%x is not an op", op));
    }
    if (commute == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "commute");
    *commute = found->commutative() ? 1 : 0;
    return absl::OkStatus();
  });
}

int MPI_Reduce_local_c(const void* inbuf, void* inoutbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op) {
  return Local("MPI_Reduce_local", [&] {
    TypeShape shape;
    RETURN_IF_ERROR(zcoll::mpi::TypeOf(nullptr, "datatype", datatype, &shape));
    if (count < 0) {
      return Refusal(MPI_ERR_COUNT,
                     absl::StrCat("rank ", WorldRank(), ": count ", count, " is negative"));
    }
    const ReduceOp* reduce_op = nullptr;
    RETURN_IF_ERROR(zcoll::mpi::OpFor(nullptr, op, shape.base, &reduce_op));
    if (shape.derived && !reduce_op->is_predefined()) {
      return Refusal(MPI_ERR_TYPE, absl::StrCat("rank ", WorldRank(),
                                                ": datatype is derived, and zcoll calls a user "
                                                "op with predefined datatypes only"));
    }
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE) {
      return Refusal(MPI_ERR_BUFFER, absl::StrCat("rank ", WorldRank(),
                                                  ": MPI_IN_PLACE is not allowed here (the "
                                                  "standard's rule)"));
    }
    return zcoll::ReduceLocal(*reduce_op, shape.base, inbuf, inoutbuf,
                              static_cast<size_t>(count) * shape.elements);
  });
}

int MPI_Reduce_local(const void* inbuf, void* inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op) {
  return MPI_Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
}
