/* Device buffers. Transfers go through the context's stream, so they are
   ordered with the ops queued before them; reads wait for the data. */
#include <cstring>
#include <new>

#include "cuda_backend.h"

rill_status rill_cuda_malloc(rill_backend_context* ctx, void** out_data, std::size_t bytes, const char* what) {
  const cudaError_t error =
      ctx->stream_ordered_memory ? cudaMallocAsync(out_data, bytes, ctx->stream) : cudaMalloc(out_data, bytes);
  return rill_cuda_check(error, what);
}

void rill_cuda_free(rill_backend_context* ctx, void* data) {
  if (!data) return;
  if (ctx->stream_ordered_memory) {
    // Released once the ops queued before it are done; nothing waits here.
    (void)rill_cuda_check(cudaFreeAsync(data, ctx->stream), "cudaFreeAsync");
    return;
  }
  // Ops that still use the memory must finish before it is reused. Where the
  // device cannot be made current the memory is still released: with unified
  // addressing cudaFree finds the pointer's device itself.
  if (rill_cuda_activate(ctx) == RILL_OK) {
    (void)rill_cuda_check(cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize (cudaFree)");
  }
  (void)rill_cuda_check(cudaFree(data), "cudaFree");
}

rill_status rill_cuda_buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer) {
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  rill_backend_buffer* buffer = new (std::nothrow) rill_backend_buffer();
  if (!buffer) return rill_cuda_fail(RILL_ERROR_OUT_OF_MEMORY, "cuda: buffer_alloc: out of host memory");
  status = rill_cuda_malloc(ctx, &buffer->data, static_cast<std::size_t>(bytes),
                            ("device allocation of " + std::to_string(bytes) + " bytes").c_str());
  if (status != RILL_OK) {
    delete buffer;
    return status;
  }
  buffer->bytes = bytes;
  *out_buffer = buffer;
  return RILL_OK;
}

void rill_cuda_buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer) {
  if (!buffer) return;
  rill_cuda_free(ctx, buffer->data);
  delete buffer;
}

rill_status rill_cuda_buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                                   const void* src, uint64_t bytes) {
  const rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  const rill_status copied =
      rill_cuda_check(cudaMemcpyAsync(static_cast<char*>(buffer->data) + offset, src, static_cast<std::size_t>(bytes),
                                      cudaMemcpyHostToDevice, ctx->stream),
                      "cudaMemcpyAsync (host to device)");
  if (copied != RILL_OK) return copied;
  // From pageable host memory the copy has consumed src when the call returns.
  // From pinned, registered or managed memory it is truly asynchronous: wait
  // for it, so that the caller may reuse src at once as the interface promises.
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, src) != cudaSuccess) {
    (void)cudaGetLastError();  // not an address CUDA knows: pageable
    return RILL_OK;
  }
  if (attributes.type != cudaMemoryTypeHost && attributes.type != cudaMemoryTypeManaged) return RILL_OK;
  return rill_cuda_check(cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize (write from pinned memory)");
}

rill_status rill_cuda_buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                                  uint64_t bytes) {
  rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  status = rill_cuda_check(cudaMemcpyAsync(dst, static_cast<const char*>(buffer->data) + offset,
                                           static_cast<std::size_t>(bytes), cudaMemcpyDeviceToHost, ctx->stream),
                           "cudaMemcpyAsync (device to host)");
  if (status != RILL_OK) return status;
  return rill_cuda_check(cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize (buffer_read)");
}

rill_status rill_cuda_buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                                  rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes) {
  const rill_status status = rill_cuda_activate(ctx);
  if (status != RILL_OK) return status;
  return rill_cuda_check(cudaMemcpyAsync(static_cast<char*>(dst->data) + dst_offset,
                                         static_cast<const char*>(src->data) + src_offset,
                                         static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, ctx->stream),
                         "cudaMemcpyAsync (device to device)");
}

rill_status rill_cuda_reserve(rill_backend_context* ctx, rill_cuda_area* area, std::size_t bytes, const char* what) {
  if (bytes <= area->bytes) return RILL_OK;
  // Ops queued earlier may still use the old area: rill_cuda_free releases
  // it after them.
  rill_cuda_free(ctx, area->data);
  area->data = nullptr;
  area->bytes = 0;
  const std::size_t grown = bytes < 4096 ? 4096 : bytes;
  const rill_status status = rill_cuda_malloc(ctx, &area->data, grown, what);
  if (status != RILL_OK) return status;
  area->bytes = grown;
  return RILL_OK;
}

rill_status rill_cuda_staging_create(rill_backend_context* ctx) {
  rill_cuda_staging& staging = ctx->staging;
  for (cudaEvent_t& event : staging.copied) {
    const rill_status status = rill_cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                               "cudaEventCreateWithFlags (upload staging)");
    if (status != RILL_OK) return status;
  }
  if (cudaMallocHost(&staging.host, rill_cuda_staging::kSlots * rill_cuda_staging::kSlotBytes) != cudaSuccess) {
    (void)cudaGetLastError();  // no page-locked memory to spare: uploads copy from pageable memory
    staging.host = nullptr;
  }
  return RILL_OK;
}

void rill_cuda_staging_release(rill_backend_context* ctx) {
  rill_cuda_staging& staging = ctx->staging;
  for (cudaEvent_t& event : staging.copied) {
    if (!event) continue;
    (void)cudaEventSynchronize(event);
    (void)cudaEventDestroy(event);
    event = nullptr;
  }
  if (staging.host) (void)cudaFreeHost(staging.host);
  staging.host = nullptr;
}

rill_status rill_cuda_upload(rill_backend_context* ctx, const void* src, std::size_t bytes, void** out_device) {
  rill_status status = rill_cuda_reserve(ctx, &ctx->upload, bytes, "cudaMalloc (upload area)");
  if (status != RILL_OK) return status;
  rill_cuda_staging& staging = ctx->staging;
  const bool staged = staging.host != nullptr && bytes <= rill_cuda_staging::kSlotBytes;
  const int slot = staging.next;
  const void* from = src;
  if (staged) {
    // The copy that last read this slot (kSlots uploads ago) must have ended.
    status = rill_cuda_check(cudaEventSynchronize(staging.copied[slot]), "cudaEventSynchronize (upload staging)");
    if (status != RILL_OK) return status;
    char* host = static_cast<char*>(staging.host) + static_cast<std::size_t>(slot) * rill_cuda_staging::kSlotBytes;
    std::memcpy(host, src, bytes);
    from = host;
  }
  // Stream-ordered: an earlier op that reads the previous contents runs
  // before this copy overwrites them. src itself is consumed when the call
  // returns: copied to the staging above, or by the driver from pageable memory.
  status = rill_cuda_check(cudaMemcpyAsync(ctx->upload.data, from, bytes, cudaMemcpyHostToDevice, ctx->stream),
                           "cudaMemcpyAsync (upload)");
  if (status != RILL_OK) return status;
  if (staged) {
    status = rill_cuda_check(cudaEventRecord(staging.copied[slot], ctx->stream), "cudaEventRecord (upload staging)");
    if (status != RILL_OK) return status;
    staging.next = (slot + 1) % rill_cuda_staging::kSlots;
  }
  *out_device = ctx->upload.data;
  return RILL_OK;
}
