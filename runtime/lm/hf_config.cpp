// config.json -> rill_model_desc per model_type, and generation_config.json.
// Each family maps its keys onto the [model] table of rill_model_desc_from_toml
// (the one home of the descriptor's keys, rope_scaling included) and marks
// every key it reads; a key no family reader marks is refused by name, so a
// setting rill does not implement never changes the model silently.
#include "hf_config.h"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "errors.h"

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
    if (v != nullptr && *v != expected && !(expected.is_object() && expected.empty() && v->empty())) {
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
  m.model.insert("rope_scaling", std::move(table));
}

void copy_integer(Keys& k, Mapping& m, const char* key, const char* field) {
  if (k.get(key) != nullptr) m.model.insert(field, k.integer(key, 0, 0, INT32_MAX));
}

// The sizes every family names alike, rope_theta and rope_scaling.
void sizes(Keys& k, Mapping& m, double eps_fallback, const char* eps_key = "rms_norm_eps") {
  m.config.vocab_size = static_cast<int32_t>(k.required_integer("vocab_size"));
  m.model.insert("num_layers", k.required_integer("num_hidden_layers"));
  m.model.insert("hidden_size", k.required_integer("hidden_size"));
  m.model.insert("num_heads", k.required_integer("num_attention_heads"));
  m.model.insert("intermediate_size", k.required_integer("intermediate_size"));
  copy_integer(k, m, "num_key_value_heads", "num_kv_heads");
  copy_integer(k, m, "head_dim", "head_dim");
  m.model.insert("norm_eps", k.number(eps_key, eps_fallback));
  m.model.insert("rope_theta", k.number("rope_theta", 10000.0));
  m.config.max_position_embeddings = static_cast<int32_t>(k.integer("max_position_embeddings", 0));
  if (m.config.max_position_embeddings > 0) {
    m.model.insert("max_position_embeddings", int64_t{m.config.max_position_embeddings});
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
  m.model.insert("activation", found->second);
}

// Mistral's and Qwen2's sliding_window: an integer, or null for none.
void sliding_window(Keys& k, Mapping& m, int64_t fallback) {
  const int64_t window = k.integer("sliding_window", fallback, 0, INT32_MAX);
  if (window > 0) m.model.insert("sliding_window", window);
}

void llama(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  const bool attention_bias = k.boolean("attention_bias", false);
  m.model.insert("qkv_bias", attention_bias);
  m.model.insert("o_bias", attention_bias);
  m.model.insert("mlp_bias", k.boolean("mlp_bias", false));
  k.harmless({"pretraining_tp"});  // splits the projections' GEMMs; the sum is the same
  m.config.tie_word_embeddings = k.boolean("tie_word_embeddings", false);
}

void mistral(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  sliding_window(k, m, 4096);
  m.config.tie_word_embeddings = k.boolean("tie_word_embeddings", false);
}

void qwen2(Keys& k, Mapping& m) {
  sizes(k, m, 1e-6);
  gated_activation(k, m, "silu");
  m.model.insert("qkv_bias", true);
  const bool sliding = k.boolean("use_sliding_window", false);
  if (sliding) {
    sliding_window(k, m, 4096);
    copy_integer(k, m, "max_window_layers", "max_window_layers");
  } else {
    k.harmless({"sliding_window", "max_window_layers"});  // read only with use_sliding_window
  }
  m.config.tie_word_embeddings = k.boolean("tie_word_embeddings", false);
}

using Family = void (*)(Keys&, Mapping&);
const std::map<std::string, Family>& families() {
  static const std::map<std::string, Family> kFamilies = {
      {"llama", llama},
      {"mistral", mistral},
      {"qwen2", qwen2},
  };
  return kFamilies;
}

json read_json(const std::string& path, bool& exists) {
  std::ifstream in(path, std::ios::binary);
  exists = static_cast<bool>(in);
  if (!exists) return json();
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError{RILL_ERROR_IO, path + ": cannot read"};
  try {
    json parsed = json::parse(text.str());
    if (!parsed.is_object()) throw ConfigError{RILL_ERROR_CONFIG, path + ": expected a JSON object"};
    return parsed;
  } catch (const json::parse_error& e) {
    throw ConfigError{RILL_ERROR_CONFIG, path + ": not valid JSON: " + e.what()};
  }
}

// bos_token_id and eos_token_id (an integer or a list) where k has them.
void special_ids(Keys& k, HfConfig& c) {
  if (k.get("bos_token_id") != nullptr) c.bos_token_id = static_cast<int32_t>(k.integer("bos_token_id", -1));
  const json* eos = k.get("eos_token_id");
  if (eos == nullptr) return;
  std::vector<int32_t> ids;
  const json list = eos->is_array() ? *eos : json::array({*eos});
  for (const json& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      k.error(RILL_ERROR_CONFIG, "eos_token_id",
              "expected an id >= 0 or a list of them, got " + value_text(*eos));
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
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
    k.error(RILL_ERROR_UNSUPPORTED, "torch_dtype", "expected \"float32\", \"float16\" or \"bfloat16\", got " +
                                                       value_text(*v) + " (override the dtype at load)");
  }
  c.has_torch_dtype = true;
}

void read_generation_config(const std::string& path, HfConfig& c) {
  bool exists = false;
  const json object = read_json(path, exists);
  if (!exists) return;
  Keys k(object, path);  // other keys configure generation strategies, not the model
  special_ids(k, c);
  c.do_sample = k.boolean("do_sample", false);
  c.temperature = static_cast<float>(k.number("temperature", 1.0));
  c.top_k = static_cast<int32_t>(k.integer("top_k", 0));
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

rill_status read_hf_config(const char* function, const std::string& folder, HfConfig& out) {
  const std::string f(function);
  try {
    const std::string path = folder + "/config.json";
    bool exists = false;
    const json object = read_json(path, exists);
    if (!exists) return fail(RILL_ERROR_IO, f + ": " + path + ": cannot open (a Hugging Face model folder holds it)");
    HfConfig config;
    Keys k(object, path);
    config.model_type = k.string("model_type", "");
    const auto family = families().find(config.model_type);
    if (family == families().end()) {
      return fail(RILL_ERROR_UNSUPPORTED, f + ": " + path + ": model_type \"" + config.model_type +
                                              "\" is not supported; supported: " + supported_model_types());
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
    text << root;
    const std::string source = path + " (as the [model] table)";
    const rill_status status = rill_model_desc_from_toml(text.str().c_str(), source.c_str(), &config.desc);
    if (status != RILL_OK) {
      return fail(status, f + ": " + path + ": the decoder it describes is refused: " + rill_last_error());
    }
    read_generation_config(folder + "/generation_config.json", config);
    out = std::move(config);
    return RILL_OK;
  } catch (const ConfigError& e) {
    return fail(e.status, f + ": " + e.message);
  }
}

}  // namespace rill::lm
