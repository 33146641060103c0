// A node whose system forbids cross-memory attach, as a container's seccomp profile or
// a ptrace policy can: process_vm_readv and process_vm_writev fail with EPERM in every
// rank (a seccomp filter this test installs before anything else, which the ranks'
// processes inherit). zcoll must find that out by itself, with no setting: the node
// engine runs without single copy (what fits its slots, and Bcasts of any size
// through them) and the shm transport sends what is beyond its eager size in pieces
// through shared memory. Every collective still gives the reference result at sizes
// within a slot and well beyond it, by the engine and by messages.

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/communicator.h"
#include "gtest/gtest.h"
#include "testing/communicator_harness.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::zcoll::testing::CommunicatorJob;
using ::zcoll::testing::RankControl;
using ::zcoll::testing::RunCommunicatorJob;

// Makes process_vm_readv and process_vm_writev fail with EPERM in this process and
// every process it forks from now on; false if the kernel refused the filter.
bool ForbidCrossMemoryAttach() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Rank `rank`'s contribution: element i is i % 251 + rank, so sums stay exact.
std::vector<int32_t> Contribution(size_t count, int rank) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<int32_t>(i % 251) + rank;
  return values;
}

// Every collective of `count` int32 elements a rank (a block) against what it must give.
void CheckCollectives(Communicator& comm, size_t count) {
  const int size = comm.size(), rank = comm.rank();
  const std::string where = absl::StrCat(count, " elements on rank ", rank, " of ", size);
  const std::vector<int32_t> mine = Contribution(count, rank);
  std::vector<int32_t> sum(count);
  for (size_t i = 0; i < count; ++i) {
    sum[i] = static_cast<int32_t>(size * static_cast<int>(i % 251) + size * (size - 1) / 2);
  }
  std::vector<int32_t> result(count, -1);
  ASSERT_OK(
      comm.Allreduce(mine.data(), result.data(), count, DataType::kInt32, PredefinedOp::kSum));
  ASSERT_EQ(result, sum) << "allreduce, " << where;
  std::fill(result.begin(), result.end(), -1);
  ASSERT_OK(comm.Reduce(mine.data(), result.data(), count, DataType::kInt32, PredefinedOp::kSum,
                        size - 1));
  if (rank == size - 1) {
    ASSERT_EQ(result, sum) << "reduce, " << where;
  }
  // Bcast from rank 1: its contribution.
  std::vector<int32_t> broadcast = rank == 1 ? mine : std::vector<int32_t>(count, -1);
  ASSERT_OK(comm.Bcast(broadcast.data(), count, DataType::kInt32, 1));
  ASSERT_EQ(broadcast, Contribution(count, 1)) << "bcast, " << where;
  // Allgather and Gather: every rank's block in rank order.
  std::vector<int32_t> all(count * static_cast<size_t>(size), -1);
  std::vector<int32_t> expected_all;
  for (int r = 0; r < size; ++r) {
    const std::vector<int32_t> block = Contribution(count, r);
    expected_all.insert(expected_all.end(), block.begin(), block.end());
  }
  ASSERT_OK(comm.Allgather(mine.data(), all.data(), count, DataType::kInt32));
  ASSERT_EQ(all, expected_all) << "allgather, " << where;
  std::fill(all.begin(), all.end(), -1);
  ASSERT_OK(comm.Gather(mine.data(), all.data(), count, DataType::kInt32, 0));
  if (rank == 0) {
    ASSERT_EQ(all, expected_all) << "gather, " << where;
  }
  // Scatter from rank 0 of the gathered blocks: each rank its own back.
  std::fill(result.begin(), result.end(), -1);
  ASSERT_OK(comm.Scatter(expected_all.data(), result.data(), count, DataType::kInt32, 0));
  ASSERT_EQ(result, mine) << "scatter, " << where;
  // Alltoall: block r of rank s's vector is Contribution(count, s * size + r); rank r
  // gets block r of every rank.
  std::vector<int32_t> outgoing, expected_incoming;
  for (int r = 0; r < size; ++r) {
    const std::vector<int32_t> to = Contribution(count, rank * size + r);
    outgoing.insert(outgoing.end(), to.begin(), to.end());
    const std::vector<int32_t> from = Contribution(count, r * size + rank);
    expected_incoming.insert(expected_incoming.end(), from.begin(), from.end());
  }
  std::fill(all.begin(), all.end(), -1);
  ASSERT_OK(comm.Alltoall(outgoing.data(), all.data(), count, DataType::kInt32));
  ASSERT_EQ(all, expected_incoming) << "alltoall, " << where;
  // ReduceScatterBlock of the gathered blocks: rank r gets size times block r.
  std::fill(result.begin(), result.end(), -1);
  ASSERT_OK(comm.ReduceScatterBlock(expected_all.data(), result.data(), count, DataType::kInt32,
                                    PredefinedOp::kSum));
  std::vector<int32_t> scaled = mine;
  for (int32_t& value : scaled) value *= size;
  ASSERT_EQ(result, scaled) << "reduce_scatter_block, " << where;
}

// The filter, installed before any test (and so before any rank is forked).
class ForbiddenCrossMemoryAttach : public ::testing::Environment {
 public:
  void SetUp() override {
    installed_ = ForbidCrossMemoryAttach();
    if (!installed_) why_not_ = std::strerror(errno);
  }
  static bool installed() { return installed_; }
  static const std::string& why_not() { return why_not_; }

 private:
  static inline bool installed_ = false;
  static inline std::string why_not_;
};
const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ForbiddenCrossMemoryAttach);

class NoCrossMemoryAttachTest : public ::testing::TestWithParam<int> {};

TEST_P(NoCrossMemoryAttachTest, EveryCollectiveWorksWithoutAnySetting) {
  if (!ForbiddenCrossMemoryAttach::installed()) {
    GTEST_SKIP() << "this kernel refused a seccomp filter ("
                 << ForbiddenCrossMemoryAttach::why_not()
                 << "), so the test cannot make cross-memory attach fail";
  }
  // The filter holds: a read of this process's own memory fails as a peer's would.
  uint64_t word = 1, copy = 0;
  iovec local{&copy, sizeof(copy)}, remote{&word, sizeof(word)};
  ASSERT_EQ(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), -1);
  ASSERT_EQ(errno, EPERM);
  const CommunicatorJob job{.local_provider = "shm", .size = GetParam()};
  const absl::Status status = RunCommunicatorJob(job, [](Communicator& comm, RankControl&) {
    ASSERT_GT(comm.node_segment_bytes(), 0u) << "the node engine did not start";
    ASSERT_FALSE(comm.node_single_copy()) << "the engine did not find it may not read peers";
    // Within the eager size, within a slot, past both, and well past the shm
    // transport's send pool (64 buffers of 8 KiB).
    for (size_t count : {size_t{2}, size_t{3000}, size_t{20000}, size_t{300000}}) {
      CheckCollectives(comm, count);
    }
  });
  EXPECT_TRUE(status.ok()) << status;
}

INSTANTIATE_TEST_SUITE_P(Ranks, NoCrossMemoryAttachTest, ::testing::Values(2, 3));

}  // namespace
}  // namespace zcoll
