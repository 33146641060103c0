// SIMD reduction kernels, compiled once per Highway target and dispatched at run time.
//
// One generic kernel per shape (binary, many, divide), instantiated over a list of
// element types and a list of op functors; the table of function pointers is built
// from those lists by templates, so there is no op x type switch (STYLE.md, habit 5).
//
// Targets: Highway's defaults for x86 (SSSE3, SSE4, AVX2, AVX3) plus the portable
// fallback, which with GCC before 12.3 is HWY_SCALAR (Highway disables EMU128 there).
//
// Semantics every target shares (ops/reduce_test.cc checks them on each target):
// - Integers wrap modulo 2^bits like C unsigned arithmetic, signed ones included.
// - Floating MAX and MIN propagate NaN: if an operand is NaN the result is NaN (the
//   left operand's if both are); otherwise MAX(a, b) = a > b ? a : b, so for equal
//   values (+0 and -0) the right operand is returned. MIN likewise with a < b.
// - Float16 and bfloat16 are widened to float32, computed, and rounded to nearest
//   even once per stored result (ops/half.h).
// - LAND, LOR, LXOR return 1 or 0.

#include "ops/reduce_kernels.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "core/datatype.h"
#include "core/reduce_op.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/reduce_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace zcoll::ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------------------------
// Element formats: how a storage type becomes compute lanes and back.

template <typename T>
struct Format {
  using Compute = T;

  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* from) {
    return hn::LoadU(d, from);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> value, T* to) {
    hn::StoreU(value, d, to);
  }
};

// bfloat16: the upper half of a float32. Widening is a shift; narrowing rounds to
// nearest even (Highway 1.0.3's DemoteTo truncates, so it is not used).
template <>
struct Format<Bfloat16> {
  using Compute = float;

  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const Bfloat16* from) {
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> d32;
    const auto bits16 = hn::LoadU(d16, reinterpret_cast<const uint16_t*>(from));
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(d32, bits16)));
  }

  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> value, Bfloat16* to) {
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> d32;
    const hn::RebindToSigned<D> di32;
    const auto bits = hn::BitCast(d32, value);
    const auto lowest_kept_bit = hn::And(hn::ShiftRight<16>(bits), hn::Set(d32, 1));
    const auto rounded =
        hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(d32, 0x7fff), lowest_kept_bit)));
    const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(d32, 0x0040));
    const auto bits16 = hn::IfThenElse(hn::RebindMask(d32, hn::IsNaN(value)), quiet_nan, rounded);
    // Every lane is below 2^16, so the saturating narrowing is exact.
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di32, bits16)), d16, reinterpret_cast<uint16_t*>(to));
  }
};

// IEEE binary16. AVX2 and AVX-512 targets have F16C, whose conversions are exact
// (widening) and round to nearest even (narrowing). Older targets emulate both here,
// bit for bit the same, including NaN payloads: Highway 1.0.3's emulation truncates
// and mishandles infinities.
template <>
struct Format<Float16> {
  using Compute = float;

  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const Float16* from) {
#if HWY_TARGET <= HWY_AVX2
    const hn::Rebind<hwy::float16_t, D> d16;
    return hn::PromoteTo(d, hn::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(from)));
#else
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> d32;
    const hn::RebindToSigned<D> di32;
    const auto half = hn::PromoteTo(d32, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(from)));
    const auto sign = hn::ShiftLeft<16>(hn::And(half, hn::Set(d32, 0x8000)));
    const auto exponent = hn::And(half, hn::Set(d32, 0x7c00));
    const auto mantissa = hn::And(half, hn::Set(d32, 0x03ff));
    const auto shifted = hn::ShiftLeft<13>(hn::And(half, hn::Set(d32, 0x7fff)));
    const auto normal = hn::Add(shifted, hn::Set(d32, (127 - 15) << 23));
    const auto inf_or_nan = hn::Or(shifted, hn::Set(d32, 0x7f800000));
    // mantissa * 2^-24 is exact in float32.
    const auto subnormal = hn::BitCast(d32, hn::Mul(hn::ConvertTo(d, hn::BitCast(di32, mantissa)),
                                                    hn::Set(d, 1.0f / 16777216.0f)));
    auto bits = hn::IfThenElse(hn::Eq(exponent, hn::Zero(d32)), subnormal, normal);
    bits = hn::IfThenElse(hn::Eq(exponent, hn::Set(d32, 0x7c00)), inf_or_nan, bits);
    return hn::BitCast(d, hn::Or(bits, sign));
#endif
  }

  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> value, Float16* to) {
#if HWY_TARGET <= HWY_AVX2
    const hn::Rebind<hwy::float16_t, D> d16;
    hn::StoreU(hn::DemoteTo(d16, value), d16, reinterpret_cast<hwy::float16_t*>(to));
#else
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> d32;
    const hn::RebindToSigned<D> di32;
    const auto bits = hn::BitCast(d32, value);
    const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(d32, 0x8000));
    const auto magnitude = hn::And(bits, hn::Set(d32, 0x7fffffff));
    // Magnitudes are below 2^31, so signed comparisons order them correctly.
    const auto signed_magnitude = hn::BitCast(di32, magnitude);
    const auto is_nan = hn::RebindMask(d32, hn::Gt(signed_magnitude, hn::Set(di32, 0x7f800000)));
    const auto overflows = hn::RebindMask(d32, hn::Gt(signed_magnitude, hn::Set(di32, 0x477fefff)));
    const auto is_small = hn::RebindMask(d32, hn::Lt(signed_magnitude, hn::Set(di32, 0x38800000)));
    // Normal results: rebias the exponent, round the mantissa half to even.
    const auto lowest_kept_bit = hn::And(hn::ShiftRight<13>(magnitude), hn::Set(d32, 1));
    const auto normal =
        hn::ShiftRight<13>(hn::Add(hn::Sub(magnitude, hn::Set(d32, (127u - 15u) << 23)),
                                   hn::Add(hn::Set(d32, 0x0fff), lowest_kept_bit)));
    // Subnormal results: a float addition of 0.5 rounds to the 2^-24 grid.
    const auto small =
        hn::Sub(hn::BitCast(d32, hn::Add(hn::BitCast(d, magnitude), hn::Set(d, 0.5f))),
                hn::Set(d32, 0x3f000000));
    const auto nan =
        hn::Or(hn::Set(d32, 0x7e00), hn::And(hn::ShiftRight<13>(magnitude), hn::Set(d32, 0x03ff)));
    auto half = hn::IfThenElse(is_small, small, normal);
    half = hn::IfThenElse(overflows, hn::Set(d32, 0x7c00), half);
    half = hn::IfThenElse(is_nan, nan, half);
    half = hn::Or(half, sign);
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di32, half)), d16, reinterpret_cast<uint16_t*>(to));
#endif
  }
};

// ------------------------------------------------------------------------------
// Wrapping integer products for the lane widths Highway 1.0.3 cannot multiply.

// 8-bit lanes: multiply as 16-bit lanes; the low byte of each 16-bit product is
// the wrapped product of the low bytes, and likewise after shifting the high bytes.
template <class D, class V>
HWY_INLINE V Multiply8(D d, V a, V b) {
  const hn::Repartition<uint16_t, D> d16;
  const auto a16 = hn::BitCast(d16, a);
  const auto b16 = hn::BitCast(d16, b);
  const auto low = hn::And(hn::Mul(a16, b16), hn::Set(d16, 0x00ff));
  const auto high = hn::ShiftLeft<8>(hn::Mul(hn::ShiftRight<8>(a16), hn::ShiftRight<8>(b16)));
  return hn::BitCast(d, hn::Or(low, high));
}

// 64-bit lanes: lo*lo + ((hi*lo + lo*hi) << 32), all modulo 2^64.
template <class D, class V>
HWY_INLINE V Multiply64(D d, V a, V b) {
  const hn::RebindToUnsigned<D> d64;
  const hn::Repartition<uint32_t, D> d32;
  const auto a64 = hn::BitCast(d64, a);
  const auto b64 = hn::BitCast(d64, b);
  const auto low_low = hn::MulEven(hn::BitCast(d32, a64), hn::BitCast(d32, b64));
  const auto high_low =
      hn::MulEven(hn::BitCast(d32, hn::ShiftRight<32>(a64)), hn::BitCast(d32, b64));
  const auto low_high =
      hn::MulEven(hn::BitCast(d32, a64), hn::BitCast(d32, hn::ShiftRight<32>(b64)));
  const auto cross = hn::ShiftLeft<32>(hn::Add(high_low, low_high));
  return hn::BitCast(d, hn::Add(low_low, cross));
}

// ------------------------------------------------------------------------------
// Op functors: `op(d, a, b)` combines two compute vectors, a being the left operand.
// kDefinedFor<C> says which compute types the op has kernels for; the allowed-type
// table of core/reduce_op.h is the authority on what users may call.

template <typename C>
inline constexpr bool kIsInteger = std::is_integral_v<C>;

struct MaxOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kMax;
  template <typename C>
  static constexpr bool kDefinedFor = true;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
      return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::Gt(a, b), a, b));
    } else {
      return hn::Max(a, b);
    }
  }
};

struct MinOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kMin;
  template <typename C>
  static constexpr bool kDefinedFor = true;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
      return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::Lt(a, b), a, b));
    } else {
      return hn::Min(a, b);
    }
  }
};

struct SumOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kSum;
  template <typename C>
  static constexpr bool kDefinedFor = true;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::Add(a, b);
  }
};

// The mean: sums like SumOp; the kernels divide by the operand count when storing.
struct AvgOp : SumOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kAvg;
  template <typename C>
  static constexpr bool kDefinedFor = std::is_floating_point_v<C>;
};

struct ProdOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kProd;
  template <typename C>
  static constexpr bool kDefinedFor = true;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    using C = hn::TFromD<D>;
    // Highway multiplies floats and 16/32-bit integers in every target, and every
    // integer width in HWY_SCALAR (one lane, wrapped through uint64_t).
    constexpr bool kNative =
        !kIsInteger<C> || HWY_TARGET == HWY_SCALAR || (sizeof(C) != 1 && sizeof(C) != 8);
    if constexpr (kNative) {
      return hn::Mul(a, b);
    } else if constexpr (sizeof(C) == 1) {
      return Multiply8(d, a, b);
    } else {
      return Multiply64(d, a, b);
    }
  }
};

struct BandOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kBand;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::And(a, b);
  }
};

struct BorOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kBor;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::Or(a, b);
  }
};

struct BxorOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kBxor;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::Xor(a, b);
  }
};

// Logical ops: nonzero is true; the result is 1 or 0.
struct LandOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kLand;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    const auto zero = hn::Zero(d);
    return hn::IfThenElseZero(hn::And(hn::Ne(a, zero), hn::Ne(b, zero)), hn::Set(d, 1));
  }
};

struct LorOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kLor;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    const auto zero = hn::Zero(d);
    return hn::IfThenElseZero(hn::Ne(hn::Or(a, b), zero), hn::Set(d, 1));
  }
};

struct LxorOp {
  static constexpr PredefinedOp kOp = PredefinedOp::kLxor;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    const auto zero = hn::Zero(d);
    return hn::IfThenElseZero(hn::Xor(hn::Ne(a, zero), hn::Ne(b, zero)), hn::Set(d, 1));
  }
};

template <class Op>
inline constexpr bool kAverages = Op::kOp == PredefinedOp::kAvg;

// ------------------------------------------------------------------------------
// Kernels. Each is a main vector loop, then one vector at a time, then a tail of
// fewer than one vector done on zero-padded copies (so the tail runs the very same
// vector code and cannot read past the caller's buffers).

template <typename T>
using ComputeTag = hn::ScalableTag<typename Format<T>::Compute>;

template <typename T>
inline constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(typename Format<T>::Compute);

template <class Op, typename T>
HWY_INLINE hn::Vec<ComputeTag<T>> Combine(const T* a, const T* b) {
  const ComputeTag<T> d;
  auto result = Op()(d, Format<T>::Load(d, a), Format<T>::Load(d, b));
  if constexpr (kAverages<Op>) result = hn::Div(result, hn::Set(d, 2));
  return result;
}

template <class Op, typename T>
void ReduceBinary(const void* a_bytes, const void* b_bytes, void* out_bytes, size_t count) {
  const T* a = static_cast<const T*>(a_bytes);
  const T* b = static_cast<const T*>(b_bytes);
  T* out = static_cast<T*>(out_bytes);
  const ComputeTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  // Four vectors per iteration keep both load ports and the store port busy with the
  // loop bookkeeping off the critical path; eight measured no faster on AVX2/AVX-512.
  for (; i + 4 * lanes <= count; i += 4 * lanes) {
    const auto r0 = Combine<Op>(a + i, b + i);
    const auto r1 = Combine<Op>(a + i + lanes, b + i + lanes);
    const auto r2 = Combine<Op>(a + i + 2 * lanes, b + i + 2 * lanes);
    const auto r3 = Combine<Op>(a + i + 3 * lanes, b + i + 3 * lanes);
    Format<T>::Store(d, r0, out + i);
    Format<T>::Store(d, r1, out + i + lanes);
    Format<T>::Store(d, r2, out + i + 2 * lanes);
    Format<T>::Store(d, r3, out + i + 3 * lanes);
  }
  for (; i + lanes <= count; i += lanes) {
    Format<T>::Store(d, Combine<Op>(a + i, b + i), out + i);
  }
  const size_t rest = count - i;
  if (rest == 0) return;
  T padded_a[kMaxLanes<T>] = {}, padded_b[kMaxLanes<T>] = {}, padded_out[kMaxLanes<T>];
  std::memcpy(padded_a, a + i, rest * sizeof(T));
  std::memcpy(padded_b, b + i, rest * sizeof(T));
  Format<T>::Store(d, Combine<Op>(padded_a, padded_b), padded_out);
  std::memcpy(out + i, padded_out, rest * sizeof(T));
}

template <class Op, typename T>
void ReduceMany(const void* const* inputs, size_t num_inputs, void* out_bytes, size_t count) {
  T* out = static_cast<T*>(out_bytes);
  auto input = [inputs](size_t j) { return static_cast<const T*>(inputs[j]); };
  const ComputeTag<T> d;
  const size_t lanes = hn::Lanes(d);
  const Op op;
  // One pass over memory: every input's vector is folded in before the result is
  // stored, left to right (the canonical order).
  auto fold = [&](size_t i, auto load) {
    auto accumulator = load(0, i);
    for (size_t j = 1; j < num_inputs; ++j) accumulator = op(d, accumulator, load(j, i));
    if constexpr (kAverages<Op>) {
      accumulator =
          hn::Div(accumulator, hn::Set(d, static_cast<hn::TFromD<decltype(d)>>(num_inputs)));
    }
    return accumulator;
  };
  auto load_input = [&](size_t j, size_t i) { return Format<T>::Load(d, input(j) + i); };
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) Format<T>::Store(d, fold(i, load_input), out + i);
  const size_t rest = count - i;
  if (rest == 0) return;
  T padded[kMaxLanes<T>] = {}, padded_out[kMaxLanes<T>];
  auto load_padded = [&](size_t j, size_t) {
    std::memcpy(padded, input(j) + i, rest * sizeof(T));
    return Format<T>::Load(d, padded);
  };
  Format<T>::Store(d, fold(i, load_padded), padded_out);
  std::memcpy(out + i, padded_out, rest * sizeof(T));
}

template <typename T>
void DivideBy(void* data_bytes, size_t count, size_t divisor) {
  T* data = static_cast<T*>(data_bytes);
  const ComputeTag<T> d;
  const auto scale = hn::Set(d, static_cast<typename Format<T>::Compute>(divisor));
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    Format<T>::Store(d, hn::Div(Format<T>::Load(d, data + i), scale), data + i);
  }
  const size_t rest = count - i;
  if (rest == 0) return;
  T padded[kMaxLanes<T>] = {};
  std::memcpy(padded, data + i, rest * sizeof(T));
  Format<T>::Store(d, hn::Div(Format<T>::Load(d, padded), scale), padded);
  std::memcpy(data + i, padded, rest * sizeof(T));
}

// ------------------------------------------------------------------------------
// The table: every op of OpList for every type of TypeList where the op is defined.

using TypeList = std::tuple<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                            uint64_t, float, double, Float16, Bfloat16>;
using OpList =
    std::tuple<MaxOp, MinOp, SumOp, ProdOp, LandOp, BandOp, LorOp, BorOp, LxorOp, BxorOp, AvgOp>;

template <class Op, typename T>
void AddKernels(KernelTable& table) {
  if constexpr (Op::template kDefinedFor<typename Format<T>::Compute>) {
    table.entries[static_cast<size_t>(Op::kOp)][static_cast<size_t>(kDataTypeOf<T>)] = {
        &ReduceBinary<Op, T>, &ReduceMany<Op, T>};
  }
}

template <typename T>
void AddAllOps(KernelTable& table) {
  std::apply([&table](auto... ops) { (AddKernels<decltype(ops), T>(table), ...); }, OpList{});
  if constexpr (std::is_floating_point_v<typename Format<T>::Compute>) {
    table.divide[static_cast<size_t>(kDataTypeOf<T>)] = &DivideBy<T>;
  }
}

KernelTable BuildTable() {
  KernelTable table;
  std::apply([&table](auto... types) { (AddAllOps<decltype(types)>(table), ...); }, TypeList{});
  table.target_name = hwy::TargetName(HWY_TARGET);
  return table;
}

const KernelTable* GetKernelTable() {
  static const KernelTable* const table = new KernelTable(BuildTable());
  return table;
}

}  // namespace HWY_NAMESPACE
}  // namespace zcoll::ops_internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zcoll::ops_internal {

HWY_EXPORT(GetKernelTable);

const KernelTable& SimdKernels() { return *HWY_DYNAMIC_DISPATCH(GetKernelTable)(); }

}  // namespace zcoll::ops_internal
#endif  // HWY_ONCE
