#include "vulkan_host_device.h"

#include <doctest/doctest.h>

#include <vector>

namespace rill_test {

HostDevice::HostDevice() {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "rill host device test";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
    skip_reason = "vkCreateInstance failed";
    return;
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physicals(count);
  vkEnumeratePhysicalDevices(instance, &count, physicals.data());
  for (VkPhysicalDevice candidate : physicals) {
    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(candidate, &properties);
    if (properties.apiVersion < VK_API_VERSION_1_2) continue;
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, nullptr);
    std::vector<VkQueueFamilyProperties> family_properties(families);
    vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, family_properties.data());
    for (uint32_t f = 0; f < families; ++f) {
      if ((family_properties[f].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) {
        physical = candidate;
        family = f;
        name = properties.deviceName;
        break;
      }
    }
    if (physical != VK_NULL_HANDLE) break;
  }
  if (physical == VK_NULL_HANDLE) {
    skip_reason = "no Vulkan 1.2 device with a compute queue";
    return;
  }
  VkPhysicalDeviceVulkan11Features supported{};
  supported.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &supported;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  storage_16bit = supported.storageBuffer16BitAccess == VK_TRUE;
  VkPhysicalDeviceVulkan11Features enabled{};
  enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  enabled.storageBuffer16BitAccess = supported.storageBuffer16BitAccess;
  const float priority = 0.5f;
  VkDeviceQueueCreateInfo queue_info{};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{};
  device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  device_info.pNext = &enabled;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  if (vkCreateDevice(physical, &device_info, nullptr, &device) != VK_SUCCESS) {
    skip_reason = "vkCreateDevice failed";
    return;
  }
  vkGetDeviceQueue(device, family, 0, &queue);
}

HostDevice::~HostDevice() {
  if (device != VK_NULL_HANDLE) vkDestroyDevice(device, nullptr);
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

rill_vulkan_device HostDevice::handles() const {
  rill_vulkan_device d{};
  d.struct_size = sizeof d;
  d.instance = instance;
  d.physical_device = physical;
  d.device = device;
  d.queue = queue;
  d.queue_family = family;
  d.storage_16bit = storage_16bit ? 1u : 0u;
  return d;
}

void HostDevice::check_usable() const {
  CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS);
  CHECK(vkDeviceWaitIdle(device) == VK_SUCCESS);
  VkBufferCreateInfo buffer_info{};
  buffer_info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  buffer_info.size = 256;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  CHECK(vkCreateBuffer(device, &buffer_info, nullptr, &buffer) == VK_SUCCESS);
  vkDestroyBuffer(device, buffer, nullptr);
}

}  // namespace rill_test
