// rill_model: creation from a descriptor, the table of weights it uses, and
// setting them from host memory or a safetensors file.
#include "model.h"

#include <cstring>
#include <memory>

#include "dtype_convert.h"
#include "enum_names.h"
#include "errors.h"
#include "io/safetensors.h"
#include "quant.h"
#include "rotary_layout.h"
#include "tensors.h"

namespace rill::layer {
namespace {

int32_t add_weight(rill_model& model, const std::string& name, std::vector<int64_t> shape) {
  const auto index = static_cast<int32_t>(model.weights.size());
  model.weights.push_back(Weight{name, std::move(shape), nullptr});
  model.weight_index.emplace(name, index);
  return index;
}

// Adds "<prefix>.weight" (and "<prefix>.bias" for LayerNorm) of a [D] norm.
// A norm's scale: norm_weight_offset is added to it as it is set.
int32_t add_norm_weight(rill_model& model, const std::string& name, std::vector<int64_t> shape) {
  const int32_t weight = add_weight(model, name, std::move(shape));
  model.weights[static_cast<size_t>(weight)].norm_weight = true;
  return weight;
}

void add_norm(rill_model& model, const std::string& prefix, int32_t& weight, int32_t& bias) {
  const int64_t d = model.desc.hidden_size;
  weight = add_norm_weight(model, prefix + ".weight", {d});
  bias = model.desc.norm == RILL_NORM_LAYER ? add_weight(model, prefix + ".bias", {d}) : kAbsent;
}

// Adds "<prefix>.weight" [out, in] and, with has_bias, "<prefix>.bias" [out].
void add_linear(rill_model& model, const std::string& prefix, int64_t out, int64_t in, bool has_bias, int32_t& weight,
                int32_t& bias) {
  weight = add_weight(model, prefix + ".weight", {out, in});
  bias = has_bias ? add_weight(model, prefix + ".bias", {out}) : kAbsent;
}

// Adds a fused tensor holding the parts (weight indices) `groups` times over;
// nothing when a part is absent (a bias the model does not have).
void add_fused(rill_model& model, const std::string& name, const std::vector<int32_t>& parts, int64_t groups = 1) {
  for (int32_t part : parts) {
    if (part == kAbsent) return;
  }
  std::vector<int64_t> shape = model.weights[static_cast<size_t>(parts[0])].shape;
  shape[0] = 0;
  for (int32_t part : parts) shape[0] += model.weights[static_cast<size_t>(part)].shape[0];
  model.fused_index.emplace(name, static_cast<int32_t>(model.fused.size()));
  model.fused.push_back(FusedWeight{name, std::move(shape), groups, parts, ""});
}

// Adds the per-head tensors prefix + "{h}.weight" (h < heads) as the rows of
// the weight `weight`.
void add_head_rows(rill_model& model, int32_t weight, const std::string& prefix, int32_t heads) {
  HeadRows rows{weight, {}};
  for (int32_t h = 0; h < heads; ++h) {
    rows.heads.push_back(prefix + std::to_string(h) + ".weight");
    model.head_rows_index.emplace(rows.heads.back(), static_cast<int32_t>(model.head_rows.size()));
  }
  model.head_rows.push_back(std::move(rows));
}

// Adds a fused tensor this model cannot use, with the reason.
void refuse_fused(rill_model& model, const std::string& name, std::string why) {
  model.fused_index.emplace(name, static_cast<int32_t>(model.fused.size()));
  model.fused.push_back(FusedWeight{name, {}, 1, {}, std::move(why)});
}

// Layer i's mixture of experts (Qwen2-MoE and OLMoE names): the router
// mlp.gate [E, D], each expert's gated MLP, and the shared expert with its
// gate when shared_expert_intermediate_size > 0; Mixtral's names
// (block_sparse_moe.gate, experts.{e}.w1 gate, w3 up, w2 down) as aliases.
void add_experts(rill_model& model, int32_t i, LayerWeights& w) {
  const rill_model_desc& d = model.desc;
  const int64_t hidden = d.hidden_size, inter = d.moe_intermediate_size, shared = d.shared_expert_intermediate_size;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  int32_t no_bias = kAbsent;
  w.gate_w = w.gate_b = w.up_w = w.up_b = w.down_w = w.down_b = kAbsent;
  add_linear(model, p + "mlp.gate", d.num_experts, hidden, false, w.router_w, no_bias);
  add_alias(model, p + "block_sparse_moe.gate.weight", p + "mlp.gate.weight");
  w.experts = static_cast<int32_t>(model.weights.size());
  int32_t unused = kAbsent;
  for (int32_t e = 0; e < d.num_experts; ++e) {
    const std::string ours = p + "mlp.experts." + std::to_string(e) + ".";
    const std::string theirs = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
    add_linear(model, ours + "gate_proj", inter, hidden, false, unused, no_bias);
    add_linear(model, ours + "up_proj", inter, hidden, false, unused, no_bias);
    add_linear(model, ours + "down_proj", hidden, inter, false, unused, no_bias);
    add_alias(model, theirs + "w1.weight", ours + "gate_proj.weight");
    add_alias(model, theirs + "w3.weight", ours + "up_proj.weight");
    add_alias(model, theirs + "w2.weight", ours + "down_proj.weight");
  }
  if (shared > 0) {
    add_linear(model, p + "mlp.shared_expert.gate_proj", shared, hidden, false, w.shared_gate_w, no_bias);
    add_linear(model, p + "mlp.shared_expert.up_proj", shared, hidden, false, w.shared_up_w, no_bias);
    add_linear(model, p + "mlp.shared_expert.down_proj", hidden, shared, false, w.shared_down_w, no_bias);
    add_linear(model, p + "mlp.shared_expert_gate", 1, hidden, false, w.shared_expert_gate_w, no_bias);
  } else {
    w.shared_gate_w = w.shared_up_w = w.shared_down_w = w.shared_expert_gate_w = kAbsent;
  }
}

// The fused tensors of Phi-3 (qkv_proj: [q; k; v] rows, gate_up_proj:
// [gate; up]), GPT-NeoX's names for layer i (query_key_value: each head's
// q, k and v rows in turn; attention.dense, mlp.dense_h_to_4h,
// mlp.dense_4h_to_h and the norms under gpt_neox.layers.{i}.) and Falcon's
// (under transformer.h.{i}.).
void add_checkpoint_names(rill_model& model, int32_t i, const LayerWeights& w) {
  const rill_model_desc& d = model.desc;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  add_fused(model, p + "self_attn.qkv_proj.weight", {w.q_w, w.k_w, w.v_w});
  add_fused(model, p + "self_attn.qkv_proj.bias", {w.q_b, w.k_b, w.v_b});
  if (layer_sparse(d, i)) {
    refuse_fused(model, p + "mlp.gate_up_proj.weight",
                 "it holds a dense MLP's gate_proj and up_proj, but this model's MLP is a mixture of " +
                     std::to_string(d.num_experts) + " experts");
  } else if (is_gated(d.activation)) {
    add_fused(model, p + "mlp.gate_up_proj.weight", {w.gate_w, w.up_w});
    add_fused(model, p + "mlp.gate_up_proj.bias", {w.gate_b, w.up_b});
  } else {
    refuse_fused(model, p + "mlp.gate_up_proj.weight",
                 "it holds the rows of gate_proj and up_proj, but this model's MLP has no gate (activation " +
                     enum_name(d.activation) + ")");
  }
  const std::string x = "gpt_neox.layers." + std::to_string(i) + ".";
  if (d.num_kv_heads == d.num_heads) {
    add_fused(model, x + "attention.query_key_value.weight", {w.q_w, w.k_w, w.v_w}, d.num_heads);
    add_fused(model, x + "attention.query_key_value.bias", {w.q_b, w.k_b, w.v_b}, d.num_heads);
  } else {
    refuse_fused(model, x + "attention.query_key_value.weight",
                 "it holds each head's q, k and v rows, which needs num_kv_heads = num_heads, but this model has " +
                     std::to_string(d.num_kv_heads) + " KV heads for " + std::to_string(d.num_heads) + " query heads");
  }
  for (const auto& [theirs, ours] : {std::pair<const char*, const char*>{"attention.dense", "self_attn.o_proj"},
                                     {"mlp.dense_h_to_4h", "mlp.up_proj"},
                                     {"mlp.dense_4h_to_h", "mlp.down_proj"},
                                     {"input_layernorm", "input_layernorm"},
                                     {"post_attention_layernorm", "post_attention_layernorm"}}) {
    for (const char* suffix : {".weight", ".bias"}) {
      add_alias(model, x + theirs + suffix, p + ours + suffix);
    }
  }
  // Falcon: query_key_value holds per KV head its query heads' rows, then
  // its k and v rows. That one layout covers every Falcon: the new decoder
  // architecture (num_kv_heads groups), the old multi-query one (one group:
  // every q row, then k, v) and the old multi-head one (a group per head).
  // ln_attn and ln_mlp are the two norms of num_ln_in_parallel_attn = 2.
  const std::string f = "transformer.h." + std::to_string(i) + ".";
  add_fused(model, f + "self_attention.query_key_value.weight", {w.q_w, w.k_w, w.v_w}, d.num_kv_heads);
  add_fused(model, f + "self_attention.query_key_value.bias", {w.q_b, w.k_b, w.v_b}, d.num_kv_heads);
  for (const auto& [theirs, ours] : {std::pair<const char*, const char*>{"self_attention.dense", "self_attn.o_proj"},
                                     {"mlp.dense_h_to_4h", "mlp.up_proj"},
                                     {"mlp.dense_4h_to_h", "mlp.down_proj"},
                                     {"input_layernorm", "input_layernorm"},
                                     {"post_attention_layernorm", "post_attention_layernorm"},
                                     {"ln_attn", "input_layernorm"},
                                     {"ln_mlp", "post_attention_layernorm"}}) {
    for (const char* suffix : {".weight", ".bias"}) {
      add_alias(model, f + theirs + suffix, p + ours + suffix);
    }
  }
}

// What storing a weight given in src_dtype as dtype takes beyond its bytes:
// a norm weight's norm_weight_offset, the reordering of interleaved rotary
// rows, a conversion of dtype. None of them: the weight is stored byte for
// byte as given, so it may be read in place. (A block weight is always: the
// stage refuses block norms and reordered block rows.)
struct Conversion {
  float offset = 0.0f;
  bool reorder = false;
  bool convert = false;
  bool none() const { return offset == 0.0f && !reorder && !convert; }
};

Conversion conversion(const rill_model& model, const Weight& weight, rill_dtype src_dtype, rill_dtype dtype) {
  Conversion c;
  c.offset = weight.norm_weight ? model.desc.norm_weight_offset : 0.0f;
  c.reorder = weight.rotary_rows && model.desc.rope_interleave != 0;
  c.convert = src_dtype != dtype;
  return c;
}

// Writes a weight from host memory into tensor as c says: rotary rows
// reordered; a norm weight's offset added in f32 and the sum rounded once to
// the tensor's dtype (adding in f16 or bf16 would round twice); another
// dtype (a block tensor: a block weight_format) by tensor_write_f32.
rill_status write_weight(const std::string& where, const rill_model& model, const Weight& weight, const Conversion& c,
                         rill_tensor& tensor, rill_dtype src_dtype, const void* data, size_t count) {
  std::vector<unsigned char> half_split;
  if (c.reorder) {
    // A norm weight's rows are its elements, whatever its shape ([H, hd] per head).
    const auto rows = weight.norm_weight ? count : static_cast<size_t>(weight.shape[0]);
    half_split.resize(count * rill_dtype_size(src_dtype));
    half_split_rotary_rows(data, half_split.data(), rows, half_split.size() / rows, model.desc.head_dim,
                           model.desc.rope_dim);
    data = half_split.data();
  }
  if (!c.convert && c.offset == 0.0f) return tensor_write(where, tensor, data, tensor.nbytes);
  std::vector<float> f32(count);
  convert_to_f32(src_dtype, data, f32.data(), count);
  if (c.offset != 0.0f) {
    for (float& v : f32) v += c.offset;
  }
  return tensor_write_f32(where, tensor, f32.data(), count);
}

// The weights one call sets, each written into a new tensor; commit() swaps
// them into the model. A call that fails before commit() leaves the model as
// it was: the staged tensors are destroyed with the stage. (Replacing a weight
// so holds its old and new tensor at once until the call ends.)
class WeightStage {
 public:
  explicit WeightStage(rill_model& model) : model_(model) {}
  ~WeightStage() {
    for (const Staged& s : staged_) tensor_destroy(s.tensor);
  }
  WeightStage(const WeightStage&) = delete;
  WeightStage& operator=(const WeightStage&) = delete;

  // owner: as io::SafetensorsTensor's, for a weight stored as given.
  rill_status store(const char* function, Weight& weight, rill_dtype src_dtype, const void* data, size_t count,
                    const std::shared_ptr<const void>& owner = nullptr) {
    const std::string where = std::string(function) + ": weight '" + weight.name + "'";
    const bool block = quant::is_block(src_dtype);
    if (block && (weight.shape.size() != 2 || weight.norm_weight || (weight.rotary_rows && model_.desc.rope_interleave))) {
      return fail(RILL_ERROR_DTYPE, where + ": a " + rill_dtype_name(src_dtype) +
                                        " (block) weight must be a linear layer's 2-dim weight matrix; norms, biases "
                                        "and gains (and interleaved rotary rows) take f32, f16 or bf16");
    }
    // Block weights keep their dtype; with a block weight_format, 2-dim
    // weights of an element dtype are quantized to it (or to the format a K
    // format falls back to for rows that are not whole blocks of 256).
    const bool quantize = !block && quant::is_block(model_.desc.weight_format) && weight.shape.size() == 2 &&
                          !weight.norm_weight;
    const rill_dtype dtype = block      ? src_dtype
                             : quantize ? quant::fitting_format(model_.desc.weight_format, weight.shape[1])
                                        : model_.desc.dtype;
    staged_.push_back(Staged{&weight, nullptr});  // before the tensor exists, so a throw here leaks nothing
    rill_tensor*& tensor = staged_.back().tensor;
    const auto ndim = static_cast<int32_t>(weight.shape.size());
    const Conversion c = conversion(model_, weight, src_dtype, dtype);
    if (c.none()) return tensor_from_host(where, *model_.context, dtype, ndim, weight.shape.data(), data, owner, tensor);
    RILL_CHECK(tensor_create(where, *model_.context, dtype, ndim, weight.shape.data(), tensor));
    return write_weight(where, model_, weight, c, *tensor, src_dtype, data, count);
  }

  // Swaps every staged tensor in and destroys the tensors they replace. Cannot fail.
  void commit() noexcept {
    for (Staged& s : staged_) {
      std::swap(s.weight->tensor, s.tensor);
      tensor_destroy(s.tensor);
    }
    staged_.clear();
  }

 private:
  struct Staged {
    Weight* weight;
    rill_tensor* tensor;
  };
  rill_model& model_;
  std::vector<Staged> staged_;
};

// Stages the weights a fused tensor holds, from its host data in src_dtype
// (owner: as WeightStage::store's, for a rename).
rill_status stage_fused(const char* function, WeightStage& stage, rill_model& model, const FusedWeight& fused,
                        rill_dtype src_dtype, const void* data, const std::shared_ptr<const void>& owner = nullptr) {
  size_t row_elements = 1;
  for (size_t k = 1; k < fused.shape.size(); ++k) row_elements *= static_cast<size_t>(fused.shape[k]);
  const size_t row_bytes = quant::row_bytes(src_dtype, static_cast<int64_t>(row_elements));
  const auto groups = static_cast<size_t>(fused.groups);
  const size_t group_rows = static_cast<size_t>(fused.shape[0]) / groups;
  const auto* src = static_cast<const unsigned char*>(data);
  size_t first_row = 0;  // of the part within each group
  for (int32_t index : fused.parts) {
    Weight& weight = model.weights[static_cast<size_t>(index)];
    const size_t rows = static_cast<size_t>(weight.shape[0]) / groups;
    const size_t count = rows * groups * row_elements;
    if (fused.parts.size() == 1) return stage.store(function, weight, src_dtype, data, count, owner);
    std::vector<unsigned char> part(rows * groups * row_bytes);
    for (size_t g = 0; g < groups; ++g) {
      std::memcpy(part.data() + g * rows * row_bytes, src + (g * group_rows + first_row) * row_bytes,
                  rows * row_bytes);
    }
    RILL_CHECK(stage.store(function, weight, src_dtype, part.data(), count));
    first_row += rows;
  }
  return RILL_OK;
}

}  // namespace

void add_alias(rill_model& model, const std::string& other, const std::string& name) {
  const auto found = model.weight_index.find(name);
  if (found != model.weight_index.end()) add_fused(model, other, {found->second});
}

rill_status load_safetensors(const char* fn, rill_model& model, const io::SafetensorsFile& file) {
  return load_tensors(fn, model, file.path(), file.tensors());
}

rill_status load_tensors(const char* fn, rill_model& model, const std::string& path,
                         const std::vector<io::SafetensorsTensor>& tensors) {
  const std::string f(fn);
  auto find = [&](const std::string& name) -> const io::SafetensorsTensor* {
    for (const io::SafetensorsTensor& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  // Every tensor of the file that gives this model weights, under its own
  // name or a fused one, is checked before any is stored.
  struct Source {
    const io::SafetensorsTensor* tensor;
    rill_dtype dtype;
    int32_t weight;            // a weight index, or
    const FusedWeight* fused;  // a fused tensor
  };
  std::vector<Source> sources;
  std::vector<const std::string*> given_by(model.weights.size(), nullptr);
  // Checks t's dtype (into dtype) and shape.
  auto check = [&](const io::SafetensorsTensor& t, const std::vector<int64_t>& expected,
                   rill_dtype& dtype) -> rill_status {
    const std::string where = f + ": " + path + ": tensor '" + t.name + "': ";
    // A GGUF view may hold a block dtype, under rill's name for it.
    if (!io::safetensors_dtype_to_rill(t.dtype, dtype) && !quant::dtype_from_name(t.dtype, dtype)) {
      return fail(RILL_ERROR_IO, where + "dtype " + t.dtype + " is not supported; expected F32, F16 or BF16");
    }
    if (t.shape != expected) {
      return fail(RILL_ERROR_SHAPE, where + "expected shape " + dims_text(expected) + ", got " +
                                              dims_text(t.shape));
    }
    return RILL_OK;
  };
  // Records that the tensor called name gives the weights.
  auto claim = [&](const std::string& name, const std::vector<int32_t>& weights) -> rill_status {
    for (int32_t w : weights) {
      const std::string*& by = given_by[static_cast<size_t>(w)];
      if (by != nullptr) {
        return fail(RILL_ERROR_INVALID_ARGUMENT,
                          f + ": " + path + ": tensors '" + *by + "' and '" + name + "' both hold weight '" +
                              model.weights[static_cast<size_t>(w)].name + "'; a checkpoint holds one of them");
      }
      by = &name;
    }
    return RILL_OK;
  };
  auto take = [&](const io::SafetensorsTensor& t, const std::vector<int64_t>& expected,
                  const std::vector<int32_t>& weights, Source source) -> rill_status {
    RILL_CHECK(check(t, expected, source.dtype));
    RILL_CHECK(claim(t.name, weights));
    sources.push_back(source);
    return RILL_OK;
  };
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& weight = model.weights[i];
    if (const io::SafetensorsTensor* t = find(weight.name)) {
      const auto index = static_cast<int32_t>(i);
      RILL_CHECK(take(*t, weight.shape, {index}, Source{t, RILL_DTYPE_F32, index, nullptr}));
    }
  }
  for (const FusedWeight& fused : model.fused) {
    const io::SafetensorsTensor* t = find(fused.name);
    if (t == nullptr) continue;
    if (!fused.refusal.empty()) {
      return fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": " + path + ": tensor '" + fused.name + "': this model cannot use it: " + fused.refusal);
    }
    RILL_CHECK(take(*t, fused.shape, fused.parts, Source{t, RILL_DTYPE_F32, kAbsent, &fused}));
  }
  // Per-head tensors, stacked in f32 (exact for f16 and bf16 sources).
  std::vector<std::pair<int32_t, std::vector<float>>> stacked;
  for (const HeadRows& rows : model.head_rows) {
    const Weight& weight = model.weights[static_cast<size_t>(rows.weight)];
    const auto head_dim = static_cast<size_t>(weight.shape[1]);
    std::vector<float> values(rows.heads.size() * head_dim);
    size_t found = 0;
    for (size_t h = 0; h < rows.heads.size(); ++h) {
      const io::SafetensorsTensor* t = find(rows.heads[h]);
      if (t == nullptr) continue;
      rill_dtype dtype = RILL_DTYPE_F32;
      RILL_CHECK(check(*t, {weight.shape[1]}, dtype));
      if (quant::is_block(dtype)) {
        return fail(RILL_ERROR_DTYPE, f + ": " + path + ": tensor '" + t->name + "': a norm weight takes F32, F16 "
                                          "or BF16, got " + t->dtype);
      }
      convert_to_f32(dtype, t->data, values.data() + h * head_dim, head_dim);
      ++found;
    }
    if (found == 0) continue;
    for (size_t h = 0; found < rows.heads.size() && h < rows.heads.size(); ++h) {
      if (find(rows.heads[h]) == nullptr) {
        return fail(RILL_ERROR_IO, f + ": " + path + ": lacks tensor '" + rows.heads[h] + "' (head " +
                                       std::to_string(h) + " of " + std::to_string(rows.heads.size()) + " of '" +
                                       weight.name + "'); the heads of a norm are loaded together");
      }
    }
    RILL_CHECK(claim(rows.heads[0], {rows.weight}));
    stacked.emplace_back(rows.weight, std::move(values));
  }
  WeightStage stage(model);
  for (const Source& s : sources) {
    RILL_CHECK(s.fused != nullptr ? stage_fused(fn, stage, model, *s.fused, s.dtype, s.tensor->data, s.tensor->owner)
                                  : stage.store(fn, model.weights[static_cast<size_t>(s.weight)], s.dtype,
                                                s.tensor->data, element_count(s.tensor->shape), s.tensor->owner));
  }
  for (const auto& [index, values] : stacked) {
    RILL_CHECK(stage.store(fn, model.weights[static_cast<size_t>(index)], RILL_DTYPE_F32, values.data(),
                           values.size()));
  }
  stage.commit();
  return RILL_OK;
}

size_t element_count(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (int64_t dim : shape) count *= static_cast<size_t>(dim);
  return count;
}

std::string dims_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void build_weight_table(rill_model& model) {
  const rill_model_desc& d = model.desc;
  const int64_t hidden = d.hidden_size, q_out = int64_t{d.num_heads} * d.head_dim;
  const int64_t kv_out = int64_t{d.num_kv_heads} * d.head_dim, inter = d.intermediate_size;
  const bool sandwich = d.norm_placement == RILL_PLACEMENT_SANDWICH;
  const bool output = d.norm_placement == RILL_PLACEMENT_OUTPUT;
  for (int32_t i = 0; i < d.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights w{};
    add_linear(model, p + "self_attn.q_proj", q_out, hidden, d.qkv_bias != 0, w.q_w, w.q_b);
    add_linear(model, p + "self_attn.k_proj", kv_out, hidden, d.qkv_bias != 0, w.k_w, w.k_b);
    add_linear(model, p + "self_attn.v_proj", kv_out, hidden, d.qkv_bias != 0, w.v_w, w.v_b);
    add_linear(model, p + "self_attn.o_proj", hidden, q_out, d.o_bias != 0, w.o_w, w.o_b);
    if (d.qk_norm != RILL_QK_NORM_NONE) {
      auto shape = [&](int32_t heads) -> std::vector<int64_t> {
        switch (d.qk_norm) {
          case RILL_QK_NORM_HEAD: return {d.head_dim};
          case RILL_QK_NORM_HEAD_WEIGHTS: return {heads, d.head_dim};
          default: return {int64_t{heads} * d.head_dim};
        }
      };
      w.q_norm_w = add_norm_weight(model, p + "self_attn.q_norm.weight", shape(d.num_heads));
      w.k_norm_w = add_norm_weight(model, p + "self_attn.k_norm.weight", shape(d.num_kv_heads));
      if (d.qk_norm == RILL_QK_NORM_HEAD_WEIGHTS) {  // StableLM 2 12B keeps a tensor per head
        add_head_rows(model, w.q_norm_w, p + "self_attn.q_layernorm.norms.", d.num_heads);
        add_head_rows(model, w.k_norm_w, p + "self_attn.k_layernorm.norms.", d.num_kv_heads);
      }
    } else {
      w.q_norm_w = w.k_norm_w = kAbsent;
    }
    for (int32_t rotary : {w.q_w, w.q_b, w.k_w, w.k_b, w.q_norm_w, w.k_norm_w}) {
      if (rotary != kAbsent) model.weights[static_cast<size_t>(rotary)].rotary_rows = true;
    }
    if (layer_sparse(d, i)) {
      add_experts(model, i, w);
    } else {
      if (is_gated(d.activation)) {
        add_linear(model, p + "mlp.gate_proj", inter, hidden, d.mlp_bias != 0, w.gate_w, w.gate_b);
      } else {
        w.gate_w = w.gate_b = kAbsent;
      }
      add_linear(model, p + "mlp.up_proj", inter, hidden, d.mlp_bias != 0, w.up_w, w.up_b);
      add_linear(model, p + "mlp.down_proj", hidden, inter, d.mlp_bias != 0, w.down_w, w.down_b);
      w.router_w = w.experts = kAbsent;
      w.shared_gate_w = w.shared_up_w = w.shared_down_w = w.shared_expert_gate_w = kAbsent;
    }
    if (output) {
      // OLMo 2 names: each norm sits on its sublayer's output; no input norm.
      w.attn_norm_w = w.attn_norm_b = w.mlp_norm_w = w.mlp_norm_b = kAbsent;
      add_norm(model, p + "post_attention_layernorm", w.attn_out_norm_w, w.attn_out_norm_b);
      add_norm(model, p + "post_feedforward_layernorm", w.mlp_out_norm_w, w.mlp_out_norm_b);
    } else if (sandwich) {
      add_norm(model, p + "input_layernorm", w.attn_norm_w, w.attn_norm_b);
      // Gemma 2 names: post_attention_layernorm normalizes the attention output.
      add_norm(model, p + "post_attention_layernorm", w.attn_out_norm_w, w.attn_out_norm_b);
      add_norm(model, p + "pre_feedforward_layernorm", w.mlp_norm_w, w.mlp_norm_b);
      add_norm(model, p + "post_feedforward_layernorm", w.mlp_out_norm_w, w.mlp_out_norm_b);
    } else if (d.parallel_residual == 0 || d.parallel_norms == 2) {
      add_norm(model, p + "input_layernorm", w.attn_norm_w, w.attn_norm_b);
      add_norm(model, p + "post_attention_layernorm", w.mlp_norm_w, w.mlp_norm_b);
      w.attn_out_norm_w = w.attn_out_norm_b = w.mlp_out_norm_w = w.mlp_out_norm_b = kAbsent;
    } else {  // parallel with one shared norm: the MLP reads input_layernorm's output
      add_norm(model, p + "input_layernorm", w.attn_norm_w, w.attn_norm_b);
      w.mlp_norm_w = w.mlp_norm_b = kAbsent;
      w.attn_out_norm_w = w.attn_out_norm_b = w.mlp_out_norm_w = w.mlp_out_norm_b = kAbsent;
    }
    if (d.layer_scale != 0) {
      w.attn_gain = add_weight(model, p + "self_attn_gain", {hidden});
      w.mlp_gain = add_weight(model, p + "mlp_gain", {hidden});
    } else {
      w.attn_gain = w.mlp_gain = kAbsent;
    }
    model.layers.push_back(w);
    add_checkpoint_names(model, i, w);
  }
  if (d.final_norm != 0) add_norm(model, "model.norm", model.final_norm_w, model.final_norm_b);
  for (const char* suffix : {".weight", ".bias"}) {
    add_alias(model, std::string("gpt_neox.final_layer_norm") + suffix, std::string("model.norm") + suffix);
    add_alias(model, std::string("transformer.ln_f") + suffix, std::string("model.norm") + suffix);
  }
}

const Weight* first_missing_weight(const rill_model& model) {
  for (const Weight& w : model.weights) {
    if (w.tensor == nullptr) return &w;
  }
  return nullptr;
}

void destroy_model(rill_model* model) {
  if (model == nullptr) return;
  for (Weight& w : model->weights) tensor_destroy(w.tensor);
  release_scratch(*model);
  model->context->models.erase(model);
  delete model;
}

void release_scratch(rill_model& model) {
  for (rill_tensor* t : model.scratch) tensor_destroy(t);
  model.scratch.clear();
  model.scratch_rows = 0;
}

}  // namespace rill::layer

extern "C" {

RILL_API rill_status rill_model_create(rill_context* ctx, const rill_model_desc* desc, rill_model** out_model) {
  constexpr const char* fn = "rill_model_create";
  return rill::guarded(fn, [&] {
    if (ctx == nullptr)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": ctx: expected a context, got NULL");
    if (desc == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": desc: expected a descriptor, got NULL");
    }
    if (out_model == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": out_model: expected a pointer, got NULL");
    }
    auto model = std::make_unique<rill_model>();
    const rill::layer::DescProblem p = rill::layer::resolve_desc(*desc, model->desc);
    if (!p.field.empty()) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": desc." + p.message);
    model->context = ctx;
    rill::layer::build_weight_table(*model);
    ctx->models.insert(model.get());
    *out_model = model.release();
    return RILL_OK;
  });
}

RILL_API void rill_model_destroy(rill_model* model) { rill::layer::destroy_model(model); }

RILL_API rill_status rill_model_set_weight(rill_model* model, const char* name, rill_dtype src_dtype, int32_t ndim,
                                           const int64_t* shape, const void* data, size_t bytes) {
  constexpr const char* fn = "rill_model_set_weight";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (model == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": model: expected a model, got NULL");
    if (name == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": name: expected a weight name, got NULL");
    if (const auto head = model->head_rows_index.find(name); head != model->head_rows_index.end()) {
      const rill::layer::Weight& stacked =
          model->weights[static_cast<size_t>(model->head_rows[static_cast<size_t>(head->second)].weight)];
      return rill::fail(RILL_ERROR_NOT_FOUND, f + ": name: '" + name + "' is one head's row of weight '" +
                                                  stacked.name + "' (shape " + rill::layer::dims_text(stacked.shape) +
                                                  "); set that weight with every head stacked, head 0 first");
    }
    const auto found = model->weight_index.find(name);
    const auto found_fused = found == model->weight_index.end() ? model->fused_index.find(name)
                                                                : model->fused_index.end();
    if (found == model->weight_index.end() && found_fused == model->fused_index.end()) {
      return rill::fail(RILL_ERROR_NOT_FOUND,
                        f + ": name: this model has no weight '" + name +
                            "' (check the descriptor's biases, norm, placement, qk_norm and layer count)");
    }
    const rill::layer::FusedWeight* fused =
        found_fused != model->fused_index.end() ? &model->fused[static_cast<size_t>(found_fused->second)] : nullptr;
    if (fused != nullptr && !fused->refusal.empty()) {
      return rill::fail(RILL_ERROR_NOT_FOUND, f + ": name: this model cannot use '" + name + "': " + fused->refusal);
    }
    rill::layer::Weight* weight = fused == nullptr ? &model->weights[static_cast<size_t>(found->second)] : nullptr;
    const std::string& weight_name = fused != nullptr ? fused->name : weight->name;
    const std::vector<int64_t>& expected = fused != nullptr ? fused->shape : weight->shape;
    if (rill_dtype_block_elements(src_dtype) == 0) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": src_dtype: expected RILL_DTYPE_F32, _F16, _BF16 or a block dtype (_Q8_0 ... _Q6_K), "
                            "got " +
                            rill::enum_name(src_dtype));
    }
    if (ndim < 1 || ndim > RILL_MAX_DIMS || shape == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": ndim/shape: expected 1 to 4 dims and a shape array for '" + weight_name + "'");
    }
    const std::vector<int64_t> given(shape, shape + ndim);
    if (given != expected) {
      return rill::fail(RILL_ERROR_SHAPE, f + ": weight '" + weight_name + "': expected shape " +
                                              rill::layer::dims_text(expected) + ", got " +
                                              rill::layer::dims_text(given));
    }
    const size_t count = rill::layer::element_count(given);
    const auto row = static_cast<int64_t>(given.back());
    if (row % static_cast<int64_t>(rill_dtype_block_elements(src_dtype)) != 0) {
      return rill::fail(RILL_ERROR_SHAPE, f + ": shape: a " + rill_dtype_name(src_dtype) + " weight needs rows of a "
                                              "multiple of " + std::to_string(rill_dtype_block_elements(src_dtype)) +
                                              " elements (its block); '" + weight_name + "' has rows of " +
                                              std::to_string(row));
    }
    const size_t expected_bytes = count / static_cast<size_t>(row) * rill::quant::row_bytes(src_dtype, row);
    if (bytes != expected_bytes) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": bytes: expected " + std::to_string(expected_bytes) +
                                                         " for '" + weight_name + "', got " + std::to_string(bytes));
    }
    if (data == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": data: expected a pointer, got NULL");
    rill::layer::WeightStage stage(*model);
    RILL_CHECK(fused != nullptr ? rill::layer::stage_fused(fn, stage, *model, *fused, src_dtype, data)
                                : stage.store(fn, *weight, src_dtype, data, count));
    stage.commit();
    return RILL_OK;
  });
}

RILL_API rill_status rill_model_load_safetensors(rill_model* model, const char* path) {
  constexpr const char* fn = "rill_model_load_safetensors";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (model == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": model: expected a model, got NULL");
    if (path == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": path: expected a file path, got NULL");
    std::unique_ptr<rill::io::SafetensorsFile> file;
    if (std::string error; rill::io::SafetensorsFile::open(path, file, error) != RILL_OK) {
      return rill::fail(RILL_ERROR_IO, f + ": " + error);
    }
    file->make_views_copied();  // the file may change once the call returns
    return rill::layer::load_safetensors(fn, *model, *file);
  });
}

RILL_API rill_status rill_model_check_weights(const rill_model* model) {
  constexpr const char* fn = "rill_model_check_weights";
  return rill::guarded(fn, [&]() -> rill_status {
    if (model == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, std::string(fn) + ": model: expected a model, got NULL");
    }
    if (const rill::layer::Weight* missing = rill::layer::first_missing_weight(*model)) {
      return rill::fail(RILL_ERROR_NOT_FOUND, std::string(fn) + ": missing weight '" + missing->name +
                                                         "' (shape " + rill::layer::dims_text(missing->shape) + ")");
    }
    return RILL_OK;
  });
}

}  // extern "C"
