// The CPU backend's decoder-layer ops (backend ABI 2): RoPE, causal attention
// with grouped KV heads (ABI 3's attention_ex adds the sliding window and the
// logit soft-cap), the activations and (ABI 5) the clamp. f32/f16/bf16 storage, f32 math,
// threaded over tokens, heads or chunks on the context's pool.
#pragma once

#include "rill_backend.h"

namespace rill::cpu {

rill_status op_rope(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions, float theta,
                    int32_t rotary_dim);
rill_status op_rope_freqs(rill_backend_context* ctx, const rill_backend_tensor* x, const int32_t* positions,
                          const float* inv_freq, float attention_factor, int32_t rotary_dim);
rill_status op_attention(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                         const rill_backend_tensor* v, const int32_t* kv_lengths, float scale,
                         const rill_backend_tensor* out);
rill_status op_attention_ex(rill_backend_context* ctx, const rill_backend_tensor* q, const rill_backend_tensor* k,
                            const rill_backend_tensor* v, const int32_t* kv_lengths,
                            const rill_attention_params* params, const rill_backend_tensor* out);
rill_status op_activation(rill_backend_context* ctx, rill_act_fn fn, const rill_backend_tensor* x,
                          const rill_backend_tensor* up, const rill_backend_tensor* out);
// (backend ABI 5) out = x clamped to [lo, hi]; out may alias x.
rill_status op_clamp(rill_backend_context* ctx, const rill_backend_tensor* x, float lo, float hi,
                     const rill_backend_tensor* out);

}  // namespace rill::cpu
