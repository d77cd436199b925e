// The objects behind rill_model and rill_kv_cache, shared by the files of the
// decoder-layer runtime: descriptor checks, weights, caches and the forward pass.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/safetensors.h"
#include "objects.h"

namespace rill::layer {

// A descriptor problem: the field at fault and the message about it.
struct DescProblem {
  std::string field;  // "" when the descriptor is fine
  std::string message;
};

// Copies the caller's descriptor (only the fields inside its struct_size) over
// the defaults, resolves the derived fields (num_kv_heads 0, head_dim 0,
// rope_dim 0, query_pre_attn_scalar 0, rope_local_base_freq 0) and checks
// every field. Returns a problem with an empty field when the result is valid.
DescProblem resolve_desc(const rill_model_desc& given, rill_model_desc& resolved);

// Whether layer `layer` of a resolved descriptor uses the sliding window (and
// rope_local_base_freq): sliding_window > 0, layer >= max_window_layers, and
// not every sliding_window_pattern-th layer.
bool layer_slides(const rill_model_desc& d, int32_t layer);
// Whether layer `layer` of a resolved descriptor runs the experts: num_experts
// > 0 and neither mlp_only_layers nor decoder_sparse_step makes it dense.
bool layer_sparse(const rill_model_desc& d, int32_t layer);
// The inverse frequencies (rope_dim / 2) and the attention factor of a
// resolved descriptor's rope_type for a forward call whose longest position
// is seq_len - 1 (read by dynamic and longrope): what rill_rope_freqs takes.
struct RopeFrequencies {
  std::vector<float> inv_freq;
  float attention_factor = 1.0f;
};
RopeFrequencies rope_frequencies(const rill_model_desc& d, int64_t seq_len);

// Index of a weight in rill_model::weights; kAbsent for one the model does not use.
constexpr int32_t kAbsent = -1;

// Weight indices of one layer (kAbsent where the configuration has none).
struct LayerWeights {
  int32_t q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  int32_t gate_w, gate_b, up_w, up_b, down_w, down_b;
  // Norms: attention input (pre/sandwich) or after-attention (post/deepnorm),
  // then the MLP's; sandwich adds the norms on each sublayer's output, which
  // are output's only norms.
  int32_t attn_norm_w, attn_norm_b, mlp_norm_w, mlp_norm_b;
  int32_t attn_out_norm_w, attn_out_norm_b, mlp_out_norm_w, mlp_out_norm_b;
  int32_t attn_gain, mlp_gain;
  int32_t q_norm_w, k_norm_w;  // the QK norm's weights (qk_norm)
  // Mixture of experts (num_experts > 0; the dense gate/up/down are absent):
  // the router, expert e's gate_proj, up_proj and down_proj at experts + 3e,
  // + 3e + 1 and + 3e + 2, and the shared expert with its gate.
  int32_t router_w, experts;
  int32_t shared_gate_w, shared_up_w, shared_down_w, shared_expert_gate_w;
};

struct Weight {
  std::string name;
  std::vector<int64_t> shape;
  rill_tensor* tensor = nullptr;  // NULL until set
  bool norm_weight = false;       // a norm's .weight: norm_weight_offset is added as it is set
  bool rotary_rows = false;       // q or k rows by head: reordered as it is set with rope_interleave
};

// Whether the MLP has a gate projection (act(gate_proj x) * up_proj x).
inline bool is_gated(rill_mlp_activation activation) {
  return activation == RILL_MLP_SILU_GLU || activation == RILL_MLP_GELU_GLU || activation == RILL_MLP_GELU_TANH_GLU;
}
// A checkpoint tensor that holds model weights under another name or layout.
// Its rows (dim 0) are `groups` repeats of the parts in order, each part
// holding weights[part].shape[0] / groups rows of its weight: one part in one
// group is a rename (GPT-NeoX's attention.dense is o_proj), one group of
// several a concatenation (Phi-3's qkv_proj: q, k, v), H groups GPT-NeoX's
// query_key_value (each head's q, k and v rows).
struct FusedWeight {
  std::string name;
  std::vector<int64_t> shape;
  int64_t groups = 1;
  std::vector<int32_t> parts;  // weight indices
  std::string refusal;         // nonempty: why this model cannot use the tensor
};

// A per-head weight [H, hd] that a checkpoint keeps as H tensors of [hd], one
// per head (StableLM 2 12B's q_layernorm.norms.{h}.weight): stacked on load,
// in head order, from every head at once.
struct HeadRows {
  int32_t weight;                  // the weight index
  std::vector<std::string> heads;  // the per-head tensor names, head 0 first
};

}  // namespace rill::layer

struct rill_model {
  rill_context* context = nullptr;
  rill_model_desc desc{};  // resolved: no derived field left at 0
  std::vector<rill::layer::Weight> weights;
  std::unordered_map<std::string, int32_t> weight_index;
  std::vector<rill::layer::FusedWeight> fused;
  std::unordered_map<std::string, int32_t> fused_index;
  std::vector<rill::layer::HeadRows> head_rows;
  std::unordered_map<std::string, int32_t> head_rows_index;  // a per-head tensor's name -> its HeadRows
  std::vector<rill::layer::LayerWeights> layers;
  int32_t final_norm_w = rill::layer::kAbsent, final_norm_b = rill::layer::kAbsent;
  // Scratch for the forward pass, grown to the largest token count seen.
  int64_t scratch_rows = 0;
  std::vector<rill_tensor*> scratch;
};

struct rill_kv_cache {
  rill_context* context = nullptr;
  rill_model* model = nullptr;  // only compared: a cache may outlive its model
  int32_t batch = 0;
  int32_t capacity = 0;
  std::vector<int32_t> lengths;      // tokens held per sequence
  std::vector<rill_tensor*> keys;    // per layer [batch, capacity, Hkv, hd]
  std::vector<rill_tensor*> values;  // per layer, same shape
};

namespace rill::layer {

// The tensor of weight index, or nullptr for kAbsent.
inline rill_tensor* weight_tensor(const rill_model& model, int32_t index) {
  return index == kAbsent ? nullptr : model.weights[static_cast<size_t>(index)].tensor;
}

// Lists every weight the resolved descriptor calls for, with its shape.
void build_weight_table(rill_model& model);

// The first weight the model uses that has not been set, or nullptr.
const Weight* first_missing_weight(const rill_model& model);

// Adds `other` as another name of the weight `name` (a checkpoint's name
// for it), where the model has that weight; nothing otherwise.
void add_alias(rill_model& model, const std::string& other, const std::string& name);

// Stores every weight of model that the safetensors file holds (under its own
// name, a fused one or an alias); every tensor used is checked before any is
// stored, and the weights are swapped in only once all are stored, so a
// failure leaves the model as it was. fn prefixes the messages. Tensors the
// model does not use are skipped.
rill_status load_safetensors(const char* fn, rill_model& model, const io::SafetensorsFile& file);
// The same for tensor views from another source (a GGUF file, or the
// per-head tensors of every shard of a folder), path naming it. The heads of a
// HeadRows weight are stacked when the views hold them all; holding some but
// not all is an error naming the first missing head.
rill_status load_tensors(const char* fn, rill_model& model, const std::string& path,
                         const std::vector<io::SafetensorsTensor>& tensors);

// Whether name is one head of a HeadRows weight of the model.
inline bool is_head_row(const rill_model& model, const std::string& name) {
  return model.head_rows_index.count(name) != 0;
}

// Free a model (its weights and scratch) or a cache (its tensors) and take it
// off its context's list; NULL is a no-op.
void destroy_model(rill_model* model);
void destroy_kv_cache(rill_kv_cache* cache);

// Frees the model's scratch tensors.
void release_scratch(rill_model& model);

// RILL_ERROR_UNSUPPORTED, naming the weight, its dtype and the backend, when
// the context's backend cannot run gemm with one of the model's block
// weights (each block dtype asked once; where, e.g. the file, before the
// weight's name), or with w (named name) for activations of that dtype.
rill_status check_block_weight_support(const char* fn, const rill_model& model, const std::string& where = "");
rill_status check_gemm_weight_support(const char* fn, const rill_context& ctx, rill_dtype activations,
                                      const rill_tensor& w, const std::string& name);

// The product of shape's dims.
size_t element_count(const std::vector<int64_t>& shape);

// "[4096, 896]"
std::string dims_text(const std::vector<int64_t>& shape);

}  // namespace rill::layer
