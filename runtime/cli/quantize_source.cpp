#include "quantize_source.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "gguf_names.h"
#include "gguf_types.h"
#include "io/json_release.h"
#include "io/text_file.h"

namespace rill_cli {
namespace {

using nlohmann::json;

// GGUF's type ids of the safetensors dtypes rill quantizes.
bool safetensors_type_id(const std::string& dtype, uint32_t& out) {
  if (dtype == "F32") out = 0;
  else if (dtype == "F16") out = 1;
  else if (dtype == "BF16") out = 30;
  else return false;
  return true;
}

// The config.json keys that change nothing a GGUF file carries (bookkeeping,
// training-only settings, and keys checked by value below).
const std::set<std::string>& bookkeeping_keys() {
  static const std::set<std::string> kKeys = {
      "_name_or_path",  "architectures",   "transformers_version", "torch_dtype",  "initializer_range",
      "use_cache",      "attention_dropout", "pad_token_id",        "pretraining_tp", "model_type",
      "bos_token_id",   "eos_token_id",    "max_window_layers",    "sliding_window", "vocab_size",
      "tie_word_embeddings", "head_dim",   "rope_scaling",         "attention_bias", "mlp_bias",
      "use_sliding_window", "hidden_act"};
  return kKeys;
}

// The config's shape, as the tensors are checked against it.
struct Shape {
  int64_t layers = 0, heads = 0, kv_heads = 0;
  bool tied = false;
};

// config.json read into the architecture's GGUF keys; false with error naming the key.
bool write_config(const json& c, const std::string& arch, rill::gguf::Writer& w, Shape& shape, std::string& error) {
  auto bad = [&](const std::string& key, const std::string& text) {
    error = "config.json: '" + key + "': " + text;
    return false;
  };
  auto integer = [&](const char* key, int64_t fallback, int64_t& out) {
    const auto v = c.find(key);
    if (v == c.end() || v->is_null()) {
      if (fallback < 0) return bad(key, "required, but absent");
      out = fallback;
      return true;
    }
    if (!v->is_number_unsigned() || v->get<uint64_t>() < 1 || v->get<uint64_t>() > INT32_MAX) {
      return bad(key, "expected an integer from 1 to 2^31 - 1, got " + v->dump());
    }
    out = v->get<int64_t>();
    return true;
  };
  auto number = [&](const char* key, double fallback, double& out) {
    const auto v = c.find(key);
    if (v == c.end()) {
      out = fallback;
      return true;
    }
    if (!v->is_number() || !std::isfinite(v->get<double>())) return bad(key, "expected a number, got " + v->dump());
    out = v->get<double>();
    return true;
  };
  // Keys whose only value rill's GGUF loader can represent is the default.
  auto only = [&](const char* key, const json& expected, const std::string& why) {
    const auto v = c.find(key);
    return v == c.end() || *v == expected ||
           bad(key, "expected " + expected.dump() + " (" + why + "), got " + v->dump());
  };
  for (const auto& [key, value] : c.items()) {
    static const std::set<std::string> kMapped = {"hidden_size", "intermediate_size", "num_hidden_layers",
                                                  "num_attention_heads", "num_key_value_heads", "rms_norm_eps",
                                                  "rope_theta", "max_position_embeddings"};
    if (bookkeeping_keys().count(key) == 0 && kMapped.count(key) == 0) {
      return bad(key, "not understood for " + arch + "; rill refuses settings its GGUF files cannot carry, since "
                      "they may change the computation");
    }
  }
  if (!only("hidden_act", "silu", "the activation GGUF's " + arch + " implies") ||
      !only("rope_scaling", nullptr, "rill writes no rope scaling keys") ||
      !only("mlp_bias", false, "GGUF's " + arch + " has no MLP biases") ||
      !only("use_sliding_window", false, "GGUF's " + arch + " has no sliding window") ||
      !only("attention_bias", arch == "qwen2", "GGUF's " + arch + " attention biases are fixed")) {
    return false;
  }
  int64_t hidden = 0, ffn = 0, context = 0, head_dim = 0, vocab = 0;
  int64_t &layers = shape.layers, &heads = shape.heads, &kv_heads = shape.kv_heads;
  double eps = 0, theta = 0;
  if (!integer("hidden_size", -1, hidden) || !integer("intermediate_size", -1, ffn) ||
      !integer("num_hidden_layers", -1, layers) || !integer("num_attention_heads", -1, heads) ||
      !integer("num_key_value_heads", heads, kv_heads) || !integer("max_position_embeddings", 0, context) ||
      !integer("head_dim", hidden / heads, head_dim) || !integer("vocab_size", 0, vocab) ||
      !number("rms_norm_eps", 1e-6, eps) || !number("rope_theta", 10000.0, theta)) {
    return false;
  }
  const auto tie = c.find("tie_word_embeddings");
  if (tie != c.end() && !tie->is_boolean()) {
    return bad("tie_word_embeddings", "expected true or false, got " + tie->dump());
  }
  shape.tied = tie != c.end() && tie->get<bool>();
  const std::string p = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_u32(p + "block_count", static_cast<uint32_t>(layers));
  if (context > 0) w.set_u32(p + "context_length", static_cast<uint32_t>(context));
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(hidden));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(ffn));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(heads));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(kv_heads));
  w.set_f32(p + "rope.freq_base", static_cast<float>(theta));
  w.set_f32(p + "attention.layer_norm_rms_epsilon", static_cast<float>(eps));
  w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(head_dim));  // every dim rotates
  if (head_dim != hidden / heads) {
    w.set_u32(p + "attention.key_length", static_cast<uint32_t>(head_dim));
    w.set_u32(p + "attention.value_length", static_cast<uint32_t>(head_dim));
  }
  if (vocab > 0) w.set_u32(p + "vocab_size", static_cast<uint32_t>(vocab));
  return true;
}

bool read_json(const std::string& path, json& out, std::string& error) {
  std::string text;
  const rill::io::ReadResult read = rill::io::read_text_file(path, text, error);
  if (read != rill::io::ReadResult::ok) {
    error = path + ": " + (read == rill::io::ReadResult::missing ? "missing" : error);
    return false;
  }
  try {
    out = json::parse(text);
  } catch (const json::parse_error& e) {
    error = path + ": not valid JSON: " + e.what();
    return false;
  }
  if (!out.is_object()) {
    error = path + ": expected a JSON object";
    return false;
  }
  return true;
}

// Every tensor the architecture's loader needs is there (the loader would
// refuse the written file otherwise); false with error naming the first missing.
bool has_every_tensor(const std::vector<SourceTensor>& tensors, const std::string& arch, const Shape& shape,
                      const std::string& folder, std::string& error) {
  std::set<std::string> have;
  for (const SourceTensor& t : tensors) have.insert(t.name);
  std::vector<std::string> needed = {"token_embd.weight", "output_norm.weight"};
  if (!shape.tied) needed.push_back("output.weight");
  for (int64_t i = 0; i < shape.layers; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    for (const char* name : {"attn_norm.weight", "ffn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                             "attn_output.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) {
      needed.push_back(blk + name);
    }
    if (arch == "qwen2") {
      for (const char* name : {"attn_q.bias", "attn_k.bias", "attn_v.bias"}) needed.push_back(blk + name);
    }
  }
  for (const std::string& name : needed) {
    if (have.count(name) == 0) {
      error = folder + ": the checkpoint lacks the tensor GGUF calls '" + name + "'";
      return false;
    }
  }
  return true;
}

}  // namespace

bool read_gguf_source(const std::string& path, rill::gguf::Writer& writer, QuantizeSource& out, std::string& error) {
  if (rill::gguf::File::open(path, out.gguf, error) != RILL_OK) return false;
  const rill::gguf::Contents& contents = out.gguf->contents();
  for (const rill::gguf::KeyValue& kv : contents.metadata) writer.copy(kv.key, kv.value);
  out.alignment = contents.alignment;
  std::string_view arch;
  if (const rill::gguf::Value* a = contents.find("general.architecture"); a != nullptr && a->as_string(arch)) {
    if (const rill::gguf::Value* b = contents.find(std::string(arch) + ".block_count")) b->as_i64(out.layers);
  }
  for (const rill::gguf::TensorInfo& t : contents.tensors) {
    out.tensors.push_back({std::string(t.name), t.dims, t.type_id, t.data, t.bytes});
  }
  return true;
}

bool read_hf_source(const std::string& folder, rill::gguf::Writer& writer, QuantizeSource& out, std::string& error) {
  json config;
  const rill::io::JsonRelease release(config);
  if (!read_json(folder + "/config.json", config, error)) return false;
  const auto type = config.find("model_type");
  if (type == config.end() || !type->is_string()) {
    error = folder + "/config.json: 'model_type': expected a string";
    return false;
  }
  // The families whose GGUF metadata this writer maps and rill's loader reads back.
  const std::string arch = type->get<std::string>();
  if (arch != "llama" && arch != "qwen2") {
    error = folder + "/config.json: 'model_type': \"" + arch +
            "\" is not supported from a Hugging Face folder; supported: llama, qwen2";
    return false;
  }
  const rill::gguf::Architecture& a = rill::gguf::architectures().at(arch);
  Shape shape;
  if (!write_config(config, arch, writer, shape, error)) {
    error = folder + "/" + error;
    return false;
  }
  out.layers = shape.layers;
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    const auto id = config.find(key);
    if (id == config.end() || id->is_null()) continue;
    if (!id->is_number_unsigned() || id->get<uint64_t>() > INT32_MAX) {
      error = folder + "/config.json: '" + key + "': expected a token id (GGUF holds one), got " + id->dump();
      return false;
    }
    writer.set_u32(std::string("tokenizer.ggml.") + key, id->get<uint32_t>());
  }
  json tokenizer;
  const rill::io::JsonRelease release_tokenizer(tokenizer);
  const std::string tokenizer_path = folder + "/tokenizer.json";
  if (!read_json(tokenizer_path, tokenizer, error) || !write_hf_tokenizer(tokenizer, tokenizer_path, writer, error)) {
    return false;
  }
  if (rill::io::open_checkpoint(folder, out.shards, error) != RILL_OK) return false;

  for (const auto& shard : out.shards) {
    for (const rill::io::SafetensorsTensor& t : shard->tensors()) {
      if (t.name.size() >= 19 && t.name.compare(t.name.size() - 19, 19, "rotary_emb.inv_freq") == 0) continue;
      if (shape.tied && t.name == "lm_head.weight") continue;  // the embedding serves as the head
      SourceTensor s{};
      if (!rill::gguf::gguf_tensor_name(t.name, a, s.name)) {
        error = shard->path() + ": tensor '" + t.name + "' is not one rill maps for " + arch;
        return false;
      }
      if (!safetensors_type_id(t.dtype, s.type_id) || t.shape.empty() || t.shape.size() > 2) {
        error = shard->path() + ": tensor '" + t.name + "': expected a 1- or 2-dim F32, F16 or BF16 tensor, got " +
                t.dtype + " of " + std::to_string(t.shape.size()) + " dims";
        return false;
      }
      for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) s.dims.push_back(static_cast<uint64_t>(*d));
      s.data = static_cast<const unsigned char*>(t.data);
      s.bytes = t.bytes;
      const bool q = s.name.find(".attn_q.") != std::string::npos, k = s.name.find(".attn_k.") != std::string::npos;
      if (a.permuted_qk && (q || k)) {
        const uint64_t h = static_cast<uint64_t>(q ? shape.heads : shape.kv_heads), rows = s.dims.back();
        if (rows % (2 * h) != 0) {
          error = shard->path() + ": tensor '" + t.name + "': " + std::to_string(rows) +
                  " rows do not split into " + std::to_string(h) + " heads of an even size";
          return false;
        }
        out.owned.push_back(rill::gguf::permute_rows(s.data, rows, s.bytes / rows, h));
        s.data = out.owned.back().data();
      }
      out.tensors.push_back(std::move(s));
    }
  }
  return has_every_tensor(out.tensors, arch, shape, folder, error);
}

}  // namespace rill_cli
