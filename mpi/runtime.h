// The state behind zcoll's MPI C interface (mpi/include/mpi.h): the process's
// communicators, user ops and error codes, and the translation of handles and
// Statuses. Internal to //mpi; mpi.cc defines the C functions on top of it.
//
// Threading: MPI_THREAD_SERIALIZED at most (mpi.h), so the tables are not locked: one
// thread calls at a time, and the caller's own synchronisation orders the calls.

#ifndef ZCOLL_MPI_RUNTIME_H_
#define ZCOLL_MPI_RUNTIME_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collectives/communicator.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "mpi/include/mpi.h"

namespace zcoll::mpi {

// Handle kinds: the high byte of a handle (mpi.h).
inline constexpr int kCommBase = 0x44000000;
inline constexpr int kDatatypeBase = 0x4c000000;
inline constexpr int kOpBase = 0x58000000;
inline constexpr int kUserOpBase = 0x58100000;

// The predefined datatype of `handle`, or nullopt for any other int.
inline std::optional<DataType> PredefinedDataType(MPI_Datatype handle) {
  const int index = handle - kDatatypeBase;
  if (index < 1 || index > static_cast<int>(kNumDataTypes)) return std::nullopt;
  return static_cast<DataType>(index - 1);
}
inline MPI_Datatype HandleOf(DataType type) { return kDatatypeBase + 1 + static_cast<int>(type); }

// A refused argument: InvalidArgument with the error class the standard gives it
// (carried as a payload, so that one Status reaches MPI_Error_class and, as its
// message, MPI_Error_string).
absl::Status Refusal(int error_class, absl::string_view message);
// The class of `status` (not OK): a Refusal's own, else by its code.
int ErrorClassOf(const absl::Status& status);

struct CommEntry {
  Communicator comm;
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
};

class Runtime {
 public:
  enum class Phase { kNotInitialized, kRunning, kFinalized };

  static Runtime& Get();

  Phase phase() const { return phase_; }
  // MPI_Init's work: the world communicator from the launcher's environment (a job of
  // one rank when nothing launched this process, as `./a.out` is under other MPIs),
  // and MPI_COMM_SELF.
  absl::Status Initialize();
  // MPI_Finalize's (after its barrier): every communicator and op goes.
  void Finalize();

  // The entry of `handle`; null for MPI_COMM_NULL, a freed or unknown handle.
  CommEntry* Find(MPI_Comm handle) {
    const size_t index = static_cast<size_t>(handle - kCommBase);
    if (handle < kCommBase || index >= comms_.size()) return nullptr;
    return comms_[index].get();
  }
  MPI_Comm Add(Communicator comm, MPI_Errhandler errhandler);
  void Remove(MPI_Comm handle) { comms_[static_cast<size_t>(handle - kCommBase)].reset(); }

  // The op of `handle`; null for MPI_OP_NULL, a freed or unknown handle.
  const ReduceOp* FindOp(MPI_Op handle) const;
  MPI_Op AddOp(ReduceOp op);
  void RemoveOp(MPI_Op handle) { user_ops_[static_cast<size_t>(handle - kUserOpBase)].reset(); }

  // Gives `status` (not OK) an error code: its class plus a slot of the recent
  // messages, so that MPI_Error_string returns this message while the slot lasts (the
  // last kMessages failures).
  int CodeFor(const absl::Status& status);
  // The message of `code`, or the generic text of its class; false for an int that is
  // no error code.
  bool Describe(int code, std::string* text, int* error_class) const;

 private:
  static constexpr int kClassBits = 6;  // classes are below 64 (mpi.h)
  static constexpr int kMessages = 256;

  Phase phase_ = Phase::kNotInitialized;
  std::vector<std::unique_ptr<CommEntry>> comms_;
  std::vector<std::unique_ptr<ReduceOp>> user_ops_;
  std::vector<std::string> messages_ = std::vector<std::string>(kMessages);
  int next_message_ = 0;
};

// The generic text of an error class ("invalid count argument").
absl::string_view ErrorClassText(int error_class);

}  // namespace zcoll::mpi

#endif  // ZCOLL_MPI_RUNTIME_H_
