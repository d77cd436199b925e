// Interleaved rotary rows reordered into the half-split layout.
#include "rotary_layout.h"

#include <cstring>

namespace rill::layer {

void half_split_rotary_rows(const void* src, void* dst, size_t rows, size_t row_bytes, int64_t head_dim,
                            int64_t rope_dim) {
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  const auto hd = static_cast<size_t>(head_dim), half = static_cast<size_t>(rope_dim) / 2;
  for (size_t head = 0; head < rows / hd; ++head) {
    const size_t base = head * hd;
    for (size_t j = 0; j < hd; ++j) {
      // The row that lands at dim j: pair i's first dim 2i at i, its second
      // 2i + 1 at half + i; the dims past rope_dim stay where they are.
      const size_t from = j < half ? 2 * j : j < 2 * half ? 2 * (j - half) + 1 : j;
      std::memcpy(out + (base + j) * row_bytes, in + (base + from) * row_bytes, row_bytes);
    }
  }
}

}  // namespace rill::layer
