// The small decoder stack the safetensors targets load into, and the tensors
// a checkpoint of it holds: one layer, D 8, 2 query heads and 1 KV head of 4,
// MLP width 4, every norm an RMSNorm with a weight.
#pragma once

#include <cstdint>
#include <vector>

#include "rill.h"

namespace rill_fuzz {

struct CheckpointTensor {
  const char* name;
  std::vector<int64_t> shape;
};

inline rill_model_desc small_model_desc() {
  rill_model_desc desc;
  rill_model_desc_init(&desc);
  desc.num_layers = 1;
  desc.hidden_size = 8;
  desc.num_heads = 2;
  desc.num_kv_heads = 1;
  desc.intermediate_size = 4;
  return desc;
}

inline const std::vector<CheckpointTensor>& small_model_tensors() {
  static const std::vector<CheckpointTensor> tensors = {
      {"model.layers.0.input_layernorm.weight", {8}},
      {"model.layers.0.self_attn.q_proj.weight", {8, 8}},
      {"model.layers.0.self_attn.k_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.v_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.o_proj.weight", {8, 8}},
      {"model.layers.0.post_attention_layernorm.weight", {8}},
      {"model.layers.0.mlp.gate_proj.weight", {4, 8}},
      {"model.layers.0.mlp.up_proj.weight", {4, 8}},
      {"model.layers.0.mlp.down_proj.weight", {8, 4}},
      {"model.norm.weight", {8}},
      // Fused and GPT-NeoX names the loader splits, and one it skips.
      {"model.layers.0.self_attn.qkv_proj.weight", {16, 8}},
      {"model.layers.0.mlp.gate_up_proj.weight", {8, 8}},
      {"gpt_neox.layers.0.attention.query_key_value.weight", {24, 8}},
      {"lm_head.weight", {32, 8}},
  };
  return tensors;
}

}  // namespace rill_fuzz
