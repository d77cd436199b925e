// rill_model_desc: defaults, checks of every field, and the [model] TOML table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <tuple>
#include <vector>

#include "enum_names.h"
#include "errors.h"
#include "model.h"
#include "quant.h"
#include "toml_checks.h"

namespace rill::layer {
namespace {

// Sizes beyond this are refused so that products of sizes cannot overflow.
constexpr int64_t kMaxSize = 1 << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxExperts = 4096;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

DescProblem problem(const char* field, const std::string& message) { return {field, message}; }

DescProblem size_in_range(const char* field, int64_t value, int64_t max) {
  if (value >= 1 && value <= max) return {};
  return problem(field,
                 std::string(field) + ": expected 1 to " + std::to_string(max) + ", got " + std::to_string(value));
}

// Fields of rope_scaling are named by their C field and, in parentheses,
// their key in the [model.rope_scaling] table; the problem's field is the
// TOML path, so that a config error points at the key.
DescProblem rope_problem(const char* field, const char* key, const std::string& expected, const std::string& got) {
  return {std::string("rope_scaling.") + key, std::string(field) + " (rope_scaling." + key + "): expected " +
                                                  expected + ", got " + got};
}

DescProblem positive_real(const char* field, const char* key, float value, const char* type) {
  if (std::isfinite(value) && value > 0) return {};
  return rope_problem(field, key, std::string("a finite value > 0 for rope_type ") + type, num(value));
}

DescProblem positive_int(const char* field, const char* key, int32_t value, const char* type) {
  if (value >= 1) return {};
  return rope_problem(field, key, std::string(">= 1 for rope_type ") + type, std::to_string(value));
}

const char* rope_type_name(int32_t type) {
  switch (type) {
    case RILL_ROPE_LINEAR: return "linear";
    case RILL_ROPE_DYNAMIC: return "dynamic";
    case RILL_ROPE_YARN: return "yarn";
    case RILL_ROPE_LONGROPE: return "longrope";
    case RILL_ROPE_LLAMA3: return "llama3";
    default: return "default";
  }
}

// The fields each rope_type reads, after rope_dim is resolved.
DescProblem check_rope_scaling(const rill_model_desc& d) {
  const int32_t type = rill::enum_value(d.rope_type);
  if (type < RILL_ROPE_DEFAULT || type > RILL_ROPE_LLAMA3) {
    return rope_problem("rope_type", "rope_type",
                        "RILL_ROPE_DEFAULT, _LINEAR, _DYNAMIC, _YARN, _LONGROPE or _LLAMA3", enum_name(d.rope_type));
  }
  const char* name = rope_type_name(type);
  if (type != RILL_ROPE_DEFAULT && d.rope_theta == 0) {
    return rope_problem("rope_type", "rope_type", "default with rope_theta 0 (no RoPE to scale)",
                        std::string("\"") + name + "\"");
  }
  if (type != RILL_ROPE_LONGROPE && d.rope_factor_count != 0) {
    return rope_problem("rope_factor_count", "short_factor",
                        std::string("no short_factor or long_factor for rope_type ") + name,
                        std::to_string(d.rope_factor_count) + " factors");
  }
  if (!std::isfinite(d.rope_attention_factor) || d.rope_attention_factor < 0) {
    return rope_problem("rope_attention_factor", "attention_factor", "a finite value >= 0 (0 = derived)",
                        num(d.rope_attention_factor));
  }
  DescProblem p;
  if (type == RILL_ROPE_LINEAR || type == RILL_ROPE_DYNAMIC || type == RILL_ROPE_YARN || type == RILL_ROPE_LLAMA3) {
    if (!(p = positive_real("rope_factor", "factor", d.rope_factor, name)).field.empty()) return p;
  }
  if (type == RILL_ROPE_DYNAMIC || type == RILL_ROPE_YARN || type == RILL_ROPE_LONGROPE) {
    if (d.max_position_embeddings < 1) {  // a key of [model] itself
      return problem("max_position_embeddings", "max_position_embeddings: expected >= 1 for rope_type " +
                                                    std::string(name) + ", got " +
                                                    std::to_string(d.max_position_embeddings));
    }
  }
  if (type == RILL_ROPE_LLAMA3 || type == RILL_ROPE_LONGROPE) {
    p = positive_int("rope_original_max_position_embeddings", "original_max_position_embeddings",
                     d.rope_original_max_position_embeddings, name);
    if (!p.field.empty()) return p;
  }
  if (type == RILL_ROPE_DYNAMIC && d.rope_dim == 2) {
    return problem("rope_dim", "rope_dim: expected at least 4 for rope_type dynamic (its exponent d / (d - 2) needs "
                               "d > 2), got 2");
  }
  if (type == RILL_ROPE_LLAMA3) {
    if (!(p = positive_real("rope_low_freq_factor", "low_freq_factor", d.rope_low_freq_factor, name)).field.empty()) {
      return p;
    }
    if (!std::isfinite(d.rope_high_freq_factor) || d.rope_high_freq_factor <= d.rope_low_freq_factor) {
      return rope_problem("rope_high_freq_factor", "high_freq_factor",
                          "a finite value > low_freq_factor " + num(d.rope_low_freq_factor),
                          num(d.rope_high_freq_factor));
    }
  }
  if (type == RILL_ROPE_YARN) {
    if (!(p = positive_real("rope_beta_fast", "beta_fast", d.rope_beta_fast, name)).field.empty()) return p;
    if (!(p = positive_real("rope_beta_slow", "beta_slow", d.rope_beta_slow, name)).field.empty()) return p;
  }
  if (type == RILL_ROPE_LONGROPE) {
    if (d.rope_factor_count != d.rope_dim / 2) {
      return rope_problem("rope_factor_count", "short_factor",
                          "rope_dim / 2 = " + std::to_string(d.rope_dim / 2) + " factors in each of short_factor and "
                                                                               "long_factor",
                          std::to_string(d.rope_factor_count));
    }
    if (d.rope_factor_count > RILL_ROPE_MAX_FACTORS) {
      return rope_problem("rope_factor_count", "short_factor",
                          "at most RILL_ROPE_MAX_FACTORS = " + std::to_string(RILL_ROPE_MAX_FACTORS) +
                              " factors (rope_dim <= 512 with longrope)",
                          std::to_string(d.rope_factor_count));
    }
    for (const auto& [field, key, values] : {std::tuple{"rope_short_factor", "short_factor", d.rope_short_factor},
                                             std::tuple{"rope_long_factor", "long_factor", d.rope_long_factor}}) {
      for (int32_t i = 0; i < d.rope_factor_count; ++i) {
        if (!std::isfinite(values[i]) || values[i] <= 0) {
          return rope_problem(field, key, "finite values > 0, but [" + std::to_string(i) + "]",
                              num(values[i]));
        }
      }
    }
  }
  return {};
}

// decoder_sparse_step and mlp_only_layers: the dense layers among the experts.
DescProblem check_dense_layers(const rill_model_desc& d) {
  if (d.decoder_sparse_step < 0) {
    return problem("decoder_sparse_step", "decoder_sparse_step: expected >= 0 (0 or 1: every layer sparse), got " +
                                              std::to_string(d.decoder_sparse_step));
  }
  if (d.mlp_only_layer_count < 0 || d.mlp_only_layer_count > RILL_MAX_MLP_ONLY_LAYERS) {
    return problem("mlp_only_layers", "mlp_only_layer_count: expected 0 to RILL_MAX_MLP_ONLY_LAYERS = " +
                                          std::to_string(RILL_MAX_MLP_ONLY_LAYERS) + ", got " +
                                          std::to_string(d.mlp_only_layer_count));
  }
  if (d.num_experts == 0 && (d.decoder_sparse_step > 1 || d.mlp_only_layer_count > 0)) {
    const bool step = d.decoder_sparse_step > 1;
    return problem(step ? "decoder_sparse_step" : "mlp_only_layers",
                   std::string(step ? "decoder_sparse_step" : "mlp_only_layers") +
                       ": chooses dense layers among the experts, so it applies only with num_experts > 0; "
                       "expected " + (step ? "0 or 1" : "no layers") + " for a dense MLP, got " +
                       std::to_string(step ? d.decoder_sparse_step : d.mlp_only_layer_count) +
                       (step ? "" : " layers"));
  }
  std::vector<bool> listed(static_cast<size_t>(d.num_layers), false);
  for (int32_t i = 0; i < d.mlp_only_layer_count; ++i) {
    const int32_t layer = d.mlp_only_layers[i];
    const std::string at = "mlp_only_layers[" + std::to_string(i) + "]: ";
    if (layer < 0 || layer >= d.num_layers) {
      return problem("mlp_only_layers", at + "expected a layer index from 0 to num_layers - 1 = " +
                                            std::to_string(d.num_layers - 1) + ", got " + std::to_string(layer));
    }
    if (listed[static_cast<size_t>(layer)]) {
      return problem("mlp_only_layers", at + "expected each layer once, got layer " + std::to_string(layer) + " again");
    }
    listed[static_cast<size_t>(layer)] = true;
  }
  return {};
}

// The mixture-of-experts fields; resolves moe_intermediate_size 0.
DescProblem check_experts(rill_model_desc& d) {
  if (d.num_experts < 0 || d.num_experts > kMaxExperts) {
    return problem("num_experts", "num_experts: expected 0 (dense MLP) to " + std::to_string(kMaxExperts) + ", got " +
                                      std::to_string(d.num_experts));
  }
  for (const auto& [field, value] :
       {std::pair<const char*, int32_t>{"moe_intermediate_size", d.moe_intermediate_size},
        {"shared_expert_intermediate_size", d.shared_expert_intermediate_size}}) {
    if (value < 0 || value > kMaxSize) {
      return problem(field, std::string(field) + ": expected 0 to " + std::to_string(kMaxSize) + ", got " +
                                std::to_string(value));
    }
  }
  DescProblem dense = check_dense_layers(d);
  if (!dense.field.empty()) return dense;
  if (d.num_experts == 0) {
    for (const auto& [field, value] :
         {std::pair<const char*, int64_t>{"num_experts_per_tok", d.num_experts_per_tok},
          {"norm_topk_prob", d.norm_topk_prob},
          {"moe_intermediate_size", d.moe_intermediate_size},
          {"shared_expert_intermediate_size", d.shared_expert_intermediate_size}}) {
      if (value != 0) {
        return problem(field, std::string(field) + ": applies only with num_experts > 0; expected 0 for a dense "
                                                   "MLP, got " + std::to_string(value));
      }
    }
    return {};
  }
  if (d.num_experts_per_tok < 1 || d.num_experts_per_tok > d.num_experts) {
    return problem("num_experts_per_tok", "num_experts_per_tok: expected 1 to num_experts = " +
                                              std::to_string(d.num_experts) + ", got " +
                                              std::to_string(d.num_experts_per_tok));
  }
  if (!is_gated(d.activation)) {
    return problem("activation", "activation: the experts are gated MLPs; expected silu_glu, gelu_glu or "
                                 "gelu_tanh_glu with num_experts > 0, got " + enum_name(d.activation));
  }
  if (d.mlp_bias != 0) {
    return problem("mlp_bias", "mlp_bias: the experts and the router have no bias; expected false with "
                               "num_experts > 0, got true");
  }
  if (d.norm_placement != RILL_PLACEMENT_PRE || d.parallel_residual != 0) {
    return problem(d.parallel_residual != 0 ? "parallel_residual" : "norm_placement",
                   std::string(d.parallel_residual != 0 ? "parallel_residual" : "norm_placement") +
                       ": num_experts > 0 runs with norm_placement RILL_PLACEMENT_PRE and no parallel_residual, got " +
                       enum_name(d.norm_placement) + (d.parallel_residual != 0 ? " with parallel_residual" : ""));
  }
  if (d.moe_intermediate_size == 0) d.moe_intermediate_size = d.intermediate_size;
  return {};
}

}  // namespace

DescProblem resolve_desc(const rill_model_desc& given, rill_model_desc& resolved) {
  if (given.struct_size < sizeof(uint32_t) + sizeof(rill_dtype)) {
    return problem("struct_size",
                   "struct_size: expected sizeof(rill_model_desc) = " + std::to_string(sizeof(rill_model_desc)) +
                       ", got " + std::to_string(given.struct_size));
  }
  rill_model_desc d;
  rill_model_desc_init(&d);
  std::memcpy(&d, &given, std::min<size_t>(given.struct_size, sizeof d));
  d.struct_size = sizeof d;

  if (rill_dtype_size(d.dtype) == 0) {
    return problem("dtype", "dtype: expected RILL_DTYPE_F32, _F16 or _BF16, got " + enum_name(d.dtype));
  }
  if (d.weight_format != RILL_DTYPE_F32 && !quant::is_block(d.weight_format)) {
    return problem("weight_format", "weight_format: expected RILL_DTYPE_F32 (matrices in dtype) or a block dtype "
                                    "(RILL_DTYPE_Q8_0 ... _Q6_K), got " + enum_name(d.weight_format) +
                                        "; for f16 or bf16 matrices, set dtype");
  }
  for (const auto& [field, value, max] :
       {std::tuple<const char*, int64_t, int64_t>{"num_layers", d.num_layers, kMaxLayers},
        {"hidden_size", d.hidden_size, kMaxSize},
        {"num_heads", d.num_heads, kMaxSize},
        {"intermediate_size", d.intermediate_size, kMaxSize}}) {
    DescProblem p = size_in_range(field, value, max);
    if (!p.field.empty()) return p;
  }
  if (d.num_kv_heads == 0) d.num_kv_heads = d.num_heads;
  if (d.num_kv_heads < 1 || d.num_kv_heads > d.num_heads || d.num_heads % d.num_kv_heads != 0) {
    return problem("num_kv_heads", "num_kv_heads: expected a divisor of num_heads " + std::to_string(d.num_heads) +
                                       " (or 0 for num_heads), got " + std::to_string(d.num_kv_heads));
  }
  if (d.head_dim == 0) {
    if (d.hidden_size % d.num_heads != 0) {
      return problem("head_dim", "head_dim: 0 asks for hidden_size / num_heads, but num_heads " +
                                     std::to_string(d.num_heads) + " does not divide hidden_size " +
                                     std::to_string(d.hidden_size) + "; set head_dim");
    }
    d.head_dim = d.hidden_size / d.num_heads;
  }
  DescProblem p = size_in_range("head_dim", d.head_dim, kMaxSize);
  if (!p.field.empty()) return p;
  if (static_cast<int64_t>(d.num_heads) * d.head_dim > kMaxSize) {
    return problem("head_dim", "num_heads * head_dim: expected at most " + std::to_string(kMaxSize) + ", got " +
                                   std::to_string(static_cast<int64_t>(d.num_heads) * d.head_dim));
  }
  const int32_t norm = rill::enum_value(d.norm);
  if (norm != RILL_NORM_RMS && norm != RILL_NORM_LAYER) {
    return problem("norm", "norm: expected RILL_NORM_RMS or RILL_NORM_LAYER, got " + enum_name(d.norm));
  }
  if (!std::isfinite(d.norm_eps) || d.norm_eps < 0) {
    return problem("norm_eps", "norm_eps: expected a finite value >= 0, got " + num(d.norm_eps));
  }
  const int32_t placement = rill::enum_value(d.norm_placement);
  if (placement < RILL_PLACEMENT_PRE || placement > RILL_PLACEMENT_OUTPUT) {
    return problem("norm_placement",
                   "norm_placement: expected RILL_PLACEMENT_PRE, _POST, _SANDWICH, _DEEPNORM or _OUTPUT, got " +
                       enum_name(d.norm_placement));
  }
  const int32_t activation = rill::enum_value(d.activation);
  if (activation < RILL_MLP_SILU_GLU || activation > RILL_MLP_GELU_TANH_GLU) {
    return problem("activation", std::string("activation: expected RILL_MLP_SILU_GLU, _GELU_GLU, _GELU_TANH_GLU, "
                                             "_GELU, _GELU_TANH or _RELU, got ") +
                                     enum_name(d.activation));
  }
  if (!std::isfinite(d.rope_theta) || d.rope_theta < 0) {
    return problem("rope_theta", "rope_theta: expected a finite value >= 0 (0 = no RoPE), got " + num(d.rope_theta));
  }
  if (d.rope_dim == 0) d.rope_dim = d.head_dim;
  if (d.rope_dim < 2 || d.rope_dim > d.head_dim || d.rope_dim % 2 != 0) {
    return problem("rope_dim", "rope_dim: expected an even number from 2 to head_dim " + std::to_string(d.head_dim) +
                                   " (or 0 for head_dim), got " + std::to_string(d.rope_dim));
  }
  if (!std::isfinite(d.residual_scale) || d.residual_scale == 0) {
    return problem("residual_scale", "residual_scale: expected a finite nonzero value, got " + num(d.residual_scale));
  }
  if (!std::isfinite(d.branch_scale)) {
    return problem("branch_scale", "branch_scale: expected a finite value, got " + num(d.branch_scale));
  }
  const int32_t qk_norm = rill::enum_value(d.qk_norm);
  if (qk_norm < RILL_QK_NORM_NONE || qk_norm > RILL_QK_NORM_HEAD_WEIGHTS) {
    return problem("qk_norm", "qk_norm: expected RILL_QK_NORM_NONE, _HEAD, _FULL or _HEAD_WEIGHTS, got " +
                                  enum_name(d.qk_norm));
  }
  if (!std::isfinite(d.norm_weight_offset)) {
    return problem("norm_weight_offset",
                   "norm_weight_offset: expected a finite value, got " + num(d.norm_weight_offset));
  }
  if (!std::isfinite(d.query_pre_attn_scalar) || d.query_pre_attn_scalar < 0) {
    return problem("query_pre_attn_scalar",
                   "query_pre_attn_scalar: expected a finite value >= 0 (0 = head_dim), got " +
                       num(d.query_pre_attn_scalar));
  }
  if (d.query_pre_attn_scalar == 0) d.query_pre_attn_scalar = static_cast<float>(d.head_dim);
  if (d.parallel_norms != 1 && d.parallel_norms != 2) {
    return problem("parallel_norms", "parallel_norms: expected 1 (one shared input norm) or 2 (one per sublayer), got " +
                                         std::to_string(d.parallel_norms));
  }
  if (d.parallel_residual == 0 && d.parallel_norms != 1) {
    return problem("parallel_norms", "parallel_norms: " + std::to_string(d.parallel_norms) +
                                         " applies only with parallel_residual; expected 1 without it");
  }
  if (d.parallel_residual != 0 && placement != RILL_PLACEMENT_PRE) {
    return problem("parallel_residual", "parallel_residual: expected norm_placement RILL_PLACEMENT_PRE (the parallel "
                                        "form normalizes each sublayer's input), got " + enum_name(d.norm_placement));
  }
  if (d.parallel_residual != 0 && d.layer_scale != 0) {
    return problem("layer_scale", "layer_scale: not available with parallel_residual (the two branches are summed "
                                  "before their one residual add, so a gain per branch has no place to act)");
  }
  for (const auto& [field, value] :
       {std::pair<const char*, int32_t>{"sliding_window", d.sliding_window},
        {"sliding_window_pattern", d.sliding_window_pattern},
        {"max_window_layers", d.max_window_layers}}) {
    if (value < 0) {
      return problem(field, std::string(field) + ": expected a value >= 0, got " + std::to_string(value));
    }
    if (value != 0 && d.sliding_window == 0) {
      return problem(field, std::string(field) + ": says which layers slide, so it needs sliding_window > 0; "
                                                 "expected 0 without a window, got " + std::to_string(value));
    }
  }
  if (!std::isfinite(d.attn_logit_softcapping) || d.attn_logit_softcapping < 0) {
    return problem("attn_logit_softcapping", "attn_logit_softcapping: expected a finite value >= 0 (0 = off), got " +
                                                 num(d.attn_logit_softcapping));
  }
  if (!std::isfinite(d.clip_qkv) || d.clip_qkv < 0) {
    return problem("clip_qkv", "clip_qkv: expected a finite value >= 0 (0 = off), got " + num(d.clip_qkv));
  }
  if (!std::isfinite(d.rope_local_base_freq) || d.rope_local_base_freq < 0) {
    return problem("rope_local_base_freq", "rope_local_base_freq: expected a finite value >= 0 (0 = rope_theta), got " +
                                               num(d.rope_local_base_freq));
  }
  if (d.rope_local_base_freq != 0 && (d.sliding_window == 0 || d.rope_theta == 0)) {
    return problem("rope_local_base_freq", "rope_local_base_freq: the RoPE theta of the sliding layers needs "
                                           "sliding_window > 0 and rope_theta > 0; expected 0, got " +
                                               num(d.rope_local_base_freq));
  }
  if (d.rope_local_base_freq == 0) d.rope_local_base_freq = d.rope_theta;
  DescProblem rope = check_rope_scaling(d);
  if (!rope.field.empty()) return rope;
  if (d.no_rope_layer_interval < 0) {
    return problem("no_rope_layer_interval", "no_rope_layer_interval: expected >= 0 (0 = RoPE on every layer), got " +
                                                 std::to_string(d.no_rope_layer_interval));
  }
  if (d.rope_interleave != 0 && d.rope_theta == 0) {
    return problem("rope_interleave", "rope_interleave: says how the checkpoint's q and k rows rotate, so it needs "
                                      "rope_theta > 0; expected false without RoPE, got true");
  }
  DescProblem moe = check_experts(d);
  if (!moe.field.empty()) return moe;
  resolved = d;
  return {};
}

bool layer_sparse(const rill_model_desc& d, int32_t layer) {
  if (d.num_experts == 0) return false;
  if (std::find(d.mlp_only_layers, d.mlp_only_layers + d.mlp_only_layer_count, layer) !=
      d.mlp_only_layers + d.mlp_only_layer_count) {
    return false;
  }
  return d.decoder_sparse_step <= 1 || (layer + 1) % d.decoder_sparse_step == 0;
}

bool layer_slides(const rill_model_desc& d, int32_t layer) {
  if (d.sliding_window == 0 || layer < d.max_window_layers) return false;
  return d.sliding_window_pattern == 0 || (layer + 1) % d.sliding_window_pattern != 0;
}

namespace {

// Reads keys of the [model] table through the checker; an absent key leaves
// its output untouched (the default).
class ModelReader {
 public:
  ModelReader(const TomlChecker& check, const toml::table& table, std::string prefix = "model.")
      : check_(check), table_(table), prefix_(std::move(prefix)) {}

  void integer(const char* key, int32_t& out) const {
    if (const toml::node* node = table_.get(key)) {
      out = static_cast<int32_t>(check_.integer(*node, prefix_ + key, 0, INT32_MAX));
    }
  }
  void real(const char* key, float& out) const {
    if (const toml::node* node = table_.get(key)) out = to_float(*node, prefix_ + key);
  }
  // An array of at most capacity numbers into out; returns how many (0 when absent).
  int32_t reals(const char* key, float* out, int32_t capacity) const {
    return elements(key, "RILL_ROPE_MAX_FACTORS", capacity, "numbers",
                    [&](const toml::node& element, const std::string& at, int32_t i) { out[i] = to_float(element, at); });
  }
  // An array of at most capacity integers >= 0 into out; returns how many (0 when absent).
  int32_t integers(const char* key, const char* capacity_name, int32_t* out, int32_t capacity) const {
    return elements(key, capacity_name, capacity, "integers", [&](const toml::node& element, const std::string& at,
                                                                  int32_t i) {
      out[i] = static_cast<int32_t>(check_.integer(element, at, 0, INT32_MAX));
    });
  }
  void boolean(const char* key, uint32_t& out) const {
    if (const toml::node* node = table_.get(key)) out = check_.boolean(*node, prefix_ + key) ? 1u : 0u;
  }
  template <class Enum>
  void choice(const char* key, std::initializer_list<std::pair<const char*, Enum>> options, Enum& out) const {
    if (const toml::node* node = table_.get(key)) out = check_.choice(*node, prefix_ + key, options);
  }

 private:
  // The number node holds, as a float. Converting a finite double beyond
  // float's range is undefined; inf and nan convert exactly and meet the
  // field's own check.
  float to_float(const toml::node& node, const std::string& name) const {
    const double value = check_.number(node, name);
    if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
      check_.error_at(node.source(), "'" + name + "': expected a number within float's range (magnitude at most " +
                                         num(std::numeric_limits<float>::max()) + "), got " + num(value));
    }
    return static_cast<float>(value);
  }

  // The array at key, each element (named "key[i]") given to read.
  template <class Read>
  int32_t elements(const char* key, const char* capacity_name, int32_t capacity, const char* what, Read read) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) return 0;
    const std::string name = prefix_ + key;
    const toml::array* array = node->as_array();
    if (array == nullptr) check_.wrong_type(*node, name, std::string("an array of ") + what);
    if (array->size() > static_cast<size_t>(capacity)) {
      check_.error_at(node->source(), "'" + name + "': expected at most " + capacity_name + " = " +
                                          std::to_string(capacity) + " " + what + ", got " +
                                          std::to_string(array->size()));
    }
    int32_t count = 0;
    for (const toml::node& element : *array) {
      read(element, name + "[" + std::to_string(count) + "]", count);
      ++count;
    }
    return count;
  }

  const TomlChecker& check_;
  const toml::table& table_;
  const std::string prefix_;
};

// [model.rope_scaling]: Hugging Face's rope_scaling dict, with its key names
// ("type" is the older spelling of "rope_type").
void read_rope_scaling(const TomlChecker& check, const toml::table& table, rill_model_desc& d) {
  check.only_keys(table, "model.rope_scaling.",
                  {"rope_type", "type", "factor", "original_max_position_embeddings", "low_freq_factor",
                   "high_freq_factor", "beta_fast", "beta_slow", "attention_factor", "short_factor", "long_factor"});
  if (table.get("rope_type") != nullptr && table.get("type") != nullptr) {
    check.error_at(table.get("type")->source(),
                   "'model.rope_scaling.type': expected one of 'rope_type' and 'type', got both");
  }
  const ModelReader t(check, table, "model.rope_scaling.");
  for (const char* key : {"rope_type", "type"}) {
    t.choice<rill_rope_type>(key,
                             {{"default", RILL_ROPE_DEFAULT},
                              {"linear", RILL_ROPE_LINEAR},
                              {"dynamic", RILL_ROPE_DYNAMIC},
                              {"yarn", RILL_ROPE_YARN},
                              {"longrope", RILL_ROPE_LONGROPE},
                              {"llama3", RILL_ROPE_LLAMA3}},
                             d.rope_type);
  }
  t.real("factor", d.rope_factor);
  t.integer("original_max_position_embeddings", d.rope_original_max_position_embeddings);
  t.real("low_freq_factor", d.rope_low_freq_factor);
  t.real("high_freq_factor", d.rope_high_freq_factor);
  t.real("beta_fast", d.rope_beta_fast);
  t.real("beta_slow", d.rope_beta_slow);
  t.real("attention_factor", d.rope_attention_factor);
  const int32_t shorts = t.reals("short_factor", d.rope_short_factor, RILL_ROPE_MAX_FACTORS);
  const int32_t longs = t.reals("long_factor", d.rope_long_factor, RILL_ROPE_MAX_FACTORS);
  if (shorts != longs) {
    // Point at the shorter list, or at the longer one when the other is absent.
    const char* shorter = shorts < longs ? "short_factor" : "long_factor";
    const char* longer = shorts < longs ? "long_factor" : "short_factor";
    const toml::node* node = table.get(shorter);
    if (node == nullptr) {
      check.error_at(table.get(longer)->source(), std::string("'model.rope_scaling.") + longer + "': expected '" +
                                                      shorter + "' of the same length beside it, got none");
    }
    check.error_at(node->source(), "'model.rope_scaling.short_factor' and 'long_factor': expected lists of one "
                                   "length, got " + std::to_string(shorts) + " and " + std::to_string(longs) +
                                   " numbers");
  }
  d.rope_factor_count = shorts;
}

void read_model_table(const TomlChecker& check, const toml::table& table, rill_model_desc& d) {
  check.only_keys(table, "model.",
                  {"dtype", "num_layers", "hidden_size", "num_heads", "num_kv_heads", "head_dim",
                   "intermediate_size", "norm", "norm_eps", "norm_placement", "activation", "rope_theta",
                   "rope_dim", "qkv_bias", "o_bias", "mlp_bias", "final_norm", "residual_scale", "branch_scale",
                   "layer_scale", "qk_norm", "norm_weight_offset", "query_pre_attn_scalar", "parallel_residual",
                   "parallel_norms", "sliding_window", "sliding_window_pattern", "max_window_layers",
                   "attn_logit_softcapping", "rope_local_base_freq", "max_position_embeddings",
                   "no_rope_layer_interval", "num_experts", "num_experts_per_tok", "norm_topk_prob",
                   "moe_intermediate_size", "shared_expert_intermediate_size", "rope_interleave",
                   "decoder_sparse_step", "mlp_only_layers", "rope_scaling", "weight_format", "clip_qkv"});
  const ModelReader t(check, table);
  t.choice<rill_dtype>("dtype", {{"f32", RILL_DTYPE_F32}, {"f16", RILL_DTYPE_F16}, {"bf16", RILL_DTYPE_BF16}}, d.dtype);
  t.choice<rill_dtype>("weight_format",
                       {{"f32", RILL_DTYPE_F32}, {"q8_0", RILL_DTYPE_Q8_0}, {"q4_0", RILL_DTYPE_Q4_0},
                        {"q5_0", RILL_DTYPE_Q5_0}, {"q5_1", RILL_DTYPE_Q5_1},
                        {"q4_k", RILL_DTYPE_Q4_K}, {"q5_k", RILL_DTYPE_Q5_K}, {"q6_k", RILL_DTYPE_Q6_K}},
                       d.weight_format);
  t.integer("num_layers", d.num_layers);
  t.integer("hidden_size", d.hidden_size);
  t.integer("num_heads", d.num_heads);
  t.integer("num_kv_heads", d.num_kv_heads);
  t.integer("head_dim", d.head_dim);
  t.integer("intermediate_size", d.intermediate_size);
  t.choice<rill_norm_kind>("norm", {{"rms", RILL_NORM_RMS}, {"layer", RILL_NORM_LAYER}}, d.norm);
  t.real("norm_eps", d.norm_eps);
  t.choice<rill_norm_placement>("norm_placement",
                                {{"pre", RILL_PLACEMENT_PRE},
                                 {"post", RILL_PLACEMENT_POST},
                                 {"sandwich", RILL_PLACEMENT_SANDWICH},
                                 {"deepnorm", RILL_PLACEMENT_DEEPNORM},
                                 {"output", RILL_PLACEMENT_OUTPUT}},
                                d.norm_placement);
  t.choice<rill_mlp_activation>("activation",
                                {{"silu_glu", RILL_MLP_SILU_GLU},
                                 {"gelu_glu", RILL_MLP_GELU_GLU},
                                 {"gelu_tanh_glu", RILL_MLP_GELU_TANH_GLU},
                                 {"gelu", RILL_MLP_GELU},
                                 {"gelu_tanh", RILL_MLP_GELU_TANH},
                                 {"relu", RILL_MLP_RELU}},
                                d.activation);
  t.real("rope_theta", d.rope_theta);
  t.integer("rope_dim", d.rope_dim);
  t.boolean("qkv_bias", d.qkv_bias);
  t.boolean("o_bias", d.o_bias);
  t.boolean("mlp_bias", d.mlp_bias);
  t.boolean("final_norm", d.final_norm);
  t.real("residual_scale", d.residual_scale);
  t.real("branch_scale", d.branch_scale);
  t.boolean("layer_scale", d.layer_scale);
  t.choice<rill_qk_norm>("qk_norm",
                         {{"none", RILL_QK_NORM_NONE},
                          {"head", RILL_QK_NORM_HEAD},
                          {"head_weights", RILL_QK_NORM_HEAD_WEIGHTS},
                          {"full", RILL_QK_NORM_FULL}},
                         d.qk_norm);
  t.real("norm_weight_offset", d.norm_weight_offset);
  t.real("query_pre_attn_scalar", d.query_pre_attn_scalar);
  t.boolean("parallel_residual", d.parallel_residual);
  t.integer("parallel_norms", d.parallel_norms);
  t.integer("sliding_window", d.sliding_window);
  t.integer("sliding_window_pattern", d.sliding_window_pattern);
  t.integer("max_window_layers", d.max_window_layers);
  t.real("attn_logit_softcapping", d.attn_logit_softcapping);
  t.real("clip_qkv", d.clip_qkv);
  t.real("rope_local_base_freq", d.rope_local_base_freq);
  t.integer("max_position_embeddings", d.max_position_embeddings);
  t.integer("no_rope_layer_interval", d.no_rope_layer_interval);
  t.integer("num_experts", d.num_experts);
  t.integer("num_experts_per_tok", d.num_experts_per_tok);
  t.boolean("norm_topk_prob", d.norm_topk_prob);
  t.integer("moe_intermediate_size", d.moe_intermediate_size);
  t.integer("shared_expert_intermediate_size", d.shared_expert_intermediate_size);
  t.boolean("rope_interleave", d.rope_interleave);
  t.integer("decoder_sparse_step", d.decoder_sparse_step);
  d.mlp_only_layer_count =
      t.integers("mlp_only_layers", "RILL_MAX_MLP_ONLY_LAYERS", d.mlp_only_layers, RILL_MAX_MLP_ONLY_LAYERS);
  if (const toml::table* scaling = check.table_at(table, "rope_scaling", "model.rope_scaling")) {
    read_rope_scaling(check, *scaling, d);
  }
}

}  // namespace
}  // namespace rill::layer

extern "C" {

RILL_API void rill_model_desc_init(rill_model_desc* desc) {
  if (desc == nullptr) return;
  *desc = rill_model_desc{};
  desc->struct_size = sizeof(rill_model_desc);
  desc->dtype = RILL_DTYPE_F32;
  desc->weight_format = RILL_DTYPE_F32;
  desc->norm = RILL_NORM_RMS;
  desc->norm_eps = 1e-6f;
  desc->norm_placement = RILL_PLACEMENT_PRE;
  desc->activation = RILL_MLP_SILU_GLU;
  desc->rope_theta = 10000.0f;
  desc->final_norm = 1;
  desc->residual_scale = 1.0f;
  desc->branch_scale = 1.0f;
  desc->parallel_norms = 1;
  desc->rope_type = RILL_ROPE_DEFAULT;
  desc->rope_factor = 1.0f;
  desc->rope_beta_fast = 32.0f;
  desc->rope_beta_slow = 1.0f;
}

RILL_API rill_status rill_model_desc_from_toml(const char* toml_text, const char* source_name,
                                               rill_model_desc* out_desc) {
  constexpr const char* fn = "rill_model_desc_from_toml";
  return rill::guarded(fn, [&] {
    if (toml_text == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": toml: expected TOML text, got NULL");
    }
    if (out_desc == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": out_desc: expected a pointer, got NULL");
    }
    const std::string source = source_name != nullptr ? source_name : "config";
    toml::table root;
    const rill_status parsed = rill::parse_toml(toml_text, source, fn, root);
    if (parsed != RILL_OK) return parsed;
    const rill::TomlChecker check(source);
    const toml::node* model_node = root.get("model");
    if (model_node == nullptr) {
      return rill::fail(RILL_ERROR_CONFIG, std::string(fn) + ": " + source + ": no [model] table");
    }
    if (!model_node->is_table()) {
      return rill::fail(RILL_ERROR_CONFIG, std::string(fn) + ": " + check.where(*model_node) + ": 'model' must be a table");
    }
    const toml::table& table = *model_node->as_table();
    rill_model_desc desc;
    rill_model_desc_init(&desc);
    try {
      rill::layer::read_model_table(check, table, desc);
    } catch (const rill::TomlError& e) {
      return rill::fail(RILL_ERROR_CONFIG, std::string(fn) + ": " + e.message);
    }
    for (const char* required : {"num_layers", "hidden_size", "num_heads", "intermediate_size"}) {
      if (table.get(required) == nullptr) {
        return rill::fail(RILL_ERROR_CONFIG, std::string(fn) + ": " + check.where(table) +
                                                 ": [model] lacks the required key '" + required + "'");
      }
    }
    rill_model_desc resolved;
    const rill::layer::DescProblem p = rill::layer::resolve_desc(desc, resolved);
    if (!p.field.empty()) {
      const toml::node* node = table.at_path(p.field).node();
      const std::string where = check.where(node != nullptr ? *node : static_cast<const toml::node&>(table));
      return rill::fail(RILL_ERROR_CONFIG, std::string(fn) + ": " + where + ": model." + p.message);
    }
    *out_desc = desc;
    return RILL_OK;
  });
}

}  // extern "C"
