#include "sim/event_simulation.h"

#include <algorithm>
#include <tuple>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace zcoll::sim {
namespace {

using TimedStep = TimedSchedules::TimedStep;

bool IsSenderSide(StepKind kind) { return kind == StepKind::kSend || kind == StepKind::kPut; }

struct TransferKey {
  int32_t sender;
  int32_t receiver;
  uint32_t tag;
  friend bool operator==(const TransferKey&, const TransferKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TransferKey& key) {
    return H::combine(std::move(h), key.sender, key.receiver, key.tag);
  }
};

// The side of a transfer that was posted first.
struct Pending {
  uint32_t step;
  int32_t rank;
  double posted;
  // An eager send's data: when it is in at the receiver.
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
        nic_in_free_(topology.num_nodes(), 0.0) {}

  absl::StatusOr<SimulationResult> Run() {
    const size_t n = schedules_.num_steps();
    for (size_t i = 0; i < n; ++i) schedules_.mutable_step(i).waiting_for = 0;
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        const TimedStep& s = schedules_.step(i);
        if ((s.kind != StepKind::kReduce && s.kind != StepKind::kCopy) &&
            (s.peer < 0 || s.peer >= schedules_.ranks() || s.peer == rank)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "rank ", rank, "'s step #", i - schedules_.rank_begin(rank), " (",
              StepKindName(s.kind), ") names peer ", s.peer, " of ", schedules_.ranks(), " ranks"));
        }
        for (size_t k = schedules_.dependents_begin(i); k < schedules_.dependents_end(i); ++k) {
          ++schedules_.mutable_step(schedules_.dependent(k)).waiting_for;
        }
      }
    }
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        if (schedules_.step(i).waiting_for == 0) Start(static_cast<uint32_t>(i), rank, 0.0);
      }
    }
    std::vector<Event> batch;
    while (!events_.empty()) {
      const double time = events_.PopEarliest(batch);
      for (const Event& event : batch) {
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
    if (result_.steps != n) return Stuck();
    return result_;
  }

 private:
  void Push(double time, uint32_t step, int rank, EventKind kind) {
    events_.Push(time, Event{step, rank, kind});
  }

  // Occupies `rank`'s CPU for `cost` from `time` or when it is next free.
  double RunOnCpu(int rank, double time, double cost) {
    const double begin = std::max(time, cpu_free_[rank]);
    cpu_free_[rank] = begin + cost;
    return cpu_free_[rank];
  }

  const LinkCost& Link(int rank, int peer) const {
    return profile_.link(LinkBetween(topology_, rank, peer));
  }

  void Start(uint32_t step, int rank, double time) {
    const TimedStep& s = schedules_.step(step);
    switch (s.kind) {
      case StepKind::kSend:
      case StepKind::kPut:
        Push(RunOnCpu(rank, time, Link(rank, s.peer).overhead_usec), step, rank,
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
    for (size_t k = schedules_.dependents_begin(step); k < schedules_.dependents_end(step); ++k) {
      const uint32_t dependent = schedules_.dependent(k);
      if (--schedules_.mutable_step(dependent).waiting_for == 0) Start(dependent, rank, time);
    }
  }

  TransferKey KeyOf(uint32_t step, int rank) const {
    const TimedStep& s = schedules_.step(step);
    return IsSenderSide(s.kind) ? TransferKey{rank, s.peer, s.tag}
                                : TransferKey{s.peer, rank, s.tag};
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
    double bandwidth = cost.bytes_per_usec;
    if (link == LinkClass::kNetwork) {
      out = &nic_out_free_[topology_.node_of(sender)];
      in = &nic_in_free_[topology_.node_of(receiver)];
      bandwidth *= profile_.bisection;
      result_.network_bytes += s.bytes;
    } else {
      out = &port_out_free_[sender];
      in = &port_in_free_[receiver];
    }
    ++result_.transfers;
    const double duration = static_cast<double>(s.bytes) / bandwidth;
    const double leave = std::max(start, *out);
    *out = out_end = leave + duration;
    const double enter = std::max(leave + cost.latency_usec, *in);
    *in = enter + duration;
    return enter + duration;
  }

  // A rendezvous (or one-sided) transfer whose two sides are posted: the data moves once
  // the ready-to-send has reached the receiver, and both sides complete when it is in.
  void Rendezvous(uint32_t send, int sender, double send_posted, uint32_t receive, int receiver,
                  double receive_posted) {
    const double start =
        std::max(send_posted + Link(sender, receiver).latency_usec, receive_posted);
    double out_end = 0;
    const double arrival = Flow(send, sender, start, out_end);
    Push(arrival, send, sender, EventKind::kComplete);
    Push(arrival, receive, receiver, EventKind::kArrived);
  }

  void SendPosted(uint32_t send, int rank, double time) {
    const TransferKey key = KeyOf(send, rank);
    auto waiting = pending_.find(key);
    if (Eager(schedules_.step(send))) {
      double out_end = 0;
      const double arrival = Flow(send, rank, time, out_end);
      Push(out_end, send, rank, EventKind::kComplete);
      if (waiting != pending_.end()) {
        Push(arrival, waiting->second.step, waiting->second.rank, EventKind::kArrived);
        pending_.erase(waiting);
      } else {
        pending_.emplace(key, Pending{send, rank, time, arrival});
      }
      return;
    }
    if (waiting != pending_.end()) {
      const Pending receive = waiting->second;
      pending_.erase(waiting);
      Rendezvous(send, rank, time, receive.step, receive.rank, receive.posted);
    } else {
      pending_.emplace(key, Pending{send, rank, time, -1});
    }
  }

  void ReceivePosted(uint32_t receive, int rank, double time) {
    const TransferKey key = KeyOf(receive, rank);
    auto waiting = pending_.find(key);
    if (waiting == pending_.end()) {
      pending_.emplace(key, Pending{receive, rank, time, -1});
      return;
    }
    const Pending send = waiting->second;
    pending_.erase(waiting);
    if (send.arrival >= 0) {  // an eager message, come or on its way
      Push(std::max(send.arrival, time), receive, rank, EventKind::kArrived);
    } else {
      Rendezvous(send.step, send.rank, send.posted, receive, rank, time);
    }
  }

  void PayReceiveOverhead(uint32_t receive, int rank, double time) {
    const TimedStep& s = schedules_.step(receive);
    Push(RunOnCpu(rank, time, Link(rank, s.peer).overhead_usec), receive, rank,
         EventKind::kComplete);
  }

  absl::Status Stuck() const {
    // A posted side whose partner never posted: the first in rank order (step indices
    // are), so the message does not depend on the map's order.
    const Pending* first = nullptr;
    for (const auto& [key, pending] : pending_) {
      if (first == nullptr || pending.step < first->step) first = &pending;
    }
    if (first != nullptr) {
      const TimedStep& s = schedules_.step(first->step);
      return absl::InvalidArgumentError(
          absl::StrCat("the simulation cannot finish: rank ", first->rank, "'s step #",
                       first->step - schedules_.rank_begin(first->rank), " (", StepKindName(s.kind),
                       " with rank ", s.peer, ", tag ", s.tag, ") has no partner that ever posts"));
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
  absl::flat_hash_map<TransferKey, Pending> pending_;
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
  if (base + steps.size() >= (size_t{1} << 32)) {
    return absl::InvalidArgumentError("TimedSchedules::Add: more than 2^32 steps in all");
  }
  // Everything is checked before anything is added: a refused schedule leaves no steps.
  std::vector<uint32_t> counts(steps.size(), 0);
  size_t edges = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const uint64_t bytes = uint64_t{step.count()} * element_bytes;
    if (bytes > UINT32_MAX || step.tag > UINT16_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TimedSchedules::Add: rank ", schedule.rank(), "'s step #", i, " moves ", bytes,
          " bytes with tag ", step.tag, " (the simulator takes under 4 GiB and tags under 2^16)"));
    }
    for (StepId dep : step.deps) ++counts[dep];
    edges += step.deps.size();
  }
  if (dependents_.size() + edges >= (size_t{1} << 32)) {
    return absl::InvalidArgumentError("TimedSchedules::Add: more than 2^32 dependencies in all");
  }
  size_t edge = dependents_.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    TimedStep timed;
    timed.bytes = static_cast<uint32_t>(uint64_t{step.count()} * element_bytes);
    timed.peer = step.peer;
    timed.tag = static_cast<uint16_t>(step.tag);
    timed.kind = step.kind;
    timed.operands = static_cast<uint8_t>(std::min<size_t>(step.inputs.size(), 255));
    timed.dependents_begin = static_cast<uint32_t>(edge);
    edge += counts[i];
    steps_.push_back(timed);
  }
  while (dependents_.size() < edge) dependents_.push_back(0);
  std::fill(counts.begin(), counts.end(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    for (StepId dep : steps[i].deps) {
      dependents_[steps_[base + dep].dependents_begin + counts[dep]++] =
          static_cast<uint32_t>(base + i);
    }
  }
  rank_begin_.push_back(steps_.size());
  return absl::OkStatus();
}

size_t TimedSchedules::MemoryBytes() const {
  return steps_.MemoryBytes() + dependents_.MemoryBytes() + rank_begin_.capacity() * sizeof(size_t);
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
