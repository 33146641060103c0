#include "transport/link_model.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "core/status_macros.h"

namespace zcoll {
namespace {

// A post held back until the modelled link delivers it.
struct HeldPost {
  enum class Kind { kSend, kPut, kGet } kind;
  absl::Time release;
  int peer;
  uint64_t tag;
  void* data;
  size_t bytes;
  Completion* completion;
  const MemoryRegion* region;
  const RemoteRegion* remote;
  size_t offset;
  uint32_t check = 0;
};

class LinkModelTransport final : public Transport {
 public:
  LinkModelTransport(std::unique_ptr<Transport> network, const LinkModel& model)
      : Transport(network->rank(), network->size()),
        network_(std::move(network)),
        model_(model),
        name_(absl::StrCat(network_->provider_name(), " (modelled link: ", model.ToString(), ")")) {
  }

  ~LinkModelTransport() override {
    if (frozen()) return;  // the held posts were abandoned
    const absl::Status aborted =
        absl::AbortedError(absl::StrCat("rank ", rank(),
                                        "'s transport was destroyed before the modelled link "
                                        "delivered the operation"));
    for (HeldPost& post : held_) post.completion->Complete(aborted, 0);
  }

  absl::string_view provider_name() const override { return name_; }
  const std::string& address() const override { return network_->address(); }
  std::string DescribePeer(int peer) const override { return network_->DescribePeer(peer); }
  std::vector<int> PeersNotRunning() const override { return network_->PeersNotRunning(); }
  absl::Status Connect(absl::Span<const std::string> addresses) override {
    RETURN_IF_ERROR(BeginConnect(addresses));
    return network_->Connect(addresses);
  }
  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override {
    return network_->RegisterMemory(base, length, access);
  }
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(
      int peer, absl::string_view packed_key) override {
    return network_->ImportRegion(peer, packed_key);
  }
  void InvalidateRegistrations(const void* pointer, size_t bytes) override {
    network_->InvalidateRegistrations(pointer, bytes);
  }
  RegistrationStats registration_stats() const override { return network_->registration_stats(); }

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override {
    RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
    Hold({HeldPost::Kind::kSend, absl::InfinitePast(), peer, tag, const_cast<void*>(data), bytes,
          completion, region, nullptr, 0, check});
    return absl::OkStatus();
  }
  int check_bits() const override { return network_->check_bits(); }
  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override {
    return network_->FindUnexpected(peer, tag, ignore);
  }
  absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const override {
    return network_->UnexpectedCountsByCall();
  }
  bool CanFindUnexpected() const override { return network_->CanFindUnexpected(); }
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override {
    return network_->PostRecv(peer, tag, data, bytes, completion, region);
  }
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override {
    return network_->PostNotifyRecv(peer, notify_tag, completion);
  }

  absl::Status Progress() override {
    if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
    if (!held_.empty()) Release(absl::Now());
    return network_->Progress();
  }

 protected:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override {
    RETURN_IF_ERROR(CheckOneSided(OneSidedName(access), data, bytes, remote, offset, notify_tag,
                                  access, region));
    Hold({access == MemoryAccess::kRemoteWrite ? HeldPost::Kind::kPut : HeldPost::Kind::kGet,
          absl::InfinitePast(), remote.peer(), notify_tag, data, bytes, completion, region, &remote,
          offset});
    return absl::OkStatus();
  }

  void OnFreeze(absl::Time deadline) override {
    held_.clear();
    network_->Freeze(deadline);
  }
  void Sleep(absl::Duration timeout) override {
    if (!held_.empty()) {
      const absl::Duration until_release = held_.front().release - absl::Now();
      if (until_release <= absl::ZeroDuration()) return;
      timeout = std::min(timeout, until_release);
    }
    SleepOn(*network_, timeout);
  }

 private:
  void Hold(HeldPost post) {
    const absl::Time now = absl::Now();
    const absl::Time start = std::max(now, link_free_);
    link_free_ =
        start + (model_.bits_per_second > 0
                     ? absl::Seconds(static_cast<double>(post.bytes) * 8 / model_.bits_per_second)
                     : absl::ZeroDuration());
    post.release = link_free_ + model_.latency;
    held_.push_back(post);
    Release(now);
  }

  // Hands every due post to the network transport, in order. A post it refuses
  // ends with that error (the caller was told OK when it posted).
  void Release(absl::Time now) {
    while (!held_.empty() && held_.front().release <= now) {
      const HeldPost post = held_.front();
      held_.pop_front();
      absl::Status posted;
      switch (post.kind) {
        case HeldPost::Kind::kSend:
          posted = network_->PostSend(post.peer, post.tag, post.data, post.bytes, post.completion,
                                      post.region, post.check);
          break;
        case HeldPost::Kind::kPut:
          posted = network_->PostPut(post.data, post.bytes, *post.remote, post.offset, post.tag,
                                     post.completion, post.region);
          break;
        case HeldPost::Kind::kGet:
          posted = network_->PostGet(post.data, post.bytes, *post.remote, post.offset, post.tag,
                                     post.completion, post.region);
          break;
      }
      if (!posted.ok()) post.completion->Complete(posted, 0);
    }
  }

  std::unique_ptr<Transport> network_;
  const LinkModel model_;
  const std::string name_;
  std::deque<HeldPost> held_;
  absl::Time link_free_ = absl::InfinitePast();
};

absl::StatusOr<double> NonNegativeNumber(const char* variable) {
  const std::string text = EnvironmentValue(variable);
  double value = 0;
  if (!text.empty() && (!absl::SimpleAtod(text, &value) || !(value >= 0) || value > 1e12)) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable, "='", text, "' is not a non-negative number"));
  }
  return value;
}

}  // namespace

std::string LinkModel::ToString() const {
  return absl::StrCat(
      "latency ", absl::FormatDuration(latency), ", ",
      bits_per_second > 0 ? absl::StrCat(bits_per_second / 1e9, " Gbit/s") : "unlimited bandwidth");
}

absl::StatusOr<LinkModel> LinkModelFromEnvironment() {
  ASSIGN_OR_RETURN(const double latency_us, NonNegativeNumber("ZCOLL_LINK_LATENCY_US"));
  ASSIGN_OR_RETURN(const double gbits, NonNegativeNumber("ZCOLL_LINK_GBITS"));
  LinkModel model;
  model.latency = absl::Microseconds(latency_us);
  model.bits_per_second = gbits * 1e9;
  return model;
}

std::unique_ptr<Transport> CreateLinkModelTransport(std::unique_ptr<Transport> network,
                                                    const LinkModel& model) {
  return std::make_unique<LinkModelTransport>(std::move(network), model);
}

}  // namespace zcoll
