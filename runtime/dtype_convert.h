// Conversions between f32 and the 16-bit storage formats, rounding to nearest
// even: NaN stays NaN (quiet, sign kept), values past the largest finite become
// infinity, and subnormals are produced and read exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill.h"

namespace rill {

uint16_t f32_to_f16(float value);
float f16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);

// Converts count floats to dtype into dst (count * rill_dtype_size(dtype) bytes).
void convert_from_f32(rill_dtype dtype, const float* src, void* dst, size_t count);
// Converts count elements of dtype at src (any alignment) into floats.
void convert_to_f32(rill_dtype dtype, const void* src, float* dst, size_t count);

}  // namespace rill
