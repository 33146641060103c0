// The SIMD reduction kernels of ops/reduce_kernels.cc, for one Highway target per
// inclusion (Highway's -inl.h convention: foreach_target.h includes the translation
// unit once per target, which includes this once per target through the toggle guard).
//
// One generic kernel per shape (binary, many, divide), instantiated over a list of
// op functors and, in each including unit, its element types; the table of function
// pointers is built from those lists by templates, so there is no op x type switch
// (docs/design.md, "ops/").
//
// Semantics every target shares (ops/reduce_test.cc checks them on each target):
// - Integers wrap modulo 2^bits like C unsigned arithmetic, signed ones included.
// - Floating MAX and MIN propagate NaN: if an operand is NaN the result is NaN (the
//   left operand's if both are); otherwise MAX(a, b) = a > b ? a : b, so for equal
//   values (+0 and -0) the right operand is returned. MIN likewise with a < b.
// - Float16 and bfloat16 are widened to float32, computed, and rounded to nearest
//   even once per stored result (ops/half.h).
// - LAND, LOR, LXOR return 1 or 0.

// Per-target include guard (no #pragma once: each target needs its own copy).
#if defined(ZCOLL_OPS_REDUCE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ZCOLL_OPS_REDUCE_KERNELS_INL_H_
#undef ZCOLL_OPS_REDUCE_KERNELS_INL_H_
#else
#define ZCOLL_OPS_REDUCE_KERNELS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <tuple>
#include <type_traits>

#include "core/datatype.h"
#include "core/reduce_op.h"
#include "hwy/highway.h"
#include "ops/reduce_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace zcoll::ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------------------------
// Element formats: how a storage type becomes compute vectors and back.
//
// A format moves a *unit*: kVectors compute vectors, holding Elements(d) consecutive
// elements in some lane order that only the format knows (the kernels combine units
// lane by lane, so any order works as long as loading and storing agree).
//
// Load/Store move whole units. LoadFirst/StoreFirst move only the first n elements
// with masked instructions, and exist only where those suppress faults on the other
// lanes: every lane width on AVX-512 (BW and VL), 32- and 64-bit lanes on AVX2.
// Elsewhere tails go through zero-padded copies (see Tail below).

template <class V, size_t K>
struct Unit {
  V v[K];
};

template <size_t kStorageLaneBytes>
inline constexpr bool kHasSafeMasking = HWY_TARGET <= HWY_AVX3 ||
                                        (HWY_TARGET == HWY_AVX2 && kStorageLaneBytes >= 4);

template <typename T>
struct Format {
  using Compute = T;
  static constexpr size_t kVectors = 1;
  static constexpr bool kMaskedTail = kHasSafeMasking<sizeof(T)>;

  template <class D>
  static HWY_INLINE size_t Elements(D d) {
    return hn::Lanes(d);
  }
  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 1> Load(D d, const T* from) {
    return {{hn::LoadU(d, from)}};
  }
  template <class D>
  static HWY_INLINE void Store(D d, const Unit<hn::Vec<D>, 1>& unit, T* to) {
    hn::StoreU(unit.v[0], d, to);
  }
  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 1> LoadFirst(D d, const T* from, size_t n) {
    return {{hn::MaskedLoad(hn::FirstN(d, n), d, from)}};
  }
  template <class D>
  static HWY_INLINE void StoreFirst(D d, const Unit<hn::Vec<D>, 1>& unit, T* to, size_t n) {
    hn::BlendedStore(unit.v[0], hn::FirstN(d, n), d, to);
  }
};

// bfloat16: the upper half of a float32. A 32-bit lane holds two bfloat16 elements,
// so a unit is two float vectors: the even elements (shifted up) and the odd ones
// (low half masked off). This needs no cross-lane shuffles either way, which matters
// because narrowing must round to nearest even in integer arithmetic (Highway
// 1.0.3's DemoteTo truncates and the AVX-512 BF16 instructions are not among its
// targets).
template <>
struct Format<Bfloat16> {
  using Compute = float;
  static constexpr size_t kVectors = 2;
  static constexpr bool kMaskedTail = kHasSafeMasking<2>;

  template <class D>
  static HWY_INLINE size_t Elements(D d) {
    return 2 * hn::Lanes(d);
  }

  template <class D, class V32>
  static HWY_INLINE Unit<hn::Vec<D>, 2> Split(D d, V32 pairs) {
    const hn::RebindToUnsigned<D> d32;
    return {{hn::BitCast(d, hn::ShiftLeft<16>(pairs)),
             hn::BitCast(d, hn::And(pairs, hn::Set(d32, 0xffff0000u)))}};
  }

  // The float's bits rounded to nearest even at bit 16 (the result is the upper
  // half); NaNs keep their top payload bits with the quiet bit set.
  template <class D>
  static HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> RoundToUpperHalf(D d, hn::Vec<D> value) {
    const hn::RebindToUnsigned<D> d32;
    const auto bits = hn::BitCast(d32, value);
    const auto lowest_kept_bit = hn::And(hn::ShiftRight<16>(bits), hn::Set(d32, 1));
    const auto rounded = hn::Add(bits, hn::Add(hn::Set(d32, 0x7fff), lowest_kept_bit));
    const auto quiet_nan = hn::Or(bits, hn::Set(d32, 0x00400000));
    return hn::IfThenElse(hn::RebindMask(d32, hn::IsNaN(value)), quiet_nan, rounded);
  }

  template <class D>
  static HWY_INLINE auto Join(D d, const Unit<hn::Vec<D>, 2>& unit) {
    const hn::RebindToUnsigned<D> d32;
    return hn::Or(hn::ShiftRight<16>(RoundToUpperHalf(d, unit.v[0])),
                  hn::And(RoundToUpperHalf(d, unit.v[1]), hn::Set(d32, 0xffff0000u)));
  }

  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 2> Load(D d, const Bfloat16* from) {
    const hn::RebindToUnsigned<D> d32;
    return Split(d, hn::LoadU(d32, reinterpret_cast<const uint32_t*>(from)));
  }
  template <class D>
  static HWY_INLINE void Store(D d, const Unit<hn::Vec<D>, 2>& unit, Bfloat16* to) {
    const hn::RebindToUnsigned<D> d32;
    hn::StoreU(Join(d, unit), d32, reinterpret_cast<uint32_t*>(to));
  }
  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 2> LoadFirst(D d, const Bfloat16* from, size_t n) {
    const hn::RebindToUnsigned<D> d32;
    const hn::Repartition<uint16_t, D> d16;
    const auto halves =
        hn::MaskedLoad(hn::FirstN(d16, n), d16, reinterpret_cast<const uint16_t*>(from));
    return Split(d, hn::BitCast(d32, halves));
  }
  template <class D>
  static HWY_INLINE void StoreFirst(D d, const Unit<hn::Vec<D>, 2>& unit, Bfloat16* to, size_t n) {
    const hn::Repartition<uint16_t, D> d16;
    hn::BlendedStore(hn::BitCast(d16, Join(d, unit)), hn::FirstN(d16, n), d16,
                     reinterpret_cast<uint16_t*>(to));
  }
};

// IEEE binary16. AVX2 and AVX-512 targets have F16C, whose conversions are exact
// (widening) and round to nearest even (narrowing). Older targets emulate both here,
// bit for bit the same, including NaN payloads: Highway 1.0.3's emulation truncates
// and mishandles infinities.
template <>
struct Format<Float16> {
  using Compute = float;
  static constexpr size_t kVectors = 1;
  static constexpr bool kMaskedTail = kHasSafeMasking<2>;

  template <class D>
  static HWY_INLINE size_t Elements(D d) {
    return hn::Lanes(d);
  }

  template <class D, class V16>
  static HWY_INLINE hn::Vec<D> Widen(D d, V16 bits16) {
#if HWY_TARGET <= HWY_AVX2
    const hn::Rebind<hwy::float16_t, D> df16;
    return hn::PromoteTo(d, hn::BitCast(df16, bits16));
#else
    const hn::RebindToUnsigned<D> d32;
    const hn::RebindToSigned<D> di32;
    const auto half = hn::PromoteTo(d32, bits16);
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
  static HWY_INLINE auto Narrow(D d, hn::Vec<D> value) {
    const hn::Rebind<uint16_t, D> d16;
#if HWY_TARGET <= HWY_AVX2
    const hn::Rebind<hwy::float16_t, D> df16;
    return hn::BitCast(d16, hn::DemoteTo(df16, value));
#else
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
    return hn::DemoteTo(d16, hn::BitCast(di32, half));
#endif
  }

  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 1> Load(D d, const Float16* from) {
    const hn::Rebind<uint16_t, D> d16;
    return {{Widen(d, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(from)))}};
  }
  template <class D>
  static HWY_INLINE void Store(D d, const Unit<hn::Vec<D>, 1>& unit, Float16* to) {
    const hn::Rebind<uint16_t, D> d16;
    hn::StoreU(Narrow(d, unit.v[0]), d16, reinterpret_cast<uint16_t*>(to));
  }
  template <class D>
  static HWY_INLINE Unit<hn::Vec<D>, 1> LoadFirst(D d, const Float16* from, size_t n) {
    const hn::Rebind<uint16_t, D> d16;
    return {{Widen(
        d, hn::MaskedLoad(hn::FirstN(d16, n), d16, reinterpret_cast<const uint16_t*>(from)))}};
  }
  template <class D>
  static HWY_INLINE void StoreFirst(D d, const Unit<hn::Vec<D>, 1>& unit, Float16* to, size_t n) {
    const hn::Rebind<uint16_t, D> d16;
    hn::BlendedStore(Narrow(d, unit.v[0]), hn::FirstN(d16, n), d16,
                     reinterpret_cast<uint16_t*>(to));
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

// a > b ? a : b for floats, so b when b is NaN or the two are equal. That is exactly
// what x86's MAXPS computes (one instruction); HWY_SCALAR's Max is not specified for
// NaN, so it gets the comparison spelled out.
template <class V>
HWY_INLINE V OrderedMax(V a, V b) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR
  return hn::Max(a, b);
#else
  return hn::IfThenElse(hn::Gt(a, b), a, b);
#endif
}

// a < b ? a : b, likewise MINPS.
template <class V>
HWY_INLINE V OrderedMin(V a, V b) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR
  return hn::Min(a, b);
#else
  return hn::IfThenElse(hn::Lt(a, b), a, b);
#endif
}

// MAX and MIN. Floats propagate NaN (the left operand's first); see the file comment.
template <bool kMax>
struct ExtremumOp {
  static constexpr PredefinedOp kOp = kMax ? PredefinedOp::kMax : PredefinedOp::kMin;
  template <typename C>
  static constexpr bool kDefinedFor = true;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
      return hn::IfThenElse(hn::IsNaN(a), a, kMax ? OrderedMax(a, b) : OrderedMin(a, b));
    } else {
      return kMax ? hn::Max(a, b) : hn::Min(a, b);
    }
  }
};
using MaxOp = ExtremumOp<true>;
using MinOp = ExtremumOp<false>;

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

// BAND, BOR, BXOR.
template <PredefinedOp kOpValue>
struct BitwiseOp {
  static constexpr PredefinedOp kOp = kOpValue;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    if constexpr (kOp == PredefinedOp::kBand) return hn::And(a, b);
    if constexpr (kOp == PredefinedOp::kBor) return hn::Or(a, b);
    if constexpr (kOp == PredefinedOp::kBxor) return hn::Xor(a, b);
  }
};
using BandOp = BitwiseOp<PredefinedOp::kBand>;
using BorOp = BitwiseOp<PredefinedOp::kBor>;
using BxorOp = BitwiseOp<PredefinedOp::kBxor>;

// LAND, LOR, LXOR: nonzero is true; the result is 1 or 0.
template <PredefinedOp kOpValue>
struct LogicalOp {
  static constexpr PredefinedOp kOp = kOpValue;
  template <typename C>
  static constexpr bool kDefinedFor = kIsInteger<C>;
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    const auto zero = hn::Zero(d);
    const auto a_true = hn::Ne(a, zero), b_true = hn::Ne(b, zero);
    if constexpr (kOp == PredefinedOp::kLand) {
      return hn::IfThenElseZero(hn::And(a_true, b_true), hn::Set(d, 1));
    }
    if constexpr (kOp == PredefinedOp::kLor) {
      return hn::IfThenElseZero(hn::Or(a_true, b_true), hn::Set(d, 1));
    }
    if constexpr (kOp == PredefinedOp::kLxor) {
      return hn::IfThenElseZero(hn::Xor(a_true, b_true), hn::Set(d, 1));
    }
  }
};
using LandOp = LogicalOp<PredefinedOp::kLand>;
using LorOp = LogicalOp<PredefinedOp::kLor>;
using LxorOp = LogicalOp<PredefinedOp::kLxor>;

template <class Op>
inline constexpr bool kAverages = Op::kOp == PredefinedOp::kAvg;

// ------------------------------------------------------------------------------
// Kernels. Each is a main loop of whole units, then one unit at a time, then a tail
// of fewer elements than a unit that runs the very same vector code.

template <typename T>
using ComputeTag = hn::ScalableTag<typename Format<T>::Compute>;

template <typename T, class D>
using UnitFor = Unit<hn::Vec<D>, Format<T>::kVectors>;

// Elements of the largest unit of any target.
template <typename T>
inline constexpr size_t kMaxUnitElements = Format<T>::kVectors* HWY_MAX_BYTES /
                                           sizeof(typename Format<T>::Compute);

// The first `rest` elements (fewer than a unit) of a buffer as a whole unit: masked
// loads and stores where they are safe, else copies through a zeroed unit on the
// stack (so nothing past the caller's buffers is ever touched). Used for the tail
// of a buffer and for the head that aligns the main loop.
template <typename T>
class Partial {
 public:
  explicit Partial(size_t rest) : rest_(rest) {}

  template <class D>
  HWY_INLINE UnitFor<T, D> Load(D d, const T* from) const {
    if constexpr (Format<T>::kMaskedTail) {
      return Format<T>::LoadFirst(d, from, rest_);
    } else {
      T padded[kMaxUnitElements<T>] = {};
      std::memcpy(padded, from, rest_ * sizeof(T));
      return Format<T>::Load(d, padded);
    }
  }

  template <class D>
  HWY_INLINE void Store(D d, const UnitFor<T, D>& unit, T* to) const {
    if constexpr (Format<T>::kMaskedTail) {
      Format<T>::StoreFirst(d, unit, to, rest_);
    } else {
      T padded[kMaxUnitElements<T>];
      Format<T>::Store(d, unit, padded);
      std::memcpy(to, padded, rest_ * sizeof(T));
    }
  }

 private:
  size_t rest_;
};

// Elements to process before `out` is aligned to a whole storage vector (at most a
// cache line), or 0 when that is not worth it. Without this, a buffer 16 bytes off a
// cache line (malloc's usual placement) makes every AVX-512 load and store split two
// lines and runs at three quarters of the speed in L2.
template <typename T, class D>
HWY_INLINE size_t AlignmentHead(D d, const T* out, size_t count) {
  const size_t step = Format<T>::Elements(d);
  const size_t alignment = std::min<size_t>(64, step * sizeof(T));
  const size_t misaligned = reinterpret_cast<uintptr_t>(out) % alignment;
  // Short buffers gain nothing; a pointer not aligned to its element cannot be fixed.
  if (count < 16 * step || misaligned == 0 || misaligned % sizeof(T) != 0) return 0;
  return (alignment - misaligned) / sizeof(T);
}

// a op b lane by lane, or the mean for AVG.
template <class Op, class D, class U>
HWY_INLINE U Combine(D d, const U& a, const U& b) {
  U result;
  for (size_t k = 0; k < std::size(a.v); ++k) {
    result.v[k] = Op()(d, a.v[k], b.v[k]);
    if constexpr (kAverages<Op>) result.v[k] = hn::Div(result.v[k], hn::Set(d, 2));
  }
  return result;
}

template <class Op, typename T>
void ReduceBinary(const void* a_bytes, const void* b_bytes, void* out_bytes, size_t count) {
  using F = Format<T>;
  const T* a = static_cast<const T*>(a_bytes);
  const T* b = static_cast<const T*>(b_bytes);
  T* out = static_cast<T*>(out_bytes);
  const ComputeTag<T> d;
  const size_t step = F::Elements(d);
  size_t i = AlignmentHead(d, out, count);
  if (i != 0) {
    const Partial<T> head(i);
    head.Store(d, Combine<Op>(d, head.Load(d, a), head.Load(d, b)), out);
  }
  // Four units per iteration, all loaded before any is stored: buffers that malloc
  // places a few KiB apart often put `a + i + step` at the same offset modulo 4 KiB
  // as `out + i`, and a load issued right after such a store waits for it (4K
  // aliasing). Loading ahead hides that; storing each unit before loading the next
  // measured 8% slower at 8 KiB (ops/reduce_local_osu) and no faster from DRAM.
  for (; i + 4 * step <= count; i += 4 * step) {
    const auto r0 = Combine<Op>(d, F::Load(d, a + i), F::Load(d, b + i));
    const auto r1 = Combine<Op>(d, F::Load(d, a + i + step), F::Load(d, b + i + step));
    const auto r2 = Combine<Op>(d, F::Load(d, a + i + 2 * step), F::Load(d, b + i + 2 * step));
    const auto r3 = Combine<Op>(d, F::Load(d, a + i + 3 * step), F::Load(d, b + i + 3 * step));
    F::Store(d, r0, out + i);
    F::Store(d, r1, out + i + step);
    F::Store(d, r2, out + i + 2 * step);
    F::Store(d, r3, out + i + 3 * step);
  }
  for (; i + step <= count; i += step) {
    F::Store(d, Combine<Op>(d, F::Load(d, a + i), F::Load(d, b + i)), out + i);
  }
  if (i == count) return;
  const Partial<T> tail(count - i);
  tail.Store(d, Combine<Op>(d, tail.Load(d, a + i), tail.Load(d, b + i)), out + i);
}

template <class Op, typename T>
void ReduceMany(const void* const* inputs, size_t num_inputs, void* out_bytes, size_t count) {
  using F = Format<T>;
  T* out = static_cast<T*>(out_bytes);
  const ComputeTag<T> d;
  const size_t step = F::Elements(d);
  const Op op;
  // One pass over memory: every input's unit is folded in before the result is
  // stored, left to right (the canonical order). `load(p)` reads a unit at p.
  auto fold = [&](size_t i, auto load) {
    auto accumulator = load(static_cast<const T*>(inputs[0]) + i);
    for (size_t j = 1; j < num_inputs; ++j) {
      const auto next = load(static_cast<const T*>(inputs[j]) + i);
      for (size_t k = 0; k < F::kVectors; ++k) {
        accumulator.v[k] = op(d, accumulator.v[k], next.v[k]);
      }
    }
    if constexpr (kAverages<Op>) {
      const auto divisor = hn::Set(d, static_cast<typename F::Compute>(num_inputs));
      for (size_t k = 0; k < F::kVectors; ++k) {
        accumulator.v[k] = hn::Div(accumulator.v[k], divisor);
      }
    }
    return accumulator;
  };
  size_t i = AlignmentHead(d, out, count);
  if (i != 0) {
    const Partial<T> head(i);
    head.Store(d, fold(0, [d, &head](const T* from) { return head.Load(d, from); }), out);
  }
  for (; i + step <= count; i += step) {
    F::Store(d, fold(i, [d](const T* from) { return F::Load(d, from); }), out + i);
  }
  if (i == count) return;
  const Partial<T> tail(count - i);
  tail.Store(d, fold(i, [d, &tail](const T* from) { return tail.Load(d, from); }), out + i);
}

template <typename T>
void DivideBy(void* data_bytes, size_t count, size_t divisor) {
  using F = Format<T>;
  T* data = static_cast<T*>(data_bytes);
  const ComputeTag<T> d;
  const auto scale = hn::Set(d, static_cast<typename F::Compute>(divisor));
  auto divide = [&](UnitFor<T, decltype(d)> unit) {
    for (size_t k = 0; k < F::kVectors; ++k) unit.v[k] = hn::Div(unit.v[k], scale);
    return unit;
  };
  const size_t step = F::Elements(d);
  size_t i = AlignmentHead(d, data, count);
  if (i != 0) {
    const Partial<T> head(i);
    head.Store(d, divide(head.Load(d, data)), data);
  }
  for (; i + step <= count; i += step) F::Store(d, divide(F::Load(d, data + i)), data + i);
  if (i == count) return;
  const Partial<T> tail(count - i);
  tail.Store(d, divide(tail.Load(d, data + i)), data + i);
}

// ------------------------------------------------------------------------------
// The table: every op of OpList for every type where the op is defined.

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

template <typename... Types>
void AddKernelsOfTypes(KernelTable& table) {
  (AddAllOps<Types>(table), ...);
}

// The types are split over three translation units, each instantiating the kernels
// above for its own types and every target: one unit took 64 s to compile at -O2
// (200 s under ASan), the longest action of a build; three compile side by side.
void AddSignedIntegerKernels(KernelTable& table);    // reduce_kernels_signed.cc
void AddUnsignedIntegerKernels(KernelTable& table);  // reduce_kernels_unsigned.cc
void AddFloatingKernels(KernelTable& table);         // reduce_kernels.cc

}  // namespace HWY_NAMESPACE
}  // namespace zcoll::ops_internal
HWY_AFTER_NAMESPACE();

#endif  // ZCOLL_OPS_REDUCE_KERNELS_INL_H_
