// The transport interface: the RDMA verbs zcoll's collectives move data with.
//
// A Transport connects one rank to the other ranks of a job through one provider
// (libfabric, UCX, native shared memory, or in-process loopback). It offers
//
//   - memory registration: RegisterMemory gives a MemoryRegion whose packed key a
//     peer turns into a RemoteRegion with ImportRegion;
//   - two-sided tagged messages: PostSend / PostRecv, matched on (peer, tag) in the
//     order they were posted; providers choose eager or rendezvous (zero-copy) by
//     size;
//   - one-sided transfers: PostPut writes into a peer's RemoteRegion, PostGet reads
//     from one; each delivers `notify_tag` to the peer, whose PostNotifyRecv for
//     that (peer, tag) completes once the data is in place (put) or has been read
//     (get);
//   - progress and blocking waits: Progress() polls; Wait() spins briefly, then
//     yields, then sleeps on the provider's wait object, so that many ranks sharing
//     few cores do not starve each other, and returns DeadlineExceeded at the
//     deadline instead of hanging.
//
// Every provider keeps one promise that makes "done" mean done: an operation
// completes only when nothing it owes a peer (an acknowledgement, a notification)
// still waits locally, so a rank whose operations are all complete may stop calling
// Progress without stranding a peer.
//
// Nothing here knows about collectives.
//
// Operations are posted with a caller-owned Completion, which the transport fills
// in when the operation ends. The Completion, and the buffer of the operation, must
// stay valid until the Completion is done, the Transport is frozen (Freeze), or it is
// destroyed (which ends every pending operation with Aborted).
//
// Freeze stops a transport for good, as a job does once it has failed: from then on
// the transport reads and writes no buffer of any operation, pending or done, and no
// Completion; nor does a peer through zcoll's shared memory. What was pending is
// abandoned, so its owner may free it at once. That is how zcoll keeps its promise
// that a call that returned, with any status, never has its buffers touched again. Post functions
// refuse bad arguments at once (InvalidArgument: peer out of range, tag above kMaxTag, null buffer,
// a transfer outside a RemoteRegion); failures found later end the operation with a status:
// Unavailable when a peer died (naming its rank and host), DeadlineExceeded is only
// ever returned by Wait.
//
// Thread safety: a Transport is used by one thread at a time. Completions may be
// written by the transport from another thread (loopback); done() has acquire
// semantics, so a caller that sees done() also sees status() and bytes().

#ifndef ZCOLL_TRANSPORT_TRANSPORT_H_
#define ZCOLL_TRANSPORT_TRANSPORT_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace zcoll {

// Tags are the caller's: 40 bits, so that providers whose tags carry no source
// rank (UCX) can add one.
inline constexpr int kTagBits = 40;
inline constexpr uint64_t kMaxTag = (uint64_t{1} << kTagBits) - 1;
// The most bits of a send's check word a provider carries (PostSend).
inline constexpr int kCheckBits = 16;
inline constexpr uint32_t kCheckMask = (uint32_t{1} << kCheckBits) - 1;

enum class MemoryAccess : uint8_t {
  kLocal = 0,        // only for local use (send/recv/put source/get target)
  kRemoteRead = 1,   // peers may PostGet from it
  kRemoteWrite = 2,  // peers may PostPut into it
  kRemoteReadWrite = 3,
};

inline bool Allows(MemoryAccess granted, MemoryAccess wanted) {
  return (static_cast<int>(granted) & static_cast<int>(wanted)) == static_cast<int>(wanted);
}

// The outcome of one posted operation.
//
// Memory ordering: Complete() writes the status and byte count, then publishes with
// a release store; done() is an acquire load.
class Completion {
 public:
  Completion() = default;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Valid once done().
  const absl::Status& status() const { return status_; }
  // Bytes received, for PostRecv; the transferred size otherwise.
  size_t bytes() const { return bytes_; }
  // For PostRecv: the check word the message carried (Transport::PostSend).
  uint32_t check() const { return check_; }

  // Makes the Completion reusable; only when it is not pending.
  void Reset() {
    status_ = absl::OkStatus();
    bytes_ = 0;
    check_ = 0;
    done_.store(false, std::memory_order_relaxed);
  }

  // For providers: ends the operation. Called exactly once per post.
  void Complete(absl::Status status, size_t bytes, uint32_t check = 0) {
    // An error gets a representation of its own: a Status copy shares a refcounted
    // one, and completions of different threads (loopback ranks) must share nothing.
    status_ = status.ok() ? absl::OkStatus() : OwnCopy(status);
    bytes_ = bytes;
    check_ = check;
    done_.store(true, std::memory_order_release);
  }

  // `status` with its message and payloads copied, sharing nothing with it.
  static absl::Status OwnCopy(const absl::Status& status);

 private:
  std::atomic<bool> done_{false};
  absl::Status status_;
  size_t bytes_ = 0;
  uint32_t check_ = 0;
};

// A registered range of this process's memory. Deregistered when destroyed; must not
// be destroyed while an operation or a peer's RemoteRegion uses it.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  void* base() const { return base_; }
  size_t length() const { return length_; }
  MemoryAccess access() const { return access_; }
  // What a peer passes to ImportRegion (bytes, self-describing and checked).
  const std::string& packed_key() const { return packed_key_; }
  // [pointer, pointer + bytes) lies inside the region.
  bool Contains(const void* pointer, size_t bytes) const {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(base_);
    const uintptr_t at = reinterpret_cast<uintptr_t>(pointer);
    return at >= begin && at - begin <= length_ && bytes <= length_ - (at - begin);
  }

 protected:
  MemoryRegion(void* base, size_t length, MemoryAccess access)
      : base_(base), length_(length), access_(access) {}
  void set_packed_key(std::string key) { packed_key_ = std::move(key); }

 private:
  void* base_;
  size_t length_;
  MemoryAccess access_;
  std::string packed_key_;
};

// A peer's MemoryRegion, imported from its packed key.
class RemoteRegion {
 public:
  virtual ~RemoteRegion() = default;
  RemoteRegion(const RemoteRegion&) = delete;
  RemoteRegion& operator=(const RemoteRegion&) = delete;

  int peer() const { return peer_; }
  uint64_t base() const { return base_; }
  size_t length() const { return length_; }
  MemoryAccess access() const { return access_; }

 protected:
  RemoteRegion(int peer, uint64_t base, size_t length, MemoryAccess access)
      : peer_(peer), base_(base), length_(length), access_(access) {}

 private:
  int peer_;
  uint64_t base_;
  size_t length_;
  MemoryAccess access_;
};

// How often buffers passed without a MemoryRegion were found registered already.
// All zero for providers that need no registration of local buffers (shm, UCX's
// tag API, libfabric providers without FI_MR_LOCAL).
struct RegistrationStats {
  uint64_t hits = 0;    // a cached registration covered the buffer
  uint64_t misses = 0;  // the buffer was registered (and cached)
  size_t cached = 0;    // registrations held now
};

// An error about `peer` (a rank of the transport that reports it), marked so that the
// layers above can tell which rank it is about (PeerOfError) without reading the
// sentence: an Unavailable from a dead peer, for one.
absl::Status PeerError(absl::StatusCode code, int peer, absl::string_view message);
std::optional<int> PeerOfError(const absl::Status& status);

// How many ranks of the job run on this machine (Communicator::Create tells it from
// the job's placement). When they outnumber the cores online, a rank that spins keeps
// the peer it waits for off the core: blocking waits then skip the spin, yielding the
// core every 4th idle poll from their start and for up to 100 ms before they sleep,
// like Open MPI's yield-when-idle.
// ZCOLL_WAIT_SPIN_US and ZCOLL_WAIT_YIELD_US, when set, win.
void SetRanksOnThisMachine(int ranks);
// This machine's cores as zcoll counts them: ZCOLL_CORES if set, else the cores online.
int CoresOfThisMachine();
// Whether they outnumber the cores (false until SetRanksOnThisMachine says so).
bool CoresOversubscribed();
// Where this machine's `ranks` outnumber the CPUs the calling thread may run on, moves
// the thread onto the CPU at `place` (this rank's place among the machine's ranks)
// modulo their count, and gives it back the affinity it had: the thread stays free to
// run anywhere, but starts from an even spread (unless ZCOLL_SPREAD_RANKS=0). Where
// ranks wait by yielding, the scheduler does not even out an uneven start by itself
// for a long while: its balancer leaves tasks that ran within the last half
// millisecond where they are, and a core whose lone rank yields never goes idle to
// pull one over. 4 ranks on 2 cores, 3 of them on one core after the job started, ran
// 8 us barriers for hundreds of milliseconds.
void SpreadOverCpus(int place, int ranks);
// The CPU SpreadOverCpus moves a thread that may run on `allowed` (in order) to: the
// one at `place` modulo their count; none where `ranks` fit them or fewer than two are
// allowed.
std::optional<int> CpuOfPlace(absl::Span<const int> allowed, int place, int ranks);
// The CPUs the calling thread may run on (its affinity), in order; none where it
// cannot be read.
std::vector<int> AllowedCpus();
// Restricts the calling thread to `cpus` (moving it at once onto one of them if it is
// elsewhere); false where the kernel refuses, or none of them is a CPU number.
bool SetAllowedCpus(absl::Span<const int> cpus);

// Keeps `pointer` reachable until the process exits: what a provider must never free
// (a frozen UCX worker, a libfabric endpoint whose closing would progress transfers
// into freed buffers). Deliberate, and so no leak to LeakSanitizer.
void KeepUntilExit(const void* pointer);

class Transport {
 public:
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // "loopback", "shm", "ofi:shm", "ofi:tcp;ofi_rxm", "ucx", ...
  virtual absl::string_view provider_name() const = 0;

  // How many low bits of a send's check word reach the receiver (PostSend): the bits
  // a provider's tags have to spare, at most kCheckBits.
  virtual int check_bits() const { return kCheckBits; }

  // Messages that arrived before a receive for them was posted wait in the provider.
  // FindUnexpected returns one of them whose tag equals `tag` in every bit `ignore`
  // does not set (from `peer`, or from any peer when `peer` is -1): its sender, tag
  // and check word. A layer above uses it to tell an early message from one that no
  // receive will ever take (a rank that disagrees on a collective's root sends where
  // nobody receives). nullopt when there is none, or the provider cannot look
  // (libfabric); CanFindUnexpected says whether it can.
  struct WaitingMessage {
    int peer;
    uint64_t tag;
    uint32_t check;
  };
  virtual std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                                       uint64_t ignore) const {
    return std::nullopt;
  }
  virtual bool CanFindUnexpected() const { return false; }
  // Counts of the messages FindUnexpected would find, by call, for a layer above that
  // asks after every call whether a message of it waits (a few loads instead of a
  // look under the transport's lock): the count of tags t is
  // counts[(t >> kCountedCallShift) % kCountedCalls], which is the communicators'
  // sequence number of the call (collectives/algorithms.h); communicators that share a
  // slot only make a count larger than needed. Empty when the provider does not count
  // (UCX and libfabric keep their waiting messages themselves).
  static constexpr int kCountedCallShift = 16;
  static constexpr size_t kCountedCalls = 64;
  virtual absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const { return {}; }

  // For error messages: what this transport knows of `peer` now, e.g. "rank 3 (pid
  // 4242 on host node7)", followed by "was killed by signal 9 (SIGKILL)" or "is
  // stopped (a SIGSTOP, or a debugger)" when it can see that.
  virtual std::string DescribePeer(int peer) const;
  // The peers this transport can see are not running (dead, or stopped), ascending.
  virtual std::vector<int> PeersNotRunning() const { return {}; }

  // This rank's address, to be passed to every peer's Connect.
  virtual const std::string& address() const = 0;

  // Connects to every peer; addresses[r] is rank r's address() (this rank's own entry
  // is ignored). An empty address means this transport will never be used with that
  // peer (a routed job reaches it through another transport); operations with it are
  // refused. Called once, before anything is posted.
  virtual absl::Status Connect(absl::Span<const std::string> addresses) = 0;

  virtual absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                                       MemoryAccess access) = 0;
  virtual absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(
      int peer, absl::string_view packed_key) = 0;

  // Providers that register buffers passed without a MemoryRegion cache those
  // registrations; call this before freeing or remapping such memory so that a stale
  // registration is never used (RegistrationCache). A no-op for providers that do
  // not register.
  virtual void InvalidateRegistrations(const void* pointer, size_t bytes) {}
  virtual RegistrationStats registration_stats() const { return {}; }

  // Two-sided messages. `region`, if given, is a registration of this transport that
  // covers the buffer (one that does not is refused); the provider then registers
  // nothing itself (RegisteredBuffer makes such regions).
  // A receive completes with the byte count sent; a message longer than the receive
  // buffer ends the receive with InvalidArgument (and the send too, where the
  // provider learns of it).
  //
  // A send may carry a check word of check_bits() bits (higher bits are dropped): the
  // receive that matches it is not matched on it, and reports it (Completion::check),
  // so that the receiver can compare it with what it expects. The collectives put a
  // few bits of the call's arguments there, to find ranks that disagree at the first
  // message instead of at a deadline, at no cost of a message.
  virtual absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                Completion* completion, const MemoryRegion* region = nullptr,
                                uint32_t check = 0) = 0;
  // A send whose completion means the peer has the message (UCX's synchronous send:
  // the receiver matched it), where PostSend's may mean only that the buffer is free
  // again: for the job's failure notices, which must reach the live peers before the
  // failing rank leaves (a worker closed right after a plain send could take the
  // notice with it; libfabric's injected sends complete before they leave). PostSend
  // where that is what a send's completion means already (shm writes into the
  // peer's memory).
  virtual absl::Status PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                         Completion* completion) {
    return PostSend(peer, tag, data, bytes, completion);
  }
  virtual absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes,
                                Completion* completion, const MemoryRegion* region = nullptr) = 0;

  // One-sided transfers: `bytes` at `offset` of the peer's region `remote`.
  absl::Status PostPut(const void* data, size_t bytes, const RemoteRegion& remote, size_t offset,
                       uint64_t notify_tag, Completion* completion,
                       const MemoryRegion* region = nullptr) {
    return PostOneSided(MemoryAccess::kRemoteWrite, const_cast<void*>(data), bytes, remote, offset,
                        notify_tag, completion, region);
  }
  absl::Status PostGet(void* data, size_t bytes, const RemoteRegion& remote, size_t offset,
                       uint64_t notify_tag, Completion* completion,
                       const MemoryRegion* region = nullptr) {
    return PostOneSided(MemoryAccess::kRemoteRead, data, bytes, remote, offset, notify_tag,
                        completion, region);
  }
  // Completes when `peer`'s put or get with `notify_tag` has finished.
  virtual absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) = 0;

  // Advances pending operations without blocking. An error means the transport
  // itself failed; every pending operation has then been ended.
  virtual absl::Status Progress() = 0;

  // Waits until `completion` is done, then returns its status; DeadlineExceeded (the
  // operation stays pending) if the deadline passes first.
  absl::Status Wait(const Completion& completion, absl::Time deadline);
  // Waits for all; returns the first error in order, or DeadlineExceeded.
  absl::Status WaitAll(absl::Span<const Completion* const> completions, absl::Time deadline);

  // Stops the transport for good (see the file comment): every pending operation is
  // abandoned, its Completion never written again; no buffer of any operation is read
  // or written again, by this process or, through zcoll's shared memory, by a peer.
  // Waits at most until `deadline` for a peer in the middle of a copy into or out of
  // this process's memory. Later posts are refused and Progress fails with
  // FailedPrecondition; the destructor releases what is left without progressing.
  void Freeze(absl::Time deadline) {
    if (frozen_) return;
    frozen_ = true;
    OnFreeze(deadline);
  }
  bool frozen() const { return frozen_; }

  // Keeps `state` (what an operation that may still be pending writes: its Completion,
  // its buffer) until the transport is destroyed, after its provider has stopped: for
  // a caller that must go before an operation it cannot cancel ends.
  virtual void KeepUntilDestroyed(std::shared_ptr<void> state) {
    kept_.push_back(std::move(state));
  }

  // What a WaitFor poll found.
  enum class PollResult : uint8_t {
    kDone,      // stop waiting
    kAdvanced,  // not done, but something moved: restart the back-off
    kIdle,      // nothing moved
  };
  // The general wait: calls Progress() and then `poll` until `poll` returns kDone,
  // backing off as Wait does (spin, yield, sleep) while it returns kIdle. For a
  // caller that waits on many operations at once and acts as each one ends (the
  // collectives' executor). OK when done; a Progress error; DeadlineExceeded when the
  // deadline passes first.
  absl::Status WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline);
  // As above, and calls `on_clock` with the time each time it reads the clock (after
  // 64 idle polls in a row, then every 16): work too costly to do on every poll
  // (a collective looks at the messages that wait for it), for free on a wait that
  // ends within a few polls. kDone from it ends the wait as from `poll`.
  absl::Status WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline,
                       absl::FunctionRef<PollResult(absl::Time now)> on_clock);
  // As above, but sleeping with `sleep` (at most the duration it is given) instead of
  // on the transport's wait object: a wait for something other than the transport (a
  // node collective sleeps on its shared segment's doorbell).
  absl::Status WaitFor(absl::FunctionRef<PollResult()> poll, absl::Time deadline,
                       absl::FunctionRef<PollResult(absl::Time now)> on_clock,
                       absl::FunctionRef<void(absl::Duration)> sleep);

 protected:
  Transport(int rank, int size) : rank_(rank), size_(size) {}

  // What providers implement for PostPut (`access` kRemoteWrite: `data` is only read)
  // and PostGet (kRemoteRead), which differ only in the direction of the copy.
  virtual absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                                    const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                                    Completion* completion, const MemoryRegion* region) = 0;
  // "PostPut" or "PostGet", for messages.
  static const char* OneSidedName(MemoryAccess access) {
    return access == MemoryAccess::kRemoteWrite ? "PostPut" : "PostGet";
  }

  // What the provider does when frozen (once): stop touching what it was given, and
  // keep peers from touching this process's memory.
  virtual void OnFreeze(absl::Time deadline) = 0;
  // The error of an operation on a frozen transport.
  absl::Status FrozenError(absl::string_view operation) const;
  // For a provider that counts (UnexpectedCountsByCall): a message of `tag` was kept
  // (+1) or taken by a receive (-1). Only from the thread that progresses the
  // transport (a plain load and store: readers on other threads read relaxed).
  void CountUnexpected(uint64_t tag, int change) {
    std::atomic<int32_t>& count = unexpected_by_call_[(tag >> kCountedCallShift) % kCountedCalls];
    count.store(count.load(std::memory_order_relaxed) + change, std::memory_order_relaxed);
  }
  absl::Span<const std::atomic<int32_t>> unexpected_counts() const { return unexpected_by_call_; }

  // Blocks for at most `timeout`, returning early when progress may be possible:
  // the provider's wait object (an fd, a futex, a condition variable) fired.
  virtual void Sleep(absl::Duration timeout) = 0;
  // For transports that wrap another: sleeps on the wrapped one's wait object.
  static void SleepOn(Transport& inner, absl::Duration timeout) { inner.Sleep(timeout); }

  // For providers' Connect: checks the address count and records which peers have
  // an address.
  absl::Status BeginConnect(absl::Span<const std::string> addresses);
  bool Reachable(int peer) const {
    return peer >= 0 && peer < static_cast<int>(reachable_.size()) && reachable_[peer] != 0;
  }

  // Argument checks shared by every provider: an inline test of the good case, and
  // out of line the sentence that says what is wrong.
  // (A frozen transport fails them all.)
  absl::Status CheckPeer(absl::string_view operation, int peer) const {
    if (ABSL_PREDICT_TRUE(!frozen_ && PeerIsValid(peer))) return absl::OkStatus();
    return CheckPeerSlow(operation, peer);
  }
  absl::Status CheckMessage(absl::string_view operation, int peer, uint64_t tag, const void* data,
                            size_t bytes, const MemoryRegion* region = nullptr) const {
    if (ABSL_PREDICT_TRUE(!frozen_ && PeerIsValid(peer) && tag <= kMaxTag &&
                          (data != nullptr || bytes == 0) &&
                          (region == nullptr || region->Contains(data, bytes)))) {
      return absl::OkStatus();
    }
    return CheckMessageSlow(operation, peer, tag, data, bytes, region);
  }
  absl::Status CheckOneSided(absl::string_view operation, const void* data, size_t bytes,
                             const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                             MemoryAccess needed, const MemoryRegion* region) const;

 private:
  friend class JobConnection;  // sleeps on the job transport its communicators share

  bool PeerIsValid(int peer) const {
    return peer >= 0 && peer < size_ && peer != rank_ && (reachable_.empty() || reachable_[peer]);
  }
  absl::Status CheckPeerSlow(absl::string_view operation, int peer) const;
  absl::Status CheckMessageSlow(absl::string_view operation, int peer, uint64_t tag,
                                const void* data, size_t bytes, const MemoryRegion* region) const;

  int rank_;
  int size_;
  std::vector<uint8_t> reachable_;  // by peer; empty until Connect
  bool frozen_ = false;
  std::array<std::atomic<int32_t>, kCountedCalls> unexpected_by_call_{};
  // KeepUntilDestroyed's; freed by the base destructor, after the provider's.
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_TRANSPORT_H_
