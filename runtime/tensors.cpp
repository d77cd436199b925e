// The runtime's tensor API: creation with shape checks, raw and converting
// transfers, and the backend's view of a tensor.
#include "tensors.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "dtype_convert.h"
#include "enum_names.h"
#include "errors.h"
#include "host_services.h"

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

rill_status check_count(const std::string& where, const char* what, size_t expected, size_t given,
                        const rill_tensor& tensor) {
  if (expected == given) return RILL_OK;
  return fail(RILL_ERROR_INVALID_ARGUMENT, where + ": " + what + ": expected " + std::to_string(expected) +
                                               " (the size of a " + rill_dtype_name(tensor.dtype) +
                                               " tensor of shape " + shape_text(tensor) + "), got " +
                                               std::to_string(given));
}

rill_status write_bytes(const std::string& where, rill_tensor& tensor, uint64_t offset, const void* src,
                        uint64_t bytes) {
  const rill_context& ctx = *tensor.context;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_write(ctx.impl, tensor.buffer, offset, src, bytes);
  return status == RILL_OK ? RILL_OK : backend_failure(where.c_str(), ctx.backend->name, status);
}

rill_status read_bytes(const std::string& where, const rill_tensor& tensor, uint64_t offset, void* dst,
                       uint64_t bytes) {
  const rill_context& ctx = *tensor.context;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_read(ctx.impl, tensor.buffer, offset, dst, bytes);
  return status == RILL_OK ? RILL_OK : backend_failure(where.c_str(), ctx.backend->name, status);
}

}  // namespace

rill_status tensor_create(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                          const int64_t* shape, rill_tensor*& out) {
  if (rill_dtype_size(dtype) == 0) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                where + ": dtype: expected RILL_DTYPE_F32, _F16 or _BF16, got " + enum_name(dtype));
  }
  if (ndim < 1 || ndim > RILL_MAX_DIMS) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                where + ": ndim: expected 1 to " + std::to_string(RILL_MAX_DIMS) + ", got " + std::to_string(ndim));
  }
  if (shape == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, where + ": shape: expected ndim dims, got NULL");
  const size_t element_size = rill_dtype_size(dtype);
  size_t numel = 1;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 1) {
      return fail(RILL_ERROR_SHAPE,
                  where + ": shape[" + std::to_string(i) + "]: expected a dim >= 1, got " + std::to_string(shape[i]));
    }
    const auto dim = static_cast<uint64_t>(shape[i]);
    if (dim > std::numeric_limits<size_t>::max() / element_size / numel) {
      return fail(RILL_ERROR_SHAPE, where + ": shape: the byte size of a " + rill_dtype_name(dtype) +
                                        " tensor of this shape overflows size_t (at dim " + std::to_string(i) + ")");
    }
    numel *= static_cast<size_t>(dim);
  }
  auto tensor = std::make_unique<rill_tensor>();
  tensor->context = &ctx;
  tensor->dtype = dtype;
  tensor->ndim = ndim;
  for (int32_t i = 0; i < ndim; ++i) tensor->shape[i] = shape[i];
  tensor->numel = numel;
  tensor->nbytes = numel * element_size;
  ctx.tensors.reserve(ctx.tensors.size() + 1);  // so that the insert below cannot fail
  rill_backend_buffer* buffer = nullptr;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_alloc(ctx.impl, tensor->nbytes, &buffer);
  if (status != RILL_OK) return backend_failure(where.c_str(), ctx.backend->name, status);
  if (buffer == nullptr) {
    return fail(RILL_ERROR_BACKEND, where + ": " + ctx.backend->name + " backend: buffer_alloc returned no buffer");
  }
  tensor->buffer = buffer;
  ctx.tensors.insert(tensor.get());
  out = tensor.release();
  return RILL_OK;
}

void tensor_destroy(rill_tensor* tensor) {
  if (tensor == nullptr) return;
  rill_context& ctx = *tensor->context;
  ctx.backend->table->buffer_free(ctx.impl, tensor->buffer);
  ctx.tensors.erase(tensor);
  delete tensor;
}

rill_status tensor_write(const std::string& where, rill_tensor& tensor, const void* src, size_t bytes) {
  RILL_CHECK(check_count(where, "bytes", tensor.nbytes, bytes, tensor));
  return write_bytes(where, tensor, 0, src, bytes);
}

rill_status tensor_read(const std::string& where, const rill_tensor& tensor, void* dst, size_t bytes) {
  RILL_CHECK(check_count(where, "bytes", tensor.nbytes, bytes, tensor));
  return read_bytes(where, tensor, 0, dst, bytes);
}

rill_status tensor_write_f32(const std::string& where, rill_tensor& tensor, const float* src, size_t count) {
  RILL_CHECK(check_count(where, "count", tensor.numel, count, tensor));
  if (tensor.dtype == RILL_DTYPE_F32) return write_bytes(where, tensor, 0, src, tensor.nbytes);
  const size_t element_size = rill_dtype_size(tensor.dtype);
  std::vector<uint16_t> staging(std::min(count, kStagingElements));
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(count - done, staging.size());
    convert_from_f32(tensor.dtype, src + done, staging.data(), n);
    RILL_CHECK(write_bytes(where, tensor, done * element_size, staging.data(), n * element_size));
    done += n;
  }
  return RILL_OK;
}

rill_status tensor_read_f32(const std::string& where, const rill_tensor& tensor, float* dst, size_t count) {
  RILL_CHECK(check_count(where, "count", tensor.numel, count, tensor));
  if (tensor.dtype == RILL_DTYPE_F32) return read_bytes(where, tensor, 0, dst, tensor.nbytes);
  const size_t element_size = rill_dtype_size(tensor.dtype);
  std::vector<uint16_t> staging(std::min(count, kStagingElements));
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(count - done, staging.size());
    RILL_CHECK(read_bytes(where, tensor, done * element_size, staging.data(), n * element_size));
    convert_to_f32(tensor.dtype, staging.data(), dst + done, n);
    done += n;
  }
  return RILL_OK;
}

}  // namespace rill
