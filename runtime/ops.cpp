// The public operators, every interface version's: check every argument, then
// hand the op to the context's backend.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "errors.h"
#include "op_checks.h"

namespace rill {
namespace {

// A backend view of an operand that may be NULL; points into storage.
const rill_backend_tensor* view_or_null(const rill_tensor* tensor, rill_backend_tensor& storage) {
  if (tensor == nullptr) return nullptr;
  storage = backend_view(*tensor);
  return &storage;
}

int64_t last_dim(const rill_tensor& t) { return t.shape[t.ndim - 1]; }

std::string text(int64_t v) { return std::to_string(v); }

// The operand and kv_lengths checks of rill_attention and rill_attention_ex;
// fills lengths with each sequence's KV length.
rill_status check_attention(const OpChecks& check, const rill_tensor* q, const rill_tensor* k, const rill_tensor* v,
                            const int32_t* kv_lengths, size_t kv_length_count, const rill_tensor* out,
                            std::vector<int32_t>& lengths) {
  RILL_CHECK(check.context());
  RILL_CHECK(check.operand(q, "q"));
  RILL_CHECK(check.operand(k, "k"));
  RILL_CHECK(check.operand(v, "v"));
  RILL_CHECK(check.operand(out, "out"));
  RILL_CHECK(check.same_dtype({{k, "k"}, {v, "v"}, {out, "out"}}, *q, "q"));
  if (q->ndim != 4) {
    return check.failure(RILL_ERROR_SHAPE, "q: expected [B, T, Hq, head_dim], got " + rill::shape_text(*q));
  }
  if (k->ndim != 4 || k->shape[0] != q->shape[0] || k->shape[3] != q->shape[3]) {
    return check.failure(RILL_ERROR_SHAPE, "k: expected [" + text(q->shape[0]) + ", S, Hkv, " + text(q->shape[3]) +
                                               "] (B and head_dim of q), got " + rill::shape_text(*k));
  }
  const int64_t q_heads = q->shape[2], kv_heads = k->shape[2], queries = q->shape[1], slots = k->shape[1];
  if (q_heads % kv_heads != 0) {
    return check.failure(RILL_ERROR_SHAPE, "k: its " + text(kv_heads) + " KV heads do not divide the " +
                                               text(q_heads) + " query heads of q");
  }
  RILL_CHECK(check.same_shape(*v, "v", *k, "k"));
  RILL_CHECK(check.same_shape(*out, "out", *q, "q"));
  RILL_CHECK(check.distinct(out, "out", q, "q"));
  RILL_CHECK(check.distinct(out, "out", k, "k"));
  RILL_CHECK(check.distinct(out, "out", v, "v"));
  const int64_t batch = q->shape[0];
  lengths.assign(static_cast<size_t>(batch), 0);
  if (kv_lengths == nullptr) {
    if (kv_length_count != 0) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "kv_length_count: expected 0 with kv_lengths NULL, got " +
                                                            std::to_string(kv_length_count));
    }
    if (slots < queries) {
      return check.failure(RILL_ERROR_SHAPE,
                           "k: with kv_lengths NULL, S must be >= T " + text(queries) + ", got S " + text(slots));
    }
    if (slots > INT32_MAX) {
      return check.failure(RILL_ERROR_SHAPE, "k: with kv_lengths NULL, S must be at most " + text(INT32_MAX) +
                                                 " (kv lengths are int32), got S " + text(slots));
    }
    std::fill(lengths.begin(), lengths.end(), static_cast<int32_t>(slots));
  } else {
    if (kv_length_count != static_cast<size_t>(batch)) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "kv_length_count: expected B = " + text(batch) + ", got " +
                                                            std::to_string(kv_length_count));
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (kv_lengths[b] < queries || kv_lengths[b] > slots) {
        return check.failure(RILL_ERROR_INVALID_ARGUMENT, "kv_lengths[" + text(b) + "]: expected T " + text(queries) +
                                                              " to S " + text(slots) + ", got " +
                                                              text(kv_lengths[b]));
      }
      lengths[b] = kv_lengths[b];
    }
  }
  return RILL_OK;
}

// Checks shared by the fused ops: x and residual alike and distinct, and the
// [D] operands (gain, weight, bias) well formed.
rill_status check_fused(const OpChecks& check, const rill_tensor* x, const rill_tensor* residual,
                        const rill_tensor* gain, const rill_tensor* weight, const rill_tensor* bias, float eps,
                        float residual_scale, float update_scale) {
  RILL_CHECK(check.context());
  RILL_CHECK(check.operand(x, "x"));
  RILL_CHECK(check.operand(residual, "residual"));
  RILL_CHECK(check.optional_operand(gain, "gain"));
  RILL_CHECK(check.optional_operand(weight, "weight"));
  RILL_CHECK(check.optional_operand(bias, "bias"));
  RILL_CHECK(check.same_dtype({{residual, "residual"}, {gain, "gain"}, {weight, "weight"}, {bias, "bias"}}, *x, "x"));
  RILL_CHECK(check.same_shape(*residual, "residual", *x, "x"));
  const int64_t d = last_dim(*x);
  RILL_CHECK(check.vector(gain, "gain", d, "the last dim of x"));
  RILL_CHECK(check.vector(weight, "weight", d, "the last dim of x"));
  RILL_CHECK(check.vector(bias, "bias", d, "the last dim of x"));
  // x and residual are both written; the [D] operands are read while they are.
  RILL_CHECK(check.distinct(x, "x", residual, "residual"));
  for (const rill_tensor* written : {x, residual}) {
    const char* written_name = written == x ? "x" : "residual";
    RILL_CHECK(check.distinct(gain, "gain", written, written_name));
    RILL_CHECK(check.distinct(weight, "weight", written, written_name));
    RILL_CHECK(check.distinct(bias, "bias", written, written_name));
  }
  RILL_CHECK(check.epsilon(eps));
  RILL_CHECK(check.finite(residual_scale, "residual_scale"));
  RILL_CHECK(check.finite(update_scale, "update_scale"));
  return RILL_OK;
}

// Checks shared by the norms: out like x (and allowed to be x), weight and bias [D].
rill_status check_norm(const OpChecks& check, const rill_tensor* x, const rill_tensor* weight,
                       const rill_tensor* bias, float eps, const rill_tensor* out) {
  RILL_CHECK(check.context());
  RILL_CHECK(check.operand(x, "x"));
  RILL_CHECK(check.optional_operand(weight, "weight"));
  RILL_CHECK(check.optional_operand(bias, "bias"));
  RILL_CHECK(check.operand(out, "out"));
  RILL_CHECK(check.same_dtype({{weight, "weight"}, {bias, "bias"}, {out, "out"}}, *x, "x"));
  const int64_t d = last_dim(*x);
  RILL_CHECK(check.vector(weight, "weight", d, "the last dim of x"));
  RILL_CHECK(check.vector(bias, "bias", d, "the last dim of x"));
  RILL_CHECK(check.same_shape(*out, "out", *x, "x"));
  RILL_CHECK(check.distinct(out, "out", weight, "weight"));
  RILL_CHECK(check.distinct(out, "out", bias, "bias"));
  RILL_CHECK(check.epsilon(eps));
  return RILL_OK;
}

}  // namespace
}  // namespace rill

using rill::OpChecks;
using rill::text;

extern "C" {

RILL_API rill_status rill_residual_add(rill_context* ctx, rill_tensor* residual, const rill_tensor* update,
                                       const rill_tensor* gain, float residual_scale, float update_scale) {
  constexpr const char* fn = "rill_residual_add";
  return rill::guarded(fn, [&] {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    RILL_CHECK(check.operand(residual, "residual"));
    RILL_CHECK(check.operand(update, "update"));
    RILL_CHECK(check.optional_operand(gain, "gain"));
    RILL_CHECK(check.same_dtype({{update, "update"}, {gain, "gain"}}, *residual, "residual"));
    RILL_CHECK(check.same_shape(*update, "update", *residual, "residual"));
    RILL_CHECK(check.vector(gain, "gain", rill::last_dim(*residual), "the last dim of residual"));
    RILL_CHECK(check.distinct(update, "update", residual, "residual"));
    RILL_CHECK(check.distinct(gain, "gain", residual, "residual"));
    RILL_CHECK(check.finite(residual_scale, "residual_scale"));
    RILL_CHECK(check.finite(update_scale, "update_scale"));
    rill_backend_tensor r = rill::backend_view(*residual), u = rill::backend_view(*update), g{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, residual_add), "residual_add", &r,
                          static_cast<const rill_backend_tensor*>(&u), rill::view_or_null(gain, g), residual_scale,
                          update_scale);
  });
}

RILL_API rill_status rill_rms_norm(rill_context* ctx, const rill_tensor* x, const rill_tensor* weight, float eps,
                                   rill_tensor* out) {
  constexpr const char* fn = "rill_rms_norm";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_norm(OpChecks(fn, ctx), x, weight, nullptr, eps, out));
    rill_backend_tensor xv = rill::backend_view(*x), ov = rill::backend_view(*out), w{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, rms_norm), "rms_norm",
                          static_cast<const rill_backend_tensor*>(&xv), rill::view_or_null(weight, w), eps,
                          static_cast<const rill_backend_tensor*>(&ov));
  });
}

RILL_API rill_status rill_layer_norm(rill_context* ctx, const rill_tensor* x, const rill_tensor* weight,
                                     const rill_tensor* bias, float eps, rill_tensor* out) {
  constexpr const char* fn = "rill_layer_norm";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_norm(OpChecks(fn, ctx), x, weight, bias, eps, out));
    rill_backend_tensor xv = rill::backend_view(*x), ov = rill::backend_view(*out), w{}, b{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, layer_norm), "layer_norm",
                          static_cast<const rill_backend_tensor*>(&xv), rill::view_or_null(weight, w),
                          rill::view_or_null(bias, b), eps, static_cast<const rill_backend_tensor*>(&ov));
  });
}

RILL_API rill_status rill_fused_add_rms_norm(rill_context* ctx, rill_tensor* x, rill_tensor* residual,
                                             const rill_tensor* gain, const rill_tensor* weight, float eps,
                                             float residual_scale, float update_scale) {
  constexpr const char* fn = "rill_fused_add_rms_norm";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_fused(OpChecks(fn, ctx), x, residual, gain, weight, nullptr, eps, residual_scale,
                                 update_scale));
    rill_backend_tensor xv = rill::backend_view(*x), rv = rill::backend_view(*residual), g{}, w{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, fused_add_rms_norm), "fused_add_rms_norm",
                          static_cast<const rill_backend_tensor*>(&xv), static_cast<const rill_backend_tensor*>(&rv),
                          rill::view_or_null(gain, g), rill::view_or_null(weight, w), eps, residual_scale,
                          update_scale);
  });
}

RILL_API rill_status rill_fused_add_layer_norm(rill_context* ctx, rill_tensor* x, rill_tensor* residual,
                                               const rill_tensor* gain, const rill_tensor* weight,
                                               const rill_tensor* bias, float eps, float residual_scale,
                                               float update_scale) {
  constexpr const char* fn = "rill_fused_add_layer_norm";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_fused(OpChecks(fn, ctx), x, residual, gain, weight, bias, eps, residual_scale,
                                 update_scale));
    rill_backend_tensor xv = rill::backend_view(*x), rv = rill::backend_view(*residual), g{}, w{}, b{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, fused_add_layer_norm), "fused_add_layer_norm",
                          static_cast<const rill_backend_tensor*>(&xv), static_cast<const rill_backend_tensor*>(&rv),
                          rill::view_or_null(gain, g), rill::view_or_null(weight, w), rill::view_or_null(bias, b), eps,
                          residual_scale, update_scale);
  });
}

RILL_API rill_status rill_gemm(rill_context* ctx, const rill_tensor* a, const rill_tensor* w, const rill_tensor* bias,
                               float alpha, float beta, rill_tensor* out) {
  constexpr const char* fn = "rill_gemm";
  return rill::guarded(fn, [&] {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    RILL_CHECK(check.operand(a, "a"));
    RILL_CHECK(check.weight_operand(w, "w"));
    RILL_CHECK(check.optional_operand(bias, "bias"));
    RILL_CHECK(check.operand(out, "out"));
    const bool block_w = rill_dtype_size(w->dtype) == 0;
    // A block-dtype w holds weights in its own format, whatever a's dtype.
    RILL_CHECK(check.same_dtype({{block_w ? nullptr : w, "w"}, {bias, "bias"}, {out, "out"}}, *a, "a"));
    const int64_t k = rill::last_dim(*a);
    if (w->ndim != 2 || w->shape[1] != k) {
      return check.failure(RILL_ERROR_SHAPE, "w: expected shape [N, " + std::to_string(k) +
                                                 "] (K = the last dim of a), got " + rill::shape_text(*w));
    }
    const int64_t n = w->shape[0];
    RILL_CHECK(check.vector(bias, "bias", n, "N, the first dim of w"));
    rill_tensor expected_out = *a;  // only its shape is used, for the comparison and the message
    expected_out.shape[a->ndim - 1] = n;
    RILL_CHECK(check.same_shape(*out, "out", expected_out, "a with its last dim replaced by N"));
    RILL_CHECK(check.distinct(out, "out", a, "a"));
    RILL_CHECK(check.distinct(out, "out", w, "w"));
    RILL_CHECK(check.distinct(out, "out", bias, "bias"));
    RILL_CHECK(check.finite(alpha, "alpha"));
    RILL_CHECK(check.finite(beta, "beta"));
    if (block_w) {
      rill_backend_op_desc desc{};
      desc.struct_size = sizeof desc;
      desc.op = RILL_BACKEND_OP_GEMM;
      desc.dtype = a->dtype;
      desc.rows = static_cast<int64_t>(a->numel) / k;
      desc.cols = k;
      desc.n = n;
      desc.has_bias = bias != nullptr ? 1u : 0u;
      desc.weight_dtype = w->dtype;
      RILL_CHECK(rill::check_block_weights(fn, check, *ctx, desc, "w"));
    }
    rill_backend_tensor av = rill::backend_view(*a), wv = rill::backend_view(*w), ov = rill::backend_view(*out), b{};
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, gemm), "gemm",
                          static_cast<const rill_backend_tensor*>(&av), static_cast<const rill_backend_tensor*>(&wv),
                          rill::view_or_null(bias, b), alpha, beta, static_cast<const rill_backend_tensor*>(&ov));
  });
}

RILL_API rill_status rill_get_rows(rill_context* ctx, const rill_tensor* table, const int32_t* ids, size_t id_count,
                                   rill_tensor* out) {
  constexpr const char* fn = "rill_get_rows";
  return rill::guarded(fn, [&] {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    RILL_CHECK(check.weight_operand(table, "table"));
    RILL_CHECK(check.operand(out, "out"));
    const bool block_table = rill_dtype_size(table->dtype) == 0;
    if (!block_table) RILL_CHECK(check.same_dtype(table, "table", *out, "out"));
    if (table->ndim != 2) {
      return check.failure(RILL_ERROR_SHAPE, "table: expected 2 dims [V, D], got " + rill::shape_text(*table));
    }
    const int64_t vocab = table->shape[0], d = table->shape[1];
    RILL_CHECK(check.array(ids, "ids"));
    if (rill::last_dim(*out) != d || out->numel != id_count * static_cast<size_t>(d)) {
      return check.failure(RILL_ERROR_SHAPE, "out: expected " + std::to_string(id_count) + " rows of D = " +
                                                 std::to_string(d) + " (id_count, and the last dim of table), got " +
                                                 rill::shape_text(*out));
    }
    for (size_t i = 0; i < id_count; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        return check.failure(RILL_ERROR_INVALID_ARGUMENT, "ids[" + std::to_string(i) + "]: expected 0 to V - 1 = " +
                                                              std::to_string(vocab - 1) + ", got " +
                                                              std::to_string(ids[i]));
      }
    }
    RILL_CHECK(check.distinct(out, "out", table, "table"));
    if (block_table) {
      rill_backend_op_desc desc{};
      desc.struct_size = sizeof desc;
      desc.op = RILL_BACKEND_OP_GET_ROWS;
      desc.dtype = out->dtype;
      desc.rows = static_cast<int64_t>(id_count);
      desc.cols = d;
      desc.n = vocab;
      desc.weight_dtype = table->dtype;
      RILL_CHECK(rill::check_block_weights(fn, check, *ctx, desc, "table"));
    }
    rill_backend_tensor tv = rill::backend_view(*table), ov = rill::backend_view(*out);
    ov.ndim = 2;
    ov.shape[0] = static_cast<int64_t>(id_count);
    ov.shape[1] = d;
    ov.shape[2] = ov.shape[3] = 1;
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, get_rows), "get_rows",
                          static_cast<const rill_backend_tensor*>(&tv), ids, static_cast<uint64_t>(id_count),
                          static_cast<const rill_backend_tensor*>(&ov));
  });
}

// Interface version 2: the decoder-layer ops.

namespace {

// The checks shared by rill_rope and rill_rope_freqs; fills view with x as
// [tokens, heads, head_dim].
rill_status check_rope(const OpChecks& check, rill_tensor* x, const int32_t* positions, size_t position_count,
                       int32_t rotary_dim, rill_backend_tensor& view) {
  RILL_CHECK(check.context());
  RILL_CHECK(check.operand(x, "x"));
  if (x->ndim != 3 && x->ndim != 4) {
    return check.failure(RILL_ERROR_SHAPE, "x: expected [tokens, heads, head_dim] or [B, T, heads, head_dim], got " +
                                               rill::shape_text(*x));
  }
  const int64_t head_dim = x->shape[x->ndim - 1], heads = x->shape[x->ndim - 2];
  const int64_t tokens = static_cast<int64_t>(x->numel) / (heads * head_dim);
  RILL_CHECK(check.array(positions, "positions"));
  if (position_count != static_cast<size_t>(tokens)) {
    return check.failure(RILL_ERROR_INVALID_ARGUMENT, "position_count: expected " + text(tokens) +
                                                          " (one per token of x " + rill::shape_text(*x) + "), got " +
                                                          std::to_string(position_count));
  }
  RILL_CHECK(check.non_negative(positions, position_count, "positions"));
  if (rotary_dim < 2 || rotary_dim > head_dim || rotary_dim % 2 != 0) {
    return check.failure(RILL_ERROR_INVALID_ARGUMENT, "rotary_dim: expected an even number from 2 to head_dim " +
                                                          text(head_dim) + ", got " + text(rotary_dim));
  }
  view = rill::backend_view(*x);
  view.ndim = 3;
  view.shape[0] = tokens;
  view.shape[1] = heads;
  view.shape[2] = head_dim;
  view.shape[3] = 1;
  return RILL_OK;
}

}  // namespace

RILL_API rill_status rill_rope(rill_context* ctx, rill_tensor* x, const int32_t* positions, size_t position_count,
                               float theta, int32_t rotary_dim) {
  constexpr const char* fn = "rill_rope";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    rill_backend_tensor view{};
    RILL_CHECK(check_rope(check, x, positions, position_count, rotary_dim, view));
    RILL_CHECK(check.positive(theta, "theta"));
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, rope), "rope",
                          static_cast<const rill_backend_tensor*>(&view), positions, theta, rotary_dim);
  });
}

RILL_API rill_status rill_rope_freqs(rill_context* ctx, rill_tensor* x, const int32_t* positions,
                                     size_t position_count, const float* inv_freq, size_t inv_freq_count,
                                     float attention_factor, int32_t rotary_dim) {
  constexpr const char* fn = "rill_rope_freqs";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    rill_backend_tensor view{};
    RILL_CHECK(check_rope(check, x, positions, position_count, rotary_dim, view));
    RILL_CHECK(check.array(inv_freq, "inv_freq"));
    if (inv_freq_count != static_cast<size_t>(rotary_dim / 2)) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "inv_freq_count: expected rotary_dim / 2 = " +
                                                            text(rotary_dim / 2) + ", got " +
                                                            std::to_string(inv_freq_count));
    }
    for (size_t i = 0; i < inv_freq_count; ++i) {
      RILL_CHECK(check.positive(inv_freq[i], ("inv_freq[" + std::to_string(i) + "]").c_str()));
    }
    RILL_CHECK(check.positive(attention_factor, "attention_factor"));
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, rope_freqs), "rope_freqs",
                          static_cast<const rill_backend_tensor*>(&view), positions, inv_freq, attention_factor,
                          rotary_dim);
  });
}

RILL_API rill_status rill_attention(rill_context* ctx, const rill_tensor* q, const rill_tensor* k, const rill_tensor* v,
                                    const int32_t* kv_lengths, size_t kv_length_count, float scale, rill_tensor* out) {
  constexpr const char* fn = "rill_attention";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    std::vector<int32_t> lengths;
    RILL_CHECK(rill::check_attention(check, q, k, v, kv_lengths, kv_length_count, out, lengths));
    RILL_CHECK(check.positive(scale, "scale"));
    const rill_backend_tensor qv = rill::backend_view(*q), kv = rill::backend_view(*k);
    const rill_backend_tensor vv = rill::backend_view(*v), ov = rill::backend_view(*out);
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, attention), "attention", &qv, &kv, &vv,
                          static_cast<const int32_t*>(lengths.data()), scale, &ov);
  });
}

RILL_API rill_status rill_attention_ex(rill_context* ctx, const rill_tensor* q, const rill_tensor* k,
                                       const rill_tensor* v, const int32_t* kv_lengths, size_t kv_length_count,
                                       const rill_attention_params* params, rill_tensor* out) {
  constexpr const char* fn = "rill_attention_ex";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    std::vector<int32_t> lengths;
    RILL_CHECK(rill::check_attention(check, q, k, v, kv_lengths, kv_length_count, out, lengths));
    if (params == nullptr) return check.failure(RILL_ERROR_INVALID_ARGUMENT, "params: expected non-NULL, got NULL");
    if (!RILL_STRUCT_HAS(rill_attention_params, params, scale)) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "params->struct_size: expected at least " +
                               text(offsetof(rill_attention_params, scale) + sizeof(float)) +
                               " (up to scale), got " + text(params->struct_size));
    }
    // Members past the caller's struct_size are 0; the backend gets them all.
    rill_attention_params p{sizeof(rill_attention_params), params->scale, 0, 0.0f};
    if (RILL_STRUCT_HAS(rill_attention_params, params, window)) p.window = params->window;
    if (RILL_STRUCT_HAS(rill_attention_params, params, softcap)) p.softcap = params->softcap;
    RILL_CHECK(check.positive(p.scale, "params->scale"));
    if (p.window < 0) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "params->window: expected >= 0 (0 = no window), got " + text(p.window));
    }
    if (!std::isfinite(p.softcap) || p.softcap < 0.0f) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "params->softcap: expected finite and >= 0 (0 = off), got " + std::to_string(p.softcap));
    }
    const rill_backend_tensor qv = rill::backend_view(*q), kv = rill::backend_view(*k);
    const rill_backend_tensor vv = rill::backend_view(*v), ov = rill::backend_view(*out);
    const int32_t* lengths_data = lengths.data();
    if (p.window == 0 && p.softcap == 0.0f) {
      return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, attention), "attention", &qv, &kv, &vv,
                            lengths_data, p.scale, &ov);
    }
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, attention_ex),
                          "attention_ex (a sliding window or logit soft-cap)", &qv, &kv, &vv, lengths_data,
                          static_cast<const rill_attention_params*>(&p), &ov);
  });
}

RILL_API rill_status rill_activation(rill_context* ctx, rill_act_fn fn_kind, const rill_tensor* x,
                                     const rill_tensor* up, rill_tensor* out) {
  constexpr const char* fn = "rill_activation";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    const int32_t kind = rill::enum_value(fn_kind);
    if (kind < RILL_ACT_SILU || kind > RILL_ACT_RELU) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "fn: expected RILL_ACT_SILU, _GELU, _GELU_TANH or _RELU, got " + text(kind));
    }
    RILL_CHECK(check.operand(x, "x"));
    RILL_CHECK(check.optional_operand(up, "up"));
    RILL_CHECK(check.operand(out, "out"));
    RILL_CHECK(check.same_dtype({{up, "up"}, {out, "out"}}, *x, "x"));
    if (up != nullptr) RILL_CHECK(check.same_shape(*up, "up", *x, "x"));
    RILL_CHECK(check.same_shape(*out, "out", *x, "x"));
    rill_backend_tensor u{};
    const rill_backend_tensor xv = rill::backend_view(*x), ov = rill::backend_view(*out);
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, activation), "activation", fn_kind, &xv,
                          rill::view_or_null(up, u), &ov);
  });
}

}  // extern "C"
