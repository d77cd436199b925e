// A Hugging Face model folder's config.json and generation_config.json, read
// into a rill_model_desc and what lies above the decoder stack: vocabulary,
// tied embeddings, Gemma's embedding scale, the final logit soft-cap,
// Cohere's logit scale, the special ids and the sampling defaults.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill.h"

namespace rill::lm {

struct HfConfig {
  std::string model_type;
  rill_model_desc desc{};  // dtype left f32: the loader chooses it
  int32_t vocab_size = 0;
  int32_t max_position_embeddings = 0;  // 0 when absent
  bool tie_word_embeddings = false;
  bool scale_embedding = false;          // Gemma: embeddings times sqrt(hidden_size) in the model dtype
  float final_logit_softcapping = 0.0f;  // Gemma 2: logits c tanh(l / c); 0 = off
  float logit_scale = 1.0f;              // Cohere: logits times this
  // Checkpoint tensor names: the embedding, the LM head and its bias ("" =
  // none), and names the family gives decoder weights where rill's differ
  // (its name, rill's), per layer (after layer_prefix + "{i}." for theirs,
  // "model.layers.{i}." for rill's) and global.
  std::string embedding_name = "model.embed_tokens.weight";
  std::string head_name = "lm_head.weight";
  std::string head_bias_name;
  std::string layer_prefix = "model.layers.";
  std::vector<std::pair<std::string, std::string>> layer_names;
  std::vector<std::pair<std::string, std::string>> global_names;
  // Non-parameter buffers that older checkpoints of the family saved in each
  // layer (their names after layer_prefix + "{i}."), which rill computes
  // itself: skipped on load, by these names only.
  std::vector<std::string> layer_buffers;
  bool unit_norms = false;        // OLMo: LayerNorms without parameters (weight 1, bias 0)
  bool zero_norm_biases = false;  // Cohere: LayerNorms without a bias (bias 0)
  bool has_torch_dtype = false;
  rill_dtype torch_dtype = RILL_DTYPE_F32;
  std::string torch_dtype_problem;  // a torch_dtype rill cannot compute in: an error unless the dtype is overridden
  // generation_config.json's values where it has them, else config.json's.
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  bool do_sample = false;
  float temperature = 1.0f;
  int32_t top_k = 50;  // transformers' GenerationConfig default, used when do_sample is set
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
};

// The most EOS ids rill_lm_info holds.
constexpr size_t kMaxEosIds = 8;

// Reads folder/config.json and, when present, folder/generation_config.json.
// Returns RILL_OK, or a status with error "file: ..." naming the key at fault
// and its value (the caller adds its context): RILL_ERROR_IO for a file that
// cannot be read, RILL_ERROR_CONFIG for bad JSON, a key of the wrong type or a
// value out of range, RILL_ERROR_UNSUPPORTED for a model_type or a key rill
// cannot run.
rill_status read_hf_config(const std::string& folder, HfConfig& out, std::string& error);

// The same for a config.json object given as JSON text (a GGUF file's
// metadata mapped onto Hugging Face's keys); source names it in messages.
// Leaves the generation settings at their defaults.
rill_status hf_config_from_json(const std::string& source, const std::string& json_text, HfConfig& out,
                                std::string& error);

// "llama, mistral, qwen2": the model_types read_hf_config maps.
std::string supported_model_types();

}  // namespace rill::lm
