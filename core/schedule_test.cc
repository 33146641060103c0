#include "core/schedule.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Slice SendSlice(size_t offset, size_t count) { return {BufferId::Send(), offset, count}; }
Slice RecvSlice(size_t offset, size_t count) { return {BufferId::Recv(), offset, count}; }

std::string ValidateMessage(const Schedule& schedule) {
  absl::Status status = schedule.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << schedule.ToString();
  return std::string(status.message());
}

std::string ValidateAllMessage(const std::vector<Schedule>& schedules) {
  absl::Status status = ValidateSchedules(schedules);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(SliceTest, Overlap) {
  EXPECT_TRUE(RecvSlice(0, 4).Overlaps(RecvSlice(3, 4)));
  EXPECT_FALSE(RecvSlice(0, 4).Overlaps(RecvSlice(4, 4)));
  EXPECT_FALSE(RecvSlice(0, 4).Overlaps(SendSlice(0, 4)));
  EXPECT_FALSE(RecvSlice(2, 0).Overlaps(RecvSlice(0, 4))) << "empty slices overlap nothing";
  EXPECT_FALSE((Slice{BufferId::Scratch(0), 0, 4}.Overlaps({BufferId::Scratch(1), 0, 4})));
  EXPECT_EQ(RecvSlice(3, 4).end(), 7u);
}

TEST(ScheduleTest, BuildsStepsInOrderWithDependencies) {
  Schedule schedule(/*rank=*/0, /*size=*/2, /*send_count=*/4, /*recv_count=*/4);
  const BufferId scratch = schedule.AddScratch(4);
  const StepId recv = schedule.Recv(1, 7, {scratch, 0, 4});
  const StepId reduce =
      schedule.Reduce({SendSlice(0, 4), {scratch, 0, 4}}, RecvSlice(0, 4), {recv});
  const StepId send = schedule.Send(1, 8, RecvSlice(0, 4), {reduce});
  EXPECT_THAT(std::vector<StepId>({recv, reduce, send}), ElementsAre(0, 1, 2));
  EXPECT_EQ(schedule.num_scratch(), 1u);
  EXPECT_EQ(schedule.BufferCount(scratch), 4u);
  EXPECT_EQ(schedule.BufferCount(BufferId::Scratch(5)), 0u);
  EXPECT_EQ(schedule.step(reduce).count(), 4u);
  EXPECT_THAT(schedule.step(send).deps, ElementsAre(reduce));
  EXPECT_TRUE(schedule.Validate().ok()) << schedule.Validate();
  EXPECT_EQ(schedule.ToString(),
            "#0 recv from 1 tag 7 -> scratch0[0,+4)\n"
            "#1 reduce recv[0,+4) = send[0,+4) op scratch0[0,+4) after #0\n"
            "#2 send to 1 tag 8 <- recv[0,+4) after #1\n");
}

TEST(ScheduleTest, ValidateRefusesBadPeersAndSlices) {
  {
    Schedule schedule(0, 2, 4, 4);
    schedule.Send(0, 1, SendSlice(0, 4));
    EXPECT_THAT(ValidateMessage(schedule),
                HasSubstr("peer 0 is not another rank of the 2-rank communicator"));
  }
  {
    Schedule schedule(0, 2, 4, 4);
    schedule.Recv(2, 1, RecvSlice(0, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("peer 2 is not another rank"));
  }
  {
    Schedule schedule(1, 2, 4, 4);
    schedule.Send(0, 1, SendSlice(2, 4));
    EXPECT_THAT(ValidateMessage(schedule),
                HasSubstr("schedule of rank 1, step #0 send to 0 tag 1 <- send[2,+4): slice "
                          "send[2,+4) ends past its send buffer of 4 elements"));
  }
  {
    Schedule schedule(0, 2, 4, 4);
    schedule.Recv(1, 1, SendSlice(0, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("writes the send buffer"));
  }
  {
    Schedule schedule(0, 2, 4, 4);
    schedule.Copy(RecvSlice(0, 2), {BufferId::Scratch(0), 0, 2});
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("scratch buffer 0 does not exist"));
  }
  {
    // An offset near SIZE_MAX must not wrap around the bounds check.
    Schedule schedule(0, 2, 4, 4);
    schedule.Send(1, 1, SendSlice(~size_t{0} - 1, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("ends past its send buffer"));
  }
}

TEST(ScheduleTest, ValidateRefusesBadLocalSteps) {
  {
    Schedule schedule(0, 1, 4, 8);
    schedule.Reduce({SendSlice(0, 4)}, RecvSlice(0, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("at least two operands"));
  }
  {
    Schedule schedule(0, 1, 4, 8);
    schedule.Reduce({SendSlice(0, 4), RecvSlice(0, 4)}, RecvSlice(2, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("destination partly overlaps operand"));
  }
  {
    Schedule schedule(0, 1, 4, 8);
    schedule.Reduce({SendSlice(0, 4), RecvSlice(0, 3)}, RecvSlice(4, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("differ in length"));
  }
  {
    Schedule schedule(0, 1, 4, 8);
    schedule.Copy(RecvSlice(0, 4), RecvSlice(2, 4));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("source and destination overlap"));
  }
  {
    Schedule schedule(0, 1, 4, 8);
    schedule.Copy(SendSlice(0, 4), RecvSlice(0, 4), {0});
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("depends on #0, which is not an earlier"));
  }
  {
    // In-place accumulation into an operand is the normal case.
    Schedule schedule(0, 1, 4, 8);
    schedule.Reduce({SendSlice(0, 4), RecvSlice(0, 4)}, RecvSlice(0, 4));
    schedule.Reduce({RecvSlice(0, 4), RecvSlice(4, 4), SendSlice(0, 4)}, RecvSlice(4, 4));
    EXPECT_TRUE(schedule.Validate().ok()) << schedule.Validate();
  }
}

// Each rank sends its block to the right neighbour and receives from the left.
std::vector<Schedule> RingShift(int size, bool recv_before_send) {
  std::vector<Schedule> schedules;
  for (int rank = 0; rank < size; ++rank) {
    Schedule schedule(rank, size, 2, 2);
    const int right = (rank + 1) % size;
    const int left = (rank + size - 1) % size;
    if (recv_before_send) {
      // Every rank waits for its receive before sending: a cycle of waits.
      const StepId recv = schedule.Recv(left, 0, RecvSlice(0, 2));
      schedule.Send(right, 0, SendSlice(0, 2), {recv});
    } else {
      schedule.Send(right, 0, SendSlice(0, 2));
      schedule.Recv(left, 0, RecvSlice(0, 2));
    }
    schedules.push_back(std::move(schedule));
  }
  return schedules;
}

TEST(ValidateSchedulesTest, IndependentRingShiftCompletes) {
  for (int size : {2, 3, 8}) {
    EXPECT_TRUE(ValidateSchedules(RingShift(size, false)).ok()) << size;
  }
  // One rank alone has nothing to match.
  std::vector<Schedule> single;
  single.emplace_back(0, 1, 2, 2).Copy(SendSlice(0, 2), RecvSlice(0, 2));
  EXPECT_OK(ValidateSchedules(single));
}

TEST(ValidateSchedulesTest, CyclicWaitIsReportedAsDeadlock) {
  const std::string message = ValidateAllMessage(RingShift(3, true));
  EXPECT_THAT(message, HasSubstr("the schedules deadlock: 6 of 6 steps never complete"));
  EXPECT_THAT(message, HasSubstr("rank 0 #0 recv from 2 tag 0"));
}

TEST(ValidateSchedulesTest, SendsWaitForTheirReceivers) {
  // Both ranks send first and receive after their send completed: fine with eager
  // buffering, a deadlock with rendezvous, so it is refused.
  std::vector<Schedule> schedules;
  for (int rank = 0; rank < 2; ++rank) {
    Schedule schedule(rank, 2, 1, 1);
    const StepId send = schedule.Send(1 - rank, 0, SendSlice(0, 1));
    schedule.Recv(1 - rank, 0, RecvSlice(0, 1), {send});
    schedules.push_back(std::move(schedule));
  }
  EXPECT_THAT(ValidateAllMessage(schedules), HasSubstr("waits for its partner"));
}

TEST(ValidateSchedulesTest, TransfersNeedExactlyOneMatchingPartner) {
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 1, 1), Schedule(1, 2, 1, 1)};
    schedules[0].Send(1, 5, SendSlice(0, 1));
    EXPECT_THAT(ValidateAllMessage(schedules),
                HasSubstr("rank 0 #0 send to 1 tag 5 <- send[0,+1) has no partner on rank 1"));
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 2, 2), Schedule(1, 2, 2, 2)};
    schedules[0].Send(1, 5, SendSlice(0, 1));
    schedules[0].Send(1, 5, SendSlice(1, 1));
    schedules[1].Recv(0, 5, RecvSlice(0, 1));
    EXPECT_THAT(ValidateAllMessage(schedules),
                HasSubstr("two transfers from rank 0 to rank 1 use tag 5"));
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 2, 2), Schedule(1, 2, 2, 2)};
    schedules[0].Send(1, 5, SendSlice(0, 2));
    schedules[1].Recv(0, 5, RecvSlice(0, 1));
    EXPECT_THAT(ValidateAllMessage(schedules), HasSubstr("lengths differ"));
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 3, 2, 2), Schedule(1, 3, 2, 2),
                                    Schedule(2, 3, 2, 2)};
    schedules[0].Send(1, 5, SendSlice(0, 2));
    schedules[2].Recv(0, 5, RecvSlice(0, 2));  // expects it from the wrong rank
    EXPECT_THAT(ValidateAllMessage(schedules), HasSubstr("has no partner"));
  }
}

TEST(ValidateSchedulesTest, OneSidedTransfersNameTheirPartnersSlice) {
  {
    // Rank 0 writes into rank 1's receive buffer; rank 1 reads rank 0's send buffer.
    std::vector<Schedule> schedules{Schedule(0, 2, 4, 4), Schedule(1, 2, 4, 4)};
    schedules[0].Put(1, 1, SendSlice(0, 2), RecvSlice(2, 2));
    schedules[1].Recv(0, 1, RecvSlice(2, 2));
    schedules[0].Send(1, 2, SendSlice(2, 2));
    schedules[1].Get(0, 2, SendSlice(2, 2), RecvSlice(0, 2));
    EXPECT_TRUE(ValidateSchedules(schedules).ok()) << ValidateSchedules(schedules);
    EXPECT_EQ(schedules[0].StepToString(0), "#0 put to 1 tag 1 send[0,+2) -> remote recv[2,+2)");
    EXPECT_EQ(schedules[1].StepToString(1), "#1 get from 0 tag 2 remote send[2,+2) -> recv[0,+2)");
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 4, 4), Schedule(1, 2, 4, 4)};
    schedules[0].Put(1, 1, SendSlice(0, 2), RecvSlice(0, 2));
    schedules[1].Recv(0, 1, RecvSlice(2, 2));
    EXPECT_THAT(ValidateAllMessage(schedules),
                HasSubstr("the put's remote destination is not the recv's slice"));
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 4, 4), Schedule(1, 2, 4, 4)};
    schedules[0].Send(1, 1, SendSlice(0, 2));
    schedules[1].Get(0, 1, SendSlice(1, 2), RecvSlice(0, 2));
    EXPECT_THAT(ValidateAllMessage(schedules),
                HasSubstr("the get's remote source is not the send's slice"));
  }
  {
    std::vector<Schedule> schedules{Schedule(0, 2, 4, 4), Schedule(1, 2, 4, 4)};
    schedules[0].Put(1, 1, SendSlice(0, 2), RecvSlice(0, 2));
    schedules[1].Get(0, 1, SendSlice(0, 2), RecvSlice(0, 2));
    EXPECT_THAT(ValidateAllMessage(schedules), HasSubstr("a put must be received by a recv"));
  }
  {
    Schedule schedule(0, 2, 4, 4);
    schedule.Put(1, 1, SendSlice(0, 2), SendSlice(0, 2));
    EXPECT_THAT(ValidateMessage(schedule), HasSubstr("writes the peer's send buffer"));
  }
}

TEST(ValidateSchedulesTest, RanksMustBeInOrder) {
  std::vector<Schedule> schedules{Schedule(1, 2, 1, 1), Schedule(0, 2, 1, 1)};
  EXPECT_THAT(ValidateAllMessage(schedules), HasSubstr("schedule 0 of 2 is for rank 1 of 2"));
}

TEST(PartitionTest, SplitIntoChunks) {
  EXPECT_TRUE(SplitIntoChunks(0, 4).empty());
  EXPECT_THAT(SplitIntoChunks(10, 4),
              ElementsAre(ElementRange{0, 4}, ElementRange{4, 4}, ElementRange{8, 2}));
  EXPECT_THAT(SplitIntoChunks(8, 4), ElementsAre(ElementRange{0, 4}, ElementRange{4, 4}));
  EXPECT_THAT(SplitIntoChunks(3, 100), ElementsAre(ElementRange{0, 3}));
}

TEST(PartitionTest, EvenBlocksCoverTheRangeAndDifferByAtMostOne) {
  for (size_t count : {0, 1, 7, 64, 1001}) {
    for (size_t parts : {1, 2, 3, 7, 16}) {
      size_t next = 0, smallest = ~size_t{0}, largest = 0;
      for (size_t i = 0; i < parts; ++i) {
        const ElementRange block = EvenBlock(count, parts, i);
        EXPECT_EQ(block.offset, next) << count << "/" << parts << " block " << i;
        next = block.offset + block.count;
        smallest = std::min(smallest, block.count);
        largest = std::max(largest, block.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1u);
    }
  }
  EXPECT_EQ(EvenBlock(10, 4, 0), (ElementRange{0, 3}));
  EXPECT_EQ(EvenBlock(10, 4, 3), (ElementRange{8, 2}));
}

TEST(PartitionDeathTest, BadArgumentsAreBugs) {
  EXPECT_DEATH(SplitIntoChunks(10, 0), "positive chunk size");
  EXPECT_DEATH(EvenBlock(10, 3, 3), "block 3 of 3 does not exist");
}

}  // namespace
}  // namespace zcoll
