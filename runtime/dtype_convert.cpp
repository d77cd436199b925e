#include "dtype_convert.h"

#include <cstring>

namespace rill {
namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

uint16_t f32_to_f16(float value) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    // NaN: keep the top payload bits and force the quiet bit so it stays a NaN.
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x01FFu));
  }
  if (magnitude >= 0x477FF000u) {
    // 65520 and above round to infinity (65504 is the largest finite half;
    // 65520 is the midpoint to the next, unrepresentable, step and ties to even).
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal or zero. The result is
    // round(|value| * 2^24) in units of the smallest subnormal, 2^-24.
    if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x007FFFFFu) | 0x00800000u;
    const uint32_t shift = 126u - exponent;  // 14..24 for exponents 102..112
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u) != 0)) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa to 10 bits.
  // A carry out of the mantissa correctly bumps the exponent.
  uint32_t half = ((magnitude - 0x38000000u) >> 13);
  const uint32_t rest = magnitude & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;
  return static_cast<uint16_t>(sign | half);
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x03FFu;
  if (exponent == 0x1Fu) return float_of(sign | 0x7F800000u | (mantissa << 13));  // inf or NaN
  if (exponent != 0) return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return float_of(sign);
  // Subnormal half: normalise it, since every half subnormal is an f32 normal.
  uint32_t e = 113;
  while ((mantissa & 0x0400u) == 0) {
    mantissa <<= 1;
    --e;
  }
  return float_of(sign | (e << 23) | ((mantissa & 0x03FFu) << 13));
}

uint16_t f32_to_bf16(float value) {
  const uint32_t bits = bits_of(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; a carry may reach infinity,
  // which is the correctly rounded result for values past the largest bf16.
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_to_f32(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

void convert_from_f32(rill_dtype dtype, const float* src, void* dst, size_t count) {
  if (dtype == RILL_DTYPE_F32) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  auto* out = static_cast<uint16_t*>(dst);
  if (dtype == RILL_DTYPE_F16) {
    for (size_t i = 0; i < count; ++i) out[i] = f32_to_f16(src[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = f32_to_bf16(src[i]);
  }
}

void convert_to_f32(rill_dtype dtype, const void* src, float* dst, size_t count) {
  if (dtype == RILL_DTYPE_F32) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  // src may be unaligned (a tensor of a memory-mapped safetensors file sits
  // wherever its writer put it), so each value is read with memcpy.
  const auto* in = static_cast<const unsigned char*>(src);
  const auto load = [in](size_t i) {
    uint16_t bits;
    std::memcpy(&bits, in + i * sizeof(bits), sizeof(bits));
    return bits;
  };
  if (dtype == RILL_DTYPE_F16) {
    for (size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(load(i));
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(load(i));
  }
}

}  // namespace rill
