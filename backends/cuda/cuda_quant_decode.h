/* The per-block decode of the block dtypes (GGUF's layouts, see
 * runtime/quant/quant_blocks.h), written once for the CUDA kernels and the
 * host: nvcc compiles it as __host__ __device__ code, a plain C++ compiler as
 * host code. tests/cuda_quant_decode_test.cpp checks the host path bit for
 * bit against runtime/quant's reference on the CPU, so the arithmetic the
 * kernels run is checked even where no GPU is.
 *
 * Each function decodes eight consecutive elements e0..e0+7 (e0 a multiple of
 * 8) of one block given as bytes (blocks are 34, 18, 22, 24, 144, 176 or 210 bytes,
 * so no wider alignment than a byte is assumed), with the float operations
 * of GGUF's reference in its order. nvcc may contract a product and a
 * difference into one fused multiply-add; that changes no result here: every
 * product is of an f16 scale (11 significant bits), a 6- to 8-bit integer
 * scale and a quant of at most 6 bits, so it fits f32's 24 bits and is exact,
 * and the one rounding left is the same fused or not.
 */
#ifndef RILL_CUDA_QUANT_DECODE_H
#define RILL_CUDA_QUANT_DECODE_H

#include <cstdint>
#include <cstring>

#include "quant_blocks.h"

#ifdef __CUDACC__
#define RILL_HD __host__ __device__ __forceinline__
#else
#define RILL_HD inline
#endif

namespace rill_cuda_quant {

/* Bytes and elements of one block, as rill_backend_block_bytes/_elements. */
constexpr int kQ8_0Bytes = 34, kQ4_0Bytes = 18, kQ5_0Bytes = 22, kQ5_1Bytes = 24, kQ4_KBytes = 144,
              kQ5_KBytes = 176, kQ6_KBytes = 210;

RILL_HD float bits_to_f32(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

/* An f16 bit pattern, little-endian at p, as f32 (exact: every f16 is an f32). */
RILL_HD float f16_at(const uint8_t* p) {
  const uint32_t h = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
  const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) return bits_to_f32(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return bits_to_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_to_f32(sign);
  // Subnormal: shift the leading bit up to the implicit position.
  uint32_t biased = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --biased;
  }
  return bits_to_f32(sign | (biased << 23) | ((mantissa & 0x3FFu) << 13));
}

/* The scale and offset of sub-block j of a Q4_K / Q5_K block: its elements
   are dl * q - ml, each product in f32 as GGUF's reference computes it. The
   6-bit scale and min come from runtime/quant's scale_min_k, constexpr so that
   device code calls it too (--expt-relaxed-constexpr). */
struct SubBlockK {
  float dl, ml;
};

RILL_HD SubBlockK sub_block_k(const uint8_t* block, int j) {
  uint8_t sc = 0, m = 0;
  rill::quant::scale_min_k(j, block + 4, sc, m);
  return {f16_at(block) * static_cast<float>(sc), f16_at(block + 2) * static_cast<float>(m)};
}

/* Q8_0: d (f16), 32 int8; x = q * d. */
RILL_HD void decode8_q8_0(const uint8_t* block, int e0, float* y) {
  const float d = f16_at(block);
  for (int i = 0; i < 8; ++i) y[i] = static_cast<float>(static_cast<int8_t>(block[2 + e0 + i])) * d;
}

/* Q4_0: d (f16), 16 bytes; element j < 16 in the low nibble of byte j, j + 16
   in its high nibble; x = d * (q - 8). */
RILL_HD void decode8_q4_0(const uint8_t* block, int e0, float* y) {
  const float d = f16_at(block);
  const uint8_t* qs = block + 2 + (e0 % 16);
  const int shift = e0 < 16 ? 0 : 4;
  for (int i = 0; i < 8; ++i) y[i] = d * static_cast<float>(((qs[i] >> shift) & 0xF) - 8);
}

/* Q5_0 and Q5_1: d, (Q5_1) m (f16), 4 bytes of fifth bits (bit j of the
   little-endian uint32 for element j), then Q4_0's nibbles (runtime/quant's
   q5_value reads them). Q5_0: x = d * (q - 16); Q5_1: x = d * q + m, where
   d * q (11 bits times 5) is exact, so a fused add rounds alike. */
template <bool kMin>
RILL_HD void decode8_q5(const uint8_t* block, int e0, float* y) {
  const float d = f16_at(block);
  const uint8_t* qh = block + (kMin ? 4 : 2);
  for (int i = 0; i < 8; ++i) {
    const int q = rill::quant::q5_value(qh + 4, qh, e0 + i);
    if constexpr (kMin) {
      y[i] = d * static_cast<float>(q) + f16_at(block + 2);
    } else {
      y[i] = d * static_cast<float>(q - 16);
    }
  }
}

RILL_HD void decode8_q5_0(const uint8_t* block, int e0, float* y) { decode8_q5<false>(block, e0, y); }
RILL_HD void decode8_q5_1(const uint8_t* block, int e0, float* y) { decode8_q5<true>(block, e0, y); }

/* Q4_K: d, dmin (f16), 12 bytes of scales, 128 bytes of nibbles; sub-block
   j = e / 32: x = (d * sc_j) * q - (dmin * m_j). Q5_K: the same, with 32
   bytes before the nibbles holding the fifth bit of element 32 j + l in bit j
   of qh[l]. */
template <bool kFifthBit>
RILL_HD void decode8_k(const uint8_t* block, int e0, float* y) {
  const int j = e0 / 32, l0 = e0 % 32;
  const SubBlockK sub = sub_block_k(block, j);
  const uint8_t* qh = block + 16 + l0;
  const uint8_t* qs = block + (kFifthBit ? 48 : 16) + 32 * (j / 2) + l0;
  const int shift = 4 * (j % 2);
  for (int i = 0; i < 8; ++i) {
    int q = (qs[i] >> shift) & 0xF;
    if constexpr (kFifthBit) q |= ((qh[i] >> j) & 1) << 4;
    y[i] = sub.dl * static_cast<float>(q) - sub.ml;
  }
}

RILL_HD void decode8_q4_k(const uint8_t* block, int e0, float* y) { decode8_k<false>(block, e0, y); }
RILL_HD void decode8_q5_k(const uint8_t* block, int e0, float* y) { decode8_k<true>(block, e0, y); }

/* Q6_K: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, d
   (f16). Element e = 128 h + 32 s + l: x = (d * scale_{e/16}) * (q - 32). */
RILL_HD void decode8_q6_k(const uint8_t* block, int e0, float* y) {
  const int h = e0 / 128, s = (e0 % 128) / 32, l0 = e0 % 32;
  const float dl = f16_at(block + 208) * static_cast<float>(static_cast<int8_t>(block[192 + e0 / 16]));
  const uint8_t* ql = block + 64 * h + 32 * (s % 2) + l0;
  const uint8_t* qh = block + 128 + 32 * h + l0;
  for (int i = 0; i < 8; ++i) {
    const int low = (ql[i] >> (4 * (s / 2))) & 0xF;
    const int high = (qh[i] >> (2 * s)) & 3;
    y[i] = dl * static_cast<float>((low | (high << 4)) - 32);
  }
}

}  // namespace rill_cuda_quant

#endif
