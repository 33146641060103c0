// Differential tests of the collectives: every collective x algorithm x size x
// in-place form x datatype/op, on jobs of 1..9 ranks (threads over loopback) and on
// real processes over shm, ofi:tcp, ofi:shm and ucx:tcp, emulated nodes included,
// compared with the naive reference (testing/reference). Every rank can compute
// every rank's input, so each checks its own result against the reference locally.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/algorithms.h"
#include "collectives/communicator.h"
#include "collectives/node_engine_limits.h"
#include "collectives/node_segment.h"
#include "core/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/block_layouts.h"
#include "testing/communicator_harness.h"
#include "testing/reference.h"
#include "testing/sampled_sweeps.h"
#include "testing/scoped_environment.h"
#include "testing/status_assertions.h"
#include "transport/transport.h"

namespace zcoll {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::zcoll::testing::Bytes;
using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::PackedInRankOrder;
using ::zcoll::testing::PairCount;
using ::zcoll::testing::RankBytes;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::ReversedWithGaps;
using ::zcoll::testing::RunCommunicatorJob;
using ::zcoll::testing::ScopedEnvironment;
using ::zcoll::testing::VariedCounts;

// Pipelined algorithms cut messages into chunks of this many bytes in these tests
// (set before any communicator reads it), so that sizes around a chunk are cheap.
constexpr size_t kChunkBytes = 4096;

// A datatype, an op and how rank r's element i is made. Values keep every result
// exact (small integers, ties on purpose for MINLOC), so any association of the
// reduction gives the reference's bits.
struct OpCase {
  const char* name;
  DataType type;
  ReduceOp op;
};

std::vector<OpCase> OpCases() {
  return {{"float_sum", DataType::kFloat, PredefinedOp::kSum},
          {"int64_digits", DataType::kInt64, testing::DigitsInRankOrder()},
          {"float_int_minloc", DataType::kFloatInt, PredefinedOp::kMinloc},
          {"double_avg", DataType::kDouble, PredefinedOp::kAvg},
          {"int8_max", DataType::kInt8, PredefinedOp::kMax}};
}

Bytes MakeInput(DataType type, int rank, size_t count, int salt) {
  Bytes bytes(count * DataTypeSize(type));
  for (size_t i = 0; i < count; ++i) {
    const int64_t small = static_cast<int64_t>((rank * 7 + i * 3 + salt) % 13);
    char* at = bytes.data() + i * DataTypeSize(type);
    switch (type) {
      case DataType::kFloat: {
        const float value = static_cast<float>(small - 6);
        std::memcpy(at, &value, sizeof(value));
        break;
      }
      case DataType::kDouble: {
        const double value = static_cast<double>(small * 4);
        std::memcpy(at, &value, sizeof(value));
        break;
      }
      case DataType::kInt64: {
        const int64_t value = (rank + static_cast<int64_t>(i) + salt) % 9 + 1;  // one digit
        std::memcpy(at, &value, sizeof(value));
        break;
      }
      case DataType::kFloatInt: {
        // Three values only, so several ranks tie; the index is the rank.
        const FloatInt value{static_cast<float>((rank + i + salt) % 3), rank};
        std::memcpy(at, &value, sizeof(value));
        break;
      }
      case DataType::kInt8: {
        const int8_t value = static_cast<int8_t>(small * 19 - 120);
        std::memcpy(at, &value, sizeof(value));
        break;
      }
      default:
        ADD_FAILURE() << "no input for " << DataTypeName(type);
    }
  }
  return bytes;
}

RankBytes AllInputs(DataType type, int size, size_t count, int salt) {
  RankBytes inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(MakeInput(type, r, count, salt));
  return inputs;
}

// Element counts that matter to the algorithms: none, one, odd, around a chunk and
// several chunks.
// Set by NodeEngineLargeTest before its jobs start (read-only while they run): the
// node engine's algorithms alone, at sizes across its copy-in limits (16 KiB for
// Allgather and Alltoall, its 64 KiB slot elsewhere) and its cooperative-copy size
// (64 KiB), and up to 1 MiB; under a sanitizer up to just past the slots of all the
// job's ranks (4 KiB more than 64 KiB a rank), the largest size's paths at a quarter of
// its bytes on 4 ranks (TSan's 4 thread-ranks took 37 s for 1 MiB, most of its step's
// longest test; the plain run has 1 MiB).
bool large_node_sizes = false;
// Set by the suites that test the node engine's algorithms alone (NodeEngineLargeTest,
// NodeEngineWideTest), read-only while their jobs run.
bool only_node_algorithms = false;

// What Sizes() leaves out under a sanitizer, said by the suites that use large sizes.
void SayLargestSizeUnderSanitizer() {
  if (!testing::UnderSanitizer()) return;
  std::printf(
      "ZCOLL_UNDER_SANITIZER=1: the largest node size is 4 KiB past the job's slots (64 KiB "
      "a rank), not 1 MiB; the plain run has 1 MiB\n");
}

std::vector<size_t> Sizes(DataType type, int ranks) {
  if (large_node_sizes) {
    const size_t width = DataTypeSize(type);
    const size_t largest_bytes =
        testing::UnderSanitizer()
            ? std::min(static_cast<size_t>(ranks) * kNodeSlotBytes + 4096, size_t{1} << 20)
            : size_t{1} << 20;
    return {16384 / width + 1, kNodeSlotBytes / width - 1, kNodeSlotBytes / width + 1,
            65536 / width + 17, largest_bytes / width + 5};
  }
  const size_t chunk = kChunkBytes / DataTypeSize(type);
  return {0, 1, 37, chunk - 1, chunk + 1, 5 * chunk + 3};
}

std::string Where(const Communicator& comm, Collective collective, absl::string_view algorithm,
                  const char* op, size_t count, int root, bool in_place) {
  return absl::StrCat(CollectiveName(collective), "/", algorithm, " ", op, " count ", count,
                      " root ", root, in_place ? " in place" : "", " on rank ", comm.rank(), " of ",
                      comm.size());
}

// The bytes of a v-collective, whose sizes are not agreed: the engine runs it only
// with single copy.
constexpr size_t kUnagreed = ~size_t{0};

// Whether `comm` runs its node engine's `collective` whose agreed message size is
// `bytes` (node_engine.h): it has one, and either its ranks read each other's memory or
// what a rank publishes fits a slot (NodePublicationBytes) or it is a Bcast (through
// the slots at any size: node_engine_limits::BcastThroughSlots).
bool NodeEngineRunsHere(const Communicator& comm, Collective collective, size_t bytes) {
  if (comm.node_segment_bytes() == 0) return false;
  if (comm.node_single_copy() || collective == Collective::kBcast) return true;
  const std::optional<size_t> published = NodePublicationBytes(
      collective, bytes == kUnagreed ? std::nullopt : std::optional<size_t>(bytes), comm.size());
  return published.has_value() && *published <= kNodeSlotBytes;
}

// Whether `comm` has levels (node_levels.h): several nodes, or on one node several
// packages, NUMA domains or L3 groups, one of them with several ranks.
bool HasNodeLevels(const Communicator& comm) { return !NodeLevelGroups(comm.topology()).empty(); }

// Whether `algorithm`, one of the node levels', runs on `comm`: where it has levels,
// and node_stripes where its nodes hold as many ranks each.
bool LevelsRunHere(const Algorithm& algorithm, const Communicator& comm) {
  if (!HasNodeLevels(comm)) return false;
  return !algorithm.runs_by_stripes() || NodeStripesPossible(comm.topology());
}

// Whether a job's communicator has levels.
bool JobHasLevels(const CommunicatorJob& job) {
  return job.nodes > 1 || job.numa_domains > 1 || job.l3_groups > 1;
}

// The algorithms of `collective` that can run `op` (some need a commutative one), and
// the node engine's where it runs `bytes` on `comm` (none without a `comm`), and the
// node levels' where `comm` has them.
std::vector<absl::string_view> AlgorithmsOf(Collective collective,
                                            const ReduceOp& op = PredefinedOp::kSum,
                                            const Communicator* comm = nullptr, size_t bytes = 0) {
  std::vector<absl::string_view> names;
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.on_node() && (comm == nullptr || !NodeEngineRunsHere(*comm, collective, bytes))) {
      continue;
    }
    if (algorithm.node_levels && (comm == nullptr || !LevelsRunHere(algorithm, *comm))) continue;
    if (only_node_algorithms && !algorithm.on_node()) continue;
    if (algorithm.collective == collective && (algorithm.any_op || op.commutative())) {
      names.push_back(algorithm.name);
    }
  }
  return names;
}

void CheckReductions(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  int salt = 0;
  for (const OpCase& op_case : OpCases()) {
    const size_t width = DataTypeSize(op_case.type);
    for (size_t count : Sizes(op_case.type, size)) {
      ++salt;
      const RankBytes inputs = AllInputs(op_case.type, size, count, salt);
      const Bytes expected = *testing::ReferenceReduce(op_case.op, op_case.type, inputs, count);
      // Reduce, at two roots, and Allreduce.
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kReduce, op_case.op, &comm, count * width)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kReduce, algorithm));
        for (int root : {0, size - 1}) {
          for (bool in_place : {false, true}) {
            const bool here_in_place = in_place && rank == root;
            Bytes send = inputs[rank];
            Bytes recv(count * width, 0x5a);
            if (here_in_place) recv = inputs[rank];
            const absl::Status status =
                comm.Reduce(here_in_place ? kInPlace : send.data(), recv.data(), count,
                            op_case.type, op_case.op, root);
            const std::string where =
                Where(comm, Collective::kReduce, algorithm, op_case.name, count, root, in_place);
            ASSERT_TRUE(status.ok()) << where << ": " << status;
            EXPECT_EQ(send, inputs[rank]) << where << ": the send buffer changed";
            if (rank == root) {
              ASSERT_EQ(recv, expected) << where;
            }
          }
        }
      }
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kAllreduce, op_case.op, &comm, count * width)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, algorithm));
        for (bool in_place : {false, true}) {
          Bytes send = inputs[rank];
          Bytes recv = in_place ? inputs[rank] : Bytes(count * width, 0x5a);
          const absl::Status status = comm.Allreduce(in_place ? kInPlace : send.data(), recv.data(),
                                                     count, op_case.type, op_case.op);
          const std::string where =
              Where(comm, Collective::kAllreduce, algorithm, op_case.name, count, 0, in_place);
          ASSERT_TRUE(status.ok()) << where << ": " << status;
          ASSERT_EQ(recv, expected) << where;
        }
      }
      // ReduceScatterBlock with `count` per rank and ReduceScatter with varied counts.
      for (bool block : {true, false}) {
        const Collective collective =
            block ? Collective::kReduceScatterBlock : Collective::kReduceScatter;
        const std::vector<size_t> counts =
            block ? std::vector<size_t>(size, count) : VariedCounts(size, count);
        size_t total = 0;
        for (size_t c : counts) total += c;
        const RankBytes all = AllInputs(op_case.type, size, total, salt);
        const RankBytes expected_blocks =
            *testing::ReferenceReduceScatter(op_case.op, op_case.type, all, counts);
        for (absl::string_view algorithm :
             AlgorithmsOf(collective, op_case.op, &comm, total * width)) {
          ASSERT_OK(comm.SetAlgorithm(collective, algorithm));
          for (bool in_place : {false, true}) {
            Bytes send = all[rank];
            Bytes recv = in_place ? all[rank] : Bytes(counts[rank] * width, 0x5a);
            const void* source = in_place ? kInPlace : send.data();
            const absl::Status status =
                block
                    ? comm.ReduceScatterBlock(source, recv.data(), count, op_case.type, op_case.op)
                    : comm.ReduceScatter(source, recv.data(), counts, op_case.type, op_case.op);
            const std::string where =
                Where(comm, collective, algorithm, op_case.name, count, 0, in_place);
            ASSERT_TRUE(status.ok()) << where << ": " << status;
            recv.resize(counts[rank] * width);  // in place: the result is at the start
            ASSERT_EQ(recv, expected_blocks[rank]) << where;
          }
        }
      }
    }
  }
}

void CheckScatters(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  const DataType type = DataType::kFloat;
  const size_t width = DataTypeSize(type);
  int salt = 100;
  for (size_t count : Sizes(type, size)) {
    ++salt;
    for (int root : {0, size / 2, size - 1}) {
      // Scatter: the root's buffer is size blocks of `count`.
      const Bytes root_send = MakeInput(type, root, count * size, salt);
      std::vector<size_t> counts(size, count), displs(size);
      for (int r = 0; r < size; ++r) displs[r] = count * r;
      const RankBytes expected = *testing::ReferenceScatterv(type, root_send, counts, displs);
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kScatter, PredefinedOp::kSum, &comm, count * width)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kScatter, algorithm));
        for (bool in_place : {false, true}) {
          const bool here_in_place = in_place && rank == root;
          // Non-roots pass a buffer the collective must not touch.
          Bytes send = rank == root ? root_send : Bytes(8, 0x11);
          const Bytes send_before = send;
          Bytes recv(count * width, 0x5a);
          const absl::Status status =
              comm.Scatter(send.data(), here_in_place ? kInPlace : recv.data(), count, type, root);
          const std::string where =
              Where(comm, Collective::kScatter, algorithm, "float", count, root, in_place);
          ASSERT_TRUE(status.ok()) << where << ": " << status;
          EXPECT_EQ(send, send_before) << where << ": the send buffer changed";
          if (!here_in_place) {
            ASSERT_EQ(recv, expected[rank]) << where;
          }
        }
      }
      // Scatterv: varied counts with zeros, the blocks laid end to end in rank order (as
      // most callers lay them: the root copies them in two pieces around its own) and
      // in reverse order with gaps (one piece a block).
      const std::vector<size_t> vcounts = VariedCounts(size, count);
      for (bool packed : {true, false}) {
        size_t extent = 0;
        const std::vector<size_t> vdispls =
            packed ? PackedInRankOrder(vcounts, &extent) : ReversedWithGaps(vcounts, &extent);
        const Bytes vsend_root = MakeInput(type, root, extent, salt);
        const RankBytes vexpected = *testing::ReferenceScatterv(type, vsend_root, vcounts, vdispls);
        for (absl::string_view algorithm :
             AlgorithmsOf(Collective::kScatterv, PredefinedOp::kSum, &comm, kUnagreed)) {
          ASSERT_OK(comm.SetAlgorithm(Collective::kScatterv, algorithm));
          for (bool in_place : {false, true}) {
            const bool here_in_place = in_place && rank == root;
            Bytes send = rank == root ? vsend_root : Bytes();
            Bytes recv(vcounts[rank] * width, 0x5a);
            // Non-roots pass no counts: they matter at the root only.
            const absl::Status status = comm.Scatterv(
                rank == root ? send.data() : nullptr,
                rank == root ? absl::Span<const size_t>(vcounts) : absl::Span<const size_t>(),
                rank == root ? absl::Span<const size_t>(vdispls) : absl::Span<const size_t>(),
                here_in_place ? kInPlace : recv.data(), vcounts[rank], type, root);
            const std::string where = Where(comm, Collective::kScatterv, algorithm,
                                            packed ? "float, packed" : "float, reversed with gaps",
                                            count, root, in_place);
            ASSERT_TRUE(status.ok()) << where << ": " << status;
            if (!here_in_place) {
              ASSERT_EQ(recv, vexpected[rank]) << where;
            }
          }
        }
      }
    }
  }
}

void CheckScans(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  int salt = 200;
  for (const OpCase& op_case : OpCases()) {
    const size_t width = DataTypeSize(op_case.type);
    for (size_t count : Sizes(op_case.type, size)) {
      ++salt;
      const RankBytes inputs = AllInputs(op_case.type, size, count, salt);
      for (const Collective collective : {Collective::kScan, Collective::kExscan}) {
        const bool exclusive = collective == Collective::kExscan;
        const RankBytes expected =
            *testing::ReferenceScan(op_case.op, op_case.type, inputs, count, exclusive);
        for (absl::string_view algorithm :
             AlgorithmsOf(collective, op_case.op, &comm, count * width)) {
          ASSERT_OK(comm.SetAlgorithm(collective, algorithm));
          for (bool in_place : {false, true}) {
            Bytes send = inputs[rank];
            Bytes recv = in_place ? inputs[rank] : Bytes(count * width, 0x5a);
            const Bytes recv_before = recv;
            const void* source = in_place ? kInPlace : send.data();
            const absl::Status status =
                exclusive ? comm.Exscan(source, recv.data(), count, op_case.type, op_case.op)
                          : comm.Scan(source, recv.data(), count, op_case.type, op_case.op);
            const std::string where =
                Where(comm, collective, algorithm, op_case.name, count, 0, in_place);
            ASSERT_TRUE(status.ok()) << where << ": " << status;
            EXPECT_EQ(send, inputs[rank]) << where << ": the send buffer changed";
            if (exclusive && rank == 0) {
              ASSERT_EQ(recv, recv_before) << where << ": rank 0's buffer changed";
            } else {
              ASSERT_EQ(recv, expected[rank]) << where;
            }
          }
        }
      }
    }
  }
}

void CheckBcastAndGathers(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  const DataType type = DataType::kFloat;
  const size_t width = DataTypeSize(type);
  int salt = 300;
  for (size_t count : Sizes(type, size)) {
    ++salt;
    const RankBytes inputs = AllInputs(type, size, count, salt);
    for (int root : {0, size / 2, size - 1}) {
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kBcast, PredefinedOp::kSum, &comm, count * width)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kBcast, algorithm));
        Bytes buffer = rank == root ? inputs[root] : Bytes(count * width, 0x5a);
        const absl::Status status = comm.Bcast(buffer.data(), count, type, root);
        const std::string where =
            Where(comm, Collective::kBcast, algorithm, "float", count, root, false);
        ASSERT_TRUE(status.ok()) << where << ": " << status;
        ASSERT_EQ(buffer, inputs[root]) << where;
      }
      // Gather: blocks of `count` at r * count.
      std::vector<size_t> counts(size, count), displs(size);
      for (int r = 0; r < size; ++r) displs[r] = count * r;
      const Bytes initial(count * size * width, 0x5a);
      const Bytes gathered = *testing::ReferenceGatherv(type, inputs, counts, displs, initial);
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kGather, PredefinedOp::kSum, &comm, count * width)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kGather, algorithm));
        for (bool in_place : {false, true}) {
          const bool here_in_place = in_place && rank == root;
          const Bytes send = inputs[rank];
          Bytes recv = initial;
          if (here_in_place) {
            std::memcpy(recv.data() + count * rank * width, send.data(), send.size());
          }
          // Non-roots pass a receive buffer the collective must not touch.
          if (rank != root) recv.assign(8, 0x11);
          const Bytes recv_before = recv;
          const absl::Status status =
              comm.Gather(here_in_place ? kInPlace : send.data(), recv.data(), count, type, root);
          const std::string where =
              Where(comm, Collective::kGather, algorithm, "float", count, root, in_place);
          ASSERT_TRUE(status.ok()) << where << ": " << status;
          ASSERT_EQ(recv, rank == root ? gathered : recv_before) << where;
        }
      }
      // Gatherv: varied counts with zeros, blocks in reverse order with gaps.
      const std::vector<size_t> vcounts = VariedCounts(size, count);
      size_t extent = 0;
      const std::vector<size_t> vdispls = ReversedWithGaps(vcounts, &extent);
      const RankBytes vinputs = [&] {
        RankBytes all;
        for (int r = 0; r < size; ++r) all.push_back(MakeInput(type, r, vcounts[r], salt));
        return all;
      }();
      const Bytes vinitial(extent * width, 0x5a);
      const Bytes vgathered = *testing::ReferenceGatherv(type, vinputs, vcounts, vdispls, vinitial);
      for (absl::string_view algorithm :
           AlgorithmsOf(Collective::kGatherv, PredefinedOp::kSum, &comm, kUnagreed)) {
        ASSERT_OK(comm.SetAlgorithm(Collective::kGatherv, algorithm));
        for (bool in_place : {false, true}) {
          const bool here_in_place = in_place && rank == root;
          Bytes recv = rank == root ? vinitial : Bytes();
          if (here_in_place) {
            std::memcpy(recv.data() + vdispls[rank] * width, vinputs[rank].data(),
                        vinputs[rank].size());
          }
          const absl::Status status = comm.Gatherv(
              here_in_place ? kInPlace : vinputs[rank].data(), vcounts[rank],
              rank == root ? recv.data() : nullptr,
              rank == root ? absl::Span<const size_t>(vcounts) : absl::Span<const size_t>(),
              rank == root ? absl::Span<const size_t>(vdispls) : absl::Span<const size_t>(), type,
              root);
          const std::string where =
              Where(comm, Collective::kGatherv, algorithm, "float", count, root, in_place);
          ASSERT_TRUE(status.ok()) << where << ": " << status;
          if (rank == root) {
            ASSERT_EQ(recv, vgathered) << where;
          }
        }
      }
    }
  }
}

void CheckAllgathersAndAlltoalls(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  const DataType type = DataType::kFloat;
  const size_t width = DataTypeSize(type);
  int salt = 400;
  for (size_t count : Sizes(type, size)) {
    ++salt;
    const RankBytes inputs = AllInputs(type, size, count, salt);
    std::vector<size_t> counts(size, count), displs(size);
    for (int r = 0; r < size; ++r) displs[r] = count * r;
    const Bytes initial(count * size * width, 0x5a);
    const Bytes gathered = *testing::ReferenceGatherv(type, inputs, counts, displs, initial);
    for (absl::string_view algorithm :
         AlgorithmsOf(Collective::kAllgather, PredefinedOp::kSum, &comm, count * width)) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kAllgather, algorithm));
      for (bool in_place : {false, true}) {
        Bytes recv = initial;
        if (in_place) {
          std::memcpy(recv.data() + count * rank * width, inputs[rank].data(), inputs[rank].size());
        }
        const absl::Status status =
            comm.Allgather(in_place ? kInPlace : inputs[rank].data(), recv.data(), count, type);
        const std::string where =
            Where(comm, Collective::kAllgather, algorithm, "float", count, 0, in_place);
        ASSERT_TRUE(status.ok()) << where << ": " << status;
        ASSERT_EQ(recv, gathered) << where;
      }
    }
    // Allgatherv: varied counts; each rank lays the blocks out its own way (rank
    // parity decides between reversed-with-gaps and packed).
    const std::vector<size_t> vcounts = VariedCounts(size, count);
    size_t extent = 0;
    const std::vector<size_t> vdispls =
        rank % 2 == 1 ? PackedInRankOrder(vcounts, &extent) : ReversedWithGaps(vcounts, &extent);
    RankBytes vinputs;
    for (int r = 0; r < size; ++r) vinputs.push_back(MakeInput(type, r, vcounts[r], salt));
    const Bytes vinitial(extent * width, 0x5a);
    const Bytes vgathered = *testing::ReferenceGatherv(type, vinputs, vcounts, vdispls, vinitial);
    for (absl::string_view algorithm :
         AlgorithmsOf(Collective::kAllgatherv, PredefinedOp::kSum, &comm, kUnagreed)) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kAllgatherv, algorithm));
      for (bool in_place : {false, true}) {
        Bytes recv = vinitial;
        if (in_place) {
          std::memcpy(recv.data() + vdispls[rank] * width, vinputs[rank].data(),
                      vinputs[rank].size());
        }
        const absl::Status status =
            comm.Allgatherv(in_place ? kInPlace : vinputs[rank].data(), vcounts[rank], recv.data(),
                            vcounts, vdispls, type);
        const std::string where =
            Where(comm, Collective::kAllgatherv, algorithm, "float", count, 0, in_place);
        ASSERT_TRUE(status.ok()) << where << ": " << status;
        ASSERT_EQ(recv, vgathered) << where;
      }
    }
    // Alltoall.
    const RankBytes all = AllInputs(type, size, count * size, salt);
    const RankBytes exchanged = *testing::ReferenceAlltoall(type, all, count);
    for (absl::string_view algorithm :
         AlgorithmsOf(Collective::kAlltoall, PredefinedOp::kSum, &comm, count * width)) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kAlltoall, algorithm));
      for (bool in_place : {false, true}) {
        Bytes recv = in_place ? all[rank] : Bytes(count * size * width, 0x5a);
        const absl::Status status =
            comm.Alltoall(in_place ? kInPlace : all[rank].data(), recv.data(), count, type);
        const std::string where =
            Where(comm, Collective::kAlltoall, algorithm, "float", count, 0, in_place);
        ASSERT_TRUE(status.ok()) << where << ": " << status;
        ASSERT_EQ(recv, exchanged[rank]) << where;
      }
    }
    // Alltoallv: rank s sends rank r PairCount(s, r) elements; symmetric, so the
    // in-place form (input laid out as the output) uses the same counts. Rank parity
    // decides the layout: reversed with gaps, or packed (sent in two pieces around
    // the rank's own block).
    auto layout = [&](int r, size_t* span) {  // rank r's counts and displs
      std::vector<size_t> peer_counts(size);
      for (int peer = 0; peer < size; ++peer) peer_counts[peer] = PairCount(r, peer, count);
      return std::make_pair(peer_counts, r % 2 == 1 ? PackedInRankOrder(peer_counts, span)
                                                    : ReversedWithGaps(peer_counts, span));
    };
    size_t span = 0;
    const auto [my_counts, my_displs] = layout(rank, &span);
    const Bytes my_input = MakeInput(type, rank, span, salt);
    Bytes expected(span * width, 0x5a);
    for (int from = 0; from < size; ++from) {
      size_t their_span = 0;
      const auto [their_counts, their_displs] = layout(from, &their_span);
      const Bytes their_input = MakeInput(type, from, their_span, salt);
      std::memcpy(expected.data() + my_displs[from] * width,
                  their_input.data() + their_displs[rank] * width, my_counts[from] * width);
    }
    for (absl::string_view algorithm :
         AlgorithmsOf(Collective::kAlltoallv, PredefinedOp::kSum, &comm, kUnagreed)) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kAlltoallv, algorithm));
      for (bool in_place : {false, true}) {
        Bytes recv = in_place ? my_input : Bytes(span * width, 0x5a);
        if (in_place) {
          // Gaps keep their bytes in place; fill them as the expectation has them (the
          // element after a block, where no other block starts: reversed with gaps).
          auto starts_a_block = [&](size_t element) {
            for (int r = 0; r < size; ++r) {
              if (my_counts[r] > 0 && my_displs[r] == element) return true;
            }
            return false;
          };
          for (int r = 0; r < size; ++r) {
            const size_t gap = my_displs[r] + my_counts[r];
            if (gap < span && !starts_a_block(gap)) {
              std::memset(recv.data() + gap * width, 0x5a, width);
            }
          }
        }
        const absl::Status status =
            comm.Alltoallv(in_place ? kInPlace : my_input.data(), my_counts, my_displs, recv.data(),
                           my_counts, my_displs, type);
        const std::string where =
            Where(comm, Collective::kAlltoallv, algorithm, "float", count, 0, in_place);
        ASSERT_TRUE(status.ok()) << where << ": " << status;
        ASSERT_EQ(recv, expected) << where;
      }
    }
  }
}

// No rank leaves a barrier before every rank has entered it: each round one rank
// (a different one each round, rank 0 included) enters 20 ms late, and every rank's
// exit must come after that entry (the ranks share the machine's clock).
void CheckBarriers(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  for (const Algorithm& algorithm : AllAlgorithms()) {
    if (algorithm.collective != Collective::kBarrier) continue;
    if (algorithm.on_node() && !NodeEngineRunsHere(comm, Collective::kBarrier, 0)) continue;
    if (algorithm.node_levels && !LevelsRunHere(algorithm, comm)) continue;
    ASSERT_OK(comm.SetAlgorithm(Collective::kBarrier, algorithm.name));
    for (int late = 0; late < std::min(size, 3); ++late) {
      if (rank == late) absl::SleepFor(absl::Milliseconds(20));
      const int64_t entered = absl::ToUnixNanos(absl::Now());
      ASSERT_TRUE(comm.Barrier().ok()) << algorithm.name;
      const int64_t left = absl::ToUnixNanos(absl::Now());
      std::vector<int64_t> entries(size);
      ASSERT_OK(comm.Allgather(&entered, entries.data(), 1, DataType::kInt64));
      EXPECT_GE(left, entries[late])
          << algorithm.name << ": rank " << rank << " left before late rank " << late << " entered";
    }
  }
}

class CollectivesTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  static void SetUpTestSuite() { setenv("ZCOLL_CHUNK_BYTES", "4096", 1); }
};

TEST_P(CollectivesTest, ReductionsMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(
      GetParam(), [](Communicator& comm, RankControl&) { CheckReductions(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(CollectivesTest, ScattersMatchTheReference) {
  const absl::Status status =
      RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) { CheckScatters(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(CollectivesTest, ScansMatchTheReference) {
  const absl::Status status =
      RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) { CheckScans(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(CollectivesTest, BcastAndGathersMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(
      GetParam(), [](Communicator& comm, RankControl&) { CheckBcastAndGathers(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(CollectivesTest, AllgathersAndAlltoallsMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(
      GetParam(), [](Communicator& comm, RankControl&) { CheckAllgathersAndAlltoalls(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(CollectivesTest, BarriersHoldEveryRankUntilAllEntered) {
  const absl::Status status =
      RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) { CheckBarriers(comm); });
  EXPECT_TRUE(status.ok()) << status;
}

// Ranks placed round robin over the nodes (or NUMA domains), as `srun --distribution=
// cyclic` places them: a communicator split with the even ranks first, so that no
// group's ranks are consecutive, runs every algorithm (node_levels putting the groups'
// blocks back in rank order) against the reference.
TEST_P(CollectivesTest, RanksInterleavedOverTheGroupsMatchTheReference) {
  if (!JobHasLevels(GetParam())) {
    GTEST_SKIP() << "one node of one NUMA domain and L3 group: no groups to interleave";
  }
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    const int key = (comm.rank() % 2) * comm.size() + comm.rank();
    absl::StatusOr<std::optional<Communicator>> interleaved = comm.Split(0, key);
    ASSERT_TRUE(interleaved.ok()) << interleaved.status();
    Communicator& split = **interleaved;
    if (split.size() >= 4) {
      // (With 4 or more ranks the even-first order leaves some group not a run of
      // consecutive ranks.)
      const Topology& topology = split.topology();
      bool runs = true;
      for (const std::vector<int>& ranks : NodeLevelGroups(topology)) {
        runs = runs && ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
      }
      EXPECT_FALSE(runs) << topology.ToString();
    }
    CheckReductions(split);
    CheckBcastAndGathers(split);
    CheckAllgathersAndAlltoalls(split);
    CheckBarriers(split);
  });
  EXPECT_TRUE(status.ok()) << status;
}

// Several nonblocking node_levels calls in flight at once, completed in another order
// on every rank (by Wait from a rank-dependent first request, or by Test in reverse
// order): each call's level calls start as its earlier steps complete, which is a
// matter of timing, yet every rank must start them on a level's communicator in one
// order (node_levels.h). Then a blocking call while the nonblocking ones are pending.
// (The Allreduces by stripes where the nodes hold as many ranks each.)
TEST_P(CollectivesTest, NonblockingLevelCallsCompleteInAnyOrder) {
  if (!JobHasLevels(GetParam())) {
    GTEST_SKIP() << "one node of one NUMA domain and L3 group: no levels";
  }
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(HasNodeLevels(comm));
    for (Collective collective : {Collective::kAllreduce, Collective::kReduce, Collective::kBcast,
                                  Collective::kAllgather, Collective::kBarrier}) {
      ASSERT_OK(comm.SetAlgorithm(collective, "node_levels"));
    }
    // Where the nodes hold as many ranks each, the Allreduces by stripes (three level
    // calls on every rank, two of them on the node's communicator).
    if (NodeStripesPossible(comm.topology())) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "node_stripes"));
    }
    const int size = comm.size(), rank = comm.rank();
    // (The Allreduce's vector: 5 segments of an Allreduce by stripes, at the chunk of
    // 4 KiB these tests set, so that its two lanes have calls in flight at once.)
    constexpr size_t kCount = 1000, kSummed = 20000;
    for (int round = 0; round < 4; ++round) {
      const int root = round % size;
      std::vector<int32_t> mine(kSummed, rank + round), sum(kSummed, -1), max(kCount, -1);
      std::vector<int32_t> broadcast(kCount, rank == root ? 7 + round : -1), all(size, -1);
      const int32_t own = rank * 10 + round;
      std::vector<absl::StatusOr<Request>> started;
      started.push_back(
          comm.IAllreduce(mine.data(), sum.data(), kSummed, DataType::kInt32, PredefinedOp::kSum));
      started.push_back(comm.IBcast(broadcast.data(), kCount, DataType::kInt32, root));
      started.push_back(comm.IAllgather(&own, all.data(), 1, DataType::kInt32));
      started.push_back(comm.IBarrier());
      started.push_back(comm.IReduce(mine.data(), rank == size - 1 ? max.data() : nullptr, kCount,
                                     DataType::kInt32, PredefinedOp::kMax, size - 1));
      std::vector<Request> requests;
      for (absl::StatusOr<Request>& request : started) {
        ASSERT_TRUE(request.ok()) << request.status();
        requests.push_back(std::move(*request));
      }
      const size_t n = requests.size();
      if (round == 3) {
        // A blocking node_levels call behind the pending ones.
        int32_t one = 1, ones = 0;
        ASSERT_OK(comm.Allreduce(&one, &ones, 1, DataType::kInt32, PredefinedOp::kSum));
        EXPECT_EQ(ones, size);
      }
      if (round % 2 == 0) {
        for (size_t k = 0; k < n; ++k) {
          const absl::Status waited = requests[(static_cast<size_t>(rank) + k) % n].Wait();
          ASSERT_TRUE(waited.ok()) << "round " << round << ": " << waited;
        }
      } else {
        // Test in reverse order until all are done (bounded: each ends by its deadline).
        size_t done = 0;
        while (done < n) {
          done = 0;
          for (size_t k = n; k-- > 0;) {
            absl::StatusOr<bool> tested = requests[k].Test();
            ASSERT_TRUE(tested.ok()) << "round " << round << ": " << tested.status();
            done += *tested ? 1 : 0;
          }
          if (done < n) absl::SleepFor(absl::Microseconds(20));
        }
      }
      for (size_t i = 0; i < kSummed; i += 997) {
        ASSERT_EQ(sum[i], size * (size - 1) / 2 + size * round) << "round " << round << ", " << i;
      }
      EXPECT_EQ(sum[kSummed - 1], size * (size - 1) / 2 + size * round) << "round " << round;
      EXPECT_EQ(broadcast[0], 7 + round) << "round " << round;
      for (int r = 0; r < size; ++r) {
        EXPECT_EQ(all[r], r * 10 + round) << "round " << round;
      }
      if (rank == size - 1) {
        EXPECT_EQ(max[3], size - 1 + round) << "round " << round;
      }
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

// The node engine beyond its slot: partitioned reductions, peers' buffers read in
// place, and transfers copied by both sides at once, between processes (process_vm_*)
// and between threads.
class NodeEngineLargeTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  static void SetUpTestSuite() {
    setenv("ZCOLL_CHUNK_BYTES", "4096", 1);
    SayLargestSizeUnderSanitizer();
    large_node_sizes = true;
    only_node_algorithms = true;
  }
  static void TearDownTestSuite() {
    large_node_sizes = false;
    only_node_algorithms = false;
  }
};

TEST_P(NodeEngineLargeTest, EveryCollectiveMatchesTheReference) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    CheckReductions(comm);
    CheckScatters(comm);
    CheckScans(comm);
    CheckBcastAndGathers(comm);
    CheckAllgathersAndAlltoalls(comm);
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineLargeTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 2},
                                           CommunicatorJob{.local_provider = "shm", .size = 3},
                                           CommunicatorJob{.size = 4}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// Twelve ranks on a node: a Scatterv's or Alltoallv's table of blocks no longer fits the
// control line (eleven ranks' 16-bit pairs do), so a slot publication holds it in the
// slot's first lines instead.
class NodeEngineWideTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { only_node_algorithms = true; }
  static void TearDownTestSuite() { only_node_algorithms = false; }
};

TEST_F(NodeEngineWideTest, BlockTablesInTheSlotMatchTheReference) {
  const absl::Status status =
      RunCommunicatorJob({.size = 12}, [](Communicator& comm, RankControl&) {
        ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
        CheckScatters(comm);
        CheckAllgathersAndAlltoalls(comm);
      });
  EXPECT_TRUE(status.ok()) << status;
}

// A Gather's leaves write their whole blocks into the root from kCooperativeBytes
// (node_engine_limits::Cooperates), which copies its own meanwhile and reads only the
// smaller blocks: on 24 ranks, a Gather of 64 KiB blocks, and a Gatherv of 64 KiB, 1
// MiB and 16 KiB blocks mixed, in place and not, root 0 and the last.
TEST_F(NodeEngineWideTest, GatherLeavesWriteTheirWholeBlocks) {
  constexpr int kRanks = 24;
  const DataType type = DataType::kFloat;
  const size_t width = DataTypeSize(type);
  const size_t written = 64 * 1024 / width, large = 1024 * 1024 / width, read = 16 * 1024 / width;
  for (bool oversubscribed : {false, true}) {
    for (size_t count : {written, large}) {
      EXPECT_TRUE(
          node_engine_limits::Cooperates(Collective::kGather, count * width, oversubscribed));
    }
    EXPECT_FALSE(node_engine_limits::Cooperates(Collective::kGather, read * width, oversubscribed));
  }
  const absl::Status status = RunCommunicatorJob({.size = kRanks}, [&](Communicator& comm,
                                                                       RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    ASSERT_TRUE(comm.node_single_copy()) << "the leaves cannot write into the root here";
    const int rank = comm.rank();
    int salt = 900;
    for (int root : {0, kRanks - 1}) {
      for (bool in_place : {false, true}) {
        const bool here_in_place = in_place && rank == root;
        ++salt;
        // Gather of 64 KiB blocks.
        const RankBytes inputs = AllInputs(type, kRanks, written, salt);
        std::vector<size_t> counts(kRanks, written), displs(kRanks);
        for (int r = 0; r < kRanks; ++r) displs[r] = written * r;
        const Bytes initial(written * kRanks * width, 0x5a);
        Bytes recv = rank == root ? initial : Bytes(8, 0x11);
        if (here_in_place) {
          std::memcpy(recv.data() + displs[rank] * width, inputs[rank].data(), inputs[rank].size());
        }
        ASSERT_OK(comm.Gather(here_in_place ? kInPlace : inputs[rank].data(), recv.data(), written,
                              type, root));
        if (rank == root) {
          ASSERT_EQ(recv, *testing::ReferenceGatherv(type, inputs, counts, displs, initial))
              << "gather, root " << root << (in_place ? ", in place" : "");
        }
        // Gatherv: blocks of the three kinds, in reverse order.
        std::vector<size_t> vcounts(kRanks), vdispls(kRanks);
        RankBytes vinputs;
        size_t extent = 0;
        for (int r = kRanks - 1; r >= 0; --r) {
          vcounts[r] = r % 3 == 0 ? written : r % 3 == 1 ? large : read;
          vdispls[r] = extent;
          extent += vcounts[r];
        }
        for (int r = 0; r < kRanks; ++r) vinputs.push_back(MakeInput(type, r, vcounts[r], salt));
        const Bytes vinitial(extent * width, 0x5a);
        Bytes vrecv = rank == root ? vinitial : Bytes();
        if (here_in_place) {
          std::memcpy(vrecv.data() + vdispls[rank] * width, vinputs[rank].data(),
                      vinputs[rank].size());
        }
        ASSERT_OK(comm.Gatherv(here_in_place ? kInPlace : vinputs[rank].data(), vcounts[rank],
                               rank == root ? vrecv.data() : nullptr, vcounts, vdispls, type,
                               root));
        if (rank == root) {
          ASSERT_EQ(vrecv, *testing::ReferenceGatherv(type, vinputs, vcounts, vdispls, vinitial))
              << "gatherv, root " << root << (in_place ? ", in place" : "");
        }
      }
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A loop of small rooted calls (the quick path, where RunSmall publishes quietly under
// full fences), each result checked, with a Barrier between them as benchmarks have.
void CheckRepeatedRootedCalls(Communicator& comm) {
  const int size = comm.size(), rank = comm.rank();
  std::vector<int32_t> blocks(2 * size), mine(2), gathered(2 * size);
  std::vector<size_t> counts(size, 2), displs(size);
  for (int r = 0; r < size; ++r) displs[r] = 2 * r;
  for (int call = 0; call < 300; ++call) {
    const int root = call % size;
    for (int i = 0; i < 2 * size; ++i) blocks[i] = call * 1000 + i;
    ASSERT_OK(comm.Scatterv(blocks.data(), counts, displs, mine.data(), 2, DataType::kInt32, root));
    ASSERT_EQ(mine[0], call * 1000 + 2 * rank) << "scatterv, call " << call;
    mine[1] = rank == root ? call : -1;
    ASSERT_OK(comm.Bcast(&mine[1], 1, DataType::kInt32, root));
    ASSERT_EQ(mine[1], call) << "bcast, call " << call;
    ASSERT_OK(comm.Gather(mine.data(), gathered.data(), 2, DataType::kInt32, root));
    if (rank == root) {
      for (int r = 0; r < size; ++r) {
        ASSERT_EQ(gathered[2 * r], call * 1000 + 2 * r) << "gather, call " << call;
      }
    }
    ASSERT_OK(comm.Barrier());
  }
}

// Publications go without a fence (asymmetric fences) where the kernel lets every
// rank register for the sleepers' membarrier, on a node whose ranks have a core each
// and on one whose ranks outnumber its cores alike (2 and 3 ranks here); with
// ZCOLL_ASYMMETRIC_FENCES=0 they are sequentially consistent stores, and a small call's
// quiet (RunSmall). Either way the calls work.
TEST(NodeEngineFencesTest, AsymmetricWhereEveryRankRegistered) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const absl::Status registered = NodeSegment::RegisterAsymmetricFences();
  for (const bool full_asked : {false, true}) {
    std::optional<ScopedEnvironment> full;
    if (full_asked) full.emplace("ZCOLL_ASYMMETRIC_FENCES", "0");
    if (!full_asked && !registered.ok()) {
      std::printf("[ SKIPPED  ] asymmetric fences: this machine cannot: %s\n",
                  registered.ToString().c_str());
      continue;
    }
    for (const int size : {2, 3}) {
      const bool expected = !full_asked;
      const absl::Status status = RunCommunicatorJob(
          CommunicatorJob{.local_provider = "shm", .size = size},
          [&](Communicator& comm, RankControl&) {
            ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
            EXPECT_EQ(comm.node_asymmetric_fences(), expected)
                << size << " ranks on " << cores << " cores, rank " << comm.rank()
                << (full_asked ? ", full fences asked for" : "");
            CheckReductions(comm);
            CheckRepeatedRootedCalls(comm);
          });
      EXPECT_TRUE(status.ok()) << status << (full_asked ? " (full fences)" : "");
    }
  }
}

// Buffers from AllocateBuffer, which peers map and touch directly, mixed with ordinary
// ones in one call: a rank's send buffer is zcoll's on even ranks, its receive buffer
// on ranks r with r % 3 != 1, so every call reads and writes both kinds (a peer's
// publication, its partitioned result, the destination it wants written).
class ZcollBuffer {
 public:
  ZcollBuffer(const Bytes& contents, bool shared) : shared_(shared), size_(contents.size()) {
    if (shared_ && size_ > 0) {
      absl::StatusOr<void*> data = Communicator::AllocateBuffer(size_);
      EXPECT_TRUE(data.ok()) << data.status();
      data_ = data.ok() ? static_cast<char*>(*data) : nullptr;
    } else {
      own_.resize(size_);
      data_ = own_.data();
    }
    if (size_ > 0 && data_ != nullptr) std::memcpy(data_, contents.data(), size_);
  }
  ~ZcollBuffer() {
    if (shared_ && data_ != nullptr) {
      EXPECT_OK(Communicator::FreeBuffer(data_));
    }
  }
  ZcollBuffer(const ZcollBuffer&) = delete;
  ZcollBuffer& operator=(const ZcollBuffer&) = delete;
  char* data() { return data_; }
  Bytes contents() const { return Bytes(data_, data_ + size_); }

 private:
  bool shared_;
  size_t size_;
  std::vector<char> own_;
  char* data_ = nullptr;
};

Bytes Concatenated(const RankBytes& blocks) {
  Bytes all;
  for (const Bytes& block : blocks) all.insert(all.end(), block.begin(), block.end());
  return all;
}

// An Allgather and an Alltoall of `count` floats a block, a rank's send buffer zcoll's on
// even ranks and its receive buffer on ranks r with r % 3 != 1 (CheckWithZcollBuffers).
void CheckExchangesWithZcollBuffers(Communicator& comm, size_t count, int salt) {
  const int size = comm.size(), rank = comm.rank();
  const bool shared_send = rank % 2 == 0, shared_recv = rank % 3 != 1;
  const DataType type = DataType::kFloat;
  const size_t bytes = count * sizeof(float);
  const std::string where = absl::StrCat("count ", count, " on rank ", rank);
  const RankBytes inputs = AllInputs(type, size, count, salt);
  ZcollBuffer send(inputs[rank], shared_send), recv(Bytes(bytes * size), shared_recv);
  ASSERT_OK(comm.Allgather(send.data(), recv.data(), count, type));
  ASSERT_EQ(recv.contents(), Concatenated(inputs)) << "allgather " << where;
  const RankBytes all = AllInputs(type, size, count * size, salt);
  const RankBytes exchanged = *testing::ReferenceAlltoall(type, all, count);
  ZcollBuffer alltoall_send(all[rank], shared_send),
      alltoall_recv(Bytes(bytes * size), shared_recv);
  ASSERT_OK(comm.Alltoall(alltoall_send.data(), alltoall_recv.data(), count, type));
  ASSERT_EQ(alltoall_recv.contents(), exchanged[rank]) << "alltoall " << where;
}

// Beyond the slots; or `within_slots`, beyond kEagerBytes and within a slot, where a
// zcoll buffer is lent (node_engine_limits::LendsMappedBuffer) and an ordinary one copied.
void CheckWithZcollBuffers(Communicator& comm, bool within_slots = false) {
  const int size = comm.size(), rank = comm.rank();
  const bool shared_send = rank % 2 == 0, shared_recv = rank % 3 != 1;
  int salt = within_slots ? 400 : 300;
  const std::vector<size_t> reduction_bytes =
      within_slots ? std::vector<size_t>{2048 + 8, 40960 + 8}
                   : std::vector<size_t>{65536 + 68, (size_t{1} << 20) + 40};
  const std::vector<size_t> movement_counts =
      within_slots ? std::vector<size_t>{600, 9000}
                   : std::vector<size_t>{17000, (size_t{1} << 18) + 3};
  for (const OpCase& op_case : {OpCases()[0], OpCases()[1]}) {
    const size_t width = DataTypeSize(op_case.type);
    for (size_t bytes : reduction_bytes) {
      const size_t count = bytes / width;
      ++salt;
      const RankBytes inputs = AllInputs(op_case.type, size, count, salt);
      const Bytes expected = *testing::ReferenceReduce(op_case.op, op_case.type, inputs, count);
      const std::string where = absl::StrCat(op_case.name, " count ", count, " on rank ", rank);
      for (int root : {0, size - 1}) {
        ZcollBuffer send(inputs[rank], shared_send), recv(Bytes(count * width), shared_recv);
        ASSERT_OK(comm.Reduce(send.data(), recv.data(), count, op_case.type, op_case.op, root));
        if (rank == root) {
          ASSERT_EQ(recv.contents(), expected) << "reduce " << where;
        }
      }
      {
        ZcollBuffer send(inputs[rank], shared_send), recv(Bytes(count * width), shared_recv);
        ASSERT_OK(comm.Allreduce(send.data(), recv.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(recv.contents(), expected) << "allreduce " << where;
        ZcollBuffer in_place(inputs[rank], shared_recv);
        ASSERT_OK(comm.Allreduce(kInPlace, in_place.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(in_place.contents(), expected) << "allreduce in place " << where;
      }
      {
        const RankBytes all = AllInputs(op_case.type, size, count * size, salt);
        const RankBytes blocks = *testing::ReferenceReduceScatter(op_case.op, op_case.type, all,
                                                                  std::vector<size_t>(size, count));
        ZcollBuffer send(all[rank], shared_send), recv(Bytes(count * width), shared_recv);
        ASSERT_OK(
            comm.ReduceScatterBlock(send.data(), recv.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(recv.contents(), blocks[rank]) << "reduce_scatter_block " << where;
      }
      {
        const RankBytes expected_scan =
            *testing::ReferenceScan(op_case.op, op_case.type, inputs, count, false);
        ZcollBuffer send(inputs[rank], shared_send), recv(Bytes(count * width), shared_recv);
        ASSERT_OK(comm.Scan(send.data(), recv.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(recv.contents(), expected_scan[rank]) << "scan " << where;
        ZcollBuffer in_place(inputs[rank], shared_recv);
        ASSERT_OK(comm.Scan(kInPlace, in_place.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(in_place.contents(), expected_scan[rank]) << "scan in place " << where;
        const RankBytes expected_exscan =
            *testing::ReferenceScan(op_case.op, op_case.type, inputs, count, true);
        ZcollBuffer exscan_recv(inputs[rank], shared_recv);
        ASSERT_OK(comm.Exscan(send.data(), exscan_recv.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(exscan_recv.contents(), rank == 0 ? inputs[0] : expected_exscan[rank])
            << "exscan " << where;
        ZcollBuffer exscan_in_place(inputs[rank], shared_recv);
        ASSERT_OK(comm.Exscan(kInPlace, exscan_in_place.data(), count, op_case.type, op_case.op));
        ASSERT_EQ(exscan_in_place.contents(), rank == 0 ? inputs[0] : expected_exscan[rank])
            << "exscan in place " << where;
      }
    }
  }
  // The movements, of floats.
  const DataType type = DataType::kFloat;
  for (size_t count : movement_counts) {
    ++salt;
    const size_t bytes = count * sizeof(float);
    const RankBytes inputs = AllInputs(type, size, count, salt);
    const std::string where = absl::StrCat("count ", count, " on rank ", rank);
    for (int root : {0, size - 1}) {
      ZcollBuffer buffer(rank == root ? inputs[root] : Bytes(bytes), shared_recv);
      ASSERT_OK(comm.Bcast(buffer.data(), count, type, root));
      ASSERT_EQ(buffer.contents(), inputs[root]) << "bcast " << where;
      const Bytes root_send = MakeInput(type, root, count * size, salt);
      ZcollBuffer scatter_send(rank == root ? root_send : Bytes(), shared_send),
          scatter_recv(Bytes(bytes), shared_recv);
      ASSERT_OK(comm.Scatter(scatter_send.data(), scatter_recv.data(), count, type, root));
      ASSERT_EQ(scatter_recv.contents(),
                Bytes(root_send.begin() + rank * bytes, root_send.begin() + (rank + 1) * bytes))
          << "scatter " << where;
      ZcollBuffer gather_send(inputs[rank], shared_send),
          gather_recv(Bytes(rank == root ? bytes * size : 0), shared_recv);
      ASSERT_OK(comm.Gather(gather_send.data(), gather_recv.data(), count, type, root));
      if (rank == root) {
        ASSERT_EQ(gather_recv.contents(), Concatenated(inputs)) << "gather " << where;
      }
    }
    CheckExchangesWithZcollBuffers(comm, count, salt);
  }
}

TEST_P(NodeEngineLargeTest, ZcollBuffersMixedWithOrdinaryOnesMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    CheckWithZcollBuffers(comm);
  });
  EXPECT_TRUE(status.ok()) << status;
}

// An Allgather's and an Alltoall's copies into their results with streaming stores
// (node_engine_limits::StreamsResultCopies), as where the ranks' buffers outgrow the
// last-level cache: here ZCOLL_CACHE_BYTES says 64 KiB. The copies from AllocateBuffer
// buffers and from the slots are the engine's own (an ordinary buffer's beyond a slot
// are process_vm_readv's), so both kinds of buffer, mixed, at a size within the slots
// and at one beyond.
TEST_P(NodeEngineLargeTest, ResultsCopiedWithStreamingStoresMatchTheReference) {
  constexpr size_t kCacheBytes = 64 * 1024;
  for (size_t count : {size_t{3000}, size_t{1} << 17}) {
    EXPECT_TRUE(node_engine_limits::StreamsResultCopies(
        Collective::kAllgather, 2 * (count * sizeof(float) * 3), kCacheBytes));
  }
  setenv("ZCOLL_CACHE_BYTES", absl::StrCat(kCacheBytes).c_str(), 1);
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    int salt = 500;
    for (size_t count : {size_t{3000}, size_t{1} << 17}) {
      CheckExchangesWithZcollBuffers(comm, count, ++salt);
    }
  });
  unsetenv("ZCOLL_CACHE_BYTES");
  EXPECT_TRUE(status.ok()) << status;
}

// Lent on 2 ranks (a core each), copied into the slots on 3 and 4 (oversubscribed here).
TEST_P(NodeEngineLargeTest, ZcollBuffersWithinTheSlotsMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    CheckWithZcollBuffers(comm, /*within_slots=*/true);
  });
  EXPECT_TRUE(status.ok()) << status;
}

// Where the node's ranks have a core each (ZCOLL_CORES declares the cores this 2-core
// machine lacks), the engine takes paths it leaves where they outnumber its cores:
// Reduces and Allreduces within a slot on 4 ranks or more are partitioned in the slots
// (node_engine_limits::PartitionedInSlots: each rank reduces its block from the slots
// into its own slot, the others or the root copy the blocks from there), and a large
// Bcast's root writes shares of its leaves' copies while they read the rest
// (BcastShare). Every op of CheckReductions (a non-commutative one and MINLOC among
// them), in place and not, at both roots, at sizes around the partition's threshold
// and up to a slot; the movements at sizes beyond it.
class NodeEngineInSlotsTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  static void SetUpTestSuite() {
    setenv("ZCOLL_CORES", "64", 1);
    SayLargestSizeUnderSanitizer();
    only_node_algorithms = true;
  }
  static void TearDownTestSuite() {
    unsetenv("ZCOLL_CORES");
    only_node_algorithms = false;
  }
};

TEST_P(NodeEngineInSlotsTest, ACorePerRanksPathsMatchTheReference) {
  // Nine processes that each think they have a core, on this machine's two: 44 s under
  // ASan, its longest case. The plain run has it, and 4 ranks take the same paths here.
  if (GetParam().size > 4 && testing::UnderSanitizer()) {
    GTEST_SKIP() << "ZCOLL_UNDER_SANITIZER=1: " << GetParam().size
                 << " ranks are left to the plain run (4 ranks take the same paths here)";
  }
  const absl::Status status =
      RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl& control) {
        ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
        ASSERT_TRUE(node_engine_limits::PartitionedInSlots(Collective::kAllreduce, 4100,
                                                           kNodeSlotBytes, comm.size(), false));
        CheckReductions(comm);
        // (Set once every rank is past the line above: its threads share the flag.)
        ASSERT_OK(comm.Barrier());
        if (comm.rank() == 0 || control.is_process()) large_node_sizes = true;
        ASSERT_OK(comm.Barrier());
        CheckReductions(comm);
        CheckScatters(comm);
        CheckBcastAndGathers(comm);
        ASSERT_OK(comm.Barrier());
        if (comm.rank() == 0 || control.is_process()) large_node_sizes = false;
      });
  EXPECT_TRUE(status.ok()) << status;
}

// Lent zcoll buffers on ranks with a core each: a 40 KiB Reduce's and Allreduce's
// blocks are reduced from them into the slots (PartitionedInSlots).
TEST_P(NodeEngineInSlotsTest, ZcollBuffersLentWithinTheSlotsMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    ASSERT_TRUE(node_engine_limits::PartitionedInSlots(Collective::kAllreduce, 40960,
                                                       kNodeSlotBytes, comm.size(), false));
    CheckWithZcollBuffers(comm, /*within_slots=*/true);
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A reducer that stages every peer's data says it consumed them before it reduces
// (NodeExecution::ConsumeAfterReading), so that its lenders may go; one that reduces a
// peer's zcoll buffer where it lies must not, or that peer could overwrite it first.
// Rank 0's vectors are zcoll buffers (the others read them in place), the others'
// ordinary ones (read into staging); every rank overwrites its vector as soon as its
// call returns, round after round.
TEST_P(NodeEngineInSlotsTest, ALenderOverwritesItsVectorOnceItsReadersAreDone) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    const int size = comm.size(), rank = comm.rank();
    constexpr size_t kBlock = 96 * 1024 / sizeof(float);
    const size_t count = kBlock * static_cast<size_t>(size);
    ASSERT_GT(count * sizeof(float), kNodeSlotBytes);  // lent
    const Bytes zeros(count * sizeof(float), 0);
    ZcollBuffer send(zeros, /*shared=*/rank == 0);
    auto* vector = reinterpret_cast<float*>(send.data());
    std::vector<float> block(kBlock);
    for (int round = 0; round < 40; ++round) {
      for (size_t i = 0; i < count; ++i) vector[i] = static_cast<float>(i % 89 + rank + round);
      ASSERT_OK(comm.ReduceScatterBlock(vector, block.data(), kBlock, DataType::kFloat,
                                        PredefinedOp::kSum));
      std::fill(vector, vector + count, -1e6f);  // this rank's call is over
      const size_t first = kBlock * static_cast<size_t>(rank);
      const int ranks_sum = size * (size - 1) / 2;
      for (size_t i = 0; i < kBlock; ++i) {
        const auto expected =
            static_cast<float>(size * static_cast<int>((first + i) % 89 + round) + ranks_sum);
        ASSERT_EQ(block[i], expected)
            << "element " << i << " of round " << round << " on rank " << rank;
      }
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineInSlotsTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 4},
                                           CommunicatorJob{.local_provider = "shm", .size = 9},
                                           CommunicatorJob{.size = 4}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// On a node whose ranks outnumber its cores, a Bcast beyond a slot goes through the
// slots of its parity (node_engine_limits::BcastThroughSlots): within their capacity
// its root leaves once it has copied its vector in, beyond it the root reuses them as
// its leaves copy out. Sizes around a piece, the slots' capacity, and past it once and
// several times over, at three roots; a leaf's buffer beyond the count stays
// untouched; the root overwrites its buffer as soon as its call returns, call after
// call, and the leaves still find each call's vector; two nonblocking Bcasts in
// flight at once (each parity's slots) and a persistent one.
class NodeEngineBcastThroughSlotsTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  static void SetUpTestSuite() { setenv("ZCOLL_CORES", "1", 1); }
  static void TearDownTestSuite() { unsetenv("ZCOLL_CORES"); }
};

// The bytes of a Bcast of round `round` from `root`: a pattern no other round, root or
// size shares at any offset.
Bytes ThroughSlotsVector(size_t bytes, int root, int round) {
  Bytes vector(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    vector[i] = static_cast<char>((i * 131 + i / 4093 + static_cast<size_t>(root) * 7 +
                                   static_cast<size_t>(round) * 29 + bytes) &
                                  0xff);
  }
  return vector;
}

// The checks of LeavesGetTheRootsVectorWhateverItDoesAfter (below).
void CheckBcastsThroughTheSlots(Communicator& comm) {
  ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
  ASSERT_OK(comm.SetAlgorithm(Collective::kBcast, "node"));
  const int size = comm.size(), rank = comm.rank();
  const size_t slots = kNodeSlotBytes * static_cast<size_t>(size);
  const size_t piece = kNodeSlotBytes / node_engine_limits::kBcastSlotPieceParts;
  constexpr size_t kCanaryBytes = 64;
  for (const size_t bytes : {kNodeSlotBytes + 4, kNodeSlotBytes + piece + 12, slots - 4, slots,
                             slots + 4, 3 * slots + piece / 2 + 8}) {
    ASSERT_TRUE(node_engine_limits::BcastThroughSlots(
        bytes, kNodeSlotBytes, size, CoresOversubscribed(), comm.node_single_copy()))
        << bytes;
    for (const int root : {0, size / 2, size - 1}) {
      Bytes buffer(bytes + kCanaryBytes);
      for (int round = 0; round < 6; ++round) {
        const Bytes expected = ThroughSlotsVector(bytes, root, round);
        if (rank == root) {
          std::copy(expected.begin(), expected.end(), buffer.begin());
        } else {
          std::fill(buffer.begin(), buffer.end(), static_cast<char>(0xa5));
        }
        const absl::Status result = comm.Bcast(buffer.data(), bytes, DataType::kUint8, root);
        const std::string where = absl::StrCat(bytes, " bytes from root ", root, ", round ", round,
                                               ", rank ", rank, " of ", size);
        ASSERT_TRUE(result.ok()) << where << ": " << result;
        if (rank == root) {
          // Nobody may read it now: overwritten before the leaves may have copied.
          std::fill(buffer.begin(), buffer.end(), static_cast<char>(0x3c));
          continue;
        }
        ASSERT_TRUE(std::equal(expected.begin(), expected.end(), buffer.begin())) << where;
        for (size_t i = bytes; i < buffer.size(); ++i) {
          ASSERT_EQ(buffer[i], static_cast<char>(0xa5)) << where << ": written past at " << i;
        }
      }
    }
  }
  // Two in flight at once, from different roots, then one persistent Bcast started
  // three times.
  const size_t bytes = 2 * slots + 20;  // (reusing the slots)
  const int other = size - 1;
  Bytes first(bytes, 0), second(bytes, 0);
  if (rank == 0) first = ThroughSlotsVector(bytes, 0, 100);
  if (rank == other) second = ThroughSlotsVector(bytes, other, 101);
  absl::StatusOr<Request> a = comm.IBcast(first.data(), bytes, DataType::kUint8, 0);
  absl::StatusOr<Request> b = comm.IBcast(second.data(), bytes, DataType::kUint8, other);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_OK(b->Wait());
  ASSERT_OK(a->Wait());
  ASSERT_EQ(first, ThroughSlotsVector(bytes, 0, 100)) << "rank " << rank;
  ASSERT_EQ(second, ThroughSlotsVector(bytes, other, 101)) << "rank " << rank;
  Bytes persistent(bytes);
  absl::StatusOr<PersistentRequest> request =
      comm.BcastInit(persistent.data(), bytes, DataType::kUint8, other);
  ASSERT_TRUE(request.ok()) << request.status();
  for (int round = 0; round < 3; ++round) {
    const Bytes expected = ThroughSlotsVector(bytes, other, 200 + round);
    if (rank == other) {
      persistent = expected;
    } else {
      std::fill(persistent.begin(), persistent.end(), 0);
    }
    ASSERT_OK(request->Start());
    ASSERT_OK(request->Wait());
    ASSERT_EQ(persistent, expected) << "rank " << rank << ", round " << round;
  }
}

TEST_P(NodeEngineBcastThroughSlotsTest, LeavesGetTheRootsVectorWhateverItDoesAfter) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    CheckBcastsThroughTheSlots(comm);
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineBcastThroughSlotsTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 2},
                                           CommunicatorJob{.local_provider = "shm", .size = 3},
                                           CommunicatorJob{.size = 5}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// Where the node's ranks may not read each other's memory (ZCOLL_CROSS_MEMORY_ATTACH=0
// stands in for a container that forbids it), each with a core of its own: the engine
// runs what fits its slots, and a Bcast of any size through them.
class NodeEngineWithoutSingleCopyTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  static void SetUpTestSuite() {
    setenv("ZCOLL_CROSS_MEMORY_ATTACH", "0", 1);
    setenv("ZCOLL_CORES", "64", 1);
    setenv("ZCOLL_CHUNK_BYTES", "4096", 1);
    SayLargestSizeUnderSanitizer();
    only_node_algorithms = true;
  }
  static void TearDownTestSuite() {
    unsetenv("ZCOLL_CROSS_MEMORY_ATTACH");
    unsetenv("ZCOLL_CORES");
    only_node_algorithms = false;
  }
};

TEST_P(NodeEngineWithoutSingleCopyTest, LeavesGetTheRootsVectorThroughTheSlots) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_FALSE(comm.node_single_copy()) << "ZCOLL_CROSS_MEMORY_ATTACH did not take";
    CheckBcastsThroughTheSlots(comm);
  });
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(NodeEngineWithoutSingleCopyTest, WhatRunsOnTheEngineMatchesTheReference) {
  const absl::Status status =
      RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl& control) {
        ASSERT_FALSE(comm.node_single_copy()) << "ZCOLL_CROSS_MEMORY_ATTACH did not take";
        for (const bool large : {false, true}) {
          // (Set once every rank is past the last call: its threads share the flag.)
          ASSERT_OK(comm.Barrier());
          if (comm.rank() == 0 || control.is_process()) large_node_sizes = large;
          ASSERT_OK(comm.Barrier());
          CheckReductions(comm);
          CheckScatters(comm);
          CheckScans(comm);
          CheckBcastAndGathers(comm);
          CheckAllgathersAndAlltoalls(comm);
        }
        ASSERT_OK(comm.Barrier());
        if (comm.rank() == 0 || control.is_process()) large_node_sizes = false;
      });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineWithoutSingleCopyTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 2},
                                           CommunicatorJob{.size = 3}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// On 2 ranks with a core each an Allreduce beyond kTwoRankCopyInBytes lends its vector
// (node_engine_limits::CopyInLimit), as does one of a zcoll buffer beyond kEagerBytes
// (LendsMappedBuffer), which the other rank reads while this one reduces: in place, the
// result must wait in scratch until the other has read the vector. Made to happen every
// time: rank 1 publishes first (one Test), rank 0 then runs its call as far as it goes
// (its reduction done, waiting for rank 1 to have read its vector: a vector copied into
// the slot would let it finish), and only then does rank 1 read rank 0's vector.
// (Barriers of a Dup order the ranks; NodeEngineInSlotsTest's ZCOLL_CORES gives the
// ranks their cores.)
class NodeEngineLentReductionTest : public NodeEngineInSlotsTest {};

void CheckALentInPlaceAllreduceWaitsForItsReader(Communicator& comm, size_t count,
                                                 bool zcoll_buffer) {
  absl::StatusOr<Communicator> order = comm.Dup();
  ASSERT_TRUE(order.ok()) << order.status();
  const int rank = comm.rank();
  for (int round = 0; round < 3; ++round) {
    std::vector<float> initial(count), expected(count);
    for (size_t i = 0; i < count; ++i) {
      initial[i] = static_cast<float>((i % 97) * (rank + 1) + round);
      expected[i] = static_cast<float>((i % 97) * 3 + 2 * round);
    }
    auto bytes_of = [](const std::vector<float>& floats) {
      const char* data = reinterpret_cast<const char*>(floats.data());
      return Bytes(data, data + floats.size() * sizeof(float));
    };
    ZcollBuffer buffer(bytes_of(initial), zcoll_buffer);
    void* vector = buffer.data();
    absl::StatusOr<Request> request;
    if (rank == 1) {
      request = comm.IAllreduce(kInPlace, vector, count, DataType::kFloat, PredefinedOp::kSum);
      ASSERT_TRUE(request.ok()) << request.status();
      ASSERT_OK(request->Test());  // published
      ASSERT_OK(order->Barrier());
      ASSERT_OK(order->Barrier());  // rank 0 has reduced
    } else {
      ASSERT_OK(order->Barrier());  // rank 1 has published
      request = comm.IAllreduce(kInPlace, vector, count, DataType::kFloat, PredefinedOp::kSum);
      ASSERT_TRUE(request.ok()) << request.status();
      absl::StatusOr<bool> done = request->Test();
      ASSERT_TRUE(done.ok()) << done.status();
      EXPECT_FALSE(*done) << "rank 1 has not read this rank's vector yet";
      ASSERT_OK(order->Barrier());
    }
    ASSERT_OK(request->Wait());
    ASSERT_EQ(buffer.contents(), bytes_of(expected)) << "round " << round << " on rank " << rank;
  }
}

TEST_P(NodeEngineLentReductionTest, AnInPlaceAllreduceLeavesItsVectorUntilTheOtherHasReadIt) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    constexpr size_t kCount = (node_engine_limits::kTwoRankCopyInBytes + 4096) / sizeof(float);
    ASSERT_GT(kCount * sizeof(float),
              node_engine_limits::CopyInLimit(Collective::kAllreduce, kNodeSlotBytes, 2, false));
    CheckALentInPlaceAllreduceWaitsForItsReader(comm, kCount, /*zcoll_buffer=*/false);
  });
  EXPECT_TRUE(status.ok()) << status;
}

// 8 KiB in a zcoll buffer, which the slot would take from an ordinary one.
TEST_P(NodeEngineLentReductionTest, AZcollBufferIsLentWithinTheSlotToo) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_FALSE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    constexpr size_t kCount = 8192 / sizeof(float);
    ASSERT_LE(kCount * sizeof(float),
              node_engine_limits::CopyInLimit(Collective::kAllreduce, kNodeSlotBytes, 2, false));
    ASSERT_TRUE(node_engine_limits::LendsMappedBuffer(kCount * sizeof(float), false));
    CheckALentInPlaceAllreduceWaitsForItsReader(comm, kCount, /*zcoll_buffer=*/true);
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineLentReductionTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 2},
                                           CommunicatorJob{.size = 2}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// Scans and Exscans beyond a slot on 3 ranks or more run as a chain
// (node_engine_limits::Chained): each rank makes its result a chunk at a time from its
// predecessor's, as that rank makes it. On 5 and 9 ranks (NodeEngineLargeTest has 3
// and 4), every op of CheckScans (a non-commutative one and MINLOC among them), in
// place and not, at sizes of one to several chunks; then two chains in flight at once,
// waited for in the opposite order (each call's progress is its parity's word).
// (NodeEngineLargeTest's sizes and node algorithms, other jobs and checks.)
class NodeEngineChainTest : public NodeEngineLargeTest {};

TEST_P(NodeEngineChainTest, ChainedScansMatchTheReference) {
  const absl::Status status = RunCommunicatorJob(GetParam(), [](Communicator& comm, RankControl&) {
    ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots here";
    CheckScans(comm);
    const int size = comm.size(), rank = comm.rank();
    const OpCase digits = OpCases()[1];
    const size_t width = DataTypeSize(digits.type);
    const size_t count = (size_t{3} << 20) / width + 7;  // 12 chunks and a bit
    ASSERT_TRUE(
        node_engine_limits::Chained(Collective::kScan, count * width, kNodeSlotBytes, size));
    const RankBytes scan_inputs = AllInputs(digits.type, size, count, 901);
    const RankBytes exscan_inputs = AllInputs(digits.type, size, count, 902);
    const RankBytes scanned =
        *testing::ReferenceScan(digits.op, digits.type, scan_inputs, count, false);
    const RankBytes exscanned =
        *testing::ReferenceScan(digits.op, digits.type, exscan_inputs, count, true);
    for (int round = 0; round < 3; ++round) {
      Bytes scan_recv(count * width, 0), exscan_recv = exscan_inputs[rank];
      absl::StatusOr<Request> scan =
          comm.IScan(scan_inputs[rank].data(), scan_recv.data(), count, digits.type, digits.op);
      ASSERT_TRUE(scan.ok()) << scan.status();
      absl::StatusOr<Request> exscan =
          comm.IExscan(kInPlace, exscan_recv.data(), count, digits.type, digits.op);
      ASSERT_TRUE(exscan.ok()) << exscan.status();
      ASSERT_TRUE(exscan->Wait().ok()) << "rank " << rank << " round " << round;
      ASSERT_TRUE(scan->Wait().ok()) << "rank " << rank << " round " << round;
      ASSERT_EQ(scan_recv, scanned[rank]) << "nonblocking scan on rank " << rank;
      ASSERT_EQ(exscan_recv, rank == 0 ? exscan_inputs[0] : exscanned[rank])
          << "nonblocking exscan in place on rank " << rank;
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Jobs, NodeEngineChainTest,
                         ::testing::Values(CommunicatorJob{.local_provider = "shm", .size = 5},
                                           CommunicatorJob{.size = 9}),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

// Plans are cached by the arguments and the algorithm asked for: forcing another
// algorithm between calls with equal arguments runs that algorithm, not the cached
// plan. Seen through a commutative user op's calls at the root of a 4-rank reduce:
// the binomial tree's root combines its 2 children, the 4-nomial (flat) tree's root
// its 3 (ranks are threads here, so each counts its own calls).
thread_local int user_op_calls = 0;

TEST(PlanCacheTest, ForcingAnotherAlgorithmRunsItForEqualArguments) {
  const absl::Status status = RunCommunicatorJob({.size = 4}, [](Communicator& comm, RankControl&) {
    const ReduceOp counted = *ReduceOp::CreateUser(
        [](const void* in, void* inout, size_t count, DataType) {
          ++user_op_calls;
          for (size_t i = 0; i < count; ++i) {
            static_cast<int32_t*>(inout)[i] += static_cast<const int32_t*>(in)[i];
          }
        },
        /*commutative=*/true, "counted_sum");
    const int32_t mine = comm.rank() + 1;
    for (const char* algorithm : {"binomial", "knomial", "binomial", "knomial"}) {
      ASSERT_OK(comm.SetAlgorithm(Collective::kReduce, algorithm));
      int32_t sum = 0;
      user_op_calls = 0;
      ASSERT_OK(comm.Reduce(&mine, &sum, 1, DataType::kInt32, counted, 0));
      if (comm.rank() != 0) continue;
      EXPECT_EQ(sum, 1 + 2 + 3 + 4) << algorithm;
      EXPECT_EQ(user_op_calls, std::string(algorithm) == "binomial" ? 2 : 3) << algorithm;
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A loop of small blocking calls on the node's segment repeats each collective's last
// call without the general path (Communicator::QuickCallFits): whatever changes from
// one call to the next (the count, the root, in place or not, the buffers, the op, the
// v-collectives' layouts) still takes effect. 2 ranks as processes (with more
// than this machine's cores, small reduces, bcasts and barriers are not node calls),
// every call checked.
TEST(QuickNodeCallTest, RepeatedSmallCallsFollowTheirArguments) {
  const absl::Status status = RunCommunicatorJob(
      {.local_provider = "shm", .size = 2}, [](Communicator& comm, RankControl&) {
        ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
        const int me = comm.rank(), size = comm.size();
        size_t count = 1;
        int root = 0;
        bool in_place = false;
        PredefinedOp op = PredefinedOp::kSum;
        bool reversed = false;  // the v-collectives' blocks in reverse rank order
        for (int i = 0; i < 80; ++i) {
          // Runs of 4 equal calls, each run changing one argument of the run before.
          if (i > 0 && i % 4 == 0) {
            switch (i / 4 % 5) {
              case 4:
                reversed = !reversed;
                break;
              case 0:
                count = count % 3 + 1;
                break;
              case 1:
                root = (root + 1) % size;
                break;
              case 2:
                in_place = !in_place;
                break;
              default:
                op = op == PredefinedOp::kSum ? PredefinedOp::kMax : PredefinedOp::kSum;
                break;
            }
          }
          auto value = [&](int rank, size_t k) {
            return static_cast<int32_t>(i * 100 + rank * 10 + static_cast<int>(k));
          };
          auto expected = [&](size_t k) {
            int32_t result = op == PredefinedOp::kMax ? value(size - 1, k) : 0;
            if (op == PredefinedOp::kSum) {
              for (int r = 0; r < size; ++r) result += value(r, k);
            }
            return result;
          };
          // Fresh buffers every call (the buffers are no part of what is repeated).
          std::vector<int32_t> send(count), recv(count, -1);
          for (size_t k = 0; k < count; ++k) send[k] = value(me, k);
          if (in_place) recv = send;
          ASSERT_OK(comm.Allreduce(in_place ? kInPlace : send.data(), recv.data(), count,
                                   DataType::kInt32, op));
          for (size_t k = 0; k < count; ++k) {
            ASSERT_EQ(recv[k], expected(k)) << "allreduce, call " << i << ", rank " << me;
          }
          std::vector<int32_t> reduced(count, -1);
          const bool reduce_in_place = in_place && me == root;
          if (reduce_in_place) reduced = send;
          ASSERT_OK(comm.Reduce(reduce_in_place ? kInPlace : send.data(), reduced.data(), count,
                                DataType::kInt32, op, root));
          if (me == root) {
            for (size_t k = 0; k < count; ++k) {
              ASSERT_EQ(reduced[k], expected(k)) << "reduce, call " << i << ", root " << root;
            }
          }
          std::vector<int32_t> broadcast(count, -1);
          if (me == root) broadcast = send;
          ASSERT_OK(comm.Bcast(broadcast.data(), count, DataType::kInt32, root));
          for (size_t k = 0; k < count; ++k) {
            ASSERT_EQ(broadcast[k], value(root, k)) << "bcast, call " << i << ", root " << root;
          }
          // Scatter and Gather (in place at the root, by its receive and send buffer).
          std::vector<int32_t> blocks(count * static_cast<size_t>(size));
          for (int r = 0; r < size; ++r) {
            for (size_t k = 0; k < count; ++k) blocks[r * count + k] = value(r, k);
          }
          std::vector<int32_t> scattered(count, -1);
          const bool root_in_place = in_place && me == root;
          ASSERT_OK(comm.Scatter(me == root ? blocks.data() : nullptr,
                                 root_in_place ? kInPlace : scattered.data(), count,
                                 DataType::kInt32, root));
          if (!root_in_place) {
            for (size_t k = 0; k < count; ++k) {
              ASSERT_EQ(scattered[k], value(me, k)) << "scatter, call " << i << ", root " << root;
            }
          }
          std::vector<int32_t> gathered(count * static_cast<size_t>(size), -1);
          if (root_in_place) {
            std::copy(send.begin(), send.end(), gathered.begin() + me * count);
          }
          ASSERT_OK(comm.Gather(root_in_place ? kInPlace : send.data(), gathered.data(), count,
                                DataType::kInt32, root));
          if (me == root) {
            ASSERT_EQ(gathered, blocks) << "gather, call " << i << ", root " << root;
          }
          // The v-collectives' layouts: rank r's block of block_count(r) elements, the
          // blocks in rank order or reversed (the layout is part of what repeats);
          // returns the extent.
          auto lay_out = [&](auto block_count, std::vector<size_t>& counts,
                             std::vector<size_t>& displs) {
            counts.assign(size, 0);
            displs.assign(size, 0);
            size_t extent = 0;
            for (int j = 0; j < size; ++j) {
              const int r = reversed ? size - 1 - j : j;
              counts[r] = block_count(r);
              displs[r] = extent;
              extent += counts[r];
            }
            return extent;
          };
          // Scatterv and Gatherv: rank r's block is count + r elements, value(r, .).
          std::vector<size_t> counts, displs;
          const size_t extent =
              lay_out([&](int r) { return count + static_cast<size_t>(r); }, counts, displs);
          std::vector<int32_t> layout(extent, -1);
          for (int r = 0; r < size; ++r) {
            for (size_t k = 0; k < counts[r]; ++k) layout[displs[r] + k] = value(r, k);
          }
          const size_t mine = counts[me];
          std::vector<int32_t> my_part(mine, -1);
          ASSERT_OK(comm.Scatterv(me == root ? layout.data() : nullptr, counts, displs,
                                  root_in_place ? kInPlace : my_part.data(), mine, DataType::kInt32,
                                  root));
          if (!root_in_place) {
            for (size_t k = 0; k < mine; ++k) {
              ASSERT_EQ(my_part[k], value(me, k)) << "scatterv, call " << i << ", root " << root;
            }
          }
          std::vector<int32_t> own(mine);
          for (size_t k = 0; k < mine; ++k) own[k] = value(me, k);
          std::vector<int32_t> collected(extent, -1);
          if (root_in_place) std::copy(own.begin(), own.end(), collected.begin() + displs[me]);
          ASSERT_OK(comm.Gatherv(root_in_place ? kInPlace : own.data(), mine, collected.data(),
                                 counts, displs, DataType::kInt32, root));
          if (me == root) {
            ASSERT_EQ(collected, layout) << "gatherv, call " << i << ", root " << root;
          }
          // Allgatherv: the same layout on every rank.
          std::vector<int32_t> everyone(extent, -1);
          if (in_place) std::copy(own.begin(), own.end(), everyone.begin() + displs[me]);
          ASSERT_OK(comm.Allgatherv(in_place ? kInPlace : own.data(), mine, everyone.data(), counts,
                                    displs, DataType::kInt32));
          ASSERT_EQ(everyone, layout) << "allgatherv, call " << i << ", rank " << me;
          // ReduceScatter: rank r gets counts[r] elements, from the sum of the counts
          // before its (every rank's vector is value(q, k) at element k).
          {
            std::vector<int32_t> whole(extent);
            for (size_t k = 0; k < extent; ++k) whole[k] = value(me, k);
            std::vector<int32_t> reduced_part(in_place ? whole : std::vector<int32_t>(mine, -1));
            ASSERT_OK(comm.ReduceScatter(in_place ? kInPlace : whole.data(), reduced_part.data(),
                                         counts, DataType::kInt32, op));
            size_t first = 0;
            for (int r = 0; r < me; ++r) first += counts[r];
            for (size_t k = 0; k < mine; ++k) {
              ASSERT_EQ(reduced_part[k], expected(first + k))
                  << "reduce_scatter, call " << i << ", rank " << me;
            }
          }
          // Alltoallv: rank q sends rank r count + q + r elements value(q * size + r, .)
          // (symmetric, so that in place works), blocks in the order of the layout.
          {
            std::vector<size_t> pair_counts, pair_displs;
            const size_t pair_extent =
                lay_out([&](int r) { return count + static_cast<size_t>(me + r); }, pair_counts,
                        pair_displs);
            std::vector<int32_t> out(pair_extent), in(pair_extent, -1);
            for (int r = 0; r < size; ++r) {
              for (size_t k = 0; k < pair_counts[r]; ++k) {
                out[pair_displs[r] + k] = value(me * size + r, k);
              }
            }
            if (in_place) in = out;
            ASSERT_OK(comm.Alltoallv(in_place ? kInPlace : out.data(), pair_counts, pair_displs,
                                     in.data(), pair_counts, pair_displs, DataType::kInt32));
            for (int q = 0; q < size; ++q) {
              for (size_t k = 0; k < pair_counts[q]; ++k) {
                ASSERT_EQ(in[pair_displs[q] + k], value(q * size + me, k))
                    << "alltoallv, call " << i << ", rank " << me;
              }
            }
          }
          // ReduceScatterBlock: rank r gets block r of every rank's vector of size blocks
          // (rank q's element r * count + k is value(q, r * count + k)).
          std::vector<int32_t> vectors(count * static_cast<size_t>(size));
          for (size_t k = 0; k < vectors.size(); ++k) vectors[k] = value(me, k);
          std::vector<int32_t> my_block(in_place ? vectors : std::vector<int32_t>(count, -1));
          ASSERT_OK(comm.ReduceScatterBlock(in_place ? kInPlace : vectors.data(), my_block.data(),
                                            count, DataType::kInt32, op));
          for (size_t k = 0; k < count; ++k) {
            ASSERT_EQ(my_block[k], expected(me * count + k))
                << "reduce_scatter_block, call " << i << ", rank " << me;
          }
          // Allgather and Alltoall.
          std::vector<int32_t> all(count * static_cast<size_t>(size), -1);
          if (in_place) std::copy(send.begin(), send.end(), all.begin() + me * count);
          ASSERT_OK(comm.Allgather(in_place ? kInPlace : send.data(), all.data(), count,
                                   DataType::kInt32));
          ASSERT_EQ(all, blocks) << "allgather, call " << i << ", rank " << me;
          // Rank q sends rank r the block value(q * size + r, .).
          std::vector<int32_t> outgoing(count * static_cast<size_t>(size));
          for (int r = 0; r < size; ++r) {
            for (size_t k = 0; k < count; ++k) outgoing[r * count + k] = value(me * size + r, k);
          }
          std::vector<int32_t> incoming(in_place ? outgoing
                                                 : std::vector<int32_t>(outgoing.size(), -1));
          ASSERT_OK(comm.Alltoall(in_place ? kInPlace : outgoing.data(), incoming.data(), count,
                                  DataType::kInt32));
          for (int q = 0; q < size; ++q) {
            for (size_t k = 0; k < count; ++k) {
              ASSERT_EQ(incoming[q * count + k], value(q * size + me, k))
                  << "alltoall, call " << i << ", rank " << me;
            }
          }
          // Scan and Exscan: rank r combines ranks 0..r (0..r-1; rank 0's buffer is left
          // as it was).
          for (const bool exclusive : {false, true}) {
            std::vector<int32_t> scanned(count, -1);
            if (in_place) scanned = send;
            const std::vector<int32_t> before = scanned;
            const void* source = in_place ? kInPlace : send.data();
            ASSERT_OK((exclusive ? comm.Exscan(source, scanned.data(), count, DataType::kInt32, op)
                                 : comm.Scan(source, scanned.data(), count, DataType::kInt32, op)));
            const int last = exclusive ? me - 1 : me;
            for (size_t k = 0; k < count; ++k) {
              int32_t prefix = op == PredefinedOp::kMax ? value(last, k) : 0;
              if (op == PredefinedOp::kSum) {
                for (int r = 0; r <= last; ++r) prefix += value(r, k);
              }
              ASSERT_EQ(scanned[k], last < 0 ? before[k] : prefix)
                  << (exclusive ? "exscan" : "scan") << ", call " << i << ", rank " << me;
            }
          }
          ASSERT_OK(comm.Barrier());
        }
      });
  EXPECT_TRUE(status.ok()) << status;
}

// A v-collective's key holds its own copy of its vectors, not the general path's
// execution's: after a call that failed (which takes that execution with it), a
// repeated Gatherv returns the job's failure, reading nothing freed (ASan, in
// .ci/run's sanitizer step, sees a key that refers to the dropped execution).
TEST(QuickNodeCallTest, AVCollectivesKeyOutlivesTheGeneralPathsExecution) {
  const absl::Status status = RunCommunicatorJob(
      {.local_provider = "shm", .size = 2}, [](Communicator& comm, RankControl&) {
        ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
        const int me = comm.rank();
        const std::vector<size_t> counts = {1, 1}, displs = {0, 1};
        int32_t mine = me + 1, all[2] = {-1, -1};
        ASSERT_OK(comm.Gatherv(&mine, 1, all, counts, displs, DataType::kInt32, 0));
        if (me == 0) {
          EXPECT_EQ(all[1], 2);
        }
        // Ranks that disagree on the count: the call fails on both.
        int32_t values[2] = {1, 1}, sums[2] = {0, 0};
        const absl::Status disagreed =
            comm.Allreduce(values, sums, me == 0 ? 1 : 2, DataType::kInt32, PredefinedOp::kSum);
        EXPECT_FALSE(disagreed.ok());
        const absl::Status after = comm.Gatherv(&mine, 1, all, counts, displs, DataType::kInt32, 0);
        EXPECT_FALSE(after.ok()) << "a call after the job failed";
      });
  EXPECT_TRUE(status.ok()) << status;
}

// A repeated call with a buffer the general path refuses is refused as there (and not
// run with it): a loop of allreduces, then one whose receive buffer is null, or whose
// buffers overlap. (The rank that refuses it first fails with InvalidArgument; the
// other may learn it from the job's failure first, Aborted with that cause.)
TEST(QuickNodeCallTest, ABadBufferInARepeatedCallIsRefusedNamingIt) {
  for (const bool overlapping : {false, true}) {
    const absl::Status status = RunCommunicatorJob(
        {.local_provider = "shm", .size = 2}, [overlapping](Communicator& comm, RankControl&) {
          int32_t buffers[2] = {comm.rank() + 1, 0};
          for (int i = 0; i < 5; ++i) {
            ASSERT_OK(
                comm.Allreduce(&buffers[0], &buffers[1], 1, DataType::kInt32, PredefinedOp::kSum));
            ASSERT_EQ(buffers[1], 3);
          }
          const absl::Status refused =
              overlapping
                  ? comm.Allreduce(&buffers[0], &buffers[0], 1, DataType::kInt32,
                                   PredefinedOp::kSum)
                  : comm.Allreduce(&buffers[0], nullptr, 1, DataType::kInt32, PredefinedOp::kSum);
          EXPECT_THAT(refused.code(),
                      AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
              << refused;
          EXPECT_THAT(refused.message(), HasSubstr(overlapping ? "overlap" : "`recv` is null"))
              << refused;
        });
    EXPECT_TRUE(status.ok()) << status << (overlapping ? " (overlapping)" : " (null recv)");
  }
}

// A small node call whose ranks disagree fails, after a loop of agreeing calls. A rank
// that reads (a Bcast's leaf) finds out in the call; one that needs nothing of the
// others (the root, eager: NodeExecution::ChooseReads) may return first and finds
// out two node calls later at most, when it compares the others' words of that call.
// So every rank has failed, naming the disagreement, by the second call after it:
// with both ranks naming themselves the root (both eager, neither reads), and with the
// leaf passing a count other than the root's.
// (Vectors of 1 element, inline, and of 1024, in the slots: the general state machine.)
TEST(QuickNodeCallTest, RanksThatDisagreeOnASmallCallFailWithinTwoCalls) {
  for (const size_t elements : {size_t{1}, size_t{1024}}) {
    for (const bool both_roots : {true, false}) {
      const absl::Status status = RunCommunicatorJob(
          {.local_provider = "shm", .size = 2},
          [both_roots, elements](Communicator& comm, RankControl&) {
            std::vector<int64_t> values(2 * elements, comm.rank() == 0 ? 42 : 0);
            for (int i = 0; i < 5; ++i) {
              ASSERT_OK(comm.Bcast(values.data(), elements, DataType::kInt64, 0));
              ASSERT_EQ(values[0], 42);
            }
            const int root = both_roots ? comm.rank() : 0;
            const size_t count = !both_roots && comm.rank() == 1 ? 2 * elements : elements;
            absl::Status first_error = comm.Bcast(values.data(), count, DataType::kInt64, root);
            if (!both_roots && comm.rank() == 1) {
              // The leaf, in the call itself.
              EXPECT_THAT(first_error.code(),
                          AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
                  << first_error;
            }
            // (Calls of the same size: the slots' go through the general state machine.)
            for (int call = 0; call < 2 && first_error.ok(); ++call) {
              first_error = comm.Bcast(values.data(), elements, DataType::kInt64, 0);
            }
            EXPECT_THAT(first_error.code(),
                        AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
                << first_error;
            EXPECT_THAT(first_error.message(), HasSubstr("disagree")) << first_error;
          });
      EXPECT_TRUE(status.ok()) << status << (both_roots ? " (both roots, " : " (counts, ")
                               << elements << " elements)";
    }
  }
}

// Within kEagerBytes a rank waits only for the ranks whose data it reads: none for one
// that needs nothing of the others (eager: a Bcast's or Scatter's root, a Reduce's or
// Gather's leaf, a Scan's or Exscan's rank 0), the root alone for a Bcast's or
// Scatter(v)'s leaf, those before it for a Scan's or Exscan's rank
// (node_engine_limits::RoleReads). Here the last rank enters only once every other
// rank's call has returned, with its result (waiting at most 10 s): on 2 ranks with
// each eager role (Reduce and Gather rooted at the last rank), on 3 with the readers
// as rank 1. As a first call and as a repetition of one made together (a quick call),
// of 1 element (inline) and of 64 (in the slots; RunSmall runs both for a Bcast,
// Reduce, Scan or Exscan, the general state machine for the others); and of 4096 (16
// KiB, still in the slots) on a node whose ranks outnumber its cores (ZCOLL_CORES=1),
// where node_engine_limits::MayDeferChecks keeps it so beyond kEagerBytes. (Ranks are
// threads: the count is shared.)
TEST(QuickNodeCallTest, ARankReturnsBeforeTheRanksItDoesNotReadEnter) {
  static std::atomic<int> returned{0};
  struct Case {
    int size;
    Collective collective;
  };
  const Case cases[] = {
      {2, Collective::kBcast},  {2, Collective::kReduce},  {2, Collective::kScatter},
      {2, Collective::kGather}, {2, Collective::kScan},    {2, Collective::kExscan},
      {3, Collective::kBcast},  {3, Collective::kScatter}, {3, Collective::kScatterv},
      {3, Collective::kScan},   {3, Collective::kExscan},  {3, Collective::kReduce},
  };
  for (const size_t n : {size_t{1}, size_t{64}, size_t{4096}}) {
    const bool oversubscribed = n * sizeof(int32_t) > node_engine_limits::kEagerBytes;
    std::optional<ScopedEnvironment> cores;
    if (oversubscribed) cores.emplace("ZCOLL_CORES", "1");
    for (const bool repeated : {false, true}) {
      for (const auto& [size, collective] : cases) {
        returned = 0;
        const absl::Status status = RunCommunicatorJob(
            {.size = size},
            [collective, repeated, n, oversubscribed](Communicator& comm, RankControl&) {
              ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
              if (oversubscribed) {
                ASSERT_TRUE(CoresOversubscribed()) << "ZCOLL_CORES did not take";
              }
              // (3 ranks on a 2-core machine are oversubscribed, where the table sends
              // a small Scatterv or Reduce by messages.)
              ASSERT_OK(comm.SetAlgorithm(collective, "node"));
              const int rank = comm.rank(), size = comm.size(), late = size - 1;
              // A Reduce's or Gather's root is the late rank, whom its leaves do not read.
              const int root =
                  collective == Collective::kReduce || collective == Collective::kGather ? late : 0;
              // Rank r's vector is all r + 1; the root's block for rank r all 10 (r + 1).
              std::vector<int32_t> mine(n), result(n), blocks(size * n), gathered(size * n);
              std::vector<size_t> counts(size, n), displs(size);
              for (int r = 0; r < size; ++r) displs[r] = r * n;
              auto reset = [&] {
                std::fill(mine.begin(), mine.end(), rank + 1);
                std::fill(result.begin(), result.end(), 0);
                for (size_t i = 0; i < blocks.size(); ++i) {
                  blocks[i] = 10 * static_cast<int32_t>(i / n + 1);
                }
                std::fill(gathered.begin(), gathered.end(), 0);
              };
              auto call = [&] {
                switch (collective) {
                  case Collective::kBcast:
                    return comm.Bcast(mine.data(), n, DataType::kInt32, root);
                  case Collective::kReduce:
                    return comm.Reduce(mine.data(), result.data(), n, DataType::kInt32,
                                       PredefinedOp::kSum, root);
                  case Collective::kScatter:
                    return comm.Scatter(blocks.data(), result.data(), n, DataType::kInt32, root);
                  case Collective::kScatterv:
                    return comm.Scatterv(blocks.data(), counts, displs, result.data(), n,
                                         DataType::kInt32, root);
                  case Collective::kScan:
                    return comm.Scan(mine.data(), result.data(), n, DataType::kInt32,
                                     PredefinedOp::kSum);
                  case Collective::kExscan:
                    return comm.Exscan(mine.data(), result.data(), n, DataType::kInt32,
                                       PredefinedOp::kSum);
                  default:
                    return comm.Gather(mine.data(), gathered.data(), n, DataType::kInt32, root);
                }
              };
              // What this rank's call must have produced at element i (-1: nothing).
              auto expected = [&](size_t i) -> int32_t {
                switch (collective) {
                  case Collective::kBcast:
                    return root + 1;
                  case Collective::kReduce:
                    return rank == root ? size * (size + 1) / 2 : -1;
                  case Collective::kScatter:
                  case Collective::kScatterv:
                    return 10 * (rank + 1);
                  case Collective::kScan:
                    return (rank + 1) * (rank + 2) / 2;
                  case Collective::kExscan:
                    return rank > 0 ? rank * (rank + 1) / 2 : -1;
                  default:
                    return rank == root ? static_cast<int32_t>(i / n + 1) : -1;
                }
              };
              auto expect_results = [&] {
                const bool gather = collective == Collective::kGather;
                const std::vector<int32_t>& got = collective == Collective::kBcast ? mine
                                                  : gather                         ? gathered
                                                                                   : result;
                for (size_t i = 0; i < got.size(); ++i) {
                  if (expected(i) >= 0) {
                    ASSERT_EQ(got[i], expected(i)) << "element " << i << ", rank " << rank;
                  }
                }
              };
              reset();
              if (repeated) {
                ASSERT_OK(call());
                expect_results();
                // (A rank that did not wait may be a call ahead: the late one waits again.)
                ASSERT_OK(comm.Barrier());
                reset();
              }
              if (rank != late) {
                ASSERT_OK(call());
                expect_results();
                ++returned;
                return;
              }
              for (int waited_ms = 0; returned < size - 1 && waited_ms < 10000; ++waited_ms) {
                absl::SleepFor(absl::Milliseconds(1));
              }
              EXPECT_EQ(returned, size - 1)
                  << "a rank waited for rank " << late << ", whose data it does not read ("
                  << CollectiveName(collective) << ", " << n << " elements)";
              ASSERT_OK(call());
              expect_results();
            });
        EXPECT_TRUE(status.ok()) << status << " (" << CollectiveName(collective) << " on " << size
                                 << " ranks, " << n
                                 << (repeated ? " elements, repeated)" : " elements)");
      }
    }
  }
}

// A rank that did not wait for a disagreeing rank's word in a small call fails by the
// second call after it (VerifyEagerCall), naming the disagreement: on 3 ranks, rank 1
// a Bcast's leaf (root 0), reading the root alone, while rank 2 names itself the root
// (eager, as rank 0 is: no rank reads a word that differs in the call) or passes
// another count (it reads the root's word and fails in the call; rank 1 may then
// learn first that it left over it).
TEST(QuickNodeCallTest, ADisagreementAReaderDidNotWaitForFailsWithinTwoCalls) {
  for (const bool another_root : {true, false}) {
    const absl::Status status = RunCommunicatorJob(
        {.size = 3, .communicator_timeout = absl::Seconds(20)},
        [another_root](Communicator& comm, RankControl&) {
          const int rank = comm.rank();
          std::vector<int64_t> values(2, rank == 0 ? 42 : 0);
          for (int i = 0; i < 3; ++i) {
            ASSERT_OK(comm.Bcast(values.data(), 1, DataType::kInt64, 0));
            ASSERT_EQ(values[0], 42);
          }
          const int root = another_root && rank == 2 ? 2 : 0;
          const size_t count = !another_root && rank == 2 ? 2 : 1;
          absl::Status first_error = comm.Bcast(values.data(), count, DataType::kInt64, root);
          for (int call = 0; call < 2 && first_error.ok(); ++call) {
            first_error = comm.Bcast(values.data(), 1, DataType::kInt64, 0);
          }
          EXPECT_FALSE(first_error.ok()) << "rank " << rank;
          if (another_root) {
            EXPECT_THAT(first_error.message(), HasSubstr("disagree")) << first_error;
          } else {
            EXPECT_THAT(first_error.message(), AnyOf(HasSubstr("disagree"), HasSubstr("left")))
                << first_error;
          }
        });
    EXPECT_TRUE(status.ok()) << status << (another_root ? " (another root)" : " (another count)");
  }
}

// The same where only the reader can find it: after the call, ranks 0 and 2 make no
// more calls, and rank 1 makes two as the root (eager, waiting for no one). The
// second, publishing into the parity of the call it did not check, compares the words
// then and fails naming the disagreement; no other rank's failure could tell it.
TEST(QuickNodeCallTest, AReaderComparesTheWordsItDidNotWaitForTwoCallsLater) {
  static std::atomic<bool> reader_done{false};
  // 1 element (inline) and 64 (in the slots): both RunSmall's, with the late peer handed
  // to the general state machine; 2048 (16 KiB, in the slots, the general state machine's)
  // where the node's ranks outnumber its cores (ZCOLL_CORES=1: MayDeferChecks).
  for (const size_t n : {size_t{1}, size_t{64}, size_t{2048}}) {
    const bool oversubscribed = n * sizeof(int64_t) > node_engine_limits::kEagerBytes;
    std::optional<ScopedEnvironment> cores;
    if (oversubscribed) cores.emplace("ZCOLL_CORES", "1");
    reader_done = false;
    const absl::Status status = RunCommunicatorJob(
        {.size = 3, .communicator_timeout = absl::Seconds(20)},
        [n](Communicator& comm, RankControl&) {
          const int rank = comm.rank();
          ASSERT_OK(comm.SetAlgorithm(Collective::kBcast, "node"));
          std::vector<int64_t> values(n, rank == 0 ? 42 : 0);
          for (int i = 0; i < 3; ++i) {
            ASSERT_OK(comm.Bcast(values.data(), n, DataType::kInt64, 0));
            ASSERT_EQ(values[0], 42);
          }
          // Rank 2 names itself the root: ranks 0 and 2 are eager, rank 1 reads rank 0.
          ASSERT_OK(comm.Bcast(values.data(), n, DataType::kInt64, rank == 2 ? 2 : 0));
          if (rank != 1) {
            for (int waited_ms = 0; !reader_done && waited_ms < 10000; ++waited_ms) {
              absl::SleepFor(absl::Milliseconds(1));
            }
            return;
          }
          EXPECT_EQ(values[0], 42);
          const absl::Status next = comm.Bcast(values.data(), n, DataType::kInt64, 1);
          EXPECT_TRUE(next.ok()) << next;
          const absl::Status after_next = comm.Bcast(values.data(), n, DataType::kInt64, 1);
          EXPECT_EQ(after_next.code(), absl::StatusCode::kInvalidArgument) << after_next;
          EXPECT_THAT(after_next.message(), HasSubstr("disagree on the arguments of this rank's "
                                                      "Bcast two node calls before this one"))
              << after_next;
          reader_done = true;
        });
    EXPECT_TRUE(status.ok()) << status << " (" << n << " elements)";
  }
}

// Where ranks share cores, a rank that waits in the call after one it left eagerly
// compares that call's words meanwhile (NodeExecution::CompareEagerCallWhileWaiting)
// rather than when it publishes the call after next: on 3 ranks (ZCOLL_CORES=1), rank 2
// names itself a Bcast's root (ranks 0 and 2 eager, rank 1 reading rank 0), then rank 1
// comes 50 ms late to the Barrier after it. Ranks 0 and 2, waiting for it there, fail
// the Barrier itself, naming the call before it (the one that finds it first fails the
// job with that cause: the other may get Aborted with it); rank 1 finds them gone.
TEST(QuickNodeCallTest, ARankThatWaitsComparesTheCallBeforeMeanwhile) {
  ScopedEnvironment cores("ZCOLL_CORES", "1");
  const absl::Status status = RunCommunicatorJob(
      {.size = 3, .communicator_timeout = absl::Seconds(20)}, [](Communicator& comm, RankControl&) {
        const int rank = comm.rank();
        ASSERT_OK(comm.SetAlgorithm(Collective::kBcast, "node"));
        ASSERT_OK(comm.SetAlgorithm(Collective::kBarrier, "node"));
        int64_t value = rank == 0 ? 42 : 0;
        for (int i = 0; i < 3; ++i) {
          ASSERT_OK(comm.Bcast(&value, 1, DataType::kInt64, 0));
          ASSERT_OK(comm.Barrier());
        }
        ASSERT_OK(comm.Bcast(&value, 1, DataType::kInt64, rank == 2 ? 2 : 0));
        if (rank == 1) absl::SleepFor(absl::Milliseconds(50));
        const absl::Status barrier = comm.Barrier();
        EXPECT_FALSE(barrier.ok()) << "rank " << rank;
        if (rank != 1) {
          EXPECT_THAT(barrier.code(),
                      AnyOf(absl::StatusCode::kInvalidArgument, absl::StatusCode::kAborted))
              << barrier;
          EXPECT_THAT(barrier.message(), HasSubstr("disagree on the arguments of this rank's "
                                                   "Bcast the node call before this one"))
              << barrier;
        }
      });
  EXPECT_TRUE(status.ok()) << status;
}

// SetAlgorithm between repeated calls takes effect: rank 0 forces a message-passing
// allreduce after a loop of node calls, rank 1 does not, so the two no longer run the
// same algorithm and the call must fail on both (were rank 0 still repeating its node
// call, both would succeed).
TEST(QuickNodeCallTest, ForcingAnAlgorithmEndsTheRepetition) {
  const absl::Status status = RunCommunicatorJob(
      {.local_provider = "shm", .size = 2, .communicator_timeout = absl::Seconds(2)},
      [](Communicator& comm, RankControl&) {
        const int32_t mine = comm.rank() + 1;
        int32_t sum = 0;
        for (int i = 0; i < 5; ++i) {
          ASSERT_OK(comm.Allreduce(&mine, &sum, 1, DataType::kInt32, PredefinedOp::kSum));
        }
        if (comm.rank() == 0) {
          ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "recursive_doubling"));
        }
        const absl::Status mixed =
            comm.Allreduce(&mine, &sum, 1, DataType::kInt32, PredefinedOp::kSum);
        EXPECT_FALSE(mixed.ok()) << "rank " << comm.rank();
      });
  EXPECT_TRUE(status.ok()) << status;
}

// A rank that runs ahead does not overwrite a publication its peer has not read yet:
// rank 1 posts three nonblocking allreduces and leaves them alone for a while; rank 0,
// starting once they are posted, runs three blocking ones, and its third (the first's
// parity: the same inline payload or slot) must wait until rank 1 has read the first.
// Vectors inline (8 B) and in the slots (4 KiB), between processes.
TEST(NodeEngineOrderTest, ARankAheadWaitsForItsPeerToReadBeforeReusingItsBuffer) {
  for (const size_t count : {size_t{2}, size_t{1024}}) {
    const absl::Status status = RunCommunicatorJob(
        {.local_provider = "shm", .size = 2}, [count](Communicator& comm, RankControl&) {
          auto contribution = [](int call, int rank) {
            return static_cast<int32_t>(call * 100 + rank + 1);
          };
          std::vector<std::vector<int32_t>> send(3), recv(3, std::vector<int32_t>(count, -1));
          for (int call = 0; call < 3; ++call)
            send[call].assign(count, contribution(call, comm.rank()));
          if (comm.rank() == 1) {
            std::vector<Request> requests;
            for (int call = 0; call < 3; ++call) {
              absl::StatusOr<Request> request =
                  comm.IAllreduce(send[call].data(), recv[call].data(), count, DataType::kInt32,
                                  PredefinedOp::kSum);
              ASSERT_TRUE(request.ok()) << request.status();
              requests.push_back(std::move(*request));
            }
            // Rank 0 meanwhile finishes its first two calls and starts its third.
            absl::SleepFor(absl::Milliseconds(400));
            for (Request& request : requests) ASSERT_OK(request.Wait());
          } else {
            absl::SleepFor(absl::Milliseconds(100));
            for (int call = 0; call < 3; ++call) {
              ASSERT_OK(comm.Allreduce(send[call].data(), recv[call].data(), count,
                                       DataType::kInt32, PredefinedOp::kSum));
            }
          }
          for (int call = 0; call < 3; ++call) {
            const int32_t expected = contribution(call, 0) + contribution(call, 1);
            for (const int32_t value : recv[call]) {
              ASSERT_EQ(value, expected) << "call " << call << ", rank " << comm.rank();
            }
          }
        });
    EXPECT_TRUE(status.ok()) << status << " (" << count << " elements)";
  }
}

// A chain's rank (a Scan beyond a slot on 3 ranks) returns only once its successor has
// read its result: rank 2 posts an IScan and leaves it alone for a while; ranks 0 and 1
// come later and run theirs to the end; rank 1 then overwrites its result with a
// canary, which rank 2, reading rank 1's result once it waits, must not see. Between
// processes and between threads.
TEST(NodeEngineOrderTest, AChainsRankWaitsForItsSuccessorToReadItsResult) {
  constexpr size_t kCount = size_t{1} << 18;  // 1 MiB of int32: chained
  constexpr int32_t kCanary = -1000;
  for (const char* provider : {"shm", "loopback"}) {
    const absl::Status status = RunCommunicatorJob(
        {.local_provider = provider, .size = 3}, [&](Communicator& comm, RankControl&) {
          ASSERT_TRUE(comm.node_single_copy()) << "the engine runs only what fits its slots";
          const int rank = comm.rank();
          std::vector<int32_t> send(kCount), recv(kCount, 0);
          for (size_t i = 0; i < kCount; ++i) send[i] = static_cast<int32_t>(i % 7) + rank;
          if (rank == 2) {
            absl::StatusOr<Request> request =
                comm.IScan(send.data(), recv.data(), kCount, DataType::kInt32, PredefinedOp::kSum);
            ASSERT_TRUE(request.ok()) << request.status();
            absl::SleepFor(absl::Milliseconds(400));
            ASSERT_OK(request->Wait());
          } else {
            absl::SleepFor(absl::Milliseconds(100));
            ASSERT_OK(
                comm.Scan(send.data(), recv.data(), kCount, DataType::kInt32, PredefinedOp::kSum));
          }
          for (size_t i = 0; i < kCount; ++i) {
            const int32_t expected =
                static_cast<int32_t>(i % 7) * (rank + 1) + rank * (rank + 1) / 2;
            ASSERT_EQ(recv[i], expected) << provider << ": rank " << rank << ", element " << i;
          }
          if (rank == 1) std::fill(recv.begin(), recv.end(), kCanary);
          // (Rank 1's buffer stays until the job ends: only its contents change.)
          ASSERT_OK(comm.Barrier());
        });
    EXPECT_TRUE(status.ok()) << status;
  }
}

// A nonblocking collective starts when it is posted: a root that posts an IBcast and
// then computes, calling neither Wait nor Test, has already sent, so the other rank's
// blocking Bcast completes meanwhile. (Ranks are threads here: the flag is shared.)
TEST(ProgressTest, ANonblockingBcastSendsBeforeItsRootWaits) {
  static std::atomic<bool> leaf_received{false};
  leaf_received = false;
  const absl::Status status = RunCommunicatorJob({.size = 2}, [](Communicator& comm, RankControl&) {
    int32_t value = comm.rank() == 0 ? 42 : 0;
    if (comm.rank() == 1) {
      ASSERT_OK(comm.Bcast(&value, 1, DataType::kInt32, 0));
      EXPECT_EQ(value, 42);
      leaf_received = true;
      return;
    }
    absl::StatusOr<Request> request = comm.IBcast(&value, 1, DataType::kInt32, 0);
    ASSERT_TRUE(request.ok()) << request.status();
    // "Computing": at most 10 s, without progressing the collective.
    for (int waited_ms = 0; !leaf_received && waited_ms < 10000; ++waited_ms) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_TRUE(leaf_received) << "rank 1 got nothing while rank 0 had not waited";
    EXPECT_OK(request->Wait());
  });
  EXPECT_TRUE(status.ok()) << status;
}

// Issue 16's hang: the selection table saw each rank's own block, so with int32
// blocks of 2048, 2049, 2048, 2048, 2048 elements on 5 ranks (own blocks on both sides
// of the linear algorithm's 8 KiB limit) one rank chose the ring and the others the
// linear algorithm, and all waited until the deadline. Now every rank chooses from the
// average block; the call must complete at once with every block in place.
TEST(SelectionAgreementRegressionTest, AllgathervWithOwnBlocksAcrossASizeLimitCompletes) {
  const CommunicatorJob job{
      .local_provider = "shm", .size = 5, .communicator_timeout = absl::Seconds(20)};
  const absl::Status status = RunCommunicatorJob(job, [](Communicator& comm, RankControl&) {
    std::vector<size_t> counts(comm.size(), 2048);
    counts[1] = 2049;
    const std::vector<size_t> displs = PackedInRankOrder(counts);
    const size_t total = displs.back() + counts.back();
    std::vector<int32_t> mine(counts[comm.rank()], comm.rank() + 1), all(total, -1);
    const absl::Time start = absl::Now();
    const absl::Status done =
        comm.Allgatherv(mine.data(), mine.size(), all.data(), counts, displs, DataType::kInt32);
    ASSERT_TRUE(done.ok()) << done;
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    for (int r = 0; r < comm.size(); ++r) {
      for (size_t i = 0; i < counts[r]; ++i) ASSERT_EQ(all[displs[r] + i], r + 1) << r << " " << i;
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

// A stripe communicator's Allreduce is chosen by the bytes its network link carries
// (SelectionInputs::link_sharers): on 2 nodes of 2 ranks a 24 KiB Allreduce by stripes
// (one segment at 256 KiB chunks) gives each stripe a 12 KiB block, chosen as the 24 KiB
// the two stripes put on a link (rabenseifner), where a communicator of the same ranks
// without stripes beside it chooses recursive doubling. ZCOLL_LOG_LEVEL=debug prints
// each plan's algorithm, which is what this test reads.
TEST(StripeSelectionTest, AStripesAllreduceIsChosenByItsLinksLoad) {
  const char* const old_chunk = std::getenv("ZCOLL_CHUNK_BYTES");
  const std::string saved_chunk = old_chunk != nullptr ? old_chunk : "";
  setenv("ZCOLL_CHUNK_BYTES", "262144", 1);
  SetLogLevel(LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  constexpr size_t kCount = 6144;  // 24 KiB of int32
  const absl::Status status =
      RunCommunicatorJob({.size = 4, .nodes = 2}, [](Communicator& comm, RankControl&) {
        ASSERT_TRUE(NodeStripesPossible(comm.topology()));
        ASSERT_OK(comm.SetAlgorithm(Collective::kAllreduce, "node_stripes"));
        std::vector<int32_t> mine(kCount, comm.rank() + 1), sum(kCount, -1);
        ASSERT_OK(
            comm.Allreduce(mine.data(), sum.data(), kCount, DataType::kInt32, PredefinedOp::kSum));
        EXPECT_EQ(sum, std::vector<int32_t>(kCount, 10));
        // The same ranks as the stripe of this rank's place, on their own.
        absl::StatusOr<std::optional<Communicator>> alone =
            comm.Split(comm.rank() % 2, comm.rank());
        ASSERT_TRUE(alone.ok() && alone->has_value()) << alone.status();
        ASSERT_OK((*alone)->Allreduce(mine.data(), sum.data(), kCount / 2, DataType::kInt32,
                                      PredefinedOp::kSum));
      });
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kWarning);
  if (old_chunk != nullptr) {
    setenv("ZCOLL_CHUNK_BYTES", saved_chunk.c_str(), 1);
  } else {
    unsetenv("ZCOLL_CHUNK_BYTES");
  }
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(log, HasSubstr("Allreduce of 24576 bytes on 4 ranks: node_stripes (forced)"));
  EXPECT_THAT(log, HasSubstr("Allreduce of 12288 bytes on 2 ranks: rabenseifner (chosen as 2 "
                             "times the bytes: its node's stripes share its link)"));
  EXPECT_THAT(log, HasSubstr("Allreduce of 12288 bytes on 2 ranks: recursive_doubling\n"));
}

// On a node whose ranks outnumber its cores (ZCOLL_CORES=2 declares them, whatever
// this machine has), an Allgather whose block outgrows the slots' copy goes by the
// linear messages and one within it stays on the node engine (selection.cc says why);
// with a core a rank (ZCOLL_CORES=64) both stay on the engine. The debug log names each
// plan's algorithm.
TEST(OversubscribedSelectionTest, ALargeAllgatherGoesByMessagesWhereRanksOutnumberCores) {
  for (const char* cores : {"2", "64"}) {
    const ScopedEnvironment declared("ZCOLL_CORES", cores);
    SetLogLevel(LogLevel::kDebug);
    ::testing::internal::CaptureStderr();
    const absl::Status status = RunCommunicatorJob(
        {.local_provider = "shm", .size = 4}, [](Communicator& comm, RankControl&) {
          for (const size_t count : {size_t{4096}, size_t{8192}}) {  // 16 and 32 KiB
            std::vector<int32_t> mine(count, comm.rank() + 1), all(count * 4, -1);
            ASSERT_OK(comm.Allgather(mine.data(), all.data(), count, DataType::kInt32));
            for (size_t i = 0; i < all.size(); ++i) {
              ASSERT_EQ(all[i], static_cast<int32_t>(i / count) + 1) << count << " " << i;
            }
          }
        });
    const std::string log = ::testing::internal::GetCapturedStderr();
    SetLogLevel(LogLevel::kWarning);
    ASSERT_TRUE(status.ok()) << status << "\n" << log;
    const bool oversubscribed = std::string(cores) == "2";
    EXPECT_THAT(log, HasSubstr("Allgather of 16384 bytes on 4 ranks: node\n")) << cores;
    EXPECT_THAT(log, HasSubstr(absl::StrCat("Allgather of 32768 bytes on 4 ranks: ",
                                            oversubscribed ? "linear" : "node", "\n")))
        << cores;
  }
}

// Across nodes, the rules from the model (a cluster's) are left out where some host runs
// more of the job's ranks than it has cores (SelectionInputs::hosts_oversubscribed,
// agreed at Create): 8 ranks on 2 emulated nodes of this machine with ZCOLL_CORES=2
// reduce 32 KiB by two_level, as measured here; with ZCOLL_CORES=64, a core a rank as on
// a cluster, by rabenseifner (selection.cc). The debug log names each plan's algorithm.
TEST(OversubscribedSelectionTest, AnEmulatedClusterKeepsTheChoicesMeasuredOnIt) {
  for (const char* cores : {"2", "64"}) {
    const ScopedEnvironment declared("ZCOLL_CORES", cores);
    SetLogLevel(LogLevel::kDebug);
    ::testing::internal::CaptureStderr();
    constexpr size_t kCount = 8192;  // 32 KiB of int32
    const absl::Status status =
        RunCommunicatorJob({.size = 8, .nodes = 2}, [](Communicator& comm, RankControl&) {
          std::vector<int32_t> mine(kCount, comm.rank() + 1), sum(kCount, -1);
          ASSERT_OK(comm.Reduce(mine.data(), sum.data(), kCount, DataType::kInt32,
                                PredefinedOp::kSum, 0));
          if (comm.rank() == 0) {
            EXPECT_EQ(sum, std::vector<int32_t>(kCount, 36));
          }
        });
    const std::string log = ::testing::internal::GetCapturedStderr();
    SetLogLevel(LogLevel::kWarning);
    ASSERT_TRUE(status.ok()) << status << "\n" << log;
    const bool oversubscribed = std::string(cores) == "2";
    EXPECT_THAT(log, HasSubstr(absl::StrCat("Reduce of 32768 bytes on 8 ranks: ",
                                            oversubscribed ? "two_level" : "rabenseifner", "\n")))
        << cores;
  }
}

std::vector<CommunicatorJob> Jobs() {
  std::vector<CommunicatorJob> jobs;
  for (int size = 1; size <= 9; ++size) jobs.push_back({.size = size});
  jobs.push_back({.size = 5, .nodes = 2});
  jobs.push_back({.size = 7, .nodes = 3});
  // As many ranks on each node (node_stripes).
  jobs.push_back({.size = 6, .nodes = 2});
  // NUMA levels on one node, and within each node's level across nodes.
  jobs.push_back({.size = 5, .numa_domains = 2});
  jobs.push_back({.size = 7, .nodes = 2, .numa_domains = 2});
  jobs.push_back({.local_provider = "shm", .size = 4, .numa_domains = 2});
  // L3 levels on one node (every rank's NUMA domain alike).
  jobs.push_back({.size = 6, .l3_groups = 3});
  jobs.push_back({.local_provider = "shm", .size = 3});
  jobs.push_back({.local_provider = "shm", .network_provider = "ofi:tcp", .size = 5, .nodes = 2});
  jobs.push_back({.local_provider = "ofi:shm", .size = 2});
  // UCX's own shared memory transports (posix, cma) within a node.
  jobs.push_back({.local_provider = "ucx:posix,cma", .size = 2});
  jobs.push_back({.local_provider = "shm", .network_provider = "ucx:tcp", .size = 4, .nodes = 3});
  return jobs;
}

INSTANTIATE_TEST_SUITE_P(Jobs, CollectivesTest, ::testing::ValuesIn(Jobs()),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

}  // namespace
}  // namespace zcoll
