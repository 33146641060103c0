// Conversions between float and the 16-bit floats zcoll reduces (float16, bfloat16).
//
// Narrowing rounds to nearest, ties to even (IEEE 754's default), never truncates:
// reductions of bf16 gradients accumulate in float32 and round once at the end, and
// truncation would bias every result toward zero. Overflow becomes infinity; NaN stays
// NaN with its sign and the top bits of its payload, the quiet bit set (the behaviour
// of x86's F16C and AVX512-BF16 instructions, so results are bit-identical on every
// SIMD target). Widening is exact.
//
// These scalar functions are the definition; the SIMD kernels in ops/ must agree with
// them bit for bit (ops/reduce_test.cc checks that on every compiled target).

#ifndef ZCOLL_OPS_HALF_H_
#define ZCOLL_OPS_HALF_H_

#include <cstdint>
#include <cstring>

#include "core/datatype.h"

namespace zcoll {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline float BfloatToFloat(Bfloat16 value) {
  return FloatFromBits(static_cast<uint32_t>(value.bits) << 16);
}

inline Bfloat16 FloatToBfloat(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep the payload's top, set quiet
    return Bfloat16{static_cast<uint16_t>((bits >> 16) | 0x0040u)};
  }
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry into the
  // exponent is correct, and rounds the largest finite values up to infinity.
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return Bfloat16{static_cast<uint16_t>((bits + 0x7fffu + lowest_kept_bit) >> 16)};
}

float Float16ToFloat(Float16 value);
Float16 FloatToFloat16(float value);

}  // namespace zcoll

#endif  // ZCOLL_OPS_HALF_H_
