// What every C function of mpi/include/mpi.h does around its work: checks the phase
// and the handles, turns arguments into zcoll's (bytes, DataTypes, ops, layouts), and
// raises a failure through the communicator's error handler. Internal to //mpi.
//
// Every call checks its handles and arguments first, so that a refusal carries the
// standard's error class (MPI_ERR_COUNT, MPI_ERR_ROOT, ...) and a sentence naming the
// argument and the rank. A collective refused on one rank fails the job
// (Communicator::FailJob), as zcoll's own API does, so that the other ranks return at
// once instead of waiting for it. Then the communicator's error handler runs:
// MPI_ERRORS_RETURN returns the code, MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT print
// the message and end the job (mpi.h).

#ifndef ZCOLL_MPI_CALL_SUPPORT_H_
#define ZCOLL_MPI_CALL_SUPPORT_H_

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "collectives/communicator.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {

// Ends the process after a fatal error (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT, or an
// error with no communicator to handle it): `comm`, when known, fails the job first so
// that the other ranks' calls end at once, naming this one.
[[noreturn]] void EndJob(Communicator* comm, absl::string_view message, int exit_code);

// Runs the error handler of `entry` (null: MPI_COMM_SELF's, the standard's handler for
// errors tied to no valid communicator) on `status` of `function`; returns the code
// (MPI_ERRORS_RETURN) or ends the job.
int Raise(CommEntry* entry, const char* function, const absl::Status& status);

// Calls before MPI_Init or after MPI_Finalize have no handler to run: fatal.
[[noreturn]] int NotRunning(const char* function);

// A refused collective argument: fails the job with the refusal (the file comment).
absl::Status Refuse(Communicator& comm, int error_class, absl::string_view detail);
// A refusal by a collective when `comm` is set, a local one otherwise.
absl::Status RefuseIn(Communicator* comm, int error_class, absl::string_view detail);

absl::Status NullPointer(int rank, const char* name);

// This process's rank in MPI_COMM_WORLD, for the messages of calls tied to no
// communicator (-1 when MPI is not running).
int WorldRank();

// Whether a call with a bad communicator handle leaves other ranks waiting for it.
enum class Scope { kLocal, kCollective };

// A bad communicator handle's refusal (see OnComm).
absl::Status BadComm(MPI_Comm handle, Scope scope);

// The body of a call on communicator `handle`: checks the phase and the handle, runs
// `body` on the communicator, and raises its error, if any. A collective given a bad
// handle fails the job (through MPI_COMM_WORLD, whose job every communicator shares),
// as any refused collective does, since the other ranks' calls would wait for it.
template <typename Body>
int OnComm(const char* function, MPI_Comm handle, Body&& body, Scope scope = Scope::kLocal) {
  Runtime& rt = Runtime::Get();
  if (ABSL_PREDICT_FALSE(rt.phase() != Runtime::Phase::kRunning)) return NotRunning(function);
  CommEntry* entry = rt.Find(handle);
  if (ABSL_PREDICT_FALSE(entry == nullptr)) return Raise(nullptr, function, BadComm(handle, scope));
  const absl::Status status = body(*entry);
  if (ABSL_PREDICT_TRUE(status.ok())) return MPI_SUCCESS;
  return Raise(entry, function, status);
}

// A collective on `handle` (Scope::kCollective).
template <typename Body>
int OnCollective(const char* function, MPI_Comm handle, Body&& body) {
  return OnComm(function, handle, std::forward<Body>(body), Scope::kCollective);
}

// The same for calls tied to no communicator (ops, datatypes, requests, errors).
template <typename Body>
int Local(const char* function, Body&& body) {
  if (ABSL_PREDICT_FALSE(Runtime::Get().phase() != Runtime::Phase::kRunning)) {
    return NotRunning(function);
  }
  const absl::Status status = body();
  if (ABSL_PREDICT_TRUE(status.ok())) return MPI_SUCCESS;
  return Raise(nullptr, function, status);
}

// A datatype as zcoll moves it: `elements` of the predefined `base` per element of
// the MPI type (1 for a predefined type, more for MPI_Type_contiguous's).
struct TypeShape {
  DataType base = DataType::kByte;
  size_t elements = 1;
  bool derived = false;
  size_t bytes() const { return elements * DataTypeSize(base); }
};

// The shape of datatype `handle`, `name` being the argument's name; a refusal
// (through `comm`, if set: RefuseIn) for a handle that is no datatype, or a derived
// one not committed unless `committed_or_not`.
absl::Status TypeOf(Communicator* comm, const char* name, MPI_Datatype handle, TypeShape* shape,
                    bool committed_or_not = false);

// The bytes of `count` elements of `handle`.
absl::Status BlockBytes(Communicator& comm, const char* count_name, MPI_Count count,
                        const char* type_name, MPI_Datatype handle, size_t* bytes);

// The op of `handle` for elements of `type`; a refusal naming both otherwise.
absl::Status OpFor(Communicator* comm, MPI_Op handle, DataType type, const ReduceOp** op);

// A reduction's type and op: `count` elements of the MPI type are `count` of `type`.
struct TypedOp {
  DataType type;
  size_t count;
  const ReduceOp* op;
};
// `count` elements of `datatype` under `op` (a contiguous type reduces element by
// element of its base type; a user op takes predefined types only, as zcoll calls it
// with the base type).
absl::StatusOr<TypedOp> ReductionOf(Communicator& comm, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Op op);

// MPI_INFO_NULL or a live info object.
absl::Status CheckInfo(Communicator* comm, const char* name, MPI_Info info);

// `counts` (and `displs`, unless `displs_name` is null) of `ranks` entries (the
// communicator's size, or an intercommunicator's remote group's), each times
// `element` (bytes of an element, or 1 for a reduction's element counts). Count is int
// or MPI_Count, Displ int or MPI_Aint (the _c calls).
template <typename Count, typename Displ>
absl::Status ScaledLayout(Communicator& comm, size_t ranks, const char* counts_name,
                          const Count* counts, const char* displs_name, const Displ* displs,
                          size_t element, ByteLayout* layout) {
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
template <typename Count, typename Displ>
absl::Status ToBytes(Communicator& comm, size_t ranks, const char* counts_name, const Count* counts,
                     const char* displs_name, const Displ* displs, const char* type_name,
                     MPI_Datatype handle, ByteLayout* layout) {
  TypeShape shape;
  if (absl::Status status = TypeOf(&comm, type_name, handle, &shape); !status.ok()) return status;
  return ScaledLayout(comm, ranks, counts_name, counts, displs_name, displs, shape.bytes(), layout);
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
                     size_t* bytes);

// The empty status the standard gives a null or inactive request, and a collective.
void SetEmpty(MPI_Status* status);
// A completed send's or receive's status: the matched message's source, tag and bytes
// (a send's is the empty one).
void SetStatus(const Message& message, MPI_Status* status);

// Copies `text` into a C string of at most `capacity` bytes with its length.
void CopyOut(absl::string_view text, char* out, int capacity, int* length);

}  // namespace zcoll::mpi

#endif  // ZCOLL_MPI_CALL_SUPPORT_H_
