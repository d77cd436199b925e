#include "vk_ranges.h"

#include <iterator>

namespace rill_vk {

RangeAllocator::RangeAllocator(uint64_t size) : size_(size), free_bytes_(size) {
  if (size > 0) free_.emplace(0, size);
}

uint64_t RangeAllocator::allocate(uint64_t bytes, uint64_t alignment) {
  if (bytes == 0 || bytes > free_bytes_) return kNoRange;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t begin = it->first;
    const uint64_t end = begin + it->second;
    const uint64_t aligned = (begin + alignment - 1) & ~(alignment - 1);
    if (aligned < begin || aligned > end || end - aligned < bytes) continue;
    free_.erase(it);
    /* The padding before the aligned start and the tail stay free. */
    if (aligned > begin) free_.emplace(begin, aligned - begin);
    if (end > aligned + bytes) free_.emplace(aligned + bytes, end - aligned - bytes);
    free_bytes_ -= bytes;
    return aligned;
  }
  return kNoRange;
}

void RangeAllocator::release(uint64_t offset, uint64_t bytes) {
  uint64_t begin = offset;
  uint64_t end = offset + bytes;
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == begin) {
      begin = previous->first;
      free_.erase(previous);
    }
  }
  if (next != free_.end() && next->first == end) {
    end += next->second;
    free_.erase(next);
  }
  free_.emplace(begin, end - begin);
  free_bytes_ += bytes;
}

}  // namespace rill_vk
