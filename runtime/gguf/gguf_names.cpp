#include "gguf_names.h"

#include <algorithm>
#include <cstring>

namespace rill::gguf {
namespace {

// GGUF's tensor names (after "blk.{i}.", and global) and Hugging Face's.
const std::map<std::string, std::string>& layer_tensor_names() {
  static const std::map<std::string, std::string> kNames = {
      {"attn_norm.weight", "input_layernorm.weight"},   {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},     {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.weight", "self_attn.k_proj.weight"},     {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.weight", "self_attn.v_proj.weight"},     {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_output.bias", "self_attn.o_proj.bias"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
  };
  return kNames;
}
const std::map<std::string, std::string>& global_tensor_names() {
  static const std::map<std::string, std::string> kNames = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  return kNames;
}

// The decimal layer number at the start of text, up to the next '.'; false
// when text does not start with one.
bool split_layer(const std::string& text, size_t from, std::string& layer, std::string& rest) {
  const size_t dot = text.find('.', from);
  if (dot == std::string::npos) return false;
  layer = text.substr(from, dot - from);
  rest = text.substr(dot + 1);
  return !layer.empty() && layer.size() < 10 && layer.find_first_not_of("0123456789") == std::string::npos;
}

// Rows of each head moved: GGUF row 2*i + t <-> Hugging Face row t*half + i.
std::vector<unsigned char> move_rows(const unsigned char* data, uint64_t rows, uint64_t row_bytes, uint64_t heads,
                                     bool to_gguf) {
  std::vector<unsigned char> out(rows * row_bytes);
  const uint64_t head_rows = rows / heads, half = head_rows / 2;
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t i = 0; i < half; ++i) {
      for (uint64_t t = 0; t < 2; ++t) {
        const uint64_t gguf_row = h * head_rows + 2 * i + t, hf_row = h * head_rows + t * half + i;
        std::memcpy(out.data() + (to_gguf ? gguf_row : hf_row) * row_bytes,
                    data + (to_gguf ? hf_row : gguf_row) * row_bytes, row_bytes);
      }
    }
  }
  return out;
}

}  // namespace

const std::map<std::string, Architecture>& architectures() {
  static const std::map<std::string, Architecture> kArchitectures = {
      {"gemma", {"gemma", false, true, {}, {}, true, 0, false}},
      {"gemma2",
       {"gemma2",
        false,
        true,
        {{"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
         {"post_attention_norm.weight", "post_attention_layernorm.weight"},
         {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}},
        {},
        true,
        46,
        true}},
      {"gemma3",
       {"gemma3_text",
        false,
        true,
        {{"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
         {"post_attention_norm.weight", "post_attention_layernorm.weight"},
         {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
         {"attn_q_norm.weight", "self_attn.q_norm.weight"},
         {"attn_k_norm.weight", "self_attn.k_norm.weight"}},
        {},
        true,
        62,
        true}},
      {"llama", {"llama", true, false, {}, {}, true, 0, false}},
      {"phi3",
       {"phi3",
        false,
        false,
        {{"attn_qkv.weight", "self_attn.qkv_proj.weight"}, {"ffn_up.weight", "mlp.gate_up_proj.weight"}},
        {"attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight"},
        true,
        0,
        true}},
      {"qwen2", {"qwen2", false, false, {}, {}, true, 0, false}},
      {"qwen3",
       {"qwen3",
        false,
        false,
        {{"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"}},
        {},
        true,
        0,
        false}},
  };
  return kArchitectures;
}

std::string supported_architectures() {
  std::string list;
  for (const auto& a : architectures()) list += (list.empty() ? "" : ", ") + a.first;
  return list;
}

std::string hf_folder_architectures() {
  std::string list;
  for (const auto& a : architectures()) {
    if (a.second.from_hf_folders) list += (list.empty() ? "" : ", ") + std::string(a.second.model_type);
  }
  return list;
}

bool hf_tensor_name(const std::string& name, const Architecture& a, std::string& out) {
  if (const auto global = global_tensor_names().find(name); global != global_tensor_names().end()) {
    out = global->second;
    return true;
  }
  std::string layer, suffix;
  if (name.compare(0, 4, "blk.") != 0 || !split_layer(name, 4, layer, suffix)) return false;
  const auto own = a.own_names.find(suffix);
  const auto common = layer_tensor_names().find(suffix);
  if (own == a.own_names.end() && common == layer_tensor_names().end()) return false;
  out = "model.layers." + layer + "." + (own != a.own_names.end() ? own->second : common->second);
  return true;
}

bool gguf_tensor_name(const std::string& name, const Architecture& a, std::string& out) {
  for (const auto& [gguf, hf] : global_tensor_names()) {
    if (hf == name) {
      out = gguf;
      return true;
    }
  }
  const std::string prefix = "model.layers.";
  std::string layer, suffix;
  if (name.compare(0, prefix.size(), prefix) != 0 || !split_layer(name, prefix.size(), layer, suffix)) return false;
  // The architecture's own names first: they replace common ones (gemma2's
  // post_attention_layernorm is not the common table's ffn_norm).
  for (const auto* table : {&a.own_names, &layer_tensor_names()}) {
    for (const auto& [gguf, hf] : *table) {
      if (hf == suffix && (table == &a.own_names || a.own_names.count(gguf) == 0)) {
        out = "blk." + layer + "." + gguf;
        return true;
      }
    }
  }
  return false;
}

std::vector<std::string> required_tensors(const Architecture& a, int64_t layers, bool tied, bool qkv_bias,
                                          bool o_bias) {
  std::vector<std::string> names;
  for (const auto& global : global_tensor_names()) {
    if (!(tied && global.first == "output.weight")) names.push_back(global.first);
  }
  std::vector<std::string> layer_names;
  for (const auto& layer : layer_tensor_names()) {
    const std::string& name = layer.first;
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (bias && !(name == "attn_output.bias" ? o_bias : qkv_bias)) continue;
    if (a.own_names.count(name) != 0) continue;  // listed below, as the architecture's own
    if (std::find(a.fused_names.begin(), a.fused_names.end(), name) != a.fused_names.end()) continue;
    layer_names.push_back(name);
  }
  for (const auto& own : a.own_names) layer_names.push_back(own.first);
  for (int64_t i = 0; i < layers; ++i) {
    for (const std::string& name : layer_names) names.push_back("blk." + std::to_string(i) + "." + name);
  }
  return names;
}

std::vector<unsigned char> permute_rows(const unsigned char* data, uint64_t rows, uint64_t row_bytes,
                                        uint64_t heads) {
  return move_rows(data, rows, row_bytes, heads, true);
}

std::vector<unsigned char> unpermute_rows(const unsigned char* data, uint64_t rows, uint64_t row_bytes,
                                          uint64_t heads) {
  return move_rows(data, rows, row_bytes, heads, false);
}

}  // namespace rill::gguf
