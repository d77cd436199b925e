// GEMM on block-format weights: the activations are quantized per 32-element
// block (ActBlock), then the outputs are computed in tiles of eight
// (cpu_quant_tile.inc) where the ISA has them, else one row dot
// (cpu_quant_dot.inc) per output. A tile gives bitwise its row dots' results
// and each output is computed by one thread, so results depend neither on the
// ISA nor on the thread count. The ISA is the other CPU kernels' (isa(),
// cpu_kernels.cpp): RILL_CPU_ISA=scalar forces the portable kernels,
// RILL_CPU_ISA=avx2 the AVX2 tiles where AVX-512 VNNI would be chosen.
// Row gathers (get_rows) from tables of any dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_convert.h"
#include "cpu_kernels.h"
#include "cpu_quant.h"
#include "quant.h"

namespace rill::cpu {
namespace quantized {
namespace {

const Kernels& row_dots_for_this_cpu() {
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  if (isa() != Isa::scalar) return avx2::kKernels;
#endif
  return scalar::kKernels;
}

// Null where the outputs are row dots only.
const Tiles* tiles_for_this_cpu() {
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  if (isa() == Isa::avx512) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) return &avx512_vnni::kTiles;
  }
  if (isa() != Isa::scalar) return &avx2::kTiles;
#endif
  return nullptr;
}

// A table's entry for a block dtype (Kernels' RowDot, Tiles' TileSet).
template <class Table>
auto for_format(const Table& table, rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_Q8_0: return table.q8_0;
    case RILL_DTYPE_Q4_0: return table.q4_0;
    case RILL_DTYPE_Q4_K: return table.q4_k;
    case RILL_DTYPE_Q5_K: return table.q5_k;
    case RILL_DTYPE_Q5_0: return table.q5_0;
    case RILL_DTYPE_Q5_1: return table.q5_1;
    default: return table.q6_k;
  }
}

// blocks * 32 activations with one scale: d = max|x| / 127 and q = x / d
// rounded to nearest (even on ties), each block keeping its own sum. A group
// holding a NaN or an infinity gets d = NaN, so that the outputs it feeds are
// NaN, as in f32.
void quantize_group(const float* x, int blocks, ActBlock* out) {
  const int count = blocks * quant::kBlock32;
  float amax = 0.0f;
  bool finite = true;
  for (int l = 0; l < count; ++l) {
    finite = finite && std::isfinite(x[l]);
    amax = std::fmax(amax, std::fabs(x[l]));
  }
  const float d = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  for (int b = 0; b < blocks; ++b) {
    int32_t sum = 0;
    for (int l = 0; l < quant::kBlock32; ++l) {
      const float q = std::fmin(127.0f, std::fmax(-127.0f, std::nearbyint(x[b * quant::kBlock32 + l] * id)));
      out[b].q[l] = static_cast<int8_t>(q);
      sum += out[b].q[l];
    }
    out[b].d = d;
    out[b].sum = sum;
  }
}

// The ActBlocks that share a scale for weights of dtype w (cpu_quant.h).
int group_blocks(rill_dtype w) {
  return w == RILL_DTYPE_Q4_K || w == RILL_DTYPE_Q5_K || w == RILL_DTYPE_Q6_K ? kGroupBlocksK : 1;
}

// One row of k activations of dtype DT as k / 32 blocks, group blocks to a scale.
template <rill_dtype DT>
void quantize_activations(const void* row, int64_t k, int group, ActBlock* out, const Tiles* tiles) {
  const QuantizeGroup quantize = tiles ? tiles->quantize_group : quantize_group;
  const int64_t count = group * quant::kBlock32;
  for (int64_t g = 0; g < k / count; ++g) {
    float x[kGroupBlocksK * quant::kBlock32];
    for (int64_t l = 0; l < count; ++l) x[l] = load_scalar<DT>(row, g * count + l);
    quantize(x, group, out + g * group);
  }
}

// Output (r, c) from its row dot: alpha, beta and the bias applied as f32 steps.
template <rill_dtype DT>
struct OutputWriter {
  float alpha, beta;
  const void* bias;
  void* out;
  int64_t n;

  void operator()(int64_t r, int64_t c, float dot) const {
    float v = alpha * dot;
    if (beta != 0.0f) v += beta * load_scalar<DT>(out, r * n + c);
    if (bias) v += load_scalar<DT>(bias, c);
    store_scalar<DT>(out, r * n + c, v);
  }
};

template <rill_dtype DT>
rill_status gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                 const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  const int64_t rows = tensor_rows(a), k = tensor_cols(a), n = w->shape[0];
  const int64_t blocks = k / quant::kBlock32;
  constexpr int64_t kTileCols = 8, kRows = kPrefillTileRows, kCols = kTileCols / kPrefillTileRows;
  const Tiles* tiles = tiles_for_this_cpu();
  const TileSet set = tiles != nullptr ? for_format(*tiles, w->dtype) : TileSet{};
  std::vector<ActBlock> acts(static_cast<size_t>(rows * blocks));
  // The blocks' sums side by side, where a prefill tile reads them so.
  std::vector<int32_t> sums(set.prefill_reads_sums && rows >= kRows ? acts.size() : 0);
  const char* a_data = tensor_data(a);
  ctx->pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1, unsigned) {
    for (int64_t r = r0; r < r1; ++r) {
      quantize_activations<DT>(a_data + r * k * static_cast<int64_t>(dtype_bytes(DT)), k, group_blocks(w->dtype),
                               acts.data() + r * blocks, tiles);
      if (sums.empty()) continue;
      for (auto b = static_cast<size_t>(r * blocks); b < static_cast<size_t>((r + 1) * blocks); ++b) {
        sums[b] = acts[b].sum;
      }
    }
  });
  const RowDot dot = for_format(row_dots_for_this_cpu(), w->dtype);
  const size_t w_row_bytes = quant::row_bytes(w->dtype, k);
  const char* w_data = tensor_data(w);
  const OutputWriter<DT> write{alpha, beta, tensor_data(bias), tensor_data(out), n};
  // Each task owns whole groups of eight weight rows (the last may be short),
  // with every activation row: one weight group stays in cache while the
  // activations stream past it, up to kTilesPerCall prefill tiles of them per
  // call (whose activation blocks for one weight block, 18 KB for 64 rows,
  // stay in L1 while the call runs over them).
  constexpr int64_t kTilesPerCall = 16;
  const int64_t groups = (n + kTileCols - 1) / kTileCols;
  ctx->pool.parallel_for(groups, std::max<int64_t>(1, 8192 / k), [&](int64_t g0, int64_t g1, unsigned) {
    float tile_out[kTilesPerCall * kTileCols];
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t c0 = g * kTileCols;
      const char* w_group = w_data + c0 * static_cast<int64_t>(w_row_bytes);
      if (set.decode == nullptr || c0 + kTileCols > n) {
        for (int64_t c = c0; c < std::min(n, c0 + kTileCols); ++c) {
          const char* w_row = w_data + c * static_cast<int64_t>(w_row_bytes);
          for (int64_t r = 0; r < rows; ++r) write(r, c, dot(w_row, acts.data() + r * blocks, k));
        }
        continue;
      }
      int64_t r = 0;
      while (rows - r >= kRows) {
        const int64_t call_tiles = std::min(kTilesPerCall, (rows - r) / kRows);
        for (int64_t part = 0; part < kTileCols / kCols; ++part) {
          set.prefill(w_group + part * kCols * static_cast<int64_t>(w_row_bytes), w_row_bytes,
                      acts.data() + r * blocks, sums.empty() ? nullptr : sums.data() + r * blocks, blocks, k,
                      call_tiles, tile_out);
          for (int64_t i = 0; i < call_tiles * kTileCols; ++i) {
            const int64_t lane = i % kTileCols;
            write(r + i / kTileCols * kRows + lane / kCols, c0 + part * kCols + lane % kCols, tile_out[i]);
          }
        }
        r += call_tiles * kRows;
      }
      for (; r < rows; ++r) {
        set.decode(w_group, w_row_bytes, acts.data() + r * blocks, nullptr, blocks, k, 1, tile_out);
        for (int64_t i = 0; i < kTileCols; ++i) write(r, c0 + i, tile_out[i]);
      }
    }
  });
  return RILL_OK;
}

template <rill_dtype DT>
void gather_dequantized(const rill_backend_tensor* table, const int32_t* ids, int64_t begin, int64_t end, void* out) {
  const int64_t d = table->shape[1];
  const size_t row_bytes = quant::row_bytes(table->dtype, d);
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t i = begin; i < end; ++i) {
    quant::dequantize_row(table->dtype, tensor_data(table) + ids[i] * static_cast<int64_t>(row_bytes), row.data(), d);
    for (int64_t j = 0; j < d; ++j) store_scalar<DT>(out, i * d + j, row[static_cast<size_t>(j)]);
  }
}

}  // namespace
}  // namespace quantized

rill_status op_gemm_any_weights(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                                const rill_backend_tensor* bias, float alpha, float beta,
                                const rill_backend_tensor* out) {
  if (!rill_backend_dtype_is_block(w->dtype)) return op_gemm(ctx, a, w, bias, alpha, beta, out);
  switch (a->dtype) {
    case RILL_DTYPE_F32: return quantized::gemm<RILL_DTYPE_F32>(ctx, a, w, bias, alpha, beta, out);
    case RILL_DTYPE_F16: return quantized::gemm<RILL_DTYPE_F16>(ctx, a, w, bias, alpha, beta, out);
    default: return quantized::gemm<RILL_DTYPE_BF16>(ctx, a, w, bias, alpha, beta, out);
  }
}

rill_status op_get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                        uint64_t count, const rill_backend_tensor* out) {
  const auto rows = static_cast<int64_t>(count);
  void* out_data = tensor_data(out);
  if (!rill_backend_dtype_is_block(table->dtype)) {
    const size_t row_bytes = static_cast<size_t>(table->shape[1]) * dtype_bytes(table->dtype);
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(static_cast<char*>(out_data) + i * static_cast<int64_t>(row_bytes),
                  tensor_data(table) + ids[i] * static_cast<int64_t>(row_bytes), row_bytes);
    }
    return RILL_OK;
  }
  ctx->pool.parallel_for(rows, 1, [&](int64_t i0, int64_t i1, unsigned) {
    switch (out->dtype) {
      case RILL_DTYPE_F32: return quantized::gather_dequantized<RILL_DTYPE_F32>(table, ids, i0, i1, out_data);
      case RILL_DTYPE_F16: return quantized::gather_dequantized<RILL_DTYPE_F16>(table, ids, i0, i1, out_data);
      default: return quantized::gather_dequantized<RILL_DTYPE_BF16>(table, ids, i0, i1, out_data);
    }
  });
  return RILL_OK;
}

}  // namespace rill::cpu
