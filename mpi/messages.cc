#include "mpi/messages.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {
namespace {

using Channel = Communicator::MessageChannel;

// Envelopes a peer's channel takes per Progress, so that one busy sender cannot keep
// a poll from returning.
constexpr int kEnvelopesPerPoll = 64;

std::string RankOrAny(int rank) {
  return rank == MPI_ANY_SOURCE ? std::string("any rank") : absl::StrCat("rank ", rank);
}
std::string TagOrAny(int tag) {
  return tag == MPI_ANY_TAG ? std::string("any tag") : absl::StrCat("tag ", tag);
}

}  // namespace

std::string Message::Describe() const {
  if (is_send_) {
    return absl::StrCat("the send of ", bytes_, " bytes to rank ", peer_, " with tag ", tag_);
  }
  return absl::StrCat("the receive from ", RankOrAny(peer_), " with ", TagOrAny(tag_));
}

MessageEngine::MessageEngine(Communicator& carrier, std::vector<int> carrier_ranks, int self,
                             int own_rank)
    : carrier_(carrier),
      carrier_ranks_(std::move(carrier_ranks)),
      self_(self),
      own_rank_(own_rank) {}

MessageEngine::~MessageEngine() {
  // Receives stay posted until a close ends them, and a failed job abandons what was
  // in flight: the transport may still hold their buffers and Completions.
  Transport& transport = carrier_.transport();
  if (channels_ != nullptr) transport.KeepUntilDestroyed(channels_);
  for (std::shared_ptr<Message>& message : in_flight_) transport.KeepUntilDestroyed(message);
}

std::shared_ptr<Message> MessageEngine::ProcNull(bool is_send) {
  auto message = std::make_shared<Message>();
  message->is_send_ = is_send;
  message->source_ = MPI_PROC_NULL;
  message->tag_ = MPI_ANY_TAG;
  message->done_ = true;
  return message;
}

absl::StatusOr<std::shared_ptr<Message>> MessageEngine::Send(const void* data, size_t bytes,
                                                             int dest, int tag,
                                                             const char* function) {
  absl::StatusOr<std::shared_ptr<Message>> started = StartSend(data, bytes, dest, tag, function);
  return Checked(std::move(started));
}

absl::StatusOr<std::shared_ptr<Message>> MessageEngine::Recv(void* data, size_t capacity,
                                                             int source, int tag,
                                                             const char* function) {
  absl::StatusOr<std::shared_ptr<Message>> started =
      StartRecv(data, capacity, source, tag, function);
  return Checked(std::move(started));
}

absl::StatusOr<std::shared_ptr<Message>> MessageEngine::Checked(
    absl::StatusOr<std::shared_ptr<Message>> started) {
  if (started.ok() || !failure_.ok()) return started;
  // A post the transport refused: the job's failure (the arguments were checked), which
  // every message in flight shares, so that none keeps a buffer of a call that returned.
  FailAll(carrier_.FailJob(started.status()));
  return failure_;
}

absl::StatusOr<std::shared_ptr<Message>> MessageEngine::StartSend(const void* data, size_t bytes,
                                                                  int dest, int tag,
                                                                  const char* function) {
  RETURN_IF_ERROR(failure_);
  auto message = std::make_shared<Message>();
  message->is_send_ = true;
  message->peer_ = dest;
  message->tag_ = tag;
  message->function_ = function;
  message->data_ = const_cast<void*>(data);
  message->bytes_ = bytes;
  const bool eager = bytes <= kEagerBytes;
  if (dest == self_) {
    Arrival arrival;
    arrival.source = self_;
    arrival.tag = tag;
    arrival.bytes = bytes;
    message->id_ = eager ? 0 : next_id_++;
    if (eager) {
      // Copied at once, so that a program may send to itself before it receives.
      message->done_ = true;
    } else {
      // Copied when a receive takes it: the send completes then.
      arrival.large = true;
      arrival.local = message;
      in_flight_.push_back(message);
    }
    RETURN_IF_ERROR(Arrive(std::move(arrival), eager ? static_cast<const char*>(data) : nullptr));
    return message;
  }
  RETURN_IF_ERROR(OpenChannels());
  MessageEnvelope envelope;
  envelope.kind = eager ? kEager : kReadyToSend;
  envelope.tag = tag;
  envelope.bytes = bytes;
  envelope.id = eager ? 0 : next_id_++;
  message->id_ = envelope.id;
  message->envelope_.resize(sizeof(envelope) + (eager ? bytes : 0));
  std::memcpy(message->envelope_.data(), &envelope, sizeof(envelope));
  if (eager && bytes > 0) std::memcpy(message->envelope_.data() + sizeof(envelope), data, bytes);
  RETURN_IF_ERROR(carrier_.PostChannelSend(carrier_ranks_[static_cast<size_t>(dest)],
                                           Channel::kEnvelope, message->envelope_.data(),
                                           message->envelope_.size(), &message->envelope_sent_));
  message->envelope_posted_ = true;
  in_flight_.push_back(message);
  return message;
}

absl::StatusOr<std::shared_ptr<Message>> MessageEngine::StartRecv(void* data, size_t capacity,
                                                                  int source, int tag,
                                                                  const char* function) {
  RETURN_IF_ERROR(failure_);
  if (source == MPI_ANY_SOURCE || source != self_) RETURN_IF_ERROR(OpenChannels());
  auto message = std::make_shared<Message>();
  message->peer_ = source;
  message->tag_ = tag;
  message->function_ = function;
  message->data_ = data;
  message->bytes_ = capacity;
  in_flight_.push_back(message);
  for (auto waiting = unexpected_.begin(); waiting != unexpected_.end(); ++waiting) {
    if (!Matches(*message, waiting->source, waiting->tag)) continue;
    Arrival arrival = std::move(*waiting);
    unexpected_.erase(waiting);
    RETURN_IF_ERROR(Deliver(*message, arrival, arrival.payload.data()));
    return message;
  }
  posted_.push_back(message);
  return message;
}

absl::Status MessageEngine::OpenChannels() {
  if (opened_) return absl::OkStatus();
  opened_ = true;
  const size_t peers = carrier_ranks_.size() - (self_ >= 0 ? 1 : 0);
  channels_ = std::make_shared<std::vector<ChannelState>>(peers);
  size_t next = 0;
  for (int rank = 0; rank < ranks(); ++rank) {
    if (rank == self_) continue;
    ChannelState& channel = (*channels_)[next++];
    channel.rank = rank;
    channel.buffer.resize(sizeof(MessageEnvelope) + kEagerBytes);
    RETURN_IF_ERROR(Post(channel));
  }
  return absl::OkStatus();
}

absl::Status MessageEngine::Post(ChannelState& channel) {
  channel.completion.Reset();
  RETURN_IF_ERROR(carrier_.PostChannelRecv(carrier_ranks_[static_cast<size_t>(channel.rank)],
                                           Channel::kEnvelope, channel.buffer.data(),
                                           channel.buffer.size(), &channel.completion));
  channel.posted = true;
  return absl::OkStatus();
}

absl::Status MessageEngine::Handle(ChannelState& channel, const char* data, size_t length) {
  MessageEnvelope envelope;
  if (length < sizeof(envelope)) {
    return absl::InternalError(absl::StrCat("rank ", own_rank_, ": a message envelope from rank ",
                                            channel.rank, " is ", length, " bytes long"));
  }
  std::memcpy(&envelope, data, sizeof(envelope));
  switch (envelope.kind) {
    case kEager:
    case kReadyToSend: {
      const bool large = envelope.kind == kReadyToSend;
      if (!large && length != sizeof(envelope) + envelope.bytes) break;
      Arrival arrival;
      arrival.source = channel.rank;
      arrival.tag = envelope.tag;
      arrival.bytes = envelope.bytes;
      arrival.id = envelope.id;
      arrival.large = large;
      return Arrive(std::move(arrival), large ? nullptr : data + sizeof(envelope));
    }
    case kClearToSend: {
      for (std::shared_ptr<Message>& send : in_flight_) {
        if (!send->is_send_ || send->peer_ != channel.rank || send->id_ != envelope.id ||
            send->matched_) {
          continue;
        }
        send->matched_ = true;
        // (Not accepted: the receive was truncated, and the payload is dropped.)
        if (envelope.accept == 0) return absl::OkStatus();
        RETURN_IF_ERROR(carrier_.PostChannelSend(carrier_ranks_[static_cast<size_t>(channel.rank)],
                                                 Channel::kPayload, send->data_, send->bytes_,
                                                 &send->payload_));
        send->payload_posted_ = true;
        return absl::OkStatus();
      }
      return absl::InternalError(absl::StrCat("rank ", own_rank_, ": rank ", channel.rank,
                                              " asked for the payload of message ", envelope.id,
                                              ", which this rank is not sending"));
    }
    case kClose:
      channel.closed = true;
      return absl::OkStatus();
    default:
      break;
  }
  return absl::InternalError(absl::StrCat("rank ", own_rank_,
                                          ": a malformed message envelope from rank ", channel.rank,
                                          " (kind ", envelope.kind, ")"));
}

absl::Status MessageEngine::Arrive(Arrival arrival, const char* payload) {
  for (auto receive = posted_.begin(); receive != posted_.end(); ++receive) {
    if (!Matches(**receive, arrival.source, arrival.tag)) continue;
    const std::shared_ptr<Message> matched = *receive;
    posted_.erase(receive);
    return Deliver(*matched, arrival, payload);
  }
  if (!arrival.large && arrival.bytes > 0) {
    arrival.payload.assign(payload, payload + arrival.bytes);
  }
  unexpected_.push_back(std::move(arrival));
  return absl::OkStatus();
}

absl::Status MessageEngine::Deliver(Message& receive, Arrival& arrival, const char* payload) {
  receive.matched_ = true;
  receive.source_ = arrival.source;
  receive.tag_ = arrival.tag;
  const bool fits = arrival.bytes <= receive.bytes_;
  const size_t copied = std::min<size_t>(arrival.bytes, receive.bytes_);
  if (!fits) receive.status_ = Truncation(receive, arrival.bytes);
  if (!arrival.large || arrival.local != nullptr) {
    const char* from =
        arrival.local != nullptr ? static_cast<const char*>(arrival.local->data_) : payload;
    if (copied > 0) std::memcpy(receive.data_, from, copied);
    receive.received_ = copied;
    if (arrival.local != nullptr) Complete(*arrival.local, absl::OkStatus());
    Complete(receive, receive.status_);
    return absl::OkStatus();
  }
  if (fits && arrival.bytes > 0) {
    RETURN_IF_ERROR(carrier_.PostChannelRecv(carrier_ranks_[static_cast<size_t>(arrival.source)],
                                             Channel::kPayload, receive.data_, arrival.bytes,
                                             &receive.payload_));
    receive.payload_posted_ = true;
    receive.received_ = arrival.bytes;
  }
  // The answer, after the payload's receive is posted: the sender sends it only then.
  MessageEnvelope answer;
  answer.kind = kClearToSend;
  answer.tag = arrival.tag;
  answer.bytes = arrival.bytes;
  answer.id = arrival.id;
  answer.accept = fits && arrival.bytes > 0 ? 1 : 0;
  receive.envelope_.resize(sizeof(answer));
  std::memcpy(receive.envelope_.data(), &answer, sizeof(answer));
  RETURN_IF_ERROR(carrier_.PostChannelSend(carrier_ranks_[static_cast<size_t>(arrival.source)],
                                           Channel::kEnvelope, receive.envelope_.data(),
                                           receive.envelope_.size(), &receive.envelope_sent_));
  receive.envelope_posted_ = true;
  return absl::OkStatus();
}

absl::Status MessageEngine::Truncation(const Message& receive, uint64_t bytes) const {
  return Refusal(MPI_ERR_TRUNCATE,
                 absl::StrCat("rank ", own_rank_, ": the message from rank ", receive.source_,
                              " with tag ", receive.tag_, " has ", bytes,
                              " bytes, more than the receive buffer's ", receive.bytes_));
}

absl::Status MessageEngine::Progress() {
  RETURN_IF_ERROR(failure_);
  absl::Status status = carrier_.transport().Progress();
  if (status.ok() && channels_ != nullptr) {
    for (ChannelState& channel : *channels_) {
      for (int taken = 0;
           status.ok() && taken < kEnvelopesPerPoll && channel.posted && channel.completion.done();
           ++taken) {
        channel.posted = false;
        status = channel.completion.status();
        if (status.ok()) {
          status = Handle(channel, channel.buffer.data(), channel.completion.bytes());
        }
        if (status.ok() && !channel.closed) status = Post(channel);
      }
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) {
    FailAll(carrier_.FailJob(status));
    return failure_;
  }
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                  [this](const std::shared_ptr<Message>& message) {
                                    return message->done_ || Finished(*message);
                                  }),
                   in_flight_.end());
  return absl::OkStatus();
}

bool MessageEngine::Finished(Message& message) {
  // A receive waits for its message, a large send (one with an id) for its answer; an
  // eager send only for its envelope to leave.
  if (!message.matched_ && (!message.is_send_ || message.id_ != 0)) return false;
  if (message.envelope_posted_ && !message.envelope_sent_.done()) return false;
  if (message.payload_posted_ && !message.payload_.done()) return false;
  absl::Status status = message.status_;
  if (message.envelope_posted_ && !message.envelope_sent_.status().ok()) {
    status = message.envelope_sent_.status();
  } else if (message.payload_posted_ && !message.payload_.status().ok()) {
    status = message.payload_.status();
  }
  Complete(message, std::move(status));
  return true;
}

void MessageEngine::Complete(Message& message, absl::Status status) {
  message.status_ = std::move(status);
  message.done_ = true;
}

void MessageEngine::FailAll(const absl::Status& failure) {
  failure_ = failure;
  Transport& transport = carrier_.transport();
  for (std::shared_ptr<Message>& message : in_flight_) {
    if (!message->done_) Complete(*message, failure);
    transport.KeepUntilDestroyed(message);  // abandoned, perhaps still posted
  }
  in_flight_.clear();
  posted_.clear();
}

bool MessageEngine::Poll(Message& message) {
  if (message.done_) return true;
  Progress().IgnoreError();  // (a failure is in the message now)
  return message.done_;
}

void MessageEngine::Wait(Message& message, absl::Time deadline) {
  if (message.done_) return;
  const absl::Time started = absl::Now();
  const absl::Status waited = carrier_.transport().WaitFor(
      [&] { return Poll(message) ? Transport::PollResult::kDone : Transport::PollResult::kIdle; },
      deadline);
  if (message.done_) return;
  if (absl::IsDeadlineExceeded(waited)) {
    TimedOut(message, absl::Now() - started);
  } else {
    FailAll(carrier_.FailJob(waited.ok() ? absl::InternalError("a wait ended early") : waited));
  }
}

void MessageEngine::TimedOut(Message& message, absl::Duration waited) {
  if (message.done_) return;
  const absl::Status timeout = absl::DeadlineExceededError(
      absl::StrCat("rank ", own_rank_, ": ", message.Describe(), " (of ", message.function_,
                   ") did not complete in ", absl::FormatDuration(waited),
                   " of waiting (ZCOLL_TIMEOUT); the job fails so that no rank waits for it"));
  FailAll(carrier_.FailJob(timeout));
}

absl::Status MessageEngine::Close() {
  RETURN_IF_ERROR(failure_);
  RETURN_IF_ERROR(OpenChannels());
  for (ChannelState& channel : *channels_) {
    MessageEnvelope close;
    close.kind = kClose;
    std::memcpy(channel.close.data(), &close, sizeof(close));
    RETURN_IF_ERROR(carrier_.PostChannelSend(carrier_ranks_[static_cast<size_t>(channel.rank)],
                                             Channel::kEnvelope, channel.close.data(),
                                             channel.close.size(), &channel.close_sent));
  }
  return absl::OkStatus();
}

bool MessageEngine::Closed() {
  if (!Progress().ok()) return true;  // failed: nothing moves again
  if (!in_flight_.empty() || channels_ == nullptr) return in_flight_.empty();
  for (const ChannelState& channel : *channels_) {
    if (!channel.closed || !channel.close_sent.done()) return false;
  }
  return true;
}

}  // namespace zcoll::mpi
