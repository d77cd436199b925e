// Scalar conversions between f32 and the 16-bit storage formats, rounding to
// nearest even. Functions are static so that the ISA-specific translation
// units each keep their own copy (no inline symbol compiled with AVX2 flags can
// be chosen by the linker for the portable path).
#pragma once

#include <cstdint>
#include <cstring>

#include "rill.h"

namespace rill::cpu {

static inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

static inline float bf16_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

static inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

static inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // Inf, NaN
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t f32_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf (>= 65520) or is Inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: add 0.5 (as f32) so the hardware rounds the
    // value to a multiple of 2^-24 with round-to-nearest-even.
    const float shifted = bits_float(abs) + 0.5f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(float_bits(shifted) - float_bits(0.5f)));
  }
  const uint32_t rounding = 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((abs - 0x38000000u + rounding) >> 13));
}

// Storage element <-> f32, by dtype as a template parameter.
template <rill_dtype DT>
static inline float load_scalar(const void* p, int64_t i) {
  if constexpr (DT == RILL_DTYPE_F32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (DT == RILL_DTYPE_F16) {
    return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  } else {
    return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

template <rill_dtype DT>
static inline void store_scalar(void* p, int64_t i, float v) {
  if constexpr (DT == RILL_DTYPE_F32) {
    static_cast<float*>(p)[i] = v;
  } else if constexpr (DT == RILL_DTYPE_F16) {
    static_cast<uint16_t*>(p)[i] = f32_to_f16(v);
  } else {
    static_cast<uint16_t*>(p)[i] = f32_to_bf16(v);
  }
}

// v rounded to the storage format and widened back.
template <rill_dtype DT>
static inline float round_scalar(float v) {
  if constexpr (DT == RILL_DTYPE_F32) {
    return v;
  } else if constexpr (DT == RILL_DTYPE_F16) {
    return f16_to_f32(f32_to_f16(v));
  } else {
    return bf16_to_f32(f32_to_bf16(v));
  }
}

}  // namespace rill::cpu
