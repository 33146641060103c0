// The collectives of Communicator: argument checks, the signature check, algorithm
// selection, plans and their execution (communicator.h documents the semantics).

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "collectives/algorithms.h"
#include "collectives/communicator.h"
#include "collectives/communicator_state.h"
#include "collectives/executor.h"
#include "collectives/node_levels.h"
#include "collectives/selection.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "ops/reduce.h"

namespace zcoll {

namespace {

// Nonblocking collectives in flight per communicator; their sequence numbers, which
// keep their tags apart, wrap at this.
constexpr uint64_t kSequenceNumbers = (kMaxCommunicatorTag >> kScheduleTagBits);

// The op of the collectives that move data only, and the one AVG reduces with before
// its division (referred to, not copied, by every call).
const ReduceOp kSumOp(PredefinedOp::kSum);

}  // namespace

namespace {

// Whether send and receive buffers share a byte (kInPlace, null and empty buffers
// share none): ArgumentChecker::Disjoint's test, and a repeated quick call's.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool BuffersOverlap(const void* send, size_t send_bytes,
                                                        const void* recv, size_t recv_bytes) {
  if (send == kInPlace || recv == kInPlace || send == nullptr || recv == nullptr ||
      send_bytes == 0 || recv_bytes == 0) {
    return false;
  }
  const auto a = reinterpret_cast<uintptr_t>(send), b = reinterpret_cast<uintptr_t>(recv);
  return a < b + recv_bytes && b < a + send_bytes;
}

class ArgumentChecker {
 public:
  ArgumentChecker(int rank, int size, const char* call) : rank_(rank), size_(size), call_(call) {
    // A moved-from Communicator has no ranks: nothing else is checked.
    if (ABSL_PREDICT_FALSE(size <= 0)) status_ = MovedFromError(call);
  }

  const absl::Status& status() const { return status_; }
  const char* call() const { return call_; }
  int size() const { return size_; }

  // The checks below are inline for the arguments that pass (every call makes
  // them); what a refusal says is spelled out of line.
  void Fail(absl::string_view sentence) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(absl::StrCat("rank ", rank_, ": ", call_, ": ", sentence));
  }
  void Type(DataType type) {
    if (ABSL_PREDICT_FALSE(!IsValidDataType(type))) BadType(type);
  }
  void Op(const ReduceOp& op, DataType type) {
    // Valid predefined pairs and user ops on valid types pass; the rest learn why.
    if (ABSL_PREDICT_FALSE(!IsValidDataType(type) ||
                           (op.is_predefined() && (!IsValidPredefinedOp(op.predefined()) ||
                                                   !IsOpDefinedFor(op.predefined(), type))))) {
      BadOp(op, type);
    }
  }
  void Root(int root) {
    if (ABSL_PREDICT_FALSE(root < 0 || root >= size_)) BadRoot(root);
  }
  // `count` elements of `type` must be addressable.
  void Count(absl::string_view what, size_t count, DataType type) {
    if (ABSL_PREDICT_FALSE(TooLarge(count, type))) BadCount(what, count, type);
  }
  // A buffer that is read or written: not null when it holds elements, and not
  // kInPlace unless `in_place_allowed`.
  void Buffer(absl::string_view what, const void* buffer, size_t count, bool in_place_allowed,
              absl::string_view in_place_rule = "") {
    if (ABSL_PREDICT_FALSE((buffer == kInPlace && !in_place_allowed) ||
                           (buffer == nullptr && count > 0))) {
      BadBuffer(what, buffer, count, in_place_rule);
    }
  }
  // A v-collective's counts and displacements (`what` names them): size() entries
  // each, none so large that their sum could overflow. Returns the elements they
  // span (0 after a failure).
  size_t Layout(absl::string_view what, absl::Span<const size_t> counts,
                absl::Span<const size_t> displs, DataType type) {
    if (counts.size() != static_cast<size_t>(size_) ||
        displs.size() != static_cast<size_t>(size_)) {
      Fail(absl::StrCat(what, " need ", size_, " counts and displacements each; got ",
                        counts.size(), " and ", displs.size()));
      return 0;
    }
    for (int r = 0; r < size_; ++r) {
      if (counts[r] > std::numeric_limits<size_t>::max() / 4 ||
          displs[r] > std::numeric_limits<size_t>::max() / 4) {
        Fail(absl::StrCat(what, ": count or displacement ", r, " is too large"));
        return 0;
      }
    }
    const size_t extent = internal_collectives::SaturatingExtent(counts, displs);
    if (ABSL_PREDICT_FALSE(TooLarge(extent, type))) BadExtent(what, extent, type);
    return status_.ok() ? extent : 0;
  }
  // `count` blocks of one per rank must not overflow; returns count * size.
  size_t PerRank(absl::string_view what, size_t count, DataType type) {
    if (ABSL_PREDICT_FALSE(size_ <= 0)) return 0;
    if (ABSL_PREDICT_FALSE(count >
                           std::numeric_limits<size_t>::max() / 2 / static_cast<size_t>(size_))) {
      BadPerRank(what, count);
      return 0;
    }
    const size_t total = count * static_cast<size_t>(size_);
    if (ABSL_PREDICT_FALSE(TooLarge(total, type))) BadPerRankCount(what, total, type);
    return total;
  }
  // Send and receive buffers may not share a byte (the standard's rule; kInPlace is
  // how a caller says they are the same).
  void Disjoint(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes) {
    if (ABSL_PREDICT_FALSE(BuffersOverlap(send, send_bytes, recv, recv_bytes))) {
      BadOverlap(send_bytes, recv_bytes);
    }
  }

 private:
  // More elements of `type` than any buffer can hold (an invalid type is refused
  // elsewhere).
  static bool TooLarge(size_t count, DataType type) {
    return IsValidDataType(type) &&
           count > std::numeric_limits<size_t>::max() / 2 / DataTypeSize(type);
  }
  ABSL_ATTRIBUTE_NOINLINE void BadType(DataType type) {
    Fail(absl::StrCat("type ", static_cast<int>(type), " is not a zcoll DataType"));
  }
  ABSL_ATTRIBUTE_NOINLINE void BadOp(const ReduceOp& op, DataType type) {
    if (absl::Status status = CheckOpForDataType(op, type); !status.ok()) Fail(status.message());
  }
  ABSL_ATTRIBUTE_NOINLINE void BadRoot(int root) {
    Fail(absl::StrCat("root ", root, " is not a rank of this ", size_, "-rank communicator"));
  }
  // (Out of line, as the others: the sentence is built only when a check fails, not
  // on every call; building it here cost a scatter's root about 430 instructions.)
  ABSL_ATTRIBUTE_NOINLINE void BadPerRank(absl::string_view what, size_t count) {
    Fail(absl::StrCat(what, " ", count, " times ", size_, " ranks overflows"));
  }
  ABSL_ATTRIBUTE_NOINLINE void BadExtent(absl::string_view what, size_t extent, DataType type) {
    BadCount(absl::StrCat("the extent of ", what), extent, type);
  }
  ABSL_ATTRIBUTE_NOINLINE void BadPerRankCount(absl::string_view what, size_t total,
                                               DataType type) {
    BadCount(absl::StrCat(what, " times the communicator size"), total, type);
  }
  ABSL_ATTRIBUTE_NOINLINE void BadCount(absl::string_view what, size_t count, DataType type) {
    Fail(absl::StrCat(what, " ", count, " is too large for any buffer of ", DataTypeName(type)));
  }
  ABSL_ATTRIBUTE_NOINLINE void BadBuffer(absl::string_view what, const void* buffer, size_t count,
                                         absl::string_view in_place_rule) {
    if (buffer == kInPlace) {
      Fail(absl::StrCat("kInPlace is not allowed as `", what, "`",
                        in_place_rule.empty() ? "" : "; ", in_place_rule));
    } else {
      Fail(absl::StrCat("`", what, "` is null but holds ", count, " elements"));
    }
  }
  ABSL_ATTRIBUTE_NOINLINE void BadOverlap(size_t send_bytes, size_t recv_bytes) {
    Fail(absl::StrCat("the send buffer (", send_bytes, " bytes) and the receive buffer (",
                      recv_bytes, " bytes) overlap; pass kInPlace to reduce in place"));
  }

  int rank_;
  int size_;
  const char* call_;
  absl::Status status_;
};

size_t Bytes(size_t count, DataType type) {
  return IsValidDataType(type) ? count * DataTypeSize(type) : 0;
}

// One rank's arguments as ZCOLL_CHECK compares them.
struct Signature {
  uint32_t collective;
  uint32_t type;
  uint32_t op;  // PredefinedOp, or kUserOp + commutativity
  int32_t root;
  uint64_t count;
  uint64_t counts_hash;
};
constexpr uint32_t kUserOp = 1000;

Signature MakeSignature(const CollectiveArgs& args, DataType type, const ReduceOp& op,
                        bool reduces) {
  Signature signature{};
  signature.collective = static_cast<uint32_t>(args.collective);
  signature.type = static_cast<uint32_t>(type);
  signature.op = !reduces             ? 0
                 : op.is_predefined() ? static_cast<uint32_t>(op.predefined())
                                      : kUserOp + (op.commutative() ? 1 : 0);
  signature.root = IsRooted(args.collective) ? args.root : 0;
  // The v-forms' own counts differ from rank to rank, as their blocks may.
  const bool varied =
      args.collective == Collective::kScatterv || args.collective == Collective::kGatherv ||
      args.collective == Collective::kAllgatherv || args.collective == Collective::kAlltoallv;
  signature.count = varied ? 0 : args.count;
  // Counts that every rank passes alike.
  const bool shared_counts =
      args.collective == Collective::kReduceScatter || args.collective == Collective::kAllgatherv;
  uint64_t hash = 1469598103934665603ull;
  for (size_t count : shared_counts ? args.counts : std::vector<size_t>{}) {
    hash = (hash ^ count) * 1099511628211ull;
  }
  signature.counts_hash = hash;
  return signature;
}

std::string DescribeDifference(const Signature& mine, const Signature& theirs) {
  if (mine.collective != theirs.collective) {
    return absl::StrCat("called ", CollectiveName(static_cast<Collective>(theirs.collective)));
  }
  if (mine.type != theirs.type) {
    return absl::StrCat("passed type ", IsValidDataType(static_cast<DataType>(theirs.type))
                                            ? DataTypeName(static_cast<DataType>(theirs.type))
                                            : absl::string_view("(invalid)"));
  }
  if (mine.op != theirs.op) {
    return theirs.op >= kUserOp
               ? std::string("passed a user op")
               : absl::StrCat("passed op ", PredefinedOpName(static_cast<PredefinedOp>(theirs.op)));
  }
  if (mine.root != theirs.root) return absl::StrCat("passed root ", theirs.root);
  if (mine.count != theirs.count) return absl::StrCat("passed count ", theirs.count);
  return "passed different counts";
}

size_t ChunkBytes(int size) {
  static const size_t bytes = std::max<uint64_t>(4096, EnvironmentUnsigned("ZCOLL_CHUNK_BYTES"));
  static const bool set = EnvironmentIsSet("ZCOLL_CHUNK_BYTES");
  return set ? bytes : DefaultChunkBytes(size);
}

// A call's counts and displacements against a cached plan's or a quick call's key's
// (out of line: only the v-collectives compare them).
template <typename Vectors>
ABSL_ATTRIBUTE_NOINLINE bool SameVectors(const std::array<absl::Span<const size_t>, 4>& mine,
                                         const Vectors& theirs) {
  // (Element by element, not memcmp: a node's vectors are a few words, and a library
  // call costs more than comparing them; 2 ranks' Scatterv root, 8 B: 94 instructions a
  // call to 71.)
  for (size_t i = 0; i < mine.size(); ++i) {
    const size_t length = mine[i].size();
    if (length != theirs[i].size()) return false;
    const size_t* a = mine[i].data();
    const size_t* b = theirs[i].data();
    for (size_t k = 0; k < length; ++k) {
      if (a[k] != b[k]) return false;
    }
  }
  return true;
}

// SameVectors for the rooted v-collectives (Scatterv, Gatherv), whose calls pass two
// vectors, counts and displacements, of one length and none after them: both compared
// in one loop without a branch a word (4 ranks, a Scatterv root's 8 B: 95 instructions a
// call to 56).
ABSL_ATTRIBUTE_NOINLINE bool SameCountsAndDispls(
    const std::array<absl::Span<const size_t>, 4>& mine,
    const std::array<absl::Span<const size_t>, 4>& theirs) {
  const size_t length = mine[0].size();
  if (length != theirs[0].size() || length != mine[1].size() || length != theirs[1].size()) {
    return false;
  }
  const size_t *counts = mine[0].data(), *their_counts = theirs[0].data();
  const size_t *displs = mine[1].data(), *their_displs = theirs[1].data();
  size_t differences = 0;
  for (size_t k = 0; k < length; ++k) {
    differences |= (counts[k] ^ their_counts[k]) | (displs[k] ^ their_displs[k]);
  }
  return differences == 0;
}

}  // namespace

namespace {

// What a repeated quick node call checks of a buffer it uses (QuickCallFits): a real
// address. Anything it refuses takes the general path, whose checker says why.
bool RealBuffer(const void* buffer) { return buffer != nullptr && buffer != kInPlace; }

// A call that ran to its end, as an I-form returns it to Blocking.
absl::StatusOr<Request> FinishedRequest(absl::Status status) {
  if (!status.ok()) return status;
  return Request();
}

}  // namespace

bool ArgumentCheckEnabled() {
  static const bool enabled = EnvironmentUnsigned("ZCOLL_CHECK") != 0;
  return enabled;
}

// One collective call, made once its arguments are checked.
struct Communicator::CollectiveCall {
  // `op` is null for the collectives that move data only.
  CollectiveCall(const ArgumentChecker& check, Collective collective, DataType type,
                 const void* send, void* recv, const ReduceOp* op = nullptr)
      : name(check.call()),
        type(type),
        op(op != nullptr ? *op : kSumOp),
        send(send),
        recv(recv),
        invalid(check.status()) {
    args.collective = collective;
    args.size = check.size();
    args.element_bytes = IsValidDataType(type) ? DataTypeSize(type) : 1;
    args.commutative = op == nullptr || op->commutative();
    args.chunk_bytes = ChunkBytes(args.size);
    has_vectors = collective == Collective::kReduceScatter || collective == Collective::kScatterv ||
                  collective == Collective::kGatherv || collective == Collective::kAllgatherv ||
                  collective == Collective::kAlltoallv;
  }

  // A persistent call's start (PersistentCall::Call): the rest is filled in.
  CollectiveCall(const char* name, const ReduceOp& op)
      : name(name), type(DataType::kUint8), op(op) {}

  CollectiveCall(const CollectiveCall&) = delete;
  CollectiveCall& operator=(const CollectiveCall&) = delete;

  // `args` with its vectors filled from `vectors`, to make a plan from.
  CollectiveArgs FullArgs() const {
    CollectiveArgs full;
    static_cast<ScalarArgs&>(full) = args;
    std::vector<size_t>* fields[] = {&full.counts, &full.displs, &full.recv_counts,
                                     &full.recv_displs};
    for (size_t i = 0; i < vectors.size(); ++i)
      fields[i]->assign(vectors[i].begin(), vectors[i].end());
    return full;
  }

  const char* name;  // "Reduce", for messages
  // The arguments, but for the v-collectives' counts and displacements: those stay
  // in `vectors`, views of the caller's (counts, displs, recv_counts, recv_displs,
  // as CollectiveArgs names them), which a call compares with a cached plan's and
  // copies only to make a plan (copying them into `args` on every call cost a
  // scatterv's root about 250 instructions).
  ScalarArgs args;
  std::array<absl::Span<const size_t>, 4> vectors;
  // A v-collective (ReduceScatter's counts included): the only calls with vectors.
  bool has_vectors = false;
  DataType type;
  const ReduceOp& op;  // the caller's (it outlives the call's start), or kSumOp
  const void* send;
  void* recv;
  // An argument refused by the caller's checks.
  absl::Status invalid;
  // Where this rank's result lies, for AVG's division (count 0: none), and how many
  // contributions it sums (0: the communicator's size).
  void* result = nullptr;
  size_t result_count = 0;
  size_t contributions = 0;
};

// A persistent collective's call, kept at init with its own copies of what the
// caller passed by reference (the op, the vectors) and its plan, on the communicator's
// State (which stays put when its Communicator moves).
struct internal_collectives::PersistentCall {
  using CollectiveCall = Communicator::CollectiveCall;
  Communicator::State* state = nullptr;
  const char* name = "";
  ScalarArgs args;
  std::array<std::vector<size_t>, 4> vectors;
  bool has_vectors = false;
  DataType type = DataType::kUint8;
  ReduceOp op = PredefinedOp::kSum;
  const void* send = nullptr;
  void* recv = nullptr;
  void* result = nullptr;
  size_t result_count = 0;
  size_t contributions = 0;
  Communicator::CachedPlan plan;

  void Keep(const CollectiveCall& call, const Communicator::CachedPlan& cached) {
    name = call.name;
    args = call.args;
    for (size_t i = 0; i < vectors.size(); ++i) {
      vectors[i].assign(call.vectors[i].begin(), call.vectors[i].end());
    }
    has_vectors = call.has_vectors;
    type = call.type;
    op = call.op;
    send = call.send;
    recv = call.recv;
    result = call.result;
    result_count = call.result_count;
    contributions = call.contributions;
    plan = cached;
  }
  // Writes the kept call into `call` (made with this op).
  void Fill(CollectiveCall& call) const {
    call.args = args;
    for (size_t i = 0; i < vectors.size(); ++i) call.vectors[i] = vectors[i];
    call.has_vectors = has_vectors;
    call.type = type;
    call.send = send;
    call.recv = recv;
    call.result = result;
    call.result_count = result_count;
    call.contributions = contributions;
  }
};

absl::StatusOr<PersistentRequest> Communicator::Persistent(
    absl::FunctionRef<absl::StatusOr<Request>()> start) {
  // (A moved-from communicator: the I-form refuses it.)
  if (state_ == nullptr) return start().status();
  auto call = std::make_unique<internal_collectives::PersistentCall>();
  call->state = state_.get();
  state_->initializing = call.get();
  absl::StatusOr<Request> kept = start();
  state_->initializing = nullptr;
  if (!kept.ok()) return kept.status();
  return PersistentRequest(std::move(call));
}

PersistentRequest::PersistentRequest() = default;
PersistentRequest::PersistentRequest(std::unique_ptr<internal_collectives::PersistentCall> call)
    : call_(std::move(call)) {}
PersistentRequest::PersistentRequest(PersistentRequest&&) noexcept = default;
PersistentRequest& PersistentRequest::operator=(PersistentRequest&& other) noexcept {
  // An active instance being replaced is waited for (as a Request's is) before the call
  // it runs goes: a node call reads the kept call's vectors.
  instance_ = std::move(other.instance_);
  call_ = std::move(other.call_);
  return *this;
}
PersistentRequest::~PersistentRequest() = default;

absl::Status PersistentRequest::Start() {
  if (call_ == nullptr) {
    return absl::FailedPreconditionError(
        "PersistentRequest::Start: this request is empty (made by no *Init call, or moved from)");
  }
  if (active()) {
    return absl::FailedPreconditionError(
        absl::StrCat("PersistentRequest::Start: this ", call_->name,
                     " is active; Wait or Test until it completes before starting it again"));
  }
  Communicator::State& state = *call_->state;
  JobConnection& job = state.transport->job();
  if (ABSL_PREDICT_FALSE(job.failed())) return job.FailureStatus();
  Communicator::CollectiveCall call(call_->name, call_->op);
  call_->Fill(call);
  absl::StatusOr<Request> started =
      Communicator::Launch(state, call, call_->plan, /*blocking=*/false);
  if (!started.ok()) return started.status();
  instance_ = std::move(*started);
  return absl::OkStatus();
}

absl::Status PersistentRequest::Wait(std::optional<absl::Time> deadline) {
  return instance_.Wait(deadline);
}

absl::StatusOr<bool> PersistentRequest::Test() { return instance_.Test(); }

absl::Status Communicator::SetAlgorithm(Collective collective, absl::string_view algorithm) {
  if (state_ == nullptr) return MovedFromError("SetAlgorithm");
  for (State::QuickNodeCall& quick : state_->quick) quick.valid = false;
  if (algorithm.empty()) {
    state_->forced[static_cast<size_t>(collective)] = nullptr;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const Algorithm* found, FindAlgorithm(collective, algorithm));
  state_->forced[static_cast<size_t>(collective)] = found;
  return absl::OkStatus();
}

absl::Status Communicator::RefuseSpan(const char* call, const char* span, size_t holds,
                                      size_t needs) {
  if (state_ == nullptr) return MovedFromError(call);
  // A count so large that no span could hold it says so, rather than a number.
  return Failed(absl::InvalidArgumentError(
      needs == std::numeric_limits<size_t>::max()
          ? absl::StrCat("rank ", rank(), ": ", call, ": the counts need more elements in `", span,
                         "` than any span holds")
          : absl::StrCat("rank ", rank(), ": ", call, ": `", span, "` holds ", holds,
                         " elements; this call needs ", needs)));
}

absl::Status Communicator::EqualBlocks(const char* call, const char* span, size_t elements) {
  // (A moved-from communicator has no ranks; the raw call below refuses it.)
  if (size() <= 0 || elements % static_cast<size_t>(size()) == 0) return absl::OkStatus();
  return Failed(absl::InvalidArgumentError(
      absl::StrCat("rank ", rank(), ": ", call, ": `", span, "` holds ", elements,
                   " elements, which do not split into ", size(), " equal blocks (one per rank)")));
}

size_t Communicator::PerRank(size_t count) const {
  const size_t ranks = static_cast<size_t>(std::max(size(), 1));
  return count > std::numeric_limits<size_t>::max() / ranks ? std::numeric_limits<size_t>::max()
                                                            : count * ranks;
}

size_t Communicator::OwnCount(absl::Span<const size_t> counts) const {
  return static_cast<size_t>(rank()) < counts.size() ? counts[rank()] : 0;
}

void Communicator::RestartNodeLevels(State& state, const CollectiveCall& call, const ReduceOp& op,
                                     bool stripes, CallExecution& execution) {
  const int rank = state.transport->rank();
  NodeLevelsExecution::Call levels{.collective = call.args.collective,
                                   .node = state.node_level.get(),
                                   .leaders = state.leader_level.get(),
                                   .stripe = stripes ? state.stripe_level.get() : nullptr,
                                   .send = call.send,
                                   .recv = call.recv,
                                   .in_place = call.args.in_place,
                                   .count = call.args.count,
                                   .type = call.type,
                                   .op = op,
                                   .members = &state.level_members,
                                   .group = state.level_leader_index[rank],
                                   .rank = rank,
                                   .size = state.transport->size(),
                                   .in_blocks = state.levels_in_blocks,
                                   .chunk_bytes = call.args.chunk_bytes};
  if (call.args.collective == Collective::kBcast || call.args.collective == Collective::kReduce) {
    const int root = call.args.root;
    if (state.level_leader_index[rank] == state.level_leader_index[root]) {
      levels.node_root = state.level_position[root];
    }
    levels.leader_root = state.level_leader_index[root];
  }
  static_cast<NodeLevelsExecution&>(execution).Restart(levels, state.levels_starting,
                                                       state.levels_unfinished);
}

absl::Status Communicator::Blocking(std::optional<absl::Time> deadline,
                                    absl::FunctionRef<absl::StatusOr<Request>()> start) {
  if (state_ != nullptr) {
    state_->blocking = true;
    state_->blocking_deadline = deadline;
  }
  absl::StatusOr<Request> request = start();
  // (Cleared by StartCollective, unless the I-form refused its arguments before it.)
  if (state_ != nullptr) state_->blocking = false;
  if (!request.ok()) return request.status();
  // (A call that ran to its end returned a finished Request.)
  if (request->pending_ == nullptr) return request->status_;
  return request->Wait(deadline);
}

absl::StatusOr<Request> Communicator::StartCollective(const CollectiveCall& call) {
  // A moved-from communicator: the checker said so.
  if (ABSL_PREDICT_FALSE(state_ == nullptr)) return call.invalid;
  State& state = *state_;
  const bool blocking = std::exchange(state.blocking, false);
  CommunicatorTransport& transport = *state.transport;
  JobConnection& job = transport.job();
  if (ABSL_PREDICT_FALSE(job.failed())) return job.FailureStatus();
  // The peers have entered (or will enter) the collective: a refusal here fails the
  // job, so that they return at once.
  if (!call.invalid.ok()) return Failed(call.invalid);
  const bool reduces = IsReduction(call.args.collective);
  if (ArgumentCheckEnabled()) {
    const Signature mine = MakeSignature(call.FullArgs(), call.type, call.op, reduces);
    absl::StatusOr<std::vector<char>> all = ExchangeRecords(
        transport, absl::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)),
        DefaultDeadline());
    if (!all.ok()) return Failed(all.status());
    for (int r = 0; r < size(); ++r) {
      Signature theirs;
      std::memcpy(&theirs, all->data() + r * sizeof(Signature), sizeof(Signature));
      if (std::memcmp(&theirs, &mine, sizeof(Signature)) != 0) {
        return Failed(absl::InvalidArgumentError(absl::StrCat(
            "rank ", rank(), ": ", call.name, " (ZCOLL_CHECK): rank ", r, " ",
            DescribeDifference(mine, theirs), " where this rank passed other arguments")));
      }
    }
  }
  absl::StatusOr<CachedPlan*> cached = FindOrMakePlan(call);
  if (!cached.ok()) return cached.status();
  if (ABSL_PREDICT_FALSE(state.initializing != nullptr)) {
    // A persistent collective's init (Persistent): its plan is kept, not run.
    state.initializing->Keep(call, **cached);
    return Request();
  }
  return Launch(state, call, **cached, blocking);
}

// (Inlined: the quick calls' path is a few hundred instructions, a call's own entry and
// exit about twenty.)
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status Communicator::RunNodeCallToEnd(
    State& state, NodeExecution& execution, std::optional<absl::Time> deadline, bool decided) {
  CommunicatorTransport& transport = *state.transport;
  absl::Status status = execution.RunToEnd(
      transport, [&] { return deadline.has_value() ? *deadline : DeadlineAfterTimeout(state); },
      decided);
  if (!status.ok() && absl::IsDeadlineExceeded(status)) {
    status = OverdueError(transport, execution, execution.next_call().name, state.timeout,
                          state.timeout_source, deadline.has_value());
  }
  if (status.ok()) status = execution.status();
  // As a failed Request does, the caller drops the execution (leaving the call if it
  // had not) and fails the job so that the peers learn.
  return status;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Communicator::QuickCallFits(
    Collective collective, const void* send, const void* recv, size_t count, DataType type,
    const ReduceOp& op, int root, const std::array<absl::Span<const size_t>, 4>& vectors) const {
  if (state_ == nullptr) return false;
  const State& state = *state_;
  const State::QuickNodeCall& quick = state.quick[static_cast<size_t>(collective)];
  // (A Scatter's root scatters in place by its receive buffer; Bcast and Barrier pass
  // no send buffer, never in place.)
  const bool scatters = collective == Collective::kScatter || collective == Collective::kScatterv;
  const bool in_place = (scatters ? recv : send) == kInPlace;
  if (!quick.valid || quick.count != count || quick.type != type || quick.root != root ||
      quick.in_place != in_place || !op.is_predefined() || quick.op != op.predefined() ||
      state.in_flight != 0) {
    return false;
  }
  // The buffers (the count was checked against the communicator's size when the key
  // was made): this list is the collectives that have a quick path.
  const size_t bytes = quick.bytes, all = quick.all_bytes;
  const bool at_root = quick.at_root;
  // (The v-collectives': the key's, held by its execution.)
  const std::array<absl::Span<const size_t>, 4>& key_vectors = quick.execution->call().vectors;
  switch (collective) {
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan:
      return send != nullptr && RealBuffer(recv) && !BuffersOverlap(send, bytes, recv, bytes);
    case Collective::kReduce:
      return send != nullptr &&
             (!at_root || (RealBuffer(recv) && !BuffersOverlap(send, bytes, recv, bytes)));
    case Collective::kBcast:
      return RealBuffer(recv);
    case Collective::kBarrier:
      return true;
    case Collective::kScatterv:
      // (The root's vectors: elsewhere they are not used.)
      if (at_root && !SameCountsAndDispls(vectors, key_vectors)) return false;
      [[fallthrough]];
    case Collective::kScatter:
      return at_root
                 ? RealBuffer(send) && recv != nullptr && !BuffersOverlap(send, all, recv, bytes)
                 : RealBuffer(recv);
    case Collective::kGatherv:
      if (at_root && !SameCountsAndDispls(vectors, key_vectors)) return false;
      [[fallthrough]];
    case Collective::kGather:
      return at_root
                 ? RealBuffer(recv) && send != nullptr && !BuffersOverlap(send, bytes, recv, all)
                 : RealBuffer(send);
    case Collective::kReduceScatter:
      if (!SameVectors(vectors, key_vectors)) return false;
      [[fallthrough]];
    case Collective::kReduceScatterBlock:
      return send != nullptr && RealBuffer(recv) && !BuffersOverlap(send, all, recv, bytes);
    case Collective::kAllgatherv:
      if (!SameVectors(vectors, key_vectors)) return false;
      [[fallthrough]];
    case Collective::kAllgather:
      return send != nullptr && RealBuffer(recv) && !BuffersOverlap(send, bytes, recv, all);
    case Collective::kAlltoallv:
      // (`bytes`: what it sends, `all`: what it receives.)
      return SameVectors(vectors, key_vectors) && send != nullptr && RealBuffer(recv) &&
             !BuffersOverlap(send, bytes, recv, all);
    case Collective::kAlltoall:
      return send != nullptr && RealBuffer(recv) && !BuffersOverlap(send, all, recv, all);
    default:
      return false;
  }
}

absl::Status Communicator::RunQuickNodeCall(Collective collective, const void* send, void* recv,
                                            std::optional<absl::Time> deadline) {
  State& state = *state_;
  state.blocking = false;
  JobConnection& job = state.transport->job();
  if (ABSL_PREDICT_FALSE(job.failed())) return job.FailureStatus();
  State::QuickNodeCall& quick = state.quick[static_cast<size_t>(collective)];
  // As Launch numbers every call (schedules' tags count them on every rank alike).
  ++state.collectives_started;
  NodeExecution& execution = *quick.execution;
  NodeExecution::Call& next = execution.next_call();
  next.sequence = state.node->TakeSequence();
  next.send = send;
  next.recv = recv;
  if (absl::Status status = RunNodeCallToEnd(state, execution, deadline, /*decided=*/true);
      !status.ok()) {
    // (The execution goes with the failure: the next call takes the general path.)
    quick.valid = false;
    quick.execution.reset();
    return job.Fail(status);
  }
  return absl::OkStatus();
}

absl::StatusOr<Request> Communicator::StartPlan(const char* name, Collective collective,
                                                std::shared_ptr<const ExecutionPlan> plan,
                                                uint32_t plan_check, DataType type,
                                                const ReduceOp& op, const void* send, void* recv,
                                                void* result, size_t result_count,
                                                size_t contributions) {
  if (ABSL_PREDICT_FALSE(state_ == nullptr)) return MovedFromError(name);
  JobConnection& job = state_->transport->job();
  if (ABSL_PREDICT_FALSE(job.failed())) return job.FailureStatus();
  CollectiveCall call(name, op);
  call.args.collective = collective;
  call.args.size = size();
  call.args.element_bytes = DataTypeSize(type);
  call.args.commutative = op.commutative();
  call.type = type;
  call.send = send;
  call.recv = recv;
  call.result = result;
  call.result_count = result_count;
  call.contributions = contributions;
  CachedPlan cached;
  cached.plan = std::move(plan);
  cached.plan_check = plan_check;
  if (ABSL_PREDICT_FALSE(state_->initializing != nullptr)) {
    // A persistent intercommunicator collective's init (Persistent): kept, not run.
    state_->initializing->Keep(call, cached);
    return Request();
  }
  return Launch(*state_, call, cached, /*blocking=*/false);
}

absl::StatusOr<Communicator::CachedPlan*> Communicator::FindOrMakePlan(const CollectiveCall& call) {
  State& state = *state_;
  const Algorithm* requested = state.forced[static_cast<size_t>(call.args.collective)];
  if (requested == nullptr) {
    requested = state.from_environment[static_cast<size_t>(call.args.collective)];
  }
  // The plan: from the cache (the last call's first), or made now. Equal keys had
  // their algorithm chosen, and checked, when the plan was made.
  auto matches = [&](const State::CachedPlan& cached) {
    return cached.key.requested == requested && cached.key.args == call.args &&
           (!call.has_vectors || SameVectors(call.vectors, cached.key.vectors));
  };
  bool found = state.last_plan < state.plans.size() && matches(state.plans[state.last_plan]);
  for (size_t i = 0; !found && i < state.plans.size(); ++i) {
    if (matches(state.plans[i])) {
      state.last_plan = i;
      found = true;
    }
  }
  if (!found) {
    const CollectiveArgs full = call.FullArgs();
    // The choice sees only what every rank of the call passes alike.
    SelectionInputs inputs = AgreedSelectionInputs(
        full, state.topology, state.node != nullptr,
        state.node != nullptr && state.node->single_copy(),
        state.node != nullptr && state.node->oversubscribed(), state.node_level != nullptr);
    inputs.link_sharers = state.link_sharers;
    inputs.hosts_oversubscribed = state.hosts_oversubscribed;
    const Algorithm* algorithm = requested;
    if (algorithm != nullptr) {
      if (absl::Status status = CheckAlgorithmCanRun(*algorithm, inputs); !status.ok()) {
        return Failed(absl::InvalidArgumentError(
            absl::StrCat("rank ", rank(), ": ", call.name, ": ", status.message())));
      }
    } else {
      algorithm = &SelectAlgorithm(inputs);
    }
    // (Once per plan: which algorithm runs a call is what a user tuning a job asks.)
    ZCOLL_LOG(DEBUG) << "rank " << rank() << ": " << call.name << " of "
                     << (inputs.bytes.has_value() ? absl::StrCat(*inputs.bytes, " bytes")
                                                  : std::string("vectors"))
                     << " on " << full.size << " ranks: " << algorithm->name
                     << (requested != nullptr ? " (forced)" : "")
                     << (inputs.link_sharers > 1
                             ? absl::StrCat(" (chosen as ", inputs.link_sharers,
                                            " times the bytes: its node's stripes share its link)")
                             : std::string());
    // A node algorithm has no plan: it runs on the node's segment.
    std::shared_ptr<const ExecutionPlan> plan;
    if (algorithm->runs_schedule()) {
      plan = std::make_shared<const ExecutionPlan>(
          algorithm->generate(full, state.topology, rank()), call.args.element_bytes);
    }
    constexpr size_t kCachedPlans = 16;
    if (state.plans.size() >= kCachedPlans) {
      auto oldest = std::min_element(state.plans.begin(), state.plans.end(),
                                     [](const State::CachedPlan& a, const State::CachedPlan& b) {
                                       return a.last_used < b.last_used;
                                     });
      state.plans.erase(oldest);
    }
    PlanKey key{
        requested, call.args, {full.counts, full.displs, full.recv_counts, full.recv_displs}};
    // What every rank passes alike, and the algorithm they chose from it.
    const std::optional<size_t> agreed_bytes = full.AgreedMessageBytes();
    const uint32_t plan_check =
        MixCheck({static_cast<uint64_t>(full.collective),
                  static_cast<uint64_t>(algorithm - AllAlgorithms().data()),
                  static_cast<uint64_t>(full.size),
                  IsRooted(full.collective) ? static_cast<uint64_t>(full.root) : ~uint64_t{0},
                  agreed_bytes.has_value() ? *agreed_bytes : ~uint64_t{0}});
    state.plans.push_back({std::move(key), std::move(plan), 0, plan_check});
    state.plans.back().node_levels = algorithm->node_levels;
    state.plans.back().node_stripes = algorithm->runs_by_stripes();
    state.last_plan = state.plans.size() - 1;
  }
  return &state.plans[state.last_plan];
}

absl::StatusOr<Request> Communicator::Launch(State& state, const CollectiveCall& call,
                                             CachedPlan& cached, bool blocking) {
  CommunicatorTransport& transport = *state.transport;
  JobConnection& job = transport.job();
  const bool reduces = IsReduction(call.args.collective);
  if (ABSL_PREDICT_FALSE(static_cast<uint64_t>(state.in_flight) >= kSequenceNumbers)) {
    return job.Fail(absl::ResourceExhaustedError(
        absl::StrCat("rank ", transport.rank(), ": ", call.name, ": ", state.in_flight,
                     " nonblocking collectives are in flight on this communicator; wait for "
                     "some before starting more")));
  }
  cached.last_used = state.collectives_started;
  // Not copied: an execution rerunning its last plan keeps it without touching the
  // shared count (atomic operations cost tens of cycles each).
  const std::shared_ptr<const ExecutionPlan>& plan = cached.plan;
  const uint64_t sequence = state.collectives_started++ % kSequenceNumbers;
  const bool average =
      reduces && call.op.is_predefined() && call.op.predefined() == PredefinedOp::kAvg;
  const ReduceOp& op = average ? kSumOp : call.op;
  // What AVG divides by.
  const size_t contributions =
      call.contributions > 0 ? call.contributions : static_cast<size_t>(transport.size());
  // The call's check word: the plan's, the type and the op (remembered for a loop of
  // equal calls).
  const uint32_t check_key =
      (static_cast<uint32_t>(call.type) << 16) |
      (!reduces                  ? 0xffffu
       : call.op.is_predefined() ? static_cast<uint32_t>(call.op.predefined())
                                 : 0x100u + (call.op.commutative() ? 1u : 0u));
  if (cached.call_check_key != check_key) {
    cached.call_check_key = check_key;
    cached.call_check = cached.plan_check ^ MixCheck({check_key});
  }
  // A fresh request, or one that finished without error (its memory reused), of the
  // kind `idle` holds.
  auto take_request = [&](std::vector<std::unique_ptr<Request::Pending>>& idle, auto make) {
    std::unique_ptr<Request::Pending> pending;
    if (idle.empty()) {
      pending = std::make_unique<Request::Pending>();
      pending->execution = make();
      pending->idle_requests = &idle;
      pending->transport = &transport;
      pending->scratch_pool = &state.scratch;
      pending->in_flight = &state.in_flight;
    } else {
      pending = std::move(idle.back());
      idle.pop_back();
    }
    return pending;
  };
  // A node call's arguments, written into its execution (not copied in: every small
  // call makes one); started by RunToEnd or Restart.
  auto load_node_call = [&](NodeExecution& execution) {
    NodeExecution::Call& next = execution.next_call();
    next.collective = call.args.collective;
    next.sequence = state.node->TakeSequence();
    next.check = cached.call_check;
    next.type = call.type;
    next.op = op;
    next.send = call.send;
    next.recv = call.recv;
    next.count = call.args.count;
    next.element_bytes = call.args.element_bytes;
    next.root = call.args.root;
    next.in_place = call.args.in_place;
    next.name = call.name;
    next.vectors = call.vectors;
    next.has_vectors = call.has_vectors;
  };
  if (blocking && plan == nullptr && !cached.node_levels && state.in_flight == 0) {
    // A blocking call on the node's segment, nothing else in flight: it runs here to
    // its end, without a Request (about a third of a small call's instructions).
    if (state.blocking_node == nullptr) {
      state.blocking_node = std::make_unique<NodeExecution>(*state.node, transport, state.scratch);
    }
    NodeExecution& execution = *state.blocking_node;
    load_node_call(execution);
    State::QuickNodeCall& quick = state.quick[static_cast<size_t>(call.args.collective)];
    quick.valid = false;
    absl::Status status =
        RunNodeCallToEnd(state, execution, state.blocking_deadline, /*decided=*/false);
    // (A failed execution went with its call: the next one is made anew.)
    if (!status.ok()) state.blocking_node.reset();
    if (status.ok() && average && call.result_count > 0) {
      status = FinishAverage(call.type, call.result, call.result_count, contributions);
    }
    if (!status.ok()) return job.Fail(status);
    // A loop of equal calls repeats this one the quick way, where its collective has
    // one (QuickCallFits).
    quick.valid = !ArgumentCheckEnabled() && call.op.is_predefined() && !average;
    if (quick.valid) {
      quick.count = call.args.count;
      quick.type = call.type;
      quick.op = call.op.predefined();
      quick.root = call.args.root;
      quick.in_place = call.args.in_place;
      quick.bytes = Bytes(call.args.count, call.type);
      quick.all_bytes = quick.bytes * static_cast<size_t>(transport.size());
      quick.at_root = transport.rank() == call.args.root;
      if (quick.execution == nullptr) {
        quick.execution = std::make_unique<NodeExecution>(*state.node, transport, state.scratch);
      }
      quick.execution->next_call() = execution.next_call();
      // (Its own copy of the vectors, the key's: the call's are the caller's.)
      quick.execution->DecideForRepeats();
      // The v-collectives' byte counts, as their checkers measured them.
      const std::array<absl::Span<const size_t>, 4>& v = call.vectors;
      auto extent = [&](size_t counts, size_t displs) {
        return Bytes(internal_collectives::SaturatingExtent(v[counts], v[displs]), call.type);
      };
      switch (call.args.collective) {
        case Collective::kScatterv:
        case Collective::kGatherv:
          // The root's extent (elsewhere no vectors, and none is used).
          if (!v[0].empty()) quick.all_bytes = extent(0, 1);
          break;
        case Collective::kAllgatherv:
          quick.all_bytes = extent(0, 1);
          break;
        case Collective::kReduceScatter:
          quick.bytes = Bytes(v[0][transport.rank()], call.type);
          quick.all_bytes = Bytes(internal_collectives::SaturatingSum(v[0]), call.type);
          break;
        case Collective::kAlltoallv:
          // What this rank sends (nothing apart in place) and what it receives.
          quick.bytes = call.args.in_place ? 0 : extent(0, 1);
          quick.all_bytes = extent(2, 3);
          break;
        default:
          break;
      }
    }
    return Request();
  }
  std::unique_ptr<Request::Pending> pending;
  if (cached.node_levels) {
    pending = take_request(state.idle_level_requests,
                           [] { return std::make_shared<NodeLevelsExecution>(); });
    RestartNodeLevels(state, call, op, cached.node_stripes, *pending->execution);
  } else if (plan == nullptr) {
    // On the node's segment.
    pending = take_request(state.idle_node_requests, [&] {
      return std::make_shared<NodeExecution>(*state.node, transport, state.scratch);
    });
    auto& execution = static_cast<NodeExecution&>(*pending->execution);
    load_node_call(execution);
    execution.Restart();
  } else {
    std::shared_ptr<ScratchArena> scratch;
    if (plan->scratch_bytes() > 0) scratch = state.scratch.Acquire(plan->scratch_bytes());
    // The calls before this one, when none is in flight: any message of theirs still
    // waiting once this one completes was never to be received.
    Execution::Predecessors predecessors;
    predecessors.tag_bases.fill(sequence << kScheduleTagBits);
    if (state.in_flight == 0) {
      uint64_t earlier = sequence;
      while (predecessors.count < predecessors.tag_bases.size() &&
             predecessors.count + 1 < state.collectives_started) {
        earlier = earlier == 0 ? kSequenceNumbers - 1 : earlier - 1;
        predecessors.tag_bases[predecessors.count++] = earlier << kScheduleTagBits;
      }
    }
    bool fresh = false;
    pending = take_request(state.idle_requests, [&] {
      fresh = true;
      return std::make_shared<Execution>(plan, transport, sequence << kScheduleTagBits, call.type,
                                         op, call.send, call.recv, std::move(scratch),
                                         cached.call_check, call.name, predecessors);
    });
    if (!fresh) {
      static_cast<Execution&>(*pending->execution)
          .Restart(plan, sequence << kScheduleTagBits, call.type, op, call.send, call.recv,
                   std::move(scratch), cached.call_check, call.name, predecessors);
    }
  }
  pending->name = call.name;
  pending->timeout = state.timeout;
  pending->timeout_source = state.timeout_source;
  pending->deadline = DeadlineAfterTimeout(state);
  if (average && call.result_count > 0) {
    pending->finish = [type = call.type, result = call.result, count = call.result_count,
                       contributions] { return FinishAverage(type, result, count, contributions); };
  }
  ++state.in_flight;
  // The first steps start now, not at the first Wait or Test: a message leaves (and a
  // receive is posted) while the caller is still returning from the call, and a
  // nonblocking collective makes progress from its start. A failure stays in the
  // execution until Wait or Test reports it.
  pending->execution->Advance();
  return Request(std::move(pending));
}

absl::StatusOr<Request> Communicator::IReduce(const void* send, void* recv, size_t count,
                                              DataType type, const ReduceOp& op, int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kReduce, send, recv, count, type, op, root)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kReduce, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Reduce");
  check.Type(type);
  check.Op(op, type);
  check.Root(root);
  check.Count("count", count, type);
  const bool at_root = rank() == root;
  check.Buffer("send", send, count, at_root, "only the root may reduce in place");
  if (at_root) {
    check.Buffer("recv", recv, count, false);
    check.Disjoint(send, Bytes(count, type), recv, Bytes(count, type));
  }
  CollectiveCall call(check, Collective::kReduce, type, send, recv, &op);
  call.args.root = root;
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  if (at_root) {
    call.result = recv;
    call.result_count = count;
  }
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IAllreduce(const void* send, void* recv, size_t count,
                                                 DataType type, const ReduceOp& op) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kAllreduce, send, recv, count, type, op, 0)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kAllreduce, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Allreduce");
  check.Type(type);
  check.Op(op, type);
  check.Count("count", count, type);
  check.Buffer("send", send, count, true);
  check.Buffer("recv", recv, count, false);
  check.Disjoint(send, Bytes(count, type), recv, Bytes(count, type));
  CollectiveCall call(check, Collective::kAllreduce, type, send, recv, &op);
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  call.result = recv;
  call.result_count = count;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IReduceScatterBlock(const void* send, void* recv,
                                                          size_t recv_count, DataType type,
                                                          const ReduceOp& op) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kReduceScatterBlock, send, recv, recv_count, type, op, 0)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kReduceScatterBlock, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "ReduceScatterBlock");
  check.Type(type);
  check.Op(op, type);
  check.Count("recv_count", recv_count, type);
  const size_t total = check.PerRank("recv_count", recv_count, type);
  const bool in_place = send == kInPlace;
  check.Buffer("send", send, total, true);
  check.Buffer("recv", recv, in_place ? total : recv_count, false);
  check.Disjoint(send, Bytes(total, type), recv, Bytes(recv_count, type));
  CollectiveCall call(check, Collective::kReduceScatterBlock, type, send, recv, &op);
  call.args.count = recv_count;
  call.args.in_place = in_place;
  call.result = recv;
  call.result_count = recv_count;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IReduceScatter(const void* send, void* recv,
                                                     absl::Span<const size_t> recv_counts,
                                                     DataType type, const ReduceOp& op) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kReduceScatter, send, recv, 0, type, op, 0,
                    {recv_counts, {}, {}, {}})) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kReduceScatter, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "ReduceScatter");
  check.Type(type);
  check.Op(op, type);
  size_t total = 0;
  if (recv_counts.size() != static_cast<size_t>(size())) {
    check.Fail(
        absl::StrCat("recv_counts has ", recv_counts.size(), " entries for ", size(), " ranks"));
  } else {
    total = internal_collectives::SaturatingSum(recv_counts);
    if (total > std::numeric_limits<size_t>::max() / 2) {
      check.Fail("the sum of recv_counts overflows");
      total = 0;
    }
  }
  check.Count("the sum of recv_counts", total, type);
  const size_t mine = check.status().ok() ? recv_counts[rank()] : 0;
  const bool in_place = send == kInPlace;
  check.Buffer("send", send, total, true);
  check.Buffer("recv", recv, in_place ? total : mine, false);
  check.Disjoint(send, Bytes(total, type), recv, Bytes(mine, type));
  CollectiveCall call(check, Collective::kReduceScatter, type, send, recv, &op);
  if (check.status().ok()) call.vectors[0] = recv_counts;
  call.args.in_place = in_place;
  call.result = recv;
  call.result_count = mine;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IScatter(const void* send, void* recv, size_t count,
                                               DataType type, int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kScatter, send, recv, count, type, kSumOp, root)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kScatter, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Scatter");
  check.Type(type);
  check.Root(root);
  check.Count("count", count, type);
  const size_t total = check.PerRank("count", count, type);
  const bool at_root = rank() == root;
  if (at_root) check.Buffer("send", send, total, false);
  check.Buffer("recv", recv, count, at_root, "only the root may scatter in place");
  if (at_root) check.Disjoint(send, Bytes(total, type), recv, Bytes(count, type));
  CollectiveCall call(check, Collective::kScatter, type, send, recv);
  call.args.root = root;
  call.args.count = count;
  call.args.in_place = recv == kInPlace;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IScatterv(const void* send,
                                                absl::Span<const size_t> send_counts,
                                                absl::Span<const size_t> displs, void* recv,
                                                size_t recv_count, DataType type, int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kScatterv, send, recv, recv_count, type, kSumOp, root,
                    {send_counts, displs, {}, {}})) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kScatterv, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Scatterv");
  check.Type(type);
  check.Root(root);
  check.Count("recv_count", recv_count, type);
  const bool at_root = rank() == root;
  const bool in_place = recv == kInPlace;
  size_t extent = 0;
  if (at_root) {
    extent = check.Layout("send_counts and displs", send_counts, displs, type);
    if (check.status().ok() && !in_place && send_counts[rank()] != recv_count) {
      check.Fail(absl::StrCat("the root sends itself send_counts[", rank(), "] = ",
                              send_counts[rank()], " elements but recv_count is ", recv_count));
    }
    check.Buffer("send", send, extent, false);
  }
  check.Buffer("recv", recv, recv_count, at_root, "only the root may scatter in place");
  if (at_root) check.Disjoint(send, Bytes(extent, type), recv, Bytes(recv_count, type));
  CollectiveCall call(check, Collective::kScatterv, type, send, recv);
  call.args.root = root;
  call.args.count = recv_count;
  call.args.in_place = in_place;
  if (at_root && check.status().ok()) call.vectors = {send_counts, displs};
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IBcast(void* buffer, size_t count, DataType type, int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kBcast, nullptr, buffer, count, type, kSumOp, root)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kBcast, nullptr, buffer, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Bcast");
  check.Type(type);
  check.Root(root);
  check.Count("count", count, type);
  check.Buffer("buffer", buffer, count, false);
  CollectiveCall call(check, Collective::kBcast, type, nullptr, buffer);
  call.args.root = root;
  call.args.count = count;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IGather(const void* send, void* recv, size_t count,
                                              DataType type, int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kGather, send, recv, count, type, kSumOp, root)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kGather, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Gather");
  check.Type(type);
  check.Root(root);
  check.Count("count", count, type);
  const size_t total = check.PerRank("count", count, type);
  const bool at_root = rank() == root;
  check.Buffer("send", send, count, at_root, "only the root may gather in place");
  if (at_root) {
    check.Buffer("recv", recv, total, false);
    check.Disjoint(send, Bytes(count, type), recv, Bytes(total, type));
  }
  CollectiveCall call(check, Collective::kGather, type, send, recv);
  call.args.root = root;
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IGatherv(const void* send, size_t send_count, void* recv,
                                               absl::Span<const size_t> recv_counts,
                                               absl::Span<const size_t> displs, DataType type,
                                               int root) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kGatherv, send, recv, send_count, type, kSumOp, root,
                    {recv_counts, displs, {}, {}})) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kGatherv, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Gatherv");
  check.Type(type);
  check.Root(root);
  check.Count("send_count", send_count, type);
  const bool at_root = rank() == root;
  const bool in_place = send == kInPlace;
  check.Buffer("send", send, send_count, at_root, "only the root may gather in place");
  size_t extent = 0;
  if (at_root) {
    extent = check.Layout("recv_counts and displs", recv_counts, displs, type);
    if (check.status().ok() && !in_place && recv_counts[rank()] != send_count) {
      check.Fail(absl::StrCat("the root expects recv_counts[", rank(), "] = ", recv_counts[rank()],
                              " elements from itself but send_count is ", send_count));
    }
    check.Buffer("recv", recv, extent, false);
    check.Disjoint(send, Bytes(send_count, type), recv, Bytes(extent, type));
  }
  CollectiveCall call(check, Collective::kGatherv, type, send, recv);
  call.args.root = root;
  call.args.in_place = in_place;
  if (at_root && check.status().ok()) {
    call.vectors = {recv_counts, displs};
    if (in_place) send_count = recv_counts[rank()];
  }
  call.args.count = send_count;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IAllgather(const void* send, void* recv, size_t count,
                                                 DataType type) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kAllgather, send, recv, count, type, kSumOp, 0)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kAllgather, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Allgather");
  check.Type(type);
  check.Count("count", count, type);
  const size_t total = check.PerRank("count", count, type);
  check.Buffer("send", send, count, true);
  check.Buffer("recv", recv, total, false);
  check.Disjoint(send, Bytes(count, type), recv, Bytes(total, type));
  CollectiveCall call(check, Collective::kAllgather, type, send, recv);
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IAllgatherv(const void* send, size_t send_count, void* recv,
                                                  absl::Span<const size_t> recv_counts,
                                                  absl::Span<const size_t> displs, DataType type) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kAllgatherv, send, recv, send_count, type, kSumOp, 0,
                    {recv_counts, displs, {}, {}})) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kAllgatherv, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Allgatherv");
  check.Type(type);
  const bool in_place = send == kInPlace;
  const size_t extent = check.Layout("recv_counts and displs", recv_counts, displs, type);
  if (check.status().ok() && !in_place && recv_counts[rank()] != send_count) {
    check.Fail(absl::StrCat("recv_counts[", rank(), "] = ", recv_counts[rank()],
                            " but this rank sends send_count = ", send_count, " elements"));
  }
  check.Buffer("send", send, send_count, true);
  check.Buffer("recv", recv, extent, false);
  check.Disjoint(send, Bytes(send_count, type), recv, Bytes(extent, type));
  CollectiveCall call(check, Collective::kAllgatherv, type, send, recv);
  call.args.in_place = in_place;
  if (check.status().ok()) {
    call.vectors = {recv_counts, displs};
    call.args.count = recv_counts[rank()];
  }
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IAlltoall(const void* send, void* recv, size_t count,
                                                DataType type) {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kAlltoall, send, recv, count, type, kSumOp, 0)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kAlltoall, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Alltoall");
  check.Type(type);
  check.Count("count", count, type);
  const size_t total = check.PerRank("count", count, type);
  check.Buffer("send", send, total, true);
  check.Buffer("recv", recv, total, false);
  check.Disjoint(send, Bytes(total, type), recv, Bytes(total, type));
  CollectiveCall call(check, Collective::kAlltoall, type, send, recv);
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IAlltoallv(const void* send,
                                                 absl::Span<const size_t> send_counts,
                                                 absl::Span<const size_t> send_displs, void* recv,
                                                 absl::Span<const size_t> recv_counts,
                                                 absl::Span<const size_t> recv_displs,
                                                 DataType type) {
  // (In place the input has the output's layout: the vectors as the call records them.)
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kAlltoallv, send, recv, 0, type, kSumOp, 0,
                    {send == kInPlace ? recv_counts : send_counts,
                     send == kInPlace ? recv_displs : send_displs, recv_counts, recv_displs})) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kAlltoallv, send, recv, state_->blocking_deadline));
  }
  ArgumentChecker check(rank(), size(), "Alltoallv");
  check.Type(type);
  const bool in_place = send == kInPlace;
  const size_t send_extent =
      in_place ? 0 : check.Layout("send_counts and send_displs", send_counts, send_displs, type);
  const size_t recv_extent =
      check.Layout("recv_counts and recv_displs", recv_counts, recv_displs, type);
  check.Buffer("send", send, send_extent, true);
  check.Buffer("recv", recv, recv_extent, false);
  check.Disjoint(send, Bytes(send_extent, type), recv, Bytes(recv_extent, type));
  CollectiveCall call(check, Collective::kAlltoallv, type, send, recv);
  call.args.in_place = in_place;
  if (check.status().ok()) {
    // In place the input has the output's layout.
    call.vectors = {in_place ? recv_counts : send_counts, in_place ? recv_displs : send_displs,
                    recv_counts, recv_displs};
  }
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IBarrier() {
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(Collective::kBarrier, nullptr, nullptr, 0, DataType::kUint8, kSumOp, 0)) {
    return FinishedRequest(
        RunQuickNodeCall(Collective::kBarrier, nullptr, nullptr, state_->blocking_deadline));
  }
  // Nothing to check: the checker only names the call.
  const ArgumentChecker check(rank(), size(), "Barrier");
  CollectiveCall call(check, Collective::kBarrier, DataType::kUint8, nullptr, nullptr);
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IScanOrExscan(const void* send, void* recv, size_t count,
                                                    DataType type, const ReduceOp& op,
                                                    bool exclusive) {
  const Collective collective = exclusive ? Collective::kExscan : Collective::kScan;
  if (state_ != nullptr && state_->blocking &&
      QuickCallFits(collective, send, recv, count, type, op, 0)) {
    return FinishedRequest(RunQuickNodeCall(collective, send, recv, state_->blocking_deadline));
  }
  const char* name = exclusive ? "Exscan" : "Scan";
  ArgumentChecker check(rank(), size(), name);
  check.Type(type);
  check.Op(op, type);
  check.Count("count", count, type);
  check.Buffer("send", send, count, true);
  check.Buffer("recv", recv, count, false);
  check.Disjoint(send, Bytes(count, type), recv, Bytes(count, type));
  CollectiveCall call(check, exclusive ? Collective::kExscan : Collective::kScan, type, send, recv,
                      &op);
  call.args.count = count;
  call.args.in_place = send == kInPlace;
  // Rank r's result combines r + 1 contributions (r for an exscan; none at rank 0).
  const size_t contributions = static_cast<size_t>(rank()) + (exclusive ? 0 : 1);
  if (contributions > 0) {
    call.result = recv;
    call.result_count = count;
    call.contributions = contributions;
  }
  return StartCollective(call);
}

absl::StatusOr<Request> Communicator::IScan(const void* send, void* recv, size_t count,
                                            DataType type, const ReduceOp& op) {
  return IScanOrExscan(send, recv, count, type, op, /*exclusive=*/false);
}

absl::StatusOr<Request> Communicator::IExscan(const void* send, void* recv, size_t count,
                                              DataType type, const ReduceOp& op) {
  return IScanOrExscan(send, recv, count, type, op, /*exclusive=*/true);
}

// The blocking forms: start, then wait.
absl::Status Communicator::Reduce(const void* send, void* recv, size_t count, DataType type,
                                  const ReduceOp& op, int root,
                                  std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kReduce, send, recv, count, type, op, root))
    return RunQuickNodeCall(Collective::kReduce, send, recv, deadline);
  return BlockingAfterQuickTest(deadline,
                                [=, this] { return IReduce(send, recv, count, type, op, root); });
}

absl::Status Communicator::Allreduce(const void* send, void* recv, size_t count, DataType type,
                                     const ReduceOp& op, std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kAllreduce, send, recv, count, type, op, 0))
    return RunQuickNodeCall(Collective::kAllreduce, send, recv, deadline);
  return BlockingAfterQuickTest(deadline,
                                [=, this, &op] { return IAllreduce(send, recv, count, type, op); });
}

absl::Status Communicator::ReduceScatterBlock(const void* send, void* recv, size_t recv_count,
                                              DataType type, const ReduceOp& op,
                                              std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kReduceScatterBlock, send, recv, recv_count, type, op, 0)) {
    return RunQuickNodeCall(Collective::kReduceScatterBlock, send, recv, deadline);
  }
  return BlockingAfterQuickTest(
      deadline, [=, this, &op] { return IReduceScatterBlock(send, recv, recv_count, type, op); });
}

absl::Status Communicator::ReduceScatter(const void* send, void* recv,
                                         absl::Span<const size_t> recv_counts, DataType type,
                                         const ReduceOp& op, std::optional<absl::Time> deadline) {
  if (QuickCallFits(Collective::kReduceScatter, send, recv, 0, type, op, 0,
                    {recv_counts, {}, {}, {}})) {
    return RunQuickNodeCall(Collective::kReduceScatter, send, recv, deadline);
  }
  return BlockingAfterQuickTest(
      deadline, [=, this, &op] { return IReduceScatter(send, recv, recv_counts, type, op); });
}

absl::Status Communicator::Scatter(const void* send, void* recv, size_t count, DataType type,
                                   int root, std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kScatter, send, recv, count, type, kSumOp, root)) {
    return RunQuickNodeCall(Collective::kScatter, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline,
                                [=, this] { return IScatter(send, recv, count, type, root); });
}

absl::Status Communicator::Scatterv(const void* send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> displs, void* recv, size_t recv_count,
                                    DataType type, int root, std::optional<absl::Time> deadline) {
  if (QuickCallFits(Collective::kScatterv, send, recv, recv_count, type, kSumOp, root,
                    {send_counts, displs, {}, {}})) {
    return RunQuickNodeCall(Collective::kScatterv, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline, [=, this] {
    return IScatterv(send, send_counts, displs, recv, recv_count, type, root);
  });
}

absl::Status Communicator::Bcast(void* buffer, size_t count, DataType type, int root,
                                 std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kBcast, nullptr, buffer, count, type, kSumOp, root))
    return RunQuickNodeCall(Collective::kBcast, nullptr, buffer, deadline);
  return BlockingAfterQuickTest(deadline, [=, this] { return IBcast(buffer, count, type, root); });
}

absl::Status Communicator::Gather(const void* send, void* recv, size_t count, DataType type,
                                  int root, std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kGather, send, recv, count, type, kSumOp, root)) {
    return RunQuickNodeCall(Collective::kGather, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline,
                                [=, this] { return IGather(send, recv, count, type, root); });
}

absl::Status Communicator::Gatherv(const void* send, size_t send_count, void* recv,
                                   absl::Span<const size_t> recv_counts,
                                   absl::Span<const size_t> displs, DataType type, int root,
                                   std::optional<absl::Time> deadline) {
  if (QuickCallFits(Collective::kGatherv, send, recv, send_count, type, kSumOp, root,
                    {recv_counts, displs, {}, {}})) {
    return RunQuickNodeCall(Collective::kGatherv, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline, [=, this] {
    return IGatherv(send, send_count, recv, recv_counts, displs, type, root);
  });
}

absl::Status Communicator::Allgather(const void* send, void* recv, size_t count, DataType type,
                                     std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kAllgather, send, recv, count, type, kSumOp, 0)) {
    return RunQuickNodeCall(Collective::kAllgather, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline,
                                [=, this] { return IAllgather(send, recv, count, type); });
}

absl::Status Communicator::Allgatherv(const void* send, size_t send_count, void* recv,
                                      absl::Span<const size_t> recv_counts,
                                      absl::Span<const size_t> displs, DataType type,
                                      std::optional<absl::Time> deadline) {
  if (QuickCallFits(Collective::kAllgatherv, send, recv, send_count, type, kSumOp, 0,
                    {recv_counts, displs, {}, {}})) {
    return RunQuickNodeCall(Collective::kAllgatherv, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline, [=, this] {
    return IAllgatherv(send, send_count, recv, recv_counts, displs, type);
  });
}

absl::Status Communicator::Alltoall(const void* send, void* recv, size_t count, DataType type,
                                    std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kAlltoall, send, recv, count, type, kSumOp, 0)) {
    return RunQuickNodeCall(Collective::kAlltoall, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline, [=, this] { return IAlltoall(send, recv, count, type); });
}

absl::Status Communicator::Alltoallv(const void* send, absl::Span<const size_t> send_counts,
                                     absl::Span<const size_t> send_displs, void* recv,
                                     absl::Span<const size_t> recv_counts,
                                     absl::Span<const size_t> recv_displs, DataType type,
                                     std::optional<absl::Time> deadline) {
  if (QuickCallFits(Collective::kAlltoallv, send, recv, 0, type, kSumOp, 0,
                    {send == kInPlace ? recv_counts : send_counts,
                     send == kInPlace ? recv_displs : send_displs, recv_counts, recv_displs})) {
    return RunQuickNodeCall(Collective::kAlltoallv, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline, [=, this] {
    return IAlltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  });
}

absl::Status Communicator::Barrier(std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kBarrier, nullptr, nullptr, 0, DataType::kUint8, kSumOp, 0))
    return RunQuickNodeCall(Collective::kBarrier, nullptr, nullptr, deadline);
  return BlockingAfterQuickTest(deadline, [=, this] { return IBarrier(); });
}

absl::Status Communicator::Scan(const void* send, void* recv, size_t count, DataType type,
                                const ReduceOp& op, std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kScan, send, recv, count, type, op, 0)) {
    return RunQuickNodeCall(Collective::kScan, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline,
                                [=, this, &op] { return IScan(send, recv, count, type, op); });
}

absl::Status Communicator::Exscan(const void* send, void* recv, size_t count, DataType type,
                                  const ReduceOp& op, std::optional<absl::Time> deadline) {
  // A loop's repeated node call, without Blocking's indirection.
  if (QuickCallFits(Collective::kExscan, send, recv, count, type, op, 0)) {
    return RunQuickNodeCall(Collective::kExscan, send, recv, deadline);
  }
  return BlockingAfterQuickTest(deadline,
                                [=, this, &op] { return IExscan(send, recv, count, type, op); });
}

// The persistent forms: the I-form, kept at init (Persistent).
absl::StatusOr<PersistentRequest> Communicator::ReduceInit(const void* send, void* recv,
                                                           size_t count, DataType type,
                                                           const ReduceOp& op, int root) {
  return Persistent([&] { return IReduce(send, recv, count, type, op, root); });
}

absl::StatusOr<PersistentRequest> Communicator::AllreduceInit(const void* send, void* recv,
                                                              size_t count, DataType type,
                                                              const ReduceOp& op) {
  return Persistent([&] { return IAllreduce(send, recv, count, type, op); });
}

absl::StatusOr<PersistentRequest> Communicator::ReduceScatterBlockInit(const void* send, void* recv,
                                                                       size_t recv_count,
                                                                       DataType type,
                                                                       const ReduceOp& op) {
  return Persistent([&] { return IReduceScatterBlock(send, recv, recv_count, type, op); });
}

absl::StatusOr<PersistentRequest> Communicator::ReduceScatterInit(
    const void* send, void* recv, absl::Span<const size_t> recv_counts, DataType type,
    const ReduceOp& op) {
  return Persistent([&] { return IReduceScatter(send, recv, recv_counts, type, op); });
}

absl::StatusOr<PersistentRequest> Communicator::ScatterInit(const void* send, void* recv,
                                                            size_t count, DataType type, int root) {
  return Persistent([&] { return IScatter(send, recv, count, type, root); });
}

absl::StatusOr<PersistentRequest> Communicator::ScattervInit(const void* send,
                                                             absl::Span<const size_t> send_counts,
                                                             absl::Span<const size_t> displs,
                                                             void* recv, size_t recv_count,
                                                             DataType type, int root) {
  return Persistent(
      [&] { return IScatterv(send, send_counts, displs, recv, recv_count, type, root); });
}

absl::StatusOr<PersistentRequest> Communicator::BcastInit(void* buffer, size_t count, DataType type,
                                                          int root) {
  return Persistent([&] { return IBcast(buffer, count, type, root); });
}

absl::StatusOr<PersistentRequest> Communicator::GatherInit(const void* send, void* recv,
                                                           size_t count, DataType type, int root) {
  return Persistent([&] { return IGather(send, recv, count, type, root); });
}

absl::StatusOr<PersistentRequest> Communicator::GathervInit(const void* send, size_t send_count,
                                                            void* recv,
                                                            absl::Span<const size_t> recv_counts,
                                                            absl::Span<const size_t> displs,
                                                            DataType type, int root) {
  return Persistent(
      [&] { return IGatherv(send, send_count, recv, recv_counts, displs, type, root); });
}

absl::StatusOr<PersistentRequest> Communicator::AllgatherInit(const void* send, void* recv,
                                                              size_t count, DataType type) {
  return Persistent([&] { return IAllgather(send, recv, count, type); });
}

absl::StatusOr<PersistentRequest> Communicator::AllgathervInit(const void* send, size_t send_count,
                                                               void* recv,
                                                               absl::Span<const size_t> recv_counts,
                                                               absl::Span<const size_t> displs,
                                                               DataType type) {
  return Persistent([&] { return IAllgatherv(send, send_count, recv, recv_counts, displs, type); });
}

absl::StatusOr<PersistentRequest> Communicator::AlltoallInit(const void* send, void* recv,
                                                             size_t count, DataType type) {
  return Persistent([&] { return IAlltoall(send, recv, count, type); });
}

absl::StatusOr<PersistentRequest> Communicator::AlltoallvInit(
    const void* send, absl::Span<const size_t> send_counts, absl::Span<const size_t> send_displs,
    void* recv, absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
    DataType type) {
  return Persistent([&] {
    return IAlltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  });
}

absl::StatusOr<PersistentRequest> Communicator::BarrierInit() {
  return Persistent([&] { return IBarrier(); });
}

absl::StatusOr<PersistentRequest> Communicator::ScanInit(const void* send, void* recv, size_t count,
                                                         DataType type, const ReduceOp& op) {
  return Persistent([&] { return IScan(send, recv, count, type, op); });
}

absl::StatusOr<PersistentRequest> Communicator::ExscanInit(const void* send, void* recv,
                                                           size_t count, DataType type,
                                                           const ReduceOp& op) {
  return Persistent([&] { return IExscan(send, recv, count, type, op); });
}

}  // namespace zcoll
