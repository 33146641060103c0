#include "ops/half.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zcoll {
namespace {

bool IsNanFloat16(uint16_t bits) { return (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0; }

// The compiler's _Float16 (GCC's soft-float conversions round to nearest even) is an
// independent reference for binary16.
uint16_t CompilerFloat16(float value) {
  const _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof(bits));
  return bits;
}

TEST(Float16Test, WideningIsExactForAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    _Float16 half;
    const uint16_t bits16 = static_cast<uint16_t>(bits);
    std::memcpy(&half, &bits16, sizeof(half));
    const float expected = static_cast<float>(half);
    const float actual = Float16ToFloat(Float16{bits16});
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(actual)) << std::hex << bits;
      // The payload moves to the top of float32's mantissa, as F16C does.
      EXPECT_EQ(FloatBits(actual), (bits & 0x8000u) << 16 | 0x7f800000u | (bits & 0x3ffu) << 13)
          << std::hex << bits;
    } else {
      ASSERT_EQ(FloatBits(actual), FloatBits(expected)) << std::hex << bits;
    }
  }
}

TEST(Float16Test, NarrowingRoundsToNearestEvenLikeTheCompiler) {
  // Every 257th float bit pattern, plus the neighbourhood of every float16 boundary.
  auto check = [](uint32_t bits) {
    const float value = FloatFromBits(bits);
    const uint16_t actual = FloatToFloat16(value).bits;
    if (std::isnan(value)) {
      ASSERT_TRUE(IsNanFloat16(actual)) << std::hex << bits;
      ASSERT_EQ(actual & 0x8000u, (bits >> 16) & 0x8000u);
      ASSERT_TRUE(actual & 0x0200u) << "quiet bit";
    } else {
      ASSERT_EQ(actual, CompilerFloat16(value)) << std::hex << bits << " = " << value;
    }
  };
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 257) check(static_cast<uint32_t>(bits));
  for (uint32_t half = 0; half <= 0xffff; ++half) {
    const uint32_t center = FloatBits(Float16ToFloat(Float16{static_cast<uint16_t>(half)}));
    for (uint32_t delta = 0; delta < 4; ++delta) {
      check(center + delta);
      check(center - delta);
      // Halfway points between neighbours sit 2^12 float ulps away for normals.
      check(center + 0x1000 + delta - 2);
    }
  }
}

TEST(Float16Test, KnownVectors) {
  auto bits = [](float value) { return FloatToFloat16(value).bits; };
  EXPECT_EQ(bits(1.0f), 0x3c00);
  EXPECT_EQ(bits(1.0f + 0x1p-11f), 0x3c00) << "tie rounds to the even 1.0";
  EXPECT_EQ(bits(1.0f + 3 * 0x1p-11f), 0x3c02) << "tie rounds up to the even mantissa";
  EXPECT_EQ(bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01) << "above the tie rounds up";
  EXPECT_EQ(bits(65504.0f), 0x7bff);
  EXPECT_EQ(bits(65519.0f), 0x7bff);
  EXPECT_EQ(bits(65520.0f), 0x7c00) << "overflow to infinity";
  EXPECT_EQ(bits(-1e30f), 0xfc00);
  EXPECT_EQ(bits(0x1p-24f), 0x0001) << "smallest subnormal";
  EXPECT_EQ(bits(0x1p-25f), 0x0000) << "tie between 0 and 2^-24 rounds to even 0";
  EXPECT_EQ(bits(3 * 0x1p-25f), 0x0002) << "tie rounds to the even subnormal";
  EXPECT_EQ(bits(-0.0f), 0x8000);
  EXPECT_EQ(bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(bits(FloatFromBits(0x7f800001)), 0x7e00) << "signalling NaN becomes quiet";
  EXPECT_EQ(bits(FloatFromBits(0xffc02000)), 0xfe01) << "sign and top payload bits kept";
}

// The bfloat16 nearest to `value` by exhaustive comparison of the two candidates
// around it in double precision: independent of the bit trick in half.h.
uint16_t NearestBfloat(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t below = static_cast<uint16_t>(bits >> 16);
  const uint16_t above = static_cast<uint16_t>(below + 1);
  const double low = BfloatToFloat(Bfloat16{below});
  const double high = (above & 0x7fff) == 0x7f80 && (below & 0x7fff) == 0x7f7f
                          ? std::ldexp(1.0, 128) * (value < 0 ? -1 : 1)  // infinity's place
                          : static_cast<double>(BfloatToFloat(Bfloat16{above}));
  const double to_low = std::fabs(value - low), to_high = std::fabs(high - value);
  if (to_low < to_high) return below;
  if (to_high < to_low) return above;
  return (below & 1) == 0 ? below : above;
}

TEST(BfloatTest, NarrowingRoundsToNearestEven) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 97) {
    const float value = FloatFromBits(static_cast<uint32_t>(bits));
    const uint16_t actual = FloatToBfloat(value).bits;
    if (std::isnan(value)) {
      ASSERT_TRUE((actual & 0x7f80) == 0x7f80 && (actual & 0x7f) != 0) << std::hex << bits;
      ASSERT_TRUE(actual & 0x0040) << "quiet bit";
      continue;
    }
    ASSERT_EQ(actual, NearestBfloat(value)) << std::hex << bits;
  }
}

TEST(BfloatTest, KnownVectorsAndWidening) {
  auto bits = [](float value) { return FloatToBfloat(value).bits; };
  EXPECT_EQ(bits(1.0f), 0x3f80);
  EXPECT_EQ(bits(1.0f + 0x1p-8f), 0x3f80) << "tie rounds to even (truncation agrees)";
  EXPECT_EQ(bits(1.0f + 3 * 0x1p-8f), 0x3f82) << "tie rounds up; truncation would give 3f81";
  EXPECT_EQ(bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(bits(FloatFromBits(0x7f7fffff)), 0x7f80) << "largest float rounds to infinity";
  EXPECT_EQ(bits(FloatFromBits(0x7f800001)), 0x7fc0) << "signalling NaN becomes quiet";
  EXPECT_EQ(bits(-0.0f), 0x8000);
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    EXPECT_EQ(FloatBits(BfloatToFloat(Bfloat16{static_cast<uint16_t>(b)})), b << 16);
  }
}

}  // namespace
}  // namespace zcoll
