// rill_tensor_*: creation with shape checks, raw and converting transfers,
// accessors.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "dtype_convert.h"
#include "errors.h"
#include "host_services.h"
#include "objects.h"

namespace rill {

rill_backend_tensor backend_view(const rill_tensor& tensor) {
  rill_backend_tensor view{};
  view.buffer = tensor.buffer;
  view.offset = 0;
  view.dtype = tensor.dtype;
  view.ndim = tensor.ndim;
  for (int i = 0; i < RILL_MAX_DIMS; ++i) view.shape[i] = tensor.shape[i];
  return view;
}

std::string shape_text(const rill_tensor& tensor) {
  std::string text = "[";
  for (int32_t i = 0; i < tensor.ndim; ++i) text += (i ? ", " : "") + std::to_string(tensor.shape[i]);
  return text + "]";
}

namespace {

// Converting transfers go through a bounded staging buffer, not one the size of the tensor.
constexpr size_t kStagingElements = size_t{1} << 20;

std::string msg(const char* function, const std::string& text) { return std::string(function) + ": " + text; }

rill_status check_tensor(const char* function, const rill_tensor* tensor) {
  if (tensor == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, msg(function, "tensor: expected a tensor, got NULL"));
  return RILL_OK;
}

rill_status check_count(const char* function, const char* what, size_t expected, size_t given,
                        const rill_tensor& tensor) {
  if (expected == given) return RILL_OK;
  return fail(RILL_ERROR_INVALID_ARGUMENT,
              msg(function, std::string(what) + ": expected " + std::to_string(expected) + " (the size of a " +
                                rill_dtype_name(tensor.dtype) + " tensor of shape " + shape_text(tensor) + "), got " +
                                std::to_string(given)));
}

rill_status write_bytes(const char* function, rill_tensor& tensor, uint64_t offset, const void* src, uint64_t bytes) {
  const rill_context& ctx = *tensor.context;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_write(ctx.impl, tensor.buffer, offset, src, bytes);
  return status == RILL_OK ? RILL_OK : backend_failure(function, ctx.backend->name, status);
}

rill_status read_bytes(const char* function, const rill_tensor& tensor, uint64_t offset, void* dst, uint64_t bytes) {
  const rill_context& ctx = *tensor.context;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_read(ctx.impl, tensor.buffer, offset, dst, bytes);
  return status == RILL_OK ? RILL_OK : backend_failure(function, ctx.backend->name, status);
}

}  // namespace
}  // namespace rill

extern "C" {

RILL_API rill_status rill_tensor_create(rill_context* ctx, rill_dtype dtype, int32_t ndim, const int64_t* shape,
                                        rill_tensor** out_tensor) {
  constexpr const char* fn = "rill_tensor_create";
  using rill::fail;
  using rill::msg;
  return rill::guarded(fn, [&] {
    if (ctx == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, msg(fn, "ctx: expected a context, got NULL"));
    if (rill_dtype_size(dtype) == 0) {
      return fail(RILL_ERROR_INVALID_ARGUMENT, msg(fn, "dtype: expected RILL_DTYPE_F32, _F16 or _BF16, got " +
                                                           std::to_string(rill::enum_value(dtype))));
    }
    if (ndim < 1 || ndim > RILL_MAX_DIMS) {
      return fail(RILL_ERROR_INVALID_ARGUMENT,
                  msg(fn, "ndim: expected 1 to " + std::to_string(RILL_MAX_DIMS) + ", got " + std::to_string(ndim)));
    }
    if (shape == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, msg(fn, "shape: expected ndim dims, got NULL"));
    if (out_tensor == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, msg(fn, "out_tensor: expected a pointer, got NULL"));
    const size_t element_size = rill_dtype_size(dtype);
    size_t numel = 1;
    for (int32_t i = 0; i < ndim; ++i) {
      if (shape[i] < 1) {
        return fail(RILL_ERROR_SHAPE, msg(fn, "shape[" + std::to_string(i) + "]: expected a dim >= 1, got " +
                                                  std::to_string(shape[i])));
      }
      const auto dim = static_cast<uint64_t>(shape[i]);
      if (dim > std::numeric_limits<size_t>::max() / element_size / numel) {
        return fail(RILL_ERROR_SHAPE, msg(fn, "shape: the byte size of a " + std::string(rill_dtype_name(dtype)) +
                                                  " tensor of this shape overflows size_t (at dim " +
                                                  std::to_string(i) + ")"));
      }
      numel *= static_cast<size_t>(dim);
    }
    auto tensor = std::make_unique<rill_tensor>();
    tensor->context = ctx;
    tensor->dtype = dtype;
    tensor->ndim = ndim;
    for (int32_t i = 0; i < ndim; ++i) tensor->shape[i] = shape[i];
    tensor->numel = numel;
    tensor->nbytes = numel * element_size;
    ctx->tensors.reserve(ctx->tensors.size() + 1);  // so that the insert below cannot fail
    rill_backend_buffer* buffer = nullptr;
    rill::clear_backend_message();
    const rill_status status = ctx->backend->table->buffer_alloc(ctx->impl, tensor->nbytes, &buffer);
    if (status != RILL_OK || buffer == nullptr) {
      if (status == RILL_OK) return fail(RILL_ERROR_BACKEND, msg(fn, ctx->backend->name + " backend: buffer_alloc returned no buffer"));
      return rill::backend_failure(fn, ctx->backend->name, status);
    }
    tensor->buffer = buffer;
    ctx->tensors.insert(tensor.get());
    *out_tensor = tensor.release();
    return RILL_OK;
  });
}

RILL_API void rill_tensor_destroy(rill_tensor* tensor) {
  if (tensor == nullptr) return;
  rill_context* ctx = tensor->context;
  ctx->backend->table->buffer_free(ctx->impl, tensor->buffer);
  ctx->tensors.erase(tensor);
  delete tensor;
}

RILL_API rill_status rill_tensor_write(rill_tensor* tensor, const void* src, size_t bytes) {
  constexpr const char* fn = "rill_tensor_write";
  return rill::guarded(fn, [&] {
    if (rill_status s = rill::check_tensor(fn, tensor); s != RILL_OK) return s;
    if (src == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, rill::msg(fn, "src: expected a pointer, got NULL"));
    if (rill_status s = rill::check_count(fn, "bytes", tensor->nbytes, bytes, *tensor); s != RILL_OK) return s;
    return rill::write_bytes(fn, *tensor, 0, src, bytes);
  });
}

RILL_API rill_status rill_tensor_read(const rill_tensor* tensor, void* dst, size_t bytes) {
  constexpr const char* fn = "rill_tensor_read";
  return rill::guarded(fn, [&] {
    if (rill_status s = rill::check_tensor(fn, tensor); s != RILL_OK) return s;
    if (dst == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, rill::msg(fn, "dst: expected a pointer, got NULL"));
    if (rill_status s = rill::check_count(fn, "bytes", tensor->nbytes, bytes, *tensor); s != RILL_OK) return s;
    return rill::read_bytes(fn, *tensor, 0, dst, bytes);
  });
}

RILL_API rill_status rill_tensor_write_f32(rill_tensor* tensor, const float* src, size_t count) {
  constexpr const char* fn = "rill_tensor_write_f32";
  return rill::guarded(fn, [&] {
    if (rill_status s = rill::check_tensor(fn, tensor); s != RILL_OK) return s;
    if (src == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, rill::msg(fn, "src: expected a pointer, got NULL"));
    if (rill_status s = rill::check_count(fn, "count", tensor->numel, count, *tensor); s != RILL_OK) return s;
    if (tensor->dtype == RILL_DTYPE_F32) return rill::write_bytes(fn, *tensor, 0, src, tensor->nbytes);
    const size_t element_size = rill_dtype_size(tensor->dtype);
    std::vector<uint16_t> staging(std::min(count, rill::kStagingElements));
    for (size_t done = 0; done < count;) {
      const size_t n = std::min(count - done, staging.size());
      rill::convert_from_f32(tensor->dtype, src + done, staging.data(), n);
      const rill_status s = rill::write_bytes(fn, *tensor, done * element_size, staging.data(), n * element_size);
      if (s != RILL_OK) return s;
      done += n;
    }
    return RILL_OK;
  });
}

RILL_API rill_status rill_tensor_read_f32(const rill_tensor* tensor, float* dst, size_t count) {
  constexpr const char* fn = "rill_tensor_read_f32";
  return rill::guarded(fn, [&] {
    if (rill_status s = rill::check_tensor(fn, tensor); s != RILL_OK) return s;
    if (dst == nullptr) return rill::fail(RILL_ERROR_INVALID_ARGUMENT, rill::msg(fn, "dst: expected a pointer, got NULL"));
    if (rill_status s = rill::check_count(fn, "count", tensor->numel, count, *tensor); s != RILL_OK) return s;
    if (tensor->dtype == RILL_DTYPE_F32) return rill::read_bytes(fn, *tensor, 0, dst, tensor->nbytes);
    const size_t element_size = rill_dtype_size(tensor->dtype);
    std::vector<uint16_t> staging(std::min(count, rill::kStagingElements));
    for (size_t done = 0; done < count;) {
      const size_t n = std::min(count - done, staging.size());
      const rill_status s = rill::read_bytes(fn, *tensor, done * element_size, staging.data(), n * element_size);
      if (s != RILL_OK) return s;
      rill::convert_to_f32(tensor->dtype, staging.data(), dst + done, n);
      done += n;
    }
    return RILL_OK;
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
