// MPI_Request's calls: completing (Wait, Test and their all/any forms), starting
// persistent requests (Start, Startall) and freeing them (Request_free).
//
// A wait advances every active request, not only the ones it waits for
// (Runtime::ProgressUntil): MPI's progress rule, which a program relies on when two
// ranks wait for two collectives in opposite orders.

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "mpi/call_support.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {
namespace {

// A request handle's entry: null for MPI_REQUEST_NULL, a refusal for any other int that
// is no live request.
absl::Status EntryOf(MPI_Request handle, const char* name, RequestEntry** entry) {
  *entry = nullptr;
  if (handle == MPI_REQUEST_NULL) return absl::OkStatus();
  *entry = Runtime::Get().FindRequest(handle);
  if (*entry != nullptr) return absl::OkStatus();
  return Refusal(MPI_ERR_REQUEST,
                 absl::StrFormat("rank %d: %s 0x%x is not a request (never one, or completed and "
                                 "so freed)",
                                 WorldRank(), name, handle));
}

// A request array of `count` entries, checked whole before any is used, into
// `entries` (the calling thread's scratch: no allocation per call once it has grown).
absl::Status EntriesOf(int count, const MPI_Request* requests,
                       std::vector<RequestEntry*>** entries) {
  thread_local std::vector<RequestEntry*> scratch;
  *entries = &scratch;
  scratch.clear();
  if (count < 0) {
    return Refusal(MPI_ERR_COUNT,
                   absl::StrCat("rank ", WorldRank(), ": count ", count, " is negative"));
  }
  if (count > 0 && requests == nullptr) return NullPointer(WorldRank(), "array_of_requests");
  scratch.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    scratch[static_cast<size_t>(i)] = Runtime::Get().FindRequest(requests[i]);
    if (scratch[static_cast<size_t>(i)] == nullptr) {
      const std::string name = absl::StrCat("array_of_requests[", i, "]");
      return EntryOf(requests[i], name.c_str(), &scratch[static_cast<size_t>(i)]);
    }
  }
  return absl::OkStatus();
}

// Whether a completion call has something to wait for in `entry`.
bool Pending(const RequestEntry* entry) { return entry != nullptr && entry->active; }

// Polls `entry` (active): true once it completed.
bool Completed(RequestEntry& entry) {
  absl::StatusOr<bool> done = entry.Poll();
  return !done.ok() || *done;
}

// Ends the program's view of an active request that completed: its status, and for a
// nonblocking one the request itself (the handle becomes MPI_REQUEST_NULL); a
// persistent one is inactive again. Returns MPI_SUCCESS or the error code its
// communicator's handler gives the failure.
int Retire(const char* function, MPI_Request* handle, RequestEntry& entry, MPI_Status* status_out) {
  Runtime& rt = Runtime::Get();
  const absl::Status status = entry.Wait();  // completed: returns its status at once
  if (entry.message != nullptr) SetStatus(*entry.message, status_out);
  rt.Deactivate(entry);
  // Raised before the request goes: it may be the last thing holding a freed
  // communicator, whose handler this is.
  const int code = status.ok() ? MPI_SUCCESS : Raise(entry.comm, function, status);
  if (!entry.persistent) {
    rt.RemoveRequest(*handle);
    *handle = MPI_REQUEST_NULL;
  }
  return code;
}

// The one active request of the job: its own blocking wait (no other request to
// advance). Otherwise everyone advances until `done`.
void WaitFor(RequestEntry* only, absl::FunctionRef<bool()> done) {
  Runtime& rt = Runtime::Get();
  if (only != nullptr && rt.ActiveCount() == 1) {
    only->Wait().IgnoreError();  // (Retire reads the outcome)
    return;
  }
  rt.ProgressUntil(done);
}

// Retires every completed active request of `entries` into `statuses` (each status's
// MPI_ERROR set when `set_errors`). MPI_ERR_IN_STATUS if one failed.
int RetireAll(const char* function, int count, MPI_Request* requests,
              const std::vector<RequestEntry*>& entries, MPI_Status* statuses) {
  bool failed = false;
  for (int i = 0; i < count; ++i) {
    RequestEntry* entry = entries[static_cast<size_t>(i)];
    MPI_Status* status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
    SetEmpty(status);
    int code = MPI_SUCCESS;
    if (Pending(entry)) code = Retire(function, &requests[i], *entry, status);
    failed = failed || code != MPI_SUCCESS;
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = code;
  }
  return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

}  // namespace
}  // namespace zcoll::mpi

using zcoll::mpi::Local;
using zcoll::mpi::RequestEntry;
using zcoll::mpi::Runtime;
using zcoll::mpi::WorldRank;

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  RequestEntry* entry = nullptr;
  const int checked = Local("MPI_Wait", [&] {
    if (request == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "request");
    return zcoll::mpi::EntryOf(*request, "request", &entry);
  });
  if (checked != MPI_SUCCESS) return checked;
  zcoll::mpi::SetEmpty(status);
  if (!zcoll::mpi::Pending(entry)) return MPI_SUCCESS;
  zcoll::mpi::WaitFor(entry, [&] { return zcoll::mpi::Completed(*entry); });
  return zcoll::mpi::Retire("MPI_Wait", request, *entry, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  RequestEntry* entry = nullptr;
  const int checked = Local("MPI_Test", [&] {
    if (request == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "request");
    if (flag == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "flag");
    return zcoll::mpi::EntryOf(*request, "request", &entry);
  });
  if (checked != MPI_SUCCESS) return checked;
  Runtime::Get().PollActive();
  *flag = 1;
  zcoll::mpi::SetEmpty(status);
  if (!zcoll::mpi::Pending(entry)) return MPI_SUCCESS;
  if (!zcoll::mpi::Completed(*entry)) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  return zcoll::mpi::Retire("MPI_Test", request, *entry, status);
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  std::vector<RequestEntry*>* scratch = nullptr;
  const int checked = Local(
      "MPI_Waitall", [&] { return zcoll::mpi::EntriesOf(count, array_of_requests, &scratch); });
  if (checked != MPI_SUCCESS) return checked;
  const std::vector<RequestEntry*>& entries = *scratch;
  RequestEntry* only = entries.size() == 1 ? entries[0] : nullptr;
  zcoll::mpi::WaitFor(only, [&] {
    bool all = true;
    for (RequestEntry* entry : entries) {
      if (zcoll::mpi::Pending(entry) && !zcoll::mpi::Completed(*entry)) all = false;
    }
    return all;
  });
  return zcoll::mpi::RetireAll("MPI_Waitall", count, array_of_requests, entries, array_of_statuses);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int* flag,
                MPI_Status array_of_statuses[]) {
  std::vector<RequestEntry*>* scratch = nullptr;
  const int checked = Local("MPI_Testall", [&] {
    if (flag == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "flag");
    return zcoll::mpi::EntriesOf(count, array_of_requests, &scratch);
  });
  if (checked != MPI_SUCCESS) return checked;
  const std::vector<RequestEntry*>& entries = *scratch;
  Runtime::Get().PollActive();
  for (RequestEntry* entry : entries) {
    // Not all complete: none is retired (the standard's rule).
    if (zcoll::mpi::Pending(entry) && !zcoll::mpi::Completed(*entry)) {
      *flag = 0;
      return MPI_SUCCESS;
    }
  }
  *flag = 1;
  return zcoll::mpi::RetireAll("MPI_Testall", count, array_of_requests, entries, array_of_statuses);
}

namespace zcoll::mpi {
namespace {
// The first of `entries` that is active and completed, or -1.
int FirstCompleted(const std::vector<RequestEntry*>& entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (Pending(entries[i]) && Completed(*entries[i])) return static_cast<int>(i);
  }
  return -1;
}
bool AnyPending(const std::vector<RequestEntry*>& entries) {
  for (RequestEntry* entry : entries) {
    if (Pending(entry)) return true;
  }
  return false;
}
}  // namespace
}  // namespace zcoll::mpi

int MPI_Waitany(int count, MPI_Request array_of_requests[], int* index, MPI_Status* status) {
  std::vector<RequestEntry*>* scratch = nullptr;
  const int checked = Local("MPI_Waitany", [&] {
    if (index == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "index");
    return zcoll::mpi::EntriesOf(count, array_of_requests, &scratch);
  });
  if (checked != MPI_SUCCESS) return checked;
  const std::vector<RequestEntry*>& entries = *scratch;
  zcoll::mpi::SetEmpty(status);
  *index = MPI_UNDEFINED;
  if (!zcoll::mpi::AnyPending(entries)) return MPI_SUCCESS;
  int first = -1;
  zcoll::mpi::WaitFor(nullptr, [&] {
    first = zcoll::mpi::FirstCompleted(entries);
    return first >= 0;
  });
  *index = first;
  return zcoll::mpi::Retire("MPI_Waitany", &array_of_requests[first],
                            *entries[static_cast<size_t>(first)], status);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int* index, int* flag,
                MPI_Status* status) {
  std::vector<RequestEntry*>* scratch = nullptr;
  const int checked = Local("MPI_Testany", [&] {
    if (index == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "index");
    if (flag == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "flag");
    return zcoll::mpi::EntriesOf(count, array_of_requests, &scratch);
  });
  if (checked != MPI_SUCCESS) return checked;
  const std::vector<RequestEntry*>& entries = *scratch;
  Runtime::Get().PollActive();
  *index = MPI_UNDEFINED;
  zcoll::mpi::SetEmpty(status);
  // No active request: flag true with MPI_UNDEFINED (the standard's rule).
  *flag = zcoll::mpi::AnyPending(entries) ? 0 : 1;
  const int first = zcoll::mpi::FirstCompleted(entries);
  if (first < 0) return MPI_SUCCESS;
  *flag = 1;
  *index = first;
  return zcoll::mpi::Retire("MPI_Testany", &array_of_requests[first],
                            *entries[static_cast<size_t>(first)], status);
}

int MPI_Start(MPI_Request* request) {
  if (request == nullptr) {
    return Local("MPI_Start", [] { return zcoll::mpi::NullPointer(WorldRank(), "request"); });
  }
  return MPI_Startall(1, request);
}

int MPI_Startall(int count, MPI_Request array_of_requests[]) {
  std::vector<RequestEntry*>* scratch = nullptr;
  const int checked = Local("MPI_Startall", [&] {
    RETURN_IF_ERROR(zcoll::mpi::EntriesOf(count, array_of_requests, &scratch));
    for (size_t i = 0; i < scratch->size(); ++i) {
      const RequestEntry* entry = (*scratch)[i];
      const char* problem = entry == nullptr ? "is MPI_REQUEST_NULL"
                            : entry->message != nullptr
                                ? "is a nonblocking send's or receive's, not persistent"
                            : !entry->persistent ? "is a nonblocking collective's, not persistent"
                            : entry->active ? "is active (complete it before starting it again)"
                                            : nullptr;
      if (problem != nullptr) {
        return zcoll::mpi::Refusal(
            MPI_ERR_REQUEST, absl::StrCat("rank ", WorldRank(), ": request ", i, " ", problem));
      }
    }
    return absl::OkStatus();
  });
  if (checked != MPI_SUCCESS) return checked;
  const std::vector<RequestEntry*>& entries = *scratch;
  for (RequestEntry* entry : entries) {
    const absl::Status started = entry->persistent_request.Start();
    if (!started.ok()) return zcoll::mpi::Raise(entry->comm, "MPI_Start", started);
    Runtime::Get().Activate(*entry);
  }
  return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request* request) {
  return Local("MPI_Request_free", [&] {
    if (request == nullptr) return zcoll::mpi::NullPointer(WorldRank(), "request");
    RequestEntry* entry = nullptr;
    RETURN_IF_ERROR(zcoll::mpi::EntryOf(*request, "request", &entry));
    Runtime& rt = Runtime::Get();
    if (entry != nullptr && entry->message != nullptr) {
      // A send or receive completes on its own; the runtime lets it go then (or at once).
      if (entry->active && !entry->message->done()) {
        rt.Orphan(*entry);
      } else {
        rt.RemoveRequest(*request);
      }
      *request = MPI_REQUEST_NULL;
      return absl::OkStatus();
    }
    const char* problem =
        entry == nullptr ? "is MPI_REQUEST_NULL"
        : !entry->persistent
            ? "is a nonblocking collective's, which the standard does not let a program free; "
              "complete it with MPI_Wait or MPI_Test"
        : entry->active ? "is an active persistent collective; complete it first"
                        : nullptr;
    if (problem != nullptr) {
      return zcoll::mpi::Refusal(MPI_ERR_REQUEST,
                                 absl::StrCat("rank ", WorldRank(), ": request ", problem));
    }
    rt.RemoveRequest(*request);
    *request = MPI_REQUEST_NULL;
    return absl::OkStatus();
  });
}
