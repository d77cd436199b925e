// rill_lm_create_shared: a language model in a context (the source's own, or
// another whose backend can use the source's buffers) that holds the loaded
// model's weights in place, so that N contexts keep one copy of them.
#include <memory>
#include <string>
#include <unordered_map>

#include "errors.h"
#include "host_services.h"
#include "lm.h"
#include "model.h"
#include "tensors.h"

namespace rill::lm {
namespace {

// Shares each source tensor with ctx once (a tied LM head is the embedding).
class TensorSharer {
 public:
  explicit TensorSharer(rill_context& ctx) : ctx_(ctx) {}

  rill_status share(rill_tensor* source, rill_tensor*& out) {
    if (source == nullptr) {
      out = nullptr;
      return RILL_OK;
    }
    if (const auto found = shared_.find(source); found != shared_.end()) {
      out = found->second;
      return RILL_OK;
    }
    shared_.reserve(shared_.size() + 1);
    RILL_CHECK(tensor_share(ctx_, *source, out));
    shared_.emplace(source, out);  // reserved: does not throw
    return RILL_OK;
  }

 private:
  rill_context& ctx_;
  std::unordered_map<rill_tensor*, rill_tensor*> shared_;
};

// The decoder stack of source in ctx, holding source's weights; on failure
// what was made is destroyed.
rill_status share_model(rill_context& ctx, const rill_model& source, TensorSharer& sharer, rill_model*& out) {
  auto model = std::make_unique<rill_model>(source);
  model->context = &ctx;
  model->scratch.clear();
  model->scratch_rows = 0;
  for (layer::Weight& w : model->weights) w.tensor = nullptr;
  ctx.models.insert(model.get());
  rill_model* made = model.release();
  for (size_t i = 0; i < made->weights.size(); ++i) {
    const rill_status status = sharer.share(source.weights[i].tensor, made->weights[i].tensor);
    if (status != RILL_OK) {
      layer::destroy_model(made);
      return status;
    }
  }
  out = made;
  return RILL_OK;
}

// ctx may use the buffers of source (source's context): the same backend, and
// either the same context or one whose backend says it shares their buffers.
rill_status check_contexts(const char* fn, rill_context& ctx, rill_context& source) {
  const std::string f(fn);
  if (ctx.backend != source.backend) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ctx: expected a context on the source's backend \"" +
                                                 source.backend->name + "\", got one on \"" + ctx.backend->name + "\"");
  }
  if (&ctx == &source) return RILL_OK;
  const auto shares_buffers = RILL_BACKEND_OP(*ctx.backend, shares_buffers);
  if (shares_buffers == nullptr) {
    return fail(RILL_ERROR_UNSUPPORTED, f + ": ctx: the " + ctx.backend->name +
                                            " backend cannot share buffers between contexts (it lacks "
                                            "shares_buffers, backend interface version 7); pass the source's own "
                                            "context");
  }
  clear_backend_message();
  const rill_status status = shares_buffers(ctx.impl, source.impl);
  if (status != RILL_OK) return backend_failure((f + ": ctx").c_str(), ctx.backend->name, status);
  return RILL_OK;
}

}  // namespace
}  // namespace rill::lm

extern "C" {

RILL_API rill_status rill_lm_create_shared(rill_context* ctx, rill_lm* source, rill_lm** out) {
  constexpr const char* fn = "rill_lm_create_shared";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (ctx == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": ctx: expected a context, got NULL");
    if (source == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": source: expected a language model, got NULL");
    }
    if (out == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out: expected a pointer, got NULL");
    rill_context& from = *source->context;
    RILL_CHECK(rill::lm::check_contexts(fn, *ctx, from));
    // The source's weights must be complete on the device before ctx reads them.
    rill::clear_backend_message();
    const rill_status synced = from.backend->table->synchronize(from.impl);
    if (synced != RILL_OK) return rill::backend_failure(fn, from.backend->name, synced);

    std::unique_ptr<rill_lm, rill::lm::LmDeleter> lm(new rill_lm());
    lm->context = ctx;
    lm->config = source->config;
    lm->dtype = source->dtype;
    rill::lm::TensorSharer sharer(*ctx);
    RILL_CHECK(rill::lm::share_model(*ctx, *source->model, sharer, lm->model));
    RILL_CHECK(sharer.share(source->embedding, lm->embedding));
    RILL_CHECK(sharer.share(source->lm_head, lm->lm_head));
    RILL_CHECK(sharer.share(source->head_bias, lm->head_bias));
    *out = lm.release();
    return RILL_OK;
  });
}

}  // extern "C"
