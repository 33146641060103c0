// Intercommunicators over real jobs (threads over loopback, processes over shm and
// tcp): Create, groups, Merge, Dup, and every collective compared with the reference
// (testing/reference.h) for group sizes (1,1), (1,3), (2,3), (3,2), (4,4), roots in
// either group, a non-commutative op, zero counts; and the refused arguments.

#include "collectives/intercommunicator.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/reference.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::zcoll::testing::Bytes;
using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::RankBytes;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;

constexpr DataType kType = DataType::kInt64;
constexpr size_t kWidth = sizeof(int64_t);

// A job split into group P (job ranks 0..p-1) and group Q (the rest).
struct Shape {
  CommunicatorJob job;
  int p = 1;
  std::string Name() const { return absl::StrCat(job.Name(), "_", p, "x", job.size - p); }
  friend void PrintTo(const Shape& shape, std::ostream* out) { *out << shape.Name(); }
};

// Job rank r's element i of a call with `salt`: one digit, so DigitsInRankOrder stays
// exact.
Bytes Input(int job_rank, int salt, size_t count) {
  Bytes bytes(count * kWidth);
  for (size_t i = 0; i < count; ++i) {
    const int64_t value = 1 + (3 * job_rank + static_cast<int>(i % 100) + 5 * salt) % 9;
    std::memcpy(bytes.data() + i * kWidth, &value, kWidth);
  }
  return bytes;
}
Bytes Slice(const Bytes& bytes, size_t offset, size_t count) {
  return Bytes(bytes.begin() + offset * kWidth, bytes.begin() + (offset + count) * kWidth);
}
Bytes Concat(const RankBytes& parts) {
  Bytes all;
  for (const Bytes& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// What a rank knows of the two groups.
struct Sides {
  bool in_p;
  int local_rank;
  int local_size;
  int remote_size;
  int remote_first;  // the remote group's first job rank
  int local_first;
};

class IntercommunicatorTest : public ::testing::TestWithParam<Shape> {
 protected:
  // Makes the intercommunicator of P and Q (leaders: each group's rank 0; the peer:
  // the job's communicator) and runs `body` with it.
  void Run(const std::function<void(Communicator&, Intercommunicator&, const Sides&)>& body) {
    const Shape shape = GetParam();
    const absl::Status status =
        RunCommunicatorJob(shape.job, [&](Communicator& world, RankControl&) {
          const int p = shape.p, n = world.size(), rank = world.rank();
          const bool in_p = rank < p;
          absl::StatusOr<std::optional<Communicator>> local = world.Split(in_p ? 0 : 1, rank);
          ASSERT_TRUE(local.ok()) << local.status();
          absl::StatusOr<Intercommunicator> inter =
              Intercommunicator::Create(**local, 0, world, in_p ? p : 0, 7);
          ASSERT_TRUE(inter.ok()) << inter.status();
          const Sides sides{
              in_p,        in_p ? rank : rank - p, in_p ? p : n - p, in_p ? n - p : p, in_p ? p : 0,
              in_p ? 0 : p};
          body(world, *inter, sides);
        });
    EXPECT_TRUE(status.ok()) << status;
  }
};

TEST_P(IntercommunicatorTest, KnowsItsGroupsAndMergesInEitherOrder) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    EXPECT_EQ(inter.rank(), sides.local_rank);
    EXPECT_EQ(inter.size(), sides.local_size);
    EXPECT_EQ(inter.remote_size(), sides.remote_size);
    std::vector<int> local_ranks, remote_ranks;
    for (int i = 0; i < sides.local_size; ++i) local_ranks.push_back(sides.local_first + i);
    for (int j = 0; j < sides.remote_size; ++j) remote_ranks.push_back(sides.remote_first + j);
    EXPECT_THAT(inter.group().job_ranks(), ElementsAreArray(local_ranks));
    EXPECT_THAT(inter.remote_group().job_ranks(), ElementsAreArray(remote_ranks));
    EXPECT_EQ(inter.group().rank(), sides.local_rank);
    EXPECT_EQ(inter.remote_group().rank(), kUndefinedRank);
    // Q passes high = false: Q first. Then both false: group A (P, which holds job
    // rank 0) first.
    for (bool p_high : {true, false}) {
      absl::StatusOr<Communicator> merged = inter.Merge(sides.in_p ? p_high : false);
      ASSERT_TRUE(merged.ok()) << merged.status();
      ASSERT_EQ(merged->size(), world.size());
      const bool p_first = !p_high;
      const int expected =
          sides.in_p == p_first ? sides.local_rank : sides.remote_size + sides.local_rank;
      EXPECT_EQ(merged->rank(), expected) << "p_high " << p_high;
      // The merged communicator works: every rank's job rank, summed.
      int64_t mine = world.rank(), sum = 0;
      ASSERT_OK(merged->Allreduce(&mine, &sum, 1, kType, PredefinedOp::kSum));
      EXPECT_EQ(sum, int64_t{world.size()} * (world.size() - 1) / 2);
    }
    absl::StatusOr<Intercommunicator> dup = inter.Dup();
    ASSERT_TRUE(dup.ok()) << dup.status();
    EXPECT_EQ(dup->remote_size(), inter.remote_size());
    EXPECT_OK(dup->Barrier());
    // The local group's own communicator.
    int64_t one = 1, count = 0;
    ASSERT_OK(inter.local().Allreduce(&one, &count, 1, kType, PredefinedOp::kSum));
    EXPECT_EQ(count, sides.local_size);
  });
}

TEST_P(IntercommunicatorTest, SplitAndCreateMakeIntercommunicatorsOfSubgroups) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const int me = world.rank();
    // Split: color = rank % 2 in both groups, keys reversing each group's order. A color
    // the other group lacks faces nobody.
    const int color = sides.local_rank % 2;
    absl::StatusOr<std::optional<Intercommunicator>> split = inter.Split(color, -sides.local_rank);
    ASSERT_TRUE(split.ok()) << split.status();
    std::vector<int> mine_same, theirs_same;  // job ranks of this color, in new order
    for (int i = sides.local_size - 1; i >= 0; --i) {
      if (i % 2 == color) mine_same.push_back(sides.local_first + i);
    }
    for (int j = sides.remote_size - 1; j >= 0; --j) {
      if (j % 2 == color) theirs_same.push_back(sides.remote_first + j);
    }
    ASSERT_EQ(split->has_value(), !theirs_same.empty());
    if (split->has_value()) {
      Intercommunicator& half = **split;
      EXPECT_THAT(half.group().job_ranks(), ElementsAreArray(mine_same));
      EXPECT_THAT(half.remote_group().job_ranks(), ElementsAreArray(theirs_same));
      // Its collectives work: the other side's job ranks, summed.
      int64_t mine = me, sum = 0;
      ASSERT_OK(half.Allreduce(&mine, &sum, 1, kType, PredefinedOp::kSum));
      int64_t expected = 0;
      for (int r : theirs_same) expected += r;
      EXPECT_EQ(sum, expected);
    }
    // Create: P keeps all but its last rank (all of a group of one), Q its first rank.
    std::vector<int> kept;
    if (sides.in_p) {
      for (int i = 0; i < std::max(1, sides.local_size - 1); ++i) kept.push_back(i);
    } else {
      kept.push_back(0);
    }
    absl::StatusOr<Group> subgroup = inter.group().Incl(kept);
    ASSERT_TRUE(subgroup.ok()) << subgroup.status();
    absl::StatusOr<std::optional<Intercommunicator>> made = inter.Create(*subgroup);
    ASSERT_TRUE(made.ok()) << made.status();
    const bool member = std::find(kept.begin(), kept.end(), sides.local_rank) != kept.end();
    ASSERT_EQ(made->has_value(), member);
    if (member) {
      const int p_kept = std::max(1, (sides.in_p ? sides.local_size : sides.remote_size) - 1);
      EXPECT_EQ((*made)->size(), static_cast<int>(kept.size()));
      EXPECT_EQ((*made)->remote_size(), sides.in_p ? 1 : p_kept);
      EXPECT_OK((*made)->Barrier());
    }
    EXPECT_OK(inter.Barrier());
  });
}

// The remote group's inputs of a call, in their order.
RankBytes RemoteInputs(const Sides& sides, int salt, size_t count) {
  RankBytes inputs;
  for (int j = 0; j < sides.remote_size; ++j)
    inputs.push_back(Input(sides.remote_first + j, salt, count));
  return inputs;
}

TEST_P(IntercommunicatorTest, ReductionsGiveEachGroupTheOthersResult) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const int me = world.rank();
    int salt = 0;
    for (const ReduceOp& op : {ReduceOp(PredefinedOp::kSum), testing::DigitsInRankOrder()}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}}) {
        ++salt;
        // Allreduce.
        Bytes send = Input(me, salt, count), recv(count * kWidth, 0x5a);
        ASSERT_OK(inter.Allreduce(send.data(), recv.data(), count, kType, op));
        EXPECT_EQ(recv,
                  *testing::ReferenceReduce(op, kType, RemoteInputs(sides, salt, count), count))
            << "allreduce " << op.name() << " count " << count;
        // Reduce, the root in P (its last rank) and then in Q (its first).
        for (bool root_in_p : {true, false}) {
          ++salt;
          const int root_local =
              root_in_p ? (sides.in_p ? sides.local_size : sides.remote_size) - 1 : 0;
          const bool root_group = sides.in_p == root_in_p;
          const int root =
              root_group ? (sides.local_rank == root_local ? kRoot : kProcNull) : root_local;
          send = Input(me, salt, count);
          recv.assign(count * kWidth, 0x5a);
          ASSERT_OK(inter.Reduce(send.data(), recv.data(), count, kType, op, root));
          if (root == kRoot) {
            EXPECT_EQ(recv,
                      *testing::ReferenceReduce(op, kType, RemoteInputs(sides, salt, count), count))
                << "reduce " << op.name() << " count " << count;
          }
        }
        // Reduce_scatter_block: blocks of count * remote size, so that both groups'
        // vectors are p * q * count long.
        ++salt;
        const size_t block = count * static_cast<size_t>(sides.remote_size);
        const size_t total = block * static_cast<size_t>(sides.local_size);
        send = Input(me, salt, total);
        recv.assign(block * kWidth, 0x5a);
        ASSERT_OK(inter.ReduceScatterBlock(send.data(), recv.data(), block, kType, op));
        EXPECT_EQ(recv, Slice(*testing::ReferenceReduce(op, kType, RemoteInputs(sides, salt, total),
                                                        total),
                              block * sides.local_rank, block))
            << "reduce_scatter_block " << op.name() << " count " << count;
        // Reduce_scatter: the local group's blocks (i % 3) * count, the last taking what
        // is left of the same total.
        ++salt;
        std::vector<size_t> blocks(static_cast<size_t>(sides.local_size));
        size_t used = 0;
        for (int i = 0; i + 1 < sides.local_size; ++i) {
          blocks[i] = static_cast<size_t>(i % 3) * count;
          used += blocks[i];
        }
        blocks.back() = total - used;
        send = Input(me, salt, total);
        recv.assign(blocks[sides.local_rank] * kWidth, 0x5a);
        ASSERT_OK(inter.ReduceScatter(send.data(), recv.data(), blocks, kType, op));
        size_t offset = 0;
        for (int i = 0; i < sides.local_rank; ++i) offset += blocks[i];
        EXPECT_EQ(recv, Slice(*testing::ReferenceReduce(op, kType, RemoteInputs(sides, salt, total),
                                                        total),
                              offset, blocks[sides.local_rank]))
            << "reduce_scatter " << op.name() << " count " << count;
      }
    }
    // AVG divides by the other group's size.
    std::vector<double> values = {static_cast<double>(me), 2.0}, mean(2);
    ASSERT_OK(
        inter.Allreduce(values.data(), mean.data(), 2, DataType::kDouble, PredefinedOp::kAvg));
    EXPECT_DOUBLE_EQ(mean[0], sides.remote_first + (sides.remote_size - 1) / 2.0);
    EXPECT_DOUBLE_EQ(mean[1], 2.0);
  });
}

TEST_P(IntercommunicatorTest, RootedMovesGoBetweenTheRootAndTheOtherGroup) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const int me = world.rank();
    int salt = 100;
    for (bool root_in_p : {true, false}) {
      for (size_t count : {size_t{0}, size_t{3}}) {
        ++salt;
        const int root_local =
            root_in_p ? (sides.in_p ? sides.local_size : sides.remote_size) - 1 : 0;
        const bool root_group = sides.in_p == root_in_p;
        const bool is_root = root_group && sides.local_rank == root_local;
        const int root = root_group ? (is_root ? kRoot : kProcNull) : root_local;
        // The root's job rank (its group's first + root_local).
        const int root_job = (root_group ? sides.local_first : sides.remote_first) + root_local;
        const int others = root_group ? sides.remote_size : sides.local_size;
        // Bcast.
        Bytes buffer = is_root ? Input(me, salt, count) : Bytes(count * kWidth, 0x5a);
        ASSERT_OK(inter.Bcast(buffer.data(), count, kType, root));
        if (!root_group) {
          EXPECT_EQ(buffer, Input(root_job, salt, count)) << "bcast";
        }
        // Scatter: block j of the root's buffer to the other group's rank j.
        const Bytes root_send = Input(root_job, salt, count * static_cast<size_t>(others));
        Bytes recv(count * kWidth, 0x5a);
        ASSERT_OK(inter.Scatter(is_root ? root_send.data() : nullptr,
                                root_group ? nullptr : recv.data(), count, kType, root));
        if (!root_group) {
          EXPECT_EQ(recv, Slice(root_send, count * sides.local_rank, count)) << "scatter";
        }
        // Scatterv: rank j of the other group gets j % 3 + count elements, laid out
        // backwards.
        std::vector<size_t> counts, displs(static_cast<size_t>(others));
        for (int j = 0; j < others; ++j) counts.push_back(static_cast<size_t>(j % 3) + count);
        size_t at = 0;
        for (int j = others - 1; j >= 0; --j) {
          displs[j] = at;
          at += counts[j];
        }
        const Bytes root_v = Input(root_job, salt + 50, at);
        const size_t mine = root_group ? 0 : counts[sides.local_rank];
        recv.assign(mine * kWidth, 0x5a);
        ASSERT_OK(inter.Scatterv(is_root ? root_v.data() : nullptr, counts, displs,
                                 root_group ? nullptr : recv.data(), mine, kType, root));
        if (!root_group) {
          EXPECT_EQ(recv, Slice(root_v, displs[sides.local_rank], mine)) << "scatterv";
        }
        // Gather: the other group's blocks in order at the root.
        const Bytes own = Input(me, salt + 60, count);
        Bytes gathered(count * static_cast<size_t>(others) * kWidth, 0x5a);
        ASSERT_OK(inter.Gather(root_group ? nullptr : own.data(),
                               is_root ? gathered.data() : nullptr, count, kType, root));
        if (is_root) {
          RankBytes blocks;
          for (int j = 0; j < others; ++j)
            blocks.push_back(Input(sides.remote_first + j, salt + 60, count));
          EXPECT_EQ(gathered, Concat(blocks)) << "gather";
        }
        // Gatherv: rank j's j % 3 + count elements at displs[j].
        const Bytes own_v = Input(me, salt + 70, root_group ? 0 : counts[sides.local_rank]);
        Bytes gathered_v(at * kWidth, 0x5a);
        ASSERT_OK(inter.Gatherv(root_group ? nullptr : own_v.data(), own_v.size() / kWidth,
                                is_root ? gathered_v.data() : nullptr, counts, displs, kType,
                                root));
        if (is_root) {
          RankBytes blocks;
          for (int j = 0; j < others; ++j) {
            blocks.push_back(Input(sides.remote_first + j, salt + 70, counts[j]));
          }
          EXPECT_EQ(gathered_v, *testing::ReferenceGatherv(kType, blocks, counts, displs,
                                                           Bytes(at * kWidth, 0x5a)))
              << "gatherv";
        }
      }
    }
  });
}

TEST_P(IntercommunicatorTest, EveryRankExchangesWithTheOtherGroup) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const int me = world.rank();
    const int remote = sides.remote_size;
    for (size_t count : {size_t{0}, size_t{2}}) {
      // Allgather: the other group's blocks in order.
      const Bytes own = Input(me, 1, count);
      Bytes recv(count * static_cast<size_t>(remote) * kWidth, 0x5a);
      ASSERT_OK(inter.Allgather(own.data(), recv.data(), count, kType));
      EXPECT_EQ(recv, Concat(RemoteInputs(sides, 1, count))) << "allgather";
      // Allgatherv: remote rank j sends j % 3 + count elements; this rank sends its own
      // rank's share.
      std::vector<size_t> counts, displs;
      size_t at = 0;
      for (int j = 0; j < remote; ++j) {
        counts.push_back(static_cast<size_t>(j % 3) + count);
        displs.push_back(at);
        at += counts.back();
      }
      const Bytes own_v = Input(me, 2, static_cast<size_t>(sides.local_rank % 3) + count);
      recv.assign(at * kWidth, 0x5a);
      ASSERT_OK(inter.Allgatherv(own_v.data(), own_v.size() / kWidth, recv.data(), counts, displs,
                                 kType));
      RankBytes theirs;
      for (int j = 0; j < remote; ++j)
        theirs.push_back(Input(sides.remote_first + j, 2, counts[j]));
      EXPECT_EQ(recv, Concat(theirs)) << "allgatherv";
      // Alltoall: block j of this rank's buffer goes to remote rank j; this rank gets
      // block local_rank of each remote rank's.
      const Bytes send = Input(me, 3, count * static_cast<size_t>(remote));
      recv.assign(count * static_cast<size_t>(remote) * kWidth, 0x5a);
      ASSERT_OK(inter.Alltoall(send.data(), recv.data(), count, kType));
      RankBytes blocks;
      for (int j = 0; j < remote; ++j) {
        blocks.push_back(
            Slice(Input(sides.remote_first + j, 3, count * static_cast<size_t>(sides.local_size)),
                  count * sides.local_rank, count));
      }
      EXPECT_EQ(recv, Concat(blocks)) << "alltoall";
      // Alltoallv: (i + j) % 2 + count elements between local rank i and remote rank j,
      // packed in rank order on both sides.
      auto pair = [&](int i, int j) { return static_cast<size_t>((i + j) % 2) + count; };
      std::vector<size_t> send_counts, send_displs, recv_counts, recv_displs;
      size_t send_at = 0, recv_at = 0;
      for (int j = 0; j < remote; ++j) {
        send_counts.push_back(pair(sides.local_rank, j));
        send_displs.push_back(send_at);
        send_at += send_counts.back();
        recv_counts.push_back(pair(sides.local_rank, j));
        recv_displs.push_back(recv_at);
        recv_at += recv_counts.back();
      }
      const Bytes send_v = Input(me, 4, send_at);
      recv.assign(recv_at * kWidth, 0x5a);
      ASSERT_OK(inter.Alltoallv(send_v.data(), send_counts, send_displs, recv.data(), recv_counts,
                                recv_displs, kType));
      RankBytes pieces;
      for (int j = 0; j < remote; ++j) {
        // Remote rank j's buffer: its blocks for local ranks 0.. in order.
        size_t offset = 0, length = 0;
        for (int i = 0; i <= sides.local_rank; ++i) {
          if (i < sides.local_rank) offset += pair(j, i);
          length += pair(j, i);
        }
        pieces.push_back(
            Slice(Input(sides.remote_first + j, 4, length), offset, pair(j, sides.local_rank)));
      }
      EXPECT_EQ(recv, Concat(pieces)) << "alltoallv";
    }
    // Nonblocking, and a barrier.
    absl::StatusOr<Request> barrier = inter.IBarrier();
    ASSERT_TRUE(barrier.ok()) << barrier.status();
    EXPECT_OK(barrier->Wait());
  });
}

TEST_P(IntercommunicatorTest, PersistentAndTypedFormsRunAgainAndAgain) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const int me = world.rank();
    std::vector<int64_t> send(3), recv(3);
    absl::StatusOr<PersistentRequest> step = inter.AllreduceInit(
        send.data(), recv.data(), send.size(), kType, testing::DigitsInRankOrder());
    ASSERT_TRUE(step.ok()) << step.status();
    // The root of a persistent bcast: P's rank 0.
    std::vector<int64_t> message(2);
    const int root = sides.in_p ? (sides.local_rank == 0 ? kRoot : kProcNull) : 0;
    absl::StatusOr<PersistentRequest> bcast = inter.BcastInit(message.data(), 2, kType, root);
    ASSERT_TRUE(bcast.ok()) << bcast.status();
    for (int start = 0; start < 50; ++start) {
      const Bytes input = Input(me, start, send.size());
      std::memcpy(send.data(), input.data(), input.size());
      ASSERT_OK(step->Start());
      ASSERT_OK(step->Wait());
      const Bytes expected =
          *testing::ReferenceReduce(testing::DigitsInRankOrder(), kType,
                                    RemoteInputs(sides, start, send.size()), send.size());
      ASSERT_EQ(std::memcmp(recv.data(), expected.data(), expected.size()), 0) << start;
      if (root == kRoot) message = {start, -start};
      ASSERT_OK(bcast->Start());
      ASSERT_OK(bcast->Wait());
      if (!sides.in_p) {
        ASSERT_EQ(message, (std::vector<int64_t>{start, -start}));
      }
    }
    // The typed forms (the raw forms' results are checked above; here, that the spans
    // become the right counts).
    const int remote = sides.remote_size, local = sides.local_size;
    std::vector<int> vector(static_cast<size_t>(remote * local), me),
        block(static_cast<size_t>(remote));
    ASSERT_OK(inter.ReduceScatterBlock<int>(vector, absl::MakeSpan(block), PredefinedOp::kSum));
    int remote_sum = 0;
    for (int j = 0; j < remote; ++j) remote_sum += sides.remote_first + j;
    EXPECT_EQ(block, std::vector<int>(static_cast<size_t>(remote), remote_sum));
    // Scatter and Gather rooted at P's rank 0: Q's ranks get and give one element.
    const int typed_root = sides.in_p ? (sides.local_rank == 0 ? kRoot : kProcNull) : 0;
    std::vector<int> root_blocks, one(1, -1);
    if (typed_root == kRoot) {
      for (int j = 0; j < remote; ++j) root_blocks.push_back(1000 + j);
    }
    ASSERT_OK(inter.Scatter<int>(
        root_blocks, absl::MakeSpan(sides.in_p ? nullptr : one.data(), sides.in_p ? 0 : 1),
        typed_root));
    if (!sides.in_p) {
      EXPECT_EQ(one[0], 1000 + sides.local_rank);
    }
    std::vector<int> gathered(typed_root == kRoot ? static_cast<size_t>(remote) : 0);
    ASSERT_OK(inter.Gather<int>(absl::MakeConstSpan(&me, sides.in_p ? 0 : 1),
                                absl::MakeSpan(gathered), typed_root));
    for (size_t j = 0; j < gathered.size(); ++j) {
      EXPECT_EQ(gathered[j], sides.remote_first + static_cast<int>(j));
    }
    std::vector<int> out(static_cast<size_t>(remote)), in(static_cast<size_t>(remote));
    for (int j = 0; j < remote; ++j) out[j] = me * 100 + j;
    ASSERT_OK(inter.Alltoall<int>(out, absl::MakeSpan(in)));
    for (int j = 0; j < remote; ++j) {
      EXPECT_EQ(in[j], (sides.remote_first + j) * 100 + sides.local_rank);
    }
    std::vector<int> mine = {me, 1}, sums(2);
    ASSERT_OK(inter.Allreduce<int>(mine, absl::MakeSpan(sums), PredefinedOp::kSum));
    EXPECT_EQ(sums[1], sides.remote_size);
    std::vector<int> blocks(static_cast<size_t>(sides.remote_size));
    ASSERT_OK(inter.Allgather<int>(absl::MakeConstSpan(&me, 1), absl::MakeSpan(blocks)));
    for (int j = 0; j < sides.remote_size; ++j) {
      EXPECT_EQ(blocks[j], sides.remote_first + j);
    }
  });
}

TEST_P(IntercommunicatorTest, AShortTypedSpanIsRefusedAndFailsTheJob) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    const absl::Status entered = inter.Barrier();
    EXPECT_THAT(entered.code(),
                ::testing::AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted));
    // The last rank of the job gives Allgather a receive span one element short.
    const bool short_span = world.rank() == world.size() - 1;
    std::vector<int> mine = {world.rank()};
    std::vector<int> theirs(static_cast<size_t>(sides.remote_size) - (short_span ? 1 : 0));
    const absl::Status status = inter.Allgather<int>(mine, absl::MakeSpan(theirs));
    if (short_span) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(status.message(),
                  HasSubstr(absl::StrCat("`recv` holds ", sides.remote_size - 1,
                                         " elements; this call needs ", sides.remote_size)));
    } else if (sides.in_p) {
      // P's ranks wait for the refusing rank's block: the failure ends their call.
      EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
    } else {
      // The refusing rank's own group needs nothing from it: done, or failed.
      EXPECT_THAT(status.code(),
                  ::testing::AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted));
    }
  });
}

TEST_P(IntercommunicatorTest, RefusedArgumentsNameTheRankAndFailTheJob) {
  Run([&](Communicator& world, Intercommunicator& inter, const Sides& sides) {
    int64_t value = 1, result = 0;
    // Every rank has made the intercommunicator before any leaves this barrier and
    // fails the job (which may end a slower rank's barrier).
    const absl::Status entered = inter.Barrier();
    EXPECT_THAT(entered.code(),
                ::testing::AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted));
    // Rank 0 of P passes kInPlace; the others' calls meet the failure.
    const bool refuser = world.rank() == 0;
    const absl::Status status =
        inter.Allreduce(refuser ? kInPlace : &value, &result, 1, kType, PredefinedOp::kSum);
    if (refuser) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(status.message(), HasSubstr("no in-place form on intercommunicators"));
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
    }
    EXPECT_EQ(inter.status().code(), absl::StatusCode::kAborted);
  });
}

// Intercommunicator::Create's refusals reach every rank of both groups, naming what was
// wrong. Five ranks: P = {0, 1}, Q = {2, 3, 4}; `make` creates the intercommunicator
// with the arguments under test.
void ExpectCreateRefused(
    const CommunicatorJob& job,
    const std::function<absl::StatusOr<Intercommunicator>(Communicator&, Communicator&, bool)>&
        make,
    const std::string& expected) {
  const absl::Status status = RunCommunicatorJob(job, [&](Communicator& world, RankControl&) {
    const bool in_p = world.rank() < 2;
    absl::StatusOr<std::optional<Communicator>> local = world.Split(in_p ? 0 : 1, 0);
    ASSERT_TRUE(local.ok()) << local.status();
    const absl::Time start = absl::Now();
    absl::StatusOr<Intercommunicator> inter = make(**local, world, in_p);
    EXPECT_EQ(inter.status().code(), absl::StatusCode::kInvalidArgument) << inter.status();
    EXPECT_THAT(inter.status().message(), HasSubstr(expected));
    EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "refused at the deadline, not at once";
    // A refusal is not a failure of the job.
    EXPECT_OK(world.Barrier());
  });
  EXPECT_TRUE(status.ok()) << status;
}

std::vector<CommunicatorJob> CreateJobs() {
  return {CommunicatorJob{.size = 5}, CommunicatorJob{.local_provider = "shm", .size = 5}};
}

TEST(IntercommunicatorCreateTest, LeadersWithDifferentTagsFailBothGroups) {
  for (const CommunicatorJob& job : CreateJobs()) {
    ExpectCreateRefused(
        job,
        [](Communicator& local, Communicator& world, bool in_p) {
          return Intercommunicator::Create(local, 0, world, in_p ? 2 : 0, in_p ? 7 : 8);
        },
        "the leaders passed tags");
  }
}

TEST(IntercommunicatorCreateTest, ABadRemoteLeaderFailsTheLeadersGroupWithItsReason) {
  for (const CommunicatorJob& job : CreateJobs()) {
    // Both leaders name a rank the peer communicator does not have: each group hears
    // its leader's reason.
    ExpectCreateRefused(
        job,
        [](Communicator& local, Communicator& world, bool) {
          return Intercommunicator::Create(local, 0, world, 99, 1);
        },
        "remote_leader 99 is not another rank of the 5-rank peer communicator");
  }
}

TEST(IntercommunicatorCreateTest, ABadLocalLeaderIsRefusedAtOnce) {
  for (const CommunicatorJob& job : CreateJobs()) {
    ExpectCreateRefused(
        job,
        [](Communicator& local, Communicator& world, bool in_p) {
          return Intercommunicator::Create(local, local.size(), world, in_p ? 2 : 0, 1);
        },
        "is not a rank of the");
  }
}

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  // Every shape on threads (loopback) and on processes (the shm transport).
  for (const auto& [p, q] :
       std::vector<std::pair<int, int>>{{1, 1}, {1, 3}, {2, 3}, {3, 2}, {4, 4}}) {
    shapes.push_back({CommunicatorJob{.size = p + q}, p});
    shapes.push_back({CommunicatorJob{.local_provider = "shm", .size = p + q}, p});
  }
  shapes.push_back({CommunicatorJob{.size = 5, .nodes = 2}, 3});
  shapes.push_back(
      {CommunicatorJob{
           .local_provider = "shm", .network_provider = "ofi:tcp", .size = 4, .nodes = 2},
       1});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Shapes, IntercommunicatorTest, ::testing::ValuesIn(Shapes()),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return info.param.Name();
                         });

}  // namespace
}  // namespace zcoll
