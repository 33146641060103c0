#include "sim/event_simulation.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "absl/container/btree_map.h"
#include "absl/strings/str_cat.h"
#include "collectives/node_data_flow.h"

namespace zcoll::sim {
namespace {

using TimedStep = TimedSchedules::TimedStep;

bool IsSenderSide(StepKind kind) { return kind == StepKind::kSend || kind == StepKind::kPut; }

bool IsReceiverSide(StepKind kind) { return kind == StepKind::kRecv || kind == StepKind::kGet; }
bool IsTransfer(StepKind kind) { return IsSenderSide(kind) || IsReceiverSide(kind); }

// Whether a send of `bytes` over `link` is a copy the receiver makes, which its sender
// shares only when its CPU is free: within a node, a message past the eager size is
// the receiver's process_vm_readv, split with the sender when it is idle (the shm
// transport's split rendezvous, from 64 KiB; below that the receiver copies alone,
// which a profile, without the split's size, books as a split). A sender busy with a
// step of its own leaves it all to the receiver, and the message does not wait for it
// (a 2-rank linear scatter of 1 MiB, whose root copies its own block meanwhile, took
// 123 us, not the 179 of waiting for the root; medians of 3 alternating runs).
bool SendersCopyIsOptional(LinkClass link, StepKind kind, double bytes,
                           const MachineProfile& profile) {
  return link != LinkClass::kNetwork && kind == StepKind::kSend &&
         bytes > static_cast<double>(profile.eager_bytes);
}

// "rank 3's step #7 (recv with rank 2, tag 5)".
std::string DescribeStep(const TimedSchedules& schedules, int rank, size_t index) {
  const TimedStep& s = schedules.step(index);
  return absl::StrCat("rank ", rank, "'s step #", index - schedules.rank_begin(rank), " (",
                      StepKindName(s.kind), " with rank ", s.peer, ", tag ", s.tag, ")");
}

// A transfer's bytes per microsecond on `link` (the fabric's share across nodes): of the
// user's data unwritten in the call (`unwritten`) the link's cached rate where it has
// one, else its rate.
double LinkBandwidth(const MachineProfile& profile, LinkClass link, bool unwritten) {
  const LinkCost& cost = profile.link(link);
  const double bandwidth = unwritten && cost.cached_bytes_per_usec > 0 ? cost.cached_bytes_per_usec
                                                                       : cost.bytes_per_usec;
  return link == LinkClass::kNetwork ? bandwidth * profile.bisection : bandwidth;
}

// A transfer side posted before its partner.
struct Posting {
  double posted;
  // An eager send's data: when it is in at the receiver; negative otherwise.
  double arrival;
};

enum class EventKind : uint8_t {
  kComplete,    // the step has completed
  kSendPosted,  // a send's or put's overhead is paid: it may match
  kArrived,     // a receive's data is in: its overhead is paid next
};

struct Event {
  uint32_t step;
  int32_t rank;
  EventKind kind;
};

// Events by time; those of one time in the order they were made.
class EventQueue {
 public:
  void Push(double time, Event event) {
    auto [entry, added] = by_time_.try_emplace(time);
    if (added && !spare_.empty()) {
      entry->second = std::move(spare_.back());
      spare_.pop_back();
    }
    entry->second.push_back(event);
  }
  bool empty() const { return by_time_.empty(); }
  // Takes the earliest time's events out (events made for that time meanwhile form a
  // new batch, run after this one).
  double PopEarliest(std::vector<Event>& batch) {
    auto first = by_time_.begin();
    const double time = first->first;
    batch.swap(first->second);
    by_time_.erase(first);
    return time;
  }
  // Gives a batch's vector back for reuse.
  void Recycle(std::vector<Event>& batch) {
    batch.clear();
    if (spare_.size() < 64) spare_.push_back(std::move(batch));
    batch = {};
  }

 private:
  absl::btree_map<double, std::vector<Event>> by_time_;
  std::vector<std::vector<Event>> spare_;
};

class Simulation {
 public:
  Simulation(TimedSchedules& schedules, const Topology& topology, const MachineProfile& profile)
      : schedules_(schedules),
        topology_(topology),
        profile_(profile),
        cpu_free_(schedules.ranks(), 0.0),
        port_out_free_(schedules.ranks(), 0.0),
        port_in_free_(schedules.ranks(), 0.0),
        nic_out_free_(topology.num_nodes(), 0.0),
        nic_in_free_(topology.num_nodes(), 0.0),
        core_free_(static_cast<size_t>(profile.host_cores), 0.0),
        engine_(OnNodeEngine(schedules.transfers())),
        mapped_buffers_(schedules.transfers() == TransferModel::kNodeEngineMappedBuffers) {}

  absl::StatusOr<SimulationResult> Run() {
    if (engine_ && !profile_.has_engine()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "profile ", profile_.name,
          " has no node engine figures (engine.latency_usec, engine.bytes_per_usec), so the "
          "engine's calls cannot be timed (zcoll_bench --calibrate measures them)"));
    }
    if (engine_ && topology_.num_nodes() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("the node engine's calls run on one node, not ", topology_.num_nodes()));
    }
    if (!schedules_.matched()) {
      if (absl::Status matched = schedules_.MatchTransfers(); !matched.ok()) return matched;
    }
    const size_t n = schedules_.num_steps();
    for (size_t i = 0; i < n; ++i) schedules_.mutable_step(i).waiting_for = 0;
    for (size_t i = 0; i < n; ++i) {
      schedules_.ForEachDependent(
          i, [this](uint32_t dependent) { ++schedules_.mutable_step(dependent).waiting_for; });
    }
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        if (schedules_.step(i).waiting_for == 0) Start(static_cast<uint32_t>(i), rank, 0.0);
      }
    }
    std::vector<Event> batch;
    while (!events_.empty()) {
      const double time = events_.PopEarliest(batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        if (i + 3 * kAhead < batch.size()) {
          __builtin_prefetch(&schedules_.step(batch[i + 3 * kAhead].step));
        }
        if (i + 2 * kAhead < batch.size()) {
          if (const void* next = NextTouched(batch[i + 2 * kAhead])) __builtin_prefetch(next);
        }
        if (i + kAhead < batch.size() && batch[i + kAhead].kind == EventKind::kComplete) {
          // Three at most, and not in a loop: GCC 12 deletes a loop that only prefetches.
          const uint32_t step = batch[i + kAhead].step;
          const uint32_t count = schedules_.DependentCount(step);
          if (count > 1) {
            __builtin_prefetch(&schedules_.step(schedules_.Dependent(step, 0)));
            __builtin_prefetch(&schedules_.step(schedules_.Dependent(step, 1)));
          }
          if (count > 2) __builtin_prefetch(&schedules_.step(schedules_.Dependent(step, 2)));
        }
        const Event& event = batch[i];
        ++result_.events;
        switch (event.kind) {
          case EventKind::kComplete:
            Complete(event.step, event.rank, time);
            break;
          case EventKind::kSendPosted:
            SendPosted(event.step, event.rank, time);
            break;
          case EventKind::kArrived:
            PayReceiveOverhead(event.step, event.rank, time);
            break;
        }
      }
      events_.Recycle(batch);
    }
    if (result_.steps != n) {
      absl::Status stuck = Stuck();
      ReturnKeptPostings();
      return stuck;
    }
    return result_;
  }

 private:
  // At 65,536 ranks the steps take gigabytes and a batch's events touch steps of
  // ranks far apart, so nearly every step read missed the cache (three loads, each a
  // fifth to a third of the run). So the loop fetches ahead in three stages: event
  // i + 3 * kAhead's step; event i + 2 * kAhead's next step, which its step (in the
  // cache by then) names (a send's partner or a completed step's one dependent) or its
  // list of dependents; and the steps in event i + kAhead's list. Hints only: what the
  // events do and their order are unchanged.
  // (The prefetches are in the event loop itself: GCC 12 finds a function that only
  // prefetches pure and drops the call.)
  static constexpr size_t kAhead = 6;
  // The step or list of dependents that `event` touches after its own step.
  const void* NextTouched(const Event& event) const {
    const TimedStep& s = schedules_.step(event.step);
    if (event.kind == EventKind::kSendPosted) {
      // Not kept yet: a send keeps its posting when this event runs.
      return s.partner < schedules_.num_steps() ? &schedules_.step(s.partner) : nullptr;
    }
    if (event.kind != EventKind::kComplete) return nullptr;
    if (schedules_.DependentCount(event.step) == 1) {
      return &schedules_.step(schedules_.Dependent(event.step, 0));
    }
    return schedules_.DependentList(event.step);
  }

  void Push(double time, uint32_t step, int rank, EventKind kind) {
    events_.Push(time, Event{step, rank, kind});
  }

  // Occupies `rank`'s CPU (and, on a profile with host cores, the one of them free
  // first) for `cost` from `time` or when both are next free. Returns when it starts.
  double Occupy(int rank, double time, double cost) {
    double begin = std::max(time, cpu_free_[rank]);
    if (!core_free_.empty()) {
      const auto core = std::min_element(core_free_.begin(), core_free_.end());
      begin = std::max(begin, *core);
      *core = begin + cost;
    }
    cpu_free_[rank] = begin + cost;
    return begin;
  }
  // Occupy, returning when it ends.
  double RunOnCpu(int rank, double time, double cost) { return Occupy(rank, time, cost) + cost; }

  const LinkCost& Link(int rank, int peer) const {
    return profile_.link(LinkBetween(topology_, rank, peer));
  }

  void Start(uint32_t step, int rank, double time) {
    const TimedStep& s = schedules_.step(step);
    switch (s.kind) {
      case StepKind::kSend:
      case StepKind::kPut:
        // (The engine's publications cost nothing to post: the copy is what costs.)
        Push(engine_ ? time : RunOnCpu(rank, time, Link(rank, s.peer).overhead_usec), step, rank,
             EventKind::kSendPosted);
        return;
      case StepKind::kRecv:
      case StepKind::kGet:
        ReceivePosted(step, rank, time);
        return;
      case StepKind::kReduce: {
        const double operands = std::max<int>(s.operands, 2) - 1;
        const double cost =
            operands * static_cast<double>(s.bytes) / profile_.reduce_bytes_per_usec;
        Push(RunOnCpu(rank, time, cost), step, rank, EventKind::kComplete);
        return;
      }
      case StepKind::kCopy:
        Push(RunOnCpu(rank, time, static_cast<double>(s.bytes) / profile_.copy_bytes_per_usec),
             step, rank, EventKind::kComplete);
        return;
    }
  }

  void Complete(uint32_t step, int rank, double time) {
    ++result_.steps;
    result_.usec = std::max(result_.usec, time);
    schedules_.ForEachDependent(step, [&](uint32_t dependent) {
      if (--schedules_.mutable_step(dependent).waiting_for == 0) Start(dependent, rank, time);
    });
  }

  // A side posted before its partner keeps its posting in its own step, in the 8
  // bytes of `partner` and `waiting_for`: its dependency count is 0 once it has
  // started, and its partner is the step that takes the posting, which puts the index
  // back. The taker reads that step anyway to see that it was posted, so taking it
  // touches no other memory (a separate array of postings cost a cache miss a
  // transfer at 65,536 ranks). The flags are bits of `operands`, which a transfer
  // uses only for its lowest.
  static constexpr uint8_t kKept = 0x80;         // posted, its partner not yet
  static constexpr uint8_t kKeptArrival = 0x40;  // the time kept is an eager send's arrival
  static constexpr size_t kKeptTimeOffset = offsetof(TimedStep, partner);
  static_assert(offsetof(TimedStep, waiting_for) == kKeptTimeOffset + sizeof(uint32_t),
                "a kept posting's time takes partner's and waiting_for's bytes");

  bool Posted(uint32_t step) const { return (schedules_.step(step).operands & kKept) != 0; }

  void Keep(uint32_t step, double posted, double arrival) {
    TimedStep& s = schedules_.mutable_step(step);
    const double time = arrival >= 0 ? arrival : posted;
    std::memcpy(reinterpret_cast<char*>(&s) + kKeptTimeOffset, &time, sizeof(time));
    s.operands |= arrival >= 0 ? kKept | kKeptArrival : kKept;
  }

  // `taker`: the kept step's partner.
  Posting Take(uint32_t step, uint32_t taker) {
    TimedStep& s = schedules_.mutable_step(step);
    double time;
    std::memcpy(&time, reinterpret_cast<const char*>(&s) + kKeptTimeOffset, sizeof(time));
    const bool arrival = (s.operands & kKeptArrival) != 0;
    s.operands &= static_cast<uint8_t>(~(kKept | kKeptArrival));
    s.partner = taker;
    s.waiting_for = 0;
    return arrival ? Posting{-1, time} : Posting{time, -1};
  }

  // The bytes per microsecond of transfer side `s` on `link`: the link's cached rate
  // where it has one and the data is the user's, unwritten in the call (a loop's
  // receiver finds the sender's lines where it read them the call before); else its
  // rate.
  double Bandwidth(LinkClass link, const TimedStep& s) const {
    return LinkBandwidth(profile_, link, (s.operands & TimedSchedules::kSourceBits) == 0);
  }

  bool Eager(const TimedStep& send) const {
    return send.kind == StepKind::kSend && send.bytes <= profile_.eager_bytes;
  }

  // The data of `send` leaves from `start` through the sender's port and comes in
  // through the receiver's. Returns when it is all in; `out_end` gets when it is all out.
  double Flow(uint32_t send, int sender, double start, double& out_end) {
    const TimedStep& s = schedules_.step(send);
    const int receiver = s.peer;
    const LinkClass link = LinkBetween(topology_, sender, receiver);
    const LinkCost& cost = profile_.link(link);
    double* out;
    double* in;
    const double bandwidth = Bandwidth(link, s);
    // A half-duplex port has one timeline for both directions: its out one.
    if (link == LinkClass::kNetwork) {
      out = &nic_out_free_[topology_.node_of(sender)];
      in = &(cost.half_duplex ? nic_out_free_ : nic_in_free_)[topology_.node_of(receiver)];
      result_.network_bytes += s.bytes;
    } else {
      out = &port_out_free_[sender];
      in = &(cost.half_duplex ? port_out_free_ : port_in_free_)[receiver];
    }
    ++result_.transfers;
    const double duration = static_cast<double>(s.bytes) / bandwidth;
    double leave = std::max(start, *out);
    // Bytes a CPU copies hold the sender's CPU while they leave (the receiver's: when
    // they have come, PayReceiveOverhead), for the link's cpu_share of their time,
    // unless the copy is the receiver's and the sender is busy then
    // (SendersCopyIsOptional).
    if (cost.cpu_copies &&
        !(cpu_free_[sender] > leave &&
          SendersCopyIsOptional(link, s.kind, static_cast<double>(s.bytes), profile_))) {
      leave = Occupy(sender, leave, CpuCopyUsec(cost, duration));
    }
    *out = out_end = leave + duration;
    const double enter = std::max(leave + cost.latency_usec, *in);
    *in = enter + duration;
    return enter + duration;
  }

  // A rendezvous (or one-sided) transfer whose two sides are posted: the data moves once
  // the ready-to-send has reached the receiver, and both sides complete when it is in.
  void Rendezvous(uint32_t send, int sender, double send_posted, uint32_t receive, int receiver,
                  double receive_posted) {
    const LinkCost& link = Link(sender, receiver);
    // Past eager_bytes (a send's or a one-sided put's): the transport's handshake once
    // both sides are there.
    const bool handshake = schedules_.step(send).bytes > profile_.eager_bytes;
    const double start = std::max(send_posted + link.latency_usec, receive_posted) +
                         (handshake ? link.rendezvous_usec : 0);
    double out_end = 0;
    const double arrival = Flow(send, sender, start, out_end);
    Push(arrival, send, sender, EventKind::kComplete);
    Push(arrival, receive, receiver, EventKind::kArrived);
  }

  // The node engine's transfer whose two sides are posted: the copying rank (the
  // receiver, or the sender of a write) copies once the control line has come.
  void EngineCopy(uint32_t send, int sender, double send_posted, uint32_t receive, int receiver,
                  double receive_posted) {
    const TimedStep& s = schedules_.step(send);
    const EngineCost& engine = profile_.engine;
    const bool write = NodeWriteBySender(s.tag);
    const int copier = write ? sender : receiver;
    const double bytes = static_cast<double>(s.bytes);
    double copy = 0;
    if (NodeReadInPlace(s.tag) || bytes == 0) {
      // Nothing copied: reduced where it lies, or a control line's word alone.
    } else if ((!write &&
                (s.operands & TimedSchedules::kSourceBits) == TimedSchedules::kSourceScratch) ||
               mapped_buffers_) {
      // A publication's copy in the segment, or a peer's buffer mapped here.
      copy = bytes / profile_.copy_bytes_per_usec;
    } else {
      copy = engine.system_call_usec + bytes / engine.bytes_per_usec;
    }
    const double start = std::max(send_posted, receive_posted) + engine.latency_usec;
    const double end = RunOnCpu(copier, start, engine.overhead_usec + copy);
    ++result_.transfers;
    Push(end, send, sender, EventKind::kComplete);
    Push(end, receive, receiver, EventKind::kComplete);
  }

  void SendPosted(uint32_t send, int rank, double time) {
    const TimedStep& s = schedules_.step(send);
    const uint32_t receive = s.partner;
    const int receiver = s.peer;
    if (engine_) {
      if (Posted(receive)) {
        const Posting posting = Take(receive, send);
        EngineCopy(send, rank, time, receive, receiver, posting.posted);
      } else {
        Keep(send, time, -1);
      }
      return;
    }
    if (Eager(s)) {
      double out_end = 0;
      const double arrival = Flow(send, rank, time, out_end);
      Push(out_end, send, rank, EventKind::kComplete);
      if (Posted(receive)) {
        Take(receive, send);
        Push(arrival, receive, receiver, EventKind::kArrived);
      } else {
        Keep(send, time, arrival);
      }
      return;
    }
    if (Posted(receive)) {
      const Posting posting = Take(receive, send);
      Rendezvous(send, rank, time, receive, receiver, posting.posted);
    } else {
      Keep(send, time, -1);
    }
  }

  void ReceivePosted(uint32_t receive, int rank, double time) {
    const uint32_t send = schedules_.step(receive).partner;
    if (!Posted(send)) {
      Keep(receive, time, -1);
      return;
    }
    const Posting posting = Take(send, receive);
    if (engine_) {
      EngineCopy(send, schedules_.step(receive).peer, posting.posted, receive, rank, time);
      return;
    }
    if (posting.arrival >= 0) {  // an eager message, come or on its way
      Push(std::max(posting.arrival, time), receive, rank, EventKind::kArrived);
    } else {
      Rendezvous(send, schedules_.step(receive).peer, posting.posted, receive, rank, time);
    }
  }

  void PayReceiveOverhead(uint32_t receive, int rank, double time) {
    const TimedStep& s = schedules_.step(receive);
    const LinkClass link = LinkBetween(topology_, rank, s.peer);
    const LinkCost& cost = profile_.link(link);
    // Bytes a CPU copies held the receiver's CPU while they came in: booked now that
    // they are in (booked at the transfer's start, they would keep the CPU from work
    // it does meanwhile), so the receive ends later when its CPU was busy then.
    const double copy = CpuCopyUsec(cost, static_cast<double>(s.bytes) / Bandwidth(link, s));
    Push(RunOnCpu(rank, time - copy, copy + cost.overhead_usec), receive, rank,
         EventKind::kComplete);
  }

  // A run that could not finish leaves sides kept, their partner fields holding their
  // postings: each gets its partner back (the partner, which never posted, still names
  // it), so the schedules can be simulated again.
  void ReturnKeptPostings() {
    for (size_t i = 0; i < schedules_.num_steps(); ++i) {
      const TimedStep& s = schedules_.step(i);
      if (!IsTransfer(s.kind) || Posted(static_cast<uint32_t>(i)) || !Posted(s.partner)) continue;
      TimedStep& kept = schedules_.mutable_step(s.partner);
      kept.operands &= static_cast<uint8_t>(~(kKept | kKeptArrival));
      kept.partner = static_cast<uint32_t>(i);
      kept.waiting_for = 0;
    }
  }

  absl::Status Stuck() const {
    // A posted side whose partner never posted, else a step that never started: the
    // first in rank order.
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        if (Posted(static_cast<uint32_t>(i))) {
          return absl::InvalidArgumentError(
              absl::StrCat("the simulation cannot finish: ", DescribeStep(schedules_, rank, i),
                           " is posted but its partner never is (a deadlock)"));
        }
      }
    }
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        if (schedules_.step(i).waiting_for != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("the simulation cannot finish: rank ", rank, "'s step #",
                           i - schedules_.rank_begin(rank), " never starts (a deadlock)"));
        }
      }
    }
    return absl::InvalidArgumentError("the simulation cannot finish");
  }

  TimedSchedules& schedules_;
  const Topology& topology_;
  const MachineProfile& profile_;
  std::vector<double> cpu_free_;
  std::vector<double> port_out_free_;
  std::vector<double> port_in_free_;
  std::vector<double> nic_out_free_;
  std::vector<double> nic_in_free_;
  std::vector<double> core_free_;  // the host's cores (empty: a core per rank)
  const bool engine_;              // OnNodeEngine
  const bool mapped_buffers_;      // TransferModel::kNodeEngineMappedBuffers
  EventQueue events_;
  SimulationResult result_;
};

}  // namespace

absl::Status TimedSchedules::Add(const Schedule& schedule, size_t element_bytes) {
  if (schedule.rank() != ranks()) {
    return absl::InvalidArgumentError(absl::StrCat("TimedSchedules::Add: rank ", schedule.rank(),
                                                   "'s schedule where rank ", ranks(),
                                                   "'s comes next"));
  }
  const size_t base = steps_.size();
  const absl::Span<const Step> steps = schedule.steps();
  // (A step's only dependent is kept as kOneDependent | its index, which must not make
  // kNoDependents.)
  if (base + steps.size() >= (size_t{1} << 31) - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TimedSchedules::Add: rank ", schedule.rank(), "'s schedule brings the steps to ",
        base + steps.size(), "; the simulator holds fewer than 2^31 - 1"));
  }
  // Everything is checked before anything is added: a refused schedule leaves no steps.
  std::vector<uint32_t> counts(steps.size(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const uint64_t bytes = uint64_t{step.count()} * element_bytes;
    if (bytes > UINT32_MAX || step.tag > UINT16_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TimedSchedules::Add: rank ", schedule.rank(), "'s step #", i, " moves ", bytes,
          " bytes with tag ", step.tag, " (the simulator takes under 4 GiB and tags under 2^16)"));
    }
    for (StepId dep : step.deps) ++counts[dep];
  }
  // The lists of steps with two or more dependents, each a count and the steps.
  size_t listed = 0;
  for (uint32_t count : counts) listed += count >= 2 ? count + 1 : 0;
  if (dependents_.size() + listed >= (size_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TimedSchedules::Add: rank ", schedule.rank(),
        "'s schedule brings the dependency lists past 2^31 entries, which the simulator cannot "
        "hold"));
  }
  // Whether a step so far wrote the user's receive buffer: a send from it after that
  // sends lines this rank wrote in the call (kSourceWritten).
  bool receive_written = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    TimedStep timed;
    timed.bytes = static_cast<uint32_t>(uint64_t{step.count()} * element_bytes);
    timed.peer = step.peer;
    timed.tag = static_cast<uint16_t>(step.tag);
    timed.kind = step.kind;
    if (step.kind == StepKind::kReduce) {
      timed.operands = static_cast<uint8_t>(std::min<size_t>(step.inputs.size(), 255));
    } else if (step.kind == StepKind::kSend || step.kind == StepKind::kPut) {
      const BufferKind source = step.inputs.front().buffer.kind;
      timed.operands = source == BufferKind::kScratch                   ? kSourceScratch
                       : source == BufferKind::kRecv && receive_written ? kSourceWritten
                                                                        : 0;
    }
    // (In the steps' order, a step's dependencies before it; a Send's or Put's output is
    // unused.)
    if (step.kind != StepKind::kSend && step.kind != StepKind::kPut &&
        step.output.buffer.kind == BufferKind::kRecv && step.output.count > 0) {
      receive_written = true;
    }
    if (counts[i] >= 2) {
      timed.dependents = static_cast<uint32_t>(dependents_.size());
      dependents_.push_back(counts[i]);
      for (uint32_t k = 0; k < counts[i]; ++k) dependents_.push_back(0);
    }
    steps_.push_back(timed);
  }
  std::fill(counts.begin(), counts.end(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    for (StepId dep : steps[i].deps) {
      TimedStep& depended_on = steps_[base + dep];
      const uint32_t dependent = static_cast<uint32_t>(base + i);
      if (depended_on.dependents == kNoDependents) {
        depended_on.dependents = kOneDependent | dependent;
      } else if ((depended_on.dependents & kOneDependent) == 0) {
        dependents_[depended_on.dependents + 1 + counts[dep]++] = dependent;
      }
    }
  }
  rank_begin_.push_back(steps_.size());
  matched_ = false;
  return absl::OkStatus();
}

absl::Status TimedSchedules::MatchTransfers() {
  const int n = ranks();
  for (int rank = 0; rank < n; ++rank) {
    for (size_t i = rank_begin_[rank]; i < rank_begin_[rank + 1]; ++i) {
      TimedStep& s = steps_[i];
      s.partner = kNoPartner;
      if (IsTransfer(s.kind) && (s.peer < 0 || s.peer >= n || s.peer == rank)) {
        return absl::InvalidArgumentError(
            absl::StrCat("rank ", rank, "'s step #", i - rank_begin_[rank], " (",
                         StepKindName(s.kind), ") names peer ", s.peer, " of ", n, " ranks"));
      }
    }
  }
  // Each rank's receiving sides sorted by (sender, tag): a sending side finds its
  // partner by binary search in its receiver's, with nothing allocated per pair. The
  // key sits beside the index, so a search reads one small array and not the steps
  // (at 65,536 ranks each probe into the steps was a cache miss of its own).
  struct Receive {
    uint64_t key;  // sender << 16 | tag (tags are below 2^16: Add refuses others)
    uint32_t step;
  };
  const auto key_of = [](int32_t sender, uint16_t tag) {
    return static_cast<uint64_t>(static_cast<uint32_t>(sender)) << 16 | tag;
  };
  size_t total = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (IsReceiverSide(steps_[i].kind)) ++total;
  }
  std::vector<Receive> receives;
  receives.reserve(total);
  std::vector<size_t> receives_begin(n + 1, 0);
  const auto by_key = [](const Receive& a, const Receive& b) { return a.key < b.key; };
  for (int rank = 0; rank < n; ++rank) {
    receives_begin[rank] = receives.size();
    for (size_t i = rank_begin_[rank]; i < rank_begin_[rank + 1]; ++i) {
      const TimedStep& s = steps_[i];
      if (IsReceiverSide(s.kind)) receives.push_back({key_of(s.peer, s.tag), uint32_t(i)});
    }
    const auto begin = receives.begin() + static_cast<ptrdiff_t>(receives_begin[rank]);
    std::stable_sort(begin, receives.end(), by_key);
    for (auto it = begin; it != receives.end() && it + 1 != receives.end(); ++it) {
      if (it->key == (it + 1)->key) {
        return absl::InvalidArgumentError(absl::StrCat(
            "two transfers from rank ", steps_[it->step].peer, " to rank ", rank, " use tag ",
            steps_[it->step].tag, ": ", DescribeStep(*this, rank, it->step), " and ",
            DescribeStep(*this, rank, (it + 1)->step)));
      }
    }
  }
  receives_begin[n] = receives.size();
  for (int rank = 0; rank < n; ++rank) {
    for (size_t i = rank_begin_[rank]; i < rank_begin_[rank + 1]; ++i) {
      TimedStep& send = steps_[i];
      if (!IsSenderSide(send.kind)) continue;
      const auto begin = receives.begin() + static_cast<ptrdiff_t>(receives_begin[send.peer]);
      const auto end = receives.begin() + static_cast<ptrdiff_t>(receives_begin[send.peer + 1]);
      const uint64_t key = key_of(rank, send.tag);
      const auto found = std::lower_bound(
          begin, end, key, [](const Receive& receive, uint64_t k) { return receive.key < k; });
      if (found == end || found->key != key) {
        return absl::InvalidArgumentError(
            absl::StrCat(DescribeStep(*this, rank, i), " has no partner on rank ", send.peer));
      }
      TimedStep& receive = steps_[found->step];
      if (receive.partner != kNoPartner) {
        return absl::InvalidArgumentError(absl::StrCat(
            "two transfers from rank ", rank, " to rank ", send.peer, " use tag ", send.tag, ": ",
            DescribeStep(*this, rank, receive.partner), " and ", DescribeStep(*this, rank, i)));
      }
      receive.partner = static_cast<uint32_t>(i);
      send.partner = found->step;
      receive.operands =
          static_cast<uint8_t>((receive.operands & ~kSourceBits) | (send.operands & kSourceBits));
    }
  }
  for (int rank = 0; rank < n; ++rank) {
    for (size_t i = receives_begin[rank]; i < receives_begin[rank + 1]; ++i) {
      if (steps_[receives[i].step].partner == kNoPartner) {
        return absl::InvalidArgumentError(absl::StrCat(DescribeStep(*this, rank, receives[i].step),
                                                       " has no partner on rank ",
                                                       steps_[receives[i].step].peer));
      }
    }
  }
  matched_ = true;
  return absl::OkStatus();
}

size_t TimedSchedules::MemoryBytes() const {
  return steps_.MemoryBytes() + dependents_.MemoryBytes() + rank_begin_.capacity() * sizeof(size_t);
}

double RankLowerBoundUsec(const Schedule& schedule, size_t element_bytes, TransferModel transfers,
                          const Topology& topology, const MachineProfile& profile) {
  if (OnNodeEngine(transfers)) return 0;
  const int rank = schedule.rank();
  // Busy time of each timeline the rank's steps hold, as Simulation books them: its
  // CPU, its port (both directions on a half-duplex link, whose one timeline is the
  // out one) and its node's NIC likewise.
  double cpu = 0;
  double port_out = 0;
  double port_in = 0;
  double nic_out = 0;
  double nic_in = 0;
  for (const Step& step : schedule.steps()) {
    const double bytes = static_cast<double>(step.count()) * static_cast<double>(element_bytes);
    switch (step.kind) {
      case StepKind::kReduce:
        cpu += (std::max<double>(static_cast<double>(step.inputs.size()), 2) - 1) * bytes /
               profile.reduce_bytes_per_usec;
        continue;
      case StepKind::kCopy:
        cpu += bytes / profile.copy_bytes_per_usec;
        continue;
      default:
        break;
    }
    const LinkClass link = LinkBetween(topology, rank, step.peer);
    const LinkCost& cost = profile.link(link);
    // (A bound: the faster of the link's rates.)
    const double duration =
        bytes / std::max(LinkBandwidth(profile, link, false), LinkBandwidth(profile, link, true));
    const bool sends = IsSenderSide(step.kind);
    const bool copies = cost.cpu_copies && !SendersCopyIsOptional(link, step.kind, bytes, profile);
    cpu += cost.overhead_usec + (copies ? CpuCopyUsec(cost, duration) : 0);
    double& out = link == LinkClass::kNetwork ? nic_out : port_out;
    double& in = link == LinkClass::kNetwork ? nic_in : port_in;
    (sends || cost.half_duplex ? out : in) += duration;
  }
  return std::max({cpu, port_out, port_in, nic_out, nic_in});
}

LinkClass LinkBetween(const Topology& topology, int a, int b) {
  if (!topology.SameNode(a, b)) return LinkClass::kNetwork;
  return topology.SameNuma(a, b) ? LinkClass::kNuma : LinkClass::kNode;
}

absl::StatusOr<SimulationResult> Simulate(TimedSchedules& schedules, const Topology& topology,
                                          const MachineProfile& profile) {
  if (schedules.ranks() != topology.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Simulate: ", schedules.ranks(),
                                                   " schedules for a topology of ", topology.size(),
                                                   " ranks"));
  }
  return Simulation(schedules, topology, profile).Run();
}

}  // namespace zcoll::sim
