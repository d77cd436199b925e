// A Vulkan instance and device that a test makes itself, as a host (a game
// engine) would, to hand to rill_context_create_on_vulkan_device.
#pragma once

#include <vulkan/vulkan.h>

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
  std::string name;
  std::string skip_reason;

  HostDevice();
  ~HostDevice();
  HostDevice(const HostDevice&) = delete;
  HostDevice& operator=(const HostDevice&) = delete;

  // The handles, as rill_context_create_on_vulkan_device takes them.
  rill_vulkan_device handles() const;

  // Checks (doctest) that the device and its queue are still the host's to
  // use: both go idle, and the device makes and destroys a buffer.
  void check_usable() const;
};

}  // namespace rill_test
