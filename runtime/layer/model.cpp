// rill_model: creation from a descriptor, the table of weights it uses, and
// setting them from host memory or a safetensors file.
#include "model.h"

#include <memory>

#include "dtype_convert.h"
#include "enum_names.h"
#include "errors.h"
#include "io/safetensors.h"
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
void add_norm(rill_model& model, const std::string& prefix, int32_t& weight, int32_t& bias) {
  const int64_t d = model.desc.hidden_size;
  weight = add_weight(model, prefix + ".weight", {d});
  bias = model.desc.norm == RILL_NORM_LAYER ? add_weight(model, prefix + ".bias", {d}) : kAbsent;
}

// Adds "<prefix>.weight" [out, in] and, with has_bias, "<prefix>.bias" [out].
void add_linear(rill_model& model, const std::string& prefix, int64_t out, int64_t in, bool has_bias, int32_t& weight,
                int32_t& bias) {
  weight = add_weight(model, prefix + ".weight", {out, in});
  bias = has_bias ? add_weight(model, prefix + ".bias", {out}) : kAbsent;
}

bool is_gated(rill_mlp_activation activation) {
  return activation == RILL_MLP_SILU_GLU || activation == RILL_MLP_GELU_GLU;
}

// Converts a weight from host memory into its tensor (created on first use).
rill_status store_weight(const char* function, rill_model& model, Weight& weight, rill_dtype src_dtype,
                         const void* data, size_t count) {
  const std::string where = std::string(function) + ": weight '" + weight.name + "'";
  if (weight.tensor == nullptr) {
    RILL_CHECK(tensor_create(where, *model.context, model.desc.dtype, static_cast<int32_t>(weight.shape.size()),
                             weight.shape.data(), weight.tensor));
  }
  if (src_dtype == model.desc.dtype) {
    return tensor_write(where, *weight.tensor, data, count * rill_dtype_size(src_dtype));
  }
  std::vector<float> f32(count);
  convert_to_f32(src_dtype, data, f32.data(), count);
  return tensor_write_f32(where, *weight.tensor, f32.data(), count);
}

}  // namespace

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
  for (int32_t i = 0; i < d.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights w{};
    add_linear(model, p + "self_attn.q_proj", q_out, hidden, d.qkv_bias != 0, w.q_w, w.q_b);
    add_linear(model, p + "self_attn.k_proj", kv_out, hidden, d.qkv_bias != 0, w.k_w, w.k_b);
    add_linear(model, p + "self_attn.v_proj", kv_out, hidden, d.qkv_bias != 0, w.v_w, w.v_b);
    add_linear(model, p + "self_attn.o_proj", hidden, q_out, d.o_bias != 0, w.o_w, w.o_b);
    if (is_gated(d.activation)) {
      add_linear(model, p + "mlp.gate_proj", inter, hidden, d.mlp_bias != 0, w.gate_w, w.gate_b);
    } else {
      w.gate_w = w.gate_b = kAbsent;
    }
    add_linear(model, p + "mlp.up_proj", inter, hidden, d.mlp_bias != 0, w.up_w, w.up_b);
    add_linear(model, p + "mlp.down_proj", hidden, inter, d.mlp_bias != 0, w.down_w, w.down_b);
    add_norm(model, p + "input_layernorm", w.attn_norm_w, w.attn_norm_b);
    if (sandwich) {
      // Gemma 2 names: post_attention_layernorm normalizes the attention output.
      add_norm(model, p + "post_attention_layernorm", w.attn_out_norm_w, w.attn_out_norm_b);
      add_norm(model, p + "pre_feedforward_layernorm", w.mlp_norm_w, w.mlp_norm_b);
      add_norm(model, p + "post_feedforward_layernorm", w.mlp_out_norm_w, w.mlp_out_norm_b);
    } else if (d.parallel_residual == 0 || d.parallel_norms == 2) {
      add_norm(model, p + "post_attention_layernorm", w.mlp_norm_w, w.mlp_norm_b);
      w.attn_out_norm_w = w.attn_out_norm_b = w.mlp_out_norm_w = w.mlp_out_norm_b = kAbsent;
    } else {  // parallel with one shared norm: the MLP reads input_layernorm's output
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
  }
  if (d.final_norm != 0) add_norm(model, "model.norm", model.final_norm_w, model.final_norm_b);
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
    const auto found = model->weight_index.find(name);
    if (found == model->weight_index.end()) {
      return rill::fail(RILL_ERROR_NOT_FOUND,
                        f + ": name: this model has no weight '" + name +
                            "' (check the descriptor's biases, norm, placement and layer count)");
    }
    rill::layer::Weight& weight = model->weights[static_cast<size_t>(found->second)];
    if (rill_dtype_size(src_dtype) == 0) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": src_dtype: expected RILL_DTYPE_F32, _F16 or _BF16, got " + rill::enum_name(src_dtype));
    }
    if (ndim < 1 || ndim > RILL_MAX_DIMS || shape == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                        f + ": ndim/shape: expected 1 to 4 dims and a shape array for '" + weight.name + "'");
    }
    const std::vector<int64_t> given(shape, shape + ndim);
    if (given != weight.shape) {
      return rill::fail(RILL_ERROR_SHAPE, f + ": weight '" + weight.name + "': expected shape " +
                                              rill::layer::dims_text(weight.shape) + ", got " +
                                              rill::layer::dims_text(given));
    }
    size_t count = 1;
    for (int64_t dim : given) count *= static_cast<size_t>(dim);
    if (bytes != count * rill_dtype_size(src_dtype)) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": bytes: expected " +
                                                         std::to_string(count * rill_dtype_size(src_dtype)) + " for '" +
                                                         weight.name + "', got " + std::to_string(bytes));
    }
    if (data == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": data: expected a pointer, got NULL");
    return rill::layer::store_weight(fn, *model, weight, src_dtype, data, count);
  });
}

RILL_API rill_status rill_model_load_safetensors(rill_model* model, const char* path) {
  constexpr const char* fn = "rill_model_load_safetensors";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (model == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": model: expected a model, got NULL");
    if (path == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": path: expected a file path, got NULL");
    std::unique_ptr<rill::io::SafetensorsFile> file;
    const rill_status opened = rill::io::SafetensorsFile::open(path, fn, file);
    if (opened != RILL_OK) return opened;
    for (rill::layer::Weight& weight : model->weights) {
      const rill::io::SafetensorsTensor* t = file->find(weight.name);
      if (t == nullptr) continue;
      const std::string where = f + ": " + path + ": tensor '" + weight.name + "': ";
      rill_dtype src_dtype;
      if (!rill::io::safetensors_dtype_to_rill(t->dtype, src_dtype)) {
        return rill::fail(RILL_ERROR_IO, where + "dtype " + t->dtype + " is not supported; expected F32, F16 or BF16");
      }
      if (t->shape != weight.shape) {
        return rill::fail(RILL_ERROR_SHAPE, where + "expected shape " + rill::layer::dims_text(weight.shape) +
                                                ", got " + rill::layer::dims_text(t->shape));
      }
      const rill_status stored =
          rill::layer::store_weight(fn, *model, weight, src_dtype, t->data, t->bytes / rill_dtype_size(src_dtype));
      if (stored != RILL_OK) return stored;
    }
    return RILL_OK;
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
