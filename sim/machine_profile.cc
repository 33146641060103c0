#include "sim/machine_profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace zcoll::sim {
namespace {

// Figures for a cluster of 64-core two-socket nodes on HDR InfiniBand. Where they come
// from is in the text; they are typical published figures, not a measurement here.
constexpr absl::string_view kInfinibandHdr =
    R"(# HDR InfiniBand cluster of 64-core, two-socket nodes (the default profile).
# Network: IBTA HDR 4x is 200 Gbit/s per port = 25 GB/s; MPI ping-pong bandwidth on
# HDR reaches about 24 GB/s and small-message latency about 1.1 us across one switch
# (NVIDIA ConnectX-6 product brief: "sub 600 ns" adapter latency; Quantum QM8700
# switch: 130 ns port to port; OSU micro-benchmark figures published for HDR systems).
# Overhead: the CPU time to post a send or complete a receive with verbs, about 0.2 us.
# Within a node (8 NUMA domains of 8 cores, as AMD EPYC 7003-class servers in NPS4
# mode): shared-memory latency 0.25 us within a domain and 0.45 us across; a core's
# copy bandwidth with every core busy about 5.5 GB/s (a node's ~350 GB/s STREAM copy
# over 64 cores) and more within the domain; the reduction kernels run at memory speed
# (a two-operand float sum reads two bytes per byte written). Messages within a node
# are copied by the CPUs (numa.cpu_copies, node.cpu_copies): a shared-memory transport
# (zcoll's, Open MPI's vader, MPICH's nemesis) has no DMA engine, so a message's bytes
# hold its sender's core while they go into shared memory and its receiver's while they
# come out.
# The node engine: a control line's trip between two cores about 0.02 us within a core
# complex, 0.1 us across complexes and 0.2 us across sockets (AnandTech's EPYC Milan
# review, inter-core bounce test), so 0.15 us for a flat engine whose peers are mostly
# in other complexes; a core's copy from a peer's memory at the node link's 5.5 GB/s;
# 0.05 us of a core's time per peer it reads (its line's checks), and 0.5 us more for
# each read or write of a peer's own buffer (process_vm_readv/writev's system call:
# 0.49 us for 64 B measured on zcoll's 2-core Debian 12 test machine, Linux 6.1, by
# zcoll_bench --calibrate; no server figure is published, and the call's cost is the
# kernel's fixed path: entry, the peer's mm and its page pinned).
name = infiniband_hdr
ranks_per_node = 64
numa_per_node = 8
numa.latency_usec = 0.25
numa.bytes_per_usec = 8000
numa.overhead_usec = 0.05
numa.cpu_copies = 1
node.latency_usec = 0.45
node.bytes_per_usec = 5500
node.overhead_usec = 0.05
node.cpu_copies = 1
network.latency_usec = 1.1
network.bytes_per_usec = 24000
network.overhead_usec = 0.2
bisection = 1
eager_bytes = 8192
reduce_bytes_per_usec = 4000
copy_bytes_per_usec = 5500
engine.latency_usec = 0.15
engine.bytes_per_usec = 5500
engine.overhead_usec = 0.05
engine.system_call_usec = 0.5
)";

constexpr absl::string_view kInfinibandNdr =
    R"(# NDR InfiniBand cluster of 64-core, two-socket nodes.
# Network: IBTA NDR 4x is 400 Gbit/s per port = 50 GB/s; MPI bandwidth about 48 GB/s and
# latency about 1.0 us across one switch (NVIDIA ConnectX-7 and Quantum-2 product
# briefs; OSU micro-benchmark figures published for NDR systems). Nodes (and their
# node engine) as in infiniband_hdr.
name = infiniband_ndr
ranks_per_node = 64
numa_per_node = 8
numa.latency_usec = 0.25
numa.bytes_per_usec = 8000
numa.overhead_usec = 0.05
numa.cpu_copies = 1
node.latency_usec = 0.45
node.bytes_per_usec = 5500
node.overhead_usec = 0.05
node.cpu_copies = 1
network.latency_usec = 1.0
network.bytes_per_usec = 48000
network.overhead_usec = 0.2
bisection = 1
eager_bytes = 8192
reduce_bytes_per_usec = 4000
copy_bytes_per_usec = 5500
engine.latency_usec = 0.15
engine.bytes_per_usec = 5500
engine.overhead_usec = 0.05
engine.system_call_usec = 0.5
)";

constexpr ShippedProfile kShipped[] = {
    {"infiniband", kInfinibandHdr},
    {"infiniband_hdr", kInfinibandHdr},
    {"infiniband_ndr", kInfinibandNdr},
};

bool ParseLinkKey(absl::string_view key, LinkClass& link, absl::string_view& field) {
  for (int i = 0; i < kNumLinkClasses; ++i) {
    const LinkClass candidate = static_cast<LinkClass>(i);
    if (absl::ConsumePrefix(&key, absl::StrCat(LinkClassName(candidate), "."))) {
      link = candidate;
      field = key;
      return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view LinkClassName(LinkClass link) {
  switch (link) {
    case LinkClass::kNuma:
      return "numa";
    case LinkClass::kNode:
      return "node";
    case LinkClass::kNetwork:
      return "network";
  }
  return "?";
}

absl::StatusOr<MachineProfile> ParseMachineProfile(absl::string_view text,
                                                   absl::string_view origin) {
  MachineProfile profile;
  bool have_ranks_per_node = false;
  bool have_latency[kNumLinkClasses] = {};
  bool have_bandwidth[kNumLinkClasses] = {};
  bool any_engine = false, have_engine_latency = false, have_engine_bandwidth = false;
  bool have_cached_rate = false;
  int line_number = 0;
  absl::flat_hash_map<std::string, int> line_of_key;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    auto refuse = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, " line ", line_number, ": ", why, " ('", line, "')"));
    };
    const size_t equals = line.find('=');
    if (equals == absl::string_view::npos) return refuse("expected key = value");
    const absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, equals));
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(equals + 1));
    if (value.empty()) return refuse(absl::StrCat(key, " has no value"));
    // A key given twice is a mistake either way round: neither value is silently lost.
    if (const auto [first, added] = line_of_key.emplace(std::string(key), line_number); !added) {
      return refuse(absl::StrCat(key, " was already given on line ", first->second));
    }
    if (key == "name") {
      profile.name = std::string(value);
      continue;
    }
    double number = 0;
    if (!absl::SimpleAtod(value, &number) || !std::isfinite(number)) {
      return refuse(absl::StrCat(key, " needs a number, got '", value, "'"));
    }
    // `positive`: must be above 0 (bandwidths, counts); else at least 0.
    auto check = [&](bool positive) -> absl::Status {
      if (positive ? number > 0 : number >= 0) return absl::OkStatus();
      return refuse(absl::StrCat(key, positive ? " must be above 0" : " must not be negative"));
    };
    auto whole = [&](int& out) -> absl::Status {
      if (number != std::floor(number) || number < 1 || number > (1 << 20)) {
        return refuse(absl::StrCat(key, " must be a whole number from 1 to 2^20"));
      }
      out = static_cast<int>(number);
      return absl::OkStatus();
    };
    absl::Status status;
    LinkClass link;
    absl::string_view field;
    if (key == "ranks_per_node") {
      status = whole(profile.ranks_per_node);
      have_ranks_per_node = true;
    } else if (key == "numa_per_node") {
      status = whole(profile.numa_per_node);
    } else if (key == "host_cores") {
      // 0 is the default said aloud: a core per rank.
      if (number != 0 && !whole(profile.host_cores).ok()) {
        status = refuse("host_cores must be 0 (a core per rank) or a whole number from 1 to 2^20");
      }
    } else if (key == "bisection") {
      status = check(true);
      if (status.ok() && number > 1) status = refuse("bisection is a fraction: above 0, at most 1");
      profile.bisection = number;
    } else if (key == "eager_bytes") {
      status = check(false);
      profile.eager_bytes = static_cast<size_t>(number);
    } else if (key == "reduce_bytes_per_usec") {
      status = check(true);
      profile.reduce_bytes_per_usec = number;
    } else if (key == "copy_bytes_per_usec") {
      status = check(true);
      profile.copy_bytes_per_usec = number;
    } else if (key == "cache_bytes") {
      status = check(false);
      if (status.ok() && number != std::floor(number)) {
        status = refuse("cache_bytes must be a whole number of bytes");
      }
      profile.cache_bytes = static_cast<size_t>(number);
    } else if (key == "cache_per_core") {
      if (number != 0 && number != 1) status = refuse("cache_per_core must be 0 or 1");
      profile.cache_per_core = number == 1;
    } else if (key == "cached_reduce_bytes_per_usec") {
      status = check(true);
      profile.cached_reduce_bytes_per_usec = number;
      have_cached_rate = true;
    } else if (key == "cached_copy_bytes_per_usec") {
      status = check(true);
      profile.cached_copy_bytes_per_usec = number;
      have_cached_rate = true;
    } else if (absl::StartsWith(key, "engine.")) {
      const absl::string_view engine_field = key.substr(7);
      if (engine_field == "latency_usec") {
        status = check(false);
        profile.engine.latency_usec = number;
        have_engine_latency = true;
      } else if (engine_field == "bytes_per_usec") {
        status = check(true);
        profile.engine.bytes_per_usec = number;
        have_engine_bandwidth = true;
      } else if (engine_field == "overhead_usec") {
        status = check(false);
        profile.engine.overhead_usec = number;
      } else if (engine_field == "system_call_usec") {
        status = check(false);
        profile.engine.system_call_usec = number;
      } else if (engine_field == "cached_bytes_per_usec") {
        status = check(true);
        profile.engine.cached_bytes_per_usec = number;
        have_cached_rate = true;
      } else {
        status = refuse(absl::StrCat("unknown key ", key,
                                     " (the engine has latency_usec, bytes_per_usec, "
                                     "overhead_usec, system_call_usec and cached_bytes_per_usec)"));
      }
      any_engine = true;
    } else if (ParseLinkKey(key, link, field)) {
      LinkCost& cost = profile.links[static_cast<int>(link)];
      const int index = static_cast<int>(link);
      if (field == "latency_usec") {
        status = check(false);
        cost.latency_usec = number;
        have_latency[index] = true;
      } else if (field == "bytes_per_usec") {
        status = check(true);
        cost.bytes_per_usec = number;
        have_bandwidth[index] = true;
      } else if (field == "overhead_usec") {
        status = check(false);
        cost.overhead_usec = number;
      } else if (field == "rendezvous_usec") {
        status = check(false);
        cost.rendezvous_usec = number;
      } else if (field == "cached_bytes_per_usec") {
        status = check(true);
        cost.cached_bytes_per_usec = number;
        have_cached_rate = true;
      } else if (field == "cpu_share") {
        status = number > 0 && number <= 1
                     ? absl::OkStatus()
                     : refuse(absl::StrCat(key, " is a share: above 0 and at most 1"));
        cost.cpu_share = number;
      } else if (field == "half_duplex" || field == "cpu_copies") {
        if (number != 0 && number != 1) status = refuse(absl::StrCat(key, " is 0 or 1"));
        (field == "half_duplex" ? cost.half_duplex : cost.cpu_copies) = number == 1;
      } else {
        status = refuse(absl::StrCat("unknown key ", key,
                                     " (a link has latency_usec, bytes_per_usec, overhead_usec, "
                                     "rendezvous_usec, cached_bytes_per_usec, half_duplex, "
                                     "cpu_copies and cpu_share)"));
      }
    } else {
      status = refuse(absl::StrCat("unknown key ", key));
    }
    if (!status.ok()) return status;
  }
  std::vector<std::string> missing;
  if (!have_ranks_per_node) missing.push_back("ranks_per_node");
  for (int i = 0; i < kNumLinkClasses; ++i) {
    const absl::string_view link = LinkClassName(static_cast<LinkClass>(i));
    if (!have_latency[i]) missing.push_back(absl::StrCat(link, ".latency_usec"));
    if (!have_bandwidth[i]) missing.push_back(absl::StrCat(link, ".bytes_per_usec"));
  }
  if (any_engine && !have_engine_latency) missing.push_back("engine.latency_usec");
  if (any_engine && !have_engine_bandwidth) missing.push_back("engine.bytes_per_usec");
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": missing ", absl::StrJoin(missing, ", ")));
  }
  if (profile.numa_per_node > profile.ranks_per_node) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": numa_per_node (", profile.numa_per_node,
                     ") exceeds ranks_per_node (", profile.ranks_per_node, ")"));
  }
  // A cached rate without the cache's size would never apply: a mistake, not a choice.
  if (have_cached_rate && profile.cache_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin,
                     ": cached rates are given but cache_bytes is not (or is 0), so "
                     "they would never apply"));
  }
  if (profile.name.empty()) profile.name = std::string(origin);
  return profile;
}

std::string FormatMachineProfile(const MachineProfile& profile, absl::string_view comment) {
  std::string text;
  for (absl::string_view line : absl::StrSplit(comment, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&text, "# ", line, "\n");
  }
  absl::StrAppend(&text, "name = ", profile.name, "\n");
  absl::StrAppend(&text, "ranks_per_node = ", profile.ranks_per_node, "\n");
  absl::StrAppend(&text, "numa_per_node = ", profile.numa_per_node, "\n");
  for (int i = 0; i < kNumLinkClasses; ++i) {
    const absl::string_view link = LinkClassName(static_cast<LinkClass>(i));
    const LinkCost& cost = profile.links[i];
    absl::StrAppendFormat(&text, "%s.latency_usec = %.10g\n", link, cost.latency_usec);
    absl::StrAppendFormat(&text, "%s.bytes_per_usec = %.10g\n", link, cost.bytes_per_usec);
    absl::StrAppendFormat(&text, "%s.overhead_usec = %.10g\n", link, cost.overhead_usec);
    if (cost.rendezvous_usec > 0) {
      absl::StrAppendFormat(&text, "%s.rendezvous_usec = %.10g\n", link, cost.rendezvous_usec);
    }
    if (profile.cache_bytes > 0 && cost.cached_bytes_per_usec > 0) {
      absl::StrAppendFormat(&text, "%s.cached_bytes_per_usec = %.10g\n", link,
                            cost.cached_bytes_per_usec);
    }
    if (cost.half_duplex) absl::StrAppendFormat(&text, "%s.half_duplex = 1\n", link);
    if (cost.cpu_copies) absl::StrAppendFormat(&text, "%s.cpu_copies = 1\n", link);
    if (cost.cpu_share != 1) {
      absl::StrAppendFormat(&text, "%s.cpu_share = %.10g\n", link, cost.cpu_share);
    }
  }
  absl::StrAppendFormat(&text, "bisection = %.10g\n", profile.bisection);
  absl::StrAppend(&text, "eager_bytes = ", profile.eager_bytes, "\n");
  absl::StrAppendFormat(&text, "reduce_bytes_per_usec = %.10g\n", profile.reduce_bytes_per_usec);
  absl::StrAppendFormat(&text, "copy_bytes_per_usec = %.10g\n", profile.copy_bytes_per_usec);
  if (profile.host_cores > 0) absl::StrAppend(&text, "host_cores = ", profile.host_cores, "\n");
  if (profile.cache_bytes > 0) {
    absl::StrAppend(&text, "cache_bytes = ", profile.cache_bytes, "\n");
    if (profile.cache_per_core) absl::StrAppend(&text, "cache_per_core = 1\n");
    if (profile.cached_reduce_bytes_per_usec > 0) {
      absl::StrAppendFormat(&text, "cached_reduce_bytes_per_usec = %.10g\n",
                            profile.cached_reduce_bytes_per_usec);
    }
    if (profile.cached_copy_bytes_per_usec > 0) {
      absl::StrAppendFormat(&text, "cached_copy_bytes_per_usec = %.10g\n",
                            profile.cached_copy_bytes_per_usec);
    }
  }
  if (profile.has_engine()) {
    absl::StrAppendFormat(&text, "engine.latency_usec = %.10g\n", profile.engine.latency_usec);
    absl::StrAppendFormat(&text, "engine.bytes_per_usec = %.10g\n", profile.engine.bytes_per_usec);
    absl::StrAppendFormat(&text, "engine.overhead_usec = %.10g\n", profile.engine.overhead_usec);
    absl::StrAppendFormat(&text, "engine.system_call_usec = %.10g\n",
                          profile.engine.system_call_usec);
    if (profile.cache_bytes > 0 && profile.engine.cached_bytes_per_usec > 0) {
      absl::StrAppendFormat(&text, "engine.cached_bytes_per_usec = %.10g\n",
                            profile.engine.cached_bytes_per_usec);
    }
  }
  return text;
}

double RateAtFootprint(double memory_rate, double cached_rate, size_t cache_bytes,
                       double footprint_bytes) {
  if (cache_bytes == 0 || cached_rate <= 0) return memory_rate;
  const double in_cache = std::min(1.0, static_cast<double>(cache_bytes) / footprint_bytes);
  return 1 / (in_cache / cached_rate + (1 - in_cache) / memory_rate);
}

double MemoryRateFrom(double measured_rate, double cached_rate, size_t cache_bytes,
                      double footprint_bytes) {
  if (cache_bytes == 0 || cached_rate <= 0 || measured_rate >= cached_rate) return measured_rate;
  const double in_cache = static_cast<double>(cache_bytes) / footprint_bytes;
  if (in_cache >= 1) return measured_rate;  // measured in cache: nothing said of memory
  const double memory_usec_per_byte = (1 / measured_rate - in_cache / cached_rate) / (1 - in_cache);
  return 1 / memory_usec_per_byte;
}

MachineProfile ProfileForFootprint(const MachineProfile& profile, double footprint_bytes) {
  MachineProfile decided = profile;
  auto decide = [&](double& rate, double& cached_rate) {
    rate = RateAtFootprint(rate, cached_rate, profile.cache_bytes, footprint_bytes);
    cached_rate = 0;
  };
  decide(decided.reduce_bytes_per_usec, decided.cached_reduce_bytes_per_usec);
  decide(decided.copy_bytes_per_usec, decided.cached_copy_bytes_per_usec);
  decide(decided.engine.bytes_per_usec, decided.engine.cached_bytes_per_usec);
  // A link's cached rate is for the messages of data unwritten in the call alone (the
  // simulation tells them apart): decided at the footprint, beside its rate.
  if (profile.cache_bytes > 0) {
    for (LinkCost& link : decided.links) {
      if (link.cached_bytes_per_usec <= 0) continue;
      link.cached_bytes_per_usec = RateAtFootprint(link.bytes_per_usec, link.cached_bytes_per_usec,
                                                   profile.cache_bytes, footprint_bytes);
    }
  }
  decided.cache_bytes = 0;
  return decided;
}

absl::Span<const ShippedProfile> ShippedProfiles() { return kShipped; }

absl::StatusOr<MachineProfile> LoadMachineProfile(const std::string& name_or_path) {
  for (const ShippedProfile& shipped : kShipped) {
    if (shipped.name == name_or_path) return ParseMachineProfile(shipped.text, shipped.name);
  }
  std::ifstream file(name_or_path);
  if (!file) {
    std::vector<absl::string_view> names;
    for (const ShippedProfile& shipped : kShipped) names.push_back(shipped.name);
    return absl::NotFoundError(absl::StrCat("profile '", name_or_path,
                                            "' is neither a shipped profile (",
                                            absl::StrJoin(names, ", "), ") nor a readable file"));
  }
  std::stringstream text;
  text << file.rdbuf();
  return ParseMachineProfile(text.str(), name_or_path);
}

}  // namespace zcoll::sim
