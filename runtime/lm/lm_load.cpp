// rill_lm_load: a Hugging Face folder (config.json, generation_config.json,
// model.safetensors or its sharded index) into a decoder stack, an embedding
// table and an LM head. Loads are all-or-nothing: every file is opened and
// validated and every tensor matched to the model before the model is made,
// and any later failure destroys what was made.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>

#include "dtype_convert.h"
#include "enum_names.h"
#include "errors.h"
#include "io/json_release.h"
#include "host_services.h"
#include "io/checkpoint.h"
#include "io/text_file.h"
#include "lm.h"
#include "model.h"
#include "op_checks.h"
#include "quant.h"
#include "tensors.h"

namespace rill::lm {
namespace {

// A buffer older checkpoints saved; rill computes RoPE from the config.
constexpr std::string_view kRotaryBuffer = "rotary_emb.inv_freq";

}  // namespace

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

using io::find_tensor;
using io::Shards;

// Whether name is one of the family's per-layer buffers in a layer the
// config has: layer_prefix, the layer index, ".", the buffer's name.
bool is_layer_buffer(const std::string& name, const HfConfig& config) {
  if (name.compare(0, config.layer_prefix.size(), config.layer_prefix) != 0) return false;
  for (int32_t i = 0; i < config.desc.num_layers; ++i) {
    const std::string layer = config.layer_prefix + std::to_string(i) + ".";
    if (name.compare(0, layer.size(), layer) != 0) continue;
    const std::string rest = name.substr(layer.size());
    return std::find(config.layer_buffers.begin(), config.layer_buffers.end(), rest) != config.layer_buffers.end();
  }
  return false;
}

// Every tensor of the checkpoint is one the model uses: a tensor left over
// means the config and the checkpoint disagree (a bias the config leaves
// out, a layer too many), which would otherwise go unnoticed.
rill_status check_all_used(const std::string& f, const rill_model& model, const HfConfig& config,
                           const Shards& shards) {
  std::set<std::string> seen;
  for (const auto& shard : shards) {
    for (const io::SafetensorsTensor& t : shard->tensors()) {
      if (!seen.insert(t.name).second) {
        return fail(RILL_ERROR_IO, f + ": " + shard->path() + ": tensor '" + t.name + "' is in two shards");
      }
      const bool used = model.weight_index.count(t.name) != 0 || model.fused_index.count(t.name) != 0 ||
                        t.name == config.embedding_name || t.name == config.head_name ||
                        (!config.head_bias_name.empty() && t.name == config.head_bias_name) ||
                        layer::is_head_row(model, t.name) || ends_with(t.name, kRotaryBuffer) ||
                        is_layer_buffer(t.name, config);
      if (!used) {
        return fail(RILL_ERROR_IO, f + ": " + shard->path() + ": tensor '" + t.name + "' is not a weight of this " +
                                       config.model_type + " model as config.json describes it (" +
                                       std::to_string(config.desc.num_layers) +
                                       " layers; check its biases and sizes)");
      }
    }
  }
  return RILL_OK;
}

// Loads the decoder's weights shard by shard, but the per-head tensors (one
// norm's heads may lie in different shards) from every shard at once.
rill_status load_shards(const char* fn, rill_model& model, const std::string& folder, const Shards& shards) {
  std::vector<io::SafetensorsTensor> heads;
  for (const auto& shard : shards) {
    std::vector<io::SafetensorsTensor> rest;
    for (const io::SafetensorsTensor& t : shard->tensors()) {
      (layer::is_head_row(model, t.name) ? heads : rest).push_back(t);
    }
    RILL_CHECK(layer::load_tensors(fn, model, shard->path(), rest));
  }
  return layer::load_tensors(fn, model, folder, heads);
}

// A tensor above the decoder the checkpoint must hold: the embedding or the
// LM head ([vocab, hidden]) or the head's bias ([vocab]).
rill_status find_table(const std::string& f, const Shards& shards, const std::vector<int64_t>& expected,
                       const std::string& name, const char* why, const io::SafetensorsTensor*& out,
                       rill_dtype& dtype) {
  const io::SafetensorsFile* file = nullptr;
  out = find_tensor(shards, name, &file);
  if (out == nullptr) return fail(RILL_ERROR_IO, f + ": the checkpoint lacks tensor '" + name + "' (" + why + ")");
  const std::string where = f + ": " + file->path() + ": tensor '" + name + "': ";
  if (!io::safetensors_dtype_to_rill(out->dtype, dtype)) {
    return fail(RILL_ERROR_IO, where + "dtype " + out->dtype + " is not supported; expected F32, F16 or BF16");
  }
  if (out->shape != expected) {
    return fail(RILL_ERROR_SHAPE, where + "expected shape " + layer::dims_text(expected) +
                                      " (from vocab_size and hidden_size), got " + layer::dims_text(out->shape));
  }
  return RILL_OK;
}

}  // namespace

// Creates a tensor of the source's shape in dtype and fills it from the
// mapped file, converting a bounded number of elements at a time (never a
// second full copy of an embedding table).
namespace {

// Quantizes a [rows, cols] table of an element dtype into the block tensor
// dst, a bounded number of rows at a time.
rill_status quantize_table(const std::string& where, rill_context& ctx, const io::SafetensorsTensor& source,
                           rill_dtype source_dtype, rill_tensor& dst) {
  const int64_t rows = source.shape[0], cols = source.shape[1];
  const size_t row_bytes = quant::row_bytes(dst.dtype, cols);
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / cols);
  std::vector<float> f32(static_cast<size_t>(std::min(chunk, rows) * cols));
  std::vector<unsigned char> blocks(static_cast<size_t>(std::min(chunk, rows)) * row_bytes);
  const auto* src = static_cast<const unsigned char*>(source.data);
  const size_t src_row_bytes = static_cast<size_t>(cols) * rill_dtype_size(source_dtype);
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t count = std::min(chunk, rows - first);
    const auto values = static_cast<size_t>(count * cols);
    convert_to_f32(source_dtype, src + static_cast<size_t>(first) * src_row_bytes, f32.data(), values);
    if (const size_t i = quant::first_unquantizable(f32.data(), values); i < values) {
      return fail(RILL_ERROR_INVALID_ARGUMENT,
                  where + ": element " + std::to_string(static_cast<size_t>(first * cols) + i) + ": a " +
                      rill_dtype_name(dst.dtype) + " table takes finite values of magnitude at most 2^18, got " +
                      std::to_string(f32[i]));
    }
    for (int64_t r = 0; r < count; ++r) {
      quant::quantize_row(dst.dtype, f32.data() + r * cols, blocks.data() + static_cast<size_t>(r) * row_bytes, cols);
    }
    clear_backend_message();
    const rill_status status =
        ctx.backend->table->buffer_write(ctx.impl, dst.buffer, static_cast<size_t>(first) * row_bytes, blocks.data(),
                                         static_cast<size_t>(count) * row_bytes);
    if (status != RILL_OK) return backend_failure(where.c_str(), ctx.backend->name, status);
  }
  return RILL_OK;
}

}  // namespace

rill_status store_table(const std::string& where, rill_context& ctx, rill_dtype dtype,
                        const io::SafetensorsTensor& source, rill_dtype source_dtype, rill_tensor*& out) {
  rill_tensor* tensor = nullptr;
  // A block table (a GGUF file's) is kept as it is: get_rows dequantizes the
  // rows it gathers, and gemm reads it as the head. A K format falls back for
  // rows that are not whole blocks of 256, as a decoder matrix does.
  const rill_dtype stored = quant::is_block(source_dtype) ? source_dtype
                            : quant::is_block(dtype)      ? quant::fitting_format(dtype, source.shape.back())
                                                          : dtype;
  const auto ndim = static_cast<int32_t>(source.shape.size());
  if (source_dtype == stored) {
    return tensor_from_host(where, ctx, stored, ndim, source.shape.data(), source.data, source.owner, out);
  }
  RILL_CHECK(tensor_create(where, ctx, stored, ndim, source.shape.data(), tensor));
  out = tensor;
  if (quant::is_block(stored)) return quantize_table(where, ctx, source, source_dtype, *tensor);
  const size_t total = source.bytes / rill_dtype_size(source_dtype);
  const size_t chunk = std::min<size_t>(total, size_t{1} << 20);
  std::vector<float> f32(chunk);
  std::vector<unsigned char> converted(chunk * rill_dtype_size(dtype));
  const auto* src = static_cast<const unsigned char*>(source.data);
  for (size_t first = 0; first < total; first += chunk) {
    const size_t count = std::min(chunk, total - first);
    convert_to_f32(source_dtype, src + first * rill_dtype_size(source_dtype), f32.data(), count);
    convert_from_f32(dtype, f32.data(), converted.data(), count);
    clear_backend_message();
    const rill_status status = ctx.backend->table->buffer_write(
        ctx.impl, tensor->buffer, first * rill_dtype_size(dtype), converted.data(), count * rill_dtype_size(dtype));
    if (status != RILL_OK) return backend_failure(where.c_str(), ctx.backend->name, status);
  }
  return RILL_OK;
}

rill_dtype matrix_dtype(const rill_lm_load_options& options, rill_dtype compute) {
  return quant::is_block(options.weight_format) ? options.weight_format : compute;
}

rill_status check_block_support(const char* fn, const rill_lm& lm, const std::string& where) {
  rill_context& ctx = *lm.context;
  RILL_CHECK(layer::check_block_weight_support(fn, *lm.model, where));
  RILL_CHECK(layer::check_gemm_weight_support(fn, ctx, lm.dtype, *lm.lm_head, where + "the LM head"));
  if (!quant::is_block(lm.embedding->dtype)) return RILL_OK;
  rill_backend_op_desc desc{};
  desc.struct_size = sizeof desc;
  desc.op = RILL_BACKEND_OP_GET_ROWS;
  desc.dtype = lm.dtype;
  desc.rows = 1;
  desc.cols = lm.embedding->shape[1];
  desc.n = lm.embedding->shape[0];
  desc.weight_dtype = lm.embedding->dtype;
  return check_block_weights(fn, OpChecks(fn, &ctx), ctx, desc, (where + "the token embedding").c_str());
}

// The family's names for decoder weights, as aliases of rill's.
void add_family_names(rill_model& model, const HfConfig& config) {
  for (int32_t i = 0; i < config.desc.num_layers; ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    const std::string their_prefix = config.layer_prefix + std::to_string(i) + ".";
    for (const auto& [theirs, ours] : config.layer_names) layer::add_alias(model, their_prefix + theirs, prefix + ours);
  }
  for (const auto& [theirs, ours] : config.global_names) layer::add_alias(model, theirs, ours);
}

namespace {

// OLMo's LayerNorms have no parameters: every norm weight 1, every bias 0;
// Cohere's have no bias: every norm bias 0.
rill_status set_parameterless_norms(const std::string& f, rill_model& model, const HfConfig& config) {
  for (const layer::Weight& w : model.weights) {
    const bool bias = w.name.size() > 5 && w.name.compare(w.name.size() - 5, 5, ".bias") == 0 &&
                      (w.name.find("layernorm") != std::string::npos || w.name == "model.norm.bias");
    if (!(w.norm_weight && config.unit_norms) && !bias) continue;
    const std::vector<float> values(static_cast<size_t>(w.shape[0]), bias ? 0.0f : 1.0f);
    if (rill_model_set_weight(&model, w.name.c_str(), RILL_DTYPE_F32, 1, w.shape.data(), values.data(),
                              values.size() * sizeof(float)) != RILL_OK) {
      return fail(RILL_ERROR_INTERNAL, f + ": setting the parameterless norm '" + w.name + "': " + rill_last_error());
    }
  }
  return RILL_OK;
}

}  // namespace

void destroy_lm(rill_lm* lm) {
  if (lm == nullptr) return;
  tensor_destroy(lm->head_bias);
  if (lm->lm_head != lm->embedding) tensor_destroy(lm->lm_head);
  tensor_destroy(lm->embedding);
  rill_model_destroy(lm->model);
  delete lm;
}

namespace {

rill_status load(const char* fn, rill_context& ctx, const std::string& folder, const rill_lm_load_options& options,
                 rill_lm*& out) {
  const std::string f(fn);
  HfConfig config;
  std::string config_error;
  if (const rill_status read = read_hf_config(folder, config, config_error); read != RILL_OK) {
    return fail(read, f + ": " + config_error);
  }
  if (options.override_dtype == 0 && !config.torch_dtype_problem.empty()) {
    return fail(RILL_ERROR_UNSUPPORTED, f + ": " + folder + "/config.json: " + config.torch_dtype_problem);
  }
  config.desc.dtype = options.override_dtype != 0 ? options.dtype
                      : config.has_torch_dtype    ? config.torch_dtype
                                                  : RILL_DTYPE_F32;
  Shards shards;
  if (std::string error; io::open_checkpoint(folder, shards, error) != RILL_OK) {
    return fail(RILL_ERROR_IO, f + ": " + error);
  }
  if (options.copy_weights != 0) {
    for (const auto& shard : shards) shard->make_views_copied();
  }
  const io::SafetensorsTensor *embedding = nullptr, *head = nullptr, *head_bias = nullptr;
  rill_dtype embedding_dtype = RILL_DTYPE_F32, head_dtype = RILL_DTYPE_F32, head_bias_dtype = RILL_DTYPE_F32;
  const std::vector<int64_t> table = {config.vocab_size, config.desc.hidden_size};
  RILL_CHECK(find_table(f, shards, table, config.embedding_name, "the token embedding", embedding, embedding_dtype));
  if (!config.tie_word_embeddings) {
    RILL_CHECK(find_table(f, shards, table, config.head_name,
                          "the LM head; config.json's tie_word_embeddings is false", head, head_dtype));
  }
  if (!config.head_bias_name.empty()) {
    RILL_CHECK(find_table(f, shards, {config.vocab_size}, config.head_bias_name, "the LM head's bias", head_bias,
                          head_bias_dtype));
  }

  std::unique_ptr<rill_lm, LmDeleter> lm(new rill_lm());
  lm->context = &ctx;
  lm->dtype = config.desc.dtype;
  const rill_status created = rill_model_create(&ctx, &config.desc, &lm->model);
  if (created != RILL_OK) return fail(created, f + ": " + folder + "/config.json: " + rill_last_error());
  lm->model->desc.weight_format = options.weight_format;
  add_family_names(*lm->model, config);
  RILL_CHECK(check_all_used(f, *lm->model, config, shards));
  RILL_CHECK(load_shards(fn, *lm->model, folder, shards));
  if (config.unit_norms || config.zero_norm_biases) RILL_CHECK(set_parameterless_norms(f, *lm->model, config));
  if (const layer::Weight* missing = layer::first_missing_weight(*lm->model)) {
    return fail(RILL_ERROR_IO, f + ": the checkpoint lacks tensor '" + missing->name + "' (shape " +
                                   layer::dims_text(missing->shape) + ")");
  }
  const rill_dtype tables = matrix_dtype(options, lm->dtype);
  RILL_CHECK(store_table(f + ": " + config.embedding_name, ctx, tables, *embedding, embedding_dtype, lm->embedding));
  if (head != nullptr) {
    RILL_CHECK(store_table(f + ": " + config.head_name, ctx, tables, *head, head_dtype, lm->lm_head));
  } else {
    lm->lm_head = lm->embedding;
  }
  if (head_bias != nullptr) {
    RILL_CHECK(store_table(f + ": " + config.head_bias_name, ctx, lm->dtype, *head_bias, head_bias_dtype,
                           lm->head_bias));
  }
  RILL_CHECK(check_block_support(fn, *lm, folder + ": "));
  lm->config = std::move(config);
  out = lm.release();
  return RILL_OK;
}

}  // namespace
}  // namespace rill::lm

extern "C" {

RILL_API void rill_lm_load_options_init(rill_lm_load_options* options) {
  if (options == nullptr) return;
  *options = rill_lm_load_options{};
  options->struct_size = sizeof(rill_lm_load_options);
  options->dtype = RILL_DTYPE_F32;
  options->weight_format = RILL_DTYPE_F32;
}

RILL_API rill_status rill_lm_load(rill_context* ctx, const char* path, const rill_lm_load_options* options,
                                  rill_lm** out) {
  constexpr const char* fn = "rill_lm_load";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (ctx == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ctx: expected a context, got NULL");
    if (path == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": path: expected a model folder, got NULL");
    }
    if (out == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out: expected a pointer, got NULL");
    rill_lm_load_options o;
    rill_lm_load_options_init(&o);
    if (options != nullptr) {
      if (options->struct_size < sizeof(uint32_t)) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                          f + ": options->struct_size: expected sizeof(rill_lm_load_options) = " +
                              std::to_string(sizeof(rill_lm_load_options)) + ", got " +
                              std::to_string(options->struct_size));
      }
      std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof o));
      if (o.override_dtype != 0 && rill_dtype_size(o.dtype) == 0) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                          f + ": options->dtype: expected RILL_DTYPE_F32, _F16 or _BF16 with override_dtype, got " +
                              std::to_string(rill::enum_value(o.dtype)));
      }
      if (o.weight_format != RILL_DTYPE_F32 && !rill::quant::is_block(o.weight_format)) {
        return rill::fail(RILL_ERROR_INVALID_ARGUMENT,
                          f + ": options->weight_format: expected RILL_DTYPE_F32 (matrices in the compute dtype) or "
                              "a block dtype (RILL_DTYPE_Q8_0 ... _Q6_K), got " +
                              rill::enum_name(o.weight_format) +
                              "; for f16 or bf16 matrices, set dtype with override_dtype");
      }
    }
    std::string folder = path;
    while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
    if (rill::lm::ends_with(folder, ".gguf")) return rill::lm::load_gguf(fn, *ctx, folder, o, *out);
    return rill::lm::load(fn, *ctx, folder, o, *out);
  });
}

RILL_API void rill_lm_destroy(rill_lm* lm) { rill::lm::destroy_lm(lm); }

RILL_API rill_model* rill_lm_model(rill_lm* lm) { return lm == nullptr ? nullptr : lm->model; }

RILL_API rill_status rill_lm_get_info(const rill_lm* lm, rill_lm_info* out) {
  constexpr const char* fn = "rill_lm_get_info";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (lm == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": lm: expected a model, got NULL");
    if (out == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out: expected a pointer, got NULL");
    if (out->struct_size < offsetof(rill_lm_info, hidden_size)) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out->struct_size: expected sizeof(rill_lm_info) = " +
                                                         std::to_string(sizeof(rill_lm_info)) + ", got " +
                                                         std::to_string(out->struct_size));
    }
    const rill::lm::HfConfig& c = lm->config;
    rill_lm_info info{};
    info.struct_size = out->struct_size;
    info.vocab_size = c.vocab_size;
    info.hidden_size = c.desc.hidden_size;
    info.num_layers = c.desc.num_layers;
    info.max_position_embeddings = c.max_position_embeddings;
    info.dtype = lm->dtype;
    info.bos_token_id = c.bos_token_id;
    info.eos_token_count = static_cast<int32_t>(c.eos_token_ids.size());
    std::copy(c.eos_token_ids.begin(), c.eos_token_ids.end(), info.eos_token_ids);
    info.do_sample = c.do_sample ? 1u : 0u;
    info.temperature = c.temperature;
    info.top_k = c.top_k;
    info.top_p = c.top_p;
    info.min_p = c.min_p;
    info.repetition_penalty = c.repetition_penalty;
    std::snprintf(info.model_type, sizeof info.model_type, "%s", c.model_type.c_str());
    const auto add_weight = [&info](const rill_tensor* t) {
      if (t == nullptr) return;
      info.weight_bytes += t->nbytes;
      if (t->host_memory != nullptr) info.weight_bytes_mapped += t->nbytes;
    };
    for (const rill::layer::Weight& w : lm->model->weights) add_weight(w.tensor);
    add_weight(lm->embedding);
    if (lm->lm_head != lm->embedding) add_weight(lm->lm_head);
    add_weight(lm->head_bias);
    std::memcpy(out, &info, std::min<size_t>(out->struct_size, sizeof info));
    return RILL_OK;
  });
}

}  // extern "C"
