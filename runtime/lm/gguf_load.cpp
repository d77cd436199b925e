// rill_lm_load on a .gguf file: the architecture's metadata mapped onto
// Hugging Face's config.json keys (so the family readers of hf_config.cpp
// stay the one home of the descriptor mapping), GGUF tensor names mapped to
// Hugging Face's, and llama.cpp's q/k row permutation undone for the llama
// architecture (both from gguf_names.h, which `rill quantize` writes with).
// Every metadata key under the architecture's prefix must be
// one rill reads, and every tensor one the model uses: anything else is
// refused by name, so a setting rill does not implement never changes the
// model silently. All-or-nothing, as the folder loader.
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <set>

#include "errors.h"
#include "gguf_names.h"
#include "gguf_reader.h"
#include "gguf_types.h"
#include "io/json_release.h"
#include "lm.h"
#include "model.h"
#include "quant.h"

namespace rill::lm {
namespace {

using nlohmann::json;

struct Refusal {
  rill_status status;
  std::string message;
};

using gguf::Architecture;
using gguf::architectures;

// The architecture's metadata keys ("llama.block_count", ...), each marked
// as it is read; refuse_unread() refuses the first one left.
class ArchKeys {
 public:
  ArchKeys(const gguf::Contents& contents, std::string arch) : contents_(contents), prefix_(std::move(arch) + ".") {}

  [[noreturn]] void refuse(rill_status status, const std::string& key, const std::string& text) const {
    throw Refusal{status, "metadata '" + key + "': " + text};
  }

  const gguf::Value* get(const char* suffix) {
    const std::string key = prefix_ + suffix;
    read_.insert(key);
    return contents_.find(key);
  }

  // An integer from min to INT32_MAX, or fallback (-1: required) when absent.
  int64_t integer(const char* suffix, int64_t fallback, int64_t min = 1) {
    const gguf::Value* v = get(suffix);
    const std::string key = prefix_ + suffix;
    if (v == nullptr) {
      if (fallback < 0) refuse(RILL_ERROR_IO, key, "required, but absent");
      return fallback;
    }
    int64_t value = 0;
    if (!v->as_i64(value)) {
      refuse(RILL_ERROR_IO, key, std::string("expected an integer, got a ") + gguf::value_type_name(v->type()));
    }
    if (value < min || value > INT32_MAX) {
      refuse(RILL_ERROR_IO, key,
             "expected an integer from " + std::to_string(min) + " to " + std::to_string(INT32_MAX) + ", got " +
                 std::to_string(value));
    }
    return value;
  }

  // A real, or fallback when absent (NaN: required).
  double number(const char* suffix, double fallback) {
    const gguf::Value* v = get(suffix);
    const std::string key = prefix_ + suffix;
    if (v == nullptr) {
      if (std::isnan(fallback)) refuse(RILL_ERROR_IO, key, "required, but absent");
      return fallback;
    }
    double value = 0;
    if (!v->as_f64(value)) {
      refuse(RILL_ERROR_IO, key, std::string("expected a number, got a ") + gguf::value_type_name(v->type()));
    }
    return value;
  }

  void refuse_unread() const {
    for (const gguf::KeyValue& kv : contents_.metadata) {
      const std::string key(kv.key);
      if (key.compare(0, prefix_.size(), prefix_) == 0 && read_.count(key) == 0) {
        refuse(RILL_ERROR_UNSUPPORTED, key,
               "not understood for this architecture; rill refuses metadata it does not implement, since it may "
               "change the computation (docs/GGUF.md)");
      }
    }
  }

 private:
  const gguf::Contents& contents_;
  const std::string prefix_;
  std::set<std::string> read_;
};

// An id from the tokenizer's metadata, or -1 when absent.
int64_t token_id(const gguf::Contents& c, const char* key) {
  const gguf::Value* v = c.find(key);
  int64_t id = -1;
  if (v != nullptr && (!v->as_i64(id) || id < 0 || id > INT32_MAX)) {
    throw Refusal{RILL_ERROR_IO, std::string("metadata '") + key + "': expected a token id"};
  }
  return id;
}

// The architecture's metadata as the text of a config.json object.
std::string config_json(const gguf::Contents& c, const std::string& arch, const Architecture& a) {
  ArchKeys k(c, arch);
  json config = json::object();
  const io::JsonRelease release(config);  // also when a key is refused part-way
  config["model_type"] = a.model_type;
  const int64_t hidden = k.integer("embedding_length", -1);
  const int64_t heads = k.integer("attention.head_count", -1);
  config["hidden_size"] = hidden;
  config["num_hidden_layers"] = k.integer("block_count", -1);
  config["intermediate_size"] = k.integer("feed_forward_length", -1);
  config["num_attention_heads"] = heads;
  config["num_key_value_heads"] = k.integer("attention.head_count_kv", heads);
  config["rms_norm_eps"] = k.number("attention.layer_norm_rms_epsilon", std::nan(""));
  config["rope_theta"] = k.number("rope.freq_base", 10000.0);
  if (const int64_t context = k.integer("context_length", 0, 0); context > 0) {
    config["max_position_embeddings"] = context;
  }
  const int64_t head_dim = k.integer("attention.key_length", hidden / heads);
  if (k.integer("attention.value_length", head_dim) != head_dim) {
    k.refuse(RILL_ERROR_UNSUPPORTED, arch + ".attention.value_length", "differs from attention.key_length");
  }
  if (head_dim != hidden / heads || a.norms_hold_offset) config["head_dim"] = head_dim;
  if (k.integer("rope.dimension_count", head_dim) != head_dim) {
    k.refuse(RILL_ERROR_UNSUPPORTED, arch + ".rope.dimension_count",
             "rotates part of each head; rill's " + arch + " rotates all " + std::to_string(head_dim) + " dims");
  }
  const gguf::TensorInfo* embedding = c.find_tensor("token_embd.weight");
  if (embedding == nullptr) throw Refusal{RILL_ERROR_IO, "lacks tensor 'token_embd.weight' (the token embedding)"};
  config["vocab_size"] = k.integer("vocab_size", static_cast<int64_t>(embedding->dims.back()));
  config["tie_word_embeddings"] = c.find_tensor("output.weight") == nullptr;
  if (arch == "qwen2" || arch == "qwen3") config["use_sliding_window"] = false;
  if (a.layers_27b != 0) {
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
      if (const double cap = k.number(key, -1.0); cap >= 0) config[key] = cap;
    }
    // The file does not say how queries are scaled; llama.cpp scales by
    // 1/sqrt(head_dim), and by 1/sqrt(hidden / heads) for the 27B models, as
    // their published configs do.
    config["query_pre_attn_scalar"] =
        config["num_hidden_layers"].get<int64_t>() == a.layers_27b ? hidden / heads : head_dim;
  }
  if (arch == "gemma2" && k.get("attention.sliding_window") != nullptr) {
    config["sliding_window"] = k.integer("attention.sliding_window", 0, 0);
  }
  if (arch == "gemma3") {
    // The file says neither which layers slide nor how the sliding ones
    // rotate: llama.cpp fixes both for gemma3 (every 6th layer global, local
    // theta 10000), as Gemma 3's configs do, unless sliding_window_pattern
    // is given.
    config["sliding_window"] = k.integer("attention.sliding_window", -1);
    config["sliding_window_pattern"] = k.integer("attention.sliding_window_pattern", 6);
    config["rope_local_base_freq"] = 10000.0;
    // Gemma 3 4B and larger scale RoPE linearly; in Hugging Face's code the
    // scaling applies to the global layers only, which the family reader
    // keeps (the sliding ones rotate with rope_local_base_freq, unscaled).
    if (const gguf::Value* type = k.get("rope.scaling.type")) {
      std::string_view name;
      if (!type->as_string(name)) {
        k.refuse(RILL_ERROR_IO, arch + ".rope.scaling.type",
                 std::string("expected a string, got a ") + gguf::value_type_name(type->type()));
      }
      if (name == "linear") {
        const double factor = k.number("rope.scaling.factor", std::nan(""));
        if (!(factor >= 1.0)) {
          k.refuse(RILL_ERROR_IO, arch + ".rope.scaling.factor",
                   "expected a factor >= 1, got " + std::to_string(factor));
        }
        config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor}};
      } else if (name != "none") {
        k.refuse(RILL_ERROR_UNSUPPORTED, arch + ".rope.scaling.type",
                 "\"" + std::string(name) + "\" is not supported for gemma3; rill reads \"linear\" and \"none\"");
      }
    }
  }
  if (arch == "phi3") {
    // 0 (what the converter writes for none) is no window for the family reader too.
    config["sliding_window"] = k.integer("attention.sliding_window", 0, 0);
    if (const int64_t original = k.integer("rope.scaling.original_context_length", 0, 0); original > 0) {
      config["original_max_position_embeddings"] = original;
    }
  }
  k.refuse_unread();

  if (const int64_t bos = token_id(c, "tokenizer.ggml.bos_token_id"); bos >= 0) config["bos_token_id"] = bos;
  if (const int64_t eos = token_id(c, "tokenizer.ggml.eos_token_id"); eos >= 0) config["eos_token_id"] = eos;
  // The compute dtype follows the embedding table, as torch_dtype does; f32
  // for a block table.
  rill_dtype dtype = RILL_DTYPE_F32;
  if (gguf::tensor_type_to_rill(embedding->type_id, dtype)) {
    if (quant::is_block(dtype)) dtype = RILL_DTYPE_F32;
    config["torch_dtype"] = dtype == RILL_DTYPE_F16 ? "float16" : dtype == RILL_DTYPE_BF16 ? "bfloat16" : "float32";
  }
  return config.dump();
}

// Hugging Face's name for a GGUF tensor; refuses a name rill does not map.
std::string hf_name(const std::string& name, const Architecture& a) {
  std::string out;
  if (!gguf::hf_tensor_name(name, a, out)) {
    throw Refusal{RILL_ERROR_UNSUPPORTED, "tensor '" + name + "' is not one rill maps for this architecture"};
  }
  return out;
}

struct Views {
  std::vector<io::SafetensorsTensor> tensors;
  std::vector<std::vector<unsigned char>> owned;  // unpermuted copies the views point to
};

// Every tensor as a view under Hugging Face's name. With in_place each is
// owned by the file that maps it, to be read in place, but for the unpermuted
// q and k; without it (rill_lm_load_options.copy_weights) none is: all copied.
Views tensor_views(const std::shared_ptr<const gguf::File>& file, const Architecture& a, const rill_model_desc& desc,
                   bool in_place) {
  const gguf::Contents& c = file->contents();
  Views views;
  for (const gguf::TensorInfo& info : c.tensors) {
    const std::string name(info.name);
    rill_dtype dtype = RILL_DTYPE_F32;
    if (!gguf::tensor_type_to_rill(info.type_id, dtype)) {
      throw Refusal{RILL_ERROR_UNSUPPORTED, "tensor '" + name + "' has type " +
                                                gguf::tensor_type_traits(info.type_id)->name +
                                                ", which rill does not run; F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, "
                                                "Q4_K, Q5_K and Q6_K are supported"};
    }
    io::SafetensorsTensor view;
    view.name = hf_name(name, a);
    view.dtype = rill_dtype_name(dtype);  // rill's name: a view may hold a block dtype
    for (auto d = info.dims.rbegin(); d != info.dims.rend(); ++d) view.shape.push_back(static_cast<int64_t>(*d));
    view.data = info.data;
    view.bytes = info.bytes;
    if (in_place) view.owner = file;
    const bool q = view.name.find("self_attn.q_proj.") != std::string::npos;
    const bool k = view.name.find("self_attn.k_proj.") != std::string::npos;
    if (a.permuted_qk && (q || k)) {
      const uint64_t heads = static_cast<uint64_t>(q ? desc.num_heads : desc.num_kv_heads);
      const uint64_t rows = static_cast<uint64_t>(view.shape[0]);
      if (heads == 0 || rows % (2 * heads) != 0) {
        throw Refusal{RILL_ERROR_SHAPE, "tensor '" + name + "': " + std::to_string(rows) +
                                            " rows do not split into " + std::to_string(heads) + " heads"};
      }
      views.owned.push_back(gguf::unpermute_rows(info.data, rows, info.bytes / rows, heads));
      view.data = views.owned.back().data();
      view.owner = nullptr;
    }
    views.tensors.push_back(std::move(view));
  }
  return views;
}

const io::SafetensorsTensor* find_view(const Views& views, const std::string& name) {
  for (const io::SafetensorsTensor& t : views.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

rill_status load_gguf(const char* fn, rill_context& ctx, const std::string& path, const rill_lm_load_options& options,
                      rill_lm*& out) {
  const std::string where = std::string(fn) + ": " + path + ": ";
  std::unique_ptr<gguf::File> opened;
  std::string error;
  if (const rill_status status = gguf::File::open(path, opened, error); status != RILL_OK) {
    return fail(status, where + error);
  }
  // The map lives as long as the last tensor read in place from it.
  const std::shared_ptr<const gguf::File> file(std::move(opened));
  const gguf::Contents& contents = file->contents();
  try {
    const gguf::Value* arch_value = contents.find("general.architecture");
    std::string_view arch_name;
    if (arch_value == nullptr || !arch_value->as_string(arch_name)) {
      return fail(RILL_ERROR_IO, where + "metadata 'general.architecture': expected a string");
    }
    const std::string arch(arch_name);
    const auto found = architectures().find(arch);
    if (found == architectures().end()) {
      return fail(RILL_ERROR_UNSUPPORTED, where + "architecture \"" + arch + "\" is not supported; supported: " +
                                              gguf::supported_architectures());
    }
    HfConfig config;
    if (const rill_status mapped = hf_config_from_json(path + " (its " + arch + " metadata as config.json)",
                                                       config_json(contents, arch, found->second), config, error);
        mapped != RILL_OK) {
      return fail(mapped, std::string(fn) + ": " + error);
    }
    if (options.override_dtype == 0 && !config.torch_dtype_problem.empty()) {
      return fail(RILL_ERROR_UNSUPPORTED, where + config.torch_dtype_problem);
    }
    config.desc.dtype = options.override_dtype != 0 ? options.dtype : config.torch_dtype;
    // The file's norms already hold 1 + w: stored as they are.
    if (found->second.norms_hold_offset) config.desc.norm_weight_offset = 0.0f;
    Views views = tensor_views(file, found->second, config.desc, options.copy_weights == 0);
    const std::vector<int64_t> table = {config.vocab_size, config.desc.hidden_size};
    const io::SafetensorsTensor* embedding = find_view(views, config.embedding_name);
    const io::SafetensorsTensor* head = config.tie_word_embeddings ? nullptr : find_view(views, config.head_name);
    for (const io::SafetensorsTensor* t : {embedding, head}) {
      if (t != nullptr && t->shape != table) {
        return fail(RILL_ERROR_SHAPE, where + "tensor '" + t->name + "': expected shape " + layer::dims_text(table) +
                                          " (vocab, hidden), got " + layer::dims_text(t->shape));
      }
    }

    std::unique_ptr<rill_lm, LmDeleter> lm(new rill_lm());
    lm->context = &ctx;
    lm->dtype = config.desc.dtype;
    const rill_status created = rill_model_create(&ctx, &config.desc, &lm->model);
    if (created != RILL_OK) return fail(created, where + rill_last_error());
    lm->model->desc.weight_format = options.weight_format;
    add_family_names(*lm->model, config);
    for (const io::SafetensorsTensor& t : views.tensors) {
      const bool used = lm->model->weight_index.count(t.name) != 0 || lm->model->fused_index.count(t.name) != 0 ||
                        t.name == config.embedding_name || t.name == config.head_name;
      if (!used) {
        return fail(RILL_ERROR_IO, where + "tensor '" + t.name + "' is not a weight of this " + arch +
                                       " model as its metadata describes it");
      }
    }
    RILL_CHECK(layer::load_tensors(fn, *lm->model, path, views.tensors));
    if (const layer::Weight* missing = layer::first_missing_weight(*lm->model)) {
      return fail(RILL_ERROR_IO, where + "lacks the tensor for '" + missing->name + "' (shape " +
                                     layer::dims_text(missing->shape) + ")");
    }
    rill_dtype source = RILL_DTYPE_F32;
    quant::dtype_from_name(embedding->dtype, source);
    const rill_dtype tables = matrix_dtype(options, lm->dtype);
    RILL_CHECK(store_table(where + "token_embd.weight", ctx, tables, *embedding, source, lm->embedding));
    if (head != nullptr) {
      quant::dtype_from_name(head->dtype, source);
      RILL_CHECK(store_table(where + "output.weight", ctx, tables, *head, source, lm->lm_head));
    } else {
      lm->lm_head = lm->embedding;
    }
    RILL_CHECK(check_block_support(fn, *lm, path + ": "));
    lm->config = std::move(config);
    out = lm.release();
    return RILL_OK;
  } catch (const Refusal& r) {
    return fail(r.status, where + r.message);
  }
}

}  // namespace rill::lm
