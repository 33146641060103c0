// How the communicators of one job share its transport.
//
// A process connects to its job once (Communicator::Create) and every communicator
// derived from that one (Split, Dup) reuses the connection: sub-communicators cost no
// endpoints, shared memory or address exchange. Two things keep them apart:
//
//   - Context ids. Each process numbers its live communicators itself (0 for the
//     first); the members of a new communicator exchange their numbers, and a
//     message is tagged with its receiver's number in the top kContextBits of the
//     transport's 40-bit tag. A receiver's numbers are unique among its own
//     communicators, so messages of different communicators never match each other,
//     and no agreement (and no race between threads splitting different
//     communicators) is needed.
//   - Ranks. A CommunicatorTransport speaks the communicator's ranks and translates
//     them to the job's.
//
// The job also owns failure. The first error recorded (Abort, or a communicator
// operation that failed) becomes the job's failure: it is sent to the peers, which
// forward it along a circulant graph (each rank tells the ranks at distance 1, 2, 4,
// ... ahead of it, so every rank hears within log2(size) hops and each rank listens
// to only log2(size) peers), and from then on every operation of every communicator
// of the job returns Aborted with the original cause. A peer that dies ends the
// listener's receive with Unavailable, which fails the job the same way. A rank that
// leaves cleanly says goodbye first, so its departure is not mistaken for a death.
// Once the failure is recorded and its notices have left (or a quarter second has
// passed), the job's transport is frozen (Transport::Freeze): operations still
// pending are abandoned and nothing touches their buffers again, so a call that
// returns with the failure leaves its buffers to the caller at once.
//
// Thread safety: communicators of one job may be used from different threads at
// once (one thread per communicator); calls into the shared transport are
// serialised by the job's mutex.

#ifndef ZCOLL_COLLECTIVES_COMMUNICATOR_TRANSPORT_H_
#define ZCOLL_COLLECTIVES_COMMUNICATOR_TRANSPORT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "transport/transport.h"

namespace zcoll {

// The split of the job transport's tag: context id above, communicator tag below.
inline constexpr int kContextBits = 12;
inline constexpr int kCommunicatorTagBits = kTagBits - kContextBits;
// A job transport's counts of waiting messages by call (Transport::
// UnexpectedCountsByCall) index a communicator's tags alike: its slot bits lie below
// the context's.
static_assert((uint64_t{1} << (kCommunicatorTagBits - Transport::kCountedCallShift)) >=
              Transport::kCountedCalls);
// Tags a communicator's users (the collectives) may use; the few above are the
// communicator's own (InternalTag).
inline constexpr uint64_t kMaxCommunicatorTag = (uint64_t{1} << kCommunicatorTagBits) - 1 - 16;
// Context ids 0..kMaxContexts-1 name communicators; the last one is the job's
// control channel.
inline constexpr uint32_t kMaxContexts = (uint32_t{1} << kContextBits) - 1;

// Tags of the communicator's own exchanges (Split, Dup, ZCOLL_CHECK, the node engine).
enum class InternalTag : uint64_t {
  kExchange = kMaxCommunicatorTag + 1,
  kNodeSetup = kMaxCommunicatorTag + 2,          // the node engine's segment (node_engine.h)
  kGroupExchange = kMaxCommunicatorTag + 3,      // CreateGroup, among the group's ranks only
  kIntercommExchange = kMaxCommunicatorTag + 4,  // Intercommunicator::Create, its two leaders
  // Communicator::PostChannelSend / PostChannelRecv (point-to-point messages).
  kMessageEnvelope = kMaxCommunicatorTag + 5,
  kMessagePayload = kMaxCommunicatorTag + 6,
};

class JobConnection {
 public:
  // How job rank `rank`'s process ended, if the launcher can say by `deadline`
  // (Bootstrap::HowRankEnded).
  using HowRankEnded = std::function<std::optional<std::string>(int rank, absl::Time deadline)>;

  // Takes this process's transport to the job, connected. `how_ended` (may be
  // empty) completes a failure's cause when a rank is found gone.
  static absl::StatusOr<std::shared_ptr<JobConnection>> Create(std::unique_ptr<Transport> transport,
                                                               HowRankEnded how_ended = {});
  // Says goodbye to the peers that listen to this rank (waiting at most a second
  // for the messages to leave), then destroys the transport, which ends every
  // pending operation.
  ~JobConnection();
  JobConnection(const JobConnection&) = delete;
  JobConnection& operator=(const JobConnection&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  absl::string_view provider_name() const { return provider_name_; }

  // The lowest free context id of this process; ResourceExhausted when all
  // kMaxContexts are live.
  absl::StatusOr<uint32_t> AllocateContext();
  void ReleaseContext(uint32_t context);

  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The job's failure as the caller on job rank `rank` should see it: Aborted,
  // with the original cause. OK while the job has not failed.
  absl::Status FailureStatus() const;
  // Makes `cause` the job's failure unless it already has one, and tells the peers.
  // Returns `cause` if it was first, else FailureStatus().
  absl::Status Fail(const absl::Status& cause);
  // How long a failure waits for its notices to leave before the transport is
  // frozen, and then for a peer that is copying into or out of this process.
  static constexpr absl::Duration kNoticeFlush = absl::Milliseconds(250);
  static constexpr absl::Duration kCopyDrain = absl::Milliseconds(250);
  // Keeps `state` (buffers and Completions of operations a failed exchange left
  // pending) alive until the transport is gone: the exchange returns before its
  // caller fails the job, which freezes the transport.
  void KeepUntilDestroyed(std::shared_ptr<void> state);

  Mutex& mutex() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  Transport& transport() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return *transport_; }
  // Progresses the transport and reads failure notices; FailureStatus() once the job
  // has failed.
  absl::Status ProgressLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sleeps on the transport's wait object when no other thread is using the
  // transport, else briefly.
  void Sleep(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A notice is at most this long: kind, origin rank, status code, message.
  static constexpr size_t kNoticeBytes = 1024;
  struct Listener {
    int peer = 0;
    std::array<char, kNoticeBytes> buffer{};
    Completion completion;
    bool done = false;
  };
  struct Outgoing {
    std::string message;
    Completion completion;
  };

  JobConnection(std::unique_ptr<Transport> transport, HowRankEnded how_ended);
  // `cause` with how the rank it names ended, when the launcher says (a rank found
  // gone is "exited" to the transport; zcoll_run knows "was killed by signal 9").
  absl::Status WithHowItEnded(const absl::Status& cause) const;
  absl::Status Listen() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadNotice(Listener& listener) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the failure (if first), sends `notice` to the ranks this one tells, waits
  // for it to leave (kNoticeFlush at most) and freezes the transport.
  bool RecordFailure(const absl::Status& cause, const std::string& notice)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendToListeners(const std::string& notice) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WaitForOutgoing(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int rank_;
  const int size_;
  const std::string provider_name_;
  const HowRankEnded how_ended_;
  Mutex mu_;
  std::unique_ptr<Transport> transport_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Listener>> listeners_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Outgoing>> outgoing_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> context_in_use_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<void>> kept_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
  // The first cause; written once, under mu_, before the release store of failed_,
  // so readers that saw failed() read it without the mutex.
  absl::Status failure_;
};

// One communicator's view of the job transport: its ranks, its tags, its failure.
class CommunicatorTransport final : public Transport {
 public:
  // `job_ranks[r]` is the job rank of communicator rank r, `contexts[r]` the context
  // id rank r gave this communicator; contexts[rank] is this process's, which the
  // transport releases when destroyed.
  CommunicatorTransport(std::shared_ptr<JobConnection> job, int rank, std::vector<int> job_ranks,
                        std::vector<uint32_t> contexts);
  ~CommunicatorTransport() override;

  JobConnection& job() { return *job_; }
  const std::shared_ptr<JobConnection>& shared_job() const { return job_; }
  int job_rank(int rank) const { return job_ranks_[rank]; }
  uint32_t context() const { return contexts_[this->rank()]; }

  absl::string_view provider_name() const override { return job_->provider_name(); }
  const std::string& address() const override { return address_; }
  // The job transport's words, for the job rank the peer is.
  std::string DescribePeer(int peer) const override;
  std::vector<int> PeersNotRunning() const override;
  // Refused: the job's transport is connected already.
  absl::Status Connect(absl::Span<const std::string> addresses) override;

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override;
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed_key) override;
  void InvalidateRegistrations(const void* pointer, size_t bytes) override;
  RegistrationStats registration_stats() const override;

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region = nullptr,
                        uint32_t check = 0) override;
  int check_bits() const override { return check_bits_; }
  // Messages waiting for this communicator's receives (those carrying this rank's
  // context), in its ranks and tags.
  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override;
  // The job transport's, whose slots this communicator's sequence numbers index
  // alike (its tags sit below the context's bits).
  absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const override {
    return unexpected_counts_;
  }
  bool CanFindUnexpected() const override { return can_find_unexpected_; }
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region = nullptr) override;
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override;
  absl::Status Progress() override;
  // Kept by the job, whose transport outlives this communicator's.
  void KeepUntilDestroyed(std::shared_ptr<void> state) override {
    job_->KeepUntilDestroyed(std::move(state));
  }

  // The communicator's own messages, on tags users cannot reach.
  absl::Status PostInternalSend(int peer, InternalTag tag, const void* data, size_t bytes,
                                Completion* completion);
  absl::Status PostInternalRecv(int peer, InternalTag tag, void* data, size_t bytes,
                                Completion* completion);

 protected:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override;
  void Sleep(absl::Duration timeout) override { job_->Sleep(timeout); }
  // The job's transport is frozen by the job (JobConnection), never through one of its
  // communicators.
  void OnFreeze(absl::Time) override {}

 private:
  absl::Status CheckUsable(absl::string_view operation, uint64_t tag) const {
    if (ABSL_PREDICT_TRUE(!job_->failed() && tag <= kMaxCommunicatorTag)) {
      return absl::OkStatus();
    }
    return CheckUsableSlow(operation, tag);
  }
  absl::Status CheckUsableSlow(absl::string_view operation, uint64_t tag) const;
  // The job transport's tag for a message to (or a receive posted by) `rank`.
  uint64_t JobTag(int rank, uint64_t tag) const {
    return (uint64_t{contexts_[rank]} << kCommunicatorTagBits) | tag;
  }

  std::shared_ptr<JobConnection> job_;
  std::vector<int> job_ranks_;
  std::vector<uint32_t> contexts_;
  std::string address_;
  int check_bits_;  // the job transport's, read once
  bool can_find_unexpected_;
  absl::Span<const std::atomic<int32_t>> unexpected_counts_;  // the job transport's
};

// All-gather of one record per rank (every record equally long) over the
// communicator's internal tag, by Bruck's algorithm: log2(size) rounds. Returns the
// records in rank order. A failure leaves the exchange's buffers with the job.
// Split, Dup and the collectives' argument check (ZCOLL_CHECK) use it.
absl::StatusOr<std::vector<char>> ExchangeRecords(CommunicatorTransport& transport,
                                                  absl::string_view mine, absl::Time deadline);
// The same among `members` (ranks of the communicator, this one among them; empty:
// all) on internal tag `tag`: the records in the order of `members`.
absl::StatusOr<std::vector<char>> ExchangeRecordsAmong(CommunicatorTransport& transport,
                                                       absl::Span<const int> members,
                                                       InternalTag tag, absl::string_view mine,
                                                       absl::Time deadline);

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_COMMUNICATOR_TRANSPORT_H_
