#include "vulkan_host_device.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace rill_test {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_validation_layer() {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, kValidationLayer) == 0) return true;
  }
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL count_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data, void* user_data) {
  // The layer's own wait for a timeline value that another thread of the
  // host signals later can time out; the layer calls that message its own bug.
  const char* id = data->pMessageIdName;
  if (id != nullptr && std::strcmp(id, "UNASSIGNED-VkSemaphore-state-timeout") == 0) return VK_FALSE;
  auto* host = static_cast<HostDevice*>(user_data);
  std::lock_guard<std::mutex> lock(host->validation_mutex);
  if (host->validation_messages++ == 0) host->first_validation_message = data->pMessage;
  return VK_FALSE;
}

}  // namespace

HostDevice::HostDevice() {
  const char* requested = std::getenv("RILL_VULKAN_VALIDATION");
  const bool validation = requested != nullptr && std::strcmp(requested, "1") == 0;
  if (validation && !has_validation_layer()) {
    skip_reason = std::string("RILL_VULKAN_VALIDATION=1 asks for ") + kValidationLayer + ", which is not installed";
    return;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "rill host device test";
  app.apiVersion = VK_API_VERSION_1_2;
  // With validation: the layer with synchronization validation, and every
  // warning or error counted (the test fails on any).
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{};
  messenger_info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
  messenger_info.pfnUserCallback = count_message;
  messenger_info.pUserData = this;
  const VkValidationFeatureEnableEXT sync[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features_info{};
  features_info.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  features_info.enabledValidationFeatureCount = 1;
  features_info.pEnabledValidationFeatures = sync;
  features_info.pNext = &messenger_info;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  if (validation) {
    info.pNext = &features_info;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
  }
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
    skip_reason = "vkCreateInstance failed";
    return;
  }
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr || create(instance, &messenger_info, nullptr, &messenger) != VK_SUCCESS) {
      skip_reason = "vkCreateDebugUtilsMessengerEXT failed";
      return;
    }
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
  VkPhysicalDeviceVulkan12Features supported12{};
  supported12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan11Features supported{};
  supported.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  supported.pNext = &supported12;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &supported;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  storage_16bit = supported.storageBuffer16BitAccess == VK_TRUE;
  timeline_semaphore = supported12.timelineSemaphore == VK_TRUE;
  VkPhysicalDeviceVulkan12Features enabled12{};
  enabled12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  enabled12.timelineSemaphore = supported12.timelineSemaphore;
  VkPhysicalDeviceVulkan11Features enabled{};
  enabled.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  enabled.pNext = &enabled12;
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
  if (messenger != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance, messenger, nullptr);
  }
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

VkSemaphore HostDevice::make_timeline_semaphore(uint64_t initial_value) const {
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = initial_value;
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  info.pNext = &type;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  REQUIRE(vkCreateSemaphore(device, &info, nullptr, &semaphore) == VK_SUCCESS);
  return semaphore;
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
