/* Block (quantized) weights, interface version 4: gemm with a weight of a
 * block dtype and get_rows from tables of every dtype.
 *
 * GEMM: up to kGemvMaxRows rows of a (decode) run a dequantizing GEMV, one
 * warp per output feature: each lane decodes eight weights at a time
 * (cuda_quant_decode.h) and multiplies them with every row of a, f32
 * accumulation, a warp reduction at the end. More rows (prefill) dequantize
 * the whole weight into the activations' dtype in a context-owned area and
 * run cuBLASLt's GEMM on it (cuda_gemm.cpp): N * K elements of that dtype
 * stay allocated for the largest weight seen. f16/bf16 activations see
 * weights rounded to 16 bits on that path; f32 activations see them exact.
 *
 * get_rows: block tables decoded eight elements per thread and rounded to
 * out's dtype (round to nearest even); element tables copied.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "cuda_backend.h"
#include "cuda_kernel_common.cuh"
#include "cuda_quant_decode.h"

namespace {

using namespace rill_cuda_kernels;
namespace q = rill_cuda_quant;

/* One block format: its block size in bytes and elements, and its decode. */
#define RILL_CUDA_BLOCK_FORMAT(Name, bytes, elements, decode)                                   \
  struct Name {                                                                                 \
    static constexpr int kBytes = bytes;                                                        \
    static constexpr int kElements = elements;                                                  \
    __device__ static void decode8(const uint8_t* block, int e0, float* y) { decode(block, e0, y); } \
  };
RILL_CUDA_BLOCK_FORMAT(FormatQ8_0, q::kQ8_0Bytes, 32, q::decode8_q8_0)
RILL_CUDA_BLOCK_FORMAT(FormatQ4_0, q::kQ4_0Bytes, 32, q::decode8_q4_0)
RILL_CUDA_BLOCK_FORMAT(FormatQ5_0, q::kQ5_0Bytes, 32, q::decode8_q5_0)
RILL_CUDA_BLOCK_FORMAT(FormatQ5_1, q::kQ5_1Bytes, 32, q::decode8_q5_1)
RILL_CUDA_BLOCK_FORMAT(FormatQ4_K, q::kQ4_KBytes, 256, q::decode8_q4_k)
RILL_CUDA_BLOCK_FORMAT(FormatQ5_K, q::kQ5_KBytes, 256, q::decode8_q5_k)
RILL_CUDA_BLOCK_FORMAT(FormatQ6_K, q::kQ6_KBytes, 256, q::decode8_q6_k)
#undef RILL_CUDA_BLOCK_FORMAT

/* Decodes elements e..e+7 (e a multiple of 8) of a row of blocks. */
template <class Format>
__device__ __forceinline__ void decode8_in_row(const uint8_t* row, int64_t e, float* y) {
  Format::decode8(row + (e / Format::kElements) * Format::kBytes, static_cast<int>(e % Format::kElements), y);
}

/* ---- GEMV (decode) ------------------------------------------------------ */

constexpr int kGemvMaxRows = 4;
constexpr int kGemvWarps = 4; /* output features per block of threads */

/* out[r, col] = alpha * sum_e a[r, e] * w[col, e] + beta * out[r, col] + bias[col]
   for r < rows (<= kGemvMaxRows); one warp per col. */
template <class Format, typename T>
__global__ void __launch_bounds__(32 * kGemvWarps)
    gemv_kernel(const T* __restrict__ a, const uint8_t* __restrict__ w, int64_t row_bytes, const T* __restrict__ bias,
                float alpha, float beta, T* __restrict__ out, int rows, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (col >= n) return;  // the whole warp: col is the same for its lanes
  const uint8_t* w_row = w + col * row_bytes;
  float acc[kGemvMaxRows] = {};
  for (int64_t e = 8 * static_cast<int64_t>(lane); e < k; e += 8 * 32) {
    float weights[8];
    decode8_in_row<Format>(w_row, e, weights);
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r) {
      if (r >= rows) break;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[r] += weights[i] * load_f32(a, r * k + e + i);
    }
  }
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) {
    for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], offset);
  }
  if (lane != 0) return;
  for (int r = 0; r < rows; ++r) {
    float v = alpha * acc[r];
    if (beta != 0.0f) v += beta * load_f32(out, r * n + col);  // beta == 0 never reads out (it may hold NaN)
    if (bias) v += load_f32(bias, col);
    store_f32(out, r * n + col, v);
  }
}

/* ---- Dequantize and gather ---------------------------------------------- */

/* out row i = row ids[i] of a block table (ids == nullptr: row i), decoded and
   rounded to T. groups_per_row = D / 8. */
template <class Format, typename T>
__global__ void dequantize_rows_kernel(const uint8_t* __restrict__ table, int64_t row_bytes,
                                       const int32_t* __restrict__ ids, int64_t count, int64_t groups_per_row,
                                       T* __restrict__ out) {
  const int64_t total = count * groups_per_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t i = idx / groups_per_row, e = (idx % groups_per_row) * 8;
    const int64_t source = ids ? ids[i] : i;
    float y[8];
    decode8_in_row<Format>(table + source * row_bytes, e, y);
    const int64_t first = i * groups_per_row * 8 + e;
#pragma unroll
    for (int j = 0; j < 8; ++j) store_f32(out, first + j, y[j]);
  }
}

/* out row i = table row ids[i], element tables of out's dtype. */
template <typename T>
__global__ void copy_rows_kernel(const T* __restrict__ table, const int32_t* __restrict__ ids, int64_t count, int64_t d,
                                 T* __restrict__ out) {
  const int64_t total = count * d;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    out[idx] = table[static_cast<int64_t>(ids[idx / d]) * d + idx % d];
  }
}

/* ---- Host side ---------------------------------------------------------- */

constexpr int kThreads = 256;

int64_t row_bytes_of(rill_dtype dtype, int64_t k) {
  return k / static_cast<int64_t>(rill_backend_block_elements(dtype)) *
         static_cast<int64_t>(rill_backend_block_bytes(dtype));
}

/* Calls fn.template operator()<Format, T>() for the block dtype and the
   element dtype; returns RILL_ERROR_DTYPE naming op for anything else. */
template <typename T, class Fn>
rill_status with_format(rill_dtype block_dtype, const char* op, const Fn& fn) {
  switch (block_dtype) {
    case RILL_DTYPE_Q8_0: fn.template operator()<FormatQ8_0, T>(); return RILL_OK;
    case RILL_DTYPE_Q4_0: fn.template operator()<FormatQ4_0, T>(); return RILL_OK;
    case RILL_DTYPE_Q5_0: fn.template operator()<FormatQ5_0, T>(); return RILL_OK;
    case RILL_DTYPE_Q5_1: fn.template operator()<FormatQ5_1, T>(); return RILL_OK;
    case RILL_DTYPE_Q4_K: fn.template operator()<FormatQ4_K, T>(); return RILL_OK;
    case RILL_DTYPE_Q5_K: fn.template operator()<FormatQ5_K, T>(); return RILL_OK;
    case RILL_DTYPE_Q6_K: fn.template operator()<FormatQ6_K, T>(); return RILL_OK;
    default:
      return rill_cuda_fail(RILL_ERROR_DTYPE, std::string("cuda: ") + op + ": expected a block dtype, given " +
                                                  rill_backend_dtype_name(block_dtype));
  }
}
template <class Fn>
rill_status with_formats(rill_dtype block_dtype, rill_dtype element_dtype, const char* op, const Fn& fn) {
  switch (element_dtype) {
    case RILL_DTYPE_F32: return with_format<float>(block_dtype, op, fn);
    case RILL_DTYPE_F16: return with_format<__half>(block_dtype, op, fn);
    case RILL_DTYPE_BF16: return with_format<__nv_bfloat16>(block_dtype, op, fn);
    default: return bad_dtype(op, element_dtype);
  }
}

/* The launch of dequantize_rows_kernel for one format and output dtype:
   count rows of d elements from table (at ids, a device array, or the first
   count rows when ids is null) into out. */
struct DequantizeLaunch {
  rill_backend_context* ctx;
  const uint8_t* table;
  int64_t row_bytes;
  const int32_t* ids;
  int64_t count, d;
  void* out;
  template <class Format, typename T>
  void operator()() const {
    dequantize_rows_kernel<Format, T><<<grid_for(count * (d / 8), kThreads, ctx->sm_count), kThreads, 0,
                                        ctx->stream>>>(table, row_bytes, ids, count, d / 8, static_cast<T*>(out));
  }
};

rill_status dequantize_rows(rill_backend_context* ctx, const char* op, const rill_backend_tensor* table,
                            const int32_t* ids, int64_t count, int64_t d, rill_dtype out_dtype, void* out) {
  const auto* table_data = static_cast<const uint8_t*>(rill_cuda_data(table));
  const DequantizeLaunch launch{ctx, table_data, row_bytes_of(table->dtype, d), ids, count, d, out};
  const rill_status status = with_formats(table->dtype, out_dtype, op, launch);
  if (status != RILL_OK) return status;
  return rill_cuda_check(cudaGetLastError(), (std::string(op) + " dequantize kernel launch").c_str());
}

/* The launch of gemv_kernel for one format and activation dtype. */
struct GemvLaunch {
  rill_backend_context* ctx;
  const rill_backend_tensor *a, *w, *bias, *out;
  float alpha, beta;
  int64_t rows, n, k;
  template <class Format, typename T>
  void operator()() const {
    gemv_kernel<Format, T><<<static_cast<unsigned>(ceil_div(n, kGemvWarps)), 32 * kGemvWarps, 0, ctx->stream>>>(
        static_cast<const T*>(rill_cuda_data(a)), static_cast<const uint8_t*>(rill_cuda_data(w)),
        row_bytes_of(w->dtype, k), static_cast<const T*>(rill_cuda_data(bias)), alpha, beta,
        static_cast<T*>(rill_cuda_data(out)), static_cast<int>(rows), n, k);
  }
};

}  // namespace

rill_status rill_cuda_gemm_block(rill_backend_context* ctx, const rill_backend_tensor* a,
                                 const rill_backend_tensor* w, const rill_backend_tensor* bias, float alpha,
                                 float beta, const rill_backend_tensor* out) {
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  const int64_t rows = rill_cuda_rows(a), k = rill_cuda_cols(a), n = w->shape[0];
  if (rows == 0 || n == 0) return RILL_OK;  // nothing to write (and no empty grid to launch)
  if (rows <= kGemvMaxRows) {
    status = with_formats(w->dtype, a->dtype, "gemm", GemvLaunch{ctx, a, w, bias, out, alpha, beta, rows, n, k});
    if (status != RILL_OK) return status;
    return rill_cuda_check(cudaGetLastError(), "gemm (block weights) kernel launch");
  }
  // Prefill: the weight dequantized into a's dtype, then cuBLASLt.
  const std::size_t dense_bytes =
      static_cast<std::size_t>(n) * static_cast<std::size_t>(k) * rill_backend_block_bytes(a->dtype);
  status = rill_cuda_reserve(ctx, &ctx->dequantized, dense_bytes,
                             ("cudaMalloc of " + std::to_string(dense_bytes) + " bytes (dequantized gemm weights)").c_str());
  if (status != RILL_OK) return status;
  status = dequantize_rows(ctx, "gemm", w, nullptr, n, k, a->dtype, ctx->dequantized.data);
  if (status != RILL_OK) return status;
  rill_backend_buffer dense_buffer;
  dense_buffer.data = ctx->dequantized.data;
  dense_buffer.bytes = dense_bytes;
  rill_backend_tensor dense = *w;
  dense.buffer = &dense_buffer;
  dense.offset = 0;
  dense.dtype = a->dtype;
  return rill_cuda_gemm(ctx, a, &dense, bias, alpha, beta, out);
}

rill_status rill_cuda_get_rows(rill_backend_context* ctx, const rill_backend_tensor* table, const int32_t* ids,
                               uint64_t count, const rill_backend_tensor* out) {
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK || count == 0) return status;
  const int64_t d = rill_cuda_cols(table), rows = static_cast<int64_t>(count);
  void* device_ids = nullptr;
  status = rill_cuda_upload(ctx, ids, static_cast<std::size_t>(count) * sizeof(int32_t), &device_ids);
  if (status != RILL_OK) return status;
  const auto* id_data = static_cast<const int32_t*>(device_ids);
  if (rill_backend_dtype_is_block(table->dtype)) {
    return dequantize_rows(ctx, "get_rows", table, id_data, rows, d, out->dtype, rill_cuda_data(out));
  }
  if (table->dtype != out->dtype) {
    return rill_cuda_fail(RILL_ERROR_DTYPE, std::string("cuda: get_rows: table of dtype ") +
                                                rill_backend_dtype_name(table->dtype) + " into out of dtype " +
                                                rill_backend_dtype_name(out->dtype) +
                                                ": an element table must have out's dtype");
  }
  const unsigned grid = grid_for(rows * d, kThreads, ctx->sm_count);
  void* out_data = rill_cuda_data(out);
  const void* table_data = rill_cuda_data(table);
  switch (out->dtype) {
    case RILL_DTYPE_F32:
      copy_rows_kernel<<<grid, kThreads, 0, ctx->stream>>>(static_cast<const float*>(table_data), id_data, rows, d,
                                                           static_cast<float*>(out_data));
      break;
    case RILL_DTYPE_F16:
    case RILL_DTYPE_BF16:  // a copy: the 16 bits move unchanged
      copy_rows_kernel<<<grid, kThreads, 0, ctx->stream>>>(static_cast<const uint16_t*>(table_data), id_data, rows,
                                                           d, static_cast<uint16_t*>(out_data));
      break;
    default:
      return bad_dtype("get_rows", out->dtype);
  }
  return rill_cuda_check(cudaGetLastError(), "get_rows kernel launch");
}
