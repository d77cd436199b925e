// GGUF's block layouts, bit for bit (see rill.h's rill_dtype and
// docs/QUANTIZATION.md): the one definition the runtime's reference code and
// the CPU kernels share. Scales are f16 bit patterns, little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rill::quant {

constexpr int kBlock32 = 32;    // elements per Q8_0 / Q4_0 / Q5_0 / Q5_1 block
constexpr int kBlockK = 256;    // elements per K-quant super-block
constexpr int kScaleBytesK = 12;  // Q4_K / Q5_K: eight 6-bit scales and mins

struct BlockQ8_0 {
  static constexpr int kElements = kBlock32;
  uint16_t d;
  int8_t qs[kBlock32];
};

struct BlockQ4_0 {
  static constexpr int kElements = kBlock32;
  uint16_t d;
  uint8_t qs[kBlock32 / 2];  // element j: low nibble of qs[j]; j + 16: high nibble
};

// Element j: the low 4 bits as Q4_0's, the fifth in bit j of qh (a
// little-endian uint32); x = d * (q - 16).
struct BlockQ5_0 {
  static constexpr int kElements = kBlock32;
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kBlock32 / 2];
};

// Q5_0's q with a min: x = d * q + m.
struct BlockQ5_1 {
  static constexpr int kElements = kBlock32;
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kBlock32 / 2];
};

// Sub-block j (32 elements) has scale sc_j and min m_j (6 bits each, packed in
// scales as get_scale_min reads them); x = d * sc_j * q - dmin * m_j.
struct BlockQ4_K {
  static constexpr int kElements = kBlockK;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qs[kBlockK / 2];  // 4 runs of 32 bytes: low nibbles sub-block 2r, high 2r + 1
};

struct BlockQ5_K {
  static constexpr int kElements = kBlockK;
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qh[kBlockK / 8];  // bit j of qh[l]: the fifth bit of element 32 j + l
  uint8_t qs[kBlockK / 2];  // the low 4 bits, laid out as Q4_K's
};

// Element e = 128 h + 32 s + l (h < 2, s < 4, l < 32): low 4 bits in
// ql[64 h + 32 (s % 2) + l] (low nibble for s < 2), high 2 bits in bits 2 s of
// qh[32 h + l]; x = d * scales[e / 16] * (q - 32).
struct BlockQ6_K {
  static constexpr int kElements = kBlockK;
  uint8_t ql[kBlockK / 2];
  uint8_t qh[kBlockK / 4];
  int8_t scales[kBlockK / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// Scale and min of sub-block j (0..7) of a Q4_K / Q5_K block. Static, so that
// the CPU backend's ISA-specific translation units each keep their own copy;
// constexpr, so that the CUDA kernels call it from device code
// (backends/cuda/cuda_quant_decode.h, built with --expt-relaxed-constexpr).
static constexpr void scale_min_k(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = scales[j] & 63;
    m = scales[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// The 5-bit q of element j (0..31) of a Q5_0 / Q5_1 block.
static constexpr int q5_value(const uint8_t* qs, const uint8_t* qh, int j) {
  const int low = j < kBlock32 / 2 ? qs[j] & 0xF : qs[j - kBlock32 / 2] >> 4;
  return low | (((qh[j / 8] >> (j % 8)) & 1) << 4);
}

}  // namespace rill::quant
