#include "quantize_source.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <set>

#include "dtype_convert.h"
#include "gguf_names.h"
#include "gguf_types.h"
#include "hf_config.h"
#include "io/json_release.h"
#include "io/text_file.h"
#include "quantize_metadata.h"

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

bool ends_with(const std::string& text, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

// A norm weight (F32, F16 or BF16) in f32 with offset added to each element.
std::vector<unsigned char> offset_norm(const SourceTensor& t, float offset) {
  rill_dtype dtype = RILL_DTYPE_F32;
  rill::gguf::tensor_type_to_rill(t.type_id, dtype);
  const size_t count = static_cast<size_t>(t.dims[0]);
  std::vector<float> values(count);
  rill::convert_to_f32(dtype, t.data, values.data(), count);
  std::vector<unsigned char> bytes(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    const float v = values[i] + offset;
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof(float));
  }
  return bytes;
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
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
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
bool has_every_tensor(const std::vector<SourceTensor>& tensors, const rill::gguf::Architecture& a,
                      const rill_model_desc& desc, bool tied, const std::string& folder, std::string& error) {
  std::set<std::string> have;
  for (const SourceTensor& t : tensors) have.insert(t.name);
  for (const std::string& name :
       rill::gguf::required_tensors(a, desc.num_layers, tied, desc.qkv_bias != 0, desc.o_bias != 0)) {
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
  const std::string config_path = folder + "/config.json";
  json object;
  const rill::io::JsonRelease release(object);
  if (!read_json(config_path, object, error)) return false;
  // The families whose GGUF metadata this writer maps and rill's loader reads
  // back, checked first: another family's keys would be refused before it.
  const auto type = object.find("model_type");
  if (type == object.end() || !type->is_string()) {
    error = config_path + ": 'model_type': expected a string";
    return false;
  }
  const std::string model_type = type->get<std::string>();
  std::string arch;
  for (const auto& [name, architecture] : rill::gguf::architectures()) {
    if (architecture.from_hf_folders && model_type == architecture.model_type) arch = name;
  }
  if (arch.empty()) {
    error = config_path + ": 'model_type': \"" + model_type +
            "\" is not supported from a Hugging Face folder; supported: " + rill::gguf::hf_folder_architectures();
    return false;
  }
  // config.json as rill's loader maps it (every key checked, unknown ones refused).
  rill::lm::HfConfig config;
  if (rill::lm::hf_config_from_json(config_path, object.dump(), config, error) != RILL_OK) return false;
  const rill::gguf::Architecture& a = rill::gguf::architectures().at(arch);
  if (!write_hf_metadata(config, object, config_path, arch, a, writer, error)) return false;
  out.layers = config.desc.num_layers;
  if (config.bos_token_id >= 0) writer.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(config.bos_token_id));
  if (config.eos_token_ids.size() > 1) {
    error = config_path + ": 'eos_token_id': expected one token id (GGUF holds one), got " +
            std::to_string(config.eos_token_ids.size());
    return false;
  }
  if (!config.eos_token_ids.empty()) {
    writer.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(config.eos_token_ids[0]));
  }
  json tokenizer;
  const rill::io::JsonRelease release_tokenizer(tokenizer);
  const std::string tokenizer_path = folder + "/tokenizer.json";
  if (!read_json(tokenizer_path, tokenizer, error) ||
      !write_hf_tokenizer(tokenizer, tokenizer_path, config.vocab_size, arch, writer, error)) {
    return false;
  }
  if (rill::io::open_checkpoint(folder, out.shards, error) != RILL_OK) return false;

  for (const auto& shard : out.shards) {
    for (const rill::io::SafetensorsTensor& t : shard->tensors()) {
      if (ends_with(t.name, "rotary_emb.inv_freq")) continue;
      if (config.tie_word_embeddings && t.name == "lm_head.weight") continue;  // the embedding serves as the head
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
      if (a.norms_hold_offset && ends_with(s.name, "norm.weight")) {
        if (s.dims.size() != 1) {
          error = shard->path() + ": tensor '" + t.name + "': expected a norm weight of 1 dim, got " +
                  std::to_string(s.dims.size());
          return false;
        }
        // Gemma's RMSNorm scales by 1 + w; GGUF stores 1 + w (llama.cpp's norm scales by the weight).
        out.owned.push_back(offset_norm(s, config.desc.norm_weight_offset));
        s.data = out.owned.back().data();
        s.bytes = out.owned.back().size();
        s.type_id = 0;  // F32
      }
      const bool q = s.name.find(".attn_q.") != std::string::npos, k = s.name.find(".attn_k.") != std::string::npos;
      if (a.permuted_qk && (q || k)) {
        const int32_t heads = q || config.desc.num_kv_heads == 0 ? config.desc.num_heads : config.desc.num_kv_heads;
        const uint64_t h = static_cast<uint64_t>(heads), rows = s.dims.back();
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
  return has_every_tensor(out.tensors, a, config.desc, config.tie_word_embeddings, folder, error);
}

}  // namespace rill_cli
