#include "cpu_layer_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_convert.h"
#include "cpu_internal.h"
#include "cpu_kernels.h"

namespace rill::cpu {
namespace {

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

// inv_freq: rotary_dim / 2 frequencies. Angles, cos and sin in double: the
// reference (and the cos/sin of large positions) then does not depend on f32
// rounding of position * frequency; factor scales cos and sin before they are
// rounded to f32.
template <rill_dtype DT>
void rope_typed(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                const std::vector<double>& inv_freq, double factor) {
  const int64_t head_dim = x->shape[2];
  const int64_t heads = x->shape[1];
  const int64_t tokens = x->shape[0];
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  char* data = tensor_data(x);
  const Kernels& kn = kernels();
  const int64_t row_bytes = head_dim * static_cast<int64_t>(dtype_bytes(DT));
  ctx->pool.parallel_for(tokens, 4, [&](int64_t begin, int64_t end, unsigned) {
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    std::vector<float> widened(DT == RILL_DTYPE_F32 ? 0 : static_cast<size_t>(head_dim));
    for (int64_t token = begin; token < end; ++token) {
      const double position = positions[token];
      for (int64_t i = 0; i < half; ++i) {
        const double angle = position * inv_freq[i];
        cos_t[i] = static_cast<float>(factor * std::cos(angle));
        sin_t[i] = static_cast<float>(factor * std::sin(angle));
      }
      for (int64_t h = 0; h < heads; ++h) {
        // 16-bit rows are widened and narrowed with the vector converters.
        char* row_data = data + (token * heads + h) * row_bytes;
        float* row = DT == RILL_DTYPE_F32 ? reinterpret_cast<float*>(row_data) : widened.data();
        if (DT != RILL_DTYPE_F32) kn.to_f32(DT, row_data, row, head_dim);
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = row[i], x2 = row[i + half];
          row[i] = x1 * cos_t[i] - x2 * sin_t[i];
          row[i + half] = x2 * cos_t[i] + x1 * sin_t[i];
        }
        if (DT != RILL_DTYPE_F32) kn.from_f32(DT, row, row_data, head_dim);
      }
    }
  });
}

rill_status rope_any(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                     const std::vector<double>& inv_freq, double factor, const char* op) {
  switch (x->dtype) {
    case RILL_DTYPE_F32: rope_typed<RILL_DTYPE_F32>(ctx, x, positions, inv_freq, factor); break;
    case RILL_DTYPE_F16: rope_typed<RILL_DTYPE_F16>(ctx, x, positions, inv_freq, factor); break;
    case RILL_DTYPE_BF16: rope_typed<RILL_DTYPE_BF16>(ctx, x, positions, inv_freq, factor); break;
    default: return fail(RILL_ERROR_DTYPE, std::string("cpu ") + op + ": unsupported dtype");
  }
  return RILL_OK;
}

// ---- Attention -----------------------------------------------------------

// Keys per chunk when one query row's keys are split across work items.
constexpr int64_t kKeyChunk = 256;
// Key chunking is used only when there are fewer query rows (sequence x query
// x query head) than this: otherwise the rows alone keep every thread busy.
// Both constants depend on nothing but the shapes, so the summation order,
// and hence the result, does not change with the thread count.
constexpr int64_t kRowsWithoutChunking = 64;

// Widens n storage elements starting at element `first` to f32 with the
// backend's vectorized converter (f32 rows are used in place by the callers).
template <rill_dtype DT>
void widen_row(const void* base, int64_t first, int64_t n, float* dst) {
  const char* src = static_cast<const char*>(base) + first * static_cast<int64_t>(sizeof(uint16_t));
  kernels().to_f32(DT, src, dst, n);
}

template <rill_dtype DT>
const float* row_f32(const void* base, int64_t first, int64_t n, float* scratch) {
  if constexpr (DT == RILL_DTYPE_F32) {
    return static_cast<const float*>(base) + first;
  } else {
    widen_row<DT>(base, first, n, scratch);
    return scratch;
  }
}

// One chunk's softmax state: the running max of its scores, the sum of
// exp(score - max), and the exp-weighted sum of its value rows.
struct ChunkPartial {
  float max_score;
  float sum;
  float* acc;  // [head_dim]
};

// One work item is (sequence b, query t, query head h, key chunk c). Query
// heads are independent (head h reads KV head h / group), so decode with a
// single sequence and token still has q_heads items; long caches with few
// rows are further split into key chunks, merged afterwards in chunk order.
// window > 0 limits a query to its last window slots; softcap > 0 caps each
// logit to softcap * tanh(logit / softcap).
template <rill_dtype DT>
void attention_typed(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                     const rill_backend_tensor* v, const int32_t* kv_lengths, float scale, int32_t window,
                     float softcap, const rill_backend_tensor* out) {
  const int64_t batch = q->shape[0], queries = q->shape[1], q_heads = q->shape[2], head_dim = q->shape[3];
  const int64_t slots = k->shape[1], kv_heads = k->shape[2];
  const int64_t group = q_heads / kv_heads;
  const void* q_data = tensor_data(q);
  const void* k_data = tensor_data(k);
  const void* v_data = tensor_data(v);
  void* out_data = tensor_data(out);

  const int64_t rows = batch * queries * q_heads;
  const bool chunked = rows < kRowsWithoutChunking && slots > kKeyChunk;
  const int64_t chunk_len = chunked ? kKeyChunk : slots;
  const int64_t chunks = chunked ? (slots + kKeyChunk - 1) / kKeyChunk : 1;

  // Per thread: the scaled query, the chunk's scores, the accumulator and one
  // widened key/value row.
  const unsigned threads = ctx->pool.size();
  const int64_t per_thread = head_dim + chunk_len + head_dim + head_dim;
  std::vector<float> scratch(static_cast<size_t>(per_thread) * threads);
  // Chunked only: per (row, chunk) the max, the sum and head_dim weighted values.
  const int64_t partial_stride = head_dim + 2;
  std::vector<float> partials(chunked ? static_cast<size_t>(rows * chunks * partial_stride) : 0);

  // Query row `row` = (b, t, h) in q/out order; its visible key count.
  auto visible_keys = [&](int64_t row) {
    const int64_t t = (row / q_heads) % queries;
    const int64_t b = row / (q_heads * queries);
    return static_cast<int64_t>(kv_lengths[b]) - queries + t + 1;  // attends to slots 0..position
  };
  const float inv_softcap = softcap > 0.0f ? 1.0f / softcap : 0.0f;
  const auto exp_f32 = kernels().exp_f32;

  ctx->pool.parallel_for(rows * chunks, 1, [&](int64_t begin, int64_t end, unsigned thread) {
    float* qf = scratch.data() + static_cast<size_t>(per_thread) * thread;
    float* scores = qf + head_dim;
    float* acc = scores + chunk_len;
    float* widened = acc + head_dim;
    for (int64_t item = begin; item < end; ++item) {
      // Items run in (b, t, KV head, chunk, head within the group) order so
      // that the heads sharing a chunk of keys and values read it while hot.
      const int64_t g = item % group;
      const int64_t c = (item / group) % chunks;
      const int64_t kvh = (item / (group * chunks)) % kv_heads;
      const int64_t bt = item / (group * chunks * kv_heads);  // b * queries + t
      const int64_t b = bt / queries;
      const int64_t row = bt * q_heads + kvh * group + g;
      const int64_t visible = visible_keys(row);
      // The chunk's slots that the row sees: below visible, and inside the window.
      const int64_t first = std::max(c * chunk_len, window > 0 ? visible - window : int64_t{0});
      const int64_t last = std::min(visible, (c + 1) * chunk_len);
      float* partial = chunked ? partials.data() + (row * chunks + c) * partial_stride : nullptr;
      if (first >= last) {  // a chunk past this row's visible keys contributes nothing
        if (partial != nullptr) {
          partial[0] = -INFINITY;
          partial[1] = 0.0f;
        }
        continue;
      }
      const float* qr = row_f32<DT>(q_data, row * head_dim, head_dim, widened);
      for (int64_t d = 0; d < head_dim; ++d) qf[d] = qr[d] * scale;
      float max_score = -INFINITY;
      for (int64_t j = first; j < last; ++j) {
        const float* kr = row_f32<DT>(k_data, ((b * slots + j) * kv_heads + kvh) * head_dim, head_dim, widened);
        float s = dot(qf, kr, head_dim);
        if (softcap > 0.0f) s = softcap * std::tanh(s * inv_softcap);
        scores[j - first] = s;
        max_score = std::max(max_score, s);
      }
      // Softmax in f32, max-subtracted; normalized once at the end.
      for (int64_t j = 0; j < last - first; ++j) scores[j] -= max_score;
      exp_f32(scores, scores, last - first);
      float sum = 0.0f;
      std::fill(acc, acc + head_dim, 0.0f);
      for (int64_t j = first; j < last; ++j) {
        const float p = scores[j - first];
        sum += p;
        const float* vr = row_f32<DT>(v_data, ((b * slots + j) * kv_heads + kvh) * head_dim, head_dim, widened);
        for (int64_t d = 0; d < head_dim; ++d) acc[d] += p * vr[d];
      }
      if (chunked) {
        partial[0] = max_score;
        partial[1] = sum;
        std::copy(acc, acc + head_dim, partial + 2);
      } else {
        const float inv_sum = 1.0f / sum;
        for (int64_t d = 0; d < head_dim; ++d) store_scalar<DT>(out_data, row * head_dim + d, acc[d] * inv_sum);
      }
    }
  });
  if (!chunked) return;

  // Merge each row's chunks in chunk order: rescale every chunk to the row's
  // global max so that no exp overflows and the weights stay exact ratios.
  ctx->pool.parallel_for(rows, 1, [&](int64_t begin, int64_t end, unsigned thread) {
    float* acc = scratch.data() + static_cast<size_t>(per_thread) * thread;
    for (int64_t row = begin; row < end; ++row) {
      const float* first_partial = partials.data() + row * chunks * partial_stride;
      float max_score = -INFINITY;
      for (int64_t c = 0; c < chunks; ++c) {
        const float* p = first_partial + c * partial_stride;
        if (p[1] > 0.0f) max_score = std::max(max_score, p[0]);
      }
      float sum = 0.0f;
      std::fill(acc, acc + head_dim, 0.0f);
      for (int64_t c = 0; c < chunks; ++c) {
        const float* p = first_partial + c * partial_stride;
        if (!(p[1] > 0.0f)) continue;
        const float weight = std::exp(p[0] - max_score);
        sum += p[1] * weight;
        for (int64_t d = 0; d < head_dim; ++d) acc[d] += p[2 + d] * weight;
      }
      const float inv_sum = 1.0f / sum;
      for (int64_t d = 0; d < head_dim; ++d) store_scalar<DT>(out_data, row * head_dim + d, acc[d] * inv_sum);
    }
  });
}

}  // namespace

rill_status op_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                    int32_t rotary_dim) {
  std::vector<double> inv_freq(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / rotary_dim);
  }
  return rope_any(ctx, x, positions, inv_freq, 1.0, "rope");
}

rill_status op_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                          const float* inv_freq, float attention_factor, int32_t rotary_dim) {
  const std::vector<double> freqs(inv_freq, inv_freq + rotary_dim / 2);
  return rope_any(ctx, x, positions, freqs, attention_factor, "rope_freqs");
}

rill_status op_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                         const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                         const rill_backend_tensor* out) {
  switch (q->dtype) {
    case RILL_DTYPE_F32: attention_typed<RILL_DTYPE_F32>(ctx, q, k, v, kv_lengths, scale, 0, 0.0f, out); break;
    case RILL_DTYPE_F16: attention_typed<RILL_DTYPE_F16>(ctx, q, k, v, kv_lengths, scale, 0, 0.0f, out); break;
    case RILL_DTYPE_BF16: attention_typed<RILL_DTYPE_BF16>(ctx, q, k, v, kv_lengths, scale, 0, 0.0f, out); break;
    default: return fail(RILL_ERROR_DTYPE, "cpu attention: unsupported dtype");
  }
  return RILL_OK;
}

rill_status op_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                            const rill_backend_tensor* v, const int32_t* kv_lengths,
                            const rill_attention_params* params, const rill_backend_tensor* out) {
  const float scale = params->scale;
  const int32_t window = RILL_STRUCT_HAS(rill_attention_params, params, window) ? params->window : 0;
  const float softcap = RILL_STRUCT_HAS(rill_attention_params, params, softcap) ? params->softcap : 0.0f;
  switch (q->dtype) {
    case RILL_DTYPE_F32:
      attention_typed<RILL_DTYPE_F32>(ctx, q, k, v, kv_lengths, scale, window, softcap, out);
      break;
    case RILL_DTYPE_F16:
      attention_typed<RILL_DTYPE_F16>(ctx, q, k, v, kv_lengths, scale, window, softcap, out);
      break;
    case RILL_DTYPE_BF16:
      attention_typed<RILL_DTYPE_BF16>(ctx, q, k, v, kv_lengths, scale, window, softcap, out);
      break;
    default: return fail(RILL_ERROR_DTYPE, "cpu attention_ex: unsupported dtype");
  }
  return RILL_OK;
}

rill_status op_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                          const rill_backend_tensor* up, const rill_backend_tensor* out) {
  if (x->dtype != RILL_DTYPE_F32 && x->dtype != RILL_DTYPE_F16 && x->dtype != RILL_DTYPE_BF16) {
    return fail(RILL_ERROR_DTYPE, "cpu activation: unsupported dtype");
  }
  const int64_t count = tensor_rows(x) * tensor_cols(x);
  const ActivationArgs args = {x->dtype, fn, tensor_data(x), up ? tensor_data(up) : nullptr, tensor_data(out)};
  const auto kernel = kernels().activation;
  ctx->pool.parallel_for(count, 4096, [&](int64_t begin, int64_t end, unsigned) { kernel(args, begin, end); });
  return RILL_OK;
}

namespace {

// max then min with x first: a NaN x fails both comparisons and passes
// through, as torch.clamp keeps it.
inline float clamp_value(float x, float lo, float hi) { return std::min(std::max(x, lo), hi); }

template <typename T, float (*Load)(T), T (*Store)(float)>
void clamp_range(const char* x, char* out, float lo, float hi, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T v;
    std::memcpy(&v, x + i * sizeof(T), sizeof(T));
    const T y = Store(clamp_value(Load(v), lo, hi));
    std::memcpy(out + i * sizeof(T), &y, sizeof(T));
  }
}

float f32_identity(float v) { return v; }

}  // namespace

rill_status op_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                     const rill_backend_tensor* out) {
  using Range = void (*)(const char*, char*, float, float, int64_t, int64_t);
  Range range = nullptr;
  switch (x->dtype) {
    case RILL_DTYPE_F32: range = clamp_range<float, f32_identity, f32_identity>; break;
    case RILL_DTYPE_F16: range = clamp_range<uint16_t, f16_to_f32, f32_to_f16>; break;
    case RILL_DTYPE_BF16: range = clamp_range<uint16_t, bf16_to_f32, f32_to_bf16>; break;
    default: return fail(RILL_ERROR_DTYPE, "cpu clamp: unsupported dtype");
  }
  const int64_t count = tensor_rows(x) * tensor_cols(x);
  const char* in = tensor_data(x);
  char* dst = tensor_data(out);
  ctx->pool.parallel_for(count, 4096, [&](int64_t begin, int64_t end, unsigned) { range(in, dst, lo, hi, begin, end); });
  return RILL_OK;
}

}  // namespace rill::cpu
