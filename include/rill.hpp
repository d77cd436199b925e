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

/* Owns a rill_lm: a language model from a Hugging Face folder. Move-only;
   destroy it before its Context (its KvCaches may go before or after). */
class Lm {
 public:
  /* dtype: the compute dtype, or nullptr for the checkpoint's. */
  Lm(const Context& ctx, const std::string& path, const rill_dtype* dtype = nullptr) {
    rill_lm_load_options options;
    rill_lm_load_options_init(&options);
    if (dtype != nullptr) {
      options.override_dtype = 1;
      options.dtype = *dtype;
    }
    rill_lm* raw_lm = nullptr;
    check(rill_lm_load(ctx.get(), path.c_str(), &options, &raw_lm));
    handle_.reset(raw_lm);
  }

  rill_lm* get() const noexcept { return handle_.get(); }
  rill_lm_info info() const {
    rill_lm_info out{};
    out.struct_size = sizeof out;
    check(rill_lm_get_info(get(), &out));
    return out;
  }
  /* The decoder stack, owned by the Lm: for KvCache(lm.model(), batch, capacity). */
  rill_model* model() const noexcept { return rill_lm_model(get()); }

  /* Logits [batch, tokens, vocab] (last_only: [batch, vocab]) of ids [batch * tokens]. */
  std::vector<float> logits(KvCache* cache, int32_t batch, const std::vector<int32_t>& ids, bool last_only = false) {
    const int32_t tokens = batch > 0 ? static_cast<int32_t>(ids.size() / static_cast<size_t>(batch)) : 0;
    const size_t rows = static_cast<size_t>(last_only ? batch : batch * tokens);
    std::vector<float> out(rows * static_cast<size_t>(info().vocab_size));
    check(rill_lm_logits(get(), cache ? cache->get() : nullptr, batch, tokens, ids.data(), last_only ? 1u : 0u,
                         out.data(), out.size()));
    return out;
  }

 private:
  struct Destroy {
    void operator()(rill_lm* lm) const noexcept { rill_lm_destroy(lm); }
  };
  std::unique_ptr<rill_lm, Destroy> handle_;
};

}  // namespace rill

#endif /* RILL_HPP */
