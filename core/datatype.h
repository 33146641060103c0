// The element types a zcoll collective can move or reduce.
//
// DataType names every predefined MPI datatype that a collective or a reduction can
// take in C and C++ (MPI-4.1 section 3.2.2 and the MPI-2.2 change log items 4 and 11),
// plus two ML extensions, IEEE binary16 (float16) and bfloat16. GetDataTypeInfo()
// describes each one: size, alignment, names, and the group that decides which
// predefined reduction ops it accepts (core/reduce_op.h holds that table).
//
// Several C names share one representation (int and int32, long and int64 on LP64,
// MPI_AINT and int64, ...). Info().canonical names the fixed-width type with the same
// bits and the same arithmetic, so kernels are instantiated once per representation;
// whether an op is *allowed* is always decided on the type the user passed (MPI_CHAR
// and MPI_SIGNED_CHAR share a representation but only the latter may be reduced).
//
// Not covered: Fortran types (zcoll has C and C++ bindings only), MPI_PACKED and
// derived datatypes (zcoll moves contiguous typed buffers).

#ifndef ZCOLL_CORE_DATATYPE_H_
#define ZCOLL_CORE_DATATYPE_H_

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zcoll {

enum class DataType : uint8_t {
  // C integer, fixed width (MPI_INT8_T ... MPI_UINT64_T).
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  // C integer, by C name (MPI_SIGNED_CHAR ... MPI_UNSIGNED_LONG_LONG).
  kSignedChar,
  kUnsignedChar,
  kShort,
  kUnsignedShort,
  kInt,
  kUnsigned,
  kLong,
  kUnsignedLong,
  kLongLong,
  kUnsignedLongLong,
  // Multi-language integers (MPI_AINT, MPI_OFFSET, MPI_COUNT); for reductions the
  // standard treats them as Fortran integers.
  kAint,
  kOffset,
  kCount,
  // Floating point.
  kFloat,
  kDouble,
  kLongDouble,
  // Extensions (not MPI): 16-bit floats for ML workloads.
  kFloat16,
  kBfloat16,
  // Complex (MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX).
  kCFloatComplex,
  kCDoubleComplex,
  kCLongDoubleComplex,
  // Logical (MPI_C_BOOL).
  kCBool,
  // Byte (MPI_BYTE).
  kByte,
  // Characters (MPI_CHAR, MPI_WCHAR): moved by collectives, never reduced by a
  // predefined op (MPI-2.2 change log item 3).
  kChar,
  kWchar,
  // Value-index pairs for MINLOC and MAXLOC (MPI_FLOAT_INT ... MPI_LONG_DOUBLE_INT).
  kFloatInt,
  kDoubleInt,
  kLongInt,
  k2Int,
  kShortInt,
  kLongDoubleInt,
};

inline constexpr size_t kNumDataTypes = static_cast<size_t>(DataType::kLongDoubleInt) + 1;

// False for values outside the enum, e.g. an integer cast to DataType. Every
// function taking a DataType requires a valid one, except those that return a
// Status, which refuse invalid ones.
constexpr bool IsValidDataType(DataType type) { return static_cast<size_t>(type) < kNumDataTypes; }

// The datatype groups of the MPI standard's op table (MPI-4.1 section 6.9.2).
enum class DataTypeGroup : uint8_t {
  kCInteger,
  kMultiLanguageInteger,  // reduced like a Fortran integer
  kFloatingPoint,         // includes the float16 and bfloat16 extensions
  kComplex,
  kLogical,
  kByte,
  kCharacter,  // never reduced by a predefined op
  kPair,       // only MINLOC and MAXLOC
};

struct DataTypeInfo {
  DataType type;
  absl::string_view name;      // zcoll's name: "int32", "float", "double_int", ...
  absl::string_view mpi_name;  // "MPI_INT32_T"; empty for the extensions
  DataTypeGroup group;
  size_t size;       // bytes per element, padding included (the MPI extent)
  size_t alignment;  // alignment of the C type
  // Fixed-width type with the same representation and arithmetic; the type itself
  // for floating, complex, logical and pair types.
  DataType canonical;
  bool is_signed;  // integers and floating types; false otherwise
  // Pair types only: the value's type and the byte offset of the int index.
  DataType pair_value;
  size_t pair_index_offset;
};

namespace datatype_internal {
// The table GetDataTypeInfo reads, indexed by DataType (datatype.cc).
extern const std::array<DataTypeInfo, kNumDataTypes> kDataTypeInfos;
}  // namespace datatype_internal

// Properties of `type`, which must be valid. (Inline: every call checks its type.)
inline const DataTypeInfo& GetDataTypeInfo(DataType type) {
  return datatype_internal::kDataTypeInfos[static_cast<size_t>(type)];
}

inline size_t DataTypeSize(DataType type) { return GetDataTypeInfo(type).size; }
inline absl::string_view DataTypeName(DataType type) { return GetDataTypeInfo(type).name; }

// Every DataType, in declaration order.
absl::Span<const DataType> AllDataTypes();

// "C integer", "floating point", ...
absl::string_view DataTypeGroupName(DataTypeGroup group);

// Looks a type up by zcoll name ("int32", "double_int") or MPI name ("MPI_INT",
// "MPI_DOUBLE_INT"); InvalidArgument listing the accepted names otherwise.
absl::StatusOr<DataType> ParseDataType(absl::string_view name);

// Storage types of the extensions. zcoll moves their bits; ops/ converts them.
struct Float16 {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

// The C layout of the MINLOC/MAXLOC pair types: `struct { T value; int index; }`.
template <typename T>
struct ValueIndex {
  T value;
  int index;
};
using FloatInt = ValueIndex<float>;
using DoubleInt = ValueIndex<double>;
using LongInt = ValueIndex<long>;  // NOLINT(runtime/int): MPI_LONG_INT is C long.
using TwoInt = ValueIndex<int>;
using ShortInt = ValueIndex<short>;  // NOLINT(runtime/int): MPI_SHORT_INT is C short.
using LongDoubleInt = ValueIndex<long double>;

namespace internal_datatype {
template <typename T>
inline constexpr bool kNoDataType = false;

// int8_t..int64_t are signed char, short, int and long on LP64, so those C names map
// to the fixed-width types; long long stays distinct, as it is in C++.
template <typename T>
constexpr DataType DataTypeOf() {
  // NOLINTBEGIN(runtime/int): the C names are the point here.
  if constexpr (std::is_same_v<T, int8_t>)
    return DataType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::kUint8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DataType::kUint16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DataType::kUint32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DataType::kUint64;
  else if constexpr (std::is_same_v<T, long long>)
    return DataType::kLongLong;
  else if constexpr (std::is_same_v<T, unsigned long long>)
    return DataType::kUnsignedLongLong;
  else if constexpr (std::is_same_v<T, float>)
    return DataType::kFloat;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::kDouble;
  else if constexpr (std::is_same_v<T, long double>)
    return DataType::kLongDouble;
  else if constexpr (std::is_same_v<T, Float16>)
    return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, Bfloat16>)
    return DataType::kBfloat16;
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return DataType::kCFloatComplex;
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return DataType::kCDoubleComplex;
  else if constexpr (std::is_same_v<T, std::complex<long double>>)
    return DataType::kCLongDoubleComplex;
  else if constexpr (std::is_same_v<T, bool>)
    return DataType::kCBool;
  else if constexpr (std::is_same_v<T, std::byte>)
    return DataType::kByte;
  else if constexpr (std::is_same_v<T, char>)
    return DataType::kChar;
  else if constexpr (std::is_same_v<T, wchar_t>)
    return DataType::kWchar;
  else if constexpr (std::is_same_v<T, FloatInt>)
    return DataType::kFloatInt;
  else if constexpr (std::is_same_v<T, DoubleInt>)
    return DataType::kDoubleInt;
  else if constexpr (std::is_same_v<T, LongInt>)
    return DataType::kLongInt;
  else if constexpr (std::is_same_v<T, TwoInt>)
    return DataType::k2Int;
  else if constexpr (std::is_same_v<T, ShortInt>)
    return DataType::kShortInt;
  else if constexpr (std::is_same_v<T, LongDoubleInt>)
    return DataType::kLongDoubleInt;
  else
    static_assert(kNoDataType<T>, "this C++ type has no zcoll::DataType");
  // NOLINTEND(runtime/int)
}
}  // namespace internal_datatype

// The DataType of a C++ element type, for the typed conveniences:
//   comm.Allreduce(absl::Span<const float>(...), ...) uses kDataTypeOf<float>.
template <typename T>
inline constexpr DataType kDataTypeOf = internal_datatype::DataTypeOf<std::remove_cv_t<T>>();

}  // namespace zcoll

#endif  // ZCOLL_CORE_DATATYPE_H_
