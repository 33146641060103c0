#include "ops/reduce.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "ops/half.h"
#include "ops/reduce_kernels.h"
#include "testing/sampled_sweeps.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;
using Op = PredefinedOp;

// ------------------------------------------------------------------------------
// The reference: the documented semantics (ops/reduce.h), written as plainly as
// possible, one element at a time.

template <typename T>
T ReferenceScalar(Op op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case Op::kLand:
        return a && b;
      case Op::kLor:
        return a || b;
      case Op::kLxor:
        return a != b;
      default:
        break;
    }
  } else if constexpr (std::is_integral_v<T>) {
    // Arithmetic in an unsigned type at least as wide as unsigned int, so nothing
    // is promoted to a signed int that could overflow; the cast back wraps.
    using U = std::make_unsigned_t<T>;
    using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    const Wide x = static_cast<U>(a), y = static_cast<U>(b);
    switch (op) {
      case Op::kMax:
        return a > b ? a : b;
      case Op::kMin:
        return a < b ? a : b;
      case Op::kSum:
        return static_cast<T>(static_cast<U>(x + y));
      case Op::kProd:
        return static_cast<T>(static_cast<U>(x * y));
      case Op::kLand:
        return (a != 0 && b != 0) ? 1 : 0;
      case Op::kLor:
        return (a != 0 || b != 0) ? 1 : 0;
      case Op::kLxor:
        return ((a != 0) != (b != 0)) ? 1 : 0;
      case Op::kBand:
        return static_cast<T>(x & y);
      case Op::kBor:
        return static_cast<T>(x | y);
      case Op::kBxor:
        return static_cast<T>(x ^ y);
      default:
        break;
    }
  } else {
    switch (op) {
      case Op::kMax:
        return std::isnan(a) ? a : (a > b ? a : b);
      case Op::kMin:
        return std::isnan(a) ? a : (a < b ? a : b);
      case Op::kSum:
      case Op::kAvg:
        return a + b;
      case Op::kProd:
        return a * b;
      default:
        break;
    }
  }
  ADD_FAILURE() << "the reference has no " << PredefinedOpName(op);
  return a;
}

template <typename R>
std::complex<R> ReferenceScalar(Op op, std::complex<R> a, std::complex<R> b) {
  if (op == Op::kSum) return {a.real() + b.real(), a.imag() + b.imag()};
  EXPECT_EQ(op, Op::kProd);
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

template <typename V>
ValueIndex<V> ReferenceScalar(Op op, ValueIndex<V> a, ValueIndex<V> b) {
  const bool max = op == Op::kMaxloc;
  EXPECT_TRUE(max || op == Op::kMinloc);
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a.value) && std::isnan(b.value)) return a.index < b.index ? a : b;
    if (std::isnan(a.value)) return a;
    if (std::isnan(b.value)) return b;
  }
  if (a.value == b.value) return a.index < b.index ? a : b;
  return (a.value > b.value) == max ? a : b;
}

// How a storage type is computed with: 16-bit floats go through float.
template <typename T>
struct Compute {
  using Type = T;
  static T In(T value) { return value; }
  static T Out(T value) { return value; }
};
template <>
struct Compute<Float16> {
  using Type = float;
  static float In(Float16 value) { return Float16ToFloat(value); }
  static Float16 Out(float value) { return FloatToFloat16(value); }
};
template <>
struct Compute<Bfloat16> {
  using Type = float;
  static float In(Bfloat16 value) { return BfloatToFloat(value); }
  static Bfloat16 Out(float value) { return FloatToBfloat(value); }
};

template <typename T>
T ReferenceMany(Op op, const std::vector<T>& operands) {
  using C = Compute<T>;
  auto accumulator = C::In(operands[0]);
  for (size_t j = 1; j < operands.size(); ++j) {
    accumulator = ReferenceScalar(op, accumulator, C::In(operands[j]));
  }
  if constexpr (std::is_floating_point_v<typename C::Type>) {
    if (op == Op::kAvg) accumulator /= static_cast<typename C::Type>(operands.size());
  }
  return C::Out(accumulator);
}

// ------------------------------------------------------------------------------
// Values and comparison.

template <typename F>
bool SameFloat(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

template <typename T>
bool Same(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return SameFloat(a, b);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
    return SameFloat(Compute<T>::In(a), Compute<T>::In(b));
  } else {
    return a == b;
  }
}
template <typename R>
bool Same(const std::complex<R>& a, const std::complex<R>& b) {
  return SameFloat(a.real(), b.real()) && SameFloat(a.imag(), b.imag());
}
template <typename V>
bool Same(const ValueIndex<V>& a, const ValueIndex<V>& b) {
  // The tie rule fixes the index; +0 and -0 compare equal as values.
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a.value) || std::isnan(b.value)) {
      return std::isnan(a.value) && std::isnan(b.value) && a.index == b.index;
    }
  }
  return a.value == b.value && a.index == b.index;
}

template <typename T>
std::string Show(const T& value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
    return absl::StrCat(Compute<T>::In(value), " (0x", absl::Hex(value.bits), ")");
  } else if constexpr (std::is_floating_point_v<T>) {
    return absl::StrCat(static_cast<double>(value));
  } else if constexpr (std::is_integral_v<T>) {
    return absl::StrCat(static_cast<int64_t>(value));
  } else {
    return "(compound value)";
  }
}

template <typename F>
F RandomFloat(std::mt19937_64& random) {
  switch (random() % 24) {
    case 0:
      return std::numeric_limits<F>::quiet_NaN();
    case 1:
      return -std::numeric_limits<F>::infinity();
    case 2:
      return std::numeric_limits<F>::infinity();
    case 3:
      return F(0) * F(-1);  // -0
    case 4:
      return F(0);
    case 5:
      return std::numeric_limits<F>::denorm_min();
    default: {
      const F mantissa = std::uniform_real_distribution<double>(-2.0, 2.0)(random);
      return std::ldexp(mantissa, static_cast<int>(random() % 21) - 10);
    }
  }
}

template <typename T>
T RandomValue(std::mt19937_64& random) {
  if constexpr (std::is_same_v<T, bool>) {
    return random() % 2;
  } else if constexpr (std::is_integral_v<T>) {
    // Half the time small values, so ties, zeros and ordinary products occur.
    return random() % 2 ? static_cast<T>(static_cast<int>(random() % 7) - 3)
                        : static_cast<T>(random());
  } else if constexpr (std::is_floating_point_v<T>) {
    return RandomFloat<T>(random);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16>) {
    // Any bit pattern: NaNs, infinities and subnormals included.
    return T{static_cast<uint16_t>(random())};
  } else if constexpr (std::is_same_v<T, std::byte>) {
    return static_cast<std::byte>(random());
  } else if constexpr (std::is_same_v<T, ValueIndex<float>> ||
                       std::is_same_v<T, ValueIndex<double>> ||
                       std::is_same_v<T, ValueIndex<long double>>) {
    // Few distinct values so that ties are common.
    const int pick = static_cast<int>(random() % 9);
    T pair{};
    pair.value = pick == 8 ? std::numeric_limits<decltype(pair.value)>::quiet_NaN() : pick % 4;
    pair.index = static_cast<int>(random() % 16) - 4;
    return pair;
  } else if constexpr (std::is_same_v<T, LongInt> || std::is_same_v<T, TwoInt> ||
                       std::is_same_v<T, ShortInt>) {
    T pair{};
    pair.value = static_cast<decltype(pair.value)>(random() % 4);
    pair.index = static_cast<int>(random() % 16) - 4;
    return pair;
  } else {
    using R = typename T::value_type;  // std::complex
    return T(RandomFloat<R>(random), RandomFloat<R>(random));
  }
}

// ------------------------------------------------------------------------------
// Buffers: elements live at a chosen byte offset from an aligned allocation, so the
// kernels see unaligned pointers when asked.

template <typename T>
class Buffer {
 public:
  // Elements start `misalignment` bytes after a 64-byte boundary.
  Buffer(size_t count, size_t misalignment) : bytes_(count * sizeof(T) + 128), count_(count) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(bytes_.data());
    offset_ = (64 - address % 64) % 64 + misalignment;
  }
  Buffer(const Buffer& other) : Buffer(other.count_, 0) { *this = other; }
  Buffer& operator=(const Buffer& other) {
    for (size_t i = 0; i < count_; ++i) Set(i, other.Get(i));
    return *this;
  }
  void* data() { return bytes_.data() + offset_; }
  T Get(size_t i) const {
    T value;
    std::memcpy(&value, bytes_.data() + offset_ + i * sizeof(T), sizeof(T));
    return value;
  }
  void Set(size_t i, const T& value) {
    std::memcpy(bytes_.data() + offset_ + i * sizeof(T), &value, sizeof(T));
  }
  void Fill(std::mt19937_64& random) {
    for (size_t i = 0; i < count_; ++i) Set(i, RandomValue<T>(random));
  }
  size_t count() const { return count_; }

 private:
  std::vector<unsigned char> bytes_;
  size_t offset_;
  size_t count_;
};

// Compares `actual` with the per-element `expected`; reports the first mismatch.
template <typename T>
void ExpectElements(const Buffer<T>& actual, const std::function<T(size_t)>& expected,
                    const std::string& what) {
  for (size_t i = 0; i < actual.count(); ++i) {
    const T want = expected(i);
    if (!Same(actual.Get(i), want)) {
      ADD_FAILURE() << what << ": element " << i << " is " << Show(actual.Get(i)) << ", expected "
                    << Show(want);
      return;
    }
  }
}

// Every count that is one below, at and above a lane count (1..64 lanes) or a
// multiple of four of them (the unrolled loop), and a larger odd one.
const std::vector<size_t>& Counts() {
  static const auto* counts = [] {
    std::set<size_t> unique = {1000};
    for (size_t lanes = 1; lanes <= 256; lanes *= 2) unique.insert({lanes - 1, lanes, lanes + 1});
    return new std::vector<size_t>(unique.begin(), unique.end());
  }();
  return *counts;
}

// Runs every shape of ops/reduce.h for (op, type) against the reference.
template <typename T>
void CheckShapes(Op op, DataType type, size_t count, size_t misalignment, uint64_t seed) {
  const std::string label = absl::StrCat(PredefinedOpName(op), " on ", DataTypeName(type),
                                         ", count ", count, ", misaligned by ", misalignment);
  std::mt19937_64 random(seed);
  Buffer<T> a(count, misalignment), b(count, misalignment), c(count, misalignment),
      d(count, misalignment), e(count, misalignment), out(count, misalignment);
  for (Buffer<T>* buffer : {&a, &b, &c, &d, &e}) buffer->Fill(random);
  const Buffer<T> a0 = a, b0 = b, c0 = c;
  auto pairwise = [&](size_t i) { return ReferenceMany<T>(op, {a0.Get(i), b0.Get(i)}); };

  // ReduceLocal: b = a op b.
  ASSERT_TRUE(ReduceLocal(op, type, a.data(), b.data(), count).ok()) << label;
  ExpectElements<T>(b, pairwise, "ReduceLocal " + label);
  ExpectElements<T>(
      a, [&](size_t i) { return a0.Get(i); }, "ReduceLocal changed `in`: " + label);

  // ReduceTwo into a separate buffer, then in place into the left operand.
  b = b0;
  ASSERT_TRUE(ReduceTwo(op, type, a.data(), b.data(), out.data(), count).ok()) << label;
  ExpectElements<T>(out, pairwise, "ReduceTwo " + label);
  ASSERT_TRUE(ReduceTwo(op, type, a.data(), b.data(), a.data(), count).ok()) << label;
  ExpectElements<T>(a, pairwise, "ReduceTwo into left " + label);
  a = a0;

  // ReduceMany of three into a separate buffer, and of five into its middle input.
  const void* three[] = {a.data(), b.data(), c.data()};
  ASSERT_TRUE(ReduceMany(op, type, three, out.data(), count).ok()) << label;
  ExpectElements<T>(
      out,
      [&](size_t i) {
        return ReferenceMany<T>(op, {a0.Get(i), b0.Get(i), c0.Get(i)});
      },
      "ReduceMany of 3 " + label);
  const Buffer<T> d0 = d, e0 = e;
  const void* five[] = {a.data(), b.data(), c.data(), d.data(), e.data()};
  ASSERT_TRUE(ReduceMany(op, type, five, c.data(), count).ok()) << label;
  ExpectElements<T>(
      c,
      [&](size_t i) {
        return ReferenceMany<T>(op, {a0.Get(i), b0.Get(i), c0.Get(i), d0.Get(i), e0.Get(i)});
      },
      "ReduceMany of 5 into inputs[2] " + label);
}

// Calls `check.template operator()<T>(type)` with T the C++ type of `type`.
template <class Check>
void WithCppType(DataType type, Check&& check) {
  // NOLINTBEGIN(runtime/int)
  switch (type) {
    case DataType::kInt8:
    case DataType::kSignedChar:
    case DataType::kChar:
      return check.template operator()<int8_t>(type);
    case DataType::kInt16:
    case DataType::kShort:
      return check.template operator()<int16_t>(type);
    case DataType::kInt32:
    case DataType::kInt:
    case DataType::kWchar:
      return check.template operator()<int32_t>(type);
    case DataType::kInt64:
    case DataType::kLong:
    case DataType::kLongLong:
    case DataType::kAint:
    case DataType::kOffset:
    case DataType::kCount:
      return check.template operator()<int64_t>(type);
    case DataType::kUint8:
    case DataType::kUnsignedChar:
    case DataType::kByte:
      return check.template operator()<uint8_t>(type);
    case DataType::kUint16:
    case DataType::kUnsignedShort:
      return check.template operator()<uint16_t>(type);
    case DataType::kUint32:
    case DataType::kUnsigned:
      return check.template operator()<uint32_t>(type);
    case DataType::kUint64:
    case DataType::kUnsignedLong:
    case DataType::kUnsignedLongLong:
      return check.template operator()<uint64_t>(type);
    case DataType::kFloat:
      return check.template operator()<float>(type);
    case DataType::kDouble:
      return check.template operator()<double>(type);
    case DataType::kLongDouble:
      return check.template operator()<long double>(type);
    case DataType::kFloat16:
      return check.template operator()<Float16>(type);
    case DataType::kBfloat16:
      return check.template operator()<Bfloat16>(type);
    case DataType::kCFloatComplex:
      return check.template operator()<std::complex<float>>(type);
    case DataType::kCDoubleComplex:
      return check.template operator()<std::complex<double>>(type);
    case DataType::kCLongDoubleComplex:
      return check.template operator()<std::complex<long double>>(type);
    case DataType::kCBool:
      return check.template operator()<bool>(type);
    case DataType::kFloatInt:
      return check.template operator()<FloatInt>(type);
    case DataType::kDoubleInt:
      return check.template operator()<DoubleInt>(type);
    case DataType::kLongInt:
      return check.template operator()<LongInt>(type);
    case DataType::k2Int:
      return check.template operator()<TwoInt>(type);
    case DataType::kShortInt:
      return check.template operator()<ShortInt>(type);
    case DataType::kLongDoubleInt:
      return check.template operator()<LongDoubleInt>(type);
  }
  // NOLINTEND(runtime/int)
  FAIL() << "no C++ type for " << DataTypeName(type);
}

// ------------------------------------------------------------------------------
// Every test runs once per Highway target compiled into zcoll that this CPU supports.

class ReduceOnTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    hwy::SetSupportedTargetsForTest(GetParam());
    ops_internal::ResetDispatchCacheForTest();
    ASSERT_EQ(ReduceKernelTarget(), hwy::TargetName(GetParam()))
        << "the kernels did not switch to the requested target";
  }
  void TearDown() override {
    hwy::SetSupportedTargetsForTest(0);
    ops_internal::ResetDispatchCacheForTest();
  }
};

INSTANTIATE_TEST_SUITE_P(Targets, ReduceOnTarget,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::string(hwy::TargetName(info.param));
                         });

TEST_P(ReduceOnTarget, EveryAllowedOpOnEveryTypeMatchesTheReference) {
  int checked = 0;
  for (DataType type : AllDataTypes()) {
    for (Op op : AllPredefinedOps()) {
      if (!IsOpDefinedFor(op, type)) continue;
      for (size_t count : Counts()) {
        // 8 bytes off: element-aligned but not vector-aligned, so the kernels peel a
        // head to align their main loop; 1 byte off: not even element-aligned.
        for (size_t misalignment : {0, 1, 8}) {
          WithCppType(type, [&]<typename T>(DataType t) {
            CheckShapes<T>(op, t, count, misalignment, count * 31 + misalignment);
          });
          if (HasFailure()) return;  // the first failing case tells the story
        }
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 200) << "fewer (op, type) pairs than the standard's table holds";
}

TEST_P(ReduceOnTarget, LargeBuffersOfEverySimdType) {
  // The kernels have no size thresholds: 2^16 elements take every path 2^20 do (the
  // aligning head, the unrolled loop, the tail), for the sampled sweep (testing/sampled_sweeps.h).
  const size_t kCount = testing::SampledSweeps() ? size_t{1} << 16 : size_t{1} << 20;
  if (testing::SampledSweeps()) testing::PrintSampled("2^16 elements, not 2^20");
  for (DataType type :
       {DataType::kInt8, DataType::kUint16, DataType::kInt32, DataType::kUint64, DataType::kFloat,
        DataType::kDouble, DataType::kFloat16, DataType::kBfloat16}) {
    for (Op op : AllPredefinedOps()) {
      if (!IsOpDefinedFor(op, type)) continue;
      WithCppType(type, [&]<typename T>(DataType t) {
        std::mt19937_64 random(kCount + static_cast<uint64_t>(op));
        // 16 bytes off a cache line, as malloc places large blocks: an aligning head.
        Buffer<T> in(kCount, 16), inout(kCount, 16);
        in.Fill(random);
        inout.Fill(random);
        const Buffer<T> before = inout;
        ASSERT_OK(ReduceLocal(op, t, in.data(), inout.data(), kCount));
        ExpectElements<T>(
            inout,
            [&](size_t i) {
              return ReferenceMany<T>(op, {in.Get(i), before.Get(i)});
            },
            absl::StrCat(PredefinedOpName(op), " on ", DataTypeName(t), ", ", kCount, " elements"));
      });
      if (HasFailure()) return;
    }
  }
}

TEST_P(ReduceOnTarget, IntegersWrapWithoutUndefinedBehaviour) {
  int32_t max32[] = {std::numeric_limits<int32_t>::max(), -7};
  int32_t one32[] = {1, std::numeric_limits<int32_t>::min()};
  ASSERT_OK(ReduceLocal(Op::kSum, DataType::kInt32, one32, max32, 2));
  EXPECT_EQ(max32[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(max32[1], std::numeric_limits<int32_t>::max() - 6);

  int8_t a8[] = {16, -128, 3, 127}, b8[] = {16, -1, -3, 2};
  ASSERT_OK(ReduceLocal(Op::kProd, DataType::kInt8, a8, b8, 4));
  EXPECT_THAT(b8, ::testing::ElementsAre(0, -128, -9, -2));

  uint16_t a16[] = {65535}, b16[] = {65535};
  ASSERT_OK(ReduceLocal(Op::kProd, DataType::kUint16, a16, b16, 1));
  EXPECT_EQ(b16[0], 1);

  int64_t a64[] = {int64_t{1} << 62, -3, 0x100000001}, b64[] = {4, 5, 0x100000001};
  ASSERT_OK(ReduceLocal(Op::kProd, DataType::kInt64, a64, b64, 3));
  EXPECT_THAT(b64, ::testing::ElementsAre(0, -15, 0x200000001));
}

TEST_P(ReduceOnTarget, FloatMaxAndMinPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float left[] = {nan, 1.0f, nan, 2.0f, 0.0f, -0.0f};
  float right[] = {1.0f, nan, nan, 3.0f, -0.0f, 0.0f};
  float max[6], min[6];
  ASSERT_OK(ReduceTwo(Op::kMax, DataType::kFloat, left, right, max, 6));
  ASSERT_OK(ReduceTwo(Op::kMin, DataType::kFloat, left, right, min, 6));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(max[i])) << i;
    EXPECT_TRUE(std::isnan(min[i])) << i;
  }
  EXPECT_EQ(max[3], 3.0f);
  EXPECT_EQ(min[3], 2.0f);
  // Equal operands: the right one is returned.
  EXPECT_TRUE(std::signbit(max[4]));
  EXPECT_FALSE(std::signbit(max[5]));
  EXPECT_TRUE(std::signbit(min[4]));
}

TEST_P(ReduceOnTarget, MinlocAndMaxlocKeepTheLowestIndexOnTies) {
  // Three ranks' contributions: value ties between ranks 0 and 2 at positions 0-1.
  DoubleInt rank0[] = {{5.0, 0}, {1.0, 0}, {2.0, 0}};
  DoubleInt rank1[] = {{4.0, 1}, {3.0, 1}, {2.0, 1}};
  DoubleInt rank2[] = {{5.0, 2}, {1.0, 2}, {7.0, 2}};
  DoubleInt max[3], min[3];
  // Inputs deliberately out of rank order: the tie rule, not the order, decides.
  const void* inputs[] = {rank2, rank1, rank0};
  ASSERT_OK(ReduceMany(Op::kMaxloc, DataType::kDoubleInt, inputs, max, 3));
  ASSERT_OK(ReduceMany(Op::kMinloc, DataType::kDoubleInt, inputs, min, 3));
  EXPECT_EQ(max[0].value, 5.0);
  EXPECT_EQ(max[0].index, 0);
  EXPECT_EQ(max[1].value, 3.0);
  EXPECT_EQ(max[1].index, 1);
  EXPECT_EQ(max[2].value, 7.0);
  EXPECT_EQ(max[2].index, 2);
  EXPECT_EQ(min[0].index, 1);
  EXPECT_EQ(min[1].value, 1.0);
  EXPECT_EQ(min[1].index, 0);
  EXPECT_EQ(min[2].value, 2.0);
  EXPECT_EQ(min[2].index, 0);

  TwoInt a[] = {{7, 9}}, b[] = {{7, 3}};
  ASSERT_OK(ReduceLocal(Op::kMaxloc, DataType::k2Int, a, b, 1));
  EXPECT_EQ(b[0].index, 3);
  ShortInt c[] = {{-2, 1}}, d[] = {{-2, 4}};
  ASSERT_OK(ReduceLocal(Op::kMinloc, DataType::kShortInt, c, d, 1));
  EXPECT_EQ(d[0].index, 1);
}

TEST_P(ReduceOnTarget, SixteenBitFloatsRoundTheFloat32ResultToNearestEven) {
  // bf16: 1 + 3*2^-8 is exactly halfway between 0x3f81 and 0x3f82: even wins.
  Bfloat16 one[] = {FloatToBfloat(1.0f)}, bf_small[] = {FloatToBfloat(3 * 0x1p-8f)};
  ASSERT_OK(ReduceLocal(Op::kSum, DataType::kBfloat16, one, bf_small, 1));
  EXPECT_EQ(bf_small[0].bits, 0x3f82) << "truncation would give 0x3f81";
  // f16: 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02.
  Float16 f_one[] = {FloatToFloat16(1.0f)}, f_small[] = {FloatToFloat16(3 * 0x1p-11f)};
  ASSERT_OK(ReduceLocal(Op::kSum, DataType::kFloat16, f_one, f_small, 1));
  EXPECT_EQ(f_small[0].bits, 0x3c02);
  // Overflow of the float16 range gives infinity.
  Float16 big[] = {FloatToFloat16(60000.0f)}, big2[] = {FloatToFloat16(60000.0f)};
  ASSERT_OK(ReduceLocal(Op::kSum, DataType::kFloat16, big, big2, 1));
  EXPECT_EQ(big2[0].bits, 0x7c00);
}

TEST_P(ReduceOnTarget, AverageIsTheMeanOfTheOperands) {
  float a[] = {1, 2, 3}, b[] = {3, 4, 5}, c[] = {5, 9, -2}, out[3];
  ASSERT_OK(ReduceTwo(Op::kAvg, DataType::kFloat, a, b, out, 3));
  EXPECT_THAT(out, ::testing::ElementsAre(2, 3, 4));
  const void* inputs[] = {a, b, c};
  ASSERT_OK(ReduceMany(Op::kAvg, DataType::kFloat, inputs, out, 3));
  EXPECT_THAT(out, ::testing::ElementsAre(3, 5, 2));
  // A collective sums and finishes once.
  double sums[] = {10, 7, -3};
  ASSERT_OK(FinishAverage(DataType::kDouble, sums, 3, 4));
  EXPECT_THAT(sums, ::testing::ElementsAre(2.5, 1.75, -0.75));
  Bfloat16 half_sums[] = {FloatToBfloat(6), FloatToBfloat(-9)};
  ASSERT_OK(FinishAverage(DataType::kBfloat16, half_sums, 2, 3));
  EXPECT_EQ(BfloatToFloat(half_sums[0]), 2.0f);
  EXPECT_EQ(BfloatToFloat(half_sums[1]), -3.0f);
  long double wide[] = {1.0L};
  ASSERT_OK(FinishAverage(DataType::kLongDouble, wide, 1, 3));
  EXPECT_EQ(wide[0], 1.0L / 3);
}

// ------------------------------------------------------------------------------
// User ops.

// 2x2 integer matrices, multiplied: associative, not commutative.
struct Matrix {
  int64_t m[4];
};

Matrix Multiply(const Matrix& x, const Matrix& y) {
  return {{x.m[0] * y.m[0] + x.m[1] * y.m[2], x.m[0] * y.m[1] + x.m[1] * y.m[3],
           x.m[2] * y.m[0] + x.m[3] * y.m[2], x.m[2] * y.m[1] + x.m[3] * y.m[3]}};
}

ReduceOp MatrixProduct(int* calls) {
  return *ReduceOp::CreateUser(
      [calls](const void* in, void* inout, size_t count, DataType type) {
        EXPECT_EQ(type, DataType::kInt64);
        ++*calls;
        // Elements are groups of 4 int64 (a user op on a derived layout).
        const Matrix* left = static_cast<const Matrix*>(in);
        Matrix* right = static_cast<Matrix*>(inout);
        for (size_t i = 0; i + 4 <= count; i += 4)
          right[i / 4] = Multiply(left[i / 4], right[i / 4]);
      },
      /*commutative=*/false, "matrix_product");
}

TEST(UserOpTest, OperandsStayInCanonicalOrder) {
  int calls = 0;
  const ReduceOp product = MatrixProduct(&calls);
  std::vector<Matrix> inputs[4];
  std::mt19937_64 random(7);
  constexpr size_t kMatrices = 50000;  // 1.6 MB per input: several chunks
  for (auto& input : inputs) {
    for (size_t i = 0; i < kMatrices; ++i) {
      input.push_back({{int64_t(random() % 5) - 2, int64_t(random() % 5) - 2,
                        int64_t(random() % 5) - 2, int64_t(random() % 5) - 2}});
    }
  }
  std::vector<Matrix> expected(kMatrices);
  for (size_t i = 0; i < kMatrices; ++i) {
    expected[i] =
        Multiply(Multiply(Multiply(inputs[0][i], inputs[1][i]), inputs[2][i]), inputs[3][i]);
  }
  // Out aliases the first input: the temporary keeps that harmless.
  const void* pointers[] = {inputs[0].data(), inputs[1].data(), inputs[2].data(), inputs[3].data()};
  ASSERT_OK(ReduceMany(product, DataType::kInt64, pointers, inputs[0].data(), 4 * kMatrices));
  for (size_t i = 0; i < kMatrices; ++i) {
    ASSERT_EQ(std::memcmp(&inputs[0][i], &expected[i], sizeof(Matrix)), 0) << "matrix " << i;
  }
  EXPECT_GT(calls, 3 * 4) << "expected the buffers to be applied in several chunks";

  // ReduceLocal: inout = in op inout; ReduceTwo into the left operand.
  Matrix a{{1, 2, 3, 4}}, b{{0, 1, 1, 0}}, b_copy = b, out;
  ASSERT_OK(ReduceLocal(product, DataType::kInt64, &a, &b, 4));
  const Matrix ab = Multiply(a, b_copy);
  EXPECT_EQ(std::memcmp(&b, &ab, sizeof(Matrix)), 0);
  ASSERT_OK(ReduceTwo(product, DataType::kInt64, &a, &b_copy, &out, 4));
  EXPECT_EQ(std::memcmp(&out, &ab, sizeof(Matrix)), 0);
  ASSERT_OK(ReduceTwo(product, DataType::kInt64, &a, &b_copy, &a, 4));
  EXPECT_EQ(std::memcmp(&a, &ab, sizeof(Matrix)), 0);
}

// ------------------------------------------------------------------------------
// Bad arguments.

TEST(ReduceErrorsTest, BadArgumentsAreRefusedWithASentence) {
  float x[4] = {}, y[4] = {};
  auto message = [](const absl::Status& status) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    return std::string(status.message());
  };
  EXPECT_THAT(message(ReduceLocal(Op::kBand, DataType::kFloat, x, y, 4)),
              HasSubstr("MPI_BAND is not defined for datatype float"));
  EXPECT_THAT(message(ReduceLocal(Op::kSum, DataType::kChar, x, y, 4)),
              HasSubstr("datatype char (MPI_CHAR)"));
  EXPECT_THAT(message(ReduceLocal(Op::kSum, DataType::kFloat, nullptr, y, 4)),
              HasSubstr("ReduceLocal: `in` is null but count is 4"));
  EXPECT_THAT(message(ReduceLocal(Op::kSum, DataType::kFloat, x, x, 4)),
              HasSubstr("does not allow the in-place option"));
  EXPECT_THAT(message(ReduceLocal(Op::kSum, DataType::kFloat, x, x + 1, 3)),
              HasSubstr("`in` and `inout` overlap"));
  EXPECT_THAT(message(ReduceTwo(Op::kSum, DataType::kFloat, x, y, x + 1, 3)),
              HasSubstr("`out` partly overlaps `left`"));
  EXPECT_THAT(message(ReduceTwo(Op::kSum, DataType::kFloat, x, y, nullptr, 1)),
              HasSubstr("`out` is null"));
  EXPECT_THAT(message(ReduceMany(Op::kSum, DataType::kFloat, {}, x, 4)),
              HasSubstr("`inputs` is empty"));
  const void* with_null[] = {x, nullptr};
  EXPECT_THAT(message(ReduceMany(Op::kSum, DataType::kFloat, with_null, y, 4)),
              HasSubstr("`inputs[1]` is null"));
  const void* shifted[] = {x, y + 1};
  EXPECT_THAT(message(ReduceMany(Op::kSum, DataType::kFloat, shifted, y, 3)),
              HasSubstr("`out` partly overlaps `inputs[1]`"));
  EXPECT_THAT(message(FinishAverage(DataType::kInt32, x, 4, 2)),
              HasSubstr("AVG (zcoll extension) is not defined for datatype int32"));
  EXPECT_THAT(message(FinishAverage(DataType::kFloat, x, 4, 0)), HasSubstr("`contributions` is 0"));
}

TEST(ReduceLocalTest, TypedFormTakesTheTypeAndCountFromTheSpans) {
  const std::vector<int64_t> in = {1, 2, 3};
  std::vector<int64_t> inout = {10, 20, 30};
  ASSERT_OK(ReduceLocal<int64_t>(Op::kMax, in, absl::MakeSpan(inout)));
  EXPECT_THAT(inout, ::testing::ElementsAre(10, 20, 30));
  ASSERT_OK(ReduceLocal<int64_t>(Op::kSum, in, absl::MakeSpan(inout)));
  EXPECT_THAT(inout, ::testing::ElementsAre(11, 22, 33));
  const absl::Status refused =
      ReduceLocal<int64_t>(Op::kSum, in, absl::MakeSpan(inout).subspan(0, 2));
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr("`in` holds 3 elements and `inout` 2; they must be of one length"));
  EXPECT_THAT(inout, ::testing::ElementsAre(11, 22, 33));
}

TEST(ReduceErrorsTest, ZeroCountsAcceptNullPointers) {
  EXPECT_OK(ReduceLocal(Op::kSum, DataType::kFloat, nullptr, nullptr, 0));
  EXPECT_OK(ReduceTwo(Op::kMaxloc, DataType::k2Int, nullptr, nullptr, nullptr, 0));
  const void* inputs[] = {nullptr, nullptr};
  EXPECT_OK(ReduceMany(Op::kProd, DataType::kCDoubleComplex, inputs, nullptr, 0));
  EXPECT_OK(FinishAverage(DataType::kFloat16, nullptr, 0, 3));
}

}  // namespace
}  // namespace zcoll
