#include "collectives/communicator_transport.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collectives/control_records.h"
#include "core/status_macros.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

// The control channel's single tag: every notice of a peer matches the one receive
// this rank keeps posted for it.
constexpr uint64_t kControlTag = uint64_t{kMaxContexts} << kCommunicatorTagBits;

// How long a rank that saw a peer leave waits for a notice saying why.
constexpr absl::Duration kNoticeGrace = absl::Milliseconds(200);

// The ranks `rank` tells (distance 1, 2, 4, ... ahead) and listens to (behind).
std::vector<int> Neighbours(int rank, int size, int direction) {
  std::vector<int> neighbours;
  for (int64_t distance = 1; distance < size; distance *= 2) {
    const int peer = static_cast<int>((rank + direction * distance % size + size) % size);
    if (std::find(neighbours.begin(), neighbours.end(), peer) == neighbours.end()) {
      neighbours.push_back(peer);
    }
  }
  return neighbours;
}

// A peer's view of a remote region: the job transport's, under a communicator rank.
class CommunicatorRemote final : public RemoteRegion {
 public:
  CommunicatorRemote(const Transport* owner, int peer, std::unique_ptr<RemoteRegion> inner)
      : RemoteRegion(peer, inner->base(), inner->length(), inner->access()),
        owner_(owner),
        inner_(std::move(inner)) {}
  const Transport* owner() const { return owner_; }
  const RemoteRegion& inner() const { return *inner_; }

 private:
  const Transport* owner_;
  std::unique_ptr<RemoteRegion> inner_;
};

}  // namespace

// -----------------------------------------------------------------------------------
// JobConnection

JobConnection::JobConnection(std::unique_ptr<Transport> transport, HowRankEnded how_ended)
    : rank_(transport->rank()),
      size_(transport->size()),
      provider_name_(transport->provider_name()),
      how_ended_(std::move(how_ended)),
      transport_(std::move(transport)),
      context_in_use_(kMaxContexts, false) {}

absl::StatusOr<std::shared_ptr<JobConnection>> JobConnection::Create(
    std::unique_ptr<Transport> transport, HowRankEnded how_ended) {
  std::shared_ptr<JobConnection> job(new JobConnection(std::move(transport), std::move(how_ended)));
  {
    MutexLock lock(&job->mu_);
    RETURN_IF_ERROR(job->Listen());
  }
  return job;
}

absl::Status JobConnection::Listen() {
  for (int peer : Neighbours(rank_, size_, -1)) {
    auto listener = std::make_unique<Listener>();
    listener->peer = peer;
    RETURN_IF_ERROR(transport_->PostRecv(peer, kControlTag, listener->buffer.data(),
                                         listener->buffer.size(), &listener->completion));
    listeners_.push_back(std::move(listener));
  }
  return absl::OkStatus();
}

JobConnection::~JobConnection() {
  MutexLock lock(&mu_);
  // (A failed job's notices left before its transport froze.)
  if (!failed()) {
    SendToListeners(EncodeNotice(NoticeKind::kGoodbye, rank_, absl::OkStatus()));
    WaitForOutgoing(absl::Now() + absl::Seconds(1));
  }
  // Ends every pending operation (the listeners' receives and what kept_ holds among
  // them) before their buffers go.
  transport_.reset();
  kept_.clear();
}

absl::StatusOr<uint32_t> JobConnection::AllocateContext() {
  MutexLock lock(&mu_);
  for (uint32_t context = 0; context < kMaxContexts; ++context) {
    if (!context_in_use_[context]) {
      context_in_use_[context] = true;
      return context;
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("rank ", rank_, ": all ", kMaxContexts,
                   " communicator context ids of this process are in use; destroy "
                   "communicators that are no longer needed"));
}

void JobConnection::ReleaseContext(uint32_t context) {
  MutexLock lock(&mu_);
  if (context < kMaxContexts) context_in_use_[context] = false;
}

absl::Status JobConnection::FailureStatus() const {
  if (!failed()) return absl::OkStatus();
  return absl::AbortedError(
      absl::StrCat("rank ", rank_, ": the job failed earlier: ", failure_.message()));
}

absl::Status JobConnection::WithHowItEnded(const absl::Status& cause) const {
  const std::optional<int> peer = PeerOfError(cause);
  if (!how_ended_ || !absl::IsUnavailable(cause) || !peer.has_value()) return cause;
  const std::optional<std::string> ended = how_ended_(*peer, absl::Now() + kNoticeGrace);
  if (!ended.has_value() || absl::StrContains(cause.message(), *ended)) return cause;
  absl::Status completed =
      absl::Status(cause.code(),
                   absl::StrCat(cause.message(), " (the launcher: rank ", *peer, " ", *ended, ")"));
  cause.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    completed.SetPayload(url, payload);
  });
  return completed;
}

absl::Status JobConnection::Fail(const absl::Status& given) {
  // (Asked before the lock: the launcher may take a moment to reap the rank.)
  const absl::Status cause = WithHowItEnded(given);
  // A peer that aborted (or failed) and then left is seen leaving (Unavailable)
  // sooner or later than its notice arrives, which may come the long way round: give
  // the notice a moment, so that every rank reports the origin's words.
  const absl::Time grace_ends =
      absl::Now() + (absl::IsUnavailable(cause) ? kNoticeGrace : absl::ZeroDuration());
  while (true) {
    {
      MutexLock lock(&mu_);
      ProgressLocked().IgnoreError();
      if (failed() || absl::Now() >= grace_ends) {
        if (RecordFailure(cause, EncodeNotice(NoticeKind::kFailure, rank_, cause))) {
          // (Without the transports' marks, which are theirs.)
          return absl::Status(cause.code(), cause.message());
        }
        return FailureStatus();
      }
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

bool JobConnection::RecordFailure(const absl::Status& cause, const std::string& notice) {
  if (failed()) return false;
  // A representation of its own: threads of other ranks (loopback) must not share
  // a refcounted one with the caller's copy.
  failure_ = absl::Status(cause.code(), cause.message());
  failed_.store(true, std::memory_order_release);
  SendToListeners(notice);
  // The notices leave; then nothing moves any more, so that no call's buffers are
  // touched after it returns with the failure (a receive into a vector the caller
  // then freed was written by a late fragment).
  WaitForOutgoing(absl::Now() + kNoticeFlush);
  transport_->Freeze(absl::Now() + kCopyDrain);
  return true;
}

void JobConnection::SendToListeners(const std::string& notice) {
  for (int peer : Neighbours(rank_, size_, +1)) {
    auto outgoing = std::make_unique<Outgoing>();
    outgoing->message = notice;
    // A peer that is gone cannot be told; the others still are. A failure's notice
    // is done only once the peer has it (this rank may leave right after); a
    // goodbye is best effort, not held up by a peer that does not progress.
    const absl::Status posted =
        IsFailureNotice(notice)
            ? transport_->PostDeliveredSend(peer, kControlTag, outgoing->message.data(),
                                            outgoing->message.size(), &outgoing->completion)
            : transport_->PostSend(peer, kControlTag, outgoing->message.data(),
                                   outgoing->message.size(), &outgoing->completion);
    if (posted.ok()) {
      outgoing_.push_back(std::move(outgoing));
    }
  }
}

void JobConnection::WaitForOutgoing(absl::Time deadline) {
  for (const std::unique_ptr<Outgoing>& outgoing : outgoing_) {
    if (!transport_->Wait(outgoing->completion, deadline).ok() &&
        (absl::Now() >= deadline || transport_->frozen())) {
      break;
    }
  }
}

void JobConnection::KeepUntilDestroyed(std::shared_ptr<void> state) {
  MutexLock lock(&mu_);
  kept_.push_back(std::move(state));
}

void JobConnection::ReadNotice(Listener& listener) {
  listener.done = true;
  const absl::Status& received = listener.completion.status();
  if (!received.ok()) {
    // The peer died (or the transport failed): that fails the job.
    const absl::Status cause = WithHowItEnded(received);
    RecordFailure(cause, EncodeNotice(NoticeKind::kFailure, rank_, cause));
    return;
  }
  const std::optional<Notice> notice = DecodeNotice(
      absl::string_view(listener.buffer.data(), listener.completion.bytes()), kNoticeBytes);
  if (!notice.has_value()) {
    const absl::Status garbled = absl::InternalError(absl::StrCat(
        "rank ", rank_, ": a garbled control message arrived from rank ", listener.peer));
    RecordFailure(garbled, EncodeNotice(NoticeKind::kFailure, rank_, garbled));
    return;
  }
  if (notice->kind == NoticeKind::kGoodbye) return;
  // Forwarded as it came, so every rank reports the origin's words.
  RecordFailure(notice->cause, std::string(listener.buffer.data(), listener.completion.bytes()));
}

absl::Status JobConnection::ProgressLocked() {
  // (A failed job's transport is frozen: nothing to progress.)
  if (!failed()) {
    const absl::Status progress = transport_->Progress();
    if (!progress.ok()) {
      RecordFailure(progress, EncodeNotice(NoticeKind::kFailure, rank_, progress));
    }
    for (const std::unique_ptr<Listener>& listener : listeners_) {
      if (failed()) break;
      if (!listener->done && listener->completion.done()) ReadNotice(*listener);
    }
  }
  // (The usual answer without a call: this runs on every poll of every wait.)
  return ABSL_PREDICT_TRUE(!failed()) ? absl::OkStatus() : FailureStatus();
}

void JobConnection::Sleep(absl::Duration timeout) {
  if (mu_.TryLock()) {
    transport_->Sleep(timeout);
    mu_.Unlock();
  } else {
    // Another thread is in the transport (and progressing it); a short nap keeps
    // this one from waiting behind a long sleep of that thread.
    absl::SleepFor(std::min(timeout, absl::Microseconds(100)));
  }
}

// -----------------------------------------------------------------------------------
// CommunicatorTransport

CommunicatorTransport::CommunicatorTransport(std::shared_ptr<JobConnection> job, int rank,
                                             std::vector<int> job_ranks,
                                             std::vector<uint32_t> contexts)
    : Transport(rank, static_cast<int>(job_ranks.size())),
      job_(std::move(job)),
      job_ranks_(std::move(job_ranks)),
      contexts_(std::move(contexts)),
      address_(absl::StrCat("communicator context ", contexts_[rank], " of job rank ",
                            job_ranks_[rank])) {
  MutexLock lock(&job_->mutex());
  check_bits_ = job_->transport().check_bits();
  can_find_unexpected_ = job_->transport().CanFindUnexpected();
  unexpected_counts_ = job_->transport().UnexpectedCountsByCall();
}

CommunicatorTransport::~CommunicatorTransport() { job_->ReleaseContext(context()); }

std::string CommunicatorTransport::DescribePeer(int peer) const {
  if (peer < 0 || peer >= size()) return Transport::DescribePeer(peer);
  MutexLock lock(&job_->mutex());
  const std::string described = job_->transport().DescribePeer(job_ranks_[peer]);
  if (job_ranks_[peer] == peer) return described;
  return absl::StrCat("rank ", peer, " of this communicator, job ", described);
}

std::optional<Transport::WaitingMessage> CommunicatorTransport::FindUnexpected(
    int peer, uint64_t tag, uint64_t ignore) const {
  if (job_->failed() || peer >= size()) return std::nullopt;
  std::optional<WaitingMessage> found;
  {
    MutexLock lock(&job_->mutex());
    // The context bits are matched: this communicator's messages to this rank.
    found = job_->transport().FindUnexpected(peer < 0 ? -1 : job_ranks_[peer],
                                             JobTag(rank(), tag & kMaxCommunicatorTag),
                                             ignore & kMaxCommunicatorTag);
  }
  if (!found.has_value()) return std::nullopt;
  // In this communicator's ranks (a message of its context comes from one of them).
  const auto member = std::find(job_ranks_.begin(), job_ranks_.end(), found->peer);
  if (member == job_ranks_.end()) return std::nullopt;
  return WaitingMessage{static_cast<int>(member - job_ranks_.begin()),
                        found->tag & ((uint64_t{1} << kCommunicatorTagBits) - 1), found->check};
}

std::vector<int> CommunicatorTransport::PeersNotRunning() const {
  std::vector<int> job_ranks;
  {
    MutexLock lock(&job_->mutex());
    job_ranks = job_->transport().PeersNotRunning();
  }
  std::vector<int> ranks;
  for (int peer = 0; peer < size(); ++peer) {
    if (std::binary_search(job_ranks.begin(), job_ranks.end(), job_ranks_[peer])) {
      ranks.push_back(peer);
    }
  }
  return ranks;
}

absl::Status CommunicatorTransport::Connect(absl::Span<const std::string>) {
  return absl::FailedPreconditionError(
      absl::StrCat("rank ", rank(), ": a communicator's transport is connected already"));
}

absl::Status CommunicatorTransport::CheckUsableSlow(absl::string_view operation,
                                                    uint64_t tag) const {
  if (job_->failed()) return job_->FailureStatus();
  return absl::InvalidArgumentError(absl::StrCat(operation, " on rank ", rank(), ": tag ", tag,
                                                 " exceeds a communicator's largest tag ",
                                                 kMaxCommunicatorTag));
}

absl::StatusOr<std::unique_ptr<MemoryRegion>> CommunicatorTransport::RegisterMemory(
    void* base, size_t length, MemoryAccess access) {
  RETURN_IF_ERROR(CheckUsable("RegisterMemory", 0));
  MutexLock lock(&job_->mutex());
  return job_->transport().RegisterMemory(base, length, access);
}

absl::StatusOr<std::unique_ptr<RemoteRegion>> CommunicatorTransport::ImportRegion(
    int peer, absl::string_view packed_key) {
  RETURN_IF_ERROR(CheckUsable("ImportRegion", 0));
  RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
  MutexLock lock(&job_->mutex());
  ASSIGN_OR_RETURN(std::unique_ptr<RemoteRegion> inner,
                   job_->transport().ImportRegion(job_ranks_[peer], packed_key));
  return std::unique_ptr<RemoteRegion>(new CommunicatorRemote(this, peer, std::move(inner)));
}

void CommunicatorTransport::InvalidateRegistrations(const void* pointer, size_t bytes) {
  MutexLock lock(&job_->mutex());
  job_->transport().InvalidateRegistrations(pointer, bytes);
}

RegistrationStats CommunicatorTransport::registration_stats() const {
  MutexLock lock(&job_->mutex());
  return job_->transport().registration_stats();
}

absl::Status CommunicatorTransport::PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                             Completion* completion, const MemoryRegion* region,
                                             uint32_t check) {
  RETURN_IF_ERROR(CheckUsable("PostSend", tag));
  RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
  MutexLock lock(&job_->mutex());
  return job_->transport().PostSend(job_ranks_[peer], JobTag(peer, tag), data, bytes, completion,
                                    region, check);
}

absl::Status CommunicatorTransport::PostRecv(int peer, uint64_t tag, void* data, size_t bytes,
                                             Completion* completion, const MemoryRegion* region) {
  RETURN_IF_ERROR(CheckUsable("PostRecv", tag));
  RETURN_IF_ERROR(CheckMessage("PostRecv", peer, tag, data, bytes, region));
  MutexLock lock(&job_->mutex());
  return job_->transport().PostRecv(job_ranks_[peer], JobTag(rank(), tag), data, bytes, completion,
                                    region);
}

absl::Status CommunicatorTransport::PostNotifyRecv(int peer, uint64_t notify_tag,
                                                   Completion* completion) {
  RETURN_IF_ERROR(CheckUsable("PostNotifyRecv", notify_tag));
  RETURN_IF_ERROR(CheckPeer("PostNotifyRecv", peer));
  MutexLock lock(&job_->mutex());
  return job_->transport().PostNotifyRecv(job_ranks_[peer], JobTag(rank(), notify_tag), completion);
}

absl::Status CommunicatorTransport::PostOneSided(MemoryAccess access, void* data, size_t bytes,
                                                 const RemoteRegion& remote, size_t offset,
                                                 uint64_t notify_tag, Completion* completion,
                                                 const MemoryRegion* region) {
  const char* operation = OneSidedName(access);
  RETURN_IF_ERROR(CheckUsable(operation, notify_tag));
  const auto* ours = dynamic_cast<const CommunicatorRemote*>(&remote);
  if (ours == nullptr || ours->owner() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, " on rank ", rank(),
                     ": the remote region was not imported by this communicator's transport"));
  }
  RETURN_IF_ERROR(
      CheckOneSided(operation, data, bytes, remote, offset, notify_tag, access, region));
  const int peer = remote.peer();
  MutexLock lock(&job_->mutex());
  Transport& transport = job_->transport();
  // The notification is received by the peer, so it carries the peer's context.
  return access == MemoryAccess::kRemoteWrite
             ? transport.PostPut(data, bytes, ours->inner(), offset, JobTag(peer, notify_tag),
                                 completion, region)
             : transport.PostGet(data, bytes, ours->inner(), offset, JobTag(peer, notify_tag),
                                 completion, region);
}

absl::Status CommunicatorTransport::Progress() {
  MutexLock lock(&job_->mutex());
  return job_->ProgressLocked();
}

absl::Status CommunicatorTransport::PostInternalSend(int peer, InternalTag tag, const void* data,
                                                     size_t bytes, Completion* completion) {
  RETURN_IF_ERROR(job_->FailureStatus());
  RETURN_IF_ERROR(CheckMessage("PostSend", peer, 0, data, bytes));
  MutexLock lock(&job_->mutex());
  return job_->transport().PostSend(job_ranks_[peer], JobTag(peer, static_cast<uint64_t>(tag)),
                                    data, bytes, completion);
}

absl::Status CommunicatorTransport::PostInternalRecv(int peer, InternalTag tag, void* data,
                                                     size_t bytes, Completion* completion) {
  RETURN_IF_ERROR(job_->FailureStatus());
  RETURN_IF_ERROR(CheckMessage("PostRecv", peer, 0, data, bytes));
  MutexLock lock(&job_->mutex());
  return job_->transport().PostRecv(job_ranks_[peer], JobTag(rank(), static_cast<uint64_t>(tag)),
                                    data, bytes, completion);
}

namespace {

// What buffers and Completions of an exchange a failure may leave pending: owned
// jointly so that the job can keep them (JobConnection::KeepUntilDestroyed).
struct ExchangeState {
  std::vector<char> blocks;
  Completion sent;
  Completion received;
};

// All-gather of one `record_bytes`-byte record per rank (Bruck's algorithm: log2(size)
// rounds, each sending to the rank `distance` behind and receiving from the one
// `distance` ahead). Returns the records in rank order.
}  // namespace

absl::StatusOr<std::vector<char>> ExchangeRecords(CommunicatorTransport& transport,
                                                  absl::string_view mine, absl::Time deadline) {
  return ExchangeRecordsAmong(transport, {}, InternalTag::kExchange, mine, deadline);
}

absl::StatusOr<std::vector<char>> ExchangeRecordsAmong(CommunicatorTransport& transport,
                                                       absl::Span<const int> members,
                                                       InternalTag tag, absl::string_view mine,
                                                       absl::Time deadline) {
  // Positions among the members; with none given, the ranks themselves.
  const bool everyone = members.empty();
  const int size = everyone ? transport.size() : static_cast<int>(members.size());
  int index = transport.rank();
  if (!everyone) {
    index = static_cast<int>(std::find(members.begin(), members.end(), transport.rank()) -
                             members.begin());
    if (index == size) {
      return absl::InternalError(absl::StrCat("rank ", transport.rank(),
                                              ": an exchange among ranks this one is not among"));
    }
  }
  auto peer = [&](int position) { return everyone ? position : members[position]; };
  const size_t record_bytes = mine.size();
  auto state = std::make_shared<ExchangeState>();
  // Block i holds the record of member (index + i) % size.
  state->blocks.resize(static_cast<size_t>(size) * record_bytes);
  if (record_bytes > 0) std::memcpy(state->blocks.data(), mine.data(), record_bytes);
  for (int distance = 1; distance < size; distance *= 2) {
    const size_t bytes = static_cast<size_t>(std::min(distance, size - distance)) * record_bytes;
    state->sent.Reset();
    state->received.Reset();
    const int from = peer((index + distance) % size);
    absl::Status status = transport.PostInternalRecv(
        from, tag, state->blocks.data() + static_cast<size_t>(distance) * record_bytes, bytes,
        &state->received);
    if (!status.ok()) return status;
    status = transport.PostInternalSend(peer((index - distance + size) % size), tag,
                                        state->blocks.data(), bytes, &state->sent);
    if (status.ok()) {
      const Completion* both[] = {&state->sent, &state->received};
      status = transport.WaitAll(both, deadline);
    }
    if (status.ok() && state->received.bytes() != bytes) {
      status = absl::InternalError(
          absl::StrCat("rank ", transport.rank(), ": a communicator exchange got ",
                       state->received.bytes(), " bytes instead of ", bytes, " from rank ", from));
    }
    if (!status.ok()) {
      transport.job().KeepUntilDestroyed(state);
      return status;
    }
  }
  std::vector<char> by_member(state->blocks.size());
  // Empty records have nothing to reorder (and their buffers may be null).
  for (int block = 0; block < size && record_bytes > 0; ++block) {
    std::memcpy(by_member.data() + static_cast<size_t>((index + block) % size) * record_bytes,
                state->blocks.data() + static_cast<size_t>(block) * record_bytes, record_bytes);
  }
  return by_member;
}

}  // namespace zcoll
