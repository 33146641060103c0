#include "collectives/schedule_builder.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<StepId> DepsOf(const Schedule& schedule, StepId step) {
  const auto& deps = schedule.step(step).deps;
  return std::vector<StepId>(deps.begin(), deps.end());
}

// A step waits for the last writer of what it reads or writes, and a write waits for
// the reads since; steps on other elements wait for nothing.
TEST(ScheduleBuilderTest, DependenciesFollowTheElementsTouched) {
  ScheduleBuilder builder(0, 2, 8, 8);
  const StepId receive = builder.Recv(1, 0, {BufferId::Recv(), 0, 4});
  const StepId other = builder.Send(1, 1, {BufferId::Send(), 4, 4});
  const StepId send_on = builder.Send(1, 2, {BufferId::Recv(), 2, 2});
  const StepId overwrite = builder.Recv(1, 3, {BufferId::Recv(), 3, 1});
  const Schedule schedule = std::move(builder).Finish();
  EXPECT_THAT(DepsOf(schedule, receive), IsEmpty());
  EXPECT_THAT(DepsOf(schedule, other), IsEmpty());
  EXPECT_THAT(DepsOf(schedule, send_on), ElementsAre(receive));
  EXPECT_THAT(DepsOf(schedule, overwrite), ElementsAre(receive, send_on));
}

// A write waits for every read since the last write of what it overwrites, also where
// a segment was read whole and then split (its halves keep the earlier readers), and
// a write restarts its elements' readers.
TEST(ScheduleBuilderTest, WritesWaitForEveryReadSince) {
  ScheduleBuilder builder(0, 2, 8, 8);
  const StepId receive = builder.Recv(1, 0, {BufferId::Recv(), 0, 8});
  const StepId whole = builder.Send(1, 1, {BufferId::Recv(), 0, 8});
  const StepId low = builder.Send(1, 2, {BufferId::Recv(), 0, 4});
  const StepId high = builder.Send(1, 3, {BufferId::Recv(), 4, 4});
  const StepId low_again = builder.Send(1, 4, {BufferId::Recv(), 0, 4});
  const StepId middle = builder.Recv(1, 5, {BufferId::Recv(), 2, 4});
  const StepId all = builder.Send(1, 6, {BufferId::Recv(), 0, 8});
  const StepId top = builder.Recv(1, 7, {BufferId::Recv(), 6, 2});
  const StepId rewrite = builder.Recv(1, 8, {BufferId::Recv(), 3, 2});
  const Schedule schedule = std::move(builder).Finish();
  EXPECT_THAT(DepsOf(schedule, low), ElementsAre(receive));
  EXPECT_THAT(DepsOf(schedule, middle), ElementsAre(receive, whole, low, high, low_again));
  EXPECT_THAT(DepsOf(schedule, all), ElementsAre(receive, middle));
  EXPECT_THAT(DepsOf(schedule, top), ElementsAre(receive, whole, high, all));
  EXPECT_THAT(DepsOf(schedule, rewrite), ElementsAre(middle, all));
}

// StartAfter: a step with nothing else to wait for since the call waits for the gate;
// one that waits for a step emitted since waits for the gate through it (no extra
// dependency); kNoStep ends the gating.
TEST(ScheduleBuilderTest, StartAfterGatesTheStepsEmittedSince) {
  ScheduleBuilder builder(0, 2, 8, 8);
  const StepId gate = builder.Recv(1, 0, {BufferId::Recv(), 0, 4});
  const StepId before = builder.Recv(1, 1, {BufferId::Recv(), 6, 2});
  builder.StartAfter(gate);
  const StepId first = builder.Send(1, 2, {BufferId::Send(), 0, 4});
  const StepId follows_first = builder.Recv(1, 3, {BufferId::Recv(), 4, 2});
  const StepId also_follows = builder.Send(1, 4, {BufferId::Recv(), 4, 2});
  const StepId after_old_step = builder.Send(1, 5, {BufferId::Recv(), 6, 2});
  builder.StartAfter(ScheduleBuilder::kNoStep);
  const StepId ungated = builder.Send(1, 6, {BufferId::Send(), 6, 2});
  const Schedule schedule = std::move(builder).Finish();
  EXPECT_THAT(DepsOf(schedule, before), IsEmpty());
  EXPECT_THAT(DepsOf(schedule, first), ElementsAre(gate));
  EXPECT_THAT(DepsOf(schedule, follows_first), ElementsAre(gate));
  EXPECT_THAT(DepsOf(schedule, also_follows), ElementsAre(follows_first));
  // Its only other dependency came before the call.
  EXPECT_THAT(DepsOf(schedule, after_old_step), ElementsAre(gate, before));
  EXPECT_THAT(DepsOf(schedule, ungated), IsEmpty());
}

}  // namespace
}  // namespace zcoll
