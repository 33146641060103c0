#include "transport/ucx/ucx_transport.h"

#include <poll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "transport/envelope.h"
#include "transport/operation_pool.h"
#include "transport/peer_monitor.h"
#include "transport/wire.h"

namespace zcoll {
namespace {

// UCX's 64-bit tags match worker-wide, so they carry the source rank. Layout, from
// the lowest bit: the caller's tag (kTagBits), the source rank (as many bits as the
// job's size needs, 22 at most), a notification bit, then the send's check word in
// what is left (16 bits up to 128 ranks, fewer above 32768), which receives ignore.
constexpr int kMostRankBits = 22;
constexpr int kMaxRanks = 1 << kMostRankBits;
constexpr absl::Duration kConnectTimeout = absl::Seconds(60);

// Bits that hold ranks 0..size-1.
int RankBits(int size) {
  int bits = 1;
  while (bits < kMostRankBits && (int64_t{1} << bits) < size) ++bits;
  return bits;
}

struct TagLayout {
  explicit TagLayout(int size)
      : rank_bits(RankBits(size)),
        notify_bit(uint64_t{1} << (kTagBits + rank_bits)),
        check_shift(kTagBits + rank_bits + 1),
        check_bits(std::min(kCheckBits, 64 - check_shift)),
        match_mask(~((check_bits == 0 ? 0 : ((uint64_t{1} << check_bits) - 1)) << check_shift)) {}

  uint64_t Tag(uint64_t tag, int source, bool notify, uint32_t check = 0) const {
    const uint64_t checked =
        check_bits == 0 ? 0 : uint64_t{check & ((uint32_t{1} << check_bits) - 1)} << check_shift;
    return tag | (static_cast<uint64_t>(source) << kTagBits) | (notify ? notify_bit : 0) | checked;
  }
  uint32_t Check(uint64_t sender_tag) const {
    return static_cast<uint32_t>(sender_tag >> check_shift) &
           ((check_bits == 0) ? 0 : ((uint32_t{1} << check_bits) - 1));
  }

  int rank_bits;
  uint64_t notify_bit;
  int check_shift;
  int check_bits;
  uint64_t match_mask;  // receives match every bit but the check word's
};

// True for a UCX_TLS list of TCP only ("tcp", or "tcp,self"), as ucx:tcp asks.
bool IsTcpOnly(absl::string_view transports) {
  bool tcp = false;
  for (absl::string_view name : absl::StrSplit(transports, ',')) {
    if (name == "tcp") {
      tcp = true;
    } else if (name != "self") {
      return false;
    }
  }
  return tcp;
}

absl::Status UcxError(absl::string_view what, ucs_status_t status) {
  return absl::UnavailableError(absl::StrCat(what, " failed: ", ucs_status_string(status)));
}

class UcxRegion final : public MemoryRegion {
 public:
  UcxRegion(ucp_context_h context, void* base, size_t length, MemoryAccess access, ucp_mem_h memh)
      : MemoryRegion(base, length, access), context_(context), memh_(memh) {}
  ~UcxRegion() override { ucp_mem_unmap(context_, memh_); }
  void set_packed(std::string key) { set_packed_key(std::move(key)); }

 private:
  ucp_context_h context_;
  ucp_mem_h memh_;
};

class UcxRemote final : public RemoteRegion {
 public:
  UcxRemote(int peer, uint64_t base, size_t length, MemoryAccess access, ucp_rkey_h rkey)
      : RemoteRegion(peer, base, length, access), rkey_(rkey) {}
  ~UcxRemote() override { ucp_rkey_destroy(rkey_); }
  ucp_rkey_h rkey() const { return rkey_; }

 private:
  ucp_rkey_h rkey_;
};

class UcxTransport;

// One posted operation; UCX hands it back as the callbacks' user_data.
struct Operation {
  enum class Kind { kSend, kRecv, kPut, kGet, kFlush, kNotifySend } kind;
  UcxTransport* transport = nullptr;
  int peer = -1;
  Completion* completion = nullptr;  // null once the operation was ended early
  size_t bytes = 0;
  uint64_t notify_tag = 0;
  void* request = nullptr;             // UCX's, while pending
  bool live = false;                   // false once released to the pool
  Operation* pool_previous = nullptr;  // OperationPool's
  Operation* pool_next = nullptr;
  bool pool_live = false;
};

class UcxTransport final : public Transport {
 public:
  UcxTransport(int rank, int size) : Transport(rank, size), layout_(size), monitor_(size) {}
  ~UcxTransport() override;
  // The context, worker and endpoints of a transport that must never be destroyed,
  // kept reachable until the process exits (KeepUntilExit).
  void KeepWorkerUntilExit() {
    KeepUntilExit(context_);
    KeepUntilExit(worker_);
    for (ucp_ep_h endpoint : endpoints_) KeepUntilExit(endpoint);
  }
  void DrainUnexpectedMessages();

  absl::Status Initialize(absl::string_view transports);

  absl::string_view provider_name() const override { return "ucx"; }
  const std::string& address() const override { return address_; }
  absl::Status Connect(absl::Span<const std::string> addresses) override;

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override;
  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed) override;

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override;
  int check_bits() const override { return layout_.check_bits; }
  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override {
    if (!connected_ || frozen()) return std::nullopt;
    uint64_t mask = layout_.match_mask & ~ignore;
    if (peer < 0) mask &= ~(((uint64_t{1} << layout_.rank_bits) - 1) << kTagBits);
    // Caller tags only: not notifications.
    ucp_tag_recv_info_t info{};
    if (ucp_tag_probe_nb(worker_, layout_.Tag(tag, std::max(peer, 0), false), mask,
                         /*remove=*/0, &info) == nullptr) {
      return std::nullopt;
    }
    return WaitingMessage{
        static_cast<int>((info.sender_tag >> kTagBits) & ((uint64_t{1} << layout_.rank_bits) - 1)),
        info.sender_tag & kMaxTag, layout_.Check(info.sender_tag)};
  }
  bool CanFindUnexpected() const override { return true; }
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override;
  absl::Status PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                 Completion* completion) override;
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override;
  absl::Status Progress() override;

  // UCX callbacks land here (`sender_tag`: a receive's match, for its check word).
  void Completed(Operation* operation, ucs_status_t status, size_t length, uint64_t sender_tag = 0);
  void EndpointFailed(int peer, ucs_status_t status);

 protected:
  void Sleep(absl::Duration timeout) override;
  // Nothing to do now: data moves only inside ucp_worker_progress, which a frozen
  // transport no longer calls (nor does its destructor).
  void OnFreeze(absl::Time) override {}

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

  Operation* NewOperation(Operation::Kind kind, int peer, Completion* completion, size_t bytes) {
    Operation* operation = operations_.Acquire();
    operation->kind = kind;
    operation->transport = this;
    operation->peer = peer;
    operation->completion = completion;
    operation->bytes = bytes;
    operation->live = true;
    return operation;
  }
  void Finish(Operation* operation, absl::Status status, size_t bytes, uint32_t check = 0) {
    if (operation->completion != nullptr) {
      operation->completion->Complete(std::move(status), bytes, check);
    }
    operation->live = false;
    operations_.Release(operation);
  }

  // What a _nbx call returned: done at once, failed, or pending (the callback comes).
  // For a new operation a failure is returned and the operation discarded.
  absl::Status Started(Operation* operation, ucs_status_ptr_t result, absl::string_view what,
                       size_t immediate_bytes);
  ucp_request_param_t Params(Operation* operation) const;
  // Chains: a put's flush, then the notification; a get's notification.
  void Continue(Operation* operation);
  void SendNotify(Operation* operation);
  // Marks `peer` gone for `why` ("exited", "is unreachable: ...") and ends its
  // operations.
  void FailPeer(int peer, absl::string_view why);
  // Ends `peer`'s operations still pending for the caller with `why`.
  void FailOperationsOf(int peer, const absl::Status& why);
  // Progresses the worker until it has nothing left to do (bounded).
  void Drain();
  // Fails the peers the monitor saw die, after reading what they sent before.
  void HandleDeaths();
  absl::Status FinishWireup();

  const TagLayout layout_;
  std::string address_;
  bool connected_ = false;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int wait_fd_ = -1;
  std::vector<ucp_ep_h> endpoints_;
  std::vector<bool> dead_;
  std::vector<std::string> gone_;  // by peer: why it is gone, once it is
  PeerMonitor monitor_;
  OperationPool<Operation> operations_;
  uint64_t progress_calls_ = 0;
};

void SendCallback(void* request, ucs_status_t status, void* user_data) {
  auto* operation = static_cast<Operation*>(user_data);
  ucp_request_free(request);
  operation->request = nullptr;
  operation->transport->Completed(operation, status, operation->bytes);
}

void RecvCallback(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                  void* user_data) {
  auto* operation = static_cast<Operation*>(user_data);
  // `info` lies inside the request (for a receive that completed at once): read it
  // before the request is freed.
  const size_t length = info != nullptr ? info->length : 0;
  const uint64_t sender_tag = info != nullptr ? info->sender_tag : 0;
  ucp_request_free(request);
  operation->request = nullptr;
  operation->transport->Completed(operation, status, length, sender_tag);
}

struct EndpointErrorArgument {
  UcxTransport* transport;
  int peer;
};

void EndpointErrorCallback(void* argument, ucp_ep_h, ucs_status_t status) {
  auto* error = static_cast<EndpointErrorArgument*>(argument);
  error->transport->EndpointFailed(error->peer, status);
}

std::vector<std::unique_ptr<EndpointErrorArgument>>& ErrorArguments() {
  // Owned per process; endpoints reference them until destroyed with the transport.
  static auto* arguments = new std::vector<std::unique_ptr<EndpointErrorArgument>>();
  return *arguments;
}

absl::Status UcxTransport::Initialize(absl::string_view transports) {
  if (size() > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("the UCX transport supports at most ", kMaxRanks, " ranks, not ", size()));
  }
  ucp_config_t* config = nullptr;
  if (ucs_status_t read = ucp_config_read(nullptr, nullptr, &config); read != UCS_OK) {
    return UcxError("ucp_config_read", read);
  }
  if (!transports.empty()) {
    const ucs_status_t modified = ucp_config_modify(config, "TLS", std::string(transports).c_str());
    if (modified != UCS_OK) {
      ucp_config_release(config);
      return absl::InvalidArgumentError(absl::StrCat("UCX does not accept the transport list '",
                                                     transports,
                                                     "': ", ucs_status_string(modified)));
    }
  }
  // Over TCP alone UCX's rendezvous (auto threshold: about 8 KiB here) costs round
  // trips that a socket's own copy does not save: measured with zcoll_bench on 2
  // emulated nodes, a 2-rank bcast of 8 KiB took 44 us with it and 10 without, 128 KiB
  // 99 us at a 64 KiB threshold and 38 us without (Open MPI's TCP BTL: 8.8 and 47).
  // Without rendezvous a second lane (UCX adds one per further interface, eth0 beside
  // lo here) carries nothing, and with it large eager messages under load ended
  // collectives with "Endpoint timeout" (3 of 8 test runs four at a time; 0 of 32 with
  // one lane), so one lane. Eager messages that large are then read in 256 KiB
  // segments instead of 64 KiB (A/B three times: 512 KiB bcast 102-109 us against
  // 149-242, alltoall 119-143 against 173-226; 512 KiB segments were no better). With
  // RDMA transports rendezvous is the zero-copy path, so this is TCP only; and none of
  // it when the user set the rendezvous threshold or the variable itself.
  struct Setting {
    const char* variable;  // what the user would set
    const char* name;      // what ucp_config_modify takes: a transport's without its prefix
    const char* value;
  };
  constexpr Setting kTcpSettings[] = {{"UCX_RNDV_THRESH", "RNDV_THRESH", "inf"},
                                      {"UCX_MAX_RNDV_LANES", "MAX_RNDV_LANES", "1"},
                                      {"UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE", "256K"}};
  if (IsTcpOnly(transports) && std::getenv("UCX_RNDV_THRESH") == nullptr) {
    for (const Setting& setting : kTcpSettings) {
      if (std::getenv(setting.variable) != nullptr) continue;
      const ucs_status_t modified = ucp_config_modify(config, setting.name, setting.value);
      if (modified != UCS_OK) {
        ucp_config_release(config);
        return UcxError(absl::StrCat("rank ", rank(), ": setting UCX's ", setting.variable, "=",
                                     setting.value, " for TCP (ucp_config_modify)"),
                        modified);
      }
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  const ucs_status_t initialized = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (initialized != UCS_OK) {
    return absl::UnavailableError(
        absl::StrCat("rank ", rank(), ": ucp_init failed (", ucs_status_string(initialized), ")",
                     transports.empty() ? "" : absl::StrCat(" with UCX_TLS=", transports),
                     "; zcoll_info lists the UCX transports of this machine"));
  }
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (ucs_status_t created = ucp_worker_create(context_, &worker_params, &worker_);
      created != UCS_OK) {
    return UcxError("ucp_worker_create", created);
  }
  if (ucp_worker_get_efd(worker_, &wait_fd_) != UCS_OK) wait_fd_ = -1;
  ucp_address_t* worker_address = nullptr;
  size_t address_length = 0;
  if (ucs_status_t got = ucp_worker_get_address(worker_, &worker_address, &address_length);
      got != UCS_OK) {
    return UcxError("ucp_worker_get_address", got);
  }
  address_ =
      EncodePeerAddress({.provider = "ucx",
                         .host = LocalHostName(),
                         .pid = getpid(),
                         .provider_address = std::string(
                             reinterpret_cast<const char*>(worker_address), address_length)});
  ucp_worker_release_address(worker_, worker_address);
  return absl::OkStatus();
}

UcxTransport::~UcxTransport() {
  if (frozen()) {
    // Abandoned operations: the worker is never progressed again (a progress could
    // still deliver a fragment into an abandoned buffer: a survivor of a killed peer
    // crashed that way, the program's vectors freed), nor destroyed: UCX 1.13 purges
    // a connection still being set up as it destroys a worker, and aborted on an
    // assertion doing so (`got REP message`, ucp_request.c:684). The worker, its
    // sockets and its memory stay until the process exits.
    KeepWorkerUntilExit();
    return;
  }
  const absl::Status aborted =
      absl::AbortedError(absl::StrCat("rank ", rank(), "'s ucx transport was destroyed"));
  operations_.ForEachLive([&](Operation* operation) {
    if (operation->completion != nullptr) operation->completion->Complete(aborted, 0);
    operation->completion = nullptr;
    // Receives only (the listeners' of a job's control channel, at least): UCX 1.13
    // over tcp, cancelling a rendezvous send whose peer then closed, completed it
    // twice and aborted on an assertion (`comp->count > 0`).
    if (operation->request != nullptr && operation->kind == Operation::Kind::kRecv) {
      ucp_request_cancel(worker_, operation->request);
    }
  });
  if (worker_ != nullptr) {
    for (int i = 0; i < 100 && ucp_worker_progress(worker_) != 0; ++i) {
    }
  }
  bool sending = false;
  operations_.ForEachLive([&](Operation* operation) {
    sending = sending || operation->kind != Operation::Kind::kRecv;
  });
  if (sending) {
    // A transfer still reads its buffer: the worker is left as it is, as a frozen
    // one (closing it would progress the transfer).
    KeepWorkerUntilExit();
    return;
  }
  // Nothing in flight: close the endpoints without waiting for peers that may be
  // gone.
  if (worker_ != nullptr) {
    for (ucp_ep_h endpoint : endpoints_) {
      if (endpoint == nullptr) continue;
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      params.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t closing = ucp_ep_close_nbx(endpoint, &params);
      if (UCS_PTR_IS_PTR(closing)) {
        for (int i = 0; i < 1000 && ucp_request_check_status(closing) == UCS_INPROGRESS; ++i) {
          ucp_worker_progress(worker_);
        }
        ucp_request_free(closing);
      }
    }
  }
  if (worker_ != nullptr) {
    DrainUnexpectedMessages();
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxTransport::DrainUnexpectedMessages() {
  // Messages nobody will receive now (a peer's last words after this rank's
  // receives were cancelled) are taken off the worker, which otherwise warns about
  // each on stderr when destroyed.
  std::vector<char> scratch;
  for (int message = 0; message < 1024; ++message) {
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h unexpected = ucp_tag_probe_nb(worker_, 0, 0, /*remove=*/1, &info);
    if (unexpected == nullptr) return;
    scratch.resize(std::max<size_t>(info.length, 1));
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    params.datatype = ucp_dt_make_contig(1);
    ucs_status_ptr_t receiving =
        ucp_tag_msg_recv_nbx(worker_, scratch.data(), info.length, unexpected, &params);
    if (UCS_PTR_IS_PTR(receiving)) {
      for (int i = 0; i < 1000 && ucp_request_check_status(receiving) == UCS_INPROGRESS; ++i) {
        ucp_worker_progress(worker_);
      }
      ucp_request_free(receiving);
    }
  }
}

absl::Status UcxTransport::Connect(absl::Span<const std::string> addresses) {
  RETURN_IF_ERROR(BeginConnect(addresses));
  endpoints_.assign(size(), nullptr);
  dead_.assign(size(), false);
  gone_.assign(size(), "");
  for (int peer = 0; peer < size(); ++peer) {
    if (!Reachable(peer)) continue;
    ASSIGN_OR_RETURN(PeerAddress address, DecodePeerAddress(addresses[peer], "ucx", peer));
    auto& argument = ErrorArguments().emplace_back(new EndpointErrorArgument{this, peer});
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(address.provider_address.data());
    // Peer error handling makes UCX 1.13 drop its shared-memory transports (posix,
    // cma lack peer-failure support) and fall back to TCP even on one host. Peers on
    // this host are watched through pidfds instead, so only remote ones need it.
    params.err_mode =
        address.host == LocalHostName() ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = EndpointErrorCallback;
    params.err_handler.arg = argument.get();
    if (ucs_status_t created = ucp_ep_create(worker_, &params, &endpoints_[peer]);
        created != UCS_OK) {
      return UcxError(absl::StrCat("rank ", rank(), ": ucp_ep_create to rank ", peer), created);
    }
    monitor_.Watch(peer, address.host, address.pid);
  }
  connected_ = true;
  return FinishWireup();
}

absl::Status UcxTransport::FinishWireup() {
  // Every rank calls Connect, so all progress together here. Establishing every
  // endpoint now means none is torn down half-connected later: UCX 1.13 asserts in
  // wireup when a peer closes an endpoint whose TCP lanes are still being set up.
  std::vector<ucs_status_ptr_t> flushes;
  for (int peer = 0; peer < size(); ++peer) {
    if (!Reachable(peer)) continue;
    ucp_request_param_t params{};
    const ucs_status_ptr_t flush = ucp_ep_flush_nbx(endpoints_[peer], &params);
    if (UCS_PTR_IS_ERR(flush)) {
      return UcxError(absl::StrCat("rank ", rank(), ": connecting to rank ", peer),
                      UCS_PTR_STATUS(flush));
    }
    if (flush != nullptr) flushes.push_back(flush);
  }
  const absl::Time give_up = absl::Now() + kConnectTimeout;
  for (ucs_status_ptr_t flush : flushes) {
    ucs_status_t status;
    while ((status = ucp_request_check_status(flush)) == UCS_INPROGRESS) {
      ucp_worker_progress(worker_);
      if (absl::Now() > give_up) {
        return absl::DeadlineExceededError(
            absl::StrCat("rank ", rank(), ": UCX endpoints were not connected within ",
                         absl::FormatDuration(kConnectTimeout), " (do all ranks call Connect?)"));
      }
    }
    ucp_request_free(flush);
    if (status != UCS_OK) return UcxError(absl::StrCat("rank ", rank(), ": connecting"), status);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MemoryRegion>> UcxTransport::RegisterMemory(void* base,
                                                                           size_t length,
                                                                           MemoryAccess access) {
  if (base == nullptr && length > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RegisterMemory on rank ", rank(), ": base is null but length is ", length));
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base;
  params.length = std::max<size_t>(length, 1);
  ucp_mem_h memh = nullptr;
  if (ucs_status_t mapped = ucp_mem_map(context_, &params, &memh); mapped != UCS_OK) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "RegisterMemory on rank ", rank(), ": ", length, " bytes: ", ucs_status_string(mapped)));
  }
  auto region = std::make_unique<UcxRegion>(context_, base, length, access, memh);
  void* packed = nullptr;
  size_t packed_size = 0;
  if (ucs_status_t packed_ok = ucp_rkey_pack(context_, memh, &packed, &packed_size);
      packed_ok != UCS_OK) {
    return UcxError("ucp_rkey_pack", packed_ok);
  }
  region->set_packed(
      PackRemoteKey({.provider = "ucx",
                     .owner = rank(),
                     .base = reinterpret_cast<uintptr_t>(base),
                     .length = length,
                     .access = access,
                     .provider_key = std::string(static_cast<char*>(packed), packed_size)}));
  ucp_rkey_buffer_release(packed);
  return region;
}

absl::StatusOr<std::unique_ptr<RemoteRegion>> UcxTransport::ImportRegion(int peer,
                                                                         absl::string_view packed) {
  RETURN_IF_ERROR(CheckReady("ImportRegion"));
  RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
  ASSIGN_OR_RETURN(RemoteKey key, UnpackRemoteKey(packed, "ucx", peer, rank()));
  ucp_rkey_h rkey = nullptr;
  if (ucs_status_t unpacked = ucp_ep_rkey_unpack(endpoints_[peer], key.provider_key.data(), &rkey);
      unpacked != UCS_OK) {
    return absl::InvalidArgumentError(absl::StrCat("ImportRegion on rank ", rank(),
                                                   ": UCX cannot unpack rank ", peer,
                                                   "'s key: ", ucs_status_string(unpacked)));
  }
  return std::make_unique<UcxRemote>(peer, key.base, key.length, key.access, rkey);
}

ucp_request_param_t UcxTransport::Params(Operation* operation) const {
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.user_data = operation;
  if (operation->kind == Operation::Kind::kRecv) {
    params.cb.recv = RecvCallback;
    // UCX 1.13 leaves recv_info unfilled when a receive completes immediately, so
    // receives always report through the callback, which has the length.
    params.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  } else {
    params.cb.send = SendCallback;
  }
  return params;
}

absl::Status UcxTransport::Started(Operation* operation, ucs_status_ptr_t result,
                                   absl::string_view what, size_t immediate_bytes) {
  if (UCS_PTR_IS_PTR(result)) {
    // With UCP_OP_ATTR_FLAG_NO_IMM_CMPL the callback may already have run inside the
    // _nbx call, completing and freeing the operation (and the request).
    if (operation->live) operation->request = result;
    return absl::OkStatus();
  }
  const ucs_status_t status = UCS_PTR_STATUS(result);
  if (status == UCS_OK) {
    Completed(operation, UCS_OK, immediate_bytes);
    return absl::OkStatus();
  }
  if (dead_[operation->peer] || status == UCS_ERR_CONNECTION_RESET ||
      status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_UNREACHABLE) {
    Completed(operation, status, 0);
    return absl::OkStatus();
  }
  operation->completion = nullptr;  // the caller returns the error
  Finish(operation, absl::OkStatus(), 0);
  return UcxError(absl::StrCat(what, " on rank ", rank()), status);
}

absl::Status UcxTransport::PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region,
                                    uint32_t check) {
  RETURN_IF_ERROR(CheckReady("PostSend"));
  RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation = NewOperation(Operation::Kind::kSend, peer, completion, bytes);
  const ucp_request_param_t params = Params(operation);
  return Started(operation,
                 ucp_tag_send_nbx(endpoints_[peer], data, bytes,
                                  layout_.Tag(tag, rank(), false, check), &params),
                 "ucp_tag_send_nbx", bytes);
}

absl::Status UcxTransport::PostDeliveredSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                             Completion* completion) {
  RETURN_IF_ERROR(CheckReady("PostDeliveredSend"));
  RETURN_IF_ERROR(CheckMessage("PostDeliveredSend", peer, tag, data, bytes, nullptr));
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation = NewOperation(Operation::Kind::kSend, peer, completion, bytes);
  const ucp_request_param_t params = Params(operation);
  return Started(operation,
                 ucp_tag_send_sync_nbx(endpoints_[peer], data, bytes,
                                       layout_.Tag(tag, rank(), false, 0), &params),
                 "ucp_tag_send_sync_nbx", bytes);
}

absl::Status UcxTransport::PostRecv(int peer, uint64_t tag, void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region) {
  RETURN_IF_ERROR(CheckReady("PostRecv"));
  RETURN_IF_ERROR(CheckMessage("PostRecv", peer, tag, data, bytes, region));
  // A dead peer's message may have arrived before it died: the receive is posted all
  // the same (UCX matches it against what is queued), and fails below only if
  // nothing matched it.
  const bool peer_dead = dead_[peer];
  if (peer_dead) Drain();
  Operation* operation = NewOperation(Operation::Kind::kRecv, peer, completion, bytes);
  const ucp_request_param_t params = Params(operation);
  const ucs_status_ptr_t result = ucp_tag_recv_nbx(
      worker_, data, bytes, layout_.Tag(tag, peer, false), layout_.match_mask, &params);
  RETURN_IF_ERROR(Started(operation, result, "ucp_tag_recv_nbx", 0));
  if (peer_dead) {
    Drain();
    FailOperationsOf(peer, Gone(peer));
  }
  return absl::OkStatus();
}

absl::Status UcxTransport::PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) {
  RETURN_IF_ERROR(CheckReady("PostNotifyRecv"));
  RETURN_IF_ERROR(CheckMessage("PostNotifyRecv", peer, notify_tag, nullptr, 0));
  if (dead_[peer]) {
    completion->Complete(Gone(peer), 0);
    return absl::OkStatus();
  }
  Operation* operation = NewOperation(Operation::Kind::kRecv, peer, completion, 0);
  const ucp_request_param_t params = Params(operation);
  const ucs_status_ptr_t result = ucp_tag_recv_nbx(
      worker_, nullptr, 0, layout_.Tag(notify_tag, peer, true), layout_.match_mask, &params);
  return Started(operation, result, "ucp_tag_recv_nbx (notification)", 0);
}

absl::Status UcxTransport::PostOneSided(MemoryAccess access, void* data, size_t bytes,
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
  const ucp_request_param_t params = Params(operation);
  const auto& target = static_cast<const UcxRemote&>(remote);
  const uint64_t address = target.base() + offset;
  const ucs_status_ptr_t result =
      put ? ucp_put_nbx(endpoints_[peer], data, bytes, address, target.rkey(), &params)
          : ucp_get_nbx(endpoints_[peer], data, bytes, address, target.rkey(), &params);
  return Started(operation, result, put ? "ucp_put_nbx" : "ucp_get_nbx", bytes);
}

void UcxTransport::SendNotify(Operation* operation) {
  operation->kind = Operation::Kind::kNotifySend;
  const ucp_request_param_t params = Params(operation);
  const ucs_status_ptr_t result =
      ucp_tag_send_nbx(endpoints_[operation->peer], nullptr, 0,
                       layout_.Tag(operation->notify_tag, rank(), true), &params);
  if (UCS_PTR_IS_PTR(result)) {
    operation->request = result;
    return;
  }
  Completed(operation, UCS_PTR_STATUS(result), 0);
}

void UcxTransport::Continue(Operation* operation) {
  if (operation->kind == Operation::Kind::kPut) {
    // The put completed locally; a flush makes it visible at the peer before the
    // notification says so.
    operation->kind = Operation::Kind::kFlush;
    const ucp_request_param_t params = Params(operation);
    const ucs_status_ptr_t result = ucp_ep_flush_nbx(endpoints_[operation->peer], &params);
    if (UCS_PTR_IS_PTR(result)) {
      operation->request = result;
      return;
    }
    if (UCS_PTR_STATUS(result) != UCS_OK) {
      Completed(operation, UCS_PTR_STATUS(result), 0);
      return;
    }
  }
  SendNotify(operation);
}

void UcxTransport::Completed(Operation* operation, ucs_status_t status, size_t length,
                             uint64_t sender_tag) {
  if (!operation->live) return;
  if (status == UCS_OK) {
    switch (operation->kind) {
      case Operation::Kind::kPut:
      case Operation::Kind::kGet:
      case Operation::Kind::kFlush:
        if (operation->completion == nullptr) break;
        if (operation->kind == Operation::Kind::kFlush) {
          SendNotify(operation);
        } else {
          Continue(operation);
        }
        return;
      case Operation::Kind::kRecv:
        Finish(operation, absl::OkStatus(), length, layout_.Check(sender_tag));
        return;
      default:
        break;
    }
    Finish(operation, absl::OkStatus(), operation->bytes);
    return;
  }
  absl::Status error;
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    error = absl::InvalidArgumentError(
        absl::StrCat("a message from rank ", operation->peer, " to rank ", rank(),
                     " does not fit the receive buffer of ", operation->bytes, " bytes"));
  } else {
    // zcoll cancels only operations it has ended already (their Completion taken off
    // them): a cancellation that reaches one is UCX giving up on the peer, as any
    // other error here is. What this host sees of the peer says more than UCX's word
    // ("Endpoint timeout" for a killed rank).
    FailPeer(operation->peer,
             monitor_.WhyGone(operation->peer,
                              status == UCS_ERR_CANCELED
                                  ? std::string("is unreachable: UCX cancelled a transfer")
                                  : absl::StrCat("is unreachable: ", ucs_status_string(status))));
    error = Gone(operation->peer);
  }
  if (operation->live) Finish(operation, std::move(error), 0);
}

void UcxTransport::EndpointFailed(int peer, ucs_status_t status) {
  FailPeer(peer,
           monitor_.WhyGone(peer, absl::StrCat("is unreachable: ", ucs_status_string(status))));
}

void UcxTransport::FailPeer(int peer, absl::string_view why) {
  if (dead_[peer]) return;
  dead_[peer] = true;
  gone_[peer] = std::string(why);
  const absl::Status gone = Gone(peer);
  ZCOLL_LOG(INFO) << "rank " << rank() << ": " << gone.message();
  FailOperationsOf(peer, gone);
}

void UcxTransport::FailOperationsOf(int peer, const absl::Status& why) {
  operations_.ForEachLive([&](Operation* operation) {
    if (operation->peer != peer || operation->completion == nullptr) return;
    operation->completion->Complete(why, 0);
    operation->completion = nullptr;
    // Receives are not tied to the endpoint, so UCX would keep them: cancel them.
    if (operation->kind == Operation::Kind::kRecv && operation->request != nullptr) {
      ucp_request_cancel(worker_, operation->request);
    }
  });
}

void UcxTransport::Drain() {
  for (int pass = 0; pass < 1000 && ucp_worker_progress(worker_) != 0; ++pass) {
  }
}

void UcxTransport::HandleDeaths() {
  const std::vector<int> deaths = monitor_.NewDeaths();
  if (deaths.empty()) return;
  // What a peer sent before it died may still be in a socket: take it first.
  Drain();
  for (int peer : deaths) FailPeer(peer, monitor_.HowItEnded(peer));
}

absl::Status UcxTransport::Progress() {
  if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
  if (!connected_) return absl::OkStatus();
  if (++progress_calls_ % 128 == 0) HandleDeaths();
  // One pass: the caller polls again soon, and an extra empty pass costs as much as
  // a useful one.
  ucp_worker_progress(worker_);
  return absl::OkStatus();
}

void UcxTransport::Sleep(absl::Duration timeout) {
  if (frozen()) {
    absl::SleepFor(std::min(timeout, absl::Milliseconds(1)));
    return;
  }
  HandleDeaths();
  if (wait_fd_ < 0) {
    monitor_.SleepUntilDeath(std::min(timeout, absl::Microseconds(200)));
    return;
  }
  if (ucp_worker_arm(worker_) != UCS_OK) return;  // events are waiting already
  std::vector<pollfd> polls{{wait_fd_, POLLIN, 0}};
  for (int fd : monitor_.fds()) {
    if (fd >= 0) polls.push_back({fd, POLLIN, 0});
  }
  const timespec limit = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  ppoll(polls.data(), polls.size(), &limit, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> CreateUcxTransport(absl::string_view transports,
                                                              int rank, int size) {
  auto transport = std::make_unique<UcxTransport>(rank, size);
  RETURN_IF_ERROR(transport->Initialize(transports));
  return transport;
}

}  // namespace zcoll
