// rill_lm_logits: token ids -> embedding rows (gathered on the backend with
// buffer copies, as the mixture of experts gathers its rows) -> the decoder
// stack -> the LM head GEMM in the model dtype -> f32 logits on the host.
#include <cmath>
#include <string>
#include <vector>

#include "dtype_convert.h"
#include "errors.h"
#include "host_services.h"
#include "lm.h"
#include "model.h"
#include "op_checks.h"
#include "quant.h"
#include "tensors.h"

namespace rill::lm {
namespace {

// Tensors of one call, freed when it returns.
struct Temporaries {
  std::vector<rill_tensor*> tensors;
  ~Temporaries() {
    for (rill_tensor* t : tensors) tensor_destroy(t);
  }
  rill_status create(const std::string& where, rill_context& ctx, rill_dtype dtype, std::vector<int64_t> shape,
                     rill_tensor*& out) {
    RILL_CHECK(tensor_create(where, ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), out));
    tensors.push_back(out);
    return RILL_OK;
  }
};

// Copies row `from` of src into row `to` of dst (rows of `row_bytes`).
rill_status copy_row(const char* fn, rill_context& ctx, const rill_tensor& src, int64_t from, rill_tensor& dst,
                     int64_t to, uint64_t row_bytes) {
  clear_backend_message();
  const rill_status status =
      ctx.backend->table->buffer_copy(ctx.impl, src.buffer, static_cast<uint64_t>(from) * row_bytes, dst.buffer,
                                      static_cast<uint64_t>(to) * row_bytes, row_bytes);
  return status == RILL_OK ? RILL_OK : backend_failure(fn, ctx.backend->name, status);
}

// Rows ids[0..rows) of the embedding into rows of dst: a block table
// through get_rows (which dequantizes), another by buffer copies.
rill_status gather_embedding(const char* fn, rill_lm& lm, const int32_t* ids, int64_t rows, rill_tensor& dst) {
  rill_context& ctx = *lm.context;
  if (quant::is_block(lm.embedding->dtype)) {
    return rill_get_rows(&ctx, lm.embedding, ids, static_cast<size_t>(rows), &dst);
  }
  const uint64_t row_bytes = static_cast<uint64_t>(lm.model->desc.hidden_size) * rill_dtype_size(dst.dtype);
  for (int64_t r = 0; r < rows; ++r) RILL_CHECK(copy_row(fn, ctx, *lm.embedding, ids[r], dst, r, row_bytes));
  return RILL_OK;
}

// Gemma: x = embedding rows times sqrt(hidden_size), the factor rounded to
// the model dtype first and the product once, as transformers multiplies
// by torch.tensor(hidden_size ** 0.5, dtype=hidden_states.dtype). The rows
// are gathered into a scratch tensor and added, so scaled, to a zeroed x.
rill_status scaled_embedding(const char* fn, rill_lm& lm, const int32_t* ids, int64_t rows, rill_tensor& x,
                             Temporaries& temp) {
  rill_context& ctx = *lm.context;
  const rill_dtype dtype = lm.model->desc.dtype;
  const int64_t hidden = lm.model->desc.hidden_size;
  const uint64_t row_bytes = static_cast<uint64_t>(hidden) * rill_dtype_size(dtype);
  rill_tensor* rows_tensor = nullptr;
  RILL_CHECK(temp.create(std::string(fn) + ": embedding rows", ctx, dtype, {rows, hidden}, rows_tensor));
  RILL_CHECK(gather_embedding(fn, lm, ids, rows, *rows_tensor));
  const std::vector<unsigned char> zeros(static_cast<size_t>(rows) * row_bytes);
  clear_backend_message();
  const rill_status zeroed = ctx.backend->table->buffer_write(ctx.impl, x.buffer, 0, zeros.data(), zeros.size());
  if (zeroed != RILL_OK) return backend_failure(fn, ctx.backend->name, zeroed);
  const float exact = static_cast<float>(std::sqrt(static_cast<double>(hidden)));
  unsigned char stored[4];
  float scale = 0;
  convert_from_f32(dtype, &exact, stored, 1);
  convert_to_f32(dtype, stored, &scale, 1);
  rill_backend_tensor xv = backend_view(x), ev = backend_view(*rows_tensor);
  xv.ndim = 2;
  xv.shape[0] = rows;
  xv.shape[1] = hidden;
  xv.shape[2] = 1;
  return dispatch(fn, ctx, RILL_BACKEND_OP(*ctx.backend, residual_add), "residual_add",
                  static_cast<const rill_backend_tensor*>(&xv), static_cast<const rill_backend_tensor*>(&ev),
                  static_cast<const rill_backend_tensor*>(nullptr), 1.0f, scale);
}

rill_status logits(const char* fn, rill_lm& lm, rill_kv_cache* cache, int64_t batch, int64_t tokens,
                   const int32_t* ids, bool last_only, float* out, size_t out_count) {
  const std::string f(fn);
  rill_context& ctx = *lm.context;
  const rill_model_desc& d = lm.model->desc;
  const int64_t hidden = d.hidden_size, vocab = lm.config.vocab_size, rows = batch * tokens;
  const uint64_t row_bytes = static_cast<uint64_t>(hidden) * rill_dtype_size(d.dtype);
  Temporaries temp;
  rill_tensor* x = nullptr;
  RILL_CHECK(temp.create(f + ": hidden states", ctx, d.dtype, {batch, tokens, hidden}, x));
  if (lm.config.scale_embedding) {
    RILL_CHECK(scaled_embedding(fn, lm, ids, rows, *x, temp));
  } else {
    RILL_CHECK(gather_embedding(fn, lm, ids, rows, *x));
  }
  RILL_CHECK(rill_model_forward(lm.model, cache, x, nullptr, 0));

  rill_tensor* head_in = x;
  if (last_only && tokens > 1) {
    RILL_CHECK(temp.create(f + ": last hidden states", ctx, d.dtype, {batch, hidden}, head_in));
    for (int64_t b = 0; b < batch; ++b) {
      RILL_CHECK(copy_row(fn, ctx, *x, b * tokens + tokens - 1, *head_in, b, row_bytes));
    }
  }
  const int64_t head_rows = last_only ? batch : rows;
  rill_tensor* y = nullptr;
  RILL_CHECK(temp.create(f + ": logits", ctx, d.dtype, {head_rows, vocab}, y));
  rill_backend_tensor a = backend_view(*head_in), w = backend_view(*lm.lm_head), o = backend_view(*y), bias{};
  if (lm.head_bias != nullptr) bias = backend_view(*lm.head_bias);
  a.ndim = 2;
  a.shape[0] = head_rows;
  a.shape[1] = hidden;
  a.shape[2] = 1;
  RILL_CHECK(dispatch(fn, ctx, RILL_BACKEND_OP(*ctx.backend, gemm), "gemm", static_cast<const rill_backend_tensor*>(&a),
                      static_cast<const rill_backend_tensor*>(&w),
                      static_cast<const rill_backend_tensor*>(lm.head_bias != nullptr ? &bias : nullptr),
                      1.0f, 0.0f, static_cast<const rill_backend_tensor*>(&o)));
  RILL_CHECK(tensor_read_f32(f + ": logits", *y, out, out_count));
  if (const float cap = lm.config.final_logit_softcapping; cap > 0) {
    for (size_t i = 0; i < out_count; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  if (const float scale = lm.config.logit_scale; scale != 1.0f) {
    for (size_t i = 0; i < out_count; ++i) out[i] *= scale;
  }
  return RILL_OK;
}

}  // namespace
}  // namespace rill::lm

extern "C" {

RILL_API rill_status rill_lm_logits(rill_lm* lm, rill_kv_cache* cache, int32_t batch, int32_t tokens,
                                    const int32_t* ids, uint32_t last_only, float* logits, size_t logits_count) {
  constexpr const char* fn = "rill_lm_logits";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    auto invalid = [&](const std::string& text) { return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": " + text); };
    if (lm == nullptr) return invalid("lm: expected a model, got NULL");
    if (batch < 1) return invalid("batch: expected >= 1, got " + std::to_string(batch));
    if (tokens < 1) return invalid("tokens: expected >= 1, got " + std::to_string(tokens));
    const int64_t rows = int64_t{batch} * tokens;
    if (rows > INT32_MAX) return invalid("batch * tokens: expected at most 2^31 - 1, got " + std::to_string(rows));
    if (ids == nullptr) return invalid("ids: expected batch * tokens ids, got NULL");
    if (logits == nullptr) return invalid("logits: expected a buffer, got NULL");
    const int32_t vocab = lm->config.vocab_size;
    const uint64_t expected = static_cast<uint64_t>(last_only != 0 ? batch : rows) * static_cast<uint64_t>(vocab);
    if (logits_count != expected) {
      return invalid("logits_count: expected " + std::to_string(expected) +
                     (last_only != 0 ? " (batch * vocab_size " : " (batch * tokens * vocab_size ") +
                     std::to_string(vocab) + "), got " + std::to_string(logits_count));
    }
    for (int64_t i = 0; i < rows; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        return invalid("ids[" + std::to_string(i) + "]: expected an id from 0 to vocab_size - 1 = " +
                       std::to_string(vocab - 1) + ", got " + std::to_string(ids[i]));
      }
    }
    if (cache != nullptr && cache->model != lm->model) {
      return invalid("cache: expected a cache of rill_lm_model(lm), got one of another model");
    }
    if (cache != nullptr && cache->batch != batch) {
      return invalid("batch: expected the cache's batch " + std::to_string(cache->batch) + ", got " +
                     std::to_string(batch));
    }
    const std::vector<int32_t> lengths = cache != nullptr ? cache->lengths : std::vector<int32_t>{};
    // Guarded here too, so that an exception after the forward (out of memory
    // in the LM head) also comes back here, where the lengths it grew are restored.
    const rill_status status = rill::guarded(fn, [&] {
      return rill::lm::logits(fn, *lm, cache, batch, tokens, ids, last_only != 0, logits, logits_count);
    });
    if (status != RILL_OK && cache != nullptr) cache->lengths = lengths;  // the forward may have succeeded
    return status;
  });
}

}  // extern "C"
