// Point-to-point calls: MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv, MPI_Sendrecv and their
// large-count (_c) twins, over each communicator's message engine (messages.h).
//
// Their refusals are local, as the standard's point-to-point errors are: a refused send
// does not fail the job. The receive it was meant for then ends at the timeout (a wait
// for a message fails the job after ZCOLL_TIMEOUT instead of hanging).

#include <climits>
#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "mpi/call_support.h"
#include "mpi/include/mpi.h"
#include "mpi/messages.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {
namespace {

enum class Direction { kSend, kRecv };

// The program's ranks a message may name on `entry`: its size, or the other group's.
int PeerCount(CommEntry& entry) {
  return entry.inter != nullptr ? entry.inter->remote_size() : entry.intra->size();
}

absl::Status LocalRefusal(CommEntry& entry, int error_class, absl::string_view detail) {
  return Refusal(error_class, absl::StrCat("rank ", entry.comm().rank(), ": ", detail));
}

// One side's arguments, checked: the bytes of `count` elements of `type` at `buffer`,
// and the peer (`peer_name` "dest" or "source") and tag.
template <typename Count>
absl::Status CheckSide(CommEntry& entry, Direction direction, const void* buffer, Count count,
                       MPI_Datatype type, int peer, int tag, size_t* bytes) {
  const bool send = direction == Direction::kSend;
  const char* count_name = send ? "sendcount" : "recvcount";
  const char* type_name = send ? "sendtype" : "recvtype";
  if (count < 0) {
    return LocalRefusal(entry, MPI_ERR_COUNT, absl::StrCat(count_name, " ", count, " is negative"));
  }
  TypeShape shape;
  RETURN_IF_ERROR(TypeOf(nullptr, type_name, type, &shape));
  const size_t elements = static_cast<size_t>(count);
  if (shape.bytes() != 0 && elements > SIZE_MAX / shape.bytes()) {
    return LocalRefusal(entry, MPI_ERR_COUNT,
                        absl::StrCat(count_name, " ", count, " of ", type_name,
                                     " is more bytes than this machine addresses"));
  }
  *bytes = elements * shape.bytes();
  if (buffer == nullptr && *bytes > 0) {
    return LocalRefusal(
        entry, MPI_ERR_BUFFER,
        absl::StrCat(send ? "sendbuf" : "recvbuf", " is a null pointer for ", *bytes, " bytes"));
  }
  const int peers = PeerCount(entry);
  const bool any_source = !send && peer == MPI_ANY_SOURCE;
  if (peer != MPI_PROC_NULL && !any_source && (peer < 0 || peer >= peers)) {
    return LocalRefusal(
        entry, MPI_ERR_RANK,
        absl::StrFormat("%s %d is not a rank of the %s (0 to %d)%s or MPI_PROC_NULL",
                        send ? "dest" : "source", peer,
                        entry.inter != nullptr ? "intercommunicator's other group" : "communicator",
                        peers - 1, send ? "" : ", MPI_ANY_SOURCE"));
  }
  if (tag < 0 && !(tag == MPI_ANY_TAG && !send)) {
    return LocalRefusal(entry, MPI_ERR_TAG,
                        absl::StrCat(send ? "sendtag " : "recvtag ", tag, " is negative",
                                     send ? "" : " and not MPI_ANY_TAG"));
  }
  return absl::OkStatus();
}

// Starts one side: a message of the engine, or a done one for MPI_PROC_NULL.
absl::StatusOr<std::shared_ptr<Message>> Start(CommEntry& entry, Direction direction, void* buffer,
                                               size_t bytes, int peer, int tag,
                                               const char* function) {
  if (peer == MPI_PROC_NULL) return MessageEngine::ProcNull(direction == Direction::kSend);
  MessageEngine& engine = entry.Messages();
  if (direction == Direction::kSend) return engine.Send(buffer, bytes, peer, tag, function);
  return engine.Recv(buffer, bytes, peer, tag, function);
}

template <typename Count>
int Blocking(const char* function, Direction direction, void* buffer, Count count,
             MPI_Datatype type, int peer, int tag, MPI_Comm comm, MPI_Status* status) {
  return OnComm(function, comm, [&](CommEntry& entry) {
    size_t bytes = 0;
    RETURN_IF_ERROR(CheckSide(entry, direction, buffer, count, type, peer, tag, &bytes));
    ASSIGN_OR_RETURN(std::shared_ptr<Message> message,
                     Start(entry, direction, buffer, bytes, peer, tag, function));
    const absl::Status completed = Runtime::Get().Complete(entry, *message);
    SetStatus(*message, status);
    return completed;
  });
}

template <typename Count>
int Nonblocking(const char* function, Direction direction, void* buffer, Count count,
                MPI_Datatype type, int peer, int tag, MPI_Comm comm, MPI_Request* request) {
  return OnComm(function, comm, [&](CommEntry& entry) {
    if (request == nullptr) return NullPointer(entry.comm().rank(), "request");
    size_t bytes = 0;
    RETURN_IF_ERROR(CheckSide(entry, direction, buffer, count, type, peer, tag, &bytes));
    ASSIGN_OR_RETURN(std::shared_ptr<Message> message,
                     Start(entry, direction, buffer, bytes, peer, tag, function));
    Runtime& rt = Runtime::Get();
    const MPI_Request handle = rt.AddRequest(entry, function, /*persistent=*/false);
    RequestEntry& added = *rt.FindRequest(handle);
    added.message = std::move(message);
    added.engine = entry.messages.get();
    rt.Activate(added);
    *request = handle;
    return absl::OkStatus();
  });
}

template <typename Count>
int Sendrecv(const char* function, const void* sendbuf, Count sendcount, MPI_Datatype sendtype,
             int dest, int sendtag, void* recvbuf, Count recvcount, MPI_Datatype recvtype,
             int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  return OnComm(function, comm, [&](CommEntry& entry) {
    size_t send_bytes = 0;
    size_t recv_bytes = 0;
    RETURN_IF_ERROR(CheckSide(entry, Direction::kSend, sendbuf, sendcount, sendtype, dest, sendtag,
                              &send_bytes));
    RETURN_IF_ERROR(CheckSide(entry, Direction::kRecv, recvbuf, recvcount, recvtype, source,
                              recvtag, &recv_bytes));
    // The receive first, so that a message to itself finds it.
    ASSIGN_OR_RETURN(
        std::shared_ptr<Message> received,
        Start(entry, Direction::kRecv, recvbuf, recv_bytes, source, recvtag, function));
    ASSIGN_OR_RETURN(std::shared_ptr<Message> sent,
                     Start(entry, Direction::kSend, const_cast<void*>(sendbuf), send_bytes, dest,
                           sendtag, function));
    const absl::Status completed = Runtime::Get().Complete(entry, *received, sent.get());
    SetStatus(*received, status);
    return completed;
  });
}

}  // namespace
}  // namespace zcoll::mpi

using zcoll::mpi::Direction;

int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return zcoll::mpi::Blocking("MPI_Send", Direction::kSend, const_cast<void*>(buf), count, datatype,
                              dest, tag, comm, MPI_STATUS_IGNORE);
}
int MPI_Send_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm) {
  return zcoll::mpi::Blocking("MPI_Send_c", Direction::kSend, const_cast<void*>(buf), count,
                              datatype, dest, tag, comm, MPI_STATUS_IGNORE);
}
int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  return zcoll::mpi::Blocking("MPI_Recv", Direction::kRecv, buf, count, datatype, source, tag, comm,
                              status);
}
int MPI_Recv_c(void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status* status) {
  return zcoll::mpi::Blocking("MPI_Recv_c", Direction::kRecv, buf, count, datatype, source, tag,
                              comm, status);
}
int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return zcoll::mpi::Nonblocking("MPI_Isend", Direction::kSend, const_cast<void*>(buf), count,
                                 datatype, dest, tag, comm, request);
}
int MPI_Isend_c(const void* buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Nonblocking("MPI_Isend_c", Direction::kSend, const_cast<void*>(buf), count,
                                 datatype, dest, tag, comm, request);
}
int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return zcoll::mpi::Nonblocking("MPI_Irecv", Direction::kRecv, buf, count, datatype, source, tag,
                                 comm, request);
}
int MPI_Irecv_c(void* buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request* request) {
  return zcoll::mpi::Nonblocking("MPI_Irecv_c", Direction::kRecv, buf, count, datatype, source, tag,
                                 comm, request);
}
int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  return zcoll::mpi::Sendrecv("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                              recvcount, recvtype, source, recvtag, comm, status);
}
int MPI_Sendrecv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  return zcoll::mpi::Sendrecv("MPI_Sendrecv_c", sendbuf, sendcount, sendtype, dest, sendtag,
                              recvbuf, recvcount, recvtype, source, recvtag, comm, status);
}
