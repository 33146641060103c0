#include "testing/reference.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
Bytes ToBytes(const std::vector<T>& values) {
  Bytes bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> FromBytes(const Bytes& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

TEST(ReferenceTest, ReduceFoldsInRankOrder) {
  const RankBytes inputs = {ToBytes<int64_t>({1, 4}), ToBytes<int64_t>({2, 5}),
                            ToBytes<int64_t>({3, 6})};
  absl::StatusOr<Bytes> digits = ReferenceReduce(DigitsInRankOrder(), DataType::kInt64, inputs, 2);
  ASSERT_TRUE(digits.ok()) << digits.status();
  EXPECT_THAT(FromBytes<int64_t>(*digits), ElementsAre(123, 456));
  absl::StatusOr<Bytes> sum = ReferenceReduce(PredefinedOp::kSum, DataType::kInt64, inputs, 2);
  EXPECT_THAT(FromBytes<int64_t>(*sum), ElementsAre(6, 15));
}

TEST(ReferenceTest, AverageSumsThenDividesOnce) {
  const RankBytes inputs = {ToBytes<double>({1.0}), ToBytes<double>({2.0}), ToBytes<double>({6.0})};
  absl::StatusOr<Bytes> mean = ReferenceReduce(PredefinedOp::kAvg, DataType::kDouble, inputs, 1);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_THAT(FromBytes<double>(*mean), ElementsAre(3.0));
}

TEST(ReferenceTest, MinlocTiesGoToTheLowestIndex) {
  struct FloatInt {
    float value;
    int index;
  };
  RankBytes inputs;
  for (int rank = 0; rank < 3; ++rank) {
    const FloatInt pair{rank == 0 ? 2.0f : 1.0f, 10 - rank};  // ranks 1 and 2 tie
    inputs.push_back(Bytes(reinterpret_cast<const char*>(&pair),
                           reinterpret_cast<const char*>(&pair) + sizeof(pair)));
  }
  absl::StatusOr<Bytes> minloc =
      ReferenceReduce(PredefinedOp::kMinloc, DataType::kFloatInt, inputs, 1);
  ASSERT_TRUE(minloc.ok()) << minloc.status();
  FloatInt result;
  std::memcpy(&result, minloc->data(), sizeof(result));
  EXPECT_EQ(result.value, 1.0f);
  EXPECT_EQ(result.index, 8);
}

TEST(ReferenceTest, ReduceScatterHandsOutConsecutiveSlicesWithZeros) {
  const RankBytes inputs = {ToBytes<int32_t>({1, 2, 3, 4}), ToBytes<int32_t>({10, 20, 30, 40}),
                            ToBytes<int32_t>({100, 200, 300, 400})};
  const size_t counts[] = {1, 0, 3};
  absl::StatusOr<RankBytes> slices =
      ReferenceReduceScatter(PredefinedOp::kSum, DataType::kInt32, inputs, counts);
  ASSERT_TRUE(slices.ok()) << slices.status();
  EXPECT_THAT(FromBytes<int32_t>((*slices)[0]), ElementsAre(111));
  EXPECT_TRUE((*slices)[1].empty());
  EXPECT_THAT(FromBytes<int32_t>((*slices)[2]), ElementsAre(222, 333, 444));
}

TEST(ReferenceTest, ScattervAndGathervAreInverse) {
  const Bytes root = ToBytes<int32_t>({0, 1, 2, 3, 4, 5});
  const size_t counts[] = {2, 0, 3}, displs[] = {4, 0, 1};
  absl::StatusOr<RankBytes> scattered = ReferenceScatterv(DataType::kInt32, root, counts, displs);
  ASSERT_TRUE(scattered.ok()) << scattered.status();
  EXPECT_THAT(FromBytes<int32_t>((*scattered)[0]), ElementsAre(4, 5));
  EXPECT_TRUE((*scattered)[1].empty());
  EXPECT_THAT(FromBytes<int32_t>((*scattered)[2]), ElementsAre(1, 2, 3));
  absl::StatusOr<Bytes> gathered = ReferenceGatherv(DataType::kInt32, *scattered, counts, displs,
                                                    ToBytes<int32_t>({-1, -1, -1, -1, -1, -1}));
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  // Element 0 was in no slice and keeps its initial value.
  EXPECT_THAT(FromBytes<int32_t>(*gathered), ElementsAre(-1, 1, 2, 3, 4, 5));
}

TEST(ReferenceTest, AlltoallTransposesBlocks) {
  const RankBytes inputs = {ToBytes<int32_t>({0, 1}), ToBytes<int32_t>({10, 11})};
  absl::StatusOr<RankBytes> exchanged = ReferenceAlltoall(DataType::kInt32, inputs, 1);
  ASSERT_TRUE(exchanged.ok()) << exchanged.status();
  EXPECT_THAT(FromBytes<int32_t>((*exchanged)[0]), ElementsAre(0, 10));
  EXPECT_THAT(FromBytes<int32_t>((*exchanged)[1]), ElementsAre(1, 11));
}

TEST(ReferenceTest, ScanAndExscanArePrefixesInRankOrder) {
  const RankBytes inputs = {ToBytes<int64_t>({1}), ToBytes<int64_t>({2}), ToBytes<int64_t>({3})};
  absl::StatusOr<RankBytes> scan =
      ReferenceScan(DigitsInRankOrder(), DataType::kInt64, inputs, 1, /*exclusive=*/false);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_THAT(FromBytes<int64_t>((*scan)[0]), ElementsAre(1));
  EXPECT_THAT(FromBytes<int64_t>((*scan)[1]), ElementsAre(12));
  EXPECT_THAT(FromBytes<int64_t>((*scan)[2]), ElementsAre(123));
  absl::StatusOr<RankBytes> exscan =
      ReferenceScan(DigitsInRankOrder(), DataType::kInt64, inputs, 1, /*exclusive=*/true);
  ASSERT_TRUE(exscan.ok()) << exscan.status();
  EXPECT_TRUE((*exscan)[0].empty());
  EXPECT_THAT(FromBytes<int64_t>((*exscan)[1]), ElementsAre(1));
  EXPECT_THAT(FromBytes<int64_t>((*exscan)[2]), ElementsAre(12));
}

TEST(ReferenceTest, ZeroCountsAndBadArguments) {
  const RankBytes empty = {Bytes(), Bytes()};
  absl::StatusOr<Bytes> nothing = ReferenceReduce(PredefinedOp::kSum, DataType::kFloat, empty, 0);
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(nothing->empty());
  EXPECT_THAT(ReferenceReduce(PredefinedOp::kSum, DataType::kFloat, empty, 1).status().message(),
              HasSubstr("rank 0 has 0 bytes"));
  EXPECT_EQ(ReferenceReduce(PredefinedOp::kSum, DataType::kFloat, {}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  const size_t one_count[] = {1};
  EXPECT_THAT(ReferenceReduceScatter(PredefinedOp::kSum, DataType::kFloat, empty, one_count)
                  .status()
                  .message(),
              HasSubstr("1 counts for 2 ranks"));
  const size_t counts[] = {2}, displs[] = {5};
  EXPECT_THAT(ReferenceScatterv(DataType::kInt32, ToBytes<int32_t>({1, 2, 3}), counts, displs)
                  .status()
                  .message(),
              HasSubstr("outside the root's 3 elements"));
}

}  // namespace
}  // namespace zcoll::testing
