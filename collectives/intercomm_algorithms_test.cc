// The intercommunicator schedules, checked without processes: every collective, every
// pair of group sizes, roots in either group, zero counts; valid and deadlock-free
// (ValidateSchedules), and, run symbolically, each result element the other group's
// contributions in their canonical order.

#include "collectives/intercomm_algorithms.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/symbolic_run.h"

namespace zcoll {
namespace {

using ::zcoll::testing::Contribution;
using ::zcoll::testing::RunSymbolically;
using ::zcoll::testing::SymbolicBuffers;
using ::zcoll::testing::SymbolicValue;

// Group sizes (A, B): A's ranks come first on the bridge.
const std::vector<std::pair<int, int>> kShapes = {{1, 1}, {1, 3}, {2, 3}, {3, 2}, {4, 4}, {5, 1}};

constexpr Collective kAll[] = {
    Collective::kReduce,        Collective::kAllreduce,  Collective::kReduceScatterBlock,
    Collective::kReduceScatter, Collective::kScatter,    Collective::kScatterv,
    Collective::kBcast,         Collective::kGather,     Collective::kGatherv,
    Collective::kAllgather,     Collective::kAllgatherv, Collective::kAlltoall,
    Collective::kAlltoallv,     Collective::kBarrier};

// The arguments of bridge rank `r` for a call whose root (rooted collectives) is
// `root_local` of group A (`root_in_a`) or B; `count` per rank or block. v-forms:
// rank j of a group gets (j % 3) + count elements.
IntercommArgs ArgsFor(Collective collective, int a, int b, int r, bool root_in_a, int root_local,
                      size_t count) {
  const bool in_a = r < a;
  IntercommArgs args;
  args.collective = collective;
  args.local_size = in_a ? a : b;
  args.remote_size = in_a ? b : a;
  args.local_is_first = in_a;
  args.count = count;
  const int local_rank = in_a ? r : r - a;
  if (IsRooted(collective)) {
    if (in_a == root_in_a) {
      args.root = local_rank == root_local ? kRoot : kProcNull;
    } else {
      args.root = root_local;
    }
  }
  auto varied = [&](int ranks) {
    std::vector<size_t> counts;
    for (int j = 0; j < ranks; ++j) counts.push_back(static_cast<size_t>(j % 3) + count);
    return counts;
  };
  switch (collective) {
    case Collective::kReduceScatterBlock:
      // Blocks of count * (the other group's size): both groups' vectors are a * b *
      // count long, as the standard requires.
      args.count = count * static_cast<size_t>(args.remote_size);
      break;
    case Collective::kReduceScatter: {
      // The local group's blocks: equal totals in both groups, so the last block takes
      // what is left of (a * b) * (count + 1).
      const size_t total = static_cast<size_t>(a * b) * (count + 1);
      std::vector<size_t> blocks(static_cast<size_t>(args.local_size), count);
      size_t used = count * (blocks.size() - 1);
      blocks.back() = total - used;
      args.counts = blocks;
      if (collective == Collective::kReduceScatter) args.count = 0;
      break;
    }
    case Collective::kScatterv:
    case Collective::kGatherv:
      if (args.root == kRoot) {
        args.counts = varied(args.remote_size);
        args.displs = PackedDisplacements(args.counts);
      } else if (args.root != kProcNull) {
        args.count = static_cast<size_t>(local_rank % 3) + count;
      }
      break;
    case Collective::kAllgatherv:
      args.count = static_cast<size_t>(local_rank % 3) + count;
      args.counts = varied(args.remote_size);
      args.displs = PackedDisplacements(args.counts);
      break;
    case Collective::kAlltoallv: {
      // This rank sends remote rank j (local_rank + j) % 2 + count elements; so it
      // receives (j + local_rank) % 2 + count from j.
      for (int j = 0; j < args.remote_size; ++j) {
        args.counts.push_back(static_cast<size_t>((local_rank + j) % 2) + count);
        args.recv_counts.push_back(static_cast<size_t>((j + local_rank) % 2) + count);
      }
      args.displs = PackedDisplacements(args.counts);
      args.recv_displs = PackedDisplacements(args.recv_counts);
      break;
    }
    default:
      break;
  }
  return args;
}

std::vector<Schedule> AllSchedules(Collective collective, int a, int b, bool root_in_a,
                                   int root_local, size_t count) {
  std::vector<Schedule> schedules;
  for (int r = 0; r < a + b; ++r) {
    const IntercommArgs args = ArgsFor(collective, a, b, r, root_in_a, root_local, count);
    schedules.push_back(IntercommSchedule(args, r < a ? r : r - a));
  }
  return schedules;
}

TEST(IntercommAlgorithmsTest, EveryScheduleIsValidAndDeadlockFree) {
  for (const auto& [a, b] : kShapes) {
    for (Collective collective : kAll) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{5}}) {
        for (bool root_in_a : {true, false}) {
          const int root_local = (root_in_a ? a : b) - 1;
          const std::vector<Schedule> schedules =
              AllSchedules(collective, a, b, root_in_a, root_local, count);
          const absl::Status status = ValidateSchedules(schedules);
          EXPECT_TRUE(status.ok())
              << CollectiveName(collective) << " (" << a << ", " << b << ") count " << count
              << " root in " << (root_in_a ? "A" : "B") << ": " << status;
        }
      }
    }
  }
}

// Group A's element i of bridge rank r: contribution (r, i).
SymbolicValue GroupInOrder(int first, int ranks, size_t element) {
  SymbolicValue value;
  for (int r = first; r < first + ranks; ++r) {
    value.push_back(Contribution{r, static_cast<uint32_t>(element)});
  }
  return value;
}

TEST(IntercommAlgorithmsTest, ReductionsCombineTheOtherGroupInCanonicalOrder) {
  for (const auto& [a, b] : kShapes) {
    for (Collective collective :
         {Collective::kAllreduce, Collective::kReduce, Collective::kReduceScatterBlock}) {
      for (bool root_in_a : {true, false}) {
        const size_t base = 3;
        const int root_local = (root_in_a ? a : b) - 1;
        const std::vector<Schedule> schedules =
            AllSchedules(collective, a, b, root_in_a, root_local, base);
        const bool block = collective == Collective::kReduceScatterBlock;
        std::vector<SymbolicBuffers> buffers(static_cast<size_t>(a + b));
        for (int r = 0; r < a + b; ++r) {
          // A reduce_scatter_block's vector is a * b * base long in both groups.
          const size_t count = block ? base * static_cast<size_t>(r < a ? b : a) : base;
          const size_t send = block ? base * static_cast<size_t>(a * b) : count;
          for (size_t i = 0; i < send; ++i) {
            buffers[r].send.push_back({Contribution{r, static_cast<uint32_t>(i)}});
          }
          buffers[r].recv.assign(count, SymbolicValue{});
        }
        const absl::Status ran = RunSymbolically(schedules, buffers);
        ASSERT_TRUE(ran.ok()) << ran;
        for (int r = 0; r < a + b; ++r) {
          const bool in_a = r < a;
          const int local_rank = in_a ? r : r - a;
          // The other group's ranks on the bridge, in order.
          const int other_first = in_a ? a : 0, other_size = in_a ? b : a;
          if (collective == Collective::kReduce &&
              !(in_a == root_in_a && local_rank == root_local)) {
            continue;  // only the root has a result
          }
          const size_t count = block ? base * static_cast<size_t>(in_a ? b : a) : base;
          for (size_t i = 0; i < count; ++i) {
            const size_t element = block ? local_rank * count + i : i;
            EXPECT_EQ(buffers[r].recv[i], GroupInOrder(other_first, other_size, element))
                << CollectiveName(collective) << " (" << a << ", " << b << ") rank " << r
                << " element " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zcoll
