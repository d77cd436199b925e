// GEMM on quantized (block-format) weights and row gathers from quantized
// tables. Activations are quantized to 8 bits with an f32 scale, per 32
// elements for the formats of 32-element blocks and per 256 (eight 32-element
// ActBlocks sharing one scale) for the K formats, whose weight blocks span 256;
// each weight block's dot product with them is exact integer arithmetic, and
// the f32 arithmetic around it follows one fixed order, written once below,
// so the portable and the AVX2 kernels give bitwise equal results for any
// thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu_internal.h"
#include "quant_blocks.h"

namespace rill::cpu {

// Ops-table entries (cpu_quant_gemm.cpp). gemm: w of a block dtype runs here,
// any other w goes on to op_gemm. get_rows: tables of every dtype.
rill_status op_gemm_any_weights(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                                const rill_backend_tensor* bias, float alpha, float beta,
                                const rill_backend_tensor* out);
rill_status op_get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                        uint64_t count, const rill_backend_tensor* out);

namespace quantized {

// 32 activations as d * q, with the sum of q (for the formats with mins and offsets).
// For the K formats, the eight ActBlocks of a 256-element group share d.
struct ActBlock {
  float d;
  int32_t sum;
  int8_t q[quant::kBlock32];
};

// One weight row (k elements) dotted with one quantized activation row,
// accumulated block after block in f32: the whole float part of the kernel.
using RowDot = float (*)(const void* w_row, const ActBlock* a, int64_t k);

// The row-dot functions of one ISA, by format.
struct Kernels {
  RowDot q8_0, q4_0, q4_k, q5_k, q6_k, q5_0, q5_1;
};

namespace scalar {
extern const Kernels kKernels;
}
namespace avx2 {
extern const Kernels kKernels;
}

// Eight outputs at once (cpu_quant_tile.inc): out[i] is the row dot of
// activation row i / C (a + (i / C) * a_stride blocks) and weight row i % C
// (w + (i % C) * w_stride bytes), bitwise equal to the format's RowDot, for a
// tile of R x C = 8 outputs. sums: the same blocks' sums (ActBlock::sum),
// side by side (sums + (i / C) * a_stride), for loading eight at once; only
// the prefill tiles of TileSet::prefill_reads_sums read them (the others
// take the sums from a, and may be given null).
// A call computes `tiles` such tiles of the same weight rows, tile t on
// activation rows t * R onwards (a + t * R * a_stride, and sums likewise),
// into out[8 * t + i].
using TileDot = void (*)(const char* w, size_t w_stride, const ActBlock* a, const int32_t* sums, int64_t a_stride,
                         int64_t k, int64_t tiles, float* out);

// The activation rows of a prefill tile (its weight rows: 8 / kPrefillTileRows).
constexpr int kPrefillTileRows = 4;

// decode: 1 activation row x 8 weight rows; prefill: kPrefillTileRows x 8 / kPrefillTileRows.
struct TileSet {
  TileDot decode, prefill;
  bool prefill_reads_sums;  // Q4_K and Q5_K: their mins times the activations' sums
};

// The ActBlocks sharing one scale: one for the formats of 32-element blocks;
// eight for the K formats, so that a weight block's eight sub-block sums,
// each times its integer scale, add up exactly as integers and the float
// steps run once per 256 activations (llama.cpp's Q8_K does the same).
constexpr int kGroupBlocksK = 8;

// blocks * 32 activations quantized with one shared scale as
// cpu_quant_gemm.cpp's quantize_group does, bit for bit.
using QuantizeGroup = void (*)(const float* x, int blocks, ActBlock* out);

// The tiles of one ISA, by format (a format without tiles runs on its RowDot),
// and its activation quantizer.
struct Tiles {
  TileSet q8_0, q4_0, q4_k, q5_k, q6_k, q5_0, q5_1;
  QuantizeGroup quantize_group;
};

namespace avx2 {
extern const Tiles kTiles;
}
namespace avx512_vnni {
extern const Tiles kTiles;
}

// The f32 steps every ISA shares. Static: each translation unit keeps its own
// copy, compiled without contraction into FMAs (see CMakeLists.txt).

// A Q8_0 / Q4_0 / Q5_0 block: da * (dw * isum).
static inline float term_32(float da, float dw, int32_t isum) { return da * (dw * static_cast<float>(isum)); }

// A Q5_1 block, x = dw * q + mw: da * (dw * isum + mw * asum).
static inline float term_32_min(float da, float dw, float mw, int32_t isum, int32_t asum) {
  return da * (dw * static_cast<float>(isum) + mw * static_cast<float>(asum));
}

// A Q4_K / Q5_K block: da * (d * isum - dmin * msum), isum the sum over its
// sub-blocks of sc * (levels . activations), msum that of m * (the activations' sum).
static inline float term_k(float da, float d, float dmin, int32_t isum, int32_t msum) {
  return da * (d * static_cast<float>(isum) - dmin * static_cast<float>(msum));
}

// A Q6_K block: isum holds every 16-element half's sum times its scale.
static inline float term_q6(float da, float d, int32_t isum) { return da * (d * static_cast<float>(isum)); }

}  // namespace quantized
}  // namespace rill::cpu
