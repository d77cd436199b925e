// rill_tensor_*: the public entry points check their handles and pointers and
// call the runtime's tensor API (tensors.h); accessors.
#include "errors.h"
#include "tensors.h"

namespace rill {
namespace {

std::string msg(const char* function, const std::string& text) { return std::string(function) + ": " + text; }

rill_status check_tensor(const char* function, const rill_tensor* tensor) {
  if (tensor == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, msg(function, "tensor: expected a tensor, got NULL"));
  return RILL_OK;
}

rill_status check_pointer(const char* function, const void* pointer, const char* name) {
  if (pointer == nullptr) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, msg(function, std::string(name) + ": expected a pointer, got NULL"));
  }
  return RILL_OK;
}

}  // namespace
}  // namespace rill

extern "C" {

RILL_API rill_status rill_tensor_create(rill_context* ctx, rill_dtype dtype, int32_t ndim, const int64_t* shape,
                                        rill_tensor** out_tensor) {
  constexpr const char* fn = "rill_tensor_create";
  return rill::guarded(fn, [&] {
    if (ctx == nullptr) {
      return rill::fail(RILL_ERROR_INVALID_ARGUMENT, rill::msg(fn, "ctx: expected a context, got NULL"));
    }
    RILL_CHECK(rill::check_pointer(fn, out_tensor, "out_tensor"));
    rill_tensor* tensor = nullptr;
    RILL_CHECK(rill::tensor_create(fn, *ctx, dtype, ndim, shape, tensor));
    *out_tensor = tensor;
    return RILL_OK;
  });
}

RILL_API void rill_tensor_destroy(rill_tensor* tensor) { rill::tensor_destroy(tensor); }

RILL_API rill_status rill_tensor_write(rill_tensor* tensor, const void* src, size_t bytes) {
  constexpr const char* fn = "rill_tensor_write";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_tensor(fn, tensor));
    RILL_CHECK(rill::check_pointer(fn, src, "src"));
    return rill::tensor_write(fn, *tensor, src, bytes);
  });
}

RILL_API rill_status rill_tensor_read(const rill_tensor* tensor, void* dst, size_t bytes) {
  constexpr const char* fn = "rill_tensor_read";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_tensor(fn, tensor));
    RILL_CHECK(rill::check_pointer(fn, dst, "dst"));
    return rill::tensor_read(fn, *tensor, dst, bytes);
  });
}

RILL_API rill_status rill_tensor_write_f32(rill_tensor* tensor, const float* src, size_t count) {
  constexpr const char* fn = "rill_tensor_write_f32";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_tensor(fn, tensor));
    RILL_CHECK(rill::check_pointer(fn, src, "src"));
    return rill::tensor_write_f32(fn, *tensor, src, count);
  });
}

RILL_API rill_status rill_tensor_read_f32(const rill_tensor* tensor, float* dst, size_t count) {
  constexpr const char* fn = "rill_tensor_read_f32";
  return rill::guarded(fn, [&] {
    RILL_CHECK(rill::check_tensor(fn, tensor));
    RILL_CHECK(rill::check_pointer(fn, dst, "dst"));
    return rill::tensor_read_f32(fn, *tensor, dst, count);
  });
}

RILL_API rill_dtype rill_tensor_dtype(const rill_tensor* tensor) {
  return tensor != nullptr ? tensor->dtype : RILL_DTYPE_MAX_ENUM;
}

RILL_API int32_t rill_tensor_ndim(const rill_tensor* tensor) { return tensor != nullptr ? tensor->ndim : 0; }

RILL_API int64_t rill_tensor_dim(const rill_tensor* tensor, int32_t index) {
  if (tensor == nullptr || index < 0 || index >= tensor->ndim) return 0;
  return tensor->shape[index];
}

RILL_API size_t rill_tensor_numel(const rill_tensor* tensor) { return tensor != nullptr ? tensor->numel : 0; }

RILL_API size_t rill_tensor_nbytes(const rill_tensor* tensor) { return tensor != nullptr ? tensor->nbytes : 0; }

RILL_API rill_context* rill_tensor_context(const rill_tensor* tensor) {
  return tensor != nullptr ? tensor->context : nullptr;
}

}  // extern "C"
