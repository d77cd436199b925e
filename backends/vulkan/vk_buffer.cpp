/* Device buffers and the staging that moves bytes between host and device.
   Writes and reads go through host-visible chunks owned by the frame that
   records the copy, so that they stay alive until that frame has finished;
   a frame holds at most kStagingBytesPerFrame of them before it is flushed. */
#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "vk_internal.h"

namespace rill_vk {

namespace {

/* Destroys a buffer just made unless it is released: also when binding its
   memory threw (out of host memory). */
struct NewBuffer {
  rill_backend_context* ctx;
  VkBuffer buffer;
  ~NewBuffer() {
    if (buffer != VK_NULL_HANDLE) vkDestroyBuffer(ctx->device, buffer, nullptr);
  }
};

/* Creates a buffer of bytes and binds it to memory with the required
   properties (and the preferred ones where a type has them). */
rill_status create_buffer(rill_backend_context* ctx, uint64_t bytes, VkBufferUsageFlags usage,
                          VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred, VkBuffer* out_buffer,
                          Allocation* out_allocation) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = bytes;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkResult result = vkCreateBuffer(ctx->device, &info, nullptr, &buffer);
  if (result != VK_SUCCESS) return fail_context(ctx, result, ("vkCreateBuffer of " + std::to_string(bytes) + " bytes").c_str());
  NewBuffer created{ctx, buffer};
  const rill_status status = memory_bind_buffer(ctx, buffer, required, preferred, out_allocation);
  if (status != RILL_OK) return status;
  *out_buffer = std::exchange(created.buffer, VK_NULL_HANDLE);
  return RILL_OK;
}

void destroy_chunk(rill_backend_context* ctx, StagingChunk* chunk) {
  if (chunk->buffer != VK_NULL_HANDLE) vkDestroyBuffer(ctx->device, chunk->buffer, nullptr);
  memory_release(ctx, &chunk->allocation);
  *chunk = StagingChunk{};
}

/* Reserves bytes of staging in the frame being recorded; flushes the frame
   first when its staging budget is spent. Aligned to 256 bytes, the largest
   minStorageBufferOffsetAlignment Vulkan allows, so that a staged range can
   also be bound as a storage buffer. */
rill_status acquire_staging(rill_backend_context* ctx, uint64_t bytes, Frame** out_frame, StagingChunk** out_chunk,
                            uint64_t* out_offset) {
  Frame* frame = nullptr;
  rill_status status = begin_recording(ctx, &frame);
  if (status != RILL_OK) return status;
  if (frame->staging_used + bytes > kStagingBytesPerFrame) {
    status = flush(ctx);
    if (status == RILL_OK) status = begin_recording(ctx, &frame);
    if (status != RILL_OK) return status;
  }
  for (StagingChunk& chunk : frame->staging) {
    uint64_t start = (chunk.used + 255) & ~uint64_t{255};
    if (start + bytes <= chunk.size) {
      chunk.used = start + bytes;
      frame->staging_used += bytes;
      *out_frame = frame;
      *out_chunk = &chunk;
      *out_offset = start;
      return RILL_OK;
    }
  }
  StagingChunk chunk;
  chunk.size = std::max(bytes, kStagingChunkBytes);
  const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  status = create_buffer(ctx, chunk.size, usage, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                         VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &chunk.buffer, &chunk.allocation);
  if (status != RILL_OK) return status;
  chunk.mapped = memory_map(ctx, chunk.allocation);
  if (chunk.mapped == nullptr) {
    destroy_chunk(ctx, &chunk);
    return RILL_ERROR_BACKEND;
  }
  chunk.used = bytes;
  frame->staging.push_back(chunk);
  frame->staging_used += bytes;
  *out_frame = frame;
  *out_chunk = &frame->staging.back();
  *out_offset = 0;
  return RILL_OK;
}

}  // namespace

rill_status create_device_buffer(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer* out) {
  const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  /* Whole 32-bit words, so that shaders reading a tensor as words (the
     block-format weights of common/weights.glsl) stay inside the buffer. */
  const uint64_t words = (bytes + 3) / 4 * 4;
  const rill_status status =
      create_buffer(ctx, words, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &out->buffer, &out->allocation);
  if (status == RILL_OK) out->size = bytes;
  return status;
}

void destroy_device_buffer(rill_backend_context* ctx, rill_backend_buffer* buffer) {
  if (buffer->buffer != VK_NULL_HANDLE) vkDestroyBuffer(ctx->device, buffer->buffer, nullptr);
  memory_release(ctx, &buffer->allocation);
  buffer->buffer = VK_NULL_HANDLE;
}

rill_status upload_to_staging(rill_backend_context* ctx, const void* data, uint64_t bytes, BoundRange* out) {
  Frame* frame = nullptr;
  rill_status status = begin_recording(ctx, &frame);
  if (status != RILL_OK) return status;
  /* The dispatch that reads the upload must land in the upload's frame, so
     make room for its descriptor set now rather than let it flush later. */
  if (frame->descriptor_sets == kMaxSetsPerFrame) {
    status = flush(ctx);
    if (status != RILL_OK) return status;
  }
  StagingChunk* chunk = nullptr;
  uint64_t offset = 0;
  status = acquire_staging(ctx, bytes, &frame, &chunk, &offset);
  if (status != RILL_OK) return status;
  std::memcpy(static_cast<unsigned char*>(chunk->mapped) + offset, data, bytes);
  BoundRange range;
  range.buffer = chunk->buffer;
  range.bind_offset = offset;
  range.bind_range = bytes;
  range.tracked = false; /* host-written before submission: no device hazard */
  *out = range;
  return RILL_OK;
}

void reset_staging(rill_backend_context* ctx, Frame* frame) {
  /* Keep the standard-size chunks for reuse; oversized ones were made for
     one large transfer and are released. */
  std::vector<StagingChunk> kept;
  for (StagingChunk& chunk : frame->staging) {
    if (chunk.size > kStagingChunkBytes) {
      destroy_chunk(ctx, &chunk);
    } else {
      chunk.used = 0;
      kept.push_back(chunk);
    }
  }
  frame->staging.swap(kept);
  frame->staging_used = 0;
}

void destroy_staging(rill_backend_context* ctx, Frame* frame) {
  for (StagingChunk& chunk : frame->staging) destroy_chunk(ctx, &chunk);
  frame->staging.clear();
  frame->staging_used = 0;
}

rill_status buffer_alloc(rill_backend_context* ctx, uint64_t bytes, rill_backend_buffer** out_buffer) {
  rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  if (bytes > ctx->caps.max_allocation_bytes) {
    return fail(RILL_ERROR_OUT_OF_MEMORY, "Vulkan: buffer_alloc of " + std::to_string(bytes) +
                                              " bytes exceeds the device's largest allocation (maxMemoryAllocationSize, " +
                                              std::to_string(ctx->caps.max_allocation_bytes) + " bytes)");
  }
  if (bytes > ctx->caps.device_local_bytes) {
    return fail(RILL_ERROR_OUT_OF_MEMORY, "Vulkan: buffer_alloc of " + std::to_string(bytes) +
                                              " bytes exceeds the device's " +
                                              std::to_string(ctx->caps.device_local_bytes) + " bytes of memory");
  }
  auto* buffer = new (std::nothrow) rill_backend_buffer();
  if (buffer == nullptr) return fail(RILL_ERROR_OUT_OF_MEMORY, "Vulkan: out of host memory in buffer_alloc");
  status = create_device_buffer(ctx, bytes, buffer);
  if (status != RILL_OK) {
    delete buffer;
    return status;
  }
  *out_buffer = buffer;
  return RILL_OK;
}

namespace {

void destroy_buffer_now(rill_backend_context* ctx, rill_backend_buffer* buffer) {
  /* Its memory may be handed out again: forget the old handle's accesses. */
  for (size_t i = 0; i < ctx->pending_accesses.size();) {
    if (ctx->pending_accesses[i].buffer == buffer->buffer) {
      ctx->pending_accesses.erase(ctx->pending_accesses.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  destroy_device_buffer(ctx, buffer);
  delete buffer;
}

}  // namespace

void destroy_freed_buffers(rill_backend_context* ctx, Frame* frame) {
  for (rill_backend_buffer* buffer : frame->freed) destroy_buffer_now(ctx, buffer);
  frame->freed.clear();
}

void buffer_free(rill_backend_context* ctx, rill_backend_buffer* buffer) {
  if (buffer == nullptr) return;
  /* Recorded or running commands may still use the buffer: it goes with the
     newest frame, recording or submitted, whose fence signals after every
     earlier submission, and is destroyed when that frame is retired. Nothing
     waits here. */
  Frame* newest = &ctx->frames[ctx->current_frame];
  if (!newest->recording) newest = &ctx->frames[(ctx->current_frame + kFrameCount - 1) % kFrameCount];
  if (ctx->lost || !(newest->recording || newest->submitted)) {
    destroy_buffer_now(ctx, buffer);
    return;
  }
  newest->freed.push_back(buffer);
}

namespace {

// A piece of a host transfer: its staging memory and the frame recording it.
struct StagedPiece {
  Frame* frame = nullptr;
  unsigned char* mapped = nullptr;  // the piece's bytes in the staging chunk
};

// Takes staging space for bytes of buffer at offset, tracks the buffer access
// and records the copy between them: into the buffer when to_buffer, out of it
// otherwise. The caller fills (writes) or empties (reads) staged->mapped.
rill_status record_staged_copy(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset,
                               uint64_t bytes, bool to_buffer, StagedPiece* staged) {
  StagingChunk* chunk = nullptr;
  uint64_t staging_offset = 0;
  const rill_status status = acquire_staging(ctx, bytes, &staged->frame, &chunk, &staging_offset);
  if (status != RILL_OK) return status;
  Access access{buffer->buffer, offset, offset + bytes, to_buffer};
  track_accesses(ctx, staged->frame, &access, 1);
  if (to_buffer) {
    VkBufferCopy region{staging_offset, offset, bytes};
    vkCmdCopyBuffer(staged->frame->cmd, chunk->buffer, buffer->buffer, 1, &region);
  } else {
    VkBufferCopy region{offset, staging_offset, bytes};
    vkCmdCopyBuffer(staged->frame->cmd, buffer->buffer, chunk->buffer, 1, &region);
  }
  staged->mapped = static_cast<unsigned char*>(chunk->mapped) + staging_offset;
  return RILL_OK;
}

}  // namespace

rill_status buffer_write(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, const void* src,
                         uint64_t bytes) {
  rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  const auto* source = static_cast<const unsigned char*>(src);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t piece = std::min(bytes - done, kStagingChunkBytes);
    StagedPiece staged;
    status = record_staged_copy(ctx, buffer, offset + done, piece, true, &staged);
    if (status != RILL_OK) return status;
    std::memcpy(staged.mapped, source + done, piece);
    done += piece;
  }
  return RILL_OK;
}

rill_status buffer_read(rill_backend_context* ctx, rill_backend_buffer* buffer, uint64_t offset, void* dst,
                        uint64_t bytes) {
  rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  auto* destination = static_cast<unsigned char*>(dst);
  /* Each piece is submitted on its own, and the host copies a piece out while
     the device transfers the next: the two overlap, and only two pieces of
     staging (one per frame) are in use, which a CPU device still finds in
     its caches. A piece's frame is recorded again (and its staging reused)
     only after the piece has been copied out. */
  struct Submitted {
    Frame* frame = nullptr;
    const unsigned char* staged = nullptr;
    uint64_t done = 0;
    uint64_t bytes = 0;
  };
  Submitted previous;
  const auto copy_out = [&](const Submitted& piece) -> rill_status {
    const rill_status waited = wait_for_frame(ctx, piece.frame);
    if (waited == RILL_OK) std::memcpy(destination + piece.done, piece.staged, piece.bytes);
    return waited;
  };
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t piece = std::min(bytes - done, kStagingChunkBytes);
    StagedPiece staged;
    status = record_staged_copy(ctx, buffer, offset + done, piece, false, &staged);
    if (status != RILL_OK) return status;
    VkMemoryBarrier to_host{};
    to_host.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(staged.frame->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, nullptr, 0, nullptr);
    if ((status = flush(ctx)) != RILL_OK) return status;
    if (previous.bytes > 0 && (status = copy_out(previous)) != RILL_OK) return status;
    previous = {staged.frame, staged.mapped, done, piece};
    done += piece;
  }
  if (previous.bytes > 0 && (status = copy_out(previous)) != RILL_OK) return status;
  return check_usable(ctx);
}

rill_status buffer_copy(rill_backend_context* ctx, rill_backend_buffer* src, uint64_t src_offset,
                        rill_backend_buffer* dst, uint64_t dst_offset, uint64_t bytes) {
  rill_status status = check_usable(ctx);
  if (status != RILL_OK || bytes == 0) return status;
  if (src == dst && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes) {
    return fail(RILL_ERROR_INVALID_ARGUMENT, "Vulkan: buffer_copy source [" + std::to_string(src_offset) + ", " +
                                                 std::to_string(src_offset + bytes) + ") overlaps destination [" +
                                                 std::to_string(dst_offset) + ", " +
                                                 std::to_string(dst_offset + bytes) + ") in the same buffer");
  }
  Frame* frame = nullptr;
  status = begin_recording(ctx, &frame);
  if (status != RILL_OK) return status;
  Access accesses[2] = {{src->buffer, src_offset, src_offset + bytes, false},
                        {dst->buffer, dst_offset, dst_offset + bytes, true}};
  track_accesses(ctx, frame, accesses, 2);
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(frame->cmd, src->buffer, dst->buffer, 1, &region);
  return RILL_OK;
}

}  // namespace rill_vk
