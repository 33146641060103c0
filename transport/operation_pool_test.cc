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
  bool pool_live = false;
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

// A visit that ends other records (a cancel whose callbacks end other operations): the
// walk neither follows them into the free list nor visits them.
TEST(OperationPoolTest, VisitMayReleaseOtherRecords) {
  OperationPool<Record> pool;
  std::vector<Record*> records;
  for (int i = 0; i < 6; ++i) {
    records.push_back(pool.Acquire());
    records.back()->value = i;
  }
  pool.Release(records[1]);  // the free list: 1
  std::vector<int> visited;
  pool.ForEachLive([&](Record* record) {
    visited.push_back(record->value);
    // The first visit ends every other even record.
    if (visited.size() == 1) {
      for (int i : {0, 2, 4}) {
        if (records[static_cast<size_t>(i)] != record)
          pool.Release(records[static_cast<size_t>(i)]);
      }
    }
  });
  // Newest first: 5 ends 0, 2 and 4; 3 is still live; nothing released is visited.
  EXPECT_THAT(visited, ::testing::ElementsAre(5, 3));
  EXPECT_EQ(pool.live_count(), 2u);
}

}  // namespace
}  // namespace zcoll
