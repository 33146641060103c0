#include "core/datatype.h"

#include <complex>
#include <cstddef>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;

// NOLINTBEGIN(runtime/int): the C names are what is being tested.

// Each entry against the C type it stands for.
template <typename C>
void ExpectLayout(DataType type) {
  const DataTypeInfo& info = GetDataTypeInfo(type);
  EXPECT_EQ(info.type, type);
  EXPECT_EQ(info.size, sizeof(C)) << info.name;
  EXPECT_EQ(info.alignment, alignof(C)) << info.name;
}

TEST(DataTypeTest, SizesAndAlignmentsMatchTheCTypes) {
  ExpectLayout<int8_t>(DataType::kInt8);
  ExpectLayout<int16_t>(DataType::kInt16);
  ExpectLayout<int32_t>(DataType::kInt32);
  ExpectLayout<int64_t>(DataType::kInt64);
  ExpectLayout<uint8_t>(DataType::kUint8);
  ExpectLayout<uint16_t>(DataType::kUint16);
  ExpectLayout<uint32_t>(DataType::kUint32);
  ExpectLayout<uint64_t>(DataType::kUint64);
  ExpectLayout<signed char>(DataType::kSignedChar);
  ExpectLayout<unsigned char>(DataType::kUnsignedChar);
  ExpectLayout<short>(DataType::kShort);
  ExpectLayout<unsigned short>(DataType::kUnsignedShort);
  ExpectLayout<int>(DataType::kInt);
  ExpectLayout<unsigned>(DataType::kUnsigned);
  ExpectLayout<long>(DataType::kLong);
  ExpectLayout<unsigned long>(DataType::kUnsignedLong);
  ExpectLayout<long long>(DataType::kLongLong);
  ExpectLayout<unsigned long long>(DataType::kUnsignedLongLong);
  ExpectLayout<int64_t>(DataType::kAint);
  ExpectLayout<int64_t>(DataType::kOffset);
  ExpectLayout<int64_t>(DataType::kCount);
  ExpectLayout<float>(DataType::kFloat);
  ExpectLayout<double>(DataType::kDouble);
  ExpectLayout<long double>(DataType::kLongDouble);
  ExpectLayout<uint16_t>(DataType::kFloat16);
  ExpectLayout<uint16_t>(DataType::kBfloat16);
  ExpectLayout<std::complex<float>>(DataType::kCFloatComplex);
  ExpectLayout<std::complex<double>>(DataType::kCDoubleComplex);
  ExpectLayout<std::complex<long double>>(DataType::kCLongDoubleComplex);
  ExpectLayout<bool>(DataType::kCBool);
  ExpectLayout<unsigned char>(DataType::kByte);
  ExpectLayout<char>(DataType::kChar);
  ExpectLayout<wchar_t>(DataType::kWchar);
  ExpectLayout<FloatInt>(DataType::kFloatInt);
  ExpectLayout<DoubleInt>(DataType::kDoubleInt);
  ExpectLayout<LongInt>(DataType::kLongInt);
  ExpectLayout<TwoInt>(DataType::k2Int);
  ExpectLayout<ShortInt>(DataType::kShortInt);
  ExpectLayout<LongDoubleInt>(DataType::kLongDoubleInt);
}

TEST(DataTypeTest, PairLayoutsMatchTheStandardsStructs) {
  // MPI_FLOAT_INT is struct { float; int; } and likewise for the others.
  struct LongDoubleIntC {
    long double value;
    int index;
  };
  struct ShortIntC {
    short value;
    int index;
  };
  EXPECT_EQ(GetDataTypeInfo(DataType::kLongDoubleInt).size, sizeof(LongDoubleIntC));
  EXPECT_EQ(GetDataTypeInfo(DataType::kLongDoubleInt).pair_index_offset,
            offsetof(LongDoubleIntC, index));
  EXPECT_EQ(GetDataTypeInfo(DataType::kShortInt).size, sizeof(ShortIntC));
  EXPECT_EQ(GetDataTypeInfo(DataType::kShortInt).pair_index_offset, offsetof(ShortIntC, index));
  EXPECT_EQ(GetDataTypeInfo(DataType::kFloatInt).pair_value, DataType::kFloat);
  EXPECT_EQ(GetDataTypeInfo(DataType::kDoubleInt).pair_value, DataType::kDouble);
  EXPECT_EQ(GetDataTypeInfo(DataType::kLongInt).pair_value, DataType::kLong);
  EXPECT_EQ(GetDataTypeInfo(DataType::k2Int).pair_value, DataType::kInt);
  EXPECT_EQ(GetDataTypeInfo(DataType::kShortInt).pair_value, DataType::kShort);
  EXPECT_EQ(GetDataTypeInfo(DataType::kLongDoubleInt).pair_value, DataType::kLongDouble);
  for (DataType type : AllDataTypes()) {
    const DataTypeInfo& info = GetDataTypeInfo(type);
    if (info.group != DataTypeGroup::kPair) continue;
    EXPECT_EQ(info.pair_index_offset + sizeof(int) <= info.size, true) << info.name;
    EXPECT_GE(info.pair_index_offset, DataTypeSize(info.pair_value)) << info.name;
  }
}

TEST(DataTypeTest, GroupsFollowTheStandard) {
  auto group = [](DataType type) { return GetDataTypeInfo(type).group; };
  for (DataType type :
       {DataType::kInt8, DataType::kUint64, DataType::kSignedChar, DataType::kUnsignedChar,
        DataType::kShort, DataType::kInt, DataType::kUnsignedLong, DataType::kLongLong}) {
    EXPECT_EQ(group(type), DataTypeGroup::kCInteger) << DataTypeName(type);
  }
  EXPECT_EQ(group(DataType::kAint), DataTypeGroup::kMultiLanguageInteger);
  EXPECT_EQ(group(DataType::kOffset), DataTypeGroup::kMultiLanguageInteger);
  EXPECT_EQ(group(DataType::kCount), DataTypeGroup::kMultiLanguageInteger);
  EXPECT_EQ(group(DataType::kLongDouble), DataTypeGroup::kFloatingPoint);
  EXPECT_EQ(group(DataType::kFloat16), DataTypeGroup::kFloatingPoint);
  EXPECT_EQ(group(DataType::kBfloat16), DataTypeGroup::kFloatingPoint);
  EXPECT_EQ(group(DataType::kCDoubleComplex), DataTypeGroup::kComplex);
  EXPECT_EQ(group(DataType::kCBool), DataTypeGroup::kLogical);
  EXPECT_EQ(group(DataType::kByte), DataTypeGroup::kByte);
  EXPECT_EQ(group(DataType::kChar), DataTypeGroup::kCharacter);
  EXPECT_EQ(group(DataType::kWchar), DataTypeGroup::kCharacter);
  EXPECT_EQ(group(DataType::k2Int), DataTypeGroup::kPair);
}

TEST(DataTypeTest, CanonicalTypesShareTheRepresentation) {
  for (DataType type : AllDataTypes()) {
    const DataTypeInfo& info = GetDataTypeInfo(type);
    const DataTypeInfo& canonical = GetDataTypeInfo(info.canonical);
    EXPECT_EQ(canonical.size, info.size) << info.name;
    EXPECT_EQ(GetDataTypeInfo(info.canonical).canonical, info.canonical)
        << info.name << ": canonical types are their own canonical type";
    if (info.group == DataTypeGroup::kCInteger ||
        info.group == DataTypeGroup::kMultiLanguageInteger) {
      EXPECT_EQ(canonical.is_signed, info.is_signed) << info.name;
      EXPECT_EQ(canonical.group, DataTypeGroup::kCInteger) << info.name;
    }
  }
  EXPECT_EQ(GetDataTypeInfo(DataType::kInt).canonical, DataType::kInt32);
  EXPECT_EQ(GetDataTypeInfo(DataType::kUnsignedChar).canonical, DataType::kUint8);
  EXPECT_EQ(GetDataTypeInfo(DataType::kLong).canonical, DataType::kInt64);
  EXPECT_EQ(GetDataTypeInfo(DataType::kUnsignedLongLong).canonical, DataType::kUint64);
  EXPECT_EQ(GetDataTypeInfo(DataType::kAint).canonical, DataType::kInt64);
  EXPECT_EQ(GetDataTypeInfo(DataType::kByte).canonical, DataType::kUint8);
  EXPECT_EQ(GetDataTypeInfo(DataType::kFloat).canonical, DataType::kFloat);
  EXPECT_EQ(GetDataTypeInfo(DataType::kDoubleInt).canonical, DataType::kDoubleInt);
}

TEST(DataTypeTest, SignednessOfIntegersAndFloats) {
  EXPECT_TRUE(GetDataTypeInfo(DataType::kInt8).is_signed);
  EXPECT_FALSE(GetDataTypeInfo(DataType::kUint8).is_signed);
  EXPECT_FALSE(GetDataTypeInfo(DataType::kUnsigned).is_signed);
  EXPECT_TRUE(GetDataTypeInfo(DataType::kFloat16).is_signed);
  EXPECT_TRUE(GetDataTypeInfo(DataType::kDouble).is_signed);
  EXPECT_FALSE(GetDataTypeInfo(DataType::kByte).is_signed);
}

TEST(DataTypeTest, NamesAreUniqueAndParseBack) {
  std::set<std::string> names, mpi_names;
  EXPECT_EQ(AllDataTypes().size(), kNumDataTypes);
  for (DataType type : AllDataTypes()) {
    const DataTypeInfo& info = GetDataTypeInfo(type);
    EXPECT_TRUE(names.insert(std::string(info.name)).second) << info.name;
    ASSERT_TRUE(ParseDataType(info.name).ok()) << info.name;
    EXPECT_EQ(*ParseDataType(info.name), type);
    if (type == DataType::kFloat16 || type == DataType::kBfloat16) {
      EXPECT_TRUE(info.mpi_name.empty()) << "extensions have no MPI name";
      continue;
    }
    EXPECT_TRUE(mpi_names.insert(std::string(info.mpi_name)).second) << info.mpi_name;
    EXPECT_EQ(*ParseDataType(info.mpi_name), type);
  }
  EXPECT_EQ(*ParseDataType("mpi_double_int"), DataType::kDoubleInt);
}

TEST(DataTypeTest, UnknownNameListsTheChoices) {
  absl::StatusOr<DataType> type = ParseDataType("quaternion");
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(type.status().message(), HasSubstr("unknown datatype 'quaternion'"));
  EXPECT_THAT(type.status().message(), HasSubstr("bfloat16"));
}

TEST(DataTypeTest, CppTypesMapToDataTypes) {
  static_assert(kDataTypeOf<float> == DataType::kFloat);
  static_assert(kDataTypeOf<const double> == DataType::kDouble);
  static_assert(kDataTypeOf<int> == DataType::kInt32);
  static_assert(kDataTypeOf<long> == DataType::kInt64);
  static_assert(kDataTypeOf<long long> == DataType::kLongLong);
  static_assert(kDataTypeOf<unsigned char> == DataType::kUint8);
  static_assert(kDataTypeOf<char> == DataType::kChar);
  static_assert(kDataTypeOf<bool> == DataType::kCBool);
  static_assert(kDataTypeOf<std::byte> == DataType::kByte);
  static_assert(kDataTypeOf<Bfloat16> == DataType::kBfloat16);
  static_assert(kDataTypeOf<std::complex<float>> == DataType::kCFloatComplex);
  static_assert(kDataTypeOf<TwoInt> == DataType::k2Int);
  static_assert(kDataTypeOf<LongDoubleInt> == DataType::kLongDoubleInt);
  // Each mapped C++ type has the size its DataType declares.
  EXPECT_EQ(DataTypeSize(kDataTypeOf<long long>), sizeof(long long));
  EXPECT_EQ(DataTypeSize(kDataTypeOf<wchar_t>), sizeof(wchar_t));
  EXPECT_EQ(DataTypeSize(kDataTypeOf<Float16>), sizeof(Float16));
  EXPECT_EQ(DataTypeSize(kDataTypeOf<DoubleInt>), sizeof(DoubleInt));
}

// NOLINTEND(runtime/int)

}  // namespace
}  // namespace zcoll
