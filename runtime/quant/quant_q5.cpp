// Q5_0 and Q5_1: every float operation as gguf.quants performs it (f32
// throughout, scales and mins rounded to f16 to nearest even), so the blocks
// and the dequantized floats are bit for bit gguf's.
#include <cmath>
#include <cstdint>

#include "dtype_convert.h"
#include "quant_formats.h"

namespace rill::quant {
namespace {

// Low nibbles into qs as Q4_0 lays them out, fifth bits into qh.
void pack_q5(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
  for (int j = 0; j < kBlock32 / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kBlock32 / 2] & 0xF) << 4));
  }
  for (int i = 0; i < 4; ++i) {
    uint8_t bits = 0;
    for (int l = 0; l < 8; ++l) bits = static_cast<uint8_t>(bits | ((q[8 * i + l] >> 4) << l));
    qh[i] = bits;
  }
}

// q = trunc(v) capped at 31, v >= 0 here by construction.
uint8_t q5_of(float v) {
  const float t = std::trunc(v);
  return static_cast<uint8_t>(t > 31.0f ? 31.0f : t);
}

}  // namespace

void dequantize_block(const BlockQ5_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kBlock32; ++j) y[j] = d * static_cast<float>(q5_value(b.qs, b.qh, j) - 16);
}

// As d * q, then + m: two roundings, never fused.
void dequantize_block(const BlockQ5_1& b, float* y) {
  const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
  for (int j = 0; j < kBlock32; ++j) y[j] = d * static_cast<float>(q5_value(b.qs, b.qh, j)) + m;
}

// As Q4_0: the element of largest magnitude maps to q = 0, d = that element
// / -16; q = trunc(x/d + 16.5) capped at 31.
void quantize_block(const float* x, BlockQ5_0& b) {
  const float d = largest_magnitude_element(x) / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[kBlock32];
  for (int j = 0; j < kBlock32; ++j) q[j] = q5_of(x[j] * id + 16.5f);
  pack_q5(q, b.qs, b.qh);
  b.d = f32_to_f16(d);
}

// d = (max - min) / 31 and q = trunc((x - min) / d + 0.5) capped at 31, both
// from the unrounded min and d; the block stores them rounded to f16.
void quantize_block(const float* x, BlockQ5_1& b) {
  float min = x[0], max = x[0];
  for (int j = 1; j < kBlock32; ++j) {
    min = std::fmin(min, x[j]);
    max = std::fmax(max, x[j]);
  }
  const float d = (max - min) / 31.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[kBlock32];
  for (int j = 0; j < kBlock32; ++j) q[j] = q5_of((x[j] - min) * id + 0.5f);
  pack_q5(q, b.qs, b.qh);
  b.d = f32_to_f16(d);
  b.m = f32_to_f16(min);
}

}  // namespace rill::quant
