#include "mpi/call_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace zcoll::mpi {

void EndJob(Communicator* comm, absl::string_view message, int exit_code) {
  std::fprintf(stderr, "zcoll MPI: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  if (comm != nullptr) comm->Abort(message).IgnoreError();
  std::_Exit(exit_code);
}

int Raise(CommEntry* entry, const char* function, const absl::Status& status) {
  const std::string message = absl::StrCat(function, ": ", status.message());
  Runtime& rt = Runtime::Get();
  if (rt.phase() != Runtime::Phase::kRunning) EndJob(nullptr, message, 1);
  CommEntry* handler_of = entry != nullptr ? entry : rt.Find(MPI_COMM_SELF);
  // The code's message names the function; the class (a Refusal's payload) stays.
  absl::Status named(status.code(), message);
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { named.SetPayload(url, payload); });
  const int code = rt.CodeFor(named);
  if (handler_of->errhandler == MPI_ERRORS_RETURN) return code;
  Communicator* world = &rt.Find(MPI_COMM_WORLD)->comm();
  EndJob(entry != nullptr ? &entry->comm() : world, message, 1);
}

int NotRunning(const char* function) {
  const bool finalized = Runtime::Get().phase() == Runtime::Phase::kFinalized;
  EndJob(nullptr,
         absl::StrCat(function,
                      finalized ? " was called after MPI_Finalize" : " was called before MPI_Init"),
         1);
}

absl::Status Refuse(Communicator& comm, int error_class, absl::string_view detail) {
  absl::Status refusal = Refusal(error_class, absl::StrCat("rank ", comm.rank(), ": ", detail));
  // (FailJob returns the job's status, which need not carry the class.)
  comm.FailJob(refusal).IgnoreError();
  return refusal;
}

absl::Status RefuseIn(Communicator* comm, int error_class, absl::string_view detail) {
  if (comm != nullptr) return Refuse(*comm, error_class, detail);
  Communicator& world = Runtime::Get().Find(MPI_COMM_WORLD)->comm();
  return Refusal(error_class, absl::StrCat("rank ", world.rank(), ": ", detail));
}

absl::Status NullPointer(int rank, const char* name) {
  return Refusal(MPI_ERR_ARG, absl::StrCat("rank ", rank, ": ", name, " is a null pointer"));
}

int WorldRank() {
  Runtime& rt = Runtime::Get();
  if (rt.phase() != Runtime::Phase::kRunning) return -1;
  return rt.Find(MPI_COMM_WORLD)->comm().rank();
}

absl::Status BadComm(MPI_Comm handle, Scope scope) {
  Communicator& world = Runtime::Get().Find(MPI_COMM_WORLD)->comm();
  const std::string detail =
      handle == MPI_COMM_NULL
          ? std::string("comm is MPI_COMM_NULL")
          : absl::StrFormat("comm 0x%x is not a communicator (never one, or freed)", handle);
  return scope == Scope::kCollective
             ? Refuse(world, MPI_ERR_COMM, detail)
             : Refusal(MPI_ERR_COMM, absl::StrCat("rank ", world.rank(), ": ", detail));
}

absl::Status TypeOf(Communicator* comm, const char* name, MPI_Datatype handle, TypeShape* shape,
                    bool committed_or_not) {
  if (std::optional<DataType> predefined = PredefinedDataType(handle)) {
    *shape = TypeShape{*predefined, 1, false};
    return absl::OkStatus();
  }
  if (const DerivedType* derived = Runtime::Get().FindType(handle)) {
    if (!derived->committed && !committed_or_not) {
      return RefuseIn(
          comm, MPI_ERR_TYPE,
          absl::StrFormat("%s 0x%x is not committed (MPI_Type_commit it first)", name, handle));
    }
    *shape = TypeShape{derived->base, derived->elements, true};
    return absl::OkStatus();
  }
  const std::string described = handle == MPI_DATATYPE_NULL ? std::string("MPI_DATATYPE_NULL")
                                                            : absl::StrFormat("0x%x", handle);
  return RefuseIn(comm, MPI_ERR_TYPE,
                  absl::StrCat(name, " ", described,
                               " is not a datatype (mpi.h lists the predefined ones; a derived "
                               "one may have been freed)"));
}

namespace {
// `count` times `unit`, refused when it does not fit a size_t.
absl::Status Scale(Communicator& comm, const char* count_name, MPI_Count count, size_t unit,
                   size_t* product) {
  if (ABSL_PREDICT_FALSE(count < 0)) {
    return Refuse(comm, MPI_ERR_COUNT, absl::StrCat(count_name, " ", count, " is negative"));
  }
  if (ABSL_PREDICT_FALSE(unit != 0 && static_cast<unsigned long long>(count) >
                                          std::numeric_limits<size_t>::max() / unit)) {
    return Refuse(comm, MPI_ERR_COUNT,
                  absl::StrCat(count_name, " ", count, " elements of ", unit,
                               " bytes overflow the address space"));
  }
  *product = static_cast<size_t>(count) * unit;
  return absl::OkStatus();
}
}  // namespace

absl::Status BlockBytes(Communicator& comm, const char* count_name, MPI_Count count,
                        const char* type_name, MPI_Datatype handle, size_t* bytes) {
  TypeShape shape;
  RETURN_IF_ERROR(TypeOf(&comm, type_name, handle, &shape));
  return Scale(comm, count_name, count, shape.bytes(), bytes);
}

absl::Status OpFor(Communicator* comm, MPI_Op handle, DataType type, const ReduceOp** op) {
  *op = Runtime::Get().FindOp(handle);
  if (*op == nullptr) {
    return RefuseIn(comm, MPI_ERR_OP,
                    absl::StrFormat("op %s is not an op (never one, or freed)",
                                    handle == MPI_OP_NULL ? std::string("MPI_OP_NULL")
                                                          : absl::StrFormat("0x%x", handle)));
  }
  if ((*op)->is_predefined() && !IsOpDefinedFor((*op)->predefined(), type)) {
    return RefuseIn(comm, MPI_ERR_OP, CheckOpForDataType(**op, type).message());
  }
  return absl::OkStatus();
}

absl::StatusOr<TypedOp> ReductionOf(Communicator& comm, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Op op) {
  TypeShape shape;
  RETURN_IF_ERROR(TypeOf(&comm, "datatype", datatype, &shape));
  TypedOp reduction{shape.base, 0, nullptr};
  RETURN_IF_ERROR(Scale(comm, "count", count, shape.elements, &reduction.count));
  RETURN_IF_ERROR(OpFor(&comm, op, shape.base, &reduction.op));
  if (shape.derived && !reduction.op->is_predefined()) {
    return Refuse(comm, MPI_ERR_TYPE,
                  absl::StrFormat("datatype 0x%x is derived, and zcoll calls a user op with "
                                  "predefined datatypes only; reduce its base type instead",
                                  datatype));
  }
  return reduction;
}

absl::Status CheckInfo(Communicator* comm, const char* name, MPI_Info info) {
  if (info == MPI_INFO_NULL || Runtime::Get().FindInfo(info) != nullptr) {
    return absl::OkStatus();
  }
  return RefuseIn(comm, MPI_ERR_INFO,
                  absl::StrFormat("%s 0x%x is not MPI_INFO_NULL or an info object (never one, "
                                  "or freed)",
                                  name, info));
}

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

void CopyOut(absl::string_view text, char* out, int capacity, int* length) {
  const size_t copied = std::min<size_t>(text.size(), static_cast<size_t>(capacity - 1));
  std::memcpy(out, text.data(), copied);
  out[copied] = '\0';
  *length = static_cast<int>(copied);
}

void SetEmpty(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->zcoll_cancelled = 0;
  status->zcoll_bytes = 0;
}

void SetStatus(const Message& message, MPI_Status* status) {
  SetEmpty(status);
  if (status == MPI_STATUS_IGNORE || message.is_send()) return;
  status->MPI_SOURCE = message.source();
  status->MPI_TAG = message.tag();
  status->zcoll_bytes = static_cast<MPI_Count>(message.bytes());
}

}  // namespace zcoll::mpi
