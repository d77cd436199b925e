// Per-format block functions behind quant.h's row functions: one block at a
// time, between a block struct (quant_blocks.h) and its floats.
#pragma once

#include "quant_blocks.h"

namespace rill::quant {

// quant_legacy.cpp (Q8_0, Q4_0), quant_q5.cpp (Q5_0, Q5_1): bit for bit gguf.quants' quantize and dequantize.
void dequantize_block(const BlockQ8_0& b, float* y);
void dequantize_block(const BlockQ4_0& b, float* y);
void quantize_block(const float* x, BlockQ8_0& b);
void quantize_block(const float* x, BlockQ4_0& b);
void dequantize_block(const BlockQ5_0& b, float* y);
void dequantize_block(const BlockQ5_1& b, float* y);
void quantize_block(const float* x, BlockQ5_0& b);
void quantize_block(const float* x, BlockQ5_1& b);
// The element of a 32-element block with the largest magnitude (the first, on
// a tie), as gguf.quants' argmax picks it: Q4_0's and Q5_0's scale comes from it.
float largest_magnitude_element(const float* x);

// quant_kquants.cpp: dequantize bit for bit GGUF's; quantize by rill's own
// search, refined until quantizing its own dequantized block gives it back.
void dequantize_block(const BlockQ4_K& b, float* y);
void dequantize_block(const BlockQ5_K& b, float* y);
void dequantize_block(const BlockQ6_K& b, float* y);
void quantize_block(const float* x, BlockQ4_K& b);
void quantize_block(const float* x, BlockQ5_K& b);
void quantize_block(const float* x, BlockQ6_K& b);

}  // namespace rill::quant
