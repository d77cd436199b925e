// GEMM on block-format weights: the activations are quantized per 32-element
// block (ActBlock), then each output element is one row dot (cpu_quant_dot.inc)
// computed by one thread, so results do not depend on the thread count. The
// ISA is chosen at each call: RILL_CPU_ISA=scalar forces the portable kernels,
// as for the other CPU kernels. Row gathers (get_rows) from tables of any dtype.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_convert.h"
#include "cpu_quant.h"
#include "quant.h"

namespace rill::cpu {
namespace quantized {
namespace {

const Kernels& kernels_for_this_call() {
  const char* forced = std::getenv("RILL_CPU_ISA");
  if (forced && std::strcmp(forced, "scalar") == 0) return scalar::kKernels;
#if defined(RILL_CPU_HAVE_AVX2_KERNELS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return avx2::kKernels;
#endif
  return scalar::kKernels;
}

RowDot row_dot(const Kernels& k, rill_dtype dtype) {
  switch (dtype) {
    case RILL_DTYPE_Q8_0: return k.q8_0;
    case RILL_DTYPE_Q4_0: return k.q4_0;
    case RILL_DTYPE_Q4_K: return k.q4_k;
    case RILL_DTYPE_Q5_K: return k.q5_k;
    case RILL_DTYPE_Q5_0: return k.q5_0;
    case RILL_DTYPE_Q5_1: return k.q5_1;
    default: return k.q6_k;
  }
}

// One row of k activations of dtype DT as k / 32 blocks: d = max|x| / 127 and
// q = x / d rounded to nearest (even on ties). A block holding a NaN or an
// infinity gets d = NaN, so that the outputs it feeds are NaN, as in f32.
template <rill_dtype DT>
void quantize_activations(const void* row, int64_t k, ActBlock* out) {
  for (int64_t b = 0; b < k / quant::kBlock32; ++b) {
    float x[quant::kBlock32], amax = 0.0f;
    bool finite = true;
    for (int l = 0; l < quant::kBlock32; ++l) {
      x[l] = load_scalar<DT>(row, b * quant::kBlock32 + l);
      finite = finite && std::isfinite(x[l]);
      amax = std::fmax(amax, std::fabs(x[l]));
    }
    const float d = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int l = 0; l < quant::kBlock32; ++l) {
      const float q = std::fmin(127.0f, std::fmax(-127.0f, std::nearbyint(x[l] * id)));
      out[b].q[l] = static_cast<int8_t>(q);
      sum += out[b].q[l];
    }
    out[b].d = d;
    out[b].sum = sum;
  }
}

template <rill_dtype DT>
rill_status gemm(rill_backend_context* ctx, const rill_backend_tensor* a, const rill_backend_tensor* w,
                 const rill_backend_tensor* bias, float alpha, float beta, const rill_backend_tensor* out) {
  const int64_t rows = tensor_rows(a), k = tensor_cols(a), n = w->shape[0];
  const int64_t blocks = k / quant::kBlock32;
  std::vector<ActBlock> acts(static_cast<size_t>(rows * blocks));
  const char* a_data = tensor_data(a);
  ctx->pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1, unsigned) {
    for (int64_t r = r0; r < r1; ++r) {
      quantize_activations<DT>(a_data + r * k * static_cast<int64_t>(dtype_bytes(DT)), k, acts.data() + r * blocks);
    }
  });
  const RowDot dot = row_dot(kernels_for_this_call(), w->dtype);
  const size_t w_row_bytes = quant::row_bytes(w->dtype, k);
  const char* w_data = tensor_data(w);
  const void* bias_data = tensor_data(bias);
  void* out_data = tensor_data(out);
  ctx->pool.parallel_for(n, std::max<int64_t>(1, 65536 / k), [&](int64_t c0, int64_t c1, unsigned) {
    for (int64_t c = c0; c < c1; ++c) {
      const char* w_row = w_data + c * static_cast<int64_t>(w_row_bytes);
      const float b = bias_data ? load_scalar<DT>(bias_data, c) : 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        float v = alpha * dot(w_row, acts.data() + r * blocks, k);
        if (beta != 0.0f) v += beta * load_scalar<DT>(out_data, r * n + c);
        if (bias_data) v += b;
        store_scalar<DT>(out_data, r * n + c, v);
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
