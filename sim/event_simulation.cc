#include "sim/event_simulation.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"

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
  double time;
  uint64_t order;  // ties run in the order the events were made
  uint32_t step;
  EventKind kind;
  bool operator>(const Event& other) const {
    return std::tie(time, order) > std::tie(other.time, other.order);
  }
};

class Simulation {
 public:
  Simulation(const TimedSchedules& schedules, const Topology& topology,
             const MachineProfile& profile)
      : schedules_(schedules),
        topology_(topology),
        profile_(profile),
        remaining_deps_(schedules.num_steps()),
        rank_of_(schedules.num_steps()),
        cpu_free_(schedules.ranks(), 0.0),
        port_out_free_(schedules.ranks(), 0.0),
        port_in_free_(schedules.ranks(), 0.0),
        nic_out_free_(topology.num_nodes(), 0.0),
        nic_in_free_(topology.num_nodes(), 0.0) {}

  absl::StatusOr<SimulationResult> Run() {
    for (int rank = 0; rank < schedules_.ranks(); ++rank) {
      for (size_t i = schedules_.rank_begin(rank); i < schedules_.rank_begin(rank + 1); ++i) {
        rank_of_[i] = rank;
        const TimedStep& s = schedules_.step(i);
        remaining_deps_[i] = s.num_deps;
        if ((s.kind != StepKind::kReduce && s.kind != StepKind::kCopy) &&
            (s.peer < 0 || s.peer >= schedules_.ranks() || s.peer == rank)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "rank ", rank, "'s step #", i - schedules_.rank_begin(rank), " (",
              StepKindName(s.kind), ") names peer ", s.peer, " of ", schedules_.ranks(), " ranks"));
        }
      }
    }
    for (size_t i = 0; i < schedules_.num_steps(); ++i) {
      if (remaining_deps_[i] == 0) Start(static_cast<uint32_t>(i), 0.0);
    }
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      ++result_.events;
      switch (event.kind) {
        case EventKind::kComplete:
          Complete(event.step, event.time);
          break;
        case EventKind::kSendPosted:
          SendPosted(event.step, event.time);
          break;
        case EventKind::kArrived:
          PayReceiveOverhead(event.step, event.time);
          break;
      }
    }
    if (result_.steps != schedules_.num_steps()) return Stuck();
    return result_;
  }

 private:
  void Push(double time, uint32_t step, EventKind kind) {
    events_.push(Event{time, next_order_++, step, kind});
  }

  // Occupies `rank`'s CPU for `cost` from `time` or when it is next free.
  double RunOnCpu(int rank, double time, double cost) {
    const double begin = std::max(time, cpu_free_[rank]);
    cpu_free_[rank] = begin + cost;
    return cpu_free_[rank];
  }

  const LinkCost& Link(uint32_t step) const {
    const TimedStep& s = schedules_.step(step);
    return profile_.link(LinkBetween(topology_, rank_of_[step], s.peer));
  }

  void Start(uint32_t step, double time) {
    const TimedStep& s = schedules_.step(step);
    const int rank = rank_of_[step];
    switch (s.kind) {
      case StepKind::kSend:
      case StepKind::kPut:
        Push(RunOnCpu(rank, time, Link(step).overhead_usec), step, EventKind::kSendPosted);
        return;
      case StepKind::kRecv:
      case StepKind::kGet:
        ReceivePosted(step, time);
        return;
      case StepKind::kReduce: {
        const double operands = std::max<int>(s.operands, 2) - 1;
        const double cost =
            operands * static_cast<double>(s.bytes) / profile_.reduce_bytes_per_usec;
        Push(RunOnCpu(rank, time, cost), step, EventKind::kComplete);
        return;
      }
      case StepKind::kCopy:
        Push(RunOnCpu(rank, time, static_cast<double>(s.bytes) / profile_.copy_bytes_per_usec),
             step, EventKind::kComplete);
        return;
    }
  }

  void Complete(uint32_t step, double time) {
    ++result_.steps;
    finish_ = std::max(finish_, time);
    result_.usec = finish_;
    const TimedStep& s = schedules_.step(step);
    const uint32_t* dependents = schedules_.dependents(s);
    for (uint32_t i = 0; i < s.num_dependents; ++i) {
      if (--remaining_deps_[dependents[i]] == 0) Start(dependents[i], time);
    }
  }

  TransferKey KeyOf(uint32_t step) const {
    const TimedStep& s = schedules_.step(step);
    const int rank = rank_of_[step];
    return IsSenderSide(s.kind) ? TransferKey{rank, s.peer, s.tag}
                                : TransferKey{s.peer, rank, s.tag};
  }

  bool Eager(const TimedStep& send) const {
    return send.kind == StepKind::kSend && send.bytes <= profile_.eager_bytes;
  }

  // The data of `send` leaves from `start` through the sender's port and comes in
  // through the receiver's. Returns when it is all in; `out_end` gets when it is all out.
  double Flow(uint32_t send, double start, double& out_end) {
    const TimedStep& s = schedules_.step(send);
    const int sender = rank_of_[send], receiver = s.peer;
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
  void Rendezvous(uint32_t send, double send_posted, uint32_t receive, double receive_posted) {
    const double start = std::max(send_posted + Link(send).latency_usec, receive_posted);
    double out_end = 0;
    const double arrival = Flow(send, start, out_end);
    Push(arrival, send, EventKind::kComplete);
    Push(arrival, receive, EventKind::kArrived);
  }

  void SendPosted(uint32_t send, double time) {
    const TransferKey key = KeyOf(send);
    auto waiting = pending_.find(key);
    if (Eager(schedules_.step(send))) {
      double out_end = 0;
      const double arrival = Flow(send, time, out_end);
      Push(out_end, send, EventKind::kComplete);
      if (waiting != pending_.end()) {
        Push(arrival, waiting->second.step, EventKind::kArrived);
        pending_.erase(waiting);
      } else {
        pending_.emplace(key, Pending{send, time, arrival});
      }
      return;
    }
    if (waiting != pending_.end()) {
      const Pending receive = waiting->second;
      pending_.erase(waiting);
      Rendezvous(send, time, receive.step, receive.posted);
    } else {
      pending_.emplace(key, Pending{send, time, -1});
    }
  }

  void ReceivePosted(uint32_t receive, double time) {
    const TransferKey key = KeyOf(receive);
    auto waiting = pending_.find(key);
    if (waiting == pending_.end()) {
      pending_.emplace(key, Pending{receive, time, -1});
      return;
    }
    const Pending send = waiting->second;
    pending_.erase(waiting);
    if (send.arrival >= 0) {  // an eager message, come or on its way
      Push(std::max(send.arrival, time), receive, EventKind::kArrived);
    } else {
      Rendezvous(send.step, send.posted, receive, time);
    }
  }

  void PayReceiveOverhead(uint32_t receive, double time) {
    Push(RunOnCpu(rank_of_[receive], time, Link(receive).overhead_usec), receive,
         EventKind::kComplete);
  }

  absl::Status Stuck() const {
    for (size_t i = 0; i < schedules_.num_steps(); ++i) {
      if (remaining_deps_[i] == 0 && pending_.contains(KeyOf(static_cast<uint32_t>(i)))) {
        const TimedStep& s = schedules_.step(i);
        return absl::InvalidArgumentError(absl::StrCat(
            "the simulation cannot finish: rank ", rank_of_[i], "'s step #",
            i - schedules_.rank_begin(rank_of_[i]), " (", StepKindName(s.kind), " with rank ",
            s.peer, ", tag ", s.tag, ") has no partner that ever posts"));
      }
    }
    for (size_t i = 0; i < schedules_.num_steps(); ++i) {
      if (remaining_deps_[i] != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("the simulation cannot finish: rank ", rank_of_[i], "'s step #",
                         i - schedules_.rank_begin(rank_of_[i]), " never starts (a deadlock)"));
      }
    }
    return absl::InvalidArgumentError("the simulation cannot finish");
  }

  const TimedSchedules& schedules_;
  const Topology& topology_;
  const MachineProfile& profile_;
  std::vector<uint32_t> remaining_deps_;
  std::vector<int32_t> rank_of_;
  std::vector<double> cpu_free_;
  std::vector<double> port_out_free_;
  std::vector<double> port_in_free_;
  std::vector<double> nic_out_free_;
  std::vector<double> nic_in_free_;
  absl::flat_hash_map<TransferKey, Pending> pending_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t next_order_ = 0;
  double finish_ = 0;
  SimulationResult result_;
};

}  // namespace

void TimedSchedules::Add(const Schedule& schedule, size_t element_bytes) {
  ZCOLL_CHECK(schedule.rank() == ranks()) << "schedules are added in rank order";
  const size_t base = steps_.size();
  const absl::Span<const Step> steps = schedule.steps();
  ZCOLL_CHECK(base + steps.size() < (size_t{1} << 32)) << "more than 2^32 steps";
  std::vector<uint32_t> counts(steps.size(), 0);
  for (const Step& step : steps) {
    for (StepId dep : step.deps) ++counts[dep];
  }
  size_t edge = dependents_.size();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    TimedStep timed;
    timed.bytes = step.count() * element_bytes;
    timed.peer = step.peer;
    timed.tag = step.tag;
    timed.kind = step.kind;
    timed.operands = static_cast<uint8_t>(std::min<size_t>(step.inputs.size(), 255));
    timed.num_deps = static_cast<uint32_t>(step.deps.size());
    timed.dependents_begin = static_cast<uint32_t>(edge);
    edge += counts[i];
    steps_.push_back(timed);
  }
  dependents_.resize(edge);
  std::fill(counts.begin(), counts.end(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    for (StepId dep : steps[i].deps) {
      TimedStep& before = steps_[base + dep];
      dependents_[before.dependents_begin + counts[dep]++] = static_cast<uint32_t>(base + i);
      before.num_dependents = counts[dep];
    }
  }
  rank_begin_.push_back(steps_.size());
}

size_t TimedSchedules::MemoryBytes() const {
  return steps_.capacity() * sizeof(TimedStep) + dependents_.capacity() * sizeof(uint32_t) +
         rank_begin_.capacity() * sizeof(size_t);
}

LinkClass LinkBetween(const Topology& topology, int a, int b) {
  if (!topology.SameNode(a, b)) return LinkClass::kNetwork;
  return topology.SameNuma(a, b) ? LinkClass::kNuma : LinkClass::kNode;
}

absl::StatusOr<SimulationResult> Simulate(const TimedSchedules& schedules, const Topology& topology,
                                          const MachineProfile& profile) {
  if (schedules.ranks() != topology.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Simulate: ", schedules.ranks(),
                                                   " schedules for a topology of ", topology.size(),
                                                   " ranks"));
  }
  return Simulation(schedules, topology, profile).Run();
}

}  // namespace zcoll::sim
