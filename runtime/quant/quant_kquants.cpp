// Q4_K, Q5_K and Q6_K. Dequantization performs GGUF's float operations in
// GGUF's order (scale products first, in f32), so it is bit for bit
// gguf.quants'. gguf.quants has no quantizer for these formats; rill's is a
// plain range fit (below), made stable: the fit is repeated on its own
// dequantized block until it reproduces itself, so quantizing a dequantized
// tensor gives back the blocks it came from.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dtype_convert.h"
#include "quant_formats.h"

namespace rill::quant {
namespace {

constexpr int kSubK = 32;            // Q4_K / Q5_K sub-block
constexpr int kSubQ6 = 16;           // Q6_K sub-block
constexpr int kMaxRefinements = 8;   // a fit settles in one or two in practice

int nearest(float v) { return static_cast<int>(std::nearbyint(v)); }
int clamp(int v, int lo, int hi) { return std::min(std::max(v, lo), hi); }

// The 6-bit scales and mins of Q4_K / Q5_K, packed as scale_min_k reads them.
void pack_scales_k(const int* sc, const int* m, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// The asymmetric fit of Q4_K / Q5_K (qmax 15 or 31): each sub-block's range
// [min(0, lo), hi] maps onto 0..qmax; the super-block's d and dmin are the
// largest sub-block scale and min over 63, and each element takes the nearest
// level of the quantized scale and min.
void fit_k(const float* x, int qmax, uint16_t& d_bits, uint16_t& dmin_bits, uint8_t* scales, uint8_t* q) {
  float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + j * kSubK;
    float lo = 0.0f, hi = xs[0];
    for (int l = 0; l < kSubK; ++l) {
      lo = std::min(lo, xs[l]);
      hi = std::max(hi, xs[l]);
    }
    scale[j] = (hi - lo) / static_cast<float>(qmax);
    min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  d_bits = f32_to_f16(max_scale / 63.0f);
  dmin_bits = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0.0f ? clamp(nearest(scale[j] / d), 0, 63) : 0;
    m[j] = dmin > 0.0f ? clamp(nearest(min[j] / dmin), 0, 63) : 0;
    const float step = d * static_cast<float>(sc[j]), offset = dmin * static_cast<float>(m[j]);
    for (int l = 0; l < kSubK; ++l) {
      const int i = j * kSubK + l;
      q[i] = static_cast<uint8_t>(step > 0.0f ? clamp(nearest((x[i] + offset) / step), 0, qmax) : 0);
    }
  }
  pack_scales_k(sc, m, scales);
}

void fit(const float* x, BlockQ4_K& b) {
  uint8_t q[kBlockK];
  fit_k(x, 15, b.d, b.dmin, b.scales, q);
  for (int r = 0; r < 4; ++r) {
    for (int l = 0; l < kSubK; ++l) {
      b.qs[32 * r + l] = static_cast<uint8_t>(q[64 * r + l] | (q[64 * r + 32 + l] << 4));
    }
  }
}

void fit(const float* x, BlockQ5_K& b) {
  uint8_t q[kBlockK];
  fit_k(x, 31, b.d, b.dmin, b.scales, q);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int r = 0; r < 4; ++r) {
    for (int l = 0; l < kSubK; ++l) {
      b.qs[32 * r + l] = static_cast<uint8_t>((q[64 * r + l] & 0xF) | ((q[64 * r + 32 + l] & 0xF) << 4));
    }
  }
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < kSubK; ++l) b.qh[l] = static_cast<uint8_t>(b.qh[l] | (((q[32 * j + l] >> 4) & 1) << j));
  }
}

// The symmetric fit of Q6_K: each 16-element sub-block's largest magnitude
// maps to level 31; d is the largest sub-block scale over 127.
void fit(const float* x, BlockQ6_K& b) {
  float scale[kBlockK / kSubQ6], max_scale = 0.0f;
  for (int j = 0; j < kBlockK / kSubQ6; ++j) {
    float amax = 0.0f;
    for (int l = 0; l < kSubQ6; ++l) amax = std::max(amax, std::fabs(x[j * kSubQ6 + l]));
    scale[j] = amax / 31.0f;
    max_scale = std::max(max_scale, scale[j]);
  }
  b.d = f32_to_f16(max_scale / 127.0f);
  const float d = f16_to_f32(b.d);
  uint8_t q[kBlockK];
  for (int j = 0; j < kBlockK / kSubQ6; ++j) {
    const int sc = d > 0.0f ? clamp(nearest(scale[j] / d), 0, 127) : 0;
    b.scales[j] = static_cast<int8_t>(sc);
    const float step = d * static_cast<float>(sc);
    for (int l = 0; l < kSubQ6; ++l) {
      const int i = j * kSubQ6 + l;
      q[i] = static_cast<uint8_t>((step > 0.0f ? clamp(nearest(x[i] / step), -32, 31) : 0) + 32);
    }
  }
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      for (int s = 0; s < 4; ++s) {
        const uint8_t v = q[128 * h + 32 * s + l];
        uint8_t& low = b.ql[64 * h + 32 * (s % 2) + l];
        low = static_cast<uint8_t>(s < 2 ? (low & 0xF0) | (v & 0xF) : (low & 0x0F) | ((v & 0xF) << 4));
        b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | ((v >> 4) << (2 * s)));
      }
    }
  }
}

// Fits x, then refits the fit's own dequantized values until a refit changes
// nothing: the result is a fixed point, which quantize(dequantize(b)) == b needs.
template <class Block>
void quantize_stable(const float* x, Block& b) {
  fit(x, b);
  float y[kBlockK];
  for (int i = 0; i < kMaxRefinements; ++i) {
    dequantize_block(b, y);
    Block next;
    fit(y, next);
    if (std::memcmp(&next, &b, sizeof b) == 0) return;
    b = next;
  }
}

// GGUF's Q4_K / Q5_K dequantization: element l of sub-block j is
// (d * sc_j) * q - (dmin * m_j), each product in f32; level(j, l) gives q.
template <class Block, class Level>
void dequantize_k(const Block& b, float* y, Level level) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k(j, b.scales, sc, m);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
    for (int l = 0; l < kSubK; ++l) y[32 * j + l] = dl * static_cast<float>(level(j, l)) - ml;
  }
}

// The low 4 bits of element l of sub-block j: qs run j / 2, nibble j % 2.
inline int low_nibble(const uint8_t* qs, int j, int l) { return (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF; }

}  // namespace

void dequantize_block(const BlockQ4_K& b, float* y) {
  dequantize_k(b, y, [&](int j, int l) { return low_nibble(b.qs, j, l); });
}

void dequantize_block(const BlockQ5_K& b, float* y) {
  dequantize_k(b, y, [&](int j, int l) { return low_nibble(b.qs, j, l) | (((b.qh[l] >> j) & 1) << 4); });
}

void dequantize_block(const BlockQ6_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * h + 32 * s + l;
        const int low = (b.ql[64 * h + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0xF;
        const int high = (b.qh[32 * h + l] >> (2 * s)) & 3;
        const float dl = d * static_cast<float>(b.scales[e / kSubQ6]);
        y[e] = dl * static_cast<float>((low | (high << 4)) - 32);
      }
    }
  }
}

void quantize_block(const float* x, BlockQ4_K& b) { quantize_stable(x, b); }
void quantize_block(const float* x, BlockQ5_K& b) { quantize_stable(x, b); }
void quantize_block(const float* x, BlockQ6_K& b) { quantize_stable(x, b); }

}  // namespace rill::quant
