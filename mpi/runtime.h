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
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collectives/communicator.h"
#include "collectives/intercommunicator.h"
#include "collectives/request.h"
#include "core/datatype.h"
#include "core/group.h"
#include "core/reduce_op.h"
#include "mpi/include/mpi.h"
#include "mpi/messages.h"

namespace zcoll::mpi {

// Handle kinds: the high byte of a handle (mpi.h).
inline constexpr int kCommBase = 0x44000000;
inline constexpr int kDatatypeBase = 0x4c000000;
inline constexpr int kOpBase = 0x58000000;
inline constexpr int kUserOpBase = 0x58100000;
inline constexpr int kDerivedTypeBase = 0x4c100000;
inline constexpr int kRequestBase = 0x6c000000;
inline constexpr int kInfoBase = 0x5c000000;
inline constexpr int kGroupBase = 0x48000000;  // MPI_GROUP_EMPTY is the first

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

// A communicator of the program: an intracommunicator, or an intercommunicator.
struct CommEntry {
  std::optional<Communicator> intra;
  std::unique_ptr<Intercommunicator> inter;
  // Its point-to-point messages, once the program sends or receives on it (or frees
  // it). Declared after the communicator, which it must not outlive.
  std::unique_ptr<MessageEngine> messages;
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
  MPI_Comm handle = MPI_COMM_NULL;
  std::string name;  // MPI_Comm_set_name's
  // Requests on it that still exist: a freed communicator lives on until they go
  // (MPI_Comm_free lets pending operations complete), as a zcoll Request must not
  // outlive its Communicator.
  int requests = 0;
  bool freed = false;

  // The intracommunicator, or the intercommunicator's local group's: what rank(),
  // size(), failing the job and aborting go through.
  Communicator& comm() { return inter != nullptr ? inter->local() : *intra; }
  // The message engine, made on first use: over the intracommunicator, or over the
  // intercommunicator's bridge with the other group's ranks as the program's.
  MessageEngine& Messages();
};

// A datatype of MPI_Type_contiguous: `elements` consecutive elements of the
// predefined `base` per element of it.
struct DerivedType {
  DataType base;
  size_t elements;
  bool committed = false;
};

// Per-rank counts and displacements in bytes (or elements of a reduction's type):
// what zcoll's v-collectives take.
struct ByteLayout {
  std::vector<size_t> counts;
  std::vector<size_t> displs;
};

// An MPI_Request: a nonblocking collective (MPI_I<coll>) from its start until the
// program learns it completed, or a persistent one (MPI_<coll>_init) until
// MPI_Request_free.
struct RequestEntry {
  CommEntry* comm = nullptr;  // whose error handler reports its failure
  const char* function = "";  // "MPI_Iallreduce", for messages
  bool persistent = false;
  // Started, and its completion not yet returned to the program.
  bool active = false;
  Request request;  // a nonblocking collective's
  PersistentRequest persistent_request;
  // A v-collective's vectors, which zcoll may read until the request completes.
  ByteLayout layouts[2];
  // A point-to-point request's (MPI_Isend, MPI_Irecv) message, and its engine (null
  // for MPI_PROC_NULL's, which is done at once).
  std::shared_ptr<Message> message;
  MessageEngine* engine = nullptr;
  // Freed by the program while active (MPI_Request_free of a send or receive): the
  // runtime completes it and then lets it go.
  bool orphaned = false;
  MPI_Request handle = MPI_REQUEST_NULL;

  // Advances it without blocking: true once it completed (Wait then returns its status
  // at once), or its error.
  absl::StatusOr<bool> Poll() {
    if (message != nullptr) return message->done() || engine->Poll(*message);
    return persistent ? persistent_request.Test() : request.Test();
  }
  absl::Status Wait();
};

// MPI_Info: keys and values in the order they were set.
struct InfoEntry {
  std::vector<std::pair<std::string, std::string>> entries;
};

// The objects of one kind behind int handles (handle = base + slot). A slot is not
// reused unless the table says so, so that a stale handle meets an empty slot rather
// than another object.
template <typename T>
class HandleTable {
 public:
  HandleTable(int base, bool reuse_slots) : base_(base), reuse_slots_(reuse_slots) {}

  // The object of `handle`; null for any int that is no live handle of this table.
  T* Find(int handle) const {
    const size_t slot = static_cast<size_t>(handle - base_);
    if (handle < base_ || slot >= objects_.size()) return nullptr;
    return objects_[slot].get();
  }
  int Add(std::unique_ptr<T> object) {
    size_t slot = objects_.size();
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      objects_[slot] = std::move(object);
    } else {
      objects_.push_back(std::move(object));
    }
    return base_ + static_cast<int>(slot);
  }
  // `handle` must be live.
  void Remove(int handle) {
    const size_t slot = static_cast<size_t>(handle - base_);
    objects_[slot].reset();
    if (reuse_slots_) free_slots_.push_back(slot);
  }
  void Clear() {
    objects_.clear();
    free_slots_.clear();
  }

 private:
  int base_;
  bool reuse_slots_;
  std::vector<std::unique_ptr<T>> objects_;
  std::vector<size_t> free_slots_;
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
    CommEntry* entry = comms_.Find(handle);
    return entry != nullptr && !entry->freed ? entry : nullptr;
  }
  MPI_Comm Add(Communicator comm, MPI_Errhandler errhandler, std::string name = "");
  MPI_Comm AddInter(Intercommunicator inter, MPI_Errhandler errhandler);
  // (Either kind: the entry's `intra` or `inter` is set.)
  MPI_Comm AddEntry(std::unique_ptr<CommEntry> entry);
  // MPI_Comm_free: the handle is invalid at once; the communicator goes after its
  // last request, once its message engine has closed (messages.h).
  void Remove(MPI_Comm handle);

  // The derived datatype of `handle`; null for a predefined, freed or unknown one.
  DerivedType* FindType(MPI_Datatype handle) { return types_.Find(handle); }
  MPI_Datatype AddType(DerivedType type) { return types_.Add(std::make_unique<DerivedType>(type)); }
  void RemoveType(MPI_Datatype handle) { types_.Remove(handle); }

  // Groups: MPI_GROUP_EMPTY (never freed) and those the program made.
  Group* FindGroup(MPI_Group handle) { return groups_.Find(handle); }
  MPI_Group AddGroup(Group group) { return groups_.Add(std::make_unique<Group>(std::move(group))); }
  void RemoveGroup(MPI_Group handle) { groups_.Remove(handle); }

  InfoEntry* FindInfo(MPI_Info handle) { return infos_.Find(handle); }
  MPI_Info AddInfo(InfoEntry info) {
    return infos_.Add(std::make_unique<InfoEntry>(std::move(info)));
  }
  void RemoveInfo(MPI_Info handle) { infos_.Remove(handle); }

  // Requests. A handle's slot is reused once its request has gone.
  RequestEntry* FindRequest(MPI_Request handle) { return requests_.Find(handle); }
  // A new inactive request on `comm`; FindRequest gives its entry.
  MPI_Request AddRequest(CommEntry& comm, const char* function, bool persistent);
  // Its request must have completed (or never started).
  void RemoveRequest(MPI_Request handle);
  void Activate(RequestEntry& request);
  // Marks it completed as far as the program knows (its status was returned).
  void Deactivate(RequestEntry& request);
  // MPI_Request_free of an active send or receive: it completes in the progress of later
  // progress, then goes.
  void Orphan(RequestEntry& request) {
    request.orphaned = true;
    ++orphans_;
  }
  bool AnyActive() const { return !active_.empty(); }
  size_t ActiveCount() const { return active_.size(); }

  // Returns once `done()` is true, advancing every active request meanwhile: MPI's
  // progress rule, since a peer may wait in its own call for one of them (two ranks
  // waiting for two collectives in opposite orders, or a blocking collective while a
  // nonblocking one is pending). `done` polls what the caller waits for; each request
  // ends by its deadline, so this returns by the latest of theirs. Yields between
  // rounds, then sleeps briefly: ranks may share few cores.
  void ProgressUntil(absl::FunctionRef<bool()> done);
  // Advances every active request once, and the communicators that are closing.
  void PollActive();
  // Waits for `request` (held by the caller, not the program), advancing the active
  // ones meanwhile.
  absl::Status Complete(Request& request);
  // The same for a blocking send's or receive's own message(s) on `comm`. A message
  // that is not done by the communicator's deadline fails the job (TimedOut).
  absl::Status Complete(CommEntry& comm, Message& first, Message* second = nullptr);
  // MPI_Finalize's first step: the freed requests that are still active (a send the
  // program let go) complete, as do the closes of freed communicators, within the
  // timeout.
  void Drain();

  // The op of `handle`; null for MPI_OP_NULL, a freed or unknown handle.
  const ReduceOp* FindOp(MPI_Op handle) const;
  MPI_Op AddOp(ReduceOp op);
  void RemoveOp(MPI_Op handle) { user_ops_.Remove(handle); }

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

  // The communicator goes unless its engine must close first (then Closing()).
  void Retire(CommEntry& entry);
  // Lets go of the closed communicators and the completed orphans.
  void Reap();
  // The timeout of every wait, ZCOLL_TIMEOUT's (the world communicator's).
  absl::Time WaitDeadline() const;
  // Fails the active messages that are not done (TimedOut): a wait reached its deadline,
  // the timeout after it began.
  void TimeOutMessages();

  Phase phase_ = Phase::kNotInitialized;
  HandleTable<CommEntry> comms_{kCommBase, /*reuse_slots=*/false};
  HandleTable<ReduceOp> user_ops_{kUserOpBase, false};
  HandleTable<DerivedType> types_{kDerivedTypeBase, false};
  HandleTable<InfoEntry> infos_{kInfoBase, false};
  HandleTable<Group> groups_{kGroupBase, false};
  // A program may start millions of nonblocking collectives, holding few at a time.
  HandleTable<RequestEntry> requests_{kRequestBase, /*reuse_slots=*/true};
  std::vector<RequestEntry*> active_;
  std::vector<CommEntry*> closing_;  // freed, their engines closing
  int orphans_ = 0;
  std::vector<std::string> messages_ = std::vector<std::string>(kMessages);
  int next_message_ = 0;
};

// The generic text of an error class ("invalid count argument").
absl::string_view ErrorClassText(int error_class);

}  // namespace zcoll::mpi

#endif  // ZCOLL_MPI_RUNTIME_H_
