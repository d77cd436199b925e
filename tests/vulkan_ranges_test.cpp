// The range bookkeeping of the Vulkan plugin's memory blocks
// (backends/vulkan/vk_ranges.h), checked against a byte map of which bytes
// are taken: ranges never overlap, keep their alignment, and a block whose
// ranges are all given back is whole again.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "vk_ranges.h"

using rill_vk::RangeAllocator;

TEST_CASE("ranges are aligned, never overlap, and a released block is whole again") {
  const uint64_t size = 1 << 16;
  RangeAllocator ranges(size);
  std::vector<int> owner(size, -1);  // the independent record: which live range holds each byte
  struct Live {
    uint64_t offset, bytes;
  };
  std::vector<Live> live;
  std::mt19937 rng(5);
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t bytes = 1 + rng() % 700;
      const uint64_t alignment = uint64_t{1} << (rng() % 9);
      const uint64_t offset = ranges.allocate(bytes, alignment);
      if (offset == RangeAllocator::kNoRange) continue;
      REQUIRE(offset % alignment == 0);
      REQUIRE(offset + bytes <= size);
      for (uint64_t b = offset; b < offset + bytes; ++b) {
        REQUIRE(owner[b] == -1);
        owner[b] = step;
      }
      live.push_back({offset, bytes});
    } else {
      const size_t pick = rng() % live.size();
      ranges.release(live[pick].offset, live[pick].bytes);
      for (uint64_t b = live[pick].offset; b < live[pick].offset + live[pick].bytes; ++b) owner[b] = -1;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    uint64_t taken = 0;
    for (const Live& l : live) taken += l.bytes;
    REQUIRE(ranges.free_bytes() == size - taken);
  }
  for (const Live& l : live) ranges.release(l.offset, l.bytes);
  CHECK(ranges.empty());
  // Whole again: one range of every byte fits.
  CHECK(ranges.allocate(size, 1) == 0);
}

TEST_CASE("a request larger than any free range is refused") {
  RangeAllocator ranges(1024);
  CHECK(ranges.allocate(0, 1) == RangeAllocator::kNoRange);
  CHECK(ranges.allocate(1025, 1) == RangeAllocator::kNoRange);
  const uint64_t a = ranges.allocate(400, 1);
  const uint64_t b = ranges.allocate(400, 1);
  const uint64_t c = ranges.allocate(224, 1);
  REQUIRE(a == 0);
  REQUIRE(b == 400);
  REQUIRE(c == 800);
  ranges.release(a, 400);
  ranges.release(c, 224);
  // 624 bytes are free but in two pieces (400 and 224): 500 do not fit.
  CHECK(ranges.free_bytes() == 624);
  CHECK(ranges.allocate(500, 1) == RangeAllocator::kNoRange);
  CHECK(ranges.allocate(400, 1) == a);
  // Alignment padding counts: in the hole [800, 1024), 200 bytes at a
  // multiple of 256 would end at 1224.
  CHECK(ranges.allocate(200, 256) == RangeAllocator::kNoRange);
  CHECK(ranges.allocate(200, 32) == 800);
}
