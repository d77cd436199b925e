/* The bookkeeping of one memory block: which byte ranges are free. Pure C++,
   no Vulkan, so that it is tested on its own (tests/vulkan_ranges_test.cpp). */
#ifndef RILL_VK_RANGES_H
#define RILL_VK_RANGES_H

#include <cstdint>
#include <map>

namespace rill_vk {

/* First-fit allocation of aligned byte ranges in [0, size); a released range
   merges with free neighbours, so a block whose ranges are all released is one
   free range again. */
class RangeAllocator {
 public:
  static constexpr uint64_t kNoRange = UINT64_MAX;

  explicit RangeAllocator(uint64_t size);

  /* The offset of bytes (> 0) at a multiple of alignment (a power of two), or
     kNoRange when no free range holds them. */
  uint64_t allocate(uint64_t bytes, uint64_t alignment);
  /* Gives back a range returned by allocate with the same bytes. */
  void release(uint64_t offset, uint64_t bytes);

  bool empty() const { return free_bytes_ == size_; }
  uint64_t size() const { return size_; }
  uint64_t free_bytes() const { return free_bytes_; }

 private:
  uint64_t size_;
  uint64_t free_bytes_;
  std::map<uint64_t, uint64_t> free_; /* offset -> bytes of each free range */
};

}  // namespace rill_vk

#endif
