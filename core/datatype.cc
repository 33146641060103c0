#include "core/datatype.h"

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zcoll {
namespace {

// The fixed-width integer type with C type `C`'s size and signedness.
template <typename C>
constexpr DataType FixedWidthInteger() {
  static_assert(std::is_integral_v<C>);
  constexpr bool kSigned = std::is_signed_v<C>;
  switch (sizeof(C)) {
    case 1:
      return kSigned ? DataType::kInt8 : DataType::kUint8;
    case 2:
      return kSigned ? DataType::kInt16 : DataType::kUint16;
    case 4:
      return kSigned ? DataType::kInt32 : DataType::kUint32;
    default:
      static_assert(sizeof(C) <= 8, "integers wider than 64 bits are not supported");
      return kSigned ? DataType::kInt64 : DataType::kUint64;
  }
}

// Describes a type whose C layout is `C`; `canonical` defaults to the type itself.
template <typename C>
constexpr DataTypeInfo Describe(DataType type, absl::string_view name, absl::string_view mpi_name,
                                DataTypeGroup group, DataType canonical) {
  return DataTypeInfo{
      .type = type,
      .name = name,
      .mpi_name = mpi_name,
      .group = group,
      .size = sizeof(C),
      .alignment = alignof(C),
      .canonical = canonical,
      .is_signed = std::is_signed_v<C> || std::is_floating_point_v<C>,
      .pair_value = type,
      .pair_index_offset = 0,
  };
}

template <typename C>
constexpr DataTypeInfo Integer(DataType type, absl::string_view name, absl::string_view mpi_name,
                               DataTypeGroup group) {
  return Describe<C>(type, name, mpi_name, group, FixedWidthInteger<C>());
}

template <typename C>
constexpr DataTypeInfo Itself(DataType type, absl::string_view name, absl::string_view mpi_name,
                              DataTypeGroup group) {
  return Describe<C>(type, name, mpi_name, group, type);
}

constexpr DataTypeInfo HalfFloat(DataType type, absl::string_view name) {
  DataTypeInfo info = Describe<uint16_t>(type, name, "", DataTypeGroup::kFloatingPoint, type);
  info.is_signed = true;
  return info;
}

template <typename V>
constexpr DataTypeInfo Pair(DataType type, DataType value, absl::string_view name,
                            absl::string_view mpi_name) {
  DataTypeInfo info = Describe<ValueIndex<V>>(type, name, mpi_name, DataTypeGroup::kPair, type);
  info.is_signed = false;
  info.pair_value = value;
  info.pair_index_offset = offsetof(ValueIndex<V>, index);
  return info;
}

using G = DataTypeGroup;
using T = DataType;

// NOLINTBEGIN(runtime/int): the C names are the point of this table.
constexpr std::array<DataTypeInfo, kNumDataTypes> kInfos = {{
    Integer<int8_t>(T::kInt8, "int8", "MPI_INT8_T", G::kCInteger),
    Integer<int16_t>(T::kInt16, "int16", "MPI_INT16_T", G::kCInteger),
    Integer<int32_t>(T::kInt32, "int32", "MPI_INT32_T", G::kCInteger),
    Integer<int64_t>(T::kInt64, "int64", "MPI_INT64_T", G::kCInteger),
    Integer<uint8_t>(T::kUint8, "uint8", "MPI_UINT8_T", G::kCInteger),
    Integer<uint16_t>(T::kUint16, "uint16", "MPI_UINT16_T", G::kCInteger),
    Integer<uint32_t>(T::kUint32, "uint32", "MPI_UINT32_T", G::kCInteger),
    Integer<uint64_t>(T::kUint64, "uint64", "MPI_UINT64_T", G::kCInteger),
    Integer<signed char>(T::kSignedChar, "signed_char", "MPI_SIGNED_CHAR", G::kCInteger),
    Integer<unsigned char>(T::kUnsignedChar, "unsigned_char", "MPI_UNSIGNED_CHAR", G::kCInteger),
    Integer<short>(T::kShort, "short", "MPI_SHORT", G::kCInteger),
    Integer<unsigned short>(T::kUnsignedShort, "unsigned_short", "MPI_UNSIGNED_SHORT",
                            G::kCInteger),
    Integer<int>(T::kInt, "int", "MPI_INT", G::kCInteger),
    Integer<unsigned>(T::kUnsigned, "unsigned", "MPI_UNSIGNED", G::kCInteger),
    Integer<long>(T::kLong, "long", "MPI_LONG", G::kCInteger),
    Integer<unsigned long>(T::kUnsignedLong, "unsigned_long", "MPI_UNSIGNED_LONG", G::kCInteger),
    Integer<long long>(T::kLongLong, "long_long", "MPI_LONG_LONG", G::kCInteger),
    Integer<unsigned long long>(T::kUnsignedLongLong, "unsigned_long_long",
                                "MPI_UNSIGNED_LONG_LONG", G::kCInteger),
    // MPI_Aint, MPI_Offset and MPI_Count are signed 64-bit integers in MPICH and Open
    // MPI on LP64 platforms.
    Integer<int64_t>(T::kAint, "aint", "MPI_AINT", G::kMultiLanguageInteger),
    Integer<int64_t>(T::kOffset, "offset", "MPI_OFFSET", G::kMultiLanguageInteger),
    Integer<int64_t>(T::kCount, "count", "MPI_COUNT", G::kMultiLanguageInteger),
    Itself<float>(T::kFloat, "float", "MPI_FLOAT", G::kFloatingPoint),
    Itself<double>(T::kDouble, "double", "MPI_DOUBLE", G::kFloatingPoint),
    Itself<long double>(T::kLongDouble, "long_double", "MPI_LONG_DOUBLE", G::kFloatingPoint),
    HalfFloat(T::kFloat16, "float16"),
    HalfFloat(T::kBfloat16, "bfloat16"),
    Itself<std::complex<float>>(T::kCFloatComplex, "c_float_complex", "MPI_C_FLOAT_COMPLEX",
                                G::kComplex),
    Itself<std::complex<double>>(T::kCDoubleComplex, "c_double_complex", "MPI_C_DOUBLE_COMPLEX",
                                 G::kComplex),
    Itself<std::complex<long double>>(T::kCLongDoubleComplex, "c_long_double_complex",
                                      "MPI_C_LONG_DOUBLE_COMPLEX", G::kComplex),
    Itself<bool>(T::kCBool, "c_bool", "MPI_C_BOOL", G::kLogical),
    Describe<unsigned char>(T::kByte, "byte", "MPI_BYTE", G::kByte, T::kUint8),
    Integer<char>(T::kChar, "char", "MPI_CHAR", G::kCharacter),
    Integer<wchar_t>(T::kWchar, "wchar", "MPI_WCHAR", G::kCharacter),
    Pair<float>(T::kFloatInt, T::kFloat, "float_int", "MPI_FLOAT_INT"),
    Pair<double>(T::kDoubleInt, T::kDouble, "double_int", "MPI_DOUBLE_INT"),
    Pair<long>(T::kLongInt, T::kLong, "long_int", "MPI_LONG_INT"),
    Pair<int>(T::k2Int, T::kInt, "2int", "MPI_2INT"),
    Pair<short>(T::kShortInt, T::kShort, "short_int", "MPI_SHORT_INT"),
    Pair<long double>(T::kLongDoubleInt, T::kLongDouble, "long_double_int", "MPI_LONG_DOUBLE_INT"),
}};
// NOLINTEND(runtime/int)

constexpr bool TableIsIndexedByType() {
  for (size_t i = 0; i < kInfos.size(); ++i) {
    if (static_cast<size_t>(kInfos[i].type) != i) return false;
  }
  return true;
}
static_assert(TableIsIndexedByType(), "kInfos must list DataType values in order");

constexpr std::array<DataType, kNumDataTypes> AllTypesInOrder() {
  std::array<DataType, kNumDataTypes> types{};
  for (size_t i = 0; i < kNumDataTypes; ++i) types[i] = static_cast<DataType>(i);
  return types;
}
constexpr std::array<DataType, kNumDataTypes> kAllTypes = AllTypesInOrder();

}  // namespace

namespace datatype_internal {
const std::array<DataTypeInfo, kNumDataTypes> kDataTypeInfos = kInfos;
}  // namespace datatype_internal

absl::Span<const DataType> AllDataTypes() { return kAllTypes; }

absl::string_view DataTypeGroupName(DataTypeGroup group) {
  switch (group) {
    case DataTypeGroup::kCInteger:
      return "C integer";
    case DataTypeGroup::kMultiLanguageInteger:
      return "multi-language integer";
    case DataTypeGroup::kFloatingPoint:
      return "floating point";
    case DataTypeGroup::kComplex:
      return "complex";
    case DataTypeGroup::kLogical:
      return "logical";
    case DataTypeGroup::kByte:
      return "byte";
    case DataTypeGroup::kCharacter:
      return "character";
    case DataTypeGroup::kPair:
      return "value-index pair";
  }
  return "unknown";
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  for (const DataTypeInfo& info : kInfos) {
    if (name == info.name) return info.type;
    if (!info.mpi_name.empty() && absl::EqualsIgnoreCase(name, info.mpi_name)) {
      return info.type;
    }
  }
  std::vector<std::string> names;
  for (const DataTypeInfo& info : kInfos) names.emplace_back(info.name);
  return absl::InvalidArgumentError(absl::StrCat("unknown datatype '", name, "'; expected one of ",
                                                 absl::StrJoin(names, ", "),
                                                 " (or an MPI name such as MPI_INT)"));
}

}  // namespace zcoll
