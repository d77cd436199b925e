/* Contexts: the logical device and its compute queue, command recording into
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

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT,
                                                      const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                      void* user_data) {
  auto* ctx = static_cast<rill_backend_context*>(user_data);
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(ctx->validation_mutex);
    first = ctx->validation_messages++ == 0;
  }
  // The layer calls this from C, so nothing may be thrown through it. Out of
  // memory for the text, the message still counts (the op still fails) and
  // only its text is lost (check_usable says so).
  try {
    std::string message = std::string("validation: ") + (data != nullptr && data->pMessage ? data->pMessage : "");
    log_message(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? RILL_LOG_ERROR : RILL_LOG_WARNING, message);
    if (first) {
      std::lock_guard<std::mutex> lock(ctx->validation_mutex);
      ctx->first_validation_message = std::move(message);
    }
  } catch (const std::bad_alloc&) {
  }
  return VK_FALSE;
}

bool overlaps(const Access& a, const Access& b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

rill_status check_api_version(rill_backend_context* ctx);

/* Opens the physical device options->device_index. The runtime matches the
   config's `device` to that index; the plugin never matches names itself. */
rill_status pick_device(rill_backend_context* ctx, const rill_backend_context_options* options) {
  std::vector<VkPhysicalDevice> physicals;
  const rill_status status = list_physical_devices(ctx->instance, &physicals);
  if (status != RILL_OK) return status;
  if (physicals.empty()) return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: no Vulkan device found");
  // Only the members inside the caller's struct_size are read.
  const int32_t index =
      options != nullptr && RILL_STRUCT_HAS(rill_backend_context_options, options, device_index) ? options->device_index
                                                                                                 : 0;
  if (index < 0 || static_cast<uint32_t>(index) >= physicals.size()) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: device index: expected 0 to " +
                                                    std::to_string(physicals.size() - 1) + ", got " +
                                                    std::to_string(index));
  }
  ctx->physical = physicals[static_cast<size_t>(index)];
  ctx->caps = query_caps(ctx->physical);
  return check_api_version(ctx);
}

rill_status check_api_version(rill_backend_context* ctx) {
  if (ctx->caps.api_version < VK_API_VERSION_1_2) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                "Vulkan: device \"" + ctx->caps.name + "\" supports only Vulkan " +
                    std::to_string(VK_API_VERSION_MAJOR(ctx->caps.api_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(ctx->caps.api_version)) + "; rill needs 1.2");
  }
  return RILL_OK;
}

/* Takes the host's own device (rill_context_create_on_vulkan_device) instead
   of making one: checks what Vulkan lets rill check, and uses only what the
   host says it enabled. */
rill_status adopt_host_device(rill_backend_context* ctx, const rill_vulkan_device* host) {
  ctx->owns_device = false;
  rill_status status = load_vulkan();
  if (status == RILL_OK) status = load_instance_functions(static_cast<VkInstance>(host->instance));
  if (status != RILL_OK) return status;
  ctx->physical = static_cast<VkPhysicalDevice>(host->physical_device);
  ctx->caps = query_caps(ctx->physical);
  if ((status = check_api_version(ctx)) != RILL_OK) return status;
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, families.data());
  if (host->queue_family >= family_count || (families[host->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE,
                "Vulkan: device->queue_family: expected a family with compute among the " +
                    std::to_string(family_count) + " of device \"" + ctx->caps.name + "\", got " +
                    std::to_string(host->queue_family));
  }
  ctx->device = static_cast<VkDevice>(host->device);
  ctx->queue = static_cast<VkQueue>(host->queue);
  ctx->queue_family = host->queue_family;
  /* Features and extensions count only when the host enabled them. */
  ctx->caps.storage_16bit = ctx->caps.storage_16bit && host->storage_16bit != 0;
  ctx->caps.memory_budget = false;
  memory_init(ctx);
  return RILL_OK;
}

rill_status create_device(rill_backend_context* ctx) {
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, families.data());
  uint32_t chosen = UINT32_MAX;
  for (uint32_t i = 0; i < family_count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
    /* Prefer a compute queue without graphics (often an async compute queue). */
    if (chosen == UINT32_MAX || (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0) chosen = i;
  }
  if (chosen == UINT32_MAX) {
    return fail(RILL_ERROR_BACKEND_UNAVAILABLE, "Vulkan: device \"" + ctx->caps.name + "\" has no compute queue");
  }
  ctx->queue_family = chosen;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = chosen;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;

  VkPhysicalDeviceVulkan11Features features11{};
  features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  features11.storageBuffer16BitAccess = ctx->caps.storage_16bit ? VK_TRUE : VK_FALSE;
  /* VK_EXT_memory_budget only adds a query; it is enabled where present so
     that allocations respect what the rest of the system leaves free. */
  const char* extensions[] = {VK_EXT_MEMORY_BUDGET_EXTENSION_NAME};
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &features11;
  info.enabledExtensionCount = ctx->caps.memory_budget ? 1u : 0u;
  info.ppEnabledExtensionNames = extensions;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  VkResult result = vkCreateDevice(ctx->physical, &info, nullptr, &ctx->device);
  if (result != VK_SUCCESS) return fail_vk(result, "vkCreateDevice");
  vkGetDeviceQueue(ctx->device, chosen, 0, &ctx->queue);
  memory_init(ctx);
  return RILL_OK;
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
    /* A lost device answers VK_ERROR_DEVICE_LOST here; destruction goes on.
       The host's device may be busy with the host's work: context_destroy
       has waited for rill's own (finish). */
    if (ctx->owns_device) vkDeviceWaitIdle(ctx->device);
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
    memory_destroy(ctx);
    if (ctx->owns_device) vkDestroyDevice(ctx->device, nullptr);
  }
  if (ctx->owns_device) destroy_instance(ctx->instance, ctx->messenger);
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
  std::lock_guard<std::mutex> lock(ctx->validation_mutex);
  if (ctx->validation_messages > 0) {
    return fail(RILL_ERROR_BACKEND, "Vulkan: the validation layer reported " +
                                        std::to_string(ctx->validation_messages) +
                                        " message(s); the first: " +
                                        (ctx->first_validation_message.empty() ? "(its text was lost: out of host memory)"
                                                                               : ctx->first_validation_message));
  }
  return RILL_OK;
}

/* Makes ctx's instance (or adopts the host's), device, frames, pipeline
   layout and cache, and placeholder buffer. On failure, what was made is
   left in ctx for destroy_context_objects. */
rill_status create_context_objects(rill_backend_context* ctx, const rill_backend_context_options* options) {
  const auto* host = options != nullptr && RILL_STRUCT_HAS(rill_backend_context_options, options, host_device)
                         ? static_cast<const rill_vulkan_device*>(options->host_device)
                         : nullptr;
  rill_status status = RILL_OK;
  if (host != nullptr) {
    status = adopt_host_device(ctx, host);
  } else {
    status = create_instance(validation_requested(), on_validation_message, ctx, &ctx->instance, &ctx->messenger);
    if (status == RILL_OK) status = pick_device(ctx, options);
    if (status == RILL_OK) status = create_device(ctx);
  }
  if (status == RILL_OK) status = create_frames(ctx);
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
  ctx->f16_float_controls = ctx->caps.f16_float_controls;
  log_message(RILL_LOG_INFO, "using \"" + ctx->caps.name + "\" (" + ctx->caps.details + ")");
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
    /* One global memory barrier orders every earlier shader or transfer
       access before every later one; that is all a single queue needs. */
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(frame->cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
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
  result = vkQueueSubmit(ctx->queue, 1, &submit, frame->fence);
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
