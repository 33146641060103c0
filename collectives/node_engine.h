// The node engine: collectives of the ranks that share a node, through one shared
// segment (node_segment.h), with no message passing at all.
//
// Where it lives: beside the schedule executor, not inside it. A node collective is
// not a set of transfers between pairs of ranks but every rank reading the others'
// published contributions, so it does not fit the Schedule IR's Send/Recv pairs; its
// algorithms are entries of the one selection table (selection.cc, names starting with
// "node"), chosen from the agreed inputs like any other, and ZCOLL_ALGO_<COLL> can still
// force the message-passing ones. A Request drives either kind through CallExecution.
//
// This first part runs Barrier, Bcast, Reduce and Allreduce of communicators whose
// ranks all share one node, for vectors up to one slot (kSlotBytes), flat: every rank
// publishes its contribution in its own slot (or, up to NodeSegment::kInlineBytes,
// inside its control line) and reads the others' directly; reductions combine all
// contributions in rank order with the ops' SIMD kernels, so Allreduce's result is
// bit-identical on every rank and any op (non-commutative included) is reduced in the
// canonical order.
//
// Agreement: each publication carries the call's check word (the same hash of the
// collective, algorithm, count, root, type and op that messages carry), and every rank
// reads every other's before it returns (so no rank leaves a node call before all
// have entered it): a rank that finds another rank's word differing fails naming that
// rank, at once, different roots included.
//
// Failures: a waiting node call drives the job's transport as any wait does, so a
// rank that dies (its pidfd), a failure notice, or the deadline ends it with the
// job's error on every rank; nothing of a call is read or written after it returns
// (every access is to the segment, and to the caller's buffers inside the call).

#ifndef ZCOLL_COLLECTIVES_NODE_ENGINE_H_
#define ZCOLL_COLLECTIVES_NODE_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/algorithms.h"
#include "collectives/call_execution.h"
#include "collectives/node_segment.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "core/topology.h"

namespace zcoll {

class CommunicatorTransport;
class NodeExecution;

class NodeEngine {
 public:
  // Bytes of a rank's slot: node collectives move vectors up to this size.
  static constexpr size_t kSlotBytes = 16 * 1024;

  // Sets up the engine of the communicator of `transport` (every rank calls it, in
  // Create, Split and Dup): null when the communicator spans more than one node or
  // has a single rank, or ZCOLL_NODE_ENGINE=0. The node's lowest rank creates the
  // segment and sends its name to the others, which map it and answer; if any could
  // not, every rank of the node gets null (and the first says why in a warning), so
  // the ranks still agree. An error only when the job failed or the deadline passed.
  // `first_sequence` is for tests (wrap-around).
  static absl::StatusOr<std::unique_ptr<NodeEngine>> Create(CommunicatorTransport& transport,
                                                            const Topology& topology,
                                                            absl::Time deadline,
                                                            uint32_t first_sequence = 1);

  NodeEngine(NodeSegment segment, int local_rank, uint32_t first_sequence)
      : segment_(std::move(segment)), local_rank_(local_rank), next_sequence_(first_sequence) {}

  NodeSegment& segment() { return segment_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return segment_.ranks(); }
  // The sequence number of the next node call (every rank of the node numbers its
  // calls alike: they make the same calls in the same order and choose alike).
  uint32_t TakeSequence() { return next_sequence_++; }

  // The node calls in flight, oldest first. A wait for one call advances the older ones
  // too: a rank may wait for its nonblocking calls in any order, and a later call can
  // need this rank to have read an earlier one (its buffers' reuse), which nothing else
  // would advance.
  void Started(NodeExecution* execution) { in_flight_.push_back(execution); }
  void Ended(NodeExecution* execution);
  void AdvanceOlder(const NodeExecution* execution);

 private:
  NodeSegment segment_;
  int local_rank_;
  uint32_t next_sequence_;
  std::vector<NodeExecution*> in_flight_;
};

// Whether the node engine runs `collective` (the selection table's "node" rules).
bool NodeEngineRuns(Collective collective);

// One node call. Restarted for each call (a small collective should not allocate).
class NodeExecution final : public CallExecution {
 public:
  struct Call {
    Collective collective = Collective::kBarrier;
    uint32_t sequence = 0;
    uint32_t check = 0;  // the call's check word
    DataType type = DataType::kByte;
    ReduceOp op = PredefinedOp::kSum;
    const void* send = nullptr;
    void* recv = nullptr;
    size_t count = 0;
    size_t element_bytes = 1;
    int root = 0;
    bool in_place = false;
    const char* name = "";
  };

  NodeExecution(NodeEngine& engine, Transport& transport)
      : engine_(engine), transport_(transport) {}
  ~NodeExecution() override;
  NodeExecution(const NodeExecution&) = delete;
  NodeExecution& operator=(const NodeExecution&) = delete;
  void Restart(const Call& call);

  Transport::PollResult Advance() override;
  Transport::PollResult Look(absl::Duration) override { return Transport::PollResult::kIdle; }
  // Waits as the transport does, sleeping on this rank's doorbell in the segment.
  absl::Status WaitFor(Transport& transport, absl::FunctionRef<Transport::PollResult()> poll,
                       absl::Time deadline,
                       absl::FunctionRef<Transport::PollResult(absl::Time)> on_clock) override;
  std::vector<int> PendingPeers() const override;
  bool on_node() const override { return true; }

 private:
  friend class NodeEngine;
  enum class Phase : uint8_t { kPublish, kGather };
  // Advances this call alone.
  Transport::PollResult Step();
  // Whether this rank's contribution goes into its buffer in this call.
  bool Contributes() const;
  size_t bytes() const { return call_.count * call_.element_bytes; }
  // Where `rank`'s contribution lies in this call (inline or slot).
  const char* Contribution(int rank) const;
  void Fail(absl::Status status);
  // Marks the call finished (with status_) and leaves the engine's list.
  void End();
  // The ranks' check words differ: the error naming `rank`.
  absl::Status Disagreement(int rank, uint32_t theirs) const;
  // Reads what it gathered into the caller's buffer.
  absl::Status Finish();

  NodeEngine& engine_;
  Transport& transport_;
  Call call_;
  Phase phase_ = Phase::kPublish;
  int next_peer_ = 0;  // the first rank not yet seen to have published or consumed
};

}  // namespace zcoll

#endif  // ZCOLL_COLLECTIVES_NODE_ENGINE_H_
