// rill_kv_cache: per-layer key and value tensors [batch, capacity, Hkv, hd]
// and the number of tokens each sequence holds.
#include <memory>

#include "errors.h"
#include "model.h"
#include "tensors.h"

namespace {

void release(rill_kv_cache& cache) {
  for (rill_tensor* t : cache.keys) rill::tensor_destroy(t);
  for (rill_tensor* t : cache.values) rill::tensor_destroy(t);
  cache.keys.clear();
  cache.values.clear();
}

// cache is not NULL and holds sequence.
rill_status check_sequence(const char* function, const rill_kv_cache* cache, int32_t sequence) {
  const std::string f(function);
  if (cache == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": cache: expected a cache, got NULL");
  if (sequence < 0 || sequence >= cache->batch) {
    return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": sequence: expected 0 to " + std::to_string(cache->batch - 1) +
                                                       ", got " + std::to_string(sequence));
  }
  return RILL_OK;
}

}  // namespace

namespace rill::layer {

void destroy_kv_cache(rill_kv_cache* cache) {
  if (cache == nullptr) return;
  release(*cache);
  cache->context->caches.erase(cache);
  delete cache;
}

}  // namespace rill::layer

extern "C" {

RILL_API rill_status rill_kv_cache_create(rill_model* model, int32_t batch, int32_t capacity,
                                          rill_kv_cache** out_cache) {
  constexpr const char* fn = "rill_kv_cache_create";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    if (model == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": model: expected a model, got NULL");
    if (batch < 1)
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": batch: expected >= 1, got " + std::to_string(batch));
    if (capacity < 1) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": capacity: expected >= 1, got " + std::to_string(capacity));
    }
    if (out_cache == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_cache: expected a pointer, got NULL");
    }
    auto cache = std::make_unique<rill_kv_cache>();
    cache->context = model->context;
    cache->model = model;
    cache->batch = batch;
    cache->capacity = capacity;
    cache->lengths.assign(static_cast<size_t>(batch), 0);
    cache->context->caches.reserve(cache->context->caches.size() + 1);  // so that the insert below cannot fail
    const int64_t shape[4] = {batch, capacity, model->desc.num_kv_heads, model->desc.head_dim};
    for (int32_t layer = 0; layer < model->desc.num_layers; ++layer) {
      for (auto* list : {&cache->keys, &cache->values}) {
        rill_tensor* t = nullptr;
        const rill_status created = rill::tensor_create(f + ": layer " + std::to_string(layer), *model->context,
                                                        model->desc.dtype, 4, shape, t);
        if (created != RILL_OK) {
          release(*cache);
          return created;
        }
        list->push_back(t);
      }
    }
    cache->context->caches.insert(cache.get());
    *out_cache = cache.release();
    return RILL_OK;
  });
}

RILL_API void rill_kv_cache_destroy(rill_kv_cache* cache) { rill::layer::destroy_kv_cache(cache); }

RILL_API int32_t rill_kv_cache_length(const rill_kv_cache* cache, int32_t sequence) {
  if (cache == nullptr || sequence < 0 || sequence >= cache->batch) return -1;
  return cache->lengths[static_cast<size_t>(sequence)];
}

RILL_API rill_status rill_kv_cache_get_length(const rill_kv_cache* cache, int32_t sequence, int32_t* out_length) {
  constexpr const char* fn = "rill_kv_cache_get_length";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_sequence(fn, cache, sequence));
    if (out_length == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": out_length: expected a pointer, got NULL");
    }
    *out_length = cache->lengths[static_cast<size_t>(sequence)];
    return RILL_OK;
  });
}

RILL_API rill_status rill_kv_cache_set_length(rill_kv_cache* cache, int32_t sequence, int32_t length) {
  constexpr const char* fn = "rill_kv_cache_set_length";
  return rill::guarded(fn, [&]() -> rill_status {
    const std::string f(fn);
    RILL_CHECK(check_sequence(fn, cache, sequence));
    const int32_t current = cache->lengths[static_cast<size_t>(sequence)];
    if (length < 0 || length > current) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, f + ": length: expected 0 to the sequence's current length " +
                                                         std::to_string(current) + ", got " + std::to_string(length));
    }
    cache->lengths[static_cast<size_t>(sequence)] = length;
    return RILL_OK;
  });
}

}  // extern "C"
