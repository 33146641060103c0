// The C functions of mpi/include/mpi.h, on zcoll's Communicator.
//
// Every call checks its handles and arguments first, so that a refusal carries the
// standard's error class (MPI_ERR_COUNT, MPI_ERR_ROOT, ...) and a sentence naming the
// argument and the rank. A collective refused on one rank fails the job
// (Communicator::FailJob), as zcoll's own API does, so that the other ranks return at
// once instead of waiting for it. Then the communicator's error handler runs:
// MPI_ERRORS_RETURN returns the code, MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT print
// the message and end the job (mpi.h).
//
// Data-moving collectives go to zcoll in bytes (MPI_BYTE with the blocks' sizes), so
// that a send type and a receive type of one signature (4 MPI_INT against 4
// MPI_INT32_T) meet; reductions keep the datatype, which the op needs.

#include "mpi/include/mpi.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "core/status_macros.h"
#include "core/version.h"
#include "mpi/runtime.h"
#include "ops/reduce.h"

namespace zcoll::mpi {
namespace {

static_assert(MPI_LONG_DOUBLE_INT - kDatatypeBase == static_cast<int>(kNumDataTypes),
              "mpi.h numbers every DataType");
static_assert(MPIX_AVG - kOpBase == static_cast<int>(kNumPredefinedOps),
              "mpi.h numbers every PredefinedOp");

Runtime& runtime() { return Runtime::Get(); }

// Ends the process after a fatal error (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT, or an
// error with no communicator to handle it): `comm`, when known, fails the job first so
// that the other ranks' calls end at once, naming this one.
[[noreturn]] void EndJob(Communicator* comm, absl::string_view message, int exit_code) {
  std::fprintf(stderr, "zcoll MPI: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  if (comm != nullptr) comm->Abort(message).IgnoreError();
  std::_Exit(exit_code);
}

// Runs the error handler of `entry` (null: MPI_COMM_SELF's, the standard's handler for
// errors tied to no valid communicator) on `status` of `function`.
int Raise(CommEntry* entry, const char* function, const absl::Status& status) {
  const std::string message = absl::StrCat(function, ": ", status.message());
  Runtime& rt = runtime();
  if (rt.phase() != Runtime::Phase::kRunning) EndJob(nullptr, message, 1);
  CommEntry* handler_of = entry != nullptr ? entry : rt.Find(MPI_COMM_SELF);
  // The code's message names the function; the class (a Refusal's payload) stays.
  absl::Status named(status.code(), message);
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { named.SetPayload(url, payload); });
  const int code = rt.CodeFor(named);
  if (handler_of->errhandler == MPI_ERRORS_RETURN) return code;
  Communicator* world = &rt.Find(MPI_COMM_WORLD)->comm;
  EndJob(entry != nullptr ? &entry->comm : world, message, 1);
}

// Calls before MPI_Init or after MPI_Finalize have no handler to run: fatal.
int NotRunning(const char* function) {
  const bool finalized = runtime().phase() == Runtime::Phase::kFinalized;
  EndJob(nullptr,
         absl::StrCat(function,
                      finalized ? " was called after MPI_Finalize" : " was called before MPI_Init"),
         1);
}

absl::Status Refuse(Communicator& comm, int error_class, absl::string_view detail);

// Whether a call with a bad communicator handle leaves other ranks waiting for it.
enum class Scope { kLocal, kCollective };

// The body of a call on communicator `handle`: checks the phase and the handle, runs
// `body` on the communicator, and raises its error, if any. A collective given a bad
// handle fails the job (through MPI_COMM_WORLD, whose job every communicator shares),
// as any refused collective does, since the other ranks' calls would wait for it.
template <typename Body>
int OnComm(const char* function, MPI_Comm handle, Body&& body, Scope scope = Scope::kLocal) {
  Runtime& rt = runtime();
  if (ABSL_PREDICT_FALSE(rt.phase() != Runtime::Phase::kRunning)) return NotRunning(function);
  CommEntry* entry = rt.Find(handle);
  if (ABSL_PREDICT_FALSE(entry == nullptr)) {
    Communicator& world = rt.Find(MPI_COMM_WORLD)->comm;
    const std::string detail =
        handle == MPI_COMM_NULL
            ? std::string("comm is MPI_COMM_NULL")
            : absl::StrFormat("comm 0x%x is not a communicator (never one, or freed)", handle);
    return Raise(nullptr, function,
                 scope == Scope::kCollective
                     ? Refuse(world, MPI_ERR_COMM, detail)
                     : Refusal(MPI_ERR_COMM, absl::StrCat("rank ", world.rank(), ": ", detail)));
  }
  const absl::Status status = body(*entry);
  if (ABSL_PREDICT_TRUE(status.ok())) return MPI_SUCCESS;
  return Raise(entry, function, status);
}

// A collective on `handle` (Scope::kCollective).
template <typename Body>
int OnCollective(const char* function, MPI_Comm handle, Body&& body) {
  return OnComm(function, handle, std::forward<Body>(body), Scope::kCollective);
}

// The same for calls tied to no communicator (ops, datatypes, errors).
template <typename Body>
int Local(const char* function, Body&& body) {
  if (ABSL_PREDICT_FALSE(runtime().phase() != Runtime::Phase::kRunning)) {
    return NotRunning(function);
  }
  const absl::Status status = body();
  if (ABSL_PREDICT_TRUE(status.ok())) return MPI_SUCCESS;
  return Raise(nullptr, function, status);
}

// A refused collective: fails the job with the refusal (see the file comment).
absl::Status Refuse(Communicator& comm, int error_class, absl::string_view detail) {
  absl::Status refusal = Refusal(error_class, absl::StrCat("rank ", comm.rank(), ": ", detail));
  // (FailJob returns the job's status, which need not carry the class.)
  comm.FailJob(refusal).IgnoreError();
  return refusal;
}

absl::Status NullPointer(int rank, const char* name) {
  return Refusal(MPI_ERR_ARG, absl::StrCat("rank ", rank, ": ", name, " is a null pointer"));
}

std::string DescribeType(MPI_Datatype handle) {
  return handle == MPI_DATATYPE_NULL ? std::string("MPI_DATATYPE_NULL")
                                     : absl::StrFormat("0x%x", handle);
}

// The DataType of `handle`, `name` being the argument's name; a refusal otherwise.
absl::Status TypeOf(Communicator* comm, const char* name, MPI_Datatype handle, DataType* type) {
  if (std::optional<DataType> predefined = PredefinedDataType(handle)) {
    *type = *predefined;
    return absl::OkStatus();
  }
  const std::string detail = absl::StrCat(name, " ", DescribeType(handle),
                                          " is not a datatype zcoll has (mpi.h lists them)");
  return comm != nullptr ? Refuse(*comm, MPI_ERR_TYPE, detail) : Refusal(MPI_ERR_TYPE, detail);
}

// The bytes of `count` elements of `handle`.
absl::Status BlockBytes(Communicator& comm, const char* count_name, MPI_Count count,
                        const char* type_name, MPI_Datatype handle, size_t* bytes) {
  DataType type;
  if (absl::Status status = TypeOf(&comm, type_name, handle, &type); !status.ok()) return status;
  if (ABSL_PREDICT_FALSE(count < 0)) {
    return Refuse(comm, MPI_ERR_COUNT, absl::StrCat(count_name, " ", count, " is negative"));
  }
  *bytes = static_cast<size_t>(count) * DataTypeSize(type);
  return absl::OkStatus();
}

// The op of `handle` for elements of `type`; a refusal naming both otherwise.
absl::Status OpFor(Communicator* comm, MPI_Op handle, DataType type, const ReduceOp** op) {
  *op = runtime().FindOp(handle);
  absl::Status problem;
  if (*op == nullptr) {
    problem = Refusal(MPI_ERR_OP,
                      absl::StrFormat("op %s is not an op (never one, or freed)",
                                      handle == MPI_OP_NULL ? std::string("MPI_OP_NULL")
                                                            : absl::StrFormat("0x%x", handle)));
  } else if ((*op)->is_predefined() && !IsOpDefinedFor((*op)->predefined(), type)) {
    problem = Refusal(MPI_ERR_OP, CheckOpForDataType(**op, type).message());
  } else {
    return absl::OkStatus();
  }
  if (comm == nullptr) return problem;
  return Refuse(*comm, MPI_ERR_OP, problem.message());
}

struct TypedOp {
  DataType type;
  const ReduceOp* op;
};

// The datatype and op of a reduction of `count` elements.
absl::StatusOr<TypedOp> ReductionOf(Communicator& comm, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Op op) {
  TypedOp reduction{DataType::kByte, nullptr};
  RETURN_IF_ERROR(TypeOf(&comm, "datatype", datatype, &reduction.type));
  if (ABSL_PREDICT_FALSE(count < 0)) {
    return Refuse(comm, MPI_ERR_COUNT, absl::StrCat("count ", count, " is negative"));
  }
  RETURN_IF_ERROR(OpFor(&comm, op, reduction.type, &reduction.op));
  return reduction;
}

absl::Status CheckRoot(Communicator& comm, int root) {
  if (ABSL_PREDICT_TRUE(root >= 0 && root < comm.size())) return absl::OkStatus();
  return Refuse(
      comm, MPI_ERR_ROOT,
      absl::StrCat("root ", root, " is not a rank of the ", comm.size(), "-rank communicator"));
}

// Per-rank int counts and displacements in elements of `type_name`'s type, as bytes
// (zcoll's size_t spans of MPI_BYTE). Thread-local scratch: no allocation per call
// once it has grown.
struct ByteLayout {
  std::vector<size_t> counts;
  std::vector<size_t> displs;
};

// `counts` (and `displs`, unless `displs_name` is null) of comm.size() entries, each
// times `element` bytes.
absl::Status ScaledLayout(Communicator& comm, const char* counts_name, const int* counts,
                          const char* displs_name, const int* displs, size_t element,
                          ByteLayout* layout) {
  const size_t ranks = static_cast<size_t>(comm.size());
  if (counts == nullptr) {
    return Refuse(comm, MPI_ERR_ARG, absl::StrCat(counts_name, " is a null pointer"));
  }
  layout->counts.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    if (counts[r] < 0) {
      return Refuse(comm, MPI_ERR_COUNT,
                    absl::StrCat(counts_name, "[", r, "] = ", counts[r], " is negative"));
    }
    layout->counts[r] = static_cast<size_t>(counts[r]) * element;
  }
  if (displs_name == nullptr) return absl::OkStatus();
  if (displs == nullptr) {
    return Refuse(comm, MPI_ERR_ARG, absl::StrCat(displs_name, " is a null pointer"));
  }
  layout->displs.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    if (displs[r] < 0) {
      return Refuse(comm, MPI_ERR_ARG,
                    absl::StrCat(displs_name, "[", r, "] = ", displs[r],
                                 " is negative (zcoll takes displacements from the buffer's "
                                 "start onward)"));
    }
    layout->displs[r] = static_cast<size_t>(displs[r]) * element;
  }
  return absl::OkStatus();
}

// The same in bytes of `handle`'s type.
absl::Status ToBytes(Communicator& comm, const char* counts_name, const int* counts,
                     const char* displs_name, const int* displs, const char* type_name,
                     MPI_Datatype handle, ByteLayout* layout) {
  DataType type;
  RETURN_IF_ERROR(TypeOf(&comm, type_name, handle, &type));
  return ScaledLayout(comm, counts_name, counts, displs_name, displs, DataTypeSize(type), layout);
}

ByteLayout& Scratch(int which) {
  thread_local ByteLayout layouts[2];
  return layouts[which];
}

// One side of a block's description: (sendcount, sendtype) or (recvcount, recvtype).
struct Side {
  const char* count_name;
  MPI_Count count;
  const char* type_name;
  MPI_Datatype type;
};

// The bytes of a rank's block from `primary`. Where the rank also describes it by
// `secondary` (`both`: a root's own block, an allgather's contribution, not in place),
// the two must hold the same bytes.
absl::Status BlockOf(Communicator& comm, bool both, const Side& primary, const Side& secondary,
                     size_t* bytes) {
  RETURN_IF_ERROR(
      BlockBytes(comm, primary.count_name, primary.count, primary.type_name, primary.type, bytes));
  if (!both) return absl::OkStatus();
  size_t other = 0;
  RETURN_IF_ERROR(BlockBytes(comm, secondary.count_name, secondary.count, secondary.type_name,
                             secondary.type, &other));
  if (other == *bytes) return absl::OkStatus();
  return Refuse(comm, MPI_ERR_COUNT,
                absl::StrCat(primary.count_name, " x ", primary.type_name, " is ", *bytes,
                             " bytes but ", secondary.count_name, " x ", secondary.type_name,
                             " is ", other, "; the two must agree"));
}

// A rooted collective's block: at the root from `root_side`, and also `other_side`
// unless in place (`root_holds_both`); elsewhere from `other_side`.
absl::Status RootedBlock(Communicator& comm, int root, bool root_holds_both, const Side& root_side,
                         const Side& other_side, size_t* bytes) {
  RETURN_IF_ERROR(CheckRoot(comm, root));
  return comm.rank() == root ? BlockOf(comm, root_holds_both, root_side, other_side, bytes)
                             : BlockOf(comm, false, other_side, root_side, bytes);
}

// A rooted v-collective's arguments: the root's per-rank layout (`counts`, `displs` of
// `vector_type`; empty elsewhere) and this rank's own block from `own`, or, in place at
// the root, from the layout's own entry.
struct Vectors {
  const char* counts_name;
  const int* counts;
  const int* displs;
  const char* type_name;
  MPI_Datatype type;
};

absl::Status RootedLayout(Communicator& comm, int root, const Vectors& vectors, bool in_place,
                          const Side& own, ByteLayout& layout, size_t* own_bytes) {
  RETURN_IF_ERROR(CheckRoot(comm, root));
  layout.counts.clear();
  layout.displs.clear();
  *own_bytes = 0;
  if (comm.rank() == root) {
    RETURN_IF_ERROR(ToBytes(comm, vectors.counts_name, vectors.counts, "displs", vectors.displs,
                            vectors.type_name, vectors.type, &layout));
    *own_bytes = layout.counts[static_cast<size_t>(root)];
  }
  if (in_place) return absl::OkStatus();
  return BlockBytes(comm, own.count_name, own.count, own.type_name, own.type, own_bytes);
}

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
using zcoll::mpi::BlockBytes;
using zcoll::mpi::BlockOf;
using zcoll::mpi::ByteLayout;
using zcoll::mpi::CheckRoot;
using zcoll::mpi::CommEntry;
using zcoll::mpi::Local;
using zcoll::mpi::OnCollective;
using zcoll::mpi::OnComm;
using zcoll::mpi::ReductionOf;
using zcoll::mpi::Refusal;
using zcoll::mpi::Refuse;
using zcoll::mpi::RootedBlock;
using zcoll::mpi::RootedLayout;
using zcoll::mpi::Runtime;
using zcoll::mpi::Scratch;
using zcoll::mpi::Side;
using zcoll::mpi::ToBytes;
using zcoll::mpi::TypedOp;
using zcoll::mpi::Vectors;

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
    if (provided == nullptr) return zcoll::mpi::NullPointer(-1, "provided");
    *provided = MPI_THREAD_SERIALIZED;
    return absl::OkStatus();
  });
}

int MPI_Finalize(void) {
  Runtime& rt = Runtime::Get();
  if (rt.phase() != Runtime::Phase::kRunning) return zcoll::mpi::NotRunning("MPI_Finalize");
  // A barrier first, so that no rank's transport goes while another still sends to it.
  CommEntry* world = rt.Find(MPI_COMM_WORLD);
  const absl::Status status = world->comm.Barrier();
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
  zcoll::mpi::EndJob(entry != nullptr ? &entry->comm : nullptr,
                     absl::StrCat("MPI_Abort(errorcode ", errorcode, ") on rank ",
                                  entry != nullptr ? entry->comm.rank() : -1),
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
    if (name == nullptr) return zcoll::mpi::NullPointer(-1, "name");
    if (resultlen == nullptr) return zcoll::mpi::NullPointer(-1, "resultlen");
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
                                     entry.comm.rank(), errhandler));
    }
    entry.errhandler = errhandler;
    return absl::OkStatus();
  });
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return OnComm("MPI_Comm_get_errhandler", comm, [&](CommEntry& entry) {
    if (errhandler == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "errhandler");
    *errhandler = entry.errhandler;
    return absl::OkStatus();
  });
}

int MPI_Errhandler_free(MPI_Errhandler* errhandler) {
  return Local("MPI_Errhandler_free", [&] {
    if (errhandler == nullptr) return zcoll::mpi::NullPointer(-1, "errhandler");
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
    if (rank == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "rank");
    *rank = entry.comm.rank();
    return absl::OkStatus();
  });
}

int MPI_Comm_size(MPI_Comm comm, int* size) {
  return OnComm("MPI_Comm_size", comm, [&](CommEntry& entry) {
    if (size == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "size");
    *size = entry.comm.size();
    return absl::OkStatus();
  });
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_dup", comm, [&](CommEntry& entry) {
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "newcomm");
    absl::StatusOr<Communicator> dup = entry.comm.Dup();
    if (!dup.ok()) return dup.status();
    const MPI_Errhandler inherited = entry.errhandler;
    *newcomm = Runtime::Get().Add(*std::move(dup), inherited);
    return absl::OkStatus();
  });
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return OnCollective("MPI_Comm_split", comm, [&](CommEntry& entry) {
    if (newcomm == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "newcomm");
    // zcoll's "no communicator" is -1, which MPI calls a bad color: it stays one.
    const int zcoll_color =
        color == MPI_UNDEFINED ? zcoll::kUndefinedColor : (color == -1 ? -2 : color);
    absl::StatusOr<std::optional<Communicator>> split = entry.comm.Split(zcoll_color, key);
    if (!split.ok()) return split.status();
    const MPI_Errhandler inherited = entry.errhandler;
    *newcomm =
        split->has_value() ? Runtime::Get().Add(**std::move(split), inherited) : MPI_COMM_NULL;
    return absl::OkStatus();
  });
}

int MPI_Comm_free(MPI_Comm* comm) {
  if (comm == nullptr) {
    return Local("MPI_Comm_free", [] { return zcoll::mpi::NullPointer(-1, "comm"); });
  }
  const MPI_Comm handle = *comm;
  return OnComm("MPI_Comm_free", handle, [&](CommEntry& entry) {
    if (handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF) {
      return Refusal(MPI_ERR_COMM,
                     absl::StrCat("rank ", entry.comm.rank(), ": comm is ",
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
                                                   first.comm.rank(), comm2));
    }
    if (result == nullptr) return zcoll::mpi::NullPointer(first.comm.rank(), "result");
    if (comm1 == comm2) {
      *result = MPI_IDENT;
      return absl::OkStatus();
    }
    switch (zcoll::Group::Compare(first.comm.group(), second->comm.group())) {
      case zcoll::GroupComparison::kIdentical:
        *result = MPI_CONGRUENT;
        break;
      case zcoll::GroupComparison::kSimilar:
        *result = MPI_SIMILAR;
        break;
      case zcoll::GroupComparison::kUnequal:
        *result = MPI_UNEQUAL;
        break;
    }
    return absl::OkStatus();
  });
}

int MPI_Comm_test_inter(MPI_Comm comm, int* flag) {
  return OnComm("MPI_Comm_test_inter", comm, [&](CommEntry& entry) {
    if (flag == nullptr) return zcoll::mpi::NullPointer(entry.comm.rank(), "flag");
    *flag = 0;  // every communicator of this interface is an intracommunicator
    return absl::OkStatus();
  });
}

// ---- Datatypes.

namespace {
absl::Status DatatypeOnly(MPI_Datatype datatype, DataType* type) {
  return zcoll::mpi::TypeOf(nullptr, "datatype", datatype, type);
}
}  // namespace

int MPI_Type_size(MPI_Datatype datatype, int* size) {
  return Local("MPI_Type_size", [&] {
    DataType type;
    if (absl::Status status = DatatypeOnly(datatype, &type); !status.ok()) return status;
    if (size == nullptr) return zcoll::mpi::NullPointer(-1, "size");
    *size = static_cast<int>(zcoll::DataTypeSize(type));
    return absl::OkStatus();
  });
}

int MPI_Type_size_c(MPI_Datatype datatype, MPI_Count* size) {
  return Local("MPI_Type_size_c", [&] {
    DataType type;
    if (absl::Status status = DatatypeOnly(datatype, &type); !status.ok()) return status;
    if (size == nullptr) return zcoll::mpi::NullPointer(-1, "size");
    *size = static_cast<MPI_Count>(zcoll::DataTypeSize(type));
    return absl::OkStatus();
  });
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent) {
  return Local("MPI_Type_get_extent", [&] {
    DataType type;
    if (absl::Status status = DatatypeOnly(datatype, &type); !status.ok()) return status;
    if (lb == nullptr) return zcoll::mpi::NullPointer(-1, "lb");
    if (extent == nullptr) return zcoll::mpi::NullPointer(-1, "extent");
    *lb = 0;
    *extent = static_cast<MPI_Aint>(zcoll::DataTypeSize(type));
    return absl::OkStatus();
  });
}

int MPI_Type_get_name(MPI_Datatype datatype, char* type_name, int* resultlen) {
  return Local("MPI_Type_get_name", [&] {
    DataType type;
    if (absl::Status status = DatatypeOnly(datatype, &type); !status.ok()) return status;
    if (type_name == nullptr) return zcoll::mpi::NullPointer(-1, "type_name");
    if (resultlen == nullptr) return zcoll::mpi::NullPointer(-1, "resultlen");
    const zcoll::DataTypeInfo& info = zcoll::GetDataTypeInfo(type);
    // The extensions have no MPI name: their mpi.h names.
    std::string name(info.mpi_name);
    if (type == DataType::kFloat16) name = "MPIX_C_FLOAT16";
    if (type == DataType::kBfloat16) name = "MPIX_BFLOAT16";
    const size_t length = std::min<size_t>(name.size(), MPI_MAX_OBJECT_NAME - 1);
    std::memcpy(type_name, name.data(), length);
    type_name[length] = '\0';
    *resultlen = static_cast<int>(length);
    return absl::OkStatus();
  });
}

// ---- Ops.

int MPI_Op_create(MPI_User_function* user_fn, int commute, MPI_Op* op) {
  return Local("MPI_Op_create", [&] {
    if (user_fn == nullptr) return zcoll::mpi::NullPointer(-1, "user_fn");
    if (op == nullptr) return zcoll::mpi::NullPointer(-1, "op");
    *op = Runtime::Get().AddOp(
        zcoll::mpi::MakeUserOp(user_fn, zcoll::mpi::kNoCountFunction, commute != 0));
    return absl::OkStatus();
  });
}

int MPI_Op_create_c(MPI_User_function_c* user_fn, int commute, MPI_Op* op) {
  return Local("MPI_Op_create_c", [&] {
    if (user_fn == nullptr) return zcoll::mpi::NullPointer(-1, "user_fn");
    if (op == nullptr) return zcoll::mpi::NullPointer(-1, "op");
    *op = Runtime::Get().AddOp(zcoll::mpi::MakeUserOp(nullptr, user_fn, commute != 0));
    return absl::OkStatus();
  });
}

int MPI_Op_free(MPI_Op* op) {
  return Local("MPI_Op_free", [&] {
    if (op == nullptr) return zcoll::mpi::NullPointer(-1, "op");
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
    if (commute == nullptr) return zcoll::mpi::NullPointer(-1, "commute");
    *commute = found->commutative() ? 1 : 0;
    return absl::OkStatus();
  });
}

int MPI_Reduce_local_c(const void* inbuf, void* inoutbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op) {
  return Local("MPI_Reduce_local", [&] {
    DataType type;
    if (absl::Status status = DatatypeOnly(datatype, &type); !status.ok()) return status;
    if (count < 0) return Refusal(MPI_ERR_COUNT, absl::StrCat("count ", count, " is negative"));
    const ReduceOp* reduce_op = nullptr;
    if (absl::Status status = zcoll::mpi::OpFor(nullptr, op, type, &reduce_op); !status.ok()) {
      return status;
    }
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE) {
      return Refusal(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed here (the standard's rule)");
    }
    return zcoll::ReduceLocal(*reduce_op, type, inbuf, inoutbuf, static_cast<size_t>(count));
  });
}

int MPI_Reduce_local(const void* inbuf, void* inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op) {
  return MPI_Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
}

// ---- Collectives.

int MPI_Barrier(MPI_Comm comm) {
  return OnCollective("MPI_Barrier", comm, [&](CommEntry& entry) { return entry.comm.Barrier(); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return OnCollective("MPI_Bcast", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    size_t bytes = 0;
    RETURN_IF_ERROR(BlockBytes(c, "count", count, "datatype", datatype, &bytes));
    RETURN_IF_ERROR(CheckRoot(c, root));
    return c.Bcast(buffer, bytes, DataType::kByte, root);
  });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  return OnCollective("MPI_Reduce", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, count, datatype, op));
    RETURN_IF_ERROR(CheckRoot(c, root));
    return c.Reduce(sendbuf, recvbuf, static_cast<size_t>(count), reduction.type, *reduction.op,
                    root);
  });
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  return OnCollective("MPI_Allreduce", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, count, datatype, op));
    return c.Allreduce(sendbuf, recvbuf, static_cast<size_t>(count), reduction.type, *reduction.op);
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return OnCollective("MPI_Reduce_scatter_block", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, recvcount, datatype, op));
    return c.ReduceScatterBlock(sendbuf, recvbuf, static_cast<size_t>(recvcount), reduction.type,
                                *reduction.op);
  });
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return OnCollective("MPI_Reduce_scatter", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, 0, datatype, op));
    // Counts in elements: the reduction keeps its datatype.
    ByteLayout& counts = Scratch(0);
    RETURN_IF_ERROR(zcoll::mpi::ScaledLayout(c, "recvcounts", recvcounts, nullptr, nullptr,
                                             /*element=*/1, &counts));
    return c.ReduceScatter(sendbuf, recvbuf, counts.counts, reduction.type, *reduction.op);
  });
}

int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  return OnCollective("MPI_Scan", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, count, datatype, op));
    return c.Scan(sendbuf, recvbuf, static_cast<size_t>(count), reduction.type, *reduction.op);
  });
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  return OnCollective("MPI_Exscan", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ASSIGN_OR_RETURN(const TypedOp reduction, ReductionOf(c, count, datatype, op));
    return c.Exscan(sendbuf, recvbuf, static_cast<size_t>(count), reduction.type, *reduction.op);
  });
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return OnCollective("MPI_Scatter", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    size_t block = 0;
    RETURN_IF_ERROR(RootedBlock(c, root, recvbuf != MPI_IN_PLACE, send, recv, &block));
    return c.Scatter(sendbuf, recvbuf, block, DataType::kByte, root);
  });
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  return OnCollective("MPI_Scatterv", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ByteLayout& layout = Scratch(0);
    size_t received = 0;
    RETURN_IF_ERROR(
        RootedLayout(c, root, Vectors{"sendcounts", sendcounts, displs, "sendtype", sendtype},
                     recvbuf == MPI_IN_PLACE, Side{"recvcount", recvcount, "recvtype", recvtype},
                     layout, &received));
    return c.Scatterv(sendbuf, layout.counts, layout.displs, recvbuf, received, DataType::kByte,
                      root);
  });
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return OnCollective("MPI_Gather", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    const Side send{"sendcount", sendcount, "sendtype", sendtype};
    const Side recv{"recvcount", recvcount, "recvtype", recvtype};
    size_t block = 0;
    RETURN_IF_ERROR(RootedBlock(c, root, sendbuf != MPI_IN_PLACE, recv, send, &block));
    return c.Gather(sendbuf, recvbuf, block, DataType::kByte, root);
  });
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return OnCollective("MPI_Gatherv", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ByteLayout& layout = Scratch(0);
    size_t sent = 0;
    RETURN_IF_ERROR(
        RootedLayout(c, root, Vectors{"recvcounts", recvcounts, displs, "recvtype", recvtype},
                     sendbuf == MPI_IN_PLACE, Side{"sendcount", sendcount, "sendtype", sendtype},
                     layout, &sent));
    return c.Gatherv(sendbuf, sent, recvbuf, layout.counts, layout.displs, DataType::kByte, root);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return OnCollective("MPI_Allgather", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    size_t block = 0;
    RETURN_IF_ERROR(BlockOf(c, sendbuf != MPI_IN_PLACE,
                            Side{"recvcount", recvcount, "recvtype", recvtype},
                            Side{"sendcount", sendcount, "sendtype", sendtype}, &block));
    return c.Allgather(sendbuf, recvbuf, block, DataType::kByte);
  });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return OnCollective("MPI_Allgatherv", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ByteLayout& layout = Scratch(0);
    RETURN_IF_ERROR(
        ToBytes(c, "recvcounts", recvcounts, "displs", displs, "recvtype", recvtype, &layout));
    size_t sent = layout.counts[static_cast<size_t>(c.rank())];
    if (sendbuf != MPI_IN_PLACE) {
      RETURN_IF_ERROR(BlockBytes(c, "sendcount", sendcount, "sendtype", sendtype, &sent));
    }
    return c.Allgatherv(sendbuf, sent, recvbuf, layout.counts, layout.displs, DataType::kByte);
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return OnCollective("MPI_Alltoall", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    size_t block = 0;
    RETURN_IF_ERROR(BlockOf(c, sendbuf != MPI_IN_PLACE,
                            Side{"recvcount", recvcount, "recvtype", recvtype},
                            Side{"sendcount", sendcount, "sendtype", sendtype}, &block));
    return c.Alltoall(sendbuf, recvbuf, block, DataType::kByte);
  });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return OnCollective("MPI_Alltoallv", comm, [&](CommEntry& entry) {
    Communicator& c = entry.comm;
    ByteLayout& sends = Scratch(0);
    ByteLayout& receives = Scratch(1);
    sends.counts.clear();
    sends.displs.clear();
    RETURN_IF_ERROR(
        ToBytes(c, "recvcounts", recvcounts, "rdispls", rdispls, "recvtype", recvtype, &receives));
    if (sendbuf != MPI_IN_PLACE) {
      RETURN_IF_ERROR(
          ToBytes(c, "sendcounts", sendcounts, "sdispls", sdispls, "sendtype", sendtype, &sends));
    }
    return c.Alltoallv(sendbuf, sends.counts, sends.displs, recvbuf, receives.counts,
                       receives.displs, DataType::kByte);
  });
}
