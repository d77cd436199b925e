// The runtime's tensor API: creation with shape checks, raw and converting
// transfers, and the backend's view of a tensor.
#include "tensors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "dtype_convert.h"
#include "enum_names.h"
#include "errors.h"
#include "host_services.h"
#include "platform.h"
#include "quant.h"

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

namespace {

// A block dtype's shape rule: 2 dims, the last a multiple of the block.
rill_status check_block_shape(const std::string& where, rill_dtype dtype, int32_t ndim, const int64_t* shape) {
  const auto block = static_cast<int64_t>(rill_dtype_block_elements(dtype));
  if (ndim != 2) {
    return fail(RILL_ERROR_SHAPE, where + ": ndim: a " + rill_dtype_name(dtype) +
                                      " tensor (a block format) must be 2-dim [N, K], got " + std::to_string(ndim) +
                                      " dims");
  }
  if (shape[1] % block != 0) {
    return fail(RILL_ERROR_SHAPE, where + ": shape[1]: a " + rill_dtype_name(dtype) + " row must be a multiple of " +
                                      std::to_string(block) + " elements (its block), got " + std::to_string(shape[1]));
  }
  return RILL_OK;
}

// tensor_create's checks, then a tensor of ctx without a buffer.
rill_status new_tensor(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                       const int64_t* shape, std::unique_ptr<rill_tensor>& out) {
  if (rill_dtype_block_elements(dtype) == 0) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                where + ": dtype: expected RILL_DTYPE_F32, _F16, _BF16 or a block dtype (_Q8_0 ... _Q6_K), got " +
                    enum_name(dtype));
  }
  if (ndim < 1 || ndim > RILL_MAX_DIMS) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                where + ": ndim: expected 1 to " + std::to_string(RILL_MAX_DIMS) + ", got " + std::to_string(ndim));
  }
  if (shape == nullptr) return fail(RILL_ERROR_INVALID_ARGUMENT, where + ": shape: expected ndim dims, got NULL");
  const bool block = quant::is_block(dtype);
  // The byte size is numel * element_size / block_elements; checking numel *
  // element_size for overflow covers it (a block holds fewer bytes than elements * 4).
  const size_t element_size = block ? 4 : rill_dtype_size(dtype);
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
  if (block) RILL_CHECK(check_block_shape(where, dtype, ndim, shape));
  out = std::make_unique<rill_tensor>();
  out->context = &ctx;
  out->dtype = dtype;
  out->ndim = ndim;
  for (int32_t i = 0; i < ndim; ++i) out->shape[i] = shape[i];
  out->numel = numel;
  out->nbytes = block ? static_cast<size_t>(shape[0]) * quant::row_bytes(dtype, shape[1]) : numel * element_size;
  return RILL_OK;
}

// Gives tensor the buffer an entry (named by entry) returned with status and
// registers it with its context; the buffer is freed if that fails.
rill_status adopt_buffer(const std::string& where, const char* entry, rill_status status,
                         rill_backend_buffer* buffer, std::unique_ptr<rill_tensor>& tensor, rill_tensor*& out) {
  rill_context& ctx = *tensor->context;
  if (status != RILL_OK) return backend_failure(where.c_str(), ctx.backend->name, status);
  if (buffer == nullptr) {
    return fail(RILL_ERROR_BACKEND, where + ": " + ctx.backend->name + " backend: " + entry + " returned no buffer");
  }
  tensor->buffer = buffer;
  try {
    ctx.tensors.insert(tensor.get());  // allocates a node, which can fail
  } catch (...) {
    ctx.backend->table->buffer_free(ctx.impl, buffer);
    throw;
  }
  out = tensor.release();
  return RILL_OK;
}

}  // namespace

rill_status tensor_create(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                          const int64_t* shape, rill_tensor*& out) {
  std::unique_ptr<rill_tensor> tensor;
  RILL_CHECK(new_tensor(where, ctx, dtype, ndim, shape, tensor));
  rill_backend_buffer* buffer = nullptr;
  clear_backend_message();
  const rill_status status = ctx.backend->table->buffer_alloc(ctx.impl, tensor->nbytes, &buffer);
  return adopt_buffer(where, "buffer_alloc", status, buffer, tensor, out);
}

rill_status tensor_from_host(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                             const int64_t* shape, const void* data, const std::shared_ptr<const void>& owner,
                             rill_tensor*& out) {
  const auto wrap = RILL_BACKEND_OP(*ctx.backend, buffer_wrap_host);
  if (owner != nullptr && wrap != nullptr) {
    std::unique_ptr<rill_tensor> tensor;
    RILL_CHECK(new_tensor(where, ctx, dtype, ndim, shape, tensor));
    const size_t bytes = tensor->nbytes;
    rill_backend_buffer* buffer = nullptr;
    clear_backend_message();
    const rill_status status = wrap(ctx.impl, data, bytes, &buffer);
    if (status != RILL_ERROR_UNSUPPORTED) {
      tensor->host_memory = owner;
      // Paged in now, as a copy would have been: the load, not the first
      // forward pass (a game's first token), pays for reading the file.
      if (status == RILL_OK) platform::prefault_pages(data, bytes);
      return adopt_buffer(where, "buffer_wrap_host", status, buffer, tensor, out);
    }
    clear_backend_message();  // refused: copied below instead
  }
  rill_tensor* tensor = nullptr;
  RILL_CHECK(tensor_create(where, ctx, dtype, ndim, shape, tensor));
  if (const rill_status written = tensor_write(where, *tensor, data, tensor->nbytes); written != RILL_OK) {
    tensor_destroy(tensor);
    return written;
  }
  out = tensor;
  return RILL_OK;
}

void release_buffer(rill_tensor& tensor) {
  const rill_context& ctx = *tensor.context;
  if (tensor.shared != nullptr) {
    // Another context may free the buffer as soon as the count drops, so the
    // work queued here, which may read it, is waited for first. A failure (a
    // lost device) leaves nothing to wait for.
    ctx.backend->table->synchronize(ctx.impl);
    if (tensor.shared->holders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    delete tensor.shared;
  }
  ctx.backend->table->buffer_free(ctx.impl, tensor.buffer);
}

void tensor_destroy(rill_tensor* tensor) {
  if (tensor == nullptr) return;
  release_buffer(*tensor);
  tensor->context->tensors.erase(tensor);
  delete tensor;
}

rill_status tensor_share(rill_context& ctx, rill_tensor& source, rill_tensor*& out) {
  auto tensor = std::make_unique<rill_tensor>(source);
  tensor->context = &ctx;
  if (source.shared == nullptr) source.shared = new SharedBuffer();
  ctx.tensors.insert(tensor.get());  // allocates a node, which can fail: before the count
  tensor->shared = source.shared;
  tensor->shared->holders.fetch_add(1, std::memory_order_relaxed);
  out = tensor.release();
  return RILL_OK;
}

rill_status tensor_write(const std::string& where, rill_tensor& tensor, const void* src, size_t bytes) {
  RILL_CHECK(check_count(where, "bytes", tensor.nbytes, bytes, tensor));
  return write_bytes(where, tensor, 0, src, bytes);
}

rill_status tensor_read(const std::string& where, const rill_tensor& tensor, void* dst, size_t bytes) {
  RILL_CHECK(check_count(where, "bytes", tensor.nbytes, bytes, tensor));
  return read_bytes(where, tensor, 0, dst, bytes);
}

namespace {

// How many rows of a block tensor one staged transfer moves.
int64_t staged_rows(const rill_tensor& tensor) {
  return std::max<int64_t>(1, static_cast<int64_t>(kStagingElements) / tensor.shape[1]);
}

rill_status write_quantized(const std::string& where, rill_tensor& tensor, const float* src) {
  if (const size_t i = quant::first_unquantizable(src, tensor.numel); i < tensor.numel) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                where + ": src[" + std::to_string(i) + "]: a " + rill_dtype_name(tensor.dtype) +
                    " tensor takes finite values of magnitude at most 2^18 = 262144, got " + std::to_string(src[i]));
  }
  const int64_t rows = tensor.shape[0], cols = tensor.shape[1], batch = staged_rows(tensor);
  const size_t row_bytes = quant::row_bytes(tensor.dtype, cols);
  std::vector<unsigned char> staging(static_cast<size_t>(std::min(rows, batch)) * row_bytes);
  for (int64_t first = 0; first < rows; first += batch) {
    const int64_t n = std::min(rows - first, batch);
    for (int64_t r = 0; r < n; ++r) {
      quant::quantize_row(tensor.dtype, src + (first + r) * cols, staging.data() + r * row_bytes, cols);
    }
    RILL_CHECK(write_bytes(where, tensor, first * row_bytes, staging.data(), n * row_bytes));
  }
  return RILL_OK;
}

rill_status read_dequantized(const std::string& where, const rill_tensor& tensor, float* dst) {
  const int64_t rows = tensor.shape[0], cols = tensor.shape[1], batch = staged_rows(tensor);
  const size_t row_bytes = quant::row_bytes(tensor.dtype, cols);
  std::vector<unsigned char> staging(static_cast<size_t>(std::min(rows, batch)) * row_bytes);
  for (int64_t first = 0; first < rows; first += batch) {
    const int64_t n = std::min(rows - first, batch);
    RILL_CHECK(read_bytes(where, tensor, first * row_bytes, staging.data(), n * row_bytes));
    for (int64_t r = 0; r < n; ++r) {
      quant::dequantize_row(tensor.dtype, staging.data() + r * row_bytes, dst + (first + r) * cols, cols);
    }
  }
  return RILL_OK;
}

}  // namespace

rill_status tensor_write_f32(const std::string& where, rill_tensor& tensor, const float* src, size_t count) {
  RILL_CHECK(check_count(where, "count", tensor.numel, count, tensor));
  if (quant::is_block(tensor.dtype)) return write_quantized(where, tensor, src);
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
  if (quant::is_block(tensor.dtype)) return read_dequantized(where, tensor, dst);
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
