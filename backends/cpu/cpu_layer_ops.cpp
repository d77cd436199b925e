#include "cpu_layer_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_convert.h"
#include "cpu_internal.h"

namespace rill::cpu {
namespace {

// Widens n storage elements starting at element `first` to f32.
template <rill_dtype DT>
void load_row(const void* base, int64_t first, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load_scalar<DT>(base, first + i);
}

// Dot product with independent accumulators so that the compiler can keep
// several vector lanes busy without reassociating (no -ffast-math).
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// ---- RoPE ------------------------------------------------------------------

template <rill_dtype DT>
void rope_typed(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                int32_t rotary_dim) {
  const int64_t head_dim = x->shape[2];
  const int64_t heads = x->shape[1];
  const int64_t tokens = x->shape[0];
  const int64_t half = rotary_dim / 2;
  // Frequencies and angles in double: the reference (and the cos/sin of large
  // positions) then does not depend on f32 rounding of position * frequency.
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / rotary_dim);
  }
  void* data = tensor_data(x);
  ctx->pool.parallel_for(tokens, 4, [&](int64_t begin, int64_t end, unsigned) {
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t token = begin; token < end; ++token) {
      const double position = positions[token];
      for (int64_t i = 0; i < half; ++i) {
        const double angle = position * inv_freq[i];
        cos_t[i] = static_cast<float>(std::cos(angle));
        sin_t[i] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t row = (token * heads + h) * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = load_scalar<DT>(data, row + i);
          const float x2 = load_scalar<DT>(data, row + i + half);
          store_scalar<DT>(data, row + i, x1 * cos_t[i] - x2 * sin_t[i]);
          store_scalar<DT>(data, row + i + half, x2 * cos_t[i] + x1 * sin_t[i]);
        }
      }
    }
  });
}

// ---- Attention -----------------------------------------------------------

// One work item is (sequence b, KV head, query t): the group of query heads
// sharing that KV head is handled together so each key and value row is
// widened to f32 once per item rather than once per query head.
template <rill_dtype DT>
void attention_typed(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                     const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                     const rill_backend_tensor* out) {
  const int64_t batch = q->shape[0], queries = q->shape[1], q_heads = q->shape[2], head_dim = q->shape[3];
  const int64_t slots = k->shape[1], kv_heads = k->shape[2];
  const int64_t group = q_heads / kv_heads;
  const void* q_data = tensor_data(q);
  const void* k_data = tensor_data(k);
  const void* v_data = tensor_data(v);
  void* out_data = tensor_data(out);

  const unsigned threads = ctx->pool.size();
  // Per thread: the group's queries, their scores over every slot, their
  // accumulators, and one widened key/value row.
  const int64_t per_thread = group * head_dim + group * slots + group * head_dim + head_dim;
  std::vector<float> scratch(static_cast<size_t>(per_thread) * threads);

  const int64_t items = batch * kv_heads * queries;
  ctx->pool.parallel_for(items, 1, [&](int64_t begin, int64_t end, unsigned thread) {
    float* qf = scratch.data() + static_cast<size_t>(per_thread) * thread;
    float* scores = qf + group * head_dim;
    float* acc = scores + group * slots;
    float* row = acc + group * head_dim;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item % queries;
      const int64_t kvh = (item / queries) % kv_heads;
      const int64_t b = item / (queries * kv_heads);
      const int64_t position = kv_lengths[b] - queries + t;  // attends to slots 0..position
      const int64_t visible = position + 1;
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kvh * group + g;
        load_row<DT>(q_data, ((b * queries + t) * q_heads + h) * head_dim, head_dim, qf + g * head_dim);
        for (int64_t d = 0; d < head_dim; ++d) qf[g * head_dim + d] *= scale;
      }
      for (int64_t j = 0; j < visible; ++j) {
        const int64_t k_row = ((b * slots + j) * kv_heads + kvh) * head_dim;
        const float* kr;
        if constexpr (DT == RILL_DTYPE_F32) {
          kr = static_cast<const float*>(k_data) + k_row;
        } else {
          load_row<DT>(k_data, k_row, head_dim, row);
          kr = row;
        }
        for (int64_t g = 0; g < group; ++g) scores[g * slots + j] = dot(qf + g * head_dim, kr, head_dim);
      }
      // Softmax per query head, in f32, max-subtracted.
      for (int64_t g = 0; g < group; ++g) {
        float* s = scores + g * slots;
        const float max_score = *std::max_element(s, s + visible);
        float sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          s[j] = std::exp(s[j] - max_score);
          sum += s[j];
        }
        const float inv_sum = 1.0f / sum;
        for (int64_t j = 0; j < visible; ++j) s[j] *= inv_sum;
      }
      std::fill(acc, acc + group * head_dim, 0.0f);
      for (int64_t j = 0; j < visible; ++j) {
        const int64_t v_row = ((b * slots + j) * kv_heads + kvh) * head_dim;
        const float* vr;
        if constexpr (DT == RILL_DTYPE_F32) {
          vr = static_cast<const float*>(v_data) + v_row;
        } else {
          load_row<DT>(v_data, v_row, head_dim, row);
          vr = row;
        }
        for (int64_t g = 0; g < group; ++g) {
          const float p = scores[g * slots + j];
          float* a = acc + g * head_dim;
          for (int64_t d = 0; d < head_dim; ++d) a[d] += p * vr[d];
        }
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = kvh * group + g;
        const int64_t out_row = ((b * queries + t) * q_heads + h) * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) store_scalar<DT>(out_data, out_row + d, acc[g * head_dim + d]);
      }
    }
  });
}

// ---- Activations -----------------------------------------------------------

inline float apply(rill_act_fn fn, float x) {
  switch (fn) {
    case RILL_ACT_SILU: return x / (1.0f + std::exp(-x));
    case RILL_ACT_GELU: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case RILL_ACT_GELU_TANH: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + std::tanh(inner));
    }
    case RILL_ACT_RELU: return x > 0.0f ? x : 0.0f;
    default: return x;  // unreachable: the runtime validates fn
  }
}

template <rill_dtype DT>
void activation_typed(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                      const rill_backend_tensor* up, const rill_backend_tensor* out) {
  int64_t count = 1;
  for (int32_t i = 0; i < x->ndim; ++i) count *= x->shape[i];
  const void* x_data = tensor_data(x);
  const void* up_data = tensor_data(up);
  void* out_data = tensor_data(out);
  ctx->pool.parallel_for(count, 4096, [&](int64_t begin, int64_t end, unsigned) {
    for (int64_t i = begin; i < end; ++i) {
      float y = apply(fn, load_scalar<DT>(x_data, i));
      if (up_data != nullptr) y *= load_scalar<DT>(up_data, i);
      store_scalar<DT>(out_data, i, y);
    }
  });
}

}  // namespace

rill_status op_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                    int32_t rotary_dim) {
  switch (x->dtype) {
    case RILL_DTYPE_F32: rope_typed<RILL_DTYPE_F32>(ctx, x, positions, theta, rotary_dim); break;
    case RILL_DTYPE_F16: rope_typed<RILL_DTYPE_F16>(ctx, x, positions, theta, rotary_dim); break;
    case RILL_DTYPE_BF16: rope_typed<RILL_DTYPE_BF16>(ctx, x, positions, theta, rotary_dim); break;
    default: return fail(RILL_ERROR_DTYPE, "cpu rope: unsupported dtype");
  }
  return RILL_OK;
}

rill_status op_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                         const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                         const rill_backend_tensor* out) {
  switch (q->dtype) {
    case RILL_DTYPE_F32: attention_typed<RILL_DTYPE_F32>(ctx, q, k, v, kv_lengths, scale, out); break;
    case RILL_DTYPE_F16: attention_typed<RILL_DTYPE_F16>(ctx, q, k, v, kv_lengths, scale, out); break;
    case RILL_DTYPE_BF16: attention_typed<RILL_DTYPE_BF16>(ctx, q, k, v, kv_lengths, scale, out); break;
    default: return fail(RILL_ERROR_DTYPE, "cpu attention: unsupported dtype");
  }
  return RILL_OK;
}

rill_status op_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                          const rill_backend_tensor* up, const rill_backend_tensor* out) {
  switch (x->dtype) {
    case RILL_DTYPE_F32: activation_typed<RILL_DTYPE_F32>(ctx, fn, x, up, out); break;
    case RILL_DTYPE_F16: activation_typed<RILL_DTYPE_F16>(ctx, fn, x, up, out); break;
    case RILL_DTYPE_BF16: activation_typed<RILL_DTYPE_BF16>(ctx, fn, x, up, out); break;
    default: return fail(RILL_ERROR_DTYPE, "cpu activation: unsupported dtype");
  }
  return RILL_OK;
}

}  // namespace rill::cpu
