#include "mpi/runtime.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "core/status_macros.h"
#include "transport/bootstrap/in_process_bootstrap.h"
#include "transport/loopback/loopback_transport.h"

namespace zcoll::mpi {
namespace {

constexpr absl::string_view kClassPayload = "zcoll.mpi/error_class";

// Whether a launcher (zcoll_run, mpirun/srun through PMIx, or a service's store
// variables) started this process; otherwise MPI_Init makes a job of one rank.
bool Launched() {
  for (const char* variable : {"ZCOLL_RANK", "ZCOLL_SIZE", "ZCOLL_STORE", "PMIX_RANK",
                               "PMIX_NAMESPACE", "PMIX_SERVER_URI41", "PMIX_SERVER_URI4"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return true;
  }
  const char* choice = std::getenv("ZCOLL_BOOTSTRAP");
  return choice != nullptr && *choice != '\0' && absl::string_view(choice) != "auto";
}

absl::StatusOr<Communicator> CreateSingleton() {
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Bootstrap>> bootstraps,
                   CreateInProcessBootstraps(1));
  ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport,
                   LoopbackFabric::Create(1)->CreateTransport(0));
  CommunicatorOptions options;
  options.bootstrap = std::move(bootstraps[0]);
  options.transport = std::move(transport);
  return Communicator::Create(std::move(options));
}

}  // namespace

absl::Status Refusal(int error_class, absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kClassPayload, absl::Cord(absl::StrCat(error_class)));
  return status;
}

int ErrorClassOf(const absl::Status& status) {
  if (absl::optional<absl::Cord> payload = status.GetPayload(kClassPayload)) {
    int error_class = 0;
    if (absl::SimpleAtoi(std::string(*payload), &error_class)) return error_class;
  }
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return MPI_SUCCESS;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return MPI_ERR_ARG;
    case absl::StatusCode::kResourceExhausted:
      return MPI_ERR_NO_MEM;
    case absl::StatusCode::kUnimplemented:
      return MPI_ERR_UNSUPPORTED_OPERATION;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
      return MPI_ERR_INTERN;
    case absl::StatusCode::kUnknown:
      return MPI_ERR_UNKNOWN;
    default:
      // A lost or stopped peer, a missed deadline, a job failed by another rank.
      return MPI_ERR_OTHER;
  }
}

absl::string_view ErrorClassText(int error_class) {
  switch (error_class) {
    case MPI_SUCCESS:
      return "no error";
    case MPI_ERR_BUFFER:
      return "invalid buffer pointer";
    case MPI_ERR_COUNT:
      return "invalid count argument";
    case MPI_ERR_TYPE:
      return "invalid datatype argument";
    case MPI_ERR_TAG:
      return "invalid tag argument";
    case MPI_ERR_COMM:
      return "invalid communicator";
    case MPI_ERR_RANK:
      return "invalid rank";
    case MPI_ERR_REQUEST:
      return "invalid request";
    case MPI_ERR_ROOT:
      return "invalid root";
    case MPI_ERR_GROUP:
      return "invalid group";
    case MPI_ERR_OP:
      return "invalid operation";
    case MPI_ERR_TOPOLOGY:
      return "invalid topology";
    case MPI_ERR_DIMS:
      return "invalid dimension argument";
    case MPI_ERR_ARG:
      return "invalid argument of some other kind";
    case MPI_ERR_UNKNOWN:
      return "unknown error";
    case MPI_ERR_TRUNCATE:
      return "message truncated";
    case MPI_ERR_OTHER:
      return "known error not in this list";
    case MPI_ERR_INTERN:
      return "internal error in zcoll";
    case MPI_ERR_IN_STATUS:
      return "error code is in status";
    case MPI_ERR_PENDING:
      return "pending request";
    case MPI_ERR_NO_MEM:
      return "no memory left";
    case MPI_ERR_INFO:
      return "invalid info argument";
    case MPI_ERR_UNSUPPORTED_OPERATION:
      return "operation not supported";
    case MPI_ERR_PROC_ABORTED:
      return "a peer process aborted";
    case MPI_ERR_VALUE_TOO_LARGE:
      return "value too large for its output argument";
    case MPI_ERR_ERRHANDLER:
      return "invalid error handler";
    default:
      return "";
  }
}

MessageEngine& CommEntry::Messages() {
  if (messages != nullptr) return *messages;
  std::vector<int> carrier_ranks;
  if (inter != nullptr) {
    for (int r = 0; r < inter->remote_size(); ++r) {
      carrier_ranks.push_back(inter->BridgeRankOfRemote(r));
    }
    messages = std::make_unique<MessageEngine>(inter->bridge(), std::move(carrier_ranks), -1,
                                               inter->rank());
  } else {
    for (int r = 0; r < intra->size(); ++r) carrier_ranks.push_back(r);
    messages = std::make_unique<MessageEngine>(*intra, std::move(carrier_ranks), intra->rank(),
                                               intra->rank());
  }
  return *messages;
}

absl::Status RequestEntry::Wait() {
  if (message == nullptr) return persistent ? persistent_request.Wait() : request.Wait();
  if (!message->done()) engine->Wait(*message, comm->comm().DefaultDeadline());
  return message->status();
}

Runtime& Runtime::Get() {
  static Runtime* const runtime = new Runtime();
  return *runtime;
}

absl::Status Runtime::Initialize() {
  absl::StatusOr<Communicator> world = Launched() ? Communicator::Create({}) : CreateSingleton();
  if (!world.ok()) return world.status();
  absl::StatusOr<std::optional<Communicator>> self = world->Split(world->rank(), 0);
  if (!self.ok()) return self.status();
  comms_.Clear();
  groups_.Clear();
  AddGroup(Group::Empty());  // MPI_GROUP_EMPTY, the first handle
  Add(*std::move(world), MPI_ERRORS_ARE_FATAL, "MPI_COMM_WORLD");
  Add(**std::move(self), MPI_ERRORS_ARE_FATAL, "MPI_COMM_SELF");
  phase_ = Phase::kRunning;
  return absl::OkStatus();
}

void Runtime::Finalize() {
  // Requests first: each must go before its communicator (a pending one waits for its
  // collective, as the program should have).
  active_.clear();
  closing_.clear();
  orphans_ = 0;
  requests_.Clear();
  comms_.Clear();
  user_ops_.Clear();
  types_.Clear();
  infos_.Clear();
  groups_.Clear();
  phase_ = Phase::kFinalized;
}

MPI_Comm Runtime::Add(Communicator comm, MPI_Errhandler errhandler, std::string name) {
  auto entry = std::make_unique<CommEntry>();
  entry->intra.emplace(std::move(comm));
  entry->errhandler = errhandler;
  entry->name = std::move(name);
  return AddEntry(std::move(entry));
}

MPI_Comm Runtime::AddInter(Intercommunicator inter, MPI_Errhandler errhandler) {
  auto entry = std::make_unique<CommEntry>();
  entry->inter = std::make_unique<Intercommunicator>(std::move(inter));
  entry->errhandler = errhandler;
  return AddEntry(std::move(entry));
}

MPI_Comm Runtime::AddEntry(std::unique_ptr<CommEntry> entry) {
  CommEntry& added = *entry;
  added.handle = comms_.Add(std::move(entry));
  return added.handle;
}

void Runtime::Remove(MPI_Comm handle) {
  CommEntry& entry = *comms_.Find(handle);
  entry.freed = true;
  if (entry.requests == 0) Retire(entry);
}

void Runtime::Retire(CommEntry& entry) {
  const bool has_peers = entry.inter != nullptr || entry.intra->size() > 1;
  // A failed job moves nothing again: the communicator may go at once.
  if (has_peers && entry.comm().status().ok() && entry.Messages().Close().ok()) {
    closing_.push_back(&entry);
    return;
  }
  comms_.Remove(entry.handle);
}

void Runtime::Reap() {
  for (size_t i = 0; i < closing_.size();) {
    CommEntry* entry = closing_[i];
    if (!entry->messages->Closed()) {
      ++i;
      continue;
    }
    closing_.erase(closing_.begin() + static_cast<std::ptrdiff_t>(i));
    comms_.Remove(entry->handle);
  }
  if (orphans_ == 0) return;
  for (size_t i = 0; i < active_.size();) {
    RequestEntry* request = active_[i];
    if (request->orphaned && request->message->done()) {
      RemoveRequest(request->handle);  // (takes it out of active_)
    } else {
      ++i;
    }
  }
}

void Runtime::PollActive() {
  for (RequestEntry* request : active_) request->Poll().IgnoreError();
  if (!closing_.empty() || orphans_ > 0) Reap();
}

absl::Time Runtime::WaitDeadline() const {
  const CommEntry* world = comms_.Find(MPI_COMM_WORLD);
  return world != nullptr ? world->intra->DefaultDeadline() : absl::InfiniteFuture();
}

void Runtime::TimeOutMessages() {
  const CommEntry* world = comms_.Find(MPI_COMM_WORLD);
  const absl::Duration waited = world != nullptr ? world->intra->timeout() : absl::ZeroDuration();
  for (RequestEntry* request : active_) {
    if (request->message != nullptr && !request->message->done()) {
      request->engine->TimedOut(*request->message, waited);
    }
  }
}

absl::Status Runtime::Complete(CommEntry& comm, Message& first, Message* second) {
  const auto poll = [&comm](Message& message) {
    return message.done() || comm.messages->Poll(message);
  };
  const absl::Time deadline = comm.comm().DefaultDeadline();
  if (active_.empty() && closing_.empty()) {
    for (Message* message : {&first, second}) {
      if (message != nullptr && !message->done()) comm.messages->Wait(*message, deadline);
    }
  } else {
    const absl::Time started = absl::Now();
    ProgressUntil([&] {
      if (poll(first) && (second == nullptr || poll(*second))) return true;
      if (absl::Now() < deadline) return false;
      for (Message* message : {&first, second}) {
        if (message != nullptr) comm.messages->TimedOut(*message, absl::Now() - started);
      }
      return true;
    });
  }
  if (!first.status().ok() || second == nullptr) return first.status();
  return second->status();
}

void Runtime::Drain() {
  if (orphans_ == 0) return;
  ProgressUntil([&] { return orphans_ == 0; });
}

MPI_Request Runtime::AddRequest(CommEntry& comm, const char* function, bool persistent) {
  auto entry = std::make_unique<RequestEntry>();
  entry->comm = &comm;
  entry->function = function;
  entry->persistent = persistent;
  ++comm.requests;
  RequestEntry& added = *entry;
  added.handle = requests_.Add(std::move(entry));
  return added.handle;
}

void Runtime::RemoveRequest(MPI_Request handle) {
  RequestEntry& request = *requests_.Find(handle);
  if (request.active) Deactivate(request);
  if (request.orphaned) --orphans_;
  CommEntry* comm = request.comm;
  requests_.Remove(handle);  // before its communicator, which it must not outlive
  if (--comm->requests == 0 && comm->freed) Retire(*comm);
}

void Runtime::Activate(RequestEntry& request) {
  request.active = true;
  active_.push_back(&request);
}

void Runtime::Deactivate(RequestEntry& request) {
  request.active = false;
  active_.erase(std::remove(active_.begin(), active_.end(), &request), active_.end());
}

absl::Status Runtime::Complete(Request& request) {
  if (active_.empty()) return request.Wait();
  absl::Status status;
  ProgressUntil([&] {
    absl::StatusOr<bool> done = request.Test();
    if (done.ok() && !*done) return false;
    status = done.status();
    return true;
  });
  return status;
}

void Runtime::ProgressUntil(absl::FunctionRef<bool()> done) {
  constexpr int kYieldingRounds = 200;
  // Collectives end by their own deadlines; messages wait at most the timeout here.
  const absl::Time deadline = WaitDeadline();
  for (int round = 0;; ++round) {
    if (done()) return;
    // Their outcomes stay in them, for the program's own Wait or Test.
    PollActive();
    if (done()) return;
    if (round % 16 == 15 && absl::Now() >= deadline) TimeOutMessages();
    if (round < kYieldingRounds) {
      sched_yield();
    } else {
      const timespec pause = {0, 50 * 1000};
      nanosleep(&pause, nullptr);
    }
  }
}

const ReduceOp* Runtime::FindOp(MPI_Op handle) const {
  static const auto* const kPredefined = [] {
    auto* ops = new std::vector<ReduceOp>();
    for (PredefinedOp op : AllPredefinedOps()) ops->emplace_back(op);
    return ops;
  }();
  const int index = handle - kOpBase;
  if (index >= 1 && index <= static_cast<int>(kNumPredefinedOps)) {
    return &(*kPredefined)[static_cast<size_t>(index - 1)];
  }
  return user_ops_.Find(handle);
}

MPI_Op Runtime::AddOp(ReduceOp op) {
  return user_ops_.Add(std::make_unique<ReduceOp>(std::move(op)));
}

int Runtime::CodeFor(const absl::Status& status) {
  const int error_class = ErrorClassOf(status);
  const int slot = next_message_;
  next_message_ = (next_message_ + 1) % kMessages;
  messages_[static_cast<size_t>(slot)] = std::string(status.message());
  // Slot s is stored as s + 1, so that a bare class (slot bits 0) is a code too.
  return error_class | ((slot + 1) << kClassBits);
}

bool Runtime::Describe(int code, std::string* text, int* error_class) const {
  if (code < 0) return false;
  *error_class = code & ((1 << kClassBits) - 1);
  const int slot = (code >> kClassBits) - 1;
  if (ErrorClassText(*error_class).empty() || slot >= kMessages) return false;
  *text = slot >= 0 && !messages_[static_cast<size_t>(slot)].empty()
              ? messages_[static_cast<size_t>(slot)]
              : std::string(ErrorClassText(*error_class));
  return true;
}

}  // namespace zcoll::mpi
