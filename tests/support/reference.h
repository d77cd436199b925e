// Double-precision reference implementations of rill's ops, written from their
// definitions in rill.h; tolerance.h scores results against them. Inputs are
// the values a backend actually holds (already rounded to the storage dtype);
// outputs are exact up to double rounding, never rounded to a storage dtype
// unless stated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rill.h"

namespace rill_ref {

// v rounded to nearest even in the storage dtype and widened back.
// Written independently of rill's converters (arithmetic on exponents rather
// than bit manipulation) so that the tests check them.
double round_to_dtype(double v, rill_dtype dtype);

// Optional operands are empty vectors. rows x d is the data layout.

// residual_scale*residual + update_scale*(gain ⊙ update)
std::vector<double> residual_add(const std::vector<float>& residual, const std::vector<float>& update,
                                 const std::vector<float>& gain, float residual_scale, float update_scale,
                                 int64_t rows, int64_t d);

// x * rsqrt(mean(x^2) + eps) * weight
std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<float>& weight, float eps, int64_t rows,
                             int64_t d);

// (x - mean) * rsqrt(var + eps) * weight + bias, biased variance
std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<float>& weight,
                               const std::vector<float>& bias, float eps, int64_t rows, int64_t d);

// The fused ops' contract: the residual update is rounded to the storage dtype
// and that rounded value is normalized. Returns the residual before rounding
// in *residual_out and the normalized rows.
std::vector<double> fused_add_rms_norm(const std::vector<float>& x, const std::vector<float>& residual,
                                       const std::vector<float>& gain, const std::vector<float>& weight, float eps,
                                       float residual_scale, float update_scale, int64_t rows, int64_t d,
                                       rill_dtype dtype, std::vector<double>* residual_out);
std::vector<double> fused_add_layer_norm(const std::vector<float>& x, const std::vector<float>& residual,
                                         const std::vector<float>& gain, const std::vector<float>& weight,
                                         const std::vector<float>& bias, float eps, float residual_scale,
                                         float update_scale, int64_t rows, int64_t d, rill_dtype dtype,
                                         std::vector<double>* residual_out);

// alpha * a[rows,k] · w[n,k]^T + beta * out + bias[n]; with beta == 0 out is
// not read (it may be empty).
std::vector<double> gemm(const std::vector<float>& a, const std::vector<float>& w, const std::vector<float>& bias,
                         float alpha, float beta, const std::vector<float>& out, int64_t rows, int64_t n, int64_t k);

// Rotary position embedding, NeoX rotate-half layout, as rill.h defines it:
// x [tokens, heads, head_dim]; angle = position * theta^(-2i/rotary_dim) for
// i < rotary_dim/2; elements at index >= rotary_dim are copied.
std::vector<double> rope(const std::vector<float>& x, const std::vector<int32_t>& positions, int64_t heads,
                         int64_t head_dim, double theta, int64_t rotary_dim);

// rope with the frequencies given, as rill_rope_freqs defines it: angle =
// position * inv_freq[i] for i < inv_freq.size() (= rotary_dim/2), cos and sin
// multiplied by attention_factor.
std::vector<double> rope_freqs(const std::vector<float>& x, const std::vector<int32_t>& positions, int64_t heads,
                               int64_t head_dim, const std::vector<float>& inv_freq, double attention_factor);

// Causal attention as rill.h defines it: q [batch, queries, q_heads, head_dim],
// k and v [batch, slots, kv_heads, head_dim]; query head h reads KV head
// h / (q_heads / kv_heads); query t of sequence b sits at position
// kv_lengths[b] - queries + t and sees key slots 0..that position.
// kv_lengths empty: every sequence holds all slots. window > 0 masks the
// slots j <= position - window; softcap > 0 replaces each logit l (scale * q.k)
// by softcap * tanh(l / softcap) (rill_attention_ex).
struct AttentionShape {
  int64_t batch, queries, slots, q_heads, kv_heads, head_dim;
};
std::vector<double> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const AttentionShape& shape, const std::vector<int32_t>& kv_lengths, double scale,
                              int64_t window = 0, double softcap = 0.0);

// fn(x) * up elementwise, or fn(x) with up empty; the functions of rill_act_fn.
std::vector<double> activation(rill_act_fn fn, const std::vector<float>& x, const std::vector<float>& up);

std::vector<double> to_double(const std::vector<float>& values);

}  // namespace rill_ref
