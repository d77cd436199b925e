// rill_model_forward: composes a decoder stack from backend ops. No device
// code lives here; every step is one op of the context's backend on views of
// the hidden states, the weights, the KV cache and the scratch tensors.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "dtype_convert.h"
#include "errors.h"
#include "host_services.h"
#include "model.h"
#include "op_checks.h"
#include "tensors.h"

namespace rill::layer {
namespace {

// Scratch tensors, each [rows, cols] for the largest rows seen.
// The last four serve the mixture of experts only (absent for a dense MLP):
// an expert's gathered input rows, its output rows, the router logits and
// the shared expert's gate logit.
enum Scratch {
  kStreamA, kStreamB, kQ, kK, kV, kAttn, kGate, kUp, kMoeIn, kMoeOut, kRouter, kSharedGate, kScratchCount
};

rill_backend_tensor view_of(const rill_tensor* tensor, std::initializer_list<int64_t> shape) {
  rill_backend_tensor v{};
  v.buffer = tensor->buffer;
  v.offset = 0;
  v.dtype = tensor->dtype;
  v.ndim = static_cast<int32_t>(shape.size());
  int32_t i = 0;
  for (int64_t dim : shape) v.shape[i++] = dim;
  for (; i < RILL_MAX_DIMS; ++i) v.shape[i] = 1;
  return v;
}

// A weight's whole-tensor view that may be absent.
struct OptionalView {
  rill_backend_tensor view{};
  bool present = false;
  const rill_backend_tensor* get() const { return present ? &view : nullptr; }
};

rill_act_fn act_fn(rill_mlp_activation activation) {
  switch (activation) {
    case RILL_MLP_SILU_GLU: return RILL_ACT_SILU;
    case RILL_MLP_GELU_GLU:
    case RILL_MLP_GELU: return RILL_ACT_GELU;
    case RILL_MLP_GELU_TANH_GLU:
    case RILL_MLP_GELU_TANH: return RILL_ACT_GELU_TANH;
    default: return RILL_ACT_RELU;
  }
}

class Forward {
 public:
  Forward(const char* function, rill_model& model, rill_kv_cache* cache, int64_t batch, int64_t tokens)
      : fn_(function),
        model_(model),
        d_(model.desc),
        ctx_(*model.context),
        cache_(cache),
        batch_(batch),
        tokens_(tokens),
        rows_(batch * tokens) {}

  // Fails before any work is queued when the backend lacks an op this model
  // needs or, through its capability query (interface version 3), refuses
  // one for this call's dtype and shapes; the refusal names the op, the
  // parameter and the limit. Without the query an op counts as supported
  // when its member is present.
  rill_status check_ops() const {
    const Backend& b = *ctx_.backend;
    const auto supports = RILL_BACKEND_OP(b, supports);
    for (const Needed& needed : needed_ops()) {
      if (!needed.present) {
        const bool ex = needed.desc.window != 0 || needed.desc.softcap != 0.0f;
        return fail(RILL_ERROR_UNSUPPORTED, std::string(fn_) + ": the " + b.name + " backend (interface version " +
                                                std::to_string(b.abi_version) + ") does not implement the op " +
                                                (ex ? std::string("attention_ex (a sliding window or logit soft-cap)")
                                                    : std::string(rill_backend_op_name(needed.desc.op))) +
                                                " that this model needs");
      }
      if (supports == nullptr) continue;
      clear_backend_message();
      const rill_status status = supports(ctx_.impl, &needed.desc);
      if (status != RILL_OK) return backend_failure(fn_, b.name, status);
    }
    return check_block_weight_support(fn_, model_);
  }

  rill_status ensure_scratch() {
    if (model_.scratch_rows >= rows_) return RILL_OK;
    release_scratch(model_);
    const int64_t hidden = d_.hidden_size, q = int64_t{d_.num_heads} * d_.head_dim;
    const int64_t kv = int64_t{d_.num_kv_heads} * d_.head_dim;
    const bool moe = d_.num_experts > 0;
    const int64_t inter = std::max({moe ? d_.moe_intermediate_size : 0, d_.shared_expert_intermediate_size,
                                    any_dense_layer() ? d_.intermediate_size : 0});
    const int64_t moe_hidden = moe ? hidden : 0, shared = d_.shared_expert_intermediate_size > 0 ? 1 : 0;
    const int64_t cols[kScratchCount] = {hidden, hidden, q,          kv,         kv,          q,
                                         inter,  inter,  moe_hidden, moe_hidden, d_.num_experts, shared};
    for (int64_t c : cols) {
      if (c == 0) {
        model_.scratch.push_back(nullptr);
        continue;
      }
      const int64_t shape[2] = {rows_, c};
      rill_tensor* t = nullptr;
      const rill_status created =
          tensor_create(std::string(fn_) + ": scratch for " + std::to_string(rows_) + " tokens", ctx_, d_.dtype, 2,
                        shape, t);
      if (created != RILL_OK) {
        release_scratch(model_);
        return created;
      }
      model_.scratch.push_back(t);
    }
    model_.scratch_rows = rows_;
    return RILL_OK;
  }

  rill_status run(rill_tensor& hidden, const std::vector<int32_t>& positions) {
    positions_ = &positions;
    if (scaled_rope()) {
      // dynamic and longrope read the call's longest position (rope_frequencies).
      const int64_t longest = positions.empty() ? -1 : *std::max_element(positions.begin(), positions.end());
      rope_freqs_ = rope_frequencies(d_, longest + 1);
    }
    kv_lengths_.assign(static_cast<size_t>(batch_), 0);
    for (int64_t b = 0; b < batch_; ++b) {
      kv_lengths_[b] = static_cast<int32_t>(tokens_ + (cache_ ? cache_->lengths[b] : 0));
    }
    const rill_backend_tensor h = rows_view(&hidden, d_.hidden_size);
    const rill_backend_tensor a = rows_view(model_.scratch[kStreamA], d_.hidden_size);
    const rill_backend_tensor b = rows_view(model_.scratch[kStreamB], d_.hidden_size);
    if (d_.parallel_residual != 0) return run_parallel(h, a, b);
    if (d_.norm_placement == RILL_PLACEMENT_PRE || d_.norm_placement == RILL_PLACEMENT_SANDWICH) {
      return run_pre(h, a, b);
    }
    if (d_.norm_placement == RILL_PLACEMENT_OUTPUT) return run_output(h, a);
    return run_post(h, a, b);
  }

 private:
  // An op the forward pass runs, described for the capability query.
  struct Needed {
    bool present;
    rill_backend_op_desc desc;
  };

  rill_backend_op_desc op_desc(rill_backend_op op, int64_t cols) const {
    rill_backend_op_desc desc{};
    desc.struct_size = sizeof desc;
    desc.op = op;
    desc.dtype = d_.dtype;
    desc.rows = rows_;
    desc.cols = cols;
    return desc;
  }

  // Every op of this call with its shapes, in the order they first run.
  std::vector<Needed> needed_ops() const {
    const Backend& b = *ctx_.backend;
    const LayerWeights& w = model_.layers[0];
    const int64_t hidden = d_.hidden_size, inter = d_.intermediate_size, hd = d_.head_dim;
    const int64_t q = int64_t{d_.num_heads} * hd, kv = int64_t{d_.num_kv_heads} * hd;
    const bool rms = d_.norm == RILL_NORM_RMS;
    const bool gemm = RILL_BACKEND_OP(b, gemm) != nullptr;
    auto gemm_desc = [&](int64_t k, int64_t n, int32_t bias) {
      rill_backend_op_desc desc = op_desc(RILL_BACKEND_OP_GEMM, k);
      desc.n = n;
      desc.has_bias = bias != kAbsent ? 1u : 0u;
      desc.weight_dtype = d_.dtype;
      return Needed{gemm, desc};
    };
    std::vector<Needed> needed;
    needed.push_back(rms ? Needed{RILL_BACKEND_OP(b, rms_norm) != nullptr, op_desc(RILL_BACKEND_OP_RMS_NORM, hidden)}
                         : Needed{RILL_BACKEND_OP(b, layer_norm) != nullptr,
                                  op_desc(RILL_BACKEND_OP_LAYER_NORM, hidden)});
    needed.push_back(gemm_desc(hidden, q, w.q_b));
    needed.push_back(gemm_desc(hidden, kv, w.k_b));
    needed.push_back(gemm_desc(hidden, kv, w.v_b));
    if (d_.qk_norm != RILL_QK_NORM_NONE) {
      const bool head = d_.qk_norm != RILL_QK_NORM_FULL;
      for (int32_t heads : {d_.num_heads, d_.num_kv_heads}) {
        rill_backend_op_desc qk = op_desc(rms ? RILL_BACKEND_OP_RMS_NORM : RILL_BACKEND_OP_LAYER_NORM,
                                          head ? hd : heads * hd);
        if (head) qk.rows = rows_ * heads;
        needed.push_back({rms ? RILL_BACKEND_OP(b, rms_norm) != nullptr : RILL_BACKEND_OP(b, layer_norm) != nullptr,
                          qk});
        if (d_.qk_norm == RILL_QK_NORM_HEAD_WEIGHTS) {
          needed.push_back({RILL_BACKEND_OP(b, residual_add) != nullptr,
                            op_desc(RILL_BACKEND_OP_RESIDUAL_ADD, heads * hd)});
        }
      }
    }
    if (d_.clip_qkv > 0.0f) {
      for (int64_t width : {q, kv}) {
        needed.push_back({RILL_BACKEND_OP(b, clamp) != nullptr, op_desc(RILL_BACKEND_OP_CLAMP, width)});
      }
    }
    // Each RoPE form the layers use: plain (rope) or scaled (rope_freqs).
    bool rope_asked[2] = {false, false};
    for (int32_t l = 0; l < d_.num_layers; ++l) {
      if (!layer_has_rope(l)) continue;
      const bool scaled = layer_scales_rope(l);
      if (rope_asked[scaled]) continue;
      rope_asked[scaled] = true;
      for (int32_t heads : {d_.num_heads, d_.num_kv_heads}) {
        rill_backend_op_desc rope = op_desc(scaled ? RILL_BACKEND_OP_ROPE_FREQS : RILL_BACKEND_OP_ROPE, hd);
        rope.heads = heads;
        rope.head_dim = d_.head_dim;
        rope.rotary_dim = d_.rope_dim;
        needed.push_back({scaled ? RILL_BACKEND_OP(b, rope_freqs) != nullptr : RILL_BACKEND_OP(b, rope) != nullptr,
                          rope});
      }
    }
    rill_backend_op_desc attention = op_desc(RILL_BACKEND_OP_ATTENTION, hd);
    attention.batch = batch_;
    attention.rows = tokens_;
    attention.kv_length = cache_ != nullptr ? cache_->capacity : tokens_;
    attention.heads = d_.num_heads;
    attention.kv_heads = d_.num_kv_heads;
    attention.head_dim = d_.head_dim;
    // Each distinct form the layers use: plain, or through attention_ex with
    // a window (sliding layers) or soft-cap.
    bool asked[2] = {false, false};  // global, sliding
    for (int32_t l = 0; l < d_.num_layers; ++l) {
      const bool slides = layer_slides(d_, l);
      if (asked[slides]) continue;
      asked[slides] = true;
      const rill_attention_params p = attention_params(l);
      attention.window = p.window;
      attention.softcap = p.softcap;
      const bool ex = p.window != 0 || p.softcap != 0.0f;
      needed.push_back({ex ? RILL_BACKEND_OP(b, attention_ex) != nullptr : RILL_BACKEND_OP(b, attention) != nullptr,
                        attention});
    }
    needed.push_back(gemm_desc(q, hidden, w.o_b));
    needed.push_back(rms ? Needed{RILL_BACKEND_OP(b, fused_add_rms_norm) != nullptr,
                                  op_desc(RILL_BACKEND_OP_FUSED_ADD_RMS_NORM, hidden)}
                         : Needed{RILL_BACKEND_OP(b, fused_add_layer_norm) != nullptr,
                                  op_desc(RILL_BACKEND_OP_FUSED_ADD_LAYER_NORM, hidden)});
    auto mlp_ops = [&](int64_t width, int32_t up_b, int32_t gate_b, int32_t down_b) {
      needed.push_back(gemm_desc(hidden, width, up_b));
      if (is_gated(d_.activation)) needed.push_back(gemm_desc(hidden, width, gate_b));
      rill_backend_op_desc activation = op_desc(RILL_BACKEND_OP_ACTIVATION, width);
      activation.act_fn = act_fn(d_.activation);
      activation.gated = is_gated(d_.activation) ? 1u : 0u;
      needed.push_back({RILL_BACKEND_OP(b, activation) != nullptr, activation});
      needed.push_back(gemm_desc(width, hidden, down_b));
    };
    if (d_.num_experts > 0) {
      // The router, each expert (on up to every row), the shared expert and
      // its gate, and the weighted adds of single rows.
      needed.push_back(gemm_desc(hidden, d_.num_experts, kAbsent));
      mlp_ops(d_.moe_intermediate_size, kAbsent, kAbsent, kAbsent);
      if (d_.shared_expert_intermediate_size > 0) {
        needed.push_back(gemm_desc(hidden, 1, kAbsent));
        mlp_ops(d_.shared_expert_intermediate_size, kAbsent, kAbsent, kAbsent);
      }
      rill_backend_op_desc row_add = op_desc(RILL_BACKEND_OP_RESIDUAL_ADD, hidden);
      row_add.rows = 1;
      needed.push_back({RILL_BACKEND_OP(b, residual_add) != nullptr, row_add});
    }
    if (any_dense_layer()) mlp_ops(inter, w.up_b, w.gate_b, w.down_b);
    needed.push_back({RILL_BACKEND_OP(b, residual_add) != nullptr, op_desc(RILL_BACKEND_OP_RESIDUAL_ADD, hidden)});
    return needed;
  }

  rill_backend_tensor rows_view(const rill_tensor* t, int64_t cols) const { return view_of(t, {rows_, cols}); }

  // Whether some layer runs the dense MLP (every layer without experts).
  bool any_dense_layer() const {
    for (int32_t l = 0; l < d_.num_layers; ++l) {
      if (!layer_sparse(d_, l)) return true;
    }
    return false;
  }

  // RoPE with a rope_type other than default runs as rope_freqs.
  bool scaled_rope() const { return d_.rope_type != RILL_ROPE_DEFAULT; }

  // Layer l rotates with the scaled frequencies (rope_freqs): rope_type is
  // not default, and l is not a sliding layer with a theta of its own (Gemma
  // 3 scales its global layers only; its local ones use rope_local_base_freq).
  bool layer_scales_rope(int32_t l) const {
    return scaled_rope() && !(layer_slides(d_, l) && d_.rope_local_base_freq != d_.rope_theta);
  }

  // Layer l rotates q and k: RoPE is on, and l is not one of the NoPE layers
  // of no_rope_layer_interval (SmolLM3: (l + 1) % interval == 0).
  bool layer_has_rope(int32_t l) const {
    if (d_.rope_theta == 0.0f) return false;
    return d_.no_rope_layer_interval == 0 || (l + 1) % d_.no_rope_layer_interval != 0;
  }

  OptionalView weight(int32_t index) const {
    OptionalView v;
    if (index != kAbsent) {
      v.view = backend_view(*weight_tensor(model_, index));
      v.present = true;
    }
    return v;
  }

  // pre and sandwich: h is the residual stream throughout; x holds the next
  // sublayer's normalized input, y a sublayer's output.
  rill_status run_pre(const rill_backend_tensor& h, const rill_backend_tensor& x, const rill_backend_tensor& y) {
    const bool sandwich = d_.norm_placement == RILL_PLACEMENT_SANDWICH;
    const int32_t layers = d_.num_layers;
    RILL_CHECK(norm(h, model_.layers[0].attn_norm_w, model_.layers[0].attn_norm_b, x));
    for (int32_t l = 0; l < layers; ++l) {
      const LayerWeights& w = model_.layers[l];
      RILL_CHECK(attention(l, x, y));
      if (sandwich) RILL_CHECK(norm(y, w.attn_out_norm_w, w.attn_out_norm_b, y));
      RILL_CHECK(fused_add_norm(y, h, w.attn_gain, w.mlp_norm_w, w.mlp_norm_b));
      RILL_CHECK(mlp(l, y, x));
      if (sandwich) RILL_CHECK(norm(x, w.mlp_out_norm_w, w.mlp_out_norm_b, x));
      if (l + 1 < layers) {
        const LayerWeights& next = model_.layers[l + 1];
        RILL_CHECK(fused_add_norm(x, h, w.mlp_gain, next.attn_norm_w, next.attn_norm_b));
      } else if (d_.final_norm != 0) {
        RILL_CHECK(fused_add_norm(x, h, w.mlp_gain, model_.final_norm_w, model_.final_norm_b));
        return copy(x, h);
      } else {
        return residual_add(h, x, w.mlp_gain, d_.residual_scale, d_.branch_scale);
      }
    }
    return RILL_OK;
  }

  // parallel: both sublayers read the normalized h; in holds that input
  // (attention's, then with two norms the MLP's, then the MLP output), out the
  // attention output and then the branch sum, which the fused add+norm turns
  // into the next layer's input: the two buffers swap roles every layer.
  rill_status run_parallel(const rill_backend_tensor& h, const rill_backend_tensor& x, const rill_backend_tensor& y) {
    const rill_backend_tensor* in = &x;
    const rill_backend_tensor* out = &y;
    const int32_t layers = d_.num_layers;
    RILL_CHECK(norm(h, model_.layers[0].attn_norm_w, model_.layers[0].attn_norm_b, x));
    for (int32_t l = 0; l < layers; ++l) {
      const LayerWeights& w = model_.layers[l];
      RILL_CHECK(attention(l, *in, *out));
      if (w.mlp_norm_w != kAbsent) RILL_CHECK(norm(h, w.mlp_norm_w, w.mlp_norm_b, *in));
      RILL_CHECK(mlp(l, *in, *in));
      RILL_CHECK(residual_add(*out, *in, kAbsent, 1.0f, 1.0f));
      if (l + 1 < layers) {
        const LayerWeights& next = model_.layers[l + 1];
        RILL_CHECK(fused_add_norm(*out, h, kAbsent, next.attn_norm_w, next.attn_norm_b));
        std::swap(in, out);
      } else if (d_.final_norm != 0) {
        RILL_CHECK(fused_add_norm(*out, h, kAbsent, model_.final_norm_w, model_.final_norm_b));
        return copy(*out, h);
      } else {
        return residual_add(h, *out, kAbsent, d_.residual_scale, d_.branch_scale);
      }
    }
    return RILL_OK;
  }

  // output: h is the residual stream and each sublayer's input; y holds a
  // sublayer's output, normalized in place and added to h. Only the last add
  // can fuse with a norm, model.norm's, since the others normalize the update
  // and not the sum.
  rill_status run_output(const rill_backend_tensor& h, const rill_backend_tensor& y) {
    const int32_t layers = d_.num_layers;
    for (int32_t l = 0; l < layers; ++l) {
      const LayerWeights& w = model_.layers[l];
      RILL_CHECK(attention(l, h, y));
      RILL_CHECK(norm(y, w.attn_out_norm_w, w.attn_out_norm_b, y));
      RILL_CHECK(residual_add(h, y, w.attn_gain, d_.residual_scale, d_.branch_scale));
      RILL_CHECK(mlp(l, h, y));
      RILL_CHECK(norm(y, w.mlp_out_norm_w, w.mlp_out_norm_b, y));
      if (l + 1 < layers || d_.final_norm == 0) {
        RILL_CHECK(residual_add(h, y, w.mlp_gain, d_.residual_scale, d_.branch_scale));
      } else {
        RILL_CHECK(fused_add_norm(y, h, w.mlp_gain, model_.final_norm_w, model_.final_norm_b));
        return copy(y, h);
      }
    }
    return RILL_OK;
  }

  // post and deepnorm: the fused add+norm leaves the un-normalized sum in its
  // residual operand and the normalized stream in x, so the stream moves
  // between three buffers instead of being copied back after every sublayer.
  rill_status run_post(const rill_backend_tensor& h, const rill_backend_tensor& a, const rill_backend_tensor& b) {
    const rill_backend_tensor* buffers[3] = {&h, &a, &b};
    int stream = 0;
    for (int32_t l = 0; l < d_.num_layers; ++l) {
      const LayerWeights& w = model_.layers[l];
      int out = (stream + 1) % 3;
      RILL_CHECK(attention(l, *buffers[stream], *buffers[out]));
      RILL_CHECK(fused_add_norm(*buffers[out], *buffers[stream], w.attn_gain, w.attn_norm_w, w.attn_norm_b));
      stream = out;
      out = (stream + 1) % 3;
      RILL_CHECK(mlp(l, *buffers[stream], *buffers[out]));
      RILL_CHECK(fused_add_norm(*buffers[out], *buffers[stream], w.mlp_gain, w.mlp_norm_w, w.mlp_norm_b));
      stream = out;
    }
    if (d_.final_norm != 0) return norm(*buffers[stream], model_.final_norm_w, model_.final_norm_b, h);
    return stream == 0 ? RILL_OK : copy(*buffers[stream], h);
  }

  // Layer l's attention: scale, its window when it slides, the soft-cap.
  rill_attention_params attention_params(int32_t l) const {
    rill_attention_params p{};
    p.struct_size = sizeof p;
    // query_pre_attn_scalar is resolved: head_dim unless the model sets its own.
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d_.query_pre_attn_scalar)));
    p.window = layer_slides(d_, l) ? d_.sliding_window : 0;
    p.softcap = d_.attn_logit_softcapping;
    return p;
  }

  rill_status attention(int32_t l, const rill_backend_tensor& in, const rill_backend_tensor& out) {
    const LayerWeights& w = model_.layers[l];
    const int64_t hq = d_.num_heads, hkv = d_.num_kv_heads, hd = d_.head_dim;
    const rill_tensor* q = model_.scratch[kQ];
    const rill_tensor* k = model_.scratch[kK];
    const rill_tensor* v = model_.scratch[kV];
    const rill_tensor* attn = model_.scratch[kAttn];
    RILL_CHECK(gemm(in, w.q_w, w.q_b, rows_view(q, hq * hd)));
    RILL_CHECK(gemm(in, w.k_w, w.k_b, rows_view(k, hkv * hd)));
    RILL_CHECK(gemm(in, w.v_w, w.v_b, rows_view(v, hkv * hd)));
    if (d_.qk_norm != RILL_QK_NORM_NONE) {
      // In place, without a bias; per head, q and k are viewed as one row of
      // hd per (token, head). Weights per head scale each (token, head) row
      // by its head's weight: one residual_add of q (or k) onto itself with
      // residual scale 0 and the [heads * hd] weights as the gain.
      const bool full = d_.qk_norm == RILL_QK_NORM_FULL;
      const bool per_head = d_.qk_norm == RILL_QK_NORM_HEAD_WEIGHTS;
      for (const auto& [t, heads, w_norm] : {std::tuple{q, hq, w.q_norm_w}, std::tuple{k, hkv, w.k_norm_w}}) {
        const rill_backend_tensor x = full ? rows_view(t, heads * hd) : view_of(t, {rows_ * heads, hd});
        RILL_CHECK(norm(x, per_head ? kAbsent : w_norm, kAbsent, x));
        if (per_head) {
          const rill_backend_tensor flat = rows_view(t, heads * hd);
          OptionalView gain = weight(w_norm);
          gain.view.ndim = 1;  // [heads, hd] as one row's gain
          gain.view.shape[0] = heads * hd;
          RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, residual_add), "residual_add", &flat, &flat,
                              gain.get(), 0.0f, 1.0f));
        }
      }
    }
    if (d_.clip_qkv > 0.0f) {
      // OLMo's and OLMoE's clip_qkv: in place, after the QK norm, before RoPE.
      for (const auto& [t, heads] : {std::pair{q, hq}, std::pair{k, hkv}, std::pair{v, hkv}}) {
        const rill_backend_tensor x = rows_view(t, heads * hd);
        RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, clamp), "clamp", &x, -d_.clip_qkv, d_.clip_qkv,
                            &x));
      }
    }
    if (layer_has_rope(l)) {
      const bool scaled = layer_scales_rope(l);
      // Sliding layers take rope_local_base_freq (resolved: rope_theta unless set).
      const float theta = layer_slides(d_, l) ? d_.rope_local_base_freq : d_.rope_theta;
      for (const auto& [t, heads] : {std::pair{q, hq}, std::pair{k, hkv}}) {
        const rill_backend_tensor x = view_of(t, {rows_, heads, hd});
        if (scaled) {
          RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, rope_freqs), "rope_freqs", &x,
                              positions_->data(), static_cast<const float*>(rope_freqs_.inv_freq.data()),
                              rope_freqs_.attention_factor, d_.rope_dim));
        } else {
          RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, rope), "rope", &x, positions_->data(),
                              theta, d_.rope_dim));
        }
      }
    }
    rill_backend_tensor keys = view_of(k, {batch_, tokens_, hkv, hd});
    rill_backend_tensor values = view_of(v, {batch_, tokens_, hkv, hd});
    if (cache_ != nullptr) {
      const uint64_t esize = rill_dtype_size(d_.dtype);
      const uint64_t row_bytes = static_cast<uint64_t>(hkv * hd) * esize;
      for (int64_t b = 0; b < batch_; ++b) {
        const uint64_t src = static_cast<uint64_t>(b * tokens_) * row_bytes;
        const uint64_t dst = static_cast<uint64_t>(b * cache_->capacity + cache_->lengths[b]) * row_bytes;
        RILL_CHECK(
            copy_bytes(k->buffer, src, cache_->keys[l]->buffer, dst, static_cast<uint64_t>(tokens_) * row_bytes));
        RILL_CHECK(
            copy_bytes(v->buffer, src, cache_->values[l]->buffer, dst, static_cast<uint64_t>(tokens_) * row_bytes));
      }
      keys = view_of(cache_->keys[l], {batch_, cache_->capacity, hkv, hd});
      values = view_of(cache_->values[l], {batch_, cache_->capacity, hkv, hd});
    }
    const rill_backend_tensor qv = view_of(q, {batch_, tokens_, hq, hd});
    const rill_backend_tensor attn_v = view_of(attn, {batch_, tokens_, hq, hd});
    const rill_attention_params params = attention_params(l);
    if (params.window == 0 && params.softcap == 0.0f) {
      RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, attention), "attention", &qv,
                          static_cast<const rill_backend_tensor*>(&keys),
                          static_cast<const rill_backend_tensor*>(&values),
                          static_cast<const int32_t*>(kv_lengths_.data()), params.scale, &attn_v));
    } else {
      RILL_CHECK(dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, attention_ex), "attention_ex", &qv,
                          static_cast<const rill_backend_tensor*>(&keys),
                          static_cast<const rill_backend_tensor*>(&values),
                          static_cast<const int32_t*>(kv_lengths_.data()), &params, &attn_v));
    }
    return gemm(rows_view(attn, hq * hd), w.o_w, w.o_b, out);
  }

  rill_status mlp(int32_t l, const rill_backend_tensor& in, const rill_backend_tensor& out) {
    const LayerWeights& w = model_.layers[l];
    if (layer_sparse(d_, l)) return experts(w, in, out);
    return dense_mlp(in, w.gate_w, w.gate_b, w.up_w, w.up_b, w.down_w, w.down_b, d_.intermediate_size, out);
  }

  // The mixture of experts: out = sum over each row's chosen experts of its
  // routing weight times the expert's output, plus the gated shared expert.
  // in and out are distinct [rows, D] buffers.
  rill_status experts(const LayerWeights& w, const rill_backend_tensor& in, const rill_backend_tensor& out) {
    const int64_t hidden = d_.hidden_size, num = d_.num_experts, k = d_.num_experts_per_tok;
    const rill_tensor* router = model_.scratch[kRouter];
    RILL_CHECK(gemm(in, w.router_w, kAbsent, rows_view(router, num)));
    // A synchronizing read: the host chooses the experts from the logits,
    // so the queued work so far must finish first. A routing kernel on the
    // backend could remove this wait.
    const std::vector<float> logits = read_f32(router, rows_ * num);
    std::vector<float> gates;
    if (w.shared_expert_gate_w != kAbsent) {
      RILL_CHECK(gemm(in, w.shared_expert_gate_w, kAbsent, rows_view(model_.scratch[kSharedGate], 1)));
      gates = read_f32(model_.scratch[kSharedGate], rows_);
    }
    if (read_status_ != RILL_OK) return read_status_;
    // Per expert, its rows and their weights, rows in increasing order.
    std::vector<std::vector<std::pair<int64_t, float>>> chosen(static_cast<size_t>(num));
    std::vector<float> p(static_cast<size_t>(num));
    std::vector<int32_t> order(static_cast<size_t>(num));
    for (int64_t r = 0; r < rows_; ++r) {
      // softmax over all experts in f32, then the k largest (ties: lowest index).
      const float* row = logits.data() + r * num;
      const float top = *std::max_element(row, row + num);
      float sum = 0.0f;
      for (int64_t e = 0; e < num; ++e) sum += p[e] = std::exp(row[e] - top);
      for (int64_t e = 0; e < num; ++e) {
        p[e] /= sum;
        order[e] = static_cast<int32_t>(e);
      }
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
      float kept = 0.0f;
      for (int64_t j = 0; j < k; ++j) kept += p[order[j]];
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = order[j];
        chosen[e].emplace_back(r, d_.norm_topk_prob != 0 ? p[e] / kept : p[e]);
      }
    }
    RILL_CHECK(zero(out));
    const rill_tensor* gathered = model_.scratch[kMoeIn];
    const rill_tensor* expert_out = model_.scratch[kMoeOut];
    const uint64_t row_bytes = static_cast<uint64_t>(hidden) * rill_dtype_size(d_.dtype);
    const int64_t inter = d_.moe_intermediate_size;
    for (int64_t e = 0; e < num; ++e) {
      const auto& rows = chosen[e];
      if (rows.empty()) continue;
      const auto n = static_cast<int64_t>(rows.size());
      for (int64_t j = 0; j < n; ++j) {
        RILL_CHECK(copy_bytes(in.buffer, in.offset + static_cast<uint64_t>(rows[j].first) * row_bytes,
                              gathered->buffer, static_cast<uint64_t>(j) * row_bytes, row_bytes));
      }
      const auto first = static_cast<int32_t>(w.experts + 3 * e);
      RILL_CHECK(dense_mlp(view_of(gathered, {n, hidden}), first, kAbsent, first + 1, kAbsent, first + 2, kAbsent,
                           inter, view_of(expert_out, {n, hidden}), n));
      for (int64_t j = 0; j < n; ++j) RILL_CHECK(add_row(out, rows[j].first, expert_out, j, rows[j].second));
    }
    if (w.shared_expert_gate_w == kAbsent) return RILL_OK;
    RILL_CHECK(dense_mlp(in, w.shared_gate_w, kAbsent, w.shared_up_w, kAbsent, w.shared_down_w, kAbsent,
                         d_.shared_expert_intermediate_size, rows_view(expert_out, hidden)));
    for (int64_t r = 0; r < rows_; ++r) {
      const float sigmoid = 1.0f / (1.0f + std::exp(-gates[r]));
      RILL_CHECK(add_row(out, r, expert_out, r, sigmoid));
    }
    return RILL_OK;
  }

  // out row `row` += scale * src row `src_row` (residual_add on one-row views).
  rill_status add_row(const rill_backend_tensor& out, int64_t row, const rill_tensor* src, int64_t src_row,
                      float scale) {
    const uint64_t row_bytes = static_cast<uint64_t>(d_.hidden_size) * rill_dtype_size(d_.dtype);
    rill_backend_tensor dst = out;
    dst.shape[0] = 1;
    dst.offset = out.offset + static_cast<uint64_t>(row) * row_bytes;
    rill_backend_tensor update = view_of(src, {1, d_.hidden_size});
    update.offset = static_cast<uint64_t>(src_row) * row_bytes;
    return residual_add(dst, update, kAbsent, 1.0f, scale);
  }

  // The first count values of a tensor in f32 on the host; a failed read is
  // kept in read_status_ (and the values are then zero).
  std::vector<float> read_f32(const rill_tensor* t, int64_t count) {
    const size_t esize = rill_dtype_size(d_.dtype);
    std::vector<unsigned char> raw(static_cast<size_t>(count) * esize);
    std::vector<float> values(static_cast<size_t>(count), 0.0f);
    if (read_status_ != RILL_OK) return values;
    clear_backend_message();
    const rill_status status = ctx_.backend->table->buffer_read(ctx_.impl, t->buffer, 0, raw.data(), raw.size());
    if (status != RILL_OK) {
      read_status_ = backend_failure(fn_, ctx_.backend->name, status);
      return values;
    }
    convert_to_f32(d_.dtype, raw.data(), values.data(), static_cast<size_t>(count));
    return values;
  }

  // Zeroes a [rows, D] buffer through a write from the host.
  rill_status zero(const rill_backend_tensor& t) {
    const std::vector<unsigned char> zeros(static_cast<size_t>(rows_ * d_.hidden_size) * rill_dtype_size(d_.dtype));
    clear_backend_message();
    const rill_status status =
        ctx_.backend->table->buffer_write(ctx_.impl, t.buffer, t.offset, zeros.data(), zeros.size());
    return status == RILL_OK ? RILL_OK : backend_failure(fn_, ctx_.backend->name, status);
  }

  // act(gate_proj in) * up_proj in -> down_proj (gate absent: act(up_proj in)),
  // of width `inter`, on the first `rows` rows (default: every row).
  rill_status dense_mlp(const rill_backend_tensor& in, int32_t gate_w, int32_t gate_b, int32_t up_w, int32_t up_b,
                        int32_t down_w, int32_t down_b, int64_t inter, const rill_backend_tensor& out,
                        int64_t rows = -1) {
    if (rows < 0) rows = rows_;
    const rill_backend_tensor up = view_of(model_.scratch[kUp], {rows, inter});
    const rill_act_fn act = act_fn(d_.activation);
    const auto activation = RILL_BACKEND_OP(*ctx_.backend, activation);
    RILL_CHECK(gemm(in, up_w, up_b, up));
    if (gate_w != kAbsent) {
      const rill_backend_tensor gate = view_of(model_.scratch[kGate], {rows, inter});
      RILL_CHECK(gemm(in, gate_w, gate_b, gate));
      RILL_CHECK(dispatch(fn_, ctx_, activation, "activation", act, &gate, &up, &gate));
      return gemm(gate, down_w, down_b, out);
    }
    RILL_CHECK(
        dispatch(fn_, ctx_, activation, "activation", act, &up, static_cast<const rill_backend_tensor*>(nullptr), &up));
    return gemm(up, down_w, down_b, out);
  }

  rill_status gemm(const rill_backend_tensor& a, int32_t w, int32_t bias, const rill_backend_tensor& out) {
    const OptionalView wv = weight(w), bv = weight(bias);
    return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, gemm), "gemm", &a, wv.get(), bv.get(), 1.0f, 0.0f, &out);
  }

  rill_status rms_norm(const rill_backend_tensor& x, int32_t w, const rill_backend_tensor& out) {
    const OptionalView wv = weight(w);
    return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, rms_norm), "rms_norm", &x, wv.get(), d_.norm_eps, &out);
  }

  rill_status norm(const rill_backend_tensor& x, int32_t w, int32_t bias, const rill_backend_tensor& out) {
    if (d_.norm == RILL_NORM_RMS) return rms_norm(x, w, out);
    const OptionalView wv = weight(w), bv = weight(bias);
    return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, layer_norm), "layer_norm", &x, wv.get(), bv.get(),
                    d_.norm_eps, &out);
  }

  // residual = alpha residual + beta gain * x; x = norm(residual).
  rill_status fused_add_norm(const rill_backend_tensor& x, const rill_backend_tensor& residual, int32_t gain, int32_t w,
                             int32_t bias) {
    const OptionalView gv = weight(gain), wv = weight(w), bv = weight(bias);
    if (d_.norm == RILL_NORM_RMS) {
      return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, fused_add_rms_norm), "fused_add_rms_norm", &x,
                      &residual, gv.get(), wv.get(), d_.norm_eps, d_.residual_scale, d_.branch_scale);
    }
    return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, fused_add_layer_norm), "fused_add_layer_norm", &x,
                    &residual, gv.get(), wv.get(), bv.get(), d_.norm_eps, d_.residual_scale, d_.branch_scale);
  }

  // residual = alpha residual + beta gain * update.
  rill_status residual_add(const rill_backend_tensor& residual, const rill_backend_tensor& update, int32_t gain,
                           float alpha, float beta) {
    const OptionalView gv = weight(gain);
    return dispatch(fn_, ctx_, RILL_BACKEND_OP(*ctx_.backend, residual_add), "residual_add", &residual, &update,
                    gv.get(), alpha, beta);
  }

  rill_status copy(const rill_backend_tensor& src, const rill_backend_tensor& dst) {
    return copy_bytes(src.buffer, src.offset, dst.buffer, dst.offset,
                      static_cast<uint64_t>(rows_ * d_.hidden_size) * rill_dtype_size(d_.dtype));
  }

  rill_status copy_bytes(rill_backend_buffer* src, uint64_t src_offset, rill_backend_buffer* dst, uint64_t dst_offset,
                         uint64_t bytes) {
    clear_backend_message();
    const rill_status status = ctx_.backend->table->buffer_copy(ctx_.impl, src, src_offset, dst, dst_offset, bytes);
    return status == RILL_OK ? RILL_OK : backend_failure(fn_, ctx_.backend->name, status);
  }

  const char* fn_;
  rill_model& model_;
  const rill_model_desc& d_;
  rill_context& ctx_;
  rill_kv_cache* cache_;
  const int64_t batch_, tokens_, rows_;
  const std::vector<int32_t>* positions_ = nullptr;
  RopeFrequencies rope_freqs_;
  std::vector<int32_t> kv_lengths_;
  rill_status read_status_ = RILL_OK;
};

}  // namespace

rill_status check_block_weight_support(const char* fn, const rill_model& model, const std::string& where) {
  std::vector<rill_dtype> asked;
  for (const Weight& weight : model.weights) {
    if (weight.tensor == nullptr || !rill_backend_dtype_is_block(weight.tensor->dtype)) continue;
    const rill_dtype dtype = weight.tensor->dtype;
    if (std::find(asked.begin(), asked.end(), dtype) != asked.end()) continue;
    asked.push_back(dtype);
    RILL_CHECK(check_gemm_weight_support(fn, *model.context, model.desc.dtype, *weight.tensor, where + weight.name));
  }
  return RILL_OK;
}

rill_status check_gemm_weight_support(const char* fn, const rill_context& ctx, rill_dtype activations,
                                      const rill_tensor& w, const std::string& name) {
  if (!rill_backend_dtype_is_block(w.dtype)) return RILL_OK;
  rill_backend_op_desc desc{};
  desc.struct_size = sizeof desc;
  desc.op = RILL_BACKEND_OP_GEMM;
  desc.dtype = activations;
  desc.rows = 1;
  desc.cols = w.shape[1];
  desc.n = w.shape[0];
  desc.weight_dtype = w.dtype;
  return check_block_weights(fn, OpChecks(fn, &ctx), ctx, desc, name.c_str());
}

}  // namespace rill::layer

extern "C" {

RILL_API rill_status rill_model_forward(rill_model* model, rill_kv_cache* cache, rill_tensor* hidden,
                                        const int32_t* positions, size_t position_count) {
  constexpr const char* fn = "rill_model_forward";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (model == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": model: expected a model, got NULL");
    if (hidden == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": hidden: expected a tensor, got NULL");
    const rill_model_desc& d = model->desc;
    if (hidden->context != model->context) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": hidden: expected a tensor of the model's context, got one of another context");
    }
    if (hidden->dtype != d.dtype) {
      return rill::fail(RILL_ERROR_DTYPE, f + ": hidden: expected dtype " + rill_dtype_name(d.dtype) +
                                              " (the model's), got " + rill_dtype_name(hidden->dtype));
    }
    if (hidden->ndim != 3 || hidden->shape[2] != d.hidden_size) {
      return rill::fail(RILL_ERROR_SHAPE, f + ": hidden: expected shape [B, T, " + std::to_string(d.hidden_size) +
                                              "], got " + rill::shape_text(*hidden));
    }
    const int64_t batch = hidden->shape[0], tokens = hidden->shape[1];
    if (batch > INT32_MAX || tokens > INT32_MAX || batch * tokens > INT32_MAX) {
      return rill::fail(RILL_ERROR_SHAPE,
                        f + ": hidden: B*T must fit in int32, got shape " + rill::shape_text(*hidden));
    }
    if (const rill::layer::Weight* missing = rill::layer::first_missing_weight(*model)) {
      return rill::fail(RILL_ERROR_NOT_FOUND, f + ": missing weight '" + missing->name + "' (shape " +
                                                         rill::layer::dims_text(missing->shape) + ")");
    }
    if (cache != nullptr) {
      if (cache->model != model) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                          f + ": cache: expected a cache of this model, got one of another model");
      }
      if (cache->batch != batch) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": cache: holds " + std::to_string(cache->batch) +
                                                           " sequences but hidden has B = " + std::to_string(batch));
      }
      for (int64_t b = 0; b < batch; ++b) {
        if (cache->lengths[b] + tokens > cache->capacity) {
          return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                            f + ": position past the cache's end: sequence " + std::to_string(b) + " holds " +
                                std::to_string(cache->lengths[b]) + " tokens, and " + std::to_string(tokens) +
                                " more exceed its capacity of " + std::to_string(cache->capacity));
        }
      }
    }
    const size_t rows = static_cast<size_t>(batch * tokens);
    std::vector<int32_t> pos(rows);
    if (positions != nullptr) {
      if (position_count != rows) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": position_count: expected B*T = " + std::to_string(rows) +
                                                           ", got " + std::to_string(position_count));
      }
      for (size_t i = 0; i < rows; ++i) {
        if (positions[i] < 0) {
          return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": positions[" + std::to_string(i) +
                                                             "]: expected >= 0, got " + std::to_string(positions[i]));
        }
        pos[i] = positions[i];
      }
    } else {
      if (position_count != 0) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": position_count: expected 0 with positions NULL, got " +
                                                           std::to_string(position_count));
      }
      for (int64_t b = 0; b < batch; ++b) {
        const int32_t start = cache != nullptr ? cache->lengths[b] : 0;
        for (int64_t t = 0; t < tokens; ++t) pos[b * tokens + t] = start + static_cast<int32_t>(t);
      }
    }
    rill::layer::Forward forward(fn, *model, cache, batch, tokens);
    RILL_CHECK(forward.check_ops());
    RILL_CHECK(forward.ensure_scratch());
    RILL_CHECK(forward.run(*hidden, pos));
    if (cache != nullptr) {
      for (int64_t b = 0; b < batch; ++b) cache->lengths[b] += static_cast<int32_t>(tokens);
    }
    return RILL_OK;
  });
}

}  // extern "C"
