#include "ops/streaming_copy.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace zcoll {
namespace {

// Every length up to a few vectors and some beyond, at every alignment of source and
// destination within a cache line: the bytes copied, none outside them touched.
TEST(StreamingCopyTest, CopiesEveryByteAndNothingElse) {
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> source(4096 + 2 * kGuard);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t length :
       {size_t{0}, size_t{1}, size_t{15}, size_t{31}, size_t{32}, size_t{33}, size_t{63},
        size_t{64}, size_t{65}, size_t{127}, size_t{200}, size_t{1000}, size_t{4096}}) {
    for (size_t from_offset = 0; from_offset < 64; from_offset += 13) {
      for (size_t to_offset = 0; to_offset < 64; to_offset += 7) {
        alignas(64) uint8_t destination_storage[4096 + 3 * kGuard];
        uint8_t* destination = destination_storage + kGuard + to_offset;
        std::fill(std::begin(destination_storage), std::end(destination_storage), 0xee);
        const uint8_t* from = source.data() + kGuard + from_offset;
        StreamingCopy(destination, from, length);
        for (size_t i = 0; i < length; ++i) {
          ASSERT_EQ(destination[i], from[i]) << "length " << length << ", offsets " << from_offset
                                             << "/" << to_offset << ": byte " << i;
        }
        for (uint8_t* p = destination_storage; p < destination; ++p) {
          ASSERT_EQ(*p, 0xee) << "written before the destination, length " << length;
        }
        for (uint8_t* p = destination + length; p < std::end(destination_storage); ++p) {
          ASSERT_EQ(*p, 0xee) << "written past the destination, length " << length;
        }
      }
    }
  }
}

}  // namespace
}  // namespace zcoll
