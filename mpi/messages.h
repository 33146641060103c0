// Point-to-point messages for the MPI interface (MPI_Send, MPI_Recv and their
// nonblocking forms): MPI's matching over the two message channels a Communicator
// offers (Communicator::PostChannelSend). Internal to //mpi.
//
// Matching. A receive names a source (or MPI_ANY_SOURCE) and a tag (or MPI_ANY_TAG).
// A message that arrives is matched against the posted receives in the order they
// were posted; a receive that is posted is matched against the messages that wait
// (the unexpected ones) in the order they arrived. Each peer's messages arrive in the
// order it sent them, as the engine keeps one receive posted per peer on the envelope
// channel and reposts it after each message, so MPI's non-overtaking rule holds.
//
// Protocols. A message of up to kEagerBytes travels inside its envelope: the send
// completes once the transport has it, and the receiver copies it out (from the
// unexpected queue, if it came first). A larger one sends an envelope that announces
// it (ready to send); once a receive matches it, the receiver posts a receive for the
// payload straight into the program's buffer and answers clear to send, and the sender
// then sends the payload from the program's buffer: no copy on either side. Payloads
// between a pair of ranks travel on one channel in the order the receiver asked for
// them, and both sides post in that order, so they cannot cross. A message to the
// rank itself is matched locally (copied once).
//
// A receive whose buffer is too small ends with MPI_ERR_TRUNCATE (an eager message's
// first bytes are copied; a large one's sender is told to drop the payload, and its
// send completes normally).
//
// Closing. A communicator's transport tags carry a context id that a later
// communicator may reuse, and a posted receive cannot be cancelled. So MPI_Comm_free
// closes the engine: it posts its envelope receives if it had not (every rank does),
// sends a close to every peer as its last message on the communicator, and the
// communicator is destroyed (its context freed) once a close has come from every
// peer and nothing is in flight.

#ifndef ZCOLL_MPI_MESSAGES_H_
#define ZCOLL_MPI_MESSAGES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "transport/transport.h"

namespace zcoll::mpi {

class MessageEngine;

// What travels on the envelope channel ahead of an eager message's payload, and alone
// for the protocol's other messages (MessageEngine::Kind).
struct MessageEnvelope {
  uint32_t kind = 0;
  int32_t tag = 0;
  uint64_t bytes = 0;   // the message's payload
  uint64_t id = 0;      // the sender's number for a large message, echoed in its answer
  uint64_t accept = 0;  // clear to send: 1 send the payload, 0 drop it (truncated)
};

// One send or receive (MPI_Isend, MPI_Irecv, or a blocking call's own).
class Message {
 public:
  bool done() const { return done_; }
  // Valid once done().
  const absl::Status& status() const { return status_; }
  // A receive's: the matched message's sender (in the program's ranks), tag, and the
  // bytes received.
  int source() const { return source_; }
  int tag() const { return tag_; }
  size_t bytes() const { return received_; }
  bool is_send() const { return is_send_; }
  // What it waits for, for a timeout's message: "a message from rank 1 with tag 7".
  std::string Describe() const;

 private:
  friend class MessageEngine;
  bool is_send_ = false;
  int peer_ = 0;  // the destination, or the source asked for (MPI_ANY_SOURCE)
  int tag_ = 0;   // the tag sent, or asked for (MPI_ANY_TAG); then the one matched
  const char* function_ = "";
  void* data_ = nullptr;  // a send's is only read
  size_t bytes_ = 0;      // a send's length, a receive's capacity
  uint64_t id_ = 0;

  // A send's envelope (and an eager payload after it), or a receive's answer.
  std::vector<char> envelope_;
  Completion envelope_sent_;
  bool envelope_posted_ = false;
  Completion payload_;
  bool payload_posted_ = false;
  bool matched_ = false;  // a receive that has its message; a large send that was answered

  int source_ = -1;
  size_t received_ = 0;
  bool done_ = false;
  absl::Status status_;
};

class MessageEngine {
 public:
  static constexpr size_t kEagerBytes = 4096;

  // Messages travel on `carrier` (an intracommunicator, or an intercommunicator's
  // bridge): the program's rank r is `carrier` rank carrier_ranks[r]. `self` is the
  // program's own rank among those (-1 on an intercommunicator, whose program ranks
  // are the other group's). `carrier` must outlive the engine.
  // `own_rank` is this process's rank in the program's communicator, for messages.
  MessageEngine(Communicator& carrier, std::vector<int> carrier_ranks, int self, int own_rank);
  // Hands what may still be pending in the transport to the job, which keeps it until
  // its transport is gone.
  ~MessageEngine();
  MessageEngine(const MessageEngine&) = delete;
  MessageEngine& operator=(const MessageEngine&) = delete;

  int ranks() const { return static_cast<int>(carrier_ranks_.size()); }

  // A send to or receive from MPI_PROC_NULL: done at once, its status the standard's
  // (source MPI_PROC_NULL, tag MPI_ANY_TAG, no bytes).
  static std::shared_ptr<Message> ProcNull(bool is_send);

  // Starts a send of `bytes` at `data` to `dest` (a program rank) with `tag` >= 0, or
  // a receive of up to `capacity` bytes from `source` (or MPI_ANY_SOURCE) with `tag`
  // (or MPI_ANY_TAG). The arguments are checked by the caller.
  absl::StatusOr<std::shared_ptr<Message>> Send(const void* data, size_t bytes, int dest, int tag,
                                                const char* function);
  absl::StatusOr<std::shared_ptr<Message>> Recv(void* data, size_t capacity, int source, int tag,
                                                const char* function);

  // Advances every message without blocking. An error is the job's failure, which
  // every message in flight now carries.
  absl::Status Progress();
  // Progress, then whether `message` is done.
  bool Poll(Message& message);
  // Blocks until `message` is done or `deadline` passes (then fails it and the job:
  // TimedOut).
  void Wait(Message& message, absl::Time deadline);
  // Ends `message` (not done) with DeadlineExceeded after the program waited for it
  // until its deadline, and fails the job with that: a peer that never sends (or
  // receives) must not leave this rank, or the peers waiting for this one, hanging.
  void TimedOut(Message& message, absl::Duration waited);

  // MPI_Comm_free: sends every peer the close (see the file comment).
  absl::Status Close();
  // Every peer's close arrived and no message is in flight: the communicator may go.
  bool Closed();

 private:
  enum Kind : uint32_t { kEager = 1, kReadyToSend = 2, kClearToSend = 3, kClose = 4 };
  // One peer's envelope channel: its posted receive, and the close sent to it.
  struct ChannelState {
    int rank = 0;  // the program's rank of the peer
    std::vector<char> buffer;
    Completion completion;
    bool posted = false;
    bool closed = false;  // its close arrived; nothing more comes
    std::array<char, sizeof(MessageEnvelope)> close{};
    Completion close_sent;
  };
  // A message that arrived before a receive matched it.
  struct Arrival {
    int source = 0;
    int tag = 0;
    uint64_t bytes = 0;
    uint64_t id = 0;  // a large message's
    bool large = false;
    std::vector<char> payload;       // an eager message's
    std::shared_ptr<Message> local;  // a large message to itself: the send
  };

  absl::StatusOr<std::shared_ptr<Message>> StartSend(const void* data, size_t bytes, int dest,
                                                     int tag, const char* function);
  absl::StatusOr<std::shared_ptr<Message>> StartRecv(void* data, size_t capacity, int source,
                                                     int tag, const char* function);
  // `started`, or the job's failure after a refused post.
  absl::StatusOr<std::shared_ptr<Message>> Checked(
      absl::StatusOr<std::shared_ptr<Message>> started);
  // Posts every peer's envelope receive, once.
  absl::Status OpenChannels();
  absl::Status Post(ChannelState& channel);
  absl::Status Handle(ChannelState& channel, const char* data, size_t length);
  // Matches `arrival` to the first posted receive it fits, else queues it (copying an
  // eager message's `payload`).
  absl::Status Arrive(Arrival arrival, const char* payload);
  // Gives `arrival` (an eager one's bytes at `payload`) to `receive`.
  absl::Status Deliver(Message& receive, Arrival& arrival, const char* payload);
  // Whether `message`'s transfers are all done; sets its outcome when they are.
  bool Finished(Message& message);
  void Complete(Message& message, absl::Status status);
  // Ends every message in flight with the job's failure.
  void FailAll(const absl::Status& failure);
  static bool Matches(const Message& receive, int source, int tag) {
    return (receive.peer_ == -1 || receive.peer_ == source) &&
           (receive.tag_ == -1 || receive.tag_ == tag);
  }
  absl::Status Truncation(const Message& receive, uint64_t bytes) const;

  Communicator& carrier_;
  std::vector<int> carrier_ranks_;
  int self_;
  int own_rank_;
  // Shared, so that the job can keep them while their receives are posted.
  std::shared_ptr<std::vector<ChannelState>> channels_;
  bool opened_ = false;
  uint64_t next_id_ = 1;
  std::deque<Arrival> unexpected_;
  std::deque<std::shared_ptr<Message>> posted_;      // receives not matched yet
  std::vector<std::shared_ptr<Message>> in_flight_;  // every message not done
  absl::Status failure_;
};

}  // namespace zcoll::mpi

#endif  // ZCOLL_MPI_MESSAGES_H_
