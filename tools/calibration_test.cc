#include "tools/calibration.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

TEST(CalibrationTest, LinkCostFromTimingsOfAKnownLink) {
  // A link of 2 us latency, 1000 bytes/us and 0.5 us overhead a side: 8 B one way
  // takes 0.5 + 2 + 0.008 + 0.5; 1 MiB and 4 MiB add their bytes over the bandwidth.
  LinkTimings timings;
  timings.small_usec = 3.008;
  timings.medium_usec = 3.0 + 1048.576;
  timings.large_usec = 3.0 + 4194.304;
  timings.gap_usec = 0.9;  // not in the model
  timings.post_usec = 0.5;
  timings.exchange_usec = timings.large_usec * 1.1;  // both ways at once: full duplex
  sim::LinkCost cost = LinkCostFrom(timings, /*cpu_copies=*/false);
  EXPECT_NEAR(cost.bytes_per_usec, 1000, 1e-6);
  EXPECT_NEAR(cost.overhead_usec, 0.5, 1e-9);
  EXPECT_NEAR(cost.latency_usec, 2.0, 1e-6);
  EXPECT_FALSE(cost.half_duplex);
  EXPECT_FALSE(cost.cpu_copies);
  timings.exchange_usec = timings.large_usec * 1.9;  // one way at a time
  cost = LinkCostFrom(timings, /*cpu_copies=*/false);
  EXPECT_TRUE(cost.half_duplex);
  EXPECT_FALSE(cost.cpu_copies);
  // Bytes CPUs copy: the CPUs carry the exchange's two directions, not a half-duplex
  // port as well (that would count them twice).
  cost = LinkCostFrom(timings, /*cpu_copies=*/true);
  EXPECT_TRUE(cost.cpu_copies);
  EXPECT_FALSE(cost.half_duplex);
  EXPECT_NEAR(cost.bytes_per_usec, 1000, 1e-6);
  // Across nodes emulated on shared cores, an exchange that waits for itself is the
  // cores' copying as well; one that does not is not.
  cost = LinkCostFrom(timings, /*cpu_copies=*/false, /*on_shared_cores=*/true);
  EXPECT_TRUE(cost.half_duplex);
  EXPECT_TRUE(cost.cpu_copies);
  timings.exchange_usec = timings.large_usec * 1.1;
  cost = LinkCostFrom(timings, /*cpu_copies=*/false, /*on_shared_cores=*/true);
  EXPECT_FALSE(cost.half_duplex);
  EXPECT_FALSE(cost.cpu_copies);
  // No handshake probe, no rendezvous cost; 64 KiB in 3.008 + 65.528 + 4 us is 4 us of
  // handshake; one that took less than its bytes, none.
  EXPECT_EQ(cost.rendezvous_usec, 0);
  timings.handshake_probe_usec = 3.008 + 65.528 + 4;
  EXPECT_NEAR(LinkCostFrom(timings, true).rendezvous_usec, 4.0, 1e-6);
  // Only where the CPUs copy (shared memory): a network's loop is reported, not used.
  EXPECT_EQ(LinkCostFrom(timings, false, true).rendezvous_usec, 0);
  timings.handshake_probe_usec = 30;
  EXPECT_EQ(LinkCostFrom(timings, true).rendezvous_usec, 0);
}

// A link whose CPUs copy: rank 0's calls in a loop find their bytes in the cache, at
// 4000 bytes/us here against the ping-pong's 1000, whose roots take turns.
TEST(CalibrationTest, LinkCostFromTimingsWithACache) {
  LinkTimings timings;
  timings.small_usec = 3.002;
  timings.medium_usec = 3.0 + 1048.576;
  timings.large_usec = 3.0 + 4194.304;
  timings.post_usec = 0.5;
  timings.exchange_usec = timings.large_usec * 2;
  timings.cached_usec = 10 + 65.536;                  // 256 KiB at 4000 bytes/us
  timings.cached_medium_usec = 10 + 262.144;          // 1 MiB
  timings.handshake_probe_usec = 3.002 + 16.382 + 4;  // 64 KiB - 8 B at 4000 bytes/us
  const size_t cache = size_t{1} << 20;
  const sim::LinkCost cost = LinkCostFrom(timings, true, false, cache, /*cache_per_core=*/true);
  EXPECT_NEAR(cost.cached_bytes_per_usec, 4000, 1e-6);
  // The ping-pong's rate stays the link's, for data written in the call.
  EXPECT_NEAR(cost.bytes_per_usec, 1000, 1e-6);
  // The probe's bytes at the cached rate: 4 us of handshake left.
  EXPECT_NEAR(cost.rendezvous_usec, 4.0, 1e-6);
  EXPECT_NEAR(cost.latency_usec, 3.002 - 1.0 - 8 / 4000.0, 1e-9);
  // A shared cache must hold both ranks' 1 MiB; 1 MiB does not.
  EXPECT_EQ(LinkCostFrom(timings, true, false, cache, false).cached_bytes_per_usec, 0);
  EXPECT_GT(LinkCostFrom(timings, true, false, 2 * cache, false).cached_bytes_per_usec, 0);
  // Without a cache, across nodes (no CPU copies of the ranks' lines), or a cached pair
  // no faster than the ping-pong: none, and the ping-pong's rate as it is.
  EXPECT_EQ(LinkCostFrom(timings, true).cached_bytes_per_usec, 0);
  EXPECT_EQ(LinkCostFrom(timings, false, true, cache, true).cached_bytes_per_usec, 0);
  timings.cached_medium_usec = timings.cached_usec + 1000;
  const sim::LinkCost slow = LinkCostFrom(timings, true, false, cache, true);
  EXPECT_EQ(slow.cached_bytes_per_usec, 0);
  EXPECT_NEAR(slow.bytes_per_usec, 1000, 1e-6);
}

TEST(CalibrationTest, NoisyTimingsStillGiveAUsableLink) {
  // The large size measured faster than the medium one (a noisy machine): the bandwidth
  // comes from the large size alone; a posting slower than the one-way time (a busy
  // sender) is capped at half of it, so the small message's time is kept.
  LinkTimings timings;
  timings.small_usec = 1.0;
  timings.medium_usec = 5000;
  timings.large_usec = 4194.304;
  timings.gap_usec = 2.0;
  timings.post_usec = 2.0;
  const sim::LinkCost cost = LinkCostFrom(timings, /*cpu_copies=*/false);
  EXPECT_NEAR(cost.bytes_per_usec, 1000, 1e-6);
  EXPECT_EQ(cost.overhead_usec, 0.5);
  EXPECT_NEAR(cost.latency_usec, 0, 1e-9);
}

TEST(CalibrationTest, ACopyOfTheBytesIsTheCpusShareOfATransfer) {
  // TCP at 4 GB/s, memcpy at 10 GB/s: each side's copy takes 0.4 of the transfer.
  EXPECT_DOUBLE_EQ(CopyShareOfTransfer(4000, 10000), 0.4);
  // A link as fast as the copy (or faster: measured in different moments) is the copy.
  EXPECT_DOUBLE_EQ(CopyShareOfTransfer(10000, 10000), 1);
  EXPECT_DOUBLE_EQ(CopyShareOfTransfer(25000, 10000), 1);
  // No copy rate measured: the whole transfer, as before the share.
  EXPECT_DOUBLE_EQ(CopyShareOfTransfer(4000, 0), 1);
}

TEST(CalibrationTest, TimingsRoundTripAsALine) {
  LinkTimings timings{1.25,   300.5, 1200.75,         0.125, 0.0625,
                      2000.5, 80.25, size_t{8} << 20, 6.5,   270.5};
  absl::StatusOr<LinkTimings> back = ParseLinkTimings(FormatLinkTimings(timings));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->small_usec, 1.25);
  EXPECT_EQ(back->medium_usec, 300.5);
  EXPECT_EQ(back->large_usec, 1200.75);
  EXPECT_EQ(back->gap_usec, 0.125);
  EXPECT_EQ(back->post_usec, 0.0625);
  EXPECT_EQ(back->exchange_usec, 2000.5);
  EXPECT_EQ(back->cached_usec, 80.25);
  EXPECT_EQ(back->large_bytes, size_t{8} << 20);
  EXPECT_EQ(back->handshake_probe_usec, 6.5);
  EXPECT_EQ(back->cached_medium_usec, 270.5);
  EXPECT_FALSE(ParseLinkTimings("1 2 three").ok());
  EXPECT_FALSE(ParseLinkTimings("1 2 3 4 5 6 7 8 9").ok());
}

TEST(CalibrationTest, KernelThroughputsArePositive) {
  EXPECT_GT(MeasureReduceBytesPerUsec(size_t{256} << 10), 0);
  // Two threads of this process: a trip takes some time, and not a millisecond.
  const double trip = MeasureCacheLineTripUsec();
  EXPECT_GT(trip, 0);
  EXPECT_LT(trip, 1000);
  // A read of another process's memory: a system call, under a millisecond.
  const double call = MeasureSystemCallUsec();
  EXPECT_GT(call, 0);
  EXPECT_LT(call, 1000);
}

// The measurements refuse communicators they cannot measure, naming the rank and why.
TEST(CalibrationTest, MeasurementsRefuseCommunicatorsTheyCannotMeasure) {
  ASSERT_OK(testing::RunCommunicatorJob({.size = 3}, [](Communicator& comm, testing::RankControl&) {
    const absl::StatusOr<LinkTimings> link = MeasureLink(comm);
    EXPECT_THAT(link.status().message(),
                ::testing::HasSubstr("MeasureLink needs a 2-rank communicator, not 3"));
    const absl::StatusOr<LinkTimings> engine = MeasureEngine(comm);
    EXPECT_EQ(engine.status().code(), absl::StatusCode::kInvalidArgument);
    // A large size no larger than the medium one leaves no difference to measure.
    EXPECT_THAT(MeasureEngine(comm, kCalibrationMediumBytes).status().message(),
                ::testing::HasSubstr("large_bytes (1048576) must be above"));
    EXPECT_THAT(
        engine.status().message(),
        ::testing::HasSubstr(absl::StrCat("rank ", comm.rank(), ": MeasureEngine needs a 2-rank")));
  }));
  // Two ranks on two nodes have no node engine.
  ASSERT_OK(testing::RunCommunicatorJob(
      {.size = 2, .nodes = 2}, [](Communicator& comm, testing::RankControl&) {
        const absl::StatusOr<LinkTimings> engine = MeasureEngine(comm);
        EXPECT_EQ(engine.status().code(), absl::StatusCode::kFailedPrecondition);
        EXPECT_THAT(engine.status().message(), ::testing::HasSubstr("has none"));
      }));
}

TEST(CalibrationTest, EngineCostFromTimingsOfAKnownEngine) {
  // A trip of 0.2 us, 8 B one way in 1 us, 1 and 4 MiB in 150 and 450 us: 3 MiB more,
  // half of it copied by each rank, in 300 us is 5242.88 bytes/us; the overhead the rest
  // of the 1 us.
  LinkTimings timings;
  timings.small_usec = 1.0;
  timings.medium_usec = 150;
  timings.large_usec = 450;
  const sim::EngineCost cost = EngineCostFrom(timings, 0.2);
  EXPECT_DOUBLE_EQ(cost.bytes_per_usec, 5242.88);
  EXPECT_DOUBLE_EQ(cost.latency_usec, 0.2);
  EXPECT_DOUBLE_EQ(cost.overhead_usec, 1.0 - 0.2 - 8 / 5242.88);
  EXPECT_EQ(cost.system_call_usec, 0);
  EXPECT_EQ(EngineCostFrom(timings, 0.2, 0.45).system_call_usec, 0.45);
  // One that could not be measured (-1) is none.
  EXPECT_EQ(EngineCostFrom(timings, 0.2, -1).system_call_usec, 0);
  // A trip longer than the one-way time leaves no overhead, not a negative one.
  EXPECT_EQ(EngineCostFrom(timings, 2.0).overhead_usec, 0);
  // Without the 256 KiB time, or with a cache too small for 2 ranks' 1 MiB, no cached
  // rate: the same figures as without a cache.
  EXPECT_EQ(EngineCostFrom(timings, 0.2, 0, size_t{8} << 20).cached_bytes_per_usec, 0);
  timings.cached_usec = 60;
  EXPECT_EQ(EngineCostFrom(timings, 0.2, 0, size_t{1} << 20).cached_bytes_per_usec, 0);
  EXPECT_DOUBLE_EQ(EngineCostFrom(timings, 0.2, 0, size_t{1} << 20).bytes_per_usec, 5242.88);
}

// An engine's timings where 2 ranks' 1 MiB stay in cache (the two tests below).
LinkTimings EngineTimingsWithACache() {
  return {.small_usec = 1.0,
          .medium_usec = 78,
          .large_usec = 814,
          .cached_usec = 30,
          .large_bytes = size_t{8} << 20};
}

TEST(CalibrationTest, EngineCostFromTimingsWithACache) {
  // 256 KiB and 1 MiB in 30 and 78 us: 384 KiB more a rank in 48 us is 8192 bytes/us in
  // cache, which leaves 78 - 512 KiB / 8192 = 14 us fixed; 8 MiB in 814 us: 4 MiB a rank
  // in 800 us is 5242.88 bytes/us at the two ranks' 16 MiB, a quarter of which the 4 MiB
  // cache holds: 800 us = 1 MiB / 8192 + 3 MiB / memory's rate, so memory's rate is
  // 3 MiB / 672 us.
  LinkTimings timings = EngineTimingsWithACache();
  const sim::EngineCost cost = EngineCostFrom(timings, 0.2, 0.5, size_t{4} << 20);
  EXPECT_DOUBLE_EQ(cost.cached_bytes_per_usec, 8192);
  EXPECT_NEAR(cost.bytes_per_usec, 3 * 1048576.0 / 672, 1e-6);
  EXPECT_NEAR(cost.overhead_usec, 1.0 - 0.2 - 8 / (3 * 1048576.0 / 672), 1e-9);
  // A cached rate that comes out no faster than memory's is dropped.
  timings.large_usec = 400;
  EXPECT_EQ(EngineCostFrom(timings, 0.2, 0.5, size_t{4} << 20).cached_bytes_per_usec, 0);
}

// A cache of each core's own holds a rank's buffer alone: 1 MiB of it is enough for the
// cached pair (which one shared 1 MiB cache is not), and the large size's one 8 MiB
// buffer had an eighth of it in cache: 800 us = 512 KiB / 8192 + 3.5 MiB / memory's rate.
TEST(CalibrationTest, EngineCostFromTimingsWithACachePerCore) {
  const LinkTimings timings = EngineTimingsWithACache();
  EXPECT_EQ(EngineCostFrom(timings, 0.2, 0.5, size_t{1} << 20).cached_bytes_per_usec, 0);
  const sim::EngineCost cost = EngineCostFrom(timings, 0.2, 0.5, size_t{1} << 20, true);
  EXPECT_DOUBLE_EQ(cost.cached_bytes_per_usec, 8192);
  EXPECT_NEAR(cost.bytes_per_usec, 3.5 * 1048576.0 / (800 - 64), 1e-6);
}

TEST(CalibrationTest, TheEnginesLargeSizeIsPastTheCache) {
  EXPECT_EQ(EngineLargeBytes(0), kCalibrationLargeBytes);
  EXPECT_EQ(EngineLargeBytes(size_t{2} << 20), kCalibrationLargeBytes);
  EXPECT_EQ(EngineLargeBytes(size_t{8} << 20), size_t{8} << 20);
  EXPECT_EQ(EngineLargeBytes(size_t{9} << 20), size_t{16} << 20);
}

// The sweep's figures hang together: each working set measured once, in order; the
// cache one of them (or none), with its cached rate the faster.
TEST(CalibrationTest, CacheSweepFindsAWorkingSetOrNone) {
  const CacheSweep sweep = MeasureCacheSweep();
  ASSERT_EQ(sweep.rates.size(), 9u);  // 256 KiB .. 64 MiB
  EXPECT_EQ(sweep.rates.front().first, size_t{256} << 10);
  EXPECT_EQ(sweep.rates.back().first, kCacheSweepLargestBytes);
  if (sweep.cache_bytes == 0) {
    EXPECT_EQ(sweep.copy_bytes_per_usec, sweep.rates.back().second);
    EXPECT_GT(sweep.reduce_bytes_per_usec, 0);
    EXPECT_EQ(sweep.cached_reduce_bytes_per_usec, 0);
    std::printf("no cache seen: every working set kept 3/4 of the fastest copy rate\n");
    EXPECT_EQ(sweep.cached_copy_bytes_per_usec, 0);
    return;
  }
  // The cache is the largest working set that keeps 3/4 of the fastest rate, and its
  // cached rate the median of those up to it.
  double fastest = 0;
  for (const auto& [working_set, rate] : sweep.rates) fastest = std::max(fastest, rate);
  bool listed = false;
  for (const auto& [working_set, rate] : sweep.rates) {
    if (working_set == sweep.cache_bytes) {
      listed = true;
      EXPECT_GE(rate, 0.75 * fastest);
    }
    if (working_set > sweep.cache_bytes) {
      EXPECT_LT(rate, 0.75 * fastest) << working_set;
    }
  }
  EXPECT_TRUE(listed) << sweep.cache_bytes;
  EXPECT_GT(sweep.cached_copy_bytes_per_usec, 0);
  EXPECT_LE(sweep.cached_copy_bytes_per_usec, fastest);
  // Memory's rate, with the cache's share of 64 MiB taken out, is at most the rate
  // measured there, and the model gives that rate back at 64 MiB.
  EXPECT_LE(sweep.copy_bytes_per_usec, sweep.rates.back().second);
  EXPECT_GT(sweep.reduce_bytes_per_usec, 0);
  EXPECT_GT(sweep.cached_reduce_bytes_per_usec, 0);
  EXPECT_NEAR(sim::RateAtFootprint(sweep.copy_bytes_per_usec, sweep.cached_copy_bytes_per_usec,
                                   sweep.cache_bytes, kCacheSweepLargestBytes),
              std::min(sweep.rates.back().second, sweep.cached_copy_bytes_per_usec), 1e-6);
  // Whether the cache is each core's own was tried beside a second process where there
  // is a second core, and decided by that trial's rate.
  if (sweep.rate_beside_another == 0) {
    std::printf("no second core here: whether the cache is per core was not tried\n");
    EXPECT_FALSE(sweep.per_core);
  } else {
    EXPECT_EQ(sweep.per_core, sweep.rate_beside_another >= 0.75 * sweep.cached_copy_bytes_per_usec);
    std::printf("the cache (%zu B) %s: %.0f bytes/us beside another copy, %.0f alone\n",
                sweep.cache_bytes, sweep.per_core ? "is each core's own" : "is shared",
                sweep.rate_beside_another, sweep.cached_copy_bytes_per_usec);
  }
}

}  // namespace
}  // namespace zcoll
