// Q8_0 and Q4_0: every float operation as gguf.quants performs it (f32
// throughout, scales rounded to f16 to nearest even), so the blocks and the
// dequantized floats are bit for bit gguf's.
#include <cmath>
#include <cstdint>

#include "dtype_convert.h"
#include "quant_formats.h"

namespace rill::quant {

void dequantize_block(const BlockQ8_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kBlock32; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void dequantize_block(const BlockQ4_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kBlock32 / 2; ++j) {
    y[j] = d * static_cast<float>((b.qs[j] & 0xF) - 8);
    y[j + kBlock32 / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
  }
}

// d = max|x| / 127 and q = x / d rounded half away from zero (std::round is
// exactly that, with no x + 0.5 rounding step).
void quantize_block(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kBlock32; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  b.d = f32_to_f16(d);
}

float largest_magnitude_element(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// The element of largest magnitude maps to q = 0, i.e. d = that element / -8,
// so its sign gets the extra level; q = trunc(x/d + 8.5) capped at 15.
void quantize_block(const float* x, BlockQ4_0& b) {
  const float d = largest_magnitude_element(x) / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[kBlock32];
  for (int j = 0; j < kBlock32; ++j) {
    const float v = std::trunc(x[j] * id + 8.5f);
    q[j] = static_cast<uint8_t>(v > 15.0f ? 15.0f : v);
  }
  for (int j = 0; j < kBlock32 / 2; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + kBlock32 / 2] << 4));
  b.d = f32_to_f16(d);
}

}  // namespace rill::quant
