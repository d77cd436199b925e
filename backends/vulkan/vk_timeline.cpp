/* Ordering against a host's timeline semaphore (rill_context_vulkan_wait and
   rill_context_vulkan_signal): the waits and signals ride on the context's
   next vkQueueSubmit (flush, vk_context.cpp). */
#include <algorithm>
#include <string>

#include "vk_internal.h"

namespace rill_vk {
namespace {

/* The backend passes a VkSemaphore as an integer: a pointer on 64-bit
   platforms, a uint64_t on 32-bit ones. */
VkSemaphore as_semaphore(uint64_t handle) { return reinterpret_cast<VkSemaphore>(handle); }

/* A host's semaphore can exist only on the host's own device, and only a
   device with the timelineSemaphore feature has timeline semaphores. */
rill_status check_timeline_usable(rill_backend_context* ctx, const char* function) {
  const rill_status status = check_usable(ctx);
  if (status != RILL_OK) return status;
  if (ctx->owns_device) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                std::string("Vulkan: ") + function +
                    ": ctx: expected a context on the host's device (rill_context_create_on_vulkan_device), "
                    "got one on a device rill made, which no host semaphore belongs to");
  }
  if (!ctx->caps.timeline_semaphore) {
    return fail(RILL_ERROR_UNSUPPORTED, std::string("Vulkan: ") + function + ": device \"" + ctx->caps.name +
                                            "\" lacks the timelineSemaphore feature (Vulkan 1.2, "
                                            "VK_KHR_timeline_semaphore)");
  }
  return RILL_OK;
}

}  // namespace

TimelineSubmit::TimelineSubmit(const std::vector<TimelinePoint>& waits, const std::vector<TimelinePoint>& signals) {
  for (const TimelinePoint& wait : waits) {
    wait_semaphores_.push_back(wait.semaphore);
    wait_values_.push_back(wait.value);
    /* rill's first commands may be copies from staging or dispatches. */
    wait_stages_.push_back(VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  for (const TimelinePoint& signal : signals) {
    signal_semaphores_.push_back(signal.semaphore);
    signal_values_.push_back(signal.value);
  }
}

void TimelineSubmit::attach(VkSubmitInfo& submit) {
  if (wait_semaphores_.empty() && signal_semaphores_.empty()) return;
  info_.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  info_.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values_.size());
  info_.pWaitSemaphoreValues = wait_values_.data();
  info_.signalSemaphoreValueCount = static_cast<uint32_t>(signal_values_.size());
  info_.pSignalSemaphoreValues = signal_values_.data();
  submit.pNext = &info_;
  submit.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores_.size());
  submit.pWaitSemaphores = wait_semaphores_.data();
  submit.pWaitDstStageMask = wait_stages_.data();
  submit.signalSemaphoreCount = static_cast<uint32_t>(signal_semaphores_.size());
  submit.pSignalSemaphores = signal_semaphores_.data();
}

rill_status wait_semaphore(rill_backend_context* ctx, uint64_t semaphore, uint64_t value) {
  rill_status status = check_timeline_usable(ctx, "wait_semaphore");
  if (status != RILL_OK) return status;
  /* The work queued before the call must not wait: it is submitted now. */
  if ((status = flush(ctx)) != RILL_OK) return status;
  ctx->timeline_waits.push_back({as_semaphore(semaphore), value});
  return RILL_OK;
}

rill_status signal_semaphore(rill_backend_context* ctx, uint64_t semaphore, uint64_t value) {
  rill_status status = check_timeline_usable(ctx, "signal_semaphore");
  if (status != RILL_OK) return status;
  uint64_t floor = 0;
  const VkResult result = vkGetSemaphoreCounterValue(ctx->device, as_semaphore(semaphore), &floor);
  if (result != VK_SUCCESS) return fail_context(ctx, result, "vkGetSemaphoreCounterValue");
  const auto last = ctx->timeline_last_signal.find(semaphore);
  if (last != ctx->timeline_last_signal.end()) floor = std::max(floor, last->second);
  if (value <= floor) {
    return fail(RILL_ERROR_INVALID_ARGUMENT,
                "Vulkan: signal_semaphore: value: expected more than " + std::to_string(floor) +
                    " (the semaphore's value, or the last one this context was given to signal on it: a timeline "
                    "only goes up), got " +
                    std::to_string(value));
  }
  /* An empty batch when nothing is recorded still signals, after the work
     submitted before it. */
  Frame* frame = nullptr;
  if ((status = begin_recording(ctx, &frame)) != RILL_OK) return status;
  ctx->timeline_signals.push_back({as_semaphore(semaphore), value});
  ctx->timeline_last_signal[semaphore] = value;
  return flush(ctx);
}

}  // namespace rill_vk
