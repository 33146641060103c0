#include "transport/loopback/loopback_transport.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "transport/envelope.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

constexpr absl::string_view kProvider = "loopback";

struct Message {
  int source;
  uint64_t tag;
  const void* data;
  size_t bytes;
  Completion* completion;
  uint32_t check = 0;
};

struct PendingRecv {
  int source;
  uint64_t tag;
  void* data;
  size_t bytes;
  Completion* completion;
};

struct PendingNotify {
  int source;
  uint64_t tag;
  Completion* completion;
};

struct Region {
  uintptr_t base;
  size_t length;
  MemoryAccess access;
};

// Everything addressed to one rank.
struct Mailbox {
  bool joined = false;    // its Transport exists
  bool departed = false;  // its Transport was destroyed
  std::deque<Message> unexpected;
  // The tags of messages kept unexpected by a sender's thread, for this rank's
  // thread to count (Transport::CountUnexpected).
  std::vector<uint64_t> kept;
  std::deque<PendingRecv> recvs;
  std::deque<PendingNotify> notify_waits;
  std::deque<std::pair<int, uint64_t>> notifies;  // arrived, not yet waited for
  std::vector<Region> regions;
  bool wakeup = false;  // something happened since the rank last slept
  CondVar changed;
};

std::atomic<uint64_t> next_fabric_id{1};

class Fabric final : public LoopbackFabric, public std::enable_shared_from_this<Fabric> {
 public:
  explicit Fabric(int size) : size_(size), id_(next_fabric_id++), boxes_(size) {}

  absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(int rank) override;

  int size() const { return size_; }
  uint64_t id() const { return id_; }

  Mutex mu;
  Mailbox& box(int rank) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return boxes_[rank]; }

  // Ends `completion` and wakes the rank that waits for it.
  void Finish(int owner, Completion* completion, absl::Status status, size_t bytes,
              uint32_t check = 0) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    completion->Complete(std::move(status), bytes, check);
    Wake(owner);
  }
  void Wake(int rank) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    boxes_[rank].wakeup = true;
    boxes_[rank].changed.SignalAll();
  }

 private:
  const int size_;
  const uint64_t id_;
  std::vector<Mailbox> boxes_ ABSL_GUARDED_BY(mu);
};

absl::Status PeerLeft(int peer) {
  return PeerError(
      absl::StatusCode::kUnavailable, peer,
      absl::StrCat("rank ", peer, " left the loopback fabric (its transport was destroyed)"));
}

class LoopbackRegion final : public MemoryRegion {
 public:
  LoopbackRegion(std::shared_ptr<Fabric> fabric, int rank, void* base, size_t length,
                 MemoryAccess access)
      : MemoryRegion(base, length, access), fabric_(std::move(fabric)), rank_(rank) {
    set_packed_key(PackRemoteKey({.provider = std::string(kProvider),
                                  .owner = rank,
                                  .base = reinterpret_cast<uintptr_t>(base),
                                  .length = length,
                                  .access = access}));
  }
  ~LoopbackRegion() override {
    MutexLock lock(&fabric_->mu);
    std::vector<Region>& regions = fabric_->box(rank_).regions;
    for (auto it = regions.begin(); it != regions.end(); ++it) {
      if (it->base == reinterpret_cast<uintptr_t>(base()) && it->length == length()) {
        regions.erase(it);
        break;
      }
    }
  }

 private:
  std::shared_ptr<Fabric> fabric_;
  int rank_;
};

class LoopbackRemote final : public RemoteRegion {
 public:
  LoopbackRemote(int peer, uint64_t base, size_t length, MemoryAccess access)
      : RemoteRegion(peer, base, length, access) {}
};

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<Fabric> fabric, int rank)
      : Transport(rank, fabric->size()), fabric_(std::move(fabric)) {
    WireWriter writer;
    writer.U64(fabric_->id());
    writer.U32(static_cast<uint32_t>(rank));
    address_ = EncodePeerAddress({.provider = std::string(kProvider),
                                  .host = LocalHostName(),
                                  .pid = getpid(),
                                  .provider_address = std::move(writer).Finish()});
  }

  ~LoopbackTransport() override { Depart(); }

  absl::string_view provider_name() const override { return kProvider; }
  const std::string& address() const override { return address_; }

  absl::Status Connect(absl::Span<const std::string> addresses) override {
    RETURN_IF_ERROR(BeginConnect(addresses));
    for (int peer = 0; peer < size(); ++peer) {
      if (!Reachable(peer)) continue;
      ASSIGN_OR_RETURN(PeerAddress address, DecodePeerAddress(addresses[peer], kProvider, peer));
      WireReader reader(address.provider_address);
      uint64_t fabric = 0;
      uint32_t owner = 0;
      if (!reader.U64(fabric) || !reader.U32(owner) || fabric != fabric_->id() ||
          static_cast<int>(owner) != peer) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank(), ": the address given for rank ", peer,
                         " belongs to another loopback fabric or rank"));
      }
    }
    connected_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override {
    if (base == nullptr && length > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterMemory on rank ", rank(), ": base is null but length is ", length));
    }
    {
      MutexLock lock(&fabric_->mu);
      fabric_->box(rank()).regions.push_back({reinterpret_cast<uintptr_t>(base), length, access});
    }
    return std::make_unique<LoopbackRegion>(fabric_, rank(), base, length, access);
  }

  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed) override {
    RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
    ASSIGN_OR_RETURN(RemoteKey key, UnpackRemoteKey(packed, kProvider, peer, rank()));
    MutexLock lock(&fabric_->mu);
    for (const Region& region : fabric_->box(peer).regions) {
      if (region.base == key.base && region.length == key.length) {
        return std::make_unique<LoopbackRemote>(peer, key.base, key.length, key.access);
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "ImportRegion on rank ", rank(), ": rank ", peer, " has no registered region of ",
        key.length, " bytes at 0x", absl::Hex(key.base), " (deregistered?)"));
  }

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override {
    RETURN_IF_ERROR(CheckReady("PostSend"));
    RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
    MutexLock lock(&fabric_->mu);
    Mailbox& target = fabric_->box(peer);
    if (target.departed) {
      fabric_->Finish(rank(), completion, PeerLeft(peer), 0);
      return absl::OkStatus();
    }
    for (auto it = target.recvs.begin(); it != target.recvs.end(); ++it) {
      if (it->source == rank() && it->tag == tag) {
        Deliver({rank(), tag, data, bytes, completion, check & kCheckMask}, *it, peer);
        target.recvs.erase(it);
        return absl::OkStatus();
      }
    }
    target.unexpected.push_back({rank(), tag, data, bytes, completion, check & kCheckMask});
    target.kept.push_back(tag);
    fabric_->Wake(peer);
    return absl::OkStatus();
  }

  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override {
    RETURN_IF_ERROR(CheckReady("PostRecv"));
    RETURN_IF_ERROR(CheckMessage("PostRecv", peer, tag, data, bytes, region));
    MutexLock lock(&fabric_->mu);
    Mailbox& mine = fabric_->box(rank());
    for (auto it = mine.unexpected.begin(); it != mine.unexpected.end(); ++it) {
      if (it->source == peer && it->tag == tag) {
        Deliver(*it, {peer, tag, data, bytes, completion}, rank());
        mine.unexpected.erase(it);
        taken.push_back(tag);
        return absl::OkStatus();
      }
    }
    if (fabric_->box(peer).departed) {
      fabric_->Finish(rank(), completion, PeerLeft(peer), 0);
      return absl::OkStatus();
    }
    mine.recvs.push_back({peer, tag, data, bytes, completion});
    return absl::OkStatus();
  }

  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override {
    RETURN_IF_ERROR(CheckReady("PostNotifyRecv"));
    RETURN_IF_ERROR(CheckMessage("PostNotifyRecv", peer, notify_tag, nullptr, 0));
    MutexLock lock(&fabric_->mu);
    Mailbox& mine = fabric_->box(rank());
    for (auto it = mine.notifies.begin(); it != mine.notifies.end(); ++it) {
      if (it->first == peer && it->second == notify_tag) {
        mine.notifies.erase(it);
        fabric_->Finish(rank(), completion, absl::OkStatus(), 0);
        return absl::OkStatus();
      }
    }
    if (fabric_->box(peer).departed) {
      fabric_->Finish(rank(), completion, PeerLeft(peer), 0);
      return absl::OkStatus();
    }
    mine.notify_waits.push_back({peer, notify_tag, completion});
    return absl::OkStatus();
  }

  absl::Status Progress() override {
    if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
    std::vector<uint64_t> kept;
    {
      MutexLock lock(&fabric_->mu);
      kept.swap(fabric_->box(rank()).kept);
    }
    for (const uint64_t tag : kept) CountUnexpected(tag, +1);
    for (const uint64_t tag : taken) CountUnexpected(tag, -1);
    taken.clear();
    return absl::OkStatus();
  }

  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override {
    MutexLock lock(&fabric_->mu);
    for (const Message& message : fabric_->box(rank()).unexpected) {
      if ((peer < 0 || message.source == peer) && ((message.tag ^ tag) & ~ignore) == 0) {
        return WaitingMessage{message.source, message.tag, message.check};
      }
    }
    return std::nullopt;
  }
  bool CanFindUnexpected() const override { return true; }
  absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const override {
    return unexpected_counts();
  }

 protected:
  // Takes back everything of this rank's that another rank's thread could still copy
  // into or out of: its posted receives and notification waits, and its messages
  // waiting in the other ranks' mailboxes. Their Completions are left as they are.
  void OnFreeze(absl::Time) override {
    MutexLock lock(&fabric_->mu);
    Mailbox& mine = fabric_->box(rank());
    mine.recvs.clear();
    mine.notify_waits.clear();
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      std::deque<Message>& unexpected = fabric_->box(peer).unexpected;
      unexpected.erase(std::remove_if(unexpected.begin(), unexpected.end(),
                                      [&](const Message& m) { return m.source == rank(); }),
                       unexpected.end());
    }
  }

  void Sleep(absl::Duration timeout) override {
    MutexLock lock(&fabric_->mu);
    Mailbox& mine = fabric_->box(rank());
    if (!mine.wakeup) mine.changed.WaitWithTimeout(&fabric_->mu, timeout);
    mine.wakeup = false;
  }

 private:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override {
    const bool put = access == MemoryAccess::kRemoteWrite;
    const char* what = OneSidedName(access);
    RETURN_IF_ERROR(CheckReady(what));
    RETURN_IF_ERROR(CheckOneSided(what, data, bytes, remote, offset, notify_tag, access, region));
    MutexLock lock(&fabric_->mu);
    if (!StillRegistered(remote)) return StaleRegion(what, remote);
    if (fabric_->box(remote.peer()).departed) {
      fabric_->Finish(rank(), completion, PeerLeft(remote.peer()), 0);
      return absl::OkStatus();
    }
    void* remote_bytes = reinterpret_cast<void*>(remote.base() + offset);
    if (bytes > 0) std::memcpy(put ? remote_bytes : data, put ? data : remote_bytes, bytes);
    Notify(remote.peer(), notify_tag);
    fabric_->Finish(rank(), completion, absl::OkStatus(), bytes);
    return absl::OkStatus();
  }

  absl::Status CheckReady(absl::string_view operation) const {
    if (connected_) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(operation, " on rank ", rank(), ": Connect has not been called"));
  }

  // Copies a matched message and ends both sides; `receiver` owns `recv`.
  void Deliver(const Message& message, const PendingRecv& recv, int receiver)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fabric_->mu) {
    if (message.bytes > recv.bytes) {
      const absl::Status truncated = absl::InvalidArgumentError(
          absl::StrCat("a message of ", message.bytes, " bytes from rank ", message.source,
                       " to rank ", receiver, " (tag ", message.tag,
                       ") does not fit the receive buffer of ", recv.bytes, " bytes"));
      fabric_->Finish(message.source, message.completion, truncated, 0);
      fabric_->Finish(receiver, recv.completion, truncated, 0);
      return;
    }
    if (message.bytes > 0) std::memcpy(recv.data, message.data, message.bytes);
    fabric_->Finish(message.source, message.completion, absl::OkStatus(), message.bytes);
    fabric_->Finish(receiver, recv.completion, absl::OkStatus(), message.bytes, message.check);
  }

  void Notify(int target, uint64_t tag) ABSL_EXCLUSIVE_LOCKS_REQUIRED(fabric_->mu) {
    Mailbox& box = fabric_->box(target);
    for (auto it = box.notify_waits.begin(); it != box.notify_waits.end(); ++it) {
      if (it->source == rank() && it->tag == tag) {
        fabric_->Finish(target, it->completion, absl::OkStatus(), 0);
        box.notify_waits.erase(it);
        return;
      }
    }
    box.notifies.emplace_back(rank(), tag);
    fabric_->Wake(target);
  }

  bool StillRegistered(const RemoteRegion& remote) ABSL_EXCLUSIVE_LOCKS_REQUIRED(fabric_->mu) {
    for (const Region& region : fabric_->box(remote.peer()).regions) {
      if (region.base == remote.base() && region.length == remote.length()) return true;
    }
    return false;
  }

  absl::Status StaleRegion(absl::string_view operation, const RemoteRegion& remote) const {
    return absl::InvalidArgumentError(absl::StrCat(operation, " on rank ", rank(), ": rank ",
                                                   remote.peer(),
                                                   " has deregistered the target region"));
  }

  // Ends everything this rank had pending (Aborted) and everything its peers had
  // pending with it (Unavailable).
  void Depart() {
    MutexLock lock(&fabric_->mu);
    const absl::Status aborted =
        absl::AbortedError(absl::StrCat("rank ", rank(), "'s loopback transport was destroyed"));
    Mailbox& mine = fabric_->box(rank());
    mine.departed = true;
    for (const PendingRecv& recv : mine.recvs) fabric_->Finish(rank(), recv.completion, aborted, 0);
    for (const PendingNotify& wait : mine.notify_waits) {
      fabric_->Finish(rank(), wait.completion, aborted, 0);
    }
    for (const Message& message : mine.unexpected) {
      fabric_->Finish(message.source, message.completion, PeerLeft(rank()), 0);
    }
    mine.recvs.clear();
    mine.notify_waits.clear();
    mine.unexpected.clear();
    mine.regions.clear();
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      Mailbox& box = fabric_->box(peer);
      for (auto it = box.unexpected.begin(); it != box.unexpected.end();) {
        if (it->source != rank()) {
          ++it;
          continue;
        }
        fabric_->Finish(rank(), it->completion, aborted, 0);
        it = box.unexpected.erase(it);
      }
      for (auto it = box.recvs.begin(); it != box.recvs.end();) {
        if (it->source != rank()) {
          ++it;
          continue;
        }
        fabric_->Finish(peer, it->completion, PeerLeft(rank()), 0);
        it = box.recvs.erase(it);
      }
      for (auto it = box.notify_waits.begin(); it != box.notify_waits.end();) {
        if (it->source != rank()) {
          ++it;
          continue;
        }
        fabric_->Finish(peer, it->completion, PeerLeft(rank()), 0);
        it = box.notify_waits.erase(it);
      }
    }
  }

  std::shared_ptr<Fabric> fabric_;
  std::string address_;
  bool connected_ = false;
  // The tags of unexpected messages this rank's receives took, to count (Progress).
  std::vector<uint64_t> taken;
};

absl::StatusOr<std::unique_ptr<Transport>> Fabric::CreateTransport(int rank) {
  if (rank < 0 || rank >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoopbackFabric: rank ", rank, " is not a rank of a ", size_, "-rank fabric"));
  }
  {
    MutexLock lock(&mu);
    if (boxes_[rank].joined) {
      return absl::FailedPreconditionError(
          absl::StrCat("LoopbackFabric: rank ", rank, " already has a transport"));
    }
    boxes_[rank].joined = true;
  }
  return std::make_unique<LoopbackTransport>(shared_from_this(), rank);
}

}  // namespace

std::shared_ptr<LoopbackFabric> LoopbackFabric::Create(int size) {
  return std::make_shared<Fabric>(size);
}

}  // namespace zcoll
