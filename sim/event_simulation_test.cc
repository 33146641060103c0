#include "sim/event_simulation.h"

#include <algorithm>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/node_data_flow.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll::sim {
namespace {

using ::testing::HasSubstr;

// Every link alike: latency 2 us, 100 bytes/us, 0.5 us of overhead; reductions 100
// bytes/us. Round figures, so the expected times below can be worked out by hand.
MachineProfile RoundProfile(size_t eager_bytes) {
  MachineProfile profile;
  profile.name = "round";
  for (LinkCost& link : profile.links) link = LinkCost{2.0, 100.0, 0.5};
  profile.eager_bytes = eager_bytes;
  profile.reduce_bytes_per_usec = 100;
  profile.copy_bytes_per_usec = 100;
  return profile;
}

Topology OneRankPerNode(int ranks) { return *Topology::Uniform(ranks, 1); }

TimedSchedules Timed(const std::vector<Schedule>& schedules) {
  TimedSchedules timed;
  for (const Schedule& schedule : schedules) EXPECT_OK(timed.Add(schedule, 1));
  return timed;
}

double SimulatedUsec(const std::vector<Schedule>& schedules, const Topology& topology,
                     const MachineProfile& profile) {
  TimedSchedules timed = Timed(schedules);
  absl::StatusOr<SimulationResult> result = Simulate(timed, topology, profile);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->usec : -1;
}

// Rank 0 sends 1000 bytes to rank 1, which sends them back.
std::vector<Schedule> PingPong() {
  std::vector<Schedule> schedules = {Schedule(0, 2, 1000, 1000), Schedule(1, 2, 0, 1000)};
  const StepId sent = schedules[0].Send(1, 0, Slice{BufferId::Send(), 0, 1000});
  schedules[0].Recv(1, 1, Slice{BufferId::Recv(), 0, 1000}, {sent});
  const StepId received = schedules[1].Recv(0, 0, Slice{BufferId::Recv(), 0, 1000});
  schedules[1].Send(0, 1, Slice{BufferId::Recv(), 0, 1000}, {received});
  return schedules;
}

// A block's elements are constructed as they are added, so what an array reports is
// what it holds, not its block of 2^20 (zcoll_sim --verbose prints it per simulation).
TEST(BlockArrayTest, HoldsWhatWasAddedAndCountsOnlyThat) {
  BlockArray<uint64_t> values;
  EXPECT_EQ(values.MemoryBytes(), 0u);
  for (uint64_t i = 0; i < 3; ++i) values.push_back(i * 7);
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[2], 14u);
  EXPECT_EQ(values.MemoryBytes(), 3 * sizeof(uint64_t));
}

TEST(EventSimulationTest, EagerPingPongIsTwiceOverheadLatencyBytesOverhead) {
  // Each way: the sender's overhead 0.5, latency 2, 1000 bytes at 100/us = 10, the
  // receiver's overhead 0.5: 13 us; there and back 26.
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), OneRankPerNode(2), RoundProfile(4096)), 26.0);
}

TEST(EventSimulationTest, RendezvousPingPongPaysTheReadyToSendsLatency) {
  // Each way one more latency (the ready-to-send reaching the receiver): 15 us.
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), OneRankPerNode(2), RoundProfile(0)), 30.0);
}

TEST(EventSimulationTest, RendezvousPingPongPaysTheHandshakePastTheEagerSize) {
  // Each way the handshake's 1.5 us more once both sides are posted: 16.5 us.
  MachineProfile profile = RoundProfile(0);
  for (LinkCost& link : profile.links) link.rendezvous_usec = 1.5;
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), OneRankPerNode(2), profile), 33.0);
  // Messages the eager size holds pay none of it, whichever way they go.
  profile.eager_bytes = 1000;
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), OneRankPerNode(2), profile), 26.0);
}

// A link's cached rate is for the user's data unwritten in the call: rank 0's send of
// its send buffer goes at it, rank 1's of what it received at the link's rate.
TEST(EventSimulationTest, ACachedRateCarriesUnwrittenDataAlone) {
  const std::vector<Schedule> schedules = PingPong();
  TimedSchedules timed = Timed(schedules);
  ASSERT_OK(timed.MatchTransfers());
  auto source = [&](int rank, int step) {
    return timed.step(timed.rank_begin(rank) + step).operands & TimedSchedules::kSourceBits;
  };
  EXPECT_EQ(source(0, 0), 0);                               // rank 0's send
  EXPECT_EQ(source(1, 0), 0);                               // its receive, as its send
  EXPECT_EQ(source(1, 1), TimedSchedules::kSourceWritten);  // rank 1's send
  EXPECT_EQ(source(0, 1), TimedSchedules::kSourceWritten);
  MachineProfile profile = RoundProfile(4096);
  for (LinkCost& link : profile.links) link.cached_bytes_per_usec = 1000;
  // There: 0.5 + 2 + 1000 B at 1000/us + 0.5 = 4; back at 100/us, 13.
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(2), profile), 17.0);
  // Where CPUs copy the bytes, the receiver's copy goes at the same rate.
  for (LinkCost& link : profile.links) link.cpu_copies = true;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(2), profile), 17.0);
  // A scratch buffer's data was made in the call too.
  std::vector<Schedule> scratch = {Schedule(0, 2, 1000, 1000), Schedule(1, 2, 0, 1000)};
  scratch[0].Send(1, 0, Slice{BufferId::Scratch(0), 0, 1000});
  scratch[1].Recv(0, 0, Slice{BufferId::Recv(), 0, 1000});
  EXPECT_DOUBLE_EQ(SimulatedUsec(scratch, OneRankPerNode(2), profile), 13.0);
}

TEST(EventSimulationTest, LinkClassesTakeTheirOwnCosts) {
  MachineProfile profile = RoundProfile(4096);
  profile.links[static_cast<int>(LinkClass::kNuma)] = LinkCost{0.5, 1000.0, 0.25};
  profile.links[static_cast<int>(LinkClass::kNode)] = LinkCost{1.0, 500.0, 0.25};
  // Two ranks of one node, one NUMA domain each: 2 * (0.25 + 1 + 2 + 0.25) = 7.
  const Topology two_domains = *Topology::Create({{0, 0, 0}, {0, 1, 1}});
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), two_domains, profile), 7.0);
  // One domain: 2 * (0.25 + 0.5 + 1 + 0.25) = 4.
  const Topology one_domain = *Topology::Create({{0, 0, 0}, {0, 0, 0}});
  EXPECT_DOUBLE_EQ(SimulatedUsec(PingPong(), one_domain, profile), 4.0);
}

// Both ranks send 1000 eager bytes to each other at once.
std::vector<Schedule> Exchange() {
  std::vector<Schedule> schedules = {Schedule(0, 2, 1000, 1000), Schedule(1, 2, 1000, 1000)};
  for (int r = 0; r < 2; ++r) {
    schedules[r].Send(1 - r, 0, Slice{BufferId::Send(), 0, 1000});
    schedules[r].Recv(1 - r, 0, Slice{BufferId::Recv(), 0, 1000});
  }
  return schedules;
}

TEST(EventSimulationTest, AHalfDuplexLinkCarriesAnExchangeOneWayAtATime) {
  const std::vector<Schedule> schedules = Exchange();
  MachineProfile profile = RoundProfile(4096);
  // Full duplex: both ways at once, 0.5 + 2 + 10 + 0.5 = 13.
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(2), profile), 13.0);
  // Half duplex, across nodes: rank 1's data leaves once rank 0's is in, at 12.5, and is
  // in at 12.5 + 2 + 10 = 24.5, its overhead paid at 25.
  profile.links[static_cast<int>(LinkClass::kNetwork)].half_duplex = true;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(2), profile), 25.0);
  // And within a node, through the ranks' own ports.
  const Topology one_node = *Topology::Create({{0, 0, 0}, {0, 0, 0}});
  profile.links[static_cast<int>(LinkClass::kNuma)].half_duplex = true;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, one_node, profile), 25.0);
}

TEST(EventSimulationTest, ABinomialBcastOfFourRanks) {
  // zcoll's own generator, one 1000-byte chunk from rank 0 on 4 nodes.
  absl::StatusOr<const Algorithm*> binomial = FindAlgorithm(Collective::kBcast, "binomial");
  ASSERT_OK(binomial);
  CollectiveArgs args;
  args.collective = Collective::kBcast;
  args.size = 4;
  args.count = 1000;
  const Topology topology = OneRankPerNode(4);
  std::vector<Schedule> schedules;
  for (int r = 0; r < 4; ++r) schedules.push_back((*binomial)->generate(args, topology, r));
  // The root posts both sends at once (overheads at 0.5 and 1.0); its NIC carries the
  // first until 10.5, the second from then: in at 10.5 + 2 + 10 = 22.5, done 23.0.
  // The first child has it at 0.5 + 2 + 10 = 12.5, done 13.0, and passes it on: posted
  // 13.5, in 25.5, done 26.0, the last rank to finish.
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, topology, RoundProfile(4096)), 26.0);
}

// A ring allreduce of 3 * block bytes on `p` ranks: p - 1 steps of reduce-scatter
// (send a block on, receive the next into scratch, reduce it in), then p - 1 of
// allgather (pass the last block received on).
std::vector<Schedule> RingAllreduce(int p, size_t block) {
  std::vector<Schedule> schedules;
  for (int r = 0; r < p; ++r) {
    Schedule s(r, p, 0, p * block);
    const BufferId scratch = s.AddScratch(block);
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    auto block_of = [&](int index) {
      return Slice{BufferId::Recv(), static_cast<size_t>((index % p + p) % p) * block, block};
    };
    std::vector<StepId> last;
    for (int k = 0; k < p - 1; ++k) {
      s.Send(next, k, block_of(r - k), last);
      const StepId in = s.Recv(prev, k, Slice{scratch, 0, block}, last);
      const Slice target = block_of(r - k - 1);
      last = {s.Reduce({target, Slice{scratch, 0, block}}, target, {in})};
    }
    for (int k = 0; k < p - 1; ++k) {
      s.Send(next, p + k, block_of(r + 1 - k), last);
      last = {s.Recv(prev, p + k, block_of(r - k), last)};
    }
    schedules.push_back(std::move(s));
  }
  return schedules;
}

TEST(EventSimulationTest, ARingAllreduce) {
  const std::vector<Schedule> schedules = RingAllreduce(3, 1000);
  ASSERT_TRUE(ValidateSchedules(schedules).ok()) << ValidateSchedules(schedules);
  // A reduce-scatter step: overhead 0.5, latency 2, 10 for the block, overhead 0.5,
  // 10 to reduce it = 23; an allgather step the same without the reduction = 13.
  // 2 * 23 + 2 * 13 = 72.
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(3), RoundProfile(4096)), 72.0);
}

TEST(EventSimulationTest, ANodesRanksShareItsNic) {
  // Ranks 0 and 1 on node 0 each send 1000 bytes to rank 2 and rank 3 on node 1: the
  // second message waits for the first to leave the NIC (10 us), 0.5 + 10 + 2 + 10 +
  // 0.5 = 23; with a rank per node the two go at once: 13.
  auto schedules = [] {
    std::vector<Schedule> s = {Schedule(0, 4, 1000, 0), Schedule(1, 4, 1000, 0),
                               Schedule(2, 4, 0, 1000), Schedule(3, 4, 0, 1000)};
    s[0].Send(2, 0, Slice{BufferId::Send(), 0, 1000});
    s[1].Send(3, 0, Slice{BufferId::Send(), 0, 1000});
    s[2].Recv(0, 0, Slice{BufferId::Recv(), 0, 1000});
    s[3].Recv(1, 0, Slice{BufferId::Recv(), 0, 1000});
    return s;
  }();
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, *Topology::Uniform(2, 2), RoundProfile(4096)), 23.0);
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), RoundProfile(4096)), 13.0);
  // Half the bisection: the NIC's 100 bytes/us become 50.
  MachineProfile thin = RoundProfile(4096);
  thin.bisection = 0.5;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), thin), 23.0);
}

// Rank 0 sends 1000 eager bytes to rank 1; beside it (no dependency either way) the
// sender reduces 1000 bytes (10 us) after posting the send, and the receiver from the
// start.
std::vector<Schedule> SendBesideReductions(bool sender_reduces, bool receiver_reduces) {
  std::vector<Schedule> s = {Schedule(0, 2, 1000, 1000), Schedule(1, 2, 1000, 2000)};
  const Slice send{BufferId::Send(), 0, 1000}, recv{BufferId::Recv(), 0, 1000};
  s[0].Send(1, 0, send);
  if (sender_reduces) s[0].Reduce({send, recv}, recv);
  if (receiver_reduces) s[1].Reduce({send, recv}, recv);
  s[1].Recv(0, 0, Slice{BufferId::Recv(), 1000, 1000});
  return s;
}

TEST(EventSimulationTest, BytesACpuCopiesHoldTheCpusAtBothEnds) {
  MachineProfile profile = RoundProfile(4096);
  // No copies by CPUs: the message is in at 0.5 + 2 + 10 = 12.5, its receive done at 13,
  // beside the reductions (done by 10.5).
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, true), OneRankPerNode(2), profile),
                   13.0);
  profile.links[static_cast<int>(LinkClass::kNetwork)].cpu_copies = true;
  // Idle CPUs: the copies run while the bytes move, as without copies.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(false, false), OneRankPerNode(2), profile),
                   13.0);
  // The sender's CPU: the send's overhead to 0.5, then the reduction (booked when it
  // started, at 0) to 10.5; the bytes leave once it is free: 10.5, in at 22.5, done 23.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, false), OneRankPerNode(2), profile),
                   23.0);
  // The receiver's CPU reduces to 10; the bytes, in at 12.5, needed it for 10 us: its
  // copy runs 10 to 20, the overhead to 20.5.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(false, true), OneRankPerNode(2), profile),
                   20.5);
}

TEST(EventSimulationTest, ALinksCpuShareHoldsTheCpusForThatShareOfATransfer) {
  // As above, with the CPUs holding half of the bytes' 10 us (cpu_share 0.5: TCP's
  // kernel copies, faster than the transfer).
  MachineProfile profile = RoundProfile(4096);
  LinkCost& network = profile.links[static_cast<int>(LinkClass::kNetwork)];
  network.cpu_copies = true;
  network.cpu_share = 0.5;
  // Idle CPUs: as without copies.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(false, false), OneRankPerNode(2), profile),
                   13.0);
  // The sender's CPU is free at 10.5: the bytes leave then (5 us of its CPU, beside the
  // reduction's end), in at 22.5, done 23. The share changes what the copy holds, not
  // when a busy CPU lets the bytes go.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, false), OneRankPerNode(2), profile),
                   23.0);
  // The receiver's CPU reduces to 10; the bytes, in at 12.5, held it 5 us, booked from
  // 7.5, so after the reduction: 10 to 15, the overhead to 15.5 (20.5 with a share of 1).
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(false, true), OneRankPerNode(2), profile),
                   15.5);
  // An exchange on a full-duplex link: each CPU sends 0.5 to 5.5, copies what came in
  // (at 12.5) for 5 us booked from 7.5: to 12.5, its overhead to 13 (21 with a share of 1).
  EXPECT_DOUBLE_EQ(SimulatedUsec(Exchange(), OneRankPerNode(2), profile), 13.0);
}

TEST(EventSimulationTest, WithinANodeABusySenderLeavesARendezvousToTheReceiver) {
  // Past the eager size (500) within a node the message is the receiver's copy: the
  // sender's CPU, reducing from 0.5 to 10.5, is not waited for. The ready-to-send is in
  // at 2.5, the bytes at 4.5 + 10 = 14.5 (the receiver's CPU copying them), done 15.
  MachineProfile profile = RoundProfile(500);
  for (LinkCost& link : profile.links) link.cpu_copies = true;
  const Topology one_node = *Topology::Uniform(1, 2);
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, false), one_node, profile), 15.0);
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(false, false), one_node, profile), 15.0);
  // Across nodes (TCP: each side's kernel copies) the bytes wait for the sender's CPU:
  // they leave at 10.5, are in at 22.5, done 23.
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, false), OneRankPerNode(2), profile),
                   23.0);
  // An eager message within a node is the sender's copy into its pool: it waits too.
  profile.eager_bytes = 4096;
  EXPECT_DOUBLE_EQ(SimulatedUsec(SendBesideReductions(true, false), one_node, profile), 23.0);
}

TEST(EventSimulationTest, AnExchangeOfBytesCpusCopyTakesEachCpuBothCopies) {
  // On a full-duplex link: each CPU sends 0.5 to 10.5, then copies what came in (12.5)
  // for 10 us from 10.5: 20.5, its overhead to 21.
  MachineProfile profile = RoundProfile(4096);
  profile.links[static_cast<int>(LinkClass::kNetwork)].cpu_copies = true;
  EXPECT_DOUBLE_EQ(SimulatedUsec(Exchange(), OneRankPerNode(2), profile), 21.0);
}

TEST(EventSimulationTest, RanksShareTheHostsCores) {
  // Four ranks each reduce 1000 bytes (10 us).
  std::vector<Schedule> schedules;
  for (int r = 0; r < 4; ++r) {
    schedules.emplace_back(r, 4, 1000, 1000);
    schedules.back().Reduce({Slice{BufferId::Send(), 0, 1000}, Slice{BufferId::Recv(), 0, 1000}},
                            Slice{BufferId::Recv(), 0, 1000});
  }
  MachineProfile profile = RoundProfile(4096);
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), profile), 10.0);
  profile.host_cores = 2;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), profile), 20.0);
  profile.host_cores = 3;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), profile), 20.0);
  profile.host_cores = 4;
  EXPECT_DOUBLE_EQ(SimulatedUsec(schedules, OneRankPerNode(4), profile), 10.0);
}

// The largest RankLowerBoundUsec of `schedules`' ranks.
double LargestRankBound(const std::vector<Schedule>& schedules, const Topology& topology,
                        const MachineProfile& profile) {
  double largest = 0;
  for (const Schedule& schedule : schedules) {
    largest = std::max(
        largest, RankLowerBoundUsec(schedule, 1, TransferModel::kMessages, topology, profile));
  }
  return largest;
}

TEST(RankLowerBoundTest, TheBusiestTimelineOfARanksOwnSteps) {
  const MachineProfile profile = RoundProfile(4096);
  // The ring allreduce's ranks each send and receive 4 blocks of 1000 bytes (40 us
  // each way through the NIC) and their CPUs do 8 overheads and 2 reductions (24 us):
  // 40, against the 72 simulated.
  const std::vector<Schedule> ring = RingAllreduce(3, 1000);
  EXPECT_DOUBLE_EQ(LargestRankBound(ring, OneRankPerNode(3), profile), 40.0);
  EXPECT_DOUBLE_EQ(
      RankLowerBoundUsec(ring[1], 1, TransferModel::kMessages, OneRankPerNode(3), profile), 40.0);
  // Half the bisection: the NIC's 100 bytes/us become 50, so 80.
  MachineProfile thin = profile;
  thin.bisection = 0.5;
  EXPECT_DOUBLE_EQ(LargestRankBound(ring, OneRankPerNode(3), thin), 80.0);
  // The same ranks on one node, one NUMA domain: their own ports, at the same figures.
  const Topology one_node = *Topology::Create({{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  EXPECT_DOUBLE_EQ(LargestRankBound(ring, one_node, thin), 40.0);
  // A cached rate bounds as the faster: 4 us of port at 1000 bytes/us, so the CPU's 24.
  MachineProfile cached = thin;
  for (LinkCost& link : cached.links) link.cached_bytes_per_usec = 1000;
  EXPECT_DOUBLE_EQ(LargestRankBound(ring, one_node, cached), 24.0);
  // Element bytes scale every byte term: 4-byte elements, 160 us through the NIC.
  EXPECT_DOUBLE_EQ(
      RankLowerBoundUsec(ring[0], 4, TransferModel::kMessages, OneRankPerNode(3), profile), 160.0);
}

TEST(RankLowerBoundTest, CountsHalfDuplexLinksAndCpuCopiesAsTheSimulationBooksThem) {
  MachineProfile profile = RoundProfile(4096);
  // An exchange of 1000 bytes: 10 us each way; the CPU's two overheads, 1 us.
  EXPECT_DOUBLE_EQ(LargestRankBound(Exchange(), OneRankPerNode(2), profile), 10.0);
  // Half duplex: both ways on one timeline, 20 (simulated: 25).
  profile.links[static_cast<int>(LinkClass::kNetwork)].half_duplex = true;
  EXPECT_DOUBLE_EQ(LargestRankBound(Exchange(), OneRankPerNode(2), profile), 20.0);
  EXPECT_GE(SimulatedUsec(Exchange(), OneRankPerNode(2), profile), 20.0);
  // CPUs copying the bytes: each CPU sends 10, receives 10, plus the overheads: 21,
  // which is what the simulation takes too.
  profile.links[static_cast<int>(LinkClass::kNetwork)].half_duplex = false;
  profile.links[static_cast<int>(LinkClass::kNetwork)].cpu_copies = true;
  EXPECT_DOUBLE_EQ(LargestRankBound(Exchange(), OneRankPerNode(2), profile), 21.0);
  EXPECT_DOUBLE_EQ(SimulatedUsec(Exchange(), OneRankPerNode(2), profile), 21.0);
}

TEST(RankLowerBoundTest, ReductionsAndCopiesHoldTheCpu) {
  // Three operands of 1000 bytes: two operations, 20 us; then a copy of 500 at 50/us,
  // 10 us more.
  MachineProfile profile = RoundProfile(4096);
  profile.copy_bytes_per_usec = 50;
  Schedule schedule(0, 1, 1000, 3000);
  schedule.Reduce({Slice{BufferId::Send(), 0, 1000}, Slice{BufferId::Recv(), 0, 1000},
                   Slice{BufferId::Recv(), 1000, 1000}},
                  Slice{BufferId::Recv(), 2000, 1000});
  schedule.Copy(Slice{BufferId::Send(), 0, 500}, Slice{BufferId::Recv(), 0, 500});
  EXPECT_DOUBLE_EQ(
      RankLowerBoundUsec(schedule, 1, TransferModel::kMessages, OneRankPerNode(1), profile), 30.0);
  // The node engine's data flow is not bounded.
  EXPECT_EQ(RankLowerBoundUsec(schedule, 1, TransferModel::kNodeEngine, OneRankPerNode(1), profile),
            0.0);
}

TEST(EventSimulationTest, RunsAreDeterministic) {
  absl::StatusOr<const Algorithm*> rabenseifner =
      FindAlgorithm(Collective::kAllreduce, "rabenseifner");
  ASSERT_OK(rabenseifner);
  CollectiveArgs args;
  args.collective = Collective::kAllreduce;
  args.size = 24;
  args.count = 1 << 20;
  args.element_bytes = 4;
  const Topology topology = *Topology::Uniform(3, 8);
  TimedSchedules timed;
  for (int r = 0; r < 24; ++r) {
    ASSERT_OK(timed.Add((*rabenseifner)->generate(args, topology, r), 4));
  }
  MachineProfile profile = RoundProfile(8192);
  absl::StatusOr<SimulationResult> first = Simulate(timed, topology, profile);
  absl::StatusOr<SimulationResult> second = Simulate(timed, topology, profile);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->usec, second->usec);
  EXPECT_EQ(first->events, second->events);
  EXPECT_EQ(first->steps, timed.num_steps());
  EXPECT_GT(first->network_bytes, 0u);
}

TEST(EventSimulationTest, AReceiveWithoutItsSendIsAnError) {
  std::vector<Schedule> schedules = {Schedule(0, 2, 0, 10), Schedule(1, 2, 0, 10)};
  schedules[0].Recv(1, 5, Slice{BufferId::Recv(), 0, 10});
  TimedSchedules timed = Timed(schedules);
  absl::StatusOr<SimulationResult> result = Simulate(timed, OneRankPerNode(2), RoundProfile(0));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("rank 0's step #0 (recv with rank 1, tag 5)"));
}

TEST(EventSimulationTest, ASendWithoutItsReceiveIsAnError) {
  std::vector<Schedule> schedules = {Schedule(0, 2, 10, 0), Schedule(1, 2, 0, 10)};
  schedules[0].Send(1, 3, Slice{BufferId::Send(), 0, 10});
  schedules[1].Recv(0, 4, Slice{BufferId::Recv(), 0, 10});
  TimedSchedules timed = Timed(schedules);
  absl::StatusOr<SimulationResult> result = Simulate(timed, OneRankPerNode(2), RoundProfile(0));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr("rank 0's step #0 (send with rank 1, tag 3) has no partner on rank 1"));
}

TEST(EventSimulationTest, TwoTransfersWithTheSameTagAreAnError) {
  // Matching by (sender, receiver, tag) needs the triple to name one transfer.
  for (bool two_sends : {true, false}) {
    std::vector<Schedule> schedules = {Schedule(0, 2, 10, 0), Schedule(1, 2, 0, 10)};
    schedules[0].Send(1, 2, Slice{BufferId::Send(), 0, 5});
    schedules[1].Recv(0, 2, Slice{BufferId::Recv(), 0, 5});
    if (two_sends) {
      schedules[0].Send(1, 2, Slice{BufferId::Send(), 5, 5});
    } else {
      schedules[1].Recv(0, 2, Slice{BufferId::Recv(), 5, 5});
    }
    TimedSchedules timed = Timed(schedules);
    absl::StatusOr<SimulationResult> result = Simulate(timed, OneRankPerNode(2), RoundProfile(0));
    ASSERT_FALSE(result.ok());
    EXPECT_THAT(result.status().message(),
                HasSubstr("two transfers from rank 0 to rank 1 use tag 2: rank"))
        << "two_sends " << two_sends;
  }
}

TEST(EventSimulationTest, APeerOutsideTheRanksIsAnError) {
  std::vector<Schedule> schedules = {Schedule(0, 2, 10, 0), Schedule(1, 2, 0, 0)};
  schedules[0].Send(7, 0, Slice{BufferId::Send(), 0, 10});
  TimedSchedules timed = Timed(schedules);
  absl::StatusOr<SimulationResult> result = Simulate(timed, OneRankPerNode(2), RoundProfile(0));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("names peer 7 of 2 ranks"));
}

TEST(EventSimulationTest, TwoReceivesWaitingForEachOtherAreADeadlock) {
  // Each rank sends only after its receive: the eager sends never post.
  std::vector<Schedule> schedules = {Schedule(0, 2, 0, 10), Schedule(1, 2, 0, 10)};
  for (int r = 0; r < 2; ++r) {
    const StepId in = schedules[r].Recv(1 - r, 0, Slice{BufferId::Recv(), 0, 10});
    schedules[r].Send(1 - r, 0, Slice{BufferId::Recv(), 0, 10}, {in});
  }
  TimedSchedules timed = Timed(schedules);
  absl::StatusOr<SimulationResult> result = Simulate(timed, OneRankPerNode(2), RoundProfile(64));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("rank 0's step #0 (recv with rank 1, tag 0)"));
  // The receives kept their postings where their partners' indices were: the failed
  // run gives those back, so a second run finds the same deadlock.
  absl::StatusOr<SimulationResult> again = Simulate(timed, OneRankPerNode(2), RoundProfile(64));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), result.status().message());
}

TEST(TimedSchedulesTest, RefusesWhatItCannotHold) {
  TimedSchedules timed;
  Schedule first(0, 2, 0, 10);
  first.Recv(1, 0, Slice{BufferId::Recv(), 0, 10});
  // Rank 1's schedule before rank 0's.
  absl::Status out_of_order = timed.Add(Schedule(1, 2, 0, 0), 1);
  EXPECT_THAT(out_of_order.message(), HasSubstr("rank 1's schedule where rank 0's comes next"));
  // A step of 4 GiB and more (10 elements of 2^30 bytes).
  EXPECT_THAT(timed.Add(first, size_t{1} << 30).message(),
              HasSubstr("rank 0's step #0 moves 10737418240 bytes with tag 0"));
  // A tag of 2^16 on the second step: the first is not kept either.
  Schedule tagged(0, 2, 0, 10);
  tagged.Recv(1, 0, Slice{BufferId::Recv(), 0, 10});
  tagged.Recv(1, 1 << 16, Slice{BufferId::Recv(), 0, 10});
  EXPECT_THAT(timed.Add(tagged, 1).message(),
              HasSubstr("step #1 moves 10 bytes with tag 65536 (the simulator takes"));
  EXPECT_EQ(timed.ranks(), 0);
  EXPECT_EQ(timed.num_steps(), 0u);
  EXPECT_OK(timed.Add(first, 1));
  EXPECT_EQ(timed.ranks(), 1);
}

}  // namespace
}  // namespace zcoll::sim

namespace zcoll::sim {
namespace {

// The round profile with a node engine: a line's trip 1 us, 100 bytes/us, 0.5 us a copy.
MachineProfile EngineProfile() {
  MachineProfile profile = RoundProfile(4096);
  profile.engine = EngineCost{1.0, 100.0, 0.5};
  return profile;
}

double EngineUsec(const std::vector<Schedule>& schedules, int ranks,
                  const MachineProfile& profile = EngineProfile()) {
  TimedSchedules timed(TransferModel::kNodeEngine);
  for (const Schedule& schedule : schedules) EXPECT_OK(timed.Add(schedule, 1));
  absl::StatusOr<SimulationResult> result = Simulate(timed, *Topology::Uniform(1, ranks), profile);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->usec : -1;
}

// Rank 0 publishes 1000 bytes (after `busy` bytes of a copy of its own), rank 1 reads them
// (or rank 0 writes them into rank 1's buffer, with the write tag).
std::vector<Schedule> OneTransfer(uint32_t tag, size_t busy) {
  std::vector<Schedule> schedules = {Schedule(0, 2, 1000, 1000), Schedule(1, 2, 0, 1000)};
  if (busy > 0) {
    schedules[0].Copy(Slice{BufferId::Send(), 0, busy}, Slice{BufferId::Recv(), 0, busy});
  }
  schedules[0].Send(1, tag, Slice{BufferId::Send(), 0, 1000});
  schedules[1].Recv(0, tag, Slice{BufferId::Recv(), 0, 1000});
  return schedules;
}

TEST(NodeEngineSimulationTest, AReadIsATripThenTheReadersCopy) {
  // Nothing to post; the line's trip 1, then the reader's 0.5 and 1000 bytes at 100/us.
  EXPECT_DOUBLE_EQ(EngineUsec(OneTransfer(kNodePublicationTag, 0), 2), 11.5);
  // The publisher's own copy (5 us) does not hold the reader's.
  EXPECT_DOUBLE_EQ(EngineUsec(OneTransfer(kNodePublicationTag, 500), 2), 11.5);
}

TEST(NodeEngineSimulationTest, AWriteHoldsTheWritersCpu) {
  // Rank 0's CPU is busy copying until 5 us, so its write starts then: 5 + 0.5 + 10.
  EXPECT_DOUBLE_EQ(EngineUsec(OneTransfer(kNodeWriteTag, 500), 2), 15.5);
  EXPECT_DOUBLE_EQ(EngineUsec(OneTransfer(kNodeWriteTag, 0), 2), 11.5);
}

TEST(NodeEngineSimulationTest, OneReadersCopiesFromSeveralPeersTakeTurns) {
  // Rank 0 reads 1000 bytes of each of 3 peers: their lines come together at 1 us, then
  // three copies of 10.5 us one after another.
  std::vector<Schedule> schedules;
  schedules.emplace_back(0, 4, 0, 3000);
  for (int peer = 1; peer < 4; ++peer) {
    schedules[0].Recv(peer, 0, Slice{BufferId::Recv(), 1000 * static_cast<size_t>(peer - 1), 1000});
    schedules.emplace_back(peer, 4, 1000, 0);
    schedules.back().Send(0, 0, Slice{BufferId::Send(), 0, 1000});
  }
  EXPECT_DOUBLE_EQ(EngineUsec(schedules, 4), 32.5);
}

TEST(NodeEngineSimulationTest, ACopyInTheSegmentIsReadAtMemcpysRate) {
  // Rank 0's 1000 bytes copied into scratch (its slot) at memcpy's 1000 bytes/us (1 us);
  // rank 1 reads that copy at the same rate: 1 + a trip of 1 + 0.5 + 1.
  MachineProfile profile = EngineProfile();
  profile.copy_bytes_per_usec = 1000;
  std::vector<Schedule> schedules = {Schedule(0, 2, 1000, 0), Schedule(1, 2, 0, 1000)};
  const BufferId slot = schedules[0].AddScratch(1000);
  const StepId copied = schedules[0].Copy(Slice{BufferId::Send(), 0, 1000}, Slice{slot, 0, 1000});
  schedules[0].Send(1, 0, Slice{slot, 0, 1000}, {copied});
  schedules[1].Recv(0, 0, Slice{BufferId::Recv(), 0, 1000});
  EXPECT_DOUBLE_EQ(EngineUsec(schedules, 2, profile), 3.5);
  // Read in place by a reduction: the trip and the overhead only.
  std::vector<Schedule> in_place = {Schedule(0, 2, 1000, 0), Schedule(1, 2, 0, 1000)};
  in_place[0].Send(1, kNodeInPlaceReadTag, Slice{BufferId::Send(), 0, 1000});
  in_place[1].Recv(0, kNodeInPlaceReadTag, Slice{BufferId::Recv(), 0, 1000});
  EXPECT_DOUBLE_EQ(EngineUsec(in_place, 2, profile), 1.5);
}

double EngineUsec(const std::vector<Schedule>& schedules, int ranks, TransferModel transfers,
                  const MachineProfile& profile) {
  TimedSchedules timed(transfers);
  for (const Schedule& schedule : schedules) EXPECT_OK(timed.Add(schedule, 1));
  absl::StatusOr<SimulationResult> result = Simulate(timed, *Topology::Uniform(1, ranks), profile);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->usec : -1;
}

TEST(NodeEngineSimulationTest, APeersOwnBufferCostsASystemCallUnlessItIsMapped) {
  // The system call 2 us, memcpy 1000 bytes/us.
  MachineProfile profile = EngineProfile();
  profile.engine.system_call_usec = 2;
  profile.copy_bytes_per_usec = 1000;
  // A read of the publisher's own buffer: the trip 1, then 0.5 + 2 + 1000 bytes at 100/us.
  EXPECT_DOUBLE_EQ(
      EngineUsec(OneTransfer(kNodePublicationTag, 0), 2, TransferModel::kNodeEngine, profile),
      13.5);
  // A write into the reader's: the same call.
  EXPECT_DOUBLE_EQ(
      EngineUsec(OneTransfer(kNodeWriteTag, 0), 2, TransferModel::kNodeEngine, profile), 13.5);
  // Where the buffers are mapped, either is a memcpy (1 us) with no call: 1 + 0.5 + 1.
  for (const uint32_t tag : {kNodePublicationTag, kNodeWriteTag}) {
    EXPECT_DOUBLE_EQ(
        EngineUsec(OneTransfer(tag, 0), 2, TransferModel::kNodeEngineMappedBuffers, profile), 2.5)
        << tag;
  }
  // A copy in the segment is read with no call: 1 us of copy in, the trip, 0.5 + 1.
  std::vector<Schedule> slot_read = {Schedule(0, 2, 1000, 0), Schedule(1, 2, 0, 1000)};
  const BufferId slot = slot_read[0].AddScratch(1000);
  const StepId copied = slot_read[0].Copy(Slice{BufferId::Send(), 0, 1000}, Slice{slot, 0, 1000});
  slot_read[0].Send(1, 0, Slice{slot, 0, 1000}, {copied});
  slot_read[1].Recv(0, 0, Slice{BufferId::Recv(), 0, 1000});
  EXPECT_DOUBLE_EQ(EngineUsec(slot_read, 2, TransferModel::kNodeEngine, profile), 3.5);
  // Nor is a control line's word alone (no bytes): the trip and the overhead.
  std::vector<Schedule> word = {Schedule(0, 2, 0, 0), Schedule(1, 2, 0, 0)};
  word[0].Send(1, kNodePublicationTag, Slice{BufferId::Send(), 0, 0});
  word[1].Recv(0, kNodePublicationTag, Slice{BufferId::Recv(), 0, 0});
  EXPECT_DOUBLE_EQ(EngineUsec(word, 2, TransferModel::kNodeEngine, profile), 1.5);
}

TEST(NodeEngineSimulationTest, ATwoRankAllreduceOfTheDataFlow) {
  // Each rank: copies its 8 bytes into its slot (8 bytes at 100/us: 0.08); a trip later
  // (1.08) the other's line, whose 8 bytes it reduces in place (0.5), then the
  // reduction of the two (0.08): 1.66.
  CollectiveArgs args;
  args.collective = Collective::kAllreduce;
  args.size = 2;
  args.count = 8;
  args.element_bytes = 1;
  const Topology topology = *Topology::Uniform(1, 2);
  std::vector<Schedule> schedules;
  for (int r = 0; r < 2; ++r) schedules.push_back(NodeEngineDataFlow(args, topology, r));
  EXPECT_NEAR(EngineUsec(schedules, 2), 1.66, 1e-9);
}

TEST(NodeEngineSimulationTest, RefusesAProfileWithoutTheEngineAndSeveralNodes) {
  TimedSchedules timed(TransferModel::kNodeEngine);
  for (const Schedule& schedule : OneTransfer(0, 0)) ASSERT_OK(timed.Add(schedule, 1));
  const absl::StatusOr<SimulationResult> no_engine =
      Simulate(timed, *Topology::Uniform(1, 2), RoundProfile(4096));
  EXPECT_THAT(no_engine.status().message(), HasSubstr("has no node engine figures"));
  const absl::StatusOr<SimulationResult> two_nodes =
      Simulate(timed, *Topology::Uniform(2, 1), EngineProfile());
  EXPECT_THAT(two_nodes.status().message(), HasSubstr("run on one node, not 2"));
}

}  // namespace
}  // namespace zcoll::sim
