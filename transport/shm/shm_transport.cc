#include "transport/shm/shm_transport.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "ops/streaming_copy.h"
#include "transport/envelope.h"
#include "transport/peer_monitor.h"
#include "transport/shared_memory_name.h"

namespace zcoll {
namespace {

constexpr absl::string_view kProvider = "shm";
constexpr uint64_t kSegmentMagic = 0x6d6873636c6f637aULL;  // "zcolshm"
constexpr uint32_t kSegmentVersion = 5;
constexpr size_t kHeaderBytes = 4096;

// Messages each inbound ring yields per Progress call: enough to drain a burst,
// few enough that one busy peer does not starve the others.
constexpr int kMessagesPerRing = 16;

enum class Kind : uint32_t {
  kEager = 1,        // the payload is inline in the slot (at most kInlineBytes)
  kRendezvous = 2,   // `address` holds `bytes` to be read by the receiver
  kFinished = 3,     // the receiver read rendezvous `request` (status 0) or refused it
  kNotify = 4,       // a put or get with notify tag `tag` has finished
  kClearToSend = 5,  // split rendezvous: claim the last `bytes` of `request` (claims word
                     // `status`) and, if ours, write them to `address`
  kWrote = 6,        // split rendezvous: the sender wrote the tail of `request` it claimed
  kPooled = 7,       // eager: the payload is in the sender's pool buffer `request`
  // Without cross-memory attach (ShmOptions::cross_memory_attach, or not permitted),
  // the payload in the sender's pool buffer `request`:
  kPiece = 8,        // a piece of a message of `address` bytes beyond the eager size
  kPutPiece = 9,     // a piece of a put, to be written at `address` of the receiver
  kGetRequest = 10,  // send `bytes` at `address` back to get `request` (notify tag `tag`)
  kGetPiece = 11,    // the piece of get `tag` at offset `address`
};

// Whether a message of `kind` carries its payload in a pool buffer.
bool Pooled(uint32_t kind) {
  return kind == static_cast<uint32_t>(Kind::kPooled) ||
         kind == static_cast<uint32_t>(Kind::kPiece) ||
         kind == static_cast<uint32_t>(Kind::kPutPiece) ||
         kind == static_cast<uint32_t>(Kind::kGetPiece);
}

// Whether an outgoing message of `kind` goes in pieces of at most the eager size.
bool InPieces(Kind kind) {
  return kind == Kind::kPiece || kind == Kind::kPutPiece || kind == Kind::kGetPiece;
}

// One ring slot, one cache line. `sequence` tells who may touch the slot: it equals
// the producer's position when the slot is free for it, and position + 1 once
// published.
//
// Memory ordering: the producer fills the slot, then stores sequence with release;
// the consumer loads sequence with acquire, reads the slot, then frees it with a
// release store of position + slots.
//
// Small eager payloads live in the slot's own cache line, so that a small message
// costs the receiver one cache-line transfer, not two. Larger eager payloads go
// through the sender's pool (below), so that rings stay small: a segment holds a
// ring per peer, and 128 ranks on a node must not need gigabytes.
inline constexpr size_t kInlineBytes = 32;

struct SlotHeader {
  std::atomic<uint64_t> sequence;
  uint32_t kind;
  uint32_t status;
  uint64_t tag;
  uint64_t bytes;
  union {
    struct {
      uint64_t request;
      uint64_t address;
    } rendezvous;                          // every kind but kEager and kNotify
    uint8_t inline_payload[kInlineBytes];  // kEager
  };
};
static_assert(sizeof(SlotHeader) == 64, "a slot is one cache line");

// A buffer of a rank's send pool: the rank copies an eager payload into it and
// names it in a kPooled slot; the receiver copies the payload out and clears
// `busy`. The pool is shared by all of the rank's peers, so its size does not grow
// with the job.
//
// Memory ordering: the sender sees busy == 0 with acquire (the receiver's copy is
// over), writes the payload, and publishes the slot with release; the receiver
// clears busy with release after its copy.
struct PoolBufferHeader {
  std::atomic<uint32_t> busy;
  uint8_t unused[60];
};
static_assert(sizeof(PoolBufferHeader) == 64);
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");

// The first page of a segment. The rings follow it: ring r holds what rank r sends
// the owner.
struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t ranks;
  uint32_t owner;
  uint32_t slots;                              // per ring, 64 bytes each
  uint32_t pool_buffers;                       // in the send pool
  uint64_t pool_buffer_bytes;                  // PoolBufferHeader + payload, a multiple of 64
  uint64_t pool_offset;                        // from the segment's start
  uint64_t claims_offset;                      // the split claims (SplitClaims), from the start
  uint64_t owner_base;                         // where the owner mapped it: the probe's
  alignas(64) std::atomic<uint32_t> attached;  // peers that mapped the segment
  alignas(64) std::atomic<uint32_t> doorbell;  // futex word senders bump
  std::atomic<uint32_t> sleeping;              // the owner waits on doorbell
  // The owner's memory is open to cross-memory copies while `closed` is 0. A peer
  // counts itself in `copiers` before it copies into or out of the owner's memory and
  // out after; the owner, freezing, sets `closed` and waits for `copiers` to reach 0.
  // Both sides use sequentially consistent operations, so either the peer sees
  // `closed` and does not copy, or the owner sees the peer's count and waits for it.
  alignas(64) std::atomic<uint32_t> closed;
  std::atomic<uint32_t> copiers;
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);

// A split rendezvous's tail, claimed by the rank that copies it: the sender (writing)
// or the receiver (reading; the head is always its own). kSplitsPerSender words per
// sender in the receiver's segment, after the rings: a receiver has at most that many
// splits of a sender's messages open (a stream of them: the receiver reads the next
// one's head while the sender writes the tails before it; a ring holds 64 messages),
// and reads any more whole. A word: the low 32 bits of the sender's request in the top
// half, so that a sender's late clear-to-send finds another split's word and claims
// nothing, and who holds the tail (kTailUnclaimed, kTailSenders, kTailReceivers) in the
// bottom half; each side claims it with a compare-and-swap from unclaimed.
//
// Why a claim and not a fixed share: a sender busy with a step of its own (a linear
// scatter's root copying its block) answers the clear-to-send late, and a receiver
// waiting for its half took twice as long as reading it all. With the claim it reads
// the tail itself if the sender has not claimed it by the end of its Progress call
// (not at once: a stream's receiver reads the next messages' heads first, while the
// sender writes the tails). 2 ranks, 3 alternating runs against fixed halves, medians:
// linear scatter 1 MiB 123 us against 179, 4 MiB 683 against 775; linear bcast (an
// idle root) 1 MiB 56 against 53; the shm stream 0.90x the bandwidth at 256 KiB and
// 0.92x at 1 MiB (its receiver still takes some tails); ping-pong latency alike. The
// halves stay halves: in 8 chunks of 32-512 KiB, claimed one at a time, an idle
// sender's linear bcast took longer (4 alternating runs: 256 KiB 24-27 us against
// 16-19, 1 MiB 61-66 against 49-57), its chunks no longer copied by the same core call
// after call, so their lines moved.
constexpr int kSplitsPerSender = 64;
struct SplitClaims {  // one sender's
  alignas(64) std::atomic<uint64_t> words[kSplitsPerSender];
};
static_assert(sizeof(SplitClaims) == 8 * kSplitsPerSender);
constexpr uint64_t kTailUnclaimed = 0;
constexpr uint64_t kTailSenders = 1;
constexpr uint64_t kTailReceivers = 2;

uint64_t ClaimsWord(uint64_t request, uint64_t tail) { return (request << 32) | tail; }

// Claims the tail of split `request` for `side`; whether it is now that side's.
bool ClaimTail(std::atomic<uint64_t>& word, uint64_t request, uint64_t side) {
  uint64_t unclaimed = ClaimsWord(request & 0xffffffff, kTailUnclaimed);
  return word.compare_exchange_strong(unclaimed, ClaimsWord(request & 0xffffffff, side),
                                      std::memory_order_seq_cst);
}

// The head of a split message of `bytes`: half of it in whole pages (the receiver's).
size_t SplitHeadBytes(size_t bytes) { return bytes / 2 / 4096 * 4096; }

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

long Futex(std::atomic<uint32_t>* word, int operation, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), operation, value, timeout, nullptr,
                 0);
}

std::atomic<uint64_t> transports_made{0};

// A mapped segment: our own or a peer's.
struct Mapping {
  uint8_t* base = nullptr;
  size_t bytes = 0;
  // Geometry is copied out of the header at map time: the header is shared, and
  // its lines are written by every peer (attached, doorbell).
  uint32_t slots = 0;
  uint32_t pool_buffers = 0;
  uint64_t pool_buffer_bytes = 0;
  uint64_t pool_offset = 0;
  uint64_t claims_offset = 0;

  void ReadGeometry() {
    slots = header()->slots;
    pool_buffers = header()->pool_buffers;
    pool_buffer_bytes = header()->pool_buffer_bytes;
    pool_offset = header()->pool_offset;
    claims_offset = header()->claims_offset;
  }
  SegmentHeader* header() const { return reinterpret_cast<SegmentHeader*>(base); }
  SlotHeader* Slot(int ring, uint64_t position) const {
    return reinterpret_cast<SlotHeader*>(
        base + kHeaderBytes + (static_cast<size_t>(ring) * slots + position % slots) * 64);
  }
  PoolBufferHeader* PoolBuffer(uint64_t index) const {
    return reinterpret_cast<PoolBufferHeader*>(base + pool_offset + index * pool_buffer_bytes);
  }
  uint8_t* PoolPayload(uint64_t index) const {
    return reinterpret_cast<uint8_t*>(PoolBuffer(index)) + sizeof(PoolBufferHeader);
  }
  // Word `word` of the claims of splits of `sender`'s messages to the owner.
  std::atomic<uint64_t>& Claims(int sender, uint32_t word) const {
    return reinterpret_cast<SplitClaims*>(base + claims_offset)[sender].words[word];
  }
};

// A message on its way into a peer's ring.
//
// `completion` is the local operation that ends when this message is in the peer's
// ring: an eager send, a receive with its acknowledgement, a put or get with its
// notification. An operation never completes while a message it owes a peer waits
// in a queue, so a rank whose operations are all done has nothing left to deliver
// and may stop calling Progress.
struct Outgoing {
  Kind kind;
  uint32_t status = 0;
  uint64_t tag = 0;
  uint64_t bytes = 0;
  uint64_t request = 0;
  uint64_t address = 0;
  const void* payload = nullptr;  // kEager, and what goes in pieces (InPieces)
  Completion* completion = nullptr;
  absl::Status completion_status;
  size_t completion_bytes = 0;
  uint32_t completion_check = 0;
  // In pieces: the bytes already in the peer's ring (`bytes` in all), and the
  // notification this rank delivers to itself once the last is (a get's, whose data
  // then no longer needs this rank's memory): -1 for none.
  uint64_t sent = 0;
  int notify_source = -1;
  uint64_t notify_tag = 0;
};

struct PostedRecv {
  int source;
  uint64_t tag;
  void* data;
  size_t bytes;
  Completion* completion;
};

// A message that arrived before its receive was posted.
struct Unexpected {
  int source;
  uint64_t tag;  // as it came: the check word above the tag's bits
  Kind kind;
  uint64_t bytes;
  uint64_t request = 0;          // kRendezvous
  uint64_t address = 0;          // kRendezvous
  std::vector<uint8_t> payload;  // kEager
};

struct PendingSend {
  int peer;
  const void* data;
  size_t bytes;
  Completion* completion;
};

// A split rendezvous receive (SplitClaims). It ends once its tail is in: read by this
// rank (which claims it when it has nothing else to do: ClaimIdleSplits), or written by
// the sender, whose kWrote says so.
struct SplitReceive {
  Completion* completion;
  size_t bytes;
  absl::Status status;        // our reads
  uint32_t check;             // the message's check word
  uint32_t claims;            // its word of the sender's SplitClaims
  uint8_t* data;              // the receive buffer
  uint64_t address;           // the message in the sender's memory
  bool tail_claimed = false;  // by one side or the other
};

// A message arriving in pieces (Kind::kPiece) from one peer: its pieces come one
// after another (a sender's queue to a peer is in order), so a peer has at most one.
// Bound to a receive once one matches it (`completion`), until then kept in `payload`.
struct PieceAssembly {
  bool active = false;
  uint64_t wire_tag = 0;  // as it came: the check word above the tag's bits
  uint64_t bytes = 0;
  uint64_t received = 0;
  Completion* completion = nullptr;
  uint8_t* data = nullptr;  // the receive buffer (none when truncated)
  absl::Status status;      // a truncation: the rest is consumed, nothing copied
  std::vector<uint8_t> payload;
};

// A get in pieces (Kind::kGetRequest): where they go, and how many bytes came.
struct PieceGet {
  int peer;
  uint8_t* data;
  size_t bytes;
  size_t received;
  Completion* completion;
};

struct NotifyWait {
  int source;
  uint64_t tag;
  Completion* completion;
};

class ShmRegion final : public MemoryRegion {
 public:
  ShmRegion(int rank, void* base, size_t length, MemoryAccess access)
      : MemoryRegion(base, length, access) {
    set_packed_key(PackRemoteKey({.provider = std::string(kProvider),
                                  .owner = rank,
                                  .base = reinterpret_cast<uintptr_t>(base),
                                  .length = length,
                                  .access = access}));
  }
};

class ShmRemote final : public RemoteRegion {
 public:
  ShmRemote(int peer, uint64_t base, size_t length, MemoryAccess access)
      : RemoteRegion(peer, base, length, access) {}
};

class ShmTransport final : public Transport {
 public:
  ShmTransport(int rank, int size, const ShmOptions& options)
      : Transport(rank, size),
        eager_bytes_(options.eager_bytes),
        split_bytes_(options.split_bytes),
        cross_memory_attach_(options.cross_memory_attach),
        slots_(options.ring_slots),
        pool_buffers_(options.pool_buffers),
        pool_peer_(options.pool_buffers, -1),
        peers_(size),
        receive_positions_(size, 0),
        assemblies_(size),
        monitor_(size) {}

  ~ShmTransport() override;

  absl::Status Initialize();

  absl::string_view provider_name() const override { return kProvider; }
  const std::string& address() const override { return address_; }
  absl::Status Connect(absl::Span<const std::string> addresses) override;

  absl::StatusOr<std::unique_ptr<MemoryRegion>> RegisterMemory(void* base, size_t length,
                                                               MemoryAccess access) override {
    if (base == nullptr && length > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("RegisterMemory on rank ", rank(), ": base is null but length is ", length));
    }
    return std::make_unique<ShmRegion>(rank(), base, length, access);
  }

  absl::StatusOr<std::unique_ptr<RemoteRegion>> ImportRegion(int peer,
                                                             absl::string_view packed) override {
    RETURN_IF_ERROR(CheckPeer("ImportRegion", peer));
    ASSIGN_OR_RETURN(RemoteKey key, UnpackRemoteKey(packed, kProvider, peer, rank()));
    return std::make_unique<ShmRemote>(peer, key.base, key.length, key.access);
  }

  absl::Status PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                        Completion* completion, const MemoryRegion* region,
                        uint32_t check) override;
  absl::Status PostRecv(int peer, uint64_t tag, void* data, size_t bytes, Completion* completion,
                        const MemoryRegion* region) override;
  absl::Status PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) override;
  absl::Status Progress() override;

 protected:
  void Sleep(absl::Duration timeout) override;
  void OnFreeze(absl::Time deadline) override;

 private:
  absl::Status PostOneSided(MemoryAccess access, void* data, size_t bytes,
                            const RemoteRegion& remote, size_t offset, uint64_t notify_tag,
                            Completion* completion, const MemoryRegion* region) override;
  struct Peer {
    std::string segment;
    pid_t pid = 0;
    Mapping mapping;
    uint64_t send_position = 0;      // our next slot in its ring for us
    std::deque<Outgoing> queued;     // waiting for free slots, in order
    size_t rendezvous_sends = 0;     // our rendezvous messages it has not finished reading
    uint64_t split_claims_busy = 0;  // bits: its SplitClaims words our open splits use
    bool dead = false;
    // Whether this rank may read the peer's memory (Connect tries), and so, taken to
    // go both ways, the peer this rank's: without, what would be read or written
    // across goes in pieces through the pool.
    bool cross_memory = false;
  };

  absl::Status CheckReady(absl::string_view operation) const {
    if (connected_) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(operation, " on rank ", rank(), ": Connect has not been called"));
  }

  absl::Status PeerGone(int peer) const {
    return PeerError(absl::StatusCode::kUnavailable, peer,
                     absl::StrCat(monitor_.Describe(peer), " ", monitor_.HowItEnded(peer)));
  }
  absl::Status PeerStopped(int peer) const {
    return PeerError(absl::StatusCode::kUnavailable, peer,
                     absl::StrCat(monitor_.Describe(peer),
                                  " stopped communicating: its transport stopped when the job "
                                  "failed"));
  }
  std::string DescribePeer(int peer) const override { return monitor_.DescribeState(peer); }
  std::vector<int> PeersNotRunning() const override { return monitor_.NotRunning(); }
  std::optional<WaitingMessage> FindUnexpected(int peer, uint64_t tag,
                                               uint64_t ignore) const override {
    for (const Unexpected& message : unexpected_) {
      if ((peer < 0 || message.source == peer) && ((message.tag ^ tag) & kMaxTag & ~ignore) == 0) {
        return WaitingMessage{message.source, message.tag & kMaxTag,
                              static_cast<uint32_t>(message.tag >> kTagBits)};
      }
    }
    return std::nullopt;
  }
  bool CanFindUnexpected() const override { return true; }
  absl::Span<const std::atomic<int32_t>> UnexpectedCountsByCall() const override {
    return unexpected_counts();
  }

  absl::Status Truncated(int source, uint64_t tag, uint64_t bytes, size_t capacity) const {
    return absl::InvalidArgumentError(
        absl::StrCat("a message of ", bytes, " bytes from rank ", source, " to rank ", rank(),
                     " (tag ", tag, ") does not fit the receive buffer of ", capacity, " bytes"));
  }

  // Puts `message` into `peer`'s ring now if a slot is free and nothing is queued
  // before it; otherwise queues it.
  void Send(int peer, Outgoing message);
  // Puts `message` into `peer`'s ring, or as many of its pieces as fit (InPieces,
  // counted in its `sent`); whether all of it is in.
  // (Inline: every message but the pieces' goes straight to TryPublish.)
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool TryPublishAll(int peer, Outgoing& message) {
    if (ABSL_PREDICT_TRUE(!InPieces(message.kind))) return TryPublish(peer, message);
    return TryPublishPieces(peer, message);
  }
  ABSL_ATTRIBUTE_NOINLINE bool TryPublishPieces(int peer, Outgoing& message);
  bool TryPublish(int peer, const Outgoing& message);
  // A free buffer of our send pool, now reserved for `peer`, or -1 if all are busy.
  int64_t AcquirePoolBuffer(int peer);
  void FlushQueues();

  void DrainRing(int source);
  // The oldest receive posted for (`source`, `tag`), taken off the list: what an
  // arriving message (or a message's first piece) matches.
  ABSL_ATTRIBUTE_ALWAYS_INLINE std::optional<PostedRecv> TakePostedRecv(int source, uint64_t tag) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (it->source != source || it->tag != tag) continue;
      const PostedRecv recv = *it;
      posted_.erase(it);
      return recv;
    }
    return std::nullopt;
  }
  void Handle(int source, const SlotHeader& slot, const uint8_t* payload);
  // Reads a rendezvous message into `recv` and acknowledges it, or reads its head and
  // opens a split (SplitClaims).
  // `wire_tag` is the tag as it came, the check word above the tag's bits.
  void Pull(int source, uint64_t wire_tag, uint64_t bytes, uint64_t request, uint64_t address,
            const PostedRecv& recv);
  void FinishReceive(int source, uint64_t request, Completion* completion, absl::Status status,
                     uint32_t acknowledgement, size_t bytes, uint32_t check);
  // Claims and reads the tails of open splits that the sender has not claimed,
  // finishing those receives.
  void ClaimIdleSplits();
  void DeliverNotify(int source, uint64_t tag);
  // A piece of a message (Kind::kPiece) from `source`.
  void HandlePiece(int source, const SlotHeader& slot, const uint8_t* payload);
  // Points `source`'s message in pieces at a receive (PostedRecv's buffer).
  void BindAssembly(PieceAssembly& assembly, int source, void* data, size_t bytes,
                    Completion* completion);
  // Whether this process may read `peer`'s memory: its segment's first word, at the
  // address where `peer` mapped it.
  bool CanReadMemoryOf(int peer) const;

  // process_vm_readv / process_vm_writev of all `bytes`, retrying partial copies.
  absl::Status CrossCopy(int peer, bool write, void* local, uint64_t remote, size_t bytes) const;

  void FailPeer(int peer);
  void CheckDeaths();
  void MaybeUnlink();

  const size_t eager_bytes_;
  const size_t split_bytes_;
  const bool cross_memory_attach_;
  const size_t slots_;
  const size_t pool_buffers_;
  // The peer each pool buffer was last handed to (-1: never), to take buffers back
  // from a peer that died before releasing them.
  std::vector<int> pool_peer_;
  size_t next_pool_buffer_ = 0;
  std::string segment_name_;
  int segment_fd_ = -1;
  Mapping own_;
  bool unlinked_ = false;
  uint32_t expected_attachments_ = 0;  // peers that map our segment (reachable ones)
  std::string address_;
  bool connected_ = false;

  std::vector<Peer> peers_;
  std::vector<uint64_t> receive_positions_;
  std::vector<PieceAssembly> assemblies_;  // by source
  int assemblies_active_ = 0;              // of them (PostRecv looks at none while none is)
  absl::flat_hash_map<uint64_t, PieceGet> piece_gets_;  // by request
  PeerMonitor monitor_;
  // Vectors, not deques: they hold a few entries at a time, in order, and keep their
  // capacity, where a deque allocated and freed a block every dozen messages (about
  // 100 instructions a message at a 2-rank 8 B allreduce, callgrind).
  std::vector<PostedRecv> posted_;
  std::vector<Unexpected> unexpected_;
  std::deque<NotifyWait> notify_waits_;
  std::deque<std::pair<int, uint64_t>> notifies_;
  absl::flat_hash_map<uint64_t, PendingSend> rendezvous_;
  absl::flat_hash_map<std::pair<int, uint64_t>, SplitReceive> splits_;  // by (source, request)
  int unclaimed_splits_ = 0;                                            // of them, not tail_claimed
  uint64_t next_request_ = 1;
  int next_ring_ = 0;
  uint64_t progress_calls_ = 0;
  bool any_queued_ = false;
};

absl::Status ShmTransport::Initialize() {
  if (eager_bytes_ <= kInlineBytes || slots_ < 2 || pool_buffers_ < 1 ||
      eager_bytes_ > (size_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ShmOptions on rank ", rank(), ": eager_bytes must be in (", kInlineBytes,
                     ", 1 GiB], ring_slots at least 2 and pool_buffers at least 1"));
  }
  // Let peers read and write our memory with process_vm_* under Yama's ptrace scope 1.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  std::random_device random;
  segment_name_ = absl::StrCat("/", SharedMemoryPrefix(getpid()), "shm-", rank(), "-",
                               transports_made++, "-", absl::Hex(random()));
  const size_t claims_offset = kHeaderBytes + sizeof(SlotHeader) * slots_ * size();
  const size_t pool_offset = RoundUp(claims_offset + sizeof(SplitClaims) * size(), 4096);
  const size_t pool_buffer_bytes = sizeof(PoolBufferHeader) + RoundUp(eager_bytes_, 64);
  own_.bytes = pool_offset + pool_buffer_bytes * pool_buffers_;
  segment_fd_ = shm_open(segment_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (segment_fd_ < 0) {
    return absl::UnavailableError(absl::StrCat("rank ", rank(), ": shm_open(", segment_name_,
                                               ") failed: ", std::strerror(errno)));
  }
  if (ftruncate(segment_fd_, static_cast<off_t>(own_.bytes)) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("rank ", rank(), ": cannot size ",
                                                     segment_name_, " to ", own_.bytes,
                                                     " bytes: ", std::strerror(errno)));
  }
  void* memory = mmap(nullptr, own_.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, segment_fd_, 0);
  if (memory == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("rank ", rank(), ": mmap of ", segment_name_,
                                                     " failed: ", std::strerror(errno)));
  }
  own_.base = static_cast<uint8_t*>(memory);
  SegmentHeader* header = new (own_.base) SegmentHeader();
  header->version = kSegmentVersion;
  header->ranks = static_cast<uint32_t>(size());
  header->owner = static_cast<uint32_t>(rank());
  header->owner_base = reinterpret_cast<uintptr_t>(own_.base);
  header->slots = static_cast<uint32_t>(slots_);
  header->pool_buffers = static_cast<uint32_t>(pool_buffers_);
  header->pool_buffer_bytes = pool_buffer_bytes;
  header->pool_offset = pool_offset;
  header->claims_offset = claims_offset;
  own_.ReadGeometry();
  for (uint64_t index = 0; index < pool_buffers_; ++index)
    new (own_.PoolBuffer(index)) PoolBufferHeader();
  for (int sender = 0; sender < size(); ++sender) {
    new (&reinterpret_cast<SplitClaims*>(own_.base + claims_offset)[sender]) SplitClaims();
  }
  for (int ring = 0; ring < size(); ++ring) {
    for (uint64_t position = 0; position < slots_; ++position) {
      new (own_.Slot(ring, position)) SlotHeader();
      own_.Slot(ring, position)->sequence.store(position, std::memory_order_relaxed);
    }
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kSegmentMagic;  // peers map the segment only after Connect
  address_ = EncodePeerAddress({.provider = std::string(kProvider),
                                .host = LocalHostName(),
                                .pid = getpid(),
                                .provider_address = segment_name_});
  return absl::OkStatus();
}

ShmTransport::~ShmTransport() {
  // A frozen transport's operations were abandoned: their Completions may be gone.
  // Otherwise no peer may copy into or out of this process from now on.
  if (!frozen()) {
    OnFreeze(absl::Now() + absl::Seconds(1));
    const absl::Status aborted =
        absl::AbortedError(absl::StrCat("rank ", rank(), "'s shm transport was destroyed"));
    for (const PostedRecv& recv : posted_) recv.completion->Complete(aborted, 0);
    for (const NotifyWait& wait : notify_waits_) wait.completion->Complete(aborted, 0);
    for (auto& [request, send] : rendezvous_) send.completion->Complete(aborted, 0);
    for (auto& [key, split] : splits_) split.completion->Complete(aborted, 0);
    for (auto& [request, get] : piece_gets_) get.completion->Complete(aborted, 0);
    for (PieceAssembly& assembly : assemblies_) {
      if (assembly.active && assembly.completion != nullptr) {
        assembly.completion->Complete(aborted, 0);
      }
    }
    for (Peer& peer : peers_) {
      for (const Outgoing& message : peer.queued) {
        if (message.completion != nullptr) message.completion->Complete(aborted, 0);
      }
    }
  }
  for (Peer& peer : peers_) {
    if (peer.mapping.base != nullptr) munmap(peer.mapping.base, peer.mapping.bytes);
  }
  if (own_.base != nullptr) munmap(own_.base, own_.bytes);
  if (segment_fd_ >= 0) close(segment_fd_);
  if (!segment_name_.empty() && !unlinked_) shm_unlink(segment_name_.c_str());
}

absl::Status ShmTransport::Connect(absl::Span<const std::string> addresses) {
  RETURN_IF_ERROR(BeginConnect(addresses));
  const SegmentHeader* mine = own_.header();
  for (int peer = 0; peer < size(); ++peer) {
    if (!Reachable(peer)) continue;
    ASSIGN_OR_RETURN(PeerAddress address, DecodePeerAddress(addresses[peer], kProvider, peer));
    if (address.host != LocalHostName()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), ": the shm transport needs all ranks on one host, but rank ", peer,
          " is on ", address.host, " and this rank on ", LocalHostName()));
    }
    Peer& entry = peers_[peer];
    entry.segment = address.provider_address;
    entry.pid = static_cast<pid_t>(address.pid);
    const int fd = shm_open(entry.segment.c_str(), O_RDWR, 0);
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0) {
      const std::string error = std::strerror(errno);
      if (fd >= 0) close(fd);
      return absl::UnavailableError(absl::StrCat("rank ", rank(), ": cannot open rank ", peer,
                                                 "'s segment ", entry.segment, ": ", error));
    }
    void* memory = mmap(nullptr, info.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (memory == MAP_FAILED) {
      return absl::UnavailableError(absl::StrCat("rank ", rank(), ": cannot map rank ", peer,
                                                 "'s segment: ", std::strerror(errno)));
    }
    entry.mapping = {static_cast<uint8_t*>(memory), static_cast<size_t>(info.st_size)};
    const SegmentHeader* header = entry.mapping.header();
    if (entry.mapping.bytes < kHeaderBytes || header->magic != kSegmentMagic ||
        header->version != kSegmentVersion || header->owner != static_cast<uint32_t>(peer) ||
        header->ranks != static_cast<uint32_t>(size()) || header->slots != mine->slots ||
        header->pool_buffers != mine->pool_buffers ||
        header->pool_buffer_bytes != mine->pool_buffer_bytes ||
        header->pool_offset != mine->pool_offset || header->claims_offset != mine->claims_offset ||
        entry.mapping.bytes <
            header->pool_offset + header->pool_buffer_bytes * header->pool_buffers) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank(), ": rank ", peer, "'s segment ", entry.segment,
                       " does not match this transport (another job, or different ShmOptions)"));
    }
    entry.mapping.ReadGeometry();
    entry.mapping.header()->attached.fetch_add(1, std::memory_order_acq_rel);
    monitor_.Watch(peer, address.host, address.pid);
    entry.cross_memory = cross_memory_attach_ && CanReadMemoryOf(peer);
    if (cross_memory_attach_ && !entry.cross_memory) {
      ZCOLL_LOG(INFO) << "rank " << rank() << ": may not read rank " << peer
                      << "'s memory (process_vm_readv: " << std::strerror(errno)
                      << "): messages beyond " << eager_bytes_
                      << " bytes, puts and gets go to it in pieces through shared memory";
    }
  }
  for (int peer = 0; peer < size(); ++peer) expected_attachments_ += Reachable(peer) ? 1 : 0;
  connected_ = true;
  MaybeUnlink();
  return absl::OkStatus();
}

void ShmTransport::MaybeUnlink() {
  if (unlinked_ || !connected_ ||
      own_.header()->attached.load(std::memory_order_acquire) < expected_attachments_) {
    return;
  }
  // Every peer has mapped the segment: the name is no longer needed, and unlinking
  // it now means it cannot outlive the job, however the job ends.
  shm_unlink(segment_name_.c_str());
  unlinked_ = true;
}

bool ShmTransport::CanReadMemoryOf(int peer) const {
  const Peer& entry = peers_[peer];
  uint64_t magic = 0;
  iovec local{&magic, sizeof(magic)};
  iovec remote{reinterpret_cast<void*>(entry.mapping.header()->owner_base), sizeof(magic)};
  return process_vm_readv(entry.pid, &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof(magic)) &&
         magic == kSegmentMagic;
}

bool ShmTransport::TryPublishPieces(int peer, Outgoing& message) {
  // One piece at a time, each in its own pool buffer; a message of none is one piece
  // of none (a put or get of no bytes still reaches its peer).
  const auto* data = static_cast<const uint8_t*>(message.payload);
  do {
    const uint64_t piece = std::min<uint64_t>(eager_bytes_, message.bytes - message.sent);
    const bool last = message.sent + piece == message.bytes;
    Outgoing one{.kind = message.kind,
                 .tag = message.tag,
                 .bytes = piece,
                 .payload = data + message.sent,
                 .completion = last ? message.completion : nullptr,
                 .completion_bytes = message.completion_bytes};
    switch (message.kind) {
      case Kind::kPiece:
        one.address = message.bytes;  // the message's
        break;
      case Kind::kPutPiece:
        one.address = message.address + message.sent;
        break;
      default:  // kGetPiece
        one.address = message.sent;
        break;
    }
    if (!TryPublish(peer, one)) return false;
    message.sent += piece;
  } while (message.sent < message.bytes);
  // (A get's data is out of this rank's memory: the get is over here.)
  if (message.notify_source >= 0) DeliverNotify(message.notify_source, message.notify_tag);
  return true;
}

bool ShmTransport::TryPublish(int peer, const Outgoing& message) {
  Peer& entry = peers_[peer];
  SlotHeader* slot = entry.mapping.Slot(rank(), entry.send_position);
  if (slot->sequence.load(std::memory_order_acquire) != entry.send_position) return false;
  Kind kind = message.kind;
  if ((kind == Kind::kEager && message.bytes > kInlineBytes) || InPieces(kind)) {
    const int64_t buffer = AcquirePoolBuffer(peer);
    if (buffer < 0) return false;
    if (InPieces(kind)) {
      // A message in pieces cycles through the pool, whose lines its receiver read
      // last: streamed, the stores do not first take each line back from the
      // receiver's core. 2 ranks, medians of 6 alternating runs: allreduce 2 MiB 419 us
      // against 383 with memcpy, gather 128 KiB 13.8 us against 27.5, 512 KiB 47
      // against 138; memcpy's runs were 4-6 times slower one in two (this machine's
      // slow mode), the streamed ones never.
      StreamingCopy(own_.PoolPayload(buffer), message.payload, message.bytes);
    } else if (message.bytes > 0) {
      std::memcpy(own_.PoolPayload(buffer), message.payload, message.bytes);
    }
    if (kind == Kind::kEager) kind = Kind::kPooled;
    slot->rendezvous.request = static_cast<uint64_t>(buffer);
    slot->rendezvous.address = message.address;
  } else if (kind == Kind::kEager) {
    if (message.bytes > 0) std::memcpy(slot->inline_payload, message.payload, message.bytes);
  } else {
    slot->rendezvous.request = message.request;
    slot->rendezvous.address = message.address;
  }
  slot->kind = static_cast<uint32_t>(kind);
  slot->status = message.status;
  slot->tag = message.tag;
  slot->bytes = message.bytes;
  slot->sequence.store(entry.send_position + 1, std::memory_order_release);
  ++entry.send_position;
  __builtin_prefetch(entry.mapping.Slot(rank(), entry.send_position), /*rw=*/1);
  // Pairs with the owner's fence in Sleep: either it sees this message before it
  // sleeps, or we see that it sleeps and ring the doorbell.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  SegmentHeader* header = entry.mapping.header();
  if (header->sleeping.load(std::memory_order_relaxed) != 0) {
    header->doorbell.fetch_add(1, std::memory_order_relaxed);
    Futex(&header->doorbell, FUTEX_WAKE, INT_MAX, nullptr);
  }
  if (message.completion != nullptr) {
    message.completion->Complete(message.completion_status, message.completion_bytes,
                                 message.completion_check);
  }
  return true;
}

int64_t ShmTransport::AcquirePoolBuffer(int peer) {
  // Buffers come back roughly in the order they went out: look at the oldest first.
  for (size_t tried = 0; tried < pool_buffers_; ++tried) {
    const size_t index = next_pool_buffer_;
    next_pool_buffer_ = next_pool_buffer_ + 1 == pool_buffers_ ? 0 : next_pool_buffer_ + 1;
    PoolBufferHeader* buffer = own_.PoolBuffer(index);
    if (buffer->busy.load(std::memory_order_acquire) != 0) continue;
    buffer->busy.store(1, std::memory_order_relaxed);  // only we set it; the slot publishes
    pool_peer_[index] = peer;
    return static_cast<int64_t>(index);
  }
  return -1;
}

void ShmTransport::Send(int peer, Outgoing message) {
  Peer& entry = peers_[peer];
  if (entry.queued.empty() && TryPublishAll(peer, message)) return;
  entry.queued.push_back(std::move(message));  // (with the pieces already in)
  any_queued_ = true;
}

void ShmTransport::FlushQueues() {
  if (!any_queued_) return;
  any_queued_ = false;
  for (int peer = 0; peer < size(); ++peer) {
    Peer& entry = peers_[peer];
    while (!entry.queued.empty() && TryPublishAll(peer, entry.queued.front()))
      entry.queued.pop_front();
    if (!entry.queued.empty()) any_queued_ = true;
  }
}

absl::Status ShmTransport::CrossCopy(int peer, bool write, void* local, uint64_t remote,
                                     size_t bytes) const {
  // Counted in as a copier of the peer's memory, which must still be open (see
  // SegmentHeader); counted out on every way out.
  SegmentHeader* owner = peers_[peer].mapping.header();
  owner->copiers.fetch_add(1, std::memory_order_seq_cst);
  struct CountOut {
    SegmentHeader* owner;
    ~CountOut() { owner->copiers.fetch_sub(1, std::memory_order_seq_cst); }
  } count_out{owner};
  if (owner->closed.load(std::memory_order_seq_cst) != 0) return PeerStopped(peer);
  size_t done = 0;
  while (done < bytes) {
    iovec local_piece{static_cast<uint8_t*>(local) + done, bytes - done};
    iovec remote_piece{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t copied =
        write ? process_vm_writev(peers_[peer].pid, &local_piece, 1, &remote_piece, 1, 0)
              : process_vm_readv(peers_[peer].pid, &local_piece, 1, &remote_piece, 1, 0);
    if (copied > 0) {
      done += static_cast<size_t>(copied);
      continue;
    }
    if (copied < 0 && errno == EINTR) continue;
    if (copied < 0 && errno == ESRCH) return PeerGone(peer);
    if (copied < 0 && (errno == EPERM || errno == ENOSYS)) {
      return absl::UnavailableError(
          absl::StrCat("rank ", rank(), ": cross-memory attach with ", monitor_.Describe(peer),
                       " is not permitted here (", std::strerror(errno),
                       "); the shm transport needs process_vm_readv between ranks of one user"));
    }
    return absl::InternalError(
        absl::StrCat("rank ", rank(), ": ", write ? "process_vm_writev" : "process_vm_readv",
                     " with ", monitor_.Describe(peer), " failed at byte ", done, " of ", bytes,
                     ": ", copied < 0 ? std::strerror(errno) : "no progress"));
  }
  // The peer stopped waiting for us (it froze past its deadline): what was read may
  // be stale, and it must not be taken for the message.
  if (owner->closed.load(std::memory_order_seq_cst) != 0) return PeerStopped(peer);
  return absl::OkStatus();
}

absl::Status ShmTransport::PostSend(int peer, uint64_t tag, const void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region,
                                    uint32_t check) {
  RETURN_IF_ERROR(CheckReady("PostSend"));
  RETURN_IF_ERROR(CheckMessage("PostSend", peer, tag, data, bytes, region));
  // The check word travels above the tag's bits; receives match on the tag only.
  tag |= uint64_t{check & kCheckMask} << kTagBits;
  if (peers_[peer].dead) {
    completion->Complete(PeerGone(peer), 0);
    return absl::OkStatus();
  }
  // Eager; or, where the peer may not read this rank's memory, in pieces through the
  // pool. Either send is over once its (last) slot is in the peer's ring.
  if (bytes <= eager_bytes_ || !peers_[peer].cross_memory) {
    Send(peer, {.kind = bytes <= eager_bytes_ ? Kind::kEager : Kind::kPiece,
                .tag = tag,
                .bytes = bytes,
                .payload = data,
                .completion = completion,
                .completion_bytes = bytes});
    return absl::OkStatus();
  }
  const uint64_t request = next_request_++;
  rendezvous_[request] = {peer, data, bytes, completion};
  ++peers_[peer].rendezvous_sends;
  Send(peer, {.kind = Kind::kRendezvous,
              .tag = tag,
              .bytes = bytes,
              .request = request,
              .address = reinterpret_cast<uintptr_t>(data)});
  return absl::OkStatus();
}

absl::Status ShmTransport::PostRecv(int peer, uint64_t tag, void* data, size_t bytes,
                                    Completion* completion, const MemoryRegion* region) {
  RETURN_IF_ERROR(CheckReady("PostRecv"));
  RETURN_IF_ERROR(CheckMessage("PostRecv", peer, tag, data, bytes, region));
  const PostedRecv recv{peer, tag, data, bytes, completion};
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (it->source != peer || (it->tag & kMaxTag) != tag) continue;
    if (it->kind != Kind::kRendezvous) {  // eager, inline or pooled: copied on arrival
      if (it->bytes > bytes) {
        completion->Complete(Truncated(peer, tag, it->bytes, bytes), 0);
      } else {
        if (it->bytes > 0) std::memcpy(data, it->payload.data(), it->bytes);
        completion->Complete(absl::OkStatus(), it->bytes,
                             static_cast<uint32_t>(it->tag >> kTagBits));
      }
    } else {
      Pull(peer, it->tag, it->bytes, it->request, it->address, recv);
    }
    CountUnexpected(tag, -1);
    unexpected_.erase(it);
    return absl::OkStatus();
  }
  // A message arriving in pieces, matched by no receive yet, is older than any that
  // comes after it from that peer.
  if (ABSL_PREDICT_FALSE(assemblies_active_ > 0)) {
    PieceAssembly& assembly = assemblies_[peer];
    if (assembly.active && assembly.completion == nullptr && (assembly.wire_tag & kMaxTag) == tag) {
      BindAssembly(assembly, peer, data, bytes, completion);
      return absl::OkStatus();
    }
  }
  if (peers_[peer].dead) {
    completion->Complete(PeerGone(peer), 0);
    return absl::OkStatus();
  }
  posted_.push_back(recv);
  return absl::OkStatus();
}

void ShmTransport::Pull(int source, uint64_t wire_tag, uint64_t bytes, uint64_t request,
                        uint64_t address, const PostedRecv& recv) {
  const uint32_t check = static_cast<uint32_t>(wire_tag >> kTagBits);
  absl::Status status;
  uint32_t acknowledgement = 0;
  if (bytes > recv.bytes) {
    status = Truncated(source, wire_tag & kMaxTag, bytes, recv.bytes);
    acknowledgement = 1;
  } else if (split_bytes_ > 0 && bytes >= split_bytes_ && !peers_[source].dead &&
             peers_[source].split_claims_busy != ~uint64_t{0} &&
             peers_[source].rendezvous_sends == 0) {
    // Two cores copy instead of one: the sender writes the tail (on the way there is
    // the clear-to-send) while this rank reads the head. Both are kernel copies of
    // about 11 GB/s each on one core; an idle sender would otherwise only wait. The
    // tail is claimed (SplitClaims): a sender busy elsewhere leaves it to this rank,
    // which claims it once it has nothing else to do. Not when the sender has our data
    // to read too (an exchange): each side reading its whole message takes less time
    // than both splitting (2 ranks, medians of 5 and 9 interleaved runs: allgather 128
    // KiB 18.9-20.4 us against 24.7-25.1, alltoall 21.7-23.3 against 24.2-24.6; larger
    // sizes within this machine's noise).
    const size_t head = SplitHeadBytes(bytes);
    const uint32_t word = static_cast<uint32_t>(__builtin_ctzll(~peers_[source].split_claims_busy));
    own_.Claims(source, word)
        .store(ClaimsWord(request & 0xffffffff, kTailUnclaimed), std::memory_order_seq_cst);
    Send(source, {.kind = Kind::kClearToSend,
                  .status = word,
                  .bytes = bytes - head,
                  .request = request,
                  .address = reinterpret_cast<uintptr_t>(recv.data) + head});
    status = CrossCopy(source, /*write=*/false, recv.data, address, head);
    peers_[source].split_claims_busy |= uint64_t{1} << word;
    splits_[{source, request}] = {.completion = recv.completion,
                                  .bytes = bytes,
                                  .status = std::move(status),
                                  .check = check,
                                  .claims = word,
                                  .data = static_cast<uint8_t*>(recv.data),
                                  .address = address};
    ++unclaimed_splits_;
    // The rest is claimed at the end of this Progress (ClaimIdleSplits): this rank
    // may have more messages to start first (a stream: the sender writes this one's
    // tail meanwhile).
    return;
  } else {
    status = CrossCopy(source, /*write=*/false, recv.data, address, bytes);
    if (!status.ok()) acknowledgement = 2;
  }
  FinishReceive(source, request, recv.completion, std::move(status), acknowledgement,
                status.ok() ? bytes : 0, check);
}

void ShmTransport::ClaimIdleSplits() {
  for (auto it = splits_.begin(); it != splits_.end();) {
    SplitReceive& split = it->second;
    if (split.tail_claimed) {
      ++it;
      continue;
    }
    const auto [source, request] = it->first;
    split.tail_claimed = true;
    --unclaimed_splits_;
    if (!ClaimTail(own_.Claims(source, split.claims), request, kTailReceivers)) {
      ++it;  // the sender's: its kWrote ends the receive
      continue;
    }
    // The sender was busy: its clear-to-send, when it comes to it, finds the tail ours
    // and is not answered. (After a failed read of the head the tail is claimed all the
    // same, so that the sender does not write into a receive that has failed.)
    if (split.status.ok()) {
      const size_t head = SplitHeadBytes(split.bytes);
      split.status = CrossCopy(source, /*write=*/false, split.data + head, split.address + head,
                               split.bytes - head);
    }
    peers_[source].split_claims_busy &= ~(uint64_t{1} << split.claims);
    absl::Status status = std::move(split.status);
    const uint32_t acknowledgement = status.ok() ? 0 : 2;
    const size_t received = status.ok() ? split.bytes : 0;
    Completion* completion = split.completion;
    const uint32_t check = split.check;
    splits_.erase(it++);
    FinishReceive(source, request, completion, std::move(status), acknowledgement, received, check);
  }
}

void ShmTransport::FinishReceive(int source, uint64_t request, Completion* completion,
                                 absl::Status status, uint32_t acknowledgement, size_t bytes,
                                 uint32_t check) {
  if (peers_[source].dead) {
    completion->Complete(std::move(status), bytes, check);
    return;
  }
  // The receive ends when the sender's acknowledgement is in its ring.
  Send(source, {.kind = Kind::kFinished,
                .status = acknowledgement,
                .request = request,
                .completion = completion,
                .completion_status = std::move(status),
                .completion_bytes = bytes,
                .completion_check = check});
}

absl::Status ShmTransport::PostOneSided(MemoryAccess access, void* data, size_t bytes,
                                        const RemoteRegion& remote, size_t offset,
                                        uint64_t notify_tag, Completion* completion,
                                        const MemoryRegion* region) {
  const bool put = access == MemoryAccess::kRemoteWrite;
  const char* what = OneSidedName(access);
  RETURN_IF_ERROR(CheckReady(what));
  RETURN_IF_ERROR(CheckOneSided(what, data, bytes, remote, offset, notify_tag, access, region));
  const int peer = remote.peer();
  if (peers_[peer].dead) {
    completion->Complete(PeerGone(peer), 0);
    return absl::OkStatus();
  }
  if (!peers_[peer].cross_memory) {
    // The peer copies: a put's pieces into its memory, then the notification; a get's
    // request, which it answers with pieces of its memory (and notifies itself).
    if (put) {
      Send(peer, {.kind = Kind::kPutPiece,
                  .bytes = bytes,
                  .address = remote.base() + offset,
                  .payload = data});
      Send(peer, {.kind = Kind::kNotify,
                  .tag = notify_tag,
                  .completion = completion,
                  .completion_bytes = bytes});
    } else {
      const uint64_t request = next_request_++;
      piece_gets_[request] = {peer, static_cast<uint8_t*>(data), bytes, 0, completion};
      Send(peer, {.kind = Kind::kGetRequest,
                  .tag = notify_tag,
                  .bytes = bytes,
                  .request = request,
                  .address = remote.base() + offset});
    }
    return absl::OkStatus();
  }
  absl::Status copied = CrossCopy(peer, /*write=*/put, data, remote.base() + offset, bytes);
  if (!copied.ok()) {
    completion->Complete(std::move(copied), 0);
    return absl::OkStatus();
  }
  // The notification follows the data (the copy has returned, so the peer sees it);
  // the operation ends once the notification is in the peer's ring.
  Send(peer, {.kind = Kind::kNotify,
              .tag = notify_tag,
              .completion = completion,
              .completion_bytes = bytes});
  return absl::OkStatus();
}

absl::Status ShmTransport::PostNotifyRecv(int peer, uint64_t notify_tag, Completion* completion) {
  RETURN_IF_ERROR(CheckReady("PostNotifyRecv"));
  RETURN_IF_ERROR(CheckMessage("PostNotifyRecv", peer, notify_tag, nullptr, 0));
  for (auto it = notifies_.begin(); it != notifies_.end(); ++it) {
    if (it->first == peer && it->second == notify_tag) {
      notifies_.erase(it);
      completion->Complete(absl::OkStatus(), 0);
      return absl::OkStatus();
    }
  }
  if (peers_[peer].dead) {
    completion->Complete(PeerGone(peer), 0);
    return absl::OkStatus();
  }
  notify_waits_.push_back({peer, notify_tag, completion});
  return absl::OkStatus();
}

void ShmTransport::DeliverNotify(int source, uint64_t tag) {
  for (auto it = notify_waits_.begin(); it != notify_waits_.end(); ++it) {
    if (it->source == source && it->tag == tag) {
      it->completion->Complete(absl::OkStatus(), 0);
      notify_waits_.erase(it);
      return;
    }
  }
  notifies_.emplace_back(source, tag);
}

void ShmTransport::Handle(int source, const SlotHeader& slot, const uint8_t* payload) {
  const Kind kind = static_cast<Kind>(slot.kind);
  switch (kind) {
    case Kind::kEager:
    case Kind::kPooled:
    case Kind::kRendezvous: {
      const uint64_t tag = slot.tag & kMaxTag;
      if (std::optional<PostedRecv> recv = TakePostedRecv(source, tag)) {
        if (kind == Kind::kRendezvous) {
          Pull(source, slot.tag, slot.bytes, slot.rendezvous.request, slot.rendezvous.address,
               *recv);
        } else if (slot.bytes > recv->bytes) {
          recv->completion->Complete(Truncated(source, tag, slot.bytes, recv->bytes), 0);
        } else {
          if (slot.bytes > 0) std::memcpy(recv->data, payload, slot.bytes);
          recv->completion->Complete(absl::OkStatus(), slot.bytes,
                                     static_cast<uint32_t>(slot.tag >> kTagBits));
        }
        return;
      }
      Unexpected message{
          source, slot.tag, kind, slot.bytes, slot.rendezvous.request, slot.rendezvous.address, {}};
      if (kind != Kind::kRendezvous) message.payload.assign(payload, payload + slot.bytes);
      unexpected_.push_back(std::move(message));
      CountUnexpected(tag, +1);
      return;
    }
    case Kind::kPiece:
      HandlePiece(source, slot, payload);
      return;
    case Kind::kPutPiece:
      // Into this rank's own registered memory, where the put's origin checked its
      // range (CheckOneSided); its notification follows the last piece.
      if (slot.bytes > 0) {
        std::memcpy(reinterpret_cast<void*>(slot.rendezvous.address), payload, slot.bytes);
      }
      return;
    case Kind::kGetRequest:
      Send(source, {.kind = Kind::kGetPiece,
                    .tag = slot.rendezvous.request,
                    .bytes = slot.bytes,
                    .payload = reinterpret_cast<const void*>(slot.rendezvous.address),
                    .notify_source = source,
                    .notify_tag = slot.tag});
      return;
    case Kind::kGetPiece: {
      auto it = piece_gets_.find(slot.tag);
      if (it == piece_gets_.end()) return;  // already failed (the peer was declared dead)
      PieceGet& get = it->second;
      if (ABSL_PREDICT_FALSE(slot.rendezvous.address > get.bytes ||
                             slot.bytes > get.bytes - slot.rendezvous.address)) {
        ZCOLL_LOG(ERROR) << "rank " << rank() << ": rank " << source << " sent a piece at "
                         << slot.rendezvous.address << " of " << slot.bytes
                         << " bytes for a get of " << get.bytes << "; dropped";
        return;
      }
      if (slot.bytes > 0) std::memcpy(get.data + slot.rendezvous.address, payload, slot.bytes);
      get.received += slot.bytes;
      if (get.received == get.bytes) {
        Completion* completion = get.completion;
        const size_t bytes = get.bytes;
        piece_gets_.erase(it);
        completion->Complete(absl::OkStatus(), bytes);
      }
      return;
    }
    case Kind::kFinished: {
      auto it = rendezvous_.find(slot.rendezvous.request);
      if (it == rendezvous_.end()) return;  // already failed (the peer was declared dead)
      const PendingSend send = it->second;
      rendezvous_.erase(it);
      --peers_[source].rendezvous_sends;
      if (slot.status == 0) {
        send.completion->Complete(absl::OkStatus(), send.bytes);
      } else {
        send.completion->Complete(
            absl::InvalidArgumentError(absl::StrCat(
                "rank ", source,
                (slot.status == 1 ? " refused a message of " : " failed to read a message of "),
                send.bytes, " bytes from rank ", rank(),
                (slot.status == 1 ? ": it does not fit the receive buffer" : ""))),
            0);
      }
      return;
    }
    case Kind::kNotify:
      DeliverNotify(source, slot.tag);
      return;
    case Kind::kClearToSend: {
      // We are the sender of a split rendezvous: claim the tail and write it while the
      // receiver reads the head, then say so. A receiver that claimed it before we got
      // here (or has moved on to another split of ours: the word's request differs)
      // read it itself and waits for no answer.
      auto it = rendezvous_.find(slot.rendezvous.request);
      if (it == rendezvous_.end() || slot.status >= kSplitsPerSender) return;
      if (!ClaimTail(peers_[source].mapping.Claims(rank(), slot.status), slot.rendezvous.request,
                     kTailSenders)) {
        return;
      }
      const PendingSend& send = it->second;
      const size_t tail = slot.bytes;
      const absl::Status written = CrossCopy(
          source, /*write=*/true,
          const_cast<uint8_t*>(static_cast<const uint8_t*>(send.data)) + (send.bytes - tail),
          slot.rendezvous.address, tail);
      Send(source, {.kind = Kind::kWrote,
                    .status = written.ok() ? 0u : 2u,
                    .request = slot.rendezvous.request});
      return;
    }
    case Kind::kWrote: {
      auto it = splits_.find(std::make_pair(source, slot.rendezvous.request));
      if (it == splits_.end()) return;
      SplitReceive split = std::move(it->second);
      splits_.erase(it);
      peers_[source].split_claims_busy &= ~(uint64_t{1} << split.claims);
      if (!split.tail_claimed) --unclaimed_splits_;  // (we had not looked yet)
      absl::Status status = std::move(split.status);
      if (status.ok() && slot.status != 0) {
        status =
            absl::InternalError(absl::StrCat("rank ", source, " could not write its part of a ",
                                             split.bytes, "-byte message to rank ", rank()));
      }
      const uint32_t acknowledgement = status.ok() ? 0 : 2;
      const size_t received = status.ok() ? split.bytes : 0;
      FinishReceive(source, slot.rendezvous.request, split.completion, std::move(status),
                    acknowledgement, received, split.check);
      return;
    }
  }
  ZCOLL_LOG(ERROR) << "rank " << rank() << ": unknown message kind " << slot.kind << " from rank "
                   << source << " ignored";
}

void ShmTransport::BindAssembly(PieceAssembly& assembly, int source, void* data, size_t bytes,
                                Completion* completion) {
  assembly.completion = completion;
  if (assembly.bytes > bytes) {
    assembly.status = Truncated(source, assembly.wire_tag & kMaxTag, assembly.bytes, bytes);
  } else {
    assembly.data = static_cast<uint8_t*>(data);
    if (assembly.received > 0)
      std::memcpy(assembly.data, assembly.payload.data(), assembly.received);
  }
  assembly.payload = {};
}

void ShmTransport::HandlePiece(int source, const SlotHeader& slot, const uint8_t* payload) {
  PieceAssembly& assembly = assemblies_[source];
  if (!assembly.active) {
    // The first piece: the message is matched now, as an eager one is on arrival.
    assembly = {.active = true, .wire_tag = slot.tag, .bytes = slot.rendezvous.address};
    ++assemblies_active_;
    if (std::optional<PostedRecv> recv = TakePostedRecv(source, slot.tag & kMaxTag)) {
      BindAssembly(assembly, source, recv->data, recv->bytes, recv->completion);
    } else {
      assembly.payload.reserve(assembly.bytes);
    }
  }
  if (ABSL_PREDICT_FALSE(slot.tag != assembly.wire_tag ||
                         slot.rendezvous.address != assembly.bytes ||
                         slot.bytes > assembly.bytes - assembly.received)) {
    ZCOLL_LOG(ERROR) << "rank " << rank() << ": rank " << source << " sent a piece of "
                     << slot.bytes << " bytes (tag " << (slot.tag & kMaxTag) << ", of "
                     << slot.rendezvous.address << ") that does not continue its message of "
                     << assembly.bytes << " (tag " << (assembly.wire_tag & kMaxTag) << ", "
                     << assembly.received << " in); dropped";
    return;
  }
  if (assembly.completion == nullptr) {
    assembly.payload.insert(assembly.payload.end(), payload, payload + slot.bytes);
  } else if (assembly.data != nullptr && slot.bytes > 0) {
    std::memcpy(assembly.data + assembly.received, payload, slot.bytes);
  }
  assembly.received += slot.bytes;
  if (assembly.received < assembly.bytes) return;
  assembly.active = false;
  --assemblies_active_;
  const uint32_t check = static_cast<uint32_t>(assembly.wire_tag >> kTagBits);
  if (assembly.completion != nullptr) {
    const bool ok = assembly.status.ok();
    assembly.completion->Complete(std::move(assembly.status), ok ? assembly.bytes : 0, check);
    assembly.completion = nullptr;
    return;
  }
  // Whole before any receive matched it: unexpected, as an eager message.
  unexpected_.push_back(
      {source, assembly.wire_tag, Kind::kEager, assembly.bytes, 0, 0, std::move(assembly.payload)});
  assembly.payload = {};
  CountUnexpected(assembly.wire_tag & kMaxTag, +1);
}

void ShmTransport::DrainRing(int source) {
  uint64_t& position = receive_positions_[source];
  for (int handled = 0; handled < kMessagesPerRing; ++handled) {
    SlotHeader* slot = own_.Slot(source, position);
    if (slot->sequence.load(std::memory_order_acquire) != position + 1) return;
    // A burst from one sender lies in consecutive lines: start the next transfers
    // now rather than one miss at a time.
    __builtin_prefetch(own_.Slot(source, position + 1));
    __builtin_prefetch(own_.Slot(source, position + 2));
    if (Pooled(slot->kind)) {
      const Mapping& sender = peers_[source].mapping;
      const uint64_t index = slot->rendezvous.request;
      if (ABSL_PREDICT_FALSE(index >= sender.pool_buffers || slot->bytes > eager_bytes_)) {
        ZCOLL_LOG(ERROR) << "rank " << rank() << ": rank " << source << " named pool buffer "
                         << index << " of " << slot->bytes
                         << " bytes, outside its pool; message dropped";
      } else {
        Handle(source, *slot, sender.PoolPayload(index));
        sender.PoolBuffer(index)->busy.store(0, std::memory_order_release);
      }
    } else {
      Handle(source, *slot, slot->inline_payload);
    }
    slot->sequence.store(position + slots_, std::memory_order_release);
    ++position;
  }
}

void ShmTransport::FailPeer(int peer) {
  Peer& entry = peers_[peer];
  entry.dead = true;
  // A peer killed before every rank had mapped its segment could not unlink the name;
  // we know it, and it is dead (ENOENT when it had).
  shm_unlink(entry.segment.c_str());
  const absl::Status gone = PeerGone(peer);
  ZCOLL_LOG(INFO) << "rank " << rank() << ": " << gone.message();
  // A posted receive never has a matching arrived message (those are matched on
  // arrival), and the ring was drained before this call: nothing more will come.
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (it->source != peer) {
      ++it;
      continue;
    }
    it->completion->Complete(gone, 0);
    it = posted_.erase(it);
  }
  for (auto it = notify_waits_.begin(); it != notify_waits_.end();) {
    if (it->source != peer) {
      ++it;
      continue;
    }
    it->completion->Complete(gone, 0);
    it = notify_waits_.erase(it);
  }
  for (auto it = splits_.begin(); it != splits_.end();) {
    if (it->first.first != peer) {
      ++it;
      continue;
    }
    it->second.completion->Complete(gone, 0);
    if (!it->second.tail_claimed) --unclaimed_splits_;
    splits_.erase(it++);
  }
  entry.split_claims_busy = 0;
  for (auto it = rendezvous_.begin(); it != rendezvous_.end();) {
    if (it->second.peer != peer) {
      ++it;
      continue;
    }
    it->second.completion->Complete(gone, 0);
    rendezvous_.erase(it++);
  }
  PieceAssembly& assembly = assemblies_[peer];
  if (assembly.active) {
    if (assembly.completion != nullptr) assembly.completion->Complete(gone, 0);
    --assemblies_active_;
  }
  assembly = {};
  for (auto it = piece_gets_.begin(); it != piece_gets_.end();) {
    if (it->second.peer != peer) {
      ++it;
      continue;
    }
    it->second.completion->Complete(gone, 0);
    piece_gets_.erase(it++);
  }
  entry.rendezvous_sends = 0;
  for (const Outgoing& message : entry.queued) {
    if (message.completion != nullptr) message.completion->Complete(gone, 0);
  }
  entry.queued.clear();
  // Pool buffers the dead peer had not released yet are ours again.
  for (size_t index = 0; index < pool_buffers_; ++index) {
    if (pool_peer_[index] != peer) continue;
    pool_peer_[index] = -1;
    own_.PoolBuffer(index)->busy.store(0, std::memory_order_relaxed);
  }
}

void ShmTransport::OnFreeze(absl::Time deadline) {
  if (own_.base == nullptr) return;
  SegmentHeader* header = own_.header();
  header->closed.store(1, std::memory_order_seq_cst);
  // A peer inside process_vm_readv/writev of our memory finishes in microseconds;
  // one stopped (SIGSTOP) between counting itself in and copying would keep us here,
  // so the wait is bounded.
  while (header->copiers.load(std::memory_order_seq_cst) != 0) {
    if (absl::Now() >= deadline) {
      ZCOLL_LOG(WARNING) << "rank " << rank() << ": a peer was still copying into or out of this "
                         << "process's memory when its transport stopped";
      return;
    }
    absl::SleepFor(absl::Microseconds(20));
  }
}

absl::Status ShmTransport::Progress() {
  if (ABSL_PREDICT_FALSE(frozen())) return FrozenError("Progress");
  if (!connected_) return absl::OkStatus();
  // Looking for dead peers costs a clock read; a busy waiter looks every 128 calls
  // (tens of microseconds), and Sleep looks every time.
  if (++progress_calls_ % 128 == 0) CheckDeaths();
  // Round-robin start so that one chatty peer does not always go first.
  for (int i = 0; i < size(); ++i) {
    const int source = (next_ring_ + i) % size();
    if (Reachable(source)) DrainRing(source);
  }
  next_ring_ = (next_ring_ + 1) % size();
  if (unclaimed_splits_ > 0) ClaimIdleSplits();
  FlushQueues();
  MaybeUnlink();
  return absl::OkStatus();
}

void ShmTransport::CheckDeaths() {
  for (int peer : monitor_.NewDeaths()) {
    // Read what it sent before dying, then fail what is left.
    DrainRing(peer);
    FailPeer(peer);
  }
}

void ShmTransport::Sleep(absl::Duration timeout) {
  if (!connected_ || frozen()) {
    absl::SleepFor(timeout);
    return;
  }
  CheckDeaths();
  // A full ring frees up without ringing our doorbell: poll it soon.
  if (any_queued_) timeout = std::min(timeout, absl::Microseconds(100));
  SegmentHeader* header = own_.header();
  header->sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint32_t doorbell = header->doorbell.load(std::memory_order_relaxed);
  // A split whose tail nobody has claimed (one opened by PostRecv) is work to do now.
  bool ready = unclaimed_splits_ > 0;
  for (int source = 0; source < size() && !ready; ++source) {
    if (!Reachable(source)) continue;
    const uint64_t position = receive_positions_[source];
    ready = own_.Slot(source, position)->sequence.load(std::memory_order_acquire) == position + 1;
  }
  if (!ready) {
    const timespec limit = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
    Futex(&header->doorbell, FUTEX_WAIT, doorbell, &limit);
  }
  header->sleeping.store(0, std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> CreateShmTransport(int rank, int size,
                                                              const ShmOptions& options) {
  auto transport = std::make_unique<ShmTransport>(rank, size, options);
  RETURN_IF_ERROR(transport->Initialize());
  return transport;
}

}  // namespace zcoll
