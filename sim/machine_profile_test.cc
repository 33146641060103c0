#include "sim/machine_profile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll::sim {
namespace {

using ::testing::HasSubstr;

constexpr absl::string_view kComplete = R"(# a test machine
name = test  # trailing comments too
ranks_per_node = 4
numa_per_node = 2
numa.latency_usec = 0.5
numa.bytes_per_usec = 1000
node.latency_usec = 1
node.bytes_per_usec = 500
node.overhead_usec = 0.25
network.latency_usec = 2
network.bytes_per_usec = 100
network.overhead_usec = 0.5
network.half_duplex = 1
bisection = 0.5
eager_bytes = 4096
reduce_bytes_per_usec = 300
copy_bytes_per_usec = 600
node.cpu_copies = 1
host_cores = 2
engine.latency_usec = 0.1
engine.bytes_per_usec = 2000
engine.overhead_usec = 0.05
engine.system_call_usec = 0.5
cache_bytes = 8388608
cache_per_core = 1
cached_reduce_bytes_per_usec = 900
cached_copy_bytes_per_usec = 1200
engine.cached_bytes_per_usec = 3000
node.rendezvous_usec = 2.5
node.cached_bytes_per_usec = 1500
network.cpu_share = 0.4
)";

TEST(MachineProfileTest, ParsesEveryKey) {
  absl::StatusOr<MachineProfile> profile = ParseMachineProfile(kComplete, "test.profile");
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->name, "test");
  EXPECT_EQ(profile->ranks_per_node, 4);
  EXPECT_EQ(profile->numa_per_node, 2);
  EXPECT_EQ(profile->link(LinkClass::kNuma).latency_usec, 0.5);
  EXPECT_EQ(profile->link(LinkClass::kNuma).overhead_usec, 0);
  EXPECT_EQ(profile->link(LinkClass::kNode).bytes_per_usec, 500);
  EXPECT_EQ(profile->link(LinkClass::kNode).overhead_usec, 0.25);
  EXPECT_EQ(profile->link(LinkClass::kNetwork).latency_usec, 2);
  EXPECT_TRUE(profile->link(LinkClass::kNetwork).half_duplex);
  EXPECT_FALSE(profile->link(LinkClass::kNode).half_duplex);
  EXPECT_EQ(profile->bisection, 0.5);
  EXPECT_EQ(profile->eager_bytes, 4096u);
  EXPECT_EQ(profile->reduce_bytes_per_usec, 300);
  EXPECT_EQ(profile->copy_bytes_per_usec, 600);
  EXPECT_TRUE(profile->link(LinkClass::kNode).cpu_copies);
  EXPECT_FALSE(profile->link(LinkClass::kNetwork).cpu_copies);
  EXPECT_EQ(profile->link(LinkClass::kNetwork).cpu_share, 0.4);
  EXPECT_EQ(profile->link(LinkClass::kNode).cpu_share, 1);
  EXPECT_EQ(profile->host_cores, 2);
  EXPECT_TRUE(profile->has_engine());
  EXPECT_EQ(profile->engine.latency_usec, 0.1);
  EXPECT_EQ(profile->engine.bytes_per_usec, 2000);
  EXPECT_EQ(profile->engine.overhead_usec, 0.05);
  EXPECT_EQ(profile->engine.system_call_usec, 0.5);
  EXPECT_EQ(profile->cache_bytes, size_t{8} << 20);
  EXPECT_TRUE(profile->cache_per_core);
  EXPECT_EQ(profile->cached_reduce_bytes_per_usec, 900);
  EXPECT_EQ(profile->cached_copy_bytes_per_usec, 1200);
  EXPECT_EQ(profile->engine.cached_bytes_per_usec, 3000);
  EXPECT_EQ(profile->link(LinkClass::kNode).rendezvous_usec, 2.5);
  EXPECT_EQ(profile->link(LinkClass::kNetwork).rendezvous_usec, 0);
  EXPECT_EQ(profile->link(LinkClass::kNode).cached_bytes_per_usec, 1500);
  EXPECT_EQ(profile->link(LinkClass::kNetwork).cached_bytes_per_usec, 0);
  // 0 says aloud what leaving it out says: a core per rank.
  std::string text(kComplete);
  text.replace(text.find("host_cores = 2"), 14, "host_cores = 0");
  absl::StatusOr<MachineProfile> zero = ParseMachineProfile(text, "zero.profile");
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->host_cores, 0);
}

TEST(MachineProfileTest, FormatsWhatItParses) {
  absl::StatusOr<MachineProfile> profile = ParseMachineProfile(kComplete, "test.profile");
  ASSERT_OK(profile);
  // A measured figure keeps its digits.
  profile->links[static_cast<int>(LinkClass::kNode)].latency_usec = 0.123456789;
  const std::string text = FormatMachineProfile(*profile, "measured\nby a test");
  EXPECT_THAT(text, HasSubstr("# measured\n# by a test\n"));
  absl::StatusOr<MachineProfile> again = ParseMachineProfile(text, "formatted");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(FormatMachineProfile(*again, ""), FormatMachineProfile(*profile, ""));
  EXPECT_EQ(again->link(LinkClass::kNode).latency_usec, 0.123456789);
  EXPECT_EQ(again->engine.bytes_per_usec, 2000);
  EXPECT_EQ(again->engine.system_call_usec, 0.5);
  EXPECT_EQ(again->cache_bytes, size_t{8} << 20);
  EXPECT_TRUE(again->cache_per_core);
  EXPECT_EQ(again->engine.cached_bytes_per_usec, 3000);
  EXPECT_EQ(again->link(LinkClass::kNode).rendezvous_usec, 2.5);
  EXPECT_EQ(again->link(LinkClass::kNode).cached_bytes_per_usec, 1500);
  // Without a cache: no cached rates written (they would never apply).
  MachineProfile uncached = *profile;
  uncached.cache_bytes = 0;
  EXPECT_THAT(FormatMachineProfile(uncached, ""), ::testing::Not(HasSubstr("cached")));
  // Without the engine's keys: none written, and none read back.
  profile->engine = EngineCost{};
  const std::string without = FormatMachineProfile(*profile, "");
  EXPECT_THAT(without, ::testing::Not(HasSubstr("engine.")));
  absl::StatusOr<MachineProfile> no_engine = ParseMachineProfile(without, "no engine");
  ASSERT_TRUE(no_engine.ok()) << no_engine.status();
  EXPECT_FALSE(no_engine->has_engine());
}

// The error for `text` (kComplete with `line` replaced by `replacement`).
std::string ErrorFor(const std::string& line, const std::string& replacement) {
  std::string text(kComplete);
  const size_t at = text.find(line);
  EXPECT_NE(at, std::string::npos) << line;
  text.replace(at, line.size(), replacement);
  absl::StatusOr<MachineProfile> profile = ParseMachineProfile(text, "bad.profile");
  EXPECT_FALSE(profile.ok()) << replacement;
  return profile.ok() ? "" : std::string(profile.status().message());
}

TEST(MachineProfileTest, RefusesBadInputNamingTheLine) {
  EXPECT_EQ(ErrorFor("bisection = 0.5", "bisection 0.5"),
            "bad.profile line 14: expected key = value ('bisection 0.5')");
  EXPECT_THAT(ErrorFor("network.half_duplex = 1", "network.half_duplex = 2"),
              HasSubstr("line 13: network.half_duplex is 0 or 1"));
  EXPECT_THAT(ErrorFor("network.latency_usec = 2", "network.latency_usec = fast"),
              HasSubstr("line 10: network.latency_usec needs a number, got 'fast'"));
  EXPECT_THAT(ErrorFor("network.bytes_per_usec = 100", "network.bytes_per_usec = 0"),
              HasSubstr("network.bytes_per_usec must be above 0"));
  EXPECT_THAT(ErrorFor("node.overhead_usec = 0.25", "node.overhead_usec = -1"),
              HasSubstr("node.overhead_usec must not be negative"));
  EXPECT_THAT(ErrorFor("ranks_per_node = 4", "ranks_per_node = 2.5"),
              HasSubstr("ranks_per_node must be a whole number"));
  EXPECT_THAT(ErrorFor("bisection = 0.5", "bisection = 2"), HasSubstr("bisection is a fraction"));
  EXPECT_THAT(ErrorFor("node.cpu_copies = 1", "node.cpu_copies = yes"),
              HasSubstr("line 18: node.cpu_copies needs a number, got 'yes'"));
  EXPECT_THAT(ErrorFor("node.cpu_copies = 1", "node.cpu_copies = 3"),
              HasSubstr("node.cpu_copies is 0 or 1"));
  EXPECT_THAT(ErrorFor("network.cpu_share = 0.4", "network.cpu_share = 0"),
              HasSubstr("network.cpu_share is a share: above 0 and at most 1"));
  EXPECT_THAT(ErrorFor("network.cpu_share = 0.4", "network.cpu_share = 1.5"),
              HasSubstr("network.cpu_share is a share: above 0 and at most 1"));
  EXPECT_THAT(ErrorFor("host_cores = 2", "host_cores = 1.5"),
              HasSubstr("line 19: host_cores must be 0 (a core per rank) or a whole number"));
  EXPECT_THAT(ErrorFor("host_cores = 2", "host_cores = -2"),
              HasSubstr("host_cores must be 0 (a core per rank) or a whole number"));
  EXPECT_THAT(ErrorFor("copy_bytes_per_usec = 600", "copy_bytes_per_second = 600"),
              HasSubstr("unknown key copy_bytes_per_second"));
  EXPECT_THAT(ErrorFor("numa.latency_usec = 0.5", "numa.delay_usec = 0.5"),
              HasSubstr("unknown key numa.delay_usec (a link has"));
  EXPECT_THAT(ErrorFor("eager_bytes = 4096", "eager_bytes ="),
              HasSubstr("eager_bytes has no value"));
  EXPECT_EQ(ErrorFor("node.latency_usec = 1\n", ""), "bad.profile: missing node.latency_usec");
  EXPECT_THAT(ErrorFor("numa_per_node = 2", "numa_per_node = 8"),
              HasSubstr("numa_per_node (8) exceeds ranks_per_node (4)"));
  EXPECT_THAT(ErrorFor("network.bytes_per_usec = 100", "network.bytes_per_usec = nan"),
              HasSubstr("needs a number"));
  EXPECT_THAT(ErrorFor("engine.overhead_usec = 0.05", "engine.copy_usec = 1"),
              HasSubstr("line 22: unknown key engine.copy_usec (the engine has latency_usec"));
  EXPECT_THAT(ErrorFor("engine.bytes_per_usec = 2000", "engine.bytes_per_usec = 0"),
              HasSubstr("engine.bytes_per_usec must be above 0"));
  EXPECT_THAT(ErrorFor("engine.latency_usec = 0.1", "engine.latency_usec = -0.1"),
              HasSubstr("engine.latency_usec must not be negative"));
  EXPECT_THAT(ErrorFor("engine.system_call_usec = 0.5", "engine.system_call_usec = -1"),
              HasSubstr("line 23: engine.system_call_usec must not be negative"));
  // One engine figure asks for the others it needs.
  EXPECT_EQ(ErrorFor("engine.bytes_per_usec = 2000\n", ""),
            "bad.profile: missing engine.bytes_per_usec");
  EXPECT_EQ(ErrorFor("engine.latency_usec = 0.1\n", ""),
            "bad.profile: missing engine.latency_usec");
  EXPECT_THAT(ErrorFor("cache_per_core = 1", "cache_per_core = 2"),
              HasSubstr("line 25: cache_per_core must be 0 or 1"));
  EXPECT_THAT(ErrorFor("cache_bytes = 8388608", "cache_bytes = 1.5"),
              HasSubstr("line 24: cache_bytes must be a whole number of bytes"));
  EXPECT_THAT(ErrorFor("cache_bytes = 8388608", "cache_bytes = -1"),
              HasSubstr("cache_bytes must not be negative"));
  EXPECT_THAT(ErrorFor("cached_copy_bytes_per_usec = 1200", "cached_copy_bytes_per_usec = 0"),
              HasSubstr("cached_copy_bytes_per_usec must be above 0"));
  EXPECT_THAT(ErrorFor("engine.cached_bytes_per_usec = 3000", "engine.cached_usec = 1"),
              HasSubstr("cached_bytes_per_usec)"));
  EXPECT_THAT(ErrorFor("node.rendezvous_usec = 2.5", "node.rendezvous_usec = -2"),
              HasSubstr("line 29: node.rendezvous_usec must not be negative"));
  EXPECT_THAT(ErrorFor("node.cached_bytes_per_usec = 1500", "node.cached_bytes_per_usec = 0"),
              HasSubstr("line 30: node.cached_bytes_per_usec must be above 0"));
  EXPECT_THAT(ErrorFor("node.cached_bytes_per_usec = 1500", "node.cached_usec = 1"),
              HasSubstr("rendezvous_usec, cached_bytes_per_usec, half_duplex"));
  // Cached rates with no cache would never apply.
  EXPECT_THAT(ErrorFor("cache_bytes = 8388608", "cache_bytes = 0"),
              HasSubstr("bad.profile: cached rates are given but cache_bytes is not"));
  EXPECT_EQ(ErrorFor("eager_bytes = 4096", "eager_bytes = 4096\neager_bytes = 8192"),
            "bad.profile line 16: eager_bytes was already given on line 15 "
            "('eager_bytes = 8192')");
}

// A call whose footprint fits the cache copies and reduces at the cached rates; one
// past it, the cache's share of its bytes at them and the rest at memory's; on a profile
// without a cache, all at memory's. Either way the cache is decided.
TEST(MachineProfileTest, TheCachedRatesApplyToTheCachesShareOfAFootprint) {
  absl::StatusOr<MachineProfile> profile = ParseMachineProfile(kComplete, "test.profile");
  ASSERT_OK(profile);
  const MachineProfile in_cache = ProfileForFootprint(*profile, 8 << 20);
  EXPECT_EQ(in_cache.reduce_bytes_per_usec, 900);
  EXPECT_EQ(in_cache.copy_bytes_per_usec, 1200);
  EXPECT_EQ(in_cache.engine.bytes_per_usec, 3000);
  // A link's cached rate is decided beside its rate, which the messages of data
  // written in the call keep.
  EXPECT_EQ(in_cache.link(LinkClass::kNode).cached_bytes_per_usec, 1500);
  EXPECT_EQ(in_cache.link(LinkClass::kNode).bytes_per_usec, 500);
  // A link with no cached rate (the network's, numa's here) keeps its own.
  EXPECT_EQ(in_cache.link(LinkClass::kNetwork).bytes_per_usec, 100);
  EXPECT_EQ(in_cache.link(LinkClass::kNuma).bytes_per_usec, 1000);
  EXPECT_EQ(in_cache.cache_bytes, 0u);
  // Twice the cache: half the bytes at each rate. (Engine: 1 / (0.5 / 3000 + 0.5 / 2000).)
  const MachineProfile past = ProfileForFootprint(*profile, 16 << 20);
  EXPECT_DOUBLE_EQ(past.reduce_bytes_per_usec, 1 / (0.5 / 900 + 0.5 / 300));
  EXPECT_DOUBLE_EQ(past.copy_bytes_per_usec, 1 / (0.5 / 1200 + 0.5 / 600));
  EXPECT_DOUBLE_EQ(past.engine.bytes_per_usec, 2400);
  EXPECT_DOUBLE_EQ(past.link(LinkClass::kNode).cached_bytes_per_usec,
                   750);  // 1 / (0.5/1500 + 0.5/500)
  EXPECT_EQ(past.link(LinkClass::kNode).bytes_per_usec, 500);
  EXPECT_EQ(past.cache_bytes, 0u);
  // Far past it, memory's rate nearly.
  EXPECT_NEAR(ProfileForFootprint(*profile, 1e15).engine.bytes_per_usec, 2000, 1e-3);
  // Decided: a part of the call does not decide again.
  EXPECT_EQ(ProfileForFootprint(past, 1).engine.bytes_per_usec, 2400);
  EXPECT_DOUBLE_EQ(ProfileForFootprint(past, 1).link(LinkClass::kNode).cached_bytes_per_usec, 750);
  // A cached rate not given stays memory's.
  profile->cached_copy_bytes_per_usec = 0;
  EXPECT_EQ(ProfileForFootprint(*profile, 1).copy_bytes_per_usec, 600);
  profile->cache_bytes = 0;
  EXPECT_EQ(ProfileForFootprint(*profile, 1).reduce_bytes_per_usec, 300);
}

// The calibration's inverse: memory's rate from one measured past the cache, which the
// model then gives back at that footprint.
TEST(MachineProfileTest, MemorysRateFromAMeasurementPastTheCache) {
  const size_t cache = size_t{8} << 20;
  const double memory = MemoryRateFrom(2400, 3000, cache, 16 << 20);
  EXPECT_DOUBLE_EQ(memory, 2000);
  EXPECT_DOUBLE_EQ(RateAtFootprint(memory, 3000, cache, 16 << 20), 2400);
  // Measured within the cache, without one, or no slower than the cached rate: as it is.
  EXPECT_EQ(MemoryRateFrom(2400, 3000, cache, 4 << 20), 2400);
  EXPECT_EQ(MemoryRateFrom(2400, 3000, 0, 16 << 20), 2400);
  EXPECT_EQ(MemoryRateFrom(3500, 3000, cache, 16 << 20), 3500);
}

TEST(MachineProfileTest, ShippedProfilesParseAndLoadByName) {
  ASSERT_FALSE(ShippedProfiles().empty());
  for (const ShippedProfile& shipped : ShippedProfiles()) {
    absl::StatusOr<MachineProfile> profile = LoadMachineProfile(std::string(shipped.name));
    ASSERT_TRUE(profile.ok()) << shipped.name << ": " << profile.status();
    // Within a node the CPUs copy a message (a shared-memory transport has no DMA
    // engine); across nodes the NIC moves it.
    EXPECT_TRUE(profile->link(LinkClass::kNuma).cpu_copies) << shipped.name;
    EXPECT_TRUE(profile->link(LinkClass::kNode).cpu_copies) << shipped.name;
    EXPECT_FALSE(profile->link(LinkClass::kNetwork).cpu_copies) << shipped.name;
  }
  absl::StatusOr<MachineProfile> default_profile = LoadMachineProfile("infiniband");
  ASSERT_OK(default_profile);
  EXPECT_EQ(default_profile->ranks_per_node, 64);
  EXPECT_TRUE(default_profile->has_engine());
  absl::StatusOr<MachineProfile> missing = LoadMachineProfile("/no/such/profile");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("'/no/such/profile' is neither a shipped profile (infiniband"));
}

}  // namespace
}  // namespace zcoll::sim
