#include "transport/ofi/ofi_transport.h"

#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "transport/envelope.h"
#include "transport/operation_pool.h"
#include "transport/peer_monitor.h"
#include "transport/registration_cache.h"
#include "transport/shared_memory_name.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 17);
// Notifications live in their own tag space, above every caller tag; a send's check
// word travels in the bits above the caller's tag, which receives ignore.
constexpr uint64_t kNotifyBit = uint64_t{1} << 62;
constexpr uint64_t kIgnoreCheck = uint64_t{kCheckMask} << kTagBits;
static_assert(kTagBits + kCheckBits < 62, "the check word must stay below the notification bit");
// Registrations kept for buffers passed without a MemoryRegion.
constexpr size_t kCachedRegistrations = 256;
// The shm provider's overflow sink (see OfiTransport::overflow_sink_): address space
// only, halved until the system grants it.
constexpr size_t kShmOverflowSinkBytes = size_t{1} << 40;
constexpr size_t kShmOverflowSinkMinimumBytes = size_t{1} << 30;
// The rxm layer's eager limit, set below unless the user chose one.
constexpr size_t kRxmBufferBytes = 65536;

absl::Status FabricError(absl::string_view what, int rc) {
  return absl::UnavailableError(absl::StrCat(what, " failed: ", fi_strerror(-rc)));
}

template <typename T>
struct FidCloser {
  void operator()(T* object) const {
    if (object != nullptr) fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser<T>>;

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

class OfiRegion final : public MemoryRegion {
 public:
  OfiRegion(void* base, size_t length, MemoryAccess access, fid_mr* mr)
      : MemoryRegion(base, length, access), mr_(mr) {}
  ~OfiRegion() override {
    if (mr_ != nullptr) fi_close(&mr_->fid);
  }
  void* descriptor() const { return mr_ != nullptr ? fi_mr_desc(mr_) : nullptr; }
  uint64_t key() const { return mr_ != nullptr ? fi_mr_key(mr_) : 0; }
  void set_packed(std::string key) { set_packed_key(std::move(key)); }

 private:
  fid_mr* mr_;
};

class OfiRemote final : public RemoteRegion {
 public:
  OfiRemote(int peer, uint64_t base, size_t length, MemoryAccess access, uint64_t key,
            bool virtual_addressing)
      : RemoteRegion(peer, base, length, access),
        key_(key),
        virtual_addressing_(virtual_addressing) {}
  uint64_t key() const { return key_; }
  // The address libfabric wants for `offset` into the region.
  uint64_t TargetAddress(size_t offset) const {
    return virtual_addressing_ ? base() + offset : offset;
  }

 private:
  uint64_t key_;
  bool virtual_addressing_;
};

// The state of one posted operation; libfabric hands `context` back on completion.
struct Operation {
  fi_context2 context;  // first: libfabric's op_context points here
  enum class Kind { kSend, kRecv, kNotifyRecv, kNotifySend, kPut, kGet } kind;
  int peer = -1;
  Completion* completion = nullptr;  // null once the operation was ended early
  size_t bytes = 0;
  uint64_t notify_tag = 0;                           // kPut / kGet: sent once the transfer is done
  std::shared_ptr<const MemoryRegion> registration;  // a cached one kept alive
  // While the operation waits in a backlog (the provider's queue was full): how to
  // post it, and what that post needs beyond the caller's call (an RMA write's
  // descriptions).
  std::function<ssize_t()> repost;
  const char* what = "";
  void* descriptor = nullptr;
  iovec local_iov{};
  iovec receive_iov[2]{};  // kRecv into the overflow sink: the buffer, then the sink
  void* receive_descriptors[2]{};
  fi_msg_tagged receive_message{};
  fi_rma_iov remote_iov{};
  fi_msg_rma message{};
  Operation* pool_previous = nullptr;  // OperationPool's
  Operation* pool_next = nullptr;
  bool pool_live = false;
};

// Posts that wait for room in the provider's queues, in order: transmit (sends,
// notifications, RMA) and receive.
enum class Backlog { kTransmit = 0, kReceive = 1 };

class OfiTransport final : public Transport {
 public:
  OfiTransport(int rank, int size) : Transport(rank, size), monitor_(size) {}
  ~OfiTransport() override;

  absl::Status Initialize(absl::string_view provider);

  absl::string_view provider_name() const override { return name_; }
  const std::string& address() const override { return address_; }
  absl::Status Connect(absl::Span<const std::string> addresses) override;

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override;
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed) override;
  void InvalidateRegistrations(const void* pointer, size_t bytes) override {
    cache_->Invalidate(pointer, bytes);
  }
  RegistrationStats registration_stats() const override {
    return {.hits = cache_->hits(), .misses = cache_->misses(), .cached = cache_->size()};
  }

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override;
  // Never injected (an injected message may still wait in the provider when this
  // rank leaves): completed once delivered, where the provider can say so, else
  // once sent.
  absl::Status PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                 Completion* completion) override;
  int check_bits() const override { return check_mask_ == 0 ? 0 : kCheckBits; }
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override;
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override;
  absl::Status Progress() override;

 protected:
  void Sleep(absl::Duration timeout) override;

 private:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override;
  absl::Status CheckReady(absl::string_view operation) const {
    if (connected_) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(operation, " on rank ", rank(), ": Connect has not been called"));
  }
  absl::Status PeerGone(int peer, absl::string_view why) const {
    return PeerError(absl::StatusCode::kUnavailable, peer,
                     absl::StrCat(monitor_.Describe(peer), " ", why));
  }
  // A peer found gone before: the reason it was given then.
  absl::Status Gone(int peer) const { return PeerGone(peer, gone_[peer]); }
  std::string DescribePeer(int peer) const override {
    if (!gone_.empty() && dead_[peer] && !monitor_.IsDead(peer)) {
      return absl::StrCat(monitor_.Describe(peer), " ", gone_[peer]);
    }
    return monitor_.DescribeState(peer);
  }
  std::vector<int> PeersNotRunning() const override { return monitor_.NotRunning(); }

  // The descriptor for a local buffer: from the caller's region, else a cached
  // registration (which `operation` then keeps alive) when the provider needs one.
  absl::StatusOr<void*> Descriptor(const void* data, size_t bytes, const MemoryRegion* region,
                                   Operation* operation);

  // Posts `operation` with `post` now, or, when the provider's queue is full (or
  // posts wait in the backlog already, which keeps them in order), queues it to be
  // retried by Progress: a post never blocks, so no call waits past its deadline for
  // a peer that stopped reading. `post` keeps what it needs by value. An error the
  // provider gives at once discards the operation (the caller returns the error; the
  // Completion is not touched).
  absl::Status Submit(Backlog backlog, const char* what, Operation* operation,
                      std::function<ssize_t()> post);
  // Retries the backlogs' posts in order, until the provider refuses one again.
  void RetryBacklogs();
  // Injects a small message if the provider has room now: true when it did.
  absl::StatusOr<bool> TryInject(int peer, uint64_t tag, const void* data, size_t bytes);
  void Discard(Operation* operation) {
    operation->completion = nullptr;
    Finish(operation, absl::OkStatus(), 0);
  }

  Operation* NewOperation(Operation::Kind kind, int peer, Completion* completion, size_t bytes) {
    Operation* operation = operations_.Acquire();
    operation->kind = kind;
    operation->peer = peer;
    operation->completion = completion;
    operation->bytes = bytes;
    return operation;
  }
  void Finish(Operation* operation, absl::Status status, size_t bytes, uint32_t check = 0) {
    if (operation->completion != nullptr) {
      operation->completion->Complete(std::move(status), bytes, check);
    }
    operation->registration.reset();
    operations_.Release(operation);
  }
  // Sends the notification that ends a put or get.
  void SendNotify(Operation* transfer);
  void ReserveOverflowSink();
  absl::Status Truncated(const Operation& receive, size_t left_over) const;
  void HandleCompletion(Operation* operation, size_t length, uint64_t tag);
  void HandleError(const fi_cq_err_entry& error);
  // Marks `peer` gone for `why` ("exited", "is unreachable: ...") and ends its
  // operations.
  void FailPeer(int peer, absl::string_view why);
  // Ends `peer`'s operations still pending for the caller with `why`.
  void FailOperationsOf(int peer, const absl::Status& why);
  // Reads the completion queue until it is empty.
  absl::Status ReadCompletions();
  // Fails the peers the monitor saw die, after reading what they sent before.
  void HandleDeaths();
  // libfabric's progress runs in our calls (fi_cq_read, and fi_close of the
  // endpoint), and it copies into and out of the operations' buffers: those must all
  // be over before the failing call returns and its buffers go. So: every operation
  // is abandoned (no Completion written), posted receives are cancelled, and the
  // completion queue is read until nothing is left or `deadline` passes. What is
  // left then (a transfer with a stopped peer) keeps the provider from ever running
  // again: the destructor leaks the endpoint and its domain instead of closing them
  // (closing would progress them).
  void OnFreeze(absl::Time deadline) override;

  std::string name_;
  std::string address_;
  bool connected_ = false;
  InfoPtr info_;
  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  FidPtr<fid_av> av_;
  FidPtr<fid_cq> cq_;
  FidPtr<fid_ep> endpoint_;
  int wait_fd_ = -1;
  bool needs_local_descriptors_ = false;
  bool virtual_addressing_ = false;
  bool provider_keys_ = false;
  bool endpoint_bound_registrations_ = false;
  bool delivery_complete_ = true;        // cleared if the provider refuses the flag
  bool delivery_complete_sends_ = true;  // the same, for PostDeliveredSend
  // The check word's bits this provider carries. libfabric 1.17's shm matches a
  // receive against messages that arrived before it without the receive's ignore
  // bits (smr_match_tagged reads the message's), so a message carrying a check word
  // never meets a receive posted after it: over shm, none.
  uint32_t check_mask_ = kCheckMask;
  std::atomic<uint64_t> next_key_{1};
  std::vector<fi_addr_t> addresses_;
  std::vector<bool> dead_;
  std::vector<std::string> gone_;  // by peer: why it is gone, once it is
  PeerMonitor monitor_;
  std::unique_ptr<RegistrationCache> cache_;
  size_t own_address_bytes_ = 0;  // fi_getname's length: a peer's is as long
  // Set by OnFreeze when operations were left with the provider: never progress it.
  bool must_not_progress_ = false;
  // Every operation libfabric holds is live here until its completion is read, and
  // so are those in the backlogs.
  OperationPool<Operation> operations_;
  std::deque<Operation*> backlogs_[2];
  // Transmits wait in order per peer only: one peer without room (a connection
  // still being made to a rank that does not progress) must not hold up another's
  // (a failure notice to a live rank waited behind one to a sleeping rank, and was
  // lost as the process left). By peer: how many wait, and (for RetryBacklogs) which
  // had no room this pass.
  std::vector<uint32_t> transmits_waiting_;
  std::vector<uint8_t> transmit_blocked_;
  size_t inject_bytes_ = 0;
  // Where a message longer than its receive buffer goes, on providers that cannot
  // refuse one. libfabric 1.17's shm reads a message beyond its inject size with
  // cross-memory attach for as many bytes as were sent: into a smaller buffer, once
  // the buffer is full, process_vm_readv copies nothing and is called again, forever,
  // inside fi_cq_read. Its tcp provider, handed a receive buffer by the rxm layer for
  // an eager message that does not fit, fails the connection, and every later message
  // between the two ranks is lost. So their receives end in this sink: reserved
  // address space (no memory until a truncated message writes to it, returned at
  // once), and a completion longer than the buffer is the truncation the provider
  // could not report. For rxm it need only hold an eager message: longer ones go by
  // rendezvous, which rxm truncates itself. Null where no sink is needed or the
  // system would not reserve one (then those failures remain, and a warning says so).
  void* overflow_sink_ = nullptr;
  size_t overflow_sink_bytes_ = 0;
  std::unique_ptr<MemoryRegion> overflow_sink_region_;  // where local buffers need one
  uint64_t progress_calls_ = 0;
  uint64_t notify_payload_ = 0;
};

absl::Status OfiTransport::Initialize(absl::string_view provider) {
  InfoPtr hints(fi_allocinfo());
  if (hints == nullptr) return absl::ResourceExhaustedError("fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps =
      FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  // Messages with one tag must not overtake each other.
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(std::string(provider).c_str());
  // The rxm layer over tcp sends messages up to its buffer size eagerly and the
  // rest by rendezvous, an extra round trip. Its 16 KiB default put collectives'
  // 32-128 KiB steps at 2-3x Open MPI's TCP time here; at 64 KiB they halve, for
  // preposted receive buffers four times as large. libfabric reads it when it loads
  // the provider, and has no call to set it, so the environment it is; a value the
  // user set wins. Once per process: setenv races with other threads' getenv, so
  // the later transports must not repeat it.
  static const bool rxm_buffer_set = [] {
    setenv("FI_OFI_RXM_BUFFER_SIZE", "65536", /*overwrite=*/0);
    return true;
  }();
  (void)rxm_buffer_set;
  fi_info* list = nullptr;
  const int rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("rank ", rank(), ": libfabric has no reliable-datagram provider ",
                     provider.empty() ? "" : absl::StrCat("named '", provider, "' "),
                     "with tagged messages and RMA on this machine (", fi_strerror(-rc),
                     "); zcoll_info lists the providers that open here"));
  }
  InfoPtr all(list);
  // Take the first entry whose fabric, domain and endpoint open.
  absl::Status last_error;
  for (fi_info* info = list; info != nullptr; info = info->next) {
    fid_fabric* fabric = nullptr;
    fid_domain* domain = nullptr;
    int opened = fi_fabric(info->fabric_attr, &fabric, nullptr);
    if (opened == 0) opened = fi_domain(fabric, info, &domain, nullptr);
    if (opened != 0) {
      if (fabric != nullptr) fi_close(&fabric->fid);
      last_error = FabricError(absl::StrCat("opening ", info->fabric_attr->prov_name), opened);
      continue;
    }
    fabric_.reset(fabric);
    domain_.reset(domain);
    info_.reset(fi_dupinfo(info));
    break;
  }
  if (domain_ == nullptr) return last_error;
  fi_info* info = info_.get();
  name_ = absl::StrCat("ofi:", info->fabric_attr->prov_name);
  if (std::string(info->fabric_attr->prov_name) == "shm") check_mask_ = 0;
  inject_bytes_ = info->tx_attr->inject_size;
  const int mr_mode = info->domain_attr->mr_mode;
  // Forcing descriptors runs the FI_MR_LOCAL path of verbs and efa (registration
  // cache included) on providers that would accept buffers without them.
  needs_local_descriptors_ =
      (mr_mode & FI_MR_LOCAL) != 0 || EnvironmentUnsigned("ZCOLL_OFI_MR_LOCAL") != 0;
  virtual_addressing_ = (mr_mode & FI_MR_VIRT_ADDR) != 0;
  provider_keys_ = (mr_mode & FI_MR_PROV_KEY) != 0;
  endpoint_bound_registrations_ = (mr_mode & FI_MR_ENDPOINT) != 0;
  if (mr_mode & FI_MR_RAW) {
    return absl::UnimplementedError(absl::StrCat(
        name_, " needs raw (over 64-bit) memory keys, which zcoll does not support yet"));
  }

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  fid_av* av = nullptr;
  if (int failed = fi_av_open(domain_.get(), &av_attr, &av, nullptr); failed != 0) {
    return FabricError("fi_av_open", failed);
  }
  av_.reset(av);
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.wait_obj = FI_WAIT_FD;
  fid_cq* cq = nullptr;
  if (fi_cq_open(domain_.get(), &cq_attr, &cq, nullptr) != 0) {
    // Not every provider offers a wait fd; then waits sleep briefly instead.
    cq_attr.wait_obj = FI_WAIT_NONE;
    if (int failed = fi_cq_open(domain_.get(), &cq_attr, &cq, nullptr); failed != 0) {
      return FabricError("fi_cq_open", failed);
    }
  } else if (fi_control(&cq->fid, FI_GETWAIT, &wait_fd_) != 0) {
    wait_fd_ = -1;
  }
  cq_.reset(cq);
  if (info->addr_format == FI_ADDR_STR && std::string(info->fabric_attr->prov_name) == "shm") {
    // libfabric's shm names its memory after "fi_shm://PID"; processes in different
    // PID namespaces (containers, Bazel's sandbox) then collide in the shared
    // /dev/shm. The namespace in the prefix and a random part cannot.
    std::random_device random;
    const std::string name = absl::StrCat("fi_shm://", SharedMemoryPrefix(getpid()),
                                          absl::Hex(random()), absl::Hex(random()));
    free(info->src_addr);
    info->src_addr = strdup(name.c_str());
    info->src_addrlen = name.size() + 1;
  }
  fid_ep* endpoint = nullptr;
  if (int failed = fi_endpoint(domain_.get(), info, &endpoint, nullptr); failed != 0) {
    return FabricError("fi_endpoint", failed);
  }
  endpoint_.reset(endpoint);
  if (int failed = fi_ep_bind(endpoint, &av->fid, 0); failed != 0) {
    return FabricError("binding the address vector", failed);
  }
  if (int failed = fi_ep_bind(endpoint, &cq->fid, FI_TRANSMIT | FI_RECV); failed != 0) {
    return FabricError("binding the completion queue", failed);
  }
  if (int failed = fi_enable(endpoint); failed != 0) return FabricError("fi_enable", failed);
  std::string name(256, '\0');
  size_t name_length = name.size();
  if (int failed = fi_getname(&endpoint->fid, name.data(), &name_length); failed != 0) {
    return FabricError("fi_getname", failed);
  }
  name.resize(name_length);
  own_address_bytes_ = name_length;
  address_ = EncodePeerAddress(
      {.provider = name_, .host = LocalHostName(), .pid = getpid(), .provider_address = name});
  cache_ = std::make_unique<RegistrationCache>(
      [this](void* base, size_t length, MemoryAccess access) {
        return RegisterMemory(base, length, access);
      },
      kCachedRegistrations);
  ReserveOverflowSink();
  return absl::OkStatus();
}

void OfiTransport::OnFreeze(absl::Time deadline) {
  if (!connected_) return;
  // A one-sided write into this process completes before its notification does:
  // with the notification's receive cancelled, the write may still be on its way.
  bool exposed = false;
  for (std::deque<Operation*>& waiting : backlogs_) {
    for (Operation* operation : waiting) {
      operation->repost = nullptr;
      operation->completion = nullptr;
      Finish(operation, absl::OkStatus(), 0);  // never the provider's
    }
    waiting.clear();
  }
  std::fill(transmits_waiting_.begin(), transmits_waiting_.end(), 0);
  operations_.ForEachLive([&](Operation* operation) {
    operation->completion = nullptr;
    if (operation->kind == Operation::Kind::kRecv ||
        operation->kind == Operation::Kind::kNotifyRecv) {
      exposed = exposed || operation->kind == Operation::Kind::kNotifyRecv;
      fi_cancel(&endpoint_->fid, &operation->context);
    }
  });
  while (operations_.live_count() > 0 && absl::Now() < deadline) {
    if (!ReadCompletions().ok()) break;
    if (operations_.live_count() > 0) absl::SleepFor(absl::Microseconds(50));
  }
  must_not_progress_ = exposed || operations_.live_count() > 0;
  if (must_not_progress_) {
    ZCOLL_LOG(WARNING) << "rank " << rank() << ": " << operations_.live_count()
                       << " libfabric transfer(s) did not end as the job failed; the " << name_
                       << " endpoint is left open, not closed, until the process exits";
  }
}

OfiTransport::~OfiTransport() {
  if (must_not_progress_) {
    // Closing would progress transfers into buffers that are gone (OnFreeze).
    zcoll::KeepUntilExit(endpoint_.release());
    zcoll::KeepUntilExit(cq_.release());
    zcoll::KeepUntilExit(av_.release());
    zcoll::KeepUntilExit(cache_.release());
    zcoll::KeepUntilExit(overflow_sink_region_.release());
    zcoll::KeepUntilExit(domain_.release());
    zcoll::KeepUntilExit(fabric_.release());
    return;
  }
  // Closing the endpoint first cancels everything it had, so that no completion
  // refers to an Operation freed below.
  endpoint_.reset();
  const absl::Status aborted =
      absl::AbortedError(absl::StrCat("rank ", rank(), "'s ", name_, " transport was destroyed"));
  operations_.ForEachLive([&](Operation* operation) {
    // A frozen transport's operations were abandoned: their Completions may be gone.
    if (operation->completion != nullptr && !frozen()) {
      operation->completion->Complete(aborted, 0);
    }
    operations_.Release(operation);
  });
  cache_.reset();  // registrations before the domain
  overflow_sink_region_.reset();
  cq_.reset();
  av_.reset();
  domain_.reset();
  fabric_.reset();
  if (overflow_sink_ != nullptr) munmap(overflow_sink_, overflow_sink_bytes_);
}

void OfiTransport::ReserveOverflowSink() {
  const absl::string_view provider = info_->fabric_attr->prov_name;
  size_t wanted = 0;
  size_t minimum = 0;
  if (provider == "shm") {
    wanted = kShmOverflowSinkBytes;
    minimum = kShmOverflowSinkMinimumBytes;
  } else if (absl::StrContains(provider, "ofi_rxm")) {
    // rxm's eager limit: its variable's value (set in Initialize unless the user did).
    // A message header more would not change the sink's size in pages.
    const char* buffer_size = getenv("FI_OFI_RXM_BUFFER_SIZE");
    if (buffer_size == nullptr || !absl::SimpleAtoi(buffer_size, &wanted) || wanted == 0) {
      wanted = kRxmBufferBytes;
    }
    wanted += 4096;
    minimum = wanted;
  }
  if (wanted == 0 || info_->rx_attr->iov_limit < 2) return;
  for (size_t bytes = wanted; bytes >= minimum; bytes /= 2) {
    void* sink = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sink == MAP_FAILED) continue;
    overflow_sink_ = sink;
    overflow_sink_bytes_ = bytes;
    break;
  }
  // Without a sink the transport still works; only a mistaken receive fails worse.
  auto without_sink = [&](absl::string_view why) {
    ZCOLL_LOG(WARNING) << "rank " << rank() << ": " << name_ << " " << why
                       << "; a message longer than its receive buffer will hang its receiver "
                          "(shm) or end the connection between the two ranks (tcp)";
  };
  if (overflow_sink_ == nullptr) {
    without_sink("could not reserve address space for truncated messages");
    return;
  }
  if (!needs_local_descriptors_) return;
  absl::StatusOr<std::unique_ptr<MemoryRegion>> region =
      RegisterMemory(overflow_sink_, overflow_sink_bytes_, MemoryAccess::kLocal);
  if (!region.ok()) {
    without_sink(absl::StrCat("could not register its sink for truncated messages (",
                              region.status().message(), ")"));
    munmap(overflow_sink_, overflow_sink_bytes_);
    overflow_sink_ = nullptr;
    return;
  }
  overflow_sink_region_ = std::move(*region);
}

absl::Status OfiTransport::Connect(absl::Span<const std::string> addresses) {
  RETURN_IF_ERROR(BeginConnect(addresses));
  addresses_.assign(size(), FI_ADDR_UNSPEC);
  transmits_waiting_.assign(size(), 0);
  transmit_blocked_.assign(size(), 0);
  dead_.assign(size(), false);
  gone_.assign(size(), "");
  for (int peer = 0; peer < size(); ++peer) {
    if (!Reachable(peer)) continue;
    ASSIGN_OR_RETURN(PeerAddress address, DecodePeerAddress(addresses[peer], name_, peer));
    // libfabric reads an address of its format's length (or, a string one, up to its
    // NUL) whatever it is given: a short one is refused here.
    const std::string& raw = address.provider_address;
    const bool fits = info_->addr_format == FI_ADDR_STR ? raw.find('\0') != std::string::npos
                                                        : raw.size() == own_address_bytes_;
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), ": the ", name_, " address of rank ", peer, " is malformed (",
          raw.size(), " bytes, where this rank's has ", own_address_bytes_, ")"));
    }
    const int inserted =
        fi_av_insert(av_.get(), address.provider_address.data(), 1, &addresses_[peer], 0, nullptr);
    if (inserted != 1) {
      return absl::UnavailableError(
          absl::StrCat("rank ", rank(), ": fi_av_insert of rank ", peer, "'s address failed"));
    }
    monitor_.Watch(peer, address.host, address.pid);
  }
  connected_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MemoryRegion>> OfiTransport::RegisterMemory(void* base,
                                                                           size_t length,
                                                                           MemoryAccess access) {
  if (base == nullptr && length > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RegisterMemory on rank ", rank(), ": base is null but length is ", length));
  }
  uint64_t flags = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
  if (Allows(access, MemoryAccess::kRemoteRead)) flags |= FI_REMOTE_READ;
  if (Allows(access, MemoryAccess::kRemoteWrite)) flags |= FI_REMOTE_WRITE;
  fid_mr* mr = nullptr;
  const uint64_t requested_key = provider_keys_ ? 0 : next_key_++;
  if (int failed = fi_mr_reg(domain_.get(), base, length, flags, 0, requested_key, 0, &mr, nullptr);
      failed != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("RegisterMemory on rank ", rank(), ": ",
                                                     length, " bytes: ", fi_strerror(-failed)));
  }
  auto region = std::make_unique<OfiRegion>(base, length, access, mr);
  if (endpoint_bound_registrations_) {
    if (int failed = fi_mr_bind(mr, &endpoint_->fid, 0); failed != 0) {
      return FabricError("fi_mr_bind", failed);
    }
    if (int failed = fi_mr_enable(mr); failed != 0) return FabricError("fi_mr_enable", failed);
  }
  WireWriter key;
  key.U64(region->key());
  region->set_packed(PackRemoteKey({.provider = name_,
                                    .owner = rank(),
                                    .base = reinterpret_cast<uintptr_t>(base),
                                    .length = length,
                                    .access = access,
                                    .provider_key = std::move(key).Finish()}));
  return region;
}

absl::StatusOr<std::unique_ptr<RemoteRegion>> OfiTransport::ImportRegion(int peer,
                                                                         absl::string_view packed) {
  RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
  ASSIGN_OR_RETURN(RemoteKey key, UnpackRemoteKey(packed, name_, peer, rank()));
  WireReader reader(key.provider_key);
  uint64_t mr_key = 0;
  if (!reader.U64(mr_key) || !reader.at_end()) {
    return absl::InvalidArgumentError(absl::StrCat("ImportRegion on rank ", rank(),
                                                   ": the key given for rank ", peer,
                                                   " carries no libfabric memory key"));
  }
  return std::make_unique<OfiRemote>(peer, key.base, key.length, key.access, mr_key,
                                     virtual_addressing_);
}

absl::StatusOr<void*> OfiTransport::Descriptor(const void* data, size_t bytes,
                                               const MemoryRegion* region, Operation* operation) {
  if (!needs_local_descriptors_ || bytes == 0) return nullptr;
  if (region != nullptr) {  // Post* checked that it covers the buffer
    return static_cast<const OfiRegion*>(region)->descriptor();
  }
  ASSIGN_OR_RETURN(operation->registration, cache_->Acquire(data, bytes, MemoryAccess::kLocal));
  return static_cast<const OfiRegion*>(operation->registration.get())->descriptor();
}

absl::Status OfiTransport::Submit(Backlog backlog, const char* what, Operation* operation,
                                  std::function<ssize_t()> post) {
  std::deque<Operation*>& waiting = backlogs_[static_cast<int>(backlog)];
  const bool transmit = backlog == Backlog::kTransmit;
  if (transmit ? transmits_waiting_[operation->peer] == 0 : waiting.empty()) {
    ssize_t rc = post();
    if (rc == -FI_EAGAIN) {
      // Completions read now may free the room.
      (void)ReadCompletions();
      rc = post();
    }
    if (rc == 0) return absl::OkStatus();
    if (rc != -FI_EAGAIN) {
      Discard(operation);
      return FabricError(absl::StrCat(what, " on rank ", rank()), static_cast<int>(rc));
    }
  }
  operation->repost = std::move(post);
  operation->what = what;
  waiting.push_back(operation);
  if (transmit) ++transmits_waiting_[operation->peer];
  return absl::OkStatus();
}

void OfiTransport::RetryBacklogs() {
  auto post = [this](Operation* operation) {
    const ssize_t rc = operation->repost();
    if (rc == -FI_EAGAIN) return false;
    operation->repost = nullptr;
    if (rc != 0) {
      Finish(operation,
             FabricError(absl::StrCat(operation->what, " on rank ", rank()), static_cast<int>(rc)),
             0);
    }
    return true;
  };
  // Receives in order: a full receive queue is the provider's, not a peer's.
  std::deque<Operation*>& receives = backlogs_[static_cast<int>(Backlog::kReceive)];
  while (!receives.empty() && post(receives.front())) receives.pop_front();
  // Transmits in order per peer; a peer without room is passed over.
  std::deque<Operation*>& transmits = backlogs_[static_cast<int>(Backlog::kTransmit)];
  if (transmits.empty()) return;
  for (auto it = transmits.begin(); it != transmits.end();) {
    Operation* operation = *it;
    const int peer = operation->peer;
    if (transmit_blocked_[peer] || !post(operation)) {
      transmit_blocked_[peer] = 1;
      ++it;
      continue;
    }
    it = transmits.erase(it);
    --transmits_waiting_[peer];
  }
  std::fill(transmit_blocked_.begin(), transmit_blocked_.end(), 0);
}

absl::Status OfiTransport::PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region,
                                    uint32_t check) {
  RETURN_IF_ERROR(CheckReady("PostSend"));
  RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
  tag |= uint64_t{check & check_mask_} << kTagBits;
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  if (bytes <= inject_bytes_) {
    // The provider copies an injected message at once: done on return, no completion
    // reported, nothing owed to the peer. Without room now it is sent as any other.
    ASSIGN_OR_RETURN(const bool injected, TryInject(peer, tag, data, bytes));
    if (injected) {
      completion->Complete(absl::OkStatus(), bytes);
      return absl::OkStatus();
    }
  }
  Operation* operation = NewOperation(Operation::Kind::kSend, peer, completion, bytes);
  absl::StatusOr<void*> descriptor = Descriptor(data, bytes, region, operation);
  if (!descriptor.ok()) {
    Discard(operation);
    return descriptor.status();
  }
  return Submit(
      Backlog::kTransmit, "fi_tsend", operation,
      [this, data, bytes, descriptor = *descriptor, address = addresses_[peer], tag, operation] {
        return fi_tsend(endpoint_.get(), data, bytes, descriptor, address, tag,
                        &operation->context);
      });
}

absl::Status OfiTransport::PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                             Completion* completion) {
  RETURN_IF_ERROR(CheckReady("PostDeliveredSend"));
  RETURN_IF_ERROR(CheckMessage("PostDeliveredSend", peer, tag, data, bytes, nullptr));
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation = NewOperation(Operation::Kind::kSend, peer, completion, bytes);
  absl::StatusOr<void*> descriptor = Descriptor(data, bytes, nullptr, operation);
  if (!descriptor.ok()) {
    Discard(operation);
    return descriptor.status();
  }
  return Submit(
      Backlog::kTransmit, "fi_tsendmsg", operation,
      [this, data, bytes, descriptor = *descriptor, address = addresses_[peer], tag,
       operation]() -> ssize_t {
        iovec vector{const_cast<void*>(data), bytes};
        void* descriptors[] = {descriptor};
        fi_msg_tagged message{};
        message.msg_iov = &vector;
        message.desc = descriptors;
        message.iov_count = 1;
        message.addr = address;
        message.tag = tag;
        message.context = &operation->context;
        if (delivery_complete_sends_) {
          const ssize_t rc =
              fi_tsendmsg(endpoint_.get(), &message, FI_COMPLETION | FI_DELIVERY_COMPLETE);
          if (rc != -FI_EBADFLAGS && rc != -FI_EINVAL && rc != -FI_ENOSYS) return rc;
          delivery_complete_sends_ = false;
        }
        return fi_tsendmsg(endpoint_.get(), &message, FI_COMPLETION | FI_TRANSMIT_COMPLETE);
      });
}

absl::StatusOr<bool> OfiTransport::TryInject(int peer, uint64_t tag, const void* data,
                                             size_t bytes) {
  // Not past posts that wait: they go first.
  if (transmits_waiting_[peer] > 0) return false;
  ssize_t rc = fi_tinject(endpoint_.get(), data, bytes, addresses_[peer], tag);
  if (rc == -FI_EAGAIN) {
    (void)ReadCompletions();
    rc = fi_tinject(endpoint_.get(), data, bytes, addresses_[peer], tag);
  }
  if (rc == 0) return true;
  if (rc == -FI_EAGAIN) return false;
  return FabricError(absl::StrCat("fi_tinject on rank ", rank()), static_cast<int>(rc));
}

absl::Status OfiTransport::PostRecv(int peer, uint64_t tag, void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region) {
  RETURN_IF_ERROR(CheckReady("PostRecv"));
  RETURN_IF_ERROR(CheckMessage("PostRecv", peer, tag, data, bytes, region));
  // A dead peer's message may have arrived before it died: the receive is posted all
  // the same, and fails below only if nothing matched it.
  const bool peer_dead = dead_[peer];
  Operation* operation = NewOperation(Operation::Kind::kRecv, peer, completion, bytes);
  absl::StatusOr<void*> descriptor = Descriptor(data, bytes, region, operation);
  if (!descriptor.ok()) {
    Discard(operation);
    return descriptor.status();
  }
  if (overflow_sink_ != nullptr) {
    // What a queued post reads later lives in the operation.
    operation->receive_iov[0] = {data, bytes};
    operation->receive_iov[1] = {overflow_sink_, overflow_sink_bytes_};
    operation->receive_descriptors[0] = *descriptor;
    operation->receive_descriptors[1] =
        overflow_sink_region_ != nullptr
            ? static_cast<const OfiRegion&>(*overflow_sink_region_).descriptor()
            : nullptr;
    fi_msg_tagged& message = operation->receive_message;
    message = {};
    message.msg_iov = operation->receive_iov;
    message.desc = operation->receive_descriptors;
    message.iov_count = 2;
    message.addr = addresses_[peer];
    message.tag = tag;
    message.ignore = kIgnoreCheck;
    message.context = &operation->context;
    RETURN_IF_ERROR(Submit(Backlog::kReceive, "fi_trecvmsg", operation, [this, operation] {
      return fi_trecvmsg(endpoint_.get(), &operation->receive_message, FI_COMPLETION);
    }));
  } else {
    RETURN_IF_ERROR(Submit(
        Backlog::kReceive, "fi_trecv", operation,
        [this, data, bytes, descriptor = *descriptor, address = addresses_[peer], tag, operation] {
          return fi_trecv(endpoint_.get(), data, bytes, descriptor, address, tag, kIgnoreCheck,
                          &operation->context);
        }));
  }
  if (peer_dead) {
    RETURN_IF_ERROR(ReadCompletions());
    FailOperationsOf(peer, Gone(peer));
  }
  return absl::OkStatus();
}

absl::Status OfiTransport::PostOneSided(MemoryAccess access, void* data, size_t bytes,
                                        const RemoteRegion& remote, size_t offset,
                                        uint64_t notify_tag, Completion* completion,
                                        const MemoryRegion* region) {
  const bool put = access == MemoryAccess::kRemoteWrite;
  const char* what = OneSidedName(access);
  RETURN_IF_ERROR(CheckReady(what));
  RETURN_IF_ERROR(CheckOneSided(what, data, bytes, remote, offset, notify_tag, access, region));
  const int peer = remote.peer();
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation =
      NewOperation(put ? Operation::Kind::kPut : Operation::Kind::kGet, peer, completion, bytes);
  operation->notify_tag = notify_tag;
  if (bytes == 0) {
    SendNotify(operation);
    return absl::OkStatus();
  }
  absl::StatusOr<void*> found = Descriptor(data, bytes, region, operation);
  if (!found.ok()) {
    Discard(operation);
    return found.status();
  }
  const auto& target = static_cast<const OfiRemote&>(remote);
  if (!put) {
    return Submit(Backlog::kTransmit, "fi_read", operation,
                  [this, data, bytes, descriptor = *found, address = addresses_[peer],
                   target_address = target.TargetAddress(offset), key = target.key(), operation] {
                    return fi_read(endpoint_.get(), data, bytes, descriptor, address,
                                   target_address, key, &operation->context);
                  });
  }
  // The message and what it points to live in the operation: a queued post reads
  // them later.
  operation->descriptor = *found;
  operation->local_iov = {data, bytes};
  operation->remote_iov = {target.TargetAddress(offset), bytes, target.key()};
  fi_msg_rma& message = operation->message;
  message = {};
  message.msg_iov = &operation->local_iov;
  message.desc = &operation->descriptor;
  message.iov_count = 1;
  message.addr = addresses_[peer];
  message.rma_iov = &operation->remote_iov;
  message.rma_iov_count = 1;
  message.context = &operation->context;
  return Submit(Backlog::kTransmit, "fi_writemsg", operation, [this, operation]() -> ssize_t {
    // The notification must not overtake the data: delivery complete where offered.
    if (delivery_complete_) {
      const ssize_t rc =
          fi_writemsg(endpoint_.get(), &operation->message, FI_COMPLETION | FI_DELIVERY_COMPLETE);
      if (rc != -FI_EBADFLAGS && rc != -FI_EINVAL) return rc;
      delivery_complete_ = false;
    }
    return fi_writemsg(endpoint_.get(), &operation->message, FI_COMPLETION);
  });
}

absl::Status OfiTransport::PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) {
  RETURN_IF_ERROR(CheckReady("PostNotifyRecv"));
  RETURN_IF_ERROR(CheckMessage("PostNotifyRecv", peer, notify_tag, nullptr, 0));
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation = NewOperation(Operation::Kind::kNotifyRecv, peer, completion, 0);
  return Submit(Backlog::kReceive, "fi_trecv", operation,
                [this, address = addresses_[peer], notify_tag, operation] {
                  return fi_trecv(endpoint_.get(), nullptr, 0, nullptr, address,
                                  notify_tag | kNotifyBit, 0, &operation->context);
                });
}

void OfiTransport::SendNotify(Operation* transfer) {
  // The transfer's Operation becomes the notification's: its completion ends the
  // put or get, so the operation is done only once nothing is owed to the peer.
  transfer->kind = Operation::Kind::kNotifySend;
  // Submit discards an operation the provider refuses outright; this one the caller
  // was told it accepted, so it ends with the reason instead.
  Completion* completion = transfer->completion;
  const absl::Status posted = Submit(Backlog::kTransmit, "fi_tsend (notification)", transfer,
                                     [this, address = addresses_[transfer->peer],
                                      tag = transfer->notify_tag | kNotifyBit, transfer] {
                                       return fi_tsend(endpoint_.get(), nullptr, 0, nullptr,
                                                       address, tag, &transfer->context);
                                     });
  if (!posted.ok() && completion != nullptr) completion->Complete(posted, 0);
}

void OfiTransport::HandleCompletion(Operation* operation, size_t length, uint64_t tag) {
  switch (operation->kind) {
    case Operation::Kind::kPut:
    case Operation::Kind::kGet:
      if (operation->completion == nullptr) {
        Finish(operation, absl::OkStatus(), 0);
      } else {
        SendNotify(operation);
      }
      return;
    case Operation::Kind::kRecv:
      if (ABSL_PREDICT_FALSE(length > operation->bytes)) {
        // Into the overflow sink: its pages go back now (unless registered: pinned).
        const size_t left_over = length - operation->bytes;
        if (overflow_sink_region_ == nullptr) {
          const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
          madvise(overflow_sink_,
                  std::min((left_over + page - 1) / page * page, overflow_sink_bytes_),
                  MADV_DONTNEED);
        }
        Finish(operation, Truncated(*operation, left_over), 0);
        return;
      }
      Finish(operation, absl::OkStatus(), length,
             static_cast<uint32_t>((tag >> kTagBits) & kCheckMask));
      return;
    default:
      Finish(operation, absl::OkStatus(), operation->bytes);
  }
}

void OfiTransport::HandleError(const fi_cq_err_entry& error) {
  auto* operation = static_cast<Operation*>(error.op_context);
  if (operation == nullptr) return;
  // libfabric 1.17's shm reports some errors negated (-FI_ETRUNC for a truncated
  // inline message), against fi_cq(3).
  const int err = std::abs(error.err);
  // One ended already (its Completion taken: a dead peer's, or a frozen
  // transport's), cancelled or failed now: nothing more to say.
  if (operation->completion == nullptr && err == FI_ECANCELED) {
    Finish(operation, absl::OkStatus(), 0);
    return;
  }
  const int peer = operation->peer;
  absl::Status status;
  if (err == FI_ETRUNC) {
    status = Truncated(*operation, error.olen);
  } else {
    // zcoll cancels only operations it has ended already (their Completion taken off
    // them): a cancellation that reaches one is the provider giving up on the peer, as
    // any other error here is. What this host sees of the peer says more than the
    // provider's word ("Operation canceled" for a killed rank).
    const char* detail = err == FI_ECANCELED ? nullptr
                                             : fi_cq_strerror(cq_.get(), error.prov_errno,
                                                              error.err_data, nullptr, 0);
    FailPeer(peer, monitor_.WhyGone(
                       peer, err == FI_ECANCELED
                                 ? std::string("is unreachable: libfabric cancelled a transfer")
                                 : absl::StrCat(
                                       "is unreachable: ", fi_strerror(err),
                                       detail != nullptr ? absl::StrCat(" (", detail, ")") : "")));
    status = Gone(peer);
  }
  Finish(operation, status, 0);
}

absl::Status OfiTransport::Truncated(const Operation& receive, size_t left_over) const {
  return absl::InvalidArgumentError(absl::StrCat("a message from rank ", receive.peer, " to rank ",
                                                 rank(), " does not fit the receive buffer of ",
                                                 receive.bytes, " bytes (", left_over,
                                                 " bytes left over)"));
}

void OfiTransport::FailPeer(int peer, absl::string_view why) {
  if (dead_[peer]) return;
  dead_[peer] = true;
  gone_[peer] = std::string(why);
  const absl::Status gone = Gone(peer);
  ZCOLL_LOG(INFO) << "rank " << rank() << ": " << gone.message();
  FailOperationsOf(peer, gone);
}

void OfiTransport::FailOperationsOf(int peer, const absl::Status& why) {
  // Posts still waiting in a backlog were never the provider's: ended here.
  for (std::deque<Operation*>& waiting : backlogs_) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->peer != peer) {
        ++it;
        continue;
      }
      Operation* operation = *it;
      it = waiting.erase(it);
      if (&waiting == &backlogs_[static_cast<int>(Backlog::kTransmit)]) {
        --transmits_waiting_[peer];
      }
      operation->repost = nullptr;
      Finish(operation, why, 0);
    }
  }
  operations_.ForEachLive([&](Operation* operation) {
    if (operation->peer != peer || operation->completion == nullptr) return;
    // The provider may still hold the operation: end it for the caller now, and let
    // its eventual completion (or cancellation) free it.
    operation->completion->Complete(why, 0);
    operation->completion = nullptr;
    if (operation->kind == Operation::Kind::kRecv ||
        operation->kind == Operation::Kind::kNotifyRecv) {
      fi_cancel(&endpoint_->fid, &operation->context);
    }
  });
}

void OfiTransport::HandleDeaths() {
  const std::vector<int> deaths = monitor_.NewDeaths();
  if (deaths.empty()) return;
  // What a peer sent before it died may still wait in the provider: take it first.
  ReadCompletions().IgnoreError();
  for (int peer : deaths) FailPeer(peer, monitor_.HowItEnded(peer));
}

absl::Status OfiTransport::Progress() {
  if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
  if (!connected_) return absl::OkStatus();
  RETURN_IF_ERROR(ReadCompletions());
  RetryBacklogs();
  if (++progress_calls_ % 128 == 0) HandleDeaths();
  return absl::OkStatus();
}

absl::Status OfiTransport::ReadCompletions() {
  fi_cq_tagged_entry entries[16];
  while (true) {
    const ssize_t read = fi_cq_read(cq_.get(), entries, 16);
    if (read > 0) {
      for (ssize_t i = 0; i < read; ++i) {
        auto* operation = static_cast<Operation*>(entries[i].op_context);
        if (operation != nullptr) HandleCompletion(operation, entries[i].len, entries[i].tag);
      }
      // Each fi_cq_read also runs the provider's progress engine: only a full batch
      // is worth another call now.
      if (read < 16) return absl::OkStatus();
      continue;
    }
    if (read == -FI_EAVAIL) {
      fi_cq_err_entry error{};
      if (fi_cq_readerr(cq_.get(), &error, 0) > 0) HandleError(error);
      continue;
    }
    if (read == -FI_EAGAIN) return absl::OkStatus();
    return FabricError(absl::StrCat("rank ", rank(), ": fi_cq_read"), static_cast<int>(read));
  }
}

void OfiTransport::Sleep(absl::Duration timeout) {
  if (frozen()) {
    absl::SleepFor(std::min(timeout, absl::Milliseconds(1)));
    return;
  }
  HandleDeaths();
  // Posts waiting for room: retried soon, whatever wakes the completion queue.
  if (!backlogs_[0].empty() || !backlogs_[1].empty()) {
    timeout = std::min(timeout, absl::Microseconds(100));
  }
  if (wait_fd_ < 0) {
    // No wait object: a short nap, so that progress (which some providers need from
    // us) keeps going.
    monitor_.SleepUntilDeath(std::min(timeout, absl::Microseconds(200)));
    return;
  }
  fid* fids[] = {&cq_->fid};
  if (fi_trywait(fabric_.get(), fids, 1) != FI_SUCCESS) return;  // completions are ready
  std::vector<pollfd> polls{{wait_fd_, POLLIN, 0}};
  for (int fd : monitor_.fds()) {
    if (fd >= 0) polls.push_back({fd, POLLIN, 0});
  }
  const timespec limit = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  ppoll(polls.data(), polls.size(), &limit, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> CreateOfiTransport(absl::string_view provider, int rank,
                                                              int size) {
  auto transport = std::make_unique<OfiTransport>(rank, size);
  RETURN_IF_ERROR(transport->Initialize(provider));
  return transport;
}

}  // namespace zcoll
