// The reference quantizers and dequantizers of the block dtypes (rill.h's
// RILL_DTYPE_Q8_0 ... RILL_DTYPE_Q5_1), on rows of k elements, k a multiple of
// the block. Dequantization computes each element with the float operations
// GGUF's reference does, in the same order, so its results are bit for bit
// those of gguf.quants and llama.cpp. Quantization of Q8_0, Q4_0, Q5_0 and
// Q5_1 is bit for bit gguf.quants'; the K formats use rill's own search (docs/QUANTIZATION.md)
// and are stable: quantizing a dequantized row gives back the same blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill.h"

namespace rill::quant {

// True for a block (weight-only) dtype.
bool is_block(rill_dtype dtype);

// The largest magnitude a block format takes: with it every format's f16
// scales stay finite (Q4_0's d = max / 8 is the first to overflow, past 2^19).
constexpr float kLargestQuantizable = 262144.0f;  // 2^18

// The index of the first of the n values that is not finite or exceeds
// kLargestQuantizable in magnitude; n when every one can be quantized.
size_t first_unquantizable(const float* x, size_t n);

// The dtype rill_dtype_name calls name ("f32" ... "q5_1"); false for another name.
bool dtype_from_name(const std::string& name, rill_dtype& out);

// The block dtype format stores a matrix with rows of k elements in: format
// itself, except a K format on rows that are not whole blocks of 256
// (Qwen2-0.5B's 896), which gets the 32-element format llama.cpp's quantizer
// falls back to, one bit more per weight than the K format's nominal bits:
// q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0.
rill_dtype fitting_format(rill_dtype format, int64_t k);

// Bytes of one row of k elements of dtype (a block dtype: k a multiple of its block).
size_t row_bytes(rill_dtype dtype, int64_t k);

// dst: k floats from the k elements of blocks at src (any alignment).
void dequantize_row(rill_dtype dtype, const void* src, float* dst, int64_t k);

// dst: row_bytes(dtype, k) bytes of blocks for the k floats at src.
void quantize_row(rill_dtype dtype, const float* src, void* dst, int64_t k);

}  // namespace rill::quant
