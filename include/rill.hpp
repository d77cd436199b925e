/*
 * rill.hpp — a header-only C++17 convenience layer over rill.h.
 *
 * It adds ownership and exceptions, nothing else: every C handle stays
 * reachable through get(), and every C function can still be called directly
 * (wrap its status in rill::check()). Nothing here is part of librill's ABI.
 *
 *   rill::Context ctx("[runtime]\nbackend = \"cpu\"\n");
 *   rill::Tensor x(ctx, RILL_DTYPE_F32, {4, 64});
 *   x.write_f32(values);
 *   rill::rms_norm(ctx, x, nullptr, 1e-6f, x);
 *   std::vector<float> y = x.read_f32();
 *
 * Every failing call throws rill::Error carrying the status and
 * rill_last_error()'s message.
 */
#ifndef RILL_HPP
#define RILL_HPP

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "rill.h"

namespace rill {

/* A failed rill call: its status and the message of rill_last_error(). */
class Error : public std::runtime_error {
 public:
  Error(rill_status status, const std::string& message)
      : std::runtime_error(std::string(rill_status_string(status)) + ": " + message), status_(status) {}
  rill_status status() const noexcept { return status_; }

 private:
  rill_status status_;
};

/* Throws rill::Error unless status is RILL_OK. */
inline void check(rill_status status) {
  if (status != RILL_OK) throw Error(status, rill_last_error());
}

/* Owns a rill_context. Move-only. */
class Context {
 public:
  /* config_toml: TOML text, or nullptr / "" for the defaults (see rill.h). */
  explicit Context(const char* config_toml = nullptr) {
    rill_context* raw = nullptr;
    check(rill_context_create(config_toml, &raw));
    handle_.reset(raw);
  }
  explicit Context(const std::string& config_toml) : Context(config_toml.c_str()) {}

  static Context from_file(const std::string& path) {
    rill_context* raw = nullptr;
    check(rill_context_create_from_file(path.c_str(), &raw));
    return Context(raw);
  }

  rill_context* get() const noexcept { return handle_.get(); }
  const char* backend_name() const noexcept { return rill_context_backend_name(get()); }
  const char* device_name() const noexcept { return rill_context_device_name(get()); }
  const char* selection_report() const noexcept { return rill_context_selection_report(get()); }
  void synchronize() { check(rill_context_synchronize(get())); }

 private:
  explicit Context(rill_context* raw) : handle_(raw) {}
  struct Destroy {
    void operator()(rill_context* c) const noexcept { rill_context_destroy(c); }
  };
  std::unique_ptr<rill_context, Destroy> handle_;
};

/* Owns a rill_tensor. Move-only; must be destroyed before its Context (declare
   tensors after the context they belong to). */
class Tensor {
 public:
  Tensor(const Context& ctx, rill_dtype dtype, std::initializer_list<int64_t> shape)
      : Tensor(ctx, dtype, std::vector<int64_t>(shape)) {}
  Tensor(const Context& ctx, rill_dtype dtype, const std::vector<int64_t>& shape) {
    rill_tensor* raw = nullptr;
    check(rill_tensor_create(ctx.get(), dtype, static_cast<int32_t>(shape.size()), shape.data(), &raw));
    handle_.reset(raw);
  }

  rill_tensor* get() const noexcept { return handle_.get(); }
  rill_dtype dtype() const noexcept { return rill_tensor_dtype(get()); }
  int32_t ndim() const noexcept { return rill_tensor_ndim(get()); }
  int64_t dim(int32_t index) const noexcept { return rill_tensor_dim(get(), index); }
  size_t numel() const noexcept { return rill_tensor_numel(get()); }
  size_t nbytes() const noexcept { return rill_tensor_nbytes(get()); }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> dims(static_cast<size_t>(ndim()));
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = dim(static_cast<int32_t>(i));
    return dims;
  }

  /* Float values, converted to the tensor's dtype; size must equal numel(). */
  void write_f32(const std::vector<float>& values) { check(rill_tensor_write_f32(get(), values.data(), values.size())); }
  std::vector<float> read_f32() const {
    std::vector<float> values(numel());
    check(rill_tensor_read_f32(get(), values.data(), values.size()));
    return values;
  }
  /* Raw bytes in the tensor's dtype; bytes must equal nbytes(). */
  void write(const void* src, size_t bytes) { check(rill_tensor_write(get(), src, bytes)); }
  void read(void* dst, size_t bytes) const { check(rill_tensor_read(get(), dst, bytes)); }

 private:
  struct Destroy {
    void operator()(rill_tensor* t) const noexcept { rill_tensor_destroy(t); }
  };
  std::unique_ptr<rill_tensor, Destroy> handle_;
};

/* The operators of rill.h. Optional operands are pointers (nullptr = none). */
inline const rill_tensor* raw(const Tensor* t) noexcept { return t ? t->get() : nullptr; }

inline void residual_add(Context& ctx, Tensor& residual, const Tensor& update, const Tensor* gain = nullptr,
                         float residual_scale = 1.0f, float update_scale = 1.0f) {
  check(rill_residual_add(ctx.get(), residual.get(), update.get(), raw(gain), residual_scale, update_scale));
}

inline void rms_norm(Context& ctx, const Tensor& x, const Tensor* weight, float eps, Tensor& out) {
  check(rill_rms_norm(ctx.get(), x.get(), raw(weight), eps, out.get()));
}

inline void layer_norm(Context& ctx, const Tensor& x, const Tensor* weight, const Tensor* bias, float eps,
                       Tensor& out) {
  check(rill_layer_norm(ctx.get(), x.get(), raw(weight), raw(bias), eps, out.get()));
}

inline void fused_add_rms_norm(Context& ctx, Tensor& x, Tensor& residual, const Tensor* gain, const Tensor* weight,
                               float eps, float residual_scale = 1.0f, float update_scale = 1.0f) {
  check(rill_fused_add_rms_norm(ctx.get(), x.get(), residual.get(), raw(gain), raw(weight), eps, residual_scale,
                                update_scale));
}

inline void fused_add_layer_norm(Context& ctx, Tensor& x, Tensor& residual, const Tensor* gain, const Tensor* weight,
                                 const Tensor* bias, float eps, float residual_scale = 1.0f,
                                 float update_scale = 1.0f) {
  check(rill_fused_add_layer_norm(ctx.get(), x.get(), residual.get(), raw(gain), raw(weight), raw(bias), eps,
                                  residual_scale, update_scale));
}

inline void gemm(Context& ctx, const Tensor& a, const Tensor& w, const Tensor* bias, float alpha, float beta,
                 Tensor& out) {
  check(rill_gemm(ctx.get(), a.get(), w.get(), raw(bias), alpha, beta, out.get()));
}

inline void rope(Context& ctx, Tensor& x, const std::vector<int32_t>& positions, float theta, int32_t rotary_dim) {
  check(rill_rope(ctx.get(), x.get(), positions.data(), positions.size(), theta, rotary_dim));
}

inline void rope_freqs(Context& ctx, Tensor& x, const std::vector<int32_t>& positions,
                       const std::vector<float>& inv_freq, float attention_factor, int32_t rotary_dim) {
  check(rill_rope_freqs(ctx.get(), x.get(), positions.data(), positions.size(), inv_freq.data(), inv_freq.size(),
                        attention_factor, rotary_dim));
}

/* kv_lengths: one per sequence, or empty for "every sequence holds S keys". */
inline void attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                      const std::vector<int32_t>& kv_lengths, float scale, Tensor& out) {
  check(rill_attention(ctx.get(), q.get(), k.get(), v.get(), kv_lengths.empty() ? nullptr : kv_lengths.data(),
                       kv_lengths.size(), scale, out.get()));
}

/* rill_attention_ex: with params' sliding window and logit soft-cap. */
inline void attention_ex(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                         const std::vector<int32_t>& kv_lengths, const rill_attention_params& params, Tensor& out) {
  check(rill_attention_ex(ctx.get(), q.get(), k.get(), v.get(), kv_lengths.empty() ? nullptr : kv_lengths.data(),
                          kv_lengths.size(), &params, out.get()));
}

inline void activation(Context& ctx, rill_act_fn fn, const Tensor& x, const Tensor* up, Tensor& out) {
  check(rill_activation(ctx.get(), fn, x.get(), raw(up), out.get()));
}

/* Owns a rill_model (a decoder stack and its weights). Move-only; destroy it
   before its Context and after its KvCaches. */
class Model {
 public:
  Model(const Context& ctx, const rill_model_desc& desc) {
    rill_model* raw_model = nullptr;
    check(rill_model_create(ctx.get(), &desc, &raw_model));
    handle_.reset(raw_model);
  }

  rill_model* get() const noexcept { return handle_.get(); }

  /* f32 values of the weight's shape; the runtime converts them to the model dtype. */
  void set_weight(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    check(rill_model_set_weight(get(), name.c_str(), RILL_DTYPE_F32, static_cast<int32_t>(shape.size()),
                                shape.data(), values.data(), values.size() * sizeof(float)));
  }
  void load_safetensors(const std::string& path) { check(rill_model_load_safetensors(get(), path.c_str())); }
  void check_weights() const { check(rill_model_check_weights(get())); }

 private:
  struct Destroy {
    void operator()(rill_model* m) const noexcept { rill_model_destroy(m); }
  };
  std::unique_ptr<rill_model, Destroy> handle_;
};

/* Owns a rill_kv_cache. Move-only; destroy it before its Model. */
class KvCache {
 public:
  KvCache(const Model& model, int32_t batch, int32_t capacity) : KvCache(model.get(), batch, capacity) {}
  /* A cache of a decoder stack held elsewhere (Lm::model()). */
  KvCache(rill_model* stack, int32_t batch, int32_t capacity) {
    rill_kv_cache* raw_cache = nullptr;
    check(rill_kv_cache_create(stack, batch, capacity, &raw_cache));
    handle_.reset(raw_cache);
  }

  rill_kv_cache* get() const noexcept { return handle_.get(); }
  int32_t length(int32_t sequence) const {
    int32_t tokens = 0;
    check(rill_kv_cache_get_length(get(), sequence, &tokens));
    return tokens;
  }
  void set_length(int32_t sequence, int32_t length) { check(rill_kv_cache_set_length(get(), sequence, length)); }

 private:
  struct Destroy {
    void operator()(rill_kv_cache* c) const noexcept { rill_kv_cache_destroy(c); }
  };
  std::unique_ptr<rill_kv_cache, Destroy> handle_;
};

/* Runs hidden [B, T, D] through the model in place; cache nullptr = plain prefill.
   positions: B*T RoPE positions, or empty for the defaults. */
inline void forward(Model& model, KvCache* cache, Tensor& hidden, const std::vector<int32_t>& positions = {}) {
  check(rill_model_forward(model.get(), cache ? cache->get() : nullptr, hidden.get(),
                           positions.empty() ? nullptr : positions.data(), positions.size()));
}

/* Owns a rill_tokenizer: a tokenizer.json file, or a folder holding one.
   Move-only. Its methods are const and may be called from several threads. */
class Tokenizer {
 public:
  explicit Tokenizer(const std::string& path) {
    rill_tokenizer* raw_tokenizer = nullptr;
    check(rill_tokenizer_load(path.c_str(), &raw_tokenizer));
    handle_.reset(raw_tokenizer);
  }

  rill_tokenizer* get() const noexcept { return handle_.get(); }

  int32_t vocab_size() const {
    int32_t size = 0;
    check(rill_tokenizer_vocab_size(get(), &size));
    return size;
  }
  /* The ids of text (UTF-8), with the post-processor's special tokens when add_special_tokens. */
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true) const {
    size_t count = 0;
    check(rill_tokenizer_encode(get(), text.data(), text.size(), add_special_tokens, nullptr, 0, &count));
    std::vector<int32_t> ids(count);
    check(rill_tokenizer_encode(get(), text.data(), text.size(), add_special_tokens, ids.data(), ids.size(), &count));
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const {
    size_t required = 0;
    check(rill_tokenizer_decode(get(), ids.data(), ids.size(), skip_special_tokens, nullptr, 0, &required));
    std::string text(required, '\0');
    check(rill_tokenizer_decode(get(), ids.data(), ids.size(), skip_special_tokens, &text[0], text.size(), &required));
    text.resize(required - 1);
    return text;
  }
  /* Throws rill::Error with RILL_ERROR_NOT_FOUND when no token is spelled so. */
  int32_t token_to_id(const std::string& token) const {
    int32_t id = -1;
    check(rill_tokenizer_token_to_id(get(), token.c_str(), &id));
    return id;
  }

 private:
  struct Destroy {
    void operator()(rill_tokenizer* t) const noexcept { rill_tokenizer_destroy(t); }
  };
  std::unique_ptr<rill_tokenizer, Destroy> handle_;
};

/* Owns a rill_detokenizer: decodes one id at a time, never half a character.
   Move-only; destroy it before its Tokenizer. */
class Detokenizer {
 public:
  explicit Detokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false) {
    rill_detokenizer* raw_detokenizer = nullptr;
    check(rill_detokenizer_create(tokenizer.get(), skip_special_tokens, &raw_detokenizer));
    handle_.reset(raw_detokenizer);
  }

  rill_detokenizer* get() const noexcept { return handle_.get(); }

  /* The text that id completes (possibly empty). */
  std::string push(int32_t id) {
    return take([&](char* buf, size_t size, size_t* len) { return rill_detokenizer_push(get(), id, buf, size, len); });
  }
  /* The end of the stream: what is still held back. */
  std::string flush() {
    return take([&](char* buf, size_t size, size_t* len) { return rill_detokenizer_flush(get(), buf, size, len); });
  }

 private:
  /* Sizes the text with a first call (which consumes nothing), then takes it. */
  template <class Call>
  static std::string take(Call call) {
    size_t len = 0;
    check(call(nullptr, 0, &len));
    std::string text(len + 1, '\0');
    check(call(&text[0], text.size(), &len));
    text.resize(len);
    return text;
  }
  struct Destroy {
    void operator()(rill_detokenizer* d) const noexcept { rill_detokenizer_destroy(d); }
  };
  std::unique_ptr<rill_detokenizer, Destroy> handle_;
};

/* Owns a rill_lm: a Hugging Face model folder loaded onto a Context.
   Move-only; destroy it before its Context and after its Sessions. */
class LanguageModel {
 public:
  /* options: nullptr for the defaults (the checkpoint's dtype). */
  LanguageModel(const Context& ctx, const std::string& path, const rill_lm_load_options* options = nullptr) {
    rill_lm* raw = nullptr;
    check(rill_lm_load(ctx.get(), path.c_str(), options, &raw));
    handle_.reset(raw);
    vocab_size_ = info().vocab_size;
  }

  rill_lm* get() const noexcept { return handle_.get(); }
  rill_lm_info info() const {
    rill_lm_info out{};
    out.struct_size = sizeof(out);
    check(rill_lm_get_info(get(), &out));
    return out;
  }
  /* The decoder stack, owned by the LanguageModel: for KvCache(lm.model(), batch, capacity). */
  rill_model* model() const noexcept { return rill_lm_model(get()); }

  /* Logits [batch, tokens, vocab] (last_only: [batch, vocab]) of ids [batch * tokens]. */
  std::vector<float> logits(KvCache* cache, int32_t batch, const std::vector<int32_t>& ids, bool last_only = false) {
    const int32_t tokens = batch > 0 ? static_cast<int32_t>(ids.size() / static_cast<size_t>(batch)) : 0;
    const size_t rows = static_cast<size_t>(last_only ? batch : batch * tokens);
    std::vector<float> out(rows * static_cast<size_t>(vocab_size_));
    check(rill_lm_logits(get(), cache ? cache->get() : nullptr, batch, tokens, ids.data(), last_only ? 1u : 0u,
                         out.data(), out.size()));
    return out;
  }

 private:
  struct Destroy {
    void operator()(rill_lm* lm) const noexcept { rill_lm_destroy(lm); }
  };
  std::unique_ptr<rill_lm, Destroy> handle_;
  int32_t vocab_size_ = 0; /* read once: logits() sizes every result by it */
};

/* Owns a rill_session: one conversation with a language model. Move-only;
   destroy it before its rill_lm.

     rill::Session session(lm.get());        // options from generation_config.json
     session.set_tokenizer(tokenizer);
     session.append_text("Once upon a time", true);
     rill_stop_reason why = RILL_STOP_NONE;
     while (why == RILL_STOP_NONE)
       why = session.step(1, [](int32_t id, std::string_view text) { ...; return false; });
*/
class Session {
 public:
  /* options: nullptr for rill_session_options_init(options, lm). */
  explicit Session(rill_lm* lm, const rill_session_options* options = nullptr) {
    rill_session* raw = nullptr;
    check(rill_session_create(lm, options, &raw));
    handle_.reset(raw);
  }

  rill_session* get() const noexcept { return handle_.get(); }

  /* The tokenizer must outlive the session (or be detached with nullptr). */
  void set_tokenizer(const Tokenizer& tokenizer) { check(rill_session_set_tokenizer(get(), tokenizer.get())); }
  void append_text(const std::string& text, bool add_special_tokens = false) {
    check(rill_session_append_text(get(), text.data(), text.size(), add_special_tokens));
  }
  void set_text(const std::string& text, bool add_special_tokens = true) {
    check(rill_session_set_text(get(), text.data(), text.size(), add_special_tokens));
  }
  void add_stop_string(const std::string& text) { check(rill_session_add_stop_string(get(), text.data(), text.size())); }
  void append_ids(const std::vector<int32_t>& ids) { check(rill_session_append_ids(get(), ids.data(), ids.size())); }
  void set_ids(const std::vector<int32_t>& ids) { check(rill_session_set_ids(get(), ids.data(), ids.size())); }
  void set_eos_ids(const std::vector<int32_t>& ids) { check(rill_session_set_eos_ids(get(), ids.data(), ids.size())); }
  void set_sampler(const rill_sampler_params& params) { check(rill_session_set_sampler(get(), &params)); }
  void rewind(int32_t length) { check(rill_session_rewind(get(), length)); }
  void cancel() noexcept { rill_session_cancel(get()); }
  std::vector<int32_t> ids() const {
    size_t count = 0;  // asked first with no room: that call fails unless the session is empty
    if (rill_session_get_ids(get(), nullptr, 0, &count) == RILL_OK) return {};
    std::vector<int32_t> out(count);
    check(rill_session_get_ids(get(), out.data(), out.size(), &count));
    return out;
  }

  /* Runs at most max_forwards forward passes (rill_session_step). on_token(id,
     text) is called for each new token (text empty without a tokenizer) and
     returns true to stop. Returns why the step ended; *generated (if given)
     receives the number of new tokens. */
  template <class OnToken>
  rill_stop_reason step(int32_t max_forwards, OnToken&& on_token, int32_t* generated = nullptr) {
    using Fn = std::remove_reference_t<OnToken>;
    struct Call {
      Fn* fn;
      static int token(void* user, int32_t id, const char* text, size_t len) {
        Call& call = *static_cast<Call*>(user);
        return (*call.fn)(id, std::string_view(text ? text : "", text ? len : 0)) ? 1 : 0;
      }
    } call{&on_token};
    rill_stop_reason reason = RILL_STOP_NONE;
    check(rill_session_step(get(), max_forwards, &Call::token, &call, generated, &reason));
    return reason;
  }

 private:
  struct Destroy {
    void operator()(rill_session* s) const noexcept { rill_session_destroy(s); }
  };
  std::unique_ptr<rill_session, Destroy> handle_;
};

}  // namespace rill

#endif /* RILL_HPP */
