// config.json, as rill's descriptor maps it, written as a GGUF
// architecture's metadata keys: the inverse of the GGUF loader's mapping
// (runtime/lm/gguf_load.cpp), with the keys llama.cpp's converter writes.
// A setting the keys cannot carry is refused by the config.json key that set
// it, since rill's loader would read the file back without it.
#include "quantize_metadata.h"

namespace rill_cli {
namespace {

struct Uncarried {
  const char* key;
  bool present;
  const char* why;
};

bool is_gemma(const std::string& arch) { return arch.compare(0, 5, "gemma") == 0; }

// The refusals of what arch's keys cannot carry; false with error naming the first.
bool check_carried(const rill::lm::HfConfig& config, const nlohmann::json& object, const std::string& source,
                   const std::string& arch, const rill::gguf::Architecture& a, int32_t head_dim, std::string& error) {
  const rill_model_desc& d = config.desc;
  const bool gemma = is_gemma(arch);
  // The query scale as the loader assumes it.
  const float query_scalar = static_cast<float>(d.num_layers == a.layers_27b ? d.hidden_size / d.num_heads : head_dim);
  for (const Uncarried& u :
       {Uncarried{gemma ? "hidden_activation" : "hidden_act",
                  d.activation != (gemma ? RILL_MLP_GELU_TANH_GLU : RILL_MLP_SILU_GLU),
                  "GGUF's architecture implies its family's activation"},
        Uncarried{"rope_scaling",
                  d.rope_type != RILL_ROPE_DEFAULT && !(arch == "gemma3" && d.rope_type == RILL_ROPE_LINEAR),
                  "rill writes no rope scaling keys for it"},
        Uncarried{"partial_rotary_factor", d.rope_dim != 0 && d.rope_dim != head_dim,
                  "rill's loader rotates every dim of a head"},
        Uncarried{"mlp_bias", d.mlp_bias != 0, "GGUF's architecture has no MLP biases"},
        Uncarried{"attention_bias", (d.qkv_bias != 0) != (arch == "qwen2") || d.o_bias != 0,
                  "GGUF's architecture fixes its attention biases"},
        Uncarried{arch.compare(0, 4, "qwen") == 0 ? "use_sliding_window" : "sliding_window",
                  !a.sliding_window_key && d.sliding_window != 0, "GGUF's architecture has no sliding window"},
        Uncarried{"query_pre_attn_scalar",
                  a.layers_27b != 0 && d.query_pre_attn_scalar != query_scalar,
                  "GGUF holds no query scale; readers assume head_dim, or hidden_size / heads for 27B"},
        Uncarried{"rope_local_base_freq",
                  arch == "gemma3" && d.sliding_window != 0 && d.rope_local_base_freq != 10000.0f,
                  "GGUF holds no local theta; readers assume 10000"}}) {
    if (u.present) {
      const auto given = object.find(u.key);
      error = source + ": '" + u.key + "': GGUF's " + arch + " cannot carry it (" + u.why + "), got " +
              (given != object.end() ? given->dump() : "its default");
      return false;
    }
  }
  return true;
}

// The keys of arch's own features: Gemma 2's and 3's soft-caps and windows,
// Gemma 3's rope scaling, Phi-3's window and original context.
void write_family_keys(const rill::lm::HfConfig& config, const nlohmann::json& object, const std::string& arch,
                       const rill::gguf::Architecture& a, rill::gguf::Writer& w) {
  const rill_model_desc& d = config.desc;
  const std::string p = arch + ".";
  if (arch == "gemma2" || (arch == "gemma3" && (d.attn_logit_softcapping > 0 || config.final_logit_softcapping > 0))) {
    w.set_f32(p + "attn_logit_softcapping", d.attn_logit_softcapping);
    w.set_f32(p + "final_logit_softcapping", config.final_logit_softcapping);
  }
  if (a.sliding_window_key) {
    w.set_u32(p + "attention.sliding_window", static_cast<uint32_t>(d.sliding_window));
  }
  if (arch == "gemma3" && d.sliding_window != 0 && d.sliding_window_pattern != 6) {
    w.set_u32(p + "attention.sliding_window_pattern", static_cast<uint32_t>(d.sliding_window_pattern));
  }
  if (arch == "gemma3" && d.rope_type == RILL_ROPE_LINEAR) {
    w.set_string(p + "rope.scaling.type", "linear");
    w.set_f32(p + "rope.scaling.factor", d.rope_factor);
  }
  const auto original = object.find("original_max_position_embeddings");
  if (arch == "phi3" && original != object.end() && original->is_number_integer() && original->get<int64_t>() > 0) {
    w.set_u32(p + "rope.scaling.original_context_length", original->get<uint32_t>());
  }
}

}  // namespace

bool write_hf_metadata(const rill::lm::HfConfig& config, const nlohmann::json& object, const std::string& source,
                       const std::string& arch, const rill::gguf::Architecture& a, rill::gguf::Writer& w,
                       std::string& error) {
  const rill_model_desc& d = config.desc;
  const int32_t quotient = d.hidden_size / d.num_heads;
  const int32_t head_dim = d.head_dim != 0 ? d.head_dim : quotient;  // 0: the quotient
  if (!check_carried(config, object, source, arch, a, head_dim, error)) return false;
  const std::string p = arch + ".";
  w.set_string("general.architecture", arch);
  w.set_u32(p + "block_count", static_cast<uint32_t>(d.num_layers));
  if (config.max_position_embeddings > 0) {
    w.set_u32(p + "context_length", static_cast<uint32_t>(config.max_position_embeddings));
  }
  w.set_u32(p + "embedding_length", static_cast<uint32_t>(d.hidden_size));
  w.set_u32(p + "feed_forward_length", static_cast<uint32_t>(d.intermediate_size));
  w.set_u32(p + "attention.head_count", static_cast<uint32_t>(d.num_heads));
  w.set_u32(p + "attention.head_count_kv", static_cast<uint32_t>(d.num_kv_heads != 0 ? d.num_kv_heads : d.num_heads));
  w.set_f32(p + "rope.freq_base", d.rope_theta);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", d.norm_eps);
  w.set_u32(p + "rope.dimension_count", static_cast<uint32_t>(head_dim));  // every dim rotates
  // As llama.cpp's converter: whenever config.json names head_dim.
  if (head_dim != quotient || object.contains("head_dim")) {
    w.set_u32(p + "attention.key_length", static_cast<uint32_t>(head_dim));
    w.set_u32(p + "attention.value_length", static_cast<uint32_t>(head_dim));
  }
  w.set_u32(p + "vocab_size", static_cast<uint32_t>(config.vocab_size));
  write_family_keys(config, object, arch, a, w);
  return true;
}

}  // namespace rill_cli
