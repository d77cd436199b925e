// Row functions over the per-format block functions. Blocks are copied in and
// out of their structs, so rows may lie at any alignment.
#include "quant.h"

#include <cmath>
#include <cstring>

#include "quant_formats.h"
#include "rill_backend.h"

namespace rill::quant {
namespace {

template <class Block>
void dequantize_blocks(const void* src, float* dst, int64_t k) {
  constexpr int n = Block::kElements;
  const auto* bytes = static_cast<const unsigned char*>(src);
  for (int64_t i = 0; i < k / n; ++i) {
    Block b;
    std::memcpy(&b, bytes + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    dequantize_block(b, dst + i * n);
  }
}

template <class Block>
void quantize_blocks(const float* src, void* dst, int64_t k) {
  constexpr int n = Block::kElements;
  auto* bytes = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < k / n; ++i) {
    Block b;
    quantize_block(src + i * n, b);
    std::memcpy(bytes + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
  }
}

}  // namespace

bool is_block(rill_dtype dtype) { return rill_backend_dtype_is_block(dtype) != 0; }

size_t first_unquantizable(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!(std::fabs(x[i]) <= kLargestQuantizable)) return i;
  }
  return n;
}

bool dtype_from_name(const std::string& name, rill_dtype& out) {
  for (rill_dtype dtype : {RILL_DTYPE_F32, RILL_DTYPE_F16, RILL_DTYPE_BF16, RILL_DTYPE_Q8_0, RILL_DTYPE_Q4_0,
                           RILL_DTYPE_Q4_K, RILL_DTYPE_Q5_K, RILL_DTYPE_Q6_K, RILL_DTYPE_Q5_0, RILL_DTYPE_Q5_1}) {
    if (name == rill_backend_dtype_name(dtype)) {
      out = dtype;
      return true;
    }
  }
  return false;
}

rill_dtype fitting_format(rill_dtype format, int64_t k) {
  if (k % 256 == 0) return format;
  switch (format) {
    case RILL_DTYPE_Q4_K: return RILL_DTYPE_Q5_0;
    case RILL_DTYPE_Q5_K: return RILL_DTYPE_Q5_1;
    case RILL_DTYPE_Q6_K: return RILL_DTYPE_Q8_0;
    default: return format;
  }
}

size_t row_bytes(rill_dtype dtype, int64_t k) {
  return static_cast<size_t>(k) / rill_backend_block_elements(dtype) * rill_backend_block_bytes(dtype);
}

void dequantize_row(rill_dtype dtype, const void* src, float* dst, int64_t k) {
  switch (dtype) {
    case RILL_DTYPE_Q8_0: return dequantize_blocks<BlockQ8_0>(src, dst, k);
    case RILL_DTYPE_Q4_0: return dequantize_blocks<BlockQ4_0>(src, dst, k);
    case RILL_DTYPE_Q4_K: return dequantize_blocks<BlockQ4_K>(src, dst, k);
    case RILL_DTYPE_Q5_K: return dequantize_blocks<BlockQ5_K>(src, dst, k);
    case RILL_DTYPE_Q6_K: return dequantize_blocks<BlockQ6_K>(src, dst, k);
    case RILL_DTYPE_Q5_0: return dequantize_blocks<BlockQ5_0>(src, dst, k);
    case RILL_DTYPE_Q5_1: return dequantize_blocks<BlockQ5_1>(src, dst, k);
    default: return;
  }
}

void quantize_row(rill_dtype dtype, const float* src, void* dst, int64_t k) {
  switch (dtype) {
    case RILL_DTYPE_Q8_0: return quantize_blocks<BlockQ8_0>(src, dst, k);
    case RILL_DTYPE_Q4_0: return quantize_blocks<BlockQ4_0>(src, dst, k);
    case RILL_DTYPE_Q4_K: return quantize_blocks<BlockQ4_K>(src, dst, k);
    case RILL_DTYPE_Q5_K: return quantize_blocks<BlockQ5_K>(src, dst, k);
    case RILL_DTYPE_Q6_K: return quantize_blocks<BlockQ6_K>(src, dst, k);
    case RILL_DTYPE_Q5_0: return quantize_blocks<BlockQ5_0>(src, dst, k);
    case RILL_DTYPE_Q5_1: return quantize_blocks<BlockQ5_1>(src, dst, k);
    default: return;
  }
}

}  // namespace rill::quant
