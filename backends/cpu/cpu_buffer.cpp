// CPU buffers: aligned host memory, or host memory the runtime owns read in
// place (wrapped, never written). Ops complete before they return, so reads,
// writes and copies are plain memory copies, and freeing a wrapped buffer
// never waits.
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu_internal.h"
#include "platform.h"

namespace rill::cpu {

rill_status buffer_alloc(rill_backend_context*, uint64_t bytes, rill_backend_buffer** out_buffer) {
  const uint64_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded < bytes || rounded > SIZE_MAX) {
    return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: buffer of " + std::to_string(bytes) + " bytes does not fit in memory");
  }
  void* data = platform::aligned_alloc(kBufferAlignment, static_cast<size_t>(rounded));
  if (!data) return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
  rill_backend_buffer* buffer = new (std::nothrow) rill_backend_buffer{data, bytes, false};
  if (!buffer) {
    platform::aligned_free(data, kBufferAlignment);
    return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating a buffer object");
  }
  *out_buffer = buffer;
  return RILL_OK;
}

void buffer_free(rill_backend_context*, rill_backend_buffer* buffer) {
  if (!buffer) return;
  if (!buffer->wrapped) platform::aligned_free(buffer->data, kBufferAlignment);
  delete buffer;
}

rill_status buffer_wrap_host(rill_backend_context*, const void* data, uint64_t bytes,
                             rill_backend_buffer** out_buffer) {
  // No message: the runtime copies instead, and a message would stand as
  // rill_last_error() after a load that succeeded.
  if (reinterpret_cast<uintptr_t>(data) % kWrapAlignment != 0) return RILL_ERROR_UNSUPPORTED;
  // The const is restored by the contract: the runtime never writes a wrapped buffer.
  rill_backend_buffer* buffer = new (std::nothrow) rill_backend_buffer{const_cast<void*>(data), bytes, true};
  if (!buffer) return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating a buffer object");
  *out_buffer = buffer;
  return RILL_OK;
}

namespace {

// Refuses to write into a wrapped buffer, which the runtime never does: a
// write there would change (or, on a read-only map, fault on) memory the
// runtime owns.
rill_status check_writable(const rill_backend_buffer* buffer, const char* entry) {
  if (!buffer->wrapped) return RILL_OK;
  return fail(RILL_ERROR_INVALID_ARGUMENT, std::string("cpu: ") + entry +
                                               ": the buffer wraps host memory (buffer_wrap_host), which is read-only");
}

}  // namespace

rill_status buffer_write(rill_backend_context*, rill_backend_buffer* buffer, uint64_t offset, const void* src,
                         uint64_t bytes) {
  if (const rill_status status = check_writable(buffer, "buffer_write"); status != RILL_OK) return status;
  std::memcpy(static_cast<char*>(buffer->data) + offset, src, static_cast<size_t>(bytes));
  return RILL_OK;
}

rill_status buffer_read(rill_backend_context*, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                        uint64_t bytes) {
  std::memcpy(dst, static_cast<const char*>(buffer->data) + offset, static_cast<size_t>(bytes));
  return RILL_OK;
}

rill_status buffer_copy(rill_backend_context*, rill_backend_buffer* src, uint64_t src_offset, rill_backend_buffer* dst,
                        uint64_t dst_offset, uint64_t bytes) {
  if (const rill_status status = check_writable(dst, "buffer_copy"); status != RILL_OK) return status;
  // memmove: a copy within one buffer may overlap.
  std::memmove(static_cast<char*>(dst->data) + dst_offset, static_cast<const char*>(src->data) + src_offset,
               static_cast<size_t>(bytes));
  return RILL_OK;
}

}  // namespace rill::cpu
