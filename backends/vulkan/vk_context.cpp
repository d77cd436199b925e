/* Contexts: on a shared device (vk_shared_device.cpp), command recording into
   a small ring of frames, barrier placement from tracked buffer accesses, and
   submission at synchronization points. */
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "vk_internal.h"

namespace rill_vk {

namespace {

/* One global memory barrier orders every earlier shader or transfer access
   before every later one; that is all a single queue needs. */
void record_barrier(Frame* frame) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(frame->cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

bool overlaps(const Access& a, const Access& b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

rill_status create_frames(rill_backend_context* ctx) {
  VkCommandPoolCreateInfo pool_info{};
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = ctx->queue_family;
  VkResult result = vkCreateCommandPool(ctx->device, &pool_info, nullptr, &ctx->command_pool);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreateCommandPool");

  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxSetsPerFrame * kBindingCount};
  for (Frame& frame : ctx->frames) {
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = ctx->command_pool;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    result = vkAllocateCommandBuffers(ctx->device, &alloc, &frame.cmd);
    if (result != VK_SUCCESS) return fail_vk(result, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    result = vkCreateFence(ctx->device, &fence_info, nullptr, &frame.fence);
    if (result != VK_SUCCESS) return fail_vk(result, "vkCreateFence");
    VkDescriptorPoolCreateInfo descriptor_info{};
    descriptor_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    descriptor_info.maxSets = kMaxSetsPerFrame;
    descriptor_info.poolSizeCount = 1;
    descriptor_info.pPoolSizes = &pool_size;
    result = vkCreateDescriptorPool(ctx->device, &descriptor_info, nullptr, &frame.descriptor_pool);
    if (result != VK_SUCCESS) return fail_vk(result, "vkCreateDescriptorPool");
  }
  return RILL_OK;
}

/* Waits for a submitted frame and makes its resources reusable. */
rill_status retire_frame(rill_backend_context* ctx, Frame* frame) {
  if (!frame->submitted) return RILL_OK;
  const rill_status status = wait_for_frame(ctx, frame);
  if (status != RILL_OK) return status;
  frame->submitted = false;
  VkResult result = vkResetFences(ctx->device, 1, &frame->fence);
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkResetFences");
  result = vkResetDescriptorPool(ctx->device, frame->descriptor_pool, 0);
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkResetDescriptorPool");
  frame->descriptor_sets = 0;
  reset_staging(ctx, frame);
  destroy_freed_buffers(ctx, frame);
  return RILL_OK;
}

void destroy_context_objects(rill_backend_context* ctx) {
  if (ctx->device != VK_NULL_HANDLE) {
    if (ctx->placeholder != nullptr) {
      destroy_device_buffer(ctx, ctx->placeholder);
      delete ctx->placeholder;
      ctx->placeholder = nullptr;
    }
    destroy_pipelines(ctx);
    pipeline_cache_close(ctx);
    for (Frame& frame : ctx->frames) {
      destroy_freed_buffers(ctx, &frame);
      destroy_staging(ctx, &frame);
      if (frame.descriptor_pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(ctx->device, frame.descriptor_pool, nullptr);
      if (frame.fence != VK_NULL_HANDLE) vkDestroyFence(ctx->device, frame.fence, nullptr);
    }
    if (ctx->command_pool != VK_NULL_HANDLE) vkDestroyCommandPool(ctx->device, ctx->command_pool, nullptr);
  }
  release_device(ctx->shared);
  ctx->shared = nullptr;
}

}  // namespace

rill_status fail_context(rill_backend_context* ctx, VkResult result, const char* what) {
  rill_status status = fail_vk(result, what);
  if (result == VK_ERROR_DEVICE_LOST) {
    ctx->lost = true;
    ctx->lost_message = std::string("Vulkan: the device was lost (") + what +
                        "); destroy the context and create a new one";
  }
  return status;
}

rill_status check_usable(rill_backend_context* ctx) {
  if (ctx->lost) return fail(RILL_ERROR_BACKEND, ctx->lost_message);
  SharedDevice& shared = *ctx->shared;
  std::lock_guard<std::mutex> lock(shared.validation_mutex);
  if (shared.validation_messages > 0) {
    return fail(RILL_ERROR_BACKEND, "Vulkan: the validation layer reported " +
                                        std::to_string(shared.validation_messages) +
                                        " message(s); the first: " +
                                        (shared.first_validation_message.empty() ? "(its text was lost: out of host memory)"
                                                                                 : shared.first_validation_message));
  }
  return RILL_OK;
}

/* Takes ctx's shared device (making it, or adopting the host's, for the
   first context on it), then makes the context's own frames, pipeline layout
   and cache, and placeholder buffer. On failure, what was made is left in
   ctx for destroy_context_objects. */
rill_status create_context_objects(rill_backend_context* ctx, const rill_backend_context_options* options) {
  rill_status status = acquire_device(options, &ctx->shared);
  if (status != RILL_OK) return status;
  const SharedDevice& shared = *ctx->shared;
  ctx->physical = shared.physical;
  ctx->device = shared.device;
  ctx->queue = shared.queue;
  ctx->queue_family = shared.queue_family;
  ctx->owns_device = shared.owned;
  ctx->caps = shared.caps;
  status = create_frames(ctx);
  if (status == RILL_OK) status = create_pipeline_layout(ctx);
  if (status == RILL_OK) status = pipeline_cache_open(ctx, options);
  if (status == RILL_OK) {
    ctx->placeholder = new rill_backend_buffer();
    status = create_device_buffer(ctx, 256, ctx->placeholder);
  }
  if (status == RILL_OK) status = check_usable(ctx);
  return status;
}

/* Releases a context that failed part-way, also when an allocation threw. */
struct UnfinishedContext {
  void operator()(rill_backend_context* ctx) const {
    destroy_context_objects(ctx);
    delete ctx;
  }
};

rill_status context_create(const rill_backend_context_options* options, rill_backend_context** out_ctx) {
  std::unique_ptr<rill_backend_context, UnfinishedContext> ctx(new (std::nothrow) rill_backend_context());
  if (ctx == nullptr) return fail(RILL_ERROR_OUT_OF_MEMORY, "Vulkan: out of host memory creating a context");
  const rill_status status = create_context_objects(ctx.get(), options);
  if (status != RILL_OK) return status;
  /* RILL_VULKAN_NO_SUBGROUP=1 forces the shared-memory reductions, so that
     both paths can be tested on one device. */
  const char* no_subgroup = std::getenv("RILL_VULKAN_NO_SUBGROUP");
  ctx->use_subgroups = ctx->caps.subgroup_arithmetic && !(no_subgroup != nullptr && std::strcmp(no_subgroup, "1") == 0);
  /* RILL_VULKAN_NO_FLASH_ATTENTION=1 likewise forces the row attention kernel. */
  const char* no_flash = std::getenv("RILL_VULKAN_NO_FLASH_ATTENTION");
  ctx->flash_attention = !(no_flash != nullptr && std::strcmp(no_flash, "1") == 0);
  /* RILL_VULKAN_NO_COOPMAT=1 likewise forces the tiled gemm.comp for f16. */
  const char* no_coopmat = std::getenv("RILL_VULKAN_NO_COOPMAT");
  if (!(no_coopmat != nullptr && std::strcmp(no_coopmat, "1") == 0)) ctx->coopmat_tile = ctx->caps.coopmat_tile;
  ctx->f16_float_controls = ctx->caps.f16_float_controls;
  /* For tests only: RILL_VULKAN_TEST_MAX_GROUPS=n (1 to 65535) caps the grids
     that kernels loop over at n workgroups, so that the loops run with small
     shapes. */
  if (const char* max_groups = std::getenv("RILL_VULKAN_TEST_MAX_GROUPS")) {
    char* end = nullptr;
    const unsigned long value = std::strtoul(max_groups, &end, 10);
    if (end == max_groups || *end != '\0' || value < 1 || value > kMaxGroupsPerDispatch) {
      return fail(RILL_ERROR_INVALID_ARGUMENT,
                  std::string("Vulkan: RILL_VULKAN_TEST_MAX_GROUPS must be an integer from 1 to ") +
                      std::to_string(kMaxGroupsPerDispatch) + ", given \"" + max_groups + "\"");
    }
    ctx->max_groups = static_cast<uint32_t>(value);
  }
  const uint32_t users = ctx->shared->contexts.load();
  log_message(RILL_LOG_INFO, "using \"" + ctx->caps.name + "\" (" + ctx->caps.details + ")" +
                                 (users > 1 ? ", its device shared by " + std::to_string(users) + " contexts" : ""));
  *out_ctx = ctx.release();
  return RILL_OK;
}

void context_destroy(rill_backend_context* ctx) {
  if (ctx == nullptr) return;
  release_rope_tables(ctx);
  if (!ctx->lost) finish(ctx);
  destroy_context_objects(ctx);
  delete ctx;
}

const char* context_device_name(rill_backend_context* ctx) { return ctx->caps.name.c_str(); }

rill_status begin_recording(rill_backend_context* ctx, Frame** out_frame) {
  Frame* frame = &ctx->frames[ctx->current_frame];
  if (!frame->recording) {
    rill_status status = retire_frame(ctx, frame);
    if (status != RILL_OK) return status;
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult result = vkBeginCommandBuffer(frame->cmd, &begin);
    if (result != VK_SUCCESS) return fail_context(ctx, result, "vkBeginCommandBuffer");
    frame->recording = true;
    /* Another context on the device may have written a buffer this one
       reads (shared weights): a barrier first in the command buffer orders
       every write submitted to the queue before it, whoever submitted it. */
    if (ctx->shared->contexts.load(std::memory_order_relaxed) > 1) record_barrier(frame);
  }
  *out_frame = frame;
  return RILL_OK;
}

void track_accesses(rill_backend_context* ctx, Frame* frame, const Access* accesses, size_t count) {
  bool conflict = false;
  for (size_t i = 0; i < count && !conflict; ++i) {
    for (const Access& earlier : ctx->pending_accesses) {
      if ((accesses[i].write || earlier.write) && overlaps(accesses[i], earlier)) {
        conflict = true;
        break;
      }
    }
  }
  if (conflict) {
    record_barrier(frame);
    ctx->pending_accesses.clear();
  }
  ctx->pending_accesses.insert(ctx->pending_accesses.end(), accesses, accesses + count);
}

rill_status flush(rill_backend_context* ctx) {
  Frame* frame = &ctx->frames[ctx->current_frame];
  if (!frame->recording) return RILL_OK;
  frame->recording = false;
  VkResult result = vkEndCommandBuffer(frame->cmd);
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkEndCommandBuffer");
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &frame->cmd;
  TimelineSubmit timeline(ctx->timeline_waits, ctx->timeline_signals);
  timeline.attach(submit);
  {
    /* Other contexts on the shared device submit to the same queue. */
    std::lock_guard<std::mutex> lock(ctx->shared->queue_mutex);
    result = vkQueueSubmit(ctx->queue, 1, &submit, frame->fence);
  }
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkQueueSubmit");
  ctx->timeline_waits.clear();
  ctx->timeline_signals.clear();
  frame->submitted = true;
  /* Earlier accesses stay tracked: a barrier recorded in a later command
     buffer still orders them, while a fence wait alone would not make their
     writes visible to later device work. */
  ctx->current_frame = (ctx->current_frame + 1) % kFrameCount;
  return RILL_OK;
}

rill_status wait_for_frame(rill_backend_context* ctx, Frame* frame) {
  if (!frame->submitted) return RILL_OK;
  const VkResult result = vkWaitForFences(ctx->device, 1, &frame->fence, VK_TRUE, UINT64_MAX);
  return result == VK_SUCCESS ? RILL_OK : fail_context(ctx, result, "vkWaitForFences");
}

rill_status finish(rill_backend_context* ctx) {
  rill_status status = flush(ctx);
  for (Frame& frame : ctx->frames) {
    rill_status retired = retire_frame(ctx, &frame);
    if (status == RILL_OK) status = retired;
  }
  return status;
}

rill_status synchronize(rill_backend_context* ctx) {
  rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  status = finish(ctx);
  if (status != RILL_OK) return status;
  return check_usable(ctx);
}

}  // namespace rill_vk
