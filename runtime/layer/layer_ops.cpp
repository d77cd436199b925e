// The decoder-layer operators of the public API (rill_rope, rill_attention,
// rill_activation): check every argument, then hand the op to the backend.
#include <cmath>
#include <vector>

#include "errors.h"
#include "op_checks.h"

namespace {

using rill::OpChecks;

std::string text(int64_t v) { return std::to_string(v); }

}  // namespace

extern "C" {

RILL_API rill_status rill_rope(rill_context* ctx, rill_tensor* x, const int32_t* positions, size_t position_count,
                               float theta, int32_t rotary_dim) {
  constexpr const char* fn = "rill_rope";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    RILL_CHECK(check.operand(x, "x"));
    if (x->ndim != 3 && x->ndim != 4) {
      return check.failure(RILL_ERROR_SHAPE, "x: expected [tokens, heads, head_dim] or [B, T, heads, head_dim], got " +
                                                 rill::shape_text(*x));
    }
    const int64_t head_dim = x->shape[x->ndim - 1], heads = x->shape[x->ndim - 2];
    const int64_t tokens = static_cast<int64_t>(x->numel) / (heads * head_dim);
    if (positions == nullptr)
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "positions: expected an array, got NULL");
    if (position_count != static_cast<size_t>(tokens)) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "position_count: expected " + text(tokens) +
                                                            " (one per token of x " + rill::shape_text(*x) + "), got " +
                                                            std::to_string(position_count));
    }
    for (size_t i = 0; i < position_count; ++i) {
      if (positions[i] < 0) {
        return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                             "positions[" + std::to_string(i) + "]: expected >= 0, got " + text(positions[i]));
      }
    }
    if (!std::isfinite(theta) || theta <= 0) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "theta: expected a finite value > 0, got " + std::to_string(theta));
    }
    if (rotary_dim < 2 || rotary_dim > head_dim || rotary_dim % 2 != 0) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT, "rotary_dim: expected an even number from 2 to head_dim " +
                                                            text(head_dim) + ", got " + text(rotary_dim));
    }
    rill_backend_tensor view = rill::backend_view(*x);
    view.ndim = 3;
    view.shape[0] = tokens;
    view.shape[1] = heads;
    view.shape[2] = head_dim;
    view.shape[3] = 1;
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, rope), "rope",
                          static_cast<const rill_backend_tensor*>(&view), positions, theta, rotary_dim);
  });
}

RILL_API rill_status rill_attention(rill_context* ctx, const rill_tensor* q, const rill_tensor* k, const rill_tensor* v,
                                    const int32_t* kv_lengths, size_t kv_length_count, float scale, rill_tensor* out) {
  constexpr const char* fn = "rill_attention";
  return rill::guarded(fn, [&]() -> rill_status {
    const OpChecks check(fn, ctx);
    RILL_CHECK(check.context());
    RILL_CHECK(check.operand(q, "q"));
    RILL_CHECK(check.operand(k, "k"));
    RILL_CHECK(check.operand(v, "v"));
    RILL_CHECK(check.operand(out, "out"));
    RILL_CHECK(check.same_dtype(k, "k", *q, "q"));
    RILL_CHECK(check.same_dtype(v, "v", *q, "q"));
    RILL_CHECK(check.same_dtype(out, "out", *q, "q"));
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
    if (!std::isfinite(scale) || scale <= 0) {
      return check.failure(RILL_ERROR_INVALID_ARGUMENT,
                           "scale: expected a finite value > 0, got " + std::to_string(scale));
    }
    const int64_t batch = q->shape[0];
    std::vector<int32_t> lengths(static_cast<size_t>(batch));
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
    const rill_backend_tensor qv = rill::backend_view(*q), kv = rill::backend_view(*k);
    const rill_backend_tensor vv = rill::backend_view(*v), ov = rill::backend_view(*out);
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, attention), "attention", &qv, &kv, &vv,
                          static_cast<const int32_t*>(lengths.data()), scale, &ov);
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
    RILL_CHECK(check.same_dtype(up, "up", *x, "x"));
    RILL_CHECK(check.same_dtype(out, "out", *x, "x"));
    if (up != nullptr) RILL_CHECK(check.same_shape(*up, "up", *x, "x"));
    RILL_CHECK(check.same_shape(*out, "out", *x, "x"));
    rill_backend_tensor up_storage{};
    const rill_backend_tensor* up_view = nullptr;
    if (up != nullptr) {
      up_storage = rill::backend_view(*up);
      up_view = &up_storage;
    }
    const rill_backend_tensor xv = rill::backend_view(*x), ov = rill::backend_view(*out);
    return rill::dispatch(fn, *ctx, RILL_BACKEND_OP(*ctx->backend, activation), "activation", fn_kind, &xv, up_view,
                          &ov);
  });
}

}  // extern "C"
