// The runtime's own tensor API, used by the public rill_tensor_* functions and
// by the decoder-layer code alike. Each call checks what it alone can check
// (dtype, shape, sizes), records one message "<where>: ..." on failure and
// returns its status, so a caller never re-reads rill_last_error() to add
// context: it passes that context in where ("rill_model_set_weight: weight
// 'model.norm.weight'"). Handles are not checked for NULL here; the entry points
// do that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "objects.h"

namespace rill {

// Creates a tensor of ctx after checking dtype, ndim and shape; out is set
// only on success.
rill_status tensor_create(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                          const int64_t* shape, rill_tensor*& out);

// Frees the tensor's buffer (unless tensors of other contexts still hold it)
// and the tensor; NULL is a no-op.
void tensor_destroy(rill_tensor* tensor);

// Lets go of the tensor's buffer: frees it when no other tensor holds it. A
// shared buffer's holder first waits for the work its context has queued.
void release_buffer(rill_tensor& tensor);

// A tensor of ctx holding host data (the tensor's byte size of it), read in
// place where owner is set and keeps data alive and the backend wraps host
// memory (buffer_wrap_host, interface version 8): the tensor then holds owner
// until its buffer is freed. Otherwise, or when the backend refuses this
// memory, a tensor_create and a tensor_write. out is set only on success.
rill_status tensor_from_host(const std::string& where, rill_context& ctx, rill_dtype dtype, int32_t ndim,
                             const int64_t* shape, const void* data, const std::shared_ptr<const void>& owner,
                             rill_tensor*& out);

// A tensor of ctx holding source's buffer (no copy) with source's dtype and
// shape; ctx's backend has agreed to use the buffers of source's context.
rill_status tensor_share(rill_context& ctx, rill_tensor& source, rill_tensor*& out);

// Raw transfers of the whole tensor: bytes must be its byte size.
rill_status tensor_write(const std::string& where, rill_tensor& tensor, const void* src, size_t bytes);
rill_status tensor_read(const std::string& where, const rill_tensor& tensor, void* dst, size_t bytes);

// Converting transfers of the whole tensor: count must be its element count.
rill_status tensor_write_f32(const std::string& where, rill_tensor& tensor, const float* src, size_t count);
rill_status tensor_read_f32(const std::string& where, const rill_tensor& tensor, float* dst, size_t count);

}  // namespace rill
