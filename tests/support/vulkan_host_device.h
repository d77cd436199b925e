// A Vulkan instance and device that a test makes itself, as a host (a game
// engine) would, to hand to rill_context_create_on_vulkan_device.
#pragma once

#include <vulkan/vulkan.h>

#include <mutex>
#include <string>

#include "rill.h"

namespace rill_test {

// The host's objects: an instance and a device with one compute queue.
// skip_reason says why there are none (no Vulkan 1.2 device with compute).
struct HostDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  bool storage_16bit = false;
  bool timeline_semaphore = false;  // the device has timelineSemaphore, enabled
  std::string name;
  std::string skip_reason;
  // With RILL_VULKAN_VALIDATION=1 the instance has the validation layer (with
  // synchronization validation); its warnings and errors are counted here.
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::mutex validation_mutex;
  uint32_t validation_messages = 0;
  std::string first_validation_message;

  HostDevice();
  ~HostDevice();
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  // The handles, as rill_context_create_on_vulkan_device takes them.
  rill_vulkan_device handles() const;

  // A timeline semaphore on the device (doctest REQUIREs it is made); the
  // caller destroys it.
  VkSemaphore make_timeline_semaphore(uint64_t initial_value) const;

  // Checks (doctest) that the device and its queue are still the host's to
  // use: both go idle, and the device makes and destroys a buffer.
  void check_usable() const;
};

}  // namespace rill_test
