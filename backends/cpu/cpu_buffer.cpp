// CPU buffers: aligned host memory. Ops complete before they return, so
// reads, writes and copies are plain memory copies.
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
  rill_backend_buffer* buffer = new (std::nothrow) rill_backend_buffer{data, bytes};
  if (!buffer) {
    platform::aligned_free(data, kBufferAlignment);
    return fail(RILL_ERROR_OUT_OF_MEMORY, "cpu: out of memory allocating a buffer object");
  }
  *out_buffer = buffer;
  return RILL_OK;
}

void buffer_free(rill_backend_context*, rill_backend_buffer* buffer) {
  if (!buffer) return;
  platform::aligned_free(buffer->data, kBufferAlignment);
  delete buffer;
}

rill_status buffer_write(rill_backend_context*, rill_backend_buffer* buffer, uint64_t offset, const void* src,
                         uint64_t bytes) {
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
  // memmove: a copy within one buffer may overlap.
  std::memmove(static_cast<char*>(dst->data) + dst_offset, static_cast<const char*>(src->data) + src_offset,
               static_cast<size_t>(bytes));
  return RILL_OK;
}

}  // namespace rill::cpu
