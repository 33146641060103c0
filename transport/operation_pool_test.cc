#include "transport/operation_pool.h"

#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

struct Record {
  int value = 0;
  Record* pool_previous = nullptr;
  Record* pool_next = nullptr;
};

std::set<int> LiveValues(OperationPool<Record>& pool) {
  std::set<int> values;
  pool.ForEachLive([&](Record* record) { values.insert(record->value); });
  return values;
}

TEST(OperationPoolTest, ReleasedRecordsAreReusedAndReset) {
  OperationPool<Record> pool;
  Record* first = pool.Acquire();
  first->value = 7;
  pool.Release(first);
  Record* again = pool.Acquire();
  EXPECT_EQ(again, first) << "the released record is reused";
  EXPECT_EQ(again->value, 0) << "and reset";
  EXPECT_EQ(pool.live_count(), 1u);
}

TEST(OperationPoolTest, LiveRecordsCanBeWalkedAndReleasedWhileWalking) {
  OperationPool<Record> pool;
  std::vector<Record*> records;
  for (int i = 0; i < 6; ++i) {
    records.push_back(pool.Acquire());
    records.back()->value = i;
  }
  pool.Release(records[0]);  // head of the free list, tail of the live list
  pool.Release(records[5]);  // head of the live list
  pool.Release(records[2]);  // the middle
  EXPECT_THAT(LiveValues(pool), ::testing::ElementsAre(1, 3, 4));
  pool.ForEachLive([&](Record* record) {
    if (record->value % 2 == 1) pool.Release(record);
  });
  EXPECT_THAT(LiveValues(pool), ::testing::ElementsAre(4));
  EXPECT_EQ(pool.live_count(), 1u);
}

}  // namespace
}  // namespace zcoll
