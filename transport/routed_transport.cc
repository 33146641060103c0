#include "transport/routed_transport.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "transport/envelope.h"

namespace zcoll {
namespace {

constexpr absl::string_view kProvider = "routed";

class RoutedRegion final : public MemoryRegion {
 public:
  RoutedRegion(void* base, size_t length, MemoryAccess access, int owner,
               std::unique_ptr<MemoryRegion> local, std::unique_ptr<MemoryRegion> network)
      : MemoryRegion(base, length, access), local_(std::move(local)), network_(std::move(network)) {
    set_packed_key(
        PackRemoteKey({.provider = std::string(kProvider),
                       .owner = owner,
                       .base = reinterpret_cast<uintptr_t>(base),
                       .length = length,
                       .access = access,
                       .provider_key = JoinRoutedParts(local_ ? local_->packed_key() : "",
                                                       network_ ? network_->packed_key() : "")}));
  }
  const MemoryRegion* part(bool local) const { return local ? local_.get() : network_.get(); }

 private:
  std::unique_ptr<MemoryRegion> local_;
  std::unique_ptr<MemoryRegion> network_;
};

class RoutedRemote final : public RemoteRegion {
 public:
  explicit RoutedRemote(std::unique_ptr<RemoteRegion> inner)
      : RemoteRegion(inner->peer(), inner->base(), inner->length(), inner->access()),
        inner_(std::move(inner)) {}
  const RemoteRegion& inner() const { return *inner_; }

 private:
  std::unique_ptr<RemoteRegion> inner_;
};

}  // namespace

class RoutedTransport final : public Transport {
 public:
  RoutedTransport(int rank, int size, std::unique_ptr<Transport> local,
                  std::unique_ptr<Transport> network, std::vector<int> node_of_rank)
      : Transport(rank, size),
        local_(std::move(local)),
        network_(std::move(network)),
        node_of_rank_(std::move(node_of_rank)) {
    name_ = absl::StrCat(local_ ? local_->provider_name() : "", local_ && network_ ? "+" : "",
                         network_ ? network_->provider_name() : "");
    address_ = EncodePeerAddress(
        {.provider = std::string(kProvider),
         .host = LocalHostName(),
         .pid = getpid(),
         .provider_address = JoinRoutedParts(local_ ? local_->address() : "",
                                             network_ ? network_->address() : "")});
  }

  absl::string_view provider_name() const override { return name_; }
  const std::string& address() const override { return address_; }
  std::string DescribePeer(int peer) const override {
    const Transport* route = peer >= 0 && peer < size() && peer != rank() ? Route(peer) : nullptr;
    return route != nullptr ? route->DescribePeer(peer) : Transport::DescribePeer(peer);
  }
  std::vector<int> PeersNotRunning() const override {
    std::vector<int> ranks;
    for (const Transport* part : {local_.get(), network_.get()}) {
      if (part == nullptr) continue;
      for (int peer : part->PeersNotRunning()) {
        if (Route(peer) == part) ranks.push_back(peer);
      }
    }
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  }

  absl::Status Connect(absl::Span<const std::string> addresses) override {
    RETURN_IF_ERROR(BeginConnect(addresses));
    std::vector<std::string> local_addresses(size()), network_addresses(size());
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      ASSIGN_OR_RETURN(PeerAddress address, DecodePeerAddress(addresses[peer], kProvider, peer));
      std::string local_part, network_part;
      if (!SplitRoutedParts(address.provider_address, local_part, network_part)) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank(), ": the address of rank ", peer, " is malformed"));
      }
      std::string& chosen = IsLocal(peer) ? local_part : network_part;
      if (chosen.empty() || Route(peer) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank(), ": rank ", peer, " is on ",
                         IsLocal(peer) ? "this node" : "another node", ", but ",
                         chosen.empty() ? "it has" : "this rank has", " no ",
                         IsLocal(peer) ? "local" : "network", " transport"));
      }
      (IsLocal(peer) ? local_addresses : network_addresses)[peer] = std::move(chosen);
    }
    if (local_) RETURN_IF_ERROR(local_->Connect(local_addresses));
    if (network_) RETURN_IF_ERROR(network_->Connect(network_addresses));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override {
    std::unique_ptr<MemoryRegion> local, network;
    if (local_) {
      ASSIGN_OR_RETURN(local, local_->RegisterMemory(base, length, access));
    }
    if (network_) {
      ASSIGN_OR_RETURN(network, network_->RegisterMemory(base, length, access));
    }
    return std::make_unique<RoutedRegion>(base, length, access, rank(), std::move(local),
                                          std::move(network));
  }

  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed) override {
    RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
    ASSIGN_OR_RETURN(RemoteKey key, UnpackRemoteKey(packed, kProvider, peer, rank()));
    std::string local_key, network_key;
    if (!SplitRoutedParts(key.provider_key, local_key, network_key)) {
      return absl::InvalidArgumentError(absl::StrCat("ImportRegion on rank ", rank(),
                                                     ": the key of rank ", peer, " is malformed"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<RemoteRegion> inner,
                     Route(peer)->ImportRegion(peer, IsLocal(peer) ? local_key : network_key));
    return std::make_unique<RoutedRemote>(std::move(inner));
  }

  void InvalidateRegistrations(const void* pointer, size_t bytes) override {
    if (local_) local_->InvalidateRegistrations(pointer, bytes);
    if (network_) network_->InvalidateRegistrations(pointer, bytes);
  }
  RegistrationStats registration_stats() const override {
    RegistrationStats total;
    for (const Transport* part : {local_.get(), network_.get()}) {
      if (part == nullptr) continue;
      const RegistrationStats stats = part->registration_stats();
      total.hits += stats.hits;
      total.misses += stats.misses;
      total.cached += stats.cached;
    }
    return total;
  }

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override {
    RETURN_IF_ERROR(CheckPeer("PostSend", peer));
    return Route(peer)->PostSend(peer, tag, data, bytes, completion, Part(region, peer), check);
  }
  absl::Status PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                 Completion* completion) override {
    RETURN_IF_ERROR(CheckPeer("PostDeliveredSend", peer));
    return Route(peer)->PostDeliveredSend(peer, tag, data, bytes, completion);
  }
  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override {
    if (peer >= 0) {
      const Transport* route = peer < size() && peer != rank() ? Route(peer) : nullptr;
      return route != nullptr ? route->FindUnexpected(peer, tag, ignore) : std::nullopt;
    }
    for (const Transport* part : {local_.get(), network_.get()}) {
      if (part == nullptr) continue;
      if (std::optional<WaitingMessage> found = part->FindUnexpected(peer, tag, ignore)) {
        return found;
      }
    }
    return std::nullopt;
  }
  // One transport's counts, when there is one; two cannot share a span.
  absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const override {
    if (local_ != nullptr && network_ != nullptr) return {};
    if (local_ != nullptr) return local_->UnexpectedCountsByCall();
    if (network_ != nullptr) return network_->UnexpectedCountsByCall();
    return {};
  }
  bool CanFindUnexpected() const override {
    return (local_ == nullptr || local_->CanFindUnexpected()) &&
           (network_ == nullptr || network_->CanFindUnexpected());
  }
  // What both routes carry.
  int check_bits() const override {
    int bits = kCheckBits;
    for (const Transport* part : {local_.get(), network_.get()}) {
      if (part != nullptr) bits = std::min(bits, part->check_bits());
    }
    return bits;
  }
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override {
    RETURN_IF_ERROR(CheckPeer("PostRecv", peer));
    return Route(peer)->PostRecv(peer, tag, data, bytes, completion, Part(region, peer));
  }
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override {
    RETURN_IF_ERROR(CheckPeer("PostNotifyRecv", peer));
    return Route(peer)->PostNotifyRecv(peer, notify_tag, completion);
  }

  absl::Status Progress() override {
    if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
    if (local_) RETURN_IF_ERROR(local_->Progress());
    if (network_) RETURN_IF_ERROR(network_->Progress());
    return absl::OkStatus();
  }

 protected:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override {
    const int peer = remote.peer();
    RETURN_IF_ERROR(CheckPeer(OneSidedName(access), peer));
    const RemoteRegion& inner = static_cast<const RoutedRemote&>(remote).inner();
    Transport* route = Route(peer);
    return access == MemoryAccess::kRemoteWrite
               ? route->PostPut(data, bytes, inner, offset, notify_tag, completion,
                                Part(region, peer))
               : route->PostGet(data, bytes, inner, offset, notify_tag, completion,
                                Part(region, peer));
  }
  void OnFreeze(absl::Time deadline) override {
    if (local_) local_->Freeze(deadline);
    if (network_) network_->Freeze(deadline);
  }
  void Sleep(absl::Duration timeout) override {
    if (local_ && network_) {
      // Each sleeps on its own wait object; short turns keep both responsive.
      const absl::Duration turn = std::min(timeout / 2, absl::Microseconds(100));
      SleepOn(*local_, turn);
      SleepOn(*network_, turn);
      return;
    }
    SleepOn(local_ ? *local_ : *network_, timeout);
  }

 private:
  bool IsLocal(int peer) const { return node_of_rank_[peer] == node_of_rank_[rank()]; }
  Transport* Route(int peer) const { return IsLocal(peer) ? local_.get() : network_.get(); }
  const MemoryRegion* Part(const MemoryRegion* region, int peer) const {
    return region == nullptr ? nullptr
                             : static_cast<const RoutedRegion*>(region)->part(IsLocal(peer));
  }

  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> network_;
  std::vector<int> node_of_rank_;
  std::string name_;
  std::string address_;
};

absl::StatusOr<std::unique_ptr<Transport>> CreateRoutedTransport(std::unique_ptr<Transport> local,
                                                                 std::unique_ptr<Transport> network,
                                                                 std::vector<int> node_of_rank) {
  const Transport* any = local ? local.get() : network.get();
  if (any == nullptr) {
    return absl::InvalidArgumentError("CreateRoutedTransport: no transport to route through");
  }
  const int rank = any->rank(), size = any->size();
  if (static_cast<int>(node_of_rank.size()) != size ||
      (local && network && (network->rank() != rank || network->size() != size))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateRoutedTransport: the node map has ", node_of_rank.size(),
        " entries and the transports must be for the same rank of a ", size, "-rank job"));
  }
  return std::make_unique<RoutedTransport>(rank, size, std::move(local), std::move(network),
                                           std::move(node_of_rank));
}

}  // namespace zcoll
