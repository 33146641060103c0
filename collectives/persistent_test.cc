// Persistent collectives (Communicator::*Init, PersistentRequest): every collective
// made once and started again and again with new buffer contents, each start checked
// against the reference (testing/reference.h); 10^4 starts of one allreduce; the
// request's states and errors; a request on a failed job; and no allocation per start.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/block_layouts.h"
#include "testing/communicator_harness.h"
#include "testing/reference.h"
#include "testing/status_assertions.h"

// Allocations made by each thread, for the test that a start allocates nothing.
namespace {
thread_local int64_t allocations_here = 0;
}  // namespace

void* operator new(size_t bytes) {
  ++allocations_here;
  if (void* memory = std::malloc(bytes == 0 ? 1 : bytes)) return memory;
  throw std::bad_alloc();
}
// (The nothrow form too, which std::stable_sort's buffer uses: every new here pairs
// with the delete below.)
void* operator new(size_t bytes, const std::nothrow_t&) noexcept {
  ++allocations_here;
  return std::malloc(bytes == 0 ? 1 : bytes);
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }

namespace zcoll {
namespace {

using ::testing::HasSubstr;
using ::zcoll::testing::Bytes;
using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::PairCount;
using ::zcoll::testing::RankBytes;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::ReversedWithGaps;
using ::zcoll::testing::RunCommunicatorJob;
using ::zcoll::testing::VariedCounts;

// Rank r's element i at start `start`: one digit, so DigitsInRankOrder stays exact.
int64_t Value(int rank, int start, size_t i) {
  return 1 + (3 * rank + static_cast<int>(i % 1000) + 5 * start) % 9;
}
Bytes Input(int rank, int start, size_t count) {
  Bytes bytes(count * sizeof(int64_t));
  for (size_t i = 0; i < count; ++i) {
    const int64_t value = Value(rank, start, i);
    std::memcpy(bytes.data() + i * sizeof(int64_t), &value, sizeof(value));
  }
  return bytes;
}
// Every rank's input, one after another in rank order (a gather's result).
Bytes AllInputs(int size, int start, size_t count) {
  Bytes all;
  for (int r = 0; r < size; ++r) {
    const Bytes one = Input(r, start, count);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}
RankBytes Inputs(int size, int start, size_t count) {
  RankBytes inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(Input(r, start, count));
  return inputs;
}
void Fill(Bytes& buffer, const Bytes& contents) {
  std::copy(contents.begin(), contents.end(), buffer.begin());
}

class PersistentTest : public ::testing::TestWithParam<CommunicatorJob> {
 protected:
  void Run(const std::function<void(Communicator&, RankControl&)>& body) {
    const absl::Status status = RunCommunicatorJob(GetParam(), body);
    EXPECT_TRUE(status.ok()) << status;
  }
};

// One persistent collective under test: its buffers, made once; `refill(start)` writes
// this rank's inputs for a start, `expected(start)` is what this rank's `result` must
// then hold (nullopt: nothing defined here).
struct Case {
  std::string name;
  std::function<absl::StatusOr<PersistentRequest>()> init;
  std::function<void(int start)> refill;
  std::function<std::optional<Bytes>(int start)> expected;
  const Bytes* result = nullptr;
};

constexpr DataType kType = DataType::kInt64;
constexpr size_t kWidth = sizeof(int64_t);

// Every collective, on `comm`, with buffers owned by `storage` (kept stable).
std::vector<Case> EveryCollective(Communicator& comm, std::vector<std::unique_ptr<Bytes>>& storage,
                                  const ReduceOp& op) {
  const int size = comm.size(), rank = comm.rank();
  const int root = size - 1;
  auto buffer = [&](size_t elements) -> Bytes* {
    storage.push_back(std::make_unique<Bytes>(elements * kWidth, 0x5a));
    return storage.back().get();
  };
  std::vector<Case> cases;
  const size_t count = 5;
  {
    Bytes* send = buffer(count);
    Bytes* recv = buffer(count);
    cases.push_back({"reduce",
                     [=, &comm, &op] {
                       return comm.ReduceInit(send->data(), recv->data(), count, kType, op, root);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, count)); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       if (rank != root) return std::nullopt;
                       return *testing::ReferenceReduce(op, kType, Inputs(size, start, count),
                                                        count);
                     },
                     recv});
  }
  {
    // In place.
    Bytes* recv = buffer(count);
    cases.push_back(
        {"allreduce in place",
         [=, &comm, &op] { return comm.AllreduceInit(kInPlace, recv->data(), count, kType, op); },
         [=, &comm, &op](int start) { Fill(*recv, Input(rank, start, count)); },
         [=, &op](int start) -> std::optional<Bytes> {
           return *testing::ReferenceReduce(op, kType, Inputs(size, start, count), count);
         },
         recv});
  }
  {
    const size_t block = 3;
    Bytes* send = buffer(block * size);
    Bytes* recv = buffer(block);
    cases.push_back(
        {"reduce_scatter_block",
         [=, &comm, &op] {
           return comm.ReduceScatterBlockInit(send->data(), recv->data(), block, kType, op);
         },
         [=, &comm, &op](int start) { Fill(*send, Input(rank, start, block * size)); },
         [=, &op](int start) -> std::optional<Bytes> {
           return (*testing::ReferenceReduceScatter(op, kType, Inputs(size, start, block * size),
                                                    std::vector<size_t>(size, block)))[rank];
         },
         recv});
  }
  {
    const std::vector<size_t> counts = VariedCounts(size, 3);
    size_t total = 0;
    for (size_t c : counts) total += c;
    Bytes* send = buffer(total);
    Bytes* recv = buffer(counts[rank]);
    cases.push_back({"reduce_scatter",
                     [=, &comm, &op] {
                       return comm.ReduceScatterInit(send->data(), recv->data(), counts, kType, op);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, total)); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       return (*testing::ReferenceReduceScatter(
                           op, kType, Inputs(size, start, total), counts))[rank];
                     },
                     recv});
  }
  {
    Bytes* send = buffer(count * size);
    Bytes* recv = buffer(count);
    cases.push_back({"scatter",
                     [=, &comm, &op] {
                       return comm.ScatterInit(send->data(), recv->data(), count, kType, root);
                     },
                     [=, &comm, &op](int start) {
                       if (rank == root) Fill(*send, Input(root, start, count * size));
                     },
                     [=, &op](int start) -> std::optional<Bytes> {
                       const Bytes all = Input(root, start, count * size);
                       return Bytes(all.begin() + rank * count * kWidth,
                                    all.begin() + (rank + 1) * count * kWidth);
                     },
                     recv});
  }
  {
    const std::vector<size_t> counts = VariedCounts(size, 4);
    size_t extent = 0;
    const std::vector<size_t> displs = ReversedWithGaps(counts, &extent);
    Bytes* send = buffer(extent);
    Bytes* recv = buffer(counts[rank]);
    cases.push_back({"scatterv",
                     [=, &comm, &op] {
                       return comm.ScattervInit(send->data(), counts, displs, recv->data(),
                                                counts[rank], kType, root);
                     },
                     [=, &comm, &op](int start) {
                       if (rank == root) Fill(*send, Input(root, start, extent));
                     },
                     [=, &op](int start) -> std::optional<Bytes> {
                       return (*testing::ReferenceScatterv(kType, Input(root, start, extent),
                                                           counts, displs))[rank];
                     },
                     recv});
  }
  {
    Bytes* data = buffer(count);
    const int bcast_root = 0;
    cases.push_back(
        {"bcast",
         [=, &comm, &op] { return comm.BcastInit(data->data(), count, kType, bcast_root); },
         [=, &comm, &op](int start) {
           if (rank == bcast_root) Fill(*data, Input(bcast_root, start, count));
         },
         [=, &op](int start) -> std::optional<Bytes> { return Input(bcast_root, start, count); },
         data});
  }
  {
    Bytes* send = buffer(count);
    Bytes* recv = buffer(count * size);
    cases.push_back({"gather",
                     [=, &comm, &op] {
                       return comm.GatherInit(send->data(), recv->data(), count, kType, root);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, count)); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       if (rank != root) return std::nullopt;
                       return AllInputs(size, start, count);
                     },
                     recv});
  }
  {
    const std::vector<size_t> counts = VariedCounts(size, 2);
    size_t extent = 0;
    const std::vector<size_t> displs = ReversedWithGaps(counts, &extent);
    Bytes* send = buffer(counts[rank]);
    Bytes* recv = buffer(extent);
    const Bytes initial = *recv;
    cases.push_back({"gatherv",
                     [=, &comm, &op] {
                       return comm.GathervInit(send->data(), counts[rank], recv->data(), counts,
                                               displs, kType, root);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, counts[rank])); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       if (rank != root) return std::nullopt;
                       RankBytes inputs;
                       for (int r = 0; r < size; ++r) inputs.push_back(Input(r, start, counts[r]));
                       return *testing::ReferenceGatherv(kType, inputs, counts, displs, initial);
                     },
                     recv});
  }
  {
    Bytes* send = buffer(count);
    Bytes* recv = buffer(count * size);
    cases.push_back(
        {"allgather",
         [=, &comm, &op] { return comm.AllgatherInit(send->data(), recv->data(), count, kType); },
         [=, &comm, &op](int start) { Fill(*send, Input(rank, start, count)); },
         [=, &op](int start) -> std::optional<Bytes> { return AllInputs(size, start, count); },
         recv});
  }
  {
    const std::vector<size_t> counts = VariedCounts(size, 3);
    size_t extent = 0;
    const std::vector<size_t> displs = ReversedWithGaps(counts, &extent);
    Bytes* send = buffer(counts[rank]);
    Bytes* recv = buffer(extent);
    const Bytes initial = *recv;
    cases.push_back({"allgatherv",
                     [=, &comm, &op] {
                       return comm.AllgathervInit(send->data(), counts[rank], recv->data(), counts,
                                                  displs, kType);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, counts[rank])); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       RankBytes inputs;
                       for (int r = 0; r < size; ++r) inputs.push_back(Input(r, start, counts[r]));
                       return *testing::ReferenceGatherv(kType, inputs, counts, displs, initial);
                     },
                     recv});
  }
  {
    Bytes* send = buffer(count * size);
    Bytes* recv = buffer(count * size);
    cases.push_back(
        {"alltoall",
         [=, &comm, &op] { return comm.AlltoallInit(send->data(), recv->data(), count, kType); },
         [=, &comm, &op](int start) { Fill(*send, Input(rank, start, count * size)); },
         [=, &op](int start) -> std::optional<Bytes> {
           return (
               *testing::ReferenceAlltoall(kType, Inputs(size, start, count * size), count))[rank];
         },
         recv});
  }
  {
    // Rank r sends PairCount(r, s) elements to s: blocks packed in rank order.
    std::vector<size_t> send_counts(size), send_displs(size), recv_counts(size), recv_displs(size);
    size_t send_extent = 0, recv_extent = 0;
    for (int s = 0; s < size; ++s) {
      send_counts[s] = PairCount(rank, s, 3);
      send_displs[s] = send_extent;
      send_extent += send_counts[s];
      recv_counts[s] = PairCount(s, rank, 3);
      recv_displs[s] = recv_extent;
      recv_extent += recv_counts[s];
    }
    Bytes* send = buffer(send_extent);
    Bytes* recv = buffer(recv_extent);
    cases.push_back({"alltoallv",
                     [=, &comm, &op] {
                       return comm.AlltoallvInit(send->data(), send_counts, send_displs,
                                                 recv->data(), recv_counts, recv_displs, kType);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, send_extent)); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       // Block s: rank s's block for this rank, which starts after the
                       // blocks s sends the ranks before this one.
                       Bytes expected;
                       for (int s = 0; s < size; ++s) {
                         size_t offset = 0;
                         for (int t = 0; t < rank; ++t) offset += PairCount(s, t, 3);
                         const Bytes theirs = Input(s, start, offset + PairCount(s, rank, 3));
                         expected.insert(expected.end(), theirs.begin() + offset * kWidth,
                                         theirs.end());
                       }
                       return expected;
                     },
                     recv});
  }
  cases.push_back({"barrier", [=, &comm, &op] { return comm.BarrierInit(); }, [](int) {},
                   [](int) -> std::optional<Bytes> { return std::nullopt; }, nullptr});
  for (bool exclusive : {false, true}) {
    Bytes* send = buffer(count);
    Bytes* recv = buffer(count);
    cases.push_back({exclusive ? "exscan" : "scan",
                     [=, &comm, &op] {
                       return exclusive
                                  ? comm.ExscanInit(send->data(), recv->data(), count, kType, op)
                                  : comm.ScanInit(send->data(), recv->data(), count, kType, op);
                     },
                     [=, &comm, &op](int start) { Fill(*send, Input(rank, start, count)); },
                     [=, &op](int start) -> std::optional<Bytes> {
                       if (exclusive && rank == 0) return std::nullopt;
                       return (*testing::ReferenceScan(op, kType, Inputs(size, start, count), count,
                                                       exclusive))[rank];
                     },
                     recv});
  }
  return cases;
}

TEST_P(PersistentTest, EveryCollectiveStartsAgainAndAgainWithNewContents) {
  Run([&](Communicator& comm, RankControl&) {
    for (const ReduceOp& op : {ReduceOp(PredefinedOp::kSum), testing::DigitsInRankOrder()}) {
      std::vector<std::unique_ptr<Bytes>> storage;
      std::vector<Case> cases = EveryCollective(comm, storage, op);
      std::vector<PersistentRequest> requests;
      for (Case& each : cases) {
        absl::StatusOr<PersistentRequest> made = each.init();
        ASSERT_TRUE(made.ok()) << each.name << ": " << made.status();
        EXPECT_FALSE(made->active());
        requests.push_back(std::move(*made));
      }
      // Started in turn, each many times, with other calls between its starts (so
      // that the communicator's plan cache has moved on).
      constexpr int kStarts = 12;
      for (int start = 0; start < kStarts; ++start) {
        for (size_t c = 0; c < cases.size(); ++c) {
          cases[c].refill(start);
          ASSERT_TRUE(requests[c].Start().ok()) << cases[c].name;
          EXPECT_TRUE(requests[c].active());
          const absl::Status done = requests[c].Wait();
          ASSERT_TRUE(done.ok()) << cases[c].name << " start " << start << ": " << done;
          EXPECT_FALSE(requests[c].active());
          const std::optional<Bytes> expected = cases[c].expected(start);
          if (expected.has_value() && cases[c].result != nullptr) {
            const Bytes got(cases[c].result->begin(), cases[c].result->begin() + expected->size());
            ASSERT_EQ(got, *expected) << "rank " << comm.rank() << ": " << cases[c].name << " with "
                                      << op.name() << ", start " << start;
          }
        }
        // Calls of their own between the rounds of starts.
        int64_t scratch = start;
        for (size_t n = 1; n <= 17; ++n) {
          std::vector<int64_t> other(n, 1), sum(n);
          ASSERT_OK(comm.Allreduce<int64_t>(other, absl::MakeSpan(sum), PredefinedOp::kSum));
          scratch += sum[0];
        }
        EXPECT_EQ(scratch, start + 17 * comm.size());
      }
    }
  });
}

TEST_P(PersistentTest, TenThousandStartsOfOneAllreduce) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    std::vector<int64_t> send(2), recv(2);
    absl::StatusOr<PersistentRequest> step =
        comm.AllreduceInit<int64_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum);
    ASSERT_TRUE(step.ok()) << step.status();
    // 10^4 where a start takes microseconds; fewer on the jobs whose messages cross
    // emulated nodes or tcp (oversubscribed here, a start takes milliseconds there).
    const int starts = GetParam().nodes == 1 ? 10000 : 1000;
    for (int start = 0; start < starts; ++start) {
      send[0] = start + rank;
      send[1] = int64_t{1} << (rank % 40);
      ASSERT_OK(step->Start());
      // Every other start completes through Test.
      if (start % 2 == 0) {
        absl::StatusOr<bool> done = false;
        while (done.ok() && !*done) {
          done = step->Test();
          // (Ranks outnumber cores here: a poll gives the others their turn.)
          if (done.ok() && !*done) std::this_thread::yield();
        }
        ASSERT_TRUE(done.ok()) << done.status();
      } else {
        absl::Status waited = step->Wait();
        ASSERT_TRUE(waited.ok()) << waited << " at start " << start;
      }
      int64_t bits = 0;
      for (int r = 0; r < size; ++r) bits += int64_t{1} << (r % 40);
      ASSERT_EQ(recv[0], int64_t{start} * size + int64_t{size} * (size - 1) / 2) << start;
      ASSERT_EQ(recv[1], bits) << start;
    }
  });
}

TEST_P(PersistentTest, AStartOfAnActiveOrEmptyRequestIsRefused) {
  Run([&](Communicator& comm, RankControl&) {
    PersistentRequest empty;
    EXPECT_EQ(empty.Start().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_OK(empty.Wait());  // nothing active
    absl::StatusOr<PersistentRequest> barrier = comm.BarrierInit();
    ASSERT_TRUE(barrier.ok()) << barrier.status();
    ASSERT_OK(barrier->Start());
    const absl::Status again = barrier->Start();
    EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(again.message(), HasSubstr("Barrier is active"));
    ASSERT_OK(barrier->Wait());
    // The communicator moves; its persistent requests keep working.
    Communicator moved = std::move(comm);
    ASSERT_OK(barrier->Start());
    ASSERT_OK(barrier->Wait());
    PersistentRequest taken = std::move(*barrier);
    EXPECT_EQ(barrier->Start().code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_OK(taken.Start());
    ASSERT_OK(taken.Wait());
    comm = std::move(moved);
  });
}

TEST_P(PersistentTest, ArgumentsRefusedAtInitFailTheJob) {
  Run([&](Communicator& comm, RankControl&) {
    const int size = comm.size(), rank = comm.rank();
    // Every rank has finished Create before any leaves this barrier and fails the job
    // (which may end a slower rank's barrier: the failure reaches every operation).
    const absl::Status entered = comm.Barrier();
    EXPECT_THAT(entered.code(),
                ::testing::AnyOf(absl::StatusCode::kOk, absl::StatusCode::kAborted));
    int64_t value = 1, sum = 0;
    // The last rank passes a null send buffer.
    absl::StatusOr<PersistentRequest> made =
        comm.AllreduceInit(rank == size - 1 ? nullptr : &value, &sum, 1, kType, PredefinedOp::kSum);
    if (rank == size - 1) {
      EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(made.status().message(), HasSubstr("`send` is null"));
    } else {
      // The others' init succeeds unless the failure has reached them already (it does
      // not communicate); their allreduce, which waits for the last rank's
      // contribution, meets the failure.
      absl::Status status = made.status();
      if (status.ok()) status = made->Start();
      if (status.ok()) status = made->Wait();
      EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
      EXPECT_THAT(status.message(), HasSubstr("`send` is null"));
    }
  });
}

TEST_P(PersistentTest, APersistentRequestOnAFailedJobReturnsTheJobsError) {
  Run([&](Communicator& comm, RankControl&) {
    std::vector<int64_t> send(4, 1), recv(4);
    absl::StatusOr<PersistentRequest> step =
        comm.AllreduceInit<int64_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum);
    ASSERT_TRUE(step.ok()) << step.status();
    ASSERT_OK(step->Start());
    // Rank 0 aborts once its own start completed, which may be before the others'.
    const absl::Status first = step->Wait();
    if (comm.rank() == 0) {
      ASSERT_TRUE(first.ok()) << first;
      EXPECT_EQ(recv[0], comm.size());
      comm.Abort("stop the training").IgnoreError();
    } else if (!first.ok()) {
      EXPECT_EQ(first.code(), absl::StatusCode::kAborted) << first;
    }
    // Every rank's next start or its wait returns the job's failure, within the deadline.
    absl::Status status = step->Start();
    if (status.ok()) status = step->Wait(absl::Now() + absl::Seconds(20));
    EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
    EXPECT_THAT(status.message(), HasSubstr("rank 0 called Abort: stop the training"));
    status = step->Start();
    EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  });
}

TEST_P(PersistentTest, AStartAllocatesNothingOnceWarm) {
  const CommunicatorJob job = GetParam();
  // Counted where the node engine runs the calls (one node, ranks as threads). Between
  // processes and nodes the transports keep an eager message that arrives before its
  // receive in a heap buffer (the shm transport's unexpected queue, the loopback
  // fabric's deques), which this count would measure instead of the start.
  if (!job.in_process() || job.nodes > 1 || job.size < 2) {
    GTEST_SKIP() << "allocations counted on one-node jobs of several threads only (the node "
                    "engine's; transports buffer early eager messages on the heap)";
  }
  Run([&](Communicator& comm, RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine runs these calls";
    std::vector<int64_t> send(8, 1), recv(8);
    absl::StatusOr<PersistentRequest> step =
        comm.AllreduceInit<int64_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum);
    ASSERT_TRUE(step.ok()) << step.status();
    for (int warm = 0; warm < 20; ++warm) {
      ASSERT_OK(step->Start());
      ASSERT_OK(step->Wait());
    }
    const int64_t before = allocations_here;
    for (int start = 0; start < 200; ++start) {
      ASSERT_OK(step->Start());
      ASSERT_OK(step->Wait());
    }
    EXPECT_EQ(allocations_here - before, 0) << "allocations in 200 starts on rank " << comm.rank();
    // The plain call allocates nothing either, once warm.
    for (int warm = 0; warm < 20; ++warm) {
      ASSERT_OK(comm.Allreduce<int64_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum));
    }
    const int64_t plain_before = allocations_here;
    for (int call = 0; call < 200; ++call) {
      ASSERT_OK(comm.Allreduce<int64_t>(send, absl::MakeSpan(recv), PredefinedOp::kSum));
    }
    EXPECT_EQ(allocations_here - plain_before, 0);
  });
}

std::vector<CommunicatorJob> Jobs() {
  std::vector<CommunicatorJob> jobs;
  for (int size = 1; size <= 4; ++size) jobs.push_back({.size = size});
  jobs.push_back({.size = 5, .nodes = 2});
  jobs.push_back({.local_provider = "shm", .size = 3});
  jobs.push_back({.local_provider = "shm", .network_provider = "ofi:tcp", .size = 4, .nodes = 2});
  return jobs;
}

INSTANTIATE_TEST_SUITE_P(Jobs, PersistentTest, ::testing::ValuesIn(Jobs()),
                         [](const ::testing::TestParamInfo<CommunicatorJob>& info) {
                           return info.param.Name();
                         });

}  // namespace
}  // namespace zcoll
