// config.json -> rill_model_desc per model_type, and generation_config.json.
// Each family maps its keys onto the [model] table of rill_model_desc_from_toml
// (the one home of the descriptor's keys, rope_scaling included) and marks
// every key it reads; a key no family reader marks is refused by name, so a
// setting rill does not implement never changes the model silently.
#include "hf_config.h"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <map>
#include <set>
#include <sstream>

#include "io/json_release.h"
#include "io/text_file.h"

namespace rill::lm {
namespace {

using nlohmann::json;

struct ConfigError {
  rill_status status;
  std::string message;
};

// A value as the file writes it, shortened for a message.
std::string value_text(const json& value) {
  std::string text = value.dump();
  return text.size() > 120 ? text.substr(0, 117) + "..." : text;
}

// The keys of one JSON object, each marked as it is read.
class Keys {
 public:
  Keys(const json& object, std::string file) : object_(object), file_(std::move(file)) {}

  [[noreturn]] void error(rill_status status, const std::string& key, const std::string& text) const {
    throw ConfigError{status, file_ + ": '" + key + "': " + text};
  }

  // The value of key, or nullptr when it is absent or null.
  const json* get(const char* key) {
    read_.insert(key);
    const auto found = object_.find(key);
    return found == object_.end() || found->is_null() ? nullptr : &*found;
  }

  int64_t integer(const char* key, int64_t fallback, int64_t min = 0, int64_t max = INT32_MAX) {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer()) error(RILL_ERROR_CONFIG, key, "expected an integer, got " + value_text(*v));
    const int64_t value = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX ? INT64_MAX : v->get<int64_t>();
    if (value < min || value > max) {
      error(RILL_ERROR_CONFIG, key,
            "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got " +
                value_text(*v));
    }
    return value;
  }
  int64_t required_integer(const char* key, int64_t min = 1, int64_t max = INT32_MAX) {
    if (get(key) == nullptr) error(RILL_ERROR_CONFIG, key, "required, but absent or null");
    return integer(key, 0, min, max);
  }
  double number(const char* key, double fallback) {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number()) error(RILL_ERROR_CONFIG, key, "expected a number, got " + value_text(*v));
    return v->get<double>();
  }
  bool boolean(const char* key, bool fallback) {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) error(RILL_ERROR_CONFIG, key, "expected true or false, got " + value_text(*v));
    return v->get<bool>();
  }
  std::string string(const char* key, const std::string& fallback) {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) error(RILL_ERROR_CONFIG, key, "expected a string, got " + value_text(*v));
    return v->get<std::string>();
  }

  // Keys that do not change the computation (bookkeeping, training-only or
  // generation settings): read and ignored.
  void harmless(std::initializer_list<const char*> keys) {
    for (const char* key : keys) read_.insert(key);
  }

  // key must be absent, null or the value that leaves the model as rill runs it.
  void neutral(const char* key, const json& expected, const std::string& why) {
    const json* v = get(key);
    if (v != nullptr && *v != expected) {
      error(RILL_ERROR_UNSUPPORTED, key, "rill runs only " + value_text(expected) + " (" + why + "), got " +
                                              value_text(*v));
    }
  }

  // Refuses the first key no reader marked.
  void no_others(const std::string& model_type) const {
    for (const auto& [key, value] : object_.items()) {
      if (read_.count(key) == 0) {
        error(RILL_ERROR_UNSUPPORTED, key,
              "not understood for model_type " + model_type + " (value " + value_text(value) +
                  "); rill refuses config keys it does not implement, since they may change the computation "
                  "(docs/MODELS.md)");
      }
    }
  }

 private:
  const json& object_;
  const std::string file_;
  std::set<std::string> read_;
};

// What a family reader builds: the [model] table and the rest of the config.
struct Mapping {
  toml::table model;
  HfConfig& config;
};

// Keys every family accepts: PretrainedConfig's bookkeeping and generation
// settings, which never change logits.
void common_keys(Keys& k) {
  k.harmless({"architectures", "transformers_version", "_name_or_path", "_attn_implementation_autoset",
              "initializer_range", "use_cache", "pad_token_id", "sep_token_id", "decoder_start_token_id",
              "attention_dropout", "output_attentions", "output_hidden_states", "return_dict", "torchscript",
              "use_bfloat16", "tf_legacy_loss", "chunk_size_feed_forward", "id2label", "label2id", "problem_type",
              "finetuning_task", "tokenizer_class", "prefix", "task_specific_params", "is_decoder",
              "tie_encoder_decoder", "cross_attention_hidden_size", "max_length", "min_length", "do_sample",
              "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty", "temperature", "top_k",
              "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
              "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
              "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
              "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"});
  k.neutral("is_encoder_decoder", false, "decoder-only models");
  k.neutral("add_cross_attention", false, "no cross-attention");
  k.neutral("pruned_heads", json::object(), "no pruned heads");
}

// rope_scaling, a JSON object, as [model.rope_scaling]: the TOML reader
// checks its keys and values as it checks a hand-written table.
void rope_scaling(Keys& k, Mapping& m) {
  const json* v = k.get("rope_scaling");
  if (v == nullptr) return;
  if (!v->is_object()) k.error(RILL_ERROR_CONFIG, "rope_scaling", "expected an object or null, got " + value_text(*v));
  toml::table table;
  for (const auto& [key, value] : v->items()) {
    if (value.is_null()) continue;
    if (value.is_number_integer()) {
      table.insert(key, value.get<int64_t>());
    } else if (value.is_number()) {
      table.insert(key, value.get<double>());
    } else if (value.is_string()) {
      table.insert(key, value.get<std::string>());
    } else if (value.is_boolean()) {
      table.insert(key, value.get<bool>());
    } else if (value.is_array()) {
      toml::array array;
      for (const json& element : value) {
        if (!element.is_number()) {
          k.error(RILL_ERROR_CONFIG, "rope_scaling", "'" + key + "': expected numbers, got " + value_text(value));
        }
        array.push_back(element.get<double>());
      }
      table.insert(key, std::move(array));
    } else {
      k.error(RILL_ERROR_CONFIG, "rope_scaling", "'" + key + "': unexpected value " + value_text(value));
    }
  }
  m.model.insert_or_assign("rope_scaling", std::move(table));
}

void copy_integer(Keys& k, Mapping& m, const char* key, const char* field) {
  if (k.get(key) != nullptr) m.model.insert_or_assign(field, k.integer(key, 0, 0, INT32_MAX));
}

// The sizes every family names alike, the norm's eps (eps_key, or the
// fallback with eps_key NULL), rope_theta and rope_scaling.
// kv_heads false: a multi-head-attention family without num_key_value_heads.
void sizes(Keys& k, Mapping& m, double eps_fallback, const char* eps_key = "rms_norm_eps", bool kv_heads = true) {
  m.config.vocab_size = static_cast<int32_t>(k.required_integer("vocab_size"));
  m.model.insert_or_assign("num_layers", k.required_integer("num_hidden_layers"));
  m.model.insert_or_assign("hidden_size", k.required_integer("hidden_size"));
  m.model.insert_or_assign("num_heads", k.required_integer("num_attention_heads"));
  m.model.insert_or_assign("intermediate_size", k.required_integer("intermediate_size"));
  if (kv_heads) copy_integer(k, m, "num_key_value_heads", "num_kv_heads");
  if (kv_heads) copy_integer(k, m, "head_dim", "head_dim");
  m.model.insert_or_assign("norm_eps", eps_key != nullptr ? k.number(eps_key, eps_fallback) : eps_fallback);
  m.model.insert_or_assign("rope_theta", k.number("rope_theta", 10000.0));
  m.config.max_position_embeddings = static_cast<int32_t>(k.integer("max_position_embeddings", 0));
  if (m.config.max_position_embeddings > 0) {
    m.model.insert_or_assign("max_position_embeddings", int64_t{m.config.max_position_embeddings});
  }
  rope_scaling(k, m);
}

// hidden_act of a gated MLP: act(gate_proj x) * up_proj x.
void gated_activation(Keys& k, Mapping& m, const std::string& fallback, const char* key = "hidden_act") {
  const std::string act = k.string(key, fallback);
  static const std::map<std::string, std::string> kGated = {{"silu", "silu_glu"},
                                                            {"swish", "silu_glu"},
                                                            {"gelu", "gelu_glu"},
                                                            {"gelu_pytorch_tanh", "gelu_tanh_glu"},
                                                            {"gelu_new", "gelu_tanh_glu"}};
  const auto found = kGated.find(act);
  if (found == kGated.end()) {
    k.error(RILL_ERROR_UNSUPPORTED, key,
            "expected silu, swish, gelu, gelu_pytorch_tanh or gelu_new, got \"" + act + "\"");
  }
  m.model.insert_or_assign("activation", found->second);
}

// Mistral's and Qwen2's sliding_window: an integer, or null for none.
void sliding_window(Keys& k, Mapping& m, int64_t fallback) {
  const int64_t window = k.integer("sliding_window", fallback, 0, INT32_MAX);
  if (window > 0) m.model.insert_or_assign("sliding_window", window);
}

// head_dim as the [model] table has it so far: its head_dim, else
// hidden_size / num_heads (0 when that does not divide; the descriptor check
// then names the problem).
int64_t head_dim_of(const Mapping& m) {
  if (const auto* given = m.model.get_as<int64_t>("head_dim")) return given->get();
  const int64_t hidden = m.model.get_as<int64_t>("hidden_size")->get();
  const int64_t heads = m.model.get_as<int64_t>("num_heads")->get();
  return hidden % heads == 0 ? hidden / heads : 0;
}

// partial_rotary_factor (or GPT-NeoX's rotary_pct) -> rope_dim, truncated as
// transformers computes int(head_dim * factor).
void partial_rotary(Keys& k, Mapping& m, const char* key) {
  const double factor = k.number(key, 1.0);
  if (!(factor > 0 && factor <= 1)) {
    k.error(RILL_ERROR_CONFIG, key, "expected a fraction in (0, 1], got " + std::to_string(factor));
  }
  if (factor < 1) {
    m.model.insert_or_assign("rope_dim", static_cast<int64_t>(static_cast<double>(head_dim_of(m)) * factor));
  }
}

// The key must hold the same value as the one rill reads in its place.
void same_as(Keys& k, const char* key, double value, const char* read) {
  const double given = k.number(key, value);
  if (given != value) {
    k.error(RILL_ERROR_CONFIG, key, std::string("expected the value of '") + read + "' (" + std::to_string(value) +
                                        "), got " + std::to_string(given));
  }
}

void biases(Keys& k, Mapping& m, const char* key, bool fallback) {
  const bool bias = k.boolean(key, fallback);
  m.model.insert_or_assign("qkv_bias", bias);
  m.model.insert_or_assign("o_bias", bias);
}

void tie(Keys& k, Mapping& m, bool fallback) {
  m.config.tie_word_embeddings = k.boolean("tie_word_embeddings", fallback);
}

// Newer configs list each layer's attention kind; rill takes it from the
// window keys, so the list must say what they say.
void layer_types(Keys& k, Mapping& m) {
  const json* v = k.get("layer_types");
  if (v == nullptr) return;
  const bool sliding = m.model.contains("sliding_window");
  for (const json& type : *v) {
    if (!(type == "full_attention" || (sliding && type == "sliding_attention"))) {
      k.error(RILL_ERROR_UNSUPPORTED, "layer_types",
              "rill derives each layer's attention from sliding_window and its pattern; expected only "
              "\"full_attention\" entries here, got " + value_text(*v));
    }
  }
}

void llama(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("mlp_bias", k.boolean("mlp_bias", false));
  k.harmless({"pretraining_tp"});  // splits the projections' GEMMs; the sum is the same
  tie(k, m, false);
}

// Mistral; window_fallback is the class default when sliding_window is absent.
void mistral_like(Keys& k, Mapping& m, int64_t window_fallback) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  sliding_window(k, m, window_fallback);
  tie(k, m, false);
}

void mistral(Keys& k, Mapping& m) { mistral_like(k, m, 4096); }

// Qwen2's window: only with use_sliding_window, on layers >= max_window_layers.
void qwen_window(Keys& k, Mapping& m) {
  if (k.boolean("use_sliding_window", false)) {
    sliding_window(k, m, 4096);
    copy_integer(k, m, "max_window_layers", "max_window_layers");
  } else {
    k.harmless({"sliding_window", "max_window_layers"});  // read only with use_sliding_window
  }
}

void qwen2(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  m.model.insert_or_assign("qkv_bias", true);
  qwen_window(k, m);
  tie(k, m, false);
}

// Qwen3 (after its published modelling code; transformers 4.47.1 has none):
// Qwen2 with a per-head RMSNorm on q and k, and attention_bias for the bias.
void qwen3(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("qk_norm", "head");
  qwen_window(k, m);
  layer_types(k, m);
  tie(k, m, false);
}

// Gemma: 1 + w norms, the tanh GELU (hidden_activation; transformers ignores
// hidden_act for Gemma), embeddings scaled by sqrt(hidden_size).
void gemma_common(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "gelu_pytorch_tanh", "hidden_activation");
  k.harmless({"hidden_act"});
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("norm_weight_offset", 1.0);
  m.config.scale_embedding = true;
  tie(k, m, true);
}

void softcaps(Keys& k, Mapping& m, double attention_fallback, double final_fallback) {
  const double attention = k.number("attn_logit_softcapping", attention_fallback);
  if (attention > 0) m.model.insert_or_assign("attn_logit_softcapping", attention);
  const double final = k.number("final_logit_softcapping", final_fallback);
  if (!(final >= 0)) k.error(RILL_ERROR_CONFIG, "final_logit_softcapping", "expected a value >= 0 or null");
  m.config.final_logit_softcapping = static_cast<float>(final);
}

void gemma(Keys& k, Mapping& m) { gemma_common(k, m); }

void gemma2(Keys& k, Mapping& m) {
  gemma_common(k, m);
  m.model.insert_or_assign("norm_placement", "sandwich");
  m.model.insert_or_assign("query_pre_attn_scalar", k.number("query_pre_attn_scalar", 224));
  softcaps(k, m, 50.0, 30.0);
  const int64_t window = k.integer("sliding_window", 4096, 0, INT32_MAX);
  if (window > 0) {
    m.model.insert_or_assign("sliding_window", window);
    m.model.insert_or_assign("sliding_window_pattern", int64_t{2});  // even layers slide
  }
  k.harmless({"cache_implementation"});
}

// Gemma 3's text model (after its published modelling code; transformers
// 4.47.1 has none): Gemma 2 with a per-head QK norm, every
// sliding_window_pattern-th layer global and its own theta on the others.
void gemma3_text(Keys& k, Mapping& m) {
  gemma_common(k, m);
  m.model.insert_or_assign("norm_placement", "sandwich");
  m.model.insert_or_assign("qk_norm", "head");
  m.model.insert_or_assign("query_pre_attn_scalar", k.number("query_pre_attn_scalar", 256));
  softcaps(k, m, 0.0, 0.0);
  const int64_t window = k.integer("sliding_window", 4096, 0, INT32_MAX);
  if (window > 0) {
    m.model.insert_or_assign("sliding_window", window);
    m.model.insert_or_assign("sliding_window_pattern", k.integer("sliding_window_pattern", 6, 0, INT32_MAX));
    m.model.insert_or_assign("rope_local_base_freq", k.number("rope_local_base_freq", 10000.0));
  }
  layer_types(k, m);
  k.harmless({"cache_implementation"});
}

// Phi-3: fused qkv_proj and gate_up_proj (split on load), LongRoPE with
// original_max_position_embeddings beside rope_scaling.
void phi3(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5);
  gated_activation(k, m, "silu");
  sliding_window(k, m, 0);
  partial_rotary(k, m, "partial_rotary_factor");
  const int64_t original = k.integer("original_max_position_embeddings", 0);
  if (auto* scaling = m.model.get_as<toml::table>("rope_scaling"); scaling != nullptr && original > 0) {
    if (!scaling->contains("original_max_position_embeddings")) {
      scaling->insert("original_max_position_embeddings", original);
    }
  }
  k.harmless({"resid_pdrop", "embd_pdrop"});
  tie(k, m, false);
}

void layer_norm(Mapping& m) { m.model.insert_or_assign("norm", "layer"); }

// A plain (ungated) MLP: act(up_proj x) then down_proj.
void plain_activation(Keys& k, Mapping& m, const std::string& fallback, const char* key = "hidden_act") {
  const std::string act = k.string(key, fallback);
  static const std::map<std::string, std::string> kPlain = {
      {"gelu", "gelu"}, {"gelu_pytorch_tanh", "gelu_tanh"}, {"gelu_new", "gelu_tanh"}, {"relu", "relu"}};
  const auto found = kPlain.find(act);
  if (found == kPlain.end()) {
    k.error(RILL_ERROR_UNSUPPORTED, key,
            "expected gelu, gelu_pytorch_tanh, gelu_new or relu, got \"" + act + "\"");
  }
  m.model.insert_or_assign("activation", found->second);
}

void refuse_true(Keys& k, const char* key, const std::string& why) { k.neutral(key, false, why); }

void stablelm(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, "layer_norm_eps");
  layer_norm(m);
  gated_activation(k, m, "silu");
  m.model.insert_or_assign("qkv_bias", k.boolean("use_qkv_bias", false));
  // StableLM 2 12B: a LayerNorm without bias over each head of q and k, its
  // weight kept as a tensor per head (q_layernorm.norms.{h}.weight), which the
  // loader stacks.
  if (k.boolean("qk_layernorm", false)) m.model.insert_or_assign("qk_norm", "head_weights");
  if (k.boolean("use_parallel_residual", false)) {
    m.model.insert_or_assign("parallel_residual", true);
    m.model.insert_or_assign("parallel_norms", int64_t{1});
  }
  partial_rotary(k, m, "partial_rotary_factor");
  k.harmless({"hidden_dropout"});
  tie(k, m, false);
}

void starcoder2(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, "norm_epsilon");
  layer_norm(m);
  plain_activation(k, m, "gelu_pytorch_tanh");
  const bool bias = k.boolean("use_bias", true);
  m.model.insert_or_assign("qkv_bias", bias);
  m.model.insert_or_assign("o_bias", bias);
  m.model.insert_or_assign("mlp_bias", bias);
  sliding_window(k, m, 0);
  k.harmless({"residual_dropout", "embedding_dropout"});
  m.config.layer_names = {{"mlp.c_fc.weight", "mlp.up_proj.weight"}, {"mlp.c_fc.bias", "mlp.up_proj.bias"},
                          {"mlp.c_proj.weight", "mlp.down_proj.weight"}, {"mlp.c_proj.bias", "mlp.down_proj.bias"}};
  tie(k, m, true);
}

// GPT-NeoX / Pythia: its own tensor names (the decoder's load as stored),
// fused query_key_value (multi-head attention only).
void gpt_neox(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, "layer_norm_eps", false);
  layer_norm(m);
  plain_activation(k, m, "gelu");
  const double base = k.number("rotary_emb_base", 10000.0);
  m.model.insert_or_assign("rope_theta", base);
  same_as(k, "rope_theta", base, "rotary_emb_base");
  const double pct = k.number("rotary_pct", 0.25);
  same_as(k, "partial_rotary_factor", pct, "rotary_pct");
  if (!(pct > 0 && pct <= 1)) k.error(RILL_ERROR_CONFIG, "rotary_pct", "expected a fraction in (0, 1]");
  if (pct < 1) m.model.insert_or_assign("rope_dim", static_cast<int64_t>(static_cast<double>(head_dim_of(m)) * pct));
  biases(k, m, "attention_bias", true);
  m.model.insert_or_assign("mlp_bias", true);
  if (k.boolean("use_parallel_residual", true)) {
    m.model.insert_or_assign("parallel_residual", true);
    m.model.insert_or_assign("parallel_norms", int64_t{2});
  }
  k.harmless({"hidden_dropout", "classifier_dropout"});
  m.config.embedding_name = "gpt_neox.embed_in.weight";
  m.config.head_name = "embed_out.weight";
  tie(k, m, false);
}

// OLMo's and OLMoE's clip_qkv: a number > 0, or null for none. transformers
// clamps to [-c, c] for any number, so 0 would zero q, k and v: refused.
void clip_qkv(Keys& k, Mapping& m) {
  const json* v = k.get("clip_qkv");
  if (v == nullptr) return;
  const double c = k.number("clip_qkv", 0.0);
  if (!(c > 0)) k.error(RILL_ERROR_CONFIG, "clip_qkv", "expected a number > 0 or null (none), got " + value_text(*v));
  m.model.insert_or_assign("clip_qkv", c);
}

// OLMo (1): LayerNorms without parameters, eps 1e-5 fixed.
void olmo(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, nullptr);  // OlmoLayerNorm's eps is fixed
  layer_norm(m);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  clip_qkv(k, m);
  m.config.unit_norms = true;
  tie(k, m, false);
}

void olmo2(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("norm_placement", "output");
  m.model.insert_or_assign("qk_norm", "full");
  tie(k, m, false);
}

// Phi-2: parallel attention and MLP on one shared LayerNorm, partial rotary,
// every bias, the LM head's too; its own names for o_proj, the MLP and the
// final norm.
void phi(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, "layer_norm_eps");
  layer_norm(m);
  plain_activation(k, m, "gelu_new");
  m.model.insert_or_assign("qkv_bias", true);
  m.model.insert_or_assign("o_bias", true);
  m.model.insert_or_assign("mlp_bias", true);
  m.model.insert_or_assign("parallel_residual", true);
  m.model.insert_or_assign("parallel_norms", int64_t{1});
  partial_rotary(k, m, "partial_rotary_factor");
  refuse_true(k, "qk_layernorm", "a LayerNorm on q and k is not expressible");
  k.harmless({"resid_pdrop", "embd_pdrop"});
  m.config.layer_names = {{"self_attn.dense.weight", "self_attn.o_proj.weight"},
                          {"self_attn.dense.bias", "self_attn.o_proj.bias"},
                          {"mlp.fc1.weight", "mlp.up_proj.weight"}, {"mlp.fc1.bias", "mlp.up_proj.bias"},
                          {"mlp.fc2.weight", "mlp.down_proj.weight"}, {"mlp.fc2.bias", "mlp.down_proj.bias"}};
  m.config.global_names = {{"model.final_layernorm.weight", "model.norm.weight"},
                           {"model.final_layernorm.bias", "model.norm.bias"}};
  m.config.head_bias_name = "lm_head.bias";
  tie(k, m, false);
}

// GPT-J: parallel attention and MLP on one LayerNorm, interleaved rotary on
// the first rotary_dim dims of each head, gelu_new, biases on the MLP and the
// LM head only; its own sizes' names and tensor names (transformer.h.{i}.).
void gptj(Keys& k, Mapping& m) {
  m.config.vocab_size = static_cast<int32_t>(k.required_integer("vocab_size"));
  const int64_t hidden = k.required_integer("n_embd");
  m.model.insert_or_assign("num_layers", k.required_integer("n_layer"));
  m.model.insert_or_assign("hidden_size", hidden);
  m.model.insert_or_assign("num_heads", k.required_integer("n_head"));
  m.model.insert_or_assign("intermediate_size", k.integer("n_inner", 4 * hidden, 1, INT32_MAX));
  m.model.insert_or_assign("norm_eps", k.number("layer_norm_epsilon", 1e-5));
  m.config.max_position_embeddings = static_cast<int32_t>(k.integer("n_positions", 0));
  // GPT-J's rotary tables take rotary_dim's width; without it they are as
  // wide as the whole hidden size, which only one head could use.
  m.model.insert_or_assign("rope_dim", k.required_integer("rotary_dim"));
  m.model.insert_or_assign("rope_interleave", true);
  layer_norm(m);
  plain_activation(k, m, "gelu_new", "activation_function");
  m.model.insert_or_assign("mlp_bias", true);
  m.model.insert_or_assign("parallel_residual", true);
  m.model.insert_or_assign("parallel_norms", int64_t{1});
  k.harmless({"resid_pdrop", "embd_pdrop", "attn_pdrop"});
  m.config.embedding_name = "transformer.wte.weight";
  m.config.head_bias_name = "lm_head.bias";
  m.config.layer_prefix = "transformer.h.";
  m.config.layer_names = {{"ln_1.weight", "input_layernorm.weight"},
                          {"ln_1.bias", "input_layernorm.bias"},
                          {"attn.q_proj.weight", "self_attn.q_proj.weight"},
                          {"attn.k_proj.weight", "self_attn.k_proj.weight"},
                          {"attn.v_proj.weight", "self_attn.v_proj.weight"},
                          {"attn.out_proj.weight", "self_attn.o_proj.weight"},
                          {"mlp.fc_in.weight", "mlp.up_proj.weight"},
                          {"mlp.fc_in.bias", "mlp.up_proj.bias"},
                          {"mlp.fc_out.weight", "mlp.down_proj.weight"},
                          {"mlp.fc_out.bias", "mlp.down_proj.bias"}};
  // The causal mask and its fill value, saved by transformers before 4.40.
  m.config.layer_buffers = {"attn.bias", "attn.masked_bias"};
  tie(k, m, false);  // transformer.ln_f loads as model.norm (runtime/layer/model.cpp)
}

// Falcon: its names load as stored (runtime/layer/model.cpp), its fused
// query_key_value split by KV head. The new decoder architecture has
// num_kv_heads groups and one or two norms (num_ln_in_parallel_attn, default
// 2); the old one is multi-query (one KV head) or multi-head, parallel with
// one norm or sequential. ALiBi is not expressible.
void falcon(Keys& k, Mapping& m) {
  m.config.vocab_size = static_cast<int32_t>(k.required_integer("vocab_size"));
  const int64_t hidden = k.required_integer("hidden_size"), heads = k.required_integer("num_attention_heads");
  m.model.insert_or_assign("num_layers", k.required_integer("num_hidden_layers"));
  m.model.insert_or_assign("hidden_size", hidden);
  m.model.insert_or_assign("num_heads", heads);
  m.model.insert_or_assign("intermediate_size", k.integer("ffn_hidden_size", 4 * hidden, 1, INT32_MAX));
  m.model.insert_or_assign("norm_eps", k.number("layer_norm_epsilon", 1e-5));
  m.model.insert_or_assign("rope_theta", k.number("rope_theta", 10000.0));
  m.config.max_position_embeddings = static_cast<int32_t>(k.integer("max_position_embeddings", 0));
  if (m.config.max_position_embeddings > 0) {
    m.model.insert_or_assign("max_position_embeddings", int64_t{m.config.max_position_embeddings});
  }
  rope_scaling(k, m);
  layer_norm(m);
  plain_activation(k, m, "gelu", "activation");
  const bool bias = k.boolean("bias", false);
  m.model.insert_or_assign("qkv_bias", bias);
  m.model.insert_or_assign("o_bias", bias);
  m.model.insert_or_assign("mlp_bias", bias);
  refuse_true(k, "alibi", "ALiBi attention is not expressible");
  const bool parallel = k.boolean("parallel_attn", true);
  const json* norms = k.get("num_ln_in_parallel_attn");
  if (k.boolean("new_decoder_architecture", false)) {
    if (!parallel) {
      k.error(RILL_ERROR_UNSUPPORTED, "parallel_attn", "the new decoder architecture runs only in parallel; expected "
                                                       "true, got false");
    }
    k.harmless({"multi_query"});  // the new architecture takes its KV heads from num_kv_heads
    m.model.insert_or_assign("num_kv_heads", k.integer("num_kv_heads", heads, 1, INT32_MAX));
    m.model.insert_or_assign("parallel_norms", k.integer("num_ln_in_parallel_attn", 2, 1, 2));
  } else {
    const bool multi_query = k.boolean("multi_query", true);
    k.harmless({"num_kv_heads"});  // the old architecture takes its KV heads from multi_query
    m.model.insert_or_assign("num_kv_heads", multi_query ? int64_t{1} : heads);
    if (norms != nullptr && *norms != 1) {
      k.error(RILL_ERROR_UNSUPPORTED, "num_ln_in_parallel_attn",
              "the old decoder architecture has one input norm; expected 1 or null, got " + value_text(*norms));
    }
  }
  m.model.insert_or_assign("parallel_residual", parallel);
  k.harmless({"hidden_dropout"});
  m.config.embedding_name = "transformer.word_embeddings.weight";
  tie(k, m, true);
}

// Cohere (Command R): parallel attention and SwiGLU MLP on one LayerNorm
// without a bias, interleaved rotary, logits times logit_scale, tied
// embeddings by default.
void cohere(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5, "layer_norm_eps");
  layer_norm(m);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("rope_interleave", true);
  m.model.insert_or_assign("parallel_residual", true);
  m.model.insert_or_assign("parallel_norms", int64_t{1});
  if (k.boolean("use_qk_norm", false)) m.model.insert_or_assign("qk_norm", "head_weights");  // Command R+
  m.config.logit_scale = static_cast<float>(k.number("logit_scale", 0.0625));
  m.config.zero_norm_biases = true;
  tie(k, m, true);
}

// The routing keys every MoE family shares (training-only ones ignored).
void experts(Keys& k, Mapping& m, const char* count_key) {
  m.model.insert_or_assign("num_experts", k.required_integer(count_key));
  m.model.insert_or_assign("num_experts_per_tok", k.required_integer("num_experts_per_tok"));
  k.harmless({"output_router_logits", "router_aux_loss_coef", "router_jitter_noise"});  // training only
}

void mixtral(Keys& k, Mapping& m) {
  mistral_like(k, m, 0);
  experts(k, m, "num_local_experts");
  m.model.insert_or_assign("norm_topk_prob", true);
}

void qwen2_moe(Keys& k, Mapping& m) {
  qwen2(k, m);
  experts(k, m, "num_experts");
  m.model.insert_or_assign("norm_topk_prob", k.boolean("norm_topk_prob", false));
  copy_integer(k, m, "moe_intermediate_size", "moe_intermediate_size");
  copy_integer(k, m, "shared_expert_intermediate_size", "shared_expert_intermediate_size");
  // Dense layers among the sparse ones: checked by the descriptor.
  copy_integer(k, m, "decoder_sparse_step", "decoder_sparse_step");
  if (const json* layers = k.get("mlp_only_layers")) {
    toml::array list;
    for (const json& layer : layers->is_array() ? *layers : json::array({nullptr})) {
      if (!layer.is_number_integer()) {
        k.error(RILL_ERROR_CONFIG, "mlp_only_layers", "expected a list of layer indices, got " + value_text(*layers));
      }
      list.push_back(layer.get<int64_t>());
    }
    m.model.insert_or_assign("mlp_only_layers", std::move(list));
  }
}

void olmoe(Keys& k, Mapping& m) {
  sizes(k, m, 1e-5);
  gated_activation(k, m, "silu");
  biases(k, m, "attention_bias", false);
  m.model.insert_or_assign("qk_norm", "full");
  clip_qkv(k, m);
  experts(k, m, "num_experts");
  m.model.insert_or_assign("norm_topk_prob", k.boolean("norm_topk_prob", false));
  tie(k, m, false);
}

// SmolLM3 (after its published modelling code; transformers 4.47.1 has
// none): Llama with RoPE left out of every no_rope_layer_interval-th layer.
void smollm3(Keys& k, Mapping& m) {
  llama(k, m);
  const int64_t interval = k.integer("no_rope_layer_interval", 4, 0, INT32_MAX);
  m.model.insert_or_assign("no_rope_layer_interval", interval);
  if (const json* flags = k.get("no_rope_layers")) {  // 1: the layer uses RoPE
    const int64_t layers = m.model.get_as<int64_t>("num_layers")->get();
    json expected = json::array();
    for (int64_t l = 0; l < layers; ++l) expected.push_back(interval > 0 && (l + 1) % interval == 0 ? 0 : 1);
    if (*flags != expected) {
      k.error(RILL_ERROR_UNSUPPORTED, "no_rope_layers",
              "rill leaves RoPE out of every no_rope_layer_interval-th layer; expected " + value_text(expected) +
                  ", got " + value_text(*flags));
    }
  }
  qwen_window(k, m);
  layer_types(k, m);
}

using Family = void (*)(Keys&, Mapping&);
const std::map<std::string, Family>& families() {
  static const std::map<std::string, Family> kFamilies = {
      {"cohere", cohere},     {"falcon", falcon},       {"gptj", gptj},
      {"gemma", gemma},       {"gemma2", gemma2},       {"gemma3_text", gemma3_text}, {"gpt_neox", gpt_neox},
      {"llama", llama},       {"mistral", mistral},     {"mixtral", mixtral},         {"olmo", olmo},
      {"olmo2", olmo2},       {"olmoe", olmoe},         {"phi", phi},                 {"phi3", phi3},
      {"qwen2", qwen2},       {"qwen2_moe", qwen2_moe}, {"qwen3", qwen3},             {"smollm3", smollm3},
      {"stablelm", stablelm}, {"starcoder2", starcoder2},
  };
  return kFamilies;
}

// Families rill knows it cannot run, with why.
const std::map<std::string, std::string>& refused_families() {
  static const std::map<std::string, std::string> kRefused = {
      {"opt", "its learned position embeddings are not expressible"},
      {"gpt2", "its learned position embeddings and Conv1D weights are not expressible"},
      {"bloom", "ALiBi attention is not expressible"},
      {"gemma3", "a multimodal Gemma 3 folder; the text-only model_type gemma3_text is supported"},
  };
  return kRefused;
}

json read_json(const std::string& path, bool& exists) {
  std::string text, error;
  const io::ReadResult read = io::read_text_file(path, text, error);
  exists = read != io::ReadResult::missing;
  if (!exists) return json();
  if (read == io::ReadResult::failed) throw ConfigError{RILL_ERROR_IO, path + ": " + error};
  try {
    json parsed = json::parse(text);
    if (!parsed.is_object()) throw ConfigError{RILL_ERROR_CONFIG, path + ": expected a JSON object"};
    return parsed;
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
    throw ConfigError{RILL_ERROR_CONFIG, path + ": not valid JSON: " + e.what()};
  }
}

// bos_token_id and eos_token_id (an integer or a list) where k has them.
void special_ids(Keys& k, HfConfig& c) {
  if (k.get("bos_token_id") != nullptr) c.bos_token_id = static_cast<int32_t>(k.integer("bos_token_id", -1));
  const json* eos = k.get("eos_token_id");
  if (eos == nullptr) return;
  std::vector<int32_t> ids;
  auto take = [&](const json& id) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      k.error(RILL_ERROR_CONFIG, "eos_token_id",
              "expected an id >= 0 or a list of them, got " + value_text(*eos));
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  };
  // Read in place: a copy of the list would be a JSON value to destroy (io/json_release.h).
  if (eos->is_array()) {
    for (const json& id : *eos) take(id);
  } else {
    take(*eos);
  }
  if (ids.size() > kMaxEosIds) {
    k.error(RILL_ERROR_CONFIG, "eos_token_id",
            "expected at most " + std::to_string(kMaxEosIds) + " ids, got " + std::to_string(ids.size()));
  }
  c.eos_token_ids = std::move(ids);
}

void torch_dtype(Keys& k, HfConfig& c) {
  const json* v = k.get("torch_dtype");
  if (v == nullptr) return;
  const std::string name = v->is_string() ? v->get<std::string>() : value_text(*v);
  if (name == "float32") {
    c.torch_dtype = RILL_DTYPE_F32;
  } else if (name == "float16") {
    c.torch_dtype = RILL_DTYPE_F16;
  } else if (name == "bfloat16") {
    c.torch_dtype = RILL_DTYPE_BF16;
  } else {
    c.torch_dtype_problem = "'torch_dtype': expected \"float32\", \"float16\" or \"bfloat16\", got " +
                            value_text(*v) + " (override the dtype at load)";
    return;
  }
  c.has_torch_dtype = true;
}

void read_generation_config(const std::string& path, HfConfig& c) {
  bool exists = false;
  json object = read_json(path, exists);
  const io::JsonRelease release(object);
  if (!exists) return;
  Keys k(object, path);  // other keys configure generation strategies, not the model
  special_ids(k, c);
  c.do_sample = k.boolean("do_sample", false);
  c.temperature = static_cast<float>(k.number("temperature", 1.0));
  c.top_k = static_cast<int32_t>(k.integer("top_k", 50));
  c.top_p = static_cast<float>(k.number("top_p", 1.0));
  c.min_p = static_cast<float>(k.number("min_p", 0.0));
  c.repetition_penalty = static_cast<float>(k.number("repetition_penalty", 1.0));
}

}  // namespace

std::string supported_model_types() {
  std::string list;
  for (const auto& family : families()) list += (list.empty() ? "" : ", ") + family.first;
  return list;
}

namespace {

// config.json's object (source names it in messages) into config; throws
// ConfigError.
void config_from_object(const json& object, const std::string& source, HfConfig& config) {
  Keys k(object, source);
  config.model_type = k.string("model_type", "");
  const auto family = families().find(config.model_type);
  if (const auto refused = refused_families().find(config.model_type); refused != refused_families().end()) {
    throw ConfigError{RILL_ERROR_UNSUPPORTED, source + ": model_type \"" + config.model_type +
                                                  "\" is not supported: " + refused->second};
  }
  if (family == families().end()) {
    throw ConfigError{RILL_ERROR_UNSUPPORTED, source + ": model_type \"" + config.model_type +
                                                  "\" is not supported; supported: " + supported_model_types()};
  }
  Mapping m{toml::table{}, config};
  common_keys(k);
  special_ids(k, config);
  torch_dtype(k, config);
  family->second(k, m);
  k.no_others(config.model_type);

  toml::table root;
  root.insert("model", std::move(m.model));
  std::ostringstream text;
  // A stream swallows an exception its output throws and only sets badbit:
  // running out of memory would leave truncated TOML, then refused as a syntax error.
  text.exceptions(std::ios::badbit);
  text << root;
  const std::string described = source + " (as the [model] table)";
  const rill_status status = rill_model_desc_from_toml(text.str().c_str(), described.c_str(), &config.desc);
  if (status != RILL_OK) {
    throw ConfigError{status, source + ": the decoder it describes is refused: " + rill_last_error()};
  }
}

}  // namespace

rill_status read_hf_config(const std::string& folder, HfConfig& out, std::string& error) {
  try {
    const std::string path = folder + "/config.json";
    bool exists = false;
    json object = read_json(path, exists);
    const io::JsonRelease release(object);
    if (!exists) throw ConfigError{RILL_ERROR_IO, path + ": cannot open (a Hugging Face model folder holds it)"};
    HfConfig config;
    config_from_object(object, path, config);
    read_generation_config(folder + "/generation_config.json", config);
    out = std::move(config);
    return RILL_OK;
  } catch (const ConfigError& e) {
    error = e.message;
    return e.status;
  }
}

rill_status hf_config_from_json(const std::string& source, const std::string& json_text, HfConfig& out,
                                std::string& error) {
  try {
    json object = json::parse(json_text);
    const io::JsonRelease release(object);
    HfConfig config;
    config_from_object(object, source, config);
    out = std::move(config);
    return RILL_OK;
  } catch (const ConfigError& e) {
    error = e.message;
    return e.status;
  } catch (const json::exception& e) {
    error = source + ": " + e.what();
    return RILL_ERROR_INTERNAL;
  }
}

}  // namespace rill::lm
