#include "ops/half.h"

#include <cstdint>

namespace zcoll {

float Float16ToFloat(Float16 value) {
  const uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  const uint32_t exponent = (value.bits >> 10) & 0x1fu;
  const uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0x1f) {  // infinity or NaN, payload kept
    return FloatFromBits(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return FloatFromBits(sign | FloatBits(magnitude));
  }
  return FloatFromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

Float16 FloatToFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: top payload bits, quiet bit set
    return Float16{static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  }
  // 65520 = 0x477ff000 and above round to infinity.
  if (magnitude >= 0x477ff000u) return Float16{static_cast<uint16_t>(sign | 0x7c00u)};
  if (magnitude < 0x38800000u) {  // below 2^-14: a float16 subnormal or zero
    // Adding 0.5 puts the value's float16 mantissa in the low bits of the sum, and
    // the float addition itself rounds half to even.
    const float shifted = FloatFromBits(magnitude) + 0.5f;
    return Float16{static_cast<uint16_t>(sign | (FloatBits(shifted) - FloatBits(0.5f)))};
  }
  const uint32_t lowest_kept_bit = (magnitude >> 13) & 1u;
  const uint32_t rebiased = magnitude - ((127u - 15u) << 23);
  return Float16{static_cast<uint16_t>(sign | ((rebiased + 0xfffu + lowest_kept_bit) >> 13))};
}

}  // namespace zcoll
